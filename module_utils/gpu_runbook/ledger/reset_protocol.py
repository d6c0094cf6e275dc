# SPDX-License-Identifier: Apache-2.0
"""The gpu_reset rung's protocol for one GPU, as pure decisions (the action plugin
``gpu_runbook_reset_gpus`` does the I/O: the ledger's files on the controller, the
``gpu_reset`` module on the node):

1. the GPU's records of this incident (``seen_of``);
2. its fault into the history, once per incident (``fault_record``);
3. the ledger's decision and this incident's earlier tries (``before_reset``): already reset OK
   -> not again; reset before without fixing it -> not again, escalate to reboot; the ledger
   sends it up (repeat faults, spent budget) -> that rung, no reset;
4. otherwise the reset, read back into one result (``after_reset``);
5. one audit line (``audit_raw``) and, when something ran, the remedy (``remedy_raw``);
6. the host's outcome from every GPU's result (``outcome``).

Every function takes and returns plain data; nothing here reads a file or a clock.
"""

# the reset's own failures (the GPU lost, no permission, nvidia-smi broke) against a refusal
_FAILED_OUTCOMES = ("gpu_lost", "no_permission", "failed", "timeout")
_ESCALATIONS = ("reboot", "rma")


def gpu_ids(gpu):
    """{"pci", "uuid", "serial"} of a plan target GPU (None where the plan does not know it)."""
    gpu = gpu if isinstance(gpu, dict) else {}
    return {k: gpu.get(k) or None for k in ("pci", "uuid", "serial")}


def label(gpu):
    ids = gpu_ids(gpu)
    return ids["pci"] or ids["uuid"] or "?"


def seen_of(history, gpu):
    """This incident's records (``history``: the ledger's ``action=history`` of this host)
    that name the GPU, by PCI address or UUID."""
    ids = gpu_ids(gpu)
    pci, uuid = (ids["pci"] or "").lower(), (ids["uuid"] or "").upper()
    out = []
    for e in history or ():
        if not isinstance(e, dict):
            continue
        g = e.get("gpu") if isinstance(e.get("gpu"), dict) else e
        if (pci and str(g.get("pci") or "").lower() == pci) or (uuid and str(g.get("uuid") or "").upper() == uuid):
            out.append(e)
    return out


def fault_record(host, gpu, seen):
    """The fault entry to record (type fault, host, gpu, the primary Xid and kind), or None when
    the plan names no fault kind or this incident already recorded one for the GPU."""
    kinds = [k for k in (gpu or {}).get("kinds") or () if isinstance(k, str)]
    if not kinds or any(e.get("type") == "fault" for e in seen):
        return None
    rec = {"type": "fault", "host": host, "gpu": gpu_ids(gpu)}
    xids = [int(k[4:]) for k in kinds if k.startswith("xid:") and k[4:].isdigit()]
    named = [k for k in kinds if not k.startswith("xid")]
    if xids:
        rec["xid"] = xids[0]
    if named:
        rec["kind"] = named[0]
    return rec


def decide_item(host, gpu):
    return {"host": host, "gpu": gpu_ids(gpu), "proposed_rung": "gpu_reset"}


def _one(result, message, escalate=None, audit=None, changed=False, ran=False, **extra):
    out = {"result": result, "audit": audit or result, "escalate": escalate, "changed": changed, "ran": ran,
           "message": message}
    out.update(extra)
    return out


def before_reset(decision, seen, incident):
    """The GPU's result without a reset, or None when the reset should run."""
    decision = decision if isinstance(decision, dict) else {}
    if decision.get("already_done"):
        return _one("ok", decision.get("reason") or "already done for this incident", audit="skipped")
    failed = [e for e in seen if e.get("type") == "remedy" and e.get("rung") == "gpu_reset"
              and e.get("result") == "failed"]
    if failed:
        return _one("failed", "gpu_reset already tried for incident %s at %s and it did not fix the GPU: not tried "
                    "again in the same incident; escalate to reboot" % (incident or "?", failed[-1].get("when") or "?"),
                    escalate="reboot", audit="skipped")
    rung = decision.get("rung")
    if rung != "gpu_reset":
        return _one("skipped", "ledger: %s instead of a reset: %s" % (rung, decision.get("reason") or "?"),
                    escalate=rung if rung in _ESCALATIONS else None)
    return None


