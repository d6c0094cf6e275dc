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
    get = dict((c, _clean(v)) for c, v in zip(cols, cells))
    dev = get.get("RDMA", ("", None))[0]
    if not _DEV_RE.match(dev or ""):
        return
    port_no = get.get("Port", ("1", None))[0]
    port = h.port(dev, int(port_no) if port_no.isdigit() else 1)
    state, phys = _STATES.get(get["LnkStat"][0].lower(), (None, None)) if "LnkStat" in get else ("Active", "LinkUp")
    port["state"], port["phys_state"] = state, phys
    link = get.get("Link", ("", None))[0]
    port["link_layer"] = {"IB": "InfiniBand", "Eth": "Ethernet"}.get(link)
    rate, sign = get.get("Rate", ("", None))
    port["rate_gbps"] = parse_rate(rate) if state == "Active" and sign is None and rate else None
    if get.get("HCA_Type", ("", None))[0]:
        h.dev_info[dev]["ca_type"] = get["HCA_Type"][0]
    bdf = _BDF_RE.match(get.get("PCI_addr", ("", None))[0])
    if bdf:
        h.dev_info[dev]["sys_guid"] = bdf.group(1)  # one PCI device, one card (module docstring)
    h.ev[(dev, port["port"])]["state"] = (n, line)
    width, sign = get.get("LnkStaWidth", ("", None))
    if sign == _ERROR and bdf and bdf.group(1) not in pcie:
        pcie.add(bdf.group(1))  # once per card: its functions share the link
        h.findings.append(finding(
            "pcie_link_degraded", "HCA %s (%s): its PCIe link trained at %s, below the %s it is capable of "
            "(lshca's >!<): fewer lanes cut its bandwidth" % (dev, get.get("PCI_addr", ("", None))[0], width,
                                                             get.get("LnkCapWidth", ("?", None))[0]),
            evidence=line, source=h.src(n), ib=ib_ref(dev, None)))


def _parse(text, source, expected_rate=None, expected_devices=None):
    h = Host("lshca", source)
    cols, pcie = None, set()
    for n, line in iter_lines(text):
        head = header_cells(line)
        if head:
            cols = head
            continue
        if cols is None or "|" not in line:
            if line.strip() and not line.strip().startswith("-") and cols and line.lstrip()[:4] == "Dev ":
                cols = None  # the next HCA's header: its own table follows
            continue
        cells = line.split("|")
        if len(cells) == len(cols):
            _row(h, cols, cells, n, line, pcie)
    return finish(h, text, expected_rate, expected_devices, None)
