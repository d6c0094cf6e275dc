"""plan/verify.py (what a host needs after the ladder) and plan/rma.py (the RMA bundle):
pure functions, findings built with the engine's own ``finding()``."""

import json
import re

import pytest

from gpu_runbook.findings import finding, gpu_ref, ib_ref
from gpu_runbook.plan.rma import SCHEMA, markdown, rma_bundle
from gpu_runbook.plan.verify import assess, gpu_catalog, gpu_words

HOST = "gpu-r1-n02"
NOW = "2026-12-03T07:00:00Z"
LOST_PCI, LOST_UUID = "0000:ab:00.0", "GPU-15f55b61-9643-8acc-fdfc-d0f0ede1a6ea"


def gpu_rec(index, pci, serial, uuid, **kw):
    rec = {"index": index, "pci": pci, "serial": serial, "uuid": uuid, "name": "NVIDIA H100 80GB HBM3",
           "ecc": {"volatile": {"correctable": 0, "uncorrectable": 0}, "aggregate": {"correctable": 3, "uncorrectable": 0}},
           "remapped_rows": {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False},
           "retired_pages": {"single_bit": None, "double_bit": None, "pending": None}}
    rec.update(kw)
    return rec


def facts_of(*gpus, ports=()):
    return {"gpu": {"driver_version": "550.90.07", "cuda_version": "12.4", "gpus": list(gpus)},
            "ib": {"devices": sorted({p["device"] for p in ports}), "ports": list(ports)}}


def host(findings, verdict=None, severity=None):
    serious = [f for f in findings if f["severity"] in ("warning", "critical")]
    return {"host": HOST, "verdict": verdict or (serious[0]["category"] if serious else "healthy"),
            "severity": severity or (serious[0]["severity"] if serious else "ok"), "findings": findings}


def xid79():
    """The Xid 79 case as the testbed shows it: before the ladder the kernel line names the
    GPU's UUID; after it, only nvidia-smi's handle error (index, PCI) is left. No serial anywhere."""
    earlier = [finding("xid", "Xid 79 (GPU has fallen off the bus) on GPU %s" % LOST_PCI, xid=79, rung="reboot",
                       gpu=gpu_ref(LOST_PCI, None, LOST_UUID), source="kern.log:53")]
    fresh = [finding("gpu_handle_error", "nvidia-smi cannot open GPU %s (Unknown Error)" % LOST_PCI,
                     gpu=gpu_ref(LOST_PCI, 5, None), source="nvidia-smi-q.xml:773")]
    seen = [gpu_rec(0, "0000:18:00.0", "1657748414109", "GPU-99388f43-e6f3-58c7-89e3-1bfe29f2029a")]
    plan = {"rungs": [
        {"rung": "drain", "scope": "host", "status": "planned"},
        {"rung": "gpu_reset", "scope": "gpu", "status": "skipped",
         "target": {"gpus": [{"pci": LOST_PCI, "index": None, "uuid": LOST_UUID, "serial": None}]}},
        {"rung": "reboot", "scope": "host", "status": "blocked"},
        {"rung": "rma", "scope": "host", "status": "planned", "target": {"gpus": [LOST_PCI]}}]}
    outcomes = [{"rung": "drain", "result": "ok", "drained": True},
                {"rung": "gpu_reset", "result": "skipped", "escalate": "reboot",
                 "message": "a reset cannot fix a GPU that fell off the bus (Xid 79)"}]
    return earlier, fresh, facts_of(*seen), plan, outcomes


