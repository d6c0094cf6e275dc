"""Korean gives the same facts and the same advice as English: every kind, step, rung, label,
console word, confidence reason and note has a Korean rendering that is Korean (not English
words left behind), and NVIDIA's Xid names stay visible in it."""

import re
import string

import pytest

from gpu_runbook import taxonomy as T
from gpu_runbook.confidence import RULES, WEAK_KINDS, reason_text
from gpu_runbook.findings import finding
from gpu_runbook.i18n import (CONFIDENCE_LABEL, NOTE_KO, TEXT, finding_message, note_text, text, xid_label)
from gpu_runbook.xid_catalog import XID_CATALOG

HANGUL = re.compile("[\uac00-\ud7a3]")
# what may stay English inside Korean text: commands and identifiers in backticks, a tool's own
# words in quotes, names in parentheses ("Xid 79 (GPU has fallen off the bus)")
KEPT = re.compile(r"`[^`]*`|'[^']*'|\([^()]*\)")
# four English words in a row outside those: an English phrase left in a Korean sentence
ENGLISH_RUN = re.compile(r"[A-Za-z][A-Za-z'-]*(?:[ ,/][ ]?[A-Za-z][A-Za-z'-]*){3,}")
# labels that are the same word in both languages (a class name)
SAME_WORD = {"DataLoader"}


def english_left(ko):
    """English phrases a Korean text keeps outside what may stay English."""
    prev = None
    while prev != ko:  # nested parentheses: strip the inner ones first
        prev, ko = ko, KEPT.sub(" ", ko)
    return ENGLISH_RUN.findall(ko)


def _fields(template):
    return {f for _, f, _, _ in string.Formatter().parse(template) if f}


def assert_korean(en, ko, what):
    assert ko and ko.strip(), "%s: no Korean text" % what
    if en in SAME_WORD:
        return
    assert HANGUL.search(ko), "%s: not Korean: %r" % (what, ko)
    assert ko != en, "%s: the Korean text is the English one" % what
    assert not english_left(ko), "%s: English left in Korean: %r" % (what, english_left(ko))


def test_the_english_detector_catches_a_leak_and_spares_names():
    assert english_left("노드를 drain 하십시오. Reboot the node now.")
    assert not english_left("GPU 0000:75:00.0에서 Xid 79 (GPU has fallen off the bus) 발생")
    assert not english_left("`nvidia-smi -q -d PERFORMANCE`를 다시 확인하십시오.")


@pytest.mark.parametrize("name", sorted(T.KINDS))
def test_every_kind_has_a_korean_meaning(name):
    k = T.KINDS[name]
    assert_korean(k["en"], k["ko"], "kind %s" % name)
    assert _fields(k["ko"]) == _fields(k["en"])


@pytest.mark.parametrize("step", sorted(T.STEPS))
def test_every_step_has_a_korean_rendering(step):
    _rung, en, ko = T.STEPS[step]
    assert_korean(en, ko, "step %s" % step)


@pytest.mark.parametrize("rung", sorted(T.RUNG_TABLE))
def test_every_rung_has_a_korean_label(rung):
    assert_korean(T.rung_label(rung, "en"), T.rung_label(rung, "ko"), "rung %s" % rung)


def test_every_label_has_a_korean_rendering():
    for table, name in ((T.CATEGORY_LABEL, "category"), (T.SEVERITY_LABEL, "severity"), (CONFIDENCE_LABEL, "confidence")):
        assert set(table["ko"]) == set(table["en"]), name
        for key, en in table["en"].items():
            assert_korean(en, table["ko"][key], "%s %s" % (name, key))


def test_every_console_word_has_a_korean_rendering():
    assert set(TEXT["ko"]) == set(TEXT["en"])
    for key, en in TEXT["en"].items():
        assert _fields(TEXT["ko"][key]) == _fields(en), key
        assert_korean(en, TEXT["ko"][key], "console word %s" % key)


