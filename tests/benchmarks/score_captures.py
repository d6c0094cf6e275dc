#!/usr/bin/env python3
"""Score the engine on sets of real captures with truth: per field, how often it is right.

    python tests/benchmarks/score_captures.py DIR... [--engine PATH] [--json] [--quiet]

DIR holds case directories (case.json + captures), e.g. tests/fixtures/real or
../shared/reference-captures. --engine points at another checkout's module_utils (to score
an older engine on the same cases: `git archive <rev> | tar -x -C /tmp/old`, then
--engine /tmp/old/module_utils). Prints one line per failing case and a table of
field: right/total (percent).
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dirs", nargs="+")
    p.add_argument("--engine", default=os.path.join(REPO, "module_utils"),
                   help="the module_utils directory whose gpu_runbook to score")
    p.add_argument("--json", action="store_true", help="print the per-case results as JSON")
    p.add_argument("--quiet", action="store_true", help="only the totals")
    args = p.parse_args(argv)
    sys.path.insert(0, os.path.abspath(args.engine))
    sys.path.insert(1, REPO)
    from tests.real_captures import case_dirs, check_case  # noqa: E402 (after the engine is chosen)

    totals, per_case = {}, {}
    for case in case_dirs(*args.dirs):
        result, _ = check_case(case)
        per_case[case] = {k: {"ok": v[0], "want": v[1], "got": v[2]} for k, v in result.items()}
        for field, (ok, want, got) in result.items():
            right, n = totals.get(field, (0, 0))
            totals[field] = (right + bool(ok), n + 1)
            if not ok and not args.quiet and not args.json:
                print("FAIL %-60s %-13s want %s got %s" % (os.path.relpath(case), field,
                                                            json.dumps(want, default=str),
                                                            json.dumps(got, default=str)[:200]))
    whole = sum(1 for r in per_case.values() if r and all(v["ok"] for v in r.values()))
    if args.json:
        json.dump({"cases": per_case, "totals": totals, "all_right": whole}, sys.stdout, indent=1, default=str)
        print()
        return 0
    print("engine: %s" % os.path.abspath(args.engine))
    for field, (right, n) in sorted(totals.items()):
        print("%-14s %3d/%-3d  %5.1f%%" % (field, right, n, 100.0 * right / n))
    print("%-14s %3d/%-3d  %5.1f%%" % ("whole case", whole, len(per_case), 100.0 * whole / max(1, len(per_case))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
