# SPDX-License-Identifier: Apache-2.0
"""``systemctl status UNIT``: the state of the node's services this runbook depends on.

Known from its source: systemd's systemctl (src/systemctl/systemctl-show.c print_status_info()):
a unit's first line ``● NAME.service - DESCRIPTION`` (the dot ●/○/×/* by state, absent when
piped), then ``Loaded: loaded (PATH; enabled; preset: enabled)`` and ``Active: ACTIVE_STATE
(SUB_STATE) since ...`` (active (running), activating (auto-restart), inactive (dead), failed
(Result: exit-code) ...); for a unit that does not exist, systemctl says ``Unit NAME.service could
not be found.`` (src/systemctl/systemctl-util.c); ``systemctl start|restart`` whose job failed says
``Job for NAME.service failed because <the service's Result explained>.`` (bus-wait-for-jobs.c):
the service could not be started (a warning, the service's category).

The units read (UNITS): NVIDIA Fabric Manager (the NVLink fabric of NVSwitch systems: without it
CUDA fails with 'system not yet initialized'), nvidia-persistenced, NVIDIA IMEX (multi-node NVLink),
openibd (the InfiniBand driver stack), opensm (a subnet manager), and DCGM's host engine. A unit
active (running) is a reading of that service (no finding); failed, inactive or activating again
is the service not running (warning, the service's category); not installed is said as a warning
for Fabric Manager and IMEX (needed on NVSwitch / multi-node NVLink systems, where their absence
leaves the GPUs unusable; elsewhere harmless), info for the others. Other units are not read."""

import re

from .findings import finding, iter_lines, never_raise

SOURCE = "systemctl.txt"
# (unit name pattern, what it is, category, the finding kind when it is not running)
UNITS = (
    (re.compile(r"^nvidia-fabricmanager\b"), "NVIDIA Fabric Manager", "driver", "fabric_not_ready"),
    (re.compile(r"^nvidia-imex\b"), "NVIDIA IMEX (multi-node NVLink)", "driver", "logged_driver_error"),
    (re.compile(r"^nvidia-persistenced\b"), "nvidia-persistenced", "driver", "logged_driver_error"),
    (re.compile(r"^openibd\b"), "openibd (the InfiniBand driver stack)", "ib_network", "logged_ib_error"),
    (re.compile(r"^opensm\b"), "opensm (a subnet manager)", "ib_network", "logged_ib_error"),
    (re.compile(r"^(?:nvidia-)?dcgm\b|^nv-hostengine\b"), "DCGM's host engine", "unknown", "logged_error"),
)
_NEEDED_WHERE = ("fabric_not_ready",)  # not installed matters where the platform needs it
HEADER_RE = re.compile(r"^\s{0,4}(?:[\u25cf\u25cb\u00d7*]\s{1,2})?(?P<unit>[\w@.\-]{1,120}\.service)\s{1,4}-\s{1,4}\S")
NOT_FOUND_RE = re.compile(r"^\s{0,4}Unit (?P<unit>[\w@.\-]{1,120}\.service) could not be found\.")
# systemctl start/restart whose job failed (src/shared/bus-wait-for-jobs.c log_job_error_with_service_result:
# "Job for %s failed because %s.", the explanation by the service's Result -- exit-code, timeout,
# signal, core-dump, protocol, resources, watchdog, start-limit, oom-kill --, or "Job for %s failed.")
JOB_FAILED_RE = re.compile(r"^\s{0,4}Job for (?P<unit>[\w@.\-]{1,120}\.service) failed(?: because (?P<why>[^\n]{1,160}?))?\.\s*$")
_ACTIVE_RE = re.compile(r"^\s{1,16}Active:\s{1,8}(?P<state>[a-z\-]{2,20})(?:\s{1,4}\((?P<sub>[^)\n]{1,60})\))?")


def parse_systemctl(text, source=SOURCE):
    """-> (facts, findings); never raises. facts: {"units": [{"unit", "service", "active", "sub"}]}
    of the units UNITS names (empty when none was read)."""
    return never_raise(_parse, source, text, source=source)


def _known(unit):
    for rx, what, category, kind in UNITS:
        if rx.search(unit):
            return what, category, kind
    return None


def _parse(text, source=SOURCE):
    units, cur, findings = [], None, []
    for n, line in iter_lines(text):
        m = JOB_FAILED_RE.match(line)
        if m:
            known = _known(m.group("unit"))
            if known:
                units.append({"unit": m.group("unit"), "service": known[0], "active": "failed", "sub": "job failed"})
                findings.append(_job_failed(known, m, line, "%s:%d" % (source, n)))
            continue
        m = NOT_FOUND_RE.match(line)
        if m:
            known = _known(m.group("unit"))
            cur = None
            if known:
                units.append({"unit": m.group("unit"), "service": known[0], "active": "not-found", "sub": None})
                findings.append(_not_found(known, m.group("unit"), line, "%s:%d" % (source, n)))
            continue
        m = HEADER_RE.match(line)
        if m:
            known = _known(m.group("unit"))
            cur = {"unit": m.group("unit"), "service": known[0], "active": None, "sub": None} if known else None
            if cur:
                units.append(cur)
                cur["_known"] = known
            continue
        m = _ACTIVE_RE.match(line)
        if m and cur is not None and cur["active"] is None:
            cur["active"], cur["sub"] = m.group("state"), m.group("sub")
            if cur["active"] != "active":
                findings.append(_not_running(cur, line, "%s:%d" % (source, n)))
    for u in units:
        u.pop("_known", None)
    read = [u for u in units if u["active"]]
    return ({"units": read} if read else {}), findings


def _not_running(u, line, src):
    what, category, kind = u["_known"]
    return finding(kind, "%s (%s) is not running: Active: %s%s" % (
        what, u["unit"], u["active"], " (%s)" % u["sub"] if u["sub"] else ""), category=category,
        severity="warning", name="systemd", evidence=line.strip(), source=src)


def _not_found(known, unit, line, src):
    what, category, kind = known
    needed = kind in _NEEDED_WHERE or "IMEX" in what
    return finding(kind, "%s (%s) is not installed on this node%s" % (
        what, unit, ": on an NVSwitch (HGX 8-GPU) or multi-node NVLink system the GPUs are unusable without "
        "it; elsewhere it is not needed" if needed else ""), category=category,
        severity="warning" if needed else "info", name="systemd", evidence=line.strip(), source=src)


def _job_failed(known, m, line, src):
    what, category, kind = known
    return finding(kind, "%s (%s) failed to start: systemctl's job failed%s" % (
        what, m.group("unit"), " because %s" % m.group("why") if m.group("why") else ""), category=category,
        severity="warning", name="systemd", evidence=line.strip(), source=src)
