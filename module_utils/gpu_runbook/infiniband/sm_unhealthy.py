# SPDX-License-Identifier: Apache-2.0
"""The subnet manager's unhealthy-ports report -> the fabric's links the SM declared unhealthy.

NVIDIA's OpenSM (the one UFM runs, with ``hm_unhealthy_ports_checks``, on by default) keeps the
ports its health manager declared unhealthy, one line per port under its own header::

    # NodeGUID, PortNum, NodeDesc, PeerNodeGUID, PeerPortNum,  PeerNodeDesc, {BadCond1, BadCond2, ...}, TimeStamp
    0x0011223344550001, 25, "spine-sw-03", 0x0055667788990001, 25, "leaf-sw-38", {FLAPPING}, Fri Mar 20 01:13:40 2026

UFM's manual ('Unhealthy Ports Window') names the conditions: a node rebooted too often, links
flapping (found Initializing in 5 of 10 sweeps), a port that does not answer the SM's MADs, a node
that sends too many traps, high bit error rates, illegal states, an operator's manual mark; the SM
then reports, isolates or disables the port. Its source is not public, so the reader names any
condition in braces as written. Each line is an unhealthy link of the fabric (ib_network,
warning): the SM isolates or disables it, and a job whose traffic crosses it stalls or fails. A
link reported from both ends is one finding. The port of an HCA (its description names a host and
an HCA: ``gpu-12 mlx5_0``, ``gpu-12 HCA-1``) names that host; a switch port names none. The
header with no port under it is a healthy reading: the SM lists no unhealthy port."""

import re

from ..findings import finding, iter_lines
from .model import guarded, unparseable

FORMAT = "unhealthy ports"
HEADER_RE = re.compile(r"^#[ \t]*NodeGUID,[ \t]*PortNum,[ \t]*NodeDesc,[ \t]*PeerNodeGUID,[ \t]*PeerPortNum,")
_ROW_RE = re.compile(r"^[ \t]*(?P<guid>0x[0-9a-fA-F]{1,16}),[ \t]*(?P<port>\d{1,3}),[ \t]*\"(?P<desc>[^\"\n]{0,128})\","
                     r"[ \t]*(?P<pguid>0x[0-9a-fA-F]{1,16}),[ \t]*(?P<pport>\d{1,3}),[ \t]*\"(?P<pdesc>[^\"\n]{0,128})\","
                     r"[ \t]*\{(?P<conds>[^{}\n]{0,200})\}(?:,[ \t]*(?P<time>[^\n]{1,64}?))?[ \t]*$")
OPENING = re.compile(HEADER_RE.pattern + "|" + _ROW_RE.pattern)
# an HCA's node description: 'host mlx5_0' / 'host HCA-1' (the first word is its host)
_HCA_DESC = re.compile(r"^([A-Za-z0-9][\w.\-]{0,62})[ \t]+(?:mlx\d_\d{1,3}|HCA-\d{1,3})\b")


def belongs(line):
    return not line.strip() or bool(HEADER_RE.match(line) or _ROW_RE.match(line))


def parse_sm_unhealthy_ports(text, source="unhealthy-ports.txt"):
    """-> (facts, findings); never raises. facts: {"ports": [{guid, port, desc, peer_guid, peer_port,
    peer_desc, conditions, time, line}], "links": how many links, "header": bool}."""
    return guarded(FORMAT, _parse, text, source)


def _host(desc):
    m = _HCA_DESC.match(desc.strip())
    return m.group(1) if m else None


def _parse(text, source):
    ports, header, links = [], False, {}
    for n, line in iter_lines(text):
        if HEADER_RE.match(line):
            header = True
            continue
        m = _ROW_RE.match(line)
        if not m:
            continue
        conds = [c.strip() for c in m.group("conds").split(",") if c.strip()]
        p = {"guid": m.group("guid").lower(), "port": int(m.group("port")), "desc": m.group("desc"),
             "peer_guid": m.group("pguid").lower(), "peer_port": int(m.group("pport")), "peer_desc": m.group("pdesc"),
             "conditions": conds, "time": m.group("time"), "line": n}
        ports.append(p)
        key = frozenset(((p["guid"], p["port"]), (p["peer_guid"], p["peer_port"])))
        links.setdefault(key, []).append((p, line, "%s:%d" % (source, n)))
    if not ports and not header:
        return unparseable(FORMAT, source, text)
    findings, all_hosts = [], []
    for reports in links.values():
        p, line, where = reports[0]
        conds = sorted(set(c for r, _l, _w in reports for c in r["conditions"])) or ["(no condition named)"]
        ends = "%s port %d <-> %s port %d" % (p["desc"] or p["guid"], p["port"], p["peer_desc"] or p["peer_guid"],
                                              p["peer_port"])
        hosts = [h for h in (_host(p["desc"]), _host(p["peer_desc"])) if h]
        all_hosts.extend(hosts)
        findings.append(finding(
            "ib_sm_unhealthy_port",
            "the subnet manager declared the link %s unhealthy (%s)%s%s%s: it isolates or disables such a port, and "
            "traffic that crosses it stalls or fails" % (
                ends, ", ".join(conds), ", reported from both ends" if len(reports) > 1 else "",
                " since %s" % p["time"] if p["time"] else "",
                "; the HCA end is %s's" % hosts[0] if hosts else ""),
            evidence=line, source=where))
    return {"ports": ports, "links": len(links), "header": header, "hosts": sorted(set(all_hosts))}, findings
