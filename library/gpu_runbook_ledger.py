#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu-runbook contributors
# SPDX-License-Identifier: Apache-2.0

DOCUMENTATION = r"""
---
module: gpu_runbook_ledger
short_description: The remediation ladder's lock, audit log and per-GPU history, on the controller
description:
  - "Keeps the ladder's state in O(state_dir) on the controller (run it with
    C(delegate_to: localhost) and C(run_once) where it fits) - C(lock.json),
    C(audit.jsonl) and C(history.jsonl)."
  - "One remediation at a time. C(state=locked) creates C(lock.json) atomically
    (C(O_CREAT|O_EXCL)) with the owner (user@host, pid of the controlling ansible process,
    AWX job id from O(job_id), C(AWX_JOB_ID) or C(JOB_ID)), the start time and O(incident), and
    returns C(lock.id). A second run fails naming the owner and the lock's age. A lock older
    than O(stale_after) is reported as STALE and is never taken over."
  - "C(state=unlocked) releases the lock, only with its own O(lock_id). C(state=absent) with
    O(force=true) clears any lock (the one documented way to clear a stale lock:
    C(ansible localhost -m gpu_runbook_ledger -a 'state=absent force=true')); who cleared
    it and whose lock it was go into the audit log first. A lock that is not stale and whose
    process still runs on this controller is not cleared, even with force."
  - "C(action=audit) appends O(entries) to C(audit.jsonl), one JSON line each (when in UTC,
    who, incident, host, rung, argv, result ok/refused/failed/skipped, message, check_mode),
    each line one C(O_APPEND) write, so concurrent runs never interleave lines. Acquire,
    release and clear are audited too."
  - "C(action=record) appends fault and remedy records to C(history.jsonl), keyed by host and
    GPU serial / UUID (PCI bus id as a fallback) or IB port."
  - "C(action=decide) returns, for each of O(items), the rung to climb: the proposed one, or
    C(rma) when the GPU faulted O(policy.repeat_faults) times within O(policy.repeat_window)
    (default 3 in 7 days), or the escalation when the rung's retry budget in
    O(policy.budget_window) is spent (gpu_reset 2 -> reboot, whether allowed here or not: a node that may not be rebooted stays drained for one; reboot 1 -> rma;
    ib_restart 2 per port -> stay drained for the cable)."
  - "An item of C(action=decide) may carry C(incident) (default O(incident)). When the history
    holds a remedy with result C(ok) (not in check mode) for the same incident, host, target
    (GPU or port; a remedy recorded without one counts for its whole host) and rung, the
    decision says C(already_done=true) and C(rung=none): a second run of the same incident
    climbs nothing."
  - "C(action=resolved) returns C(resolved), a mapping of host to the UTC ISO time of its
    latest history remedy C({rung: verify, result: ok}) - when the ladder last saw the host
    healthy after a fix - optionally only for O(hosts). Pass it to C(gpu_health_facts)
    C(not_before) so kernel-log evidence from before a verified fix is not evidence again."
  - "C(action=ack) acknowledges the known faults (C(known-faults.json), kept by the diagnosis with
    C(remember)) of O(hosts), of O(kinds) when given, with O(note): a scheduled diagnosis with
    C(fail_on_critical) then does not fail on them until they change (a severity that rises makes a fault
    new again). Hosts are required; a fault no record names is refused, saying which faults it has."
  - "If the state directory cannot be written (read-only, disk full, no permission) the
    module fails with a message saying that the ladder must not run disruptive steps."
  - "State that cannot be poisoned. O(state_dir) must be owned by the user running Ansible and not
    group- or world-writable (else refused, naming its owner, its mode and the chown/chmod that fixes it).
    C(lock.json), C(audit.jsonl) and C(history.jsonl) are opened without following links and
    without blocking: a link (dangling or not), FIFO, socket or device there is refused by name;
    C(state=absent force=true) unlinks such a lock.json (never follows it), audited. A record
    dated more than 300 s after now is refused by C(action=record) and ignored on read with a
    warning saying how many and from when. Each line is one checked C(O_APPEND) write; a file
    that ends in a torn line (a short write on a full disk) gets its newline before the next line,
    and every reader (decide, resolved, history, C(gpu_runbook_rma)) skips the torn line with a
    warning and keeps a whole record appended behind it."
  - "Budgets and repeat faults follow the GPU: a record with the GPU's serial or UUID counts under any
    host name (short name or FQDN); the host name decides only for a PCI-only GPU, a port or a
    host-wide question."
version_added: "0.2.0"
author: gpu-runbook contributors
options:
  state:
    description:
      - C(locked) acquire the lock; C(unlocked) release it (needs O(lock_id)); C(absent) clear it
        (needs O(force)). Give either O(state) or O(action).
    type: str
    choices: [locked, unlocked, absent]
  action:
    description: C(audit) append O(entries) to the audit log; C(record) append them to the history;
      C(decide) the next rung for each of O(items); C(resolved) when each host was last verified
      healthy; C(history) this incident's history records of O(hosts) (the rung roles' read);
      C(ack) acknowledge the known faults of O(hosts); C(show) read the lock and what it says.
    type: str
    choices: [audit, record, decide, resolved, history, ack, show]
  state_dir:
    description: Controller-side directory of the ledger.
    type: path
    default: ~/.gpu-runbook/state
  incident:
    description: Incident id; stored in the lock and put into audit and history entries and decide
      items that have none.
    type: str
  lock_id:
    description: The id C(state=locked) returned. Needed to release; with C(state=locked) a lock
      with this id is ours already (no change).
    type: str
  job_id:
    description: AWX / CI job id of the owner. Default the C(AWX_JOB_ID) or C(JOB_ID) environment variable.
    type: str
  force:
    description: With C(state=absent), clear the lock whoever holds it (recorded in the audit log).
    type: bool
    default: false
  stale_after:
    description: Seconds after which a lock counts as stale (reported, never taken over).
    type: int
    default: 7200
  entries:
    description:
      - For C(action=audit) - dicts with C(rung) (a taxonomy rung or lock/plan/verify/resume),
        C(result) (ok, refused, failed, skipped) and optionally C(host), C(gpu), C(port),
        C(argv) (a list), C(message), C(when), C(who), C(incident), C(check_mode).
      - For C(action=record) - dicts with C(type) (fault or remedy), C(host), the GPU as C(gpu)
        (a dict with serial/uuid/pci, or a UUID or PCI string) or C(serial)/C(uuid)/C(pci), or an
        IB C(port); a fault has C(xid) and/or C(kind), a remedy C(rung) (a rung, or C(verify) once the
        host was verified healthy and resumed) and C(result); C(when) defaults to now.
    type: list
    elements: dict
    default: []
  items:
    description: For C(action=decide) - dicts with C(host), the GPU (or C(port)) as in O(entries),
      C(proposed_rung) and optionally C(incident).
    type: list
    elements: dict
    default: []
  hosts:
    description: For C(action=resolved) and C(action=history) - only these hosts (matched
      case-insensitively, a short name matching its FQDN; C(resolved) returns them as given).
      Default every host in the history. For C(action=ack) - the hosts whose faults are acknowledged (required).
    type: list
    elements: str
  kinds:
    description: For C(action=ack) - only the faults of these finding kinds (C(xid), C(ib_link_flap), ...).
    type: list
    elements: str
  note:
    description: For C(action=ack) - why (a ticket, an RMA number); stored with who acknowledged and when.
    type: str
  policy:
    description: Overrides of C(repeat_faults), C(repeat_window), C(budget_window) (seconds),
      C(budgets) (rung to tries) and C(allow_reboot).
    type: dict
    default: {}
  now:
    description: The time decisions and entries are made at (ISO 8601); default now. For replays and tests.
    type: str
extends_documentation_fragment:
  - action_common_attributes
attributes:
  check_mode:
    support: partial
    details:
      - Writes nothing - no lock, no audit or history line.
      - C(state=locked), C(unlocked) and C(absent) predict C(changed) and still fail when the lock is held by another
        run, as a real run would. C(action=audit) and C(action=record) report C(changed=false) and return the lines a
        real run would append in RV(would_write). C(decide), C(resolved) and C(show) only read and run as usual.
  diff_mode:
    support: none
  platform:
    platforms: posix
    details: Runs on the controller (C(delegate_to=localhost)); the lock is one per O(state_dir).
requirements:
  - a O(state_dir) on the controller that the user running Ansible can write (one shared directory for every
    controller that may remediate the same cluster)
notes:
  - Audit lines are meant to stay; rotate C(audit.jsonl) only between remediations.
  - "In check mode nothing is written. A ladder that wants its plans audited runs its audit task
    with C(check_mode: false) and marks the entries C(check_mode: true)."
  - The remediation_plan role takes the lock before the ladder acts and C(playbooks/tasks/finish.yml) releases it;
    the rung roles audit, record and decide with it.
seealso:
  - module: ansible.legacy.gpu_runbook_plan
    description: The plan whose rungs the ledger's decisions may escalate (repeat faults, spent budgets).
  - module: ansible.legacy.gpu_reset
    description: The reset whose retry budget per GPU the ledger keeps.
  - module: ansible.legacy.ib_restart
    description: The restart whose retry budget per port the ledger keeps.
  - module: ansible.legacy.gpu_health_facts
    description: Takes RV(resolved) as its O(ansible.legacy.gpu_health_facts#module:not_before).
  - module: ansible.legacy.gpu_runbook_rma
    description: Reads the history and the audit log (never writes them) for the RMA bundle.
"""

