# SPDX-License-Identifier: Apache-2.0
"""Cluster view, computed once on the controller from every host's analysis.

Cross-host reasoning lives here and nowhere else:
- an unreachable host is a prime suspect (dead/wedged node); one whose gather failed is
  unknown, not sick (a module or setting problem must not drain a fleet);
- the same application-class Xid on every GPU-bearing host points at the application or
  driver, not at one host's hardware;
- stragglers, and link errors shared by one rail across hosts;
- suspects are ranked by the field's suspicion order (see verdict.SUSPICION).

The rules only ADD findings (to the cluster, and to the hosts they concern); they never
edit a host's own findings. Each host's verdict is then decided once, from all of them.
"""

from .analyze import SCHEMA
from .confidence import host_confidence, job_confidence
from .findings import SEVERITY_RANK, finding
from .hostresult import host_from_result
from .job_verdict import job_verdict
from .joblog.culprits import SETUP_EVIDENCE
from .taxonomy import RUNG_TABLE
from .taxonomy.kinds_job import CUDA_ERROR_KINDS
from .timeutil import to_utc
from .verdict import SUSPICION, host_verdict, rank_key, sort_findings


def _app_xids(h):
    """Xid codes this host reported that NVIDIA's catalog files under the application."""
    return {f["xid"] for f in h["findings"] if f.get("xid") is not None and f["category"] == "application"}


def cross_host(hosts):
    """Apply the cross-host rules; they append findings to the hosts they concern and
    return the cluster-level findings. A host's own findings are never edited."""
    out = []
    unreached = ("host_unreachable", "gather_failed")
    gpu_hosts = [h for h in hosts if not any(f["kind"] in unreached for f in h["findings"])]
    if len(gpu_hosts) >= 2:
        # The same application Xid on every host: one job's code or a driver bug, not N broken
        # GPUs. Hardware Xids stay hardware however many hosts report them.
        for code in sorted(set.intersection(*[_app_xids(h) for h in gpu_hosts])):
            out.append(finding(
                "xid_on_every_host",
                "Xid %d appears on every host (%d): the application or driver, not one GPU" % (code, len(gpu_hosts)),
                xid=code, source="cluster"))
    out.extend(_stragglers(gpu_hosts))
    out.extend(_shared_rails(gpu_hosts))
    return out


_SLOW_KINDS = ("hw_slowdown", "hw_slowdown_all_gpus")


