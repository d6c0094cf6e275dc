"""Parsers for nvidia-smi outputs: ``-q -x`` XML, ``-q`` text, the plain table (plus trailing
warnings, ``nvlink --status`` and ``-L``), ``--query-gpu`` CSV and ``--query-compute-apps`` CSV.

``parse_nvidia_smi(text, source, expected_gpus=None, thresholds=None)`` detects the format; the
GPU parsers (``parse_nvidia_smi_xml``, ``parse_nvidia_smi_q``, ``parse_nvidia_smi_table``,
``parse_query_gpu_csv``) are pure (text in, no I/O), never raise on garbage and return
``(facts, findings)``.  ``facts``::

    {"format": "xml" | "q" | "table" | "csv" | None, "driver_version": str | None,
     "cuda_version": str | None, "attached_gpus": int | None, "count": int,
     "gpus": [{"index", "pci", "uuid", "serial", "name", "minor_number", "ecc_mode",
               "ecc": {"volatile": {"correctable", "uncorrectable", "sram_correctable", ...},
                       "aggregate": {...}, "sram_threshold_exceeded": bool | None, ...},
               "retired_pages": {"single_bit", "double_bit", "pending"},
               "remapped_rows": {"correctable", "uncorrectable", "pending", "failure"},
               "reset_required", "drain_and_reset_recommended", "recovery_action",
               "throttle": {"hw_slowdown", "hw_power_brake", "hw_thermal", "sw_thermal", ...},
               "temperature_c", "mig_mode", "fabric_state", "fabric_status",
               "errors": [field names reading Unknown Error / ERR! / GPU is lost],
               "nvlink_inactive": [link numbers] | None}]}

``N/A`` / ``[Not Supported]`` read as None (never 0, never a finding).  The GPU ``index`` is the
nvidia-smi index: explicit in the table, CSV and nvlink output; for ``-q``/XML it is the order in
the file (nvidia-smi enumerates by PCI bus id), rebuilt around GPUs it could not open, and None
when the file holds fewer GPUs than 'Attached GPUs' for another reason (``-i N``, an excerpt).
``Minor Number`` is the /dev/nvidiaN number, *not* the nvidia-smi index (the RTX 4090 capture
shows them differ), so it is kept apart as ``minor_number``.

``parse_compute_apps_csv(text, source)`` returns the process list the remediation ladder checks
before a GPU reset (``parse_compute_apps_csv_findings`` also returns findings).

Thresholds (``thresholds={...}`` overrides ``DEFAULT_THRESHOLDS``): aggregate uncorrectable SRAM
ECC above 4 -> RMA, GPU temperature >= 85 C -> warning, 60 retired pages -> RMA.

Standard library only, relative imports only, Python 3.9+ (runs inside Ansible payloads).
"""

import bisect
import re

from .findings import gpu_ref, iter_lines, make_finding, normalize_pci, strip_ansi

DEFAULT_THRESHOLDS = {
    # more than this many aggregate (lifetime) uncorrectable SRAM ECC errors -> RMA
    "sram_uncorrectable_rma": 4,
    # GPU core temperature at or above this (C) -> warning
    "temperature_c": 85,
    # this many retired pages (single + double bit, pre-Ampere page retirement) -> RMA
    "retired_pages_rma": 60,
}

_PCI_TXT = r"(?:[0-9A-Fa-f]{4,8}:)?[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]"
_GPU_HDR_RE = re.compile(r"^\s*GPU\s+(" + _PCI_TXT + r")\s*$")
_PCI_RE = re.compile(_PCI_TXT)
_KV_RE = re.compile(r"^(\s*)([^:]*?\S)\s*:\s*(.*?)\s*$")
_Q_GLOBAL_KEYS = ("timestamp", "driver version", "cuda version", "attached gpus", "cuda driver version")

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

# table columns whose ERR! points at the GPU itself (ERR! in Fan/Perf/Disp.A alone does not)
_ERR_HW_FIELDS = ("Name", "Temp", "Pwr:Usage/Cap", "Volatile Uncorr. ECC", "Memory-Usage", "GPU-Util", "Bus-Id")

# ECC-level Yes/No flags (Blackwell and later print these under ECC Errors)
_ECC_FLAGS = ("channel_repair_pending", "tpc_repair_pending", "unrepairable_memory")

_THROTTLE_SECTIONS = ("clocks throttle reasons", "clocks event reasons", "clocks_throttle_reasons",
                      "clocks_event_reasons")
_THROTTLE_ALIASES = {
    "hw_slowdown": "hw_slowdown", "hw_thermal_slowdown": "hw_thermal",
    "hw_power_brake_slowdown": "hw_power_brake", "hw_power_brake": "hw_power_brake",
    "sw_thermal_slowdown": "sw_thermal", "sw_power_cap": "sw_power_cap", "idle": "idle",
    "gpu_idle": "idle", "applications_clocks_setting": "applications_clocks_setting",
    "sync_boost": "sync_boost", "display_clock_setting": "display_clock_setting",
    "display_clocks_setting": "display_clock_setting", "hw_thermal": "hw_thermal",
    "sw_thermal": "sw_thermal",
}


# ----------------------------------------------------------------------------------- values

def _clean(raw):
    if raw is None:
        return ""
    return str(raw).strip()


def _is_na(raw):
    v = _clean(raw).strip("[]").strip().lower()
    return v in _NA_VALUES


def _err_of(raw):
    """The error marker a value reads ('unknown error', 'err!', ...) or None."""
    v = _clean(raw).strip("[]").strip().lower()
    for m in _ERR_MARKERS:
        if v.startswith(m):
            return m
    return None


def _to_int(raw):
    v = _clean(raw).strip("[]").strip()
    m = re.match(r"^(-?\d+)(?:\.\d+)?\s*(?:[A-Za-z%()/]+\s*)?$", v)
    if not m:
        return None
    try:
        return int(m.group(1))
    except ValueError:
        return None


def _to_bool(raw):
    v = _clean(raw).strip("[]").strip().lower()
    if v in ("yes", "active", "enabled", "true", "on", "1"):
        return True
    if v in ("no", "not active", "disabled", "false", "off", "0"):
        return False
    return None


def _to_str(raw):
    v = _clean(raw)
    if _is_na(v) or _err_of(v):
        return None
    return v


def _norm(name):
    return re.sub(r"\s+", " ", _clean(name)).lower()


def _src(source, ln):
    return "%s:%d" % (source, ln) if ln else source


# ----------------------------------------------------------------------------------- records

def _empty_facts(fmt=None):
    return {"format": fmt, "driver_version": None, "cuda_version": None, "attached_gpus": None,
            "count": 0, "gpus": []}


def _new_gpu(pci=None, index=None):
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
        "temperature_c": None, "mig_mode": None, "fabric_state": None, "fabric_status": None,
        "errors": [], "nvlink_inactive": None,
        "_ev": {}, "_strong": set(), "_nlines": 0,
    }


def _note(g, key, ln, ev, strong=False):
    """Remember where ``key`` was read: the first line, or the first one with a non-zero/Yes value."""
    strong_keys = g.setdefault("_strong", set())
    if key not in g["_ev"] or (strong and key not in strong_keys):
        g["_ev"][key] = (ln, ev)
        if strong:
            strong_keys.add(key)


def _assign(g, key, raw, ln, ev, label):
    """Store one field (canonical ``key``) read as ``raw`` on ``g``; record errors and evidence."""
    g["_nlines"] += 1
    err = _err_of(raw)
    if err:
        if _norm(label.split(".")[-1].split("/")[-1]) not in _BENIGN_ERR_FIELDS and \
                _norm(label) not in _BENIGN_ERR_FIELDS:
            if label not in g["errors"]:
                g["errors"].append(label)
            _note(g, "errors", ln, ev)
            if err in ("gpu is lost", "gpu requires reset"):
                _note(g, "errors_" + err.replace(" ", "_"), ln, ev)
        return
    if key is None:
        return
    val = None
    if key in ("name", "serial", "uuid", "mig_mode", "ecc_mode", "recovery_action", "fabric_state",
               "fabric_status"):
        g[key] = _to_str(raw)
    elif key == "pci":
        v = _to_str(raw)
        if v and _PCI_RE.search(v):
            g["pci"] = normalize_pci(_PCI_RE.search(v).group(0))
    elif key in ("minor_number", "temperature_c"):
        g[key] = _to_int(raw)
    elif key in ("reset_required", "drain_and_reset_recommended"):
        g[key] = _to_bool(raw)
    elif key.startswith("ecc."):
        _, scope, sub = key.split(".", 2)
        if scope == "flag":
            g["ecc"][sub] = val = _to_bool(raw)
        else:
            g["ecc"][scope][sub] = val = _to_int(raw)
    elif key.startswith("retired."):
        sub = key.split(".", 1)[1]
        if sub == "pending":
            val = _to_bool(raw)
            cur = g["retired_pages"]["pending"]
            if val is not None:
                g["retired_pages"]["pending"] = bool(cur) or val
        else:
            g["retired_pages"][sub] = val = _to_int(raw)
    elif key.startswith("remap."):
        sub = key.split(".", 1)[1]
        if sub in ("pending", "failure"):
            g["remapped_rows"][sub] = val = _to_bool(raw)
        else:
            g["remapped_rows"][sub] = val = _to_int(raw)
    elif key.startswith("throttle."):
        g["throttle"][key.split(".", 1)[1]] = val = _to_bool(raw)
    else:
        return
    _note(g, key, ln, ev, strong=bool(val))


