"""The real gpu_health_facts module through ansible-playbook on the local connection, for
the evidence only a live gather can lose: tools that hang past the deadline, a sysfs read
that blocks, an nvidia-smi that fails. Stand-in tools on PATH, as in test_diagnose_local."""

import os
import time

from tests.conftest import hang_script, still_running
from tests.integration.test_diagnose_local import HEALTHY_SMI, _report, _run_live, _tool, live_host  # noqa: F401

XID79 = ("Dec  2 07:09:51 node-live kernel: [40000.1] NVRM: Xid (PCI:0000:53:00): 79, pid=1, name=python, "
         "GPU has fallen off the bus.\n")


def _healthy_smi(h):
    _tool(h["bin"], "nvidia-smi", 'case "$*" in *query-compute-apps*) exit 0;; esac\ncat %s\n' % HEALTHY_SMI)


def _hang(h, name):
    """A stand-in that never answers and starts a child; both pids are recorded."""
    _tool(h["bin"], name, hang_script(h["pids"]))


def _left_running(h, within=3.0):
    pids = [int(x) for x in h["pids"].read_text().split()] if h["pids"].exists() else []
    return pids, still_running(pids, within)


def _host(h, *extra):
    t0 = time.monotonic()
    proc = _run_live(h, *extra)
    elapsed = time.monotonic() - t0
    return _report(h["tmp"], proc)["hosts"][0], elapsed


def test_hanging_dmesg_and_journalctl_do_not_hide_the_kern_log_xid(live_host):
    h = dict(live_host, pids=live_host["tmp"] / "pids")
    _healthy_smi(h)
    _hang(h, "dmesg")
    _hang(h, "journalctl")
    kern = h["tmp"] / "kern.log"
    kern.write_text(XID79)
    # 12 s: long enough that two sequential 12 s fallbacks (24 s) outlive a 12 + 10 s join,
    # which is how the file's Xid used to vanish
    host, elapsed = _host(h, "-e", "gpu_health_probe_timeout=12", "-e", "gpu_health_kern_log_path=%s" % kern)
    assert host["verdict"] == "gpu_hardware", host["findings"]
    assert any(f.get("xid") == 79 for f in host["findings"])
    assert elapsed < 12 + 40  # one deadline (plus the play's own overhead)
    started, running = _left_running(h)
    assert len(started) == 4 and running == []  # no stand-in, nor its child, outlives the module


def test_blocked_ib_sysfs_read_is_a_critical_hang_naming_the_file(live_host):
    h = dict(live_host, pids=live_host["tmp"] / "pids")
    _healthy_smi(h)
    _tool(h["bin"], "dmesg", "echo '[Wed Dec  2 07:00:00 2026] usb 1-1: new device'\n")
    counters = sorted(h["sysfs"].glob("class/infiniband/*/ports/*/counters"))
    assert counters, "the fixture's sysfs tree has no counters"
    fifo = counters[0] / "port_rcv_data"
    if fifo.exists():
        fifo.unlink()
    os.mkfifo(str(fifo))  # stands in for a read stuck in D state in a wedged mlx5 driver
    try:
        host, elapsed = _host(h, "-e", "gpu_health_probe_timeout=3")
    finally:
        try:  # release our own blocked readers, if any survived (they should not have)
            os.close(os.open(str(fifo), os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
    hang = [f for f in host["findings"] if f["kind"] == "ib_probe_hang"]
    assert hang and hang[0]["severity"] == "critical" and str(fifo) in hang[0]["message"]
    assert host["verdict"] == "ib_network" and host["severity"] == "critical"
    assert elapsed < 60


def test_nvml_version_mismatch_is_not_healthy_and_names_the_cause(live_host):
    h = live_host
    _tool(h["bin"], "nvidia-smi", "echo 'Failed to initialize NVML: Driver/library version mismatch' >&2\n"
                                  "echo 'NVML library version: 550.54' >&2\nexit 9\n")
    _tool(h["bin"], "dmesg", "echo '[Wed Dec  2 07:00:00 2026] usb 1-1: new device'\n")
    host, _ = _host(h)
    assert host["verdict"] != "healthy" and host["severity"] in ("warning", "critical")
    cause = [f for f in host["findings"] if f["source"].startswith("nvidia-smi-q")
             and "mismatch" in f["message"].lower()]
    assert cause and cause[0]["severity"] in ("warning", "critical"), host["findings"]
    assert cause[0]["category"] == "driver"
