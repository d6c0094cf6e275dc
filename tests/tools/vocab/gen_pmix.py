#!/usr/bin/env python3
"""Generate module_utils/gpu_runbook/vocab/pmix.py: the error lines PMIx (the process management
interface Slurm's ``srun --mpi=pmix``, Open MPI and PRRTE launch through) writes to a job's
stderr, read from openpmix's own source at pinned releases.

    git clone --bare https://github.com/openpmix/openpmix.git /tmp/openpmix.git
    .venv/bin/python tests/tools/vocab/gen_pmix.py --src /tmp/openpmix.git
    .venv/bin/python tests/tools/vocab/write_index.py

What is read: ``PMIX_ERROR_LOG(r)`` (src/util/error.h in v3, src/util/pmix_error.h since v4), which
every part of the library calls where it meets an error, prints ``pmix_output(0, "PMIX ERROR: %s in
file %s at line %d", PMIx_Error_string(r), __FILE__, __LINE__)``; pmix_output(0, ...) prefixes
``[<host>:<pid>] ``. ``PMIx_Error_string`` names the status: in v3 (v3.2.5) a switch of
``case PMIX_ERR_...: return "TEXT"`` (src/util/error.c; "ERROR", "LOST-CONNECTION-TO-SERVER",
...); since v4 (v4.2.9, v5.0.9) the status macro's own name (pmix_event_strings, built from
include/pmix_common.h.in by contrib/construct_event_strings.py). Each status is a code of this
table, its number from include/pmix_common.h.in; CODE_FORMATS prints it as PMIX_ERROR_LOG does.
Left out: PMIX_ERR_SILENT (PMIX_ERROR_LOG never prints it), success and informational event codes
(positive, or not an error), the library's debug output (pmix_output_verbose).

Classification: PMIX_ERROR_LOG marks where the library met an error, not what the job made of it:
its caller may retry, fall back or go on (the ds12 shared-memory lock's 'ERROR in file
gds_ds12_lock_pthread.c' at start-up, when Slurm's PMIx plugin and the job's PMIx disagree on the
gds component, is printed on working runs); a failure that ended the job is told by srun,
slurmstepd, mpirun or the rank. So a status is information, but for those that say a process,
a node or a connection to one was lost or timed out (LOST_RULES): a warning of no category of its
own (the consequence of a process or node that failed; srun / slurmstepd name which).
"""

import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402

sys.path.insert(0, os.path.join(common.REPO, "module_utils"))
from gpu_runbook import vocab  # noqa: E402

GENERATOR = "tests/tools/vocab/gen_pmix.py"
# v3.2.5: the switch of strings (what Slurm 20-23 and Open MPI 4 bundle); v4.2.9 and v5.0.9: names
PIN3, PINS_NAMED = "v3.2.5", ("v4.2.9", "v5.0.9")
ORIGIN = "https://github.com/openpmix/openpmix"
LICENCE = "BSD-3-Clause (openpmix LICENSE)"
HEADER = "include/pmix_common.h.in"
ERROR_C = "src/util/error.c"
# where PMIX_ERROR_LOG is defined: (release, header) -- src/util/error.h in v3, pmix_error.h since v4
ERROR_LOG_AT = ((PIN3, "src/util/error.h"), (PINS_NAMED[0], "src/util/pmix_error.h"))
FORMAT = "PMIX ERROR: %s in file %s at line %d"
CODE_FORMATS = ("PMIX ERROR: {text} in file %s at line %d",)
MARKERS = ("PMIX ERROR: ",)
TEMPLATES = (("", "[node1:400139] {message}"),)
_DEFINE = re.compile(r"^#define\s+(PMIX_[A-Z0-9_]+)\s+\(?\s*([A-Z0-9_]+|-?\d+)(?:\s*([-+])\s*(\d+))?\s*\)?\s*(?://.*)?$")
_CASE = re.compile(r"case\s+(PMIX_[A-Z0-9_]+)\s*:\s*return\s+\"([^\"]*)\"\s*;")
# a process, a node or a connection lost, or a wait that timed out: the launch lost something
LOST_RULES = r"LOST|UNREACH|TIMEOUT|ABORTED|NODE[_-]DOWN|PROC[_-]TERM|JOB[_-]TERM|CONNECTION|PROC_ABORT"
INFO = ("logged_error", "unknown", "info",
        "PMIx noted where its library met an error (PMIX_ERROR_LOG); its caller may retry, fall back or go on "
        "(the ds12 lock's at start-up is printed on working runs): a failure that ended the job is told by srun, "
        "slurmstepd, mpirun or the rank.")
