"""A probe that failed, hung or was cut -> the finding that says so. What a failure means
depends on the source's family (sources.FAMILY): a hung nvidia-smi is the classic sign of a
wedged GPU or driver, a critical finding in itself, not a tooling problem."""

from .findings import make_finding
from .sources import FAMILY as _PROBE_FAMILY, COMPUTE_APPS  # noqa: F401


def probe_error_findings(name, err, expected_gpus=None):
    """A probe error dict of source ``name`` -> the findings it means (a list)."""
    return [_probe_error_finding(name, err)]


def _probe_error_finding(name, err):
    kind = err.get("kind", "failed")
    fam = _PROBE_FAMILY.get(name, "other")
    msg = err.get("error", "probe failed")
    cmd = err.get("cmd") or name
    if fam == "gpu" and kind == "timeout":
        return make_finding(
            "driver", "critical", "nvidia_smi_hang",
            "nvidia-smi did not answer (%s): the GPU or its driver is wedged" % msg,
            "Drain the node; a hung nvidia-smi usually needs a node reboot (a GPU reset cannot reach a wedged driver).",
            evidence=cmd, source=name, rung="reboot")
    if fam == "gpu" and kind == "missing":
        return make_finding(
            "unknown", "warning", "nvidia_smi_missing",
            "nvidia-smi is not installed or not on PATH: GPU health was not checked (%s)" % msg,
            "Check the NVIDIA driver installation on this node.", evidence=cmd, source=name)
    if fam == "gpu_apps":
        return make_finding(
            "unknown", "info", "probe_failed",
            "compute-process query failed (%s)" % msg, "None needed for diagnosis.",
            evidence=cmd, source=name)
    if fam == "kernel":
        return make_finding(
            "unknown", "warning" if kind != "missing" else "info", "kernel_log_unavailable",
            "kernel log could not be read (%s): Xid and link events may be missing" % msg,
            "Run as root or set kernel.dmesg_restrict=0; check journald and /var/log/kern.log.",
            evidence=cmd, source=name)
    if fam == "ib" and kind == "timeout":
        return make_finding(
            "ib_network", "critical", "ib_probe_hang",
            "InfiniBand probe did not answer (%s)" % msg,
            "Drain the node and check the HCA driver (mlx5_core) and openibd.",
            evidence=cmd, source=name, rung="ib_restart")
    return make_finding(
        "unknown", "info", "probe_failed", "%s: %s" % (name, msg),
        "None: other sources cover this.", evidence=cmd, source=name)
