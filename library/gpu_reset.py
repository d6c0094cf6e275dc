#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu-runbook contributors
# Apache-2.0 (see pyproject.toml)

DOCUMENTATION = r"""
---
module: gpu_reset
short_description: Reset one NVIDIA GPU on a drained node, after named pre-checks, and verify it
description:
  - Resets one GPU with C(nvidia-smi -r -i <gpu>) on the node the task runs on (as root), the
    C(gpu_reset) rung of the remediation ladder.
  - "Pre-checks, in this order, each a named refusal (C(failed=true), C(blocked_by) names it,
    nothing is changed): the node is not drained (O(node_drained)); a fault that a reset cannot
    fix is among O(fault_kinds) (its rung in the taxonomy or the Xid catalog is C(reboot) or
    C(rma), for example C(gpu_fallen_off_bus), C(xid:79), C(row_remap_failure)): the result
    carries C(escalate) instead; the GPU is lost or not visible to nvidia-smi (escalate
    C(reboot)); the GPU's own state says a reset will not help (a row-remap failure read from
    C(nvidia-smi -q -x)); compute processes hold the GPU; the message names them, for
    example 'GPU 0000:3b:00.0 is held by python (pid 4711), python (pid 4712)'."
  - Persistence mode holds the GPU like a client and makes the reset fail with
    C(In use by another client); when it is Enabled it is released with
    C(nvidia-smi -pm 0 -i <gpu>) before the reset and, with O(restore_persistence), set back with
    C(nvidia-smi -pm 1 -i <gpu>) after it, also when the reset failed. What was done is in
    C(persistence).
  - "Reads the reset's exit code: 0 and 'successfully reset' is a reset; 255 with 'In use by
    another client' is a refusal naming the holders nvidia-smi printed; 15 is a GPU lost during
    the reset (escalate C(reboot)); 4 is no permission; anything else fails with nvidia-smi's text."
  - After a reset the GPU is read again (C(nvidia-smi -q -x -i <gpu>)) and C(after) says whether a
    pending row remap was applied, volatile uncorrectable ECC cleared and reset-required cleared;
    C(verified) is true only when all hold. A reset that is not verified is not a module
    failure; the ladder's verify rung keeps the node drained.
  - Every nvidia-smi call runs under O(timeout) (with coreutils C(timeout) when it is
    installed); a call that hangs is reported as C(nvidia_smi_hang) and escalates to C(reboot).
version_added: "0.2.0"
author: gpu-runbook contributors
options:
  gpu:
    description:
      - The GPU to reset, by PCI bus id (C(0000:3b:00.0) or C(00000000:3B:00.0)) or UUID
        (C(GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)). An index is refused on purpose, since
        indexes move when a GPU drops out.
    type: str
    required: true
  node_drained:
    description:
      - Whether the Slurm drain step confirmed that the node is drained (no jobs). The module
        refuses to act unless this is true; it does not query Slurm itself.
    type: bool
    required: true
  restore_persistence:
    description: Set persistence mode back to Enabled after the reset when it was Enabled before.
    type: bool
    default: true
  fault_kinds:
    description:
      - Finding kinds that led to this reset (taxonomy names such as C(row_remap_pending),
        C(gpu_fallen_off_bus), C(row_remap_failure)), and Xid codes as C(xid:79). A kind whose
        rung is reboot or RMA blocks the reset and sets C(escalate). An unknown name blocks it too.
    type: list
    elements: str
    default: []
  timeout:
    description: Seconds each nvidia-smi call may take before it is killed.
    type: int
    default: 120
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: Runs only the read-only pre-checks and returns the plan in C(would_run); changed is false.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in diff mode.
    support: none
notes:
  - Needs root on the node (C(nvidia-smi -r) and C(-pm) do).
  - "Not handled yet, and named here so that nobody assumes otherwise. DCGM (C(nv-hostengine),
    C(dcgm-exporter)) and other monitors hold the GPU like a client; the reset is then refused
    and C(reset.holder_text) carries nvidia-smi's words, so stop them first. C(nvidia_drm) with a
    display attached holds the GPU the same way. On HGX/NVSwitch systems with Ampere GPUs,
    Fabric Manager must be running for a single-GPU reset, and without it all NVLink peers
    must be reset in one command; this module resets one GPU and reports nvidia-smi's refusal."
  - A GPU whose Xid history repeats should go to RMA instead of another reset; that budget
    belongs to the ladder's per-GPU history, not to this module.
seealso:
  - name: nvidia-smi documentation
    description: The C(-r) / C(--gpu-reset) and C(-pm) options and the exit codes.
    link: https://docs.nvidia.com/deploy/nvidia-smi/index.html
"""

