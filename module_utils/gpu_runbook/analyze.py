# SPDX-License-Identifier: Apache-2.0
"""From raw sources to one host's analysis: dispatch to the parsers, turn probe errors
into findings. Pure: the caller (module, CLI, tests) supplies text.

``sources`` maps a canonical source name (sources.py) to its text, or to a probe error
``{"error": "message", "kind": "missing|timeout|denied|failed|unreadable", "cmd": str}``;
``sources["_notes"]`` may list findings the loader itself raised (a truncated capture).

"Healthy" is a claim: a host none of whose sources gave usable evidence gets a
``no_evidence`` finding and is unknown, never healthy.
"""

from .confidence import host_confidence
from .findings import finding, never_raise, worst_severity
from .probe_findings import probe_error_findings
from .sources import (BUG_REPORT, COMPUTE_APPS, FAMILY, IB_COUNTER_SOURCES, IB_LINK_SOURCES, KERNEL_LOG, NAMES,
                      NOTES, NVSMI_SOURCES, SLURM_NODE, PBSNODES, DCGMI, PERFTEST, IBDIAGNET, FI_INFO, NVSMI_TOPO,
                      GPUD, AUTOPILOT, LSPCI, SYSTEMCTL, DCGMI_DMON, SM_UNHEALTHY, K8S_NODE, NCCL_TOPO,
                      PKGLOG, PINGPONG, NVSMI_DMON)
from .verdict import host_verdict, sort_findings

SCHEMA = "gpu-runbook/analysis/v1"

# Findings that say a source was there but gave nothing usable.
_UNUSABLE_KINDS = ("parser_error", "nvsmi_empty", "nvsmi_unparseable", "kernlog_unparseable", "ib_unparseable",
                   "capture_unreadable")


def _parsers():
    # Imported lazily so one broken parser cannot take the others down at import time.
    from . import infiniband, kernlog, nvsmi
    return kernlog, nvsmi, infiniband


def _ib_parser(infiniband, name):
    # Looked up when it runs, inside the guard: the package imports a tool's parser on first use.
    return lambda *args, **kwargs: infiniband.parser(name[:-len(".txt")])(*args, **kwargs)


def _text(sources, name):
    v = sources.get(name)
    return v if isinstance(v, str) else None


def _split_bug_report(sources):
    from .bugreport import split_bug_report
    parts = split_bug_report(sources.pop(BUG_REPORT))
    for k, v in parts.items():
        sources.setdefault(k, v)


