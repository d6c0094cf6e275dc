# -*- coding: utf-8 -*-
# Copyright: gpu-runbook contributors
# SPDX-License-Identifier: Apache-2.0
"""gpu_runbook_report on the controller: the report step in ansible-playbook's own worker.

The step reads every host's result, so it always runs on the controller. As a module it cost,
at 10,000 hosts, Ansible templating every result into its arguments, encoding them into the
module's payload, a Python process decoding them, and the module's 17 MB result encoded,
checked for secrets and decoded again (tests/benchmarks/bench_aggregate.py). Here the results
are read from hostvars (O(hosts) and O(result_var)) and the engine (module_utils/gpu_runbook,
the same code the module runs) is called directly. The options and what it returns are the
module's: library/gpu_runbook_report.py documents them."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

try:
    from gpu_runbook import report_step as step
    from gpu_runbook.hostvars import MISSING, reader_for
except ImportError:  # run from a clone without `pip install .`: the engine next to the plugins
    sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "module_utils"))
    from gpu_runbook import report_step as step
    from gpu_runbook.hostvars import MISSING, reader_for


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(step.ARGUMENT_SPEC)

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp  # no files move: the step runs here
        task_vars = task_vars or {}
        try:
            _validation, params = self.validate_argument_spec(
                argument_spec=step.ARGUMENT_SPEC,
                required_one_of=step.REQUIRED_ONE_OF,
                mutually_exclusive=step.MUTUALLY_EXCLUSIVE,
            )
        except AnsibleActionFail as exc:
            return dict(result, failed=True, msg=str(exc))
        shown = {k: v for k, v in params.items() if k not in ("results", "hosts")}
        why = step.refused(params)
        if params["hosts"] is not None and not why:
            results, why = self._from_hostvars(params["hosts"], params["result_var"], task_vars)
        elif not why:
            results, why = step.results_map(params["results"])
        if why:
            return dict(result, failed=True, msg=why, invocation={"module_args": shown})
        # 10,000 results (or host names) echoed back under -v would bury the report: the count is what -vvv needs
        shown["results"] = "(%d host results, not echoed)" % len(results)
        try:
            done = step.run(params, results, check_mode=bool(self._task.check_mode))
        except step.StepFailed as exc:
            return dict(result, failed=True, msg=str(exc), invocation={"module_args": shown})
        result.update(done, invocation={"module_args": shown})
        return result

    @staticmethod
    def _from_hostvars(hosts, var, task_vars):
        """({host: what the report reads of its ``var``}, None) or (None, why). A host with no
        such variable (skipped, or its gather never registered) stays in, as a host without a
        result. The variables as they are, untemplated, as a registered result is."""
        reader, why = reader_for(task_vars, hosts, instead="results")
        if reader is None:
            return None, why

        def lookup(host):
            value = reader.get(host, var)
            if value is MISSING:
                return None
            # anything else is reported as that host's malformed result (hostresult.report_input)
            return dict(value) if isinstance(value, Mapping) else value

        return step.host_results(hosts, lookup), None
