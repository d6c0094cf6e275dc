# SPDX-License-Identifier: Apache-2.0
"""Port rules: from a parsed host (model.Host) to findings about port state, link rate,
missing HCAs and tool errors; the counters are counters.py's.

Which port is which: InfiniBand ports are the data path; Ethernet ports are RoCE data path
when they run at least as fast as the InfiniBand fabric (or the host has no InfiniBand),
front-end NICs otherwise. A port that is down is told apart by what its physical layer
says (see taxonomy/kinds_ib.py): no physical link -> the cable; physical link up but the
port not Active -> the subnet manager or the driver.
"""

import re

from ..findings import finding, ib_ref
from .counters import counter_findings
from .model import unparseable
from .names import fmt_rate, natural

# physical states in which the port sees no (working) link partner
NO_PHYSICAL_LINK = ("Polling", "Disabled", "Sleep", "PortConfigurationTraining", "LinkErrorRecovery")
_NOT_A_FAULT = (None, "Active", "ActiveDefer", "Nop")


def port_state_kind(state, phys):
    """The kind of an InfiniBand port that is not Active, decided by its physical layer:
    'ib_port_not_active' when the physical link is up (LinkUp; or Init/Armed, which
    imply it) -- software (subnet manager, driver) can fix that; 'ib_port_down' otherwise
    (no physical link, or none reported with the port Down) -- the cable, transceiver or
    switch port. None for a port that is Active (or unknown)."""
    if state in _NOT_A_FAULT:
        return None
    if phys == "LinkUp" or (phys is None and state in ("Init", "Armed")):
        return "ib_port_not_active"
    return "ib_port_down"


def _why_down(state, phys):
    """The sentence that explains a port that is not Active, from its physical state."""
    if phys == "Disabled":
        return (" Disabled means the port is turned off (by the subnet manager, the switch side or locally), "
                "not training: check why it was disabled, then its cable.")
    if phys in ("Polling", "Sleep"):
        return (" %s means no link partner is seen: cable, transceiver or switch-port side "
                "(unplugged cable, dead optic, switch port disabled/down)." % phys)
    if phys == "LinkUp" and state in ("Init", "Armed"):
        return (" The physical link is up but the subnet manager has not activated the port "
                "(SM down/unreachable, or port not yet configured).")
    if phys == "LinkUp":
        return (" The physical link is up but the logical port is Down: software (the driver, the "
                "subnet manager or the interface), not the cable.")
    if phys in ("PortConfigurationTraining", "LinkErrorRecovery"):
        return " The link is training/recovering: a marginal cable or transceiver."
    return ""


def _mode_rate(rates):
    if not rates:
        return None
    counts = {}
    for r in rates:
        counts[r] = counts.get(r, 0) + 1
    best = max(counts.values())
    return max(r for r, c in counts.items() if c == best)


def is_ib(p):
    return p["link_layer"] != "Ethernet"


