# SPDX-License-Identifier: Apache-2.0
"""Finding kinds of the ib domain: InfiniBand / RoCE port state, link rate, HCAs and error
counters (the parsers in infiniband/). See taxonomy/__init__.py for the row format.

The remedy follows what the port says, as an IB engineer reads it:

- the physical layer is not up (phys_state Polling, Disabled, Sleep, PortConfigurationTraining,
  LinkErrorRecovery, or no cable), the link runs below its rate or width, or the physical
  error counters climb (symbol errors, link error recovery, link downed, receive errors,
  link integrity): the cable, the transceiver or the switch port. Drain and check the cable;
  restarting openibd does not mend a bad cable (rung ``drain``);
- the physical link is up (LinkUp) but the logical port is Down/Init/Armed: the subnet
  manager or the driver, which software can fix (rung ``ib_restart``);
- an HCA that vanished (stat failed, fewer devices than expected): PCIe or firmware, which
  needs a reboot and an RMA if it does not come back (rung ``reboot``).
"""

from .table import kind

# Steps only the IB findings take. Prefixed ``ib_`` so they can never collide with
# rungs.STEPS or another domain's steps.
STEPS = {
    "ib_confirm_active": (None, "Then confirm `State: Active` and `Physical state: LinkUp` (`ibstat`).",
                          "이후 `State: Active`, `Physical state: LinkUp`인지 확인하십시오 (`ibstat`)."),
    "ib_check_netdev": (None, "Check that the port's network interface is up (`ibdev2netdev`, `ip link`).",
                        "포트의 네트워크 인터페이스가 올라와 있는지 확인하십시오 (`ibdev2netdev`, `ip link`)."),
    "ib_check_switch_speed": (None, "Check the switch port's configured speed and width.",
                              "스위치 포트에 설정된 속도와 폭(width)을 확인하십시오."),
    "ib_clear_counters": (None, "Clear the port counters (`perfquery -x -R`) and check that they stay at zero.",
                          "포트 카운터를 초기화(`perfquery -x -R`)하고 다시 오르지 않는지 확인하십시오."),
    "ib_check_hca_pcie": (None, "Check `lspci` for the HCA and `dmesg` for `mlx5_core` and PCIe AER errors.",
                          "`lspci`로 HCA를, `dmesg`로 `mlx5_core` 및 PCIe AER 오류를 확인하십시오."),
    "ib_check_rdma_stack": (None, "If this node should have InfiniBand/RoCE HCAs, check `lspci`, the "
                                  "`mlx5_core`/`mlx5_ib` drivers and the rdma service.",
                            "이 노드에 InfiniBand/RoCE HCA가 있어야 한다면 `lspci`, `mlx5_core`/`mlx5_ib` "
                            "드라이버, rdma 서비스를 확인하십시오."),
    "ib_run_tool_as_root": (None, "Run the tool as root and check that the `ib_umad`/rdma modules are loaded.",
                            "도구를 root로 실행하고 `ib_umad`/rdma 모듈이 로드되었는지 확인하십시오."),
    "ib_check_probe_ran": (None, "Check that the InfiniBand probe ran and produced its output.",
                           "InfiniBand 프로브가 실행되어 출력을 남겼는지 확인하십시오."),
    "ib_check_port_meant_cabled": (None, "None if the port is not meant to be cabled; if it should carry "
                                         "traffic, check its cable and switch port.",
                                   "케이블을 연결하지 않는 포트라면 조치 불필요. 트래픽을 실어야 하는 포트라면 "
                                   "케이블과 스위치 포트를 점검하십시오."),
    "ib_check_not_nccl_path": (None, "Check whether this port is meant to be cabled; it does not carry NCCL "
                                     "traffic when NCCL uses the InfiniBand HCAs.",
                               "이 포트가 케이블 연결 대상인지 확인하십시오. NCCL이 InfiniBand HCA를 쓰면 "
                               "이 포트는 NCCL 트래픽을 싣지 않습니다."),
    "ib_check_congestion": (None, "Check the link for flaps and the fabric for congestion (the switch port's "
                                  "counters, `ibqueryerrors`).",
                            "링크 플래핑 여부와 패브릭 혼잡을 확인하십시오 (스위치 포트 카운터, `ibqueryerrors`)."),
    "ib_check_flow_control": (None, "Check the link and the peer port's flow-control (VL/credit) configuration.",
                              "링크와 상대 포트의 흐름 제어(VL/크레딧) 설정을 확인하십시오."),
    "ib_check_upstream_links": (None, "Look for physical errors on the upstream switch links (`perfquery`, "
                                      "`ibqueryerrors`).",
                                "상위 스위치 링크의 물리 오류를 확인하십시오 (`perfquery`, `ibqueryerrors`)."),
    "ib_check_routing": (None, "Nothing to do unless it grows with traffic; then check the subnet manager's "
                               "routing.",
                         "트래픽과 함께 늘지 않으면 조치 불필요. 늘면 서브넷 매니저의 라우팅을 확인하십시오."),
    "ib_check_pkeys": (None, "Check the partition (P_Key) configuration.", "파티션(P_Key) 설정을 확인하십시오."),
    "ib_watch_subnet_manager": (None, "Nothing to do unless the subnet manager reports problems.",
                                "서브넷 매니저가 문제를 보고하지 않으면 조치 불필요."),
    "ib_watch_counter": (None, "Nothing to do unless it grows during the failing job.",
                         "실패한 작업 중에 늘지 않았다면 조치 불필요."),
    "ib_check_remote_peer": (None, "Check the link and the remote node of the failing connection.",
                             "실패한 연결의 링크와 원격 노드를 확인하십시오."),
    "ib_check_peer_health": (None, "Check the link's error counters and the peers' health.",
                             "링크 오류 카운터와 상대 노드 상태를 확인하십시오."),
    "ib_check_path_errors": (None, "Correlate with the link error counters on the path.",
                             "경로상의 링크 오류 카운터와 대조하십시오."),
    "ib_check_link_counters": (None, "Check the link and the peer port.", "링크와 상대 포트를 확인하십시오."),
    "ib_read_fabric_scan": (None, "Read the stage's `-E-` lines (`ibdiagnet2.log`): each names a node, port and what "
                                  "was wrong; check those links (`perfquery`, the cable) and the subnet manager, not "
                                  "the node that ran the scan.",
                            "해당 단계의 `-E-` 줄(`ibdiagnet2.log`)을 읽으십시오: 각 줄이 노드, 포트, 문제를 "
                            "밝힘; 스캔을 실행한 노드가 아니라 그 링크(`perfquery`, 케이블)와 서브넷 매니저를 "
                            "점검하십시오."),
    "ib_check_libfabric_provider": (None, "Check the RDMA provider's driver and the libfabric the job loads: "
                                          "`fi_info -p efa` (the EFA driver, `lsmod | grep efa`, the EFA installer) "
                                          "or `fi_info -p verbs` (`ibv_devinfo`); `FI_PROVIDER` and "
                                          "`LD_LIBRARY_PATH` must not select another libfabric or provider.",
                                    "RDMA 프로바이더의 드라이버와 작업이 로드하는 libfabric을 확인하십시오: "
                                    "`fi_info -p efa` (EFA 드라이버, `lsmod | grep efa`, EFA 설치 프로그램) 또는 "
                                    "`fi_info -p verbs` (`ibv_devinfo`); `FI_PROVIDER`와 `LD_LIBRARY_PATH`가 다른 "
                                    "libfabric이나 프로바이더를 고르지 않아야 합니다."),
    "ib_check_sm_unhealthy_link": (None, "Check the link the subnet manager named on both of its ends (`perfquery` or "
                                         "`ibdiagnet` for its errors, the cable and transceiver, the switch ports); "
                                         "a node whose HCA is one end stays drained until the link is mended, and "
                                         "clear the mark in UFM (or the SM's health policy) only after it is.",
                                   "서브넷 매니저가 지목한 링크의 양 끝을 점검하십시오 (오류는 `perfquery` 또는 "
                                   "`ibdiagnet`, 케이블과 트랜시버, 스위치 포트); HCA가 한쪽 끝인 노드는 링크가 "
                                   "고쳐질 때까지 drain 상태로 두고, 고쳐진 뒤에만 UFM(또는 SM의 health policy)에서 "
                                   "표시를 지우십시오."),
    # the link test between two hosts (infiniband/pingpong.py): which end fails is told by a third host
    "ib_check_pingpong_path": (None, "Check both hosts' ports (`ibstat`) and the error counters on the path between "
                                     "them (`perfquery`, `ibqueryerrors`); run the test from each host against a third "
                                     "one to tell which end fails.",
                               "두 호스트의 포트(`ibstat`)와 그 사이 경로의 오류 카운터(`perfquery`, `ibqueryerrors`)를 "
                               "확인하고, 각 호스트에서 제3의 호스트로 시험을 실행해 어느 쪽이 문제인지 가리십시오."),
    "ib_check_pingpong_port": (None, "Check the HCA and port the test used (`ibv_devinfo`: `-d` names the device, `-i` "
                                     "the port): the port must be Active with a LID on InfiniBand, and RoCE needs a "
                                     "GID index (`-g`, `show_gids`) and a path MTU (`-m`) the port supports.",
                               "시험이 사용한 HCA와 포트를 확인하십시오 (`ibv_devinfo`: `-d`는 장치, `-i`는 포트): "
                               "InfiniBand에서는 포트가 LID를 받은 Active 상태여야 하고, RoCE에서는 포트가 지원하는 "
                               "GID 인덱스(`-g`, `show_gids`)와 경로 MTU(`-m`)가 필요합니다."),
    "ib_check_pingpong_peer": (None, "Start the server side first (the command without a host), then the client with "
                                     "the server's host name; check that the client reaches that host and TCP port "
                                     "(`-p`, default 18515: DNS, firewall). This channel only exchanges the RDMA "
                                     "addresses over TCP: it says nothing of the RDMA link.",
                               "서버 쪽(호스트 없이 실행)을 먼저 시작한 뒤 서버의 호스트 이름으로 클라이언트를 "
                               "실행하고, 클라이언트가 그 호스트와 TCP 포트(`-p`, 기본 18515: DNS, 방화벽)에 닿는지 "
                               "확인하십시오. 이 채널은 TCP로 RDMA 주소만 교환할 뿐 RDMA 링크에 대해서는 알려주지 "
                               "않습니다."),
    "ib_check_pingpong_setup": (None, "Check what the test could not set up: the locked-memory limit (`ulimit -l`, "
                                      "unlimited for RDMA), the HCA's driver (`dmesg` for `mlx5_core`), the libfabric "
                                      "provider (`fi_info -p <provider>`) and the options given to the test.",
                                "시험이 준비하지 못한 것을 확인하십시오: 고정 메모리 한도(`ulimit -l`, RDMA에는 "
                                "무제한), HCA 드라이버(`mlx5_core`에 대한 `dmesg`), libfabric 프로바이더"
                                "(`fi_info -p <provider>`), 시험에 준 옵션."),
}

