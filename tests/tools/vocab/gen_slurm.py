#!/usr/bin/env python3
"""Generate module_utils/gpu_runbook/vocab/slurm.py: the messages Slurm prints about jobs and
nodes failing, read from SchedMD's own source at a pinned tag.

Usage (from the repository root)::

    # get the source: a clone or bare mirror of https://github.com/SchedMD/slurm
    git clone --bare https://github.com/SchedMD/slurm.git /tmp/slurm.git
    .venv/bin/python tests/tools/vocab/gen_slurm.py --src /tmp/slurm.git [--rev slurm-26-05-3-1]

``--rev`` defaults to the pin (tag slurm-26-05-3-1 = 56fe86788403); a handful of famous
messages that changed wording recently are also read from the older tags named in LEGACY
(skipped with a note when the source lacks them). The output is deterministic: the same
source and pin give the same module byte for byte.

What is read (ROWS), each an ``error(``/``fatal(``/``warning(`` call (``info(`` only where it
reports a job or node event), with the file and line of the call:

- src/srun/** and src/api/step_launch.c (srun's step launch, in libslurm);
- src/slurmd/** (slurmd, slurmstepd and their common code);
- src/slurmctld/**: only the messages about nodes and jobs failing (files about nodes, jobs,
  agents, prologs; other files only by keyword), see SLURMCTLD_*;
- plugins: task/cgroup, jobacct_gather (and its interface src/interfaces/jobacct_gather.c),
  gres/gpu, gpu/nvml;
- derived rows (DERIVED): a logged argument whose values are literals in the source (srun's
  "task"/"tasks" and the signal names of strsignal(), drain reasons built from
  slurm_strerror(), the gres/gpu reasons); each says so in its meaning;
- ``scontrol show node`` drain/down reasons ("Reason=Not responding [slurm@...]"), the
  reasons slurmctld/slurmd set (drain_nodes, set_node_down, stepd_drain_node, reason_down);
- ``scontrol show job`` states and reasons ("JobState=NODE_FAIL Reason=%s",
  "JobState=%s Reason=NodeDown") from src/common/slurm_protocol_defs.c job_state_string()
  and src/common/job_state_reason.c; sacct's "CANCELLED by %u".

CODES: slurm_errtab (src/common/slurm_errno.c, numbers from slurm/slurm_errno.h), printed
by the clients as CODE_FORMATS (srun/salloc, sbatch, squeue/scontrol).
"""

import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(HERE))), "module_utils"))

from common import join_literals, ls_files, resolve, show, write_table  # noqa: E402
from gpu_runbook.vocab import matchable  # noqa: E402

PIN = "slurm-26-05-3-1"
GENERATOR = "tests/tools/vocab/gen_slurm.py"
ORIGIN = "https://github.com/SchedMD/slurm"
LICENCE = "GPL-2.0-or-later with the OpenSSL exception (COPYING)"
TS = "[2026-12-02T07:10:01.123]"

# ---------------------------------------------------------------------------------------------
# scope

SCOPE = ("src/srun", "src/api/step_launch.c", "src/slurmd", "src/slurmctld",
         "src/plugins/task/cgroup", "src/plugins/jobacct_gather", "src/interfaces/jobacct_gather.c",
         "src/plugins/gres/gpu", "src/plugins/gpu/nvml")

# slurmctld: every error/fatal of these files (nodes, agents to nodes, prologs, power save)
SLURMCTLD_ALL = ("node_mgr.c", "ping_nodes.c", "agent.c", "prep_slurmctld.c", "power_save.c", "backup.c")
# ... none of these (accounting, federation, reservations, licences, ... : not job/node failure)
SLURMCTLD_NONE = ("acct_policy.c", "fed_mgr.c", "reservation.c", "licenses.c", "partition_mgr.c",
                  "trigger_mgr.c", "http.c", "rate_limit.c", "crontab.c", "groups.c", "locks.c",
                  "rpc_queue.c", "state_save.c", "heartbeat.c", "slurmscriptd_protocol_pack.c",
                  "statistics.c", "gang.c")
# ... and from the other files the errors whose text is about a job or node event
SLURMCTLD_EVENT = re.compile(
    r"respond|NODE_FAIL|node fail|fail(?:ed|ure)? on|Kill task|drain|\bDOWN\b|\bdown\b|requeue|"
    r"epilog|prolog|health|reboot|ResumeTimeout|time ?limit|OOM|out of memory|memory|\bgres\b|gpu|"
    r"killing|killed|cancel|preempt|abort|launch|zombie|slurmd|registration|node %s|nodes %s|"
    r"unkillable|signal|complet|StateSaveLocation|lost|holding job", re.I)

# info(): only the messages that report a job or node event people grep for
INFO_EVENTS = re.compile(
    r"not responding|now responding|node failure|failed node|Killing %pJ|OOM failure|requeue job|"
    r"(?<!expedited )requeue %pJ|Requeue (?:het )?job|Requeue of JobId|to requeue|Time limit exhausted|"
    r"inactivity time limit|drain_nodes: node|\bDOWN\b|unexpectedly rebooted|(?:pro|epi)log for %pI ran for|"
    r"ResumeTimeout|preempted %pJ|exceeded (?:virtual )?memory limit|hit memory|Job step aborted|"
    r"Force Terminated|has been revoked|[Tt]erminating %ps|forcing job termination|job abort in progress|"
    r"First task exited|aborted before step|step creation (?:temporarily|still) disabled|Cancelled pending|"
    r"Expired or invalid job|slurmstepd startup took|not able to requeue|killed while launch|unkillable stepd|"
    r"died by signal|slurmd version %s started|slurmd started on|interrupt \(one more|sending Ctrl-C|"
    r"cancelled by")

LEVEL_PREFIX = {"error": "error: ", "fatal": "fatal: ", "fatal_abort": "fatal: ", "warning": "warning: ",
                "sched_error": "error: sched: ", "info": "", "sched_info": "sched: "}
CALL = re.compile(r"(?<![\w.>])(error|fatal|fatal_abort|info|warning|sched_error|sched_info)\s*\(")

