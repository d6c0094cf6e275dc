"""InfiniBand / RoCE port state and error counters: sysfs, ibstat, ibstatus, ibv_devinfo,
perfquery and iblinkinfo text -> (facts, findings).

Every parser returns ``(facts, findings)`` with

    facts = {"format": "ib-sysfs" | "ibstat" | "ibstatus" | "ibv_devinfo" | "perfquery" | "iblinkinfo",
             "ports": [{"device", "port", "state", "phys_state", "rate_gbps", "link_layer",
                        "ca_type", "counters": {canonical_name: int}}],
             "devices": [names, in order of appearance]}

Port states are normalised to ``Down/Init/Armed/Active/ActiveDefer``; physical states to
``Sleep/Polling/Disabled/PortConfigurationTraining/LinkUp/LinkErrorRecovery/PhyTest``;
counter names to the sysfs spelling (``SymbolErrorCounter`` -> ``symbol_error``) so one
threshold table (``COUNTER_RULES``, overridable per call with ``thresholds``) serves all
formats. Pure functions of text: standard library only, Python 3.9+, never raise.
"""

import re

from .findings import ib_ref, iter_lines, make_finding

# ---------------------------------------------------------------------------------------
# Counter rules: one table, data only. Values are "at or above" thresholds; None = off.
# ``thresholds`` overrides per call: {"symbol_error": {"warning": 5}} merges into the rule,
# {"symbol_error": 5} sets the warning threshold, {"symbol_error": None} disables it.
# ---------------------------------------------------------------------------------------
COUNTER_RULES = {
    "link_downed": {
        "info": None, "warning": 1, "critical": 5,
        "rung_warning": "ib_restart", "rung_critical": "ib_restart",
        "kind": "ib_link_downed",
        "what": "the link went down and retrained %d time(s) since the counters were last cleared",
        "critical_what": "port flapping: the link went down %d times since the counters were last cleared",
        "action": "Check the cable/transceiver and the switch port; reset the link (ib_restart) and "
                  "clear counters; replace the cable if it keeps flapping.",
    },
    "symbol_error": {
        "info": None, "warning": 10, "critical": 1000,
        "rung_warning": "none", "rung_critical": "drain",
        "kind": "ib_symbol_errors",
        "what": "%d symbol errors (physical-layer bit errors) on the link",
        "action": "Reseat or replace the cable/transceiver; drain the node if the counter keeps climbing.",
    },
    "link_error_recovery": {
        "info": None, "warning": 1, "critical": 10,
        "rung_warning": "none", "rung_critical": "ib_restart",
        "kind": "ib_link_error_recovery",
        "what": "the link ran the error-recovery procedure %d time(s) (marginal link)",
        "action": "Inspect the cable/transceiver; reset the link and replace the cable if it recurs.",
    },
    "port_rcv_errors": {
        "info": None, "warning": 10, "critical": 1000,
        "rung_warning": "none", "rung_critical": "drain",
        "kind": "ib_rcv_errors",
        "what": "%d malformed packets received (bad CRC/length)",
        "action": "Check the cable and the peer port; replace the cable if the counter keeps climbing.",
    },
    "port_xmit_discards": {
        "info": None, "warning": 100, "critical": 100000,
        "rung_warning": "none", "rung_critical": "drain",
        "kind": "ib_xmit_discards",
        "what": "%d outbound packets discarded (port down or congestion/head-of-line timeout)",
        "action": "Check the link for flaps and the fabric for congestion; check the switch port.",
    },
    "local_link_integrity_errors": {
        "info": None, "warning": 1, "critical": 10,
        "rung_warning": "none", "rung_critical": "drain",
        "kind": "ib_link_integrity_errors",
        "what": "%d local link integrity errors (physical errors beyond the link threshold)",
        "action": "Reseat or replace the cable/transceiver.",
    },
    "excessive_buffer_overrun_errors": {
        "info": None, "warning": 1, "critical": 100,
        "rung_warning": "none", "rung_critical": "drain",
        "kind": "ib_buffer_overrun_errors",
        "what": "%d excessive buffer overrun errors (flow-control / credit problem)",
        "action": "Check the link and the peer port's flow-control configuration.",
    },
    "port_rcv_remote_physical_errors": {
        "info": None, "warning": 10, "critical": 1000,
        "rung_warning": "none", "rung_critical": "none",
        "kind": "ib_remote_physical_errors",
        "what": "%d packets arrived marked bad by an upstream link (fault elsewhere in the fabric)",
        "action": "Look for physical errors on the upstream switch links (perfquery/ibqueryerrors).",
    },
    "VL15_dropped": {
        "info": 1, "warning": None, "critical": None,
        "rung_warning": "none", "rung_critical": "none",
        "kind": "ib_vl15_dropped",
        "what": "%d subnet-management (VL15) packets dropped",
        "action": "None needed unless the subnet manager reports problems.",
    },
    "port_rcv_switch_relay_errors": {
        "info": 1, "warning": None, "critical": None,
        "rung_warning": "none", "rung_critical": "none",
        "kind": "ib_switch_relay_errors",
        "what": "%d packets the switch could not relay (routing; often multicast, usually benign)",
        "action": "None needed unless it grows with traffic; check the subnet manager's routing.",
    },
    "port_xmit_constraint_errors": {
        "info": 1, "warning": None, "critical": None,
        "rung_warning": "none", "rung_critical": "none",
        "kind": "ib_constraint_errors", "what": "%d packets not sent due to partition/constraint checks",
        "action": "Check partition (P_Key) configuration.",
    },
    "port_rcv_constraint_errors": {
        "info": 1, "warning": None, "critical": None,
        "rung_warning": "none", "rung_critical": "none",
        "kind": "ib_constraint_errors", "what": "%d packets dropped by partition/constraint checks",
        "action": "Check partition (P_Key) configuration.",
    },
    "port_xmit_wait": {
        # congestion, not an error: normally non-zero on busy links
        "info": 1000000000, "warning": 10 ** 13, "critical": None,
        "rung_warning": "none", "rung_critical": "none",
        "kind": "ib_congestion",
        "what": "PortXmitWait is %d ticks: the port often waited for credits (congestion)",
        "action": "Look for a congested or slow peer/switch link; check the fabric's routing and QoS.",
    },
    # mlx5 hw_counters (RDMA transport): what NCCL's "transport retry counter exceeded" looks like
    "req_transport_retries_exceeded": {
        "info": None, "warning": 1, "critical": None,
        "rung_warning": "none", "rung_critical": "none",
        "kind": "ib_transport_retries_exceeded",
        "what": "%d RDMA requests exhausted their transport retries (NCCL 'retry counter exceeded')",
        "action": "Check the link and the remote node of the failing connection.",
    },
    "local_ack_timeout_err": {
        "info": 1, "warning": 1000, "critical": None,
        "rung_warning": "none", "rung_critical": "none",
        "kind": "ib_ack_timeouts",
        "what": "%d RDMA ACK timeouts (peer slow, packets lost or link flapping)",
        "action": "Check the link's error counters and the peers' health.",
    },
    "rnr_nak_retry_err": {
        "info": 1, "warning": None, "critical": None,
        "rung_warning": "none", "rung_critical": "none",
        "kind": "ib_rnr_retry_errors", "what": "%d receiver-not-ready retry failures",
        "action": "None needed unless it grows during the failing job.",
    },
    "packet_seq_err": {
        "info": 1, "warning": None, "critical": None,
        "rung_warning": "none", "rung_critical": "none",
        "kind": "ib_packet_seq_errors", "what": "%d packet sequence errors (packets lost in the fabric)",
        "action": "Correlate with link error counters on the path.",
    },
    "out_of_buffer": {
        "info": 1, "warning": None, "critical": None,
        "rung_warning": "none", "rung_critical": "none",
        "kind": "ib_out_of_buffer", "what": "%d packets dropped for lack of receive WQEs",
        "action": "None needed unless it grows during the failing job.",
    },
}

