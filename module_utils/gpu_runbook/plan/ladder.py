# SPDX-License-Identifier: Apache-2.0
"""One host's ladder: the rungs it would climb, cheapest first, up to its diagnosed rung,
each with its target, the exact argv it would run and what blocks it on the host itself
(a busy GPU, a fault a reset cannot fix, a rung the policy does not allow). Gates that
look across hosts (ownership, caps, correlated failures) are applied by the caller."""

import re

from ..findings import normalize_pci
from ..taxonomy import RUNG_RANK, RUNG_TABLE
# the one rule for "a reset cannot fix this", shared with library/gpu_reset.py
from ..reset_rule import fault_names
from ..verdict import primary_finding
from .policy import OUR_PREFIX, one_line

SERIOUS = ("warning", "critical")
PCI_LIKE = re.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:")
NODE_SCOPES = ("gpu", "host")
JOB_RUNGS = ("nccl_env", "timeout")

# A link that went down or flapped may come from a stuck HCA or driver state: one restart of
# the IB stack on the drained node is worth a try before the cable; ib_restart's soak then
# tells them apart (counters still rising -> the cable). Symbol errors alone are the cable.
FLAP_KINDS = ("ib_link_downed", "ib_link_flap", "ib_link_dropped", "ib_link_error_recovery", "ib_port_down")


def serious(host):
    return [f for f in host.get("findings") or [] if isinstance(f, dict) and f.get("severity") in SERIOUS
            and f.get("rung") in RUNG_TABLE]


def evidence_line(host):
    top = primary_finding(serious(host))
    return one_line(top.get("message") or top.get("kind") or "", 120) if top else ""


def entry(rung, why=""):
    row = RUNG_TABLE[rung]
    return {"rung": rung, "label": row["label"]["en"], "scope": row["scope"], "disruptive": row["disruptive"],
            "status": "planned", "why": one_line(why), "target": None, "commands": [], "env": [],
            "notes": [], "blockers": []}


def block(e, words, status="blocked"):
    """Mark a rung blocked (or skipped) with a blocker named in words."""
    e["blockers"].append(words)
    if e["status"] != "skipped":
        e["status"] = status


def _pci(f):
    return normalize_pci((f.get("gpu") or {}).get("pci") or "") or None


def node_rungs(host, findings):
    """The node-scoped rungs this host's findings ask for, cheapest first, up to its rung."""
    top = RUNG_RANK.get(host.get("rung"), 0)
    rungs = {f["rung"] for f in findings if RUNG_TABLE[f["rung"]]["scope"] in NODE_SCOPES
             and RUNG_RANK[f["rung"]] <= top}
    if rungs:
        rungs.add("drain")
    return sorted(rungs, key=RUNG_RANK.get)


def _why(findings, rung):
    asking = [f for f in findings if f["rung"] == rung]
    best = primary_finding(asking) if asking else None
    return (best.get("message") or best.get("kind")) if best else ""


def drain_reason(incident, evidence, what=None):
    text = "%s %s: %s%s" % (OUR_PREFIX, incident, "%s: " % what if what else "", evidence or "see the plan")
    return one_line(text, 240)


def drain_rung(name, incident, evidence, findings, policy=None):
    e = entry("drain", _why(findings, "drain") or evidence)
    e["target"] = {"node": name}
    e["commands"] = [["scontrol", "update", "NodeName=%s" % name, "State=DRAIN",
                      "Reason=%s" % drain_reason(incident, evidence)]]
    what, job = (policy or {}).get("hung_job"), (policy or {}).get("hung_job_id")
    if not what:
        e["notes"].append("no new jobs start; running jobs finish (DRAINING -> DRAINED); none is cancelled")
        return e
    # the operator asked to release the hung job (-e hung_job=...): that one job only
    argv = ["scontrol", "requeue", job] if what == "requeue" else ["scancel", job]
    e["notes"] += ["no new jobs start; running jobs finish (DRAINING -> DRAINED)",
                   "if job %s still holds the node when the wait for DRAINED ends it is %s (%s); no other job is "
                   "touched%s" % (job, "requeued" if what == "requeue" else "cancelled", " ".join(argv),
                                  "; a requeue Slurm refuses is reported, never turned into a cancel"
                                  if what == "requeue" else "")]
    return e


def _gpu_targets(findings, unfixable):
    """GPUs a reset would act on: those the reset-asking findings name, plus the ones a
    reset cannot fix (named so the plan says why they are skipped); each with the fault
    kinds that name it."""
    gpus = {}
    for f in findings:
        pci = _pci(f)
        if pci and (f["rung"] == "gpu_reset" or pci in unfixable):
            g = gpus.setdefault(pci, {"pci": pci, "index": None, "uuid": None, "serial": None, "kinds": []})
            for k in ("index", "uuid", "serial"):
                if g[k] is None and (f.get("gpu") or {}).get(k) is not None:
                    g[k] = f["gpu"][k]
            g["kinds"].extend(k for k in fault_names(f) if k not in g["kinds"])
    return [gpus[k] for k in sorted(gpus)]


