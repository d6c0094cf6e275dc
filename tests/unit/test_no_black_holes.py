"""No black holes (issue 25, item 5): a node whose GPUs CUDA and NCCL cannot use -- fabric not
ready, NVLink inactive, a GPU missing from the expected count -- is critical and planned for a
drain; one rail erroring over threshold drains its node, with the job-scoped exclusion named as
the next run's mitigation. Healthy captures (non-NVSwitch GPUs, PCIe cards without a bridge)
stay healthy."""

import json

import pytest

from gpu_runbook.analyze import analyze_host
from gpu_runbook.cluster import build_cluster
from gpu_runbook.findings import finding, ib_ref
from gpu_runbook.nvsmi import parse_nvidia_smi, parse_nvidia_smi_q
from gpu_runbook.plan import NEEDS_REBOOT, make_plan
from gpu_runbook.taxonomy import KINDS, RUNG_TABLE
from tests.unit.test_nvsmi import FIX, H100_Q, edit_gpu, load

WIDE = {"max_drain": 8, "max_drain_percent": 100, "max_per_domain": 8}
STATE = "        State                             : %s"
STATUS = "        Status                            : %s"


def plan_for(sources, expected_gpus=None, policy=None):
    h = analyze_host(sources, host="n1", expected_gpus=expected_gpus)
    results = {"n1": {"ansible_facts": {"gpu_health": h}},
               "n2": {"ansible_facts": {"gpu_health": analyze_host({"nvidia-smi-q.txt": load(H100_Q)[0]},
                                                                   host="n2", expected_gpus=8)}}}
    plan = make_plan(build_cluster(results), dict(WIDE, **(policy or {})))
    return h, next(e for e in plan["hosts"] if e["host"] == "n1"), plan


def fabric(text, gpu, state, status):
    text = edit_gpu(text, gpu, STATE % "Completed", STATE % state)
    return edit_gpu(text, gpu, STATUS % "Success", STATUS % status)


def assert_drained_for_a_reboot(entry):
    assert entry["decision"] == "act" and entry["confidence"] == "high", entry
    assert [(r["rung"], r["status"]) for r in entry["rungs"]] == [("drain", "planned"), ("reboot", "blocked")]
    assert entry["final"] == NEEDS_REBOOT


@pytest.mark.parametrize("kind", ["fabric_not_ready", "nvlink_inactive", "gpu_missing"])
def test_fabric_nvlink_gpu_missing_kinds_are_critical_with_a_node_rung(kind):
    row = KINDS[kind]
    assert row["severity"] == "critical" and row["rung"] == "reboot"
    assert RUNG_TABLE[row["rung"]]["scope"] == "host" and row["steps"][0] == "drain_node"


def test_fabric_not_ready_is_critical_and_the_node_is_drained():
    text = fabric(load(H100_Q)[0], 6, "In Progress", "N/A")
    h, entry, plan = plan_for({"nvidia-smi-q.txt": text}, expected_gpus=8)
    f, = [f for f in h["findings"] if f["severity"] != "info"]
    assert (f["kind"], f["severity"], f["gpu"]["index"]) == ("fabric_not_ready", "critical", 6)
    assert "fabricmanager" in f["action"]
    assert_drained_for_a_reboot(entry)
    assert plan["commands"][0]["argv"][:4] == ["scontrol", "update", "NodeName=n1", "State=DRAIN"]
    # with the reboot allowed it is planned after the drain
    _, entry, _ = plan_for({"nvidia-smi-q.txt": text}, 8, {"allow_reboot": True})
    assert [(r["rung"], r["status"]) for r in entry["rungs"]] == [("drain", "planned"), ("reboot", "planned")]


@pytest.mark.parametrize("state,status", [("Completed", "NV_ERR_NVLINK_FABRIC_FAILURE"), ("Not Started", "N/A")])
def test_fabric_state_or_status_not_ready_on_an_nvswitch_gpu(state, status):
    _, findings = parse_nvidia_smi_q(fabric(load(H100_Q)[0], 2, state, status), "q.txt")
    f, = [f for f in findings if f["severity"] != "info"]
    assert (f["kind"], f["severity"], f["gpu"]["index"]) == ("fabric_not_ready", "critical", 2)


@pytest.mark.parametrize("state,status", [("N/A", "N/A"), ("Not Supported", "Success"), ("Not Supported", "N/A"),
                                          ("N/A", "NV_ERR_NOT_SUPPORTED"), ("Completed", "N/A")])
def test_fabric_not_ready_never_on_a_gpu_outside_an_nvswitch_fabric(state, status):
    # NVML: status is only meaningful when the state is Completed; no state = no NVSwitch fabric
    text = load(H100_Q)[0]
    for i in range(8):
        text = fabric(text, i, state, status)
    facts, findings = parse_nvidia_smi_q(text, "q.txt", expected_gpus=8)
    assert not [f for f in findings if f["kind"] == "fabric_not_ready"], findings
    assert facts["count"] == 8


def test_fabric_healthy_pcie_captures_stay_healthy():
    # real captures: RTX 4090 (Fabric N/A / N/A), A10 and the healthy H100 (Completed / Success)
    for case in ("007-gpud-smi-q-rtx4090x8-addressing-unknown-error", "005-gpud-smi-q-h100x8-healthy",
                 "075-telegraf-a100-mig-smi-q-xml-healthy"):
        text = (FIX / case / "nvidia-smi-q.txt").read_text(encoding="utf-8")
        assert not [f for f in parse_nvidia_smi(text, "q.txt")[1] if f["kind"] == "fabric_not_ready"], case


