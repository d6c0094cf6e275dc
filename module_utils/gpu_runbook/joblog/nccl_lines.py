# SPDX-License-Identifier: Apache-2.0
"""Handlers of NCCL_DEBUG lines (``host:pid:tid [dev] NCCL INFO|WARN ...``): communicators
(rank, nranks, busId, localRank), the network NCCL chose, IB completion errors (also a
wrapped continuation line and the prefix-less ``Last error:`` form), refused or closed
connections, CUDA failures NCCL reports.

A handler takes (line, file state, job state) and returns True when the line is fully read
(no later handler needs to see it)."""

from .patterns import (BOOTSTRAP, CAP, BUSID, COMM, CUDA_ERR, CUDADEV, IB_COMPLETION, IB_DIR, IB_DISABLE, LOOPBACK_IP,
                       IB_HCA, IB_NODEV, IB_OPCODE, IB_UNOPENED, IB_VENDOR, IBV_WC_STATUS, LINK_LOCAL_IP, NCCL_BARE,
                       NCCL_PREFIX, NCCL_TRACE, NCCL_VERSION,
                       NET_DEV, NET_IB_USING, NET_PLUGIN_EXTERNAL, NET_PLUGIN_INTERNAL, NET_SOCKET_USING, OOB, PEER_ADDR,
                       RING_RANKS, SOCK_DEV, SOCK_DEV_AT, USING_NETWORK, VIA, VIA_PAIR, VIA_SOCKET)
from .nccl_words import peer_gone, read_bare, read_warn
from .emitter_lines import LAST_ERROR_HEAD, read_vocabulary
from .text import add, busid_to_pci, evidence
from ..vocab.reading import error_like


def continue_wrapped_ib(line, fs, st):
    """A wrapped IB completion line ("... len\\n0, vendor err 129 (Recv)"): its tail belongs
    to the error on the line before."""
    ev, fs.pending_ib = fs.pending_ib, None
    if ev is None or "vendor err" not in line.text or NCCL_PREFIX.search(line.text):
        return False
    mv = IB_VENDOR.search(line.text)
    if mv:
        ev["vendor_err"] = int(mv.group(1))
    md = IB_DIR.search(line.text)
    if md:
        ev["direction"] = md.group(1)
    ev["evidence"] = evidence(ev["evidence"] + "\n" + line.raw)
    return False


MAX_JOINED = 64   # NCCL records read out of one physical line


def nccl_line(line, fs, st):
    if "NCCL" not in line.text:
        return False
    if line.text.count("NCCL ") > 1:
        # records joined on one line (a terminal paste, a lost newline): read each one
        starts = [m.start("host") for _, m in zip(range(MAX_JOINED), NCCL_PREFIX.finditer(line.text))]
        if len(starts) > 1:
            done = False
            for i, (a, b) in enumerate(zip(starts, starts[1:] + [len(line.text)])):
                done = _nccl_text(line.text[a:b], line, fs, st, own=(i == 0)) or done
            return done
    return _nccl_text(line.text, line, fs, st)


def _nccl_text(text, line, fs, st, own=True):
    """One NCCL record; ``own``: the line's rank prefix belongs to it (the first of joined ones)."""
    rank = line.rank if own else None
    host = pid = dev = level = None
    body = None
    mp = NCCL_PREFIX.search(text)
    if mp:
        host, pid, dev = mp.group("host"), int(mp.group("pid")), int(mp.group("dev"))
        body, level = text[mp.end():], mp.group("lvl")
        if line.ip:                               # Ray's '(Actor pid=N, ip=A)': A is this host's address
            st.ip_host.setdefault(line.ip, host)
        if line.host and line.host[0].isdigit():  # pdsh's '10.0.0.5: ' before NCCL's own host name
            st.ip_host.setdefault(line.host, host)
        if line.prefixed and own:
            st.pid_rank[(host, pid)] = rank
            st.rank_host.setdefault(rank, host)
        elif rank is not None:                    # per-rank file: weaker than a line prefix
            st.pid_rank_weak.setdefault((host, pid), rank)
            st.rank_host_weak.setdefault(rank, host)
    else:
        mb = NCCL_BARE.search(text)
        if mb:
            body, level = text[mb.end():], mb.group(1)
    if body is not None:
        ev = nccl_body(body, line, host, pid, dev, st, level)
        if ev is not None and ev.get("vendor_err") is None:
            fs.pending_ib = ev
        return True
    mv = NCCL_VERSION.search(text)
    if mv:
        st.nccl_version = mv.group(1)
    return False