# a few famous messages of the Slurm releases most clusters still run, read at older tags:
# (tag, path, literal that identifies the call); the row's file is "path@tag"
# and, where the old wording meant more than the new one, its own class (kind, severity, meaning)
LEGACY = (
    # until 24.11 the bare banner was printed both for scancel (SIGTERM/SIGKILL) and for SIG_TERM_KILL
    # (another task failed with --kill-on-bad-exit): not benign, a note
    ("slurm-24-11-7-1", "src/slurmd/slurmstepd/req.c", r"CANCELLED AT %s \*\*\*$",
     ("logged_error", "info", "the job/step was cancelled: by scancel (user/admin) or, when another task failed, "
                              "by Slurm (--kill-on-bad-exit); a cause, if any, is in the lines before")),
    ("slurm-24-11-7-1", "src/slurmd/slurmstepd/req.c", r"UNCORRECTABLE MEMORY ERROR AT %s", None),
    ("slurm-22-05-11-1", "src/plugins/task/cgroup/task_cgroup_memory.c", r"oom-kill event\(s\)", None),
)

LEGACY_DRAIN = "slurm-24-11-7-1"  # drain reason without "(JobId=...)" until this release

# Releases the field still runs (Slurm keeps about two years of them): every message of theirs that
# the pinned release words otherwise is a row too (file "path@tag"), so a 23.11 cluster's
# 'node %s not resumed by ResumeTimeout(%d) - marking down and power_save' is read as 26.05's
# 'node %s not resumed by ResumeTimeout(%d), setting DOWN and POWERED_DOWN' is
OLDER = ("slurm-24-11-7-1", "slurm-23-11-10-1", "slurm-23-02-7-1", "slurm-22-05-11-1")

TEMPLATES = (
    ("src/api/node_info.c", "{message}"),                     # scontrol show node
    ("src/api/", "srun: {message}"),
    ("src/srun/", "srun: {message}"),
    ("src/slurmd/slurmstepd/", "slurmstepd: {message}"),
    ("src/plugins/task/cgroup/", "slurmstepd: {message}"),     # loaded by slurmstepd
    ("src/plugins/jobacct_gather/", "slurmstepd: {message}"),  # loaded by slurmstepd
    ("src/interfaces/jobacct_gather.c", "slurmstepd: {message}"),
    ("src/slurmd/", TS + " {message}"),                       # slurmd.log (slurmd, slurmd/common)
    ("src/plugins/gres/gpu/", TS + " {message}"),             # slurmd (GPU detection)
    ("src/plugins/gpu/nvml/", TS + " {message}"),
    ("src/slurmctld/", TS + " {message}"),                    # slurmctld.log
    ("", "{message}"),                                        # scontrol/sacct output, codes
)

MARKERS = ("srun:", "slurmstepd", "slurmstepd:", "error:", "fatal:", "warning:", "sched:", "slurmd", "slurmctld",
           "JobState=", "Reason=", "CANCELLED by", "***",
           # slurmctld/slurmd info() events (no level word in the line)
           "not responding", "now responding", "node failure", "failed node", "Killing", "requeue",
           "Requeue", "Time limit exhausted", "time limit reached", "OOM failure", "drain_nodes",
           "unexpectedly rebooted", "exceeded memory limit", "exceeded virtual memory limit",
           "memory limit at least once", "memory+swap limit", "DOWN node", "epilog for", "prolog for",
           "preempted", "ResumeTimeout", "Exceeded job memory limit", "cancelled by",
           "unkillable stepd", "died by signal", "not able to requeue", "killed while launch")

# ---------------------------------------------------------------------------------------------
# classification: (where, levels, message regex, kind, category, severity, meaning); first wins.
# where: a path prefix ("" = any). levels: a set of call names or None (any).

# OOM: the job's own memory limit (--mem) killed a task: the job's size, as the engine's job-log reader
# (host_oom) and the held-out examiners read it; a leak only when memory grows over the run
U, NODE, OOM, APP, DRV, GPU = "logged_error", "logged_node_failure", "host_oom", \
    "logged_application_error", "logged_driver_error", "logged_gpu_error"
CAT = {U: "unknown", NODE: "unknown", OOM: "application", APP: "application", DRV: "driver", GPU: "gpu_hardware",
       "logged_memory_error": "memory_leak", "worker_sigkill": "unknown", "nvml_init_failed": "driver",
       "gpu_missing": "gpu_hardware", "host_memory_ue": "unknown", "benign": "healthy"}
ERR = {"error", "fatal", "fatal_abort", "warning", "sched_error"}
INFO = {"info", "sched_info"}

TIME_LIMIT_MEANING = ("the job reached its time limit: it either needed more time or hung until the limit "
                      "(look for an earlier stall: NCCL watchdog, no progress); not a fault by itself")
NODE_FAIL_MEANING = "Slurm says a node of the job failed (not responding / set DOWN): drain and check that node"
KILL_TASK_MEANING = ("processes of the step could not be killed (UnkillableStepTimeout): Slurm drains the node "
                     "'Kill task failed'; often a process stuck in the kernel (D state) in the GPU driver or a "
                     "filesystem: check the node before returning it")
OOM_MEANING = ("the job's memory cgroup killed a task: the job hit its own memory limit (--mem), "
               "not a node fault")
PROLOG_MEANING = ("a prolog/epilog script failed on the node: Slurm drains or downs the node; the script's "
                  "own log says why (often a node health check inside it)")
CTLD_UNREACHABLE = "the controller (slurmctld) could not be reached: controller down, overloaded or network"
AUTH_MEANING = ("authentication between Slurm daemons/clients failed: munge key, clock skew or cluster "
                "configuration, not the job")

