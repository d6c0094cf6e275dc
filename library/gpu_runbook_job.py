#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu-runbook contributors
# Apache-2.0 (see pyproject.toml)

DOCUMENTATION = r"""
---
module: gpu_runbook_job
short_description: Look up a Slurm job's nodes, start time and log paths
description:
  - Runs C(scontrol show job -o ID) and, when the controller has forgotten the job,
    C(sacct -j ID -X -n -P). Returns the job's nodes (hostlist expanded), start and end
    time (the kernel-log window) and its StdOut/StdErr paths.
  - Slurm prints times in the local zone of the controller running it, without the zone;
    the start and end are returned as ISO 8601 with that zone's offset, so nodes in any
    zone (and their C(dmesg -T) local times) compare them correctly.
  - Read-only; supports check mode.
version_added: "0.1.0"
author: gpu-runbook contributors
options:
  job_id:
    description: Slurm job id.
    type: str
    required: true
  timeout:
    description: Seconds each Slurm command may take.
    type: int
    default: 30
"""

EXAMPLES = r"""
- name: Resolve job 12345
  gpu_runbook_job:
    job_id: "12345"
  register: job
"""

RETURN = r"""
job:
  description: job_id, name, state, nodelist, nodes, num_nodes, start, end, stdout, stderr, workdir, source.
  returned: success
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.gpu_runbook.probes import run_argv
from ansible.module_utils.gpu_runbook.slurm import parse_sacct, parse_scontrol_show_job


def _run(module, tool, args, timeout):
    exe = module.get_bin_path(tool)
    if not exe:
        return None, "%s not found on the controller" % tool
    try:
        rc, out, err = run_argv([exe] + args, timeout)
    except TimeoutError:
        return None, "%s did not answer within %ss (slurmctld down?)" % (tool, timeout)
    if rc != 0:
        return None, "%s: %s" % (tool, (err or out).strip()[:300])
    return out, None


def main():
    module = AnsibleModule(
        argument_spec=dict(job_id=dict(type="str", required=True), timeout=dict(type="int", default=30)),
        supports_check_mode=True,
    )
    job_id = module.params["job_id"].strip()
    if not job_id.replace("_", "").replace(".", "").isalnum():
        module.fail_json(msg="job_id %r is not a Slurm job id" % job_id)
    errors = []
    out, err = _run(module, "scontrol", ["show", "job", "-o", job_id], module.params["timeout"])
    job = parse_scontrol_show_job(out, tz="local") if out else {}
    if err:
        errors.append(err)
    source = "scontrol"
    if not job:
        out, err = _run(module, "sacct", ["-j", job_id, "-X", "-n", "-P", "-o",
                                          "JobID,JobName,State,Start,End,NodeList,WorkDir"], module.params["timeout"])
        job = parse_sacct(out, job_id, tz="local") if out else {}
        if err:
            errors.append(err)
        source = "sacct"
    if not job:
        module.fail_json(msg="Slurm job %s not found (%s)" % (job_id, "; ".join(errors) or "no record"))
    job["source"] = source
    module.exit_json(changed=False, job=job)


if __name__ == "__main__":
    main()
