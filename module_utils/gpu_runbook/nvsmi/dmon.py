# SPDX-License-Identifier: Apache-2.0
"""``nvidia-smi dmon`` (nvidia-smi's device monitor) -> (facts, findings).

nvidia-smi is closed source: its layout is known from NVIDIA's nvidia-smi documentation (the
nvidia-smi(1) man page, "Device Monitoring", and ``nvidia-smi dmon -h``) and from captures of it:

- a header line ``# gpu`` then each column's tag, a units line ``# Idx`` then each column's unit; with
  ``-o D`` / ``-o T`` (``-o DT``) the columns ``#Date`` ``Time`` come first (units ``#YYYYMMDD``
  ``HH:MM:SS``); ``--format csv`` separates the same cells with commas;
- one row per GPU and sample, the GPU's index first; ``-`` for a value the GPU does not report;
- the header repeated periodically; the column groups chosen with ``-s`` (default ``pucvmet`` less
  some, by driver): p = pwr gtemp mtemp (W, C, C; older drivers: pwr temp), u = sm mem enc dec jpg
  ofa (%), c = mclk pclk (MHz), v = pviol tviol (%, bool), m = fb bar1 ccpm (MB), e = sbecc dbecc pci
  (errors, replays), t = rxpci txpci (MB/s). Columns are mapped by the header, never by position.

What it tells (``TAGS``: the columns this reader acts on; every other column is read and kept as a
fact, never judged: utilisation, clocks, power, single-bit ECC, PCIe replays, violations; one GPU at
100% sm while the others idle is no fault): a nonzero dbecc (double-bit ECC errors counted while the
driver is loaded: volatile) is the ``ecc_uncorrectable_volatile`` nvidia-smi -q's reader makes of a
volatile uncorrectable count; a gtemp (or temp) at or over nvsmi/rules.py's ``temperature_c``
threshold is its ``gpu_temperature_high``, on the hottest sample. A reading (what a healthy verdict
may rest on) is a whole table with the dbecc column read as a number on some GPU: temperatures,
power and utilisation alone say nothing of a fault, so a table of them is facts, not health. Rows that do not line up with their header, a header
with no row under it (a cut table), an acted-on cell neither a number nor ``-`` are unknown
(``nvsmi_unparseable``: no dmon-specific kind), never healthy. Pure, standard library only, never
raises."""

import re

from ..findings import finding, gpu_ref, iter_lines, never_raise
from .rules import DEFAULT_THRESHOLDS

TOOL = "nvidia-smi dmon"
SOURCE = "nvidia-smi-dmon.txt"
# tag -> role: the columns this reader judges
TAGS = {"dbecc": "ecc_dbe_volatile", "gtemp": "temperature", "temp": "temperature"}
UNREADABLE = "nvsmi_unparseable"

_SEP = r"[ \t,]{1,40}"
_LEAD = r"^[ \t]{0,16}#[ \t]{0,4}"
# its header line (lower-case tags after 'gpu'), where content/'s block finder opens the block
OPENING = re.compile(_LEAD + r"(?:(?:Date|Time)" + _SEP + r"){0,2}gpu(?:" + _SEP + r"[a-z][a-z0-9_]{0,15}){0,600}"
                     r"[ \t,]{0,1000}$")
UNITS_RE = re.compile(_LEAD + r"(?:(?:YYYYMMDD|HH:MM:SS)" + _SEP + r"){0,2}Idx(?:" + _SEP + r"[^ \t,]{1,16}){0,600}"
                       r"[ \t,]{0,1000}$")
_ROW_RE = re.compile(r"^[ \t,]{0,40}[0-9A-Fa-f][0-9A-Fa-f:./]{0,39}(?:" + _SEP + r"[-0-9A-Za-z.:/!+]{1,40}){0,600}"
                     r"[ \t,]{0,1000}$")
_INT_RE = re.compile(r"^-?\d{1,20}$")
_FLOAT_RE = re.compile(r"^-?\d{1,20}\.\d{1,20}$")
_SPLIT_RE = re.compile(r"[^ \t,]{1,100000}")


def belongs(line):
    """nvidia-smi dmon's lines (content/): its header and unit lines, its rows, blanks."""
    return not line.strip() or bool(OPENING.match(line) or UNITS_RE.match(line) or _ROW_RE.match(line))


