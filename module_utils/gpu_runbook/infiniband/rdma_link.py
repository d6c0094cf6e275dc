# SPDX-License-Identifier: Apache-2.0
"""``rdma link`` (``rdma link show``, iproute2's rdma tool) output.

rdma/link.c prints one line per RDMA port: ``link <dev>/<port>``, then what the kernel's
netlink answer holds -- for InfiniBand ``subnet_prefix``, ``lid``, ``sm_lid``, ``lmc`` --, then
``state <STATE>`` (link_state_to_str: NOP, DOWN, INIT, ARMED, ACTIVE, ACTIVE_DEFER),
``physical_state <STATE>`` (phys_state_to_str: SLEEP, POLLING, DISABLED, ...LINK_UP,
LINK_ERROR_RECOVER, PHY_TEST; the kernel's ib_port_phys_state) and ``netdev <name>`` when a
network interface sits on the port (RoCE, IPoIB). No rate or counters: those need ibstat,
sysfs or ``rdma statistic``.

A capture that holds several readings of one port (the command run again and again while a
link comes and goes) keeps the last as the port's state and says that the link went down
and came back (``ib_link_downed``, as the link-downed counter would)."""

import re

from ..findings import finding, ib_ref, iter_lines
from .model import Host, guarded
from .names import normalize_phys_state, normalize_state
from .ports import finish

# '[N/N: ]link mlx5_7/1 ... state DOWN physical_state POLLING [netdev ib0]'
LINE_RE = re.compile(r"^\s{0,8}(?:\d{1,4}/\d{1,3}:\s{1,4})?link\s{1,4}(?P<dev>[\w.\-]{1,64})/(?P<port>\d{1,3})"
                     r"(?P<rest>(?:\s[^\n]{0,800})?)$")
_STATE_RE = re.compile(r"\bstate\s+(?P<v>[A-Z_]{2,24})\b")
_PHYS_RE = re.compile(r"\bphysical_state\s+(?P<v>[A-Z_]{2,32})\b")
_NETDEV_RE = re.compile(r"\bnetdev\s+(?P<v>\S{1,64})")
# iproute2 spells two physical states its own way (phys_state_to_str)
_PHYS_SPELLING = {"LINK_ERROR_RECOVER": "LINK_ERROR_RECOVERY"}


def parse_rdma_link(text, source="rdma-link.txt", expected_rate=None, expected_devices=None, thresholds=None):
    """-> (facts, findings) of ``rdma link [show]`` output; never raises."""
    return guarded("rdma-link", _parse, text, source, expected_rate=expected_rate,
                   expected_devices=expected_devices)


def _parse(text, source, expected_rate=None, expected_devices=None):
    h = Host("rdma-link", source)
    readings = {}  # (dev, port) -> [(state, phys_state, lineno, line)]
    for n, line in iter_lines(text):
        m = LINE_RE.match(line)
        if not m:
            continue
        rest = m.group("rest")
        ms, mp = _STATE_RE.search(rest.replace("physical_state", "")), _PHYS_RE.search(rest)
        if not ms and not mp:
            continue
        key = (m.group("dev"), int(m.group("port")))
        port = h.port(*key)
        if ms:
            port["state"] = normalize_state(ms.group("v"))
            h.ev[key]["state"] = (n, line)
        if mp:
            port["phys_state"] = normalize_phys_state(_PHYS_SPELLING.get(mp.group("v"), mp.group("v")))
            h.ev[key]["phys_state"] = (n, line)
        mn = _NETDEV_RE.search(rest)
        if mn:
            port["netdev"] = mn.group("v")
        readings.setdefault(key, []).append((port["state"], port["phys_state"], n, line))
    facts, findings = finish(h, text, expected_rate, expected_devices, None)
    for (dev, num), seen in readings.items():
        went_down = next((r for r in seen if r[0] != "Active"), None)
        if went_down is not None and len(seen) > 1 and any(r[0] == "Active" for r in seen[seen.index(went_down):]):
            findings.append(finding(
                "ib_link_downed", "%s/%d: %d readings of the port in this capture, %s then Active: the link went "
                "down and came back" % (dev, num, len(seen), went_down[0] or went_down[1] or "not Active"),
                evidence=went_down[3].strip()[:300], source=h.src(went_down[2]),
                ib=ib_ref(dev, num)))
    return facts, findings
