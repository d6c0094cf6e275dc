# SPDX-License-Identifier: Apache-2.0
"""NCCL's own words about a broken setup or a broken link, in every wording its versions used
(2.4 .. 2.2x, the IB plugins, and the ``Last error:`` line PyTorch copies them into):

* the socket interface: ``Bootstrap : no socket interface found``, ``NET/Socket : no
  interface found``, ``NET/IB : No IP interface found``, ``no NCCL_SOCKET_IFNAME interface
  found``, ``No interface found in the same subnet``, ``ncclSocketInit: connecting to address
  with family N is neither AF_INET(2) nor AF_INET6(10)`` (an NCCL_SOCKET_IFNAME that matched
  nothing, so the address is empty);
* ``Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000``, ``invalid usage``
  / ``ncclInvalidUsage``;
* shared memory: ``Call to posix_fallocate failed : No space left on device``, ``failed to
  extend /dev/shm/nccl-X to N bytes``, ``Error while creating|attaching to shared memory
  segment ...``;
* IB memory registration: ``Call to ibv_reg_mr[_iova2|_dmabuf_mr] failed [with error] X``,
  ``GPU Direct RDMA Disabled for HCA N 'mlx5_0' (no module)``;
* NVLink SHARP / Fabric Manager: ``transport/nvls.cc:N NCCL WARN Cuda failure [1] 'X'``,
  ``Cuda failure 'system not yet initialized'`` (Fabric Manager not running), cuMulticast*;
* IB async events: ``NET/IB : Got async event : port error`` (and ``NET/IB : mlx5_0:1 Got
  async event : ...``, the 2.4 ``IB Got async event``), counted per host and event;
* a peer that went away: refused, reset, closed by the remote peer, broken pipe, aborted,
  timed out, no route: the peer is named by address ``10.1.2.3<port>`` or by name ``node2<port>``;
* reverse DNS printed in the log (``3.2.1.10.in-addr.arpa domain name pointer node.ib0``),
  which names the host behind an address.

Every pattern is anchored on a literal and uses bounded spans only (linear on a 1 MiB line).
``read_warn`` reads an NCCL message body; ``read_bare`` reads a line without the NCCL prefix;
``word_findings`` turns what they recorded into findings (kinds: taxonomy/kinds_job.py)."""

import re

from ..findings import finding
from .nccl_async import async_findings, async_port_hosts, common as _common, event_name  # noqa: F401 (culprits')
from .text import add, evidence

NO_IFACE = re.compile(
    r"\b(?:no socket interface found|no interface found(?: in the same subnet)?|No IP interface found|"
    r"no NCCL_SOCKET_IFNAME interface found|No usable listening interface found|"
    r"is neither AF_INET\(\d+\) nor AF_INET6\(\d+\)|"
    # the interface NCCL picked has no address of the family it asked for (NVIDIA/nccl#210)
    r"Socket creation failed : Address family not supported)", re.I)
IFNAME_ENV = re.compile(r"\bNCCL_SOCKET_IFNAME set (?:by environment )?to (\S{1,64})")
DUP_GPU = re.compile(r"Duplicate GPU detected : rank (\d+) and rank (\d+) both on CUDA device ([0-9a-fA-F]{1,16})")
INVALID_USAGE = re.compile(r"\b(?:ncclInvalidUsage|invalid usage(?: \(run with NCCL_DEBUG=WARN for details\))?)")
SHM = re.compile(r"(Error while (?:creating|attaching to) shared memory segment|failed to extend (?:/dev/shm/)?\S{1,200} "
                 r"to \d+ bytes|Call to posix_fallocate failed|Unable to (?:allocate|open) shared memory)")
SHM_WHY = re.compile(r"(No space left on device|No such file or directory|Permission denied|"
                     r"Cannot allocate memory|Bus error|invalid argument)", re.I)
