#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu-runbook contributors
# SPDX-License-Identifier: Apache-2.0

DOCUMENTATION = r"""
---
module: gpu_runbook_rma
short_description: Say what a host needs after the remediation ladder and write its RMA bundle
description:
  - Runs on the controller (C(delegate_to localhost)) after the ladder's rungs, from a gather made
    after the ladder started.
  - "Always returns C(assessment): whether the host is healthy and may be resumed (healthy verdict,
    no warning or critical finding, no rung refused, failed or escalated), else the Slurm reason body
    that says what is needed (C(reboot), C(replace GPU <serial> at <PCI>), C(replace the cable of
    <hca> port 1), C(reset refused: <who holds it>) ...), the escalation (rma, cable, reboot) and
    the GPUs and IB ports concerned. Identities of GPUs that have fallen off the bus come from the
    gather before the ladder (O(earlier_facts)) and the ledger's history."
  - "With O(write=true) writes the RMA bundle: O(rma_dir)/<incident>/<host>.json (schema
    C(gpu-runbook/rma/v1)) and C(<host>.md) (Markdown a ticket can paste) - host, each GPU to
    replace (serial, UUID, PCI, index, model, VBIOS when known), its Xid and ECC history (this
    run's findings and the ledger's history for that GPU), row-remap state; for a cable the port,
    its state, rate and error counters; what was tried (the audit entries of this incident for the
    host); the paths of the logs and reports; the Slurm reason set."
  - Each file is written to a temporary file in the same directory and renamed over the target;
    a target (or O(rma_dir), or the incident directory) that is a symlink is refused and nothing
    is written. A bundle whose content is unchanged (its time aside) is not rewritten.
  - With O(state_dir) it reads the ledger's C(history.jsonl) and C(audit.jsonl) there (read-only).
version_added: "0.2.0"
author: gpu-runbook contributors
options:
  host:
    description: The host (inventory and Slurm node name).
    type: str
    required: true
  incident:
    description: Incident id; the bundle goes into a directory of that name and only audit entries of this incident count.
    type: str
    default: ""
  analysis_host:
    description: The host's entry of the analysis of the gather made after the ladder started
      (M(ansible.legacy.gpu_runbook_report) C(analysis.hosts[]) - verdict, severity, findings). Empty means no fresh analysis (not healthy).
    type: dict
    default: {}
  earlier_findings:
    description: Findings of the diagnosis before the ladder (for the Xid history and identities of lost GPUs).
    type: list
    elements: dict
    default: []
  facts:
    description: The fresh gather's facts (C(ansible_facts.gpu_health.facts) - gpu, ib).
    type: dict
    default: {}
  earlier_facts:
    description: The facts of the gather before the ladder.
    type: dict
    default: {}
  outcomes:
    description: The rung roles' outcomes (C(rung), C(result) ok/refused/failed/skipped/none, C(message), C(escalate), extras).
    type: list
    elements: dict
    default: []
  plan_host:
    description: The host's plan entry (schema gpu-runbook/plan/v1); its rma rung and rung targets name GPUs and HCAs.
    type: dict
    default: {}
  allow_reboot:
    description: Whether the reboot rung may run; when not, a host that needs a reboot says so in its reason.
    type: bool
    default: false
  state_dir:
    description: The ledger's directory; its history and audit files are read (never written).
    type: path
  history:
    description: History entries to use in addition to those read from O(state_dir).
    type: list
    elements: dict
    default: []
  attempts:
    description: Audit entries to use in addition to those read from O(state_dir).
    type: list
    elements: dict
    default: []
  paths:
    description: Logs and reports to name in the bundle.
    type: list
    elements: str
    default: []
  reason:
    description: The Slurm reason set on the node (goes into the bundle).
    type: str
  rma_dir:
    description: Controller-side directory of the bundles.
    type: path
    default: ~/.gpu-runbook/state/rma
  write:
    description: Write the bundle. False only assesses.
    type: bool
    default: false
  now:
    description: The bundle's time (ISO 8601); default now. For tests.
    type: str
extends_documentation_fragment:
  - action_common_attributes
attributes:
  check_mode:
    support: full
    details: Assesses as usual and, with O(write=true), builds the bundle and reports C(changed) as a real run would
      (false when the bundle on disk is the same); writes nothing. RV(files) names the paths it would write.
  diff_mode:
    support: none
  platform:
    platforms: posix
    details: Runs on the controller (C(delegate_to=localhost)).
requirements:
  - write access to O(rma_dir) on the controller when O(write=true)
  - read access to the ledger's O(state_dir) when it is set
notes:
  - The rung_verify role runs it after the ladder - once to decide what the node needs, once more with O(write=true)
    when RV(assessment.bundle) is true.
seealso:
  - module: ansible.legacy.gpu_runbook_ledger
    description: Keeps the history and audit log this module reads from O(state_dir).
  - module: ansible.legacy.slurm_node
    description: Resumes the node, or leaves it drained with RV(assessment.reason) as the reason.
  - module: ansible.legacy.gpu_health_facts
    description: The fresh gather (O(facts)) and the one before the ladder (O(earlier_facts)).
  - name: NVIDIA Xid errors
    description: Which Xids call for a replacement; the bundle lists each GPU's Xid history.
    link: https://docs.nvidia.com/deploy/xid-errors/index.html
  - name: NVIDIA GPU memory error management
    description: The row-remap state the bundle records, and NVIDIA's RMA thresholds for it.
    link: https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html
"""

