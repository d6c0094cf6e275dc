"""library/gpu_runbook_ledger.py through the real ``ansible localhost -m gpu_runbook_ledger``
(local connection, a state dir under tmp). Nothing is mocked."""

import json
import os

from tests.conftest import run_module


def ledger(tmp_path, check=False, env=None, **args):
    """-> (result dict, CompletedProcess)."""
    args.setdefault("state_dir", str(tmp_path / "state"))
    return run_module(tmp_path, "gpu_runbook_ledger", args, host="localhost", check=check, env=env)


def audit_lines(tmp_path):
    with open(str(tmp_path / "state" / "audit.jsonl")) as fh:
        return [json.loads(line) for line in fh]


def test_lock_second_run_fails_naming_owner_then_force_clear_is_audited(tmp_path):
    first, proc = ledger(tmp_path, env={"AWX_JOB_ID": "4242"}, state="locked", incident="INC-1")
    assert proc.returncode == 0 and first["changed"] and first["lock"]["owner"]["job"] == "4242"
    second, proc = ledger(tmp_path, state="locked", incident="INC-2")
    assert proc.returncode != 0
    assert "AWX job 4242" in second["msg"] and "INC-1" in second["msg"] and "age" in second["msg"]
    assert second["error"] == "held" and second["stale"] is False
    # not the owner: release refused, lock kept
    refused, proc = ledger(tmp_path, state="unlocked", lock_id="someone-else")
    assert proc.returncode != 0 and "only its owner releases" in refused["msg"]
    # the documented clear, by another job
    cleared, proc = ledger(tmp_path, env={"AWX_JOB_ID": "7"}, state="absent", force=True)
    assert proc.returncode == 0 and cleared["changed"] and cleared["lock"]["id"] == first["lock"]["id"]
    assert not (tmp_path / "state" / "lock.json").exists()
    lines = audit_lines(tmp_path)
    assert [line["rung"] for line in lines] == ["lock", "lock"]
    assert "force-cleared by" in lines[1]["message"] and "AWX job 7" in lines[1]["who"]
    assert "AWX job 4242" in lines[1]["message"]
    again, proc = ledger(tmp_path, state="locked", incident="INC-2")
    assert proc.returncode == 0 and again["changed"]
    done, proc = ledger(tmp_path, state="unlocked", lock_id=again["lock"]["id"])
    assert proc.returncode == 0 and done["changed"] and not (tmp_path / "state" / "lock.json").exists()


def test_stale_lock_is_reported_not_taken(tmp_path):
    first, _ = ledger(tmp_path, state="locked", incident="INC-1", now="2024-05-10T08:00:00Z")
    late, proc = ledger(tmp_path, state="locked", incident="INC-2", now="2024-05-10T11:00:00Z")
    assert proc.returncode != 0 and late["stale"] is True and "STALE" in late["msg"]
    assert "state=absent force=true" in late["msg"]
    shown, _ = ledger(tmp_path, action="show", now="2024-05-10T11:00:00Z")
    assert shown["lock"]["id"] == first["lock"]["id"] and shown["stale"] is True


def test_check_mode_writes_nothing(tmp_path):
    res, proc = ledger(tmp_path, check=True, state="locked", incident="INC-1")
    assert proc.returncode == 0 and res["changed"] and not (tmp_path / "state").exists()
    res, proc = ledger(tmp_path, check=True, action="audit",
                       entries=[{"rung": "drain", "result": "ok", "host": "n1", "argv": ["scontrol", "update"]}])
    assert proc.returncode == 0 and len(res["would_write"]) == 1 and not (tmp_path / "state").exists()


def test_audit_record_and_decide(tmp_path):
    res, proc = ledger(tmp_path, action="audit", incident="INC-3", entries=[
        {"host": "n1", "rung": "gpu_reset", "argv": ["nvidia-smi", "-r", "-i", "0000:3b:00.0"], "result": "ok"},
        {"host": "n2", "rung": "ib_restart", "result": "refused", "message": "/dev/infiniband held by pid 9"}])
    assert proc.returncode == 0 and res["written"] == 2
    lines = audit_lines(tmp_path)
    assert lines[0]["argv"][1] == "-r" and lines[1]["result"] == "refused" and lines[1]["incident"] == "INC-3"
    gpu = {"serial": "1650", "pci": "0000:3b:00.0"}
    entries = [{"type": "fault", "host": "n1", "gpu": gpu, "xid": 48, "when": "2024-05-0%dT00:00:00Z" % d}
               for d in (4, 7, 9)]
    entries.append({"type": "remedy", "host": "n2", "port": "mlx5_1/1", "rung": "ib_restart", "result": "ok",
                    "when": "2024-05-08T00:00:00Z"})
    entries.append(dict(entries[-1], when="2024-05-09T00:00:00Z"))
    res, proc = ledger(tmp_path, action="record", entries=entries)
    assert proc.returncode == 0 and res["written"] == 5
    res, proc = ledger(tmp_path, action="decide", now="2024-05-10T00:00:00Z", items=[
        {"host": "n1", "gpu": gpu, "proposed_rung": "gpu_reset"},
        {"host": "n1", "gpu": {"serial": "2000"}, "proposed_rung": "gpu_reset"},
        {"host": "n2", "port": "mlx5_1/1", "proposed_rung": "ib_restart"}])
    assert proc.returncode == 0, res
    got = [(d["rung"], d["escalated"]) for d in res["decisions"]]
    assert got == [("rma", True), ("gpu_reset", False), ("drain", True)]
    assert "faulted 3 times" in res["decisions"][0]["reason"] and "cable" in res["decisions"][2]["reason"]
    # bad input: a clear failure, no traceback
    res, proc = ledger(tmp_path, action="decide", items=[{"host": "n1", "proposed_rung": "gpu_reset"}])
    assert proc.returncode != 0 and "serial, UUID or PCI" in res["msg"]


