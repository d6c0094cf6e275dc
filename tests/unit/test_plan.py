"""The remediation plan (gpu_runbook.plan.make_plan): pure, deterministic, every rule on
real analyses -- the demo rack's captures (Xid 79 on n03, a flapping port on n05, Xid 48
with a pending row remap on n06) and clusters built from real findings."""

import copy
import json
import os

import pytest

from gpu_runbook.analyze import analyze_host
from gpu_runbook.capture import load_capture_dir, stream_large_sources
from gpu_runbook.cli import analyze_paths
from gpu_runbook.cluster import build_cluster
from gpu_runbook.findings import finding, gpu_ref, ib_ref
from gpu_runbook.plan import SCHEMA, make_plan

DEMO = os.path.join(os.path.dirname(__file__), "..", "..", "inventory-examples", "demo-captures", "nodes")
GENERATED = "2026-12-02T07:30:00+00:00"
N03, N05, N06 = "gpu-r3-n03", "gpu-r3-n05", "gpu-r3-n06"
WIDE = {"max_drain": 8, "max_drain_percent": 100}  # caps out of the way


def demo():
    """The demo rack through the real engine: captures -> analyze_host -> build_cluster."""
    results = {}
    for name in sorted(os.listdir(DEMO)):
        sources, _jobs, _ignored = load_capture_dir(os.path.join(DEMO, name))
        sources, parsed = stream_large_sources(sources)
        results[name] = {"ansible_facts": {"gpu_health": analyze_host(sources, parsed=parsed)}}
    return build_cluster(results, generated=GENERATED)


def cluster(hosts, job=None):
    """{host: [findings]} -> analysis, through build_cluster's real cross-host rules."""
    results = {h: {"ansible_facts": {"gpu_health": {"findings": list(fs), "facts": {}, "probes": {}}}}
               for h, fs in hosts.items()}
    return build_cluster(results, job=job, generated=GENERATED)


def rail_errors(dev="mlx5_1", severity="critical"):
    return finding("ib_symbol_errors", "%s/1: 4321 symbol errors on the link" % dev, ib=ib_ref(dev, 1),
                   severity=severity, source="ib-sysfs.txt:1", evidence="symbol_error: 4321")


def xid48(pci="0000:3b:00.0"):
    return finding("xid", "Xid 48 (Double Bit ECC Error) on GPU %s" % pci, xid=48, rung="gpu_reset",
                   gpu=gpu_ref(pci), source="kern.log:1", evidence="NVRM: Xid (PCI:%s): 48" % pci)


def host(plan, name):
    return next(h for h in plan["hosts"] if h["host"] == name)


def rung(plan, name, which):
    return next(r for r in host(plan, name)["rungs"] if r["rung"] == which)


def argvs(plan, name=None):
    return [c["argv"] for c in plan["commands"] if name is None or c["host"] == name]


@pytest.fixture(scope="module")
def rack():
    return demo()


# ---------------------------------------------------------------- the ladder per host
def test_demo_rack_default_policy(rack):
    plan = make_plan(rack)
    assert plan["schema"] == SCHEMA and plan["errors"] == []
    assert plan["incident_id"] == "gr-20261202073000"
    n03 = host(plan, N03)
    assert n03["decision"] == "act"
    assert [r["rung"] for r in n03["rungs"]] == ["drain", "gpu_reset", "reboot"]
    assert rung(plan, N03, "drain")["commands"] == [[
        "scontrol", "update", "NodeName=gpu-r3-n03", "State=DRAIN",
        "Reason=gpu-runbook: gr-20261202073000: " + n03["evidence"]]]
    assert n03["evidence"].startswith("Xid 79 (GPU has fallen off the bus) on GPU 0000:75:00.0")
    # default caps: 10% of 8 hosts -> one node; the most severe, costliest rung first (n03)
    assert plan["summary"]["drains"] == 1
    for other in (N05, N06):
        assert host(plan, other)["decision"] == "blocked"
        assert host(plan, other)["blockers"][0] == \
            "cap: 1 of max 1 nodes already drained (max_drain_percent 10% of 8 hosts)"
        assert argvs(plan, other) == []


