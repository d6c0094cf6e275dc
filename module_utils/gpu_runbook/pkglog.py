# SPDX-License-Identifier: Apache-2.0
"""The package manager's logs: when the NVIDIA driver's packages changed, and what changed them.

Known from their sources:

- apt's ``/var/log/apt/history.log`` (apt 3.1, apt-pkg/deb/dpkgpm.cc, 6b128124): each run opens
  with ``Start-Date: %F  %T`` (two blanks, local time), then ``Commandline:``, ``Requested-By:``,
  ``Comment:`` and, per operation, ``Install:`` / ``Reinstall:`` / ``Upgrade:`` / ``Downgrade:`` /
  ``Remove:`` / ``Purge:`` with ``NAME:ARCH (VERSION[, VERSION | , automatic]), ...`` (an upgrade's
  two versions are the old and the new), ``Error:`` when dpkg failed, and ``End-Date:``.
- dpkg's ``/var/log/dpkg.log`` (dpkg c5efef92, lib/dpkg/log.c log_message: ``%Y-%m-%d %H:%M:%S``
  then the message; src/main/help.c log_action: ``ACTION PKG OLD NEW`` for install, upgrade,
  remove, purge, configure, trigproc; ``status STATE PKG VERSION``; ``startup ...``; ``conffile``).

What an SRE reads in them: the driver's user-space libraries upgraded under a loaded kernel module
(unattended-upgrades is the usual hand) leave nvidia-smi and CUDA failing with 'Driver/library
version mismatch' until the node reboots, and Fabric Manager must match the driver exactly. A run
that upgraded, downgraded, installed or removed them is a driver warning that names when and
by what command. The container toolkit (libnvidia-container, nvidia-container-toolkit) is not the
driver, and other packages are not this runbook's business. RPM's logs are not read.

Beside them, the loaded module's own word: ``/proc/driver/nvidia/version`` (open-gpu-kernel-modules
df1c9a3d, kernel-open/nvidia/nv-procfs.c nv_procfs_read_version: ``NVRM version: %s`` with the
module's ID, e.g. 'NVIDIA UNIX Open Kernel Module for x86_64  580.126.09  Release Build ...', then
``GCC version:  %s``). It says which driver runs, not whether it is well: a fact, never a health
reading. When the packages changed to another version than the one loaded, the finding says so."""

import re

from .findings import finding, iter_lines, never_raise

SOURCE = "apt-history.log"
START_RE = re.compile(r"^Start-Date: (?P<when>\d{4}-\d\d-\d\d  \d\d:\d\d:\d\d)\s*$")
TAG_RE = re.compile(r"^(?P<tag>Commandline|Requested-By|Comment|Install|Reinstall|Upgrade|Downgrade|Remove|Purge|"
                     r"Error|End-Date): ?(?P<value>[^\n]*)$")
# a dpkg.log line: its time, then the action and its package (src/main/help.c log_action)
DPKG_RE = re.compile(r"^(?P<when>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) (?P<action>install|upgrade|remove|purge) "
                     r"(?P<pkg>[a-z0-9][a-z0-9+.\-]{0,200}(?::[a-z0-9\-]{1,32})?) (?P<old>\S{1,200}) (?P<new>\S{1,200})\s*$")
DPKG_ANY_RE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (?:install|upgrade|remove|purge|configure|trigproc|"
                         r"status|startup|conffile|disappear) \S")
# /proc/driver/nvidia/version's first line (nv-procfs.c: 'NVRM version: %s', pNVRM_ID)
NVRM_VERSION_RE = re.compile(r"^NVRM version: NVIDIA UNIX (?P<id>[^\n]{0,120}?Kernel Module[^\n]{0,40}?)\s+"
                             r"(?P<v>\d{2,4}\.\d{1,4}(?:\.\d{1,4})?)\b")
GCC_VERSION_RE = re.compile(r"^GCC version:\s")
# one 'NAME:ARCH (VERSION[, VERSION])' of an apt operation
_PKG_RE = re.compile(r"(?P<pkg>[a-z0-9][a-z0-9+.\-]{0,200})(?::[a-z0-9\-]{1,32})? \((?P<v>[^()]{1,400})\)")
# the driver's packages (Debian/Ubuntu and NVIDIA's CUDA repository names), not the container toolkit's
DRIVER_PKG_RE = re.compile(r"^(?:(?:lib)?nvidia-(?!container|docker|settings|prime|modprobe)|libnvidia-(?!container)|"
                           r"libnvidia\d|linux-(?:modules|objects|signatures)-nvidia|cuda-drivers)")
