# SPDX-License-Identifier: Apache-2.0
"""Finding kinds of the gpu domain: what nvidia-smi says (the parsers in nvsmi/). See
taxonomy/__init__.py for the row format.

The remedy follows what the GPU reports, as NVIDIA's field guidance reads it:

- memory that repairs itself on a reset (volatile uncorrectable ECC, a pending row remap or page
  retirement, a pending HBM channel / TPC repair, 'GPU requires reset'): drain, reset the GPU
  (rung ``gpu_reset``);
- memory that ran out of repairs (row remap failure, SRAM threshold exceeded, unrepairable
  memory, too many retired pages, a corrupted infoROM): RMA (rung ``rma``);
- a GPU the driver cannot reach (lost, not enumerated, NVML failing, links down): reboot
  (rung ``reboot``), RMA if it does not come back;
- an nvidia-smi that could not look (no permission, cut-off or garbled output): no remedy on
  the GPU, only on the probe (rung ``none``) -- but never "healthy" either.
"""

from .table import kind

# Steps only the GPU findings take. Prefixed ``gpu_`` so they can never collide with
# rungs.STEPS or another domain's steps.
STEPS = {
    "gpu_check_memory_health": (
        None, "Then check remapped rows, retired pages and the aggregate ECC counters "
              "(`nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER`).",
        "이후 리매핑된 row, 폐기된(retired) 페이지, 누적(aggregate) ECC 카운터를 확인하십시오 "
        "(`nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER`)."),
    "gpu_rma_if_row_fails_again": (
        None, "Replace the GPU (RMA) if the same row fails again (Xid 64) after the reset.",
        "리셋 후 같은 row가 다시 실패하면(Xid 64) GPU를 교체(RMA)하십시오."),
    "gpu_rma_with_serial": (
        None, "Quote the GPU's serial number and its `nvidia-smi -q -d ECC` section in the RMA.",
        "RMA 요청에 GPU 시리얼 번호와 `nvidia-smi -q -d ECC` 결과를 포함하십시오."),
    "gpu_check_fabric_manager": (
        None, "Check nvidia-fabricmanager (`systemctl status nvidia-fabricmanager`, its log) and the "
              "NVSwitches; restarting it may be enough.",
        "nvidia-fabricmanager(`systemctl status nvidia-fabricmanager`, 로그)와 NVSwitch 상태를 "
        "확인하십시오. fabricmanager 재시작으로 충분할 수 있습니다."),
    "gpu_follow_recovery_action": (
        None, "Perform the recovery the driver asks for (`GPU Recovery Action` in `nvidia-smi -q`).",
        "드라이버가 요구하는 복구 조치를 수행하십시오 (`nvidia-smi -q`의 `GPU Recovery Action`)."),
    "gpu_drain_if_persists": (
        "drain", "Drain the node if it persists.", "지속되면 노드를 drain 하십시오."),
    "gpu_check_fan_sensor": (
        None, "Read it again and check the fan and sensor with `nvidia-smi -q` and the BMC; drain the node if "
              "the reading stays ERR! or other GPU errors follow.",
        "다시 읽고 `nvidia-smi -q`와 BMC로 팬과 센서를 확인하십시오. 판독값이 계속 ERR!이거나 다른 GPU 오류가 "
        "뒤따르면 노드를 drain 하십시오."),
    "gpu_check_xid": (
        None, "Check the kernel log (`dmesg`) for Xid 79, 48 or 74 on this GPU.",
        "커널 로그(`dmesg`)에서 이 GPU의 Xid 79, 48, 74를 확인하십시오."),
    "gpu_rma_if_links_stay_down": (
        None, "Reseat the GPU, then replace it or its baseboard (RMA) if the links stay inactive after the reboot.",
        "GPU를 재장착하고, 재부팅 후에도 링크가 비활성이면 GPU 또는 베이스보드를 교체(RMA)하십시오."),
    "gpu_check_psu_bmc": (
        None, "Check the PSUs, the BMC event log (`ipmitool sel list`) and chassis cooling; re-check "
              "`nvidia-smi -q -d PERFORMANCE`.",
        "PSU, BMC 이벤트 로그(`ipmitool sel list`), 섀시 냉각을 확인하고 "
        "`nvidia-smi -q -d PERFORMANCE`를 다시 확인하십시오."),
    "gpu_recheck_performance": (
        None, "Re-check `nvidia-smi -q -d PERFORMANCE`; act only if HW Slowdown persists.",
        "`nvidia-smi -q -d PERFORMANCE`를 다시 확인하고 HW Slowdown이 지속될 때만 조치하십시오."),
    "gpu_check_cooling_if_persists": (
        None, "Check GPU and memory temperature and cooling if it persists.",
        "지속되면 GPU와 메모리 온도, 냉각을 확인하십시오."),
    "gpu_check_module_loaded": (
        None, "Check that the kernel module is loaded (`lsmod | grep nvidia`, `dmesg`); load it, or reboot "
              "if it will not load.",
        "커널 모듈이 로드되었는지 확인하십시오 (`lsmod | grep nvidia`, `dmesg`). 로드하고, 로드되지 "
        "않으면 재부팅하십시오."),
    "gpu_confirm_driver_versions": (
        None, "Then confirm that `nvidia-smi` and `/proc/driver/nvidia/version` report the same version.",
        "이후 `nvidia-smi`와 `/proc/driver/nvidia/version`의 버전이 같은지 확인하십시오."),
    "gpu_reinstall_driver": (
        None, "Reinstall the NVIDIA driver.", "NVIDIA 드라이버를 재설치하십시오."),
    "gpu_check_bus": (
        None, "Check `dmesg` for Xid 79 or `RmInitAdapter` failures and `lspci -d 10de:` for the GPUs.",
        "`dmesg`에서 Xid 79 또는 `RmInitAdapter` 실패를, `lspci -d 10de:`로 GPU 목록을 확인하십시오."),
    "gpu_rma_if_still_missing": (
        None, "Replace the GPU (RMA) if it is still missing after the reboot.",
        "재부팅 후에도 GPU가 보이지 않으면 교체(RMA)하십시오."),
    "gpu_check_cgroups": (
        None, "Check the cgroup / container device policy for `/dev/nvidia*`.",
        "`/dev/nvidia*`에 대한 cgroup/컨테이너 장치 정책을 확인하십시오."),
    "gpu_rerun_as_root": (
        None, "Re-run the probe as root, with the GPU devices (`/dev/nvidia*`) available to it.",
        "GPU 장치(`/dev/nvidia*`)에 접근할 수 있도록 root로 프로브를 다시 실행하십시오."),
    "gpu_rerun_nvidia_smi": (
        None, "Run `nvidia-smi` by hand on the node and check that the driver answers.",
        "노드에서 `nvidia-smi`를 직접 실행해 드라이버가 응답하는지 확인하십시오."),
    "gpu_read_raw_output": (
        None, "Read the raw nvidia-smi output.", "nvidia-smi 원본 출력을 확인하십시오."),
    "gpu_capture_full_q": (
        None, "Capture the full `nvidia-smi -q` (without `-i`) if a GPU looks missing.",
        "GPU가 빠진 것 같으면 `-i` 없이 전체 `nvidia-smi -q`를 수집하십시오."),
    "gpu_check_query_fields": (
        None, "Check the `--query-*` field list and run it again.",
        "`--query-*` 필드 목록을 확인하고 다시 실행하십시오."),
}

