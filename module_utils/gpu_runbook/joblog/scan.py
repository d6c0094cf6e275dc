# SPDX-License-Identifier: Apache-2.0
"""The prefilter (quiet.py) over blocks of lines: what a big file costs is its loud lines, not
its quiet ones.

``lines_to_read(lines, fs, st, first_tries)`` yields the (lineno, line) the parser must see,
in order: every logical line (text.logical_lines) but those quiet.quiet would skip anyway, as
long as the parser keeps (fs, st) up to date between two of them (it is a generator: it looks
at the state again after each line it gave). A line it yields may still be quiet: the parser
asks quiet.quiet of every line, so the scan only ever leaves out lines, and only quiet ones.

How a block (about 256 KiB of whole lines, FileLines.blocks) is read, in C but for one
step: its lines' shapes (quiet.py's key: the UTF-8 bytes with every digit a 0) come from one
encode, one translate and one split of the whole block; each distinct shape is judged once
(quiet.shape_kind, through the job's shape cache: a Block); the loud ones are found by one
pass of lookups by shape index. The verdict of quiet() on a line is a function of its shape
and of the state:

* the file is in a multi-line construct (quiet.held) or the job's first lines are still
  searched for a time (``st.time_tries < first_tries``): every line is given, one at a time,
  until that ends;
* a LOUD shape, or a DIGIT one once nccl-tests' header came: given;
* a PLAIN shape: quiet once the file's rank was seen; a RANKED one once every '[rankN]:'
  rank of the block was seen (until then those lines are given: the parser reads the first
  of each rank and skips the rest itself).

After each line it gave, the scan looks at what may have changed: a construct begun (lines
one at a time until it ends), nccl-tests' header come (DIGIT shapes turn loud), a rank seen
(shapes held back by it turn quiet). Wrapped logs (text.head_width finds a width) and line
sources without blocks are read line by line, as before.
"""

import re
from array import array
from bisect import bisect_left
from itertools import accumulate, chain, compress, islice

from .memtrend import EARLY
from .quiet import DIGIT, LOSS, LOUD, MAX_SHAPE_LEN, MAX_SHAPES, MEM, PLAIN, ZERO, held, shape_kind
from .text import LOOKAHEAD_CHARS, LOOKAHEAD_LINES, head_width, joined, logical_lines

# the rank of a line that starts with torchrun's '[rankN]:' (every RANKED line, and maybe more)
_RANK_AT_START = re.compile(r"\n\[rank(\d{1,6})\]:")


def lines_to_read(lines, fs, st, first_tries, ahead=None):
    """(lineno, line) of ``lines`` (a text.FileLines) that the parser must see (module docstring).
    ``ahead``: what a worker process made of some of its blocks (parallel.Ahead.split)."""
    if not lines.has_blocks:
        for item in logical_lines(lines):
            yield item
        return
    blocks = _blocks(lines, st.shapes, ahead)
    first, size, count, done = [], 0, 0, False  # the blocks that hold the first lines (text.logical_lines' head)
    for n, block in blocks:
        first.append((n, block))
        for k in range(len(block)):
            line = block[k]
            count += 1
            size += len(line) + 1
            if len(line) > 400 or count >= LOOKAHEAD_LINES or size >= LOOKAHEAD_CHARS:
                done = True
                break
        if done:
            break
    head = [] if size < 180 else list(islice(_split(first, ()), count))
    width = head_width(head, size)
    del head
    if width is not None:  # a terminal-wrapped paste: its lines are joined, one at a time
        for item in joined(_split(first, blocks), width):
            yield item
        return
    for n, block in first:
        for item in _block(n, block, fs, st, first_tries):
            yield item
    del first
    for n, block in blocks:
        for item in _block(n, block, fs, st, first_tries):
            yield item


def _blocks(lines, cache, ahead=None):
    """(first lineno, Block) of a FileLines read in blocks: from the lines' shapes, or as a
    worker made it (a Made, from ``ahead.split``)."""
    for n, text, keys in lines.blocks(shapes if ahead is None else ahead.split):
        yield n, keys.block(text) if isinstance(keys, Made) else Block(text, keys, cache)


class Made(object):
    """A Block as a worker process made it (parallel.py), less its text: what the shapes gave
    (``ids``, ``kinds``) and, for an ASCII block, where its lines end (``cum``)."""

    __slots__ = ("ids", "kinds", "cum")

    def __init__(self, block):
        if block.cum is None and block.parts is None and block.text.isascii():
            block.index()  # a non-ASCII block's lines are split where they are read, not here too
        self.ids, self.kinds, self.cum = block.ids, block.kinds, block.cum

    def __len__(self):
        return len(self.ids)

    def block(self, text):
        made = Block.__new__(Block)
        made.text, made.ids, made.kinds, made.cum = text, self.ids, self.kinds, self.cum
        made.keys = made.ranks = None
        made.parts = None if self.cum is not None else text.split("\n")
        return made


