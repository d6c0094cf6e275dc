# SPDX-License-Identifier: Apache-2.0
"""Training-job logs: find the rank, host and GPU behind an NCCL collective timeout.

``parse_job_logs(files, since=None) -> (job, findings)``

``files`` maps a file name to its text or a line source (streamed, see parse_job_logs): one
combined ``slurm-<id>.out`` with every rank interleaved, or per-rank files (``rank-3.log``,
``train.rank_11.err`` ...).  A line's rank comes from its prefix when it has one (torchrun
``[rank3]:``, ``srun --label`` ``3: ``, Lightning ``GLOBAL_RANK: 3``), else from the file
name (``rank-3``, ``rank_3``, ``task3``).

Recognised (formats of PyTorch 1.x .. 2.x and NCCL 2.7 .. 2.2x):

* PyTorch watchdog timeouts ``[Rank 3] Watchdog caught collective operation timeout:
  WorkNCCL(SeqNum=.., OpType=.., NumelIn=.., ..., Timeout(ms)=..) ran for .. milliseconds``,
  with or without the glog prefix; ``last enqueued/completed NCCL work`` lines;
  ``Some NCCL operations have failed or timed out``; ``watchdog got stuck``.
* TORCH_NCCL_DESYNC_DEBUG reports (``ranks [11] are the lagging ranks ...``,
  ``[11] joined but didn't finish collective #N``, ``[..] finished collective #N, but
  didn't join collective #N+1``).
* Flight Recorder: ``fr_trace`` text (``Not all ranks joining collective``, ``missing
  ranks: {11}``) and raw JSON dumps (``collective_seq_id`` / ``state`` per entry).
* NCCL_DEBUG lines ``host:pid:tid [dev] NCCL INFO|WARN``: communicator rank/nranks/busId/
  localRank, ``NET/IB : Using ...``, ``Using network ...``, ``NCCL_IB_DISABLE``, IB
  completion errors (every format from ``with error 12, opcode 0, len`` to
  ``with status=transport retry counter exceeded(12) ... hca mlx5_3``), refused or closed
  connections, ``unhandled system error`` / ``remote process exited``.
* tqdm progress (also ``\\r``-chained updates in one physical line) and HF ``'epoch': x``.
* DataLoader worker deaths/timeouts, CUDA and host OOM, CUDA errors (ECC, illegal address,
  launch failure), Python tracebacks, ``srun: error: host: task N: ...``.

``since`` (ISO string, datetime or epoch seconds; e.g. the Slurm StartTime) drops lines whose
own timestamp (ISO ``2026-12-02 14:03:11`` or glog ``E1202 14:03:11``, year taken from
``since``) is earlier; lines without a timestamp are always kept.  Times are compared as
wall-clock values (Slurm and glog both print local time).

Culprit evidence, strongest first: Flight Recorder (missing / never-entered ranks), the
desync report, the ranks that did not time out on the collective everybody else waits in
(needs the world size from NCCL ``nranks`` or the ranks seen in the logs), the lowest
``last completed NCCL work``, then the rank that logged a CUDA / IB / OOM / DataLoader error
first.  An IB peer named by several reporters is the suspect host.

Pure function of its lines: no I/O of its own (a line source such as textio.TextLines reads
its file as it is iterated; with ``workers``, processes read the files' tqdm bars and a
share of their blocks' shapes ahead, parallel.py), stdlib only, never raises on garbage (a bug in it becomes one ``parser_error``
finding, through ``findings.never_raise``). Memory is flat in the logs' size.

The package: ``patterns`` (the regex table), ``lines`` (the per-file line parser, a dispatcher
over the handler families ``nccl_lines``, ``torch_lines``, ``progress``, ``error_lines``),
``analysis`` and ``culprits`` (the whole job), ``event_findings`` and ``job_findings``;
``quiet`` (the prefilter: a line no handler can use is skipped unread), ``scan`` (the same
prefilter over blocks of lines: a big file's quiet lines cost no step of Python each) and
``parallel`` (worker processes that read the files' tqdm bars and some blocks' shapes ahead
of the parser).
"""

from datetime import datetime, timezone

