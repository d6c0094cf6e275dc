#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu-runbook contributors
# SPDX-License-Identifier: Apache-2.0

DOCUMENTATION = r"""
---
module: slurm_node
short_description: Drain, resume, reboot or show one Slurm node, touching only drains it owns
description:
  - Runs on the Slurm controller (or any host with C(scontrol) and the cluster's
    C(SLURM_CONF)); in a play over GPU nodes delegate it to localhost.
  - C(state=drained) drains the node with C(scontrol update NodeName=<n> State=DRAIN
    Reason=<text>) (argv, never a shell string); C(state=resumed) resumes it with
    C(State=RESUME); C(state=reboot_requested) asks Slurm to reboot it with C(scontrol reboot
    [Reason=<text>] <n>) (slurmctld's RebootProgram reboots it once no job is left) - no C(ASAP)
    and no C(nextstate), because each of them clears the DRAIN flag when the node registers again
    (scontrol(1)) - the node comes back drained and only verify returns it to service;
    C(state=present) only reads it. Jobs are
    never cancelled and the node is never set DOWN by this module.
  - Ownership. Slurm keeps one reason per node and overwrites who set it and when on ANY
    reason change. Right after its drain the module reads the node back and stores the
    reason, C(reason_set_by_user) and C(reason_changed_at) in O(state_dir)/<node>.json
    (atomic write, mode 0600). Later it re-reasons or resumes the node only while all three
    still match that record. A node drained, down or failed by someone else (or whose reason
    changed after our drain) is never re-reasoned, resumed, rebooted or counted as ours - the
    module returns C(changed=false), C(owned=false), the foreign reason and a C(msg) saying why.
  - "Reboot. Only a node whose drain is ours is rebooted, and only once: a node that already
    shows C(REBOOT_REQUESTED), C(REBOOT_ISSUED) or is booting is left as it is (no change,
    whoever asked). Slurm stamps a new user and time on the reason when it takes the request,
    so the module reads the node back and records that as ours, with the boot time before. When
    Slurm sends the reboot it appends C(: reboot issued) (new user and time again). With
    O(wait_rebooted) the module waits (bounded) until the node has booted (a new C(BootTime)),
    registered and is still drained with our reason plus only Slurm's own suffix, then sets our
    reason again and records the drain as ours: the caller re-gathers and verifies before any
    resume. A node that does not come back in time, that Slurm timed out, or whose reason
    someone else changed meanwhile fails the task and is left out of service."
  - The node is read with C(scontrol show node -o) under C(SLURM_TIME_FORMAT=standard), the
    form every Slurm version prints (C(Reason=<text> [user@time])).
version_added: "0.1.0"
author: gpu-runbook contributors
options:
  name:
    description: One Slurm node name (not a hostlist expression).
    type: str
    required: true
  state:
    description:
      - C(drained) drain it (or update the reason of our own drain); C(resumed) resume it if
        the drain is ours; C(reboot_requested) ask Slurm to reboot it if the drain is ours (it
        stays drained through the boot); C(present) report it and whether the drain is ours.
    type: str
    choices: [drained, resumed, reboot_requested, present]
    default: present
  reason:
    description:
      - Why (one line of evidence). Required for C(state=drained). The prefix C(gpu-runbook:)
        is put in front when absent, and O(incident) after it.
      - With C(state=reboot_requested) optional - the reason Slurm shows while the node reboots;
        without it the node keeps the reason of our drain.
    type: str
  incident:
    description: "Incident id; part of the reason (C(gpu-runbook: <incident>: <reason>)) and the record."
    type: str
  state_dir:
    description: Controller-side directory of our ownership records.
    type: path
    default: ~/.gpu-runbook/state/drains
  wait_drained:
    description:
      - Seconds to wait (at most 86400) for DRAINED (no jobs left on the node) after a drain
        that is ours (C(state=drained), or C(state=present) on a node whose drain is ours); the
        module fails with the jobs still running when the time is up. 0 does not wait. Not
        waited for in check mode.
    type: int
    default: 0
  wait_rebooted:
    description:
      - With C(state=reboot_requested), seconds to wait for the node to come back from the reboot
        (0 - return right after the request). Back means a new C(BootTime), registered and still
        drained; the module then takes the drain back under our reason. Not ours any more, timed
        out in Slurm, or not back in time fails the task; the node is never resumed here.
    type: int
    default: 0
  timeout:
    description: Seconds each Slurm command may take before slurmctld counts as not answering.
    type: int
    default: 30
extends_documentation_fragment:
  - action_common_attributes
attributes:
  check_mode:
    support: full
    details:
      - Reads the node (C(scontrol show node)) and the ownership record, then reports the change it would make
        (C(changed), RV(msg) saying "would be ...") and the predicted state; runs no update, writes no record and
        does not wait for DRAINED.
  diff_mode:
    support: full
    details: The node's state and reason before and after (predicted in check mode).
  platform:
    platforms: posix
    details: Runs where C(scontrol) reaches slurmctld, usually the controller (C(delegate_to)).
requirements:
  - C(scontrol) (slurm-client) and the cluster's C(SLURM_CONF) on the host the task runs on
  - C(squeue) for O(wait_drained) (to name the jobs still running)
  - Slurm rights to update nodes (SlurmUser, root or an operator) for C(drained), C(resumed) and C(reboot_requested)
  - C(RebootProgram) in slurm.conf for C(state=reboot_requested)
notes:
  - Needs rights to update nodes (SlurmUser, root or an operator) for drained/resumed, and
    C(RebootProgram) in slurm.conf (on the controller and where C(scontrol) runs) for reboot_requested.
  - The record's user and time come from Slurm. Any other reason text, even our own with a
    word added, changes them and the node stops being ours; re-setting the identical text
    is no change to Slurm (22.05 keeps user and time), nor to us.
  - The rung_drain role drains with it, rung_verify resumes, re-reasons or reboots with it, and remediation_plan
    reads every node's state with it (C(state=present)) before planning.
seealso:
  - module: ansible.legacy.gpu_runbook_plan
    description: Plans the drains (capped at once and per failure domain) and the C(scontrol) argv of each.
  - module: ansible.legacy.gpu_runbook_ledger
    description: The remediation lock and the audit log of every drain and resume.
  - name: scontrol (Slurm)
    description: C(scontrol update NodeName=... State=DRAIN|RESUME Reason=...), C(scontrol reboot) and C(show node).
    link: https://slurm.schedmd.com/scontrol.html
  - name: slurm.conf RebootProgram (Slurm)
    description: What runs when Slurm reboots a node, needed for C(state=reboot_requested).
    link: https://slurm.schedmd.com/slurm.conf.html
"""

