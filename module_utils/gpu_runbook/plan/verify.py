# SPDX-License-Identifier: Apache-2.0
"""What a host needs once the ladder has climbed: resume it, or leave it drained with a Slurm
reason that says what is needed -- "reboot", "replace GPU <serial> at <PCI>", "replace the
cable of <hca> port 1", "reset refused: <who holds it>" -- and which GPUs and IB ports an RMA
bundle names.

    assess(analysis_host, outcomes, plan_host, allow_reboot, catalog) -> assessment

``analysis_host``: the host's analysis from a gather made AFTER the ladder started (verdict,
severity, findings); ``outcomes``: the rung roles' outcomes ({rung, result, message, escalate,
...}); ``plan_host``: the host's plan entry (schema gpu-runbook/plan/v1); ``catalog``: what
``gpu_catalog`` knows about the host's GPUs (serials of GPUs that are gone now included).
Pure, and partial input is normal input: what is missing reads "unknown", never a traceback.
"""

from ..findings import normalize_pci
from ..infiniband.counters import COUNTER_RULES, GENERIC_KIND
from .policy import one_line

# Error counters are cumulative: after an IB restart whose soak saw them stand still, their
# totals are history, not a fault of now.
COUNTER_KINDS = frozenset([r["kind"] for r in COUNTER_RULES.values() if r.get("kind")] + [GENERIC_KIND])

SERIOUS = ("warning", "critical")
ESCALATIONS = ("rma", "cable", "reboot")  # strongest first
BAD_RESULTS = ("refused", "failed")
LABEL = {"gpu_reset": "reset", "ib_restart": "IB restart", "drain": "drain", "reboot": "reboot", "rma": "RMA"}
MAX_BODY = 300
_BAD_IDS = ("", "n/a", "[n/a]", "none", "null", "unknown", "[unknown error]", "not found")


def dicts(v):
    return [x for x in v if isinstance(x, dict)] if isinstance(v, (list, tuple)) else []


def clean_id(v):
    """A usable id as a string, or None ('N/A', 'Unknown', lists and dicts are none)."""
    if v is None or isinstance(v, (bool, dict, list, tuple)):
        return None
    s = str(v).strip()
    return None if s.lower() in _BAD_IDS else s


def serious(host):
    return [f for f in dicts((host or {}).get("findings")) if f.get("severity") in SERIOUS]


def gpus_in(facts):
    """GPU records of a gather's facts ({"gpu": {"gpus": [...]}}), of nvidia-smi facts
    ({"gpus": [...]}) or a plain list."""
    if isinstance(facts, list):
        return dicts(facts)
    if not isinstance(facts, dict):
        return []
    if isinstance(facts.get("gpu"), dict):
        return dicts(facts["gpu"].get("gpus"))
    return dicts(facts.get("gpus"))


def gpu_ref(raw):
    """{pci, uuid, index, serial, model, vbios} of a GPU record, finding ref or history line."""
    raw = raw if isinstance(raw, dict) else {}
    pci = clean_id(raw.get("pci") or raw.get("pci_bus_id"))
    idx = raw.get("index")
    return {"pci": normalize_pci(pci) if pci else None, "uuid": clean_id(raw.get("uuid")),
            "serial": clean_id(raw.get("serial")), "index": idx if isinstance(idx, int) and not isinstance(idx, bool)
            else None, "model": clean_id(raw.get("name") or raw.get("model")),
            "vbios": clean_id(raw.get("vbios") or raw.get("vbios_version"))}


def same_ids(a, b):
    """Same GPU: the strongest id both have agrees (serial, else UUID, else PCI)."""
    for k in ("serial", "uuid", "pci"):
        if a.get(k) and b.get(k):
            return str(a[k]).lower() == str(b[k]).lower()
    return False


def _merge(into, ref):
    for k, v in ref.items():
        if v is not None and into.get(k) is None:
            into[k] = v


def gpu_catalog(facts_list=(), findings=(), history=(), host=None):
    """Every GPU the inputs name, one record each: identity from the gathers' facts first (the
    fresh one first), then the findings' GPU refs, then the ledger's history of ``host``."""
    out = []

    def add(ref):
        if not (ref["pci"] or ref["uuid"] or ref["serial"]):
            return
        for rec in out:
            if same_ids(rec, ref) or (rec.get("pci") and rec["pci"] == ref["pci"]):
                _merge(rec, ref)
                return
        out.append(dict(ref))

    for facts in facts_list or ():
        for g in gpus_in(facts):
            add(gpu_ref(g))
        # the kernel log names GPUs nvidia-smi cannot see any more ("NVRM: GPU at PCI:...: GPU-uuid")
        klog = facts.get("kernel_log") if isinstance(facts, dict) else None
        known = klog.get("gpus") if isinstance(klog, dict) else None
        for pci, ids in sorted(known.items()) if isinstance(known, dict) else ():
            if isinstance(ids, dict):
                add(gpu_ref(dict(ids, pci=pci)))
    for f in dicts(list(findings or ())):
        if isinstance(f.get("gpu"), dict):
            add(gpu_ref(f["gpu"]))
    for e in dicts(list(history or ())):
        if host is None or str(e.get("host") or "").strip().lower() == str(host).strip().lower():
            add(gpu_ref(e.get("gpu") if isinstance(e.get("gpu"), dict) else e))
    return out