def test_nvlink_inactive_on_an_sxm_board_is_critical_and_the_node_is_drained():
    text, _ = load("019-azure-smi-nvlink-inactive-links")
    h, entry, _ = plan_for({"nvidia-smi.txt": text})
    inactive = [f for f in h["findings"] if f["kind"] == "nvlink_inactive"]
    assert sorted(f["gpu"]["index"] for f in inactive) == [3, 4, 5, 6]
    assert all(f["severity"] == "critical" and "Reseat" in f["action"] for f in inactive)
    assert_drained_for_a_reboot(entry)


def test_nvlink_short_on_a_pcie_card_against_its_peers_is_a_warning_not_a_drain():
    # GPUs 3-6 have fewer links up than the other cards of their model: a bridge missing or loose
    text, _ = load("019-azure-smi-nvlink-inactive-links")
    text = text.replace("Tesla V100-SXM2-32GB", "NVIDIA A100-PCIE-40GB")
    h, entry, _ = plan_for({"nvidia-smi.txt": text})
    inactive = [f for f in h["findings"] if f["kind"] == "nvlink_inactive"]
    assert sorted(f["gpu"]["index"] for f in inactive) == [3, 4, 5, 6]
    assert all(f["severity"] == "warning" and "bridge is missing or loose" in f["message"] for f in inactive)
    assert entry["decision"] == "report_only" and not entry["rungs"]


NVL_PAIR = "".join(
    "GPU %d: NVIDIA H100 NVL (UUID: GPU-%d)\n" % (i, i) + "".join(
        "         Link %d: %s\n" % (n, "<inactive>" if n in (4, 5, 10, 11, 16, 17) else "26.562 GB/s")
        for n in range(18)) for i in (0, 1))


def test_nvlink_inactive_on_bridged_pcie_cards_that_all_have_their_links_is_a_note():
    # x44: an H100 NVL pair joined by its bridges uses 12 of 18 links; the other six read inactive
    h, entry, _ = plan_for({"nvidia-smi.txt": NVL_PAIR})
    inactive = [f for f in h["findings"] if f["kind"] == "nvlink_inactive"]
    assert len(inactive) == 2 and all(f["severity"] == "info" for f in inactive)
    assert h["verdict"] == "healthy" and entry["decision"] == "skip" and not entry["rungs"]


def test_nvlink_inactive_on_an_sxm_board_stays_critical_whatever_its_peers_show():
    h, _entry, _ = plan_for({"nvidia-smi.txt": NVL_PAIR.replace("H100 NVL", "H100 80GB HBM3")})
    assert [f["severity"] for f in h["findings"] if f["kind"] == "nvlink_inactive"] == ["critical"] * 2


def test_gpu_missing_from_the_expected_count_is_high_confidence_and_the_node_is_drained():
    text, _ = load(H100_Q)
    h, entry, _ = plan_for({"nvidia-smi-q.txt": text}, expected_gpus=9)
    f, = [f for f in h["findings"] if f["kind"] == "gpu_missing"]
    assert f["severity"] == "critical" and "8 of 9" in f["message"]
    assert_drained_for_a_reboot(entry)
    assert "RMA" in f["action"]  # reboot first, RMA when it stays missing
    # the expected count met: healthy, nothing planned
    _, entry, _ = plan_for({"nvidia-smi-q.txt": text}, expected_gpus=8)
    assert entry["decision"] == "skip"


def _rail(severity):
    return finding("ib_symbol_errors", "mlx5_1/1: 4321 symbol errors on the link", ib=ib_ref("mlx5_1", 1),
                   severity=severity, source="ib-sysfs.txt:1", evidence="symbol_error: 4321")


def _cluster(findings):
    results = {h: {"ansible_facts": {"gpu_health": {"findings": fs, "facts": {}, "probes": {}}}}
               for h, fs in (("a", findings), ("b", []))}
    return build_cluster(results, generated="2026-12-02T07:30:00+00:00")


def test_one_rail_over_threshold_drains_its_node_and_names_the_exclusion_as_mitigation():
    plan = make_plan(_cluster([_rail("critical")]), WIDE)
    a = next(e for e in plan["hosts"] if e["host"] == "a")
    assert a["decision"] == "act" and [r["rung"] for r in a["rungs"]] == ["drain"]
    drain = a["rungs"][0]
    assert any("NCCL_IB_HCA=^=mlx5_1" in n and "rail_errors=exclude" in n for n in drain["notes"]), drain["notes"]
    # the job's next run is not changed: the node is out of service
    assert plan["job"]["env"] == [] and plan["summary"]["drains"] == 1
    # the exclusion stays available by policy: the node keeps serving, the job leaves the rail out
    kept = make_plan(_cluster([_rail("critical")]), dict(WIDE, rail_errors="exclude"))
    a = next(e for e in kept["hosts"] if e["host"] == "a")
    assert [r["rung"] for r in a["rungs"]] == ["nccl_env"] and kept["job"]["env"] == ["NCCL_IB_HCA=^=mlx5_1"]
    assert kept["summary"]["drains"] == 0


def test_one_rail_below_threshold_is_still_only_excluded_for_the_job():
    plan = make_plan(_cluster([_rail("warning")]), WIDE)
    a = next(e for e in plan["hosts"] if e["host"] == "a")
    assert [r["rung"] for r in a["rungs"]] == ["nccl_env"] and plan["summary"]["drains"] == 0
    assert json.dumps(plan).count("mitigation for the job's next run") == 0
