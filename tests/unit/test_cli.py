"""gpu-runbook analyze: the offline CLI on captured files (same engine as the module)."""

import json
import os
import re
import subprocess
import sys

import pytest

from gpu_runbook.cli import main
from tests.conftest import DEMO

CAPS = os.path.join(os.path.dirname(DEMO), "demo-captures", "nodes")


def run_cli(capsys, *args):
    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


def test_json_schema_and_exit_status_critical(capsys):
    rc, out, _ = run_cli(capsys, "analyze", os.path.join(CAPS, "gpu-r3-n03"), "--format", "json", "--expected-gpus", "8")
    doc = json.loads(out)
    assert rc == 2
    assert doc["schema"] == "gpu-runbook/analysis/v1"
    assert doc["job"] is None
    (host,) = doc["hosts"]
    assert host["host"] == "gpu-r3-n03"  # the hostname seen in the journal lines
    assert set(host) - {"confidence", "confidence_basis", "confidence_reason"} == {
        "host", "verdict", "severity", "rung", "findings"}
    assert host["verdict"] == "gpu_hardware" and host["severity"] == "critical"
    f = next(f for f in host["findings"] if f.get("xid") == 79)
    assert set(f) >= {"category", "severity", "kind", "xid", "gpu", "ib", "rank", "source", "evidence", "message", "action"}
    assert f["gpu"]["pci"] == "0000:75:00.0"
    assert f["source"].startswith("kern.log:")
    line_no = int(f["source"].split(":")[1])
    with open(os.path.join(CAPS, "gpu-r3-n03", "kern.log")) as fh:
        assert fh.read().splitlines()[line_no - 1] == f["evidence"]


def test_healthy_host_exits_zero(capsys):
    rc, out, _ = run_cli(capsys, "analyze", os.path.join(CAPS, "gpu-r3-n01"), "--format", "json", "--expected-gpus", "8")
    assert rc == 0
    assert json.loads(out)["hosts"][0]["verdict"] == "healthy"


def test_directory_of_host_directories_gives_one_host_each(capsys):
    rc, out, _ = run_cli(capsys, "analyze", CAPS, "--format", "json", "--expected-gpus", "8")
    hosts = {h["host"]: h["verdict"] for h in json.loads(out)["hosts"]}
    assert len(hosts) == 8 and rc == 2
    assert hosts["gpu-r3-n05"] == "ib_network"


def test_single_file_path(capsys):
    rc, out, _ = run_cli(capsys, "analyze", os.path.join(CAPS, "gpu-r3-n06", "kern.log"), "--format", "json")
    host = json.loads(out)["hosts"][0]
    assert {f.get("xid") for f in host["findings"]} >= {48, 63}
    assert rc == 2


def test_text_report_in_korean(capsys):
    rc, out, _ = run_cli(capsys, "analyze", os.path.join(CAPS, "gpu-r3-n03"), "--lang", "ko", "--expected-gpus", "8")
    assert rc == 2
    assert "GPU 하드웨어" in out and "심각" in out
    assert "gpu-r3-n03" in out


def test_since_window_drops_older_events(capsys):
    rc, out, _ = run_cli(capsys, "analyze", os.path.join(CAPS, "gpu-r3-n03", "kern.log"), "--format", "json",
                         "--since", "2026-12-02T08:00:00+00:00")
    host = json.loads(out)["hosts"][0]
    assert not any(f.get("xid") == 79 for f in host["findings"])
    assert rc == 0


@pytest.mark.parametrize("args,needle", [
    (["analyze", "/nonexistent/path"], "no such file or directory"),
    (["analyze"], "arguments"),
    (["frobnicate"], "invalid choice"),
    (["analyze", "--format", "xml", "x"], "invalid choice"),
])
def test_unusable_arguments_exit_3_with_one_line(capsys, args, needle):
    rc, out, err = run_cli(capsys, *args)
    assert rc == 3
    assert needle in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_unrecognisable_directory_exits_3(capsys, tmp_path):
    (tmp_path / "notes.md").write_text("hello\n")
    rc, _, err = run_cli(capsys, "analyze", str(tmp_path))
    assert rc == 3 and "notes.md: nothing in it was recognised" in err