# the lines under PyTorch's 'Last error:' that are NCCL's last error (ncclGetLastError: one message)
LAST_ERROR_LINES = 2


def bare_ib_completion(line, fs, st):
    """An IB completion without the NCCL prefix (PyTorch's 'Last error:' block), and NCCL's
    other words there (no socket interface, duplicate GPU, /dev/shm ...: nccl_words)."""
    under = _under_last_error(line, fs) if fs.last_error is not None else None
    head = LAST_ERROR_HEAD.match(line.text)
    if head:
        # PyTorch's head over NCCL's last error (c10d NCCLUtils.cpp getNcclErrorDetailStr: "\nLast error:\n"
        # + ncclGetLastError()): the next line is NCCL's message without NCCL's prefix (the head itself
        # is the last reader's: emitter_lines). A tag a launcher put before every line ('opt-1_3b.0
        # [stderr] ') stands before both: the line under it is read without it
        fs.last_error = (line.rank, line.lineno(), head.group(1))
        return False
    if "Got completion " in line.text:
        ev = ib_completion(line.text, line, None, None, None, st)
        if ev is not None and ev.get("vendor_err") is None:
            fs.pending_ib = ev
        return False
    if read_bare(line, st):
        return False
    return under is not None and _last_error(line, under, st)


def nccl_body(body, line, host, pid, dev, st, level=None):
    """One NCCL message body (``level``: INFO, WARN, ...). Returns the IB completion event it
    recorded, if any."""
    for reader in (_comm, _trace, _net_ib, _bootstrap, _net_socket, _network_choice, _net_plugin):
        done = reader(body, line, host, pid, dev, st)
        if done:
            return None
    if "Got completion " in body:
        ev = ib_completion(body, line, host, pid, dev, st)
        if ev is not None:
            return ev  # else a wording it does not read (2.30's NET/IB resiliency): the vocabulary's
    if read_warn(body, line, host, pid, st, level):
        return None
    if not _error(body, line, host, pid, st):
        _vocabulary(body, line, st, level)
    return None


def _vocabulary(body, line, st, level):
    """A WARN (or an INFO line worded as a failure) no rule above read: NCCL's own vocabulary
    says what it is (vocab/nccl.py, every WARN of the source), the other job tables what it
    quotes ('Cuda failure ...'); a WARN nothing explains is quoted as unexplained, never passed."""
    if level in (None, "INFO", "TRACE") and not error_like(body):
        return
    read_vocabulary(line, st)


def _comm(body, line, host, pid, dev, st):
    m = COMM.search(body)
    if not m:
        return False
    rec = {"comm": m.group(1), "rank": int(m.group(2)), "nranks": int(m.group(3)),
           "host": host, "pid": pid, "dev": dev,
           "local_rank": int(m.group(6)) if m.group(6) else None, "pci": None,
           "line_rank": line.rank}
    mb = BUSID.search(body)
    if mb:
        rec["pci"] = busid_to_pci(mb.group(1))
    mc = CUDADEV.search(body)
    if mc:
        rec["cuda_dev"] = int(mc.group(1))
    # src/init.cc: '... commId 0x%llx - Init COMPLETE': this communicator came up
    rec["init_complete"] = "Init COMPLETE" in body
    rec["init_start"] = "Init START" in body  # NCCL 2.19+: its init began (its COMPLETE follows when it came up)
    st.comm.append(rec)
    return True


def _trace(body, line, host, pid, dev, st):
    """A line of NCCL's error trail (patterns.NCCL_TRACE): the first of a process is where the
    failure began; the rest only pass it up."""
    if " -> " not in body:
        return False
    m = NCCL_TRACE.match(body)
    if not m:
        return False
    if "bootstrap" in m.group("file") and len(st.bootstrap_trails) < CAP:
        st.bootstrap_trails.add((host, pid))
    if (host, pid) not in st.nccl_traces and len(st.nccl_traces) < CAP:
        st.nccl_traces[(host, pid)] = {"host": host, "rank": line.rank, "file": m.group("file"),
                                       "line": int(m.group("line")), "res": int(m.group("res")),
                                       "why": m.group("why"), "src": line.src, "evidence": line.raw}
    return True


