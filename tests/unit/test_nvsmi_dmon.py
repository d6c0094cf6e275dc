"""nvidia-smi dmon (nvsmi/dmon.py): columns mapped by its '# gpu' header, never by position. A nonzero
dbecc is the volatile uncorrectable ECC finding and a gtemp at or over 85 C the high-temperature one,
as nvidia-smi -q's readers make them; every other column is a fact, never judged; a table cut, or
rows that do not match its header, is unknown (nvsmi_unparseable), never healthy. REAL is laid out as
a public blog post's 8-GPU capture (its GPUs 0, 1 and 5 as printed, the others in their style)."""

import pytest

from gpu_runbook.dcgm.dmon import OPENING as DCGM_OPENING
from gpu_runbook.findings import finding
from gpu_runbook.nvsmi import parse_query_gpu_csv
from gpu_runbook.nvsmi.dmon import OPENING, TAGS, belongs, parse_nvidia_smi_dmon, read_table, value
from tests.unit.scaling import assert_linear

HEAD = "# gpu    pwr  gtemp  mtemp     sm    mem    enc    dec    jpg    ofa   mclk   pclk"
UNITS = "# Idx      W      C      C      %      %      %      %      %      %    MHz    MHz"
ROWS = ["    0     24     29      -      0      0      0      0      0      0    405    210",
        "    1     11     29      -      0      0      0      0      0      0    405    210",
        "    2     23     30      -      0      0      0      0      0      0    405    210",
        "    3     22     28      -      0      0      0      0      0      0    405    210",
        "    4     24     31      -      0      0      0      0      0      0    405    210",
        "    5    113     37      -    100      0      0      0      0      0  14001   2940",
        "    6     23     30      -      0      0      0      0      0      0    405    210",
        "    7     25     29      -      0      0      0      0      0      0    405    210"]
REAL = "$ nvidia-smi dmon\n" + "\n".join([HEAD, UNITS] + ROWS) + "\n"

# -o DT -s pe: the date and time first, ECC and PCIe replays after the power group
DT_HEAD = "#Date       Time        gpu    pwr  gtemp  mtemp  sbecc  dbecc    pci"
DT_UNITS = "#YYYYMMDD   HH:MM:SS    Idx      W      C      C   errs   errs   errs"


def dt_row(gpu, temp=30, sbe=0, dbe=0, pci=0, t="12:00:01"):
    return " 20240301   %s  %5d  %5d  %5d      -  %5d  %5d  %5d" % (t, gpu, 60, temp, sbe, dbe, pci)


def dt_table(rows, repeat=None):
    out = [DT_HEAD, DT_UNITS]
    for i, r in enumerate(rows):
        if i == repeat:
            out += [DT_HEAD, DT_UNITS]
        out.append(r)
    return "\n".join(out) + "\n"


def kinds(findings):
    return sorted(f["kind"] for f in findings)


def test_real_default_columns_are_facts_never_judged():
    facts, findings = parse_nvidia_smi_dmon(REAL)
    assert findings == []  # GPU 5 at 100% sm while the others idle is no fault
    assert facts["tool"] == "nvidia-smi dmon"
    assert facts["columns"] == ["gpu", "pwr", "gtemp", "mtemp", "sm", "mem", "enc", "dec", "jpg", "ofa", "mclk",
                                "pclk"]
    assert sorted(facts["gpus"]) == list(range(8))
    assert facts["gpus"][5] == {"pwr": 113, "gtemp": 37, "mtemp": None, "sm": 100, "mem": 0, "enc": 0, "dec": 0,
                                "jpg": 0, "ofa": 0, "mclk": 14001, "pclk": 2940}
    assert facts["samples"] == 8
    assert facts["reading"] is False  # no ECC column: temperatures and utilisation are facts, not health


def test_volatile_dbe_is_the_finding_nvidia_smi_q_makes_and_the_rest_are_facts():
    rows = [dt_row(g, sbe=7 if g == 2 else 0, pci=12 if g == 4 else 0) for g in range(8)]
    rows += [dt_row(g, dbe=2 if g == 3 else 0, t="12:00:02") for g in range(8)]
    facts, findings = parse_nvidia_smi_dmon(dt_table(rows), source="n1/dmon.txt")
    assert kinds(findings) == ["ecc_uncorrectable_volatile"]  # sbecc 7 and 12 PCIe replays: facts only
    f, ref = findings[0], finding("ecc_uncorrectable_volatile", "x")
    assert (f["category"], f["severity"], f["rung"]) == (ref["category"], ref["severity"], ref["rung"])
    assert f["gpu"]["index"] == 3 and f["counters"] == {"volatile_uncorrectable": 2}
    assert f["source"] == "n1/dmon.txt:%d" % (2 + 8 + 4) and "12:00:02" in f["evidence"]
    assert facts["columns"][:3] == ["Date", "Time", "gpu"]
    assert facts["gpus"][2]["sbecc"] == 0 and facts["gpus"][4]["pci"] == 0  # the last sample's values
    assert facts["gpus"][3] == {"Date": 20240301, "Time": "12:00:02", "pwr": 60, "gtemp": 30, "mtemp": None,
                                "sbecc": 0, "dbecc": 2, "pci": 0}
    assert facts["samples"] == 16 and facts["reading"] is True