def identify(raw, catalog):
    """A GPU named by a plan target, an outcome or a finding (a dict or a PCI/UUID string),
    completed from ``catalog``; None when it names nothing."""
    if isinstance(raw, str):
        raw = {"uuid": raw} if raw.strip().upper().startswith(("GPU-", "MIG-")) else {"pci": raw}
    ref = gpu_ref(raw)
    if not (ref["pci"] or ref["uuid"] or ref["serial"]):
        return None
    for rec in catalog or ():
        if same_ids(rec, ref) or (ref["pci"] and rec.get("pci") == ref["pci"]):
            _merge(ref, rec)
    return ref


def gpu_words(g):
    """'GPU 1652221000123 at 0000:ab:00.0', or with the serial unknown the index and UUID."""
    if g.get("serial"):
        who = "GPU %s" % g["serial"]
    else:
        bits = ["S/N unknown"] + (["index %d" % g["index"]] if g.get("index") is not None else []) + \
               ([g["uuid"]] if g.get("uuid") else [])
        who = "GPU (%s)" % ", ".join(bits)
    return "%s at %s" % (who, g.get("pci") or "unknown PCI address")


def _outcomes(outcomes):
    return [o for o in dicts(outcomes) if isinstance(o.get("rung"), str)]


def _planned(plan_host, rung):
    for r in dicts((plan_host or {}).get("rungs")):
        if r.get("rung") == rung and r.get("status") in ("planned", "done"):
            return r
    return None


def _rung_entry(plan_host, rung):
    for r in dicts((plan_host or {}).get("rungs")):
        if r.get("rung") == rung:
            return r
    return None


def names_gpu(f, g):
    ref = gpu_ref(f.get("gpu")) if isinstance(f.get("gpu"), dict) else None
    return bool(ref) and (same_ids(ref, g) or bool(ref["pci"] and ref["pci"] == g.get("pci")))


def cause_of(g, findings):
    """'Xid 79; gpu_fallen_off_bus, gpu_handle_error' from the findings that name GPU ``g``."""
    mine = [f for f in dicts(list(findings or ())) if names_gpu(f, g) and f.get("severity") in SERIOUS]
    xids = sorted({f["xid"] for f in mine if isinstance(f.get("xid"), int)})
    kinds = sorted({str(f.get("kind")) for f in mine if f.get("kind") and f.get("kind") != "xid"})
    words = (["Xid %s" % ", ".join(str(x) for x in xids)] if xids else []) + ([", ".join(kinds[:3])] if kinds else [])
    return "; ".join(words)


def _target_gpus(entry):
    target = (entry or {}).get("target")
    return (target.get("gpus") or []) if isinstance(target, dict) and isinstance(target.get("gpus"), list) else []


def _gpu_targets(fresh, earlier, outs, plan_host, catalog):
    """GPUs a person has to replace (or reboot for): named by the rungs that escalated (the
    plan's gpu_reset target when the outcome names none), the plan's rma rung, and the fresh
    critical findings whose rung a reset cannot reach."""
    raws = []
    for o in outs:
        if o["rung"] != "gpu_reset":
            continue
        per_gpu = dicts(o.get("gpus"))
        raws.extend(g for g in per_gpu if g.get("escalate") in ("rma", "reboot"))
        if o.get("escalate") in ("rma", "reboot") and not any(g.get("escalate") for g in per_gpu):
            raws.extend(per_gpu or _target_gpus(_rung_entry(plan_host, "gpu_reset")))
    raws.extend(_target_gpus(_planned(plan_host, "rma")))
    raws.extend(f["gpu"] for f in serious(fresh) if f.get("severity") == "critical"
                and f.get("rung") in ("reboot", "rma") and isinstance(f.get("gpu"), dict))
    out = []
    for raw in raws:
        g = identify(raw, catalog)
        if g and not any(same_ids(g, o) or (g["pci"] and g["pci"] == o.get("pci")) for o in out):
            out.append(g)
    for g in out:
        g["cause"] = cause_of(g, serious(fresh) + dicts(list(earlier or [])))
    return out


