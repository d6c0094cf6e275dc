# SPDX-License-Identifier: Apache-2.0
"""``ibportstate <lid> <port>`` (``query``) output, infiniband-diags (rdma-core).

ibportstate.c prints ``[Initial ][Switch |CA/RT ]PortInfo:`` (older releases: ``PortInfo:``),
then show_port_info(): ``# Port info: <portid> port <n>`` and libibmad's dotted fields
(``LinkState:......Active``, ``PhysLinkState:....LinkUp``, ``LinkWidthActive:....4X``,
``LinkSpeedActive:....10.0 Gbps``, ``LinkSpeedExtActive:....14.0625 Gbps``); for a switch port
with a link, ``Peer PortInfo:`` and the same block for the port at the other end. When the two
ends could run faster than they do it warns (``ibwarn: ... Peer ports operating at active width
1 rather than 4 (4x)``, validate_width / validate_speed): a degraded link.

A port is named by the LID the command was given (``lid:1``), as perfquery's are; the peer as
``lid:1/6 peer``."""

import re

from ..findings import finding, ib_ref, iter_lines
from .model import Host, guarded
from .names import WIDTH_RE, gbps, normalize_phys_state, normalize_state
from .ports import finish

# '# Port info: Lid 1 port 6', '# Port info: DR path slid 2; dlid 65535; 0,6 port 1'
_HDR_RE = re.compile(r"^\s{0,8}#\s{0,4}Port info:\s{0,4}(?P<id>[^\n]{0,200}?)\s{1,4}port\s{1,4}(?P<port>\d{1,3})\s*$",
                     re.I)
_LID_RE = re.compile(r"\bLid\s{1,4}(\d{1,5})", re.I)
_KV_RE = re.compile(r"^\s{0,8}(?P<key>[A-Za-z][A-Za-z0-9]{1,40}):\.{0,80}(?P<val>[^\n]{0,200}?)\s*$")
_PEER_RE = re.compile(r"^\s{0,8}Peer PortInfo:\s*$")
# ibportstate.c validate_width / validate_speed / validate_extended_speed
DEGRADED_RE = re.compile(r"Peer ports operating at active (?:extended )?(?:width|speed) [^\n]{0,80}rather than",
                         re.I)


def parse_ibportstate(text, source="ibportstate.txt", expected_rate=None, expected_devices=None,
                      thresholds=None):
    """``ibportstate`` output -> (facts, findings); never raises."""
    return guarded("ibportstate", _parse, text, source, expected_rate=expected_rate)


def _parse(text, source, expected_rate=None):
    h = Host("ibportstate", source)
    port, peer_next, local = None, False, None
    pend = {}
    degraded = []
    for n, line in iter_lines(text):
        if not line.strip():
            continue
        if _PEER_RE.match(line):
            peer_next = True
            continue
        m = _HDR_RE.match(line)
        if m:
            ml = _LID_RE.search(m.group("id"))
            if peer_next and local is not None:
                dev = "%s/%d peer" % local
            else:
                dev = "lid:%s" % (ml.group(1) if ml else m.group("id").strip() or "?")
                local = (dev, int(m.group("port")))
            peer_next = False
            port = h.port(dev, int(m.group("port")))
            port["link_layer"] = "InfiniBand"
            continue
        if DEGRADED_RE.search(line):
            degraded.append((n, line))
            continue
        if re.search(r"\b(?:ibwarn|iberror|ibpanic)\b|\bfailed\b", line, re.I):
            h.tool_errors.append((n, line))
            continue
        mk = _KV_RE.match(line)
        if port is None or not mk:
            continue
        _field(h, pend, port, mk.group("key"), mk.group("val"), n, line)
    for k, d in pend.items():
        speed = d.get("ext") or d.get("speed")
        if d.get("width") and speed and k in h.ports:
            h.ports[k]["rate_gbps"] = float(d["width"]) * speed
    facts, findings = finish(h, text, expected_rate, None, None)
    for n, line in degraded:
        dev, num = local if local else ("?", 0)
        findings.append(finding(
            "ib_link_degraded", "ibportstate: the two ends of %s/%d could run faster than they do: %s" % (
                dev, num, line.strip()[:200]), evidence=line.strip()[:300], source=h.src(n), ib=ib_ref(dev, num)))
    return facts, findings


def _field(h, pend, port, key, val, n, line):
    k = (port["device"], port["port"])
    if key == "LinkState":
        port["state"] = normalize_state(val)
        h.ev[k]["state"] = (n, line)
    elif key == "PhysLinkState":
        port["phys_state"] = normalize_phys_state(val)
        h.ev[k]["phys_state"] = (n, line)
    elif key == "LinkWidthActive":
        mw = WIDTH_RE.search(val)
        if mw:
            pend.setdefault(k, {})["width"] = int(mw.group(1))
    elif key == "LinkSpeedActive":
        pend.setdefault(k, {})["speed"] = gbps(val)
        h.ev[k]["rate"] = (n, line)
    elif key in ("LinkSpeedExtActive", "LinkSpeedExtActive2") and gbps(val):
        pend.setdefault(k, {})["ext"] = gbps(val)
        h.ev[k]["rate"] = (n, line)
