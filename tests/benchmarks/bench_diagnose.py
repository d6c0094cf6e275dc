"""diagnose.yml at 8, 32 and 64 emulated hosts beside the floor and `ansible -m ping`, in the same
run, wall time and CPU per host; optionally the same diagnose with Mitogen's strategy plugin.
Needs root (the testbed). A script, not a test:

    .venv/bin/python tests/benchmarks/bench_diagnose.py [--sizes 8,32,64] [--repeat 3]
        [--mitogen DIR]   # DIR holds ansible_mitogen/ (e.g. an unpacked mitogen wheel)

The four measurements of one size take turns (floor, ping, diagnose[, mitogen]) `--repeat` times,
so a change in the machine's load hits them alike; the figure is the median of the repeats.

- floor: one raw `ssh` per host, all at once, running the probes the gather runs by default
  (nvidia-smi -q -x, the compute-apps query, the kernel log, the IB sysfs files).
- ping: `ansible all -m ping`.
- diagnose: `ansible-playbook playbooks/diagnose.yml -l RACK` (job lookup, gather, report).
- mitogen: the same diagnose with ANSIBLE_STRATEGY=mitogen_linear.

Forks = the host count for ping and diagnose (every host at once, as the floor does).

CPU is what the measured thing made run, counted by process tree, so other work on the machine
does not count: the controller side is this script's children (ansible and its forks, ssh
clients) plus the ssh ControlPersist masters Ansible leaves behind (detached, so counted from
/proc); the host side is every testbed sshd daemon with everything it waited for (the session's
shell, Python, the probes: /proc/PID/stat utime+stime+cutime+cstime). The whole machine's
/proc/stat delta is printed beside it as a cross-check (it includes everyone else's work).

Prints one JSON line per size and measurement.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, REPO)

from tests.testbed import Testbed  # noqa: E402
from tests.testbed.core import preflight  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")

# The probes the gather module runs by default, as one shell line per host.
FLOOR_PROBES = ("nvidia-smi -q -x >/dev/null; "
                "nvidia-smi --query-compute-apps=pid,process_name,gpu_bus_id,gpu_uuid,used_memory "
                "--format=csv,noheader >/dev/null; "
                "dmesg -T >/dev/null; "
                "grep -H . /opt/fakehw/sys/class/infiniband/*/ports/*/state "
                "/opt/fakehw/sys/class/infiniband/*/ports/*/phys_state "
                "/opt/fakehw/sys/class/infiniband/*/ports/*/rate /opt/fakehw/sys/class/infiniband/*/ports/*/link_layer "
                "/opt/fakehw/sys/class/infiniband/*/ports/*/counters/* >/dev/null")


def _stat(pid):
    """(comm, ppid, own CPU s, waited-for children's CPU s) of a process, or None."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            raw = f.read()
    except OSError:
        return None
    comm = raw[raw.index("(") + 1:raw.rindex(")")]
    rest = raw[raw.rindex(")") + 2:].split()
    # rest[0] is field 3 (state): utime 14, stime 15, cutime 16, cstime 17
    return comm, int(rest[1]), (int(rest[11]) + int(rest[12])) / TICK, (int(rest[13]) + int(rest[14])) / TICK


def _cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def _procs():
    """pid -> (comm, ppid, own CPU s, waited-for children's CPU s) of every process now."""
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = _stat(int(name))
            if st:
                out[int(name)] = st
    return out


def host_side_cpu(tb, procs):
    """CPU seconds of the testbed's sshd daemons and their whole trees: a session's sshd that
    lives on (Ansible's ControlPersist keeps it) has not been waited for by the daemon yet, so
    every live descendant counts its own and its waited-for children's time; when it ends, the
    same time moves into its parent's cutime, so deltas stay right."""
    daemons = set()
    for n in tb.hosts:
        try:
            with open(os.path.join(tb.host_root(n), "sshd.pid")) as f:
                daemons.add(int(f.read().split()[0]))
        except (OSError, ValueError, IndexError):
            continue
    kids = {}
    for pid, st in procs.items():
        kids.setdefault(st[1], []).append(pid)
    total, todo = 0.0, [p for p in daemons if p in procs]
    while todo:
        pid = todo.pop()
        total += procs[pid][2] + procs[pid][3]
        todo.extend(kids.get(pid, ()))
    return total


def ssh_master_cpu(tb, procs):
    """pid -> CPU s of the ssh ControlPersist masters under the testbed's control path dir."""
    return {pid: st[2] + st[3] for pid, st in procs.items()
            if st[0] == "ssh" and tb.control_path_dir in _cmdline(pid)}


def machine_cpu():
    with open("/proc/stat") as f:
        parts = f.readline().split()[1:]
    vals = [int(x) for x in parts]
    # user nice system idle iowait irq softirq steal: busy = all but idle and iowait
    return (sum(vals[:8]) - vals[3] - vals[4]) / TICK


def children_cpu():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


class RunFailed(Exception):
    pass


class Meter:
    """Wall and CPU of one measurement, by process tree (see the module docstring)."""

    def __init__(self, tb):
        self.tb = tb

    def __enter__(self):
        self.t0 = time.monotonic()
        self.c0 = children_cpu()
        procs = _procs()
        self.h0 = host_side_cpu(self.tb, procs)
        self.m0 = ssh_master_cpu(self.tb, procs)
        self.w0 = machine_cpu()
        self.l0 = os.getloadavg()[0]
        return self

    def __exit__(self, *exc):
        self.wall = time.monotonic() - self.t0
        self.controller = children_cpu() - self.c0
        # masters that lived through the measurement count their delta; new ones all they used
        procs = _procs()
        m1 = ssh_master_cpu(self.tb, procs)
        self.controller += sum(v - self.m0.get(p, 0.0) for p, v in m1.items())
        self.host = host_side_cpu(self.tb, procs) - self.h0
        self.machine = machine_cpu() - self.w0
        self.load = os.getloadavg()[0]
        return False


def floor(tb):
    with Meter(tb) as m:
        procs = [subprocess.Popen(tb.ssh_cmd(h) + [FLOOR_PROBES], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL) for h in tb.hosts]
        rcs = [p.wait() for p in procs]
    # 255 is ssh's own failure; a probe's exit status (grep 2 on an unreadable counter) is the host's answer
    if 255 in rcs:
        raise SystemExit("floor ssh failed: %s" % rcs)
    return m


def ping(tb, env):
    with Meter(tb) as m:
        proc = tb.run_ansible("all", "-m", "ping", env=env)
    ok = proc.stdout.count("SUCCESS")
    if proc.returncode != 0 or ok != len(tb.hosts):
        raise RunFailed("ansible ping failed (%d/%d ok):\n%s" % (ok, len(tb.hosts), proc.stdout[-3000:]))
    return m


def diagnose(tb, env):
    with tempfile.TemporaryDirectory() as d:
        with Meter(tb) as m:
            proc = tb.run_ansible("playbooks/diagnose.yml", "-l", tb.rack, "-e", "diagnosis_report_dir=%s" % d,
                                  tool="ansible-playbook", env=env)
        if proc.returncode != 0:
            kept = os.path.join(tempfile.gettempdir(), "bench_diagnose-failed-%d.log" % len(tb.hosts))
            with open(kept, "w") as fh:
                fh.write(proc.stdout + proc.stderr)
            raise RunFailed("diagnose failed (output kept in %s):\n%s" % (kept, _first_error(proc.stdout + proc.stderr)))
        with open(os.path.join(d, "report.json")) as fh:
            report = json.load(fh)
        if len(report["hosts"]) != len(tb.hosts):
            raise RunFailed("diagnose reported %d of %d hosts" % (len(report["hosts"]), len(tb.hosts)))
    return m


def _first_error(out):
    """The first line naming an error, and the failed tasks' count (Ansible's output is long)."""
    lines = out.splitlines()
    named = [x.strip() for x in lines if "Error" in x or "fatal:" in x or "FAILED" in x]
    return "%s (%d lines name an error)" % (named[0][:400] if named else lines[-1:], len(named))


def mitogen_env(mitogen_dir, env):
    strategy = os.path.join(mitogen_dir, "ansible_mitogen", "plugins", "strategy")
    if not os.path.isdir(strategy):
        raise SystemExit("--mitogen %s: no ansible_mitogen/plugins/strategy there" % mitogen_dir)
    out = dict(env)
    out.update({"ANSIBLE_STRATEGY_PLUGINS": strategy, "ANSIBLE_STRATEGY": "mitogen_linear"})
    return out


def summarize(name, n, runs):
    med = statistics.median
    row = {"hosts": n, "what": name,
           "wall_s": round(med([r.wall for r in runs]), 2),
           "cpu_per_host_s": round(med([(r.controller + r.host) / n for r in runs]), 3),
           "controller_cpu_per_host_s": round(med([r.controller / n for r in runs]), 3),
           "host_cpu_per_host_s": round(med([r.host / n for r in runs]), 3),
           "machine_cpu_per_host_s": round(med([r.machine / n for r in runs]), 3),
           "wall_runs": [round(r.wall, 2) for r in runs],
           "load": [round(r.load, 1) for r in runs]}
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="8,32,64")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--mitogen", metavar="DIR", help="directory holding ansible_mitogen/ (optional)")
    ap.add_argument("--scenario", default="rack3-epoch35")
    args = ap.parse_args()
    reason = preflight()
    if reason:
        print("skip: %s" % reason)
        return 0
    for n in [int(x) for x in args.sizes.split(",")]:
        tb = Testbed(scenario=args.scenario, hosts=n, slurm=False)
        tb.down()
        tb.up()
        env = {"ANSIBLE_FORKS": str(n)}
        kinds = [("floor", lambda: floor(tb)), ("ping", lambda: ping(tb, env)),
                 ("diagnose", lambda: diagnose(tb, env))]
        if args.mitogen:
            menv = mitogen_env(os.path.abspath(args.mitogen), env)
            kinds += [("ping+mitogen", lambda: ping(tb, menv)), ("diagnose+mitogen", lambda: diagnose(tb, menv))]
        runs = {k: [] for k, _ in kinds}
        failed = {}
        try:
            for rnd in range(args.repeat + 1):   # round 0 warms up: page cache, sshd forks, ssh masters
                for k, fn in kinds:
                    if k in failed:
                        continue
                    try:
                        m = fn()
                    except RunFailed as exc:
                        if not k.endswith("+mitogen"):
                            raise SystemExit("%s at %d hosts: %s" % (k, n, exc))
                        failed[k] = str(exc)   # the optional accelerator: said, not fatal
                        continue
                    if rnd > 0:
                        runs[k].append(m)
        finally:
            tb.down()
        for k, why in failed.items():
            print(json.dumps({"hosts": n, "what": k, "failed": why}), flush=True)
        rows = {k: summarize(k, n, runs[k]) for k, _ in kinds if k not in failed}
        for k in rows:
            r = rows[k]
            r["wall_vs_floor"] = round(r["wall_s"] / rows["floor"]["wall_s"], 2)
            print(json.dumps(r), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
