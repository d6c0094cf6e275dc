"""Tests for gpu_runbook.nvsmi against real captures (tests/fixtures/nvsmi/<case>/ with case.json
truth), variants derived from them, and edge cases (CRLF, ANSI, truncation, garbage, empty)."""

import ast
import json
import random
import re
from pathlib import Path

import pytest

from gpu_runbook import nvsmi
from gpu_runbook.findings import CATEGORIES, RUNGS, SEVERITIES, normalize_pci
from gpu_runbook.nvsmi import (detect_format, parse_compute_apps_csv, parse_compute_apps_csv_findings,
                               parse_nvidia_smi, parse_nvidia_smi_q, parse_nvidia_smi_table, parse_nvidia_smi_xml,
                               parse_query_gpu_csv)

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "nvsmi"
SYN = FIX / "xml-synthetic-h100x8"


def load(case, name=None):
    d = FIX / case
    if name is None:
        name = next(n for n in ("nvidia-smi-q.txt", "nvidia-smi-q.xml", "nvidia-smi.txt") if (d / n).exists())
    text = (d / name).read_text(encoding="utf-8")
    truth = json.loads((d / "case.json").read_text(encoding="utf-8"))["truth"]
    return text, truth


def kinds(findings, severity=None):
    return [f["kind"] for f in findings if severity is None or f["severity"] == severity]


def serious(findings):
    return [f for f in findings if f["severity"] in ("warning", "critical")]


def by_kind(findings, kind):
    out = [f for f in findings if f["kind"] == kind]
    assert out, "no %s finding in %s" % (kind, kinds(findings))
    return out


