#!/usr/bin/env python3
"""The acting play's wall time for 20 acting nodes on the emulated cluster (a script, not
collected by pytest; root, like the cluster tests).

    sudo .venv/bin/python tests/benchmarks/bench_act_waves.py [--runs waves,serial]

Scenario act-waves: 24 hosts, 20 with a pending row remap (drain, GPU reset, verify, resume
each). Each run starts from the same faults and an empty ledger, runs remediate.yml with
-e confirm=yes and caps that let all 20 act, and reports the wall time of the whole run, the
batches the acting play ran and the nodes resumed. "waves": the plan's waves (no failure
domain known: each node its own, one wave of 20); "serial": -e gpu_runbook_serial=1.
"""
import argparse
import json
import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from tests.testbed import Testbed, preflight  # noqa: E402

CAPS = ["-e", "max_drain=24", "-e", "max_drain_percent=100", "-e", "max_per_domain=24"]


def one_run(tb, work, tag, extra):
    tb.reset_state()
    for h in tb.hosts:
        tb.slurm("scontrol", "update", "NodeName=%s" % h, "State=RESUME", check=False)
    d = os.path.join(work, tag)
    os.makedirs(d)
    args = ["playbooks/remediate.yml", "-l", tb.rack, "-e", "confirm=yes", "-e", "incident_id=BENCH-%s" % tag,
            "-e", "gpu_health_expected_gpus=8", "-e", "gpu_health_probe_timeout=10",
            "-e", "gpu_runbook_state_dir=%s/state" % d, "-e", "gpu_runbook_drain_dir=%s/drains" % d,
            "-e", "gpu_runbook_rma_dir=%s/rma" % d, "-e", "gpu_runbook_job_env_dir=%s/job-env" % d,
            "-e", "plan_dir=%s/plan" % d, "-e", "rung_drain_wait=120"] + CAPS + extra
    t0 = time.monotonic()
    proc = tb.run_ansible(*args, tool="ansible-playbook", timeout=3600)
    wall = time.monotonic() - t0
    text = proc.stdout + proc.stderr
    batches = len(re.findall(r"PLAY \[Climb the ladder on the hosts the plan marks ACT", text))
    result = os.path.join(d, "plan", "result.json")
    finals = [h.get("final") for h in json.load(open(result)).get("hosts", [])] if os.path.exists(result) else []
    return {"run": tag, "rc": proc.returncode, "wall_s": round(wall, 1), "acting_batches": batches,
            "resumed": finals.count("resumed"), "acted_on": len(finals)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", default="waves,serial")
    a = ap.parse_args()
    why = preflight()
    if why:
        sys.exit("cannot run the emulated cluster here: %s" % why)
    tb = Testbed(scenario="act-waves", hosts=24, slurm=True)
    work = tempfile.mkdtemp(prefix="bench-act-")
    rows = []
    try:
        tb.up()
        for tag in a.runs.split(","):
            extra = ["-e", "gpu_runbook_serial=1"] if tag == "serial" else []
            rows.append(one_run(tb, work, tag, extra))
            print(json.dumps(rows[-1]), flush=True)
    finally:
        tb.down()
    print("| run | acting batches | nodes resumed / acted on | wall (s) |")
    print("|---|---|---|---|")
    for r in rows:
        print("| %s | %d | %d / %d | %.1f |" % (r["run"], r["acting_batches"], r["resumed"], r["acted_on"], r["wall_s"]))


if __name__ == "__main__":
    main()