EXAMPLES = r"""
- name: Drain the culprit for incident INC-42
  slurm_node:
    name: "{{ inventory_hostname }}"
    state: drained
    incident: INC-42
    reason: "Xid 79 GPU 3 (0000:9a:00.0) fell off the bus"
    wait_drained: 600
  delegate_to: localhost

- name: Put it back - only if the drain is still ours
  slurm_node:
    name: "{{ inventory_hostname }}"
    state: resumed
  delegate_to: localhost
  register: resumed

- name: Reboot our own drained node; it returns to service when it is back
  slurm_node:
    name: "{{ inventory_hostname }}"
    state: reboot_requested
    incident: INC-42
    reason: "reboot: Xid 79 GPU 3 (0000:9a:00.0) fell off the bus"
  delegate_to: localhost

- name: Show a node and whether we own its drain
  slurm_node:
    name: gpu-r3-n02
  delegate_to: localhost
"""

RETURN = r"""
name: {description: The node., returned: always, type: str, sample: gpu-r3-n03}
state:
  description: "Slurm state, base + flags (IDLE+DRAIN, MIXED+DRAIN, DOWN+DRAIN+NOT_RESPONDING)."
  returned: success
  type: str
  sample: IDLE+DRAIN
base_state: {description: "IDLE, MIXED, ALLOCATED, DOWN ...", returned: success, type: str, sample: IDLE}
flags: {description: "DRAIN, NOT_RESPONDING, COMPLETING ...", returned: success, type: list, elements: str, sample: [DRAIN]}
drain:
  description: "DRAINED (no jobs left), DRAINING (jobs still run) or null."
  returned: success
  type: str
  sample: DRAINED
drained: {description: Drain set and no jobs left., returned: success, type: bool, sample: true}
reason:
  description: The node's reason (ours or not).
  returned: success
  type: str
  sample: "gpu-runbook: INC-42: Xid 79 (GPU has fallen off the bus) on GPU 0000:75:00.0"
reason_user: {description: Who set the reason (Slurm's reason_set_by_user)., returned: success, type: str, sample: slurm}
reason_time:
  description: When (reason_changed_at), as Slurm prints it under C(SLURM_TIME_FORMAT=standard).
  returned: success
  type: str
  sample: "2026-12-02T07:21:04"
gpus:
  description: >-
    GPUs the node's Gres line configures (the counts of its gpu entries summed; gpu:h100:8 -> 8), the count
    a healthy node should show; null when no gpu entry says its count.
  returned: success
  type: int
  sample: 8
owned:
  description: "The drain is ours by the record (all of reason, user and time match)."
  returned: success
  type: bool
  sample: true
record:
  description: Path of our ownership record for the node.
  returned: success
  type: str
  sample: /home/sre/.gpu-runbook/state/drains/gpu-r3-n03.json
rebooted:
  description: After O(wait_rebooted) - the boot times before and after and when the reboot was asked.
  returned: when the node came back from our reboot
  type: dict
  sample: {"boot_time_before": "2026-12-05T00:35:36", "boot_time": "2026-12-05T05:04:01",
           "requested_at": "2026-12-05T05:03:57+0000"}
reboot:
  description: "The reboot under way: REBOOT_REQUESTED, REBOOT_ISSUED (sent to the node) or null."
  returned: success
  type: str
  sample: REBOOT_REQUESTED
jobs:
  description: Jobs still on the node when the wait for DRAINED ran out (id, user, name, state).
  returned: when wait_drained timed out
  type: list
  elements: str
  sample: ["4242 alice llama-70b-pretrain RUNNING"]
msg:
  description: What was done or why the node was left alone.
  returned: always
  type: str
  sample: drained
"""

