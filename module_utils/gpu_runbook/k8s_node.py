# SPDX-License-Identifier: Apache-2.0
"""``kubectl describe node`` of a GPU node -> what Kubernetes says of its GPUs.

Read by content, as an on-call pastes it: its ``Capacity:`` and ``Allocatable:`` blocks
(``nvidia.com/gpu: 8`` under each, kubectl's describe printer: ``  name:  quantity``) and its
``Conditions:`` rows (``Type  Status  LastHeartbeatTime  LastTransitionTime  Reason  Message``).
NVIDIA's device plugin (NVIDIA/k8s-device-plugin internal/rm/health.go) advertises the GPUs it
finds and withdraws one it marks unhealthy -- an Xid it counts as critical, or NVML failing on
the GPU -- so GPUs allocatable below capacity are GPUs it took out. A node problem detector may
set a condition of its own: GKE's ``XidCriticalError  True  ...  {"31":true}`` names the Xids
it saw in the node's kernel log (a ``| grep Xid`` of the describe keeps just that row).

What it tells: GPUs allocatable below capacity are a warning of unknown cause (which Xid or NVML
error, the node's kernel log and nvidia-smi say); a True Xid condition is each Xid it names, read
as NVIDIA's catalog reads it (no GPU named); every GPU allocatable is a healthy reading of what
Kubernetes sees; a node with no GPU resource claims nothing of GPUs."""

import json
import re

from .findings import finding, iter_lines, never_raise
from .xid_catalog import number_finding

SOURCE = "k8s-node.txt"
_BLOCK_RE = re.compile(r"^(Capacity|Allocatable|Conditions):[ \t]*$")
_QTY_RE = re.compile(r"^[ \t]{1,4}([a-z0-9][\w./\-]{0,62}):[ \t]+(\S{1,40})[ \t]*(?:<[^\n]*)?$")
# a condition's row: its type, its status, then two times (kubectl: 'Mon, 23 Jun 2025 18:45:43 +0000')
_COND_RE = re.compile(r"^[ \t]{1,4}([A-Z][A-Za-z]{1,60})[ \t]+(True|False|Unknown)[ \t]+(\w{3}, \d{1,2} \w{3} \d{4} "
                      r"\d\d:\d\d:\d\d [+-]\d{4})[ \t]+(\w{3}, \d{1,2} \w{3} \d{4} \d\d:\d\d:\d\d [+-]\d{4})[ \t]+"
                      r"(\S[^\n]{0,400})$")
_XID_JSON_RE = re.compile(r"\{(?:[ \t]*\"\d{1,3}\"[ \t]*:[ \t]*(?:true|false)[ \t]*,?){1,32}\}")
OPENING = re.compile(_BLOCK_RE.pattern + "|" + _COND_RE.pattern)


def belongs(line):
    return not line.strip() or bool(_BLOCK_RE.match(line) or _QTY_RE.match(line) or _COND_RE.match(line)) or \
        line[:1] in (" ", "\t")


def parse_k8s_node(text, source=SOURCE):
    """-> (facts, findings); never raises. facts: {"capacity": {resource: quantity}, "allocatable": {...},
    "gpus": capacity's nvidia.com/gpu or None, "gpus_allocatable", "conditions": [{type, status, reason}]}."""
    return never_raise(_parse, source, text if isinstance(text, str) else "", source=source)


def _parse(text, source=SOURCE):
    blocks, conds, block, findings = {"Capacity": {}, "Allocatable": {}}, [], None, []
    for n, line in iter_lines(text):
        m = _BLOCK_RE.match(line)
        if m:
            block = m.group(1)
            continue
        m = _COND_RE.match(line)
        if m:
            conds.append({"type": m.group(1), "status": m.group(2), "reason": m.group(5).split()[0], "line": n})
            findings.extend(_condition_findings(m, n, line, source))
            continue
        m = _QTY_RE.match(line)
        if m and block in blocks:
            blocks[block].setdefault(m.group(1), (m.group(2), n, line))
        elif line.strip() and line[:1] not in (" ", "\t"):
            block = None
    cap, alloc = blocks["Capacity"].get("nvidia.com/gpu"), blocks["Allocatable"].get("nvidia.com/gpu")
    gpus, free = _count(cap), _count(alloc)
    if gpus is not None and free is not None and free < gpus:
        findings.append(finding(
            "k8s_gpus_unallocatable",
            "%d of the node's %d GPUs are not allocatable (nvidia.com/gpu: capacity %d, allocatable %d): the NVIDIA "
            "device plugin withdrew them as unhealthy (an Xid it counts as critical, or NVML failing on the GPU)"
            % (gpus - free, gpus, gpus, free), evidence=alloc[2].strip(), source="%s:%d" % (source, alloc[1]),
            counters={"capacity": gpus, "allocatable": free}))
    facts = {"capacity": {k: v[0] for k, v in blocks["Capacity"].items()},
             "allocatable": {k: v[0] for k, v in blocks["Allocatable"].items()},
             "gpus": gpus, "gpus_allocatable": free, "conditions": conds}
    return facts, findings


def _count(entry):
    return int(entry[0]) if entry is not None and entry[0].isdigit() else None


def _condition_findings(m, n, line, source):
    """A True condition whose reason is a set of Xids ('{"31":true}', GKE's XidCriticalError): each Xid."""
    out = []
    js = _XID_JSON_RE.search(m.group(5))
    if m.group(2) != "True" or "xid" not in m.group(1).lower() or js is None:
        return out
    try:
        codes = sorted(int(k) for k, v in json.loads(js.group(0)).items() if v)
    except ValueError:
        return out
    for code in codes[:16]:
        said = "is named by the node's %s condition (a node problem detector's reading of its kernel log; no GPU " \
               "named)" % m.group(1)
        out.append(number_finding(code, said, xid=code, count=1, first=None, last=None, evidence=line.strip(),
                                  source="%s:%d" % (source, n)))
    return out
