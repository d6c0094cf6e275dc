#!/usr/bin/env python3
"""Regenerate the demo rack's job log from its scenario, so that it tells the same incident as
the host captures: rank -> host:pid, busId -> GPU, the one silent rank, the watchdog times.

    .venv/bin/python tests/tools/make_demo.py           # rewrite job-<id>/<name>-<id>.out
    .venv/bin/python tests/tools/make_demo.py --check   # exit 1 if the committed file differs

Reads inventory-examples/demo-captures/scenario.yml and runs the emulated cluster's job-log
writer (tests/testbed/scenario.py) at the scenario's incident time, then writes what an
on-call engineer gets: one combined Slurm output as srun + torchrun --tee write it (each
rank's line after "[rankN]:"), the progress bar from rank 0 only.
"""
import argparse
import datetime
import os
import re
import sys
import tempfile
import time
from contextlib import contextmanager

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
if REPO not in sys.path:  # run as a script
    sys.path.insert(0, REPO)

from tests.testbed import scenario as scenario_lib  # noqa: E402  (needs REPO on sys.path)

DEMO_CAPTURES = os.path.join(REPO, "inventory-examples", "demo-captures")
SCENARIO = os.path.join(DEMO_CAPTURES, "scenario.yml")
RANK_LABEL = re.compile(r"^\[rank\d+\]:")
PROGRESS_BAR = re.compile(r"^Epoch \d+: ")


def bootstrap_addresses(names):
    return {name: "10.3.0.%d" % (11 + i) for i, name in enumerate(names)}


def incident_epoch(sc):
    return datetime.datetime.fromisoformat(sc["incident_at"]).timestamp()


def label_ranks(combined, per_rank):
    """The writer's time-ordered lines (no rank on most of them) -> "[rankN]:line", rank 0's
    progress bar only. Each rank's own file keeps its order, so a line belongs to a rank whose
    next unread line it is (identical lines of two ranks are interchangeable)."""
    heads = {rank: 0 for rank in per_rank}
    out, tail = [], []
    for line in combined:
        rank = next((r for r, i in heads.items() if i < len(per_rank[r]) and per_rank[r][i] == line), None)
        if rank is None:  # srun / slurmstepd lines after the ranks: not a rank's output
            tail.append(line)
            continue
        heads[rank] += 1
        if rank != 0 and PROGRESS_BAR.match(line):
            continue
        out.append(line if RANK_LABEL.match(line) else "[rank%d]:%s" % (rank, line))
    return out, tail


def launch_lines(job, names, nranks):
    """What srun's -x echo and each node's torchrun agent print before the ranks start."""
    stamp = time.strftime("W%m%d %H:%M:%S", time.gmtime(job["start"]))
    lines = ["+ srun --kill-on-bad-exit=1 torchrun --nnodes %d --nproc-per-node %d --rdzv-backend c10d "
             "--rdzv-endpoint %s:29500 train.py" % (len(names), nranks // len(names), names[0])]
    for index, _name in enumerate(names):
        agent = "%s.%06d %d torch/distributed/run.py:793] " % (stamp, 114000 + 211 * index, 47980 + index * 37)
        lines += [agent, agent + "*" * 41,
                  agent + "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, "
                          "to avoid your system being overloaded, please further tune the variable for optimal "
                          "performance in your application as needed. ",
                  agent + "*" * 41]
    return lines


@contextmanager
def utc_clock():
    """The writer stamps local time; the captures are in UTC. Restores the caller's zone (pytest)."""
    saved = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = saved
        time.tzset()


def render(sc):
    """-> (file name, text) of the demo job's combined log."""
    names = scenario_lib.host_names(sc)
    incident = incident_epoch(sc)
    now = incident + 60.0 * float(sc["job"]["incident_minutes_ago"])
    with utc_clock(), tempfile.TemporaryDirectory() as tmp:
        job, states, faults = scenario_lib.build(sc, names, bootstrap_addresses(names), now=now)
        job_dir = scenario_lib.write_job_logs(sc, job, states, faults, names, tmp)
        nranks = len(names) * 8
        per_rank = {}
        for rank in range(nranks):
            with open(os.path.join(job_dir, "rank-%d.log" % rank)) as fh:
                per_rank[rank] = fh.read().splitlines()
        with open(os.path.join(job_dir, "slurm-%d.out" % job["id"])) as fh:
            combined = fh.read().splitlines()
    ranks, tail = label_ranks(combined, per_rank)
    lines = launch_lines(job, names, nranks) + ranks + tail
    # the job script's '#SBATCH --output=%x-%j.out' (job name, job id): what sites ask for over slurm-%j.out
    name = sc["job"].get("name")
    return ("%s-%d.out" % (name, job["id"]) if name else "slurm-%d.out" % job["id"]), "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the committed file, write nothing")
    args = ap.parse_args(argv)
    sc = scenario_lib.load(SCENARIO)
    name, text = render(sc)
    path = os.path.join(DEMO_CAPTURES, "job-%d" % sc["job"]["id"], name)
    if args.check:
        try:
            with open(path) as fh:
                same = fh.read() == text
        except OSError:
            same = False
        print("%s: %s" % (os.path.relpath(path, REPO), "up to date" if same else "differs from the scenario"))
        return 0 if same else 1
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write(text)
    print("wrote %s (%d lines)" % (os.path.relpath(path, REPO), text.count("\n")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
