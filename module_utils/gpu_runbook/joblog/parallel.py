# SPDX-License-Identifier: Apache-2.0
"""A job's tqdm bars, and the shapes of a share of its blocks, read ahead by a worker
process for the parser in this one.

Past the parser's own reading, what a training log costs most is pure work on its text:
reading a tqdm ``\r`` chain's bar updates (progress.read_bars, a function of the line's
text, lines.line_text) and each block's line shapes (scan.shapes and the kinds of the
distinct ones, a function of the block's text). A worker reads the same files in the same
blocks (text.FileLines: the same cleaning, so the same texts) and sends, per block, the bars
of every line with a ``%|`` (keyed by the line's hash and length) and, for every
SHAPES_EVERY-th block, its shapes made (scan.Made, keyed by the block's hash and length).
The parser reads its files as it always does and takes what the worker made where the key is
its own text's, else makes it itself. Everything else, and everything that depends on the
job's state, happens here, line by line in the serial order: the job and its findings are
the serial ones, exactly. A worker that fails, dies or read another text (a file that grew or
was rewritten between the two reads) only costs the parser the work it then does itself.

Why not a file per process: the job state is one, fed file by file (ranks, hosts and pids
learned in one file are used in the next). Why not the blocks' text through the pipe: a
second read from the page cache costs less than pickling the text (BENCHMARKS.md).

Memory stays flat: a worker is a block or so ahead of the parser (a pipe, written as it is
read, no feeder thread), and the parser keeps only what the worker sent for blocks still ahead.
"""

import multiprocessing
import os
import signal
from bisect import bisect_right
from collections import deque

from .lines import line_text
from .progress import read_bars
from .scan import Block, Made, shapes
from .text import FileLines

END = None  # the message after the last of a file's bars
MIN_BYTES = 32 << 20  # less than this in all: read here (starting a process costs more than it saves)
SHAPES_EVERY = 3  # the worker makes the shapes of every third block: the two processes' shares about even
BAR = "%|"


def bars_of_block(block):
    """[(hash of the line, its length, read_bars of its text)] of the lines of ``block`` (a
    FileLines block) that hold a tqdm bar, in order."""
    out = []
    find = block.find
    pos = find("%")  # one character: a memchr, where "%|" would stop at every '|' of a log's tables
    while pos >= 0:
        if block.startswith(BAR, pos):
            start = block.rfind("\n", 0, pos) + 1
            end = find("\n", pos)
            if end < 0:
                end = len(block)
            raw = block[start:end]
            text = line_text(raw)
            if BAR in text:
                out.append((hash(raw), len(raw), read_bars(text)))
            pos = end
        pos = find("%", pos + 1)
    return out


