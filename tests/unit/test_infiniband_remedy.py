"""The remedy an IB finding calls for follows what the port says (issue 7): no physical link,
a degraded rate or climbing physical error counters -> drain and check the cable; the
physical link up but the port not Active -> software (subnet manager, driver) -> restart
openibd. Also: every kind the IB parsers emit is declared, and the guard holds."""

import os

import pytest

from gpu_runbook import infiniband as ib
from gpu_runbook.infiniband import ports as ib_ports
from gpu_runbook.taxonomy import KINDS, RUNG_RANK, action_text, kinds_ib

HERE = os.path.dirname(os.path.abspath(__file__))
IBFIX = os.path.join(os.path.dirname(HERE), "fixtures", "ib")
ROOT = "/sys/class/infiniband"

# From the IB spec, not from the code under test: the physical states in which a port has
# no working link, and the counters that count physical-layer errors.
NO_LINK = ("Polling", "Disabled", "Sleep", "PortConfigurationTraining", "LinkErrorRecovery")
PHYS_NUM = {"Sleep": 1, "Polling": 2, "Disabled": 3, "PortConfigurationTraining": 4, "LinkUp": 5,
            "LinkErrorRecovery": 6}
PHYSICAL_COUNTERS = ("symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors",
                     "local_link_integrity_errors")


def sysfs(n=8, special=None, counters=None, link_layer="InfiniBand"):
    """grep -H . output for n single-port 400G HCAs; special[dev] overrides files."""
    out = []
    for i in range(n):
        dev = "mlx5_%d" % i
        files = {"state": "4: ACTIVE", "phys_state": "5: LinkUp", "rate": "400 Gb/sec (4X NDR)",
                 "link_layer": link_layer}
        files.update((special or {}).get(dev, {}))
        out += ["%s/%s/ports/1/%s:%s" % (ROOT, dev, k, v) for k, v in files.items() if v is not None]
        out += ["%s/%s/ports/1/counters/%s:%d" % (ROOT, dev, c, v)
                for c, v in sorted(((counters or {}).get(dev) or {}).items())]
    return "\n".join(out) + "\n"


def serious(findings):
    return [f for f in findings if f["severity"] in ("warning", "critical")]


def is_cable_remedy(f):
    return f["rung"] == "drain" and "check_cable" in f["steps"] and "restart_openibd" not in f["steps"]


# ------------------------------------------------------------------ port state: cable vs software

def test_polling_port_is_sent_to_the_cable_not_to_openibd():
    text = sysfs(special={"mlx5_3": {"state": "1: DOWN", "phys_state": "2: Polling"}})
    (f,) = serious(ib.parse_ib_sysfs(text)[1])
    assert (f["kind"], f["ib"]["device"], f["rung"]) == ("ib_port_down", "mlx5_3", "drain")
    assert is_cable_remedy(f)
    assert "cable" in f["action"].lower() and "openibd" not in f["action"]


@pytest.mark.parametrize("phys", ["Polling", "Disabled", "Sleep", "PortConfigurationTraining", "LinkErrorRecovery"])
def test_every_state_without_a_physical_link_is_the_cable(phys):
    text = sysfs(special={"mlx5_1": {"state": "1: DOWN", "phys_state": "%d: %s" % (PHYS_NUM[phys], phys)}})
    (f,) = serious(ib.parse_ib_sysfs(text)[1])
    assert f["kind"] == "ib_port_down" and is_cable_remedy(f), f


def test_down_port_without_physical_state_is_the_cable():
    # plain ibv_devinfo prints no phys_state: a Down port is a missing link partner
    text = sysfs(special={"mlx5_2": {"state": "1: DOWN", "phys_state": None}})
    (f,) = serious(ib.parse_ib_sysfs(text)[1])
    assert f["kind"] == "ib_port_down" and is_cable_remedy(f)


@pytest.mark.parametrize("state", ["2: INIT", "3: ARMED", "1: DOWN"])
def test_link_up_but_not_active_is_software_openibd(state):
    text = sysfs(special={"mlx5_0": {"state": state, "phys_state": "5: LinkUp"}})
    (f,) = serious(ib.parse_ib_sysfs(text)[1])
    assert (f["kind"], f["rung"]) == ("ib_port_not_active", "ib_restart")
    assert "restart_openibd" in f["steps"] and "check_subnet_manager" in f["steps"]
    assert "check_cable" not in f["steps"]
    assert "not the cable" in f["message"] or "subnet manager" in f["message"]


