"""The remediation ledger: lock, audit log, per-GPU history and next_rung, on real files."""

import json
import multiprocessing
import os
import shutil
import subprocess
import sys
from datetime import datetime, timedelta, timezone

import pytest

from gpu_runbook.ledger import (LedgerError, acquire, append_lines, audit_entry, check_policy, clear, fault_entry,
                                next_rung, read_lines, read_lock, release, remedy_entry, target_of)

NOW = datetime(2024, 5, 10, 12, 0, 0, tzinfo=timezone.utc)
ME = {"user": "alice", "host": "ctl", "pid": 4711, "job": "42"}
OTHER = {"user": "bob", "host": "ctl2", "pid": 99, "job": None}
DAY = timedelta(days=1)


# ------------------------------------------------------------------------------------------ lock

def _try_lock(args):
    sd, n, barrier = args
    barrier.wait()
    try:
        lock, _ = acquire(sd, dict(ME, pid=n), "INC-%d" % n, datetime.now(timezone.utc))
        return ("ok", lock["id"])
    except LedgerError as exc:
        return (exc.kind, exc.msg)


def test_two_processes_one_lock(tmp_path):
    sd = str(tmp_path / "state")
    for _round in range(5):
        # spawn, not fork: a child forked from pytest inherits whatever earlier tests left in this
        # process (an in-process ansible-runner run left multiprocessing's state unusable: a hang)
        ctx = multiprocessing.get_context("spawn")
        with ctx.Manager() as mgr:
            barrier = mgr.Barrier(2)
            with ctx.Pool(2) as pool:
                results = pool.map(_try_lock, [(sd, 1, barrier), (sd, 2, barrier)])
        assert sorted(r[0] for r in results) == ["held", "ok"], results
        winner = next(r[1] for r in results if r[0] == "ok")
        loser = next(r[1] for r in results if r[0] == "held")
        assert read_lock(sd)["id"] == winner
        assert "alice@ctl" in loser and "AWX job 42" in loser and "age" in loser
        release(sd, winner, NOW)


def test_second_acquire_names_owner_incident_and_age(tmp_path):
    sd = str(tmp_path)
    lock, changed = acquire(sd, ME, "INC-7", NOW)
    assert changed and lock["incident"] == "INC-7"
    with pytest.raises(LedgerError) as e:
        acquire(sd, OTHER, "INC-8", NOW + timedelta(minutes=5, seconds=3))
    assert e.value.kind == "held"
    assert "alice@ctl (pid 4711, AWX job 42)" in e.value.msg and "INC-7" in e.value.msg and "5m03s" in e.value.msg
    assert read_lock(sd)["id"] == lock["id"]  # untouched


def test_same_lock_id_is_ours_already(tmp_path):
    lock, _ = acquire(str(tmp_path), ME, "INC-7", NOW)
    again, changed = acquire(str(tmp_path), ME, "INC-7", NOW, lock_id=lock["id"])
    assert not changed and again["id"] == lock["id"]


def test_stale_lock_is_reported_not_taken_over(tmp_path):
    sd = str(tmp_path)
    lock, _ = acquire(sd, ME, "INC-7", NOW)
    with pytest.raises(LedgerError) as e:
        acquire(sd, OTHER, "INC-8", NOW + timedelta(hours=3), stale_after=7200)
    assert e.value.kind == "stale" and "STALE" in e.value.msg and "state=absent force=true" in e.value.msg
    assert read_lock(sd)["id"] == lock["id"]
    # just under the limit it is held, not stale
    with pytest.raises(LedgerError) as e:
        acquire(sd, OTHER, "INC-8", NOW + timedelta(seconds=7200), stale_after=7200)
    assert e.value.kind == "held"


def test_unreadable_lock_still_blocks(tmp_path):
    (tmp_path / "lock.json").write_text("")  # a run that died between create and write
    with pytest.raises(LedgerError) as e:
        acquire(str(tmp_path), ME, "INC-1", datetime.now(timezone.utc))
    assert "unreadable" in e.value.msg


def test_release_only_by_owner(tmp_path):
    sd = str(tmp_path)
    lock, _ = acquire(sd, ME, "INC-7", NOW)
    for bad in ("not-the-id", None):
        with pytest.raises(LedgerError) as e:
            release(sd, bad, NOW)
        assert e.value.kind == "not_owner" and "alice@ctl" in e.value.msg
    assert read_lock(sd)["id"] == lock["id"]
    assert release(sd, lock["id"], NOW)["id"] == lock["id"]
    assert read_lock(sd) is None
    assert release(sd, lock["id"], NOW) is None  # nothing left: no error


