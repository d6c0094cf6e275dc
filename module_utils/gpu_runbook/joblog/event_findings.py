# SPDX-License-Identifier: Apache-2.0
"""One finding per error event a line handler recorded (IB completion, refused peer, CUDA
error, OOM, DataLoader, NCCL error, Python exception). Kinds: taxonomy/kinds_job.py."""

from ..findings import finding, gpu_ref, ib_ref
from . import memtrend
from .culprits import HW_CUDA_WORDS, unroutable_at_bootstrap
from .patterns import DOCKER_BRIDGE_IP, LINK_LOCAL_IP
from .text import evidence
from ..vocab import code

_DATALOADER_WHAT = {
    "dataloader_worker_killed": "a DataLoader worker was killed by signal %s",
    "dataloader_worker_exited": "a DataLoader worker exited unexpectedly",
    "dataloader_timeout": "the DataLoader timed out waiting for a batch",
    "dataloader_shm_bus_error": "a DataLoader worker hit a bus error (shared memory /dev/shm too small)",
}


class _Ctx(object):
    """What every event finding shares: where it happened, the rank's GPU, its evidence."""

    def __init__(self, ev, rank_map):
        self.rank = ev.get("rank")
        ent = rank_map.get(self.rank, {}) or {}
        self.host = ev.get("host") or ent.get("host")
        self.where = ("rank %s" % self.rank if self.rank is not None else "a rank") + \
            (" on %s" % self.host if self.host else "")
        self.gpu = gpu_ref(ent["gpu_pci"], ent.get("local_rank")) if ent.get("gpu_pci") else None
        self.common = {"evidence": evidence(ev["evidence"]), "source": ev["src"], "rank": self.rank}


def finding_for_event(ev, st, phase, trend, rank_map):
    """The finding of one event, or None for an event that makes none."""
    k = ev["kind"]
    if k.startswith("dataloader"):
        return _dataloader(ev, _Ctx(ev, rank_map))
    build = _BUILDERS.get(k)
    if build is None:
        return None
    return build(ev, _Ctx(ev, rank_map), st, phase, trend)


def _ib_completion(ev, c, st, phase, trend):
    peer = ev.get("peer")
    peer_host = st.ip_host.get(peer) if peer else None
    said = "%s got IB work completion %s (%d, %s) %s%s%s" % (
        c.where, ev["status_name"], ev["status"], ev["status_text"],
        "from peer %s" % peer if peer else "from a peer the line does not name", " (%s)" % peer_host if peer_host else "",
        ", vendor err %s" % ev["vendor_err"] if ev.get("vendor_err") is not None else "")
    ib = ib_ref(ev["hca"], None) if ev.get("hca") else None
    # what the status means is rdma-core's table (vocab/rdma.py CODES): a broken path (retry
    # exceeded) is the network's; a protection error is GPUDirect's set-up, a flush a consequence
    row = code("rdma", ev["status"])
    if row is not None and row["category"] != "ib_network":
        return finding(row["kind"], "%s: %s" % (said, row["meaning"]), category=row["category"],
                       severity=row["severity"], name="libibverbs", gpu=c.gpu, ib=ib, **c.common)
    return finding(
        "ib_completion_error", "%s; the RDMA path between the two hosts is broken." % said,
        severity=row["severity"] if row is not None else "warning",  # a status rdma-core does not name
        gpu=c.gpu, ib=ib, **c.common)


