# SPDX-License-Identifier: Apache-2.0
"""GPUd's health states (leptonai/gpud, a node agent for GPU machines): ``gpud status`` or its
/v1/states API, JSON ``[{"component": "<name>", "states": [{"component", "name", "health",
"reason", "error", ...}]}]`` (api/v1/types.go; Go writes a state's fields in that order).

Read by its keys, not as one JSON document: a pasted excerpt is often cut mid-object. Each
``"health"`` is one state of the component named last; its ``"reason"`` (and ``"error"``)
follow it. The components and what each checks: gpud_components.py (generated from gpud's
source). Unhealthy -> critical, Degraded ("does not affect users' workload", gpud's comment)
-> warning, each in its component's category (an Xid component's state by the Xid's own in
NVIDIA's catalog); Healthy and Initializing report no fault. A state of a component gpud's
source does not name (a custom plugin) is unknown."""

import re

from .findings import finding, iter_lines, never_raise
from .gpud_components import COMPONENTS
from .taxonomy.kinds_vocab import BY_CATEGORY

SOURCE = "gpud.txt"
_CATEGORY = dict((c[0], c[3]) for c in COMPONENTS)
_KEY_RE = re.compile(r'"(component|health|reason|error)"\s{0,4}:\s{0,4}"((?:[^"\\\n]|\\.){0,2000})"')
_XID_RE = re.compile(r"\bXID (\d{1,3})\b")
_SEVERITY = {"Unhealthy": "critical", "Degraded": "warning"}
# its fabric-manager component's reason (components/accelerator/nvidia/fabric-manager/component.go:
# ProductName() + " with unhealthy fabric state: " + report.Reason; fabric_state.go: "GPU %s: %s" per GPU,
# joined by "; ", of pkg/nvidia/nvml/device/fabric_state.go GetIssues(): "state=%s", "status=%s",
# "summary=...", the health mask's words), also as a line of its own (a log, a pasted reason)
FABRIC_REASON_RE = re.compile(r"\bwith unhealthy fabric state: (?P<why>GPU \S{1,80}: [^;\n]{1,400}"
                              r"(?:; GPU \S{1,80}: [^;\n]{1,400}){0,255})")
_FABRIC_GPU_RE = re.compile(r"GPU (\S{1,80}): ([^;\n]{1,400})")


def parse_gpud(text, source=SOURCE):
    """-> (facts, findings) of GPUd's health states; never raises. facts: {"states": [{"component",
    "health", "reason"}]} (empty when none was read)."""
    return never_raise(_parse, source, text, source=source)


def _parse(text, source=SOURCE):
    states, comp = [], None
    for n, line in iter_lines(text):
        for m in _KEY_RE.finditer(line):
            key, val = m.group(1), m.group(2).replace('\\"', '"')
            if key == "component":
                comp = val
            elif key == "health":
                states.append({"component": comp, "health": val, "reason": None, "error": None, "line": (n, line)})
            elif states and states[-1][key] is None:
                states[-1][key] = val
    findings = [_finding(s, source) for s in states if s["health"] in _SEVERITY]
    if not states:  # the fabric component's reason alone, out of its JSON
        for n, line in iter_lines(text):
            m = FABRIC_REASON_RE.search(line)
            if m:
                findings.append(_fabric(m.group("why"), "critical", line, "%s:%d" % (source, n)))
                states.append({"component": "accelerator-nvidia-fabric-manager", "health": "Unhealthy",
                               "reason": line.strip()[:300]})
    facts = {"states": [{"component": s["component"], "health": s["health"], "reason": s["reason"]} for s in states]}
    return (facts if states else {}), findings


def _fabric(why, severity, line, src):
    """The fabric-manager component's unhealthy fabric state: NVML's state "Not Supported" on every GPU
    and nothing else is a GPU outside any NVSwitch fabric (PCIe cards, GH200 alone: gpud's own
    comment, "should not be treated as unhealthy"; NVML's state is only read on a fabric); any
    other issue is the fabric not ready, as nvidia-smi -q's Fabric section reads (nvsmi/rules.py)."""
    issues = [(g, [i.strip() for i in rest.split(",")]) for g, rest in _FABRIC_GPU_RE.findall(why)]
    if issues and all(i == ["state=Not Supported"] for _g, i in issues):
        return finding("fabric_not_ready", "GPUd: NVML reports no NVLink fabric state for %d GPU(s) (state=Not "
                       "Supported): GPUs outside an NVSwitch fabric (PCIe cards, a GPU alone), where gpud does not "
                       "call it unhealthy since its fix; not a fabric fault" % len(issues), severity="info",
                       name="GPUd", evidence=line.strip()[:300], source=src)
    return finding("fabric_not_ready", "GPUd: the NVLink fabric is not ready: %s" % why[:300], severity=severity,
                   name="GPUd", evidence=line.strip()[:300], source=src)


def _finding(state, source):
    comp = state["component"] or "?"
    category = _CATEGORY.get(comp, "unknown")
    why = state["reason"] or state["error"] or "no reason given"
    xid = None
    mx = _XID_RE.search(why)
    if comp == "accelerator-nvidia-error-xid" and mx:
        from .xid_catalog import lookup
        xid = int(mx.group(1))
        category = (lookup(xid) or {}).get("category") or category
    n, line = state["line"]
    m = FABRIC_REASON_RE.search(why) if comp == "accelerator-nvidia-fabric-manager" else None
    if m:
        return _fabric(m.group("why"), _SEVERITY[state["health"]], line, "%s:%d" % (source, n))
    return finding(BY_CATEGORY[category], "GPUd: component %s is %s: %s" % (comp, state["health"], why[:300]),
                   category=category, severity=_SEVERITY[state["health"]], name="GPUd", xid=xid,
                   evidence=line.strip()[:300], source="%s:%d" % (source, n))
