# SPDX-License-Identifier: Apache-2.0
"""Memory a run reports about itself, line after line, and whether it keeps growing.

Trainers and their launchers print the memory they use beside their progress, each in its own
words; what they share is a memory word, then a number and its unit:

* a label holding "mem" or "RSS", then ``:`` or ``=``, then the figure: detectron2's
  ``max_mem: 5432M``, torchtitan's ``memory: 12.34GiB(15.65%)``, mmengine's ``memory: 5472``
  (its unit left out), a project's own ``RSS MEM USE: 5.11G``, DeepSpeed's see_memory_usage
  ``CPU Virtual Memory:  used = 45.6 GB``;
* Megatron-LM's report_memory: ``memory (MB) | allocated: 1234.5 | max allocated: ...``;
* procps' ``free``: ``Mem:  total  used  free ...`` rows, 'used' its second column.

Each figure joins a series per file, label and rank: the job's first EARLY figures, then the
figures among each file's last lines (FileLines.tail), so a long run's every line is not read
for them (the prefilter reads a memory line only while the first ones are gathered, quiet.MEM). A series that grows step after step
(several rises, still rising in its second half, half again over where it started) is memory
that is not given back: ``memory_growing`` (memory_leak). One jump (a bigger input) or a
warm-up that levels off is not. Pure functions of text, patterns linear in the line."""

import re

from ..findings import finding
from .text import evidence

# a memory label, then the figure (bounded spans: linear on a hostile line)
# (the label's words only: a number before it is another field's, and would split the series)
_LABELLED = re.compile(r"(?P<label>\b(?:[A-Za-z_][A-Za-z_ ]{0,30}?)?(?:mem(?:ory)?|rss)\b[A-Za-z_ ]{0,16}?)\s?[:=]\s{0,3}"
                       r"(?:used\s?=\s?)?(?P<val>\d{1,9}(?:\.\d{1,6})?)\s?(?P<unit>[KMGT]i?B?|[kmg]b|bytes?)?"
                       r"(?![\w.])", re.I)
_MEGATRON = re.compile(r"memory \(MB\) \| allocated: (?P<val>\d{1,9}(?:\.\d{1,6})?)")
_FREE = re.compile(r"^\s{0,4}Mem:\s+\d[\d.]{0,15}[KMGT]?i?\s+(?P<val>\d{1,15}(?:\.\d{1,3})?)(?P<unit>[KMGT]i?)?\s")
_RANK = re.compile(r"\brank\s?[:=]?\s?(\d{1,6})\b", re.I)
_MIB = {"k": 1.0 / 1024, "m": 1.0, "g": 1024.0, "t": 1024.0 * 1024, "b": 1.0 / (1024 * 1024)}

EARLY = 512           # memory figures read from the start of the job's logs; then each file's last lines
MAX_SERIES = 64       # series kept per job (the first ones win)
MAX_POINTS = 4096     # points kept per series (past it, every other one is dropped)
MIN_POINTS = 4
MIN_RISES = 3         # step after step, not one jump
SEGMENTS = 8          # ... counted between this many stretches of the series
GROWTH = 1.5          # the last figure over where the series started
STILL_RISING = 1.2    # ... and over its middle: no warm-up that levelled off
MIN_GROWTH_MIB = 1024.0


def _mib(val, unit):
    """(the figure in MiB, or as printed when its unit is not said; whether the unit was said)."""
    if not unit:
        return val, False
    return val * _MIB[unit[0].lower()], True


# a word every line with a figure holds (the prefilter reads such lines early: quiet.MEM)
WORDS = ("mem", "Mem", "MEM", "RSS", "rss")


def _may_hold_figure(text):
    """A memory word, and not the OOM killer's report of the process it killed (anon-rss:,
    total-vm:): those are no figures of the run's own."""
    return any(w in text for w in WORDS) and "-rss:" not in text and "total-vm" not in text


def figure(line, fs, st):
    """A handler of lines.HANDLERS: records a memory figure the line reports; never takes the
    line (False: the other handlers read it too)."""
    text = line.text
    if not _may_hold_figure(text):
        return False
    if st.memory_lines >= EARLY:
        return False  # past the first figures: the file's last lines give the late ones (tail)
    if _record(text, line.src, line.raw, line.rank, st):
        st.memory_lines += 1
    return False


