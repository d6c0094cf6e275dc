# SPDX-License-Identifier: Apache-2.0
"""What the last reader of a line keeps: messages an emitter's vocabulary explains, and
error-like lines nothing explains. One record keeper and one way to make findings of them,
for the job's lines (joblog/emitter_lines.py) and the node's (kernlog/nodelines.py).

- A vocabulary message is one record per message of the table (count, first line, ranks);
  benign messages are explained and keep nothing. A message whose kind is one a dedicated
  reader makes is that reader's (it saw the line and judged it): no record here.
- An error-like line (``ERROR_LIKE``, and not a zero count such as 'errors: 0') is one record
  per line shape (digits as 0), at most ``MAX_KEPT`` shapes (the rest counted), quoted in one
  ``unexplained_errors`` finding: not understood, so never healthy.
"""

import re

from . import BENIGN, FM_UNLISTED, NVML_GONE

# A line that says something failed. Words, not substrings: 'val_error' and 'errors: 0' in a
# metrics line are not; 'Warning' lines are not (a warning is not a failure).
ERROR_LIKE = re.compile(r"(?<![\w./-])(?:[Ee]rror|ERROR|[Ee]xception|[Ff]atal|FATAL|[Ff]ailed|FAILED|[Ff]ailure|"
                        r"FAILURE|[Aa]borted|[Pp]anic|[Ss]egmentation fault|core dumped|[Kk]illed|timed out|"
                        r"TIMEOUT)(?![\w-])")
# error words in lines that report none: counters at zero ('failed: 0', JSON's '"failed": 0'), 'no errors',
# 'error_id: 0'; and the
# heads a remote shell prints around a command's output (Ansible's 'node | FAILED | rc=1 >>',
# pdsh's 'pdsh@mgmt: node: ssh exited with exit code 1'): a grep that matched nothing exits 1
NOT_AN_ERROR = re.compile(r"\b(?:[0]|no|No|without) (?:errors?|failures?)\b|\b(?:errors?|failures?|failed)"
                          r"[\"']?[ =:]{1,3}0\b|\bsuccess(?:ful(?:ly)?)?\b|^\S{1,253} \| (?:FAILED|UNREACHABLE)!? \| |"
                          # advice that names a failure to avoid ('... so that checkpointing will not error out')
                          r"\b(?:will|would|does|do|should|shall)(?: not|n't) (?:error|fail)\b|"
                          r"^pdsh@\S{1,253}: \S{1,253}: ssh exited with exit code", re.I)
# NVML's return strings for NVML_ERROR_GPU_IS_LOST (15) and NVML_ERROR_RESET_REQUIRED (16), as any
# caller quotes nvmlErrorString (Slurm's 'NVML: Failed to get usage(15): GPU is lost', DCGM's
# nvml_error_strings.h): the GPU's state, whichever program's NVML call met it
_NVML_GPU_GONE = re.compile("|".join(r"\b%s\b" % re.escape(text) for text, _number in NVML_GONE))
MAX_KEPT = 512   # messages or line shapes kept (first ones win); more are counted
QUOTED = 5       # distinct unexplained lines quoted in the finding's message
_DIGITS = re.compile(r"\d+")


def error_like(text):
    return bool(ERROR_LIKE.search(text)) and not NOT_AN_ERROR.search(text)


