# SPDX-License-Identifier: Apache-2.0
"""The streaming kernel-log scanner: feed it lines, chunks (str or bytes, lines may span
them) or prefiltered blocks, from one file or several, then ask for ``result()``.

Memory is bounded by the distinct keys seen (MAX_KEYS per table), never by the log's size.
"""

from bisect import bisect_left
from datetime import datetime, timedelta

from ..findings import normalize_pci
from ..vocab.reading import Seen
from ..timeutil import UTC, iso, parse_tz
from . import derive
from .driverlog import DriverLog
from .identity import GpuIdentities
from . import nodelines
from .aer import read_aer
from .xidread import read_gpud_xid, read_plugin_xid, read_xid, read_xid_continued
from .hosts import slurm_nodes
from .nodelog import NodeLog, count_line
from .patterns import AER_DETAIL_RE, CARRIER_RE, MLX_RE, NVRM_PCI_RE, PORT_RE, XID_WORD_RE, mlx5_event, nvrm_gpu_event
from .prefilter import MAX_LINE, SAMPLE_LINES, clean, has_needle, own, prefilter, same_type
from ..linefamily import line_family
from .timestamps import TS_RE, line_format, parse_since, ts_from_match

MAX_EVENTS = 200        # timeline keeps the first N events, counts the rest
MAX_KEYS = 4096         # cap on any per-key table (garbage must not grow memory)
_CLOCK_SLACK = timedelta(days=1)  # a node's clock or zone a little ahead is not next year


def _year_before(dt):
    try:
        return dt.replace(year=dt.year - 1)
    except ValueError:  # 29 Feb of a leap year: the year before has none
        return dt.replace(year=dt.year - 1, day=28)


