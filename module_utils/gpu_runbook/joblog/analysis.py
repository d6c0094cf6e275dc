# SPDX-License-Identifier: Apache-2.0
"""The whole-job analysis: world size and rank map, the collective and its culprits, the
iteration rate and its trend, where the run failed and in which phase, the transport NCCL
used, the incident timeline. ``analyse(st)`` turns the job state into (job, findings)."""

from collections import Counter, OrderedDict
from datetime import timedelta

from . import culprits as C
from . import emitter_lines
from . import nccl_tests
from . import pyspy
from .launch_lines import ras_culprits
from .nccl_words import DEATH_KINDS, HOST_SIDE_KINDS, fill_process_ranks, settle_nvls
from .job_findings import job_findings
from .patterns import RANK_PREFIX
from .progress import observations
from .text import add, line_time, median

_NCCL_ERROR_KEYS = ("kind", "rank", "host", "peer", "status", "status_name", "status_text", "vendor_err", "hca",
                    "direction", "what", "src")

_END_ORDER = ("said", "step_count", "exit")  # how strongly a success entry says the run ended well


def empty_job():
    return {"timed_out_ranks": [], "culprit_ranks": [], "culprit_hosts": [], "collective": None,
            "failed_at": None, "rank_map": {}, "world_size": None,
            "iteration_rate": {"by_epoch": {}, "trend": "unknown"}, "phase": "unknown", "events": [], "log_start": None,
            "culprit_evidence": None,
            "nccl": {"transport": "unknown", "ib_devices": [], "errors": []}}


# collectives whose input has one size on every rank (a difference is two different calls)
_SAME_SIZE_OPS = ("ALLREDUCE", "BROADCAST", "REDUCE")


def mismatched_timeouts(st):
    """Watchdog timeouts of one process group at one SeqNum whose operations differ (rank 7 waits in
    a BROADCAST, rank 3 in an ALLREDUCE, both collective #80078), or whose sizes differ where every
    rank gives the same size (an ALLREDUCE of 4311252 elements on rank 0, of 1 on rank 1): the ranks
    called different collectives, which PyTorch's own check (TORCH_DISTRIBUTED_DEBUG=DETAIL) would
    have named."""
    if any(e["kind"] == "collective_mismatch" for e in st.events):
        return
    named = set(t["pg"] for t in st.timeouts if t.get("pg") is not None)
    if len(named) == 1:
        # a rank whose lines name no group beside ranks whose lines all name one: nothing says it is another
        (only,) = named
        for t in st.timeouts:
            if t.get("pg") is None:
                t["pg"] = only
    by = {}
    for t in st.timeouts:
        if t.get("seq") is not None and t.get("op") and t.get("rank") is not None:
            by.setdefault((t.get("pg"), t["seq"]), {}).setdefault(_call(t), t)
    one_group = _one_group_on_every_rank(st)
    for (pg, seq), calls in sorted(by.items(), key=lambda kv: kv[0][1]):
        if len(calls) > 1 and one_group(pg):
            first = [calls[c] for c in sorted(calls, key=str)]
            ops = ["%s%s" % (c[0], " of %d" % c[1] if c[1] is not None and len(set(x[0] for x in calls)) == 1 else "")
                   for c in sorted(calls, key=str)]
            add(st.events, {"kind": "collective_mismatch", "rank": None, "ranks": [t["rank"] for t in first],
                            "seqs": [seq], "ops": ops, "odd": _odd_call(st, pg, seq), "src": first[0]["src"],
                            "evidence": first[0]["evidence"]})
            return
    if _unnumbered_ops_differ(st, named):
        return
    # one process group, each rank's first timed-out collective at another SeqNum: a collective completes on
    # every rank or on none, so rank 1 past #7559 while rank 0 still waits in it means their calls do not
    # line up (one issued more collectives than the other)
    first_seq = {}
    for t in st.timeouts:
        if t.get("seq") is not None and t.get("rank") is not None:
            key = (t.get("pg"), t["rank"])
            if key not in first_seq or t["seq"] < first_seq[key]["seq"]:
                first_seq[key] = t
    per_pg = {}
    for (pg, _rank), t in first_seq.items():
        per_pg.setdefault(pg, {}).setdefault(t["seq"], t)
    for pg, seqs in per_pg.items():
        if not one_group(pg):
            continue
        if len(seqs) > 1:
            first = [seqs[s] for s in sorted(seqs)]
            add(st.events, {"kind": "collective_mismatch", "rank": None, "ranks": [t["rank"] for t in first],
                            "seqs": sorted(seqs), "apart": True, "src": first[0]["src"],
                            "evidence": first[0]["evidence"]})
            return


