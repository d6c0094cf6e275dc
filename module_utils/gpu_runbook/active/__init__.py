# SPDX-License-Identifier: Apache-2.0
"""The active tier: tests that load a drained or idle node, judged as findings.

Passive evidence (nvidia-smi, the kernel log, IB sysfs, the job's logs) misses the GPU that is
slow or fails only under load, the NVLink running degraded, the HCA at half bandwidth: none of
them logs an Xid, and each is the straggler a whole job waits for. The checks (``CHECKS``):

- ``inventory``: the node against what it should be -- GPU count and PCI addresses, NVLink links
  up (``nvidia-smi nvlink --status``), the NVSwitch fabric state (``nvidia-smi -q -x``);
- ``dcgm``: ``dcgmi diag -r N -j`` (DCGM's own diagnostic; dcgm/ reads it, each failed test a
  finding with DCGM's error code, GPU and message);
- ``nccl``: ``all_reduce_perf`` (nccl-tests) on all the node's GPUs, its "Avg bus bandwidth"
  against the GPU model's figure (expected.py), #wrong and out-of-bounds values;
- ``nvbandwidth``: host-to-GPU, GPU-to-host and GPU-to-GPU copy bandwidth per GPU and pair;
- ``ib_pair``: ``ib_write_bw`` between two drained or idle nodes, for a link under suspicion.

Each judge here is a pure function of what the tool printed (and its exit status) -> one check
result ``{"check", "status": passed|failed|not_run|timeout|error, "why", "figures", "findings"}``.
A tool that is missing, a service that is down, a deadline passed: ``not_run`` / ``timeout``,
never ``passed``. ``summarize`` folds the checks into the tier's status: ``failed`` when one
failed, ``incomplete`` when one asked for did not run, ``passed`` only when every one passed.
Running the tools (deadlines, the busy check, cleanup) is run.py's."""

import re

from ..findings import finding, gpu_ref, normalize_pci
from .expected import for_gpus
from .nvbandwidth import parse_nvbandwidth
from .perftest import parse_perftest_bw

CHECKS = ("inventory", "dcgm", "nccl", "nvbandwidth", "ib_pair")
# what each check costs on a real node (NVIDIA's dcgmi diag reference: level 1 seconds, 2 about two
# minutes, 3 about 15 minutes, 4 longer; nccl-tests / nvbandwidth at these sizes: under a minute)
DEFAULT_TIMEOUTS = {"inventory": 60, "dcgm": {1: 120, 2: 600, 3: 2700, 4: 10800}, "nccl": 300,
                    "nvbandwidth": 300, "ib_pair": 120}
# DCGM's words when dcgmi cannot reach its host engine (dcgmi/main, dcgmi/Command.cpp)
_NO_HOSTENGINE = ("unable to establish a connection", "Unable to connect to host engine",
                  "Error: unable to connect", "host engine is not running", "Host engine connection invalid")
_SEVERE = ("warning", "critical")


def check(name, status, why, figures=None, findings=None, command=None, seconds=None):
    return {"check": name, "status": status, "why": why, "figures": figures or {}, "findings": findings or [],
            "command": command, "seconds": seconds}


def not_run(name, why, command=None):
    """A check that did not run: an info finding says so (lowers no verdict, passes nothing)."""
    return check(name, "not_run", why, findings=[finding("active_not_run", "%s: not run: %s" % (name, why),
                                                         source="active:%s" % name)], command=command)


def timed_out(name, seconds, command=None):
    return check(name, "timeout", "no result after %ss: stopped" % seconds, command=command, seconds=seconds,
                 findings=[finding("active_check_timeout", "%s: no result after %ss; the test was stopped (its "
                                   "process group killed)" % (name, seconds), source="active:%s" % name)])


# what changes from one run to the next in a tool's failure line (a pid, nccl-tests' 'host pid N:'
# prefix, IBWARN's '[pid]'): left out, so the same failure reads the same (an RMA bundle, a Slurm
# reason written again only when something changed)
_VOLATILE = re.compile(r"^\S{1,253}:? pid \d{1,9}: |\bpid \d{1,9}\b|\[\d{1,9}\] ")
_TEST_FAIL = re.compile(r"Test (?:NCCL|CUDA) failure \S{1,120} '[^'\n]{1,200}'")


def _failed_without_figure(name, rc, out, err, command):
    text = err or out or ""
    m = _TEST_FAIL.search(text)  # nccl-tests' own failure line names the CUDA/NCCL error
    last = m.group(0) if m else next((ln.strip() for ln in reversed(text.splitlines()) if ln.strip()), "no output")
    last = _VOLATILE.sub("", last).strip() or "no output"
    return check(name, "error", "exited %s: %s" % (rc, last[:200]), command=command, findings=[finding(
        "active_test_failed", "%s exited %s without a result: %s" % (name, rc, last[:200]), evidence=last[:300],
        source="active:%s" % name)])


