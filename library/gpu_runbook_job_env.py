#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu-runbook contributors
# SPDX-License-Identifier: Apache-2.0

DOCUMENTATION = r"""
---
module: gpu_runbook_job_env
short_description: Write the job's NCCL / PyTorch environment for its next run, and the rail-exclusion record
description:
  - Runs on the controller (C(delegate_to=localhost), C(run_once=true)) for the job-scoped rungs
    C(nccl_env) and C(timeout). The job's environment beats C(~/.nccl.conf) (or C(NCCL_CONF_FILE)),
    which beats C(/etc/nccl.conf), so a fix for the next run belongs in the job's environment.
  - "Writes three files into O(dir): C(nccl.env) (C(KEY=VALUE) lines with C(#) comments saying why
    each value is there and what it means, one section per rung: O(section) rewrites only its own
    section, the other rung's section and lines outside the sections are kept), C(nccl.sbatch)
    (C(export) lines to paste into the batch script) and C(excluded-rails.json) (which rail is
    excluded on which host since when and for which incident)."
  - Variables must be known C(NCCL_*) / C(TORCH_*) names with values without shell
    metacharacters; C(NCCL_TIMEOUT) (it does not exist) and the legacy C(NCCL_ASYNC_ERROR_HANDLING) /
    C(NCCL_BLOCKING_WAIT) are refused. A refused line, an env file whose section markers do not pair
    up, or a record that is not one fails the module and nothing is written.
  - "For C(nccl_env): the rails the plan excludes are added to the record (an existing
    host/rail keeps its incident and since); an exclusion the plan does not make again is
    REVERTED when its host is in O(analysis_hosts) with a known health and no warning or critical
    finding on that rail, nor an InfiniBand finding that names no HCA. C(NCCL_IB_HCA=^=...) is
    rebuilt from the record, or removed when nothing is excluded. Other variables stay until
    O(unset)."
  - Each file is written through a temporary file in O(dir) renamed over it; O(dir) or a target
    that is a symlink is refused (never followed), and nothing is written then. Same input, same
    files, C(changed=false).
version_added: "0.2.0"
author: gpu-runbook contributors
options:
  dir:
    description: Directory on the controller for the three files; created (0755) if missing.
    type: path
    required: true
  section:
    description: The rung whose section is written.
    type: str
    required: true
    choices: [nccl_env, timeout]
  job:
    description: The plan's job share, C(remediation_plan_result.plan.job) (C(rungs) with C(rung),
      C(host), C(why), C(env), C(target.rails); C(env)). Only the rungs of O(section) are used.
    type: dict
    default: {}
  incidents:
    description: The plan's C(incidents); a rail incident's hosts are recorded for its rail.
    type: list
    elements: dict
    default: []
  analysis_hosts:
    description:
      - This run's diagnosis, C(diagnosis_report_result.analysis.hosts), for reverting exclusions.
        Unset, nothing is reverted.
    type: list
    elements: dict
  env:
    description: Extra C(KEY=VALUE) lines for O(section); they win over the plan's lines for the same key.
    type: list
    elements: str
    default: []
  unset:
    description: Variables removed from O(section).
    type: list
    elements: str
    default: []
  revert_rails:
    description: Exclusions to revert by hand, as C(rail) (every host) or C(host:rail).
    type: list
    elements: str
    default: []
  incident:
    description: Incident id stored with each new exclusion and value.
    type: str
    default: ""
  now:
    description: The time recorded for new exclusions and reverts (ISO 8601); default now (UTC). For tests.
    type: str
extends_documentation_fragment:
  - action_common_attributes
attributes:
  check_mode:
    support: full
    details: Computes the three files from what is there and reports C(changed) as a real run would; writes nothing
      (RV(written) is empty and RV(lines) says which files were not written).
  diff_mode:
    support: full
    details: One diff per file that changes (C(nccl.env), C(nccl.sbatch), C(excluded-rails.json)), in check mode too.
  platform:
    platforms: posix
    details: Runs on the controller (C(delegate_to=localhost), C(run_once=true)).
requirements:
  - write access to O(dir) on the controller
notes:
  - The collective timeout is C(init_process_group(timeout=)) in the job's code; there is no C(NCCL_TIMEOUT).
  - The rung_nccl_env role writes the C(nccl_env) section with it, the rung_timeout role the C(timeout) section.
  - The files change the job's next run only when its batch script sources C(nccl.env) (or pastes C(nccl.sbatch)).
seealso:
  - module: ansible.legacy.gpu_runbook_plan
    description: Plans the job-scoped rungs whose share (RV(ansible.legacy.gpu_runbook_plan#module:plan.job)) goes into O(job).
  - module: ansible.legacy.gpu_runbook_ledger
    description: The audit log the roles write each change and refusal to.
  - name: NCCL environment variables
    description: C(NCCL_IB_HCA) (C(^=) excludes exact HCA names), C(NCCL_IB_TIMEOUT), C(NCCL_IB_RETRY_CNT), and where NCCL reads them.
    link: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html
  - name: PyTorch distributed (torch.distributed)
    description: C(init_process_group(timeout=)) and the C(TORCH_NCCL_*) variables of the timeout section.
    link: https://pytorch.org/docs/stable/distributed.html
"""

