#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu-runbook contributors
# Apache-2.0 (see pyproject.toml)

DOCUMENTATION = r"""
---
module: gpu_runbook_report
short_description: Aggregate every host's gpu_health result into the cluster view and report
description:
  - Runs once on the controller after M(gpu_health_facts) ran on every host.
  - Applies the cross-host rules (unreachable host is a prime suspect, the same Xid on
    every host points at the application), ranks the suspects and renders one console
    line per suspect host.
  - Read-only on the cluster; writes report files only when O(report_dir) is set.
version_added: "0.1.0"
author: gpu-runbook contributors
options:
  results:
    description: Map of inventory host name to that host's registered gpu_health_facts result.
    type: dict
    required: true
  lang:
    description: Language of the console lines.
    type: str
    choices: [en, ko]
    default: en
  report_dir:
    description: Directory to write report.json, report.md and report.html into (created if missing).
    type: path
  job:
    description: The job as M(gpu_runbook_job) returned it (Slurm nodes, start, StdOut/StdErr).
    type: dict
  job_log_dir:
    description: Directory of the job's logs (one combined file or one file per rank).
    type: path
  job_log_files:
    description: Extra job log files (for example the Slurm StdOut/StdErr paths).
    type: list
    elements: path
    default: []
"""

EXAMPLES = r"""
- name: Aggregate on the controller
  gpu_runbook_report:
    results: "{{ dict(ansible_play_hosts_all | zip(ansible_play_hosts_all | map('extract', hostvars, 'gpu_health_result'))) }}"
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
analysis:
  description: >-
    The analysis (schema gpu-runbook/analysis/v1) with its cluster section. Every host and the
    job carry confidence (high, medium or low) and confidence_reason: how sure their verdict is.
  returned: always
  type: dict
lines:
  description: One console line per suspect host, then one line for the healthy ones.
  returned: always
  type: list
  elements: str
summary:
  description: Counts, suspects and hosts to remediate (for set_stats / AWX workflows).
  returned: always
  type: dict
"""

import datetime
import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.gpu_runbook.diagnose import console_lines, diagnose, summary as make_summary
from ansible.module_utils.gpu_runbook.probes import read_tail

_MAX_LOG = 256 * 1024 * 1024


def _read_logs(log_dir, files):
    """{name: text} of the job's logs; unreadable files are reported, not fatal."""
    found, problems = {}, []
    paths = list(files or [])
    if log_dir:
        if not os.path.isdir(log_dir):
            problems.append("job_log_dir %s is not a directory" % log_dir)
        else:
            for root, _dirs, names in os.walk(log_dir):
                paths += [os.path.join(root, n) for n in sorted(names)]
    for path in paths:
        if not os.path.isfile(path):
            problems.append("%s: not found" % path)
            continue
        try:
            name = os.path.relpath(path, log_dir) if log_dir and path.startswith(log_dir) else os.path.basename(path)
            found[name] = read_tail(path, _MAX_LOG)
        except OSError as exc:
            problems.append("%s: %s" % (path, exc.strerror))
    return found, problems


def main():
    module = AnsibleModule(
        argument_spec=dict(
            results=dict(type="dict", required=True),
            lang=dict(type="str", choices=["en", "ko"], default="en"),
            report_dir=dict(type="path"),
            job=dict(type="dict"),
            job_log_dir=dict(type="path"),
            job_log_files=dict(type="list", elements="path", default=[]),
        ),
        supports_check_mode=True,
    )
    lang = module.params["lang"]
    logs, problems = _read_logs(module.params["job_log_dir"], module.params["job_log_files"])
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()
    analysis = diagnose(module.params["results"], job_logs=logs, slurm_job=module.params["job"],
                        log_problems=problems, generated=now)
    lines = console_lines(analysis, lang)
    summary = make_summary(analysis)
    changed = False
    if module.params["report_dir"] and not module.check_mode:
        try:
            from ansible.module_utils.gpu_runbook.reports import write_reports
            summary["report_files"] = write_reports(analysis, module.params["report_dir"], lang)
        except ImportError as exc:
            module.fail_json(msg="report_dir needs jinja2 on the controller's Python: %s" % exc)
        except OSError as exc:
            module.fail_json(msg="cannot write reports to %s: %s" % (module.params["report_dir"], exc))
        changed = True
    module.exit_json(changed=changed, analysis=analysis, lines=lines, summary=summary)


if __name__ == "__main__":
    main()
