"""Real captures with their truth: run each case through the CLI's engine and compare.

A case is a directory holding captured files (kern.log, nccl.log, nvidia-smi-q.txt, ...,
or per-host subdirectories) and a ``case.json``: ``{"source", "license", "kinds", "truth",
"notes"}``. The truth keys this compares (each only when the case states it):

- ``category``: the case's verdict: the job's when job logs are present, else the worst
  host's (by severity, then the field's suspicion order);
- ``xid_codes``: every one of them must be on a finding (an Xid in facts only is dropped
  evidence);
- ``culprit_rank`` / ``culprit_ranks``: the job's culprit ranks, exactly;
- ``culprit_host`` / ``culprit_hosts``: each is a job culprit host or a host whose verdict
  is not healthy;
- ``hosts``: ``{name: category}`` per host (a file naming several hosts gives one result each);
- ``confidence``: the case's verdict's confidence (the job's, else the worst host's);
- ``kinds_present`` / ``kinds_absent``: finding kinds anywhere in the result.

Used by tests/unit/test_real_captures.py (every case must hold) and by
tests/benchmarks/score_captures.py (a score per field, on any set of cases, with any engine).
"""

import json
import os

FIELDS = ("category", "xid_codes", "culprit_ranks", "culprit_hosts", "hosts", "confidence", "kinds")
_SEVERITY = {"ok": 0, "info": 1, "warning": 2, "critical": 3}


def case_dirs(*roots):
    """Every directory under the roots that holds a case.json with a truth, sorted."""
    out = []
    for root in roots:
        for dirpath, _dirs, files in os.walk(root):
            if "case.json" in files:
                out.append(dirpath)
    return sorted(set(out))


def load_truth(case_dir):
    with open(os.path.join(case_dir, "case.json"), encoding="utf-8") as fh:
        return json.load(fh).get("truth") or {}


OPTIONS = ("expected_gpus", "expected_ib_rate", "since")


def analyse_case(case_dir):
    """The CLI's analysis of a case directory (times without a zone read as UTC), with the
    options an engineer would pass for that cluster (case.json "options": expected_gpus when
    the source says how many GPUs its nodes have, ...)."""
    from gpu_runbook.cli import analyze_paths  # imported late: the scorer may pick the engine
    from gpu_runbook.timeutil import UTC
    with open(os.path.join(case_dir, "case.json"), encoding="utf-8") as fh:
        options = json.load(fh).get("options") or {}
    kw = {k: v for k, v in options.items() if k in OPTIONS}
    try:
        return analyze_paths([case_dir], tz=UTC, ignore=("case.json",), **kw)
    except TypeError:  # an engine from before issue 24 (score_captures --engine): the case without its case.json
        import shutil
        import tempfile
        tmp = tempfile.mkdtemp(prefix="gpurb-case-")
        try:
            copy = os.path.join(tmp, os.path.basename(case_dir.rstrip(os.sep)))
            shutil.copytree(case_dir, copy, ignore=shutil.ignore_patterns("case.json"))
            return analyze_paths([copy], tz=UTC, **kw)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def _suspicion():
    try:
        from gpu_runbook.verdict import SUSPICION
    except ImportError:
        return {}
    return SUSPICION


def worst_host(hosts):
    if not hosts:
        return None
    sus = _suspicion()
    return max(hosts, key=lambda h: (_SEVERITY.get(h.get("severity"), 0), sus.get(h.get("verdict"), 0)))


def case_verdict(analysis):
    """(category, confidence) of the case: the job's when there is a job, else the worst host's."""
    job = analysis.get("job") or {}
    if job.get("verdict"):
        return job["verdict"], job.get("confidence")
    top = worst_host(analysis.get("hosts") or [])
    if top is None:
        return "unknown", None
    return top.get("verdict"), top.get("confidence")


def all_findings(analysis):
    out = []
    for h in analysis.get("hosts") or []:
        out.extend(h.get("findings") or [])
    out.extend((analysis.get("job") or {}).get("findings") or [])
    return out


def _listed(truth, plural, singular):
    if plural in truth:
        return list(truth[plural] or [])
    if singular in truth and truth[singular] is not None:
        return [truth[singular]]
    return None


def compare(analysis, truth):
    """-> {field: (ok, expected, got)} for each field the truth states."""
    out = {}
    category, confidence = case_verdict(analysis)
    if "category" in truth:
        out["category"] = (category == truth["category"], truth["category"], category)
    findings = all_findings(analysis)
    if "xid_codes" in truth:
        found = sorted(set(f["xid"] for f in findings if f.get("xid") is not None))
        want = sorted(set(int(x) for x in truth["xid_codes"]))
        ok = set(want) <= set(found) if want else not found
        out["xid_codes"] = (ok, want, found)
    job = analysis.get("job") or {}
    ranks = _listed(truth, "culprit_ranks", "culprit_rank")
    if ranks is not None:
        got = sorted(job.get("culprit_ranks") or [])
        out["culprit_ranks"] = (sorted(int(r) for r in ranks) == got, sorted(ranks), got)
    want_hosts = _listed(truth, "culprit_hosts", "culprit_host")
    if want_hosts is not None:
        named = list(job.get("culprit_hosts") or [])
        named += [c.get("host") for c in job.get("culprits") or [] if c.get("host")]
        named += [h["host"] for h in analysis.get("hosts") or [] if h.get("verdict") != "healthy"]
        out["culprit_hosts"] = (all(h in named for h in want_hosts), want_hosts, sorted(set(named)))
    if "hosts" in truth:
        got = {h["host"]: h.get("verdict") for h in analysis.get("hosts") or []}
        ok = all(got.get(name) == cat for name, cat in truth["hosts"].items())
        out["hosts"] = (ok, truth["hosts"], got)
    if "confidence" in truth:
        out["confidence"] = (confidence == truth["confidence"], truth["confidence"], confidence)
    if "kinds_present" in truth or "kinds_absent" in truth:
        kinds = set(f["kind"] for f in findings)
        missing = [k for k in truth.get("kinds_present", []) if k not in kinds]
        extra = [k for k in truth.get("kinds_absent", []) if k in kinds]
        out["kinds"] = (not missing and not extra, {"present": truth.get("kinds_present", []),
                                                    "absent": truth.get("kinds_absent", [])},
                        {"missing": missing, "unexpected": extra})
    return out


def check_case(case_dir):
    """-> (comparison, analysis); an engine exception is a failed comparison, not a crash."""
    truth = load_truth(case_dir)
    try:
        analysis = analyse_case(case_dir)
    except Exception as exc:  # noqa: BLE001 -- the scorer must report it, and go on
        return {"engine": (False, "an analysis", "%s: %s" % (type(exc).__name__, exc))}, None
    return compare(analysis, truth), analysis
