# SPDX-License-Identifier: Apache-2.0
"""Finding kinds about the host as a whole: probes that failed or hung, hosts we could not
reach or use, parser bugs, and the cross-host (cluster) rules."""

from .table import kind

STEPS = {
    "pcie_check_link": (None, "Reseat the card (or its riser) at the next service window and check that `lspci -vv` "
                              "shows LnkSta at LnkCap's width under load.",
                        "다음 정비 시간에 카드(또는 라이저)를 재장착하고, 부하 상태에서 `lspci -vv`의 LnkSta 폭이 "
                        "LnkCap과 같은지 확인하십시오."),
    "pkg_reboot_after_driver_change": (
        None, "If nvidia-smi says 'Driver/library version mismatch', drain the node and reboot it (or reload the "
              "nvidia modules) so the kernel module matches the new libraries; upgrade Fabric Manager to the same "
              "version.",
        "nvidia-smi가 'Driver/library version mismatch'를 보이면 노드를 drain하고 재부팅(또는 nvidia 모듈 재로드)하여 "
        "커널 모듈을 새 라이브러리와 맞추고, Fabric Manager도 같은 버전으로 올리십시오."),
    "pkg_hold_driver": (
        None, "Hold the driver's packages (`apt-mark hold`, or unattended-upgrades' Package-Blacklist) and change "
              "them only in a drained maintenance window.",
        "드라이버 패키지를 고정(`apt-mark hold` 또는 unattended-upgrades의 Package-Blacklist)하고 drain한 정비 "
        "시간에만 바꾸십시오."),
    "check_controller_access": (None, "Check the controller's SSH keys, inventory and network (`ansible -m ping`).",
                                "컨트롤러의 SSH 키, 인벤토리, 네트워크를 확인하십시오 (`ansible -m ping`)."),
    "k8s_check_unhealthy_gpus": (
        None, "Read the device plugin's log on that node (`kubectl logs` of its nvidia-device-plugin pod: "
              "'XidCriticalError: Xid=N on Device=GPU-...') and the node's kernel log and `nvidia-smi` for which GPU "
              "and why; the plugin returns a GPU only when it restarts.",
        "해당 노드의 device plugin 로그(nvidia-device-plugin 파드의 `kubectl logs`: 'XidCriticalError: Xid=N on "
        "Device=GPU-...')와 노드의 커널 로그, `nvidia-smi`에서 어느 GPU가 왜 빠졌는지 확인하십시오; plugin은 "
        "재시작할 때만 GPU를 되돌립니다."),
    "nccl_topo_check_gdr": (
        None, "If this NIC should carry the GPUs' traffic directly, check that `nvidia_peermem` is loaded (`lsmod`) "
              "or that NCCL may use DMA-BUF (open GPU kernel modules, kernel 5.12 or later), and where the NIC sits "
              "in the PCIe tree against its GPUs (`nvidia-smi topo -m`: NCCL uses GPUDirect RDMA up to "
              "NCCL_NET_GDR_LEVEL, PXB by default).",
        "이 NIC가 GPU 트래픽을 직접 처리해야 한다면 `nvidia_peermem`이 로드되었는지(`lsmod`), 또는 NCCL이 DMA-BUF를 "
        "쓸 수 있는지(오픈 GPU 커널 모듈, 커널 5.12 이상), 그리고 PCIe 트리에서 NIC가 GPU와 어디에 있는지 "
        "확인하십시오(`nvidia-smi topo -m`: NCCL은 NCCL_NET_GDR_LEVEL까지, 기본 PXB까지 GPUDirect RDMA를 씀)."),
}

