#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu-runbook contributors
# SPDX-License-Identifier: Apache-2.0

DOCUMENTATION = r"""
---
module: gpu_runbook_job
short_description: Find a Slurm job's nodes, start time and log paths, and which of the play's hosts ran it
description:
  - Runs C(scontrol show job -o ID) and, when the controller has forgotten the job,
    C(sacct -j ID -X -n -P). Returns the job's nodes (hostlist expanded), start and end
    time (the kernel-log window) and its StdOut/StdErr paths.
  - With O(nodes) (the job's nodes as a Slurm hostlist), Slurm is not asked at all, which is
    the way on when Slurm is down or unreachable.
  - When Slurm cannot be reached (no C(scontrol) or C(sacct), no answer, or
    C(Unable to contact slurm controller)), fails with a message that names each command
    and its error and says how to go on without Slurm (C(-e job_nodes=... -e job_log_dir=...)).
  - Slurm prints times in the local zone of the controller running it, without the zone;
    the start and end are returned as ISO 8601 with that zone's offset, so nodes in any
    zone (and their C(dmesg -T) local times) compare them correctly.
  - Read-only; supports check mode.
version_added: "0.1.0"
author: gpu-runbook contributors
options:
  job_id:
    description:
      - Slurm job id (C(12345), an array task C(12345_7)). Required unless O(nodes) is given;
        with O(nodes) it only labels the job.
    type: str
    default: ""
  nodes:
    description:
      - The job's nodes as a Slurm hostlist (C(gpu-r3-n[01-04,07])). Given, Slurm is not
        queried; the job has no start time, so the kernel-log window stays open.
    type: str
  play_hosts:
    description:
      - The play's inventory host names. Those that ran the job (by name or by short name)
        are returned in RV(hosts); the module fails when none did.
    type: list
    elements: str
  timeout:
    description: Seconds each Slurm command may take.
    type: int
    default: 30
extends_documentation_fragment:
  - action_common_attributes
attributes:
  check_mode:
    support: full
    details: Only reads (C(scontrol show job), C(sacct)), so check mode runs as a normal run does; C(changed) is always false.
  diff_mode:
    support: none
  platform:
    platforms: posix
    details: Runs where C(scontrol) reaches slurmctld (C(delegate_to) the controller), or anywhere with O(nodes).
requirements:
  - C(scontrol) (slurm-client) and the cluster's C(SLURM_CONF) where it runs, unless O(nodes) is given
  - C(sacct) and slurmdbd for a job the controller has forgotten (optional)
notes:
  - The job_context role runs it once per play (C(tasks_from=narrow)) and keeps only the job's nodes for the diagnosis.
seealso:
  - module: ansible.legacy.gpu_health_facts
    description: Gathers each node's health; RV(job.start) becomes its O(ansible.legacy.gpu_health_facts#module:since).
  - module: ansible.legacy.gpu_runbook_report
    description: Joins the job's logs (RV(job.stdout), RV(job.stderr)) to hosts and GPUs.
  - name: scontrol (Slurm)
    description: C(scontrol show job -o), whose fields are read.
    link: https://slurm.schedmd.com/scontrol.html
  - name: sacct (Slurm)
    description: The accounting record used when the controller no longer knows the job.
    link: https://slurm.schedmd.com/sacct.html
"""

EXAMPLES = r"""
- name: Resolve job 12345 on the Slurm controller
  gpu_runbook_job:
    job_id: "12345"
    play_hosts: "{{ ansible_play_hosts }}"
  delegate_to: slurmctl01
  run_once: true
  register: job

- name: Slurm is down; the job ran on these nodes
  gpu_runbook_job:
    job_id: "12345"
    nodes: gpu-r3-n[01-04]
    play_hosts: "{{ ansible_play_hosts }}"
  delegate_to: localhost
  run_once: true
  register: job
"""