_RESET = ("drain_node", "reset_gpu")
_RMA = ("drain_node", "replace_hardware")
_GPU_GONE = ("drain_node", "gpu_check_bus", "reboot_node", "gpu_rma_if_still_missing")
_WEDGED = ("drain_node", "gpu_check_xid", "reboot_node", "rma_if_recurs")

_MEMORY = {
    "ecc_uncorrectable_volatile": kind(
        "gpu_hardware", "critical", "gpu_reset", _RESET + ("gpu_check_memory_health",),
        "uncorrectable ECC errors since the driver loaded: the job on this GPU read bad memory",
        "드라이버 로드 이후 정정 불가 ECC 오류 발생: 이 GPU의 작업이 손상된 메모리를 읽음"),
    "row_remap_pending": kind(
        "gpu_hardware", "critical", "gpu_reset", _RESET + ("gpu_rma_if_row_fails_again",),
        "a memory row remap is pending: it takes effect only after a GPU reset",
        "메모리 row remap 대기 중: GPU 리셋 후에만 적용됨"),
    "row_remap_failure": kind(
        "gpu_hardware", "critical", "rma", _RMA,
        "row remapping failed: no spare rows left for a bad memory row",
        "row remap 실패: 불량 메모리 row를 대체할 예비 row가 없음"),
    "retired_pages_pending": kind(
        "gpu_hardware", "warning", "gpu_reset", _RESET,
        "a page retirement is pending: the bad page stays in use until the GPU is reset",
        "페이지 retire 대기 중: GPU 리셋 전까지 불량 페이지가 계속 사용됨"),
    "retired_pages_limit": kind(
        "gpu_hardware", "critical", "rma", _RMA,
        "too many retired memory pages: the GPU has reached the replacement threshold",
        "retire된 메모리 페이지가 너무 많음: GPU 교체 기준에 도달함"),
    "ecc_sram_uncorrectable_rma": kind(
        "gpu_hardware", "critical", "rma", _RMA + ("gpu_rma_with_serial",),
        "lifetime uncorrectable SRAM ECC errors above the replacement threshold",
        "누적 정정 불가 SRAM ECC 오류가 교체 기준을 넘음"),
    "ecc_sram_threshold_exceeded": kind(
        "gpu_hardware", "critical", "rma", _RMA,
        "the GPU reports 'SRAM Threshold Exceeded': too many uncorrectable SRAM errors",
        "GPU가 'SRAM Threshold Exceeded'를 보고함: 정정 불가 SRAM 오류가 너무 많음"),
    "channel_repair_pending": kind(
        "gpu_hardware", "critical", "gpu_reset", _RESET,
        "an HBM channel repair is pending: it takes effect only after a GPU reset",
        "HBM 채널 수리 대기 중: GPU 리셋 후에만 적용됨"),
    "tpc_repair_pending": kind(
        "gpu_hardware", "critical", "gpu_reset", _RESET,
        "a TPC repair is pending: it takes effect only after a GPU reset",
        "TPC 수리 대기 중: GPU 리셋 후에만 적용됨"),
    "unrepairable_memory": kind(
        "gpu_hardware", "critical", "rma", _RMA,
        "the GPU reports unrepairable memory",
        "GPU가 수리 불가능한 메모리를 보고함"),
    "inforom_corrupted": kind(
        "gpu_hardware", "warning", "rma", _RMA + ("gpu_rma_with_serial",),
        "the GPU's infoROM is corrupted: its error records can no longer be trusted",
        "GPU의 infoROM이 손상됨: 오류 기록을 더 이상 신뢰할 수 없음"),
}