def _ecc_sub(name):
    """'SRAM Uncorrectable SEC-DED' / 'sram_uncorrectable_secded' -> canonical ecc sub-key."""
    n = re.sub(r"[\s\-]+", "_", _norm(name))
    n = n.replace("sec_ded", "secded")
    if n in ("sram_correctable", "sram_uncorrectable", "sram_uncorrectable_parity",
             "sram_uncorrectable_secded", "dram_correctable", "dram_uncorrectable"):
        return n
    return None


def _throttle_key(name):
    n = re.sub(r"[\s\-.]+", "_", _norm(name))
    for p in ("clocks_throttle_reason_", "clocks_event_reason_", "clocks_throttle_reasons_",
              "clocks_event_reasons_"):
        if n.startswith(p):
            n = n[len(p):]
    return _THROTTLE_ALIASES.get(n, n if re.match(r"^[a-z0-9_]+$", n) else None)


def _finalize_gpu(g):
    for scope in ("volatile", "aggregate"):
        d = g["ecc"][scope]
        if d.get("sram_uncorrectable") is None and (d.get("sram_uncorrectable_parity") is not None
                                                    or d.get("sram_uncorrectable_secded") is not None):
            d["sram_uncorrectable"] = (d.get("sram_uncorrectable_parity") or 0) + \
                (d.get("sram_uncorrectable_secded") or 0)
            for k in ("sram_uncorrectable_parity", "sram_uncorrectable_secded"):
                if d.get(k):
                    _note(g, "ecc.%s.sram_uncorrectable" % scope, *g["_ev"].get("ecc.%s.%s" % (scope, k), (0, "")))
        for kind in ("correctable", "uncorrectable"):
            parts = [k for k in ("sram_" + kind, "dram_" + kind) if d.get(k) is not None]
            if d.get(kind) is None and parts:
                d[kind] = sum(d[k] for k in parts)
            if d.get(kind):
                # evidence for the total: the first non-zero component line
                for k in parts:
                    if d.get(k):
                        _note(g, "ecc.%s.%s" % (scope, kind), *g["_ev"].get("ecc.%s.%s" % (scope, k), (0, "")))
                        break
    return g


def _public(g):
    return dict((k, v) for k, v in g.items() if not k.startswith("_"))

# ----------------------------------------------------------------------------------- findings

def _ref(g):
    return gpu_ref(g.get("pci"), g.get("index"), g.get("uuid"))


def _gpu_label(g):
    bits = []
    if g.get("index") is not None:
        bits.append("GPU %s" % g["index"])
    if g.get("pci"):
        bits.append(g["pci"])
    return " ".join(bits) or "GPU"


def _ev(g, key):
    return g["_ev"].get(key, (0, ""))


def _gpu_findings(g, source, th):
    out = []
    ref = _ref(g)
    label = _gpu_label(g)

    def add(key, category, severity, kind, message, action, rung):
        ln, ev = _ev(g, key)
        out.append(make_finding(category, severity, kind, message, action, evidence=ev,
                                source=_src(source, ln), gpu=ref, rung=rung))

    ecc = g["ecc"]
    vu = ecc["volatile"].get("uncorrectable")
    if vu:
        add("ecc.volatile.uncorrectable", "gpu_hardware", "critical", "ecc_uncorrectable_volatile",
            "%s has %d uncorrectable ECC error(s) since the driver loaded (volatile)" % (label, vu),
            "Drain the node, stop the job on this GPU and reset it (nvidia-smi -r) or reboot; "
            "then check remapped rows / retired pages and the aggregate counters", "gpu_reset")
    rr = g["remapped_rows"]
    if rr.get("failure"):
        add("remap.failure", "gpu_hardware", "critical", "row_remap_failure",
            "%s: row remapping failure occurred (no spare rows left for a bad memory row)" % label,
            "Drain the node and RMA the GPU", "rma")
    if rr.get("pending"):
        add("remap.pending", "gpu_hardware", "critical", "row_remap_pending",
            "%s: a row remap is pending; reset GPU to apply the pending row remap" % label,
            "Drain the node, then reset the GPU (nvidia-smi -r -i <id>) or reboot so the remap takes "
            "effect; RMA if the same row fails again (Xid 64) after the reset", "gpu_reset")
    rp = g["retired_pages"]
    if rp.get("pending"):
        crit = bool(vu) or bool(rp.get("double_bit"))
        add("retired.pending", "gpu_hardware", "critical" if crit else "warning", "retired_pages_pending",
            "%s: page retirement is pending (a bad memory page stays in use until the GPU is reset)" % label,
            "Drain the node and reset the GPU or reboot to retire the page", "gpu_reset")
    nret = (rp.get("single_bit") or 0) + (rp.get("double_bit") or 0)
    if nret and nret >= th["retired_pages_rma"]:
        add("retired.double_bit" if rp.get("double_bit") else "retired.single_bit", "gpu_hardware",
            "critical", "retired_pages_limit",
            "%s has %d retired pages (RMA threshold %d)" % (label, nret, th["retired_pages_rma"]),
            "Drain the node and RMA the GPU", "rma")
    agg_sram = ecc["aggregate"].get("sram_uncorrectable")
    if agg_sram is not None and agg_sram > th["sram_uncorrectable_rma"]:
        add("ecc.aggregate.sram_uncorrectable", "gpu_hardware", "critical", "ecc_sram_uncorrectable_rma",
            "%s has %d aggregate (lifetime) uncorrectable SRAM ECC errors, above the RMA threshold of %d"
            % (label, agg_sram, th["sram_uncorrectable_rma"]),
            "Drain the node and RMA the GPU (report serial and the nvidia-smi -q ECC section)", "rma")
    if ecc.get("sram_threshold_exceeded"):
        add("ecc.flag.sram_threshold_exceeded", "gpu_hardware", "critical", "ecc_sram_threshold_exceeded",
            "%s reports 'SRAM Threshold Exceeded': too many uncorrectable SRAM errors" % label,
            "Drain the node and RMA the GPU", "rma")
    for flag, what in (("channel_repair_pending", "an HBM channel repair"), ("tpc_repair_pending", "a TPC repair")):
        if ecc.get(flag):
            add("ecc.flag." + flag, "gpu_hardware", "critical", flag,
                "%s: %s is pending; reset the GPU to apply it" % (label, what),
                "Drain the node, then reset the GPU (nvidia-smi -r -i <id>) or reboot", "gpu_reset")
    if ecc.get("unrepairable_memory"):
        add("ecc.flag.unrepairable_memory", "gpu_hardware", "critical", "unrepairable_memory",
            "%s reports unrepairable memory" % label, "Drain the node and RMA the GPU", "rma")
    fs, fst = _norm(g.get("fabric_state") or ""), _norm(g.get("fabric_status") or "")
    if (fs and fs not in ("completed", "not supported")) or (fst and fst != "success"):
        add("fabric_state" if fs and fs != "completed" else "fabric_status", "driver", "warning", "fabric_not_ready",
            "%s: NVLink fabric not ready (state %s, status %s): CUDA/NCCL cannot use this GPU"
            % (label, g.get("fabric_state"), g.get("fabric_status")),
            "Check nvidia-fabricmanager (systemctl status nvidia-fabricmanager, its log) and NVSwitch health; "
            "restart it or reboot", "reboot")
    if g.get("reset_required"):
        add("reset_required", "gpu_hardware", "critical", "gpu_reset_required",
            "%s reports 'GPU requires reset'" % label,
            "Drain the node and reset the GPU (nvidia-smi -r -i <id>) or reboot", "gpu_reset")
    elif g.get("drain_and_reset_recommended"):
        add("drain_and_reset_recommended", "gpu_hardware", "warning", "gpu_drain_and_reset_recommended",
            "%s reports 'Drain and Reset Recommended'" % label,
            "Drain the node, then reset the GPU when idle", "gpu_reset")
    ra = g.get("recovery_action")
    n = re.sub(r"[\s_]+", "_", _norm(ra or ""))
    if n and n not in ("none", "n/a"):
        # NVML recovery actions: Reset, Reboot, Drain P2P, Drain and Reset
        p2p = n == "drain_p2p"
        rung = "reboot" if "reboot" in n else ("drain" if p2p else "gpu_reset")
        add("recovery_action", "gpu_hardware", "warning" if p2p else "critical", "gpu_recovery_action",
            "%s: the driver asks for recovery action '%s'" % (label, ra),
            "Drain the node and perform the requested recovery (%s)" % ra, rung)
    t = g.get("temperature_c")
    if t is not None and t >= th["temperature_c"]:
        add("temperature_c", "gpu_hardware", "warning", "gpu_temperature_high",
            "%s temperature %d C is at or above %d C" % (label, t, th["temperature_c"]),
            "Check cooling (fans, airflow, inlet temperature) and the BMC; drain if it keeps throttling",
            "drain")
    errs = g.get("errors") or []
    if errs and g.get("_table") and not any(f in _ERR_HW_FIELDS for f in errs):
        # ERR! only in the fan/perf/display columns: a sensor read failed, no GPU fault is proven (capture 008)
        add("errors", "unknown", "warning", "nvsmi_err_field",
            "%s: nvidia-smi shows ERR! for %s" % (label, ", ".join(errs)),
            "Check the fan/sensor with nvidia-smi -q and the BMC; drain if other GPU errors follow", "none")
    elif errs:
        lost = "errors_gpu_is_lost" in g["_ev"]
        needs_reset = "errors_gpu_requires_reset" in g["_ev"]
        sev = "critical" if (lost or needs_reset) else "warning"
        rung = "reboot" if lost else "gpu_reset"
        add("errors", "gpu_hardware", sev, "nvml_field_error",
            "%s: nvidia-smi could not read %s (%s)" % (
                label, ", ".join(errs[:6]) + (" ..." if len(errs) > 6 else ""),
                "GPU is lost" if lost else ("GPU requires reset" if needs_reset else "Unknown Error/ERR!")),
            "Check dmesg for Xid 79/48/74 on this GPU; drain the node and reset the GPU or reboot",
            rung)
    inactive = g.get("nvlink_inactive")
    if inactive:
        add("nvlink", "gpu_hardware", "warning", "nvlink_inactive",
            "%s has inactive NVLink link(s) %s" % (label, ", ".join(str(i) for i in inactive)),
            "Drain the node; reboot so the links retrain; if still inactive, RMA the GPU/baseboard",
            "reboot")
    return out


