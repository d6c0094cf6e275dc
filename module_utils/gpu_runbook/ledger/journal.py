"""Append-only JSON-lines files (the audit log and the per-GPU history) and the audit entry.

An append opens the file with O_APPEND and writes each line with ONE ``os.write``: the
kernel places every such write at the end of the file as a whole, so lines written by two
runs at once never interleave. A short write, a full disk or a read-only directory is a
LedgerError saying that the ladder must not go on with disruptive steps."""

import json
import os

from ..taxonomy import RUNG_TABLE
from ..timeutil import UTC, iso, to_utc
from .errors import LedgerError, io_error

AUDIT_FILE = "audit.jsonl"
HISTORY_FILE = "history.jsonl"
RESULTS = ("ok", "refused", "failed", "skipped")
# steps of the ladder that are not rungs of the taxonomy but belong in the audit log
LADDER_STEPS = ("lock", "plan", "verify", "resume")
MAX_LINE = 64 * 1024


def _line(entry):
    text = json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    data = (text + "\n").encode("utf-8")
    if len(data) > MAX_LINE:
        raise LedgerError("ledger entry is %d bytes, over the %d a line may take (argv or message too long?)"
                          % (len(data), MAX_LINE))
    return data


def append_lines(path, entries, what="audit log"):
    """Append each entry (a dict) as one JSON line; -> number of lines written."""
    lines = [_line(e) for e in entries]  # all checked before the first byte is written
    if not lines:
        return 0
    try:
        os.makedirs(os.path.dirname(path) or ".", mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    except OSError as exc:
        raise io_error(what, path, exc)
    try:
        for data in lines:
            n = os.write(fd, data)
            if n != len(data):
                raise LedgerError("short write to the %s %s (%d of %d bytes): the file may end in a partial "
                                  "line; the ladder must not run disruptive steps" % (what, path, n, len(data)),
                                  kind="io")
        os.fsync(fd)
    except OSError as exc:
        raise io_error(what, path, exc)
    finally:
        os.close(fd)
    return len(lines)


def read_lines(path):
    """-> (entries, warnings). A missing file is empty; a line that is not a JSON object is
    skipped with a warning naming its line number (a torn line never stops a decision)."""
    entries, warnings = [], []
    try:
        with open(path, "rb") as fh:
            for n, raw in enumerate(fh, 1):
                if not raw.strip():
                    continue
                try:
                    obj = json.loads(raw.decode("utf-8"))
                except (ValueError, UnicodeDecodeError):
                    warnings.append("%s:%d: not JSON, skipped" % (path, n))
                    continue
                if not isinstance(obj, dict):
                    warnings.append("%s:%d: not an object, skipped" % (path, n))
                    continue
                entries.append(obj)
    except FileNotFoundError:
        return [], []
    except OSError as exc:
        raise LedgerError("cannot read %s: %s" % (path, exc.strerror or exc), kind="io")
    return entries, warnings


def _text(raw, key, required=False):
    v = raw.get(key)
    if v is None or v == "":
        if required:
            raise LedgerError("audit entry needs %r: %r" % (key, raw))
        return None
    if not isinstance(v, (str, int, float)) or isinstance(v, bool):
        raise LedgerError("audit entry %r must be text, not %r" % (key, v))
    return str(v)


def audit_entry(raw, who, now, check_mode=False, incident=None):
    """One audit line from what a task gives: rung (a taxonomy rung or a ladder step),
    result (ok/refused/failed/skipped) and optionally host, argv (a list of strings),
    message, when, who, incident, check_mode. Bad input -> LedgerError."""
    if not isinstance(raw, dict):
        raise LedgerError("audit entry must be a mapping, not %r" % (raw,))
    unknown = sorted(set(raw) - {"rung", "result", "host", "argv", "message", "msg", "when", "who",
                                 "incident", "check_mode", "gpu", "port"})
    if unknown:
        raise LedgerError("audit entry has unknown keys %s" % ", ".join(unknown))
    rung = _text(raw, "rung", required=True)
    if rung not in RUNG_TABLE and rung not in LADDER_STEPS:
        raise LedgerError("audit entry rung %r is neither a rung (%s) nor a ladder step (%s)"
                          % (rung, ", ".join(RUNG_TABLE), ", ".join(LADDER_STEPS)))
    result = _text(raw, "result", required=True)
    if result not in RESULTS:
        raise LedgerError("audit entry result %r must be one of %s" % (result, ", ".join(RESULTS)))
    argv = raw.get("argv") or []
    if not isinstance(argv, (list, tuple)) or not all(isinstance(a, (str, int, float)) for a in argv):
        raise LedgerError("audit entry argv must be a list of strings (an argv, not a shell string): %r" % (argv,))
    when = to_utc(raw["when"]) if raw.get("when") else now.astimezone(UTC)
    if when is None:
        raise LedgerError("audit entry when %r is not an ISO 8601 time" % (raw.get("when"),))
    cm = raw.get("check_mode", check_mode)
    return {"when": iso(when), "who": _text(raw, "who") or who,
            "incident": _text(raw, "incident") or incident, "host": _text(raw, "host"),
            "gpu": _text(raw, "gpu"), "port": _text(raw, "port"), "rung": rung,
            "argv": [str(a) for a in argv], "result": result,
            "message": _text(raw, "message") or _text(raw, "msg") or "", "check_mode": bool(cm)}