_STATE = {
    # Critical, so the node leaves service: NVML's fabric state not Completed (or Completed with a
    # status other than Success) means CUDA returns cudaErrorSystemNotReady (802) on this GPU (the
    # Fabric Manager user guide, NVML nvmlGpuFabricInfo_t) -- every job placed here fails. Only
    # NVSwitch systems report a fabric state; others read Not Supported / N/A (nvsmi/rules.py).
    "fabric_not_ready": kind(
        "driver", "critical", "reboot", ("drain_node", "gpu_check_fabric_manager", "reboot_node"),
        "the NVLink fabric is not ready: CUDA and NCCL cannot use this GPU",
        "NVLink 패브릭이 준비되지 않음: CUDA와 NCCL이 이 GPU를 사용할 수 없음"),
    "gpu_reset_required": kind(
        "gpu_hardware", "critical", "gpu_reset", _RESET,
        "the GPU reports 'GPU requires reset'",
        "GPU가 'GPU requires reset'을 보고함"),
    "gpu_drain_and_reset_recommended": kind(
        "gpu_hardware", "warning", "gpu_reset", _RESET,
        "the GPU reports 'Drain and Reset Recommended'",
        "GPU가 'Drain and Reset Recommended'를 보고함"),
    "gpu_recovery_reset": kind(
        "gpu_hardware", "critical", "gpu_reset", _RESET,
        "the driver asks for a GPU reset (GPU Recovery Action)",
        "드라이버가 GPU 리셋을 요구함 (GPU Recovery Action)"),
    "gpu_recovery_reboot": kind(
        "gpu_hardware", "critical", "reboot", ("drain_node", "reboot_node"),
        "the driver asks for a node reboot (GPU Recovery Action)",
        "드라이버가 노드 재부팅을 요구함 (GPU Recovery Action)"),
    "gpu_recovery_drain_p2p": kind(
        "gpu_hardware", "warning", "drain", ("drain_node", "gpu_follow_recovery_action"),
        "the driver asks to drain peer-to-peer traffic (GPU Recovery Action 'Drain P2P')",
        "드라이버가 P2P 트래픽 drain을 요구함 (GPU Recovery Action 'Drain P2P')"),
    "gpu_recovery_bus_reset": kind(
        "gpu_hardware", "critical", "reboot", ("drain_node", "reboot_node"),
        "the driver asks for a bus reset (GPU Recovery Action 'Bus Reset'): more than a GPU reset, a reboot resets "
        "the bus",
        "드라이버가 버스 리셋을 요구함 (GPU Recovery Action 'Bus Reset'): GPU 리셋으로는 부족하며 재부팅이 버스를 리셋함"),
    "gpu_recovery_imex_domain": kind(
        "gpu_hardware", "critical", "drain", ("drain_node", "gpu_follow_recovery_action"),
        "the driver asks to recover the IMEX domain (GPU Recovery Action 'Recover IMEX Domain'): the multi-node "
        "NVLink domain, not this GPU alone",
        "드라이버가 IMEX 도메인 복구를 요구함 (GPU Recovery Action 'Recover IMEX Domain'): 이 GPU만이 아닌 멀티노드 NVLink 도메인"),
    "gpu_recovery_unknown": kind(
        "gpu_hardware", "warning", "drain", ("drain_node", "gpu_follow_recovery_action"),
        "the driver asks for a GPU recovery action not known here (quoted): the node is drained until someone reads it",
        "여기서 알 수 없는 GPU Recovery Action을 드라이버가 요구함 (인용): 확인될 때까지 노드를 drain함"),
    "gpu_temperature_high": kind(
        "gpu_hardware", "warning", "drain", ("check_clocks_cooling", "gpu_drain_if_persists"),
        "the GPU runs hot: it will throttle and slow every collective",
        "GPU 온도가 높음: 클럭이 제한되어 모든 collective가 느려짐"),
    "nvlink_errors": kind(
        "gpu_hardware", "warning", "none", ("xid_check_nvlink_if_recurs",),
        "NVLink error counters (replay, recovery, CRC) are not zero: a link is retrying; watch whether they grow",
        "NVLink 오류 카운터(replay, recovery, CRC)가 0이 아님: 링크가 재시도 중; 증가하는지 지켜보십시오"),
    # Critical on NVLink/NVSwitch baseboards: a link that did not train stays down until a reboot
    # or a reseat (DCGM_FR_NVLINK_DOWN / DCGM_FR_GPU_EXPECTED_NVLINKS_UP fail the diag); NCCL then
    # routes around it or hangs. A PCIe card's optional bridge is lowered to a warning (nvsmi/rules.py).
    "nvlink_inactive": kind(
        "gpu_hardware", "critical", "reboot", ("drain_node", "reboot_node", "gpu_rma_if_links_stay_down"),
        "NVLink links are inactive: GPU-to-GPU traffic falls back to slower paths or fails",
        "NVLink 링크 비활성: GPU 간 통신이 느린 경로로 우회하거나 실패함"),
    "hw_slowdown": kind(
        "gpu_hardware", "warning", "drain", ("check_clocks_cooling", "check_power_cabling", "gpu_drain_if_persists"),
        "the GPU's clocks are held down by HW Slowdown: this rank will be slow",
        "HW Slowdown으로 GPU 클럭이 제한됨: 이 랭크가 느려짐"),
    "hw_slowdown_all_gpus": kind(
        "unknown", "warning", "drain", ("drain_node", "gpu_check_psu_bmc"),
        "every GPU reports HW Slowdown: a power or cooling signal for the whole node, not one GPU",
        "모든 GPU가 HW Slowdown을 보고함: GPU 하나가 아니라 노드 전체의 전원/냉각 문제"),
    "hw_slowdown_subreason": kind(
        "gpu_hardware", "info", "none", ("gpu_recheck_performance",),
        "a HW slowdown sub-reason without HW Slowdown itself (transient)",
        "HW Slowdown 없이 하위 사유만 보고됨 (일시적)"),
    "sw_thermal_slowdown": kind(
        "gpu_hardware", "info", "none", ("gpu_check_cooling_if_persists",),
        "the driver lowers clocks for temperature (SW Thermal Slowdown)",
        "드라이버가 온도 때문에 클럭을 낮춤 (SW Thermal Slowdown)"),
}

