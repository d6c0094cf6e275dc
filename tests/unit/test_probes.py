"""Probes (the only I/O on a host): one deadline, fallbacks, sysfs reading, tool lookup,
failing tools; and the capture-dir loader they share the sources dict with."""

import gzip
import os
import shutil
import stat
import time

import pytest

from gpu_runbook import probes
from gpu_runbook.analyze import analyze_host
from gpu_runbook.capture import load_capture_dir
from gpu_runbook.infiniband import parse_ib_sysfs
from tests.conftest import FIXTURES, SLEEP, hang_script, process_alive, still_running


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
    sources, jobs, ignored = load_capture_dir(str(tmp_path))
    assert set(sources) - {"_names"} == {"kern.log", "nvidia-smi-q.txt", "ibstat.txt"}
    # each source keeps the name the user gave its file (the report quotes it)
    assert sources["_names"]["ibstat.txt"] == "ibstat-output"
    # read by content: every file that is not wholly a tool's output is offered to the job-log
    # reader too (a kernel log, a binary: it finds nothing there and says so)
    assert sorted(jobs) == ["dmesg.txt", "mystery.out", "random.bin"]
    assert ignored == []


# ---- one deadline for the whole gather; nothing vanishes, nothing is left running

XID79 = ("Dec  2 07:09:51 n1 kernel: [40000.1] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, "
         "GPU has fallen off the bus.\n")


def _hang_tool(d, name, pids):
    """A stand-in that never answers and has a child: both must be killed at the deadline."""
    _tool(d, name, hang_script(pids))


def _processes_mentioning(marker):
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit() and process_alive(int(pid)):
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as fh:
                    if marker.encode() in fh.read():
                        found.append(int(pid))
            except OSError:
                pass
    return found