def test_xid79_lost_gpu_stays_drained_named_by_pci_index_and_uuid_with_serial_unknown():
    earlier, fresh, facts, plan, outcomes = xid79()
    catalog = gpu_catalog([facts], fresh + earlier, [], HOST)
    a = assess(host(fresh), outcomes, plan, False, catalog, earlier)
    assert (a["healthy"], a["resume"], a["action"], a["escalate"], a["bundle"]) == (False, False, "drain", "rma", True)
    assert a["reason"] == ("replace GPU (S/N unknown, index 5, %s) at %s (Xid 79; gpu_handle_error)"
                           % (LOST_UUID, LOST_PCI))
    assert [g["pci"] for g in a["gpus"]] == [LOST_PCI]
    assert a["problems"] == [{"rung": "gpu_reset", "result": "skipped", "escalate": "reboot",
                              "message": "a reset cannot fix a GPU that fell off the bus (Xid 79)"}]

    bundle, md = rma_bundle(HOST, host(fresh + earlier), facts, [], [], ["/srv/inc/report.json"], "INC-7", NOW,
                            reason="gpu-runbook: INC-7: " + a["reason"], assessment=a)
    assert bundle["schema"] == SCHEMA == "gpu-runbook/rma/v1"
    g = bundle["gpus"][0]
    assert (g["serial"], g["uuid"], g["pci"], g["index"], g["model"], g["vbios"]) == (
        "unknown", LOST_UUID, LOST_PCI, 5, "unknown", "unknown")
    assert g["seen"] is False and g["remapped_rows"] == "unknown"
    assert {f["kind"] for f in g["findings"]} == {"xid", "gpu_handle_error"}
    assert bundle["gpu_models"] == ["NVIDIA H100 80GB HBM3"] and bundle["driver"]["driver_version"] == "550.90.07"
    assert bundle["slurm_reason"].startswith("gpu-runbook: INC-7: replace GPU (S/N unknown")
    assert "fallen off the bus or lost" in md and "| unknown | %s | %s | 5 |" % (LOST_UUID, LOST_PCI) in md
    assert "- `/srv/inc/report.json`" in md
    json.dumps(bundle)  # JSON-ready


def test_serial_from_the_ledger_names_a_gpu_no_gather_sees_any_more():
    earlier, fresh, facts, plan, outcomes = xid79()
    history = [{"type": "fault", "host": HOST, "pci": LOST_PCI, "serial": "1652221000999", "uuid": LOST_UUID,
                "xid": 79, "when": "2026-11-30T10:00:00+00:00", "incident": "INC-3"},
               {"type": "fault", "host": "gpu-r1-n01", "pci": LOST_PCI, "serial": "OTHER-HOST", "xid": 48}]
    catalog = gpu_catalog([facts], fresh + earlier, history, HOST)
    a = assess(host(fresh), outcomes, plan, False, catalog, earlier)
    assert a["reason"].startswith("replace GPU 1652221000999 at %s" % LOST_PCI)
    bundle, md = rma_bundle(HOST, host(fresh + earlier), facts, history, [], [], "INC-7", NOW, assessment=a)
    assert bundle["gpus"][0]["serial"] == "1652221000999"
    assert bundle["gpus"][0]["history"] == [{"when": "2026-11-30T10:00:00+00:00", "type": "fault", "incident": "INC-3",
                                             "xid": 79}]
    assert "2026-11-30T10:00:00+00:00 fault Xid 79" in md and "OTHER-HOST" not in md


def test_row_remap_failure_names_the_visible_gpu_with_its_memory_state_and_only_its_history():
    bad = gpu_rec(3, "0000:3b:00.0", "1652221000123", "GPU-aaaa", vbios="96.00.89.00.01",
                  remapped_rows={"correctable": 0, "uncorrectable": 512, "pending": False, "failure": True})
    good = gpu_rec(4, "0000:5d:00.0", "1652221000456", "GPU-bbbb")
    fresh = [finding("row_remap_failure", "row remapping failed on GPU 0000:3b:00.0",
                     gpu=gpu_ref("0000:3b:00.0", 3, "GPU-aaaa"), source="nvidia-smi-q.xml:400")]
    history = [{"type": "fault", "host": HOST, "serial": "1652221000123", "xid": 48, "when": "2026-12-01T01:00:00Z"},
               {"type": "remedy", "host": HOST, "serial": "1652221000123", "rung": "gpu_reset", "result": "ok",
                "when": "2026-12-01T01:10:00Z", "incident": "INC-5"},
               {"type": "fault", "host": HOST, "serial": "1652221000456", "xid": 94, "when": "2026-12-01T02:00:00Z"}]
    plan = {"rungs": [{"rung": "drain", "scope": "host", "status": "planned"},
                      {"rung": "rma", "scope": "host", "status": "planned", "target": {"gpus": ["0000:3b:00.0"]}}]}
    facts = facts_of(bad, good)
    a = assess(host(fresh), [{"rung": "drain", "result": "ok"}], plan, False, gpu_catalog([facts], fresh, history, HOST))
    assert a["reason"] == "replace GPU 1652221000123 at 0000:3b:00.0 (row_remap_failure)"
    bundle, md = rma_bundle(HOST, host(fresh), facts, history, [], [], "INC-7", NOW, assessment=a)
    (g,) = bundle["gpus"]
    assert (g["serial"], g["uuid"], g["index"], g["vbios"], g["model"]) == (
        "1652221000123", "GPU-aaaa", 3, "96.00.89.00.01", "NVIDIA H100 80GB HBM3")
    assert g["seen"] is True and g["remapped_rows"]["failure"] is True and g["remapped_rows"]["uncorrectable"] == 512
    assert g["ecc"]["aggregate"]["correctable"] == 3
    assert [(h["type"], h.get("xid"), h.get("rung")) for h in g["history"]] == [("fault", 48, None),
                                                                              ("remedy", None, "gpu_reset")]
    assert "Row remap: correctable 0, failure True, pending False, uncorrectable 512" in md


