"""Host verdict and the cross-host cluster view."""

from gpu_runbook.cluster import build_cluster
from gpu_runbook.findings import finding
from gpu_runbook.verdict import host_verdict
from gpu_runbook.xid_catalog import lookup


def f(cat, sev, rung="none", kind="job_culprit", xid=None):
    """A finding of a per-finding-rung kind, so the verdict rules can be tested in isolation."""
    return finding(kind, "m", category=cat, severity=sev, rung=rung, xid=xid)


def xid(code, **kw):
    """An Xid finding exactly as the kernel-log parser builds it from the catalog."""
    e = lookup(code)
    return finding("xid", "Xid %d" % code, xid=code, category=e["category"], severity=e["severity"],
                   rung=e["rung"], steps=e.get("steps"), note=e.get("note"), **kw)


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


def test_the_verdict_never_invents_a_rung_its_findings_do_not_name():
    v = host_verdict([f("unknown", "critical")])
    assert v["rung"] == "none"


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
    # a module that failed is a problem to look at, not a sick node: never remediated
    assert (by["broken"]["severity"], by["broken"]["rung"]) == ("warning", "none")
    assert a["cluster"]["remediate"] == ["dead"]


def test_no_host_answering_is_the_controllers_problem_not_a_dead_fleet():
    a = build_cluster({h: {"unreachable": True, "msg": "Permission denied (publickey)"} for h in ("a", "b", "c")})
    assert a["cluster"]["remediate"] == []
    assert {h["findings"][0]["kind"] for h in a["hosts"]} == {"unreachable_everywhere"}
    assert all(h["severity"] == "warning" for h in a["hosts"])


def test_same_application_xid_on_every_host_points_at_the_application():
    res = {h: _res([xid(31)]) for h in ("a", "b", "c")}
    a = build_cluster(res)
    assert all(h["verdict"] == "application" and h["rung"] == "fix_application" for h in a["hosts"])
    assert a["cluster"]["findings"][0]["kind"] == "xid_on_every_host"
    # the host's own Xid finding is untouched by the rule
    assert all(h["findings"][0] == res[h["host"]]["ansible_facts"]["gpu_health"]["findings"][0] for h in a["hosts"])


def test_hardware_xid_on_several_hosts_stays_hardware_with_its_own_rung():
    """Xid 63 (a row remap) on two hosts is two GPUs to reset, never 'application ... gpu_reset'."""
    e = lookup(63)
    a = build_cluster({"a": _res([xid(63)]), "b": _res([xid(63)])})
    for h in a["hosts"]:
        assert (h["verdict"], h["rung"]) == (e["category"], e["rung"])
        assert all(f["category"] == e["category"] for f in h["findings"])
    assert not any(f["kind"] == "xid_on_every_host" for f in a["cluster"]["findings"])


def test_verdict_rung_and_action_always_agree():
    """Whatever the rules add, the host's rung is the rung of one of its findings and that
    finding's action performs it."""
    a = build_cluster({"a": _res([xid(79)]), "b": _res([xid(63), xid(31)]), "c": _res([xid(31)])})
    for h in a["hosts"]:
        if h["rung"] == "none":
            continue
        owners = [x for x in h["findings"] if x["rung"] == h["rung"]]
        assert owners, h
        from gpu_runbook.taxonomy import rung_of_steps
        assert all(rung_of_steps(x["steps"]) == h["rung"] for x in owners)


def _with(findings, timings=None):
    r = _res(findings)
    r["ansible_facts"]["gpu_health"]["timings"] = timings or {}
    return r


def test_one_throttled_host_among_peers_is_a_straggler():
    slow = finding("hw_slowdown", "GPU 3 clocks are held down", evidence="HW Slowdown : Active",
                   source="nvidia-smi-q.xml:9")
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
        return finding("ib_symbol_errors", "m", ib={"device": dev, "port": 1}, severity="critical")
    a = build_cluster({"a": _res([ibf("mlx5_3")]), "b": _res([ibf("mlx5_3")]), "c": _res([ibf("mlx5_5")]),
                       "d": _res([])})
    rails = [f for f in a["cluster"]["findings"] if f["kind"] == "shared_rail_errors"]
    assert len(rails) == 1 and rails[0]["ib"]["device"] == "mlx5_3"
    by = {h["host"]: h for h in a["hosts"]}
    # the hosts on that rail get a finding of their own; their link findings stay as they were
    for name in ("a", "b"):
        (rail,) = [x for x in by[name]["findings"] if x["kind"] == "shared_rail_errors"]
        assert "leaf switch" in rail["action"] and rail["ib"]["device"] == "mlx5_3"
        assert [x for x in by[name]["findings"] if x["kind"] == "ib_symbol_errors"] == [ibf("mlx5_3")]
    assert not any(x["kind"] == "shared_rail_errors" for x in by["c"]["findings"])


def test_a_host_whose_probes_all_failed_is_unknown_never_healthy():
    from gpu_runbook.analyze import analyze_host
    err = {"error": "exit 1: boom", "kind": "failed", "cmd": "x", "rc": 1, "text": ""}
    h = analyze_host({"nvidia-smi-compute-apps.csv": dict(err), "ib-sysfs.txt": "",
                      "kern.log": {"error": "dmesg: read kernel buffer failed: Operation not permitted",
                                   "kind": "denied", "cmd": "dmesg -T"}}, host="n1")
    assert h["verdict"] == "unknown" and h["severity"] == "warning"
    kinds = {f["kind"] for f in h["findings"]}
    assert "no_evidence" in kinds and "kernel_log_unavailable" in kinds
    # with one usable source it is judged on that source
    h = analyze_host({"kern.log": "[ 1.0] Linux version 6.8.0\n", "ib-sysfs.txt": ""}, host="n1")
    assert not any(f["kind"] == "no_evidence" for f in h["findings"])
