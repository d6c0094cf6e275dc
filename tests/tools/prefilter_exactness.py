#!/usr/bin/env python3
"""Is the job-log prefilter (joblog/quiet.py) exact on every capture we hold?

    python tests/tools/prefilter_exactness.py [DIR ...]     (default: tests/fixtures)

The prefilter skips a line only when reading it fully would change nothing; but the job's first
lines are always read fully (the search for a time stamp), and most captures are shorter than
that, so the tests' comparisons seldom reach the prefilter's own judgement. Here every capture
file is read behind 2,100 quiet training lines, once with the prefilter and once without; any
difference is printed and the exit status is 1. About 6 minutes on tests/fixtures (2 cores): `make prefilter-check`.
"""

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "module_utils"))

from gpu_runbook.joblog import lines as joblog_lines  # noqa: E402
from gpu_runbook.joblog import parse_job_logs  # noqa: E402

PAD_LINES = 2100  # more than the lines the time search reads fully (lines.FIRST_TIME_TRIES)
MAX_BYTES = 3 * 1000 * 1000


def pad():
    """Quiet lines of a training run: an iteration counter, a loss, a rate."""
    return "".join("[rank0]: iteration %6d/ 500000 | lm loss: %.4f | lr: 1.0E-04 | 412.3 TFLOPS\n" % (i, 2 + i % 97 / 100.0)
                   for i in range(PAD_LINES))


def captures(dirs):
    for top in dirs:
        for root, _dirs, names in os.walk(top):
            for name in sorted(names):
                path = os.path.join(root, name)
                if name.endswith((".json", ".gz", ".xz", ".bin")) or os.path.getsize(path) > MAX_BYTES:
                    continue
                yield path


def main(argv):
    dirs = argv or [os.path.join(REPO, "tests", "fixtures")]
    head, n, bad = pad(), 0, 0
    assert joblog_lines.FIRST_TIME_TRIES < PAD_LINES
    try:
        for path in captures(dirs):
            with open(path, encoding="utf-8", errors="replace") as fh:
                files = {"rank-0.log": head + fh.read()}
            joblog_lines.PREFILTER = True
            filtered = parse_job_logs(files)
            joblog_lines.PREFILTER = False
            n += 1
            if filtered != parse_job_logs(files):
                bad += 1
                print("differs with the prefilter:", path)
    finally:
        joblog_lines.PREFILTER = True
    print("%d capture(s) read behind %d quiet lines: %d differ with the prefilter" % (n, PAD_LINES, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
