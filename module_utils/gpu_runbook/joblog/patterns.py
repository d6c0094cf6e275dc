# SPDX-License-Identifier: Apache-2.0
"""The line patterns of job logs: one table of regexes, grouped by the family of lines they
read, plus the few constants the handlers share. Nothing here runs; every handler imports
what it matches from here, so a new log format is one line to add."""

import re

from ..vocab.rdma import CODES as _RDMA_CODES

# ibv_wc_status (libibverbs verbs.h) -> (enum name, ibv_wc_status_str text): rdma-core's own table
# (vocab/rdma.py CODES, generated from its source), and success
IBV_WC_STATUS = dict([(0, ("IBV_WC_SUCCESS", "success"))] + [(c[0], (c[1], c[2])) for c in _RDMA_CODES])

MAX_LINE = 1 << 20          # longer physical lines are cut (a tqdm \r chain can be huge)
MAX_EVIDENCE = 2000
MAX_FINDINGS_PER_KIND = 16
CAP = 50000                  # most records of one sort kept per job (first ones win)

# ---------------------------------------------------------------- line prefixes and times

SRUN_LABEL = re.compile(r"^ {0,4}(\d{1,6}): ")
TORCHRUN_RANK = re.compile(r"^\[rank(\d{1,6})\]:\s?")
# torchrun --tee / --log-dir: '[${role_name}${local_rank}]:' (a LOCAL rank: [default0]:, [trainer3]:)
TORCHRUN_ROLE = re.compile(r"^\[([A-Za-z_][\w\-]*?)(\d{1,6})\]:\s?")
# TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE='[${rank}]:' (a global rank)
TORCHRUN_GLOBAL = re.compile(r"^\[(\d{1,6})\]:\s?")
# PyTorch's own '[rankN]:' after something a collector put first (a line number, '<host> [stderr] ',
# a viewer's time): only within the first 200 characters, and only as a bracketed word
TORCHRUN_RANK_LATE = re.compile(r"(?:^|[\s\]|:])\[rank(\d{1,6})\]:\s?")
# glog 'E1202 14:13:17.795997 41006 file.cpp:616]'; c10's own logger (PyTorch >= 2.3) writes
# nanoseconds and no thread id: 'E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607]'.
GLOG = re.compile(r"^\[?([EWIF])(\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.\d+)?\s+(?:\d+\s+)?[^\]\s]+:\d+\]\s?")
GLOG_OLD = re.compile(r"^\[([EWIF]) [\w.]+:\d+\]\s?")
ISO_TS = re.compile(r"(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})")

# ---------------------------------------------------------------- NCCL_DEBUG lines

# (newer releases' WARN names its function after the file and line -- ncclDebugLog's filefunc --:
# 'transport/nvls.cc:379 (nvlsAllocateMem) NCCL WARN')
NCCL_PREFIX = re.compile(
    r"(?:^|[\s\]:])(?P<host>[A-Za-z0-9][\w.\-]*):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] "
    r"(?:[\w./\-]+:\d+ (?:\(\w{1,80}\) )?)?NCCL (?P<lvl>INFO|WARN|ERROR|ABORT|TRACE)\b ?")
# NCCL's error trail (src/include/checks.h NCCLCHECK and its kin: INFO_LOC(NCCL_ALL, "-> %d", res),
# "-> %d (%s)" with strerror(errno)): each function a failure returns through prints its file:line and
# the ncclResult_t, innermost first
NCCL_TRACE = re.compile(r"^\s{0,4}(?P<file>[\w./+\-]{1,120}\.(?:cc|cu|cpp|c|h)):(?P<line>\d{1,6}) -> (?P<res>\d{1,2})"
                        r"(?: \((?P<why>[^)]{0,200})\))?(?: \[Async thread\])?\s*$")
NCCL_BARE = re.compile(r"\bNCCL (INFO|WARN|ERROR|ABORT)\b ?")

COMM = re.compile(r"\bcomm (0x[0-9a-fA-F]+) rank (\d+) n[Rr]anks (\d+)"
                   r"(?: nNodes (\d+) localRanks (\d+) localRank (\d+))?")