def test_unwritable_state_dir_fails_saying_no_disruptive_steps(tmp_path):
    sd = tmp_path / "state"
    sd.mkdir()
    os.symlink("/dev/full", str(sd / "audit.jsonl"))
    res, proc = ledger(tmp_path, state="locked", incident="INC-1")
    assert proc.returncode != 0 and "must not run disruptive steps" in res["msg"]
    assert not (sd / "lock.json").exists()  # no lock left behind without its audit line


def test_second_run_of_an_incident_is_already_done(tmp_path):
    gpu = {"serial": "1650", "pci": "0000:3b:00.0"}
    ask = [{"host": "n1", "gpu": gpu, "proposed_rung": "gpu_reset"},
           {"host": "n1", "gpu": gpu, "proposed_rung": "gpu_reset", "incident": "INC-OLD"},
           {"host": "n2", "port": "mlx5_1/1", "proposed_rung": "ib_restart"}]
    first, proc = ledger(tmp_path, action="decide", incident="INC-9", items=ask)
    assert proc.returncode == 0, first
    assert [(d["rung"], d["already_done"]) for d in first["decisions"]] == [
        ("gpu_reset", False), ("gpu_reset", False), ("ib_restart", False)]
    # the first run's rungs went through; module-level incident fills the entries in
    res, proc = ledger(tmp_path, action="record", incident="INC-9", entries=[
        {"type": "remedy", "host": "n1", "gpu": gpu, "rung": "gpu_reset", "result": "ok"},
        {"type": "remedy", "host": "n2", "rung": "ib_restart", "result": "ok"}])
    assert proc.returncode == 0 and res["written"] == 2
    again, proc = ledger(tmp_path, action="decide", incident="INC-9", items=ask)
    assert proc.returncode == 0, again
    got = [(d["rung"], d["already_done"], d["incident"]) for d in again["decisions"]]
    assert got == [("none", True, "INC-9"), ("gpu_reset", False, "INC-OLD"), ("none", True, "INC-9")]
    assert "already done for incident INC-9" in again["decisions"][0]["reason"]
    assert "(already done)" in again["msg"]
    # a dry run of decide reads the same history and answers the same
    dry, proc = ledger(tmp_path, check=True, action="decide", incident="INC-9", items=ask[:1])
    assert proc.returncode == 0 and dry["decisions"][0]["already_done"] is True


def test_resolved_gives_each_hosts_latest_verified_fix(tmp_path):
    none, proc = ledger(tmp_path, action="resolved")
    assert proc.returncode == 0 and none["resolved"] == {} and not none["changed"]
    res, proc = ledger(tmp_path, action="record", incident="INC-5", entries=[
        {"type": "remedy", "host": "gpu-r1-n03", "rung": "verify", "result": "ok", "when": "2024-05-10T08:15:00Z"},
        {"type": "remedy", "host": "gpu-r1-n03", "rung": "verify", "result": "ok",
         "when": "2024-05-10T19:30:00+09:00"},
        {"type": "remedy", "host": "gpu-r1-n03", "rung": "verify", "result": "failed",
         "when": "2024-05-10T12:00:00Z"},
        {"type": "remedy", "host": "gpu-r1-n04", "rung": "verify", "result": "ok", "when": "2024-05-09T23:00:00Z"}])
    assert proc.returncode == 0 and res["written"] == 4
    every, proc = ledger(tmp_path, action="resolved")
    assert proc.returncode == 0
    assert every["resolved"] == {"gpu-r1-n03": "2024-05-10T10:30:00+00:00", "gpu-r1-n04": "2024-05-09T23:00:00+00:00"}
    some, proc = ledger(tmp_path, action="resolved", hosts=["GPU-R1-N03", "gpu-r9-n01"])
    assert proc.returncode == 0 and some["resolved"] == {"GPU-R1-N03": "2024-05-10T10:30:00+00:00"}
    # a verify that never happened cannot be recorded by mistake as another step
    bad, proc = ledger(tmp_path, action="record", entries=[
        {"type": "remedy", "host": "n1", "rung": "verified", "result": "ok"}])
    assert proc.returncode != 0 and "verify" in bad["msg"]
