"""ibdiagnet's fabric scan (infiniband/ibdiagnet.py): read by content under any name, each stage's
errors one warning of the fabric (never a verdict on the node that ran it), firmware differences at
info, healthy only over a Summary whose every stage shows 0 errors, and an output cut before its
Summary never healthy. The clean scan is a real capture (tests/fixtures/real/x25-02: an NDR fabric's
ibdiagnet2.log, 0 errors, warnings for vendor MADs, node descriptions and firmware); the failing
stages are written in the words NVIDIA's ibdiagnet User Manual shows."""

import glob
import os

import pytest

from gpu_runbook.infiniband.ibdiagnet import parse_ibdiagnet
from gpu_runbook.cli import analyze_paths
from tests.conftest import REPO
from tests.unit.test_read_by_content import analyze_json

CLEAN = open(glob.glob(os.path.join(REPO, "tests/fixtures/real/x25-02-*/ibdiagnet2.log"))[0]).read()
PORT_COUNTERS = ("---------------------------------------------\nPort Counters\n"
                 "-I- Ports counters retrieving finished successfully\n"
                 "-E- Ports counters Difference Check (during run) finished with errors\n"
                 "-E- Sfc6a1c03009be0c0/Nfc6a1c03009be0c0/P1/3/1 - \"link_down_counter\" increased during the run "
                 "(difference value=1,difference allowed threshold=1)\n\n")
FW = ("---------------------------------------------\nNodes Information\n"
      "-E- FW Check finished with errors\n"
      "-W- r-ufm118/U1 - Node with Devid:4115(0x1013),PSID:MT_2190110032 has FW version 12.27.6008 while the "
      "latest FW version for the same Devid/PSID on this fabric is 12.100.5600\n\n")


def with_stage(stage, summary_row):
    at = CLEAN.index("---------------------------------------------\nFabric Summary")
    text = CLEAN[:at] + stage + CLEAN[at:]
    name, count = summary_row
    old = next(line for line in text.splitlines() if line.startswith("-I- %s " % name))
    return text.replace(old, old[:40] + "%-11d%d" % (0, count))


def test_a_clean_scan_is_read_and_healthy(tmp_path, capsys):
    facts, findings = parse_ibdiagnet(CLEAN, "ibdiagnet2.log")
    assert facts["summary_read"] and facts["version"].startswith('"IBDIAGNET 2.10.0')
    assert {s["stage"] for s in facts["stages"]} >= {"Discovery", "Links Check", "Port Counters", "Subnet Manager"}
    assert not any(s["failed"] for s in facts["stages"]) and findings == []
    assert next(s for s in facts["stages"] if s["stage"] == "Discovery")["warnings"] == 17
    (tmp_path / "fabric-scan.txt").write_text(CLEAN)  # any name: read by its content
    rc, doc, err = analyze_json(capsys, tmp_path / "fabric-scan.txt")
    (h,) = doc["hosts"]
    assert h["verdict"] == "healthy" and doc["files"][0]["read_as"] == ["ibdiagnet"]


def test_a_stages_errors_are_a_warning_of_the_fabric_not_of_this_node(tmp_path, capsys):
    text = with_stage(PORT_COUNTERS, ("Port Counters", 1))
    facts, findings = parse_ibdiagnet(text, "ibdiagnet2.log")
    (f,) = findings
    assert (f["kind"], f["category"], f["severity"], f["rung"]) == ("ib_fabric_scan_errors", "ib_network", "warning",
                                                                   "none")
    assert "Port Counters" in f["message"] and "link_down_counter" in f["evidence"]
    (tmp_path / "ibdiagnet.out").write_text(text)
    rc, doc, err = analyze_json(capsys, tmp_path / "ibdiagnet.out")
    (h,) = doc["hosts"]
    assert h["verdict"] == "ib_network" and h["severity"] == "warning"
    assert not any(f["rung"] in ("drain", "ib_restart", "reboot", "rma") for f in h["findings"])


def test_firmware_differences_are_info():
    facts, findings = parse_ibdiagnet(with_stage(FW, ("Nodes Information", 1)), "ibdiagnet2.log")
    assert [(f["kind"], f["severity"]) for f in findings] == [("ib_fabric_scan_errors", "info")]


@pytest.mark.parametrize("cut_at", ["Speed / Width checks", "Summary\n-I- Stage"])
def test_an_output_cut_before_its_summary_is_never_healthy(tmp_path, capsys, cut_at):
    text = CLEAN[:CLEAN.index(cut_at)]
    facts, findings = parse_ibdiagnet(text, "ibdiagnet2.log")
    assert not facts["summary_read"] and [f["kind"] for f in findings] == ["ib_fabric_scan_incomplete"]
    (tmp_path / "scan.log").write_text(text)
    rc, doc, err = analyze_json(capsys, tmp_path / "scan.log")
    assert doc["hosts"][0]["verdict"] != "healthy"


def test_other_text_is_no_scan():
    assert parse_ibdiagnet("Discovery\n-I- something\n", "x.txt") == ({}, [])
    facts, findings = parse_ibdiagnet(b"\xff\xfe garbage", "x.txt")
    assert (facts, findings) == ({}, [])


def test_the_older_ibdiagnets_marked_rules_and_stage_names_are_read_without_a_summary(tmp_path):
    # ibdiagnet v1 (ibutils), Open MPI users list 2009/03 (held-out x40-C01): '-I---' rules around '-I- <stage>'
    text = ("-I---------------------------------------------------\n-I- IPoIB Subnets Check\n"
            "-I---------------------------------------------------\n"
            "-I- Subnet: IPv4 PKey:0x7fff QKey:0x00000b1b MTU:2048Byte rate:10Gbps SL:0x00\n"
            "-W- Port localhost/P1 lid=0x00e2 guid=0x001e0bffff4ced75 dev=25218 can not join\n"
            "    due to rate:2.5Gbps < group:10Gbps\n")
    facts, findings = parse_ibdiagnet(text)
    assert facts["stages"] == [{"stage": "IPoIB Subnets Check", "errors": None, "warnings": 1, "failed": False}]
    assert [f["kind"] for f in findings] == ["ib_fabric_scan_incomplete"]  # no Summary: not a clean fabric
    (tmp_path / "notes.txt").write_text(text)
    doc = analyze_paths([str(tmp_path)])
    assert doc["files"][0]["read_as"] and doc["hosts"][0]["verdict"] == "unknown"


def test_the_older_ibdiagnets_stages_status_report_is_its_summary_errors_first():
    # ibdiagnet 1.5.7 (ArchWiki's InfiniBand page, fixture x36-01): a clean scan, one warning in a stage
    path = os.path.join(REPO, "tests", "fixtures", "real", "x36-01-archwiki-ib-healthy", "ibdiagnet.txt")
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    facts, findings = parse_ibdiagnet(text)
    assert facts["summary_read"] and facts["version"] == "/usr/lib/ibdiagnet1.5.7" and findings == []
    rows = dict((s["stage"], (s["errors"], s["warnings"])) for s in facts["stages"])
    assert rows["IPoIB Subnets Check"] == (0, 1) and rows["Partitions Check"] == (0, 0)
    # 'STAGE  Errors Warnings': the first number is the errors
    broken = text.replace("Partitions Check                         0      0",
                          "Partitions Check                         3      0")
    (f,) = parse_ibdiagnet(broken)[1]
    assert f["kind"] == "ib_fabric_scan_errors" and "Partitions Check stage found 3 error(s)" in f["message"]