@pytest.mark.parametrize("rule", sorted(RULES))
def test_every_confidence_reason_has_a_korean_rendering(rule):
    _level, en, ko = RULES[rule]
    assert_korean(en, ko, "confidence rule %s" % rule)
    # the Korean reason states the same facts (its own wording of a phrase aside)
    assert {f.replace("_ko", "") for f in _fields(ko)} == _fields(en)
    for why, why_ko in WEAK_KINDS.values():
        assert_korean(why, why_ko, "weak kind reason")


def test_a_job_reason_names_its_rank_in_korean():
    from gpu_runbook.confidence import job_confidence
    f = finding("nccl_watchdog_timeout", "31 rank(s) timed out", rank=11, steps=None)
    job = {"verdict": f["category"], "findings": [f], "culprits": []}
    result = job_confidence(job)
    assert "on rank 11" in result["confidence_reason"]
    ko = reason_text(result, "ko")
    assert "랭크 11" in ko and " on rank" not in ko and not english_left(ko)


@pytest.mark.parametrize("code", sorted(XID_CATALOG))
def test_every_xid_keeps_nvidias_name_and_reads_korean(code):
    e = XID_CATALOG[code]
    f = finding("xid", "Xid %d" % code, xid=code, rung=e["rung"], steps=e["steps"], note=e.get("note"),
                category=e["category"], severity=e["severity"], gpu={"pci": "0000:75:00.0", "index": None, "uuid": None})
    msg, act = finding_message(f, "ko")
    assert xid_label(code) in msg and e["name"] in msg
    assert HANGUL.search(msg) and HANGUL.search(act)
    assert not english_left(msg) and not english_left(act), (msg, act)


def test_every_note_has_a_korean_rendering():
    notes = {e["note"] for e in XID_CATALOG.values() if e.get("note")}
    assert notes <= set(NOTE_KO)
    for note in notes:
        assert_korean(note, note_text(note, "ko"), "note")
    # the job's note that names the host to drain: the host stays, the words are Korean
    ko = note_text("Culprit host(s): gpu-r3-n02, gpu-r3-n05.", "ko")
    assert "gpu-r3-n02, gpu-r3-n05" in ko and HANGUL.search(ko) and "Culprit" not in ko
    assert note_text("`NCCL_IB_HCA=^mlx5_4`", "ko") == "`NCCL_IB_HCA=^mlx5_4`"  # a setting stays as it is


def test_korean_finding_carries_the_numbers_and_a_whole_ib_name():
    f = finding("ib_link_flap", "HCA 0000:9c:00.0 link dropped 5 time(s)", count=5,
                first="2026-12-02T06:11:17+00:00", last="2026-12-02T06:40:02+00:00",
                ib={"device": "0000:9c:00.0", "port": None})
    msg, _act = finding_message(f, "ko")
    assert "5회" in msg and "06:11:17" in msg and "06:40:02" in msg
    assert "None" not in msg and "0000:9c:00.0" in msg
    f = finding("ib_symbol_errors", "mlx5_4/1: 4321 symbol errors", counters={"symbol_error": 4321},
                ib={"device": "mlx5_4", "port": 1})
    msg, _act = finding_message(f, "ko")
    assert "mlx5_4/1" in msg and "4321" in msg


def test_a_korean_job_culprit_says_what_explains_it():
    f = finding("job_culprit", "rank 11 ... explained by this host's Xid 79", rank=11, xid=79, rung="reboot",
                category="gpu_hardware", gpu={"pci": "0000:5d:00.0", "index": None, "uuid": None})
    msg, _act = finding_message(f, "ko")
    assert "랭크 11" in msg and xid_label(79) in msg and "설명" in msg
    lone = finding("job_culprit", "rank 11 ... no hardware finding on this host explains it", rank=11,
                   rung="drain", steps=("drain_node", "read_rank_log"))
    assert text("ko", "no_explanation") in finding_message(lone, "ko")[0]
