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
whose host is the one to read.

A transport's own error (opal/mca/btl/base/btl_base_error.h, v4.1.8) is no help text: ``BTL_ERROR``
prints ``[node][[jobid,vpid],rank][file.c:line:func] `` then its message, ``BTL_PEER_ERROR``
``[[jobid,vpid],rank][file.c:line:func] from NODE to: PEER `` then it, each part its own write to
stderr (so the message may stand on the next line when processes interleave, or a mail wraps it).
The openib BTL's failed work completion (btl_openib_component.c handle_wc: ``error polling %s with
status %s status number %d for wr_id ...  vendor error %d qp_idx %d``) is an IB work completion
error as NCCL's is: its status number is rdma-core's (vocab/rdma.py), the peer its ``to:`` node."""

import re

from ..vocab import ROW_FIELDS, match_line, table
from .nccl_lines import wc_event
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
# BTL_ERROR / BTL_PEER_ERROR's head: '[file.c:line:func] ' (and 'from NODE to: PEER ' for a peer's)
# (OPAL_NAME_PRINT: '[[jobfamily,jobid],vpid]', the vpid its rank in the job)
BTL_HEAD = re.compile(r"(?:\[(?P<host>[A-Za-z][\w.\-]{0,252})\])?(?:\[\[\d{1,10},\d{1,10}\],(?P<vpid>\d{1,10})\])?"
                      r"\[(?P<file>[\w\-]{1,80}\.c):\d{1,6}:\w{1,80}\] (?:from (?P<node>[\w.\-]{1,253}) ?"
                      r"(?:to: (?P<peer>[\w.\-]{1,253}) ?)?)?")
WC_ERROR = re.compile(r"\berror polling [\w ]{1,40}? with status (?P<name>[A-Z][A-Z ]{0,60}?) status number "
                      r"(?P<st>\d{1,3})\b")
WC_VENDOR = re.compile(r"\bvendor error (\d{1,10})\b")
# help-mpi-btl-openib.txt [of error event] (btl_openib_async.c: an HCA's async error event, its
# 'Local host:' the node whose HCA raised it, its 'Error number: %d (%s)' openib_event_to_str's enum name)
OF_ERROR_EVENT = "The OpenFabrics stack has reported a network error event."
OF_FIELD = re.compile(r"^\s{0,8}(Local host|Error number):\s+(\S[^\n]{0,300}?)\s*$")
OF_EVENT = re.compile(r"^\d{1,3} \((IBV_EVENT_[A-Z_]{2,40})\)")
# enum ibv_event_type's names -> rdma-core's ibv_event_type_str texts (libibverbs/enum_strs.c), as NCCL prints them
IBV_EVENTS = {"IBV_EVENT_CQ_ERR": "CQ error", "IBV_EVENT_QP_FATAL": "local work queue catastrophic error",
              "IBV_EVENT_QP_REQ_ERR": "invalid request local work queue error",
              "IBV_EVENT_QP_ACCESS_ERR": "local access violation work queue error",
              "IBV_EVENT_PATH_MIG_ERR": "path migration request error", "IBV_EVENT_DEVICE_FATAL": "local catastrophic error",
              "IBV_EVENT_PORT_ERR": "port error", "IBV_EVENT_SRQ_ERR": "SRQ catastrophic error"}
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
    if frame["row"]["format"].startswith(OF_ERROR_EVENT) and _of_error_event(text, frame, line, st):
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


def _of_error_event(text, frame, line, st):
    """A field of the openib BTL's async error event: the node, then the event, which is recorded as
    NCCL's 'Got async event' is (the host's own HCA raised it)."""
    m = OF_FIELD.match(text)
    if m is None:
        return False
    if m.group(1) == "Local host":
        frame["local_host"] = m.group(2)
        return True
    me = OF_EVENT.match(m.group(2))
    event = IBV_EVENTS.get(me.group(1)) if me else None
    if event is not None:
        add(st.nccl_words, {"kind": "nccl_ib_async_event", "rank": line.rank, "event": event, "hca": None,
                            "port": None, "host": frame.get("local_host") or line.host, "pid": None,
                            "src": line.src, "evidence": line.raw, "emitter": "Open MPI's openib BTL"})
    return True


def _btl_name(file_name):
    """'btl_tcp_endpoint.c' -> 'tcp': the BTL a source file of opal/mca/btl/<name>/ belongs to."""
    parts = file_name.split("_")
    return parts[1].split(".")[0] if len(parts) > 1 and parts[0] == "btl" else file_name


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


def btl_error(line, fs, st):
    """A BTL's error head (its message may follow on the next line) or the openib BTL's failed
    work completion; True when the line was one of them."""
    text = line.text
    if ".c:" not in text and "error polling" not in text:  # the head's source file, the message's words
        fs.ompi_btl = None
        return False
    mh = BTL_HEAD.search(text)
    head = (mh.group("node") or mh.group("host"), mh.group("peer")) if mh else None
    if head is not None and not text[mh.end():].strip():
        fs.ompi_btl = (_who(line), head)  # the message is the next line's
        return True
    m = WC_ERROR.search(text)
    if m is None:
        fs.ompi_btl = None
        if head is None:
            return False
        # another transport's error ('connect() to %s failed: %s (%d)' of the tcp BTL): said as it is
        rank = line.rank if line.rank is not None or not mh.group("vpid") else int(mh.group("vpid"))
        add(st.events, {"kind": "ompi_transport_error", "btl": _btl_name(mh.group("file")),
                        "what": text[mh.end():].strip()[:300], "peer": head[1], "host": head[0] or line.host,
                        "rank": rank, "src": line.src, "evidence": line.raw})
        if rank is not None and head[0]:
            _rank_host(rank, head[0], st)  # the process name's rank ran on the node the head names
        return True
    if head is None and fs.ompi_btl is not None and fs.ompi_btl[0] == _who(line):
        head = fs.ompi_btl[1]
    fs.ompi_btl = None
    node, peer = head or (None, None)
    status = int(m.group("st"))
    mv = WC_VENDOR.search(text, m.end())
    add(st.events, wc_event(status, m.group("name").lower(), line, peer=peer, host=node or line.host,
                            vendor_err=int(mv.group(1)) if mv else None))
    return True
