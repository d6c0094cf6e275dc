"""One taxonomy: every kind the code can emit is declared once, in both languages, with a
rung that its own action performs; English and Korean give the same advice."""

import ast
import os
import re
import string

import pytest

from gpu_runbook import taxonomy as T
from gpu_runbook.findings import finding
from gpu_runbook.i18n import finding_message
from gpu_runbook.xid_catalog import XID_CATALOG

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
ENGINE = os.path.join(ROOT, "module_utils", "gpu_runbook")
HANGUL = re.compile("[\uac00-\ud7a3]")
TICKS = re.compile(r"`[^`]+`")
# commands only a rung's own step may prescribe
RUNG_COMMANDS = {"reset_gpu": "--gpu-reset", "restart_openibd": "restart openibd"}


def _engine_sources():
    for root, _dirs, files in os.walk(ENGINE):
        if os.path.basename(root) == "taxonomy":
            continue
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(root, name)) as fh:
                    yield os.path.relpath(os.path.join(root, name), ROOT), fh.read()
    for name in os.listdir(os.path.join(ROOT, "library")):
        if name.endswith(".py"):
            with open(os.path.join(ROOT, "library", name)) as fh:
                yield "library/" + name, fh.read()


def _fields(template):
    return {f for _, f, _, _ in string.Formatter().parse(template) if f}


@pytest.mark.parametrize("name", sorted(T.KINDS))
def test_every_kind_speaks_both_languages(name):
    k = T.KINDS[name]
    assert k["en"].strip() and k["ko"].strip()
    assert HANGUL.search(k["ko"]), "%s: the Korean meaning is not Korean" % name
    assert _fields(k["en"]) == _fields(k["ko"]), "%s: the languages use different facts" % name
    assert _fields(k["en"]) <= {"gpu", "ib", "xid", "rank", "name"}


@pytest.mark.parametrize("name", sorted(T.KINDS))
def test_every_kinds_rung_is_what_its_action_does(name):
    k = T.KINDS[name]
    if k["rung"] is None:
        assert k["steps"] is None  # decided per finding: tested on the Xid catalog and the culprit
        return
    assert T.rung_of_steps(k["steps"]) == k["rung"]
    for step in k["steps"]:
        rung, en, _ko = T.STEPS[step]
        for own, command in RUNG_COMMANDS.items():
            if step != own:
                assert command not in en, "%s: step %s prescribes %r outside its rung" % (name, step, command)
    # a critical hardware finding always takes the node out of service
    if k["severity"] == "critical" and k["category"] in ("gpu_hardware", "driver", "ib_network"):
        assert k["rung"] != "none", "%s is critical hardware with no rung" % name


@pytest.mark.parametrize("step", sorted(T.STEPS))
def test_every_step_says_the_same_in_both_languages(step):
    rung, en, ko = T.STEPS[step]
    assert rung is None or rung in T.RUNGS
    assert en.strip() and HANGUL.search(ko), step
    # commands and identifiers are the same words in both languages
    assert sorted(TICKS.findall(en)) == sorted(TICKS.findall(ko)), step


def test_rung_table_is_complete():
    assert list(T.RUNG_TABLE) == list(T.RUNGS)
    for rung, row in T.RUNG_TABLE.items():
        assert row["scope"] in ("-", "gpu", "host", "job")
        assert isinstance(row["disruptive"], bool)
        assert row["label"]["en"] and HANGUL.search(row["label"]["ko"])
        assert T.rung_of_steps(T.RUNG_STEPS[rung]) == rung
    # disruptive rungs are the ones that stop work on a node
    assert {r for r, row in T.RUNG_TABLE.items() if row["disruptive"]} == {"gpu_reset", "ib_restart", "reboot", "rma"}


@pytest.mark.parametrize("code", sorted(XID_CATALOG))
def test_every_xid_entrys_steps_perform_its_rung(code):
    e = XID_CATALOG[code]
    steps = e.get("steps") or T.RUNG_STEPS[e["rung"]]
    assert T.rung_of_steps(steps) == e["rung"], "Xid %d" % code
    f = finding("xid", "Xid %d" % code, xid=code, rung=e["rung"], steps=steps, note=e.get("note"),
                category=e["category"], severity=e["severity"])
    en, ko = f["action"], finding_message(f, "ko")[1]
    assert sorted(TICKS.findall(en)) == sorted(TICKS.findall(ko))
    assert HANGUL.search(ko)


def test_korean_and_english_give_the_same_action_for_every_kind():
    for name, k in T.KINDS.items():
        steps = k["steps"] if k["rung"] is not None else T.RUNG_STEPS["drain"]
        f = finding(name, "seen", rung=None if k["rung"] is not None else "drain",
                    steps=None if k["rung"] is not None else steps)
        ko_msg, ko_act = finding_message(f, "ko")
        assert f["action"] == T.action_text(steps, "en")
        assert ko_act == T.action_text(steps, "ko")
        assert len(f["steps"]) == len(steps) and ko_msg


def test_contradictions_fail_loudly():
    with pytest.raises(ValueError):
        finding("no_such_kind", "m")
    with pytest.raises(ValueError):
        finding("host_unreachable", "m", rung="gpu_reset")  # its rung is fixed
    with pytest.raises(ValueError):
        finding("host_unreachable", "m", category="gpu_hardware")  # not one of its categories
    with pytest.raises(ValueError):
        finding("job_culprit", "m", rung="gpu_reset", steps=("drain_node",))  # steps do not reset


def _emitted_kinds():
    """Kind names the code passes to finding(...) as a literal (first argument or kind=)."""
    kinds, dynamic = set(), []
    for rel, text in _engine_sources():
        for node in ast.walk(ast.parse(text)):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "finding"):
                continue
            arg = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "kind"), None)
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                kinds.add(arg.value)
            else:
                dynamic.append("%s:%d" % (rel, node.lineno))
    return kinds, dynamic


def test_every_literal_kind_in_the_code_is_declared():
    kinds, _dynamic = _emitted_kinds()
    assert kinds, "no finding(...) call found: the scan is broken"
    assert sorted(kinds - set(T.KINDS)) == []


def test_every_declared_kind_is_emitted_somewhere():
    """No label for a kind nobody emits: each declared name appears in the code as a string."""
    text = "\n".join(t for _rel, t in _engine_sources())
    unused = sorted(k for k in T.KINDS if '"%s"' % k not in text and "'%s'" % k not in text)
    assert unused == []


def test_nobody_builds_findings_the_old_way():
    old = [rel for rel, text in _engine_sources() if re.search(r"\bmake_finding\(", text)]
    assert old == []


def test_the_kinds_that_mark_unusable_evidence_exist():
    from gpu_runbook.analyze import _UNUSABLE_KINDS
    assert sorted(set(_UNUSABLE_KINDS) - set(T.KINDS)) == []


def test_a_reader_s_words_about_its_input_carry_the_readers_name():
    # 'unparseable' alone said nothing of whose input it was (the IB parsers'); each reader prefixes its own
    from gpu_runbook.taxonomy import KINDS
    bare = [k for k in KINDS if k in ("unparseable", "empty", "parse_error", "unreadable")]
    assert bare == []
    for k in KINDS:
        if k.endswith(("_unparseable", "_empty")):
            assert k.split("_")[0] in ("nvsmi", "kernlog", "ib", "dcgm", "joblog", "slurm", "perftest"), k
