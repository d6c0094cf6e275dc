# SPDX-License-Identifier: Apache-2.0
"""The remediation plan: a pure function from a diagnosis, a policy and what the gather and
Slurm know, to what the ladder would do -- per host the evidence, the rungs it would climb
(cheapest first, up to its diagnosed rung), their exact argv and what blocks them, named in
words -- plus the correlated incidents found, counts and the commands in order.

    make_plan(analysis, policy=None, facts=None) -> plan (JSON-ready, schema gpu-runbook/plan/v1)

``analysis``: what ``diagnose.diagnose()`` / ``cluster.build_cluster()`` return.
``facts``: {host: {"compute_apps": [{"pid", "process", "pci"}], "slurm": {"state", "reason",
"reason_user"}}}. ``policy``: see ``policy.DEFAULTS``. Same input, same plan; bad input
gives a plan with an ``errors`` entry and nothing to do, never a traceback.
"""

from ..confidence import HIGH, LOW, host_confidence
from ..reset_rule import unfixable_by_reset
from ..taxonomy import RUNG_RANK, RUNG_TABLE
from .gates import Caps, correlated_incidents, incident_blocker, priority
from .jobenv import exclude_line, job_section, nccl_env_rung, one_bad_rail, timeout_rung, wants_timeout
from .ladder import (block, drain_rung, evidence_line, flapping, gpu_reset_rung, ib_restart_rung, node_rungs,
                     reboot_rung, rma_rung, serious)
from .policy import PolicyError, incident_id, node_state, normalize_policy, one_line
from .waves import act_waves

SCHEMA = "gpu-runbook/plan/v1"
DECISIONS = ("act", "review", "blocked", "skip", "report_only")
# policy approved_hosts (an AWX approval): a host outside it is planned but nothing acts on it
NOT_APPROVED = "not in the approved plan (approved_hosts): nothing is done on this host"

__all__ = ["DECISIONS", "NOT_APPROVED", "SCHEMA", "make_plan"]


def make_plan(analysis, policy=None, facts=None):
    try:
        return _make_plan(analysis, policy, facts)
    except PolicyError as exc:
        return _error_plan(str(exc))
    except Exception as exc:  # noqa: BLE001 -- bad input is normal input: a plan that does nothing
        return _error_plan("cannot plan from this input: %s: %s" % (type(exc).__name__, one_line(exc, 200)))


def _error_plan(message, policy=None):
    return {"schema": SCHEMA, "incident_id": None, "generated": None, "policy": policy, "hosts": [],
            "incidents": [], "job": {"rungs": [], "env": [], "notes": [], "report": []}, "commands": [],
            "summary": _summary([], [], []), "errors": [message]}


def _check_input(analysis, facts):
    if not isinstance(analysis, dict) or not isinstance(analysis.get("hosts"), list):
        raise PolicyError("not a diagnosis: expected a mapping with a 'hosts' list (gpu_runbook.diagnose output)")
    if facts is not None and not isinstance(facts, dict):
        raise PolicyError("facts must map host names to their facts, not %s" % type(facts).__name__)


def _remediate(analysis, hosts):
    """The hosts a node-scoped rung may act on: the cluster's list, else the same rule."""
    listed = (analysis.get("cluster") or {}).get("remediate") if isinstance(analysis.get("cluster"), dict) else None
    if isinstance(listed, list):
        return set(str(h) for h in listed)
    return {h["host"] for h in hosts if h.get("severity") == "critical"
            and RUNG_TABLE.get(h.get("rung"), {}).get("scope") in ("gpu", "host")}


def _make_plan(analysis, policy, facts):
    _check_input(analysis, facts)
    p = normalize_policy(policy)
    facts = facts or {}
    errors, hosts = [], []
    for i, h in enumerate(analysis["hosts"]):
        if isinstance(h, dict) and isinstance(h.get("host"), str) and isinstance(h.get("findings") or [], list):
            hosts.append(h)
        else:
            errors.append("hosts[%d] is not a host analysis: left out, nothing planned for it" % i)
    names = [h["host"] for h in hosts]
    remediate = _remediate(analysis, hosts)
    drained = set(p["already_drained"]) | {h for h, f in facts.items()
                                           if isinstance(f, dict) and node_state(f.get("slurm"))[0]}
    incidents = correlated_incidents(analysis, remediate, p)
    ctx = {"policy": p, "incident": incident_id(analysis, p), "incidents": incidents,
           "caps": Caps(p, names, drained), "remediate": remediate,
           "approved": None if p["approved_hosts"] is None else set(p["approved_hosts"])}
    entries = [_plan_host(h, facts.get(h["host"]) if isinstance(facts.get(h["host"]), dict) else {}, ctx)
               for h in sorted(hosts, key=priority)]
    # an approval of no host acts on nothing, the job's own environment included
    job = job_section(entries, analysis.get("job"), incidents, p,
                      held=NOT_APPROVED if ctx["approved"] is not None and not ctx["approved"] else None)
    commands = [{"host": e["host"], "rung": r["rung"], "argv": argv}
                for e in entries for r in e["rungs"] if r["status"] == "planned" for argv in r["commands"]]
    return {"schema": SCHEMA, "incident_id": ctx["incident"], "generated": analysis.get("generated"),
            "policy": p, "hosts": entries, "incidents": incidents, "job": job, "commands": commands,
            "waves": act_waves(entries, p["domains"]),
            "summary": _summary(entries, incidents, commands, len(drained)), "errors": errors}


