# SPDX-License-Identifier: Apache-2.0
"""``ibdev2netdev`` (MLNX_OFED / DOCA's ofed_scripts/ibdev2netdev) output.

The script prints one line per RDMA port and the network interface on it:
``echo "$ibdev port $port ==> $ndev ($state)"`` with the interface's operstate ("Up",
"Down"), and with ``-v`` the PCI address, the adapter and the port's own IB state first:
``0000:81:00.0 mlx5_0 (MT4123 - MCX653105A-HDAT) ConnectX-6 ... fw 20.31.1014 port 1 (ACTIVE) ==> ib0 (Up)``.
The (Up)/(Down) is the network interface's operstate, not the port's: on a pure InfiniBand
fabric (NCCL over verbs, no IPoIB address) every IB interface is Down and every port Active
(imbue-ai/cluster-health#4). So only the ``-v`` form's own port state is judged (the port rules
of ports.py, as for ibstat); the interface's state is kept in the facts (``netdev_state``). No
rate or counters: those need ibstat or sysfs."""

import re

from ..findings import finding, iter_lines
from .model import Host, guarded
from .names import normalize_state
from .ports import finish

_LINE_RE = re.compile(r"^\s*(?:(?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+)?(?P<dev>[\w.\-]{1,64})"
                      r"(?:\s+\((?P<model>[^()\n]{0,120})\)[^\n]{0,400}?)?\s+port\s+(?P<port>\d{1,3})"
                      r"(?:\s+\((?P<ibstate>[A-Z_]{1,16})\))?\s+==>\s+(?P<ndev>\S{1,64})\s+\((?P<state>[A-Za-z]{1,16})\)")


def parse_ibdev2netdev(text, source="ibdev2netdev.txt", expected_rate=None, expected_devices=None,
                       thresholds=None):
    """-> (facts, findings) of ``ibdev2netdev`` [-v] output; never raises."""
    return guarded("ibdev2netdev", _parse, text, source, expected_rate=expected_rate,
                   expected_devices=expected_devices)


def _parse(text, source, expected_rate=None, expected_devices=None):
    h = Host("ibdev2netdev", source)
    for n, line in iter_lines(text):
        m = _LINE_RE.match(line)
        if not m:
            continue
        port = h.port(m.group("dev"), int(m.group("port")))
        port["state"] = normalize_state(m.group("ibstate")) if m.group("ibstate") else None
        port["netdev"], port["netdev_state"] = m.group("ndev"), m.group("state")
        if m.group("model"):
            h.dev_info[m.group("dev")]["ca_type"] = m.group("model").split(" - ")[0].strip() or None
        h.ev[(m.group("dev"), int(m.group("port")))]["state"] = (n, line)
    facts, findings = finish(h, text, expected_rate, expected_devices, None)
    if facts.get("ports") and not any(p["state"] for p in facts["ports"]):
        # the interfaces' state says nothing of the ports': no health is claimed from it
        findings.append(finding("ib_unparseable", "%s shows the network interfaces' state (Up/Down), not the IB ports': "
                                               "run `ibstat` or `ibdev2netdev -v` for the ports" % source,
                                evidence=text.strip().split("\n", 1)[0][:200], source=source))
    return facts, findings