def _host_findings(gpus, source):
    """Throttle findings, folded into one when every GPU on the host shows the same thing."""
    out = []

    def hw_on(g):
        t = g["throttle"]
        if t.get("hw_slowdown") is not None:
            return bool(t.get("hw_slowdown"))
        return bool(t.get("hw_power_brake") or t.get("hw_thermal"))

    hw = [g for g in gpus if hw_on(g)]
    if hw:
        brake = [g for g in hw if g["throttle"].get("hw_power_brake")]
        therm = [g for g in hw if g["throttle"].get("hw_thermal")]
        if len(gpus) >= 2 and len(hw) == len(gpus):
            g0 = hw[0]
            key = "throttle.hw_power_brake" if brake else ("throttle.hw_thermal" if therm else "throttle.hw_slowdown")
            ln, ev = _ev(g0, key)
            why = "power brake" if len(brake) == len(gpus) else ("thermal" if len(therm) == len(gpus) else "HW")
            out.append(make_finding(
                "unknown", "warning", "hw_slowdown_all_gpus",
                "All %d GPUs report HW Slowdown (HW Power Brake on %d, HW Thermal on %d): a %s signal for the "
                "whole node (PSU/BMC/cooling), not one faulty GPU" % (len(gpus), len(brake), len(therm), why),
                "Drain the node; check PSU/BMC event log (ipmitool sel) and chassis cooling; re-check "
                "nvidia-smi -q -d PERFORMANCE", evidence=ev, source=_src(source, ln), rung="drain"))
        else:
            for g in hw:
                key = "throttle.hw_power_brake" if g in brake else (
                    "throttle.hw_thermal" if g in therm else "throttle.hw_slowdown")
                ln, ev = _ev(g, key)
                sub = [n for n, on in (("power brake", g in brake), ("thermal", g in therm)) if on]
                out.append(make_finding(
                    "gpu_hardware", "warning", "hw_slowdown",
                    "%s clocks are held down by HW Slowdown%s; this rank will be slow" % (
                        _gpu_label(g), (" (%s)" % ", ".join(sub)) if sub else ""),
                    "Check this GPU's temperature, power and the BMC log; drain the node if it persists",
                    evidence=ev, source=_src(source, ln), gpu=_ref(g), rung="drain"))
    for g in gpus:
        t = g["throttle"]
        if g in hw:
            continue
        if t.get("hw_power_brake") or t.get("hw_thermal"):
            key = "throttle.hw_power_brake" if t.get("hw_power_brake") else "throttle.hw_thermal"
            ln, ev = _ev(g, key)
            out.append(make_finding(
                "gpu_hardware", "info", "hw_slowdown_subreason",
                "%s reports a HW slowdown sub-reason while 'HW Slowdown' itself is not active (transient)"
                % _gpu_label(g), "Re-check nvidia-smi -q -d PERFORMANCE; act only if HW Slowdown persists",
                evidence=ev, source=_src(source, ln), gpu=_ref(g), rung="none"))
    for g in gpus:
        if g["throttle"].get("sw_thermal"):
            ln, ev = _ev(g, "throttle.sw_thermal")
            out.append(make_finding(
                "gpu_hardware", "info", "sw_thermal_slowdown",
                "%s: SW Thermal Slowdown active (driver lowering clocks for temperature)" % _gpu_label(g),
                "Check GPU/memory temperature and cooling if it persists",
                evidence=ev, source=_src(source, ln), gpu=_ref(g), rung="none"))
    return out


_FAILURES = (
    (re.compile(r"NVIDIA-SMI has failed because it couldn'?t communicate with the NVIDIA driver", re.I),
     "driver", "critical", "nvsmi_driver_unreachable", "reboot",
     "nvidia-smi cannot talk to the NVIDIA driver (module not loaded, crashed or mismatched)",
     "Drain the node; check dmesg and lsmod for nvidia, reload the driver or reboot"),
    (re.compile(r"Failed to initialize NVML:?\s*Insufficient Permissions", re.I),
     "unknown", "warning", "nvml_permission", "none",
     "NVML refused the probe: insufficient permissions (container or non-root user)",
     "Re-run the probe as root / with the GPU devices mounted"),
    (re.compile(r"Failed to initialize NVML:?\s*(.*)", re.I),
     "driver", "critical", "nvml_init_failed", "reboot",
     "NVML failed to initialise (e.g. driver/library version mismatch after an upgrade)",
     "Drain the node; reboot so the loaded kernel module matches the user-space driver"),
    (re.compile(r"couldn'?t find libnvidia-ml\.so", re.I),
     "driver", "critical", "nvml_missing", "reboot",
     "libnvidia-ml.so is missing: the NVIDIA user-space driver is not installed",
     "Drain the node and reinstall the NVIDIA driver"),
    (re.compile(r"^\s*No devices were found", re.I),
     "driver", "critical", "nvsmi_no_devices", "reboot",
     "The NVIDIA driver is loaded but sees no GPU",
     "Drain the node; check dmesg for RmInitAdapter/Xid 79 and lspci for the GPUs; reboot; RMA if gone"),
    (re.compile(r"GPU access blocked by the operating system", re.I),
     "driver", "critical", "nvsmi_access_blocked", "reboot",
     "The operating system blocks access to the GPU",
     "Drain the node; check dmesg and the driver state; reboot"),
)
_HANDLE_RE = re.compile(r"Unable to determine the device handle for (?:GPU|gpu)\s*(" + _PCI_TXT + r")?\s*:?\s*(.*)",
                        re.I)
_INFOROM_RE = re.compile(r"infoROM is corrupted at gpu\s+(" + _PCI_TXT + r")", re.I)