def test_garbage_capture_never_tracebacks(capsys, tmp_path):
    d = tmp_path / "node9"
    d.mkdir()
    (d / "nvidia-smi-q.txt").write_bytes(os.urandom(4096))
    (d / "kern.log").write_bytes(b"\x00\xff" * 1000 + b"\nNVRM: Xid (PCI:0000:zz:00): notanumber\n")
    (d / "ibstat.txt").write_text("CA 'mlx5_0'\n\tPort 1:\n\t\tState: \n")
    rc, out, err = run_cli(capsys, "analyze", str(d), "--format", "json")
    assert rc in (0, 1, 2)
    assert "Traceback" not in err
    assert json.loads(out)["hosts"][0]["host"] == "node9"


def test_installed_console_script_runs():
    exe = os.path.join(os.path.dirname(sys.executable), "gpu-runbook")
    proc = subprocess.run([exe, "analyze", os.path.join(CAPS, "gpu-r3-n05"), "--format", "json"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode in (1, 2), proc.stderr
    assert json.loads(proc.stdout)["hosts"][0]["verdict"] == "ib_network"


def test_job_logs_fill_the_job_section(capsys):
    job_dir = os.path.join(os.path.dirname(CAPS), "..", "..", "tests", "fixtures", "joblog", "epoch35-hang-combined")
    rc, out, _ = run_cli(capsys, "analyze", job_dir, "--format", "json")
    doc = json.loads(out)
    job = doc["job"]
    assert doc["hosts"] == []
    assert job["culprit_ranks"] == [11] and job["culprit_hosts"] == ["gpu-r3-n02"]
    assert len(job["timed_out_ranks"]) == 31
    assert job["collective"] == {"op": "ALLREDUCE", "seq": 88341}
    assert job["failed_at"]["epoch"] == 35 and abs(job["failed_at"]["progress"] - 0.64) < 0.01
    assert job["rank_map"]["11"] == {"host": "gpu-r3-n02", "gpu_pci": "0000:5d:00.0", "local_rank": 3}
    assert rc == 2


def test_gzipped_bug_report_is_split_and_analysed(capsys, tmp_path):
    import gzip
    import glob
    src_dir = os.path.join(os.path.dirname(__file__), "..", "fixtures", "bugreport", "synthetic-2025-h100-ib")
    (src,) = [p for p in glob.glob(os.path.join(src_dir, "*")) if not p.endswith(".json")]
    with open(src, "rb") as fh, gzip.open(tmp_path / "nvidia-bug-report.log.gz", "wb") as out:
        out.write(fh.read())
    rc, out, err = run_cli(capsys, "analyze", str(tmp_path / "nvidia-bug-report.log.gz"), "--format", "json", "--facts")
    assert "Traceback" not in err
    host = json.loads(out)["hosts"][0]
    assert set(host["facts"]) >= {"gpu", "kernel_log"}  # both sections found inside the report
    assert host["facts"]["gpu"]["count"] >= 1


def test_single_file_of_several_hosts_gives_one_result_each(capsys, tmp_path):
    # pdsh output of two nodes in one file given on the command line: one result per host,
    # each with its own Xid; the directory's name is not a host (every line names one)
    log = tmp_path / "kern.log"
    log.write_text("n1: [ 11.0] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus.\n"
                   "n2: [ 12.0] NVRM: Xid (PCI:0000:5e:00): 48, pid=1, name=python, An uncorrectable double bit "
                   "error (DBE) has been detected on GPU in the framebuffer.\n")
    rc, out, _ = run_cli(capsys, "analyze", str(log), "--format", "json")
    hosts = {h["host"]: {f.get("xid") for f in h["findings"]} - {None} for h in json.loads(out)["hosts"]}
    assert hosts == {"n1": {79}, "n2": {48}} and rc == 2


# ---------------------------------------------------------------- help, bad arguments (issue 10)

def _help(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["analyze", "--help"])
    out, _ = capsys.readouterr()
    assert exc.value.code == 0
    return " ".join(out.split())  # argparse wraps lines; words matter


def test_help_documents_every_exit_status_the_cli_returns(capsys):
    from gpu_runbook.analyze import exit_status
    from gpu_runbook.cli import EXIT_OUTPUT_FAILED, EXIT_UNUSABLE
    text = _help(capsys)
    documented = {int(code) for code in re.findall(r"(?:exit status: | )([0-9]) (?=[a-z])", text.split("exit status:")[1])}
    returned = {exit_status([{"severity": s}]) for s in ("ok", "info", "warning", "critical")} | {EXIT_UNUSABLE,
                                                                                                   EXIT_OUTPUT_FAILED}
    assert documented == returned == {0, 1, 2, 3, 4}
    assert "0 nothing at warning or above" in text and "1 warnings" in text and "2 critical" in text
    assert "3 unusable input" in text


def test_help_says_files_are_read_by_content_and_a_name_decides_nothing(capsys, tmp_path):
    text = _help(capsys)
    assert "read by its content, never by its name" in text and "- is standard input" in text
    # the same text under the names that used to make a job log, and under any other: the same
    plain = "step 1200 loss 2.31\n"
    seen = set()
    for name in ("nccl.log", "train.out", "rank-7.log", "slurm-7.log", "notes.txt", "x", "train.log.gz"):
        d = tmp_path / name.replace(".", "_")
        d.mkdir()
        if name.endswith(".gz"):
            import gzip
            with gzip.open(d / name, "wt") as fh:
                fh.write(plain)
        else:
            (d / name).write_text(plain)
        rc, out, err = run_cli(capsys, "analyze", str(d), "--format", "json")
        job = json.loads(out)["job"]
        assert job is not None, (name, err)
        seen.add((rc, job["verdict"]))
    # a training log that just stops: read, and not called healthy (no end, no failure)
    assert seen == {(1, "unknown")}
    # text no reader knows is no job under any name
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "nccl.log").write_text("hello there\n")
    rc, _, err = run_cli(capsys, "analyze", str(tmp_path / "other"))
    assert rc == 3 and "nccl.log: nothing in it was recognised" in err


@pytest.mark.parametrize("line", [
    "[rank3]:n1:100:200 [3] NCCL WARN NET/IB : Got completion with error 12",
    "[rank3]:[E1202 09:40:12 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout",
    "Epoch 35:  64%|######4   | 640/1000 [07:09<03:21,  1.79it/s]",
])
def test_job_lines_are_a_job_under_any_name(capsys, tmp_path, line):
    (tmp_path / "whatever.txt").write_text(line + "\n")
    rc, out, err = run_cli(capsys, "analyze", str(tmp_path), "--format", "json")
    assert json.loads(out)["job"] is not None, err


@pytest.mark.parametrize("args,needle", [
    (["--since", "yesterday"], "--since: not an ISO 8601 time: 'yesterday'"),
    (["--expected-gpus", "-1"], "--expected-gpus: must be greater than 0: '-1'"),
    (["--expected-gpus", "0"], "--expected-gpus: must be greater than 0: '0'"),
    (["--expected-gpus", "2.5"], "--expected-gpus: not a number: '2.5'"),
    (["--expected-ib-rate", "-400"], "--expected-ib-rate: must be greater than 0: '-400'"),
    (["--expected-ib-rate", "nan"], "--expected-ib-rate: not a number: 'nan'"),
    (["--expected-ib-rate", "inf"], "--expected-ib-rate: not a number: 'inf'"),
    (["--tz", "Mars/Base"], "--tz: unknown time zone 'Mars/Base'"),
    (["--tz", "+25:00"], "--tz: not a UTC offset"),
    (["--lang", "fr"], "--lang: invalid choice: 'fr'"),
])
def test_bad_arguments_are_refused_before_any_work_with_one_line(capsys, args, needle):
    rc, out, err = run_cli(capsys, "analyze", CAPS, *args)
    assert rc == 3
    assert out == ""  # nothing analysed, nothing printed
    assert err.strip().splitlines() == [err.strip()] and needle in err, err
    assert "Traceback" not in err and "usage:" not in err


@pytest.mark.parametrize("order", ["missing_last", "missing_first"])
def test_a_missing_path_is_refused_before_the_others_are_read(capsys, tmp_path, order):
    missing = str(tmp_path / "no-such-capture")
    paths = [CAPS, missing] if order == "missing_last" else [missing, CAPS]
    rc, out, err = run_cli(capsys, "analyze", *paths)
    assert rc == 3 and out == ""
    assert err.strip() == "gpu-runbook: %s: no such file or directory" % missing


def test_console_script_help_shows_exit_status_and_job_logs():
    exe = os.path.join(os.path.dirname(sys.executable), "gpu-runbook")
    proc = subprocess.run([exe, "analyze", "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stderr == ""
    assert "exit status:" in proc.stdout and "job logs" in proc.stdout and "--since TIME" in proc.stdout


def test_job_log_workers_one_on_two_cpus_unless_told(monkeypatch, tmp_path):
    """The CLI and the report step read job logs with one worker where they may use two CPUs or
    more (the parse starts it only for 32 MB of logs: joblog.parallel.MIN_BYTES), not under a
    cgroup quota of fewer; $GPU_RUNBOOK_JOB_LOG_WORKERS says otherwise, 0 for none."""
    from gpu_runbook.joblog import parallel  # where the CLI and the report step ask
    monkeypatch.delenv("GPU_RUNBOOK_JOB_LOG_WORKERS", raising=False)
    cpu_max, quota, period = tmp_path / "cpu.max", tmp_path / "quota", tmp_path / "period"
    monkeypatch.setattr(parallel, "CPU_MAX", str(cpu_max))
    monkeypatch.setattr(parallel, "CFS_QUOTA", str(quota))
    monkeypatch.setattr(parallel, "CFS_PERIOD", str(period))
    monkeypatch.setattr(parallel.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    assert parallel.job_log_workers() == 1  # no cgroup files: the affinity
    for text, workers in (("max 100000\n", 1), ("150000 100000\n", 0), ("200000 100000\n", 1), ("garbage", 1)):
        cpu_max.write_text(text)
        assert parallel.job_log_workers() == workers, text
    cpu_max.unlink()
    quota.write_text("50000\n")
    period.write_text("100000\n")
    assert parallel.usable_cpus() == 0.5 and parallel.job_log_workers() == 0  # cgroup v1
    quota.write_text("-1\n")  # v1: no quota
    assert parallel.job_log_workers() == 1
    monkeypatch.setattr(parallel.os, "sched_getaffinity", lambda pid: {3}, raising=False)
    assert parallel.job_log_workers() == 0
    for value, workers in (("0", 0), ("2", 2), (" 1 ", 1)):
        monkeypatch.setenv("GPU_RUNBOOK_JOB_LOG_WORKERS", value)
        assert parallel.job_log_workers() == workers


# Page faults of one parse of ``path`` in a fresh process: argv[2] "keep" calls keep_freed_memory first.
_FAULTS = """
import hashlib, json, resource, sys
from gpu_runbook.joblog import parse_job_logs
from gpu_runbook.textio import TextLines, keep_freed_memory
kept = keep_freed_memory() if sys.argv[2] == "keep" else None
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
job, findings = parse_job_logs({"rank-0.log": TextLines(sys.argv[1])}, workers=0)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before, kept,
      hashlib.sha1(json.dumps(job, sort_keys=True, default=str).encode()).hexdigest())
"""


def _rank_log(path, mb):
    """A rank log of ``mb`` MB: NCCL INFO lines and Megatron iteration lines."""
    line = ("gpu-r3-n01:41000:41177 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA\n"
            " [2026-12-02 14:00:01] iteration %8d/ 500000 | consumed samples: 1024 | lm loss: 3.1E+00 |\n")
    with open(path, "w") as fh:
        for step in range(int(mb * 1e6 / len(line % 0))):
            fh.write(line % step)
    return os.path.getsize(path)


def _faults(path, mode):
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(__file__), "..", "..", "module_utils"))
    out = subprocess.run([sys.executable, "-c", _FAULTS, str(path), mode], capture_output=True, text=True,
                         timeout=300, env=env, check=True).stdout.split()
    return int(out[0]), out[1], out[2]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_keep_freed_memory_ends_the_page_faults_of_reading_logs_block_by_block(tmp_path):
    """With glibc's defaults, every ~256 KiB block of a log is a fresh bytes, str and lines,
    handed back to the kernel when freed and faulted in again for the next block: about two
    page faults per page read. keep_freed_memory keeps that memory for the next block."""
    path = tmp_path / "rank-0.log"
    pages = _rank_log(path, 24) // 4096
    base, _, job = _faults(path, "base")
    kept_faults, kept, kept_job = _faults(path, "keep")
    assert kept == "True" and kept_job == job  # glibc took it; the same parse
    assert base > pages / 2, (base, pages)  # what the defaults cost (else this test shows nothing)
    assert kept_faults < base / 5, (kept_faults, base, pages)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_the_cli_reads_logs_without_a_page_fault_per_block(tmp_path):
    """`gpu-runbook analyze` keeps freed memory: its page faults beyond those of a run on a tiny
    log are a small share of the pages it read (the defaults take about two per page)."""
    big, small = tmp_path / "big", tmp_path / "small"
    big.mkdir()
    small.mkdir()
    pages = _rank_log(big / "rank-0.log", 24) // 4096
    _rank_log(small / "rank-0.log", 0.01)
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(__file__), "..", "..", "module_utils"),
               GPU_RUNBOOK_JOB_LOG_WORKERS="0")

    def faults(d):
        proc = subprocess.Popen([sys.executable, "-c", "import sys; from gpu_runbook.cli import main; sys.exit(main())",
                                 "analyze", str(d), "--format", "json"], stdout=subprocess.PIPE, env=env)
        out = proc.stdout.read()
        _pid, _status, ru = os.wait4(proc.pid, 0)
        assert json.loads(out)["job"]["rank_map"], out[:500]
        return ru.ru_minflt

    assert faults(big) - faults(small) < pages / 4, pages


