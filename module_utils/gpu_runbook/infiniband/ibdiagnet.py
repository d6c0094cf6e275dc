# SPDX-License-Identifier: Apache-2.0
"""``ibdiagnet`` (NVIDIA's InfiniBand fabric diagnostic, ibutils2; its console output and
``ibdiagnet2.log``) -> a fabric scan's result.

ibdiagnet has no public source; its output is as NVIDIA's ibdiagnet User Manual (v2.x) shows
it: a ``Running version:`` head, then one section per stage under a rule of dashes (its name on
the next line: ``Discovery``, ``Lids Check``, ``Links Check``, ``Subnet Manager``, ``Port
Counters``, ``Nodes Information``, ``Speed / Width checks``, ``Temperature Sensing`` ...), each
line marked ``-I-`` (information), ``-W-`` (a warning) or ``-E-`` (an error; a check that
failed says ``... finished with errors``, and the lines under it name the node, port and what
was wrong: ``Sxxx/Nxxx/P1/3/1 - "link_down_counter" increased during the run``); at the end a
``Summary`` table: ``-I- Stage  Warnings  Errors  Comment`` and a row per stage. The older
ibdiagnet (v1, ibutils) marks its rules too: ``-I---...---``, ``-I- IPoIB Subnets Check``, ``-I---...``;
its head is ``Loading IBDIAGNET from: /usr/lib/ibdiagnet1.5.7`` and its summary ``-I- Stages Status
Report:`` over ``STAGE  Errors Warnings`` (errors first) and a row per stage.

What it tells: whether each stage of the scan found errors in the fabric. The fabric is other
nodes' links too, so a stage's errors are one warning of the fabric (rung none: read the lines
it names, act on those ports), never a verdict on the node that ran the scan. A stage whose
errors are firmware versions that differ across the fabric (``Nodes Information``'s FW check)
or the reports ibdiagnet writes is said at info. Warnings (vendor MADs unanswered, duplicated
node descriptions) are counted, not raised. The scan is healthy only when its Summary was read
and every stage shows 0 errors; an output that ends before its Summary says which stages ran,
not that the fabric is clean."""

import re

from ..findings import finding, iter_lines
from .model import guarded

FORMAT = "ibdiagnet"
# where its output opens: the version head, or its Summary's header (an excerpt of the end)
HEAD_RE = re.compile(r"^Running version:[ \t]+\"?IBDIAGNET\b|^Running:[ \t]+ibdiagnet\b|^Loading IBDIAGNET from:")
SUMMARY_RE = re.compile(r"^-I-[ \t]+Stage[ \t]+Warnings[ \t]+Errors[ \t]+Comment[ \t]*$|^-I- Stages Status Report:[ \t]*$")
_V1_ROW_RE = re.compile(r"^[ \t]{1,8}(\S[^\n]{0,80}?)[ \t]{2,}(\d{1,9})[ \t]+(\d{1,9})[ \t]*$")  # errors, warnings
V1_RULE_RE = re.compile(r"^-I-{20,}[ \t]*$")
OPENING = re.compile(HEAD_RE.pattern + "|" + SUMMARY_RE.pattern + "|" + V1_RULE_RE.pattern)
_RULE_RE = re.compile(r"^(?:-I)?-{20,}[ \t]*$")
_MARK_RE = re.compile(r"^-([IWE])-[ \t]+(.*)$")
_ROW_RE = re.compile(r"^-I-[ \t]+(\S[^\n]*?)[ \t]{2,}(\d{1,9})[ \t]+(\d{1,9})(?:[ \t]+(\S[^\n]*?))?[ \t]*$")
_STAGE_NAME_RE = re.compile(r"^[A-Z][\w /()\-]{1,60}$")
# stages whose errors say nothing wrong with a link: firmware versions that differ, the reports written
_INFO_STAGES = ("Nodes Information", "Post Reports Generation")
QUOTED = 3


def belongs(line):
    """ibdiagnet's output holds tables, rules, stage names and its own marked lines: a block of it
    runs until another block or a log line ends it (content/)."""
    return True


