# SPDX-License-Identifier: Apache-2.0
"""What the reports say, decided once, as plain (unescaped) strings: the Markdown and HTML
writers only escape and lay them out, so both say the same things."""

import re

from .. import __version__
from ..cluster import NOT_IN_JOB, relation_of
from ..i18n import RUNG_LABEL, SEVERITY_LABEL, VERDICT_LABEL, finding_message, how_sure, label
from ..korean import render
from ..timeutil import span_text, to_utc
from .charts import rate_svg, timeline_svg
from .words import SERIOUS, WORDS, words


def _fill(template, **fields):
    """A report phrase with its fields (a Korean particle after a field fits its value)."""
    return render(template, fields)


TIMELINE_ROWS = 40


def _s(value):
    """A value as report text: None and '' read as '-' (never 'None')."""
    if value is None or value == "":
        return "-"
    return str(value)


def _utc_text(value):
    t = to_utc(value)
    return t.strftime("%Y-%m-%d %H:%M:%S UTC") if t else _s(value)


def shell_line(argv):
    """argv -> one shell line a person can paste: KEY="a value" stays readable (the form
    Slurm's own documentation uses), anything else is quoted only when it must be."""
    out = []
    for arg in argv or []:
        arg = str(arg)
        key, eq, value = arg.partition("=")
        if re.match(r"^[A-Za-z0-9_./:@%+,=-]+$", arg):
            out.append(arg)
        elif eq and re.match(r"^[A-Za-z][A-Za-z0-9_]*$", key):
            out.append('%s="%s"' % (key, re.sub(r'(["\\$`])', r"\\\1", value)))
        else:
            out.append("'%s'" % arg.replace("'", "'\"'\"'"))
    return " ".join(out)


def _plan_entries(analysis):
    """{host: the remediation plan's entry} from the plan's own builder, so the report's
    commands are the ladder's commands. {} when the plan cannot be made."""
    try:
        from ..plan import make_plan
        plan = make_plan(analysis)
    except Exception:  # noqa: BLE001 -- a report without commands beats no report
        return {}
    return {e["host"]: e for e in plan.get("hosts") or [] if isinstance(e, dict) and e.get("host")}


def _next_step(host, entry, t):
    """The exact next command for a suspect: the plan's first rung with a command (planned,
    or held with its blocker named), its job environment, else the plan-only playbook run."""
    decision = (entry or {}).get("decision") or ""
    said = _fill(t.get("decision_" + decision, decision), host=shell_line([host]))  # the whole command to act
    for r in (entry or {}).get("rungs") or []:
        if r.get("commands") and r.get("status") in ("planned", "blocked"):
            why = (entry or {}).get("reason") or "; ".join(r.get("blockers") or [])
            return {"command": shell_line(r["commands"][0]), "decision": said, "why": _s(why)}
        if r.get("env") and r.get("status") == "planned":
            return {"command": "export " + " ".join(shell_line([v]) for v in r["env"]),
                    "decision": said, "why": _s((entry or {}).get("reason"))}
    return {"command": "ansible-playbook playbooks/remediate.yml -l %s" % shell_line([host]),
            "decision": t["plan_only"], "why": _s((entry or {}).get("reason"))}


def _subject(f):
    """What a finding is about, without repeating what its message already says."""
    name = "Xid %s" % f["xid"] if f.get("kind") == "xid" and f.get("xid") is not None else _s(f.get("kind"))
    gpu, ib = f.get("gpu") or {}, f.get("ib") or {}
    target = ""
    if gpu.get("pci") or gpu.get("index") is not None:
        target = "GPU %s" % (gpu.get("pci") or gpu.get("index"))
    elif ib.get("device"):
        target = ib["device"] + ("/%s" % ib["port"] if ib.get("port") is not None else "")
    return name, target


