# SPDX-License-Identifier: Apache-2.0
"""The ledger's memory across runs: what an incident already got, and when a host was last
verified healthy.

- ``already_done``: a remedy with result ``ok`` (not in check mode) recorded for the same
  incident, host, target and rung means that rung has run for this incident: a second run
  of the same incident climbs nothing (``decide`` answers rung ``none``). A remedy recorded
  without a GPU or port (host-wide, as an openibd restart is) covers every target of its host.
- ``resolved``: per host, the time of the latest ``{rung: verify, result: ok}`` remedy, i.e.
  when the ladder last saw the host healthy after a fix. Kernel-log evidence from before it
  is not evidence again (gpu_health_facts ``not_before``).
- ``decide``: ``already_done`` first, then ``history.next_rung`` -> one decision dict.
"""

from .errors import LedgerError
from .history import ID_KEYS, match_key, next_rung, same, same_host, target_of
from ..timeutil import iso, to_utc

VERIFY = "verify"


def _incident(value):
    if value is None or isinstance(value, (bool, dict, list)):
        return None
    s = str(value).strip()
    return s or None


def _host_wide(entry):
    return not any(entry.get(k) for k in ID_KEYS + ("port", "gpu"))


def already_done(history, t, rung, incident):
    """The latest history remedy ``rung`` with result ok, not in check mode, recorded for
    ``incident`` on target ``t`` (or host-wide on its host); None when there is none."""
    incident = _incident(incident)
    if not incident:
        return None
    hits = [e for e in history if e.get("type") == "remedy" and e.get("rung") == rung and e.get("result") == "ok"
            and not e.get("check_mode") and _incident(e.get("incident")) == incident
            and (same(e, t) or (_host_wide(e) and same_host(e.get("host"), t["host"])))]
    return max(hits, key=_when_key) if hits else None


def _when_key(entry):
    when = to_utc(entry.get("when"))
    return (when is not None, when.isoformat() if when is not None else "")


def decide(history, item, now, policy=None, incident=None):
    """One ``action=decide`` item -> {host, key, proposed_rung, rung, escalated, already_done,
    reason, incident}. ``incident``: the item's own, else this default."""
    if not isinstance(item, dict) or not item.get("proposed_rung"):
        raise LedgerError("decide item needs host, the GPU (or port) and proposed_rung: %r" % (item,))
    proposed = item["proposed_rung"]
    inc = _incident(item.get("incident")) or _incident(incident)
    # next_rung first: it validates the item (a GPU rung needs the GPU's ids) whatever the history says
    rung, reason = next_rung(history, item, proposed, now, policy)
    t = target_of(item)
    out = {"host": t["host"], "key": match_key(t), "proposed_rung": proposed, "incident": inc}
    for done_rung in (proposed, rung) if rung != proposed else (proposed,):
        done = already_done(history, t, done_rung, inc)
        if done is not None:
            out.update(rung="none", escalated=False, already_done=True, done_rung=done_rung,
                       reason="%s already done for incident %s on %s at %s (result ok): nothing to climb again"
                       % (done_rung, inc, match_key(t), done.get("when") or "an unknown time"))
            return out
    out.update(rung=rung, escalated=rung != proposed, already_done=False, reason=reason)
    return out


def resolved(history, hosts=None):
    """{host: UTC ISO time of its latest verify-ok remedy (not check mode)}. ``hosts``: only
    these (keys as given, matched case-insensitively); hosts with none are left out."""
    wanted = None
    if hosts is not None:
        if not isinstance(hosts, (list, tuple)) or not all(isinstance(h, str) and h.strip() for h in hosts):
            raise LedgerError("hosts must be a list of host names, not %r" % (hosts,))
        wanted = {}
        for h in hosts:
            wanted.setdefault(h.strip().lower(), h.strip())
    latest = {}
    for e in history:
        if e.get("type") != "remedy" or e.get("rung") != VERIFY or e.get("result") != "ok" or e.get("check_mode"):
            continue
        host, when = str(e.get("host") or "").strip().lower(), to_utc(e.get("when"))
        if not host or when is None or (wanted is not None and host not in wanted):
            continue
        if host not in latest or when > latest[host]:
            latest[host] = when
    return dict(((wanted or {}).get(h, h), iso(when)) for h, when in sorted(latest.items()))