EXAMPLES = r"""
- name: What does this host need after the ladder?
  gpu_runbook_rma:
    host: "{{ inventory_hostname }}"
    incident: "{{ remediation_plan_incident }}"
    analysis_host: "{{ fresh_host }}"
    outcomes: "{{ [rung_drain_outcome, rung_gpu_reset_outcome] }}"
    plan_host: "{{ remediation_plan_host }}"
  delegate_to: localhost
  register: need

- name: Write the RMA bundle for the ticket
  gpu_runbook_rma:
    host: "{{ inventory_hostname }}"
    incident: INC-42
    analysis_host: "{{ fresh_host }}"
    facts: "{{ fresh.ansible_facts.gpu_health.facts }}"
    outcomes: "{{ [rung_drain_outcome, rung_gpu_reset_outcome] }}"
    state_dir: ~/.gpu-runbook/state
    reason: "{{ drained.reason }}"
    write: true
  delegate_to: localhost
"""

RETURN = r"""
kept_drained_before:
  description: This incident's verify already left the host drained (an audit line says so); the ladder keeps that reason.
  returned: always
  type: bool
  sample: false
assessment:
  description: What the host needs after the ladder.
  returned: always
  type: dict
  contains:
    healthy:
      description: The fresh analysis is healthy with no warning or critical finding.
      returned: always
      type: bool
      sample: false
    resume:
      description: The node may be resumed (healthy, and no rung refused, failed or escalated).
      returned: always
      type: bool
      sample: false
    action:
      description: What to do with the node - resume, reboot or drain (stay drained).
      returned: always
      type: str
      sample: drain
    escalate:
      description: The escalation - rma, cable, reboot, or null.
      returned: always
      type: str
      sample: rma
    reason:
      description: The Slurm reason body (C(verified healthy) when it resumes).
      returned: always
      type: str
      sample: replace GPU 1652221000123 at 0000:ab:00.0 (Xid 79)
    needs:
      description: Each thing the node needs, in words (joined, they make RV(assessment.reason)).
      returned: always
      type: list
      elements: str
      sample: [replace GPU 1652221000123 at 0000:ab:00.0 (Xid 79)]
    gpus:
      description: The GPUs to replace or reboot for (serial, UUID, PCI, index, model, VBIOS when known, and the cause).
      returned: always
      type: list
      elements: dict
      sample: [{"pci": "0000:ab:00.0", "uuid": "GPU-4b1d7e09-45cf-12ea-4e91-33386720f7bb", "serial": "1652221000123",
                "index": 2, "model": "NVIDIA H100 80GB HBM3", "vbios": null, "cause": "Xid 79"}]
    ports:
      description: The IB ports concerned (device, port).
      returned: always
      type: list
      elements: dict
      sample: [{"device": "mlx5_0", "port": 1}]
    bundle:
      description: Whether an RMA bundle is called for (not resumed, escalation rma or cable).
      returned: always
      type: bool
      sample: true
    problems:
      description: The rung outcomes that were not ok (rung, result, message, escalate).
      returned: always
      type: list
      elements: dict
      sample: [{"rung": "gpu_reset", "result": "refused", "message": "...", "escalate": "rma"}]
    verdict:
      description: The fresh analysis' verdict (unknown without one).
      returned: always
      type: str
      sample: gpu_hardware
    severity:
      description: The fresh analysis' severity (unknown without one).
      returned: always
      type: str
      sample: critical
    errors:
      description: Input the assessment could not read; the node then stays drained and the reason says why.
      returned: when the input was unreadable
      type: list
      elements: str
      sample: ["verify could not decide from this input: TypeError: ..."]
files:
  description: The bundle's paths (written, or that would be written in check mode).
  returned: when write is true
  type: dict
  contains:
    json:
      description: The bundle as JSON (schema gpu-runbook/rma/v1).
      returned: always
      type: str
      sample: /home/ops/.gpu-runbook/state/rma/INC-42/gpu-r1-n02.json
    md:
      description: The bundle as Markdown a ticket can paste.
      returned: always
      type: str
      sample: /home/ops/.gpu-runbook/state/rma/INC-42/gpu-r1-n02.md
bundle:
  description: The bundle (schema gpu-runbook/rma/v1).
  returned: when write is true
  type: dict
warnings_lines:
  description: Ledger lines that could not be read and were skipped.
  returned: when there are any
  type: list
  elements: str
  sample: ["/home/ops/.gpu-runbook/state/history.jsonl:17: not JSON, skipped"]
"""

