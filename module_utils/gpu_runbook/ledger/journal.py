# SPDX-License-Identifier: Apache-2.0
"""Append-only JSON-lines files (the audit log and the per-GPU history) and the audit entry.

An append opens the file with O_APPEND and writes each line with ONE ``os.write``: the
kernel places every such write at the end of the file as a whole, so lines written by two
runs at once never interleave. A short write, a full disk or a read-only directory is a
LedgerError saying that the ladder must not go on with disruptive steps. A link, FIFO or
device in place of a file, or a state directory another user can write, is refused."""

import fcntl
import json
import os
from datetime import datetime, timedelta

from ..safewrite import WriteRefused, append_line, check_private_dir, ends_torn, open_regular, read_bytes
from ..taxonomy import RUNG_TABLE
from ..timeutil import UTC, iso, to_utc
from .errors import NO_DISRUPTION, LedgerError, io_error

AUDIT_FILE = "audit.jsonl"
HISTORY_FILE = "history.jsonl"
RESULTS = ("ok", "refused", "failed", "skipped")
# steps of the ladder that are not rungs of the taxonomy but belong in the audit log
LADDER_STEPS = ("lock", "plan", "verify", "resume")
MAX_LINE = 64 * 1024
# a record stamped more than this after now is from the future: refused on record, ignored on read
FUTURE_SKEW = 300


def _line(entry):
    text = json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    data = (text + "\n").encode("utf-8")
    if len(data) > MAX_LINE:
        raise LedgerError("ledger entry is %d bytes, over the %d a line may take (argv or message too long?)"
                          % (len(data), MAX_LINE))
    return data


def check_dir(state_dir, create=False):
    """The state directory must be ours and not group/world-writable (else LedgerError naming
    it, its owner, its mode and the fix); ``create`` makes a missing one 0700."""
    try:
        if create:
            os.makedirs(state_dir, mode=0o700, exist_ok=True)
        check_private_dir(state_dir, "ledger state directory")
    except WriteRefused as exc:
        raise LedgerError("%s; %s" % (exc, NO_DISRUPTION), kind="unsafe")
    except OSError as exc:
        raise io_error("ledger state directory", state_dir, exc)


def append_lines(path, entries, what="audit log"):
    """Append each entry (a dict) as one JSON line, each line one checked O_APPEND write;
    -> number of lines written. A file that ends in a torn line (a short write before) gets
    its newline first, so the torn line stays one bad line and the new ones stay whole."""
    lines = [_line(e) for e in entries]  # all checked before the first byte is written
    if not lines:
        return 0
    check_dir(os.path.dirname(path) or ".", create=True)
    try:
        fd = open_regular(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, what)  # RDWR: to see a torn end
    except WriteRefused as exc:
        raise LedgerError("%s; %s" % (exc, NO_DISRUPTION), kind="unsafe")
    except OSError as exc:
        raise io_error(what, path, exc)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # appenders in turn: the torn-end check sees no write in flight
        if ends_torn(fd):
            lines[0] = b"\n" + lines[0]
        for data in lines:
            append_line(fd, data, path, what)
        os.fsync(fd)
    except OSError as exc:
        raise io_error(what, path, exc)
    finally:
        os.close(fd)
    return len(lines)


def _parse(raw, why=None):
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(obj, dict) and why is not None:
        why.append("not an object")
    return obj if isinstance(obj, dict) else None


def _salvage(raw):
    """A torn line followed by a whole one (written before the newline repair): the whole
    record after the torn prefix, or None."""
    i = raw.find(b"{", 1)
    while i > 0:
        obj = _parse(raw[i:])
        if obj is not None:
            return obj
        i = raw.find(b"{", i + 1)
    return None


def _future_note(path, future):
    whens = sorted(str(e.get("when")) for e in future)
    return ("%s: %d record(s) from the future ignored (when %s%s; more than %ds after now): planted or a "
            "clock gone wrong" % (path, len(future), whens[0], " .. %s" % whens[-1] if len(whens) > 1 else "",
                                  FUTURE_SKEW))


def read_lines(path, now=None):
    """-> (entries, warnings); THE reader of the audit log and the history (every reader goes
    through it). A missing file is empty. A torn line (not JSON: a short write) is skipped with
    a warning naming its line number, and a whole record appended behind it is kept. Records
    whose ``when`` is over FUTURE_SKEW seconds after ``now`` (default the clock) are ignored
    with one warning saying how many and from when. A link, FIFO or device -> LedgerError."""
    check_dir(os.path.dirname(path) or ".")
    try:
        data = read_bytes(path, "ledger file")
    except WriteRefused as exc:
        raise LedgerError(str(exc), kind="unsafe")
    except OSError as exc:
        raise LedgerError("cannot read %s: %s" % (path, exc.strerror or exc), kind="io")
    if data is None:
        return [], []
    limit = (now or datetime.now(UTC)).astimezone(UTC) + timedelta(seconds=FUTURE_SKEW)
    entries, warnings, future = [], [], []
    for n, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        why = []
        obj = _parse(raw, why)
        if obj is None:
            obj = None if why else _salvage(raw)  # torn: a short write, maybe with a whole line glued on
            warnings.append("%s:%d: %s, skipped%s" % (path, n, why[0] if why else "not JSON",
                                                     " (the whole record after it kept)" if obj is not None else ""))
            if obj is None:
                continue
        when = to_utc(obj.get("when")) if obj.get("when") else None
        if when is not None and when > limit:
            future.append(obj)
            continue
        entries.append(obj)
    if future:
        warnings.append(_future_note(path, future))
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