def test_ibstat_polling_and_init_ports_get_different_remedies():
    def ca(dev, state, phys):
        return ["CA '%s'" % dev, "\tCA type: MT4129", "\tPort 1:", "\t\tState: %s" % state,
                "\t\tPhysical state: %s" % phys, "\t\tRate: 400", "\t\tLink layer: InfiniBand"]
    lines = ca("mlx5_0", "Active", "LinkUp") + ca("mlx5_1", "Down", "Polling") + ca("mlx5_2", "Initializing", "LinkUp")
    findings = serious(ib.parse_ibstat("\n".join(lines) + "\n")[1])
    got = {f["ib"]["device"]: (f["kind"], f["rung"]) for f in findings}
    assert got == {"mlx5_1": ("ib_port_down", "drain"), "mlx5_2": ("ib_port_not_active", "ib_restart")}


def test_roce_port_remedy_follows_the_physical_state():
    disabled = sysfs(n=4, link_layer="Ethernet", special={"mlx5_3": {"state": "1: DOWN", "phys_state": "3: Disabled"}})
    (f,) = serious(ib.parse_ib_sysfs(disabled)[1])
    assert f["kind"] == "roce_port_down" and is_cable_remedy(f)
    link_up = sysfs(n=4, link_layer="Ethernet", special={"mlx5_3": {"state": "1: DOWN", "phys_state": "5: LinkUp"}})
    (f,) = serious(ib.parse_ib_sysfs(link_up)[1])
    assert (f["kind"], f["rung"]) == ("roce_port_not_active", "ib_restart")


def test_degraded_rate_is_the_cable():
    text = sysfs(special={"mlx5_5": {"rate": "200 Gb/sec (2X NDR)"}})
    (f,) = ib.parse_ib_sysfs(text)[1]
    assert f["kind"] == "ib_link_degraded" and is_cable_remedy(f)


def test_iblinkinfo_could_be_is_the_cable_and_init_is_the_subnet_manager():
    text = ('Switch: 0x0002c90200000001 leaf1:\n'
            '  4    1[  ] ==( 4X 25.78125 Gbps Active/  LinkUp)==>  0x1   5    1[  ] "gpu01 mlx5_0" '
            '( Could be 4X 53.125 Gbps)\n'
            '  4    2[  ] ==( 4X 53.125 Gbps   Init/  LinkUp)==>  0x2   6    1[  ] "gpu01 mlx5_1" ( )\n')
    findings = ib.parse_iblinkinfo(text, host="gpu01")[1]
    got = {f["ib"]["port"]: f for f in serious(findings)}
    assert got[1]["kind"] == "ib_link_degraded" and is_cable_remedy(got[1])
    assert (got[2]["kind"], got[2]["rung"]) == ("ib_port_not_active", "ib_restart")


@pytest.mark.parametrize("counter", PHYSICAL_COUNTERS)
def test_physical_error_counters_are_the_cable(counter):
    text = sysfs(n=2, counters={"mlx5_1": {counter: 10 ** 6}})
    (f,) = ib.parse_ib_sysfs(text)[1]
    assert f["severity"] == "critical" and is_cable_remedy(f), f


def test_warning_and_critical_counter_findings_share_the_kind_and_its_remedy():
    _, low = ib.parse_ib_sysfs(sysfs(n=1, counters={"mlx5_0": {"symbol_error": 20}}))
    _, high = ib.parse_ib_sysfs(sysfs(n=1, counters={"mlx5_0": {"symbol_error": 20000}}))
    assert [(f["kind"], f["severity"]) for f in low + high] == \
        [("ib_symbol_errors", "warning"), ("ib_symbol_errors", "critical")]
    assert low[0]["steps"] == high[0]["steps"] and low[0]["action"] == high[0]["action"]


def test_port_state_kind_table():
    assert ib.port_state_kind("Active", "LinkUp") is None
    assert ib.port_state_kind("Down", "Polling") == "ib_port_down"
    assert ib.port_state_kind("Down", None) == "ib_port_down"
    assert ib.port_state_kind("Init", None) == "ib_port_not_active"
    assert ib.port_state_kind("Armed", "LinkUp") == "ib_port_not_active"
    assert ib.port_state_kind("Init", "Polling") == "ib_port_down"    # no link: the physical layer first


# ------------------------------------------------------------------ every fixture, every kind

def _fixture_runs():
    for case in sorted(os.listdir(IBFIX)):
        d = os.path.join(IBFIX, case)
        for name in sorted(os.listdir(d)):
            if name.endswith(".txt"):
                with open(os.path.join(d, name)) as fh:
                    yield case, name, fh.read()