# perfquery (current and pre-1.5 infiniband-diags) names -> sysfs names
_COUNTER_ALIASES = {
    "symbolerrorcounter": "symbol_error", "symbolerrors": "symbol_error",
    "linkerrorrecoverycounter": "link_error_recovery", "linkrecovers": "link_error_recovery",
    "linkdownedcounter": "link_downed", "linkdowned": "link_downed",
    "portrcverrors": "port_rcv_errors", "rcverrors": "port_rcv_errors",
    "portrcvremotephysicalerrors": "port_rcv_remote_physical_errors",
    "rcvremotephyserrors": "port_rcv_remote_physical_errors",
    "portrcvswitchrelayerrors": "port_rcv_switch_relay_errors",
    "rcvswrelayerrors": "port_rcv_switch_relay_errors",
    "portxmitdiscards": "port_xmit_discards", "xmtdiscards": "port_xmit_discards",
    "portxmitconstrainterrors": "port_xmit_constraint_errors",
    "xmtconstrainterrors": "port_xmit_constraint_errors",
    "portrcvconstrainterrors": "port_rcv_constraint_errors",
    "rcvconstrainterrors": "port_rcv_constraint_errors",
    "locallinkintegrityerrors": "local_link_integrity_errors",
    "linkintegrityerrors": "local_link_integrity_errors",
    "excessivebufferoverrunerrors": "excessive_buffer_overrun_errors",
    "excbufoverrunerrors": "excessive_buffer_overrun_errors",
    "vl15dropped": "VL15_dropped",
    "portxmitwait": "port_xmit_wait", "xmtwait": "port_xmit_wait",
    "portxmitdata": "port_xmit_data", "xmtdata": "port_xmit_data",
    "portrcvdata": "port_rcv_data", "rcvdata": "port_rcv_data",
    "portxmitpkts": "port_xmit_packets", "xmtpkts": "port_xmit_packets",
    "portrcvpkts": "port_rcv_packets", "rcvpkts": "port_rcv_packets",
    "portunicastxmitpkts": "unicast_xmit_packets", "portunicastrcvpkts": "unicast_rcv_packets",
    "portmulticastxmitpkts": "multicast_xmit_packets", "portmulticastrcvpkts": "multicast_rcv_packets",
    "qp1dropped": "qp1_dropped",
}
# perfquery fields that are selectors, not counters
_NOT_COUNTERS = {"portselect", "counterselect", "counterselect2", "capmask", "capmask2"}

_STATE_NUM = {0: "Nop", 1: "Down", 2: "Init", 3: "Armed", 4: "Active", 5: "ActiveDefer"}
_STATE_WORD = {"nop": "Nop", "down": "Down", "init": "Init", "initialize": "Init",
               "initializing": "Init", "armed": "Armed", "actdefer": "ActiveDefer",
               "active": "Active", "activedefer": "ActiveDefer"}
_PHYS_NUM = {0: "NoStateChange", 1: "Sleep", 2: "Polling", 3: "Disabled",
             4: "PortConfigurationTraining", 5: "LinkUp", 6: "LinkErrorRecovery", 7: "PhyTest"}
_PHYS_WORD = {"sleep": "Sleep", "polling": "Polling", "disabled": "Disabled",
              "portconfigurationtraining": "PortConfigurationTraining", "linkup": "LinkUp",
              "linkerrorrecovery": "LinkErrorRecovery", "phytest": "PhyTest",
              "nostatechange": "NoStateChange"}

_NUM_RE = re.compile(r"[-+]?\d+(?:\.\d+)?")
_INT_RE = re.compile(r"^\s*(0x[0-9a-fA-F]+|\d+)\s*$")
_WIDTH_RE = re.compile(r"(\d+)\s*[xX]\b")


# ----------------------------------------------------------------------------- helpers

def normalize_counter_name(name):
    """'SymbolErrorCounter' / 'symbol_error' / 'SymbolErrors' -> 'symbol_error'."""
    if not name:
        return name
    n = name.strip()
    key = re.sub(r"[^a-z0-9]", "", n.lower())
    if key in _COUNTER_ALIASES:
        return _COUNTER_ALIASES[key]
    if n == "VL15_dropped" or key == "vl15dropped":
        return "VL15_dropped"
    if "_" in n or n.islower():
        return n
    # CamelCase -> snake_case for the ones we do not know
    s = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", n)
    return s.lower()


def normalize_state(value):
    """'4: ACTIVE' / 'PORT_ACTIVE (4)' / 'Active' -> 'Active'; None when unrecognised."""
    return _norm_enum(value, _STATE_NUM, _STATE_WORD, strip_prefix="port_")


def normalize_phys_state(value):
    """'5: LinkUp' / 'LINK_UP (5)' / 'LinkUp' -> 'LinkUp'; None when unrecognised."""
    return _norm_enum(value, _PHYS_NUM, _PHYS_WORD, strip_prefix="")


