# SPDX-License-Identifier: Apache-2.0
"""The plan step: the diagnosis and what the play gathered -> the remediation plan, its console
lines and plan.json / plan.md.

One implementation for the two ways Ansible runs it: the gpu_runbook_plan action plugin (in
the controller's ansible-playbook, reading each host's gather and Slurm read from hostvars: at
1,000 hosts nothing is templated into arguments) and the gpu_runbook_plan module (the same step
in its own process). Both validate with ARGUMENT_SPEC and return what ``run`` returns."""

import json
import os
import shlex

from .hostvars import MISSING, dig
from .plan import make_plan
from .plan.inputs import failure_domains, play_facts
from .safewrite import WriteRefused, write_atomic
from .validate import problems

ARGUMENT_SPEC = dict(
    analysis=dict(type="dict", required=True),
    facts=dict(type="dict", default={}),
    gathered=dict(type="dict", options=dict(
        hosts=dict(type="list", elements="str", default=[]),
        compute_apps=dict(type="dict", default={}),
        probes=dict(type="dict", default={}),
        slurm=dict(type="dict", default={}),
        domains=dict(type="dict", default={}),
    )),
    hosts=dict(type="list", elements="str"),
    result_var=dict(type="str", default="gpu_health_result"),
    slurm_var=dict(type="str", default="remediation_plan_slurm"),
    domain_groups=dict(type="dict", default={}),
    domain_group_names=dict(type="list", elements="str", default=[]),
    domain_var=dict(type="str", default="gpu_runbook_domain"),
    policy=dict(type="dict", default={}),
    plan_dir=dict(type="path"),
    confirm=dict(type="bool", default=False),
)
MUTUALLY_EXCLUSIVE = [["gathered", "hosts"]]


class StepFailed(Exception):
    """The step cannot finish; ``msg`` says why, ``data`` is what it has (the plan, its lines)."""

    def __init__(self, msg, **data):
        Exception.__init__(self, msg)
        self.msg = msg
        self.data = data


_ABSENT = object()


def gathered_from(hosts, value_of, result_var, slurm_var, domain_var=None):
    """The ``gathered`` option from each host's variables (``value_of(host, var)``, MISSING when the
    host has none): per host its compute_apps (left out when its gather has none: not gathered;
    null: unreadable), its probes, its Slurm read -- what the role's template built, read in Python."""
    out = {"hosts": list(hosts), "compute_apps": {}, "probes": {}, "slurm": {}, "domains": {}}
    for host in hosts:
        health = dig(value_of(host, result_var), ("ansible_facts", "gpu_health"), {})
        apps = dig(health, ("facts", "compute_apps"), _ABSENT)
        if apps is not _ABSENT:
            out["compute_apps"][host] = apps
        out["probes"][host] = dig(health, ("probes",), {})
        slurm = value_of(host, slurm_var)
        out["slurm"][host] = {} if slurm is MISSING else slurm
        domain = value_of(host, domain_var) if domain_var else MISSING
        if isinstance(domain, str) and domain.strip():
            out["domains"][host] = str(domain).strip()
    return out


PLAN_ONLY = "plan only: nothing was changed (-e confirm=yes acts)"
NONE_APPROVED = "plan only: the approved plan names no host, nothing acts"
ACTING = "confirm=yes: the ladder acts on the hosts marked ACT, one serial batch at a time"


def _cmd(argv):
    return " ".join(shlex.quote(str(a)) for a in argv)


def _host_facts(facts):
    """{host: {...}} -> the engine's facts: compute_apps kept as given (null: unreadable)."""
    out = {}
    for host, f in (facts or {}).items():
        if not isinstance(f, dict):
            continue
        keep = {k: f[k] for k in ("gpu", "slurm") if isinstance(f.get(k), dict)}
        if "compute_apps" in f:
            keep["compute_apps"] = f["compute_apps"] if isinstance(f["compute_apps"], list) else None
        out[str(host)] = keep
    return out


def _rung_words(r):
    if r["status"] == "planned":
        return r["rung"]
    return "%s %s" % (r["rung"], r["status"])


# how to raise a cap that blocks: the extra vars remediation_plan's defaults read
_CAP_HINT = " (raise it: -e max_drain=N, -e max_drain_percent=P)"


