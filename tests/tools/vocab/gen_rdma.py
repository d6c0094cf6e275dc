#!/usr/bin/env python3
"""Generate module_utils/gpu_runbook/vocab/rdma.py: libibverbs' strings for work-completion
statuses and async events (rdma-core ``libibverbs/enum_strs.c``, numbers from the enum order
in ``libibverbs/verbs.h``), in the messages that print them (NCCL's NET/IB transport, the
``ibv_*_pingpong`` examples of rdma-core, perftest).

    git clone --bare https://github.com/linux-rdma/rdma-core.git /tmp/rdma-core.git   # or any clone
    .venv/bin/python tests/tools/vocab/gen_rdma.py --src /tmp/rdma-core.git [--rev v64.0]

Licence: rdma-core is GPL-2.0 or BSD (OpenIB.org BSD, MIT variant) at the reader's choice
(COPYING.md; enum_strs.c's header); only the strings, names and numbers are stored.
"""

import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402

sys.path.insert(0, os.path.join(common.REPO, "module_utils"))
from gpu_runbook.taxonomy import KINDS  # noqa: E402

GENERATOR = "tests/tools/vocab/gen_rdma.py"
PIN = "v64.0"
STRS = "libibverbs/enum_strs.c"
VERBS = "libibverbs/verbs.h"
MAN_ASYNC = "libibverbs/man/ibv_get_async_event.3"

# How a work-completion status is printed (each status in each is a row):
CODE_FORMATS = (
    # NCCL >= 2.29 src/transport/net_ib/p2p.cc: "NET/IB: Got completion from peer %s with
    # status=%s(%d) opcode=%s(%d) vendor_err=%u ..." (status name from NCCL's ibvWcStatusStr)
    "with status={name}({number}) opcode=",
    # NCCL 2.20-2.28 src/transport/net_ib.cc (and NET/IB/GIN since 2.29):
    # "... with status=%d opcode=%d len=%u vendor err %u ..."
    "with status={number} opcode=",
    # NCCL <= 2.19 src/transport/net_ib.cc: "... with error %d, opcode %d, len %d, vendor err %d ..."
    "with error {number}, opcode",
    # rdma-core libibverbs/examples/{rc,uc,ud,srq}_pingpong.c: "Failed status %s (%d) for wr_id %d"
    "Failed status {text} ({number}) for wr_id %d",
    # linux-rdma/perftest src/perftest_resources.h NOTIFY_COMP_ERROR_{SEND,RECV} (since 2025-11):
    # " Failed status-%s (%d): wr_id %d syndrom 0x%x"; before: " Failed status %d: wr_id %d syndrom 0x%x"
    "Failed status-{text} ({number}): wr_id %d syndrom 0x%x",
    "Failed status {number}: wr_id %d syndrom 0x%x",
)

# How an async event is printed: NCCL's async thread (src/transport/net_ib/common.cc at
# v2.30.7-1, src/transport/net_ib.cc since 2.23): which message carries which event.
# NCCL <= 2.22 printed every event as "NET/IB : [%s:%d ]Got async event : %s".
EVENT_WRAPPERS = {
    "IBV_EVENT_DEVICE_FATAL": ("async fatal event: {text}",),
    "IBV_EVENT_CQ_ERR": ("async fatal event on CQ %s: {text}",),
    "IBV_EVENT_QP_FATAL": ("async fatal event on QP %s: {text}",),
    "IBV_EVENT_QP_REQ_ERR": ("async fatal event on QP %s: {text}",),
    "IBV_EVENT_QP_ACCESS_ERR": ("async fatal event on QP %s: {text}",),
    "IBV_EVENT_SRQ_ERR": ("async fatal event on SRQ, unused for now %s: {text}",),
}
NON_FATAL = ("IBV_EVENT_PATH_MIG_ERR", "IBV_EVENT_PORT_ERR", "IBV_EVENT_PATH_MIG", "IBV_EVENT_PORT_ACTIVE",
             "IBV_EVENT_SQ_DRAINED", "IBV_EVENT_LID_CHANGE", "IBV_EVENT_PKEY_CHANGE", "IBV_EVENT_SM_CHANGE",
             "IBV_EVENT_QP_LAST_WQE_REACHED", "IBV_EVENT_CLIENT_REREGISTER", "IBV_EVENT_SRQ_LIMIT_REACHED")
