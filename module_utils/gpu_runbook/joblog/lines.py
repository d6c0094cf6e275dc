# SPDX-License-Identifier: Apache-2.0
"""The per-file line parser: read each physical line's rank and time prefixes, drop lines
older than ``since``, then hand the line to each family of handlers in turn.

Handlers run in a fixed order (the order matters: a wrapped IB line must be joined before
anything else reads the line; a pure progress line or an NCCL_DEBUG line is fully read by
its own handler). A handler returns True when no later handler needs the line."""

from . import (emitter_lines, error_lines, horovod, launch_lines, launchers, memtrend, nccl_lines, nccl_tests, ompi_lines,
               progress, pyspy, scan, torch_lines)
from ..linefamily import go_daemon_line, is_kernel_line
from .patterns import (GLOG, GLOG_OLD, LIGHTNING_RANK, SRUN_LABEL, TORCHRUN_GLOBAL, TORCHRUN_RANK, TORCHRUN_RANK_LATE,
                       TORCHRUN_ROLE)
from ..findings import has_escape, strip_ansi, unpaste
from .quiet import quiet
from .state import FileState, Line
from .text import FileLines, line_time, logical_lines, rank_from_name

HANDLERS = (
    memtrend.figure,         # a memory figure: recorded, never taken (the line goes on to the others)
    launch_lines.shell_prompt,  # a shell prompt's host: recorded, never taken
    launch_lines.remote_shell,  # ssh could not connect to a node
    pyspy.pyspy,             # a py-spy dump: its frames are no other handler's lines
    ompi_lines.help_text,    # an Open MPI help text between its dashes: its lines are its message's
    ompi_lines.btl_error,    # an Open MPI transport's error (its head, the openib BTL's failed completion)
    emitter_lines.sacct,
    nccl_lines.continue_wrapped_ib,
    nccl_tests.nccl_tests_line,
    progress.tqdm_bars,
    progress.hf_epoch,
    nccl_lines.nccl_line,
    nccl_lines.bare_ib_completion,
    torch_lines.watchdog,
    torch_lines.desync_report,
    horovod.stall_report,
    torch_lines.flight_recorder_text,
    torch_lines.flight_recorder_json,
    error_lines.dataloader,
    error_lines.memory_and_cuda,
    error_lines.sigbus_in_nccl,
    error_lines.collective_mismatch,
    error_lines.srun_and_elastic,
    error_lines.nccl_error,
    error_lines.world_hints,
    launch_lines.launch_and_exit,
    launch_lines.ras_report,
    error_lines.traceback,
)


PREFILTER = True  # False: every line is read in full (what the tests compare the prefilter with)
SCAN = True       # False: the prefilter judges line by line (quiet.py), without the block scan (scan.py)


def parse_file(name, text, st, ahead=None):
    """Read one file of the job (its text, a line source or a text.FileLines) into the job
    state ``st``. Past the job's first lines, a line no handler can use is skipped unread
    (quiet.py), most of them without a step of Python per line (scan.py). ``ahead``: its
    tqdm bars and some of its blocks' shapes, read by another process (parallel.Ahead)."""
    fs = FileState(name, rank_from_name(name))
    lines = text if isinstance(text, FileLines) else FileLines(text)
    prefilter = PREFILTER
    if prefilter and SCAN:
        items = scan.lines_to_read(lines, fs, st, FIRST_TIME_TRIES, ahead)
    else:
        items = logical_lines(lines)
    used, at_start = 0, _job_mark(st)
    for lineno, raw in items:
        if not raw or (prefilter and st.time_tries >= FIRST_TIME_TRIES and quiet(raw, fs, st)):
            continue
        if ahead is not None and "%|" in raw:
            st.bars_read = ahead.take(lineno, raw)
        line = read_line(raw, "%s:%d" % (name, lineno), fs, st)
        if line is None:
            continue
        # the last reader's lines (an emitter's, an error, a run's end) are told from a handler's by
        # whether a handler changed the job's state: worth the look only for a line it could read
        before = _mark(st, fs) if " NCCL INFO " not in line.text and emitter_lines.might_read(line.text) else None
        for handle in HANDLERS:
            if handle(line, fs, st):
                used += 1
                break
        else:
            # no handler took the line whole: the last reader's, when none changed a thing either
            # (counted only when it reads it: how much of a file was a job's is what the
            # handlers took whole and what the last reader read, the same with or without the
            # prefilter; findings cite the rest)
            if before is not None and _unread_but_its_exception(before, _mark(st, fs), st, line) and \
                    emitter_lines.read(line, fs, st):
                used += 1
    if fs.fr_cur:
        torch_lines.fr_flush(fs, fs.file_rank, st)
    last = lines.tail()
    emitter_lines.run_end(name, last, st)
    memtrend.tail(name, last, st)
    # read: a handler or the last reader took one of its lines, or the job's state changed as it
    # was read (the same with or without the prefilter: quiet lines change nothing)
    st.files_read[name] = bool(st.files_read.get(name) or used or _job_mark(st) != at_start
                               or any(k[0] == name for k in st.memory))


