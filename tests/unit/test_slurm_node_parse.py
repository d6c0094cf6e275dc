"""Slurm node parsing and drain ownership (module_utils/gpu_runbook/slurm.py), on real
`scontrol show node` outputs (tests/fixtures/slurm/README.md names where each came from)."""
import os

import pytest

from gpu_runbook.slurm import (
    drain_reason, drain_status, out_of_service, ownership_record, owns, parse_node_state,
    parse_scontrol_show_node, parse_scontrol_show_nodes, plan_node, slurm_error_kind)

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "slurm")


def fixture(name):
    with open(os.path.join(FIX, name)) as fh:
        return fh.read()


@pytest.mark.parametrize("name,state,base,flags,drain,reason,user,when", [
    ("node_2205_idle_oneline.txt", "IDLE", "IDLE", [], None, None, None, None),
    ("node_2205_idle_drain_oneline.txt", "IDLE+DRAIN", "IDLE", ["DRAIN"], "DRAINED",
     "admin: bad [DIMM] x=1 Reason=2", "root", "2026-12-03T05:04:24"),
    ("node_2205_idle_drain_multiline.txt", "IDLE+DRAIN", "IDLE", ["DRAIN"], "DRAINED",
     "admin: bad [DIMM] x=1 Reason=2", "root", "2026-12-03T05:04:24"),
    ("node_2205_mixed_drain_oneline.txt", "MIXED+DRAIN", "MIXED", ["DRAIN"], "DRAINING",
     "gpu-runbook: inc-1: Xid 79 on GPU 3", "root", "2026-12-03T05:04:36"),
    ("node_2205_allocated_drain_multiline.txt", "ALLOCATED+DRAIN", "ALLOCATED", ["DRAIN"], "DRAINING",
     "gpu-runbook: inc-2: ALLOC", "root", "2026-12-03T05:05:00"),
    ("node_2205_down_drain_noresp_oneline.txt", "DOWN+DRAIN+NOT_RESPONDING", "DOWN", ["DRAIN", "NOT_RESPONDING"],
     "DRAINED", "cable check", "root", "2026-12-03T05:05:02"),
    ("node_2205_down_drain_noresp_multiline.txt", "DOWN+DRAIN+NOT_RESPONDING", "DOWN", ["DRAIN", "NOT_RESPONDING"],
     "DRAINED", "cable check", "root", "2026-12-03T05:05:02"),
    ("node_2002_mixed_drain_multiline.txt", "MIXED+DRAIN", "MIXED", ["DRAIN"], "DRAINING",
     "deep power-off required for PSU", "root", "2020-07-17T13:21:02"),
    ("node_1605_down_star_drain_oneline.txt", "DOWN*+DRAIN", "DOWN", ["NOT_RESPONDING", "DRAIN"], "DRAINED",
     "Not responding", "root", "2017-06-29T08:00:07"),
])
def test_real_outputs(name, state, base, flags, drain, reason, user, when):
    n = parse_scontrol_show_node(fixture(name))
    assert (n["state"], n["base_state"], n["flags"], n["drain"]) == (state, base, flags, drain)
    assert (n["reason"], n["reason_user"], n["reason_time"]) == (reason, user, when)
    assert n["drained"] is (drain == "DRAINED")
    assert n["name"]


def test_other_fields_survive_a_reason_with_key_value_text():
    n = parse_scontrol_show_node(fixture("node_2205_idle_drain_oneline.txt"))
    assert (n["name"], n["cpu_alloc"], n["partitions"], n["version"]) == ("gpu-r1-n01", 0, ["gpu"], "22.05.8")
    busy = parse_scontrol_show_node(fixture("node_2002_mixed_drain_multiline.txt"))
    assert busy["alloc_tres"] == "cpu=2,mem=1G" and busy["cpu_alloc"] == 2


def test_many_nodes_one_output_and_not_found():
    both = fixture("node_2205_idle_oneline.txt") + fixture("node_2205_down_drain_noresp_multiline.txt") + "\n"
    got = parse_scontrol_show_nodes(both)
    assert [(x["name"], x["state"]) for x in got] == [("gpu-r1-n02", "IDLE"), ("gpu-r1-n02", "DOWN+DRAIN+NOT_RESPONDING")]
    assert parse_scontrol_show_node("Node nosuch not found\n") == {}
    assert parse_scontrol_show_node("") == {} and parse_scontrol_show_node(None) == {}


def test_reason_without_user_time_tail_and_odd_text():
    n = parse_scontrol_show_node("NodeName=a State=IDLE+DRAIN Weight=1 Reason=set in slurm.conf\n")
    assert (n["reason"], n["reason_user"], n["reason_time"]) == ("set in slurm.conf", None, None)
    n = parse_scontrol_show_node("NodeName=a State=IDLE+DRAIN Reason=x [y] [bob@2026-01-02T03:04:05] tail "
                                 "[slurm@2026-01-02T03:04:06]")
    assert (n["reason"], n["reason_user"], n["reason_time"]) == (
        "x [y] [bob@2026-01-02T03:04:05] tail", "slurm", "2026-01-02T03:04:06")


@pytest.mark.parametrize("state,base,flags,drain", [
    ("IDLE+DRAIN", "IDLE", ["DRAIN"], "DRAINED"),
    ("MIXED+DRAIN", "MIXED", ["DRAIN"], "DRAINING"),
    ("IDLE+COMPLETING+DRAIN", "IDLE", ["COMPLETING", "DRAIN"], "DRAINING"),
    ("drained*", "IDLE", ["NOT_RESPONDING", "DRAIN"], "DRAINED"),
    ("draining", "ALLOCATED", ["DRAIN"], "DRAINING"),
    ("idle~", "IDLE", ["POWERED_DOWN"], None),
    ("IDLE+NOT_RESPONDING", "IDLE", ["NOT_RESPONDING"], None),
    ("", None, [], None),
])
def test_state_strings(state, base, flags, drain):
    b, f = parse_node_state(state)
    assert (b, f, drain_status(b, f)) == (base, flags, drain)


