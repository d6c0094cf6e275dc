# SPDX-License-Identifier: Apache-2.0
"""Finding kinds of the job domain: what a training job's own logs (PyTorch, NCCL_DEBUG,
tqdm, Slurm) say went wrong. See taxonomy/__init__.py for the row format.

The collective-timeout finding takes its remedy from its cause, so it is one kind per
remedy (``nccl_watchdog_timeout_*``): a kind's rung is fixed."""

from .table import kind

# Steps only the job domain uses. Facts kept straight: the collective timeout is
# ``init_process_group(timeout=)`` (there is no NCCL_TIMEOUT).
STEPS = {
    "job_check_ib_link": (None, "Check the IB port state and error counters (`ibstat`, `perfquery`) on both hosts "
                                "of the link.",
                          "링크 양쪽 호스트에서 IB 포트 상태와 오류 카운터(`ibstat`, `perfquery`)를 확인하십시오."),
    "job_exclude_peer": (None, "Resolve the peer address to its node and exclude that node from the next run "
                               "(`sbatch --exclude`).",
                         "피어 주소에 해당하는 노드를 찾아 다음 실행에서 제외하십시오 (`sbatch --exclude`)."),
    "job_check_socket_route": ("nccl_env", "Check that the interface NCCL's sockets use (its 'Bootstrap : Using' "
                                           "line) reaches every other node (`ip route get <peer>`, `ping -I <if> "
                                           "<peer>`) and that no firewall rejects the ports between the nodes; set "
                                           "`NCCL_SOCKET_IFNAME` to an interface every node can reach.",
                               "NCCL 소켓이 사용하는 인터페이스('Bootstrap : Using' 줄)가 다른 모든 노드에 도달하는지 "
                               "(`ip route get <peer>`, `ping -I <if> <peer>`), 노드 사이의 포트를 방화벽이 거부하지 "
                               "않는지 확인하고, 모든 노드가 도달할 수 있는 인터페이스로 `NCCL_SOCKET_IFNAME`을 "
                               "설정하십시오."),
    "job_read_peer_log": (None, "Read the log of the peer's rank (and its node's kernel log) for why its process "
                                "ended: a crash, an out-of-memory kill, a cancelled step or a failed GPU.",
                          "피어 랭크의 로그(와 그 노드의 커널 로그)에서 프로세스가 종료된 이유를 확인하십시오: 크래시, "
                          "메모리 부족 종료, 취소된 스텝 또는 GPU 장애."),
    "job_read_ecc": (None, "Read the GPU's Xid and ECC counters (`nvidia-smi -q -d ECC,ROW_REMAPPER`).",
                     "GPU의 Xid와 ECC 카운터를 확인하십시오 (`nvidia-smi -q -d ECC,ROW_REMAPPER`)."),
    "job_read_xid": (None, "Read the host's kernel log for Xid errors (GPU hangs) before returning it to service.",
                     "서비스에 복귀시키기 전에 호스트의 커널 로그에서 Xid 오류(GPU 멈춤)를 확인하십시오."),
    "job_locate_kernel": (None, "Rerun with `CUDA_LAUNCH_BLOCKING=1` to locate the failing kernel; check the host's "
                                "kernel log for Xids.",
                          "`CUDA_LAUNCH_BLOCKING=1`로 다시 실행해 실패한 커널을 찾고, 호스트 커널 로그에서 Xid를 "
                          "확인하십시오."),
    "job_fix_kernel": ("fix_application", "Fix that kernel or the code that calls it, unless an Xid shows a "
                                          "hardware fault.",
                       "Xid가 하드웨어 고장을 가리키지 않는 한 해당 커널이나 이를 호출하는 코드를 수정하십시오."),
    "job_fix_gpu_memory": ("fix_application", "Find what keeps growing in GPU memory (tensors kept across steps, "
                                              "caches) or reduce the batch size.",
                           "GPU 메모리에서 계속 커지는 것(스텝 간에 유지되는 텐서, 캐시)을 찾거나 배치 크기를 "
                           "줄이십시오."),
    "job_fix_host_memory": ("fix_application", "Reduce host memory use (DataLoader workers, pinned memory, "
                                               "prefetch) or find the leak.",
                            "호스트 메모리 사용량(DataLoader 워커, pinned memory, prefetch)을 줄이거나 누수를 "
                            "찾으십시오."),
    "job_fix_dataloader": ("fix_application", "Check host memory and `/dev/shm` on that node, the storage it reads "
                                              "from, and fix the dataset code (`num_workers`, `pin_memory`).",
                           "해당 노드의 호스트 메모리와 `/dev/shm`, 읽는 스토리지를 확인하고 데이터셋 코드"
                           "(`num_workers`, `pin_memory`)를 수정하십시오."),
    "job_check_end": (None, "Check whether the job still runs or how it ended (`sacct -j JOBID -o State,ExitCode`); "
                            "a hang stops the log with no error.",
                      "작업이 아직 실행 중인지, 어떻게 끝났는지 확인하십시오 (`sacct -j JOBID -o State,ExitCode`). "
                      "멈춘 작업은 오류 없이 로그가 끊깁니다."),
    "job_read_nccl_warn": (None, "Read the NCCL WARN lines around it (`NCCL_DEBUG=INFO`) for the peer or device at "
                                 "fault.",
                           "주변의 NCCL WARN 줄(`NCCL_DEBUG=INFO`)에서 문제의 피어나 장치를 확인하십시오."),
    "job_fix_traceback": ("fix_application", "Read the traceback; fix the application unless the exception is the "
                                             "consequence of a hardware error.",
                          "traceback을 읽고, 하드웨어 오류의 결과가 아니라면 애플리케이션을 수정하십시오."),
    "job_use_ib": ("nccl_env", "Unset `NCCL_IB_DISABLE`; check `NCCL_IB_HCA`/`NCCL_NET` and that the IB devices "
                               "are visible inside the job.",
                   "`NCCL_IB_DISABLE`을 해제하고 `NCCL_IB_HCA`/`NCCL_NET` 설정과 작업 안에서 IB 장치가 보이는지 "
                   "확인하십시오."),
    "job_exclude_roce": ("nccl_env", "Exclude the RoCE device(s) from `NCCL_IB_HCA` (or list the IB HCAs "
                                     "explicitly):",
                         "`NCCL_IB_HCA`에서 RoCE 장치를 제외하십시오 (또는 IB HCA를 명시적으로 나열):"),
    "job_profile_memory": ("fix_application", "Profile memory over steps (`torch.cuda.memory_allocated`, host RSS) "
                                              "and fix what grows.",
                           "스텝별 메모리(`torch.cuda.memory_allocated`, 호스트 RSS)를 프로파일링하고 커지는 것을 "
                           "수정하십시오."),
    "job_fix_first_traceback": ("fix_application", "Fix the application: read the first traceback and check that "
                                                   "every rank issues the same collectives.",
                                "애플리케이션을 수정하십시오: 첫 traceback을 읽고 모든 랭크가 같은 collective를 "
                                "호출하는지 확인하십시오."),
    "job_fix_collective_order": ("fix_application", "Fix the application: every rank must issue the same "
                                                    "collectives in the same order.",
                                 "애플리케이션을 수정하십시오: 모든 랭크가 같은 collective를 같은 순서로 호출해야 "
                                 "합니다."),
    "job_check_collective_order": (None, "Check that every rank issues the same collectives in the same order.",
                                   "모든 랭크가 같은 collective를 같은 순서로 호출하는지 확인하십시오."),
    "job_pyspy_every_rank": (None, "Dump every rank of the job (`py-spy dump --pid <pid>` on each node): the rank "
                                   "that is not in the collective the others wait in is the culprit; then read its "
                                   "node's Xid, ECC and InfiniBand evidence.",
                             "작업의 모든 랭크를 덤프하십시오 (각 노드에서 `py-spy dump --pid <pid>`): 다른 랭크들이 "
                             "기다리는 collective에 없는 랭크가 원인입니다. 그다음 그 노드의 Xid, ECC, InfiniBand "
                             "증거를 확인하십시오."),
    "job_enable_desync_debug": (None, "Rerun with `TORCH_NCCL_DESYNC_DEBUG=1` and the Flight Recorder "
                                      "(`TORCH_NCCL_TRACE_BUFFER_SIZE`, `TORCH_NCCL_DUMP_ON_TIMEOUT=1`) so the next "
                                      "timeout names the rank that did not join.",
                                "다음 타임아웃에서 참여하지 않은 랭크가 드러나도록 `TORCH_NCCL_DESYNC_DEBUG=1`과 "
                                "Flight Recorder(`TORCH_NCCL_TRACE_BUFFER_SIZE`, `TORCH_NCCL_DUMP_ON_TIMEOUT=1`)를 "
                                "켜고 다시 실행하십시오."),
    "job_fix_cause": ("fix_application", "Fix the error named as the cause (its own finding says how); the "
                                         "timeout is only its consequence.",
                      "원인으로 지목된 오류를 수정하십시오 (해당 finding에 방법이 있음); 타임아웃은 그 결과일 "
                      "뿐입니다."),
    "job_update_driver": (None, "Install an NVIDIA driver that supports the job's CUDA version (or run a CUDA "
                                "build that matches the installed driver); check `nvidia-smi` for the driver's "
                                "CUDA version.",
                          "작업의 CUDA 버전을 지원하는 NVIDIA 드라이버를 설치하거나 (또는 설치된 드라이버에 맞는 CUDA "
                          "빌드를 사용하십시오); `nvidia-smi`에서 드라이버의 CUDA 버전을 확인하십시오."),
    "job_node_checks": (None, "Run the node checks on the culprit's host before the job restarts.",
                        "작업을 재시작하기 전에 원인 랭크의 호스트를 점검하십시오."),
    # NCCL's own words (joblog/nccl_words.py)
    "job_fix_socket_ifname": ("nccl_env", "Set `NCCL_SOCKET_IFNAME` to an interface that exists and has an "
                                          "address on every node (`ip -br addr`), or unset it.",
                              "모든 노드에 존재하고 주소가 있는 인터페이스로 `NCCL_SOCKET_IFNAME`을 설정하거나 "
                              "(`ip -br addr`) 설정을 해제하십시오."),
    "job_same_net_plugin": ("nccl_env", "Give every node the same NCCL network plugin: the same image, the same "
                                        "`libnccl-net.so` on the library path (or `NCCL_NET_PLUGIN`) everywhere, "
                                        "or none anywhere; `NCCL_DEBUG=INFO` prints each host's 'NET/Plugin' line.",
                            "모든 노드에 같은 NCCL 네트워크 플러그인을 주십시오: 같은 이미지, 어디서나 같은 "
                            "`libnccl-net.so`(또는 `NCCL_NET_PLUGIN`), 아니면 어디에도 없게; `NCCL_DEBUG=INFO`가 "
                            "호스트마다 'NET/Plugin' 줄을 출력합니다."),
    "job_fix_device_binding": ("fix_application", "Give each rank its own GPU: `torch.cuda.set_device(local_rank)` "
                                                  "before the process group, and one rank per GPU in the launcher "
                                                  "(`CUDA_VISIBLE_DEVICES`, `--gpus-per-task`).",
                               "각 랭크에 자기 GPU를 주십시오: process group 전에 `torch.cuda.set_device(local_rank)`, "
                               "런처에서는 GPU당 랭크 하나(`CUDA_VISIBLE_DEVICES`, `--gpus-per-task`)."),
    "job_fix_nccl_usage": ("fix_application", "Rerun with `NCCL_DEBUG=WARN` to read NCCL's reason and fix the call "
                                              "(communicator, device or argument).",
                           "`NCCL_DEBUG=WARN`으로 다시 실행해 NCCL이 밝힌 이유를 읽고 호출(communicator, 장치, 인자)을 "
                           "수정하십시오."),
    "job_check_nccl_build": ("nccl_env", "Check the NCCL the job loads against the CUDA driver and runtime "
                             "(`NCCL_DEBUG=VERSION` prints NCCL's version, `nvidia-smi` the driver's): run a current "
                             "NCCL release, or the one the framework ships, and read NCCL's release notes for the "
                             "error.",
                             "작업이 불러오는 NCCL을 CUDA 드라이버·런타임과 함께 확인하십시오(`NCCL_DEBUG=VERSION`은 "
                             "NCCL 버전을, `nvidia-smi`는 드라이버 버전을 보여 줌): 최신 NCCL 릴리스나 프레임워크가 "
                             "함께 제공하는 NCCL로 실행하고, 그 오류에 대해 NCCL 릴리스 노트를 읽으십시오."),
    "job_disable_nvls": ("nccl_env", "Run the job with `NCCL_NVLS_ENABLE=0`, or give its container "
                                     "`/dev/nvidia-caps` (and check Fabric Manager offers multicast) to keep NVLS.",
                         "작업을 `NCCL_NVLS_ENABLE=0`으로 실행하거나, NVLS를 쓰려면 컨테이너에 `/dev/nvidia-caps`를 "
                         "주고 Fabric Manager가 멀티캐스트를 제공하는지 확인하십시오."),
    "job_grow_shm": ("nccl_env", "Give the container a larger `/dev/shm` (`--shm-size`, a memory-backed volume) and "
                                 "remove stale `/dev/shm/nccl-*` files; `NCCL_SHM_DISABLE=1` works around it.",
                     "컨테이너에 더 큰 `/dev/shm`(`--shm-size`, 메모리 기반 볼륨)을 주고 남은 `/dev/shm/nccl-*` "
                     "파일을 지우십시오; `NCCL_SHM_DISABLE=1`로 우회할 수 있습니다."),
    "job_check_qp_setup": ("nccl_env", "Check the RDMA set-up NCCL's queue pairs need, as NCCL's own hints say: on "
                                       "RoCE the GID index (`show_gids`: `NCCL_IB_GID_INDEX` unset or a RoCE v2 GID "
                                       "with an address, the same on every node), the devices a container was given "
                                       "and their netdevs, `NCCL_IB_HCA`; on several rails whether the NICs are "
                                       "cross-rail connected (`NCCL_CROSS_NIC=0`). `NCCL_IB_DISABLE=1` confirms it "
                                       "is the RDMA set-up.",
                           "NCCL의 힌트대로 큐 페어에 필요한 RDMA 설정을 확인하십시오: RoCE에서는 GID 인덱스(`show_gids`: "
                           "`NCCL_IB_GID_INDEX`를 비우거나 주소가 있는 RoCE v2 GID로, 모든 노드에서 같게), 컨테이너에 "
                           "준 장치와 그 netdev, `NCCL_IB_HCA`; 여러 rail이면 NIC가 rail 간에 연결되어 있는지"
                           "(`NCCL_CROSS_NIC=0`). `NCCL_IB_DISABLE=1`로 RDMA 설정 문제인지 확인할 수 있습니다."),
    "job_check_memlock_peermem": (None, "Check the locked-memory limit inside the job (`ulimit -l` must be "
                                        "unlimited, also under srun/mpirun) and that `nvidia_peermem` is loaded "
                                        "(`lsmod`).",
                                  "작업 안에서 locked-memory 한도(`ulimit -l`은 srun/mpirun 아래에서도 unlimited여야 "
                                  "함)와 `nvidia_peermem` 로드 여부(`lsmod`)를 확인하십시오."),
    "job_check_fabric_manager": (None, "Check that `nvidia-fabricmanager` is enabled and running and the fabric "
                                       "state is Completed (`nvidia-smi -q | grep -A2 Fabric`); after a Fabric "
                                       "Manager restart reset the GPUs or reboot; `NCCL_NVLS_ENABLE=0` works around "
                                       "NVLS.",
                                 "`nvidia-fabricmanager`가 활성화되어 실행 중이고 fabric 상태가 Completed인지 "
                                 "확인하십시오(`nvidia-smi -q | grep -A2 Fabric`); Fabric Manager를 재시작했다면 GPU를 "
                                 "리셋하거나 재부팅하십시오; `NCCL_NVLS_ENABLE=0`으로 NVLS를 우회할 수 있습니다."),
    "job_test_first_transfer": (None, "Rerun with `NCCL_DEBUG=INFO` to see the transport each channel uses; test it "
                                      "alone: `NCCL_P2P_DISABLE=1` (GPU peer-to-peer over PCIe: ACS/IOMMU settings, "
                                      "consumer and workstation GPUs), `NCCL_SHM_DISABLE=1`, or the network "
                                      "(`NCCL_SOCKET_IFNAME`, a firewall between the nodes); nccl-tests on the same "
                                      "GPUs shows which.",
                                "`NCCL_DEBUG=INFO`로 다시 실행해 각 채널의 전송 방식을 확인하고, 하나씩 따로 "
                                "시험하십시오: `NCCL_P2P_DISABLE=1` (PCIe GPU peer-to-peer: ACS/IOMMU 설정, 소비자용·"
                                "워크스테이션 GPU), `NCCL_SHM_DISABLE=1`, 또는 네트워크(`NCCL_SOCKET_IFNAME`, 노드 "
                                "사이 방화벽); 같은 GPU에서 nccl-tests를 실행하면 어느 쪽인지 보입니다."),
    # launchers, nccl-tests, NCCL RAS (joblog/launch_lines.py, joblog/nccl_tests.py)
    "job_isolate_nccl_tests": (None, "Rerun nccl-tests on each node alone, then on pairs of nodes, to find the GPU, "
                                     "NVLink or link that corrupts data; read that host's Xids and ECC counters.",
                               "nccl-tests를 노드별로, 그다음 노드 쌍별로 다시 실행해 데이터를 손상시키는 GPU, NVLink "
                               "또는 링크를 찾고, 해당 호스트의 Xid와 ECC 카운터를 확인하십시오."),
    "job_same_nccl_env": ("nccl_env", "Run the same NCCL version and the same `NCCL_*` settings on every node; if they "
                                      "match, check that every rank calls the same collectives with the same sizes.",
                          "모든 노드에서 같은 NCCL 버전과 같은 `NCCL_*` 설정을 사용하십시오; 같다면 모든 랭크가 같은 "
                          "collective를 같은 크기로 호출하는지 확인하십시오."),
    "job_check_launch": ("fix_application", "Check that every rank started: the launcher's log of each node, "
                                            "`MASTER_ADDR`/`MASTER_PORT` reachable from every node, the same world "
                                            "size everywhere; raise the init timeout if ranks start slowly.",
                         "모든 랭크가 시작되었는지 확인하십시오: 각 노드의 런처 로그, 모든 노드에서 "
                         "`MASTER_ADDR`/`MASTER_PORT`에 접근 가능한지, 모든 곳에서 같은 world size인지; 랭크가 늦게 "
                         "시작된다면 초기화 타임아웃을 늘리십시오."),
    "job_barrier_after_checkpoint": ("fix_application", "Make the other ranks wait for the checkpoint: a barrier "
                                                        "right after the save, a collective timeout longer than the "
                                                        "save, or an asynchronous/distributed checkpoint.",
                                     "다른 랭크들이 체크포인트 저장을 기다리게 하십시오: 저장 직후의 barrier, 저장 시간보다 "
                                     "긴 collective 타임아웃, 또는 비동기/분산 체크포인트."),
    "job_check_host_oom": (None, "Read the node's kernel log (`dmesg -T | grep -i -e oom -e killed`) and the "
                                 "scheduler's record (`sacct -j <jobid> -o State,MaxRSS`) to see who killed the process.",
                           "노드의 커널 로그(`dmesg -T | grep -i -e oom -e killed`)와 스케줄러 기록(`sacct -j <jobid> "
                           "-o State,MaxRSS`)에서 누가 프로세스를 종료시켰는지 확인하십시오."),
}

