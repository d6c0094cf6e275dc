"""Round x33's kernel-log readers: Talos's ``talosctl dmesg`` lines, the driver's GSP RPC history rows
(a table row found by its shape: too little literal text to be found by its words), the tables' word
index and the node-line reader's memory (both must change nothing but the time a log takes)."""

import glob
import os
import random

import pytest

from gpu_runbook import vocab
from gpu_runbook.cli import analyze_paths
from gpu_runbook.kernlog import nodelines
from gpu_runbook.kernlog.timestamps import line_format
from gpu_runbook.linefamily import line_family
from gpu_runbook.timeutil import UTC

HERE = os.path.dirname(os.path.abspath(__file__))
REAL = os.path.join(HERE, "..", "fixtures", "real")

# talosctl dmesg: '<node>: ' (the CLI) + machined's '%s: %7s: [%s]: %s' (facility, priority, RFC 3339 nano)
TALOS_XID = ("192.168.11.119: kern: warning: [2026-04-22T21:27:51.288830314Z]: NVRM: Xid (PCI:0000:18:00): 79, "
             "pid=1234, name=python, GPU has fallen off the bus.\n")
TALOS_INFO = "192.168.11.119: kern:    info: [2026-04-22T21:27:52.1Z]: nvidia-nvlink: Nvlink Core is being initialized\n"


