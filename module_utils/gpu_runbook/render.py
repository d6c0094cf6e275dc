# SPDX-License-Identifier: Apache-2.0
"""Plain-text rendering of analyses: one layout for the playbook's console
(diagnose.console_lines) and the CLI's text output (render_text, which adds every finding).

The order is the order an on-call engineer acts in: the job (its verdict, where it stopped,
which ranks waited, the culprit chain rank -> host -> GPU -> finding), the suspect hosts by
how much they explain the failure, the cluster's own findings, the healthy hosts in one line,
one summary count line and the report's path. Columns are padded by display width, so Korean
lines align; long text is wrapped between words, never cut."""

from .cluster import CULPRIT_HOST, IN_JOB, NAMED_BY_JOB, NOT_IN_JOB, logged_before_job, relation_of
from .findings import SEVERITY_RANK
from .i18n import (CONFIDENCE_LABEL, RUNG_LABEL, SEVERITY_LABEL, VERDICT_LABEL, display_width, finding_message,
                   how_sure, label, numbers_text, pad, text, wrap, xid_label)
from .textio import printable
from .verdict import rank_key

WIDTH = 100          # wrap prose at this many display columns
INDENT = "    "      # a host's or the job's detail lines
HANG = INDENT + "  "  # the continuation of a wrapped detail line
_SERIOUS = ("warning", "critical")
_MAX_RANKS = 8       # rank lists longer than this are shortened


def summary_counts(hosts):
    crit = sum(1 for h in hosts if h.get("severity") == "critical")
    warn = sum(1 for h in hosts if h.get("severity") == "warning")
    return {"n": len(hosts), "crit": crit, "warn": warn, "ok": len(hosts) - crit - warn}


def _v(x):
    """A value as text; a missing one reads '-' (never 'None')."""
    return "-" if x is None or x == "" else str(x)


def _serious(findings):
    return [f for f in findings or [] if isinstance(f, dict) and f.get("severity") in _SERIOUS]


def _key(f):
    try:
        return rank_key(f)
    except (KeyError, TypeError):  # a finding from an odd report: last, not a traceback
        return (-1,)


def rung_finding(h):
    """The finding behind the host's 'next:' rung: the best-ranked serious finding that asks
    for that very rung (the verdict's rung is the costliest one its findings ask for), so the
    rung shown and the action shown come from one finding. At a tie, the host's own finding
    before the job culprit that copies it."""
    serious = _serious(h.get("findings"))
    same = [f for f in serious if f.get("rung") == h.get("rung")] or serious
    return max(same, key=lambda f: (_key(f), f.get("kind") != "job_culprit")) if same else None


def _tag(h, job, lang):
    if not job:
        return ""
    rel = relation_of(h, job)  # the analysis says it (cluster.build_cluster)
    if rel == CULPRIT_HOST:
        ranks = [c.get("rank") for c in job.get("culprits") or []
                 if isinstance(c, dict) and str(c.get("host") or "").split(".")[0] == str(h.get("host")).split(".")[0]]
        return text(lang, "tag_culprit", ranks=", ".join(str(r) for r in ranks))
    if rel == NAMED_BY_JOB:
        return text(lang, "tag_named")
    if rel == NOT_IN_JOB:
        return text(lang, "tag_not_in_job")
    if rel == IN_JOB and h.get("fault_before_job", logged_before_job(h, job)):
        return text(lang, "tag_before_job")
    if rel == IN_JOB and job.get("culprit_hosts"):  # sick too, but the job names another host's rank
        return text(lang, "tag_not_culprit")
    return ""


def _columns(h, job, lang):
    sure = label(CONFIDENCE_LABEL, lang, h.get("confidence")) if h.get("confidence") else "-"
    return [str(h.get("host") or "-"), label(VERDICT_LABEL, lang, h.get("verdict")),
            label(SEVERITY_LABEL, lang, h.get("severity")),
            "%s: %s" % (text(lang, "next"), label(RUNG_LABEL, lang, h.get("rung"))),
            "%s: %s" % (text(lang, "how_sure"), sure), _tag(h, job, lang)]


