# SPDX-License-Identifier: Apache-2.0
"""The findings of a whole job: one per error event, then what only the whole job shows (a
stuck watchdog, NCCL's transport configuration, a falling iteration rate, an early
failure) and last the collective timeout itself, which names its cause. Kinds:
taxonomy/kinds_job.py."""

import re

from collections import Counter

from ..findings import finding, gpu_ref, rank_key
from . import nccl_tests
from . import emitter_lines, memtrend, pyspy
from .event_findings import finding_for_event
from .launch_lines import launch_findings
from .nccl_words import word_findings
from .patterns import CONSEQUENCE_EXC, MAX_FINDINGS_PER_KIND
from .text import evidence

# the categories that can be the cause of a timeout (ranked by the engine's one order, verdict.rank_key)
_CAUSES = ("gpu_hardware", "ib_network", "driver", "dataloader", "memory_leak", "application", "nccl_config")
# the timeout's kind by the rung its cause calls for ("drain": the culprit's host)
_TIMEOUT_KIND_BY_RUNG = {"drain": "nccl_watchdog_timeout", "ib_restart": "nccl_watchdog_timeout_ib",
                         "gpu_reset": "nccl_watchdog_timeout_gpu", "nccl_env": "nccl_watchdog_timeout_config",
                         "fix_application": "nccl_watchdog_timeout_app"}
_HW_CATEGORIES = ("gpu_hardware", "ib_network", "driver")


def job_findings(st, job, last_prog):
    phase, trend, rank_map = job["phase"], job["iteration_rate"]["trend"], job["rank_map"]
    findings = []
    for ev in st.events:
        f = finding_for_event(ev, st, phase, trend, rank_map)
        if f is not None:
            findings.append(f)
    findings = _drop_restated_exceptions(findings, st)
    findings.extend(_stuck_watchdog(st))
    findings.extend(_transport_config(st, job["nccl"]["transport"]))
    findings.extend(word_findings(st, findings))     # NCCL's own words (nccl_words.py)
    findings.extend(nccl_tests.findings(st))
    findings.extend(launch_findings(st))
    findings.extend(pyspy.findings(st))             # where each dumped process stood (py-spy dump)
    findings.extend(memtrend.findings(st, bool(job["success"])))  # memory a run reported, still growing
    said = emitter_lines.findings(st, findings)  # what only an emitter's vocabulary explains
    # 'RuntimeError: Too many open files. ...' is PyTorch's DataLoader speaking through an exception:
    # its message, classified, replaces the bare exception that raised it
    restated = set(f.get("evidence") for f in said if f.get("severity") in ("warning", "critical"))
    findings = [f for f in findings if not (f["kind"] == "python_exception" and f.get("evidence") in restated)]
    findings.extend(said)
    _devices_skipped(findings, st)
    _killed_by_srun(findings, st, job)
    findings[:0] = _nccl_trail(st, findings)  # first: where the failure began, before what it took down
    findings.extend(emitter_lines.sacct_findings(st)[0])
    if trend == "falling":
        findings.append(_falling_rate(st, job["iteration_rate"]["by_epoch"]))
    early = _early_failure(st, job, last_prog, findings)
    if early is not None:
        findings.append(early)
    short = _timeout_too_short(st)
    if short is not None:
        findings.append(short)
    if st.timeouts or st.desync_timeout or st.barrier_missing:
        findings.append(_timeout(st, job, findings))
    if job["training"] and not job["success"] and not any(f["severity"] in ("warning", "critical")
                                                           for f in findings):
        findings.append(_end_unknown(st))
    if not job["success"] and not any(f["severity"] in ("warning", "critical") for f in findings):
        findings.extend(_init_incomplete(st))
    _exits_are_consequences(findings)
    _stuck_after_a_death(findings, job)
    _teardown_after_the_end(findings, st)
    return dedupe(findings)


