# SPDX-License-Identifier: Apache-2.0
"""The node's log lines no dedicated reader of the scanner used: the kernel's (NVRM, mlx5,
ib_core, ipoib, EDAC, MCE ...) and the node daemons' through syslog or journald (slurmd,
NHC, DCGM's nv-hostengine, Fabric Manager, nvidia-persistenced), and their own log files
(Fabric Manager's ``[Feb 27 2025 15:10:02] [ERROR] [tid N] ...``, slurmd's
``[2026-12-02T07:10:01.123] error: ...``).

A line one of the node's emitters' vocabularies explains (vocab/: the NVIDIA driver, NVIDIA's
Xid catalog, Linux, Slurm, NHC, DCGM, Fabric Manager) is recorded as that message (benign
ones are explained and keep nothing); an error-like line about what this runbook reads (GPU,
driver, InfiniBand, NVSwitch, host memory and machine checks, the scheduler's and the health
checkers' words) that nothing explains is kept and quoted: not understood, never healthy.
Another program's error (a desktop session, a disk) says nothing of what gpu-runbook checks
and is left alone.
"""

import re

from .. import vocab
from ..linefamily import NHC_DEBUG_RE
from .timestamps import TS_RE
from ..vocab.reading import error_like

HOST_TABLES = ("nvrm", "xid", "linux", "slurm", "nhc", "dcgm", "fabricmanager", "nvml", "container", "opensm",
               "dcgmlog", "k8sdp")

# systemd's own lines about a unit ('nvidia-fabricmanager.service: Control process exited, code=exited,
# status=1/FAILURE', "Failed with result 'exit-code'", 'Failed to start ...'): the unit's state, not
# why; the unit's own lines (the program we read) say why, so they are not quoted as unexplained
SYSTEMD_RE = re.compile(r" systemd\[1\]: |^systemd\[1\]: ")


def _shipped():  # pragma: no cover -- never called
    """The node's tables, imported where Ansible's module_utils finder sees them (it follows
    imports, not importlib), so they travel with the module; vocab.table loads one on the first
    line that holds one of its markers (compiled from source on the node only then)."""
    from ..vocab import container, dcgm, dcgmlog, fabricmanager, linux, nhc, nvml, nvrm  # noqa: F401
    from ..vocab import k8sdp, opensm, slurm, xid  # noqa: F401

# what this runbook reads, in a node's line: an error about anything else is not its business
DOMAIN_RE = re.compile(r"(?i)nvidia|nvrm|\bgpu|amdgpu|amdkfd|cuda|nccl|mlx[45]|infiniband|\bib[_\d]|ipoib|rdma|\bhca\b|nvswitch|"
                       r"nvlink|fabric.?manager|\bfm\b|dcgm|hostengine|\bedac\b|\bmce\b|machine check|hardware error|"
                       r"slurm|\bnhc\b|health check|pcieport|\baer\b|out of memory|\boom\b|blocked for more than")
# the same words on the line in lower case, behind plain substrings each of them holds: a regex of
# 30 case-blind branches costs ~80 us a line, and most error-like lines of a busy node (a disk's,
# Lustre's) are about none of them
_DOMAIN_LOW = re.compile(DOMAIN_RE.pattern[len("(?i)"):])
_DOMAIN_NEEDLES = ("nvidia", "nvrm", "gpu", "amdkfd", "cuda", "nccl", "mlx", "infiniband", "ib", "rdma", "hca",
                   "nvswitch", "nvlink", "fabric", "fm", "dcgm", "hostengine", "edac", "mce", "machine check",
                   "hardware error", "slurm", "nhc", "health check", "pcieport", "aer", "out of memory", "oom",
                   "blocked for more than")


def in_domain(text):
    """True when a line names what this runbook reads (DOMAIN_RE)."""
    low = text.lower()
    for needle in _DOMAIN_NEEDLES:
        if needle in low:
            return _DOMAIN_LOW.search(low) is not None
    return False


_READ = {}        # (key, dedicated) -> what read() said: a node repeats its messages word for word
_READ_KEPT = 4096
_DIGITS = re.compile(r"\d")


def read(text, dedicated):
    """``_read``, once per distinct line (a pure function of it): lines that differ only in the
    digits of their time stamp, which no rule reads, are one."""
    m = TS_RE.match(text)
    key = ((_DIGITS.sub("", m.group(0)), text[m.end():]) if m else text, dedicated)
    found = _READ.get(key, _READ)
    if found is _READ:
        if len(_READ) >= _READ_KEPT:
            _READ.clear()
        found = _READ[key] = _read(text, dedicated)
    return found


def _read(text, dedicated):
    """What one line is, when no dedicated reader made an event of it: (table, row) of the
    message that explains it, "unexplained", or None. ``dedicated``: a dedicated reader saw the
    line (a detail line of an AER report or a machine check, an mlx5 command's chatter): it is
    no line nothing explains. (A message of a kind a dedicated reader found for the host is
    said once, by that reader: the scanner leaves those records out of its findings.)"""
    if NHC_DEBUG_RE.match(text):
        return None  # NHC's debug output (nhc -d): what it runs, not what it found
    m = vocab.match_line(text, HOST_TABLES)
    if m is not None:
        return m
    if not dedicated and in_domain(text) and error_like(text) and not SYSTEMD_RE.search(text) and \
            not vocab.continues_a_message(text, HOST_TABLES):
        return "unexplained"
    return None