LOST = ("logged_error", "unknown", "warning",
        "PMIx lost a process, a node or its connection to one, or a wait timed out: the consequence of a process "
        "or node that failed; srun / slurmstepd name which.")


def numbers(text):
    """{macro: int} of the status defines of pmix_common.h.in (literals and NAME +/- N)."""
    raw = {}
    for line in text.split("\n"):
        m = _DEFINE.match(line.strip())
        if m:
            raw[m.group(1)] = (m.group(2), m.group(3), m.group(4))
    out = {}

    def value(name, depth=0):
        if name in out:
            return out[name]
        if name not in raw or depth > 20:
            return None
        base, op, n = raw[name]
        v = int(base) if re.match(r"^-?\d+$", base) else value(base, depth + 1)
        if v is None:
            return None
        if op:
            v = v - int(n) if op == "-" else v + int(n)
        out[name] = v
        return v

    for name in raw:
        value(name)
    return out


def _line_of(text, needle):
    at = text.find(needle)
    return common.line_of(text, at) if at >= 0 else 0


def statuses(src, rev, named):
    """[(number, macro, text, line)] of the error statuses PMIx_Error_string names at ``rev`` (the
    line: of its #define, or of its case in the v3 switch)."""
    header = common.show(src, rev, HEADER)
    nums = numbers(header)
    if named:
        pairs = [(name, name) for name in nums if name.startswith(("PMIX_ERR_", "PMIX_ERROR"))]
        where = header
    else:
        where = common.show(src, rev, ERROR_C)
        pairs = _CASE.findall(where)
    out = []
    for macro, text in pairs:
        n = nums.get(macro)
        if n is None or n >= 0 or macro == "PMIX_ERR_SILENT":
            continue
        at = _line_of(where, ("#define %s " if named else "case %s:") % macro)
        out.append((n, macro, text, at))
    return sorted(set(out), key=lambda c: (-c[0], c[1]))


def classify(macro, text):
    return LOST if re.search(LOST_RULES, macro + " " + text) else INFO


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", required=True, help="openpmix/openpmix: a bare mirror or a clone")
    args = ap.parse_args(argv)
    for rev, path in ERROR_LOG_AT:
        if FORMAT not in common.show(args.src, rev, path):
            raise SystemExit("%s at %s no longer prints %r" % (path, rev, FORMAT))
    codes, seen = [], set()
    for rev, named in [(PIN3, False)] + [(r, True) for r in PINS_NAMED]:
        where = HEADER if named else ERROR_C
        for number, macro, text, at in statuses(args.src, rev, named):
            if text in seen:
                continue  # the same text at an older pin: one code
            seen.add(text)
            kind, cat, sev, meaning = classify(macro, text)
            codes.append((number, macro, text, kind, cat, sev, meaning, "%s@%s" % (where, rev), at))
    if len(codes) < 100:
        raise SystemExit("only %d PMIx statuses found" % len(codes))
    for c in codes:  # every code, printed as PMIX_ERROR_LOG prints it, is matchable and holds a marker
        line = CODE_FORMATS[0].replace("{text}", c[2])
        if not vocab.matchable(line) or not any(m in line for m in MARKERS):
            raise SystemExit("cannot read %r" % line)
    lost = sum(1 for c in codes if c[5] == "warning")
    doc = __doc__.split("\n\n", 2)[2].rstrip() + "\n\nCodes: %d (%d lost or timed out, %d information), from %s." % (
        len(codes), lost, len(codes) - lost, ", ".join((PIN3,) + PINS_NAMED))
    meta = {"EMITTER": "PMIx", "PROJECT": "OpenPMIx (openpmix/openpmix)", "VERSION": " + ".join((PIN3,) + PINS_NAMED),
            "COMMIT": common.resolve(args.src, PINS_NAMED[-1]), "LICENCE": LICENCE, "ORIGIN": ORIGIN,
            "GENERATOR": GENERATOR}
    path = common.write_table("pmix", meta, MARKERS, TEMPLATES, [], codes=codes, code_formats=CODE_FORMATS, doc=doc)
    print("%s: %d codes" % (path, len(codes)))


if __name__ == "__main__":
    main()
