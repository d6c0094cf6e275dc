"""dcgmi diag / dcgmi health / dcgmi nvlink --link-status output (gpu_runbook/dcgm/): the real samples under
tests/fixtures/formats/dcgmi_* give their truth, and synthetic reports written the way DCGM's own
source prints them (dcgmi/Diag.cpp's DIAG_DATA stencil and 45-column message pieces,
Health.cpp's DcgmiOutputTree(28, 60) and 54-column pieces, the -j JSON of each DCGM generation)
are read to the GPU and category DCGM's error codes and messages say."""

import glob
import json
import os
import re
import textwrap

import pytest

from gpu_runbook.dcgm import OPENING, belongs, opens, parse_dcgmi
from gpu_runbook.findings import SEVERITY_RANK, rank_key
from tests.conftest import FIXTURES

FORMATS = os.path.join(FIXTURES, "formats")
# dcgmi diag and dcgmi health (dcgmi_dmon's samples are tests/unit/test_dcgmi_dmon.py's)
SAMPLES = sorted(c for c in glob.glob(os.path.join(FORMATS, "dcgmi_*", "*")) if "dcgmi_dmon" not in c)
# the GPU a sample's source names (case.json notes); None: no GPU may be blamed
SAMPLE_GPU = {"02-mlengineering-deployment-row-remap-pending-gpu3": 3, "03-mlengineering-r2-gpu-memory-fail-gpu0": 0,
              "04-dcgm49-pcie-fail-nvlink-down-on-pcie-a100": None}


def _worst(findings):
    return max(findings, key=rank_key) if findings else None


def _serious(findings):
    return [f for f in findings if SEVERITY_RANK[f["severity"]] >= SEVERITY_RANK["warning"]]


# -- the real samples ---------------------------------------------------------------------
@pytest.mark.parametrize("case", SAMPLES, ids=[os.path.relpath(c, FORMATS) for c in SAMPLES])
def test_real_sample_gives_its_truth(case):
    with open(os.path.join(case, "case.json")) as fh:
        truth = json.load(fh)["truth"]
    (name,) = [n for n in os.listdir(case) if n != "case.json"]
    with open(os.path.join(case, name)) as fh:
        text = fh.read()
    facts, findings = parse_dcgmi(text, source=name)
    assert facts["tool"] in ("dcgmi diag", "dcgmi health")
    assert not [f for f in findings if f["kind"] == "parser_error"]
    if truth["category"] == "healthy":
        assert not _serious(findings), findings
        assert facts["healthy"] is True
        return
    worst = _worst(findings)
    assert worst["category"] == truth["category"], findings
    assert facts["healthy"] is False
    slug = os.path.basename(case)
    if slug in SAMPLE_GPU:
        want = SAMPLE_GPU[slug]
        assert (worst["gpu"] or {}).get("index") == want
        if want is None:  # no GPU is blamed by any finding
            assert not [f for f in _serious(findings) if f["gpu"]], findings


def _sample(fmt, slug):
    (path,) = [p for p in glob.glob(os.path.join(FORMATS, fmt, slug, "*")) if not p.endswith("case.json")]
    with open(path) as fh:
        return fh.read()


def test_row_remap_pending_of_an_older_dcgm_is_read_by_its_code():
    text = _sample("dcgmi_diag_text", "02-mlengineering-deployment-row-remap-pending-gpu3")
    _facts, (f,) = parse_dcgmi(text, source="dcgmi_diag.txt")
    # DCGM 2.4-3.1 wording ('has uncorrectable memory errors'): DCGM_FR_PENDING_ROW_REMAP
    assert (f["kind"], f["category"], f["severity"], f["gpu"]["index"]) == (
        "row_remap_pending", "gpu_hardware", "critical", 3)
    assert f["source"] == "dcgmi_diag.txt:5"
    assert f["evidence"] == text.splitlines()[4]
    assert "DCGM_FR_PENDING_ROW_REMAP" in f["message"] and "row remappings are pending" in f["message"]