def check_contract(facts, findings, text, source):
    """Every finding is well formed and its evidence is really at source:line."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for f in findings:
        assert f["category"] in CATEGORIES and f["severity"] in SEVERITIES and f["rung"] in RUNGS
        assert f["source"] == source or f["source"].startswith(source + ":")
        m = re.match(r"^.*:(\d+)$", f["source"])
        if m and f["evidence"]:
            line = lines[int(m.group(1)) - 1]
            ev = f["evidence"]
            if ev.startswith("<"):
                assert ev.split(">")[0] in line, (ev, line)
            else:
                assert ev in re.sub(r"\x1b\[[0-9;]*m", "", line), (ev, line)
    json.dumps(facts)
    json.dumps(findings)
    assert facts["count"] == len(facts["gpus"])
    for g in facts["gpus"]:
        assert not [k for k in g if k.startswith("_")]


# --------------------------------------------------------------------------- real captures

# every fixture dir whose case.json has one truth for one capture file (the synthetic dir has one per file)
CAPTURES = sorted(p.name for p in FIX.iterdir() if (p / "case.json").exists()
                  and "category" in json.loads((p / "case.json").read_text())["truth"])


def test_fixture_inventory():
    assert len(CAPTURES) >= 16
    for case in CAPTURES:
        meta = json.loads((FIX / case / "case.json").read_text())
        assert meta["source"] and meta["license"], case


@pytest.mark.parametrize("case", CAPTURES)
def test_capture_category_and_contract(case):
    text, truth = load(case)
    src = "cap.txt"
    facts, findings = parse_nvidia_smi(text, src)
    check_contract(facts, findings, text, src)
    cat = truth["category"]
    if cat == "healthy":
        assert serious(findings) == [], findings
    elif cat == "gpu_hardware":
        assert [f for f in serious(findings) if f["category"] == "gpu_hardware"], findings
    elif cat == "unknown":
        assert [f for f in serious(findings) if f["category"] == "unknown"], findings
        assert not [f for f in findings if f["severity"] == "critical"], findings
    if "driver" in truth:
        assert facts["driver_version"] == truth["driver"]
    if "gpu_count" in truth:
        assert facts["count"] == truth["gpu_count"]
    if "gpu_model" in truth:
        assert facts["gpus"] and all(g["name"] == truth["gpu_model"] or truth["gpu_model"].startswith(
            g["name"].rstrip(".")) for g in facts["gpus"]), [g["name"] for g in facts["gpus"]]
    if "inactive_nvlinks" in truth:
        got = dict(("GPU %d" % g["index"], g["nvlink_inactive"]) for g in facts["gpus"] if g["nvlink_inactive"])
        assert got == truth["inactive_nvlinks"]


def test_004_a10_remap_pending():
    text, truth = load("004-gpud-smi-q-a10-remap-pending")
    facts, findings = parse_nvidia_smi_q(text, "q.txt")
    assert facts["format"] == "q" and facts["cuda_version"] == "12.2"
    g, = facts["gpus"]
    assert g["pci"] == normalize_pci(truth["gpu_pci"]) == "0000:07:00.0"
    assert g["name"] == truth["gpu_model"]
    assert g["index"] == 0 and g["minor_number"] == 0
    assert g["uuid"] == "GPU-73d12ef7-f589-f867-4259-c7090ab44736"
    assert g["remapped_rows"] == {"correctable": 0, "uncorrectable": truth["remapped_rows_uncorrectable"],
                                  "pending": True, "failure": False}
    assert g["ecc"]["volatile"]["dram_uncorrectable"] == truth["ecc_volatile_dram_uncorrectable"]
    assert g["ecc"]["volatile"]["uncorrectable"] == 0
    assert g["retired_pages"] == {"single_bit": None, "double_bit": None, "pending": None}
    assert g["reset_required"] is False and g["mig_mode"] is None and g["temperature_c"] == 33
    f, = by_kind(findings, "row_remap_pending")
    assert (f["severity"], f["category"], f["rung"]) == ("critical", "gpu_hardware", "gpu_reset")
    assert f["gpu"] == {"pci": "0000:07:00.0", "index": 0, "uuid": g["uuid"]}
    assert f["source"] == "q.txt:142" and f["evidence"] == "Pending                           : Yes"
    assert "reset GPU to apply the pending row remap" in f["message"]
    assert kinds(findings) == ["row_remap_pending"]


def test_005_h100_healthy_and_expected_count():
    text, truth = load("005-gpud-smi-q-h100x8-healthy")
    facts, findings = parse_nvidia_smi_q(text, expected_gpus=8)
    assert facts["count"] == 8 and facts["attached_gpus"] == 8
    assert [g["index"] for g in facts["gpus"]] == list(range(8))
    for g in facts["gpus"]:
        assert g["name"] == truth["gpu_model"]
        assert g["ecc"]["volatile"]["uncorrectable"] == 0 and g["ecc"]["aggregate"]["uncorrectable"] == 0
        assert g["ecc"]["volatile"]["sram_uncorrectable_secded"] == 0
        assert g["ecc"]["sram_threshold_exceeded"] is False
        assert g["remapped_rows"]["pending"] is False and g["remapped_rows"]["failure"] is False
    assert serious(findings) == []
    # GPU 2 shows a transient HW power-brake sub-reason + SW thermal: info only
    assert sorted(set(f["gpu"]["index"] for f in findings)) == [2]
    _, f9 = parse_nvidia_smi_q(text, expected_gpus=9)
    m, = by_kind(f9, "gpu_missing")
    assert m["severity"] == "critical" and m["rung"] == "reboot" and "8 of 9" in m["message"]


def test_006_power_brake_on_every_gpu_is_one_platform_finding():
    text, truth = load("006-gpud-smi-q-h100x8-hw-power-brake")
    facts, findings = parse_nvidia_smi_q(text, "q.txt")
    assert sum(1 for g in facts["gpus"] if g["throttle"]["hw_slowdown"]) == truth["hw_slowdown_active_gpus"]
    assert sum(1 for g in facts["gpus"] if g["throttle"]["hw_power_brake"]) == \
        truth["hw_power_brake_slowdown_active_gpus"]
    assert all(g["throttle"]["hw_thermal"] is False for g in facts["gpus"])
    f, = serious(findings)
    assert f["kind"] == "hw_slowdown_all_gpus" and f["category"] == truth["category"] == "unknown"
    assert f["severity"] == "warning" and f["gpu"] is None and "All 8 GPUs" in f["message"]
    assert "HW Power Brake Slowdown" in f["evidence"]
    assert not by_kind_or_none(findings, "hw_slowdown")


def by_kind_or_none(findings, kind):
    return [f for f in findings if f["kind"] == kind]


def test_hw_slowdown_on_one_gpu_is_per_gpu():
    text, _ = load("006-gpud-smi-q-h100x8-hw-power-brake")
    # clear the slowdown on all GPUs but the 4th one
    parts = re.split(r"(?m)^(?=GPU [0-9A-F]{8}:)", text)
    for i in range(1, len(parts)):
        if i != 4:
            parts[i] = parts[i].replace(": Active", ": Not Active")
    facts, findings = parse_nvidia_smi_q("".join(parts), "q.txt")
    f, = serious(findings)
    assert f["kind"] == "hw_slowdown" and f["category"] == "gpu_hardware" and f["gpu"]["index"] == 3
    assert f["gpu"]["pci"] == facts["gpus"][3]["pci"] and "power brake" in f["message"]


def test_007_addressing_mode_unknown_error_is_not_a_fault():
    text, truth = load("007-gpud-smi-q-rtx4090x8-addressing-unknown-error")
    facts, findings = parse_nvidia_smi_q(text)
    assert facts["count"] == truth["gpu_count"]
    assert findings == []
    for g in facts["gpus"]:
        assert g["errors"] == []
        assert g["ecc"]["volatile"]["uncorrectable"] is None  # N/A -> None, never 0
        assert g["ecc"]["aggregate"]["correctable"] is None
        assert g["ecc_mode"] == "Disabled" and g["serial"] is None
    # nvidia-smi index is PCI order (file order); Minor Number is /dev/nvidiaN and differs
    assert [g["index"] for g in facts["gpus"]] == list(range(8))
    assert [g["minor_number"] for g in facts["gpus"]] == [2, 3, 1, 0, 6, 7, 5, 4]
    assert facts["gpus"][0]["pci"] == "0000:01:00.0"


def test_008_table_fan_err():
    text, truth = load("008-gpud-smi-table-fan-err")
    facts, findings = parse_nvidia_smi_table(text, "t.txt")
    assert facts["format"] == "table" and facts["driver_version"] == truth["driver"]
    assert facts["cuda_version"] == "12.0"
    g, = facts["gpus"]
    assert g["index"] == truth["gpu_index"] and g["pci"] == normalize_pci(truth["gpu_pci"])
    assert g["errors"] == truth["err_fields"]
    assert g["temperature_c"] == 38 and g["ecc"]["volatile"]["uncorrectable"] == 0
    f, = findings
    assert (f["kind"], f["severity"], f["category"]) == ("nvsmi_err_field", "warning", truth["category"])
    assert f["source"] == "t.txt:9" and f["evidence"].startswith("|ERR!")


def test_009_table_healthy():
    text, truth = load("009-gpud-smi-table-h100x8-healthy")
    facts, findings = parse_nvidia_smi_table(text, expected_gpus=8)
    assert findings == []
    assert facts["count"] == 8 and facts["driver_version"] == "550.90.07" and facts["cuda_version"] == "12.4"
    assert [g["index"] for g in facts["gpus"]] == list(range(8))
    assert facts["gpus"][1]["pci"] == "0000:3b:00.0"
    assert all(g["name"] == truth["gpu_model"] for g in facts["gpus"])
    assert all(g["ecc"]["volatile"]["uncorrectable"] == truth["volatile_uncorr_ecc"] for g in facts["gpus"])
    assert all(g["mig_mode"] == "Disabled" for g in facts["gpus"])
    assert [g["temperature_c"] for g in facts["gpus"]] == [27, 24, 23, 23, 27, 22, 24, 23]


def test_017_inforom_corrupted():
    text, truth = load("017-azure-smi-table-inforom-corrupted")
    facts, findings = parse_nvidia_smi(text, "t.txt", expected_gpus=8)
    assert facts["format"] == "table" and facts["count"] == 8
    f, = findings
    assert f["kind"] == "inforom_corrupted" and f["category"] == truth["category"] and f["rung"] == "rma"
    assert f["gpu"]["pci"] == normalize_pci(truth["faulty_gpu_pci"]) and f["gpu"]["index"] == truth["gpu_index"]
    assert f["source"] == "t.txt:49"
    assert facts["gpus"][7]["name"].startswith("Tesla V100-SXM2")


def test_018_a100_old_driver_healthy():
    text, truth = load("018-azure-smi-q-a100x8-healthy")
    facts, findings = parse_nvidia_smi_q(text, expected_gpus=8)
    assert findings == []
    assert facts["driver_version"] == truth["driver"] and facts["count"] == 8
    g = facts["gpus"][0]
    assert g["name"] == truth["gpu_model"] and g["pci"] == "0001:00:00.0" and g["ecc_mode"] == "Enabled"
    assert g["throttle"]["idle"] is True and g["throttle"]["hw_slowdown"] is False  # 'Clocks Throttle Reasons'
    assert g["reset_required"] is None  # 460 has no GPU Reset Status section


def test_019_nvlink_inactive():
    text, truth = load("019-azure-smi-nvlink-inactive-links")
    facts, findings = parse_nvidia_smi(text, "nv.txt", expected_gpus=8)
    got = dict(("GPU %d" % g["index"], g["nvlink_inactive"]) for g in facts["gpus"] if g["nvlink_inactive"])
    assert got == truth["inactive_nvlinks"]
    assert all(g["nvlink_inactive"] == [] for g in facts["gpus"] if g["index"] in (0, 1, 2))
    assert sorted(f["gpu"]["index"] for f in findings) == [3, 4, 5, 6]
    assert all(f["kind"] == "nvlink_inactive" and f["category"] == truth["category"] for f in findings)
    assert facts["gpus"][3]["uuid"] == "GPU-50b1bd2e-77ee-2731-fd2f-17c44103b7b9"


def test_047_remap_pending_excerpt():
    text, truth = load("047-mleng-xid63-a100-remap-pending-dram-ce177")
    facts, findings = parse_nvidia_smi_q(text)
    g, = facts["gpus"]
    assert g["pci"] == normalize_pci(truth["faulty_gpu_pci"]) == "0000:10:1c.0"
    assert g["ecc"]["volatile"]["dram_correctable"] == truth["dram_correctable_volatile"]
    assert g["remapped_rows"] == {"correctable": truth["remapped_rows_correctable"], "uncorrectable": 0,
                                  "pending": True, "failure": False}
    assert g["index"] is None  # 1 section of 8 attached: file order is not the index
    assert kinds(findings, "critical") == ["row_remap_pending"]
    assert kinds(findings, "info") == ["nvsmi_incomplete"]


def test_048_sram_rma_threshold():
    text, truth = load("048-mleng-sram-uncorrectable-ecc-rma-threshold")
    facts, findings = parse_nvidia_smi(text, "e.txt", expected_gpus=8)
    g, = facts["gpus"]
    assert g["ecc"]["volatile"]["sram_uncorrectable"] == truth["ecc_sram_uncorrectable_volatile"]
    assert g["ecc"]["aggregate"]["sram_uncorrectable"] == truth["ecc_sram_uncorrectable_aggregate"]
    v, = by_kind(findings, "ecc_uncorrectable_volatile")
    assert v["rung"] == "gpu_reset" and v["source"] == "e.txt:4" and v["severity"] == "critical"
    r, = by_kind(findings, "ecc_sram_uncorrectable_rma")
    assert r["rung"] == "rma" and r["source"] == "e.txt:9"
    assert sorted(kinds(findings)) == ["ecc_sram_uncorrectable_rma", "ecc_uncorrectable_volatile"]
    _, f5 = parse_nvidia_smi(text, "e.txt", thresholds={"sram_uncorrectable_rma": 5})
    assert kinds(f5) == ["ecc_uncorrectable_volatile"]


def test_075_mig_xml_na_is_not_a_fault():
    text, truth = load("075-telegraf-a100-mig-smi-q-xml-healthy")
    facts, findings = parse_nvidia_smi_xml(text, "x.xml")
    assert facts["format"] == "xml" and facts["driver_version"] == "535.54.03" and facts["cuda_version"] == "12.2"
    g, = facts["gpus"]
    assert g["pci"] == normalize_pci(truth["gpu_pci"]) and g["name"] == truth["product"]
    assert g["mig_mode"] == "Enabled" and g["reset_required"] is False
    assert g["remapped_rows"] == {"correctable": None, "uncorrectable": None, "pending": None, "failure": None}
    assert g["retired_pages"] == {"single_bit": None, "double_bit": None, "pending": None}
    assert g["ecc"]["volatile"]["uncorrectable"] == 0 and g["ecc"]["aggregate"]["correctable"] == 0
    assert g["temperature_c"] == 27 and g["serial"] == "1650522003820" and g["minor_number"] == 1
    assert serious(findings) == []


def test_082_page_retirement_only():
    text, truth = load("082-azhc-smi-q-page-retirement-8gpu-healthy")
    facts, findings = parse_nvidia_smi_q(text, expected_gpus=8)
    assert findings == []
    assert [g["pci"] for g in facts["gpus"]] == ["%04d:00:00.0" % i for i in range(1, 9)]
    assert all(g["retired_pages"] == {"single_bit": 0, "double_bit": 0, "pending": False} for g in facts["gpus"])
    assert all(g["ecc"]["volatile"]["uncorrectable"] is None for g in facts["gpus"])


# --------------------------------------------------------------------------- real XML from public repos

def test_xml_a10g_real():
    text, truth = load("xml-telegraf-a10g", "nvidia-smi-q.xml")
    facts, findings = parse_nvidia_smi(text, "a.xml", expected_gpus=1)
    assert facts["format"] == "xml" and findings == []
    g, = facts["gpus"]
    assert g["pci"] == normalize_pci(truth["gpu_pci"]) and g["name"] == truth["product"]
    assert facts["driver_version"] == truth["driver"] and facts["cuda_version"] == truth["cuda"]
    assert g["remapped_rows"] == {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False}
    assert g["throttle"]["idle"] is True and g["throttle"]["hw_slowdown"] is False
    assert g["ecc"]["volatile"] == {"correctable": 0, "uncorrectable": 0, "sram_correctable": 0,
                                    "sram_uncorrectable": 0, "dram_correctable": 0, "dram_uncorrectable": 0}


def test_xml_tesla_p4_old_schema_all_na():
    text, truth = load("xml-telegraf-tesla-p4", "nvidia-smi-q.xml")
    facts, findings = parse_nvidia_smi_xml(text)
    assert findings == []
    g, = facts["gpus"]
    assert g["pci"] == "0000:00:0b.0" and g["name"] == truth["product"] and g["minor_number"] is None
    assert g["ecc"]["volatile"] == {"correctable": None, "uncorrectable": None}
    assert g["throttle"] == {"hw_slowdown": None, "hw_power_brake": None, "hw_thermal": None, "sw_thermal": None}
    assert g["errors"] == []


def test_xml_old_schema_double_bit_total_counts():
    text, _ = load("xml-telegraf-tesla-p4", "nvidia-smi-q.xml")
    # volatile double_bit total = 3 (the second <total> in the file belongs to volatile/double_bit)
    totals = [m.start() for m in re.finditer(r"<total>N/A</total>", text)]
    t = text[:totals[1]] + "<total>3</total>" + text[totals[1] + len("<total>N/A</total>"):]
    facts, findings = parse_nvidia_smi_xml(t, "p4.xml")
    assert facts["gpus"][0]["ecc"]["volatile"]["uncorrectable"] == 3
    f, = serious(findings)
    assert f["kind"] == "ecc_uncorrectable_volatile" and f["evidence"] == "<total>3</total>"
    check_contract(facts, findings, t, "p4.xml")


# --------------------------------------------------------------------------- synthetic XML (derived from real)

def test_xml_h100x8_healthy():
    text = (SYN / "healthy.xml").read_text()
    facts, findings = parse_nvidia_smi(text, "h.xml", expected_gpus=8)
    assert findings == []
    assert facts["count"] == 8 and [g["index"] for g in facts["gpus"]] == list(range(8))
    assert facts["gpus"][3]["pci"] == "0000:5d:00.0" and facts["gpus"][3]["mig_mode"] == "Disabled"
    assert all(g["ecc"]["aggregate"]["sram_uncorrectable"] == 0 for g in facts["gpus"])
    assert all(g["ecc"]["sram_threshold_exceeded"] is False for g in facts["gpus"])


def test_xml_h100x8_faults_point_at_the_right_gpus():
    text = (SYN / "faults.xml").read_text()
    truth = json.loads((SYN / "case.json").read_text())["truth"]["faults.xml"]
    facts, findings = parse_nvidia_smi_xml(text, "f.xml", expected_gpus=8)
    check_contract(facts, findings, text, "f.xml")
    got = sorted((f["kind"], f["gpu"]["index"], f["gpu"]["pci"], f["rung"]) for f in serious(findings))
    assert got == sorted([
        ("row_remap_pending", 3, truth["remap_pending_gpu"]["pci"], "gpu_reset"),
        ("ecc_uncorrectable_volatile", 5, truth["volatile_dram_uncorrectable_gpu"]["pci"], "gpu_reset"),
        ("gpu_reset_required", 6, truth["reset_required_gpu"]["pci"], "gpu_reset"),
    ])
    assert all(f["severity"] == "critical" for f in serious(findings))
    assert facts["gpus"][5]["ecc"]["volatile"]["uncorrectable"] == 2
    assert facts["gpus"][3]["remapped_rows"]["uncorrectable"] == 1
    ev = by_kind(findings, "ecc_uncorrectable_volatile")[0]
    assert ev["evidence"] == "<dram_uncorrectable>2</dram_uncorrectable>"
    assert ev["gpu"]["uuid"] == facts["gpus"][5]["uuid"]


def test_xml_missing_gpu():
    text = (SYN / "missing-gpu4.xml").read_text()
    facts, findings = parse_nvidia_smi_xml(text, "m.xml", expected_gpus=8)
    assert facts["count"] == 7 and "0000:9b:00.0" not in [g["pci"] for g in facts["gpus"]]
    f, = findings
    assert (f["kind"], f["severity"], f["category"], f["rung"]) == ("gpu_missing", "critical", "gpu_hardware",
                                                                    "reboot")
    assert "GPU missing (fallen off the bus?)" in f["message"] and f["source"] == "m.xml:7"
    # without an expected count, 7 of an SXM model is only a warning that one may be missing
    assert [(f["kind"], f["severity"]) for f in parse_nvidia_smi_xml(text, "m.xml")[1]] == [
        ("gpu_count_unusual", "warning")]


def test_xml_power_brake_all():
    facts, findings = parse_nvidia_smi((SYN / "power-brake-all.xml").read_text(), "p.xml")
    f, = findings
    assert f["kind"] == "hw_slowdown_all_gpus" and f["category"] == "unknown"
    assert all(g["throttle"]["hw_power_brake"] for g in facts["gpus"])


def test_xml_truncated_mid_gpu():
    text = (SYN / "truncated-mid-gpu5.xml").read_text()
    facts, findings = parse_nvidia_smi(text, "t.xml", expected_gpus=8)
    assert facts["count"] == 6 and facts["gpus"][5]["pci"] == "0000:bb:00.0"
    assert [g["index"] for g in facts["gpus"]] == list(range(6))
    assert kinds(findings) == ["nvsmi_truncated"] and findings[0]["severity"] == "info"
    assert all(g["ecc"]["volatile"]["uncorrectable"] == 0 for g in facts["gpus"])


@pytest.mark.parametrize("cut", [1, 50, 300, 1000, 5000, 20000, 44444, 90000])
def test_xml_cut_anywhere_never_raises(cut):
    text = (SYN / "faults.xml").read_text()[:cut]
    facts, findings = parse_nvidia_smi_xml(text, "c.xml")
    assert isinstance(facts["gpus"], list)
    check_contract(facts, findings, text, "c.xml")


def test_xml_entities_not_expanded_and_no_dtd_fetch():
    doc = ('<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>'
           '<nvidia_smi_log><driver_version>550.1</driver_version><gpu id="00000000:3B:00.0">'
           '<product_name>&e;</product_name><serial>A&amp;B</serial></gpu></nvidia_smi_log>')
    facts, findings = parse_nvidia_smi(doc, "e.xml")
    g, = facts["gpus"]
    assert g["name"] == "&e;" and g["serial"] == "A&B" and g["pci"] == "0000:3b:00.0"


def test_xml_pending_retirement_evidence_is_the_yes_line():
    text = (SYN / "healthy.xml").read_text()
    i = text.index('<gpu id="00000000:9B:00.0">')
    j = text.index("<pending_retirement>N/A</pending_retirement>", i)
    t = text[:j] + "<pending_retirement>Yes</pending_retirement>" + text[j + len("<pending_retirement>N/A</pending_retirement>"):]
    facts, findings = parse_nvidia_smi_xml(t, "r.xml")
    f, = serious(findings)
    assert f["kind"] == "retired_pages_pending" and f["gpu"]["index"] == 4 and f["severity"] == "warning"
    assert f["evidence"] == "<pending_retirement>Yes</pending_retirement>"
    assert facts["gpus"][4]["retired_pages"]["pending"] is True and facts["gpus"][3]["retired_pages"]["pending"] is None
    check_contract(facts, findings, t, "r.xml")


def test_xml_blackwell_repair_flags():
    """Tags as in telegraf's real pro-6000-maxq-blackwell-v13.xml (<ecc_errors> children)."""
    text = (SYN / "healthy.xml").read_text()
    i = text.index("</ecc_errors>", text.index('<gpu id="00000000:3B:00.0">'))
    t = text[:i] + ("    <channel_repair_pending>Yes</channel_repair_pending>\n"
                    "            <tpc_repair_pending>No</tpc_repair_pending>\n"
                    "            <unrepairable_memory>N/A</unrepairable_memory>\n        ") + text[i:]
    facts, findings = parse_nvidia_smi_xml(t, "b.xml")
    f, = findings
    assert (f["kind"], f["gpu"]["index"], f["rung"]) == ("channel_repair_pending", 1, "gpu_reset")
    assert facts["gpus"][1]["ecc"]["channel_repair_pending"] is True
    assert facts["gpus"][1]["ecc"]["unrepairable_memory"] is None
    check_contract(facts, findings, t, "b.xml")


