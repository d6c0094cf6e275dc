"""Job logs streamed: a file is read line by line (textio.TextLines) and never held whole, the
result is the one its text gives, the prefilter (joblog/quiet.py) skips only lines no handler
could use, and what was not read (a cut line, a skipped head) is said."""

import codecs
import gzip
import os
import random
import tracemalloc

import pytest

from gpu_runbook.joblog import lines as joblog_lines
from gpu_runbook.joblog import parse_job_logs
from gpu_runbook.joblog import scan as joblog_scan
from gpu_runbook.joblog.patterns import MAX_LINE
from gpu_runbook.joblog.quiet import quiet
from gpu_runbook.reports import describe_inputs
from gpu_runbook.textio import TextLines, decode

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures")


def _job_log_name(name):
    """The fixtures' own convention for a job's log (the engine reads by content, not names)."""
    return name == "nccl.log" or name.endswith((".out", ".err")) or name.startswith(("rank-", "rank_", "slurm-"))


def _job_cases():
    """{case: [paths]}: every job-log fixture (tests/fixtures/joblog, and the job logs of the
    real captures)."""
    cases = {}
    for top in ("joblog", "real"):
        base = os.path.join(FIX, top)
        for case in sorted(os.listdir(base)):
            d = os.path.join(base, case)
            if not os.path.isdir(d):
                continue
            paths = [os.path.join(d, n) for n in sorted(os.listdir(d)) if n != "case.json"
                     and (top == "joblog" or _job_log_name(n[:-3] if n.endswith(".gz") else n))]
            if paths:
                cases[top + "/" + case] = paths
    return cases


CASES = _job_cases()


def _text(path):
    with open(path, "rb") as fh:
        data = fh.read()
    return decode(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)


def test_there_are_job_log_fixtures():
    assert len(CASES) >= 40 and any(c.startswith("real/") for c in CASES)


@pytest.mark.parametrize("case", sorted(CASES))
def test_streamed_gives_what_the_text_gives(case):
    paths = CASES[case]
    as_text = parse_job_logs({os.path.basename(p): _text(p) for p in paths})
    streamed = parse_job_logs({os.path.basename(p): TextLines(p) for p in paths})
    assert streamed == as_text


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_prefilter_changes_nothing(case, monkeypatch):
    # from the first line (no time search), so every line of the fixture meets the prefilter
    monkeypatch.setattr(joblog_lines, "FIRST_TIME_TRIES", 0)
    files = {os.path.basename(p): _text(p) for p in CASES[case]}
    filtered = parse_job_logs(files)
    monkeypatch.setattr(joblog_lines, "PREFILTER", False)
    assert filtered == parse_job_logs(files)


