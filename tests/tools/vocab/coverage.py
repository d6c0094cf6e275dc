#!/usr/bin/env python3
"""How much of each emitter's vocabulary the engine reads, and whether it reads each message as
its table says: every row is printed as its emitter prints it (vocab.line_for) and given to
the engine's reader of that emitter's lines -- the kernel-log reader for the node's emitters,
the job-log reader for the job's -- and the findings are compared with the row.

    .venv/bin/python tests/tools/vocab/coverage.py [--markdown] [--failures N] [EMITTER ...]

Columns: messages (rows + codes in their formats), matchable (enough literal text to tell the
message from another line), classified (a fault: the engine must find its category), benign
(the engine must find nothing at warning or above, and never "unexplained"; an info row may also
be left out, never raised), agree (the engine did as the row says), and the share. tests/unit/test_vocab_engine.py holds every row to it.
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
for p in (os.path.join(REPO, "module_utils"), REPO):
    if p not in sys.path:
        sys.path.insert(0, p)

from gpu_runbook import vocab  # noqa: E402

_SERIOUS = ("warning", "critical")


def engine_findings(name, line):
    """The findings the engine makes of one line: as a capture is read, the text goes to both
    line readers (the kernel-log reader takes the node's lines, the job-log reader the job's);
    a reader that found none of its lines adds nothing (analyze.not_a_kernel_log)."""
    from gpu_runbook.analyze import not_a_kernel_log
    from gpu_runbook.joblog import parse_job_logs
    from gpu_runbook.kernlog import parse_kernel_log
    facts, found = parse_kernel_log(line + "\n", source="kern.log")
    out = [] if not_a_kernel_log(facts, found) else list(found)
    return out + parse_job_logs({"job.log": line + "\n"})[1]


def judge(name, row, line):
    """(agrees, what the engine found): a fault row is found with its category (at info or
    above); a benign row leaves nothing at warning or above and nothing unexplained."""
    found = [f for f in engine_findings(name, line) if f["kind"] not in ("capture_truncated", "job_end_unknown")]
    said = sorted(set("%s/%s" % (f["category"], f["severity"]) for f in found))
    quiet = not [f for f in found if f["severity"] in _SERIOUS or f["kind"] == "unexplained_errors"]
    if row["kind"] == vocab.BENIGN:
        ok = quiet
    else:
        ok = any(f["category"] == row["category"] and f["kind"] != "unexplained_errors" for f in found)
        # an info message may be left out where it says nothing of a host or a job (a Slurm daemon's
        # info line about a job: analyze.not_a_kernel_log), never raised or called unexplained
        ok = ok or (row["severity"] == "info" and quiet)
    return ok, said


def rows_of(name):
    tbl = vocab.table(name)
    return tbl, [dict(zip(vocab.ROW_FIELDS, r)) for r in tbl.rows] if tbl else []


def coverage(names=vocab.EMITTERS, failures=None):
    """-> [{emitter, messages, matchable, classified, benign, agree}], and the first failures."""
    out, bad = [], []
    for name in names:
        tbl, rows = rows_of(name)
        if tbl is None:
            continue
        c = {"emitter": name, "label": tbl.emitter, "messages": len(rows), "matchable": 0, "classified": 0,
             "benign": 0, "agree": 0, "pin": "%s %s" % (tbl.module.PROJECT, tbl.module.VERSION)}
        for row in rows:
            if not vocab.matchable(row["format"]):
                continue
            c["matchable"] += 1
            c["benign" if row["kind"] == vocab.BENIGN else "classified"] += 1
            line = vocab.lines_for(tbl, row)  # a message of several lines: all of them
            ok, said = judge(name, row, line)
            c["agree"] += ok
            if not ok and (failures is None or len(bad) < failures):
                bad.append((name, row, line, said))
        out.append(c)
    return out, bad


def table_markdown(rows):
    lines = ["| emitter | source | messages | matchable | classified | benign | engine agrees |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for c in rows:
        share = 100.0 * c["agree"] / c["matchable"] if c["matchable"] else 0.0
        lines.append("| %s | %s | %d | %d | %d | %d | %d (%.1f%%) |" % (
            c["label"], c["pin"], c["messages"], c["matchable"], c["classified"], c["benign"], c["agree"], share))
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("emitters", nargs="*", default=list(vocab.EMITTERS))
    p.add_argument("--markdown", action="store_true", help="the table as Markdown (docs/vocabulary.md)")
    p.add_argument("--failures", type=int, default=10, help="rows the engine reads otherwise, shown (default 10)")
    args = p.parse_args(argv)
    rows, bad = coverage(args.emitters, failures=args.failures)
    if args.markdown:
        print(table_markdown(rows))
    else:
        for c in rows:
            print("%-14s messages %5d  matchable %5d  classified %5d  benign %5d  agree %5d" % (
                c["emitter"], c["messages"], c["matchable"], c["classified"], c["benign"], c["agree"]))
    for name, row, line, said in bad:
        print("DISAGREE %s %s:%s %s/%s: %r -> %s" % (name, row["file"], row["line"], row["kind"], row["category"],
                                                    line[:160], said or "nothing"), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