def test_clear_needs_force_and_spares_a_live_local_owner(tmp_path):
    sd = str(tmp_path)
    acquire(sd, ME, "INC-7", NOW)
    with pytest.raises(LedgerError):
        clear(sd, False, NOW)
    with pytest.raises(LedgerError) as e:
        clear(sd, True, NOW + timedelta(minutes=1), this_host="ctl", pid_alive=lambda pid: True)
    assert "still runs" in e.value.msg
    # stale, or its process gone: force clears it
    assert clear(sd, True, NOW + timedelta(minutes=1), this_host="ctl", pid_alive=lambda pid: False)["owner"] == ME
    assert read_lock(sd) is None
    acquire(sd, ME, "INC-9", NOW)
    assert clear(sd, True, NOW + timedelta(hours=3), this_host="ctl", pid_alive=lambda pid: True)
    assert clear(sd, True, NOW) is None


# ----------------------------------------------------------------------------------------- audit

def test_audit_line_per_entry_valid_json(tmp_path):
    path = str(tmp_path / "s" / "audit.jsonl")
    e1 = audit_entry({"rung": "gpu_reset", "result": "ok", "host": "n1", "argv": ["nvidia-smi", "-r", "-i", "0"],
                      "message": "reset"}, "alice@ctl", NOW, incident="INC-1")
    e2 = audit_entry({"rung": "drain", "result": "refused", "host": "n2", "message": "foreign drain"},
                     "alice@ctl", NOW, check_mode=True)
    assert append_lines(path, [e1, e2]) == 2
    lines = open(path).read().splitlines()
    assert len(lines) == 2
    first = json.loads(lines[0])
    assert first["when"] == "2024-05-10T12:00:00+00:00" and first["who"] == "alice@ctl"
    assert first["argv"] == ["nvidia-smi", "-r", "-i", "0"] and first["incident"] == "INC-1"
    assert json.loads(lines[1])["check_mode"] is True
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"


@pytest.mark.parametrize("raw,word", [
    ({"rung": "warp", "result": "ok"}, "rung"),
    ({"rung": "gpu_reset", "result": "maybe"}, "result"),
    ({"rung": "gpu_reset", "result": "ok", "argv": "nvidia-smi -r"}, "argv"),
    ({"rung": "gpu_reset", "result": "ok", "when": "yesterday"}, "when"),
    ({"rung": "gpu_reset", "result": "ok", "colour": "red"}, "unknown"),
    ("gpu_reset", "mapping"),
])
def test_bad_audit_entries_are_refused_clearly(raw, word):
    with pytest.raises(LedgerError) as e:
        audit_entry(raw, "me", NOW)
    assert word in e.value.msg


def _append_many(args):
    path, tag, n = args
    long = "x" * 3000  # lines longer than a pipe buffer's atomic size still must not interleave
    for i in range(n):
        append_lines(path, [{"tag": tag, "i": i, "pad": long}])
    return n


def test_concurrent_appends_do_not_interleave(tmp_path):
    path = str(tmp_path / "audit.jsonl")
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        pool.map(_append_many, [(path, t, 200) for t in "abcd"])
    lines = open(path).read().splitlines()
    assert len(lines) == 800
    got = [json.loads(line) for line in lines]
    for t in "abcd":
        assert [g["i"] for g in got if g["tag"] == t] == list(range(200))


def test_a_link_to_dev_full_is_refused_not_written_through(tmp_path):
    os.symlink("/dev/full", str(tmp_path / "audit.jsonl"))
    with pytest.raises(LedgerError) as e:
        append_lines(str(tmp_path / "audit.jsonl"), [{"a": 1}])
    assert e.value.kind == "unsafe" and "is a symlink" in e.value.msg and "must not run disruptive" in e.value.msg


_RO_SCRIPT = r"""
import sys, json
sys.path.insert(0, %r)
from gpu_runbook.ledger import LedgerError, append_lines, acquire
from datetime import datetime, timezone
out = []
for fn in (lambda: append_lines(%r + "/audit.jsonl", [{"a": 1}]),
           lambda: acquire(%r, {"user": "u", "host": "h"}, "I", datetime.now(timezone.utc))):
    try:
        fn(); out.append("no error")
    except LedgerError as e:
        out.append(e.msg)
print(json.dumps(out))
"""


