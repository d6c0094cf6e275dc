# SPDX-License-Identifier: Apache-2.0
"""The remediation ledger, kept on the controller in one state directory
(default ``~/.gpu-runbook/state``):

- ``lock.json``: one remediation at a time (lock.py);
- ``audit.jsonl``: what the ladder did, one JSON line per step (journal.py);
- ``history.jsonl``: each GPU's faults and the remedies tried on it, across runs, and the
  pure decision ``next_rung`` that turns repeat faults and spent retry budgets into an
  escalation (history.py);
- what the history remembers across runs: a rung already done for an incident (a second run
  of the same incident climbs nothing) and when each host was last verified healthy
  (recall.py).

Pure logic plus small file helpers, stdlib only; the module ``gpu_runbook_ledger`` is the
one caller that touches the disk.
"""

from .errors import LedgerError
from .history import (DEFAULT_POLICY, check_policy, fault_entry, match_key, next_rung, remedy_entry,
                      target_of)
from .journal import AUDIT_FILE, HISTORY_FILE, append_lines, audit_entry, read_lines
from .lock import LOCK_FILE, acquire, clear, describe, read_lock, release
from .recall import already_done, decide, resolved

__all__ = ["AUDIT_FILE", "DEFAULT_POLICY", "HISTORY_FILE", "LOCK_FILE", "LedgerError", "acquire",
           "already_done", "append_lines", "audit_entry", "check_policy", "clear", "decide", "describe",
           "fault_entry", "match_key", "next_rung", "read_lines", "read_lock", "release", "remedy_entry",
           "resolved", "target_of"]