EXAMPLES = r"""
- name: Exclude the bad rail for the job's next run (and revert exclusions found healthy)
  gpu_runbook_job_env:
    dir: ~/.gpu-runbook/state/job-env
    section: nccl_env
    job: "{{ remediation_plan_result.plan.job }}"
    incidents: "{{ remediation_plan_result.plan.incidents }}"
    analysis_hosts: "{{ diagnosis_report_result.analysis.hosts }}"
    incident: "{{ remediation_plan_result.plan.incident_id }}"
  delegate_to: localhost
  run_once: true

- name: Flight Recorder and IB retry knobs for the next run
  gpu_runbook_job_env:
    dir: ~/.gpu-runbook/state/job-env
    section: timeout
    job: "{{ remediation_plan_result.plan.job }}"
    env: [TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC=600, TORCH_FR_DUMP_TEMP_FILE=/shared/fr/nccl_trace_rank_]
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
files:
  description: Paths of nccl.env, nccl.sbatch and excluded-rails.json (whether written or not).
  returned: always
  type: dict
  contains:
    env:
      description: The env file (C(KEY=VALUE) lines, one section per rung) a batch script sources.
      returned: always
      type: str
      sample: /home/sre/.gpu-runbook/state/job-env/nccl.env
    sbatch:
      description: The C(export) lines to paste into the batch script.
      returned: always
      type: str
      sample: /home/sre/.gpu-runbook/state/job-env/nccl.sbatch
    record:
      description: The rail-exclusion record (JSON).
      returned: always
      type: str
      sample: /home/sre/.gpu-runbook/state/job-env/excluded-rails.json
written:
  description: The files written (none in check mode or when nothing changed).
  returned: always
  type: list
  elements: str
  sample: [/home/sre/.gpu-runbook/state/job-env/nccl.env, /home/sre/.gpu-runbook/state/job-env/nccl.sbatch]
section:
  description: The section's KEY=VALUE lines after the update.
  returned: always
  type: list
  elements: str
  sample: ["NCCL_IB_HCA=^=mlx5_4"]
env:
  description: Every managed KEY=VALUE line of nccl.env, both sections.
  returned: always
  type: list
  elements: str
nccl_conf:
  description: The nccl_env section's NCCL_* lines (what a managed /etc/nccl.conf may hold).
  returned: always
  type: list
  elements: str
  sample: ["NCCL_IB_HCA=^=mlx5_4"]
excluded:
  description: The exclusions in the record after the update (host, rail, incident, since, why).
  returned: always
  type: list
  elements: dict
  sample: [{"host": "gpu-r3-n05", "rail": "mlx5_4", "incident": "INC-42", "since": "2026-12-02T08:00:00Z",
            "why": "mlx5_4 symbol errors rising, link up"}]
added:
  description: Exclusions this run added.
  returned: always
  type: list
  elements: dict
reverted:
  description: Exclusions this run reverted, with reverted_at, reverted_by (the incident) and reverted_because.
  returned: always
  type: list
  elements: dict
  sample: [{"host": "gpu-r3-n05", "rail": "mlx5_4", "incident": "INC-42", "since": "2026-12-02T08:00:00Z",
            "why": "mlx5_4 symbol errors rising, link up", "reverted_at": "2026-12-03T09:30:00Z", "reverted_by": "INC-43",
            "reverted_because": "healthy in this run"}]
kept:
  description: Exclusions kept although this run did not make them, with the reason (kept).
  returned: always
  type: list
  elements: dict
sbatch:
  description: The sbatch snippet (the text of nccl.sbatch).
  returned: always
  type: str
lines:
  description: Console lines, what to add to the next sbatch and what overrides what.
  returned: always
  type: list
  elements: str
  sample: ["nccl_env: add to the next sbatch: set -a; . /home/sre/.gpu-runbook/state/job-env/nccl.env; set +a   (or paste
            /home/sre/.gpu-runbook/state/job-env/nccl.sbatch)", "nccl_env: exclude mlx5_4 (host gpu-r3-n05, incident INC-42):
            mlx5_4 symbol errors rising, link up"]
"""

