# SPDX-License-Identifier: Apache-2.0
"""``dcgmi dmon -e <field ids>`` (DCGM's field monitor) -> (facts, findings).

Its layout, as NVIDIA/DCGM 72fa3feaa67d (DCGM 4.6.0) dcgmi/DeviceMonitor.cpp prints it:

- SetHeaderForOutput (:719-754): a header line ``#Entity`` then each field's short tag (its
  ``dcgm_field_output_format_t.shortName``, dcgmlib/dcgm_fields.h:3894-3900, set per field in
  dcgmlib/src/dcgm_fields.cpp), and a unit line ``ID`` then each field's unit (``" C"``, ``" W"``,
  ``"MB/s"``, mostly none); ``#Entity``/``ID`` padded to 16, each column to the field's width + 6 + 2
  (4.x, left-aligned; 3.x pads ``#Entity`` to 10; 2.x right-aligns: ``# Entity`` / ``      Id``);
- PrintMetricsRow (:339-403): one row per entity and sample, ``GPU 0``, ``vGPU n``, ``Switch n``,
  ``GPU-I n``, ``GPU-CI n``, ``CPU n``, ``CPU Core n``, ``CX n`` (common/EntityListHelpers.cpp
  format_as, :970-1016), an NVLink ``GPU 0 LINK 3`` / ``SW 1 LINK 2``; a value too wide is cut to
  ``...``, a field with no value for that entity is left blank, a blank DCGM value is ``N/A`` (:43);
- the header again every MAX_PRINT_HEADER_COUNT (14, :36) samples; ``dmon was stopped due to
  receiving a signal`` after a Ctrl-C.

What it tells (``TAGS``: the tags this reader acts on; every other column is read and kept as a
fact, never judged): XIDER (field 230) is the last Xid DCGM saw on the GPU (sticky until the next
one, with no time): a nonzero one is an Xid finding through the Xid catalog; a volatile double-bit
ECC count, a pending page retirement, too many retired pages, a failed or pending row remap, nonzero
NVLink error counters are the findings nvidia-smi -q's readers make of the same counters; PCIe
replays are noted (info: a count with no rate). Correctable and aggregate counts and the violation
times (ns of throttling, normal under a power cap) are facts. Every acted-on count zero and no Xid
on every GPU is a healthy reading of those fields. Rows that do not line up with their header, a
header with no row under it (a cut table) are unknown (``dcgmi_dmon_unreadable``), never healthy.
Judged on ``GPU n`` rows (NVLink counters on its LINK rows and NVSwitches' too); DCGM's GPU id is
the GPU's index as DCGM numbers it. Pure, standard library only, never raises."""

import re

from ..findings import finding, gpu_ref, iter_lines, never_raise
from ..xid_catalog import number_finding

