# SPDX-License-Identifier: Apache-2.0
"""Counter rules: one table, data only, serving every format (counter names are normalised
to the sysfs spelling first).

Each rule gives "at or above" thresholds per severity (None = off) and names the finding
kind the counter raises; the rung and the action come from that kind's row in
taxonomy/kinds_ib.py, never from here. ``thresholds`` overrides per call:
{"symbol_error": {"warning": 5}} merges into the rule, {"symbol_error": 5} sets the
warning threshold, {"symbol_error": None} disables it; a counter with no rule of its own
gets one raising ``ib_counter_threshold``.
"""

import re

from ..findings import finding, ib_ref
from ..taxonomy import KINDS
from .names import normalize_counter_name

COUNTER_RULES = {
    # physical layer: kinds whose steps check the cable (see kinds_ib.py)
    "link_downed": {
        "info": None, "warning": 1, "critical": 5, "kind": "ib_link_downed",
        "what": "the link went down and retrained %d time(s) since the counters were last cleared",
        "critical_what": "port flapping: the link went down %d times since the counters were last cleared",
    },
    "symbol_error": {
        "info": None, "warning": 10, "critical": 1000, "kind": "ib_symbol_errors",
        "what": "%d symbol errors (physical-layer bit errors) on the link",
    },
    "link_error_recovery": {
        "info": None, "warning": 1, "critical": 10, "kind": "ib_link_error_recovery",
        "what": "the link ran the error-recovery procedure %d time(s) (marginal link)",
    },
    "port_rcv_errors": {
        "info": None, "warning": 10, "critical": 1000, "kind": "ib_rcv_errors",
        "what": "%d malformed packets received (bad CRC/length)",
    },
    "local_link_integrity_errors": {
        "info": None, "warning": 1, "critical": 10, "kind": "ib_link_integrity_errors",
        "what": "%d local link integrity errors (physical errors beyond the link threshold)",
    },
    # link layer and fabric
    "port_xmit_discards": {
        "info": None, "warning": 100, "critical": 100000, "kind": "ib_xmit_discards",
        "what": "%d outbound packets discarded (port down or congestion/head-of-line timeout)",
    },
    "excessive_buffer_overrun_errors": {
        "info": None, "warning": 1, "critical": 100, "kind": "ib_buffer_overrun_errors",
        "what": "%d excessive buffer overrun errors (flow-control / credit problem)",
    },
    "port_rcv_remote_physical_errors": {
        "info": None, "warning": 10, "critical": 1000, "kind": "ib_remote_physical_errors",
        "what": "%d packets arrived marked bad by an upstream link (fault elsewhere in the fabric)",
    },
    "VL15_dropped": {
        "info": 1, "warning": None, "critical": None, "kind": "ib_vl15_dropped",
        "what": "%d subnet-management (VL15) packets dropped",
    },
    "port_rcv_switch_relay_errors": {
        "info": 1, "warning": None, "critical": None, "kind": "ib_switch_relay_errors",
        "what": "%d packets the switch could not relay (routing; often multicast, usually benign)",
    },
    "port_xmit_constraint_errors": {
        "info": 1, "warning": None, "critical": None, "kind": "ib_constraint_errors",
        "what": "%d packets not sent due to partition/constraint checks",
    },
    "port_rcv_constraint_errors": {
        "info": 1, "warning": None, "critical": None, "kind": "ib_constraint_errors",
        "what": "%d packets dropped by partition/constraint checks",
    },
    "port_xmit_wait": {
        # congestion, not an error: normally non-zero on busy links
        "info": 1000000000, "warning": 10 ** 13, "critical": None, "kind": "ib_congestion",
        "what": "PortXmitWait is %d ticks: the port often waited for credits (congestion)",
    },
    # mlx5 hw_counters (RDMA transport): what NCCL's "transport retry counter exceeded" looks like
    "req_transport_retries_exceeded": {
        "info": None, "warning": 1, "critical": None, "kind": "ib_transport_retries_exceeded",
        "what": "%d RDMA requests exhausted their transport retries (NCCL 'retry counter exceeded')",
    },
    "local_ack_timeout_err": {
        "info": 1, "warning": 1000, "critical": None, "kind": "ib_ack_timeouts",
        "what": "%d RDMA ACK timeouts (peer slow, packets lost or link flapping)",
    },
    "rnr_nak_retry_err": {
        "info": 1, "warning": None, "critical": None, "kind": "ib_rnr_retry_errors",
        "what": "%d receiver-not-ready retry failures",
    },
    "packet_seq_err": {
        "info": 1, "warning": None, "critical": None, "kind": "ib_packet_seq_errors",
        "what": "%d packet sequence errors (packets lost in the fabric)",
    },
    "out_of_buffer": {
        "info": 1, "warning": None, "critical": None, "kind": "ib_out_of_buffer",
        "what": "%d packets dropped for lack of receive WQEs",
    },
}