_IB_LINK = ("job_check_ib_link", "drain_node", "restart_openibd", "check_cable")
_GPU_FAULT = ("drain_node", "job_read_ecc", "reset_gpu", "rma_if_recurs")
_DATALOADER = ("job_fix_dataloader",)

KINDS = {
    # ---- network
    "ib_completion_error": kind(
        "ib_network", "critical", "ib_restart", _IB_LINK,
        "an InfiniBand work completion failed between two hosts of the job: the RDMA path is broken",
        "작업의 두 호스트 사이에서 InfiniBand work completion 오류 발생: RDMA 경로가 끊어짐"),
    # an Open MPI BTL's own error line (opal/mca/btl/base/btl_base_error.h; joblog/ompi_lines.py): what failed is
    # its words, which do not say whose fault it is
    "ompi_transport_error": kind(
        "unknown", "warning", "none", ("read_rank_log", "check_follow_up"),
        "Open MPI's {name} transport reported an error on rank {rank}",
        "랭크 {rank}에서 Open MPI의 {name} 전송 계층이 오류를 보고함"),
    "nccl_peer_connection_error": kind(
        "ib_network", "critical", "drain", ("job_exclude_peer", "drain_node"),
        "rank {rank}: NCCL's connection to a peer failed: that node's network is broken or its process is gone",
        "랭크 {rank}: 피어로의 NCCL 연결 실패: 해당 노드의 네트워크가 고장났거나 프로세스가 종료됨"),
    # bootstrap's connect refused by routing before the job began: the interface or a firewall, no link that failed
    "nccl_bootstrap_unreachable": kind(
        "nccl_config", "critical", "nccl_env", ("job_check_socket_route",),
        "rank {rank}: NCCL's bootstrap found no route to a peer before the job began: the socket interface or a "
        "firewall between the nodes",
        "랭크 {rank}: 작업 시작 전 NCCL 부트스트랩이 피어로 가는 경로를 찾지 못함: 소켓 인터페이스 또는 노드 사이의 방화벽"),
    # NCCL's 'Connection closed by remote peer' (misc/socket.cc): the peer ended the connection in order
    # -- its process exited or was killed -- with no network fault shown; why it ended is in its own log
    "nccl_peer_closed": kind(
        "unknown", "warning", "none", ("job_read_peer_log",),
        "rank {rank}: a peer closed its NCCL connection: its process ended; its own log says why",
        "랭크 {rank}: 피어가 NCCL 연결을 닫음: 피어 프로세스가 종료됨; 그 이유는 피어 자신의 로그에 있음",
        also=("ib_network",)),
    "nccl_error": kind(
        "unknown", "warning", "none", ("job_read_nccl_warn",),
        "rank {rank}: an NCCL call failed (system, remote or internal error)",
        "랭크 {rank}: NCCL 호출 실패 (시스템, 원격 또는 내부 오류)",
        also=("ib_network",)),
    "nccl_socket_fallback": kind(
        "nccl_config", "warning", "nccl_env", ("job_use_ib",),
        "NCCL fell back to sockets (TCP) instead of InfiniBand: collectives are slow and time out under load",
        "NCCL이 InfiniBand 대신 소켓(TCP)을 사용함: collective가 느리고 부하가 걸리면 타임아웃됨"),
    "nccl_ib_hca_mixed": kind(
        "nccl_config", "warning", "nccl_env", ("job_exclude_roce",),
        "NCCL's NET/IB list mixes InfiniBand HCAs with RoCE devices: traffic over them is slow or unroutable",
        "NCCL의 NET/IB 목록에 InfiniBand HCA와 RoCE 장치가 섞여 있음: 그 장치로 가는 트래픽이 느리거나 "
        "라우팅되지 않음"),
    # ---- NCCL's own words about the setup (joblog/nccl_words.py)
    "nccl_socket_interface": kind(
        "nccl_config", "critical", "nccl_env", ("job_fix_socket_ifname",),
        "rank {rank}: NCCL found no usable socket interface: NCCL_SOCKET_IFNAME matches no interface with an address",
        "랭크 {rank}: NCCL이 사용할 소켓 인터페이스를 찾지 못함: NCCL_SOCKET_IFNAME이 주소가 있는 어떤 인터페이스와도 "
        "맞지 않음"),
    "collective_timeout_too_short": kind(
        "nccl_config", "critical", "timeout", ("raise_timeout",),
        "rank {rank}: the collective timeout is set shorter than a collective can take: the watchdog aborts work "
        "that was not hung",
        "랭크 {rank}: collective 타임아웃이 collective가 걸릴 수 있는 시간보다 짧게 설정됨: 워치독이 멈추지 않은 "
        "작업을 중단시킴"),
    "nccl_net_plugin_mixed": kind(
        "nccl_config", "critical", "nccl_env", ("job_same_net_plugin",),
        "the job's hosts run different NCCL network plugins: their ranks cannot connect",
        "작업의 호스트들이 서로 다른 NCCL 네트워크 플러그인을 사용함: 랭크끼리 연결할 수 없음"),
    "nccl_duplicate_gpu": kind(
        "nccl_config", "critical", "fix_application", ("job_fix_device_binding",),
        "rank {rank}: two ranks of one communicator are on the same GPU (NCCL 'Duplicate GPU detected')",
        "랭크 {rank}: 한 communicator의 두 랭크가 같은 GPU에 있음 (NCCL 'Duplicate GPU detected')"),
    "nccl_invalid_usage": kind(
        "nccl_config", "critical", "fix_application", ("job_fix_nccl_usage",),
        "rank {rank}: NCCL rejected a call as invalid usage",
        "랭크 {rank}: NCCL이 호출을 잘못된 사용(invalid usage)으로 거부함"),
    "nccl_cuda_init_failed": kind(
        "driver", "critical", "drain", ("job_node_checks", "job_read_xid", "drain_node"),
        "rank {rank}: CUDA could not initialise its GPU when NCCL set it up: that GPU or its host's driver is not usable",
        "랭크 {rank}: NCCL 설정 중 CUDA가 GPU를 초기화하지 못함: 그 GPU 또는 호스트의 드라이버를 쓸 수 없음"),
    "nccl_cuda_call_rejected": kind(
        "nccl_config", "critical", "nccl_env", ("job_check_nccl_build",),
        "rank {rank}: CUDA rejected a call NCCL made (an argument or state error): the NCCL build, not the hardware",
        "랭크 {rank}: NCCL이 한 CUDA 호출을 CUDA가 거부함(인자 또는 상태 오류): 하드웨어가 아니라 NCCL 빌드 문제"),
    "nccl_nvls_unavailable": kind(
        "nccl_config", "critical", "nccl_env", ("job_disable_nvls",),
        "rank {rank}: NCCL could not set up NVLS (NVLink SHARP): multicast is not available in this environment",
        "랭크 {rank}: NCCL이 NVLS(NVLink SHARP)를 설정하지 못함: 이 환경에서는 멀티캐스트를 쓸 수 없음"),
    "nccl_shm_failed": kind(
        "nccl_config", "critical", "nccl_env", ("job_grow_shm",),
        "rank {rank}: NCCL could not create its shared-memory segment: /dev/shm is too small or missing",
        "랭크 {rank}: NCCL이 공유 메모리 세그먼트를 만들지 못함: /dev/shm이 너무 작거나 없음"),
    "nccl_ib_registration_failed": kind(
        "nccl_config", "critical", "drain", ("job_check_memlock_peermem", "drain_node"),
        "rank {rank}: InfiniBand memory registration failed: locked-memory limit or GPUDirect peer-memory module",
        "랭크 {rank}: InfiniBand 메모리 등록 실패: locked-memory 한도 또는 GPUDirect peer-memory 모듈 문제"),
    "nccl_ib_qp_setup_failed": kind(
        "nccl_config", "critical", "nccl_env", ("job_check_qp_setup",),
        "rank {rank}: NCCL could not bring a queue pair to its peer up (ibv_modify_qp) before the run trained: the "
        "RDMA set-up (RoCE GID index, the devices given), not a failing link",
        "랭크 {rank}: 학습 전에 NCCL이 상대와의 큐 페어를 올리지 못함(ibv_modify_qp): 고장 난 링크가 아니라 RDMA "
        "설정 문제(RoCE GID 인덱스, 주어진 장치)"),
    "nccl_fabric_manager": kind(
        "driver", "critical", "drain", ("job_check_fabric_manager", "drain_node"),
        "rank {rank}: NVLink SHARP / CUDA failed because the NVLink fabric (Fabric Manager) is not ready on its host",
        "랭크 {rank}: 호스트의 NVLink fabric(Fabric Manager)이 준비되지 않아 NVLink SHARP / CUDA가 실패함"),
    "nccl_ib_async_event": kind(
        "ib_network", "critical", "ib_restart", _IB_LINK,
        "NCCL got an InfiniBand async event on the host's own HCA (port error, catastrophic error): its link is failing",
        "호스트 자신의 HCA에서 NCCL이 InfiniBand 비동기 이벤트(port error, catastrophic error)를 받음: 링크가 고장나는 중"),
    "nccl_mismatched_collective": kind(
        "application", "critical", "fix_application", ("job_fix_collective_order",),
        "NCCL detected mismatched collectives at and around rank {rank}: the ranks call different collectives",
        "NCCL이 랭크 {rank} 부근에서 서로 맞지 않는 collective를 감지함: 랭크들이 서로 다른 collective를 호출함"),
    "nccl_net_size_mismatch": kind(
        "nccl_config", "critical", "nccl_env", ("job_same_nccl_env",),
        "NET/IB collective mismatch: the two ends disagree on the transfer size (NCCL versions/settings differ "
        "across nodes, or the ranks call different collectives)",
        "NCCL 'NET/IB collective mismatch': 양 끝이 전송 크기에 합의하지 못함 (노드 간 NCCL 버전/설정이 다르거나 랭크들이 "
        "서로 다른 collective를 호출함)"),
    # ---- launchers, nccl-tests, NCCL RAS
    "launch_rendezvous_timeout": kind(
        "application", "critical", "fix_application", ("job_check_launch",),
        "the ranks never all met at start-up (store barrier / rendezvous timeout): a launch problem, not a GPU fault",
        "시작 시점에 모든 랭크가 모이지 못함 (store barrier / rendezvous 타임아웃): GPU 고장이 아니라 실행(launch) 문제"),
    "checkpoint_save_stall": kind(
        "application", "critical", "fix_application", ("job_barrier_after_checkpoint",),
        "a rank was writing a checkpoint while the others waited in a collective until it timed out",
        "한 랭크가 체크포인트를 저장하는 동안 다른 랭크들이 collective에서 기다리다 타임아웃됨"),
    "worker_sigkill": kind(
        "unknown", "warning", "none", ("job_check_host_oom",),
        "a training process was killed by SIGKILL (exit code -9): host OOM killer, scheduler memory limit or an "
        "operator",
        "학습 프로세스가 SIGKILL(종료 코드 -9)로 종료됨: 호스트 OOM killer, 스케줄러 메모리 한도 또는 운영자"),
    "cuda_unknown_error": kind(
        "unknown", "warning", "none", ("job_read_xid",),
        "rank {rank} hit CUDA 'unknown error' (999): not a hardware verdict by itself; the host's Xids decide",
        "랭크 {rank}에서 CUDA 'unknown error'(999) 발생: 그 자체로는 하드웨어 판정이 아님; 호스트의 Xid로 판단"),
    "nccl_tests_wrong_results": kind(
        "gpu_hardware", "critical", "drain", ("drain_node", "job_isolate_nccl_tests", "job_read_ecc"),
        "nccl-tests found wrong data (#wrong / out-of-bounds values): data corrupted on a GPU, NVLink or the network",
        "nccl-tests가 잘못된 데이터를 발견함 (#wrong / out-of-bounds 값): GPU, NVLink 또는 네트워크에서 데이터가 손상됨"),
    "nccl_tests_incomplete": kind(
        "unknown", "warning", "none", ("job_read_nccl_warn",),
        "nccl-tests never printed its end summary: the run hung, was killed or the log is cut off",
        "nccl-tests가 마지막 요약을 출력하지 않음: 실행이 멈췄거나 종료되었거나 로그가 잘림"),
    "nccl_ras_unresponsive": kind(
        "nccl_deadlock", "critical", "drain", ("drain_node", "job_node_checks"),
        "NCCL RAS reports dead or unresponsive job processes (rank {rank}): crashed, hung or their node went away",
        "NCCL RAS가 죽었거나 응답하지 않는 작업 프로세스를 보고함 (랭크 {rank}): 충돌, 멈춤 또는 노드 이탈"),
    # py-spy found the dumped processes inside a collective (or the stream sync behind one) and none elsewhere:
    # the job hangs in NCCL; the rank that did not arrive is among those not dumped
    "pyspy_collective_wait": kind(
        "nccl_deadlock", "warning", "none", ("job_pyspy_every_rank", "job_enable_desync_debug"),
        "py-spy: the dumped processes wait in a collective and none is elsewhere: the job hangs in NCCL; the rank "
        "that did not arrive is not among them",
        "py-spy: 덤프한 프로세스들이 collective에서 기다리고 다른 곳에 있는 프로세스가 없음: 작업이 NCCL에서 멈춤; "
        "도착하지 않은 랭크는 이들 중에 없음"),
    "nccl_ras_mismatch": kind(
        "nccl_deadlock", "warning", "none", ("job_check_collective_order", "job_enable_desync_debug"),
        "NCCL RAS: the ranks launched different numbers of collectives",
        "NCCL RAS: 랭크들이 서로 다른 수의 collective를 실행함"),
    # ---- GPU and CUDA
    "cuda_hardware_error": kind(
        "gpu_hardware", "critical", "gpu_reset", _GPU_FAULT,
        "rank {rank} hit a CUDA error that means a GPU hardware fault (ECC, NVLink, fallen off the bus)",
        "랭크 {rank}에서 GPU 하드웨어 고장을 뜻하는 CUDA 오류 발생 (ECC, NVLink, 버스 이탈)"),
    "cuda_launch_failure": kind(
        "gpu_hardware", "critical", "drain", ("drain_node", "job_read_xid"),
        "rank {rank} hit 'unspecified launch failure' after a long healthy run: likely a GPU fault",
        "랭크 {rank}: 오랜 정상 실행 뒤 'unspecified launch failure' 발생: GPU 고장일 가능성이 높음"),
    "cuda_error": kind(
        "application", "critical", "fix_application", ("job_locate_kernel", "job_fix_kernel"),
        "rank {rank} hit a CUDA error that is usually an application bug",
        "랭크 {rank}에서 대개 애플리케이션 버그인 CUDA 오류 발생"),
    "cuda_driver_too_old": kind(
        "driver", "critical", "drain", ("drain_node", "check_driver", "job_update_driver"),
        "the NVIDIA driver is too old for the job's CUDA runtime (or CUDA forward compatibility is not "
        "supported on this GPU): update the driver or use a matching CUDA build, not a GPU to replace",
        "NVIDIA 드라이버가 작업의 CUDA 런타임보다 오래됨 (또는 이 GPU에서 CUDA forward compatibility를 "
        "지원하지 않음): GPU 교체가 아니라 드라이버를 업데이트하거나 맞는 CUDA 빌드를 사용해야 함"),
    "nccl_watchdog_stuck": kind(
        "driver", "critical", "drain", ("drain_node", "job_read_xid"),
        "the NCCL watchdog of rank {rank} got stuck: a CUDA/NCCL call hung inside the driver",
        "랭크 {rank}의 NCCL watchdog이 멈춤: CUDA/NCCL 호출이 드라이버 안에서 멈춤"),
    "nccl_error_trace": kind(
        "unknown", "critical", "none", ("read_rank_log", "check_nccl_config"),
        "NCCL failed inside (its error trail names where), with no message saying why",
        "NCCL 내부에서 실패함 (오류 경로가 위치를 밝힘), 이유를 밝힌 메시지 없음"),
    "nccl_abort_hang": kind(
        "unknown", "warning", "none", ("read_rank_log", "check_follow_up"),
        "rank {rank}'s process group abort hung (ncclCommAbort did not return): a teardown hang, after an "
        "error or at the run's end",
        "랭크 {rank}의 프로세스 그룹 abort가 멈춤 (ncclCommAbort가 반환되지 않음): 오류 뒤나 실행 끝의 정리 단계 멈춤"),
    # ---- memory, data, application
    "cuda_oom": kind(
        "application", "critical", "fix_application", ("job_fix_gpu_memory",),
        "rank {rank} ran out of GPU memory",
        "랭크 {rank}의 GPU 메모리 부족(OOM)",
        also=("memory_leak",)),
    "host_oom": kind(
        "application", "critical", "fix_application", ("job_fix_host_memory",),
        "the kernel/Slurm OOM killer killed a training process (rank {rank})",
        "커널/Slurm OOM killer가 학습 프로세스를 종료시킴 (랭크 {rank})",
        also=("memory_leak",)),
    "dataloader_worker_killed": kind(
        "dataloader", "critical", "fix_application", _DATALOADER,
        "a DataLoader worker of rank {rank} was killed by a signal: the rank stopped feeding its collectives",
        "랭크 {rank}의 DataLoader 워커가 시그널로 종료됨: 해당 랭크가 collective를 진행하지 못함"),
    "dataloader_worker_exited": kind(
        "dataloader", "critical", "fix_application", _DATALOADER,
        "a DataLoader worker of rank {rank} exited unexpectedly: the rank stopped feeding its collectives",
        "랭크 {rank}의 DataLoader 워커가 예기치 않게 종료됨: 해당 랭크가 collective를 진행하지 못함"),
    "dataloader_timeout": kind(
        "dataloader", "critical", "fix_application", _DATALOADER,
        "the DataLoader of rank {rank} timed out waiting for a batch",
        "랭크 {rank}의 DataLoader가 배치를 기다리다 타임아웃됨"),
    "dataloader_shm_bus_error": kind(
        "dataloader", "critical", "fix_application", _DATALOADER,
        "a DataLoader worker of rank {rank} hit a bus error (shared memory /dev/shm too small)",
        "랭크 {rank}의 DataLoader 워커에서 bus error 발생 (공유 메모리 /dev/shm 부족)"),
    "collective_mismatch": kind(
        "application", "critical", "fix_application", ("job_fix_collective_order",),
        "the ranks run different collectives (operation, shape or sequence number differ): an application bug",
        "랭크들이 서로 다른 collective를 실행함 (연산, shape 또는 sequence number가 다름): 애플리케이션 버그"),
    "nccl_init_incomplete": kind(
        "unknown", "warning", "none", ("job_check_end", "job_read_nccl_warn"),
        "NCCL began to initialise a communicator (Init START) and the log never shows it complete: the log stops "
        "during NCCL's set-up (a hang in its bootstrap or connections, or a log cut there)",
        "NCCL이 통신자 초기화를 시작했으나(Init START) 완료(Init COMPLETE)가 로그에 없음: NCCL 설정 중에 로그가 "
        "끝남 (부트스트랩·연결 단계의 멈춤 또는 그곳에서 잘린 로그)"),
    "job_end_unknown": kind(
        "unknown", "warning", "none", ("job_check_end",),
        "the training log stops without saying the run ended, and without an error",
        "학습 로그가 실행 종료도 오류도 밝히지 않은 채 끝남"),
    "python_exception": kind(
        "application", "warning", "fix_application", ("job_fix_traceback",),
        "rank {rank} raised a Python exception",
        "랭크 {rank}에서 Python 예외 발생"),
    "memory_growing": kind(
        "memory_leak", "warning", "fix_application", ("job_profile_memory",),
        "the memory the run reports keeps growing, reading after reading: a leak, which ends in an OOM kill",
        "실행이 보고하는 메모리가 측정할 때마다 계속 커짐: 누수이며, OOM으로 강제 종료되기에 이름"),
    "iteration_rate_falling": kind(
        "memory_leak", "warning", "fix_application", ("job_profile_memory",),
        "training slows down epoch after epoch: typical of a leak (memory, caches, growing graphs)",
        "에폭이 지날수록 학습이 느려짐: 누수(메모리, 캐시, 커지는 그래프)의 전형적인 증상"),
    "early_phase_failure": kind(
        "application", "critical", "fix_application", ("job_fix_first_traceback",),
        "the job failed early: a setup/application problem, not a node that wore out",
        "작업이 초반에 실패함: 노드 노후가 아니라 설정/애플리케이션 문제"),
    # ---- the collective timeout, one kind per remedy its cause calls for
    "nccl_watchdog_timeout": kind(
        "nccl_deadlock", "critical", "drain", ("drain_node", "job_node_checks"),
        "collective timeout: the ranks waited for culprit rank {rank} (GPU {gpu}); drain its host",
        "collective 타임아웃: 다른 랭크들이 원인 랭크 {rank} (GPU {gpu})를 기다림; 해당 호스트를 drain",
        also=("ib_network", "gpu_hardware", "driver")),
    "nccl_watchdog_timeout_ib": kind(
        "ib_network", "critical", "ib_restart", _IB_LINK,
        "collective timeout caused by an InfiniBand error (rank {rank})",
        "InfiniBand 오류로 인한 collective 타임아웃 (랭크 {rank})"),
    "nccl_watchdog_timeout_gpu": kind(
        "gpu_hardware", "critical", "gpu_reset", _GPU_FAULT,
        "collective timeout caused by a GPU hardware fault (rank {rank}, GPU {gpu})",
        "GPU 하드웨어 고장으로 인한 collective 타임아웃 (랭크 {rank}, GPU {gpu})"),
    "nccl_watchdog_timeout_config": kind(
        "nccl_config", "critical", "nccl_env", ("job_use_ib",),
        "collective timeout caused by the job's NCCL configuration (sockets instead of InfiniBand)",
        "작업의 NCCL 설정(InfiniBand 대신 소켓)으로 인한 collective 타임아웃"),
    "nccl_watchdog_timeout_app": kind(
        "application", "critical", "fix_application", ("job_fix_cause",),
        "collective timeout caused by an error of rank {rank} in the application, its data or its memory",
        "랭크 {rank}의 애플리케이션/데이터/메모리 오류로 인한 collective 타임아웃",
        also=("dataloader", "memory_leak")),
    "nccl_watchdog_timeout_early": kind(
        "application", "critical", "fix_application", ("job_fix_collective_order",),
        "collective timeout early in the run with no error before it: the ranks issue mismatched collectives",
        "실행 초반에 앞선 오류 없이 collective 타임아웃: 랭크들이 서로 다른 collective를 호출함"),
    "nccl_watchdog_timeout_first": kind(
        "unknown", "critical", "none", ("job_test_first_transfer",),
        "the first collective never completed on any rank: no data ever moved between the GPUs -- the transport "
        "(GPU peer-to-peer, shared memory, the network) rather than a rank that fell behind",
        "첫 collective가 어느 랭크에서도 끝나지 않음: GPU 사이에 데이터가 한 번도 오가지 못함 -- 뒤처진 랭크가 "
        "아니라 전송 경로(GPU peer-to-peer, 공유 메모리, 네트워크) 문제"),
    "nccl_watchdog_timeout_stalled": kind(
        "unknown", "critical", "none", ("job_test_first_transfer",),
        "every rank joined the collective and none finished it: the collective itself stalled -- its transport "
        "(GPU peer-to-peer, shared memory, the network) rather than a rank that fell behind or mismatched calls",
        "모든 랭크가 collective에 들어갔으나 아무도 끝내지 못함: collective 자체가 멈춤 -- 뒤처진 랭크나 어긋난 호출이 "
        "아니라 전송 경로(GPU peer-to-peer, 공유 메모리, 네트워크) 문제"),
    "nccl_watchdog_timeout_unexplained": kind(
        "nccl_deadlock", "critical", "none", ("job_check_collective_order", "job_enable_desync_debug"),
        "collective timeout whose culprit rank could not be identified",
        "원인 랭크를 특정하지 못한 collective 타임아웃"),
}


# the job's CUDA errors (not its out-of-memory or a too-old driver): what a GPU or driver fault on the
# host explains (cluster._one_host_gpu_fault) and what the job log says beside it (confidence)
CUDA_ERROR_KINDS = ("cuda_error", "cuda_unknown_error", "cuda_launch_failure", "cuda_hardware_error")
