# SPDX-License-Identifier: Apache-2.0
"""The GPU record every nvidia-smi format fills in, and the value cleaning they share.

A record is a dict (see the package docstring for its public fields) plus private keys the
rules read and ``public()`` strips: ``_ev`` (field -> (line, evidence) where it was read),
``_strong`` (fields whose evidence is a non-zero/Yes line), ``_nlines`` (fields read, to spot
a cut-off section) and ``_table`` (read from the plain table).
"""

import re

from ..findings import gpu_ref, normalize_pci

PCI_TXT = r"(?:[0-9A-Fa-f]{4,8}:)?[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]"
PCI_RE = re.compile(PCI_TXT)

_NA_VALUES = ("n/a", "not supported", "not available", "none", "", "requested functionality has been deprecated",
              "unknown", "not found")
_ERR_MARKERS = ("unknown error", "err!", "gpu is lost", "gpu requires reset")
# fields whose 'Unknown Error' is a failed optional NVML query, not a GPU fault (capture 007)
_BENIGN_ERR_FIELDS = ("addressing mode", "addressing_mode", "gsp firmware version", "gsp_firmware_version",
                      "display mode", "display_mode", "display active", "display_active",
                      "accounting mode", "accounting_mode", "virtualization mode", "virtualization_mode",
                      "host vgpu mode", "host_vgpu_mode", "relaxed ordering mode", "relaxed_ordering_mode",
                      "atomic caps inbound", "atomic_caps_inbound", "atomic caps outbound", "atomic_caps_outbound",
                      "sparse operation mode", "sparse_operation_mode", "latest timestamp", "latest_timestamp",
                      "latest duration", "latest_duration", "power smoothing", "power_smoothing",
                      "driver model", "current_dm", "pending_dm", "board part number", "board_part_number",
                      "fru part number", "gpu_fru_part_number", "c2c mode", "c2c_mode", "platform_info")

# ECC-level Yes/No flags (Blackwell and later print these under ECC Errors)
ECC_FLAGS = ("channel_repair_pending", "tpc_repair_pending", "unrepairable_memory")

_THROTTLE_ALIASES = {
    "hw_slowdown": "hw_slowdown", "hw_thermal_slowdown": "hw_thermal",
    "hw_power_brake_slowdown": "hw_power_brake", "hw_power_brake": "hw_power_brake",
    "sw_thermal_slowdown": "sw_thermal", "sw_power_cap": "sw_power_cap", "idle": "idle",
    "gpu_idle": "idle", "applications_clocks_setting": "applications_clocks_setting",
    "sync_boost": "sync_boost", "display_clock_setting": "display_clock_setting",
    "display_clocks_setting": "display_clock_setting", "hw_thermal": "hw_thermal",
    "sw_thermal": "sw_thermal",
}

# canonical keys stored as plain strings / ints / booleans on the record
_STR_KEYS = ("name", "serial", "uuid", "mig_mode", "mig_mode_pending", "ecc_mode", "recovery_action", "fabric_state", "fabric_status")
_INT_KEYS = ("minor_number", "temperature_c")
_BOOL_KEYS = ("reset_required", "drain_and_reset_recommended")


# ----------------------------------------------------------------------------------- values

def as_text(text):
    """Whatever a caller passed, as a str (None -> "")."""
    if isinstance(text, str):
        return text
    return "" if text is None else str(text)


def clean(raw):
    if raw is None:
        return ""
    return str(raw).strip()


def is_na(raw):
    return clean(raw).strip("[]").strip().lower() in _NA_VALUES


def err_of(raw):
    """The error marker a value reads ('unknown error', 'err!', ...) or None."""
    v = clean(raw).strip("[]").strip().lower()
    for m in _ERR_MARKERS:
        if v.startswith(m):
            return m
    return None


def to_int(raw):
    v = clean(raw).strip("[]").strip()
    m = re.match(r"^(-?\d+)(?:\.\d+)?\s*(?:[A-Za-z%()/]+\s*)?$", v)
    if not m:
        return None
    try:
        return int(m.group(1))
    except ValueError:
        return None