TOOL = "dcgmi dmon"
SOURCE = "dcgmi-dmon.txt"
# tag -> (DCGM field id, role). The tag is the shortName argument of DcgmFieldsPopulateOneFieldWithFormatting
# in dcgmlib/src/dcgm_fields.cpp at 72fa3feaa67d (the line given), the id its #define in dcgmlib/dcgm_fields.h
# (the line given); the same tags since v2.1.4.
TAGS = {
    "XIDER": (230, "xid"),                   # DCGM_FI_DEV_XID_ERROR             cpp:2329  h:806 (the Xid itself)
    "EDVTL": (311, "ecc_dbe_volatile"),      # DCGM_FI_DEV_ECC_DBE_VOL_TOTAL     cpp:1329  h:929
    "EDATL": (313, "ecc_dbe_aggregate"),     # DCGM_FI_DEV_ECC_DBE_AGG_TOTAL     cpp:1349  h:941
    "ESVTL": (310, "ecc_sbe_volatile"),      # DCGM_FI_DEV_ECC_SBE_VOL_TOTAL     cpp:1319  h:924
    "ESATL": (312, "ecc_sbe_aggregate"),     # DCGM_FI_DEV_ECC_SBE_AGG_TOTAL     cpp:1339  h:935
    "RPSBE": (390, "retired_sbe"),           # DCGM_FI_DEV_PAGE_RETIRED_SBE_TOTAL cpp:2159 h:1242
    "RPDBE": (391, "retired_dbe"),           # DCGM_FI_DEV_PAGE_RETIRED_DBE_TOTAL cpp:2169 h:1248
    "RPPEN": (392, "retired_pending"),       # DCGM_FI_DEV_PAGE_RETIRED_PENDING  cpp:2219  h:1253 (1=yes)
    "URMPS": (393, "remap_uncorrectable"),   # DCGM_FI_DEV_ROW_REMAP_UNCORRECTABLE_TOTAL cpp:2229 h:1258
    "CRMPS": (394, "remap_correctable"),     # DCGM_FI_DEV_ROW_REMAP_CORRECTABLE_TOTAL   cpp:2289 h:1263
    "RRF": (395, "remap_failure"),           # DCGM_FI_DEV_ROW_REMAP_FAILED      cpp:2299  h:1268
    "RRP": (396, "remap_pending"),           # DCGM_FI_DEV_ROW_REMAP_PENDING     cpp:2309  h:1273
    "NFELT": (409, "nvlink"),                # DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_TOTAL    cpp:2569 h:1308
    "NDELT": (419, "nvlink"),                # DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_TOTAL    cpp:2639 h:1343
    "NRELT": (429, "nvlink"),                # DCGM_FI_DEV_NVLINK_REPLAY_ERROR_TOTAL      cpp:2709 h:1378
    "NRCLT": (439, "nvlink"),                # DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_TOTAL    cpp:2779 h:1413
    "NLCRC": (497, "nvlink"),                # DCGM_FI_DEV_NVLINK_CRC_ERROR_TOTAL         cpp:3481 h:1643
    "NLREC": (498, "nvlink"),                # DCGM_FI_DEV_NVLINK_RECOVERY_TOTAL          cpp:3491 h:1648
    "NLREP": (499, "nvlink"),                # DCGM_FI_DEV_NVLINK_REPLAY_TOTAL            cpp:3501 h:1653
    "NVLFCE": (1525, "nvlink"),              # DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_PER_LINK_TOTAL  cpp:5216 h:3500
    "NVLDCE": (1526, "nvlink"),              # DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_PER_LINK_TOTAL  cpp:5226 h:3501
    "NVLRPE": (1527, "nvlink"),              # DCGM_FI_DEV_NVLINK_REPLAY_ERROR_PER_LINK_TOTAL    cpp:5236 h:3502
    "NVLRCE": (1528, "nvlink"),              # DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_PER_LINK_TOTAL  cpp:5246 h:3503
    "RPCTR": (202, "pcie_replay"),           # DCGM_FI_DEV_PCIE_REPLAY_TOTAL     cpp:471   h:770
    # throttling time in ns (h:829-866 "Violation time in ns"): cumulative, not errors; facts only
    "PVIOL": (240, "violation"), "TVIOL": (241, "violation"),      # cpp:2379, 2389
    "SBVIO": (242, "violation"), "BLVIO": (243, "violation"),      # cpp:2429, 2439
    "LUVIO": (244, "violation"), "RVIOL": (245, "violation"),      # cpp:2449, 2459
    "TAPCV": (246, "violation"), "TAPBC": (247, "violation"),      # cpp:2469, 2479
}
# the per-lane NVLink counters (L0-L17: NFELn flit CRC, NDELn data CRC, NRELn replay, NRCLn recovery;
# DCGM_FI_DEV_NVLINK_*_L<n>_TOTAL, cpp:2509-2769 for L0-L5, cpp:2881-3351 for L6-L17)
_LANE_RE = re.compile(r"^N(?:FE|DE|RE|RC)L(?:1[0-7]|\d)$")
_HEALTH = ("xid", "ecc_dbe_volatile", "ecc_dbe_aggregate", "ecc_sbe_volatile", "ecc_sbe_aggregate", "retired_sbe",
           "retired_dbe", "retired_pending", "remap_uncorrectable", "remap_correctable", "remap_failure",
           "remap_pending", "nvlink", "pcie_replay")
# the RMA threshold nvidia-smi -q's reader uses (nvsmi/rules.py DEFAULT_THRESHOLDS, a parser of the same layer:
# not imported; tests/unit/test_dcgmi_dmon.py holds the two equal)
RETIRED_PAGES_RMA = 60

