# SPDX-License-Identifier: Apache-2.0
"""Which addresses ride the InfiniBand fabric, from the kernel's own files (pure, text only).

* ``<sysfs>/class/net/<if>/type``: 32 is ARPHRD_INFINIBAND -- an IPoIB interface by content, also
  one renamed (``ibp65s0``, ``eth2``), a P_Key child (``ib0.8001``) or a bond of IPoIB slaves
  (bonding takes its slaves' type); an ``ib*`` name whose type cannot be read counts too.
* ``/proc/net/route`` (IPv4, main table, little-endian hex) and ``/proc/net/ipv6_route`` (IPv6):
  the kernel's longest-prefix match says out of which interface an address is reached; a connected
  route (no gateway) of an interface says which local addresses live on it.
* ``/proc/net/if_inet6``: IPv6 addresses per interface (IPv4 has no such file; its connected
  routes stand in for it).

Policy routing (ip rule) and other tables than main are not seen: the main table is what a mount
or an SSH session uses unless someone set up rules. Standard library only, never raise.
"""

import ipaddress
import re

ARPHRD_INFINIBAND = 32
_IB_NAME = re.compile(r"^ib[A-Za-z0-9_.:-]*$")
RTF_UP, RTF_GATEWAY, RTF_REJECT = 0x1, 0x2, 0x200


def ib_interfaces(types):
    """``types``: {interface: text of its sysfs ``type`` file, or None when unreadable} -> sorted
    names of the IPoIB interfaces (type 32, or an ib* name whose type is unknown)."""
    out = set()
    for name, text in (types or {}).items():
        t = (text or "").strip()
        if t.isdigit() and int(t) == ARPHRD_INFINIBAND:
            out.add(name)
        elif not t.isdigit() and _IB_NAME.match(name or ""):
            out.add(name)
    return sorted(out)


def _le32(hexword):
    """'0500000A' (little-endian, as /proc/net/route writes it) -> '10.0.0.5'."""
    b = bytes.fromhex(hexword)
    return ".".join(str(x) for x in reversed(b))


def _routes(lines, row):
    """``row(fields)`` -> (iface, net, gateway, metric, flags) or None; keeps the routes that are up and
    not reject routes, a gateway only when RTF_GATEWAY says so."""
    out = []
    for line in lines:
        try:
            r = row(line.split())
        except (ValueError, IndexError):
            continue
        if r and r[4] & RTF_UP and not r[4] & RTF_REJECT:
            gw = r[2] if r[4] & RTF_GATEWAY and ipaddress.ip_address(r[2]).packed.strip(b"\0") else None
            out.append({"iface": r[0], "net": r[1], "gateway": gw, "metric": r[3]})
    return out


def parse_route(text):
    """/proc/net/route ('Iface Destination Gateway Flags RefCnt Use Metric Mask ...', little-endian hex) ->
    [{"iface", "net": IPv4Network, "gateway": str or None, "metric": int}]."""
    def row(f):
        net = ipaddress.ip_network("%s/%s" % (_le32(f[1]), _le32(f[7])), strict=False)
        return f[0], net, _le32(f[2]), int(f[6]), int(f[3], 16)
    return _routes((text or "").splitlines()[1:], row)


def _v6(hexaddr):
    return str(ipaddress.IPv6Address(bytes.fromhex(hexaddr)))


def parse_ipv6_route(text):
    """/proc/net/ipv6_route ('dest plen src srclen nexthop metric refcnt use flags iface') -> the same
    rows as parse_route (the loopback's local routes left out)."""
    def row(f):
        if f[9] == "lo":
            return None
        net = ipaddress.ip_network("%s/%d" % (_v6(f[0]), int(f[1], 16)), strict=False)
        return f[9], net, _v6(f[4]), int(f[5], 16), int(f[8], 16)
    return _routes((text or "").splitlines(), row)


def parse_if_inet6(text):
    """/proc/net/if_inet6 ('addr ifindex plen scope flags iface') -> [{"iface", "addr", "prefix"}]."""
    out = []
    for line in (text or "").splitlines():
        f = line.split()
        if len(f) < 6:
            continue
        try:
            out.append({"iface": f[5], "addr": _v6(f[0]), "prefix": int(f[2], 16)})
        except ValueError:
            continue
    return out


def as_ip(value):
    """'10.0.0.5', '[fe80::1]', 'fe80::1%ib0' -> an ip_address, else None."""
    v = (value or "").strip().strip("[]").split("%", 1)[0]
    try:
        return ipaddress.ip_address(v)
    except ValueError:
        return None


def route_for(addr, routes):
    """The route the main table picks for ``addr``: longest prefix, then the lowest metric."""
    ip = as_ip(str(addr))
    best = None
    for r in routes or []:
        if ip is None or r["net"].version != ip.version or ip not in r["net"]:
            continue
        key = (r["net"].prefixlen, -r["metric"])
        if best is None or key > best[0]:
            best = (key, r)
    return best[1] if best else None


def fabric_path(addr, net):
    """Does ``addr`` ride an IPoIB interface?  ``net``: {"ib": [names], "routes": [...],
    "addrs": [{"iface", "addr", "prefix"}]}.  -> {"iface", "how"} or None (not over IB, or no route)."""
    ip = as_ip(str(addr))
    if ip is None:
        return None
    ib = set(net.get("ib") or [])
    for a in net.get("addrs") or []:
        if a["iface"] in ib and as_ip(a["addr"]) == ip:
            return {"iface": a["iface"], "how": "an address of %s" % a["iface"]}
    r = route_for(ip, net.get("routes"))
    if r and r["iface"] in ib:
        how = "route %s%s dev %s" % (r["net"], " via %s" % r["gateway"] if r["gateway"] else "", r["iface"])
        return {"iface": r["iface"], "how": how}
    return None
