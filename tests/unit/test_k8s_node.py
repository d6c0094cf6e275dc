"""kubectl describe node (k8s_node.py): read by content under any name. GPUs allocatable below
capacity are GPUs NVIDIA's device plugin withdrew as unhealthy (unknown, warning: which Xid or
NVML error, the node's own logs say); a True Xid condition (GKE's XidCriticalError, '{"31":true}')
is each Xid it names, as NVIDIA's catalog reads it; every GPU allocatable is a healthy reading.
The excerpts are kubectl's layout as the fixtures x11-13, x36-06 and x5-011 show it."""

import pytest

from gpu_runbook.cli import analyze_paths
from gpu_runbook.k8s_node import parse_k8s_node

DESCRIBE = ("Name:               gpu-node-07\n"
            "Capacity:\n  cpu:                128\n  memory:             2113276288Ki\n  nvidia.com/gpu:     8\n"
            "  pods:               110\n"
            "Allocatable:\n  cpu:                128\n  memory:             2062682496Ki\n  nvidia.com/gpu:     %d\n"
            "  pods:               110\n")
XID_ROW = ('  XidCriticalError     True    Mon, 23 Jun 2025 18:58:44 +0000   Mon, 23 Jun 2025 18:44:57 +0000   '
           '{"31":true}                  6e43a052-e544-467b-a972-63d7cd2ce80a\n')


def test_gpus_withdrawn_by_the_device_plugin_are_a_warning_of_unknown_cause():
    facts, findings = parse_k8s_node(DESCRIBE % 7, "describe.txt")
    (f,) = findings
    assert (f["kind"], f["category"], f["severity"]) == ("k8s_gpus_unallocatable", "unknown", "warning")
    assert f["counters"] == {"capacity": 8, "allocatable": 7} and f["source"] == "describe.txt:10"
    assert (facts["gpus"], facts["gpus_allocatable"]) == (8, 7)
    facts, findings = parse_k8s_node(DESCRIBE % 8)
    assert findings == [] and facts["gpus"] == 8


def test_a_true_xid_condition_is_each_xid_it_names():
    facts, findings = parse_k8s_node("k describe node gke-p100-kd6j | grep Xid\n" + XID_ROW)
    (f,) = findings
    assert (f["kind"], f["xid"], f["category"]) == ("xid", 31, "application") and f["gpu"] is None
    assert facts["conditions"][0]["type"] == "XidCriticalError"
    # False, or a condition that is not about Xids, says nothing
    assert parse_k8s_node(XID_ROW.replace("True ", "False"))[1] == []
    assert parse_k8s_node(XID_ROW.replace("XidCriticalError", "KernelDeadlock  "))[1] == []


@pytest.mark.parametrize("name", ["describe-node.txt", "paste.txt", "node.yaml"])
def test_it_is_read_by_content_under_any_name(tmp_path, name):
    d = tmp_path / "gpu-node-07"
    d.mkdir()
    (d / name).write_text("$ kubectl describe node gpu-node-07\n" + DESCRIBE % 4)
    (h,) = analyze_paths([str(d)])["hosts"]
    assert (h["verdict"], [f["kind"] for f in h["findings"]]) == ("unknown", ["k8s_gpus_unallocatable"])
    (d / name).write_text(DESCRIBE % 8)
    (h,) = analyze_paths([str(d)])["hosts"]
    assert h["verdict"] == "healthy"


@pytest.mark.parametrize("text", [None, "", "Capacity:\n  nvidia.com/gpu: many\n", XID_ROW.replace('{"31":true}', "{" * 50),
                                  "Allocatable:\n  nvidia.com/gpu: 4\n", DESCRIBE.replace("%d", "x")])
def test_hostile_input_never_raises_and_claims_nothing(text):
    facts, findings = parse_k8s_node(text)
    assert isinstance(facts, dict) and findings == []
