# SPDX-License-Identifier: Apache-2.0
"""Horovod's stall inspector (horovod/common/stall_inspector.cc, and operations.cc before it): the
coordinator names the tensors some ranks submitted to a collective while others never did, once they
have waited past HOROVOD_STALL_CHECK_TIME_SECONDS (60 s). Its wordings:

- 0.20+: 'One or more tensors were submitted to be reduced, gathered or broadcasted by subset of
  ranks and are waiting for remainder of ranks for more than N seconds. This may indicate that
  different ranks are trying to submit different tensors or that only subset of ranks is submitting
  tensors, which will cause deadlock. ' then 'Missing ranks:' (0.21-0.28) or 'Stalled ranks:'
  (later), and a line per missing rank: 'R: [tensor, ...]' ('R!: ' when it will be shut down);
- older: '... Stalled ops:' then 'TENSOR [missing ranks: 0, 1]' (or '[ready ranks: 2, 3]').

The missing ranks are the culprits (they never reached the collective); the ranks that submitted
wait for them: a hang whose culprits the text names, as monitored_barrier's report is
(torch_lines.py). Recorded like it: st.barrier_missing (ranks, ms, src, raw), st.barrier_waited."""

import re

from .launchers import HVD_TAG, MPI_TAG
from .text import add

STALL = re.compile(r"submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for "
                   r"remainder of ranks for more than (\d{1,9}) seconds")
_HEAD = re.compile(r"^\s{0,8}(?:Missing|Stalled) (?:ranks|ops):\s*$")
_RANK_LINE = re.compile(r"^\s{0,8}(\d{1,7})!?: \[")
_INLINE = re.compile(r"\[(missing|ready) ranks: ?(\d{1,7}(?:, ?\d{1,7}){0,4095})\]")
# what the prefilter must let through (quiet.py); a report's rank lines are read while it is held open
NEEDLES = ("by subset of ranks", "Missing ranks", "Stalled ranks", "Stalled ops", "missing ranks", "ready ranks")


def stall_report(line, fs, st):
    """One line of a stall report (the preamble, its heads, a rank's line); True when it took the line."""
    text = line.text
    m = STALL.search(text)
    if m:
        fs.hvd_stall = {"missing": set(), "ready": set(), "ms": int(m.group(1)) * 1000, "src": line.src,
                        "raw": line.raw, "recorded": False}
        _inline(text, fs.hvd_stall)
        _record(fs.hvd_stall, st)
        return True
    stall = fs.hvd_stall
    if stall is None:
        return False
    body = _untagged(text)
    mr = _RANK_LINE.match(body)
    if mr is None and _HEAD.match(body) is None:
        # a rank's line 'R: [...]' has the shape of srun's --label prefix, which the launcher reading took
        # off as the line's rank ('[0]<stderr>:1: [allreduce.x]' reads '[allreduce.x]'): read the raw line
        raw = line.raw.lstrip(" \t")
        m = MPI_TAG.match(raw) or HVD_TAG.match(raw)
        untagged = _untagged(raw[m.end():] if m else raw)
        mr = _RANK_LINE.match(untagged)
        if mr:
            body = untagged
    if _HEAD.match(body) or mr or _INLINE.search(body):
        if mr:
            stall["missing"].add(int(mr.group(1)))
        _inline(body, stall)
        _record(stall, st)
        return True
    fs.hvd_stall = None  # the report ended
    return False


def _untagged(text):
    return text.split("] ", 1)[-1] if text.startswith("[") and "] " in text[:12] else text  # '[0] ' (horovodrun)


def _inline(text, stall):
    for kind, ranks in _INLINE.findall(text):
        stall["missing" if kind == "missing" else "ready"].update(int(r) for r in re.split(r", ?", ranks))


def _record(stall, st):
    """The report as monitored_barrier's, once it names a missing rank: its entry holds the report's own
    set of missing ranks (its later lines add to it), and the ranks it says are ready (waiting)."""
    if not stall["missing"]:
        return
    if not stall["recorded"]:
        stall["recorded"] = True
        add(st.barrier_missing, (stall["missing"], stall["ms"], stall["src"], stall["raw"]))
    st.barrier_waited.update(stall["ready"])
    st.stall_reported = True
