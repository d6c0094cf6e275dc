"""From raw sources to one host's analysis: dispatch to the parsers, turn probe errors
into findings, decide the verdict. Pure: the caller (module, CLI, tests) supplies text.

``sources`` maps a canonical source name to its text, or to a probe error
``{"error": "message", "kind": "missing|timeout|denied|failed|unreadable", "cmd": str}``.
"""

from .findings import make_finding, worst_severity
from .probe_findings import probe_error_findings
from .sources import (BUG_REPORT, COMPUTE_APPS, HOST_SOURCES, IB_SOURCES, KERNEL_LOG,  # noqa: F401
                      NVSMI_SOURCES, detect_source)
from .verdict import host_verdict, sort_findings

SCHEMA = "gpu-runbook/analysis/v1"


def _parsers():
    # Imported lazily so one broken parser cannot take the others down at import time.
    from . import infiniband, kernlog, nvsmi
    return kernlog, nvsmi, infiniband


def _safe(fn, name, *args, **kwargs):
    """Run a parser; a bug in a parser becomes a finding, never a traceback."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 -- bad input is normal input
        return {}, [make_finding(
            "unknown", "warning", "parser_error",
            "%s could not be parsed: %s: %s" % (name, type(exc).__name__, exc),
            "Attach the raw %s to a bug report for gpu-runbook." % name, source=name)]


def analyze_host(sources, host=None, since=None, expected_gpus=None, expected_ib_rate=None,
                 expected_ib_devices=None, ib_thresholds=None, year=None, parsed=None):
    """-> one host's analysis dict (the ``hosts[]`` item of the analysis schema, plus facts).
    ``parsed``: {source name: (facts, findings)} already parsed elsewhere (a streamed big log)."""
    kernlog, nvsmi, infiniband = _parsers()
    sources = dict(sources)
    facts = {}
    findings = []
    probes = {}

    if isinstance(sources.get(BUG_REPORT), str):
        from .bugreport import split_bug_report
        parts, bf = _safe(lambda t: (split_bug_report(t), []), BUG_REPORT, sources.pop(BUG_REPORT))
        findings.extend(bf)
        for k, v in (parts or {}).items():
            sources.setdefault(k, v)

    for name, value in sources.items():
        if isinstance(value, dict):
            probes[name] = {"ok": False, "kind": value.get("kind"), "error": value.get("error")}
            findings.extend(probe_error_findings(name, value, expected_gpus=expected_gpus))
        elif value is not None:
            probes[name] = {"ok": True}

    def text(name):
        v = sources.get(name)
        return v if isinstance(v, str) else None

    # GPU: the richest nvidia-smi form present wins; the others add nothing new.
    for name in NVSMI_SOURCES:
        t = text(name)
        if t is not None:
            f, fs = _safe(nvsmi.parse_nvidia_smi, name, t, source=name, expected_gpus=expected_gpus)
            facts["gpu"] = f
            findings.extend(fs)
            break
    t = text(COMPUTE_APPS)
    if t is not None:
        apps, fs = _safe(lambda x: (nvsmi.parse_compute_apps_csv(x, source=COMPUTE_APPS), []), COMPUTE_APPS, t)
        facts["compute_apps"] = apps if isinstance(apps, list) else []
        findings.extend(fs)

    t = text(KERNEL_LOG)
    if parsed and KERNEL_LOG in parsed:
        facts["kernel_log"], fs = parsed[KERNEL_LOG]
        probes[KERNEL_LOG] = {"ok": True}
        findings.extend(fs)
    elif t is not None:
        f, fs = _safe(kernlog.parse_kernel_log, KERNEL_LOG, t, source=KERNEL_LOG, since=since, year=year)
        facts["kernel_log"] = f
        findings.extend(fs)

    ib_kw = {"expected_rate": expected_ib_rate, "expected_devices": expected_ib_devices,
             "thresholds": ib_thresholds}
    ib_parsers = (("ib-sysfs.txt", "parse_ib_sysfs"), ("ibstat.txt", "parse_ibstat"),
                  ("ibv_devinfo.txt", "parse_ibv_devinfo"))
    for name, fn in ib_parsers:
        t = text(name)
        if t is not None and hasattr(infiniband, fn):
            # sysfs is authoritative; ibstat/ibv_devinfo only when it is absent
            f, fs = _safe(getattr(infiniband, fn), name, t, source=name, **ib_kw)
            facts["ib"] = f
            findings.extend(fs)
            break
    for name, fn in (("perfquery.txt", "parse_perfquery"), ("iblinkinfo.txt", "parse_iblinkinfo")):
        t = text(name)
        if t is not None and hasattr(infiniband, fn):
            f, fs = _safe(getattr(infiniband, fn), name, t, source=name, thresholds=ib_thresholds)
            facts[name.split(".")[0]] = f
            findings.extend(fs)

    if host is None:
        host = (facts.get("kernel_log") or {}).get("hostname")
    findings = sort_findings(findings)
    v = host_verdict(findings)
    return {
        "host": host or "unknown",
        "verdict": v["verdict"],
        "severity": v["severity"],
        "rung": v["rung"],
        "findings": findings,
        "facts": facts,
        "probes": probes,
    }


def unreachable_host(host, message):
    """A host we could not reach is itself a prime suspect (dead or wedged node)."""
    f = make_finding(
        "unknown", "critical", "host_unreachable",
        "host did not answer: %s" % (message or "unreachable"),
        "Check the node's console/BMC; drain it in Slurm until it answers.",
        evidence=(message or "")[:300], source="ansible", rung="drain")
    return {"host": host, "verdict": "unknown", "severity": "critical", "rung": "drain",
            "findings": [f], "facts": {}, "probes": {}}


def exit_status(hosts):
    """CLI exit status: 0 clean, 1 warnings, 2 critical."""
    worst = worst_severity([{"severity": h["severity"]} for h in hosts]) if hosts else "ok"
    return {"ok": 0, "info": 0, "warning": 1, "critical": 2}[worst]

