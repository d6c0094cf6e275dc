"""Every finding the nvidia-smi parsers emit is a declared kind, and follows its table row."""

import random
import re
from pathlib import Path

import pytest

from gpu_runbook import nvsmi
from gpu_runbook.taxonomy import KINDS, STEPS, action_text, kinds_gpu

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "nvsmi"
CAPTURE_FILES = sorted(p for p in FIX.rglob("*") if p.suffix in (".txt", ".xml"))
PARSERS = (nvsmi.parse_nvidia_smi, nvsmi.parse_nvidia_smi_q, nvsmi.parse_nvidia_smi_xml,
           nvsmi.parse_nvidia_smi_table, nvsmi.parse_query_gpu_csv)


def check_declared(findings):
    for f in findings:
        assert f["kind"] != "parser_error", f["message"]  # a bug, e.g. a kind nobody declared
        assert f["kind"] in kinds_gpu.KINDS, f["kind"]
        row = KINDS[f["kind"]]
        assert f["category"] in row["categories"]
        assert f["rung"] == row["rung"] and tuple(f["steps"]) == row["steps"]
        assert f["action"] == action_text(row["steps"])


def test_fixture_files_found():
    assert len(CAPTURE_FILES) >= 20


@pytest.mark.parametrize("path", CAPTURE_FILES, ids=lambda p: "%s/%s" % (p.parent.name, p.name))
def test_every_fixture_finding_is_declared(path):
    text = path.read_text(encoding="utf-8")
    rnd = random.Random(path.name)
    cuts = [text]
    for _ in range(10):
        a = rnd.randrange(len(text))
        cuts += [text[:a], text[a:a + rnd.randrange(1, 4000)]]
    for t in cuts:
        for fn in PARSERS:
            for expected in (None, 8):
                check_declared(fn(t, "f.txt", expected_gpus=expected)[1])
        check_declared(nvsmi.parse_nvidia_smi_failure(t, 255, expected_gpus=8)[1])


def test_every_failure_kind_is_declared():
    texts = ["Failed to initialize NVML: Driver/library version mismatch\n", "No devices were found\n",
             "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
             "Failed to initialize NVML: GPU access blocked by the operating system\n",
             "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system.\n",
             "Unable to determine the device handle for GPU 0000:3B:00.0: GPU requires reset\n",
             "Unable to determine the device handle for GPU 0000:3B:00.0: Insufficient Permissions\n",
             "Unable to determine the device handle for GPU 0000:3B:00.0: Insufficient External Power\n",
             "WARNING: infoROM is corrupted at gpu 0000:0B:00.0\n", "", "junk"]
    seen = set()
    for t in texts:
        for fn in PARSERS:
            findings = fn(t, "f.txt", expected_gpus=8)[1]
            check_declared(findings)
            seen.update(f["kind"] for f in findings)
    assert {"nvsmi_access_blocked", "nvml_missing", "gpu_handle_reset_required", "gpu_handle_permission",
            "gpu_insufficient_power", "inforom_corrupted", "nvsmi_empty", "nvsmi_unparseable"} <= seen


def test_no_dead_kinds():
    """Every kind kinds_gpu declares is emitted somewhere by the GPU's readers: the nvsmi package, or
    DCGM's dcgmi dmon reader (the same counters read from DCGM's field monitor)."""
    from gpu_runbook.dcgm import dmon
    src = "\n".join(p.read_text() for p in Path(nvsmi.__file__).parent.glob("*.py")) + Path(dmon.__file__).read_text()
    for name in kinds_gpu.KINDS:
        assert re.search(r"[\"']%s[\"']" % name, src), name


def test_rows_are_bilingual():
    for name, row in kinds_gpu.KINDS.items():
        assert row["en"] and re.search(r"[\uac00-\ud7a3]", row["ko"]), name
    for sid, (_, en, ko) in kinds_gpu.STEPS.items():
        assert sid.startswith("gpu_") and en and re.search(r"[\uac00-\ud7a3]", ko), sid
        assert STEPS[sid][1] == en