def _host(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    out = analyze_paths([str(tmp_path / name)], tz=UTC)
    return out, out["hosts"]


def test_talos_dmesg_lines_are_the_kernels_with_their_time_and_node(tmp_path):
    assert line_format("kern: warning: [2026-04-22T21:27:51.288830314Z]: NVRM: x", 2026)[0] == "talos_dmesg"
    assert line_family("kern:    info: [2026-04-22T21:27:52Z]: nvidia-nvlink: x") == "kernel"
    out, (h,) = _host(tmp_path, "talos.txt", TALOS_XID + TALOS_INFO)
    assert h["host"] == "192.168.11.119" and h["verdict"] == "gpu_hardware"
    [x] = [f for f in h["findings"] if f["kind"] == "xid"]
    assert x["xid"] == 79 and x["first"].startswith("2026-04-22T21:27:51")
    # the kernel's line is the node's, not a job's output as well
    assert not (out.get("job") or {}).get("findings")


def test_a_line_that_only_looks_like_talos_is_not_read_as_its_time():
    assert line_format("kern: warning: [2026-04-22 21:27:51]: NVRM: x", 2026)[0] == "bare"
    assert line_format("user: warning: [not a time]: x", 2026)[0] == "bare"


# /dev/kmsg's records (Documentation/ABI/testing/dev-kmsg: 'prio,seq,usec,flags;message' and the record's
# ' KEY=value' dictionary lines), as `cat /dev/kmsg` writes them (leptonai/gpud pkg/kmsg/testdata; round x38)
KMSG = ("6,3964,206764307,-;nvidia-nvswitch2: open (major=510)\n"
        "4,3990,250000000,-;NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"
        " SUBSYSTEM=pci\n"
        " DEVICE=+pci:0000:18:00.0\n"
        "6,3991,250100000,c;perf: interrupt took too long (2509 > 2500), lowering kernel.perf_event_max_sample_rate "
        "to 79500\n")


def test_dev_kmsg_records_are_the_kernels_lines_with_their_time_since_boot(tmp_path):
    assert line_format("6,3964,206764307,-;nvidia-nvswitch2: open (major=510)", 2026)[0] == "dev_kmsg"
    assert line_family("4,3990,250000000,-;NVRM: Xid (PCI:0000:18:00): 79, x") == "kernel"
    assert line_family("1,2,3 ;not a record") is None  # a CSV row is not one
    _out, (h,) = _host(tmp_path, "kmsg.txt", KMSG)
    assert h["verdict"] == "gpu_hardware"
    [x] = [f for f in h["findings"] if f["kind"] == "xid"]
    assert x["xid"] == 79 and "250.0 s after boot" in x["message"]
    # its healthy records alone read as a kernel log (never refused), with nothing to say
    _out, (h,) = _host(tmp_path, "kmsg-ok.txt", KMSG.split("4,3990")[0] + KMSG.split(" DEVICE=+pci:0000:18:00.0\n")[1])
    assert h["verdict"] == "healthy"


RPC = ("[ 1234.5678] NVRM: GPU0 RPC history (CPU -> GSP):\n"
       "[ 1234.5679] NVRM:     entry function                     sequence data0              data1              "
       "ts_start           ts_end             duration actively_polling\n"
       "[ 1234.5680] NVRM:      0    76   GSP_RM_CONTROL              4127 0x0000000020803039 0x00000000000000b0 "
       "0x00065013160bb6e0 0x0000000000000000          y\n"
       "[ 1234.5681] NVRM:     -1    76   GSP_RM_CONTROL              4126 0x000000002080a026 0x0000000000000214 "
       "0x00065013118cf0d0 0x00065013118cf158    136us  \n")
XID119 = ("[ 1234.5600] NVRM: Xid (PCI:0000:1b:00): 119, pid=2941, name=python, Timeout after 6s of waiting for "
          "RPC response from GPU0 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20803039 0xb0).\n")


def test_the_gsp_rpc_history_rows_are_found_by_their_shape():
    row = vocab.match_line("NVRM: 0 76 GSP_RM_CONTROL 4127 0x0000000020803039 0x00000000000000b0 "
                           "0x00065013160bb6e0 0x0000000000000000 y", ("nvrm",))
    assert row is not None and row[1]["file"].endswith("kernel_gsp.c") and row[1]["kind"] == "xid"
    # the shape is the whole line: a row of other numbers, or words after it, is not one
    assert vocab.match_line("NVRM: 0 76 GSP_RM_CONTROL 4127 0x0000000020803039 failed to respond", ("nvrm",)) is None
    assert vocab.shape_regex("%s failed: %d %d %d %d") is None  # no literal head
    assert vocab.shape_regex("NVRM: %s %d %d %d") is None       # an unbounded string
    assert vocab.shape_regex("NVRM: %c%-4d %-4d %-21.21s %10u") is not None


def test_a_gsp_rpc_history_without_its_xid_is_a_driver_warning_never_healthy(tmp_path):
    _out, (h,) = _host(tmp_path, "kern.log", RPC)
    assert h["verdict"] == "driver" and h["severity"] == "warning"
    # with its Xid 119 the dump is the Xid's detail: said once, by the Xid finding
    _out, (h,) = _host(tmp_path, "kern2.log", XID119 + RPC)
    assert [f["kind"] for f in h["findings"] if f["severity"] != "info"] == ["xid"]


def _brute(t, line):
    """Table.match without the word index: every compiled row in order."""
    if "  " in line or "\t" in line:
        line = " ".join(line.split())
    for longest, size, frags, gaps, i in t.compiled:
        if longest in line:
            span = vocab._span(line, frags, gaps)
            if span is None:
                continue
            row = t.rows[i]
            if row[3] == vocab.BENIGN and vocab._quoted_in_error(line, span):
                continue
            return row, size
    for size, rx, i in t._shapes:
        if rx.search(line) is not None:
            return t.rows[i], size
    if len(line) >= vocab.CUT_VALUE or line.endswith(vocab.CUT_ENDS):
        # a line cut inside a value: among the rows the index hands it (the cut may take a row's key word away)
        for longest, size, frags, gaps, i in t.candidates(line):
            span = vocab._span(line, frags, gaps, cut=True) if longest in line and len(frags) > 1 else None
            if span is not None and not (t.rows[i][3] == vocab.BENIGN and vocab._quoted_in_error(line, span)):
                return t.rows[i], vocab.MIN_LITERAL
    return None


def _fixture_lines(n=4000):
    rng = random.Random(33)
    files = sorted(glob.glob(os.path.join(REAL, "*", "*")))
    lines = []
    for path in rng.sample([f for f in files if not f.endswith("case.json") and os.path.isfile(f)], 400):
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines.extend(fh.read(20000).splitlines()[:40])
    return lines[:n]


@pytest.mark.parametrize("name", vocab.EMITTERS)
def test_the_word_index_finds_what_trying_every_row_finds(name):
    t = vocab.table(name)
    if t is None:
        pytest.skip("table not generated")
    lines = [vocab.instantiate(r[2]) for r in t.rows if vocab.matchable(r[2])][:3000] + _fixture_lines()
    for line in lines:
        assert t.match(line) == _brute(t, line), line


def test_the_node_line_reader_remembers_a_message_not_its_time():
    lines = [l for l in _fixture_lines(20000) if "NVRM" in l or "mlx5" in l or "error" in l.lower()]
    assert len(lines) > 200
    for line in lines:
        nodelines._READ.clear()
        fresh = nodelines.read(line, False)
        assert nodelines.read(line, False) == fresh == nodelines._read(line, False)
        assert nodelines.in_domain(line) == bool(nodelines.DOMAIN_RE.search(line))
    # two lines that differ only in the digits of their time are one message
    a = nodelines.read("[ 1.5] mlx5_core 0000:01:00.0: mlx5_cmd_check:810: failed", False)
    assert nodelines.read("[ 99.7] mlx5_core 0000:01:00.0: mlx5_cmd_check:810: failed", False) == a


def test_dcgms_own_log_line_without_its_time_is_a_node_line():
    line = ("ERROR [3468:4824] ReadNvSwitchStatusAllSwitches() returned No data is available "
            "[/workspaces/dcgm-rel_dcgm_2_0-postmerge/modules/nvswitch/DcgmModuleNvSwitch.cpp:372] "
            "[DcgmNs::DcgmModuleNvSwitch::RunOnce]")
    assert line_family(line) == "node"
    assert line_family("ERROR [3468:4824] something went wrong") is None  # no source and function: not DCGM's


def test_every_branch_of_the_domain_words_holds_one_of_the_plain_substrings_in_front_of_it():
    # in_domain runs DOMAIN_RE only behind _DOMAIN_NEEDLES: a branch that held none would never be tried
    import re
    branches = nodelines.DOMAIN_RE.pattern[len("(?i)"):].split("|")
    for b in branches:
        core = re.sub(r"\\b|\[[^\]]*\]|\.\?", "", b).lower()
        assert any(n in core for n in nodelines._DOMAIN_NEEDLES), b
