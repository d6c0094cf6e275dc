"""The fuzz table is complete: a new public parse_* function anywhere in the engine must be
added to tests/fuzz/targets.py (or the fuzzer would silently skip it)."""

import importlib
import pkgutil

import gpu_runbook

from .targets import TARGETS


def test_every_public_parser_is_fuzzed():
    found = set()
    for info in pkgutil.walk_packages(gpu_runbook.__path__, "gpu_runbook."):
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if name.startswith("parse_") and callable(obj) and getattr(obj, "__module__", None) == module.__name__:
                found.add("%s.%s" % (module.__name__, name))
    listed = {t.name for t in TARGETS}
    assert found - listed == set(), "parsers missing from tests/fuzz/targets.py"
    assert len(listed) == len(TARGETS), "a parser listed twice"
