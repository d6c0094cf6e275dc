# SPDX-License-Identifier: Apache-2.0
"""What the run read and the time it covers, added to the analysis beside the diagnosis."""

import re

from .. import __version__
from ..hostresult import malformed_message, result_problem
from ..timeutil import to_utc


def describe_inputs(results, job_logs=None, log_problems=None):
    """What the run read: per host the sources read and not read (with why), whether the
    host was reached; the job's log files (name, lines) and the problems reading them. Call it
    after the logs were parsed: a streamed log's lines are counted as it is read."""
    hosts = {}
    for host, result in sorted((results or {}).items()):
        malformed = result_problem(result)  # that host's error, not the report's
        result = {"msg": malformed_message(malformed)} if malformed else result if isinstance(result, dict) else {}
        facts = (result.get("ansible_facts") or {}).get("gpu_health")
        if not isinstance(facts, dict):
            why = result.get("msg") or ("unreachable" if result.get("unreachable") else "no result")
            hosts[str(host)] = {"reached": False, "why": re.sub(r"\s+", " ", str(why)).strip()[:300],
                                "read": [], "not_read": []}
            continue
        read, not_read = [], []
        for name, p in sorted((facts.get("probes") or {}).items()):
            if str(name).startswith("_") or not isinstance(p, dict):
                continue
            if p.get("ok") and p.get("usable", True):
                read.append(str(name))
            else:
                why = p.get("error") or p.get("kind") or ("read, nothing usable" if p.get("ok") else "failed")
                not_read.append({"source": str(name), "why": re.sub(r"\s+", " ", str(why)).strip()[:200]})
        hosts[str(host)] = {"reached": True, "mode": facts.get("mode"), "read": read, "not_read": not_read,
                            "window": facts.get("window")}
    logs, problems = [], [str(p) for p in log_problems or []]
    for name, text in sorted((job_logs or {}).items()):
        if isinstance(text, str):
            logs.append({"name": str(name), "lines": text.count("\n") + (0 if text.endswith("\n") or not text else 1)})
        elif hasattr(text, "lines"):  # a line source the parser streamed (textio.TextLines): it counted them
            logs.append({"name": str(name), "lines": text.lines})
            problems.extend(str(p) for p in getattr(text, "problems", None) or ())
    return {"hosts": hosts, "job_logs": {"read": logs, "problems": problems}}


def describe_window(inputs, slurm_job=None, generated=None):
    """The time the evidence covers: the kernel logs' start (the same on every host, or the
    earliest), the job's start, and when the report was made."""
    starts = sorted({(h.get("window") or {}).get("start") or (h.get("window") or {}).get("since")
                     for h in (inputs or {}).get("hosts", {}).values() if isinstance(h, dict)} - {None},
                    key=lambda v: to_utc(v) or to_utc("9999-01-01"))
    return {"since": starts[0] if starts else None, "job_start": (slurm_job or {}).get("start"),
            "generated": generated}


def annotate(analysis, inputs=None, window=None):
    """Add what the reports show beside the diagnosis: the tool's version, the inputs read
    and the time window (keys ``tool``, ``inputs``, ``window``); returns ``analysis``."""
    analysis["tool"] = {"name": "gpu-runbook", "version": __version__}
    if inputs is not None:
        analysis["inputs"] = inputs
    if window is not None:
        analysis["window"] = window
    return analysis