def test_xid79_reset_skipped_reboot_not_allowed_stays_drained_for_a_reboot_not_rma(rack):
    # a first Xid 79 is NVIDIA's RESTART_BM: a reboot, not a replacement (an RMA needs evidence)
    plan = make_plan(rack)
    reset = rung(plan, N03, "gpu_reset")
    assert reset["status"] == "skipped" and reset["commands"] == []
    # the words of the one rule the gpu_reset module refuses by (reset_rule.py)
    assert reset["blockers"] == ["GPU 0000:75:00.0: a reset cannot fix Xid 79 (reboot), gpu_fallen_off_bus (reboot): "
                                 "escalate to reboot"]
    reboot = rung(plan, N03, "reboot")
    assert reboot["status"] == "blocked" and reboot["blockers"] == [
        "reboot not allowed here: the node stays drained until it gets one (-e allow_reboot=true)"]
    assert "rma" not in [r["rung"] for r in host(plan, N03)["rungs"]]
    assert host(plan, N03)["final"] == "stay drained: needs a reboot (-e allow_reboot=true)"
    assert host(plan, N03)["after"] is None  # no resume planned for a node that still needs its reboot
    assert not any(a[0] == "nvidia-smi" or a[1] == "reboot" for a in argvs(plan))


def test_reboot_only_when_allowed(rack):
    plan = make_plan(rack, {"allow_reboot": True})
    reboot = rung(plan, N03, "reboot")
    assert reboot["status"] == "planned" and reboot["disruptive"] is True
    # no ASAP, no nextstate: either would clear our DRAIN at boot (scontrol(1)); verify resumes it
    (boot,) = [a for a in argvs(plan, N03) if a[:2] == ["scontrol", "reboot"]]
    assert not [w for w in boot if w == "ASAP" or w.lower().startswith("nextstate")]
    assert boot[2].startswith("Reason=gpu-runbook: ") and boot[-1] == N03
    assert host(plan, N03)["final"] == "verify; resume if healthy and the drain is still ours"
    assert rung(plan, N03, "gpu_reset")["status"] == "skipped"  # still no reset for Xid 79
    assert "rma" not in [r["rung"] for r in host(plan, N03)["rungs"]]
    # allow_reboot alone does not beat an allow-list that leaves reboot out
    plan = make_plan(rack, {"allow_reboot": True, "allowed_rungs": ["drain", "gpu_reset"]})
    assert rung(plan, N03, "reboot")["status"] == "blocked"


def test_xid48_pending_remap_drain_then_reset(rack):
    plan = make_plan(rack, WIDE)
    n06 = host(plan, N06)
    assert n06["decision"] == "act" and [r["rung"] for r in n06["rungs"]] == ["drain", "gpu_reset"]
    reset = rung(plan, N06, "gpu_reset")
    assert reset["scope"] == "gpu" and reset["disruptive"] is True and reset["status"] == "planned"
    assert reset["target"]["gpus"] == [{"pci": "0000:97:00.0", "index": 4, "serial": None,
                                        "uuid": "GPU-e06562a9-f548-bbfd-c81e-b9c68f2f1587",
                                        # what gpu_reset's fault_kinds gets: kinds and xid:N
                                        "kinds": ["xid", "xid:48", "ecc_uncorrectable_volatile",
                                                  "row_remap_pending", "xid:63"]}]
    assert argvs(plan, N06) == [rung(plan, N06, "drain")["commands"][0], ["nvidia-smi", "-r", "-i", "0000:97:00.0"]]
    assert n06["after"]["on_healthy"] == ["scontrol", "update", "NodeName=gpu-r3-n06", "State=RESUME"]


def test_flapping_port_is_drained_then_gets_one_ib_restart_before_the_cable(rack):
    plan = make_plan(rack, WIDE)
    n05 = host(plan, N05)
    # the taxonomy's rung for link errors is drain; a flapping link gets one restart of the IB
    # stack on the drained node (its soak tells a stuck HCA from a cable)
    assert [r["rung"] for r in n05["rungs"]] == ["drain", "ib_restart"]
    restart = rung(plan, N05, "ib_restart")
    assert restart["target"] == {"hcas": ["mlx5_4"]} and restart["status"] == "planned"
    assert any("one try" in n and "cable" in n for n in restart["notes"])
    off = make_plan(rack, dict(WIDE, ib_restart_on_flap=False))
    assert [r["rung"] for r in host(off, N05)["rungs"]] == ["drain"]
    assert rung(plan, N05, "drain")["scope"] == "host" and rung(plan, N05, "drain")["disruptive"] is False
    assert n05["evidence"] == "mlx5_4/1: port flapping: the link went down 37 times since the counters were " \
                              "last cleared; 5 or more is critical"