EXAMPLES = r"""
- name: Reset the GPU with a pending row remap (the node is drained)
  gpu_reset:
    gpu: "0000:3b:00.0"
    node_drained: "{{ gpu_runbook_drain_result.drained }}"
    fault_kinds: [row_remap_pending, ecc_uncorrectable_volatile]
  register: reset
  become: true

- name: Plan only
  gpu_reset:
    gpu: GPU-4a7b2c1d-0000-1111-2222-333344445555
    node_drained: true
  check_mode: true
  register: plan
"""

RETURN = r"""
gpu:
  description: The GPU as identified by nvidia-smi (PCI bus id, UUID, index).
  returned: when it was found
  type: dict
  sample: {"pci": "0000:3b:00.0", "uuid": "GPU-...", "index": 2}
blocked_by:
  description:
    - What refused the reset, by name. One or more of node_not_drained, bad_gpu_id,
      unknown_fault_kind, fault_not_fixable_by_reset, nvidia_smi_missing, gpu_lost,
      gpu_not_visible, nvidia_smi_hang, gpu_state_unreadable, compute_processes,
      persistence_release_failed, gpu_in_use, no_permission, reset_failed.
  returned: on refusal
  type: list
  elements: str
escalate:
  description: The rung to climb instead (reboot or rma) when a reset cannot fix what the GPU has.
  returned: when a reset cannot help
  type: str
holders:
  description: Compute processes that hold the GPU, as nvidia-smi listed them.
  returned: when compute processes hold the GPU
  type: list
  elements: dict
  sample: [{"pid": 4711, "process": "python", "pci": "0000:3b:00.0"}]
persistence:
  description: Persistence mode before the reset and what was done with it.
  returned: when the GPU was found
  type: dict
  sample: {"before": true, "released": true, "restored": true}
reset:
  description: How nvidia-smi -r ended (outcome reset, in_use, gpu_lost, no_permission, timeout or
    failed; the rc, its message and the holder text nvidia-smi printed).
  returned: when the reset ran
  type: dict
before:
  description: The GPU's reset-relevant state before (row remap pending, volatile uncorrectable ECC, reset required).
  returned: when the GPU was read
  type: dict
after:
  description: The same, read again after the reset, with the reasons it is not verified.
  returned: when the reset ran
  type: dict
verified:
  description: True only when after the reset no remap is pending, no volatile uncorrectable ECC and no reset required is left.
  returned: always
  type: bool
commands:
  description: The nvidia-smi argv lists that changed something (-pm, -r), in order.
  returned: always
  type: list
  elements: list
would_run:
  description: In check mode, the argv lists a real run would execute, in order.
  returned: in check mode when no pre-check blocks
  type: list
  elements: list
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.gpu_runbook.nvsmi import parse_compute_apps_csv, parse_nvidia_smi, parse_nvidia_smi_failure
from ansible.module_utils.gpu_runbook.nvsmi.reset import (IDENTITY_FIELDS, after_reset, find_gpu, holders_message,
                                                         parse_gpu_id, parse_identity_csv,
                                                         parse_persistence_output, parse_reset_output,
                                                         reset_cannot_fix, says_lost, says_not_found)

APPS_FIELDS = ("pid", "process_name", "gpu_bus_id")
_REFUSAL_NAMES = {"in_use": "gpu_in_use", "gpu_lost": "gpu_lost", "no_permission": "no_permission",
                  "timeout": "nvidia_smi_hang", "failed": "reset_failed"}


class Refusal(Exception):
    """A pre-check (or step) that stops the reset: ``blocked`` names it, ``extra`` goes into the result."""

    def __init__(self, blocked, msg, **extra):
        Exception.__init__(self, msg)
        self.blocked = blocked
        self.msg = msg
        self.extra = extra


class Smi(object):
    """nvidia-smi through run_command, argv lists only, each call under the deadline."""

    def __init__(self, module, timeout):
        self.module = module
        self.timeout = timeout
        self.bin = module.get_bin_path("nvidia-smi")
        self.timeout_bin = module.get_bin_path("timeout")
        self.changes = []

    def argv(self, *args):
        return [self.bin] + list(args)

    def run(self, *args, **kw):
        argv = self.argv(*args)
        if kw.get("changes"):
            self.changes.append(argv)
        full = argv
        if self.timeout_bin:
            full = [self.timeout_bin, "-k", "5", str(self.timeout)] + argv
        rc, out, err = self.module.run_command(full, errors="surrogate_then_replace")
        return rc, out or "", err or ""


def _summary(facts, pci):
    a = after_reset(facts, pci)
    return {k: a[k] for k in ("found", "remap_pending", "retired_pages_pending", "volatile_uncorrectable",
                              "reset_required", "errors")}


def precheck_faults(fault_kinds):
    verdict = reset_cannot_fix(fault_kinds)
    if verdict["unknown"]:
        raise Refusal("unknown_fault_kind", "unknown fault kind(s) %s: not resetting on a fault nobody declared "
                      "(taxonomy kinds, or xid:<code>)" % ", ".join(verdict["unknown"]))
    if verdict["escalate"]:
        raise Refusal("fault_not_fixable_by_reset", "a GPU reset cannot fix %s: escalate to %s instead"
                      % (", ".join(verdict["blocking"]), verdict["escalate"]), escalate=verdict["escalate"])


def find_target(smi, kind, value, asked):
    """The GPU row from --query-gpu (pci, uuid, index, persistence), or a Refusal."""
    rc, out, err = smi.run("--query-gpu=" + ",".join(IDENTITY_FIELDS), "--format=csv,noheader", "-i", value)
    text = out + "\n" + err
    if rc in (124, 137):
        raise Refusal("nvidia_smi_hang", "nvidia-smi did not answer within %ds: the GPU or driver is wedged; "
                      "escalate to reboot" % smi.timeout, escalate="reboot")
    if says_lost(text, rc):
        raise Refusal("gpu_lost", "GPU %s is lost (nvidia-smi exit %s: %s); a reset cannot reach it: escalate to "
                      "reboot" % (asked, rc, _first(text)), escalate="reboot")
    if says_not_found(text, rc):
        raise Refusal("gpu_not_visible", "nvidia-smi does not see GPU %s (%s): if the id is right the GPU is "
                      "gone from the bus; escalate to reboot" % (asked, _first(text)), escalate="reboot")
    if rc != 0:
        facts, findings = parse_nvidia_smi_failure(text, rc)
        raise Refusal("gpu_state_unreadable", "nvidia-smi failed reading GPU %s: %s"
                      % (asked, findings[0]["message"] if findings else _first(text)))
    row = find_gpu(parse_identity_csv(out), kind, value)
    if row is None:
        raise Refusal("gpu_state_unreadable", "could not read GPU %s from nvidia-smi --query-gpu (it printed: %s)"
                      % (asked, _first(text) or "nothing"))
    return row


def precheck_state(smi, pci):
    """-q -x before: the GPU's own state; a row-remap failure and the like -> escalate."""
    rc, out, err = smi.run("-q", "-x", "-i", pci)
    if rc in (124, 137):
        raise Refusal("nvidia_smi_hang", "nvidia-smi -q -x did not answer within %ds: escalate to reboot"
                      % smi.timeout, escalate="reboot")
    facts, findings = parse_nvidia_smi(out, "nvidia-smi-q.xml")
    before = _summary(facts, pci)
    if rc != 0 or not before["found"]:
        raise Refusal("gpu_state_unreadable", "could not read GPU %s with nvidia-smi -q -x (exit %s: %s)"
                      % (pci, rc, _first(err + "\n" + out) or "nothing printed"), before=before)
    kinds = sorted({f["kind"] for f in findings if (f.get("gpu") or {}).get("pci") in (None, pci)})
    verdict = reset_cannot_fix([k for k in kinds if k != "xid"])
    if verdict["escalate"]:
        raise Refusal("fault_not_fixable_by_reset", "GPU %s reports %s: a reset cannot fix it; escalate to %s"
                      % (pci, ", ".join(verdict["blocking"]), verdict["escalate"]),
                      escalate=verdict["escalate"], before=before)
    return before


