# SPDX-License-Identifier: Apache-2.0
"""A probe that failed, hung or was cut -> the findings that say so. What a failure means
depends on the source's family (sources.FAMILY): a hung nvidia-smi is the classic sign of a
wedged GPU or driver, a critical finding in itself, not a tooling problem; a failing
nvidia-smi says why in its own words (parse_nvidia_smi_failure names the cause)."""

from .findings import finding, never_raise
from .sources import FAMILY as _PROBE_FAMILY


def probe_error_findings(name, err, expected_gpus=None):
    """A probe error dict of source ``name`` -> the findings it means (a list). A timeout
    names the source and how long it was waited for; a failed or refused nvidia-smi is read
    for its cause (and the expected GPU count is still checked: 0 GPUs were seen)."""
    kind = err.get("kind", "failed")
    fam = _PROBE_FAMILY.get(name, "other")
    if fam == "gpu" and kind in ("failed", "denied"):
        from .nvsmi import parse_nvidia_smi_failure
        text = err.get("text") or err.get("error") or ""
        _, fs = never_raise(parse_nvidia_smi_failure, name, text, rc=err.get("rc"), source=name,
                            expected_gpus=expected_gpus)
        return fs
    if kind == "timeout":
        return [_timeout_finding(name, err, fam)]
    return [_error_finding(name, err, fam, kind)]


def _timeout_finding(name, err, fam):
    cmd = err.get("cmd") or name
    waited = err.get("seconds")
    within = "within %ss" % waited if waited is not None else "before the deadline"
    if fam == "gpu":
        return finding("nvidia_smi_hang", "nvidia-smi did not answer %s (%s): the GPU or its driver is wedged"
                       % (within, cmd), evidence=cmd, source=name)
    if fam == "ib":
        return finding("ib_probe_hang", "%s: the InfiniBand read did not answer %s (%s)" % (name, within, cmd),
                       evidence=cmd, source=name)
    if fam == "gpu_apps":
        return finding("compute_apps_failed", "the compute-process query did not answer %s (%s)" % (within, cmd),
                       evidence=cmd, source=name)
    what = ": Xid and link events may be missing" if fam == "kernel" else ""
    return finding("probe_timeout", "%s was not read: no answer %s (%s)%s"
                   % (name, within, err.get("error") or cmd, what), evidence=cmd, source=name)


def _error_finding(name, err, fam, kind):
    msg = err.get("error", "probe failed")
    cmd = err.get("cmd") or name
    if fam == "gpu" and kind == "missing":
        return finding("nvidia_smi_missing",
                       "nvidia-smi is not installed or not on PATH: GPU health was not checked (%s)" % msg,
                       evidence=cmd, source=name)
    if fam == "gpu_apps":
        return finding("compute_apps_failed", "compute-process query failed (%s)" % msg, evidence=cmd, source=name)
    if fam == "kernel":
        return finding("kernel_log_unavailable",
                       "kernel log could not be read (%s): Xid and link events may be missing" % msg,
                       evidence=cmd, source=name, severity="info" if kind == "missing" else None)
    if kind == "unreadable":
        return finding("capture_unreadable", "%s could not be read: %s" % (name, msg), evidence=cmd, source=name)
    return finding("probe_failed", "%s: %s" % (name, msg), evidence=cmd, source=name)