BUSID = re.compile(r"\bbusId (?:0x)?([0-9a-fA-F]{1,12})\b")
CUDADEV = re.compile(r"\bcudaDev (\d+)")
NET_IB_USING = re.compile(r"\bNET/IB\w*\s*: Using (.*)$")
# each pattern below that opens with a run of a class starts only where that run starts: a
# match inside a run implies one at its start, and scanning the run from every start is quadratic
NET_DEV = re.compile(r"(?<![\w.\-])([A-Za-z][\w.\-]*):(\d+)/(IB|RoCE)\b")
OOB = re.compile(r"\bOOB ([\w.\-]+):([0-9A-Fa-f.:]+?)<\d+>")
BOOTSTRAP = re.compile(r"\bBootstrap ?: Using (?:\[\d+\])?([\w.\-]+):([0-9A-Fa-f.:]+?)<\d+>")
# an address of the loopback interface: a socket there reaches no other node
LOOPBACK_IP = re.compile(r"^(?:127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1|::ffff:127\.\d{1,3}\.\d{1,3}\.\d{1,3})$")
# an IPv6 link-local address (fe80::/10): it routes only within one link, so it names no peer's host, and
# NCCL's sockets on an interface that has no other address reach no peer on another node (event_findings.py)
# link-local peers: IPv6 fe80::/10 (RFC 4291) and IPv4 169.254.0.0/16 (RFC 3927): they route within one link only
LINK_LOCAL_IP = re.compile(r"^(?:\[?fe[89ab][0-9a-f]:|169\.254\.\d{1,3}\.\d{1,3}$)", re.I)
# the address Docker gives its default bridge (docker0) on every host alike: a peer there is this host
DOCKER_BRIDGE_IP = re.compile(r"^172\.17\.0\.1$")


def unroutable(addr):
    """What ``addr`` is when no other node can be reached at it (a loopback, docker0's or a link-local
    address: the same on every host, or routed within one link), else None."""
    if LOOPBACK_IP.match(addr):
        return "a loopback address"
    if DOCKER_BRIDGE_IP.match(addr):
        return "Docker's default bridge (docker0)"
    if LINK_LOCAL_IP.match(addr):
        return "a link-local address"
    return None


NET_SOCKET_USING = re.compile(r"\bNET/Socket\s*: Using (.*)$")
SOCK_DEV = re.compile(r"\[\d+\]([\w.\-]+):([0-9A-Fa-f.:]+?)<\d+>")
# ... with its index ('via NET/Socket/1' names it) and an IPv6 scope ('fe80::1%veth25f2e72')
SOCK_DEV_AT = re.compile(r"\[(\d{1,2})\]([\w.\-]+):([0-9A-Fa-f.:]+?)(?:%[\w.\-]{1,32})?<\d+>")
VIA_SOCKET = re.compile(r"\bvia NET/Socket/(\d{1,2})\b")
USING_NETWORK = re.compile(r"\bUsing network (\S+)")
# which network plugin a process of NCCL runs (src/plugin/plugin_open.cc, net.cc): none found, so
# NCCL's internal IB/Socket one ('NET/Plugin: Could not find: libnccl-net.so. Using internal network
# plugin.', 2.18-: 'NET/Plugin : No plugin found (libnccl-net.so), using internal implementation'), or
# an external one ('Plugin Path : /opt/hpcx/.../libnccl-net.so', 'NET/Plugin: Loaded net plugin X (v8)')
NET_PLUGIN_INTERNAL = re.compile(r"NET/Plugin ?: (?:Could not find: [^\n]{0,300}?[Uu]sing internal net(?:work)? plugin|"
                                 r"No plugin found \([^)\n]{0,200}\),? using internal implementation)")
NET_PLUGIN_EXTERNAL = re.compile(r"\bPlugin Path : (\S{1,300}libnccl-net\S{0,100})|NET/Plugin ?: Loaded net(?:work)? plugin "
                                 r"([^\n(]{1,100}?) ?\(v\d{1,3}\)")
VIA = re.compile(r"\bvia (NET/\w+|P2P/\w+|P2P\b|SHM\b|COLLNET\w*)")
# the ring and tree lines (src/graph/connect.cc, transport.cc): 'Channel 00/04 :    0   1' lists a
# ring's ranks in order; 'Channel 00 : 0[18000] -> 1[af000] via P2P/direct pointer' joins two of them
RING_RANKS = re.compile(r"\bChannel \d{1,3}/\d{1,3} :((?: {1,8}\d{1,6}){1,512})\s*$")
VIA_PAIR = re.compile(r"\bChannel \d{1,3}(?:/\d{1,3})? : (\d{1,6})\[[0-9a-fA-F]{1,16}\] -> (\d{1,6})\[")
IB_DISABLE = re.compile(r"\bNCCL_IB_DISABLE set by environment to ([1-9])")
IB_UNOPENED = re.compile(r"\bNET/IB\w*\s*: Unable to open device ([\w.\-]{1,64})")
IB_NODEV = re.compile(r"\bNET/IB\w*\s*: No device found")
# the version NCCL says it is ('NCCL version 2.21.5+cuda12.4'), not one a message requires
# ('shrink requires NCCL version 2.27.0 or later')
NCCL_VERSION = re.compile(r"(?<!requires )\bNCCL version (\d+\.\d+\.\d+)(?! or later)")