def test_message_cut_mid_word_is_joined_and_cited_at_the_failing_row():
    text = _sample("dcgmi_diag_text", "03-mlengineering-r2-gpu-memory-fail-gpu0")
    facts, findings = parse_dcgmi(text, source="dcgmi_diag_r2.txt")
    (f,) = findings
    assert (f["kind"], f["gpu"]["index"], f["source"]) == ("gpu_temperature_high", 0, "dcgmi_diag_r2.txt:2")
    assert "13.3 seconds started at 9.7 seconds into the test for GPU 0" in f["message"]
    assert "DCGM_FR_THERMAL_VIOLATIONS_TS" in f["message"]
    (test,) = facts["tests"]
    assert (test["name"], test["status"], test["gpus"]) == ("GPU Memory", "Fail", [0])


def test_a_failure_on_every_gpu_blames_no_gpu():
    text = _sample("dcgmi_diag_text", "04-dcgm49-pcie-fail-nvlink-down-on-pcie-a100")
    _facts, findings = parse_dcgmi(text, source="d.txt")
    (f,) = findings
    assert (f["kind"], f["category"], f["severity"], f["gpu"]) == ("logged_error", "unknown", "warning", None)
    assert f["source"] == "d.txt:2" and "every GPU" in f["message"] and "NvLink link 0 is currently down" in f["message"]


def test_healthy_samples_report_their_version_and_gpus():
    facts, findings = parse_dcgmi(_sample("dcgmi_diag_text", "01-awsome-p4de-r2-all-pass"))
    assert (facts["version"], facts["gpus"], facts["overall"], findings) == ("3.3.3", 8, "Pass", [])
    assert {t["name"] for t in facts["tests"]} >= {"Denylist", "Persistence Mode", "PCIe", "GPU Memory"}
    facts, findings = parse_dcgmi(_sample("dcgmi_health", "01-dcgm263-health-json-healthy-while-gpu1-needs-reset"))
    assert (facts["tool"], facts["overall"], facts["healthy"], findings) == ("dcgmi health", "Healthy", True, [])


# -- synthetic diag text, as Diag.cpp prints it ---------------------------------------------
def _row(name, info):
    return "| %-25s | %-46s |" % (name, info)


def _message(label, msg):
    """Diag::DisplayVerboseInfo: the message in 45-character pieces, the label on the first."""
    return [_row(label if i == 0 else "", msg[i:i + 45]) for i in range(0, len(msg), 45)]


HEAD = ["Successfully ran diagnostic for group.", "+" + "-" * 27 + "+" + "-" * 48 + "+",
        _row("Diagnostic", "Result"), "+" + "=" * 27 + "+" + "=" * 48 + "+",
        "|-----  Metadata  ----------+------------------------------------------------|",
        _row("DCGM Version", "4.6.0"), _row("Driver Version Detected", "580.65.06"),
        _row("GPU Device IDs Detected", "2330, 2330, 2330, 2330")]
FOOT = ["+" + "-" * 27 + "+" + "-" * 48 + "+"]
HW = "+-----  Hardware  ----------+------------------------------------------------+"
FAULTY = "Found 24 faulty memory elements on GPU 1"


def test_dcgm4_table_per_gpu_rows():
    body = [HW, _row("memory", "Fail"), _row("", "GPU0: Pass"), _row("", "GPU1: Fail")] + _message(
        "Warning: GPU1", FAULTY) + [_row("", "GPU2: Pass"), _row("", "GPU3: Skip")]
    text = "\n".join(HEAD + body + FOOT)
    facts, findings = parse_dcgmi(text)
    (f,) = findings
    assert (f["category"], f["severity"], f["gpu"]["index"]) == ("gpu_hardware", "critical", 1)
    assert f["kind"] == "logged_gpu_error" and "DCGM_FR_FAULTY_MEMORY" in f["message"]
    line = text.splitlines().index(_row("", "GPU1: Fail")) + 1
    assert f["source"] == "dcgmi.txt:%d" % line and f["evidence"] == _row("", "GPU1: Fail")
    assert (facts["version"], facts["gpus"], facts["overall"]) == ("4.6.0", 4, "Fail")
    assert facts["tests"][0]["messages"] == [FAULTY]


