"""Plain-text rendering of analyses (CLI and the playbook's console summary)."""

from .i18n import CONFIDENCE_LABEL, RUNG_LABEL, SEVERITY_LABEL, VERDICT_LABEL, finding_message, how_sure, label, text


def one_line(h, lang="en", width=220):
    """host  verdict  severity  next rung  evidence -- one line per host."""
    top = h["findings"][0] if h.get("findings") else None
    ev = ""
    if top and h["verdict"] != "healthy":
        ev = finding_message(top, lang)[0]
    sure = "%s %s" % (text(lang, "how_sure"), label(CONFIDENCE_LABEL, lang, h["confidence"])) if h.get("confidence") else ""
    line = "%-16s %-20s %-9s %s: %-24s %s %s" % (
        h["host"], label(VERDICT_LABEL, lang, h["verdict"]), label(SEVERITY_LABEL, lang, h["severity"]),
        text(lang, "next"), label(RUNG_LABEL, lang, h["rung"]), ("(%s)" % sure) if sure else "", ev)
    line = line.rstrip()
    return line if len(line) <= width else line[:width - 3] + "..."


def summary_counts(hosts):
    crit = sum(1 for h in hosts if h["severity"] == "critical")
    warn = sum(1 for h in hosts if h["severity"] == "warning")
    return {"n": len(hosts), "crit": crit, "warn": warn, "ok": len(hosts) - crit - warn}


def render_text(analysis, lang="en", verbose=True):
    hosts = analysis["hosts"]
    out = [text(lang, "summary", **summary_counts(hosts))]
    suspects = [h for h in hosts if h["severity"] in ("warning", "critical")]
    healthy = [h for h in hosts if h not in suspects]
    for h in suspects:
        out.append(one_line(h, lang, width=10000))
        if not verbose:
            continue
        if h.get("confidence"):
            out.append("    %s: %s" % (text(lang, "how_sure"), how_sure(h, lang)))
        for f in h["findings"]:
            if f["severity"] in ("ok",):
                continue
            msg, act = finding_message(f, lang)
            out.append("    [%s] %s: %s" % (label(SEVERITY_LABEL, lang, f["severity"]), f["kind"], msg))
            if f.get("evidence"):
                out.append("        %s: %s  (%s)" % (text(lang, "evidence"), f["evidence"].strip(), f.get("source", "")))
            if act:
                out.append("        %s: %s" % (text(lang, "action"), act))
    if healthy:
        out.append(text(lang, "healthy_hosts", n=len(healthy), hosts=", ".join(h["host"] for h in healthy)))
    if analysis.get("job"):
        out.append(job_line(analysis["job"], lang))
    return "\n".join(out)


def _ranks(ranks):
    ranks = sorted(ranks or [])
    if len(ranks) <= 12:
        return ranks
    return "%d ranks (%s..%s)" % (len(ranks), ranks[0], ranks[-1])


def job_line(job, lang="en"):
    """The job verdict in one line: where it stopped, who it waited for, why."""
    parts = ["%s: %s" % (text(lang, "job"), label(VERDICT_LABEL, lang, job.get("verdict") or "unknown"))]
    if job.get("confidence"):
        parts.append("%s %s" % (text(lang, "how_sure"), how_sure(job, lang)))
    fa = job.get("failed_at") or {}
    if fa.get("epoch") is not None:
        parts.append("epoch %s %.0f%%" % (fa["epoch"], 100 * (fa.get("progress") or 0)))
    coll = job.get("collective") or {}
    if coll:
        parts.append("%s SeqNum=%s" % (coll.get("op"), coll.get("seq")))
    if job.get("timed_out_ranks"):
        parts.append("timed out: %s" % _ranks(job["timed_out_ranks"]))
    for c in job.get("culprits") or []:
        parts.append("culprit rank %s -> %s %s%s" % (c["rank"], c.get("host") or "?", c.get("gpu_pci") or "",
                                                    " (%s)" % c["explained_by"] if c.get("explained_by") else ""))
    return "; ".join(parts)