def to_bool(raw):
    v = clean(raw).strip("[]").strip().lower()
    if v in ("yes", "active", "enabled", "true", "on", "1"):
        return True
    if v in ("no", "not active", "disabled", "false", "off", "0"):
        return False
    return None


def to_str(raw):
    v = clean(raw)
    if is_na(v) or err_of(v):
        return None
    return v


def norm(name):
    return re.sub(r"\s+", " ", clean(name)).lower()


def src(source, ln):
    """'file:line' (or just the file when the line is unknown)."""
    return "%s:%d" % (source, ln) if ln else source


def split_csv(line):
    return [p.strip() for p in line.split(",")]


def looks_like_header(cols):
    """A CSV header line: field names, not values."""
    return bool(cols) and not re.match(r"^\d+$", cols[0]) and all(
        re.match(r"^[A-Za-z_][\w.]*(\s*\[[^\]]*\])?$", c) for c in cols if c)


def field_name(col):
    """'used_memory [MiB]' -> 'used_memory'."""
    if col.rstrip().endswith("]") and "[" in col:  # a unit: from the first '[' on (a regex was quadratic)
        col = col[:col.index("[")]
    return col.strip().lower()


# ----------------------------------------------------------------------------------- records

def empty_facts(fmt=None):
    return {"format": fmt, "driver_version": None, "cuda_version": None, "attached_gpus": None,
            "count": 0, "gpus": []}


def new_gpu(pci=None, index=None):
    return {
        "index": index, "pci": normalize_pci(pci) if pci else None, "uuid": None, "serial": None,
        "name": None, "minor_number": None, "ecc_mode": None,
        "ecc": {"volatile": {"correctable": None, "uncorrectable": None},
                "aggregate": {"correctable": None, "uncorrectable": None},
                "sram_threshold_exceeded": None},
        "retired_pages": {"single_bit": None, "double_bit": None, "pending": None},
        "remapped_rows": {"correctable": None, "uncorrectable": None, "pending": None, "failure": None},
        "reset_required": None, "drain_and_reset_recommended": None, "recovery_action": None,
        "throttle": {"hw_slowdown": None, "hw_power_brake": None, "hw_thermal": None, "sw_thermal": None},
        "temperature_c": None, "mig_mode": None, "mig_mode_pending": None, "fabric_state": None, "fabric_status": None,
        "errors": [], "nvlink_inactive": None, "nvlink_all_inactive": False, "nvlink_errors": None,
        "_ev": {}, "_strong": set(), "_nlines": 0,
    }


def note(g, key, ln, ev, strong=False):
    """Remember where ``key`` was read: the first line, or the first one with a non-zero/Yes value."""
    strong_keys = g.setdefault("_strong", set())
    if key not in g["_ev"] or (strong and key not in strong_keys):
        g["_ev"][key] = (ln, ev)
        if strong:
            strong_keys.add(key)


def _record_error(g, err, ln, ev, label):
    """A field reading Unknown Error / ERR! / GPU is lost, unless it is a benign optional one."""
    if norm(label.split(".")[-1].split("/")[-1]) in _BENIGN_ERR_FIELDS or norm(label) in _BENIGN_ERR_FIELDS:
        return
    if label not in g["errors"]:
        g["errors"].append(label)
    note(g, "errors", ln, ev)
    if err in ("gpu is lost", "gpu requires reset"):
        note(g, "errors_" + err.replace(" ", "_"), ln, ev)