def _job_mark(st):
    """What the handlers change in the job's state when they read a line."""
    return (len(st.events), len(st.comm), len(st.timeouts), len(st.progress), len(st.nccl_words), len(st.launch),
            len(st.ras), len(st.last_work), len(st.world_hints), len(st.networks), len(st.rank_host_weak),
            len(st.ib_devices), len(st.roce_devices), len(st.some_failed), len(st.stuck), len(st.abort_hung), len(st.nccl_traces), len(st.desync_missing), len(st.barrier_missing), len(st.barrier_waited),
            len(st.desync_lagging), len(st.desync_timeout), len(st.fr_missing), len(st.fr_entries),
            len(st.ip_host), len(st.via), st.nccl_version, st.hf_epoch, st.nccl_tests is not None, st.oob,
            st.ib_disabled, st.socket_ifname, len(st.sacct))


def _unread_but_its_exception(before, after, st, line):
    """True when no handler read the line, or only the traceback reader did, as the exception
    that ends a traceback: an exception that raises an emitter's message ('RuntimeError: CUDA
    error: device-side assert triggered') is that emitter's to read too (the exception alone is
    dropped as a restatement of the message: job_findings)."""
    if after == before:
        return True
    n = len(_job_mark(st))
    if after[0] != before[0] + 1 or not (before[n] and not after[n]) or \
            after[1:n] + after[n + 1:] != before[1:n] + before[n + 1:]:
        return False
    ev = st.events[-1]
    return ev["kind"] == "python_exception" and ev["src"] == line.src


def _mark(st, fs):
    """What a handler changes when it reads a line (most of them read it and let the others
    read it too): a line that changed none of it was read by none of them."""
    return _job_mark(st) + (fs.in_tb, fs.elastic_host, fs.pending_ib is not None, fs.ras_ctx is not None,
                            fs.fr_missing_ctx is not None, fs.exit_ctx is not None, len(fs.fr_cur))


def read_line(raw, src, fs, st):
    """The Line of a physical line, or None when its own timestamp is older than ``since``.

    The rank comes from the line's prefix (srun --label ``3: ``, torchrun ``[rank3]:`` alone
    or after a role prefix ``[default0]:[rank12]:``, a ``[${rank}]:`` template, or ``[rankN]:``
    after what a collector put first), else Lightning ``GLOBAL_RANK: 3``, else the file name.
    A role prefix alone is a local rank, kept apart."""
    if has_escape(raw):  # a terminal escape written out ('#033[0m': rsyslog's), the line joined already
        raw = strip_ansi(raw)
    text, lrank, host, ip = launchers.strip(unpaste(raw))
    if is_kernel_line(text) or go_daemon_line(text):
        return None  # the kernel's line (a dmesg paste in a job's output), a node daemon's: the kernel-log reader's
    text, rank, head = _prefixes(text)
    if rank is None:
        rank = lrank
    if st.since_dt is not None:
        t = line_time(text, st.since_dt.year, st.since_dt)
        if t is None and head:
            t = line_time(head, st.since_dt.year, st.since_dt)
        if t is not None and t < st.since_dt:
            return None
    if st.time_tries < FIRST_TIME_TRIES:
        _note_time(text, head, st)
    m = GLOG.match(text) or GLOG_OLD.match(text)
    if m:
        text = text[m.end():]
    if rank is None:
        m = LIGHTNING_RANK.search(text)
        if m:
            rank = int(m.group(1))
            st.world_hints.append(int(m.group(3)))
    prefixed = rank is not None
    if rank is None:
        rank = fs.file_rank
    if rank is not None:
        st.ranks_seen.add(rank)
        if host and prefixed:
            st.rank_host_weak.setdefault(rank, host)
    return Line(src, raw, text, rank, prefixed, host, ip)


def line_text(raw):
    """The text read_line hands the handlers (``Line.text``): a pure function of the raw line."""
    if has_escape(raw):
        raw = strip_ansi(raw)
    text = _prefixes(launchers.strip(unpaste(raw))[0])[0]
    m = GLOG.match(text) or GLOG_OLD.match(text)
    return text[m.end():] if m else text


FIRST_TIME_TRIES = 2000  # lines per job searched for a time: enough past a banner, cheap on a log without times


def _note_time(text, head, st):
    """Keep the earliest line time seen (what the timeline calls the job's start when Slurm
    did not give one); faults before it did not happen to this job."""
    st.time_tries += 1
    t = line_time(text, st.year, st.since_dt) or (line_time(head, st.year, st.since_dt) if head else None)
    if t is not None and (st.first_time is None or t < st.first_time):
        st.first_time = t


def _prefixes(raw):
    """(text without its launcher prefixes, global rank or None, what stood before a late
    '[rankN]:' (it may hold the line's time))."""
    text, rank = raw, None
    m = SRUN_LABEL.match(text)
    if m:
        rank = int(m.group(1))
        text = text[m.end():]
    for _ in range(3):  # '[default0]:[rank12]:', '3: [rank3]:' ...
        m = TORCHRUN_RANK.match(text)
        if m:
            return text[m.end():], int(m.group(1)), ""
        m = TORCHRUN_GLOBAL.match(text)
        if m and rank is None:
            rank = int(m.group(1))
            text = text[m.end():]
            continue
        m = TORCHRUN_ROLE.match(text)
        if not m:
            break
        text = text[m.end():]
    if rank is None and "[rank" in text[:200]:
        m = TORCHRUN_RANK_LATE.search(text[:200])
        if m:
            return text[m.end():], int(m.group(1)), text[:m.start()]
    return text, rank, ""
