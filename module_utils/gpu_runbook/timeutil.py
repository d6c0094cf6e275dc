# SPDX-License-Identifier: Apache-2.0
"""Times and their zones. A time written without a zone is in the zone of whoever wrote it:
``dmesg -T`` and syslog in the node's local zone, Slurm's StartTime in the controller's.
Callers say which zone that is (``tz``); only when nobody knows is it read as UTC."""

import re
from datetime import datetime, timedelta, timezone, tzinfo

UTC = timezone.utc

_OFFSET_RE = re.compile(r"^(?:UTC|GMT)?([+-])(\d{1,2})(?::?(\d{2}))?$", re.I)
_ISO_RE = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?)?\s*(Z|[+-]\d{2}:?\d{2})?$")


def parse_tz(value):
    """None, a tzinfo, 'UTC'/'Z', an offset ('+09:00', '-0500', 'UTC+9') or an IANA name
    ('Asia/Seoul', where the host has tzdata) -> tzinfo. ValueError for anything else."""
    if value is None or isinstance(value, tzinfo):
        return value
    s = str(value).strip()
    if s.upper() in ("UTC", "Z", "GMT", "ETC/UTC"):
        return UTC
    m = _OFFSET_RE.match(s)
    if m:
        sign = -1 if m.group(1) == "-" else 1
        hours, minutes = int(m.group(2)), int(m.group(3) or 0)
        if hours > 14 or minutes > 59:
            raise ValueError("not a UTC offset: %r" % (value,))
        return timezone(sign * timedelta(hours=hours, minutes=minutes))
    try:
        from zoneinfo import ZoneInfo  # Python 3.9+; needs the host's tzdata
        return ZoneInfo(s)
    except Exception:  # noqa: BLE001 -- ZoneInfoNotFoundError, ValueError, ImportError alike
        raise ValueError("unknown time zone %r (use an offset like +09:00 or an IANA name)" % (value,))


def local_tz():
    """This machine's zone as a fixed offset (what its naive log times mean now)."""
    return datetime.now().astimezone().tzinfo


def parse_time(value, tz=None):
    """An ISO 8601 time (string or datetime) -> aware datetime. A time without a zone is in
    ``tz`` (UTC when None; "local": this machine's zone at that date, summer time included).
    ValueError when it is not a time."""
    if isinstance(value, datetime):
        dt = value
    else:
        m = _ISO_RE.match(str(value).strip())
        if not m:
            raise ValueError("not an ISO 8601 time: %r" % (value,))
        y, mo, d, hh, mi, ss, frac, zone = m.groups()
        dt = datetime(int(y), int(mo), int(d), int(hh or 0), int(mi or 0), int(ss or 0),
                      int((frac or "0")[:6].ljust(6, "0")))
        if zone:
            dt = dt.replace(tzinfo=parse_tz(zone if zone != "Z" else "UTC"))
    if dt.tzinfo is None:
        if tz == "local":
            return dt.astimezone()  # a naive datetime's astimezone() reads it as local time
        dt = dt.replace(tzinfo=parse_tz(tz) or UTC)
    return dt


def to_utc(value, tz=None):
    """parse_time(...) in UTC; None for anything that is not a time (never raises)."""
    try:
        return parse_time(value, tz).astimezone(UTC)
    except (ValueError, TypeError, OverflowError):
        return None


def iso(dt):
    """An aware datetime -> ISO 8601 with its offset; None stays None."""
    return dt.isoformat() if dt is not None else None


def _clock(dt, with_date):
    return dt.strftime("%Y-%m-%d %H:%M:%S" if with_date else "%H:%M:%S")


def _times(count, ko):
    """'once' / '3x' ('1회' / '3회'); '' for no count, zero, a negative or junk."""
    try:
        n = int(count) if count is not None and not isinstance(count, bool) else None
    except (TypeError, ValueError, OverflowError):
        n = None
    if n is None or n < 1:
        return ""
    if n == 1:
        return "1회" if ko else "once"
    return ("%d회" % n) if ko else ("%dx" % n)


def span_text(count, first=None, last=None, lang="en"):
    """How often and when, as a person says it: '3x between 2026-12-02 07:09:51 and 07:12:03 UTC',
    'once at 2026-12-02 07:09:51 UTC', '3x' (the log had no times). The date is named
    once (twice across midnight); both ends are shown in the first time's zone. A time
    that is not one is left out. Never raises on odd input."""
    ko = lang == "ko"
    times = _times(count, ko)
    a, b = _aware(first), _aware(last)
    a, b = a or b, b or a
    try:
        b = b.astimezone(a.tzinfo) if a is not None else None
        if b is not None and b < a:
            a, b = b, a  # written in the other order: still earliest first
        zone = (a.tzname() or "") if a is not None else ""
        zone = "UTC" if zone == "UTC+00:00" else zone  # fixed offsets name themselves 'UTC+09:00'
        if a is None:
            return times
        if _clock(b, True) == _clock(a, True):  # within one second: one time
            at = "%s %s" % (_clock(a, True), zone)
            return ("%s %s" % (at, times)).strip() if ko else ("%s at %s" % (times, at)).strip()
        start, end = _clock(a, True), _clock(b, a.date() != b.date())
    except (TypeError, ValueError, OverflowError):  # a year the clock cannot show
        return times
    if ko:
        return ("%s ~ %s %s %s" % (start, end, zone, times)).strip()
    return ("%s between %s and %s %s" % (times, start, end, zone)).strip()


def _aware(value):
    if value is None or value == "" or isinstance(value, (bool, int, float)):
        return None  # seconds since boot are no wall-clock time
    try:
        return parse_time(value)
    except (ValueError, TypeError, OverflowError):
        return None
