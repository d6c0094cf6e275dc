# SPDX-License-Identifier: Apache-2.0
"""Finding kinds about the evidence itself: probes that failed, hung or were cut, captures
that could not be read, hosts with nothing usable. See taxonomy/__init__.py for the row format."""

from .table import kind

STEPS = {}

KINDS = {
    "nvidia_smi_hang": kind(
        "driver", "critical", "reboot", ("drain_node", "reboot_node"),
        "nvidia-smi did not answer: the GPU or its driver is wedged (a GPU reset cannot reach a wedged driver)",
        "nvidia-smi 응답 없음: GPU 또는 드라이버가 멈춤 (GPU 리셋으로는 멈춘 드라이버에 닿지 못함)"),
    # unknown, not driver: nothing was seen of the GPUs, so the verdict is "unknown"
    "nvidia_smi_missing": kind(
        "unknown", "warning", "drain", ("drain_node", "check_driver"),
        "nvidia-smi is not installed or not on PATH: GPU health was not checked",
        "nvidia-smi가 없음: GPU 상태를 확인하지 못함", also=("driver",)),
    "probe_timeout": kind(
        "unknown", "warning", "drain", ("drain_node", "check_console"),
        "a probe did not answer before the deadline: its source was not read",
        "프로브가 제한 시간 안에 응답하지 않음: 해당 소스를 읽지 못함"),
    "ib_probe_hang": kind(
        "ib_network", "critical", "ib_restart", ("drain_node", "check_hca", "restart_openibd"),
        "an InfiniBand read did not answer: the HCA or its driver (mlx5_core) is wedged",
        "InfiniBand 읽기가 응답하지 않음: HCA 또는 드라이버(mlx5_core)가 멈춤"),
    "kernel_log_unavailable": kind(
        "unknown", "warning", "none", ("grant_kernel_log",),
        "the kernel log could not be read: Xid and link events may be missing",
        "커널 로그를 읽지 못함: Xid/링크 이벤트가 누락될 수 있음"),
    "compute_apps_failed": kind(
        "unknown", "info", "none", ("none_other_sources",),
        "the compute-process query failed: which process holds a GPU is unknown",
        "compute 프로세스 조회 실패: 어떤 프로세스가 GPU를 점유하는지 알 수 없음"),
    "probe_failed": kind(
        "unknown", "info", "none", ("none_other_sources",),
        "an optional probe failed; other sources cover it",
        "선택 프로브 실패; 다른 소스가 이를 대신함"),
    "capture_truncated": kind(
        "unknown", "warning", "none", ("rerun_diagnosis",),
        "a capture was read only in part (truncated, corrupt, or bigger than the read cap)",
        "캡처를 일부만 읽음 (잘림, 손상 또는 읽기 한도 초과)"),
    "capture_unreadable": kind(
        "unknown", "warning", "none", ("rerun_diagnosis",),
        "a capture could not be read",
        "캡처를 읽지 못함"),
    "no_evidence": kind(
        "unknown", "warning", "none", ("rerun_diagnosis",),
        "no usable evidence for this host: its health is unknown, not healthy",
        "이 호스트에 쓸 수 있는 근거가 없음: 정상이 아니라 상태 불명"),
}
