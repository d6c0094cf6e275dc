# SPDX-License-Identifier: Apache-2.0
"""What the GPU records mean: per-GPU findings (ECC, row remap, retired pages, repair flags,
fabric, reset status, recovery action, temperature, field errors, NVLink), host findings
(clock slowdown, folded when every GPU shows it) and the expected-GPU-count check.

Each finding's kind (taxonomy/kinds_gpu.py) gives its category, severity and remedy; the
message here says what was seen on which GPU.
"""

import re

from ..findings import finding
from .failures import scan_failures
from .model import ev, finalize_gpu, gpu_label, norm, public, ref, src

DEFAULT_THRESHOLDS = {
    # more than this many aggregate (lifetime) uncorrectable SRAM ECC errors -> RMA
    "sram_uncorrectable_rma": 4,
    # GPU core temperature at or above this (C) -> warning
    "temperature_c": 85,
    # this many retired pages (single + double bit, pre-Ampere page retirement) -> RMA
    "retired_pages_rma": 60,
}

# Table columns and what an ERR! in them means. The GPU's identity or ECC counter unreadable:
# the GPU itself. A reading (temperature, power, memory, utilisation): one alone, on one GPU
# of the host, is an odd reading (often transient, Azure/azhpc-diagnostics#77), not a fault;
# two readings of one GPU, or readings on several GPUs, are. Fan/Perf/Disp.A alone never are.
_ERR_ID_FIELDS = ("Name", "Bus-Id", "Volatile Uncorr. ECC")
_ERR_READINGS = ("Temp", "Pwr:Usage/Cap", "Memory-Usage", "GPU-Util")
_ERR_HW_FIELDS = _ERR_ID_FIELDS + _ERR_READINGS

# PCIe cards whose NVLink is an optional bridge (A100/H100 PCIe, H100/H200 NVL, RTX/Quadro, A40/A30/A10):
# links without a bridge read inactive by design, so that is no reason to drain the node
_BRIDGED = re.compile(r"PCI[Ee]|\bNVL\b|RTX|Quadro|TITAN|GeForce|\bA(?:10|16|30|40)\b|\bL40S?\b", re.I)

# NVML recovery action (normalised) -> kind; anything else asks for a reset
# NVML's recovery actions by what their names say (nvmlDeviceGpuRecoveryAction_t: GPU reset, node
# reboot, drain P2P, drain and reset, recover IMEX domain, bus reset, system reboot); checked in order
_RECOVERY_WORDS = (("imex", "gpu_recovery_imex_domain"), ("bus", "gpu_recovery_bus_reset"),
                   ("reboot", "gpu_recovery_reboot"), ("p2p", "gpu_recovery_drain_p2p"),
                   ("reset", "gpu_recovery_reset"))

# a finding's ``counters`` name -> where the GPU record keeps it (flags count as 0 / 1)
_COUNTERS = {
    "volatile_uncorrectable": ("ecc", "volatile", "uncorrectable"),
    "aggregate_uncorrectable": ("ecc", "aggregate", "uncorrectable"),
    "aggregate_sram_uncorrectable": ("ecc", "aggregate", "sram_uncorrectable"),
    "remapped_correctable": ("remapped_rows", "correctable"),
    "remapped_uncorrectable": ("remapped_rows", "uncorrectable"),
    "remap_pending": ("remapped_rows", "pending"),
    "remap_failure": ("remapped_rows", "failure"),
    "retired_single_bit": ("retired_pages", "single_bit"),
    "retired_double_bit": ("retired_pages", "double_bit"),
    "retired_pending": ("retired_pages", "pending"),
}
_REMAP = ("remapped_correctable", "remapped_uncorrectable", "remap_pending", "remap_failure")
_RETIRED = ("retired_single_bit", "retired_double_bit", "retired_pending")


def counters(g, *names):
    """{name: int} of the GPU's memory counters named (see _COUNTERS) that nvidia-smi showed;
    None when it showed none of them."""
    out = {}
    for name in names:
        v = g
        for key in _COUNTERS[name]:
            v = v.get(key) if isinstance(v, dict) else None
        if isinstance(v, (bool, int)):
            out[name] = int(v)
    return out or None