# the kind a counter raises when the caller adds a rule for a counter we have none for
GENERIC_KIND = "ib_counter_threshold"
# what an override may change; anything else (an old "rung_warning", a typo) is ignored
_OVERRIDABLE = ("info", "warning", "critical", "what", "critical_what", "kind")
_LEVELS = ("critical", "warning", "info")
_SAYS = {"critical": "critical", "warning": "a warning", "info": "worth noting"}  # '10 or more is a warning'


def _ib_kind(name):
    """A kind an override may name: declared, and an IB counter kind."""
    return isinstance(name, str) and name in KINDS and (
        name == GENERIC_KIND or any(r["kind"] == name for r in COUNTER_RULES.values()))


def _number(t):
    if t is None or (isinstance(t, (int, float)) and not isinstance(t, bool)):
        return t
    try:
        return float(str(t).strip())
    except ValueError:
        return None


def merged_rules(thresholds):
    """COUNTER_RULES with the caller's overrides applied (see the module docstring)."""
    rules = dict((k, dict(v)) for k, v in COUNTER_RULES.items())
    if not isinstance(thresholds, dict):
        return rules
    for name, val in thresholds.items():
        key = normalize_counter_name(str(name))
        if val is None or val is False:
            rules.pop(key, None)
            continue
        base = rules.get(key) or {"info": None, "warning": None, "critical": None,
                                  "kind": GENERIC_KIND, "what": "counter " + key + " is %d"}
        if isinstance(val, dict):
            base.update((k, v) for k, v in val.items() if k in _OVERRIDABLE)
        elif isinstance(val, (int, float)) and not isinstance(val, bool):
            base["warning"] = val
        elif isinstance(val, str) and re.match(r"^\s*\d+(?:\.\d+)?\s*$", val):
            base["warning"] = float(val)
        if not _ib_kind(base.get("kind")):
            base["kind"] = GENERIC_KIND
        for level in _LEVELS:
            base[level] = _number(base.get(level))
        rules[key] = base
    return rules


def _level(rule, value):
    for level in _LEVELS:
        t = rule.get(level)
        if t is not None and value >= t:
            return level
    return None


def _what(rule, name, value, severity):
    what = rule.get("critical_what") if severity == "critical" and rule.get("critical_what") \
        else rule.get("what", name + " is %d")
    try:
        return what % value
    except (TypeError, ValueError):
        return "%s is %s" % (name, value)


def counter_findings(h, ports, thresholds, data_path):
    """Append a finding to ``h.findings`` for each counter at or above a threshold.
    ``data_path(port)``: whether the port carries the job's traffic; a front-end Ethernet
    port's counters never decide an IB verdict (info at most)."""
    rules = merged_rules(thresholds)
    for p in ports:
        for name, value in p["counters"].items():
            rule = rules.get(name)
            if rule is None or value is None:
                continue
            level = _level(rule, value)
            if level is None:
                continue
            severity, limit = level, _whole(rule[level])
            why = "%s or more is %s" % (limit, _SAYS[level])
            if severity != "info" and p["link_layer"] == "Ethernet" and not data_path(p):
                severity = "info"
                why += ", but not on a front-end port"
            ln, line = h.cev.get((p["device"], p["port"], name), (0, ""))
            h.findings.append(finding(
                rule["kind"], "%s/%s: %s; %s" % (p["device"], p["port"], _what(rule, name, value, level), why),
                evidence=line, source=h.src(ln), ib=ib_ref(p["device"], p["port"]), severity=severity,
                counters={name: _whole(value)}, threshold=limit))


def _whole(n):
    """10.0 -> 10 (a threshold read from text); other numbers as they are."""
    return int(n) if isinstance(n, float) and n.is_integer() else n
