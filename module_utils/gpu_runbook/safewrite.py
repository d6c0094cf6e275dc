# SPDX-License-Identifier: Apache-2.0
"""Controller-side files written whole or not at all: a temporary file in the target's
directory, flushed and renamed over the target. A target (or its directory) that is a
symlink is refused, never followed; so is a target that is not a regular file.

Reads and appends of state files go through ``open_regular`` (O_NOFOLLOW|O_NONBLOCK, then
fstat S_ISREG): a link, FIFO, socket or device is refused by name, never followed, never
waited on. ``check_private_dir``: a state directory another user can write is refused."""

import errno
import os
import pwd
import stat
import tempfile


class WriteRefused(Exception):
    pass


def check_target(path, what="target"):
    """WriteRefused when ``path`` is a symlink or exists and is not a regular file."""
    if os.path.islink(path):
        raise WriteRefused("%s %s is a symlink: refusing to write through it" % (what, path))
    if os.path.lexists(path) and not os.path.isfile(path):
        raise WriteRefused("%s %s exists and is not a regular file" % (what, path))


def write_atomic(path, text, mode=0o644, fsync=True, what="target"):
    """Write ``text`` to ``path`` (checked first); OSError or WriteRefused, never half a file.
    The temporary file is created new (O_EXCL, mode 0600) and renamed over ``path``: rename
    replaces a link made after the check, it never writes through one."""
    check_target(path, what)
    fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), dir=os.path.dirname(path) or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise


_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"), (stat.S_ISLNK, "a symlink"))


def kind_of(mode):
    """'a FIFO', 'a symlink', ... for a mode that is not a regular file's; 'a regular file'."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


def open_regular(path, flags, what="file", mode=0o600):
    """os.open ``path`` never following a link (O_NOFOLLOW) and never blocking on a FIFO
    (O_NONBLOCK), then fstat: -> fd of a regular file. A link (dangling or not), FIFO, socket
    or device -> WriteRefused naming it; a missing file -> FileNotFoundError (without O_CREAT)."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), mode)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EMLINK, errno.EISDIR):
            try:
                kind = kind_of(os.lstat(path).st_mode)
            except OSError:
                kind = "not a regular file"
            raise WriteRefused("%s %s is %s: refusing to open it (a state file must be a regular file)"
                               % (what, path, kind))
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise WriteRefused("%s %s is %s: refusing to use it (a state file must be a regular file)"
                           % (what, path, kind_of(st.st_mode)))
    return fd


def read_bytes(path, what="file", limit=256 * 1024 * 1024):
    """The whole of a regular file (never through a link, never blocking) -> bytes;
    None when it does not exist. WriteRefused for a link/FIFO/device; OSError otherwise."""
    try:
        fd = open_regular(path, os.O_RDONLY, what)
    except FileNotFoundError:
        return None
    chunks, total = [], 0
    try:
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if total > limit:
                raise WriteRefused("%s %s is over %d bytes: refusing to read it" % (what, path, limit))
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def append_line(fd, data, path, what="file"):
    """One O_APPEND ``os.write`` of a whole line, checked: a short write -> OSError(ENOSPC)."""
    n = os.write(fd, data)
    if n != len(data):
        raise OSError(errno.ENOSPC, "short write (%d of %d bytes) to the %s %s: its last line is torn"
                      % (n, len(data), what, path))
    return n


def ends_torn(fd):
    """Does the open file ``fd`` end in a partial line (no trailing newline)?"""
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


def check_private_dir(path, what="state directory"):
    """WriteRefused unless directory ``path`` (when it exists) is owned by the user running
    this and is not group- or world-writable: another user who can write there can plant
    links and records. Nothing when it does not exist (its creator makes it 0700)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        raise WriteRefused("%s %s is %s, not a directory" % (what, path, kind_of(st.st_mode)))
    me = os.geteuid()
    mode = stat.S_IMODE(st.st_mode)
    if st.st_uid != me or mode & 0o022:
        why = []
        if st.st_uid != me:
            why.append("owned by %s, not by %s who runs this" % (_user(st.st_uid), _user(me)))
        if mode & 0o022:
            why.append("%s-writable" % "/".join(w for w, bit in (("group", 0o020), ("world", 0o002)) if mode & bit))
        raise WriteRefused(
            "%s %s (owner %s, mode %04o) is %s: refusing to trust its files; fix with: chown %s %s && chmod 0700 %s"
            % (what, path, _user(st.st_uid), mode, " and ".join(why), _user(me), path, path))


def _user(uid):
    try:
        return pwd.getpwuid(uid).pw_name
    except (KeyError, OSError):
        return str(uid)
