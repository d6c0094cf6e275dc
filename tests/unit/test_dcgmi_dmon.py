"""dcgmi dmon -e (dcgm/dmon.py): read by content under any name, its columns by DCGM's own field tags.
A nonzero XIDER is that GPU's last Xid, an Xid finding through the catalog; ECC, retired pages, row
remaps and NVLink counters make the findings nvidia-smi -q's readers make; every acted-on count zero
and no Xid is a healthy reading of those fields; a table cut, or rows that do not match its header, is
unknown, never healthy. The x17-01 block (DCGM issue 263) and the llm-action one are real; the others
are laid out as DCGM 4.6.0's dcgmi/DeviceMonitor.cpp prints them (``dmon`` below)."""

import os

import pytest

from gpu_runbook.cli import analyze_paths
from gpu_runbook.content import plan
from gpu_runbook.dcgm.dmon import TAGS, belongs, parse_dcgmi_dmon, read_table, role
from tests.conftest import FIXTURES
from tests.unit.test_read_by_content import analyze_json

SAMPLES = os.path.join(FIXTURES, "formats", "dcgmi_dmon")
X17 = os.path.join(FIXTURES, "real", "x17-01-8gpu-node-gpu1-recovery-action-reset-xid120")
# the value widths dcgm_fields.cpp gives these fields (getWidthForEnum): dmon pads each column to width + 6 + 2
WIDTHS = {"XIDER": 5, "EDVTL": 5, "EDATL": 5, "ESVTL": 5, "RPPEN": 10, "RPSBE": 16, "RPDBE": 16, "RRF": 20,
          "RRP": 20, "NFELT": 20, "NRELT": 20, "NVLFCE": 20, "RPCTR": 5, "POWER": 5, "TMPTR": 5, "PVIOL": 10}
UNITS = {"POWER": " W", "TMPTR": " C"}


def _read(name):
    with open(os.path.join(SAMPLES, name, "dcgmi-dmon.txt"), encoding="utf-8") as fh:
        return fh.read()


def dmon(tags, rows, repeat=None):
    """dcgmi dmon's table as DCGM 4.x prints it (SetHeaderForOutput / PrintMetricsRow): ``rows`` are
    (entity, [cells]); the header again before row ``repeat``."""
    head = ["#Entity".ljust(16) + "".join(t.ljust(WIDTHS[t] + 8) for t in tags),
            "ID".ljust(16) + "".join(UNITS.get(t, "").ljust(WIDTHS[t] + 8) for t in tags)]
    out = list(head)
    for i, (entity, cells) in enumerate(rows):
        if i == repeat:
            out += head
        out.append(entity.ljust(16) + "".join(str(c).ljust(WIDTHS[t] + 8) for t, c in zip(tags, cells)))
    return "\n".join(out) + "\n"


def kinds(findings):
    return [(f["kind"], f["xid"], (f["gpu"] or {}).get("index")) for f in findings]


# -- the real captures ------------------------------------------------------------------------------------------

def test_the_real_x17_block_reads_xid_120_on_gpu_1():
    facts, (f,) = parse_dcgmi_dmon(_read("01-dcgm263-xider-120-on-gpu1"), "dcgmi-dmon.txt")
    assert facts["gpus"] == list(range(8)) and facts["columns"] == ["XIDER"] and facts["read_whole"]
    assert facts["xids"] == {"1": [120]} and facts["health_fields"] == ["XIDER"]
    assert (f["kind"], f["xid"], f["gpu"]["index"], f["category"], f["severity"], f["rung"]) == (
        "xid", 120, 1, "driver", "critical", "gpu_reset")
    assert "read from dcgmi dmon" in f["message"] and "GSP" in f["message"]
    assert f["source"] == "dcgmi-dmon.txt:5" and f["evidence"] == "GPU 1      120"


def test_the_real_x17_capture_is_read_as_the_csv_and_the_dmon_table(tmp_path, capsys):
    rc, doc, err = analyze_json(capsys, os.path.join(X17, "nvidia-smi.txt"))
    (h,) = doc["hosts"]
    assert doc["files"][0]["read_as"] == ["dcgmi dmon", "nvidia-smi --query-gpu"]
    xids = [f for f in h["findings"] if f["kind"] == "xid"]
    assert [(f["xid"], f["gpu"]["index"], f["source"]) for f in xids] == [(120, 1, "nvidia-smi.txt:16")]


