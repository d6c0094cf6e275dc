#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu-runbook contributors
# SPDX-License-Identifier: Apache-2.0

DOCUMENTATION = r"""
---
module: gpu_runbook_plan
short_description: Turn a fresh diagnosis into the remediation plan (what the ladder would do)
description:
  - Runs once on the controller after M(ansible.legacy.gpu_runbook_report). Computes the plan with the
    engine's pure C(make_plan) (schema C(gpu-runbook/plan/v1)) from the diagnosis, what each
    host's gather saw (compute processes, GPUs) and the policy (allowed rungs, caps).
  - Per host the plan holds the evidence, each rung it would climb (cheapest first), the
    exact argv of every command and the pre-checks that block a rung, named in words.
  - The remediation_plan role names the hosts (O(hosts)); an action plugin (C(plugins/action/gpu_runbook_plan.py))
    runs the step inside ansible-playbook, on the controller, reading each host's gather and Slurm read from its
    variables, and builds the per-host facts and the failure domains in one pass with the code this module runs
    (C(module_utils/gpu_runbook/plan_step.py)); nothing is templated per host. RV(by_host) hands each host its
    entry with one lookup. This file is the step as a module and its documentation.
  - Changes nothing on any host or in Slurm. It only writes C(plan.json) and C(plan.md) into
    O(plan_dir) when that is set, never through a symlink; a temporary file in the directory
    is renamed over the target, and a target that is a symlink is refused.
version_added: "0.1.0"
author: gpu-runbook contributors
options:
  analysis:
    description: The diagnosis, C(analysis) as M(ansible.legacy.gpu_runbook_report) returned it (schema gpu-runbook/analysis/v1).
    type: dict
    required: true
  facts:
    description:
      - "What each host's gather saw: C({host: {compute_apps: [...], slurm: {...}}}) from
        C(gpu_health_result.ansible_facts.gpu_health.facts)."
      - C(compute_apps) null means the process list could not be read; a GPU reset is then
        blocked on that host. Absent means not gathered (capture replay).
      - C(slurm) is the node's state (C(state), C(reason), C(reason_user), C(owned)) or C(error)
        when it could not be read (its drain is then blocked).
      - A host's entry here replaces the one built from O(gathered).
    type: dict
    default: {}
  hosts:
    description:
      - The hosts to plan for (usually C(ansible_play_hosts)); each host's registered gather (O(result_var)) and
        Slurm read (O(slurm_var)) are read on the controller and make its O(gathered) entries.
      - Needs the gpu_runbook_plan action plugin (C(plugins/action), named by C(action_plugins) in the project's
        ansible.cfg); without it pass O(gathered). Mutually exclusive with O(gathered).
    type: list
    elements: str
  result_var:
    description: With O(hosts), the variable holding each host's registered M(ansible.legacy.gpu_health_facts) result.
    type: str
    default: gpu_health_result
  slurm_var:
    description: With O(hosts), the variable holding each host's registered Slurm read (M(ansible.legacy.slurm_node)).
    type: str
    default: remediation_plan_slurm
  gathered:
    description:
      - What the play registered, per host, as it is; the module builds each host's O(facts) entry from it.
      - Mutually exclusive with O(hosts), which builds it from each host's variables.
    type: dict
    suboptions:
      hosts:
        description: The hosts to build facts for (the play's hosts).
        type: list
        elements: str
        default: []
      compute_apps:
        description:
          - "C({host: gpu_health_result.ansible_facts.gpu_health.facts.compute_apps}). A host left out was
            not gathered (capture replay); a null list could not be read (a GPU reset is then blocked)."
        type: dict
        default: {}
      probes:
        description:
          - "C({host: gpu_health_result.ansible_facts.gpu_health.probes}). A host without compute_apps whose
            C(nvidia-smi-compute-apps.csv) probe failed gets a null (unreadable) process list."
        type: dict
        default: {}
      slurm:
        description:
          - "C({host: the registered ansible.legacy.slurm_node state=present result}). Skipped or left out: no
            Slurm state; failed or without C(state): the state is unknown (that node's drain is blocked)."
        type: dict
        default: {}
      domains:
        description: "C({host: failure domain}) (each host's O(domain_var)); a blank or non-text value is no domain."
        type: dict
        default: {}
  domain_groups:
    description:
      - "Inventory groups, C({group: [hosts]}) (Ansible's C(groups)): the groups O(domain_group_names) names are
        failure domains (host -> the first matching group by name); every member counts, also hosts outside the
        play. A group's name alone makes no domain."
    type: dict
    default: {}
  domain_group_names:
    description: The groups of O(domain_groups) that are failure domains, each a group name or a shell pattern
      (C(rack*)); empty, none (C(all) and C(ungrouped) never are).
    type: list
    elements: str
    default: []
  domain_var:
    description:
      - "The host variable that names a host's failure domain (a plain string, e.g. the leaf switch the slurm_nodes
        inventory plugin reads from C(scontrol show topology)); read with O(hosts), it wins over
        O(domain_group_names); a host in O(policy)'s C(domains) keeps that domain."
      - "Hosts with no known domain count as one for the correlated check: at least 3 of them sick, at least
        C(correlated_fraction) of them, and more than the drain caps allow is an incident (nothing drained there)."
    type: str
    default: gpu_runbook_domain
  policy:
    description:
      - The policy; keys C(allowed_rungs), C(allow_reboot), C(max_drain), C(max_drain_percent),
        C(max_per_domain), C(domains) (host -> failure domain), C(already_drained),
        C(incident_id), C(ib_unit), C(approved_hosts) and the engine's other policy keys.
      - C(approved_hosts) (null by default) is an approval given beforehand, e.g. an AWX workflow's
        approved plan; a host outside it is planned, but every rung of its is blocked ("not in the
        approved plan") and it takes no drain cap; an empty list approves nothing (the job's own
        environment included), and with O(confirm) the run stays a plan. Null values take the
        engine's defaults; an unknown key fails with the list of known ones.
    type: dict
    default: {}
  plan_dir:
    description: Directory on the controller for plan.json and plan.md (created if missing); unset writes none.
    type: path
  confirm:
    description:
      - Whether the caller asked to act (C(-e confirm=yes)). Only the header line and
        C(summary.plan_only) change (the ladder's own plays act, not this module); in check mode,
        and with an empty C(policy.approved_hosts), the plan is a plan whatever this says.
    type: bool
    default: false
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
    details: The same plan, RV(lines) and RV(summary) (with RV(summary.plan_only) true); plan.json and plan.md are not
      written, and C(changed) is false where a real run with O(plan_dir) reports true.
  diff_mode:
    support: none
  platform:
    platforms: posix
    details: Runs on the controller (C(delegate_to=localhost), C(run_once=true)).
requirements:
  - write access to O(plan_dir) on the controller when it is set
notes:
  - Read-only on the cluster. Run it with C(delegate_to=localhost) and C(run_once=true).
  - The remediation_plan role runs it and hands RV(summary) to AWX with M(ansible.builtin.set_stats)
    (C(gpu_runbook_plan), C(gpu_runbook_plan_act)) for a workflow's approval node; the workflow's act node
    passes C(gpu_runbook_plan_act) back as C(policy.approved_hosts).
seealso:
  - module: ansible.legacy.gpu_runbook_report
    description: The diagnosis this module plans from (O(analysis)).
  - module: ansible.legacy.slurm_node
    description: Runs the drain, resume and reboot rungs, and reads the node states passed in O(policy).
  - module: ansible.legacy.gpu_reset
    description: Runs the gpu_reset rung the plan lists.
  - module: ansible.legacy.ib_restart
    description: Runs the ib_restart rung the plan lists.
  - module: ansible.legacy.gpu_runbook_job_env
    description: Writes the job-scoped rungs (nccl_env, timeout) into the job's environment for its next run.
  - module: ansible.builtin.set_stats
    description: How RV(summary) reaches an AWX workflow.
"""

