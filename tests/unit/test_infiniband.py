"""InfiniBand parsers: real captures against their case.json truth, then the edge cases."""

import json
import os
import random

import pytest

from gpu_runbook import infiniband as ib
from gpu_runbook.findings import CATEGORIES, RUNGS, SEVERITIES, iter_lines
from gpu_runbook.verdict import host_verdict

HERE = os.path.dirname(os.path.abspath(__file__))
IBFIX = os.path.join(os.path.dirname(HERE), "fixtures", "ib")


def load(case, name=None):
    d = os.path.join(IBFIX, case)
    with open(os.path.join(d, "case.json")) as fh:
        meta = json.load(fh)
    name = name or meta["kinds"][0]
    with open(os.path.join(d, name)) as fh:
        return fh.read(), meta["truth"]


def sev(findings, *levels):
    return [f for f in findings if f["severity"] in levels]


def ports_by(facts):
    return {(p["device"], p["port"]): p for p in facts["ports"]}


def assert_findings_wellformed(text, findings, source):
    """Every finding: valid enums, and evidence is the verbatim line its source points at."""
    lines = dict(iter_lines(text))
    for f in findings:
        assert f["severity"] in SEVERITIES and f["category"] in CATEGORIES and f["rung"] in RUNGS
        assert f["source"].startswith(source)
        if ":" in f["source"][len(source):]:
            n = int(f["source"].rsplit(":", 1)[1])
            assert f["evidence"] == lines[n], f
        if f["ib"] is not None:
            assert set(f["ib"]) == {"device", "port"}


# ------------------------------------------------------------------ real captures: ibstat

def test_010_roce_two_data_nics_down_are_critical():
    text, truth = load("010-gpud-ibstat-h100-roce-2of8-down")
    facts, findings = ib.parse_ibstat(text, source="ibstat.txt")
    assert facts["format"] == "ibstat"
    crit = sev(findings, "critical")
    assert sorted(f["ib"]["device"] for f in crit) == sorted(truth["down_ports"])
    assert all(f["category"] == "ib_network" and f["kind"] == "roce_port_down" for f in crit)
    # Physical state Disabled: the cable/switch side, not an openibd restart (issue 7)
    assert all(f["rung"] == "drain" and "check_cable" in f["steps"] for f in crit)
    byp = ports_by(facts)
    for dev in truth["down_ports"]:
        assert byp[(dev, 1)]["state"] == "Down"
        assert byp[(dev, 1)]["phys_state"] == truth["down_physical_state"]
        assert byp[(dev, 1)]["link_layer"] == "Ethernet"
    mt4129 = [p for p in facts["ports"] if p["ca_type"] == "MT4129"]
    assert len(mt4129) == truth["expected_400g_ports"]
    assert len([p for p in mt4129 if p["state"] == "Active" and p["rate_gbps"] == 400.0]) == \
        truth["active_400g_ports"]
    assert host_verdict(findings)["verdict"] == truth["category"]
    assert_findings_wellformed(text, findings, "ibstat.txt")


def test_011_front_end_ethernet_down_is_not_an_ib_fault():
    text, truth = load("011-gpud-ibstat-h100-ib-ok-eth-ports-down")
    facts, findings = ib.parse_ibstat(text, source="ibstat.txt")
    assert not sev(findings, "critical")
    assert not [f for f in sev(findings, "warning", "critical") if f["category"] == "ib_network"]
    ibp = [p for p in facts["ports"] if p["link_layer"] == "InfiniBand"]
    assert len(ibp) == truth["ib_compute_ports_active"]
    assert all(p["state"] == "Active" and p["rate_gbps"] == truth["ib_compute_port_rate"]
               and p["ca_type"] == truth["ib_compute_hca"] for p in ibp)
    down = sorted(p["device"] for p in facts["ports"] if p["state"] == "Down")
    assert down == sorted(truth["down_ports"])
    # the down front-end ports are still reported (not silently dropped)
    assert sorted(f["ib"]["device"] for f in findings if f["kind"] == "eth_port_down") == down
    assert host_verdict(findings)["verdict"] == truth["category"]
    assert_findings_wellformed(text, findings, "ibstat.txt")


@pytest.mark.parametrize("case", ["012-gpud-ibstat-a100-all-active", "013-gpud-ibstat-h100-ib-all-active"])
def test_healthy_ibstat_has_no_warnings(case):
    text, truth = load(case)
    facts, findings = ib.parse_ibstat(text)
    assert sev(findings, "warning", "critical") == []
    assert host_verdict(findings)["verdict"] == "healthy" == truth["category"]
    ibp = [p for p in facts["ports"] if p["link_layer"] == "InfiniBand"]
    assert all(p["state"] == "Active" and p["phys_state"] == "LinkUp" for p in facts["ports"])
    assert {p["rate_gbps"] for p in ibp} == {float(truth["rate"])}
    if "ports_active" in truth:
        assert len(facts["ports"]) == truth["ports_active"]
        assert len(ibp) == truth["ib_ports"]
    else:
        assert len(ibp) == truth["ib_ports_active"]
        bond = ports_by(facts)[("mlx5_bond_0", 1)]
        assert (bond["link_layer"], bond["rate_gbps"], bond["state"]) == ("Ethernet", 200.0, "Active")


def test_014_ibpanic_missing_device_is_critical():
    text, truth = load("014-gpud-ibstat-a100-ibpanic-mlx5_8-missing")
    facts, findings = ib.parse_ibstat(text, source="ibstat.txt")
    crit = sev(findings, "critical")
    assert [(f["kind"], f["ib"]["device"]) for f in crit] == [("ib_device_missing", truth["missing_device"])]
    assert "ibpanic" in crit[0]["evidence"]
    assert len([p for p in facts["ports"] if p["state"] == "Active"]) == truth["ports_active_listed"]
    assert {p["rate_gbps"] for p in facts["ports"]} == {float(truth["rate"])}
    assert truth["missing_device"] not in facts["devices"]
    assert host_verdict(findings)["verdict"] == truth["category"]
    assert_findings_wellformed(text, findings, "ibstat.txt")