def _peer_connection(ev, c, st, phase, trend):
    peer = ev.get("peer")
    peer_host = st.ip_host.get(peer) if peer else None
    # (NCCL's socket devices are its interfaces in the order its 'NET/Socket : Using' line lists them;
    # a channel 'via NET/Socket/1' uses the second: one with only a link-local address reaches no other node)
    local = [st.socket_link_local[k] for k in sorted(st.socket_via, key=str) if k in st.socket_link_local]
    if local and not (peer and not LINK_LOCAL_IP.match(peer)):
        return finding(
            "nccl_socket_interface",
            "%s: NCCL's socket connection%s failed (%s); its channels go via NET/Socket over %s, whose only address "
            "%s is IPv6 link-local (a container's veth or a bridge), which no other node can reach: set "
            "NCCL_SOCKET_IFNAME to the interface with a routable address" % (
                c.where, " to peer %s" % peer if peer else "", ev["what"], local[0][0], local[0][1]), **c.common)
    if peer and LINK_LOCAL_IP.match(peer):
        v4 = peer.startswith("169.254.")
        return finding(
            "nccl_socket_interface",
            "%s: NCCL's socket to peer %s failed (%s): an %s link-local address, which routes only within one "
            "link; NCCL's sockets (bootstrap, NET/Socket) use an interface with no routable address: set "
            "NCCL_SOCKET_IFNAME to an interface that has one%s" % (
                c.where, peer, ev["what"], "IPv4" if v4 else "IPv6", "" if v4 else ", or NCCL_SOCKET_FAMILY=AF_INET"),
            **c.common)
    if peer and DOCKER_BRIDGE_IP.match(peer):
        return finding(
            "nccl_socket_interface",
            "%s: NCCL's socket to peer %s failed (%s): the address of Docker's default bridge (docker0), the same on "
            "every host, which no other node is reached at: NCCL's sockets use docker0; set NCCL_SOCKET_IFNAME to "
            "the interface the nodes share (or exclude it: NCCL_SOCKET_IFNAME=^docker0,lo)" % (c.where, peer, ev["what"]),
            **c.common)
    if ev["what"].lower() == "connection closed by remote peer":
        # the peer ended the connection in order (misc/socket.cc: recv returned 0): its process exited or
        # was killed; a broken link resets or times out instead. Why the peer ended is in its own log.
        return finding(
            "nccl_peer_closed",
            "%s: peer %s%s closed its NCCL connection (%s): that rank's process ended (a crash, an OOM kill, a "
            "cancelled step); no network fault is shown here, and the peer's own log says why." % (
                c.where, peer or "?", " (%s)" % peer_host if peer_host else "", ev["what"]), **c.common)
    if phase != "late" and unroutable_at_bootstrap(st, ev):
        # bootstrap.cc (ranks meeting at init) could not route to a peer: no link failed mid-run; the
        # interface NCCL chose reaches no peer, or a firewall rejects it (icmp-host-prohibited reads alike)
        return finding(
            "nccl_bootstrap_unreachable",
            "%s: NCCL's bootstrap could not reach peer %s%s (%s) while the ranks met at start-up: the interface "
            "its sockets use has no route to that node, or a firewall between the nodes rejects the connection" % (
                c.where, peer or "?", " (%s)" % peer_host if peer_host else "", ev["what"]), **c.common)
    return finding(
        "nccl_peer_connection_error",
        "%s: NCCL connection to peer %s%s failed (%s); that node's network is broken or its "
        "process is gone." % (c.where, peer or "?", " (%s)" % peer_host if peer_host else "", ev["what"]),
        **c.common)


def _cuda_error(ev, c, st, phase, trend):
    what = ev["what"]
    if what == "unknown error":
        return finding("cuda_unknown_error",
                       "%s hit CUDA error 'unknown error' (999): the driver lost the GPU's state; not by itself a "
                       "hardware verdict -- the host's kernel log (Xid) says whether the GPU or the driver failed."
                       % c.where, gpu=c.gpu, **c.common)
    if any(w in what for w in HW_CUDA_WORDS):
        return finding("cuda_hardware_error", "%s hit CUDA error '%s': a GPU hardware fault." % (c.where, what),
                       gpu=c.gpu, **c.common)
    if what == "unspecified launch failure" and phase == "late":
        return finding(
            "cuda_launch_failure",
            "%s hit '%s' after a long healthy run: likely a GPU fault (check Xid 13/31/43/79)." % (c.where, what),
            gpu=c.gpu, **c.common)
    return finding(
        "cuda_error",
        "%s hit CUDA error '%s' (usually a kernel/application bug; Xid 13/31 in the kernel log "
        "confirms where)." % (c.where, what),
        gpu=c.gpu, **c.common)


def _leak_or_application(phase, trend, st):
    """(category, what chose it) of an OOM: late in the run, while the rate falls, or after memory
    the run reported kept growing (memtrend.py), memory that grows: a leak; early, the code's
    (a batch too large). With none of these the category is a default, and says so."""
    if trend == "falling":
        return "memory_leak", "falling"
    if phase == "late":
        return "memory_leak", "late"
    if memtrend.growth(st):
        return "memory_leak", "growth"
    return "application", "early" if phase == "early" else "default"