def _finding(f, lang):
    msg, act = finding_message(f, lang)
    name, target = _subject(f)
    bare = target.replace("GPU ", "")
    counters = f.get("counters") if isinstance(f.get("counters"), dict) else {}
    seen = span_text(f.get("count"), f.get("first"), f.get("last"), lang) if (
        f.get("count") is not None or f.get("first")) else ""
    return {"sev": f.get("severity") or "info", "severity": label(SEVERITY_LABEL, lang, f.get("severity")),
            "kind": _s(f.get("kind")), "name": name,
            "target": target if target and bare not in (msg or "") else "",
            "message": _s(msg), "action": _s(act), "seen": _s(seen), "evidence": _s((f.get("evidence") or "").strip()),
            "source": _s(f.get("source")), "rank": _s(f.get("rank")),
            "counters": ", ".join("%s=%s" % (k, v) for k, v in sorted(counters.items())) or "-"}


# A kernel line's own time stamp, host name and 'kernel:' tag: the timeline's columns say them.
_LINE_HEAD = re.compile(r"^(?:\[?\d{4}-\d{2}-\d{2}[T ][\d:.,]+(?:Z|[+-]\d{2}:?\d{2})?\]?\s+"
                        r"|[A-Z][a-z]{2}\s+\d{1,2}\s+[\d:]{8}\s+)")


def _event_text(e):
    text = re.sub(r"\s+", " ", str(e.get("text") or "")).strip()
    head = _LINE_HEAD.match(text)
    if head:
        text = text[head.end():]
        host = str(e.get("host") or "")
        if host and text.split(" ", 1)[0] in (host, host.split(".")[0]):
            text = text.split(" ", 1)[1] if " " in text else ""
        text = re.sub(r"^kernel:\s*", "", text)
    return _s(text or e.get("kind"))


def _pct(progress):
    try:
        return "%.0f" % (100 * float(progress or 0))
    except (TypeError, ValueError):
        return "-"


def _ranks_text(ranks, t):
    ranks = sorted(int(r) for r in ranks)
    if len(ranks) == 1:
        return _fill(t["rank_one"], r=ranks[0])
    if len(ranks) <= 8:
        return _fill(t["ranks_list"], r=", ".join(map(str, ranks)))
    return _fill(t["ranks_n"], n=len(ranks))


def _timed_out_text(job, t):
    ranks = [r for r in job.get("timed_out_ranks") or [] if isinstance(r, int)]
    if not ranks:
        return "-"
    world = job.get("world_size")
    if isinstance(world, int) and world > len(ranks):
        missing = [r for r in range(world) if r not in set(ranks)]
        return _fill(t["waited"], n=len(ranks), world=world, missing=_ranks_text(missing, t))
    return _fill(t["ranks_n"], n=len(ranks))


def _nccl_errors(job):
    """The ranks' NCCL/IB errors (job.nccl.errors), one row per distinct error with how often."""
    rows = {}
    for e in (job.get("nccl") or {}).get("errors") or []:
        if not isinstance(e, dict):
            continue
        status = " ".join(str(x) for x in (e.get("status_name"), "(%s)" % e["status"] if e.get("status") is not None
                                            else None, e.get("status_text")) if x)
        what = status or e.get("what") or e.get("kind")
        key = (e.get("rank"), e.get("host"), e.get("peer"), e.get("hca"), what)
        if key in rows:
            rows[key]["times"] += 1
        else:
            rows[key] = {"rank": _s(e.get("rank")), "host": _s(e.get("host")), "peer": _s(e.get("peer")),
                         "hca": _s(e.get("hca")), "error": _s(what), "source": _s(e.get("src")), "times": 1}
    return list(rows.values())


