# SPDX-License-Identifier: Apache-2.0
"""Gates that look across hosts: correlated failures (most of a failure domain sick at
once, or one rail sick on many hosts) and the drain caps, which count the nodes already
drained. A correlated failure is a network or facility incident: nothing is drained there."""

import math

from ..taxonomy import RUNG_RANK

FLEET = "fleet (no failure domain known)"
FLEET_MIN_SICK = 3  # two sick hosts that share nothing known may be chance; three are a pattern


def correlated_incidents(analysis, remediate, policy):
    """-> [incident], each {"kind": "failure_domain"|"rail", "name", "hosts", "why", "action"}."""
    out = []
    by_domain = {}
    for host, dom in policy["domains"].items():
        by_domain.setdefault(dom, []).append(host)
    for dom, members in sorted(by_domain.items()):
        sick = sorted(set(members) & set(remediate))
        if len(sick) >= 2 and len(sick) >= policy["correlated_fraction"] * len(members):
            out.append({
                "kind": "failure_domain", "name": dom, "hosts": sick, "size": len(members),
                "why": "%d of %d hosts in %s are sick at once (>= %g%%): a network or facility incident "
                       "(leaf switch, PDU, cooling), not %d broken nodes"
                       % (len(sick), len(members), dom, policy["correlated_fraction"] * 100, len(sick)),
                "action": "nothing drained in %s: check the domain's switch, power and cooling" % dom})
    for dev, hosts in sorted(_rails(analysis).items()):
        if len(hosts) >= policy["correlated_rail_hosts"]:
            out.append({
                "kind": "rail", "name": dev, "hosts": hosts, "size": len(hosts),
                "why": "%s has link errors on %d hosts (%s): the rail's leaf switch, not %d HCAs"
                       % (dev, len(hosts), ", ".join(hosts), len(hosts)),
                "action": "no node drained for this rail's errors: check the leaf switch of %s; the job "
                          "excludes the rail meanwhile" % dev})
    covered = set(h for inc in out for h in inc["hosts"])
    return out + _fleet_incident(analysis, set(remediate) - covered, policy)


def _fleet_incident(analysis, remediate, policy):
    """The analysed hosts whose failure domain nobody told us are one domain: most of them sick at
    once is still a shared cause (a leaf switch, a PDU), whatever the inventory knows. It stops
    the drains when the caps would otherwise drain some of them and silently keep the rest
    (more sick than the caps allow); caps wide enough for all of them are the operator's word.
    Hosts already in a domain or rail incident are not counted again."""
    analysed = set(h.get("host") for h in analysis.get("hosts") or []
                   if isinstance(h, dict) and isinstance(h.get("host"), str))
    unknown = analysed - set(policy["domains"])
    sick = sorted(unknown & set(remediate))
    pool = len(analysed | set(policy["already_drained"]))
    percent = max(1, int(math.floor(policy["max_drain_percent"] * pool / 100.0))) \
        if policy["max_drain_percent"] > 0 else 0
    if len(sick) < FLEET_MIN_SICK or len(sick) < policy["correlated_fraction"] * len(unknown) or \
            len(sick) <= min(policy["max_drain"], percent):
        return []
    return [{"kind": "failure_domain", "name": FLEET, "hosts": sick, "size": len(unknown),
             "why": "correlated: %d of %d hosts sick at once (>= %g%%; no failure domain known for them: the "
                    "analysed fleet counts as one); not draining beyond the caps: look at the fabric/facility"
                    % (len(sick), len(unknown), policy["correlated_fraction"] * 100),
             "action": "nothing drained among these hosts: check the fabric (leaf switches), power and cooling; "
                       "give failure domains (gpu_runbook_domain, Slurm topology) to tell racks apart"}]


def _rails(analysis):
    """{rail: [hosts]} from the cluster's shared_rail_errors findings (added to each host)."""
    rails = {}
    for h in analysis.get("hosts") or []:
        if not isinstance(h, dict):
            continue
        for f in h.get("findings") or []:
            if isinstance(f, dict) and f.get("kind") == "shared_rail_errors" and (f.get("ib") or {}).get("device"):
                rails.setdefault(f["ib"]["device"], set()).add(h.get("host"))
    return {dev: sorted(str(x) for x in hosts) for dev, hosts in rails.items()}


def incident_blocker(host, incidents):
    """The incident that stops this host's drain, or None. A rail incident stops only the
    hosts whose verdict is the network (a GPU fault on the same host still gets its drain)."""
    for inc in incidents:
        if host["host"] not in inc["hosts"]:
            continue
        if inc["kind"] == "failure_domain" or host.get("verdict") == "ib_network":
            return "correlated failure (%s %s): %s" % (inc["kind"].replace("_", " "), inc["name"], inc["why"])
    return None


class Caps(object):
    """Drain budget: total (count and percent of the pool) and per failure domain, both
    counting the nodes already drained."""

    def __init__(self, policy, analysis_hosts, drained):
        self.policy = policy
        self.drained = set(drained)
        pool = len(set(analysis_hosts) | self.drained)
        self.percent_cap = max(1, int(math.floor(policy["max_drain_percent"] * pool / 100.0))) \
            if policy["max_drain_percent"] > 0 else 0
        self.pool = pool
        self.limit = min(policy["max_drain"], self.percent_cap)

    def _domain_count(self, dom):
        return sum(1 for h in self.drained if self.policy["domains"].get(h) == dom)

    def check(self, host):
        """None when ``host`` may be drained, else the blocker in words."""
        n = len(self.drained)
        if n >= self.limit:
            if self.limit == self.policy["max_drain"]:
                return "cap: %d of max %d nodes already drained (max_drain)" % (n, self.limit)
            return "cap: %d of max %d nodes already drained (max_drain_percent %g%% of %d hosts)" % (
                n, self.limit, self.policy["max_drain_percent"], self.pool)
        dom = self.policy["domains"].get(host)
        if dom is not None:
            k = self._domain_count(dom)
            if k >= self.policy["max_per_domain"]:
                return "cap: %d of max %d nodes already drained in failure domain %s (max_per_domain)" % (
                    k, self.policy["max_per_domain"], dom)
        return None

    def take(self, host):
        self.drained.add(host)


def priority(host):
    """Who gets the drain budget first: the most severe, the costliest rung, then by name."""
    sev = {"critical": 3, "warning": 2, "info": 1}.get(host.get("severity"), 0)
    return (-sev, -RUNG_RANK.get(host.get("rung"), 0), str(host.get("host")))