def parse_ibdiagnet(text, source="ibdiagnet.txt"):
    """ibdiagnet's output -> (facts, findings); never raises (model.guarded, as every IB parser)."""
    return guarded(FORMAT, _parse, text, source)


def _parse(text, source):
    stages, order, summary, version, v1_summary = {}, [], None, None, False
    stage, after_rule, named, v1 = None, False, False, False
    for lineno, raw in iter_lines(text):
        line = raw.rstrip()
        if not line.strip():
            continue
        if version is None and HEAD_RE.match(line):
            version = line.split(":", 1)[1].strip()[:120]
            continue
        if _RULE_RE.match(line):
            after_rule, named = not named, False  # v1's rule under a stage's name closes its title
            v1 = line.startswith("-I")
            continue
        named = False
        if SUMMARY_RE.match(line):
            summary, v1_summary = {}, line.startswith("-I- Stages")
            stage, after_rule = None, False
            continue
        if summary is not None:
            m = (_V1_ROW_RE if v1_summary else _ROW_RE).match(line)
            if m and m.group(1).strip() not in summary and m.group(1).strip() != "STAGE":
                errors, warnings = (m.group(2), m.group(3)) if v1_summary else (m.group(3), m.group(2))
                summary[m.group(1).strip()] = {"warnings": int(warnings), "errors": int(errors),
                                               "comment": "" if v1_summary else (m.group(4) or "").strip()}
                continue
        if after_rule:
            after_rule = False
            mark = _MARK_RE.match(line)
            name = mark.group(2).strip() if mark and mark.group(1) == "I" and v1 else line.strip()
            if _STAGE_NAME_RE.match(name) and (name != line.strip() or not mark):
                stage, named = name, True
                if stage == "Summary":
                    stage = None
                    continue
                if stage not in stages:
                    stages[stage] = {"errors": [], "warnings": 0, "failed": False}
                    order.append(stage)
                continue
        m = _MARK_RE.match(line)
        if m and stage is not None:
            rec = stages[stage]
            if m.group(1) == "E":
                rec["failed"] = True
                if "finished with errors" not in m.group(2) and len(rec["errors"]) < 64:
                    rec["errors"].append((lineno, m.group(2).strip()))
            elif m.group(1) == "W":
                rec["warnings"] += 1
    if version is None and summary is None and not stages:
        return {}, []
    rows = summary or {}
    facts = {"tool": FORMAT, "version": version, "summary_read": summary is not None, "stages": []}
    # the stages read, then any the Summary names alone (an excerpt of its end)
    for s in order + [s for s in rows if s not in stages]:
        row, seen = rows.get(s, {}), stages.get(s, {"warnings": 0, "failed": False})
        facts["stages"].append({"stage": s, "errors": row.get("errors"),
                                "warnings": row.get("warnings", seen["warnings"]),
                                "failed": seen["failed"] or bool(row.get("errors"))})
    findings = []
    for st in facts["stages"]:
        if not st["failed"]:
            continue
        lines = stages.get(st["stage"], {}).get("errors", [])
        count = st["errors"] if st["errors"] is not None else len(lines)
        quoted = "; ".join(t for _n, t in lines[:QUOTED])
        info = st["stage"] in _INFO_STAGES
        findings.append(finding(
            "ib_fabric_scan_errors",
            "ibdiagnet's %s stage found %s error(s) %s%s" % (
                st["stage"], count or "some",
                "(firmware versions that differ, or the reports it writes: no link fault)" if info else
                "in the fabric (its lines name the nodes and ports to check)", ": " + quoted if quoted else ""),
            severity="info" if info else "warning", evidence=lines[0][1] if lines else "",
            source="%s:%d" % (source, lines[0][0]) if lines else source))
    if summary is None:
        findings.append(finding(
            "ib_fabric_scan_incomplete",
            "the ibdiagnet output ends before its Summary (%d stage(s) read: %s): which stages ran and whether "
            "they found errors is not known" % (len(order), ", ".join(order[:8]) or "none"), source=source))
    return facts, findings