def test_healthy_hosts_and_hosts_outside_remediate_get_nothing(rack):
    plan = make_plan(rack, WIDE)
    acted = {h["host"] for h in plan["hosts"] if h["rungs"]}
    assert acted == set(rack["cluster"]["remediate"]) == {N03, N05, N06}
    for h in plan["hosts"]:
        if h["host"] in rack["cluster"]["healthy"]:
            assert h["decision"] == "skip" and h["reason"] == "healthy: nothing to do"
    assert {c["host"] for c in plan["commands"]} == {N03, N05, N06}
    # a warning host with a node rung is reported, never acted on
    a = cluster({"a": [finding("hw_slowdown", "GPU 0 clocks slowed down", gpu=gpu_ref("0000:3b:00.0"))]})
    p = make_plan(a)
    assert host(p, "a")["decision"] == "report_only" and host(p, "a")["rungs"] == [] and p["commands"] == []


def test_commands_follow_the_cheapest_first_order(rack):
    plan = make_plan(rack, dict(WIDE, allow_reboot=True))
    order = [(c["host"], c["rung"]) for c in plan["commands"]]
    assert order == [(N03, "drain"), (N03, "reboot"), (N06, "drain"), (N06, "gpu_reset"), (N05, "drain"),
                     (N05, "ib_restart")]


def test_cli_analysis_without_a_cluster_section_plans_the_same_hosts():
    a = analyze_paths([DEMO])
    a.pop("cluster")  # an analysis saved by an older CLI had none: the plan must not need it
    plan = make_plan(a, WIDE)
    assert {h["host"] for h in plan["hosts"] if h["rungs"]} == {N03, N05, N06}
    assert plan["incident_id"].startswith("gr-") and plan["incident_id"] == make_plan(a, WIDE)["incident_id"]


def test_row_remap_failure_skips_the_reset_and_goes_to_rma():
    remap_fail = finding("row_remap_failure", "GPU 0 0000:3b:00.0: row remapping failed",
                         gpu=gpu_ref("0000:3b:00.0", 0, "GPU-abc"))
    plan = make_plan(cluster({"a": [xid48(), remap_fail]}))
    assert [r["rung"] for r in host(plan, "a")["rungs"]] == ["drain", "gpu_reset", "rma"]
    reset = rung(plan, "a", "gpu_reset")
    assert reset["status"] == "skipped" and reset["commands"] == []
    assert "a reset cannot fix row_remap_failure (rma): escalate to RMA" in reset["blockers"][0]
    assert host(plan, "a")["final"] == "stay drained for RMA"


def test_rung_outside_allowed_rungs_is_blocked(rack):
    plan = make_plan(rack, dict(WIDE, allowed_rungs=["drain", "rma"]))
    assert rung(plan, N06, "gpu_reset")["blockers"] == ["rung gpu_reset not allowed by the policy (allowed_rungs)"]
    assert rung(plan, N06, "drain")["status"] == "planned"


# ---------------------------------------------------------------- pre-checks from facts
def test_busy_gpu_blocks_the_reset_and_names_the_processes(rack):
    apps = [{"pid": 4712, "process": "python", "pci": "00000000:97:00.0"},
            {"pid": 4711, "process": "python", "pci": "0000:97:00.0"},
            {"pid": 9, "process": "other", "pci": "0000:3b:00.0"}]
    plan = make_plan(rack, WIDE, {N06: {"compute_apps": apps}})
    reset = rung(plan, N06, "gpu_reset")
    assert reset["status"] == "blocked"
    assert reset["blockers"] == ["GPU 0000:97:00.0 has 2 compute processes: python (pid 4711), python (pid 4712)"]
    assert host(plan, N06)["decision"] == "act"  # the drain still goes ahead
    assert ["nvidia-smi", "-r", "-i", "0000:97:00.0"] not in argvs(plan)
    unreadable = make_plan(rack, WIDE, {N06: {"compute_apps": "nvidia-smi failed"}})
    assert rung(unreadable, N06, "gpu_reset")["status"] == "blocked"
    assert "unreadable" in rung(unreadable, N06, "gpu_reset")["blockers"][0]