import json
import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.gpu_runbook.probes import run_argv
from ansible.module_utils.gpu_runbook.safewrite import WriteRefused, check_private_dir, read_bytes, write_atomic
from ansible.module_utils.gpu_runbook.slurm import (
    MAX_REASON, drain_reason, drain_status, owns, ownership_record, parse_node_state, parse_scontrol_show_node,
    plan_node, reboot_flag, reboot_progress, slurm_error_kind)
from ansible.module_utils.gpu_runbook.validate import check, check_text, problems

MAX_WAIT = 86400


class SlurmError(Exception):
    pass


def classify(tool, argv, rc, text, name):
    """A failed Slurm command -> one clear sentence."""
    said = " ".join(text.split())[:300]
    kind = slurm_error_kind(said)
    if kind == "unknown_node":
        return "unknown node %s (slurmctld: %s)" % (name, said)
    if kind == "unreachable":
        return "slurmctld unreachable: %s" % said
    if kind == "denied":
        return "permission denied for `%s %s`: %s" % (tool, " ".join(argv[1:]), said)
    return "`%s %s` failed (rc %s): %s" % (tool, " ".join(argv[1:]), rc, said or "no output")


def slurm(module, tool, args, name):
    exe = module.get_bin_path(tool)
    if not exe:
        raise SlurmError("%s not found on %s (install slurm-client there or delegate to the controller)"
                         % (tool, os.uname()[1]))
    timeout = module.params["timeout"]
    env = dict(os.environ, SLURM_TIME_FORMAT="standard")
    argv = [exe] + list(args)
    try:
        rc, out, err = run_argv(argv, timeout, env=env)
    except TimeoutError:
        raise SlurmError("slurmctld did not answer within %ss (`%s %s`)" % (timeout, tool, " ".join(args)))
    except FileNotFoundError as exc:
        raise SlurmError("%s could not run: %s" % (tool, exc))
    if rc != 0:
        raise SlurmError(classify(tool, argv, rc, (err or "") + " " + (out or ""), name))
    return out