def reset_argv(run, gpu):
    """The ``nvidia-smi -r -i <gpu>`` the module ran (its own path), else the plan's form."""
    for argv in reversed((run or {}).get("commands") or []):
        if isinstance(argv, list) and "-r" in argv and "-i" in argv:
            return argv
    return ["nvidia-smi", "-r", "-i", label(gpu)]


def after_reset(run, check_mode, gpu):
    """The gpu_reset module's result -> the GPU's result. refused: a pre-check or nvidia-smi said
    no (a holder, a fault a reset cannot fix); failed: the reset ran and the GPU is not verified,
    the reset itself broke, or a restore after it failed; skipped: check mode (nothing ran)."""
    run = run if isinstance(run, dict) else {}
    blocked = run.get("blocked_by") if isinstance(run.get("blocked_by"), list) else None
    if run.get("failed") and blocked is None:  # no answer of the module's own: unreachable, crashed
        blocked = ["module_failed"]
    if blocked is not None:
        outcome = (run.get("reset") or {}).get("outcome") if isinstance(run.get("reset"), dict) else None
        result = "failed" if outcome in _FAILED_OUTCOMES or "restore_failed" in blocked or blocked == ["module_failed"] \
            else "refused"
        escalate = run.get("escalate") if run.get("escalate") in _ESCALATIONS else None
    elif check_mode:
        result, escalate = "skipped", None
    else:
        result = "ok" if run.get("verified") else "failed"
        escalate = "reboot" if result == "failed" else None
    return _one(result, str(run.get("msg") or "gpu_reset gave no message"), escalate=escalate,
                changed=bool(run.get("changed")), ran=not check_mode, verified=bool(run.get("verified")),
                holders=run.get("holders") or [], blocked_by=blocked or [], argv=reset_argv(run, gpu))


def audit_raw(host, gpu, one, check_mode):
    return {"host": host, "rung": "gpu_reset", "gpu": label(gpu) if gpu_ids(gpu)["pci"] else "",
            "argv": [str(a) for a in one.get("argv") or ["nvidia-smi", "-r", "-i", label(gpu)]],
            "result": one["audit"], "message": one["message"][:1000], "check_mode": bool(check_mode)}


def remedy_raw(host, gpu, one, check_mode):
    """The remedy to record in the GPU's history, or None (nothing ran, or check mode)."""
    if check_mode or not one.get("ran"):
        return None
    return {"type": "remedy", "host": host, "gpu": gpu_ids(gpu), "rung": "gpu_reset", "result": one["result"]}


def with_gpu(one, gpu):
    ids = gpu_ids(gpu)
    out = dict(one, pci=ids["pci"], uuid=ids["uuid"])
    out["line"] = "GPU %s: %s" % (ids["pci"] or "?", one["message"])
    return out


def outcome(results):
    """The host's gpu_reset outcome from every GPU's result (``with_gpu``)."""
    rs = [r.get("result") for r in results]
    result = ("failed" if "failed" in rs else "refused" if "refused" in rs else "skipped" if "skipped" in rs
              else "ok" if rs else "none")
    esc = [r.get("escalate") for r in results if r.get("escalate")]
    return {"rung": "gpu_reset", "result": result,
            "message": "; ".join(r["line"] for r in results) or "the plan names no GPU to reset",
            "escalate": "rma" if "rma" in esc else "reboot" if "reboot" in esc else None,
            "changed": any(r.get("changed") for r in results), "gpus": list(results)}
