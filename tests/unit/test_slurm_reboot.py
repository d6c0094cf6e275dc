"""The reboot rung's plan in module_utils/gpu_runbook/slurm.py: `scontrol reboot ASAP
nextstate=RESUME` only on our own drain, and only once (states as Slurm 22.05 prints them)."""
import pytest

from gpu_runbook.slurm import ownership_record, parse_scontrol_show_node, plan_node, reboot_flag

OURS = "NodeName=n1 State=%s Reason=gpu-runbook: I: Xid 79 [root@2026-12-03T05:07:54]\n"


def _node(state, text=OURS):
    return parse_scontrol_show_node(text % state)


def test_our_drain_is_rebooted():
    for state in ("IDLE+DRAIN", "MIXED+DRAIN"):
        node = _node(state)
        plan = plan_node("reboot_requested", node, ownership_record(node))
        assert plan == {"action": "reboot", "owned": True, "msg": "reboot requested (ASAP, nextstate=RESUME)"}


@pytest.mark.parametrize("state,flag", [
    ("MIXED+DRAIN+REBOOT_REQUESTED", "REBOOT_REQUESTED"),
    ("IDLE+DRAIN+REBOOT_REQUESTED", "REBOOT_REQUESTED"),
    ("DOWN+DRAIN+REBOOT_ISSUED", "REBOOT_ISSUED"),
    ("DOWN+DRAIN+REBOOT_ISSUED+NOT_RESPONDING", "REBOOT_ISSUED"),
    ("IDLE+POWERING_UP", "POWERING_UP"),
])
def test_a_reboot_under_way_is_never_asked_again(state, flag):
    node = _node(state)
    assert reboot_flag(node) == flag
    for rec in (ownership_record(node), None):          # ours or not: no second request
        plan = plan_node("reboot_requested", node, rec)
        assert plan["action"] == "none" and "already under way" in plan["msg"] and state in plan["msg"]


def test_no_reboot_of_a_foreign_or_undrained_node():
    admin = parse_scontrol_show_node("NodeName=n1 State=IDLE+DRAIN Reason=admin: BIOS [alice@2026-12-03T05:00:00]")
    plan = plan_node("reboot_requested", admin, None)
    assert plan["action"] == "none" and plan["owned"] is False
    assert plan["msg"].startswith("no reboot: n1 is IDLE+DRAIN by someone else") and "admin: BIOS" in plan["msg"]
    ours = _node("IDLE+DRAIN")
    changed = _node("IDLE+DRAIN", OURS.replace("05:07:54", "06:00:00"))   # re-stamped by someone after us
    assert plan_node("reboot_requested", changed, ownership_record(ours))["action"] == "none"
    free = parse_scontrol_show_node("NodeName=n1 State=IDLE")
    plan = plan_node("reboot_requested", free, None)
    assert plan["action"] == "none" and "drain it first" in plan["msg"] and reboot_flag(free) is None
    resumed = _node("IDLE")   # our record, but the drain is gone
    assert plan_node("reboot_requested", resumed, ownership_record(ours))["action"] == "none"
