"""parse_nvidia_smi_failure: a failing nvidia-smi must never read as healthy.

The message lines are nvidia-smi's real wording, copied from public reports (URL above each)."""

import re
from pathlib import Path

import pytest

from gpu_runbook.nvsmi import EXIT_CODES, FAILURES, parse_nvidia_smi, parse_nvidia_smi_failure
from gpu_runbook.taxonomy import KINDS, SEVERITY_RANK

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "nvsmi"

# https://github.com/tinygrad/open-gpu-kernel-modules/issues/47 (and anderskm/gputil#55: exit code 18)
MISMATCH = "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 570.124\n"
# https://github.com/ci-for-research/self-hosted-runners/issues/40
NO_DRIVER = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the "
             "latest NVIDIA driver is installed and running.\n")
# https://github.com/NVIDIA/open-gpu-kernel-modules/issues/862
NO_DEVICES = "No devices were found\n"
# https://github.com/kubernetes-sigs/dra-driver-nvidia-gpu/issues/1008 (exit code 255)
NO_SUPPORTED = "Failed to initialize NVML: No supported GPUs were found\nUnable to determine the number of GPUs\n"
# https://github.com/NVIDIA/open-gpu-kernel-modules/issues/387
HANDLE_UNKNOWN = "Unable to determine the device handle for GPU 0000:0B:00.0: Unknown Error\n"
# https://github.com/JosephKJ/OWOD/issues/81
HANDLE_LOST = ("Unable to determine the device handle for GPU 0000:02:00.0: GPU is lost.  Reboot the system to "
               "recover this GPU\n")
NVML_UNKNOWN = "Failed to initialize NVML: Unknown Error\n"
# https://github.com/NVIDIA/nvidia-container-toolkit/issues/210
NO_PERMISSION = "Failed to initialize NVML: Insufficient Permissions\n"
DENIED = "bash: /usr/bin/nvidia-smi: Permission denied\n"

# (text, exit code, kind, category, severity, rung)
CAUSES = [
    (MISMATCH, 18, "nvml_driver_mismatch", "driver", "critical", "reboot"),
    (NO_DRIVER, 9, "nvsmi_driver_unreachable", "driver", "critical", "drain"),
    (NO_DEVICES, 6, "nvsmi_no_devices", "driver", "critical", "reboot"),
    (NO_SUPPORTED, 255, "nvsmi_no_devices", "driver", "critical", "reboot"),
    (HANDLE_UNKNOWN, 255, "gpu_handle_error", "gpu_hardware", "critical", "reboot"),
    (HANDLE_LOST, 15, "gpu_lost", "gpu_hardware", "critical", "reboot"),
    (NVML_UNKNOWN, 255, "nvml_init_failed", "driver", "critical", "reboot"),
    (NO_PERMISSION, 4, "nvml_permission", "unknown", "warning", "none"),
    (DENIED, 126, "nvml_permission", "unknown", "warning", "none"),
]


def at_least_warning(findings):
    return bool(findings) and all(SEVERITY_RANK[f["severity"]] >= SEVERITY_RANK["warning"] for f in findings)


@pytest.mark.parametrize("text,rc,kind,category,severity,rung", CAUSES)
def test_each_cause_is_named(text, rc, kind, category, severity, rung):
    facts, findings = parse_nvidia_smi_failure(text, rc, source="nvidia-smi-q.xml")
    f, = findings
    assert (f["kind"], f["category"], f["severity"], f["rung"]) == (kind, category, severity, rung)
    assert f["source"] == "nvidia-smi-q.xml:1" and f["evidence"] == text.splitlines()[0].strip()
    assert "exit code %d" % rc in f["message"]
    assert facts["gpus"] == [] and facts["count"] == 0 and facts["exit_code"] == rc


def test_mismatch_reads_drain_and_reboot_and_the_library_version():
    _, (f,) = parse_nvidia_smi_failure(MISMATCH, 18)
    assert f["steps"][:2] == ["drain_node", "reboot_node"]
    assert "570.124" in f["message"] and "kernel module" in f["message"]


def test_driver_not_loaded_says_drain_and_check_driver():
    _, (f,) = parse_nvidia_smi_failure(NO_DRIVER, 9)
    assert f["steps"][:2] == ["drain_node", "check_driver"]
    assert "NVIDIA driver is not loaded" in f["message"]  # nvidia-smi(1): return code 9


def test_lost_gpu_names_the_gpu():
    _, (f,) = parse_nvidia_smi_failure(HANDLE_LOST, 15)
    assert f["gpu"]["pci"] == "0000:02:00.0" and "GPU is lost" in f["message"]


def test_normal_parse_and_failure_read_the_same_table():
    """One table of patterns: a message means the same thing in both paths."""
    for text, rc, kind, _, _, _ in CAUSES:
        assert [f["kind"] for f in parse_nvidia_smi(text, "f.txt")[1]] == [kind], text
    assert all(KINDS[k]["severity"] in ("warning", "critical") for _, k, _ in FAILURES)