def test_bad_cable_after_a_restart_names_the_port_its_counters_rate_and_what_kept_rising():
    port = {"device": "mlx5_0", "port": 1, "state": "Active", "phys_state": "LinkUp", "rate_gbps": 400.0,
            "link_layer": "InfiniBand", "counters": {"symbol_error": 4210, "link_downed": 7, "port_rcv_data": 10 ** 12,
                                                     "port_xmit_packets": 99, "port_xmit_wait": 5}}
    fresh = [finding("ib_symbol_errors", "mlx5_0 port 1: 4210 symbol errors", ib=ib_ref("mlx5_0", 1),
                     source="ib-sysfs")]
    outcomes = [{"rung": "drain", "result": "ok"},
                {"rung": "ib_restart", "result": "failed", "escalate": "cable", "changed": True,
                 "message": "counters kept rising over the soak on mlx5_0/1",
                 "still_rising": {"mlx5_0/1": {"symbol_error": 40, "port_rcv_errors": 6}}}]
    plan = {"rungs": [{"rung": "ib_restart", "scope": "host", "status": "planned", "target": {"hcas": ["mlx5_0"]}}]}
    history = [{"type": "remedy", "host": HOST, "port": "mlx5_0/1", "rung": "ib_restart", "result": "ok",
                "when": "2026-12-02T00:00:00Z"}]
    attempts = [{"host": HOST, "incident": "INC-9", "rung": "ib_restart", "argv": ["systemctl", "restart", "openibd"],
                 "result": "ok", "message": "restarted | ports back", "when": "2026-12-03T06:55:00Z"}]
    a = assess(host(fresh), outcomes, plan)
    assert a["escalate"] == "cable" and a["bundle"] is True and a["action"] == "drain"
    assert a["reason"] == ("IB restart failed: counters kept rising over the soak on mlx5_0/1; "
                           "replace the cable of mlx5_0 port 1")
    bundle, md = rma_bundle(HOST, host(fresh), facts_of(ports=[port]), history, attempts, [], "INC-9", NOW,
                            assessment=a, outcomes=outcomes)
    assert bundle["gpus"] == []
    (p,) = bundle["ib_ports"]
    assert (p["device"], p["port"], p["state"], p["phys_state"], p["rate_gbps"]) == ("mlx5_0", 1, "Active", "LinkUp", 400.0)
    assert p["counters"] == {"link_downed": 7, "symbol_error": 4210}  # traffic counters left out
    assert p["still_rising"] == {"symbol_error": 40, "port_rcv_errors": 6}
    assert [h["rung"] for h in p["history"]] == ["ib_restart"]
    assert bundle["attempts"] == [{"when": "2026-12-03T06:55:00+00:00", "rung": "ib_restart",
                                   "argv": ["systemctl", "restart", "openibd"], "result": "ok",
                                   "message": "restarted | ports back"}]
    assert "| 2026-12-03T06:55:00+00:00 | ib_restart | systemctl restart openibd | ok | restarted \\| ports back |" in md