for _e in NON_FATAL:
    EVENT_WRAPPERS[_e] = ("Got non-fatal async event: {text}({number})",)
OLD_EVENT_WRAPPER = "Got async event : {text}"

MARKERS = ("status=", "with error", "Failed status", "async event", "async fatal event")

# ---- classification (kind, category, severity, meaning) -----------------------------------
IB_COMPLETION = "ib_completion_error"
STATUS = {
    "IBV_WC_LOC_LEN_ERR": ("logged_nccl_config_error", "nccl_config", "critical",
                           "A received message was longer than the buffer posted for it: the two ends disagree on "
                           "sizes (NCCL versions or settings differ across nodes)."),
    "IBV_WC_LOC_QP_OP_ERR": ("logged_error", "unknown", "critical",
                             "The HCA rejected a work request as invalid for its queue pair (a library or driver "
                             "fault)."),
    "IBV_WC_LOC_EEC_OP_ERR": ("logged_error", "unknown", "warning", "Reliable-datagram transport only (not used by "
                                                                     "NCCL)."),
    "IBV_WC_LOC_PROT_ERR": ("logged_nccl_config_error", "nccl_config", "critical",
                            "The HCA could not use a local buffer with its registration: with GPUDirect RDMA usually "
                            "PCIe ACS left enabled or the peer-memory module (NCCL's hint: try "
                            "NCCL_NET_GDR_LEVEL=0)."),
    "IBV_WC_WR_FLUSH_ERR": ("logged_error", "unknown", "warning",
                            "Outstanding work was flushed because the queue pair went into error: a consequence of "
                            "an earlier error on this connection (or of its teardown); look for the first error."),
    "IBV_WC_MW_BIND_ERR": ("logged_application_error", "application", "warning",
                           "A memory-window bind failed: the program's use of the verbs API."),
    "IBV_WC_BAD_RESP_ERR": (IB_COMPLETION, "ib_network", "critical",
                            "The responder returned an unexpected transport opcode: the RDMA path or the peer HCA."),
    "IBV_WC_LOC_ACCESS_ERR": ("logged_nccl_config_error", "nccl_config", "critical",
                              "A protection error on a local buffer (RDMA write with immediate): with GPUDirect RDMA "
                              "usually PCIe ACS or the peer-memory module."),
    "IBV_WC_REM_INV_REQ_ERR": ("logged_error", "unknown", "critical",
                               "The remote end rejected the request as invalid (too long for its buffer, or an "
                               "operation it does not allow): mismatched settings or its queue pair's state."),
    "IBV_WC_REM_ACCESS_ERR": ("logged_error", "unknown", "critical",
                              "The remote end refused access to its memory: its registration is gone (the peer "
                              "process exited or restarted) or its GPUDirect RDMA setup."),
    "IBV_WC_REM_OP_ERR": ("logged_error", "unknown", "critical",
                          "The remote end could not complete the operation (its queue pair or HCA failed): look at "
                          "the peer host."),
    "IBV_WC_RETRY_EXC_ERR": (IB_COMPLETION, "ib_network", "critical",
                             "No acknowledgement after all transport retries: packets are lost on the path or the "
                             "peer host or HCA is gone (an NCCL_IB_TIMEOUT set too short is a rarer cause)."),
    "IBV_WC_RNR_RETRY_EXC_ERR": ("logged_error", "unknown", "critical",
                                 "The receiver had no receive buffer posted through all receiver-not-ready retries: "
                                 "the peer process is stalled or gone, not the link."),
    "IBV_WC_LOC_RDD_VIOL_ERR": ("logged_error", "unknown", "warning", "Reliable-datagram transport only (not used "
                                                                       "by NCCL)."),
    "IBV_WC_REM_INV_RD_REQ_ERR": ("logged_error", "unknown", "warning", "Reliable-datagram transport only (not used "
                                                                         "by NCCL)."),
    "IBV_WC_REM_ABORT_ERR": ("logged_error", "unknown", "critical", "The remote end aborted the operation."),
    "IBV_WC_INV_EECN_ERR": ("logged_error", "unknown", "warning", "Reliable-datagram transport only (not used by "
                                                                   "NCCL)."),
    "IBV_WC_INV_EEC_STATE_ERR": ("logged_error", "unknown", "warning", "Reliable-datagram transport only (not used "
                                                                        "by NCCL)."),
    "IBV_WC_FATAL_ERR": ("logged_ib_error", "ib_network", "critical",
                         "The HCA reported a fatal error for the work request: a device fault; see its kernel log "
                         "(mlx5 health)."),
    "IBV_WC_RESP_TIMEOUT_ERR": (IB_COMPLETION, "ib_network", "critical",
                                "No response from the remote end in time: the RDMA path or the peer."),
    "IBV_WC_GENERAL_ERR": ("logged_error", "unknown", "warning", "A completion error of no listed kind."),
    "IBV_WC_TM_ERR": ("logged_error", "unknown", "warning", "A tag-matching error (not used by NCCL)."),
    "IBV_WC_TM_RNDV_INCOMPLETE": ("logged_error", "unknown", "info",
                                  "A tag-matching rendezvous left to software: a status of normal tag-matching "
                                  "operation rather than a fault."),
}