def _training_log(rank, n_lines, hung=False):
    """A rank log as training writes it: NCCL setup, Megatron iteration lines, a tqdm chain
    now and then, the watchdog's timeout at the end (none on the hung rank)."""
    out = ["n%d:100:101 [%d] NCCL INFO comm 0x1 rank %d nranks 4 cudaDev %d busId 1b000 - Init COMPLETE"
           % (rank, rank, rank, rank)]
    for i in range(n_lines):
        if i % 40 == 0:
            out.append("\r".join("Epoch 1: %2d%%|##  | %d/9000 [01:02<03:04, 5.%02dit/s]" % (k % 100, i + k, k)
                                 for k in range(30)))
        else:
            out.append(" [2026-12-02 14:%02d:%02d] iteration %8d/ 500000 | lm loss: %.6E | grad norm: %.3f |"
                       % (i // 60 % 60, i % 60, i, 2.0 + (i % 7) / 10.0, 0.5 + (i % 5) / 10.0))
    if not hung:
        out.append("[rank%d]:[E1202 14:41:00.000 ProcessGroupNCCL.cpp:616] [Rank %d] Watchdog caught collective "
                   "operation timeout: WorkNCCL(SeqNum=77, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                   "Timeout(ms)=600000) ran for 600004 milliseconds before timing out." % (rank, rank))
    return "\n".join(out) + "\n"


def test_the_prefilter_changes_nothing_on_a_long_training_log(monkeypatch):
    files = {"rank-%d.log" % r: _training_log(r, 3000, hung=(r == 2)) for r in range(4)}
    filtered = parse_job_logs(files)
    assert filtered[0]["culprit_ranks"] == [2] and filtered[0]["timed_out_ranks"] == [0, 1, 3]
    monkeypatch.setattr(joblog_lines, "PREFILTER", False)
    assert filtered == parse_job_logs(files)


@pytest.mark.parametrize("row", ["4242|NODE_FAIL|0:0", "4242.0|OUT_OF_MEMORY|0:125", "  4242.batch|FAILED|1:0"])
def test_a_sacct_row_without_its_header_deep_in_a_long_log_is_read(monkeypatch, row):
    # no needle gates such a row (sacct -b -P -n: JobID|State|ExitCode): past the first lines' time
    # search the prefilter alone decides, and it must not skip it
    files = {"rank-0.log": _training_log(0, 3000) + row + "\n"}
    filtered = parse_job_logs(files)
    (said,) = [f for f in filtered[1] if f["message"].startswith("sacct: job 4242")]
    assert row.split("|")[1] in said["message"]
    monkeypatch.setattr(joblog_lines, "PREFILTER", False)
    assert filtered == parse_job_logs(files)


PREFIXES = ("", "", "", "[rank3]:", "[rank12]: ", " ", "    ", "\t", "3: ", "  7: [rank7]:", "node17: ", "10.0.0.5: ",
            "[1,3]<stdout>:", "[5]<stderr>:", "(RayWorkerWrapper pid=5, ip=10.0.0.9) ", "[default0]:", "[trainer1|2]:",
            "[RANK 4] ", "E1202 14:00:00.123 77 x.cc:1] ", "[rank2]:[W1202 14:00:01.5 y.cc:9] ", "[I x.py:3] ",
            "> ", "[4]: ", "[2026-12-02 14:00:00,1] ", "2026-12-02 14:00:00 INFO ")


def _mixed_lines():
    """Every fixture line behind every kind of prefix, digits changed, in random order."""
    rnd = random.Random(17)
    bodies = sorted({line for paths in CASES.values() for p in paths for line in _text(p).split("\n")[:400]})
    quiet_ones = _training_log(0, 200).split("\n")
    out = []
    for _ in range(6000):
        body = rnd.choice(bodies if rnd.random() < 0.5 else quiet_ones)
        if rnd.random() < 0.3:
            body = "".join(str(rnd.randrange(10)) if c.isdigit() else c for c in body)
        out.append(rnd.choice(PREFIXES) + body)
    return {"rank-%d.log" % k: "\n".join(out[k::3]) for k in range(3)}


@pytest.mark.parametrize("scan", [False, True])
def test_the_prefilter_changes_nothing_on_mixed_prefixes_and_lines(monkeypatch, scan):
    """The prefilter sees shapes it cached for one line on lines that differ from it; line by
    line (quiet.py alone) and over blocks (scan.py) it skips only what changes nothing."""
    files = _mixed_lines()
    monkeypatch.setattr(joblog_lines, "FIRST_TIME_TRIES", 0)
    monkeypatch.setattr(joblog_lines, "SCAN", scan)
    skipped, given = [], []
    if scan:
        real = joblog_scan.lines_to_read
        monkeypatch.setattr(joblog_scan, "lines_to_read", lambda *a: (given.append(x) or x for x in real(*a)))
    else:
        monkeypatch.setattr(joblog_lines, "quiet", lambda raw, fs, st: quiet(raw, fs, st) and not skipped.append(raw))
    filtered = parse_job_logs(files)
    read = len(given) if scan else sum(t.count("\n") + 1 for t in files.values()) - len(skipped)
    # the comparison below is not vacuous: the prefilter skipped a fair share (the sample is drawn from the
    # fixtures, so it moves as they are added: about 400 of the 6000 lines)
    assert read < sum(t.count("\n") + 1 for t in files.values()) - 300
    monkeypatch.setattr(joblog_lines, "PREFILTER", False)
    assert filtered == parse_job_logs(files)


def test_memory_is_flat_in_the_log_size(tmp_path):
    path = str(tmp_path / "rank-1.log")
    with open(path, "w") as fh:
        while fh.tell() < 50 * 1000 * 1000:
            fh.write(_training_log(1, 2000, hung=True))
        fh.write(_training_log(1, 0))
    tracemalloc.start()
    try:
        job, _findings = parse_job_logs({"rank-1.log": TextLines(path), "rank-0.log": _training_log(0, 10)})
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert job["timed_out_ranks"] == [0, 1]
    assert peak < 20 * 1024 * 1024, "peak %.1f MiB for a 50 MB log" % (peak / 1048576.0)


@pytest.mark.parametrize("streamed", [False, True])
def test_a_line_over_the_cap_is_cut_and_said(tmp_path, streamed):
    text = ("x" * (MAX_LINE + 5000) + " tail\n" + _training_log(3, 5)).encode()
    path = tmp_path / "rank-3.log"
    path.write_bytes(text)
    job, findings = parse_job_logs({"rank-3.log": TextLines(str(path)) if streamed else text.decode()})
    assert job["timed_out_ranks"] == [3]  # the lines after it are read
    (cut,) = [f for f in findings if f["kind"] == "capture_truncated"]
    assert cut["severity"] == "info" and "1 line(s) longer than 1 MiB were cut" in cut["message"]
    lines = list(TextLines(str(path)))
    assert len(lines[0]) == MAX_LINE and lines[0].endswith(" tail")  # its end is kept


def test_a_read_cap_keeps_the_end_and_says_the_head_was_skipped(tmp_path):
    path = tmp_path / "rank-3.log"
    path.write_text(_training_log(3, 20000))
    source = TextLines(str(path), tail=256 * 1024)
    job, findings = parse_job_logs({"rank-3.log": source})
    assert job["timed_out_ranks"] == [3]
    (skipped,) = [f for f in findings if f["kind"] == "capture_truncated"]
    assert skipped["severity"] == "warning" and "were skipped" in skipped["message"]
    assert source.skipped == os.path.getsize(str(path)) - 256 * 1024
    inputs = describe_inputs({}, {"rank-3.log": source})
    assert inputs["job_logs"]["read"] == [{"name": "rank-3.log", "lines": source.lines}]
    assert 0 < source.lines < 20000 and inputs["job_logs"]["problems"] == source.problems


def test_streamed_lines_are_counted_for_the_inputs(tmp_path):
    text = _training_log(0, 50)
    path = tmp_path / "rank-0.log"
    path.write_text(text)
    source = TextLines(str(path))
    parse_job_logs({"rank-0.log": source})
    assert describe_inputs({}, {"rank-0.log": source}) == describe_inputs({}, {"rank-0.log": text})


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-8-sig"])
def test_utf16_and_bom_logs_read_as_their_text(tmp_path, encoding):
    text = _training_log(1, 30)
    path = tmp_path / "rank-1.log"
    path.write_bytes(codecs.encode(text, encoding))
    assert list(TextLines(str(path))) == text.split("\n")[:-1]
    assert parse_job_logs({"rank-1.log": TextLines(str(path))}) == parse_job_logs({"rank-1.log": text})


def test_crlf_nul_and_bad_utf8_as_before(tmp_path):
    raw = (b"\x00\x00junk \xff\xfe\xc3 line\r\n" + _training_log(2, 10).replace("\n", "\r\n").encode()
           + b"tail without newline \xe2\x82")
    path = tmp_path / "rank-2.log"
    path.write_bytes(raw)
    streamed = parse_job_logs({"rank-2.log": TextLines(str(path))})
    assert streamed == parse_job_logs({"rank-2.log": raw.decode("utf-8", "replace")})
    assert streamed[0]["timed_out_ranks"] == [2]
    lines = list(TextLines(str(path)))
    assert lines[0] == "\x00\x00junk \ufffd\ufffd\ufffd line\r" and lines[-1] == "tail without newline \ufffd"


def test_gzip_log_with_a_read_cap(tmp_path):
    text = _training_log(1, 5000)
    path = tmp_path / "rank-1.log.gz"
    path.write_bytes(gzip.compress(text.encode()))
    source = TextLines(str(path), tail=64 * 1024)
    job, findings = parse_job_logs({"rank-1.log": source})
    assert job["timed_out_ranks"] == [1] and source.skipped == len(text) - 64 * 1024
    assert [f["kind"] for f in findings if f["source"] == "rank-1.log"] == ["capture_truncated"]


def test_a_fifo_is_refused_without_a_hang(tmp_path):
    path = str(tmp_path / "slurm-1.out")
    os.mkfifo(path)
    source = TextLines(path)
    job, findings = parse_job_logs({"slurm-1.out": source, "rank-0.log": _training_log(0, 3)})
    assert job["timed_out_ranks"] == [0] and source.lines == 0
    (bad,) = [f for f in findings if f["source"] == "slurm-1.out"]
    assert bad["kind"] == "capture_unreadable" and "not a regular file" in bad["message"]


def test_any_iterable_of_lines_is_a_source():
    text = _training_log(5, 20)
    lines = (line + "\n" for line in text.split("\n"))  # as a file object gives them: with their \n
    assert parse_job_logs({"rank-5.log": lines}) == parse_job_logs({"rank-5.log": text})

