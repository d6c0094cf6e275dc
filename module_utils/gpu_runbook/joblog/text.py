# SPDX-License-Identifier: Apache-2.0
"""Small text helpers of the job-log parser: physical lines, times, ranks from file names,
bounded lists. Pure functions; nothing here knows a log format beyond its own regex."""

import re
from collections import Counter, deque
from itertools import chain
from datetime import datetime, timezone

from ..findings import small_int, strip_ansi
from .patterns import CAP, FILE_RANK, GLOG, ISO_TS, MAX_EVIDENCE, MAX_LINE, SRUN_LABEL


def ints(text):
    return [int(x) for x in re.findall(r"\d+", text or "")]


def busid_to_pci(raw):
    """NCCL prints busId as the int64 of the PCI address in hex: 2a000 -> 0000:2a:00.0."""
    try:
        v = int(raw, 16)
    except (TypeError, ValueError):
        return None
    return "%04x:%02x:%02x.%x" % (v >> 20, (v >> 12) & 0xff, (v >> 4) & 0xff, v & 0xf)


def rank_from_name(name):
    base = re.split(r"[\\/]", name or "")[-1]
    m = FILE_RANK.search(base)
    return int(m.group(1)) if m else None


def to_unit(val, unit):
    try:
        x = float(val)
    except (TypeError, ValueError):
        return None
    return x * {"": 1, "k": 1e3, "M": 1e6, "G": 1e9}.get(unit or "", 1)


def median(xs):
    s = sorted(xs)
    n = len(s)
    if not n:
        return None
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2.0


def since_value(since):
    """since: datetime, epoch seconds or ISO string -> naive datetime (or None)."""
    if since is None:
        return None
    try:
        if isinstance(since, datetime):
            return since.replace(tzinfo=None)
        if isinstance(since, (int, float)):
            return datetime.fromtimestamp(float(since), timezone.utc).replace(tzinfo=None)
        m = ISO_TS.search(str(since))
        if m:
            return datetime(*[int(x) for x in m.groups()])
        m = re.match(r"\s*(\d{4})-(\d{2})-(\d{2})\s*$", str(since))
        if m:
            return datetime(*[int(x) for x in m.groups()])
    except (ValueError, OverflowError, OSError, TypeError):
        return None
    return None


def line_time(line, year, since_dt=None):
    """The wall-clock time a line carries (ISO, or glog with the year guessed), else None."""
    m = ISO_TS.search(line[:64])
    try:
        if m:
            return datetime(*[int(x) for x in m.groups()])
        m = GLOG.match(line)
        if m and year:
            t = datetime(year, int(m.group(2)), int(m.group(3)), int(m.group(4)),
                         int(m.group(5)), int(m.group(6)))
            if since_dt is not None and (since_dt - t).days > 180:
                t = t.replace(year=year + 1)          # a job that started in December, log in January
            elif since_dt is not None and (t - since_dt).days > 180:
                t = t.replace(year=year - 1)          # since in January, line from December
            return t
    except ValueError:
        return None
    return None


def evidence(line):
    return line if len(line) <= MAX_EVIDENCE else line[:MAX_EVIDENCE] + "..."


