# SPDX-License-Identifier: Apache-2.0
"""``iblinkinfo`` / ``iblinkinfo -l``: the fabric view, one line per link."""

import re

from ..findings import finding, ib_ref, iter_lines
from .counters import counter_findings
from .model import Host, guarded, unparseable
from .names import WIDTH_RE, gbps, normalize_phys_state, normalize_state
from .ports import port_state_kind, tool_error_findings

_ILI_NODE_RE = re.compile(r"^\s*(?P<type>CA|Switch|Router)\s*:\s*(?P<rest>.*?):?\s*$")
_ILI_LINK_RE = re.compile(
    r"^\s*(?:(?P<guid>0x[0-9a-fA-F]+)\s+)?(?:\"(?P<name>[^\"]*)\"\s+)?(?P<lid>\d+)\s+(?P<port>\d+)"
    r"\[[^\]]*\]\s*==\(\s*(?P<mid>.*?)\)==>\s*(?P<peer>.*)$")
_ILI_STATE_RE = re.compile(r"(?P<state>Active|Down|Init|Initialize|Armed|ActDefer|ActiveDefer)\s*/\s*"
                           r"(?P<phys>[A-Za-z]+)")
_COULD_BE_RE = re.compile(r"\(\s*([^()]*Could be[^()]*?)\s*\)", re.I)


def parse_iblinkinfo(text, source="iblinkinfo.txt", thresholds=None, expected_rate=None,
                     expected_devices=None, host=None):
    """``iblinkinfo`` / ``iblinkinfo -l`` (fabric view) -> (facts, findings); never raises.

    Switch ports that are Down are normal (unused ports) and only listed; a link running
    below what both ends support ("Could be ...") is a degraded link; a port stuck in
    Init/Armed points at the subnet manager; a CA port Down is a node off the fabric. The
    fabric view covers other nodes too, so these are warnings only for links that touch
    ``host`` (matched in the node descriptions), info otherwise. Ports are keyed by node
    description; ``ca_type`` holds the node type (CA/Switch/Router) as iblinkinfo prints it."""
    return guarded("iblinkinfo", _parse, text, source, thresholds=thresholds, host=host)


def _fill_port(p, mid):
    ms = _ILI_STATE_RE.search(mid)
    if ms:
        p["state"] = normalize_state(ms.group("state").replace("ActDefer", "ActiveDefer"))
        p["phys_state"] = normalize_phys_state(ms.group("phys"))
    p["rate_gbps"] = None
    mw = WIDTH_RE.search(mid)
    sp = gbps(mid)
    if mw and sp is not None:
        p["rate_gbps"] = round(int(mw.group(1)) * sp, 3)
    p["link_layer"] = "InfiniBand"


def _link_finding(p, dev, m, ntype, severity, evidence, source):
    """The finding one link line calls for, or None."""
    ref = ib_ref(dev, p["port"])
    mid, peer = m.group("mid"), m.group("peer")
    could = _COULD_BE_RE.search(peer)
    if could and p["state"] == "Active":
        return finding(
            "ib_link_degraded", "degraded link: %s port %d runs at %s; iblinkinfo says: %s"
            % (dev, p["port"], re.sub(r"\s+", " ", mid.split("Active")[0]).strip() or "?",
               re.sub(r"\s+", " ", could.group(1)).strip()),
            evidence=evidence, source=source, ib=ref, severity=severity)
    if p["state"] in ("Init", "Armed") and p["phys_state"] == "LinkUp":
        return finding(
            "ib_port_not_active",
            "%s port %d is %s with the physical link up: the subnet manager has not activated it"
            % (dev, p["port"], p["state"]),
            evidence=evidence, source=source, ib=ref, severity=severity)
    is_ca = ntype == "CA" or (m.group("name") is not None and "HCA" in dev) or re.search(r"\bmlx\d_\d+\b", dev)
    if is_ca and p["state"] == "Down":
        return finding(
            port_state_kind(p["state"], p["phys_state"]),
            "CA port %s/%d is Down (%s) in the fabric view" % (dev, p["port"], p["phys_state"]),
            evidence=evidence, source=source, ib=ref, severity=severity)
    return None


def _parse(text, source, thresholds=None, host=None):
    h = Host("iblinkinfo", source)
    node = None
    ntype = None
    for n, line in iter_lines(text):
        if not line.strip():
            continue
        m = _ILI_NODE_RE.match(line)
        if m and "==(" not in line:
            ntype = m.group("type")
            node = m.group("rest").strip()
            continue
        m = _ILI_LINK_RE.match(line)
        if not m:
            if re.search(r"ibwarn|iberror|ibpanic|failed", line, re.I):
                h.tool_errors.append((n, line))
            continue
        if m.group("name") is not None:
            # --line mode: the node description is quoted on each line; no CA:/Switch: headers
            dev = m.group("name").strip() or ("lid:%s" % m.group("lid"))
        else:
            dev = node or ("lid:%s" % m.group("lid"))
        p = h.port(dev, int(m.group("port")))
        if ntype and m.group("name") is None:
            h.dev_info[dev]["ca_type"] = ntype
        _fill_port(p, m.group("mid"))
        h.ev[(dev, p["port"])]["state"] = (n, line)
        h.ev[(dev, p["port"])]["rate"] = (n, line)
        mine = bool(host) and (str(host).lower() in dev.lower() or str(host).lower() in m.group("peer").lower())
        f = _link_finding(p, dev, m, ntype, "warning" if mine else "info", line, h.src(n))
        if f is not None:
            h.findings.append(f)
    if not h.order and not h.tool_errors:
        return unparseable("iblinkinfo", source, text)
    counter_findings(h, [], thresholds, lambda p: True)
    tool_error_findings(h, "iblinkinfo")
    return h.facts(), h.findings
