# SPDX-License-Identifier: Apache-2.0
"""``lshca`` (Mellanox's HCA lister, github.com/MrBr-github/lshca, lshca/lshca.py, GPL-3.0:
read for its output only) tables -> the port model.

lshca prints, per HCA, a ``Dev #N`` header (Desc, PN, FW ...) and a table whose columns are
separated by ``|``; its column names are fixed (``output_order_general``: PCI_addr, RDMA, Net,
Port, Numa, LnkStat, IpStat, Link, Rate, LnkCapWidth, LnkStaWidth, HCA_Type, ...). What we
read, as lshca.py writes it:
- ``LnkStat``: the port's sysfs state, ``actv`` (Active), ``init`` (Init/LinkUp), ``poll``
  (Down with physical state Polling) and ``down`` (Down, any other physical state). Its
  elastic view drops the column when every port of the table is ``actv``: a table without it
  has all its ports Active.
- ``Link``: ``IB`` or ``Eth``; ``Rate`` in Gb/s (a down port's carries the warning sign
  ``*`` and says nothing: it is not kept).
- ``LnkStaWidth``: the PCIe width the card trained at; it carries the error sign `` >!<``
  when it differs from ``LnkCapWidth`` (the card runs on fewer lanes than it has).
- ``IpStat``: the IPoIB/RoCE interface (``down >!<`` under an active port), not the port:
  kept out of the judgement, as ibdev2netdev's Up/Down is (a pure IB fabric has no IPoIB).
lshca names no GUIDs in its system view: the functions of one PCI device (``0000:04:00.0``
and ``.1``) are the ports of one card, the grouping ports.py's uncabled-spare rule needs."""

import re

from ..findings import finding, ib_ref, iter_lines
from .model import Host, guarded
from .names import parse_rate
from .ports import finish

_WARN, _ERROR = "*", ">!<"
# a header row: cells separated by '|', among them RDMA and one of lshca's port columns
_PORT_COLUMNS = ("LnkStat", "IpStat", "Link", "Rate", "HCA_Type", "LnkStaWidth", "VrtHCA", "PLid")
_BDF_RE = re.compile(r"^([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})\.[0-7]$")
_DEV_RE = re.compile(r"^[\w.\-]{1,64}$")
_STATES = {"actv": ("Active", "LinkUp"), "init": ("Init", "LinkUp"), "poll": ("Down", "Polling"),
           "down": ("Down", None)}


# a table's header (its port columns after RDMA), or an HCA's 'Dev #N' header: where lshca's output opens
HEADER_RE = re.compile(r"^[^\n|]{0,40}\|[^\n]{0,200}\bRDMA[ \t]*\|(?=[^\n]{0,400}\b(?:LnkStat|IpStat|HCA_Type)\b)", re.M)
OPENING = re.compile(r"^Dev #\d{1,3}[ \t]*$|" + HEADER_RE.pattern, re.M)
# its own lines only: its rules, its tables' rows, the Dev header and its fields (lshca.py's HCA header
# fields); an indented line after it is not (a paste of the job's error is the line readers')
_OWN_LINE_RE = re.compile(r"^(?:-{10,}[ \t]*$|Dev #\d{1,3}[ \t]*$|[^\n|]{0,400}\|[^\n|]{0,400}\||"
                          r" (?:Desc|PN|PSID|SN|FW|Driver|Tempr|Bond|BondState|DPUmode|BFBver): )")


def belongs(line):
    """True when ``line`` is one of lshca's own lines (content/'s block reading)."""
    return bool(_OWN_LINE_RE.match(line))


def header_cells(line):
    """The column names of an lshca table's header row, or None when ``line`` is not one."""
    if line.count("|") < 2:
        return None
    cells = [c.strip() for c in line.split("|")]
    if "RDMA" not in cells or not any(c in cells for c in _PORT_COLUMNS):
        return None
    return cells


def parse_lshca(text, source="lshca.txt", expected_rate=None, expected_devices=None, thresholds=None):
    """-> (facts, findings) of lshca's tables; never raises."""
    return guarded("lshca", _parse, text, source, expected_rate=expected_rate, expected_devices=expected_devices)


def _clean(cell):
    """(value, sign) of a cell: lshca appends ' >!<' (error) or '*' (warning) to a value."""
    cell = cell.strip()
    if cell.endswith(_ERROR):
        return cell[:-len(_ERROR)].strip(), _ERROR
    if cell.endswith(_WARN):
        return cell[:-1].strip(), _WARN
    return cell, None


def _row(h, cols, cells, n, line, pcie):
    cell = dict((c, _clean(v)) for c, v in zip(cols, cells))

    def val(col, default=""):
        return cell.get(col, (default, None))[0]
    dev = val("RDMA")
    if not _DEV_RE.match(dev):
        return
    port = h.port(dev, int(val("Port", "1")) if val("Port", "1").isdigit() else 1)
    state, phys = _STATES.get(val("LnkStat").lower(), (None, None)) if "LnkStat" in cell else ("Active", "LinkUp")
    port["state"], port["phys_state"] = state, phys
    port["link_layer"] = {"IB": "InfiniBand", "Eth": "Ethernet"}.get(val("Link"))
    rate, sign = cell.get("Rate", ("", None))
    port["rate_gbps"] = parse_rate(rate) if state == "Active" and sign is None and rate else None
    if val("HCA_Type"):
        h.dev_info[dev]["ca_type"] = val("HCA_Type")
    bdf = _BDF_RE.match(val("PCI_addr"))
    if bdf:
        h.dev_info[dev]["sys_guid"] = bdf.group(1)  # one PCI device, one card (module docstring)
    h.ev[(dev, port["port"])]["state"] = (n, line)
    width, sign = cell.get("LnkStaWidth", ("", None))
    if sign == _ERROR and bdf and bdf.group(1) not in pcie:
        pcie.add(bdf.group(1))  # once per card: its functions share the link
        h.findings.append(finding(
            "pcie_link_degraded", "HCA %s (%s): its PCIe link trained at %s, below the %s it is capable of "
            "(lshca's >!<): fewer lanes cut its bandwidth" % (dev, val("PCI_addr"), width, val("LnkCapWidth", "?")),
            evidence=line, source=h.src(n), ib=ib_ref(dev, None)))


def _parse(text, source, expected_rate=None, expected_devices=None):
    h = Host("lshca", source)
    cols, pcie = None, set()
    for n, line in iter_lines(text):
        head = header_cells(line)
        if head:
            cols = head
            continue
        if line.lstrip().startswith("Dev "):
            cols = None  # the next HCA's header: its own table follows
            continue
        if cols is None or "|" not in line:
            continue
        cells = line.split("|")
        if len(cells) == len(cols):
            _row(h, cols, cells, n, line, pcie)
    return finish(h, text, expected_rate, expected_devices, None)
