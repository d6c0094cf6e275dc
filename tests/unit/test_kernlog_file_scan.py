"""The file scanner (grep prefilter + KernelLogScanner) must give exactly what the pure
parser gives on the whole text."""

import codecs
import gzip
import os
import random
import shutil

import pytest

from gpu_runbook.kernlog import parse_kernel_log, scan_kernel_log_file, scan_kernel_log_files
from tests.conftest import FIXTURES

KERN = [os.path.join(FIXTURES, "kernlog", d, "kern.log") for d in sorted(os.listdir(os.path.join(FIXTURES, "kernlog")))
        if os.path.exists(os.path.join(FIXTURES, "kernlog", d, "kern.log"))]


@pytest.mark.parametrize("use_grep", [True, False])
@pytest.mark.parametrize("path", KERN, ids=[os.path.basename(os.path.dirname(p)) for p in KERN])
def test_file_scan_equals_pure_parse(path, use_grep):
    if use_grep and not shutil.which("grep"):
        pytest.skip("no grep")
    with open(path, "rb") as fh:
        text = fh.read().decode("utf-8", "replace")
    want = parse_kernel_log(text, source="kern.log")
    got = scan_kernel_log_file(path, source="kern.log", use_grep=use_grep)
    assert got[1] == want[1]
    assert got[0]["xids"] == want[0]["xids"]
    assert got[0]["lines"] == want[0]["lines"]
    assert got[0]["format"] == want[0]["format"]
    assert got[0]["events"] == want[0]["events"]


def test_file_scan_window_and_unterminated_last_line(tmp_path):
    p = tmp_path / "kern.log"
    p.write_text("2026-12-02T06:00:00+0000 n1 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, GPU has fallen off the bus.\n"
                 "2026-12-02T08:00:00+0000 n1 kernel: NVRM: Xid (PCI:0000:5e:00): 48, pid=1, name=x, DBE")
    facts, findings = scan_kernel_log_file(str(p), since="2026-12-02T07:00:00+00:00")
    assert facts["lines"] == 2
    assert [x["xid"] for x in facts["xids"]] == [48]


def test_cli_streams_a_kernel_log_bigger_than_the_read_cap(tmp_path, monkeypatch, capsys):
    import json
    from gpu_runbook import probes
    from gpu_runbook.cli import main
    monkeypatch.setattr(probes, "_MAX_OUTPUT", 4096)
    d = tmp_path / "node7"
    d.mkdir()
    benign = "2026-12-02T05:00:00+0000 node7 kernel: usb 1-1: new high-speed USB device number 2 using xhci_hcd\n"
    with open(d / "dmesg-all.txt", "w") as fh:  # not a known name: recognised by content
        fh.write(benign * 200)
        fh.write("2026-12-02T06:00:00+0000 node7 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, GPU has fallen off the bus.\n")
    assert os.path.getsize(d / "dmesg-all.txt") > 4096
    rc = main(["analyze", str(d), "--format", "json"])
    host = json.loads(capsys.readouterr().out)["hosts"][0]
    assert rc == 2 and host["host"] == "node7"
    xid = next(f for f in host["findings"] if f.get("xid") == 79)
    assert xid["source"] == "dmesg-all.txt:201"   # the file it came from, not the source kind


# -- scan_kernel_log_files: gzip, UTF-16, several files through one scanner -----------------

XID79 = "[Wed Dec  2 07:09:00 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus.\n"
XID48 = "[Wed Dec  2 07:08:00 2026] NVRM: Xid (PCI:0000:5e:00): 48, pid=1, name=python, DBE\n"
FILLER = "[Wed Dec  2 07:00:00 2026] cni0: port 3(veth1234abcd) entered forwarding state\n"


def kinds(findings):
    return sorted(f["kind"] for f in findings)