def _scan_failures(lines, source, gpus, lost_index=None):
    """Findings for the error lines nvidia-smi prints instead of (or next to) its output."""
    lost_index = lost_index or {}
    out = []
    by_pci = dict((g["pci"], g) for g in gpus if g.get("pci"))
    handle_pcis = []
    seen = set()
    for ln, line in lines:
        s = line.strip()
        if not s or s.startswith("<"):
            continue
        for rx, cat, sev, kind, rung, msg, act in _FAILURES:
            m = rx.search(s)
            if m and kind not in seen:
                seen.add(kind)
                detail = ""
                if kind == "nvml_init_failed" and m.groups() and m.group(1):
                    detail = ": " + m.group(1).strip()
                out.append(make_finding(cat, sev, kind, msg + detail, act, evidence=s,
                                        source=_src(source, ln), rung=rung))
                break
        m = _HANDLE_RE.search(s)
        if m:
            pci = normalize_pci(m.group(1)) if m.group(1) else None
            why = (m.group(2) or "").strip()
            g = by_pci.get(pci)
            ref = gpu_ref(pci, g.get("index") if g else lost_index.get(pci), g.get("uuid") if g else None)
            wl = why.lower()
            if "permission" in wl:
                out.append(make_finding("unknown", "warning", "gpu_handle_permission",
                                        "nvidia-smi lacks permission to open GPU %s" % (pci or "?"),
                                        "Re-run the probe as root", evidence=s, source=_src(source, ln),
                                        gpu=ref, rung="none"))
                continue
            handle_pcis.append(pci)
            rung = "gpu_reset" if "requires reset" in wl else "reboot"
            out.append(make_finding(
                "gpu_hardware", "critical", "gpu_lost" if "lost" in wl else "gpu_handle_error",
                "nvidia-smi cannot open GPU %s (%s): the GPU is lost or wedged" % (pci or "?", why or "error"),
                "Drain the node; check dmesg for Xid 79 (fallen off the bus)/Xid 48/74; reboot; RMA if it "
                "recurs", evidence=s, source=_src(source, ln), gpu=ref, rung=rung))
            continue
        m = _INFOROM_RE.search(s)
        if m:
            pci = normalize_pci(m.group(1))
            g = by_pci.get(pci)
            out.append(make_finding(
                "gpu_hardware", "warning", "inforom_corrupted",
                "infoROM is corrupted on GPU %s%s" % (pci, (" (index %s)" % g["index"]) if g and g.get("index")
                                                       is not None else ""),
                "Drain the node and open an RMA for this GPU (report its serial number)",
                evidence=s, source=_src(source, ln),
                gpu=gpu_ref(pci, g.get("index") if g else None, g.get("uuid") if g else None), rung="rma"))
    return out, handle_pcis


def _wrap_up(facts, gpus, lines, source, expected_gpus, thresholds, parse_findings, attached_ln=None,
             lost_index=None):
    """Shared tail of the GPU parsers: finalize, findings, expected-count check, strip internals."""
    th = dict(DEFAULT_THRESHOLDS)
    if thresholds:
        th.update(thresholds)
    findings = list(parse_findings)
    for g in gpus:
        _finalize_gpu(g)
    fail, handle_pcis = _scan_failures(lines, source, gpus, lost_index)
    findings.extend(fail)
    for g in gpus:
        findings.extend(_gpu_findings(g, source, th))
    findings.extend(_host_findings(gpus, source))
    facts["gpus"] = [_public(g) for g in gpus]
    facts["count"] = len(gpus)
    driver_down = any(f["category"] == "driver" for f in fail)
    if expected_gpus and not driver_down:
        try:
            expected = int(expected_gpus)
        except (TypeError, ValueError):
            expected = 0
        seen = len(gpus)
        if facts.get("attached_gpus") is not None and facts["attached_gpus"] > seen:
            seen = facts["attached_gpus"]  # filtered/truncated output: trust the header count
        known = set(g["pci"] for g in gpus if g.get("pci"))
        # GPUs nvidia-smi could not open already carry their own critical finding
        lost = len(set(p for p in handle_pcis if p not in known))
        missing = expected - seen - lost
        if missing > 0:
            ln, ev = attached_ln if attached_ln else (0, "")
            findings.append(make_finding(
                "gpu_hardware", "critical", "gpu_missing",
                "GPU missing (fallen off the bus?): nvidia-smi shows %d of %d expected GPUs" % (seen, expected),
                "Drain the node; check dmesg for Xid 79 and lspci for the missing GPU; reboot; RMA if it stays "
                "missing", evidence=ev, source=_src(source, ln), rung="reboot"))
    return facts, findings


def _unparseable(fmt, text, source, what):
    facts = _empty_facts(fmt)
    lines = list(iter_lines(text))
    fail, _ = _scan_failures(lines, source, [])
    if fail:
        return facts, fail
    if not any(line.strip() for _, line in lines):
        return facts, [make_finding("unknown", "warning", "nvsmi_empty",
                                    "nvidia-smi produced no output (hung, killed or not installed?)",
                                    "Re-run nvidia-smi by hand on the node; check that the driver responds",
                                    source=source, rung="none")]
    first = next(((n, l) for n, l in lines if l.strip()), (0, ""))
    return facts, [make_finding("unknown", "warning", "nvsmi_unparseable",
                                "Could not parse the output as %s" % what,
                                "Look at the raw output; re-run the probe", evidence=first[1][:200],
                                source=_src(source, first[0]), rung="none")]


# ----------------------------------------------------------------------------------- -q text

def _lost_pcis(lines, gpus):
    """PCIs nvidia-smi printed 'Unable to determine the device handle' for, not among ``gpus``."""
    known = set(g["pci"] for g in gpus if g.get("pci"))
    out = []
    for _, line in lines:
        m = _HANDLE_RE.search(line)
        if m and m.group(1) and "permission" not in (m.group(2) or "").lower():
            p = normalize_pci(m.group(1))
            if p not in known and p not in out:
                out.append(p)
    return out


def _index_fewer_sections(gpus, lines, attached):
    """Fewer sections than 'Attached GPUs'.  When the gap is exactly the GPUs nvidia-smi could not
    open (it enumerates by PCI bus id), rebuild the indices around them -> ({pci: index} of the lost
    GPUs, True); otherwise (``-i N``, an excerpt) the file order is not the index -> ({}, False)."""
    lost = _lost_pcis(lines, gpus)
    if lost and len(gpus) + len(lost) == attached and all(g.get("pci") for g in gpus):
        order = sorted([g["pci"] for g in gpus] + lost)
        for g in gpus:
            g["index"] = order.index(g["pci"])
        return dict((p, order.index(p)) for p in lost), True
    _drop_order_index(gpus)
    return {}, False


def _drop_order_index(gpus):
    """Fewer sections than 'Attached GPUs' (``-i N``, excerpt, MIG): file order is not the index."""
    for g in gpus:
        g["index"] = None

def _q_key(path, key):
    """Map a -q field (section path within the GPU, leaf key; normalised) to a canonical key."""
    sec = path[0] if path else None
    if sec is None:
        return {"product name": "name", "serial number": "serial", "gpu uuid": "uuid",
                "minor number": "minor_number", "gpu recovery action": "recovery_action"}.get(key)
    if sec == "pci" and key == "bus id":
        return "pci"
    if sec == "mig mode" and key == "current":
        return "mig_mode"
    if sec == "ecc mode" and key == "current":
        return "ecc_mode"
    if sec == "gpu reset status":
        if key == "reset required":
            return "reset_required"
        if key.startswith("drain and reset"):
            return "drain_and_reset_recommended"
        return None
    if sec == "ecc errors" and len(path) == 1:
        sub = re.sub(r"\s+", "_", key)
        return "ecc.flag." + sub if sub in _ECC_FLAGS else None
    if sec == "fabric" and len(path) == 1 and key in ("state", "status"):
        return "fabric_" + key
    if sec == "ecc errors" and len(path) >= 2 and path[1] in ("volatile", "aggregate"):
        scope = path[1]
        if len(path) >= 3 and path[2] in ("single bit", "double bit"):
            if key == "total":
                return "ecc.%s.%s" % (scope, "correctable" if path[2] == "single bit" else "uncorrectable")
            return None
        if key == "sram threshold exceeded":
            return "ecc.flag.sram_threshold_exceeded"
        sub = _ecc_sub(key)
        return "ecc.%s.%s" % (scope, sub) if sub else None
    if sec == "retired pages":
        if key.startswith("single bit"):
            return "retired.single_bit"
        if key.startswith("double bit"):
            return "retired.double_bit"
        if key.startswith("pending"):
            return "retired.pending"
        return None
    if sec == "remapped rows":
        if key.startswith("correctable"):
            return "remap.correctable"
        if key.startswith("uncorrectable"):
            return "remap.uncorrectable"
        if key == "pending":
            return "remap.pending"
        if key.startswith("remapping failure"):
            return "remap.failure"
        return None
    if sec in _THROTTLE_SECTIONS:
        t = _throttle_key(key)
        return "throttle." + t if t else None
    if sec == "temperature" and key == "gpu current temp":
        return "temperature_c"
    return None


