# SPDX-License-Identifier: Apache-2.0
"""InfiniBand / RoCE port state and error counters: sysfs, ibstat, ibstatus, ibv_devinfo,
``rdma link``, ibportstate, mlxlink, ibdev2netdev, lshca, perfquery and iblinkinfo text -> (facts, findings).

Every parser returns ``(facts, findings)`` with

    facts = {"format": "ib-sysfs" | "ibstat" | "ibstatus" | "ibv_devinfo" | "perfquery" | "iblinkinfo",
             "ports": [{"device", "port", "state", "phys_state", "rate_gbps", "link_layer",
                        "ca_type", "counters": {canonical_name: int}}],
             "devices": [names, in order of appearance]}

Port states are normalised to ``Down/Init/Armed/Active/ActiveDefer``; physical states to
``Sleep/Polling/Disabled/PortConfigurationTraining/LinkUp/LinkErrorRecovery/PhyTest``;
counter names to the sysfs spelling (``SymbolErrorCounter`` -> ``symbol_error``) so one
threshold table (``COUNTER_RULES``, overridable per call with ``thresholds``) serves all
formats. Every finding is of a kind declared in taxonomy/kinds_ib.py, which also says
the remedy (a port without a physical link is a cable, not an openibd restart). Pure
functions of text: standard library only, Python 3.9+, never raise.

Modules: ``names`` (spellings), ``model`` (the port model, the guard), ``ports`` (port
rules), ``counters`` (counter rules), one module per format, and the dispatcher here.
"""

import re

from ..findings import never_raise
from .counters import COUNTER_RULES, merged_rules
from .model import unparseable
from .names import normalize_counter_name, normalize_phys_state, normalize_state, parse_rate
from .ports import NO_PHYSICAL_LINK, port_state_kind
from .sysfs import parse_ib_sysfs

__all__ = ["COUNTER_RULES", "NO_PHYSICAL_LINK", "detect_ib_format", "merged_rules", "normalize_counter_name",
           "normalize_phys_state", "normalize_state", "parse_ib", "parse_ib_sysfs", "parse_ibdev2netdev",
           "parse_iblinkinfo",
           "parse_ibportstate", "parse_lshca", "parse_ibstat", "parse_mlxlink", "parse_ibv_devinfo", "parse_perfquery", "parse_rate", "parse_rdma_link", "parser",
           "port_state_kind"]


def __getattr__(name):
    """The tool parsers, imported on first use (PEP 562): a gather reads sysfs, and every module
    it imports is compiled from source on the node on every run. Explicit imports, not
    importlib: Ansible's module_utils finder ships what it sees imported, in functions too."""
    if name == "parse_ibstat":
        from .ibstat import parse_ibstat
        return parse_ibstat
    if name == "parse_ibv_devinfo":
        from .ibv_devinfo import parse_ibv_devinfo
        return parse_ibv_devinfo
    if name == "parse_perfquery":
        from .perfquery import parse_perfquery
        return parse_perfquery
    if name == "parse_iblinkinfo":
        from .iblinkinfo import parse_iblinkinfo
        return parse_iblinkinfo
    if name == "parse_rdma_link":
        from .rdma_link import parse_rdma_link
        return parse_rdma_link
    if name == "parse_ibportstate":
        from .ibportstate import parse_ibportstate
        return parse_ibportstate
    if name == "parse_mlxlink":
        from .mlxlink import parse_mlxlink
        return parse_mlxlink
    if name == "parse_ibdev2netdev":
        from .ibdev2netdev import parse_ibdev2netdev
        return parse_ibdev2netdev
    if name == "parse_lshca":
        from .lshca import parse_lshca
        return parse_lshca
    raise AttributeError("module %r has no attribute %r" % (__name__, name))

