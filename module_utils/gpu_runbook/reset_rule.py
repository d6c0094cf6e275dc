# SPDX-License-Identifier: Apache-2.0
"""The one rule for "a GPU reset cannot fix this": read by the plan (which GPUs it shows a
reset for) and by ``library/gpu_reset.py`` (what it refuses), so the plan never shows a reset
the module will refuse.

A fault whose rung -- the taxonomy's for a finding kind, NVIDIA's Xid catalog for ``xid:N`` --
sits above every rung a reset sits among (host-wide, disruptive, costlier than the IB restart:
reboot, RMA) is one a reset cannot fix; the costliest one wins. A name nobody declared (and an
Xid the catalog does not know) is ``unknown``: the module refuses on it, never a destructive
step on doubt, and the plan says so. A kind whose rung is decided per finding (bare ``xid``)
says nothing by itself.

Above the taxonomy and the Xid catalog (it reads both); the rung table is the taxonomy's.
"""

import re

from .findings import normalize_pci
from .taxonomy import KINDS, RUNG_RANK, RUNG_TABLE
from .xid_catalog import lookup as xid_lookup

_XID_NAME_RE = re.compile(r"^xid[\s:_-]*(\d+)$", re.I)
# names people (and ladder-facts.md) use for a kind declared under another name
KIND_ALIASES = {"remap_failure": "row_remap_failure", "fallen_off_bus": "gpu_fallen_off_bus"}


def escalation_rungs():
    """Rungs above every rung a reset sits among: host-wide, disruptive and costlier than
    the IB restart (reboot, rma), read from the rung table."""
    floor = RUNG_RANK["ib_restart"]
    return tuple(r for r, row in sorted(RUNG_TABLE.items(), key=lambda kv: kv[1]["order"])
                 if row["order"] > floor and row["disruptive"] and row["scope"] == "host")


def rung_of_fault(name):
    """(rung, label, known) of one fault name: a finding kind, or ``xid:79`` / ``xid_79``."""
    n = str(name).strip()
    m = _XID_NAME_RE.match(n)
    if m:
        entry = xid_lookup(int(m.group(1)))
        return (entry["rung"] if entry else None), "Xid %s" % m.group(1), entry is not None
    info = KINDS.get(KIND_ALIASES.get(n, n))
    return (info["rung"] if info else None), n[:80], info is not None


def fault_names(finding):
    """The names of one finding's faults, as gpu_reset's ``fault_kinds`` takes them: the kind,
    plus ``xid:N`` when it carries an Xid."""
    out = [finding["kind"]] if finding.get("kind") else []
    if isinstance(finding.get("xid"), int) and not isinstance(finding.get("xid"), bool):
        out.append("xid:%d" % finding["xid"])
    return out


def reset_cannot_fix(fault_kinds):
    """-> {"escalate": "reboot" | "rma" | None, "blocking": [labels], "unknown": [names]}."""
    high = escalation_rungs()
    worst, blocking, unknown = None, [], []
    for name in fault_kinds or ():
        if not isinstance(name, str):
            unknown.append(repr(name)[:80])
            continue
        rung, label, known = rung_of_fault(name)
        if not known:
            unknown.append(label)
        elif rung in high:
            if "%s (%s)" % (label, rung) not in blocking:
                blocking.append("%s (%s)" % (label, rung))
            if worst is None or RUNG_RANK[rung] > RUNG_RANK[worst]:
                worst = rung
    return {"escalate": worst, "blocking": blocking, "unknown": unknown}


def unfixable_by_reset(findings):
    """{pci: (why, rung or None, shown)} for the GPUs whose faults a reset cannot fix, by the rule
    above over each finding's ``fault_names`` (pci None: the finding names no GPU), and by the
    finding's own rung where the message decided it (Xid 154's recovery action): stricter than
    the module, never looser. ``rung`` is where the ladder goes instead; None for a fault nobody
    declared (no reset, no escalation either: a person looks). ``shown``: the plan names the
    skipped reset even where nothing asked for one -- an Xid (the question an SRE asks first:
    "why not reset it?") or an RMA; a driver or fabric state that needs a reboot goes there
    without a word about resets."""
    high = escalation_rungs()
    per_gpu = {}
    for f in findings:
        if not isinstance(f, dict):
            continue
        pci = normalize_pci(str((f.get("gpu") or {}).get("pci") or "")) or None
        names, own = per_gpu.setdefault(pci, ([], []))
        names.extend(fault_names(f))
        if f.get("rung") in high:
            own.append(("%s (%s)" % ("Xid %d" % f["xid"] if isinstance(f.get("xid"), int) else f.get("kind"),
                                     f["rung"]), f["rung"]))
    out = {}
    for pci, (names, own) in per_gpu.items():
        v = reset_cannot_fix(names)
        blocking, worst = list(v["blocking"]), v["escalate"]
        for label, rung in own:
            if label not in blocking:
                blocking.append(label)
            if worst is None or RUNG_RANK[rung] > RUNG_RANK[worst]:
                worst = rung
        shown = worst == "rma" or any(n.startswith("xid:") for n in names)
        if worst:
            out[pci] = ("a reset cannot fix %s: escalate to %s" % (", ".join(blocking),
                                                                   "RMA" if worst == "rma" else worst), worst, shown)
        elif v["unknown"]:
            out[pci] = ("fault kind(s) %s are declared nowhere: no reset on a fault nobody declared"
                        % ", ".join(v["unknown"]), None, True)
    return out