IB_COMPLETION = re.compile(
    # older NCCL (2.4-2.8) says "Got completion with error 12, opcode 0, len 0, vendor err 129"
    r"\bNET/IB\w*(?:/\w+)?\s*:\s*Got completion (?:from peer (?P<peer>[^\s<]+)(?:<(?P<port>\d+)>)? )?"
    r"with (?:status=(?:(?P<stname>[^()=]*?)\()?(?P<st>\d+)\)?|error (?P<st2>\d+))")
IB_VENDOR = re.compile(r"vendor[ _]err[ =](\d+)")
IB_OPCODE = re.compile(r"opcode[= ](?:[A-Za-z_]*\()?(\d+)")
IB_DIR = re.compile(r"\((Send|Recv|Read|Write|Flush|[A-Za-z]+)\)")
IB_HCA = re.compile(r"\bhca (\S+)")
# a peer as NCCL prints it: an IPv4 address, an IPv6 one (with its scope, 'fe80::1%ib1', misc/socket.cc
# ncclSocketToString), or a name; then '<port>'
PEER_ADDR = re.compile(r"(?<![\w.:\-\[%])((?:\d{1,3}\.){3}\d{1,3}|\[?[0-9a-fA-F:]{3,}(?:%[\w.\-]{1,32})?\]?|"
                       r"[A-Za-z][\w.\-]*)<(\d+)>")
CONN_ERR = re.compile(r"(Connection refused|[Cc]onnection closed by remote peer|Connection reset by peer|"
                       r"No route to host|Connection timed out)")

# ---------------------------------------------------------------- PyTorch ProcessGroupNCCL

SEQ = re.compile(r"SeqNum=(\d+)")
OPTYPE = re.compile(r"OpType=(\w+)")
# c10d's OpType names as opTypeToString prints them (torch/csrc/distributed/c10d/ProcessGroup.cpp, 1.13-2.x): a
# name outside them is a line cut inside it ('OpType=ALLRE'), which says no operation
OP_TYPES = frozenset((
    "BROADCAST", "ALLREDUCE", "ALLREDUCE_COALESCED", "REDUCE", "ALLGATHER", "_ALLGATHER_BASE", "ALLGATHER_COALESCED",
    "GATHER", "SCATTER", "REDUCE_SCATTER", "ALLTOALL_BASE", "ALLTOALL", "SEND", "RECV", "RECVANYSOURCE", "BARRIER",
    "UNKNOWN", "_REDUCE_SCATTER_BASE", "COALESCED", "_ALLREDUCE_SPARSE", "REDUCE_SCATTER_TENSOR_COALESCED",
    "ALLGATHER_INTO_TENSOR_COALESCED"))
NUMEL_IN = re.compile(r"NumelIn=(-?\d+)")
TIMEOUT_MS = re.compile(r"Timeout\(ms\)=(\d+)")
RAN_FOR = re.compile(r"ran for (\d+) milliseconds")
MSG_RANK = re.compile(r"\[(?:PG [^\][]*?)?Rank (\d+)\]")
# a rank of the default process group (its rank is the global rank): '[Rank 3]', '[PG 0 Rank 3]',
# '[PG 0 (default_pg) Rank 3]', '[PG ID 0 PG GUID 0(default_pg) Rank 3]', '[PG ID 0 PG GUID 0 Rank 3]'
MSG_GLOBAL_RANK = re.compile(r"\[(?:PG (?:ID )?0 (?:PG GUID 0 ?)?(?:\(default_pg\) ?)?)?Rank (\d+)\]")
PG_ID = re.compile(r"\[PG (?:ID )?(\w+)")
LAST_WORK = re.compile(
    r"(?:detected by watchdog at work|Timeout at NCCL work|watchdog at work sequence id):? (\d+)"
    r".{0,200}?last enqueued (?:NCCL )?work: (-?\d+), last completed (?:NCCL )?work: (-?\d+)")
BLOCKING_TIMEOUT = re.compile(r"timed out in blocking wait|Timed out waiting \d+ms for \w+ operation")

