"""One rule for "a GPU reset cannot fix this" (gpu_runbook/reset_rule.py), read by the plan and
by library/gpu_reset.py: over every finding kind of the taxonomy and every code of NVIDIA's
Xid catalog, the plan shows ``nvidia-smi -r`` for a GPU exactly when the module's rule would
let the kinds the plan hands it through, and names the rung the module escalates to."""

import os
import re

import pytest

from gpu_runbook import reset_rule
from gpu_runbook.cluster import build_cluster
from gpu_runbook.findings import finding, gpu_ref
from gpu_runbook.plan import make_plan
from gpu_runbook.taxonomy import KINDS
from gpu_runbook.xid_catalog import XID_CATALOG

PCI = "0000:3b:00.0"
WIDE = {"max_drain": 8, "max_drain_percent": 100, "allow_reboot": True}


def _plan_for(f, pci=PCI):
    """A host whose one finding asks for a reset of GPU ``pci``, plus ``f`` (on the same GPU)."""
    ask = finding("xid", "Xid 48 (Double Bit ECC Error) on GPU %s" % pci, xid=48, rung="gpu_reset",
                  gpu=gpu_ref(pci), source="kern.log:1", evidence="NVRM: Xid (PCI:%s): 48" % pci)
    results = {"a": {"ansible_facts": {"gpu_health": {"findings": [ask, f], "facts": {}, "probes": {}}}},
               "b": {"ansible_facts": {"gpu_health": {"findings": [], "facts": {}, "probes": {}}}}}
    analysis = build_cluster(results, generated="2026-12-02T07:30:00+00:00")
    plan = make_plan(analysis, WIDE, {"a": {"compute_apps": []}})
    assert not plan.get("error"), plan.get("error")
    return next(h for h in plan["hosts"] if h["host"] == "a")


def _reset(h):
    return next((r for r in h["rungs"] if r["rung"] == "gpu_reset"), None)


def _fault(kind, xid=None):
    info = KINDS[kind]
    rung = info["rung"] or "gpu_reset"
    return finding(kind, "%s on GPU %s" % (kind, PCI), xid=xid, rung=rung if xid is None else None,
                   gpu=gpu_ref(PCI), source="kern.log:2", evidence=kind, severity="critical")


def _cases():
    kinds = [("kind", k) for k in sorted(KINDS) if KINDS[k]["rung"] is not None]
    xids = [("xid", c) for c in sorted(XID_CATALOG)]
    return kinds + xids


@pytest.mark.parametrize("what,value", _cases(), ids=lambda v: str(v))
def test_the_plan_shows_a_reset_exactly_when_the_module_would_run_it(what, value):
    if what == "kind":
        try:
            f = _fault(value)
        except (ValueError, KeyError) as e:  # a kind that needs fields this GPU finding lacks
            pytest.skip("kind %s is not a GPU finding: %s" % (value, e))
    else:
        e = XID_CATALOG[value]
        f = finding("xid", "Xid %d on GPU %s" % (value, PCI), xid=value, gpu=gpu_ref(PCI), source="kern.log:2",
                    evidence="NVRM: Xid (PCI:%s): %d" % (PCI, value), rung=e["rung"], steps=e["steps"],
                    category=e["category"])
    h = _plan_for(f)
    reset = _reset(h)
    if reset is None:                # the finding does not reach a reset (host rung below it)
        return
    handed = next((g["kinds"] for g in reset["target"]["gpus"] if g["pci"] == PCI), [])
    verdict = reset_rule.reset_cannot_fix(handed)
    planned = ["nvidia-smi", "-r", "-i", PCI] in reset["commands"]
    # never a reset the module refuses; the plan may be stricter where a finding's own rung
    # (decided by its message) is above a reset
    own_high = f.get("rung") in reset_rule.escalation_rungs()
    assert planned == (not verdict["escalate"] and not verdict["unknown"] and not own_high), (handed, verdict, reset)
    if verdict["escalate"]:
        assert any(verdict["escalate"] in b and PCI in b for b in reset["blockers"]), reset["blockers"]
        assert verdict["escalate"] in [r["rung"] for r in h["rungs"]]


def test_the_module_and_the_plan_read_the_same_rule():
    # not two copies that happen to agree today: both import the rule's own function
    here = os.path.dirname(os.path.abspath(__file__))
    for rel in ("library/gpu_reset.py", "module_utils/gpu_runbook/plan/__init__.py"):
        text = open(os.path.join(here, "..", "..", rel)).read()
        assert re.search(r"(?m)^from (ansible\.module_utils\.gpu_runbook|\.\.)\.?reset_rule import .*"
                         r"(reset_cannot_fix|unfixable_by_reset)", text), rel


@pytest.mark.parametrize("kinds,escalate", [
    (["xid:61"], "rma"), (["xid:151"], "reboot"), (["xid:79"], "reboot"), (["xid:157"], "rma"), (["row_remap_failure"], "rma"),
    (["gpu_fallen_off_bus", "row_remap_failure"], "rma"), (["xid:48", "row_remap_pending"], None),
    (["xid"], None)])
def test_which_faults_a_reset_cannot_fix(kinds, escalate):
    assert reset_rule.reset_cannot_fix(kinds)["escalate"] == escalate


def test_a_fault_nobody_declared_gets_no_reset_in_the_plan_either():
    out = reset_rule.unfixable_by_reset([{"kind": "xid", "xid": 9999, "gpu": {"pci": PCI}}])
    assert out[PCI][1] is None and "Xid 9999" in out[PCI][0] and "declared nowhere" in out[PCI][0]


def test_a_finding_whose_own_rung_is_above_a_reset_gets_none_though_its_kind_alone_would():
    # Xid 154 whose message says "Node Reboot Required": the finding's rung is reboot
    f = {"kind": "xid", "xid": 154, "rung": "reboot", "gpu": {"pci": PCI}}
    assert reset_rule.unfixable_by_reset([f])[PCI][1] == "reboot"


def test_findings_without_a_gpu_and_garbage_are_kept_apart():
    out = reset_rule.unfixable_by_reset(["junk", {"kind": "gpu_fallen_off_bus"},
                                         {"kind": "row_remap_pending", "gpu": {"pci": PCI}}])
    assert list(out) == [None] and out[None][1] == "reboot"