EXAMPLES = r"""
- name: One remediation at a time
  gpu_runbook_ledger:
    state: locked
    incident: "{{ gpu_runbook_incident }}"
  delegate_to: localhost
  run_once: true
  register: ledger_lock

- name: Audit a GPU reset
  gpu_runbook_ledger:
    action: audit
    incident: "{{ gpu_runbook_incident }}"
    entries:
      - {host: "{{ inventory_hostname }}", rung: gpu_reset, argv: "{{ reset.commands | last }}",
         result: ok, message: "GPU 0000:3b:00.0 reset and verified"}
  delegate_to: localhost

- name: Record the fault and the reset in the GPU's history
  gpu_runbook_ledger:
    action: record
    entries:
      - {type: fault, host: gpu-r1-n03, gpu: {serial: "1652221000123", pci: "0000:3b:00.0"}, xid: 48}
      - {type: remedy, host: gpu-r1-n03, gpu: {serial: "1652221000123"}, rung: gpu_reset, result: ok}
  delegate_to: localhost

- name: Reset again, or is this GPU a lemon?
  gpu_runbook_ledger:
    action: decide
    items:
      - {host: gpu-r1-n03, gpu: {serial: "1652221000123"}, proposed_rung: gpu_reset}
  delegate_to: localhost
  register: decision

- name: When was each host last verified healthy?
  gpu_runbook_ledger:
    action: resolved
    hosts: "{{ ansible_play_hosts }}"
  delegate_to: localhost
  run_once: true
  register: ledger_resolved

- name: Evidence from before a verified fix is not evidence again
  ansible.builtin.include_role:
    name: gpu_health
  vars:
    gpu_health_not_before: "{{ ledger_resolved.resolved[inventory_hostname] | default('') }}"

- name: Release the lock
  gpu_runbook_ledger:
    state: unlocked
    lock_id: "{{ ledger_lock.lock.id }}"
  delegate_to: localhost
  run_once: true

# Clear a stale lock by hand (recorded in the audit log):
#   ansible localhost -m gpu_runbook_ledger -a 'state=absent force=true'
"""