DESYNC_MISSING = re.compile(r"ranks \[([\d,\s]*)\] are the lagging ranks")
DESYNC_JOINED = re.compile(r"\[([\d,\s]+)\] joined but didn't finish collective #(\d+)")
DESYNC_FINISHED = re.compile(r"\[([\d,\s]+)\] finished collective #(\d+), but didn't join collective #(\d+)")
DESYNC_TIMEOUT_AT = re.compile(r"\[(\d+)\] Timeout at collective: (\w+), #(\d+)")
# torch.distributed.monitored_barrier (c10d ProcessGroupGloo.cpp monitoredBarrier): rank 0 names the
# rank(s) that did not reach the barrier in time ("[Rank 0]: Rank 2 failed to pass monitoredBarrier in
# 30000 ms", with wait_all_ranks "Ranks 1, 2 failed ..."); the others say they reached it
BARRIER_FAILED = re.compile(r"\bRanks? (\d{1,7}(?:, ?\d{1,7}){0,4095}) failed to pass monitoredBarrier in (\d{1,12}) ms")
BARRIER_REACHED = re.compile(r"\bRank (\d{1,7}) successfully reached monitoredBarrier")

FR_NOT_ALL = re.compile(r"Not all ranks joining collective(?: (\d+)(?: at entry \d+)?|, sequence number: (\d+))?")
FR_MISSING = re.compile(r"[Mm]issing ranks(?: are|:)\s*\{([\d,\s]*)\}")
FR_COLLECTIVE = re.compile(r"^\s*collective: (?:\w+:)?(\w+)")
FR_JSON_SEQ = re.compile(r"[\"']collective_seq_id[\"']\s*:\s*[\"']?(-?\d+)")
FR_JSON_STATE = re.compile(r"[\"']state[\"']\s*:\s*[\"'](scheduled|started|completed)[\"']")
FR_JSON_NAME = re.compile(r"[\"']profiling_name[\"']\s*:\s*[\"'](?:\w+:)?(\w+)[\"']")
FR_JSON_P2P = re.compile(r"[\"']is_p2p[\"']\s*:\s*(true|True)")
FR_JSON_RANK = re.compile(r"^\s*[\"']rank[\"']\s*:\s*(\d+)")

# ---------------------------------------------------------------- progress

TQDM = re.compile(
    r"(?P<pct>\d{1,3})%\|[^|\r\n]{0,200}\|\s*"
    r"(?P<n>\d+(?:\.\d+)?)(?P<nu>[kMG]?)/(?P<tot>\d+(?:\.\d+)?)(?P<tu>[kMG]?)\s*"
    r"\[(?P<el>[\d:]+)<(?P<rem>[\d:?]+),\s*(?P<rate>\d+(?:\.\d+)?|\?)\s*(?P<unit>s/\w+|\w+/s)")
TQDM_LABEL = re.compile(r"([^|\r\n]{1,200}?):\s*$")
EPOCH_LABEL = re.compile(r"[Ee]poch\s*[:#=\[(]?\s*(\d+)(?:\s*(?:/|of)\s*(\d+))?")
# bars that are no training loop: evaluation, and the set-up's transfers and data preparation
# (huggingface_hub's 'Downloading ...' / 'Fetching N files', transformers' 'Loading checkpoint
# shards', datasets' 'Map', 'Filter', 'Generating train split', 'Saving the dataset' ...)
NON_TRAIN_LABEL = re.compile(r"valid|test|predict|sanity|eval|infer|\bdownload|\bupload|\bfetching\b|\bloading\b|"
                             r"\bshards?\b|^map\b|\bfilter\b|tokeniz|\bextracting\b|\bgenerating\b|\bsaving\b|"
                             r"\bresolving\b|\bchecksums?\b", re.I)
HF_EPOCH = re.compile(r"['\"]epoch['\"]\s*:\s*(\d+(?:\.\d+)?)")

# ---------------------------------------------------------------- application / host errors

# '[^()]': a pid list holds no parenthesis, and each start's scan ends at the next one (linear)
DL_KILLED = re.compile(r"DataLoader worker \(pid[^()]*\) is killed by signal: ?([^.\n]*)")
DL_EXITED = re.compile(r"DataLoader worker \(pid\(?s?\)?[^()]*\)+ exited unexpectedly")
DL_TIMEOUT = re.compile(r"DataLoader timed out after (\d+) seconds")
DL_BUS = re.compile(r"Unexpected bus error encountered in worker")
CUDA_DRIVER_OLD = re.compile(r"(CUDA driver version is insufficient for CUDA runtime version|"
                             r"forward compatibility was attempted on non supported HW|"
                             r"system has unsupported display driver / cuda driver combination|"
                             r"The NVIDIA driver on your system is too old)")
