"""The ib_restart rung's protocol (gpu_runbook.ledger.restart_protocol) and the ledger session
the rung plugins write through (gpu_runbook.ledger.session): pure decisions, real files."""

import json
import os

import pytest

from gpu_runbook.ledger import LedgerError
from gpu_runbook.ledger import restart_protocol as proto
from gpu_runbook.ledger.session import Session

H = "gpu-r6-n01"
PORTS = ["mlx5_6/1"]


def test_ports_and_this_incidents_restarts():
    assert proto.ports_of(["mlx5_6", "mlx5_0/2", "", None]) == ["mlx5_6/1", "mlx5_0/2"]
    hist = [{"type": "remedy", "rung": "ib_restart", "port": "mlx5_6/1", "result": "failed"},
            {"type": "remedy", "rung": "ib_restart", "port": "mlx5_0/1", "result": "ok"},
            {"type": "remedy", "rung": "ib_restart", "result": "ok"}, {"type": "fault", "port": "mlx5_6/1"}]
    assert [e.get("port") for e in proto.restarts_of(hist, PORTS)] == ["mlx5_6/1", None]
    assert proto.decide_items(H, []) == [{"host": H, "proposed_rung": "ib_restart"}]


def test_no_restart_when_done_tried_or_over_budget():
    assert proto.before_restart([{"rung": "ib_restart"}], [], "INC") is None
    done = proto.before_restart([{"already_done": True, "rung": "none", "reason": "done at 10:00"}], [], "INC")
    assert (done["result"], done["audit"]) == ("ok", "skipped")
    tried = proto.before_restart([{"rung": "ib_restart"}], [{"result": "failed", "port": "mlx5_6/1",
                                                              "when": "2026-12-05T10:00:00+00:00"}], "INC")
    assert (tried["result"], tried["escalate"]) == ("failed", "cable") and "on mlx5_6/1" in tried["message"]
    spent = proto.before_restart([{"rung": "drain", "reason": "budget spent"}], [], "INC")
    assert (spent["result"], spent["escalate"], spent["message"]) == ("skipped", "cable", "ledger: budget spent")


def test_a_port_that_came_back_clean_is_ok_though_another_stays_sick():
    run = {"changed": True, "verified": False, "msg": "counters still rising on mlx5_0/1",
           "commands": [["/usr/bin/systemctl", "restart", "openibd"]], "expected_ports": ["mlx5_0/1", "mlx5_6/1"],
           "still_rising": {"mlx5_0/1": {"symbol_error": 12}},
           "after": {"mlx5_6/1": {"state": "ACTIVE", "phys_state": "LinkUp", "rate_gbps": 400}}}
    one = proto.after_restart(run, False, "openibd", "service")
    assert (one["result"], one["escalate"], one["argv"]) == ("failed", "cable", ["/usr/bin/systemctl", "restart",
                                                                                  "openibd"])
    ports = proto.port_results(one, run, PORTS)
    assert ports == [{"port": "mlx5_0/1", "result": "failed", "line": "mlx5_0/1: failed; still rising: symbol_error +12"},
                     {"port": "mlx5_6/1", "result": "ok", "line": "mlx5_6/1: ok; ACTIVE/LinkUp 400 Gb/s"}]
    audits = proto.audit_raws(H, ports, one, "openibd", False)
    assert [(a["port"], a["result"]) for a in audits] == [("mlx5_0/1", "failed"), ("mlx5_6/1", "ok")]
    assert [r["result"] for r in proto.remedy_raws(H, ports, one, False)] == ["failed", "ok"]
    assert proto.remedy_raws(H, ports, one, True) == []
    out = proto.outcome(one, "openibd", ports)
    assert (out["result"], out["unit"], out["still_rising"]) == ("failed", "openibd", run["still_rising"])


@pytest.mark.parametrize("run,check,result,escalate", [
    ({"failed": True, "blocked_by": ["ib_in_use"], "msg": "lustre o2ib mounted"}, False, "refused", None),
    ({"failed": True, "blocked_by": ["restart_failed"], "escalate": "reboot", "msg": "x"}, False, "failed", "reboot"),
    ({"verified": True, "changed": True, "msg": "ok"}, False, "ok", None),
    ({"would_run": [], "msg": "check"}, True, "skipped", None)])
def test_the_modules_answer(run, check, result, escalate):
    one = proto.after_restart(run, check, "openibd", "service")
    assert (one["result"], one["escalate"]) == (result, escalate)
    assert proto.port_results(one, run, PORTS)[0]["result"] == result


def test_the_session_writes_through_the_ledgers_own_code(tmp_path):
    sd = tmp_path / "state"
    s = Session(str(sd), "INC-9", {})
    assert s.this_incident(H) == []                                     # nothing yet (the dir is made on write)
    s.record([{"type": "remedy", "host": H, "port": "mlx5_6/1", "rung": "ib_restart", "result": "failed"}])
    s.audit([{"host": H, "rung": "ib_restart", "port": "mlx5_6/1", "argv": ["systemctl", "restart", "openibd"],
              "result": "failed", "message": "m", "check_mode": False}], False)
    mine = s.this_incident(H)
    assert [(e["type"], e["incident"], e["result"]) for e in mine] == [("remedy", "INC-9", "failed")]
    assert Session(str(sd), "INC-other", {}).this_incident(H) == []
    line = json.loads((sd / "audit.jsonl").read_text())
    assert line["incident"] == "INC-9" and line["who"] and line["argv"] == ["systemctl", "restart", "openibd"]
    assert oct(os.stat(str(sd)).st_mode & 0o777) == "0o700"
    d = s.decide([{"host": H, "port": "mlx5_6/1", "proposed_rung": "ib_restart"}])
    assert d[0]["proposed_rung"] == "ib_restart"


def test_an_unsafe_state_dir_is_refused_by_the_session(tmp_path):
    sd = tmp_path / "state"
    sd.mkdir()
    os.chmod(str(sd), 0o777)
    with pytest.raises(LedgerError):
        Session(str(sd), "INC-9", {}).this_incident(H)


def test_the_rung_plugins_arguments_refused_and_the_options_given():
    from gpu_runbook.ledger.session import given, refused
    ok = {"incident": "INC-9", "state_dir": "/tmp/s", "restart": {"wait": 1}}
    assert refused(ok, {"incident": "text", "state_dir": "path"}, "restart", ("unit",)) is None
    why = refused(dict(ok, restart={"unit": "x", "expected_ports": []}), {}, "restart", ("expected_ports", "unit"))
    assert why == "restart may not set expected_ports, unit: the plugin sets them from its own options"
    assert "incident" in refused(dict(ok, incident="a\nb"), {"incident": "text"}, "restart", ())
    assert given({"a": 1, "b": None, "c": "__omit_place_holder__abc", "d": False}) == {"a": 1, "d": False}