def _summary(entries, incidents, commands, already=0):
    out = {d: sum(1 for e in entries if e["decision"] == d) for d in DECISIONS}
    out.update(hosts=len(entries), incidents=len(incidents), commands=len(commands), already_drained=already,
               drains=sum(1 for e in entries for r in e["rungs"] if r["rung"] == "drain" and r["status"] == "planned"),
               disruptive=sum(1 for e in entries for r in e["rungs"] if r["disruptive"] and r["status"] == "planned"))
    return out


def _plan_host(h, host_facts, ctx):
    name = h["host"]
    findings = serious(h)
    unavailable, ours, words = node_state(host_facts.get("slurm"))
    if name in ctx["policy"]["already_drained"] and not unavailable:
        unavailable, words = True, "listed in already_drained, reason unknown"
    conf = _confidence(h)
    out = {"host": name, "verdict": h.get("verdict"), "severity": h.get("severity"), "rung": h.get("rung"),
           "confidence": conf["confidence"], "confidence_reason": conf["confidence_reason"],
           "evidence": evidence_line(h), "slurm": words or None, "decision": "skip", "reason": "",
           "rungs": [], "blockers": [], "final": None, "after": None}
    rail = one_bad_rail(findings)
    sick_rail = None  # over threshold: drained (policy rail_errors), its exclusion named as the mitigation
    if rail and ctx["policy"]["rail_errors"] == "drain" and name in ctx["remediate"]:
        rail, sick_rail = None, rail
    # one rail erroring (link up): the job leaves it out; the node is not drained for it
    in_rem = name in ctx["remediate"] and not rail
    job_rungs = _job_rungs(findings, rail, ctx["policy"])
    node = _node_ladder(h, findings, host_facts, ctx) if in_rem else []
    if sick_rail and node:
        node[0]["notes"].append("mitigation for the job's next run, should this node stay in service: %s "
                                "(rung_nccl_env; -e rail_errors=exclude keeps the node and leaves the rail out)"
                                % exclude_line([sick_rail]))
    # The ladder acts on a node only on a high-confidence verdict (no drain cap is taken for
    # one under review); a job-scoped rung (the next run's environment, no node touched,
    # reverted when healthy) needs medium; on low nothing acts.
    held = (node if conf["confidence"] != HIGH else []) + (job_rungs if conf["confidence"] == LOW else [])
    review = bool(held)
    _hold_for_review(held, conf)
    # outside an approval given (AWX: the hosts the approver saw to act on): planned, never acted on,
    # and no drain cap is taken for it
    unapproved = ctx["approved"] is not None and name not in ctx["approved"]
    if unapproved:
        for e in job_rungs:
            if e["status"] == "planned":
                block(e, NOT_APPROVED)
    if node and not review:
        _gate_drain(out, node, unavailable, ours, words, h, ctx, unapproved)
    out["rungs"] = sorted(node + job_rungs, key=lambda e: RUNG_RANK[e["rung"]])
    out["blockers"] = [b for e in out["rungs"] for b in e["blockers"]]
    if review:
        out["decision"] = "review"
        out["reason"] = review_reason(conf, job_rungs)
        if unavailable and not ours:
            out["reason"] += "; drained by someone else (%s): untouched" % words
    else:
        _decide(out, h, node, job_rungs, unavailable, ours, words)
    return out


def _confidence(h):
    """The host's confidence as the diagnosis gave it, else derived from its findings."""
    if h.get("confidence") in ("high", "medium", "low"):
        return {"confidence": h["confidence"], "confidence_reason": str(h.get("confidence_reason") or "")}
    return host_confidence(h.get("verdict"), h.get("findings") or [], h.get("probes"))


def review_reason(conf, job_rungs=()):
    going = [e["rung"] for e in job_rungs if e["status"] == "planned"]
    return ("confidence %s: %s; the ladder acts on a node only on high confidence: a person reviews the "
            "evidence, nothing is drained, reset or restarted%s" % (
                conf["confidence"], conf["confidence_reason"] or "?",
                "; the job-scoped %s still applies to the next run" % ", ".join(going) if going else ""))


def _hold_for_review(rungs, conf):
    for e in rungs:
        e["status"] = "blocked"
        e["blockers"].append("confidence %s (%s): held for review" % (conf["confidence"], conf["confidence_reason"]))


def _job_rungs(findings, rail, policy):
    out = []
    if rail or any(f["rung"] == "nccl_env" for f in findings):
        out.append(nccl_env_rung(findings, [rail] if rail else []))
    if wants_timeout(findings):
        out.append(timeout_rung(findings, policy))
    return out


