# SPDX-License-Identifier: Apache-2.0
"""One spelling for what every IB tool prints its own way: port states, physical states,
rates, link layers and counter names (sysfs spelling, so one rule table serves all formats)."""

import re

from ..findings import small_int

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
NOT_COUNTERS = {"portselect", "counterselect", "counterselect2", "capmask", "capmask2"}

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
WIDTH_RE = re.compile(r"(?<!\d)(\d+)\s*[xX]\b")  # starts where the digits do: linear
# the key: value lines of ibstat and ibv_devinfo
KV_RE = re.compile(r"^\s*(?P<key>[A-Za-z][A-Za-z _/\-]*?)\s*:\s*(?P<val>.*?)\s*$")
NO_DEVICES_RE = re.compile(r"^\s*(?:No IB devices found|Failed to get IB devices list)", re.I)


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


def gbps(value):
    """'26.5625 Gbps' (ibv_devinfo, iblinkinfo) -> 26.5625; None without a Gbps figure."""
    m = re.search(r"(?<!\d)(\d+(?:\.\d+)?)\s*Gbps", value or "", re.I)
    return float(m.group(1)) if m else None


def norm_link_layer(value):
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


def to_int(value):
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


def natural(name):
    """Sort key: mlx5_2 before mlx5_10."""
    return [(0, small_int(t)) if small_int(t) is not None else (1, t) for t in re.split(r"(\d+)", name or "")]


def fmt_rate(r):
    if r is None:
        return "unknown"
    return ("%g" % r)