REG_MR = re.compile(r"Call to (ibv_reg_(?:dmabuf_)?mr\w{0,16})(?: \([^)\n]{0,200}\))? failed(?: with error)?\s?:?\s?"
                    r"([A-Za-z][\w ]{0,60})?")
GDR_NOMOD = re.compile(r"GPU Direct RDMA Disabled for HCA \d+ '([\w.\-]{1,40})' \(no module\)")
CUDA_FAIL = re.compile(r"Cuda failure (?:\d+ )?'([^'\n]{1,80})'")
# NVLS's own failure to bind its multicast memory (transport/nvls.cc, 2.28+: 'Failed to bind NVLink SHARP
# (NVLS) Multicast memory of size %ld : CUDA error %d '%s'.', then, as NCCL says, 'usually ... the Fabric
# Manager or NVSwitches'); not its INFO twin that goes on '... Proceeding without NVLS support.'
NVLS_BIND = re.compile(r"Failed to bind NVLink SHARP \(NVLS\) Multicast memory of size \d{1,20} : CUDA error \d{1,4} "
                       r"'([^'\n]{1,80})'(?!\.? Proceeding without)")
CUDA_INIT = re.compile(r"^(?:initialization error|no CUDA-capable device is detected|"
                       r"CUDA-capable device\(s\) is/are busy or unavailable|all CUDA-capable devices are busy)")
NVLS_REFUSED = re.compile(r"invalid argument|operation not permitted|operation not supported|not supported")
# (not "NVLS register": "failed to NVLS register sendbuff" is a user buffer NCCL then copies through, nvls.cc)
FM_WORDS = re.compile(r"system not yet initialized|cuMulticast\w{0,30}|NVLS (?:multicast|bind)\w{0,20}", re.I)
# 'Got async event : port error' (<= 2.25), 'Got async error event: port error' (2.26+, net_ib.cc)
ASYNC = re.compile(r"\b(?:NET/\w{1,16}|IB) ?:? ?(?:([\w.\-]{1,40}):(\d{1,3}) )?Got async (?:error )?event ?: ?"
                   r"([A-Za-z][\w ./-]{0,60})")
PEER_GONE = re.compile(r"(Connection refused|[Cc]onnection closed by remote peer|Connection reset by peer|"
                       r"No route to host|Connection timed out|Broken pipe|Software caused connection abort|"
                       r"Network is unreachable)")
MISMATCHED = re.compile(r"Mismatched collective detected, please check your collective calls at and around rank (\d{1,7})")
NET_SIZE_MISMATCH = re.compile(r"peer (\S{1,80}) collective mismatch error,? local size (\d{1,20}) remote size (\d{1,20})")
REVERSE_DNS = re.compile(r"\b(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.in-addr\.arpa\.?\s+(?:domain )?name "
                         r"(?:pointer )?=?\s?([A-Za-z][\w.\-]{0,200})")

# what a bare line (no NCCL prefix: PyTorch's 'Last error:' block) must contain to be NCCL's words
_BARE_HINTS = ("Bootstrap", "NET/", "ncclSocket", "Net :", "Duplicate GPU", "shared memory", "/dev/shm",
               "ibv_reg", "Got async event", "invalid usage", "ncclInvalidUsage", "system not yet initialized",
               "nvls", "NVLS", "in-addr.arpa", "ismatched collective", "collective mismatch",
               "Socket creation failed")

# setup errors: the job never ran; a peer that went away after one is its consequence
SETUP_KINDS = ("nccl_socket_interface", "nccl_duplicate_gpu", "nccl_invalid_usage", "nccl_shm_failed",
               "nccl_ib_registration_failed", "nccl_fabric_manager", "nccl_nvls_unavailable",
               "nccl_cuda_init_failed", "nccl_ib_qp_setup_failed")
# NCCL's failed ibv_modify_qp (misc/ibvwrap.cc: 'Call to ibv_modify_qp failed with error %s [errno %d]' before
# 2.24, 'with %d %s, <qp state, GID index ...>' since): its errno as strerror says it
MODIFY_QP = re.compile(r"Call to ibv_modify_qp failed with (?:error )?(?:(\d{1,3}) )?([A-Z][a-z][\w ]{2,40}?)"
                       r"(?:,| errno (\d{1,3})|\s*$)")
