"""Controller-side files written whole or not at all: a temporary file in the target's
directory, flushed and renamed over the target. A target (or its directory) that is a
symlink is refused, never followed; so is a target that is not a regular file."""

import os
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
