# SPDX-License-Identifier: Apache-2.0
"""The link test between two hosts: rdma-core's ``ibv_{rc,uc,ud,srq,xsrq}_pingpong`` and libfabric's
``fi_pingpong`` -> whether RDMA worked between them, and if not what stopped it.

Known from their source. rdma-core 691953d8d502 (v64.0-61), libibverbs/examples/{rc,uc,ud,srq,xsrq}_pingpong.c:
``  local address:  LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s`` then ``  remote address: ...`` (ud
``PSN ..: GID``; srq a line per QP; xsrq ``%8s: LID %04x, QPN RECV %06x SEND %06x, PSN %06x, SRQN %06x,
GID %s`` and a closing ``success``), then ``%lld bytes in %.2f seconds = %.2f Mbit/sec`` and ``%d iters in
%.2f seconds = %.2f usec/iter``; on stderr ``Failed status %s (%d) for wr_id %d`` (an ibv_wc_status;
xsrq ``Work completion error %d``) and the fprintf()s of _VERBS below. ofiwg/libfabric af8ddbe92f03
(v2.6.0rc1-427), util/pingpong.c show_perf(): the header ``bytes #sent #ack total time MB/sec usec/xfer
Mxfers/sec`` and a row per size (``64      10      =10      1.2k        0.00s      1.17      54.55
0.02``, k/m/g size and k/m/b count suffixes); PP_PRINTERR ``%s(): %s:%-4d, ret=%d (%s)``, PP_ERR
``[error] %s:%-4d: ...`` (``cq_readerr: %s``: the verbs provider writes ibv_wc_status_str), ``%ds
timeout expired``, ``Error at iteration=%d size=%d byte=%d``.

What it tells: a run that printed its result is a reading of the link between the two hosts, no
finding (a pingpong's bandwidth is latency-bound, never judged low). A completion error's category is
rdma-core's status table's (vocab/rdma.py): retry exceeded is the network. Each failure is a warning
with no rung: the test names a path, and only a third host tells which end fails. The TCP side channel
failing says nothing of RDMA (unknown). An output that opened with neither a result nor an error is
incomplete, never healthy. ``facts["tool"]``: the program the pasted command names, else what the lines
show (``ibv_*_pingpong`` where rc, uc and srq print alike)."""

import re

from ..findings import finding, iter_lines, never_raise
from ..vocab import code

SOURCE = "pingpong.txt"
MAX_LINE = 4096  # no line of these programs is longer: a longer one is not theirs, and never scanned
_NUM = r"\d{1,15}\.\d{1,6}|inf|-?nan"
ADDRESS_RE = re.compile(
    r"^[ \t]{0,12}(?P<side>local|remote)(?P<long> address)?:[ \t]{1,4}LID (?:0x)?(?P<lid>[0-9a-fA-F]{1,8}), "
    r"QPN (?:RECV )?(?:0x)?(?P<qpn>[0-9a-fA-F]{1,8})(?: SEND (?:0x)?[0-9a-fA-F]{1,8})?, "
    r"PSN (?:0x)?(?P<psn>[0-9a-fA-F]{1,8})(?P<srqn>, SRQN (?:0x)?[0-9a-fA-F]{1,8})?"
    r"(?:(?P<sep>[,:]) GID (?P<gid>[0-9a-fA-F:.]{2,45}))?[ \t]*$")
BYTES_RE = re.compile(r"^[ \t]{0,8}(\d{1,20}) bytes in (\d{1,12}\.\d{1,6}) seconds = (" + _NUM + r") Mbit/sec[ \t]*$")
ITERS_RE = re.compile(r"^[ \t]{0,8}(\d{1,12}) iters in (\d{1,12}\.\d{1,6}) seconds = (" + _NUM + r") usec/iter[ \t]*$")
FI_HEADER_RE = re.compile(r"^[ \t]{0,8}bytes[ \t]{1,8}#sent[ \t]{1,8}#ack[ \t]{1,8}total[ \t]{1,8}time[ \t]{1,8}"
                          r"MB/sec[ \t]{1,8}usec/xfer[ \t]{1,8}Mxfers/sec[ \t]*$")
