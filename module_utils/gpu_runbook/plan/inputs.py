# SPDX-License-Identifier: Apache-2.0
"""What the play registered, turned into the planner's inputs in one linear pass (the role
used to build these maps in Jinja, one ``combine()`` per host: quadratic at 1,000 hosts).

    play_facts(hosts, compute_apps=None, probes=None, slurm=None) -> {host: facts}
    failure_domains(groups, group_names, host_domains) -> {host: domain}

Pure functions, same semantics as the role's former Jinja; bad input is skipped, never a
traceback (a host whose input is garbage gets the cautious reading: unknown Slurm state,
unreadable process list).
"""

import fnmatch

from ..sources import COMPUTE_APPS

__all__ = ["play_facts", "failure_domains"]


def _dict(value):
    """Jinja's ``default({}, true)``: anything false or not a mapping reads as {}."""
    return value if isinstance(value, dict) else {}


def slurm_facts(result):
    """A registered slurm_node (state=present) result -> the planner's ``slurm`` entry, or
    None when the read was skipped (remediation_plan_read_slurm=false: no Slurm entry)."""
    sl = _dict(result)
    if sl.get("skipped"):
        return None
    if sl.get("failed") or "state" not in sl:
        return {"error": sl.get("msg") or "no answer from slurm_node"}
    out = {"state": sl["state"], "reason": sl.get("reason") or "", "reason_user": sl.get("reason_user") or ""}
    if "owned" in sl:  # without slurm_node's ownership record the planner reads the reason's prefix
        out["owned"] = sl["owned"]
    return out


def play_facts(hosts, compute_apps=None, probes=None, slurm=None):
    """{host: {"gpu"?: ..., "compute_apps"?: ..., "slurm"?: ...}} for every host of ``hosts``.

    ``compute_apps``: {host: the gather's facts.compute_apps} -- a host left out was not
    gathered (capture replay): no entry, a reset is not blocked on that account; a host present
    with null keeps null (the list could not be read: a reset is blocked).
    ``probes``: {host: the gather's probes}; a failed ``nvidia-smi-compute-apps.csv`` probe
    on a host without compute_apps means unreadable (null).
    ``slurm``: {host: the registered slurm_node result}: its state, or the error that makes the
    state unknown (the drain is then blocked); skipped or missing: no Slurm entry.
    """
    compute_apps, probes, slurm = _dict(compute_apps), _dict(probes), _dict(slurm)
    out = {}
    for host in hosts if isinstance(hosts, (list, tuple)) else []:
        if not isinstance(host, str):
            continue
        one = {}
        if host in slurm:
            entry = slurm_facts(slurm[host])
            if entry is not None:
                one["slurm"] = entry
        if host in compute_apps:
            one["compute_apps"] = compute_apps[host]
        else:
            probe = _dict(_dict(probes.get(host)).get(COMPUTE_APPS))
            if "ok" in probe and not probe["ok"]:
                one["compute_apps"] = None
        out[host] = one
    return out


def failure_domains(groups=None, group_names=(), host_domains=None):
    """Each host's failure domain from data -> {host: domain}:

    ``host_domains``: {host: domain} from each host's variable (gpu_runbook_domain: set by the
    operator, or by the slurm_nodes inventory plugin from Slurm's topology, the leaf switch) wins;
    else ``group_names``: the inventory groups the operator named as failure domains, each an
    exact group name or a shell pattern (``rack*``), host -> the first matching group by name,
    with every member counted, also hosts outside the play (a domain's size is the whole rack).
    A group's name alone makes no domain: nothing named, nothing guessed."""
    out = {}
    patterns = [p for p in group_names if isinstance(p, str) and p.strip()] \
        if isinstance(group_names, (list, tuple)) else []
    if patterns:
        names = sorted(g for g in _dict(groups) if isinstance(g, str) and g not in ("all", "ungrouped")
                       and any(fnmatch.fnmatchcase(g, p.strip()) for p in patterns))
        for name in names:
            members = groups[name]
            for host in members if isinstance(members, (list, tuple)) else []:
                if isinstance(host, str):
                    out.setdefault(host, name)
    for host, dom in _dict(host_domains).items():
        if isinstance(host, str) and isinstance(dom, str) and dom.strip():
            out[host] = dom.strip()
    return out
