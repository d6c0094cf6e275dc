# SPDX-License-Identifier: Apache-2.0
"""``nvidia-smi --query-gpu=... --format=csv[,noheader]``: the header (or ``fields``) names the
columns; the known ones map onto the common GPU facts."""

import re

from ..findings import finding, iter_lines
from .failures import scan_failures, unparseable
from .model import as_text, assign, clean, empty_facts, field_name, is_na, looks_like_header, new_gpu, note, split_csv, \
    src, throttle_key, to_int, to_str
from .rules import wrap_up

_CSV_FIELD_MAP = {
    "index": "index", "pci.bus_id": "pci", "gpu_bus_id": "pci", "uuid": "uuid", "gpu_uuid": "uuid",
    "serial": "serial", "gpu_serial": "serial", "name": "name", "gpu_name": "name",
    "ecc.mode.current": "ecc_mode", "mig.mode.current": "mig_mode", "mig.mode.pending": "mig_mode_pending",
    "temperature.gpu": "temperature_c",
    "retired_pages.single_bit_ecc.count": "retired.single_bit", "retired_pages.sbe": "retired.single_bit",
    "retired_pages.double_bit.count": "retired.double_bit", "retired_pages.dbe": "retired.double_bit",
    "retired_pages.pending": "retired.pending",
    "remapped_rows.correctable": "remap.correctable", "remapped_rows.uncorrectable": "remap.uncorrectable",
    "remapped_rows.pending": "remap.pending", "remapped_rows.failure": "remap.failure",
    "reset_status.reset_required": "reset_required",
    "reset_status.drain_and_reset_recommended": "drain_and_reset_recommended",
    "gpu_recovery_action": "recovery_action",
}

# fields that say which GPU a row is, not how it is
_IDENTITY = (None, "index", "pci", "uuid", "serial", "name")

# the command line pasted above its output: its --query-gpu list names the columns of a
# --format=csv,noheader output (a header that follows it wins: it is what nvidia-smi printed)
QUERY_COMMAND_RE = re.compile(r"\bnvidia-smi\b[^\n]{0,800}?--query-(?:gpu|retired-pages)[= ]([A-Za-z_][\w.]{0,120}"
                              r"(?:,[A-Za-z_][\w.]{0,120}){0,80})")


def command_fields(line):
    """The --query-gpu (or --query-retired-pages) field names of a pasted nvidia-smi command line, or None."""
    m = QUERY_COMMAND_RE.search(line)
    return m.group(1).split(",") if m else None

# nvmlClocksEventReason* bits, as printed by --query-gpu=clocks_throttle_reasons.active
_THROTTLE_BITS = (("idle", 0x1), ("applications_clocks_setting", 0x2), ("sw_power_cap", 0x4),
                  ("hw_slowdown", 0x8), ("sync_boost", 0x10), ("sw_thermal", 0x20), ("hw_thermal", 0x40),
                  ("hw_power_brake", 0x80), ("display_clock_setting", 0x100))


def csv_key(field):
    """The canonical key of a --query-gpu field name (None: not one we read)."""
    f = field_name(field)
    if f in _CSV_FIELD_MAP:
        return _CSV_FIELD_MAP[f]
    m = re.match(r"^ecc\.errors\.(corrected|uncorrected)\.(volatile|aggregate)\.(\w+)$", f)
    if m:
        kind = "correctable" if m.group(1) == "corrected" else "uncorrectable"
        part = m.group(3)
        if part == "total":
            return "ecc.%s.%s" % (m.group(2), kind)
        if part in ("sram", "dram"):
            return "ecc.%s.%s_%s" % (m.group(2), part, kind)
        return None
    m = re.match(r"^clocks?_(?:throttle|event)_reasons\.(\w+)$", f)
    if m:
        t = throttle_key(m.group(1))
        return "throttle." + t if t else None
    return None


def _throttle_mask(g, raw, ln, ev):
    """Fill the throttle booleans a query did not ask for one by one from the active bitmask."""
    try:
        mask = int(clean(raw), 16) if clean(raw).lower().startswith("0x") else None
    except ValueError:
        mask = None
    if mask is None:
        return
    for name, bit in _THROTTLE_BITS:
        if g["throttle"].get(name) is None:
            g["throttle"][name] = bool(mask & bit)
            note(g, "throttle." + name, ln, ev, strong=bool(mask & bit))


def _row_gpu(facts, names, cols, index, ln, s):
    """The GPU record of one data row."""
    g = new_gpu(None, index)
    note(g, "header", ln, s)
    for name, val in zip(names, cols):
        key = csv_key(name)
        if key == "index":
            if to_int(val) is not None:
                g["index"] = to_int(val)
        elif field_name(name) == "driver_version":
            facts["driver_version"] = to_str(val)
        elif key == "throttle.active":
            _throttle_mask(g, val, ln, s)
        else:
            assign(g, key, val, ln, s, field_name(name))
    return g


# --query-retired-pages prints a row per retired page (gpu_uuid, gpu_bus_id, ..., retired_pages.address,
# retired_pages.cause, retired_pages.timestamp: `nvidia-smi --help-query-retired-pages`), not a row per GPU
_PAGE_FIELDS = ("retired_pages.address", "retired_pages.cause")
_CAUSES = {"single bit ecc": "single_bit", "double bit ecc": "double_bit"}