def show(module, name):
    out = slurm(module, "scontrol", ["show", "node", "-o", name], name)
    node = parse_scontrol_show_node(out)
    if not node or node.get("name") != name:
        raise SlurmError("unknown node %s (scontrol printed no such node)" % name)
    return node


def jobs_on(module, name):
    try:
        out = slurm(module, "squeue", ["-h", "-w", name, "-o", "%i %u %j %T %M"], name)
    except SlurmError:
        return []
    return [line.strip() for line in out.splitlines() if line.strip()]


def record_path(state_dir, name):
    return os.path.join(state_dir, name + ".json")


def load_record(path):
    """(record or None, warning or None). An unreadable record is not ours: safe side."""
    try:
        check_private_dir(os.path.dirname(path), "drain record directory")
        raw = read_bytes(path, "drain record", limit=1 << 20)  # never through a link, never on a FIFO
        if raw is None:
            return None, None
        rec = json.loads(raw.decode("utf-8"))
    except (OSError, ValueError, WriteRefused) as exc:
        return None, "ignored unreadable drain record %s (%s): the node counts as not ours" % (path, exc)
    if not isinstance(rec, dict):
        return None, "ignored drain record %s (not an object): the node counts as not ours" % path
    return rec, None


def write_record(path, rec):
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    check_private_dir(os.path.dirname(path), "drain record directory")  # another user's dir could plant links
    write_atomic(path, json.dumps(rec, indent=1, sort_keys=True) + "\n", mode=0o600)


def _view(node):
    return "state: %s\nreason: %s\n" % (node.get("state"), node.get("reason") or "")


def predicted(node, action, want_reason):
    """The node as it would read after ``action`` (check mode)."""
    after = dict(node)
    flags = [f for f in node.get("flags", []) if f != "DRAIN"]
    if action in ("drain", "re-reason"):
        flags.append("DRAIN")
        after.update(reason=want_reason, reason_user=None, reason_time=None)
    elif action == "resume":
        after.update(reason=None, reason_user=None, reason_time=None)
    elif action == "reboot":
        flags += ["DRAIN", "REBOOT_REQUESTED"]
        if want_reason:
            after.update(reason=want_reason, reason_user=None, reason_time=None)
    after["state"] = "+".join([node.get("base_state") or "IDLE"] + flags)
    after["base_state"], after["flags"] = parse_node_state(after["state"])
    after["drain"] = drain_status(after["base_state"], after["flags"])
    after["drained"] = after["drain"] == "DRAINED"
    return after


def request_reboot(module, name, want_reason, before, rec_path, rec):
    """`scontrol reboot [Reason=..] <name>` -- no ASAP and no nextstate: each of them clears the
    DRAIN flag when the node registers again (scontrol(1)), and our node must come back drained
    until verify has seen it. Record the reason Slurm re-stamped and the boot time before."""
    argv = ["reboot"] + (["Reason=%s" % want_reason] if want_reason else []) + [name]
    slurm(module, "scontrol", argv, name)
    expect = want_reason or before.get("reason") or ""
    try:
        node = show(module, name)
        if not reboot_flag(node) or not (node.get("reason") or "").startswith(expect):
            raise SlurmError("it reads %s with reason %r" % (node.get("state"), node.get("reason")))
        new = ownership_record(node, module.params["incident"] or (rec or {}).get("incident"),
                               time.strftime("%Y-%m-%dT%H:%M:%S%z"))
        new["reboot"] = {"reason": node.get("reason"), "boot_time_before": before.get("boot_time"),
                         "requested_at": new.get("recorded_at")}
        write_record(rec_path, new)
    except (SlurmError, OSError) as exc:
        raise SlurmError("scontrol accepted the reboot of %s, but it is NOT recorded as ours (%s): later runs "
                         "will leave it alone; check `scontrol show node %s`" % (name, exc, name))
    return node