@pytest.mark.parametrize("temp,hot", [(84, False), (85, True), (92, True)])
def test_temperature_at_the_nvsmi_threshold_is_its_finding(temp, hot):
    rows = [dt_row(g, temp=temp if g == 6 else 40) for g in range(8)]
    rows += [dt_row(g, temp=50, t="12:00:02") for g in range(8)]  # cooled: the hottest sample still counts
    _facts, findings = parse_nvidia_smi_dmon(dt_table(rows))
    assert kinds(findings) == (["gpu_temperature_high"] if hot else [])
    if hot:
        f = findings[0]
        assert f["gpu"]["index"] == 6 and f["counters"] == {"temperature_c": temp} and f["threshold"] == 85
        # the same kind, category and severity nvidia-smi --query-gpu's reader gives the same temperature
        _q, qf = parse_query_gpu_csv("index, temperature.gpu\n6, %d\n" % temp)
        q = [x for x in qf if x["kind"] == "gpu_temperature_high"]
        assert [(x["category"], x["severity"]) for x in q] == [(f["category"], f["severity"])]


def test_thresholds_override_and_older_drivers_temp_column():
    text = ("# gpu   pwr  temp    sm   mem   enc   dec  mclk  pclk\n"
            "# Idx     W     C     %     %     %     %   MHz   MHz\n"
            "    0    43    80     0     0     0     0  2505  1177\n")
    assert kinds(parse_nvidia_smi_dmon(text)[1]) == []
    facts, findings = parse_nvidia_smi_dmon(text, thresholds={"temperature_c": 75})
    assert kinds(findings) == ["gpu_temperature_high"] and facts["gpus"][0]["temp"] == 80
    assert set(TAGS) == {"dbecc", "gtemp", "temp"}


def test_repeated_header_is_one_table():
    text = "\n".join([HEAD, UNITS] + ROWS + [HEAD, UNITS] + ROWS) + "\n"
    read = read_table(text)
    assert len(read["tables"]) == 1 and read["tables"][0]["rows"] == 16 and read["bad"] == []
    facts, findings = parse_nvidia_smi_dmon(text)
    assert findings == [] and facts["samples"] == 16 and facts["reading"] is False  # no ECC column


def test_csv_format_is_read_by_its_header():
    text = ("#gpu, pwr, gtemp, mtemp, sbecc, dbecc, pci\n#Idx, W, C, C, errs, errs, errs\n"
            "0, 70, 41, 45, 0, 0, 0\n1, 71, 88, 50, 0, 1, 0\n")
    facts, findings = parse_nvidia_smi_dmon(text)
    assert kinds(findings) == ["ecc_uncorrectable_volatile", "gpu_temperature_high"]
    assert {f["gpu"]["index"] for f in findings} == {1} and facts["gpus"][0]["mtemp"] == 45


def _unreadable(text):
    facts, findings = parse_nvidia_smi_dmon(text)
    bad = [f for f in findings if f["kind"] == "nvsmi_unparseable"]
    assert len(bad) == 1 and facts["reading"] is False, findings
    assert bad[0]["category"] == "unknown" and bad[0]["severity"] == "warning"
    return facts, findings, bad[0]


def test_header_with_no_row_is_unknown_never_healthy():
    facts, findings, bad = _unreadable("$ nvidia-smi dmon\n" + HEAD + "\n" + UNITS + "\n")
    assert findings == [bad] and facts["gpus"] == {} and "no row stands under its header at line 2" in bad["message"]


def test_rows_that_do_not_line_up_are_unknown():
    cut = ROWS[:7] + [ROWS[7][:30]]  # the text stops inside GPU 7's row
    _facts, _f, bad = _unreadable("\n".join([HEAD, UNITS] + cut) + "\n")
    assert "values under 12 columns" in bad["message"] and bad["source"].endswith(":10")
    # the header of -s pucvmet over rows of the default columns: the columns do not match
    wide = HEAD + "  pviol  tviol     fb   bar1   ccpm  sbecc  dbecc    pci  rxpci  txpci"
    facts, _f, bad = _unreadable("\n".join([wide, UNITS] + ROWS) + "\n")
    assert facts["samples"] == 0 and "12 values under 22 columns" in bad["message"]


