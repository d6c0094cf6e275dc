# SPDX-License-Identifier: Apache-2.0
"""Running the active tier on one node: each tool under its own deadline, in its own process
group (probes.run_argv: on a deadline the group is killed, grandchildren too), one after the
other (each loads the whole node), judged by the active package's pure judges.

Refused on a busy node: processes on the GPUs (``nvidia-smi --query-compute-apps``) mean a job
runs there, and a stress test would both disturb it and measure it; ``allow_busy`` overrides.
A check whose tool is not installed is ``not_run`` and says so. After each check, a process of
the tool still alive is reported (``active_left_running``), never killed blindly: only the
process group started here was ours."""

import os
import time

from ..findings import finding, normalize_pci
from ..probes import find_tool, run_argv
from . import (CHECKS, DEFAULT_TIMEOUTS, judge_dcgm, judge_ib_pair, judge_inventory, judge_nccl,
               judge_nvbandwidth, not_run, summarize, timed_out)


def with_pci(findings, pcis):
    """A finding that names its GPU by index only (DCGM's GPU ids, a test's device number) gets the bus
    id the inventory read for that index: the ledger keeps a GPU's history (the lemon rule) by its
    identity, and an index can change across a reboot."""
    for f in findings:
        g = f.get("gpu")
        if isinstance(g, dict) and not g.get("pci") and g.get("index") is not None:
            pci = (pcis or {}).get(g["index"]) or (pcis or {}).get(str(g["index"]))
            if pci:
                f["gpu"] = dict(g, pci=normalize_pci(pci))
    return findings


def _shipped():  # pragma: no cover -- never called
    """The vocabulary tables the judges read on the node (DCGM's codes, the job-log reader's
    emitters for all_reduce_perf's output), imported where Ansible's module_utils finder sees
    them (it follows imports, not importlib), so they travel with the module."""
    from ..vocab import container, cuda, dcgm, dcgmlog, gloo, libfabric, nccl, nvml, ofi, rdma, torch, ucx  # noqa: F401


NVBW_TESTS = ("host_to_device_memcpy_ce", "device_to_host_memcpy_ce", "device_to_device_memcpy_read_ce")


def timeout_for(name, level=2, timeouts=None):
    t = (timeouts or {}).get(name) or DEFAULT_TIMEOUTS[name]
    if isinstance(t, dict):
        t = t.get(level) or max(t.values())
    return int(t)


def plan(opts):
    """What the tier would run (check mode): [{"check", "command", "timeout"}]."""
    out = []
    for name in opts["checks"]:
        argv = command_for(name, opts, gpus=opts.get("expected_gpus") or 0)
        out.append({"check": name, "command": " ".join(argv) if argv else None,
                    "timeout": timeout_for(name, opts.get("dcgm_level") or 2, opts.get("timeouts"))})
    return out


def command_for(name, opts, gpus):
    """The argv of one check (the tool's bare name; resolved on the node when run)."""
    if name == "dcgm":
        return ["dcgmi", "diag", "-r", str(int(opts.get("dcgm_level") or 2)), "-j"]
    if name == "nccl":
        size = opts.get("nccl_message_size") or "16G"
        return ["all_reduce_perf", "-b", size, "-e", size, "-f", "2", "-g", str(gpus or 1)]
    if name == "nvbandwidth":
        return ["nvbandwidth", "-t"] + list(NVBW_TESTS)
    if name == "ib_pair":
        if not opts.get("ib_pair_peer"):
            return None
        argv = ["ib_write_bw", "--report_gbits"]
        if opts.get("ib_device"):
            argv += ["-d", opts["ib_device"]]
        return argv + [opts["ib_pair_peer"]]
    if name == "inventory":
        return ["nvidia-smi", "-q", "-x"]
    return None


def _run(argv, seconds):
    """-> (rc, out, err, elapsed); rc 127 when the tool is not installed; None on a deadline."""
    path = find_tool(argv[0])
    if not path:
        return 127, "", "%s: command not found" % argv[0], 0.0
    t0 = time.monotonic()
    try:
        rc, out, err = run_argv([path] + argv[1:], seconds)
    except TimeoutError:
        return None, "", "", time.monotonic() - t0
    except (FileNotFoundError, OSError) as exc:
        return 127, "", str(exc), time.monotonic() - t0
    return rc, out, err, time.monotonic() - t0