def test_fabric_not_ready():
    text, _ = load(H100_Q)
    t = edit_gpu(text, 6, "        State                             : Completed",
                 "        State                             : In Progress")
    t = edit_gpu(t, 6, "        Status                            : Success",
                 "        Status                            : N/A")
    facts, findings = parse_nvidia_smi_q(t, "q.txt")
    f, = serious(findings)
    assert (f["kind"], f["category"], f["gpu"]["index"]) == ("fabric_not_ready", "driver", 6)
    assert facts["gpus"][6]["fabric_state"] == "In Progress" and facts["gpus"][0]["fabric_state"] == "Completed"


def test_xml_unknown_error_and_gpu_lost_fields():
    text = (SYN / "healthy.xml").read_text()
    i = text.index("<serial>16501240315", text.index('<gpu id="00000000:4C:00.0">'))
    t = text[:i] + "<serial>Unknown Error</serial>" + text[text.index("</serial>", i) + len("</serial>"):]
    t = t.replace("<addressing_mode>None</addressing_mode>", "<addressing_mode>Unknown Error</addressing_mode>")
    facts, findings = parse_nvidia_smi_xml(t, "u.xml")
    f, = serious(findings)
    assert f["kind"] == "nvml_field_error" and f["severity"] == "warning" and f["gpu"]["index"] == 2
    assert facts["gpus"][2]["errors"] == ["serial"] and facts["gpus"][2]["serial"] is None
    t2 = t.replace("<serial>Unknown Error</serial>", "<serial>GPU is lost</serial>")
    f2, = serious(parse_nvidia_smi_xml(t2, "u.xml")[1])
    assert f2["severity"] == "critical" and f2["rung"] == "reboot"


