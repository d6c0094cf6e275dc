"""The reboot rung's plan in module_utils/gpu_runbook/slurm.py: `scontrol reboot` (the drain
survives the boot) only on our own drain, and only once; and where our reboot stands while the
module waits for the node to come back (states and reasons as Slurm 22.05 printed them on the
emulated cluster)."""
import pytest

from gpu_runbook.slurm import ownership_record, parse_scontrol_show_node, plan_node, reboot_flag, reboot_progress

OURS = "NodeName=n1 State=%s Reason=gpu-runbook: I: Xid 79 [root@2026-12-03T05:07:54]\n"


def _node(state, text=OURS):
    return parse_scontrol_show_node(text % state)


def test_our_drain_is_rebooted():
    for state in ("IDLE+DRAIN", "MIXED+DRAIN"):
        node = _node(state)
        plan = plan_node("reboot_requested", node, ownership_record(node))
        assert plan == {"action": "reboot", "owned": True, "msg": "reboot requested (the node stays drained through it)"}


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


ASKED = "gpu-runbook: I: reboot: Xid 79"
BEFORE = "2026-12-05T00:35:36"


def _rebooting(state, reason, boot=BEFORE, user="root@2026-12-05T05:03:58"):
    return parse_scontrol_show_node("NodeName=n1 State=%s BootTime=%s Reason=%s [%s]\n" % (state, boot, reason, user))


RECORD = {"node": "n1", "reason": ASKED, "reboot": {"reason": ASKED, "boot_time_before": BEFORE}}


@pytest.mark.parametrize("state,reason,boot,stage", [
    # what slurmctld 22.05 showed, second by second, for `scontrol reboot Reason=... n1` on our drain
    ("IDLE+DRAIN+REBOOT_REQUESTED", ASKED, BEFORE, "booting"),
    ("DOWN+DRAIN+REBOOT_ISSUED", ASKED + " : reboot issued", BEFORE, "booting"),
    ("IDLE+DRAIN", ASKED + " : reboot issued", "2026-12-05T05:04:01", "back"),
    # registered but the boot time did not move: not back from OUR reboot
    ("IDLE+DRAIN", ASKED + " : reboot issued", BEFORE, "booting"),
    ("DOWN*+DRAIN", ASKED + " : reboot issued", "2026-12-05T05:04:01", "booting"),
    ("DOWN+DRAIN", ASKED + " : reboot timed out", BEFORE, "timed_out"),
    ("IDLE", ASKED + " : reboot issued", "2026-12-05T05:04:01", "in_service"),
    ("IDLE+DRAIN", "admin: swap PSU", "2026-12-05T05:04:01", "foreign"),
    ("IDLE+DRAIN", ASKED + " : reboot issued; and more", "2026-12-05T05:04:01", "foreign"),
])
def test_reboot_progress_through_the_boot(state, reason, boot, stage):
    assert reboot_progress(RECORD, _rebooting(state, reason, boot))[0] == stage


def test_reboot_progress_names_the_boot_time_and_the_foreign_reason():
    stage, words = reboot_progress(RECORD, _rebooting("IDLE+DRAIN", ASKED + " : reboot issued", "2026-12-05T05:04:01"))
    assert stage == "back" and "2026-12-05T05:04:01" in words
    stage, words = reboot_progress(RECORD, _rebooting("IDLE+DRAIN", "admin: swap PSU"))
    assert stage == "foreign" and "admin: swap PSU" in words