class FileLines(object):
    """One file of the job as the parser reads it, never held whole: its text, or a line
    source (any iterable of lines, e.g. textio.TextLines streaming a path; a trailing \\n is
    dropped). Yields (lineno, line) with a trailing \\r, ANSI escapes and NULs removed (each
    line cleaned on its own: an escape never spans lines; a \\r inside stays for tqdm). A
    line longer than MAX_LINE keeps its last MAX_LINE characters and counts in ``cut``;
    ``lines`` counts the lines read.

    A text, or a source with ``blocks()`` (TextLines), is also read in blocks of whole lines
    (``blocks()``: (first lineno, block), ``block.split("\\n")`` the lines, cleaned the same
    way), which is how the parser's prefilter reads a big file (scan.py)."""

    def __init__(self, source):
        self.source, self.cut, self.lines = source, 0, 0
        self.starts = []  # the first lineno of each block blocks() yielded (parallel.Ahead: a line's block)
        self._last = deque((), TAIL_LINES)  # the last lines read (a line source)
        self._last_blocks = deque((), 2)     # ... or the last two blocks (a block holds many lines)

    @property
    def has_blocks(self):
        return isinstance(self.source, str) or hasattr(self.source, "blocks")

    def __iter__(self):
        if self.has_blocks:
            for n, _block, lines in self.blocks(_lines):
                for k, line in enumerate(lines, n):
                    yield k, line
            return
        source, n, cut = self.source, 0, 0
        try:
            for line in source:
                n += 1
                if line[-1:] == "\n":
                    line = line[:-1]
                if len(line) > MAX_LINE:
                    cut += 1
                    line = line[-MAX_LINE:]
                if "\x1b" in line:  # ESC's sequences; those written out as text after joins (lines.read_line)
                    line = strip_ansi(line, written=False)
                if "\x00" in line:
                    line = line.replace("\x00", "")
                line = line.rstrip("\r")
                self._last.append(line)
                yield n, line
        finally:
            self.lines, self.cut = n, cut + (getattr(source, "cut", 0) or 0)  # and what the source cut

    def blocks(self, split=None, count=True):
        """(lineno of its first line, block, ``split(block)`` or None): the lines in blocks, each
        cleaned as __iter__ cleans a line (the same cuts, the same counts). ``split``: a function
        of a block giving one item per line (its count is the lines' count, which then costs
        nothing more); a source's ``blocks(count=False)`` leaves the count to this reader.
        ``count=False``: the lines are not counted (each block's lineno is 1, ``starts`` stays
        empty), for a reader that needs only the blocks (parallel.py)."""
        source, n, cut, own = self.source, 0, 0, not isinstance(self.source, str)
        starts = self.starts = []
        try:
            for block in _str_blocks(source) if not own else source.blocks(count=False):
                if len(block) > MAX_LINE:
                    parts = block.split("\n")
                    if max(map(len, parts)) > MAX_LINE:
                        long = [i for i, line in enumerate(parts) if len(line) > MAX_LINE]
                        for i in long:
                            parts[i] = parts[i][-MAX_LINE:]
                        cut += len(long)
                        block = "\n".join(parts)
                block = clean_block(block)
                self._last_blocks.append(block)
                items = split(block) if split is not None else None
                if count:
                    starts.append(n + 1)
                yield n + 1, block, items
                if count:
                    n += len(items) if items is not None else block.count("\n") + 1
        finally:
            self.lines, self.cut = n, cut + (getattr(source, "cut", 0) or 0)
            if own:
                source.lines = n  # what it yielded: it left the count to this reader

    def tail(self):
        """The file's last TAIL_LINES lines (cleaned), once it was read: what a reader of the
        run's end looks at whatever the prefilter skipped."""
        if not self.has_blocks:
            return list(self._last)
        out = []
        for block in reversed(self._last_blocks):
            out[:0] = block.split("\n")[-(TAIL_LINES - len(out)):]
            if len(out) >= TAIL_LINES:
                break
        return out


TAIL_LINES = 64  # lines FileLines.tail keeps


def _lines(block):
    return block.split("\n")


_CR_RUN_AT_END = re.compile(r"(?<!\r)\r+(?=\n)")  # from a run's start only: linear on a run of \r
BLOCK = 256 << 10  # characters of a text per block (what stays in a core's cache through its passes)


def clean_block(block):
    """A block of lines cleaned as FileLines cleans each line: ANSI escapes (line by line: an
    OSC may not span lines), NULs, then the \\r run at a line's end."""
    if "\x1b" in block:
        block = "\n".join(strip_ansi(line, written=False) if "\x1b" in line else line for line in block.split("\n"))
    if "\x00" in block:
        block = block.replace("\x00", "")
    if "\r" in block:
        if has_crlf(block):
            block = block.replace("\r\n", "\n")  # CRLF: one \r per line, the common case
            if "\r\n" in block:
                block = _CR_RUN_AT_END.sub("", block)
        if block[-1:] == "\r":
            block = block.rstrip("\r")
    return block


MAX_CR_LINES = 32  # lines with a \r looked at one by one before a plain search for "\r\n"


def has_crlf(block):
    """Whether "\\r\\n" is in ``block``, found from its \\r's: a line that holds one can end
    with \\r\\n, no other can. A block of tqdm chains (a few lines of bare \\r's) costs a few
    memchr instead of a search of every character for the two; past MAX_CR_LINES such lines,
    that search."""
    at = block.find("\r")
    for _ in range(MAX_CR_LINES):
        if at < 0:
            return False
        nl = block.find("\n", at)
        if nl < 0:
            return False
        if block[nl - 1] == "\r":  # nl > at: the \r at ``at`` or one after it
            return True
        at = block.find("\r", nl + 1)
    return at >= 0 and block.find("\r\n", at) >= 0


def _str_blocks(text):
    """A text's lines (\\n only; a last \\n ends the last line) in blocks of about BLOCK
    characters, no list of them beside the text."""
    if not text:
        return
    end, pos = len(text) - 1 if text.endswith("\n") else len(text), 0
    while end - pos > BLOCK:
        stop = text.rfind("\n", pos, pos + BLOCK)
        if stop < 0:
            stop = text.find("\n", pos + BLOCK, end)  # a line longer than a block: a block of its own
            if stop < 0:
                break
        yield text[pos:stop]
        pos = stop + 1
    yield text[pos:end]


