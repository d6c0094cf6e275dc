"""``nvidia-smi --query-retired-pages=...`` (nvsmi/query_csv.py): a row per retired page, counted per GPU
by cause; a row whose address is [N/A] names no page."""

import pytest

from gpu_runbook.cli import analyze_paths
from gpu_runbook.nvsmi import parse_nvidia_smi

# held-out x41-11 (an A100: page retirement is not reported on Ampere, row remapping is)
NOT_REPORTED = "retired_pages.address, retired_pages.cause\n[N/A], Single Bit ECC\n[N/A], Double Bit ECC\n"
COMMAND = ("$ nvidia-smi --query-retired-pages=gpu_uuid,retired_pages.address,retired_pages.cause --format=csv\n"
           "gpu_uuid, retired_pages.address, retired_pages.cause\n")


def _pages(uuid, n, cause, start=0x1000):
    return "".join("%s, 0x%08x, %s\n" % (uuid, start + i, cause) for i in range(n))


def test_every_address_not_available_is_no_reading_of_memory():
    facts, findings = parse_nvidia_smi(NOT_REPORTED, source="retired-pages.csv")
    assert facts["gpus"] == [] and [f["kind"] for f in findings] == ["nvsmi_no_health_fields"]
    assert "[N/A]" in findings[0]["message"] and findings[0]["source"] == "retired-pages.csv:2"


def test_pages_are_counted_per_gpu_by_cause_and_the_rma_threshold_applies():
    text = COMMAND + _pages("GPU-aaaa", 2, "Single Bit ECC") + _pages("GPU-aaaa", 1, "Double Bit ECC", 0x9000) + \
        _pages("GPU-bbbb", 61, "Double Bit ECC")
    facts, findings = parse_nvidia_smi(text, source="pages.csv")
    by_uuid = {g["uuid"]: g["retired_pages"] for g in facts["gpus"]}
    assert by_uuid["GPU-aaaa"]["single_bit"] == 2 and by_uuid["GPU-aaaa"]["double_bit"] == 1
    assert by_uuid["GPU-bbbb"]["double_bit"] == 61
    (f,) = [f for f in findings if f["kind"] == "retired_pages_limit"]
    assert "61 retired pages" in f["message"] and f["category"] == "gpu_hardware"


def test_a_cause_nvidia_smi_does_not_print_is_said_not_counted():
    facts, findings = parse_nvidia_smi(COMMAND + "GPU-aaaa, 0x00001000, Cosmic Ray\n", source="pages.csv")
    assert [f["kind"] for f in findings if f["kind"] == "nvsmi_csv_bad_row"] == ["nvsmi_csv_bad_row"]


@pytest.mark.parametrize("name", ["retired-pages.csv", "notes.txt"])
def test_read_by_content_and_never_healthy_when_nothing_is_reported(tmp_path, name):
    (tmp_path / name).write_text(NOT_REPORTED)
    (h,) = analyze_paths([str(tmp_path)])["hosts"]
    assert h["verdict"] == "unknown" and "nvsmi_no_health_fields" in [f["kind"] for f in h["findings"]]


def test_a_pasted_command_and_its_pages_are_read_by_content(tmp_path):
    (tmp_path / "notes.txt").write_text(COMMAND + _pages("GPU-bbbb", 64, "Double Bit ECC"))
    (h,) = analyze_paths([str(tmp_path)])["hosts"]
    assert (h["verdict"], h["severity"]) == ("gpu_hardware", "critical")
    assert "retired_pages_limit" in [f["kind"] for f in h["findings"]]
