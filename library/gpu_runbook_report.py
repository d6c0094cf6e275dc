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
    description: Directory to write report.json into (created if missing).
    type: path
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
  description: The analysis (schema gpu-runbook/analysis/v1) with its cluster section.
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

import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.gpu_runbook.cluster import build_cluster
from ansible.module_utils.gpu_runbook.i18n import text
from ansible.module_utils.gpu_runbook.render import one_line, summary_counts


def main():
    module = AnsibleModule(
        argument_spec=dict(
            results=dict(type="dict", required=True),
            lang=dict(type="str", choices=["en", "ko"], default="en"),
            report_dir=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    lang = module.params["lang"]
    analysis = build_cluster(module.params["results"])
    hosts = analysis["hosts"]
    suspects = [h for h in hosts if h["host"] in analysis["cluster"]["suspects"]]
    lines = [one_line(h, lang) for h in suspects]
    healthy = analysis["cluster"]["healthy"]
    if healthy:
        lines.append(text(lang, "healthy_hosts", n=len(healthy), hosts=", ".join(healthy)))
    counts = summary_counts(hosts)
    summary = {
        "hosts": counts["n"], "critical": counts["crit"], "warning": counts["warn"], "healthy": counts["ok"],
        "suspects": analysis["cluster"]["suspects"], "remediate": analysis["cluster"]["remediate"],
        "verdicts": {h["host"]: {"verdict": h["verdict"], "rung": h["rung"]} for h in suspects},
    }
    changed = False
    if module.params["report_dir"] and not module.check_mode:
        os.makedirs(module.params["report_dir"], exist_ok=True)
        path = os.path.join(module.params["report_dir"], "report.json")
        with open(path, "w") as fh:
            json.dump(analysis, fh, indent=2, ensure_ascii=False, default=str)
        changed = True
    module.exit_json(changed=changed, analysis=analysis, lines=lines, summary=summary)


if __name__ == "__main__":
    main()
