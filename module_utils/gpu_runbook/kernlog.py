"""Kernel-log parser: NVRM Xid, GPU-off-the-bus, mlx5 link/health, PCIe AER, OOM, hung tasks.

Reads dmesg (raw seconds, -T, --time-format iso, --decode), journalctl -k (short,
short-iso) and /var/log/kern.log (BSD and RFC 3339 syslog), mixed in one file.
``KernelLogScanner`` streams (lines or arbitrary chunks, str or bytes) in memory bounded
by the distinct keys seen; ``parse_kernel_log`` is the one-shot wrapper.
Times without a zone (dmesg -T, BSD syslog) are taken as UTC; BSD syslog has no year, so
``year`` (default: the year of ``since``, else this year) supplies it.  Lines split on '\n'.
"""

import re
from datetime import datetime, timedelta, timezone

from .findings import gpu_ref, ib_ref, make_finding, normalize_pci, strip_ansi
from .xid_catalog import lookup, rung_for_xid154

UTC = timezone.utc
MAX_EVENTS = 200        # timeline keeps the first N events, counts the rest
MAX_KEYS = 4096         # cap on any per-key table (garbage must not grow memory)
MAX_LINE = 64 * 1024    # longer "lines" (binary junk) are cut; printk lines are <= 1 KiB
_SAMPLE_LINES = 20      # leading lines sampled to name the format

# Substrings every interesting line contains.  The scanner only regex-parses lines that
# hold one of them, so benign lines cost a C-level substring search and nothing else.
# Each needle is one pass over the data (~2-3 GB/s), so keep the list short: an OOM kill
# always logs '[Oo]ut of memory: Kill(ed) process' next to its 'oom-kill:' summary.
NEEDLES = ("NVRM: ", "mlx5_c", "AER: ", "of memory: Kill", "blocked for more than")

_MONTHS = {m: i for i, m in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1)}

_TS_RE = re.compile(
    r"^(?:[a-z]+ *:[a-z]+ *: )?"                      # dmesg --decode 'kern  :warn  : '
    r"(?:\[(?:[A-Z][a-z]{2} )?(?P<cmon>[A-Z][a-z]{2}) +(?P<cday>\d{1,2}) "
    r"(?P<ctime>\d\d:\d\d:\d\d) (?P<cyear>\d{4})\]"     # dmesg -T
    r"|\[ *(?P<mono>\d+\.\d+)\]"                        # dmesg
    r"|(?P<iso>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d)(?:[.,](?P<frac>\d+))?(?P<tz>Z|[+-]\d\d:?\d\d)?"
    r"|(?P<bmon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +(?P<bday>\d{1,2}) "
    r"(?P<btime>\d\d:\d\d:\d\d))"                      # syslog / journalctl short
    r"(?: +(?P<host>[^\s\[\]]+) kernel(?:\[\d+\])?:)?")
_SINCE_RE = re.compile(
    r"^(\d{4})-(\d\d)-(\d\d)(?:[T ](\d\d):(\d\d)(?::(\d\d)(?:[.,](\d+))?)?)? *(Z|[+-]\d\d:?\d\d)?$")

_PCI = r"[0-9a-fA-F]{2,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?"
_PCI_FULL_RE = re.compile(r"\b([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\b")
_XID_RE = re.compile(r"NVRM: Xid \((?:PCI:)?(?P<pci>" + _PCI + r")\): (?P<code>\d{1,6})(?![\d.])(?P<rest>.*)")
_XID_REST_RE = re.compile(
    r"^(?:, *pid=(?P<pid>'[^']*'|[^,\s]*))?(?:, *name=(?P<name>[^,]*))?(?:, *(?P<msg>.*))?$")
_GPU_IDX_RE = re.compile(r"\bGPU(\d{1,3})\b")
_GPU_UUID_RE = re.compile(r"NVRM: GPU at (?:PCI:)?(?P<pci>" + _PCI + r"): (?P<uuid>GPU-[0-9a-fA-F-]{8,})")
_NVRM_PCI_RE = re.compile(r"NVRM: (?:GPU |Xid \()?(?:at )?(?:PCI:)?(?P<pci>" + _PCI + r")")
_MLX_RE = re.compile(r"mlx5_core (?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])"
                     r"(?: (?P<dev>[^\s:]+))?: (?P<msg>.*)")
