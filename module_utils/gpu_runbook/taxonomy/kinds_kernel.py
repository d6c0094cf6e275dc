# SPDX-License-Identifier: Apache-2.0
"""Finding kinds of the kernel domain: what the kernel log says (NVRM Xid and other GPU driver
messages, mlx5 HCA link/module/health events, PCIe AER, OOM kills, hung tasks), plus the
steps the Xid catalog (xid_catalog.py) builds its actions from. See taxonomy/__init__.py for
the row format.

Step ids are prefixed (``xid_``, ``kernel_``, ``pcie_``, ``hca_``) so they never collide with
rungs.STEPS or another domain's steps. A step that performs a rung while saying *when*
("drain the node if the errors continue") carries that rung: the rung is the costliest thing
the advice can lead to, which is what the ladder orders.
"""

from .table import kind

STEPS = {
    # ---- Xid catalog (xid_catalog.py)
    "xid_check_app_cuda": ("fix_application", "Check the application and its CUDA version.",
                           "애플리케이션과 CUDA 버전을 확인하십시오."),
    "xid_debug_app": ("fix_application", "Debug the application: an illegal memory access or instruction in "
                                         "one of its GPU kernels killed its context.",
                      "애플리케이션을 디버깅하십시오: GPU 커널의 잘못된 메모리 접근 또는 명령이 컨텍스트를 "
                      "종료시켰습니다."),
    "xid_check_video_input": ("fix_application", "Check the job's video input and its use of the decoder.",
                              "작업의 비디오 입력과 디코더 사용을 확인하십시오."),
    "xid_support_if_follows_gpu": (None, "Contact NVIDIA support if it recurs on the same GPU with other jobs.",
                                   "다른 작업에서도 같은 GPU에서 재발하면 NVIDIA 지원에 문의하십시오."),
    "xid_dcgm_if_follows_gpu": (None, "Run DCGM diagnostics (`dcgmi diag -r 3`) only if it follows this GPU "
                                      "across jobs.",
                                "작업이 바뀌어도 이 GPU에서 계속 발생할 때만 DCGM 진단(`dcgmi diag -r 3`)을 "
                                "실행하십시오."),
    "xid_teardown_alone_is_normal": (None, "Alone, it is the normal channel teardown of a process that exited "
                                           "or was killed.",
                                     "단독으로 발생했다면 프로세스 종료/강제 종료 시의 정상적인 채널 정리입니다."),
    "xid_reset_at_next_drain": ("gpu_reset", "Reset the GPU at the next drain so the pending row remap or "
                                             "retirement takes effect.",
                                "다음 drain 때 GPU를 리셋해 대기 중인 row remap 또는 retirement가 적용되게 "
                                "하십시오."),
    "xid_remap_at_next_drain": (None, "Reset the GPU at the next planned drain to apply the row remap; "
                                      "no hurry, only the affected process was killed.",
                                "다음 계획된 drain 때 GPU를 리셋해 row remap을 적용하십시오. 해당 프로세스만 "
                                "종료되었으므로 급하지 않습니다."),
    "xid_rma_if_remap_fails": (None, "Replace the GPU (RMA) if Xid 64 (remap failure) follows.",
                               "Xid 64(remap 실패)가 뒤따르면 GPU를 교체(RMA)하십시오."),
    "xid_trend_ecc": (None, "Trend the correctable ECC counts (`nvidia-smi -q -d ECC`); contact NVIDIA support "
                            "if they keep rising.",
                      "정정 가능한 ECC 카운트 추이를 보십시오 (`nvidia-smi -q -d ECC`). 계속 늘면 NVIDIA 지원에 "
                      "문의하십시오."),
    "xid_support_next_window": (None, "Mention it to NVIDIA support at the next service window.",
                                "다음 정비 시간에 NVIDIA 지원에 알리십시오."),
    "xid_fix_app_xid_first": (None, "If it follows an Xid 13/31 from the same job, fix that job first.",
                              "같은 작업의 Xid 13/31 뒤에 발생했다면 그 작업부터 고치십시오."),
    "xid_reboot_if_reset_fails": (None, "Reboot the node if the reset fails.", "리셋이 실패하면 노드를 재부팅하십시오."),
    "xid_check_nvlink_if_recurs": (None, "If the link fails again, check it (`nvidia-smi nvlink -s`, `-e`) and "
                                         "contact NVIDIA support.",
                                   "링크가 다시 실패하면 점검(`nvidia-smi nvlink -s`, `-e`)하고 NVIDIA 지원에 "
                                   "문의하십시오."),
    "xid_follow_nvidia_flow": (None, "Follow NVIDIA's investigation flow for this Xid (the Xid catalog) if it "
                                     "repeats.",
                               "반복되면 NVIDIA Xid 카탈로그의 이 Xid 조사 절차를 따르십시오."),
    "xid_reset_if_fatal": ("gpu_reset", "Drain the node and reset the GPU if the decode says fatal.",
                           "디코딩 결과가 fatal이면 노드를 drain 하고 GPU를 리셋하십시오."),
    "xid_apply_recovery_action": (None, "Apply the recovery action the message names (GPU reset, node reboot "
                                        "or drain P2P).",
                                  "메시지가 지정한 복구 조치(GPU 리셋, 노드 재부팅 또는 P2P drain)를 "
                                  "적용하십시오."),
    "xid_check_fabric_manager": (None, "Check the fabric manager's version and service "
                                       "(`systemctl status nvidia-fabricmanager`).",
                                 "fabric manager 버전과 서비스를 확인하십시오 "
                                 "(`systemctl status nvidia-fabricmanager`)."),
    "xid_check_uvm": (None, "Check the state of UVM (unified memory) on this node.",
                      "이 노드의 UVM(통합 메모리) 상태를 확인하십시오."),
    "xid_check_driver_if_recurs": (None, "Check the driver version if it repeats.",
                                   "반복되면 드라이버 버전을 확인하십시오."),
    "xid_look_up": (None, "Look the code up in NVIDIA's Xid catalog and the driver release notes.",
                    "NVIDIA Xid 카탈로그와 드라이버 릴리스 노트에서 이 코드를 찾아보십시오."),
    "xid_drain_if_job_died": (None, "Drain the node if the job died with it.",
                              "작업이 이 오류와 함께 종료되었다면 노드를 drain 하십시오."),
    "xid_check_by_hand": (None, "Read the raw line and check the Xid code by hand against NVIDIA's Xid catalog.",
                          "원본 줄을 읽고 Xid 코드를 NVIDIA Xid 카탈로그와 직접 대조하십시오."),
    # ---- the driver, not the GPU
    "kernel_match_driver_versions": ("reboot", "Make the kernel module and the user-space driver the same version: "
                                               "reload the module (`rmmod nvidia_uvm nvidia_drm nvidia_modeset "
                                               "nvidia`) or reboot after a driver upgrade.",
                                     "커널 모듈과 사용자 공간 드라이버의 버전을 맞추십시오: 드라이버 업그레이드 후 "
                                     "모듈을 다시 올리거나(`rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia`) "
                                     "재부팅하십시오."),
    "kernel_blacklist_nouveau": (None, "Blacklist nouveau (`modprobe.d`, then rebuild the initramfs) so the "
                                       "NVIDIA driver can claim the GPUs.",
                                 "NVIDIA 드라이버가 GPU를 잡을 수 있도록 nouveau를 블랙리스트에 넣으십시오 "
                                 "(`modprobe.d` 설정 후 initramfs 재생성)."),
    "kernel_use_proprietary_module": (None, "Install the proprietary kernel module flavour (or a GPU the open module "
                                            "supports): the open module needs a GPU with GSP.",
                                      "독점(proprietary) 커널 모듈을 설치하십시오 (또는 open 모듈이 지원하는 GPU 사용): "
                                      "open 모듈은 GSP가 있는 GPU가 필요합니다."),
    "kernel_install_supported_driver": (None, "Install a driver release that supports this GPU (its README's "
                                              "supported-products list).",
                                        "이 GPU를 지원하는 드라이버 릴리스를 설치하십시오 (README의 지원 제품 목록)."),
    # ---- NVSwitch (SXid)
    "sxid_reset_fabric": (None, "A fatal NVSwitch error: the node's GPUs and NVSwitches must be reset (a reboot) "
                                "before NVLink works again; check `nvidia-fabricmanager` after.",
                          "치명적 NVSwitch 오류: NVLink가 다시 동작하려면 노드의 GPU와 NVSwitch를 리셋(재부팅)해야 "
                          "합니다. 이후 `nvidia-fabricmanager`를 확인하십시오."),
    "sxid_check_fm_partition": (
        None, "Validate the Fabric Manager partition's routing (`nvswitch-audit`), and that the GPUs given to one VM "
              "or job are all in one activated partition (`fmpm -l`); then restart the guest VM.",
        "Fabric Manager 파티션의 라우팅을 확인(`nvswitch-audit`)하고, 한 VM이나 작업에 준 GPU가 모두 활성화된 한 "
        "파티션에 있는지(`fmpm -l`) 확인한 뒤 게스트 VM을 재시작하십시오."),
    "sxid_watch_links": (None, "Non-fatal: watch the link's error counters (`nvidia-smi nvlink -e`); contact NVIDIA "
                               "support if they keep rising.",
                         "non-fatal: 링크 오류 카운터(`nvidia-smi nvlink -e`)를 지켜보고, 계속 늘면 NVIDIA 지원에 "
                         "문의하십시오."),
    # ---- host memory (EDAC) and memory cgroups
    "kernel_replace_dimm": (None, "Have the DIMM the EDAC line names replaced (check the BMC's SEL for the slot).",
                            "EDAC 줄이 가리키는 DIMM을 교체하십시오 (BMC SEL에서 슬롯 확인)."),
    "kernel_trend_dimm_ce": (None, "Trend the correctable count (`edac-util -v`); replace the DIMM if it keeps "
                                   "rising.",
                             "정정 가능한 오류 수의 추이를 보십시오 (`edac-util -v`). 계속 늘면 DIMM을 교체하십시오."),
    "kernel_check_mce": (None, "Decode the machine check (`ras-mc-ctl --errors`, `mcelog`, the BMC's SEL) and have the "
                               "CPU or DIMM it names replaced; keep the node drained until then.",
                         "머신 체크를 해석하고(`ras-mc-ctl --errors`, `mcelog`, BMC SEL) 지목된 CPU 또는 DIMM을 "
                         "교체하십시오. 그때까지 노드를 drain 상태로 두십시오."),
    "kernel_trend_mce": (None, "Trend the corrected machine checks (`ras-mc-ctl --summary`); act if they keep rising "
                               "or turn uncorrected.",
                         "정정된 머신 체크의 추이를 보십시오 (`ras-mc-ctl --summary`). 계속 늘거나 복구 불가로 바뀌면 "
                         "조치하십시오."),
    "kernel_raise_job_mem": ("fix_application", "The job reached its own memory limit: request more (`--mem`, `--mem-per-gpu`) "
                                   "or use less; the node is fine.",
                             "작업이 자신의 메모리 한도에 도달했습니다: 더 요청하거나(`--mem`, `--mem-per-gpu`) 덜 "
                             "사용하십시오. 노드는 정상입니다."),
    # ---- HCA (mlx5) events
    "hca_collect_dump": (None, "If it recurs, collect `mstdump` and the firmware trace for NVIDIA networking "
                               "support.",
                         "재발하면 `mstdump`와 펌웨어 트레이스를 수집해 NVIDIA 네트워킹 지원에 전달하십시오."),
    "hca_replace_cable": ("rma", "Replace the cable or transceiver.", "케이블 또는 트랜시버를 교체하십시오."),
    "hca_check_port": (None, "Check the port's state and error counters (`ibstat`, `perfquery`).",
                       "포트 상태와 오류 카운터를 확인하십시오 (`ibstat`, `perfquery`)."),
    "hca_none_if_unused": (None, "Nothing to do if the port is unused; otherwise check its cable and `ibstat`.",
                           "사용하지 않는 포트라면 조치 불필요. 아니라면 케이블과 `ibstat`을 확인하십시오."),
    "hca_check_slot_power": (None, "Nothing to do unless a port misbehaves; check the slots' power budget at "
                                   "the next service window.",
                             "포트에 이상이 없으면 조치 불필요. 다음 정비 시간에 슬롯 전력 예산을 "
                             "확인하십시오."),
    # ---- PCIe AER
    "pcie_reseat_or_rma_if_recurs": (None, "Reseat the device, or replace it (RMA), if its link fails again.",
                                     "링크가 다시 끊기면 장치를 재장착하거나 교체(RMA)하십시오."),
    "pcie_watch_device": (None, "Watch the device's AER counts.", "장치의 AER 발생 수를 지켜보십시오."),
    "pcie_drain_if_continues": ("drain", "Drain the node if the errors continue or the job fails with them.",
                                "오류가 계속되거나 작업이 함께 실패하면 노드를 drain 하십시오."),
    "pcie_reseat_if_storm": (None, "Harmless unless they become a storm; then the link is marginal: reseat the "
                                   "device at the next service window.",
                             "폭주하지 않으면 무해합니다. 폭주하면 링크가 불안정한 것이니 다음 정비 시간에 "
                             "장치를 재장착하십시오."),
    # ---- host memory and hung tasks
    "kernel_lower_memory": ("fix_application", "Lower `num_workers` or prefetch (DataLoader workers, pinned "
                                               "memory), or request more memory.",
                            "`num_workers`나 prefetch를 줄이거나(DataLoader 워커, pinned 메모리) 메모리를 더 "
                            "요청하십시오."),
    "kernel_read_stack": (None, "Read the stack trace after the line: nvidia, mlx5 or NFS frames name the culprit.",
                          "해당 줄 뒤의 스택 트레이스를 읽으십시오: nvidia, mlx5, NFS 프레임이 원인을 "
                          "가리킵니다."),
    "kernel_check_iommu": (None, "Check the node's IOMMU setting for GPU peer-to-peer and GPUDirect RDMA "
                                 "(`iommu=pt` or off on the kernel command line, ACS off on the PCIe switches).",
                           "GPU peer-to-peer와 GPUDirect RDMA를 위한 노드의 IOMMU 설정을 확인하십시오 (커널 명령줄의 "
                           "`iommu=pt` 또는 off, PCIe 스위치의 ACS 비활성화)."),
    "kernel_drain_if_stuck": ("drain", "Drain the node if the task stays in D state.",
                              "태스크가 D 상태에 머물러 있으면 노드를 drain 하십시오."),
    # ---- the log itself
    "kernel_pass_iso_since": (None, "Pass `since` as ISO 8601, e.g. `2026-12-02T13:00:00Z`.",
                              "`since`를 ISO 8601 형식으로 지정하십시오 (예: `2026-12-02T13:00:00Z`)."),
    "kernel_pass_tz": (None, "Pass the node's time zone as an offset (`+09:00`) or an IANA name (`Asia/Seoul`).",
                       "노드의 시간대를 오프셋(`+09:00`) 또는 IANA 이름(`Asia/Seoul`)으로 지정하십시오."),
    "kernel_read_other_vendor_gpu": (None, "Check these GPUs with their own vendor's tools (AMD: `amd-smi`, "
                                           "`rocm-smi`, the amdgpu driver's messages); gpu-runbook reads NVIDIA's.",
                                     "이 GPU는 해당 제조사의 도구로 확인하십시오 (AMD: `amd-smi`, `rocm-smi`, amdgpu "
                                     "드라이버 메시지). gpu-runbook은 NVIDIA의 것을 읽습니다."),
    "kernel_check_is_kernel_log": (None, "Check that the file is a kernel log (dmesg, `journalctl -k` or "
                                         "kern.log).",
                                   "파일이 커널 로그(dmesg, `journalctl -k` 또는 kern.log)인지 확인하십시오."),
}