def test_dcgm3_table_gpu_lists_and_wrapped_warnings():
    msg = "GPU 2 had uncorrectable memory errors and row remapping failed."
    body = [HW, _row("GPU Memory", "Pass - GPUs: 0, 1, 3"), _row("", "Fail - GPU: 2")] + _message("Warning", msg)
    _facts, findings = parse_dcgmi("\n".join(HEAD + body + FOOT))
    (f,) = findings
    assert (f["kind"], f["severity"], f["gpu"]["index"]) == ("row_remap_failure", "critical", 2)


def test_every_gpu_failing_is_the_nodes_unless_one_has_critical_hardware():
    down = ["GPU %d's NvLink link 0 is currently down" % g for g in range(4)]
    body = [HW.replace("Hardware", "Integration").replace("----------+", "-------+"), _row("PCIe", "Fail")]
    for g in range(4):
        body += [_row("", "GPU%d: Fail" % g)] + _message("Warning: GPU%d" % g, down[g])
    _facts, findings = parse_dcgmi("\n".join(HEAD + body + FOOT))
    (f,) = findings
    assert (f["category"], f["gpu"], f["severity"]) == ("unknown", None, "warning")
    # the same, GPU 3 with a DBE of its own: that GPU is still named
    body[-1:] = _message("Warning: GPU3", "Detected 2 volatile double-bit ECC error(s) in GPU 3.")
    _facts, findings = parse_dcgmi("\n".join(HEAD + body + FOOT))
    assert sorted(((f["gpu"] or {"index": -1})["index"], f["category"]) for f in findings) == [
        (-1, "unknown"), (3, "gpu_hardware")]
    # one GPU in the run: 'Fail - All' is that GPU's
    one = HEAD[:-1] + [_row("GPU Device IDs Detected", "20b2")]
    text = "\n".join(one + [_row("PCIe", "Fail - All")] + _message("Warning", down[0]) + FOOT)
    (f,) = parse_dcgmi(text)[1]
    assert (f["kind"], f["gpu"]["index"]) == ("nvlink_inactive", 0)


@pytest.mark.parametrize("name,category", [
    ("Persistence Mode", "unknown"), ("Environment Variables", "unknown"), ("Permissions and OS Blocks", "unknown"),
    ("Graphics Processes", "unknown"), ("CUDA Main Library", "driver"), ("NVML Library", "driver"),
    ("Denylist", "driver"), ("Page Retirement/Row Remap", "gpu_hardware"), ("Inforom", "gpu_hardware"),
    ("PCIe", "gpu_hardware"), ("Memory Bandwidth", "gpu_hardware"), ("software", "unknown"),
])
def test_a_check_with_no_message_is_read_by_its_name(name, category):
    text = "\n".join(HEAD + ["|-----  Deployment  --------+------------------------------------------------|",
                             _row(name, "Fail")] + FOOT)
    (f,) = parse_dcgmi(text)[1]
    assert (f["category"], f["severity"], f["gpu"]) == (category, "warning", None)


def test_skipped_and_passed_tests_are_nothing():
    body = [HW, _row("GPU Memory", "Skip - All"), _row("Diagnostic", "Pass - All"), _row("memtest", "Skip"),
            _row("", "GPU0: Skip")] + _message("Warning: GPU0", "The memtest test is skipped.")
    facts, findings = parse_dcgmi("\n".join(HEAD + body + FOOT))
    assert findings == [] and facts["overall"] == "Pass" and facts["healthy"] is True


def test_pdsh_prefixed_and_quoted_rows_are_read():
    text = "\n".join("node7: " + line for line in [_row("GPU Memory", "Pass - GPUs: 1"), _row("", "Fail - GPU: 0")])
    (f,) = parse_dcgmi(text)[1]
    assert f["gpu"]["index"] == 0 and f["source"] == "dcgmi.txt:2" and f["evidence"].startswith("node7: |")
    (f,) = parse_dcgmi("> " + _row("PCIe", "Fail - GPU: 5"))[1]
    assert f["gpu"]["index"] == 5


