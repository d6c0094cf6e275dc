# -*- coding: utf-8 -*-
# Copyright: gpu-runbook contributors
# SPDX-License-Identifier: Apache-2.0
"""gpu_runbook_plan on the controller: the plan step in ansible-playbook's own worker.

The plan reads every host's gather and Slurm read. As a module, at 1,000 hosts, most of its
task was Ansible templating those into arguments, one hostvars lookup (every source merged,
the host's facts deep-copied) per host (tests/benchmarks/bench_plan.py). Here they are read
from hostvars (O(hosts), O(result_var), O(slurm_var)) and the engine (module_utils/gpu_runbook,
the code the module runs) is called directly. The options and what it returns are the
module's: library/gpu_runbook_plan.py documents them."""

from __future__ import annotations

import os
import sys

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

try:
    from gpu_runbook import plan_step as step
    from gpu_runbook.hostvars import reader_for
except ImportError:  # run from a clone without `pip install .`: the engine next to the plugins
    sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "module_utils"))
    from gpu_runbook import plan_step as step
    from gpu_runbook.hostvars import reader_for


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(step.ARGUMENT_SPEC)

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp  # no files move: the step runs here
        try:
            _validation, params = self.validate_argument_spec(argument_spec=step.ARGUMENT_SPEC,
                                                              mutually_exclusive=step.MUTUALLY_EXCLUSIVE)
        except AnsibleActionFail as exc:
            return dict(result, failed=True, msg=str(exc))
        invocation = {"module_args": step.shown_args(params)}
        why = step.refused(params)
        if not why and params["hosts"] is not None:
            reader, why = reader_for(task_vars, params["hosts"], instead="gathered")
            if reader is not None:
                params["gathered"] = step.gathered_from(params["hosts"], reader.get, params["result_var"],
                                                        params["slurm_var"], params["domain_var"])
        if why:
            return dict(result, failed=True, msg=why, invocation=invocation)
        try:
            done = step.run(params, check_mode=bool(self._task.check_mode))
        except step.StepFailed as exc:
            return dict(result, failed=True, msg=exc.msg, invocation=invocation, **exc.data)
        result.update(done, invocation=invocation)
        return result
