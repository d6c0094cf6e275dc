# SPDX-License-Identifier: Apache-2.0
"""Findings from what the scanner gathered: one per (Xid, GPU), per GPU event, per HCA
fault, per AER class and device (OOM kills, hung tasks, machine checks: nodelog.py). Pure functions of
the scanner's tables; ``sref(line)`` names the file and line a record came from."""

import re

from ..findings import finding, gpu_ref, ib_ref
from ..xid_catalog import UNKNOWN_XID, component_of, lookup, remedy, severity_of
from .nodelog import count_line, seen, seen_text
from .patterns import XID_CAUSE_RE

AER_STORM = 25  # corrected errors in one log that make a marginal link, not noise
SEEN_KEYS = 64  # mlx5 event kinds counted per HCA (a handful exist)


def xid_findings(xids, ids, sref, gsp_trouble=False):
    """``xids``: the scanner's Xid records in line order; ``ids``: the GPU identities
    (identity.GpuIdentities) that name each GPU's UUID and board serial; ``gsp_trouble``: the
    log has GSP firmware timeout/halt lines (then Xid 62 is the firmware's, not the GPU's)."""
    app_first, seen = {}, {}  # pci -> first line of an application-class Xid; pci -> [(line, category)]
    for r in xids:
        e = lookup(r["xid"])
        if e and e["category"] == "application":
            app_first.setdefault(r["pci"], r["line"])
    out = []
    for r in xids:
        f = _xid_finding(r, ids, app_first, sref, gsp_trouble, seen.get(r["pci"], ()))
        seen.setdefault(r["pci"], []).append((r["line"], f["category"]))
        out.append(f)
    return out


def _xid_finding(r, ids, app_first, sref, gsp_trouble=False, before=()):
    code, pci = r["xid"], r["pci"]
    gpu = ids.ref(gpu_ref(pci, index=r["index"])) if pci else (
        gpu_ref(uuid=r["uuid"]) if r.get("uuid") else None)  # the device plugin names the GPU by UUID
    where = dict(evidence=r["evidence"], source=sref(r["line"]), xid=code, gpu=gpu, **seen(r))
    odd = ("; odd: " + "; ".join(r["odd"])) if r.get("odd") else ""
    when = seen_text(r)
    proc = (", process %s" % r["process"]) if r["process"] else ""
    e = lookup(code)
    if e is None:
        u = UNKNOWN_XID
        return finding("xid", "unknown Xid %d, not in catalog, on GPU %s %s%s: %s%s" % (
            code, pci or "(address elided)", when, proc, r["message"][:200], odd),
            severity=u["severity"], category=u["category"], rung=u["rung"], steps=u["steps"], **where)
    category, echo = e["category"], ""
    rung, steps, note = remedy(e, r["message"])
    severity, component = severity_of(e, r["message"]), component_of(code)
    cause = XID_CAUSE_RE.search(r["message"]) if code == 45 else None
    ce = lookup(cause.group("code")) if cause else None
    if code == 109 and category != "application" and pci in app_first and app_first[pci] < r["line"]:
        # A context-switch timeout right after the job's own fault is its echo, not a second cause.
        category, echo = "application", " (follows an application Xid on the same GPU)"
    elif code == 62 and (gsp_trouble or "gsp" in r["message"].lower()):
        # The PMU halt the GSP firmware reports (GSP timeout/halt lines around it): the firmware's.
        category, echo = "driver", " (with GSP firmware errors: driver/firmware, not the board)"
    elif ce is not None and ce["xid"] not in (43, 45) and ce["category"] != "application":
        # 'Ch 00000001 caused by previous Xid 149': the teardown of a fault the log may not show.
        category, echo = ce["category"], " (teardown caused by Xid %d)" % ce["xid"]
        rung, steps, note = remedy(ce, r["message"])
        severity, component = "warning", component_of(ce["xid"])
    elif code == 154 and any(c == "driver" for _, c in before):
        category, echo = "driver", " (after a driver/firmware Xid on the same GPU)"
    msg = "Xid %d (%s) on GPU %s %s%s%s: %s%s" % (
        code, e["name"], pci or "(address elided)", when, proc, echo, r["message"][:200], odd)
    f = finding("xid", msg, severity=severity, category=category, rung=rung, steps=steps, note=note, **where)
    if component:
        f["component"] = component
    return f