RETURN = r"""
lock:
  description: The lock acquired, released, cleared or read.
  returned: for state and action=show, when there is one
  type: dict
  contains:
    id:
      description: The lock's id; O(lock_id) of the C(state=unlocked) that releases it.
      returned: always
      type: str
      sample: 3f2a9c0e5b7d4e1f8a6b2c9d0e1f2a3b
    owner:
      description: Who holds it - C(user), C(host), C(pid) of the controlling ansible process, C(job) (AWX job id or null).
      returned: always
      type: dict
      sample: {"user": "alice", "host": "ctl", "pid": 4711, "job": "42"}
    who:
      description: The owner in words.
      returned: always
      type: str
      sample: alice@ctl (pid 4711, AWX job 42)
    incident:
      description: The incident the lock was taken for.
      returned: always
      type: str
      sample: INC-7
    started:
      description: When it was taken (UTC ISO 8601).
      returned: always
      type: str
      sample: "2024-05-01T10:00:00+00:00"
held_by:
  description: The lock that refused a run, described (owner, incident, since, age, STALE).
  returned: when a lock refused
  type: str
  sample: held by alice@ctl (pid 4711, AWX job 42) for incident INC-7 since 2024-05-01T10:00:00+00:00 (age 5m03s)
stale:
  description: Whether the lock in question is older than O(stale_after).
  returned: when there is a lock
  type: bool
  sample: false
error:
  description: What refused or failed, by kind - held, stale, not_owner, io, unsafe (a state dir others can write, a
    link, FIFO or device as a state file) or bad_input.
  returned: on failure
  type: str
  sample: held
written:
  description: Lines appended (audit or history).
  returned: for audit and record
  type: int
  sample: 1
would_write:
  description: The lines a real run would append.
  returned: in check mode
  type: list
  elements: dict
  sample: [{"when": "2024-05-01T10:00:00+00:00", "who": "alice@ctl (pid 4711)", "incident": "INC-7", "host": "gpu-r1-n03",
            "rung": "gpu_reset", "result": "ok", "message": "GPU 0000:3b:00.0 reset and verified", "check_mode": true}]
decisions:
  description: Per item host, key, proposed_rung, incident, rung, escalated, already_done and reason;
    with already_done also done_rung (the rung the incident already got; rung is then none).
  returned: for decide
  type: list
  elements: dict
  sample: [{"host": "gpu-r1-n03", "key": "gpu-r1-n03/serial:1652221000123", "proposed_rung": "gpu_reset",
            "incident": "INC-7", "rung": "rma", "escalated": true, "already_done": false,
            "reason": "... faulted 3 times in 7 days ..."}]
policy:
  description: The policy the decisions used (the defaults overlaid with O(policy); windows in seconds).
  returned: for decide
  type: dict
  sample: {"repeat_faults": 3, "repeat_window": 604800, "budgets": {"gpu_reset": 2, "ib_restart": 2, "reboot": 1},
           "budget_window": 604800, "allow_reboot": false}
resolved:
  description: Host to the UTC ISO 8601 time of its latest verify-ok remedy; hosts without one are left out.
  returned: for resolved
  type: dict
  sample: {"gpu-r1-n03": "2024-05-10T08:15:00+00:00"}
file:
  description: The file the action read or wrote.
  returned: always
  type: str
  sample: /home/sre/.gpu-runbook/state/audit.jsonl
history:
  description: This O(incident)'s history records (not check mode) of O(hosts), oldest first.
  returned: for history
  type: list
  elements: dict
  sample: [{"type": "remedy", "host": "gpu-r1-n03", "pci": "0000:3b:00.0", "rung": "gpu_reset", "result": "ok",
            "incident": "INC-7", "when": "2024-05-01T10:00:00+00:00", "check_mode": false}]
acknowledged:
  description: For C(action=ack) - the faults acknowledged (key, host, kind, severity, message, first_reported, last_seen,
    acknowledged by / at / note).
  returned: for ack
  type: list
  elements: dict
  sample: [{"key": "gpu-r3-n05|ib_link_flap|ib=mlx5_4/1", "host": "gpu-r3-n05", "kind": "ib_link_flap",
            "severity": "warning", "acknowledged": {"by": "sre@ctl", "at": "2026-12-05T09:00:00+00:00",
                                                    "note": "cable ticket 42"}}]
warnings_lines:
  description: History lines that could not be read and were skipped (torn lines, records from the future).
  returned: for decide, resolved and history when there are any
  type: list
  elements: str
  sample: ["/home/sre/.gpu-runbook/state/history.jsonl:17: not JSON, skipped"]
"""

