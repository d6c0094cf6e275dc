# SPDX-License-Identifier: Apache-2.0
"""The cheap first pass: which lines can matter at all, and raw-line helpers.

The scanner only regex-parses lines that hold one of ``NEEDLES``, so benign lines cost a
C-level substring search and nothing else. ``prefilter`` is pure (a caller may run it on
several cores and merge the results into one scanner); grep -F with the same needles is the
file scanner's fast path (filescan.py).
"""

import re

from ..findings import has_escape, strip_ansi, unpaste

MAX_LINE = 64 * 1024    # longer "lines" (binary junk) are cut; printk lines are <= 1 KiB
SAMPLE_LINES = 20       # leading lines of each file sampled to name its format

# Substrings every interesting line contains. Each needle is one pass over the data
# (~2-3 GB/s), so keep the list short: an OOM kill always logs
# '[Oo]ut of memory: Kill(ed) process' next to its 'oom-kill:' summary. "NVRM: " also keeps the
# GPU identity lines ('GPU at PCI:..: GPU-uuid', 'GPU Board Serial Number: ..', 'GPU <pci>: GPU
# serial number is ..'): a GPU off the bus has no other record of its serial.
# "SXid" keeps NVSwitch errors (nvidia-nvswitchN: SXid ..), "EDAC" the host memory controller's.
# "oom-kill:" keeps the kill's summary (its constraint says global vs cgroup), "Hardware Error]"
# machine checks, "probe with driver"/"probe of " the driver core's probe failures (no NVRM on them),
# "recovery action" Xid 154's action when the journal wrapped it onto a line of its own,
# "XidCriticalError" / ") detected on " an Xid the Kubernetes device plugin or gpud reports,
# "invoked oom-killer" the head of an OOM report whose kill line was cut or rate-limited,
# "[nvidia" a call-trace frame in the NVIDIA driver (a hung task stuck inside it, an oops in it),
# "IO_PAGE_FAULT"/"DMAR: [DMA" the IOMMU refusing a device's DMA (AMD, Intel), "Linux version " a boot
# (the ports train anew: a first 'Link down' long after it is a drop, one while they train is not),
# " carrier" systemd-networkd's 'ib0: Lost carrier' / 'Gained carrier' (an IPoIB link's drops),
# "driver release" the driver's refusal of a GPU it does not support, whose later lines dmesg shows
# indented without their 'NVRM: ' head when the driver printed them as one record ('NVRM: The NVIDIA
# GPU ... (PCI ID: 10de:2330) installed in this system' / '      is not supported by the NVIDIA
# 580.126.09 driver release.').
# "amdgpu": AMD's GPU driver (drivers/gpu/drm/amd): GPUs gpu-runbook does not read are named, never healthy.
# "XID" / "Xid" / "xid": an Xid another program's line names ('Found XID errors: 63', a health check's;
# vocab.xid_named reads it by NVIDIA's catalog).
# The last ones are the words of a failure (vocab/reading.py ERROR_LIKE) and the line heads of the
# node's other emitters (ib_core, ipoib, mlx4): a node line no dedicated reader takes is read
# against the emitters' vocabularies, or quoted when nothing explains it (nodelines.py).
_BASE = ("NVRM: ", "mlx5_c", "AER: ", "of memory: Kill", "blocked for more than", "SXid", "EDAC",
         "oom-kill:", "Hardware Error]", "probe with driver", "probe of ", "recovery action",
         "invoked oom-killer", "[nvidia", "IO_PAGE_FAULT", "DMAR: [DMA",
         "rror", "RROR", "ailed", "AILED", "ailure", "AILURE", "atal", "ATAL", "xception", "imed out", "TIMEOUT",
         "Killed", "killed", "bort", "anic", "egmentation fault", "core dumped", "ib_", "ipoib", "mlx4",
         "oom_reaper", "oom killer", "VM_FAULT_OOM", "total_vm", "XidCriticalError", ") detected on ", "Linux version ",
         " carrier", "driver release", "XID", "Xid", "xid", "amdgpu")


