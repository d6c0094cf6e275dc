"""gpu-runbook analyze: the offline CLI on captured files (same engine as the module)."""

import json
import os
import subprocess
import sys

import pytest

from gpu_runbook.cli import main
from tests.conftest import DEMO

CAPS = os.path.join(DEMO, "captures")


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
    assert rc == 3 and "no recognisable capture" in err


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
