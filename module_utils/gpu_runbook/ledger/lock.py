# SPDX-License-Identifier: Apache-2.0
"""One remediation at a time: ``lock.json`` in the state directory.

Acquire creates the file atomically and complete (written under a private name, then
hard-linked into place: link(2) fails on an existing file like O_CREAT|O_EXCL), so of two
runs that start together exactly one gets it and nobody reads a half-written lock. The other fails with a message that
names the owner (user@host, pid, AWX job), the incident and the lock's age. A lock older
than ``stale_after`` is reported as stale and is NOT taken over: whoever knows that run is
gone clears it (``clear`` with force, which the module records in the audit log). Only the
owner, by the lock id acquire returned, releases it."""

import errno
import json
import os
import uuid
from datetime import datetime

from ..timeutil import UTC, iso, to_utc
from ..safewrite import WriteRefused, read_bytes
from .errors import LedgerError, io_error
from .journal import check_dir

LOCK_FILE = "lock.json"
CLEAR_COMMAND = ("ansible localhost -m gpu_runbook_ledger -a 'state=absent force=true%s'")


def lock_path(state_dir):
    return os.path.join(state_dir, LOCK_FILE)


def owner_text(owner):
    """{'user','host','pid','job'} -> 'alice@ctl (pid 4711, AWX job 42)'."""
    owner = owner or {}
    extra = ["pid %s" % owner["pid"]] if owner.get("pid") else []
    if owner.get("job"):
        extra.append("AWX job %s" % owner["job"])
    who = "%s@%s" % (owner.get("user") or "?", owner.get("host") or "?")
    return who + (" (%s)" % ", ".join(extra) if extra else "")