def _parse_all(sources, opts, parsed, shown=None):
    """-> (facts, findings, {source: usable}) over every source present. ``shown``: {source:
    the file it was read from}: what findings cite."""
    kernlog, nvsmi, infiniband = _parsers()
    facts, findings, usable = {}, [], {}
    shown = shown or {}

    def run(key, name, fn, *args, **kwargs):
        if "source" in kwargs:
            kwargs["source"] = shown.get(name, kwargs["source"])
        f, fs = never_raise(fn, name, *args, **kwargs)
        facts[key] = f
        findings.extend(of_family(fs, name))
        usable[name] = bool(f) and not any(x["kind"] in _UNUSABLE_KINDS for x in fs)
        return fs

    # GPU: the richest nvidia-smi form present wins; the others add nothing new. It is usable
    # evidence when it shows GPUs, or when it says what is wrong with them.
    name = next((n for n in NVSMI_SOURCES if _text(sources, n) is not None), None)
    if name:
        fs = run("gpu", name, nvsmi.parse_nvidia_smi, sources[name], source=name, expected_gpus=opts["expected_gpus"])
        usable[name] = (usable[name] and bool(facts["gpu"].get("gpus"))) or any(
            f["severity"] in ("warning", "critical") and f["kind"] not in _UNUSABLE_KINDS for f in fs)
    if _text(sources, COMPUTE_APPS) is not None:
        apps, fs = never_raise(lambda t: (nvsmi.parse_compute_apps_csv(t, source=COMPUTE_APPS), []),
                               COMPUTE_APPS, sources[COMPUTE_APPS])
        facts["compute_apps"] = apps if isinstance(apps, list) else []
        findings.extend(fs)
    if parsed and KERNEL_LOG in parsed and not_a_kernel_log(*parsed[KERNEL_LOG]):
        parsed = dict(parsed)
        del parsed[KERNEL_LOG]  # read by content: none of its lines is the kernel's
        sources.pop(KERNEL_LOG, None)
    if parsed and KERNEL_LOG in parsed:
        facts["kernel_log"], fs = parsed[KERNEL_LOG]
        findings.extend(of_family(fs, KERNEL_LOG))
        usable[KERNEL_LOG] = _node_lines_read(facts["kernel_log"])
    elif _text(sources, KERNEL_LOG) is not None:
        run("kernel_log", KERNEL_LOG, kernlog.parse_kernel_log, sources[KERNEL_LOG], source=KERNEL_LOG,
            **_kernel_opts(opts))
        usable[KERNEL_LOG] = usable[KERNEL_LOG] and _node_lines_read(facts["kernel_log"])
    if _text(sources, SLURM_NODE) is not None:  # what Slurm says of the node
        from .slurm import parse_node_findings
        run("slurm_node", SLURM_NODE, parse_node_findings, sources[SLURM_NODE], source=SLURM_NODE)
    if _text(sources, PBSNODES) is not None:  # what PBS says of the node
        from .pbsnodes import parse_pbsnodes
        run("pbs_node", PBSNODES, parse_pbsnodes, sources[PBSNODES], source=PBSNODES)
    if _text(sources, DCGMI) is not None:  # DCGM's own test of the GPUs
        from .dcgm import parse_dcgmi
        run("dcgmi", DCGMI, parse_dcgmi, sources[DCGMI], source=DCGMI)
        usable[DCGMI] = usable[DCGMI] and bool((facts["dcgmi"] or {}).get("tool"))
    if _text(sources, PERFTEST) is not None:  # a link measured under load (ib_write_bw's report)
        from .active.perftest import parse_perftest_report
        run("perftest", PERFTEST, parse_perftest_report, sources[PERFTEST], source=PERFTEST,
            expected_gbps=opts["expected_ib_rate"])
        # a figure, or the state of the port it refused (not Active): a reading of the link
        usable[PERFTEST] = usable[PERFTEST] and any(
            (facts["perftest"] or {}).get(k) is not None for k in ("average_gbps", "port_state"))
    _parse_fabric(sources, run, facts, usable)
    if _text(sources, NVSMI_TOPO) is not None:  # nvidia-smi topo -m: how the GPUs are linked
        from .nvsmi.topo import parse_nvidia_smi_topo
        fs = run("nvsmi_topo", NVSMI_TOPO, parse_nvidia_smi_topo, sources[NVSMI_TOPO], source=NVSMI_TOPO)
        # a matrix read whole whose layout says something (uniform, no NVLink, a GPU below the rest), or
        # one cut or asymmetric: its unknown verdict is said (as ibdiagnet's scan cut before its Summary)
        usable[NVSMI_TOPO] = (facts["nvsmi_topo"] or {}).get("pattern") in ("uniform", "none", "degraded") or any(
            f["kind"] == "nvsmi_topo_unreadable" for f in fs)
    if _text(sources, NCCL_TOPO) is not None:  # NCCL's topology dump: the GPUs and NICs NCCL found
        from .nccl_topo import parse_nccl_topo
        run("nccl_topo", NCCL_TOPO, parse_nccl_topo, sources[NCCL_TOPO], source=NCCL_TOPO)
        usable[NCCL_TOPO] = bool((facts["nccl_topo"] or {}).get("gpus")) and (facts["nccl_topo"] or {}).get("closed")
    if _text(sources, DCGMI_DMON) is not None:  # dcgmi dmon: DCGM's field values per GPU (its "reading": dmon.py)
        from .dcgm.dmon import parse_dcgmi_dmon
        run("dcgmi_dmon", DCGMI_DMON, parse_dcgmi_dmon, sources[DCGMI_DMON], source=DCGMI_DMON)
        usable[DCGMI_DMON] = bool((facts["dcgmi_dmon"] or {}).get("reading"))
    if _text(sources, NVSMI_DMON) is not None:  # nvidia-smi dmon: its ECC and temperature columns are a reading
        from .nvsmi.dmon import parse_nvidia_smi_dmon
        run("nvsmi_dmon", NVSMI_DMON, parse_nvidia_smi_dmon, sources[NVSMI_DMON], source=NVSMI_DMON)
        usable[NVSMI_DMON] = bool((facts["nvsmi_dmon"] or {}).get("reading"))
    if _text(sources, K8S_NODE) is not None:  # what Kubernetes says of the node's GPUs
        from .k8s_node import parse_k8s_node
        run("k8s_node", K8S_NODE, parse_k8s_node, sources[K8S_NODE], source=K8S_NODE)
        usable[K8S_NODE] = (facts["k8s_node"] or {}).get("gpus") is not None or bool(
            (facts["k8s_node"] or {}).get("conditions"))
    if _text(sources, GPUD) is not None:  # a node agent's health checks (GPUd)
        from .gpud import parse_gpud
        run("gpud", GPUD, parse_gpud, sources[GPUD], source=GPUD)
    if _text(sources, AUTOPILOT) is not None:  # IBM Autopilot's health checks of a Kubernetes GPU node
        from .autopilot import parse_autopilot
        run("autopilot", AUTOPILOT, parse_autopilot, sources[AUTOPILOT], source=AUTOPILOT)
    _parse_node_state(sources, run, facts, findings, usable)
    ib_kw = {"expected_rate": opts["expected_ib_rate"], "expected_devices": opts["expected_ib_devices"],
             "thresholds": opts["ib_thresholds"]}
    name = next((n for n in IB_LINK_SOURCES if _text(sources, n) is not None), None)
    if name:  # sysfs is authoritative; ibstat/ibv_devinfo only when it is absent
        run("ib", name, _ib_parser(infiniband, name), sources[name], source=name, **ib_kw)
    for name in IB_COUNTER_SOURCES:
        if _text(sources, name) is not None:
            run(name.split(".")[0], name, _ib_parser(infiniband, name), sources[name], source=name,
                thresholds=opts["ib_thresholds"])
    return facts, findings, usable


