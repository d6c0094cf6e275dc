# SPDX-License-Identifier: Apache-2.0
"""Each GPU's (and IB port's) faults and the remedies tried on it, across runs, and the pure
decision that reads them: ``next_rung``.

A target is a host plus the GPU's serial, UUID or PCI bus id (or an IB port such as
``mlx5_1/1``). Two records are the same GPU when their strongest common id agrees: serial,
else UUID (whatever the host is called: short name or FQDN), else PCI on the same host (a
short name and its FQDN are one host). A record that has only the PCI id therefore
matches whatever GPU sits in that slot now -- on the safe side: more escalation, never
another reset of a board we cannot tell apart.

Rules (defaults in DEFAULT_POLICY):
- repeat faults: a GPU with ``repeat_faults`` or more faults in ``repeat_window`` goes to
  ``rma`` instead of another reset or reboot (record the current fault before deciding:
  it counts);
- retry budgets: a rung tried (result ok or failed, not in check mode) ``budgets[rung]``
  times on the target within ``budget_window`` escalates: gpu_reset -> reboot (allowed
  here or not: a node that may not be rebooted stays drained for one) -> rma;
  ib_restart -> stay drained and check the cable.
Window edges are inclusive: a fault exactly ``repeat_window`` old still counts. A record
whose time cannot be read counts too (it cannot be shown to be old).
"""

from datetime import timedelta

from ..findings import normalize_pci
from ..taxonomy import RUNG_RANK, RUNG_TABLE, STEPS
from ..timeutil import UTC, iso, to_utc
from .errors import LedgerError
from .journal import FUTURE_SKEW

DAY = 86400
DEFAULT_POLICY = {
    "repeat_faults": 3,
    "repeat_window": 7 * DAY,
    "budgets": {"gpu_reset": 2, "ib_restart": 2, "reboot": 1},
    "budget_window": 7 * DAY,
    "allow_reboot": False,
}
# what a spent budget climbs to; "reboot" only where the policy allows it
ESCALATE = {"gpu_reset": ("reboot", "rma"), "reboot": ("rma",), "ib_restart": ("drain",)}
COUNTED_RESULTS = ("ok", "failed")
# ladder steps a remedy record may name besides the rungs (ledger/recall.py reads them)
REMEDY_STEPS = ("verify",)
ID_KEYS = ("serial", "uuid", "pci")
_BAD = ("", "n/a", "[n/a]", "none", "unknown", "[unknown error]", "not found")


def check_policy(policy):
    """DEFAULT_POLICY overlaid with ``policy``; an unknown key or a bad value -> LedgerError."""
    policy = policy or {}
    if not isinstance(policy, dict):
        raise LedgerError("policy must be a mapping, not %r" % (policy,))
    unknown = sorted(set(policy) - set(DEFAULT_POLICY))
    if unknown:
        raise LedgerError("unknown policy keys %s (known: %s)" % (", ".join(unknown), ", ".join(DEFAULT_POLICY)))
    out = dict(DEFAULT_POLICY, budgets=dict(DEFAULT_POLICY["budgets"]))
    for key in ("repeat_faults", "repeat_window", "budget_window"):
        v = policy.get(key, out[key])
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise LedgerError("policy %s must be a whole number >= 1, not %r" % (key, v))
        out[key] = v
    budgets = policy.get("budgets") or {}
    if not isinstance(budgets, dict):
        raise LedgerError("policy budgets must be a mapping of rung: tries, not %r" % (budgets,))
    for rung, n in budgets.items():
        if rung not in ESCALATE:
            raise LedgerError("policy budgets: %r has no budget (budgeted rungs: %s)" % (rung, ", ".join(ESCALATE)))
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise LedgerError("policy budgets %s must be a whole number >= 0, not %r" % (rung, n))
        out["budgets"][rung] = n
    out["allow_reboot"] = bool(policy.get("allow_reboot", False))
    return out


def _clean(v):
    if v is None or isinstance(v, bool) or isinstance(v, (dict, list)):
        return None
    s = str(v).strip()
    return None if s.lower() in _BAD else s


