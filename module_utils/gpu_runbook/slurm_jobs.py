# SPDX-License-Identifier: Apache-2.0
"""One job in ``squeue`` and what ``scontrol requeue`` / ``scancel`` said -> facts. Pure.

The ladder touches a job only when told (``-e hung_job=requeue|cancel``) and only the job the
incident is about (its id, on the node being drained): these helpers read squeue's line for it
and say whether it still holds the node. A requeue Slurm refuses (a job submitted with
``--no-requeue``, ``JobRequeue=0``, an interactive ``srun``/``salloc`` allocation: "Only batch jobs
are accepted or processed") is reported as such and never turned into a cancel.
"""

import re

from .slurm import expand_hostlist, slurm_error_kind

# squeue -h -j ID -o JOB_FORMAT: id, state (long form), nodes (hostlist), user, name, reason
JOB_FORMAT = "%i|%T|%N|%u|%j|%r"
_FIELDS = ("id", "state", "nodes", "user", "name", "reason")
_ID_RE = re.compile(r"^[0-9]{1,10}(?:_[0-9]{1,10})?$")
# states in which a job still holds its nodes (squeue(1) JOB STATE CODES)
ON_NODE = frozenset(("RUNNING", "COMPLETING", "SUSPENDED", "STOPPED", "CONFIGURING", "SIGNALING", "STAGE_OUT",
                     "RESIZING", "REQUEUE_FED", "REQUEUE_HOLD", "REQUEUED"))
ACTIONS = ("requeue", "cancel")


def job_id_problem(job_id, option="job_id"):
    """None, or why ``job_id`` is no Slurm job id (digits, or an array task as 123_4)."""
    text = "" if job_id is None else str(job_id).strip()
    if not _ID_RE.match(text):
        return "%s %r is not a Slurm job id (digits, or 123_4 for an array task)" % (option, text[:40])
    return None


def parse_squeue_jobs(text):
    """``squeue -h -o JOB_FORMAT`` -> [{"id", "state", "nodes": [names], "user", "name", "reason"}];
    a line that does not have the six fields is skipped (a name with '|' keeps its tail in name)."""
    out = []
    for line in (text or "").splitlines():
        cols = line.strip().split("|")
        if len(cols) < len(_FIELDS) or not cols[0].strip():
            continue
        row = dict(zip(_FIELDS[:4], (c.strip() for c in cols[:4])))
        row["name"] = "|".join(cols[4:-1]).strip()
        row["reason"] = cols[-1].strip()
        row["state"] = row["state"].upper()
        row["nodes"] = expand_hostlist(row["nodes"]) if row["nodes"] and row["nodes"] != "(null)" else []
        out.append(row)
    return out


def holds_node(job, node):
    """Whether the job (``parse_squeue_jobs`` row) still holds ``node``."""
    return bool(job) and job["state"] in ON_NODE and node in job["nodes"]


def find_hung_job(jobs, job_id, node):
    """(job, None) when the job is the one asked for and holds ``node``; (None, why) otherwise --
    ``why`` None when it is simply gone (finished, requeued and waiting): nothing to do."""
    job = next((j for j in jobs if j["id"] == str(job_id)), None)
    if job is None or job["state"] not in ON_NODE:
        return None, None
    if node not in job["nodes"]:
        return None, ("job %s (%s) runs on %s, not on %s: only the incident's job on the drained node is ever "
                      "touched" % (job["id"], job["state"], ",".join(job["nodes"]) or "no node", node))
    return job, None


def action_argv(action, job_id):
    """The Slurm command of ``action`` for one job (no shell)."""
    return ["scontrol", "requeue", str(job_id)] if action == "requeue" else ["scancel", str(job_id)]


def action_outcome(action, rc, text):
    """What ``scontrol requeue`` / ``scancel`` said -> {"outcome": "done" | "refused" | "denied" |
    "unreachable" | "failed", "said"}. A requeue Slurm refuses is "refused" (the caller never
    cancels instead)."""
    said = " ".join((text or "").split())[:300]
    if rc == 0:
        return {"outcome": "done", "said": said}
    kind = slurm_error_kind(said)
    if kind in ("denied", "unreachable"):
        return {"outcome": kind, "said": said}
    return {"outcome": "refused" if action == "requeue" else "failed", "said": said}


# sbatch's --output patterns: Slurm's default 'slurm-%j.out' (an array's 'slurm-%A_%a.out') and the
# '%x-%j.out' / '%x_%j.out' / '%x.%j.out' a job script asks for (%x: the job's name, %j: its id)
_OUTPUT_FILE_RE = re.compile(r"^(?P<name>[\w.\-]{1,200}?)[-_.](?P<id>\d{1,12})(?:_\d{1,6})?\.(?:out|err|log|txt)(?:\.gz)?$")


def job_from_output_names(names, job_id=None):
    """The job's id and name that its output files' names say, (id, name), each None when they do
    not: a name is a hint, so 'slurm-<id>.out' gives an id only when nothing else named one and
    '<name>-<id>.out' a name only when <id> is the job's own (``job_id``, from Slurm or its lines):
    'rank-3.log' names no job 3."""
    found = {}
    for path in names or ():
        m = _OUTPUT_FILE_RE.match(str(path).replace("\\", "/").rsplit("/", 1)[-1])
        if m:
            found.setdefault(m.group("id"), set()).add(m.group("name"))
    if job_id is None:
        slurm_ids = [i for i, prefixes in found.items() if "slurm" in prefixes]
        job_id = slurm_ids[0] if len(slurm_ids) == 1 else None
        return job_id, None
    named = sorted(n for n in found.get(str(job_id), ()) if n != "slurm")
    return str(job_id), named[0] if len(named) == 1 else None