class Layout(object):
    """What each port of the host is for: data path or front end, used or uncabled."""

    def __init__(self, h, ports):
        self.ports = ports
        rates = [p["rate_gbps"] for p in ports if is_ib(p) and p["state"] == "Active" and p["rate_gbps"]]
        self.ib_fabric_rate = max(rates) if rates else None
        self.has_ib = any(is_ib(p) for p in ports)
        self.eth_class = self._classify_ethernet()
        self.host_eth_top = max([c[1] for c in self.eth_class.values() if c[1]] or [0])
        # port number n >= 2 that is down on every device: an unused second port
        self.active_port_nums = set(p["port"] for p in ports if p["state"] == "Active")
        self.card_pos = self._card_positions(h)
        self.dev_active = set(p["device"] for p in ports if p["state"] == "Active")
        self.active_card_pos = set(self.card_pos[d][0] for d in self.dev_active if d in self.card_pos)

    def _classify_ethernet(self):
        """Ethernet ports grouped by CA type: a group is data path (RoCE fabric) when it runs
        at least as fast as the InfiniBand fabric, or when the host has no InfiniBand ports.
        -> {ca_type: (class, rate_class, n_active)}."""
        groups = {}
        for p in self.ports:
            if not is_ib(p):
                groups.setdefault(p["ca_type"], []).append(p)
        out = {}
        for ct, grp in groups.items():
            act = [p["rate_gbps"] for p in grp if p["state"] == "Active" and p["rate_gbps"]]
            rate_class = max(act) if act else None
            n_active = sum(1 for p in grp if p["state"] == "Active")
            if rate_class is None:
                out[ct] = ("none", rate_class, n_active)
            elif self.ib_fabric_rate is None or rate_class >= self.ib_fabric_rate:
                out[ct] = ("data", rate_class, n_active)
            else:
                out[ct] = ("frontend", rate_class, n_active)
        return out

    @staticmethod
    def _card_positions(h):
        """mlx5 shows each port of a multi-port card as its own device; they share the
        system image GUID. -> {dev: (position on the card, the card's devices)}."""
        cards = {}
        for dev in h.devices:
            g = (h.dev_info.get(dev) or {}).get("sys_guid")
            if g and int(re.sub(r"[^0-9a-fA-F]", "", g) or "0", 16) != 0:
                cards.setdefault(g.lower(), []).append(dev)
        pos = {}
        for devs in cards.values():
            if len(devs) >= 2:
                for i, dev in enumerate(sorted(devs, key=natural)):
                    pos[dev] = (i, devs)
        return pos

    def eth(self, p):
        return self.eth_class.get(p["ca_type"], ("none", None, 0))

    def data_path(self, p):
        if is_ib(p):
            return True
        cls, rate_class, _ = self.eth(p)
        if self.has_ib:
            return cls == "data"
        return cls == "data" and rate_class == self.host_eth_top

    def unused_sibling(self, p):
        """Position >= 1 on its card, down on every card, while the card's first port is used."""
        if p["device"] not in self.card_pos:
            return False
        pos, devs = self.card_pos[p["device"]]
        return pos >= 1 and pos not in self.active_card_pos and any(d in self.dev_active for d in devs)

    def unused_second_port(self, p):
        """Port n >= 2 down on every HCA while this HCA has an Active port."""
        return p["port"] >= 2 and p["port"] not in self.active_port_nums and \
            any(q["device"] == p["device"] and q["state"] == "Active" for q in self.ports)


def _ib_port_finding(lay, p, ev, src, phys_txt):
    st, ph = p["state"], p["phys_state"]
    ref = ib_ref(p["device"], p["port"])
    ln, line = ev
    # a port whose physical link is up has a cable and a partner: never an uncabled spare
    cabled = port_state_kind(st, ph) == "ib_port_not_active"
    if lay.unused_sibling(p) and not cabled:
        return finding(
            "ib_port_unused",
            "%s is %s%s: it is a further port of the same card as %s (same system image GUID) and "
            "that port position is down on every card, so probably uncabled"
            % (p["device"], st, phys_txt, ", ".join(d for d in lay.card_pos[p["device"]][1] if d != p["device"])),
            evidence=line, source=src(ln), ib=ref)
    if lay.unused_second_port(p) and not cabled:
        return finding(
            "ib_port_unused",
            "%s port %d is %s%s like port %d on every HCA: probably an uncabled second port"
            % (p["device"], p["port"], st, phys_txt, p["port"]),
            evidence=line, source=src(ln), ib=ref)
    return finding(
        port_state_kind(st, ph),
        "InfiniBand port %s/%d is %s%s, not Active.%s" % (p["device"], p["port"], st, phys_txt, _why_down(st, ph)),
        evidence=line, source=src(ln), ib=ref)