def test_admin_drained_host_is_untouched_and_counts_toward_the_cap(rack):
    admin = {"slurm": {"state": "IDLE+DRAIN", "reason": "bad fan, ticket 123", "reason_user": "admin"}}
    plan = make_plan(rack, {"max_drain": 2, "max_drain_percent": 100}, {N03: admin})
    n03 = host(plan, N03)
    assert n03["decision"] == "blocked" and argvs(plan, N03) == []
    assert n03["reason"] == "node already drained by someone else: bad fan, ticket 123 (DRAIN+IDLE, by admin)"
    assert all(r["status"] == "blocked" for r in n03["rungs"])
    assert host(plan, N06)["decision"] == "act"
    assert host(plan, N05)["blockers"][0] == "cap: 2 of max 2 nodes already drained (max_drain)"
    # a healthy admin-drained host: nothing planned, said so
    plan = make_plan(rack, WIDE, {"gpu-r3-n01": admin})
    n01 = host(plan, "gpu-r3-n01")
    assert n01["decision"] == "skip" and n01["rungs"] == [] and "untouched" in n01["reason"]
    assert argvs(plan, "gpu-r3-n01") == []


def test_our_own_drain_is_not_redone(rack):
    ours = {"slurm": {"state": "DRAINED", "reason": "gpu-runbook: gr-1: Xid 48", "reason_user": "root"}}
    plan = make_plan(rack, {"max_drain": 1, "max_drain_percent": 100}, {N06: ours})
    drain = rung(plan, N06, "drain")
    assert drain["status"] == "done" and drain["commands"] == []
    assert argvs(plan, N06) == [["nvidia-smi", "-r", "-i", "0000:97:00.0"]]
    # it holds the one slot: nobody else is drained
    assert host(plan, N03)["decision"] == "blocked" and plan["summary"]["drains"] == 0
    # slurm_node's ownership record decides when it is known: our prefix copied by hand is not ours
    copied = {"slurm": dict(ours["slurm"], owned=False)}
    plan = make_plan(rack, {"max_drain": 1, "max_drain_percent": 100}, {N06: copied})
    assert rung(plan, N06, "drain")["status"] == "blocked"
    assert host(plan, N06)["reason"].startswith("node already drained by someone else: gpu-runbook: gr-1")
    plan = make_plan(rack, {"max_drain": 1, "max_drain_percent": 100}, {N06: {"slurm": dict(ours["slurm"], owned=True)}})
    assert rung(plan, N06, "drain")["status"] == "done"


def test_drained_without_a_known_reason_is_doubt(rack):
    plan = make_plan(rack, dict(WIDE, already_drained=[N06]))
    assert host(plan, N06)["decision"] == "blocked"
    assert "reason unknown" in host(plan, N06)["reason"]


# ---------------------------------------------------------------- caps and correlated failures
def test_already_drained_nodes_elsewhere_count_toward_the_cap(rack):
    plan = make_plan(rack, {"max_drain": 2, "max_drain_percent": 100, "already_drained": ["gpu-r9-n01"]})
    assert plan["summary"]["drains"] == 1 and plan["summary"]["already_drained"] == 1
    assert host(plan, N06)["blockers"][0] == "cap: 2 of max 2 nodes already drained (max_drain)"


def test_per_domain_cap(rack):
    domains = {h["host"]: "rack3" for h in rack["hosts"]}
    plan = make_plan(rack, dict(WIDE, domains=domains))
    assert plan["summary"]["drains"] == 1 and plan["incidents"] == []
    assert host(plan, N06)["blockers"][0] == \
        "cap: 1 of max 1 nodes already drained in failure domain rack3 (max_per_domain)"
    split = dict(domains, **{N06: "rack4"})
    assert make_plan(rack, dict(WIDE, domains=split))["summary"]["drains"] == 2


def test_correlated_failure_in_a_domain_stops_its_drains(rack):
    domains = {N03: "rackA", N05: "rackA", N06: "rackA", "gpu-r3-n07": "rackA"}
    plan = make_plan(rack, dict(WIDE, domains=domains, max_per_domain=4))
    assert [(i["kind"], i["name"], i["hosts"]) for i in plan["incidents"]] == [
        ("failure_domain", "rackA", [N03, N05, N06])]
    assert "3 of 4 hosts in rackA are sick at once" in plan["incidents"][0]["why"]
    assert plan["commands"] == []
    for name in (N03, N05, N06):
        assert host(plan, name)["decision"] == "blocked"
        assert host(plan, name)["reason"].startswith("correlated failure (failure domain rackA)")
    relaxed = make_plan(rack, dict(WIDE, domains=domains, max_per_domain=4, correlated_fraction=0.9))
    assert relaxed["incidents"] == [] and relaxed["summary"]["drains"] == 3


