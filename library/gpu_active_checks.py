#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu-runbook contributors
# SPDX-License-Identifier: Apache-2.0

DOCUMENTATION = r"""
---
module: gpu_active_checks
short_description: Prove a drained or idle GPU node healthy under load (DCGM diag, NCCL all-reduce, nvbandwidth)
description:
  - Runs the active tier on the node, one check after another, each under its own deadline and in
    its own process group (killed with everything it started when the deadline passes).
    The checks are C(inventory) (GPU count and PCI addresses, NVLink links up, NVSwitch fabric state, from
    C(nvidia-smi -q -x) and C(nvidia-smi nvlink --status)), C(dcgm) (C(dcgmi diag -r <level> -j),
    each failed test a finding with DCGM's error code, GPU and message), C(nccl) (nccl-tests'
    C(all_reduce_perf) on all the node's GPUs, its bus bandwidth against the GPU model's figure),
    C(nvbandwidth) (host-to-GPU, GPU-to-host and GPU-to-GPU copies) and C(ib_pair)
    (C(ib_write_bw) to O(ib_pair_peer), whose C(ib_write_bw) server must be listening).
  - These find what passive evidence misses - a GPU slow or failing only under load, an NVLink
    running degraded, a node at half bandwidth - the straggler a whole job waits for.
  - Refuses to run on a node whose GPUs have processes (a running job) unless O(allow_busy).
  - A tool that is not installed, or DCGM's host engine not running, is C(not_run) with the
    reason, never C(passed); the tier's status is then C(incomplete).
  - Loads every GPU for minutes (DCGM level 2 about two minutes, level 3 about 15, level 4 longer);
    run it on drained or idle nodes. Check mode runs nothing and returns the plan.
version_added: "0.2.0"
author: gpu-runbook contributors
options:
  checks:
    description: The checks to run, in this order.
    type: list
    elements: str
    choices: [inventory, dcgm, nccl, nvbandwidth, ib_pair]
    default: [inventory, dcgm, nccl, nvbandwidth]
  dcgm_level:
    description: The DCGM diagnostic level (C(dcgmi diag -r)); 1 seconds, 2 about two minutes, 3 about 15 minutes.
    type: int
    default: 2
    choices: [1, 2, 3, 4]
  expected_gpus:
    description: How many GPUs the node has; fewer is a finding (and sets C(all_reduce_perf -g)).
    type: int
  expected_pci:
    description: The PCI addresses of the node's GPUs (for example from the last healthy gather); one missing is a finding.
    type: list
    elements: str
  expected_busbw_gbps:
    description:
      - The single-node all-reduce bus bandwidth (GB/s) the node must reach. Default from the GPU
        model (8x H100 SXM 460, 8x H200 431, 8x A100 SXM 228, 8x V100 110, after Azure's health checks).
    type: float
  expected_nvbandwidth_gbps:
    description: Per-path floors in GB/s, keys C(h2d_gbps), C(d2h_gbps), C(p2p_gbps); default from the GPU model.
    type: dict
  nccl_message_size:
    description: The all-reduce message size (C(all_reduce_perf -b/-e)); the model figures are for 16G.
    type: str
    default: 16G
  ib_pair_peer:
    description: The node whose C(ib_write_bw) server this node's client connects to (C(ib_pair)).
    type: str
  ib_device:
    description: The HCA for C(ib_write_bw -d).
    type: str
  expected_ib_gbps:
    description: The C(ib_write_bw) average (Gb/s) the pair must reach.
    type: float
  timeouts:
    description: Seconds per check (C(dcgm) may be a mapping of level to seconds); defaults fit NVIDIA's documented durations.
    type: dict
  allow_busy:
    description: Run even when processes are on the GPUs (disturbs and mis-measures a running job).
    type: bool
    default: false
  require:
    description: Checks that must run; one that cannot (its tool missing, DCGM's host engine down) fails the tier.
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - action_common_attributes
attributes:
  check_mode:
    support: full
    details: Runs nothing and returns the plan (the commands and their deadlines).
  diff_mode:
    support: none
  platform:
    platforms: posix
    details: Linux GPU nodes.
requirements:
  - Python 3 on the node
  - C(nvidia-smi); C(dcgmi) and a running C(nv-hostengine) for C(dcgm); nccl-tests' C(all_reduce_perf); C(nvbandwidth);
    perftest's C(ib_write_bw) for C(ib_pair). A missing one is reported as not run.
notes:
  - The rung_verify role runs it before a node is resumed; C(diagnose.yml -e active=yes) on idle or drained nodes.
seealso:
  - module: ansible.legacy.gpu_health_facts
    description: The passive gather the tier's findings join (rung_verify, diagnose.yml -e active=yes).
  - name: dcgmi diag
    description: DCGM's diagnostic levels and what each runs.
    link: https://docs.nvidia.com/datacenter/dcgm/latest/reference/command-line-reference/dcgmi/dcgmi-diag.html
"""