# ------------------------------------------------------------------------------- DCGM
def judge_dcgm(out, err, rc, level, command=None):
    """``dcgmi diag -r LEVEL -j`` -> a check. DCGM absent (127) or its host engine down: not_run."""
    from ..dcgm import parse_dcgmi
    text = (out or "") + ("\n" + err if err else "")
    if rc == 127:
        return not_run("dcgm", "dcgmi is not installed", command)
    if any(w.lower() in text.lower() for w in _NO_HOSTENGINE):
        return not_run("dcgm", "DCGM's host engine (nv-hostengine) is not running or not reachable", command)
    facts, found = parse_dcgmi(out or "", source="dcgmi diag -r %d" % level)
    facts = facts if isinstance(facts, dict) else {}
    bad = [f for f in found if f.get("severity") in _SEVERE]
    figures = {"level": level, "overall": facts.get("overall"), "tests": len(facts.get("tests") or [])}
    if bad and all(f.get("category") == "unknown" for f in bad):  # the output itself (cut, unreadable)
        return check("dcgm", "error", "; ".join(f["message"][:120] for f in bad[:2]), figures, bad, command)
    if bad:
        tests = sorted(set(t["name"] for t in facts.get("tests") or [] if t.get("status") in ("Fail", "Warn")))
        return check("dcgm", "failed", "DCGM level %d: %s" % (level, ", ".join(tests) or bad[0]["message"][:120]),
                     figures, bad, command)
    if facts.get("tool") == "dcgmi diag" and facts.get("healthy"):
        return check("dcgm", "passed", "DCGM level %d: every test passed" % level, figures, [], command)
    if rc not in (0, None):
        return _failed_without_figure("dcgm", rc, out, err, command)
    return check("dcgm", "error", "dcgmi's output could not be read as a diagnostic", figures, [finding(
        "active_test_failed", "dcgm: dcgmi diag gave no result gpu-runbook could read", source="active:dcgm")],
        command)


# ------------------------------------------------------------------------------- NCCL
def judge_nccl(out, err, rc, expected_busbw=None, gpu_name=None, gpus=None, command=None):
    """``all_reduce_perf`` on the node's GPUs -> a check: its Avg bus bandwidth against
    ``expected_busbw`` (or the GPU model's figure), wrong data, a run cut short."""
    from ..joblog import parse_job_logs
    if rc == 127:
        return not_run("nccl", "all_reduce_perf (nccl-tests) is not installed", command)
    job, _found = parse_job_logs({"all_reduce_perf.txt": out or ""})
    nt = (job or {}).get("nccl_tests") or {}
    avg = nt.get("avg_busbw")
    exp = expected_busbw or (for_gpus(gpu_name, gpus) or {}).get("busbw_gbps")
    src = (for_gpus(gpu_name, gpus) or {}).get("source") if not expected_busbw else "the expected figure given"
    figures = {"busbw_gbps": avg, "expected_gbps": exp, "expected_from": src, "gpus": nt.get("ranks")}
    if nt.get("wrong_rows") or (nt.get("out_of_bounds") or 0) > 0:
        return check("nccl", "failed", "the all-reduce delivered wrong data", figures, [finding(
            "active_data_wrong", "nccl: all_reduce_perf found wrong data (%s row(s) with #wrong > 0, %s out-of-bounds "
            "value(s))" % (nt.get("wrong_rows") or 0, nt.get("out_of_bounds") or 0), source="active:nccl")], command)
    if avg is None:
        return _failed_without_figure("nccl", rc, out, err, command) if rc else check(
            "nccl", "error", "all_reduce_perf printed no bus bandwidth", figures, [finding(
                "active_test_failed", "nccl: all_reduce_perf printed no 'Avg bus bandwidth'", source="active:nccl")],
            command)
    if exp is None:
        return check("nccl", "passed", "%.1f GB/s; no expected figure for %s x%s (set expected_busbw_gbps)"
                     % (avg, gpu_name or "this GPU", gpus or "?"), figures, [finding(
                         "active_not_run", "nccl: measured %.1f GB/s bus bandwidth but has no figure to hold it to "
                         "(GPU model %s x%s): set expected_busbw_gbps" % (avg, gpu_name or "unknown", gpus or "?"),
                         source="active:nccl")], command)
    if avg < exp:
        return check("nccl", "failed", "%.1f GB/s bus bandwidth, expected at least %.1f" % (avg, exp), figures, [
            finding("active_busbw_low", "nccl: single-node all-reduce bus bandwidth %.1f GB/s, %.0f%% of the %.1f GB/s "
                    "this node should reach (%s)" % (avg, 100.0 * avg / exp, exp, src), source="active:nccl")],
            command)
    return check("nccl", "passed", "%.1f GB/s bus bandwidth (expected at least %.1f)" % (avg, exp), figures, [],
                 command)


