"""Gloo's vocabulary (module_utils/gpu_runbook/vocab/gloo.py, tests/tools/vocab/gen_gloo.py):
the lines PyTorch's gloo backend prints classified as the table says -- the interface that has no
address as the job's network set-up (nccl_config), a peer that closed, reset or timed out as
unknown. Its rows' provenance, kinds and read-back are test_vocab_tables' and test_vocab_engine's
(gloo is registered)."""

import pytest

from gpu_runbook import vocab
from gpu_runbook.vocab import gloo
from gpu_runbook.vocab import index as vocab_index

IFNAME_LINE = ("RuntimeError: [enforce fail at /root/pytorch/third_party/gloo/gloo/transport/tcp/device.cc:83] "
               "ifa != nullptr. Unable to find address for: bond1")


@pytest.fixture
def registered(monkeypatch):
    """vocab.EMITTERS and the markers' index with the gloo table in them (as registered)."""
    names = tuple(dict.fromkeys(vocab.EMITTERS + ("gloo",)))
    monkeypatch.setattr(vocab, "EMITTERS", names)
    monkeypatch.setitem(vocab_index.MARKERS, "gloo", tuple(gloo.MARKERS))
    return names


def _row(tbl, line):
    got = tbl.match(line)
    return None if got is None else dict(zip(vocab.ROW_FIELDS, got[0]))


def test_gloo_table_provenance():
    assert gloo.EMITTER == "Gloo" and gloo.ORIGIN == "https://github.com/facebookincubator/gloo"
    assert gloo.GENERATOR == "tests/tools/vocab/gen_gloo.py"
    assert len(gloo.COMMIT) == 40 and gloo.VERSION.startswith("main@")
    assert "enforce fail at" in gloo.MARKERS and "gloo/" in gloo.MARKERS


def test_an_interface_without_address_is_the_jobs_network_setup(registered):
    row = _row(vocab.table("gloo"), IFNAME_LINE)
    assert row is not None and row["file"] == "gloo/transport/tcp/device.cc"
    assert (row["kind"], row["category"], row["severity"]) == ("logged_nccl_config_error", "nccl_config", "critical")
    assert "GLOO_SOCKET_IFNAME" in row["meaning"]
    tbl, row = vocab.match_line(IFNAME_LINE, registered)
    assert tbl.name == "gloo" and row["category"] == "nccl_config"


@pytest.mark.parametrize("line, category, severity", [
    ("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [10.0.0.1]:1234",
     "unknown", "critical"),
    ("RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 1800000ms "
     "for recv operation to complete", "unknown", "critical"),
    ("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:525] Read error [10.0.0.2]:52314: "
     "Connection reset by peer", "unknown", "critical"),
    ("RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:208] ifa != nullptr. "
     "Unable to find interface for: [10.1.2.3]:0", "nccl_config", "critical"),
    ("RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] "
     "timed out connecting: SO_ERROR: Connection refused, remote=[node-2]:41243", "unknown", "critical"),
    ("[/pytorch/third_party/gloo/gloo/transport/tcp/debug_logger.cc:9] ERROR failed to connect, willRetry=1, retry=1, "
     "retryLimit=3, rank=0, size=2, local=[10.0.0.1]:35234, remote=[10.0.0.2]:41243, error=SO_ERROR: Connection "
     "refused, remote=[10.0.0.2]:41243", "unknown", "warning"),
    ("RuntimeError: Application timeout caused pair closure", "unknown", "warning"),
    ("RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/ibverbs/pair.cc:496] wc->status == "
     "IBV_WC_SUCCESS. 12 vs 0. Recv for slot 3: transport retry counter exceeded", "ib_network", "critical"),
    ("RuntimeError: [enforce fail at ../third_party/gloo/gloo/allgatherv.cc:23] elementSize == this->elementSize. "
     "4 vs 8. Element size does not match existing value. Please double check that the input and output types match.",
     "application", "critical"),
])
def test_typical_gloo_lines(registered, line, category, severity):
    row = _row(vocab.table("gloo"), line)
    assert row is not None, line
    assert (row["category"], row["severity"]) == (category, severity), row
    tbl, row = vocab.match_line(line, registered)
    assert tbl.name == "gloo" and row["category"] == category


def test_older_commits_add_their_own_wordings():
    """Rows of the commits older PyTorch releases vendor carry "path@<commit12>" and a wording the
    pin does not have."""
    older = [r for r in gloo.ROWS if "@" in r[0]]
    assert older and all(len(r[0].split("@")[1]) == 12 for r in older)
    pinned = set(r[2] for r in gloo.ROWS if "@" not in r[0])
    assert not [r for r in older if r[2] in pinned]