def test_the_real_llm_action_block_holds_no_health_field_so_it_is_unknown(tmp_path, capsys):
    text = _read("02-llmaction-bandwidth-fields-na-then-values")
    facts, findings = parse_dcgmi_dmon(text, "dcgmi-dmon.txt")
    assert findings == [] and facts["read_whole"] and facts["health_fields"] == []
    assert facts["columns"] == ["NVLTX", "NVLRX", "PCITX", "PCIRX"] and facts["gpus"] == [0, 7]
    assert facts["samples"] == 7 and facts["entities"]["GPU 7"] == {"NVLTX": "0", "NVLRX": "0", "PCITX": "499343",
                                                                    "PCIRX": "3111"}
    (tmp_path / "out.txt").write_text(text)
    (h,) = analyze_paths([str(tmp_path / "out.txt")])["hosts"]
    assert (h["verdict"], [f["kind"] for f in h["findings"]]) == ("unknown", ["no_evidence"])


# -- what the counters say --------------------------------------------------------------------------------------

def test_zero_counts_and_no_xid_on_every_gpu_are_a_healthy_reading(tmp_path, capsys):
    tags = ["XIDER", "EDVTL", "RPPEN", "RRF", "RRP", "NFELT", "POWER"]
    text = dmon(tags, [("GPU %d" % i, [0, 0, 0, 0, 0, 0, "312.504"]) for i in range(4)])
    facts, findings = parse_dcgmi_dmon(text)
    assert findings == [] and facts["read_whole"] and facts["health_fields"] == sorted(tags[:-1])
    assert facts["entities"]["GPU 3"]["POWER"] == "312.504"  # another column: a fact, never judged
    (tmp_path / "dmon.log").write_text("$ dcgmi dmon -c 1 -e 230,311,392,395,396,409,155\n" + text)
    rc, doc, err = analyze_json(capsys, tmp_path / "dmon.log")
    (h,) = doc["hosts"]
    assert (rc, h["verdict"], h["findings"], doc["files"][0]["read_as"]) == (0, "healthy", [], ["dcgmi dmon"])


def test_the_memory_counters_make_nvidia_smi_q_s_findings():
    tags = ["XIDER", "EDVTL", "EDATL", "RPSBE", "RPDBE", "RPPEN", "RRF", "RRP"]
    text = dmon(tags, [("GPU 0", [0, 2, 2, 0, 0, 0, 0, 1]), ("GPU 1", [0, 0, 3, 0, 0, 0, 1, 0]),
                       ("GPU 2", [0, 0, 0, 50, 12, 1, 0, 0]), ("GPU 3", [0, 0, 0, 0, 0, 0, 0, 0])])
    facts, findings = parse_dcgmi_dmon(text)
    assert kinds(findings) == [("ecc_uncorrectable_volatile", None, 0), ("row_remap_pending", None, 0),
                               ("row_remap_failure", None, 1), ("retired_pages_pending", None, 2),
                               ("retired_pages_limit", None, 2)]
    by = {f["kind"]: f for f in findings}
    assert by["ecc_uncorrectable_volatile"]["counters"] == {"ecc_dbe_volatile": 2, "ecc_dbe_aggregate": 2}
    assert by["retired_pages_pending"]["severity"] == "critical"  # with double-bit retirements
    assert by["retired_pages_limit"]["threshold"] == 60 and "62 retired pages" in by["retired_pages_limit"]["message"]
    assert "EDVTL" in by["ecc_uncorrectable_volatile"]["message"]


def test_nvlink_counters_and_pcie_replays():
    text = dmon(["NFELT", "NRELT", "RPCTR"], [("GPU 0", [0, 0, 0]), ("GPU 1", [4, 1, 7])])
    facts, findings = parse_dcgmi_dmon(text)
    assert kinds(findings) == [("pcie_replays", None, 1), ("nvlink_errors", None, 1)]
    replay, nv = findings
    assert nv["counters"] == {"NFELT": 4, "NRELT": 1} and nv["severity"] == "warning"
    assert (replay["severity"], replay["category"], replay["counters"]) == ("info", "unknown", {"pcie_replays": 7})


@pytest.mark.parametrize("code,category", [(79, "gpu_hardware"), (13, "application"), (999, "unknown")])
def test_an_xid_takes_the_catalogs_category(code, category):
    facts, (f,) = parse_dcgmi_dmon(dmon(["XIDER"], [("GPU 0", [0]), ("GPU 5", [code])]))
    assert (f["kind"], f["xid"], f["gpu"]["index"], f["category"]) == ("xid", code, 5, category)
    assert ("not in catalog" in f["message"]) == (code == 999)