def test_read_only_state_dir_is_a_clear_error(tmp_path):
    mu = os.path.join(os.path.dirname(__file__), "..", "..", "module_utils")
    sd = tmp_path / "ro"
    sd.mkdir()
    script = _RO_SCRIPT % (os.path.abspath(mu), str(sd), str(sd))
    if os.geteuid() == 0:
        if not shutil.which("unshare"):
            pytest.skip("root without unshare: cannot make a read-only mount")
        cmd = ["unshare", "-m", "sh", "-c", 'mount -t tmpfs -o ro,mode=0700 none "$1" && exec "$2" -c "$3"', "sh",
               str(sd), sys.executable, script]
        want = "read-only file system"
    else:
        sd.chmod(0o500)
        cmd = [sys.executable, "-c", script]
        want = "permission denied"
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode and "mount" in proc.stderr:
        pytest.skip("cannot mount a read-only tmpfs here: %s" % proc.stderr.strip())
    out = json.loads(proc.stdout)
    for msg in out:
        assert want in msg and "must not run disruptive steps" in msg, out


def test_read_lines_skips_torn_lines(tmp_path):
    p = tmp_path / "history.jsonl"
    p.write_text('{"a": 1}\n{"a": 2\n[1]\n\n{"a": 3}\n')
    entries, warnings = read_lines(str(p))
    assert [e["a"] for e in entries] == [1, 3]
    assert len(warnings) == 2 and ":2:" in warnings[0] and ":3:" in warnings[1]
    assert read_lines(str(tmp_path / "none.jsonl")) == ([], [])


# --------------------------------------------------------------------------------------- history

GPU = {"host": "n1", "gpu": {"serial": "1650", "uuid": "GPU-aaaa", "pci": "00000000:3B:00.0"}}


def fault(when, xid=48, **target):
    return fault_entry(dict(target or GPU, xid=xid, when=when.isoformat()), NOW)


def tried(rung, when, result="ok", **target):
    return remedy_entry(dict(target or GPU, rung=rung, result=result, when=when.isoformat()), NOW)


def test_targets_normalize_and_need_a_host():
    t = target_of(GPU)
    assert t == {"host": "n1", "serial": "1650", "uuid": "GPU-AAAA", "pci": "0000:3b:00.0"}
    assert target_of({"host": "N1", "gpu": "0000:3B:00.0"}) == {"host": "n1", "pci": "0000:3b:00.0"}
    assert target_of({"host": "n1", "gpu": "gpu-bbbb"})["uuid"] == "GPU-BBBB"
    assert target_of({"host": "n1", "gpu": {"serial": "[N/A]", "pci": "3b:00.0"}}) == {"host": "n1", "pci": "0000:3b:00.0"}
    with pytest.raises(LedgerError):
        target_of({"gpu": "GPU-aaaa"})


def test_first_reset_goes_ahead():
    rung, reason = next_rung([], GPU, "gpu_reset", NOW)
    assert rung == "gpu_reset" and "tried 0 of 2" in reason


def test_three_faults_in_seven_days_go_to_rma():
    h = [fault(NOW - 6 * DAY), fault(NOW - DAY, xid=63), fault(NOW)]
    rung, reason = next_rung(h, GPU, "gpu_reset", NOW)
    assert rung == "rma" and "faulted 3 times" in reason and "Xid 63" in reason
    assert next_rung(h[1:], GPU, "gpu_reset", NOW)[0] == "gpu_reset"
    assert next_rung(h, GPU, "reboot", NOW)[0] == "rma"  # not another reboot either


def test_repeat_window_edges_are_inclusive():
    edge = [fault(NOW - 7 * DAY), fault(NOW - DAY), fault(NOW)]
    assert next_rung(edge, GPU, "gpu_reset", NOW)[0] == "rma"
    past = [fault(NOW - 7 * DAY - timedelta(seconds=1)), fault(NOW - DAY), fault(NOW)]
    assert next_rung(past, GPU, "gpu_reset", NOW)[0] == "gpu_reset"


def test_faults_of_other_gpus_and_hosts_do_not_count():
    other_gpu = {"host": "n1", "gpu": {"serial": "9999", "pci": "0000:3b:00.0"}}
    other_host = {"host": "n2", "gpu": GPU["gpu"]}
    h = [fault(NOW, **other_gpu), fault(NOW, **other_gpu), fault(NOW, **other_host), fault(NOW)]
    assert next_rung(h, GPU, "gpu_reset", NOW)[0] == "gpu_reset"


