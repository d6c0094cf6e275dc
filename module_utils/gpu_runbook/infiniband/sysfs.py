# SPDX-License-Identifier: Apache-2.0
"""``grep -H .`` over /sys/class/infiniband/*/ports/*/{state,phys_state,rate,link_layer} and
the counters/ and hw_counters/ files: one ``PATH:VALUE`` line per file."""

import re

from ..findings import iter_lines
from .model import Host, guarded
from .names import norm_link_layer, normalize_counter_name, normalize_phys_state, normalize_state, parse_rate, to_int
from .ports import finish

_SYSFS_RE = re.compile(
    r"^(?P<path>.*?(?:^|/)(?P<dev>[^/:\s]+)/ports/(?P<port>\d+)/"
    r"(?:(?P<grp>counters|counters_ext|hw_counters)/)?(?P<file>[^/:\s]+)):(?P<val>.*)$")
_SYSFS_DEV_RE = re.compile(
    r"^(?P<path>.*?(?:^|/)(?P<dev>[^/:\s]+)/(?P<file>hca_type|board_id|fw_ver|node_type|node_guid|"
    r"node_desc|sys_image_guid|hw_rev)):(?P<val>.*)$")


def parse_ib_sysfs(text, source="ib-sysfs.txt", expected_rate=None, expected_devices=None,
                   thresholds=None):
    """``grep -H .`` over the IB sysfs files -> (facts, findings); never raises."""
    return guarded("ib-sysfs", _parse, text, source, expected_rate=expected_rate,
                   expected_devices=expected_devices, thresholds=thresholds)


def _device_line(h, m):
    info = h.device(m.group("dev"))
    v = m.group("val").strip()
    if m.group("file") == "hca_type":
        info["ca_type"] = v or None
    elif m.group("file") == "sys_image_guid":
        info["sys_guid"] = v or None


# head/tail over several files: '==> PATH <==' above each file's lines
_HEAD_RE = re.compile(r"^==> (/\S{1,400}) <==\s*$")


def _lines(text):
    """(n, 'PATH:VALUE'): grep -H's lines as they are; head's '==> PATH <==' joined to the value under it."""
    path = None
    for n, line in iter_lines(text):
        m = _HEAD_RE.match(line)
        if m:
            path = m.group(1)
            continue
        if path is not None and line.strip():
            yield n, "%s:%s" % (path, line.strip())
            path = None
            continue
        yield n, line


def _parse(text, source, expected_rate=None, expected_devices=None, thresholds=None):
    h = Host("ib-sysfs", source)
    for n, line in _lines(text):
        m = _SYSFS_RE.match(line)
        if not m:
            m2 = _SYSFS_DEV_RE.match(line)
            if m2:
                _device_line(h, m2)
            continue
        dev, port = m.group("dev"), int(m.group("port"))
        fname, val, grp = m.group("file"), m.group("val"), m.group("grp")
        p = h.port(dev, port)
        key = (dev, port)
        if grp:
            cname = normalize_counter_name(fname)
            iv = to_int(val)
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
            p["link_layer"] = norm_link_layer(val)
    if not text.strip() and expected_devices:
        # the module prints nothing when /sys/class/infiniband is absent: no HCA at all
        h.no_devices = (0, "")
    return finish(h, text, expected_rate, expected_devices, thresholds)
