import ast
import copy
import pathlib
import sys

import pytest

from gpu_runbook import xid_catalog
from gpu_runbook.findings import CATEGORIES, RUNGS, SEVERITIES
from gpu_runbook.xid_catalog import XID_CATALOG, lookup, rung_for_xid154

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


@pytest.mark.parametrize("name", ["xid_catalog.py", "kernlog.py"])
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