def _parse_fixture(name, text):
    fmt = ib.detect_ib_format(text)
    low = dict((c, {"warning": 1}) for c in PHYSICAL_COUNTERS)   # make every non-zero counter speak
    if fmt == "iblinkinfo":
        # the fabric view: a host named in it turns its links' findings into warnings
        return ib.parse_iblinkinfo(text, source=name, host="gpu")
    return ib.parse_ib(text, source=name, thresholds=low)


@pytest.mark.parametrize("case,name,text", list(_fixture_runs()), ids=lambda v: v if "\n" not in v else "")
def test_every_fixture_finding_has_a_declared_kind_and_a_cable_check_for_physical_causes(case, name, text):
    facts, findings = _parse_fixture(name, text)
    assert findings or facts["ports"], case
    counter_kinds = dict((ib.COUNTER_RULES[c]["kind"], c) for c in PHYSICAL_COUNTERS)
    by_port = dict(((p["device"], p["port"]), p) for p in facts["ports"])
    for f in findings:
        info = KINDS[f["kind"]]                             # declared (KeyError otherwise)
        assert info["en"] and info["ko"] and f["category"] in info["categories"]
        assert f["rung"] == info["rung"] and tuple(f["steps"]) == info["steps"]
        assert f["action"] == action_text(f["steps"], "en") and action_text(f["steps"], "ko")
        if f["severity"] not in ("warning", "critical"):
            continue
        port = by_port.get((f["ib"]["device"], f["ib"]["port"])) if f["ib"] else None
        physical = (f["kind"] in counter_kinds or f["kind"] == "ib_link_degraded" or
                    (port is not None and f["kind"] not in ib.COUNTER_RULES and port["phys_state"] in NO_LINK))
        if physical:
            # never openibd; a drain always says to check the cable; any remedy names the cable
            assert RUNG_RANK[f["rung"]] < RUNG_RANK["ib_restart"] and "restart_openibd" not in f["steps"], (case, f)
            assert f["rung"] != "drain" or "check_cable" in f["steps"], (case, f)
            assert "cable" in f["action"], (case, f)
        if port is not None and port["phys_state"] == "LinkUp" and port["state"] in ("Down", "Init", "Armed"):
            assert f["rung"] == "ib_restart" and "check_cable" not in f["steps"], (case, f)


def test_the_fixtures_hold_physical_causes_at_all():
    """Guard for the test above: it must have something to check."""
    physical = set()
    for case, name, text in _fixture_runs():
        physical.update(f["kind"] for f in serious(_parse_fixture(name, text)[1]) if is_cable_remedy(f))
    assert {"roce_port_down", "ib_port_down", "ib_link_downed"} <= physical


def test_no_ib_kind_sends_a_physical_fault_to_openibd():
    for name, info in kinds_ib.KINDS.items():
        if info["rung"] is not None and "check_cable" in info["steps"]:
            assert RUNG_RANK[info["rung"]] < RUNG_RANK["ib_restart"], name


def test_counter_rules_name_declared_kinds_and_carry_no_remedy_of_their_own():
    for counter, rule in ib.COUNTER_RULES.items():
        assert rule["kind"] in KINDS, counter
        assert not [k for k in rule if k.startswith("rung") or k == "action"], counter


def test_override_cannot_name_an_undeclared_kind_or_a_rung():
    text = sysfs(n=1, counters={"mlx5_0": {"symbol_error": 50}})
    _, findings = ib.parse_ib_sysfs(text, thresholds={"symbol_error": {"kind": "no_such_kind",
                                                                       "rung_warning": "reboot"}})
    assert [(f["kind"], f["rung"]) for f in findings] == [("ib_counter_threshold", "none")]
    _, findings = ib.parse_ib_sysfs(text, thresholds={"symbol_error": {"kind": "ib_link_downed"}})
    assert [f["kind"] for f in findings] == ["ib_link_downed"]


# ------------------------------------------------------------------ the guard

def test_a_bug_in_a_parser_is_one_parser_error_finding(monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError("bug")
    monkeypatch.setattr(ib_ports, "analyze", boom)
    facts, findings = ib.parse_ib_sysfs(sysfs(n=1), source="ib-sysfs.txt")
    assert [(f["kind"], f["source"]) for f in findings] == [("parser_error", "ib-sysfs.txt")]
    assert "RuntimeError" in findings[0]["message"]


def test_package_shape():
    pkg = os.path.dirname(ib.__file__)
    for name in os.listdir(pkg):
        if name.endswith(".py"):
            with open(os.path.join(pkg, name)) as fh:
                assert len(fh.read().splitlines()) <= 500, name