def age_text(seconds):
    s = max(0, int(seconds))
    if s < 60:
        return "%ds" % s
    if s < 3600:
        return "%dm%02ds" % (s // 60, s % 60)
    if s < 86400:
        return "%dh%02dm" % (s // 3600, (s % 3600) // 60)
    return "%dd%02dh" % (s // 86400, (s % 86400) // 3600)


def read_lock(state_dir):
    """-> the lock record, or None when there is no lock. A lock file that cannot be parsed
    (a run that died between create and write, a hand edit) is still a lock: it comes back
    as {'id': None, 'unreadable': why, 'started': <file mtime>}. So is a link (dangling or
    not), FIFO, socket or device named lock.json: never followed, never waited on; the clear
    unlinks it."""
    path = lock_path(state_dir)
    check_dir(state_dir)
    try:
        raw = read_bytes(path, "remediation lock", limit=1 << 20)
    except WriteRefused as exc:
        return _unreadable(path, str(exc))
    except OSError as exc:
        raise LedgerError("cannot read the lock %s: %s" % (path, exc.strerror or exc), kind="io")
    if raw is None:
        return None
    try:
        rec = json.loads(raw.decode("utf-8"))
        if not isinstance(rec, dict) or not rec.get("id"):
            raise ValueError("no lock id")
        return rec
    except (ValueError, UnicodeDecodeError) as exc:
        return _unreadable(path, "%s (%s)" % (path, exc))


def _unreadable(path, why):
    try:
        mtime = os.lstat(path).st_mtime
    except OSError:
        mtime = 0
    return {"id": None, "owner": {}, "incident": None, "started": iso(datetime.fromtimestamp(mtime, UTC)),
            "unreadable": why}


def age_of(lock, now):
    started = to_utc(lock.get("started"))
    return (now - started).total_seconds() if started else None


def is_stale(lock, now, stale_after):
    age = age_of(lock, now)
    return age is None or age > stale_after


def describe(lock, now, stale_after=None):
    """'held by alice@ctl (pid 4711, AWX job 42) for incident INC-7 since <time> (age 5m03s)'."""
    age = age_of(lock, now)
    text = "held by %s" % owner_text(lock.get("owner"))
    if lock.get("unreadable"):
        text = "held by an unreadable lock file %s" % lock["unreadable"]
    if lock.get("incident"):
        text += " for incident %s" % lock["incident"]
    text += " since %s (age %s)" % (lock.get("started") or "an unknown time",
                                    age_text(age) if age is not None else "unknown")
    if stale_after is not None and is_stale(lock, now, stale_after):
        text += ", older than stale_after %s: STALE" % age_text(stale_after)
    return text


def clear_hint(state_dir=None):
    return CLEAR_COMMAND % ((" state_dir=%s" % state_dir) if state_dir else "")


def new_lock(owner, incident, now, lock_id=None):
    return {"id": lock_id or uuid.uuid4().hex, "owner": dict(owner or {}), "who": owner_text(owner),
            "incident": incident, "started": iso(now.astimezone(UTC))}


def _refuse(lock, now, stale_after, state_dir):
    if is_stale(lock, now, stale_after):
        return LedgerError(
            "remediation lock %s: not taken over. If that run is gone, clear it with: %s"
            % (describe(lock, now, stale_after), clear_hint(state_dir)), kind="stale", lock=lock)
    return LedgerError("another remediation is running: lock %s; wait for it to finish (or, if it died, clear "
                       "the lock with: %s)" % (describe(lock, now, stale_after), clear_hint(state_dir)),
                       kind="held", lock=lock)


def acquire(state_dir, owner, incident, now, stale_after=7200, lock_id=None, check_mode=False):
    """-> (lock, changed). Held by someone else (stale or not) -> LedgerError naming them.
    ``lock_id`` given and equal to the lock's id: the caller already holds it (no change)."""
    path = lock_path(state_dir)
    rec = new_lock(owner, incident, now, lock_id)
    data = (json.dumps(rec, sort_keys=True, indent=1) + "\n").encode("utf-8")
    if check_mode:
        held = read_lock(state_dir)
        if held is None:
            return rec, True
        if lock_id and held.get("id") == lock_id:
            return held, False
        raise _refuse(held, now, stale_after, state_dir)
    check_dir(state_dir, create=True)
    for _ in range(2):  # released between our create and our read: one more try, never a loop
        try:
            _create(path, data)
            return rec, True
        except FileExistsError:
            held = read_lock(state_dir)
        except OSError as exc:
            raise io_error("remediation lock", path, exc)
        if held is None:
            continue
        if lock_id and held.get("id") == lock_id:
            return held, False
        raise _refuse(held, now, stale_after, state_dir)
    raise LedgerError("the remediation lock %s came and went twice while it was taken: try again" % path, kind="held")


def _create(path, data):
    """Create ``path`` with ``data`` only if it does not exist; FileExistsError if it does.
    The record is written and synced under a private name first and then hard-linked into
    place (link(2) fails with EEXIST exactly like O_CREAT|O_EXCL), so nobody ever reads a
    half-written lock. A file system without hard links gets O_CREAT|O_EXCL itself."""
    tmp = "%s.%d.%s.tmp" % (path, os.getpid(), uuid.uuid4().hex[:8])
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            if os.write(fd, data) != len(data):
                raise OSError(errno.ENOSPC, "short write")
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)
            return
        except FileExistsError:
            raise
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                raise
    finally:
        os.unlink(tmp)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def release(state_dir, lock_id, now, check_mode=False):
    """Release by the owner -> the released lock, or None when there was none.
    Another id (or none given) -> LedgerError naming the holder."""
    held = read_lock(state_dir)
    if held is None:
        return None
    if not lock_id or held.get("id") != lock_id:
        raise LedgerError("not releasing the remediation lock: it is %s and the lock id given (%s) is not its own; "
                          "only its owner releases it (a stale lock is cleared with: %s)"
                          % (describe(held, now), lock_id or "none", clear_hint()), kind="not_owner", lock=held)
    if not check_mode:
        _unlink(state_dir)
    return held


def clear(state_dir, force, now, stale_after=7200, this_host=None, pid_alive=None, check_mode=False):
    """Clear whatever lock there is (``force`` required) -> the cleared lock or None.
    Refused even with force while the owner is a process on this host that still runs
    (``pid_alive(pid)`` true) and the lock is not stale: that run is alive."""
    held = read_lock(state_dir)
    if held is None:
        return None
    if not force:
        raise LedgerError("the remediation lock is %s; clearing it needs force=true (only when that run is gone)"
                          % describe(held, now, stale_after), kind="held", lock=held)
    owner = held.get("owner") or {}
    if (pid_alive and this_host and owner.get("host") == this_host and owner.get("pid")
            and not is_stale(held, now, stale_after) and pid_alive(owner["pid"])):
        raise LedgerError("not clearing the remediation lock: it is %s and its process %s still runs on this host"
                          % (describe(held, now, stale_after), owner["pid"]), kind="held", lock=held)
    if not check_mode:
        _unlink(state_dir)
    return held


def _unlink(state_dir):
    path = lock_path(state_dir)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise io_error("remediation lock", path, exc)