def test_one_rail_sick_on_many_hosts_is_a_network_incident():
    hosts = {"n%d" % i: [rail_errors("mlx5_1")] for i in range(1, 4)}
    hosts["n4"] = [rail_errors("mlx5_1"), finding(
        "xid", "Xid 79 on GPU 0000:3b:00.0", xid=79, rung="reboot", gpu=gpu_ref("0000:3b:00.0"),
        source="kern.log:7", evidence="NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.")]
    hosts["n5"] = []
    plan = make_plan(cluster(hosts), WIDE)  # rail_errors "drain", the default
    assert [(i["kind"], i["name"], i["hosts"]) for i in plan["incidents"]] == [
        ("rail", "mlx5_1", ["n1", "n2", "n3", "n4"])]
    for name in ("n1", "n2", "n3"):
        assert host(plan, name)["decision"] == "blocked"
        assert "correlated failure (rail mlx5_1)" in host(plan, name)["reason"]
    # rail_errors=exclude: a rail that errors with its link up is left out by the job, never a drain
    default = make_plan(cluster(hosts), dict(WIDE, rail_errors="exclude"))
    for name in ("n1", "n2", "n3"):
        assert [r["rung"] for r in host(default, name)["rungs"]] == ["nccl_env"]
    assert default["incidents"] == plan["incidents"] and default["summary"]["drains"] == 1  # n4's GPU
    assert host(plan, "n4")["decision"] == "act"  # its GPU fault still needs the drain
    assert rung(plan, "n4", "gpu_reset")["status"] == "skipped"  # Xid 79 alone: no reset either
    assert "Xid 79" in rung(plan, "n4", "gpu_reset")["blockers"][0]
    assert plan["job"]["env"][0] == "NCCL_IB_HCA=^=mlx5_1"
    # two hosts on one rail are below the threshold: drained as usual (when rails are drained)
    two = make_plan(cluster({"n1": [rail_errors()], "n2": [rail_errors()], "n3": []}), WIDE)
    assert two["incidents"] == [] and two["summary"]["drains"] == 2


# ---------------------------------------------------------------- job-scoped rungs
def test_one_bad_rail_on_a_healthy_node_is_excluded_for_the_job_without_a_drain():
    plan = make_plan(cluster({"a": [rail_errors("mlx5_1")], "b": []}), {"rail_errors": "exclude"})
    a = host(plan, "a")
    assert a["decision"] == "act" and [r["rung"] for r in a["rungs"]] == ["nccl_env"]
    env = rung(plan, "a", "nccl_env")
    assert env["scope"] == "job" and env["env"] == ["NCCL_IB_HCA=^=mlx5_1"] and env["commands"] == []
    assert plan["commands"] == [] and plan["summary"]["drains"] == 0
    assert plan["job"]["env"] == ["NCCL_IB_HCA=^=mlx5_1"]
    # one warning-level counter is medium confidence: enough for the job-scoped exclusion (no node touched)
    # (below the critical threshold the rail is excluded whatever rail_errors says: nothing to drain for)
    medium = make_plan(cluster({"a": [rail_errors("mlx5_1", "warning")], "b": []}))
    a = host(medium, "a")
    assert a["decision"] == "act" and a["confidence"] == "medium" and medium["job"]["env"] == ["NCCL_IB_HCA=^=mlx5_1"]
    # two bad rails are not "one bad rail": reported only
    two = make_plan(cluster({"a": [rail_errors("mlx5_1", "warning"), rail_errors("mlx5_2", "warning")]}))
    assert host(two, "a")["decision"] == "report_only" and two["job"]["env"] == []


def test_retry_exceeded_raises_the_ib_timeout_and_says_where_the_collective_timeout_is():
    f = finding("ib_transport_retries_exceeded", "RDMA requests exhausted their transport retries",
                source="perfquery.txt:3", evidence="NET/IB : Got completion ... retry counter exceeded",
                severity="critical")
    plan = make_plan(cluster({"a": [f]}))
    t = rung(plan, "a", "timeout")
    assert t["scope"] == "job" and t["disruptive"] is False and t["commands"] == []
    assert "NCCL_IB_TIMEOUT=22" in t["env"] and "NCCL_IB_RETRY_CNT=7" in t["env"]
    assert any("4.096 us x 2^22 = 17.2 s" in n for n in t["notes"])
    assert any("init_process_group(timeout=)" in n and "no NCCL_TIMEOUT" in n for n in t["notes"])
    assert not any(v.startswith("NCCL_TIMEOUT") for v in plan["job"]["env"])
    assert host(plan, "a")["decision"] == "act" and plan["commands"] == []
    # the same counter at warning level, one source: medium, still enough for a job-scoped rung
    medium = make_plan(cluster({"a": [dict(f, severity="warning")]}))
    assert host(medium, "a")["decision"] == "act" and "NCCL_IB_TIMEOUT=22" in medium["job"]["env"]


