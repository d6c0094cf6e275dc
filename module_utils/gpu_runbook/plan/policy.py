# SPDX-License-Identifier: Apache-2.0
"""The remediation policy (with safe defaults), the incident id, and what a Slurm lookup
says about a node: drained or not, and by whom."""

import hashlib
import json
import re

from ..taxonomy import RUNG_TABLE, RUNGS

OUR_PREFIX = "gpu-runbook:"

# name: (default, checker); every key is optional, an unknown key is an error (a typo such
# as ``max_drains`` must not silently fall back to a default).
DEFAULTS = {
    "allowed_rungs": None,          # None: every rung except reboot
    "allow_reboot": False,
    "max_drain": 2,                 # nodes drained at once, counting those already drained
    "max_drain_percent": 10,        # of the hosts in the analysis plus the already drained ones
    "max_per_domain": 1,            # drained nodes per failure domain (rack / leaf switch)
    "domains": None,                # {host: domain name}
    "already_drained": None,        # [host] drained in the partition right now
    "incident_id": None,            # default: derived from the analysis' generated time
    "correlated_fraction": 0.5,     # share of a domain sick at once -> facility/network incident
    "correlated_rail_hosts": 3,     # hosts with errors on one rail -> network incident
    "ib_unit": "openibd",           # the IB stack's unit (MLNX/DOCA OFED)
    "ib_restart_on_flap": True,     # one IB stack restart for a flapping link before the cable
    # one rail erroring over threshold (critical), link up: "drain" the node, or "exclude" the rail for
    # the job and keep the node (a node left in service with a bad rail takes other jobs on it)
    "rail_errors": "drain",
    "nccl_ib_timeout": 22,          # NCCL_IB_TIMEOUT for the timeout rung (4.096 us x 2^n)
    "nccl_ib_retry_cnt": 7,         # NCCL_IB_RETRY_CNT (0-7)
    "approved_hosts": None,         # None: no approval asked; [host]: only these may be acted on (AWX approval)
    # the job that hung, when the wait for DRAINED runs out with it still on a drained node: None (wait,
    # then give up: the default), "requeue" or "cancel" -- only this job id, never another
    "hung_job": None,
    "hung_job_id": None,
}
_UNIT_RE = re.compile(r"^[A-Za-z0-9@_.:-]{1,64}$")
_ID_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
_JOB_ID_RE = re.compile(r"^[0-9]{1,10}(?:_[0-9]{1,10})?$")


class PolicyError(ValueError):
    pass


def _int(name, value, low, high=None):
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        raise PolicyError("policy %s must be an integer %s%s, not %r"
                          % (name, ">= %d" % low, " and <= %d" % high if high is not None else "", value))
    return value


def _number(name, value, low, high, low_open=False):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value > high or value < low \
            or (low_open and value == low):
        raise PolicyError("policy %s must be a number in %s%s, %s], not %r"
                          % (name, "(" if low_open else "[", low, high, value))
    return value


def _names(name, value):
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and v for v in value):
        raise PolicyError("policy %s must be a list of names, not %r" % (name, value))
    return sorted(set(value))


def _check_rungs(value):
    rungs = _names("allowed_rungs", value)
    unknown = [r for r in rungs if r not in RUNG_TABLE]
    if unknown:
        raise PolicyError("policy allowed_rungs: unknown rung(s) %s (known: %s)" % (", ".join(unknown), ", ".join(RUNGS)))
    return rungs


def _check_domains(value):
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) and v
                                              for k, v in value.items()):
        raise PolicyError("policy domains must map host names to domain names, not %r" % (value,))
    return dict(sorted(value.items()))