def _job_facts(job, hosts_by_name, lang, t):
    fa = job.get("failed_at") or {}
    coll = job.get("collective") or {}
    chain = []
    for c in job.get("culprits") or []:
        if not isinstance(c, dict):
            continue
        steps = [_fill(t["rank_one"], r=_s(c.get("rank"))), _s(c.get("host")) if c.get("host") else t["host_unknown"]]
        if c.get("gpu_pci"):
            steps.append("GPU %s" % c["gpu_pci"])
        host = hosts_by_name.get(c.get("host")) or {}
        # the host's own finding that explains the rank (not the job_culprit finding that restates it)
        why = c.get("explained_by")
        own = next((f for f in host.get("findings") or [] if f.get("kind") != "job_culprit" and why in (
            f.get("kind"), "Xid %s" % f.get("xid"))), None) if why else None
        if own:
            said = finding_message(own, lang)[0]
            steps.append(said if why in said else "%s: %s" % (why, said))
        elif why:
            steps.append(why)
        else:
            steps.append(t["unexplained"])
        chain.append(steps)
    rate = job.get("iteration_rate") or {}
    by_epoch = {k: v for k, v in (rate.get("by_epoch") or {}).items() if isinstance(v, (int, float))}
    rate_text, rate_picture = "", ""
    if len(by_epoch) >= 2:
        order = sorted(by_epoch, key=lambda k: float(k) if str(k).replace(".", "", 1).isdigit() else 0)
        trend = t.get("trend_%s" % rate.get("trend"), _s(rate.get("trend")))
        rate_text = _fill(t["rate_text"], first=by_epoch[order[0]], e1=order[0], last=by_epoch[order[-1]],
                                          e2=order[-1], trend=trend)
        failed = _fill(t["failed_mark"], epoch=fa.get("epoch"), pct=_pct(fa.get("progress"))) \
            if fa.get("epoch") is not None else ""
        if failed:
            rate_text += "; " + failed
        rate_picture = rate_svg(by_epoch, fa, {"title": t["rate"], "epoch": t["epoch"], "rate": t["rate_axis"],
                                               "failed": failed or t["watchdog"]})
    return {
        "job_id": _s(job.get("job_id")) + (" (%s)" % _s((job.get("slurm") or {}).get("name") or job.get("job_name"))
                                           if (job.get("slurm") or {}).get("name") or job.get("job_name") else ""),
        "verdict": label(VERDICT_LABEL, lang, job["verdict"]) if job.get("verdict") else "-",
        "decided_by": _decided_by(job, lang),
        "how_sure": _s(how_sure(job, lang)),
        "failed_at": _fill(t["epoch_at"], epoch=fa["epoch"], pct=_pct(fa.get("progress")))
        if fa.get("epoch") is not None else "-",
        "collective": "%s SeqNum=%s" % (_s(coll.get("op")), _s(coll.get("seq"))) if coll else "-",
        "timed_out": _timed_out_text(job, t),
        "chain": chain,
        "findings": [_finding(f, lang) for f in job.get("findings") or [] if isinstance(f, dict)],
        "nccl_errors": _nccl_errors(job),
        "rate_text": rate_text, "rate_svg": rate_picture,
    }


def _decided_by(job, lang):
    """The finding the job's verdict was decided from, as the reports say it ("-" when the
    verdict was inferred from the run's shape, which its confidence says)."""
    f = job.get("decided_by")
    if not isinstance(f, dict) or not f.get("kind"):
        return "-"
    return "%s (%s)" % (finding_message(f, lang)[0], _s(f.get("source")))


def _inputs_facts(inputs, job, t):
    """Per host the sources read and not read; the job's log files and their problems."""
    rows = []
    for host, info in sorted(((inputs or {}).get("hosts") or {}).items()):
        if not isinstance(info, dict):
            continue
        if info.get("reached") is False:
            rows.append({"host": host, "read": "-", "not_read": "%s: %s" % (t["not_reached"], _s(info.get("why")))})
            continue
        rows.append({"host": host, "read": ", ".join(info.get("read") or []) or "-",
                     "not_read": "; ".join("%s (%s)" % (_s(n.get("source")), _s(n.get("why")))
                                           for n in info.get("not_read") or [] if isinstance(n, dict)) or "-"})
    logs = (inputs or {}).get("job_logs") or {}
    read = ["%s (%s)" % (_s(f.get("name")), _fill(t["lines"], n=_s(f.get("lines"))))
            for f in logs.get("read") or [] if isinstance(f, dict)]
    problems = list(logs.get("problems") or []) or list((job or {}).get("log_problems") or [])
    return {"hosts": rows, "job_logs": ", ".join(read) or "-", "problems": "; ".join(map(str, problems)) or "-"}