def bad_xid_finding(bad, sref):
    """``bad``: the counted record of the Xid lines that could not be read."""
    return finding("xid_unparsed", "NVRM Xid line(s) that could not be parsed (truncated or unknown format), "
                   "seen %s" % seen_text(bad),
                   evidence=bad["evidence"], source=sref(bad["line"]), **seen(bad))


def gpu_event_findings(events, ids, sref):
    """``events``: {(kind, pci): record} of GPUs off the bus / failing to initialise."""
    out = []
    for (kind, pci), r in sorted(events.items(), key=lambda kv: kv[1]["line"]):
        gpu = ids.ref(gpu_ref(pci)) if pci else None
        where = pci or "unknown PCI address"
        if kind == "gpu_fallen_off_bus":
            msg = "GPU %s has fallen off the bus, reported %s" % (where, seen_text(r))
        else:
            msg = "NVIDIA driver failed to initialise GPU %s (RmInitAdapter failed), reported %s" % (
                where, seen_text(r))
        out.append(finding(kind, msg, evidence=r["evidence"], source=sref(r["line"]), gpu=gpu, **seen(r)))
    return out


def ib_findings(ib, ib_names, sref):
    """-> (findings, facts per HCA) from the mlx5 records {pci: record}."""
    findings, devices = [], {}
    for pci, r in sorted(ib.items(), key=lambda kv: min(kv[1]["first_line"].values())):
        settle(r)
        name = ib_names.get(pci) or pci
        devices[name] = {"pci": r["pci"], "device": ib_names.get(pci), "netdev": r["netdev"],
                         "port": r["port"], "last_state": r["last_state"], "drops": r["drops"],
                         "unplugs": r["unplugs"], "counts": dict(r["counts"])}
        findings.extend(_hca_findings(name, pci, r, sref))
    low_power = sorted((r["first_line"]["pcie_power"], ib_names.get(pci) or pci, r["evidence"]["pcie_power"])
                       for pci, r in ib.items() if "pcie_power" in r["first_line"])
    if low_power:  # common, and harmless unless a port misbehaves: one line for all HCAs
        findings.append(finding("ib_pcie_power", "%d HCA(s) report insufficient PCIe slot power: %s" % (
            len(low_power), ", ".join(x[1] for x in low_power[:8])),
            evidence=low_power[0][2], source=sref(low_power[0][0])))
    return findings, devices


def _hca_findings(name, pci, r, sref):
    c, ev, fl = r["counts"], r["evidence"], r["first_line"]
    ib = ib_ref(name, r["port"])
    label = "%s (IPoIB netdev)" % name if r["pci"] is None else name if name == pci else "%s (%s)" % (name, pci)

    def add(kind, msg, key, counted=True, **kw):
        nums = seen(r["seen"][key]) if counted and key in r["seen"] else {}
        out.append(finding(kind, msg, evidence=ev[key], source=sref(fl[key]), ib=ib, **dict(nums, **kw)))

    def when(key):
        return seen_text(r["seen"][key]) if key in r["seen"] else ""

    out = []
    if c.get("health"):
        add("ib_hca_health", "HCA %s reported a firmware/health fault %s" % (label, when("health")), "health")
    if c.get("cable_error"):
        add("ib_cable_error", "HCA %s port module (cable/transceiver) error, %s" % (
            label, when("cable_error")), "cable_error")
    if r["unplugs"]:
        add("ib_cable_unplugged", "HCA %s: cable unplugged after being plugged, %s" % (
            label, when("unplug")), "unplug")
    if r["drops"]:
        add("ib_link_flap" if r["drops"] > 1 else "ib_link_dropped",
            "HCA %s link dropped %s (down %d, up %d); last state %s" % (
                label, when("drop"), c.get("link_down", 0), c.get("link_up", 0), r["last_state"]),
            "drop", severity="critical" if r["last_state"] == "down" else "warning")
    elif c.get("link_down") or c.get("cable_unplugged"):
        first = min((fl[k], k) for k in ("link_down", "cable_unplugged") if k in fl)
        add("ib_port_never_up", "HCA %s port was never up in this log (no cable / unused port?)" % label, first[1],
            counted=False)
    if c.get("cmd_timeout"):
        add("ib_cmd_timeout", "HCA %s firmware command timeout, %s" % (label, when("cmd_timeout")), "cmd_timeout")
    return out


