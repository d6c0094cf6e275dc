# SPDX-License-Identifier: Apache-2.0
"""Is one host's registered gather result shaped as the report reads it? A result the report
cannot read (findings as a string, facts as a list, a finding without a known severity) is that
host's error, said in one line, and the other hosts are reported as usual: build_cluster makes
it an ``unknown`` host (gather_failed) with this reason, never a traceback for the whole play."""

from .findings import SEVERITY_RANK
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