def test_014_missing_device_reported_once_even_when_expected():
    text, _ = load("014-gpud-ibstat-a100-ibpanic-mlx5_8-missing")
    exp = ["mlx5_%d" % i for i in range(9)]
    _, findings = ib.parse_ibstat(text, expected_devices=exp)
    assert [f["ib"]["device"] for f in findings if f["kind"] == "ib_device_missing"] == ["mlx5_8"]


# ------------------------------------------------------------------ real captures: perfquery

def test_043_switch_port_counters():
    text, truth = load("043-ibexporter-perfquery-switch-discards-linkdowned")
    facts, findings = ib.parse_perfquery(text, source="perfquery.txt")
    assert facts["format"] == "perfquery"
    (port,) = facts["ports"]
    assert (port["device"], port["port"]) == ("lid:%d" % truth["lid"], truth["port"])
    c = port["counters"]
    assert c["link_downed"] == truth["link_downed"]
    assert c["port_xmit_discards"] == truth["port_xmit_discards"]
    assert c["port_rcv_switch_relay_errors"] == truth["port_rcv_switch_relay_errors"]
    assert c["port_xmit_wait"] == truth["port_xmit_wait"]
    assert c["symbol_error"] == truth["symbol_errors"] and c["port_rcv_errors"] == truth["port_rcv_errors"]
    assert "port_select" not in c and "counter_select" not in c
    kinds = {f["kind"]: f for f in findings}
    assert kinds["ib_link_downed"]["severity"] == "warning"
    assert kinds["ib_link_downed"]["rung"] == "drain"     # a flapping link is the cable (issue 7)
    assert kinds["ib_xmit_discards"]["severity"] == "warning"
    assert "LinkDownedCounter" in kinds["ib_link_downed"]["evidence"]
    assert "ib_symbol_errors" not in kinds and "ib_rcv_errors" not in kinds
    assert host_verdict(findings)["verdict"] == truth["category"]
    assert_findings_wellformed(text, findings, "perfquery.txt")


def test_044_clean_switch_is_healthy_despite_xmit_wait():
    text, truth = load("044-ibexporter-perfquery-switch-clean")
    facts, findings = ib.parse_perfquery(text)
    assert [p["port"] for p in facts["ports"]] == truth["ports"]
    assert facts["devices"] == ["lid:%d" % truth["lid"]]
    for p in facts["ports"]:
        assert p["counters"]["port_xmit_wait"] == truth["port_xmit_wait"][str(p["port"])]
        errs = [k for k, v in p["counters"].items()
                if v and k not in ("port_xmit_wait",) and "data" not in k and "packets" not in k]
        assert errs == truth["error_counters_nonzero"]
    assert sev(findings, "warning", "critical") == []
    assert host_verdict(findings)["verdict"] == truth["category"]


def test_perfquery_device_name_from_caller_and_legacy_names():
    text = ("# Port counters: Lid 12 port 1\r\n"
            "SymbolErrors:....................250\r\n"
            "LinkDowned:......................2\r\n"
            "XmtDiscards:.....................7\r\n"
            "XmtWait:.........................5\r\n")
    facts, findings = ib.parse_perfquery(text, device="mlx5_3")
    (p,) = facts["ports"]
    assert p["device"] == "mlx5_3"
    assert p["counters"] == {"symbol_error": 250, "link_downed": 2, "port_xmit_discards": 7,
                             "port_xmit_wait": 5}
    got = {f["kind"]: f["severity"] for f in findings}
    assert got == {"ib_symbol_errors": "warning", "ib_link_downed": "warning"}
    assert all(f["ib"] == {"device": "mlx5_3", "port": 1} for f in findings)


def test_perfquery_tool_error_is_info_not_traceback():
    text = ("ibwarn: [3102] mad_rpc_open_port: can't open UMAD port ((null):0)\n"
            "perfquery: iberror: failed: Failed to open '(null)' port '0'\n")
    facts, findings = ib.parse_perfquery(text)
    assert facts["ports"] == []
    assert findings and all(f["severity"] == "info" for f in findings)
    assert {f["kind"] for f in findings} == {"ib_tool_error"}


def test_perfquery_huge_xmit_wait_escalates():
    text = "# Port extended counters: Lid 5 port 3 (CapMask: 0x5300)\nPortXmitWait:....%d\n"
    _, low = ib.parse_perfquery(text % 5000)
    _, mid = ib.parse_perfquery(text % (2 * 10 ** 9))
    _, high = ib.parse_perfquery(text % (2 * 10 ** 13))
    assert low == []
    assert [f["severity"] for f in mid] == ["info"]
    assert [f["severity"] for f in high] == ["warning"]
    assert high[0]["kind"] == "ib_congestion"


# ------------------------------------------------------------------ real samples: ibv_devinfo

def test_ibv_devinfo_plain_mlx4_unused_second_ports():
    text, truth = load("ibv_devinfo-heioy-mlx4-2hca-port2-down")
    facts, findings = ib.parse_ibv_devinfo(text, source="ibv_devinfo.txt")
    assert facts["format"] == "ibv_devinfo"
    assert facts["devices"] == truth["devices"]
    byp = ports_by(facts)
    for d, n in truth["active_ports"]:
        assert byp[(d, n)]["state"] == "Active"
    for d, n in truth["down_ports"]:
        assert byp[(d, n)]["state"] == "Down"
    assert all(p["ca_type"] == truth["ca_type"] and p["rate_gbps"] is None for p in facts["ports"])
    assert sev(findings, "warning", "critical") == []
    assert sorted((f["ib"]["device"], f["ib"]["port"]) for f in findings) == \
        sorted(tuple(x) for x in truth["down_ports"])
    assert host_verdict(findings)["verdict"] == truth["category"]
    assert_findings_wellformed(text, findings, "ibv_devinfo.txt")


def test_ibv_devinfo_second_port_down_is_critical_when_it_is_used_elsewhere():
    text, _ = load("ibv_devinfo-heioy-mlx4-2hca-port2-down")
    # make mlx4_0 port 2 Active: now mlx4_1 port 2 Down is a real fault
    idx = text.rindex("PORT_DOWN (1)")
    text = text[:idx] + "PORT_ACTIVE (4)" + text[idx + len("PORT_DOWN (1)"):]
    _, findings = ib.parse_ibv_devinfo(text)
    crit = sev(findings, "critical")
    assert [(f["ib"]["device"], f["ib"]["port"], f["kind"]) for f in crit] == [("mlx4_1", 2, "ib_port_down")]