def test_gzip_with_an_xid_after_64_mb_of_filler(tmp_path):
    p = tmp_path / "kern.log.gz"
    block = FILLER * 4096                      # ~330 KB of text
    n_blocks = (64 * 1024 * 1024) // len(block) + 1
    with gzip.open(str(p), "wt", compresslevel=1) as fh:
        for _ in range(n_blocks):
            fh.write(block)
        fh.write(XID79)
    assert os.path.getsize(p) < 2 * 1024 * 1024 and n_blocks * len(block) > 64 * 1024 * 1024
    facts, findings = scan_kernel_log_files(str(p))
    (f,) = findings
    assert f["xid"] == 79 and f["source"] == "kern.log.gz:%d" % (n_blocks * 4096 + 1)
    (info,) = facts["files"]
    assert info["compressed"] is True and info["truncated"] is None and info["lines"] == n_blocks * 4096 + 1
    assert facts["lines"] == n_blocks * 4096 + 1 and facts["format"] == "dmesg_ctime"


_RSS_CHILD = r"""
import resource, sys
sys.path.insert(0, sys.argv[2])
from gpu_runbook.kernlog import scan_kernel_log_files
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
facts, findings = scan_kernel_log_files(sys.argv[1])
assert [f["xid"] for f in findings] == [79], findings
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) // 1024)
"""