def host_lines(rows):
    """Each row of columns as one line, every column starting at the same display column."""
    if not rows:
        return []
    widths = [max(display_width(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return ["  ".join([pad(c, w) for c, w in zip(r, widths)] + [r[-1]]).rstrip() for r in rows]


def _finding_lines(f, lang, verbose):
    msg, act = finding_message(f, lang)
    if not verbose:
        out = wrap(_v(msg or f.get("kind")), WIDTH, INDENT, HANG)
        if act:
            out += wrap("%s: %s" % (text(lang, "action"), act), WIDTH, INDENT, HANG)
        return out
    head = "[%s] %s: %s" % (label(SEVERITY_LABEL, lang, f.get("severity")), _v(f.get("kind")), _v(msg))
    out = wrap(head, WIDTH, INDENT, INDENT + HANG)
    if f.get("evidence"):  # a log line, verbatim on its own line: never wrapped, never cut
        out.append("%s%s: %s  (%s)" % (INDENT * 2, text(lang, "evidence"), str(f["evidence"]).strip(),
                                       f.get("source") or "-"))
    if act:
        out += wrap("%s: %s" % (text(lang, "action"), act), WIDTH, INDENT * 2, INDENT * 2 + "  ")
    return out


def suspect_hosts(analysis):
    """Suspect hosts in the cluster's order (how much they explain the failure, then severity)."""
    hosts = analysis.get("hosts") or []
    names = (analysis.get("cluster") or {}).get("suspects")
    if names is None:
        return [h for h in hosts if SEVERITY_RANK.get(h.get("severity"), 0) >= SEVERITY_RANK["warning"]]
    by_name = {h.get("host"): h for h in hosts}
    return [by_name[n] for n in names if n in by_name]


def _host_block(h, header, lang, verbose):
    out = [header]
    top = rung_finding(h)
    if verbose:
        if h.get("confidence"):
            out += wrap("%s: %s" % (text(lang, "how_sure"), how_sure(h, lang)), WIDTH, INDENT, HANG)
        rest = [f for f in h.get("findings") or [] if isinstance(f, dict) and f is not top
                and f.get("severity") != "ok"]
        for f in ([top] if top else []) + rest:
            out += _finding_lines(f, lang, True)
    elif top is not None:
        out += _finding_lines(top, lang, False)
    return out


# ---------------------------------------------------------------- the job
def _rank_list(ranks, lang):
    ranks = sorted(ranks)
    shown = ", ".join(str(r) for r in ranks[:_MAX_RANKS])
    if len(ranks) > _MAX_RANKS:
        shown = text(lang, "more_ranks", shown=shown, more=len(ranks) - _MAX_RANKS)
    return text(lang, "rank" if len(ranks) == 1 else "ranks", rank=shown, ranks=shown)


def ranks_text(job, lang="en"):
    """Who waited and who did not: '31 of 32 ranks waited; rank 11 did not'. Without the
    world size only what is known: '31 ranks timed out'. '' when no rank timed out."""
    timed = sorted(set(r for r in job.get("timed_out_ranks") or [] if isinstance(r, int)))
    if not timed:
        return ""
    world = job.get("world_size")
    if isinstance(world, int) and world > max(timed) and world > 0:
        missing = [r for r in range(world) if r not in set(timed)]
        if missing:
            return text(lang, "ranks_waited", waited=len(timed), world=world, missing=_rank_list(missing, lang))
    return text(lang, "rank_timed_out" if len(timed) == 1 else "ranks_timed_out", n=len(timed))


def _explaining_finding(host, culprit):
    """The host finding the culprit entry names (explained_by: 'Xid 79' or a kind), preferring
    the one on the rank's own GPU; else the job_culprit finding that copies it."""
    own = [f for f in _serious(host.get("findings")) if f.get("kind") != "job_culprit"]
    why = str(culprit.get("explained_by") or "")
    named = [f for f in own if (why.startswith("Xid ") and str(f.get("xid")) == why[4:]) or f.get("kind") == why]
    on_gpu = [f for f in named if (f.get("gpu") or {}).get("pci") == culprit.get("gpu_pci")]
    pool = on_gpu or named
    if pool:
        return max(pool, key=_key)
    return next((f for f in _serious(host.get("findings")) if f.get("kind") == "job_culprit"
                 and f.get("rank") == culprit.get("rank")), None)


def _gpu_text(host, pci):
    """'GPU 2 (0000:75:00.0)' when a finding on the host knows that GPU's index, else 'GPU <pci>'."""
    if not pci:
        return ""
    for f in (host or {}).get("findings") or []:
        gpu = (f.get("gpu") if isinstance(f, dict) else None) or {}
        if gpu.get("pci") == pci and gpu.get("index") is not None:
            return "GPU %s (%s)" % (gpu["index"], pci)
    return "GPU %s" % pci


def _finding_short(f, lang):
    """The explaining finding in the chain: an Xid by its code and NVIDIA's name with how often
    and when; anything else by its message (which carries its numbers)."""
    if f.get("xid") is not None:
        numbers = numbers_text(f, lang)
        return xid_label(f["xid"]) + (" " + numbers if numbers else "")
    return finding_message(f, lang)[0]


def culprit_chain(culprit, hosts, lang="en", offline=False):
    """'rank 18 -> gpu-r3-n03 GPU 2 (0000:75:00.0) -> Xid 79 (GPU has fallen off the bus) once at ...'."""
    name = culprit.get("host")
    host = next((h for h in hosts if name and str(h.get("host")).split(".")[0] == str(name).split(".")[0]), None)
    where = " ".join(x for x in (str(name or "-"), _gpu_text(host, culprit.get("gpu_pci"))) if x)
    if host is None:
        why = text(lang, "not_checked_offline" if offline else "not_checked")
    else:
        f = _explaining_finding(host, culprit) if culprit.get("explained_by") else None
        why = _finding_short(f, lang) if f is not None else text(lang, "no_explanation")
    return "%s -> %s -> %s" % (text(lang, "rank", rank=_v(culprit.get("rank"))), where, why)


def job_lines(analysis, lang="en"):
    """The job's verdict, where it stopped and who waited, then the culprit chain (or, with no
    culprit, the job's own most serious finding and its action)."""
    job = analysis.get("job") or {}
    # Slurm's name of the job when Slurm was asked, else its output file's ('%x-%j.out')
    name = (job.get("slurm") or {}).get("name") or job.get("job_name")
    head = text(lang, "job") + (" %s" % job["job_id"] if job.get("job_id") else "") + (" (%s)" % name if name else "")
    head += ": %s" % label(VERDICT_LABEL, lang, job.get("verdict"))
    if job.get("confidence"):
        head += " (%s: %s)" % (text(lang, "how_sure"), how_sure(job, lang))
    out = wrap(head, WIDTH, "", INDENT)
    where = []
    fa = job.get("failed_at") or {}
    if fa.get("epoch") is not None:
        pct = fa.get("progress")
        pct = " (%d%%)" % round(100 * pct) if isinstance(pct, (int, float)) else ""
        where.append(text(lang, "stopped_at", epoch=fa["epoch"], pct=pct))
    coll = job.get("collective") or {}
    if coll.get("op") or coll.get("seq") is not None:
        where.append(text(lang, "in_collective", op=_v(coll.get("op")), seq=_v(coll.get("seq"))))
    line = " ".join(where)
    waited = ranks_text(job, lang)
    line = "; ".join(x for x in (line, waited) if x)
    if line:
        out += wrap(line, WIDTH, INDENT, HANG)
    culprits = [c for c in job.get("culprits") or [] if isinstance(c, dict)]
    for c in culprits:
        chain = culprit_chain(c, analysis.get("hosts") or [], lang, (analysis.get("cluster") or {}).get("offline"))
        out += wrap("%s: %s" % (text(lang, "culprit"), chain), WIDTH, INDENT, HANG)
    own = _serious(job.get("findings"))
    decided = job.get("decided_by") if isinstance(job.get("decided_by"), dict) else None
    # the finding the verdict was decided from, when it is the job's own (a host's that explains
    # a culprit is in the chain above); else, with no culprit, the job's most serious finding
    top = decided if decided is not None and (decided.get("family") == "job" or not culprits) else (
        max(own, key=_key) if not culprits and own else None)
    if top is not None:
        msg, act = finding_message(top, lang)
        out += wrap("%s: %s" % (text(lang, "why"), _v(msg)), WIDTH, INDENT, HANG)
        if act:
            out += wrap("%s: %s" % (text(lang, "action"), act), WIDTH, INDENT, HANG)
    return out


# ---------------------------------------------------------------- the whole output
def render_lines(analysis, lang="en", verbose=False, report_path=None):
    """The lines of the console (verbose=False) or the CLI's text (verbose=True)."""
    hosts = analysis.get("hosts") or []
    job = analysis.get("job")
    out = job_lines(analysis, lang) if job else []
    suspects = suspect_hosts(analysis)
    headers = host_lines([_columns(h, job, lang) for h in suspects])
    for h, header in zip(suspects, headers):
        out += _host_block(h, header, lang, verbose)
    for f in (analysis.get("cluster") or {}).get("findings") or []:
        if f.get("severity") in _SERIOUS:
            out += wrap("%s: %s" % (text(lang, "cluster"), _v(finding_message(f, lang)[0])), WIDTH, "", INDENT)
    names = {id(h) for h in suspects}
    healthy = [str(h.get("host")) for h in hosts if id(h) not in names]
    if healthy:
        out += wrap(text(lang, "healthy_hosts", n=len(healthy), hosts=", ".join(healthy)), WIDTH, "", INDENT)
    out.append(text(lang, "summary", **summary_counts(hosts)))
    if report_path:
        out.append("%s: %s" % (text(lang, "report"), report_path))
    return out


def render_text(analysis, lang="en", verbose=True):
    """The CLI's text output: the console's layout, with every finding and its evidence;
    control characters from the logs escaped (a terminal would act on them)."""
    return printable("\n".join(render_lines(analysis, lang, verbose=verbose)))