def _port(text_or_dict):
    """'mlx5_0/1', 'mlx5_0', {"device", "port"} or {"port": "mlx5_0/1"} -> {"device", "port"}
    (port 1 by default)."""
    if isinstance(text_or_dict, dict) and isinstance(text_or_dict.get("port"), str) and not text_or_dict.get("device"):
        text_or_dict = text_or_dict["port"]
    if isinstance(text_or_dict, dict):
        dev, port = clean_id(text_or_dict.get("device") or text_or_dict.get("hca")), text_or_dict.get("port")
    else:
        dev, _, port = str(text_or_dict or "").partition("/")
        dev = clean_id(dev)
    if not dev:
        return None
    try:
        port = int(port) if port not in (None, "") else 1
    except (TypeError, ValueError):
        port = 1
    return {"device": dev, "port": port}


def _cable_ports(fresh, outs, plan_host):
    raws = []
    for o in outs:
        if o["rung"] == "ib_restart" and o.get("escalate") == "cable":
            for key in ("still_rising", "not_back"):
                if isinstance(o.get(key), dict):
                    raws.extend(sorted(o[key]))
            if not raws:  # the ports the rung says failed, else every port it names
                listed = [x for x in (o.get("ports") if isinstance(o.get("ports"), list) else [])]
                failed = [x for x in listed if isinstance(x, dict) and x.get("result") == "failed"]
                raws.extend(failed or listed)
            raws.extend([] if raws else o.get("hcas") if isinstance(o.get("hcas"), list) else [])
    if not raws:
        ib = _rung_entry(plan_host, "ib_restart")
        target = (ib or {}).get("target") if isinstance((ib or {}).get("target"), dict) else {}
        raws.extend(target.get("hcas") or [])
    if not raws:
        raws.extend(f["ib"] for f in serious(fresh) if isinstance(f.get("ib"), dict))
    out = []
    for raw in raws:
        p = _port(raw)
        if p and p not in out:
            out.append(p)
    return out


def rebooted(outs):
    """True when a reboot of this ladder brought the node back (outcome {rung: reboot, result: ok})."""
    return any(o["rung"] == "reboot" and o.get("result") == "ok" for o in outs)


def _escalations(fresh, outs, plan_host):
    esc = {o.get("escalate") for o in outs if o.get("escalate") in ESCALATIONS}
    # a fault that needs a reboot and is still there after the reboot is the lemon rule's
    # evidence (gpud: hardware inspection once the same fault survives reboots): an RMA, not
    # another reboot
    after_boot = rebooted(outs)
    if after_boot:
        esc.discard("reboot")
    for f in serious(fresh):
        if f.get("severity") == "critical" and f.get("rung") in ("reboot", "rma"):
            esc.add("rma" if after_boot else f["rung"])
    if _planned(plan_host, "rma"):
        esc.add("rma")
    return esc


def _top_cause(fresh):
    top = sorted(serious(fresh), key=lambda f: (f.get("severity") == "critical", f.get("xid") is not None),
                 reverse=True)
    return one_line(top[0].get("message") or top[0].get("kind") or "", 110) if top else ""


def _rungs_tried(outs):
    return [o["rung"] for o in outs if o.get("result") not in ("none", None) and o["rung"] != "drain"]


def assess(analysis_host, outcomes=None, plan_host=None, allow_reboot=False, catalog=None, earlier_findings=None):
    """-> {healthy, resume, action: resume|reboot|drain, escalate, reason, needs, gpus, ports,
    bundle, problems, verdict, severity}; see the module doc. Input it cannot read gives the
    safe side: not resumed, the reason says why (``errors``)."""
    try:
        return _assess(analysis_host, outcomes, plan_host, allow_reboot, catalog, earlier_findings)
    except Exception as exc:  # noqa: BLE001 -- bad input is normal input: stay drained, say why
        why = "verify could not decide from this input: %s: %s" % (type(exc).__name__, one_line(exc, 160))
        return {"healthy": False, "resume": False, "action": "drain", "escalate": None, "reason": why,
                "needs": [why], "gpus": [], "ports": [], "bundle": False, "problems": [], "verdict": "unknown",
                "severity": "unknown", "errors": [why]}