def _store(g, key, raw):
    """Store one value under canonical ``key``; -> the value when it is a counter or flag (for
    the evidence), None otherwise; False when the key is not one we keep."""
    if key in _STR_KEYS:
        g[key] = to_str(raw)
        return None
    if key == "pci":
        v = to_str(raw)
        if v and PCI_RE.search(v):
            g["pci"] = normalize_pci(PCI_RE.search(v).group(0))
        return None
    if key in _INT_KEYS:
        g[key] = to_int(raw)
        return None
    if key in _BOOL_KEYS:
        g[key] = to_bool(raw)
        return None
    group, _, sub = key.partition(".")
    if group == "ecc":
        scope, _, sub = sub.partition(".")
        if scope == "flag":
            g["ecc"][sub] = val = to_bool(raw)
        else:
            g["ecc"][scope][sub] = val = to_int(raw)
        return val
    if group == "retired":
        if sub == "pending":
            val = to_bool(raw)
            if val is not None:  # several 'Pending ...' lines: any Yes wins
                g["retired_pages"]["pending"] = bool(g["retired_pages"]["pending"]) or val
            return val
        g["retired_pages"][sub] = val = to_int(raw)
        return val
    if group == "remap":
        g["remapped_rows"][sub] = val = to_bool(raw) if sub in ("pending", "failure") else to_int(raw)
        return val
    if group == "throttle":
        g["throttle"][sub] = val = to_bool(raw)
        return val
    return False


def assign(g, key, raw, ln, ev, label):
    """Store one field (canonical ``key``, or None for a field we only check for errors) read
    as ``raw`` on ``g``; record errors and evidence."""
    g["_nlines"] += 1
    err = err_of(raw)
    if err:
        _record_error(g, err, ln, ev, label)
        return
    if key is None:
        return
    val = _store(g, key, raw)
    if val is not False:
        note(g, key, ln, ev, strong=bool(val))


def ecc_sub(name):
    """'SRAM Uncorrectable SEC-DED' / 'sram_uncorrectable_secded' -> canonical ecc sub-key."""
    n = re.sub(r"[\s\-]+", "_", norm(name))
    n = n.replace("sec_ded", "secded")
    if n in ("sram_correctable", "sram_uncorrectable", "sram_uncorrectable_parity",
             "sram_uncorrectable_secded", "dram_correctable", "dram_uncorrectable"):
        return n
    return None


def throttle_key(name):
    n = re.sub(r"[\s\-.]+", "_", norm(name))
    for p in ("clocks_throttle_reason_", "clocks_event_reason_", "clocks_throttle_reasons_",
              "clocks_event_reasons_"):
        if n.startswith(p):
            n = n[len(p):]
    return _THROTTLE_ALIASES.get(n, n if re.match(r"^[a-z0-9_]+$", n) else None)


def finalize_gpu(g):
    """Derive the totals a format gives only in parts (SRAM parity + SEC-DED, SRAM + DRAM)."""
    for scope in ("volatile", "aggregate"):
        d = g["ecc"][scope]
        if d.get("sram_uncorrectable") is None and (d.get("sram_uncorrectable_parity") is not None
                                                    or d.get("sram_uncorrectable_secded") is not None):
            d["sram_uncorrectable"] = (d.get("sram_uncorrectable_parity") or 0) + \
                (d.get("sram_uncorrectable_secded") or 0)
            for k in ("sram_uncorrectable_parity", "sram_uncorrectable_secded"):
                if d.get(k):
                    note(g, "ecc.%s.sram_uncorrectable" % scope, *g["_ev"].get("ecc.%s.%s" % (scope, k), (0, "")))
        for kind in ("correctable", "uncorrectable"):
            parts = [k for k in ("sram_" + kind, "dram_" + kind) if d.get(k) is not None]
            if d.get(kind) is None and parts:
                d[kind] = sum(d[k] for k in parts)
            if d.get(kind):
                # evidence for the total: the first non-zero component line
                for k in parts:
                    if d.get(k):
                        note(g, "ecc.%s.%s" % (scope, kind), *g["_ev"].get("ecc.%s.%s" % (scope, k), (0, "")))
                        break
    return g


def public(g):
    return dict((k, v) for k, v in g.items() if not k.startswith("_"))


def ref(g):
    """The ``gpu`` member of a finding about record ``g``."""
    return gpu_ref(g.get("pci"), g.get("index"), g.get("uuid"))


def gpu_label(g):
    bits = []
    if g.get("index") is not None:
        bits.append("GPU %s" % g["index"])
    if g.get("pci"):
        bits.append(g["pci"])
    return " ".join(bits) or "GPU"


def ev(g, key):
    """(line, evidence) where ``key`` was read; (0, "") when it was not."""
    return g["_ev"].get(key, (0, ""))
