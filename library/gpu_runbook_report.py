#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu-runbook contributors
# SPDX-License-Identifier: Apache-2.0

DOCUMENTATION = r"""
---
module: gpu_runbook_report
short_description: Aggregate every host's gpu_health result into the cluster view and report
description:
  - Runs once on the controller after M(ansible.legacy.gpu_health_facts) ran on every host.
  - An action plugin (C(plugins/action/gpu_runbook_report.py)) runs the step inside ansible-playbook, on
    the controller, with the same code this module runs (C(module_utils/gpu_runbook/report_step.py)); this
    file is the step as a module and its documentation.
  - Applies the cross-host rules (unreachable host is a prime suspect, the same Xid on
    every host points at the application), ranks the suspects and renders one console
    line per suspect host.
  - Read-only on the cluster; writes report files only when O(report_dir) is set.
version_added: "0.1.0"
author: gpu-runbook contributors
options:
  hosts:
    description:
      - The inventory hosts to report on (usually C(ansible_play_hosts)); each host's result is read from its
        variable O(result_var) on the controller. A host without that variable (its gather never registered) is
        reported as a host without a result, never dropped.
      - This is how the diagnosis_report role passes the results. At 10,000 hosts nothing is templated or
        encoded into arguments; the step reads each host's variables, as Ansible holds them.
      - Needs the gpu_runbook_report action plugin (C(plugins/action), named by C(action_plugins) in the
        project's ansible.cfg); without it use O(results).
      - Mutually exclusive with O(results); one of the two is required.
    type: list
    elements: str
  result_var:
    description: The variable holding each host's registered M(ansible.legacy.gpu_health_facts) result, with O(hosts).
    type: str
    default: gpu_health_result
  results:
    description:
      - Map of inventory host name to that host's registered gpu_health_facts result, or that map as one
        JSON string (rung_verify passes the one host it re-gathered).
      - A string that is not JSON, or a map whose values are not results (dicts), is refused with a message.
      - Mutually exclusive with O(hosts); one of the two is required.
    type: raw
  lang:
    description: Language of the console lines.
    type: str
    choices: [en, ko]
    default: en
  report_dir:
    description:
      - Directory to write report.json, report.md and report.html into (created if missing).
      - A relative path is relative to the module's working directory; the diagnosis_report role resolves it
        against the directory ansible-playbook was run from before passing it.
    type: path
  job:
    description: The job as M(ansible.legacy.gpu_runbook_job) returned it (Slurm nodes, start, StdOut/StdErr).
    type: dict
  job_log_dir:
    description: Directory of the job's logs (one combined file or one file per rank).
    type: path
  job_log_files:
    description: Extra job log files (for example the Slurm StdOut/StdErr paths).
    type: list
    elements: path
    default: []
  analysis_findings:
    description:
      - Which hosts of the returned RV(analysis) carry their findings. C(all) - every host. C(suspects) - the
        suspect hosts (RV(analysis.cluster.suspects)) carry theirs; every other host keeps its verdict,
        severity, rung and confidence with an empty C(findings) list (their info-level findings are ~70% of
        what the module returns at fleet size). report.json, the console lines and RV(summary) always have
        every finding.
      - What the roles read of RV(analysis) is the same either way (remediation_plan, rung_verify and
        rung_nccl_env read warning and critical findings, which only suspect hosts have).
    type: str
    choices: [all, suspects]
    default: all
  known_faults_dir:
    description:
      - The state directory whose C(known-faults.json) records what earlier runs reported (created 0700, the
        record 0600). Given, each host's warning and critical findings are compared with it, keyed by host,
        kind, Xid, GPU and IB port (never by wording) - RV(summary.faults) says which are new - and the
        record is updated (not in check mode). A fault whose severity rose is new again; one gone from a
        host whose evidence was read is cleared; a host not read this time keeps its faults.
      - A record that cannot be read is said (RV(summary.faults.error)); every fault is then new and the
        record is left as it is. Acknowledge faults with M(ansible.legacy.gpu_runbook_ledger) C(action=ack).
    type: path
extends_documentation_fragment:
  - action_common_attributes
  - action_common_attributes.flow
attributes:
  action:
    support: full
    details: The step runs in the action plugin on the controller; no module process is started.
  async:
    support: none
  bypass_host_loop:
    support: none
  check_mode:
    support: partial
    details: The same analysis, RV(lines) and RV(summary); the report files are not written (no
      RV(summary.report_files)), and C(changed) is false where a real run with O(report_dir) reports true.
  diff_mode:
    support: none
  platform:
    platforms: posix
    details: Runs on the controller (C(delegate_to=localhost), C(run_once=true)).
requirements:
  - jinja2 on the controller's Python when O(report_dir) is set (report.html)
  - read access to the job's logs (O(job_log_dir), O(job_log_files)) on the controller; each is read only as its owner could
notes:
  - The diagnosis_report role runs it and hands RV(summary) to AWX with M(ansible.builtin.set_stats)
    (C(gpu_runbook_summary), C(gpu_runbook_remediate)); the rung_verify role runs it again on the fresh gather.
seealso:
  - module: ansible.legacy.gpu_health_facts
    description: The per-host results this module aggregates (O(results)).
  - module: ansible.legacy.gpu_runbook_job
    description: The Slurm job (O(job)) whose logs are joined to hosts and GPUs.
  - module: ansible.legacy.gpu_runbook_plan
    description: Turns RV(analysis) into the remediation plan.
  - module: ansible.builtin.set_stats
    description: How RV(summary) reaches an AWX workflow.
  - name: NVIDIA Xid errors
    description: The Xid codes behind the GPU findings and their resolutions.
    link: https://docs.nvidia.com/deploy/xid-errors/index.html
  - name: NCCL environment variables
    description: The NCCL settings the job-level findings point at (C(NCCL_DEBUG=INFO) lines are what the job log is read for).
    link: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html
"""