def test_healthy_with_every_rung_ok_resumes():
    outcomes = [{"rung": "drain", "result": "ok", "drained": True}, {"rung": "gpu_reset", "result": "ok"},
                {"rung": "ib_restart", "result": "none"}]
    low = [finding("ib_port_unused", "mlx5_9 port 1 is down and unused", ib=ib_ref("mlx5_9", 1), severity="info")]
    a = assess(host(low), outcomes, {"rungs": [{"rung": "gpu_reset", "status": "planned"}]})
    assert (a["healthy"], a["resume"], a["action"], a["escalate"], a["bundle"]) == (True, True, "resume", None, False)
    assert a["reason"] == "verified healthy"


@pytest.mark.parametrize("outcome,words", [
    ({"rung": "gpu_reset", "result": "refused", "message": "GPU 0000:53:00.0 has 1 compute process: python (pid 4711)"},
     "reset refused: GPU 0000:53:00.0 has 1 compute process: python (pid 4711)"),
    ({"rung": "ib_restart", "result": "failed", "message": "openibd did not come back"},
     "IB restart failed: openibd did not come back"),
])
def test_healthy_now_but_a_rung_refused_or_failed_stays_drained_saying_why(outcome, words):
    a = assess(host([]), [{"rung": "drain", "result": "ok"}, outcome], {})
    assert a["healthy"] is True and a["resume"] is False and a["action"] == "drain" and a["reason"] == words


def test_reboot_only_when_allowed():
    fresh = [finding("gpu_handle_error", "nvidia-smi cannot open GPU 0000:ab:00.0", gpu=gpu_ref(LOST_PCI, 5, None))]
    plan = {"rungs": [{"rung": "reboot", "scope": "host", "status": "planned"}]}
    allowed = assess(host(fresh), [{"rung": "drain", "result": "ok"}], plan, True)
    assert (allowed["action"], allowed["escalate"], allowed["bundle"]) == ("reboot", "reboot", False)
    assert allowed["reason"] == "reboot: 0000:ab:00.0 (gpu_handle_error)"
    refused = assess(host(fresh), [{"rung": "drain", "result": "ok"}], plan, False)
    assert refused["action"] == "drain"
    assert refused["reason"] == "stay drained: needs a reboot (-e allow_reboot=true): 0000:ab:00.0 (gpu_handle_error)"
    # a refused rung next to it: a person looks first, no reboot
    busy = assess(host(fresh), [{"rung": "gpu_reset", "result": "refused", "message": "in use"}], plan, True)
    assert busy["action"] == "drain" and busy["reason"].startswith("reset refused: in use; reboot: ")


def test_a_reboot_fault_that_survives_the_reboot_is_an_rma_and_a_healthy_reboot_resumes():
    # the lemon rule: the same fault after the reboot is the hardware evidence an RMA needs
    fresh = [finding("gpu_handle_error", "nvidia-smi cannot open GPU 0000:ab:00.0", gpu=gpu_ref(LOST_PCI, 5, None))]
    plan = {"rungs": [{"rung": "reboot", "scope": "host", "status": "planned"}]}
    outs = [{"rung": "drain", "result": "ok"}, {"rung": "reboot", "result": "ok", "message": "rebooted"}]
    a = assess(host(fresh), outs, plan, False)
    assert (a["action"], a["escalate"], a["bundle"], a["resume"]) == ("drain", "rma", True, False)
    assert a["reason"] == "replace GPU (S/N unknown, index 5) at 0000:ab:00.0 (gpu_handle_error; still failing after the reboot)"
    # the same fault before any reboot: a reboot, not an RMA
    before = assess(host(fresh), outs[:1], plan, True)
    assert (before["action"], before["escalate"], before["bundle"]) == ("reboot", "reboot", False)
    # a reboot that did not come back is no evidence about the GPU
    failed = assess(host(fresh), [outs[0], dict(outs[1], result="failed")], plan, False)
    assert failed["escalate"] == "reboot" and failed["bundle"] is False
    # back and healthy: resumed
    ok = assess(host([]), outs, plan, False)
    assert ok["resume"] is True and ok["action"] == "resume"


