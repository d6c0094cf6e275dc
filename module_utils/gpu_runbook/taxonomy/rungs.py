# SPDX-License-Identifier: Apache-2.0
"""The remedy ladder and the steps every action is made of, in English and Korean.

One table of rungs (order = cheapest and safest first) and one table of steps. A finding's
action is a tuple of step ids, rendered in either language from this one table, so English
and Korean can never advise different things. A step that *is* a rung names it; a kind's
rung is always the costliest rung among its steps (tests/unit/test_taxonomy.py holds it).
"""

# name: (scope, disruptive, en label, ko label)
#   scope: what the rung acts on -- "gpu", "host" or "job" ("-" for none);
#   disruptive: kills or interrupts work running there (needs a drained node and confirmation).
_RUNG_ROWS = (
    ("none", "-", False, "no action", "조치 없음"),
    ("drain", "host", False, "drain node", "노드 drain"),
    ("nccl_env", "job", False, "tune NCCL env", "NCCL 환경변수 조정"),
    ("timeout", "job", False, "raise collective timeout", "collective 타임아웃 상향"),
    ("gpu_reset", "gpu", True, "GPU reset", "GPU 리셋"),
    ("ib_restart", "host", True, "restart openibd", "openibd 재시작"),
    ("reboot", "host", True, "reboot node", "노드 재부팅"),
    ("rma", "host", True, "hardware replacement (RMA)", "하드웨어 교체(RMA)"),
    ("fix_application", "job", False, "fix the application", "애플리케이션 수정"),
)

RUNGS = tuple(r[0] for r in _RUNG_ROWS)
RUNG_RANK = {r: i for i, r in enumerate(RUNGS)}
RUNG_TABLE = {
    name: {"order": i, "scope": scope, "disruptive": disruptive, "label": {"en": en, "ko": ko}}
    for i, (name, scope, disruptive, en, ko) in enumerate(_RUNG_ROWS)
}