# meaning: the man page's line (ibv_get_async_event(3)) unless given here
EVENT = {
    "IBV_EVENT_DEVICE_FATAL": ("nccl_ib_async_event", "ib_network", "critical", ""),
    "IBV_EVENT_PORT_ERR": ("nccl_ib_async_event", "ib_network", "critical",
                           "The link of this HCA port went down (Link became unavailable on a port)."),
    # a queue of this HCA is in error: the HCA or its driver as a rule (its kernel log tells)
    "IBV_EVENT_QP_FATAL": ("logged_ib_error", "ib_network", "critical", ""),
    "IBV_EVENT_CQ_ERR": ("logged_ib_error", "ib_network", "critical", ""),
    "IBV_EVENT_SRQ_ERR": ("logged_ib_error", "ib_network", "critical", ""),
    "IBV_EVENT_WQ_FATAL": ("logged_ib_error", "ib_network", "critical", ""),
    # the peer sent an invalid request or touched memory it may not: that conversation, not the link
    "IBV_EVENT_QP_REQ_ERR": ("logged_error", "unknown", "critical",
                             "Invalid Request Local Work Queue Error: the peer sent a request this queue pair cannot "
                             "serve (its state or settings), not a link fault."),
    "IBV_EVENT_QP_ACCESS_ERR": ("logged_error", "unknown", "critical",
                                "Local access violation error: the peer used a memory key this host no longer "
                                "honours (a restarted peer process?), not a link fault."),
    "IBV_EVENT_PATH_MIG": ("logged_ib_error", "ib_network", "warning",
                           "A connection has migrated to the alternate path: its primary path failed."),
    "IBV_EVENT_PATH_MIG_ERR": ("logged_ib_error", "ib_network", "warning", ""),
    "IBV_EVENT_DEVICE_SPEED_CHANGE": ("logged_ib_error", "ib_network", "warning", ""),
    # subnet management changes: nothing failed on this host
    "IBV_EVENT_LID_CHANGE": ("logged_ib_error", "ib_network", "info", ""),
    "IBV_EVENT_PKEY_CHANGE": ("logged_ib_error", "ib_network", "info", ""),
    "IBV_EVENT_SM_CHANGE": ("logged_ib_error", "ib_network", "info", ""),
    "IBV_EVENT_CLIENT_REREGISTER": ("logged_ib_error", "ib_network", "info", ""),
    "IBV_EVENT_GID_CHANGE": ("logged_ib_error", "ib_network", "info", ""),
    # normal operation
    "IBV_EVENT_PORT_ACTIVE": ("benign", "healthy", "ok",
                              "The port's link became active: it came (back) up; a port error before it is the fault."),
    "IBV_EVENT_COMM_EST": ("benign", "healthy", "ok", "Communication was established on a queue pair: normal "
                                                      "connection set-up."),
    "IBV_EVENT_SQ_DRAINED": ("benign", "healthy", "ok", "The send queue was drained, as requested: normal "
                                                        "operation."),
    "IBV_EVENT_SRQ_LIMIT_REACHED": ("benign", "healthy", "ok", "The shared receive queue fell to its limit, as armed: "
                                                               "flow control, not a fault."),
    "IBV_EVENT_QP_LAST_WQE_REACHED": ("benign", "healthy", "ok", "The last work request of a queue pair on a shared "
                                                                 "receive queue completed: normal teardown."),
}


