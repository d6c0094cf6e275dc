# SPDX-License-Identifier: Apache-2.0
"""The finding: the one record every parser, rule and report speaks.

A finding is a plain dict (JSON-ready, safe to return from an Ansible module):

    {"category": one of CATEGORIES,
     "severity": one of SEVERITIES,
     "kind": short snake_case id of what was seen ("xid", "ib_port_down", ...),
     "xid": int | None,
     "gpu": {"pci": "0000:3b:00.0", "index": int | None, "uuid": str | None} | None,
     "ib": {"device": "mlx5_0", "port": 1} | None,
     "rank": int | None,
     "source": "kern.log:12"            # file (or probe) name and 1-based line
     "evidence": "<the verbatim line>",
     "message": "what was seen, one English sentence",
     "rung": one of RUNGS,              # the ladder rung this finding calls for
     "steps": [step ids],               # the action, as steps of the taxonomy
     "action": "the steps in English",  # (+ the note)
     "note": str | None,                # extra advice kept verbatim in every language
     "name": str | None,                # the subject the kind's meaning names
     # numbers as numbers, only where the finding has them:
     "count": int, "first": ISO 8601 | None, "last": ISO 8601 | None,  # repeated log lines
     "counters": {name: int}, "threshold": number,  # the counters judged, the limit crossed
     "inferred": str}                   # what chose the category when no line states it

Build one with ``finding(kind, message, ...)``: the kind's row in the taxonomy gives its
category, severity, rung and steps. Parsers are pure:
``parse_x(text, source="name") -> (facts: dict, findings: list)``.
"""

import re

from .taxonomy import (CATEGORIES, RUNG_RANK, RUNGS, SEVERITIES, SEVERITY_RANK, action_text,  # noqa: F401
                       kind_info, steps_for)

_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\](?:[^\x07\x1b]|\x1b(?!\]))*\x07")
_PCI_RE = re.compile(
    r"^(?:(?P<dom>[0-9a-fA-F]{4,8}):)?(?P<bus>[0-9a-fA-F]{2}):(?P<dev>[0-9a-fA-F]{2})(?:\.(?P<fn>[0-7]))?$")


def finding(kind, message, evidence="", source="", xid=None, gpu=None, ib=None, rank=None,
            severity=None, category=None, rung=None, steps=None, note=None, name=None,
            count=None, first=None, last=None, counters=None, threshold=None, inferred=None):
    """Build a finding of a declared kind (taxonomy/kinds_*.py).

    Category, severity, rung and the action come from the kind's row; a finding may set its
    own severity, one of the kind's categories, and (only for kinds whose rung is decided per
    finding) its rung and steps. ``note`` is extra English advice kept verbatim in every
    language (NVIDIA's own words for an Xid). ``message`` says what was seen, in English.
    Anything that contradicts the table raises ValueError: a bug, caught by the tests.
    ``count`` (with ``first``/``last``: ISO 8601 times, None when the log had none),
    ``counters`` and ``threshold`` are the numbers the message states, kept as numbers for
    JSON readers; a finding without them has no such keys. ``inferred`` says what chose the
    category when no line states it (the run's phase, its rate): confidence.py weighs it."""
    info = kind_info(kind)
    severity = severity or info["severity"]
    if severity not in SEVERITIES:
        raise ValueError("unknown severity %r" % (severity,))
    category = category or info["category"]
    if category not in info["categories"]:
        raise ValueError("kind %r cannot be category %r" % (kind, category))
    rung, steps = steps_for(kind, rung, steps)
    action = action_text(steps, "en") + (" " + note if note else "")
    out = {
        "category": category, "severity": severity, "kind": kind,
        "xid": xid, "gpu": gpu, "ib": ib, "rank": rank,
        "source": source, "evidence": evidence,
        "message": message, "action": action, "rung": rung,
        "steps": list(steps), "note": note, "name": name,
    }
    if count is not None:
        out.update(count=int(count), first=first, last=last)
    if counters is not None:
        out["counters"] = dict(counters)
    if threshold is not None:
        out["threshold"] = threshold
    if inferred is not None:
        out["inferred"] = inferred
    return out


def never_raise(fn, label, /, *args, **kwargs):
    """Run a parser ``fn(*args, **kwargs) -> (facts, findings)``; a bug in it, on any input,
    becomes one ``parser_error`` finding naming the source ``label``, never a traceback.
    The one guard every parser entry point and the dispatcher use. (Positional-only, so
    ``source=`` and any other keyword pass through to ``fn``.)"""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 -- bad input is normal input
        return {}, [finding("parser_error", "%s could not be parsed: %s: %s"
                            % (label, type(exc).__name__, str(exc)[:200]), source=label)]


def gpu_ref(pci=None, index=None, uuid=None):
    """The ``gpu`` member of a finding, PCI address normalised."""
    return {"pci": normalize_pci(pci) if pci else None, "index": index, "uuid": uuid}


