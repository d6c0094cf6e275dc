# SPDX-License-Identifier: Apache-2.0
"""NCCL's topology dump (``NCCL_TOPO_DUMP_FILE``: the XML ``ncclTopoDumpXmlToFile`` writes, src/graph/
xml.cc) -> (facts, findings).

Its layout: ``<system version="1">`` over one ``<cpu numaid=.. affinity=.. arch=.. vendor=..>`` per
NUMA node, each holding the PCIe tree NCCL found: ``<pci busid=.. class=.. vendor=.. device=..
link_speed=.. link_width=..>`` (nested under PCIe switches), a ``<gpu dev=.. sm=.. rank=.. gdr=..>``
(with ``<nvlink target=.. count=.. tclass=..>`` children) or a ``<nic>`` of ``<net name=.. dev=..
speed=.. port=.. gdr=.. ...>`` elements; NVSwitches as ``<nvs>``, ``<c2c>`` on Grace. One element per
line, attributes in double quotes.

What it tells: which GPUs and NICs NCCL saw and how it can use them. A NIC with ``gdr="0"`` while
GPUs are present means NCCL cannot use GPUDirect RDMA with it (``ncclTopoCheckGdr``: the GPU and the
NIC too far apart in the PCIe tree, or no nvidia-peermem / dma-buf support): the traffic is staged
through host memory -- slower, never a failure (``nccl_topo_no_gdr``, info). A dump that names no GPU
says nothing of the node. The dump is NCCL's view of the hardware, not its health: read whole it is
evidence that the node's GPUs and NICs are there as NCCL found them.

Read line by line with one pattern (a pasted dump may be cut; no XML parser expands anything).
Pure, standard library only, never raises."""

import re

from .findings import finding, iter_lines, never_raise, small_int as _int

SOURCE = "nccl-topo.xml"
OPENING = re.compile(r'^[ \t]{0,8}<system version="\d{1,3}">[ \t]*$')
_ELEMENT_RE = re.compile(r'^[ \t]{0,200}<(/?)(system|cpu|pci|gpu|nvlink|nic|net|nvs|c2c|pcilink)\b([^<>\n]{0,2000}?)'
                         r'[ \t]*(/?)>[ \t]*$')
_ATTR_RE = re.compile(r'\b([a-z_]{1,40})="([^"\n]{0,400})"')


def belongs(line):
    """The dump's element lines and blank lines (content/)."""
    return not line.strip() or bool(_ELEMENT_RE.match(line))


def _attrs(text):
    return dict(_ATTR_RE.findall(text))


def parse_nccl_topo(text, source=SOURCE):
    """-> (facts, findings); never raises. facts: {"gpus": [{"busid", "dev", "rank", "sm", "gdr",
    "nvlinks"}], "nics": [{"name", "busid", "speed_mbps", "port", "gdr"}], "cpus": N, "closed": whether
    ``</system>`` ended it, "lines": elements read}."""
    return never_raise(_parse, source, text if isinstance(text, str) else "", source=source)


def _parse(text, source=SOURCE):
    gpus, nics, cpus, closed, read, pci = [], [], 0, False, 0, []
    for lineno, line in iter_lines(text):
        m = _ELEMENT_RE.match(line)
        if not m:
            continue
        read += 1
        end, tag, attrs = m.group(1) == "/", m.group(2), _attrs(m.group(3))
        if tag == "pci":
            if end:
                pci = pci[:-1]
            elif not m.group(4):
                pci.append(attrs.get("busid"))
        elif end:
            closed = closed or tag == "system"
        elif tag == "cpu":
            cpus += 1
        elif tag == "gpu":
            gpus.append({"busid": pci[-1] if pci else None, "dev": _int(attrs.get("dev")),
                         "rank": _int(attrs.get("rank")), "sm": _int(attrs.get("sm")),
                         "gdr": attrs.get("gdr"), "nvlinks": 0, "line": lineno})
        elif tag == "nvlink" and gpus:
            gpus[-1]["nvlinks"] += _int(attrs.get("count")) or 0
        elif tag == "net":
            nics.append({"name": attrs.get("name"), "busid": pci[-1] if pci else None,
                         "speed_mbps": _int(attrs.get("speed")), "port": _int(attrs.get("port")),
                         "gdr": attrs.get("gdr"), "line": lineno, "raw": line.strip()})
    facts = {"gpus": [{k: v for k, v in g.items() if k != "line"} for g in gpus],
             "nics": [{k: v for k, v in n.items() if k not in ("line", "raw")} for n in nics],
             "cpus": cpus, "closed": closed, "lines": read}
    findings = []
    if gpus:
        for n in nics:
            if n["gdr"] == "0":
                findings.append(finding(
                    "nccl_topo_no_gdr", "NCCL cannot use GPUDirect RDMA with %s%s (gdr=0 in its topology): its "
                    "traffic to the GPUs is staged through host memory (slower, not a failure)" % (
                        n["name"] or "a NIC", " (PCI %s)" % n["busid"] if n["busid"] else ""),
                    evidence=n["raw"], source="%s:%d" % (source, n["line"])))
    return facts, findings
