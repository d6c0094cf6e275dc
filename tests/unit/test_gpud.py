"""GPUd's health states (leptonai/gpud): read by their keys, cut or whole, under any file name."""

import json

import pytest

from gpu_runbook.cli import analyze_paths
from gpu_runbook.findings import CATEGORIES
from gpu_runbook.gpud import parse_gpud
from gpu_runbook.gpud_components import COMMIT, COMPONENTS, HEALTH


def states(component, health, reason):
    return json.dumps([{"component": component, "states": [
        {"time": "2025-11-20T04:46:02Z", "component": component, "name": component, "health": health,
         "reason": reason, "extra_info": {"data": "{}"}}]}], indent=2)


def test_the_generated_components_carry_their_provenance():
    assert len(COMMIT) == 40 and int(COMMIT, 16) >= 0
    assert [h[1] for h in HEALTH] == ["Healthy", "Unhealthy", "Degraded", "Initializing"]
    names = [c[0] for c in COMPONENTS]
    assert len(names) == len(set(names)) and "accelerator-nvidia-fabric-manager" in names
    assert all(c[1].startswith("components/") and c[1].endswith("/component.go") and c[2] > 0 and c[3] in CATEGORIES
               for c in COMPONENTS)


@pytest.mark.parametrize("name", ["gpud-states.json", "notes.txt"])
def test_an_unhealthy_component_is_its_category_and_a_cut_paste_is_still_read(tmp_path, name):
    text = states("accelerator-nvidia-fabric-manager", "Unhealthy",
                  "NVIDIA-H100-80GB-HBM3 checked fabric state; fabric manager found but not active")
    (tmp_path / name).write_text(text[:text.index('"extra_info"')])  # cut mid-object, as pastes are
    (h,) = analyze_paths([str(tmp_path)])["hosts"]
    assert (h["verdict"], h["severity"]) == ("driver", "critical")
    (f,) = [f for f in h["findings"] if f.get("name") == "GPUd"]
    assert "fabric manager found but not active" in f["message"] and f["source"].endswith(name + ":9")  # the "health" line


def test_healthy_states_are_a_reading_and_degraded_is_a_warning():
    facts, findings = parse_gpud(states("accelerator-nvidia-ecc", "Healthy", "no ECC errors"))
    assert facts["states"] == [{"component": "accelerator-nvidia-ecc", "health": "Healthy", "reason": "no ECC errors"}]
    assert findings == []
    facts, findings = parse_gpud(states("accelerator-nvidia-infiniband", "Degraded", "ib port mlx5_3 down"))
    assert [(f["category"], f["severity"]) for f in findings] == [("ib_network", "warning")]


@pytest.mark.parametrize("xid,category", [(79, "gpu_hardware"), (119, "driver")])
def test_an_xid_state_takes_the_xids_category_from_nvidias_catalog(xid, category):
    facts, findings = parse_gpud(states("accelerator-nvidia-error-xid", "Unhealthy",
                                        "XID %d detected on GPU 0000:9b:00.0" % xid))
    (f,) = findings
    assert (f["category"], f["xid"]) == (category, xid)


def test_a_component_gpud_does_not_name_is_unknown_and_nothing_is_no_reading():
    facts, findings = parse_gpud(states("custom-plugin-raid", "Unhealthy", "raid degraded"))
    assert [(f["category"], f["severity"]) for f in findings] == [("unknown", "critical")]
    assert parse_gpud("not gpud at all") == ({}, [])


# its fabric-manager component's reason (component.go: ProductName() + " with unhealthy fabric state: " +
# report.Reason; fabric_state.go: "GPU <uuid>: <issues>" joined by "; ")
NOT_SUPPORTED = ("NVIDIA-H100-PCIe with unhealthy fabric state: GPU GPU-8ca5630b-8911-2e29-513a-869117d22eaa: "
                 "state=Not Supported; GPU GPU-b52a020b-b703-61ba-e7c7-8b25ab6de799: state=Not Supported\n")
NOT_READY = ("NVIDIA H100 80GB HBM3 with unhealthy fabric state: GPU GPU-0: state=Not Supported; GPU GPU-1: "
             "state=In Progress, status=Unknown Error\n")


def test_a_fabric_state_not_supported_on_every_gpu_is_no_fabric_any_other_is_the_fabric_not_ready(tmp_path):
    _facts, (f,) = parse_gpud(NOT_SUPPORTED)
    assert f["kind"] == "fabric_not_ready" and f["severity"] == "info" and "2 GPU(s)" in f["message"]
    _facts, (f,) = parse_gpud(NOT_READY)
    assert f["kind"] == "fabric_not_ready" and f["severity"] == "critical" and "In Progress" in f["message"]
    # a line of its own is read by its content, under any name; inside gpud's JSON state, the same reading
    (tmp_path / "notes.txt").write_text(NOT_SUPPORTED)
    (h,) = analyze_paths([str(tmp_path / "notes.txt")])["hosts"]
    assert h["verdict"] == "healthy"
    state = json.dumps([{"component": "accelerator-nvidia-fabric-manager", "states": [{
        "component": "accelerator-nvidia-fabric-manager", "name": "accelerator-nvidia-fabric-manager",
        "health": "Unhealthy", "reason": NOT_READY.strip()}]}], indent=2)
    _facts, (f,) = parse_gpud(state)
    assert f["severity"] == "critical" and f["kind"] == "fabric_not_ready"