_TAG = r"[A-Z][A-Z0-9_#]{0,15}"
# its header line (DCGM's own: upper-case tags), where content/'s block finder opens the block
OPENING = re.compile(r"^[ \t]{0,16}#[ \t]?Entity(?:[ \t]+" + _TAG + r"){1,600}[ \t]*$")
_HEADER_RE = re.compile(r"^[ \t]{0,16}(?P<head>#[ \t]?Entity)(?P<tags>(?:[ \t]+" + _TAG + r"){0,600})[ \t]*$")
_UNITS_RE = re.compile(r"^[ \t]{0,16}I[Dd](?:[ \t]+\S{1,4}){0,600}[ \t]*$")
_ROW_RE = re.compile(r"^[ \t]{0,16}(?P<ent>(?P<link>(?:GPU|SW) (?P<owner>\d{1,6}) LINK)|GPU-CI|GPU-I|vGPU|GPU|Switch|"
                     r"LINK|CPU Core|CPU|CX|UNKNOWN) (?P<id>\d{1,10})(?P<rest>(?:[ \t][^\n]{0,20000})?)$")
_STOPPED = ("dmon was stopped due to receiving a signal", "^C")
_COUNT_RE = re.compile(r"^\d{1,20}$")
_NA = "N/A"


def belongs(line):
    """dcgmi dmon's lines (content/): its header and unit lines, its rows, a Ctrl-C's note, blanks."""
    s = line.strip()
    return (not s or s in _STOPPED or bool(_HEADER_RE.match(line) or _UNITS_RE.match(line)
                                           or _ROW_RE.match(line)))


def role(tag):
    """What this reader does with a column: its TAGS role, 'nvlink' for a per-lane counter, else None."""
    if tag in TAGS:
        return TAGS[tag][1]
    return "nvlink" if _LANE_RE.match(tag) else None


