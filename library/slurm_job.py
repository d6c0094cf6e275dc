#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu-runbook contributors
# SPDX-License-Identifier: Apache-2.0

DOCUMENTATION = r"""
---
module: slurm_job
short_description: Requeue or cancel the one job that hung on a drained node, when told to
description:
  - Runs where C(squeue) and C(scontrol) reach slurmctld (the controller; in a play over GPU nodes
    delegate it to localhost).
  - "The incident's job only: O(job_id) must be a job that still holds O(node). A job on other nodes
    only, a finished one, or one waiting in the queue is not touched (a job elsewhere fails the task
    with C(blocked_by=job_not_on_node); a job that is gone is no change)."
  - C(action=requeue) runs C(scontrol requeue <id>) (the job goes back to the queue and restarts from its
    last checkpoint on other nodes); C(action=cancel) runs C(scancel <id>). Argv lists, never a shell.
  - "A requeue Slurm refuses (a job submitted with C(--no-requeue), C(JobRequeue=0), an interactive
    C(srun)/C(salloc) allocation: 'Only batch jobs are accepted or processed') fails the task with
    C(blocked_by=requeue_refused) and Slurm's words. It is never turned into a cancel: cancelling
    loses the job's progress since its last checkpoint, which only the operator may choose (O(action)=cancel)."
  - After the command the module waits (O(wait) seconds at most) until the job no longer holds O(node);
    a job still there fails the task with C(blocked_by=job_still_on_node).
version_added: "0.4.0"
author: gpu-runbook contributors
options:
  job_id:
    description: The job the incident is about (digits, or C(123_4) for an array task).
    type: str
    required: true
  action:
    description: C(requeue) or C(cancel) the job.
    type: str
    choices: [requeue, cancel]
    required: true
  node:
    description: The Slurm node being drained; the job must hold it, else nothing is done.
    type: str
    required: true
  wait:
    description: Seconds to wait for the job to leave O(node) after the command (0 - do not wait).
    type: int
    default: 120
  timeout:
    description: Seconds one Slurm command may take.
    type: int
    default: 30
extends_documentation_fragment:
  - action_common_attributes
attributes:
  check_mode:
    support: full
    details:
      - Reads the job (C(squeue)) and returns the argv a real run would execute in RV(would_run); runs nothing.
  diff_mode:
    support: none
  platform:
    platforms: posix
    details: Runs where C(squeue) and C(scontrol) reach slurmctld, usually the controller (C(delegate_to)).
requirements:
  - C(squeue), C(scontrol) and C(scancel) (slurm-client) and the cluster's C(SLURM_CONF) where the task runs
  - Slurm rights over the job (its user, SlurmUser, root or an operator)
notes:
  - The rung_drain role runs it when the wait for DRAINED runs out with the incident's job still on the node,
    and only with C(-e hung_job=requeue|cancel) (read once by the plan, with the job id of C(-e job_id)).
seealso:
  - module: ansible.legacy.slurm_node
    description: Drains the node; its wait for DRAINED names the jobs still on it.
  - name: scontrol requeue (Slurm)
    description: What a requeue does and which jobs can be requeued.
    link: https://slurm.schedmd.com/scontrol.html
"""

EXAMPLES = r"""
- name: Requeue the job that hung on the drained node (never cancelled instead)
  slurm_job:
    job_id: "4242"
    action: requeue
    node: "{{ inventory_hostname }}"
  delegate_to: localhost
  register: hung

- name: Cancel it, the operator having chosen to lose its progress since the last checkpoint
  slurm_job:
    job_id: "4242"
    action: cancel
    node: gpu-r3-n03
  delegate_to: localhost
"""

RETURN = r"""
job:
  description: The job as squeue showed it before (id, state, nodes, user, name, reason); null when Slurm no longer knows it.
  returned: always
  type: dict
  sample: {"id": "4242", "state": "RUNNING", "nodes": ["gpu-r3-n03", "gpu-r3-n04"], "user": "alice", "name": "train",
           "reason": "None"}
after:
  description: The job as squeue showed it when the wait ended (null when Slurm no longer lists it).
  returned: when the command ran
  type: dict
argv:
  description: The Slurm command that ran (or would run).
  returned: when the job holds the node
  type: list
  elements: str
  sample: [scontrol, requeue, "4242"]
would_run:
  description: In check mode, the argv a real run would execute.
  returned: in check mode when the job holds the node
  type: list
  elements: list
outcome:
  description: done, refused (a requeue Slurm refused), denied, unreachable, failed, gone (nothing to do) or not_here.
  returned: always
  type: str
  sample: done
blocked_by:
  description: Why nothing was done, or why the job still holds the node - bad_parameter, slurm_unavailable,
    job_not_on_node, requeue_refused, action_failed, job_still_on_node.
  returned: on failure
  type: list
  elements: str
  sample: [requeue_refused]
msg:
  description: What was done, or why not, in words.
  returned: always
  type: str
  sample: "job 4242 (train, user alice) requeued; it no longer holds gpu-r3-n03 (now PENDING)"
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.gpu_runbook.probes import run_argv
from ansible.module_utils.gpu_runbook.slurm import node_name_problem
from ansible.module_utils.gpu_runbook.slurm_jobs import (JOB_FORMAT, action_argv, action_outcome, find_hung_job,
                                                         holds_node, job_id_problem, parse_squeue_jobs)

MAX_WAIT = 3600


class Refused(Exception):
    def __init__(self, blocked, msg, **extra):
        Exception.__init__(self, msg)
        self.blocked, self.msg, self.extra = blocked, msg, extra


def run_slurm(module, argv):
    """(rc, text) of one Slurm client command under the timeout; Refused when it cannot run."""
    exe = module.get_bin_path(argv[0])
    if not exe:
        raise Refused("slurm_unavailable", "%s not found on %s (install slurm-client there or delegate to the "
                      "controller)" % (argv[0], os.uname()[1]))
    try:
        rc, out, err = run_argv([exe] + argv[1:], module.params["timeout"],
                                env=dict(os.environ, SLURM_TIME_FORMAT="standard"))
    except TimeoutError:
        raise Refused("slurm_unavailable", "slurmctld did not answer within %ss (`%s`)"
                      % (module.params["timeout"], " ".join(argv)))
    except OSError as exc:
        raise Refused("slurm_unavailable", "%s could not run: %s" % (argv[0], exc))
    return rc, (out or "") + (err or "")


def read_job(module, job_id):
    """The job's squeue row, or None when Slurm no longer knows it."""
    rc, text = run_slurm(module, ["squeue", "-h", "-j", job_id, "-o", JOB_FORMAT])
    if rc != 0:
        if "invalid job id" in text.lower():
            return None  # finished and purged from slurmctld's memory
        raise Refused("slurm_unavailable", "`squeue -j %s` failed (rc %s): %s" % (job_id, rc, " ".join(text.split())[:300]))
    return next((j for j in parse_squeue_jobs(text) if j["id"] == job_id), None)