# step id: (rung it performs or None, en, ko). Backticks mark commands and identifiers,
# which stay the same in both languages.
STEPS = {
    # the rungs themselves
    "no_action": ("none", "No action needed.", "조치가 필요 없습니다."),
    "drain_node": ("drain", "Drain the node in Slurm.", "Slurm에서 노드를 drain 하십시오."),
    "tune_nccl_env": ("nccl_env", "Fix the job's NCCL environment for the next run.",
                      "다음 실행을 위해 작업의 NCCL 환경변수를 바로잡으십시오."),
    "raise_timeout": ("timeout", "Raise the collective timeout (`init_process_group(timeout=)`) and "
                                 "`NCCL_IB_TIMEOUT`/`NCCL_IB_RETRY_CNT` for the next run.",
                      "다음 실행을 위해 collective 타임아웃(`init_process_group(timeout=)`)과 "
                      "`NCCL_IB_TIMEOUT`/`NCCL_IB_RETRY_CNT`를 올리십시오."),
    "reset_gpu": ("gpu_reset", "Reset the GPU (`nvidia-smi --gpu-reset`) once no process holds it.",
                  "GPU를 점유한 프로세스가 없을 때 GPU를 리셋하십시오 (`nvidia-smi --gpu-reset`)."),
    "restart_openibd": ("ib_restart", "Restart the IB stack (`systemctl restart openibd`).",
                        "IB 스택을 재시작하십시오 (`systemctl restart openibd`)."),
    "reboot_node": ("reboot", "Reboot the node.", "노드를 재부팅하십시오."),
    "replace_hardware": ("rma", "Leave it drained and open a hardware replacement (RMA) with an "
                                "`nvidia-bug-report.sh` attached.",
                         "drain 상태로 두고 `nvidia-bug-report.sh` 결과를 첨부해 하드웨어 교체(RMA)를 요청하십시오."),
    "fix_application": ("fix_application", "Fix the job's code; the hardware is not at fault.",
                        "작업 코드를 수정하십시오. 하드웨어 문제가 아닙니다."),
    # what an engineer checks; no rung of its own
    "restart_job": (None, "Restart the job.", "작업을 재시작하십시오."),
    "reboot_if_recurs": (None, "Reboot if it recurs.", "재발하면 재부팅하십시오."),
    "rma_if_recurs": (None, "Replace the part (RMA) if it recurs.", "재발하면 부품을 교체(RMA)하십시오."),
    "contact_support_if_recurs": (None, "Contact NVIDIA support if it repeats.",
                                  "반복되면 NVIDIA 지원에 문의하십시오."),
    "check_cable": (None, "Check the cable, transceiver and switch port of this link.",
                    "이 링크의 케이블, 트랜시버, 스위치 포트를 점검하십시오."),
    "check_subnet_manager": (None, "Check that the subnet manager sees the port (`ibstat`, `sminfo`).",
                             "서브넷 매니저가 포트를 인식하는지 확인하십시오 (`ibstat`, `sminfo`)."),
    "check_leaf_switch": (None, "Check the rail's leaf switch (port counters, logs) before swapping HCAs or cables.",
                          "HCA나 케이블을 교체하기 전에 해당 레일의 리프 스위치(포트 카운터, 로그)를 점검하십시오."),
    "check_hca": (None, "Check the HCA's firmware and PCIe slot (`mlxfwmanager`, `lspci -vv`).",
                  "HCA 펌웨어와 PCIe 슬롯을 점검하십시오 (`mlxfwmanager`, `lspci -vv`)."),
    "check_driver": (None, "Check the NVIDIA driver install and version (`nvidia-smi`, `modinfo nvidia`).",
                     "NVIDIA 드라이버 설치와 버전을 확인하십시오 (`nvidia-smi`, `modinfo nvidia`)."),
    "check_clocks_cooling": (None, "Check clocks (`nvidia-smi -q -d PERFORMANCE`), cooling and the BMC log.",
                             "클럭(`nvidia-smi -q -d PERFORMANCE`), 냉각, BMC 로그를 확인하십시오."),
    "check_power_cabling": (None, "Check the GPU's power cabling and the PSUs.",
                            "GPU 전원 케이블과 PSU를 점검하십시오."),
    "check_console": (None, "Check the node's console and BMC.", "노드의 콘솔과 BMC를 확인하십시오."),
    "grant_kernel_log": (None, "Run as root or set `kernel.dmesg_restrict=0`; check journald and "
                               "`/var/log/kern.log`.",
                         "root로 실행하거나 `kernel.dmesg_restrict=0`을 설정하고 journald와 "
                         "`/var/log/kern.log`를 확인하십시오."),
    "rerun_diagnosis": (None, "Fix the cause and run the diagnosis again.",
                        "원인을 해결한 뒤 진단을 다시 실행하십시오."),
    "report_parser_bug": (None, "Attach the raw capture to a gpu-runbook bug report.",
                          "원본 캡처를 gpu-runbook 버그 리포트에 첨부하십시오."),
    "widen_inventory": (None, "Add the node to the inventory (or widen `--limit`) and run diagnose again.",
                        "노드를 인벤토리에 추가하거나 `--limit`을 넓혀 다시 진단하십시오."),
    "read_rank_log": (None, "Read that rank's own log (stack, `py-spy dump`) before blaming hardware.",
                      "하드웨어를 의심하기 전에 해당 랭크의 로그(스택, `py-spy dump`)를 확인하십시오."),
    "check_job_code": (None, "Check the job's code and the driver version before replacing hardware.",
                       "하드웨어 교체 전에 작업 코드와 드라이버 버전을 확인하십시오."),
    "check_dataloader": (None, "Check the DataLoader: workers, `/dev/shm` size, storage latency.",
                         "DataLoader를 확인하십시오: 워커 수, `/dev/shm` 크기, 스토리지 지연."),
    "check_memory_growth": (None, "Check the job's memory growth over time (a leak) and its batch size.",
                            "작업의 시간에 따른 메모리 증가(누수)와 배치 크기를 확인하십시오."),
    "check_nccl_config": (None, "Check the job's `NCCL_*` settings and `/etc/nccl.conf`.",
                          "작업의 `NCCL_*` 설정과 `/etc/nccl.conf`를 확인하십시오."),
    "check_follow_up": (None, "Follow the error that preceded it.", "이보다 먼저 발생한 오류를 따르십시오."),
    "none_other_sources": (None, "Nothing to do: other sources cover this.",
                           "조치 불필요: 다른 소스가 이를 대신합니다."),
}


def rung_of_steps(steps):
    """The costliest rung the steps perform ("none" when none performs one)."""
    best = "none"
    for s in steps:
        r = STEPS[s][0]
        if r is not None and RUNG_RANK[r] > RUNG_RANK[best]:
            best = r
    return best


# The steps a finding takes when its rung is decided per instance (an Xid's catalog bucket,
# a job culprit that inherits its host's finding).
RUNG_STEPS = {
    "none": ("no_action",),
    "drain": ("drain_node",),
    "nccl_env": ("tune_nccl_env",),
    "timeout": ("raise_timeout",),
    "gpu_reset": ("drain_node", "reset_gpu"),
    "ib_restart": ("drain_node", "restart_openibd"),
    "reboot": ("drain_node", "reboot_node"),
    "rma": ("drain_node", "replace_hardware"),
    "fix_application": ("fix_application",),
}