def test_ibv_devinfo_verbose_port_polling():
    text, truth = load("ibv_devinfo-v-heioy-mlx4-port2-polling")
    facts, findings = ib.parse_ibv_devinfo(text, source="ibv_devinfo.txt")
    (p,) = facts["ports"]
    assert (p["device"], p["port"], p["state"], p["phys_state"]) == \
        (truth["devices"][0], truth["port"], truth["state"], truth["phys_state"])
    (f,) = sev(findings, "critical")
    assert f["kind"] == "ib_port_down" and "Polling" in f["message"] and "cable" in f["message"]
    assert f["evidence"].strip() == "state:\t\t\tPORT_DOWN (1)"
    assert host_verdict(findings)["verdict"] == truth["category"]


def test_ibv_devinfo_vv_mlx5_rate_and_disabled_port():
    text, truth = load("ibv_devinfo-vv-ucx-mlx5-2hca-one-disabled")
    facts, findings = ib.parse_ibv_devinfo(text, source="ibv_devinfo.txt")
    assert facts["devices"] == truth["devices"]
    byp = ports_by(facts)
    for dev in truth["devices"]:
        for k, v in truth[dev].items():
            assert byp[(dev, 1)][k] == v, (dev, k)
        assert byp[(dev, 1)]["ca_type"] == truth["ca_type"]
    # the second port of the same card (same sys_image_guid), unused on every card: info
    assert [(f["severity"], f["ib"]["device"], f["kind"]) for f in findings] == \
        [("info", "mlx5_1", "ib_port_unused")]
    assert "Disabled" in findings[0]["message"] and "mlx5_0" in findings[0]["message"]
    assert host_verdict(findings)["verdict"] == truth["category"]
    assert_findings_wellformed(text, findings, "ibv_devinfo.txt")


def test_ibv_devinfo_vv_mlx5_separate_cards_down_port_is_critical():
    text, _ = load("ibv_devinfo-vv-ucx-mlx5-2hca-one-disabled")
    i = text.index("hca_id:\tmlx5_1")
    text = text[:i] + text[i:].replace("sys_image_guid:\t\t\t88e9:a4ff:ff25:a462",
                                       "sys_image_guid:\t\t\t88e9:a4ff:ff25:b000", 1)
    _, findings = ib.parse_ibv_devinfo(text)
    crit = sev(findings, "critical")
    assert [(f["ib"]["device"], f["kind"]) for f in crit] == [("mlx5_1", "ib_port_down")]
    assert "Disabled" in crit[0]["message"]


def test_ibv_devinfo_no_devices():
    text = "No IB devices found\n"
    facts, findings = ib.parse_ibv_devinfo(text)
    assert facts["ports"] == [] and facts["devices"] == []
    assert [(f["severity"], f["kind"]) for f in findings] == [("warning", "ib_no_devices")]
    _, findings = ib.parse_ibv_devinfo(text, expected_devices=["mlx5_0", "mlx5_1"])
    assert sorted(f["ib"]["device"] for f in findings if f["severity"] == "critical") == ["mlx5_0", "mlx5_1"]
    assert all(f["evidence"] == "No IB devices found" for f in findings)


# ------------------------------------------------------------------ real samples: iblinkinfo

def test_iblinkinfo_edr_unused_switch_ports_are_not_findings():
    text, truth = load("iblinkinfo-xcat-edr-2node")
    facts, findings = ib.parse_iblinkinfo(text, source="iblinkinfo.txt")
    assert facts["format"] == "iblinkinfo"
    sw = [p for p in facts["ports"] if p["ca_type"] == "Switch"]
    assert len(sw) == truth["switch_ports"]
    assert len([p for p in sw if p["state"] == "Down" and p["phys_state"] == "Polling"]) == \
        truth["switch_ports_down"]
    act = [p for p in facts["ports"] if p["state"] == "Active"]
    assert len(act) == truth["active_links"]
    assert {p["rate_gbps"] for p in act} == {truth["rate_gbps"]}
    assert findings == []


def test_iblinkinfo_line_mode_could_be_is_degraded_for_own_host_only():
    text, truth = load("iblinkinfo-l-ibsim-could-be")
    facts, findings = ib.parse_iblinkinfo(text, source="iblinkinfo.txt")
    assert len(facts["ports"]) == 2 and facts["devices"] == ["hxa-su1-leaf-r1"]
    deg = [f for f in findings if f["kind"] == "ib_link_degraded"]
    assert len(deg) == truth["degraded_links"]
    assert all(f["severity"] == "info" for f in deg)     # fabric view: not this host's fault
    _, mine = ib.parse_iblinkinfo(text, source="iblinkinfo.txt", host="hxa-gpu02")
    assert [(f["severity"], f["ib"]["port"]) for f in mine if f["severity"] != "info"] == [("warning", 2)]
    assert "Could be 12X" in mine[1]["message"]


# ------------------------------------------------------------------ sysfs (module output format)

ROOT = "/opt/fakehw/sys/class/infiniband"
COUNTERS = ("VL15_dropped", "excessive_buffer_overrun_errors", "link_downed", "link_error_recovery",
            "local_link_integrity_errors", "port_rcv_errors", "port_rcv_remote_physical_errors",
            "port_xmit_discards", "port_xmit_wait", "symbol_error")


def sysfs(n=8, root=ROOT, special=None, counters=None, hw=None, link_layer="InfiniBand"):
    """grep -H . output for n single-port HCAs at 400G; special[dev] overrides files."""
    special = special or {}
    out = []
    for i in range(n):
        dev = "mlx5_%d" % i
        files = {"state": "4: ACTIVE", "phys_state": "5: LinkUp", "rate": "400 Gb/sec (4X NDR)",
                 "link_layer": link_layer}
        files.update(special.get(dev, {}))
        for k in ("state", "phys_state", "rate", "link_layer"):
            if files.get(k) is not None:
                out.append("%s/%s/ports/1/%s:%s" % (root, dev, k, files[k]))
        cs = dict((c, 0) for c in COUNTERS)
        cs.update((counters or {}).get(dev, {}))
        for c, v in sorted(cs.items()):
            out.append("%s/%s/ports/1/counters/%s:%s" % (root, dev, c, v))
        for c, v in sorted(((hw or {}).get(dev) or {}).items()):
            out.append("%s/%s/ports/1/hw_counters/%s:%s" % (root, dev, c, v))
    return "\n".join(out) + "\n"


