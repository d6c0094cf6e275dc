# SPDX-License-Identifier: Apache-2.0
"""The edge where Ansible's registered results meet the engine: the one place that knows their
shape (``ansible_facts.gpu_health``, ``unreachable``, ``msg``, ``module_stderr``).

- ``result_problem``: is one host's result shaped as the report reads it? A result the report
  cannot read (findings as a string, facts as a list, a finding without a known severity) is
  that host's error, said in one line, and the other hosts are reported as usual;
- ``host_from_result``: a result -> the host's analysis (an ``unknown`` host, gather_failed,
  with the reason when it is malformed or failed; unreachable as such): what cluster.py reads;
- ``report_input``: what the report needs of a result, and nothing else (the action plugin)."""

from .analyze import unreachable_host
from .findings import SEVERITY_RANK, finding
from .taxonomy import RUNG_TABLE

_MAPS = ("facts", "probes", "timings", "window")  # parts of gpu_health that are mappings when present


def _kind(value):
    # the plain type's name: Ansible hands over its own str/list subclasses (_AnsibleTaggedStr)
    name = next((t.__name__ for t in (bool, str, bytes, int, float, list, tuple, dict) if isinstance(value, t)),
                type(value).__name__)
    return "null" if value is None else ("an " if name[0] in "aeiou" else "a ") + name


def _finding_problem(i, f):
    if not isinstance(f, dict):
        return "findings[%d] is %s, not a finding" % (i, _kind(f))
    if not isinstance(f.get("kind"), str) or not isinstance(f.get("category"), str):
        return "findings[%d] has no kind or category" % i
    if f.get("severity") not in SEVERITY_RANK:
        return "findings[%d] has severity %r, not one of %s" % (i, str(f.get("severity"))[:40],
                                                                 ", ".join(sorted(SEVERITY_RANK)))
    if f.get("rung") is not None and (not isinstance(f["rung"], str) or f["rung"] not in RUNG_TABLE):
        return "findings[%d] has rung %r, not a rung of the ladder" % (i, str(f["rung"])[:40])
    if f.get("xid") is not None and (isinstance(f["xid"], bool) or not isinstance(f["xid"], int)):
        return "findings[%d] has xid %r, not a number" % (i, str(f["xid"])[:40])
    return None


def result_problem(result):
    """None when ``result`` (one host's registered gpu_health_facts result, or None) can be read,
    else what is wrong with it, naming the part."""
    if result is None:
        return None
    if not isinstance(result, dict):
        return "the registered result is %s, not a mapping" % _kind(result)
    facts = result.get("ansible_facts")
    if facts is None:
        return None
    if not isinstance(facts, dict):
        return "ansible_facts is %s, not a mapping" % _kind(facts)
    health = facts.get("gpu_health")
    if health is None or health == {}:
        return None
    if not isinstance(health, dict):
        return "ansible_facts.gpu_health is %s, not a mapping" % _kind(health)
    findings = health.get("findings")
    if findings is not None and not isinstance(findings, list):
        return "gpu_health.findings is %s, not a list" % _kind(findings)
    for part in _MAPS:
        if health.get(part) is not None and not isinstance(health[part], dict):
            return "gpu_health.%s is %s, not a mapping" % (part, _kind(health[part]))
    if health.get("mode") is not None and not isinstance(health["mode"], str):
        return "gpu_health.mode is %s, not a word" % _kind(health["mode"])
    kernel_log = (health.get("facts") or {}).get("kernel_log")
    if kernel_log is not None and (not isinstance(kernel_log, dict) or
                                   not isinstance(kernel_log.get("events", []), list)):
        return "gpu_health.facts.kernel_log is not a mapping with a list of events"
    for i, f in enumerate(findings or []):
        why = _finding_problem(i, f)
        if why:
            return "gpu_health." + why
    return None


def malformed_message(why):
    """The one line a malformed host's report shows (the same from a whole or a trimmed result)."""
    return "malformed gather result: %s" % why


def host_from_result(host, result, everyone_unreachable=False):
    """A registered gpu_health_facts result (or an unreachable/failed one) -> host analysis.
    When no host of the run answered, the controller's access is the suspect, not each node:
    nothing is listed for remediation on that evidence. A result the report cannot read is
    that host's gather failure (hostresult.result_problem), not the run's."""
    why = result_problem(result)
    result = {"msg": malformed_message(why)} if why else (result or {})
    facts = (result.get("ansible_facts") or {}).get("gpu_health")
    if facts:
        h = dict(facts)
        h["host"] = host
        h["findings"] = [dict(f) for f in facts.get("findings") or []]  # cross_host edits copies
        return h
    if result.get("unreachable") and everyone_unreachable:
        f = finding("unreachable_everywhere", "host did not answer, nor did any other host of the run: %s"
                    % str(result.get("msg") or "unreachable").strip()[:300], source="ansible",
                    evidence=str(result.get("msg") or "")[:300])
        return {"host": host, "verdict": "unknown", "severity": f["severity"], "rung": f["rung"],
                "findings": [f], "facts": {}, "probes": {}}
    if result.get("unreachable"):
        return unreachable_host(host, result.get("msg"))
    msg = result.get("msg") or result.get("module_stderr") or "no result (host skipped or gather failed)"
    f = finding("gather_failed", "health gather failed on this host: %s" % str(msg).strip()[:300],
                evidence=str(msg).strip()[:300], source="ansible")
    return {"host": host, "verdict": "unknown", "severity": f["severity"], "rung": f["rung"],
            "findings": [f], "facts": {}, "probes": {}}


def report_input(result):
    """What the report reads of one host's registered result, and nothing else: build_cluster
    (host_from_result, the cross-host rules, the verdict, the timeline) and
    reports.describe_inputs. A gathered host keeps its findings, probes, timings, mode,
    window and its kernel log's events; the rest of its facts (``facts.gpu``, ``facts.ib``:
    ~90% of the bytes) is for the plan and the ladder, which read it from hostvars. Any
    other result keeps what says why it has no facts (unreachable, msg, module_stderr).
    ``diagnose(results)`` and ``diagnose({h: report_input(r)})`` give the same analysis.
    The gpu_runbook_report action plugin calls it on each host's registered result
    (report_step.host_results); tests/integration/test_report_input.py checks that its report
    is the one the whole results give."""
    why = result_problem(result)
    if why:
        return {"unreachable": False, "msg": malformed_message(why), "module_stderr": None}
    result = result if isinstance(result, dict) else {}
    facts = (result.get("ansible_facts") or {}).get("gpu_health")
    if isinstance(facts, dict) and facts:
        kernel_log = (facts.get("facts") or {}).get("kernel_log") or {}
        return {"ansible_facts": {"gpu_health": {
            "findings": facts.get("findings", []), "probes": facts.get("probes", {}),
            "timings": facts.get("timings", {}), "mode": facts.get("mode"), "window": facts.get("window"),
            "facts": {"kernel_log": {"events": kernel_log.get("events", [])}}}}}
    return {"unreachable": result.get("unreachable", False), "msg": result.get("msg"),
            "module_stderr": result.get("module_stderr")}
