# SPDX-License-Identifier: Apache-2.0
"""The one error the ledger raises: a message meant for the operator, never a traceback."""

import errno

NO_DISRUPTION = "the ladder must not run disruptive steps until the state directory is writable"

_WRITE_ERRNOS = {errno.EROFS: "read-only file system", errno.ENOSPC: "disk full",
                 errno.EDQUOT: "disk quota exceeded", errno.EACCES: "permission denied",
                 errno.EPERM: "operation not permitted", errno.ENOTDIR: "a path component is not a directory"}


class LedgerError(Exception):
    """A refusal or an I/O failure; ``kind`` names it (held, stale, not_owner, io, unsafe, bad_input),
    ``lock`` carries the lock record it is about when there is one."""

    def __init__(self, msg, kind="bad_input", lock=None):
        Exception.__init__(self, msg)
        self.msg = msg
        self.kind = kind
        self.lock = lock


def io_error(what, path, exc):
    """An OSError while writing the ledger -> LedgerError that says the ladder must stop."""
    why = _WRITE_ERRNOS.get(getattr(exc, "errno", None), exc.strerror or str(exc))
    return LedgerError("cannot write the %s %s (%s: %s): %s" % (what, path, why, exc.strerror or exc,
                                                             NO_DISRUPTION), kind="io")