def _norm_enum(value, by_num, by_word, strip_prefix):
    if value is None:
        return None
    v = value.strip()
    if not v:
        return None
    word = re.sub(r"\(\s*\d+\s*\)", "", v)           # 'PORT_ACTIVE (4)'
    word = re.sub(r"^\s*\d+\s*:\s*", "", word)        # '4: ACTIVE'
    key = word.strip().lower()
    if strip_prefix and key.startswith(strip_prefix):
        key = key[len(strip_prefix):]
    key = re.sub(r"[^a-z]", "", key)
    if key in by_word:
        return by_word[key]
    m = re.match(r"^\s*(\d+)\s*:", v) or re.search(r"\(\s*(\d+)\s*\)", v)
    if m and int(m.group(1)) in by_num:
        return by_num[int(m.group(1))]
    # unknown words (or a line cut short: "State: Acti") are not guessed at
    return None


def parse_rate(value):
    """'400 Gb/sec (4X NDR)' / '400' / '25.78125 Gbps' -> float; None when absent/invalid."""
    if value is None:
        return None
    m = _NUM_RE.search(value)
    if not m:
        return None
    try:
        r = float(m.group(0))
    except ValueError:
        return None
    return r if r >= 0 else None


def _norm_link_layer(value):
    if not value:
        return None
    v = value.strip().lower()
    if v.startswith("infiniband") or v == "ib":
        return "InfiniBand"
    if v.startswith("ethernet") or v == "eth":
        return "Ethernet"
    if v.startswith("omni") or v.startswith("opa"):
        return "InfiniBand"
    return value.strip() or None


def _to_int(value):
    if value is None:
        return None
    m = _INT_RE.match(value)
    if not m:
        return None
    s = m.group(1)
    try:
        return int(s, 16) if s.lower().startswith("0x") else int(s)
    except ValueError:
        return None


def _natural(name):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name or "")]


def _fmt_rate(r):
    if r is None:
        return "unknown"
    return ("%g" % r)


class _Host(object):
    """Mutable parse state shared by the formats; turned into facts at the end."""

    def __init__(self, fmt, source):
        self.fmt = fmt
        self.source = source
        self.devices = []
        self.dev_info = {}      # dev -> {"ca_type": ...}
        self.ports = {}         # (dev, port) -> port dict
        self.order = []
        self.ev = {}            # (dev, port) -> {"state": (lineno, line), ...}
        self.cev = {}           # (dev, port, counter) -> (lineno, line)
        self.findings = []
        self.tool_errors = []   # (lineno, line)
        self.missing = []       # (dev, lineno, line) reported by the tool itself
        self.no_devices = None  # (lineno, line)

    def device(self, dev):
        if dev not in self.dev_info:
            self.devices.append(dev)
            self.dev_info[dev] = {"ca_type": None}
        return self.dev_info[dev]

    def port(self, dev, num):
        self.device(dev)
        key = (dev, num)
        if key not in self.ports:
            self.ports[key] = {"device": dev, "port": num, "state": None, "phys_state": None,
                               "rate_gbps": None, "link_layer": None, "ca_type": None,
                               "counters": {}}
            self.order.append(key)
            self.ev[key] = {}
        return self.ports[key]

    def src(self, lineno):
        return "%s:%d" % (self.source, lineno) if lineno else self.source

    def facts(self):
        ports = []
        for key in self.order:
            p = self.ports[key]
            if p["ca_type"] is None:
                p["ca_type"] = self.dev_info.get(p["device"], {}).get("ca_type")
            ports.append(p)
        return {"format": self.fmt, "ports": ports, "devices": list(self.devices)}


def _unparseable(fmt, source, text, why=None):
    if text is None or not str(text).strip():
        msg = "%s is empty: no InfiniBand port information" % source
    else:
        msg = why or ("%s is not recognisable %s output" % (source, fmt))
    sample = ""
    if isinstance(text, str):
        for _, line in iter_lines(text[:4096]):
            if line.strip():
                sample = line.strip()[:200]
                break
    return ({"format": fmt, "ports": [], "devices": []},
            [make_finding("unknown", "info", "unparseable", msg,
                          "Check that the probe ran and produced %s output." % fmt,
                          evidence=sample, source=source)])


def _guard(fmt):
    """Decorator: a parser never raises; bad input -> info 'unparseable' + empty facts."""
    def wrap(fn):
        def inner(text, source=None, *args, **kwargs):
            src = source or "%s.txt" % fmt
            if not isinstance(text, str):
                if isinstance(text, bytes):
                    text = text.decode("utf-8", "replace")
                else:
                    return _unparseable(fmt, src, None)
            try:
                return fn(text, src, *args, **kwargs)
            except Exception as exc:  # noqa: BLE001 -- garbage in is normal input
                return _unparseable(fmt, src, text, "%s could not be parsed (%s: %s)"
                                    % (src, type(exc).__name__, exc))
        inner.__name__ = fn.__name__
        inner.__doc__ = fn.__doc__
        return inner
    return wrap


# ----------------------------------------------------------------------------- analysis

def _merged_rules(thresholds):
    rules = {}
    for k, v in COUNTER_RULES.items():
        rules[k] = dict(v)
    if isinstance(thresholds, dict):
        for name, val in thresholds.items():
            key = normalize_counter_name(str(name))
            if val is None or val is False:
                rules.pop(key, None)
                continue
            base = rules.get(key) or {
                "info": None, "warning": None, "critical": None,
                "rung_warning": "none", "rung_critical": "none",
                "kind": "ib_counter_%s" % re.sub(r"[^a-z0-9_]", "_", key.lower()),
                "what": "counter " + key + " is %d",
                "action": "Check the link and the peer port.",
            }
            if isinstance(val, dict):
                base.update(val)
            elif isinstance(val, (int, float)) and not isinstance(val, bool):
                base["warning"] = val
            elif isinstance(val, str) and re.match(r"^\s*\d+(?:\.\d+)?\s*$", val):
                base["warning"] = float(val)
            rules[key] = base
    for rule in rules.values():
        for level in ("info", "warning", "critical"):
            t = rule.get(level)
            if t is None or (isinstance(t, (int, float)) and not isinstance(t, bool)):
                continue
            try:
                rule[level] = float(str(t).strip())
            except ValueError:
                rule[level] = None
    return rules


def _mode_rate(rates):
    if not rates:
        return None
    counts = {}
    for r in rates:
        counts[r] = counts.get(r, 0) + 1
    best = max(counts.values())
    return max(r for r, c in counts.items() if c == best)