def busy(timeout=30):
    """-> (busy, what): the processes on the GPUs (a running job), from nvidia-smi."""
    rc, out, err, _ = _run(["nvidia-smi", "--query-compute-apps=pid,process_name,gpu_bus_id",
                            "--format=csv,noheader"], timeout)
    if rc is None or rc == 127:
        return False, None
    rows = [ln.strip() for ln in out.splitlines() if ln.strip() and "No running" not in ln]
    return bool(rows), rows[:8]


def _left_running(tool):
    """PIDs whose command is ``tool`` still alive (/proc): reported, not killed."""
    pids = []
    try:
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    with open("/proc/%s/comm" % pid) as fh:
                        if fh.read().strip() == tool[:15]:
                            pids.append(int(pid))
                except OSError:
                    continue
    except OSError:
        pass
    return pids


def run_tier(opts):
    """Run the asked checks on this node -> summarize()'s dict plus "busy"/"refused"."""
    asked = [c for c in opts["checks"] if c in CHECKS]
    is_busy, procs = busy()
    if is_busy and not opts.get("allow_busy"):
        result = summarize([not_run(c, "the GPUs are in use (a job is running)") for c in asked], asked)
        result["probes"] = {}  # a busy node is not a node whose tools failed
        result.update(status="refused", busy=procs, findings=[finding(
            "active_refused_busy", "the active tier did not run: %d process(es) on the GPUs (%s)" % (
                len(procs), "; ".join(procs)[:200]), source="active")])
        return result
    level = int(opts.get("dcgm_level") or 2)
    checks, gpus, gpu_name, pcis = [], opts.get("expected_gpus") or 0, None, {}
    for name in asked:
        seconds = timeout_for(name, level, opts.get("timeouts"))
        if name == "inventory":
            rc, out, err, took = _run(["nvidia-smi", "-q", "-x"], seconds)
            nl = _run(["nvidia-smi", "nvlink", "--status"], seconds) if rc not in (None, 127) else None
            c = judge_inventory(out if rc not in (None, 127) else None,
                                nl[1] if nl and nl[0] == 0 else None, opts.get("expected_gpus"),
                                opts.get("expected_pci"), command="nvidia-smi -q -x; nvidia-smi nvlink --status")
            gpus = gpus or c["figures"].get("gpus") or 0
            gpu_name, pcis = c["figures"].get("gpu_name"), c["figures"].get("pcis") or {}
            c["seconds"] = round(took, 1)
            checks.append(c)
            continue
        argv = command_for(name, opts, gpus)
        if argv is None:
            checks.append(not_run(name, "no peer given (ib_pair_peer)"))
            continue
        rc, out, err, took = _run(argv, seconds)
        cmd = " ".join(argv)
        if rc is None:
            c = timed_out(name, seconds, cmd)
        elif name == "dcgm":
            c = judge_dcgm(out, err, rc, level, cmd)
        elif name == "nccl":
            c = judge_nccl(out, err, rc, opts.get("expected_busbw_gbps"), gpu_name, gpus, cmd)
        elif name == "nvbandwidth":
            c = judge_nvbandwidth(out, err, rc, opts.get("expected_nvbandwidth_gbps"), gpu_name, gpus, pcis, cmd)
        else:
            c = judge_ib_pair(out, err, rc, opts.get("expected_ib_gbps"), opts.get("ib_pair_peer"),
                              opts.get("ib_device"), cmd)
        c["seconds"] = round(took, 1)
        with_pci(c["findings"], pcis)
        left = _left_running(argv[0]) if rc is None else []
        if left:
            c["findings"].append(finding("active_left_running", "%s: %s still running after its deadline (pid %s)"
                                         % (name, argv[0], ", ".join(str(p) for p in left[:8])),
                                         source="active:%s" % name))
        checks.append(c)
    result = summarize(checks, asked, opts.get("require") or ())
    result["busy"] = procs if is_busy else []
    return result


__all__ = ["busy", "command_for", "plan", "run_tier", "timeout_for"]