def parse_dcgmi_dmon(text, source=SOURCE):
    """dcgmi dmon's table -> (facts, findings); ({}, []) for text without its header line."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return never_raise(_parse, source, text or "", source)


def _cells(line, m, table):
    """The row's values under its header's columns: (cells, None, short), or (None, why it cannot be read,
    False); ``short``: its last columns are blank with no padding under them (a row cut, if nothing follows)."""
    cols, tokens = table["columns"], m.group("rest").split()
    if len(tokens) == len(cols):
        return tokens, None, False
    # DCGM 4.x pads every value to its column: a blank (no value for this entity) or a string with
    # spaces is read at the header's column starts, when every value starts at one of them
    shift = m.start("ent") - table["base"]
    starts = [s + shift for s in table["starts"]]
    ends = starts[1:] + [max(len(line), starts[-1])]
    cells = [line[a:b].strip() or None for a, b in zip(starts, ends)]
    lined_up = (bool(starts) and not line[m.end("id"):starts[0]].strip()
                and all(line[s - 1:s] in (" ", "\t", "") for s in starts)
                and not any(c and "  " in c for c in cells))
    if not lined_up:
        return None, ("holds %d of its %d values" if len(tokens) < len(cols) else
                      "does not line up with its header (%d values under %d columns)") % (len(tokens), len(cols)), False
    return cells, None, len(line) <= starts[-1]


def read_table(text):
    """-> {"tables": [{"columns", "line", "rows", "repeats"}], "rows": [(entity, group, id, owner, {tag: cell},
    lineno, line)], "bad": [(lineno, line, why)]}; None when no header line is found. A header of other
    columns starts another table (another dmon run); the same header again is its repeat."""
    tables, rows, bad, cur = [], [], [], None
    for lineno, line in iter_lines(text):
        m = _HEADER_RE.match(line)
        if m:
            cols = m.group("tags").split()
            if cur is not None and cols == cur["columns"]:
                cur["repeats"] += 1
                continue
            starts = [t.start() + m.start("tags") for t in re.finditer(r"\S+", m.group("tags"))]
            cur = {"columns": cols, "starts": starts, "base": m.start("head"), "line": lineno, "rows": 0, "repeats": 0}
            tables.append(cur)
            continue
        m = _ROW_RE.match(line) if cur is not None else None
        if m is None:
            continue
        name = "%s %s" % (m.group("ent"), m.group("id"))
        cells, why, short = _cells(line, m, cur) if cur["columns"] else (None, "stands under a header that names "
                                                                               "no field", False)
        if cells is None:
            bad.append((lineno, line.strip(), "%s %s" % (name, why)))
            continue
        cut = (lineno, line.strip(), "%s holds %d of its %d values" % (
            name, sum(1 for c in cells if c), len(cells))) if short else None
        cur["rows"] += 1
        owner = int(m.group("owner")) if m.group("owner") else None
        rows.append((name, "LINK" if m.group("link") else m.group("ent"), int(m.group("id")), owner,
                     dict(zip(cur["columns"], cells)), lineno, line.strip(), cur, cut))
    if rows and rows[-1][-1]:  # the text stops inside its last row, its padding gone: cut, not blanks
        rows[-1][-2]["rows"] -= 1
        bad.append(rows.pop()[-1])
    return {"tables": tables, "rows": [r[:7] for r in rows], "bad": bad} if tables else None


def _count(cell):
    return int(cell) if cell is not None and _COUNT_RE.match(cell) else None


def _entities(rows):
    """{entity: {"group", "id", "owner", "cells" (its last sample), "counts" ({tag: last count}),
    "xids" ([(code, lineno, line)] in the order they first appear), "line": (lineno, line)}},
    and the odd cells [(entity, tag, cell, lineno, line)] (an acted-on column neither a count nor N/A)."""
    out, odd = {}, []
    for name, group, eid, owner, cells, lineno, line in rows:
        e = out.setdefault(name, {"group": group, "id": eid, "owner": owner, "cells": {}, "counts": {},
                                  "xids": [], "line": None})
        e["line"] = (lineno, line)
        for tag, cell in cells.items():
            e["cells"][tag] = cell
            r = role(tag)
            if r not in _HEALTH or cell is None or cell == _NA:
                continue
            n = _count(cell)
            if n is None:
                odd.append((name, tag, cell, lineno, line))
                continue
            e["counts"][tag] = n
            if r == "xid" and n and n not in [x[0] for x in e["xids"]]:
                e["xids"].append((n, lineno, line))
    return out, odd


def _problems(read, odd):
    """(cut, [reasons]) the table cannot be read whole."""
    reasons, cut = [], False
    for t in read["tables"]:
        if not t["columns"]:
            reasons.append("its header at line %d names no field" % t["line"])
        elif not t["rows"]:
            cut = True
            reasons.append("no row stands under its header at line %d" % t["line"])
    last = max([r[5] for r in read["rows"]] + [0])
    for lineno, _line, why in read["bad"]:
        cut = cut or (" holds " in why and lineno > last)  # short after every row read: the text stops there
        reasons.append("the row at line %d (%s)" % (lineno, why))
    for name, tag, cell, lineno, _line in odd:
        reasons.append("%s's %s at line %d is %r, neither a count nor N/A" % (name, tag, lineno, cell[:20]))
    return cut, reasons


def _parse(text, source):
    read = read_table(text)
    if read is None:
        return {}, []
    entities, odd = _entities(read["rows"])
    columns = []
    for t in read["tables"]:
        columns += [c for c in t["columns"] if c not in columns]
    gpus = sorted(e["id"] for e in entities.values() if e["group"] == "GPU")
    health = sorted(set(tag for e in entities.values() for tag in e["counts"]))
    facts = {"tool": TOOL, "columns": columns, "gpus": gpus, "samples": len(read["rows"]),
             "entities": {name: dict(e["cells"]) for name, e in entities.items()}, "health_fields": health,
             "xids": {str(e["id"]): [x[0] for x in e["xids"]] for e in entities.values()
                      if e["group"] == "GPU" and e["xids"]},
             "read_whole": False}
    findings = []
    cut, reasons = _problems(read, odd)
    if reasons:
        first = (read["bad"] or [(read["tables"][0]["line"], "", "")])[0]
        findings.append(finding(
            "dcgmi_dmon_unreadable", "the %s table %s: %s; %s" % (
                TOOL, "is cut" if cut else "cannot be read whole", "; ".join(reasons[:4]),
                "the fields of those rows are not known" if read["rows"] else "no GPU's fields are known"),
            evidence=(first[1] or "cut")[:200], source="%s:%d" % (source, first[0])))
    else:
        facts["read_whole"] = True
    # usable evidence (analyze.py): a health field's count read on some GPU (all zero: a healthy reading of
    # those fields), or a table that cannot be read whole, whose unknown verdict is said (as topo -m's)
    facts["reading"] = bool(health or reasons)
    for name, e in sorted(entities.items(), key=lambda kv: (kv[1]["group"], kv[1]["id"])):
        findings.extend(_entity_findings(name, e, source))
    return facts, findings


def _where(e, source, lineno=None, line=None):
    n, text = (lineno, line) if lineno is not None else e["line"]
    gpu = e["id"] if e["group"] == "GPU" else e["owner"] if e["group"] == "LINK" and e["owner"] is not None else None
    return dict(evidence=text[:300], source="%s:%d" % (source, n), gpu=gpu_ref(index=gpu) if gpu is not None else None)


def _entity_findings(name, e, source):
    out = []
    if e["group"] == "GPU":
        out += [_xid_finding(name, e, code, source, lineno, line) for code, lineno, line in e["xids"]]
        out += _memory_findings(name, e, source)
    nv = {t: n for t, n in sorted(e["counts"].items()) if role(t) == "nvlink" and n}
    if nv and e["group"] in ("GPU", "LINK", "Switch"):
        label = name.replace(" LINK ", " link ") if e["group"] == "LINK" else name
        out.append(finding("nvlink_errors", "%s: NVLink error counters are not zero (%s): %s" % (
            label, TOOL, ", ".join("%s %d" % kv for kv in nv.items())), counters=nv, **_where(e, source)))
    return out


def _xid_finding(name, e, code, source, lineno, line):
    """XIDER: the last Xid DCGM saw on this GPU, as the kernel-log reader's Xid finding reads it."""
    # one reading of one value: seen once, at no time the table says (as every Xid finding, a count)
    where = dict(xid=code, count=1, first=None, last=None, **_where(e, source, lineno, line))
    said = ("is the last Xid %s reported, read from %s (XIDER, DCGM field 230: the last one DCGM saw, kept until "
            "the next; it carries no time)" % (name, TOOL))
    return number_finding(code, said, **where)


