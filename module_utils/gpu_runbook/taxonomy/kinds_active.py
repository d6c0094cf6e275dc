# SPDX-License-Identifier: Apache-2.0
"""Finding kinds of the active tier (active/): tests that load a drained or idle node -- DCGM's
diagnostic, NCCL's single-node all-reduce, nvbandwidth, an ib_write_bw pair -- and its
inventory against what it should be. What DCGM itself reports keeps DCGM's kinds (dcgm/);
these say what a figure or a test that could not run means. See taxonomy/__init__.py."""

from .table import kind

STEPS = {
    "active_run_tier": (None, "Prove it under load once it is drained: `ansible-playbook playbooks/diagnose.yml -l "
                              "HOST -e active=yes` runs DCGM's diagnostic, the NCCL all-reduce bandwidth and "
                              "nvbandwidth on it (a slow GPU or link logs no Xid).",
                        "drain한 뒤 부하 상태에서 확인하십시오: `ansible-playbook playbooks/diagnose.yml -l HOST -e "
                        "active=yes`가 DCGM 진단, NCCL all-reduce 대역폭, nvbandwidth를 실행합니다(느린 GPU나 "
                        "링크는 Xid를 남기지 않음)."),
    "active_rerun_tier": (None, "Run the active tier again on the drained node (`remediate.yml` verify, or "
                                "`diagnose.yml -e active=yes`); a figure below the expected one twice is the node's.",
                          "drain된 노드에서 active 검사를 다시 실행하십시오(`remediate.yml`의 verify 또는 "
                          "`diagnose.yml -e active=yes`); 두 번 연속 기대치보다 낮으면 노드 문제입니다."),
    "active_install_tool": (None, "Install the tool on the node (DCGM: `datacenter-gpu-manager`, nccl-tests, "
                                  "nvbandwidth, perftest) and start its service, or set the check's expected "
                                  "figure/path; until then this check proves nothing.",
                            "노드에 도구를 설치하고(DCGM: `datacenter-gpu-manager`, nccl-tests, nvbandwidth, "
                            "perftest) 서비스를 시작하거나, 검사의 기대치/경로를 설정하십시오; 그 전까지 이 검사는 "
                            "아무것도 증명하지 못합니다."),
    "active_check_links": (None, "Compare `nvidia-smi topo -m` and `nvidia-smi nvlink --status` with a healthy node of "
                                 "the same model; a slow GPU or link at reset is a board, NVLink or PCIe slot fault.",
                           "`nvidia-smi topo -m`과 `nvidia-smi nvlink --status`를 같은 모델의 정상 노드와 비교하십시오; "
                           "리셋 후에도 느린 GPU나 링크는 보드, NVLink 또는 PCIe 슬롯 문제입니다."),
}

KINDS = {
    "active_busbw_low": kind(
        "gpu_hardware", "critical", "drain", ("drain_node", "active_check_links", "active_rerun_tier"),
        "the node's single-node NCCL all-reduce bus bandwidth is below what its GPU model reaches: a straggler "
        "that slows every collective it is in",
        "노드의 단일 노드 NCCL all-reduce 버스 대역폭이 GPU 모델의 기대치보다 낮음: 모든 collective를 늦추는 "
        "낙오 노드", also=("ib_network",)),
    "active_nvbandwidth_low": kind(
        "gpu_hardware", "critical", "drain", ("drain_node", "active_check_links", "active_rerun_tier"),
        "nvbandwidth measured a copy path (host to GPU, GPU to host, GPU to GPU) below the expected figure",
        "nvbandwidth가 복사 경로(호스트→GPU, GPU→호스트, GPU↔GPU)를 기대치보다 낮게 측정함"),
    "active_ib_bw_low": kind(
        "ib_network", "critical", "drain", ("drain_node", "check_cable", "active_rerun_tier"),
        "ib_write_bw between the two nodes is below the link's expected bandwidth",
        "두 노드 사이의 ib_write_bw가 링크의 기대 대역폭보다 낮음"),
    "active_data_wrong": kind(
        "gpu_hardware", "critical", "drain", ("drain_node", "active_check_links", "active_rerun_tier"),
        "the all-reduce delivered wrong data (#wrong > 0): corruption on a GPU, NVLink or the fabric",
        "all-reduce가 잘못된 데이터를 전달함(#wrong > 0): GPU, NVLink 또는 패브릭의 손상"),
    "active_test_failed": kind(
        "unknown", "critical", "drain", ("drain_node", "active_rerun_tier"),
        "an active test failed without a figure (it exited with an error): the node did not pass",
        "active 검사가 수치 없이 실패함(오류로 종료): 노드가 통과하지 못함"),
    "active_check_timeout": kind(
        "unknown", "warning", "drain", ("drain_node", "active_rerun_tier"),
        "an active test did not finish before its deadline and was stopped: it proves nothing",
        "active 검사가 제한 시간 안에 끝나지 않아 중단됨: 아무것도 증명하지 못함"),
    "active_not_run": kind(
        "unknown", "info", "none", ("active_install_tool",),
        "an active check was not run (its tool is missing, its service is down, or it was not asked for): not a pass",
        "active 검사가 실행되지 않음(도구 없음, 서비스 중지, 또는 요청되지 않음): 통과가 아님"),
    "active_refused_busy": kind(
        "unknown", "info", "none", ("active_rerun_tier",),
        "the active tier did not run: processes are on the GPUs (a job is running); it runs on drained or idle "
        "nodes only unless told otherwise",
        "active 검사를 실행하지 않음: GPU에 프로세스가 있음(작업 실행 중); 따로 지정하지 않으면 drain되었거나 유휴인 "
        "노드에서만 실행됨"),
    "active_left_running": kind(
        "unknown", "warning", "none", ("active_rerun_tier",),
        "a test process was still running after its deadline and cleanup: check the node before it takes jobs",
        "제한 시간과 정리 후에도 검사 프로세스가 실행 중: 작업을 받기 전에 노드를 확인하십시오"),
}
