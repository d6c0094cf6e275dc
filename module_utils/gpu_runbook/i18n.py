# SPDX-License-Identifier: Apache-2.0
"""Report wording in English and Korean. JSON keys and enum values stay English; only the
human text changes. Labels, meanings and actions come from the taxonomy, so both languages
always name the same rung and give the same steps; this module only renders them."""

import re
import unicodedata

from .korean import after, render
from .taxonomy import CATEGORY_LABEL, KINDS, RUNG_TABLE, SEVERITY_LABEL, action_text
from .timeutil import span_text

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
        "cluster": "cluster",
        "report": "report",
        "suspects": "suspects ({n}):",
        "stopped_at": "stopped at epoch {epoch}{pct}",
        "in_collective": "in {op} SeqNum {seq}",
        "ranks_waited": "{waited} of {world} ranks waited; {missing} did not",
        "ranks_timed_out": "{n} ranks timed out",
        "rank_timed_out": "1 rank timed out",
        "rank": "rank {rank}",
        "ranks": "ranks {ranks}",
        "more_ranks": "{shown} and {more} more",
        "culprit": "culprit",
        "why": "why",
        "no_explanation": "no finding on this host explains it",
        "not_checked": "host not checked (no evidence of it: not in the inventory, outside --limit, or no capture "
                       "of it given)",
        "not_checked_offline": "no captures given for this host (give its directory, or its files with --host)",
        "tag_culprit": "culprit's host (rank {ranks})",
        "tag_named": "named in the job's logs",
        "tag_not_in_job": "not in job",
        "tag_before_job": "fault before the job",
        "tag_not_culprit": "not the culprit",
        "faults_new": "new since the last run: {n} fault(s): {faults}",
        "faults_known": "reported before, not new: {n} fault(s) ({acked} acknowledged); cleared since: {cleared}",
        "faults_unread": "known faults not read ({why}): every fault is reported as new",
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
        "cluster": "클러스터",
        "report": "보고서",
        "suspects": "의심 호스트 ({n}대):",
        "stopped_at": "에폭 {epoch}{pct}에서 멈춤",
        "in_collective": "({op} SeqNum {seq} 도중)",
        "ranks_waited": "랭크 {world}개 중 {waited}개가 기다림 ({missing} 제외)",
        "ranks_timed_out": "랭크 {n}개가 타임아웃됨",
        "rank_timed_out": "랭크 1개가 타임아웃됨",
        "rank": "랭크 {rank}",
        "ranks": "랭크 {ranks}",
        "more_ranks": "{shown} 외 {more}개",
        "culprit": "원인",
        "why": "이유",
        "no_explanation": "이 호스트의 어떤 발견도 이를 설명하지 못함",
        "not_checked": "호스트를 점검하지 못함 (근거 없음: 인벤토리에 없거나 --limit 밖이거나 캡처가 주어지지 않음)",
        "not_checked_offline": "이 호스트의 캡처가 주어지지 않음 (호스트 디렉터리를 주거나 --host로 파일을 지정)",
        "tag_culprit": "원인 랭크의 호스트 (랭크 {ranks})",
        "tag_named": "작업 로그에 언급됨",
        "tag_not_in_job": "작업 외 호스트",
        "tag_before_job": "작업 시작 전 장애",
        "tag_not_culprit": "원인 호스트 아님",
        "faults_new": "지난 실행 이후 새 장애 {n}건: {faults}",
        "faults_known": "이미 보고된 장애 {n}건 (확인됨 {acked}건); 그 후 해소됨: {cleared}건",
        "faults_unread": "알려진 장애 기록을 읽지 못함 ({why}): 모든 장애를 새 장애로 보고함",
    },
}


CONFIDENCE_LABEL = {"en": {"high": "high", "medium": "medium", "low": "low"},
                    "ko": {"high": "높음", "medium": "중간", "low": "낮음"}}

# Advice a finding carries verbatim (``note``: NVIDIA's words for an Xid, the host to drain),
# in Korean. Notes that are only a command or setting (`NCCL_IB_HCA=^mlx5_1`) need none.
NOTE_KO = {
    "Find the faulting kernel with compute-sanitizer (`compute-sanitizer --tool memcheck`).":
        "compute-sanitizer로 오류를 낸 커널을 찾으십시오 (`compute-sanitizer --tool memcheck`).",
    "RMA the GPU when its SRAM errors reach NVIDIA's RMA threshold (GPU Memory Error Management guide).":
        "SRAM 오류가 NVIDIA의 RMA 임계치에 도달하면 GPU를 교체(RMA)하십시오 (GPU Memory Error Management 가이드).",
    "Tell fatal from non-fatal by decoding intrinfo/errorstatus with NVIDIA's Xid 144-150 table.":
        "NVIDIA의 Xid 144-150 표로 intrinfo/errorstatus를 해석해 fatal과 non-fatal을 구분하십시오.",
}
# notes made of a fixed English head and the subject (the hosts to drain): (pattern, Korean)
NOTE_KO_PATTERNS = (
    (re.compile(r"^Culprit host\(s\): (?P<subject>.+?)\.?$"), "원인 호스트: {subject}."),
)