def ib_ref(device, port):
    return {"device": device, "port": int(port) if port is not None else None}


def normalize_pci(addr):
    """'00000000:3B:00.0' / '0000:3b:00' / '3b:00.0' -> '0000:3b:00.0'. Unparseable -> stripped input."""
    if addr is None:
        return None
    a = addr.strip()
    m = _PCI_RE.match(a)
    if not m:
        return a.lower()
    # nvidia-smi prints 8 digits; keep a domain of 0x10000 or more whole (a cut names another GPU)
    dom = "%04x" % int(m.group("dom") or "0", 16)
    return "%s:%s:%s.%s" % (dom.lower(), m.group("bus").lower(), m.group("dev").lower(), m.group("fn") or "0")


# an escape sequence written out as text, not as ESC: rsyslog's control-character escape ('#033[2m',
# $EscapeControlCharactersOnReceive, on by default), caret notation ('^[[0m': cat -v, less, a
# terminal's copy) and a string literal's ('\\033[', '\\x1b[', '\\u001b[': Python's repr, JSON)
_ESC_TEXT_RE = re.compile(r"(?:#033|\^\[|\\033|\\x1[bB]|\\u001[bB])\[[0-9;?]{0,32}[ -/]{0,4}[@-~]")


def _may_hold_written(text):
    # the substrings one of which every _ESC_TEXT_RE match holds: the cheap look before the regex
    return "033[" in text or "[[" in text or "1b[" in text or "1B[" in text


def has_escape(line):
    """Whether ``line`` may hold a terminal escape, as ESC or written out (_ESC_TEXT_RE): cheap
    enough for every line; strip_ansi decides."""
    return "\x1b" in line or _may_hold_written(line)


def strip_ansi(text, written=True):
    """``text`` without terminal escapes: colours, cursor moves, OSC 8 links, and (``written``)
    the same written out as text (_ESC_TEXT_RE). A terminal shows the written ones, so a reader
    that measures a wrapped line's width strips them only after it joined the line."""
    if "\x1b" in text:
        text = _ANSI_RE.sub("", text)
    if written and _may_hold_written(text):
        return _ESC_TEXT_RE.sub("", text)
    return text


# a log pasted into a GitHub issue or a forum: a '> ' quote before it, and file:line
# references the site turned into links ('transport/[net_ib.cc:101](http://net_ib.cc:101)')
_QUOTE_RE = re.compile(r"^ {0,3}(?:> ?){1,4}(?=\S)")
_AUTOLINK_RE = re.compile(r"\[([^\[\]\n]{1,200})\]\((?:https?|mailto):[^()\s]{1,500}\)")


def unpaste(line):
    """A line as the tool printed it, without what a paste into Markdown added to it."""
    if line[:5].lstrip(" ")[:1] == ">":
        line = _QUOTE_RE.sub("", line, count=1)
    if "](" in line:
        line = _AUTOLINK_RE.sub(r"\1", line)
    return line


def iter_lines(text):
    """Yield (lineno, line) with CRLF/CR, ANSI colour and NULs removed; 1-based line numbers."""
    if text is None:
        return
    if "\x1b" in text:
        text = strip_ansi(text)
    for n, line in enumerate(text.splitlines(), 1):
        if "\x00" in line:
            line = line.replace("\x00", "")
        yield n, line.rstrip("\r")


def worst_severity(findings):
    best = "ok"
    for f in findings:
        if SEVERITY_RANK[f["severity"]] > SEVERITY_RANK[best]:
            best = f["severity"]
    return best


def small_int(text, default=None):
    """``text`` as an int when it is 1 to 18 ASCII digits, else ``default``. str.isdigit()
    also accepts '²' and int() refuses a number of 4300 digits: both are log text, not counts."""
    s = text if isinstance(text, str) else ""
    return int(s) if 0 < len(s) < 19 and s.isascii() and s.isdigit() else default


# The field's suspicion order (GPU Xid/ECC -> IB -> the node -> NCCL settings -> code),
# weighted like its priors (~60% GPU, ~30% IB, ~10% code/DataLoader/leak).
SUSPICION = {
    "gpu_hardware": 9, "driver": 8, "ib_network": 7, "unknown": 5, "memory_leak": 4,
    "dataloader": 3, "nccl_config": 3, "nccl_deadlock": 2, "application": 1, "healthy": 0,
}


def rank_key(finding):
    """Sort key: most severe, then what the engine understood before what it did not (lines
    no rule explains decide a verdict only when nothing else does), then most suspect
    category, then the costliest rung; at a tie an Xid (NVIDIA's own diagnosis of the GPU) is
    the best evidence to show."""
    return (SEVERITY_RANK[finding["severity"]], finding.get("kind") != "unexplained_errors",
            SUSPICION.get(finding["category"], 0), RUNG_RANK.get(finding.get("rung") or "none", 0),
            finding.get("xid") is not None)