def _busy(apps, pci):
    """Compute processes on the GPU ``pci``; None when the list is unreadable."""
    if not isinstance(apps, list):
        return None
    out = []
    for a in apps:
        if not isinstance(a, dict):
            return None
        if normalize_pci(str(a.get("pci") or a.get("gpu_bus_id") or "")) == pci:
            out.append("%s (pid %s)" % (a.get("process") or a.get("process_name") or "?", a.get("pid", "?")))
    return sorted(out)


def gpu_reset_rung(findings, unfixable, host_facts):
    e = entry("gpu_reset", _why(findings, "gpu_reset") or next(iter(v[0] for v in unfixable.values()), ""))
    targets = _gpu_targets(findings, unfixable)
    e["target"] = {"gpus": targets}
    if not targets and None in unfixable:
        block(e, unfixable[None][0], "skipped")
    elif not targets:
        block(e, "no GPU named by the diagnosis: a reset needs the GPU's PCI address")
    apps = host_facts.get("compute_apps", []) if "compute_apps" in host_facts else []
    for g in targets:
        if g["pci"] in unfixable:
            block(e, "GPU %s: %s" % (g["pci"], unfixable[g["pci"]][0]), "skipped")
            continue
        e["commands"].append(["nvidia-smi", "-r", "-i", g["pci"]])
        busy = _busy(apps, g["pci"])
        if busy is None:
            block(e, "GPU %s: the compute process list is unreadable, so it may be in use" % g["pci"])
        elif busy:
            block(e, "GPU %s has %d compute process%s: %s" % (g["pci"], len(busy), "" if len(busy) == 1 else "es",
                                                             ", ".join(busy)))
    if e["commands"] and e["status"] == "skipped":
        e["status"] = "planned"  # some GPUs can be reset, the others are named as skipped
    e["notes"].append("only on a drained node; persistence mode, DCGM and nvidia_drm are released and restored "
                      "around the reset; each GPU is re-read after it")
    return e


def flapping(host, findings):
    """Link flaps on an IB-verdict host: worth one restart of the IB stack before the cable."""
    return host.get("verdict") == "ib_network" and any(f.get("kind") in FLAP_KINDS for f in findings)


def ib_restart_rung(findings, policy):
    asking = [f for f in findings if f["rung"] == "ib_restart" or f.get("kind") in FLAP_KINDS]
    e = entry("ib_restart", _why(findings, "ib_restart") or (primary_finding(asking) or {}).get("message", ""))
    # kernel lines name the HCA by its PCI address: ib_restart waits for the named devices only
    hcas = sorted({(f.get("ib") or {}).get("device") for f in asking
                   if (f.get("ib") or {}).get("device") and not PCI_LIKE.match(f["ib"]["device"])})
    e["target"] = {"hcas": hcas}
    e["commands"] = [["systemctl", "restart", policy["ib_unit"]]]
    if any(f.get("kind") in FLAP_KINDS for f in asking) and not any(f["rung"] == "ib_restart" for f in asking):
        e["notes"].append("one try: a link that flaps from a stuck HCA or driver state comes back clean; "
                          "error counters still rising over the soak mean the cable (the node stays drained)")
    e["notes"].append("only on a drained node with nothing using the IB stack (Lustre o2ib, NFS/NVMe over RDMA, "
                      "opensm, holders of /dev/infiniband are pre-checked); nvidia_peermem is unloaded and reloaded "
                      "around it; every port must come back Active/LinkUp")
    return e


def reboot_argv(name, reason):
    """Slurm's reboot of a node we drained: no ASAP and no nextstate, so the DRAIN flag stays
    after the boot (scontrol(1): ASAP, nextstate=RESUME and nextstate=DOWN each clear it) and
    the node returns to service only when verify has seen it healthy."""
    return ["scontrol", "reboot"] + (["Reason=%s" % reason] if reason else []) + [name]


def reboot_rung(name, incident, evidence, findings):
    e = entry("reboot", _why(findings, "reboot") or evidence)
    e["target"] = {"node": name}
    e["commands"] = [reboot_argv(name, drain_reason(incident, evidence, "reboot"))]
    e["notes"].append("the node stays drained through the boot; once it is back the ladder re-gathers and "
                      "verifies it, and resumes it only when it is healthy and the drain is still ours")
    return e


def rma_rung(findings, evidence):
    e = entry("rma", _why(findings, "rma") or evidence)
    gpus = sorted({_pci(f) for f in findings if _pci(f) and f["rung"] in ("rma", "reboot")})
    e["target"] = {"gpus": gpus} if gpus else None
    e["notes"].append("leave the node drained; the reason names what to replace and an RMA bundle goes "
                      "with the ticket")
    return e