# --------------------------------------------------------------------------- -q variants derived from real captures

def gpu_sections(text):
    return re.split(r"(?m)^(?=GPU [0-9A-Fa-f]{8}:)", text)


def edit_gpu(text, n, old, new, count=1):
    parts = gpu_sections(text)
    assert old in parts[n + 1], old
    parts[n + 1] = parts[n + 1].replace(old, new, count)
    return "".join(parts)


H100_Q = "005-gpud-smi-q-h100x8-healthy"


def test_q_faults_point_at_the_right_gpu():
    text, _ = load(H100_Q)
    t = edit_gpu(text, 3, "        Pending                           : No\n        Remapping",
                 "        Pending                           : Yes\n        Remapping")
    t = edit_gpu(t, 5, "            DRAM Uncorrectable            : 0", "            DRAM Uncorrectable            : 3")
    t = edit_gpu(t, 6, "Reset Required                    : No", "Reset Required                    : Yes")
    t = edit_gpu(t, 1, "Remapping Failure Occurred        : No", "Remapping Failure Occurred        : Yes")
    t = edit_gpu(t, 7, "SRAM Threshold Exceeded       : No", "SRAM Threshold Exceeded       : Yes")
    facts, findings = parse_nvidia_smi_q(t, "q.txt", expected_gpus=8)
    check_contract(facts, findings, t, "q.txt")
    got = sorted((f["kind"], f["gpu"]["index"], f["rung"]) for f in serious(findings))
    assert got == sorted([("row_remap_pending", 3, "gpu_reset"), ("ecc_uncorrectable_volatile", 5, "gpu_reset"),
                          ("gpu_reset_required", 6, "gpu_reset"), ("row_remap_failure", 1, "rma"),
                          ("ecc_sram_threshold_exceeded", 7, "rma")])
    ecc = by_kind(findings, "ecc_uncorrectable_volatile")[0]
    assert ecc["evidence"] == "DRAM Uncorrectable            : 3"
    assert ecc["gpu"]["pci"] == facts["gpus"][5]["pci"]


def test_q_sram_parity_secded_add_up():
    text, _ = load(H100_Q)
    t = edit_gpu(text, 0, "SRAM Uncorrectable Parity     : 0", "SRAM Uncorrectable Parity     : 2", 2)
    t = edit_gpu(t, 0, "SRAM Uncorrectable SEC-DED    : 0", "SRAM Uncorrectable SEC-DED    : 3", 2)
    facts, findings = parse_nvidia_smi_q(t, "q.txt")
    e = facts["gpus"][0]["ecc"]
    assert e["volatile"]["sram_uncorrectable"] == 5 and e["aggregate"]["sram_uncorrectable"] == 5
    assert sorted(kinds(serious(findings))) == ["ecc_sram_uncorrectable_rma", "ecc_uncorrectable_volatile"]


def test_q_missing_gpu_section():
    text, _ = load(H100_Q)
    parts = gpu_sections(text)
    t = "".join(parts[:5] + parts[6:]).replace("Attached GPUs                             : 8",
                                                "Attached GPUs                             : 7")
    facts, findings = parse_nvidia_smi_q(t, "q.txt", expected_gpus=8)
    assert facts["count"] == 7
    m, = by_kind(findings, "gpu_missing")
    assert m["severity"] == "critical" and m["rung"] == "reboot" and m["evidence"].startswith("Attached GPUs")
    assert not by_kind_or_none(parse_nvidia_smi_q(t, "q.txt", expected_gpus=7)[1], "gpu_missing")


