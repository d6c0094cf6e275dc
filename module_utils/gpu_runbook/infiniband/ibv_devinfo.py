# SPDX-License-Identifier: Apache-2.0
"""``ibv_devinfo`` / ``ibv_devinfo -v`` output."""

import re

from ..findings import iter_lines
from .model import Host, guarded
from .names import KV_RE, NO_DEVICES_RE, WIDTH_RE, gbps, norm_link_layer, normalize_phys_state, normalize_state
from .ports import finish

_HCA_RE = re.compile(r"^\s*hca_id\s*:\s*(?P<dev>\S+)\s*$")
_IBV_PORT_RE = re.compile(r"^\s*port\s*:\s*(?P<port>\d+)\s*$")
_MELLANOX_VENDOR_IDS = ("0x02c9", "0x2c9", "0x15b3")


def parse_ibv_devinfo(text, source="ibv_devinfo.txt", expected_rate=None, expected_devices=None,
                      thresholds=None):
    """``ibv_devinfo`` / ``ibv_devinfo -v`` output -> (facts, findings); never raises. The
    rate comes from active_width x active_speed (``-v`` only); without ``-v`` it is None."""
    return guarded("ibv_devinfo", _parse, text, source, expected_rate=expected_rate,
                   expected_devices=expected_devices, thresholds=thresholds)


def _device_field(h, vendor, dev, key, val):
    if key == "vendor_part_id":
        vendor.setdefault(dev, {})["part"] = val.strip()
    elif key == "vendor_id":
        vendor.setdefault(dev, {})["vendor"] = val.strip().lower()
    elif key == "board_id":
        vendor.setdefault(dev, {})["board"] = val.strip()
    elif key == "sys_image_guid":
        h.dev_info[dev]["sys_guid"] = val.strip() or None


def _port_field(h, pend, port, key, val, n, line):
    k = (port["device"], port["port"])
    if key == "state":
        port["state"] = normalize_state(val)
        h.ev[k]["state"] = (n, line)
    elif key == "phys_state":
        port["phys_state"] = normalize_phys_state(val)
        h.ev[k]["phys_state"] = (n, line)
    elif key == "link_layer":
        port["link_layer"] = norm_link_layer(val)
    elif key == "active_width":
        mw = WIDTH_RE.search(val)
        if mw:
            pend.setdefault(k, {})["width"] = int(mw.group(1))
    elif key == "active_speed":
        pend.setdefault(k, {})["speed"] = gbps(val)
        h.ev[k]["rate"] = (n, line)


def _settle(h, pend, vendor):
    """Rates from width x speed; CA type from the vendor part id."""
    for k, d in pend.items():
        if d.get("width") and d.get("speed") and k in h.ports:
            h.ports[k]["rate_gbps"] = float(d["width"]) * d["speed"]
    for dv, v in vendor.items():
        part = v.get("part")
        if part and dv in h.dev_info:
            # same spelling as ibstat's "CA type: MT4129" for Mellanox/NVIDIA parts
            if v.get("vendor") in _MELLANOX_VENDOR_IDS and part.isdigit():
                h.dev_info[dv]["ca_type"] = "MT" + part
            else:
                h.dev_info[dv]["ca_type"] = part


def _parse(text, source, expected_rate=None, expected_devices=None, thresholds=None):
    h = Host("ibv_devinfo", source)
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
        if NO_DEVICES_RE.search(line):
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
        m = KV_RE.match(line)
        if not m:
            continue
        key = m.group("key").strip().lower()
        if port is None:
            _device_field(h, vendor, dev, key, m.group("val"))
        else:
            _port_field(h, pend, port, key, m.group("val"), n, line)
    _settle(h, pend, vendor)
    return finish(h, text, expected_rate, expected_devices, thresholds)
