# SPDX-License-Identifier: Apache-2.0
"""The one orchestration, from every host's gather (and the job's logs) to the analysis,
the console lines and the workflow summary. The CLI and the playbook's report step both
call it, so offline and live diagnoses cannot drift apart."""

from .cluster import build_cluster
from .render import render_lines, summary_counts


def diagnose(results, job_logs=None, slurm_job=None, log_problems=None, since=None, generated=None,
             keep_facts=False, job_workers=None, loose_lines=None, offline=False):
    """results: {host: registered gpu_health_facts result (or unreachable/failed)};
    job_logs: {name: text or line source (textio.TextLines: streamed, never held whole)} of
    the job's logs; slurm_job: gpu_runbook_job's ``job``; job_workers: processes that read the
    job's logs ahead (joblog/parallel.py: the same result, sooner on several cores).
    -> analysis (schema v1) with the job joined and the cluster section."""
    job = None
    slurm_job = slurm_job or {}
    if not (job_logs or slurm_job) and loose_lines is not None:
        loose_lines(results, [], {})
    if job_logs or slurm_job:
        from .joblog import loose, parse_job_logs, read_anything
        parsed, job_findings = parse_job_logs(job_logs or {}, since=since or slurm_job.get("start"),
                                              workers=job_workers)
        # every text of a capture is offered to the job-log reader: one that held no line of
        # a job is no job (a kernel log, an nvidia-smi paste)
        held_a_job = slurm_job or log_problems or read_anything(parsed, job_findings)
        if loose_lines is not None:
            loose_lines(results, [] if held_a_job else loose(job_findings), parsed.get("files_read") or {})
        if held_a_job or (loose_lines is None and loose(job_findings)):
            from .slurm_jobs import job_from_output_names
            said = slurm_job.get("job_id") or parsed.get("logged_job_id")
            job_id, job_name = job_from_output_names(list(job_logs or {}), said)
            job = dict(parsed, findings=job_findings, job_id=said or job_id,
                       job_name=slurm_job.get("name") or job_name,
                       slurm=slurm_job or None, log_problems=list(log_problems or []))
    return build_cluster(results, job=job, generated=generated, keep_facts=keep_facts, offline=offline)


def console_lines(analysis, lang="en", report_path=None):
    """What the playbook prints: the job and its culprit chain (in job mode), one line per
    suspect host with the finding behind its next step, the cluster's findings, the healthy
    hosts in one line, one summary count line, and ``report_path`` last when reports were written."""
    return render_lines(analysis, lang, verbose=False, report_path=report_path)


def summary(analysis):
    """What an AWX workflow branches on (set_stats)."""
    hosts, cluster, job = analysis["hosts"], analysis["cluster"], analysis["job"] or {}
    counts = summary_counts(hosts)
    return {
        "hosts": counts["n"], "critical": counts["crit"], "warning": counts["warn"], "healthy": counts["ok"],
        "suspects": cluster["suspects"], "remediate": cluster["remediate"],
        "verdicts": {h["host"]: {"verdict": h["verdict"], "rung": h["rung"]}
                     for h in hosts if h["host"] in cluster["suspects"]},
        "job_verdict": job.get("verdict"),
        "culprit_hosts": [c["host"] for c in job.get("culprits") or [] if c.get("host")],
    }