def tail(name, lines, st):
    """The memory figures among a file's last lines, once the first EARLY figures were read (the
    prefilter left the lines between them unread); a line already recorded is not twice."""
    if st.memory_lines < EARLY:
        return
    for raw in lines:
        if _may_hold_figure(raw):
            _record(raw, "%s (its end)" % name, raw, None, st, name=name)


def _record(text, src, raw, rank, st, name=None):
    """Records the memory figure of one line, if it has one; True when it did."""
    m = _FREE.match(text)
    if m:
        label, unit = "free: used", m.group("unit")
    else:
        m = _MEGATRON.search(text)
        if m:
            label, unit = "memory (MB) allocated", "M"
        else:
            m = _LABELLED.search(text)
            if m is None:
                return False
            label, unit = " ".join(m.group("label").lower().split()), m.group("unit")
    try:
        val = float(m.group("val"))
    except ValueError:
        return False
    mib, known = _mib(val, unit)
    if rank is None:
        mr = _RANK.search(text)
        rank = int(mr.group(1)) if mr else None
    key = (name or src.rsplit(":", 1)[0], label, rank)
    series = st.memory.get(key)
    if series is None:
        if len(st.memory) >= MAX_SERIES:
            return False
        series = st.memory[key] = []
    elif name is not None and any(p[3] == raw for p in series[-64:]):
        return False  # a last line the first figures already hold
    series.append((mib, known, src, raw, m.group("val") + (unit or "")))
    if len(series) > MAX_POINTS:
        del series[1::2]
    return True


def growing(series):
    """True when a series of (MiB, unit known, ...) keeps growing (module docstring)."""
    vals = [p[0] for p in series]
    n = len(vals)
    if n < MIN_POINTS:
        return False
    start = sorted(vals[:max(1, n // 4)])[max(1, n // 4) // 2]
    mid, last = vals[n // 2], vals[-1]
    # rises and falls between SEGMENTS stretches of the series (their medians): a slow leak moves
    # little from one reading to the next, and one noisy reading is no rise
    k = min(n, SEGMENTS)
    steps = [sorted(vals[i * n // k:(i + 1) * n // k])[((i + 1) * n // k - i * n // k) // 2] for i in range(k)]
    rises = sum(1 for a, b in zip(steps, steps[1:]) if b > a * 1.01)
    falls = sum(1 for a, b in zip(steps, steps[1:]) if b < a * 0.99)
    if rises < MIN_RISES or falls * 3 > rises or last < max(vals) * 0.9:
        return False
    if start <= 0 or last < start * GROWTH or last < mid * STILL_RISING:
        return False
    # a unit said: at least a GiB more; none said: the figure at least tripled
    return last - start >= MIN_GROWTH_MIB if series[-1][1] else last >= start * 3


def growth(st):
    """The series of the job that keep growing, biggest growth first: [(key, series)]."""
    got = st.memory_growth
    if got is None:
        got = st.memory_growth = sorted(((k, s) for k, s in st.memory.items() if growing(s)),
                                        key=lambda ks: -(ks[1][-1][0] - ks[1][0][0]))
    return got


def findings(st, ended):
    """One memory_growing finding, of the series that grew most; information when the run said
    it ended well (it grew, and the run still finished)."""
    grown = growth(st)
    if not grown:
        return []
    (_name, label, rank), series = grown[0]
    first, last = series[0], series[-1]
    return [finding(
        "memory_growing",
        "%s's %r grew from %s to %s over %d readings (%s to %s)%s: memory the run does not give back, "
        "which ends in an out-of-memory kill%s." % (
            "rank %d" % rank if rank is not None else "the run", label, first[4], last[4], len(series), first[2],
            last[2],
            " (%d more series grew)" % (len(grown) - 1) if len(grown) > 1 else "",
            "" if not ended else " (the run still said it ended well)"),
        severity="info" if ended else None, evidence=evidence(last[3]), source=last[2], rank=rank)]
