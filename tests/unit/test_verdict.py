"""Host verdict and the cross-host cluster view."""

from gpu_runbook.cluster import build_cluster
from gpu_runbook.findings import make_finding
from gpu_runbook.verdict import host_verdict


def f(cat, sev, rung="none", kind="k", xid=None):
    return make_finding(cat, sev, kind, "m", "a", rung=rung, xid=xid)


def test_no_serious_findings_is_healthy():
    v = host_verdict([f("unknown", "info")])
    assert (v["verdict"], v["severity"], v["rung"]) == ("healthy", "info", "none")


def test_gpu_beats_ib_at_equal_severity_suspicion_order():
    v = host_verdict([f("ib_network", "critical", "ib_restart"), f("gpu_hardware", "critical", "gpu_reset")])
    assert v["verdict"] == "gpu_hardware" and v["rung"] == "gpu_reset"


def test_severity_beats_suspicion_order():
    v = host_verdict([f("gpu_hardware", "warning", "gpu_reset"), f("ib_network", "critical", "ib_restart")])
    assert v["verdict"] == "ib_network" and v["severity"] == "critical"


def test_costliest_rung_within_the_verdict_wins():
    v = host_verdict([f("gpu_hardware", "critical", "gpu_reset"), f("gpu_hardware", "critical", "rma")])
    assert v["rung"] == "rma"


def test_critical_hardware_without_specific_fix_is_drained():
    v = host_verdict([f("unknown", "critical")])
    assert v["rung"] == "drain"


def _res(findings):
    return {"ansible_facts": {"gpu_health": {"host": "x", "verdict": "", "severity": "", "rung": "",
                                             "findings": findings, "facts": {}, "probes": {}}}}


def test_unreachable_and_failed_hosts_are_prime_suspects():
    a = build_cluster({
        "ok1": _res([]),
        "dead": {"unreachable": True, "msg": "Failed to connect to the host via ssh"},
        "broken": {"failed": True, "msg": "MODULE FAILURE"},
    })
    by = {h["host"]: h for h in a["hosts"]}
    assert by["dead"]["severity"] == "critical" and by["dead"]["findings"][0]["kind"] == "host_unreachable"
    assert by["broken"]["findings"][0]["kind"] == "gather_failed"
    assert set(a["cluster"]["suspects"]) == {"dead", "broken"}
    assert a["cluster"]["healthy"] == ["ok1"]


def test_same_xid_on_every_host_points_at_the_application():
    res = {h: _res([f("gpu_hardware", "warning", "gpu_reset", kind="xid", xid=31)]) for h in ("a", "b", "c")}
    a = build_cluster(res)
    assert all(h["verdict"] == "application" for h in a["hosts"])
    assert a["cluster"]["findings"][0]["kind"] == "xid_on_every_host"
    # the same Xid on one host only stays that host's hardware problem
    res["c"] = _res([])
    a = build_cluster(res)
    by = {h["host"]: h for h in a["hosts"]}
    assert by["a"]["verdict"] == "gpu_hardware" and by["c"]["verdict"] == "healthy"


def _with(findings, timings=None):
    r = _res(findings)
    r["ansible_facts"]["gpu_health"]["timings"] = timings or {}
    return r


def test_one_throttled_host_among_peers_is_a_straggler():
    slow = make_finding("gpu_hardware", "warning", "hw_slowdown", "GPU 3 clocks are held down", "a",
                        evidence="HW Slowdown : Active", source="nvidia-smi-q.xml:9", rung="drain")
    res = {"n%d" % i: _with([]) for i in range(1, 6)}
    res["n4"] = _with([slow])
    a = build_cluster(res)
    by = {h["host"]: h for h in a["hosts"]}
    assert any(f["kind"] == "straggler" for f in by["n4"]["findings"])
    assert [f["kind"] for f in a["cluster"]["findings"]] == ["straggler"]
    assert not any(f["kind"] == "straggler" for h in a["hosts"] if h["host"] != "n4" for f in h["findings"])
    # the whole rack throttled is a facility problem, not a straggler
    a = build_cluster({"n%d" % i: _with([dict(slow)]) for i in range(1, 6)})
    assert not any(f["kind"] == "straggler" for f in a["cluster"]["findings"])


def test_slow_nvidia_smi_marks_a_straggler():
    res = {"n%d" % i: _with([], {"nvidia_smi": 0.8}) for i in range(1, 6)}
    res["n2"] = _with([], {"nvidia_smi": 14.0})
    a = build_cluster(res)
    assert a["cluster"]["suspects"] == ["n2"]
    assert "nvidia-smi took 14.0 s" in a["hosts"][0]["findings"][0]["message"]
    res["n2"] = _with([], {"nvidia_smi": 6.0})  # slow-ish under a loaded controller: not a straggler
    assert build_cluster(res)["cluster"]["suspects"] == []


def test_same_rail_on_two_hosts_points_at_the_switch():
    def ibf(dev):
        return make_finding("ib_network", "critical", "ib_symbol_errors", "m", "Reseat the cable.",
                            ib={"device": dev, "port": 1}, rung="ib_restart")
    a = build_cluster({"a": _res([ibf("mlx5_3")]), "b": _res([ibf("mlx5_3")]), "c": _res([ibf("mlx5_5")]),
                       "d": _res([])})
    rails = [f for f in a["cluster"]["findings"] if f["kind"] == "shared_rail_errors"]
    assert len(rails) == 1 and rails[0]["ib"]["device"] == "mlx5_3"
    by = {h["host"]: h for h in a["hosts"]}
    assert "leaf switch" in by["a"]["findings"][0]["action"]
    assert "leaf switch" not in by["c"]["findings"][0]["action"]