def _stuck_after_a_death(findings, job):
    """A watchdog stuck on a surviving rank after a rank died of memory (culprits._died): the
    survivors' NCCL calls and aborts wait on a peer that is gone, so their heartbeat monitor fires;
    a consequence of the death, not a call hung in the driver."""
    if job.get("culprit_evidence") != "rank_died":
        return
    dead = set(job.get("culprit_ranks") or ())
    for f in findings:
        if f["kind"] == "nccl_watchdog_stuck" and f.get("rank") not in dead and f["severity"] != "info":
            f["severity"] = "info"
            f["message"] += (" Here it followed the death of rank(s) %s (out of memory): its NCCL calls waited "
                             "for a peer that was gone." % ",".join(str(r) for r in sorted(dead)))


# ncclResult_t (src/nccl.h.in)
NCCL_RESULTS = {1: "an unhandled CUDA error", 2: "a system error", 3: "an internal error", 4: "an invalid argument",
                5: "an invalid usage", 6: "a remote error", 7: "in progress"}
# where in NCCL a failure began, by its source file: the part of NCCL it names
_NCCL_PARTS = (("misc/socket", "its socket layer (TCP between ranks: bootstrap or the socket transport)"),
               ("bootstrap", "its bootstrap (the TCP rendezvous between ranks)"),
               ("net_ib", "its InfiniBand transport"), ("ibvwrap", "its InfiniBand transport (verbs)"),
               ("net_socket", "its socket transport"), ("net.cc", "its network transport"),
               ("proxy", "its proxy thread (network progress)"), ("p2p", "its intra-node P2P transport"),
               ("shm", "its shared-memory transport"), ("cudawrap", "its CUDA calls"))


def _nccl_trail(st, findings):
    """NCCL's error trail ('misc/socket.cc:829 -> 3'), when no message of NCCL's says what failed:
    where the failure began (the first line of a process's trail) and the result it returned."""
    if not st.nccl_traces or any((f.get("name") == "NCCL" or f["kind"].startswith(("nccl_", "logged_nccl")))
                                 and f["severity"] in ("warning", "critical") for f in findings):
        return []
    t = next(iter(st.nccl_traces.values()))  # the first process's (dicts keep their order)
    part = next((what for key, what in _NCCL_PARTS if key in t["file"]), "NCCL")
    n = len(st.nccl_traces)
    return [finding(
        "nccl_error_trace",
        "NCCL failed in %s: %s:%d returned %s (%d)%s%s; no NCCL WARN line here says why (look for one above "
        "the trail in the full log)." % (
            part, t["file"], t["line"], NCCL_RESULTS.get(t["res"], "result"), t["res"],
            " (%s)" % t["why"] if t["why"] else "", " on %s" % t["host"] if t["host"] else "")
        + (" %d processes printed such a trail." % n if n > 1 else ""),
        evidence=evidence(t["evidence"]), source=t["src"], rank=t["rank"])]


# a launcher's report that a worker or task exited non-zero: torchrun's elastic agent
# ('failed (exitcode: -6) local_rank: 0 ...'), srun ('task 5: Exited with exit code 1')
_EXIT_REPORT = re.compile(r"failed \(exitcode: -?\d{1,3}\)|Exited with exit code \d{1,3}")


def _exits_are_consequences(findings):
    """When the job's failure is explained (a watchdog timeout, a critical finding of a cause), a
    launcher's report that a worker exited is its consequence (the watchdog aborts the process;
    a CUDA error ends it): information, not a second failure."""
    if not any(f["kind"].startswith("nccl_watchdog_timeout")
               or (f["severity"] == "critical" and f["category"] not in ("unknown", "healthy")) for f in findings):
        return
    for f in findings:
        if f["kind"] == "logged_error" and f.get("name") and f["severity"] != "info" and \
                _EXIT_REPORT.search(f.get("evidence") or ""):
            f["severity"] = "info"
            f["message"] += " (a consequence of the failure found above)"


def _at(src):
    """(file, line) of a 'file:line' source, or None."""
    name, _, n = (src or "").rpartition(":")
    return (name, int(n)) if name and n.isdigit() else None