def _eth_port_finding(lay, p, ev, src, phys_txt):
    st, ph = p["state"], p["phys_state"]
    ref = ib_ref(p["device"], p["port"])
    ln, line = ev
    cls, rate_class, n_active = lay.eth(p)
    if lay.data_path(p) and n_active >= 2:
        # the same split as InfiniBand: no physical link is the cable, a link up but Down is software
        return finding(
            "roce_port_not_active" if port_state_kind(st, ph) == "ib_port_not_active" else "roce_port_down",
            "RoCE data-path port %s/%d (%s) is %s%s while %d other %s port(s) at %s Gb/s are Active.%s"
            % (p["device"], p["port"], p["ca_type"] or "same type", st, phys_txt, n_active,
               p["ca_type"] or "same-type", fmt_rate(rate_class), _why_down(st, ph)),
            evidence=line, source=src(ln), ib=ref)
    if n_active > 0:
        if lay.ib_fabric_rate is not None and (rate_class or 0) < lay.ib_fabric_rate:
            why = "at %s Gb/s it is not on the %s Gb/s InfiniBand data path (front-end NIC?)" % (
                fmt_rate(rate_class), fmt_rate(lay.ib_fabric_rate))
        else:
            why = "too few same-type ports are up to tell a data-path NIC from an uncabled port"
        return finding(
            "eth_port_down",
            "Ethernet port %s/%d (%s) is %s%s while %d same-type port(s) are Active; %s"
            % (p["device"], p["port"], p["ca_type"] or "unknown type", st, phys_txt, n_active, why),
            evidence=line, source=src(ln), ib=ref)
    return finding(
        "eth_port_unused",
        "Ethernet port %s/%d (%s) is %s%s; no port of the same type is Active (unused NIC?)"
        % (p["device"], p["port"], p["ca_type"] or "unknown type", st, phys_txt),
        evidence=line, source=src(ln), ib=ref)


def port_state_findings(h, lay):
    if len(lay.ports) >= 2 and all(p["state"] not in _NOT_A_FAULT and p["phys_state"] == "Disabled" for p in lay.ports):
        # no port is up and none waits for a partner: the ports were turned off, or the cards are not used
        ev = h.ev.get((lay.ports[0]["device"], lay.ports[0]["port"]), {})
        ln, line = ev.get("phys_state") or ev.get("state") or (0, "")
        h.findings.append(finding(
            "ib_ports_all_disabled", "all %d InfiniBand/RoCE ports of the host (%s) are Down with their physical "
            "state Disabled (turned off by the subnet manager or locally, not waiting for a cable's partner, "
            "which is Polling): no port carries traffic" % (
                len(lay.ports), ", ".join("%s/%d" % (p["device"], p["port"]) for p in lay.ports[:8])),
            evidence=line, source=h.src(ln)))
        return
    for p in lay.ports:
        if p["state"] is None and p["phys_state"] in ("Polling", "Disabled", "Sleep"):
            p["state"] = "Down"     # no physical link means the logical port is Down
        if p["state"] in _NOT_A_FAULT:
            continue
        ev = h.ev.get((p["device"], p["port"]), {})
        ev = ev.get("state") or ev.get("phys_state") or (0, "")
        phys_txt = (" (physical state %s)" % p["phys_state"]) if p["phys_state"] else ""
        make = _ib_port_finding if is_ib(p) else _eth_port_finding
        h.findings.append(make(lay, p, ev, h.src, phys_txt))