_PORT_RE = re.compile(r"\bport:? ?(\d{1,2})\b", re.I)
_LINK_DOWN_RE = re.compile(r"\blink (?:is )?down\b", re.I)
_LINK_UP_RE = re.compile(r"\blink (?:is )?(?:up|active)\b", re.I)
_AER_RE = re.compile(r"AER: (?:Multiple )?(?P<sev>Corrected|Uncorrected \((?:Non-Fatal|Fatal)\)) error"
                     r"(?: message)? received(?: from)?:? *(?P<src>" + _PCI + r")?")
_AER_SEV_RE = re.compile(r"severity=(?P<sev>Corrected|Uncorrected \((?:Non-Fatal|Fatal)\))")
_OOM_RE = re.compile(r"of memory: Kill(?:ed)? process (?P<pid>\d+) \((?P<comm>[^)]*)\)")
_HUNG_RE = re.compile(r"task (?P<comm>.+?):(?P<pid>\d+) blocked for more than (?P<secs>\d+) seconds")
# PyTorch names its DataLoader worker processes/threads so; a worker stuck in the kernel
# (NFS/Lustre I/O) starves the training loop: a DataLoader stall, not a GPU fault.
_DATA_TASK_RE = re.compile(r"^(?:pt_data_worker|pt_data_pin|dataloader|data_worker)", re.I)
_DRIVER_TASK_RE = re.compile(r"^(?:nv|nvidia|UVM|mlx5|ib_|rdma|kworker)", re.I)


def _ts_from_match(m, year):
    """-> (aware datetime | None, dmesg seconds | None, format name, hostname)."""
    g = m.groupdict()
    try:
        if g["cmon"]:
            hh, mm, ss = (int(x) for x in g["ctime"].split(":"))
            dt = datetime(int(g["cyear"]), _MONTHS[g["cmon"]], int(g["cday"]), hh, mm, ss, tzinfo=UTC)
            return dt, None, "dmesg_ctime", None
        if g["mono"]:
            return None, float(g["mono"]), "dmesg", None
        if g["iso"]:
            d = g["iso"]
            dt = datetime(int(d[0:4]), int(d[5:7]), int(d[8:10]), int(d[11:13]), int(d[14:16]), int(d[17:19]),
                          int((g["frac"] or "0")[:6].ljust(6, "0")), tzinfo=_tz(g["tz"]))
            if g["host"]:
                # journald writes '+0000', rsyslog's RFC 3339 '+00:00'
                fmt = "journalctl_short_iso" if g["tz"] and ":" not in g["tz"] else "syslog_rfc3339"
            else:
                fmt = "dmesg_iso"
            return dt.astimezone(UTC), None, fmt, g["host"]
        if g["bmon"]:
            hh, mm, ss = (int(x) for x in g["btime"].split(":"))
            dt = datetime(year, _MONTHS[g["bmon"]], int(g["bday"]), hh, mm, ss, tzinfo=UTC)
            return dt, None, "syslog", g["host"]
    except (ValueError, OverflowError, KeyError):  # 30 Feb, hour 99: no usable time
        pass
    return None, None, "unknown", None


def _tz(s):
    if not s or s == "Z":
        return UTC
    sign = -1 if s[0] == "-" else 1
    digits = s[1:].replace(":", "")
    return timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:4])))


def parse_since(since):
    """ISO 8601 string or datetime -> aware UTC datetime (naive means UTC). Raises ValueError."""
    if since is None:
        return None
    if isinstance(since, datetime):
        return since.replace(tzinfo=UTC) if since.tzinfo is None else since.astimezone(UTC)
    m = _SINCE_RE.match(str(since).strip())
    if not m:
        raise ValueError("since is not an ISO 8601 time: %r" % (since,))
    y, mo, d, hh, mi, ss, frac, tz = m.groups()
    dt = datetime(int(y), int(mo), int(d), int(hh or 0), int(mi or 0), int(ss or 0),
                  int((frac or "0")[:6].ljust(6, "0")), tzinfo=_tz(tz))
    return dt.astimezone(UTC)


def _iso(dt):
    return dt.isoformat() if dt is not None else None


