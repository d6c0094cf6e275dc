"""What the play registered -> the planner's facts and failure domains (gpu_runbook.plan.inputs),
the role's former per-host Jinja rules, case by case, and through make_plan where a rule decides
whether a rung may run."""

import pytest

from gpu_runbook.findings import finding, gpu_ref
from gpu_runbook.cluster import build_cluster
from gpu_runbook.plan import make_plan
from gpu_runbook.plan.inputs import failure_domains, play_facts, slurm_facts

APPS = [{"pid": 4711, "process": "python", "pci": "0000:3b:00.0"}]
FAILED = {"nvidia-smi-compute-apps.csv": {"ok": False, "kind": "timeout", "error": "no answer in 30 s"}}
FINE = {"nvidia-smi-compute-apps.csv": {"ok": True, "usable": True}}


# ---------------------------------------------------------------- compute processes
@pytest.mark.parametrize("apps, probes, expected", [
    ({"a": APPS}, {}, {"compute_apps": APPS}),                 # gathered: kept as given
    ({"a": []}, {"a": FAILED}, {"compute_apps": []}),          # the list wins over the probe
    ({"a": None}, {"a": FINE}, {"compute_apps": None}),        # null stays null: unreadable
    ({}, {"a": FAILED}, {"compute_apps": None}),               # not gathered, the query failed: unreadable
    ({}, {"a": FINE}, {}),                                     # not gathered, probe fine: absent
    ({}, {}, {}),                                              # capture replay: absent
    ({}, {"a": {"nvidia-smi-compute-apps.csv": {"kind": "x"}}}, {}),  # no "ok": not a failure
    ({}, {"a": "garbage"}, {}),
    ({}, {"a": {"nvidia-smi-compute-apps.csv": None}}, {}),
])
def test_compute_apps_null_means_unreadable_and_absent_means_not_gathered(apps, probes, expected):
    assert play_facts(["a"], apps, probes, {}) == {"a": expected}


# ---------------------------------------------------------------- Slurm
@pytest.mark.parametrize("result, expected", [
    ({"skipped": True, "changed": False}, None),
    ({"failed": True, "msg": "Invalid node name specified"}, {"error": "Invalid node name specified"}),
    ({"failed": True}, {"error": "no answer from slurm_node"}),
    ({"failed": True, "msg": ""}, {"error": "no answer from slurm_node"}),  # an empty message is still an error
    ({"changed": False}, {"error": "no answer from slurm_node"}),   # no state: unknown
    ({"state": "DRAIN", "reason": "gpu-runbook: INC-1: x", "reason_user": "root", "owned": True},
     {"state": "DRAIN", "reason": "gpu-runbook: INC-1: x", "reason_user": "root", "owned": True}),
    ({"state": "IDLE", "reason": None, "owned": False}, {"state": "IDLE", "reason": "", "reason_user": "", "owned": False}),
    # no ownership record: left out, so the planner reads the reason's prefix
    ({"state": "DRAIN", "reason": "admin"}, {"state": "DRAIN", "reason": "admin", "reason_user": ""}),
    (None, {"error": "no answer from slurm_node"}),
    ("garbage", {"error": "no answer from slurm_node"}),
])
def test_slurm_read_becomes_its_state_or_the_error(result, expected):
    assert slurm_facts(result) == expected
    facts = play_facts(["a"], {}, {}, {"a": result})["a"]
    assert facts == ({} if expected is None else {"slurm": expected})


def test_every_play_host_gets_an_entry_and_nothing_else():
    facts = play_facts(["a", "b", 3], {"a": APPS, "zz": APPS}, {"b": FAILED}, {"zz": {"state": "IDLE"}})
    assert facts == {"a": {"compute_apps": APPS}, "b": {"compute_apps": None}}
    assert play_facts(None, None, None, None) == {} and play_facts("ab", {}, {}, {}) == {}


def test_a_thousand_hosts_in_one_pass():
    hosts = ["gpu-%04d" % i for i in range(1000)]
    facts = play_facts(hosts, {h: [] for h in hosts}, {}, {h: {"skipped": True} for h in hosts})
    assert len(facts) == 1000 and all(f == {"compute_apps": []} for f in facts.values())


# ---------------------------------------------------------------- failure domains
GROUPS = {"all": ["a", "b", "c", "x"], "gpu_nodes": ["a", "b", "c"], "rack2": ["b", "c"], "rack1": ["a", "b"],
          "gpu-rack9": ["x"], "racketeers": ["c"], "ungrouped": []}


def test_no_domain_from_a_group_names_prefix_alone():
    # the groups the slurm_nodes plugin or an ini file makes are not failure domains by their names
    assert failure_domains(GROUPS) == {} and failure_domains(GROUPS, []) == {}


def test_named_groups_or_patterns_are_domains_and_count_every_member():
    assert failure_domains(GROUPS, ["rack[0-9]", "gpu-rack*"]) == {"a": "rack1", "b": "rack1", "c": "rack2",
                                                                  "x": "gpu-rack9"}
    assert failure_domains(GROUPS, ["gpu-rack9"]) == {"x": "gpu-rack9"}
    # 'all' and 'ungrouped' are never domains (every host one rack)
    assert failure_domains(GROUPS, ["*"]) == {"x": "gpu-rack9", "a": "gpu_nodes", "b": "gpu_nodes", "c": "gpu_nodes"}
    assert failure_domains(GROUPS, ["all", "ungrouped"]) == {}