XID79_BARE = "[  100.1] NVRM: Xid (PCI:0000:75:00): 79, pid=1234, GPU has fallen off the bus.\n"


def test_a_bare_file_is_the_unnamed_host_not_its_directory_and_the_cli_says_how_to_name_it(capsys, tmp_path):
    caps = tmp_path / "caps"
    caps.mkdir()
    (caps / "dmesg.txt").write_text(XID79_BARE)
    rc, out, err = run_cli(capsys, "analyze", str(caps / "dmesg.txt"), "--format", "json")
    hosts = [h["host"] for h in json.loads(out)["hosts"]]
    assert hosts == ["unnamed host"] and rc == 2
    assert "--host NAME" in err and "'unnamed host'" in err
    rc, out, err = run_cli(capsys, "analyze", str(caps / "dmesg.txt"), "--host", "gpu-b-12", "--format", "json")
    assert [h["host"] for h in json.loads(out)["hosts"]] == ["gpu-b-12"] and "--host" not in err
    # the directory given is the host's: its name is the user's own choice
    rc, out, _ = run_cli(capsys, "analyze", str(caps), "--format", "json")
    assert [h["host"] for h in json.loads(out)["hosts"]] == ["caps"]


def test_a_file_whose_lines_name_the_host_keeps_it_whatever_host_says(capsys, tmp_path):
    (tmp_path / "syslog").write_text("Dec  5 06:11:17 gpu-n01 kernel: NVRM: Xid (PCI:0000:75:00): 79, pid=1234, "
                                     "GPU has fallen off the bus.\n")
    rc, out, err = run_cli(capsys, "analyze", str(tmp_path / "syslog"), "--host", "gpu-n99", "--format", "json")
    assert [h["host"] for h in json.loads(out)["hosts"]] == ["gpu-n01"] and not err