def test_q_lost_gpu_keeps_the_other_indices():
    """nvidia-smi -q with a GPU it cannot open: 'Attached GPUs: 8', 7 sections and an error line.
    The index is the PCI-order rank, so GPUs after the lost one keep their real index."""
    text, _ = load(H100_Q)
    parts = gpu_sections(text)
    lost_pci = normalize_pci(parts[3].split()[1])
    t = parts[0] + "".join(parts[1:3]) + ("Unable to determine the device handle for gpu %s: Unknown Error\n"
                                          % lost_pci.upper()) + "".join(parts[4:])
    facts, findings = parse_nvidia_smi(t, "q.txt", expected_gpus=8)
    assert [g["index"] for g in facts["gpus"]] == [0, 1, 3, 4, 5, 6, 7]
    f, = serious(findings)
    assert f["kind"] == "gpu_handle_error" and f["gpu"]["pci"] == lost_pci and f["gpu"]["index"] == 2
    assert "nvsmi_incomplete" not in kinds(findings)


def test_xml_lost_gpu_stderr_after_document():
    text = (SYN / "healthy.xml").read_text()
    i = text.index('    <gpu id="00000000:9B:00.0">')
    j = text.index("</gpu>", i) + len("</gpu>\n")
    t = text[:i] + text[j:] + "\nUnable to determine the device handle for GPU 0000:9B:00.0: Unknown Error\n"
    facts, findings = parse_nvidia_smi(t, "x.xml", expected_gpus=8)
    assert facts["attached_gpus"] == 8 and [g["index"] for g in facts["gpus"]] == [0, 1, 2, 3, 5, 6, 7]
    f, = findings
    assert (f["kind"], f["gpu"]["index"], f["gpu"]["pci"]) == ("gpu_handle_error", 4, "0000:9b:00.0")


# one kind per remedy (issue 7: a kind's rung is fixed), named after what the driver asks for
@pytest.mark.parametrize("action,kind,severity,rung", [("Reset", "gpu_recovery_reset", "critical", "gpu_reset"),
                                                        ("Reboot", "gpu_recovery_reboot", "critical", "reboot"),
                                                        ("Drain P2P", "gpu_recovery_drain_p2p", "warning", "drain"),
                                                        ("Drain and Reset", "gpu_recovery_reset", "critical",
                                                         "gpu_reset"),
                                                        ("Recover IMEX Domain", "gpu_recovery_imex_domain",
                                                         "critical", "drain"),
                                                        ("Bus Reset", "gpu_recovery_bus_reset", "critical", "reboot"),
                                                        ("System Reboot", "gpu_recovery_reboot", "critical", "reboot"),
                                                        ("Hold Still", "gpu_recovery_unknown", "warning", "drain"),
                                                        ("None", None, None, None)])
def test_q_gpu_recovery_action(action, kind, severity, rung):
    text, _ = load("004-gpud-smi-q-a10-remap-pending")
    t = text.replace("    GPU Reset Status\n", "    GPU Recovery Action                   : %s\n    GPU Reset Status\n"
                     % action).replace("Pending                           : Yes", "Pending                           : No")
    facts, findings = parse_nvidia_smi_q(t, "q.txt")
    if severity is None:
        assert findings == [] and facts["gpus"][0]["recovery_action"] is None
    else:
        f, = findings
        assert (f["kind"], f["severity"], f["rung"]) == (kind, severity, rung)
        assert f["evidence"].endswith(": " + action) and facts["gpus"][0]["recovery_action"] == action


def test_q_unknown_error_in_identity_field():
    text, _ = load(H100_Q)
    parts = gpu_sections(text)
    parts[2] = re.sub(r"(?m)^(    Serial Number\s+: ).*$", r"\1Unknown Error", parts[2])
    t = "".join(parts)
    t = t.replace("Addressing Mode                       : None", "Addressing Mode                       : Unknown Error")
    facts, findings = parse_nvidia_smi_q(t, "q.txt")
    f, = serious(findings)
    assert f["kind"] == "nvml_field_error" and f["gpu"]["index"] == 1 and f["severity"] == "warning"
    assert facts["gpus"][1]["errors"] == ["Serial Number"] and facts["gpus"][0]["errors"] == []


def test_q_old_field_names_and_spacing():
    """Older/newer drivers: 'Clocks Throttle Reasons', 'Pending Page Retirement', other padding."""
    text, _ = load(H100_Q)
    t = text.replace("Clocks Event Reasons", "Clocks Throttle Reasons")
    t = edit_gpu(t, 4, "        HW Slowdown                       : Not Active",
                 "        HW Slowdown : Active")
    t = edit_gpu(t, 4, "            HW Thermal Slowdown           : Not Active",
                 "            HW Thermal Slowdown: Active")
    t = edit_gpu(t, 2, "        Pending Page Blacklist            : N/A",
                 "        Pending Page Retirement   : Yes")
    facts, findings = parse_nvidia_smi_q(t, "q.txt")
    g4 = facts["gpus"][4]
    assert g4["throttle"]["hw_slowdown"] is True and g4["throttle"]["hw_thermal"] is True
    assert facts["gpus"][2]["retired_pages"]["pending"] is True
    got = sorted((f["kind"], f["gpu"]["index"], f["severity"]) for f in serious(findings))
    assert got == [("hw_slowdown", 4, "warning"), ("retired_pages_pending", 2, "warning")]
    assert "thermal" in by_kind(findings, "hw_slowdown")[0]["message"]


def test_q_old_single_double_bit_schema():
    """Pre-Ampere layout (V100 etc., still printed by 580 drivers): Single Bit / Double Bit / Total."""
    sb = ("            Single Bit            \n" + "".join(
        "                %-26s: %s\n" % (k, v) for k, v in (("Device Memory", "0"), ("Register File", "0"),
                                                           ("Texture Memory", "N/A"), ("Total", "0"))))
    db = sb.replace("Single Bit", "Double Bit")
    text = ("\n==============NVSMI LOG==============\n\nTimestamp                                 : Wed May 13 10:44:25 2026\n"
            "Driver Version                            : 580.105.08\nCUDA Version                              : 13.0\n\n"
            "Attached GPUs                             : 1\nGPU 00000000:41:00.0\n    ECC Mode\n"
            "        Current                           : Enabled\n        Pending                           : Enabled\n"
            "    ECC Errors\n        Volatile\n" + sb + db.replace("Device Memory             : 0",
                                                                   "Device Memory             : 2").replace(
                "Total                     : 0", "Total                     : 2")
            + "        Aggregate\n" + sb + db + "    Retired Pages\n        Single Bit ECC                    : 1\n"
            "        Double Bit ECC                    : 2\n        Pending                           : Yes\n")
    facts, findings = parse_nvidia_smi(text, "v.txt", expected_gpus=1)
    g, = facts["gpus"]
    assert g["ecc"]["volatile"] == {"correctable": 0, "uncorrectable": 2}
    assert g["ecc"]["aggregate"] == {"correctable": 0, "uncorrectable": 0}
    assert g["retired_pages"] == {"single_bit": 1, "double_bit": 2, "pending": True}
    assert facts["driver_version"] == "580.105.08" and facts["cuda_version"] == "13.0"
    assert sorted((f["kind"], f["severity"]) for f in findings) == [
        ("ecc_uncorrectable_volatile", "critical"), ("retired_pages_pending", "critical")]
    assert by_kind(findings, "ecc_uncorrectable_volatile")[0]["evidence"] == "Total                     : 2"


def test_q_crlf_and_ansi_same_result():
    text, _ = load("004-gpud-smi-q-a10-remap-pending")
    noisy = text.replace("\n", "\r\n").replace("Pending                           : Yes",
                                               "\x1b[1;31mPending                           : Yes\x1b[0m")
    a = parse_nvidia_smi(text, "q.txt")
    b = parse_nvidia_smi(noisy, "q.txt")
    assert a == b