def parse_nvidia_smi_dmon(text, source=SOURCE, thresholds=None):
    """nvidia-smi dmon's table -> (facts, findings); ({}, []) for text without its header line."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return never_raise(_parse, source, text or "", source, thresholds)


def _tokens(line):
    return _SPLIT_RE.findall(line)


def value(cell):
    """A cell as dmon means it: int, float, None for '-', else the text (a date, a time, N/A)."""
    if cell == "-":
        return None
    if _INT_RE.match(cell):
        return int(cell)
    return float(cell) if _FLOAT_RE.match(cell) else cell


def read_table(text):
    """-> {"tables": [{"columns", "line", "rows"}], "rows": [(gpu, {tag: cell}, lineno, line)], "bad": [(lineno,
    line, why)]}; None when no header line is found. A header of other columns starts another table (another
    dmon run); the same header again is its periodic repeat."""
    tables, rows, bad, cur = [], [], [], None
    for lineno, line in iter_lines(text):
        if OPENING.match(line):
            cols = _tokens(line.lstrip()[1:])
            if cur is None or cols != cur["columns"]:
                cur = {"columns": cols, "line": lineno, "rows": 0, "key": cols.index("gpu")}
                tables.append(cur)
            continue
        if cur is None or UNITS_RE.match(line) or not _ROW_RE.match(line):
            continue
        cells = _tokens(line)
        if len(cells) != len(cur["columns"]):
            bad.append((lineno, line.strip(), "%d values under %d columns" % (len(cells), len(cur["columns"]))))
            continue
        gpu = cells[cur["key"]]
        cur["rows"] += 1
        rows.append((int(gpu) if gpu.isdigit() else gpu, dict(zip(cur["columns"], cells)), lineno, line.strip()))
    return {"tables": tables, "rows": rows, "bad": bad} if tables else None


def _gpus(rows):
    """{gpu: {"cells": {tag: value} (its last sample), "peak": {role: (value, lineno, line)}}}, and the odd
    cells [(gpu, tag, cell, lineno)] (an acted-on column neither a number nor '-')."""
    out, odd = {}, []
    for gpu, cells, lineno, line in rows:
        g = out.setdefault(gpu, {"cells": {}, "peak": {}})
        for tag, cell in cells.items():
            if tag == "gpu":
                continue
            v = g["cells"][tag] = value(cell)
            role = TAGS.get(tag)
            if role is None or v is None:
                continue
            if isinstance(v, str):
                odd.append((gpu, tag, cell, lineno))
            elif role not in g["peak"] or v > g["peak"][role][0]:
                g["peak"][role] = (v, lineno, line)
    return out, odd


def _problems(read, odd):
    reasons = ["no row stands under its header at line %d" % t["line"] for t in read["tables"] if not t["rows"]]
    reasons += ["the row at line %d (%s)" % (lineno, why) for lineno, _line, why in read["bad"]]
    reasons += ["GPU %s's %s at line %d is %r, neither a number nor '-'" % (gpu, tag, lineno, cell[:20])
                for gpu, tag, cell, lineno in odd]
    return reasons


def _parse(text, source, thresholds):
    read = read_table(text)
    if read is None:
        return {}, []
    gpus, odd = _gpus(read["rows"])
    columns = []
    for t in read["tables"]:
        columns += [c for c in t["columns"] if c not in columns]
    facts = {"tool": TOOL, "columns": columns, "gpus": {gpu: dict(g["cells"]) for gpu, g in gpus.items()},
             "samples": len(read["rows"]), "reading": False}
    findings = []
    reasons = _problems(read, odd)
    if reasons:
        first = (read["bad"] or [(read["tables"][0]["line"], "")])[0]
        findings.append(finding(UNREADABLE, "the %s table cannot be read whole: %s; %s" % (
            TOOL, "; ".join(reasons[:4]), "the values of those rows are not known" if read["rows"]
            else "no GPU's values are known"), evidence=(first[1] or "cut")[:200], source="%s:%d" % (source, first[0])))
    else:
        facts["reading"] = any(g["peak"].get("ecc_dbe_volatile") is not None for g in gpus.values())
    limit = dict(DEFAULT_THRESHOLDS, **(thresholds or {}))["temperature_c"]
    for gpu, g in sorted(gpus.items(), key=lambda kv: str(kv[0]).zfill(20)):
        findings.extend(_gpu_findings(gpu, g["peak"], limit, source))
    return facts, findings


def _gpu_findings(gpu, peak, limit, source):
    """Volatile double-bit ECC and temperature, as nvsmi/rules.py reads them from nvidia-smi -q."""
    out = []
    ref = gpu_ref(index=gpu) if isinstance(gpu, int) else gpu_ref(pci=gpu)

    def where(role):
        _v, lineno, line = peak[role]
        return dict(evidence=line[:300], source="%s:%d" % (source, lineno), gpu=ref)
    dbe = peak.get("ecc_dbe_volatile", (0,))[0]
    if dbe > 0:
        out.append(finding("ecc_uncorrectable_volatile", "GPU %s has %s uncorrectable (double-bit) ECC error(s) since "
                           "the driver loaded (%s dbecc, volatile)" % (gpu, dbe, TOOL),
                           counters={"volatile_uncorrectable": dbe}, **where("ecc_dbe_volatile")))
    temp = peak.get("temperature", (None,))[0]
    if temp is not None and temp >= limit:
        out.append(finding("gpu_temperature_high", "GPU %s temperature %s C is at or above %d C (%s gtemp, its "
                           "hottest sample)" % (gpu, temp, limit, TOOL), counters={"temperature_c": temp},
                           threshold=limit, **where("temperature")))
    return out