# the HCA rejecting the queue pair's own attributes: EINVAL (printIbModifyQpHint, ibvwrap.cc, NCCL 2.24+: an
# incorrect GID index forced by NCCL_IB_GID_INDEX, or a GID that changed mid-run) and ENODEV (a device the
# process cannot use: a container's RDMA device without its netdev). ETIMEDOUT is not among them: the peer's
# address did not answer (NICs not cross-rail connected, as NCCL's hint says, or a route missing): the fabric's
QP_SETUP_ERRORS = ("Invalid argument", "No such device")
# setup errors that live on the host, not in the job's environment or code
HOST_SIDE_KINDS = ("nccl_ib_registration_failed", "nccl_fabric_manager", "nccl_cuda_init_failed")


def read_warn(body, line, host, pid, st, level=None):
    """One NCCL message body (prefix stripped; ``line.text`` still has the source file, e.g.
    transport/nvls.cc; ``level``: INFO, WARN, ...). Returns True when it recorded something."""
    return _read(body, line.text, line, host, pid, st, level)


def read_bare(line, st):
    """A line without the NCCL prefix (a 'Last error:' block, a launcher's copy)."""
    text = line.text
    if not any(h in text for h in _BARE_HINTS):
        return False
    m = REVERSE_DNS.search(text)
    if m:
        st.ip_host.setdefault(".".join(reversed(m.groups()[:4])), m.group(5).rstrip(".").split(".")[0])
        return True
    return _read(text, text, line, None, None, st)


def _rec(st, kind, line, host, pid, **kw):
    rec = {"kind": kind, "rank": line.rank, "host": host, "pid": pid, "src": line.src, "evidence": line.raw}
    rec.update(kw)
    add(st.nccl_words, rec)
    return True


def _read(body, full, line, host, pid, st, level=None):
    if "ismatched collective" in body or "collective mismatch" in body:
        m = MISMATCHED.search(body)
        if m:
            return _rec(st, "nccl_mismatched_collective", line, host, pid, around=int(m.group(1)))
        m = NET_SIZE_MISMATCH.search(body)
        if m:
            return _rec(st, "nccl_net_size_mismatch", line, host, pid, peer=m.group(1), local=int(m.group(2)),
                        remote=int(m.group(3)))
    m = IFNAME_ENV.search(body)
    if m:
        st.socket_ifname = m.group(1)
        return False
    if "interface found" in body or "AF_INET" in body or "Address family" in body:
        m = NO_IFACE.search(body)
        if m:
            return _rec(st, "nccl_socket_interface", line, host, pid, what=m.group(0))
    if "Duplicate GPU" in body:
        m = DUP_GPU.search(body)
        if m:
            return _rec(st, "nccl_duplicate_gpu", line, host, pid, what=m.group(0),
                        ranks=(int(m.group(1)), int(m.group(2))), busid=m.group(3))
    if "nvalid usage" in body or "ncclInvalidUsage" in body:
        m = INVALID_USAGE.search(body)
        if m:
            return _rec(st, "nccl_invalid_usage", line, host, pid, what=m.group(0))
    if "shared memory" in body or "/dev/shm" in body or "posix_fallocate" in body:
        m = SHM.search(body)
        if m:
            w = SHM_WHY.search(body)
            return _rec(st, "nccl_shm_failed", line, host, pid, what=m.group(1), why=w.group(1) if w else None)
    if "ibv_reg" in body:
        m = REG_MR.search(body)
        if m:
            return _rec(st, "nccl_ib_registration_failed", line, host, pid, what=m.group(1),
                        why=(m.group(2) or "").strip() or None)
    if "ibv_modify_qp" in body and not st.progress:
        # before the run trained: the queue pair's set-up, not a link that failed under traffic
        m = MODIFY_QP.search(body)
        if m and m.group(2).strip() in QP_SETUP_ERRORS:
            return _rec(st, "nccl_ib_qp_setup_failed", line, host, pid, what=m.group(2).strip())
    if "no module" in body and "GPU Direct RDMA" in body:
        m = GDR_NOMOD.search(body)
        if m:
            return _rec(st, "nccl_ib_registration_failed", line, host, pid, what="GPUDirect RDMA disabled",
                        why="no peer-memory module", hca=m.group(1))
    if "Cuda failure" in body or "initialized" in body or "ulticast" in body or "NVLS" in body:
        r = _fabric(body, full, line, host, pid, st, level)
        if r:
            return r
    if "async event" in body or "async error event" in body:
        m = ASYNC.search(body)
        if m:
            return _rec(st, "nccl_ib_async_event", line, host, pid, event=event_name(m.group(3)),
                        hca=m.group(1), port=int(m.group(2)) if m.group(2) else None)
    return False


