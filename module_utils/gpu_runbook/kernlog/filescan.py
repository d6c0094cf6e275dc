# SPDX-License-Identifier: Apache-2.0
"""Kernel-log files of any size, plain, gzip-compressed or UTF-16, several through one scanner.

A capture directory may hold kern.log AND dmesg.txt AND journalctl.txt: every file is read,
through ONE scanner, each finding naming the file and line it came from ("dmesg.txt:12").
How a file is read depends on its content, never its name:

- plain UTF-8 (the norm, and the big ones): grep is the prefilter where it exists. It finds
  the candidate lines (the scanner's own NEEDLES, fixed strings) at memory speed and numbers
  them (-n); ``wc -l`` counts all lines on another core. The scanner parses only those lines,
  so the result is the same as feeding it the whole file. Without grep, Python reads chunks;
- gzip (by its magic bytes) and UTF-16 (a BOM, or the NUL pattern without one): decoded as
  they stream (textio.TextChunks) into the scanner, never read whole. A truncated or corrupt
  gzip is read as far as it goes and says so (``capture_truncated``).
"""

import os
import shutil
import subprocess

from ..findings import finding, never_raise
from ..textio import TextChunks, is_gzip, open_regular, sniff_encoding
from .prefilter import MAX_LINE, NEEDLES, SAMPLE_LINES, has_needle, nul_parts
from .scanner import KernelLogScanner

_CHUNK = 16 * 1024 * 1024
_GREP_BATCH = 4096
# grep holds a whole line in memory (a 2 GB file of NULs is one line): its address space is capped,
# and past a line it cannot hold, Python reads the rest in chunks with lines cut at MAX_LINE
_GREP_MEMORY = 256 * 1024 * 1024


def scan_kernel_log_files(paths, since=None, year=None, tz=None, use_grep=True):
    """Read one kernel-log file or several through one scanner -> (facts, findings); never raises.

    ``paths``: a path, or a list of paths; an item may be a (path, source name) pair, else
    its file name names it. ``tz``: the node's zone for times written without one (see
    KernelLogScanner). ``facts["files"]`` says per file what was read: encoding, compressed,
    lines, truncated (the reason) or error."""
    entries = _entries(paths)
    label = entries[0][1] if entries else "kernel log"
    return never_raise(_scan, label, entries, since, year, tz, use_grep)


def scan_kernel_log_file(path, source=None, since=None, year=None, tz=None, use_grep=True):
    """One file, optionally under another name (``source``, e.g. the canonical 'kern.log')."""
    return scan_kernel_log_files([(path, source or os.path.basename(path))], since=since, year=year, tz=tz,
                                 use_grep=use_grep)


def _entries(paths):
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    out = []
    for p in paths:
        path, name = p if isinstance(p, tuple) else (p, None)
        path = os.fsdecode(path)
        out.append((path, name or os.path.basename(path)))
    return out


def _scan(entries, since, year, tz, use_grep):
    sc = KernelLogScanner(source=entries[0][1] if entries else "kern.log", since=since, year=year, tz=tz)
    grep = shutil.which("grep") if use_grep else None
    files, problems = [], []
    for path, name in entries:
        sc.begin_source(name)
        start, kstart, nstart, sstart = sc.lines, sc.kernel_lines, sc.node_lines, sc.slurm_lines
        info = {"path": path, "source": name, "encoding": None, "compressed": False, "lines": 0,
                "truncated": None}
        fd = None
        try:
            fd, _st = open_regular(path)  # the file read is the one checked: grep reads this descriptor
            head = os.pread(fd, 4096, 0)
            info["compressed"] = is_gzip(head)
            info["encoding"] = None if info["compressed"] else sniff_encoding(head)
            if info["compressed"] or info["encoding"] != "utf-8":
                _read_decoded(sc, path, info)
            elif grep:
                _read_with_grep(sc, fd, grep)
            else:
                _read_plain(sc, fd)
        except OSError as exc:  # a missing or unreadable file must not hide the others
            sc.close()
            if sc.lines == start:
                info["error"] = str(exc)
                problems.append(finding("capture_unreadable", "%s could not be read: %s" % (name, exc),
                                        evidence=path, source=name))
            else:
                info["truncated"] = "read error: %s" % exc
        finally:
            if fd is not None:
                os.close(fd)
        info["lines"] = sc.lines - start
        info["kernel_lines"] = sc.kernel_lines - kstart
        info["node_lines"] = sc.node_lines - nstart
        info["slurm_lines"] = sc.slurm_lines - sstart
        if sc.cut_lines:
            problems.append(finding("capture_truncated", "%s: %d line(s) longer than %d KiB (NULs or junk a crash "
                                    "left): only their last %d KiB were read" % (name, sc.cut_lines, MAX_LINE >> 10,
                                                                                 MAX_LINE >> 10),
                                    evidence=path, source=name, severity="info"))
            sc.cut_lines = 0
        if info["truncated"]:
            problems.append(finding("capture_truncated", "%s ended early (%s); %d line(s) read before the cut" % (
                name, info["truncated"], info["lines"]), evidence=path, source=name))
        files.append(info)
    facts, findings = sc.result()
    facts["files"] = files
    return facts, findings + problems