# -- synthetic diag JSON, each generation's shape -------------------------------------------
def _dcgm4(results, name="memory", category="Hardware"):
    return {"DCGM Diagnostic": {"test_categories": [{"category": category, "tests": [
        {"name": name, "results": results, "test_summary": {"status": "Fail"}}]}]},
        "metadata": {"version": "4.6.0"}, "entity_groups": [{"entity_group": "GPU", "entity_group_id": 1,
                                                             "entities": [{"entity_id": i} for i in range(4)]}]}


def _gpu4(i, status, code=None, msg=""):
    out = {"entity_group": "GPU", "entity_group_id": 1, "entity_id": i, "status": status}
    if code is not None:
        out["warnings"] = [{"warning": msg, "error_id": code, "error_category": 1, "error_severity": 1}]
    return out


def test_json_error_id_4_is_a_volatile_dbe_on_its_gpu():
    doc = _dcgm4([_gpu4(0, "Pass"), _gpu4(1, "Pass"), _gpu4(2, "Fail", 4, "a message the table does not know"),
                  _gpu4(3, "Pass")])
    facts, findings = parse_dcgmi(json.dumps(doc, indent=8), source="diag.json")
    (f,) = findings
    assert (f["kind"], f["category"], f["severity"], f["gpu"]["index"]) == (
        "ecc_uncorrectable_volatile", "gpu_hardware", "critical", 2)
    assert f["source"] == "diag.json" and "DCGM_FR_VOLATILE_DBE_DETECTED" in f["message"]
    assert (facts["format"], facts["version"], facts["gpus"], facts["overall"]) == ("json", "4.6.0", 4, "Fail")


def test_one_tests_json_pasted_alone_is_read_as_deep_as_the_report_nests_it():
    # a test's object cut out of a -j report (its 'tests' list: NVIDIA/DCGM#215 pasted 'diagnostic' alone), with
    # the report's indentation and the comma that followed it
    doc = _dcgm4([_gpu4(0, "Pass"), _gpu4(1, "Fail", 4, "a message the table does not know"), _gpu4(2, "Pass")],
                 name="memory", category="Hardware")
    test = doc["DCGM Diagnostic"]["test_categories"][0]["tests"][0]
    text = textwrap.indent(json.dumps(test, indent=8), " " * 40) + ",\n"
    facts, findings = parse_dcgmi(text, source="diag.json")
    (f,) = findings
    assert (f["kind"], f["gpu"]["index"], facts["tool"], facts["format"]) == (
        "ecc_uncorrectable_volatile", 1, "dcgmi diag", "json")
    passed = json.dumps(dict(test, results=[_gpu4(i, "Pass") for i in range(3)], test_summary={"status": "Pass"}))
    facts, findings = parse_dcgmi(passed)
    assert findings == [] and facts["tests"][0]["status"] == "Pass" and facts["tests"][0]["name"] == "memory"
    # the name must be one of DCGM's plugins (nvvs/include/PluginStrings.h): any other object is not DCGM's
    assert parse_dcgmi(json.dumps(dict(test, name="my_benchmark")))[0]["tool"] is None


def test_json_test_wide_error_only_in_the_summary():
    doc = _dcgm4([_gpu4(i, "Pass") for i in range(4)], name="software", category="Deployment")
    doc["DCGM Diagnostic"]["test_categories"][0]["tests"][0]["test_summary"] = {"status": "Fail", "warnings": [
        {"warning": "GPU 7 has fallen off the bus", "error_id": 120, "error_category": 1, "error_severity": 3}]}
    (f,) = parse_dcgmi(json.dumps(doc))[1]
    assert (f["kind"], f["gpu"]["index"], f["severity"]) == ("gpu_fallen_off_bus", 7, "critical")


def test_verbose_info_rows_are_no_failure():
    body = [HW, _row("memory", "Pass"), _row("", "GPU0: Pass")] + _message(
        "Info: GPU0", "Allocated 75629342784 bytes (98.7%) and found no errors or memory mismatches on GPU 0")
    facts, findings = parse_dcgmi("\n".join(HEAD + body + FOOT))
    assert findings == [] and facts["healthy"] is True