def _fabric(body, full, line, host, pid, st, level=None):
    mb = NVLS_BIND.search(body)
    if mb:
        return _rec(st, "nccl_fabric_manager", line, host, pid, what=mb.group(1), nvls=True)
    m = CUDA_FAIL.search(body)
    if m and CUDA_INIT.search(m.group(1)):
        # CUDA could not even start on this process's GPU: that GPU or the host's driver state
        return _rec(st, "nccl_cuda_init_failed", line, host, pid, what=m.group(1))
    fm = FM_WORDS.search(body)
    nvls = "nvls" in full.lower()
    if m and nvls and NVLS_REFUSED.search(m.group(1)):
        # CUDA refuses the multicast object itself: NVLS cannot work in this environment (a
        # container without /dev/nvidia-caps, a driver or FM that does not offer it): the job's
        # setting, not the node's fabric
        return _rec(st, "nccl_nvls_unavailable", line, host, pid, what=m.group(1))
    # NCCL's INFO words about NVLS are what it found and went on without (transport/nvls.cc: 'NVLS multicast
    # support is not available on dev %d' where the GPU offers no multicast, as without NVSwitches)
    if (m and (nvls or "not yet initialized" in m.group(1))) or (fm and not m and level not in ("INFO", "TRACE")):
        return _rec(st, "nccl_fabric_manager", line, host, pid, what=(m.group(1) if m else fm.group(0)), nvls=nvls)
    if m and _api_misuse(m.group(1)):
        # CUDA rejected NCCL's own call's arguments ('invalid argument', 'invalid resource handle'):
        # NCCL's build against this CUDA runtime / driver (or an NCCL bug), not the GPU or the link
        return _rec(st, "nccl_cuda_call_rejected", line, host, pid, what=m.group(1))
    return False


def _api_misuse(text):
    """True when CUDA's vocabulary (vocab/cuda.py) calls ``text`` an API misuse: a call's
    arguments or state were wrong, which says nothing about the hardware."""
    from ..vocab import cuda
    return any(row[2] == text and row[3] == "logged_application_error" and row[5] != "info" for row in cuda.CODES)


def peer_gone(body):
    """The connection error a peer caused, or None."""
    m = PEER_GONE.search(body)
    return m.group(1) if m else None


# ------------------------------------------------------------------ findings

def _where(rec):
    return ("rank %s" % rec["rank"] if rec.get("rank") is not None else "a rank") + \
        (" on %s" % rec["host"] if rec.get("host") else "")


