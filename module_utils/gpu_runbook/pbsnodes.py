# SPDX-License-Identifier: Apache-2.0
"""PBS's ``pbsnodes`` (OpenPBS / PBS Pro): what the scheduler says of a node, the Slurm
``scontrol show node`` of PBS sites. Known from OpenPBS's source (openpbs/openpbs cd7ab5eda,
src/cmds/pbsnodes.c; licence AGPL-3.0, only the output layout and state words are used):

- ``pbsnodes -l`` lists the nodes marked down or offline, one per line: ``printf("%-20s %s
  %s\\n", name, state, comment)``; the state is a comma-joined list of the node's state words;
- the default long form (``pbsnodes -a``, ``pbsnodes NODE``) prints the node's name alone, then
  each attribute as ``"     %s = %s"`` (``state = offline``, ``comment = ...``).

The state words are pbs_internal.h's ND_* values (STATES). A node ``down`` (the server lost its
MoM: its comment is the server's own "node down: <why>"), ``state-unknown``, ``unresolvable`` or
``Stale`` is a node failure; an ``offline`` node was taken out of service by an admin or a hook,
and its comment, the site's own note, is read as a Slurm drain reason is (NHC's words, an Xid it
names: slurm.reason_finding). A node PBS runs jobs on says nothing wrong."""

import re

from .findings import finding
from .slurm import reason_finding

# src/include/pbs_internal.h "node-attribute values (state,ntype)": ND_free ... ND_sleep
STATES = ("free", "offline", "offline_by_mom", "down", "Stale", "job-busy", "job-exclusive", "resv-exclusive",
          "job-sharing", "busy", "state-unknown", "provisioning", "wait-provisioning", "maintenance", "initializing",
          "unresolvable", "sleep")
_FAILED = ("down", "state-unknown", "unresolvable", "Stale")
_OUT = _FAILED + ("offline", "offline_by_mom")
_STATE = r"(?:%s)" % "|".join(re.escape(s) for s in sorted(STATES, key=len, reverse=True))
# one row of pbsnodes -l: a node marked down or offline (its state names one of those words)
LIST_ROW_RE = re.compile(r"^(?P<node>[A-Za-z0-9][\w.\-]{0,252}) {1,40}(?P<state>%s(?:,%s){0,8})(?:[ \t]+(?P<comment>"
                         r"\S[^\n]{0,1000}))?\s*$" % (_STATE, _STATE))
_ATTR_RE = re.compile(r"^ {2,8}(?P<key>[A-Za-z_][\w.]{0,80}) = (?P<val>[^\n]{0,4000})$")
_NAME_RE = re.compile(r"^(?P<node>[A-Za-z0-9][\w.\-]{0,252})\s*$")


# what may open a block of pbsnodes' text (content/; opens() decides): a row of -l, a node's name
OPENING = re.compile(r"^[A-Za-z0-9][\w.\-]{0,252}(?: {1,40}(?:[\w\-]{1,30},){0,8}(?:down|offline|state-unknown|"
                     r"unresolvable|Stale)\b|\s*$)")


def opens(line, after):
    return is_list_row(line) or opens_long(line, after)


def _list_row(line):
    """The match of a row of -l, else None: "%-20s %s %s" pads the name to 20 columns, so the state
    starts at column 21 or later, and -l lists only nodes down or offline."""
    m = LIST_ROW_RE.match(line)
    return m if m and m.start("state") >= 21 and any(s in _OUT for s in m.group("state").split(",")) else None


def is_list_row(line):
    return _list_row(line) is not None


def opens_long(line, after):
    """The node's name over its indented ``Mom = ...`` / ``state = ...`` attributes."""
    return bool(_NAME_RE.match(line)) and bool(after) and bool(
        re.match(r"^ {2,8}(?:Mom|ntype|state|pcpus|resources_available\.\w{1,40}) = ", after[0]))


def belongs(line):
    """A line of pbsnodes' output: a row of -l, an attribute, or the next node's name (a name with
    a digit in it: a lone word such as 'Killed' after the listing is another program's line)."""
    return not line.strip() or is_list_row(line) or bool(_ATTR_RE.match(line)) or (
        bool(_NAME_RE.match(line)) and any(c.isdigit() for c in line))


def node_records(text):
    """pbsnodes text -> [(node, {"state", "comment", "line": what to quote, "lines": its line
    indices})] in the order listed; [] when none."""
    out, current = [], None
    lines = text.split("\n")  # (the indices host_parts keeps: split as it splits)
    for i, line in enumerate(lines):
        line = line.rstrip("\r")
        m = _list_row(line)
        if m:
            out.append((m.group("node"), {"state": m.group("state"), "comment": m.group("comment") or "",
                                          "line": line, "lines": [i]}))
            current = None
            continue
        if opens_long(line, [x.rstrip("\r") for x in lines[i + 1:i + 2]]):
            current = {"state": "", "comment": "", "line": "", "lines": [i]}
            out.append((line.strip(), current))
            continue
        a = _ATTR_RE.match(line)
        if a and current is not None:
            current["lines"].append(i)
            if a.group("key") in ("state", "comment"):
                current[a.group("key")] = a.group("val").strip()
                current["line"] = (current["line"] + " " + line.strip()).strip()
    return out


def host_parts(text):
    """-> [(node, text)]: each listed node's lines, the others blank (line numbers stay the file's;
    a node listed twice keeps both), as autopilot.host_parts gives a report's sections."""
    lines = text.split("\n")
    keep = {}
    for node, rec in node_records(text):
        keep.setdefault(node, set()).update(rec["lines"])
    return [(node, "\n".join(x if i in idx else "" for i, x in enumerate(lines)) + "\n") for node, idx in keep.items()]


def parse_pbsnodes(text, source="pbsnodes.txt"):
    """pbsnodes text of one node (capture.split_hosts gives each node its own) -> (facts,
    findings): the node's state and comment, read as the module's docstring says."""
    records = node_records(text)
    if not records:
        return {}, []
    out = []
    for node, rec in records:
        states = [s for s in rec["state"].split(",") if s]
        said = "PBS: node %s is %s%s" % (node, rec["state"] or "listed", " (comment: %s)" % rec["comment"]
                                         if rec["comment"] else "")
        ev = rec["line"][:300]
        where = "%s:%d" % (source, rec["lines"][0] + 1)
        if any(s in _FAILED for s in states):
            out.append(finding("logged_node_failure", said, name="PBS", evidence=ev, source=where))
        elif any(s in _OUT for s in states):
            out.append(reason_finding(said, ev, {"reason": rec["comment"]}, where, name="PBS") if rec["comment"]
                       else finding("logged_error", said, name="PBS", evidence=ev, source=where))
    facts = {"pbs_nodes": [{"node": n, "state": r["state"], "comment": r["comment"]} for n, r in records]}
    return facts, out
