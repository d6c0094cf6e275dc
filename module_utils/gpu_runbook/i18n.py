"""Report wording in English and Korean. JSON keys and enum values stay English;
only the human text changes. Finding messages/actions have Korean templates per kind;
a kind without one falls back to its English text."""

LANGS = ("en", "ko")

VERDICT_LABEL = {
    "en": {
        "healthy": "healthy", "gpu_hardware": "GPU hardware", "driver": "GPU driver",
        "ib_network": "InfiniBand network", "nccl_config": "NCCL configuration",
        "nccl_deadlock": "NCCL hang", "application": "application", "dataloader": "DataLoader",
        "memory_leak": "memory leak", "unknown": "unknown",
    },
    "ko": {
        "healthy": "정상", "gpu_hardware": "GPU 하드웨어", "driver": "GPU 드라이버",
        "ib_network": "InfiniBand 네트워크", "nccl_config": "NCCL 설정",
        "nccl_deadlock": "NCCL 교착", "application": "애플리케이션", "dataloader": "DataLoader",
        "memory_leak": "메모리 누수", "unknown": "원인 불명",
    },
}

RUNG_LABEL = {
    "en": {
        "none": "no action", "drain": "drain node", "nccl_env": "tune NCCL env",
        "timeout": "raise collective timeout", "gpu_reset": "GPU reset", "ib_restart": "restart openibd",
        "reboot": "reboot node", "rma": "hardware replacement (RMA)", "fix_application": "fix the application",
    },
    "ko": {
        "none": "조치 없음", "drain": "노드 drain", "nccl_env": "NCCL 환경변수 조정",
        "timeout": "collective 타임아웃 상향", "gpu_reset": "GPU 리셋", "ib_restart": "openibd 재시작",
        "reboot": "노드 재부팅", "rma": "하드웨어 교체(RMA)", "fix_application": "애플리케이션 수정",
    },
}

SEVERITY_LABEL = {
    "en": {"ok": "ok", "info": "info", "warning": "warning", "critical": "critical"},
    "ko": {"ok": "정상", "info": "정보", "warning": "경고", "critical": "심각"},
}

TEXT = {
    "en": {
        "summary": "{n} host(s): {crit} critical, {warn} warning, {ok} healthy",
        "next": "next",
        "evidence": "evidence",
        "action": "action",
        "healthy_hosts": "healthy ({n}): {hosts}",
        "no_findings": "no findings",
        "job": "job",
    },
    "ko": {
        "summary": "호스트 {n}대: 심각 {crit}, 경고 {warn}, 정상 {ok}",
        "next": "다음 단계",
        "evidence": "근거",
        "action": "조치",
        "healthy_hosts": "정상 ({n}대): {hosts}",
        "no_findings": "발견 사항 없음",
        "job": "작업",
    },
}

# Korean message templates by finding kind. Fields: the finding's own keys plus
# xid, gpu (pci), ib (device/port) flattened by ``_fields``.
KIND_KO = {
    "xid": ("GPU {gpu}에서 Xid {xid} 발생", "NVIDIA Xid 카탈로그의 조치를 따르십시오: {rung}."),
    "gpu_fallen_off_bus": ("GPU {gpu}가 버스에서 떨어짐 (GPU has fallen off the bus)",
                           "노드를 drain 하고 재부팅하십시오. 재발 시 하드웨어 교체."),
    "nvidia_smi_hang": ("nvidia-smi 응답 없음: GPU 또는 드라이버가 멈춤",
                        "노드를 drain 하고 재부팅하십시오 (GPU 리셋으로는 복구 불가)."),
    "nvidia_smi_missing": ("nvidia-smi가 없음: GPU 상태를 확인하지 못함", "NVIDIA 드라이버 설치를 확인하십시오."),
    "kernel_log_unavailable": ("커널 로그를 읽지 못함: Xid/링크 이벤트가 누락될 수 있음",
                               "root로 실행하거나 kernel.dmesg_restrict=0 을 설정하십시오."),
    "host_unreachable": ("호스트 응답 없음 (죽었거나 멈춘 노드)", "BMC/콘솔을 확인하고 응답할 때까지 Slurm에서 drain 하십시오."),
    "ib_port_down": ("IB 포트 {ib} 다운", "케이블/스위치 포트를 확인하고 openibd 재시작을 시도하십시오."),
    "ib_link_flapping": ("IB 포트 {ib} 링크 플래핑 (link_downed 증가)", "openibd 재시작 후에도 계속되면 케이블 교체."),
    "ib_link_downed": ("IB 포트 {ib} 링크 플래핑 (link_downed 증가)", "openibd 재시작 후에도 계속되면 케이블 교체."),
    "ib_port_not_active": ("IB 포트 {ib}가 Active 상태가 아님", "케이블/스위치 포트를 확인하고 openibd 재시작을 시도하십시오."),
    "xid_on_every_host": ("모든 호스트에서 Xid {xid} 발생: GPU 하나의 고장이 아니라 애플리케이션/드라이버 문제",
                          "하드웨어 교체 전에 작업 코드와 드라이버 버전을 확인하십시오."),
    "job_culprit": ("랭크 {rank}: 다른 랭크들이 기다린 원인 랭크 (GPU {gpu})", "{rung} 단계부터 진행하십시오."),
    "straggler": ("다른 노드보다 느린 노드(straggler): 모든 collective가 이 노드를 기다림",
                  "노드를 drain 하고 클럭(nvidia-smi -q -d PERFORMANCE), 냉각, BMC 로그를 확인하십시오."),
    "shared_rail_errors": ("같은 레일 {ib}에서 여러 호스트에 링크 오류: HCA가 아니라 해당 레일의 리프 스위치 쪽 문제",
                           "HCA나 케이블 교체 전에 레일의 리프 스위치 포트 카운터와 로그를 확인하십시오."),
}


def label(table, lang, key):
    return table.get(lang, table["en"]).get(key, key)


def text(lang, key, **kw):
    return TEXT.get(lang, TEXT["en"]).get(key, TEXT["en"][key]).format(**kw)


def _fields(f, lang):
    gpu = f.get("gpu") or {}
    ib = f.get("ib") or {}
    return {
        "xid": f.get("xid"), "gpu": gpu.get("pci") or gpu.get("index") or "?",
        "ib": "%s/%s" % (ib.get("device"), ib.get("port")) if ib else "?",
        "rung": label(RUNG_LABEL, lang, f.get("rung", "none")), "rank": f.get("rank"),
    }


def finding_message(f, lang):
    """(message, action) in the requested language."""
    if lang == "ko" and f.get("kind") in KIND_KO:
        msg, act = KIND_KO[f["kind"]]
        flds = _fields(f, lang)
        return msg.format(**flds), act.format(**flds)
    return f.get("message", ""), f.get("action", "")