import os
from datetime import datetime

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.gpu_runbook.ledger import (AUDIT_FILE, HISTORY_FILE, LOCK_FILE, LedgerError, acquire,
                                                     append_lines, audit_entry, check_policy, clear, decide,
                                                     describe, fault_entry, read_lines, read_lock, release,
                                                     remedy_entry, resolved)
from ansible.module_utils.gpu_runbook.ledger.lock import is_stale, owner_text
from ansible.module_utils.gpu_runbook.ledger.session import of_incident, run_owner
from ansible.module_utils.gpu_runbook.timeutil import UTC, to_utc
from ansible.module_utils.gpu_runbook.validate import problems


def _cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def _ppid(pid):
    try:
        with open("/proc/%d/stat" % pid) as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def controller_pid():
    """The topmost ansible process above this module (ansible-playbook / ansible), else our own pid."""
    best, pid = os.getpid(), os.getppid()
    for _ in range(16):
        if pid <= 1:
            break
        if "ansible" in _cmdline(pid):
            best = pid
        pid = _ppid(pid)
    return best


def pid_alive(pid):
    try:
        pid = int(pid)
        os.kill(pid, 0)
    except (ValueError, TypeError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return bool(_cmdline(pid))


def owner(module):
    return run_owner(module.params["job_id"], controller_pid())


def now_of(module):
    if not module.params["now"]:
        return datetime.now(UTC)
    t = to_utc(module.params["now"])
    if t is None:
        raise LedgerError("now %r is not an ISO 8601 time" % module.params["now"])
    return t


def audit(module, sd, now, who, entries):
    """Append lock events (and entries) to the audit log; check mode writes nothing."""
    lines = [audit_entry(e, who, now, module.check_mode, module.params["incident"]) for e in entries]
    path = os.path.join(sd, AUDIT_FILE)
    if module.check_mode:
        return {"would_write": lines, "written": 0, "file": path}
    return {"written": append_lines(path, lines, "audit log"), "file": path}


def do_lock(module, sd, now, who):
    p = module.params
    me = owner(module)
    path = os.path.join(sd, LOCK_FILE)
    if p["state"] == "locked":
        lock, changed = acquire(sd, me, p["incident"], now, p["stale_after"], p["lock_id"], module.check_mode)
        if changed:
            try:
                audit(module, sd, now, who, [{"rung": "lock", "result": "ok", "message": "lock acquired: id %s"
                                              % lock["id"]}])
            except LedgerError:
                if not module.check_mode:
                    release(sd, lock["id"], now)
                raise
        return dict(changed=changed, lock=lock, stale=False, file=path,
                    msg=("lock acquired" if changed else "lock already ours") + (" (check mode)" if module.check_mode else ""))
    if p["state"] == "unlocked":
        held = release(sd, p["lock_id"], now, module.check_mode)
        if held is None:
            return dict(changed=False, file=path, msg="no lock to release")
        audit(module, sd, now, who, [{"rung": "lock", "result": "ok", "message": "lock %s released" % held["id"]}])
        return dict(changed=True, lock=held, file=path, msg="lock released")
    # refusals first, then the audit line, then the clear: a clear nobody can trace is worse than a stale lock
    cleared = clear(sd, p["force"], now, p["stale_after"], me["host"], pid_alive, check_mode=True)
    if cleared is not None:
        audit(module, sd, now, who, [{"rung": "lock", "result": "ok", "message": "lock force-cleared by %s; it was %s"
                                      % (who, describe(cleared, now, p["stale_after"]))}])
        clear(sd, True, now, p["stale_after"], check_mode=module.check_mode)
    if cleared is None:
        return dict(changed=False, file=path, msg="no lock")
    return dict(changed=True, lock=cleared, stale=is_stale(cleared, now, p["stale_after"]), file=path,
                msg="lock cleared: it was %s" % describe(cleared, now, p["stale_after"]))


def do_record(module, sd, now):
    lines = []
    for e in module.params["entries"]:
        kind = e.get("type") if isinstance(e, dict) else None
        if kind not in ("fault", "remedy"):
            raise LedgerError("history entry needs type fault or remedy: %r" % (e,))
        line = (fault_entry if kind == "fault" else remedy_entry)(e, now)
        line.setdefault("incident", module.params["incident"])
        lines.append(line)
    path = os.path.join(sd, HISTORY_FILE)
    if module.check_mode:
        return dict(changed=False, would_write=lines, written=0, file=path)
    n = append_lines(path, lines, "GPU history")
    return dict(changed=n > 0, written=n, file=path, msg="%d history line(s) recorded" % n)


def do_decide(module, sd, now):
    policy = check_policy(module.params["policy"])
    path = os.path.join(sd, HISTORY_FILE)
    history, bad = read_lines(path, now)
    out = [decide(history, item, now, policy, module.params["incident"]) for item in module.params["items"]]
    res = dict(changed=False, decisions=out, file=path, policy=policy,
               msg="; ".join("%s: %s%s" % (d["key"], d["rung"], " (already done)" if d["already_done"] else "")
                             for d in out) or "nothing to decide")
    if bad:
        res["warnings_lines"] = bad
    return res


def do_resolved(module, sd, now):
    path = os.path.join(sd, HISTORY_FILE)
    history, bad = read_lines(path, now)
    found = resolved(history, module.params["hosts"])
    res = dict(changed=False, resolved=found, file=path,
               msg="; ".join("%s verified at %s" % kv for kv in found.items()) or "no host verified healthy yet")
    if bad:
        res["warnings_lines"] = bad
    return res


def do_history(module, sd, now):
    """This incident's records of ``hosts`` through the one reader: the rung roles' read."""
    p = module.params
    path = os.path.join(sd, HISTORY_FILE)
    history, bad = read_lines(path, now)
    mine = of_incident(history, p["incident"], p["hosts"])
    res = dict(changed=False, history=mine, file=path, msg="%d history record(s) of incident %s"
               % (len(mine), p["incident"] or "(none given: nothing)"))
    if bad:
        res["warnings_lines"] = bad
    return res


def do_ack(module, sd, now, who):
    """Acknowledge the known faults of ``hosts`` (of ``kinds``): a scheduled diagnosis stops failing on them."""
    from ansible.module_utils.gpu_runbook.ledger.known import acknowledge, known_path, read_known, write_known
    p = module.params
    record = read_known(sd)
    done, updated = acknowledge(record, now.replace(microsecond=0).isoformat(), who, p["note"], hosts=p["hosts"],
                                kinds=p["kinds"])
    if not done:
        have = sorted("%s %s" % (f.get("host"), f.get("kind")) for f in (record.get("faults") or {}).values()
                      if isinstance(f, dict))
        raise LedgerError("no known fault of %s%s to acknowledge (known: %s)" % (
            ", ".join(p["hosts"] or []), " of kind %s" % ", ".join(p["kinds"]) if p["kinds"] else "",
            "; ".join(have[:20]) or "none: run the diagnosis with -e remember=yes first"))
    if not module.check_mode:
        write_known(sd, updated)
    return dict(changed=True, acknowledged=done, file=known_path(sd),
                msg="%d fault(s) %sacknowledged" % (len(done), "would be " if module.check_mode else ""))


def run(module):
    p = module.params
    if bool(p["state"]) == bool(p["action"]):
        raise LedgerError("give either state (locked, unlocked, absent) or action (audit, record, decide, resolved, "
                          "history, ack, show)")
    if p["stale_after"] < 1:
        raise LedgerError("stale_after must be at least 1 second")
    sd = os.path.expanduser(p["state_dir"])
    now = now_of(module)
    me = owner(module)
    who = owner_text(me)
    if p["state"]:
        return do_lock(module, sd, now, who)
    if p["action"] == "audit":
        res = audit(module, sd, now, who, p["entries"])
        res.update(changed=res["written"] > 0, msg="%d audit line(s) %s" % (
            len(p["entries"]), "would be written" if module.check_mode else "written"))
        return res
    if p["action"] == "record":
        return do_record(module, sd, now)
    if p["action"] == "decide":
        return do_decide(module, sd, now)
    if p["action"] == "resolved":
        return do_resolved(module, sd, now)
    if p["action"] == "history":
        return do_history(module, sd, now)
    if p["action"] == "ack":
        return do_ack(module, sd, now, who)
    held = read_lock(sd)
    return dict(changed=False, file=os.path.join(sd, LOCK_FILE), lock=held,
                stale=is_stale(held, now, p["stale_after"]) if held else None,
                msg=("lock " + describe(held, now, p["stale_after"])) if held else "no lock")


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["locked", "unlocked", "absent"]),
            action=dict(type="str", choices=["audit", "record", "decide", "resolved", "history", "ack", "show"]),
            state_dir=dict(type="path", default="~/.gpu-runbook/state"),
            incident=dict(type="str"),
            lock_id=dict(type="str"),
            job_id=dict(type="str"),
            force=dict(type="bool", default=False),
            stale_after=dict(type="int", default=7200),
            entries=dict(type="list", elements="dict", default=[]),
            items=dict(type="list", elements="dict", default=[]),
            hosts=dict(type="list", elements="str"),
            kinds=dict(type="list", elements="str"),
            note=dict(type="str"),
            policy=dict(type="dict", default={}),
            now=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    refused = problems(module.params, {"state_dir": "path", "incident": "incident", "lock_id": "text",
                                       "job_id": "text", "hosts": "text", "now": "text", "kinds": "text",
                                       "note": "text"})
    if refused:
        module.fail_json(msg="; ".join(refused), changed=False)
    try:
        res = run(module)
    except LedgerError as exc:
        extra = {"error": exc.kind}
        if exc.lock is not None:
            try:
                now = now_of(module)
            except LedgerError:
                now = datetime.now(UTC)
            extra.update(lock=exc.lock, held_by=describe(exc.lock, now),
                         stale=is_stale(exc.lock, now, module.params["stale_after"]))
        module.fail_json(msg=exc.msg, changed=False, **extra)
    module.exit_json(**res)


if __name__ == "__main__":
    main()
