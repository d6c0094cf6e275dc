"""Faults of the cluster itself while gpu-runbook runs, on the emulated cluster: real
ansible-playbook over real SSH to 4 namespaced hosts, the real slurmctld and slurmd, real
processes killed or paused by their pid, a real tmpfs filled or made read-only.

Each case ends in a clear message, the other hosts proceed where the playbook lets them, and
nothing disruptive (a GPU reset, an openibd restart) runs on a host whose pre-checks could not
be confirmed. tests/scenarios/cluster-faults.yml says which host has which fault.

The mid-ladder faults use a real job as the clock: n01 runs `sleep`, so its drain waits
(DRAINING) until the test has broken something, then the test ends the job."""

import contextlib
import errno
import json
import os
import re
import signal
import socket
import subprocess
import time

import pytest

from module_utils.gpu_runbook.slurm import parse_scontrol_show_node
from tests.cluster.conftest import own_testbed
from tests.testbed.core import REPO_DIR

N = {i: "gpu-r6-n%02d" % i for i in range(1, 5)}
UNKNOWN_TO_SLURM = "gpu-r6-n99"   # n03's Slurm name in the inventory: scontrol answers an error
INCIDENT = "INC-FAULTS"
WIDE = ["-e", "max_drain=8", "-e", "max_drain_percent=100", "-e", "max_per_domain=8"]
DISRUPTIVE = ("-r", "--gpu-reset")


def node(tb, name):
    return parse_scontrol_show_node(tb.slurm("scontrol", "show", "node", "-o", name).stdout)


def drained(tb, name):
    return "DRAIN" in (node(tb, name).get("state") or "")


def disruptive_calls(tb, name):
    """The fakes' calls that change hardware: GPU resets and openibd restarts."""
    out = []
    for c in tb.commands(name):
        argv = c.get("argv") or []
        tool = os.path.basename(argv[0]) if argv else ""
        if tool == "nvidia-smi" and any(a in DISRUPTIVE for a in argv[1:]):
            out.append(argv)
        elif tool == "systemctl" and len(argv) > 2 and argv[1] in ("restart", "stop", "start"):
            out.append(argv)
    return out


def ssh_up(tb, name):
    try:
        socket.create_connection((tb.addrs[name], 22), timeout=0.5).close()
        return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def bed(tmp_path_factory):
    with own_testbed("cluster-faults", 4) as tb:
        extra = tmp_path_factory.mktemp("faults") / "slurm-names.ini"
        extra.write_text("[%s]\n%s slurm_node_name=%s\n" % (tb.rack, N[3], UNKNOWN_TO_SLURM))
        yield {"tb": tb, "extra_inventory": str(extra)}


@pytest.fixture
def fresh(bed, tmp_path):
    """The scenario's faults back on the hardware, every daemon running, no node drained, no job."""
    tb = bed["tb"]
    _heal(tb)
    tb.reset_state()
    yield tb, str(tmp_path)
    _heal(tb)


def _heal(tb):
    pid_file = os.path.join(tb.sdir, "slurmctld.pid")
    try:
        tb.slurmctld_signal(signal.SIGCONT)
    except Exception:  # noqa: BLE001 - not running: start it (its state files keep the drains)
        if os.path.exists(pid_file):
            os.unlink(pid_file)
        tb.start_slurmctld()
    for h in tb.hosts:
        if not ssh_up(tb, h):
            tb.start_sshd(h)
    tb.slurm("scancel", "--full", "-w", ",".join(tb.hosts), check=False)
    tb.wait_nodes(lambda st: not st.startswith(("alloc", "mix", "comp")), timeout=60)
    for h in tb.hosts:
        if drained(tb, h):
            tb.slurm("scontrol", "update", "NodeName=%s" % h, "State=RESUME")