# What the physical layer says is wrong: the cable, transceiver or switch port.
_CABLE = ("drain_node", "check_cable", "ib_clear_counters")

KINDS = {
    # ---- port state (sysfs, ibstat, ibstatus, ibv_devinfo, iblinkinfo)
    "ib_port_down": kind(
        "ib_network", "critical", "drain", ("drain_node", "check_cable", "ib_confirm_active"),
        "InfiniBand port {ib} has no physical link (Polling/Disabled/no cable): the cable, "
        "transceiver or switch port",
        "InfiniBand 포트 {ib}에 물리 링크가 없음 (Polling/Disabled/케이블 없음): 케이블, 트랜시버 또는 스위치 포트 문제"),
    "ib_port_not_active": kind(
        "ib_network", "critical", "ib_restart", ("drain_node", "check_subnet_manager", "restart_openibd"),
        "InfiniBand port {ib} has its physical link up but is not Active: the subnet manager or the driver",
        "InfiniBand 포트 {ib}의 물리 링크는 올라왔으나 Active가 아님: 서브넷 매니저 또는 드라이버 문제"),
    "ib_port_unused": kind(
        "ib_network", "info", "none", ("ib_check_port_meant_cabled",),
        "InfiniBand port {ib} is down like the same port on every card: probably not cabled",
        "InfiniBand 포트 {ib}가 모든 카드의 같은 포트처럼 내려가 있음: 케이블 미연결 포트로 보임"),
    # every port of the host Down with its physical layer Disabled (PortPhysicalState 3: turned off by the
    # subnet manager or locally, not a missing partner, which is Polling): no port carries traffic; whether
    # the HCAs are meant to (unused cards) or were turned off is not in the reading
    "ib_ports_all_disabled": kind(
        "unknown", "warning", "none", ("ib_check_port_meant_cabled",),
        "every InfiniBand port of the host is Down and Disabled: unused HCAs, or ports turned off",
        "호스트의 모든 InfiniBand 포트가 Down이며 Disabled 상태: 사용하지 않는 HCA이거나 포트가 비활성화됨",
        also=("ib_network",)),
    "roce_port_down": kind(
        "ib_network", "critical", "drain", ("drain_node", "check_cable", "ib_confirm_active"),
        "RoCE data-path port {ib} is down while its peers are up: the cable, transceiver or switch port",
        "RoCE 데이터 경로 포트 {ib}만 내려가 있음: 케이블, 트랜시버 또는 스위치 포트 문제"),
    "roce_port_not_active": kind(
        "ib_network", "critical", "ib_restart", ("drain_node", "ib_check_netdev", "restart_openibd"),
        "RoCE data-path port {ib} has its physical link up but is Down: the driver or the interface, not the cable",
        "RoCE 데이터 경로 포트 {ib}의 물리 링크는 올라왔으나 Down 상태: 케이블이 아니라 드라이버 또는 인터페이스 문제"),
    "eth_port_down": kind(
        "unknown", "warning", "none", ("ib_check_not_nccl_path",),
        "Ethernet port {ib} is down while same-type ports are up; it does not look like the NCCL data path",
        "이더넷 포트 {ib}가 내려가 있음 (같은 종류 포트는 동작 중). NCCL 데이터 경로로 보이지 않음"),
    "eth_port_unused": kind(
        "ib_network", "info", "none", ("ib_check_port_meant_cabled",),
        "Ethernet port {ib} is down and no port of its type is up: probably an unused NIC",
        "이더넷 포트 {ib}가 내려가 있고 같은 종류 포트도 모두 내려가 있음: 사용하지 않는 NIC로 보임"),
    "ib_link_degraded": kind(
        "ib_network", "warning", "drain", ("drain_node", "check_cable", "ib_check_switch_speed"),
        "link {ib} runs below its rate or width (lanes or speed fell back): the cable, transceiver or switch port",
        "링크 {ib}가 정격 속도/폭보다 낮게 동작 (레인 또는 속도 저하): 케이블, 트랜시버 또는 스위치 포트 문제"),
    # ---- devices
    "ib_device_missing": kind(
        "ib_network", "critical", "reboot", ("drain_node", "ib_check_hca_pcie", "reboot_node", "rma_if_recurs"),
        "HCA {ib} is missing (removed, reset or off the PCIe bus)",
        "HCA {ib}가 사라짐 (제거, 리셋 또는 PCIe 버스에서 이탈)"),
    "ib_no_devices": kind(
        "ib_network", "warning", "none", ("ib_check_rdma_stack",),
        "no RDMA device was found on this host",
        "이 호스트에서 RDMA 장치를 찾지 못함"),
    "ib_tool_error": kind(
        "unknown", "info", "none", ("ib_run_tool_as_root",),
        "an InfiniBand tool reported an error",
        "InfiniBand 도구가 오류를 보고함"),
    "ib_unparseable": kind(
        "unknown", "info", "none", ("ib_check_probe_ran",),
        "an InfiniBand capture is empty or not the expected tool's output",
        "InfiniBand 캡처가 비었거나 예상한 도구의 출력이 아님"),
    # ---- error counters (infiniband/counters.py names the kind each counter raises)
    "ib_link_downed": kind(
        "ib_network", "warning", "drain", _CABLE,
        "link {ib} went down and retrained (flapping): the cable, transceiver or switch port",
        "링크 {ib}가 끊겼다가 재협상됨 (플래핑): 케이블, 트랜시버 또는 스위치 포트 문제"),
    "ib_symbol_errors": kind(
        "ib_network", "warning", "drain", _CABLE,
        "symbol errors (physical-layer bit errors) on link {ib}: the cable or transceiver",
        "링크 {ib}에 심볼 오류(물리 계층 비트 오류): 케이블 또는 트랜시버 문제"),
    "ib_link_error_recovery": kind(
        "ib_network", "warning", "drain", _CABLE,
        "link {ib} ran its error-recovery procedure (a marginal link): the cable or transceiver",
        "링크 {ib}가 오류 복구 절차를 수행함 (불안정한 링크): 케이블 또는 트랜시버 문제"),
    "ib_rcv_errors": kind(
        "ib_network", "warning", "drain", _CABLE,
        "malformed packets received on {ib} (bad CRC/length): the cable or the peer port",
        "{ib}에서 손상된 패킷 수신 (CRC/길이 오류): 케이블 또는 상대 포트 문제"),
    "ib_link_integrity_errors": kind(
        "ib_network", "warning", "drain", _CABLE,
        "local link integrity errors on {ib} (physical errors beyond the link threshold): the cable or transceiver",
        "{ib}에 로컬 링크 무결성 오류 (임계치를 넘는 물리 오류): 케이블 또는 트랜시버 문제"),
    "ib_buffer_overrun_errors": kind(
        "ib_network", "warning", "drain", ("drain_node", "ib_check_flow_control"),
        "excessive buffer overruns on {ib} (a flow-control / credit problem)",
        "{ib}에 과도한 버퍼 오버런 (흐름 제어/크레딧 문제)"),
    "ib_xmit_discards": kind(
        "ib_network", "warning", "drain", ("drain_node", "ib_check_congestion"),
        "outbound packets discarded on {ib} (port down, or congestion / head-of-line timeout)",
        "{ib}에서 송신 패킷 폐기 (포트 다운 또는 혼잡/HOL 타임아웃)"),
    "ib_remote_physical_errors": kind(
        "ib_network", "warning", "none", ("ib_check_upstream_links",),
        "packets arrived on {ib} marked bad by an upstream link: the fault is elsewhere in the fabric",
        "{ib}에 상위 링크에서 손상 표시된 패킷 도착: 패브릭의 다른 곳에 문제"),
    "ib_vl15_dropped": kind(
        "ib_network", "info", "none", ("ib_watch_subnet_manager",),
        "subnet-management (VL15) packets dropped on {ib}",
        "{ib}에서 서브넷 관리(VL15) 패킷 폐기"),
    "ib_switch_relay_errors": kind(
        "ib_network", "info", "none", ("ib_check_routing",),
        "packets the switch could not relay on {ib} (routing; often multicast, usually benign)",
        "{ib}에서 스위치가 중계하지 못한 패킷 (라우팅, 주로 멀티캐스트이며 대개 무해)"),
    "ib_constraint_errors": kind(
        "ib_network", "info", "none", ("ib_check_pkeys",),
        "packets dropped on {ib} by partition/constraint checks",
        "{ib}에서 파티션/제약 검사로 패킷 폐기"),
    "ib_congestion": kind(
        "ib_network", "info", "none", ("ib_check_congestion",),
        "port {ib} often waited for credits (congestion)",
        "포트 {ib}가 크레딧을 자주 기다림 (혼잡)"),
    "ib_transport_retries_exceeded": kind(
        "ib_network", "warning", "none", ("ib_check_remote_peer",),
        "RDMA requests on {ib} exhausted their transport retries (NCCL 'retry counter exceeded')",
        "{ib}의 RDMA 요청이 전송 재시도 한도를 소진함 (NCCL 'retry counter exceeded')"),
    "ib_ack_timeouts": kind(
        "ib_network", "info", "none", ("ib_check_peer_health",),
        "RDMA ACK timeouts on {ib} (peer slow, packets lost or link flapping)",
        "{ib}에서 RDMA ACK 타임아웃 (상대가 느림, 패킷 손실 또는 링크 플래핑)"),
    "ib_rnr_retry_errors": kind(
        "ib_network", "info", "none", ("ib_watch_counter",),
        "receiver-not-ready retry failures on {ib}",
        "{ib}에서 RNR(receiver-not-ready) 재시도 실패"),
    "ib_packet_seq_errors": kind(
        "ib_network", "info", "none", ("ib_check_path_errors",),
        "packet sequence errors on {ib} (packets lost in the fabric)",
        "{ib}에서 패킷 순서 오류 (패브릭에서 패킷 손실)"),
    "ib_out_of_buffer": kind(
        "ib_network", "info", "none", ("ib_watch_counter",),
        "packets dropped on {ib} for lack of receive WQEs",
        "{ib}에서 수신 WQE 부족으로 패킷 폐기"),
    # ---- a fabric scan (ibdiagnet): other nodes' links too, never a verdict on the node that ran it
    "ib_fabric_scan_errors": kind(
        "ib_network", "warning", "none", ("ib_read_fabric_scan",),
        "ibdiagnet's fabric scan found errors: links, counters or the subnet manager somewhere in the fabric",
        "ibdiagnet 패브릭 스캔이 오류를 발견함: 패브릭 어딘가의 링크, 카운터 또는 서브넷 매니저"),
    "ib_fabric_scan_incomplete": kind(
        "unknown", "warning", "none", ("rerun_diagnosis",),
        "the ibdiagnet output ends before its Summary: whether every stage passed is not known",
        "ibdiagnet 출력이 Summary 전에 끝남: 모든 단계가 통과했는지 알 수 없음"),
    # ---- the subnet manager's unhealthy-ports report (infiniband/sm_unhealthy.py)
    "ib_sm_unhealthy_port": kind(
        "ib_network", "warning", "none", ("ib_check_sm_unhealthy_link",),
        "the subnet manager declared a link of the fabric unhealthy (flapping, unresponsive, errors): it isolates "
        "or disables the port",
        "서브넷 매니저가 패브릭의 링크를 비정상으로 선언함 (flapping, 무응답, 오류): 해당 포트를 격리하거나 비활성화함"),
    # ---- libfabric's fi_info (infiniband/fi_info.py): the fabric software stack NCCL's OFI plugin loads
    "fi_info_no_rdma_provider": kind(
        "nccl_config", "warning", "none", ("ib_check_libfabric_provider",),
        "libfabric offers no RDMA provider with a reliable endpoint (only tcp, udp, sockets or shm): NCCL's OFI "
        "plugin would fall back to sockets",
        "libfabric에 신뢰성 있는 엔드포인트를 제공하는 RDMA 프로바이더가 없음 (tcp, udp, sockets, shm뿐): NCCL의 "
        "OFI 플러그인이 소켓으로 대체됨"),
    "fi_info_no_provider": kind(
        "nccl_config", "warning", "none", ("ib_check_libfabric_provider",),
        "fi_info found no libfabric provider that matches (fi_getinfo -61, FI_ENODATA): the provider asked for is "
        "not available on this node",
        "fi_info가 일치하는 libfabric 프로바이더를 찾지 못함 (fi_getinfo -61, FI_ENODATA): 요청한 프로바이더를 이 "
        "노드에서 쓸 수 없음",
        also=("unknown",)),
    "ib_counter_threshold": kind(
        "ib_network", "warning", "none", ("ib_check_link_counters",),
        "a counter on {ib} crossed a threshold set for this run",
        "{ib}의 카운터가 이번 실행에 지정한 임계치를 넘음"),
    # ---- a link test between two hosts (ibv_*_pingpong, fi_pingpong: infiniband/pingpong.py); it names a path,
    # not a node, so at most a warning with no rung, like a fabric scan
    "ib_pingpong_completion_error": kind(
        "ib_network", "warning", "none", ("ib_check_pingpong_path",),
        "a pingpong link test between two hosts failed with a work-completion error: the RDMA path between them, "
        "or the peer",
        "두 호스트 사이의 pingpong 링크 시험이 work completion 오류로 실패함: 두 호스트 사이의 RDMA 경로 또는 상대 "
        "호스트 문제",
        also=("unknown", "application")),
    "ib_pingpong_port_error": kind(
        "ib_network", "warning", "none", ("ib_check_pingpong_port",),
        "a pingpong link test could not use its HCA or port (device missing, port without a LID, queue pair not "
        "set up for the peer)",
        "pingpong 링크 시험이 HCA나 포트를 사용하지 못함 (장치 없음, LID 없는 포트, 상대에 맞춘 큐 페어 설정 실패)",
        also=("unknown",)),
    "ib_pingpong_no_peer": kind(
        "unknown", "warning", "none", ("ib_check_pingpong_peer",),
        "a pingpong link test did not reach its other side over TCP (the channel that exchanges the RDMA "
        "addresses): the link itself was not tested",
        "pingpong 링크 시험이 TCP로 상대 쪽에 닿지 못함 (RDMA 주소를 교환하는 채널): 링크 자체는 시험되지 않음"),
    "ib_pingpong_setup_error": kind(
        "unknown", "warning", "none", ("ib_check_pingpong_setup",),
        "a pingpong link test could not set up its RDMA resources (memory registration, queues, provider, "
        "options): the link itself was not tested",
        "pingpong 링크 시험이 RDMA 자원을 준비하지 못함 (메모리 등록, 큐, 프로바이더, 옵션): 링크 자체는 시험되지 않음"),
    "ib_pingpong_data_mismatch": kind(
        "unknown", "warning", "none", ("ib_check_hca_pcie",),
        "a pingpong link test received data that differs from what was sent: the two ends ran with different "
        "options, or the HCA or memory corrupts data",
        "pingpong 링크 시험이 보낸 것과 다른 데이터를 받음: 양쪽 옵션이 다르거나 HCA 또는 메모리가 데이터를 손상시킴"),
    "ib_pingpong_incomplete": kind(
        "unknown", "warning", "none", ("ib_check_pingpong_path",),
        "a pingpong link test printed no result and no error: it was still waiting (for its peer, or for a "
        "message lost on the path) or the capture ends early",
        "pingpong 링크 시험이 결과도 오류도 출력하지 않음: 상대나 경로에서 잃어버린 메시지를 기다리는 중이었거나 "
        "캡처가 일찍 끝남"),
}