RULES = (
    # --- the step/job banners of slurmstepd ("*** JOB 12 ON node1 CANCELLED AT ... ***")
    ("src/slurmd/slurmstepd/", ERR, r"DUE TO NODE FAILURE", NODE, "critical", NODE_FAIL_MEANING),
    ("src/slurmd/slurmstepd/", ERR, r"DUE TO TIME LIMIT", U, "warning", TIME_LIMIT_MEANING),
    ("src/slurmd/slurmstepd/", ERR, r"DUE TO PREEMPTION", "benign", "ok",
     "the job was preempted by a higher-priority job: a scheduling decision, not a fault"),
    ("src/slurmd/slurmstepd/", ERR, r"DUE TO JOB REQUEUE", U, "info",
     "the job was requeued: by a user/admin, or by Slurm after a node of the job failed (look for "
     "NODE_FAIL / 'not responding' at the same time)"),
    ("src/slurmd/slurmstepd/", ERR, r"DUE to SIGNAL|CANCELLED AT %s \*\*\*$", "benign", "ok",
     "the job was cancelled (scancel by its user or an admin): a decision, not a fault"),
    ("src/slurmd/slurmstepd/", ERR, r"DUE TO TASK FAILURE", U, "warning",
     "another task of the step failed and Slurm stopped the rest (--kill-on-bad-exit): the first "
     "failing task is the cause"),
    ("src/slurmd/slurmstepd/", ERR, r"FAILED \(non-zero exit code", U, "warning", ""),
    ("src/slurmd/slurmstepd/", ERR, r"UNCORRECTABLE MEMORY ERROR", "host_memory_ue", "critical",
     "the node reported an uncorrectable (host) memory error and Slurm cancelled the step"),
    ("src/slurmd/slurmstepd/", ERR, r"\*\*\* REASON:", U, "info", "the reason Slurm gives for the banner above"),
    ("src/slurmd/slurmstepd/", ERR, r"DUE TO JOB NOT ENDING WITH SIGNALS", NODE, "critical", KILL_TASK_MEANING),
    ("src/slurmd/slurmstepd/", ERR, r"DUE TO JOB NOT RUNNING", U, "warning",
     "the step was killed before it ran and its slurmstepd did not end in time: Slurm drains the node "
     "'Job step not running' (slow prolog or filesystem)"),
    ("src/slurmd/slurmstepd/", INFO, r"unkillable stepd", NODE, "critical", KILL_TASK_MEANING),
    # --- memory
    ("", None, r"oom.kill event", OOM, "critical", OOM_MEANING),
    ("", None, r"exceeded (?:virtual )?memory limit|Exceeded job memory limit", OOM, "critical",
     "Slurm's memory enforcement (job accounting poll) killed the step for exceeding its own limit "
     "(--mem): not a node fault"),
    ("", None, r"Out Of Memory|%pJ OOM failure", OOM, "critical", OOM_MEANING),
    ("src/plugins/task/cgroup/", INFO, r"hit memory", "logged_memory_error", "warning",
     "the step reached its memory cgroup limit at least once (memory.events): it may have been "
     "throttled or OOM-killed"),
    # --- srun: the job's view
    ("", None, r"Node failure on", NODE, "critical", NODE_FAIL_MEANING),
    ("src/api/step_launch.c", ERR, r"Cannot communicate with node|io error.* on node|"
     r"step missing and io error|can not test connection to node", NODE, "critical",
     "srun lost its slurmstepd on a node (node died, rebooted or unreachable) and aborts the step"),
    ("src/api/step_launch.c", INFO, r"Job step aborted", U, "info",
     "srun is stopping the step after a task failed, a node failed or the job was cancelled: the cause "
     "is in the lines before"),
    ("", INFO, r"Force Terminated|forcing job termination|job abort in progress|[Tt]erminating %ps", U, "info",
     "srun was told the job or step ended (cancelled, time limit, node failure): not a cause by itself"),
    ("src/srun/", ERR, r": Killed", "worker_sigkill", "warning",
     "a task was killed by SIGKILL: OOM killer, Slurm's memory limit, time limit/cancel escalation or an "
     "operator (look at the lines before)"),
    ("src/srun/", ERR, r": Terminated", U, "warning",
     "a task was stopped by SIGTERM: usually Slurm ending the step (cancel, time limit, another task failed)"),
    ("src/srun/", ERR, r": (?:Segmentation fault|Aborted|Bus error|Illegal instruction|Floating point exception)",
     U, "warning", "a task died of a signal: a crash of the program or a library it uses (the task's own "
                   "output says which)"),
    ("src/srun/", ERR, r"Exited with exit code", U, "warning",
     "a task exited non-zero: the task's own output says why"),
    ("src/srun/", None, r"has been revoked|Expired or invalid job", U, "warning",
     "the job's allocation was revoked by the controller (cancelled, node failure or time limit)"),
    ("", None, r"Slurm controller not responding|Unable to contact slurm controller|"
     r"Unable to establish controller", U, "warning", CTLD_UNREACHABLE),
    # srun's own warning() in opt.c: it adjusted the request itself (fewer nodes, ignored --ntasks-per-node)
    # and runs the step
    ("src/srun/opt.c", {"warning"}, r"", "benign", "ok",
     "srun adjusted the request itself (nodes, tasks per node) and runs the step"),
    ("src/srun/opt.c", None, r"", APP, "warning", "the job's srun options are invalid"),
    ("src/srun/multi_prog.c", None, r"", APP, "warning", "the job's --multi-prog configuration is invalid"),
    ("src/slurmd/slurmstepd/multi_prog.c", None, r"", APP, "warning",
     "the job's --multi-prog configuration is invalid"),
    ("src/slurmd/slurmstepd/task.c", ERR, r"No executable program specified", APP, "warning",
     "the job's --multi-prog configuration is invalid"),
    ("src/slurmd/slurmstepd/task.c", ERR, r"execve\(\)", APP, "warning",
     "the job's program could not be executed (not found, not executable, bad interpreter)"),
    # --- node health, prolog/epilog, drains
    ("src/slurmd/slurmd/slurmd.c", ERR, r"health_check failed", NODE, "critical",
     "the node's HealthCheckProgram (e.g. NHC) failed: the health checker says this node is unhealthy"),
    ("src/slurmd/slurmd/slurmd.c", ERR, r"health_check", U, "warning",
     "the node's HealthCheckProgram did not complete (killed or not run): the node's health is unknown"),
    ("src/srun/", None, r"[Pp]rolog|[Ee]pilog", U, "warning",
     "srun's --prolog/--epilog (or SrunProlog/SrunEpilog) script failed"),
    ("src/slurmd/slurmstepd/", None, r"[Tt]ask-?[Pp]rolog|[Tt]ask-?[Ee]pilog", U, "warning",
     "a task prolog/epilog script failed (TaskProlog/TaskEpilog of slurm.conf or the job's --task-prolog)"),
    ("", INFO, r"(?:pro|epi)log for %pI ran for", U, "info",
     "a prolog/epilog took long: a slow or hung node script or filesystem"),
    ("", None, r"[Pp]rolog|[Ee]pilog", U, "warning", PROLOG_MEANING),
    ("src/slurmd/", None, r"slurmstepd startup took", U, "warning",
     "slurmstepd started slowly: slow or hung filesystem, or the node is short of memory"),
    ("src/slurmd/slurmd/slurmd.c", INFO, r"slurmd version %s started|slurmd started on", "benign", "ok",
     "slurmd (re)started: a service start, not a fault"),
    ("src/srun/", INFO, r"sending Ctrl-C|interrupt \(one more", "benign", "ok",
     "the user interrupted srun (Ctrl-C): an operator action, not a fault"),
    ("src/slurmd/", INFO, r"died by signal", U, "info", "a task of the step died of a signal"),
    # --- slurmctld: nodes and jobs failing
    ("src/slurmctld/", None, r"not responding, setting DOWN|setting DOWN and POWERED_DOWN|not resumed by ResumeTimeout",
     NODE, "critical",
     NODE_FAIL_MEANING),
    ("src/slurmctld/backup.c", None, r"not responding", U, "warning",
     "the primary controller stopped answering and the backup takes over"),
    ("src/slurmctld/", None, r"Nodes %s not responding", NODE, "warning",
     "slurmctld lost contact with the nodes; after SlurmdTimeout they are set DOWN (NODE_FAIL)"),
    ("src/slurmctld/", INFO, r"now responding", "benign", "ok", "the node answers slurmctld again"),
    ("src/slurmctld/", None, r"sent from wrong node", U, "warning", ""),
    ("src/slurmctld/", None, r"failure of node|failed node|cancelled by node failure|due to node failure|"
     r"on DOWN node|Removing failed node|unexpectedly rebooted|nodes not responding", NODE, "critical",
     NODE_FAIL_MEANING),
    ("src/slurmctld/", None, r"Kill task failed", NODE, "critical", KILL_TASK_MEANING),
    ("src/slurmctld/", None, r"Time limit exhausted|inactivity time limit", U, "warning", TIME_LIMIT_MEANING),
    ("src/slurmctld/", INFO, r"preempted %pJ has been", "benign", "ok",
     "a job was preempted by a higher-priority job: a scheduling decision, not a fault"),
    ("src/slurmctld/", INFO, r"requeue %pJ per user/system request", "benign", "ok",
     "a user or admin requeued the job"),
    ("src/slurmctld/", INFO, r"cancelled by interactive user", "benign", "ok", "the user cancelled the job"),
    ("src/slurmctld/", None, r"drain_nodes: node %s state set to DRAIN", U, "info",
     "a node was drained (the reason is in 'scontrol show node')"),
    ("src/slurmctld/", None, r"state to INVAL", U, "warning",
     "the node registered with less hardware than configured (memory, CPUs, GRES...): it is drained "
     "with that reason"),
    # --- GPUs (gres/gpu, gpu/nvml)
    ("src/plugins/gpu/nvml/", None, r"Failed to initialize NVML", "nvml_init_failed", "critical",
     "slurmd could not initialise NVML: the NVIDIA driver or a GPU is wedged (GPU autodetection failed)"),
    ("src/plugins/gpu/nvml/", None, r"", DRV, "warning",
     "slurmd's NVML GPU plugin failed a query or a setting: driver/NVML state of the node's GPUs"),
    ("src/plugins/gres/gpu/", None, r"", U, "warning",
     "the node's GPU GRES configuration (gres.conf/slurm.conf) does not match the GPUs found"),
    # --- auth/credentials: cluster configuration
    ("", ERR, r"[Ss]ecurity violation|credential|[Aa]uthentication|munge", U, "warning", AUTH_MEANING),
    # --- defaults
    ("", {"fatal", "fatal_abort"}, r"", U, "critical", "the daemon exits"),
    ("", ERR, r"", U, "warning", ""),
    ("", INFO, r"", U, "info", ""),
)