def target_of(raw):
    """{host, serial?, uuid?, pci?, port?} (a GPU dict under 'gpu' is read too, and a plain
    string there is a UUID or PCI id) -> the normalized target. No host -> LedgerError."""
    if not isinstance(raw, dict):
        raise LedgerError("a target must be a mapping with host and gpu ids, not %r" % (raw,))
    host = _clean(raw.get("host"))
    if not host:
        raise LedgerError("a target needs its host: %r" % (raw,))
    ids = dict((k, raw.get(k)) for k in ID_KEYS + ("port",))
    gpu = raw.get("gpu")
    if isinstance(gpu, dict):
        for k in ID_KEYS:
            ids[k] = ids[k] or gpu.get(k)
    elif _clean(gpu):
        g = _clean(gpu)
        ids["uuid" if g.upper().startswith(("GPU-", "MIG-")) else "pci"] = ids.get("uuid") or g
    t = {"host": host.lower()}
    for k in ID_KEYS + ("port",):
        v = _clean(ids.get(k))
        if v:
            t[k] = normalize_pci(v) if k == "pci" else (v.upper() if k == "uuid" else v)
    return t


def is_gpu(t):
    return any(k in t for k in ID_KEYS)


def match_key(t):
    """A readable key: 'node1/serial:1652...', 'node1/port:mlx5_1/1', 'node1'."""
    for k in ID_KEYS + ("port",):
        if k in t:
            return "%s/%s:%s" % (t["host"], k, t[k])
    return t["host"]


def same_host(a, b):
    """Host names as given or as FQDN: 'n03' and 'n03.cluster.local' are one host."""
    a, b = str(a or "").strip().lower(), str(b or "").strip().lower()
    return bool(a) and (a == b or a.split(".")[0] == b.split(".")[0])


def same(entry, t):
    """Does history ``entry`` concern target ``t``? (see the module doc). A GPU with a serial or
    UUID is that GPU under any host name; the host decides only for a PCI slot, a port or a
    host-wide question."""
    try:
        e = target_of(entry)
    except LedgerError:
        return False
    if is_gpu(t) and is_gpu(e) and "port" not in t and "port" not in e:
        for k in ("serial", "uuid"):
            if k in e and k in t:
                return e[k] == t[k]
    if not same_host(e["host"], t["host"]):
        return False
    if not is_gpu(t) and "port" not in t:
        return True  # a host-wide question counts every record of the host
    if "port" in t or "port" in e:
        return t.get("port") == e.get("port") and not (is_gpu(t) and is_gpu(e) and not _ids_agree(e, t))
    return _ids_agree(e, t)


def _ids_agree(e, t):
    for k in ID_KEYS:
        if k in e and k in t:
            return e[k] == t[k]
    return False


def _entry(raw, now, kind):
    t = target_of(raw)
    when = to_utc(raw.get("when")) if raw.get("when") else now.astimezone(UTC)
    if when is None:
        raise LedgerError("history %s: when %r is not an ISO 8601 time" % (kind, raw.get("when")))
    if when > now.astimezone(UTC) + timedelta(seconds=FUTURE_SKEW):
        raise LedgerError("history %s for %s: when %s is in the future (now %s, skew allowed %ds): refused, a record "
                          "from the future would never age out" % (kind, match_key(t), iso(when),
                                                                   iso(now.astimezone(UTC)), FUTURE_SKEW))
    out = dict(t, type=kind, when=iso(when))
    if raw.get("incident"):
        out["incident"] = str(raw["incident"])
    return out


def fault_entry(raw, now):
    """A fault record: target + xid and/or kind (taxonomy kind name) + when."""
    out = _entry(raw, now, "fault")
    xid, kind = raw.get("xid"), _clean(raw.get("kind"))
    if xid is not None and (isinstance(xid, bool) or not str(xid).strip().isdigit()):
        raise LedgerError("history fault: xid must be a number, not %r" % (xid,))
    if xid is None and not kind:
        raise LedgerError("history fault needs an xid or a kind: %r" % (raw,))
    if xid is not None:
        out["xid"] = int(str(xid).strip())
    if kind:
        out["kind"] = kind
    return out


