# -*- coding: utf-8 -*-
# Copyright: gpu-runbook contributors
# Apache-2.0 (see pyproject.toml)
"""gpu_runbook_reset_gpus: the gpu_reset rung's per-GPU protocol, one GPU at a time -- the
fault into its history once per incident, the ledger's decision, the reset (the ``gpu_reset``
module, run on the node), one audit line and the remedy record -- and the host's outcome.

The decisions are pure (gpu_runbook.ledger.reset_protocol, unit-tested); this plugin does the
I/O: the ledger's files on the controller (the ledger's own functions, the same the
gpu_runbook_ledger module runs) and the module on the node. library/gpu_runbook_reset_gpus.py
documents the options and what it returns."""

from __future__ import annotations

import getpass
import os
import socket
import sys
from datetime import datetime

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

try:
    from gpu_runbook.ledger import (AUDIT_FILE, HISTORY_FILE, LedgerError, append_lines, audit_entry, check_policy,
                                    decide, fault_entry, read_lines, remedy_entry)
    from gpu_runbook.ledger import reset_protocol as proto
    from gpu_runbook.ledger.history import same_host
    from gpu_runbook.ledger.lock import owner_text
    from gpu_runbook.timeutil import UTC
except ImportError:  # run from a clone without `pip install .`: the engine next to the plugins
    sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "module_utils"))
    from gpu_runbook.ledger import (AUDIT_FILE, HISTORY_FILE, LedgerError, append_lines, audit_entry, check_policy,
                                    decide, fault_entry, read_lines, remedy_entry)
    from gpu_runbook.ledger import reset_protocol as proto
    from gpu_runbook.ledger.history import same_host
    from gpu_runbook.ledger.lock import owner_text
    from gpu_runbook.timeutil import UTC

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

    def _who(self, task_vars):
        job = task_vars.get("awx_job_id") or os.environ.get("AWX_JOB_ID") or os.environ.get("JOB_ID")
        try:
            user = getpass.getuser()
        except (KeyError, OSError):
            user = str(os.getuid())
        # the worker is forked from ansible-playbook: its parent is the run that holds the lock
        return owner_text({"user": user, "host": socket.gethostname(), "pid": os.getppid(), "job": job})

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        task_vars = task_vars or {}
        try:
            _validation, p = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        except AnsibleActionFail as exc:
            return dict(result, failed=True, msg=str(exc))
        bad = sorted(k for k in p["reset"] if k in _PER_GPU)
        if bad:
            return dict(result, failed=True, msg="reset may not set %s: each GPU's comes from the plan's target"
                        % ", ".join(bad))
        check = bool(self._task.check_mode)
        host = task_vars.get("inventory_hostname")
        sd = os.path.expanduser(p["state_dir"])
        hist_path, audit_path = os.path.join(sd, HISTORY_FILE), os.path.join(sd, AUDIT_FILE)
        warnings, results = [], []
        try:
            policy = check_policy(p["policy"])
            who = self._who(task_vars)
            mine = self._this_incident(hist_path, p["incident"], host, warnings)
            for gpu in p["gpus"]:
                results.append(self._one_gpu(gpu, p, host, check, policy, who, hist_path, audit_path, warnings,
                                             task_vars, mine))
        except LedgerError as exc:
            return dict(result, failed=True, msg="ledger: %s" % exc, gpus=results,
                        outcome=proto.outcome(results))
        out = proto.outcome(results)
        result.update(changed=out["changed"], outcome=out, gpus=results, msg=out["message"])
        if warnings:
            result["warnings"] = sorted(set(warnings))
        return result

    @staticmethod
    def _this_incident(hist_path, incident, host, warnings):
        """This incident's records of this host, read once before the first GPU (as action=history)."""
        if not incident:
            return []
        history, bad = read_lines(hist_path, datetime.now(UTC))
        warnings.extend(bad)
        return [e for e in history if str(e.get("incident") or "") == incident and not e.get("check_mode")
                and same_host(e.get("host"), host)]

    def _one_gpu(self, gpu, p, host, check, policy, who, hist_path, audit_path, warnings, task_vars, mine):
        inc = p["incident"] or None
        now = datetime.now(UTC)
        seen = proto.seen_of(mine, gpu)
        rec = proto.fault_record(host, gpu, seen)
        if rec is not None and not check:
            append_lines(hist_path, [fault_entry(dict(rec, incident=inc) if inc else rec, now)], "GPU history")
        history, bad = read_lines(hist_path, now)
        warnings.extend(bad)
        decision = decide(history, proto.decide_item(host, gpu), now, policy, inc)
        one = proto.before_reset(decision, seen, inc)
        if one is None:
            args = dict(p["reset"], gpu=gpu.get("pci") or gpu.get("uuid") or "",
                        fault_kinds=[k for k in gpu.get("kinds") or [] if isinstance(k, str)])
            run = self._execute_module(module_name="gpu_reset", module_args=args, task_vars=task_vars)
            one = proto.after_reset(run, check, gpu)
        append_lines(audit_path, [audit_entry(proto.audit_raw(host, gpu, one, check), who, now, check, inc)],
                     "audit log")
        remedy = proto.remedy_raw(host, gpu, one, check)
        if remedy is not None:
            append_lines(hist_path, [remedy_entry(dict(remedy, incident=inc) if inc else remedy, now)],
                         "GPU history")
        return proto.with_gpu(one, gpu)