def test_sysfs_healthy_8_hcas():
    facts, findings = ib.parse_ib_sysfs(sysfs())
    assert facts["format"] == "ib-sysfs"
    assert facts["devices"] == ["mlx5_%d" % i for i in range(8)]
    assert all(p["state"] == "Active" and p["phys_state"] == "LinkUp" and p["rate_gbps"] == 400.0
               and p["link_layer"] == "InfiniBand" and p["counters"]["symbol_error"] == 0
               for p in facts["ports"])
    assert findings == []
    json.dumps(facts)


def test_sysfs_one_port_polling_among_eight():
    text = sysfs(special={"mlx5_3": {"state": "1: DOWN", "phys_state": "2: Polling",
                                      "rate": "10 Gb/sec (4X SDR)"}})
    facts, findings = ib.parse_ib_sysfs(text, source="ib-sysfs.txt")
    assert ports_by(facts)[("mlx5_3", 1)]["state"] == "Down"
    (f,) = sev(findings, "warning", "critical")
    assert (f["severity"], f["kind"], f["ib"], f["rung"]) == \
        ("critical", "ib_port_down", {"device": "mlx5_3", "port": 1}, "drain")
    assert "Polling" in f["message"] and "cable" in f["message"]
    assert f["evidence"] == ROOT + "/mlx5_3/ports/1/state:1: DOWN"
    assert_findings_wellformed(text, findings, "ib-sysfs.txt")


def test_sysfs_init_with_link_up_points_at_subnet_manager():
    text = sysfs(special={"mlx5_0": {"state": "2: INIT"}})
    _, findings = ib.parse_ib_sysfs(text)
    (f,) = sev(findings, "critical")
    assert f["ib"]["device"] == "mlx5_0" and "subnet manager" in f["message"]


def test_sysfs_missing_state_file_but_polling_is_down():
    text = sysfs(special={"mlx5_6": {"state": None, "phys_state": "3: Disabled"}})
    _, findings = ib.parse_ib_sysfs(text)
    assert [f["ib"]["device"] for f in sev(findings, "critical")] == ["mlx5_6"]


def test_sysfs_any_prefix_and_dev_names():
    text = sysfs(root="/sys/class/infiniband", n=2) + \
        "/tmp/x/sys/class/infiniband/ibp24s0/ports/1/state:1: DOWN\n" \
        "/tmp/x/sys/class/infiniband/ibp24s0/ports/1/phys_state:3: Disabled\n"
    facts, findings = ib.parse_ib_sysfs(text)
    assert facts["devices"] == ["mlx5_0", "mlx5_1", "ibp24s0"]
    assert [f["ib"]["device"] for f in sev(findings, "critical")] == ["ibp24s0"]


def test_sysfs_rate_200_among_400s_is_degraded():
    text = sysfs(special={"mlx5_5": {"rate": "200 Gb/sec (4X HDR)"}})
    facts, findings = ib.parse_ib_sysfs(text, source="ib-sysfs.txt")
    (f,) = findings
    assert (f["severity"], f["kind"], f["ib"]["device"]) == ("warning", "ib_link_degraded", "mlx5_5")
    assert "degraded link" in f["message"] and "400" in f["message"]
    assert f["evidence"].endswith("mlx5_5/ports/1/rate:200 Gb/sec (4X HDR)")


def test_sysfs_expected_rate():
    healthy_hdr = sysfs(special=dict(("mlx5_%d" % i, {"rate": "200 Gb/sec (4X HDR)"}) for i in range(8)))
    assert ib.parse_ib_sysfs(healthy_hdr)[1] == []
    assert ib.parse_ib_sysfs(healthy_hdr, expected_rate=200)[1] == []
    _, findings = ib.parse_ib_sysfs(healthy_hdr, expected_rate=400)
    assert len(findings) == 8 and {f["kind"] for f in findings} == {"ib_link_degraded"}


def test_sysfs_expected_devices_missing():
    text = sysfs(n=7)
    exp = ["mlx5_%d" % i for i in range(8)]
    _, findings = ib.parse_ib_sysfs(text, expected_devices=exp)
    (f,) = findings
    assert (f["severity"], f["kind"], f["ib"]["device"]) == ("critical", "ib_device_missing", "mlx5_7")
    assert ib.parse_ib_sysfs(sysfs(n=8), expected_devices=exp)[1] == []
    _, by_count = ib.parse_ib_sysfs(text, expected_devices=8)
    assert [f["kind"] for f in by_count] == ["ib_device_missing"]
    assert ib.parse_ib_sysfs(text, expected_devices=7)[1] == []


@pytest.mark.parametrize("value,expected", [
    (0, None), (1, ("warning", "drain")), (4, ("warning", "drain")), (5, ("critical", "drain")),
])
def test_sysfs_link_downed_thresholds(value, expected):
    _, findings = ib.parse_ib_sysfs(sysfs(counters={"mlx5_2": {"link_downed": value}}))
    got = [(f["severity"], f["rung"]) for f in findings if f["kind"] == "ib_link_downed"]
    assert got == ([] if expected is None else [expected])
    if expected and expected[0] == "critical":
        assert "flapping" in findings[0]["message"]