def _memory_findings(name, e, source):
    """Volatile double-bit ECC, row remapping, page retirement, PCIe replays: as nvsmi/rules.py reads them."""
    c, out = {_role_key(t): n for t, n in e["counts"].items() if _role_key(t)}, []
    where = _where(e, source)
    if c.get("ecc_dbe_volatile"):
        out.append(finding("ecc_uncorrectable_volatile", "%s has %d uncorrectable (double-bit) ECC error(s) since the "
                           "driver loaded (%s EDVTL, volatile)" % (name, c["ecc_dbe_volatile"], TOOL),
                           counters=_pick(c, "ecc_dbe_volatile", "ecc_dbe_aggregate"), **where))
    if c.get("remap_failure"):
        out.append(finding("row_remap_failure", "%s: row remapping failed (%s RRF): no spare rows left for a bad "
                           "memory row" % (name, TOOL), counters=_pick(c, *_REMAP), **where))
    if c.get("remap_pending"):
        out.append(finding("row_remap_pending", "%s: a row remap is pending (%s RRP); reset the GPU to apply it"
                           % (name, TOOL), counters=_pick(c, *_REMAP), **where))
    if c.get("retired_pending"):
        crit = bool(c.get("ecc_dbe_volatile") or c.get("retired_dbe"))
        out.append(finding("retired_pages_pending", "%s: page retirement is pending (%s RPPEN): the bad page stays in "
                           "use until the GPU is reset" % (name, TOOL), severity="critical" if crit else "warning",
                           counters=_pick(c, *_RETIRED), **where))
    nret = c.get("retired_sbe", 0) + c.get("retired_dbe", 0)
    if nret >= RETIRED_PAGES_RMA:
        out.append(finding("retired_pages_limit", "%s has %d retired pages (%s RPSBE + RPDBE; RMA threshold %d)" % (
            name, nret, TOOL, RETIRED_PAGES_RMA), counters=_pick(c, *_RETIRED), threshold=RETIRED_PAGES_RMA, **where))
    if c.get("pcie_replay"):
        out.append(finding("pcie_replays", "%s: %d PCIe replays counted (%s RPCTR): the link retried; a count with no "
                           "rate says no fault alone" % (name, c["pcie_replay"], TOOL),
                           counters={"pcie_replays": c["pcie_replay"]}, **where))
    return out


_REMAP = ("remap_correctable", "remap_uncorrectable", "remap_pending", "remap_failure")
_RETIRED = ("retired_sbe", "retired_dbe", "retired_pending", "ecc_dbe_volatile")


def _role_key(tag):
    r = role(tag)
    return r if r in _HEALTH and r not in ("xid", "nvlink") else None


def _pick(counts, *keys):
    return {k: counts[k] for k in keys if k in counts} or None
