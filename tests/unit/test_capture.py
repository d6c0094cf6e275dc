"""Capture directories (offline): nothing in one is lost silently. Kernel logs are streamed
whole whatever their size, name, compression or encoding, and all of them are read; any
other source is read up to the cap and says so when cut; what cannot be read is named."""

import gzip
import os
import threading

import pytest

from gpu_runbook import capture
from gpu_runbook.analyze import analyze_host
from gpu_runbook.capture import load_capture_dir, stream_large_sources

XID79 = ("2026-12-02T07:09:51+0000 n7 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, "
         "GPU has fallen off the bus.\n")
XID48 = ("2026-12-02T07:10:00+0000 n7 kernel: NVRM: Xid (PCI:0000:5e:00): 48, pid=1, name=python, "
         "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer.\n")
BENIGN = "2026-12-02T05:00:00+0000 n7 kernel: usb 1-1: new high-speed USB device number 2 using xhci_hcd\n"
SMI_Q = "==============NVSMI LOG==============\n\nAttached GPUs : 0\n"


def _analyze(path, **kw):
    sources, jobs, ignored = load_capture_dir(str(path))
    sources, parsed = stream_large_sources(sources, **kw)
    return analyze_host(sources, host="n7", parsed=parsed), sources


def _xids(host):
    return sorted(f["xid"] for f in host["findings"] if f.get("xid") is not None)


def _notes(sources, kind=None):
    return [f for f in sources.get("_notes", []) if kind is None or f["kind"] == kind]