def _socket_interface(rec, st):
    env = getattr(st, "socket_ifname", None)
    if rec.get("loopback"):
        return finding("nccl_socket_interface",
                       "%s: NCCL's sockets use only the loopback interface%s, which no other node can reach, and the "
                       "ranks could not connect to their peers: set NCCL_SOCKET_IFNAME to the interface that routes "
                       "between the nodes." % (_where(rec), " (NCCL_SOCKET_IFNAME=%s)" % env if env else ""),
                       note="`NCCL_SOCKET_IFNAME=%s`" % env if env else None, **_common(rec))
    return finding("nccl_socket_interface",
                   "%s: NCCL found no usable socket interface (%s)%s: NCCL_SOCKET_IFNAME matches no interface "
                   "with an address on this host." % (_where(rec), rec["what"],
                                                      " with NCCL_SOCKET_IFNAME=%s" % env if env else ""),
                   note="`NCCL_SOCKET_IFNAME=%s`" % env if env else None, **_common(rec))


def _duplicate_gpu(rec, st):
    a, b = rec["ranks"]
    return finding("nccl_duplicate_gpu",
                   "%s: ranks %d and %d are both on CUDA device %s (busId): two ranks of one communicator share "
                   "a GPU." % (_where(rec), a, b, rec["busid"]), **_common(rec))


def _invalid_usage(rec, st):
    return finding("nccl_invalid_usage", "%s: NCCL rejected the call as invalid usage (%s)." % (_where(rec), rec["what"]),
                   **_common(rec))


def _shm(rec, st):
    return finding("nccl_shm_failed",
                   "%s: NCCL could not create its shared-memory segment (%s%s): /dev/shm is too small or "
                   "missing in the container." % (_where(rec), rec["what"], ", " + rec["why"] if rec.get("why") else ""),
                   **_common(rec))


def _reg(rec, st):
    sev = "warning" if rec.get("hca") else "critical"
    return finding("nccl_ib_registration_failed",
                   "%s: InfiniBand memory registration failed (%s%s): locked-memory limit (`ulimit -l`) or the "
                   "GPUDirect peer-memory module (nvidia_peermem) on this host." % (
                       _where(rec), rec["what"], ": " + rec["why"] if rec.get("why") else ""),
                   severity=sev, **_common(rec))


def _qp_setup(rec, st):
    hint = {"Invalid argument": "NCCL's hint: an incorrect GID index forced by NCCL_IB_GID_INDEX, or a RoCE port "
                                "without the GID it expects",
            "No such device": "a device the process cannot use: a container given the RDMA device without its netdev, "
                              "or NCCL_IB_HCA naming the wrong one"}[rec["what"]]
    return finding("nccl_ib_qp_setup_failed",
                   "%s: NCCL could not bring up a queue pair to its peer (ibv_modify_qp: %s) before the run trained: "
                   "the RDMA set-up, not a link that failed under traffic (%s)." % (_where(rec), rec["what"], hint),
                   inferred="early", **_common(rec))


def _fm(rec, st):
    return finding("nccl_fabric_manager",
                   "%s: %s failed with CUDA error '%s': NVLink fabric (Fabric Manager) not running or not "
                   "initialised in the right order on this host." % (
                       _where(rec), "NVLS (NVLink SHARP)" if rec.get("nvls") else "CUDA", rec["what"]),
                   **_common(rec))


def _cuda_init(rec, st):
    return finding("nccl_cuda_init_failed",
                   "%s: CUDA failed to initialise ('%s') when NCCL set up the GPU: that GPU or the host's driver "
                   "is not usable (an earlier Xid, a GPU off the bus, a driver reload, a device held elsewhere)."
                   % (_where(rec), rec["what"]), **_common(rec))


def _cuda_rejected(rec, st):
    return finding("nccl_cuda_call_rejected",
                   "%s: a CUDA call inside NCCL failed with '%s': CUDA rejected NCCL's own call, which points at "
                   "the NCCL build against this CUDA runtime and driver (or an NCCL bug), not at the GPU or the "
                   "network." % (_where(rec), rec["what"]), **_common(rec))


def _nvls(rec, st):
    return finding("nccl_nvls_unavailable",
                   "%s: NVLS (NVLink SHARP) setup failed with CUDA error '%s': NVLS is not usable in this "
                   "environment (a container without /dev/nvidia-caps, or a driver / Fabric Manager that does "
                   "not offer multicast); the GPUs and NVLinks are not at fault." % (_where(rec), rec["what"]),
                   **_common(rec))