def test_still_sick_without_an_escalation_says_what_is_left_after_what():
    fresh = [finding("ib_link_downed", "mlx5_2 port 1 went down 3 times", ib=ib_ref("mlx5_2", 1))]
    a = assess(host(fresh), [{"rung": "drain", "result": "ok"}, {"rung": "ib_restart", "result": "ok"}], {})
    assert a["resume"] is False and a["escalate"] is None and a["bundle"] is False
    assert a["reason"] == "still ib_network after ib_restart: mlx5_2 port 1 went down 3 times"


def test_no_fresh_analysis_is_not_healthy():
    a = assess({}, [], {})
    assert a["resume"] is False and a["reason"] == "still unknown: no fresh analysis of the host"


def test_attempts_are_this_incident_and_host_without_verify_lines_or_check_mode():
    attempts = [
        {"host": HOST, "incident": "INC-1", "rung": "drain", "argv": ["scontrol", "update"], "result": "ok"},
        {"host": HOST, "incident": "INC-1", "rung": "verify", "result": "failed", "message": "still sick"},
        {"host": HOST, "incident": "INC-1", "rung": "gpu_reset", "result": "ok", "check_mode": True},
        {"host": HOST, "incident": "INC-0", "rung": "gpu_reset", "result": "ok"},
        {"host": "gpu-r1-n01", "incident": "INC-1", "rung": "gpu_reset", "result": "ok"},
        "not a dict", {"host": HOST, "incident": "INC-1", "rung": "gpu_reset", "argv": "nvidia-smi -r", "result": "failed"}]
    b, _ = rma_bundle(HOST, {}, {}, [], attempts, [], "INC-1", NOW, assessment={})
    assert [(a["rung"], a["argv"], a["result"]) for a in b["attempts"]] == [
        ("drain", ["scontrol", "update"], "ok"), ("gpu_reset", [], "failed")]


@pytest.mark.parametrize("args", [
    (None, None, None, None, None, None, None, None),
    ("", "not a host", "no facts", "no history", 42, "paths?", None, "not a time"),
    (HOST, {"findings": ["x", None, {"gpu": "0000:3b:00.0"}, {"ib": {"device": None}}], "verdict": None},
     {"gpu": {"gpus": [None, {"pci": None}, {"index": True}]}, "ib": {"ports": [None, {}]}},
     [None, {"host": HOST}], [{"host": HOST, "argv": [1, None]}], [None, "", "/x"], "INC-1", NOW),
])
def test_partial_or_bad_input_never_raises_and_reads_unknown(args):
    bundle, md = rma_bundle(*args)
    assert bundle["schema"] == SCHEMA and isinstance(md, str) and md.startswith("# RMA: ")
    assert "errors" not in bundle, bundle["errors"]  # read as unknown, not rescued by the guard
    assert bundle["paths"] == (["/x"] if isinstance(args[5], list) else [])
    json.dumps(bundle)
    if args[0] is None:
        assert bundle["host"] == bundle["incident"] == bundle["generated"] == bundle["slurm_reason"] == "unknown"
        assert bundle["driver"] == {"driver_version": "unknown", "cuda_version": "unknown"}


def test_partial_assessment_input_never_raises():
    for analysis, outcomes, plan in [(None, None, None), ("x", "y", "z"), ({"findings": "x"}, [None, 1, {}], {"rungs": "x"}),
                                     ({}, [{"rung": "gpu_reset", "escalate": "rma", "gpus": [None, "x", {"pci": ""}]}],
                                      {"rungs": [{"rung": "rma", "status": "planned", "target": {"gpus": [None, 3]}}]})]:
        a = assess(analysis, outcomes, plan, "yes", None, "bad")
        assert a["resume"] is False and isinstance(a["reason"], str) and a["reason"]
        assert "errors" not in a, a["errors"]


def test_gpu_words_and_markdown_escape_cells():
    assert gpu_words({"serial": "123", "pci": "0000:3b:00.0"}) == "GPU 123 at 0000:3b:00.0"
    assert gpu_words({"index": 2}) == "GPU (S/N unknown, index 2) at unknown PCI address"
    b, _ = rma_bundle(HOST, {}, {}, [], [], [], "INC-1", NOW, reason="a | b\nc", assessment={"reason": "x"})
    assert "| Slurm reason | a \\| b c |" in markdown(b)


class _Unprintable(object):
    def __str__(self):
        raise RuntimeError("no text")


