#!/usr/bin/env python3
"""Generate module_utils/gpu_runbook/vocab/opensm.py: the messages OpenSM (the InfiniBand
subnet manager) writes to its log at the levels a default run keeps, read from
linux-rdma/opensm's own source at a pinned tag.

    git clone --bare https://github.com/linux-rdma/opensm.git /tmp/opensm.git
    .venv/bin/python tests/tools/vocab/gen_opensm.py --src /tmp/opensm.git [--rev 3.3.24]

What is read: every ``OSM_LOG(<log>, <level>, <format>, ...)`` call (and ``osm_log_v2`` / ``osm_log``,
which it stands for) of the C sources (opensm/,
libopensm/, libvendor/, complib/) whose level names OSM_LOG_ERROR or OSM_LOG_SYS (the default
log level is ERROR | INFO; SYS messages also go to syslog); the format is its third argument,
adjacent literals joined. libopensm/osm_log.c prints each as ``<Mon> <dd> <hh:mm:ss> <usec>
[<thread>] 0x<level> -> <message>`` (0x01 an error, 0x80 a SYS message), the templates below.
Left out: INFO, VERBOSE, DEBUG, FUNCS, FRAMES and ROUTING output, osmtest and the plugins, and
the parse errors of its configuration files ('<file>:<line>: missing GUID': too little text of
their own to be told from another line).

Also read: what opensm/main.c prints on its console (``printf`` / ``fprintf(stderr, ...)``, stdout
being where a foreground or systemd-run OpenSM's start-up shows): its banner, the options it
echoes, and why it stopped ('Error from osm_opensm_bind (0x2A)', 'Perhaps another instance of
OpenSM is already running'); its usage text (show_usage) left out, and lines with no marker of
OpenSM's own (MAIN_MARKERS).

Classification: an ERROR is the subnet manager failing at its work (discovery, a MAD to a port that
does not answer, routing, a port it cannot configure, its configuration files): the fabric's
(ib_network), a warning: OpenSM goes on, and its error names a port or a switch rather than a
node's fault. A SYS message reports the subnet's state: benign ('SUBNET UP', 'Entering MASTER
state'), but for those that say the SM's port or the subnet went wrong (SYS_RULES).
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

GENERATOR = "tests/tools/vocab/gen_opensm.py"
PIN = "3.3.24"
DIRS = ("opensm/", "libopensm/", "libvendor/", "complib/")
# OSM_LOG(log, level, fmt, ...) is osm_log_v2(log, level, FILE_ID, fmt, ...); osm_log(log, level, fmt, ...)
_CALL_RE = re.compile(r"\b(OSM_LOG|osm_log_v2|osm_log)\s*\(")
_FMT_ARG = {"OSM_LOG": 2, "osm_log_v2": 3, "osm_log": 2}
ERR = ("logged_ib_error", "ib_network", "warning",
       "OpenSM, the subnet manager, failed at its work (discovery, a MAD to a port that did not answer, routing, a "
       "port or switch it could not configure, its configuration): the InfiniBand fabric's management")
# SYS messages that say the subnet or the SM's own port went wrong (the rest report its state)
SYS_RULES = (
    (r"(?i)\b(?:error|fail|failed|down|cannot|could not|unable|timeout|timed out|invalid|abort|exiting|"
     r"no \w+ found|not found|lost|errors)\b",
     ("logged_ib_error", "ib_network", "warning",
      "OpenSM reports that the subnet or its own port went wrong (its port down, a heavy sweep failing, an "
      "error it could not recover from)")),
)
SYS_BENIGN = "OpenSM reports the subnet's state (a sweep done, SUBNET UP, MASTER or STANDBY): no fault"
# opensm/main.c's console: lines that say OpenSM could not start (init, bind, its config) or a bad option
MAIN_FILE = "opensm/main.c"
# (a signal's 'Got signal %d - exiting...' is OpenSM being stopped, no failure)
MAIN_FAIL = re.compile(r"(?i)\b(?:error|fail|failed|cannot|can't|not understood|invalid|lame)\b|"
                       r"another instance")
MAIN_ERR = ("logged_ib_error", "ib_network", "warning",
            "OpenSM could not start (its initialisation, binding to its port -- another OpenSM on it, or the port "
            "missing -- or its configuration): no subnet manager runs from this node")
MAIN_BENIGN = "OpenSM's console: its banner, the options it was given, its stop when told to"
MAIN_MARKERS = ("OpenSM", "osm_", "complib", "Config file is", "Command Line Arguments")
MARKERS = ("0x01 -> ", "0x80 -> ", "0x81 -> ", "0x83 -> ") + MAIN_MARKERS
TEMPLATES = (("", "Mar 10 21:28:55 669836 [850BE700] 0x01 -> {message}"),)


def sites(path, text):
    """(line, level, format) of each OSM_LOG call at ERROR or SYS level."""
    text = common.blank_comments(text)
    out = []
    for m in _CALL_RE.finditer(text):
        args, _end = common.call_args(text, m.end() - 1)
        k = _FMT_ARG[m.group(1)]
        if len(args) <= k:
            continue
        level = args[1]
        if "OSM_LOG_ERROR" not in level and "OSM_LOG_SYS" not in level:
            continue
        fmt = common.join_literals(args[k])
        if fmt is None:
            continue
        out.append((common.line_of(text, m.start()), "error" if "OSM_LOG_ERROR" in level else "sys", fmt))
    return out


_PRINT_RE = re.compile(r"\b(printf|fprintf)\s*\(")
_USAGE_RE = re.compile(r"\bstatic void show_usage\s*\(")


def console_sites(text):
    """(line, format) of each printf / fprintf(stderr|stdout, ...) of main.c outside show_usage."""
    text = common.blank_comments(text)
    usage = _USAGE_RE.search(text)
    usage_end = text.find("\n}\n", usage.end()) if usage else -1
    out = []
    for m in _PRINT_RE.finditer(text):
        if usage and usage.start() <= m.start() <= usage_end:
            continue
        args, _end = common.call_args(text, m.end() - 1)
        k = 0 if m.group(1) == "printf" else 1
        if len(args) <= k or (k and args[0].strip() not in ("stderr", "stdout")):
            continue
        fmt = common.join_literals(args[k])
        if fmt is not None:
            out.append((common.line_of(text, m.start()), fmt))
    return out


def console_rows(src, commit):
    rows = []
    for line, fmt in console_sites(common.show(src, commit, MAIN_FILE)):
        for part in fmt.strip("\n").split("\n"):
            part = part.strip()
            if not vocab.matchable(part) or not any(mk in part for mk in MAIN_MARKERS):
                continue
            fail = bool(MAIN_FAIL.search(part))
            rows.append((MAIN_FILE, line, part) + (MAIN_ERR if fail else ("benign", "healthy", "ok", MAIN_BENIGN)))
    return rows


def classify(site, fmt):
    if site == "error":
        return ERR
    for rx, cls in SYS_RULES:
        if re.search(rx, fmt):
            return cls
    return ("benign", "healthy", "ok", SYS_BENIGN)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", required=True, help="linux-rdma/opensm: a bare mirror or a clone")
    ap.add_argument("--rev", default=PIN)
    args = ap.parse_args(argv)
    commit = common.resolve(args.src, args.rev)
    rows, seen = [], set()
    files = [p for p in common.ls_files(args.src, commit, *DIRS) if p.endswith(".c")]
    for path in sorted(files):
        for line, site, fmt in sites(path, common.show(args.src, commit, path)):
            first = fmt.split("\n")[0].rstrip()
            if not vocab.matchable(first) or (first, site) in seen or first.startswith("%s:%d: "):
                continue  # ('<file>:<line>: missing GUID': a configuration file's parse error, too little text)
            seen.add((first, site))
            kind, cat, sev, meaning = classify(site, first)
            rows.append((path, line, first, kind, cat, sev, meaning))
    osm_log_rows = len(rows)
    logged = set(r[2] for r in rows)  # a console line OSM_LOG also prints is read as that row
    rows += [r for r in console_rows(args.src, commit) if r[2] not in logged]
    for r in rows:  # every row, printed as OpenSM prints it, holds a marker
        line = TEMPLATES[0][1].replace("{message}", vocab.instantiate(r[2]))
        if not any(m in line for m in MARKERS):
            raise SystemExit("no marker in %r" % line)
    if osm_log_rows < 500:
        raise SystemExit("only %d OSM_LOG errors found at %s" % (osm_log_rows, commit))
    counts = {}
    for r in rows:
        counts[r[3]] = counts.get(r[3], 0) + 1
    doc = __doc__.split("\n\n", 3)[3] + "\n\nRows: %d (%s)." % (
        len(rows), ", ".join("%s %d" % kv for kv in sorted(counts.items())))
    meta = {"EMITTER": "OpenSM", "PROJECT": "OpenSM (linux-rdma/opensm)", "VERSION": args.rev, "COMMIT": commit,
            "LICENCE": "GPL-2.0 or BSD-2-Clause (OpenSM's COPYING: dual licence); the message texts are quoted",
            "ORIGIN": "https://github.com/linux-rdma/opensm", "GENERATOR": GENERATOR}
    path = common.write_table("opensm", meta, MARKERS, TEMPLATES, rows, doc=doc)
    print("%s: %d rows from %d files" % (path, len(rows), len(files)))


if __name__ == "__main__":
    main()
