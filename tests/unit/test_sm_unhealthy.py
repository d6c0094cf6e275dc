"""The subnet manager's unhealthy-ports report (infiniband/sm_unhealthy.py): NVIDIA's OpenSM health
manager's list, as UFM shows it ('Unhealthy Ports Window': the port, its peer, the condition, the
time) under its own header, read by content under any name. Each listed link is an unhealthy link
of the fabric (ib_network, warning, no rung: it is a switch port more often than a node's), one
finding for a link reported from both ends; an HCA's end names its host; the header alone is a
healthy reading. The sample in tests/fixtures/real/x36-04-* is facebookresearch/gcm's test data;
the rows below are written in its layout."""

import pytest

from gpu_runbook.infiniband.sm_unhealthy import parse_sm_unhealthy_ports
from gpu_runbook.cli import analyze_paths

HEADER = "# NodeGUID, PortNum, NodeDesc, PeerNodeGUID, PeerPortNum,  PeerNodeDesc, {BadCond1, BadCond2, ...}, TimeStamp\n"
SWITCHES = ('0x0011223344550001, 25, "spine-sw-03", 0x0055667788990001, 25, "leaf-sw-38", {FLAPPING}, '
            'Fri Mar 20 01:13:40 2026\n'
            '0x0055667788990001, 25, "leaf-sw-38", 0x0011223344550001, 25, "spine-sw-03", {FLAPPING}, '
            'Fri Mar 20 01:13:40 2026\n')
HCA = ('0x0c42a10300aa0001, 1, "gpu-b-12 mlx5_3", 0x0055667788990007, 17, "leaf-sw-05", {UNRESPONSIVE, SET_ERR}, '
       'Sat Mar 21 09:00:00 2026\n')


def test_a_link_reported_from_both_ends_is_one_unhealthy_link_of_the_fabric():
    facts, findings = parse_sm_unhealthy_ports(HEADER + SWITCHES, "unhealthy_ports.txt")
    (f,) = findings
    assert (f["kind"], f["category"], f["severity"], f["rung"]) == ("ib_sm_unhealthy_port", "ib_network", "warning",
                                                                   "none")
    assert "spine-sw-03 port 25 <-> leaf-sw-38 port 25" in f["message"] and "(FLAPPING)" in f["message"]
    assert "both ends" in f["message"] and f["source"] == "unhealthy_ports.txt:2"
    assert facts["links"] == 1 and len(facts["ports"]) == 2 and facts["hosts"] == []


def test_an_hcas_end_names_its_host_and_every_condition():
    facts, findings = parse_sm_unhealthy_ports(HEADER + SWITCHES + HCA)
    assert len(findings) == 2 and facts["hosts"] == ["gpu-b-12"]
    hca = [f for f in findings if "gpu-b-12" in f["message"]][0]
    assert "(SET_ERR, UNRESPONSIVE)" in hca["message"] and "the HCA end is gpu-b-12's" in hca["message"]


def test_the_header_alone_is_a_healthy_reading_and_text_that_is_not_it_is_unparseable():
    facts, findings = parse_sm_unhealthy_ports(HEADER)
    assert findings == [] and facts["header"] and facts["ports"] == []
    _facts, findings = parse_sm_unhealthy_ports("hello\nworld\n")
    assert [f["kind"] for f in findings] == ["ib_unparseable"]


@pytest.mark.parametrize("name", ["unhealthy_ports.txt", "paste.txt", "ufm.log"])
def test_it_is_read_by_content_under_any_name(tmp_path, name):
    d = tmp_path / "sm01"
    d.mkdir()
    (d / name).write_text("$ cat /var/log/opensm-unhealthy-ports.dump\n" + HEADER + SWITCHES)
    (h,) = analyze_paths([str(d)])["hosts"]
    assert h["verdict"] == "ib_network" and [f["kind"] for f in h["findings"]] == ["ib_sm_unhealthy_port"]
    (d / name).write_text(HEADER)
    (h,) = analyze_paths([str(d)])["hosts"]
    assert h["verdict"] == "healthy"


@pytest.mark.parametrize("text", [None, b"\xff\xfe", "", HEADER * 3, '0x1, 1, "a", 0x2, 2, "b", {' + "X," * 5000,
                                  HEADER + '0x1, 999999, "a", 0x2, 2, "b", {}, now\n'])
def test_hostile_input_never_raises(text):
    facts, findings = parse_sm_unhealthy_ports(text)
    assert isinstance(facts, dict) and isinstance(findings, list)