_FI_ROW_RE = re.compile(
    r"^[ \t]{0,8}(?P<size>\d{1,4}(?:\.\d)?[kmg]?)[ \t]{1,8}(?P<sent>\d{1,9}[kmb]?)[ \t]{0,8}(?P<mark>[=+-])"
    r"(?P<ack>\d{1,9}[kmb]?)[ \t]{1,8}(?P<total>\d{1,12}(?:\.\d)?[kmg]?)[ \t]{0,12}(?P<sec>\d{1,12}\.\d\d)s[ \t]{0,10}"
    r"(?P<mbs>" + _NUM + r")[ \t]{0,11}(?P<usec>" + _NUM + r")[ \t]{0,11}(?P<mx>" + _NUM + r")[ \t]*$")
# where their output opens: the address lines, the result lines, fi_pingpong's table header
OPENING = re.compile("|".join(r.pattern for r in (ADDRESS_RE, BYTES_RE, ITERS_RE, FI_HEADER_RE)))
_CMD_RE = re.compile(r"(?:^|[\s/])(ibv_(?:rc|uc|ud|srq|xsrq)_pingpong|fi_pingpong)\b")
_STATUS_RE = re.compile(r"^[ \t]{0,8}(?:Failed status [^\n()]{1,80} \((\d{1,3})\) for wr_id -?\d{1,12}"
                        r"|Work completion error (\d{1,3}))[ \t]*$")
_FI_PRINTERR_RE = re.compile(r"^(?P<call>[\w/()-]{1,40})\(\): [^\s:]{1,200}:\d{1,6} {0,4}, ret=(?P<ret>-?\d{1,10}) "
                             r"\((?P<text>[^\n]{0,200})\)[ \t]*$")
_FI_ERR_RE = re.compile(r"^\[error\] [^\s:]{1,200}:\d{1,6} {0,4}: (?P<msg>[^\n]{1,500})$")
# belongs to the output but says nothing alone: -t's cycle counts, perror()'s half of a message (the
# fprintf after it says what failed), fi_pingpong's -v lines
_QUIET_RE = re.compile(r"^[ \t]{0,8}(?:(?:Max|Min|Average) receive completion clock cycles = |success[ \t]*$|"
                       r"\[debug\] |(?:client|server) (?:read|write|read/write): |gettimeofday: )")
_PEER, _PORT, _SETUP, _DATA = ("ib_pingpong_no_peer", "ib_pingpong_port_error", "ib_pingpong_setup_error",
                                "ib_pingpong_data_mismatch")