class KernelLogScanner:
    """Streaming kernel-log scanner: ``feed(line)`` or ``feed_chunk(data)``, then ``result()``.

    ``tz``: the zone of the node that wrote the log (a tzinfo, '+09:00', 'Asia/Seoul'); times
    written without one are read in it, and every time is emitted in it (UTC when None).
    ``since``: events before it are left out; a since without a zone is in ``tz`` too."""

    def __init__(self, source="kern.log", since=None, year=None, max_events=MAX_EVENTS, tz=None):
        self.source = source
        self.tz_error = self.since_error = None
        try:
            self.zone = parse_tz(tz) or UTC
        except ValueError as exc:
            self.zone, self.tz_error = UTC, str(exc)
        try:
            self.since = parse_since(since, self.zone)
        except (ValueError, TypeError, OverflowError) as exc:
            self.since, self.since_error = None, str(exc)
        # BSD syslog has no year: ``year`` is that year (an int) or the capture's own time (a
        # datetime, e.g. the file's mtime); a line that would fall later than that time (or
        # than now) is a year older -- 'Dec 31' read on Jan 1 is last year's
        self.reference = datetime.now(self.zone)
        if isinstance(year, datetime):
            self.reference = min(self.reference, year if year.tzinfo else year.replace(tzinfo=self.zone))
            year = None if self.since else self.reference.astimezone(self.zone).year
        try:
            self.year = int(year)
        except (TypeError, ValueError):
            self.year = self.since.astimezone(self.zone).year if self.since else self.reference.year
        self.max_events = max_events
        self.lines = 0
        self.cut_lines = 0          # lines longer than MAX_LINE (their tail was read): filescan says so
        self.kernel_lines = 0       # lines that are the kernel's (sampled head lines, read lines): a text
        # none of whose lines is the kernel's is not a kernel log, whatever its name
        self.node_lines = 0         # the node's other programs' lines (syslog, journald, a daemon's log)
        self.slurm_lines = 0        # Slurm's lines about this node (a controller's log): read, but no
        # kernel log of the node (its health is not read from them)
        self._pending = None        # head of a line split across chunks
        self._segments = [(0, source)]  # (lines before it, source name): one per file read
        self._formats = {}
        self._hostname = None
        self._xids = {}             # (code, pci) -> record
        self._bad_xid = {}          # None -> the counted record of Xid lines that could not be read
        self._ids = GpuIdentities(MAX_KEYS)  # pci -> GPU uuid and board serial
        self._gpu_pcis = set()
        self._gpu_events = {}       # (kind, pci) -> record (off the bus, init failed)
        self._drv = DriverLog(MAX_KEYS)  # driver messages without an Xid, NVSwitch SXids, EDAC
        self._ib = {}               # mlx5 pci -> counters
        self._boot = None           # the last boot the log shows ('Linux version ...'): its time
        self._ib_names = {}         # mlx5 pci -> mlx5_N
        self._aer = {}              # (class, pci) -> record
        self._aer_header = None     # (line, source pci, record) of the last AER header line
        self._known = False         # the line being read is a dedicated reader's own message
        self._hcas = set()          # PCI addresses the log knows as mlx5 HCAs
        self._node = NodeLog(MAX_KEYS)  # OOM kills, hung tasks, machine checks
        self._last_xid = None       # (record, line) of the last Xid (a wrapped Xid 154 continues it)
        self._seen = Seen()         # lines no dedicated reader used: emitters' messages, what nothing explains
        self._nvidia_lines = 0      # the NVIDIA driver's lines (NVRM, a frame in it)
        self._other_gpu = None      # (line, text) of the first line of another vendor's GPU driver (amdgpu)
        self._events = []
        self.dropped_events = 0
        self.excluded = 0           # events before ``since``
        self.untimed = 0            # events with no absolute time (window not applicable)
        self._overflow = 0          # keys refused by MAX_KEYS

    # -- input -------------------------------------------------------------------
    def begin_source(self, source):
        """The lines that follow come from another file, named ``source``: findings name it,
        numbering its lines from 1 ("dmesg.txt:12"). Ends the previous file's last line."""
        self.close()
        self._aer_header = self._last_xid = None  # line proximity does not cross files
        self._node.reset()
        self._ids.reset()
        self._drv.reset()
        if self.lines == self._segments[-1][0]:
            self._segments[-1] = (self.lines, source)  # nothing was read under the last name
        else:
            self._segments.append((self.lines, source))

    def _in_head(self, lineno):
        """True for the first lines of the current file (sampled to name its format)."""
        return lineno - self._segments[-1][0] <= SAMPLE_LINES

    def feed(self, line):
        """One line (str or bytes, trailing newline optional)."""
        self.lines += 1
        if self._in_head(self.lines):
            self._sample(line)
        if has_needle(line):
            self._handle(self.lines, line)

    def feed_chunk(self, data):
        """Any block of the log (str or bytes); lines may span chunks."""
        if not data:
            return
        if isinstance(data, memoryview):
            data = data.tobytes()
        nl = "\n" if isinstance(data, str) else b"\n"  # bytearray welcome: readinto() callers
        start = 0
        if self._pending is not None:
            if isinstance(self._pending, str) is not isinstance(data, str):
                self._pending = same_type(self._pending, data)
            as_own = bytes if nl == b"\n" else (lambda x: x)
            i = data.find(nl)
            if i < 0:
                if len(self._pending) < MAX_LINE:
                    self._pending += as_own(data[:MAX_LINE - len(self._pending)])
                return
            head = self._pending + as_own(data[:min(i, MAX_LINE)])
            self._pending = None
            self.feed(head[:MAX_LINE])
            start = i + 1
        cut = data.rfind(nl, start)
        # the caller may reuse its buffer: keep copies (bytes), never views
        if cut < 0:
            self._pending = own(data[start:start + MAX_LINE])
            return
        if cut + 1 < len(data):
            self._pending = own(data[cut + 1:cut + 1 + MAX_LINE])
        self.feed_prefiltered(*prefilter(data, start, cut + 1))

    def feed_prefiltered(self, nlines, hits, head=()):
        """Merge one ``prefilter()`` result; blocks must come in file order.

        Lets a caller run ``prefilter`` on several cores (it is pure) and keep one scanner.
        """
        base = self.lines
        for ln in head[:max(0, SAMPLE_LINES - (base - self._segments[-1][0]))]:
            self._sample(ln)
        for idx, line in hits:
            self._handle(base + idx + 1, line)
        self.lines = base + nlines

    def close(self):
        """Flush a last line that had no newline."""
        if self._pending is not None:
            head, self._pending = self._pending, None
            if head:
                self.feed(head)

    def _sample(self, line):
        if not isinstance(line, str):
            line = line[:512].decode("utf-8", "replace")
        line = clean(line[:512])
        if not line.strip():
            return
        fmt, host = line_format(line, self.year)
        if host and self._hostname is None:
            self._hostname = host
        self._formats[fmt] = self._formats.get(fmt, 0) + 1
        self._count(line_family(line))

    # -- parsing of a hit line ----------------------------------------------------------
    def _handle(self, lineno, raw):
        if not isinstance(raw, str):
            raw = raw.decode("utf-8", "replace")
        line = clean(raw)
        m = TS_RE.match(line)
        if m:
            dt, mono, fmt, host = ts_from_match(m, self.year, self.zone)
            if fmt == "syslog" and dt is not None and dt > self.reference + _CLOCK_SLACK:
                dt = _year_before(dt)
            if host and self._hostname is None:
                self._hostname = host
        else:
            dt, mono, fmt = None, None, "bare"
        family = line_family(line)
        node = family is not None
        about = not node and bool(slurm_nodes(line))  # a Slurm line about a node is that node's
        if not self._in_head(lineno):  # the first lines were tallied by _sample already
            self._formats[fmt] = self._formats.get(fmt, 0) + 1
            self._count(family)
        if about:
            self.slurm_lines += 1
        node = node or about
        when = iso(dt.astimezone(self.zone)) if dt is not None else mono
        ctx = (lineno, line, dt, when)
        if family == "kernel" and "Linux version " in line:
            self._booted(ctx)
        before = len(self._events) + self.dropped_events
        self._known = False
        dedicated = self._dedicated(ctx)
        made = len(self._events) + self.dropped_events != before
        if made and not node and not about:
            self.kernel_lines += 1  # the kernel's message under a prefix no log format has ('19:14:43  NVRM: Xid ..')
        if node and not made and not self._known:
            self._node_line(ctx, dedicated)

    def _booted(self, ctx):
        """A boot: every HCA's links come up anew (a 'Link down' while a port trains is not a drop)."""
        self._boot = ctx[2] if ctx[2] is not None else ctx[3]
        for rec in self._ib.values():
            rec["last_state"], rec["boot"] = None, self._boot

    def _dedicated(self, ctx):
        """The scanner's own readers; -> True when one of them took the line up."""
        line = ctx[1]
        taken = True
        if "NVRM" in line or "[nvidia" in line:
            self._nvidia_lines += 1
        elif "amdgpu" in line and self._other_gpu is None and derive.AMDGPU_RE.search(line):
            self._other_gpu = (ctx[0], line)
        if "NVRM" in line:
            # what the NVRM reader did not know (an event made, its own message) is the vocabulary's,
            # or unexplained: the driver's words are never passed over in silence
            self._nvrm(ctx)
            taken = False
        elif line[:1] in (" ", "\t") and self._drv.continues(ctx):
            # an NVRM message's later line pasted without its 'NVRM:' head, indented under it
            # ('NVRM: The NVIDIA GPU ... (PCI ID: 10de:2330) installed in this system' /
            # '      is not supported by the NVIDIA 580.126.09 driver release.'): its message's
            self._known = True
        elif "mlx5" in line:
            # an event made is the reader's; a line it passed over is the vocabulary's to explain, or
            # unexplained when it is an error: never read as healthy in silence
            self._mlx5(ctx)
            taken = False
        elif " carrier" in line and "systemd-networkd" in line:
            taken = self._carrier(ctx)
        elif "probe" in line:
            self._note(ctx, self._drv.kprobe(ctx, self._in_window))
        elif "recovery action" in line:
            read_xid_continued(self, ctx)
        elif "XidCriticalError" in line:
            read_plugin_xid(self, ctx)
        elif ") detected on " in line and "XID " in line:
            read_gpud_xid(self, ctx)
        else:
            taken = False
        if "AER:" in line or "PCIe Bus Error" in line or self._aer_detail(ctx):
            # also 'mlx5_core <pci>: AER: ...' from the HCA itself; kernels before 4.19 print the
            # report's detail lines without the 'AER: ' head
            read_aer(self, ctx)
        elif ("of memory: Kill" in line or "oom-kill:" in line or "blocked for more than" in line
              or "Hardware Error]" in line or "invoked oom-killer" in line or "[nvidia" in line
              or "IO_PAGE_FAULT" in line or "DMAR: [DMA" in line):
            self._note(ctx, self._node.feed(ctx, self._in_window))
        elif "SXid" in line:
            self._note(ctx, self._drv.sxid(ctx, self._in_window))
        elif "EDAC" in line:
            self._note(ctx, self._drv.edac(ctx, self._in_window))
        else:
            return taken
        return True

    def _count(self, family):
        """A node line (linefamily.line_family): the kernel's (a kernel log was read), another
        program's of the node, or a Slurm daemon's (its log is no account of a node's health)."""
        if family == "kernel":
            self.kernel_lines += 1
        elif family == "slurm":
            self.slurm_lines += 1
        elif family == "node":
            self.node_lines += 1

    def _aer_detail(self, ctx):
        """An unprefixed detail line of the AER report just above ('device [8086:9d15] error
        status/mask=..', '[ 0] Receiver Error')."""
        h = self._aer_header
        return h is not None and 0 < ctx[0] - h[0] <= 8 and AER_DETAIL_RE.search(ctx[1]) is not None

    def _node_line(self, ctx, dedicated):
        """A node line no dedicated reader made an event of (nodelines.py), in the window."""
        if self.since is not None and ctx[2] is not None and ctx[2] < self.since:
            return
        found = nodelines.read(ctx[1], dedicated)
        if found is None:
            return
        if found == "unexplained":
            self._seen.line(ctx[1], self.sref(ctx[0]), ctx[1][:1000])
            return
        tbl, row = found
        if row["kind"] != "benign":
            self._seen.message(tbl, row, self.sref(ctx[0]), ctx[1][:1000], when=ctx[3])
            self._event(ctx, "logged")

    def _note(self, ctx, kind):
        if kind:
            self._event(ctx, kind)

    def _gpu(self, pci):
        if len(self._gpu_pcis) < MAX_KEYS:
            self._gpu_pcis.add(pci)

    def _in_window(self, ctx):
        """False (and counted) when the event is before ``since``."""
        if self.since is None:
            return True
        if ctx[2] is None:
            self.untimed += 1
            return True
        if ctx[2] < self.since:
            self.excluded += 1
            return False
        return True

    def _event(self, ctx, kind):
        if len(self._events) < self.max_events:
            self._events.append({"time": ctx[3], "kind": kind, "line": ctx[0], "text": ctx[1][:400]})
        else:
            self.dropped_events += 1

    def _bump(self, table, key, ctx, **init):
        """Count one occurrence under key (first/last time, first line); None when full."""
        rec = count_line(table, key, ctx, MAX_KEYS, init)
        if rec is None:
            self._overflow += 1
        return rec

    def _nvrm(self, ctx):
        line = ctx[1]
        if "Xid" in line and XID_WORD_RE.search(line):
            read_xid(self, ctx)
            return
        pci = self._ids.feed(ctx)  # 'GPU at PCI:..: GPU-uuid', 'GPU Board Serial Number: ..'
        if pci is not None:
            self._known = True
            if pci:
                self._gpu(pci)
            return
        kind = nvrm_gpu_event(line)
        if kind is None:
            before = len(self._drv.events)
            if self._drv.nvrm(ctx, self._in_window):
                self._known = True  # the driver reader's own message (a repeat, a continuation): its to say
                if len(self._drv.events) > before:
                    self._event(ctx, "driver")
            return
        self._drv.reset()
        if not self._in_window(ctx):
            return
        pm = NVRM_PCI_RE.search(line)
        pci = normalize_pci(pm.group("pci")) if pm else None
        if pci:
            self._gpu(pci)
        self._bump(self._gpu_events, (kind, pci), ctx, kind=kind, pci=pci)
        self._event(ctx, kind)

    def _mlx5(self, ctx):
        line = ctx[1]
        m = MLX_RE.search(line)
        if not m:
            return
        pci = normalize_pci(m.group("pci"))
        dev = m.group("dev")
        self._hca(pci)
        if dev and dev.startswith("mlx5_") and len(self._ib_names) < MAX_KEYS:
            self._ib_names[pci] = dev
        msg = m.group("msg")
        kind = mlx5_event(msg)
        if kind is None and "firmware version" in msg and pci in self._ib:
            derive.link_transition(self._ib[pci], "driver_load", ctx)  # the driver (re)loaded: ports train anew
            return
        if kind is None or not self._in_window(ctx):
            return
        rec = self._ib_record(pci, pci)
        if rec is None:
            return
        if dev and not dev.startswith("mlx5_"):
            rec["netdev"] = rec["netdev"] or dev
        pm = PORT_RE.search(msg)
        if pm and rec["port"] is None:
            rec["port"] = int(pm.group(1))
        self._ib_event(rec, kind, ctx)

    def _carrier(self, ctx):
        """systemd-networkd's carrier change of an IPoIB netdev (patterns.CARRIER_RE), a link record
        of its own (keyed by the netdev: no PCI address in the line)."""
        m = CARRIER_RE.search(ctx[1])
        if m is None:
            return False
        if not self._in_window(ctx):
            return True
        dev = m.group("dev")
        rec = self._ib_record(dev, None, netdev=dev)
        if rec is not None:
            lost = m.group("what") != "Gained"
            self._ib_event(rec, "link_down" if lost else "link_up", ctx,
                           transition="carrier_lost" if lost else "carrier_gained")
        return True

    def _ib_record(self, key, pci, netdev=None):
        """The link record of an HCA (keyed by its PCI address) or of a netdev; None when full."""
        rec = self._ib.get(key)
        if rec is None:
            if len(self._ib) >= MAX_KEYS:
                self._overflow += 1
                return None
            rec = self._ib[key] = {"pci": pci, "port": None, "netdev": netdev, "last_state": None, "boot": self._boot,
                                   "cable": None, "drops": 0, "unplugs": 0,
                                   "first_line": {}, "evidence": {}, "counts": {}, "seen": {}}
        return rec

    def _ib_event(self, rec, kind, ctx, transition=None):
        """Count one link event of ``rec`` (how often and when, for the findings) and apply its
        state change (derive.link_transition: ``transition``, else ``kind``)."""
        rec["counts"][kind] = rec["counts"].get(kind, 0) + 1
        count_line(rec["seen"], kind, ctx, derive.SEEN_KEYS, {})
        if kind not in rec["first_line"]:
            rec["first_line"][kind] = ctx[0]
            rec["evidence"][kind] = ctx[1][:1000]
        derive.link_transition(rec, transition or kind, ctx)
        self._event(ctx, "ib_" + kind)

    def _hca(self, pci):
        if len(self._hcas) < MAX_KEYS:
            self._hcas.add(pci)

    # -- output -------------------------------------------------------------------
    def sref(self, line):
        """'<file>:<line in that file>' of a line number counted across every file fed."""
        starts = [s for s, _ in self._segments]
        i = max(0, bisect_left(starts, line) - 1)
        start, name = self._segments[i]
        return "%s:%d" % (name, line - start)

    def result(self):
        """-> (facts, findings). Ends the stream (flushes an unterminated last line); repeatable."""
        self.close()
        sref = self.sref
        xids = sorted(self._xids.values(), key=lambda r: r["line"])
        gsp = any(k == "gsp_error" for k, _ in self._drv.events)
        findings = derive.xid_findings(xids, self._ids, sref, gsp_trouble=gsp)
        if self._bad_xid:
            findings.append(derive.bad_xid_finding(self._bad_xid[None], sref))
        findings.extend(derive.gpu_event_findings(self._gpu_events, self._ids, sref))
        findings.extend(self._drv.findings(sref, self._ids, {r["xid"] for r in xids}))
        ib_findings, ib_devices = derive.ib_findings(self._ib, self._ib_names, sref)
        findings.extend(ib_findings)
        findings.extend(derive.aer_findings(self._aer, self._gpu_pcis, sref, self._ids,
                                            hcas=(self._hcas, self._ib_names)))
        findings.extend(self._node.findings(sref))
        findings.extend(self._seen.findings(set(f.get("evidence") for f in findings),
                                            covered=set(f["kind"] for f in findings)))
        findings.extend(self._log_findings())
        findings.extend(derive.other_vendor_gpu(self._other_gpu, self._nvidia_lines, sref))
        facts = self._facts(xids, ib_devices)
        facts.update(self._drv.facts())
        facts.update(self._node.facts())
        return facts, findings

    def _log_findings(self):
        """What is wrong with the log or the call itself, not with the node."""
        unread = (self._formats and self._format() in ("unknown", "bare") and not self._events and not self.dropped_events
                  and not self.kernel_lines and not self.node_lines and not self.slurm_lines)
        return derive.log_findings(self.tz_error, self.since_error, unread, self.lines, self.source)

    def _facts(self, xids, ib_devices):
        aer = sorted(self._aer.items(), key=lambda kv: kv[1]["line"])
        return {
            "format": self._format(),
            "formats": dict(self._formats),
            "lines": self.lines,
            "kernel_lines": self.kernel_lines,
            "node_lines": self.node_lines,
            "slurm_lines": self.slurm_lines,
            "hostname": self._hostname,
            "tz": str(self.zone),
            "xids": [dict({k: r[k] for k in ("xid", "pci", "pid", "process", "message", "count", "first", "last",
                                             "line", "index", "processes", "odd")}, source=self.sref(r["line"]))
                     for r in xids],
            "gpus": self._ids.facts(self._gpu_pcis),  # {pci: {uuid, serial}}: gpu_catalog reads it
            "events": [dict(e, source=self.sref(e["line"])) for e in self._events],
            "events_dropped": self.dropped_events,
            "window": {"since": iso(self.since.astimezone(self.zone)) if self.since else None,
                       "applied": self.since is not None and self.untimed == 0,
                       "excluded": self.excluded, "untimed": self.untimed, "year": self.year},
            "ib_events": {"devices": ib_devices,
                          "total": sum(sum(r["counts"].values()) for r in self._ib.values())},
            "aer": [{"class": cls, "pci": pci, "count": r["count"], "line": r["line"]} for (cls, pci), r in aer],
            "keys_dropped": self._overflow + self._drv.overflow + self._node.overflow,
        }

    def _format(self):
        if not self.lines:
            return "empty"
        known = [f for f in self._formats if f not in ("bare", "unknown")]
        if len(known) == 1:
            return known[0]
        if len(known) > 1:
            return "mixed"
        return "bare" if "bare" in self._formats and self._events else "unknown"
