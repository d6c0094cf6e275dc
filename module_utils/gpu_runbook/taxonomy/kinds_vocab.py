# SPDX-License-Identifier: Apache-2.0
"""Finding kinds of the emitters' vocabularies (vocab/): a line a program we read printed,
matched to a message of that program's own source, where no dedicated reader of ours reads
it more closely. One kind per category; the row of the vocabulary table gives the severity
and the meaning (``note``), the emitter is the finding's ``name``. Their rung is "none" (the
ladder does not act on a message alone, however it reads), except a node the scheduler says
failed, which is drained like a host that does not answer. ``unexplained_errors`` is the
engine saying it did not understand: error-like lines no rule and no table explains."""

from .table import kind

STEPS = {
    "read_emitter_lines": (None, "Read the quoted lines with what their program's documentation says of them; "
                                 "act on the host's own evidence (Xid, ECC, IB counters).",
                           "인용된 줄을 해당 프로그램 문서의 설명과 함께 읽고, 호스트 자체 근거(Xid, ECC, IB "
                           "카운터)에 따라 조치하십시오."),
    "read_unexplained": (None, "Read the quoted lines: gpu-runbook does not know what they mean, so the health "
                               "here is not established.",
                         "인용된 줄을 직접 읽으십시오: gpu-runbook이 그 의미를 알지 못하므로 상태가 확인되지 "
                         "않았습니다."),
}

_READ = ("read_emitter_lines",)

KINDS = {
    "logged_gpu_error": kind(
        "gpu_hardware", "warning", "none", _READ,
        "{name} reported a GPU error", "{name}이(가) GPU 오류를 보고함"),
    "logged_driver_error": kind(
        "driver", "warning", "none", _READ,
        "{name} reported a GPU driver or CUDA runtime error", "{name}이(가) GPU 드라이버 또는 CUDA 런타임 오류를 보고함"),
    "logged_ib_error": kind(
        "ib_network", "warning", "none", _READ,
        "{name} reported a network (InfiniBand/RDMA) error", "{name}이(가) 네트워크(InfiniBand/RDMA) 오류를 보고함"),
    "logged_nccl_config_error": kind(
        "nccl_config", "warning", "none", _READ,
        "{name} reported a configuration or setup error", "{name}이(가) 설정 또는 구성 오류를 보고함"),
    "logged_application_error": kind(
        "application", "warning", "none", _READ,
        "{name} reported an error of the job's own code or its use of the library",
        "{name}이(가) 작업 코드 자체 또는 라이브러리 사용 오류를 보고함"),
    "logged_dataloader_error": kind(
        "dataloader", "warning", "none", _READ,
        "{name} reported a data-loading error", "{name}이(가) 데이터 로딩 오류를 보고함"),
    "logged_memory_error": kind(
        "memory_leak", "warning", "none", _READ,
        "{name} reported running out of memory", "{name}이(가) 메모리 부족을 보고함"),
    "logged_error": kind(
        "unknown", "warning", "none", _READ,
        "{name} reported an error that does not name its cause", "{name}이(가) 원인을 특정하지 않는 오류를 보고함"),
    "logged_node_failure": kind(
        "unknown", "critical", "drain", ("drain_node", "check_console"),
        "{name} reported that the node failed or stopped answering",
        "{name}이(가) 노드 장애 또는 무응답을 보고함"),
    "unexplained_errors": kind(
        "unknown", "warning", "none", ("read_unexplained", "report_parser_bug"),
        "error-like lines that no rule of gpu-runbook explains: not understood, so not healthy",
        "gpu-runbook의 어떤 규칙으로도 설명되지 않는 오류성 줄: 이해하지 못했으므로 정상이 아님"),
}

# the generic kind of each category (what a vocabulary row names when no dedicated kind fits)
BY_CATEGORY = {
    "gpu_hardware": "logged_gpu_error", "driver": "logged_driver_error", "ib_network": "logged_ib_error",
    "nccl_config": "logged_nccl_config_error", "application": "logged_application_error",
    "dataloader": "logged_dataloader_error", "memory_leak": "logged_memory_error", "unknown": "logged_error",
}