def _parse_node_state(sources, run, facts, findings, usable):
    """The node's own state beside its GPUs and HCAs (_parse_all's ``run``): its PCIe links and
    drivers bound, its services, when the driver's packages changed."""
    if _text(sources, LSPCI) is not None:  # the PCIe links of the GPUs and HCAs, the drivers that hold them
        from .lspci import parse_lspci
        run("lspci", LSPCI, parse_lspci, sources[LSPCI], source=LSPCI)
    if _text(sources, SYSTEMCTL) is not None:  # the node's services (Fabric Manager, openibd ...)
        from .systemd_units import parse_systemctl
        run("systemctl", SYSTEMCTL, parse_systemctl, sources[SYSTEMCTL], source=SYSTEMCTL)
        # a unit it knows, running or not, or one that is not installed: a reading of that service
        usable[SYSTEMCTL] = bool(facts["systemctl"]) or any(f.get("name") == "systemd" for f in findings)
    if _text(sources, PKGLOG) is not None:  # when the NVIDIA driver's packages changed (apt, dpkg)
        from .pkglog import parse_pkglog
        run("pkglog", PKGLOG, parse_pkglog, sources[PKGLOG], source=PKGLOG)
        usable[PKGLOG] = False  # which driver is installed or loaded says nothing of how the GPUs are