def test_what_cannot_be_read_at_all_stays_on_the_safe_side_with_the_error_named():
    a = assess({"verdict": "healthy", "findings": [{"severity": "critical", "gpu": {"pci": _Unprintable()},
                                                    "rung": "rma"}]}, [], {}, False, None, None)
    assert a["resume"] is False and a["action"] == "drain" and "RuntimeError: no text" in a["reason"]
    b, md = rma_bundle(_Unprintable(), {}, {}, [], [], [], "INC-1", NOW)
    assert b["schema"] == SCHEMA and "RuntimeError" in b["errors"][0] and "## Errors" in md


def test_the_kernel_logs_gpu_map_names_a_gpu_nvidia_smi_no_longer_shows():
    fresh = [finding("gpu_handle_error", "nvidia-smi cannot open GPU %s" % LOST_PCI, gpu=gpu_ref(LOST_PCI, 5, None))]
    earlier_facts = {"kernel_log": {"gpus": {LOST_PCI: {"uuid": LOST_UUID, "serial": "1652221000777"}}}}
    plan = {"rungs": [{"rung": "rma", "status": "planned", "target": {"gpus": [LOST_PCI]}}]}
    a = assess(host(fresh), [], plan, False, gpu_catalog([{}, earlier_facts], fresh, [], HOST))
    assert a["reason"] == "replace GPU 1652221000777 at %s (gpu_handle_error)" % LOST_PCI
    assert a["gpus"][0]["uuid"] == LOST_UUID


def test_ib_restart_outcome_as_the_rung_role_sets_it_names_only_the_failed_port():
    outcome = {"rung": "ib_restart", "result": "failed", "escalate": "cable", "message": "counters still rising",
               "ports": [{"port": "mlx5_0/1", "result": "failed", "line": "mlx5_0/1: failed"},
                         {"port": "mlx5_1/1", "result": "ok", "line": "mlx5_1/1: ok"}],
               "still_rising": {}, "not_back": {}}
    a = assess(host([]), [outcome], {})
    assert a["ports"] == [{"device": "mlx5_0", "port": 1}]
    assert a["reason"].endswith("replace the cable of mlx5_0 port 1")


def test_a_skipped_rung_is_named_when_the_host_is_still_sick():
    fresh = [finding("ib_link_downed", "mlx5_2 port 1 went down", ib=ib_ref("mlx5_2", 1))]
    skipped = {"rung": "ib_restart", "result": "skipped", "message": "rung ib_restart not allowed by the policy"}
    a = assess(host(fresh), [skipped], {})
    assert a["reason"] == "IB restart skipped: rung ib_restart not allowed by the policy"
    assert assess(host([]), [skipped], {})["resume"] is True  # healthy: a skipped rung is no problem


def test_cumulative_counters_on_ports_an_ib_restart_saw_stand_still_are_history():
    """After a restart whose soak saw mlx5_6's counters stand still, their totals (read again by
    the verify's gather) are the flap that was, not a fault of now; another port's are not."""
    flap = finding("ib_link_downed", "mlx5_6/1: port flapping: the link went down 362 times", ib=ib_ref("mlx5_6", 1),
                   severity="critical")
    drain = {"rung": "drain", "result": "ok", "drained": True}
    quiet = {"rung": "ib_restart", "result": "ok", "ports": [{"port": "mlx5_6/1", "result": "ok"}]}
    a = assess(host([flap]), [drain, quiet], {"rungs": [{"rung": "ib_restart", "status": "planned"}]})
    assert (a["healthy"], a["resume"]) == (True, True)
    # without the restart's word for that port, the same totals keep the node drained
    other = dict(quiet, ports=[{"port": "mlx5_2/1", "result": "ok"}])
    for outs in ([drain], [drain, other], [drain, dict(quiet, result="refused")]):
        a = assess(host([flap]), outs, {"rungs": [{"rung": "ib_restart", "status": "planned"}]})
        assert a["resume"] is False, outs
    # a fault that is not a counter (the port is down now) is never settled by the soak
    down = finding("ib_port_down", "mlx5_6/1 has no physical link", ib=ib_ref("mlx5_6", 1), severity="critical")
    assert assess(host([down]), [drain, quiet], {})["resume"] is False


