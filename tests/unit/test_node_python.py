"""What runs on a GPU node parses under the oldest Python a node may have. ansible-core 2.19 runs
modules with Python 3.8 or newer on managed nodes (its support matrix); gpu-runbook's node-side
modules (gather, active tier, GPU reset, InfiniBand restart) and every engine module they import,
transitively, must parse as Python 3.8 -- not only the two parsers that were checked before."""

import ast
import os
import re

import pytest

from tests.conftest import REPO

LIBRARY = os.path.join(REPO, "library")
ENGINE = os.path.join(REPO, "module_utils")
# the modules whose code Ansible ships to and runs on the node (the others run on the controller)
NODE_MODULES = ("gpu_health_facts", "gpu_active_checks", "gpu_reset", "ib_restart")
OLDEST = (3, 8)
_IMPORT = re.compile(r"^[ \t]*from[ \t]+(ansible\.module_utils\.gpu_runbook[\w.]*|\.+[\w.]*)[ \t]+import[ \t]+"
                     r"(\([^)]*\)|[\w, \t]+)|^[ \t]*import[ \t]+(ansible\.module_utils\.gpu_runbook[\w.]*)", re.M)


def _module_path(dotted):
    """'gpu_runbook.nvsmi.rules' -> its file (a package's __init__.py)."""
    base = os.path.join(ENGINE, *dotted.split("."))
    return base + ".py" if os.path.isfile(base + ".py") else os.path.join(base, "__init__.py")


def _resolve(current, target):
    """The dotted engine name an import in module ``current`` means."""
    if target.startswith("ansible.module_utils."):
        return target[len("ansible.module_utils."):]
    dots = len(target) - len(target.lstrip("."))
    pkg = current.split(".")
    if not _module_path(current).endswith("__init__.py"):
        pkg = pkg[:-1]
    pkg = pkg[:len(pkg) - (dots - 1)]
    rest = target.lstrip(".")
    return ".".join(pkg + ([rest] if rest else []))


def _closure(paths):
    seen, todo = {}, list(paths)
    while todo:
        name, path = todo.pop()
        if path in seen.values() or not os.path.isfile(path):
            continue
        seen[name] = path
        with open(path, encoding="utf-8") as fh:
            src = fh.read()
        for m in _IMPORT.finditer(src):
            target = m.group(1) or m.group(3)
            dotted = _resolve(name, target) if name != "<library>" else target[len("ansible.module_utils."):]
            todo.append((dotted, _module_path(dotted)))
            for sub in re.findall(r"\w+", m.group(2) or ""):  # 'from .pkg import submodule'
                cand = dotted + "." + sub
                if os.path.isfile(os.path.join(ENGINE, *cand.split(".")) + ".py"):
                    todo.append((cand, _module_path(cand)))
    return seen


def node_side_files():
    files = {}
    for module in NODE_MODULES:
        path = os.path.join(LIBRARY, module + ".py")
        files.update(_closure([("<library>", path)]))
        files["library/" + module] = path
    return sorted(set(files.values()))


def test_the_node_side_closure_is_the_engine_the_gather_needs():
    files = [os.path.relpath(p, REPO) for p in node_side_files()]
    # the gather's parsers and the tier's judges are in it; the controller's reports and plan are not
    for must in ("module_utils/gpu_runbook/nvsmi/rules.py", "module_utils/gpu_runbook/kernlog/scanner.py",
                 "module_utils/gpu_runbook/active/__init__.py", "library/gpu_reset.py"):
        assert must in files, must
    assert not [f for f in files if "/reports/" in f or "/plan/" in f], files


@pytest.mark.parametrize("path", node_side_files(), ids=lambda p: os.path.relpath(p, REPO))
def test_node_side_code_parses_as_the_oldest_python_a_node_may_have(path):
    with open(path, encoding="utf-8") as fh:
        ast.parse(fh.read(), filename=path, feature_version=OLDEST)