def _cuda_oom(ev, c, st, phase, trend):
    cat, basis = _leak_or_application(phase, trend, st)
    return finding(
        "cuda_oom",
        "%s ran out of GPU memory%s%s." % (c.where, " allocating %s" % ev["alloc"] if ev.get("alloc") else "",
                                           " late in the run (memory grows over time)" if cat == "memory_leak"
                                           else ""),
        category=cat, gpu=c.gpu, inferred=basis, **c.common)


def _host_oom(ev, c, st, phase, trend):
    cat, basis = _leak_or_application(phase, trend, st)
    return finding("host_oom", "The kernel/Slurm OOM killer killed a training process (%s)." % c.where,
                   category=cat, inferred=basis, **c.common)


def _dataloader(ev, c):
    what = _DATALOADER_WHAT[ev["kind"]]
    if ev["kind"] == "dataloader_worker_killed":
        what = what % ev.get("signal", "?")
    return finding(ev["kind"], "On %s %s; the rank stopped feeding its collectives." % (c.where, what), **c.common)


def _nccl_error(ev, c, st, phase, trend):
    what = ev["what"]
    # ncclResult_t's own words decide (vocab/nccl.py CODES): 'remote process exited or there was a network
    # error' (ncclRemoteError) names two causes and establishes neither; the WARN lines, the peer's log or
    # the hosts' evidence tell which
    return finding("nccl_error", "%s: NCCL call failed with '%s'." % (c.where, what), category="unknown", **c.common)


def _python_exception(ev, c, st, phase, trend):
    return finding(
        "python_exception",
        "%s raised %s%s." % (c.where, ev["exc"], (": " + ev["msg"][:200]) if ev["msg"] else ""),
        **c.common)


def _driver_old(ev, c, st, phase, trend):
    return finding(
        "cuda_driver_too_old",
        "%s: '%s': the NVIDIA driver does not support the CUDA runtime the job was built with (a driver/"
        "software mismatch, not a GPU fault)." % (c.where, ev["what"]), **c.common)


def _collective_mismatch(ev, c, st, phase, trend):
    ranks = ev.get("ranks") or []
    seqs = ev.get("seqs") or []
    if ev.get("apart"):
        return finding(
            "collective_mismatch",
            "Ranks %s timed out at different SeqNums of one process group (%s): a collective completes on every "
            "rank or on none, so their calls do not line up (one rank issued more collectives than another), an "
            "application bug." % (" and ".join(str(r) for r in ranks), " vs ".join(str(x) for x in seqs)),
            **c.common)
    if ev.get("ops") and not seqs:
        return finding(
            "collective_mismatch",
            "The ranks' watchdogs timed out in different operations: %s (one process group, no SeqNum printed): "
            "the ranks called different collectives, an application bug (e.g. ranks that ran different numbers "
            "of batches)." % "; ".join(ev["ops"]), **c.common)
    if ev.get("ops"):
        return finding(
            "collective_mismatch",
            "Ranks %s timed out in the same collective (SeqNum %s) in different operations (%s): the ranks called "
            "different collectives, an application bug." % (
                " and ".join(str(r) for r in ranks), seqs[0] if seqs else "?", " vs ".join(ev["ops"])),
            **c.common)
    return finding(
        "collective_mismatch",
        "Ranks %s are running different collectives%s: the application issues mismatched collectives "
        "(TORCH_DISTRIBUTED_DEBUG fingerprint check)." % (
            " and ".join(str(r) for r in ranks) or "?",
            " (sequence numbers %s)" % " vs ".join(str(x) for x in seqs) if len(set(seqs)) > 1 else ""),
        **c.common)


def _ompi_transport(ev, c, st, phase, trend):
    return finding("ompi_transport_error", "%s: Open MPI's %s transport (BTL) reported an error%s: %s" % (
        c.where, ev["btl"], " with peer %s" % ev["peer"] if ev.get("peer") else "", ev["what"]), name=ev["btl"],
        **c.common)


_BUILDERS = {
    "ompi_transport_error": _ompi_transport,
    "cuda_driver_old": _driver_old,
    "collective_mismatch": _collective_mismatch,
    "ib_completion_error": _ib_completion,
    "nccl_peer_connection": _peer_connection,
    "cuda_error": _cuda_error,
    "cuda_oom": _cuda_oom,
    "host_oom": _host_oom,
    "nccl_error": _nccl_error,
    "python_exception": _python_exception,
}