from ..findings import finding, never_raise
from .analysis import analyse, empty_job
from . import parallel
from .lines import parse_file
from .patterns import IBV_WC_STATUS, MAX_LINE
from .state import JobState
from .text import FileLines, busid_to_pci, rank_from_name, since_value

# the names the tests have always imported from here
_busid_to_pci = busid_to_pci
_rank_from_name = rank_from_name

__all__ = ["IBV_WC_STATUS", "parse_job_logs"]


def parse_job_logs(files, since=None, workers=None):
    """Parse the job's logs. ``files``: {name: text or line source} (or a list of them, or one
    text); a line source is any iterable of lines, e.g. ``textio.TextLines(path)``: each file
    is read once, line by line, and never held whole. ``workers``: processes that read the tqdm
    bars and some blocks' shapes of the files read from a path ahead (parallel.py; the result
    is the serial one).
    Returns (job, findings)."""
    since_dt = since_value(since)
    st = JobState(since_dt, since_dt.year if since_dt is not None else datetime.now(timezone.utc).year)
    errors = []
    items = []
    for name, source in _items(files):
        if isinstance(source, (bytes, bytearray)):
            source = bytes(source).decode("utf-8", "replace")
        if not source or not (isinstance(source, str) or hasattr(source, "__iter__")):
            continue
        items.append((str(name), source))
    readers = _readers([source for _name, source in items], workers)
    try:
        for k, (name, source) in enumerate(items):
            lines = FileLines(source)
            ahead = readers.ahead(k, lines) if readers is not None else None
            # a bug on one file costs that file's remaining lines, not the job
            _facts, errs = never_raise(_read_file, name, name, lines, st, ahead)
            st.bars_read = None
            if ahead is not None:
                ahead.finish()
            errors.extend(errs)
            errors.extend(read_notes(name, lines))
    finally:
        if readers is not None:
            readers.close()
    job, findings = never_raise(analyse, "job logs", st)
    job = job or empty_job()
    job["files_read"] = dict(st.files_read)
    for f in findings:
        f.setdefault("family", "job")  # the job's own words, whatever file they were in
    return job, errors + findings


_NOTE_KINDS = ("capture_truncated", "capture_unreadable", "parser_error")


def read_anything(job, findings):
    """True when the job's logs held anything of a job: a line some reader used, or a finding
    about the logs themselves (a file that could not be read is said, not dropped). Error-like
    lines nothing explains are no sign of a job by themselves (``loose``)."""
    return any((job or {}).get("files_read", {}).values()) or any(
        f["kind"] != "unexplained_errors" for f in findings)


def loose(findings):
    """The findings of a text that held no job: its unexplained lines, which belong to the
    host whose capture held them (cli.py), never dropped."""
    return [f for f in findings if f["kind"] == "unexplained_errors"]


def _readers(sources, workers):
    """parallel.Readers for the line sources that read a path, when ``workers`` >= 1."""
    if not workers or workers < 1:
        return None
    ks = parallel.usable(sources)
    if not ks:
        return None
    try:
        return parallel.Readers(dict((k, sources[k]) for k in ks), min(workers, len(ks)))
    except (OSError, ValueError, ImportError):  # no processes here (no fork, no sem_open): read them in this one
        return None


def read_notes(name, lines):
    """What was not read of one file, as findings: lines cut at the line cap, and what its
    source says (a head skipped under a read cap, a file that ended early or could not be
    opened)."""
    notes = []
    if lines.cut:
        notes.append(finding("capture_truncated", "%s: %d line(s) longer than %d MiB were cut to their last %d MiB"
                             % (name, lines.cut, MAX_LINE >> 20, MAX_LINE >> 20), source=name, severity="info"))
    for problem in getattr(lines.source, "problems", None) or ():
        kind = "capture_truncated" if lines.lines else "capture_unreadable"
        notes.append(finding(kind, str(problem), source=name))
    return notes


def _items(files):
    if isinstance(files, dict):
        return list(files.items())
    if isinstance(files, (list, tuple)):
        return [(str(i), t) for i, t in enumerate(files)]
    return [("job.log", files)]


def _read_file(name, lines, st, ahead=None):
    parse_file(name, lines, st, ahead)
    return {}, []
