"""A job's rank logs read ahead by worker processes, for the parser in this one.

What a file's reading costs is mostly what does not depend on the job's state: reading,
decompressing, decoding and cleaning its lines, each line's shape and its kind (scan.Block),
and what a tqdm line's bars say (progress.read_bars: the handler adds them to the job). Workers do that, each for its share of the files, in order; this process
takes their blocks file by file, in the job's order, and does all the rest (the prefilter's
verdicts, which depend on what earlier lines said, and every handler): the job state is
built by one process, line by line in the serial order, so the job and its findings are the
serial ones, exactly.

Memory stays flat: a worker is a block or so ahead of the parser (a pipe, written as it is
read). A worker that
fails on a file (a bug) says so, and the parser reports that file as it reports any bug on
a file (findings.never_raise); one that dies makes the files it had left fail the same way.
"""

import multiprocessing
import signal

from .lines import line_text
from .progress import read_bars
from .quiet import LOUD
from .scan import Block, shapes
from .text import FileLines

POLL = 1.0  # seconds to wait for a worker that ended to say why


class WorkerFailed(Exception):
    """A worker could not read a file (or died): the parser reports the file as unparsed."""


def _work(assigned, out):
    """Read each (index, source) in turn: its blocks, then ('end', counts, the source's own
    attributes), or ('error', why)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # ^C is the parser's to handle: it ends the workers
    cache = {}
    for _index, source in assigned:
        lines = FileLines(source)
        try:
            for n, text, keys in lines.blocks(shapes):
                block = Block(text, keys, cache)
                block.bars = _bars(block)
                out.send((n, block.pack()))
        # a read error or a bug on this file's text: reported for this file, the others go on
        except (OSError, EOFError, ValueError, LookupError, TypeError, ArithmeticError, AttributeError,
                RuntimeError) as exc:
            out.send(("error", "%s: %s" % (type(exc).__name__, exc)))
            continue
        out.send(("end", lines.lines, lines.cut, dict(vars(source))))
    out.close()


MIN_BYTES = 32 << 20  # less than this in all: read here (starting processes costs more than it saves)


def _bars(block):
    """{index: progress.read_bars of its text} of the block's loud lines with a tqdm bar: what
    the tqdm handler would read in the parser (a pure function of the line), read here."""
    loud = [kind == LOUD for kind in block.kinds]
    bars = {}
    for i in [i for i, u in enumerate(block.ids) if loud[u]]:
        raw = block[i]
        if "%|" in raw:
            text = line_text(raw)
            if "%|" in text:
                bars[i] = read_bars(text)
    return bars or None


def usable(sources):
    """The indexes of ``sources`` (a list) that a worker can read: line sources with blocks
    (textio.TextLines), not texts already in memory; none when they are small in all."""
    ks = [k for k, source in enumerate(sources) if not isinstance(source, str) and hasattr(source, "blocks")]
    if sum(getattr(sources[k], "nbytes", lambda: 0)() for k in ks) < MIN_BYTES:
        return []
    return ks


class Readers(object):
    """``workers`` processes reading ``sources`` ({index: source}) ahead, round robin."""

    def __init__(self, sources, workers):
        ctx = multiprocessing.get_context("fork")
        order = sorted(sources)
        self.of, self.procs, self.done = {}, [], set()
        for w in range(workers):
            mine = [(k, sources[k]) for k in order[w::workers]]
            if not mine:
                continue
            out, into = ctx.Pipe(duplex=False)  # no feeder thread: a worker is a block or so ahead
            proc = ctx.Process(target=_work, args=(mine, into), name="gpu-runbook-joblog-%d" % w, daemon=True)
            proc.start()
            into.close()
            self.procs.append(proc)
            for k, _source in mine:
                self.of[k] = (out, proc)

    def has(self, k):
        return k in self.of

    def blocks(self, k, lines):
        """(first lineno, Block) of file ``k`` as its worker made them; at the end, ``lines``
        (its FileLines) and its source carry the counts the worker's reading left."""
        out, proc = self.of[k]
        while True:
            msg = self._get(out, proc)
            if msg[0] == "end":
                self.done.add(k)
                _tag, lines.lines, lines.cut, state = msg
                vars(lines.source).update(state)
                return
            if msg[0] == "error":
                self.done.add(k)
                raise WorkerFailed(msg[1])
            yield msg

    def finish(self, k, lines):
        """Take what is left of file ``k`` (the parser stopped early: a bug on that file), so
        the next file starts where it should."""
        if k in self.of and k not in self.done:
            try:
                for _item in self.blocks(k, lines):
                    pass
            except WorkerFailed:
                pass

    def close(self):
        for proc in self.procs:
            if proc.is_alive():
                proc.terminate()
            proc.join()

    @staticmethod
    def _get(out, proc):
        try:
            return out.recv()
        except (EOFError, OSError):
            proc.join(POLL)
            raise WorkerFailed("the reading process ended (exit status %s)" % proc.exitcode)
