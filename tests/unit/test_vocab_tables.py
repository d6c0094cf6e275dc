"""Every generated vocabulary table (module_utils/gpu_runbook/vocab/<emitter>.py) is well
formed and classifies each of its own messages as it says: provenance present, kinds declared
in the taxonomy, and every matchable row, printed as its emitter prints it, read back by the
table as a row of the same kind and category. (That the engine as a whole classifies every
row so: tests/unit/test_vocab_engine.py.)"""

import importlib
import os
import re

import pytest

from gpu_runbook import vocab
from gpu_runbook.taxonomy import KINDS, SEVERITIES
from tests.conftest import REPO

GENERATED = [n for n in vocab.EMITTERS
             if os.path.isfile(os.path.join(REPO, "module_utils", "gpu_runbook", "vocab", n + ".py"))]
META = ("EMITTER", "PROJECT", "VERSION", "COMMIT", "LICENCE", "ORIGIN", "GENERATOR")


def _module(name):
    return importlib.import_module("gpu_runbook.vocab." + name)


def _rows(name):
    return [dict(zip(vocab.ROW_FIELDS, r)) for r in vocab.table(name).rows]


def test_some_tables_are_generated():
    assert GENERATED, "no vocabulary table under module_utils/gpu_runbook/vocab/"


@pytest.mark.parametrize("name", GENERATED)
def test_vocab_table_provenance(name):
    mod = _module(name)
    for key in META:
        assert isinstance(getattr(mod, key, None), str) and getattr(mod, key), "%s.%s missing" % (name, key)
    assert re.fullmatch(r"[0-9a-f]{40}", mod.COMMIT) or re.fullmatch(r"[\w.+-]{1,40}", mod.COMMIT), mod.COMMIT
    assert os.path.isfile(os.path.join(REPO, mod.GENERATOR)), "generator %s not in the repository" % mod.GENERATOR
    assert mod.MARKERS and all(isinstance(m, str) and m for m in mod.MARKERS)
    assert mod.ROWS or getattr(mod, "CODES", None)


@pytest.mark.parametrize("name", GENERATED)
def test_vocab_rows_are_classified_with_declared_kinds(name):
    bad = []
    for r in _rows(name):
        if not (isinstance(r["file"], str) and r["file"] and isinstance(r["line"], int) and r["line"] > 0):
            bad.append(("provenance", r))
        elif r["kind"] == vocab.BENIGN:
            if r["category"] != "healthy" or r["severity"] != "ok" or not r["meaning"]:
                bad.append(("benign without its why, or with a category", r))
        elif r["kind"] not in KINDS:
            bad.append(("undeclared kind", r))
        elif r["category"] not in KINDS[r["kind"]]["categories"]:
            bad.append(("category not the kind's", r))
        elif r["severity"] not in SEVERITIES or r["severity"] == "ok":
            bad.append(("severity", r))
    assert not bad, "%d bad rows, first: %r" % (len(bad), bad[:5])


@pytest.mark.parametrize("name", GENERATED)
def test_vocab_rows_read_back_as_themselves(name):
    """Each matchable row, instantiated and printed as a line of its emitter, carries a marker
    and is read back by its table as a row of the same classification."""
    tbl = vocab.table(name)
    wrong = []
    for r in _rows(name):
        if not vocab.matchable(r["format"]):
            continue
        line = vocab.line_for(tbl, r)
        if not tbl.holds_marker(line):
            wrong.append(("no marker", line))
            continue
        got = tbl.match(line)
        if got is None:
            wrong.append(("not matched", line))
            continue
        g = dict(zip(vocab.ROW_FIELDS, got[0]))
        if (g["kind"], g["category"]) != (r["kind"], r["category"]) and not (
                g["category"] == r["category"] and vocab.BENIGN not in (g["kind"], r["kind"])):
            wrong.append(("read as %s/%s, not %s/%s" % (g["kind"], g["category"], r["kind"], r["category"]),
                          line))
    assert not wrong, "%d of %d rows, first: %r" % (len(wrong), len(tbl.rows), wrong[:8])


def test_vocab_fragment_matching_checks_the_shape_of_numbers():
    frags, gaps = vocab.compile_format("NET/IB : %s:%d async fatal event: %s")
    assert vocab.match_fragments("h:1:2 [0] NCCL WARN NET/IB : mlx5_0:1 async fatal event: port error", frags, gaps)
    assert not vocab.match_fragments("NET/IB : mlx5_0:one async fatal event: x", frags, gaps)
    assert not vocab.matchable("%s: %s") and not vocab.matchable("%s failed")


