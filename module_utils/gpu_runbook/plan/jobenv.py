# SPDX-License-Identifier: Apache-2.0
"""Job-scoped rungs: they change the job's next run (its environment beats ``~/.nccl.conf``,
which beats ``/etc/nccl.conf``), never a node, so they need no drain."""

from .ladder import FLAP_KINDS, PCI_LIKE, entry, serious

_USE_IB = ("nccl_socket_fallback", "nccl_watchdog_timeout_config")
_RETRIES = ("ib_transport_retries_exceeded",)
COLLECTIVE_NOTE = ("the collective timeout itself is init_process_group(timeout=) in the job's code (default "
                   "10 min for NCCL); there is no NCCL_TIMEOUT variable")


def one_bad_rail(findings):
    """The one HCA (rail) all of a host's serious findings are on, as error counters of a link
    that stays up, else None: excluding it for the job keeps an otherwise healthy node in
    service. A link that went down or flapped is not this (the node ladder tries it)."""
    links = [f for f in findings if f.get("rung") != "none"]  # advice-only findings do not count
    if not links or any(f.get("category") != "ib_network" or f.get("rung") != "drain"
                        or f.get("kind") in FLAP_KINDS for f in links):
        return None
    devices = {(f.get("ib") or {}).get("device") for f in links}
    if len(devices) != 1:
        return None
    dev = devices.pop()
    return dev if dev and not PCI_LIKE.match(dev) else None


def ib_timeout_seconds(n):
    return 4.096e-6 * (2 ** n)


def nccl_env_rung(findings, rails):
    """nccl_env for the findings that ask for it, plus rails to exclude."""
    asking = [f for f in findings if f.get("rung") == "nccl_env"]
    why = asking[0].get("message") if asking else "link errors on %s only" % ", ".join(rails)
    e = entry("nccl_env", why)
    if rails:
        e["target"] = {"rails": sorted(rails)}
        e["env"].append(exclude_line(rails))
        e["notes"].append("NCCL_IB_HCA=^=<hca>: '^' excludes, '=' matches the exact name (without it mlx5_1 "
                          "also matches mlx5_10-19); reverted when a later run finds the rail healthy")
    if any(f.get("kind") in _USE_IB for f in asking):
        e["env"].append("NCCL_IB_DISABLE=0")
        e["notes"].append("NCCL fell back to sockets: NCCL_IB_DISABLE=0, and NCCL_SOCKET_IFNAME must name an "
                          "interface every node really has")
    if any(f.get("kind") == "nccl_nvls_unavailable" for f in asking):
        e["env"].append("NCCL_NVLS_ENABLE=0")
        e["notes"].append("NVLS (NVLink SHARP) could not be set up where the job runs: NCCL_NVLS_ENABLE=0 runs "
                          "the collectives without it (give the container /dev/nvidia-caps to keep it)")
    for f in asking:
        if f.get("kind") not in _USE_IB and f.get("action"):
            e["notes"].append(f["action"])
    return e


def exclude_line(rails):
    return "NCCL_IB_HCA=^=%s" % ",".join(sorted(set(rails)))


def timeout_rung(findings, policy):
    asking = [f for f in findings if f.get("rung") == "timeout" or f.get("kind") in _RETRIES]
    e = entry("timeout", asking[0].get("message") if asking else "")
    n, retries = policy["nccl_ib_timeout"], policy["nccl_ib_retry_cnt"]
    e["env"] = ["NCCL_IB_TIMEOUT=%d" % n, "NCCL_IB_RETRY_CNT=%d" % retries,
                "TORCH_NCCL_ASYNC_ERROR_HANDLING=1", "TORCH_FR_BUFFER_SIZE=2000", "TORCH_NCCL_DUMP_ON_TIMEOUT=1"]
    e["notes"] = [
        "NCCL_IB_TIMEOUT=%d: each IB retry waits 4.096 us x 2^%d = %.1f s (default 20 = %.1f s since NCCL 2.23)"
        % (n, n, ib_timeout_seconds(n), ib_timeout_seconds(20)),
        "NCCL_IB_RETRY_CNT=%d: retries before a retry-exceeded error (0-7, default 7)" % retries,
        "TORCH_NCCL_ASYNC_ERROR_HANDLING=1: abort the communicators and tear the process down on a timeout",
        "Flight Recorder on (TORCH_FR_BUFFER_SIZE > 0, TORCH_NCCL_DUMP_ON_TIMEOUT=1): the next hang names its rank",
        COLLECTIVE_NOTE,
    ]
    return e


def wants_timeout(findings):
    return any(f.get("rung") == "timeout" or f.get("kind") in _RETRIES for f in findings)


def job_section(host_entries, job, incidents, policy, held=None):
    """The job's share of the plan: the job-scoped rungs of every host and of the job's own
    findings, merged into one environment for the next run; application fixes reported.
    ``held``: why nothing of the job's own may act (its rungs blocked with it, no rail of an
    incident excluded), else None."""
    job_findings = serious({"findings": (job or {}).get("findings") or []}) if isinstance(job, dict) else []
    rungs, rails = [], set()
    for h in host_entries:
        for e in h["rungs"]:
            if e["scope"] == "job" and e["rung"] in ("nccl_env", "timeout") and e["status"] == "planned":
                rungs.append(dict(e, host=h["host"]))
                rails.update((e.get("target") or {}).get("rails") or [])
    if held is None:
        rails.update(i["name"] for i in incidents if i["kind"] == "rail")
    own = []
    if any(f["rung"] == "nccl_env" for f in job_findings):
        own.append(dict(nccl_env_rung(job_findings, []), host=None))
    if wants_timeout(job_findings):
        own.append(dict(timeout_rung(job_findings, policy), host=None))
    level = (job or {}).get("confidence") if isinstance(job, dict) else None
    if level == "low":  # a job-scoped rung needs at least medium confidence in the job's verdict
        for e in own:
            e["status"] = "blocked"
            e["blockers"].append("job confidence %s (%s): held for review"
                                 % (level, job.get("confidence_reason") or "?"))
    if held is not None:
        for e in own:
            e["status"] = "blocked"
            e["blockers"].append(held)
    rungs.extend(own)
    env = []
    for e in rungs:
        if e["status"] != "planned":
            continue
        env.extend(v for v in e["env"] if not v.startswith("NCCL_IB_HCA=") and v not in env)
    if rails:
        env.insert(0, exclude_line(rails))
    report = sorted({f.get("message") or f.get("kind") for f in job_findings if f["rung"] == "fix_application"})
    notes = [COLLECTIVE_NOTE] if any(e["rung"] == "timeout" for e in rungs) else []
    return {"rungs": rungs, "env": env, "notes": notes, "report": report}