# TORCH_DISTRIBUTED_DEBUG=DETAIL (ProcessGroupWrapper): the ranks run different collectives
COLL_MISMATCH = re.compile(r"Detected mismatch between collectives on ranks\. Rank (\d+) is running "
                           r"(?:inconsistent )?collective: CollectiveFingerPrint\((?:SequenceNumber=(\d+))?")
COLL_MISMATCH_OTHER = re.compile(r"but Rank (\d+) is running collective: CollectiveFingerPrint\("
                                 r"(?:SequenceNumber=(\d+))?")
# torch's allocator says "CUDA out of memory. Tried to allocate ..."; a CUDA API call that
# fails for memory raises "CUDA error: out of memory" (cudaErrorMemoryAllocation)
CUDA_OOM = re.compile(r"CUDA out of memory\.?(?: Tried to allocate ([\d.]+ [KMGT]i?B))?|CUDA error: out of memory")
CUDA_ERR = re.compile(r"(uncorrectable ECC error encountered|an illegal memory access was encountered|"
                       r"unspecified launch failure|uncorrectable NVLink error|misaligned address|"
                       r"an illegal instruction was encountered|GPU has fallen off the bus|"
                       r"(?<=CUDA error: )unknown error|(?<=Cuda failure 999 ')unknown error|(?<=Cuda failure ')unknown error)")
# a kernel's failed assert() (the CUDA C++ Programming Guide, 'Assertion': the device prints
# '<file>:<line>: <function>: block: [x,y,z], thread: [x,y,z] Assertion `<condition>` failed.'),
# e.g. ATen's index checks ('Indexing.cu:1146: indexSelectLargeIndex: ... `srcIndex < srcSelectDimSize`')
DEVICE_ASSERT = re.compile(r":\d{1,6}: [^\s:]{1,200}: block: \[\d{1,6},\d{1,6},\d{1,6}\], thread: "
                           r"\[\d{1,6},\d{1,6},\d{1,6}\] Assertion `([^`]{1,300})` failed")
HOST_OOM = re.compile(r"(oom[-_]kill event|OOM Killed|Out of memory: Killed process|"
                       r"task \S+: Out Of Memory|Killed process \d+ \(\S+\)[^(]*oom|oom-kill:)", re.I)
SRUN_ERR = re.compile(r"srun: error: ([\w.\-]+): tasks? ([\d,\- ]+): (.*)$")
# srun (src/srun/launch.c, _task_finish): 'error: %s: %s %s: Exited with exit code %d'
SRUN_EXIT = re.compile(r"Exited with exit code (\d{1,3})")
LIGHTNING_RANK = re.compile(r"GLOBAL_RANK: (\d+), MEMBER: (\d+)/(\d+)")
WORLD = re.compile(r"\bworld[_ ]size\s*[=:]\s*(\d{1,6})\b", re.I)
STORE_BARRIER = re.compile(r"Rank (\d+): Completed store-based barrier for key:\S+ with (\d+) nodes")
ELASTIC_HOST = re.compile(r"^\s*host\s*: ([\w.\-]+)\s*$")
ELASTIC_RANK = re.compile(r"^\s*rank\s*: (\d+) \(local_rank: (\d+)\)")
CONSEQUENCE_EXC = ("ChildFailedError", "DistBackendError", "SignalException", "KeyboardInterrupt", "SystemExit")
TRACEBACK = "Traceback (most recent call last):"
EXC_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Warning|Failure))(?::\s?(.*))?$")
NCCL_ERROR_IN = re.compile(r"(unhandled system error|remote process exited or there was a network error|"
                            r"internal error - please report this issue to the NCCL developers|unhandled cuda error|"
                            r"ncclSystemError|ncclRemoteError|ncclInternalError|ncclUnhandledCudaError)")
NCCL_ERROR_NAME = {"ncclSystemError": "unhandled system error",
                    "ncclRemoteError": "remote process exited or there was a network error",
                    "ncclInternalError": "internal error - please report this issue to the NCCL developers",
                    "ncclUnhandledCudaError": "unhandled cuda error"}

# a rank in a file name: rank-3.log, train.rank_11.err, task7.out
FILE_RANK = re.compile(r"(?:^|[^a-z])(?:rank|task|proc)[-_.]?(\d{1,6})(?![\d])", re.I)
# the rank prefix of a line kept as evidence (stripped again to read its time)
RANK_PREFIX = re.compile(r"^\s*\[(?:rank|Rank )?\d+\]:\s*|^\s*\d+:\s+")