_DONE = "ib_pingpong_completion_error"
# rdma-core's messages, each with what its source says it means: (pattern, kind, category, meaning, when:
# "follows" is printed only after the message that says the cause, "after" once the result is out)
_VERBS = tuple((re.compile(r"^[ \t]{0,8}(?:" + p + ")"), k, c, m, w) for p, k, c, m, w in (
    (r"No IB devices found|Failed to get IB devices list", "ib_no_devices", "ib_network",
     "libibverbs found no RDMA device: no HCA, or its driver (mlx5_ib) or the rdma modules are not loaded", ""),
    (r"IB device \S{1,64} not found", _PORT, "ib_network",
     "the HCA named with -d is not among this host's RDMA devices: a wrong name, or the HCA is gone", ""),
    (r"Couldn't get context for |Failed to open device|Couldn't get port info|Failed to get port info|Unable to "
     r"query port info", _PORT, "ib_network", "the HCA or the port given with -i could not be opened or queried: "
     "no such port, or the HCA is failing", ""),
    (r"Couldn't get local LID", _PORT, "ib_network",
     "the InfiniBand port has no LID: it is not Active (no link, or no subnet manager configured it)", ""),
    (r"can't read sgid of index|Could not get local gid for", _PORT, "unknown",
     "the port has no GID at the index given with -g (RoCE: the interface lacks that address)", ""),
    (r"Failed to modify (?:recv |send )?QP(?:\[\d{1,4}\])? to (?:RTR|RTS|INIT)|Failed to create AH", _PORT, "unknown",
     "the queue pair could not be set up for the peer's address: RoCE without -g, a path MTU (-m) the port "
     "does not support, or the port's state", ""),
    (r"Couldn't connect to remote QP", _PORT, "unknown", "the queue pair could not be set up for the peer", "follows"),
    (r"Couldn't connect to \S{1,255}:\d{1,5}", _PEER, "unknown",
     "the TCP connection to the server side failed: it is not running yet, the host or port (-p, default "
     "18515) is wrong, or a firewall", ""),
    (r"Couldn't listen to port|accept\(\) failed|Couldn't (?:send|read|send/recv|read/write) (?:local|remote) address"
     r"|\d{1,6}/\d{1,6}: Couldn't read remote address|Couldn't send termination ack|Invalid termination ack", _PEER,
     "unknown", "the TCP exchange of RDMA addresses with the other side failed (it exited or was not started)", ""),
    (r"[A-Z][A-Za-z ,()-]{2,60} for (?:port \d{1,5}|\S{1,255}:\d{1,5})[ \t]*$", _PEER, "unknown",
     "the host name or port did not resolve (getaddrinfo)", ""),
    (r"invalid data in page \d{1,9}", _DATA, "unknown", "the received buffer differs from what was sent (-c)", ""),
    (r"Requested size larger than port MTU", _SETUP, "unknown", "ud_pingpong's -s is above the port's MTU", ""),
    (r"parse WC failed", _SETUP, "unknown", "a completion could not be handled", "follows"),
    (r"Couldn't (?:destroy|deregister|deallocate|release|close|free)", _SETUP, "unknown",
     "the test's resources could not be released (after its run: its result stands)", "after"),
    (r"Couldn't |Failed to (?:post|get cq_event)|poll CQ failed|Error polling cq|CQ event for unknown CQ|Completion "
     r"for unknown wr_id|Unable to find qp|Dev mem allocation failed|Device memory is insufficient|Device doesn't "
     r"support|The device (?:isn't|doesn't)"
     r"|Copy (?:to|from) (?:dm|DM) buffer failed|DM memory region|CoCo unprotected|prefetch is valid only"
     r"|rx_depth \d{1,9} is too small|num_qp \d{1,9} must be", _SETUP, "unknown",
     "the RDMA resources or options could not be set up (memory registration: `ulimit -l`; the driver)", ""),
))
# fi_pingpong: the socket side channel's calls, and those that read a completion
_FI_SIDE = ("socket", "setsockopt", "bind", "listen", "accept", "ctrl/send", "ctrl/read")
_FI_OTHER_RE = re.compile(r"^(?:\d{1,9}s timeout expired|Error at iteration=\d{1,12} |Unexpected CM event"
                          r"|Endpoint unsupported|Unknown endpoint|Error parsing )")
# the table's words where they speak of NCCL, which a pingpong does not run (its QP retries 7 times, fixed)
_IN_A_PINGPONG = {1: "a message longer than the receive buffer: the two ends ran with different sizes (-s)",
                  4: "the HCA could not use the registered buffer (the -o/-j memory options, or the driver)",
                  8: "the HCA could not use the registered buffer (the -o/-j memory options, or the driver)",
                  12: "no acknowledgement after all transport retries: packets are lost on the path, or the "
                      "peer host or its HCA is gone"}


def belongs(line):
    """A line of these outputs (content/): blank, an address, a result, a table row or header, a
    message of theirs, or the command line that ran one."""
    if not line.strip():
        return True
    if len(line) > MAX_LINE:
        return False
    return bool(OPENING.match(line) or _FI_ROW_RE.match(line) or _STATUS_RE.match(line) or _QUIET_RE.match(line)
                or _FI_PRINTERR_RE.match(line) or _FI_ERR_RE.match(line) or _FI_OTHER_RE.match(line)
                or ("pingpong" in line and _CMD_RE.search(line)) or any(r[0].match(line) for r in _VERBS))