def test_a_hosts_own_domain_variable_wins():
    domains = failure_domains(GROUPS, ["rack*"], {"a": "leaf7", "c": " ", "z": "leaf9", "b": 3})
    # a blank or non-text variable is no domain: the group's stands
    assert domains == {"a": "leaf7", "b": "rack1", "c": "rack2", "z": "leaf9"}
    assert failure_domains(None, [], {"n1": "leaf1", "n2": "leaf1"}) == {"n1": "leaf1", "n2": "leaf1"}


@pytest.mark.parametrize("groups, names, own", [(None, ["rack*"], None), ({"rack1": "a"}, ["rack*"], None),
                                                ({"rack1": [1, None]}, ["rack*"], None),
                                                ({"rack1": ["a"]}, "rack*", None), ({"rack1": ["a"]}, [None], []),
                                                ({}, [], {"a": None, 1: "x"})])
def test_bad_groups_names_or_variables_give_no_domain(groups, names, own):
    assert failure_domains(groups, names, own) == {}


# ---------------------------------------------------------------- through the planner
def _xid48_analysis():
    f = finding("xid", "Xid 48 (Double Bit ECC Error) on GPU 0000:3b:00.0", xid=48, rung="gpu_reset",
                gpu=gpu_ref("0000:3b:00.0"), source="kern.log:1", evidence="NVRM: Xid (PCI:0000:3b:00.0): 48")
    results = {"a": {"ansible_facts": {"gpu_health": {"findings": [f], "facts": {}, "probes": {}}}}}
    return build_cluster(results, generated="2026-12-02T07:30:00+00:00")


@pytest.mark.parametrize("apps, probes, slurm, reset, blocker", [
    ({}, {}, {"a": {"skipped": True}}, "planned", None),
    ({"a": APPS}, {}, {"a": {"skipped": True}}, "blocked", "GPU 0000:3b:00.0 has 1 compute process: python (pid 4711)"),
    ({}, {"a": FAILED}, {"a": {"skipped": True}}, "blocked",
     "GPU 0000:3b:00.0: the compute process list is unreadable, so it may be in use"),
    ({}, {}, {"a": {"failed": True, "msg": "slurmctld silent"}}, "blocked", "needs the drain, which is blocked"),
])
def test_the_built_facts_decide_the_reset_as_before(apps, probes, slurm, reset, blocker):
    plan = make_plan(_xid48_analysis(), {"max_drain": 8, "max_drain_percent": 100},
                     facts=play_facts(["a"], apps, probes, slurm))
    r = next(e for e in plan["hosts"][0]["rungs"] if e["rung"] == "gpu_reset")
    assert r["status"] == reset
    assert (blocker in r["blockers"]) if blocker else r["blockers"] == []


# ---------------------------------------------------------------- one host's malformed gather (issue 25)
def test_a_malformed_gather_is_that_hosts_cautious_reading_not_the_plans_failure():
    from gpu_runbook import plan_step
    from gpu_runbook.hostvars import MISSING
    f = finding("xid", "Xid 48 (Double Bit ECC Error) on GPU 0000:3b:00.0", xid=48, rung="gpu_reset",
                gpu=gpu_ref("0000:3b:00.0"), source="kern.log:1", evidence="NVRM: Xid (PCI:0000:3b:00.0): 48")
    analysis = build_cluster({h: {"ansible_facts": {"gpu_health": {"findings": [f], "facts": {}, "probes": {}}}}
                              for h in ("good", "bad")}, generated="2026-12-02T07:30:00+00:00")
    registered = {"good": ({"ansible_facts": {"gpu_health": {"facts": {"compute_apps": []}, "probes": {}}}},
                           {"state": "IDLE", "reason": "", "owned": False}, "leaf1"),
                  "bad": ({"ansible_facts": {"gpu_health": {"facts": {"compute_apps": "4711 python"},
                                                            "probes": "x"}}}, ["IDLE"], ["leaf2"])}

    def value_of(host, var):
        result, slurm, domain = registered[host]
        return {"gpu_health_result": result, "remediation_plan_slurm": slurm, "gpu_runbook_domain": domain}.get(
            var, MISSING)

    gathered = plan_step.gathered_from(["good", "bad"], value_of, "gpu_health_result", "remediation_plan_slurm",
                                       "gpu_runbook_domain")
    assert gathered["domains"] == {"good": "leaf1"}  # a list is no domain
    params = dict(analysis=analysis, facts={}, gathered=gathered, hosts=None, result_var="x", slurm_var="y",
                  domain_groups={}, domain_group_names=[], domain_var="gpu_runbook_domain",
                  policy={"max_drain": 8, "max_drain_percent": 100}, plan_dir=None, confirm=False)
    done = plan_step.run(params)
    rungs = {h: {r["rung"]: r for r in done["by_host"][h]["rungs"]} for h in ("good", "bad")}
    assert rungs["good"]["drain"]["status"] == rungs["good"]["gpu_reset"]["status"] == "planned"
    # the bad host: Slurm state unknown (drain blocked), process list unreadable (reset blocked)
    assert rungs["bad"]["drain"]["status"] == "blocked" and rungs["bad"]["gpu_reset"]["status"] == "blocked"
    assert any("compute process list is unreadable" in b for b in rungs["bad"]["gpu_reset"]["blockers"])
    assert done["plan"]["policy"]["domains"] == {"good": "leaf1"}