def test_vocab_fragment_matching_tries_later_places_of_a_fragment():
    # the first ':' of the line is the time stamp's: the row is placed from a later one
    frags, gaps = vocab.compile_format("%s:%d: cannot parse guid %s")
    assert vocab.match_fragments("Dec  6 10:22:33 sm1 OpenSM[12]: /etc/opensm/pfx.conf:17: cannot parse guid 0x1",
                                 frags, gaps)
    assert not vocab.match_fragments("Dec  6 10:22:33 sm1 OpenSM[12]: pfx.conf:x17: cannot parse guid 0x1",
                                     frags, gaps)
    # a later fragment is tried again past a place whose gap has the wrong shape
    frags, gaps = vocab.compile_format("port %d: link %d down")
    assert vocab.match_fragments("port a: x port 3: link 2 down", frags, gaps)
    assert not vocab.match_fragments("port 3: link two down", frags, gaps)
    # the tries are bounded: a line of many near misses ends without a match
    assert not vocab.match_fragments("port 1: " * 5000 + "link x down", frags, gaps)


def test_a_line_cut_inside_a_value_is_its_message_only_when_the_value_runs_on():
    # DeepSpeed's ZeRO check with a rank's list that wraps onto the next lines of a paste: the line ends
    # inside the first %s, and the message's head says what it is (zero/utils.py@0.16.9)
    head = "RuntimeError: disagreement between rank0 and rank6: rank0: ["
    cut = head + ", ".join(str(4394031851561860485 + i) for i in range(12))
    row = vocab.match_line(cut, ("deepspeed",))[1]
    assert row["file"].startswith("deepspeed/runtime/zero/utils.py") and row["category"] == "application"
    assert vocab.match_line(head + "1, 2, 3...]", ("deepspeed",)) is not None  # short, but cut by the paste
    # a short value that ends the line is a line of its own, not a cut message
    assert vocab.match_line(head + "1, 2]", ("deepspeed",)) is None
    # a whole match elsewhere wins over a cut one (the least sure match of all)
    t = vocab.table("deepspeed")
    assert t.match(cut)[1] == vocab.MIN_LITERAL
    # the head alone must hold enough text to tell the message: a cut after a short fragment is nothing
    frags, gaps = vocab.compile_format("ab %s: cd %s")
    from gpu_runbook.vocab.formats import _span
    assert _span("ab " + "x" * 200, frags, gaps, cut=True) is None
    # nor after a head many messages share: an Xid 48 line is no other Xid's message cut short
    xid48 = ("Aug 10 15:36:05 gpu-node-a kernel: NVRM: Xid (PCI:0000:55:00): 48, An uncorrectable double bit error "
             "(DBE) has been detected on GPU in the framebuffer at physAddr 0xe9b9107e0 partition 3, subpartition 0.")
    for name in ("nvrm", "xid"):
        m = vocab.table(name).match(xid48)
        assert m is None or "): 48, " in m[0][2], m


def test_the_markers_index_is_the_tables_markers():
    """vocab/index.py (tests/tools/vocab/write_index.py) lets the prefilters know the markers
    without loading a table: it must say what the tables say."""
    from gpu_runbook.vocab.index import GATES, MARKERS
    assert sorted(MARKERS) == sorted(GENERATED)
    for name in GENERATED:
        assert MARKERS[name] == tuple(_module(name).MARKERS), name
        assert GATES.get(name) == getattr(_module(name), "GATE", None), name


def test_a_gated_tables_markers_are_looked_for_only_behind_its_head():
    # the device plugin prints every line behind klog's head or Go's log package's (vocab/k8sdp.py GATE): a
    # kernel line that holds one of its words ('unhealthy', 'NVML') is not offered to its table
    from gpu_runbook import vocab
    from gpu_runbook.vocab.index import GATES
    assert "k8sdp" in GATES
    msg = "Failed to initialize NVML: ERROR_LIBRARY_NOT_FOUND"
    assert vocab._marked("E0809 13:32:51.873541       1 factory.go:99] " + msg, ("k8sdp",)) == ["k8sdp"]
    assert vocab._marked("2019/07/27 07:33:07 " + msg, ("k8sdp",)) == ["k8sdp"]
    assert vocab._marked("Aug 10 15:36:05 gpu-a-03 kubelet[912]: E0809 13:32:51.873541 912 f.go:99] " + msg,
                         ("k8sdp",)) == ["k8sdp"]
    assert vocab._marked("[  12.345678] nvidia-nvswitch: " + msg, ("k8sdp",)) == []
