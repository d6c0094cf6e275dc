# SPDX-License-Identifier: Apache-2.0
"""A job's verdict from what its logs say (cluster.join_job gives it the findings that explain its
culprit ranks): one cause order for the whole engine (verdict.rank_key); a hang only with ranks that
waited; healthy only when the run said it ended well, or NCCL's own tests and set-up ran to their end."""

from .verdict import code_error, rank_key


# Categories that name a cause of the job's failure (the others -- a hang, an application
# error, an unknown -- say that it failed, not why).
_CAUSES = ("gpu_hardware", "driver", "ib_network", "dataloader", "memory_leak", "nccl_config")


def job_verdict(job, culprits, explanations, hosts_sick=False):
    """(the job's cause, the finding that decided it or None), ranked once by the one order
    (verdict.rank_key) over what explains its culprit ranks and the job's own findings.
    Without a cause the failure phase is weighed as the field does: a falling iteration rate
    leans to a leak, erratic stalls to the DataLoader, an early failure to code, a late hang
    with a silent rank to the node. A hang (nccl_deadlock) needs ranks that waited; a job whose
    logs hold no failure is healthy only when they also say it ended well (or, for NCCL's own
    tests and a communicator's setup, that it ran to its end). ``hosts_sick``: a host given beside the
    logs has a warning or worse (what the ranks may have waited for)."""
    found = list(explanations) + list(job.get("findings") or [])
    # a critical application finding (mismatched collectives, an illegal memory access on the
    # culprit's GPU) is a cause; a plain traceback (a warning) is not
    serious = [f for f in found
               if (f["severity"] in ("warning", "critical") and f["category"] in _CAUSES)
               or (f["severity"] == "critical" and f["category"] == "application")]
    bug = next((f for f in found if f["kind"] == "python_exception" and code_error(f)), None)
    # a process's exit alone (no trainer said the run ended well) leaves a line nobody explains unexplained
    exit_only = all(s.get("end") == "exit" for s in job.get("success") or ())
    if job.get("success") and bug is None and not culprits and not any(
            f["severity"] == "critical" or (f["severity"] == "warning" and f["category"] != "nccl_config"
                                             and (f["kind"] != "unexplained_errors" or exit_only)
                                             and not _went_on_from(f, job["success"])) for f in found):
        # the run said it ended well and nothing failed: what warned of NCCL's set-up (SHARP not set up, a
        # mixed NIC list) or a line nobody explains (a message at teardown) is advice for the next run, not
        # why this one failed; a task that failed or a step cancelled (Slurm's words) still is
        return "healthy", None
    if serious:
        top = max(serious, key=rank_key)
        return top["category"], top
    if bug is not None:  # a rank died of the code's own error; ranks that waited for it waited for a dead rank
        return "application", bug
    first = next((f for f in found if f["kind"] in ("nccl_watchdog_timeout_first", "nccl_watchdog_timeout_stalled")),
                 None)
    if first is not None:  # the first transfer never completed: no phase makes that the code's
        return "unknown", first
    trend = (job.get("iteration_rate") or {}).get("trend")
    if trend == "falling":
        return "memory_leak", None
    if trend == "erratic":
        return "dataloader", None
    dumps = job.get("pyspy") or {}
    # ranks that waited: their watchdogs timed out, or py-spy found them in a collective; a culprit
    # may be a rank, or a dumped process elsewhere whose rank no line names
    waited = job.get("timed_out_ranks") or dumps.get("waiting") or job.get("stall_waited")
    named = bool(culprits or dumps.get("elsewhere"))
    failing = [f for f in found if f["severity"] in ("warning", "critical")]
    # early is a phase of a failure: a log that only stops early (no error, no rank waiting) is not one;
    # a failure that began inside NCCL (its error trail) is NCCL's or the network's, not the code's
    nccl_own = any(f["kind"] in ("nccl_error_trace", "nccl_error") for f in found)  # its trail, or an ncclResult_t
    if job.get("phase") == "early" and not nccl_own and (
            waited or named or [f for f in failing if f["kind"] not in ("job_end_unknown", "nccl_init_incomplete")]):
        return "application", None
    if named and waited:
        return "nccl_deadlock", None
    hang = [f for f in failing if f["kind"] == "pyspy_collective_wait"]
    if hang and len(hang) == len(failing) and not hosts_sick:
        # the dumped ranks wait in a collective and nothing else failed, here or on a host given: a hang in
        # NCCL, like a watchdog's timeout without a culprit (nccl_watchdog_timeout_unexplained)
        return "nccl_deadlock", hang[0]
    if waited or failing or named:
        return "unknown", max(failing, key=rank_key) if failing else None
    if _ended_well(job):
        return "healthy", None
    return ("unknown" if _job_logs_read(job) or job.get("training") else None), None


def _went_on_from(f, success):
    """A warning the run went on from: its line is earlier in the file in which the run's trainer later said
    it ended well (a time limit that a requeued run resumed from, a set-up warning it ran past). The run's
    own later words outweigh it; a failure after them, or in another rank's file, still counts."""
    where = _file_line(f.get("source"))
    if where is None:
        return False
    for s in success:
        said = _file_line(s.get("src")) if s.get("end", "said") == "said" else None
        if said is not None and said[0] == where[0] and where[1] < said[1]:
            return True
    return False


def _file_line(src):
    """('host/file', line) of a 'host/file:N' source, else None."""
    name, _sep, line = (src or "").rpartition(":")
    return (name, int(line)) if name and line.isdigit() else None


def _ended_well(job):
    """The job's logs say it ended well: its trainer or launcher said so; or they are NCCL's
    own (a communicator's setup, nccl-tests) and say nothing wrong. A training run's log that
    just stops (progress, no end, no error) did not say it ended well: unknown."""
    if job.get("success"):
        return True
    if job.get("training"):
        return False
    if any("NCCL WARN" in (f.get("evidence") or "") for f in job.get("findings") or ()):
        return False  # NCCL warned (a device it skipped ...): it went on, which is not an end said well
    return _job_logs_read(job)


def _job_logs_read(job):
    """The job's logs said something about the run (its ranks, its network, NCCL's version):
    with nothing wrong in them, the job is healthy -- a claim its evidence supports."""
    nccl = job.get("nccl") or {}
    # an nccl-tests run that printed its end summary ran to its end (a cut-off one has its own
    # finding); result rows with nothing wrong are sizes that ran and validated
    tests = job.get("nccl_tests") or {}
    return bool(job.get("world_size") or job.get("rank_map") or nccl.get("version")
                or nccl.get("transport") not in (None, "unknown")
                or tests.get("complete") or (tests.get("result_rows") and not tests.get("wrong_rows")))