def _is_page_query(names):
    return any(field_name(n) in _PAGE_FIELDS for n in names)


def _page_gpus(names, rows, source, parse_findings):
    """A GPU record per GPU the rows name (one unnamed GPU when no column names it) with its
    retired pages counted by cause; a row whose address is [N/A] names no page."""
    keys = [field_name(n) for n in names]
    ident = [i for i, k in enumerate(keys) if csv_key(k) in ("uuid", "pci", "serial")]
    addr = keys.index("retired_pages.address") if "retired_pages.address" in keys else None
    cause = keys.index("retired_pages.cause") if "retired_pages.cause" in keys else None
    gpus, not_available = {}, []
    for ln, s, cols in rows:
        if addr is not None and is_na(cols[addr]):
            not_available.append((ln, s))
            continue
        who = tuple(cols[i].strip() for i in ident)
        g = gpus.get(who)
        if g is None:
            g = gpus[who] = new_gpu(None, len(gpus))
            for i in ident:
                assign(g, csv_key(keys[i]), cols[i], ln, s, keys[i])
            g["retired_pages"].update(single_bit=0, double_bit=0)
            note(g, "header", ln, s)
        sub = _CAUSES.get((cols[cause] if cause is not None else "").strip().lower())
        if sub is None:
            parse_findings.append(finding("nvsmi_csv_bad_row", "a retired page of no known cause (%r): not counted, "
                                          "so its GPU's page count is not established" % cols[cause if cause else 0],
                                          evidence=s, source=src(source, ln), severity="warning"))
            continue
        g["retired_pages"][sub] += 1
        note(g, "retired." + sub, ln, s, strong=True)
    if not gpus and rows:
        ln, s = not_available[0]
        parse_findings.append(finding(
            "nvsmi_no_health_fields", "Every retired page's address is [N/A]: this GPU does not report page "
            "retirement (Ampere and later remap rows instead), so the list tells nothing of its memory",
            evidence=s, source=src(source, ln)))
    return list(gpus.values())


# what starts a note a person typed after a pasted row: an arrow or a comment mark after blanks
_NOTE_RE = re.compile(r"(?<=\S)(?:\s{2,}(?:<=+|<-+|#|//)|\s(?:<=+|<-{1,2})\s)")


def parse_csv(text, source, expected_gpus, fields, thresholds):
    text = as_text(text)
    lines = list(iter_lines(text))
    facts = empty_facts("csv")
    gpus = []
    names = list(fields) if fields else None
    parse_findings = []
    page_rows = []
    commanded = False
    for ln, line in lines:
        s = line.strip()
        fields_named = command_fields(s) if names is None and "--query-" in s else None
        if fields_named:
            names, commanded = fields_named, True
            continue
        if not s or ("," not in s and not (names and len(names) == 1)):  # one field: rows without a comma
            continue
        cols = split_csv(s)
        if commanded and not gpus and looks_like_header(cols) and len(cols) == len(names) and any(
                csv_key(c) or field_name(c) in names for c in cols):
            names, commanded = cols, False  # the header nvidia-smi printed under its command
            continue
        if names is None:
            if not looks_like_header(cols):
                return unparseable("csv", text, source, "nvidia-smi --query-gpu CSV (no header line)")
            names = cols
            continue
        if looks_like_header(cols) and [c.lower() for c in cols] == [n.lower() for n in names]:
            continue  # the header again (concatenated captures)
        if len(cols) > len(names):
            # a person's note pasted after the row ('1, Reset   <= GPU is unusable, reset required'): the
            # row is nvidia-smi's without it (its evidence keeps the note)
            m = _NOTE_RE.search(s)
            if m and len(split_csv(s[:m.start()])) == len(names):
                cols = split_csv(s[:m.start()])
        if len(cols) != len(names):
            # a GPU's row not read: that GPU's health is not established (never a silent healthy)
            parse_findings.append(finding("nvsmi_csv_bad_row", "CSV row has %d columns, header has %d: this row "
                                          "was not read, so its GPU's health is not established"
                                          % (len(cols), len(names)), evidence=s, source=src(source, ln),
                                          severity="warning"))
            continue
        if _is_page_query(names):
            page_rows.append((ln, s, cols))
            continue
        gpus.append(_row_gpu(facts, names, cols, len(gpus), ln, s))
    if names and _is_page_query(names):
        gpus = _page_gpus(names, page_rows, source, parse_findings)
    if gpus and not any(csv_key(n) not in _IDENTITY for n in names):
        # name, bus id, VBIOS ...: an inventory, no health reading
        parse_findings.append(finding(
            "nvsmi_no_health_fields", "The query read only %s: no field of it tells a GPU's health"
            % ", ".join(field_name(n) for n in names[:6]), evidence=lines[0][1].strip() if lines else None,
            source=src(source, lines[0][0] if lines else 1)))
    if not gpus:
        if names is None:
            return unparseable("csv", text, source, "nvidia-smi --query-gpu CSV")
        fails, _ = scan_failures(lines, source, [])
        if fails:
            return facts, fails
    return wrap_up(facts, gpus, lines, source, expected_gpus, thresholds, parse_findings)