def _parse_fabric(sources, run, facts, usable):
    """The fabric's tools, read on one node but about many (_parse_all's ``run``): ibdiagnet's scan,
    libfabric's providers, the subnet manager's unhealthy ports."""
    if _text(sources, IBDIAGNET) is not None:  # ibdiagnet's scan of the fabric: each stage's errors
        from .infiniband.ibdiagnet import parse_ibdiagnet
        run("ibdiagnet", IBDIAGNET, parse_ibdiagnet, sources[IBDIAGNET], source=IBDIAGNET)
        # a scan whose stages or Summary were read: a reading of the fabric it reached
        usable[IBDIAGNET] = bool((facts["ibdiagnet"] or {}).get("stages"))
    if _text(sources, FI_INFO) is not None:  # libfabric's providers: the fabric software NCCL's OFI plugin loads
        from .infiniband.fi_info import parse_fi_info
        run("fi_info", FI_INFO, parse_fi_info, sources[FI_INFO], source=FI_INFO)
        # providers read, or fi_getinfo's refusal: a reading of this node's fabric software
        usable[FI_INFO] = usable[FI_INFO] and bool(
            (facts["fi_info"] or {}).get("providers") or (facts["fi_info"] or {}).get("failure") is not None)
    if _text(sources, PINGPONG) is not None:  # a pingpong between two hosts: the link between them works or not
        from .infiniband.pingpong import parse_pingpong
        run("pingpong", PINGPONG, parse_pingpong, sources[PINGPONG], source=PINGPONG)
    if _text(sources, SM_UNHEALTHY) is not None:  # the subnet manager's unhealthy ports: the fabric's sick links
        from .infiniband.sm_unhealthy import parse_sm_unhealthy_ports
        run("sm_unhealthy", SM_UNHEALTHY, parse_sm_unhealthy_ports, sources[SM_UNHEALTHY], source=SM_UNHEALTHY)
        usable[SM_UNHEALTHY] = usable[SM_UNHEALTHY] and bool((facts["sm_unhealthy"] or {}).get("header") or
                                                             (facts["sm_unhealthy"] or {}).get("ports"))


def of_family(findings, name):
    """The findings of the reader of source ``name``, each marked with the family of evidence
    it was read from (sources.FAMILY): what the line or block was, not the file's name (a Xid
    in ``paste.txt`` is the kernel's word). Findings about the capture itself keep none."""
    fam = FAMILY.get(name)
    for f in findings:
        if fam and f.get("kind") not in _NOT_EVIDENCE:
            f.setdefault("family", fam)
    return findings


_NOT_EVIDENCE = ("capture_truncated", "capture_unreadable", "parser_error")


# what a kernel-log scan finds in a text that is not a kernel log (kernlog/scanner.py)
_LOG_ONLY = ("kernlog_unparseable", "kernlog_tz_invalid", "kernlog_window_invalid")


def not_a_kernel_log(facts, findings):
    """True when a capture's kernel-log scan found none of the kernel's lines and nothing else
    (every text of a capture is offered to the kernel-log reader: a job log or a paste of
    other output is not a kernel log, and no kernel log is claimed read); Slurm's lines about a
    node that say nothing above info ('*** STEP 1.0 ON n1 CANCELLED' in a job's log) are the job's."""
    facts = facts or {}
    if facts.get("kernel_lines") != 0 or facts.get("xids"):
        return False
    if facts.get("slurm_lines") and not facts.get("node_lines"):
        # only Slurm's lines about the node: worth a host when one says more than info
        return all(f.get("kind") in _LOG_ONLY or f.get("severity") == "info" for f in findings or ())
    return not facts.get("node_lines") and not facts.get("events") and all(
        f.get("kind") in _LOG_ONLY for f in findings or ())


def _node_lines_read(kl):
    """A kernel-log scan read the node's own lines (the kernel's, or its programs' through syslog
    or a daemon's log): usable evidence. Slurm's lines about the node alone are not."""
    kl = kl or {}
    return bool(kl.get("kernel_lines", kl.get("lines")) or kl.get("node_lines"))


def _kernel_opts(opts):
    kw = {"since": opts["since"], "year": opts["year"]}
    if opts.get("tz") is not None:
        kw["tz"] = opts["tz"]
    return kw