def _teardown_after_the_end(findings, st):
    """NCCL's complaints below a line where the run said it ended well, in the same file, are its
    communicators being torn down at exit (the proxy's 'Accept failed', 'Failed to execute operation
    Close', the error trail of closed sockets): information, not a failure of the run."""
    ends = {}
    for s in st.success:
        at = _at(s.get("src"))
        if at and (at[0] not in ends or at[1] < ends[at[0]]):
            ends[at[0]] = at[1]
    if not ends:
        return
    for f in findings:
        at = _at(f.get("source"))
        if at is None or at[0] not in ends or at[1] <= ends[at[0]] or f["severity"] == "info" or \
                f["kind"].startswith("nccl_watchdog") or not (  # a hang at exit still holds the nodes
                    f.get("name") == "NCCL" or f["kind"].startswith(("nccl_", "logged_nccl"))):
            continue
        f["severity"] = "info"
        f["message"] += " (after the run said it ended: its communicators' teardown)"


def _killed_by_srun(findings, st, job):
    """The tasks srun killed after one task exited non-zero (culprits._srun_first_exit) were killed
    because of that exit: srun's 'Killed' lines are its consequence, information beside it."""
    if job.get("culprit_evidence") != "srun_first_exit":
        return
    first = next(r for r in st.srun_exits if r["code"] and r["tasks"] == job["culprit_ranks"])
    for f in findings:
        if f["kind"] == "worker_sigkill" and f.get("name") == "Slurm" and f["severity"] != "info":
            f["severity"] = "info"
            f["message"] += (" srun killed these tasks when task %d exited with exit code %d (%s): they are not "
                             "the cause." % (first["tasks"][0], first["code"], first["src"]))


def _devices_skipped(findings, st):
    """An RDMA device NCCL could not open, when it then used others ('NET/IB : Using [0]mlx5_1:1/RoCE'):
    NCCL skipped it and went on (a container given some of the host's devices), so the WARN is
    information, not the job's failure."""
    used = list(st.ib_devices) + list(st.roce_devices)
    if not used:
        return
    for f in findings:
        if f["kind"] == "logged_nccl_config_error" and f["severity"] == "warning" and (
                "Unable to open device" in f["evidence"] or "ibv_open_device" in f["evidence"]):
            f["severity"] = "info"
            f["message"] += " NCCL went on with the devices it could open (%s)." % ", ".join(map(str, used[:8]))


def _end_unknown(st):
    """A training run's log that stops: no end said, no error: never taken as healthy."""
    last = st.progress[-1] if st.progress else None
    return finding("job_end_unknown", "The training log stops without saying the run ended (no trainer or launcher "
                                      "said so) and without an error: still running, killed, or hung?",
                   evidence=evidence(last["evidence"]) if last else "", source=last["src"] if last else "")


def _init_incomplete(st):
    """A communicator whose init began (src/init.cc 'Init START', NCCL 2.19+) in a process that never
    logged its 'Init COMPLETE': the log stops inside NCCL's set-up. Never taken as healthy."""
    started, done = {}, set()
    for c in st.comm:
        key = (c.get("host"), c.get("pid"), c["comm"])
        if c.get("init_complete"):
            done.add(key)
        elif c.get("init_start"):
            started.setdefault(key, c)
    left = [c for k, c in started.items() if k not in done]
    if not left:
        return []
    c = left[0]
    return [finding("nccl_init_incomplete", "NCCL began to set up communicator %s (rank %d of %d%s) and the log never "
                                            "shows it complete%s: the log stops during NCCL's set-up" % (
                                                c["comm"], c["rank"], c["nranks"], " on %s" % c["host"] if c.get("host")
                                                else "", " (%d communicators so)" % len(left) if len(left) > 1 else ""),
                    rank=c["rank"])]


def _drop_restated_exceptions(findings, st):
    """A Python exception that only restates a classified error adds nothing."""
    classified_srcs = set(ev["src"] for ev in st.events if ev["kind"] != "python_exception")

    def restates(f):
        e = f["evidence"]
        return (f["source"] in classified_srcs or "NCCL" in e or any(x in e for x in CONSEQUENCE_EXC)
                or "DistBackendError" in e or "DataLoader" in e or "out of memory" in e.lower()
                or "CUDA error" in e)
    return [f for f in findings if not (f["kind"] == "python_exception" and restates(f))]


