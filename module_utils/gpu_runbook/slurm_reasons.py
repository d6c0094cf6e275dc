# SPDX-License-Identifier: Apache-2.0
"""``sinfo -R`` (``--list-reasons``): the nodes Slurm holds out of service and why, as the one
command an on-call runs first. Known from Slurm's own documentation of sinfo's formats (man
sinfo, src/sinfo/opts.c): ``--list-reasons`` prints ``"%20E %9u %19H %N"`` (REASON cut to 20
characters, USER, TIMESTAMP, NODELIST as a hostlist) and with ``--long`` ``"%20E %12U %19H %6t
%N"`` (a STATE column: ``drain``, ``down*`` where ``*`` is a node that does not respond, ...).

Each row becomes each of its nodes' record in ``scontrol show node``'s words (NodeName, State,
Reason [user@time]), so that one reader (slurm.parse_node_findings: Slurm's and NHC's vocabularies,
an Xid the reason names) reads a reason however it was listed. Columns are cut where the header
puts them; a reason sinfo cut to 20 characters is read as cut.

sinfo's listings of node states are read the same way (``state_records``): the default summary
(``"partition:9 ,available:.5 ,time:.10 ,nodes:.6 ,statecompact:.6 ,nodelist:0"``: PARTITION AVAIL
TIMELIMIT NODES STATE NODELIST), ``--long``'s (STATE long, RESERVATION), ``-N`` (NODELIST NODES
PARTITION STATE) and ``-N --long`` (..., REASON last). Their columns hold no blanks but the last
(REASON), so a row is split on blanks by its header's words. A state is written lower case with
one-character suffixes (``drng@``: draining, a reboot asked; ``fail*``: not responding)."""

import re

from .slurm import STATE_SUFFIX, expand_hostlist

HEAD_RE = re.compile(r"^REASON {1,60}USER {1,30}TIMESTAMP {1,30}(?:STATE {1,20})?NODELIST\s*$")
# a row of the default listing without its header ('sinfo -R | grep gpu', '-h'): "%20E %9u %19H %N" puts
# each column at a fixed place (REASON padded or cut to 20, USER to 9, the time's 19 characters)
ROW_RE = re.compile(r"^(?=[^ \n])[^\n]{20} (?=[^ \n])[^\n]{9} (?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d|Unknown {12}) "
                    r"[A-Za-z0-9][\w.\-\[\],]{0,4000}\s*$")
_ROW_COLS = {"USER": 21, "TIMESTAMP": 31, "NODELIST": 51}
# sinfo's %t abbreviations (src/common/slurm_protocol_defs.c node_state_string_compact) -> scontrol's words
_STATES = {"drain": "DRAIN", "drng": "MIXED+DRAIN", "drained": "DRAIN", "draining": "MIXED+DRAIN", "down": "DOWN",
           "fail": "DOWN+FAIL", "failg": "MIXED+FAIL", "maint": "MAINTENANCE", "reboot": "REBOOT_REQUESTED",
           "boot": "REBOOT_ISSUED", "inval": "INVALID_REG", "unk": "UNKNOWN", "npc": "PLANNED", "plnd": "PLANNED",
           "failing": "MIXED+FAIL", "comp": "IDLE+COMPLETING", "resv": "RESERVED", "futr": "FUTURE",
           "pow_dn": "POWERED_DOWN", "powered_dn": "POWERED_DOWN", "pow_up": "POWERING_UP",
           "powring_dn": "POWERING_DOWN", "block": "BLOCKED", "resm": "RESUME", "canc_r": "CANCEL_REBOOT",
           "ext": "EXTERNAL"}
# the header of a listing of node states: its words, STATE and NODELIST among them (src/sinfo/opts.c)
STATE_HEAD_RE = re.compile(r"^\s{0,12}(?=[^\n]{0,300}\bSTATE\b)(?=[^\n]{0,300}\bNODELIST\b)"
                           r"(?:PARTITION|NODELIST|CLUSTER)\b[A-Z_:()/ ]{0,300}$")


def reason_records(text):
    """``sinfo -R`` text -> [(node, its record in scontrol's words)]; [] when it is no such listing."""
    cols, out = None, []
    for line in text.splitlines():
        if HEAD_RE.match(line):
            cols = dict((name, line.index(name)) for name in ("USER", "TIMESTAMP", "STATE", "NODELIST")
                        if re.search(r"\b%s\b" % name, line))
            continue
        c = cols if cols is not None else _ROW_COLS if ROW_RE.match(line) else None
        if c is None or not line.strip() or len(line) <= c["NODELIST"]:
            continue
        reason = line[:c["USER"]].strip()
        user = line[c["USER"]:c["TIMESTAMP"]].strip()
        when = line[c["TIMESTAMP"]:c.get("STATE", c["NODELIST"])].strip()
        state = line[c["STATE"]:c["NODELIST"]].strip() if "STATE" in c else ""
        nodes = line[c["NODELIST"]:].strip()
        if not reason or not nodes or " " in nodes:
            continue
        word = state_word(state) if state else ""
        tail = " [%s@%s]" % (user, when) if user and when else ""
        for node in expand_hostlist(nodes):
            out.append((node, _record(node, word, reason, tail)))
    return out


def _record(node, word, reason, tail=""):
    """A node's record in ``scontrol show node``'s words: its name, its state, its reason."""
    return "NodeName=%s%s\n%s" % (node, " State=%s" % word if word else "",
                                  "   Reason=%s%s\n" % (reason, tail) if reason else "")


def state_word(state):
    """sinfo's ``drng@`` -> scontrol's ``MIXED+DRAIN+REBOOT_REQUESTED``."""
    base = state.rstrip("".join(STATE_SUFFIX))
    word = _STATES.get(base.lower(), base.upper())
    return "+".join([word] + [STATE_SUFFIX[c] for c in state[len(base):] if c in STATE_SUFFIX])


_STATE_CELL_RE = re.compile(r"^[a-z_]{2,14}[*~#!%$@^-]{0,3}$")
_NODES_CELL_RE = re.compile(r"^[\w.\-\[\],]{1,4000}$")


def state_records(text):
    """sinfo's listings of node states -> [(node, its record in scontrol's words)], one per node
    (a node in several partitions once); [] when the text holds no such listing."""
    cols, out, seen = None, [], set()
    for line in text.splitlines():
        if STATE_HEAD_RE.match(line):
            cols = line.split()
            continue
        if cols is None or not line.strip():
            continue
        row = dict(zip(cols, line.split(None, len(cols) - 1)))
        state, nodes = row.get("STATE", ""), row.get("NODELIST", "").strip()
        if not _STATE_CELL_RE.match(state) or not _NODES_CELL_RE.match(nodes):
            continue
        reason = row.get("REASON", "").strip()
        for node in expand_hostlist(nodes):
            if node not in seen:
                seen.add(node)
                out.append((node, _record(node, state_word(state), reason if reason != "none" else "")))
    return out


def sinfo_records(text):
    """Any of sinfo's listings (reasons, node states) -> [(node, record)]."""
    return reason_records(text) or state_records(text)