def test_sysfs_counters_climbing_over_thresholds():
    counters = {"mlx5_1": {"symbol_error": 9}, "mlx5_2": {"symbol_error": 10},
                "mlx5_3": {"symbol_error": 5000, "link_error_recovery": 3, "port_rcv_errors": 12},
                "mlx5_4": {"VL15_dropped": 4}, "mlx5_5": {"local_link_integrity_errors": 1},
                "mlx5_6": {"excessive_buffer_overrun_errors": 150}}
    hw = {"mlx5_7": {"req_transport_retries_exceeded": 3, "out_of_sequence": 12}}
    _, findings = ib.parse_ib_sysfs(sysfs(counters=counters, hw=hw))
    got = sorted((f["ib"]["device"], f["kind"], f["severity"]) for f in findings)
    assert got == sorted([
        ("mlx5_2", "ib_symbol_errors", "warning"),
        ("mlx5_3", "ib_symbol_errors", "critical"),
        ("mlx5_3", "ib_link_error_recovery", "warning"),
        ("mlx5_3", "ib_rcv_errors", "warning"),
        ("mlx5_4", "ib_vl15_dropped", "info"),
        ("mlx5_5", "ib_link_integrity_errors", "warning"),
        ("mlx5_6", "ib_buffer_overrun_errors", "critical"),
        ("mlx5_7", "ib_transport_retries_exceeded", "warning"),
    ])


def test_threshold_overrides():
    text = sysfs(counters={"mlx5_0": {"symbol_error": 5, "link_downed": 2}})
    assert [f["kind"] for f in ib.parse_ib_sysfs(text)[1]] == ["ib_link_downed"]
    _, f2 = ib.parse_ib_sysfs(text, thresholds={"symbol_error": 3, "link_downed": None})
    assert [(f["kind"], f["severity"]) for f in f2] == [("ib_symbol_errors", "warning")]
    # perfquery spelling in the override hits the sysfs counter (one rule table)
    _, f3 = ib.parse_ib_sysfs(text, thresholds={"SymbolErrorCounter": {"warning": 2, "critical": 4}})
    assert ("ib_symbol_errors", "critical") in [(f["kind"], f["severity"]) for f in f3]
    # a brand-new counter rule raises the one declared generic kind; the message names the counter
    _, f4 = ib.parse_ib_sysfs(sysfs(hw={"mlx5_0": {"np_cnp_sent": 50}}), thresholds={"np_cnp_sent": 10})
    assert [(f["kind"], f["severity"]) for f in f4] == [("ib_counter_threshold", "warning")]
    assert "np_cnp_sent" in f4[0]["message"]


def test_sysfs_and_perfquery_names_hit_the_same_rule():
    _, a = ib.parse_ib_sysfs(sysfs(n=1, counters={"mlx5_0": {"symbol_error": 77}}))
    _, b = ib.parse_perfquery("# Port counters: Lid 3 port 1 (CapMask: 0x1400)\nSymbolErrorCounter:......77\n")
    assert [(f["kind"], f["severity"]) for f in a] == [(f["kind"], f["severity"]) for f in b] == \
        [("ib_symbol_errors", "warning")]
    assert ib.normalize_counter_name("SymbolErrorCounter") == "symbol_error"
    assert ib.normalize_counter_name("VL15Dropped") == "VL15_dropped"
    assert ib.normalize_counter_name("PortRcvRemotePhysicalErrors") == "port_rcv_remote_physical_errors"
    assert ib.normalize_counter_name("link_downed") == "link_downed"


def test_sysfs_unreadable_and_colonless_lines_are_skipped():
    text = sysfs(n=2) + (ROOT + "/mlx5_0/ports/1/counters/port_rcv_data_64:Invalid argument\n"
                         "grep: " + ROOT + "/mlx5_1/ports/1/hw_counters/foo: Permission denied\n"
                         + ROOT + "/mlx5_1/ports/1/counters/link_downed\n"
                         "some noise without a colon\n")
    facts, findings = ib.parse_ib_sysfs(text)
    byp = ports_by(facts)
    assert "port_rcv_data_64" not in byp[("mlx5_0", 1)]["counters"]
    assert "foo" not in byp[("mlx5_1", 1)]["counters"]
    assert byp[("mlx5_1", 1)]["counters"]["link_downed"] == 0
    assert findings == []


def test_sysfs_hca_type_lines_feed_ca_type():
    text = sysfs(n=2) + ROOT + "/mlx5_0/hca_type:MT4129\n" + ROOT + "/mlx5_1/hca_type:MT4129\n"
    facts, _ = ib.parse_ib_sysfs(text)
    assert [p["ca_type"] for p in facts["ports"]] == ["MT4129", "MT4129"]


def test_ethernet_lone_down_port_is_info_only():
    text = sysfs(n=4) + (ROOT + "/mlx5_9/ports/1/state:1: DOWN\n" + ROOT + "/mlx5_9/ports/1/phys_state:3: Disabled\n"
                         + ROOT + "/mlx5_9/ports/1/link_layer:Ethernet\n")
    _, findings = ib.parse_ib_sysfs(text)
    assert [(f["severity"], f["kind"]) for f in findings] == [("info", "eth_port_unused")]


def test_roce_host_data_port_down_is_critical_in_sysfs():
    text = sysfs(link_layer="Ethernet", special={"mlx5_6": {"state": "1: DOWN", "phys_state": "3: Disabled",
                                                            "rate": "40 Gb/sec (4X QDR)"}})
    _, findings = ib.parse_ib_sysfs(text)
    assert [(f["severity"], f["kind"], f["ib"]["device"]) for f in findings] == \
        [("critical", "roce_port_down", "mlx5_6")]


def test_front_end_ethernet_counters_never_exceed_info():
    text = sysfs(n=4) + "".join(ROOT + "/mlx5_%d/ports/1/%s\n" % (i, s) for i in (8, 9) for s in (
        "state:4: ACTIVE", "phys_state:5: LinkUp", "rate:100 Gb/sec (4X EDR)", "link_layer:Ethernet")) \
        + "".join(ROOT + "/mlx5_%d/hca_type:%s\n" % (i, t) for i, t in ((8, "MT4125"), (9, "MT4125"))) \
        + ROOT + "/mlx5_8/ports/1/counters/link_downed:9\n"
    _, findings = ib.parse_ib_sysfs(text)
    assert [(f["severity"], f["ib"]["device"]) for f in findings] == [("info", "mlx5_8")]


# ------------------------------------------------------------------ robustness