def wait_gone(module, job_id, node, seconds):
    """Poll until the job no longer holds the node -> (last row or None, still_there)."""
    deadline = time.monotonic() + seconds
    while True:
        job = read_job(module, job_id)
        if not holds_node(job, node):
            return job, False
        if time.monotonic() >= deadline:
            return job, True
        time.sleep(min(1.0, max(0.1, deadline - time.monotonic())))


def run(module):
    p = module.params
    job_id, node, action = p["job_id"], p["node"], p["action"]
    bad = [w for w in (job_id_problem(p["job_id"]), node_name_problem(node, "node")) if w]
    if p["wait"] < 0 or p["wait"] > MAX_WAIT or p["timeout"] < 1:
        bad.append("wait must be 0-%d and timeout at least 1 second" % MAX_WAIT)
    if bad:
        raise Refused("bad_parameter", "; ".join(bad))
    before = read_job(module, job_id)
    job, why = find_hung_job([before] if before else [], job_id, node)
    res = {"changed": False, "job": before}
    if why:
        raise Refused("job_not_on_node", why, job=before, outcome="not_here")
    if job is None:
        res.update(outcome="gone", msg="job %s no longer holds %s (%s): nothing to %s"
                   % (job_id, node, before["state"] if before else "not known to Slurm any more", action))
        return res
    argv = action_argv(action, job_id)
    res["argv"] = argv
    if module.check_mode:
        res.update(would_run=[argv], outcome="planned", changed=True,
                   msg="check mode: would %s job %s (%s, user %s) on %s" % (action, job_id, job["name"], job["user"], node))
        return res
    rc, text = run_slurm(module, argv)
    out = action_outcome(action, rc, text)
    res["outcome"] = out["outcome"]
    if out["outcome"] != "done":
        if out["outcome"] == "refused":
            raise Refused("requeue_refused", "Slurm refused to requeue job %s (%s, user %s): %s -- the job was NOT "
                          "cancelled; it still holds %s. To release the node cancel it (-e hung_job=cancel: its "
                          "progress since the last checkpoint is lost) or let it end"
                          % (job_id, job["name"], job["user"], out["said"] or "rc %s" % rc, node), **res)
        raise Refused("action_failed", "`%s` failed (%s, rc %s): %s" % (" ".join(argv), out["outcome"], rc,
                                                                     out["said"] or "no output"), **res)
    res["changed"] = True
    after, still = wait_gone(module, job_id, node, p["wait"]) if p["wait"] else (read_job(module, job_id), False)
    res["after"] = after
    if still:
        raise Refused("job_still_on_node", "job %s was %s but still holds %s after %ss (%s)"
                      % (job_id, "requeued" if action == "requeue" else "cancelled", node, p["wait"], after["state"]),
                      **res)
    res["msg"] = "job %s (%s, user %s) %s; it no longer holds %s%s" % (
        job_id, job["name"], job["user"], "requeued" if action == "requeue" else "cancelled", node,
        " (now %s)" % after["state"] if after else "")
    return res


def main():
    module = AnsibleModule(
        argument_spec=dict(
            job_id=dict(type="str", required=True),
            action=dict(type="str", required=True, choices=["requeue", "cancel"]),
            node=dict(type="str", required=True),
            wait=dict(type="int", default=120),
            timeout=dict(type="int", default=30),
        ),
        supports_check_mode=True,
    )
    try:
        res = run(module)
    except Refused as exc:
        out = {"changed": False, "blocked_by": [exc.blocked]}
        out.update(exc.extra)
        out.setdefault("outcome", "failed")
        module.fail_json(msg=exc.msg, **out)
    module.exit_json(**res)


if __name__ == "__main__":
    main()
