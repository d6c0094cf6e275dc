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
    # NVML 0x5-0x7 (nvidia-ml-py 13.615.71): IMEX domain, bus reset, system reboot -- by name and by code alone
    ("GPU recovery action changed from 0x0 (None) to 0x5 (Recover IMEX Domain)", "drain"),
    ("GPU recovery action changed from 0x0 (None) to 0x6 (Bus Reset Required)", "reboot"),
    ("GPU recovery action changed from 0x0 (None) to 0x7 (System Reboot Required)", "reboot"),
    ("GPU recovery action changed from 0x0 to 0x5", "drain"), ("GPU recovery action changed from 0x0 to 0x6", "reboot"),
    ("GPU recovery action changed from 0x0 to 0x7", "reboot"), ("GPU recovery action changed from 0x0 to 0x4", "gpu_reset"),
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


# -- every code of NVIDIA's catalog (vocab/xid.py, tests/tools/vocab/gen_xid.py) ---------------

from gpu_runbook.vocab import xid as xid_table  # noqa: E402
from gpu_runbook.xid_catalog import _BUCKETS_RE, _ROWS  # noqa: E402

CODES = {c[0]: dict(zip(("number", "name", "text", "kind", "category", "severity", "meaning"), c[:7]))
         for c in xid_table.CODES}
PREVIOUSLY_MISSING = [122, 123, 124, 125, 138, 139, 142] + list(range(162, 173))
# the hand-made triage (our _ROWS) when the catalog was completed from vocab/xid.py
HAND_CODES = [8, 11, 13, 25, 31, 32, 38, 39, 40, 41, 43, 44, 45, 46, 48, 54, 61, 62, 63, 64, 68, 69, 74, 79, 80,
              92, 93, 94, 95, 109, 110, 119, 120, 121, 136, 137, 140, 141, 143, 144, 145, 146, 147, 148, 149, 150,
              151, 154, 155, 156, 157, 158, 159, 160, 161, 167, 171, 172]


def _buckets(code):
    m = _BUCKETS_RE.match(CODES[code]["meaning"])
    return tuple(None if b == "-" else b for b in (m.group("imm"), m.group("inv")))


def test_the_catalog_table_is_nvidias_whole_catalog():
    assert sorted(CODES) == list(range(1, 173))
    assert all(_BUCKETS_RE.match(c["meaning"]) for c in CODES.values())


@pytest.mark.parametrize("code", sorted(CODES))
def test_every_catalog_code_has_an_entry(code):
    e = lookup(code)
    assert e is not None and e["xid"] == code
    assert e["category"] in CATEGORIES and e["category"] != "healthy"
    assert e["severity"] in SEVERITIES and e["severity"] != "ok"
    assert e["rung"] in RUNGS and e["steps"]
    if code not in _ROWS:  # derived: NVIDIA's words and buckets verbatim
        assert (e["mnemonic"], e["name"]) == (CODES[code]["name"], CODES[code]["text"])
        assert (e["nvidia_action"], e["investigate"]) == _buckets(code)
        assert "has no rule here" not in e["why"], e["why"]


@pytest.mark.parametrize("code", PREVIOUSLY_MISSING)
def test_previously_missing_codes_carry_nvidias_bucket(code):
    e = lookup(code)
    assert e is not None
    imm, inv = _buckets(code)
    assert e["nvidia_action"] == imm and e["investigate"] == inv
    if imm is None:  # 162-172: no bucket in the catalog snapshot, and the entry says so
        assert code in _ROWS or e["why"].startswith("No bucket in the catalog snapshot")


def test_known_buckets_of_the_previously_missing_codes():
    assert [lookup(c)["nvidia_action"] for c in (122, 123, 124, 125, 138)] == ["CONTACT_SUPPORT"] * 5
    assert (lookup(139)["nvidia_action"], lookup(139)["investigate"]) == ("RESTART_APP", "CONTACT_SUPPORT")
    assert lookup(142)["nvidia_action"] == "CONTACT_SUPPORT"
    assert all(lookup(c)["nvidia_action"] is None for c in range(162, 173))


def test_hand_rows_are_unchanged():
    assert sorted(_ROWS) == HAND_CODES
    fields = ("mnemonic", "name", "category", "nvidia_action", "investigate", "rung", "severity", "steps", "note",
              "why")
    for code, row in _ROWS.items():
        e = XID_CATALOG[code]
        assert tuple(e[f] for f in fields[:len(row)]) == tuple(row), code


@pytest.mark.parametrize("code", sorted(CODES))
def test_the_table_and_the_engine_file_every_code_alike(code):
    """The vocabulary's row of a code and the engine's entry agree (the engine reads an Xid line
    by its number; the table's row is what the coverage compares it with)."""
    c, e = CODES[code], XID_CATALOG[code]
    if c["kind"] == "benign":
        assert (e["category"], e["severity"], e["rung"]) == ("unknown", "info", "none")
    else:
        assert c["kind"] == "xid" and (c["category"], c["severity"]) == (e["category"], e["severity"])


def test_no_derived_entry_asks_for_an_rma():
    """An RMA needs hardware evidence: a bucket (CONTACT_SUPPORT) alone never sends a GPU back."""
    for code, e in XID_CATALOG.items():
        if code not in _ROWS:
            assert e["rung"] != "rma", code
            if e["nvidia_action"] == "CONTACT_SUPPORT":
                assert e["why"], code


def test_unused_codes_read_like_an_unknown_xid():
    for code in (1, 58, 122, 125, 138):
        e = lookup(code)
        assert e["name"] == "Unused" and e["category"] == "unknown" and e["rung"] == "none"
        assert e["steps"][:2] == UNKNOWN_XID["steps"] and "contact_support_if_recurs" in e["steps"]


def test_the_table_is_imported_statically():
    """Ansible ships only the modules a module_utils file imports statically."""
    tree = ast.parse((PKG / "xid_catalog.py").read_text())
    assert any(isinstance(n, ast.ImportFrom) and n.level == 1 and n.module == "vocab"
               and any(a.name == "xid" for a in n.names) for n in tree.body)