def shapes(text):
    """quiet.py's key of each line of a block: its UTF-8 bytes, every digit a 0."""
    return text.encode("utf-8", "surrogatepass").translate(ZERO).split(b"\n")


EMPTY = -1  # the kind of an empty line's shape: the parser skips an empty line


class Block(object):
    """A block of lines as the scan reads it: its text, each line's shape (an index into
    ``kinds``: quiet.shape_kind of each distinct shape, EMPTY for an empty line) and each line
    by index (``block[i]``) without a list of them all: an ASCII block's lines are cut out
    where the shapes' lengths put them (a line is as long as its shape); others are split
    once. ``cache``: shape -> kind (JobState.shapes; bounded as quiet.py bounds it)."""

    __slots__ = ("text", "ids", "kinds", "keys", "cum", "parts", "ranks")

    def __init__(self, text, keys, cache):
        ids, kinds = dict.fromkeys(keys), []
        for key in ids:
            ids[key] = len(kinds)
            kind = cache.get(key) if key else EMPTY
            if kind is None:
                # the shape stands for the line: shape_kind's verdict does not depend on a digit's value
                kind = shape_kind(key.decode("utf-8", "surrogatepass"), key)
                if len(key) <= MAX_SHAPE_LEN and len(cache) < MAX_SHAPES:
                    cache[key] = kind
            kinds.append(kind)
        self.text, self.keys, self.kinds = text, keys, kinds
        self.ids = array("I", map(ids.__getitem__, keys))
        self.cum = self.parts = self.ranks = None

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        if self.parts is not None:
            return self.parts[i]
        if self.cum is None:
            self.index()
            if self.parts is not None:
                return self.parts[i]
        cum = self.cum
        return self.text[cum[i - 1] + i if i else 0:cum[i] + i]

    def index(self):
        """Where each line is: an ASCII block's line ends (from its shapes' lengths), else the
        lines split."""
        if self.text.isascii():
            self.cum = array("q", accumulate(map(len, self.keys)))
        else:
            self.parts = self.text.split("\n")

    def ranks_at_start(self):
        """The ranks of the block's lines that start with torchrun's '[rankN]:' (every line of
        a RANKED shape, and maybe more)."""
        if self.ranks is None:
            self.ranks = frozenset(int(r) for r in _RANK_AT_START.findall("\n" + self.text))
        return self.ranks


def _split(first, blocks):
    """(lineno, line) of the blocks read ahead (``first``: (n, Block)) and of those after."""
    for n, block in chain(first, blocks):
        for i in range(len(block)):
            yield n + i, block[i]


def _block(n0, block, fs, st, first_tries):
    """The lines of one block (the first one line ``n0``) that the parser must see."""
    ids = block.ids
    n, pos, j = len(ids), 0, 0
    cands = sig = waits = None
    while pos < n:
        if st.time_tries < first_tries or held(fs):
            yield n0 + pos, block[pos]
            pos += 1
            continue
        if cands is None or _signature(st, waits) != sig:
            loud, waits = _loud(block, fs, st)
            sig = _signature(st, waits)
            # the indexes from pos whose shape is loud, picked in C (no step of Python per line)
            cands = list(compress(range(pos, n), map(loud.__getitem__, ids[pos:]))) if any(loud) else []
            j = 0
        else:
            j = bisect_left(cands, pos, j)
        while j < len(cands):
            i = cands[j]
            j += 1
            yield n0 + i, block[i]
            pos = i + 1
            if held(fs) or _signature(st, waits) != sig:
                break
        else:
            pos = n


def _signature(st, waits):
    """What the block's verdicts depend on that reading a line may change: whether nccl-tests'
    header came, and (while some shape waits for a rank) how many ranks were seen."""
    return st.nccl_tests is None, len(st.ranks_seen) if waits else -1, not st.training_lines, st.memory_lines < EARLY


def _loud(block, fs, st):
    """([whether the parser must see a line of each shape now], whether one of them waits for
    a rank to be seen: quiet from then on)."""
    tests = st.nccl_tests is not None
    first_loss = not st.training_lines  # a loss line is read until a training-progress line was
    early_mem = st.memory_lines < EARLY  # a memory line while the first memory figures are gathered
    seen = st.ranks_seen
    plain_ok = fs.file_rank is None or fs.file_rank in seen
    ranked_ok = None
    loud, waits = [], False
    for kind in block.kinds:
        if kind == EMPTY:
            loud.append(False)
        elif kind == LOUD or (kind & DIGIT and tests) or (kind & LOSS and first_loss) or (kind & MEM and early_mem):
            loud.append(True)
        elif kind & PLAIN:
            loud.append(not plain_ok)
            waits = waits or not plain_ok
        else:  # RANKED
            if ranked_ok is None:
                ranked_ok = all(r in seen for r in block.ranks_at_start())
            loud.append(not ranked_ok)
            waits = waits or not ranked_ok
    return loud, waits
