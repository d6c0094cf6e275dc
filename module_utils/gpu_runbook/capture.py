# SPDX-License-Identifier: Apache-2.0
"""Capture directories: the offline twin of probes.collect. A directory of captured outputs
becomes the same ``sources`` dict a live gather gives, and nothing in it is lost silently.

Every file is read by its content, never by its name (content/): a bug report by its
header and section markers; the structured blocks it holds (nvidia-smi, ibstat, ibv_devinfo,
perfquery, the sysfs dump, ...) each by the parser of its format, several blocks of a paste
each by its own; and every other line by both line readers: the kernel-log reader (which
takes the kernel's lines and leaves the rest; a file none of whose lines is the kernel's
adds no kernel log) and the job-log reader (which takes the job's lines: NCCL, PyTorch,
launchers, Slurm's srun/slurmstepd, progress). So ``dmesg.txt``, ``paste.txt`` and
``kern.log`` holding the same lines give the same findings, and findings name the file as
the user named it.

- kernel-log reading never holds a file whole: its paths are listed,
  ``sources["kern.log"] = {"paths": [...]}``, every one of them, and
  ``stream_large_sources`` streams them through the kernel-log scanner; the job-log reader
  streams them line by line too (``job_files``: a TextLines, or the text left once the
  structured blocks were taken out);
- a structured block is read up to the read cap; a bigger file is read to the cap AND says
  so, and so does a truncated or corrupt gzip (``capture_truncated``);
- a file that cannot be read, or is not a regular file (a FIFO, a device, a /proc or /sys
  pseudo file is never opened), is a ``capture_unreadable`` finding naming it; an empty file
  is named in ``unknown``.

Those findings travel in ``sources["_notes"]`` (analyze adds them to the host's findings).
"""

import datetime
import os
import stat
import zlib

from .content import plan as content_plan
from .findings import finding, never_raise
from .linefamily import is_node_line
from .sources import AUTOPILOT, BUG_REPORT, KERNEL_LOG, NAMES, NOTES, PBSNODES, SLURM_NODE
from .textio import TextChunks, TextLines, decode, is_gzip, open_regular, pseudo_file

_MAX_READ = 64 * 1024 * 1024  # characters of one file's structured text held in memory
_MAX_JOB_LOG = 256 * 1024 * 1024  # bytes of a job log read from its END (the hang is there); the head skipped is said
_HEAD = 65536  # what the first look at a file reads
_WHOLE = 1024 * 1024  # a file up to this size (on disk) is searched whole for structured blocks
_CHUNK = 1024 * 1024


def load_capture_dir(path, files=None, blocks=None, ignore=()):
    """A capture directory -> (host sources, job log files, unread names).

    ``files`` limits the load to those entries of the directory (a single file given on the
    command line). Subdirectories are skipped (per-host directories). ``job_files`` maps each
    file's own name to what the job-log reader reads of it; ``unread`` names the files that
    hold nothing at all (empty). ``blocks``: a dict that gets, per file, the structured
    sources found in it (``["nvidia-smi.txt", ...]``, ``["bug-report.txt"]``)."""
    sources, job_files, unknown, notes, kernel_paths, plain = {}, {}, [], [], [], []
    for entry in sorted(os.listdir(path) if files is None else files):
        if entry in ignore:
            continue
        full = os.path.join(path, entry)
        kind_of_file = _file_type(full)
        if kind_of_file == "directory":
            continue
        if kind_of_file is not None:
            notes.append(finding("capture_unreadable", "%s is %s: it was not read" % (entry, kind_of_file),
                                 evidence=full, source=entry))
            continue
        try:
            head, size = _head(full)
        except OSError as exc:
            notes.append(_unreadable(entry, full, exc))
            continue
        if not head.strip():
            unknown.append(entry)  # empty (or only blanks): nothing to read
            continue
        found = read_file(full, entry, head, size, sources, job_files, kernel_paths, notes)
        if blocks is not None:
            blocks[entry] = found
        if size > _WHOLE and full in kernel_paths and not _node_lines_in(head):
            plain.append(full)  # a big text whose start holds no node line: no host to find in it
    if kernel_paths:
        sources[KERNEL_LOG] = {"paths": kernel_paths, "plain": plain}
    if notes:
        sources[NOTES] = notes
    return sources, job_files, unknown


def read_file(full, entry, head, size, sources, job_files, kernel_paths, notes):
    """One file into the readers that take it (module docstring). A file is searched whole
    for structured blocks when it is small, or when its head already holds one (a paste); a
    big log whose head holds none is streamed, never held in memory."""
    job_name = entry[:-3] if entry.endswith(".gz") else entry
    found = content_plan(head)
    text = None
    if size <= min(_WHOLE, _MAX_READ) or found.blocks:  # a structured block is read to the cap
        text = _read_text(full, entry, notes=notes)
        if text is None:
            return []
        found = content_plan(text)
    if found.bug_report:
        _add(sources, BUG_REPORT, text if text is not None else _read_text(full, entry, notes=notes) or "")
        return [BUG_REPORT]
    for name, block in found.blocks.items():
        _add(sources, name, block)
        sources.setdefault(NAMES, {}).setdefault(name, entry)  # findings cite the file as it is named
    if text is not None and found.blocks:
        if found.rest is not None:  # the lines around the blocks, numbered as in the file
            kernel_paths.append(full)
            job_files[job_name] = found.rest
        return sorted(found.blocks)
    kernel_paths.append(full)  # the kernel-log reader takes the kernel's lines, streamed
    job_files[job_name] = TextLines(full, tail=_MAX_JOB_LOG)  # the job-log reader the job's
    return sorted(found.blocks)