# The link steps of the mlx5 link kinds: look, then restart the port's stack (drained), then the cable.
# A link that went down after being up is physical (cable, transceiver, switch port), as the
# IB counters say too (kinds_ib): restarting openibd does not fix a cable.
_LINK = ("drain_node", "check_cable", "hca_check_port")

KINDS = {
    # ---- NVRM (the GPU driver)
    "xid": kind(
        "gpu_hardware", "critical", None, (),
        "Xid {xid} on GPU {gpu}: an error the NVIDIA driver reported",
        "GPU {gpu}에서 Xid {xid} 발생: NVIDIA 드라이버가 보고한 오류",
        also=("application", "driver", "unknown")),
    "xid_unparsed": kind(
        "unknown", "warning", "none", ("xid_check_by_hand",),
        "an NVRM Xid line could not be parsed (truncated or unknown format)",
        "NVRM Xid 줄을 해석하지 못함 (잘렸거나 알 수 없는 형식)"),
    "gpu_fallen_off_bus": kind(
        "gpu_hardware", "critical", "reboot", ("drain_node", "reboot_node", "rma_if_recurs"),
        "GPU {gpu} has fallen off the bus: the host lost it on PCIe",
        "GPU {gpu}가 버스에서 떨어짐: 호스트가 PCIe에서 GPU를 잃음"),
    # RmInitAdapter fails for driver reasons first (missing GSP firmware, a module that refuses
    # the GPU, vGPU/passthrough setup); only a failure that survives the driver checks is the board.
    "gpu_init_failed": kind(
        "driver", "critical", "reboot", ("drain_node", "check_driver", "reboot_node", "rma_if_recurs"),
        "the NVIDIA driver failed to initialise GPU {gpu} (RmInitAdapter failed): check the driver first",
        "NVIDIA 드라이버가 GPU {gpu} 초기화에 실패함 (RmInitAdapter failed): 드라이버부터 확인",
        also=("gpu_hardware",)),
    "gpu_probe_failed": kind(
        "driver", "critical", "reboot", ("drain_node", "check_driver", "reboot_node", "rma_if_recurs"),
        "the NVIDIA driver's probe failed: no GPU was initialised",
        "NVIDIA 드라이버 probe 실패: 초기화된 GPU가 없음"),
    "driver_version_mismatch": kind(
        "driver", "critical", "reboot", ("drain_node", "kernel_match_driver_versions"),
        "the NVIDIA kernel module and the user-space driver are different versions (API mismatch)",
        "NVIDIA 커널 모듈과 사용자 공간 드라이버의 버전이 다름 (API mismatch)"),
    "driver_conflict": kind(
        "driver", "critical", "reboot", ("drain_node", "kernel_blacklist_nouveau", "reboot_node"),
        "another driver (nouveau) owns the GPUs: the NVIDIA driver could not claim them",
        "다른 드라이버(nouveau)가 GPU를 점유함: NVIDIA 드라이버가 GPU를 잡지 못함"),
    "driver_open_unsupported": kind(
        "driver", "critical", "reboot", ("drain_node", "kernel_use_proprietary_module", "reboot_node"),
        "the open NVIDIA kernel module refuses GPU {gpu}: it needs the proprietary module",
        "open NVIDIA 커널 모듈이 GPU {gpu}를 지원하지 않음: proprietary 모듈이 필요함"),
    "driver_gpu_unsupported": kind(
        "driver", "critical", "reboot", ("drain_node", "kernel_install_supported_driver", "reboot_node"),
        "the installed driver release does not support GPU {gpu}",
        "설치된 드라이버 릴리스가 GPU {gpu}를 지원하지 않음"),
    "gsp_error": kind(
        "driver", "critical", "gpu_reset", ("drain_node", "reset_gpu", "xid_reboot_if_reset_fails", "check_driver"),
        "the GPU's GSP firmware timed out or halted: driver/firmware, not the board",
        "GPU의 GSP 펌웨어가 타임아웃되거나 멈춤: 보드가 아니라 드라이버/펌웨어 문제"),
    # ---- NVSwitch: the NVLink fabric (finding "component": "nvlink_fabric")
    "nvswitch_sxid": kind(
        "gpu_hardware", "warning", None, (),
        "NVSwitch error (SXid) on the NVLink fabric",
        "NVLink 패브릭의 NVSwitch 오류 (SXid)",
        also=("driver",)),  # an SXid NVIDIA says only Fabric Manager's partition set-up causes (vocab/nvrm.py)
    # ---- mlx5 (the HCA driver)
    "ib_hca_health": kind(
        "ib_network", "critical", "ib_restart", ("drain_node", "restart_openibd", "reboot_if_recurs",
                                                 "hca_collect_dump"),
        "HCA {ib} reported a firmware or health fault",
        "HCA {ib}가 펌웨어/상태(health) 오류를 보고함"),
    "ib_cable_error": kind(
        "ib_network", "critical", "rma", ("drain_node", "hca_replace_cable"),
        "HCA {ib}: the port module (cable or transceiver) reported an error",
        "HCA {ib}: 포트 모듈(케이블 또는 트랜시버) 오류 보고"),
    "ib_cable_unplugged": kind(
        "ib_network", "warning", "drain", ("drain_node", "check_cable"),
        "HCA {ib}: the cable was unplugged after being plugged",
        "HCA {ib}: 연결되어 있던 케이블이 빠짐"),
    "ib_link_flap": kind(
        "ib_network", "warning", "drain", _LINK,
        "HCA {ib}: the link went down several times after being up (flapping)",
        "HCA {ib}: 올라와 있던 링크가 여러 번 끊김 (플래핑)"),
    "ib_link_dropped": kind(
        "ib_network", "warning", "drain", _LINK,
        "HCA {ib}: the link went down after being up",
        "HCA {ib}: 올라와 있던 링크가 끊김"),
    "ib_port_never_up": kind(
        "ib_network", "info", "none", ("hca_none_if_unused",),
        "HCA {ib}: the port was never up in this log (no cable, or an unused port)",
        "HCA {ib}: 이 로그에서 포트가 한 번도 올라오지 않음 (케이블 없음 또는 미사용 포트)"),
    "ib_cmd_timeout": kind(
        "ib_network", "warning", "ib_restart", ("drain_node", "restart_openibd", "reboot_if_recurs"),
        "HCA {ib}: a firmware command timed out",
        "HCA {ib}: 펌웨어 명령 타임아웃"),
    "ib_pcie_power": kind(
        "ib_network", "info", "none", ("hca_check_slot_power",),
        "HCAs report insufficient PCIe slot power",
        "HCA가 PCIe 슬롯 전력 부족을 보고함"),
    # ---- PCIe AER
    "pcie_aer_fatal": kind(
        "unknown", "critical", "reboot", ("drain_node", "reboot_node", "pcie_reseat_or_rma_if_recurs"),
        "an uncorrected fatal PCIe error (or Surprise Down: the link was lost)",
        "복구 불가(fatal) PCIe 오류 (또는 Surprise Down: 링크 소실)",
        also=("gpu_hardware", "ib_network")),
    "pcie_aer_nonfatal": kind(
        "unknown", "warning", "drain", ("pcie_watch_device", "pcie_drain_if_continues"),
        "an uncorrected non-fatal PCIe error",
        "복구되지 않은 non-fatal PCIe 오류",
        also=("gpu_hardware", "ib_network")),
    "pcie_aer_corrected": kind(
        "unknown", "info", "none", ("pcie_reseat_if_storm",),
        "corrected PCIe errors (harmless unless they become a storm)",
        "정정된 PCIe 오류 (폭주하지 않으면 무해)",
        also=("gpu_hardware", "ib_network")),
    # ---- host memory and hung tasks
    "oom_kill": kind(
        "memory_leak", "warning", "fix_application", ("check_memory_growth", "kernel_lower_memory"),
        "the kernel's OOM killer killed a process: host memory ran out",
        "커널 OOM killer가 프로세스를 종료함: 호스트 메모리 부족"),
    "oom_kill_cgroup": kind(
        "memory_leak", "warning", "fix_application", ("check_memory_growth", "kernel_raise_job_mem"),
        "a memory cgroup killed a process: the job hit its own memory limit, not the node's",
        "메모리 cgroup이 프로세스를 종료함: 노드가 아니라 작업 자신의 메모리 한도에 도달"),
    # ---- host memory (EDAC): node hardware, no GPU in it (finding "component": "host_memory")
    "host_memory_ue": kind(
        "unknown", "critical", "drain", ("drain_node", "kernel_replace_dimm"),
        "uncorrectable host memory (DIMM) errors: node hardware, not the GPU",
        "복구 불가 호스트 메모리(DIMM) 오류: GPU가 아니라 노드 하드웨어 문제"),
    "host_memory_ce": kind(
        "unknown", "info", "none", ("kernel_trend_dimm_ce",),
        "correctable host memory (DIMM) errors: a trend to watch",
        "정정된 호스트 메모리(DIMM) 오류: 추이를 지켜볼 것"),
    # ---- machine checks (mce / GHES '[Hardware Error]'): host CPU or memory, not the GPU
    "host_mce_uncorrected": kind(
        "unknown", "critical", "drain", ("drain_node", "kernel_check_mce"),
        "an uncorrected machine check (host CPU or memory hardware): node hardware, not the GPU",
        "복구되지 않은 머신 체크 (호스트 CPU 또는 메모리 하드웨어): GPU가 아니라 노드 하드웨어 문제"),
    "host_mce_corrected": kind(
        "unknown", "info", "none", ("kernel_trend_mce",),
        "corrected machine check events (host CPU or memory): a trend to watch",
        "정정된 머신 체크 이벤트 (호스트 CPU 또는 메모리): 추이를 지켜볼 것"),
    "driver_crash": kind(
        "driver", "critical", "reboot", ("drain_node", "reboot_node", "check_driver"),
        "the kernel crashed (oops) inside the NVIDIA driver: its state is lost until the node reboots",
        "NVIDIA 드라이버 안에서 커널이 크래시(oops)함: 노드를 재부팅할 때까지 드라이버 상태가 손상됨"),
    "iommu_fault": kind(
        "unknown", "warning", "none", ("kernel_check_iommu",),
        "the IOMMU blocked DMA by a device: GPU peer-to-peer or GPUDirect RDMA through it fails or hangs",
        "IOMMU가 장치의 DMA를 차단함: 이를 거치는 GPU peer-to-peer 또는 GPUDirect RDMA가 실패하거나 멈춤"),
    "hung_task": kind(
        "unknown", "warning", "drain", ("kernel_read_stack", "kernel_drain_if_stuck"),
        "a task was blocked in the kernel for minutes (D state)",
        "태스크가 커널에서 수 분간 멈춤 (D 상태)",
        also=("driver", "dataloader")),
    # ---- the log itself
    "kernlog_window_invalid": kind(
        "unknown", "warning", "none", ("kernel_pass_iso_since",),
        "the time window (since) was not understood: the whole log was read",
        "시간 범위(since)를 해석하지 못함: 로그 전체를 읽음"),
    "kernlog_tz_invalid": kind(
        "unknown", "warning", "none", ("kernel_pass_tz",),
        "the node's time zone was not understood: times without a zone were read as UTC",
        "노드 시간대를 해석하지 못함: 시간대가 없는 시각을 UTC로 읽음"),
    "gpu_driver_not_nvidia": kind(
        "unknown", "warning", "none", ("kernel_read_other_vendor_gpu",),
        "the log's GPUs are driven by another vendor's driver (no NVIDIA driver line): gpu-runbook reads "
        "NVIDIA's driver, so their health is not established",
        "로그의 GPU는 다른 제조사의 드라이버로 구동됨 (NVIDIA 드라이버 줄 없음): gpu-runbook은 NVIDIA 드라이버를 "
        "읽으므로 상태가 확인되지 않음"),
    "kernlog_unparseable": kind(
        "unknown", "info", "none", ("kernel_check_is_kernel_log",),
        "no kernel-log timestamps or known kernel messages found",
        "커널 로그 타임스탬프나 알려진 커널 메시지를 찾지 못함"),
}