def _odd_call(st, pg, seq):
    """[rank] when, at one SeqNum of one group, one rank alone called what two or more others called
    otherwise (an ALLREDUCE of 4096 elements beside ranks 2 and 4's of 16666624): that rank's call is
    the odd one; else []."""
    by_call = {}
    for t in st.timeouts:
        if t.get("pg") == pg and t.get("seq") == seq and t.get("op") and t.get("rank") is not None:
            ranks = by_call.setdefault(_call(t), [])
            if t["rank"] not in ranks:
                ranks.append(t["rank"])
    return C.lone_rank(by_call)


def _call(t):
    """What a timed-out work called: its operation, and its size where every rank gives the same one."""
    return t["op"], t.get("numel_in") if t["op"] in _SAME_SIZE_OPS else None


def _unnumbered_ops_differ(st, named):
    """Older PyTorch releases print no SeqNum ('[Rank 1] Watchdog caught collective operation timeout:
    WorkNCCL(OpType=BROADCAST, Timeout(ms)=1800000) ran for 1801140 milliseconds'); its watchdog (one per
    process group) reports the work it timed out in. One such line per rank, no group named, one timeout
    setting, and the ranks' operations differ: they wait in different collectives, so their calls do not
    line up. A lone rank in an operation of its own beside two or more in another is the odd one."""
    if named or not st.timeouts or any(t.get("seq") is not None for t in st.timeouts):
        return False
    per_rank = {}
    for t in st.timeouts:
        if t.get("rank") is None or not t.get("op"):
            return False
        per_rank.setdefault(t["rank"], []).append(t)
    if len(per_rank) < 2 or any(len(v) != 1 for v in per_rank.values()) or \
            len(set(v[0].get("timeout_ms") for v in per_rank.values())) != 1:
        return False
    by_op = {}
    for rank in sorted(per_rank):
        by_op.setdefault(per_rank[rank][0]["op"], []).append(rank)
    if len(by_op) < 2:
        return False
    odd = C.lone_rank(by_op)
    first = [per_rank[r[0]][0] for _op, r in sorted(by_op.items())]
    add(st.events, {"kind": "collective_mismatch", "rank": None, "ranks": [t["rank"] for t in first], "seqs": [],
                    "ops": ["%s (rank%s %s)" % (op, "s" if len(r) > 1 else "", ", ".join(map(str, r)))
                            for op, r in sorted(by_op.items())],
                    "odd": odd, "src": first[0]["src"], "evidence": first[0]["evidence"]})
    return True


def _one_group_on_every_rank(st):
    """-> pg -> whether the timeouts under that process-group label are one group on every rank. Lines
    that name no group, where one rank timed out at two SeqNums, hold several groups (a tensor-parallel
    group's #3119 beside the data-parallel group's #3054764); where several groups are named, a group's
    number is its place in each rank's own creation order (PG 5 is rank 2's tensor-parallel group and
    rank 6's another): only the default group, PG 0, which every rank is in, is one group everywhere."""
    seqs = {}
    for t in st.timeouts:
        if t.get("pg") is None and t.get("seq") is not None and t.get("rank") is not None:
            seqs.setdefault(t["rank"], set()).add(t["seq"])
    several = any(len(v) > 1 for v in seqs.values())
    named = set(t.get("pg") for t in st.timeouts if t.get("pg") is not None)
    return lambda pg: not ((pg is None and several) or (pg is not None and pg != "0" and len(named) > 1))