def _read_decoded(sc, path, info):
    """gzip and/or UTF-16: decoded as it streams, memory flat in the file's size."""
    chunks = TextChunks(path, size=_CHUNK)
    for text in chunks:
        sc.feed_chunk(text)
    sc.close()
    info["encoding"] = chunks.encoding
    info["truncated"] = chunks.error


def _read_plain(sc, fd, skip_lines=0):
    """Chunks of the open file ``fd`` into the scanner; ``skip_lines``: leading lines already
    read (by grep)."""
    offset = 0
    while True:
        chunk = os.pread(fd, _CHUNK, offset)
        if not chunk:
            break
        offset += len(chunk)
        if skip_lines:
            chunk, skip_lines = _after_lines(chunk, skip_lines)
        if chunk:
            sc.feed_chunk(chunk)
    sc.close()


def _after_lines(chunk, n):
    """-> (what follows the first ``n`` newlines of ``chunk``, how many are still to skip)."""
    count = chunk.count(b"\n")
    if count < n:
        return b"", n - count
    pos = -1
    for _ in range(n):
        pos = chunk.index(b"\n", pos + 1)
    return chunk[pos + 1:], 0


def _read_with_grep(sc, fd, grep):
    """grep -F NEEDLES picks the lines, wc -l counts them all; the scanner sees only the picks.
    Both read the open file ``fd`` (as /dev/fd/N: the file that was checked, not whatever the
    path names by the time they start)."""
    env = dict(os.environ, LC_ALL="C")  # byte semantics: no UTF-8 decoding cost, no locale surprises
    wc = shutil.which("wc")
    path = "/dev/fd/%d" % fd
    counter = subprocess.Popen([wc, "-l", path], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               env=env, pass_fds=(fd,)) if wc else None
    head = os.pread(fd, 16 * 1024, 0).split(b"\n")[:SAMPLE_LINES]
    argv = [grep, "-a", "-n", "-F"] + [x for n in NEEDLES for x in ("-e", n)] + ["--", path]
    start = sc.lines
    proc = subprocess.Popen(_memory_capped(argv), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                            pass_fds=(fd,))
    batch, first, last = [], True, -1
    for raw in _bounded_lines(proc.stdout, sc):
        num, _, line = raw.partition(b":")
        if not num.isdigit():
            continue
        last = int(num) - 1
        line = line.rstrip(b"\r\n")
        if b"\x00" in line:  # a run of NULs ends a message: each part with a needle is read
            batch.extend((last, part) for part in nul_parts(line) if has_needle(part))
        else:
            batch.append((last, line))
        if len(batch) >= _GREP_BATCH:
            sc.feed_prefiltered(0, batch, head if first else ())  # indices from the file's start: lines stay put
            batch, first = [], False
    sc.feed_prefiltered(0, batch, head if first else ())
    proc.stdout.close()
    if proc.wait() not in (0, 1):  # grep gave up (a line too long for its memory): Python reads on
        if counter is not None:
            counter.kill()
            counter.wait()
        sc.lines = start + last + 1
        _read_plain(sc, fd, skip_lines=last + 1)
        return
    sc.lines = start + _count_lines(fd, counter)


def _memory_capped(argv):
    """argv run under sh's 'ulimit -v' (grep's address space only). Not preexec_fn: that is unsafe
    when other threads run (the probes' gather). The argv stays argv: sh gets it as "$0" "$@"."""
    sh = shutil.which("sh")
    if not sh:
        return argv
    return [sh, "-c", 'ulimit -v %d 2>/dev/null; exec "$0" "$@"' % (_GREP_MEMORY // 1024)] + argv


def _bounded_lines(stream, sc=None):
    """grep's output lines, each at most MAX_LINE bytes: a longer one keeps its 'NNN:' and its
    last MAX_LINE bytes (the message a crash's NULs or junk ran into is at its end), and is
    counted in ``sc.cut_lines``; one huge matching line costs MAX_LINE, not its size."""
    while True:
        raw = stream.readline(MAX_LINE + 32)  # + room for grep's 'NNN:' prefix
        if not raw:
            return
        if not raw.endswith(b"\n"):
            head, _, _ = raw.partition(b":")
            tail = raw
            while tail and not tail.endswith(b"\n"):
                more = stream.readline(_CHUNK)
                if not more:
                    break
                tail = (tail + more)[-(MAX_LINE + 1):]
            raw = head + b":" + tail[-(MAX_LINE + 1):]
            if sc is not None:
                sc.cut_lines += 1
        yield raw


def _count_lines(fd, counter):
    total = None
    if counter is not None:
        out = counter.communicate()[0].split()
        total = int(out[0]) if out and out[0].isdigit() else None
    size = os.fstat(fd).st_size
    if total is None:
        total, offset = 0, 0
        while offset < size:
            chunk = os.pread(fd, _CHUNK, offset)
            if not chunk:
                break
            total += chunk.count(b"\n")
            offset += len(chunk)
    if size:  # an unterminated last line is a line too (wc -l does not count it)
        total += os.pread(fd, 1, size - 1) != b"\n"
    return total