EXAMPLES = r"""
- name: Prove the node under load before it goes back
  gpu_active_checks:
    checks: [inventory, dcgm, nccl]
    dcgm_level: 2
    expected_gpus: 8
  register: active

- name: Keep it out when the tier did not pass
  ansible.builtin.debug:
    msg: "{{ active.active.status }}: {{ active.active.findings | map(attribute='message') | list }}"
"""

RETURN = r"""
active:
  description: The tier's result.
  returned: always
  type: dict
  contains:
    status:
      returned: always
      description: C(passed) (every check asked for passed), C(failed), C(incomplete) (one did not run), C(refused) (busy) or C(planned) (check mode).
      type: str
      sample: failed
    checks:
      returned: always
      description: One entry per check - C(check), C(status) (passed, failed, not_run, timeout, error), C(why), C(figures), C(findings), C(command), C(seconds).
      type: list
      elements: dict
      sample:
        - check: ib_pair
          status: failed
          why: 95.0 Gb/s, expected at least 360.0
          figures: {bw_gbps: 95.0, expected_gbps: 360.0, peer: gpu-r3-n05, device: mlx5_0}
          findings: []
          command: ib_write_bw --report_gbits -d mlx5_0 gpu-r3-n05
          seconds: 5.2
    findings:
      returned: always
      description: Every check's findings (the engine's finding shape), for the report and the verify decision.
      type: list
      elements: dict
      sample:
        - kind: active_busbw_low
          category: gpu_hardware
          severity: critical
          rung: drain
          message: "nccl: single-node all-reduce bus bandwidth 229.5 GB/s, 50% of the 460.0 GB/s this node should reach"
          source: active:nccl
    not_run:
      returned: always
      description: The checks asked for that did not run.
      type: list
      elements: str
    failed:
      returned: always
      description: The checks that failed, erred or timed out, and those required that did not run.
      type: list
      elements: str
    probes:
      returned: always
      description: "Each check as a source (key C(active:<check>), value C(ok) false with C(kind) not_run and C(error) for one that did not run), to join a gather's probes."
      type: dict
    plan:
      description: In check mode, what would run - C(check), C(command), C(timeout).
      type: list
      elements: dict
      returned: check mode
"""

import re

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.gpu_runbook.active import CHECKS
from ansible.module_utils.gpu_runbook.active.run import plan, run_tier
from ansible.module_utils.gpu_runbook.validate import problems, shown


def main():
    module = AnsibleModule(
        argument_spec=dict(
            checks=dict(type="list", elements="str", choices=["inventory", "dcgm", "nccl", "nvbandwidth", "ib_pair"],
                        default=["inventory", "dcgm", "nccl", "nvbandwidth"]),
            dcgm_level=dict(type="int", default=2, choices=[1, 2, 3, 4]),
            expected_gpus=dict(type="int"),
            expected_pci=dict(type="list", elements="str"),
            expected_busbw_gbps=dict(type="float"),
            expected_nvbandwidth_gbps=dict(type="dict"),
            nccl_message_size=dict(type="str", default="16G"),
            ib_pair_peer=dict(type="str"),
            ib_device=dict(type="str"),
            expected_ib_gbps=dict(type="float"),
            timeouts=dict(type="dict"),
            allow_busy=dict(type="bool", default=False),
            require=dict(type="list", elements="str", default=[]),
        ),
        supports_check_mode=True,
    )
    p = dict(module.params)
    # what reaches a command line as a word: refused unless it is what it says (never an option)
    why = problems(p, {"ib_pair_peer": "node", "ib_device": "hca", "expected_pci": "pci"})
    why += ["require: %s is not a check (%s)" % (shown(c), ", ".join(CHECKS)) for c in p["require"] if c not in CHECKS]
    if p["expected_gpus"] is not None and not 0 <= p["expected_gpus"] <= 64:
        why.append("expected_gpus must be 0-64 (got %d)" % p["expected_gpus"])
    for name, value in (p["timeouts"] or {}).items():
        values = value.values() if isinstance(value, dict) else [value]
        if any(not str(v).isdigit() or not 1 <= int(v) <= 86400 for v in values):
            why.append("timeouts.%s must be 1-86400 seconds" % name)
    if p["nccl_message_size"] and not re.match(r"^[0-9]{1,12}[KMG]?$", p["nccl_message_size"]):
        why.append("nccl_message_size must be a number with an optional K, M or G (got %s)" % shown(
            p["nccl_message_size"]))
    if why:
        module.fail_json(msg="; ".join(why))
    if module.check_mode:
        module.exit_json(changed=False, active={"status": "planned", "checks": [], "findings": [], "not_run": [],
                                                "failed": [], "probes": {}, "plan": plan(p)})
    result = run_tier(p)
    # a stress test changes nothing on the node that stays: it loads it, then leaves it as it was
    module.exit_json(changed=False, active=result)


if __name__ == "__main__":
    main()