def _stuck_watchdog(st):
    if st.abort_hung:
        # the watchdog was stuck in the abort it called (ProcessGroupNCCL waits for ncclCommAbort): the
        # communicator's teardown hung, after an error or at the end of the run; no sign of the driver
        a = st.abort_hung[0]
        return [finding(
            "nccl_abort_hang",
            "%s: the process group's abort timed out (ncclCommAbort did not return), so its watchdog "
            "stalled%s: a hang in the communicator's teardown, not a CUDA call in the driver." % (
                "rank %d" % a["rank"] if a["rank"] is not None else "a process",
                " and the heartbeat monitor ended the process" if st.stuck else ""),
            evidence=evidence(a["evidence"]), source=a["src"], rank=a["rank"])]
    return [finding(
        "nccl_watchdog_stuck",
        "%s: the NCCL watchdog itself got stuck, which means a CUDA/NCCL call hung inside the "
        "driver on that process." % ("rank %d" % s["rank"] if s["rank"] is not None else "a process"),
        evidence=evidence(s["evidence"]), source=s["src"], rank=s["rank"]) for s in st.stuck[:1]]


def _transport_config(st, transport):
    out = []
    if transport == "Socket" and (st.ib_devices or st.roce_devices or st.ib_disabled or st.ib_nodev):
        why = st.ib_disabled or st.ib_nodev or st.socket_evidence or st.net_ib_line
        out.append(finding(
            "nccl_socket_fallback",
            "NCCL fell back to sockets (TCP) instead of InfiniBand%s: collectives are slow and time out "
            "under load." % (" because NCCL_IB_DISABLE is set" if st.ib_disabled else
                             " because NET/IB could not open %s (a container must be given the RDMA device)"
                             % ", ".join(st.ib_unopened) if st.ib_unopened else
                             " because NET/IB found no device" if st.ib_nodev else ""),
            evidence=evidence(why[1]), source=why[0]))
    plugins = {}
    for host, (plugin, src, raw) in st.net_plugins.items():
        plugins.setdefault(plugin, []).append((host, src, raw))
    if len(plugins) > 1:
        # one communicator's ranks must speak one network protocol: a node whose image lacks (or
        # adds) the libnccl-net plugin cannot connect to the others, and the collective hangs
        odd = min(plugins.values(), key=len)
        out.append(finding(
            "nccl_net_plugin_mixed",
            "The job's hosts run different NCCL network plugins: %s. Ranks of one communicator must load "
            "the same plugin (a node's image or NCCL_NET_PLUGIN differs): the nodes cannot connect and "
            "collectives hang." % "; ".join("%s on %s" % ("NCCL's internal one" if p == "internal" else p,
                                                           ", ".join(sorted(h for h, _s, _r in hs)[:8]))
                                            for p, hs in sorted(plugins.items())),
            evidence=evidence(odd[0][2]), source=odd[0][1]))
    if st.ib_devices and st.roce_devices and st.net_ib_line:
        out.append(finding(
            "nccl_ib_hca_mixed",
            "NCCL's NET/IB list mixes InfiniBand HCAs with RoCE device(s) %s; traffic over them will be "
            "slow or unroutable." % ", ".join(st.roce_devices),
            # the exact value to set: identifiers read the same in every language
            note="`NCCL_IB_HCA=^%s`" % ",".join(st.roce_devices),
            evidence=evidence(st.net_ib_line[1]), source=st.net_ib_line[0]))
    return out


def _falling_rate(st, rates):
    eps = list(rates)
    ev_p = [p for p in st.progress if p["rate"]]
    lastp = ev_p[-1] if ev_p else None
    return finding(
        "iteration_rate_falling",
        "Training slows down epoch after epoch (%.3g it/s in epoch %s -> %.3g it/s in epoch %s): "
        "typical of a leak (memory, caches, growing graphs)." % (rates[eps[0]], eps[0], rates[eps[-1]], eps[-1]),
        evidence=evidence(lastp["evidence"]) if lastp else "", source=lastp["src"] if lastp else "")


