# SPDX-License-Identifier: Apache-2.0
"""Host verdict: one function from a host's findings to verdict, severity and next rung,
and the one order (``rank_key``) every ranking of findings uses: the host's primary finding,
the finding that explains a job's culprit rank, the job's cause."""

import builtins
import re

from .findings import RUNG_RANK, SEVERITY_RANK, SUSPICION, rank_key, worst_severity  # noqa: F401 (the one order)


def primary_finding(findings):
    """The finding that decides the verdict (None when nothing is at warning or above)."""
    serious = [f for f in findings if SEVERITY_RANK[f["severity"]] >= SEVERITY_RANK["warning"]]
    if not serious:
        return None
    return max(serious, key=rank_key)


def host_verdict(findings):
    """-> {"verdict", "severity", "rung", "primary"} for one host's findings."""
    severity = worst_severity(findings)
    top = primary_finding(findings)
    if top is None:
        return {"verdict": "healthy", "severity": severity, "rung": "none", "primary": None}
    # Among the findings that share the verdict's category and severity, the costliest
    # rung wins: Xid 48 (reset) beside a row-remap failure (RMA) means RMA.
    peers = [f for f in findings
             if f["category"] == top["category"] and f["severity"] == top["severity"]]
    # The rung is always one a finding itself asks for (the taxonomy gives every critical
    # hardware kind a rung); the verdict never invents one its evidence does not name.
    rung = max((f.get("rung") or "none" for f in peers), key=lambda r: RUNG_RANK[r])
    return {"verdict": top["category"], "severity": severity, "rung": rung, "primary": top}


def sort_findings(findings):
    """Most important first: the order a report should list them in."""
    return sorted(findings, key=rank_key, reverse=True)


def code_error(f):
    """A Python exception of the kinds Python raises for a program's own mistakes (its builtin
    LookupError, TypeError, ValueError, AttributeError, NameError, AssertionError, ArithmeticError,
    ImportError, SyntaxError, NotImplementedError, RecursionError and their subclasses: IndexError,
    KeyError, ZeroDivisionError, ModuleNotFoundError ...), not RuntimeError (CUDA's and NCCL's
    errors come as one) nor OSError (the host's)."""
    m = _RAISED_RE.search(f.get("message") or "")
    return bool(m) and m.group(1).rsplit(".", 1)[-1] in _CODE_ERRORS


_RAISED_RE = re.compile(r" raised ([\w.]{1,120})")
_CODE_ERRORS = frozenset(
    name for name, obj in vars(builtins).items() if isinstance(obj, type) and issubclass(obj, (
        LookupError, TypeError, ValueError, AttributeError, NameError, AssertionError, ArithmeticError, ImportError,
        SyntaxError, NotImplementedError, RecursionError)) and not issubclass(obj, (UnicodeError, Warning)))
