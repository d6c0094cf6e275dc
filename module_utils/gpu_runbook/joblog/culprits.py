# SPDX-License-Identifier: Apache-2.0
"""Who the job waited for: the collective it hung in, the culprit ranks (strongest evidence
first) and, from the network errors, the suspect hosts.

Culprit evidence, strongest first: Flight Recorder (missing / never-entered ranks), the
desync report, a rank whose GPU reports a hardware fault (ECC, NVLink, off the bus), the ranks that did not time out on the collective everybody else waits in,
the lowest ``last completed NCCL work``, then the rank that logged a CUDA / IB / OOM /
DataLoader error first. An IB peer named by several reporters is the suspect host."""

from collections import Counter

from .launch_lines import ras_culprits
from .patterns import DOCKER_BRIDGE_IP, LINK_LOCAL_IP, LOOPBACK_IP
from .nccl_words import (DEATH_KINDS, SETUP_KINDS, async_port_hosts, died_of_own_error, host_side_hosts,
                         mismatch_ranks, setup_failed)

_FIRST_ERROR_KINDS = (("cuda_error",), ("ib_completion_error",), ("ompi_transport_error",), ("cuda_oom", "host_oom"),
                      ("dataloader_worker_killed", "dataloader_worker_exited", "dataloader_timeout",
                       "dataloader_shm_bus_error"))
NET_EVENT_KINDS = ("ib_completion_error", "nccl_peer_connection")
# how culprit ranks were found from NCCL's setup words: they name no host to drain
SETUP_EVIDENCE = ("nccl_setup_ranks", "nccl_setup_failed")


def collective(st):
    """The collective the job hung in: most reported (op, seq) among the watchdog timeouts.
    Returns (collective, ranks at it, ranks behind it, per-rank earliest timeout)."""
    per_rank_min = {}
    for t in st.timeouts:
        r = t["rank"]
        if r is None:
            continue
        key = (t["seq"] if t["seq"] is not None else -1)
        if r not in per_rank_min or key < per_rank_min[r][0]:
            per_rank_min[r] = (key, t)
    counts = Counter((v[1]["seq"], v[1]["op"]) for v in per_rank_min.values())
    if not counts and st.timeouts:
        counts = Counter((t["seq"], t["op"]) for t in st.timeouts)
    if not counts:
        return None, [], [], {}
    (seq, op), _n = max(counts.items(), key=lambda kv: (kv[1], kv[0][0] is not None, -(kv[0][0] or 0)))
    at_target = sorted(r for r, v in per_rank_min.items() if v[1]["seq"] == seq)
    behind = sorted(r for r, v in per_rank_min.items()
                    if seq is not None and v[1]["seq"] is not None and v[1]["seq"] < seq)
    return {"op": op, "seq": seq}, at_target, behind, per_rank_min


def culprits(st, world, coll, timed_out, behind):
    """Returns (ranks, how): the first source of evidence that names someone wins."""
    for finder in (_flight_recorder, _desync_report, _monitored_barrier, _ras_report, _nccl_mismatch, _nccl_named_ranks, _pyspy):
        found = finder(st, world)
        if found:
            return found
    found = _gpu_fault(st) or _died(st, timed_out) or _odd_rank_out(st) or \
        _silent_ranks(st, world, coll, timed_out, behind)
    if found:
        return found
    return _last_completed(st) or _first_error(st) or _setup_failed_rank(st) or _srun_first_exit(st) or ([], None)


def _died(st, timed_out):
    """Ranks whose process ran out of memory (the OOM killer's kill, CUDA's out of memory) and that did not
    time out themselves: the others waited for a rank that was gone, whatever their SeqNums say (with
    several process groups they differ by group)."""
    ranks = sorted(set(ev["rank"] for ev in st.events if ev["kind"] in ("host_oom", "cuda_oom")
                       and ev.get("rank") is not None and ev["rank"] not in timed_out))
    return (ranks, "rank_died") if ranks and timed_out else None


def _srun_first_exit(st):
    """srun's account of a step that one task brought down: the first task that exited with a
    non-zero code (srun's --kill-on-bad-exit, or the launcher) before srun killed the others
    ('task 5: Exited with exit code 1', then 'tasks 0-4,6-15: Killed'): that task's own output says why."""
    exits = st.srun_exits
    for i, rec in enumerate(exits):
        if rec["code"] and len(rec["tasks"]) == 1:
            later = exits[i + 1:]
            if any(r["code"] is None and "Killed" in r["how"] for r in later):
                return list(rec["tasks"]), "srun_first_exit"
            return None
    return None


