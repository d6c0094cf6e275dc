"""No black holes, end to end on the emulated cluster: real ansible-playbook over real SSH to 4
namespaced hosts and the real slurmctld/slurmd; n01's fake nvidia-smi says its GPUs' NVSwitch
fabric is not ready (tests/scenarios/fabric-not-ready.yml), so CUDA and NCCL cannot use them.

remediate.yml plans a drain for it (critical, high confidence) and changes nothing without
confirm; with -e confirm=yes it drains the node, which stays drained for the reboot that the
policy does not allow, and leaves the healthy nodes and the GPUs alone."""

import json
import os

import pytest

from tests.cluster.conftest import own_testbed
from tests.cluster.test_cluster_faults import disruptive_calls, node

N = {i: "gpu-r7-n%02d" % i for i in range(1, 5)}
INCIDENT = "INC-FABRIC"
WIDE = ["-e", "max_drain=8", "-e", "max_drain_percent=100", "-e", "max_per_domain=8"]


def remediate(tb, work, tag, *extra):
    plan_dir = os.path.join(work, tag)
    proc = tb.run_ansible(
        "playbooks/remediate.yml", "-l", tb.rack,
        "-e", "gpu_health_expected_gpus=8", "-e", "gpu_health_expected_ib_rate=400",
        "-e", "gpu_health_probe_timeout=5",
        "-e", "gpu_runbook_state_dir=%s/state" % work, "-e", "gpu_runbook_drain_dir=%s/drains" % work,
        "-e", "gpu_runbook_rma_dir=%s/rma" % work, "-e", "gpu_runbook_job_env_dir=%s/job-env" % work,
        "-e", "plan_dir=%s" % plan_dir, "-e", "incident_id=%s" % INCIDENT, "-e", "rung_drain_wait=60",
        *(WIDE + list(extra)), tool="ansible-playbook", timeout=600)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Traceback" not in text, text[-6000:]
    plan = json.load(open(os.path.join(plan_dir, "plan.json")))
    return text, plan


# the full tier (make test-full): the catalogue's fabric-not-ready scenario planned and drained
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def bed(tmp_path_factory):
    with own_testbed("fabric-not-ready", 4) as tb:
        yield tb, str(tmp_path_factory.mktemp("fabric"))


def test_fabric_not_ready_node_is_planned_for_drain_and_drained_with_confirm(bed):
    tb, work = bed
    assert tb.state(N[1])["gpus"][0]["fabric"]["state"] == "In Progress"
    # plan mode: the drain is planned, nothing changes
    _, plan = remediate(tb, work, "plan")
    by = {h["host"]: h for h in plan["hosts"]}
    n01 = by[N[1]]
    assert n01["severity"] == "critical" and n01["confidence"] == "high", n01
    assert "fabric" in n01["evidence"].lower() or "fabric" in n01["reason"].lower(), n01
    assert n01["decision"] == "act" and [(r["rung"], r["status"]) for r in n01["rungs"]] == [
        ("drain", "planned"), ("reboot", "blocked")], n01["rungs"]
    assert all(by[N[i]]["decision"] == "skip" for i in (2, 3, 4)), by
    assert "DRAIN" not in node(tb, N[1])["state"]
    # with confirm: drained, and it stays drained for the reboot the policy does not allow
    _, plan = remediate(tb, work, "act", "-e", "confirm=yes")
    after = node(tb, N[1])
    assert "DRAIN" in after["state"] and after["reason"].startswith("gpu-runbook: %s: " % INCIDENT), after
    assert "needs a reboot (-e allow_reboot=true)" in after["reason"], after["reason"]
    assert "fabric" in after["reason"].lower(), after["reason"]
    assert disruptive_calls(tb, N[1]) == []
    for i in (2, 3, 4):
        assert "DRAIN" not in node(tb, N[i])["state"] and disruptive_calls(tb, N[i]) == []