def _early_failure(st, job, last_prog, findings):
    """A job that failed early, with no hardware finding: setup or application, not wear."""
    failure = bool(job["timed_out_ranks"] or st.timeouts or st.some_failed or
                   any(f["severity"] == "critical" for f in findings))
    if job["phase"] != "early" or not failure or any(f["category"] in _HW_CATEGORIES for f in findings):
        return None
    if any(f["kind"] == "nccl_error_trace" for f in findings):
        return None  # the failure began inside NCCL (its error trail): NCCL's or the network's, not the code's
    if (_first_collective(job) or all_joined_none_finished(st, job)) and \
            not any(f["severity"] == "critical" for f in findings):
        return None  # no data moved: the transport's question (nccl_watchdog_timeout_first, _stalled), not the code's
    fa = job["failed_at"] or {}
    culprits = job["culprit_ranks"]
    src = last_prog["src"] if last_prog else (st.timeouts[0]["src"] if st.timeouts else "")
    evid = last_prog["evidence"] if last_prog else (st.timeouts[0]["evidence"] if st.timeouts else "")
    return finding(
        "early_phase_failure",
        "The job failed early (%s): a setup/application problem (code, config, data, "
        "mismatched collectives), not a node that wore out." % (
            "epoch %s at %d%%" % (fa.get("epoch"), round(100 * fa.get("progress", 0))) if fa
            else "within the first collectives"),
        evidence=evidence(evid), source=src, rank=culprits[0] if culprits else None)


def _cause(findings, culprits):
    """The finding that explains the timeout: a critical one (or the socket fallback when no
    rank is to blame), on a culprit rank if any, most specific category first."""
    cands = [f for f in findings if f["category"] in _CAUSES and (
        f["severity"] == "critical" or (f["kind"] == "nccl_socket_fallback" and not culprits))]
    on_culprit = [f for f in cands if f["rank"] is not None and f["rank"] in culprits]
    pool = on_culprit or cands
    return max(pool, key=rank_key) if pool else None


def _first_collective(job):
    """Every rank that timed out waits in the process group's first collective (SeqNum 1; 0
    in releases that count from 0) and no rank is named behind it: the first transfer never
    completed, which mismatched collectives or a slow rank do not explain."""
    c = job["collective"] or {}
    return c.get("seq") in (0, 1) and not job["culprit_ranks"] and bool(job["timed_out_ranks"])


def all_joined_none_finished(st, job):
    """PyTorch's desync report says every rank joined the collective and none finished it ('[0, 1,
    ..., 15] joined but didn't finish collective #730'), and no rank is named behind it: the
    collective itself stalled (its transport), which a rank that fell behind does not explain."""
    if job["culprit_ranks"] or not st.desync_lagging or any(i[2] == "finished" for i in st.desync_lagging):
        return False
    for ranks, _seq, how, _src, _raw in st.desync_lagging:
        everyone = set(range(job["world_size"])) if job["world_size"] else set(range(max(ranks) + 1))
        if how == "joined" and len(ranks) >= 2 and set(ranks) >= everyone:
            return True
    return False


# PyTorch's collective timeout for NCCL defaults to 10 min (init_process_group(timeout=)); a setting of seconds aborts
# collectives that were merely slow (a first NCCL call sets up its connections, a large one takes seconds):
# the setting is the cause, not a hang (init_process_group(timeout=) or TORCH_NCCL_... in the job's code),
# unless the ranks' own reports show they waited in collectives that never line up (a test that sets a short
# timeout to show a mismatch)
TIMEOUT_FLOOR_MS = 5000


def _timeout_too_short(st):
    if st.desync_missing or st.desync_lagging or st.desync_timeout or st.fr_missing or \
            any(e["kind"] == "collective_mismatch" for e in st.events):
        return None
    t = min((t for t in st.timeouts if t.get("timeout_ms") is not None), key=lambda t: t["timeout_ms"], default=None)
    if t is None or t["timeout_ms"] >= TIMEOUT_FLOOR_MS:
        return None
    return finding(
        "collective_timeout_too_short",
        "The collective timeout is %d ms (Timeout(ms)=%d in the watchdog's line): shorter than a collective can take "
        "(a first call sets up NCCL's connections, a large one takes seconds), so the watchdog aborted work that "
        "was not hung. Set a timeout of minutes (init_process_group(timeout=), default 10 min)." % (
            t["timeout_ms"], t["timeout_ms"]), evidence=evidence(t["evidence"]), source=t["src"], rank=t.get("rank"))