@pytest.fixture
def fifo_sysfs(tmp_path):
    """An IB sysfs tree whose port_rcv_data blocks on read (a FIFO stands in for a read stuck
    in D state in a wedged mlx5 driver); the blocked reader is released afterwards."""
    root = _sysfs(tmp_path / "sys", [("mlx5_0", "4: ACTIVE", "400 Gb/sec (4X NDR)")])
    fifo = root / "class" / "infiniband" / "mlx5_0" / "ports" / "1" / "counters" / "port_rcv_data"
    os.mkfifo(str(fifo))
    yield root, fifo
    try:  # a writer wakes the reader still blocked in open(); closing it gives EOF
        os.close(os.open(str(fifo), os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass


def test_blocked_ib_sysfs_read_is_a_hang_finding_by_the_deadline(fifo_sysfs):
    root, fifo = fifo_sysfs
    t0 = time.monotonic()
    sources, timings = probes.collect(probes=["ib_sysfs"], timeout=2, sysfs_root=str(root))
    elapsed = time.monotonic() - t0
    assert elapsed < 2 + probes._GRACE + 1.5  # today it waited timeout + 10 s and dropped the source
    err = sources["ib-sysfs.txt"]
    assert err["kind"] == "timeout" and err["seconds"] == 2 and err["cmd"] == str(fifo)
    assert timings["ib_sysfs"] >= 2
    host = analyze_host(sources, host="n1")
    hang = next(f for f in host["findings"] if f["kind"] == "ib_probe_hang")
    assert hang["severity"] == "critical" and str(fifo) in hang["message"] and "2s" in hang["message"]
    assert host["verdict"] == "ib_network"


def test_hanging_dmesg_and_journalctl_still_read_the_kern_log_file_by_the_deadline(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    pids = tmp_path / "pids"
    _hang_tool(bindir, "dmesg", pids)
    _hang_tool(bindir, "journalctl", pids)
    monkeypatch.setenv("PATH", str(bindir))
    monkeypatch.setattr(probes, "_SBIN_DIRS", ())
    (tmp_path / "kern.log").write_text(XID79)
    t0 = time.monotonic()
    sources, _ = probes.collect(probes=["kernel_log"], timeout=4, kern_log_path=str(tmp_path / "kern.log"))
    elapsed = time.monotonic() - t0
    # the chain used to be sequential: 4 s for dmesg, then 4 s for journalctl, then the file
    assert elapsed < 4 + 2.5
    assert "Xid (PCI:0000:3b:00): 79" in sources["kern.log"]
    host = analyze_host(sources, host="n1")
    assert any(f.get("xid") == 79 for f in host["findings"])
    # no stand-in (nor the child it started) outlives the gather
    started = [int(x) for x in pids.read_text().split()]
    assert len(started) == 4
    assert not still_running(started)
    assert not _processes_mentioning(str(bindir))


def test_dmesg_wins_over_journalctl_and_the_file_when_it_answers(tmp_path, monkeypatch):
    _tool(tmp_path, "dmesg", "echo '[ 1.0] dmesg line'\n")
    _tool(tmp_path, "journalctl", "echo 'journal line'\n")
    (tmp_path / "kern.log").write_text("file line\n")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(probes, "_SBIN_DIRS", ())
    text, tried = probes.probe_kernel_log(5, kern_log_path=str(tmp_path / "kern.log"))
    assert text.strip() == "[ 1.0] dmesg line" and tried == []
    _tool(tmp_path, "dmesg", "exit 0\n")  # prints nothing: journald is next
    text, tried = probes.probe_kernel_log(5, kern_log_path=str(tmp_path / "kern.log"))
    assert text.strip() == "journal line" and "printed nothing" in tried[0]["error"]


def test_an_answering_dmesg_spares_the_node_the_journal_read(tmp_path, monkeypatch):
    # journalctl -k reads the journal files: on a busy node seconds of CPU that a usable dmesg makes moot
    _tool(tmp_path, "dmesg", "echo '[ 1.0] dmesg line'\n")
    _tool(tmp_path, "journalctl", "echo started >> %s/journal-ran; echo 'journal line'\n" % tmp_path)
    (tmp_path / "kern.log").write_text("file line\n")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(probes, "_SBIN_DIRS", ())
    text, tried = probes.probe_kernel_log(8, kern_log_path=str(tmp_path / "kern.log"))
    assert text.strip() == "[ 1.0] dmesg line" and tried == []
    assert not (tmp_path / "journal-ran").exists()


@pytest.mark.parametrize("deadline, journal_read", [(8, True), (30, False)])
def test_a_slow_dmesg_lets_journald_start_at_its_turn(tmp_path, monkeypatch, deadline, journal_read):
    # dmesg answers after 3 s. At 8 s journald's turn is 8/4 = 2 s: it starts, yet dmesg, once
    # it answers, still wins. At 30 s (the module's default) the turn is 7.5 s: a dmesg slowed by
    # a busy node wins without a journal read (at the old 2 s cap 28-31 of 32 testbed hosts read it)
    _tool(tmp_path, "dmesg", "/bin/sleep 3; echo '[ 1.0] dmesg line'\n")
    _tool(tmp_path, "journalctl", "echo started >> %s/journal-ran; echo 'journal line'\n" % tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(probes, "_SBIN_DIRS", ())
    text, tried = probes.probe_kernel_log(deadline, kern_log_path=str(tmp_path / "no-kern.log"))
    assert text.strip() == "[ 1.0] dmesg line" and tried == []
    assert (tmp_path / "journal-ran").exists() == journal_read


def test_the_turns_are_capped_on_a_long_deadline(tmp_path, monkeypatch):
    # a quarter of a 400 s deadline would be 100 s: the cap (1 s here, 8 s in the module) starts
    # journald at 1 s, while dmesg still works (it ends at 3 s, printing nothing)
    _tool(tmp_path, "dmesg", "/bin/sleep 3\n")
    _tool(tmp_path, "journalctl", "/bin/date +%%s.%%N > %s/journal-started; echo 'journal line'\n" % tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(probes, "_SBIN_DIRS", ())
    monkeypatch.setattr(probes, "_KERNEL_LOG_STAGGER", 1.0)
    t0 = time.time()
    text, tried = probes.probe_kernel_log(400, kern_log_path=str(tmp_path / "no-kern.log"))
    assert text.strip() == "journal line" and "printed nothing" in tried[0]["error"]
    assert float((tmp_path / "journal-started").read_text()) - t0 < 2.5  # at its turn, not when dmesg ended


def test_everything_hanging_is_a_timeout_per_source_and_no_orphans(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    pids = tmp_path / "pids"
    for name in ("nvidia-smi", "dmesg", "journalctl", "ibstat"):
        _hang_tool(bindir, name, pids)
    monkeypatch.setenv("PATH", str(bindir))
    monkeypatch.setattr(probes, "_SBIN_DIRS", ())
    t0 = time.monotonic()
    sources, timings = probes.collect(probes=["nvidia_smi", "compute_apps", "kernel_log", "ibstat"], timeout=2,
                                      kern_log_path=str(tmp_path / "no-kern.log"))
    assert time.monotonic() - t0 < 2 + 2.5
    for name in ("nvidia-smi-q.xml", "nvidia-smi-compute-apps.csv", "kern.log", "ibstat.txt"):
        assert sources[name]["kind"] == "timeout" and sources[name]["seconds"] == 2, sources[name]
    assert "dmesg" in sources["kern.log"]["cmd"] and "journalctl" in sources["kern.log"]["cmd"]
    started = [int(x) for x in pids.read_text().split()]
    assert len(started) == 10  # 5 stand-ins (nvidia-smi twice), each with one child
    assert not still_running(started)
    assert not _processes_mentioning(str(bindir))
    host = analyze_host(sources, host="n1")
    by_kind = {f["kind"]: f for f in host["findings"]}
    assert by_kind["nvidia_smi_hang"]["severity"] == "critical"
    assert by_kind["ib_probe_hang"]["source"] == "ibstat.txt"
    assert by_kind["compute_apps_failed"]["severity"] == "info"
    kern = by_kind["probe_timeout"]
    assert kern["source"] == "kern.log" and "within 2s" in kern["message"]


def test_run_argv_kills_the_children_of_a_hung_tool(tmp_path):
    pids = tmp_path / "pids"
    _hang_tool(tmp_path, "hang", pids)
    with pytest.raises(TimeoutError):
        probes.run_argv([str(tmp_path / "hang")], 1)
    started = [int(x) for x in pids.read_text().split()]
    assert len(started) == 2 and not still_running(started)


def test_a_tool_holding_its_output_open_past_exit_answers_and_its_child_is_killed(tmp_path):
    # the tool exits but its background child keeps stdout open: the tool's exit counts (issue 11)
    pids = tmp_path / "pids"
    _tool(tmp_path, "leaky", "%s 300 &\necho $! > %s\necho partial\nexit 0\n" % (SLEEP, pids))
    t0 = time.monotonic()
    assert probes.run_argv([str(tmp_path / "leaky")], 10) == (0, "partial\n", "")
    assert time.monotonic() - t0 < 8
    assert not still_running([int(pids.read_text())])


# ---- tool lookup

def test_tools_are_found_in_sbin_off_path(tmp_path, monkeypatch):
    assert {"/usr/sbin", "/sbin", "/usr/local/sbin"} <= set(probes._SBIN_DIRS)
    sbin = tmp_path / "sbin"
    sbin.mkdir()
    _tool(sbin, "ibstat", "echo \"CA 'mlx5_0'\"\n")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(probes, "_SBIN_DIRS", (str(sbin),))
    assert probes.find_tool("ibstat") == str(sbin / "ibstat")
    sources, _ = probes.collect(probes=["ibstat"], timeout=5)
    assert sources["ibstat.txt"].startswith("CA 'mlx5_0'")
    assert probes.find_tool("no-such-tool-anywhere") is None


# ---- a failing nvidia-smi is never healthy

def _smi(tmp_path, monkeypatch, body):
    _tool(tmp_path, "nvidia-smi", body)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(probes, "_SBIN_DIRS", ())
    return probes.collect(probes=["nvidia_smi", "compute_apps"], timeout=5)[0]


def test_nvml_mismatch_on_stderr_keeps_rc_and_text_and_is_not_healthy(tmp_path, monkeypatch):
    sources = _smi(tmp_path, monkeypatch, "echo 'Failed to initialize NVML: Driver/library version mismatch' >&2\n"
                                          "echo 'NVML library version: 550.54' >&2\nexit 9\n")
    err = sources["nvidia-smi-q.xml"]
    assert err["kind"] == "failed" and err["rc"] == 9
    assert "Driver/library version mismatch" in err["text"] and "NVML library version" in err["text"]
    host = analyze_host(sources, host="n1", expected_gpus=8)
    assert host["verdict"] != "healthy" and host["severity"] in ("warning", "critical")
    gpu = [f for f in host["findings"] if f["source"].startswith("nvidia-smi-q.xml")]
    assert gpu and all(f["severity"] in ("warning", "critical") for f in gpu)
    assert any("mismatch" in f["message"].lower() for f in gpu), gpu
    # the compute-apps query failing too stays a side note
    apps = [f for f in host["findings"] if f["source"] == "nvidia-smi-compute-apps.csv"]
    assert [f["kind"] for f in apps] == ["compute_apps_failed"] and apps[0]["severity"] == "info"


def test_driver_not_loaded_on_stdout_is_a_failure_not_a_report(tmp_path, monkeypatch):
    sources = _smi(tmp_path, monkeypatch,
                   "echo \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
                   "Make sure that the latest NVIDIA driver is installed and running.\"\nexit 9\n")
    err = sources["nvidia-smi-q.xml"]
    assert isinstance(err, dict) and err["rc"] == 9 and "couldn't communicate" in err["text"]
    host = analyze_host(sources, host="n1")
    assert host["verdict"] != "healthy" and host["severity"] in ("warning", "critical")


def test_silent_nonzero_nvidia_smi_is_a_warning_at_least(tmp_path, monkeypatch):
    sources = _smi(tmp_path, monkeypatch, "exit 255\n")
    err = sources["nvidia-smi-q.xml"]
    assert err["rc"] == 255 and err["text"] == ""
    host = analyze_host(sources, host="n1")
    gpu = [f for f in host["findings"] if f["source"].startswith("nvidia-smi-q.xml")]
    assert gpu and min(f["severity"] for f in gpu) in ("warning", "critical")
    assert host["verdict"] != "healthy"


def test_nonzero_nvidia_smi_with_a_report_is_parsed(tmp_path, monkeypatch):
    report = os.path.join(FIXTURES, "nvsmi", "xml-synthetic-h100x8", "healthy.xml")
    sources = _smi(tmp_path, monkeypatch, "%s '%s'\necho 'Unable to determine the device handle' >&2\nexit 15\n"
                   % (shutil.which("cat"), report))
    assert isinstance(sources["nvidia-smi-q.xml"], str) and "<nvidia_smi_log" in sources["nvidia-smi-q.xml"]
    host = analyze_host(sources, host="n1", expected_gpus=8)
    assert len(host["facts"]["gpu"]["gpus"]) == 8


# ---- a read that is cut says so

def test_live_reads_cut_at_the_cap_add_a_note(tmp_path, monkeypatch):
    monkeypatch.setattr(probes, "_MAX_OUTPUT", 1024)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no dmesg, no journalctl: the file
    monkeypatch.setattr(probes, "_SBIN_DIRS", ())
    (tmp_path / "kern.log").write_text("x" * 4096 + "\n" + XID79)
    sources, _ = probes.collect(probes=["kernel_log"], timeout=5, kern_log_path=str(tmp_path / "kern.log"))
    assert sources["kern.log"].endswith(XID79)  # the tail: where the incident is
    (note,) = sources["_notes"]
    assert note["kind"] == "capture_truncated" and "last" in note["message"]
    _tool(tmp_path, "dmesg", "i=0; while [ $i -lt 200 ]; do echo '[ 1.0] a kernel line'; i=$((i+1)); done\n")
    monkeypatch.setenv("PATH", str(tmp_path))
    sources, _ = probes.collect(probes=["kernel_log"], timeout=5, kern_log_path=str(tmp_path / "kern.log"))
    assert len(sources["kern.log"]) == 1024 and sources["kern.log"].startswith("[ 1.0]")
    (note,) = sources["_notes"]
    assert note["kind"] == "capture_truncated" and "dmesg" in note["message"]