def normalize_policy(policy):
    """policy dict (or None) -> the effective policy, every key set; PolicyError on bad input."""
    if policy is None:
        policy = {}
    if not isinstance(policy, dict):
        raise PolicyError("policy must be a mapping, not %s" % type(policy).__name__)
    unknown = sorted(str(k) for k in policy if k not in DEFAULTS)
    if unknown:
        raise PolicyError("unknown policy key(s): %s (known: %s)" % (", ".join(unknown), ", ".join(sorted(DEFAULTS))))
    p = dict(DEFAULTS)
    p.update({k: v for k, v in policy.items() if v is not None})
    for name in ("allow_reboot", "ib_restart_on_flap"):
        if not isinstance(p[name], bool):
            raise PolicyError("policy %s must be true or false, not %r" % (name, p[name]))
    allowed = set(_check_rungs(p["allowed_rungs"]) if p["allowed_rungs"] is not None else RUNGS)
    allowed.discard("reboot")
    if p["allow_reboot"] and (p["allowed_rungs"] is None or "reboot" in p["allowed_rungs"]):
        allowed.add("reboot")
    p["allowed_rungs"] = [r for r in RUNGS if r in allowed]
    _int("max_drain", p["max_drain"], 0)
    _number("max_drain_percent", p["max_drain_percent"], 0, 100)
    _int("max_per_domain", p["max_per_domain"], 0)
    _number("correlated_fraction", p["correlated_fraction"], 0, 1, low_open=True)
    _int("correlated_rail_hosts", p["correlated_rail_hosts"], 2)
    _int("nccl_ib_timeout", p["nccl_ib_timeout"], 1, 31)
    _int("nccl_ib_retry_cnt", p["nccl_ib_retry_cnt"], 0, 7)
    if p["rail_errors"] not in ("exclude", "drain"):
        raise PolicyError("policy rail_errors must be 'exclude' or 'drain', not %r" % (p["rail_errors"],))
    p["domains"] = _check_domains(p["domains"] or {})
    p["already_drained"] = _names("already_drained", p["already_drained"] or [])
    if p["approved_hosts"] is not None:  # [] is an approval of nothing: nothing acts
        p["approved_hosts"] = _names("approved_hosts", p["approved_hosts"])
    if not isinstance(p["ib_unit"], str) or not _UNIT_RE.match(p["ib_unit"]):
        raise PolicyError("policy ib_unit must be a systemd unit name, not %r" % (p["ib_unit"],))
    if p["incident_id"] is not None and (not isinstance(p["incident_id"], str) or not _ID_RE.match(p["incident_id"])):
        raise PolicyError("policy incident_id must be 1-64 letters, digits or _.:- (it goes into the Slurm "
                          "reason), not %r" % (p["incident_id"],))
    _check_hung_job(p)
    return p


def _check_hung_job(p):
    if p["hung_job"] not in (None, "requeue", "cancel"):
        raise PolicyError("policy hung_job must be 'requeue' or 'cancel' (or unset), not %r" % (p["hung_job"],))
    if p["hung_job_id"] is not None:
        p["hung_job_id"] = str(p["hung_job_id"])
        if not _JOB_ID_RE.match(p["hung_job_id"]):
            raise PolicyError("policy hung_job_id must be a Slurm job id (digits, or 123_4), not %r"
                              % (p["hung_job_id"],))
    if p["hung_job"] and not p["hung_job_id"]:
        raise PolicyError("hung_job=%s needs the id of the job that hung (-e job_id=N): only that job is ever "
                          "touched" % p["hung_job"])


def incident_id(analysis, policy):
    """The policy's id, else one derived from the analysis' generated time, else from its
    content: the same analysis always gives the same id."""
    if policy.get("incident_id"):
        return policy["incident_id"]
    digits = re.sub(r"\D", "", str(analysis.get("generated") or ""))[:14]
    if len(digits) >= 8:
        return "gr-" + digits
    basis = [(h.get("host"), h.get("rung"), h.get("verdict")) for h in analysis.get("hosts") or []
             if isinstance(h, dict)]
    return "gr-" + hashlib.sha1(json.dumps(basis, sort_keys=True, default=str).encode()).hexdigest()[:10]


def node_state(slurm):
    """A Slurm lookup ({"state", "reason", "reason_user"} or {"error"}) -> (unavailable, ours,
    words). unavailable: drained, draining or down (None: the lookup failed, so nobody knows);
    ours: slurm_node's record says so (``owned``), else its reason carries our prefix."""
    if not isinstance(slurm, dict):
        return False, False, ""
    if slurm.get("error"):
        return None, False, "Slurm state unknown: %s" % one_line(slurm["error"], 200)
    state = slurm.get("state")
    parts = state if isinstance(state, (list, tuple)) else re.split(r"[+ ,]", str(state or ""))
    parts = {str(s).strip().upper().rstrip("*~#!%$@^-") for s in parts if str(s).strip()}
    unavailable = any(s.startswith("DRAIN") or s in ("DOWN", "FAIL", "FAILING") for s in parts)
    reason = one_line(slurm.get("reason") or "", 200)
    # slurm_node's ownership record is the proof; without one, our prefix is the best hint
    ours = unavailable and (slurm["owned"] is True if "owned" in slurm else reason.startswith(OUR_PREFIX))
    who = slurm.get("reason_user")
    words = "%s (%s%s)" % (reason or "no reason given", "+".join(sorted(parts)) or "?",
                           ", by %s" % who if who else "")
    return unavailable, ours, words


def one_line(text, limit=160):
    """Whitespace and control characters collapsed, at most ``limit`` characters."""
    s = re.sub(r"[\x00-\x1f\x7f\s]+", " ", str(text)).strip()
    return s if len(s) <= limit else s[:limit - 3].rstrip() + "..."
