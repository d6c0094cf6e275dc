"""``nvidia-smi --query-gpu=... --format=csv[,noheader]``: the header (or ``fields``) names the
columns; the known ones map onto the common GPU facts."""

import re

from ..findings import finding, iter_lines
from .failures import scan_failures, unparseable
from .model import as_text, assign, clean, empty_facts, field_name, looks_like_header, new_gpu, note, split_csv, \
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
}

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


def parse_csv(text, source, expected_gpus, fields, thresholds):
    text = as_text(text)
    lines = list(iter_lines(text))
    facts = empty_facts("csv")
    gpus = []
    names = list(fields) if fields else None
    parse_findings = []
    for ln, line in lines:
        s = line.strip()
        if not s or "," not in s:
            continue
        cols = split_csv(s)
        if names is None:
            if not looks_like_header(cols):
                return unparseable("csv", text, source, "nvidia-smi --query-gpu CSV (no header line)")
            names = cols
            continue
        if looks_like_header(cols) and [c.lower() for c in cols] == [n.lower() for n in names]:
            continue  # the header again (concatenated captures)
        if len(cols) != len(names):
            parse_findings.append(finding("nvsmi_csv_bad_row", "CSV row has %d columns, header has %d"
                                          % (len(cols), len(names)), evidence=s, source=src(source, ln)))
            continue
        gpus.append(_row_gpu(facts, names, cols, len(gpus), ln, s))
    if not gpus:
        if names is None:
            return unparseable("csv", text, source, "nvidia-smi --query-gpu CSV")
        fails, _ = scan_failures(lines, source, [])
        if fails:
            return facts, fails
    return wrap_up(facts, gpus, lines, source, expected_gpus, thresholds, parse_findings)
