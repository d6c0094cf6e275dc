"""The file scanner (grep prefilter + KernelLogScanner) must give exactly what the pure
parser gives on the whole text."""

import os
import shutil

import pytest

from gpu_runbook.kernlog import parse_kernel_log
from gpu_runbook.probes import scan_kernel_log_file
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
    assert xid["source"] == "kern.log:201"
