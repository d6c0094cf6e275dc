# -*- coding: utf-8 -*-
# Copyright: gpu-runbook contributors
# SPDX-License-Identifier: Apache-2.0
"""gpu_runbook_restart_ib: the ib_restart rung's protocol on one drained host -- this incident's
restarts of the plan's ports, the ledger's decision per port, one restart of the IB stack (the
``ib_restart`` module, run on the node), one audit line and one remedy record per port -- and the
host's outcome.

The decisions are pure (gpu_runbook.ledger.restart_protocol, unit-tested); this plugin does the
I/O: the ledger's files on the controller (gpu_runbook.ledger.session) and the module on the
node. library/gpu_runbook_restart_ib.py documents the options and what it returns."""

from __future__ import annotations

import os
import sys

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

try:
    from gpu_runbook.ledger import LedgerError
    from gpu_runbook.ledger import restart_protocol as proto
    from gpu_runbook.ledger.session import Session, given, refused
except ImportError:  # run from a clone without `pip install .`: the engine next to the plugins
    sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "module_utils"))
    from gpu_runbook.ledger import LedgerError
    from gpu_runbook.ledger import restart_protocol as proto
    from gpu_runbook.ledger.session import Session, given, refused

ARGUMENT_SPEC = {
    "hcas": {"type": "list", "elements": "str", "default": []},
    "unit": {"type": "str", "default": "openibd"},
    "incident": {"type": "str", "default": ""},
    "state_dir": {"type": "path", "default": "~/.gpu-runbook/state"},
    "policy": {"type": "dict", "default": {}},
    "restart": {"type": "dict", "required": True},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(ARGUMENT_SPEC)

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        task_vars = task_vars or {}
        try:
            _validation, p = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        except AnsibleActionFail as exc:
            return dict(result, failed=True, msg=str(exc))
        why = refused(dict(p, unit=[p["unit"]]), {"hcas": "ib_port", "unit": "unit", "incident": "text",
                                                  "state_dir": "path"}, "restart", ("expected_ports", "unit"))
        if why:
            return dict(result, failed=True, msg=why)
        check, host = bool(self._task.check_mode), task_vars.get("inventory_hostname")
        ports = proto.ports_of(p["hcas"])
        try:
            ledger = Session(p["state_dir"], p["incident"], p["policy"], task_vars.get("awx_job_id"))
            restarts = proto.restarts_of(ledger.this_incident(host), ports)
            one = proto.before_restart(ledger.decide(proto.decide_items(host, ports)), restarts, ledger.incident)
            run = None
            if one is None:
                args = dict(given(p["restart"]), unit=p["unit"], expected_ports=p["hcas"])
                run = self._execute_module(module_name="ib_restart", module_args=args, task_vars=task_vars)
                one = proto.after_restart(run, check, p["unit"], p["restart"].get("method") or "service")
            per_port = proto.port_results(one, run, ports)
            ledger.audit(proto.audit_raws(host, per_port, one, p["unit"], check), check)
            remedies = proto.remedy_raws(host, per_port, one, check)
            if remedies:
                ledger.record(remedies)
        except LedgerError as exc:
            return dict(result, failed=True, msg="ledger: %s" % exc)
        out = proto.outcome(one, p["unit"], per_port)
        result.update(changed=out["changed"], outcome=out, msg=out["message"])
        if ledger.warnings:
            result["warnings"] = sorted(set(ledger.warnings))
        return result