def remedy_entry(raw, now):
    """A remedy record: target + rung (a taxonomy rung, or ``verify``: the ladder saw the host
    healthy after its fix) + result (ok/refused/failed/skipped) + when."""
    out = _entry(raw, now, "remedy")
    rung, result = _clean(raw.get("rung")), _clean(raw.get("result"))
    if rung not in RUNG_TABLE and rung not in REMEDY_STEPS:
        raise LedgerError("history remedy: rung %r is neither a rung (%s) nor %s"
                          % (rung, ", ".join(RUNG_TABLE), ", ".join(REMEDY_STEPS)))
    if result not in ("ok", "refused", "failed", "skipped"):
        raise LedgerError("history remedy: result %r must be ok, refused, failed or skipped" % (result,))
    out.update(rung=rung, result=result, check_mode=bool(raw.get("check_mode", False)))
    return out


def _within(entry, now, window):
    when = to_utc(entry.get("when"))  # a record from the future never counts (it would never age out)
    return when is None or now - timedelta(seconds=window) <= when <= now + timedelta(seconds=FUTURE_SKEW)


def faults_of(history, t, now, window):
    return [e for e in history if e.get("type") == "fault" and same(e, t) and _within(e, now, window)]


def tries_of(history, t, rung, now, window):
    return [e for e in history if e.get("type") == "remedy" and e.get("rung") == rung and same(e, t)
            and e.get("result") in COUNTED_RESULTS and not e.get("check_mode") and _within(e, now, window)]


def _days(seconds):
    return "%g days" % (seconds / float(DAY)) if seconds % 3600 == 0 else "%ds" % seconds


def _fault_text(e):
    what = "Xid %s" % e["xid"] if "xid" in e else e.get("kind", "fault")
    return "%s at %s" % (what, e.get("when") or "an unknown time")


def _climb(rung, policy):
    # What the target needs next, whether or not a reboot is allowed here: a reboot that is not
    # allowed leaves the node drained for one (rung_verify), it never turns into an RMA.
    del policy
    return ESCALATE[rung][0]


def next_rung(history, gpu, proposed_rung, now, policy=None):
    """-> (rung, reason): ``proposed_rung`` unless the target's history says otherwise."""
    if proposed_rung not in RUNG_TABLE:
        raise LedgerError("proposed rung %r is not a rung (%s)" % (proposed_rung, ", ".join(RUNG_TABLE)))
    policy = check_policy(policy)
    t = target_of(gpu)
    now = now.astimezone(UTC)
    row = RUNG_TABLE[proposed_rung]
    if not row["disruptive"] or RUNG_RANK[proposed_rung] >= RUNG_RANK["rma"]:
        return proposed_rung, "%s: no retry budget applies" % proposed_rung
    if row["scope"] == "gpu" and not is_gpu(t):
        raise LedgerError("%s needs the GPU's serial, UUID or PCI bus id to count its history: %r"
                          % (proposed_rung, gpu))
    key = match_key(t)
    if is_gpu(t) and proposed_rung != "ib_restart":
        faults = faults_of(history, t, now, policy["repeat_window"])
        if len(faults) >= policy["repeat_faults"]:
            return "rma", ("%s faulted %d times in %s (%s), limit %d: replace it (RMA) instead of another %s"
                           % (key, len(faults), _days(policy["repeat_window"]),
                              ", ".join(_fault_text(e) for e in faults[-5:]), policy["repeat_faults"], proposed_rung))
    rung, reasons = proposed_rung, []
    while rung in ESCALATE:
        budget = policy["budgets"].get(rung, 0)
        n = len(tries_of(history, t, rung, now, policy["budget_window"]))
        if n < budget:
            reasons.append("%s tried %d of %d times on %s in %s" % (rung, n, budget, key,
                                                                   _days(policy["budget_window"])))
            break
        nxt = _climb(rung, policy)
        reasons.append("%s tried %d times on %s in %s (budget %d): %s" % (
            rung, n, key, _days(policy["budget_window"]), budget,
            "leave it drained. " + STEPS["check_cable"][1] if nxt == "drain" else "escalate to %s" % nxt))
        rung = nxt
    return rung, "; ".join(reasons)