def _net_ib(body, line, host, pid, dev, st):
    if not ("NET/IB" in body and "Using" in body):
        return False
    m = NET_IB_USING.search(body)
    if m:
        for d, _port, ll in NET_DEV.findall(m.group(1)):
            lst = st.ib_devices if ll == "IB" else st.roce_devices
            if d not in lst:
                lst.append(d)
        mo = OOB.search(body)
        if mo:
            st.oob = mo.group(1)
            if host:
                st.ip_host.setdefault(mo.group(2), host)
        if st.net_ib_line is None:
            st.net_ib_line = (line.src, line.raw)
    return True


def _bootstrap(body, line, host, pid, dev, st):
    if "Bootstrap" not in body or "found" in body:      # 'no socket interface found': nccl_words
        return False
    m = BOOTSTRAP.search(body)
    if not m:
        return False  # 'Bootstrap Root : mismatch in info from procs ...': a WARN of its own
    if host:
        st.ip_host.setdefault(m.group(2), host)
    if m.group(1).startswith("ib"):
        st.ipoib_seen = True
    if LOOPBACK_IP.match(m.group(2)) and st.socket_loopback is None:
        st.socket_loopback = (line, host, pid)
    return True


def _net_socket(body, line, host, pid, dev, st):
    if not ("NET/Socket" in body and "Using" in body):
        return False
    m = NET_SOCKET_USING.search(body)
    if m:
        used = SOCK_DEV.findall(m.group(1))
        if used and all(LOOPBACK_IP.match(ip) for _ifn, ip in used) and st.socket_loopback is None:
            st.socket_loopback = (line, host, pid)
        for idx, ifn, ip in SOCK_DEV_AT.findall(m.group(1)):
            if LINK_LOCAL_IP.match(ip) and len(st.socket_link_local) < 64:
                st.socket_link_local.setdefault((host, int(idx)), (ifn, ip))  # each host numbers its own
        for ifn, ip in used:
            if host:
                st.ip_host.setdefault(ip, host)
            if ifn.startswith("ib"):
                st.ipoib_seen = True
        if st.socket_evidence is None:
            st.socket_evidence = (line.src, line.raw)
    return True


def _network_choice(body, line, host, pid, dev, st):
    """'Using network X', 'via NET/IB', NCCL_IB_DISABLE, 'NET/IB : No device found'."""
    m = USING_NETWORK.search(body)
    if m:
        st.networks.append(m.group(1))
        if m.group(1).lower().startswith("socket") and st.socket_evidence is None:
            st.socket_evidence = (line.src, line.raw)
        return True
    if "via " in body:
        m = VIA.search(body)
        if m:
            ms = VIA_SOCKET.search(body)
            if ms and len(st.socket_via) < 256:
                st.socket_via.add((host, int(ms.group(1))))
            st.via[m.group(1).split("/")[0] + ("/" + m.group(1).split("/")[1] if "/" in m.group(1) else "")] += 1
            mp = VIA_PAIR.search(body)
            if mp and not m.group(1).startswith(("NET", "COLLNET")) and len(st.local_pairs) < 4096:
                st.local_pairs.add(frozenset((int(mp.group(1)), int(mp.group(2)))))
            return True
    mr = RING_RANKS.search(body)
    if mr and not st.ring_ranks:
        st.ring_ranks = [int(r) for r in mr.group(1).split()]
        return True
    if IB_DISABLE.search(body):
        if st.ib_disabled is None:
            st.ib_disabled = (line.src, line.raw)
        return True
    mu = IB_UNOPENED.search(body)
    if mu:  # an RDMA device exists but this process cannot open it (a container without it)
        if mu.group(1) not in st.ib_unopened and len(st.ib_unopened) < 64:
            st.ib_unopened.append(mu.group(1))
        return False  # a WARN of its own too (vocab/nccl.py): the device is there and could not be used
    if IB_NODEV.search(body):
        if st.ib_nodev is None:
            st.ib_nodev = (line.src, line.raw)
        return True
    return False


def _net_plugin(body, line, host, pid, dev, st):
    """Which network plugin this host's NCCL runs: its internal one, or an external libnccl-net; and a
    plugin that could not start (aws-ofi-nccl's 'NET/OFI aws-ofi-nccl initialization failed'): the
    fabric it serves (EFA) was meant, so NCCL's sockets after it are a fallback."""
    if "NET/OFI" in body and "initialization failed" in body and st.net_plugin_failed is None:
        st.net_plugin_failed = (line.src, line.raw)
        return False
    if "Plugin" not in body:
        return False
    if NET_PLUGIN_INTERNAL.search(body):
        plugin = "internal"
    else:
        m = NET_PLUGIN_EXTERNAL.search(body)
        if m is None:
            return False
        plugin = (m.group(1) or m.group(2)).strip()
    if host and (host not in st.net_plugins or st.net_plugins[host][0] == "internal") and len(st.net_plugins) < 4096:
        st.net_plugins[host] = (plugin, line.src, line.raw)
    return True


