"""diagnose.yml (real ansible-playbook, the demo inventory, run as root) against a report
directory and a job-log directory someone else prepared: a report.md linked to a file outside,
a private directory, a FIFO, /dev/zero and /etc/shadow posing as job logs."""

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile

import pytest
import yaml

from tests.conftest import run_playbook

JOB_LOG = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                       "fixtures", "joblog", "epoch35-hang-combined")


def _diagnose(*extra):
    return run_playbook(["playbooks/diagnose.yml", "-i", "inventory-examples/demo", "-l", "gpu-r3-n01"] + list(extra),
                        timeout=300)


def test_a_linked_report_file_is_refused_and_its_target_untouched(tmp_path):
    outside = tmp_path / "authorized_keys"
    outside.write_text("ssh-ed25519 AAAA root's key\n")
    report = tmp_path / "report"
    report.mkdir()
    os.symlink(outside, report / "report.md")
    proc = _diagnose("-e", "report_dir=%s" % report)
    assert proc.returncode != 0
    assert outside.read_text() == "ssh-ed25519 AAAA root's key\n"
    assert os.path.islink(report / "report.md")
    assert proc.stdout.count("FAILED!") == 1, proc.stdout[-3000:]
    failure = proc.stdout.split("FAILED! =>", 1)[1].split("\n\n", 1)[0]  # the YAML callback's block
    assert yaml.safe_load(failure)["msg"] == (
        "cannot write reports to %s: report file %s is a symlink: refusing to write through it"
        % (report, report / "report.md"))
    assert "Traceback" not in proc.stdout + proc.stderr


def test_report_files_are_no_wider_than_their_directory(tmp_path):
    report = tmp_path / "report"
    report.mkdir(mode=0o700)
    os.chmod(report, 0o700)
    proc = _diagnose("-e", "report_dir=%s" % report)
    assert proc.returncode == 0, proc.stdout[-3000:]
    modes = {name: stat.S_IMODE(os.stat(report / name).st_mode) for name in sorted(os.listdir(report))}
    assert modes == {"report.html": 0o600, "report.json": 0o600, "report.md": 0o600}


@pytest.fixture
def hostile_job_dir():
    """Job logs as a user (nobody) left them: one real log, and the rest traps."""
    path = tempfile.mkdtemp(prefix="gpu-runbook-joblogs-")
    os.chmod(path, 0o755)
    shutil.copy(os.path.join(JOB_LOG, sorted(os.listdir(JOB_LOG))[0]), os.path.join(path, "slurm-4242.out"))
    os.mkfifo(os.path.join(path, "slurm-4242.err"))
    os.symlink("/dev/zero", os.path.join(path, "rank-0.log"))
    os.symlink("/etc/shadow", os.path.join(path, "rank-1.log"))
    for name in os.listdir(path):
        os.lchown(os.path.join(path, name), 65534, 65534)
    yield path
    shutil.rmtree(path)


@pytest.mark.skipif(os.geteuid() != 0, reason="the module must run as root to be tempted by /etc/shadow")
def test_hostile_job_logs_are_skipped_with_why(tmp_path, hostile_job_dir):
    report = tmp_path / "report"
    proc = _diagnose("-e", "job_log_dir=%s" % hostile_job_dir, "-e", "report_dir=%s" % report)
    assert proc.returncode == 0, proc.stdout[-3000:]
    rep = json.loads((report / "report.json").read_text())
    logs = rep["inputs"]["job_logs"]
    assert [r["name"] for r in logs["read"]] == ["slurm-4242.out"]
    problems = sorted(re.sub(r"^\S+/", "", p) for p in logs["problems"])
    assert problems == ["rank-0.log: skipped: a character device, not a regular file",
                        "rank-1.log: skipped: uid 65534 may not read /etc/shadow",
                        "slurm-4242.err: skipped: a FIFO, not a regular file"]
    with open("/etc/shadow") as fh:
        secret = fh.read().split(":", 2)[1]
    every_report = "".join((report / n).read_text() for n in os.listdir(report))
    assert "root:" + secret not in every_report


def _report_module(args):
    """gpu_runbook_report alone, through the real `ansible` ad-hoc command on localhost."""
    from tests.conftest import BIN, REPO, ansible_env
    proc = subprocess.run([os.path.join(BIN, "ansible"), "localhost", "-c", "local", "-i", "localhost,", "-o",
                           "-m", "gpu_runbook_report", "-a", json.dumps(args),
                           "-e", "ansible_python_interpreter=%s" % sys.executable],
                          cwd=REPO, env=ansible_env(), capture_output=True, text=True, timeout=120)
    assert " | SUCCESS => " in proc.stdout, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(proc.stdout.split(" | SUCCESS => ", 1)[1])


@pytest.mark.skipif(os.geteuid() != 0, reason="the module must run as root to be tempted by /etc/shadow")
def test_slurm_stdout_is_read_with_the_job_users_rights(hostile_job_dir):
    shadow = os.path.join(hostile_job_dir, "rank-1.log")  # nobody's link to /etc/shadow
    fifo = os.path.join(hostile_job_dir, "slurm-4242.err")
    own = os.path.join(hostile_job_dir, "slurm-4242.out")  # nobody's own file, private to nobody
    os.chown(own, 65534, 65534)
    os.chmod(own, 0o600)
    job = {"job_id": "4242", "user": "nobody(65534)", "stdout": own, "stderr": fifo}
    result = _report_module({"results": {}, "job": job, "job_log_files": [own, fifo, shadow]})
    logs = result["analysis"]["inputs"]["job_logs"]
    assert [r["name"] for r in logs["read"]] == ["slurm-4242.out"]
    assert logs["problems"] == ["%s: skipped: a FIFO, not a regular file" % fifo,
                                "%s: skipped: uid 65534 may not read /etc/shadow" % shadow]
    # a job of another user does not get nobody's private file read for it
    job["user"] = "1001"
    logs = _report_module({"results": {}, "job": job, "job_log_files": [own]})["analysis"]["inputs"]["job_logs"]
    assert logs["read"] == [] and logs["problems"] == ["%s: skipped: uid 1001 may not read %s" % (own, own)]