def test_violation_times_are_facts_never_judged():
    facts, findings = parse_dcgmi_dmon(dmon(["PVIOL", "XIDER"], [("GPU 0", [123456789, 0])]))
    assert findings == [] and role("PVIOL") == "violation" and facts["entities"]["GPU 0"]["PVIOL"] == "123456789"
    assert role("NFEL17") == role("NRCL3") == "nvlink" and role("NFEL18") is None and role("POWER") is None


# -- its layouts ------------------------------------------------------------------------------------------------

def test_n_a_is_no_reading_and_a_table_of_n_a_is_none(tmp_path):
    text = dmon(["XIDER", "EDVTL"], [("GPU 0", ["N/A", "N/A"]), ("GPU 1", ["N/A", "N/A"])])
    facts, findings = parse_dcgmi_dmon(text)
    assert findings == [] and facts["health_fields"] == [] and facts["read_whole"]
    (tmp_path / "x.txt").write_text(text)
    (h,) = analyze_paths([str(tmp_path / "x.txt")])["hosts"]
    assert h["verdict"] == "unknown" and [f["kind"] for f in h["findings"]] == ["no_evidence"]
    # N/A on one GPU, a count on another: the count is read
    facts, (f,) = parse_dcgmi_dmon(dmon(["XIDER"], [("GPU 0", ["N/A"]), ("GPU 1", [48])]))
    assert (f["xid"], facts["health_fields"]) == (48, ["XIDER"])


def test_repeated_headers_and_samples_are_one_table():
    rows = [("GPU %d" % (i % 2), [0 if i < 20 else 31 * (i % 2)]) for i in range(28)]
    text = dmon(["XIDER"], rows, repeat=14)
    read = read_table(text)
    assert len(read["tables"]) == 1 and read["tables"][0]["repeats"] == 1 and len(read["rows"]) == 28
    facts, (f,) = parse_dcgmi_dmon(text)
    assert (f["xid"], f["gpu"]["index"], facts["samples"], facts["read_whole"]) == (31, 1, 28, True)
    assert f["source"] == "dcgmi-dmon.txt:26"  # where it first appears (below the repeated header's two lines)


def test_a_value_left_blank_is_read_by_its_column():
    # DCGM 4.x leaves a field with no value for an entity blank, padded to its column
    text = dmon(["POWER", "XIDER", "EDVTL"], [("GPU 0", ["71.2", 0, 0]), ("GPU 1", ["", 43, ""]),
                                              ("GPU 2", ["70.1", 0, ""])])
    facts, findings = parse_dcgmi_dmon(text)
    assert facts["read_whole"] and kinds(findings) == [("xid", 43, 1)]
    assert facts["entities"]["GPU 1"] == {"POWER": None, "XIDER": "43", "EDVTL": None}


def test_dcgm_2x_right_aligned_layout():
    text = ("# Entity  XIDER  EDVTL\n      Id\n    GPU 0      0      0\n    GPU 1     79      0\n")
    facts, (f,) = parse_dcgmi_dmon(text)
    assert (f["xid"], f["gpu"]["index"], facts["gpus"]) == (79, 1, [0, 1])


def test_several_entity_types():
    text = dmon(["XIDER", "NFELT", "NVLFCE"], [
        ("GPU 0", [0, 0, ""]), ("GPU-I 1", [0, 0, ""]), ("GPU-CI 2", [0, 0, ""]), ("Switch 3", ["", 9, ""]),
        ("GPU 0 LINK 3", ["", "", 5]), ("SW 1 LINK 2", ["", "", 0]), ("CPU 0", ["", "", ""]),
        ("CPU Core 12", ["", "", ""]), ("CX 0", ["", "", ""])])
    facts, findings = parse_dcgmi_dmon(text)
    assert facts["read_whole"] and facts["gpus"] == [0]
    assert sorted(facts["entities"]) == ["CPU 0", "CPU Core 12", "CX 0", "GPU 0", "GPU 0 LINK 3", "GPU-CI 2",
                                         "GPU-I 1", "SW 1 LINK 2", "Switch 3"]
    assert [(f["kind"], (f["gpu"] or {}).get("index")) for f in findings] == [("nvlink_errors", 0),
                                                                              ("nvlink_errors", None)]
    assert findings[0]["message"].startswith("GPU 0 link 3:") and findings[1]["message"].startswith("Switch 3:")