def classify(path, level, message):
    for where, levels, pattern, kind, severity, meaning in RULES:
        if not path.startswith(where) or (levels is not None and level not in levels):
            continue
        if pattern and not re.search(pattern, message):
            continue
        if kind == "benign":
            return "benign", "healthy", "ok", meaning
        if level in ("fatal", "fatal_abort"):
            severity = "critical"  # the daemon exits
        return kind, CAT[kind], severity, meaning
    raise AssertionError("no rule for %s %s %r" % (path, level, message))


# ---------------------------------------------------------------------------------------------
# C source reading

def strip_comments(text):
    """``text`` with C comments blanked (newlines kept, so line numbers hold)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def call_args(text, open_paren):
    """The top-level arguments of the call whose '(' is at ``open_paren``."""
    depth, i, n, args, cur = 0, open_paren, len(text), [], open_paren + 1
    while i < n:
        c = text[i]
        if c in "\"'":
            i += 1
            while i < n and text[i] != c:
                i += 2 if text[i] == "\\" else 1
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append(text[cur:i])
                return args
        elif c == "," and depth == 1:
            args.append(text[cur:i])
            cur = i + 1
        i += 1
    return None


def literal_arg(expr):
    """The joined C literal of an argument made only of literals (and PRI macros), else None."""
    expr = expr.strip()
    rest = re.sub(r'"(?:[^"\\\n]|\\.)*"', "", expr)
    rest = re.sub(r"\bPRI[a-zA-Z0-9]+\b", "", rest).strip()
    return join_literals(expr) if not rest else None


def calls(text, names):
    """(name, line, args) of every call of ``names`` in comment-stripped ``text``."""
    pattern = re.compile(r"(?<![\w.>])(%s)\s*\(" % "|".join(names))
    for m in pattern.finditer(text):
        before = text[text.rfind("\n", 0, m.start()) + 1:m.start()]
        if re.search(r"\b(void|int|extern|static|define|char)\b", before):
            continue  # a declaration or definition
        args = call_args(text, m.end() - 1)
        if args:
            yield m.group(1), text.count("\n", 0, m.start()) + 1, args


def line_of(text, anchor, start=0):
    at = text.find(anchor, start)
    if at < 0:
        raise SystemExit("anchor %r not found: the source moved, update the generator" % anchor)
    return text.count("\n", 0, at) + 1


def in_scope(path):
    if not path.endswith(".c"):
        return False
    if path.startswith("src/slurmctld/"):
        return os.path.basename(path) not in SLURMCTLD_NONE
    return True


def wanted(path, level, message):
    if level in INFO:
        return bool(INFO_EVENTS.search(message))
    if path.startswith("src/slurmctld/") and os.path.basename(path) not in SLURMCTLD_ALL:
        return bool(SLURMCTLD_EVENT.search(message))
    return True


def level_format(level, message):
    """The message as log.c prints it: its level word ("error: ", "fatal: ", ...) first, when
    the message alone has enough literal text to be told from other lines (a message too
    short to match stays as written, unmatchable: the level word must not make it match)."""
    if matchable(message) or message in LEVEL_WORD_ALWAYS:
        return LEVEL_PREFIX[level] + message
    return message


# short messages that are distinctive with their level word (the rest stay unmatchable)
LEVEL_WORD_ALWAYS = (
    "execve(): %s: %m",  # slurmstepd: error: execve(): python: No such file or directory
)


def message_rows(src, rev):
    rows, skipped = [], []
    for path in ls_files(src, rev, *SCOPE):
        if not in_scope(path):
            continue
        text = strip_comments(show(src, rev, path))
        for level, line, args in calls(text, list(LEVEL_PREFIX)):
            message = literal_arg(args[0])
            if message is None:
                skipped.append("%s:%d %s(%s)" % (path, line, level, args[0].strip()[:40]))
                continue
            if not wanted(path, level, message):
                continue
            kind, category, severity, meaning = classify(path, level, message)
            rows.append((path, line, level_format(level, message), kind, category, severity, meaning))
    return rows, skipped


def legacy_rows(src):
    rows, notes = [], []
    for tag, path, pattern, own in LEGACY:
        try:
            text = strip_comments(show(src, resolve(src, tag), path))
        except Exception:  # noqa: BLE001 - an older tag is optional
            notes.append("legacy tag %s not in the source: skipped" % tag)
            continue
        found = 0
        for level, line, args in calls(text, ["error"]):
            message = literal_arg(args[0])
            if not message or not re.search(pattern, message):
                continue
            kind, category, severity, meaning = classify(path, level, message)
            if own:
                kind, severity, meaning = own
                category = CAT[kind]
            release = ".".join(tag.split("-")[1:3])
            meaning = "%s (Slurm %s and older)" % (meaning, release) if meaning else "Slurm %s and older" % release
            rows.append(("%s@%s" % (path, tag), line, level_format(level, message), kind, category, severity,
                         meaning))
            found += 1
        if not found:
            raise SystemExit("legacy message /%s/ not found at %s:%s" % (pattern, tag, path))
    return rows, notes


# ---------------------------------------------------------------------------------------------
# derived rows: a logged argument whose values are literals in the source

SIGNALS = (  # glibc strsignal() text of the signals a task commonly dies of
    "Killed", "Terminated", "Segmentation fault", "Aborted", "Bus error", "Illegal instruction",
    "Floating point exception")


def derived_rows(src, rev):
    rows = []

    def add(path, anchor, level, message, note, kind=None, severity=None, meaning=None):
        text = show(src, rev, path)
        line = line_of(text, anchor)
        k, c, s, m = classify(path, level, message)
        if kind:
            k, c = kind, CAT[kind]
            s, m = severity, meaning
        m = (m + " " if m else "") + "(" + note + ")"
        rows.append((path, line, level_format(level, message), k, c, s, m))

    # srun allocate.c: error("%s", msg) with msg one of two literals
    for literal in ("Slurm controller not responding, sleeping and retrying.",
                    "Slurm job queue full, sleeping and retrying."):
        add("src/srun/allocate.c", '"' + literal[:30], "error", literal, "error(\"%s\", msg) with this msg")
    # srun launch.c _task_finish(): "%s: %s %s: ..." with task_str "task" or "tasks"
    for task in ("task", "tasks"):
        add("src/srun/launch.c", '"%s: %s %s: Out Of Memory"', "error", "%%s: %s %%s: Out Of Memory" % task,
            "task_str is \"%s\"" % task)
        add("src/srun/launch.c", '"%s: %s %s: Exited with exit code %d"', "error",
            "%%s: %s %%s: Exited with exit code %%d" % task, "task_str is \"%s\"" % task)
        for sig in SIGNALS:
            add("src/srun/launch.c", 'error("%s: %s %s: %s%s"', "error", "%%s: %s %%s: %s%%s" % (task, sig),
                "task_str is \"%s\", the signal's strsignal() text \"%s\"" % (task, sig))
    # slurmctld: slurmd's step completion error drains the node; the text is slurm_strerror(rc)
    add("src/slurmctld/proc_req.c", '"slurmd error running %pI on Node(s)=%s: %s"', "error",
        "slurmd error running %pI on Node(s)=%s: Kill task failed",
        "slurm_strerror(ESLURMD_KILL_TASK_FAILED); the node is drained 'batch job complete failure'")
    # slurmctld: a node registering fewer GPUs than configured is set INVAL/drained with this reason
    for reason, anchor in (("gres/gpu count reported lower than configured (%lu < %lu)", '"%s count reported lower'),
                           ("gres/gpu count too low (%lu < %lu)", '"%s count too low (%"PRIu64'),
                           ("gres/gpu:%s count too low (%lu < %lu)", '"%s:%s count too low (%"PRIu64')):
        line_of(show(src, rev, "src/interfaces/gres.c"), anchor)  # the reason text is still there
        add("src/slurmctld/node_mgr.c", '"Setting node %s state to INVAL with reason:%s"', "error",
            "Setting node %%s state to INVAL with reason:%s" % reason,
            "reason from src/interfaces/gres.c with gres \"gres/gpu\"", "gpu_missing", "critical",
            "the node registered fewer GPUs than configured: a GPU fell off the bus or was not enumerated")
    # srun: REQUEST_JOB_NOTIFY from the jobacct_gather memory enforcement, printed by srun (info)
    add("src/interfaces/jobacct_gather.c", '"Exceeded job memory limit"', "info", "Exceeded job memory limit",
        "sent to srun, which prints it as 'srun: Exceeded job memory limit'")
    return rows


# ---------------------------------------------------------------------------------------------
# scontrol show node: Reason=<reason> [user@time]

NODE_REASON_CLASS = (
    (r"^Not responding", NODE, "critical", NODE_FAIL_MEANING),
    (r"^Kill task failed", NODE, "critical", KILL_TASK_MEANING),
    (r"ResumeTimeout reached|reboot timed out", NODE, "critical",
     "the node did not come back (resume/reboot timed out): Slurm set it DOWN"),
    (r"^gres/gpu.*count (?:reported lower|too low)", "gpu_missing", "critical",
     "the node registered fewer GPUs than configured: a GPU fell off the bus or was not enumerated"),
    (r"[Pp]rolog|[Ee]pilog|Job env setup|batch job complete failure", U, "warning", PROLOG_MEANING),
    (r"^reboot requested", "benign", "ok", "an admin asked for a reboot (scontrol reboot)"),
    (r"", U, "warning", "Slurm drained or downed the node with this reason"),
)


def node_reason_rows(src, rev):
    """The reasons Slurm itself sets on a node, as scontrol show node prints them."""
    printer = "src/api/node_info.c"
    print_line = line_of(show(src, rev, printer), 'xstrcat(out, "Reason=")')
    reasons = []
    for path in ls_files(src, rev, "src/slurmctld", "src/slurmd"):
        if not path.endswith(".c"):
            continue
        text = strip_comments(show(src, rev, path))
        for name, line, args in calls(text, ["drain_nodes", "set_node_down", "set_node_down_ptr",
                                             "stepd_drain_node"]):
            arg = args[0] if name == "stepd_drain_node" else (args[1] if len(args) > 1 else "")
            lit = literal_arg(arg)
            if lit:
                reasons.append((path, line, lit))
        for name, line, args in calls(text, ["xstrcat", "xstrfmtcat"]):
            if len(args) > 1 and re.fullmatch(r"\s*\*?reason_down\s*", args[0]):
                lit = literal_arg(args[1])
                if lit and lit != ", ":
                    reasons.append((path, line, re.sub(r"^%s", "", lit)))
        for m in re.finditer(r"\breason = \"([^\"]+)\";|->reason = xstrdup\(\"([^\"]+)\"\)", text):
            reasons.append((path, text.count("\n", 0, m.start()) + 1, m.group(1) or m.group(2)))
    # built with slurm_strerror(rc) in step_terminate_monitor.c: "%s (JobId=%u %s)"
    stm = "src/slurmd/slurmstepd/step_terminate_monitor.c"
    line = line_of(show(src, rev, stm), '"%s (JobId=%u %s)"')
    for text in ("Kill task failed", "Job step not running"):
        reasons.append((stm, line, text + " (JobId=%u %s)"))
    # ... before 25.05: stepd_drain_node(slurm_strerror(rc)), the bare text
    try:
        old = show(src, resolve(src, LEGACY_DRAIN), stm)
    except Exception:  # noqa: BLE001 - an older tag is optional
        old = None
    if old is not None:
        line = line_of(old, "stepd_drain_node(slurm_strerror(rc))")
        for text in ("Kill task failed", "Job step not running"):
            reasons.append(("%s@%s" % (stm, LEGACY_DRAIN), line, text))
    # from src/interfaces/gres.c (reason_down of a node registering too few GRES), gres/gpu
    for anchor, reason in (('"%s count reported lower', "gres/gpu count reported lower than configured (%lu < %lu)"),
                           ('"%s count too low (%"PRIu64', "gres/gpu count too low (%lu < %lu)")):
        reasons.append(("src/interfaces/gres.c", line_of(show(src, rev, "src/interfaces/gres.c"), anchor), reason))
    rows = []
    for path, line, reason in reasons:
        if reason in ("First Registration",):
            continue  # the registration path's internal marker, not a drain reason
        for pattern, kind, severity, meaning in NODE_REASON_CLASS:
            if re.search(pattern, reason):
                break
        where = "reason set at %s:%d" % (path, line)
        rows.append((printer, print_line, "Reason=%s [%%s@%%s]" % reason, kind, CAT[kind],
                     severity, "%s (%s)" % (meaning, where)))
    return rows


# ---------------------------------------------------------------------------------------------
# scontrol show job: JobState=<state> Reason=<reason>; sacct "CANCELLED by <uid>"

JOB_STATE_CLASS = {
    "NODE_FAIL": (NODE, "critical", "the job was terminated because a node of it failed: drain and check that node"),
    "BOOT_FAIL": (NODE, "critical", "the job's node failed to boot or launch (typically a node hardware failure)"),
    "OUT_OF_MEMORY": (OOM, "critical", OOM_MEANING),
    "TIMEOUT": (U, "warning", TIME_LIMIT_MEANING),
    "FAILED": (U, "warning", "the job ended with a non-zero exit code or other failure: its output says why"),
    "REQUEUED": (U, "info", "the job is being requeued: by a user/admin, or after a node failure"),
    "REQUEUE_HOLD": (U, "info", "the job was requeued and held (often after a launch failure)"),
    "REQUEUE_FED": (U, "info", "the job is being requeued by the federation"),
}
JOB_STATE_BENIGN = {
    "PENDING": "the job waits to be scheduled", "RUNNING": "the job runs", "SUSPENDED": "the job is suspended",
    "COMPLETED": "the job completed with exit code 0", "COMPLETING": "the job is ending (epilogs running)",
    "CANCELLED": "the job was cancelled by a user or admin (scancel)",
    "PREEMPTED": "the job was preempted by a higher-priority job: a scheduling decision",
    "DEADLINE": "the job reached its --deadline: a scheduling decision",
    "CONFIGURING": "the job's nodes are booting/being configured", "STAGE_OUT": "burst buffer stage-out",
    "EXPEDITING": "the job is expedited", "RESIZING": "the job is being resized",
    "SPECIAL_EXIT": "the job exited with its special exit code and was held by request",
    "STOPPED": "the job was stopped (SIGSTOP)", "REVOKED": "a federated sibling job was revoked",
    "RESV_DEL_HOLD": "held because its reservation was deleted", "SIGNALING": "the job is being signalled",
}

JOB_REASON_CLASS = {  # by the reason's enum name; the rest: WAIT_* benign, FAIL_* unknown warning
    "FAIL_DOWN_NODE": (NODE, "critical", "the job failed because a node of it went DOWN: drain and check that node"),
    "FAIL_OOM": (OOM, "critical", OOM_MEANING),
    "FAIL_TIMEOUT": (U, "warning", TIME_LIMIT_MEANING),
    "FAIL_INACTIVE_LIMIT": (U, "warning", "the job hit the InactiveLimit (its srun stopped answering)"),
    "FAIL_SYSTEM": (U, "warning", "Slurm reports a system failure for the job (see slurmctld's log)"),
    "FAIL_LAUNCH": (U, "warning", "the job could not be launched on its nodes (see slurmd's log)"),
    "FAIL_EXIT_CODE": (U, "warning", "the job exited non-zero: its output says why"),
    "FAIL_SIGNAL": (U, "warning", "the job died of a signal: its output says which"),
    "FAIL_DEFER": ("benign", "ok", "scheduling of the job was deferred"),
    "WAIT_PART_DOWN": (U, "info", "the job's partition is DOWN: the job waits (or fails) until an admin brings it up"),
    "FAIL_DEADLINE": ("benign", "ok", "the job reached its --deadline: a scheduling decision"),
    "WAIT_DEP_INVALID": (U, "info", "the job's dependency can never be satisfied: it will not run"),
    "WAIT_NODE_NOT_AVAIL": (U, "info", "the job waits for required nodes that are down, drained or reserved"),
    "WAIT_NVIDIA_IMEX_CHANNELS": (U, "info", "the job waits for NVIDIA IMEX channels"),
}


def job_rows(src, rev):
    rows = []
    path = "src/common/slurm_protocol_defs.c"
    text = show(src, rev, path)
    start = text.index("extern char *job_state_string(uint32_t inx)")
    end = text.index("\n}\n", start)
    info_line = "src/scontrol/info_job.c"
    sc_line = line_of(show(src, rev, info_line), '"JobState=%s "')
    seen = set()
    for m in re.finditer(r'return "([A-Z_]+)";', text[start:end]):
        state = m.group(1)
        if state in seen:
            continue
        seen.add(state)
        line = text.count("\n", 0, start + m.start()) + 1
        if state in JOB_STATE_BENIGN:
            kind, severity, meaning = "benign", "ok", JOB_STATE_BENIGN[state]
        elif state in JOB_STATE_CLASS:
            kind, severity, meaning = JOB_STATE_CLASS[state]
        else:
            raise SystemExit("job state %s has no class: add it to JOB_STATE_*" % state)
        meaning = "%s (scontrol show job prints it, %s:%d)" % (meaning, info_line, sc_line)
        rows.append((path, line, "JobState=%s Reason=%%s" % state, kind,
                     "healthy" if kind == "benign" else CAT[kind], severity, meaning))
    # sacct: "%s by %u" for a cancelled job (src/sacct/print.c)
    sacct = "src/sacct/print.c"
    rows.append((sacct, line_of(show(src, rev, sacct), '"%s by %u"'), "CANCELLED by %u", "benign", "healthy", "ok",
                 "sacct: the job was cancelled by this uid (a user or admin): a decision, not a fault"))

    path = "src/common/job_state_reason.c"
    text = show(src, rev, path)
    by_text = {}
    for m in re.finditer(r"\[([A-Z_0-9]+)\] = \{[^}]*?\.str = \"([^\"]+)\"", text):
        by_text.setdefault(m.group(2), []).append((m.group(1), text.count("\n", 0, m.start()) + 1))
    for reason, entries in by_text.items():
        names = [n for n, _ in entries]
        klass = next((JOB_REASON_CLASS[n] for n in names if n in JOB_REASON_CLASS), None)
        if klass is None:
            if any(n.startswith("FAIL_") for n in names):
                klass = (U, "warning", "the job failed: %s" % reason)
            elif all(n.startswith("WAIT_") for n in names):
                klass = ("benign", "ok", "the job waits (%s): a scheduling state, not a fault" % reason)
            else:
                raise SystemExit("job reason %s has no class" % names)
        kind, severity, meaning = klass
        meaning = "%s (%s)" % (meaning, "/".join(names))
        rows.append((path, entries[0][1], "JobState=%%s Reason=%s" % reason, kind,
                     "healthy" if kind == "benign" else CAT[kind], severity, meaning))
    return rows


# ---------------------------------------------------------------------------------------------
# slurm_errtab -> CODES

CODE_FORMATS = (
    "error: Unable to allocate resources: {text}",          # src/srun/allocate.c, src/salloc/salloc.c (%m)
    "error: Unable to create step for job %u: {text}",      # src/srun/launch.c (%m)
    "error: Batch job submission failed: {text}",           # src/sbatch/sbatch.c (%m)
    "slurm_load_jobs error: {text}",                        # squeue/scontrol/scancel: slurm_perror()
)
CODE_CLASS = (  # (name regex, kind, severity, meaning); first wins
    (r"^(SLURM_SUCCESS|ESPANK_SUCCESS|EINPROGRESS|SLURM_NO_CHANGE_IN_DATA|ESLURM_JOB_PENDING|ESLURM_STEP_QUEUED|"
     r"ESLURM_BURST_BUFFER_WAIT|SLURM_BLOCKED_ON_(READ|WRITE)|ESLURM_AUTH_SKIP)$", "benign", "ok",
     "not a failure: a state or a normal return"),
    (r"^(ESLURMD_KILL_TASK_FAILED)$", NODE, "critical", KILL_TASK_MEANING),
    (r"^(ESLURM_JOB_NODE_FAIL_KILLED|ESPANK_NODE_FAILURE)$", NODE, "critical", NODE_FAIL_MEANING),
    (r"^ESLURM_JOB_TIMEOUT_KILLED$", U, "warning", TIME_LIMIT_MEANING),
    (r"^ESLURMD_(PROLOG|EPILOG)_FAILED$", U, "warning", PROLOG_MEANING),
    (r"^SLURMCTLD_COMMUNICATIONS_(CONNECTION|SEND|RECEIVE|SHUTDOWN)_ERROR$", U, "warning", CTLD_UNREACHABLE),
    (r"^ESLURMD_CREDENTIAL_REVOKED$", U, "info", "the job was killed before its step launched (credential revoked)"),
    (r"^ESLURM_AUTH_|^ESLURMD_(INVALID_JOB_CREDENTIAL|CREDENTIAL_(EXPIRED|REPLAYED))$|"
     r"^SLURM_PROTOCOL_AUTHENTICATION_ERROR$|^ESLURM_INVALID_JOB_CREDENTIAL$", U, "warning", AUTH_MEANING),
    (r"^(ESLURM_ALREADY_DONE|ESLURM_JOB_FINISHED|ESLURM_JOB_NOT_RUNNING)$", U, "info", ""),
    (r"", U, "warning", ""),
)


def code_rows(src, rev):
    header = show(src, rev, "slurm/slurm_errno.h")
    numbers = {"SLURM_SUCCESS": 0, "ESPANK_SUCCESS": 0, "SLURM_ERROR": -1,
               "EINPROGRESS": 115}  # EINPROGRESS: the Linux errno value
    body = strip_comments(header[header.index("typedef enum {"):header.index("} slurm_err_t;")])
    value = None
    for m in re.finditer(r"\b([A-Z][A-Z0-9_]+)\s*(?:=\s*(\d+))?\s*,", body):
        value = int(m.group(2)) if m.group(2) else value + 1
        numbers[m.group(1)] = value
    path = "src/common/slurm_errno.c"
    text = show(src, rev, path)
    codes = []
    for m in re.finditer(r"ERRTAB_ENTRY\((\w+)\),\s*((?:\"(?:[^\"\\\n]|\\.)*\"\s*)+),", text):
        name, msg = m.group(1), join_literals(m.group(2))
        for pattern, kind, severity, meaning in CODE_CLASS:
            if re.search(pattern, name):
                break
        category = "healthy" if kind == "benign" else CAT[kind]
        codes.append((numbers[name], name, msg.replace("%", "%%"), kind, category, severity, meaning,
                      path, text.count("\n", 0, m.start()) + 1))
    return codes


# ---------------------------------------------------------------------------------------------

DOC = """\
Read: error()/fatal()/warning() calls (info() only for job/node events: nodes not responding,
requeues, kills, time limits, OOM, prolog/epilog) of src/srun, src/api/step_launch.c,
src/slurmd (slurmd, slurmstepd, common), src/slurmctld (node/job failure messages only:
every error of node_mgr/ping_nodes/agent/prep_slurmctld/power_save/backup, the rest by keyword;
accounting, federation, reservations, licences, triggers, gang left out), plugins task/cgroup,
jobacct_gather (+ src/interfaces/jobacct_gather.c), gres/gpu, gpu/nvml; a few famous messages of
older releases (file "path@tag": 24.11's "CANCELLED AT %s ***" and bare "Kill task failed" drain
reason, 22.05's "oom-kill event(s)");
derived rows where a logged argument takes literal values in the source (srun's "task %s: Killed",
the gres/gpu drain reasons, "slurmd error running ... Kill task failed"); scontrol show node
"Reason=<reason> [%s@%s]" for the reasons Slurm sets; scontrol show job "JobState=X Reason=%s" /
"JobState=%s Reason=Y" from job_state_string() and job_state_reason.c; sacct "CANCELLED by %u".
CODES: slurm_errtab (numbers from slurm/slurm_errno.h; EINPROGRESS is Linux's 115; a literal %
of a text is written %%), in the clients' messages of CODE_FORMATS.
Format: log.c prints a level word before the message ("error: ", "fatal: ", "warning: ",
"error: sched: ", info none): it is part of the format when the message alone is matchable
(a too-short message stays as written and unmatchable). TEMPLATES add the daemon's prefix
("srun: ", "slurmstepd: ", slurmd/slurmctld log timestamp). Slurm's %pJ/%pI/%ps/%pS print
"JobId=..."/"StepId=...".
Left out: debug/verbose levels, error() whose format is not a literal, messages of other
programs (sbatch/salloc/scontrol's own errors except CODE_FORMATS), squeue's "(Reason)" and
sacct's bare state words (too short to match).
Classification (rules in the generator, first match wins): node failure / not responding /
NODE_FAIL / "Node failure on" / NodeDown / BOOT_FAIL -> logged_node_failure (critical); Kill
task failed / unkillable step -> logged_node_failure (the node is drained: a process could not
be killed, often stuck in the GPU driver); OOM (cgroup oom_kill, "Out Of Memory", exceeded
memory limit, OUT_OF_MEMORY/OutOfMemory) -> oom_kill_cgroup (critical); time limit -> unknown
warning (needed more time, or hung until the limit); preemption, user cancel, waiting reasons,
normal states -> benign (24.11's bare "CANCELLED AT %s ***", also printed when another task failed:
unknown info); requeue -> unknown info; task exit code / signal -> unknown warning
(SIGKILL -> worker_sigkill); prolog/epilog failures -> unknown warning; controller unreachable,
auth/munge/credentials -> unknown warning; NVML init failure -> nvml_init_failed, other NVML
errors -> logged_driver_error; gres/gpu config mismatch -> unknown; a node registering fewer
GPUs than configured -> gpu_missing; srun option/multi-prog errors and execve of the job's
program -> logged_application_error; other errors -> unknown warning, fatal -> critical.
"""


def older_rows(src, known, notes):
    """The messages of the OLDER releases whose wording the pinned release does not have."""
    out = []
    for tag in OLDER:
        try:
            rev = resolve(src, tag)
        except Exception:  # noqa: BLE001 - an older tag is optional
            notes.append("older tag %s not in the source: skipped" % tag)
            continue
        release = ".".join(tag.split("-")[1:3])
        rows, _skipped = message_rows(src, rev)
        for path, line, fmt, kind, category, severity, meaning in rows:
            if fmt in known:
                continue
            known.add(fmt)
            out.append(("%s@%s" % (path, tag), line, fmt, kind, category, severity,
                        "%s (Slurm %s wording)" % (meaning, release) if meaning else "Slurm %s wording" % release))
    return out


def version_of(rev):
    m = re.fullmatch(r"slurm-(\d+)-(\d+)-(\d+)-(\d+)", rev)
    return "%s.%s.%s-%s" % m.groups() if m else rev


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", required=True, help="a clone or bare mirror of SchedMD/slurm")
    ap.add_argument("--rev", default=PIN, help="tag or commit (default %(default)s)")
    args = ap.parse_args(argv)
    commit = resolve(args.src, args.rev)
    rows, skipped = message_rows(args.src, commit)
    legacy, notes = legacy_rows(args.src)
    rows += legacy + derived_rows(args.src, commit) + node_reason_rows(args.src, commit) + job_rows(args.src, commit)
    rows += older_rows(args.src, set(r[2] for r in rows), notes)
    codes = code_rows(args.src, commit)
    meta = {"EMITTER": "Slurm", "PROJECT": "SchedMD/slurm", "VERSION": version_of(args.rev), "COMMIT": commit,
            "LICENCE": LICENCE, "ORIGIN": ORIGIN, "GENERATOR": GENERATOR}
    path = write_table("slurm", meta, MARKERS, TEMPLATES, rows, codes, CODE_FORMATS, DOC)
    for note in notes:
        print("note:", note, file=sys.stderr)
    for s in skipped:
        print("skipped (format not a literal):", s, file=sys.stderr)
    print("%s: %d rows, %d codes" % (path, len(set(rows)), len(codes)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