def _error(body, line, host, pid, st):
    """A refused/closed peer connection, or a CUDA failure NCCL reports; True when it was one."""
    base = {"rank": line.rank, "host": host, "pid": pid, "src": line.src, "evidence": line.raw}
    what = peer_gone(body)
    if what:
        mp = PEER_ADDR.search(body)
        add(st.events, dict(base, kind="nccl_peer_connection", what=what,
                            peer=mp.group(1).strip("[]") if mp else None))
        return True
    if "out of memory" in body and "Cuda failure" in body:
        add(st.events, dict(base, kind="cuda_oom", alloc=None))
        return True
    m = CUDA_ERR.search(body)
    if m:
        add(st.events, dict(base, kind="cuda_error", what=m.group(1)))
        return True
    return False


def wc_event(status, said, line, **fields):
    """An IB work-completion error event (NCCL's, Open MPI's openib BTL's): the status's name and
    meaning as rdma-core has them (IBV_WC_STATUS), else the words the line said."""
    name, text = IBV_WC_STATUS.get(status, ("IBV_WC_%d" % status, (said or "unknown status").strip()))
    ev = {"kind": "ib_completion_error", "peer": None, "status": status, "status_name": name, "status_text": text,
          "vendor_err": None, "opcode": None, "direction": None, "hca": None, "rank": line.rank, "host": None,
          "pid": None, "dev": None, "src": line.src, "evidence": line.raw}
    ev.update(fields)
    return ev


def ib_completion(body, line, host, pid, dev, st):
    m = IB_COMPLETION.search(body)
    if not m:
        return None
    ev = wc_event(int(m.group("st") or m.group("st2")), m.group("stname"), line, peer=m.group("peer"), host=host,
                  pid=pid, dev=dev)
    rest = body[m.end():]
    mv = IB_VENDOR.search(rest)
    if mv:
        ev["vendor_err"] = int(mv.group(1))
    mo = IB_OPCODE.search(rest)
    if mo:
        ev["opcode"] = int(mo.group(1))
    md = IB_DIR.search(rest)
    if md and md.group(1) in ("Send", "Recv", "Read", "Write", "Flush"):
        ev["direction"] = md.group(1)
    mh = IB_HCA.search(rest)
    if mh:
        ev["hca"] = mh.group(1)
    add(st.events, ev)
    return ev


def _under_last_error(line, fs):
    """The line's text without the head's tag, for a line of the same rank and tag among the
    LAST_ERROR_LINES lines under 'Last error:' (by the file's line numbers: a line another handler
    took still counts); else None."""
    rank, at, tag = fs.last_error
    if line.lineno() - at > LAST_ERROR_LINES:
        fs.last_error = None
        return None
    if line.rank != rank or not line.text.startswith(tag) or not line.text[len(tag):].strip():
        return None
    return line.text[len(tag):]


def _last_error(line, text, st):
    """NCCL's last error under 'Last error:' (``text``: the line's text without a launcher's tag)
    that NCCL's own readers did not take: read as NCCL's words, though it carries none of NCCL's
    markers. A connection a peer closed is that event; one to a loopback address is the set-up's
    (no other node can reach it). True when it was read."""
    text = text.strip()
    from ..vocab import ROW_FIELDS, table
    what = peer_gone(text)
    if what:
        mp = PEER_ADDR.search(text)
        peer = mp.group(1).strip("[]") if mp else None
        add(st.events, {"kind": "nccl_peer_connection", "what": what, "peer": peer, "rank": line.rank, "host": None,
                        "pid": None, "src": line.src, "evidence": line.raw})
        if peer and LOOPBACK_IP.match(peer) and st.socket_loopback is None:
            st.socket_loopback = (line, None, None)
        return True
    t = table("nccl")
    m = t.match(text) if t is not None else None
    if m is not None:
        st.seen.message(t, dict(zip(ROW_FIELDS, m[0])), line.src, line.raw, rank=line.rank)
        return True
    return False