def test_json_of_dcgm3_and_dcgm2():
    dcgm3 = {"DCGM GPU Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [{"name": "GPU Memory",
             "results": [{"gpu_id": "0", "status": "Pass"}, {"gpu_id": "1", "status": "Fail", "warnings": [
                 {"warning": "GPU 1 had memory errors and row remappings are pending", "error_id": 85}]}]}]}]},
             "version": "3.3.5", "GPU Device IDs": ["20b2", "20b2"]}
    (f,) = parse_dcgmi(json.dumps(dcgm3))[1]
    assert (f["kind"], f["gpu"]["index"]) == ("row_remap_pending", 1)
    # 2.x: gpu_ids, the warning a string, no code: read by its text
    dcgm2 = {"DCGM GPU Diagnostic": {"test_categories": [{"category": "Stress", "tests": [{"name": "SM Stress",
             "results": [{"gpu_ids": "6", "status": "Fail", "warnings": "There were thermal violations totaling 4.0 "
                                                                           "seconds for GPU 6"}]}]}]}}
    (f,) = parse_dcgmi(json.dumps(dcgm2))[1]
    assert (f["kind"], f["gpu"]["index"], f["severity"]) == ("gpu_temperature_high", 6, "warning")
    # 3.3's Deployment entries ('warnings' inside the warning) and a gpu_id number
    dep = {"DCGM GPU Diagnostic": {"test_categories": [{"category": "Deployment", "tests": [{"name": "Persistence Mode",
           "results": [{"status": "Fail", "gpu_id": 3, "warnings": [
               {"warnings": "Persistence mode for GPU 3 is disabled.", "error_id": 29}]}]}]}]}}
    (f,) = parse_dcgmi(json.dumps(dep))[1]
    assert (f["category"], f["gpu"]["index"]) == ("driver", 3)  # DCGM files DCGM_FR_PERSISTENCE_MODE as the driver's


def test_json_every_gpu_failing_and_iterations():
    doc = _dcgm4([_gpu4(0, "Fail", 4, ""), _gpu4(1, "Fail", 41, "x"), _gpu4(2, "Fail", 41, "x"),
                  _gpu4(3, "Fail", 41, "x")])
    findings = parse_dcgmi(json.dumps(doc))[1]
    assert sorted(((f["gpu"] or {"index": -1})["index"], f["kind"]) for f in findings) == [
        (-1, "logged_error"), (0, "ecc_uncorrectable_volatile")]
    runs = {"Overall Result": "Fail", "iterations": [_dcgm4([_gpu4(1, "Fail", 4, "")])] * 2, "warning": "x"}
    assert opens("{", ['"Overall Result" : "Fail",', '"iterations" :', "["])
    (f,) = parse_dcgmi(json.dumps(runs, indent=8))[1]  # the same failure in each run: said once
    assert f["gpu"]["index"] == 1


def test_json_runtime_error_and_a_cut_off_capture():
    doc = {"DCGM GPU Diagnostic": {"version": "3.3.5", "runtime_error": "Error: Diagnostic could not be run "
                                   "because the Tesla recommended driver is not being used."}}
    facts, (f,) = parse_dcgmi(json.dumps(doc))
    assert (f["category"], f["severity"], facts["overall"]) == ("driver", "warning", "Error")
    text = json.dumps(_dcgm4([_gpu4(0, "Fail", 4, ""), _gpu4(1, "Pass")]), indent=8)
    cut = text[:text.index('"entity_id": 1')]
    facts, findings = parse_dcgmi("$ dcgmi diag -r 3 -j\n" + cut)
    assert sorted(f["kind"] for f in findings) == ["capture_truncated", "ecc_uncorrectable_volatile"]
    assert facts["healthy"] is False


# -- dcgmi health ---------------------------------------------------------------------------
def _tree_row(level, label, value=""):
    """DcgmiOutputTree(28, 60)::rowStr."""
    left = ("%*s" % (level * 3, "-> ") if level else "") + label
    return "| %-25s | %-56s |" % (left, value)


def _incident(system, health, msg):
    return [_tree_row(3, system, health)] + [_tree_row(0, "", p) for p in textwrap.wrap(msg, 54)]


