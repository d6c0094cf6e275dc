"""Wall time of diagnose.yml at 4, 16 and 32 emulated hosts beside the floor: one raw
parallel ssh per host running the same probes (no Ansible). Needs root (the testbed).

    .venv/bin/python tests/benchmarks/bench_diagnose.py [--sizes 4,16,32] [--repeat 3]

Prints one JSON line per size: diagnose seconds (median), floor seconds (median), ratio.
Goal: diagnose <= 1.5x the floor at 32 hosts.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, REPO)

from tests.testbed import Testbed  # noqa: E402

# The same probes the gather module runs, as one shell line per host.
FLOOR_PROBES = ("nvidia-smi -q -x >/dev/null; "
                "nvidia-smi --query-compute-apps=pid,process_name,gpu_bus_id,gpu_uuid,used_memory --format=csv,noheader >/dev/null; "
                "dmesg -T >/dev/null; "
                "grep -H . /opt/fakehw/sys/class/infiniband/*/ports/*/state /opt/fakehw/sys/class/infiniband/*/ports/*/phys_state "
                "/opt/fakehw/sys/class/infiniband/*/ports/*/rate /opt/fakehw/sys/class/infiniband/*/ports/*/link_layer "
                "/opt/fakehw/sys/class/infiniband/*/ports/*/counters/* >/dev/null")


def floor(tb):
    t0 = time.monotonic()
    procs = [subprocess.Popen(tb.ssh_cmd(h) + [FLOOR_PROBES], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for h in tb.hosts]
    rcs = [p.wait() for p in procs]
    if any(rcs):
        raise SystemExit("floor ssh failed: %s" % rcs)
    return time.monotonic() - t0


def diagnose(tb):
    with tempfile.TemporaryDirectory() as d:
        t0 = time.monotonic()
        proc = tb.run_ansible("playbooks/diagnose.yml", "-l", tb.rack, "-e", "diagnosis_report_dir=%s" % d,
                              tool="ansible-playbook")
        dt = time.monotonic() - t0
        if proc.returncode != 0:
            raise SystemExit("diagnose failed:\n" + proc.stdout[-3000:])
        with open(os.path.join(d, "report.json")) as fh:
            n = len(json.load(fh)["hosts"])
        if n != len(tb.hosts):
            raise SystemExit("diagnose reported %d of %d hosts" % (n, len(tb.hosts)))
    return dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="4,16,32")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    for n in [int(x) for x in args.sizes.split(",")]:
        tb = Testbed(scenario="rack3-epoch35", hosts=n, slurm=False)
        tb.up()
        try:
            floor(tb)  # warm-up: page cache, sshd forks
            d = [diagnose(tb) for _ in range(args.repeat)]
            f = [floor(tb) for _ in range(args.repeat)]
        finally:
            tb.down()
        dm, fm = statistics.median(d), statistics.median(f)
        print(json.dumps({"hosts": n, "diagnose_s": round(dm, 2), "floor_s": round(fm, 2),
                          "ratio": round(dm / fm, 2), "diagnose_runs": [round(x, 2) for x in d],
                          "floor_runs": [round(x, 2) for x in f]}), flush=True)


if __name__ == "__main__":
    main()
