# SPDX-License-Identifier: Apache-2.0
"""How a table's row is found in a line (vocab/__init__.py's Table): a printf format compiled to its
literal fragments and the shape of the gaps between them, matched linearly; a format with too little
literal text but a fixed shape of numbers matched whole by that shape; and the word index that hands
a line only the rows whose key word it holds."""

import re

MIN_LITERAL = 12       # literal characters a row needs to be matched at all
MIN_FRAGMENT = 6       # ... and the length of its longest fragment

# a printf conversion: flags, width, precision, length, then the conversion; the kernel's
# %p extensions (%pI4, %pM, %pe ...) and Slurm's %pJ/%ps read as %p + letters
_CONV = re.compile(r"%(?P<flags>[-+ #0']{0,5})(?P<width>\*|\d{1,3})?(?:\.(?P<prec>\*|\d{1,3}))?"
                   r"(?P<len>hh|h|ll|l|j|z|t|L|q|I64|I32)?(?P<spec>p[A-Za-z]{0,3}|[diouxXeEfFgGaAcsmn%])")
# what the text of one argument may look like, by conversion (checked with fullmatch on the gap)
_GAP = {
    "d": r"[-+]?\d{1,20}", "i": r"[-+]?\d{1,20}", "u": r"\d{1,20}", "o": r"[0-7]{1,22}",
    "x": r"(?:0[xX])?[0-9a-fA-F]{1,16}", "X": r"(?:0[xX])?[0-9a-fA-F]{1,16}",
    "c": r"[^\n]",
}
_ANY = None  # %s, %p, %f ...: any text (possibly empty)


def compile_format(fmt):
    """A format -> (fragments, gaps): the literal fragments in order and, between them, the
    conversions each gap holds (a tuple of conversion letters). A format that begins with a
    conversion has a leading gap; one that ends with one a trailing gap. Only the first
    printed line of a multi-line message is kept (lines are read one at a time)."""
    first = next((part for part in fmt.split("\n") if part.strip()), "")
    frags, gaps, pos, cur = [], [], 0, ()
    lit = []
    for m in _CONV.finditer(first):
        lit.append(first[pos:m.start()])
        pos = m.end()
        if m.group("spec") == "%":
            lit.append("%")
            continue
        text = "".join(lit)
        if text.strip():  # blanks alone between two conversions are no fragment: the gap holds both
            frags.append(text)
            gaps.append(cur)
            cur = ()
        lit = []
        cur = cur + (m.group("spec")[0] if m.group("spec")[0] != "p" else "p",)
    lit.append(first[pos:])
    text = "".join(lit)
    if text.strip():
        frags.append(text)
        gaps.append(cur)
        cur = ()
    gaps.append(cur)  # after the last fragment
    # whitespace at the ends of a fragment is not reliable (a trailing space before %s of ""):
    # strip it, the gap absorbs it; inside one, a run of blanks is one (a log collector or a
    # paste collapses NHC's two spaces after a colon): Table.match collapses the line's too
    frags = [" ".join(f.split()) for f in frags]
    if frags and not cur and len(frags[-1]) > 1 and frags[-1].endswith("."):
        # a message's closing full stop is no part of what it says: quoted inside a sentence or
        # cut by a paste it is often lost ('... matching NVIDIA driver package' without its '.')
        frags[-1] = frags[-1][:-1]
    keep = [i for i, f in enumerate(frags) if f]
    return tuple(frags[i] for i in keep), tuple(gaps[i] for i in keep) + (gaps[-1],)


def literal_length(fmt):
    return sum(len(f) for f in compile_format(fmt)[0])


def matchable(fmt):
    """True when a format has enough literal text to be matched (module docstring)."""
    frags, _gaps = compile_format(fmt)
    return bool(frags) and sum(len(f) for f in frags) >= MIN_LITERAL and max(len(f) for f in frags) >= MIN_FRAGMENT


# A format with too little literal text to be found by it, but a fixed shape of numbers: the driver's GSP
# RPC history rows ('NVRM:     %c%-4d %-4d %-21.21s %10u 0x%016llx ...'). Matched whole, from its
# leading literal (at least MIN_SHAPE_HEAD characters) to the line's end, by what each conversion prints:
# numbers, one character, a string of bounded width without blanks; any other conversion is no shape.
MIN_SHAPE_CONVS = 4
MIN_SHAPE_HEAD = 4
_SHAPE_CONV = {"d": r"[-+]?\d{1,20}", "i": r"[-+]?\d{1,20}", "u": r"\d{1,20}", "x": r"[0-9a-fA-F]{1,16}",
               "X": r"[0-9a-fA-F]{1,16}", "c": r"[^ ]?"}


def shape_regex(fmt):
    """The compiled shape of a format (blanks already joined in the line it is matched against),
    or None when the format has no such shape (matchable formats are found by their text)."""
    first = next((part for part in fmt.split("\n") if part.strip()), "")
    first = " ".join(first.split())
    out, pos, convs = [], 0, 0
    for m in _CONV.finditer(first):
        out.append(first[pos:m.start()])
        pos = m.end()
        spec = m.group("spec")
        if spec == "%":
            out.append("%")
            continue
        if spec in _SHAPE_CONV:
            out.append((_SHAPE_CONV[spec],))
        elif spec == "s" and m.group("prec") and m.group("prec").isdigit():
            out.append(("[^ ]{1,%d}" % int(m.group("prec")),))
        else:
            return None
        convs += 1
    out.append(first[pos:])
    head = out[0] if isinstance(out[0], str) else ""
    if convs < MIN_SHAPE_CONVS or len(head.strip()) < MIN_SHAPE_HEAD:
        return None
    pattern = []
    for part in out:
        if isinstance(part, tuple):
            pattern.append(" ?" + part[0])  # a conversion's padding: one blank once the line's are joined
        else:
            pattern.append(" ?".join(re.escape(w) for w in part.split(" ")))
    return re.compile("".join(pattern) + r" ?$")


