# SPDX-License-Identifier: Apache-2.0
"""In which order the ladder acts: waves of hosts that may climb at once.

Two hosts of one failure domain (rack, leaf switch, PDU) never climb at the same time, so a
domain loses at most one more node while the ladder works on it; hosts of different domains
may (the caps already bound how many nodes are out at once). A host whose domain is unknown is
a domain of its own: nothing says it shares one, and max_drain still bounds the whole run.
Hosts keep the plan's priority order inside each wave."""


def node_acting(entry):
    """A host the ladder climbs on: decision act with at least one node-scoped rung."""
    return entry.get("decision") == "act" and any(r.get("scope") != "job" for r in entry.get("rungs") or [])


def act_waves(entries, domains=None):
    """[plan host entry] (priority order), {host: domain} -> [[host, ...], ...]: wave i holds
    the i-th acting host of every domain."""
    domains = domains or {}
    seen, waves = {}, []
    for e in entries:
        if not node_acting(e):
            continue
        dom = domains.get(e["host"]) or "host:" + e["host"]
        i = seen.get(dom, 0)
        seen[dom] = i + 1
        while len(waves) <= i:
            waves.append([])
        waves[i].append(e["host"])
    return waves