def test_xml_crlf_bom_and_leading_noise_same_result():
    text = (SYN / "faults.xml").read_text()
    a = parse_nvidia_smi(text, "f.xml")
    b = parse_nvidia_smi("\ufeff" + text.replace("\n", "\r\n"), "f.xml")
    assert a == b and len(serious(a[1])) == 3
    facts, findings = parse_nvidia_smi("Warning: persistence mode is disabled\n" + text, "f.xml")
    assert facts["format"] == "xml" and sorted(f["source"] for f in serious(findings)) == sorted(
        "f.xml:%d" % (int(f["source"].split(":")[1]) + 1) for f in serious(a[1]))


def test_q_tabs_and_nul_bytes():
    text, _ = load("004-gpud-smi-q-a10-remap-pending")
    t = text.replace("    ", "\t").replace("Remapped Rows", "Remapped\x00 Rows")
    facts, findings = parse_nvidia_smi_q(t, "q.txt")
    assert facts["gpus"][0]["remapped_rows"]["pending"] is True
    assert kinds(findings) == ["row_remap_pending"]


def test_q_truncated_mid_gpu():
    text, _ = load(H100_Q)
    last = text.rindex("\nGPU 00000000:")
    cut = text.index("    ECC Errors", last)
    facts, findings = parse_nvidia_smi_q(text[:cut], "q.txt", expected_gpus=8)
    assert facts["count"] == 8 and [g["index"] for g in facts["gpus"]] == list(range(8))
    assert "nvsmi_truncated" in kinds(findings, "info") and serious(findings) == []
    assert facts["gpus"][7]["ecc"]["volatile"]["uncorrectable"] is None
    assert facts["gpus"][7]["name"] == "NVIDIA H100 80GB HBM3"
    # a complete capture is not flagged
    assert "nvsmi_truncated" not in kinds(parse_nvidia_smi_q(text, "q.txt")[1])


def test_q_mixed_models():
    a10, _ = load("004-gpud-smi-q-a10-remap-pending")
    rtx, _ = load("007-gpud-smi-q-rtx4090x8-addressing-unknown-error")
    head = a10.split("GPU 00000000:07:00.0")[0].replace("Attached GPUs                             : 1",
                                                         "Attached GPUs                             : 2")
    t = head + gpu_sections(rtx)[1] + gpu_sections(a10)[1]
    facts, findings = parse_nvidia_smi_q(t, "m.txt", expected_gpus=2)
    assert [g["name"] for g in facts["gpus"]] == ["NVIDIA GeForce RTX 4090", "NVIDIA A10"]
    assert facts["gpus"][0]["ecc"]["volatile"]["uncorrectable"] is None
    assert facts["gpus"][1]["ecc"]["volatile"]["uncorrectable"] == 0
    f, = serious(findings)
    assert f["kind"] == "row_remap_pending" and f["gpu"]["index"] == 1 and f["gpu"]["pci"] == "0000:07:00.0"


def test_q_temperature_threshold():
    text, _ = load("004-gpud-smi-q-a10-remap-pending")
    t = text.replace("GPU Current Temp                  : 33 C", "GPU Current Temp                  : 92 C")
    _, findings = parse_nvidia_smi_q(t, "q.txt")
    f, = by_kind(findings, "gpu_temperature_high")
    assert f["severity"] == "warning" and "92 C" in f["message"]
    assert not by_kind_or_none(parse_nvidia_smi_q(t, "q.txt", thresholds={"temperature_c": 95})[1],
                               "gpu_temperature_high")


# --------------------------------------------------------------------------- table variants and failures

def test_table_gpu_lost_and_missing_row():
    text, _ = load("009-gpud-smi-table-h100x8-healthy")
    lines = text.split("\n")
    start = next(i for i, l in enumerate(lines) if "00000000:3B:00.0" in l)
    del lines[start:start + 4]
    t = "Unable to determine the device handle for GPU 0000:3B:00.0: Unknown Error\n" + "\n".join(lines)
    facts, findings = parse_nvidia_smi(t, "t.txt", expected_gpus=8)
    assert facts["format"] == "table" and facts["count"] == 7
    f, = findings
    assert (f["kind"], f["severity"], f["category"], f["rung"]) == ("gpu_handle_error", "critical",
                                                                    "gpu_hardware", "reboot")
    assert f["gpu"]["pci"] == "0000:3b:00.0" and f["source"] == "t.txt:1"
    t2 = t.replace("Unknown Error", "GPU is lost.  Reboot the system to recover this GPU")
    f2, = parse_nvidia_smi(t2, "t.txt", expected_gpus=8)[1]
    assert f2["kind"] == "gpu_lost"
    # without the error line the missing row is a gpu_missing
    t3 = "\n".join(lines)
    f3, = parse_nvidia_smi(t3, "t.txt", expected_gpus=8)[1]
    assert f3["kind"] == "gpu_missing" and "7 of 8" in f3["message"]


def test_table_err_in_hw_fields_is_gpu_hardware():
    text, _ = load("009-gpud-smi-table-h100x8-healthy")
    t = text.replace("| N/A   23C    P0             70W /  700W |",
                     "| N/A  ERR!    P0            ERR! /  700W |")
    t = t.replace("|   2  NVIDIA H100 80GB HBM3          On  |   00000000:4C:00.0 Off |                    0 |",
                  "|   2  NVIDIA H100 80GB HBM3          On  |   00000000:4C:00.0 Off |                 ERR! |")
    facts, findings = parse_nvidia_smi_table(t, "t.txt")
    f, = findings
    assert f["kind"] == "nvml_field_error" and f["category"] == "gpu_hardware" and f["gpu"]["index"] == 2
    assert facts["gpus"][2]["errors"] == ["Volatile Uncorr. ECC", "Temp", "Pwr:Usage/Cap"]
    assert facts["gpus"][2]["temperature_c"] is None


def test_table_volatile_ecc_nonzero():
    text, _ = load("009-gpud-smi-table-h100x8-healthy")
    t = text.replace("|   5  NVIDIA H100 80GB HBM3          On  |   00000000:BB:00.0 Off |                    0 |",
                     "|   5  NVIDIA H100 80GB HBM3          On  |   00000000:BB:00.0 Off |                    4 |")
    _, findings = parse_nvidia_smi_table(t, "t.txt")
    f, = findings
    assert f["kind"] == "ecc_uncorrectable_volatile" and f["gpu"] == {"pci": "0000:bb:00.0", "index": 5,
                                                                     "uuid": None}


@pytest.mark.parametrize("text,kind,category", [
    ("No devices were found\n", "nvsmi_no_devices", "driver"),
    ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest "
     "NVIDIA driver is installed and running.\n\n", "nvsmi_driver_unreachable", "driver"),
    ("Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 550.54\n",
     "nvml_driver_mismatch", "driver"),
    ("Failed to initialize NVML: Unknown Error\n", "nvml_init_failed", "driver"),
    ("Unable to determine the device handle for GPU0000:3B:00.0: GPU is lost.  Reboot the system to recover "
     "this GPU\n", "gpu_lost", "gpu_hardware"),
])
def test_failure_outputs(text, kind, category):
    for fn in (parse_nvidia_smi, parse_nvidia_smi_q, parse_nvidia_smi_table, parse_nvidia_smi_xml,
               parse_query_gpu_csv):
        facts, findings = fn(text, "f.txt", expected_gpus=8)
        assert facts["count"] == 0 and facts["gpus"] == []
        f, = findings
        assert (f["kind"], f["severity"], f["category"]) == (kind, "critical", category), fn
        assert f["source"] == "f.txt:1"


def test_nvml_permission_is_not_a_host_fault():
    facts, findings = parse_nvidia_smi("Failed to initialize NVML: Insufficient Permissions\n", "p.txt")
    f, = findings
    assert (f["kind"], f["severity"], f["category"]) == ("nvml_permission", "warning", "unknown")