def test_job_findings_give_the_job_its_environment():
    job = {"findings": [finding("nccl_socket_fallback", "NCCL fell back to sockets", source="job.log:1")]}
    plan = make_plan(cluster({"a": [], "b": []}, job=job))
    assert plan["job"]["env"] == ["NCCL_IB_DISABLE=0"]
    assert plan["commands"] == [] and all(h["decision"] == "skip" for h in plan["hosts"])


def test_application_fault_is_reported_nothing_done():
    oom = finding("cuda_oom", "CUDA out of memory on rank 3", source="job.log:9")
    plan = make_plan(cluster({"a": [oom]}))
    assert host(plan, "a")["decision"] == "report_only" and host(plan, "a")["rungs"] == []
    assert plan["commands"] == []


# ---------------------------------------------------------------- determinism, JSON, bad input
def test_same_input_same_plan_and_json_ready(rack):
    facts = {N06: {"compute_apps": [{"pid": 1, "process": "python", "pci": "0000:97:00.0"}]}}
    policy = dict(WIDE, domains={N03: "r1", N05: "r2", N06: "r3"})
    plan = make_plan(rack, policy, facts)
    shuffled = copy.deepcopy(rack)
    shuffled["hosts"].reverse()
    shuffled["cluster"]["remediate"].reverse()
    assert make_plan(shuffled, policy, facts) == plan == make_plan(copy.deepcopy(rack), policy, facts)
    assert json.loads(json.dumps(plan)) == plan
    assert rack == demo()  # the plan never edits its input


@pytest.mark.parametrize("analysis", [None, "x", 42, [], {}, {"hosts": "no"}, {"hosts": [None, 5, {"host": 3}]},
                                      {"hosts": [{"host": "a", "findings": "garbage", "rung": "zz"}]},
                                      {"hosts": [{"host": "a", "findings": [None, {"severity": "critical"}],
                                                  "severity": "critical", "rung": "gpu_reset"}],
                                       "cluster": {"remediate": ["a"]}}])
def test_garbage_analysis_never_raises(analysis):
    plan = make_plan(analysis)
    assert plan["schema"] == SCHEMA and plan["commands"] == []
    json.dumps(plan)
    if not (isinstance(analysis, dict) and isinstance(analysis.get("hosts"), list)):
        assert plan["errors"] and "not a diagnosis" in plan["errors"][0]


@pytest.mark.parametrize("policy,words", [
    ("yes", "policy must be a mapping"), ({"max_drains": 3}, "unknown policy key(s): max_drains"),
    ({"max_drain": -1}, "max_drain must be an integer"), ({"max_drain": True}, "max_drain"),
    ({"allowed_rungs": ["drain", "bogus"]}, "unknown rung(s) bogus"),
    ({"correlated_fraction": 0}, "correlated_fraction"), ({"domains": ["r1"]}, "domains"),
    ({"allow_reboot": "yes"}, "allow_reboot"), ({"incident_id": "a b; rm"}, "incident_id"),
    ({"ib_unit": "openibd; reboot"}, "ib_unit")])
def test_bad_policy_gives_a_plan_that_does_nothing(rack, policy, words):
    plan = make_plan(rack, policy)
    assert plan["commands"] == [] and plan["hosts"] == []
    assert len(plan["errors"]) == 1 and words in plan["errors"][0]


def test_bad_facts_never_raise_and_never_enable_a_step(rack):
    assert "facts must map" in make_plan(rack, WIDE, "x")["errors"][0]
    plan = make_plan(rack, WIDE, {N06: {"slurm": "garbage", "compute_apps": [None]}, N03: 7})
    assert plan["errors"] == []
    assert rung(plan, N06, "gpu_reset")["status"] == "blocked"


def test_incident_id_from_policy_goes_into_the_reason(rack):
    plan = make_plan(rack, {"incident_id": "INC-42"})
    assert rung(plan, N03, "drain")["commands"][0][-1].startswith("Reason=gpu-runbook: INC-42: Xid 79")