import json
import os
from datetime import datetime

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.gpu_runbook.ledger import AUDIT_FILE, HISTORY_FILE, LedgerError, read_lines
from ansible.module_utils.gpu_runbook.plan.rma import markdown, rma_bundle
from ansible.module_utils.gpu_runbook.plan.verify import assess, gpu_catalog
from ansible.module_utils.gpu_runbook.safewrite import WriteRefused, read_bytes, write_atomic
from ansible.module_utils.gpu_runbook.timeutil import UTC, iso, to_utc
from ansible.module_utils.gpu_runbook.validate import check



class Refused(Exception):
    pass


def _name(what, value):
    why = check("file_name", what, value)
    if why:
        raise Refused("%s: it cannot name a file (no '..')" % why)
    return value


def _read_ledger(sd, history, attempts):
    warn = []
    if sd:
        sd = os.path.expanduser(sd)
        for name, into in ((HISTORY_FILE, history), (AUDIT_FILE, attempts)):
            lines, bad = read_lines(os.path.join(sd, name))
            into.extend(lines)
            warn.extend(bad)
    return warn


def _write_file(path, text):
    _no_link(path, "target")
    try:
        write_atomic(path, text, mode=0o640)
    except WriteRefused as exc:
        raise Refused("%s; nothing written" % exc)


def _no_link(path, what):
    if os.path.islink(path):
        raise Refused("%s %s is a symlink: refusing to follow it; nothing written" % (what, path))


def _old(path):
    try:
        raw = read_bytes(path, "RMA bundle")  # never through a link, never blocking on a FIFO
        return None if raw is None else raw.decode("utf-8")
    except (OSError, UnicodeDecodeError, WriteRefused):
        return None


