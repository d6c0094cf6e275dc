"""Every parser, fed thousands of hostile inputs (random bytes, real captures flipped,
truncated, duplicated, re-encoded, with NULs, CRLF, format keywords and lines at the
engine's cap): it never raises (except the errors it documents), answers its documented type,
and answers each input within a time linear in its size (conftest.SECONDS, SECONDS_PER_MIB)."""

import os
import time

import pytest
from hypothesis import given, strategies as st

from .conftest import SECONDS, SECONDS_PER_MIB, record
from .mutate import texts
from .targets import TARGETS


@st.composite
def _case(draw, target):
    text = draw(texts(target.family)) if target.family else ""
    return text, draw(target.args)


# GPURB_FUZZ_SHARD=k/n: this process fuzzes every n-th parser from the k-th (a long run on n cores)
_K, _N = (int(x) for x in (os.environ.get("GPURB_FUZZ_SHARD") or "0/1").split("/"))


@pytest.mark.fuzz
@pytest.mark.parametrize("target", TARGETS[_K::_N], ids=lambda t: t.name.replace("gpu_runbook.", ""))
def test_parser_never_raises(target):
    @given(_case(target))
    def check(case):
        text, extra = case
        start = time.monotonic()
        try:
            out = target.call(text, extra)
        except target.raises as exc:
            assert str(exc) and "\n" not in str(exc).strip(), "a documented error must be one line"
            out = None
        took = time.monotonic() - start
        record(target.name, took)
        size = len(text) + sum(len(v) for v in extra.values() if isinstance(v, str)) if isinstance(extra, dict) \
            else len(text)
        assert took < SECONDS + SECONDS_PER_MIB * size / (1 << 20), \
            "%s took %.1f s on %d characters" % (target.name, took, size)
        assert out is None and target.raises or isinstance(out, target.returns), \
            "%s answered a %s" % (target.name, type(out).__name__)

    check()