import datetime
import errno
import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.gpu_runbook.plan.envfile import EnvError, update
from ansible.module_utils.gpu_runbook.safewrite import WriteRefused, check_target, write_atomic
from ansible.module_utils.gpu_runbook.validate import problems

NAMES = (("env", "nccl.env"), ("sbatch", "nccl.sbatch"), ("record", "excluded-rails.json"))


def read_nofollow(path):
    """The text of ``path`` ('' when absent), never through a symlink."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return ""
        if exc.errno == errno.ELOOP:
            raise WriteRefused("%s is a symlink: refusing to follow it" % path)
        raise
    with os.fdopen(fd, "r") as fh:
        return fh.read()


def _now():
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def run(module):
    p = module.params
    d = p["dir"]
    if os.path.islink(d):
        raise WriteRefused("dir %s is a symlink: refusing to follow it" % d)
    if os.path.lexists(d) and not os.path.isdir(d):
        raise WriteRefused("dir %s exists and is not a directory" % d)
    paths = {k: os.path.join(d, name) for k, name in NAMES}
    for path in paths.values():  # check every target before reading or writing any
        check_target(path)
    before = {k: read_nofollow(path) for k, path in paths.items()}
    res = update(p["section"], before["env"], before["record"], job=p["job"], incidents=p["incidents"],
                 analysis_hosts=p["analysis_hosts"], extra=p["env"], unset=p["unset"], revert=p["revert_rails"],
                 incident=p["incident"], now=p["now"] or _now(), env_path=paths["env"], sbatch_path=paths["sbatch"])
    after = {"env": res["env_text"], "sbatch": res["sbatch_text"], "record": res["record_text"]}
    if p["section"] != "nccl_env" or (before["record"] == "" and not res["excluded"] and not res["reverted"]):
        after["record"] = before["record"]  # only nccl_env keeps the record; none until a rail is excluded
    if before["env"] == "" and before["sbatch"] == "" and not res["env"]:
        after["env"], after["sbatch"] = "", ""  # nothing to set and nothing there: no files
    changes = [k for k, _ in NAMES if after[k] != before[k]]
    written = []
    if changes and not module.check_mode:
        if not os.path.isdir(d):
            os.makedirs(d, 0o755)
        for k in changes:
            write_atomic(paths[k], after[k], mode=0o644, fsync=False)
            written.append(paths[k])
    out = dict(changed=bool(changes), files=paths, written=written, sbatch=res["sbatch_text"],
               **{k: res[k] for k in ("section", "env", "nccl_conf", "excluded", "added", "reverted", "kept",
                                      "lines")})
    if module._diff:
        out["diff"] = [{"before_header": paths[k], "after_header": paths[k], "before": before[k],
                        "after": after[k]} for k in changes]
    if module.check_mode and changes:
        out["lines"] = out["lines"] + ["check mode: %s not written" % ", ".join(paths[k] for k in changes)]
    return out


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dir=dict(type="path", required=True),
            section=dict(type="str", required=True, choices=["nccl_env", "timeout"]),
            job=dict(type="dict", default={}),
            incidents=dict(type="list", elements="dict", default=[]),
            analysis_hosts=dict(type="list", elements="dict"),
            env=dict(type="list", elements="str", default=[]),
            unset=dict(type="list", elements="str", default=[]),
            revert_rails=dict(type="list", elements="str", default=[]),
            incident=dict(type="str", default=""),
            now=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    # the incident goes into a file a job's shell sources: one id, never a second line
    refused = problems(module.params, {"dir": "path", "incident": "incident"})
    if refused:
        module.fail_json(msg="job env not written: %s" % "; ".join(refused))
    try:
        result = run(module)
    except EnvError as exc:
        module.fail_json(msg="job env not written: %s" % exc)
    except WriteRefused as exc:
        module.fail_json(msg="job env not written: %s" % exc)
    except OSError as exc:
        module.fail_json(msg="job env not written to %s: %s" % (module.params["dir"], exc.strerror or exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