EXAMPLES = r"""
- name: Plan the remediation of the hosts just diagnosed
  gpu_runbook_plan:
    analysis: "{{ diagnosis_report_result.analysis }}"
    hosts: "{{ ansible_play_hosts }}"
    policy:
      max_drain: 2
      domains: {gpu-r3-n03: gpu-rack3, gpu-r3-n06: gpu-rack3}
    plan_dir: /var/tmp/gpu-runbook/INC-42
  delegate_to: localhost
  run_once: true
  register: plan_result
"""

RETURN = r"""
plan:
  description: The plan (schema gpu-runbook/plan/v1), also written to plan.json.
  returned: always
  type: dict
  contains:
    schema: {description: Version of this shape., returned: always, type: str, sample: gpu-runbook/plan/v1}
    incident_id:
      description: The incident id that goes into every Slurm reason.
      returned: always
      type: str
      sample: INC-42
    generated:
      description: When the diagnosis it plans from was made (the analysis' C(generated)), or null.
      returned: always
      type: str
      sample: "2026-12-02T07:20:00+00:00"
    policy:
      description: The policy used - O(policy) over the engine's defaults.
      returned: always
      type: dict
      sample: {"allowed_rungs": ["none", "drain", "nccl_env", "timeout", "gpu_reset", "ib_restart", "rma", "fix_application"],
               "allow_reboot": false, "max_drain": 2, "max_drain_percent": 10, "max_per_domain": 1, "domains": {},
               "already_drained": [], "incident_id": "INC-42", "ib_unit": "openibd", "rail_errors": "drain"}
    hosts:
      description: >-
        One entry per host, the hosts to act on first: host, verdict, severity, rung, confidence and
        confidence_reason (how sure the verdict is), evidence, slurm, decision (act, review, blocked,
        skip, report_only), reason, rungs (each with rung, label, scope, disruptive, status, why, target,
        commands as argv lists, env, notes, blockers), blockers, final. The ladder acts on a node only on a
        high-confidence verdict: any other host whose verdict asks for a node rung is C(review) - its rungs are
        listed, blocked, with the reason ("confidence medium - ..."), and nothing is drained,
        reset or restarted; a job-scoped rung (nccl_env, timeout) needs medium, and on low
        nothing acts.
      returned: always
      type: list
      elements: dict
      sample: [{"host": "gpu-r3-n03", "verdict": "gpu_hardware", "severity": "critical", "rung": "reboot",
                "confidence": "high", "confidence_reason": "the job's culprit rank 18 runs here and this host's Xid 79
                (kern.log:9) explains it", "evidence": "Xid 79 (GPU has fallen off the bus) on GPU 0000:75:00.0 ...",
                "slurm": null, "decision": "act", "reason": "climb drain -> rma, verifying after each; gpu_reset
                skipped, reboot blocked", "rungs": [{"rung": "drain", "label": "drain node", "scope": "host",
                "disruptive": false, "status": "planned", "why": "Xid 79 ...", "target": {"node": "gpu-r3-n03"},
                "commands": [["scontrol", "update", "NodeName=gpu-r3-n03", "State=DRAIN",
                "Reason=gpu-runbook: INC-42: Xid 79 ..."]], "env": [], "notes": [], "blockers": []}],
                "blockers": []}]
    incidents:
      description: Correlated failures (a failure domain or a rail) that stop drains - kind, name, hosts, why, action.
      returned: always
      type: list
      elements: dict
      sample: [{"kind": "rail", "name": "mlx5_4", "hosts": ["gpu-r3-n01", "gpu-r3-n02", "gpu-r3-n05"],
                "why": "...", "action": "..."}]
    job:
      description: "The job's share: rungs (the job-scoped rungs per host), env for its next run, notes, application
        fixes to report."
      returned: always
      type: dict
      sample: {"rungs": [{"rung": "nccl_env", "host": "gpu-r3-n05", "why": "...", "env": ["NCCL_IB_HCA=^=mlx5_4"],
               "target": {"rails": ["mlx5_4"]}}], "env": ["NCCL_IB_HCA=^=mlx5_4"], "notes": [], "report": []}
    commands:
      description: "Every planned command in order: host, rung, argv."
      returned: always
      type: list
      elements: dict
      sample: [{"host": "gpu-r3-n03", "rung": "drain", "argv": ["scontrol", "update", "NodeName=gpu-r3-n03", "State=DRAIN",
                "Reason=gpu-runbook: INC-42: Xid 79 ..."]}]
    summary:
      description: "Counts for an AWX approval node: act, review, blocked, skip, report_only, hosts, incidents,
        commands, drains, disruptive, already_drained."
      returned: always
      type: dict
      sample: {"act": 1, "review": 0, "blocked": 2, "skip": 5, "report_only": 0, "hosts": 8, "incidents": 0,
               "commands": 1, "already_drained": 0, "drains": 1, "disruptive": 1}
    errors: {description: Input the plan had to leave out., returned: always, type: list, elements: str, sample: []}
by_host:
  description: >-
    The same entries as RV(plan.hosts), keyed by host, so that each host of the play finds its own
    with one lookup (C(by_host[inventory_hostname])).
  returned: always
  type: dict
  sample: {"gpu-r3-n01": {"host": "gpu-r3-n01", "verdict": "healthy", "severity": "ok", "rung": "none",
           "confidence": "high", "confidence_reason": "", "evidence": "", "slurm": null, "decision": "skip",
           "reason": "healthy: nothing to do", "rungs": [], "blockers": [], "final": null, "after": null}}
lines:
  description: >-
    Console lines: a header, one line per host that is not skipped (decision, rungs it would
    climb, blockers, the exact commands), one line for the hosts with nothing to do, then
    incidents and the job's environment.
  returned: always
  type: list
  elements: str
  sample: ["plan INC-42 (gpu-runbook/plan/v1): 1 to act, 2 blocked, 0 report only, 5 with nothing to do; 1 command(s);
            plan only: nothing was changed (-e confirm=yes acts)",
           "nothing to do (5): gpu-r3-n01, gpu-r3-n02, gpu-r3-n04, gpu-r3-n07, gpu-r3-n08"]
summary:
  description: The plan's summary plus incident_id, the hosts to act on and the written files (for set_stats).
  returned: always
  type: dict
  contains:
    incident_id: {description: The incident id., returned: always, type: str, sample: INC-42}
    act: {description: Number of hosts the ladder would act on., returned: always, type: int, sample: 1}
    blocked:
      description: "Number of hosts whose drain is blocked (caps, foreign drain, incident, not in the approved plan)."
      returned: always
      type: int
      sample: 2
    hosts_act: {description: Hosts the ladder would act on., returned: always, type: list, elements: str, sample: [gpu-r3-n03]}
    waves:
      description: "The hosts whose nodes the ladder climbs on, in waves: two hosts of one failure domain are never
        in the same wave (a host with no known domain is a domain of its own); remediate.yml runs one wave per batch."
      returned: always
      type: list
      elements: list
      sample: [[gpu-r3-n03, gpu-r5-n01], [gpu-r3-n06]]
    wave_sizes: {description: The size of each wave (the acting play's serial list)., returned: always, type: list,
                 elements: int, sample: [2, 1]}
    hosts_blocked:
      description: Hosts whose drain (or job-scoped rung) is blocked.
      returned: always
      type: list
      elements: str
      sample: [gpu-r3-n05, gpu-r3-n06]
    plan_only:
      description: "True unless confirm=yes outside check mode with an approval, if any, that is not empty (then the
        ladder acts on hosts_act)."
      returned: always
      type: bool
      sample: true
    files:
      description: Paths of plan.json and plan.md when written (empty otherwise).
      returned: always
      type: list
      elements: str
      sample: [/var/tmp/gpu-runbook/INC-42/plan.json, /var/tmp/gpu-runbook/INC-42/plan.md]
    review:
      description: Number of hosts left for a person to review (their verdict is not sure enough to act).
      returned: always
      type: int
      sample: 0
    skip: {description: Number of hosts with nothing to do., returned: always, type: int, sample: 5}
    report_only:
      description: "Number of hosts whose fix is the application's (reported, nothing run)."
      returned: always
      type: int
      sample: 0
    hosts: {description: Number of hosts in the plan., returned: always, type: int, sample: 8}
    incidents:
      description: Number of correlated failures (a failure domain or a rail) that stop drains.
      returned: always
      type: int
      sample: 0
    commands: {description: Number of planned commands., returned: always, type: int, sample: 1}
    drains: {description: Number of planned drains., returned: always, type: int, sample: 1}
    disruptive:
      description: "Number of planned disruptive rungs (reset, restart, reboot)."
      returned: always
      type: int
      sample: 1
    already_drained:
      description: Number of hosts already drained before the plan.
      returned: always
      type: int
      sample: 0
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.gpu_runbook import plan_step as step


def main():
    module = AnsibleModule(argument_spec=step.ARGUMENT_SPEC, mutually_exclusive=step.MUTUALLY_EXCLUSIVE,
                           supports_check_mode=True)
    p = module.params
    if p["hosts"] is not None:
        # hostvars are the controller's: only the action plugin (plugins/action) can read them
        module.fail_json(msg="hosts needs the gpu_runbook_plan action plugin (action_plugins = ./plugins/action "
                             "in ansible.cfg); without it pass gathered")
    refused = step.refused(p)
    if refused:
        module.fail_json(msg=refused)
    try:
        done = step.run(p, check_mode=module.check_mode)
    except step.StepFailed as exc:
        module.fail_json(msg=exc.msg, **exc.data)
    for warning in done.pop("warnings"):
        module.warn(warning)
    module.exit_json(invocation={"module_args": step.shown_args(p)}, **done)


if __name__ == "__main__":
    main()
