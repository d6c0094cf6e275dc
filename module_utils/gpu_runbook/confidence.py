# SPDX-License-Identifier: Apache-2.0
"""How sure: a confidence (high / medium / low) and its reason for every host and job verdict.

Pure functions of what the verdict was decided from, table-driven so every level can be
explained by the evidence that set it:

- high: a critical finding read from a primary hardware source (an Xid NVIDIA's catalog
  files under a category, nvidia-smi's ECC / row-remap counters, an IB port state or
  counter), or two independent sources that agree (the job's culprit rank runs on this
  host and this host's own finding explains it); healthy when every source was read and
  parsed and the GPUs were among them;
- medium: one source at warning level; a critical finding that is not a hardware reading
  (a probe that did not answer); a host only the job log names; a job cause read from the
  job log alone that no host evidence confirms;
- low: the category is unknown; a single odd reading; a job
  cause inferred from the run's shape (phase, iteration rate) rather than stated.

The remediation ladder acts only on high (plan/): anything less is put up for review.
Every result carries ``confidence_basis`` ({"rule", ...fields}) so a report can say the
same reason in another language (``reason_text``).
"""

from .korean import render
from .sources import FAMILY
from .taxonomy.kinds_job import CUDA_ERROR_KINDS
from .verdict import primary_finding, rank_key

HIGH, MEDIUM, LOW = "high", "medium", "low"
LEVELS = (LOW, MEDIUM, HIGH)