def _analyze(h, expected_rate=None, expected_devices=None, thresholds=None, check_ports=True):
    """Port, rate, device and counter findings for a parsed host."""
    f = h.findings
    ports = [h.ports[k] for k in h.order]
    for p in ports:
        if p["ca_type"] is None:
            p["ca_type"] = h.dev_info.get(p["device"], {}).get("ca_type")

    def is_ib(p):
        return p["link_layer"] != "Ethernet"

    ib_active_rates = [p["rate_gbps"] for p in ports
                       if is_ib(p) and p["state"] == "Active" and p["rate_gbps"]]
    ib_fabric_rate = max(ib_active_rates) if ib_active_rates else None
    has_ib = any(is_ib(p) for p in ports)

    # Ethernet ports grouped by CA type: a group is data path (RoCE fabric) when it runs at
    # least as fast as the InfiniBand fabric, or when the host has no InfiniBand ports.
    eth_groups = {}
    for p in ports:
        if not is_ib(p):
            eth_groups.setdefault(p["ca_type"], []).append(p)
    eth_class = {}
    for ct, grp in eth_groups.items():
        act = [p["rate_gbps"] for p in grp if p["state"] == "Active" and p["rate_gbps"]]
        rate_class = max(act) if act else None
        n_active = sum(1 for p in grp if p["state"] == "Active")
        if rate_class is None:
            eth_class[ct] = ("none", rate_class, n_active)
        elif ib_fabric_rate is None or rate_class >= ib_fabric_rate:
            eth_class[ct] = ("data", rate_class, n_active)
        else:
            eth_class[ct] = ("frontend", rate_class, n_active)
    host_eth_top = max([c[1] for c in eth_class.values() if c[1]] or [0])

    def data_path(p):
        if is_ib(p):
            return True
        cls, rate_class, _ = eth_class.get(p["ca_type"], ("none", None, 0))
        if has_ib:
            return cls == "data"
        return cls == "data" and rate_class == host_eth_top

    # port number n >= 2 that is down on every device: an unused second port
    active_port_nums = set(p["port"] for p in ports if p["state"] == "Active")
    # mlx5 shows each port of a multi-port card as its own device; they share the system
    # image GUID. Position 1 (the second port) down on every card: an uncabled second port.
    cards = {}
    for dev in h.devices:
        g = (h.dev_info.get(dev) or {}).get("sys_guid")
        if g and int(re.sub(r"[^0-9a-fA-F]", "", g) or "0", 16) != 0:
            cards.setdefault(g.lower(), []).append(dev)
    card_pos = {}
    for devs in cards.values():
        if len(devs) >= 2:
            for i, dev in enumerate(sorted(devs, key=_natural)):
                card_pos[dev] = (i, devs)
    dev_active = set(p["device"] for p in ports if p["state"] == "Active")
    active_card_pos = set(card_pos[d][0] for d in dev_active if d in card_pos)

    def unused_sibling(p):
        if p["device"] not in card_pos:
            return False
        pos, devs = card_pos[p["device"]]
        return pos >= 1 and pos not in active_card_pos and any(d in dev_active for d in devs)

    if check_ports:
        for p in ports:
            key = (p["device"], p["port"])
            ev = h.ev.get(key, {})
            if p["state"] is None and p["phys_state"] in ("Polling", "Disabled", "Sleep"):
                p["state"] = "Down"     # no physical link means the logical port is Down
            st, ph = p["state"], p["phys_state"]
            if st is None or st in ("Active", "ActiveDefer", "Nop"):
                continue
            ln, line = ev.get("state") or ev.get("phys_state") or (0, "")
            ref = ib_ref(p["device"], p["port"])
            phys_txt = (" (physical state %s)" % ph) if ph else ""
            if ph in ("Polling", "Disabled", "Sleep"):
                side = (" %s means no link partner is seen: cable, transceiver or switch-port side "
                        "(unplugged cable, dead optic, switch port disabled/down)." % ph)
            elif ph == "LinkUp" and st in ("Init", "Armed"):
                side = (" The physical link is up but the subnet manager has not activated the port "
                        "(SM down/unreachable, or port not yet configured).")
            elif ph in ("PortConfigurationTraining", "LinkErrorRecovery"):
                side = " The link is training/recovering: a marginal cable or transceiver."
            else:
                side = ""
            if is_ib(p):
                if unused_sibling(p):
                    f.append(make_finding(
                        "ib_network", "info", "ib_port_unused",
                        "%s is %s%s: it is a further port of the same card as %s (same system image "
                        "GUID) and that port position is down on every card, so probably uncabled"
                        % (p["device"], st, phys_txt, ", ".join(
                            d for d in card_pos[p["device"]][1] if d != p["device"])),
                        "None if the port is not meant to be cabled; if it is a compute rail, check "
                        "its cable and switch port.",
                        evidence=line, source=h.src(ln), ib=ref))
                    continue
                if p["port"] >= 2 and p["port"] not in active_port_nums and \
                        any(q["device"] == p["device"] and q["state"] == "Active" for q in ports):
                    f.append(make_finding(
                        "ib_network", "info", "ib_port_unused",
                        "%s port %d is %s%s like port %d on every HCA: probably an uncabled second port"
                        % (p["device"], p["port"], st, phys_txt, p["port"]),
                        "None if the port is not meant to be cabled.",
                        evidence=line, source=h.src(ln), ib=ref))
                    continue
                f.append(make_finding(
                    "ib_network", "critical", "ib_port_down" if st == "Down" else "ib_port_not_active",
                    "InfiniBand port %s/%d is %s%s, not Active.%s"
                    % (p["device"], p["port"], st, phys_txt, side),
                    "Drain the node; check the cable/transceiver and the switch port, then restart the "
                    "link (ibportstate/openibd) and confirm State: Active, Physical state: LinkUp.",
                    evidence=line, source=h.src(ln), ib=ref, rung="ib_restart"))
                continue
            # Ethernet link layer (RoCE or front-end NIC)
            cls, rate_class, n_active = eth_class.get(p["ca_type"], ("none", None, 0))
            if data_path(p) and n_active >= 2:
                f.append(make_finding(
                    "ib_network", "critical", "roce_port_down",
                    "RoCE data-path port %s/%d (%s) is %s%s while %d other %s port(s) at %s Gb/s are "
                    "Active.%s" % (p["device"], p["port"], p["ca_type"] or "same type", st, phys_txt,
                                   n_active, p["ca_type"] or "same-type", _fmt_rate(rate_class), side),
                    "Drain the node; check the NIC cable/transceiver and the switch port, then bring "
                    "the link up and confirm it is Active.",
                    evidence=line, source=h.src(ln), ib=ref, rung="ib_restart"))
            elif n_active > 0:
                if ib_fabric_rate is not None and (rate_class or 0) < ib_fabric_rate:
                    why = "at %s Gb/s it is not on the %s Gb/s InfiniBand data path (front-end NIC?)" % (
                        _fmt_rate(rate_class), _fmt_rate(ib_fabric_rate))
                else:
                    why = "too few same-type ports are up to tell a data-path NIC from an uncabled port"
                f.append(make_finding(
                    "unknown", "warning", "eth_port_down",
                    "Ethernet port %s/%d (%s) is %s%s while %d same-type port(s) are Active; %s"
                    % (p["device"], p["port"], p["ca_type"] or "unknown type", st, phys_txt, n_active,
                       why),
                    "Check whether this port is meant to be cabled; it does not carry NCCL traffic "
                    "when NCCL uses the InfiniBand HCAs.",
                    evidence=line, source=h.src(ln), ib=ref))
            else:
                f.append(make_finding(
                    "ib_network", "info", "eth_port_down",
                    "Ethernet port %s/%d (%s) is %s%s; no port of the same type is Active (unused NIC?)"
                    % (p["device"], p["port"], p["ca_type"] or "unknown type", st, phys_txt),
                    "None if the port is not meant to be cabled.",
                    evidence=line, source=h.src(ln), ib=ref))

        # degraded rate: against expected_rate, else the most common rate of same-type ports
        groups = {}
        for p in ports:
            if p["state"] == "Active" and p["rate_gbps"] is not None and data_path(p):
                groups.setdefault((is_ib(p), p["ca_type"]), []).append(p)
        for (_ib, ct), grp in groups.items():
            ref_rate = None
            why = None
            if expected_rate:
                try:
                    ref_rate = float(expected_rate)
                    why = "the expected %s Gb/s" % _fmt_rate(ref_rate)
                except (TypeError, ValueError):
                    ref_rate = None
            if ref_rate is None and len(grp) >= 2:
                ref_rate = _mode_rate([p["rate_gbps"] for p in grp])
                why = "the %s Gb/s of the host's other %s ports" % (
                    _fmt_rate(ref_rate), ct or ("InfiniBand" if _ib else "same-type"))
            if ref_rate is None:
                continue
            for p in grp:
                if p["rate_gbps"] < ref_rate:
                    ev = h.ev.get((p["device"], p["port"]), {})
                    ln, line = ev.get("rate") or ev.get("state") or (0, "")
                    f.append(make_finding(
                        "ib_network", "warning", "ib_link_degraded",
                        "degraded link: %s/%d runs at %s Gb/s, below %s (lanes or speed fell back: "
                        "cable, transceiver or switch port)" % (
                            p["device"], p["port"], _fmt_rate(p["rate_gbps"]), why),
                        "Reseat/replace the cable or transceiver and reset the link; check the switch "
                        "port's configured speed.",
                        evidence=line, source=h.src(ln), ib=ib_ref(p["device"], p["port"]),
                        rung="ib_restart"))

    # devices the tool itself said are gone (ibstat's ibpanic)
    reported_missing = set()
    for dev, ln, line in h.missing:
        reported_missing.add(dev)
        f.append(make_finding(
            "ib_network", "critical", "ib_device_missing",
            "HCA %s disappeared: the tool could not open it (device removed, reset, or driver "
            "reload)" % dev,
            "Drain the node; check dmesg for mlx5_core errors/PCIe AER on that HCA and the firmware; "
            "reload the driver or reboot, RMA the HCA if it does not come back.",
            evidence=line, source=h.src(ln), ib=ib_ref(dev, None), rung="reboot"))
    if isinstance(expected_devices, int) and not isinstance(expected_devices, bool):
        if expected_devices > len(h.devices) and (h.devices or h.no_devices):
            ln, line = h.no_devices or (0, "")
            f.append(make_finding(
                "ib_network", "critical", "ib_device_missing",
                "%d HCA(s) found in %s, %d expected (found: %s)"
                % (len(h.devices), h.source, expected_devices, ", ".join(h.devices) or "none"),
                "Drain the node; check lspci for the missing HCA(s), dmesg for mlx5_core/PCIe "
                "errors and the rdma driver; reboot or RMA if they do not come back.",
                evidence=line, source=h.src(ln), rung="reboot"))
    elif expected_devices:
        exp = expected_devices
        if isinstance(exp, str):
            exp = [x for x in re.split(r"[\s,]+", exp) if x]
        for dev in exp:
            dev = str(dev)
            if dev in h.dev_info or dev in reported_missing:
                continue
            if h.no_devices:
                ln, line = h.no_devices
            else:
                ln, line = 0, ""
            f.append(make_finding(
                "ib_network", "critical", "ib_device_missing",
                "expected HCA %s is missing from %s (found: %s)"
                % (dev, h.source, ", ".join(h.devices) or "none"),
                "Drain the node; check lspci for the HCA, dmesg for mlx5_core/PCIe errors, and the "
                "driver (openibd/rdma); reboot or RMA if it does not come back.",
                evidence=line, source=h.src(ln), ib=ib_ref(dev, None), rung="reboot"))
    elif h.no_devices and not h.devices:
        ln, line = h.no_devices
        f.append(make_finding(
            "ib_network", "warning", "ib_no_devices",
            "no RDMA devices were found on this host",
            "If this node should have InfiniBand/RoCE HCAs, check lspci, the mlx5_core/mlx5_ib "
            "drivers and the rdma service.",
            evidence=line, source=h.src(ln)))

    for ln, line in h.tool_errors:
        f.append(make_finding(
            "unknown", "info", "ib_tool_error",
            "the InfiniBand tool reported an error: %s" % line.strip()[:200],
            "Run the tool as root and check that ib_umad/rdma modules are loaded.",
            evidence=line, source=h.src(ln)))

    _counter_findings(h, ports, thresholds, data_path)
    return f