def physical_lines(lines):
    """(lineno, line) of a text or a line source, cleaned (see FileLines)."""
    return iter(lines if isinstance(lines, FileLines) else FileLines(lines))


# what starts a record of its own (never the tail of a wrapped line): a bracket, a Ray prefix, a
# C++ frame, a traceback, an ISO date, glog, NCCL's 'host:pid:tid [dev]'
_RECORD_START = re.compile(r"(?:[\[(]|frame #|Traceback|\d{4}-\d{2}-\d{2}|[EWIF]\d{4} |"
                           r"[A-Za-z0-9][\w.\-]{0,253}:\d{1,9}:\d{1,9} \[\d{1,4}\])")
MAX_JOIN = 32


def _table_row(line):
    """A row of aligned output (nccl-tests' results, an nvidia-smi table, '#' rules), also after
    srun --label's 'N: ': rows of one width are the table's layout, not a terminal's wrapping."""
    if line[:1].isdigit():
        m = SRUN_LABEL.match(line)
        if m:
            line = line[m.end():]
    return line[:1] in (" ", "\t", "|", "+") or line[:1] == "#" and line[:5] != "#033["  # rsyslog's written ESC


def wrap_width(text):
    """The width a terminal (or an issue paste of one) wrapped this log at, else None. A wrapped
    log has no line longer than that width, and at least three distinct lines exactly that
    long that end inside a word (a line padded with spaces to the width is complete)."""
    maxlen, widths, firsts = 0, Counter(), {}
    for _n, line in (text if isinstance(text, list) else physical_lines(text)):
        n = len(line)
        if n > maxlen:
            maxlen = n
            if n > 400:
                return None
        if n >= 60 and line[-1] != " " and not _table_row(line):
            widths[n] += 1
            firsts.setdefault(n, set())
            if len(firsts[n]) < 3:
                firsts[n].add(line[:40])
    if maxlen < 60 or widths.get(maxlen, 0) < 3 or len(firsts.get(maxlen, ())) < 3:
        return None
    return maxlen


# what wrap detection looks at: a terminal-wrapped paste shows its width in its first lines
LOOKAHEAD_LINES, LOOKAHEAD_CHARS = 4000, 1 << 20


def logical_lines(lines):
    """(lineno, line): physical lines, with a terminal-wrapped line joined to its continuation
    ('... Watchdog caught colle' + 'ctive operation timeout ...'); bounded joins, linear. The
    wrap width is judged on the first lines (bounded lookahead): a file streams once."""
    items = physical_lines(lines)
    head, size = [], 0
    for item in items:
        head.append(item)
        size += len(item[1]) + 1
        if len(item[1]) > 400 or len(head) >= LOOKAHEAD_LINES or size >= LOOKAHEAD_CHARS:
            break
    return joined(chain(head, items), head_width(head, size))


def head_width(head, size):
    """The wrap width judged on a file's first lines (``size``: their characters)."""
    return wrap_width(head) if size >= 180 else None


def joined(items, width):
    """(lineno, line) with a line wrapped at ``width`` joined to its continuation (``width``
    None: the lines as they are)."""
    if width is None:
        for item in items:
            yield item
        return
    held = None                     # (lineno, text so far, joins)
    for n, line in items:
        if held is not None:
            hn, htext, joins = held
            if line and not _RECORD_START.match(line) and line[:12] != htext[:12]:
                whole = htext + line.rstrip(" ")
                if len(line) == width and line[-1] != " " and joins < MAX_JOIN and len(whole) < MAX_LINE:
                    held = (hn, htext + line, joins + 1)
                    continue
                held = None
                yield hn, whole
                continue
            held = None
            yield hn, htext
        if len(line) == width and line[-1] != " " and not _table_row(line):
            held = (n, line, 0)
            continue
        yield n, line.rstrip(" ") if len(line) == width else line
    if held is not None:
        yield held[0], held[1]


def add(lst, item):
    """Bounded append: a pathological log cannot grow memory without limit (first ones win)."""
    if len(lst) < CAP:
        lst.append(item)


def task_list(spec):
    """Slurm task list '3,5-7' -> [3, 5, 6, 7]."""
    out = []
    for part in (spec or "").replace(" ", "").split(","):
        if "-" in part:
            a, _, b = part.partition("-")
            a, b = small_int(a), small_int(b)
            if a is not None and b is not None and b - a < 100000:
                out.extend(range(a, b + 1))
        elif small_int(part) is not None:
            out.append(small_int(part))
    return out