def remediate_argv(bed, work, tag, *extra):
    tb = bed["tb"]
    return [tb.ansible_bin("ansible-playbook"), "-i", tb.inventory_path, "-i", bed["extra_inventory"],
            "playbooks/remediate.yml", "-l", tb.rack,
            "-e", "gpu_health_expected_gpus=8", "-e", "gpu_health_expected_ib_rate=400",
            "-e", "gpu_health_probe_timeout=5",
            "-e", "gpu_runbook_state_dir=%s/state" % work, "-e", "gpu_runbook_drain_dir=%s/drains" % work,
            "-e", "gpu_runbook_rma_dir=%s/rma" % work, "-e", "gpu_runbook_job_env_dir=%s/job-env" % work,
            "-e", "plan_dir=%s/%s" % (work, tag), "-e", "incident_id=%s" % INCIDENT,
            "-e", "rung_ib_restart_sysfs_root=/opt/fakehw/sys", "-e", "rung_ib_restart_proc_root=/opt/fakehw/proc",
            "-e", "rung_ib_restart_soak=3", "-e", "rung_ib_restart_wait=20", "-e", "rung_ib_restart_expected_rate=400",
            "-e", "rung_drain_wait=60", "-e", "rung_drain_timeout=10"] + WIDE + list(extra)


class Run(object):
    """One ansible-playbook started in the background; its output goes to a file (no pipe to fill)."""

    def __init__(self, bed, work, tag, *extra):
        tb = bed["tb"]
        self.log = os.path.join(work, tag + ".log")
        self.plan_dir = os.path.join(work, tag)
        with open(self.log, "w") as fh:
            self.proc = subprocess.Popen(remediate_argv(bed, work, tag, *extra), stdout=fh,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         env=tb.ansible_env(), cwd=REPO_DIR)

    def wait(self, timeout=600):
        self.rc = self.proc.wait(timeout=timeout)
        self.text = open(self.log).read()
        return self

    def running(self):
        return self.proc.poll() is None

    def ran(self, task):
        return re.search(r"^TASK \[[^\]]*%s" % re.escape(task), self.text, re.M) is not None

    def plan(self):
        p = os.path.join(self.plan_dir, "plan.json")
        return json.load(open(p)) if os.path.exists(p) else None


def wait_until(pred, what, run=None, timeout=240):
    deadline = time.monotonic() + timeout
    while not pred():
        if run is not None and not run.running():
            raise AssertionError("the run ended before %s:\n%s" % (what, run.wait().text[-5000:]))
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for %s" % what)
        time.sleep(0.1)


def hold_n01_with_a_job(tb):
    """A running job on n01: its drain stays DRAINING until the test ends the job."""
    job = tb.sbatch([N[1]], "sleep 600", name="holds-n01")
    tb.wait_nodes(lambda st: st.startswith(("alloc", "mix")), nodes=[N[1]], timeout=30)
    return job


def draining(tb, name):
    return lambda: drained(tb, name)


@contextlib.contextmanager
def small_disk(path, size="64k"):
    """A real tmpfs of ``size`` at ``path`` (unmounted afterwards, lazily if busy)."""
    os.makedirs(path, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s,mode=0700" % size, "gpurb-faults", path], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", path], check=False)