# ------------------------------------------------------------------------------- nvbandwidth
# nvbandwidth's testcase names -> the figure they are held to (its unidirectional memcpy cases, CE
# or SM; bidirectional and all-to-one cases measure something else and are not judged)
_NVBW_KINDS = (("host_to_device_memcpy_", "h2d_gbps", "host to GPU"),
               ("device_to_host_memcpy_", "d2h_gbps", "GPU to host"),
               ("device_to_device_memcpy_", "p2p_gbps", "GPU to GPU"))


def _nvbw_kind(test):
    if "bidirectional" in test or "all_to" in test or "_to_all" in test:
        return None
    return next(((key, words) for prefix, key, words in _NVBW_KINDS if test.startswith(prefix)), None)


def judge_nvbandwidth(out, err, rc, expected=None, gpu_name=None, gpus=None, pcis=None, command=None):
    """``nvbandwidth -t ...`` -> a check: each GPU's (and pair's) figure against the expected one."""
    if rc == 127:
        return not_run("nvbandwidth", "nvbandwidth is not installed", command)
    parsed = parse_nvbandwidth(out or "")
    model = for_gpus(gpu_name, gpus) or {}
    exp = dict((k, v) for k, v in model.items() if k.endswith("_gbps"))
    exp.update(dict((k, float(v)) for k, v in (expected or {}).items() if v))
    findings, figures, seen = [], {}, 0
    for test, t in sorted(parsed["tests"].items()):
        kind = _nvbw_kind(test)
        # a GPU to itself is no path (N/A, or 0.00 in older builds)
        cells = dict((k, v) for k, v in t["cells"].items() if not (kind and kind[0] == "p2p_gbps" and k[0] == k[1]))
        if kind is None or not cells:
            continue
        key, words = kind
        seen += 1
        figures[test] = {"min": min(cells.values()), "sum": t["sum"], "expected": exp.get(key)}
        if not exp.get(key):
            continue
        slow = sorted((k, v) for k, v in cells.items() if v < exp[key])
        for (row, col), v in slow[:16]:
            gpu = col if key == "h2d_gbps" else row
            pci = (pcis or {}).get(gpu)
            pair = " (GPU %d to GPU %d)" % (row, col) if key == "p2p_gbps" else ""
            findings.append(finding(
                "active_nvbandwidth_low", "nvbandwidth: %s copy on GPU %d%s at %.1f GB/s, expected at least %.1f (%s)"
                % (words, gpu, pair, v, exp[key], model.get("source") or "the expected figure given"),
                source="active:nvbandwidth", gpu=gpu_ref(normalize_pci(pci) if pci else None, gpu)))
    if not seen:
        return _failed_without_figure("nvbandwidth", rc, out, err, command) if rc else check(
            "nvbandwidth", "error", "nvbandwidth printed no bandwidth matrix", figures, [finding(
                "active_test_failed", "nvbandwidth printed no bandwidth matrix", source="active:nvbandwidth")], command)
    if findings:
        return check("nvbandwidth", "failed", "%d copy path(s) below the expected figure" % len(findings), figures,
                     findings, command)
    if not any(f.get("expected") for f in figures.values()):
        return check("nvbandwidth", "passed", "measured; no expected figure for %s x%s" % (gpu_name or "this GPU",
                     gpus or "?"), figures, [finding("active_not_run", "nvbandwidth: measured, but no figure to hold "
                                                     "it to: set expected_nvbandwidth_gbps", source="active:nvbandwidth")],
                     command)
    return check("nvbandwidth", "passed", "every copy path at or above the expected figure", figures, [], command)


# ------------------------------------------------------------------------------- ib_write_bw
def judge_ib_pair(out, err, rc, expected_gbps=None, peer=None, device=None, command=None):
    """``ib_write_bw ... <peer>`` (the client's side) -> a check against the link's figure."""
    if rc == 127:
        return not_run("ib_pair", "ib_write_bw (perftest) is not installed", command)
    parsed = parse_perftest_bw(out or "")
    bw = parsed["average_gbps"]
    figures = {"bw_gbps": bw, "expected_gbps": expected_gbps, "peer": peer, "device": device}
    if bw is None:
        if parsed["errors"]:
            n, line = parsed["errors"][0]
            return check("ib_pair", "error", line[:200], figures, [finding(
                "active_test_failed", "ib_pair: ib_write_bw to %s failed: %s" % (peer or "the peer", line[:200]),
                evidence=line[:300], source="active:ib_pair")], command)
        return _failed_without_figure("ib_pair", rc or "0", out, err, command)
    if expected_gbps and bw < float(expected_gbps):
        return check("ib_pair", "failed", "%.1f Gb/s, expected at least %.1f" % (bw, float(expected_gbps)), figures, [
            finding("active_ib_bw_low", "ib_pair: ib_write_bw %s to %s at %.1f Gb/s, expected at least %.1f"
                    % (device or "", peer or "the peer", bw, float(expected_gbps)), source="active:ib_pair",
                    ib={"device": device, "port": 1} if device else None)], command)
    return check("ib_pair", "passed", "%.1f Gb/s%s" % (bw, "" if expected_gbps else " (no expected figure)"),
                 figures, [], command)