def test_a_judged_cell_neither_number_nor_dash_is_unknown_but_dbe_still_said():
    rows = [dt_row(g, dbe=1 if g == 0 else 0) for g in range(8)]
    rows[5] = rows[5].replace("  30  ", "ERR!  ", 1)
    facts, findings, bad = _unreadable(dt_table(rows))
    assert "GPU 5's gtemp" in bad["message"] and kinds(findings) == ["ecc_uncorrectable_volatile", bad["kind"]]


def test_no_header_is_not_this_reader():
    assert parse_nvidia_smi_dmon("\n".join(ROWS)) == ({}, [])
    assert parse_nvidia_smi_dmon("") == ({}, []) and parse_nvidia_smi_dmon(None) == ({}, [])
    assert parse_nvidia_smi_dmon(REAL.encode())[0]["samples"] == 8


def test_opening_and_belongs():
    for line in (HEAD, DT_HEAD, "#gpu, pwr, gtemp", "# gpu", "#Time  gpu  pwr"):
        assert OPENING.match(line) and belongs(line), line
    for line in (UNITS, DT_UNITS, "#Idx, W, C", "", "   ", dt_row(3), "0, 70, 41, 45, 0, 0, 0") + tuple(ROWS):
        assert belongs(line), line
    dcgm = "#Entity         XIDER        EDVTL"
    assert DCGM_OPENING.match(dcgm) and not OPENING.match(dcgm) and not OPENING.match("# GPU pwr")
    for line in ("GPU 0           0            0", "[12:00:01] loss 0.3", "# gpus pwr", "nvidia-smi dmon"):
        assert not belongs(line), line


def test_value():
    assert [value(c) for c in ("-", "0", "14001", "12.5", "12:00:01", "N/A")] == [None, 0, 14001, 12.5,
                                                                                   "12:00:01", "N/A"]


def _hostile(n):
    return {"header": "# gpu" + " pwr" * n + "\n" + "    0" * (n + 1) + "\n",
            "rows": HEAD + "\n" + UNITS + "\n" + "\n".join(ROWS[i % 8] for i in range(n)) + "\n",
            "row_line": HEAD + "\n" + "0 " * (40 * n) + "#\n",
            "hashes": ("# gpu " * n + "\n") * 4 + ("#Date Time " * n) + "\n",
            "digits": ("0" * 41 + " 1" * 50 + "\n") * (n // 50 + 1) + "0," * (20 * n) + "x\n"}


@pytest.mark.parametrize("which", ["header", "rows", "row_line", "hashes", "digits"])
def test_hostile_lines_are_linear(which):
    assert_linear(parse_nvidia_smi_dmon, lambda n: _hostile(n)[which], 2000, label=which)


def test_never_raises():
    for text in ("# gpu pwr\n# Idx W\n0 1 2 3\n", "# gpu\n0\n1\n", "#Date Time gpu\n 1 2 3\n", "# gpu gpu\n0 1\n",
                 "\x00# gpu pwr\n\x1b[1m0 5\n", "# gpu dbecc\n 0 -1\n 1 1e5\n"):
        facts, findings = parse_nvidia_smi_dmon(text)
        assert "parser_error" not in kinds(findings), (text, findings)


def test_a_negative_dbe_is_no_error_count():
    _facts, findings = parse_nvidia_smi_dmon("# gpu dbecc\n# Idx errs\n 0 -1\n")
    assert findings == []


@pytest.mark.parametrize("name", ["nvidia-smi-dmon.txt", "notes.txt"])
def test_read_by_content_and_only_an_ecc_column_makes_it_a_reading(tmp_path, name):
    from gpu_runbook.cli import analyze_paths
    # the default columns (held-out x41-05: GPU 5 busy with no process): facts, no health claim
    (tmp_path / name).write_text("$ nvidia-smi dmon\n" + "\n".join([HEAD, UNITS] + ROWS) + "\n")
    doc = analyze_paths([str(tmp_path)])
    (h,) = doc["hosts"]
    assert doc["files"][0]["read_as"] == ["nvidia-smi dmon"] and h["verdict"] == "unknown"
    # -s pe: the double-bit ECC column read on every GPU is a reading; a count is the GPU's fault
    (tmp_path / name).write_text(dt_table([dt_row(g) for g in range(8)]))
    (h,) = analyze_paths([str(tmp_path)])["hosts"]
    assert h["verdict"] == "healthy"
    (tmp_path / name).write_text(dt_table([dt_row(g, dbe=1 if g == 3 else 0) for g in range(8)]))
    (h,) = analyze_paths([str(tmp_path)])["hosts"]
    assert (h["verdict"], h["severity"]) == ("gpu_hardware", "critical")