def test_crlf_and_ansi_give_the_same_result():
    text, _ = load("010-gpud-ibstat-h100-roce-2of8-down")
    base = ib.parse_ibstat(text)
    crlf = ib.parse_ibstat(text.replace("\n", "\r\n"))
    ansi = ib.parse_ibstat("".join("\x1b[32m%s\x1b[0m\n" % ln for ln in text.splitlines()))
    key = lambda r: (r[0], [(f["kind"], f["ib"], f["source"], f["severity"]) for f in r[1]])  # noqa: E731
    assert key(base) == key(crlf) == key(ansi)
    assert all("\r" not in f["evidence"] and "\x1b" not in f["evidence"] for f in crlf[1] + ansi[1])


def test_truncated_output_does_not_invent_a_down_port():
    text, _ = load("013-gpud-ibstat-h100-ib-all-active")
    cut = text[:text.index("State: Active", 2000) + len("State: Acti")]
    facts, findings = ib.parse_ibstat(cut)
    assert 0 < len(facts["ports"]) < 9
    assert sev(findings, "warning", "critical") == []
    assert facts["ports"][-1]["state"] is None


PARSERS = [ib.parse_ib_sysfs, ib.parse_ibstat, ib.parse_ibv_devinfo, ib.parse_perfquery, ib.parse_iblinkinfo]


@pytest.mark.parametrize("parser", PARSERS)
@pytest.mark.parametrize("junk", [
    "", "   \n\n", None, b"\x00\xff\xfe binary \x89PNG\r\n\x1a\n",
    "".join(chr(c) for c in range(0, 600, 7)), "Lorem ipsum: dolor\nsit: amet\n",
])
def test_garbage_is_info_unparseable(parser, junk):
    facts, findings = parser(junk, source="x.txt")
    assert facts["ports"] == [] and facts["devices"] == []
    assert [(f["severity"], f["kind"]) for f in findings] == [("info", "ib_unparseable")]
    assert findings[0]["source"] == "x.txt"


@pytest.mark.parametrize("case", sorted(os.listdir(IBFIX)))
def test_fuzzed_fixtures_never_raise(case):
    d = os.path.join(IBFIX, case)
    name = [n for n in os.listdir(d) if n.endswith(".txt")][0]
    with open(os.path.join(d, name)) as fh:
        text = fh.read()
    rnd = random.Random(case)
    lines = text.splitlines()
    for _ in range(25):
        cut = text[:rnd.randrange(len(text) + 1)]
        mixed = list(lines)
        for _ in range(5):
            i = rnd.randrange(len(mixed) + 1)
            mixed.insert(i, "".join(chr(rnd.randrange(1, 0x2FF)) for _ in range(rnd.randrange(40))))
        for t in (cut, "\n".join(mixed)):
            for parser in PARSERS:
                facts, findings = parser(t, source="f.txt", thresholds={"symbol_error": 1})
                json.dumps(facts)
                json.dumps(findings)
                assert isinstance(findings, list)


def test_bad_override_values_do_not_raise():
    text = sysfs(n=1, counters={"mlx5_0": {"symbol_error": 50}})
    _, findings = ib.parse_ib_sysfs(text, thresholds={"symbol_error": {"rung_warning": "no-such-rung"},
                                                      "bogus": "x", 5: {"warning": 1}})
    assert [f["kind"] for f in findings] == ["ib_symbol_errors"]
    _, f2 = ib.parse_ib_sysfs(text, thresholds="not a dict")
    assert [f["kind"] for f in f2] == ["ib_symbol_errors"]
    _, f3 = ib.parse_ib_sysfs(text, thresholds={"symbol_error": {"warning": "lots", "critical": "40"}})
    assert [(f["kind"], f["severity"]) for f in f3] == [("ib_symbol_errors", "critical")]


@pytest.mark.parametrize("case,fmt", [
    ("010-gpud-ibstat-h100-roce-2of8-down", "ibstat"),
    ("043-ibexporter-perfquery-switch-discards-linkdowned", "perfquery"),
    ("ibv_devinfo-vv-ucx-mlx5-2hca-one-disabled", "ibv_devinfo"),
    ("iblinkinfo-xcat-edr-2node", "iblinkinfo"),
    ("sysfs-demo-n05-mlx5_4-flapping", "ib-sysfs"),
])
def test_detect_and_dispatch(case, fmt):
    text, _ = load(case)
    assert ib.detect_ib_format(text) == fmt
    assert ib.parse_ib(text)[0]["format"] == fmt
    assert ib.detect_ib_format("hello") is None
    assert ib.parse_ib("hello")[1][0]["kind"] == "ib_unparseable"


def test_demo_sysfs_capture_flapping_port():
    text, truth = load("sysfs-demo-n05-mlx5_4-flapping")
    facts, findings = ib.parse_ib_sysfs(text, source="ib-sysfs.txt")
    assert len(facts["devices"]) == truth["hcas"]
    p = ports_by(facts)[tuple(truth["flapping_port"])]
    assert p["counters"]["link_downed"] == truth["link_downed"]
    assert p["counters"]["symbol_error"] == truth["symbol_error"]
    crit = sev(findings, "critical")
    assert {f["ib"]["device"] for f in findings} == {truth["flapping_port"][0]}
    assert "ib_link_downed" in {f["kind"] for f in crit}
    assert host_verdict(findings)["verdict"] == truth["category"]
    assert_findings_wellformed(text, findings, "ib-sysfs.txt")


def test_state_and_rate_normalisation():
    assert ib.normalize_state("4: ACTIVE") == ib.normalize_state("PORT_ACTIVE (4)") == "Active"
    assert ib.normalize_state("Active") == "Active"
    assert ib.normalize_state("2: INIT") == ib.normalize_state("PORT_INIT (2)") == "Init"
    assert ib.normalize_state("PORT_ARMED (3)") == "Armed"
    assert ib.normalize_state("Acti") is None
    assert ib.normalize_phys_state("5: LinkUp") == ib.normalize_phys_state("LINK_UP (5)") == "LinkUp"
    assert ib.normalize_phys_state("POLLING (2)") == ib.normalize_phys_state("Polling") == "Polling"
    assert ib.normalize_phys_state("3: Disabled") == "Disabled"
    assert ib.normalize_phys_state("PORT_CONFIGURATION_TRAINING (4)") == "PortConfigurationTraining"
    assert ib.parse_rate("400 Gb/sec (4X NDR)") == 400.0
    assert ib.parse_rate("2.5 Gb/sec (1X SDR)") == 2.5
    assert ib.parse_rate("Unknown") is None