def _stragglers(hosts):
    """One host slower than its peers: its GPUs are clock-throttled (HW slowdown / power brake)
    while the others' are not, or its nvidia-smi took far longer than theirs. Every
    collective waits for the slowest rank, so that host is the straggler."""
    out = []
    if len(hosts) < 3:
        return out
    slow = [h for h in hosts if any(f["kind"] in _SLOW_KINDS and f["severity"] != "info" for f in h["findings"])]
    times = {h["host"]: (h.get("timings") or {}).get("nvidia_smi") for h in hosts}
    known = sorted(t for t in times.values() if isinstance(t, (int, float)))
    median = known[len(known) // 2] if known else None
    if median is not None and len(known) >= 3:
        for h in hosts:
            t = times[h["host"]]
            hung = any(f["kind"] == "nvidia_smi_hang" for f in h["findings"])  # already its own finding
            # 10 s: far above a healthy 8-GPU nvidia-smi (~1-2 s), so a busy controller is no straggler
            if isinstance(t, (int, float)) and t >= 10 and t >= 5 * max(median, 0.2) and h not in slow and not hung:
                slow.append(h)
    if not slow or len(slow) * 3 > len(hosts):  # a rack-wide slowdown is a facility signal, not a straggler
        return out
    for h in slow:
        why = next((f for f in h["findings"] if f["kind"] in _SLOW_KINDS), None)
        t = times[h["host"]]
        reason = why["message"] if why else "nvidia-smi took %.1f s (peers' median %.1f s)" % (t, median)
        h["findings"].append(finding(
            "straggler", "slower than its %d peers: %s; every collective waits for this host" % (len(hosts) - 1, reason),
            category="gpu_hardware" if why and why["category"] == "gpu_hardware" else "unknown",
            evidence=why["evidence"] if why else "", source=why["source"] if why else "cluster",
            gpu=why.get("gpu") if why else None, name=h["host"]))
        out.append(finding("straggler", "%s is a straggler: %s" % (h["host"], reason), source="cluster",
                           name=h["host"]))
    return out


def _shared_rails(hosts):
    """The same HCA index (rail) with link errors on several hosts: in a rail-optimised
    fabric mlx5_N of every node goes to leaf switch N, so the common part is that switch
    (or its ports), not each host's HCA."""
    rails = {}
    for h in hosts:
        for f in h["findings"]:
            ib = f.get("ib") or {}
            if f["category"] == "ib_network" and f["severity"] != "info" and ib.get("device"):
                rails.setdefault(ib["device"], {}).setdefault(h["host"], []).append(f)
    out = []
    for dev, by_host in sorted(rails.items()):
        if len(by_host) < 2:
            continue
        names = sorted(by_host)
        msg = ("%s has link errors on %d hosts (%s): the switch side of that rail, not %d HCAs"
               % (dev, len(names), ", ".join(names), len(names)))
        for h in hosts:
            if h["host"] in by_host:
                first = by_host[h["host"]][0]
                h["findings"].append(finding("shared_rail_errors", msg, evidence=first["evidence"],
                                             source="cluster", ib=first.get("ib"), name=", ".join(names)))
        out.append(finding("shared_rail_errors", msg, ib={"device": dev, "port": None}, source="cluster",
                           name=", ".join(names)))
    return out


def decide(hosts):
    """(Re)decide every host's verdict from its findings, after the rules changed them."""
    for h in hosts:
        h["findings"] = sort_findings(h["findings"])
        v = host_verdict(h["findings"])
        h["verdict"], h["severity"], h["rung"] = v["verdict"], v["severity"], v["rung"]
        h.update(host_confidence(h["verdict"], h["findings"], h.get("probes")))


# How much a host explains the job's failure (higher first): the host of a culprit rank, one
# the job's logs name (a peer with IB or connection errors), another of the job's nodes (or any
# host when the job's nodes are unknown), a host outside the job.
CULPRIT_HOST, NAMED_BY_JOB, IN_JOB, NOT_IN_JOB = 3, 2, 1, 0
# what the analysis writes of each host (job_relation): words a report or AWX reads as they are
RELATION_NAME = {CULPRIT_HOST: "culprit_host", NAMED_BY_JOB: "named_by_job", IN_JOB: "in_job", NOT_IN_JOB: "not_in_job"}
RELATION_OF = dict((v, k) for k, v in RELATION_NAME.items())


def relation_of(h, job):
    """How host ``h`` stands to the job: the analysis's word for it when it has one, else worked out."""
    said = RELATION_OF.get(h.get("job_relation"))
    return said if said is not None else job_relation(h, job)


def _shorts(names):
    return {_short(str(n)) for n in names if n}


def job_nodes(job):
    """Short names of the job's nodes: Slurm's node list, else the hosts of its logs' rank map
    when that map places every rank of the world. None when neither is known: a host the logs
    do not name may still have run the job, so nobody is called outside it."""
    job = job or {}
    nodes = _shorts((job.get("slurm") or {}).get("nodes") or [])
    if nodes:
        return nodes
    rank_map, world = job.get("rank_map") or {}, job.get("world_size")
    hosts = {}
    for rank, info in rank_map.items():
        if isinstance(info, dict) and info.get("host"):
            hosts[str(rank)] = info["host"]
    if isinstance(world, int) and world > 0 and all(str(r) in hosts for r in range(world)):
        return _shorts(hosts.values())
    return None


def job_named_hosts(job):
    """Short names of the hosts the job's logs tie to the failure besides the culprit ranks'
    own: the network suspects, the hosts and peers of its NCCL / IB errors, the hosts of the
    ranks its serious findings name."""
    job = job or {}
    names = set(job.get("culprit_hosts") or [])
    for e in (job.get("nccl") or {}).get("errors") or []:
        if isinstance(e, dict):
            names.update(x for x in (e.get("host"), e.get("peer")) if isinstance(x, str))
    rank_map = job.get("rank_map") or {}
    for f in job.get("findings") or []:
        if isinstance(f, dict) and f.get("severity") in ("warning", "critical") and f.get("rank") is not None:
            info = rank_map.get(f["rank"], rank_map.get(str(f["rank"]))) or {}
            names.add(info.get("host") if isinstance(info, dict) else None)
    return _shorts(names)


def job_relation(h, job):
    """CULPRIT_HOST, NAMED_BY_JOB, IN_JOB or NOT_IN_JOB: how host ``h`` stands to the job."""
    if not job:
        return IN_JOB
    name = _short(str(h.get("host") or ""))
    if name in _shorts(c.get("host") for c in job.get("culprits") or [] if isinstance(c, dict)):
        return CULPRIT_HOST
    if name in job_named_hosts(job):
        return NAMED_BY_JOB
    nodes = job_nodes(job)
    return IN_JOB if nodes is None or name in nodes else NOT_IN_JOB


def logged_before_job(h, job):
    """True when every time-stamped warning or critical finding of host ``h`` was last seen
    before the job started: a fault the job did not meet (it may still need fixing)."""
    start = job_start(job)
    if start is None:
        return False
    lasts = [to_utc(f.get("last")) for f in h.get("findings") or []
             if f.get("severity") in ("warning", "critical") and f.get("kind") != "job_culprit"]
    lasts = [t for t in lasts if t is not None]
    return bool(lasts) and all(t < start for t in lasts)


def suspect_order(h, job=None):
    """Sort key (higher first): how much the host explains the job's failure (a host whose
    logged faults all came before the job explains it less), then its severity, then the
    field's suspicion order of its verdict."""
    return (job_relation(h, job), not logged_before_job(h, job), SEVERITY_RANK[h["severity"]],
            SUSPICION.get(h["verdict"], 0))


def build_cluster(results, job=None, generated=None, keep_facts=False, offline=False):
    """results: {host: registered result}; job: parse_job_logs() output (plus Slurm fields)
    -> analysis dict (schema v1) with ``job`` joined and a ``cluster`` section."""
    everyone = len(results) >= 2 and all(isinstance(r, dict) and r.get("unreachable") for r in results.values())
    hosts = [host_from_result(name, res, everyone) for name, res in sorted(results.items())]
    cluster_findings = cross_host(hosts)
    if job:
        job = dict(job)
        job.update(join_job(hosts, job))  # adds job_culprit findings to the culprits' hosts
        cluster_findings.extend(_unchecked_job_nodes(hosts, job, offline))
    decide(hosts)
    if job:
        job.update(job_confidence(job, hosts))
        for h in hosts:  # said once, here: the console, the reports and AWX read it, never work it out again
            h["job_relation"] = RELATION_NAME[job_relation(h, job)]
            h["fault_before_job"] = logged_before_job(h, job)
    timeline = build_timeline(hosts, job)
    hosts.sort(key=lambda h: suspect_order(h, job), reverse=True)
    suspects = [h["host"] for h in hosts if SEVERITY_RANK[h["severity"]] >= SEVERITY_RANK["warning"]]
    # hosts a node-scoped rung can act on (job-scoped rungs change the next run, not a node)
    remediate = [h["host"] for h in hosts
                 if h["severity"] == "critical" and RUNG_TABLE[h["rung"]]["scope"] in ("gpu", "host")]
    if not keep_facts:
        hosts = [{k: h[k] for k in ("host", "verdict", "confidence", "confidence_reason", "confidence_basis",
                                    "severity", "rung", "findings", "job_relation", "fault_before_job") if k in h}
                 for h in hosts]
    return {
        "schema": SCHEMA,
        "generated": generated,
        "hosts": hosts,
        "job": job,
        "cluster": {
            "hosts": len(hosts),
            "suspects": suspects,
            "remediate": remediate,
            "healthy": [h["host"] for h in hosts if h["host"] not in suspects],
            "findings": cluster_findings,
            "timeline": timeline,
            "offline": bool(offline),  # read from captures (the CLI), not gathered by a play
        },
    }


# ---------------------------------------------------------------- job join
def _short(name):
    return (name or "").split(".")[0]


def _match_host(hosts_by_name, name):
    if name in hosts_by_name:
        return hosts_by_name[name]
    short = _short(name)
    for h, v in hosts_by_name.items():
        if _short(h) == short:
            return v
    return None


def _explaining_finding(host, gpu_pci):
    """The host finding that explains a culprit rank: the best-ranked (verdict.rank_key, the
    one order) serious finding on the rank's own GPU, else the host's best-ranked serious
    finding (hardware first by that order; a node's OOM kill or stuck DataLoader worker
    still explains the rank when nothing else does)."""
    serious = [f for f in host["findings"] if f["severity"] in ("warning", "critical") and f["kind"] != "job_culprit"]
    on_gpu = [f for f in serious if gpu_pci and (f.get("gpu") or {}).get("pci") == gpu_pci]
    pool = on_gpu or serious
    return max(pool, key=rank_key) if pool else None


def join_job(hosts, job):
    """Tie the job's culprit ranks to hosts, GPUs and their hardware findings; weigh the
    failure phase. Adds a ``job_culprit`` finding to each culprit's host and returns the
    job verdict fields (verdict, culprits)."""
    by_name = {h["host"]: h for h in hosts}
    rank_map = {int(k): v for k, v in (job.get("rank_map") or {}).items()}
    culprits, explanations = [], []
    # ranks NCCL's setup words name (a duplicate GPU, no socket interface) are the job's config:
    # no host of theirs is a culprit to drain
    named_by_setup = job.get("culprit_evidence") in SETUP_EVIDENCE
    for rank in job.get("culprit_ranks") or []:
        info = rank_map.get(int(rank)) or {}
        host = _match_host(by_name, info.get("host"))
        gpu_pci = info.get("gpu_pci")
        entry = {"rank": int(rank), "host": host["host"] if host else info.get("host"), "gpu_pci": gpu_pci,
                 "explained_by": None, "category": None}
        if host is not None and not named_by_setup:
            why = _explaining_finding(host, gpu_pci)
            coll = job.get("collective") or {}
            what = "rank %d (%s%s) is the rank the others waited for%s" % (
                int(rank), host["host"], " GPU %s" % gpu_pci if gpu_pci else "",
                " in %s SeqNum %s" % (coll.get("op"), coll.get("seq")) if coll else "")
            gpu = {"pci": gpu_pci, "index": None, "uuid": None} if gpu_pci else None
            if why is not None:
                label = "Xid %s" % why["xid"] if why.get("xid") is not None else why["kind"]
                entry.update(explained_by=label, category=why["category"])
                explanations.append(why)
                # the culprit takes its explanation's remedy: same rung, same steps, same note
                f = finding("job_culprit", what + "; explained by this host's %s: %s" % (label, why["message"]),
                            category=why["category"], rung=why.get("rung") or "drain",
                            steps=why.get("steps") or None, note=why.get("note"),
                            evidence=why["evidence"], source=why["source"], xid=why.get("xid"),
                            gpu=why.get("gpu") or gpu, ib=why.get("ib"), rank=int(rank))
            else:
                f = finding("job_culprit", what + "; no hardware finding on this host explains it",
                            rung="drain", steps=("drain_node", "read_rank_log"),
                            evidence=_job_evidence(job, rank), source="job", rank=int(rank), gpu=gpu)
            host["findings"].append(f)
        culprits.append(entry)
    if not culprits:
        why = _one_host_gpu_fault(hosts, job, rank_map)
        if why is not None:
            explanations.append(why)
    # a host given beside the job's logs that is not healthy may be why the ranks waited
    sick = any(f.get("severity") in ("warning", "critical") for h in hosts for f in h.get("findings") or ())
    verdict, decided_by = job_verdict(job, culprits, explanations, hosts_sick=sick)
    return {"culprits": culprits, "verdict": verdict, "decided_by": decided_by}


def _one_host_gpu_fault(hosts, job, rank_map):
    """The host finding that explains the job's CUDA error when no rank is named: the captures
    hold one host, the job names no other, and that host has a critical GPU or driver fault (an Xid
    79 beside 'unspecified launch failure' in one paste: a sticky error ends the kernel that ran when
    the GPU fell off the bus). None otherwise."""
    if len(hosts) != 1 or not any(f.get("kind") in CUDA_ERROR_KINDS for f in job.get("findings") or ()):
        return None
    host = hosts[0]
    named = set((v or {}).get("host") for v in rank_map.values()) - {None}
    if len(named) > 1 or (named and _match_host({host["host"]: host}, named.pop()) is None):
        return None
    faults = [f for f in host.get("findings") or () if f.get("severity") == "critical"
              and f.get("category") in ("gpu_hardware", "driver")]
    return max(faults, key=rank_key) if faults else None


def _job_evidence(job, rank):
    for f in job.get("findings") or []:
        if f.get("rank") == rank and f.get("evidence"):
            return f["evidence"]
    return ""


def _unchecked_job_nodes(hosts, job, offline=False):
    """The job's nodes (Slurm, or the culprit hosts the logs name) that this run did not
    check: not in the inventory, or left out by --limit. Never dropped silently."""
    checked = {_short(h["host"]) for h in hosts}
    wanted = list((job.get("slurm") or {}).get("nodes") or [])
    wanted += [h for h in job.get("culprit_hosts") or [] if h not in wanted]
    out = []
    for node in wanted:
        if _short(node) in checked:
            continue
        culprit = node in (job.get("culprit_hosts") or [])
        # the CLI reads captures only: an inventory and a --limit are the playbooks'
        why = ("no captures given for it" if offline else
               "no evidence of it: not in the inventory, outside --limit, or no capture of it given")
        out.append(finding(
            "job_culprit_node_not_checked" if culprit else "job_node_not_checked",
            "%s ran this job%s but was not checked (%s)" % (node, " and hosts a culprit rank" if culprit else "", why),
            source="cluster", name=node))
    return out


# ---------------------------------------------------------------- timeline
def build_timeline(hosts, job, per_host=60):
    """Merge each host's kernel-log events and the job's events into one ordered list. A
    host that logged hundreds of events keeps its first and last ``per_host`` // 2 (the
    onset and the end), so one noisy host cannot push the others or the job's watchdog
    out; the earliest host event that is not a recovery (a link coming up) is marked
    ``first_fault``. When the job's start is known (Slurm's, else the first time its log
    carries), events before it are marked ``before_job`` and cannot be the first fault: an
    Xid the evening before did not stop this job; the start is an event of the job's row
    (``job_start``). The first fault during the job on each host the job names as its culprit's
    is marked ``culprit_fault``: the one that stopped it, which need not be the first."""
    events = []
    for h in hosts:
        kl = (h.get("facts") or {}).get("kernel_log") or {}
        mine = []
        for e in kl.get("events") or []:
            if isinstance(e, dict) and to_utc(e.get("time")):
                mine.append({"time": e["time"], "host": h["host"], "kind": e.get("kind", ""),
                             "text": (e.get("text") or "")[:300]})
        mine.sort(key=lambda e: to_utc(e["time"]))
        if len(mine) > per_host:
            mine = mine[:per_host // 2] + mine[-(per_host // 2):]
        events.extend(mine)
    for e in (job or {}).get("events") or []:
        if isinstance(e, dict) and to_utc(e.get("time")):
            events.append({"time": e["time"], "host": "job", "kind": e.get("kind", ""),
                           "text": (e.get("text") or "")[:300]})
    events.sort(key=lambda e: to_utc(e["time"]))
    start = job_start(job)
    faults = [e for e in events if e["host"] != "job" and not str(e["kind"]).endswith("_up")]
    for e in faults:
        if start is not None and to_utc(e["time"]) < start:
            e["before_job"] = True
    during = [e for e in faults if not e.get("before_job")]
    if during or faults:
        (during or faults)[0]["first_fault"] = True
    culprits = set(str(h).split(".")[0] for h in (job or {}).get("culprit_hosts") or ())
    for host in culprits:
        own = [e for e in during if str(e["host"]).split(".")[0] == host]
        if own:
            own[0]["culprit_fault"] = True
    if start is not None:
        events.insert(0, {"time": start.isoformat(), "host": "job", "kind": "job_start", "text": "the job started"})
        events.sort(key=lambda e: to_utc(e["time"]))
    return events


def job_start(job):
    """When the job began (UTC), from Slurm, else the earliest time its log carries; None."""
    job = job or {}
    return to_utc((job.get("slurm") or {}).get("start")) or to_utc(job.get("log_start"))