@pytest.mark.parametrize("text,rc,needle", [
    ("", 9, "(exit code 9: NVIDIA driver is not loaded) and printed nothing"),
    (None, 15, "(exit code 15: the GPU has fallen off the bus"),
    ("Segmentation fault (core dumped)\n", 139, "(exit code 139) and printed: Segmentation fault (core dumped)"),
    ("\n\n  some noise\nmore\n", "2", "(exit code 2: a supplied argument or flag is invalid) and printed: some noise"),
    ("", None, "exit code unknown"),
    ("", -9, "killed by signal 9"),
    ("", "not-a-number", "exit code unknown"),
])
def test_unknown_or_silent_failure_is_nvidia_smi_failed(text, rc, needle):
    facts, findings = parse_nvidia_smi_failure(text, rc)
    f, = findings
    assert (f["kind"], f["severity"]) == ("nvidia_smi_failed", "warning")
    assert needle in f["message"], f["message"]
    assert facts["count"] == 0


@pytest.mark.parametrize("text,rc", [(c[0], c[1]) for c in CAUSES] + [("", 9), ("oops\n", 1), (None, None)])
def test_expected_gpu_count_still_checked(text, rc):
    _, findings = parse_nvidia_smi_failure(text, rc, expected_gpus=8)
    m, = [f for f in findings if f["kind"] == "gpu_missing"]
    assert m["severity"] == "critical" and "0 of 8 expected GPUs" in m["message"]
    assert len(findings) == 2 and at_least_warning(findings)
    # and none without an expectation
    assert not [f for f in parse_nvidia_smi_failure(text, rc)[1] if f["kind"] == "gpu_missing"]


def test_expected_count_mentions_gpus_it_could_not_open():
    _, findings = parse_nvidia_smi_failure(HANDLE_UNKNOWN + HANDLE_LOST, 15, expected_gpus="8")
    assert sorted(f["kind"] for f in findings) == ["gpu_handle_error", "gpu_lost", "gpu_missing"]
    assert "(2 it could not open)" in [f for f in findings if f["kind"] == "gpu_missing"][0]["message"]


@pytest.mark.parametrize("text", [c[0] for c in CAUSES] + ["", None, "\x00\xff garbage", "<?xml", "a,b,c\n1,2",
                                                             "GPU 00000000:3B:00.0\n", 12345])
@pytest.mark.parametrize("rc", [None, 0, 1, 9, 255, -15, "x"])
def test_never_below_warning_never_raises(text, rc):
    facts, findings = parse_nvidia_smi_failure(text, rc, expected_gpus=4)
    assert at_least_warning(findings), findings
    assert facts["count"] == len(facts["gpus"])


def gpu_sections(text):
    return re.split(r"(?m)^(?=GPU [0-9A-Fa-f]{8}:)", text)


def test_partial_report_is_kept():
    """nvidia-smi -q exits non-zero when it cannot open one GPU but prints the others."""
    text = (FIX / "005-gpud-smi-q-h100x8-healthy" / "nvidia-smi-q.txt").read_text()
    parts = gpu_sections(text)
    lost = parts[3].split()[1]
    t = "Unable to determine the device handle for GPU %s: Unknown Error\n" % lost + parts[0] + \
        "".join(parts[1:3] + parts[4:])
    facts, findings = parse_nvidia_smi_failure(t, 15, source="q.txt", expected_gpus=8)
    assert facts["count"] == 7 and facts["exit_code"] == 15
    assert [f["kind"] for f in findings if f["severity"] != "info"] == ["gpu_handle_error"]
    assert findings[0]["gpu"]["index"] == 2


def test_full_report_with_a_failed_exit_still_says_it_failed():
    text = (FIX / "009-gpud-smi-table-h100x8-healthy" / "nvidia-smi.txt").read_text()
    assert parse_nvidia_smi(text, "t.txt")[1] == []
    facts, findings = parse_nvidia_smi_failure(text, 255, source="t.txt")
    assert facts["count"] == 8
    f, = findings
    assert f["kind"] == "nvidia_smi_failed" and "exit code 255" in f["message"]


def test_exit_codes_follow_the_man_page():
    # nvidia-smi(1) RETURN VALUE, as quoted in NVIDIA's GPU operator troubleshooting guide
    assert EXIT_CODES[9] == "NVIDIA driver is not loaded"
    assert EXIT_CODES[12] == "NVML Shared Library couldn't be found or loaded"
    assert EXIT_CODES[14] == "infoROM is corrupted"


def test_nvmls_handle_call_failing_in_another_nvidia_tool_is_the_same_lost_gpu(tmp_path):
    # nvidia-debugdump --list on a K80 whose GPUs fell off the bus (held-out x42-15, gperdrizet/PUBSUM)
    text = ("$ nvidia-debugdump --list\nFound 4 NVIDIA devices\nError: nvmlDeviceGetHandleByIndex(): Unknown Error\n"
            "FAILED to get details on GPU (0x0): Unknown Error\n")
    (tmp_path / "debugdump.txt").write_text(text)
    from gpu_runbook.cli import analyze_paths
    (h,) = analyze_paths([str(tmp_path)])["hosts"]
    (f,) = [f for f in h["findings"] if f["kind"] == "gpu_handle_error"]
    assert f["message"].startswith("NVML cannot open GPU ? (Unknown Error)") and f["severity"] == "critical"
    # nvidia-smi's own words still say nvidia-smi
    _facts, (g,) = parse_nvidia_smi(HANDLE_UNKNOWN)
    assert g["message"].startswith("nvidia-smi cannot open GPU 0000:0b:00.0")
