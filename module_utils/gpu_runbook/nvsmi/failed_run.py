# SPDX-License-Identifier: Apache-2.0
"""When nvidia-smi itself failed: a non-zero exit and, usually, no report -- only its error
text (stderr + stdout). A failing nvidia-smi must never read as healthy: this names the cause
from nvidia-smi's own messages (the same table the parsers use, failures.FAILURES), falls back
to the exit code, and still checks the expected GPU count.
"""

from ..findings import finding, iter_lines
from .dispatch import detect_format, parse_nvidia_smi
from .failures import scan_failures
from .model import as_text, empty_facts, src

# nvidia-smi(1), RETURN VALUE; 16-18 are the NVML return codes nvidia-smi passes through
# (nvmlReturn_t), e.g. 18 after 'Driver/library version mismatch'.
EXIT_CODES = {
    2: "a supplied argument or flag is invalid",
    3: "the requested operation is not available on target device",
    4: "the current user does not have permission to access this device or perform this operation",
    6: "a query to find an object was unsuccessful",
    8: "a device's external power cables are not properly attached",
    9: "NVIDIA driver is not loaded",
    10: "NVIDIA Kernel detected an interrupt issue with a GPU",
    12: "NVML Shared Library couldn't be found or loaded",
    13: "local version of NVML doesn't implement this function",
    14: "infoROM is corrupted",
    15: "the GPU has fallen off the bus or has otherwise become inaccessible",
    16: "the GPU requires a reset before it can be used again",
    17: "the GPU control device has been blocked by the operating system/cgroups",
    18: "the NVIDIA kernel driver and its user-space library are different versions",
    255: "other error or internal driver error occurred",
}
_REPORT_FORMATS = ("xml", "q", "table", "csv")


def _exit_code(rc):
    try:
        return int(rc)
    except (TypeError, ValueError):
        return None


def _exit_text(rc):
    """'exit code 9: NVIDIA driver is not loaded' / 'killed by signal 9' / 'exit code unknown'."""
    if rc is None:
        return "exit code unknown"
    if rc < 0:
        return "killed by signal %d" % -rc
    meaning = EXIT_CODES.get(rc)
    return "exit code %d%s" % (rc, ": " + meaning if meaning else "")


def _failed(rc, lines, source):
    """nvidia_smi_failed: no message we know; say what we have (exit code, first line)."""
    first = next(((n, l.strip()) for n, l in lines if l.strip()), (0, ""))
    said = ("printed: %s" % first[1][:200]) if first[1] else "printed nothing"
    return finding("nvidia_smi_failed", "nvidia-smi failed (%s) and %s" % (_exit_text(rc), said),
                   evidence=first[1][:200], source=src(source, first[0]))


def _serious(findings):
    return [f for f in findings if f["severity"] in ("warning", "critical")]


def _partial_report(text, rc, source, expected_gpus):
    """nvidia-smi failed but printed a report for some GPUs (one lost, the others there):
    keep it, and make sure the failure itself is said. None when there is no report."""
    if detect_format(text) not in _REPORT_FORMATS:
        return None
    facts, findings = parse_nvidia_smi(text, source, expected_gpus)
    if not facts.get("gpus"):
        return None
    if not _serious(findings):
        findings.append(_failed(rc, list(iter_lines(text)), source))
    facts["exit_code"] = rc
    return facts, findings


def parse_failure(text, rc, source, expected_gpus):
    text = as_text(text)
    rc = _exit_code(rc)
    partial = _partial_report(text, rc, source, expected_gpus)
    if partial:
        return partial
    lines = list(iter_lines(text))
    facts = empty_facts(None)
    facts["exit_code"] = rc
    findings, handle_pcis = scan_failures(lines, source, [])
    serious = _serious(findings)
    if serious:
        serious[0]["message"] += " (nvidia-smi %s)" % _exit_text(rc)
    else:
        findings.append(_failed(rc, lines, source))
    expected = _exit_code(expected_gpus)
    if expected and expected > 0:
        unopened = len(set(handle_pcis))
        findings.append(finding(
            "gpu_missing", "nvidia-smi failed (%s) and shows 0 of %d expected GPUs%s" % (
                _exit_text(rc), expected, (" (%d it could not open)" % unopened) if unopened else ""),
            source=source))
    return facts, findings
