# SPDX-License-Identifier: Apache-2.0
"""Node-level kernel faults with no GPU in them: the OOM killer, hung tasks, machine checks.

- OOM kills. The kernel says which: a global one ('Out of memory: Killed process 1234 (python)',
  summary 'oom-kill:constraint=CONSTRAINT_NONE,...,global_oom,...') means the host ran out of
  memory; a memory cgroup's ('Memory cgroup out of memory: Killed process ..', summary
  'oom-kill:constraint=CONSTRAINT_MEMCG,...') means the job hit its own limit and the node is
  fine. Old kernels say 'Kill process 1234 (java) score 1309 or sacrifice child'; RHEL prints
  'Killed process 1234, UID 48, (httpd)'. The summary line names the task too ('task=python,
  pid=1234'), and decides the scope of the kill line that follows it.
- Hung tasks ('INFO: task nvc:[driver]:5403 blocked for more than 120 seconds.'): the task
  named (comm may hold ':'), the driver's own threads (nv*, UVM, mlx5) make it the driver's.
- Machine checks ('mce: [Hardware Error]: Machine check events logged', GHES '{1}[Hardware
  Error]: event severity: recoverable', AMD '[Hardware Error]: Corrected error, no action
  required.'): host CPU/memory hardware; corrected ones are a trend, uncorrected ones the node.
"""

from datetime import datetime

from ..findings import finding
from ..timeutil import UTC, span_text, to_utc
from .patterns import (DATA_TASK_RE, DRIVER_TASK_RE, HUNG_RE, IOMMU_RE, MCE_FATAL_RE, NV_FRAME_RE, NV_RIP_RE,
                       OOM_CONSTRAINT_RE, OOM_INVOKED_RE, OOM_RE, OOM_TASK_RE)

TRACE_NEAR = 60     # lines of a hung task's call trace read for the driver's frames
OOM_NEAR = 10       # lines between a kill's summary and its 'Killed process' line (and a repeat)


def count_line(table, key, ctx, limit, init):
    """Count one line (ctx: line number, text, ..., time) under ``key`` in ``table``: the
    record keeps the count, first and last time (an ISO time or dmesg's seconds since boot),
    the first and last wall-clock time (ISO only: ``first_wall``/``last_wall``), first line
    and its evidence. None when the table already holds ``limit`` other keys."""
    rec = table.get(key)
    if rec is None:
        if len(table) >= limit:
            return None
        rec = dict(count=0, line=ctx[0], first=ctx[3], last=ctx[3], evidence=ctx[1][:1000],
                   first_wall=None, last_wall=None)
        rec.update(init)
        table[key] = rec
    rec["count"] += 1
    when = ctx[3]
    if when is not None:
        if rec["first"] is None:
            rec["first"] = when
        rec["last"] = when
        if isinstance(when, str):  # the earliest and the latest: a paste need not keep the log's order
            fw, lw = rec["first_wall"], rec["last_wall"]
            rec["first_wall"] = when if fw is None or _before(when, fw) else fw
            rec["last_wall"] = when if lw is None or _before(lw, when) else lw
    return rec


def _before(a, b):
    """True when ISO time ``a`` is earlier than ``b`` (as text when both have one offset and shape)."""
    if len(a) == len(b) and a[-6:] == b[-6:]:
        return a < b
    ta, tb = to_utc(a), to_utc(b)
    return ta is not None and tb is not None and ta < tb


def seen(rec):
    """A counted record's numbers as a finding carries them: count, first, last (ISO, or None
    when the log had no wall-clock times)."""
    return {"count": rec["count"], "first": rec.get("first_wall"), "last": rec.get("last_wall")}


def seen_text(rec):
    """How often and when, for a message: '3x between 2026-12-02 07:09:51 and 07:12:03 UTC';
    from a dmesg without wall-clock times, '3x, 12.5 to 97.0 s after boot'."""
    n = seen(rec)
    text = span_text(n["count"], n["first"], n["last"])
    up0, up1 = rec.get("first"), rec.get("last")
    if n["first"] is None and isinstance(up0, float):
        up1 = up1 if isinstance(up1, float) else up0
        boot = ("%s s" % up0) if up1 == up0 else ("%s to %s s" % (up0, up1))
        text = "%s, %s after boot" % (text, boot) if text else "%s after boot" % boot
    return text


def merged(records):
    """Several counted records as one (their total, earliest and latest time)."""
    records = list(records)
    walls = sorted((t for r in records for t in (r.get("first_wall"), r.get("last_wall")) if t),
                   key=lambda t: to_utc(t) or datetime.min.replace(tzinfo=UTC))
    ups = [t for r in records for t in (r.get("first"), r.get("last")) if isinstance(t, float)]
    return {"count": sum(r["count"] for r in records),
            "first_wall": walls[0] if walls else None, "last_wall": walls[-1] if walls else None,
            "first": min(ups) if ups else None, "last": max(ups) if ups else None}