def wait_rebooted(module, name, node, rec_path, seconds):
    """Poll until our rebooted node is back (a new boot time, registered, still drained), then
    take the drain back under our reason (Slurm appended ': reboot issued' and re-stamped user and
    time). -> (node, failure words or None). The node is never resumed here: verify decides."""
    deadline = time.monotonic() + seconds
    rec, _ = load_record(rec_path)
    if not (rec or {}).get("reboot"):
        return node, "no reboot of ours is recorded for %s: nothing to wait for" % name
    while True:
        stage, words = reboot_progress(rec, node)
        if stage == "back":
            break
        if stage in ("foreign", "in_service", "timed_out"):
            return node, "%s: %s; left as it is" % (name, words)
        if time.monotonic() >= deadline:
            return node, ("%s did not come back from its reboot within %ss (%s); it stays out of service"
                          % (name, seconds, words))
        time.sleep(min(2.0, max(0.1, deadline - time.monotonic())))
        node = show(module, name)
    reason = rec["reboot"]["reason"]
    slurm(module, "scontrol", ["update", "NodeName=%s" % name, "State=DRAIN", "Reason=%s" % reason], name)
    node = show(module, name)
    if "DRAIN" not in node["flags"] or node.get("reason") != reason:
        return node, "%s is back, but taking its drain back failed: it reads %s with reason %r" % (
            name, node.get("state"), node.get("reason"))
    back = ownership_record(node, rec.get("incident"), time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    back["rebooted"] = {"boot_time_before": rec["reboot"].get("boot_time_before"), "boot_time": node.get("boot_time"),
                        "requested_at": rec["reboot"].get("requested_at")}
    write_record(rec_path, back)
    return node, None


def apply(module, name, action, want_reason, rec_path):
    """Run the one update ``action`` needs, read the node back and keep our record in step."""
    if action in ("drain", "re-reason"):
        slurm(module, "scontrol", ["update", "NodeName=%s" % name, "State=DRAIN", "Reason=%s" % want_reason], name)
        try:
            node = show(module, name)
            if "DRAIN" not in node["flags"] or node.get("reason") != want_reason:
                raise SlurmError("it reads %s with reason %r" % (node.get("state"), node.get("reason")))
            write_record(rec_path, ownership_record(node, module.params["incident"],
                                                    time.strftime("%Y-%m-%dT%H:%M:%S%z")))
        except (SlurmError, OSError) as exc:
            raise SlurmError("scontrol drained %s, but it is NOT recorded as ours (%s): later runs will leave it "
                             "alone; check `scontrol show node %s` and resume it by hand if it is our drain"
                             % (name, exc, name))
        return node
    slurm(module, "scontrol", ["update", "NodeName=%s" % name, "State=RESUME"], name)
    node = show(module, name)
    if "DRAIN" in node["flags"]:
        raise SlurmError("scontrol accepted the resume but %s still reads %s" % (name, node.get("state")))
    if os.path.exists(rec_path):
        os.unlink(rec_path)
    return node


def wait_drained(module, name, node, rec_path, seconds):
    """Poll until DRAINED (no jobs) while the drain stays ours; fail when the time is up."""
    deadline = time.monotonic() + seconds
    while not node["drained"]:
        if time.monotonic() >= deadline:
            jobs = jobs_on(module, name)
            ids = [j.split()[0] for j in jobs if j.split()]
            release = ("; to release the node: scontrol requeue %s (a requeueable job) or scancel %s"
                       % (" ".join(ids), " ".join(ids))) if ids else ""
            return node, jobs, ("%s is still %s after %ss: %d job(s) still run on it (id user name state "
                                "time: %s); not cancelling them%s"
                                % (name, node.get("drain") or node.get("state"), seconds, len(jobs),
                                   "; ".join(jobs) or "see squeue -w %s" % name, release))
        time.sleep(min(1.0, max(0.1, deadline - time.monotonic())))
        node = show(module, name)
        rec, _ = load_record(rec_path)
        mine, why = owns(rec, node)
        if not mine:
            return node, [], "stopped waiting: %s is no longer ours: %s" % (name, why)
    return node, None, None


def result_of(node, owned, rec_path):
    keys = ("state", "base_state", "flags", "drain", "drained", "reason", "reason_user", "reason_time")
    res = {k: node.get(k) for k in keys}
    res.update(name=node.get("name"), owned=owned, record=rec_path, reboot=reboot_flag(node), gpus=node.get("gpus"))
    return res


def run(module):
    p = module.params
    name = (p["name"] or "").strip()
    # every value that reaches scontrol or a file name, checked before anything runs
    refused = [why for why in (check("node", "name", name),
                               p["reason"] is not None and check_text("reason", p["reason"], cap=MAX_REASON)) if why]
    refused += problems(p, {"incident": "incident", "state_dir": "path"})
    if refused:
        raise SlurmError("; ".join(refused))
    for knob in ("wait_drained", "wait_rebooted"):
        if not 0 <= p[knob] <= MAX_WAIT:
            raise SlurmError("%s must be between 0 and %d seconds, not %d" % (knob, MAX_WAIT, p[knob]))
    if p["timeout"] < 1:
        raise SlurmError("timeout must be at least 1 second")
    want = None
    if p["state"] == "drained" or (p["state"] == "reboot_requested" and (p["reason"] or "").strip()):
        try:
            want = drain_reason(p["reason"], p["incident"])
        except ValueError as exc:
            raise SlurmError(str(exc))
    rec_path = record_path(os.path.expanduser(p["state_dir"]), name)
    rec, warning = load_record(rec_path)
    if warning:
        module.warn(warning)
    before = show(module, name)
    plan = plan_node(p["state"], before, rec, want)
    after, changed = before, plan["action"] != "none"
    if changed and module.check_mode:
        after = predicted(before, plan["action"], want)
    elif plan["action"] == "reboot":
        after = request_reboot(module, name, want, before, rec_path, rec)
    elif changed:
        after = apply(module, name, plan["action"], want, rec_path)
    res = result_of(after, plan["owned"] and plan["action"] != "resume", rec_path)
    res.update(changed=changed, msg=plan["msg"] if not (changed and module.check_mode) else
               "would be " + plan["msg"] + " (check mode)")
    if module._diff:
        res["diff"] = {"before": _view(before), "after": _view(after),
                       "before_header": "slurm node %s" % name, "after_header": "slurm node %s" % name}
    # our reboot under way or just done (a re-run after the boot): wait for it / take the drain back
    ours_rebooting = bool((rec or {}).get("reboot")) and reboot_progress(rec, before)[0] in ("booting", "back")
    if p["state"] == "reboot_requested" and p["wait_rebooted"] and not module.check_mode \
            and (plan["action"] == "reboot" or ours_rebooting):
        node, failed = wait_rebooted(module, name, after, rec_path, p["wait_rebooted"])
        rec_now = load_record(rec_path)[0]
        res.update(result_of(node, owns(rec_now, node)[0], rec_path))
        res.update(changed=True if plan["action"] == "reboot" or not failed else res["changed"],
                   rebooted=(rec_now or {}).get("rebooted") if not failed else None)
        if failed:
            res.update(msg=failed)
            module.fail_json(**res)
        res["msg"] = "rebooted: back at %s, drained by us until verified" % node.get("boot_time")
    if p["state"] in ("drained", "present") and res["owned"] and p["wait_drained"] and not module.check_mode:
        node, jobs, failed = wait_drained(module, name, after, rec_path, p["wait_drained"])
        res.update(result_of(node, owns(load_record(rec_path)[0], node)[0], rec_path))
        if failed:
            res.update(jobs=jobs or [], msg=failed)
            module.fail_json(**res)
    return res


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str", required=True),
            state=dict(type="str", default="present", choices=["drained", "resumed", "reboot_requested", "present"]),
            reason=dict(type="str"),
            incident=dict(type="str"),
            state_dir=dict(type="path", default="~/.gpu-runbook/state/drains"),
            wait_drained=dict(type="int", default=0),
            wait_rebooted=dict(type="int", default=0),
            timeout=dict(type="int", default=30),
        ),
        required_if=[("state", "drained", ["reason"])],
        supports_check_mode=True,
    )
    try:
        res = run(module)
    except SlurmError as exc:
        module.fail_json(msg=str(exc), name=module.params["name"], changed=False)
    except (OSError, WriteRefused) as exc:
        module.fail_json(msg="drain record: %s" % exc, name=module.params["name"], changed=False)
    module.exit_json(**res)


if __name__ == "__main__":
    main()