# rule: (level, English, Korean) -- the fields are filled from the evidence
RULES = {
    "healthy_all_read": (HIGH, "healthy: every source was read and parsed ({sources})",
                         "정상: 모든 소스를 읽고 해석함 ({sources})"),
    "healthy_no_gpu": (MEDIUM, "healthy on what was read ({sources}), but no nvidia-smi output showed the GPUs",
                       "읽은 소스({sources})로는 정상이지만 GPU를 보여준 nvidia-smi 출력이 없음"),
    "healthy_partial": (MEDIUM, "healthy on what was read, but {sources} could not be read or parsed",
                        "읽은 범위에서는 정상이지만 {sources}을(를) 읽거나 해석하지 못함"),
    "healthy_unrecorded": (MEDIUM, "healthy, but which sources were read is not recorded",
                           "정상이지만 어떤 소스를 읽었는지 기록되지 않음"),
    "no_evidence": (LOW, "no source gave usable evidence: {what}", "쓸 수 있는 근거가 없음: {what_ko}"),
    "unknown_category": (LOW, "the cause is not established: {what} ({source}) names no category",
                         "원인이 확인되지 않음: {what} ({source})는 범주를 특정하지 않음"),
    "weak": (LOW, "{why}: {what} ({source}), and nothing else confirms it",
             "{why_ko}: {what} ({source}), 이를 뒷받침하는 다른 근거 없음"),
    "agree": (HIGH, "two independent sources agree: {what} ({source}) and {what2} ({source2})",
              "서로 독립된 두 근거가 일치함: {what} ({source}), {what2} ({source2})"),
    "culprit_confirmed": (HIGH, "the job's culprit rank {rank} runs here and this host's {what} ({source}) explains it",
                          "작업의 원인 랭크 {rank}가 이 호스트에서 실행되었고 이 호스트의 {what} ({source})가 이를 설명함"),
    "culprit_only": (MEDIUM, "only the job log names this host (culprit rank {rank}); no host evidence confirms it",
                     "작업 로그만 이 호스트를 지목함 (원인 랭크 {rank}); 이를 확인하는 호스트 근거 없음"),
    "critical_primary": (HIGH, "critical {what} read from {source}, a primary hardware source",
                         "1차 하드웨어 소스 {source}에서 읽은 심각 {what}"),
    "critical_secondary": (MEDIUM, "critical {what} ({source}) is not a hardware reading, and nothing else confirms it",
                           "심각 {what} ({source})는 하드웨어 판독값이 아니며 이를 뒷받침하는 다른 근거 없음"),
    "warning_only": (MEDIUM, "one warning-level finding, no critical evidence: {what} ({source})",
                     "경고 수준 발견 하나뿐, 심각한 근거 없음: {what} ({source})"),
    # the job
    "job_no_failure": (LOW, "the job's logs show no failure and no cause", "작업 로그에 실패도 원인도 없음"),
    "job_unknown": (LOW, "the job's logs do not establish a cause", "작업 로그로는 원인이 확인되지 않음"),
    "job_host_agrees": (HIGH, "culprit rank {rank} runs on {host}, whose own {what} explains it: the job log and "
                              "the host agree",
                        "원인 랭크 {rank}가 실행된 {host}의 자체 근거 {what_ko}가 이를 설명함: 작업 로그와 호스트가 일치함"),
    "job_host_evidence": (HIGH, "the job log's {what} and host {host}'s {what2} agree",
                          "작업 로그의 {what_ko}와(과) 호스트 {host}의 {what2}가 일치함"),
    "job_log_only": (MEDIUM, "job-log evidence only: {what}; no host evidence confirms it",
                     "작업 로그 근거뿐: {what_ko}; 이를 확인하는 호스트 근거 없음"),
    "job_states_it": (HIGH, "the job's own log states it: {what}", "작업 자체 로그가 명시함: {what_ko}"),
    "job_when_it_failed": (MEDIUM, "inferred from when the job failed: {what}; no line states the cause",
                     "작업이 실패한 시점으로부터 추정함: {what_ko}; 원인을 명시한 줄은 없음"),
    "job_category_inferred": (MEDIUM, "the logs state {what}; its category is inferred from {why}",
                              "{what_ko}은(는) 명시됨; 범주는 {why_ko}에서 추정함"),
    "job_category_default": (LOW, "the logs state {what}, but nothing in them shows whether the code or memory that "
                                  "grows caused it (no phase, iteration rate or memory trend): the category is a default",
                             "{what_ko}은(는) 명시되었지만 코드 때문인지 늘어나는 메모리 때문인지 로그에 근거가 없음 "
                             "(단계, 반복 속도, 메모리 추세 없음): 범주는 기본값"),
    "job_warning": (MEDIUM, "one warning-level job finding: {what}", "경고 수준 작업 발견 하나: {what_ko}"),
    "job_ended_well": (HIGH, "the job's logs say it ended well ({who})", "작업 로그가 정상 종료를 밝힘 ({who})"),
    "job_exited": (MEDIUM, "its processes reached their exit with no error in the logs ({who}); no trainer said the "
                           "run ended well", "프로세스가 로그상 오류 없이 종료에 도달함 ({who}); 실행이 정상 종료되었다는 "
                                         "트레이너의 말은 없음"),
    "job_reached_last_step": (MEDIUM, "the run counted its steps to their total ({who}); its exit is not in the logs",
                              "실행 자체의 스텝 수가 총계에 도달함 ({who}); 종료는 로그에 없음"),
    "job_nccl_only": (MEDIUM, "NCCL's own lines (setup, tests) show nothing wrong; they do not say the run ended",
                      "NCCL 자체 출력(설정, 테스트)에 이상이 없음; 실행이 끝났다고 밝히지는 않음"),
    "job_inferred": (LOW, "inferred from {why}; no finding states the cause",
                     "{why_ko}에서 추정함; 원인을 명시한 발견 없음"),
}

# kinds whose evidence is weak on its own: (why, why in Korean) -> low unless confirmed. Not
# gpu_missing: a count below the one the operator configured is what Slurm itself sets a node
# INVAL for; a wrong expected count shows on every node and the correlated-failure rule holds it.
WEAK_KINDS = {
    "nvsmi_err_field": ("a single odd reading", "한 번의 이상 판독값"),
    "xid_unparsed": ("an Xid line that could not be read", "해석하지 못한 Xid 줄"),
}
# critical kinds that are an observation of a tool, not a hardware reading -> medium alone
SECONDARY_KINDS = ("nvidia_smi_hang", "ib_probe_hang", "straggler", "shared_rail_errors")
# source families that read the hardware's own state (sources.FAMILY)
PRIMARY_FAMILIES = ("gpu", "kernel", "ib", "bug_report")
_NOT_FILES = ("cluster", "ansible", "job", "")
_SERIOUS = ("warning", "critical")
# job categories whose cause the job's own log is the primary source of
_JOB_SCOPED = ("nccl_config", "application", "dataloader", "memory_leak", "nccl_deadlock")
_HARDWARE = ("gpu_hardware", "driver", "ib_network")