def _blocker_words(h):
    """The blocker that holds the whole host (not approved, a cap), else one an operator can act
    on (it says how: '-e ...'), else the first; the rest are counted, left to plan.md."""
    said = [b + (_CAP_HINT if b.startswith("cap: ") else "") for b in h["blockers"]]
    first = next((b for b in said if "approved" in b or b.startswith("cap: ")), None) or \
        next((b for b in said if "-e " in b), said[0])
    return first + (" (+%d more in plan.md)" % (len(said) - 1) if len(said) > 1 else "")


def host_line(h):
    """One short console line: host, decision, rungs, the blocker to act on (a cap with how to
    raise it), what follows, how many commands. The evidence, every blocker and the exact
    commands are plan.md's (the diagnosis above it has the evidence too)."""
    parts = ["%s: %s" % (h["host"], h["decision"].upper())]
    if h["rungs"]:
        parts.append("rungs: %s" % " -> ".join(_rung_words(r) for r in h["rungs"]))
    if h["blockers"]:
        parts.append("blocker: %s" % _blocker_words(h))
    if h.get("final"):
        parts.append("then: %s" % h["final"])
    elif h.get("reason") and h["decision"] not in ("act", "blocked"):
        parts.append(h["reason"])
    cmds = sum(len(r["commands"]) for r in h["rungs"] if r["status"] == "planned")
    env = sum(len(r["env"]) for r in h["rungs"] if r["status"] == "planned")
    if cmds or env:
        parts.append(", ".join(w for w in ("%d command(s)" % cmds if cmds else "",
                                           "%d job env setting(s)" % env if env else "") if w) + " in plan.md")
    return " | ".join(parts)


def console_lines(plan, acting, check_mode, none_approved=False):
    s = plan["summary"]
    head = "plan %s (%s): %d to act, %d blocked, %d report only, %d with nothing to do; %d command(s); %s" % (
        plan.get("incident_id") or "-", plan["schema"], s["act"], s["blocked"], s["report_only"], s["skip"],
        s["commands"], ACTING if acting else NONE_APPROVED if none_approved else PLAN_ONLY)
    lines = [head + (" (check mode)" if check_mode else "")]
    skipped = []
    for h in plan["hosts"]:
        if h["decision"] == "skip":
            skipped.append(h["host"])
        else:
            lines.append(host_line(h))
    if skipped:
        lines.append("nothing to do (%d): %s" % (len(skipped), ", ".join(skipped)))
    for inc in plan["incidents"]:
        lines.append("INCIDENT %s %s: %s -> %s" % (inc["kind"], inc["name"], inc["why"], inc["action"]))
    job = plan["job"]
    if job["env"]:
        lines.append("job: next run with %s" % " ".join(job["env"]))
    lines.extend("job: %s" % n for n in job["notes"] + job["report"])
    lines.extend("error: %s" % e for e in plan["errors"])
    return lines


def _md_host(h):
    out = ["## %s: %s" % (h["host"], h["decision"]), "",
           "- verdict: %s (%s), rung %s" % (h.get("verdict"), h.get("severity"), h.get("rung"))]
    if h.get("evidence"):
        out.append("- evidence: %s" % h["evidence"])
    if h.get("slurm"):
        out.append("- Slurm: %s" % h["slurm"])
    out.append("- %s" % h["reason"])
    if h.get("final"):
        out.append("- then: %s" % h["final"])
    for r in h["rungs"]:
        out += ["", "### %s (%s): %s" % (r["rung"], r["label"], r["status"])]
        if r["why"]:
            out.append("why: %s" % r["why"])
        out += ["- blocked: %s" % b for b in r["blockers"]]
        out += ["- note: %s" % n for n in r["notes"]]
        if r["commands"] or r["env"]:
            out += ["", "```sh"] + [_cmd(c) for c in r["commands"]] + ["export %s" % shlex.quote(v)
                                                                         for v in r["env"]] + ["```"]
    return out + [""]


def markdown(plan, lines):
    s = plan["summary"]
    out = ["# Remediation plan %s" % (plan.get("incident_id") or "-"), "",
           "Schema %s, diagnosis of %s." % (plan["schema"], plan.get("generated") or "-"),
           "", "| act | blocked | report only | nothing to do | commands | drains |", "|---|---|---|---|---|---|",
           "| %d | %d | %d | %d | %d | %d |" % (s["act"], s["blocked"], s["report_only"], s["skip"], s["commands"],
                                             s["drains"]), ""]
    for h in plan["hosts"]:
        if h["decision"] != "skip":
            out += _md_host(h)
    skipped = [h["host"] for h in plan["hosts"] if h["decision"] == "skip"]
    if skipped:
        out += ["Nothing to do: %s" % ", ".join(skipped), ""]
    if plan["incidents"] or plan["job"]["env"] or plan["errors"]:
        out += ["## Incidents, job, errors", ""] + ["- %s" % ln for ln in lines
                                                     if ln.startswith(("INCIDENT", "job:", "error:"))] + [""]
    return "\n".join(out)