HW_CUDA_WORDS = ("ECC", "NVLink", "fallen off the bus")


def _nccl_named_ranks(st, world):
    """NCCL's setup words that name the ranks at fault ('Duplicate GPU detected : rank 3 and
    rank 2 both on CUDA device ...': the two ranks bound to one GPU)."""
    ranks = sorted(set(r for rec in st.nccl_words if rec["kind"] in SETUP_KINDS for r in rec.get("ranks") or ()))
    return (ranks, "nccl_setup_ranks") if ranks else None


def _setup_failed_rank(st):
    """The rank whose own NCCL setup failed (no socket interface, /dev/shm ...), when nothing
    stronger names one: the rank the job stopped at."""
    for rec in st.nccl_words:
        if rec["kind"] in SETUP_KINDS and rec.get("rank") is not None:
            return [rec["rank"]], "nccl_setup_failed"
    return None


def _pyspy(st, world):
    """py-spy dumps: most processes wait in a collective, the few elsewhere are the suspects."""
    from .pyspy import culprit_ranks
    ranks = culprit_ranks(st)
    return (ranks, "pyspy_dump") if ranks else None


def _ras_report(st, world):
    """NCCL RAS: dead / missing ranks, MISMATCH stragglers."""
    ranks, _hosts = ras_culprits(st)
    return (ranks, "nccl_ras") if ranks else None


def _nccl_mismatch(st, world):
    """NCCL's 'Mismatched collective detected ... at and around rank N'."""
    ranks = mismatch_ranks(st)
    return (ranks, "nccl_mismatch") if ranks else None


def _gpu_fault(st):
    """A rank whose own CUDA calls (or watchdog) report a GPU hardware fault (uncorrectable
    ECC, NVLink, fallen off the bus): that rank's GPU is the culprit, whoever timed out."""
    ranks = []
    for ev in st.events:
        if ev["kind"] == "cuda_error" and ev.get("rank") is not None and ev["rank"] not in ranks \
                and any(w in ev.get("what", "") for w in HW_CUDA_WORDS):
            ranks.append(ev["rank"])
    return (sorted(ranks), "cuda_hardware_error") if ranks else None


def _flight_recorder(st, world):
    if st.fr_missing:
        ranks = sorted(set(r for item in st.fr_missing for r in item[0]))
        if ranks:
            return ranks, "flight_recorder"
    if st.fr_entries and len(st.fr_entries) >= 2:
        max_seq = {r: max(e) for r, e in st.fr_entries.items() if e}
        target = max(max_seq.values())
        never = sorted(r for r, s in max_seq.items() if s < target)
        if never and len(never) < len(max_seq):
            return never, "flight_recorder"
        sched = sorted(r for r, e in st.fr_entries.items() if e.get(target, ("",))[0] == "scheduled")
        started = [r for r, e in st.fr_entries.items() if e.get(target, ("",))[0] == "started"]
        if sched and started:
            return sched, "flight_recorder"
    return None


def _desync_report(st, world):
    if st.desync_missing:
        ranks = sorted(set(r for item in st.desync_missing for r in item[0]))
        if ranks:
            return ranks, "desync_report"
    if st.desync_lagging:
        ranks = set(r for item in st.desync_lagging for r in item[0])
        # the report names ranks other than the one that wrote it (rank 0 tells of rank 7): without
        # the world's size, the ranks the log shows and those it names are all there is to go on
        everyone = set(range(world)) if world else set(st.ranks_seen) | ranks
        if ranks and (not everyone or ranks < everyone or len(ranks) < len(everyone)):
            return sorted(ranks), "desync_report"
    return None


def _monitored_barrier(st, world):
    """monitored_barrier's ranks that never reached it (rank 0 names them), or those Horovod's stall
    inspector names as never submitting what the others wait for (horovod.py)."""
    ranks = sorted(set(r for item in st.barrier_missing for r in item[0]))
    return (ranks, "horovod_stall_inspector" if st.stall_reported else "monitored_barrier") if ranks else None