def aer_findings(aer, gpu_pcis, sref, ids=None, hcas=(frozenset(), {})):
    """``aer``: {(class, pci): record}; a device the log knows as a GPU (an NVRM line, or the
    'nvidia <pci>: AER: ..' lines under the port's report: record["below"]) makes it a GPU
    finding, one it knows as an mlx5 HCA (``hcas``: (pcis, {pci: mlx5_N})) an IB one."""
    out = []
    hca_pcis, ib_names = hcas
    for (cls, pci), r in sorted(aer.items(), key=lambda kv: kv[1]["line"]):
        dev = pci if pci in gpu_pcis or pci in hca_pcis else (r.get("below") or pci)
        gpu = gpu_ref(dev) if dev and dev in gpu_pcis else None
        ib = ib_ref(ib_names.get(dev) or dev, None) if not gpu and dev and dev in hca_pcis else None
        if gpu and ids is not None:
            ids.ref(gpu)
        where = pci or "unknown device"
        if dev and dev != pci:
            where += " (%s %s below it)" % ("GPU" if gpu else ("HCA" if ib else "device"), dev)
        kw = dict(evidence=r["evidence"], source=sref(r["line"]), gpu=gpu, ib=ib,
                  category="gpu_hardware" if gpu else ("ib_network" if ib else "unknown"))
        kw.update(seen(r))
        if cls in ("fatal", "surprise_down"):
            what = "Surprise Down (link lost)" if cls == "surprise_down" else "uncorrected fatal"
            out.append(finding("pcie_aer_fatal", "PCIe AER %s error on %s, reported %s" % (
                what, where, seen_text(r)), **kw))
        elif cls == "nonfatal":
            out.append(finding("pcie_aer_nonfatal", "PCIe AER uncorrected non-fatal error on %s, reported %s" % (
                where, seen_text(r)), **kw))
        else:
            storm = r["count"] >= AER_STORM
            out.append(finding("pcie_aer_corrected", "PCIe AER corrected error(s) on %s, reported %s%s" % (
                where, seen_text(r), ": a storm, the link is marginal" if storm else ""),
                severity="warning" if storm else "info", **kw))
    return out


# a port that trains at boot logs its first 'Link down' within a few minutes of it
BOOT_SETTLE_S = 600


def _long_after_boot(boot, ctx):
    """True when a first 'Link down' (no state seen before it) comes long after the boot the log
    shows (its 'Linux version' line, or dmesg's seconds since boot): the port was up, it dropped."""
    dt, when = ctx[2], ctx[3]
    if dt is None:
        return isinstance(when, float) and when > BOOT_SETTLE_S and (boot is None or isinstance(boot, float))
    if boot is None or isinstance(boot, float):
        return False
    try:
        return (dt - boot).total_seconds() > BOOT_SETTLE_S
    except TypeError:  # a naive time against an aware one: not comparable, not a drop
        return False