# job findings that are the engine's inference, not a line's statement: a failure early in the run
# is the code's or the set-up's by the field's priors (joblog/job_findings.py), never by its own words
_INFERRED_KINDS = ("early_phase_failure",)
# what chose a finding's category when no line states it (findings.finding ``inferred``)
_INFERRED_BY = {
    "falling": ("an iteration rate that kept falling", "계속 떨어진 반복 속도"),
    "late": ("a failure late in the run", "실행 후반의 실패"),
    "growth": ("memory the run reported that kept growing", "실행이 보고한 계속 늘어난 메모리"),
    "early": ("a failure early in the run", "실행 초반의 실패"),
}


def family(f):
    """The independent source a finding was read from: a job culprit is the job log's word,
    whatever host evidence it copies; a file is its sources.FAMILY (or itself)."""
    if f.get("kind") == "job_culprit":
        return "job"
    if f.get("family"):  # what the reader read it as (analyze.of_family), whatever the file's name
        return f["family"]
    name = str(f.get("source") or "").split(":")[0].strip()
    if name in FAMILY:
        return FAMILY[name]
    if name.startswith("nvidia-smi"):
        return "gpu"
    if name.startswith(("ib", "perfquery")):
        return "ib"
    return name if name not in _NOT_FILES and "." in name else (name or "other")


def _what(f):
    return "Xid %d" % f["xid"] if isinstance(f.get("xid"), int) else str(f.get("kind") or "finding")


def _where(f):
    return str(f.get("source") or "?")


def _result(rule, **fields):
    fields = dict((k, "" if v is None else v) for k, v in fields.items())
    level, en, _ = RULES[rule]
    return {"confidence": level, "confidence_reason": en.format(**fields),
            "confidence_basis": dict(fields, rule=rule)}


def reason_text(result, lang="en"):
    """The reason of a host or job result in ``lang`` (its English one when unknown)."""
    basis = (result or {}).get("confidence_basis") or {}
    row = RULES.get(basis.get("rule"))
    if lang == "en" or row is None:
        return (result or {}).get("confidence_reason") or ""
    basis = dict(basis)
    basis.setdefault("what_ko", basis.get("what", ""))  # a basis recorded before what_ko existed
    try:
        return render(row[2], basis)
    except (KeyError, IndexError, ValueError):
        return (result or {}).get("confidence_reason") or ""


def _healthy(probes):
    if not isinstance(probes, dict) or not probes:
        return _result("healthy_unrecorded")
    names = sorted(n for n in probes if not str(n).startswith("_"))
    bad = [n for n in names if not isinstance(probes[n], dict) or probes[n].get("ok") is False
           or probes[n].get("usable") is False]
    if bad:
        return _result("healthy_partial", sources=", ".join(bad))
    read = [n for n in names if probes[n].get("usable")] or names
    if not any(FAMILY.get(n) in ("gpu", "bug_report") for n in read):
        return _result("healthy_no_gpu", sources=", ".join(read))
    return _result("healthy_all_read", sources=", ".join(read))


def _independent(f):
    return family(f) in PRIMARY_FAMILIES or family(f) == "job"


def _families(findings):
    """{family: its best finding} over findings read from independent sources."""
    out = {}
    for f in findings:
        fam = family(f)
        if _independent(f) and (fam not in out or rank_key(f) > rank_key(out[fam])):
            out[fam] = f
    return out