class KeyedTables:
    """Tables of records keyed by what they count, each capped at ``max_keys`` keys (garbage
    must not grow memory: what does not fit is counted in ``overflow``)."""

    max_keys = 0
    overflow = 0

    def _rec(self, table, key, ctx, **init):
        """Count one line (ctx: line number, text, ..., time) under ``key``; None when full."""
        rec = count_line(table, key, ctx, self.max_keys, init)
        if rec is None:
            self.overflow += 1
        return rec


class NodeLog(KeyedTables):
    """Tables of the OOM kills, hung tasks and machine checks of one log, fed in log order."""

    def __init__(self, max_keys):
        self.max_keys = max_keys
        self.oom = {}       # (scope, comm) -> record
        self.hung = {}      # comm -> record
        self.mce = {}       # corrected|uncorrected -> record
        self.invoked = {}   # comm -> record: 'X invoked oom-killer' (the report's head)
        self._hung_open = None      # (record, line) of the last hung-task report: its call trace follows
        self.crash = {}     # the NVIDIA frame an oops' RIP is in -> record
        self.iommu = {}     # PCI address of a device whose DMA the IOMMU refused -> record
        self.overflow = 0
        self._oom_last = None       # (pid, line) of the last kill counted
        self._constraint = None     # (line, scope, task, pid) of the last 'oom-kill:constraint=' line

    def reset(self):
        """Another file begins: line proximity does not cross files."""
        self._oom_last = self._constraint = self._hung_open = None


    def feed(self, ctx, in_window):
        """One line holding a node needle -> the event kind it records, or None."""
        line = ctx[1]
        if "of memory: Kill" in line:
            return self._kill(ctx, in_window)
        if "oom-kill:" in line:
            return self._summary(ctx, in_window)
        if "[nvidia" in line:
            if "RIP: " in line:
                m = NV_RIP_RE.search(line)
                if m and in_window(ctx):
                    self._rec(self.crash, m.group(1), ctx, frame=m.group(1))
                    return "driver_crash"
            return self._frame(ctx)
        if "IO_PAGE_FAULT" in line or "DMAR: [DMA" in line:
            m = IOMMU_RE.search(line)
            if m is None or not in_window(ctx):
                return None
            dev = next(g for g in m.groups() if g)
            self._rec(self.iommu, dev if dev.count(":") == 2 else "0000:" + dev, ctx)
            return "iommu_fault"
        if "invoked oom-killer" in line:
            m = OOM_INVOKED_RE.search(line)
            if m is None or not in_window(ctx):
                return None
            rec = self._rec(self.invoked, m.group("comm"), ctx, comm=m.group("comm"))
            return "oom_invoked" if rec is not None else None
        if "blocked for more than" in line:
            return self._hung(ctx, in_window)
        if "Hardware Error]" in line:
            return self._mce(ctx, in_window)
        return None

    # -- OOM ------------------------------------------------------------------------------
    def _summary(self, ctx, in_window):
        m = OOM_CONSTRAINT_RE.search(ctx[1])
        if not m:
            return None
        scope = "cgroup" if m.group("c") == "CONSTRAINT_MEMCG" else "node"
        t = OOM_TASK_RE.search(ctx[1])
        task, pid = (t.group("task").strip(), int(t.group("pid"))) if t else (None, None)
        self._constraint = (ctx[0], scope, task, pid)
        if task is None:
            return None
        # A summary whose 'Killed process' line never came (cut log, rate limit) is still a kill;
        # the kill line that follows it within OOM_NEAR lines is the same one and is not counted.
        return self._count(ctx, in_window, scope, task, pid)

    def _kill(self, ctx, in_window):
        m = OOM_RE.search(ctx[1])
        if not m:
            return None
        pid = int(m.group("pid"))
        comm = m.group("comm").strip() or "?"
        scope = "cgroup" if "cgroup out of memory" in ctx[1].lower() else None
        c = self._constraint
        if c is not None and 0 <= ctx[0] - c[0] <= OOM_NEAR and (c[3] is None or c[3] == pid):
            scope = scope or c[1]
            self._constraint = None  # one summary, one kill
        return self._count(ctx, in_window, scope or "node", comm, pid)

    def _count(self, ctx, in_window, scope, comm, pid):
        if not in_window(ctx):
            return None
        last = self._oom_last
        if last and last[0] == pid and ctx[0] - last[1] <= OOM_NEAR:
            # the same kill reported twice (summary + kill line, global + memcg): the kill line,
            # which names the process as the kernel killed it, is the evidence
            if last[2] is not None and last[3] and last[2]["line"] == last[1] and "of memory: Kill" in ctx[1]:
                last[2]["line"], last[2]["evidence"] = ctx[0], ctx[1][:1000]
            return None
        rec = self._rec(self.oom, (scope, comm), ctx, comm=comm, scope=scope, pids=[])
        self._oom_last = (pid, ctx[0], rec, "of memory: Kill" not in ctx[1])
        if rec is None:
            return None
        if len(rec["pids"]) < 16:
            rec["pids"].append(pid)
        return "oom_kill"

    # -- hung tasks -----------------------------------------------------------------------
    def _hung(self, ctx, in_window):
        m = HUNG_RE.search(ctx[1])
        if not m or not in_window(ctx):
            return None
        comm = m.group("comm")
        rec = self._rec(self.hung, comm, ctx, comm=comm, secs=int(m.group("secs")))
        self._hung_open = (rec, ctx[0]) if rec is not None else None
        return "hung_task" if rec is not None else None

    def _frame(self, ctx):
        """A call-trace frame in an NVIDIA module ('os_acquire_rwlock_read+0x35/0x50 [nvidia]')
        right after a hung-task report: the task is stuck inside the driver."""
        op = self._hung_open
        if op is None or ctx[0] - op[1] > TRACE_NEAR:
            return None
        m = NV_FRAME_RE.search(ctx[1])
        if m and not op[0].get("frame"):
            op[0]["frame"] = m.group(0).strip()[:200]
        return None

    # -- machine checks -------------------------------------------------------------------
    def _mce(self, ctx, in_window):
        line = ctx[1]
        low = line.lower()
        if MCE_FATAL_RE.search(line):
            cls = "uncorrected"
        elif "machine check events logged" in low or "corrected error" in low or "event severity: corrected" in low:
            cls = "corrected"
        else:
            return None  # the detail lines of a report (bank, TSC, address, DIMM location)
        if not in_window(ctx):
            return None
        rec = self._rec(self.mce, cls, ctx, cls=cls)
        return "mce_" + cls if rec is not None else None

    # -- output ---------------------------------------------------------------------------
    def findings(self, sref):
        out = []
        for r in sorted(self.oom.values(), key=lambda r: r["line"]):
            cg = r["scope"] == "cgroup"
            out.append(finding(
                "oom_kill_cgroup" if cg else "oom_kill",
                "%s killed %s %s (pid %s)%s" % (
                    "memory cgroup OOM" if cg else "kernel OOM killer",
                    r["comm"], seen_text(r), ", ".join(str(p) for p in r["pids"][:5]),
                    ": the job's own memory limit, not the node's" if cg else ": the host ran out of memory"),
                evidence=r["evidence"], source=sref(r["line"]), **seen(r)))
        if self.invoked and not self.oom:
            # the report's head survived but not its kill line (a cut log, printk rate limit):
            # the OOM killer ran, so memory ran out; which scope is not known
            r = min(self.invoked.values(), key=lambda r: r["line"])
            every = merged(self.invoked.values())
            out.append(finding(
                "oom_kill", "the kernel OOM killer was invoked %s (first by %s); the lines saying "
                "what it killed are not in the log" % (seen_text(every), r["comm"]),
                evidence=r["evidence"], source=sref(r["line"]), **seen(every)))
        for comm, r in sorted(self.hung.items(), key=lambda kv: kv[1]["line"]):
            drv = bool(DRIVER_TASK_RE.match(comm)) or bool(r.get("frame"))
            data = bool(DATA_TASK_RE.match(comm))
            out.append(finding("hung_task", "task %s blocked in the kernel for more than %d s, reported %s%s" % (
                comm, r["secs"], seen_text(r),
                ": stuck inside the NVIDIA driver (%s)" % r["frame"] if r.get("frame") else
                ": a DataLoader worker stuck on I/O (NFS/Lustre?) starves its rank" if data else ""),
                category="driver" if drv else ("dataloader" if data else "unknown"),
                evidence=r["evidence"], source=sref(r["line"]), **seen(r)))
        for frame, r in sorted(self.crash.items(), key=lambda kv: kv[1]["line"]):
            out.append(finding("driver_crash", "kernel oops in the NVIDIA driver at %s, %s" % (
                frame, seen_text(r)), evidence=r["evidence"], source=sref(r["line"]), **seen(r)))
        for dev, r in sorted(self.iommu.items(), key=lambda kv: kv[1]["line"]):
            out.append(finding("iommu_fault", "the IOMMU refused DMA by device %s %s" % (dev, seen_text(r)),
                               evidence=r["evidence"], source=sref(r["line"]), **seen(r)))
        for cls in ("uncorrected", "corrected"):
            r = self.mce.get(cls)
            if r is None:
                continue
            if cls == "uncorrected":
                f = finding("host_mce_uncorrected", "machine check: uncorrected host hardware error, logged %s" % (
                    seen_text(r)), evidence=r["evidence"], source=sref(r["line"]), **seen(r))
            else:
                f = finding("host_mce_corrected", "machine check: corrected host hardware error(s), logged "
                                                  "%s" % seen_text(r),
                            evidence=r["evidence"], source=sref(r["line"]), **seen(r))
            f["component"] = "host_cpu_memory"
            out.append(f)
        return out

    def facts(self):
        return {
            "oom_kills": sum(r["count"] for r in self.oom.values()),
            "oom_invoked": sum(r["count"] for r in self.invoked.values()),
            "oom_kills_cgroup": sum(r["count"] for r in self.oom.values() if r["scope"] == "cgroup"),
            "hung_tasks": sum(r["count"] for r in self.hung.values()),
            "mce": {cls: r["count"] for cls, r in self.mce.items()},
        }