_OPS = {"Install": "installed", "Reinstall": "reinstalled", "Upgrade": "upgraded", "Downgrade": "downgraded",
        "Remove": "removed", "Purge": "purged", "install": "installed", "upgrade": "upgraded", "remove": "removed",
        "purge": "purged"}


def parse_pkglog(text, source=SOURCE):
    """-> (facts, findings); never raises. facts: {"runs": N (apt runs or dpkg sessions read),
    "driver_changes": [{"when", "op", "package", "from", "to", "by"}]}."""
    return never_raise(_parse, source, text, source=source)


def _parse(text, source=SOURCE):
    changes, runs, run, errors, loaded = [], 0, None, [], None
    dpkg_starts, dpkg_actions = 0, False  # dpkg runs: 'startup archives|packages ...' opens each
    for n, line in iter_lines(text):
        m = START_RE.match(line)
        if m:
            runs += 1
            run = {"when": m.group("when").replace("  ", " "), "by": None}
            continue
        if line.startswith("NVRM version: "):
            mv = NVRM_VERSION_RE.match(line)
            if mv:
                loaded = {"version": mv.group("v"), "open": "Open Kernel Module" in mv.group("id"), "line": (n, line)}
            continue
        if DPKG_ANY_RE.match(line) and line[20:28] == "startup ":
            dpkg_starts += 1
        md = DPKG_RE.match(line)
        if md:
            dpkg_actions = True
            if DRIVER_PKG_RE.match(md.group("pkg")):
                changes.append(_change(md.group("when"), _OPS[md.group("action")], md.group("pkg").split(":")[0],
                                       md.group("old"), md.group("new"), None, n, line))
            continue
        mt = TAG_RE.match(line)
        if not mt or run is None:
            continue
        tag, value = mt.group("tag"), mt.group("value").strip()
        if tag == "Commandline":
            run["by"] = value[:200]
        elif tag == "Error":
            errors.append((n, line))
        elif tag in _OPS:
            for mp in _PKG_RE.finditer(value):
                if DRIVER_PKG_RE.match(mp.group("pkg")):
                    vs = [v.strip() for v in mp.group("v").split(",") if v.strip() != "automatic"]
                    old, new = (vs[0], vs[-1]) if tag in ("Upgrade", "Downgrade") else \
                        (None, vs[0]) if tag in ("Install", "Reinstall") else (vs[0], None)
                    changes.append(_change(run["when"], _OPS[tag], mp.group("pkg"), old, new, run["by"], n, line))
    runs += dpkg_starts or int(dpkg_actions)  # a dpkg.log cut above its 'startup' lines: one run
    if not runs and loaded is None:
        return {}, []
    facts = {"runs": runs, "driver_changes": [dict((k, c[k]) for k in ("when", "op", "package", "from", "to", "by"))
                                              for c in changes]}
    if loaded is not None:
        facts["loaded_module"] = {k: loaded[k] for k in ("version", "open")}
    return facts, ([_finding(changes, errors, source, loaded)] if changes else [])


def _version(pkg_version):
    """The driver release of a package version ('580.159-0ubuntu1', '1:580.126.09-1') or None."""
    m = re.match(r"^(?:\d+:)?(\d{2,4}\.\d{1,4}(?:\.\d{1,4})?)", pkg_version or "")
    return m.group(1) if m else None


def _change(when, op, pkg, old, new, by, n, line):
    return {"when": when, "op": op, "package": pkg, "from": old, "to": new, "by": by, "line": (n, line)}


def _finding(changes, errors, source, loaded=None):
    last = changes[-1]
    n, line = last["line"]
    same = [c for c in changes if c["when"] == last["when"]]
    what = ", ".join("%s %s%s" % (c["package"], c["op"], (" %s -> %s" % (c["from"], c["to"]) if c["from"] and c["to"]
                                                         else " %s" % (c["to"] or c["from"])))
                     for c in same[:4]) + (" and %d more" % (len(same) - 4) if len(same) > 4 else "")
    msg = ("the NVIDIA driver's packages changed %d time(s); the last at %s (local time)%s: %s. A loaded kernel module "
           "keeps its old version until the node reboots: nvidia-smi and CUDA fail with 'Driver/library version "
           "mismatch' meanwhile, and Fabric Manager must match the driver exactly" % (
               len(changes), last["when"], " by %s" % last["by"] if last["by"] else "", what))
    now = _version(last["to"])
    if loaded and now and now != loaded["version"]:
        msg += "; the loaded kernel module is %s (%s:%d), not %s" % (loaded["version"], source, loaded["line"][0], now)
    if errors:
        msg += "; apt reported an error (%s)" % errors[-1][1].strip()[:160]
    return finding("driver_packages_changed", msg + ".", evidence=line.strip()[:400], source="%s:%d" % (source, n),
                   count=len(changes))