def fill(path):
    """Write until the file system says ENOSPC (unbuffered: the error comes from our write)."""
    fd = os.open(os.path.join(path, "filler"), os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC, exc
    finally:
        os.close(fd)


# ---------------------------------------------------------------- two runs at once; scontrol erring


def test_two_runs_at_once_one_acts_the_other_stops_before_reading_slurm(bed, fresh):
    """Also: scontrol answers an error for one node (n03's Slurm name is unknown to Slurm)."""
    tb, work = fresh
    a = Run(bed, work, "a", "-e", "confirm=yes")
    b = Run(bed, work, "b", "-e", "confirm=yes")
    a.wait(), b.wait()
    won, lost = (a, b) if a.rc == 0 else (b, a)
    assert won.rc == 0, won.text[-5000:]
    assert lost.rc != 0 and "another remediation is running" in lost.text, lost.text[-5000:]
    # the lock says whose it is; the loser stopped before Slurm was read or anything planned
    assert "pid %d" % won.proc.pid in lost.text, lost.text[-3000:]
    assert not lost.ran("Read the node's state in Slurm") and lost.plan() is None
    # the winner acted on its two faulty nodes (reset / restart, verified, resumed); the loser touched nothing
    resets = disruptive_calls(tb, N[1])
    assert len(resets) == 1 and resets[0][-1].lower().endswith(tb.state(N[1])["gpus"][4]["pci"].lower()[-7:])
    assert [c[1:] for c in disruptive_calls(tb, N[2])] == [["restart", "openibd"]]
    assert not drained(tb, N[1]) and not drained(tb, N[2])
    # scontrol answered an error for n03's Slurm name: Slurm's words in the plan, only that node blocked
    n03 = next(h for h in won.plan()["hosts"] if h["host"] == N[3])
    assert n03["decision"] != "act" and UNKNOWN_TO_SLURM in n03["reason"], n03
    assert disruptive_calls(tb, N[3]) == [] and not drained(tb, N[3])
    audit = [json.loads(x) for x in open(os.path.join(work, "state", "audit.jsonl"))]
    acting = {a["who"] for a in audit if a["rung"] in ("drain", "gpu_reset", "ib_restart")}
    assert len(acting) == 1 and "pid %d" % won.proc.pid in acting.pop()


# ---------------------------------------------------------------- sshd dies


def test_sshd_dying_during_diagnose_makes_that_host_unknown_and_the_others_are_diagnosed(bed, fresh, tmp_path):
    tb, work = fresh
    tb.update_state(N[4], lambda st: st.update(hang=True))   # n04's nvidia-smi hangs: a window to kill sshd in
    report = tmp_path / "report"
    argv = [tb.ansible_bin("ansible-playbook"), "-i", tb.inventory_path, "playbooks/diagnose.yml", "-l", tb.rack,
            "-e", "diagnosis_report_dir=%s" % report, "-e", "gpu_health_expected_gpus=8",
            "-e", "gpu_health_expected_ib_rate=400", "-e", "gpu_health_probe_timeout=20"]
    log = os.path.join(work, "diagnose.log")
    with open(log, "w") as fh:
        proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=tb.ansible_env(), cwd=REPO_DIR)
    try:
        wait_until(lambda: any(os.path.basename((c.get("argv") or [""])[0]) == "nvidia-smi"
                               for c in tb.commands(N[4])) or proc.poll() is not None, "n04's nvidia-smi")
        assert tb.kill_sshd(N[4])
        rc = proc.wait(timeout=300)
    finally:
        tb.clear_hang(N[4])
    text = open(log).read()
    # the gather ignores an unreachable host so the report can name it: the run finishes
    assert rc == 0 and "Traceback" not in text, text[-4000:]
    rep = json.load(open(report / "report.json"))
    by = {h["host"]: h for h in rep["hosts"]}
    # the others: diagnosed from what they said (n01/n03 GPU faults, n02 its link)
    assert by[N[1]]["verdict"] == "gpu_hardware" and by[N[3]]["verdict"] == "gpu_hardware"
    assert by[N[2]]["verdict"] == "ib_network"
    # n04 is not called healthy: unknown, saying it did not answer, and nothing read from it
    assert by[N[4]]["verdict"] == "unknown" and by[N[4]]["findings"][0]["kind"] == "host_unreachable", by[N[4]]
    seen = rep["inputs"]["hosts"][N[4]]
    assert seen["reached"] is False and seen["read"] == [] and "ssh" in seen["why"], seen
    assert re.search(r"^\s*%s\s+unknown .*\n\s+host did not answer" % N[4], text, re.M), text[-3000:]
    assert "0 healthy" in text


def test_sshd_dying_mid_ladder_leaves_the_node_drained_and_nothing_disruptive_runs(bed, fresh):
    tb, work = fresh
    job = hold_n01_with_a_job(tb)
    run = Run(bed, work, "sshd", "-e", "confirm=yes", "-l", N[1])
    wait_until(draining(tb, N[1]), "n01 draining", run)
    assert tb.kill_sshd(N[1])
    tb.slurm("scancel", str(job))
    run.wait()
    assert "Traceback" not in run.text
    assert run.rc != 0 and re.search(r"%s\s*:.*unreachable=1" % N[1], run.text), run.text[-4000:]
    assert disruptive_calls(tb, N[1]) == []
    after = node(tb, N[1])
    assert "DRAIN" in after["state"] and after["reason"].startswith("gpu-runbook: %s: " % INCIDENT), after
    # a stopped ladder keeps its lock: a person looks before the next run
    assert os.path.exists(os.path.join(work, "state", "lock.json"))