def _counter_findings(h, ports, thresholds, data_path):
    rules = _merged_rules(thresholds)
    for p in ports:
        for name, value in p["counters"].items():
            rule = rules.get(name)
            if rule is None or value is None:
                continue
            sev = None
            for level in ("critical", "warning", "info"):
                t = rule.get(level)
                if t is not None and value >= t:
                    sev = level
                    break
            if sev is None:
                continue
            # a front-end Ethernet port's counters never decide an IB verdict
            if sev != "info" and p["link_layer"] == "Ethernet" and not data_path(p):
                sev = "info"
            what = rule.get("critical_what") if sev == "critical" and rule.get("critical_what") \
                else rule.get("what", name + " is %d")
            try:
                what = what % value
            except (TypeError, ValueError):
                what = "%s is %s" % (name, value)
            rung = "none"
            if sev == "critical":
                rung = rule.get("rung_critical", "none")
            elif sev == "warning":
                rung = rule.get("rung_warning", "none")
            ln, line = h.cev.get((p["device"], p["port"], name), (0, ""))
            try:
                h.findings.append(make_finding(
                    "ib_network", sev, rule.get("kind") or ("ib_counter_" + name),
                    "%s/%s: %s" % (p["device"], p["port"], what),
                    rule.get("action") or "Check the link and the peer port.",
                    evidence=line, source=h.src(ln), ib=ib_ref(p["device"], p["port"]),
                    rung=rung))
            except ValueError:
                # a bad override (unknown rung) must not break the parse
                h.findings.append(make_finding(
                    "ib_network", sev, rule.get("kind") or ("ib_counter_" + name),
                    "%s/%s: %s" % (p["device"], p["port"], what),
                    str(rule.get("action") or "Check the link and the peer port."),
                    evidence=line, source=h.src(ln), ib=ib_ref(p["device"], p["port"])))


