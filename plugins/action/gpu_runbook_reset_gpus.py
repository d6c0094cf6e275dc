# -*- coding: utf-8 -*-
# Copyright: gpu-runbook contributors
# SPDX-License-Identifier: Apache-2.0
"""gpu_runbook_reset_gpus: the gpu_reset rung's per-GPU protocol, one GPU at a time -- the
fault into its history once per incident, the ledger's decision, the reset (the ``gpu_reset``
module, run on the node), one audit line and the remedy record -- and the host's outcome.

The decisions are pure (gpu_runbook.ledger.reset_protocol, unit-tested); this plugin does the
I/O: the ledger's files on the controller (the ledger's own functions, the same the
gpu_runbook_ledger module runs) and the module on the node. library/gpu_runbook_reset_gpus.py
documents the options and what it returns."""

from __future__ import annotations

import os
import sys

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

try:
    from gpu_runbook.ledger import LedgerError
    from gpu_runbook.ledger import reset_protocol as proto
    from gpu_runbook.ledger.session import Session, given, refused
except ImportError:  # run from a clone without `pip install .`: the engine next to the plugins
    sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "module_utils"))
    from gpu_runbook.ledger import LedgerError
    from gpu_runbook.ledger import reset_protocol as proto
    from gpu_runbook.ledger.session import Session, given, refused

ARGUMENT_SPEC = {
    "gpus": {"type": "list", "elements": "dict", "required": True},
    "incident": {"type": "str", "default": ""},
    "state_dir": {"type": "path", "default": "~/.gpu-runbook/state"},
    "policy": {"type": "dict", "default": {}},
    "reset": {"type": "dict", "required": True},
}
# what the plan's target decides; the task's ``reset`` may not set them
_PER_GPU = ("gpu", "fault_kinds")


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
        why = refused(p, {"incident": "text", "state_dir": "path"}, "reset", _PER_GPU)
        if why:
            return dict(result, failed=True, msg=why)
        check = bool(self._task.check_mode)
        host = task_vars.get("inventory_hostname")
        results = []
        try:
            ledger = Session(p["state_dir"], p["incident"], p["policy"], task_vars.get("awx_job_id"))
            mine = ledger.this_incident(host)
            for gpu in p["gpus"]:
                results.append(self._one_gpu(ledger, gpu, p, host, check, mine, task_vars))
        except LedgerError as exc:
            return dict(result, failed=True, msg="ledger: %s" % exc, gpus=results, outcome=proto.outcome(results))
        out = proto.outcome(results)
        result.update(changed=out["changed"], outcome=out, gpus=results, msg=out["message"])
        if ledger.warnings:
            result["warnings"] = sorted(set(ledger.warnings))
        return result

    def _one_gpu(self, ledger, gpu, p, host, check, mine, task_vars):
        seen = proto.seen_of(mine, gpu)
        rec = proto.fault_record(host, gpu, seen)
        if rec is not None and not check:
            ledger.record([rec])
        decision = ledger.decide([proto.decide_item(host, gpu)])[0]
        one = proto.before_reset(decision, seen, ledger.incident)
        if one is None:
            args = dict(given(p["reset"]), gpu=gpu.get("pci") or gpu.get("uuid") or "",
                        fault_kinds=[k for k in gpu.get("kinds") or [] if isinstance(k, str)])
            run = self._execute_module(module_name="gpu_reset", module_args=args, task_vars=task_vars)
            one = proto.after_reset(run, check, gpu)
        ledger.audit([proto.audit_raw(host, gpu, one, check)], check)
        remedy = proto.remedy_raw(host, gpu, one, check)
        if remedy is not None:
            ledger.record([remedy])
        return proto.with_gpu(one, gpu)
