"""A kernel log whose GPUs are another vendor's (AMD's amdgpu driver): gpu-runbook reads NVIDIA's
driver, so such GPUs are never called healthy, and the driver's errors are quoted as not understood."""

from gpu_runbook.cli import analyze_paths

# a real dmesg -T excerpt (ROCm/legacy-rocm-build issue 2747): amdgpu fails to start the PSP ring
PSP = ("[Mon Dec 18 08:34:36 2023] amdgpu 0000:c7:00.0: amdgpu: Will use PSP to load VCN firmware\n"
       "[Mon Dec 18 08:34:36 2023] [drm:psp_hw_start [amdgpu]] *ERROR* PSP create ring failed!\n")
QUIET = "[89410.712073] amdgpu 0000:03:00.0: amdgpu: SMU is resuming...\n"
NVIDIA = "[89411.000000] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.90.07  Fri May 31 09:35:42 UTC 2024\n"


def host(tmp_path, text, name="dmesg.txt"):
    (tmp_path / name).write_text(text)
    (h,) = analyze_paths([str(tmp_path / name)], host="gpu-a-01")["hosts"]
    return h


def test_amd_gpus_are_not_called_healthy(tmp_path):
    for name in ("dmesg.txt", "kern.log", "paste.txt"):
        h = host(tmp_path, QUIET, name)
        assert h["verdict"] == "unknown" and "gpu_driver_not_nvidia" in [f["kind"] for f in h["findings"]], h
        (tmp_path / name).unlink()


def test_the_amd_drivers_errors_are_quoted_as_not_understood(tmp_path):
    h = host(tmp_path, PSP)
    (unexplained,) = [f for f in h["findings"] if f["kind"] == "unexplained_errors"]
    assert "PSP create ring failed" in unexplained["message"]


def test_beside_nvidias_driver_an_amd_line_is_no_verdict_by_itself(tmp_path):
    # a workstation's integrated AMD graphics beside NVIDIA GPUs: the NVIDIA reading stands
    h = host(tmp_path, QUIET + NVIDIA)
    assert "gpu_driver_not_nvidia" not in [f["kind"] for f in h["findings"]]