def _odd_rank_out(st):
    """Ranks of one process group that timed out at different SeqNums (analysis.mismatched_timeouts,
    'apart'): when one rank stands at a SeqNum of its own and every other rank shares another one,
    that rank is the one whose calls went their own way (rank 0 two collectives past the BROADCAST
    ranks 1 and 2 still wait in)."""
    ev = next((e for e in st.events if e["kind"] == "collective_mismatch" and (e.get("apart") or e.get("odd"))),
              None)
    if ev is None:
        return None
    if ev.get("odd"):  # one rank alone in a call of its own (analysis: _odd_call, _unnumbered_ops_differ)
        return list(ev["odd"]), "mismatch_odd_rank"
    at = {}
    for t in st.timeouts:  # each rank's first timed-out collective (mismatched_timeouts saw one group)
        if t.get("seq") is not None and t.get("rank") is not None and (t["rank"] not in at or t["seq"] < at[t["rank"]]):
            at[t["rank"]] = t["seq"]
    groups = {}
    for rank, seq in at.items():
        groups.setdefault(seq, []).append(rank)
    odd = lone_rank(groups)
    return (odd, "mismatch_odd_rank") if odd else None


def lone_rank(groups):
    """[the rank] when ``groups`` (what the ranks did -> their ranks) holds two groups, one of a single rank
    and one of two or more: that rank went its own way; else []."""
    if len(groups) != 2:
        return []
    small, big = sorted(groups.values(), key=len)
    return list(small) if len(small) == 1 and len(big) >= 2 else []


