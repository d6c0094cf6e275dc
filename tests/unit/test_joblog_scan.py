"""Job logs read in blocks: textio.TextLines.blocks and text.FileLines.blocks give the lines a
line-by-line read gives (cut, cleaned and counted the same), and the prefilter's block scan
(joblog/scan.py) leaves out only lines the parser would skip: the job and its findings are the
ones of a line-by-line read, and of a read of every line in full."""

import codecs
import gzip
import os
import random

import pytest

from gpu_runbook.joblog import lines as joblog_lines
from gpu_runbook.joblog import parallel, parse_job_logs, progress, scan
from gpu_runbook.joblog import text as joblog_text
from gpu_runbook.joblog.text import FileLines
from gpu_runbook.textio import TextLines

from tests.conftest import FIXTURES

from .test_joblog_stream import CASES, _text, _training_log


def _reference_lines(text, limit):
    """What TextLines yields, from the whole text: \\n-split, no line after a last \\n, each
    line longer than ``limit`` cut to its end (and counted)."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    cut = sum(1 for line in lines if len(line) > limit)
    return [line[-limit:] for line in lines], cut


def _write(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


EDGE_TEXTS = {
    "empty": "",
    "one newline": "\n",
    "newlines": "\n\n\n",
    "no newline at the end": "a\nbb\nccc",
    "empty lines between": "a\n\n\nb\n",
    "crlf": "one\r\ntwo\r\n\r\nthree\r\r\n[rank1]:tqdm 5%|#\rx\r\n",
    "a huge line": "start\n" + "y" * 5000 + " end\nafter\n",
    "a huge last line": "start\n" + "z" * 5000,
    "non-ascii": "h\u00e9llo \u4e2d\u6587\n\U0001f600 emoji\nlast \u00e9",
}


@pytest.mark.parametrize("size", [1, 3, 7, 64, 4096])
@pytest.mark.parametrize("name", sorted(EDGE_TEXTS))
@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "gzip"])
def test_textlines_blocks_are_its_lines(tmp_path, name, size, encoding):
    """Chunks of every size, so lines are split across chunk boundaries (and a multi-byte
    character too); a line longer than max_line is cut at any chunk boundary."""
    text = EDGE_TEXTS[name]
    data = codecs.encode(text, encoding) if encoding != "gzip" else gzip.compress(text.encode())
    path = _write(tmp_path, "rank-0.log", data)
    limit = 1000
    source = TextLines(path, max_line=limit, size=size)
    blocks = list(source.blocks())
    from_blocks = [line for block in blocks for line in block.split("\n")]
    counts = (source.lines, source.cut)
    want, cut = _reference_lines(text, limit)
    assert from_blocks == want and counts == (len(want), cut)
    assert list(source) == want and (source.lines, source.cut) == counts
    assert all(len(block) <= max(size, limit) * 2 + 4 for block in blocks)  # bounded: memory flat


@pytest.mark.parametrize("tail", [10, 100, 1000])
def test_textlines_blocks_with_a_read_cap(tmp_path, tail):
    text = "".join("line %d %s\n" % (i, "x" * (i % 13)) for i in range(300))
    path = _write(tmp_path, "rank-0.log", text.encode())
    source = TextLines(path, tail=tail, size=17)
    got = [line for block in source.blocks() for line in block.split("\n")]
    data = text.encode()[-tail:]
    want = data.decode().split("\n")[1:-1]  # the partial first line dropped, none after the last \n
    assert got == want and source.lines == len(want) and source.skipped == len(text) - tail


def _plain_lines(text):
    """The text as a plain iterable of lines (no blocks): FileLines reads it line by line."""
    return iter(_reference_lines(text, 10 ** 9)[0])


@pytest.mark.parametrize("name", sorted(EDGE_TEXTS) + ["escapes"])
def test_filelines_blocks_clean_as_lines(name, monkeypatch):
    monkeypatch.setattr(joblog_text, "BLOCK", 16)
    monkeypatch.setattr(joblog_text, "MAX_LINE", 1000)
    text = EDGE_TEXTS.get(name) or ("\x1b[31mred\x1b[0m\r\nnul\x00here\r\r\n\x1b]8;;http://x\x07link\x1b]8;;\x07\n"
                                    "osc \x1b]0;title\nnext\x07 line\n\r\rx\r\n")
    by_line = FileLines(_plain_lines(text))
    want = list(by_line)
    blocked = FileLines(text)
    got = [(n + k, line) for n, block, _none in blocked.blocks() for k, line in enumerate(block.split("\n"))]
    assert got == want and (blocked.lines, blocked.cut) == (by_line.lines, by_line.cut)
    assert list(FileLines(text)) == want


def _counting(monkeypatch):
    """Wrap scan.lines_to_read: [lines it gave]."""
    given = []
    real = scan.lines_to_read

    def counted(*args):
        for item in real(*args):
            given.append(item)
            yield item
    monkeypatch.setattr(scan, "lines_to_read", counted)
    return given


def _three_ways(files_text, paths=None, monkeypatch=None, given=None):
    """(streamed in blocks with the scan, read line by line from a plain iterable, every line
    read in full, how many lines the scan gave (``given``: _counting's list))."""
    scanned = parse_job_logs({n: TextLines(p, size=4096) for n, p in paths.items()} if paths else files_text)
    scanned_lines = len(given) if given is not None else None
    by_line = parse_job_logs({n: _plain_lines(t) for n, t in files_text.items()})
    monkeypatch.setattr(joblog_lines, "PREFILTER", False)
    full = parse_job_logs(files_text)
    monkeypatch.setattr(joblog_lines, "PREFILTER", True)
    return scanned, by_line, full, scanned_lines


@pytest.mark.parametrize("tries", [0, 2000])
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_scan_gives_what_lines_give_on_every_fixture(case, tries, monkeypatch):
    monkeypatch.setattr(joblog_lines, "FIRST_TIME_TRIES", tries)
    paths = {os.path.basename(p): p for p in CASES[case]}
    files = {n: _text(p) for n, p in paths.items()}
    scanned, by_line, full, _n = _three_ways(files, paths, monkeypatch)
    assert scanned == by_line == full
    monkeypatch.setattr(joblog_text, "BLOCK", 512)  # texts in many small blocks
    assert parse_job_logs(files) == full


def _eventful_log(rank, rnd, n=6000):
    """A rank log where what makes a line loud or quiet changes on the way: a combined log's
    ranks first seen mid-file, tracebacks, an IB completion error waiting for its vendor code,
    a RAS report, Flight Recorder text, nccl-tests' header and then its rows, CRLF ends,
    tqdm chains, a glog line, lines with and without a rank prefix."""
    out = []
    for i in range(n):
        r = rnd.random()
        step = " [2026-12-02 14:%02d:%02d] iteration %8d/ 500000 | lm loss: %.6E |" % (i // 60 % 60, i % 60, i, r)
        if i % 500 == 250:
            out += ["Traceback (most recent call last):", '  File "train.py", line %d, in <module>' % i,
                    "    main()", step, "RuntimeError: CUDA error: an illegal memory access was encountered"]
        elif i % 700 == 350:
            out += ["n%d:10:11 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer "
                    "10.0.0.%d<5> with status=12 opcode=0 len=0 vendor err 129 (Send) localGid ::ffff"
                    % (rank, i % 250), step]
        elif i % 900 == 450:
            out += ["[rank%d]:Not all ranks joining collective 5 at entry 2" % (i % 7), step,
                    "[rank%d]:missing ranks: {%d}" % (i % 7, i % 5)]
        elif i % 1100 == 550:
            out += ["RAS Collectives", "Group  Comm     Rank  Status", "  0  0x1234   %d   INCOMPLETE" % (i % 9), step,
                    "", step]
        elif i == 3000:
            out += ["#  nThread 1 nGpus 1 minBytes 8 maxBytes 128 step: 2(factor) warmup iters: 5 iters: 20",
                    "#       size         count      type   redop    root     time   algbw   busbw #wrong",
                    "           8             2     float     sum      -1    18.51    0.00    0.00      0"]
        elif i % 61 == 0:
            out.append("           %d             2     float     sum      -1    18.51    0.00    0.00      0"
                       % (8 * i))
        elif i % 97 == 0:
            out.append("\r".join("Epoch 2: %2d%%|##  | %d/9000 [01:02<03:04, 5.%02dit/s]" % (k % 100, i + k, k)
                                 for k in range(12)))
        elif i % 13 == 0:
            out.append("[rank%d]:%s" % (rnd.randrange(64), step))  # ranks seen one by one
        elif i % 17 == 0:
            out.append(step + "\r")
        else:
            out.append(step)
    out.append("[rank%d]:[E1202 14:41:00.000 ProcessGroupNCCL.cpp:616] [Rank %d] Watchdog caught collective "
               "operation timeout: WorkNCCL(SeqNum=77, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
               "Timeout(ms)=600000) ran for 600004 milliseconds before timing out." % (rank, rank))
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("tries", [0, 100, 2000])
def test_the_scan_follows_the_state_of_an_eventful_log(tmp_path, monkeypatch, tries):
    monkeypatch.setattr(joblog_lines, "FIRST_TIME_TRIES", tries)
    rnd = random.Random(5)
    files = {"rank-%d.log" % r: _eventful_log(r, rnd) for r in range(3)}
    files["slurm-7.out"] = _eventful_log(9, rnd)
    paths = {n: _write(tmp_path, n, t.encode()) for n, t in files.items()}
    given = _counting(monkeypatch)
    scanned, by_line, full, scanned_lines = _three_ways(files, paths, monkeypatch, given)
    total = sum(t.count("\n") for t in files.values())
    assert scanned_lines < total / 2  # the scan left most lines out: the comparison is not vacuous
    assert scanned == by_line == full
    assert scanned[0]["timed_out_ranks"] == [0, 1, 2, 9] and scanned[0]["nccl_tests"]


@pytest.mark.parametrize("form", ["crlf", "gzip", "utf-16", "huge line", "no newline at the end", "wrapped"])
def test_the_scan_on_every_form_of_file(tmp_path, monkeypatch, form):
    monkeypatch.setattr(joblog_lines, "FIRST_TIME_TRIES", 0)
    text = _training_log(1, 4000)
    if form == "crlf":
        text = text.replace("\n", "\r\n")
    elif form == "huge line":
        text = text.replace("\n", "\n" + "w" * (1 << 21) + " loss\n", 1)
    elif form == "no newline at the end":
        text = text.rstrip("\n")
    elif form == "wrapped":  # a terminal-wrapped paste: read line by line, joined
        text = "\n".join(text[i:i + 80] for i in range(0, len(text), 80))
    data = text.encode()
    name = "rank-1.log"
    if form == "gzip":
        data, name = gzip.compress(data), "rank-1.log.gz"
    elif form == "utf-16":
        data = codecs.encode(text, "utf-16")
    path = _write(tmp_path, name, data)
    given = _counting(monkeypatch)
    scanned = parse_job_logs({"rank-1.log": TextLines(path)})
    scanned_lines = len(given)
    monkeypatch.setattr(joblog_lines, "PREFILTER", False)
    full = parse_job_logs({"rank-1.log": text})
    assert scanned == full and scanned[0]["timed_out_ranks"] == [1]
    if form != "wrapped":
        assert scanned_lines < text.count("\n") / 4


class _Broken(TextLines):
    """A line source whose reading fails half way (a bug in a reader)."""

    def _blocks(self):
        for k, block in enumerate(TextLines._blocks(self)):
            if k == 2:
                raise ValueError("broken on purpose")
            yield block


def _sources_for_workers(tmp_path, rnd):
    texts = {"rank-%d.log" % r: _eventful_log(r, rnd, 3000) for r in range(5)}
    # CRLF ends, and non-ASCII text (its blocks' lines are split, not cut at known ends)
    texts["rank-5.log"] = _training_log(5, 3000).replace("\n", "\r\n").replace("lm loss", "lm lo\u00df")
    paths = {n: _write(tmp_path, n, t.encode()) for n, t in texts.items()}
    paths["rank-6.log.gz"] = _write(tmp_path, "rank-6.log.gz", gzip.compress(_training_log(6, 2000).encode()))
    fifo = str(tmp_path / "rank-7.log")
    os.mkfifo(fifo)
    paths["rank-7.log"] = fifo
    return paths


class _MainReads(object):
    """Counts the tqdm lines this process reads itself (progress.read_bars, as tqdm_bars calls
    it) and the blocks it makes the shapes of (scan.shapes, or parallel.shapes where a worker
    made some): a worker process has its own copy of the counts."""

    def __init__(self, monkeypatch):
        self.calls = self.blocks = 0
        real, real_shapes = progress.read_bars, scan.shapes

        def counted(text):
            self.calls += 1
            return real(text)

        def counted_shapes(text):
            self.blocks += 1
            return real_shapes(text)
        monkeypatch.setattr(progress, "read_bars", counted)
        monkeypatch.setattr(scan, "shapes", counted_shapes)
        monkeypatch.setattr(parallel, "shapes", counted_shapes)

        self.seen = []  # (src, raw) of each line the parser read: the same, line for line
        real_read_line = joblog_lines.read_line

        def read_line(raw, src, fs, st):
            self.seen.append((src, raw))
            return real_read_line(raw, src, fs, st)
        monkeypatch.setattr(joblog_lines, "read_line", read_line)

    def reset(self):
        got, self.calls, self.blocks, self.seen = (self.calls, self.blocks, self.seen), 0, 0, []
        return got


def test_workers_give_the_serial_result(tmp_path, monkeypatch):
    """The tqdm bars read ahead by worker processes (parallel.py): the job and findings are the
    serial ones, counts and problems included, and the parser reads no bar itself; a reader
    that fails costs its file only, as it does without workers."""
    monkeypatch.setattr(parallel, "MIN_BYTES", 0)
    paths = _sources_for_workers(tmp_path, random.Random(11))

    def sources(cls=TextLines):
        return {n: (cls if n == "rank-2.log" else TextLines)(p, size=4096) for n, p in sorted(paths.items())}
    serial_sources, parallel_sources = sources(), sources()
    main = _MainReads(monkeypatch)
    serial = parse_job_logs(serial_sources)
    bars, blocks, seen = main.reset()
    assert parse_job_logs(parallel_sources, workers=3) == serial and main.seen == seen
    assert bars > 200 and main.calls == 0  # every bar line was read by a worker and taken
    # and every SHAPES_EVERY-th block's shapes (the gzip file's too; the FIFO has none)
    assert blocks * 0.6 <= main.blocks <= blocks * 0.75
    for n in paths:
        a, b = serial_sources[n], parallel_sources[n]
        assert (a.lines, a.cut, a.problems, a.skipped) == (b.lines, b.cut, b.problems, b.skipped)
    assert serial[0]["timed_out_ranks"] == [0, 1, 2, 3, 4, 5, 6]
    assert parse_job_logs(sources(), workers=1) == serial
    broken = parse_job_logs(sources(_Broken), workers=2)
    broken_serial = parse_job_logs(sources(_Broken))
    (bug,) = [f for f in broken[1] if f["kind"] == "parser_error"]
    assert bug["source"] == "rank-2.log" and "broken on purpose" in bug["message"]
    assert broken == broken_serial  # what the file gave before it failed, then the others


class _OtherInWorker(TextLines):
    """A file that reads otherwise in the worker (it grew, or was rewritten, between the two
    reads): every tqdm line's bars changed there."""

    def _blocks(self):
        for block in TextLines._blocks(self):
            yield block.replace("Epoch", "Epoch 9") if os.getpid() != PARENT["pid"] else block


class _DiesInWorker(TextLines):
    """A worker that dies half way through this file (killed, out of memory)."""

    def _blocks(self):
        for k, block in enumerate(TextLines._blocks(self)):
            if k == 3 and os.getpid() != PARENT["pid"]:
                os._exit(9)
            yield block


PARENT = {"pid": os.getpid()}


@pytest.mark.parametrize("cls", [_OtherInWorker, _DiesInWorker])
def test_what_the_worker_read_otherwise_is_read_by_the_parser(tmp_path, monkeypatch, cls):
    """Bars a worker read of another text than the parser's, or never sent, are read by the
    parser: still the serial result."""
    monkeypatch.setattr(parallel, "MIN_BYTES", 0)
    monkeypatch.setitem(PARENT, "pid", os.getpid())
    paths = _sources_for_workers(tmp_path, random.Random(12))

    def sources():
        return {n: (cls if n in ("rank-1.log", "rank-5.log") else TextLines)(p, size=4096)
                for n, p in sorted(paths.items())}
    main = _MainReads(monkeypatch)
    serial = parse_job_logs(sources())
    bars, blocks, seen = main.reset()
    assert parse_job_logs(sources(), workers=1) == serial and main.seen == seen
    assert 0 < main.calls < bars  # the other files' bars still came from the worker
    assert main.blocks < blocks  # and their shapes
    if cls is _OtherInWorker:  # and the worker's text would have told another story
        monkeypatch.setitem(PARENT, "pid", -1)
        assert parse_job_logs(sources())[0]["failed_at"] != serial[0]["failed_at"]


def test_line_text_is_what_read_line_hands_the_handlers():
    """The workers read tqdm bars from lines.line_text: it must be read_line's text, on every
    fixture line and behind every launcher prefix."""
    from gpu_runbook.joblog.state import FileState, JobState
    from .test_joblog_stream import PREFIXES
    st = JobState()
    fs = FileState("rank-1.log", 1)
    bodies = {line for paths in CASES.values() for p in paths for line in _text(p).split("\n")[:300]}
    checked = 0
    for body in sorted(bodies):
        for prefix in PREFIXES[::3]:
            raw = prefix + body
            line = joblog_lines.read_line(raw, "x:1", fs, st)
            if line is not None:
                assert joblog_lines.line_text(raw) == line.text, raw
                checked += 1
    assert checked > 1000


def test_a_worker_whose_parser_is_gone_ends_quietly(tmp_path):
    """The parser ended or died: the worker's next send meets a closed pipe, and it ends without
    a traceback (it never writes to the job's terminal)."""
    import multiprocessing
    import signal
    path = _write(tmp_path, "rank-1.log", _training_log(1, 3000).encode())
    out, into = multiprocessing.Pipe(duplex=False)
    out.close()
    handler = signal.getsignal(signal.SIGINT)
    try:
        assert parallel._work([(0, TextLines(path, size=4096))], into) is None
    finally:
        signal.signal(signal.SIGINT, handler)


def test_the_report_step_reads_the_job_logs_with_a_worker_and_gets_the_serial_job(tmp_path, monkeypatch):
    """The playbook's report step asks for workers as the CLI does (parallel.job_log_workers:
    one on two CPUs, $GPU_RUNBOOK_JOB_LOG_WORKERS to say otherwise); its job is the serial one."""
    import shutil
    from gpu_runbook import report_step
    logs = tmp_path / "logs"
    shutil.copytree(os.path.join(FIXTURES, "joblog", "epoch35-hang-per-rank"), logs)
    monkeypatch.setattr(parallel, "MIN_BYTES", 0)  # 32 small rank logs stand in for big ones
    started, real = [], parallel.Readers.__init__

    def counted(self, sources, workers):
        started.append((len(sources), workers))
        real(self, sources, workers)
    monkeypatch.setattr(parallel.Readers, "__init__", counted)
    params = {"results": {}, "hosts": None, "result_var": "gpu_health_result", "lang": "en", "report_dir": None,
              "job": None, "job_log_dir": str(logs), "job_log_files": [], "analysis_findings": "all"}
    monkeypatch.setenv("GPU_RUNBOOK_JOB_LOG_WORKERS", "1")
    ahead = report_step.run(params, {})["analysis"]["job"]
    assert started == [(32, 1)]
    monkeypatch.setenv("GPU_RUNBOOK_JOB_LOG_WORKERS", "0")
    serial = report_step.run(params, {})["analysis"]["job"]
    assert started == [(32, 1)]  # none the second time
    assert ahead == serial
    assert serial["culprit_ranks"] == [11] and serial["timed_out_ranks"]  # the fixture's hung rank


def test_escapes_written_out_as_text_are_stripped_as_esc_is():
    from gpu_runbook.findings import has_escape, strip_ansi
    for written in ("#033[2m#033[33m(raylet)#033[0m x", "^[[31m(raylet)^[[0m x", "\\u001b[33m(raylet)\\u001b[0m x",
                    "\\x1b[33m(raylet)\\x1b[0m x", "\\033[33m(raylet)\\033[0m x", "\x1b[33m(raylet)\x1b[0m x"):
        assert has_escape(written) and strip_ansi(written) == "(raylet) x"
    assert strip_ansi("#033[0m kept", written=False) == "#033[0m kept"  # a wrapped line's width counts them
    for plain in ("tensor[[0, 1]] and arr[[2]]", "# 033[ not an escape", "issue #033 [closed]"):
        assert strip_ansi(plain) == plain
