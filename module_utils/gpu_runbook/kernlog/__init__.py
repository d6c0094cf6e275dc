# SPDX-License-Identifier: Apache-2.0
"""Kernel-log parser: NVRM Xid, GPU-off-the-bus, mlx5 link/health, PCIe AER, OOM, hung tasks.

Reads dmesg (raw seconds, -T, --time-format iso, --decode), journalctl -k (short,
short-iso) and /var/log/kern.log (BSD and RFC 3339 syslog), mixed in one file.
``KernelLogScanner`` streams (lines or arbitrary chunks, str or bytes) in memory bounded
by the distinct keys seen; ``parse_kernel_log`` is the one-shot wrapper;
``scan_kernel_log_files`` reads files of any size (plain, gzip, UTF-16), several through one
scanner. Times without a zone (dmesg -T, BSD syslog) are in ``tz``, the node's zone (UTC when
not given); BSD syslog has no year, so ``year`` (default: the year of ``since``, else this
year) supplies it. Lines split on '\\n'.

The package: ``timestamps`` (formats and times), ``patterns`` (the messages), ``prefilter``
(which lines can matter), ``scanner`` (the state machine), ``identity`` (which board -- UUID
and serial -- sits at which PCI address: facts ``gpus``), ``derive`` (its findings), ``filescan``
(files on disk).
"""

from ..findings import never_raise
from .prefilter import MAX_LINE, NEEDLES, prefilter
from .scanner import MAX_EVENTS, MAX_KEYS, KernelLogScanner
from .timestamps import parse_since

__all__ = ["MAX_EVENTS", "MAX_KEYS", "MAX_LINE", "NEEDLES", "KernelLogScanner", "parse_kernel_log",
           "parse_since", "prefilter", "scan_kernel_log_file", "scan_kernel_log_files"]


def __getattr__(name):
    """The file readers, imported on first use (PEP 562): a gather parses dmesg's text, and every
    module it imports is compiled from source on the node on every run."""
    if name in ("scan_kernel_log_file", "scan_kernel_log_files"):
        from . import filescan
        return getattr(filescan, name)
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


def _parse(text, source, since, year, tz):
    sc = KernelLogScanner(source=source, since=since, year=year, tz=tz)
    if text:
        sc.feed_chunk(text if isinstance(text, (str, bytes, bytearray)) else str(text))
    return sc.result()


def parse_kernel_log(text, source="kern.log", since=None, year=None, tz=None):
    """Parse a whole kernel log (str or bytes) -> (facts, findings); never raises.
    ``tz``: the zone of the node that wrote it (see KernelLogScanner)."""
    return never_raise(_parse, source, text, source, since, year, tz)