_UNREADABLE_GPU = {
    "nvml_field_error": kind(
        "gpu_hardware", "warning", "gpu_reset", ("gpu_check_xid", "drain_node", "reset_gpu"),
        "nvidia-smi could not read some of the GPU's fields (Unknown Error / ERR!)",
        "nvidia-smi가 GPU의 일부 항목을 읽지 못함 (Unknown Error / ERR!)"),
    "nvml_field_gpu_lost": kind(
        "gpu_hardware", "critical", "reboot", ("gpu_check_xid", "drain_node", "reboot_node"),
        "nvidia-smi reads 'GPU is lost' for the GPU's fields",
        "nvidia-smi가 GPU 항목에 'GPU is lost'를 표시함"),
    "nvsmi_err_field": kind(
        "unknown", "warning", "none", ("gpu_check_fan_sensor",),
        "nvidia-smi shows ERR! for a fan or sensor column only, or one odd reading on one GPU: no GPU fault "
        "is proven",
        "nvidia-smi가 팬/센서 항목에만, 또는 GPU 하나의 판독값 하나에만 ERR!를 표시함: GPU 고장은 입증되지 않음"),
    "gpu_lost": kind(
        "gpu_hardware", "critical", "reboot", _WEDGED,
        "nvidia-smi cannot open the GPU: 'GPU is lost' (fallen off the bus)",
        "nvidia-smi가 GPU를 열지 못함: 'GPU is lost' (버스에서 떨어짐)"),
    "gpu_handle_error": kind(
        "gpu_hardware", "critical", "reboot", _WEDGED,
        "nvidia-smi cannot open the GPU: it is lost or wedged",
        "nvidia-smi가 GPU를 열지 못함: GPU가 사라졌거나 멈춤"),
    "gpu_handle_reset_required": kind(
        "gpu_hardware", "critical", "gpu_reset", ("drain_node", "gpu_check_xid", "reset_gpu"),
        "nvidia-smi cannot open the GPU until it is reset ('GPU requires reset')",
        "GPU를 리셋하기 전에는 nvidia-smi가 열 수 없음 ('GPU requires reset')"),
    "gpu_insufficient_power": kind(
        "gpu_hardware", "critical", "reboot", ("drain_node", "check_power_cabling", "reboot_node"),
        "the GPU is insufficiently powered: its external power cables are not properly attached",
        "GPU 전원 부족: 외부 전원 케이블이 제대로 연결되지 않음"),
    "gpu_handle_permission": kind(
        "unknown", "warning", "none", ("gpu_rerun_as_root",),
        "nvidia-smi lacked the permission to open a GPU: it was not checked",
        "nvidia-smi가 GPU를 열 권한이 없음: 점검되지 않음"),
    # Critical: Slurm itself sets such a node INVAL ("gres/gpu count reported lower than configured"),
    # Azure's NHC2009 and gpud's GPU count check fail it; reboot, RMA when it stays missing.
    # no expected count was given, but the GPUs are of an HGX baseboard's model (SXM), which carries 4 or 8:
    # 5, 6 or 7 of them is a count no platform ships, so one may not have enumerated (not certain: a VM
    # may pass some through): warning, unknown until lspci and the kernel log say
    "gpu_count_unusual": kind(
        "unknown", "warning", "none", ("gpu_check_bus",),
        "a count of baseboard (SXM) GPUs no HGX platform has: one may be missing",
        "HGX 플랫폼에 없는 베이스보드(SXM) GPU 수: GPU 하나가 누락되었을 수 있음"),
    "gpu_missing": kind(
        "gpu_hardware", "critical", "reboot", _GPU_GONE,
        "fewer GPUs than expected: a GPU fell off the bus or was not enumerated",
        "예상보다 GPU 수가 적음: GPU가 버스에서 떨어졌거나 인식되지 않음"),
}