def _memory_findings(g, th, add, label):
    """ECC, row remapping, page retirement and the Blackwell repair flags."""
    ecc, rr, rp = g["ecc"], g["remapped_rows"], g["retired_pages"]
    vu = ecc["volatile"].get("uncorrectable")
    if vu:
        add("ecc.volatile.uncorrectable", "ecc_uncorrectable_volatile",
            "%s has %d uncorrectable ECC error(s) since the driver loaded (volatile)" % (label, vu),
            counters=counters(g, "volatile_uncorrectable", "aggregate_uncorrectable"))
    if rr.get("failure"):
        add("remap.failure", "row_remap_failure",
            "%s: row remapping failure occurred (no spare rows left for a bad memory row)" % label,
            counters=counters(g, *_REMAP))
    if rr.get("pending"):
        add("remap.pending", "row_remap_pending",
            "%s: a row remap is pending; reset GPU to apply the pending row remap" % label,
            counters=counters(g, *_REMAP))
    if rp.get("pending"):
        crit = bool(vu) or bool(rp.get("double_bit"))
        add("retired.pending", "retired_pages_pending",
            "%s: page retirement is pending (a bad memory page stays in use until the GPU is reset)" % label,
            severity="critical" if crit else "warning", counters=counters(g, *_RETIRED + ("volatile_uncorrectable",)))
    nret = (rp.get("single_bit") or 0) + (rp.get("double_bit") or 0)
    if nret and nret >= th["retired_pages_rma"]:
        add("retired.double_bit" if rp.get("double_bit") else "retired.single_bit", "retired_pages_limit",
            "%s has %d retired pages (RMA threshold %d)" % (label, nret, th["retired_pages_rma"]),
            counters=counters(g, *_RETIRED), threshold=th["retired_pages_rma"])
    agg_sram = ecc["aggregate"].get("sram_uncorrectable")
    if agg_sram is not None and agg_sram > th["sram_uncorrectable_rma"]:
        add("ecc.aggregate.sram_uncorrectable", "ecc_sram_uncorrectable_rma",
            "%s has %d aggregate (lifetime) uncorrectable SRAM ECC errors, above the RMA threshold of %d"
            % (label, agg_sram, th["sram_uncorrectable_rma"]),
            counters=counters(g, "aggregate_sram_uncorrectable"), threshold=th["sram_uncorrectable_rma"])
    if ecc.get("sram_threshold_exceeded"):
        add("ecc.flag.sram_threshold_exceeded", "ecc_sram_threshold_exceeded",
            "%s reports 'SRAM Threshold Exceeded': too many uncorrectable SRAM errors" % label)
    for flag, what in (("channel_repair_pending", "an HBM channel repair"), ("tpc_repair_pending", "a TPC repair")):
        if ecc.get(flag):
            add("ecc.flag." + flag, flag, "%s: %s is pending; reset the GPU to apply it" % (label, what))
    if ecc.get("unrepairable_memory"):
        add("ecc.flag.unrepairable_memory", "unrepairable_memory", "%s reports unrepairable memory" % label)


def _state_findings(g, th, add, label):
    """Fabric, reset status, the driver's recovery action and temperature."""
    fs, fst = norm(g.get("fabric_state") or ""), norm(g.get("fabric_status") or "")
    # NVML: the status "must be checked only if state returns complete"; no state (Not Supported,
    # N/A: a GPU outside an NVSwitch fabric) is never a fabric fault, whatever the status says
    if (fs and fs != "completed") or (fs == "completed" and fst and fst != "success"):
        add("fabric_state" if fs and fs != "completed" else "fabric_status", "fabric_not_ready",
            "%s: NVLink fabric not ready (state %s%s): CUDA/NCCL cannot use this GPU"
            % (label, g.get("fabric_state"),
               ", status %s" % g["fabric_status"] if g.get("fabric_status") is not None else ""))
    if g.get("reset_required"):
        add("reset_required", "gpu_reset_required", "%s reports 'GPU requires reset'" % label)
    elif g.get("drain_and_reset_recommended"):
        add("drain_and_reset_recommended", "gpu_drain_and_reset_recommended",
            "%s reports 'Drain and Reset Recommended'" % label)
    ra = g.get("recovery_action")
    n = re.sub(r"[\s_]+", "_", norm(ra or ""))
    if n and n not in ("none", "n/a"):
        # an action no name here explains is not taken for a reset: the node is drained, the text quoted
        kind = next((k for w, k in _RECOVERY_WORDS if w in n), "gpu_recovery_unknown")
        add("recovery_action", kind, "%s: the driver asks for recovery action '%s'" % (label, ra))
    t = g.get("temperature_c")
    if t is not None and t >= th["temperature_c"]:
        add("temperature_c", "gpu_temperature_high",
            "%s temperature %d C is at or above %d C" % (label, t, th["temperature_c"]),
            counters={"temperature_c": t}, threshold=th["temperature_c"])