@pytest.mark.parametrize("name", ["bad host", "a;b", "gpu[01-02]", "../x", ""])
def test_a_host_name_slurm_could_not_hold_is_refused_with_exit_3(capsys, tmp_path, name):
    (tmp_path / "dmesg.txt").write_text(XID79_BARE)
    rc, out, err = run_cli(capsys, "analyze", str(tmp_path / "dmesg.txt"), "--host", name)
    assert rc == 3 and not out and err.startswith("gpu-runbook: argument --host:")


def test_a_kernel_line_with_its_host_field_cut_out_is_the_kernels_not_a_ranks_cuda_error(capsys, tmp_path):
    (tmp_path / "messages").write_text("Dec  5 06:11:17 kernel: NVRM: Xid (PCI:0000:75:00): 79, pid=1234, "
                                       "GPU has fallen off the bus.\n")
    rc, out, _ = run_cli(capsys, "analyze", str(tmp_path / "messages"), "--host", "gpu-n01", "--format", "json")
    doc = json.loads(out)
    assert [(h["host"], h["verdict"]) for h in doc["hosts"]] == [("gpu-n01", "gpu_hardware")]
    assert not doc.get("job"), doc.get("job")  # no rank of any job said anything


def test_a_culprits_host_without_captures_is_said_in_the_clis_words_not_the_playbooks(capsys, tmp_path):
    # the CLI has no inventory and no --limit: what is missing is that host's captures
    n07 = tmp_path / "gpu-r3-n07"
    n07.mkdir()
    for name in os.listdir(os.path.join(CAPS, "gpu-r3-n07")):
        with open(os.path.join(CAPS, "gpu-r3-n07", name), "rb") as src:
            (n07 / name).write_bytes(src.read())
    rc, out, _ = run_cli(capsys, "analyze", str(n07), os.path.join(os.path.dirname(CAPS), "job-4242"))
    assert "culprit: rank 18 -> gpu-r3-n03 GPU 0000:75:00.0 -> no captures given for this host" in " ".join(out.split())
    assert "--limit" not in out and "inventory" not in out
    flat = " ".join(out.split())  # the console wraps its lines
    assert "gpu-r3-n03 ran this job and hosts a culprit rank but was not checked (no captures given for it)" in flat
