# SPDX-License-Identifier: Apache-2.0
"""report.md: the report's facts as Markdown that parses into what it says -- tables set off
by blank lines, and every host name or log line escaped so it cannot become markup."""

import re

from .facts import _s, report_facts


_MD_ALWAYS = set("\\`*[]<>|~")


def md_text(value):
    """Plain text -> Markdown that renders as that text: one line, markup characters
    escaped (a '_' only where it could start or end emphasis, '&' only before an entity)."""
    s = re.sub(r"\s+", " ", _s(value)).strip()
    out = []
    for i, ch in enumerate(s):
        prev, nxt = s[i - 1] if i else " ", s[i + 1] if i + 1 < len(s) else " "
        if ch in _MD_ALWAYS:
            out.append("\\" + ch)
        elif ch == "_" and not (prev.isalnum() and nxt.isalnum()):
            out.append("\\_")
        elif ch == "&" and re.match(r"&#?\w+;", s[i:]):
            out.append("\\&")
        else:
            out.append(ch)
    return "".join(out)


def md_rich(value):
    """Text of our own (an action) whose `code` parts are code spans; the rest escaped."""
    parts = _s(value).split("`")
    if len(parts) % 2 == 0:  # unbalanced: all of it is plain text
        return md_text(value)
    out = []
    for i, part in enumerate(parts):
        if i % 2:
            out.append(md_code(part))
        elif part.strip():  # md_text trims: keep the spaces that part had around the code
            out.append((" " if part[0].isspace() else "") + md_text(part) + (" " if part[-1].isspace() else ""))
        else:
            out.append(" " if part else "")
    return "".join(out)