def _timeout_kind(cause, job, st):
    """(kind, category) of the timeout finding: its cause's remedy, else what the phase and
    the culprit's host say."""
    if cause is not None and cause["rung"] in _TIMEOUT_KIND_BY_RUNG:
        return _TIMEOUT_KIND_BY_RUNG[cause["rung"]], cause["category"]
    if _first_collective(job):
        return "nccl_watchdog_timeout_first", "unknown"
    if all_joined_none_finished(st, job):
        return "nccl_watchdog_timeout_stalled", "unknown"
    if job["phase"] == "early":
        return "nccl_watchdog_timeout_early", "application"
    if job["culprit_hosts"] or job["culprit_ranks"] or job["phase"] == "late":
        return "nccl_watchdog_timeout", "nccl_deadlock"
    return "nccl_watchdog_timeout_unexplained", "nccl_deadlock"


def _timeout(st, job, findings):
    """The watchdog timeout itself: which collective, who was waited for, and why."""
    culprits, hosts, rank_map = job["culprit_ranks"], job["culprit_hosts"], job["rank_map"]
    first = st.timeouts[0] if st.timeouts else None
    cause = _cause(findings, culprits)
    kind, category = _timeout_kind(cause, job, st)
    c = job["collective"] or {}
    world = job["world_size"]
    cul = ("culprit rank(s) %s on %s (%s)" % (
        ",".join(str(r) for r in culprits), ",".join(hosts) or "unknown host", job["culprit_evidence"])
        if culprits else "every rank joined it and none finished (PyTorch's desync report)"
        if kind == "nccl_watchdog_timeout_stalled" else "culprit not identified")
    r0 = culprits[0] if culprits else None
    gpu = None
    if r0 is not None and (rank_map.get(r0) or {}).get("gpu_pci"):
        gpu = gpu_ref(rank_map[r0]["gpu_pci"], rank_map[r0].get("local_rank"))
    # which host to drain is the point of a drain: name it in every language
    note = "Culprit host(s): %s." % ", ".join(hosts) if kind == "nccl_watchdog_timeout" and hosts else None
    # the line that says it: a watchdog's timeout, else the desync report's, else monitored_barrier's
    if first:
        said, src = evidence(first["evidence"]), first["src"]
    elif st.desync_timeout:
        said, src = "", st.desync_timeout[0][3]
    else:
        said, src = evidence(st.barrier_missing[0][3]), st.barrier_missing[0][2]
    if st.stall_reported and not first and not st.desync_timeout:
        head = "Horovod's stall inspector: ranks submitted a collective more than %d s ago and wait for the rest" % (
            st.barrier_missing[0][1] // 1000)
    else:
        head = "%d rank(s) timed out in %s" % (len(job["timed_out_ranks"]), c.get("op") or "a collective")
    return finding(
        kind,
        "%s%s%s; %s%s." % (
            head,
            " SeqNum %s" % c["seq"] if c.get("seq") is not None else "",
            (" of %d" % world) if world else "", cul,
            ("; cause: %s" % cause["kind"]) if cause else ""),
        category=category, note=note, evidence=said, source=src, rank=r0, gpu=gpu)


def dedupe(findings):
    """One finding per (kind, rank) -- per message for network errors and for an emitter's
    messages of a generic kind (logged_*: Slurm's cancel and a task's exit are both logged_error),
    per traceback for exceptions -- and at most MAX_FINDINGS_PER_KIND of a kind."""
    out, seen, per_kind = [], set(), Counter()
    for f in findings:
        key = (f["kind"], f["rank"], f["evidence"][:200] if f["kind"] == "python_exception" else None,
               f["message"] if f["kind"] in ("ib_completion_error", "nccl_peer_connection_error")
               or (f.get("name") and f["kind"].startswith("logged_")) else None)
        if key in seen:
            continue
        seen.add(key)
        per_kind[f["kind"]] += 1
        if per_kind[f["kind"]] > MAX_FINDINGS_PER_KIND:
            continue
        out.append(f)
    return out