def drop(rec, ctx):
    """One drop of the record's link, at ``ctx``."""
    rec["drops"] += 1
    rec["evidence"].setdefault("drop", ctx[1][:1000])
    rec["first_line"].setdefault("drop", ctx[0])
    count_line(rec["seen"], "drop", ctx, SEEN_KEYS, {})


def settle(rec):
    """The end of the log: a first 'Link down' still pending (no up, no reload after it) was a drop."""
    if rec.get("pending_down"):
        drop(rec, rec.pop("pending_down"))


def link_transition(rec, kind, ctx):
    """Update a link record's link/cable state for one event (mlx5's, or systemd-networkd's carrier)."""
    # Only up->down / plugged->unplugged transitions are faults: an unused port logs
    # 'Cable unplugged' and 'Link down' once at boot without ever having been up.
    line = ctx[1]
    if kind == "link_down":
        if rec["last_state"] == "up":
            drop(rec, ctx)
        elif rec["last_state"] is None and _long_after_boot(rec.get("boot"), ctx):
            # a drop unless the driver is going away: what follows decides (an up, a reload, the end)
            rec["pending_down"] = ctx
        rec["last_state"] = "down"
    elif kind == "link_up":
        if rec.get("pending_down"):
            drop(rec, rec.pop("pending_down"))
        rec["last_state"] = "up"
    elif kind in ("carrier_lost", "carrier_gained"):
        # systemd-networkd's 'Lost carrier' / 'Gained carrier' (networkd-link.c link_update): said only
        # when the carrier changed, so each loss is a drop of a link that was up
        rec.pop("pending_down", None)
        if kind == "carrier_lost":
            drop(rec, ctx)
        rec["last_state"] = "down" if kind == "carrier_lost" else "up"
    elif kind == "driver_load":
        # the driver (re)loaded (openibd restart, modprobe): the down before it was its unloading, and
        # the ports train anew
        rec.pop("pending_down", None)
        rec["last_state"] = None
    elif kind == "cable_plugged":
        rec["cable"] = "plugged"
    elif kind == "cable_unplugged":
        if rec["cable"] == "plugged":
            rec["unplugs"] += 1
            rec["evidence"].setdefault("unplug", line[:1000])
            rec["first_line"].setdefault("unplug", ctx[0])
            count_line(rec["seen"], "unplug", ctx, SEEN_KEYS, {})
        rec["cable"] = "unplugged"


# a line of AMD's GPU driver (drivers/gpu/drm/amd): its device prefix 'amdgpu 0000:c7:00.0: ', a DRM
# message from one of its functions '[drm:psp_hw_start [amdgpu]]', or its module's own 'amdgpu: ' lines
AMDGPU_RE = re.compile(r"\bamdgpu(?: [0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]:|\]\]|: )")


def other_vendor_gpu(first, nvidia_lines, sref):
    """[the finding] of GPUs AMD's driver runs, when no NVIDIA driver line is beside them: the driver's
    messages are not NVIDIA's vocabulary, so nothing in the log says those GPUs are well."""
    if first is None or nvidia_lines:
        return []
    ln, line = first
    return [finding("gpu_driver_not_nvidia", "the log's GPU driver is AMD's amdgpu and no NVIDIA driver line is in it: "
                    "gpu-runbook reads NVIDIA's driver (NVRM, Xid), so these GPUs' health is not established by it",
                    evidence=line[:1000], source=sref(ln))]


def log_findings(tz_error, since_error, unread, lines, source):
    """What is wrong with the log or the call itself, not with the node (``unread``: no line of it was
    a kernel log's or a known message)."""
    out = []
    if tz_error:
        out.append(finding("kernlog_tz_invalid", "time zone not understood, times without a zone read as "
                                                 "UTC: %s" % tz_error, source=source))
    if since_error:
        out.append(finding("kernlog_window_invalid", "time window not applied: %s" % since_error, source=source))
    if unread:
        out.append(finding("kernlog_unparseable", "no kernel-log timestamps or known kernel messages found "
                                                  "in %d line(s)" % lines, source=source))
    return out
