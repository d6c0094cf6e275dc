# SPDX-License-Identifier: Apache-2.0
"""Kernel-log files that name their hosts in the text: one scanner per host.

``survey_hosts(paths)`` is the cheap first look (regexes over whole chunks): the syslog /
journal hostnames the files carry and whether any line has a pdsh/clush prefix, a shell
prompt or a clush/dshbak/ansible block header. A file of one host and no such lines keeps
the fast single-scanner path (filescan); only the others are demultiplexed here, line by
line (hosts.HostDemux), each host's lines -- prefix stripped -- going to its own
KernelLogScanner, so one file of many hosts gives one (facts, findings) per host. Findings
keep the file's own line numbers ("kern.log:12"). Memory: one bounded scanner per host, at
most ``max_hosts`` of them (the lines of more hosts are counted and said to be left out).
"""

import re

from ..findings import finding
from ..textio import TextChunks
from ..linefamily import EMBEDDED_SYSLOG_RE
from .hosts import _NOT_HOSTS, _PIPE_RESULT_RE, MAX_HOSTS, SLURM_NODE_RE, SYSLOG_HOST, HostDemux, field_host
from .prefilter import MAX_LINE, SAMPLE_LINES, has_needle
from .scanner import KernelLogScanner
from .timestamps import TS_RE

_CHUNK = 16 * 1024 * 1024
_SYSLOG_HOST_RE = re.compile(r"^" + SYSLOG_HOST, re.M)
# any line that could be a pdsh/clush prefix, a prompt, a block header, a uname line or RFC 5424
_MARK_RE = re.compile(
    r"^(?:Linux [A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9_.\-]{0,252}: |[^\s@]{1,80}@[A-Za-z0-9]|\[[^\s@\]]{1,64}@|-{3}|<\d{1,3}>\d"
    r"|[A-Za-z0-9][A-Za-z0-9_.\-]{0,252} \| [A-Z]|[A-Za-z][A-Za-z0-9_.\-]{0,62}\d[A-Za-z0-9_.\-]{0,62}:?\s*$)", re.M)


def survey_hosts(paths, limit=MAX_HOSTS):
    """-> (set of syslog hostnames seen, True when some line needs the line-by-line demux).
    Never raises on unreadable files (the scan names them)."""
    names, marked = set(), False
    for path in paths:
        try:
            pending = ""
            for text in TextChunks(path, size=_CHUNK):
                cut = text.rfind("\n")
                if cut < 0:
                    pending = (pending + text)[-MAX_LINE:]
                    continue
                block, pending = pending + text[:cut + 1], text[cut + 1:][-MAX_LINE:]
                marked = marked or _marked(block)
                names.update(_hosts_of(block))
                if marked or len(names) > 1 and len(_real(names)) > 1:
                    return _real(names), True
            if pending:
                marked = marked or _marked(pending)
                names.update(_hosts_of(pending))
        except (OSError, ValueError):
            continue
    names = _real(names)
    return names, marked or len(names) > 1


def _hosts_of(block):
    """The syslog hostnames of a block's lines; in a block with none, those of kernel lines quoted
    whole after other words (an alert's 'Error: May 19 07:08:57 node7 kernel: ..'; a syslog or a
    dmesg file holds no ' kernel: ' mid-line, so they never pay for that search)."""
    found = _SYSLOG_HOST_RE.findall(block)
    if not found and " kernel: " in block:
        found = EMBEDDED_SYSLOG_RE.findall(block)
    return found


# a per-host result heads its line: anchored, a long run of name characters is not tried from
# each of its positions
_PIPE_RESULT_AT_LINE_RE = re.compile(r"(?m)^" + _PIPE_RESULT_RE.pattern)


def _real(names):
    return {n for n in names if field_host(n)}


