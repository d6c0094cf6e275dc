# SPDX-License-Identifier: Apache-2.0
"""The port model every IB format fills in, and the one guard around each parser."""

from ..findings import finding, iter_lines, never_raise


class Host(object):
    """Mutable parse state shared by the formats; turned into facts at the end."""

    def __init__(self, fmt, source):
        self.fmt = fmt
        self.source = source
        self.devices = []
        self.dev_info = {}      # dev -> {"ca_type": ..., "sys_guid": ...}
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

    def port_list(self):
        """The ports in the order seen, each with its device's CA type filled in."""
        ports = []
        for key in self.order:
            p = self.ports[key]
            if p["ca_type"] is None:
                p["ca_type"] = self.dev_info.get(p["device"], {}).get("ca_type")
            ports.append(p)
        return ports

    def src(self, lineno):
        return "%s:%d" % (self.source, lineno) if lineno else self.source

    def empty(self):
        return not (self.order or self.devices or self.missing or self.no_devices or self.tool_errors)

    def facts(self):
        return {"format": self.fmt, "ports": self.port_list(), "devices": list(self.devices)}


def unparseable(fmt, source, text, why=None):
    """Empty facts and one info finding: the text is not this tool's output."""
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
            [finding("ib_unparseable", msg, evidence=sample, source=source)])


def guarded(fmt, impl, text, source, **kwargs):
    """Run ``impl(text, source, **kwargs)`` for a public entry point: bytes are decoded,
    anything that is not text is 'ib_unparseable', and a bug becomes a parser_error finding
    (never_raise), never a traceback."""
    src = source or "%s.txt" % fmt
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if not isinstance(text, str):
        return unparseable(fmt, src, None)
    return never_raise(impl, src, text, src, **kwargs)
