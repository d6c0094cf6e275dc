# SPDX-License-Identifier: Apache-2.0
"""Ansible's default screen output, less the bookkeeping an operator reads past: the roles'
argument checks ("Validating arguments against arg spec ...") and asserts that passed, the
in-memory grouping of hosts (add_host / group_by, one "ok ... (item=...)" line per node of a
1000-node job), facts kept for later (set_fact, set_stats) and the "included: ... for <every
host>" lines. A failure of any is printed as the default callback prints it, banner included;
-v shows them all."""

from __future__ import annotations

DOCUMENTATION = """
    name: gpu_runbook
    type: stdout
    short_description: default output without the argument checks and host-grouping lines
    description:
      - Ansible's default stdout callback, except that the ok and skipped results (and the task
        banner) of role argument validation, passing asserts, add_host / group_by, set_fact and
        set_stats are not printed (their "changed" is the in-memory inventory's, no node's), nor
        the "included ... for hosts" lines.
      - Their failures are printed as the default callback prints them; with -v every line is.
    extends_documentation_fragment:
      - default_callback
      - result_format_callback
    requirements:
      - set as stdout_callback in ansible.cfg
"""

from ansible.plugins.callback.default import CallbackModule as DefaultCallback
from ansible.utils.fqcn import add_internal_fqcns

# the actions whose success says nothing about a node: the in-memory inventory, the roles' argument
# checks and asserts that passed, facts kept for a later task, AWX's stats
QUIET_ACTIONS = frozenset(add_internal_fqcns(("add_host", "group_by", "validate_argument_spec", "assert",
                                              "set_fact", "set_stats")))


class CallbackModule(DefaultCallback):

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "gpu_runbook"

    def _quiet(self, task):
        return task.action in QUIET_ACTIONS and self._display.verbosity < 1

    def _task_start(self, task, prefix=None):
        if not self._quiet(task):
            return super()._task_start(task, prefix)
        # the banner waits for a result worth printing (a failure prints it, as the default does)
        if prefix is not None:
            self._task_type_cache[task._uuid] = prefix
        self._last_task_name = task.get_name().strip()

    def v2_runner_on_ok(self, result):
        if self._quiet(result.task):  # add_host's "changed" is the in-memory inventory's, no node's
            return
        super().v2_runner_on_ok(result)

    def v2_runner_item_on_ok(self, result):
        if self._quiet(result.task):  # add_host's "changed" is the in-memory inventory's, no node's
            return
        super().v2_runner_item_on_ok(result)

    def v2_runner_on_skipped(self, result):
        if self._quiet(result.task):
            return
        super().v2_runner_on_skipped(result)

    def v2_runner_item_on_skipped(self, result):
        if self._quiet(result.task):
            return
        super().v2_runner_item_on_skipped(result)

    def v2_playbook_on_include(self, included_file):
        if self._display.verbosity < 1:
            return
        super().v2_playbook_on_include(included_file)