EXAMPLES = r"""
# What the diagnosis_report role does: every host of the play, each result read on the controller
- name: Aggregate on the controller
  gpu_runbook_report:
    hosts: "{{ ansible_play_hosts }}"
    result_var: gpu_health_result
    report_dir: /var/tmp/inc42
  delegate_to: localhost
  run_once: true

# The results of some hosts, as a map (rung_verify: the one host it re-gathered)
- name: Analyse one host's fresh gather
  gpu_runbook_report:
    results: "{{ {inventory_hostname: fresh_gather} }}"
  delegate_to: localhost
"""

RETURN = r"""
analysis:
  description:
    - The analysis (schema gpu-runbook/analysis/v1) with its cluster section, as written to report.json.
    - Every host and the job carry C(confidence) (high, medium or low) and C(confidence_reason).
  returned: always
  type: dict
  contains:
    schema:
      description: Version of this shape; a consumer checks it before reading the rest.
      type: str
      returned: always
      sample: gpu-runbook/analysis/v1
    tool:
      description: The tool that wrote it (C(name), C(version)).
      type: dict
      returned: always
      sample: {"name": "gpu-runbook", "version": "0.1.0"}
    generated:
      description: When the analysis was made (UTC ISO 8601).
      type: str
      returned: always
      sample: "2026-12-02T15:00:00+00:00"
    hosts:
      description:
        - One entry per host, most suspect first - C(host), C(verdict), C(severity), C(rung), C(confidence),
          C(confidence_reason), C(confidence_basis) and C(findings).
        - A finding has C(kind), C(category), C(severity), C(rung), C(message), C(action), C(evidence),
          C(source), C(xid), C(gpu), C(ib), C(rank); one that aggregates log lines has C(count), C(first) and
          C(last); counter findings have C(counters) (numbers, not strings).
        - With O(analysis_findings=suspects) only the suspect hosts' C(findings) are filled (report.json has all).
        - With a job, each host also says how it stands to it - C(job_relation) (culprit_host, named_by_job, in_job,
          not_in_job) and C(fault_before_job) (every timed fault of it predates the job) - which the console, the
          reports and AWX read as they are.
      type: list
      returned: always
      elements: dict
      sample: [{"host": "gpu-r3-n03", "verdict": "gpu_hardware", "severity": "critical", "rung": "reboot",
                "confidence": "high", "confidence_reason": "the job's culprit rank 18 runs here and this host's Xid 79
                (kern.log:9) explains it", "findings": [{"category": "gpu_hardware", "severity": "critical", "kind": "xid",
                "xid": 79, "gpu": {"pci": "0000:75:00.0", "index": null, "uuid": "GPU-4b1d7e09-45cf-12ea-4e91-33386720f7bb",
                "serial": "1655022000022"}, "ib": null, "rank": null, "source": "kern.log:9", "message": "Xid 79 (GPU has
                fallen off the bus) on GPU 0000:75:00.0 once at 2026-12-02 07:09:51 UTC: GPU has fallen off the bus.",
                "action": "Drain the node in Slurm. Reboot the node. Replace the part (RMA) if it recurs.", "rung": "reboot",
                "count": 1, "first": "2026-12-02T07:09:51+00:00", "last": "2026-12-02T07:09:51+00:00"}]}]
    job:
      description:
        - The job when its logs or Slurm record were given, else null - C(verdict), C(failed_at) (epoch, progress),
          C(collective) (op, seq), C(timed_out_ranks), C(world_size), C(culprits) (rank, host, gpu_pci,
          explained_by), C(iteration_rate) (by_epoch, trend), C(events), C(findings), C(job_id), C(slurm),
          C(log_problems).
      type: dict
      returned: always
    cluster:
      description: C(suspects) (hosts, ordered), C(healthy), C(remediate), cross-host C(findings) and the C(timeline).
      type: dict
      returned: always
      sample: {"hosts": 8, "suspects": ["gpu-r3-n02"], "healthy": ["gpu-r3-n01"], "remediate": ["gpu-r3-n02"],
               "findings": [], "timeline": [{"time": "2026-12-02T14:02:58+00:00", "host": "gpu-r3-n02",
                                             "kind": "xid_79", "text": "...", "first_fault": true}]}
    inputs:
      description: Per host the sources read and not read (with why), whether it was reached; the job's log files
        read (name, lines) and the problems reading them.
      type: dict
      returned: always
      sample: {"hosts": {"gpu-r3-n01": {"reached": true, "mode": "capture", "read": ["kern.log"], "not_read": []}},
               "job_logs": {"read": [{"name": "slurm-48213.out", "lines": 1200}], "problems": []}}
    window:
      description: The time the evidence covers - C(since) (the kernel logs' start, null for the whole log),
        C(job_start) and C(generated).
      type: dict
      returned: always
      sample: {"since": "2026-12-02T09:00:00+00:00", "job_start": "2026-12-02T09:00:00",
               "generated": "2026-12-02T15:00:00+00:00"}
lines:
  description: What the play prints - the job and its culprit, one line per suspect host, the healthy hosts in
    one line, the summary count line and, when reports were written, the report's path.
  returned: always
  type: list
  elements: str
  sample: ["job: GPU hardware; culprit rank 11 -> gpu-r3-n02 GPU 0000:5d:00.0 -> Xid 79",
           "healthy (3): gpu-r3-n01, gpu-r3-n03, gpu-r3-n04"]
summary:
  description: Counts, suspects and hosts to remediate (for set_stats / AWX workflows).
  returned: always
  type: dict
  contains:
    hosts: {description: Hosts analysed., returned: always, type: int, sample: 8}
    critical: {description: Hosts with a critical finding., returned: always, type: int, sample: 1}
    warning: {description: Hosts whose worst finding is a warning., returned: always, type: int, sample: 0}
    healthy: {description: The other hosts., returned: always, type: int, sample: 7}
    suspects: {description: "Suspect hosts, most suspect first.", returned: always, type: list, elements: str,
               sample: ["gpu-r3-n02"]}
    remediate: {description: Hosts a node-scoped rung may act on., returned: always, type: list, elements: str,
                sample: ["gpu-r3-n02"]}
    verdicts:
      description: Per suspect host its verdict and rung.
      type: dict
      returned: always
      sample: {"gpu-r3-n02": {"verdict": "gpu_hardware", "rung": "reboot"}}
    job_verdict: {description: The job's verdict (null without a job)., returned: always, type: str,
                  sample: gpu_hardware}
    culprit_hosts: {description: Hosts of the job's culprit ranks., returned: always, type: list, elements: str,
                    sample: ["gpu-r3-n02"]}
    report_files:
      description: Paths (absolute) of report.json, report.md and report.html when O(report_dir) was set.
      type: list
      elements: str
      returned: when O(report_dir) is set and not in check mode
      sample: ["/var/tmp/inc42/report.json", "/var/tmp/inc42/report.md", "/var/tmp/inc42/report.html"]
    faults:
      description: This run's faults against what earlier runs reported (O(known_faults_dir)).
      type: dict
      returned: when O(known_faults_dir) is set
      sample: {"new_critical": ["gpu-r3-n03|xid|xid=79|gpu=0000:75:00.0"], "new_warning": [], "new": 1, "known": 3,
               "acknowledged": 1, "cleared": 0, "error": null}
      contains:
        new_critical: {description: "Keys (host|kind|xid=..|gpu=..|ib=..) of critical faults new this run, not acknowledged (50 at most).",
                       returned: always, type: list, elements: str, sample: ["gpu-r3-n03|xid|xid=79|gpu=0000:75:00.0"]}
        new_warning: {description: Keys of warning faults new this run (50 at most)., returned: always, type: list,
                      elements: str, sample: []}
        new: {description: Faults new this run., returned: always, type: int, sample: 1}
        known: {description: "Faults an earlier run reported, still there.", returned: always, type: int, sample: 3}
        acknowledged: {description: "Of the known ones, those an operator acknowledged.", returned: always, type: int,
                       sample: 1}
        cleared: {description: Faults no longer seen on a host whose evidence was read., returned: always, type: int,
                  sample: 0}
        error: {description: Why the record could not be read or written (null when it was)., returned: always,
                type: str, sample: null}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.gpu_runbook import report_step as step


def main():
    module = AnsibleModule(
        argument_spec=step.ARGUMENT_SPEC,
        required_one_of=step.REQUIRED_ONE_OF,
        mutually_exclusive=step.MUTUALLY_EXCLUSIVE,
        supports_check_mode=True,
    )
    # Every host's result echoed back as module_args is ~18 KB a host: at 1,000 hosts it doubled
    # the module's CPU (tests/benchmarks/bench_aggregate.py); the count is what -vvv needs.
    invocation = {"module_args": dict(module.params, results="(host results, not echoed)")}
    if module.params["hosts"] is not None:
        # hostvars are the controller's: only the action plugin (plugins/action) can read them
        module.fail_json(msg="hosts needs the gpu_runbook_report action plugin (action_plugins = ./plugins/action "
                             "in ansible.cfg); without it pass results", invocation=invocation)
    why = step.refused(module.params)
    results, why = (None, why) if why else step.results_map(module.params["results"])
    if why:
        module.fail_json(msg=why, invocation=invocation)
    invocation["module_args"]["results"] = "(%d host results, not echoed)" % len(results)
    try:
        done = step.run(module.params, results, check_mode=module.check_mode)
    except step.StepFailed as exc:
        module.fail_json(msg=str(exc), invocation=invocation)
    module.exit_json(invocation=invocation, **done)


if __name__ == "__main__":
    main()