def _window_text(window, job, generated, t):
    window = window or {}
    since = window.get("since")
    start = window.get("job_start") or ((job or {}).get("slurm") or {}).get("start")
    parts = [_fill(t["since"], t=_utc_text(since)) if since else t["whole_log"]]
    if start:
        parts.append("%s %s" % (t["job_start"], _utc_text(start)))
    parts.append("%s %s" % (t["generated"], _utc_text(generated)))
    return " · ".join(parts)


def report_facts(analysis, lang="en"):
    """Everything the md and html reports say, as plain (unescaped) strings."""
    t = words(lang)
    analysis = analysis if isinstance(analysis, dict) else {}
    cluster = analysis.get("cluster") or {}
    hosts = [h for h in analysis.get("hosts") or [] if isinstance(h, dict) and h.get("host")]
    by_name = {h["host"]: h for h in hosts}
    job = analysis.get("job") if isinstance(analysis.get("job"), dict) else None
    plan = _plan_entries(analysis)
    names = [n for n in cluster.get("suspects") or [] if n in by_name]
    suspects = []
    for name in names:
        h = by_name[name]
        step = _next_step(name, plan.get(name), t)
        outside = bool(job) and relation_of(h, job) == NOT_IN_JOB  # the analysis's word, as the console reads it
        suspects.append({
            "host": name, "sev": h.get("severity") or "info", "verdict": label(VERDICT_LABEL, lang, h.get("verdict")),
            "how_sure": _s(how_sure(h, lang)), "severity": label(SEVERITY_LABEL, lang, h.get("severity")),
            "rung": label(RUNG_LABEL, lang, h.get("rung")), "outside": t["outside_job"] if outside else "",
            "command": step["command"], "decision": step["decision"], "why": step["why"],
            "findings": [_finding(f, lang) for f in h.get("findings") or []
                         if isinstance(f, dict) and f.get("severity") in SERIOUS]})
    timeline = [e for e in cluster.get("timeline") or [] if isinstance(e, dict)]
    with_events = {e.get("host") for e in timeline}
    rows = (["job"] if "job" in with_events else []) + names + sorted(
        n for n in with_events if n in by_name and n not in names)
    quiet = [h["host"] for h in hosts if h["host"] not in rows]
    rows = rows[:TIMELINE_ROWS]  # a picture a person can read; the table below keeps every event
    tl_words = {"job": t["job_row"], "first_fault": t["first_fault"], "culprit_fault": t["culprit_fault"],
                "job_start": t["job_start"], "watchdog": t["watchdog"],
                "no_events": t["no_events"], "axis": t["axis"], "title": t["timeline_title"]}
    events = [{"time": _utc_text(e.get("time")), "host": t["job_row"] if e.get("host") == "job" else _s(e.get("host")),
               "text": t["job_start"] if e.get("kind") == "job_start" and e.get("host") == "job" else _event_text(e),
               "mark": ", ".join(t[k] for k in ("first_fault", "culprit_fault") if e.get(k)),
               "cls": "job" if e.get("host") == "job" else ("fault" if e.get("first_fault") or e.get("culprit_fault")
                                                            else "")}
              for e in timeline]
    tool = analysis.get("tool") or {}
    return {
        "t": t, "lang": lang if lang in WORDS else "en",
        "generated": _utc_text(analysis.get("generated")) if analysis.get("generated") else "-",
        "version": "%s %s" % (t["tool"], _s(tool.get("version") or __version__)),
        "n_hosts": len(hosts), "n_suspects": len(names),
        "job": _job_facts(job, by_name, lang, t) if job else None,
        "suspects": suspects,
        "healthy": [n for n in cluster.get("healthy") or [] if isinstance(n, str)],
        "cluster_findings": [_finding(f, lang) for f in cluster.get("findings") or []
                             if isinstance(f, dict) and f.get("severity") in SERIOUS],
        "events": events,
        "timeline_svg": timeline_svg(timeline, rows, tl_words),
        "quiet": _fill(t["others_quiet"], n=len(quiet), hosts=", ".join(quiet)) if quiet and timeline else "",
        "inputs": _inputs_facts(analysis.get("inputs"), job, t),
        "window": _window_text(analysis.get("window"), job, analysis.get("generated"), t),
    }
