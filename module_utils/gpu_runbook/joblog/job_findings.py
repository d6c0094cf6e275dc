# SPDX-License-Identifier: Apache-2.0
"""The findings of a whole job: one per error event, then what only the whole job shows (a
stuck watchdog, NCCL's transport configuration, a falling iteration rate, an early
failure) and last the collective timeout itself, which names its cause. Kinds:
taxonomy/kinds_job.py."""

from collections import Counter

from ..findings import finding, gpu_ref, rank_key
from . import nccl_tests
from . import emitter_lines, pyspy
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
    said = emitter_lines.findings(st, findings)  # what only an emitter's vocabulary explains
    # 'RuntimeError: Too many open files. ...' is PyTorch's DataLoader speaking through an exception:
    # its message, classified, replaces the bare exception that raised it
    restated = set(f.get("evidence") for f in said if f.get("severity") in ("warning", "critical"))
    findings = [f for f in findings if not (f["kind"] == "python_exception" and f.get("evidence") in restated)]
    findings.extend(said)
    _devices_skipped(findings, st)
    findings.extend(emitter_lines.sacct_findings(st)[0])
    if trend == "falling":
        findings.append(_falling_rate(st, job["iteration_rate"]["by_epoch"]))
    early = _early_failure(st, job, last_prog, findings)
    if early is not None:
        findings.append(early)
    if st.timeouts or st.desync_timeout:
        findings.append(_timeout(st, job, findings))
    if job["training"] and not job["success"] and not any(f["severity"] in ("warning", "critical")
                                                           for f in findings):
        findings.append(_end_unknown(st))
    return dedupe(findings)


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
    return [finding(
        "nccl_watchdog_stuck",
        "rank %s: the NCCL watchdog itself got stuck, which means a CUDA/NCCL call hung inside the "
        "driver on that process." % s["rank"],
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
    if _first_collective(job) and not any(f["severity"] == "critical" for f in findings):
        return None  # no data ever moved: the transport's question (nccl_watchdog_timeout_first), not the code's
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


def _timeout_kind(cause, job):
    """(kind, category) of the timeout finding: its cause's remedy, else what the phase and
    the culprit's host say."""
    if cause is not None and cause["rung"] in _TIMEOUT_KIND_BY_RUNG:
        return _TIMEOUT_KIND_BY_RUNG[cause["rung"]], cause["category"]
    if _first_collective(job):
        return "nccl_watchdog_timeout_first", "unknown"
    if job["phase"] == "early":
        return "nccl_watchdog_timeout_early", "application"
    if job["culprit_hosts"] or job["phase"] == "late":
        return "nccl_watchdog_timeout", "nccl_deadlock"
    return "nccl_watchdog_timeout_unexplained", "nccl_deadlock"


def _timeout(st, job, findings):
    """The watchdog timeout itself: which collective, who was waited for, and why."""
    culprits, hosts, rank_map = job["culprit_ranks"], job["culprit_hosts"], job["rank_map"]
    first = st.timeouts[0] if st.timeouts else None
    cause = _cause(findings, culprits)
    kind, category = _timeout_kind(cause, job)
    c = job["collective"] or {}
    world = job["world_size"]
    cul = ("culprit rank(s) %s on %s (%s)" % (
        ",".join(str(r) for r in culprits), ",".join(hosts) or "unknown host", job["culprit_evidence"])
        if culprits else "culprit not identified")
    r0 = culprits[0] if culprits else None
    gpu = None
    if r0 is not None and (rank_map.get(r0) or {}).get("gpu_pci"):
        gpu = gpu_ref(rank_map[r0]["gpu_pci"], rank_map[r0].get("local_rank"))
    # which host to drain is the point of a drain: name it in every language
    note = "Culprit host(s): %s." % ", ".join(hosts) if kind == "nccl_watchdog_timeout" and hosts else None
    return finding(
        kind,
        "%d rank(s) timed out in %s SeqNum %s%s; %s%s." % (
            len(job["timed_out_ranks"]), c.get("op") or "a collective", c.get("seq"),
            (" of %d" % world) if world else "", cul,
            ("; cause: %s" % cause["kind"]) if cause else ""),
        category=category, note=note,
        evidence=evidence(first["evidence"]) if first else "",
        source=first["src"] if first else st.desync_timeout[0][3], rank=r0, gpu=gpu)


def dedupe(findings):
    """One finding per (kind, rank) -- per message for network errors, per traceback for
    exceptions -- and at most MAX_FINDINGS_PER_KIND of a kind."""
    out, seen, per_kind = [], set(), Counter()
    for f in findings:
        key = (f["kind"], f["rank"], f["evidence"][:200] if f["kind"] == "python_exception" else None,
               f["message"] if f["kind"] in ("ib_completion_error", "nccl_peer_connection_error")
               or f.get("name") == "py-spy" else None)
        if key in seen:
            continue
        seen.add(key)
        per_kind[f["kind"]] += 1
        if per_kind[f["kind"]] > MAX_FINDINGS_PER_KIND:
            continue
        out.append(f)
    return out