_SNIFF = (
    ("ib-sysfs", re.compile(r"/ports/\d+/(?:state|phys_state|rate|link_layer|counters/\w+|"
                            r"hw_counters/\w+):", re.M)),
    # blanks inside a line only ([ \t]): `^\s*` would run across every blank line after it (quadratic)
    ("ibstat", re.compile(r"^[ \t]*CA[ \t]+['\u2018\u2019`][^'\u2018\u2019`\n]+['\u2018\u2019`]|"
                          r"^[ \t]*Infiniband device[ \t]+['\u2018\u2019`]|"
                          r"^Port[ \t]{1,4}\d{1,3}:[ \t]*\r?\n[ \t]+(?:State|Physical state):", re.M | re.I)),
    ("ibv_devinfo", re.compile(r"^[ \t]*hca_id[ \t]*:", re.M)),
    # before perfquery: its '# Port info: Lid 1 port 6' is shaped like perfquery's headers
    ("ibportstate", re.compile(r"^[ \t]*#[ \t]*Port info:[^\n]*port[ \t]+\d+[ \t]*\r?\n[ \t]*(?:LinkState|"
                               r"PhysLinkState):", re.M)),
    ("perfquery", re.compile(r"^[ \t]*#[ \t]*Port[ \t]+[^:\n]*:[ \t]*Lid[ \t]+\d+", re.M | re.I)),
    ("iblinkinfo", re.compile(r"==\([^\n()]*\)==>")),
    # mlxlink's sections (MlxlinkCmdPrint: the title over its dashes, then 'State   : Active')
    ("mlxlink", re.compile(r"^(?:Operational Info|Troubleshooting Info)[ \t]*\r?\n(?:-{4,}[ \t]*\r?\n)?"
                           r"[A-Z][^\n:]{0,60}:", re.M)),
    ("rdma-link", re.compile(r"^[ \t]{0,8}(?:\d{1,4}/\d{1,3}:[ \t]{1,4})?link[ \t]{1,4}[\w.\-]{1,64}/\d{1,3}[ \t][^\n]{0,800}?"
                             r"\b(?:physical_)?state[ \t]+[A-Z_]{2,32}", re.M)),
    # lshca's table header: '|'-separated column names, RDMA and its port columns (lshca.HEADER_RE, written
    # here as the other formats' are, so that a gather does not import the parser to sniff)
    ("lshca", re.compile(r"^[^\n|]{0,40}\|[^\n]{0,200}\bRDMA[ \t]*\|[^\n]{0,400}\b(?:LnkStat|IpStat|HCA_Type)\b", re.M)),
    ("ibdev2netdev", re.compile(r"\bport[ \t]+\d{1,3}(?:[ \t]+\([A-Z_]{1,16}\))?[ \t]+==>[ \t]+\S{1,64}[ \t]+\((?:Up|Down)\)")),
)
_PARSERS = {"ib-sysfs": "parse_ib_sysfs", "ibstat": "parse_ibstat", "ibv_devinfo": "parse_ibv_devinfo",
            "perfquery": "parse_perfquery", "iblinkinfo": "parse_iblinkinfo", "ibdev2netdev": "parse_ibdev2netdev",
            "rdma-link": "parse_rdma_link", "ibportstate": "parse_ibportstate", "mlxlink": "parse_mlxlink", "lshca": "parse_lshca"}


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
    """Sniff the format and dispatch; unknown text -> info 'ib_unparseable'. Each parser
    guards itself (never raises)."""
    fmt = detect_ib_format(text)
    if fmt not in _PARSERS:
        return unparseable("ib", source, text)
    if fmt in ("perfquery", "iblinkinfo"):
        kwargs = {"thresholds": kwargs.get("thresholds")}
    # a parser that cannot be imported is a parser_error, as one that raises would be
    return never_raise(lambda: parser(fmt)(text, source=source, **kwargs), source)


def parser(fmt):
    """The parser of one format ("ib-sysfs", "ibstat", ...: what detect_ib_format says, and the
    capture file's name without ".txt"), its module imported on first use."""
    name = _PARSERS[fmt]
    return globals().get(name) or __getattr__(name)