def parse_enum(text, name):
    """{enumerator: (number, line)} of ``enum name`` (implicit and explicit values)."""
    lines = text.split("\n")
    start = next(i for i, ln in enumerate(lines) if re.match(r"enum %s\s*\{" % re.escape(name), ln))
    out, n = {}, -1
    for j in range(start + 1, len(lines)):
        s = lines[j].split("//")[0].strip()
        if s.startswith("}"):
            break
        m = re.match(r"([A-Z_][A-Z0-9_]*)\s*(?:=\s*(\d+|0x[0-9a-fA-F]+))?\s*,?$", s)
        if not m:
            continue
        n = int(m.group(2), 0) if m.group(2) else n + 1
        out[m.group(1)] = (n, j + 1)
    return out


def parse_strings(text, function):
    """{enumerator: (string, line)} of the ``[IBV_X] = "text"`` table in ``function``."""
    lines = text.split("\n")
    start = next(i for i, ln in enumerate(lines) if re.match(r"const char \*%s\(" % re.escape(function), ln))
    out = {}
    for j in range(start + 1, len(lines)):
        if lines[j].startswith("}"):
            break
        m = re.match(r'\s*\[([A-Z_][A-Z0-9_]*)\]\s*=\s*(".*")\s*,?\s*$', lines[j])
        if m:
            out[m.group(1)] = (common.join_literals(m.group(2)), j + 1)
    return out


def man_events(text):
    """{IBV_EVENT_X: description} from ibv_get_async_event(3)."""
    out = {}
    for m in re.finditer(r"^\.B (IBV_EVENT_[A-Z_]+) \\fR ?(.*?)\s*$", text, re.M):
        out[m.group(1)] = m.group(2).strip()
    return out