# ---------------------------------------------------------------- hostile values (issue 25)
EVIL = ("x\n## Injected section\r\n<script>alert(1)</script><img src=x onerror=y> [click](http://evil.example) "
        "![t](http://evil.example/p.png) a|b ` code \x1b[31mred\x1b]8;;http://e\x07 \x9b2J \u202egnp.exe\u200b \\ end")


def _evil_bundle():
    row = {"severity": "critical", "kind": EVIL, "xid": EVIL, "message": EVIL, "source": "kern.log`x`" + EVIL,
           "evidence": EVIL}
    hist = {"when": EVIL, "type": EVIL, "incident": EVIL, "xid": EVIL, "kind": EVIL, "rung": EVIL, "result": EVIL}
    gpu = {"what": EVIL, "serial": EVIL, "uuid": EVIL, "pci": EVIL, "index": EVIL, "model": EVIL, "vbios": EVIL,
           "cause": EVIL, "seen": True, "remapped_rows": {"failure": EVIL}, "ecc": {"volatile": EVIL, "aggregate": [EVIL]},
           "retired_pages": EVIL, "findings": [row], "history": [hist]}
    port = {"device": EVIL, "port": EVIL, "state": EVIL, "phys_state": EVIL, "rate_gbps": EVIL, "link_layer": EVIL,
            "counters": {"symbol_error": EVIL}, "still_rising": [EVIL], "findings": [row], "history": [hist]}
    return {"schema": SCHEMA, "generated": EVIL, "host": EVIL, "incident": EVIL, "summary": EVIL, "escalate": EVIL,
            "slurm_reason": EVIL, "verdict": EVIL, "severity": EVIL, "driver": {"driver_version": EVIL, "cuda_version": EVIL},
            "gpu_models": [EVIL], "gpus": [gpu], "ib_ports": [port], "findings": [row],
            "attempts": [{"when": EVIL, "rung": EVIL, "argv": EVIL, "result": EVIL, "message": EVIL}],
            "paths": ["/srv/a`b``c" + EVIL], "errors": [EVIL]}


def test_markdown_shows_hostile_values_as_text():
    md = markdown(_evil_bundle())
    # structure: only our own headings; every line of a table has its columns
    assert not any(line.startswith("## Injected") or line.startswith("<") for line in md.splitlines())
    assert [line for line in md.splitlines() if line.startswith("#")] == [
        line for line in md.splitlines() if line.startswith(("# RMA: ", "## ", "### "))]
    # no HTML, no control or format character, no link or image
    for raw in ("<script", "<img", "\x1b", "\x07", "\x9b", "\u202e", "\u200b", "\r"):
        assert raw not in md, raw
    assert not re.search(r"(?<!\\)[\[\]]", md.replace("## ", "")), "an unescaped bracket makes a link"
    for shown in ("&lt;script&gt;alert(1)&lt;/script&gt;", "(U+001B)[31mred" .replace("[", "\\["), "(U+009B)2J",
                  "(U+202E)gnp.exe(U+200B)", "\\[click\\](http://evil.example)", "a\\|b", "\\` code", "\\\\ end"):
        assert shown in md, shown
    # a table row keeps its 5 columns whatever the message holds: 6 unescaped pipes
    tried = md.split("## What was tried")[1].splitlines()[3]
    assert len(re.findall(r"(?<!\\)\|", tried)) == 6, tried
    # a path or source that holds backticks or HTML is escaped text, not a code span a lax renderer shows raw
    assert "- /srv/a\\`b\\`\\`c" in md and "(kern.log\\`x\\`" in md


def test_hostile_values_through_the_bundle_builder():
    findings = [finding("xid", EVIL, xid=79, rung="reboot", source=EVIL, evidence=EVIL)]
    _b, md = rma_bundle(EVIL, host(findings), {}, [{"host": EVIL, "type": EVIL, "when": EVIL}],
                        [{"host": EVIL, "incident": "INC-1", "rung": EVIL, "message": EVIL}], [EVIL], "INC-1", NOW,
                        reason=EVIL)
    for raw in ("<script", "\x1b", "\u202e", "\n## Injected"):
        assert raw not in md, raw
    assert not re.search(r"(?<!\\)\]\(http", md)
    assert md.startswith("# RMA: ") and "&lt;script&gt;" in md