def _node_ladder(h, findings, host_facts, ctx):
    """The node-scoped rungs, built and checked against the host itself and the policy."""
    p, name, evidence = ctx["policy"], h["host"], evidence_line(h)
    rungs = node_rungs(h, findings)
    unfix = unfixable_by_reset(findings)
    shown = [v for v in unfix.values() if v[2]]
    if shown and RUNG_RANK.get(h.get("rung"), 0) >= RUNG_RANK["gpu_reset"]:
        rungs = sorted(set(rungs) | {"gpu_reset"} | {v[1] for v in shown if v[1]}, key=RUNG_RANK.get)
    if rungs and p["ib_restart_on_flap"] and flapping(h, findings) and "ib_restart" not in rungs:
        rungs = sorted(set(rungs) | {"ib_restart"}, key=RUNG_RANK.get)
    build = {"drain": lambda: drain_rung(name, ctx["incident"], evidence, findings, p),
             "gpu_reset": lambda: gpu_reset_rung(findings, unfix, host_facts),
             "ib_restart": lambda: ib_restart_rung(findings, p),
             "reboot": lambda: reboot_rung(name, ctx["incident"], evidence, findings),
             "rma": lambda: rma_rung(findings, evidence)}
    entries = [build[r]() for r in rungs if r in build]
    for e in entries:
        if e["rung"] == "reboot" and e["rung"] not in p["allowed_rungs"]:
            block(e, "reboot not allowed here: the node stays drained until it gets one (-e allow_reboot=true)")
        elif e["rung"] not in p["allowed_rungs"]:
            block(e, "rung %s not allowed by the policy (allowed_rungs)" % e["rung"])
    # A reboot that is not allowed is no RMA: an RMA needs hardware evidence (the rma rung of a
    # finding, the ledger's lemon rule), never a policy default. The node stays drained for a reboot.
    return entries


def _gate_drain(out, node, unavailable, ours, words, h, ctx, unapproved=False):
    """Approval, ownership, correlated failures and caps decide whether the drain may happen;
    every later node rung needs it."""
    drain = node[0]
    if unapproved:
        block(drain, NOT_APPROVED)
    elif unavailable is None:
        block(drain, "%s: no drain without knowing the node's state" % words)
    elif unavailable and ours:
        drain["status"], drain["commands"] = "done", []
        drain["notes"].append("already drained by gpu-runbook: %s" % words)
        return
    elif unavailable:
        block(drain, "node already drained by someone else: %s" % words)
    else:
        why = incident_blocker(h, ctx["incidents"]) or ctx["caps"].check(h["host"])
        if why:
            block(drain, why)
        else:
            ctx["caps"].take(h["host"])
    if drain["status"] == "blocked":
        for e in node[1:]:
            e["status"] = "blocked"
            e["blockers"].append("needs the drain, which is blocked")


NEEDS_REBOOT = "stay drained: needs a reboot (-e allow_reboot=true)"


def _decide(out, h, node, job_rungs, unavailable, ours, words):
    planned = [e["rung"] for e in node + job_rungs if e["status"] in ("planned", "done")]
    if node and node[0]["status"] == "blocked":
        out["decision"], out["reason"] = "blocked", "; ".join(node[0]["blockers"])
    elif node:
        out["decision"] = "act"
        held = ["%s %s" % (e["rung"], e["status"]) for e in node if e["status"] in ("blocked", "skipped")]
        out["reason"] = "climb %s, verifying after each%s" % (" -> ".join(planned), "; " + ", ".join(held) if held else "")
        rma = any(e["rung"] == "rma" and e["status"] == "planned" for e in node)
        reboot_held = any(e["rung"] == "reboot" and e["status"] == "blocked" for e in node)
        out["final"] = ("stay drained for RMA" if rma else
                        NEEDS_REBOOT if reboot_held else "verify; resume if healthy and the drain is still ours")
        out["after"] = None if rma or reboot_held else {"verify": True, "on_healthy": [
            "scontrol", "update", "NodeName=%s" % h["host"], "State=RESUME"], "on_sick": "stay drained"}
    elif job_rungs and not planned:  # every job-scoped rung held (outside the approved plan)
        out["decision"], out["reason"] = "blocked", "; ".join(dict.fromkeys(b for e in job_rungs for b in e["blockers"]))
    elif job_rungs:
        out["decision"] = "act"
        out["reason"] = "job-scoped (%s): the job's next run changes; the node is not drained" % ", ".join(planned)
    elif h.get("rung") == "fix_application":
        out["decision"], out["reason"] = "report_only", "the application is at fault: fix the job; nothing done"
    elif h.get("severity") in ("warning", "critical"):
        out["decision"] = "report_only"
        out["reason"] = "not listed for remediation (%s, rung %s): reported, nothing done" % (
            h.get("severity"), h.get("rung"))
    else:
        out["decision"], out["reason"] = "skip", "healthy: nothing to do"
    if unavailable and not ours and out["decision"] in ("skip", "report_only"):
        out["reason"] += "; drained by someone else (%s): untouched" % words