def check(kind, category, severity):
    if kind == "benign":
        if (category, severity) != ("healthy", "ok"):
            raise SystemExit("benign with %s/%s" % (category, severity))
    elif kind not in KINDS or category not in KINDS[kind]["categories"] or severity not in ("info", "warning",
                                                                                             "critical"):
        raise SystemExit("bad classification %s/%s/%s" % (kind, category, severity))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", required=True, help="rdma-core: a bare mirror or a clone")
    ap.add_argument("--rev", default=PIN, help="tag, branch or commit (default %s)" % PIN)
    args = ap.parse_args(argv)
    commit = common.resolve(args.src, args.rev)
    tags = sorted(t for t in common.git(args.src, "tag", "--points-at", commit).split() if re.match(r"v\d", t))
    version = tags[0] if tags else args.rev
    strs = common.show(args.src, commit, STRS)
    verbs = common.show(args.src, commit, VERBS)
    man = man_events(common.show(args.src, commit, MAN_ASYNC))

    wc_enum = parse_enum(verbs, "ibv_wc_status")
    ev_enum = parse_enum(verbs, "ibv_event_type")
    wc_str = parse_strings(strs, "ibv_wc_status_str")
    ev_str = parse_strings(strs, "ibv_event_type_str")

    codes = []
    for name, (number, _eline) in sorted(wc_enum.items(), key=lambda kv: kv[1][0]):
        if name == "IBV_WC_SUCCESS":
            continue
        if name not in wc_str:
            raise SystemExit("%s has no string in %s" % (name, STRS))
        if name not in STATUS:
            raise SystemExit("%s has no classification: add it to STATUS" % name)
        text, line = wc_str[name]
        kind, category, severity, meaning = STATUS[name]
        check(kind, category, severity)
        codes.append((number, name, text, kind, category, severity, meaning, STRS, line))
    extra = set(STATUS) - set(wc_enum)
    if extra:
        raise SystemExit("STATUS names %s, not in %s" % (sorted(extra), VERBS))

    rows = []
    for name, (number, _eline) in sorted(ev_enum.items(), key=lambda kv: kv[1][0]):
        if name not in ev_str:
            raise SystemExit("%s has no string in %s" % (name, STRS))
        if name not in EVENT:
            raise SystemExit("%s has no classification: add it to EVENT" % name)
        text, line = ev_str[name]
        kind, category, severity, meaning = EVENT[name]
        check(kind, category, severity)
        meaning = meaning or (man.get(name, "") + "." if man.get(name) else "")
        for wrapper in (OLD_EVENT_WRAPPER,) + EVENT_WRAPPERS.get(name, ()):
            fmt = wrapper.replace("{text}", text.replace("%", "%%")).replace("{number}", str(number))
            rows.append((STRS, line, fmt, kind, category, severity, meaning))
    extra = set(EVENT) - set(ev_enum)
    if extra:
        raise SystemExit("EVENT names %s, not in %s" % (sorted(extra), VERBS))

    doc = """\
Read: libibverbs/enum_strs.c (ibv_wc_status_str, ibv_event_type_str), the numbers from the
enum order in libibverbs/verbs.h, the events' descriptions from ibv_get_async_event(3).
CODES: every work-completion status but IBV_WC_SUCCESS, in the messages CODE_FORMATS lists:
NCCL's NET/IB completion error (>= 2.29 "status=<name>(<n>)", 2.20-2.28 "status=<n>", <= 2.19
"with error <n>"), rdma-core's ibv_*_pingpong examples and perftest ("Failed status ...").
ROWS: every async event in NCCL's messages (<= 2.22 "Got async event : <text>"; since 2.23
"async fatal event[ on CQ/QP/SRQ ...]: <text>" for the fatal ones and "Got non-fatal async
event: <text>(<n>)" for the others, as NCCL's async thread sorts them); the file/line are the
string's in enum_strs.c.
Left out: ibv_port_state_str ("down", "active", ...: too short to tell apart in a line; port
state is read from ibstat/ibv_devinfo by the InfiniBand readers), ibv_node_type_str and
ibv_wr_opcode_str (no fault), ibacm's debug-level event log.
Classification (explicit tables per status / event in the generator): transport retry
exceeded, bad response, response timeout -> ib_completion_error (the RDMA path); fatal error
-> ib_network; local length error -> nccl_config (sizes differ across nodes); local
protection / access errors -> nccl_config (GPUDirect RDMA: PCIe ACS, peer-memory module);
remote invalid request / access / operation errors, RNR retry exceeded, remote abort -> unknown
critical (the peer process or its state, not the link); work request flushed -> unknown
warning (a consequence); reliable-datagram and tag-matching statuses -> unknown. Events:
device fatal, port error -> nccl_ib_async_event critical; QP/CQ/SRQ/WQ fatal -> ib_network
critical; QP request/access errors -> unknown; path migration, speed change -> ib_network
warning; LID/P_Key/SM/GID change, client reregister -> ib_network info; port active,
communication established, SQ drained, SRQ limit, last WQE -> benign.
"""
    meta = {"EMITTER": "libibverbs", "PROJECT": "rdma-core (libibverbs)", "VERSION": version, "COMMIT": commit,
            "LICENCE": "GPL-2.0 OR Linux-OpenIB (BSD, MIT variant); COPYING.md",
            "ORIGIN": "https://github.com/linux-rdma/rdma-core", "GENERATOR": GENERATOR}
    path = common.write_table("rdma", meta, MARKERS, (("", "{message}"),), rows, codes=codes,
                              code_formats=CODE_FORMATS, doc=doc)
    print("%s: %d statuses x %d formats, %d event rows" % (path, len(codes), len(CODE_FORMATS), len(rows)))


if __name__ == "__main__":
    main()