def parse_nvidia_smi_q(text, source="nvidia-smi-q.txt", expected_gpus=None, thresholds=None):
    """Parse ``nvidia-smi -q`` text (whole, or ``-d ECC,PAGE_RETIREMENT,...``, or an excerpt)."""
    try:
        return _parse_q(text, source, expected_gpus, thresholds)
    except Exception as exc:  # never a traceback on garbage
        facts, f = _unparseable("q", text if isinstance(text, str) else "", source, "nvidia-smi -q")
        return facts, f + [make_finding("unknown", "info", "nvsmi_parser_error",
                                        "internal parser error: %s" % exc.__class__.__name__,
                                        "Report this capture to the gpu-runbook maintainers",
                                        source=source, rung="none")]


def _parse_q(text, source, expected_gpus, thresholds):
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    lines = list(iter_lines(text))
    facts = _empty_facts("q")
    gpus = []
    g = None
    base = 0
    stack = []  # [(indent, normalised name, original name)]
    attached_ln = None
    parse_findings = []
    for ln, raw in lines:
        line = raw.expandtabs(4)
        if not line.strip():
            continue
        m = _GPU_HDR_RE.match(line)
        if m:
            g = _new_gpu(m.group(1), len(gpus))
            _note(g, "header", ln, line.strip())
            gpus.append(g)
            base = len(line) - len(line.lstrip())
            stack = []
            continue
        indent = len(line) - len(line.lstrip())
        kv = _KV_RE.match(line)
        if kv:
            key = _norm(kv.group(2))
            val = kv.group(3) or ""
            if key in _Q_GLOBAL_KEYS and (g is None or indent <= base):
                if key == "driver version":
                    facts["driver_version"] = _to_str(val)
                elif key in ("cuda version", "cuda driver version") and facts["cuda_version"] is None:
                    facts["cuda_version"] = _to_str(val)
                elif key == "attached gpus":
                    facts["attached_gpus"] = _to_int(val)
                    attached_ln = (ln, line.strip())
                continue
            while stack and stack[-1][0] >= indent:
                stack.pop()
            path = tuple(s[1] for s in stack)
            if g is None:
                if _q_key(path, key) is None:
                    continue  # an error line or noise before any GPU
                g = _new_gpu(None, None)  # an excerpt without its 'GPU <pci>' header (capture 048)
                gpus.append(g)
                base = -1
            if not path and key == "processes":
                g["_ev"]["_end"] = (ln, "")  # a full -q GPU section ends with 'Processes'
            label = ".".join([s[2] for s in stack] + [kv.group(2).strip()])
            _assign(g, _q_key(path, key), val, ln, line.strip(), label)
            continue
        # a section header (no colon), or noise like '[...]'
        name = line.strip()
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if g is not None and not stack and _norm(name) == "processes":
            g["_ev"]["_end"] = (ln, "")
        stack.append((indent, _norm(name), name))
    truncated = False
    if len(gpus) >= 2:
        sizes = sorted(x["_nlines"] for x in gpus[:-1])
        med = sizes[len(sizes) // 2]
        ended = all("_end" in x["_ev"] for x in gpus[:-1])
        if (ended and "_end" not in gpus[-1]["_ev"]) or (med >= 20 and gpus[-1]["_nlines"] < med // 2):
            truncated = True
            hdr = gpus[-1]["_ev"].get("header", (0, ""))
            parse_findings.append(make_finding(
                "unknown", "info", "nvsmi_truncated",
                "The last GPU section is much shorter than the others: output looks cut off",
                "Re-capture nvidia-smi -q", evidence=hdr[1], source=_src(source, hdr[0]), rung="none"))
    # 'Attached GPUs : 8' but fewer sections: lost GPUs, filtered (-i N) or elided output
    lost_index = {}
    if not truncated and facts["attached_gpus"] is not None and 0 < len(gpus) < facts["attached_gpus"]:
        lost_index, explained = _index_fewer_sections(gpus, lines, facts["attached_gpus"])
        if not explained:
            parse_findings.append(make_finding(
                "unknown", "info", "nvsmi_incomplete",
                "Output lists %d GPU section(s) for %d attached GPUs (filtered with -i, or an excerpt)"
                % (len(gpus), facts["attached_gpus"]),
                "Capture the full nvidia-smi -q if a GPU looks missing", evidence=attached_ln[1],
                source=_src(source, attached_ln[0]), rung="none"))
    if not gpus:
        fails, _ = _scan_failures(lines, source, [])
        if fails:
            return facts, fails
        if facts["driver_version"] is None:
            return _unparseable("q", text, source, "nvidia-smi -q")
    if facts["attached_gpus"] is None and all("header" not in g["_ev"] for g in gpus):
        expected_gpus = None  # a bare excerpt (no 'GPU <pci>' line, no count): nothing to count
    return _wrap_up(facts, gpus, lines, source, expected_gpus, thresholds, parse_findings, attached_ln,
                    lost_index)


# ----------------------------------------------------------------------------------- -q -x XML

_XML_TOKEN_RE = re.compile(
    r"<!--.*?(?:-->|\Z)"
    r"|<\?.*?(?:\?>|\Z)"
    r"|<!\[CDATA\[(?P<cdata>.*?)(?:\]\]>|\Z)"
    r"|<!DOCTYPE[^\[>]*(?:\[.*?\])?\s*>?"
    r"|<(?P<close>/?)(?P<tag>[A-Za-z_][\w.:-]*)(?P<attrs>(?:\s+[^\s=/>]+\s*=\s*(?:\"[^\"]*\"|'[^']*'))*)\s*"
    r"(?P<empty>/?)>",
    re.S)
_XML_ATTR_RE = re.compile(r"([^\s=/>]+)\s*=\s*(?:\"([^\"]*)\"|'([^']*)')")
_XML_ENT_RE = re.compile(r"&(#x[0-9A-Fa-f]+|#\d+|amp|lt|gt|quot|apos);")


def _xml_unescape(s):
    def rep(m):
        e = m.group(1)
        if e.startswith("#x"):
            try:
                return chr(int(e[2:], 16))
            except (ValueError, OverflowError):
                return m.group(0)
        if e.startswith("#"):
            try:
                return chr(int(e[1:]))
            except (ValueError, OverflowError):
                return m.group(0)
        return {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}[e]
    return _XML_ENT_RE.sub(rep, s) if "&" in s else s


def _xml_tree(text):
    """A lenient XML reader: (root, truncated).  Nodes: {tag, attrs, text, children, line}.

    Tolerates truncation, junk and mismatched tags (best effort); never expands entities
    other than the five predefined and character references (no DTD, no external entities)."""
    nl = [i for i, ch in enumerate(text) if ch == "\n"]

    def line_of(pos):
        return bisect.bisect_right(nl, pos - 1) + 1

    top = {"tag": "#document", "attrs": {}, "text": "", "children": [], "line": 0}
    stack = [top]
    pos = 0
    for m in _XML_TOKEN_RE.finditer(text):
        if m.start() > pos:
            stack[-1]["text"] += text[pos:m.start()]
        pos = m.end()
        if m.group("cdata") is not None:
            stack[-1]["text"] += m.group("cdata")
            continue
        tag = m.group("tag")
        if not tag:
            continue
        if m.group("close"):
            for i in range(len(stack) - 1, 0, -1):
                if stack[i]["tag"] == tag:
                    del stack[i:]
                    break
            continue
        attrs = {}
        for a in _XML_ATTR_RE.finditer(m.group("attrs") or ""):
            attrs[a.group(1)] = _xml_unescape(a.group(2) if a.group(2) is not None else a.group(3))
        node = {"tag": tag, "attrs": attrs, "text": "", "children": [], "line": line_of(m.start())}
        stack[-1]["children"].append(node)
        if not m.group("empty"):
            stack.append(node)
    if pos < len(text):
        tail = text[pos:]
        if "<" in tail:
            tail = tail[:tail.index("<")]
        stack[-1]["text"] += tail
    truncated = len(stack) > 1
    root = None
    for n in top["children"]:
        if n["tag"] == "nvidia_smi_log":
            root = n
            break
    if root is None and top["children"]:
        root = top["children"][0]
    return root, truncated, stack


def _xtext(node):
    return _xml_unescape(node["text"]).strip() if node is not None else None


def _xchild(node, *path):
    cur = node
    for tag in path:
        if cur is None:
            return None
        nxt = None
        for c in cur["children"]:
            if c["tag"] == tag:
                nxt = c
                break
        cur = nxt
    return cur


def _xev(node):
    return "<%s>%s</%s>" % (node["tag"], _xtext(node), node["tag"])


_XML_SKIP_ERR_SUBTREES = ("processes", "accounted_processes", "supported_clocks", "mig_devices")


def _xml_gpu(node, index):
    g = _new_gpu(node["attrs"].get("id"), index)
    _note(g, "header", node["line"], '<gpu id="%s">' % node["attrs"].get("id", ""))

    def put(key, *path):
        n = _xchild(node, *path)
        if n is not None and not n["children"]:
            _assign(g, key, _xtext(n), n["line"], _xev(n), "/".join(path))
        return n

    put("name", "product_name")
    put("serial", "serial")
    put("uuid", "uuid")
    put("minor_number", "minor_number")
    put("pci", "pci", "pci_bus_id")
    put("mig_mode", "mig_mode", "current_mig")
    put("ecc_mode", "ecc_mode", "current_ecc")
    put("reset_required", "gpu_reset_status", "reset_required")
    put("drain_and_reset_recommended", "gpu_reset_status", "drain_and_reset_recommended")
    put("recovery_action", "gpu_recovery_action")
    put("temperature_c", "temperature", "gpu_temp")
    ecc = _xchild(node, "ecc_errors")
    for scope in ("volatile", "aggregate"):
        sn = _xchild(ecc, scope) if ecc else None
        if sn is None:
            continue
        for c in sn["children"]:
            if c["tag"] in ("single_bit", "double_bit"):
                tot = _xchild(c, "total")
                if tot is not None:
                    _assign(g, "ecc.%s.%s" % (scope, "correctable" if c["tag"] == "single_bit" else "uncorrectable"),
                            _xtext(tot), tot["line"], _xev(tot), "ecc_errors/%s/%s/total" % (scope, c["tag"]))
            elif c["tag"] == "sram_threshold_exceeded":
                _assign(g, "ecc.flag.sram_threshold_exceeded", _xtext(c), c["line"], _xev(c),
                        "ecc_errors/%s/%s" % (scope, c["tag"]))
            else:
                sub = _ecc_sub(c["tag"])
                if sub and not c["children"]:
                    _assign(g, "ecc.%s.%s" % (scope, sub), _xtext(c), c["line"], _xev(c),
                            "ecc_errors/%s/%s" % (scope, c["tag"]))
    for c in (ecc["children"] if ecc else []):
        if c["tag"] in _ECC_FLAGS and not c["children"]:
            _assign(g, "ecc.flag." + c["tag"], _xtext(c), c["line"], _xev(c), "ecc_errors/" + c["tag"])
    put("fabric_state", "fabric", "state")
    put("fabric_status", "fabric", "status")
    rp = _xchild(node, "retired_pages")
    if rp is not None:
        for sub, tag in (("single_bit", "multiple_single_bit_retirement"), ("double_bit", "double_bit_retirement")):
            n = _xchild(rp, tag, "retired_count")
            if n is not None:
                _assign(g, "retired." + sub, _xtext(n), n["line"], _xev(n), "retired_pages/%s/retired_count" % tag)
        for c in rp["children"]:
            if c["tag"].startswith("pending"):
                _assign(g, "retired.pending", _xtext(c), c["line"], _xev(c), "retired_pages/" + c["tag"])
    rr = _xchild(node, "remapped_rows")
    if rr is not None:
        for key, tag in (("remap.correctable", "remapped_row_corr"), ("remap.uncorrectable", "remapped_row_unc"),
                         ("remap.pending", "remapped_row_pending"), ("remap.failure", "remapped_row_failure")):
            n = _xchild(rr, tag)
            if n is not None:
                _assign(g, key, _xtext(n), n["line"], _xev(n), "remapped_rows/" + tag)
    for sec in ("clocks_throttle_reasons", "clocks_event_reasons"):
        tn = _xchild(node, sec)
        if tn is None:
            continue
        for c in tn["children"]:
            t = _throttle_key(c["tag"])
            if t and not c["children"]:
                _assign(g, "throttle." + t, _xtext(c), c["line"], _xev(c), sec + "/" + c["tag"])
    # any other leaf reading 'Unknown Error' / 'GPU is lost'

    def walk(n, path):
        for c in n["children"]:
            if c["tag"] in _XML_SKIP_ERR_SUBTREES:
                continue
            p = path + [c["tag"]]
            if c["children"]:
                walk(c, p)
            elif _err_of(_xtext(c)):
                _assign(g, None, _xtext(c), c["line"], _xev(c), "/".join(p))
    walk(node, [])
    return g


def parse_nvidia_smi_xml(text, source="nvidia-smi-q.xml", expected_gpus=None, thresholds=None):
    """Parse ``nvidia-smi -q -x`` (any DTD version; truncated XML is read best effort)."""
    try:
        return _parse_xml(text, source, expected_gpus, thresholds)
    except Exception as exc:
        facts, f = _unparseable("xml", text if isinstance(text, str) else "", source, "nvidia-smi -q -x XML")
        return facts, f + [make_finding("unknown", "info", "nvsmi_parser_error",
                                        "internal parser error: %s" % exc.__class__.__name__,
                                        "Report this capture to the gpu-runbook maintainers",
                                        source=source, rung="none")]


def _parse_xml(text, source, expected_gpus, thresholds):
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    lines = list(iter_lines(text))
    clean = "\n".join(line for _, line in lines)  # same line numbering as iter_lines
    root, truncated, open_stack = _xml_tree(clean)
    if root is None:
        return _unparseable("xml", text, source, "nvidia-smi -q -x XML")
    facts = _empty_facts("xml")
    facts["driver_version"] = _to_str(_xtext(_xchild(root, "driver_version")))
    facts["cuda_version"] = _to_str(_xtext(_xchild(root, "cuda_version")))
    att = _xchild(root, "attached_gpus")
    attached_ln = None
    if att is not None:
        facts["attached_gpus"] = _to_int(_xtext(att))
        attached_ln = (att["line"], _xev(att))
    gpus = []
    for c in root["children"]:
        if c["tag"] == "gpu":
            gpus.append(_xml_gpu(c, len(gpus)))
    parse_findings = []
    if truncated:
        last = open_stack[-1]
        parse_findings.append(make_finding(
            "unknown", "info", "nvsmi_truncated",
            "The XML is cut off (unclosed <%s>); parsed what was complete" % last["tag"],
            "Re-capture nvidia-smi -q -x", evidence="<%s>" % last["tag"], source=_src(source, last["line"]),
            rung="none"))
    lost_index = {}
    if not truncated and facts["attached_gpus"] is not None and 0 < len(gpus) < facts["attached_gpus"]:
        lost_index, explained = _index_fewer_sections(gpus, lines, facts["attached_gpus"])
        if not explained:
            parse_findings.append(make_finding(
                "unknown", "info", "nvsmi_incomplete",
                "Output has %d <gpu> element(s) for %d attached GPUs (filtered with -i, or MIG)"
                % (len(gpus), facts["attached_gpus"]),
                "Capture the full nvidia-smi -q -x if a GPU looks missing", evidence=attached_ln[1],
                source=_src(source, attached_ln[0]), rung="none"))
    if not gpus and facts["driver_version"] is None and root["tag"] != "nvidia_smi_log":
        return _unparseable("xml", text, source, "nvidia-smi -q -x XML")
    return _wrap_up(facts, gpus, lines, source, expected_gpus, thresholds, parse_findings, attached_ln,
                    lost_index)


# ----------------------------------------------------------------------------------- table

_TABLE_HDR_RE = re.compile(r"NVIDIA-SMI\s+(\S+)\s+Driver Version:\s*(\S+)(?:\s+CUDA Version:\s*(\S+))?")
_ROW1_RE = re.compile(r"^\s*(\d+)\s+(.*?)\s*$")
_NVLINK_GPU_RE = re.compile(r"^\s*GPU\s+(\d+):\s*(.*?)\s*\(UUID:\s*(\S+?)\)\s*$")
_NVLINK_LINK_RE = re.compile(r"^\s*Link\s+(\d+)\s*:\s*(.*?)\s*$")


def _cells(line):
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|"):
        s = s[:-1]
    return s.split("|")


def parse_nvidia_smi_table(text, source="nvidia-smi.txt", expected_gpus=None, thresholds=None):
    """Parse the plain ``nvidia-smi`` table (+ trailing warnings), ``nvidia-smi nvlink --status`` and ``-L``."""
    try:
        return _parse_table(text, source, expected_gpus, thresholds)
    except Exception as exc:
        facts, f = _unparseable("table", text if isinstance(text, str) else "", source, "the nvidia-smi table")
        return facts, f + [make_finding("unknown", "info", "nvsmi_parser_error",
                                        "internal parser error: %s" % exc.__class__.__name__,
                                        "Report this capture to the gpu-runbook maintainers",
                                        source=source, rung="none")]


def _parse_table(text, source, expected_gpus, thresholds):
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    lines = list(iter_lines(text))
    facts = _empty_facts("table")
    gpus = []
    by_index = {}
    in_hdr = in_gpu = False
    g = None
    row = 0
    nv = None  # current GPU in nvlink / -L output
    for ln, line in lines:
        s = line.strip()
        m = _TABLE_HDR_RE.search(line)
        if m:
            facts["driver_version"] = _to_str(m.group(2))
            facts["cuda_version"] = _to_str(m.group(3))
            continue
        if s.startswith("|") and "Bus-Id" in s:
            in_hdr = True
            continue
        if in_hdr and re.match(r"^\|[=|+]+\|?$", s):
            in_hdr, in_gpu = False, True
            continue
        if in_gpu:
            if s.startswith("+"):
                continue
            if not s.startswith("|") or "MIG devices" in s or "Processes:" in s:
                in_gpu = False
                g = None
            else:
                cells = _cells(s)
                m1 = _ROW1_RE.match(cells[0]) if cells else None
                if m1 and len(cells) >= 2 and (_PCI_RE.search(cells[1]) or "ERR!" in cells[1]):
                    idx = int(m1.group(1))
                    g = _new_gpu(None, idx)
                    g["_table"] = True
                    gpus.append(g)
                    by_index[idx] = g
                    row = 1
                    _note(g, "header", ln, s)
                    rest = m1.group(2)
                    pm = re.match(r"^(.*?)\s+(On|Off|N/A|ERR!)$", rest)
                    name, pers = (pm.group(1), pm.group(2)) if pm else (rest, None)
                    _assign(g, "name", name, ln, s, "Name")
                    if pers == "ERR!":
                        _assign(g, None, pers, ln, s, "Persistence-M")
                    toks = cells[1].split()
                    pci = next((t for t in toks if _PCI_RE.match(t)), None)
                    if pci:
                        _assign(g, "pci", pci, ln, s, "Bus-Id")
                    elif "ERR!" in toks:
                        _assign(g, None, "ERR!", ln, s, "Bus-Id")
                    if len(toks) >= 2 and toks[-1] == "ERR!" and pci:
                        _assign(g, None, "ERR!", ln, s, "Disp.A")
                    if len(cells) >= 3:
                        _assign(g, "ecc.volatile.uncorrectable", cells[2].strip(), ln, s, "Volatile Uncorr. ECC")
                    continue
                if g is not None:
                    row += 1
                    if row == 2:
                        parts = cells[0].split(None, 3) if cells else []
                        for label, val in zip(("Fan", "Temp", "Perf", "Pwr:Usage/Cap"), parts):
                            if label == "Temp":
                                _assign(g, "temperature_c", val.rstrip("C"), ln, s, "Temp")
                            elif "ERR!" in val:
                                _assign(g, None, "ERR!", ln, s, label)
                        if len(cells) >= 2 and "ERR!" in cells[1]:
                            _assign(g, None, "ERR!", ln, s, "Memory-Usage")
                        if len(cells) >= 3:
                            p3 = cells[2].split(None, 1)
                            for label, val in zip(("GPU-Util", "Compute M."), p3):
                                if "ERR!" in val:
                                    _assign(g, None, "ERR!", ln, s, label)
                    elif row == 3 and len(cells) >= 3:
                        _assign(g, "mig_mode", cells[2].strip(), ln, s, "MIG M.")
                continue
        # nvidia-smi nvlink --status / nvidia-smi -L
        m = _NVLINK_GPU_RE.match(line)
        if m:
            idx = int(m.group(1))
            nv = by_index.get(idx)
            if nv is None:
                nv = _new_gpu(None, idx)
                gpus.append(nv)
                by_index[idx] = nv
            nv["name"] = nv["name"] or m.group(2)
            nv["uuid"] = m.group(3)
            _note(nv, "header", ln, s)
            continue
        m = _NVLINK_LINK_RE.match(line)
        if m and nv is not None:
            if nv["nvlink_inactive"] is None:
                nv["nvlink_inactive"] = []
            v = m.group(2).lower()
            if "inactive" in v or v in ("down", "not active", "disabled"):
                nv["nvlink_inactive"].append(int(m.group(1)))
                _note(nv, "nvlink", ln, s)
            continue
        if s and not s.startswith(("|", "+")):
            nv = None
    if not gpus and facts["driver_version"] is None:
        return _unparseable("table", text, source, "the nvidia-smi table")
    if not any(g["_ev"].get("header", (0, ""))[1].startswith("|") for g in gpus):
        expected_gpus = None  # nvlink --status / -L only: not a GPU inventory we can count on
    return _wrap_up(facts, gpus, lines, source, expected_gpus, thresholds, [])


# ----------------------------------------------------------------------------------- CSV

_CSV_FIELD_MAP = {
    "index": "index", "pci.bus_id": "pci", "gpu_bus_id": "pci", "uuid": "uuid", "gpu_uuid": "uuid",
    "serial": "serial", "gpu_serial": "serial", "name": "name", "gpu_name": "name",
    "ecc.mode.current": "ecc_mode", "mig.mode.current": "mig_mode", "temperature.gpu": "temperature_c",
    "retired_pages.single_bit_ecc.count": "retired.single_bit", "retired_pages.sbe": "retired.single_bit",
    "retired_pages.double_bit.count": "retired.double_bit", "retired_pages.dbe": "retired.double_bit",
    "retired_pages.pending": "retired.pending",
    "remapped_rows.correctable": "remap.correctable", "remapped_rows.uncorrectable": "remap.uncorrectable",
    "remapped_rows.pending": "remap.pending", "remapped_rows.failure": "remap.failure",
    "reset_status.reset_required": "reset_required",
    "reset_status.drain_and_reset_recommended": "drain_and_reset_recommended",
}


def _csv_key(field):
    f = re.sub(r"\s*\[.*?\]\s*$", "", field.strip()).strip().lower()
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
        t = _throttle_key(m.group(1))
        return "throttle." + t if t else None
    return None


# nvmlClocksEventReason* bits, as printed by --query-gpu=clocks_throttle_reasons.active
_THROTTLE_BITS = (("idle", 0x1), ("applications_clocks_setting", 0x2), ("sw_power_cap", 0x4),
                  ("hw_slowdown", 0x8), ("sync_boost", 0x10), ("sw_thermal", 0x20), ("hw_thermal", 0x40),
                  ("hw_power_brake", 0x80), ("display_clock_setting", 0x100))


def _throttle_mask(g, raw, ln, ev):
    """Fill the throttle booleans a query did not ask for one by one from the active bitmask."""
    try:
        mask = int(_clean(raw), 16) if _clean(raw).lower().startswith("0x") else None
    except ValueError:
        mask = None
    if mask is None:
        return
    for name, bit in _THROTTLE_BITS:
        if g["throttle"].get(name) is None:
            g["throttle"][name] = bool(mask & bit)
            _note(g, "throttle." + name, ln, ev, strong=bool(mask & bit))


def _split_csv(line):
    return [p.strip() for p in line.split(",")]


def parse_query_gpu_csv(text, source="nvidia-smi-query-gpu.csv", expected_gpus=None, fields=None,
                        thresholds=None):
    """Parse ``nvidia-smi --query-gpu=... --format=csv`` (header gives the fields; pass ``fields``
    for ``noheader`` output).  Known fields map onto the common GPU facts."""
    try:
        return _parse_csv(text, source, expected_gpus, fields, thresholds)
    except Exception as exc:
        facts, f = _unparseable("csv", text if isinstance(text, str) else "", source, "nvidia-smi --query-gpu CSV")
        return facts, f + [make_finding("unknown", "info", "nvsmi_parser_error",
                                        "internal parser error: %s" % exc.__class__.__name__,
                                        "Report this capture to the gpu-runbook maintainers",
                                        source=source, rung="none")]


def _looks_like_header(cols):
    return bool(cols) and not re.match(r"^\d+$", cols[0]) and all(
        re.match(r"^[A-Za-z_][\w.]*(\s*\[[^\]]*\])?$", c) for c in cols if c)


def _parse_csv(text, source, expected_gpus, fields, thresholds):
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    lines = list(iter_lines(text))
    facts = _empty_facts("csv")
    gpus = []
    names = list(fields) if fields else None
    parse_findings = []
    for ln, line in lines:
        s = line.strip()
        if not s or "," not in s:
            continue
        cols = _split_csv(s)
        if names is None:
            if _looks_like_header(cols):
                names = cols
                continue
            return _unparseable("csv", text, source, "nvidia-smi --query-gpu CSV (no header line)")
        if _looks_like_header(cols) and [c.lower() for c in cols] == [n.lower() for n in names]:
            continue
        if len(cols) != len(names):
            parse_findings.append(make_finding(
                "unknown", "info", "nvsmi_csv_bad_row",
                "CSV row has %d columns, header has %d" % (len(cols), len(names)),
                "Check the query; re-run", evidence=s, source=_src(source, ln), rung="none"))
            continue
        g = _new_gpu(None, len(gpus))
        _note(g, "header", ln, s)
        for name, val in zip(names, cols):
            key = _csv_key(name)
            clean_name = re.sub(r"\s*\[.*?\]\s*$", "", name).strip().lower()
            if key == "index":
                if _to_int(val) is not None:
                    g["index"] = _to_int(val)
                continue
            if clean_name == "driver_version":
                facts["driver_version"] = _to_str(val)
                continue
            if key == "throttle.active":
                _throttle_mask(g, val, ln, s)
                continue
            _assign(g, key, val, ln, s, clean_name)
        gpus.append(g)
    if not gpus:
        if names is None:
            return _unparseable("csv", text, source, "nvidia-smi --query-gpu CSV")
        fails, _ = _scan_failures(lines, source, [])
        facts["count"] = 0
        if fails:
            return facts, fails
    return _wrap_up(facts, gpus, lines, source, expected_gpus, thresholds, parse_findings)


_APPS_DEFAULT_FIELDS = ("pid", "process_name", "gpu_bus_id", "gpu_uuid", "used_memory")
_APPS_ALIASES = {"pid": "pid", "process_name": "process", "name": "process", "gpu_bus_id": "pci",
                 "pci.bus_id": "pci", "gpu_uuid": "uuid", "uuid": "uuid", "used_memory": "used_memory_mib",
                 "used_gpu_memory": "used_memory_mib", "gpu_name": "gpu_name", "gpu_serial": "gpu_serial"}


def parse_compute_apps_csv(text, source="nvidia-smi-compute-apps.csv", fields=None):
    """Parse ``nvidia-smi --query-compute-apps=pid,process_name,gpu_bus_id,gpu_uuid,used_memory
    --format=csv[,noheader]`` (a header line, if present, gives the field order).

    Returns the list the remediation ladder checks before a GPU reset::

        [{"pid": int, "process": str, "pci": "0000:3b:00.0" | None, "uuid": str | None,
          "used_memory_mib": int | None}]

    Garbage lines are skipped; never raises.  ``parse_compute_apps_csv_findings`` returns
    ``(processes, findings)`` for callers that want the skipped rows and error lines too.
    """
    return parse_compute_apps_csv_findings(text, source, fields)[0]


def parse_compute_apps_csv_findings(text, source="nvidia-smi-compute-apps.csv", fields=None):
    """Like ``parse_compute_apps_csv`` but returns ``(processes, findings)``."""
    try:
        return _parse_apps(text, source, fields)
    except Exception as exc:
        return [], [make_finding("unknown", "info", "nvsmi_parser_error",
                                 "internal parser error: %s" % exc.__class__.__name__,
                                 "Report this capture to the gpu-runbook maintainers", source=source, rung="none")]


def _parse_apps(text, source, fields):
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    lines = list(iter_lines(text))
    names = [_APPS_ALIASES.get(re.sub(r"\s*\[.*?\]\s*$", "", f).strip().lower(), f) for f in
             (fields or _APPS_DEFAULT_FIELDS)]
    procs = []
    findings = []
    for ln, line in lines:
        s = line.strip()
        if not s or "," not in s:
            continue
        cols = _split_csv(s)
        if _looks_like_header(cols) and "pid" in [re.sub(r"\s*\[.*?\]\s*$", "", c).strip().lower() for c in cols]:
            names = [_APPS_ALIASES.get(re.sub(r"\s*\[.*?\]\s*$", "", c).strip().lower(), c) for c in cols]
            continue
        if len(cols) > len(names) and "process" in names:
            # a process name with commas: keep the fields around it in place
            i = names.index("process")
            extra = len(cols) - len(names)
            cols = cols[:i] + [", ".join(cols[i:i + extra + 1])] + cols[i + extra + 1:]
        if len(cols) != len(names):
            findings.append(make_finding("unknown", "info", "nvsmi_csv_bad_row",
                                         "compute-apps row has %d columns, expected %d" % (len(cols), len(names)),
                                         "Check the query; re-run", evidence=s, source=_src(source, ln),
                                         rung="none"))
            continue
        row = dict(zip(names, cols))
        pid = _to_int(row.get("pid"))
        if pid is None:
            findings.append(make_finding("unknown", "info", "nvsmi_csv_bad_row",
                                         "compute-apps row without a numeric pid", "Check the query; re-run",
                                         evidence=s, source=_src(source, ln), rung="none"))
            continue
        pci = _to_str(row.get("pci"))
        pm = _PCI_RE.search(pci) if pci else None
        procs.append({
            "pid": pid,
            "process": _clean(row.get("process")),
            "pci": normalize_pci(pm.group(0)) if pm else None,
            "uuid": _to_str(row.get("uuid")),
            "used_memory_mib": _to_int(row.get("used_memory_mib")),
        })
    fails, _ = _scan_failures(lines, source, [])
    findings.extend(fails)
    return procs, findings


# ----------------------------------------------------------------------------------- dispatcher

def detect_format(text):
    """'xml' | 'q' | 'table' | 'csv' | 'compute_apps' | None for an nvidia-smi output."""
    if not isinstance(text, str) or not text.strip():
        return None
    t = strip_ansi(text).replace("\x00", "")
    head = t[:20000]
    s = head.lstrip("\ufeff \t\r\n")
    if s.startswith("<?xml") or "<nvidia_smi_log" in head:
        return "xml"
    if "NVSMI LOG" in head or re.search(r"^\s*Attached GPUs\s*:", head, re.M) or \
            re.search(r"^\s*GPU\s+" + _PCI_TXT + r"\s*$", head, re.M) or \
            re.search(r"^\s+(ECC Errors|Retired Pages|Remapped Rows|Clocks (Throttle|Event) Reasons|"
                      r"GPU Reset Status)\s*$", head, re.M | re.I):
        return "q"
    if (re.search(r"^\s*\+-{5,}", head, re.M) and ("NVIDIA-SMI" in head or "Bus-Id" in head)) or \
            re.search(r"^\s*GPU\s+\d+:\s.*\(UUID:", head, re.M):
        return "table"
    first = next((l.strip() for l in t.splitlines() if l.strip() and "," in l), None)
    if first:
        cols = _split_csv(first)
        if "pid" in [re.sub(r"\s*\[.*?\]\s*$", "", c).strip().lower() for c in cols] and _looks_like_header(cols):
            return "compute_apps"
        if _looks_like_header(cols):
            return "csv"
        if re.match(r"^\d+$", cols[0]) and len(cols) >= 3 and _PCI_RE.search(first) and \
                any(c.startswith("GPU-") for c in cols):
            return "compute_apps"
    return None


def parse_nvidia_smi(text, source="nvidia-smi.txt", expected_gpus=None, thresholds=None):
    """Detect which nvidia-smi output ``text`` is and parse it; failure outputs ('No devices were
    found', 'couldn't communicate with the NVIDIA driver', 'GPU is lost', empty) become findings."""
    try:
        fmt = detect_format(text)
    except Exception:
        fmt = None
    src = (source or "").lower()
    if fmt in (None, "csv", "compute_apps") and isinstance(text, str) and "," in text:
        # a noheader CSV says nothing about itself: the probe's file name does
        if "compute-apps" in src or "compute_apps" in src:
            fmt = "compute_apps"
        elif "query-gpu" in src or "query_gpu" in src:
            fmt = "csv"
    if fmt == "xml":
        return parse_nvidia_smi_xml(text, source, expected_gpus, thresholds)
    if fmt == "q":
        return parse_nvidia_smi_q(text, source, expected_gpus, thresholds)
    if fmt == "table":
        return parse_nvidia_smi_table(text, source, expected_gpus, thresholds)
    if fmt == "csv":
        return parse_query_gpu_csv(text, source, expected_gpus, thresholds=thresholds)
    if fmt == "compute_apps":
        procs, findings = parse_compute_apps_csv_findings(text, source)
        facts = _empty_facts("csv")
        facts["processes"] = procs
        return facts, findings
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    return _unparseable(None, text, source, "any known nvidia-smi output")