def analyse(st):
    observations(st)
    mismatched_timeouts(st)
    nccl_tests.said_its_end(st)
    world, rank_map = world_and_map(st)
    settle_nvls(st)
    fill_process_ranks(st, st.events)
    fill_process_ranks(st, st.nccl_words)
    for ev in st.events:
        if ev.get("host") is None and ev.get("rank") is not None and ev["rank"] in rank_map:
            ev["host"] = rank_map[ev["rank"]]["host"]

    coll, at_target, behind, _per_rank = C.collective(st)
    if coll is None and st.desync_timeout:
        c = Counter((op, seq) for _r, op, seq, _s in st.desync_timeout).most_common(1)[0][0]
        coll = {"op": c[0], "seq": c[1]}
    timed_out = sorted(set(t["rank"] for t in st.timeouts if t["rank"] is not None))
    if not timed_out and st.desync_timeout:
        timed_out = sorted(set(r for r, _o, _s, _src in st.desync_timeout))
    stall_waited = False
    if st.barrier_missing:
        # the ranks that waited at a monitored_barrier (or in the collective Horovod's stall inspector
        # names) for those that never came
        missing = set(r for i in st.barrier_missing for r in i[0])
        timed_out = sorted(set(timed_out) | (st.barrier_waited - missing))
        # a stall report exists only while some ranks submitted and wait: which, it may not name
        stall_waited = st.stall_reported and not timed_out
        if coll is None or not coll.get("op"):
            coll = {"op": "a collective Horovod's stall inspector names" if st.stall_reported else "monitored_barrier",
                    "seq": None}
    if coll and coll.get("seq") is not None:
        # 'Exception (either an error or timeout) detected by watchdog at work: N': that rank's
        # watchdog fired on the same collective, whether or not its own timeout line is here
        fired = set(r for r, v in st.last_work.items() if v[0] == coll["seq"])
        timed_out = sorted(set(timed_out) | fired)
        at_target = sorted(set(at_target) | fired)

    ranks, how = C.culprits(st, world, coll, set(at_target) or set(timed_out), behind)
    rates, trend = iteration(st)
    failed_at, run_frac, last_prog = where_failed(st)

    hosts = []
    # ranks a setup error names (duplicate GPU, no socket interface) are the job's config: no host to drain
    for r in ranks if how not in C.SETUP_EVIDENCE else ():
        h = (rank_map.get(r) or {}).get("host")
        if h and h not in hosts:
            hosts.append(h)
    ranks, how, hosts = C.network_suspects(st, rank_map, ranks, how, hosts, C.ib_peer_reporters(st))
    hosts = _more_hosts(st, hosts)

    nccl_errors = [{k: ev.get(k) for k in _NCCL_ERROR_KEYS} for ev in st.events
                   if ev["kind"] in ("ib_completion_error", "nccl_peer_connection", "nccl_error")]
    job = {
        "timed_out_ranks": timed_out,
        "stall_waited": stall_waited,  # ranks waited that no line names (Horovod's stall report)
        "culprit_ranks": sorted(ranks),
        "culprit_hosts": hosts,
        "culprit_evidence": how,
        "collective": coll,
        "failed_at": failed_at,
        "rank_map": dict(rank_map),
        "world_size": world,
        "iteration_rate": {"by_epoch": dict(rates), "trend": trend},
        "phase": phase(failed_at, run_frac, coll),
        "events": timeline(st),
        "log_start": st.first_time.isoformat() if st.first_time is not None else None,
        "nccl_tests": nccl_tests.summary(st),
        "nccl": {"transport": transport(st), "ib_devices": list(st.ib_devices), "roce_devices": list(st.roce_devices),
                 "oob_interface": st.oob, "version": st.nccl_version, "errors": nccl_errors[:64]},
        # the run ended well, as its trainer or launcher says (emitter_lines.SUCCESS); a word said first, then a
        # step count at its total, then processes that reached their exit (EXITS: 32 ranks' come before one end said)
        "success": [{"who": s["who"], "src": s["src"], "end": s.get("end", "said")} for s in sorted(
            st.success, key=lambda s: _END_ORDER.index(s.get("end", "said")))[:8]]
        + ([{"who": "sacct (COMPLETED)", "src": st.sacct[0]["src"], "end": "said"}] if emitter_lines.sacct_findings(st)[2] else []),
        # a training run's own lines were seen (progress bars, epochs): its end must be said
        "training": bool(st.progress or st.hf_epoch is not None or st.training_lines),
        # py-spy's dumps: how many processes wait in a collective, how many are elsewhere (culprits)
        "pyspy": pyspy.summary(st),
        # the Slurm job its own lines name (slurmstepd's '*** STEP 4242.0 ON ...' banner, sacct's rows)
        "logged_job_id": emitter_lines.logged_job_id(st),
    }
    return job, job_findings(st, job, last_prog)