RETURN = r"""
job:
  description: The job. Keys Slurm did not report are null.
  returned: success
  type: dict
  contains:
    job_id:
      description: The job id (null when only O(nodes) was given without O(job_id)).
      type: str
      returned: always
      sample: "12345"
    name:
      description: The job's name.
      type: str
      returned: when Slurm answered
      sample: train-llm
    state:
      description: The job's state (C(RUNNING), C(FAILED), C(TIMEOUT), ...).
      type: str
      returned: when Slurm answered
      sample: RUNNING
    nodelist:
      description: The job's nodes as Slurm wrote them (a hostlist).
      type: str
      returned: always
      sample: gpu-r3-n[01-04]
    nodes:
      description: The job's nodes, one name each.
      type: list
      elements: str
      returned: always
      sample: [gpu-r3-n01, gpu-r3-n02, gpu-r3-n03, gpu-r3-n04]
    num_nodes:
      description: How many nodes the job ran on.
      type: int
      returned: always
      sample: 4
    start:
      description: When the job started, ISO 8601 with the controller's offset.
      type: str
      returned: when Slurm answered
      sample: "2026-12-02T06:58:00+09:00"
    end:
      description: When the job ended (null or C(Unknown) while it runs), ISO 8601 with the controller's offset.
      type: str
      returned: when Slurm answered
      sample: "2026-12-02T07:12:30+09:00"
    stdout:
      description: The job's StdOut path (scontrol only).
      type: str
      returned: when Slurm answered
      sample: /shared/run7/slurm-12345.out
    stderr:
      description: The job's StdErr path (scontrol only).
      type: str
      returned: when Slurm answered
      sample: /shared/run7/slurm-12345.err
    user:
      description: The job's owner as Slurm's UserId prints it, name and uid (scontrol only); the report reads
        the job's StdOut/StdErr only where this user could.
      type: str
      returned: when Slurm answered
      sample: alice(1001)
    workdir:
      description: The job's working directory.
      type: str
      returned: when Slurm answered
      sample: /shared/run7
    source:
      description: Where the nodes came from, C(scontrol), C(sacct) or C(job_nodes) (the O(nodes) option).
      type: str
      returned: always
      sample: scontrol
hosts:
  description: The O(play_hosts) that ran the job, in the play's order.
  returned: when O(play_hosts) is given
  type: list
  elements: str
  sample: [gpu-r3-n01, gpu-r3-n02]
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.gpu_runbook.probes import run_argv
from ansible.module_utils.gpu_runbook.slurm import expand_hostlist, parse_sacct, parse_scontrol_show_job
from ansible.module_utils.gpu_runbook.validate import problems

SACCT_FIELDS = "JobID,JobName,State,Start,End,NodeList,WorkDir"
WITHOUT_SLURM = ("to go on without Slurm, name the job's nodes and logs: -e job_nodes='NODES' -e job_log_dir=DIR "
                 "(NODES as Slurm writes them, e.g. gpu-r3-n[01-04])")


def _run(module, argv, timeout, shown):
    """-> (rc or None when the command could not run, stdout, error text)."""
    exe = module.get_bin_path(argv[0])
    if not exe:
        return None, "", "%s: command not found" % shown
    try:
        rc, out, err = run_argv([exe] + argv[1:], timeout)
    except TimeoutError:
        return None, "", "%s: no answer within %ss (slurmctld down?)" % (shown, timeout)
    except FileNotFoundError as exc:
        return None, "", "%s: %s" % (shown, exc)
    if rc == 0:
        return rc, out, None
    return rc, out, "%s: %s" % (shown, " ".join((err or out).split())[:300] or "exit status %d" % rc)


def lookup(module, job_id, timeout):
    """The job from scontrol, else sacct -> (job dict, errors, answered). ``answered``: Slurm
    itself replied about the job (a record, 'Invalid job id', an empty accounting record),
    not a missing client, a timeout, or a controller or database it could not reach."""
    shown = "scontrol show job -o %s" % job_id
    rc, out, err = _run(module, ["scontrol", "show", "job", "-o", job_id], timeout, shown)
    job = parse_scontrol_show_job(out, tz="local") if rc == 0 else {}
    if job:
        return dict(job, source="scontrol"), [], True
    errors = [err or "%s: no record" % shown]
    answered = rc == 0 or (err is not None and rc is not None and "Invalid job id" in err)
    shown = "sacct -j %s" % job_id
    rc, out, err = _run(module, ["sacct", "-j", job_id, "-X", "-n", "-P", "-o", SACCT_FIELDS], timeout, shown)
    job = parse_sacct(out, job_id, tz="local") if rc == 0 else {}
    if job:
        return dict(job, source="sacct"), errors, True
    errors.append(err or "%s: no record" % shown)
    return {}, errors, answered or rc == 0


def given_nodes(job_id, expr):
    """The job as -e job_nodes names it: no Slurm, no start time."""
    nodes = expand_hostlist(expr.strip())
    return {"job_id": job_id or None, "nodelist": expr.strip(), "nodes": nodes, "num_nodes": len(nodes),
            "source": "job_nodes"}


def hosts_in_job(play_hosts, nodes):
    """The play's hosts that ran the job: Slurm names nodes short, inventories often FQDN."""
    wanted = set(nodes)
    return [h for h in play_hosts if h in wanted or h.split(".")[0] in wanted]


def _few(names, shown=5):
    """A list for one line: a rack of 256 hosts is named by its first few and its size."""
    if not names:
        return "none"
    more = " ... %d in all" % len(names) if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def main():
    module = AnsibleModule(
        argument_spec=dict(job_id=dict(type="str", default=""), nodes=dict(type="str"),
                           play_hosts=dict(type="list", elements="str"), timeout=dict(type="int", default=30)),
        supports_check_mode=True,
    )
    job_id = (module.params["job_id"] or "").strip()
    nodes = (module.params["nodes"] or "").strip()
    # the job id reaches scontrol's and sacct's argv: digits only, never an option
    refused = problems({"job_id": job_id, "nodes": nodes}, {"job_id": "job_id", "nodes": "hostlist"})
    if refused:
        module.fail_json(msg="; ".join(refused))
    if nodes:
        job = given_nodes(job_id, nodes)
        if not job["nodes"]:
            module.fail_json(msg="job_nodes %r names no node" % nodes)
    elif not job_id:
        module.fail_json(msg="give job_id (asks Slurm) or nodes (the job's nodes as a Slurm hostlist)")
    else:
        job, errors, answered = lookup(module, job_id, module.params["timeout"])
        if not job:
            what = "Slurm has no job %s" % job_id if answered else "Slurm was unreachable for job %s" % job_id
            module.fail_json(msg="%s (%s); %s" % (what, "; ".join(errors), WITHOUT_SLURM), errors=errors,
                             slurm_unreachable=not answered)
    result = dict(changed=False, job=job)
    if module.params["play_hosts"] is not None:
        result["hosts"] = hosts_in_job(module.params["play_hosts"], job["nodes"])
        if not result["hosts"]:
            module.fail_json(msg="none of %s's nodes (%s) is among this play's hosts (%s): check -i and -l"
                             % ("job %s" % job_id if job_id else "the job", job.get("nodelist") or ",".join(job["nodes"]),
                                _few(module.params["play_hosts"])), job=job, hosts=[])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