def _finish(h, text, expected_rate, expected_devices, thresholds, check_ports=True):
    if not h.order and not h.devices and not h.missing and not h.no_devices and not h.tool_errors:
        return _unparseable(h.fmt, h.source, text)
    _analyze(h, expected_rate=expected_rate, expected_devices=expected_devices,
             thresholds=thresholds, check_ports=check_ports)
    return h.facts(), h.findings


# ----------------------------------------------------------------------------- sysfs

_SYSFS_RE = re.compile(
    r"^(?P<path>.*?(?:^|/)(?P<dev>[^/:\s]+)/ports/(?P<port>\d+)/"
    r"(?:(?P<grp>counters|counters_ext|hw_counters)/)?(?P<file>[^/:\s]+)):(?P<val>.*)$")
_SYSFS_DEV_RE = re.compile(
    r"^(?P<path>.*?(?:^|/)(?P<dev>[^/:\s]+)/(?P<file>hca_type|board_id|fw_ver|node_type|node_guid|"
    r"node_desc|sys_image_guid|hw_rev)):(?P<val>.*)$")


@_guard("ib-sysfs")
def parse_ib_sysfs(text, source="ib-sysfs.txt", expected_rate=None, expected_devices=None,
                   thresholds=None):
    """``grep -H .`` over /sys/class/infiniband/*/ports/*/{state,phys_state,rate,link_layer}
    and the counters/ and hw_counters/ files: one ``PATH:VALUE`` line per file."""
    h = _Host("ib-sysfs", source)
    for n, line in iter_lines(text):
        m = _SYSFS_RE.match(line)
        if not m:
            m2 = _SYSFS_DEV_RE.match(line)
            if m2:
                info = h.device(m2.group("dev"))
                v = m2.group("val").strip()
                if m2.group("file") == "hca_type":
                    info["ca_type"] = v or None
                elif m2.group("file") == "sys_image_guid":
                    info["sys_guid"] = v or None
            continue
        dev, port = m.group("dev"), int(m.group("port"))
        fname, val, grp = m.group("file"), m.group("val"), m.group("grp")
        p = h.port(dev, port)
        key = (dev, port)
        if grp:
            cname = normalize_counter_name(fname)
            iv = _to_int(val)
            if iv is not None:
                p["counters"][cname] = iv
                h.cev[(dev, port, cname)] = (n, line)
            continue
        if fname == "state":
            p["state"] = normalize_state(val)
            h.ev[key]["state"] = (n, line)
        elif fname == "phys_state":
            p["phys_state"] = normalize_phys_state(val)
            h.ev[key]["phys_state"] = (n, line)
        elif fname == "rate":
            p["rate_gbps"] = parse_rate(val)
            h.ev[key]["rate"] = (n, line)
        elif fname == "link_layer":
            p["link_layer"] = _norm_link_layer(val)
    if not text.strip() and expected_devices:
        # the module prints nothing when /sys/class/infiniband is absent: no HCA at all
        h.no_devices = (0, "")
    return _finish(h, text, expected_rate, expected_devices, thresholds)


# ----------------------------------------------------------------------------- ibstat / ibstatus

_CA_RE = re.compile(r"^\s*CA\s+'(?P<dev>[^']+)'\s*$")
_PORT_RE = re.compile(r"^\s*Port\s+(?P<port>\d+)\s*:\s*$")
_KV_RE = re.compile(r"^\s*(?P<key>[A-Za-z][A-Za-z _/\-]*?)\s*:\s*(?P<val>.*?)\s*$")
# "stat of IB device 'mlx5_8' failed" / "'mlx5_9' IB device can't be found"
_IBPANIC_DEV_RE = re.compile(r"IB device\s+'(?P<dev>[^']+)'|'(?P<dev2>[^']+)'\s+IB device")
_IBSTATUS_RE = re.compile(r"^\s*Infiniband device\s+'(?P<dev>[^']+)'\s+port\s+(?P<port>\d+)\s+status\s*:",
                          re.I)


@_guard("ibstat")
def parse_ibstat(text, source="ibstat.txt", expected_rate=None, expected_devices=None,
                 thresholds=None):
    """``ibstat`` (also ``ibstat <dev>``) output; ``ibstatus`` output is accepted too."""
    h = _Host("ibstat", source)
    dev = None
    port = None
    for n, line in iter_lines(text):
        if not line.strip():
            continue
        m = _CA_RE.match(line)
        if m:
            dev = m.group("dev").strip()
            port = None
            h.device(dev)
            continue
        m = _IBSTATUS_RE.match(line)
        if m:
            h.fmt = "ibstatus"
            dev = m.group("dev").strip()
            port = h.port(dev, int(m.group("port")))
            continue
        if "ibpanic" in line or "ibwarn" in line or "iberror" in line:
            md = _IBPANIC_DEV_RE.search(line)
            if md and ("ibpanic" in line or "failed" in line or "can't be found" in line):
                h.missing.append((md.group("dev") or md.group("dev2"), n, line))
            elif re.search(r"no (?:IB|RDMA) devices", line, re.I):
                h.no_devices = (n, line)
            else:
                h.tool_errors.append((n, line))
            continue
        if re.search(r"^\s*(?:No IB devices found|Failed to get IB devices list)", line, re.I):
            h.no_devices = (n, line)
            continue
        m = _PORT_RE.match(line)
        if m and dev is not None:
            port = h.port(dev, int(m.group("port")))
            continue
        m = _KV_RE.match(line)
        if not m or dev is None:
            continue
        key = m.group("key").strip().lower()
        val = m.group("val")
        if port is None:
            if key == "ca type":
                h.dev_info[dev]["ca_type"] = val.strip() or None
            elif key == "system image guid":
                h.dev_info[dev]["sys_guid"] = val.strip() or None
            continue
        k = (port["device"], port["port"])
        if key == "state":
            port["state"] = normalize_state(val)
            h.ev[k]["state"] = (n, line)
        elif key in ("physical state", "phys state"):
            port["phys_state"] = normalize_phys_state(val)
            h.ev[k]["phys_state"] = (n, line)
        elif key == "rate":
            port["rate_gbps"] = parse_rate(val)
            h.ev[k]["rate"] = (n, line)
        elif key in ("link layer", "link_layer"):
            port["link_layer"] = _norm_link_layer(val)
    return _finish(h, text, expected_rate, expected_devices, thresholds)