def _with_markers(base):
    """The needles, and the markers of the node's emitters' tables that none of them is part of
    (vocab/index.py: the tables themselves are not loaded)."""
    from ..vocab import markers
    from .nodelines import HOST_TABLES
    extra = [m for m in markers(HOST_TABLES) if len(m) >= 4 and not any(n in m for n in base)]
    return base + tuple(extra)


NEEDLES = _with_markers(_BASE)


def prefilter(block, start=0, end=None):
    """Pure, cheap pass over complete lines block[start:end] (str or bytes, ending with a newline).

    -> (number of lines, [(0-based line index, line) for lines holding a NEEDLE], first lines).
    """
    if end is None:
        end = len(block)
    text = isinstance(block, str)
    nl = "\n" if text else b"\n"
    nul = ("\x00" if text else b"\x00") * NUL_RUN
    spans = set()
    for search in (_FINDERS_S if text else _FINDERS_B):
        pos = search(block, start, end)
        while pos >= 0:
            s = block.rfind(nl, start, pos) + 1 or start
            e = block.find(nl, pos, end)
            if e < 0:
                e = end
            k = block.rfind(nul, s, pos)  # a run of NULs before the message starts it (nul_parts)
            if k >= 0:
                s = k + NUL_RUN
            k = block.find(nul, pos, e)
            next_pos = e + 1
            if k >= 0:
                e, next_pos = k, k + NUL_RUN
            spans.add((s, e))
            pos = search(block, next_pos, end)
    hits = []
    idx, prev = 0, start
    for s, e in sorted(spans):  # counting between hits doubles as the line count: one pass
        idx += block.count(nl, prev, s)
        prev = s
        hits.append((idx, own(block[s:min(e, s + MAX_LINE)] if e - s <= MAX_LINE else _around(block, s, e))))
    head = [own(x) for x in block[start:min(end, start + 16 * 1024)].split(nl, SAMPLE_LINES)[:SAMPLE_LINES]]
    return idx + block.count(nl, prev, end), hits, head


NUL_RUN = 16  # NULs in a row that end a message (fewer are dropped from it, as clean() does)


def nul_parts(line):
    """The messages of one line (str or bytes) a run of NUL_RUN or more NULs separates: a log a
    crash left NULs in (blocks the file system allocated but never wrote) goes on after them,
    glued to the next message; that message is read as a line of its own (the same line
    number: it is the file's line), never lost inside a giant 'line'."""
    nul = "\x00" if isinstance(line, str) else b"\x00"
    return [p.strip(nul) for p in line.split(nul * NUL_RUN) if p.strip(nul)]


def _around(block, s, e):
    """A line longer than MAX_LINE: its last MAX_LINE characters (a message that junk ran into
    is at its end)."""
    return block[max(s, e - MAX_LINE):e]


def has_needle(line):
    """True when a single line (str or bytes) holds one of the NEEDLES."""
    for n in (NEEDLES if isinstance(line, str) else NEEDLES_B):
        if n in line:
            return True
    return False


def clean(line):
    """A raw line without ANSI colour, NULs and its line end."""
    if has_escape(line):
        line = strip_ansi(line)
    if "\x00" in line:
        line = line.replace("\x00", "")
    return unpaste(line.rstrip("\r\n"))


def same_type(pending, data):
    """``pending`` (str or bytes) converted to the type of ``data``."""
    if isinstance(data, str):
        return pending.decode("utf-8", "replace")
    return pending.encode("utf-8", "replace")


def own(b):
    """A copy of a slice of a caller's reusable buffer (bytearray); str and bytes are immutable."""
    return bytes(b) if isinstance(b, bytearray) else b


def _finder(needle):
    # re's literal search beats bytes.find for short needles (memchr on the first byte);
    # find wins for long ones (big skips).  Measured on CPython 3.11, both >2 GB/s.
    if len(needle) >= 12:
        return lambda buf, pos, end: buf.find(needle, pos, end)
    rx = re.compile(re.escape(needle))

    def search(buf, pos, end):
        m = rx.search(buf, pos, end)
        return m.start() if m else -1
    return search


NEEDLES_B = tuple(n.encode() for n in NEEDLES)
_FINDERS_S = tuple(_finder(n) for n in NEEDLES)
_FINDERS_B = tuple(_finder(n) for n in NEEDLES_B)
