"""Probes (the only I/O on a host): timeouts, fallbacks, sysfs reading, capture dirs."""

import gzip
import os
import stat
import time

from gpu_runbook import probes
from gpu_runbook.analyze import analyze_host
from gpu_runbook.infiniband import parse_ib_sysfs


def _sysfs(tmp_path, ports):
    for n, (dev, state, rate) in enumerate(ports):
        d = tmp_path / "class" / "infiniband" / dev
        p = d / "ports" / "1"
        (p / "counters").mkdir(parents=True)
        (d / "hca_type").write_text("MT4129\n")
        (d / "sys_image_guid").write_text("0x58a2e10300a7820%x\n" % n)  # one card per HCA
        (p / "state").write_text(state + "\n")
        (p / "phys_state").write_text("5: LinkUp\n" if "ACTIVE" in state else "2: Polling\n")
        (p / "rate").write_text(rate + "\n")
        (p / "link_layer").write_text("InfiniBand\n")
        (p / "counters" / "link_downed").write_text("0\n")
        (p / "counters" / "symbol_error").write_text("0\n")
    return tmp_path


def test_read_ib_sysfs_is_grep_format_and_parses(tmp_path):
    root = _sysfs(tmp_path, [("mlx5_0", "4: ACTIVE", "400 Gb/sec (4X NDR)"),
                             ("mlx5_1", "1: DOWN", "10 Gb/sec (4X SDR)")])
    text = probes.read_ib_sysfs(str(root))
    assert "%s/class/infiniband/mlx5_0/ports/1/state:4: ACTIVE" % root in text
    assert "%s/class/infiniband/mlx5_0/hca_type:MT4129" % root in text
    facts, findings = parse_ib_sysfs(text, expected_rate=400)
    states = {(p["device"], p["port"]): p["state"] for p in facts["ports"]}
    assert states == {("mlx5_0", 1): "Active", ("mlx5_1", 1): "Down"}
    down = [f for f in findings if f["severity"] == "critical"]
    assert down and down[0]["ib"] == {"device": "mlx5_1", "port": 1}


def test_read_ib_sysfs_unreadable_counter_and_missing_tree(tmp_path):
    root = _sysfs(tmp_path, [("mlx5_0", "4: ACTIVE", "400 Gb/sec (4X NDR)")])
    bad = root / "class" / "infiniband" / "mlx5_0" / "ports" / "1" / "counters" / "symbol_error"
    bad.chmod(0)
    text = probes.read_ib_sysfs(str(root))
    if os.geteuid() != 0:  # root reads mode-000 files anyway
        assert "symbol_error:<Permission denied>" in text
    assert probes.read_ib_sysfs(str(tmp_path / "nope")) == ""


def _tool(d, name, body):
    p = d / name
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(p.stat().st_mode | stat.S_IEXEC)


def test_run_argv_kills_a_hung_tool(tmp_path):
    _tool(tmp_path, "hang", "exec sleep 60\n")
    t0 = time.monotonic()
    try:
        probes.run_argv([str(tmp_path / "hang")], 1)
        raise AssertionError("no timeout")
    except TimeoutError as exc:
        assert "1" in str(exc)
    assert time.monotonic() - t0 < 10


def test_collect_missing_tools_and_denied_dmesg(tmp_path, monkeypatch):
    _tool(tmp_path, "dmesg", "echo 'dmesg: read kernel buffer failed: Operation not permitted' >&2; exit 1\n")
    _tool(tmp_path, "journalctl", "echo '-- No entries --'\n")
    monkeypatch.setenv("PATH", str(tmp_path))
    sources, timings = probes.collect(timeout=5, sysfs_root=str(tmp_path / "sys"),
                                      kern_log_path=str(tmp_path / "kern.log"))
    assert sources["nvidia-smi-q.xml"]["kind"] == "missing"
    kl = sources["kern.log"]
    assert isinstance(kl, dict) and kl["kind"] == "denied"
    assert "Operation not permitted" in kl["error"] and "journalctl" in kl["cmd"]
    assert set(timings) == {"nvidia_smi", "compute_apps", "kernel_log", "ib_sysfs"}
    host = analyze_host(sources, host="n1")
    kinds = {f["kind"] for f in host["findings"]}
    assert {"nvidia_smi_missing", "kernel_log_unavailable"} <= kinds
    assert host["verdict"] == "unknown" and host["severity"] == "warning"


def test_collect_falls_back_to_kern_log_file(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no dmesg, no journalctl
    (tmp_path / "kern.log").write_text(
        "Dec  2 07:09:51 n1 kernel: [40000.1] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus.\n")
    sources, _ = probes.collect(probes=["kernel_log"], timeout=5, kern_log_path=str(tmp_path / "kern.log"))
    assert "Xid" in sources["kern.log"]


def test_load_capture_dir_names_aliases_gz_and_content(tmp_path):
    (tmp_path / "dmesg.txt").write_text("[ 5.0] NVRM: Xid (PCI:0000:3b:00): 13, pid=1, name=x, Graphics Exception\n")
    with gzip.open(tmp_path / "nvidia-smi-q.txt.gz", "wt") as fh:
        fh.write("==============NVSMI LOG==============\n\nAttached GPUs : 0\n")
    (tmp_path / "mystery.out").write_text("gpu1:1:1 [0] NCCL INFO Bootstrap : Using eth0\n")
    (tmp_path / "random.bin").write_bytes(b"\x00\x01\x02")
    (tmp_path / "ibstat-output").write_text("CA 'mlx5_0'\n\tCA type: MT4129\n")
    sources, jobs, ignored = probes.load_capture_dir(str(tmp_path))
    assert set(sources) == {"kern.log", "nvidia-smi-q.txt", "ibstat.txt"}
    assert list(jobs) == ["mystery.out"]
    assert ignored == ["random.bin"]
