#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu-runbook contributors
# SPDX-License-Identifier: Apache-2.0

DOCUMENTATION = r"""
---
module: gpu_runbook_reset_gpus
short_description: The gpu_reset rung's per-GPU protocol - record, decide, reset, audit - for one host
description:
  - An action plugin (C(plugins/action/gpu_runbook_reset_gpus.py)) run by the rung_gpu_reset role on a drained node.
    For each GPU of the plan's target, in order, it reads this incident's records of the host once (the ledger's one
    reader), records the GPU's fault in its history once per incident, asks the ledger (already done for this
    incident, the repeat-fault rule, the retry budget), runs M(ansible.legacy.gpu_reset) on the node when the answer
    is a reset, writes one audit line and, when the reset ran, the remedy into the GPU's history.
  - "Per GPU: already reset OK for this incident - not again (C(ok)); reset before in this incident without fixing
    it - not again, escalate to reboot (C(failed)); the ledger sends it up (repeat faults, spent budget) - that rung,
    no reset (C(skipped)); a refusal of the module (a holder, MIG, a fault a reset cannot fix) - C(refused) with its
    escalation; a reset that is not verified or broke - C(failed), escalate to reboot."
  - The decisions are pure functions (C(module_utils/gpu_runbook/ledger/reset_protocol.py)); the ledger's files are
    written with the ledger's own code (the same as M(ansible.legacy.gpu_runbook_ledger)), on the controller.
  - This file is its documentation; run as a plain module it refuses (the node cannot reach the controller's ledger).
version_added: "0.4.0"
author: gpu-runbook contributors
options:
  gpus:
    description: The plan's target GPUs (C(pci), C(uuid), C(serial), C(kinds) - the fault kinds handed to gpu_reset).
    type: list
    elements: dict
    required: true
  incident:
    description: The incident id (the history's key for "already done in this incident"); empty - no memory of earlier runs.
    type: str
    default: ""
  state_dir:
    description: The ledger's directory on the controller (audit.jsonl, history.jsonl).
    type: path
    default: ~/.gpu-runbook/state
  policy:
    description: Overrides of the ledger's decide policy (repeat_faults, repeat_window, budgets, budget_window).
    type: dict
    default: {}
  reset:
    description:
      - The options of M(ansible.legacy.gpu_reset) for every GPU (node_drained, allow_mig, timeout, ...); each GPU's
        C(gpu) and C(fault_kinds) come from O(gpus) and may not be set here.
    type: dict
    required: true
extends_documentation_fragment:
  - action_common_attributes
attributes:
  check_mode:
    support: full
    details:
      - Records no fault and no remedy; gpu_reset runs in check mode (its pre-checks and what it would run); the audit
        lines are written, marked check_mode.
  diff_mode:
    support: none
  platform:
    platforms: posix
    details: The ledger on the controller, gpu_reset on the node the task runs for.
requirements:
  - the gpu_runbook_reset_gpus action plugin (C(plugins/action)) on the controller
  - on the node what M(ansible.legacy.gpu_reset) needs (root, C(nvidia-smi))
notes:
  - Needs the action plugin (C(plugins/action), named by C(action_plugins) in the project's ansible.cfg).
  - A ledger that cannot be read or written (an unsafe state directory, a full disk) fails the task; the ladder's
    rescue leaves the node drained.
seealso:
  - module: ansible.legacy.gpu_reset
    description: The reset of one GPU, with every pre-check.
  - module: ansible.legacy.gpu_runbook_ledger
    description: The ledger (lock, audit log, GPU history, decide).
"""

EXAMPLES = r"""
- name: Reset the plan's GPUs one at a time
  gpu_runbook_reset_gpus:
    gpus: "{{ rung_gpu_reset_entry.target.gpus }}"
    incident: INC-42
    reset:
      node_drained: true
      timeout: 120
  register: reset_gpus
"""

RETURN = r"""
outcome:
  description: The host's gpu_reset outcome - rung, result (ok, failed, refused, skipped, none), message, escalate (reboot, rma
    or null), changed, gpus.
  returned: always
  type: dict
  sample: {"rung": "gpu_reset", "result": "ok", "escalate": null, "changed": true,
           "message": "GPU 0000:2a:00.0: GPU 0000:2a:00.0 reset, verified", "gpus": []}
gpus:
  description: Each GPU's result - result, audit, escalate, changed, ran, message, pci, uuid, line (and verified, holders,
    blocked_by, argv when the reset ran).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec=dict(gpus=dict(type="list", elements="dict", required=True),
                                              incident=dict(type="str", default=""),
                                              state_dir=dict(type="path", default="~/.gpu-runbook/state"),
                                              policy=dict(type="dict", default={}),
                                              reset=dict(type="dict", required=True)),
                           supports_check_mode=True)
    module.fail_json(msg="gpu_runbook_reset_gpus needs its action plugin (action_plugins = ./plugins/action in "
                         "ansible.cfg): the ledger is on the controller, the reset on the node")


if __name__ == "__main__":
    main()