def md_code(value, in_table=False):
    """Text -> an inline code span that holds it verbatim (a fence longer than any run of
    backticks inside); in a table cell '|' is escaped, as GFM requires even in code."""
    s = re.sub(r"\s+", " ", _s(value)).strip()
    fence = "`" * (max((len(m) for m in re.findall(r"`+", s)), default=0) + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    if in_table:
        s = s.replace("|", "\\|")
    return "%s%s%s%s%s" % (fence, pad, s, pad, fence)


class Code(str):
    """A table cell shown as code."""


def _cell(value):
    return md_code(value, in_table=True) if isinstance(value, Code) else md_text(value)


def md_table(header, rows):
    """A GFM table with a blank line before and after, so nothing around it joins it."""
    out = ["", "| " + " | ".join(md_text(h) for h in header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return out + [""]


def _md_finding_head(f):
    """'**[critical] Xid 79** GPU 0000:75:00.0: message' -- the name left out when the
    message already starts with it."""
    lead = "[%s]" % f["severity"]
    if f["message"].startswith(f["name"]):
        return "**%s** %s" % (md_text(lead), md_text(f["message"]))
    return "**%s %s**%s: %s" % (md_text(lead), md_text(f["name"]), " " + md_text(f["target"]) if f["target"] else "",
                                md_text(f["message"]))


def render_markdown(analysis, lang="en", facts=None):
    """report.md; ``facts``: report_facts(analysis, lang) when the caller already has it
    (write_reports makes it once for both pages: it builds the remediation plan)."""
    r = facts if facts is not None else report_facts(analysis, lang)
    t = r["t"]
    out = ["# " + md_text(t["title"]), "",
           md_text("%s · %s: %s · %s: %d · %s: %d" % (r["version"], t["generated"], r["generated"], t["hosts"],
                                                      r["n_hosts"], t["suspects"], r["n_suspects"])),
           "", md_text("%s: %s" % (t["window"], r["window"]))]
    job = r["job"]
    if job:
        out += ["", "## " + md_text(t["job"])]
        out += md_table([t["field"], t["value"]], [[t["job_id"], job["job_id"]], [t["verdict"], job["verdict"]],
                                   [t["decided_by"], job["decided_by"]], [t["how_sure"], job["how_sure"]], [t["failed_at"], job["failed_at"]],
                                   [t["collective"], job["collective"]], [t["timed_out"], job["timed_out"]]])
        if job["chain"]:
            out += ["### " + md_text(t["culprit_chain"]), ""]
            out += ["- " + " → ".join(md_text(s) for s in chain) for chain in job["chain"]]
        out += ["", "### " + md_text(t["job_findings"])]
        if job["findings"]:
            out += md_table([t["severity"], t["finding"], t["rank"], t["message"], t["seen"], t["evidence"],
                             t["source"]],
                            [[f["severity"], f["name"], f["rank"], f["message"], f["seen"], Code(f["evidence"]),
                              f["source"]] for f in job["findings"]])
        else:
            out += ["", md_text(t["no_job_findings"])]
        if job["nccl_errors"]:
            out += ["### " + md_text(t["nccl_errors"])]
            out += md_table([t["rank"], t["host"], t["peer"], t["hca"], t["error"], t["times"], t["source"]],
                            [[e["rank"], e["host"], e["peer"], e["hca"], e["error"], str(e["times"]), e["source"]]
                             for e in job["nccl_errors"]])
        if job["rate_text"]:
            out += ["", "### " + md_text(t["rate"]), "", md_text(job["rate_text"])]
    out += ["", "## " + md_text(t["suspect_hosts"])]
    if r["suspects"]:
        out += md_table([t["host"], t["verdict"], t["how_sure"], t["severity"], t["next"], t["command"]],
                        [[s["host"] + (" (%s)" % s["outside"] if s["outside"] else ""), s["verdict"], s["how_sure"],
                          s["severity"], s["rung"], Code(s["command"])] for s in r["suspects"]])
    else:
        out += ["", md_text(t["none"]), ""]
    if r["healthy"]:
        out += [md_text("%s (%d): %s" % (t["healthy"], len(r["healthy"]), ", ".join(r["healthy"]))), ""]
    if r["cluster_findings"]:
        out += ["## " + md_text(t["cluster"]), ""]
        out += ["- **%s** %s" % (md_text(f["severity"]), md_text(f["message"])) for f in r["cluster_findings"]]
        out += [""]
    for s in r["suspects"]:
        out += ["### %s: %s → %s" % (md_text(s["host"]), md_text(s["verdict"]), md_text(s["rung"])), ""]
        out += ["- **%s**: %s" % (md_text(t["how_sure"]), md_text(s["how_sure"])),
                "- **%s**: %s" % (md_text(t["command"]), md_code(s["command"])),
                "- **%s**: %s: %s" % (md_text(t["plan"]), md_text(s["decision"]), md_text(s["why"]))]
        for f in s["findings"]:
            out.append("- " + _md_finding_head(f))
            if f["seen"] != "-" and f["seen"] not in f["message"]:
                out.append("  - %s: %s" % (md_text(t["seen"]), md_text(f["seen"])))
            if f["counters"] != "-":
                out.append("  - %s: %s" % (md_text(t["counters"]), md_text(f["counters"])))
            out.append("  - %s: %s (%s)" % (md_text(t["evidence"]), md_code(f["evidence"]), md_text(f["source"])))
            out.append("  - %s: %s" % (md_text(t["action"]), md_rich(f["action"])))
        out.append("")
    out += ["## " + md_text(t["timeline"]), ""]
    if r["events"]:
        out += [md_text(t["timeline_md"])]
        out += md_table([t["time"], t["host"], t["event"]],
                        [[e["time"], e["host"], ("%s: %s" % (e["mark"], e["text"])) if e["mark"] else e["text"]]
                         for e in r["events"]])
        if r["quiet"]:
            out += [md_text(r["quiet"]), ""]
    else:
        out += [md_text(t["timeline_none"]), ""]
    out += ["## " + md_text(t["inputs"])]
    if r["inputs"]["hosts"]:
        out += md_table([t["host"], t["read"], t["not_read"]], [[i["host"], i["read"], i["not_read"]]
                                                               for i in r["inputs"]["hosts"]])
    else:
        out += [""]
    out += ["- %s: %s" % (md_text(t["job_logs"]), md_text(r["inputs"]["job_logs"])),
            "- %s: %s" % (md_text(t["problems"]), md_text(r["inputs"]["problems"])), ""]
    return "\n".join(out)
