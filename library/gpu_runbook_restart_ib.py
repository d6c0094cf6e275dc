#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu-runbook contributors
# SPDX-License-Identifier: Apache-2.0

DOCUMENTATION = r"""
---
module: gpu_runbook_restart_ib
short_description: The ib_restart rung's protocol - decide, restart once, audit per port - for one host
description:
  - An action plugin (C(plugins/action/gpu_runbook_restart_ib.py)) run by the rung_ib_restart role on a drained node.
    It reads this incident's restarts of the plan's ports (the ledger's one reader), asks the ledger about each port
    (already done for this incident, the retry budget), runs M(ansible.legacy.ib_restart) on the node once when the
    answer is a restart, then writes one audit line and, when the restart ran, one remedy per port into the history.
  - "Restarted OK for every port in this incident - not again (C(ok)); restarted in this incident without mending
    the link - not again, check the cable (C(failed)); the ledger's budget spent - no restart (C(skipped)); a
    pre-check that says no (users of the IB stack, storage on the fabric) - C(refused); ports not back or counters
    still rising - C(failed), escalate to the cable. A port that came back clean is C(ok) though another stays sick."
  - The decisions are pure functions (C(module_utils/gpu_runbook/ledger/restart_protocol.py)); the ledger's files
    are written with the ledger's own code on the controller (C(module_utils/gpu_runbook/ledger/session.py)).
  - This file is its documentation; run as a plain module it refuses (the node cannot reach the controller's ledger).
version_added: "0.4.0"
author: gpu-runbook contributors
options:
  hcas:
    description: The plan's HCAs (C(mlx5_6)); their port 1 (C(mlx5_6/1)) is the key of each port's history.
    type: list
    elements: str
    default: []
  unit:
    description: The unit that restarts the IB stack (C(openibd) for MLNX/DOCA OFED).
    type: str
    default: openibd
  incident:
    description: The incident id (the history's key for "already done in this incident"); empty - no memory of earlier runs.
    type: str
    default: ""
  state_dir:
    description: The ledger's directory on the controller (audit.jsonl, history.jsonl).
    type: path
    default: ~/.gpu-runbook/state
  policy:
    description: Overrides of the ledger's decide policy (budgets, budget_window).
    type: dict
    default: {}
  restart:
    description:
      - The options of M(ansible.legacy.ib_restart) (node_drained, method, wait, soak, ...); C(unit) and
        C(expected_ports) come from O(unit) and O(hcas). A null value is left out.
    type: dict
    required: true
extends_documentation_fragment:
  - action_common_attributes
attributes:
  check_mode:
    support: full
    details:
      - Records no remedy; ib_restart runs in check mode (its pre-checks and what it would run); the audit lines are
        written, marked check_mode.
  diff_mode:
    support: none
  platform:
    platforms: posix
    details: The ledger on the controller, ib_restart on the node the task runs for.
requirements:
  - the gpu_runbook_restart_ib action plugin (C(plugins/action)) on the controller
  - on the node what M(ansible.legacy.ib_restart) needs (root, systemd or modprobe)
notes:
  - Needs the action plugin (C(plugins/action), named by C(action_plugins) in the project's ansible.cfg).
  - A ledger that cannot be read or written fails the task; the ladder's rescue leaves the node drained.
seealso:
  - module: ansible.legacy.ib_restart
    description: The restart of the IB stack, with every pre-check and the soak.
  - module: ansible.legacy.gpu_runbook_ledger
    description: The ledger (lock, audit log, history, decide).
"""

EXAMPLES = r"""
- name: Restart the IB stack once, audited port by port
  gpu_runbook_restart_ib:
    hcas: [mlx5_6]
    incident: INC-42
    restart:
      node_drained: true
      soak: 60
  become: true
"""

RETURN = r"""
outcome:
  description: The host's ib_restart outcome - rung, result (ok, failed, refused, skipped), message, escalate (cable, reboot,
    rma or null), changed, unit, ports (port, result, line) and, when the restart ran, what ib_restart returned
    (verified, holders, daemons, modules, fabric, blocked_by, after, still_rising, not_back, method).
  returned: always
  type: dict
  sample: {"rung": "ib_restart", "result": "ok", "escalate": null, "changed": true, "unit": "openibd",
           "ports": [{"port": "mlx5_6/1", "result": "ok", "line": "mlx5_6/1: ok; ACTIVE/LinkUp 400 Gb/s"}]}
"""

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec=dict(hcas=dict(type="list", elements="str", default=[]),
                                              unit=dict(type="str", default="openibd"),
                                              incident=dict(type="str", default=""),
                                              state_dir=dict(type="path", default="~/.gpu-runbook/state"),
                                              policy=dict(type="dict", default={}),
                                              restart=dict(type="dict", required=True)),
                           supports_check_mode=True)
    module.fail_json(msg="gpu_runbook_restart_ib needs its action plugin (action_plugins = ./plugins/action in "
                         "ansible.cfg): the ledger is on the controller, the restart on the node")


if __name__ == "__main__":
    main()