# ----------------------------------------------------------------------------- ibv_devinfo

_HCA_RE = re.compile(r"^\s*hca_id\s*:\s*(?P<dev>\S+)\s*$")
_IBV_PORT_RE = re.compile(r"^\s*port\s*:\s*(?P<port>\d+)\s*$")


def _ibv_speed(val):
    m = re.search(r"(\d+(?:\.\d+)?)\s*Gbps", val or "", re.I)
    return float(m.group(1)) if m else None


@_guard("ibv_devinfo")
def parse_ibv_devinfo(text, source="ibv_devinfo.txt", expected_rate=None, expected_devices=None,
                      thresholds=None):
    """``ibv_devinfo`` / ``ibv_devinfo -v`` output. The rate comes from active_width x
    active_speed (``-v`` only); without ``-v`` it is None."""
    h = _Host("ibv_devinfo", source)
    dev = None
    port = None
    pend = {}     # (dev, port) -> {"width": int, "speed": float}
    vendor = {}
    for n, line in iter_lines(text):
        if not line.strip():
            continue
        m = _HCA_RE.match(line)
        if m:
            dev = m.group("dev")
            port = None
            h.device(dev)
            continue
        if re.search(r"^\s*(?:No IB devices found|Failed to get IB devices list)", line, re.I):
            h.no_devices = (n, line)
            continue
        if dev is None:
            if re.search(r"ibv_devinfo|Failed|error", line, re.I):
                h.tool_errors.append((n, line))
            continue
        m = _IBV_PORT_RE.match(line)
        if m:
            port = h.port(dev, int(m.group("port")))
            continue
        m = _KV_RE.match(line)
        if not m:
            continue
        key = m.group("key").strip().lower()
        val = m.group("val")
        if port is None:
            if key == "vendor_part_id":
                vendor.setdefault(dev, {})["part"] = val.strip()
            elif key == "vendor_id":
                vendor.setdefault(dev, {})["vendor"] = val.strip().lower()
            elif key == "board_id":
                vendor.setdefault(dev, {})["board"] = val.strip()
            elif key == "sys_image_guid":
                h.dev_info[dev]["sys_guid"] = val.strip() or None
            continue
        k = (port["device"], port["port"])
        if key == "state":
            port["state"] = normalize_state(val)
            h.ev[k]["state"] = (n, line)
        elif key == "phys_state":
            port["phys_state"] = normalize_phys_state(val)
            h.ev[k]["phys_state"] = (n, line)
        elif key == "link_layer":
            port["link_layer"] = _norm_link_layer(val)
        elif key == "active_width":
            mw = _WIDTH_RE.search(val)
            if mw:
                pend.setdefault(k, {})["width"] = int(mw.group(1))
        elif key == "active_speed":
            pend.setdefault(k, {})["speed"] = _ibv_speed(val)
            h.ev[k]["rate"] = (n, line)
    for k, d in pend.items():
        if d.get("width") and d.get("speed") and k in h.ports:
            h.ports[k]["rate_gbps"] = float(d["width"]) * d["speed"]
    for dv, v in vendor.items():
        part = v.get("part")
        if part and dv in h.dev_info:
            # same spelling as ibstat's "CA type: MT4129" for Mellanox/NVIDIA parts
            if v.get("vendor") in ("0x02c9", "0x2c9", "0x15b3") and part.isdigit():
                h.dev_info[dv]["ca_type"] = "MT" + part
            else:
                h.dev_info[dv]["ca_type"] = part
    return _finish(h, text, expected_rate, expected_devices, thresholds)


# ----------------------------------------------------------------------------- perfquery

_PQ_HDR_RE = re.compile(
    r"^\s*#\s*Port\s+(?P<what>[^:]*?)\s*:\s*(?:Lid|lid)\s+(?P<lid>\d+)\s+port\s+(?P<port>\d+)", re.I)
_PQ_KV_RE = re.compile(r"^\s*(?P<name>[A-Za-z][A-Za-z0-9_\[\]]*)\s*:[.\s]*(?P<val>\S+)\s*$")


@_guard("perfquery")
def parse_perfquery(text, source="perfquery.txt", thresholds=None, device=None,
                    expected_rate=None, expected_devices=None):
    """``perfquery`` / ``perfquery -x`` (and ``-a``, ``-E``, ``-D``) output; several port
    blocks may follow each other. perfquery names a port by LID, so ``device`` is
    ``"lid:<n>"`` unless the caller knows the HCA (``device="mlx5_0"`` for ``perfquery -C``)."""
    h = _Host("perfquery", source)
    cur = None
    for n, line in iter_lines(text):
        if not line.strip():
            continue
        m = _PQ_HDR_RE.match(line)
        if m:
            dv = device or ("lid:%s" % m.group("lid"))
            cur = h.port(dv, int(m.group("port")))
            continue
        if re.search(r"ibwarn|iberror|ibpanic|can't open|failed", line, re.I):
            h.tool_errors.append((n, line))
            continue
        if cur is None:
            continue
        m = _PQ_KV_RE.match(line)
        if not m:
            continue
        raw = m.group("name")
        if raw.lower() in _NOT_COUNTERS:
            continue
        iv = _to_int(m.group("val"))
        if iv is None:
            continue
        cname = normalize_counter_name(raw)
        k = (cur["device"], cur["port"])
        cur["counters"][cname] = iv
        h.cev[(k[0], k[1], cname)] = (n, line)
    return _finish(h, text, None, None, thresholds, check_ports=False)


