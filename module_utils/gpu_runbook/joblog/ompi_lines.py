# SPDX-License-Identifier: Apache-2.0
"""Open MPI's (and PRRTE's) help texts in a job's output.

``opal_show_help`` (opal/util/show_help.c; PRRTE's and PMIx's the same) prints a topic of a help
file, its conversions filled in, between two lines of 74 dashes (``dash_line``). A help text has no
literal in common with the next, so its lines are matched against the Open MPI table
(vocab/ompi.py, tests/tools/vocab/gen_ompi.py) only inside such a frame: the first line a row
explains is recorded as that message (st.seen, as the other emitters' lines are), and the frame's
later lines are taken as its text. A frame that no row explains is left to the other readers, line
by line; one left open past MAX_FRAME lines is closed (no help text is that long). A row whose
argument holds a line break is read from the frame's first two lines joined. A line another process
printed (another launcher prefix: mpirun --tag-output interleaves its processes' lines) is no line
of the frame.

The run-time's report of a process that died names its rank and node (help-orterun.txt
``proc-aborted-strsignal``: '%s noticed that process rank %lu with PID %lu on node %s exited on
signal %d (%s).'; ``proc-exit-no-sync`` / ``proc-ordered-abort``: '%s has exited due to process
rank %lu with PID %lu on' + 'node %s ...' on the next line; PRRTE's help-prun.txt breaks its own
after 'exited on'): the node is recorded for the rank as
srun's task lines are (st.rank_host_weak), and a SIGKILL as the launchers' (st.launch "sigkill"),
whose host is the one to read."""

import re

from ..vocab import ROW_FIELDS, match_line, table
from .text import add

DASHES = re.compile(r"^\s{0,4}-{74}\s*$")
MAX_FRAME = 40
NOTICED = re.compile(r"\bnoticed that process rank (\d{1,7}) with PID \d{1,10} on node ([A-Za-z0-9][\w.\-]{0,252}) "
                     r"exited on(?: signal (\d{1,3}))?")
EXITED_DUE = re.compile(r"\bhas exited due to process rank (\d{1,7}) with PID \d{1,10} on(?: node "
                        r"([A-Za-z0-9][\w.\-]{0,252}))?")
NODE_NEXT = re.compile(r"^\s{0,4}node ([A-Za-z0-9][\w.\-]{0,252})\b")
SIGNAL_NEXT = re.compile(r"^\s{0,4}signal (\d{1,3})\b")  # PRRTE's help-prun.txt breaks '... exited on\nsignal %d (%s).'
SIGKILL = 9
# the other job tables: a line one of them explains is no part of an unclosed help text
_OTHERS = None


def help_text(line, fs, st):
    """One line seen while an Open MPI frame may be open; True when the line was its message's."""
    text = line.text
    if DASHES.match(text):
        frame = fs.ompi_frame
        # the second dash line closes the frame; one after a frame no row explained opens the next
        fs.ompi_frame = None if frame is not None and frame["lines"] else {
            "row": None, "lines": 0, "first": None, "rank": None, "signal_of": None, "who": _who(line)}
        return False  # a rule of dashes alone is no sign of a job
    frame = fs.ompi_frame
    if frame is None or _who(line) != frame["who"]:
        return False  # another process's line between the help text's (mpirun --tag-output interleaves them)
    frame["lines"] += 1
    if frame["lines"] > MAX_FRAME:
        fs.ompi_frame = None
        return False
    if frame["row"] is None:
        tbl = table("ompi")
        m = tbl.match(text) if tbl is not None else None
        if m is None and frame["first"] is not None:
            # an argument that holds a line break splits the row's line (errmgr's '%s job %s terminated
            # normally, but %d %s. Per user-direction, ...' with 'process returned\na non-zero exit code')
            m = tbl.match(frame["first"] + " " + text)
        if m is None:
            frame["first"] = text if frame["lines"] == 1 else None
            return False
        row = dict(zip(ROW_FIELDS, m[0]))
        frame["row"] = row
        st.seen.message(tbl, row, line.src, line.raw, rank=line.rank)
        _death(text, frame, line, st)
        return True
    if frame["rank"] is not None:
        mn = NODE_NEXT.match(text)
        if mn:
            _rank_host(frame["rank"], mn.group(1), st)
            frame["rank"] = None
            return True
    if frame["signal_of"] is not None:
        ms = SIGNAL_NEXT.match(text)
        if ms:
            _sigkill(frame["signal_of"], int(ms.group(1)), line, st)
            frame["signal_of"] = None
            return True
    if _explained_elsewhere(text) or text.lstrip().startswith("Traceback (most recent call last)"):
        fs.ompi_frame = None  # another program's line: the help text's frame was cut
        return False
    return True


def _who(line):
    """Which process printed a line, as far as its launcher prefix says."""
    return (line.prefixed, line.rank if line.prefixed else None, line.host)


def _explained_elsewhere(text):
    global _OTHERS
    if _OTHERS is None:
        from .emitter_lines import JOB_TABLES
        _OTHERS = tuple(n for n in JOB_TABLES if n != "ompi")
    return match_line(text, _OTHERS) is not None


def _death(text, frame, line, st):
    m = NOTICED.search(text)
    if m:
        rank = int(m.group(1))
        _rank_host(rank, m.group(2), st)
        if m.group(3):
            _sigkill(rank, int(m.group(3)), line, st)
        else:
            frame["signal_of"] = rank  # 'signal %d (%s).' begins the next line
        return
    m = EXITED_DUE.search(text)
    if m:
        if m.group(2):
            _rank_host(int(m.group(1)), m.group(2), st)
        else:
            frame["rank"] = int(m.group(1))  # 'node %s' begins the next line


def _sigkill(rank, signal, line, st):
    if signal == SIGKILL and not any(r["kind"] == "sigkill" and r.get("rank") == rank for r in st.launch):
        add(st.launch, {"kind": "sigkill", "rank": rank, "local_rank": None, "src": line.src, "evidence": line.raw})


def _rank_host(rank, host, st):
    st.rank_host_weak.setdefault(rank, host)
    st.ranks_seen.add(rank)