def host_confidence(verdict, findings, probes=None):
    """-> {"confidence", "confidence_reason", "confidence_basis"} of one host's verdict,
    from its findings and (for a healthy verdict) which sources were read."""
    findings = [f for f in findings or [] if isinstance(f, dict) and f.get("severity") in _SERIOUS]
    if verdict == "healthy" or not findings:
        return _healthy(probes) if verdict in ("healthy", None) else _result(
            "no_evidence", what="no finding behind the verdict", what_ko="판정을 뒷받침하는 발견 없음")
    top = primary_finding(findings)
    if top is None or top["kind"] == "no_evidence":
        what = (top or {}).get("message")
        return _result("no_evidence", what=what or "health unknown", what_ko=what or "상태 알 수 없음")
    if top["kind"] in WEAK_KINDS and top["category"] == "unknown":
        why, why_ko = WEAK_KINDS[top["kind"]]
        return _result("weak", why=why, why_ko=why_ko, what=_what(top), source=_where(top))
    if verdict == "unknown" or top["category"] == "unknown":
        return _result("unknown_category", what=_what(top), source=_where(top))
    # the verdict's evidence: its category, read from independent sources, weak readings aside
    same = [f for f in findings if f["category"] == top["category"]]
    fams = _families(f for f in same if f["kind"] not in WEAK_KINDS)
    culprit = fams.pop("job", None)
    # a culprit rank the job names, and this host's own finding of the same cause
    host_own = list(fams.values()) or [f for f in same if _independent(f) and family(f) != "job"]
    if culprit is not None and host_own:
        best = max(host_own, key=rank_key)
        return _result("culprit_confirmed", rank=culprit.get("rank"), what=_what(best), source=_where(best))
    if len(fams) >= 2:
        one, two = sorted(fams.values(), key=rank_key, reverse=True)[:2]
        return _result("agree", what=_what(one), source=_where(one), what2=_what(two), source2=_where(two))
    crit = [f for f in fams.values() if f["severity"] == "critical" and f["kind"] not in SECONDARY_KINDS]
    if crit:
        best = max(crit, key=rank_key)
        return _result("critical_primary", what=_what(best), source=_where(best))
    if top["kind"] in WEAK_KINDS:
        why, why_ko = WEAK_KINDS[top["kind"]]
        return _result("weak", why=why, why_ko=why_ko, what=_what(top), source=_where(top))
    if culprit is not None:
        return _result("culprit_only", rank=culprit.get("rank"))
    if top["severity"] == "critical":
        return _result("critical_secondary", what=_what(top), source=_where(top))
    return _result("warning_only", what=_what(top), source=_where(top))


# ---------------------------------------------------------------- the job
_INFERRED = {
    "memory_leak": ("an iteration rate that keeps falling", "계속 떨어지는 반복 속도"),
    "dataloader": ("erratic stalls between iterations", "불규칙한 반복 간 정지"),
    "application": ("an early failure with no error before it", "오류 없이 일찍 끝난 실패"),
    "nccl_deadlock": ("who the others waited for, with nothing that explains it", "다른 랭크가 기다린 랭크 (설명하는 근거 없음)"),
}


def _job_what(f, lang="en"):
    rank = f.get("rank")
    if rank is None:
        return _what(f)
    return ("랭크 %s의 %s" % (rank, _what(f))) if lang == "ko" else "%s on rank %s" % (_what(f), rank)


