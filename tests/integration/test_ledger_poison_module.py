"""The ledger's poisoned-state refusals through the real ``ansible localhost -m
gpu_runbook_ledger`` (local connection, a state dir under tmp). Nothing is mocked."""

import json
import os
import subprocess

from tests.conftest import BIN, REPO, ansible_env, run_module


def ledger(tmp_path, **args):
    args.setdefault("state_dir", str(tmp_path / "state"))
    return run_module(tmp_path, "gpu_runbook_ledger", args, host="localhost")


def test_documented_clear_command_removes_a_dangling_lock_link_and_audits_it(tmp_path):
    sd = tmp_path / "state"
    sd.mkdir(mode=0o700)
    os.symlink(str(tmp_path / "gone"), str(sd / "lock.json"))
    refused, proc = ledger(tmp_path, state="locked", incident="INC-1")
    assert proc.returncode != 0 and "symlink" in refused["msg"] and "state=absent force=true" in refused["msg"]
    assert "recursion" not in refused["msg"]
    # the documented command, key=value as an operator types it
    proc = subprocess.run([os.path.join(BIN, "ansible"), "localhost", "-m", "gpu_runbook_ledger",
                           "-a", "state=absent force=true state_dir=%s" % sd],
                          cwd=REPO, env=ansible_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "lock cleared" in proc.stdout, proc.stdout + proc.stderr
    assert not os.path.lexists(str(sd / "lock.json")) and not (tmp_path / "gone").exists()
    with open(str(sd / "audit.jsonl")) as fh:
        audit = [json.loads(line) for line in fh]
    assert "force-cleared" in audit[-1]["message"] and "symlink" in audit[-1]["message"]
    again, proc = ledger(tmp_path, state="locked", incident="INC-1")
    assert proc.returncode == 0 and again["changed"]


def test_a_fifo_lock_and_a_fifo_history_never_hang(tmp_path):
    sd = tmp_path / "state"
    sd.mkdir(mode=0o700)
    os.mkfifo(str(sd / "history.jsonl"))
    res, proc = ledger(tmp_path, action="decide", items=[{"host": "n1", "serial": "1", "proposed_rung": "gpu_reset"}])
    assert proc.returncode != 0 and "is a FIFO" in res["msg"] and res["error"] == "unsafe"
    os.mkfifo(str(sd / "lock.json"))
    cleared, proc = ledger(tmp_path, state="absent", force=True)
    assert proc.returncode == 0 and cleared["changed"] and not os.path.lexists(str(sd / "lock.json"))


def test_a_world_writable_state_dir_is_refused_naming_it(tmp_path):
    sd = tmp_path / "state"
    sd.mkdir()
    sd.chmod(0o777)
    res, proc = ledger(tmp_path, state="locked", incident="INC-1")
    assert proc.returncode != 0 and str(sd) in res["msg"] and "mode 0777" in res["msg"]
    assert "chmod 0700" in res["msg"] and not (sd / "lock.json").exists()


def test_future_records_refused_and_history_read_skips_torn_lines(tmp_path):
    bad, proc = ledger(tmp_path, action="record", entries=[
        {"type": "fault", "host": "n1", "serial": "1650", "xid": 79, "when": "2099-01-01T00:00:00Z"}])
    assert proc.returncode != 0 and "future" in bad["msg"] and not (tmp_path / "state" / "history.jsonl").exists()
    ok, proc = ledger(tmp_path, action="record", incident="INC-1", entries=[
        {"type": "remedy", "host": "n1", "pci": "0000:3b:00.0", "rung": "gpu_reset", "result": "failed"}])
    assert proc.returncode == 0 and ok["written"] == 1
    with open(str(tmp_path / "state" / "history.jsonl"), "a") as fh:
        fh.write('{"type": "remedy", "host": "n1", "inc')  # torn: a short write on a full disk
    ok, proc = ledger(tmp_path, action="record", incident="INC-1", entries=[
        {"type": "remedy", "host": "n1.cluster.local", "pci": "0000:3b:00.0", "rung": "gpu_reset", "result": "ok"}])
    assert proc.returncode == 0
    mine, proc = ledger(tmp_path, action="history", incident="INC-1", hosts=["n1"])
    assert proc.returncode == 0 and [e["result"] for e in mine["history"]] == ["failed", "ok"]
    assert any("not JSON, skipped" in w for w in mine["warnings_lines"])