# -- what cannot be read ----------------------------------------------------------------------------------------

def test_a_header_with_no_row_under_it_is_cut_never_healthy(tmp_path, capsys):
    text = "#Entity    XIDER        \nID                      \n"
    facts, (f,) = parse_dcgmi_dmon(text)
    assert (f["kind"], f["category"], f["severity"]) == ("dcgmi_dmon_unreadable", "unknown", "warning")
    assert "is cut" in f["message"] and not facts["read_whole"]
    (tmp_path / "dmon.txt").write_text("$ dcgmi dmon -e 230\n" + text)
    rc, doc, err = analyze_json(capsys, tmp_path / "dmon.txt")
    (h,) = doc["hosts"]
    assert (h["verdict"], [f["kind"] for f in h["findings"]]) == ("unknown", ["dcgmi_dmon_unreadable"])


def test_a_row_cut_short_is_unknown_but_what_was_read_still_counts():
    text = dmon(["XIDER", "EDVTL", "RRP"], [("GPU 0", [0, 0, 0]), ("GPU 1", [94, 0, 0])])
    text += "GPU 2      0\n"
    facts, findings = parse_dcgmi_dmon(text)
    assert kinds(findings) == [("dcgmi_dmon_unreadable", None, None), ("xid", 94, 1)]
    assert "is cut" in findings[0]["message"] and "GPU 2 holds 1 of its 3 values" in findings[0]["message"]


def test_a_paste_that_lost_its_padding_is_cut_only_at_its_end():
    rows = [("GPU 0", [0, 0, 0]), ("Switch 1", [0, "", ""]), ("GPU 1", [0, 0, 0]), ("GPU 2", [0, "", ""])]
    text = "\n".join(line.rstrip() for line in dmon(["XIDER", "EDVTL", "RRP"], rows).splitlines()) + "\n"
    facts, (f,) = parse_dcgmi_dmon(text)
    # the Switch's blanks stand between rows: read; GPU 2's end the text: its values are not known
    assert facts["entities"]["Switch 1"] == {"XIDER": "0", "EDVTL": None, "RRP": None}
    assert "GPU 2" not in facts["entities"] and "is cut" in f["message"] and "GPU 2 holds 1 of its 3" in f["message"]


@pytest.mark.parametrize("row,why", [
    ("GPU 2      0            0            0            7", "4 values under 3 columns"),
    ("GPU 2      0            x1           0", "EDVTL at line 5 is 'x1', neither a count nor N/A")])
def test_rows_that_do_not_match_the_header_are_unknown(row, why):
    text = dmon(["XIDER", "EDVTL", "RRP"], [("GPU 0", [0, 0, 0]), ("GPU 1", [0, 0, 0])]) + row + "\n"
    facts, (f,) = parse_dcgmi_dmon(text)
    assert f["kind"] == "dcgmi_dmon_unreadable" and why in f["message"] and "cannot be read whole" in f["message"]


def test_other_text_is_no_dmon_table():
    assert parse_dcgmi_dmon("#Entity class. Should be VERY similar\nGPU 0 is fine\n", "x.txt")[1] == []
    assert parse_dcgmi_dmon("GPU 0      0\nGPU 1      120\n", "x.txt") == ({}, [])  # rows without their header
    assert parse_dcgmi_dmon(b"\xff\xfe garbage", "x.txt") == ({}, [])
    assert "dcgmi-dmon.txt" not in plan("#Entity class. Should be VERY similar\nID\n").blocks
    assert belongs("dmon was stopped due to receiving a signal") and not belongs("[root@n1 ~]# ls")


def test_the_tag_table_is_dcgms():
    """Each acted-on tag names one DCGM field id (dcgmlib/dcgm_fields.h at 72fa3feaa67d)."""
    ids = [v[0] for v in TAGS.values()]
    assert len(ids) == len(set(ids)) and TAGS["XIDER"] == (230, "xid") and TAGS["EDVTL"][0] == 311
    assert {TAGS[t][0] for t in ("RRF", "RRP", "RPPEN", "URMPS", "CRMPS")} == {395, 396, 392, 393, 394}


def test_the_retired_pages_threshold_is_nvidia_smi_q_s():
    from gpu_runbook.dcgm import dmon
    from gpu_runbook.nvsmi.rules import DEFAULT_THRESHOLDS
    assert dmon.RETIRED_PAGES_RMA == DEFAULT_THRESHOLDS["retired_pages_rma"]