def _odd_reading(g, err_gpus):
    """ERR! in the table in at most one reading of this GPU, no identity field, and no other
    GPU of the host with an ERR! reading: a sensor read failed once, no GPU fault is proven."""
    errs = g.get("errors") or []
    if not g.get("_table") or any(f in _ERR_ID_FIELDS or f not in _ERR_HW_FIELDS + _ERR_SENSOR for f in errs):
        return False
    readings = [f for f in errs if f in _ERR_READINGS]
    return not readings or (len(readings) == 1 and err_gpus <= 1)


_ERR_SENSOR = ("Fan", "Perf", "Disp.A", "Persistence-M", "Compute M.")


def _error_findings(g, add, label, err_gpus=1, most_up=0):
    """Fields nvidia-smi could not read, and inactive NVLinks (``most_up``: the most NVLinks up on a
    GPU of this one's model in the same output)."""
    errs = g.get("errors") or []
    if errs and _odd_reading(g, err_gpus):
        # ERR! only in the fan/perf/display columns, or one reading of one GPU (capture 008)
        one = [f for f in errs if f in _ERR_READINGS]
        add("errors", "nvsmi_err_field", "%s: nvidia-smi shows ERR! for %s%s" % (
            label, ", ".join(errs), " (a single odd reading: no other field or GPU is affected)" if one else ""))
    elif errs:
        lost = "errors_gpu_is_lost" in g["_ev"]
        needs_reset = "errors_gpu_requires_reset" in g["_ev"]
        fields = ", ".join(errs[:6]) + (" ..." if len(errs) > 6 else "")
        why = "GPU is lost" if lost else ("GPU requires reset" if needs_reset else "Unknown Error/ERR!")
        add("errors", "nvml_field_gpu_lost" if lost else "nvml_field_error",
            "%s: nvidia-smi could not read %s (%s)" % (label, fields, why),
            severity="critical" if needs_reset else None)
    counted = g.get("nvlink_errors")
    if counted:
        add("nvlink_errors", "nvlink_errors", "%s: NVLink error counters are not zero: %s" % (
            label, "; ".join("link %d %s" % (link, ", ".join("%s %d" % kv for kv in sorted(c.items())))
                             for link, c in sorted(counted.items())[:8])),
            counters={"link%d_%s" % (link, re.sub(r"\W+", "_", name.lower()).strip("_")): n
                      for link, c in sorted(counted.items()) for name, n in c.items()})
    inactive = g.get("nvlink_inactive")
    if inactive or g.get("nvlink_all_inactive"):
        bridged = bool(_BRIDGED.search(g.get("name") or ""))
        links = "all its NVLink links" if g.get("nvlink_all_inactive") else "inactive NVLink link(s) %s" % ", ".join(
            str(i) for i in inactive)
        up = g.get("_nvlink_up", 0)
        fewer = bridged and up < most_up
        add("nvlink", "nvlink_inactive",
            "%s has %s%s" % (label, links, " inactive" if g.get("nvlink_all_inactive") else "")
            + (" (a PCIe card: %d link(s) up where another %s here has %d: a bridge is missing or loose)"
               % (up, g.get("name") or "GPU of its model", most_up) if fewer else
               " (a PCIe card: its NVLink bridge is optional, and no GPU of its model here has more links up)"
               if bridged else ""),
            severity=("warning" if fewer else "info") if bridged else None)


def nvlinks_up_by_model(gpus):
    """{model name: the most NVLinks up on one GPU of it}: on PCIe cards bridges join some links by
    design, so a card is short of links only against another of its model."""
    out = {}
    for g in gpus:
        name = g.get("name") or ""
        out[name] = max(out.get(name, 0), g.get("_nvlink_up", 0))
    return out