def precheck_processes(smi, pci):
    rc, out, err = smi.run("--query-compute-apps=" + ",".join(APPS_FIELDS), "--format=csv,noheader", "-i", pci)
    if rc != 0:
        raise Refusal("gpu_state_unreadable", "could not list the compute processes on GPU %s (exit %s: %s); "
                      "not resetting blind" % (pci, rc, _first(err + "\n" + out) or "nothing printed"))
    procs = [p for p in parse_compute_apps_csv(out, fields=list(APPS_FIELDS)) if p["pci"] in (None, pci)]
    if procs:
        raise Refusal("compute_processes", holders_message(pci, procs) + "; stop them (or wait for the drain) "
                      "and run again", holders=procs)


def _first(text):
    return next((line.strip() for line in (text or "").splitlines() if line.strip()), "")[:200]


def plan(smi, pci, persistence_on, restore):
    steps = []
    if persistence_on:
        steps.append(smi.argv("-pm", "0", "-i", pci))
    steps.append(smi.argv("-r", "-i", pci))
    if persistence_on and restore:
        steps.append(smi.argv("-pm", "1", "-i", pci))
    steps.append(smi.argv("-q", "-x", "-i", pci))
    return steps


def release_persistence(smi, pci, pers):
    rc, out, err = smi.run("-pm", "0", "-i", pci, changes=True)
    res = parse_persistence_output(out + "\n" + err, rc)
    if not res["ok"]:
        raise Refusal("gpu_lost" if res["outcome"] == "gpu_lost" else "persistence_release_failed",
                      "could not disable persistence mode on GPU %s before the reset: %s" % (pci, res["message"]),
                      escalate="reboot" if res["outcome"] == "gpu_lost" else None, persistence=pers)
    pers["released"] = True