def _mismatched(rec, st):
    return finding("nccl_mismatched_collective",
                   "%s: NCCL detected mismatched collectives at and around rank %d: the ranks call different "
                   "collectives (or sizes) in the same slot -- an application bug." % (_where(rec), rec["around"]),
                   evidence=evidence(rec["evidence"]), source=rec["src"], rank=rec["around"])


def _net_size(rec, st):
    return finding("nccl_net_size_mismatch",
                   "%s: NET/IB collective mismatch with peer %s (local size %d, remote size %d): the two ends "
                   "disagree on the transfer -- different NCCL versions or NCCL_* settings across nodes, or ranks "
                   "calling different collectives." % (_where(rec), rec["peer"], rec["local"], rec["remote"]),
                   **_common(rec))


def mismatch_ranks(st):
    """The ranks NCCL's 'Mismatched collective detected ... around rank N' names."""
    return sorted(set(r["around"] for r in st.nccl_words if r["kind"] == "nccl_mismatched_collective"))


_BUILD = {"nccl_mismatched_collective": _mismatched, "nccl_net_size_mismatch": _net_size,
          "nccl_socket_interface": _socket_interface, "nccl_duplicate_gpu": _duplicate_gpu,
          "nccl_invalid_usage": _invalid_usage, "nccl_shm_failed": _shm,
          "nccl_ib_registration_failed": _reg, "nccl_fabric_manager": _fm, "nccl_ib_qp_setup_failed": _qp_setup,
          "nccl_nvls_unavailable": _nvls, "nccl_cuda_init_failed": _cuda_init,
          "nccl_cuda_call_rejected": _cuda_rejected}


def word_findings(st, findings):
    """Findings of NCCL's own words. A setup error (no interface, duplicate GPU, /dev/shm,
    memory registration, Fabric Manager), or a rank that logged why it died, makes the other
    ranks' lost connections and generic NCCL errors its consequence: they are lowered to
    warning, in place."""
    out = []
    _loopback_record(st, findings)
    specific = any(r["kind"] in SETUP_KINDS and r["kind"] != "nccl_invalid_usage" for r in st.nccl_words)
    for rec in st.nccl_words:
        build = _BUILD.get(rec["kind"])
        if build is None or (rec["kind"] == "nccl_invalid_usage" and specific):
            continue
        out.append(build(rec, st))
    out.extend(async_findings(st))
    _socket_without_ib(st, findings)
    if died_of_own_error(st) or any(f["kind"] in SETUP_KINDS and f["severity"] == "critical" for f in out):
        for f in findings:
            if f["kind"] in ("nccl_peer_connection_error", "nccl_error") and f["severity"] == "critical":
                f["severity"] = "warning"
    return out


def _loopback_record(st, findings):
    """NCCL's sockets on the loopback interface only (``Using [0]lo:127.0.0.1<0>``, an
    NCCL_SOCKET_IFNAME=lo or a host with no other interface) while ranks could not reach their
    peers: no other node can reach 127.0.0.1, so the set-up is the cause, not the network. On
    one node alone lo is fine: without a failed connection it stays unsaid."""
    if st.socket_loopback is None or any(r["kind"] == "nccl_socket_interface" for r in st.nccl_words):
        return
    if not any(f["kind"] == "nccl_peer_connection_error" for f in findings):
        return
    line, host, pid = st.socket_loopback
    _rec(st, "nccl_socket_interface", line, host, pid, what="only the loopback interface", loopback=True)


