"""No silent loss of evidence, through the command line users run offline:
``gpu-runbook analyze`` on capture directories that used to come out "healthy"."""

import gzip
import json

from gpu_runbook.cli import main

XID79 = ("2026-12-02T07:09:51+0000 n7 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, "
         "GPU has fallen off the bus.\n")
XID48 = ("2026-12-02T07:10:00+0000 n7 kernel: NVRM: Xid (PCI:0000:5e:00): 48, pid=1, name=python, "
         "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer.\n")
BENIGN = "2026-12-02T05:00:00+0000 n7 kernel: usb 1-1: new high-speed USB device number 2 using xhci_hcd\n"


def _run(capsys, *args):
    rc = main(["analyze"] + [str(a) for a in args] + ["--format", "json"])
    out, err = capsys.readouterr()
    return rc, (json.loads(out) if out.strip() else None), err


def _host(doc):
    (h,) = doc["hosts"]
    return h, {f["kind"] for f in h["findings"]}, sorted(f["xid"] for f in h["findings"] if f.get("xid"))


def test_xid_at_the_end_of_a_big_gzipped_kern_log(capsys, tmp_path):
    block = (BENIGN * (1024 * 1024 // len(BENIGN) + 1)).encode()
    with gzip.open(str(tmp_path / "kern.log.gz"), "wb", compresslevel=1) as fh:
        for _ in range(66):  # past the old 64 MB read
            fh.write(block)
        fh.write(XID79.encode())
    rc, doc, _ = _run(capsys, tmp_path)
    h, _kinds, xids = _host(doc)
    assert rc == 2 and xids == [79] and h["verdict"] == "gpu_hardware"


def test_truncated_gzip_is_read_as_far_as_it_goes_and_says_so(capsys, tmp_path):
    data = gzip.compress((XID79 + "".join("2026-12-02T07:11:%02d+0000 n7 kernel: usb reset %d\n" % (i % 60, i * 7919)
                                          for i in range(30000))).encode())
    (tmp_path / "kern.log.gz").write_bytes(data[:len(data) // 2])
    rc, doc, _ = _run(capsys, tmp_path)
    h, kinds, xids = _host(doc)
    assert xids == [79] and "capture_truncated" in kinds and rc == 2


def test_a_gz_name_on_plain_text_is_still_read(capsys, tmp_path):
    (tmp_path / "kern.log.gz").write_text(XID79)
    rc, doc, _ = _run(capsys, tmp_path)
    assert _host(doc)[2] == [79] and rc == 2


def test_every_kernel_log_of_a_directory_is_read(capsys, tmp_path):
    (tmp_path / "kern.log").write_text(BENIGN * 10 + XID79)
    (tmp_path / "dmesg.txt").write_text(XID48)
    (tmp_path / "journalctl.txt").write_text(BENIGN)
    rc, doc, _ = _run(capsys, tmp_path)
    h, _kinds, xids = _host(doc)
    assert xids == [48, 79]
    assert {f["source"].split(":")[0] for f in h["findings"] if f.get("xid")} == {"kern.log", "dmesg.txt"}


def test_utf16_copy_of_a_log_keeps_its_xids(capsys, tmp_path):
    (tmp_path / "kern.log").write_bytes((BENIGN + XID79).encode("utf-16"))  # with BOM
    (tmp_path / "sub").mkdir()
    rc, doc, _ = _run(capsys, tmp_path)
    assert _host(doc)[2] == [79]
    (tmp_path / "kern.log").write_bytes((BENIGN + XID79).encode("utf-16-le"))  # no BOM
    rc, doc, _ = _run(capsys, tmp_path)
    assert _host(doc)[2] == [79]


def test_a_seoul_capture_keeps_the_xid_inside_the_jobs_window(capsys, tmp_path):
    """dmesg -T prints the node's local time without a zone: read in --tz, the Xid at 07:09
    Seoul time is after a job start of 06:00 Seoul (21:00 UTC the day before)."""
    (tmp_path / "dmesg.txt").write_text(
        "[Wed Dec  2 05:50:00 2026] NVRM: Xid (PCI:0000:5e:00): 48, pid=1, name=python, An uncorrectable "
        "double bit error (DBE) has been detected on GPU in the framebuffer.\n"
        "[Wed Dec  2 07:09:51 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus.\n")
    rc, doc, _ = _run(capsys, tmp_path, "--tz", "+09:00", "--since", "2026-12-01T21:00:00Z")
    assert _host(doc)[2] == [79]  # the Xid 48 from before the job stays out
    rc, doc, _ = _run(capsys, tmp_path, "--tz", "Asia/Seoul", "--since", "2026-12-02T06:00:00")
    assert _host(doc)[2] == [79]


def test_empty_captures_are_unusable_input_not_a_healthy_host(capsys, tmp_path):
    (tmp_path / "kern.log").write_text("")
    (tmp_path / "nvidia-smi-q.txt").write_text("")
    rc, doc, err = _run(capsys, tmp_path)
    assert rc == 3 and doc is None
    # each input said (issue 24: input nobody can read is named), then the host none of them served
    lines = err.strip().splitlines()
    assert [l.split(": ", 1)[1].rsplit("/", 1)[-1] for l in lines[:2]] == ["kern.log: empty: nothing to read",
                                                                         "nvidia-smi-q.txt: empty: nothing to read"]
    assert len(lines) == 3 and "%s: no usable evidence" % tmp_path.name in lines[2]


def test_one_unusable_host_beside_a_usable_one_is_unknown_and_named(capsys, tmp_path):
    (tmp_path / "n1").mkdir()
    (tmp_path / "n1" / "kern.log").write_text(XID79)
    (tmp_path / "n2").mkdir()
    (tmp_path / "n2" / "kern.log").write_bytes(b"")
    rc, doc, err = _run(capsys, tmp_path)
    by = {h["host"]: h for h in doc["hosts"]}
    assert by["n2"]["verdict"] == "unknown" and by["n2"]["severity"] == "warning"
    assert any(f["kind"] == "no_evidence" for f in by["n2"]["findings"])
    assert "n2: no usable evidence" in err and rc == 2


def test_bad_arguments_are_refused_before_any_work(capsys, tmp_path):
    (tmp_path / "kern.log").write_text(XID79)
    for bad in (["--since", "yesterday"], ["--expected-gpus", "-1"], ["--expected-ib-rate", "0"],
                ["--tz", "Mars/Olympus"]):
        rc, doc, err = _run(capsys, tmp_path, *bad)
        assert rc == 3 and doc is None and len(err.strip().splitlines()) == 1, bad