# ------------------------------------------------------------------------------- inventory
def judge_inventory(smi_xml, nvlink_text, expected_gpus=None, expected_pci=None, command=None):
    """The node against what it should be: GPUs by count and PCI address, NVLink links up, the
    fabric state. ``smi_xml``: ``nvidia-smi -q -x``; ``nvlink_text``: ``nvidia-smi nvlink --status``
    (None when not read)."""
    from ..nvsmi import parse_nvidia_smi, parse_nvidia_smi_table
    if smi_xml is None:
        return not_run("inventory", "nvidia-smi did not answer", command)
    facts, found = parse_nvidia_smi(smi_xml, source="nvidia-smi -q -x", expected_gpus=expected_gpus)
    facts = facts if isinstance(facts, dict) else {}
    gpus = facts.get("gpus") or []
    have = set(normalize_pci(g.get("pci")) for g in gpus if g.get("pci"))
    findings = [f for f in found if f.get("severity") in _SEVERE]
    for pci in expected_pci or []:
        p = normalize_pci(pci)
        if p and p not in have:
            findings.append(finding("gpu_missing", "inventory: GPU %s is not on the node (nvidia-smi lists %d "
                                    "GPU(s))" % (p, len(gpus)), source="active:inventory", gpu=gpu_ref(p, None)))
    inactive = 0
    if nvlink_text:
        # nvsmi/table.py reads the links; its nvlink_inactive finding (critical on a baseboard) is the check's
        nfacts, nfound = parse_nvidia_smi_table(nvlink_text, source="nvidia-smi nvlink --status")
        inactive = sum(len(g.get("nvlink_inactive") or []) for g in (nfacts or {}).get("gpus") or [])
        findings.extend(f for f in nfound if f.get("severity") in _SEVERE)
    figures = {"gpus": len(gpus), "expected_gpus": expected_gpus, "nvlink_inactive": inactive,
               "gpu_name": next((g.get("name") for g in gpus if g.get("name")), None),
               "pcis": dict((g.get("index"), g.get("pci")) for g in gpus if g.get("index") is not None)}
    if findings:
        return check("inventory", "failed", "; ".join(sorted(set(f["kind"] for f in findings))), figures, findings,
                     command)
    return check("inventory", "passed", "%d GPU(s)%s, NVLink %s" % (
        len(gpus), " as expected" if expected_gpus or expected_pci else "",
        "all links up" if nvlink_text else "not read"), figures, [], command)


# ------------------------------------------------------------------------------- the tier
def summarize(checks, asked, require=()):
    """-> {"status", "checks", "findings", "not_run", "failed", "probes"}: failed when a check
    failed (or erred, or timed out) or one in ``require`` did not run, incomplete when another
    asked for did not run, passed only when every one passed. ``probes``: a not-run check as a
    source that did not answer ({"active:dcgm": {"ok": False, ...}}), which lowers a healthy
    verdict's confidence where the host's gather is read (confidence.py)."""
    by = dict((c["check"], c) for c in checks)
    findings = [f for c in checks for f in c["findings"]]
    missing = [n for n in asked if n not in by or by[n]["status"] == "not_run"]
    for n in missing:
        if n in require:
            findings.append(finding("active_test_failed", "%s: a required active check did not run (%s)" % (
                n, by[n]["why"] if n in by else "not run"), source="active:%s" % n))
    bad = [c["check"] for c in checks if c["status"] in ("failed", "error", "timeout")] + \
        [n for n in missing if n in require]
    status = "failed" if bad else ("incomplete" if missing else "passed")
    probes = dict(("active:%s" % n, {"ok": False, "kind": "not_run", "error": by[n]["why"] if n in by else "not run"})
                  for n in missing)
    probes.update(("active:%s" % c["check"], {"ok": True}) for c in checks if c["status"] != "not_run")
    return {"status": status, "checks": checks, "findings": findings, "not_run": missing, "failed": bad,
            "probes": probes}