def write_plan(plan_dir, plan, lines):
    """-> [paths written]; WriteRefused or OSError on failure (nothing half-written)."""
    if os.path.islink(plan_dir):
        raise WriteRefused("plan_dir %s is a symlink: refusing to follow it" % plan_dir)
    if not os.path.isdir(plan_dir):
        os.makedirs(plan_dir, 0o755)
    targets = [(os.path.join(plan_dir, "plan.json"), json.dumps(plan, indent=2, sort_keys=True) + "\n"),
               (os.path.join(plan_dir, "plan.md"), markdown(plan, lines))]
    for path, _text in targets:  # check both before writing either
        if os.path.islink(path):
            raise WriteRefused("%s is a symlink: refusing to write through it" % path)
    for path, text in targets:
        write_atomic(path, text, mode=0o644)
    return [p for p, _ in targets]


def plan_inputs(p):
    """The module's options -> (facts, policy) for make_plan: the facts built from O(gathered), then
    O(facts) per host; the failure domains from each host's O(domain_var) (gathered), else the groups
    O(domain_group_names) names, then O(policy)'s own."""
    g = p.get("gathered") or {}
    facts = play_facts(g.get("hosts") or [], g.get("compute_apps"), g.get("probes"), g.get("slurm"))
    facts.update(p["facts"] or {})
    policy = dict(p["policy"] or {})
    domains = failure_domains(p["domain_groups"], p["domain_group_names"], g.get("domains"))
    if domains:
        if isinstance(policy.get("domains"), dict):
            domains.update(policy["domains"])
        elif policy.get("domains") is not None:
            domains = policy["domains"]  # not a mapping: the planner names the bad input
        policy["domains"] = domains
    return facts, policy



def refused(params):
    """Why these (validated) parameters cannot be used, or None."""
    why = problems(params, {"plan_dir": "path"})
    return "; ".join(why) if why else None


def run(params, check_mode=False):
    """The step on validated ``params`` -> the task's result: changed, plan, by_host, lines, summary,
    warnings. Raises StepFailed with the reason (and the plan, where there is one)."""
    p = params
    facts, policy = plan_inputs(p)
    plan = make_plan(p["analysis"], policy=policy, facts=_host_facts(facts))
    if plan["errors"] and not plan["hosts"]:
        raise StepFailed("cannot plan: %s" % "; ".join(plan["errors"]), plan=plan)
    none_approved = plan["policy"].get("approved_hosts") == []
    acting = p["confirm"] and not check_mode and not none_approved
    lines = console_lines(plan, acting, check_mode, none_approved and p["confirm"])
    summary = dict(plan["summary"], incident_id=plan["incident_id"], plan_only=not acting, files=[],
                   hosts_act=[h["host"] for h in plan["hosts"] if h["decision"] == "act"],
                   # remediate.yml's acting play runs one wave per batch (serial: these sizes)
                   waves=plan.get("waves") or [], wave_sizes=[len(w) for w in plan.get("waves") or []],
                   hosts_blocked=[h["host"] for h in plan["hosts"] if h["decision"] == "blocked"])
    changed = False
    if p["plan_dir"] and not check_mode:
        try:
            summary["files"] = write_plan(p["plan_dir"], plan, lines)
        except WriteRefused as exc:
            raise StepFailed("plan not written: %s" % exc, plan=plan, lines=lines)
        except OSError as exc:
            raise StepFailed("plan not written to %s: %s" % (p["plan_dir"], exc.strerror or exc), plan=plan,
                             lines=lines)
        lines.append("plan written: %s" % ", ".join(summary["files"]))
        changed = True
    elif p["plan_dir"]:
        lines.append("check mode: plan.json and plan.md not written to %s" % p["plan_dir"])
    return dict(changed=changed, plan=plan, by_host={h["host"]: h for h in plan["hosts"]}, lines=lines,
                summary=summary, warnings=list(plan["errors"]))


def shown_args(params):
    """The options echoed back (-vvv): the whole diagnosis and every host's facts would double
    what the controller parses."""
    return dict(params, analysis="(not echoed)", facts="(not echoed)", gathered="(not echoed)",
                domain_groups="(not echoed)", hosts="(%d hosts)" % len(params.get("hosts") or []))