def parse_pingpong(text, source=SOURCE):
    """-> (facts, findings); never raises. facts: {"tool", "completed", "results", "local", "remote",
    "errors"}; {} when the text is no pingpong output."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return never_raise(_parse, source, text if isinstance(text, str) else "", source=source)


def _status(number):
    """(kind, category, severity, meaning) of a completion status, from rdma-core's table."""
    row = code("rdma", number)
    if row is None:
        return _DONE, "unknown", "warning", "a status libibverbs does not name"
    category = row["category"] if row["category"] in ("ib_network", "application") else "unknown"
    return _DONE, category, "warning", _IN_A_PINGPONG.get(number) or row["meaning"]


def _fi_error(line):
    m = _FI_PRINTERR_RE.match(line)
    if m:
        call = m.group("call").split("(")[0]
        if call in _FI_SIDE:
            return _PEER, "unknown", "warning", "the TCP side channel to the other side failed"
        if call in ("fi_cq_readerr", "pp_get_cq_comp"):
            return _DONE, "unknown", "warning", "reading a completion failed"
        return _SETUP, "unknown", "warning", ("no libfabric provider matched the options (-p, -e)"
                                              if call == "fi_getinfo" else "the provider could not set up the test")
    m = _FI_ERR_RE.match(line)
    msg = m.group("msg").strip() if m else line.strip()
    if msg.startswith("cq_readerr:"):  # the verbs provider writes ibv_wc_status_str: the table's words
        text = msg.split(":", 1)[1].strip().lower()
        hit = next((n for n in range(1, 32) if (code("rdma", n) or {}).get("text", "").lower() == text), None)
        return _status(hit) if hit else (_DONE, "unknown", "warning", "the provider reported a completion error")
    if msg.startswith(("failed to connect", "getaddrinfo", "ctrl/", "CLIENT:", "SERVER:")):
        return _PEER, "unknown", "warning", "the TCP side channel to the other side failed"
    if msg.startswith("Failed to get ") or "timeout expired" in msg:
        return _DONE, "unknown", "warning", "no completion came: the peer stopped, or messages were lost on the path"
    if msg.startswith(("eq_readerr:", "Unexpected CM event")):
        return _PORT, "unknown", "warning", "the provider's connection to the peer failed"
    if msg.startswith("Error at iteration="):
        return _DATA, "unknown", "warning", "the received buffer differs from what was sent (-c)"
    return _SETUP, "unknown", "warning", "fi_pingpong could not set up its test"


def _classify(line):
    """(kind, category, severity, meaning, follows, fi_pingpong's) of an error line of theirs, or None."""
    m = _STATUS_RE.match(line)
    if m:
        return _status(int(m.group(1) or m.group(2))) + (False, False)
    for regex, kind, category, meaning, when in _VERBS:
        if regex.match(line):
            return kind, category, "info" if when == "after" else "warning", meaning, when == "follows", False
    if _FI_PRINTERR_RE.match(line) or _FI_ERR_RE.match(line) or _FI_OTHER_RE.match(line):
        return _fi_error(line) + (line.startswith("[error]") and "Failed to get " in line, True)
    return None


def _scaled(text, scale):
    """fi_pingpong's size_str/cnt_str back to a number ('1.5k' -> 1536): as exact as it printed."""
    mult = scale.get(text[-1:], 1)
    return int(round(float(text.rstrip("kmgb")) * mult))


