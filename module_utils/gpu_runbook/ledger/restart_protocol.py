# SPDX-License-Identifier: Apache-2.0
"""The ib_restart rung's protocol for one host, as pure decisions (the action plugin
``gpu_runbook_restart_ib`` does the I/O: the ledger on the controller, ``ib_restart`` on the node):

1. this incident's restarts of the plan's ports (``restarts_of``);
2. the ledger's decision per port (``decide_items``) and this incident's earlier tries
   (``before_restart``): restarted OK for every port -> not again; restarted without mending the
   link -> not again, check the cable; the ledger sends it up (spent budget) -> no restart;
3. otherwise one restart of the stack, read back into one result (``after_restart``);
4. one result per port (``port_results``: a port that came back clean is ok though another one
   stays sick), one audit line per port and, when the restart ran, one remedy per port;
5. the host's outcome (``outcome``).

Every function takes and returns plain data; nothing here reads a file or a clock.
"""

# the ledger's "drain" for ib_restart means: stay drained and check the cable
_ESCALATION_OF = {"drain": "cable", "reboot": "reboot", "rma": "rma"}
_KEEP = ("verified", "holders", "daemons", "modules", "fabric", "blocked_by", "after", "still_rising", "not_back",
         "method")


def ports_of(hcas):
    """The plan's HCAs (mlx5_6) as the ledger's port keys (mlx5_6/1)."""
    return [h if "/" in h else h + "/1" for h in hcas or () if isinstance(h, str) and h]


def restarts_of(history, ports):
    """This incident's ib_restart remedies of these ports (or of the host, with no port)."""
    return [e for e in history or () if isinstance(e, dict) and e.get("type") == "remedy"
            and e.get("rung") == "ib_restart" and (not e.get("port") or e.get("port") in ports)]


def decide_items(host, ports):
    return [{"host": host, "port": p, "proposed_rung": "ib_restart"} for p in ports] or \
        [{"host": host, "proposed_rung": "ib_restart"}]


def _one(result, message, escalate=None, audit=None, **extra):
    out = {"result": result, "audit": audit or result, "escalate": escalate, "changed": False, "ran": False,
           "message": message}
    out.update(extra)
    return out


def before_restart(decisions, restarts, incident):
    """The host's result without a restart, or None when the restart should run."""
    decisions = [d for d in decisions or () if isinstance(d, dict)]
    done = [d for d in decisions if d.get("already_done")]
    if decisions and len(done) == len(decisions):
        return _one("ok", done[0].get("reason") or "already done for this incident", audit="skipped")
    failed = [e for e in restarts if e.get("result") == "failed"]
    if failed:
        ports = sorted({e.get("port") for e in failed if e.get("port")})
        return _one("failed", "ib_restart already tried for incident %s at %s on %s and the link stayed sick: not "
                    "restarted again in the same incident; check the cable"
                    % (incident or "?", failed[-1].get("when") or "?", ", ".join(ports) or "the host"),
                    escalate="cable", audit="skipped")
    up = [d for d in decisions if d.get("rung") not in ("ib_restart", "none")]
    if up:
        return _one("skipped", "ledger: %s" % "; ".join(str(d.get("reason") or "?") for d in up),
                    escalate=_ESCALATION_OF.get(up[0].get("rung"), "cable"))
    return None


def _argv(run, unit):
    """The restart (systemctl restart <unit>), or for method=modules the last modprobe of mlx5_core."""
    cmds = [c for c in (run or {}).get("commands") or [] if isinstance(c, list)]
    hits = [c for c in cmds if "restart" in c] + [c for c in cmds if "mlx5_core" in c]
    return hits[-1] if hits else ["systemctl", "restart", unit]


def after_restart(run, check_mode, unit, method):
    """The ib_restart module's result -> the host's result. refused: a pre-check said no (users of
    the IB stack, ports unreadable); failed: the restart broke, or the link is not mended (ports not
    back, counters still rising); skipped: check mode."""
    run = run if isinstance(run, dict) else {}
    blocked = run.get("blocked_by") if isinstance(run.get("blocked_by"), list) else None
    if run.get("failed") and blocked is None:
        blocked = ["module_failed"]
    if blocked is not None:
        result = "failed" if "restart_failed" in blocked or blocked == ["module_failed"] else "refused"
        escalate = run.get("escalate") or None
    elif check_mode:
        result, escalate = "skipped", None
    else:
        result = "ok" if run.get("verified") else "failed"
        escalate = (run.get("escalate") or "cable") if result == "failed" else None
    one = _one(result, str(run.get("msg") or "ib_restart gave no message"), escalate=escalate,
               changed=bool(run.get("changed")), ran=not check_mode, argv=_argv(run, unit))
    for k in _KEEP:
        one[k] = run.get(k, {} if k in ("fabric", "after", "still_rising", "not_back") else
                         [] if k in ("blocked_by", "holders", "daemons", "modules") else None)
    one["blocked_by"] = blocked or []
    one["verified"] = bool(run.get("verified"))
    one["method"] = run.get("method") or method
    return one


def _port_line(p, r, one):
    words = ["%s: %s" % (p, r)]
    a = (one.get("after") or {}).get(p)
    if isinstance(a, dict):
        words.append("%s/%s%s" % (a.get("state") or "?", a.get("phys_state") or "?",
                                  " %s Gb/s" % a["rate_gbps"] if a.get("rate_gbps") else ""))
    rising = (one.get("still_rising") or {}).get(p)
    if isinstance(rising, dict):
        words.append("still rising: " + ", ".join("%s +%s" % kv for kv in sorted(rising.items())))
    if p in (one.get("not_back") or {}):
        words.append("not back: %s" % one["not_back"][p])
    return "; ".join(words)


def port_results(one, run, ports):
    """One result per port: when the link is not mended, the ports that came back clean are ok."""
    expected = (run or {}).get("expected_ports") if one.get("ran") else None
    sick = list((one.get("still_rising") or {}).keys()) + list((one.get("not_back") or {}).keys())
    out = []
    for p in expected or ports:
        r = one["result"]
        if r == "failed" and not one.get("blocked_by") and sick:
            r = "failed" if p in sick else "ok"
        out.append({"port": p, "result": r, "line": _port_line(p, r, one)})
    return out


def audit_raws(host, ports, one, unit, check_mode):
    argv = [str(a) for a in one.get("argv") or ["systemctl", "restart", unit]]
    rows = ports or [{"port": "", "result": one["result"], "line": ""}]
    return [{"host": host, "rung": "ib_restart", "port": p["port"], "argv": argv,
             "result": "skipped" if one["audit"] == "skipped" else p["result"],
             "message": ((p["line"] + " -- ") if p["line"] else "") + one["message"][:900],
             "check_mode": bool(check_mode)} for p in rows]


def remedy_raws(host, ports, one, check_mode):
    if check_mode or not one.get("ran"):
        return []
    return [{"type": "remedy", "host": host, "port": p["port"], "rung": "ib_restart", "result": p["result"]}
            for p in ports] or [{"type": "remedy", "host": host, "rung": "ib_restart", "result": one["result"]}]


def outcome(one, unit, ports):
    out = {"rung": "ib_restart", "result": one["result"], "message": one["message"], "escalate": one["escalate"],
           "changed": bool(one.get("changed")), "unit": unit, "ports": ports}
    out.update((k, one[k]) for k in _KEEP if k in one)
    return out