def job_confidence(job, hosts=()):
    """-> {"confidence", "confidence_reason", "confidence_basis"} of the job's verdict, from
    the job (verdict, culprits, its findings) and the hosts' results (with their confidence)."""
    job = job or {}
    verdict = job.get("verdict")
    if not verdict:
        return _result("job_no_failure")
    if verdict == "unknown":
        return _result("job_unknown")
    if verdict == "healthy":
        said = [s for s in job.get("success") or () if s.get("end") not in ("step_count", "exit")]
        if job.get("success") and not said and all(s.get("end") == "exit" for s in job["success"]):
            return _result("job_exited", who=job["success"][0]["who"])
        if job.get("success") and not said:
            return _result("job_reached_last_step", who=", ".join(s["who"] for s in job["success"][:2]))
        if said:
            return _result("job_ended_well", who=", ".join(sorted(set(s["who"] for s in said))))
        return _result("job_nccl_only")
    by_name = dict((h.get("host"), h) for h in hosts or [] if isinstance(h, dict))
    for c in job.get("culprits") or []:
        h = by_name.get(c.get("host"))
        if h and c.get("category") == verdict and h.get("confidence") == HIGH:
            return _result("job_host_agrees", what=c.get("explained_by") or "the host's finding",
                           what_ko=c.get("explained_by") or "호스트의 발견", host=h.get("host"), rank=c.get("rank"))
    own = [f for f in job.get("findings") or [] if isinstance(f, dict)
           and f.get("severity") in _SERIOUS and f.get("category") == verdict]
    if own:
        top = max(own, key=rank_key)
        if verdict in _HARDWARE:
            confirm = _host_confirming(top, verdict, by_name, job.get("rank_map"))
            if confirm is not None:
                h, hf = confirm
                return _result("job_host_evidence", what=_job_what(top), what_ko=_job_what(top, "ko"), host=h,
                               what2=_what(hf))
            return _result("job_log_only", what=_job_what(top), what_ko=_job_what(top, "ko"))
        if top["kind"] in _INFERRED_KINDS:
            return _result("job_when_it_failed", what=_job_what(top), what_ko=_job_what(top, "ko"))
        if top.get("inferred") in _INFERRED_BY:
            why, why_ko = _INFERRED_BY[top["inferred"]]
            return _result("job_category_inferred", what=_job_what(top), what_ko=_job_what(top, "ko"),
                           why=why, why_ko=why_ko)
        if top.get("inferred"):
            return _result("job_category_default", what=_job_what(top), what_ko=_job_what(top, "ko"))
        # NCCL's own words about its configuration (NET/Socket, the HCA list) state the cause
        if top["severity"] == "critical" or verdict == "nccl_config":
            return _result("job_states_it", what=_job_what(top), what_ko=_job_what(top, "ko"))
        return _result("job_warning", what=_job_what(top), what_ko=_job_what(top, "ko"))
    if any(c.get("category") == verdict for c in job.get("culprits") or []):
        c = next(c for c in job["culprits"] if c.get("category") == verdict)
        return _result("job_log_only", what="culprit rank %s on %s (%s)" % (
            c.get("rank"), c.get("host") or "?", c.get("explained_by") or "no host finding"),
            what_ko="%s의 원인 랭크 %s (%s)" % (c.get("host") or "?", c.get("rank"),
                                            c.get("explained_by") or "호스트 발견 없음"))
    # no rank named: the one captured host's own fault decided (cluster._one_host_gpu_fault)
    decided = job.get("decided_by")
    if isinstance(decided, dict) and decided.get("category") == verdict and decided.get("family") != "job":
        cuda = next((f for f in job.get("findings") or [] if isinstance(f, dict)
                     and f.get("kind") in CUDA_ERROR_KINDS), None)
        host = next((h for h in hosts or [] if isinstance(h, dict) and decided in (h.get("findings") or [])), None)
        if cuda is not None and host is not None:
            return _result("job_host_evidence", what=_job_what(cuda), what_ko=_job_what(cuda, "ko"),
                           host=host.get("host"), what2=_what(decided))
    why, why_ko = _INFERRED.get(verdict, ("the run's shape", "실행 양상"))
    return _result("job_inferred", why=why, why_ko=why_ko)


def _host_confirming(top, verdict, by_name, rank_map=None):
    """(host, its finding) of the verdict's category that confirms a job finding: the host of
    the finding's rank when known, else any host with high confidence in that category."""
    info = (rank_map or {}).get(top.get("rank"), (rank_map or {}).get(str(top.get("rank")))) or {}
    named = info.get("host") if isinstance(info, dict) else None
    for name, h in sorted(by_name.items(), key=lambda kv: str(kv[0])):
        if named and str(name).split(".")[0] != str(named).split(".")[0]:
            continue
        if h.get("verdict") != verdict or h.get("confidence") != HIGH:
            continue
        hf = next((f for f in h.get("findings") or [] if f.get("category") == verdict
                   and f.get("kind") != "job_culprit" and f.get("severity") in _SERIOUS), None)
        if hf is not None:
            return name, hf
    return None