def _node_lines_in(head, lines=400):
    """True when the first lines of a text hold a line of the node's logs (linefamily)."""
    return any(is_node_line(line) for line in head.split("\n", lines)[:lines])


def _add(sources, name, text):
    sources[name] = sources[name] + "\n" + text if isinstance(sources.get(name), str) else text


def _file_type(full):
    """None for a regular file (links followed), "directory", or what else it is."""
    try:
        mode = os.stat(full).st_mode
    except OSError as exc:
        return "a broken link" if os.path.islink(full) else "not readable (%s)" % (exc.strerror or exc)
    if stat.S_ISREG(mode):
        return pseudo_file(full)  # /proc/kmsg is "regular": reading it drains the kernel's ring
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO, not a regular file"  # opening one would block the load
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device, not a regular file"
    return "not a regular file"


def _unreadable(entry, full, exc):
    return finding("capture_unreadable", "%s could not be read: %s" % (entry, exc.strerror or exc),
                   evidence=full, source=entry)


def _head(full):
    """(the first ``_HEAD`` bytes of a file as text, decompressed when it is gzip (by magic,
    whatever the name), decoded as UTF-8 or UTF-16; its size on disk). Never more than that
    is decompressed."""
    fd, st = open_regular(full)  # checked again on the open file: it may have been swapped
    with os.fdopen(fd, "rb") as fh:
        raw = fh.read(_HEAD)
        if not is_gzip(raw):
            return decode(raw), st.st_size
        z, out = zlib.decompressobj(wbits=31), b""
        while raw and len(out) < _HEAD and not z.eof:
            try:
                out += z.decompress(raw, _HEAD - len(out))
            except zlib.error:
                break  # corrupt: detection sees what came out before it
            raw = z.unconsumed_tail or fh.read(_HEAD)
    # a compressed file's size is not its text's: read it whole only when it is small on disk
    return decode(out), st.st_size * 8


def _read_text(full, entry, notes):
    """A whole source as text, at most its first ``_MAX_READ`` characters (job logs are streamed
    from their end instead). Cut or corrupt -> a capture_truncated note; unreadable -> a
    capture_unreadable note and None."""
    chunks = TextChunks(full, size=_CHUNK)
    kept, size, cut = [], 0, False
    gen = iter(chunks)
    try:
        for text in gen:
            kept.append(text)
            size += len(text)
            if size > _MAX_READ:
                cut = True
                break
    except OSError as exc:
        notes.append(_unreadable(entry, full, exc))
        return None
    finally:
        gen.close()
    text = "".join(kept)
    if cut:
        text = text[:_MAX_READ]
        notes.append(finding(
            "capture_truncated", "%s is bigger than the read cap (%d MiB): only its first %d MiB were read"
            % (entry, _MAX_READ >> 20, _MAX_READ >> 20), evidence=full, source=entry))
    if chunks.error:
        notes.append(finding("capture_truncated", "%s: %s; it was read as far as it goes" % (entry, chunks.error),
                             evidence=full, source=entry))
    return text


def stream_large_sources(sources, since=None, year=None, tz=None):
    """Replace the kernel-log file lists left by load_capture_dir by their parse:
    -> (sources without them, {source name: (facts, findings)}) for analyze_host(parsed=).
    ``tz``: the zone of the logs' times written without one."""
    rest, parsed = {}, {}
    notes = list(sources.get(NOTES) or [])
    for name, value in sources.items():
        if name in (NOTES, NAMES):
            rest[name] = value
            continue
        if isinstance(value, dict) and "paths" in value and "error" not in value:
            parsed[name] = never_raise(_scan, name, name, value["paths"], since, year, tz)
        else:
            rest[name] = value
    if notes:
        rest[NOTES] = notes
    return rest, parsed


def _scan(name, paths, since, year, tz):
    from .kernlog import scan_kernel_log_files
    kwargs = {"since": since, "year": year if year is not None else _captured_at(paths)}
    if tz is not None:
        kwargs["tz"] = tz
    try:
        return scan_kernel_log_files(list(paths), **kwargs)
    except OSError as exc:  # a file gone or unreadable since the directory was listed
        return {}, [finding("capture_unreadable", "%s could not be read: %s" % (name, exc),
                            evidence=" ".join(paths), source=name)]