def err_reading_gpus(gpus):
    """How many GPUs of the table show ERR! in a reading or an identity field."""
    return sum(1 for g in gpus if g.get("_table") and any(f in _ERR_HW_FIELDS for f in g.get("errors") or []))


def gpu_findings(g, source, th, err_gpus=1, most_up=0):
    """Every finding about one GPU record (``err_gpus``: how many GPUs of the host show an
    ERR! reading, err_reading_gpus; ``most_up``: nvlinks_up_by_model's figure for its model)."""
    out = []
    gref = ref(g)

    def add(key, kind, message, severity=None, **numbers):
        ln, evidence = ev(g, key)
        out.append(finding(kind, message, evidence=evidence, source=src(source, ln), gpu=gref, severity=severity,
                           **numbers))

    label = gpu_label(g)
    _memory_findings(g, th, add, label)
    _state_findings(g, th, add, label)
    _error_findings(g, add, label, err_gpus, most_up)
    return out


def _hw_on(g):
    t = g["throttle"]
    if t.get("hw_slowdown") is not None:
        return bool(t.get("hw_slowdown"))
    return bool(t.get("hw_power_brake") or t.get("hw_thermal"))


def _throttle_key(g):
    t = g["throttle"]
    if t.get("hw_power_brake"):
        return "throttle.hw_power_brake"
    return "throttle.hw_thermal" if t.get("hw_thermal") else "throttle.hw_slowdown"


def host_findings(gpus, source):
    """Throttle findings, folded into one when every GPU on the host shows the same thing."""
    out = []
    hw = [g for g in gpus if _hw_on(g)]
    brake = [g for g in hw if g["throttle"].get("hw_power_brake")]
    therm = [g for g in hw if g["throttle"].get("hw_thermal")]
    if hw and len(gpus) >= 2 and len(hw) == len(gpus):
        key = "throttle.hw_power_brake" if brake else ("throttle.hw_thermal" if therm else "throttle.hw_slowdown")
        ln, evidence = ev(hw[0], key)
        why = "power brake" if len(brake) == len(gpus) else ("thermal" if len(therm) == len(gpus) else "HW")
        out.append(finding(
            "hw_slowdown_all_gpus",
            "All %d GPUs report HW Slowdown (HW Power Brake on %d, HW Thermal on %d): a %s signal for the "
            "whole node (PSU/BMC/cooling), not one faulty GPU" % (len(gpus), len(brake), len(therm), why),
            evidence=evidence, source=src(source, ln)))
    else:
        for g in hw:
            ln, evidence = ev(g, _throttle_key(g))
            sub = [n for n, on in (("power brake", g in brake), ("thermal", g in therm)) if on]
            out.append(finding(
                "hw_slowdown", "%s clocks are held down by HW Slowdown%s; this rank will be slow" % (
                    gpu_label(g), (" (%s)" % ", ".join(sub)) if sub else ""),
                evidence=evidence, source=src(source, ln), gpu=ref(g)))
    for g in gpus:
        t = g["throttle"]
        if g not in hw and (t.get("hw_power_brake") or t.get("hw_thermal")):
            ln, evidence = ev(g, _throttle_key(g))
            out.append(finding(
                "hw_slowdown_subreason",
                "%s reports a HW slowdown sub-reason while 'HW Slowdown' itself is not active (transient)"
                % gpu_label(g), evidence=evidence, source=src(source, ln), gpu=ref(g)))
    for g in gpus:
        if g["throttle"].get("sw_thermal"):
            ln, evidence = ev(g, "throttle.sw_thermal")
            out.append(finding(
                "sw_thermal_slowdown",
                "%s: SW Thermal Slowdown active (driver lowering clocks for temperature)" % gpu_label(g),
                evidence=evidence, source=src(source, ln), gpu=ref(g)))
    return out


def _count_finding(facts, gpus, handle_pcis, source, expected_gpus, attached_ln):
    """gpu_missing when nvidia-smi shows fewer GPUs than expected (None when it does not)."""
    try:
        expected = int(expected_gpus)
    except (TypeError, ValueError):
        return None
    seen = len(gpus)
    if facts.get("attached_gpus") is not None and facts["attached_gpus"] > seen:
        seen = facts["attached_gpus"]  # filtered/truncated output: trust the header count
    known = set(g["pci"] for g in gpus if g.get("pci"))
    # GPUs nvidia-smi could not open already carry their own critical finding
    lost = len(set(p for p in handle_pcis if p not in known))
    if expected - seen - lost <= 0:
        return None
    ln, evidence = attached_ln if attached_ln else (0, "")
    return finding("gpu_missing",
                   "GPU missing (fallen off the bus?): nvidia-smi shows %d of %d expected GPUs" % (seen, expected),
                   evidence=evidence, source=src(source, ln))