# ------------------------------------------------------------------ ibstatus, dual-port cards

def test_ibstatus_cx3_second_port_unused():
    text, truth = load("ibstatus-cx3-mlx4-port2-polling")
    facts, findings = ib.parse_ibstat(text, source="ibstat.txt")
    assert facts["format"] == truth["format"] and facts["devices"] == truth["devices"]
    byp = ports_by(facts)
    for d, n in truth["active"]:
        assert byp[(d, n)]["state"] == "Active" and byp[(d, n)]["rate_gbps"] == truth["rate"]
    for d, n in truth["down"]:
        assert (byp[(d, n)]["state"], byp[(d, n)]["phys_state"]) == ("Down", truth["down_phys_state"])
    assert [(f["severity"], f["kind"]) for f in findings] == [("info", "ib_port_unused")]
    assert host_verdict(findings)["verdict"] == truth["category"]
    assert_findings_wellformed(text, findings, "ibstat.txt")


def test_ibstatus_two_port_roce_nic_one_down_is_not_critical():
    text, truth = load("ibstatus-roce-2port-one-disabled")
    facts, findings = ib.parse_ibstat(text, source="ibstat.txt")
    assert facts["devices"] == truth["devices"]
    assert all(p["link_layer"] == truth["link_layer"] for p in facts["ports"])
    assert not sev(findings, "critical")
    assert [(f["severity"], f["ib"]["device"]) for f in findings] == [("warning", "mlx5_0")]
    assert host_verdict(findings)["verdict"] == truth["category"]


def _ibstat_cards(second_port_states):
    """Two dual-port cards (mlx5 shows one device per port, same System image GUID)."""
    out = []
    for card, st2 in enumerate(second_port_states):
        for pos, st in enumerate(("Active", st2)):
            dev = "mlx5_%d" % (card * 2 + pos)
            phys = "LinkUp" if st == "Active" else "Disabled"
            out += ["CA '%s'" % dev, "\tCA type: MT4123", "\tNumber of ports: 1",
                    "\tNode GUID: 0x0c42a10300%02x%02x" % (card, pos),
                    "\tSystem image GUID: 0x0c42a10300%02x00" % card, "\tPort 1:",
                    "\t\tState: %s" % st, "\t\tPhysical state: %s" % phys, "\t\tRate: 200",
                    "\t\tLink layer: InfiniBand"]
    return "\n".join(out) + "\n"


def test_second_port_down_on_every_card_is_info():
    _, findings = ib.parse_ibstat(_ibstat_cards(["Down", "Down"]))
    assert [(f["severity"], f["kind"], f["ib"]["device"]) for f in findings] == \
        [("info", "ib_port_unused", "mlx5_1"), ("info", "ib_port_unused", "mlx5_3")]


def test_second_port_down_where_other_card_uses_it_is_critical():
    _, findings = ib.parse_ibstat(_ibstat_cards(["Active", "Down"]))
    assert [(f["severity"], f["kind"], f["ib"]["device"]) for f in findings] == \
        [("critical", "ib_port_down", "mlx5_3")]


def test_roce_needs_two_active_peers_for_critical():
    two = sysfs(n=2, link_layer="Ethernet", special={"mlx5_1": {"state": "1: DOWN", "phys_state": "3: Disabled"}})
    three = sysfs(n=3, link_layer="Ethernet", special={"mlx5_2": {"state": "1: DOWN", "phys_state": "3: Disabled"}})
    assert [(f["severity"], f["category"]) for f in ib.parse_ib_sysfs(two)[1]] == [("warning", "unknown")]
    assert [(f["severity"], f["kind"]) for f in ib.parse_ib_sysfs(three)[1]] == [("critical", "roce_port_down")]


def test_ibstat_initializing_state_points_at_subnet_manager():
    text, _ = load("013-gpud-ibstat-h100-ib-all-active")
    i = text.index("State: Active", text.index("CA 'mlx5_6'"))
    text = text[:i] + "State: Initializing" + text[i + len("State: Active"):]
    _, findings = ib.parse_ibstat(text)
    (f,) = sev(findings, "warning", "critical")
    assert (f["severity"], f["kind"], f["ib"]["device"]) == ("critical", "ib_port_not_active", "mlx5_6")
    assert "subnet manager" in f["message"]


def test_threshold_strings_from_yaml_and_bytes_input():
    text = sysfs(n=1, counters={"mlx5_0": {"symbol_error": 5}})
    assert ib.parse_ib_sysfs(text)[1] == []
    _, findings = ib.parse_ib_sysfs(text.encode(), thresholds={"symbol_error": "4"})
    assert [(f["kind"], f["severity"]) for f in findings] == [("ib_symbol_errors", "warning")]


def test_ibpanic_cant_be_found_form():
    line = "ibpanic: [4242] main: 'mlx5_9' IB device can't be found: No such file or directory"
    facts, findings = ib.parse_ibstat(line + "\n", source="ibstat.txt")
    assert facts["ports"] == []
    assert [(f["severity"], f["kind"], f["ib"]["device"], f["source"]) for f in findings] == \
        [("critical", "ib_device_missing", "mlx5_9", "ibstat.txt:1")]


def test_empty_sysfs_with_expected_devices_means_they_are_missing():
    facts, findings = ib.parse_ib_sysfs("", expected_devices=["mlx5_0", "mlx5_1"])
    assert facts["ports"] == []
    assert [(f["severity"], f["kind"], f["ib"]["device"]) for f in findings] == \
        [("critical", "ib_device_missing", "mlx5_0"), ("critical", "ib_device_missing", "mlx5_1")]
    assert [f["kind"] for f in ib.parse_ib_sysfs("")[1]] == ["ib_unparseable"]


# ---- iproute2's `rdma link` (infiniband/rdma_link.py)
RDMA_LINK = ("link mlx5_0/1 subnet_prefix fe80:0000:0000:0000 lid 13 sm_lid 1 lmc 0 state ACTIVE physical_state LINK_UP\n"
             "link mlx5_1/1 subnet_prefix fe80:0000:0000:0000 lid 65535 sm_lid 0 lmc 0 state DOWN physical_state POLLING\n"
             "link mlx5_2/1 state ACTIVE physical_state LINK_UP netdev ens1f0np0\n")