HLINE = "+" + "-" * 27 + "+" + "-" * 58 + "+"


def _health(body, overall):
    return "\n".join([HLINE, "| %-85s|" % "Health Monitor Report", HLINE.replace("-", "="),
                      _tree_row(0, "Overall Health", overall)] + body + [HLINE])


def test_health_tree_names_the_gpu_and_the_watch():
    body = [_tree_row(0, "GPU"), _tree_row(1, "0", "Warning"), _tree_row(2, "Errors")] + _incident(
        "PCIe system", "Warning", "Detected more than 8 PCIe replays per minute for GPU 0 : 13") + [
        _tree_row(1, "1", "Failure"), _tree_row(2, "Errors")] + _incident(
        "Memory system", "Failure", "Detected 3 volatile double-bit ECC error(s) in GPU 1.") + _incident(
        "Driver", "Warning", "something the table does not know")
    text = _health(body, "Failure")
    assert opens(text.splitlines()[0], text.splitlines()[1:4])
    facts, findings = parse_dcgmi(text, source="health.txt")
    got = sorted((f["gpu"]["index"], f["kind"], f["category"], f["severity"]) for f in findings)
    assert got == [(0, "logged_gpu_error", "gpu_hardware", "warning"),
                   (1, "ecc_uncorrectable_volatile", "gpu_hardware", "critical"),
                   (1, "logged_driver_error", "driver", "warning")]
    pcie = next(f for f in findings if f["gpu"]["index"] == 0)
    assert pcie["source"] == "health.txt:%d" % (text.splitlines().index(_incident("PCIe system", "Warning", "x")[0]) + 1)
    assert (facts["tool"], facts["overall"], facts["healthy"]) == ("dcgmi health", "Failure", False)
    assert facts["tests"][0] == {"name": "PCIe system", "category": "GPU", "status": "Warning", "gpus": [0],
                                 "messages": ["Detected more than 8 PCIe replays per minute for GPU 0 : 13"]}


def test_health_one_line_form_and_an_overall_warning_alone():
    text = _health([_tree_row(0, "GPU"), _tree_row(1, "2", "Warning"),
                    _tree_row(3, "Thermal system : Warning - Detected clocks event due to thermal violation in GPU 2.")],
                   "Warning")
    (f,) = parse_dcgmi(text)[1]
    assert (f["kind"], f["gpu"]["index"]) == ("gpu_temperature_high", 2)
    (f,) = parse_dcgmi(_health([], "Warning"))[1]
    assert (f["kind"], f["category"], f["severity"], f["gpu"]) == ("logged_error", "unknown", "warning", None)


def test_health_json_with_incidents():
    doc = {"body": {"GPU": {"children": {"5": {"value": "Warning", "children": {"Errors": {"children": {
        "NVLINK system": {"value": "Warning", "overflow": ["Detected 12 CRC NvLink errors on GPU 5's NVLink",
                                                           "which exceeds threshold of 10"]}}}}}}},
        "Overall Health": {"value": "Warning"}}, "header": ["Health Monitor Report"]}
    text = "$ dcgmi health -c -j\n" + json.dumps(doc, indent=8)
    assert opens(text.splitlines()[1], text.splitlines()[2:5])
    facts, (f,) = parse_dcgmi(text, source="h.json")
    assert (f["kind"], f["gpu"]["index"], f["severity"], f["source"]) == ("nvlink_errors", 5, "warning", "h.json")
    assert facts["overall"] == "Warning" and facts["format"] == "json"


def test_diag_and_health_in_one_text_are_two_reports():
    text = "\n".join(HEAD + [HW, _row("GPU Memory", "Pass - All")] + FOOT) + "\n" + _health([], "Healthy")
    facts, findings = parse_dcgmi(text)
    assert findings == [] and [r["tool"] for r in facts["reports"]] == ["dcgmi diag", "dcgmi health"]


