# SPDX-License-Identifier: Apache-2.0
"""``ibstat`` (also ``ibstat <dev>``) and ``ibstatus`` output."""

import re

from ..findings import iter_lines
from .model import Host, guarded
from .names import KV_RE, NO_DEVICES_RE, norm_link_layer, normalize_phys_state, normalize_state, parse_rate
from .ports import finish

# ibstat quotes a name with "'"; a manual, a forum or a word processor turns it into a typographic one
Q = "'\u2018\u2019`"
_CA_RE = re.compile(r"^\s*CA\s+[%s](?P<dev>[^%s]+)[%s]\s*$" % (Q, Q, Q))
_PORT_RE = re.compile(r"^\s*Port\s+(?P<port>\d+)\s*:\s*$")
# "stat of IB device 'mlx5_8' failed" / "'mlx5_9' IB device can't be found"
_IBPANIC_DEV_RE = re.compile(r"IB device\s+'(?P<dev>[^']+)'|'(?P<dev2>[^']+)'\s+IB device")
# a pasted excerpt that starts at a port block ('Port 1:' then its 'State:' lines): the CA's
# name was cut, the port's state is still a reading
UNNAMED_CA = "(CA not shown)"
_IBSTATUS_RE = re.compile(r"^\s*Infiniband device\s+[%s](?P<dev>[^%s]+)[%s]\s+port\s+(?P<port>\d+)\s+status\s*:"
                          % (Q, Q, Q), re.I)


def parse_ibstat(text, source="ibstat.txt", expected_rate=None, expected_devices=None,
                 thresholds=None):
    """``ibstat`` (also ``ibstat <dev>``) output; ``ibstatus`` output is accepted too.
    -> (facts, findings); never raises."""
    return guarded("ibstat", _parse, text, source, expected_rate=expected_rate,
                   expected_devices=expected_devices, thresholds=thresholds)


def _tool_message(h, n, line):
    """An ibpanic/ibwarn/iberror line: a device that is gone, no devices, or another error."""
    md = _IBPANIC_DEV_RE.search(line)
    if md and ("ibpanic" in line or "failed" in line or "can't be found" in line):
        h.missing.append((md.group("dev") or md.group("dev2"), n, line))
    elif re.search(r"no (?:IB|RDMA) devices", line, re.I):
        h.no_devices = (n, line)
    else:
        h.tool_errors.append((n, line))


def _port_field(h, port, key, val, n, line):
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
        port["link_layer"] = norm_link_layer(val)


def _device_field(h, dev, key, val):
    if key == "ca type":
        h.dev_info[dev]["ca_type"] = val.strip() or None
    elif key == "system image guid":
        h.dev_info[dev]["sys_guid"] = val.strip() or None


def _parse(text, source, expected_rate=None, expected_devices=None, thresholds=None):
    h = Host("ibstat", source)
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
            _tool_message(h, n, line)
            continue
        if NO_DEVICES_RE.search(line):
            h.no_devices = (n, line)
            continue
        m = _PORT_RE.match(line)
        if m:
            if dev is None:
                dev = UNNAMED_CA
                h.device(dev)
            port = h.port(dev, int(m.group("port")))
            continue
        m = KV_RE.match(line)
        if not m or dev is None:
            continue
        key = m.group("key").strip().lower()
        if port is None:
            _device_field(h, dev, key, m.group("val"))
        else:
            _port_field(h, port, key, m.group("val"), n, line)
    return finish(h, text, expected_rate, expected_devices, thresholds)