def _captured_at(paths):
    """The capture's own time (its newest file's mtime, UTC): a year-less syslog line is never
    dated after it. None when no file can be stat'ed."""
    times = []
    for path in paths:
        try:
            times.append(os.stat(path).st_mtime)
        except OSError:
            continue
    return datetime.datetime.fromtimestamp(max(times), datetime.timezone.utc) if times else None


def split_hosts(sources, since=None, year=None, tz=None):
    """One capture directory's sources -> [(host or None, sources, parsed)]: one entry per
    host its text names (pdsh/clush prefixes, syslog hostnames, shell prompts, clush/ansible
    blocks, a bug report's uname line), so a file of several hosts gives one result each. A
    capture whose text names one host is that host's, whatever the directory is called;
    what names no host goes to the one host named, else to the entry None (the directory's
    own). ``parsed``: {kern.log: (facts, findings)} when the kernel logs had to be split
    (streamed, one bounded scanner per host); otherwise their file list stays in ``sources``
    for stream_large_sources."""
    from .bugreport import bug_report_hostname
    from .kernlog.hosts import split_text
    per_host, base = {}, {}
    for src, value in sources.items():
        if src in (NOTES, NAMES):
            continue
        if src == BUG_REPORT and isinstance(value, str):
            host = bug_report_hostname(value)
            if host:
                per_host.setdefault(host, {})[src] = value
                continue
        if src == SLURM_NODE and isinstance(value, str):  # each node's record is that node's
            from .slurm import node_records
            from .slurm_reasons import sinfo_records
            for host, record in sinfo_records(value) or node_records(value):
                per_host.setdefault(host, {})[src] = record
            continue
        if src in (PBSNODES, AUTOPILOT) and isinstance(value, str):
            # each node's pbsnodes record, each node's section of Autopilot's report, is that node's
            from . import autopilot, pbsnodes
            for host, part in (pbsnodes if src == PBSNODES else autopilot).host_parts(value):
                if host is None:
                    base[src] = part
                else:
                    per_host.setdefault(host, {})[src] = part
            continue
        if not isinstance(value, str) or src == BUG_REPORT:
            base[src] = value
            continue
        try:
            _demux, parts = split_text(value)
        except Exception:  # noqa: BLE001 -- the text stays whole, parsed as before
            parts = {}
        if not any(h is not None for h in parts):
            base[src] = value
            continue
        for h, text in parts.items():
            if h is None:
                if text.strip():
                    base[src] = text
            else:
                per_host.setdefault(h, {})[src] = text
    kparsed, kname = _split_kernel(base.get(KERNEL_LOG), since, year, tz)
    if kparsed:
        plain = base.pop(KERNEL_LOG, {}).get("plain")
        if plain:  # not demultiplexed: read whole by the capture's own entry
            base[KERNEL_LOG] = {"paths": list(plain)}
    hosts = list(per_host) + [h for h in kparsed if h is not None and h not in per_host]
    if kname and kname not in hosts:
        hosts.append(kname)
    if len(hosts) == 1:
        merged = dict(base)
        merged.update(per_host.get(hosts[0], {}))
        out = [(hosts[0], merged, {KERNEL_LOG: kparsed[hosts[0]]} if hosts[0] in kparsed else {})]
        if None in kparsed:  # cannot be merged into the named host's scan: its own entry
            out.append((None, {}, {KERNEL_LOG: kparsed[None]}))
    else:
        out = [(h, dict(per_host.get(h, {})), {KERNEL_LOG: kparsed[h]} if h in kparsed else {}) for h in hosts]
        if kname in hosts and KERNEL_LOG in base:
            out[hosts.index(kname)][1][KERNEL_LOG] = base.pop(KERNEL_LOG)
        if base or None in kparsed or not out:
            out.append((None, base, {KERNEL_LOG: kparsed[None]} if None in kparsed else {}))
    notes = list(sources.get(NOTES) or [])
    if notes:
        target = next((e for e in out if e[0] is None), out[0])
        target[1][NOTES] = notes
    if sources.get(NAMES):
        for entry in out:
            entry[1][NAMES] = sources[NAMES]
    return out


def _split_kernel(value, since, year, tz):
    """Kernel-log files -> ({host: (facts, findings)}, None) when they name several hosts or
    carry pdsh prefixes, prompts or block headers (lines of no host under None); else ({},
    the one host they name or None) and the fast single scan reads them as they are."""
    if not (isinstance(value, dict) and "paths" in value and "error" not in value):
        return {}, None
    from .kernlog.hostscan import scan_by_host, survey_hosts
    plain = set(value.get("plain") or ())  # big texts with no node line at their start: never surveyed
    paths = [p for p in value["paths"] if p not in plain]
    if not paths:
        return {}, None
    try:
        names, demux_needed = survey_hosts(paths)
        if not demux_needed:
            return {}, next(iter(names)) if names else None
        per_host, _demux = scan_by_host([(p, os.path.basename(p)) for p in paths], None,
                                        since=since, year=year if year is not None else _captured_at(paths),
                                        tz=tz)
    except Exception:  # noqa: BLE001 -- a bug here must not lose the log: the plain scan reads it
        return {}, None
    return per_host, None