def write_bundle(module, bundle, rma_dir, incident, host):
    """-> (changed, files). Unchanged content (the time aside) is not rewritten."""
    base = os.path.expanduser(rma_dir)
    d = os.path.join(base, _name("incident", incident or "no-incident"))
    files = {"json": os.path.join(d, _name("host", host) + ".json"), "md": os.path.join(d, host + ".md")}
    for path, what in ((base, "rma_dir"), (d, "incident directory"), (files["json"], "target"), (files["md"], "target")):
        _no_link(path, what)
    try:
        before = json.loads(_old(files["json"]) or "null")
    except ValueError:
        before = None
    if isinstance(before, dict) and dict(before, generated=None) == dict(bundle, generated=None):
        bundle["generated"] = before.get("generated")
    text_json = json.dumps(bundle, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    text_md = markdown(bundle)
    if _old(files["json"]) == text_json and _old(files["md"]) == text_md:
        return False, files
    if not module.check_mode:
        os.makedirs(d, mode=0o750, exist_ok=True)
        _no_link(d, "incident directory")
        _write_file(files["json"], text_json)
        _write_file(files["md"], text_md)
    return True, files


def run(module):
    p = module.params
    host = (p["host"] or "").strip()
    if not host:
        raise Refused("host is required")
    # both name the bundle's files, written or not: refused before anything is read
    _name("host", host)
    if p["incident"]:
        _name("incident", p["incident"])
    history, attempts = list(p["history"]), list(p["attempts"])
    warn = _read_ledger(p["state_dir"], history, attempts)
    findings = list((p["analysis_host"] or {}).get("findings") or []) + list(p["earlier_findings"])
    catalog = gpu_catalog([p["facts"], p["earlier_facts"]], findings, history, host)
    assessment = assess(p["analysis_host"], p["outcomes"], p["plan_host"], p["allow_reboot"], catalog,
                        p["earlier_findings"])
    # this incident's verify already left the node drained: a re-run keeps the words it set
    # (counts in them move, and a new reason would stamp a new owner time for nothing)
    kept = [a for a in attempts if isinstance(a, dict) and a.get("host") == host and a.get("rung") == "verify"
            and a.get("incident") == p["incident"] and str(a.get("message") or "").startswith("drained")]
    res = dict(changed=False, assessment=assessment, msg=assessment["reason"], kept_drained_before=bool(kept))
    if warn:
        res["warnings_lines"] = warn
    if not p["write"]:
        return res
    now = to_utc(p["now"]) if p["now"] else datetime.now(UTC).replace(microsecond=0)
    if now is None:
        raise Refused("now %r is not an ISO 8601 time" % p["now"])
    merged = dict(p["analysis_host"] or {}, findings=findings)
    bundle, _md = rma_bundle(host, merged, p["facts"], history, attempts, p["paths"], p["incident"], iso(now),
                             reason=p["reason"], assessment=assessment, earlier_facts=p["earlier_facts"],
                             outcomes=p["outcomes"], plan_host=p["plan_host"])
    changed, files = write_bundle(module, bundle, p["rma_dir"], p["incident"], host)
    res.update(changed=changed, files=files, bundle=bundle,
               msg="RMA bundle %s %s" % ("unchanged:" if not changed else
                                         "would be written to" if module.check_mode else "written to", files["json"]))
    return res


def main():
    module = AnsibleModule(
        argument_spec=dict(
            host=dict(type="str", required=True),
            incident=dict(type="str", default=""),
            analysis_host=dict(type="dict", default={}),
            earlier_findings=dict(type="list", elements="dict", default=[]),
            facts=dict(type="dict", default={}),
            earlier_facts=dict(type="dict", default={}),
            outcomes=dict(type="list", elements="dict", default=[]),
            plan_host=dict(type="dict", default={}),
            allow_reboot=dict(type="bool", default=False),
            state_dir=dict(type="path"),
            history=dict(type="list", elements="dict", default=[]),
            attempts=dict(type="list", elements="dict", default=[]),
            paths=dict(type="list", elements="str", default=[]),
            reason=dict(type="str"),
            rma_dir=dict(type="path", default="~/.gpu-runbook/state/rma"),
            write=dict(type="bool", default=False),
            now=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    try:
        res = run(module)
    except (Refused, LedgerError) as exc:
        module.fail_json(msg=str(exc), changed=False)
    except OSError as exc:
        module.fail_json(msg="cannot write the RMA bundle: %s" % exc, changed=False)
    module.exit_json(**res)


if __name__ == "__main__":
    main()
