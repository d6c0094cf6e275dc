"""The remediation plan at fleet scale, through the real plan step (issue 12 "Scale").

    .venv/bin/python tests/benchmarks/bench_plan.py [--sizes 1000] [--repeat 3] [--faulty 0.01]

The same fleet as bench_aggregate.py (N hosts in racks of 32, each host's real gpu_health facts
and registered result as a real run leaves them, ~1% sick), then the roles remediate.yml runs
before the ladder: diagnosis_report (the fresh diagnosis) and remediation_plan (the
gpu_runbook_plan step once on the controller, by its action plugin; plan only, no Slurm:
remediation_plan_read_slurm=false; plan.json written). The racks are gpu-rackN groups, so the
per-domain cap sees real failure domains.

Timed: the plan task (start -> result, Ansible's templating of its arguments included) and its
CPU (ansible-playbook and its workers from the task's start to the next task's start); also printed per run: the per-host task that
hands each host its plan (one lookup in the step's by_host). Goal: < 5 s at 1,000 hosts with 1%
sick. Every run checks plan.json: N hosts, every sick host decided (act, blocked or review),
every healthy one skipped.
"""

import argparse
import json
import os

import bench_aggregate
from bench_aggregate import HEALTHY_TEMPLATE, LOAD_PLAY, add_arguments, print_commands, run_sizes

PLAN_TASK = "remediation_plan : Plan the remediation from the fresh diagnosis"
HAND_TASK = "remediation_plan : Hand the ladder this host's plan"

PLAN_PLAY = """
- name: Diagnose and plan as remediate.yml does (plan only)
  hosts: gpu_nodes
  gather_facts: false
  roles:
    - role: job_context
    - role: diagnosis_report
    - role: remediation_plan
"""


def check_plan(out, hosts):
    """plan.json: every host planned; the sick ones decided, the healthy ones skipped."""
    with open(os.path.join(out, "plan.json")) as fh:
        plan = json.load(fh)
    decided = {h["host"]: h["decision"] for h in plan["hosts"]}
    sick = {h for h, tpl in hosts if tpl != HEALTHY_TEMPLATE}
    problems = []
    if len(decided) != len(hosts):
        problems.append("%d hosts in plan.json, %d in the run" % (len(decided), len(hosts)))
    if any(decided.get(h) not in ("act", "blocked", "review") for h in sick):
        problems.append("a sick host was not decided: %s" % sorted((h, decided.get(h)) for h in sick))
    if any(d != "skip" for h, d in decided.items() if h not in sick):
        problems.append("a healthy host was not skipped")
    if plan["errors"]:
        problems.append("plan errors: %s" % plan["errors"])
    if problems:
        raise SystemExit("wrong plan: " + "; ".join(problems))
    print("  plan: %s" % {k: plan["summary"][k] for k in ("act", "blocked", "review", "skip", "drains")})
    return len(sick)


def task_cpu(clock, name):
    """CPU seconds (ansible-playbook and its reaped workers and modules) from the start of task
    ``name`` to the start of the task after it: that task's own cost, robust to the load."""
    order = sorted(clock, key=lambda n: clock[n][0])
    later = [n for n in order if clock[n][0] > clock[name][0]]
    return clock[name][2] - (clock[later[0]][2] if later else 0.0)


def _timed_run_with_task_cpu(*args, **kwargs):
    clock, whole, argv = _timed_run(*args, **kwargs)
    print("  CPU-s: plan task %.2f, hand task %.2f" % (task_cpu(clock, PLAN_TASK), task_cpu(clock, HAND_TASK)),
          flush=True)
    return clock, whole, argv


_timed_run = bench_aggregate.timed_run
bench_aggregate.timed_run = _timed_run_with_task_cpu  # run_sizes calls it by its module-level name


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_arguments(ap, "1000")
    args = ap.parse_args()
    rows, argv = run_sizes(args, [LOAD_PLAY, PLAN_PLAY], PLAN_TASK, check_plan,
                           extra=["-e", "remediation_plan_read_slurm=false", "-e", "plan_dir={{ out }}"],
                           also=[HAND_TASK])
    print_commands(rows, "gpu_runbook_plan through the remediation_plan role (medians; plan.json written)", argv)


if __name__ == "__main__":
    main()