def _read(st, line):
    """Fill ``st`` from a line of the run's own output; whether it was one."""
    m = ADDRESS_RE.match(line)
    if m:
        if m.group("srqn") is not None or m.group("long") is None:
            st["shape"] = "ibv_xsrq_pingpong"
        elif m.group("sep") == ":":
            st["shape"] = "ibv_ud_pingpong"
        st.setdefault(m.group("side"), {"lid": int(m.group("lid"), 16), "qpn": int(m.group("qpn"), 16),
                                        "psn": int(m.group("psn"), 16), "gid": m.group("gid")})
        return True
    m = BYTES_RE.match(line)
    if m:
        st["results"].append({"bytes": int(m.group(1)), "seconds": float(m.group(2)),
                              "mbit_per_sec": float(m.group(3))})
        return True
    m = ITERS_RE.match(line)
    if m:
        if not st["results"] or "iters" in st["results"][-1]:
            st["results"].append({})
        st["results"][-1].update(iters=int(m.group(1)), usec_per_iter=float(m.group(3)))
        st["results"][-1].setdefault("seconds", float(m.group(2)))
        return True
    if FI_HEADER_RE.match(line):
        st["shape"], st["table"] = "fi_pingpong", True
        return True
    m = _FI_ROW_RE.match(line) if st.get("table") else None
    if m:
        sizes, counts = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}, {"k": 1000, "m": 10 ** 6, "b": 10 ** 9}
        st["results"].append({"size": m.group("size"), "bytes": _scaled(m.group("size"), sizes),
                              "sent": _scaled(m.group("sent"), counts), "acked": _scaled(m.group("ack"), counts),
                              "total": m.group("total"), "seconds": float(m.group("sec")),
                              "mb_per_sec": float(m.group("mbs")), "usec_per_xfer": float(m.group("usec")),
                              "mxfers_per_sec": float(m.group("mx"))})
        return True
    if line.strip() == "success" and st.get("shape") == "ibv_xsrq_pingpong":
        st["results"].append({"success": True})
        return True
    return False


def _parse(text, source=SOURCE):
    st, hits, tool = {"results": []}, [], None
    for n, raw in iter_lines(text):
        line = raw.rstrip()
        if not line.strip() or len(line) > MAX_LINE:
            continue
        if tool is None and "pingpong" in line:
            m = _CMD_RE.search(line)
            tool = m.group(1) if m else None
        if _read(st, line):
            continue
        hit = _classify(line)
        if hit:
            hits.append((n, line.strip()) + hit[:5])
            if hit[5]:
                st.setdefault("shape", "fi_pingpong")
    if not (st["results"] or hits or "local" in st or "remote" in st or st.get("table")):
        return {}, []
    tool = tool or st.get("shape") or "ibv_*_pingpong"
    peer = st.get("remote")
    toward = " (toward remote LID 0x%04x%s)" % (peer["lid"], ", GID %s" % peer["gid"] if peer["gid"] and
                                                 peer["gid"] != "::" else "") if peer else ""
    findings, said = [], set()
    for n, line, kind, category, severity, meaning, _f in [h for h in hits if not h[-1]] or hits:
        if kind in said:  # one finding per kind: the first line says the cause, the rest follow from it
            continue
        said.add(kind)
        findings.append(finding(kind, "%s: %s: %s%s." % (tool, line[:200], meaning.rstrip("."), toward),
                                evidence=line[:300], source="%s:%d" % (source, n), category=category,
                                severity=severity))
    completed = bool(st["results"]) and not any(f["severity"] != "info" for f in findings)
    if not st["results"] and not findings:
        waited = ("its table has no row: the first exchange never completed, or the capture was cut"
                  if st.get("table") else "the two ends exchanged addresses but no result followed: the exchange "
                  "hung (ud and uc do not resend a lost message) or the capture was cut" if peer else
                  "no peer connected (the server side waits for its client) or the capture was cut")
        findings.append(finding("ib_pingpong_incomplete", "%s printed no result and no error: %s." % (tool, waited),
                                source=source))
    facts = {"tool": tool, "completed": completed, "results": st["results"][:256], "local": st.get("local"),
             "remote": peer, "errors": [h[1][:200] for h in hits[:32]]}
    return facts, findings
