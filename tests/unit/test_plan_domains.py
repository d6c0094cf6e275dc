"""A correlated failure with no failure domain known (gates.py): the analysed hosts without a
domain are one, so a whole sick rack the inventory cannot name is an incident, not drains up
to the caps."""
from gpu_runbook.cluster import build_cluster
from gpu_runbook.findings import finding, gpu_ref
from gpu_runbook.plan import make_plan
from gpu_runbook.plan.gates import FLEET

GENERATED = "2026-12-02T07:30:00+00:00"


def xid48(pci="0000:3b:00.0"):
    return finding("xid", "Xid 48 (Double Bit ECC Error) on GPU %s" % pci, xid=48, rung="gpu_reset",
                   gpu=gpu_ref(pci), source="kern.log:1", evidence="NVRM: Xid (PCI:%s): 48" % pci)


def fleet(sick, healthy=0):
    hosts = dict(("n%02d" % i, [xid48()]) for i in range(1, sick + 1))
    hosts.update(("h%02d" % i, []) for i in range(1, healthy + 1))
    results = {h: {"ansible_facts": {"gpu_health": {"findings": fs, "facts": {}, "probes": {}}}}
               for h, fs in hosts.items()}
    return build_cluster(results, generated=GENERATED)


def test_eight_of_eight_sick_with_no_domain_known_is_an_incident_not_two_drains():
    plan = make_plan(fleet(8))
    assert [(i["kind"], i["name"], len(i["hosts"]), i["size"]) for i in plan["incidents"]] == [
        ("failure_domain", FLEET, 8, 8)]
    assert plan["incidents"][0]["why"].startswith("correlated: 8 of 8 hosts sick at once")
    assert "not draining beyond the caps: look at the fabric/facility" in plan["incidents"][0]["why"]
    assert plan["commands"] == [] and plan["summary"]["drains"] == 0
    assert all(h["decision"] == "blocked" and h["reason"].startswith("correlated failure (failure domain fleet")
               for h in plan["hosts"])


def test_known_domains_take_over_from_the_fleet():
    a = fleet(8)
    racks = dict(("n%02d" % i, "rack%d" % (i % 4)) for i in range(1, 9))  # two per rack: four domains
    plan = make_plan(a, {"domains": racks, "max_per_domain": 2})
    assert {i["name"] for i in plan["incidents"]} == {"rack0", "rack1", "rack2", "rack3"}
    assert FLEET not in {i["name"] for i in plan["incidents"]}


def test_no_incident_below_the_share_the_minimum_or_within_the_caps():
    # 3 of 10 sick: less than half the fleet -> the caps decide (10% of 10: one drain)
    plan = make_plan(fleet(3, healthy=7))
    assert plan["incidents"] == [] and plan["summary"]["drains"] == 1
    # 2 of 2: two sick hosts sharing nothing known may be chance
    assert make_plan(fleet(2))["incidents"] == []
    # caps wide enough for every sick host are the operator's word
    wide = make_plan(fleet(8), {"max_drain": 8, "max_drain_percent": 100, "max_per_domain": 8})
    assert wide["incidents"] == [] and wide["summary"]["drains"] == 8
    # the share is the policy's: 0.9 of 8 is more than 7 sick
    assert make_plan(fleet(7, healthy=1), {"correlated_fraction": 0.9})["incidents"] == []
    assert make_plan(fleet(7, healthy=1), {"correlated_fraction": 0.8})["incidents"][0]["size"] == 8


def test_hosts_with_a_domain_are_not_counted_in_the_fleet():
    # 4 sick of 8, the 4 healthy ones in known racks: the 4 without a domain are all sick
    a = fleet(4, healthy=4)
    doms = dict(("h%02d" % i, "rack%d" % i) for i in range(1, 5))
    inc = make_plan(a, {"domains": doms})["incidents"]
    assert [(i["name"], i["size"], len(i["hosts"])) for i in inc] == [(FLEET, 4, 4)]
    # with no domain known at all the fleet is 8 (4 of 8: half), or 9 (4 of 9: under half)
    assert make_plan(a)["incidents"][0]["size"] == 8
    assert make_plan(fleet(4, healthy=5))["incidents"] == []