@pytest.mark.parametrize("text", ["", "   \n\n", None])
def test_empty_output(text):
    facts, findings = parse_nvidia_smi(text, "e.txt")
    assert facts["gpus"] == [] and facts["count"] == 0
    f, = findings
    assert f["kind"] == "nvsmi_empty" and f["severity"] == "warning"


@pytest.mark.parametrize("text", ["hello world\nthis is not nvidia-smi\n", "\x00\x01\x02\xff garbage ::: ,,,",
                                  "<html><body>502 Bad Gateway</body></html>", "{\"json\": true}",
                                  "GPU 00000000:3B:00.0\n", "<?xml version=\"1.0\"?><nvidia_smi_log"])
def test_garbage_never_raises(text):
    for fn in (parse_nvidia_smi, parse_nvidia_smi_q, parse_nvidia_smi_table, parse_nvidia_smi_xml,
               parse_query_gpu_csv):
        facts, findings = fn(text, "g.txt")
        assert isinstance(facts, dict) and isinstance(findings, list)
        assert all(f["severity"] in ("info", "warning") for f in findings)
    assert parse_compute_apps_csv(text, "g.txt") == []


def test_random_cuts_and_noise_never_raise():
    rnd = random.Random(7)
    texts = [load(c)[0] for c in CAPTURES] + [(SYN / "faults.xml").read_text()]
    for t in texts:
        for _ in range(6):
            a = rnd.randrange(len(t))
            b = min(len(t), a + rnd.randrange(1, 3000))
            for s in (t[:a], t[a:b], t[:a] + "\x1b[31m\r\n" + t[b:]):
                for fn in (parse_nvidia_smi, parse_nvidia_smi_q, parse_nvidia_smi_table, parse_nvidia_smi_xml):
                    facts, findings = fn(s, "r.txt", expected_gpus=8)
                    assert isinstance(findings, list) and facts["count"] == len(facts["gpus"])


# --------------------------------------------------------------------------- CSV

QUERY = ("index, pci.bus_id, uuid, serial, name, ecc.errors.uncorrected.volatile.total, "
         "ecc.errors.uncorrected.aggregate.sram, remapped_rows.pending, remapped_rows.failure, "
         "clocks_throttle_reasons.hw_slowdown, clocks_event_reasons.hw_power_brake_slowdown, temperature.gpu, "
         "memory.used [MiB], reset_status.reset_required, driver_version\n"
         "0, 00000000:19:00.0, GPU-aaa, 1650124031592, NVIDIA H100 80GB HBM3, 0, 0, No, No, Not Active, "
         "Not Active, 29, 0 MiB, No, 550.90.07\n"
         "1, 00000000:3B:00.0, GPU-bbb, 1650124031593, NVIDIA H100 80GB HBM3, 2, 0, Yes, No, Not Active, "
         "Not Active, 31, 12 MiB, No, 550.90.07\n"
         "2, 00000000:4C:00.0, GPU-ccc, [N/A], NVIDIA GeForce RTX 4090, [N/A], [Not Supported], [N/A], [N/A], "
         "Active, Active, 90, 1 MiB, [N/A], 550.90.07\n")


def test_query_gpu_csv():
    facts, findings = parse_nvidia_smi(QUERY, "c.csv", expected_gpus=4)
    assert facts["format"] == "csv" and facts["driver_version"] == "550.90.07" and facts["count"] == 3
    g0, g1, g2 = facts["gpus"]
    assert (g1["index"], g1["pci"], g1["uuid"], g1["serial"]) == (1, "0000:3b:00.0", "GPU-bbb", "1650124031593")
    assert g1["ecc"]["volatile"]["uncorrectable"] == 2 and g1["remapped_rows"]["pending"] is True
    assert g2["serial"] is None and g2["ecc"]["volatile"]["uncorrectable"] is None
    assert g2["ecc"]["aggregate"]["sram_uncorrectable"] is None and g2["remapped_rows"]["pending"] is None
    assert g2["throttle"]["hw_slowdown"] is True and g2["throttle"]["hw_power_brake"] is True
    assert g0["temperature_c"] == 29 and g0["reset_required"] is False
    got = sorted((f["kind"], f["gpu"]["index"] if f["gpu"] else None) for f in serious(findings))
    assert got == [("ecc_uncorrectable_volatile", 1), ("gpu_missing", None), ("gpu_temperature_high", 2),
                   ("hw_slowdown", 2), ("row_remap_pending", 1)]
    check_contract(facts, findings, QUERY, "c.csv")


def test_query_gpu_csv_throttle_bitmask():
    t = ("index, pci.bus_id, clocks_throttle_reasons.active\n0, 00000000:19:00.0, 0x0000000000000001\n"
         "1, 00000000:3B:00.0, 0x0000000000000088\n2, 00000000:4C:00.0, [N/A]\n")
    facts, findings = parse_query_gpu_csv(t, "c.csv")
    g0, g1, g2 = facts["gpus"]
    assert g0["throttle"]["idle"] is True and g0["throttle"]["hw_slowdown"] is False
    assert g1["throttle"]["hw_slowdown"] is True and g1["throttle"]["hw_power_brake"] is True
    assert g1["throttle"]["hw_thermal"] is False and g2["throttle"]["hw_slowdown"] is None
    f, = serious(findings)
    assert f["kind"] == "hw_slowdown" and f["gpu"]["index"] == 1 and "power brake" in f["message"]


def test_query_gpu_csv_noheader_needs_fields():
    body = QUERY.split("\n", 1)[1]
    facts, findings = parse_query_gpu_csv(body, "c.csv")
    assert facts["gpus"] == [] and kinds(findings) == ["nvsmi_unparseable"]
    fields = [f.strip() for f in QUERY.split("\n", 1)[0].split(",")]
    facts, findings = parse_query_gpu_csv(body.replace(" MiB", ""), "c.csv", fields=fields)
    assert facts["count"] == 3 and facts["gpus"][1]["remapped_rows"]["pending"] is True


def test_a_note_pasted_after_a_csv_row_is_not_the_row():
    # 'nvidia-smi --query-gpu=index,gpu_recovery_action --format=csv,noheader' with the poster's note after
    # GPU 1's row: the row is read (the note stays in its evidence); a note never hides a GPU's state
    t = ("nvidia-smi --query-gpu=index,gpu_recovery_action --format=csv,noheader\n0, None\n"
         "1, Reset   <= GPU is unusable, reset required \n2, None  # fine\n3, None\n")
    facts, findings = parse_nvidia_smi(t, "nvidia-smi.txt")
    assert facts["count"] == 4 and "nvsmi_csv_bad_row" not in kinds(findings)
    (reset,) = [f for f in findings if f["kind"] == "gpu_recovery_reset"]
    assert reset["severity"] == "critical" and "<= GPU is unusable" in reset["evidence"]
    # a row with one value too many and no note mark is still not read
    facts, findings = parse_nvidia_smi(t.replace("   <= GPU is unusable,", ", x,"), "nvidia-smi.txt")
    assert "nvsmi_csv_bad_row" in kinds(findings, "warning")


def test_query_gpu_csv_bad_row_and_crlf():
    t = QUERY.replace("\n", "\r\n") + "3, 00000000:5D:00.0, short row\r\n"
    facts, findings = parse_query_gpu_csv(t, "c.csv")
    assert facts["count"] == 3
    assert "nvsmi_csv_bad_row" in kinds(findings, "warning")  # a GPU row not read: not healthy