def _work(assigned, out):
    """For each (index, source) in turn: (the block's index in the file, its bars_of_block or
    None, its shapes made or None) per block with something to send, then END; a file it
    cannot read ends early (the parser reads what is missing itself)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # ^C is the parser's to handle: it ends the workers
    cache = {}
    try:
        for _index, source in assigned:
            try:
                for k, (_n, block, _none) in enumerate(FileLines(source).blocks(count=False)):
                    bars = bars_of_block(block) if BAR in block else None
                    made = None
                    if k % SHAPES_EVERY == SHAPES_EVERY - 1:
                        made = hash(block), len(block), Made(Block(block, shapes(block), cache))
                    if bars or made:
                        out.send((k, bars or None, made))
            except BrokenPipeError:
                raise
            # a read error or a bug on this file's text: the parser reads the file itself, and meets it there
            except (OSError, EOFError, ValueError, LookupError, TypeError, ArithmeticError, AttributeError,
                    RuntimeError):
                pass
            out.send(END)
        out.close()
    except BrokenPipeError:  # the parser is gone (it ended, or died): nothing left to read ahead for
        pass


def usable(sources):
    """The indexes of ``sources`` (a list) that a worker can read again: line sources with
    blocks that read a path (textio.TextLines), not texts in memory nor a stream that would
    be read once; none when they are small in all."""
    ks = [k for k, source in enumerate(sources)
          if not isinstance(source, str) and hasattr(source, "blocks") and getattr(source, "path", None)]
    if sum(getattr(sources[k], "nbytes", lambda: 0)() for k in ks) < MIN_BYTES:
        return []
    return ks


PIPE_BYTES = 1 << 20  # the pipe's buffer: slack for the blocks that cost one side more than the other


def _widen(conn):
    """Let the worker run up to PIPE_BYTES ahead (Linux's default pipe holds 64 KiB, 3 blocks'
    worth: each side would wait on the other's slow blocks); where it cannot, as it is."""
    try:
        import fcntl
        fcntl.fcntl(conn.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)
    except (ImportError, OSError, ValueError):
        pass


class Readers(object):
    """``workers`` processes reading the tqdm bars and some blocks' shapes of ``sources`` ({index:
    source}) ahead, the files dealt round robin."""

    def __init__(self, sources, workers):
        ctx = multiprocessing.get_context("fork")  # the worker hashes lines as this process does
        order = sorted(sources)
        self.of, self.procs = {}, []
        for w in range(workers):
            mine = [(k, sources[k]) for k in order[w::workers]]
            if not mine:
                continue
            out, into = ctx.Pipe(duplex=False)
            _widen(into)
            proc = ctx.Process(target=_work, args=(mine, into), name="gpu-runbook-joblog-%d" % w, daemon=True)
            proc.start()
            into.close()
            self.procs.append(proc)
            for k, _source in mine:
                self.of[k] = out

    def ahead(self, k, lines):
        """File ``k``'s Ahead (``lines``: the parser's text.FileLines of it), or None when no
        worker reads it."""
        out = self.of.get(k)
        return Ahead(out, lines) if out is not None else None

    def close(self):
        for proc in self.procs:
            if proc.is_alive():
                proc.terminate()
            proc.join()


class Ahead(object):
    """What a worker read of one file, taken block by block and line by line as the parser
    reaches them. A line is known by its hash and length (read_bars is a function of the
    line's text: two lines alike read alike) and by its block (the parser's FileLines.starts
    say which block a line number is in: both read the file in the same blocks); a block by
    its index, hash and length."""

    def __init__(self, out, lines):
        self.out, self.lines, self.upto, self.ended = out, lines, -1, False
        self.records = deque()  # [block index, bars_of_block, how many of them were looked at, made], in order
        self.k = -1  # the index of the block split() was last given

    def split(self, block):
        """The shapes of the parser's next block: scan.Made as the worker made them, when it made
        them of this very text; else scan.shapes of it."""
        self.k = k = self.k + 1
        while self.upto < k and not self.ended:
            self._next()
        for record in reversed(self.records):
            if record[0] < k:
                break
            made = record[3]
            if record[0] == k and made is not None:
                record[3] = None
                if made[1] == len(block) and made[0] == hash(block):
                    return made[2]
        return shapes(block)

    def take(self, lineno, raw):
        """(raw, read_bars of its text) when the worker read ``raw`` in the block of line
        ``lineno``; else None (the parser reads it)."""
        k = bisect_right(self.lines.starts, lineno) - 1
        records = self.records
        while self.upto < k and not self.ended:
            self._next()
        while records and records[0][0] < k:
            records.popleft()  # blocks before this line's
        if not records or records[0][0] != k or not records[0][1]:
            return None
        record = records[0]
        bars, key = record[1], (hash(raw), len(raw))
        while record[2] < len(bars):  # in order: lines before it were skipped or read by another handler
            h, size, got = bars[record[2]]
            record[2] += 1
            if (h, size) == key:
                return raw, got
        return None

    def finish(self):
        """Take what is left of the file, so the next file starts where it should."""
        while not self.ended:
            self._next()
        self.records.clear()

    def _next(self):
        try:
            msg = self.out.recv()
        except (EOFError, OSError):  # the worker died: the parser reads the rest itself
            msg = END
        if msg is END:
            self.ended = True
            return
        k, bars, made = msg
        self.upto = k
        self.records.append([k, bars, 0, made])


def job_log_workers():
    """How many workers the CLI and the report step ask parse_job_logs for (the same result):
    $GPU_RUNBOOK_JOB_LOG_WORKERS (0: none), else one where this process may use two CPUs or
    more (parse_job_logs starts it only for MIN_BYTES of logs or more): on one CPU it would
    only add its own cost."""
    env = os.environ.get("GPU_RUNBOOK_JOB_LOG_WORKERS", "").strip()
    if env.isdigit():
        return int(env)
    return 1 if usable_cpus() >= 2 else 0


# the CPU quota of this process's cgroup: v2 'QUOTA PERIOD' (or 'max'), v1 the two cfs files
CPU_MAX = "/sys/fs/cgroup/cpu.max"
CFS_QUOTA, CFS_PERIOD = "/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "/sys/fs/cgroup/cpu/cpu.cfs_period_us"


def usable_cpus():
    """The CPUs this process may run on (its affinity), fewer under a cgroup CPU quota (a
    container limited to 1.5 CPUs counts 1.5)."""
    try:
        cpus = float(len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        cpus = float(os.cpu_count() or 1)
    quota = None
    try:
        with open(CPU_MAX) as fh:
            fields = fh.read().split()
        if len(fields) == 2 and fields[0] != "max":
            quota = float(fields[0]) / float(fields[1])
    except (OSError, ValueError, ZeroDivisionError):
        try:
            with open(CFS_QUOTA) as fq, open(CFS_PERIOD) as fp:
                q, period = int(fq.read()), int(fp.read())
            if q > 0 and period > 0:
                quota = q / float(period)
        except (OSError, ValueError):
            pass
    return min(cpus, quota) if quota else cpus
