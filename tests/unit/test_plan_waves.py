"""The acting play's waves (plan/waves.py): one node per failure domain per batch, domains side
by side, the plan's priority order kept; and make_plan puts them in the plan."""
from gpu_runbook.plan.waves import act_waves, node_acting


def entry(host, decision="act", scopes=("host",)):
    return {"host": host, "decision": decision, "rungs": [{"rung": "x", "scope": s} for s in scopes]}


def test_two_nodes_of_one_domain_are_never_in_one_wave_and_domains_go_side_by_side():
    entries = [entry("a1"), entry("a2"), entry("b1"), entry("a3"), entry("c1"), entry("b2")]
    domains = {"a1": "rack-a", "a2": "rack-a", "a3": "rack-a", "b1": "rack-b", "b2": "rack-b", "c1": "rack-c"}
    waves = act_waves(entries, domains)
    assert waves == [["a1", "b1", "c1"], ["a2", "b2"], ["a3"]]
    for wave in waves:
        assert len({domains[h] for h in wave}) == len(wave)


def test_unknown_domains_are_their_own_and_job_or_blocked_hosts_are_not_in_any_wave():
    entries = [entry("n1"), entry("n2"), entry("job-only", scopes=("job",)), entry("held", decision="blocked"),
               entry("n3", scopes=("job", "gpu"))]
    assert act_waves(entries, {}) == [["n1", "n2", "n3"]]
    assert act_waves(entries, {"n1": "r", "n3": "r"}) == [["n1", "n2"], ["n3"]]
    assert not node_acting(entries[2]) and not node_acting(entries[3]) and node_acting(entries[4])
    assert act_waves([], {}) == []


def test_make_plan_carries_the_waves_of_its_acting_hosts():
    from gpu_runbook.plan import make_plan
    from tests.unit.test_plan import WIDE, cluster, xid48
    # two sick of a five-node rack (under the correlated share), two per domain allowed
    healthy = {"h%d" % i: [] for i in range(3)}
    domains = dict({h: "rack1" for h in healthy}, a="rack1", b="rack1")
    plan = make_plan(cluster(dict(healthy, a=[xid48()], b=[xid48()])),
                     dict(WIDE, domains=domains, max_per_domain=2))
    acting = [h["host"] for h in plan["hosts"] if h["decision"] == "act"]
    assert sorted(acting) == ["a", "b"]
    assert plan["waves"] == [[acting[0]], [acting[1]]]
    plan = make_plan(cluster(dict(healthy, a=[xid48()], b=[xid48()])), WIDE)
    assert [sorted(w) for w in plan["waves"]] == [["a", "b"]]  # no domain known: side by side
