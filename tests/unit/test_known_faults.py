"""The known-faults record (ledger/known.py): an hourly diagnosis says a fault is new once, a
fault whose severity rose is new again, a fault gone from a host that was read is cleared (and new
when it returns), a host not read keeps its faults, and an operator acknowledges faults by host."""

import json
import os
import stat

import pytest

from gpu_runbook.ledger import LedgerError
from gpu_runbook.ledger.known import acknowledge, compare, fault_key, read_known, write_known

T1, T2, T3 = "2026-12-05T01:00:00+00:00", "2026-12-05T02:00:00+00:00", "2026-12-05T03:00:00+00:00"
XID79 = {"kind": "xid", "severity": "critical", "xid": 79, "gpu": {"pci": "0000:75:00.0"}, "message": "Xid 79 once"}
FLAP = {"kind": "ib_link_flap", "severity": "warning", "ib": {"device": "mlx5_4", "port": 1}, "message": "5x"}


def host(name, *findings, verdict=None):
    worst = max((f["severity"] for f in findings), key=["info", "warning", "critical"].index, default="ok")
    return {"host": name, "verdict": verdict or ("gpu_hardware" if findings else "healthy"), "severity": worst,
            "findings": list(findings)}


def test_a_fault_is_new_once_then_known_and_its_wording_does_not_make_it_new():
    new, still, cleared, rec = compare({}, [host("n03", XID79), host("n05", FLAP)], T1)
    assert [f["key"] for f in new] == ["n03|xid|xid=79|gpu=0000:75:00.0", "n05|ib_link_flap|ib=mlx5_4/1"]
    assert still == [] and cleared == []
    again = [host("n03", dict(XID79, message="Xid 79 3 times")), host("n05", FLAP)]
    new, still, cleared, rec = compare(rec, again, T2)
    assert new == [] and len(still) == 2 and cleared == []
    n03 = rec["faults"]["n03|xid|xid=79|gpu=0000:75:00.0"]
    assert (n03["first_reported"], n03["last_seen"], n03["message"]) == (T1, T2, "Xid 79 3 times")


def test_a_fault_whose_severity_rose_is_new_again_and_loses_its_acknowledgement():
    _new, _still, _cl, rec = compare({}, [host("n05", FLAP)], T1)
    _done, rec = acknowledge(rec, T1, "sre@ctl", "cable ticket 42", hosts=["n05"])
    new, still, _cl, rec = compare(rec, [host("n05", dict(FLAP, severity="critical"))], T2)
    assert [f["severity"] for f in new] == ["critical"] and new[0]["acknowledged"] is None and still == []


def test_a_fault_gone_from_a_read_host_clears_and_comes_back_new_an_unread_host_keeps_its_own():
    _new, _still, _cl, rec = compare({}, [host("n03", XID79), host("n05", FLAP)], T1)
    # n03 read and healthy now; n05 not read (unreachable: unknown)
    new, still, cleared, rec = compare(rec, [host("n03"), host("n05", verdict="unknown")], T2)
    assert [f["host"] for f in cleared] == ["n03"] and new == [] and still == []
    assert list(rec["faults"]) == ["n05|ib_link_flap|ib=mlx5_4/1"]
    new, _still, _cl, rec = compare(rec, [host("n03", XID79)], T3)
    assert [(f["host"], f["first_reported"]) for f in new] == [("n03", T3)]


def test_only_serious_findings_are_faults_and_the_job_culprit_restatement_is_not_one():
    info = {"kind": "sw_thermal_slowdown", "severity": "info", "message": "x"}
    culprit = {"kind": "job_culprit", "severity": "critical", "message": "rank 18 runs here"}
    new, _s, _c, _r = compare({}, [host("n03", info, culprit, XID79)], T1)
    assert [f["kind"] for f in new] == ["xid"]


def test_acknowledging_needs_hosts_and_matches_kinds():
    _n, _s, _c, rec = compare({}, [host("n03", XID79, FLAP)], T1)
    with pytest.raises(LedgerError):
        acknowledge(rec, T2, "sre", "all of them", hosts=[])
    done, rec2 = acknowledge(rec, T2, "sre", "RMA 7", hosts=["n03.cluster"], kinds=["xid"])
    assert [f["kind"] for f in done] == ["xid"]
    assert rec2["faults"][fault_key("n03", XID79)]["acknowledged"] == {"by": "sre", "at": T2, "note": "RMA 7"}
    assert rec2["faults"][fault_key("n03", FLAP)]["acknowledged"] is None
    assert rec["faults"][fault_key("n03", XID79)]["acknowledged"] is None  # pure: the input is untouched


def test_the_record_file_round_trips_privately_and_a_broken_one_is_said_never_emptied(tmp_path):
    sd = str(tmp_path / "state")
    assert not os.path.exists(sd)
    _n, _s, _c, rec = compare({}, [host("n03", XID79)], T1)
    path = write_known(sd, rec)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and stat.S_IMODE(os.stat(sd).st_mode) == 0o700
    assert read_known(sd) == json.loads(json.dumps(rec))
    with open(path, "w") as fh:
        fh.write("{not json")
    with pytest.raises(LedgerError) as exc:
        read_known(sd)
    assert "is not JSON" in exc.value.msg and "move it away" in exc.value.msg
    os.unlink(path)
    os.symlink("/etc/passwd", path)
    with pytest.raises(LedgerError):
        read_known(sd)
    fresh = tmp_path / "fresh"
    fresh.mkdir(mode=0o700)
    assert read_known(str(fresh)) == {}  # no record yet: nothing known, every fault new
