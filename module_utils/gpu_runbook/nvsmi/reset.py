# SPDX-License-Identifier: Apache-2.0
"""Pure helpers of the GPU reset rung (``library/gpu_reset.py``): which GPU was asked for,
whether the faults that led here are ones a reset can fix, and what nvidia-smi said to
``--query-gpu``, ``-pm`` and ``-r``, and to ``-q -x`` after the reset.

Facts they rest on (../shared/design/ladder-facts.md, "GPU reset"): ``nvidia-smi -r`` needs
root and a GPU no client holds -- compute processes, persistence mode (NVIDIA/NVSentinel #1690,
PR #1692), monitors; the refusal is "The following GPUs could not be reset: GPU ...: In use by
another client" with exit 255; exit 15 is a GPU that is lost, exit 4 no permission
(nvidia-smi(1), RETURN VALUE; ``failed_run.EXIT_CODES``). A pending row remap is applied by the
reset; a row-remap failure, a GPU that fell off the bus (Xid 79) or a lost GPU are not fixed
by one: those go up the ladder (reboot / RMA), whose rungs come from the taxonomy.

Text in, dicts out, never raises on garbage; standard library only.
"""

import re

from ..findings import normalize_pci
from .model import PCI_RE, as_text, clean, split_csv, to_bool, to_int