def test_fallback_keys_match_by_strongest_common_id():
    by_pci = {"host": "n1", "gpu": "0000:3b:00.0"}
    by_uuid = {"host": "n1", "gpu": "GPU-aaaa"}
    h = [fault(NOW, **by_pci), fault(NOW, **by_uuid), fault(NOW, **{"host": "n1", "serial": "1650"})]
    assert next_rung(h, GPU, "gpu_reset", NOW)[0] == "rma"
    # only a PCI id known now: every record in that slot counts (the safe side), but records that
    # share no id with it (UUID or serial only) could be any GPU of the host and do not
    assert next_rung(h, by_pci, "gpu_reset", NOW)[0] == "gpu_reset"
    slot = [fault(NOW, **by_pci), fault(NOW, **GPU), fault(NOW, **{"host": "n1", "gpu": {"serial": "1", "pci": "0000:3b:00.0"}})]
    assert next_rung(slot, by_pci, "gpu_reset", NOW)[0] == "rma"
    # a record with another serial in the same slot is another board
    new_board = {"host": "n1", "gpu": {"serial": "7777", "pci": "0000:3b:00.0"}}
    assert next_rung([fault(NOW, **new_board)] * 3, GPU, "gpu_reset", NOW)[0] == "gpu_reset"


def test_reset_budget_escalates_to_reboot_whether_allowed_or_not_then_rma_after_the_reboot():
    h = [tried("gpu_reset", NOW - 2 * DAY), tried("gpu_reset", NOW - DAY, result="failed")]
    # a spent reset budget needs a reboot; a policy that allows none keeps the node drained for
    # it (rung_verify), it is no RMA: the RMA comes only after a reboot did not fix the GPU
    for policy in (None, {"allow_reboot": False}, {"allow_reboot": True}):
        rung, reason = next_rung(h, GPU, "gpu_reset", NOW, policy)
        assert rung == "reboot" and "gpu_reset tried 2 times" in reason and "budget 2" in reason
        assert "reboot tried 0 of 1" in reason
    h.append(tried("reboot", NOW - DAY))
    assert next_rung(h, GPU, "gpu_reset", NOW, {"allow_reboot": True})[0] == "rma"


def test_refused_skipped_dry_and_old_tries_do_not_spend_the_budget():
    h = [tried("gpu_reset", NOW, result="refused"), tried("gpu_reset", NOW, result="skipped"),
         tried("gpu_reset", NOW - 8 * DAY), tried("gpu_reset", NOW - 9 * DAY),
         remedy_entry(dict(GPU, rung="gpu_reset", result="ok", check_mode=True), NOW),
         tried("gpu_reset", NOW - DAY)]
    rung, reason = next_rung(h, GPU, "gpu_reset", NOW)
    assert rung == "gpu_reset" and "tried 1 of 2" in reason


def test_ib_restart_budget_is_per_port_and_ends_drained_for_the_cable():
    p1 = {"host": "n1", "port": "mlx5_1/1"}
    p2 = {"host": "n1", "port": "mlx5_2/1"}
    h = [tried("ib_restart", NOW - DAY, **p1), tried("ib_restart", NOW, **p1), tried("ib_restart", NOW, **p2)]
    rung, reason = next_rung(h, p1, "ib_restart", NOW)
    assert rung == "drain" and "cable" in reason and "mlx5_1/1" in reason
    assert next_rung(h, p2, "ib_restart", NOW)[0] == "ib_restart"
    # a host-wide question counts every port's restarts
    assert next_rung(h, {"host": "n1"}, "ib_restart", NOW)[0] == "drain"


def test_rungs_without_budget_pass_through_and_bad_input_is_refused():
    h = [fault(NOW)] * 5
    for r in ("none", "drain", "nccl_env", "timeout", "rma"):
        assert next_rung(h, GPU, r, NOW)[0] == r
    with pytest.raises(LedgerError):
        next_rung([], GPU, "defrag", NOW)
    with pytest.raises(LedgerError) as e:
        next_rung([], {"host": "n1"}, "gpu_reset", NOW)
    assert "serial, UUID or PCI" in e.value.msg


def test_policy_is_checked():
    assert check_policy({"repeat_faults": 5})["repeat_faults"] == 5
    for bad in ({"repeat_fault": 3}, {"repeat_window": 0}, {"budgets": {"drain": 1}}, {"budgets": {"gpu_reset": -1}},
                {"repeat_faults": True}, "x"):
        with pytest.raises(LedgerError):
            check_policy(bad)
    h = [tried("gpu_reset", NOW)]
    assert next_rung(h, GPU, "gpu_reset", NOW, {"budgets": {"gpu_reset": 1}})[0] == "reboot"


def test_history_entries_are_validated():
    for bad in ({"host": "n1", "gpu": "GPU-a"}, {"host": "n1", "gpu": "GPU-a", "xid": "4x8"},
                {"host": "n1", "xid": 48, "when": "soon"}):
        with pytest.raises(LedgerError):
            fault_entry(bad, NOW)
    with pytest.raises(LedgerError):
        remedy_entry({"host": "n1", "gpu": "GPU-a", "rung": "gpu_reset", "result": "meh"}, NOW)
