"""One rule per decision, checked against the files (a second copy fails here, whatever it says):
``allow_reboot`` is read from the operator once, by the plan, and every later reader takes the
plan's policy; the "a reset cannot fix this" rule is defined once (reset_rule.py), and the plan
and the gpu_reset module reach it by import, never by a table of their own."""

import ast
import os
import re

REPO = os.path.join(os.path.dirname(__file__), "..", "..")
_JINJA = re.compile(r"\{\{(.*?)\}\}", re.S)


def _yaml_files(*tops):
    for top in tops:
        for root, _dirs, files in os.walk(os.path.join(REPO, top)):
            for f in files:
                if f.endswith((".yml", ".yaml")):
                    yield os.path.relpath(os.path.join(root, f), REPO), open(os.path.join(root, f)).read()


def test_allow_reboot_is_read_from_the_operator_once_and_from_the_plan_after():
    from_operator, from_plan = [], []
    for rel, text in _yaml_files("roles", "playbooks"):
        if "/molecule/" in rel:
            continue
        for expr in _JINJA.findall(text):
            if re.search(r"(?<![\w.])allow_reboot\b", expr):   # the bare extra var, not a knob or a key
                from_operator.append(rel)
            if "policy.allow_reboot" in expr:
                from_plan.append(rel)
    # the operator's -e allow_reboot (the AWX survey's variable) is read in one place: the plan's knob
    assert sorted(set(from_operator)) == ["roles/remediation_plan/defaults/main.yml"], from_operator
    # every later reader (verify, its reboot) takes the plan's policy
    assert sorted(set(from_plan)) == ["roles/rung_verify/defaults/main.yml"], from_plan
    # the retired name is only ever refused
    for rel, text in _yaml_files("roles", "playbooks"):
        for expr in _JINJA.findall(text):
            assert "gpu_runbook_allow_reboot" not in expr, rel


def _defs(path):
    tree = ast.parse(open(path).read())
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}


def test_the_reset_cannot_fix_rule_is_defined_once():
    defined = []
    for top in ("module_utils", "library", "plugins"):
        for root, _dirs, files in os.walk(os.path.join(REPO, top)):
            for f in files:
                if f.endswith(".py"):
                    path = os.path.join(root, f)
                    for name in ("reset_cannot_fix", "unfixable_by_reset", "escalation_rungs"):
                        if name in _defs(path):
                            defined.append((os.path.relpath(path, REPO), name))
    assert sorted(defined) == [("module_utils/gpu_runbook/reset_rule.py", "escalation_rungs"),
                               ("module_utils/gpu_runbook/reset_rule.py", "reset_cannot_fix"),
                               ("module_utils/gpu_runbook/reset_rule.py", "unfixable_by_reset")]
    # and no one keeps a list of "off the bus" kinds of its own beside it
    for top in ("module_utils/gpu_runbook/plan", "library"):
        for root, _dirs, files in os.walk(os.path.join(REPO, top)):
            for f in files:
                if f.endswith(".py"):
                    text = open(os.path.join(root, f)).read()
                    assert "_OFF_BUS" not in text and "_REMAP_FAIL_KINDS" not in text, f