def test_rdma_link_reads_each_ports_state_and_judges_it_as_ibstat_would():
    from gpu_runbook.infiniband import detect_ib_format, parse_ib
    assert detect_ib_format(RDMA_LINK) == "rdma-link"
    facts, findings = parse_ib(RDMA_LINK, source="rdma-link.txt")
    ports = {(p["device"], p["port"]): p for p in facts["ports"]}
    assert ports[("mlx5_0", 1)]["state"] == "Active" and ports[("mlx5_0", 1)]["phys_state"] == "LinkUp"
    assert ports[("mlx5_1", 1)]["state"] == "Down" and ports[("mlx5_1", 1)]["phys_state"] == "Polling"
    assert ports[("mlx5_2", 1)]["netdev"] == "ens1f0np0"
    bad = [f for f in findings if f["severity"] in ("warning", "critical")]
    assert [(f["ib"]["device"], f["category"]) for f in bad] == [("mlx5_1", "ib_network")]


def test_rdma_link_readings_of_one_port_that_go_down_and_back_are_a_flap():
    from gpu_runbook.infiniband import parse_ib
    text = "".join("link mlx5_7/1 subnet_prefix fe80:0000:0000:0000 lid 3403 sm_lid 1 lmc 0 state %s physical_state %s\n"
                   % s for s in (("ACTIVE", "LINK_UP"), ("DOWN", "POLLING"), ("ACTIVE", "LINK_UP")))
    facts, findings = parse_ib(text, source="rdma-link.txt")
    assert facts["ports"][0]["state"] == "Active"  # the last reading is the port's state
    (f,) = [f for f in findings if f["kind"] == "ib_link_downed"]
    assert f["source"] == "rdma-link.txt:2" and f["ib"]["device"] == "mlx5_7"
    steady = "".join(text.splitlines(True)[0] for _ in range(3))
    assert "ib_link_downed" not in [f["kind"] for f in parse_ib(steady, source="rdma-link.txt")[1]]


def test_sysfs_files_shown_by_head_are_read_as_grep_h_shows_them(tmp_path):
    # 'head /sys/class/infiniband/.../{state,rate,counters/...}': '==> PATH <==' over each file's value
    base = "/sys/class/infiniband/mlx5_0/ports/1/"
    heads = "".join("==> %s%s <==\n%s\n\n" % (base, f, v) for f, v in (
        ("state", "4: ACTIVE"), ("phys_state", "5: LinkUp"), ("rate", "400 Gb/sec (4X NDR)"),
        ("counters/link_downed", "255")))
    grep = "".join("%s%s:%s\n" % (base, f, v) for f, v in (
        ("state", "4: ACTIVE"), ("phys_state", "5: LinkUp"), ("rate", "400 Gb/sec (4X NDR)"),
        ("counters/link_downed", "255")))
    a_facts, a = ib.parse_ib_sysfs(heads)
    b_facts, b = ib.parse_ib_sysfs(grep)
    assert a_facts["devices"] == b_facts["devices"]
    assert [f["kind"] for f in a] == [f["kind"] for f in b] == ["ib_link_downed"]
    # by content, under any name: the head block is the sysfs reader's
    (tmp_path / "counters.txt").write_text("$ head " + base + "{state,phys_state,rate}\n" + heads)
    from gpu_runbook.cli import analyze_paths
    (h,) = analyze_paths([str(tmp_path / "counters.txt")])["hosts"]
    assert h["verdict"] == "ib_network" and "ib_link_downed" in [f["kind"] for f in h["findings"]]


def test_every_port_down_and_disabled_is_one_warning_not_a_fault_per_port():
    # PortPhysicalState Disabled: turned off (by the SM, the switch side or locally), not missing a partner
    off = {"state": "1: DOWN", "phys_state": "3: Disabled", "rate": "10 Gb/sec (4X SDR)"}
    text = sysfs(n=4, special=dict(("mlx5_%d" % i, off) for i in range(4)))
    facts, findings = ib.parse_ib_sysfs(text, source="ib-sysfs.txt")
    (f,) = sev(findings, "warning", "critical")
    assert (f["kind"], f["category"], f["severity"]) == ("ib_ports_all_disabled", "unknown", "warning")
    assert "all 4" in f["message"]
    # one of them Disabled among Active ones is that port's fault, said as turned off, not as a cable
    facts, findings = ib.parse_ib_sysfs(sysfs(special={"mlx5_3": off}), source="ib-sysfs.txt")
    (f,) = sev(findings, "warning", "critical")
    assert f["kind"] == "ib_port_down" and "turned off" in f["message"]


def test_names_in_typographic_quotes_and_flush_left_ibstatus_fields_are_read(tmp_path):
    # x46: a vendor manual's example output: ’mlx4_0’ (a word processor's quotes), ibstatus without its indent
    from gpu_runbook.cli import analyze_paths
    from gpu_runbook.infiniband.ibstat import parse_ibstat
    ibstat = ("CA \u2019mlx4_0\u2019\nCA type: MT26428\nNumber of ports: 1\nPort 1:\nState: Active\n"
              "Physical state: LinkUp\nRate: 40\nBase lid: 7\n")
    facts, _ = parse_ibstat(ibstat)
    assert facts["devices"] == ["mlx4_0"]
    ibstatus = ("# ibstatus\nInfiniband device \u2019mlx4_0\u2019 port 1 status:\n"
                "default gid: fe80:0000:0000:0000:5080:0200:008e:4d39\nbase lid: 0x7\nsm lid: 0xd\n"
                "state: 4: ACTIVE\nphys state: 5: LinkUp\nrate: 40 Gb/sec (4X QDR)\n")
    facts, _ = parse_ibstat(ibstatus)
    assert [(p["device"], p["state"], p["rate_gbps"]) for p in facts["ports"]] == [("mlx4_0", "Active", 40.0)]
    (tmp_path / "ibstatus.txt").write_text(ibstatus)
    doc = analyze_paths([str(tmp_path / "ibstatus.txt")])
    assert [f["read_as"] for f in doc["files"]] == [["ibstat"]]