def restore_persistence(smi, pci, pers):
    rc, out, err = smi.run("-pm", "1", "-i", pci, changes=True)
    res = parse_persistence_output(out + "\n" + err, rc)
    pers["restored"] = res["ok"]
    if not res["ok"]:
        pers["restore_error"] = res["message"]


def do_reset(smi, pci, pers, restore):
    """-pm 0, -r, -pm 1 (on every path once released), -q -x. -> result dict (raises Refusal)."""
    if pers["before"]:
        release_persistence(smi, pci, pers)
    rc, out, err = smi.run("-r", "-i", pci, changes=True)
    res = parse_reset_output(out + "\n" + err, rc)
    res["rc"] = rc
    if pers["released"] and restore and res["outcome"] != "gpu_lost":
        restore_persistence(smi, pci, pers)
    if res["outcome"] != "reset":
        msg = "GPU %s was not reset: %s" % (pci, res["message"])
        if res["outcome"] == "in_use" and res["holder_text"]:
            msg += " -- nvidia-smi says: %s (a DCGM host engine, dcgm-exporter, nvidia-smi monitor or " \
                   "Fabric Manager may hold it)" % res["holder_text"][:300]
        raise Refusal(_REFUSAL_NAMES[res["outcome"]], msg, escalate=res["escalate"], reset=res, persistence=pers)
    rc2, out2, _err2 = smi.run("-q", "-x", "-i", pci)
    facts, _findings = parse_nvidia_smi(out2 if rc2 == 0 else "", "nvidia-smi-q.xml")
    return res, after_reset(facts, pci)


def run(module, p, smi):
    result = {"changed": False, "verified": False, "commands": smi.changes}
    if not p["node_drained"]:
        raise Refusal("node_not_drained", "node is not drained: a GPU reset kills whatever runs on the GPU, so it "
                      "runs only on a node the drain step confirmed as drained (node_drained=true)")
    kind, value = parse_gpu_id(p["gpu"])
    if kind is None:
        raise Refusal("bad_gpu_id", value)
    precheck_faults(p["fault_kinds"])
    if not smi.bin:
        raise Refusal("nvidia_smi_missing", "nvidia-smi is not installed or not on PATH: cannot check or reset GPU %s"
                      % p["gpu"])
    row = find_target(smi, kind, value, p["gpu"])
    pci = row["pci"]
    result["gpu"] = {"pci": pci, "uuid": row["uuid"], "index": row["index"]}
    pers = {"before": row["persistence"], "released": False, "restored": False}
    result["persistence"] = pers
    result["before"] = precheck_state(smi, pci)
    precheck_processes(smi, pci)
    if module.check_mode:
        result["would_run"] = plan(smi, pci, pers["before"], p["restore_persistence"])
        result["msg"] = "check mode: every pre-check passed; would reset GPU %s" % pci
        return result
    try:
        result["reset"], result["after"] = do_reset(smi, pci, pers, p["restore_persistence"])
    except Refusal as exc:
        exc.extra.setdefault("gpu", result["gpu"])
        exc.extra.setdefault("before", result["before"])
        exc.extra["changed"] = bool(pers["released"] and not pers["restored"])
        raise
    result["changed"] = True
    result["verified"] = result["after"]["verified"]
    result["msg"] = "GPU %s reset%s" % (pci, ", verified" if result["verified"] else
                                        "; NOT verified: " + "; ".join(result["after"]["not_verified"]))
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            gpu=dict(type="str", required=True),
            node_drained=dict(type="bool", required=True),
            restore_persistence=dict(type="bool", default=True),
            fault_kinds=dict(type="list", elements="str", default=[]),
            timeout=dict(type="int", default=120),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if p["timeout"] < 1:
        module.fail_json(msg="timeout must be at least 1 second", blocked_by=["bad_timeout"], changed=False)
    smi = Smi(module, p["timeout"])
    try:
        result = run(module, p, smi)
    except Refusal as exc:
        out = {"changed": False, "verified": False, "commands": smi.changes, "blocked_by": [exc.blocked]}
        out.update({k: v for k, v in exc.extra.items() if v is not None})
        module.fail_json(msg=exc.msg, **out)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