# nvidia-smi could not report at all: the cause it printed (failures.FAILURES)
_FAILED_RUN = {
    "nvsmi_driver_unreachable": kind(
        "driver", "critical", "drain", ("drain_node", "check_driver", "gpu_check_module_loaded"),
        "nvidia-smi cannot talk to the NVIDIA driver: the kernel module is not loaded",
        "nvidia-smi가 NVIDIA 드라이버와 통신하지 못함: 커널 모듈이 로드되지 않음"),
    "nvml_driver_mismatch": kind(
        "driver", "critical", "reboot", ("drain_node", "reboot_node", "gpu_confirm_driver_versions"),
        "driver/library version mismatch: the driver was upgraded and the old kernel module still runs",
        "드라이버/라이브러리 버전 불일치: 드라이버가 업그레이드되었지만 이전 커널 모듈이 아직 실행 중"),
    "nvml_init_failed": kind(
        "driver", "critical", "reboot", ("drain_node", "gpu_check_xid", "reboot_node"),
        "NVML failed to initialise: the driver or a GPU is wedged",
        "NVML 초기화 실패: 드라이버 또는 GPU가 멈춤"),
    "nvml_missing": kind(
        "driver", "critical", "reboot", ("drain_node", "gpu_reinstall_driver", "reboot_node"),
        "libnvidia-ml.so is missing: the NVIDIA user-space driver is not installed",
        "libnvidia-ml.so가 없음: NVIDIA 사용자 공간 드라이버가 설치되지 않음"),
    "nvsmi_no_devices": kind(
        "driver", "critical", "reboot", _GPU_GONE,
        "the NVIDIA driver is loaded but sees no GPU",
        "NVIDIA 드라이버는 로드되었으나 GPU가 보이지 않음", also=("gpu_hardware",)),
    "nvsmi_access_blocked": kind(
        "driver", "critical", "reboot", ("drain_node", "gpu_check_cgroups", "reboot_node"),
        "the operating system blocks access to the GPUs",
        "운영체제가 GPU 접근을 차단함"),
    "nvml_permission": kind(
        "unknown", "warning", "none", ("gpu_rerun_as_root",),
        "nvidia-smi lacked the permission to query the GPUs: GPU health was not checked",
        "nvidia-smi가 GPU를 조회할 권한이 없음: GPU 상태를 확인하지 못함"),
    "nvidia_smi_failed": kind(
        "unknown", "warning", "drain", ("drain_node", "gpu_rerun_nvidia_smi", "check_driver"),
        "nvidia-smi failed without a message we know: GPU health is unknown, not healthy",
        "알 수 없는 이유로 nvidia-smi가 실패함: GPU 상태는 정상이 아니라 불명",
        also=("driver",)),
}