def _socket_without_ib(st, findings):
    """'NET/IB : No device found' alone does not make sockets a fallback: a cloud VM without
    IB has nothing better. Without an IB/RoCE device, NCCL_IB_DISABLE or an IPoIB interface
    (which proves IB hardware), the socket finding is only information (in place)."""
    if st.net_plugin_failed:
        for f in findings:
            if f["kind"] == "nccl_socket_fallback":
                f["severity"] = "warning" if f["severity"] == "info" else f["severity"]
                f["message"] += " (The network plugin failed to start before it: '%s'; the fabric it serves was " \
                                "meant, so sockets are a fallback.)" % st.net_plugin_failed[1].strip()[-120:]
        return
    if _one_node(st):
        for f in findings:
            if f["kind"] == "nccl_socket_fallback" and f["severity"] != "info":
                f["severity"] = "info"
                f["message"] += " (Every rank of the job's ring (%d) is joined inside one node (P2P/SHM): the " \
                                "collectives never cross the network, so its transport does not matter here.)" \
                                % len(st.ring_ranks)
        return
    if st.ib_devices or st.roce_devices or st.ib_disabled or st.ipoib_seen or st.ib_unopened:
        return
    for f in findings:
        if f["kind"] == "nccl_socket_fallback" and f["severity"] != "info":
            f["severity"] = "info"
            f["message"] += " (No IB device and no IPoIB interface in the log: sockets may be this cluster's only " \
                            "network.)"


def _one_node(st):
    """The job runs on one node by NCCL's own lines: no channel goes over NET, and every hop of the
    ring (its last rank back to its first too) is a channel inside the node. A log cut before the
    network channels leaves a hop between nodes unjoined."""
    ring = st.ring_ranks
    if len(ring) < 2 or any(k.startswith(("NET", "COLLNET")) for k in st.via):
        return False
    return all(frozenset((a, b)) in st.local_pairs for a, b in zip(ring, ring[1:] + ring[:1]))


def setup_failed(st):
    """True when NCCL's own words say the job's setup is broken (not the network)."""
    return any(r["kind"] in SETUP_KINDS for r in st.nccl_words)


# a rank that logged why it died: its peers' lost connections are the consequence
DEATH_KINDS = ("cuda_oom", "cuda_error", "host_oom", "dataloader_worker_killed", "dataloader_shm_bus_error")


def died_of_own_error(st):
    """True when a rank's own error (out of memory, a CUDA error, the OOM killer) is in the log:
    the connections its peers lost when it exited say nothing about the network."""
    return any(e["kind"] in DEATH_KINDS for e in st.events)


def fill_process_ranks(st, records):
    """A record NCCL logged as host:pid gets the rank that process has: from a rank-prefixed
    line, else from its own communicator records (the largest communicator is the world's)."""
    best = {}
    for c in st.comm:
        if c.get("host") and c.get("pid") is not None:
            key = (c["host"], c["pid"])
            if key not in best or c["nranks"] > best[key][0]:
                best[key] = (c["nranks"], c["rank"])
    for r in records:
        if r.get("rank") is None and r.get("host") and r.get("pid") is not None:
            key = (r["host"], r["pid"])
            r["rank"] = st.pid_rank.get(key, best.get(key, (None, None))[1])


def settle_nvls(st):
    """CUDA refusing NVLS ('invalid argument') reads the same whether the node's fabric state is
    broken (Fabric Manager restarted without a GPU reset, NVIDIA/nccl#1488) or the job's
    environment cannot use multicast (a container without /dev/nvidia-caps): one named host
    among the job's is that node; several hosts, or none named, is the job's environment.
    Run once, when the job's lines are all read (analysis.analyse)."""
    recs = [r for r in st.nccl_words if r["kind"] == "nccl_nvls_unavailable"]
    hosts = set(r.get("host") for r in recs)
    if len(hosts) == 1 and None not in hosts:
        for r in recs:
            r["kind"], r["nvls"] = "nccl_fabric_manager", True


def host_side_hosts(st):
    """Hosts whose own node setup NCCL's words blame (Fabric Manager, memory registration)."""
    out = []
    for r in st.nccl_words:
        if r["kind"] in HOST_SIDE_KINDS and r.get("host") and r["host"] not in out:
            out.append(r["host"])
    return out