KINDS = {
    # NCCL's topology dump (nccl_topo.py): a NIC NCCL cannot use GPUDirect RDMA with
    "nccl_topo_no_gdr": kind(
        "nccl_config", "info", "none", ("nccl_topo_check_gdr",),
        "NCCL's topology says it cannot use GPUDirect RDMA with a NIC (gdr=0): traffic to the GPUs is staged "
        "through host memory, slower but no failure",
        "NCCL 토폴로지상 NIC와 GPUDirect RDMA를 쓸 수 없음(gdr=0): GPU로 가는 트래픽이 호스트 메모리를 거침 "
        "(느리지만 장애는 아님)"),
    # kubectl describe node (k8s_node.py): the device plugin withdrew GPUs it marked unhealthy
    "k8s_gpus_unallocatable": kind(
        "unknown", "warning", "none", ("k8s_check_unhealthy_gpus",),
        "the node has fewer allocatable GPUs than GPUs: the NVIDIA device plugin withdrew the ones it marked unhealthy",
        "노드의 할당 가능한 GPU가 전체 GPU보다 적음: NVIDIA device plugin이 비정상으로 표시한 GPU를 뺌"),
    "parser_error": kind(
        "unknown", "warning", "none", ("report_parser_bug",),
        "a source could not be parsed (a gpu-runbook bug): its evidence is missing",
        "소스를 파싱하지 못함(gpu-runbook 버그): 해당 근거가 누락됨"),
    # ---- the host as Ansible saw it
    "host_unreachable": kind(
        "unknown", "critical", "drain", ("drain_node", "check_console"),
        "the host did not answer (a dead or wedged node)",
        "호스트 응답 없음 (죽었거나 멈춘 노드)"),
    "unreachable_everywhere": kind(
        "unknown", "warning", "none", ("check_controller_access", "rerun_diagnosis"),
        "no host of the run answered: the controller's access (SSH keys, inventory, network), not every node",
        "실행 대상 호스트가 모두 응답하지 않음: 모든 노드 고장이 아니라 컨트롤러의 접속 설정(SSH 키, 인벤토리, 네트워크) 문제"),
    "gather_failed": kind(
        "unknown", "warning", "none", ("check_console", "rerun_diagnosis"),
        "the health gather failed on this host",
        "이 호스트에서 상태 수집이 실패함"),
    # ---- the node's PCIe links (lspci.py)
    # lspci -vv's LnkSta below LnkCap (lspci.py): fewer lanes halve the device's bandwidth
    "pcie_link_degraded": kind(
        "unknown", "warning", "none", ("pcie_check_link",),
        "a GPU's or HCA's PCIe link runs below what it can (fewer lanes or a lower speed)",
        "GPU 또는 HCA의 PCIe 링크가 가능한 것보다 낮게 동작함 (레인 수 또는 속도 저하)",
        also=("gpu_hardware", "ib_network")),
    # lspci's 'Kernel modules:' with no 'Kernel driver in use:' over it, or nouveau in use (lspci.py)
    "gpu_no_nvidia_driver": kind(
        "driver", "warning", "drain", ("drain_node", "check_driver", "gpu_check_module_loaded"),
        "a GPU that the NVIDIA driver does not hold (none bound, or another driver): no job can use it",
        "NVIDIA 드라이버가 잡고 있지 않은 GPU (바인딩된 드라이버 없음 또는 다른 드라이버): 어떤 작업도 사용할 수 없음"),
    # apt's history.log / dpkg.log: the driver's packages changed (pkglog.py)
    "driver_packages_changed": kind(
        "driver", "warning", "none", ("pkg_reboot_after_driver_change", "pkg_hold_driver"),
        "the NVIDIA driver's packages changed: until a reboot the loaded module and the new libraries differ",
        "NVIDIA 드라이버 패키지가 바뀜: 재부팅 전까지 로드된 모듈과 새 라이브러리의 버전이 다름"),
    # ---- cross-host rules (cluster.py)
    "xid_on_every_host": kind(
        "application", "warning", "fix_application", ("check_job_code", "fix_application"),
        "Xid {xid} on every host: the application or the driver, not one GPU",
        "모든 호스트에서 Xid {xid} 발생: GPU 하나의 고장이 아니라 애플리케이션/드라이버 문제"),
    "straggler": kind(
        "unknown", "warning", "drain", ("drain_node", "check_clocks_cooling", "active_run_tier"),
        "{name} is slower than its peers: every collective waits for this host",
        "{name}: 다른 노드보다 느린 노드(straggler): 모든 collective가 이 노드를 기다림",
        also=("gpu_hardware",)),
    "shared_rail_errors": kind(
        "ib_network", "warning", "drain", ("drain_node", "check_leaf_switch"),
        "link errors on rail {ib} on several hosts ({name}): the rail's leaf switch, not each HCA",
        "같은 레일 {ib}에서 여러 호스트({name})에 링크 오류: HCA가 아니라 해당 레일의 리프 스위치 쪽 문제"),
    "job_node_not_checked": kind(
        "unknown", "warning", "none", ("widen_inventory",),
        "{name}, a node of the job, was not checked (no evidence of it: not in the inventory, outside --limit, "
        "or no capture of it given)",
        "작업의 노드 {name}을(를) 점검하지 못함 (근거 없음: 인벤토리에 없거나 --limit 밖이거나 캡처가 주어지지 않음)"),
    "job_culprit_node_not_checked": kind(
        "unknown", "critical", "drain", ("drain_node", "widen_inventory"),
        "{name}, the node of a culprit rank, was not checked (no evidence of it: not in the inventory, outside "
        "--limit, or no capture of it given)",
        "원인 랭크의 노드 {name}을(를) 점검하지 못함 (근거 없음: 인벤토리에 없거나 --limit 밖이거나 캡처가 주어지지 않음)"),
    "job_culprit": kind(
        "nccl_deadlock", "critical", None, (),
        "rank {rank} is the rank the others waited for (GPU {gpu})",
        "랭크 {rank}: 다른 랭크들이 기다린 원인 랭크 (GPU {gpu})",
        also=("gpu_hardware", "driver", "ib_network", "unknown", "memory_leak", "dataloader",
              "application", "nccl_config")),
}
