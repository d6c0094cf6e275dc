"""Cluster view, computed once on the controller from every host's analysis.

Cross-host reasoning lives here and nowhere else:
- an unreachable host, or one whose gather failed, is a prime suspect (dead/wedged node);
- the same application-class Xid on every GPU-bearing host points at the application or
  driver, not at one host's hardware;
- suspects are ranked by the field's suspicion order (see verdict.SUSPICION).
"""

from .analyze import SCHEMA, unreachable_host
from .findings import SEVERITY_RANK, make_finding
from .verdict import SUSPICION, host_verdict, sort_findings


def host_from_result(host, result):
    """A registered gpu_health_facts result (or an unreachable/failed one) -> host analysis."""
    result = result or {}
    facts = (result.get("ansible_facts") or {}).get("gpu_health")
    if facts:
        h = dict(facts)
        h["host"] = host
        return h
    if result.get("unreachable"):
        return unreachable_host(host, result.get("msg"))
    msg = result.get("msg") or result.get("module_stderr") or "no result (host skipped or gather failed)"
    h = unreachable_host(host, msg)
    h["findings"][0]["kind"] = "gather_failed"
    h["findings"][0]["message"] = "health gather failed on this host: %s" % str(msg).strip()[:300]
    return h


def _xid_sets(hosts):
    """host -> set of Xid codes it reported."""
    return {h["host"]: {f["xid"] for f in h["findings"] if f.get("xid") is not None} for h in hosts}


def cross_host(hosts):
    """Apply the cross-host rules in place; returns the cluster-level findings."""
    out = []
    unreached = ("host_unreachable", "gather_failed")
    gpu_hosts = [h for h in hosts if not any(f["kind"] in unreached for f in h["findings"])]
    xids = _xid_sets(gpu_hosts)
    if len(gpu_hosts) >= 2:
        common = set.intersection(*xids.values()) if xids else set()
        for code in sorted(common):
            # Same Xid on every host: one job's code or a driver bug, not N broken GPUs.
            for h in gpu_hosts:
                for f in h["findings"]:
                    if f.get("xid") == code and f["category"] == "gpu_hardware" and f["severity"] != "critical":
                        f["category"] = "application"
            out.append(make_finding(
                "application", "warning", "xid_on_every_host",
                "Xid %d appears on every host (%d): the application or driver, not one GPU" % (code, len(gpu_hosts)),
                "Look at the job's code and the driver version before replacing hardware.",
                xid=code, source="cluster", rung="fix_application"))
    for h in hosts:
        h["findings"] = sort_findings(h["findings"])
        v = host_verdict(h["findings"])
        h["verdict"], h["severity"], h["rung"] = v["verdict"], v["severity"], v["rung"]
    return out


def suspect_order(h):
    return (SEVERITY_RANK[h["severity"]], SUSPICION.get(h["verdict"], 0))


def build_cluster(results, job=None):
    """results: {host: registered result} -> analysis dict with a ``cluster`` section."""
    hosts = [host_from_result(name, res) for name, res in sorted(results.items())]
    cluster_findings = cross_host(hosts)
    hosts.sort(key=suspect_order, reverse=True)
    suspects = [h["host"] for h in hosts if SEVERITY_RANK[h["severity"]] >= SEVERITY_RANK["warning"]]
    remediate = [h["host"] for h in hosts if h["severity"] == "critical" and h["rung"] not in ("none", "fix_application")]
    return {
        "schema": SCHEMA,
        "hosts": hosts,
        "job": job,
        "cluster": {
            "hosts": len(hosts),
            "suspects": suspects,
            "remediate": remediate,
            "healthy": [h["host"] for h in hosts if h["host"] not in suspects],
            "findings": cluster_findings,
        },
    }