def test_compute_apps_csv():
    t = ("1234, python, 00000000:19:00.0, GPU-aaa, 70000 MiB\n"
         "5678, /usr/bin/python3 -m torch.distributed.run, x, 00000000:3B:00.0, GPU-bbb, [N/A]\n"
         "9, nvidia-cuda-mps-server, 00000000:4C:00.0, [N/A], 25 MiB\n")
    procs = parse_compute_apps_csv(t, "a.csv")
    assert procs == [
        {"pid": 1234, "process": "python", "pci": "0000:19:00.0", "uuid": "GPU-aaa", "used_memory_mib": 70000},
        {"pid": 5678, "process": "/usr/bin/python3 -m torch.distributed.run, x", "pci": "0000:3b:00.0",
         "uuid": "GPU-bbb", "used_memory_mib": None},
        {"pid": 9, "process": "nvidia-cuda-mps-server", "pci": "0000:4c:00.0", "uuid": None,
         "used_memory_mib": 25},
    ]
    assert parse_compute_apps_csv_findings(t, "a.csv") == (procs, [])
    hdr = "pid, process_name, gpu_bus_id, gpu_uuid, used_gpu_memory [MiB]\n"
    assert parse_compute_apps_csv(hdr + t, "a.csv") == procs
    # header in another order
    hdr2 = "gpu_uuid, pid, used_memory [MiB], gpu_bus_id, process_name\nGPU-zzz, 77, 5 MiB, 00000000:DB:00.0, a.out\n"
    assert parse_compute_apps_csv(hdr2, "a.csv") == [
        {"pid": 77, "process": "a.out", "pci": "0000:db:00.0", "uuid": "GPU-zzz", "used_memory_mib": 5}]
    assert parse_compute_apps_csv("", "a.csv") == []
    assert parse_compute_apps_csv(None, "a.csv") == []
    assert parse_compute_apps_csv("No running processes found\n", "a.csv") == []
    facts, _ = parse_nvidia_smi(hdr + t, "a.csv")
    assert facts["processes"] == procs
    procs2, f2 = parse_compute_apps_csv_findings("No devices were found\nabc, def\n", "a.csv")
    assert procs2 == [] and sorted(kinds(f2)) == ["nvsmi_csv_bad_row", "nvsmi_no_devices"]


# --------------------------------------------------------------------------- dispatch, portability

@pytest.mark.parametrize("case,fmt", [
    ("004-gpud-smi-q-a10-remap-pending", "q"), ("008-gpud-smi-table-fan-err", "table"),
    ("017-azure-smi-table-inforom-corrupted", "table"), ("019-azure-smi-nvlink-inactive-links", "table"),
    ("048-mleng-sram-uncorrectable-ecc-rma-threshold", "q"), ("075-telegraf-a100-mig-smi-q-xml-healthy", "xml"),
    ("082-azhc-smi-q-page-retirement-8gpu-healthy", "q")])
def test_detect_format(case, fmt):
    assert detect_format(load(case)[0]) == fmt


def test_noheader_csv_routed_by_source_name():
    apps = "1234, python, 00000000:19:00.0, GPU-aaa, 70000 MiB\n"
    facts, _ = parse_nvidia_smi(apps, "nvidia-smi-compute-apps.csv")
    assert facts["processes"][0]["pid"] == 1234
    rows = "0, 00000000:19:00.0, GPU-aaa, 0\n"
    facts, findings = parse_nvidia_smi(rows, "nvidia-smi-query-gpu.csv")
    assert facts["format"] == "csv" and facts["gpus"] == [] and kinds(findings) == ["nvsmi_unparseable"]
    assert "processes" not in facts


@pytest.mark.parametrize("path", sorted(Path(nvsmi.__file__).parent.glob("*.py")), ids=lambda p: p.name)
def test_module_is_portable(path):
    src = path.read_text()
    ast.parse(src, feature_version=(3, 9))
    imports = re.findall(r"(?m)^\s*(?:from\s+(\S+)\s+import|import\s+(\S+))", src)
    allowed = {"bisect", "re"}
    for frm, imp in imports:
        mod = frm or imp
        assert mod.startswith(".") or mod in allowed, mod
        # a parser imports only findings/taxonomy/sources/xid_catalog and its own package
        if mod.startswith(".."):
            assert mod.split(".")[2] in ("findings", "taxonomy", "sources", "xid_catalog"), mod


def test_package_shape():
    """Issue 7: no file over ~500 lines, no function over ~100."""
    for path in Path(nvsmi.__file__).parent.glob("*.py"):
        src = path.read_text()
        assert src.count("\n") <= 500, path.name
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.FunctionDef):
                assert node.end_lineno - node.lineno < 100, (path.name, node.name)


def _csv(names):
    rows = "".join("%d, %s, 00000000:%02X:00.0, 0\n" % (i, n, 0x18 + 0x10 * i) for i, n in enumerate(names))
    return "index, name, pci.bus_id, ecc.errors.uncorrected.volatile.total\n" + rows


@pytest.mark.parametrize("names,odd", [
    (["NVIDIA B300 SXM6 AC"] * 7, True),
    (["NVIDIA H100 80GB HBM3"] * 6, True),
    (["NVIDIA A100-SXM4-80GB"] * 5, True),
    (["NVIDIA H100 80GB HBM3"] * 8, False),       # a full baseboard
    (["NVIDIA H100 80GB HBM3"] * 4, False),       # a 4-GPU baseboard (or half a node given to a VM)
    (["NVIDIA H100 NVL"] * 7, False),             # PCIe cards come in any number
    (["NVIDIA L40S"] * 7, False),
])
def test_a_count_of_baseboard_gpus_no_hgx_platform_has_is_no_healthy_claim(names, odd):
    facts, findings = nvsmi.parse_nvidia_smi(_csv(names), "nvidia-smi-query-gpu.csv")
    assert facts["count"] == len(names)
    got = [f for f in findings if f["kind"] == "gpu_count_unusual"]
    assert bool(got) == odd
    if odd:
        assert (got[0]["category"], got[0]["severity"]) == ("unknown", "warning") and str(len(names)) in got[0]["message"]
    # an expected count given by the operator decides instead
    facts, findings = nvsmi.parse_nvidia_smi(_csv(names), "nvidia-smi-query-gpu.csv", expected_gpus=len(names))
    assert not [f for f in findings if f["kind"] in ("gpu_count_unusual", "gpu_missing")]


def test_all_links_inactive_in_any_case_of_the_drivers_wording():
    # newer drivers write 'inActive'
    text = "GPU 2: NVIDIA B200 (UUID: GPU-xxx)\nNVML: Unable to retrieve NVLink information as all links are inActive\n"
    facts, findings = parse_nvidia_smi(text, "nv.txt")
    assert facts["gpus"][0]["nvlink_all_inactive"] is True
    assert [(f["kind"], f["category"]) for f in findings] == [("nvlink_inactive", "gpu_hardware")]


def _q_two_gpus(host_max=("Unknown Error", "Unknown Error")):
    gpu = ("GPU 00000000:00:%02X.0\n    Product Name                          : Tesla V100-SXM2-16GB\n"
           "    PCI\n        GPU Link Info\n            PCIe Generation\n"
           "                Max                       : 3\n                Current                   : 3\n"
           "                Host Max                  : %s\n")
    return ("==============NVSMI LOG==============\n\nTimestamp                                 : Mon Dec  1 10:00:00 "
            "2025\nDriver Version                            : 550.127.05\nCUDA Version                              : "
            "12.4\n\nAttached GPUs                             : 2\n" + gpu % (4, host_max[0]) + gpu % (5, host_max[1]))


def test_a_field_no_gpu_of_the_host_can_read_is_the_platforms_not_each_gpus():
    # a VM's host link ('Host Max' of the PCIe generation) reads Unknown Error on every GPU
    facts, findings = parse_nvidia_smi(_q_two_gpus(), "q.txt")
    assert [(f["kind"], f["severity"]) for f in findings] == [("nvsmi_err_field", "info")]
    # one GPU alone that cannot read it is that GPU's
    facts, findings = parse_nvidia_smi(_q_two_gpus(("3", "Unknown Error")), "q.txt")
    assert [f["kind"] for f in findings] == ["nvml_field_error"]
