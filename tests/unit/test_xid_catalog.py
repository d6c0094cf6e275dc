import ast
import copy
import pathlib
import sys

import pytest

from gpu_runbook import xid_catalog
from gpu_runbook.findings import CATEGORIES, RUNGS, SEVERITIES
from gpu_runbook.taxonomy import RUNG_STEPS, STEPS, action_text, rung_of_steps
from gpu_runbook.xid_catalog import UNKNOWN_XID, XID_CATALOG, lookup, remedy, rung_for_xid154

REQUIRED = [8, 13, 31, 32, 43, 45, 46, 48, 61, 62, 63, 64, 68, 69, 74, 79, 92, 94, 95, 109,
            119, 120, 121, 136, 137, 140, 143, 144, 145, 146, 147, 148, 149, 150, 154,
            155, 156, 157, 158]
PKG = pathlib.Path(xid_catalog.__file__).parent


@pytest.mark.parametrize("code", REQUIRED)
def test_required_codes_present_and_valid(code):
    e = lookup(code)
    assert e is not None, code
    assert e["xid"] == code
    assert e["category"] in CATEGORIES and e["category"] != "healthy"
    assert e["severity"] in SEVERITIES and e["severity"] != "ok"
    assert e["rung"] in RUNGS
    assert e["name"] and e["mnemonic"]
    assert e["action"].endswith(".") and len(e["action"]) > 15


@pytest.mark.parametrize("code", sorted(XID_CATALOG))
def test_bucket_maps_to_rung(code):
    e = XID_CATALOG[code]
    bucket, rung = e["nvidia_action"], e["rung"]
    expected = {"RESET_GPU": {"gpu_reset"}, "RESTART_BM": {"reboot"}, "RESTART_VM": {"reboot"},
                "CONTACT_SUPPORT": {"rma"}, "IGNORE": {"none"},
                "RESTART_APP": {"fix_application", "none"}}.get(bucket)
    if expected is not None and rung not in expected:
        # a deliberate deviation from NVIDIA's bucket must say why
        assert e["why"], "Xid %d: bucket %s -> rung %s without a reason" % (code, bucket, rung)


def test_key_entries_follow_nvidia():
    assert lookup(79)["nvidia_action"] == "RESTART_BM"
    assert lookup(79)["rung"] == "reboot" and lookup(79)["severity"] == "critical"
    assert lookup(79)["category"] == "gpu_hardware"
    for code in (13, 31, 43):
        assert lookup(code)["category"] == "application"
        assert lookup(code)["rung"] == "fix_application"
    assert lookup(13)["nvidia_action"] == "RESTART_APP"
    assert lookup(43)["nvidia_action"] == "IGNORE"   # catalog says IGNORE; rung explains why not
    assert lookup(48)["category"] == "gpu_hardware" and lookup(48)["severity"] == "critical"
    assert lookup(119)["nvidia_action"] == "RESET_GPU" and lookup(119)["category"] == "driver"
    assert lookup(95)["rung"] == "gpu_reset"
    assert lookup(94)["rung"] == "none"              # contained: re-run the job, not fix it
    assert lookup(61)["rung"] == "rma"
    assert lookup(63)["nvidia_action"] == "IGNORE" and lookup(63)["rung"] == "gpu_reset"
    assert lookup(145)["nvidia_action"] == "WORKFLOW_NVLINK5_ERR"


def test_lookup_unknown_and_garbage():
    assert lookup(999) is None
    assert lookup(0) is None
    assert lookup(None) is None
    assert lookup("seventy-nine") is None
    assert lookup("79")["xid"] == 79


def test_lookup_returns_a_copy():
    before = copy.deepcopy(XID_CATALOG[79])
    e = lookup(79)
    e["rung"] = "none"
    assert XID_CATALOG[79] == before


@pytest.mark.parametrize("msg,rung", [
    ("GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)", "gpu_reset"),
    ("GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)", "reboot"),
    ("GPU recovery action changed from 0x0 (None) to 0x3 (Drain P2P)", "drain"),
    ("GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)", "none"),
    ("something else", None),
    (None, None),
])
def test_rung_for_xid154(msg, rung):
    assert rung_for_xid154(msg) == rung


@pytest.mark.parametrize("name", ["xid_catalog.py"] + sorted("kernlog/" + p.name for p in (PKG / "kernlog").glob("*.py")))
def test_stdlib_and_relative_imports_only_py39_syntax(name):
    src = (PKG / name).read_text()
    tree = ast.parse(src, feature_version=(3, 9))
    stdlib = set(getattr(sys, "stdlib_module_names", ())) or {"re", "datetime"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                assert a.name.split(".")[0] in stdlib, a.name
        elif isinstance(node, ast.ImportFrom):
            assert node.level >= 1 or node.module.split(".")[0] in stdlib, node.module


# -- the catalog speaks in taxonomy steps ---------------------------------------------------

def _has_hangul(text):
    return any("\uac00" <= ch <= "\ud7a3" for ch in text)


@pytest.mark.parametrize("code", sorted(XID_CATALOG) + [None])
def test_every_entry_steps_perform_its_rung_and_read_in_korean(code):
    e = XID_CATALOG[code] if code is not None else UNKNOWN_XID
    assert e["steps"] and all(s in STEPS for s in e["steps"]), e["steps"]
    assert rung_of_steps(e["steps"]) == e["rung"]
    for s in e["steps"]:
        en, ko = STEPS[s][1], STEPS[s][2]
        assert en.endswith(".") and _has_hangul(ko), s
    ko = action_text(e["steps"], "ko")
    assert _has_hangul(ko) and ko != action_text(e["steps"], "en")
    # the English action is the steps' sentence plus the verbatim note, nothing else
    assert e["action"] == action_text(e["steps"]) + (" " + e["note"] if e["note"] else "")
    if e["note"]:
        assert e["note"].endswith(".") and len(e["note"]) < 160


def test_key_entries_take_the_steps_an_engineer_expects():
    assert XID_CATALOG[48]["steps"] == ("drain_node", "reset_gpu", "rma_if_recurs")
    assert XID_CATALOG[79]["steps"] == ("drain_node", "reboot_node", "rma_if_recurs")
    for code in (13, 31, 43):
        assert rung_of_steps(XID_CATALOG[code]["steps"]) == "fix_application"
    for code in (39, 40, 41):   # RESTART_APP on a driver Xid: re-run, not fix the code
        assert XID_CATALOG[code]["steps"] == ("restart_job", "contact_support_if_recurs")
        assert XID_CATALOG[code]["rung"] == "none"
    assert "compute-sanitizer" in XID_CATALOG[13]["note"]
    assert all("144-150" in XID_CATALOG[c]["note"] for c in range(144, 151))


@pytest.mark.parametrize("msg,rung", [
    ("GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)", "gpu_reset"),
    ("GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)", "reboot"),
    ("GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)", "none"),
])
def test_xid154_message_picks_the_steps_of_its_rung(msg, rung):
    assert remedy(XID_CATALOG[154], msg) == (rung, RUNG_STEPS[rung], None)


def test_xid154_without_a_named_action_keeps_the_entry():
    e = XID_CATALOG[154]
    assert remedy(e, "something else") == (e["rung"], e["steps"], e["note"])