def _filler_gz(path, filler_bytes, tail):
    """A gzip file of ``filler_bytes`` of benign lines, then ``tail``: small on disk."""
    block = (BENIGN * (1024 * 1024 // len(BENIGN) + 1)).encode()
    with gzip.open(str(path), "wb", compresslevel=1) as fh:
        written = 0
        while written < filler_bytes:
            fh.write(block)
            written += len(block)
        fh.write(tail.encode())


# ---- kernel logs: streamed whole, every one of them

def test_gz_kernel_log_xid_after_64_mib_is_found(tmp_path):
    _filler_gz(tmp_path / "kern.log.gz", 65 * 1024 * 1024, XID79)
    host, sources = _analyze(tmp_path)
    assert 79 in _xids(host)  # it used to be read to 64 MB and the Xid at the end lost
    assert host["verdict"] == "gpu_hardware"


def test_truncated_gz_kernel_log_keeps_its_xid_and_says_it_was_cut(tmp_path):
    lines = [XID79] + ["2026-12-02T07:%02d:%02d+0000 n7 kernel: usb %d-%d: device %x reset\n"
                       % (m % 60, m % 59, m, m * 7, m * 7919) for m in range(20000)]
    data = gzip.compress("".join(lines).encode())
    (tmp_path / "kern.log.gz").write_bytes(data[:len(data) // 2])
    host, _ = _analyze(tmp_path)
    assert 79 in _xids(host)
    cut = [f for f in host["findings"] if f["kind"] == "capture_truncated"]
    assert cut and cut[0]["severity"] == "warning"
    assert host["verdict"] != "healthy"


def test_gz_name_with_plain_content_is_read_as_plain(tmp_path):
    (tmp_path / "kern.log.gz").write_text(BENIGN + XID79)
    (tmp_path / "nvidia-smi-q.txt.gz").write_text(SMI_Q)
    host, sources = _analyze(tmp_path)
    assert 79 in _xids(host)  # it used to be an info "unreadable" and nothing else
    assert sources["nvidia-smi-q.txt"].startswith("====")
    assert not _notes(sources)


@pytest.mark.parametrize("encoding,bom", [("utf-16-le", b"\xff\xfe"), ("utf-16-le", b""), ("utf-16-be", b"\xfe\xff")])
def test_utf16_kernel_log_by_name_and_by_content(tmp_path, encoding, bom):
    (tmp_path / "kern.log").write_bytes(bom + (BENIGN + XID79).encode(encoding))
    (tmp_path / "exported-from-windows.txt").write_bytes(bom + (BENIGN + XID48).encode(encoding))
    sources, _, ignored = load_capture_dir(str(tmp_path))
    assert ignored == []
    assert sorted(os.path.basename(p) for p in sources["kern.log"]["paths"]) == [
        "exported-from-windows.txt", "kern.log"]
    sources, parsed = stream_large_sources(sources)
    host = analyze_host(sources, host="n7", parsed=parsed)
    assert _xids(host) == [48, 79]


def test_every_kernel_log_of_a_dir_is_read(tmp_path, monkeypatch):
    # a kern.log bigger than the read cap used to be replaced by the dmesg.txt beside it
    monkeypatch.setattr(capture, "_MAX_READ", 4096)
    (tmp_path / "kern.log").write_text(BENIGN * 100 + XID79)
    (tmp_path / "dmesg.txt").write_text(XID48)
    (tmp_path / "journalctl.txt").write_text(BENIGN)
    sources, _, _ = load_capture_dir(str(tmp_path))
    assert sorted(os.path.basename(p) for p in sources["kern.log"]["paths"]) == [
        "dmesg.txt", "journalctl.txt", "kern.log"]
    sources, parsed = stream_large_sources(sources)
    host = analyze_host(sources, host="n7", parsed=parsed)
    assert _xids(host) == [48, 79]
    assert not _notes(sources)  # a kernel log is never cut, so there is nothing to warn about
    xid48 = next(f for f in host["findings"] if f.get("xid") == 48)
    assert xid48["source"].startswith("dmesg.txt:")


def test_stream_large_sources_passes_the_zone_and_keeps_notes(tmp_path, monkeypatch):
    import gpu_runbook.kernlog as kernlog
    seen = {}

    def fake_scan(paths, **kw):
        seen.update(kw, paths=paths)
        return {"lines": 1}, []

    monkeypatch.setattr(kernlog, "scan_kernel_log_files", fake_scan)
    note = {"kind": "capture_truncated"}
    rest, parsed = stream_large_sources({"kern.log": {"paths": ["/x/kern.log"]}, "_notes": [note],
                                         "ibstat.txt": "CA 'mlx5_0'\n"}, since="2026-12-02T00:00:00", tz="+09:00")
    assert seen == {"paths": ["/x/kern.log"], "since": "2026-12-02T00:00:00", "year": None, "tz": "+09:00"}
    assert parsed == {"kern.log": ({"lines": 1}, [])}
    assert rest == {"ibstat.txt": "CA 'mlx5_0'\n", "_notes": [note]}


def test_kernel_log_vanished_before_streaming_is_named(tmp_path):
    (tmp_path / "kern.log").write_text(XID79)
    sources, _, _ = load_capture_dir(str(tmp_path))
    os.remove(str(tmp_path / "kern.log"))
    sources, parsed = stream_large_sources(sources)
    host = analyze_host(sources, host="n7", parsed=parsed)
    assert host["verdict"] != "healthy"
    assert any("kern.log" in f["message"] for f in host["findings"] if f["severity"] == "warning")


# ---- other sources: read to the cap, never cut silently

def test_big_non_kernel_source_is_read_to_the_cap_and_warns(tmp_path, monkeypatch):
    monkeypatch.setattr(capture, "_MAX_READ", 4096)
    (tmp_path / "nvidia-smi-q.txt").write_text(SMI_Q + "    Product Name : NVIDIA H100\n" * 400)
    sources, _, _ = load_capture_dir(str(tmp_path))
    assert len(sources["nvidia-smi-q.txt"]) == 4096 and sources["nvidia-smi-q.txt"].startswith("====")
    (cut,) = _notes(sources, "capture_truncated")
    assert cut["severity"] == "warning" and cut["source"] == "nvidia-smi-q.txt" and "first" in cut["message"]
    host = analyze_host(sources, host="n7")
    assert any(f["kind"] == "capture_truncated" for f in host["findings"])


def test_big_job_log_keeps_its_tail(tmp_path, monkeypatch):
    # job logs are streamed (textio.TextLines), bounded by the bytes read from their end
    monkeypatch.setattr(capture, "_MAX_JOB_LOG", 4096)
    with open(str(tmp_path / "rank-3.out"), "w") as fh:
        for i in range(2000):
            fh.write("step %d loss 0.1\n" % i)
        fh.write("[Rank 3] Watchdog caught collective operation timeout\n")
    sources, jobs, _ = load_capture_dir(str(tmp_path))
    lines = list(jobs["rank-3.out"])
    assert sum(len(line) + 1 for line in lines) <= 4096 and lines[-1].endswith("collective operation timeout")
    assert lines[0].startswith("step ")  # the partial first line was dropped, not half-read
    (cut,) = jobs["rank-3.out"].problems
    assert "only its last" in cut and "skipped" in cut and "_notes" not in sources


def test_truncated_gz_of_another_source_warns(tmp_path):
    data = gzip.compress((SMI_Q + "".join("    Serial Number : %d\n" % (i * 7919) for i in range(5000))).encode())
    (tmp_path / "nvidia-smi-q.txt.gz").write_bytes(data[:len(data) // 2])
    sources, _, _ = load_capture_dir(str(tmp_path))
    assert sources["nvidia-smi-q.txt"].startswith("====")  # read as far as it goes
    (cut,) = _notes(sources, "capture_truncated")
    assert "truncated" in cut["message"] and cut["source"] == "nvidia-smi-q.txt.gz"


def test_utf16_non_kernel_source_is_decoded(tmp_path):
    (tmp_path / "ibstat.txt").write_bytes(b"\xff\xfe" + "CA 'mlx5_0'\n\tCA type: MT4129\n".encode("utf-16-le"))
    sources, _, _ = load_capture_dir(str(tmp_path))
    assert sources["ibstat.txt"] == "CA 'mlx5_0'\n\tCA type: MT4129\n"


# ---- what cannot be read is named, never opened when it would block

def test_fifo_in_a_capture_dir_is_reported_not_opened(tmp_path):
    os.mkfifo(str(tmp_path / "kern.log"))
    os.mkfifo(str(tmp_path / "mystery"))
    (tmp_path / "ibstat.txt").write_text("CA 'mlx5_0'\n")
    box = {}
    t = threading.Thread(target=lambda: box.update(r=load_capture_dir(str(tmp_path))), daemon=True)
    t.start()
    t.join(10)
    assert "r" in box, "load_capture_dir blocked on a FIFO"
    sources, _, _ = box["r"]
    notes = _notes(sources, "capture_unreadable")
    assert sorted(f["source"] for f in notes) == ["kern.log", "mystery"]
    assert all("FIFO" in f["message"] and f["severity"] == "warning" for f in notes)
    assert "kern.log" not in sources and sources["ibstat.txt"] == "CA 'mlx5_0'\n"


def test_broken_link_and_unreadable_file_are_named(tmp_path):
    os.symlink(str(tmp_path / "gone"), str(tmp_path / "nvidia-smi-q.txt"))
    (tmp_path / "dmesg.txt").write_text(XID79)
    (tmp_path / "dmesg.txt").chmod(0)
    sources, _, _ = load_capture_dir(str(tmp_path))
    named = {f["source"]: f for f in _notes(sources, "capture_unreadable")}
    assert "broken link" in named["nvidia-smi-q.txt"]["message"]
    if os.geteuid() != 0:  # root reads mode-000 files anyway
        assert "dmesg.txt" in named and "kern.log" not in sources


def test_subdirectories_are_skipped_quietly(tmp_path):
    (tmp_path / "gpu-r3-n01").mkdir()
    (tmp_path / "gpu-r3-n01" / "kern.log").write_text(XID79)
    assert load_capture_dir(str(tmp_path)) == ({}, {}, [])