def _gap_ok(text, convs):
    """The text between two fragments fits the conversions there."""
    if not convs:
        return not text.strip()
    if len(convs) == 1:
        pat = _GAP.get(convs[0], _ANY)
        return pat is None or re.fullmatch(pat, text.strip()) is not None
    return True  # several conversions in one gap: their separators were stripped away


def match_fragments(line, frags, gaps):
    """True when ``line`` holds ``frags`` in order with gaps of the right shape (linear). Runs
    of blanks in the line count as one, as in the fragments (compile_format)."""
    if "  " in line or "\t" in line:
        line = " ".join(line.split())
    return _span(line, frags, gaps) is not None


_TRIES = 24  # occurrences of fragments tried per line and row: bounded, so still linear in the line


def _takes_any(convs):
    """True when a gap of these conversions takes any text (%s, %p ...)."""
    return bool(convs) and all(_GAP.get(c) is None for c in convs)


# a message cut inside a value that takes any text (a list that wraps onto the next lines, a paste
# cut short): its head is the message when the value runs on for this long, or ends in an ellipsis
CUT_VALUE = 80
CUT_ENDS = ("...", "\u2026", "...]", "...)", "...'")


def _cut_here(line, frags, gaps, i, pos):
    """True when ``line`` ends inside gap ``i`` (any text) after frags[:i], placed, hold enough
    literal text to tell the message -- two fragments or more, MIN_LITERAL and at least half the
    message's: a head many messages share ('NVRM: Xid (PCI:%s): ') tells none of them -- and the
    value runs on to the line's end."""
    placed = sum(len(f) for f in frags[:i])
    if i < 2 or not _takes_any(gaps[i]) or placed < MIN_LITERAL or 2 * placed < sum(len(f) for f in frags):
        return False
    return len(line) - pos >= CUT_VALUE or line.rstrip().endswith(CUT_ENDS)


def _span(line, frags, gaps, cut=False):
    """(start, end) of ``frags`` in ``line`` (blanks already joined), or None. A fragment whose
    gap before it has the wrong shape is tried at its next occurrence, and a row that fails
    after its first fragment is tried again from that fragment's next occurrence ('%s:%d: msg'
    in a line whose time stamp holds colons): a bounded number of tries in all. With ``cut``, a
    line that ends inside a value the message's head leads to is that message (_cut_here)."""
    budget = [_TRIES]

    def rest(i, pos):
        """End of frags[i:] placed from ``pos`` on, or None."""
        if i == len(frags):
            return pos
        at = line.find(frags[i], pos)
        if at < 0 and cut and _cut_here(line, frags, gaps, i, pos):
            return len(line)
        while at >= 0 and budget[0] > 0:
            budget[0] -= 1
            if _gap_ok(line[pos:at], gaps[i]):
                end = rest(i + 1, at + len(frags[i]))
                if end is not None:
                    return end
                if _takes_any(gaps[i + 1]):
                    return None  # the next gap takes any text: a later place cannot help
            at = line.find(frags[i], at + 1)
        return None

    at = line.find(frags[0])
    while at >= 0 and budget[0] > 0:
        budget[0] -= 1
        end = rest(1, at + len(frags[0]))
        if end is not None:
            return at, end
        if len(frags) > 1 and _takes_any(gaps[1]):
            return None
        at = line.find(frags[0], at + 1)
    return None


def _quoted_in_error(line, span):
    """True when the text around a benign message's ``span`` says something failed: the line
    quotes the message inside an error of its own (docker's "... initialization error: ...
    stderr: Auto-detected mode as 'legacy'"), so the benign row does not explain it."""
    from .reading import ERROR_LIKE, NOT_AN_ERROR
    return bool(ERROR_LIKE.search(line[:span[0]]) or ERROR_LIKE.search(line[span[1]:])) and \
        not NOT_AN_ERROR.search(line)


_WORD = re.compile(r"\w+")


def _inner_words(frag):
    """The words of a fragment with a non-word character inside the fragment on both sides: in a
    line that holds the fragment, each is a whole word (a word at a fragment's end may be glued
    to the text a conversion printed)."""
    return [m.group() for m in _WORD.finditer(frag)
            if m.start() > 0 and m.end() < len(frag)]


def _word_index(compiled):
    """({word: [positions in compiled]}, [positions with no inner word]): each row is filed under
    its rarest inner word (the longest among equals), so a line is tried only against the rows
    whose word it holds: a table of 5,000 rows costs a line a few tries, not 5,000 finds."""
    words = [set(w for f in c[2] for w in _inner_words(f)) for c in compiled]
    freq = {}
    for ws in words:
        for w in ws:
            freq[w] = freq.get(w, 0) + 1
    by_word, unindexed = {}, []
    for k, ws in enumerate(words):
        if not ws:
            unindexed.append(k)
            continue
        key = min(ws, key=lambda w: (freq[w], -len(w), w))
        by_word.setdefault(key, []).append(k)
    return by_word, unindexed