# the node's own stack, whose failure a command pasted from that node's shell shows ('systemctl restart
# nvidia-fabricmanager' failing; nvidia-container-cli; NVML): the vocabularies of the node's daemons
NODE_STACK_TABLES = ("fabricmanager", "nvml", "container", "dcgm", "dcgmlog", "nhc", "k8sdp", "opensm")


def _more_hosts(st, hosts):
    """Hosts named without a rank: RAS's dead/missing processes, the one host of an nccl-tests
    run that returned wrong data."""
    extra = list(ras_culprits(st)[1])
    # a node Slurm says failed under the job ('srun: error: Node failure on NODE'; sacct's NODE_FAIL
    # names the job's nodes, not which one failed)
    extra += [r["node"] for r in st.slurm if r["kind"] == "node_failure"]
    # a node ssh could not reach (a launcher's, or a pasted loop's)
    extra += [r["node"] for r in st.launch if r["kind"] == "ssh_unreachable"]
    # torchrun's root cause killed by SIGKILL: its host is the one to read (OOM killer); not a rank
    # the others waited for, so not a culprit rank
    for r in st.launch:
        if r["kind"] == "sigkill" and r.get("rank") is not None:
            h = st.rank_host.get(r["rank"]) or st.rank_host_weak.get(r["rank"])
            if h:
                extra.append(h)
    one = nccl_tests.single_host(st)
    if one:
        extra.append(one)
    # the host a launcher's prefix names on the line where a process failed (DeepSpeed's pdsh runner:
    # 'gpu-q-13: torch.cuda.OutOfMemoryError: ...'; error_lines.memory_and_cuda keeps it on its events),
    # when nothing else names one
    if not hosts and not extra:
        extra += [e["prefix_host"] for e in st.events if e.get("prefix_host")]
        extra += [h for h in st.prefix_hosts if h not in extra]  # 'slurmstepd-<node>: error: NVML: ... GPU is lost'
    # a paste from one shell ('[alice@gpu-a-07 ~]$ python train.py' and its output): a process that died there,
    # or the node's own stack failing under it (Fabric Manager, CUDA's init), happened on that host
    if not hosts and not extra and len(st.prompt_hosts) == 1 and (
            any(e["kind"] in DEATH_KINDS for e in st.events) or any(r["kind"] in HOST_SIDE_KINDS for r in st.nccl_words)
            or any(r["table"] in NODE_STACK_TABLES and r["row"]["severity"] in ("warning", "critical")
                   for r in st.seen.messages.values())):
        extra.append(st.prompt_hosts[0])
    return list(hosts) + [h for i, h in enumerate(extra) if h not in hosts and h not in extra[:i]]