def analyze_host(sources, host=None, since=None, expected_gpus=None, expected_ib_rate=None,
                 expected_ib_devices=None, ib_thresholds=None, year=None, parsed=None, tz=None):
    """-> one host's analysis dict (the ``hosts[]`` item of the analysis schema, plus facts).
    ``parsed``: {source name: (facts, findings)} already parsed elsewhere (a streamed log).
    ``tz``: the zone of the host's times written without one (dmesg -T: its local zone)."""
    sources = dict(sources)
    findings = list(sources.pop(NOTES, None) or [])
    shown = sources.pop(NAMES, None) or {}
    probes = {}
    if isinstance(sources.get(BUG_REPORT), str):
        _, fs = never_raise(lambda: (_split_bug_report(sources), []), BUG_REPORT)
        findings.extend(fs)
    for name, value in sources.items():
        if isinstance(value, dict) and "error" in value:
            probes[name] = {"ok": False, "kind": value.get("kind"), "error": value.get("error")}
            findings.extend(probe_error_findings(name, value, expected_gpus=expected_gpus))
        elif value is not None:
            probes[name] = {"ok": True}
    opts = {"since": since, "year": year, "tz": tz, "expected_gpus": expected_gpus,
            "expected_ib_rate": expected_ib_rate, "expected_ib_devices": expected_ib_devices,
            "ib_thresholds": ib_thresholds}
    facts, fs, usable = _parse_all(sources, opts, parsed, shown)
    findings.extend(fs)
    for name, ok in usable.items():
        probes.setdefault(name, {"ok": True})["usable"] = ok
    if not any(usable.values()):
        findings.append(_no_evidence(sources, probes, _shown_names(shown, facts)))
    if host is None:
        host = (facts.get("kernel_log") or {}).get("hostname")
    findings = sort_findings(findings)
    v = host_verdict(findings)
    out = {
        "host": host or "unknown",
        "verdict": v["verdict"],
        "severity": v["severity"],
        "rung": v["rung"],
        "findings": findings,
        "facts": facts,
        "probes": probes,
    }
    out.update(host_confidence(v["verdict"], findings, probes))  # how sure (confidence.py)
    return out


def _shown_names(shown, facts):
    """{source name: the user's file name(s)}: the blocks' (NAMES), and the kernel-log reader's
    files (read by path: their names are in its facts)."""
    out = dict(shown or {})
    files = [f.get("source") for f in ((facts.get("kernel_log") or {}).get("files") or ()) if f.get("source")]
    if files:
        out[KERNEL_LOG] = ", ".join(sorted(set(files))[:8])
    return out


def _no_evidence(sources, probes, shown=None):
    """``shown``: {source name: the user's file name} (the finding cites the user's own files)."""
    shown = shown or {}
    tried = sorted(shown.get(n, n) for n in probes if not n.startswith("_")) or sorted(shown.get(n, n) for n in sources)
    return finding("no_evidence", "no source gave usable evidence (%s): this host's health is unknown"
                   % (", ".join(tried) or "no sources at all"), source=", ".join(tried))


def unreachable_host(host, message):
    """A host we could not reach is itself a prime suspect (dead or wedged node)."""
    f = finding("host_unreachable", "host did not answer: %s" % (message or "unreachable"),
                evidence=(message or "")[:300], source="ansible")
    return dict({"host": host, "verdict": "unknown", "severity": f["severity"], "rung": f["rung"],
                 "findings": [f], "facts": {}, "probes": {}}, **host_confidence("unknown", [f]))


def host_of_findings(host, findings):
    """A host known only by findings its capture's loose text gave (lines nothing explains)."""
    findings = sort_findings(list(findings))
    v = host_verdict(findings)
    return dict({"host": host, "verdict": v["verdict"], "severity": v["severity"], "rung": v["rung"],
                 "findings": findings, "facts": {}, "probes": {}}, **host_confidence(v["verdict"], findings))


def exit_status(hosts):
    """CLI exit status: 0 clean, 1 warnings, 2 critical."""
    worst = worst_severity([{"severity": h["severity"]} for h in hosts]) if hosts else "ok"
    return {"ok": 0, "info": 0, "warning": 1, "critical": 2}[worst]