def _assess(analysis_host, outcomes, plan_host, allow_reboot, catalog, earlier_findings):
    fresh = analysis_host if isinstance(analysis_host, dict) else {}
    plan_host = plan_host if isinstance(plan_host, dict) else {}
    outs = _outcomes(outcomes)
    fresh, settled = _without_settled_counters(fresh, outs)
    healthy = (fresh.get("verdict") == "healthy" or bool(settled)) and not serious(fresh)
    # a rung that only asked for a reboot is answered once the reboot brought the node back
    answered = rebooted(outs)
    problems = [o for o in outs if o.get("result") in BAD_RESULTS
                or (o.get("escalate") and not (answered and o["escalate"] == "reboot"))]
    esc = _escalations(fresh, outs, plan_host)
    needs = ["%s %s: %s" % (LABEL.get(o["rung"], o["rung"]), o["result"], one_line(o.get("message") or "no message", 120))
             for o in outs if o.get("result") in BAD_RESULTS
             or (o.get("result") == "skipped" and not healthy and not o.get("escalate") and o.get("message"))]
    gpus = _gpus_in_need(fresh, earlier_findings, outs, plan_host, catalog, esc)
    ports = _cable_ports(fresh, outs, plan_host) if "cable" in esc else []
    escalate = next((e for e in ESCALATIONS if e in esc), None)
    if "reboot" in esc and not allow_reboot and "rma" not in esc and "cable" not in esc:
        needs.append("stay drained: needs a reboot (-e allow_reboot=true)%s" % _because(gpus, fresh))
    elif escalate == "reboot":
        needs.append("reboot%s" % _because(gpus, fresh))
    if "rma" in esc:
        still = "; still failing after the reboot" if rebooted(outs) else ""
        needs.extend("replace %s (%s%s)" % (gpu_words(g), g.get("cause") or "see the RMA bundle", still)
                     if g.get("cause") or still else "replace %s" % gpu_words(g) for g in gpus)
        if not gpus:
            needs.append("replace hardware (RMA): %s%s" % (_top_cause(fresh) or "see the RMA bundle", still))
    needs.extend("replace the cable of %s port %s" % (p["device"], p["port"]) for p in ports)
    if not needs and problems and healthy:  # healthy now, but a rung escalated: a person looks
        needs.extend("%s escalated to %s: %s" % (LABEL.get(o["rung"], o["rung"]), o["escalate"],
                                                 one_line(o.get("message") or "no message", 120))
                     for o in problems if o.get("escalate"))
    if not needs and not healthy:
        tried = _rungs_tried(outs)
        needs.append("still %s%s: %s" % (fresh.get("verdict") or "unknown",
                                         " after %s" % ", ".join(tried) if tried else "",
                                         _top_cause(fresh) or "no fresh analysis of the host"))
    resume = healthy and not problems
    action = "resume" if resume else (
        "reboot" if escalate == "reboot" and allow_reboot and not any(o.get("result") in BAD_RESULTS for o in outs)
        else "drain")
    return {"healthy": healthy, "resume": resume, "action": action, "escalate": escalate,
            "reason": "verified healthy" if resume else one_line("; ".join(needs), MAX_BODY),
            "needs": needs, "gpus": gpus, "ports": ports,
            "bundle": not resume and escalate in ("rma", "cable"),
            "problems": [{k: o.get(k) for k in ("rung", "result", "message", "escalate")} for o in problems],
            "verdict": fresh.get("verdict") or "unknown", "severity": fresh.get("severity") or "unknown"}


def _quiet_hcas(outs):
    """HCAs whose ports an IB restart brought back with counters standing still over its soak."""
    out = set()
    for o in outs:
        if o["rung"] != "ib_restart" or o.get("result") not in ("ok", "failed"):
            continue
        for p in dicts(o.get("ports")):
            if p.get("result") == "ok" and isinstance(p.get("port"), str) and p["port"]:
                out.add(p["port"].split("/")[0])
    return out


def _without_settled_counters(fresh, outs):
    """(the host with counter findings on quiet HCAs left out, those left out)."""
    quiet = _quiet_hcas(outs)
    if not quiet:
        return fresh, []
    settled, keep = [], []
    for f in dicts(fresh.get("findings")):
        if f.get("kind") in COUNTER_KINDS and (f.get("ib") or {}).get("device") in quiet:
            settled.append(f)
        else:
            keep.append(f)
    return (dict(fresh, findings=keep) if settled else fresh), settled


def _gpus_in_need(fresh, earlier, outs, plan_host, catalog, esc):
    if not ({"rma", "reboot"} & esc):
        return []
    return _gpu_targets(fresh, earlier, outs, plan_host, catalog or [])


def _because(gpus, fresh):
    if gpus:
        return ": " + ", ".join("%s%s" % (g.get("pci") or "GPU", " (%s)" % g["cause"] if g.get("cause") else "")
                                for g in gpus)
    cause = _top_cause(fresh)
    return ": " + cause if cause else ""