class KernelLogScanner:
    """Streaming kernel-log scanner: ``feed(line)`` or ``feed_chunk(data)``, then ``result()``."""

    def __init__(self, source="kern.log", since=None, year=None, max_events=MAX_EVENTS):
        self.source = source
        self.since_error = None
        try:
            self.since = parse_since(since)
        except (ValueError, TypeError, OverflowError) as exc:
            self.since, self.since_error = None, str(exc)
        try:
            self.year = int(year)
        except (TypeError, ValueError):
            self.year = self.since.year if self.since else datetime.now(UTC).year
        self.max_events = max_events
        self.lines = 0
        self._pending = None        # head of a line split across chunks
        self._formats = {}
        self._hostname = None
        self._xids = {}             # (code, pci) -> record
        self._bad_xid = None        # [count, line, evidence]
        self._uuids = {}            # pci -> GPU uuid
        self._gpu_pcis = set()
        self._gpu_events = {}       # (kind, pci) -> record (off the bus, init failed)
        self._ib = {}               # mlx5 pci -> counters
        self._ib_names = {}         # mlx5 pci -> mlx5_N
        self._aer = {}              # (class, pci) -> record
        self._aer_header = None     # (line, source pci) of the last AER header line
        self._oom = {}              # comm -> record
        self._oom_last = None       # (pid, line) of the last OOM kill line
        self._hung = {}             # comm -> record
        self._events = []
        self.dropped_events = 0
        self.excluded = 0           # events before ``since``
        self.untimed = 0            # events with no absolute time (window not applicable)
        self._overflow = 0          # keys refused by MAX_KEYS

    # -- input -------------------------------------------------------------------
    def feed(self, line):
        """One line (str or bytes, trailing newline optional)."""
        self.lines += 1
        if self.lines <= _SAMPLE_LINES:
            self._sample(line)
        if not isinstance(line, str):
            for n in _NEEDLES_B:
                if n in line:
                    self._handle(self.lines, line)
                    return
        else:
            for n in NEEDLES:
                if n in line:
                    self._handle(self.lines, line)
                    return

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
                self._pending = _same_type(self._pending, data)
            i = data.find(nl)
            if i < 0:
                if len(self._pending) < MAX_LINE:
                    self._pending += bytes(data[:MAX_LINE - len(self._pending)]) if nl == b"\n" else \
                        data[:MAX_LINE - len(self._pending)]
                return
            head = self._pending + bytes(data[:min(i, MAX_LINE)]) if nl == b"\n" else \
                self._pending + data[:min(i, MAX_LINE)]
            self._pending = None
            self.feed(head[:MAX_LINE])
            start = i + 1
        cut = data.rfind(nl, start)
        # the caller may reuse its buffer: keep copies (bytes), never views
        if cut < 0:
            self._pending = _own(data[start:start + MAX_LINE])
            return
        if cut + 1 < len(data):
            self._pending = _own(data[cut + 1:cut + 1 + MAX_LINE])
        self._scan_block(data, start, cut + 1, nl)

    def _scan_block(self, block, start, end, nl):
        self.feed_prefiltered(*prefilter(block, start, end))

    def feed_prefiltered(self, nlines, hits, head=()):
        """Merge one ``prefilter()`` result; blocks must come in file order.

        Lets a caller run ``prefilter`` on several cores (it is pure) and keep one scanner.
        """
        base = self.lines
        for ln in head[:max(0, _SAMPLE_LINES - base)]:
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
        line = _clean(line[:512])
        if not line.strip():
            return
        m = _TS_RE.match(line)
        if m:
            fmt, host = _ts_from_match(m, self.year)[2:]
            if host and self._hostname is None:
                self._hostname = host
        else:
            fmt = "bare"
        self._formats[fmt] = self._formats.get(fmt, 0) + 1

    # -- parsing of a hit line ----------------------------------------------------------
    def _handle(self, lineno, raw):
        if not isinstance(raw, str):
            raw = raw.decode("utf-8", "replace")
        line = _clean(raw)
        m = _TS_RE.match(line)
        if m:
            dt, mono, fmt, host = _ts_from_match(m, self.year)
            if host and self._hostname is None:
                self._hostname = host
        else:
            dt, mono, fmt = None, None, "bare"
        if lineno > _SAMPLE_LINES:  # the first lines were tallied by _sample already
            self._formats[fmt] = self._formats.get(fmt, 0) + 1
        when = _iso(dt) if dt is not None else mono
        ctx = (lineno, line, dt, when)
        if "NVRM" in line:
            self._nvrm(ctx)
        elif "mlx5" in line:
            self._mlx5(ctx)
        if "AER:" in line:  # also 'mlx5_core <pci>: AER: ...' from the HCA itself
            self._pcie_aer(ctx)
        elif "of memory: Kill" in line:
            self._oom_line(ctx)
        elif "blocked for more than" in line:
            self._hung_line(ctx)

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
        rec = table.get(key)
        if rec is None:
            if len(table) >= MAX_KEYS:
                self._overflow += 1
                return None
            rec = dict(count=0, first=ctx[3], last=ctx[3], line=ctx[0], evidence=ctx[1][:1000])
            rec.update(init)
            table[key] = rec
        rec["count"] += 1
        if ctx[3] is not None:
            if rec["first"] is None:
                rec["first"] = ctx[3]
            rec["last"] = ctx[3]
        return rec

    def _nvrm(self, ctx):
        line = ctx[1]
        if "Xid" in line:
            m = _XID_RE.search(line)
            if not m:
                if "NVRM: Xid" in line:
                    if not self._in_window(ctx):
                        return
                    if self._bad_xid is None:
                        self._bad_xid = [0, ctx[0], line[:1000]]
                    self._bad_xid[0] += 1
                    self._event(ctx, "xid_unparsed")
                return
            if not self._in_window(ctx):
                return
            code = int(m.group("code"))
            pci = normalize_pci(m.group("pci"))
            self._gpu(pci)
            r = _XID_REST_RE.match(m.group("rest")) or _XID_REST_RE.match("")
            pid = (r.group("pid") or "").strip("'")
            name = (r.group("name") or "").strip()
            msg = (r.group("msg") or "").strip()
            if not r.group("pid") and not r.group("name") and not msg:
                msg = m.group("rest").lstrip(", ").strip()
            rec = self._bump(self._xids, (code, pci), ctx, xid=code, pci=pci, pid=None, process=None,
                             message=msg, index=None, processes=[])
            if rec is None:
                return
            if rec["pid"] is None and pid.isdigit():
                rec["pid"] = int(pid)
            if name and not name.startswith("<"):
                if rec["process"] is None:
                    rec["process"] = name
                if name not in rec["processes"] and len(rec["processes"]) < 8:
                    rec["processes"].append(name)
            if rec["index"] is None:
                gi = _GPU_IDX_RE.search(msg)
                if gi:
                    rec["index"] = int(gi.group(1))
            self._event(ctx, "xid_%d" % code)
            return
        m = _GPU_UUID_RE.search(line)
        if m:
            pci = normalize_pci(m.group("pci"))
            self._gpu(pci)
            if len(self._uuids) < MAX_KEYS:
                self._uuids.setdefault(pci, m.group("uuid"))
            return
        low = line.lower()
        if "fallen off the bus" in low:
            kind = "gpu_fallen_off_bus"
        elif "rminitadapter failed" in low or "rm_init_adapter failed" in low:
            kind = "gpu_init_failed"
        else:
            return
        if not self._in_window(ctx):
            return
        pm = _NVRM_PCI_RE.search(line)
        pci = normalize_pci(pm.group("pci")) if pm else None
        if pci:
            self._gpu(pci)
        self._bump(self._gpu_events, (kind, pci), ctx, kind=kind, pci=pci)
        self._event(ctx, kind)

    def _mlx5(self, ctx):
        line = ctx[1]
        m = _MLX_RE.search(line)
        if not m:
            return
        pci = normalize_pci(m.group("pci"))
        dev = m.group("dev")
        if dev and dev.startswith("mlx5_") and len(self._ib_names) < MAX_KEYS:
            self._ib_names[pci] = dev
        msg = m.group("msg")
        low = msg.lower()
        if "port module event" in low:
            if "unplugged" in low:
                kind = "cable_unplugged"
            elif "error" in low or "exceeded" in low or "not supported" in low or "temperature" in low:
                kind = "cable_error"
            else:
                kind = "cable_plugged"
        elif _LINK_DOWN_RE.search(msg):
            kind = "link_down"
        elif _LINK_UP_RE.search(msg):
            kind = "link_up"
        elif ("health compromised" in low or "assert" in low or "fw fatal" in low or "fatal error" in low
              or "unrecoverable" in low or "internal error" in low):
            kind = "health"
        elif ("cmd_work_handler" in low or "wait_func" in low or "cmd exec" in low) and (
                "timeout" in low or "no done completion" in low):
            kind = "cmd_timeout"
        elif "async event" in low:
            kind = "async_event"
        elif "insufficient power" in low:
            kind = "pcie_power"
        else:
            return
        if not self._in_window(ctx):
            return
        rec = self._ib.get(pci)
        if rec is None:
            if len(self._ib) >= MAX_KEYS:
                self._overflow += 1
                return
            rec = self._ib[pci] = {"pci": pci, "port": None, "netdev": None, "last_state": None,
                                   "cable": None, "drops": 0, "unplugs": 0,
                                   "first_line": {}, "evidence": {}, "counts": {}}
        if dev and not dev.startswith("mlx5_"):
            rec["netdev"] = rec["netdev"] or dev
        pm = _PORT_RE.search(msg)
        if pm and rec["port"] is None:
            rec["port"] = int(pm.group(1))
        rec["counts"][kind] = rec["counts"].get(kind, 0) + 1
        if kind not in rec["first_line"]:
            rec["first_line"][kind] = ctx[0]
            rec["evidence"][kind] = line[:1000]
        # Only up->down / plugged->unplugged transitions are faults: an unused port logs
        # 'Cable unplugged' and 'Link down' once at boot without ever having been up.
        if kind == "link_down":
            if rec["last_state"] == "up":
                rec["drops"] += 1
                rec["evidence"].setdefault("drop", line[:1000])
                rec["first_line"].setdefault("drop", ctx[0])
            rec["last_state"] = "down"
        elif kind == "link_up":
            rec["last_state"] = "up"
        elif kind == "cable_plugged":
            rec["cable"] = "plugged"
        elif kind == "cable_unplugged":
            if rec["cable"] == "plugged":
                rec["unplugs"] += 1
                rec["evidence"].setdefault("unplug", line[:1000])
                rec["first_line"].setdefault("unplug", ctx[0])
            rec["cable"] = "unplugged"
        self._event(ctx, "ib_" + kind)

    def _pcie_aer(self, ctx):
        line = ctx[1]
        surprise = "Surprise Down" in line or "SDES" in line
        m = _AER_RE.search(line)
        if m:
            sev, src = m.group("sev"), m.group("src")
        else:
            # Detail lines ('PCIe Bus Error: severity=..', '[ 5] SDES') repeat the header just
            # above them; they count only for what they add (Surprise Down) or when alone.
            near = self._aer_header is not None and 0 < ctx[0] - self._aer_header[0] <= 8
            m = _AER_SEV_RE.search(line)
            if near:
                if not surprise:
                    return
                src = self._aer_header[1]
            elif not m and not surprise:
                return  # 'AER: enabled with IRQ ..' and other boot chatter
            else:
                src = None
            sev = m.group("sev") if m else "Uncorrected (Fatal)"
        cls = "surprise_down" if surprise else {
            "Corrected": "corrected", "Uncorrected (Non-Fatal)": "nonfatal"}.get(sev, "fatal")
        if not src:
            pm = _PCI_FULL_RE.findall(line)
            src = pm[-1] if pm else None
        if _AER_RE.search(line):
            self._aer_header = (ctx[0], src)
        if not self._in_window(ctx):
            return
        pci = normalize_pci(src) if src else None
        self._bump(self._aer, (cls, pci), ctx, cls=cls, pci=pci)
        self._event(ctx, "pcie_aer_" + cls)

    def _oom_line(self, ctx):
        line = ctx[1]
        m = _OOM_RE.search(line)
        if not m or not self._in_window(ctx):
            return
        pid = int(m.group("pid"))
        last = self._oom_last
        self._oom_last = (pid, ctx[0])
        if last and last[0] == pid and ctx[0] - last[1] <= 10:
            return  # the same kill reported twice (global + memcg) a few lines apart
        comm = m.group("comm").strip() or "?"
        rec = self._bump(self._oom, comm, ctx, comm=comm, pids=[])
        if rec is not None and len(rec["pids"]) < 16:
            rec["pids"].append(pid)
        self._event(ctx, "oom_kill")

    def _hung_line(self, ctx):
        m = _HUNG_RE.search(ctx[1])
        if not m or not self._in_window(ctx):
            return
        comm = m.group("comm")
        rec = self._bump(self._hung, comm, ctx, comm=comm, secs=int(m.group("secs")))
        if rec is not None:
            self._event(ctx, "hung_task")

    # -- output -------------------------------------------------------------------
    def result(self):
        """-> (facts, findings). Ends the stream (flushes an unterminated last line); repeatable."""
        self.close()
        src = self.source
        findings = []

        def sref(line):
            return "%s:%d" % (src, line)

        xids = sorted(self._xids.values(), key=lambda r: r["line"])
        app_first = {}  # pci -> first line of an application-class Xid
        for r in xids:
            e = lookup(r["xid"])
            if e and e["category"] == "application":
                app_first.setdefault(r["pci"], r["line"])
        for r in xids:
            findings.append(self._xid_finding(r, app_first, sref))
        if self._bad_xid:
            n, line, ev = self._bad_xid
            findings.append(make_finding(
                "unknown", "warning", "xid_unparsed",
                "%d NVRM Xid line(s) could not be parsed (truncated or unknown format)" % n,
                "Read the raw line; check the Xid code by hand against NVIDIA's Xid catalog.",
                evidence=ev, source=sref(line)))

        for (kind, pci), r in sorted(self._gpu_events.items(), key=lambda kv: kv[1]["line"]):
            gpu = gpu_ref(pci, uuid=self._uuids.get(pci)) if pci else None
            where = pci or "unknown PCI address"
            if kind == "gpu_fallen_off_bus":
                msg = "GPU %s has fallen off the bus (%d line(s))" % (where, r["count"])
                act = "Drain and reboot the node; if the GPU drops off again, RMA it."
            else:
                msg = "NVIDIA driver failed to initialise GPU %s (RmInitAdapter failed, %d line(s))" % (
                    where, r["count"])
                act = "Drain and reboot the node; if the GPU still fails to initialise, RMA it."
            findings.append(make_finding("gpu_hardware", "critical", kind, msg, act, evidence=r["evidence"],
                                         source=sref(r["line"]), gpu=gpu, rung="reboot"))

        ib_devices = {}
        for pci, r in sorted(self._ib.items(), key=lambda kv: min(kv[1]["first_line"].values())):
            name = self._ib_names.get(pci) or pci
            c = r["counts"]
            ib_devices[name] = {"pci": pci, "device": self._ib_names.get(pci), "netdev": r["netdev"],
                                "port": r["port"], "last_state": r["last_state"], "drops": r["drops"],
                                "unplugs": r["unplugs"], "counts": dict(c)}
            findings.extend(self._ib_findings(name, pci, r, sref))

        low_power = sorted((r["first_line"]["pcie_power"], self._ib_names.get(pci) or pci, r["evidence"]["pcie_power"])
                           for pci, r in self._ib.items() if "pcie_power" in r["first_line"])
        if low_power:  # common, and harmless unless a port misbehaves: one line for all HCAs
            findings.append(make_finding(
                "ib_network", "info", "ib_pcie_power",
                "%d HCA(s) report insufficient PCIe slot power: %s" % (
                    len(low_power), ", ".join(x[1] for x in low_power[:8])),
                "None unless a port misbehaves; check the slots' power budget at the next service window.",
                evidence=low_power[0][2], source=sref(low_power[0][0])))

        for (cls, pci), r in sorted(self._aer.items(), key=lambda kv: kv[1]["line"]):
            findings.append(self._aer_finding(cls, pci, r, sref))

        for comm, r in sorted(self._oom.items(), key=lambda kv: kv[1]["line"]):
            findings.append(make_finding(
                "memory_leak", "warning", "oom_kill",
                "kernel OOM killer killed %s %d time(s) (pid %s)" % (
                    comm, r["count"], ", ".join(str(p) for p in r["pids"][:5])),
                "Find the leak: watch the job's host RSS per rank (DataLoader workers, pinned memory); "
                "lower num_workers or prefetch, or request more memory.",
                evidence=r["evidence"], source=sref(r["line"]), rung="fix_application"))

        for comm, r in sorted(self._hung.items(), key=lambda kv: kv[1]["line"]):
            drv = bool(_DRIVER_TASK_RE.match(comm))
            data = bool(_DATA_TASK_RE.match(comm))
            findings.append(make_finding(
                "driver" if drv else ("dataloader" if data else "unknown"), "warning", "hung_task",
                "task %s blocked in the kernel for more than %d s (%d report(s))%s" % (
                    comm, r["secs"], r["count"],
                    ": a DataLoader worker stuck on I/O (NFS/Lustre?) starves its rank" if data else ""),
                "Read the stack trace after the line (nvidia/mlx5/NFS frames name the culprit); "
                "drain the node if the task stays in D state.",
                evidence=r["evidence"], source=sref(r["line"]), rung="drain"))

        if self.since_error:
            findings.append(make_finding(
                "unknown", "warning", "kernlog_window_invalid",
                "time window not applied: %s" % self.since_error,
                "Pass since as ISO 8601, e.g. 2026-12-02T13:00:00Z.", source=src))

        fmt = self._format()
        if self._formats and fmt in ("unknown", "bare") and not self._events and not self.dropped_events:
            findings.append(make_finding(
                "unknown", "info", "kernlog_unparseable",
                "no kernel-log timestamps or known kernel messages found in %d line(s)" % self.lines,
                "Check that the file is a kernel log (dmesg, journalctl -k or kern.log).", source=src))

        facts = {
            "format": fmt,
            "formats": dict(self._formats),
            "lines": self.lines,
            "hostname": self._hostname,
            "xids": [{k: r[k] for k in ("xid", "pci", "pid", "process", "message", "count", "first", "last",
                                        "line", "index", "processes")} for r in xids],
            "gpus": {pci: {"uuid": self._uuids.get(pci)} for pci in sorted(self._gpu_pcis)},
            "events": list(self._events),
            "events_dropped": self.dropped_events,
            "window": {"since": _iso(self.since), "applied": self.since is not None and self.untimed == 0,
                       "excluded": self.excluded, "untimed": self.untimed, "year": self.year},
            "ib_events": {"devices": ib_devices,
                          "total": sum(sum(r["counts"].values()) for r in self._ib.values())},
            "aer": [{"class": cls, "pci": pci, "count": r["count"], "line": r["line"]}
                    for (cls, pci), r in sorted(self._aer.items(), key=lambda kv: kv[1]["line"])],
            "oom_kills": sum(r["count"] for r in self._oom.values()),
            "hung_tasks": sum(r["count"] for r in self._hung.values()),
            "keys_dropped": self._overflow,
        }
        return facts, findings

    def _format(self):
        if not self.lines:
            return "empty"
        known = [f for f in self._formats if f not in ("bare", "unknown")]
        if len(known) == 1:
            return known[0]
        if len(known) > 1:
            return "mixed"
        return "bare" if "bare" in self._formats and self._events else "unknown"

    def _xid_finding(self, r, app_first, sref):
        code, pci = r["xid"], r["pci"]
        gpu = gpu_ref(pci, index=r["index"], uuid=self._uuids.get(pci))
        when = "" if r["first"] is None else (" first %s, last %s" % (r["first"], r["last"]))
        proc = (", process %s" % r["process"]) if r["process"] else ""
        e = lookup(code)
        if e is None:
            return make_finding(
                "unknown", "warning", "xid",
                "unknown Xid %d, not in catalog, on GPU %s x%d%s%s: %s" % (
                    code, pci, r["count"], when, proc, r["message"][:200]),
                "Look Xid %d up in NVIDIA's Xid catalog and the driver release notes; drain the node "
                "if the job died with it." % code,
                evidence=r["evidence"], source=sref(r["line"]), xid=code, gpu=gpu)
        category, rung, severity = e["category"], e["rung"], e["severity"]
        note = ""
        if code == 154:
            rung = rung_for_xid154(r["message"]) or rung
        if code == 109 and category != "application" and pci in app_first and app_first[pci] < r["line"]:
            # A context-switch timeout right after the job's own fault is its echo, not a second cause.
            category = "application"
            note = " (follows an application Xid on the same GPU)"
        msg = "Xid %d (%s) on GPU %s x%d%s%s%s: %s" % (
            code, e["name"], pci, r["count"], when, proc, note, r["message"][:200])
        return make_finding(category, severity, "xid", msg, e["action"], evidence=r["evidence"],
                            source=sref(r["line"]), xid=code, gpu=gpu, rung=rung)

    def _ib_findings(self, name, pci, r, sref):
        c, ev, fl = r["counts"], r["evidence"], r["first_line"]
        ib = ib_ref(name, r["port"])
        label = name if name == pci else "%s (%s)" % (name, pci)
        out = []
        if c.get("health"):
            out.append(make_finding(
                "ib_network", "critical", "ib_hca_health",
                "HCA %s reported a firmware/health fault (%d line(s))" % (label, c["health"]),
                "Drain the node; restart the HCA driver (openibd) or reboot, and collect mlxfwreset/mstdump "
                "for support if it recurs.",
                evidence=ev["health"], source=sref(fl["health"]), ib=ib, rung="ib_restart"))
        if c.get("cable_error"):
            out.append(make_finding(
                "ib_network", "critical", "ib_cable_error",
                "HCA %s port module (cable/transceiver) error (%d event(s))" % (label, c["cable_error"]),
                "Drain the node and replace the cable or transceiver.",
                evidence=ev["cable_error"], source=sref(fl["cable_error"]), ib=ib, rung="rma"))
        if r["unplugs"]:
            out.append(make_finding(
                "ib_network", "warning", "ib_cable_unplugged",
                "HCA %s: cable unplugged %d time(s) after being plugged" % (label, r["unplugs"]),
                "Drain the node and reseat/check the cable.",
                evidence=ev["unplug"], source=sref(fl["unplug"]), ib=ib, rung="drain"))
        if r["drops"]:
            still_down = r["last_state"] == "down"
            out.append(make_finding(
                "ib_network", "critical" if still_down else "warning",
                "ib_link_flap" if r["drops"] > 1 else "ib_port_down",
                "HCA %s link dropped %d time(s) (down %d, up %d); last state %s" % (
                    label, r["drops"], c.get("link_down", 0), c.get("link_up", 0), r["last_state"]),
                "Check the port with ibstat/perfquery; restart the port or reseat the cable, "
                "and drain the node if it keeps flapping.",
                evidence=ev["drop"], source=sref(fl["drop"]), ib=ib, rung="ib_restart"))
        elif c.get("link_down") or c.get("cable_unplugged"):
            first = min((fl[k], k) for k in ("link_down", "cable_unplugged") if k in fl)
            out.append(make_finding(
                "ib_network", "info", "ib_port_never_up",
                "HCA %s port was never up in this log (no cable / unused port?)" % label,
                "None if the port is unused; otherwise check the cable and ibstat.",
                evidence=ev[first[1]], source=sref(first[0]), ib=ib))
        if c.get("cmd_timeout"):
            out.append(make_finding(
                "ib_network", "warning", "ib_cmd_timeout",
                "HCA %s firmware command timeout (%d line(s))" % (label, c["cmd_timeout"]),
                "Restart the HCA driver (openibd); reboot if commands keep timing out.",
                evidence=ev["cmd_timeout"], source=sref(fl["cmd_timeout"]), ib=ib, rung="ib_restart"))
        return out

    def _aer_finding(self, cls, pci, r, sref):
        gpu = gpu_ref(pci) if pci and pci in self._gpu_pcis else None
        where = pci or "unknown device"
        cat = "gpu_hardware" if gpu else "unknown"
        if cls in ("fatal", "surprise_down"):
            what = "Surprise Down (link lost)" if cls == "surprise_down" else "uncorrected fatal"
            return make_finding(
                cat, "critical", "pcie_aer_fatal",
                "PCIe AER %s error on %s (%d report(s))" % (what, where, r["count"]),
                "Drain and reboot the node; reseat or RMA the device if the link fails again.",
                evidence=r["evidence"], source=sref(r["line"]), gpu=gpu, rung="reboot")
        if cls == "nonfatal":
            return make_finding(
                cat, "warning", "pcie_aer_nonfatal",
                "PCIe AER uncorrected non-fatal error on %s (%d report(s))" % (where, r["count"]),
                "Watch the device; drain it if errors continue or the job fails with it.",
                evidence=r["evidence"], source=sref(r["line"]), gpu=gpu, rung="drain")
        many = r["count"] >= 25
        return make_finding(
            cat, "warning" if many else "info", "pcie_aer_corrected",
            "PCIe AER corrected error(s) on %s (%d report(s))" % (where, r["count"]),
            "A marginal PCIe link: reseat the device at the next service window." if many
            else "None: corrected errors are harmless unless they become a storm.",
            evidence=r["evidence"], source=sref(r["line"]), gpu=gpu)