def note_text(note, lang="en"):
    """A finding's note in ``lang``; a note with no rendering stays as it is (a command)."""
    if not note or lang == "en":
        return note or ""
    if note in NOTE_KO:
        return NOTE_KO[note]
    for pattern, ko in NOTE_KO_PATTERNS:
        m = pattern.match(note)
        if m:
            return render(ko, m.groupdict())
    return note


def how_sure(result, lang="en"):
    """'high: <reason>' of a host or job result in ``lang`` ('' when it has no confidence)."""
    if not isinstance(result, dict) or not result.get("confidence"):
        return ""
    from .confidence import reason_text
    why = reason_text(result, lang)
    return "%s%s" % (label(CONFIDENCE_LABEL, lang, result["confidence"]), ": " + why if why else "")


def label(table, lang, key):
    return table.get(lang, table["en"]).get(key, "-" if key is None else key)


def text(lang, key, **kw):
    return render(TEXT.get(lang, TEXT["en"]).get(key, TEXT["en"][key]), kw)


class _Fields(dict):
    def __missing__(self, key):  # a template field the finding lacks reads as '?'
        return "?"


def xid_label(xid):
    """'Xid 79 (GPU has fallen off the bus)': NVIDIA's name for the code stays in every
    language, so the reader can look it up; just 'Xid 79' for a code the catalog lacks."""
    from .xid_catalog import lookup
    entry = lookup(xid)
    return "Xid %s (%s)" % (xid, entry["name"]) if entry and entry.get("name") else "Xid %s" % xid


def _fields(f, lang="en"):
    gpu = f.get("gpu") or {}
    ib = f.get("ib") or {}
    port = ib.get("port")
    xid = f.get("xid")
    if xid is not None and lang != "en":
        xid = xid_label(xid)[len("Xid "):]  # 'Xid {xid}' in a meaning reads 'Xid 79 (name)'
    out = _Fields(xid=xid, rank=f.get("rank"), name=f.get("name") or "",
                  gpu=(gpu.get("pci") or gpu.get("index")) if gpu else "?",
                  ib=("%s/%s" % (ib.get("device"), port) if port is not None else ib.get("device")) if ib else "?")
    return _Fields((k, "?" if v is None else v) for k, v in out.items())


def numbers_text(f, lang="en"):
    """How often and when (timeutil.span_text) and the counters a finding judged, in ``lang``:
    '3x between 07:09:51 and 07:12:03 UTC', 'symbol_error=4321'. '' when it has none."""
    parts = []
    span = span_text(f.get("count"), f.get("first"), f.get("last"), lang) if f.get("count") is not None else ""
    if span:
        parts.append(span)
    counters = f.get("counters")
    if isinstance(counters, dict) and counters:
        parts.append(", ".join("%s=%s" % (k, v) for k, v in sorted(counters.items())))
    return "; ".join(parts)


def _culprit_clause_ko(f):
    """What explains a job culprit rank, in Korean (the English message says it in full)."""
    if f.get("xid") is not None:
        return "이 호스트의 %s 이를 설명함" % after(xid_label(f["xid"]), "이(가)")
    if f.get("category") in (None, "nccl_deadlock"):
        return TEXT["ko"]["no_explanation"]
    return "이 호스트의 %s 발견이 이를 설명함" % label(CATEGORY_LABEL, "ko", f["category"])


def finding_message(f, lang):
    """(message, action) of a finding in ``lang``. English: the finding's own sentence (what
    was seen) and action. Other languages: the kind's meaning in that language with the
    finding's numbers, and the action rendered from the same steps (plus its note)."""
    if lang == "en" or f.get("kind") not in KINDS or not f.get("steps"):
        return f.get("message", ""), f.get("action", "")
    meaning = KINDS[f["kind"]].get(lang) or f.get("message", "")
    try:
        msg = render(meaning, _fields(f, lang))
    except (ValueError, IndexError):  # a template typo must not take a report down
        msg = meaning
    if f["kind"] == "job_culprit" and lang == "ko":
        msg += "; " + _culprit_clause_ko(f)
    numbers = numbers_text(f, lang)
    if numbers:
        msg += " (%s)" % numbers
    try:
        act = action_text(f["steps"], lang)
    except KeyError:  # a step this engine does not know (a newer report): its English action
        act = f.get("action", "")
    if f.get("note"):
        act += " " + note_text(f["note"], lang)
    return msg, act


# ---------------------------------------------------------------- layout by display width
def display_width(s):
    """Columns ``s`` takes on a terminal: East Asian wide and full-width characters take two."""
    return sum(2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in str(s))


def pad(s, width):
    """``s`` padded with spaces to ``width`` display columns (never cut)."""
    s = str(s)
    return s + " " * max(0, width - display_width(s))


def wrap(s, width=100, indent="", hang=None):
    """``s`` as lines of at most ``width`` display columns, broken only between words (a word
    longer than the line keeps its own line, whole): the first line starts with ``indent``,
    the next ones with ``hang`` (default: ``indent``). Nothing is ever cut."""
    hang = indent if hang is None else hang
    lines, cur, lead = [], "", indent
    for word in str(s).split():
        if cur and display_width(lead + cur + " " + word) > width:
            lines.append(lead + cur)
            cur, lead = word, hang
        else:
            cur = cur + " " + word if cur else word
    if cur or not lines:
        lines.append(lead + cur)
    return lines