def _silent_ranks(st, world, coll, timed_out, behind):
    """The ranks that did not time out on the collective everyone else waits in."""
    if not timed_out:
        return None
    known = set(range(world)) if world else set(st.ranks_seen) | set(st.rank_host) | set(st.rank_host_weak)
    ahead = set()
    if coll and coll.get("seq") is not None:
        for t in st.timeouts:
            if t["rank"] is not None and t["seq"] is not None and t["seq"] > coll["seq"] \
                    and t["rank"] not in timed_out:
                ahead.add(t["rank"])
    missing = known - set(timed_out) - ahead
    cand = missing | set(behind)
    # a rank we have log lines from (its own file, its prefix) and that stayed silent beats a rank
    # whose log we simply do not have
    seen = cand & st.ranks_seen
    if seen and len(seen) < len(cand):
        cand = seen
    cand = sorted(cand)
    if cand and len(timed_out) >= max(1, len(known) // 2) and len(cand) <= len(timed_out):
        return cand, "watchdog_missing_rank"
    return None


def _last_completed(st):
    if len(st.last_work) >= 2:
        comp = {r: v[2] for r, v in st.last_work.items()}
        lo = min(comp.values())
        ranks = sorted(r for r, c in comp.items() if c == lo)
        if lo < max(comp.values()) and len(ranks) < len(comp):
            return ranks, "last_completed_work"
    return None


def _first_error(st):
    """A rank that logged a hardware / network / crash error first, else a stuck watchdog."""
    for kinds in _FIRST_ERROR_KINDS:
        for ev in st.events:
            if ev["kind"] in kinds and ev.get("rank") is not None:
                return [ev["rank"]], "first_error"
    for s in st.stuck:
        if s["rank"] is not None:
            return [s["rank"]], "watchdog_stuck"

    return None


# ibv_wc_status values whose fault is on the reporting side by their definition (verbs.h:
# LOC_LEN_ERR 1, LOC_QP_OP_ERR 2, LOC_EEC_OP_ERR 3, LOC_PROT_ERR 4, MW_BIND_ERR 6, LOC_ACCESS_ERR 8):
# the HCA could not use its own buffer or queue; the peer it names did nothing wrong
LOCAL_WC_STATUS = (1, 2, 3, 4, 6, 8)


# the socket errors of a connection routing refused (EHOSTUNREACH, ENETUNREACH): nothing answered
UNROUTABLE = ("No route to host", "Network is unreachable")


def unroutable_at_bootstrap(st, ev):
    """A peer connection routing refused while NCCL's bootstrap (bootstrap.cc, in the process's error
    trail) brought the ranks together: the interface or a firewall, not a peer that failed."""
    return ev["kind"] == "nccl_peer_connection" and ev.get("what") in UNROUTABLE and \
        (ev.get("host"), ev.get("pid")) in st.bootstrap_trails


def _local_fault(ev):
    return ev["kind"] == "ib_completion_error" and ev.get("status") in LOCAL_WC_STATUS


def ib_peer_reporters(st):
    """peer address -> the hosts (or ranks) whose network errors name it (not a completion
    whose status puts the fault on the reporter's own side)."""
    reporters = {}
    for ev in st.events:
        if ev["kind"] in NET_EVENT_KINDS and ev.get("peer") and not _local_fault(ev):
            reporters.setdefault(ev["peer"], set()).add(ev.get("host") or ev.get("rank"))
    return reporters


def network_suspects(st, rank_map, ranks, how, culprit_hosts, reporters):
    """Refine (ranks, how, hosts) with the network errors: a host whose own HCA reported a
    failing port (NCCL's 'Got async event : port error') is the suspect; an IB peer several
    hosts complain about is the suspect, not the first reporter; a refused/closed peer is
    itself the suspect; otherwise both ends of a broken link are. When NCCL's own words say
    the setup is broken (no interface, duplicate GPU, /dev/shm ...), or a culprit rank logged
    why it died (out of memory, a CUDA error), lost connections are its consequence and name
    nobody."""
    if setup_failed(st):
        return ranks, how, list(culprit_hosts) + [h for h in host_side_hosts(st) if h not in culprit_hosts]
    if died_of_own_error(st):
        # the rank that died is the culprit, not its peers' network: its host, when the log says
        dead = [e.get("host") for e in st.events if e["kind"] in DEATH_KINDS and e.get("host")]
        return ranks, how, list(culprit_hosts) + [h for h in dict.fromkeys(dead) if h not in culprit_hosts]
    port_hosts = [h for h in async_port_hosts(st) if h not in culprit_hosts]
    if port_hosts and how in (None, "first_error"):
        culprit_hosts = list(culprit_hosts) + port_hosts
    net_events = [e for e in st.events if e["kind"] in NET_EVENT_KINDS]
    shared_peers = [p for p, rep in reporters.items() if len(rep) > 1]
    if shared_peers and how in (None, "first_error") and not port_hosts:
        culprit_hosts, ranks = [], []
        for p in shared_peers:
            h = peer_host(st, p)
            if not h:
                continue  # a loopback address: no host
            if h not in culprit_hosts:
                culprit_hosts.append(h)
            ranks.extend(r for r, ent in rank_map.items() if ent.get("host") == h)
        ranks, how = sorted(set(ranks)), "ib_peer"
    if net_events and not culprit_hosts:
        for e in net_events:
            peer = e.get("peer")
            if peer and e["kind"] == "nccl_peer_connection" and (LINK_LOCAL_IP.match(peer) or DOCKER_BRIDGE_IP.match(peer)
                                                                 or unroutable_at_bootstrap(st, e)):
                continue  # the sockets' interface is the cause (event_findings.py), not the peer's host
            peer_name = peer_host(st, peer) if peer else None
            if e["kind"] == "nccl_peer_connection" or (peer and len(reporters.get(peer, ())) > 1):
                cands = [peer_name]
            elif _local_fault(e):
                cands = [e.get("host")]
            else:
                cands = [e.get("host"), peer_name]
            for h in cands:
                if h and h not in culprit_hosts:
                    culprit_hosts.append(h)
        if not ranks:
            rs = []
            for e in net_events:
                if e["kind"] == "ib_completion_error" and e.get("rank") is not None and e["rank"] not in rs:
                    rs.append(e["rank"])
            if rs:
                ranks, how = sorted(rs), how or "first_error"
    return ranks, how, culprit_hosts


def peer_host(st, peer):
    """The host behind a peer address as the log itself names it: the address a host's NCCL
    Bootstrap / NET/IB OOB / NET/Socket line (or a reverse-DNS line) gave, an IPv6 scope
    (``%ib0``) dropped, a fully qualified name shortened when its short name is a host of the
    job; else the address as printed. A loopback address is no host (each process's own)."""
    if not peer:
        return peer
    p = peer.split("%")[0].strip("[]")
    if LOOPBACK_IP.match(p):
        return None
    if p in st.ip_host:
        return st.ip_host[p]
    if peer in st.ip_host:
        return st.ip_host[peer]
    if "." in p and not p.replace(".", "").isdigit():
        short = p.split(".")[0]
        known = set(st.ip_host.values()) | set(st.rank_host.values()) | set(st.rank_host_weak.values()) | \
            set(c["host"] for c in st.comm if c.get("host")) | set(e["host"] for e in st.events if e.get("host"))
        if short in known:
            return short
    return peer