def test_drain_reason_prefix_incident_one_line():
    assert drain_reason("Xid 79 on GPU 3", "INC-7") == "gpu-runbook: INC-7: Xid 79 on GPU 3"
    assert drain_reason("gpu-runbook: INC-7: Xid 79", "INC-7") == "gpu-runbook: INC-7: Xid 79"
    assert drain_reason("gpu-runbook:x", None) == "gpu-runbook: x"
    assert drain_reason("a\n  b\tc") == "gpu-runbook: a b c"
    for bad in ("", "  \n", None, "x" * 600):
        with pytest.raises(ValueError):
            drain_reason(bad)


def _node(text):
    return parse_scontrol_show_node(text)


OURS = ("NodeName=n1 State=IDLE+DRAIN Reason=gpu-runbook: I: Xid 79 [root@2026-12-03T05:07:54]\n")


def test_ownership_needs_reason_user_and_time_all_unchanged():
    node = _node(OURS)
    rec = ownership_record(node, "I", "t")
    assert owns(rec, node) == (True, "drained by us at 2026-12-03T05:07:54 (reason unchanged)")
    same_text_later = _node(OURS.replace("05:07:54", "05:07:55"))
    other_user = _node(OURS.replace("root@", "alice@"))
    other_text = _node(OURS.replace("Xid 79", "Xid 48"))
    for node2 in (same_text_later, other_user, other_text):
        mine, why = owns(rec, node2)
        assert not mine and "changed after our drain" in why
    assert owns(None, node)[0] is False
    assert owns(rec, _node(OURS.replace("IDLE+DRAIN", "IDLE")))[0] is False
    assert owns(dict(rec, node="n2"), node)[0] is False


def test_plans_never_touch_a_foreign_drain():
    admin = _node("NodeName=n1 State=IDLE+DRAIN Reason=admin: PSU [root@2026-12-03T05:00:00]")
    for state in ("drained", "resumed"):
        plan = plan_node(state, admin, None, "gpu-runbook: x")
        assert plan["action"] == "none" and plan["owned"] is False and "admin: PSU" in plan["msg"]
    down = _node("NodeName=n1 State=DOWN+NOT_RESPONDING Reason=Not responding [slurm@2026-12-03T05:00:00]")
    assert plan_node("drained", down, None, "gpu-runbook: x")["action"] == "none"
    assert out_of_service(down) and not out_of_service(_node("NodeName=n1 State=IDLE"))


def test_plans_for_our_own_and_free_nodes():
    free = _node("NodeName=n1 State=MIXED")
    assert plan_node("drained", free, None, "gpu-runbook: x")["action"] == "drain"
    assert plan_node("resumed", free, None)["msg"] == "n1 is in service already"
    ours = _node(OURS)
    rec = ownership_record(ours)
    assert plan_node("drained", ours, rec, ours["reason"])["action"] == "none"
    assert plan_node("drained", ours, rec, "gpu-runbook: other")["action"] == "re-reason"
    assert plan_node("resumed", ours, rec)["action"] == "resume"
    assert plan_node("present", ours, rec)["owned"] is True
    down_ours = _node(OURS.replace("IDLE+DRAIN", "DOWN+DRAIN"))
    plan = plan_node("resumed", down_ours, ownership_record(down_ours))
    assert plan["action"] == "none" and "a person should look" in plan["msg"]
    with pytest.raises(ValueError):
        plan_node("absent", ours, rec)


@pytest.mark.parametrize("text,kind", [
    # real texts from scontrol 22.05.8 (testbed): unknown node, controller down, munge refused
    ("Node nosuch not found", "unknown_node"),
    ("slurm_update error: Invalid node name specified", "unknown_node"),
    ("slurm_load_node error: Unable to contact slurm controller (connect failure)", "unreachable"),
    ("scontrol: error: Munge encode failed: Failed to access \"/tmp/m/munge.socket\": Permission denied "
     "(Did you start munged?) slurm_update error: Protocol authentication error", "denied"),
    ("slurm_update error: Invalid user id", "denied"),
    ("slurm_update error: Access/permission denied", "denied"),
    ("You must specify a reason when DOWNING or DRAINING a node. Request denied", None),
])
def test_error_kinds(text, kind):
    assert slurm_error_kind(text) == kind


def test_a_reason_that_names_an_xid_is_that_xids_category_said_as_a_record():
    from gpu_runbook.slurm import parse_node_findings
    node = ("NodeName=gpu-a-07 Arch=x86_64 CoresPerSocket=48\n   State=DRAIN ThreadsPerCore=1\n"
            "   Reason=%s [root@2022-02-17T21:10:31]\n")
    _facts, (f,) = parse_node_findings(node % "Xid 74 -- GPUs need reseat")
    assert f["category"] == "gpu_hardware" and f["xid"] == 74 and f["severity"] == "warning"
    assert "a record of the fault" in f["message"]
    _facts, (f,) = parse_node_findings(node % "maintenance window")  # no Xid: the reason says no cause
    assert f["kind"] == "logged_error" and f.get("xid") is None
    _facts, (f,) = parse_node_findings(node % "Xid 999 seen")  # a number the catalog does not know
    assert f["kind"] == "logged_error"