# ---------------------------------------------------------------- slurmctld down or slow


def test_slurmctld_down_before_the_plan_blocks_every_drain(bed, fresh):
    tb, work = fresh
    tb.stop_slurmctld()
    run = Run(bed, work, "ctld-down", "-e", "confirm=yes").wait()
    assert "Traceback" not in run.text
    plan = run.plan()
    for h in plan["hosts"]:
        assert h["decision"] != "act", h
    for h in (N[1], N[2], N[3]):
        entry = next(x for x in plan["hosts"] if x["host"] == h)
        assert "slurm" in entry["reason"].lower(), entry
    assert all(disruptive_calls(tb, h) == [] for h in tb.hosts)
    tb.start_slurmctld()
    assert not any(drained(tb, h) for h in tb.hosts)


def test_slurmctld_dying_mid_ladder_stops_it_before_the_reset(bed, fresh):
    tb, work = fresh
    hold_n01_with_a_job(tb)
    run = Run(bed, work, "ctld-dies", "-e", "confirm=yes", "-l", N[1])
    wait_until(draining(tb, N[1]), "n01 draining", run)
    tb.stop_slurmctld()
    run.wait()
    assert "Traceback" not in run.text
    assert run.rc != 0 and "slurmctld" in run.text, run.text[-4000:]
    assert "ladder stopped on %s" % N[1] in run.text
    assert disruptive_calls(tb, N[1]) == []
    tb.start_slurmctld()                  # its saved state still has our drain
    assert drained(tb, N[1])


def test_slurmctld_slow_mid_ladder_the_ladder_waits_and_finishes(bed, fresh):
    tb, work = fresh
    job = hold_n01_with_a_job(tb)
    run = Run(bed, work, "ctld-slow", "-e", "confirm=yes", "-l", N[1])
    wait_until(draining(tb, N[1]), "n01 draining", run)
    tb.slurmctld_signal(signal.SIGSTOP)
    try:
        time.sleep(4)                     # slower than the poll, faster than the 10 s command timeout
    finally:
        tb.slurmctld_signal(signal.SIGCONT)
    tb.slurm("scancel", str(job))
    run.wait()
    assert run.rc == 0, run.text[-5000:]
    assert len(disruptive_calls(tb, N[1])) == 1 and not drained(tb, N[1])


# ---------------------------------------------------------------- the state disk


def test_read_only_state_disk_stops_the_run_before_any_change(bed, fresh):
    tb, work = fresh
    with small_disk(os.path.join(work, "state")) as d:
        subprocess.run(["mount", "-o", "remount,ro", d], check=True)
        run = Run(bed, work, "ro", "-e", "confirm=yes").wait()
    assert "Traceback" not in run.text
    assert run.rc != 0 and "read-only file system" in run.text and "must not run disruptive steps" in run.text, \
        run.text[-4000:]
    assert not run.ran("Read the node's state in Slurm")
    assert all(disruptive_calls(tb, h) == [] for h in tb.hosts)
    assert not any(drained(tb, h) for h in tb.hosts)


def test_state_disk_filling_mid_ladder_stops_it_before_the_reset(bed, fresh):
    tb, work = fresh
    job = hold_n01_with_a_job(tb)
    with small_disk(os.path.join(work, "state")) as d:
        run = Run(bed, work, "full", "-e", "confirm=yes", "-l", N[1])
        wait_until(draining(tb, N[1]), "n01 draining", run)
        fill(d)
        tb.slurm("scancel", str(job))
        run.wait()
    assert "Traceback" not in run.text
    assert run.rc != 0 and "disk full" in run.text, run.text[-4000:]
    assert disruptive_calls(tb, N[1]) == []
    after = node(tb, N[1])
    assert "DRAIN" in after["state"] and after["reason"].startswith("gpu-runbook: %s: " % INCIDENT), after