def _marked(block):
    """A line that may be a pdsh/clush prefix, a prompt or a header (not a mere 'NVRM: '), a
    per-host result ('node | ERROR: ..') or a Slurm line about a node."""
    if SLURM_NODE_RE.search(block) or _PIPE_RESULT_AT_LINE_RE.search(block):
        return True
    for m in _MARK_RE.finditer(block):
        word = m.group(0)
        if word.endswith(": ") and word[:-2].lower() in _NOT_HOSTS:
            continue
        end = block.find("\n", m.start())
        hosts, text = HostDemux(4).route(block[m.start():end if end >= 0 else len(block)])
        if hosts or text is None:
            return True
    return False


class _Lines(object):
    """A file's lines (cut at MAX_LINE), decoded as they stream; ``error``: why it ended early."""

    def __init__(self, path):
        self.path, self.error = path, None

    def __iter__(self):
        chunks = TextChunks(self.path, size=_CHUNK)
        pending = ""
        for text in chunks:
            lines = (pending + text).split("\n")
            pending = lines.pop()[:MAX_LINE]
            for line in lines:
                yield line[:MAX_LINE]
        if pending:
            yield pending
        self.error = chunks.error


def scan_by_host(entries, fallback, since=None, year=None, tz=None, max_hosts=MAX_HOSTS):
    """(path, source name) entries -> ({host: (facts, findings)}, demux). Lines of no host go
    to the one host the files name, else to ``fallback`` (the capture's own name)."""
    pre = HostDemux(max_hosts)
    for path, _name in entries:
        try:
            for line in _Lines(path):
                pre.route(line)
        except OSError:
            pass  # named by the second pass
    default = default_name(pre, fallback)
    demux = HostDemux(max_hosts)
    scanners, starts, problems = {}, {}, []
    kw = {"since": since, "year": year, "tz": tz}
    for path, name in entries:
        for h, sc in scanners.items():
            sc.begin_source(name)
            starts[h] = sc.lines
        seen, idx = {}, -1
        lines = _Lines(path)
        try:
            for idx, line in enumerate(lines):
                _route(demux, line, idx, (scanners, starts, seen), default, name, kw)
        except OSError as exc:
            problems.append(finding("capture_unreadable", "%s could not be read: %s" % (name, exc),
                                    evidence=path, source=name))
        if lines.error:
            problems.append(finding("capture_truncated", "%s: %s; it was read as far as it goes"
                                    % (name, lines.error), evidence=path, source=name))
        for h, sc in scanners.items():
            sc.close()
            sc.lines = starts.get(h, 0) + idx + 1
    if demux.overflow_lines:
        problems.append(finding(
            "capture_truncated", "the kernel log names more than %d hosts: %d line(s) of the others (from %s on) "
            "were not read" % (max_hosts, demux.overflow_lines, demux.first_overflow),
            source=entries[0][1] if entries else "kern.log"))
    out = {}
    for h, sc in scanners.items():
        facts, fs = sc.result()
        facts["files"] = [{"path": p, "source": n} for p, n in entries]
        out[h] = (facts, fs)
    if problems:
        first = next(iter(out)) if out else default
        facts, fs = out.get(first, ({"lines": 0}, []))
        out[first] = (facts, fs + problems)
    return out, demux


def _route(demux, line, idx, state, default, name, kw):
    scanners, starts, seen = state
    hosts, text = demux.route(line)
    if not hosts or text is None:
        if hosts is None or text is None:
            return
        hosts = (default,)
    needle = has_needle(text)
    for h in hosts:
        sc = scanners.get(h)
        if sc is None:
            if not needle and not TS_RE.match(text):
                continue  # a host gets a kernel log once a kernel-log line of it is seen
            sc = scanners[h] = KernelLogScanner(source=name, **kw)
            starts[h] = 0
        n = seen.get(h, 0)
        if n < SAMPLE_LINES:
            seen[h] = n + 1
            sc.feed_prefiltered(0, [], [text])
        if needle:
            sc.feed_prefiltered(0, [(idx, text)])


def default_name(demux, fallback):
    """Where lines of no host go: the one host the text names, else ``fallback``."""
    named = [h for h, n in demux.hosts.items() if n]
    return named[0] if len(named) == 1 else fallback


__all__ = ["scan_by_host", "survey_hosts", "default_name"]