# the output itself: empty, garbled, cut off
_OUTPUT = {
    "nvsmi_empty": kind(
        "unknown", "warning", "none", ("gpu_rerun_nvidia_smi",),
        "nvidia-smi produced no output: GPU health was not checked",
        "nvidia-smi 출력이 없음: GPU 상태를 확인하지 못함"),
    "nvsmi_unparseable": kind(
        "unknown", "warning", "none", ("gpu_read_raw_output", "rerun_diagnosis"),
        "the nvidia-smi output could not be parsed: GPU health was not checked",
        "nvidia-smi 출력을 해석하지 못함: GPU 상태를 확인하지 못함"),
    "nvsmi_truncated": kind(
        "unknown", "info", "none", ("rerun_diagnosis",),
        "the nvidia-smi output is cut off: it was read as far as it goes",
        "nvidia-smi 출력이 중간에 끊김: 읽을 수 있는 데까지 읽음"),
    "nvsmi_incomplete": kind(
        "unknown", "info", "none", ("gpu_capture_full_q",),
        "the nvidia-smi output covers fewer GPUs than are attached (filtered with -i, or an excerpt)",
        "nvidia-smi 출력이 장착된 GPU보다 적은 GPU만 다룸 (-i 필터 또는 발췌본)"),
    "nvsmi_no_health_fields": kind(
        "unknown", "warning", "none", ("gpu_check_query_fields",),
        "the nvidia-smi query read no field that tells a GPU's health (ECC, remapped rows, reset status, "
        "recovery action, temperature, throttling): GPU health was not checked",
        "nvidia-smi 쿼리가 GPU 상태를 알려 주는 필드(ECC, remapped rows, reset 상태, recovery action, 온도, "
        "스로틀링)를 하나도 읽지 않음: GPU 상태를 확인하지 못함"),
    # nvidia-smi topo -m (nvsmi/topo.py): a matrix cut, asymmetric or with cells of no known kind
    "nvsmi_topo_unreadable": kind(
        "unknown", "warning", "none", ("rerun_diagnosis",),
        "the nvidia-smi topo -m matrix cannot be read whole (cut, asymmetric, or a cell of no known kind): the "
        "GPUs' NVLink and PCIe links are not known",
        "nvidia-smi topo -m 행렬을 온전히 읽을 수 없음 (잘림, 비대칭, 알 수 없는 셀): GPU의 NVLink·PCIe 연결을 "
        "알 수 없음"),
    # dcgmi dmon (dcgm/dmon.py): rows that do not line up with its header, a header with no row under it
    "dcgmi_dmon_unreadable": kind(
        "unknown", "warning", "none", ("rerun_diagnosis",),
        "the dcgmi dmon table cannot be read whole (cut, or rows that do not match its header): the fields of "
        "those GPUs are not known",
        "dcgmi dmon 표를 온전히 읽을 수 없음 (잘림, 또는 헤더와 맞지 않는 행): 해당 GPU의 필드 값을 알 수 없음"),
    # dcgmi dmon's RPCTR (DCGM_FI_DEV_PCIE_REPLAY_TOTAL): a lifetime count with no rate, no fault alone
    "pcie_replays": kind(
        "unknown", "info", "none", ("pcie_reseat_if_storm",),
        "the GPU's PCIe link counted replays (retried transfers): harmless unless the count keeps growing",
        "GPU의 PCIe 링크에서 replay(재전송)가 집계됨: 계속 늘지 않는 한 무해함"),
    "nvsmi_csv_bad_row": kind(
        "unknown", "info", "none", ("gpu_check_query_fields",),
        "an nvidia-smi CSV row did not match its header and was skipped",
        "nvidia-smi CSV 행이 헤더와 맞지 않아 건너뜀"),
}

KINDS = {name: row for table in (_MEMORY, _STATE, _UNREADABLE_GPU, _FAILED_RUN, _OUTPUT)
         for name, row in table.items()}