def _platform_fields(gpus, source):
    """-q's fields (a dotted path: 'PCI.GPU Link Info.PCIe Generation.Host Max') that no GPU of the host
    could read, none of them lost or needing a reset: a field this platform or driver does not give (a
    VM's host link), not each GPU's fault. Taken off the GPUs' errors and said once, as information."""
    if len(gpus) < 2 or any(k in g["_ev"] for g in gpus for k in ("errors_gpu_is_lost", "errors_gpu_requires_reset")):
        return []
    common = set.intersection(*(set(g.get("errors") or ()) for g in gpus))
    common = sorted(f for f in common if "." in f and f not in _ERR_HW_FIELDS)
    if not common:
        return []
    for g in gpus:
        g["errors"] = [f for f in g["errors"] if f not in common]
    ln, evidence = ev(gpus[0], "errors")
    return [finding("nvsmi_err_field", "no GPU of the host could read %s: a field this platform or driver does not "
                    "give (a virtual machine's host link), not a GPU's fault" % ", ".join(common[:4]),
                    severity="info", evidence=evidence, source=src(source, ln))]


def wrap_up(facts, gpus, lines, source, expected_gpus, thresholds, parse_findings, attached_ln=None,
            lost_index=None, inventory=True):
    """Shared tail of the GPU parsers: finalize, findings, expected-count check, strip internals.
    ``inventory``: the output lists every GPU (not nvlink's or -L's list, which a paste often cuts)."""
    th = dict(DEFAULT_THRESHOLDS)
    if thresholds:
        th.update(thresholds)
    findings = list(parse_findings)
    for g in gpus:
        finalize_gpu(g)
    fail, handle_pcis = scan_failures(lines, source, gpus, lost_index)
    findings.extend(fail)
    findings.extend(_platform_fields(gpus, source))
    err_gpus = err_reading_gpus(gpus)
    most_up = nvlinks_up_by_model(gpus)
    for g in gpus:
        findings.extend(gpu_findings(g, source, th, err_gpus, most_up.get(g.get("name") or "", 0)))
    findings.extend(host_findings(gpus, source))
    facts["gpus"] = [public(g) for g in gpus]
    facts["count"] = len(gpus)
    # a driver that is down explains the missing GPUs already
    if expected_gpus and not any(f["category"] == "driver" for f in fail):
        missing = _count_finding(facts, gpus, handle_pcis, source, expected_gpus, attached_ln)
        if missing:
            findings.append(missing)
    elif not expected_gpus and not fail and inventory:
        odd = _baseboard_count(facts, gpus, source)
        if odd:
            findings.append(odd)
    return facts, findings


# GPUs that only come on an HGX baseboard of 4 or 8 (SXM modules): 'A100-SXM4-80GB', 'H100 80GB HBM3' (the
# SXM5 H100; the PCIe and NVL cards say so), H200 / H800 / B200 / B300 but their NVL and PCIe cards
_BASEBOARD = re.compile(r"SXM|\bH100 80GB HBM3\b|\b(?:H200|H800|B200|B300)\b(?![^\n]{0,40}\b(?:NVL|PCIe)\b)")


def _baseboard_count(facts, gpus, source):
    """gpu_count_unusual: every GPU of a full listing is a baseboard (SXM) model and there are 5, 6 or 7
    of them (a baseboard carries 4 or 8); None otherwise."""
    n = len(gpus)
    if n not in (5, 6, 7) or (facts.get("attached_gpus") not in (None, n)):
        return None
    names = set((g.get("name") or "") for g in gpus)
    if len(names) != 1 or not _BASEBOARD.search(next(iter(names))):
        return None
    return finding("gpu_count_unusual",
                   "%d %s GPUs listed: an HGX baseboard carries 4 or 8 of them, so one may not have enumerated "
                   "(or the node is a VM given %d)" % (n, next(iter(names)), n), source=src(source, 0))