# ----------------------------------------------------------------------------- iblinkinfo

_ILI_NODE_RE = re.compile(r"^\s*(?P<type>CA|Switch|Router)\s*:\s*(?P<rest>.*?):?\s*$")
_ILI_LINK_RE = re.compile(
    r"^\s*(?:(?P<guid>0x[0-9a-fA-F]+)\s+)?(?:\"(?P<name>[^\"]*)\"\s+)?(?P<lid>\d+)\s+(?P<port>\d+)"
    r"\[[^\]]*\]\s*==\(\s*(?P<mid>.*?)\)==>\s*(?P<peer>.*)$")
_ILI_STATE_RE = re.compile(r"(?P<state>Active|Down|Init|Initialize|Armed|ActDefer|ActiveDefer)\s*/\s*"
                           r"(?P<phys>[A-Za-z]+)")


@_guard("iblinkinfo")
def parse_iblinkinfo(text, source="iblinkinfo.txt", thresholds=None, expected_rate=None,
                     expected_devices=None, host=None):
    """``iblinkinfo`` / ``iblinkinfo -l`` (fabric view). Switch ports that are Down are normal
    (unused ports) and only listed; a link running below what both ends support ("Could be
    ...") is a degraded link; a port stuck in Init/Armed points at the subnet manager; a CA
    port Down is a node off the fabric. The fabric view covers other nodes too, so these are
    warnings only for links that touch ``host`` (matched in the node descriptions), info
    otherwise. Ports are keyed by node description; ``ca_type`` holds the node type
    (CA/Switch/Router) as iblinkinfo prints it."""
    h = _Host("iblinkinfo", source)
    node = None
    ntype = None
    for n, line in iter_lines(text):
        if not line.strip():
            continue
        m = _ILI_NODE_RE.match(line)
        if m and "==(" not in line:
            ntype = m.group("type")
            rest = m.group("rest").strip()
            node = rest
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
        mid = m.group("mid")
        ms = _ILI_STATE_RE.search(mid)
        if ms:
            p["state"] = normalize_state(ms.group("state").replace("ActDefer", "ActiveDefer"))
            p["phys_state"] = normalize_phys_state(ms.group("phys"))
        p["rate_gbps"] = None
        mw = _WIDTH_RE.search(mid)
        sp = re.search(r"(\d+(?:\.\d+)?)\s*Gbps", mid)
        if mw and sp:
            p["rate_gbps"] = round(int(mw.group(1)) * float(sp.group(1)), 3)
        p["link_layer"] = "InfiniBand"
        key = (dev, p["port"])
        h.ev[key]["state"] = (n, line)
        h.ev[key]["rate"] = (n, line)
        ref = ib_ref(dev, p["port"])
        peer = m.group("peer")
        mine = bool(host) and (str(host).lower() in dev.lower() or str(host).lower() in peer.lower())
        sev = "warning" if mine else "info"
        could = re.search(r"\(\s*([^()]*Could be[^()]*?)\s*\)", peer, re.I)
        if could and p["state"] == "Active":
            h.findings.append(make_finding(
                "ib_network", sev, "ib_link_degraded",
                "degraded link: %s port %d runs at %s; iblinkinfo says: %s"
                % (dev, p["port"], re.sub(r"\s+", " ", mid.split("Active")[0]).strip() or "?",
                   re.sub(r"\s+", " ", could.group(1)).strip()),
                "Reseat/replace the cable or transceiver and reset the link.",
                evidence=line, source=h.src(n), ib=ref, rung="ib_restart"))
        if p["state"] in ("Init", "Armed") and p["phys_state"] == "LinkUp":
            h.findings.append(make_finding(
                "ib_network", sev, "ib_port_not_active",
                "%s port %d is %s with the physical link up: the subnet manager has not activated it"
                % (dev, p["port"], p["state"]),
                "Check that the subnet manager is running and sweeping.",
                evidence=line, source=h.src(n), ib=ref, rung="ib_restart"))
        elif (ntype == "CA" or m.group("name") is not None and "HCA" in dev or
              re.search(r"\bmlx\d_\d+\b", dev)) and p["state"] == "Down":
            h.findings.append(make_finding(
                "ib_network", sev, "ib_port_down",
                "CA port %s/%d is Down (%s) in the fabric view" % (dev, p["port"], p["phys_state"]),
                "Check whether that node/HCA is up and cabled.",
                evidence=line, source=h.src(n), ib=ref))
    if not h.order and not h.tool_errors:
        return _unparseable("iblinkinfo", source, text)
    _counter_findings(h, [], thresholds, lambda p: True)
    for ln, line in h.tool_errors:
        h.findings.append(make_finding(
            "unknown", "info", "ib_tool_error",
            "iblinkinfo reported an error: %s" % line.strip()[:200],
            "Run it as root on a node with an active IB port.", evidence=line, source=h.src(ln)))
    return h.facts(), h.findings


# ----------------------------------------------------------------------------- dispatcher

_SNIFF = (
    ("ib-sysfs", re.compile(r"/ports/\d+/(?:state|phys_state|rate|link_layer|counters/\w+|"
                            r"hw_counters/\w+):", re.M)),
    ("ibstat", re.compile(r"^\s*CA\s+'[^']+'|^\s*Infiniband device\s+'", re.M | re.I)),
    ("ibv_devinfo", re.compile(r"^\s*hca_id\s*:", re.M)),
    ("perfquery", re.compile(r"^\s*#\s*Port\s+[^:]*:\s*Lid\s+\d+", re.M | re.I)),
    ("iblinkinfo", re.compile(r"==\(.*\)==>")),
)


def detect_ib_format(text):
    """Which IB tool produced ``text``; None when none fits."""
    if not isinstance(text, str):
        return None
    head = text[:65536]
    for fmt, rx in _SNIFF:
        if rx.search(head):
            return fmt
    return None


def parse_ib(text, source="ib.txt", **kwargs):
    """Sniff the format and dispatch; unknown text -> info 'unparseable'."""
    fmt = detect_ib_format(text)
    fn = {"ib-sysfs": parse_ib_sysfs, "ibstat": parse_ibstat, "ibv_devinfo": parse_ibv_devinfo,
          "perfquery": parse_perfquery, "iblinkinfo": parse_iblinkinfo}.get(fmt)
    if fn is None:
        return _unparseable("ib", source, text)
    if fmt in ("perfquery", "iblinkinfo"):
        kwargs = {"thresholds": kwargs.get("thresholds")}
    return fn(text, source=source, **kwargs)