def test_gzip_memory_stays_flat_whatever_the_ratio(tmp_path):
    import subprocess
    import sys
    p = tmp_path / "kern.log.gz"
    block = FILLER * 4096
    with gzip.open(str(p), "wt", compresslevel=6) as fh:
        for _ in range((160 * 1024 * 1024) // len(block)):
            fh.write(block)
        fh.write(XID79)
    module_utils = os.path.join(os.path.dirname(FIXTURES), "..", "module_utils")
    out = subprocess.run([sys.executable, "-c", _RSS_CHILD, str(p), module_utils], check=True,
                         stdout=subprocess.PIPE, universal_newlines=True).stdout
    assert int(out.split()[-1]) < 100   # MB grown while reading 160 MB of text


def _noisy_lines(n, seed=3):
    rnd = random.Random(seed)  # random text: compresses badly, so a cut lands mid-stream
    return "".join("[Wed Dec  2 07:00:%02d 2026] audit: %032x\n" % (i % 60, rnd.getrandbits(128)) for i in range(n))


def test_truncated_gzip_keeps_what_it_read_and_says_so(tmp_path):
    data = gzip.compress((XID79 + _noisy_lines(20000)).encode())
    p = tmp_path / "dmesg.txt.gz"
    p.write_bytes(data[:len(data) // 2])
    facts, findings = scan_kernel_log_files(str(p))
    assert [f["xid"] for f in findings if f["kind"] == "xid"] == [79]
    (cut,) = [f for f in findings if f["kind"] == "capture_truncated"]
    assert cut["severity"] == "warning" and cut["source"] == "dmesg.txt.gz" and "dmesg.txt.gz" in cut["message"]
    assert "truncated" in cut["message"]
    (info,) = facts["files"]
    assert info["truncated"] and 1 < info["lines"] < 20001


def _corrupt_gzip(path, lines, at):
    data = bytearray(gzip.compress((XID79 + _noisy_lines(lines)).encode()))
    cut = int(len(data) * at)
    data[cut:cut + 64] = b"\x00" * 64
    path.write_bytes(bytes(data))
    return len(data)


def test_corrupt_gzip_keeps_what_it_read_and_says_so(tmp_path):
    p = tmp_path / "kern.log.gz"
    size = _corrupt_gzip(p, 60000, 0.8)
    assert size * 0.8 > 1024 * 1024   # the damage lies past textio's first 1 MiB read
    facts, findings = scan_kernel_log_files(str(p))
    assert [f["xid"] for f in findings if f["kind"] == "xid"] == [79]
    (bad,) = [f for f in findings if f["kind"] == "capture_truncated"]
    assert bad["source"] == "kern.log.gz" and "corrupt" in bad["message"]
    assert facts["files"][0]["truncated"] and facts["files"][0]["lines"] > 1


def test_corrupt_gzip_early_damage_keeps_what_precedes_it(tmp_path):
    p = tmp_path / "kern.log.gz"
    _corrupt_gzip(p, 20000, 0.5)
    _, findings = scan_kernel_log_files(str(p))
    assert "capture_truncated" in kinds(findings)
    assert [f["xid"] for f in findings if f["kind"] == "xid"] == [79]


@pytest.mark.parametrize("use_grep", [True, False])
def test_gz_name_with_plain_text_is_read_as_text(tmp_path, use_grep):
    p = tmp_path / "kern.log.gz"
    p.write_text(FILLER + XID79)
    facts, findings = scan_kernel_log_files(str(p), use_grep=use_grep)
    assert kinds(findings) == ["xid"] and findings[0]["source"] == "kern.log.gz:2"
    assert facts["files"][0]["compressed"] is False and facts["files"][0]["truncated"] is None


@pytest.mark.parametrize("bom", [True, False], ids=["bom", "no-bom"])
def test_utf16_le_with_and_without_bom(tmp_path, bom):
    text = FILLER * 3 + XID79 + FILLER
    p = tmp_path / "dmesg.txt"
    p.write_bytes((codecs.BOM_UTF16_LE if bom else b"") + text.encode("utf-16-le"))
    facts, findings = scan_kernel_log_files(str(p))
    (f,) = findings
    assert f["xid"] == 79 and f["source"] == "dmesg.txt:4" and f["evidence"] == XID79.rstrip("\n")
    assert facts["lines"] == 5 and facts["format"] == "dmesg_ctime"
    assert facts["files"][0]["encoding"].startswith("utf-16")


@pytest.mark.parametrize("use_grep", [True, False])
def test_kern_log_and_dmesg_both_read_through_one_scanner(tmp_path, use_grep):
    kern = tmp_path / "kern.log"
    dmesg = tmp_path / "dmesg.txt"
    kern.write_text("Dec  2 07:00:00 n1 kernel: usb 1-1: new device\n"
                    "Dec  2 07:08:00 n1 kernel: NVRM: Xid (PCI:0000:5e:00): 48, pid=1, name=python, DBE\n")
    dmesg.write_text(FILLER * 2 + XID79)
    facts, findings = scan_kernel_log_files([str(kern), str(dmesg)], year=2026, use_grep=use_grep)
    assert sorted((f["xid"], f["source"]) for f in findings) == [(48, "kern.log:2"), (79, "dmesg.txt:3")]
    assert facts["lines"] == 5 and facts["format"] == "mixed"   # each file's head names its format
    assert [(i["source"], i["lines"]) for i in facts["files"]] == [("kern.log", 2), ("dmesg.txt", 3)]
    assert {x["xid"]: x["source"] for x in facts["xids"]} == {48: "kern.log:2", 79: "dmesg.txt:3"}


def test_plain_gzip_and_utf16_mixed_in_one_read(tmp_path):
    a, b, c = tmp_path / "kern.log", tmp_path / "dmesg.txt.gz", tmp_path / "journal.txt"
    a.write_text(FILLER + XID48)
    b.write_bytes(gzip.compress((FILLER * 4 + XID79).encode()))
    c.write_bytes(codecs.BOM_UTF16_LE + (FILLER + "[Wed Dec  2 07:10:00 2026] Out of memory: Killed process "
                                         "9 (python) total-vm:1kB\n").encode("utf-16-le"))
    facts, findings = scan_kernel_log_files([str(a), str(b), str(c)])
    assert sorted((f["kind"], f["source"]) for f in findings) == [
        ("oom_kill", "journal.txt:2"), ("xid", "dmesg.txt.gz:5"), ("xid", "kern.log:2")]
    assert facts["lines"] == 2 + 5 + 2


def test_a_missing_file_does_not_hide_the_others(tmp_path):
    d = tmp_path / "dmesg.txt"
    d.write_text(XID79)
    facts, findings = scan_kernel_log_files([str(tmp_path / "gone.log"), str(d)])
    assert kinds(findings) == ["capture_unreadable", "xid"]
    assert facts["files"][0]["error"] and facts["files"][1]["lines"] == 1


def test_single_file_alias_names_it_as_asked(tmp_path):
    p = tmp_path / "dmesg-all.txt"
    p.write_text(FILLER + XID79)
    _, findings = scan_kernel_log_file(str(p), source="kern.log")
    assert findings[0]["source"] == "kern.log:2"
    _, findings = scan_kernel_log_file(str(p))
    assert findings[0]["source"] == "dmesg-all.txt:2"