def rate_findings(h, lay, expected_rate):
    """Degraded rate: against expected_rate, else the most common rate of same-type ports."""
    groups = {}
    for p in lay.ports:
        if p["state"] == "Active" and p["rate_gbps"] is not None and lay.data_path(p):
            groups.setdefault((is_ib(p), p["ca_type"]), []).append(p)
    for (ib, ct), grp in groups.items():
        ref_rate = None
        why = None
        if expected_rate:
            try:
                ref_rate = float(expected_rate)
                why = "the expected %s Gb/s" % fmt_rate(ref_rate)
            except (TypeError, ValueError):
                ref_rate = None
        if ref_rate is None and len(grp) >= 2:
            ref_rate = _mode_rate([p["rate_gbps"] for p in grp])
            why = "the %s Gb/s of the host's other %s ports" % (
                fmt_rate(ref_rate), ct or ("InfiniBand" if ib else "same-type"))
        if ref_rate is None:
            continue
        for p in grp:
            if p["rate_gbps"] < ref_rate:
                ev = h.ev.get((p["device"], p["port"]), {})
                ln, line = ev.get("rate") or ev.get("state") or (0, "")
                h.findings.append(finding(
                    "ib_link_degraded",
                    "degraded link: %s/%d runs at %s Gb/s, below %s (lanes or speed fell back: "
                    "cable, transceiver or switch port)" % (p["device"], p["port"], fmt_rate(p["rate_gbps"]), why),
                    evidence=line, source=h.src(ln), ib=ib_ref(p["device"], p["port"])))


def _expected_list(expected_devices):
    if isinstance(expected_devices, str):
        return [x for x in re.split(r"[\s,]+", expected_devices) if x]
    return [str(d) for d in expected_devices]


def device_findings(h, expected_devices):
    """HCAs the tool said are gone, HCAs expected but not listed, and a host with none."""
    f = h.findings
    reported_missing = set()
    for dev, ln, line in h.missing:
        reported_missing.add(dev)
        f.append(finding(
            "ib_device_missing",
            "HCA %s disappeared: the tool could not open it (device removed, reset, or driver reload)" % dev,
            evidence=line, source=h.src(ln), ib=ib_ref(dev, None)))
    ln, line = h.no_devices or (0, "")
    if isinstance(expected_devices, int) and not isinstance(expected_devices, bool):
        if expected_devices > len(h.devices) and (h.devices or h.no_devices):
            f.append(finding(
                "ib_device_missing", "%d HCA(s) found in %s, %d expected (found: %s)"
                % (len(h.devices), h.source, expected_devices, ", ".join(h.devices) or "none"),
                evidence=line, source=h.src(ln)))
    elif expected_devices:
        for dev in _expected_list(expected_devices):
            if dev in h.dev_info or dev in reported_missing:
                continue
            f.append(finding(
                "ib_device_missing", "expected HCA %s is missing from %s (found: %s)"
                % (dev, h.source, ", ".join(h.devices) or "none"),
                evidence=line, source=h.src(ln), ib=ib_ref(dev, None)))
    elif h.no_devices and not h.devices:
        f.append(finding("ib_no_devices", "no RDMA devices were found on this host",
                         evidence=line, source=h.src(ln)))


def tool_error_findings(h, tool="the InfiniBand tool"):
    for ln, line in h.tool_errors:
        h.findings.append(finding("ib_tool_error", "%s reported an error: %s" % (tool, line.strip()[:200]),
                                  evidence=line, source=h.src(ln)))


def analyze(h, expected_rate=None, expected_devices=None, thresholds=None, check_ports=True):
    """Port, rate, device and counter findings for a parsed host (appended to h.findings)."""
    lay = Layout(h, h.port_list())
    if check_ports:
        port_state_findings(h, lay)
        rate_findings(h, lay, expected_rate)
    device_findings(h, expected_devices)
    tool_error_findings(h)
    counter_findings(h, lay.ports, thresholds, lay.data_path)
    return h.findings


def finish(h, text, expected_rate, expected_devices, thresholds, check_ports=True):
    """(facts, findings) of a parsed host; 'ib_unparseable' when nothing at all was recognised."""
    if h.empty():
        return unparseable(h.fmt, h.source, text)
    analyze(h, expected_rate=expected_rate, expected_devices=expected_devices,
            thresholds=thresholds, check_ports=check_ports)
    return h.facts(), h.findings