UUID_RE = re.compile(r"^GPU-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_FULL_PCI_RE = re.compile(r"^(?:[0-9A-Fa-f]{4}|[0-9A-Fa-f]{8}):[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$")

# the fields the pre-check asks ``--query-gpu`` for, in this order (``noheader``)
IDENTITY_FIELDS = ("index", "pci.bus_id", "uuid", "persistence_mode")

_IN_USE = "in use by another client"
_LOST_MARKERS = ("unable to determine the device handle", "gpu is lost", "fallen off the bus",
                 "gpu has fallen off")
_NO_PERMISSION = ("insufficient permissions", "permission denied", "not have permission")


def parse_gpu_id(text):
    """-> ("pci", "0000:3b:00.0") | ("uuid", "GPU-...") | (None, why). A PCI bus id needs its
    domain, bus, device and function (``0000:3b:00.0`` or ``00000000:3B:00.0``); an index is
    refused on purpose: indexes move when a GPU drops out, a bus id does not."""
    t = clean(text)
    if not t:
        return None, "gpu is empty: give a PCI bus id (0000:3b:00.0) or a GPU UUID"
    if UUID_RE.match(t):
        return "uuid", t
    if _FULL_PCI_RE.match(t):
        return "pci", normalize_pci(t)
    if t.isdigit():
        return None, ("gpu %r is an index; indexes change when a GPU drops out: give its PCI bus id "
                      "(0000:3b:00.0) or UUID" % t)
    return None, "gpu %r is neither a PCI bus id (0000:3b:00.0) nor a GPU UUID (GPU-xxxxxxxx-...)" % t[:80]


# ----------------------------------------------------------------------------------- fault kinds
# "A reset cannot fix this" is not decided here: library/gpu_reset.py and the plan read the one rule
# of reset_rule.py (the taxonomy's rungs and the Xid catalog).

# ----------------------------------------------------------------------------------- --query-gpu

def parse_identity_csv(text, fields=IDENTITY_FIELDS):
    """``nvidia-smi --query-gpu=index,pci.bus_id,uuid,persistence_mode --format=csv,noheader``
    -> [{"index", "pci", "uuid", "persistence"}]; rows that do not read as a GPU are skipped."""
    out = []
    names = [f.split(".")[-1] if f != "pci.bus_id" else "pci" for f in fields]
    for line in as_text(text).splitlines():
        cols = split_csv(line.strip())
        if len(cols) != len(names):
            continue
        row = dict(zip(names, cols))
        pci = PCI_RE.search(row.get("pci", ""))
        if not pci:
            continue
        uuid = row.get("uuid", "")
        out.append({"index": to_int(row.get("index")), "pci": normalize_pci(pci.group(0)),
                    "uuid": uuid if UUID_RE.match(uuid) else None,
                    "persistence": to_bool(row.get("persistence_mode"))})
    return out


def find_gpu(rows, kind, value):
    """The row of the GPU asked for (by normalised PCI bus id or UUID), or None."""
    for r in rows:
        if (kind == "pci" and r["pci"] == value) or (kind == "uuid" and (r["uuid"] or "").lower() == value.lower()):
            return r
    return None


def says_lost(text, rc=None):
    """nvidia-smi could not reach the GPU (exit 15, or the driver's 'device handle' message)."""
    low = as_text(text).lower()
    return rc == 15 or any(m in low for m in _LOST_MARKERS)


def says_not_found(text, rc=None):
    return rc == 6 or "no devices were found" in as_text(text).lower()


def holders_message(pci, procs):
    """'GPU 0000:3b:00.0 is held by python (pid 4711), python (pid 4712)'."""
    names = ["%s (pid %s)" % (p.get("process") or "?", p.get("pid")) for p in procs]
    return "GPU %s is held by %s" % (pci, ", ".join(names))


# ----------------------------------------------------------------------------------- -pm and -r

def parse_persistence_output(text, rc):
    """``nvidia-smi -pm 0|1 -i <gpu>`` -> {"ok", "outcome", "message"}: outcome is "set",
    "already", "gpu_lost", "no_permission" or "failed"."""
    t = as_text(text)
    low = t.lower()
    first = next((l.strip() for l in t.splitlines() if l.strip()), "")
    if rc == 0 and "persistence mode" in low:
        return {"ok": True, "outcome": "already" if "already" in low else "set", "message": first}
    if says_lost(t, rc):
        return {"ok": False, "outcome": "gpu_lost", "message": first or "GPU lost (exit 15)"}
    if rc == 4 or any(m in low for m in _NO_PERMISSION):
        return {"ok": False, "outcome": "no_permission", "message": first or "no permission (exit 4)"}
    return {"ok": False, "outcome": "failed",
            "message": "nvidia-smi -pm exited %s%s" % (rc, (": " + first[:200]) if first else " and printed nothing")}


def parse_reset_output(text, rc):
    """``nvidia-smi -r -i <gpu>`` -> {"outcome", "reset": [pci], "held": [pci], "holder_text",
    "escalate", "message"}. outcome: "reset" (exit 0 and 'successfully reset'), "in_use"
    (255 + 'In use by another client'), "gpu_lost" (15 -> escalate reboot), "no_permission" (4),
    "timeout" (124/137 from the deadline -> escalate reboot), "failed" (anything else, with the text)."""
    t = as_text(text)
    low = t.lower()
    lines = [l.strip() for l in t.splitlines() if l.strip()]
    reset = [normalize_pci(m.group(0)) for l in lines if "successfully reset" in l.lower()
             for m in [PCI_RE.search(l)] if m]
    held = [normalize_pci(m.group(0)) for l in lines if _IN_USE in l.lower() for m in [PCI_RE.search(l)] if m]
    res = {"outcome": "failed", "reset": reset, "held": held, "holder_text": "", "escalate": None,
           "message": ""}
    if rc == 0 and reset:
        res.update(outcome="reset", message=lines[0])
    elif held or _IN_USE in low or "currently in use" in low:
        explain = [l for l in lines if _IN_USE not in l.lower() and "could not be reset" not in l.lower()]
        res.update(outcome="in_use", holder_text=" ".join(explain)[:600],
                   message="the reset was refused: %s" % "; ".join(l for l in lines if _IN_USE in l.lower()
                                                                   or "currently in use" in l.lower())[:400])
    elif says_lost(t, rc):
        res.update(outcome="gpu_lost", escalate="reboot",
                   message="the GPU was lost during the reset (exit %s): %s" % (rc, lines[0] if lines else "no text"))
    elif rc in (124, 137):
        res.update(outcome="timeout", escalate="reboot", message="nvidia-smi -r did not finish before the deadline")
    elif rc == 4 or any(m in low for m in _NO_PERMISSION):
        res.update(outcome="no_permission", message="no permission to reset (exit %s): %s"
                   % (rc, lines[0] if lines else "run as root"))
    else:
        res["message"] = "nvidia-smi -r exited %s%s" % (rc, (": " + " | ".join(lines)[:400]) if lines
                                                         else " and printed nothing")
    return res


# ----------------------------------------------------------------------------------- MIG

def _on(value):
    return clean(value).lower() == "enabled"


def mig_blocker(g):
    """Why a reset of this GPU (a record of ``parse_nvidia_smi``) would change its MIG setup,
    or None. MIG mode survives a reset but its GPU instances and compute instances do not (every
    MIG slice and the jobs on it are gone until someone recreates them); a pending MIG mode
    change is applied by the reset (the GPU comes back in the other mode). [ladder-facts R3]"""
    cur, pend = (g or {}).get("mig_mode"), (g or {}).get("mig_mode_pending")
    if _on(cur):
        return ("MIG mode is Enabled: a reset destroys its GPU instances and compute instances (MIG slices do not "
                "survive a reset; recreate them after, e.g. with nvidia-mig-parted)")
    if pend and cur and clean(pend).lower() != clean(cur).lower() and "n/a" not in (clean(pend).lower(),
                                                                                      clean(cur).lower()):
        return "a MIG mode change is pending (%s -> %s): a reset applies it" % (clean(cur), clean(pend))
    return None


# ----------------------------------------------------------------------------------- after

def after_reset(facts, pci):
    """What the re-read after the reset says about GPU ``pci`` (facts of ``parse_nvidia_smi``):
    {"found", "remap_pending", "retired_pages_pending", "volatile_uncorrectable", "reset_required",
    "errors", "verified", "not_verified"}. ``verified`` only when the GPU was read and none of
    pending remap / pending page retirement / volatile uncorrectable ECC / reset required / an
    error field is left. A value the GPU does not report (N/A: no row remapper, ECC off) counts
    as nothing left."""
    g = next((x for x in (facts or {}).get("gpus") or [] if x.get("pci") == pci), None)
    out = {"found": g is not None, "remap_pending": None, "retired_pages_pending": None,
           "volatile_uncorrectable": None, "reset_required": None, "errors": [], "verified": False,
           "not_verified": []}
    if g is None:
        out["not_verified"].append("GPU %s was not in the re-read" % pci)
        return out
    out["remap_pending"] = (g.get("remapped_rows") or {}).get("pending")
    out["retired_pages_pending"] = (g.get("retired_pages") or {}).get("pending")
    out["volatile_uncorrectable"] = ((g.get("ecc") or {}).get("volatile") or {}).get("uncorrectable")
    out["reset_required"] = g.get("reset_required")
    out["errors"] = list(g.get("errors") or [])
    why = out["not_verified"]
    if out["remap_pending"]:
        why.append("a row remap is still pending")
    if out["retired_pages_pending"]:
        why.append("a page retirement is still pending")
    if out["volatile_uncorrectable"]:
        why.append("volatile uncorrectable ECC is %d" % out["volatile_uncorrectable"])
    if out["reset_required"]:
        why.append("the GPU still says reset required")
    if out["errors"]:
        why.append("fields read as errors: %s" % ", ".join(out["errors"][:5]))
    out["verified"] = not why
    return out