def world_and_map(st):
    """World size (the largest communicator, else the hints) and rank -> host, GPU, local rank."""
    world = None
    if st.comm:
        world = max(c["nranks"] for c in st.comm)
    hints = [w for w in st.world_hints if 0 < w < 10 ** 6]
    if world is None and hints:
        world = max(hints)
    rank_map = {}
    for c in st.comm:
        if c["nranks"] != world:
            continue
        r = c["rank"]
        if c["host"] and c["pid"] is not None:
            st.pid_rank.setdefault((c["host"], c["pid"]), r)
        ent = rank_map.setdefault(r, {"host": None, "gpu_pci": None, "local_rank": None})
        if c["host"] and not ent["host"]:
            ent["host"] = c["host"]
        if c["pci"] and not ent["gpu_pci"]:
            ent["gpu_pci"] = c["pci"]
        if c["local_rank"] is not None:
            ent["local_rank"] = c["local_rank"]
    world = nccl_tests.fill_rank_map(st, rank_map, world)
    for k, v in st.pid_rank_weak.items():
        st.pid_rank.setdefault(k, v)
    _sub_communicators(st, rank_map)
    for src_map in (st.rank_host, st.rank_host_weak):
        for r, h in src_map.items():
            ent = rank_map.setdefault(r, {"host": None, "gpu_pci": None, "local_rank": None})
            if not ent["host"]:
                ent["host"] = h
    for r, lr in st.local_rank_weak.items():
        if r in rank_map and rank_map[r]["local_rank"] is None:
            rank_map[r]["local_rank"] = lr
    if world is not None:
        rank_map = {r: v for r, v in rank_map.items() if 0 <= r < world}
    return world, OrderedDict(sorted(rank_map.items()))


def _sub_communicators(st, rank_map):
    """Sub-communicator lines still give pci/local rank for a process whose global rank we know."""
    for c in st.comm:
        if c["host"] is None or c["pid"] is None:
            continue
        r = st.pid_rank.get((c["host"], c["pid"]))
        if r is None:
            continue
        ent = rank_map.setdefault(r, {"host": c["host"], "gpu_pci": None, "local_rank": None})
        if not ent["gpu_pci"] and c["pci"]:
            ent["gpu_pci"] = c["pci"]
        if ent["host"] is None:
            ent["host"] = c["host"]
    for c in st.comm:  # fill local_rank from the NCCL prefix device when nothing better exists
        r = st.pid_rank.get((c["host"], c["pid"])) if c["host"] else None
        if r is not None and r in rank_map and rank_map[r]["local_rank"] is None and c["local_rank"] is None:
            rank_map[r]["local_rank"] = c["dev"]


def iteration(st):
    """Median iteration rate per epoch and its trend (steady, falling, erratic, unknown)."""
    labelled = [p for p in st.progress if p["labelled"]]
    use = labelled if labelled else st.progress
    by_epoch = {}
    for p in use:
        ep = p["epoch"] if p["labelled"] else p["reset_index"]
        if p["rate"] is not None and p["rate"] > 0:
            by_epoch.setdefault(ep, []).append(p["rate"])
    rates = OrderedDict((ep, round(median(v), 4)) for ep, v in sorted(by_epoch.items()))
    eps = list(rates)
    if len(eps) < 3:
        return rates, "unknown"
    # the first epoch carries warm-up / compilation; drop it when there is enough history
    if len(eps) >= 5:
        eps = eps[1:]
    return rates, _trend([rates[e] for e in eps])


