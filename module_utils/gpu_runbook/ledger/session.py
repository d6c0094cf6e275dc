# SPDX-License-Identifier: Apache-2.0
"""The ledger's files as a rung's action plugin uses them, in the controller's own process: this
incident's records of a host (through the one reader), fault/remedy records, the decision, audit
lines. The same functions the gpu_runbook_ledger module runs; the who of an audit line is the
ansible-playbook run (the worker's parent)."""

import getpass
import os
import socket
from datetime import datetime

from ..timeutil import UTC
from .history import check_policy, fault_entry, remedy_entry, same_host
from .journal import AUDIT_FILE, HISTORY_FILE, append_lines, audit_entry, read_lines
from .lock import owner_text
from .recall import decide
from ..validate import problems


def run_owner(job=None, pid=None):
    """Who a ledger line names: user, host, the ansible run's pid (default the parent: a rung
    plugin runs in a worker forked from ansible-playbook), the AWX job."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    job = job or os.environ.get("AWX_JOB_ID") or os.environ.get("JOB_ID")
    return {"user": user, "host": socket.gethostname(), "pid": pid or os.getppid(), "job": job or None}


def refused(params, kinds, nested, reserved):
    """Why a rung plugin's arguments are refused, or None: a bad name (``kinds``, as
    validate.problems takes them), or an option of the module under ``nested`` that the plugin
    sets itself (``reserved``)."""
    bad = problems(params, kinds)
    if bad:
        return "; ".join(bad)
    taken = sorted(k for k in params[nested] if k in reserved)
    if taken:
        return "%s may not set %s: the plugin sets them from its own options" % (nested, ", ".join(taken))
    return None


def given(options):
    """The module options that are set: a none is left out (omit works only at a task's top
    level, not inside the dict a rung plugin takes)."""
    return {k: v for k, v in options.items() if v is not None and not str(v).startswith("__omit_place_holder__")}


def of_incident(history, incident, hosts=None):
    """An incident's records (of ``hosts``, default every host), check-mode ones left out: what
    action=history returns and what a rung plugin reads before its first step."""
    return [e for e in history if incident and str(e.get("incident") or "") == incident and not e.get("check_mode")
            and (hosts is None or any(same_host(e.get("host"), h) for h in hosts))]


class Session(object):
    def __init__(self, state_dir, incident, policy=None, job=None):
        sd = os.path.expanduser(state_dir)
        self.history_path, self.audit_path = os.path.join(sd, HISTORY_FILE), os.path.join(sd, AUDIT_FILE)
        self.incident = incident or None
        self.policy = check_policy(policy or {})
        self.who = owner_text(run_owner(job))
        self.warnings = []

    def _read(self, now=None):
        history, bad = read_lines(self.history_path, now or datetime.now(UTC))
        self.warnings.extend(bad)
        return history

    def this_incident(self, host):
        """This incident's records of ``host`` (as action=history); none without an incident."""
        return of_incident(self._read(), self.incident, [host]) if self.incident else []

    def _stamp(self, raw):
        return dict(raw, incident=self.incident) if self.incident else raw

    def record(self, raws):
        now = datetime.now(UTC)
        lines = [(fault_entry if r["type"] == "fault" else remedy_entry)(self._stamp(r), now) for r in raws]
        return append_lines(self.history_path, lines, "GPU history")

    def decide(self, items):
        now = datetime.now(UTC)
        history = self._read(now)
        return [decide(history, item, now, self.policy, self.incident) for item in items]

    def audit(self, raws, check_mode):
        now = datetime.now(UTC)
        return append_lines(self.audit_path, [audit_entry(r, self.who, now, check_mode, self.incident) for r in raws],
                            "audit log")