def prefilter(block, start=0, end=None):
    """Pure, cheap pass over complete lines block[start:end] (str or bytes, ending with a newline).

    -> (number of lines, [(0-based line index, line) for lines holding a NEEDLE], first lines).
    """
    if end is None:
        end = len(block)
    text = isinstance(block, str)
    nl = "\n" if text else b"\n"
    spans = set()
    for search in (_FINDERS_S if text else _FINDERS_B):
        pos = search(block, start, end)
        while pos >= 0:
            s = block.rfind(nl, start, pos) + 1 or start
            e = block.find(nl, pos, end)
            if e < 0:
                e = end
            spans.add((s, e))
            pos = search(block, e + 1, end)
    hits = []
    idx, prev = 0, start
    for s, e in sorted(spans):  # counting between hits doubles as the line count: one pass
        idx += block.count(nl, prev, s)
        prev = s
        hits.append((idx, _own(block[s:min(e, s + MAX_LINE)])))
    head = [_own(x) for x in block[start:min(end, start + 16 * 1024)].split(nl, _SAMPLE_LINES)[:_SAMPLE_LINES]]
    return idx + block.count(nl, prev, end), hits, head


def _clean(line):
    if "\x1b" in line:
        line = strip_ansi(line)
    if "\x00" in line:
        line = line.replace("\x00", "")
    return line.rstrip("\r\n")


def _same_type(pending, data):
    if isinstance(data, str):
        return pending.decode("utf-8", "replace")
    return pending.encode("utf-8", "replace")


def _own(b):
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


_NEEDLES_B = tuple(n.encode() for n in NEEDLES)
_FINDERS_S = tuple(_finder(n) for n in NEEDLES)
_FINDERS_B = tuple(_finder(n) for n in _NEEDLES_B)


def parse_kernel_log(text, source="kern.log", since=None, year=None):
    """Parse a whole kernel log (str or bytes) -> (facts, findings)."""
    sc = KernelLogScanner(source=source, since=since, year=year)
    if text:
        sc.feed_chunk(text if isinstance(text, (str, bytes, bytearray)) else str(text))
    return sc.result()