# -- the block finder's hooks, and hostile input --------------------------------------------
def test_opening_opens_and_belongs():
    box = "+---------------------------+------------------------------------------------+"
    assert opens(box, [_row("Diagnostic", "Result")]) and opens(box, [HW])
    assert not opens(box, ["| NVIDIA-SMI 535.104.12   Driver Version: 535.104.12   CUDA Version: 12.2  |"])
    assert OPENING.match(box) and not opens(box, [])
    for line in (HW, _row("GPU Memory", "Fail - GPU: 0"), _row("", "GPU3: Fail"), "| Health Monitor Report  |",
                 '{"DCGM GPU Diagnostic": {"test_categories": []}}'):
        assert opens(line, []), line
    assert opens("{", ['        "body" : ', "        {", '                "Overall Health" : '])
    assert opens("{", ['"body" : ', "{", '"GPU" : '])
    assert not opens("{", ['"name": "x",', '"value": 1', "}"])
    assert not opens('{"body": {"text": "hello"}}', [])
    for line in ("", "   ", _row("a", "b"), box, "{", '        "value" : "Healthy"', "        },", "[", "12,", "null"):
        assert belongs(line), line
    for line in ("$ dcgmi health -c", "[Mon Jan  1 00:00:00 2024] NVRM: Xid", "Successfully ran diagnostic"):
        assert not belongs(line), line


@pytest.mark.parametrize("text", [None, "", "garbage\n|||\n+--+\n{", "{" * 5000, '{"DCGM Diagnostic": ' + "[" * 5000,
                                  '{"body": {"GPU": {"children": {"0": 7}}}}', "| Warning | GPU 9" + "9" * 400,
                                  '{"DCGM GPU Diagnostic": {"test_categories": [{"tests": [{"results": [1, null, '
                                  '{"gpu_id": "²", "status": "Fail", "warnings": [3, {"error_id": true}]}]}]}]}}',
                                  "| Fail - GPUs: " + "1, " * 300 + " |", "\x1b[31m" + _row("PCIe", "Fail - All")])
def test_hostile_input_never_raises(text):
    facts, findings = parse_dcgmi(text)
    assert isinstance(facts, dict) and not [f for f in findings if f["kind"] == "parser_error"]


def test_patterns_have_no_nested_repeats():
    """A cheap guard next to tests/unit/test_linear_patterns.py: no (x+)+ shape in this module."""
    import gpu_runbook.dcgm as mod
    for name in dir(mod):
        obj = getattr(mod, name)
        if isinstance(obj, re.Pattern):
            assert not re.search(r"\)[*+]\)?[*+]", obj.pattern), name


# ---- dcgmi nvlink --link-status (dcgm/nvlink.py): its layout as dcgmi/Nvlink.cpp prints it
def _link_status(*gpus):
    return ("+----------------------+\n|  NvLink Link Status  |\n+----------------------+\nGPUs:\n" +
            "".join("    gpuId %d:\n        %s\n" % (i, " ".join(links)) for i, links in enumerate(gpus)) +
            "NvSwitches:\n    No NvSwitches found.\n\nKey: Up=U, Down=D, Disabled=X, Not Supported=_\n")


def test_link_status_with_every_link_up_is_healthy_and_a_down_link_is_an_inactive_nvlink():
    facts, findings = parse_dcgmi(_link_status("U" * 18, "U" * 12 + "_" * 6))
    assert facts["tool"] == "dcgmi nvlink" and facts["healthy"] and not findings
    facts, findings = parse_dcgmi(_link_status("U" * 18, "U" * 4 + "D" * 2 + "X" * 12))
    (f,) = findings
    assert f["kind"] == "nvlink_inactive" and f["gpu"]["index"] == 1 and "2 of its 18" in f["message"]
    assert f["source"] == "dcgmi.txt:8" and not facts["healthy"]


def test_link_status_is_found_in_a_paste_by_its_box():
    from gpu_runbook.content import plan
    text = "$ dcgmi nvlink --link-status\n" + _link_status("D" * 18) + "$ uptime\n 10:00:01 up 3 days\n"
    p = plan(text)
    assert list(p.blocks) == ["dcgmi.txt"] and "Key: Up=U" in p.blocks["dcgmi.txt"]
    assert "uptime" in p.rest and "gpuId" not in p.rest