def test_symbol_errors_alone_get_no_restart_they_are_the_cable():
    sym = finding("ib_symbol_errors", "mlx5_2/1: symbol errors rising", ib={"device": "mlx5_2", "port": 1},
                  severity="critical", source="perfquery.txt:9", evidence="SymbolErrorCounter:.......4321")
    plan = make_plan(cluster({"a": [sym]}), WIDE)
    assert [r["rung"] for r in host(plan, "a")["rungs"]] == ["drain"]
    # rail_errors=exclude: one rail erroring is excluded for the job, the node keeps serving
    plan = make_plan(cluster({"a": [sym]}), dict(WIDE, rail_errors="exclude"))
    assert [r["rung"] for r in host(plan, "a")["rungs"]] == ["nccl_env"]
    assert plan["job"]["env"] == ["NCCL_IB_HCA=^=mlx5_2"] and plan["summary"]["drains"] == 0


def test_unknown_slurm_state_blocks_the_drain_and_every_rung_after_it(rack):
    facts = {N06: {"slurm": {"error": "slurmctld unreachable: Connection refused"}}}
    plan = make_plan(rack, WIDE, facts)
    n06 = host(plan, N06)
    assert n06["decision"] == "blocked"
    assert rung(plan, N06, "drain")["blockers"] == [
        "Slurm state unknown: slurmctld unreachable: Connection refused: no drain without knowing the node's state"]
    assert rung(plan, N06, "gpu_reset")["status"] == "blocked"
    assert N06 not in {c["host"] for c in plan["commands"]}
    assert host(plan, N03)["decision"] == "act"  # the others are planned as before


# ---------------------------------------------------------------- an approval given beforehand (AWX)
from gpu_runbook.plan import NOT_APPROVED  # noqa: E402 -- kept beside the tests that use it


def test_without_an_approval_nothing_changes(rack):
    assert make_plan(rack, dict(WIDE, approved_hosts=None)) == make_plan(rack, WIDE)
    assert make_plan(rack, WIDE)["policy"]["approved_hosts"] is None


def test_only_approved_hosts_are_acted_on_the_others_are_planned_and_blocked(rack):
    plan = make_plan(rack, dict(WIDE, approved_hosts=[N03, "gpu-r9-n99"]))  # a host not in the plan is harmless
    assert plan["policy"]["approved_hosts"] == ["gpu-r3-n03", "gpu-r9-n99"]
    assert [h["host"] for h in plan["hosts"] if h["decision"] == "act"] == [N03]
    for name in (N05, N06):
        h = host(plan, name)
        assert h["decision"] == "blocked" and h["reason"] == NOT_APPROVED
        assert h["blockers"][0] == NOT_APPROVED and "not in the approved plan" in NOT_APPROVED
        assert all(r["status"] == "blocked" for r in h["rungs"]) and argvs(plan, name) == []
        assert [r["rung"] for r in h["rungs"]] == [r["rung"] for r in host(make_plan(rack, WIDE), name)["rungs"]]
    assert {c["host"] for c in plan["commands"]} == {N03}
    assert plan["summary"]["act"] == 1 and plan["summary"]["blocked"] == 2 and plan["summary"]["drains"] == 1


def test_a_host_outside_the_approval_takes_no_drain_cap(rack):
    # one drain allowed: n03 would take it; approved n06 gets it instead
    assert host(make_plan(rack, {"max_drain": 1, "max_drain_percent": 100}), N06)["decision"] == "blocked"
    plan = make_plan(rack, {"max_drain": 1, "max_drain_percent": 100, "max_per_domain": 8, "approved_hosts": [N06]})
    assert host(plan, N06)["decision"] == "act" and host(plan, N03)["reason"] == NOT_APPROVED
    assert plan["summary"]["drains"] == 1 and {c["host"] for c in plan["commands"]} == {N06}


def test_our_own_drain_outside_the_approval_gets_no_reset(rack):
    ours = {"slurm": {"state": "DRAINED", "reason": "gpu-runbook: gr-1: Xid 48", "reason_user": "root", "owned": True}}
    plan = make_plan(rack, dict(WIDE, approved_hosts=[N03]), {N06: ours})
    assert host(plan, N06)["decision"] == "blocked" and argvs(plan, N06) == []
    assert rung(plan, N06, "gpu_reset")["status"] == "blocked"


