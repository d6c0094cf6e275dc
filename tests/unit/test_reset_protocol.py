"""The gpu_reset rung's per-GPU protocol (gpu_runbook.ledger.reset_protocol): pure decisions the
action plugin gpu_runbook_reset_gpus acts on -- what is recorded, when no reset runs, how the
module's answer reads, the host's outcome."""

import pytest

from gpu_runbook.ledger import reset_protocol as proto

PCI, UUID = "0000:2a:00.0", "GPU-11111111-2222-3333-4444-555555555555"
GPU = {"pci": PCI, "uuid": UUID, "serial": "1650", "index": 1, "kinds": ["row_remap_pending", "xid:48", "xid:63"]}
H = "gpu-r5-n01"


def test_seen_matches_by_pci_or_uuid_only_this_gpu():
    history = [{"type": "fault", "host": H, "pci": PCI, "xid": 48}, {"type": "fault", "host": H, "pci": "0000:3b:00.0"},
               {"type": "remedy", "host": H, "uuid": UUID, "rung": "gpu_reset", "result": "failed"}, "junk"]
    assert [e["type"] for e in proto.seen_of(history, GPU)] == ["fault", "remedy"]
    assert proto.seen_of(history, {"pci": "0000:99:00.0"}) == []


def test_the_fault_is_recorded_once_per_incident_with_the_first_xid_and_kind():
    rec = proto.fault_record(H, GPU, [])
    assert rec == {"type": "fault", "host": H, "gpu": {"pci": PCI, "uuid": UUID, "serial": "1650"},
                   "xid": 48, "kind": "row_remap_pending"}
    assert proto.fault_record(H, GPU, [{"type": "fault"}]) is None          # already this incident
    assert proto.fault_record(H, dict(GPU, kinds=[]), []) is None           # the plan names no fault


def test_no_reset_when_done_failed_before_or_the_ledger_climbs():
    assert proto.before_reset({"rung": "gpu_reset"}, [], "INC-1") is None
    done = proto.before_reset({"already_done": True, "rung": "none", "reason": "gpu_reset already done"}, [], "INC-1")
    assert (done["result"], done["audit"], done["ran"]) == ("ok", "skipped", False)
    failed = proto.before_reset({"rung": "gpu_reset"}, [{"type": "remedy", "rung": "gpu_reset", "result": "failed",
                                                         "when": "2026-12-05T10:00:00+00:00"}], "INC-1")
    assert (failed["result"], failed["escalate"]) == ("failed", "reboot")
    assert "not tried again in the same incident" in failed["message"] and "10:00:00" in failed["message"]
    lemon = proto.before_reset({"rung": "rma", "reason": "3 faults in 30 days"}, [], "INC-1")
    assert (lemon["result"], lemon["escalate"], lemon["message"]) == ("skipped", "rma",
                                                                     "ledger: rma instead of a reset: 3 faults in 30 days")


@pytest.mark.parametrize("run,check,result,escalate", [
    ({"changed": True, "verified": True, "msg": "GPU reset, verified"}, False, "ok", None),
    ({"changed": True, "verified": False, "msg": "NOT verified"}, False, "failed", "reboot"),
    ({"failed": True, "blocked_by": ["compute_processes"], "msg": "held"}, False, "refused", None),
    ({"failed": True, "blocked_by": ["fault_not_fixable_by_reset"], "escalate": "rma", "msg": "x"}, False, "refused",
     "rma"),
    ({"failed": True, "blocked_by": ["gpu_lost"], "reset": {"outcome": "gpu_lost"}, "escalate": "reboot", "msg": "x"},
     False, "failed", "reboot"),
    ({"failed": True, "blocked_by": ["restore_failed"], "changed": True, "msg": "x"}, False, "failed", None),
    ({"failed": True, "unreachable": True, "msg": "ssh: connection refused"}, False, "failed", None),
    ({"changed": False, "would_run": [["nvidia-smi", "-r"]], "msg": "check mode"}, True, "skipped", None),
])
def test_the_modules_answer_reads_as_one_result(run, check, result, escalate):
    one = proto.after_reset(run, check, GPU)
    assert (one["result"], one["escalate"], one["ran"]) == (result, escalate, not check)
    assert one["argv"] == ["nvidia-smi", "-r", "-i", PCI] and one["message"] == run["msg"]


def test_the_argv_is_the_one_the_module_ran():
    one = proto.after_reset({"verified": True, "commands": [["/usr/bin/nvidia-smi", "-pm", "0", "-i", PCI],
                                                           ["/usr/bin/nvidia-smi", "-r", "-i", PCI]]}, False, GPU)
    assert one["argv"] == ["/usr/bin/nvidia-smi", "-r", "-i", PCI]


def test_audit_and_remedy_lines():
    one = proto.after_reset({"verified": True, "changed": True, "msg": "ok"}, False, GPU)
    a = proto.audit_raw(H, GPU, one, False)
    assert (a["rung"], a["gpu"], a["result"], a["check_mode"]) == ("gpu_reset", PCI, "ok", False)
    assert proto.remedy_raw(H, GPU, one, False) == {"type": "remedy", "host": H, "gpu": {"pci": PCI, "uuid": UUID,
                                                                                         "serial": "1650"},
                                                    "rung": "gpu_reset", "result": "ok"}
    assert proto.remedy_raw(H, GPU, one, True) is None                    # check mode records nothing
    assert proto.remedy_raw(H, GPU, proto.before_reset({"rung": "rma"}, [], None), False) is None  # nothing ran


def test_the_hosts_outcome_takes_the_worst_result_and_the_costliest_escalation():
    ok = proto.with_gpu(proto.after_reset({"verified": True, "changed": True, "msg": "reset, verified"}, False, GPU),
                        GPU)
    other = {"pci": "0000:3b:00.0", "kinds": ["xid:79"]}
    up = proto.with_gpu(proto.after_reset({"failed": True, "blocked_by": ["fault_not_fixable_by_reset"],
                                           "escalate": "reboot", "msg": "a reset cannot fix Xid 79"}, False, other),
                        other)
    out = proto.outcome([ok, up])
    assert (out["result"], out["escalate"], out["changed"]) == ("refused", "reboot", True)
    assert out["message"] == "GPU %s: reset, verified; GPU 0000:3b:00.0: a reset cannot fix Xid 79" % PCI
    assert proto.outcome([])["result"] == "none" and proto.outcome([ok])["result"] == "ok"
