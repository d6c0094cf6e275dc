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
from ..vocab.reading import error_like

HOST_TABLES = ("nvrm", "xid", "linux", "slurm", "nhc", "dcgm", "fabricmanager", "nvml", "container", "opensm")

# systemd's own lines about a unit ('nvidia-fabricmanager.service: Control process exited, code=exited,
# status=1/FAILURE', "Failed with result 'exit-code'", 'Failed to start ...'): the unit's state, not
# why; the unit's own lines (the program we read) say why, so they are not quoted as unexplained
SYSTEMD_RE = re.compile(r" systemd\[1\]: |^systemd\[1\]: ")


def _shipped():  # pragma: no cover -- never called
    """The node's tables, imported where Ansible's module_utils finder sees them (it follows
    imports, not importlib), so they travel with the module; vocab.table loads one on the first
    line that holds one of its markers (compiled from source on the node only then)."""
    from ..vocab import container, dcgm, fabricmanager, linux, nhc, nvml, nvrm, opensm, slurm, xid  # noqa: F401

# what this runbook reads, in a node's line: an error about anything else is not its business
DOMAIN_RE = re.compile(r"(?i)nvidia|nvrm|\bgpu|amdgpu|amdkfd|cuda|nccl|mlx[45]|infiniband|\bib[_\d]|ipoib|rdma|\bhca\b|nvswitch|"
                       r"nvlink|fabric.?manager|\bfm\b|dcgm|hostengine|\bedac\b|\bmce\b|machine check|hardware error|"
                       r"slurm|\bnhc\b|health check|pcieport|\baer\b|out of memory|\boom\b|blocked for more than")


def read(text, dedicated):
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
    if not dedicated and error_like(text) and DOMAIN_RE.search(text) and not SYSTEMD_RE.search(text) and \
            not vocab.continues_a_message(text, HOST_TABLES):
        return "unexplained"
    return None
