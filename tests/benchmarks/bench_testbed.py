#!/usr/bin/env python3
"""Benchmark the emulated cluster (a script, not collected by pytest).

    sudo .venv/bin/python tests/benchmarks/bench_testbed.py [--hosts 8,32] [--no-slurm]

Measures bring-up / tear-down for each host count, one `ansible -m ping` across all hosts of
the largest count (forks 32, pipelining), and memory: RSS of everything the testbed started
(sshd, slurmd, slurmctld, munged) and the host's MemAvailable drop.
"""
import argparse
import os
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from tests.testbed import Testbed, leftovers, preflight  # noqa: E402


def rss_kb(pids):
    tot = 0
    for p in pids:
        try:
            with open("/proc/%d/status" % p) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        tot += int(line.split()[1])
        except OSError:
            pass
    return tot


def mem_available_kb():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1])
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", default="8,32")
    ap.add_argument("--no-slurm", action="store_true")
    ap.add_argument("--scenario", default="rack3-epoch35")
    a = ap.parse_args()
    reason = preflight()
    if reason:
        print("skip: %s" % reason)
        return 0
    counts = [int(x) for x in a.hosts.split(",")]
    rows = []
    for n in counts:
        tb = Testbed(scenario=a.scenario, hosts=n, slurm=not a.no_slurm)
        tb.down()
        m0 = mem_available_kb()
        t0 = time.monotonic()
        tb.up()
        t_up = time.monotonic() - t0
        pids = tb.started_pids()
        rss = rss_kb(pids)
        mdrop = m0 - mem_available_kb()
        ping = None
        if n == max(counts):
            t1 = time.monotonic()
            r = tb.run_ansible("all", "-m", "ping", "--forks", "32",
                               env={"ANSIBLE_PIPELINING": "True", "ANSIBLE_FORKS": "32"})
            ping = time.monotonic() - t1
            ok = r.stdout.count("SUCCESS")
            if r.returncode != 0 or ok != n:
                print(r.stdout[-2000:], r.stderr[-2000:])
                raise SystemExit("ansible ping failed (%d/%d ok)" % (ok, n))
            t1 = time.monotonic()
            r = tb.run_ansible("all", "-m", "command", "-a", "nvidia-smi -q -x", "--forks", "32")
            gather = time.monotonic() - t1
        t2 = time.monotonic()
        tb.down()
        t_down = time.monotonic() - t2
        left = leftovers()
        rows.append((n, t_up, t_down, len(pids), rss / 1024.0, mdrop / 1024.0, ping,
                     gather if ping is not None else None, not any(left.values())))
        print("hosts=%d slurm=%s up=%.2fs down=%.2fs pids=%d rss=%.0fMiB memavail_drop=%.0fMiB%s clean=%s"
              % (n, not a.no_slurm, t_up, t_down, len(pids), rss / 1024.0, mdrop / 1024.0,
                 "" if ping is None else " ansible_ping(%d hosts,forks32)=%.2fs nvidia-smi-q-x=%.2fs"
                 % (n, ping, gather), not any(left.values())))
    peak_children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
    print("peak RSS of one child process (ansible controller / tools): %.0f MiB" % peak_children)
    print("peak RSS of this script: %.0f MiB" % (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
