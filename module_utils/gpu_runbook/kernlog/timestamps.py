# SPDX-License-Identifier: Apache-2.0
"""When a kernel-log line was written, and in which format.

Formats: dmesg (seconds since boot), dmesg -T (ctime), dmesg --time-format iso (also behind
--decode's 'kern  :warn  : '), journalctl -k short, short-precise and short-iso (months in
the node's locale: 'sep 03', 'Okt 06', '9月 06'), BSD syslog and RFC 3339
syslog (kern.log), and Talos's ``talosctl dmesg`` ('kern: warning: [2026-04-22T21:27:51.2888Z]: ..',
after the node's name, which the host splitter takes off). A time written without a zone (dmesg -T, BSD syslog) is in the zone of the
node that wrote it: the caller says which (``tz``), else it is read as UTC. BSD syslog has no
year: the caller supplies it.
"""

import re
from datetime import datetime

from ..timeutil import UTC, parse_time, parse_tz

_MONTHS = {m: i for i, m in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1)}
# syslog / journalctl write the month in the node's locale (LC_TIME): 'sep 03', 'Okt 06',
# 'déc. 1'. Lower-cased abbreviations of the common ones (en, de, es, fr, it, pt); none clash.
_LOCALE_MONTHS = dict([(m.lower(), i) for m, i in _MONTHS.items()] + [
    ("mär", 3), ("mrz", 3), ("mai", 5), ("okt", 10), ("dez", 12),                       # de
    ("ene", 1), ("abr", 4), ("ago", 8), ("dic", 12),                                    # es
    ("janv", 1), ("févr", 2), ("fév", 2), ("mars", 3), ("avr", 4), ("juin", 6),         # fr
    ("juil", 7), ("août", 8), ("aoû", 8), ("sept", 9), ("déc", 12),
    ("gen", 1), ("mag", 5), ("giu", 6), ("lug", 7), ("set", 9), ("ott", 10),            # it
    ("fev", 2), ("out", 10),                                                           # pt
])

TS_RE = re.compile(
    # dmesg --decode 'kern  :warn  : '; Talos (machined's kmsg stream, '%s: %7s: [%s]: %s': 'kern:    info: ')
    r"^(?:[a-z]+ *: *[a-z]+ *: )?"
    r"(?:\[(?P<tiso>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(?P<tfrac>\d{1,9}))?(?P<ttz>Z|[+-]\d\d:\d\d)\]:"  # Talos
    r"|"
    r"(?:\[(?:[A-Z][a-z]{2} )?(?P<cmon>[A-Z][a-z]{2}) +(?P<cday>\d{1,2}) "
    r"(?P<ctime>\d\d:\d\d:\d\d) (?P<cyear>\d{4})\]"     # dmesg -T
    r"|\[ *(?P<mono>\d+\.\d+)\]"                        # dmesg
    # /dev/kmsg's record (Documentation/ABI/testing/dev-kmsg: 'prio,seq,usec,flags[,...];message'), as
    # `cat /dev/kmsg` and tools that store it (gpud) write it: its time is microseconds since boot
    r"|\d{1,4},\d{1,20},(?P<kusec>\d{1,20}),[-c+](?:,[^;\n]{0,80})?;"
    r"|(?P<iso>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d)(?:[.,](?P<frac>\d+))?(?P<tz>Z|[+-]\d\d:?\d\d)?"
    r"|(?P<bmon>[^\W\d_]{3,4}|\d{1,2}[月월])\.? +(?P<bday>\d{1,2}) "
    r"(?P<btime>\d\d:\d\d:\d\d)(?:\.(?P<bfrac>\d{1,9}))?)"  # syslog / journalctl short(-precise)
    r"(?: +(?P<host>[^\s\[\]]+) kernel(?:\[\d+\])?:)?)")


def ts_from_match(m, year, zone=UTC):
    """A TS_RE match -> (aware datetime | None, dmesg seconds | None, format name, hostname).
    A time without a zone is in ``zone`` (a tzinfo)."""
    g = m.groupdict()
    try:
        if g["cmon"]:
            hh, mm, ss = (int(x) for x in g["ctime"].split(":"))
            dt = datetime(int(g["cyear"]), _MONTHS[g["cmon"]], int(g["cday"]), hh, mm, ss, tzinfo=zone)
            return dt, None, "dmesg_ctime", None
        if g["mono"]:
            return None, float(g["mono"]), "dmesg", None
        if g["kusec"]:
            return None, int(g["kusec"]) / 1e6, "dev_kmsg", None
        if g["tiso"]:
            return _iso(g["tiso"], g["tfrac"], g["ttz"], zone), None, "talos_dmesg", None
        if g["iso"]:
            dt = _iso(g["iso"], g["frac"], g["tz"], zone)
            if g["host"]:
                # journald writes '+0000', rsyslog's RFC 3339 '+00:00'
                fmt = "journalctl_short_iso" if g["tz"] and ":" not in g["tz"] else "syslog_rfc3339"
            else:
                fmt = "dmesg_iso"
            return dt, None, fmt, g["host"]
        if g["bmon"]:
            hh, mm, ss = (int(x) for x in g["btime"].split(":"))
            dt = datetime(year, _month(g["bmon"]), int(g["bday"]), hh, mm, ss,
                          int((g["bfrac"] or "0")[:6].ljust(6, "0")), tzinfo=zone)
            return dt, None, "syslog", g["host"]
    except (ValueError, OverflowError, KeyError):  # 30 Feb, hour 99: no usable time
        pass
    return None, None, "unknown", None


def _iso(d, frac, tz, zone):
    """'2026-04-22T21:27:51' (or with a blank for the T), its fraction and zone ('Z', '+09:00', '+0900',
    or None: ``zone``) -> an aware datetime (microseconds: the fraction's first six digits)."""
    offset = parse_tz("UTC" if tz == "Z" else tz) if tz else zone
    return datetime(int(d[0:4]), int(d[5:7]), int(d[8:10]), int(d[11:13]), int(d[14:16]), int(d[17:19]),
                    int((frac or "0")[:6].ljust(6, "0")), tzinfo=offset)


def _month(name):
    """'Dec', 'déc', 'Okt', 'sep' -> 12, 12, 10, 9; CJK '9月' / Korean '9월' -> 9 (KeyError otherwise)."""
    if name[-1] in "月월":
        return int(name[:-1])
    return _LOCALE_MONTHS[name.lower()]


def line_format(line, year):
    """(format name, hostname) of one cleaned line; ('bare', None) when it has no timestamp."""
    m = TS_RE.match(line)
    if not m:
        return "bare", None
    return ts_from_match(m, year)[2:]


def parse_since(since, tz=None):
    """ISO 8601 string or datetime -> aware UTC datetime; None stays None. A time without a
    zone is in ``tz`` (a tzinfo or a name timeutil.parse_tz reads; UTC when None); one with a
    zone is taken as it is. Raises ValueError."""
    if since is None:
        return None
    return parse_time(since, tz).astimezone(UTC)