def _trend(ys):
    """Least-squares line through the rates: falling when it drops 15 % and most steps go down."""
    xs = list(range(len(ys)))
    mx, my = sum(xs) / float(len(xs)), sum(ys) / float(len(ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    fit_first, fit_last = my - slope * mx, my + slope * (xs[-1] - mx)
    resid = [y - (my + slope * (x - mx)) for x, y in zip(xs, ys)]
    rs = (sum(r * r for r in resid) / len(resid)) ** 0.5
    down = sum(1 for a, b in zip(ys, ys[1:]) if b < a)
    rel = (fit_last - fit_first) / fit_first if fit_first > 0 else 0.0
    if my > 0 and rs / my > 0.25:
        return "erratic"
    if rel < -0.15 and down >= 0.6 * (len(ys) - 1):
        return "falling"
    if my > 0 and rs / my > 0.12:
        return "erratic"
    return "steady"


def where_failed(st):
    """(failed_at {epoch, progress}, fraction of the run done or None, last progress record)."""
    if not st.progress:
        if st.hf_epoch:
            v = st.hf_epoch[0]
            return {"epoch": int(v), "progress": round(v - int(v), 4)}, None, None
        return None, None, None
    labelled = [p for p in st.progress if p["labelled"]]
    if labelled:
        best = max(labelled, key=lambda p: (p["epoch"], p["progress"]))
        run_frac = None
        if best["epochs_total"]:
            run_frac = (best["epoch"] + best["progress"]) / float(best["epochs_total"] + 1)
        return {"epoch": best["epoch"], "progress": round(best["progress"], 4)}, run_frac, best
    best = max(st.progress, key=lambda p: (p["reset_index"], p["progress"]))
    if any(p["reset_index"] for p in st.progress):
        return {"epoch": best["reset_index"], "progress": round(best["progress"], 4)}, None, best
    # one bar over the whole run (HF Trainer): its fraction is the run fraction
    fa = None
    if st.hf_epoch:
        v = st.hf_epoch[0]
        fa = {"epoch": int(v), "progress": round(v - int(v), 4)}
    return fa, best["progress"], best


def phase(failed_at, run_frac, coll):
    """'early' (setup / application trouble), 'late' (a node that wore out) or 'unknown'."""
    if failed_at is not None:
        if failed_at["epoch"] < 3 or (run_frac is not None and run_frac < 0.10):
            return "early"
        return "late"
    if run_frac is not None:
        return "early" if run_frac < 0.10 else "late"
    seq = coll.get("seq") if coll else None
    if seq is not None:
        if seq < 50:
            return "early"
        if seq >= 5000:
            return "late"
    return "unknown"


def transport(st):
    nets = [n.lower() for n in st.networks]
    if nets:
        last = nets[-1]
        if any(n.startswith("ib") for n in nets) and not any(n.startswith("socket") for n in nets):
            return "IB"
        if any(n.startswith("socket") for n in nets) and not any(n.startswith("ib") for n in nets):
            return "Socket"
        if last.startswith("ib"):
            return "IB"
        if last.startswith("socket"):
            return "Socket"
    if st.via:
        keys = list(st.via)
        if any(k.startswith("NET/IB") for k in keys):
            return "IB"
        if any(k.startswith("NET/Socket") for k in keys):
            return "Socket"
        if any(k.startswith("P2P") or k.startswith("SHM") for k in keys):
            return "P2P"
    if st.socket_evidence and not st.ib_devices:
        return "Socket"
    if st.ib_devices or st.roce_devices:
        return "IB"
    return "unknown"


def timeline(st):
    """Timed job events for the incident timeline: when the hang began (first watchdog fire
    minus its timeout) and when the watchdog fired. Times are naive UTC ISO strings."""
    timed = []
    for t in st.timeouts:
        when = line_time(RANK_PREFIX.sub("", t.get("evidence") or ""), st.year, st.since_dt)
        if when is not None:
            timed.append((when, t))
    if not timed:
        return []
    timed.sort(key=lambda x: x[0])
    when, first = timed[0]
    ranks = sorted(set(t["rank"] for _w, t in timed if t.get("rank") is not None))
    what = "%s%s" % (first.get("op") or "collective", " SeqNum %s" % first["seq"] if first.get("seq") is not None else "")
    events = []
    if first.get("timeout_ms"):
        began = when - timedelta(milliseconds=first.get("ran_ms") or first["timeout_ms"])
        events.append({"time": began.isoformat(), "kind": "collective_started",
                       "text": "%s began; it never completed (watchdog fired %d s later)"
                               % (what, (first.get("ran_ms") or first["timeout_ms"]) // 1000)})
    events.append({"time": when.isoformat(), "kind": "watchdog_timeout",
                   "text": "watchdog fired: %d rank(s) timed out in %s" % (len(ranks), what),
                   "evidence": first.get("evidence")})
    return events