class Seen(object):
    """The records of one reader (one job, or one host's log)."""

    def __init__(self):
        self.messages = {}     # (table, file, line, format) -> record
        self.unexplained = {}  # line shape -> record
        self.more = 0          # error-like lines beyond MAX_KEPT shapes

    def message(self, tbl, row, src, evidence, rank=None, when=None):
        """A line ``row`` of ``tbl`` explains (a vocab.match_line result)."""
        if row["kind"] == BENIGN:
            return
        key = (tbl.name, row["file"], row["line"], row["format"])
        rec = self.messages.get(key)
        if rec is None:
            if len(self.messages) >= MAX_KEPT:
                return
            rec = self.messages[key] = {"emitter": tbl.emitter, "table": tbl.name, "row": row, "count": 0,
                                        "ranks": [], "src": src, "evidence": evidence, "first": when, "last": when}
        rec["count"] += 1
        rec["last"] = when or rec["last"]
        if rank is not None and rank not in rec["ranks"] and len(rec["ranks"]) < 64:
            rec["ranks"].append(rank)

    def line(self, text, src, evidence):
        """An error-like line nothing explains."""
        shape = _DIGITS.sub("0", text.strip())[:300]
        rec = self.unexplained.get(shape)
        if rec is None:
            if len(self.unexplained) >= MAX_KEPT:
                self.more += 1
                return
            rec = self.unexplained[shape] = {"count": 0, "src": src, "evidence": evidence}
        rec["count"] += 1

    def findings(self, quoted=(), cut=lambda s: s, covered=()):
        """The findings of the records; a line a dedicated finding already quotes (``quoted``:
        their evidence), or a message of a kind a dedicated reader already found (``covered``:
        the detail lines of an event its own reader reported), is not said twice. ``cut``: how
        evidence is shortened."""
        from ..findings import finding
        from ..taxonomy import KINDS
        from ..taxonomy.kinds_vocab import BY_CATEGORY
        from ..timeutil import span_text
        quoted = set(quoted)
        out = []
        # a Fabric Manager line in no public list says no more than a listed one of the same log
        # (NV_WARN_NOTHING_TO_DO: no NVSwitch here, so the start script's 'failed! Exit code: 1' follows)
        fm_listed = any(r["table"] == "fabricmanager" and r["row"]["file"] != FM_UNLISTED[0]
                        for r in self.messages.values())
        for rec in self.messages.values():
            ev = cut(rec["evidence"])
            if ev in quoted or rec["row"]["kind"] in covered:
                continue
            if fm_listed and rec["table"] == "fabricmanager" and rec["row"]["file"] == FM_UNLISTED[0]:
                continue
            row = rec["row"]
            kind, category, severity, meaning = row["kind"], row["category"], row["severity"], row["meaning"]
            gone = _NVML_GPU_GONE.search(ev) if category in ("driver", "unknown") else None
            if gone:
                # the NVML call failed because the GPU itself is gone: its return value decides, not the caller
                kind, category, severity = BY_CATEGORY["gpu_hardware"], "gpu_hardware", "critical"
                meaning = "%s; NVML returned '%s': the GPU %s" % (
                    meaning or row["format"].strip(), gone.group(0),
                    "fell off the bus" if "lost" in gone.group(0) else "must be reset before it works again")
            if kind not in KINDS or KINDS[kind]["rung"] is None:
                kind = BY_CATEGORY.get(category, "logged_error")
            ranks = sorted(rec["ranks"])
            # wall-clock times only (a dmesg line's seconds since boot are no time of day)
            times = {"first": rec["first"], "last": rec["last"]} if isinstance(rec["first"], str) else {}
            when = (", " + span_text(rec["count"], rec["first"], rec["last"]) if times
                    else " (%d lines)" % rec["count"] if rec["count"] > 1 else "")
            out.append(finding(
                kind, "%s: %s%s%s" % (rec["emitter"], meaning or row["format"].strip(), when,
                                      " on rank(s) %s" % ",".join(str(r) for r in ranks[:16]) if ranks else ""),
                category=category, severity=severity, name=rec["emitter"], evidence=ev,
                source=rec["src"], rank=ranks[0] if len(ranks) == 1 else None, xid=row.get("xid"),
                count=rec["count"] if rec["count"] > 1 or times else None, **times))
        lines = [r for r in self.unexplained.values() if cut(r["evidence"]) not in quoted]
        if lines:
            total = sum(r["count"] for r in lines) + self.more
            quote = "; ".join("%r%s" % (cut(r["evidence"]).strip()[:160], " (x%d)" % r["count"] if r["count"] > 1
                                        else "") for r in lines[:QUOTED])
            out.append(finding(
                "unexplained_errors", "%d error-like line(s) (%d distinct) that no rule explains: %s%s" % (
                    total, len(lines) + (1 if self.more else 0), quote,
                    "; and %d more" % (len(lines) - QUOTED) if len(lines) > QUOTED else ""),
                evidence=cut(lines[0]["evidence"]), source=lines[0]["src"], count=total))
        return out
