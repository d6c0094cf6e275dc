"""Report wording in English and Korean. JSON keys and enum values stay English; only the
human text changes. Labels, meanings and actions come from the taxonomy, so both languages
always name the same rung and give the same steps; this module only renders them."""

from .taxonomy import CATEGORY_LABEL, KINDS, RUNG_TABLE, SEVERITY_LABEL, action_text

LANGS = ("en", "ko")

VERDICT_LABEL = CATEGORY_LABEL
RUNG_LABEL = {lang: {r: row["label"][lang] for r, row in RUNG_TABLE.items()} for lang in LANGS}

TEXT = {
    "en": {
        "summary": "{n} host(s): {crit} critical, {warn} warning, {ok} healthy",
        "next": "next",
        "evidence": "evidence",
        "action": "action",
        "healthy_hosts": "healthy ({n}): {hosts}",
        "no_findings": "no findings",
        "job": "job",
        "how_sure": "how sure",
    },
    "ko": {
        "summary": "호스트 {n}대: 심각 {crit}, 경고 {warn}, 정상 {ok}",
        "next": "다음 단계",
        "evidence": "근거",
        "action": "조치",
        "healthy_hosts": "정상 ({n}대): {hosts}",
        "no_findings": "발견 사항 없음",
        "job": "작업",
        "how_sure": "확신도",
    },
}


CONFIDENCE_LABEL = {"en": {"high": "high", "medium": "medium", "low": "low"},
                    "ko": {"high": "높음", "medium": "중간", "low": "낮음"}}


def how_sure(result, lang="en"):
    """'high: <reason>' of a host or job result in ``lang`` ('' when it has no confidence)."""
    if not isinstance(result, dict) or not result.get("confidence"):
        return ""
    from .confidence import reason_text
    why = reason_text(result, lang)
    return "%s%s" % (label(CONFIDENCE_LABEL, lang, result["confidence"]), ": " + why if why else "")


def label(table, lang, key):
    return table.get(lang, table["en"]).get(key, key)


def text(lang, key, **kw):
    return TEXT.get(lang, TEXT["en"]).get(key, TEXT["en"][key]).format(**kw)


class _Fields(dict):
    def __missing__(self, key):  # a template field the finding lacks reads as '?'
        return "?"


def _fields(f):
    gpu = f.get("gpu") or {}
    ib = f.get("ib") or {}
    out = _Fields(xid=f.get("xid"), rank=f.get("rank"), name=f.get("name") or "",
                  gpu=gpu.get("pci") or gpu.get("index") if gpu else "?",
                  ib="%s/%s" % (ib.get("device"), ib.get("port")) if ib else "?")
    return _Fields((k, "?" if v is None else v) for k, v in out.items())


def finding_message(f, lang):
    """(message, action) of a finding in ``lang``. English: the finding's own sentence (what
    was seen) and action. Other languages: the kind's meaning in that language, and the
    action rendered from the same steps (plus the finding's verbatim note)."""
    if lang == "en" or f.get("kind") not in KINDS or not f.get("steps"):
        return f.get("message", ""), f.get("action", "")
    meaning = KINDS[f["kind"]].get(lang) or f.get("message", "")
    try:
        msg = meaning.format_map(_fields(f))
    except (ValueError, IndexError):  # a template typo must not take a report down
        msg = meaning
    act = action_text(f["steps"], lang)
    if f.get("note"):
        act += " " + f["note"]
    return msg, act
