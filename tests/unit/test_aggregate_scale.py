"""The controller's aggregation at fleet size is still right (issue 12 "Scale"; the timing is
tests/benchmarks/bench_aggregate.py's job, not a test's). 2,000 host results made the way
gpu_health_facts makes them in capture mode (load_capture_dir, stream_large_sources,
analyze_host) from the demo rack's captures -- healthy gpu-r3-n01; sick gpu-r3-n03 (Xid 79),
gpu-r3-n05 (mlx5_4 flapping), gpu-r3-n06 (Xid 48, row remap pending) -- each copied to its own
host name, ~1% sick, plus one unreachable host and one whose gather failed, go through the
engine entry the report module calls (diagnose.diagnose, then diagnose.summary)."""

import copy
import os

import pytest

from gpu_runbook.analyze import analyze_host
from gpu_runbook.capture import load_capture_dir, stream_large_sources
from gpu_runbook.diagnose import diagnose, summary
from tests.conftest import REPO

NODES = os.path.join(REPO, "inventory-examples", "demo-captures", "nodes")
SICK = {"gpu-r3-n03": "gpu_hardware", "gpu-r3-n05": "ib_network", "gpu-r3-n06": "gpu_hardware"}
N = 2000


def _gather(name):
    """One host's registered gpu_health_facts result, as the module builds it from captures."""
    sources, _jobs, _ignored = load_capture_dir(os.path.join(NODES, name))
    sources, parsed = stream_large_sources(sources)
    facts = analyze_host(sources, host=name, expected_gpus=8, expected_ib_rate=400, parsed=parsed)
    return {"changed": False, "ansible_facts": {"gpu_health": dict(facts, timings={}, mode="capture")}}


@pytest.fixture(scope="module")
def fleet():
    """(results, {sick host: its template}) for N hosts in racks of 32."""
    templates = {name: _gather(name) for name in ["gpu-r3-n01"] + sorted(SICK)}
    results, sick = {}, {}
    for i in range(N):
        host = "gpu-r%d-n%02d" % (i // 32 + 1, i % 32 + 1)
        tpl = sorted(SICK)[(i // 100) % len(SICK)] if i % 100 == 50 else "gpu-r3-n01"
        result = copy.deepcopy(templates[tpl])
        result["ansible_facts"]["gpu_health"]["host"] = host
        results[host] = result
        if tpl != "gpu-r3-n01":
            sick[host] = tpl
    results["gpu-r99-n01"] = {"unreachable": True, "msg": "Failed to connect to the host via ssh"}
    results["gpu-r99-n02"] = {"failed": True, "msg": "MODULE FAILURE"}
    return results, sick


@pytest.fixture(scope="module")
def analysis(fleet):
    return diagnose(fleet[0], generated="2026-12-03T00:00:00+00:00")


def test_every_host_is_analysed_once(fleet, analysis):
    names = [h["host"] for h in analysis["hosts"]]
    assert len(names) == len(set(names)) == N + 2 == analysis["cluster"]["hosts"]
    assert set(names) == set(fleet[0])


def test_the_sick_hosts_are_named_with_their_own_verdict(fleet, analysis):
    _results, sick = fleet
    assert len(sick) == N // 100
    by_host = {h["host"]: h for h in analysis["hosts"]}
    assert {h for h, v in by_host.items() if v["severity"] == "critical" and h in sick} == set(sick)
    for host, tpl in sick.items():
        assert by_host[host]["verdict"] == SICK[tpl], host
    # the healthy copies stay healthy: 2,000 hosts do not make one of them a suspect
    assert sorted(analysis["cluster"]["healthy"]) == sorted(set(fleet[0]) - set(sick) - {"gpu-r99-n01", "gpu-r99-n02"})


def test_unreachable_is_remediated_and_a_failed_gather_is_not(fleet, analysis):
    _results, sick = fleet
    assert sorted(analysis["cluster"]["remediate"]) == sorted(set(sick) | {"gpu-r99-n01"})
    assert set(analysis["cluster"]["suspects"]) == set(sick) | {"gpu-r99-n01", "gpu-r99-n02"}
    # the most suspect first: every critical host before the merely unknown one
    assert analysis["cluster"]["suspects"][-1] == "gpu-r99-n02"


def test_the_shared_rail_names_exactly_the_hosts_with_that_rail_down(fleet, analysis):
    _results, sick = fleet
    flapping = sorted(h for h, tpl in sick.items() if tpl == "gpu-r3-n05")
    rails = [f for f in analysis["cluster"]["findings"] if f["kind"] == "shared_rail_errors"]
    # mlx5_4, and its PCI function as the kernel's mlx5_core lines name it
    assert "mlx5_4" in [f["ib"]["device"] for f in rails]
    assert [f["name"] for f in rails] == [", ".join(flapping)] * len(rails)


def test_the_workflow_summary_counts_the_fleet(fleet, analysis):
    _results, sick = fleet
    s = summary(analysis)
    assert (s["hosts"], s["critical"], s["healthy"]) == (N + 2, len(sick) + 1, N - len(sick))
    assert sorted(s["verdicts"]) == sorted(set(sick) | {"gpu-r99-n01", "gpu-r99-n02"})