def test_an_empty_approval_acts_on_nothing_not_even_the_jobs_environment(rack):
    plan = make_plan(rack, dict(WIDE, approved_hosts=[]))
    assert plan["policy"]["approved_hosts"] == []
    assert plan["summary"]["act"] == 0 and plan["commands"] == []
    assert {h["host"] for h in plan["hosts"] if h["decision"] == "blocked"} == {N03, N05, N06}
    job = {"findings": [finding("nccl_socket_fallback", "NCCL fell back to sockets", source="job.log:1")]}
    plan = make_plan(cluster({"a": [rail_errors("mlx5_1")], "b": []}, job=job),
                     {"approved_hosts": [], "rail_errors": "exclude"})
    a = host(plan, "a")
    assert a["decision"] == "blocked" and a["reason"] == NOT_APPROVED and rung(plan, "a", "nccl_env")["status"] == "blocked"
    assert plan["job"]["env"] == [] and all(r["status"] == "blocked" for r in plan["job"]["rungs"])
    assert any(NOT_APPROVED in r["blockers"] for r in plan["job"]["rungs"] if r["host"] is None)
    # a rail incident excludes its rail for the job only when something is approved
    many = cluster({"n%d" % i: [rail_errors()] for i in range(1, 5)})
    assert make_plan(many, WIDE)["job"]["env"] == ["NCCL_IB_HCA=^=mlx5_1"]
    assert make_plan(many, dict(WIDE, approved_hosts=[]))["job"]["env"] == []


def test_job_scoped_rungs_follow_the_approval_too():
    job = {"findings": [finding("nccl_socket_fallback", "NCCL fell back to sockets", source="job.log:1")]}
    analysis = cluster({"a": [rail_errors("mlx5_1")], "b": [rail_errors("mlx5_2")]}, job=job)
    plan = make_plan(analysis, {"approved_hosts": ["a"], "rail_errors": "exclude"})
    assert host(plan, "a")["decision"] == "act" and host(plan, "b")["decision"] == "blocked"
    assert rung(plan, "b", "nccl_env")["blockers"] == [NOT_APPROVED]
    # a's rail, and the job's own finding (approved with the plan): b's rail stays in use
    assert plan["job"]["env"] == ["NCCL_IB_HCA=^=mlx5_1", "NCCL_IB_DISABLE=0"]


@pytest.mark.parametrize("value", ["gpu-r3-n03", [""], [None], {"gpu-r3-n03": True}])
def test_a_bad_approval_plans_nothing(rack, value):
    plan = make_plan(rack, {"approved_hosts": value})
    assert plan["hosts"] == [] and "approved_hosts" in plan["errors"][0]


def test_hung_job_the_plan_says_which_job_and_what_happens_to_it(rack):
    plan = make_plan(rack, {"hung_job": "requeue", "hung_job_id": "4242"})
    notes = rung(plan, N03, "drain")["notes"]
    assert notes[-1] == ("if job 4242 still holds the node when the wait for DRAINED ends it is requeued (scontrol "
                         "requeue 4242); no other job is touched; a requeue Slurm refuses is reported, never turned "
                         "into a cancel")
    assert plan["policy"]["hung_job"] == "requeue" and plan["policy"]["hung_job_id"] == "4242"
    plan = make_plan(rack, {"hung_job": "cancel", "hung_job_id": 4242})
    assert "it is cancelled (scancel 4242)" in rung(plan, N03, "drain")["notes"][-1]
    plan = make_plan(rack)                                 # default: wait, then give up; nothing said of a job
    assert rung(plan, N03, "drain")["notes"] == [
        "no new jobs start; running jobs finish (DRAINING -> DRAINED); none is cancelled"]


@pytest.mark.parametrize("policy,words", [
    ({"hung_job": "requeue"}, "needs the id of the job that hung (-e job_id=N)"),
    ({"hung_job": "kill", "hung_job_id": "1"}, "hung_job must be 'requeue' or 'cancel'"),
    ({"hung_job": "cancel", "hung_job_id": "42;rm"}, "hung_job_id must be a Slurm job id")])
def test_hung_job_policy_errors_make_a_plan_that_does_nothing(rack, policy, words):
    plan = make_plan(rack, policy)
    assert words in plan["errors"][0] and plan["commands"] == [] and plan["hosts"] == []


def test_the_console_line_of_a_capped_host_says_how_to_raise_the_cap_and_leaves_the_evidence_to_plan_md():
    from gpu_runbook.plan_step import host_line
    h = {"host": "gpu-r3-n06", "decision": "blocked", "evidence": "Xid 48 (Double Bit ECC Error) on GPU 0000:97:00.0",
         "rungs": [{"rung": "drain", "status": "blocked", "commands": [], "env": []}],
         "blockers": ["cap: 1 of max 1 nodes already drained (max_drain_percent 10% of 8 hosts)"], "final": None,
         "reason": None}
    line = host_line(h)
    assert "-e max_drain=N" in line and "-e max_drain_percent=P" in line
    assert "Xid 48" not in line and line.startswith("gpu-r3-n06: BLOCKED | rungs: drain blocked")
