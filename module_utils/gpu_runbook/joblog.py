"""Training-job logs: find the rank, host and GPU behind an NCCL collective timeout.

``parse_job_logs(files, since=None) -> (job, findings)``

``files`` maps a file name to its text: one combined ``slurm-<id>.out`` with every rank
interleaved, or per-rank files (``rank-3.log``, ``train.rank_11.err`` ...).  A line's rank
comes from its prefix when it has one (torchrun ``[rank3]:``, ``srun --label`` ``3: ``,
Lightning ``GLOBAL_RANK: 3``), else from the file name (``rank-3``, ``rank_3``, ``task3``).

Recognised (formats of PyTorch 1.x .. 2.x and NCCL 2.7 .. 2.2x):

* PyTorch watchdog timeouts ``[Rank 3] Watchdog caught collective operation timeout:
  WorkNCCL(SeqNum=.., OpType=.., NumelIn=.., ..., Timeout(ms)=..) ran for .. milliseconds``,
  with or without the glog prefix; ``last enqueued/completed NCCL work`` lines;
  ``Some NCCL operations have failed or timed out``; ``watchdog got stuck``.
* TORCH_NCCL_DESYNC_DEBUG reports (``ranks [11] are the lagging ranks ...``,
  ``[11] joined but didn't finish collective #N``, ``[..] finished collective #N, but
  didn't join collective #N+1``).
* Flight Recorder: ``fr_trace`` text (``Not all ranks joining collective``, ``missing
  ranks: {11}``) and raw JSON dumps (``collective_seq_id`` / ``state`` per entry).
* NCCL_DEBUG lines ``host:pid:tid [dev] NCCL INFO|WARN``: communicator rank/nranks/busId/
  localRank, ``NET/IB : Using ...``, ``Using network ...``, ``NCCL_IB_DISABLE``, IB
  completion errors (every format from ``with error 12, opcode 0, len`` to
  ``with status=transport retry counter exceeded(12) ... hca mlx5_3``), refused or closed
  connections, ``unhandled system error`` / ``remote process exited``.
* tqdm progress (also ``\\r``-chained updates in one physical line) and HF ``'epoch': x``.
* DataLoader worker deaths/timeouts, CUDA and host OOM, CUDA errors (ECC, illegal address,
  launch failure), Python tracebacks, ``srun: error: host: task N: ...``.

``since`` (ISO string, datetime or epoch seconds; e.g. the Slurm StartTime) drops lines whose
own timestamp (ISO ``2026-12-02 14:03:11`` or glog ``E1202 14:03:11``, year taken from
``since``) is earlier; lines without a timestamp are always kept.  Times are compared as
wall-clock values (Slurm and glog both print local time).

Culprit evidence, strongest first: Flight Recorder (missing / never-entered ranks), the
desync report, the ranks that did not time out on the collective everybody else waits in
(needs the world size from NCCL ``nranks`` or the ranks seen in the logs), the lowest
``last completed NCCL work``, then the rank that logged a CUDA / IB / OOM / DataLoader error
first.  An IB peer named by several reporters is the suspect host.

Pure function of text: no I/O, stdlib only, never raises on garbage.
"""

import re
from collections import Counter, OrderedDict
from datetime import datetime, timedelta, timezone

from .findings import gpu_ref, ib_ref, make_finding, strip_ansi

# ---------------------------------------------------------------------------- constants

# ibv_wc_status (libibverbs verbs.h) -> (enum name, ibv_wc_status_str text)
IBV_WC_STATUS = {
    0: ("IBV_WC_SUCCESS", "success"),
    1: ("IBV_WC_LOC_LEN_ERR", "local length error"),
    2: ("IBV_WC_LOC_QP_OP_ERR", "local QP operation error"),
    3: ("IBV_WC_LOC_EEC_OP_ERR", "local EE context operation error"),
    4: ("IBV_WC_LOC_PROT_ERR", "local protection error"),
    5: ("IBV_WC_WR_FLUSH_ERR", "Work Request Flushed Error"),
    6: ("IBV_WC_MW_BIND_ERR", "memory management operation error"),
    7: ("IBV_WC_BAD_RESP_ERR", "bad response error"),
    8: ("IBV_WC_LOC_ACCESS_ERR", "local access error"),
    9: ("IBV_WC_REM_INV_REQ_ERR", "remote invalid request error"),
    10: ("IBV_WC_REM_ACCESS_ERR", "remote access error"),
    11: ("IBV_WC_REM_OP_ERR", "remote operation error"),
    12: ("IBV_WC_RETRY_EXC_ERR", "transport retry counter exceeded"),
    13: ("IBV_WC_RNR_RETRY_EXC_ERR", "RNR retry counter exceeded"),
    14: ("IBV_WC_LOC_RDD_VIOL_ERR", "local RDD violation error"),
    15: ("IBV_WC_REM_INV_RD_REQ_ERR", "remote invalid RD request"),
    16: ("IBV_WC_REM_ABORT_ERR", "aborted error"),
    17: ("IBV_WC_INV_EECN_ERR", "invalid EE context number"),
    18: ("IBV_WC_INV_EEC_STATE_ERR", "invalid EE context state"),
    19: ("IBV_WC_FATAL_ERR", "fatal error"),
    20: ("IBV_WC_RESP_TIMEOUT_ERR", "response timeout error"),
    21: ("IBV_WC_GENERAL_ERR", "general error"),
    22: ("IBV_WC_TM_ERR", "TM error"),
    23: ("IBV_WC_TM_RNDV_INCOMPLETE", "TM software rendezvous"),
}

_MAX_LINE = 1 << 20          # longer physical lines are cut (a tqdm \r chain can be huge)
_MAX_EVIDENCE = 2000
_MAX_FINDINGS_PER_KIND = 16

# ---------------------------------------------------------------------------- regexes

_SRUN_LABEL = re.compile(r"^ {0,4}(\d{1,6}): ")
_TORCHRUN_RANK = re.compile(r"^\[rank(\d{1,6})\]:\s?")
_TORCHRUN_ROLE = re.compile(r"^\[[A-Za-z_]+\d{1,6}\]:\s?")
_GLOG = re.compile(r"^\[?([EWIF])(\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.\d+)?\s+\d+\s+[^\]\s]+:\d+\]\s?")
_GLOG_OLD = re.compile(r"^\[([EWIF]) [\w.]+:\d+\]\s?")
_ISO_TS = re.compile(r"(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})")

_NCCL_PREFIX = re.compile(
    r"(?:^|[\s\]:])(?P<host>[A-Za-z0-9][\w.\-]*):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] "
    r"(?:[\w./\-]+:\d+ )?NCCL (?P<lvl>INFO|WARN|ERROR|ABORT|TRACE)\b ?")
_NCCL_BARE = re.compile(r"\bNCCL (INFO|WARN|ERROR|ABORT)\b ?")

_COMM = re.compile(r"\bcomm (0x[0-9a-fA-F]+) rank (\d+) n[Rr]anks (\d+)"
                   r"(?: nNodes (\d+) localRanks (\d+) localRank (\d+))?")
_BUSID = re.compile(r"\bbusId (?:0x)?([0-9a-fA-F]{1,12})\b")
_CUDADEV = re.compile(r"\bcudaDev (\d+)")
_NET_IB_USING = re.compile(r"\bNET/IB\w*\s*: Using (.*)$")
_NET_DEV = re.compile(r"([A-Za-z][\w.\-]*):(\d+)/(IB|RoCE)\b")
_OOB = re.compile(r"\bOOB ([\w.\-]+):([0-9A-Fa-f.:]+?)<\d+>")
_BOOTSTRAP = re.compile(r"\bBootstrap ?: Using ([\w.\-]+):([0-9A-Fa-f.:]+?)<\d+>")
_NET_SOCKET_USING = re.compile(r"\bNET/Socket\s*: Using (.*)$")
_SOCK_DEV = re.compile(r"\[\d+\]([\w.\-]+):([0-9A-Fa-f.:]+?)<\d+>")
_USING_NETWORK = re.compile(r"\bUsing network (\S+)")
_VIA = re.compile(r"\bvia (NET/\w+|P2P/\w+|P2P\b|SHM\b|COLLNET\w*)")
_IB_DISABLE = re.compile(r"\bNCCL_IB_DISABLE set by environment to ([1-9])")
_IB_NODEV = re.compile(r"\bNET/IB\w*\s*: No device found")
_NCCL_VERSION = re.compile(r"\bNCCL version (\d+\.\d+\.\d+)")

_IB_COMPLETION = re.compile(
    r"\bNET/IB\w*(?:/\w+)?\s*:\s*Got completion from peer (?P<peer>[^\s<]+)(?:<(?P<port>\d+)>)?"
    r" with (?:status=(?:(?P<stname>[^()]*?)\()?(?P<st>\d+)\)?|error (?P<st2>\d+))")
_IB_VENDOR = re.compile(r"vendor[ _]err[ =](\d+)")
_IB_OPCODE = re.compile(r"opcode[= ](?:[A-Za-z_]*\()?(\d+)")
_IB_DIR = re.compile(r"\((Send|Recv|Read|Write|Flush|[A-Za-z]+)\)")
_IB_HCA = re.compile(r"\bhca (\S+)")
_PEER_ADDR = re.compile(r"((?:\d{1,3}\.){3}\d{1,3}|\[?[0-9a-fA-F:]{3,}\]?|[A-Za-z][\w.\-]*)<(\d+)>")
_CONN_ERR = re.compile(r"(Connection refused|[Cc]onnection closed by remote peer|Connection reset by peer|"
                       r"No route to host|Connection timed out)")

_SEQ = re.compile(r"SeqNum=(\d+)")
_OPTYPE = re.compile(r"OpType=(\w+)")
_NUMEL_IN = re.compile(r"NumelIn=(-?\d+)")
_TIMEOUT_MS = re.compile(r"Timeout\(ms\)=(\d+)")
_RAN_FOR = re.compile(r"ran for (\d+) milliseconds")
_MSG_RANK = re.compile(r"\[(?:PG [^\]]*?)?Rank (\d+)\]")
_PG_ID = re.compile(r"\[PG (?:ID )?(\w+)")
_LAST_WORK = re.compile(
    r"(?:detected by watchdog at work|Timeout at NCCL work|watchdog at work sequence id):? (\d+)"
    r".*?last enqueued (?:NCCL )?work: (-?\d+), last completed (?:NCCL )?work: (-?\d+)")
_BLOCKING_TIMEOUT = re.compile(r"timed out in blocking wait|Timed out waiting \d+ms for \w+ operation")

_DESYNC_MISSING = re.compile(r"ranks \[([\d,\s]*)\] are the lagging ranks")
_DESYNC_JOINED = re.compile(r"\[([\d,\s]+)\] joined but didn't finish collective #(\d+)")
_DESYNC_FINISHED = re.compile(r"\[([\d,\s]+)\] finished collective #(\d+), but didn't join collective #(\d+)")
_DESYNC_TIMEOUT_AT = re.compile(r"\[(\d+)\] Timeout at collective: (\w+), #(\d+)")

_FR_NOT_ALL = re.compile(r"Not all ranks joining collective(?: (\d+)(?: at entry \d+)?|, sequence number: (\d+))?")
_FR_MISSING = re.compile(r"[Mm]issing ranks(?: are|:)\s*\{([\d,\s]*)\}")
_FR_COLLECTIVE = re.compile(r"^\s*collective: (?:\w+:)?(\w+)")
_FR_JSON_SEQ = re.compile(r"[\"']collective_seq_id[\"']\s*:\s*[\"']?(-?\d+)")
_FR_JSON_STATE = re.compile(r"[\"']state[\"']\s*:\s*[\"'](scheduled|started|completed)[\"']")
_FR_JSON_NAME = re.compile(r"[\"']profiling_name[\"']\s*:\s*[\"'](?:\w+:)?(\w+)[\"']")
_FR_JSON_P2P = re.compile(r"[\"']is_p2p[\"']\s*:\s*(true|True)")
_FR_JSON_RANK = re.compile(r"^\s*[\"']rank[\"']\s*:\s*(\d+)")

_TQDM = re.compile(
    r"(?P<pct>\d{1,3})%\|[^|\r\n]{0,200}\|\s*"
    r"(?P<n>\d+(?:\.\d+)?)(?P<nu>[kMG]?)/(?P<tot>\d+(?:\.\d+)?)(?P<tu>[kMG]?)\s*"
    r"\[(?P<el>[\d:]+)<(?P<rem>[\d:?]+),\s*(?P<rate>\d+(?:\.\d+)?|\?)\s*(?P<unit>s/\w+|\w+/s)")
_TQDM_LABEL = re.compile(r"([^|\r\n]{1,200}?):\s*$")
_EPOCH_LABEL = re.compile(r"[Ee]poch\s*[:#=\[(]?\s*(\d+)(?:\s*(?:/|of)\s*(\d+))?")
_NON_TRAIN_LABEL = re.compile(r"valid|test|predict|sanity|eval|infer", re.I)
_HF_EPOCH = re.compile(r"['\"]epoch['\"]\s*:\s*(\d+(?:\.\d+)?)")

_DL_KILLED = re.compile(r"DataLoader worker \(pid[^)]*\) is killed by signal: ?([^.\n]*)")
_DL_EXITED = re.compile(r"DataLoader worker \(pid\(?s?\)?[^)]*\)+ exited unexpectedly")
_DL_TIMEOUT = re.compile(r"DataLoader timed out after (\d+) seconds")
_DL_BUS = re.compile(r"Unexpected bus error encountered in worker")
_CUDA_OOM = re.compile(r"CUDA out of memory\.?(?: Tried to allocate ([\d.]+ [KMGT]i?B))?")
_CUDA_ERR = re.compile(r"(uncorrectable ECC error encountered|an illegal memory access was encountered|"
                       r"unspecified launch failure|uncorrectable NVLink error|misaligned address|"
                       r"an illegal instruction was encountered|GPU has fallen off the bus)")
_HOST_OOM = re.compile(r"(oom[-_]kill event|OOM Killed|Out of memory: Killed process|"
                       r"task \S+: Out Of Memory|Killed process \d+ \(\S+\).*oom|oom-kill:)", re.I)
_SRUN_ERR = re.compile(r"srun: error: ([\w.\-]+): tasks? ([\d,\- ]+): (.*)$")
_LIGHTNING_RANK = re.compile(r"GLOBAL_RANK: (\d+), MEMBER: (\d+)/(\d+)")
_WORLD = re.compile(r"\bworld[_ ]size\s*[=:]\s*(\d{1,6})\b", re.I)
_STORE_BARRIER = re.compile(r"Rank (\d+): Completed store-based barrier for key:\S+ with (\d+) nodes")
_ELASTIC_HOST = re.compile(r"^\s*host\s*: ([\w.\-]+)\s*$")
_ELASTIC_RANK = re.compile(r"^\s*rank\s*: (\d+) \(local_rank: (\d+)\)")
_CONSEQUENCE_EXC = ("ChildFailedError", "DistBackendError", "SignalException", "KeyboardInterrupt", "SystemExit")
_TRACEBACK = "Traceback (most recent call last):"
_EXC_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Warning|Failure))(?::\s?(.*))?$")
_NCCL_ERROR_IN = re.compile(r"(unhandled system error|remote process exited or there was a network error|"
                            r"internal error - please report this issue to the NCCL developers|unhandled cuda error|"
                            r"ncclSystemError|ncclRemoteError|ncclInternalError|ncclUnhandledCudaError)")
_NCCL_ERROR_NAME = {"ncclSystemError": "unhandled system error",
                    "ncclRemoteError": "remote process exited or there was a network error",
                    "ncclInternalError": "internal error - please report this issue to the NCCL developers",
                    "ncclUnhandledCudaError": "unhandled cuda error"}

_FILE_RANK = re.compile(r"(?:^|[^a-z])(?:rank|task|proc)[-_.]?(\d{1,6})(?![\d])", re.I)


# ---------------------------------------------------------------------------- helpers

def _ints(text):
    return [int(x) for x in re.findall(r"\d+", text or "")]


def _busid_to_pci(raw):
    """NCCL prints busId as the int64 of the PCI address in hex: 2a000 -> 0000:2a:00.0."""
    try:
        v = int(raw, 16)
    except (TypeError, ValueError):
        return None
    return "%04x:%02x:%02x.%x" % (v >> 20, (v >> 12) & 0xff, (v >> 4) & 0xff, v & 0xf)


def _rank_from_name(name):
    base = re.split(r"[\\/]", name or "")[-1]
    m = _FILE_RANK.search(base)
    return int(m.group(1)) if m else None


def _to_unit(val, unit):
    try:
        x = float(val)
    except (TypeError, ValueError):
        return None
    return x * {"": 1, "k": 1e3, "M": 1e6, "G": 1e9}.get(unit or "", 1)


def _median(xs):
    s = sorted(xs)
    n = len(s)
    if not n:
        return None
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2.0


def _since_value(since):
    """since: datetime, epoch seconds or ISO string -> naive datetime (or None)."""
    if since is None:
        return None
    try:
        if isinstance(since, datetime):
            return since.replace(tzinfo=None)
        if isinstance(since, (int, float)):
            return datetime.fromtimestamp(float(since), timezone.utc).replace(tzinfo=None)
        m = _ISO_TS.search(str(since))
        if m:
            return datetime(*[int(x) for x in m.groups()])
        m = re.match(r"\s*(\d{4})-(\d{2})-(\d{2})\s*$", str(since))
        if m:
            return datetime(*[int(x) for x in m.groups()])
    except (ValueError, OverflowError, OSError, TypeError):
        return None
    return None


def _line_time(line, year, since_dt=None):
    m = _ISO_TS.search(line[:64])
    try:
        if m:
            return datetime(*[int(x) for x in m.groups()])
        m = _GLOG.match(line)
        if m and year:
            t = datetime(year, int(m.group(2)), int(m.group(3)), int(m.group(4)),
                         int(m.group(5)), int(m.group(6)))
            if since_dt is not None and (since_dt - t).days > 180:
                t = t.replace(year=year + 1)          # a job that started in December, log in January
            elif since_dt is not None and (t - since_dt).days > 180:
                t = t.replace(year=year - 1)          # since in January, line from December
            return t
    except ValueError:
        return None
    return None


def _evidence(line):
    return line if len(line) <= _MAX_EVIDENCE else line[:_MAX_EVIDENCE] + "..."


def _physical_lines(text):
    """(lineno, line): split on \\n only (\\r stays for tqdm), strip trailing \\r, ANSI, NULs."""
    if "\x1b" in text:
        text = strip_ansi(text)
    if "\x00" in text:
        text = text.replace("\x00", "")
    n, pos, end = 0, 0, len(text)
    while pos < end:
        nl = text.find("\n", pos)
        if nl < 0:
            nl = end
        n += 1
        line = text[pos:nl] if nl - pos <= _MAX_LINE else text[nl - _MAX_LINE:nl]
        pos = nl + 1
        yield n, line.rstrip("\r")


# ---------------------------------------------------------------------------- state

class _State(object):
    def __init__(self):
        self.comm = []             # dicts from NCCL comm lines
        self.rank_host = {}        # rank -> host from [rankN]: + NCCL prefix / srun
        self.rank_host_weak = {}   # rank -> host from srun error lines / torchrun failure summary
        self.local_rank_weak = {}
        self.pid_rank = {}         # (host, pid) -> rank (prefixed lines, then world communicator lines)
        self.pid_rank_weak = {}    # (host, pid) -> rank from the file name
        self.ranks_seen = set()
        self.world_hints = []
        self.ip_host = {}
        self.ib_devices = []
        self.roce_devices = []
        self.oob = None
        self.nccl_version = None
        self.networks = []         # "Using network X" values
        self.via = Counter()
        self.socket_evidence = None
        self.ib_disabled = None
        self.ib_nodev = None
        self.net_ib_line = None
        self.timeouts = []         # watchdog entries
        self.last_work = {}        # rank -> (seq, enqueued, completed)
        self.some_failed = []
        self.stuck = []
        self.desync_missing = []
        self.desync_lagging = []
        self.desync_timeout = []
        self.fr_missing = []       # (ranks, seq, op, src)
        self.fr_entries = {}       # rank -> {seq: (state, op)}
        self.events = []           # error events (dicts)
        self.progress = []         # tqdm observations
        self.hf_epoch = None


# ---------------------------------------------------------------------------- per line

def _parse_file(name, text, st, since_dt):
    file_rank = _rank_from_name(name)
    year = since_dt.year if since_dt else None
    iterator = _physical_lines(text)

    tb_rank = None
    elastic_host = None
    in_tb = False
    fr_cur = {}
    fr_file_rank = None
    last_fr_missing_ctx = None
    tq_last_n = None
    tq_resets = 0
    pending_ib = None

    for lineno, raw in iterator:
        if not raw:
            continue
        src = "%s:%d" % (name, lineno)
        line = raw
        rank = None
        m = _SRUN_LABEL.match(line)
        if m:
            rank = int(m.group(1))
            line = line[m.end():]
        m = _TORCHRUN_RANK.match(line)
        if m:
            rank = int(m.group(1))
            line = line[m.end():]
        else:
            m = _TORCHRUN_ROLE.match(line)
            if m:
                line = line[m.end():]
        if since_dt is not None:
            t = _line_time(line, year, since_dt)
            if t is not None and t < since_dt:
                continue
        m = _GLOG.match(line) or _GLOG_OLD.match(line)
        if m:
            line = line[m.end():]
        if rank is None:
            m = _LIGHTNING_RANK.search(line)
            if m:
                rank = int(m.group(1))
                st.world_hints.append(int(m.group(3)))
        prefixed = rank is not None
        if rank is None:
            rank = file_rank
        if rank is not None:
            st.ranks_seen.add(rank)

        # continuation of a wrapped IB completion line ("... len\n0, vendor err 129 (Recv)")
        if pending_ib is not None:
            ev = pending_ib
            pending_ib = None
            if "vendor err" in line and not _NCCL_PREFIX.search(line):
                mv = _IB_VENDOR.search(line)
                if mv:
                    ev["vendor_err"] = int(mv.group(1))
                md = _IB_DIR.search(line)
                if md:
                    ev["direction"] = md.group(1)
                ev["evidence"] = _evidence(ev["evidence"] + "\n" + raw)

        # ---------------- tqdm (may be many \r-separated updates)
        if "%|" in line:
            for seg in line.split("\r"):
                if "%|" not in seg:
                    continue
                for mt in _TQDM.finditer(seg):
                    ml = _TQDM_LABEL.search(seg[max(0, mt.start() - 220):mt.start()])
                    label = ml.group(1).strip() if ml else ""
                    if label and _NON_TRAIN_LABEL.search(label):
                        continue
                    n = _to_unit(mt.group("n"), mt.group("nu"))
                    tot = _to_unit(mt.group("tot"), mt.group("tu"))
                    if n is None or not tot:
                        continue
                    ep = tot_ep = None
                    me = None
                    for me in _EPOCH_LABEL.finditer(label):
                        pass
                    if me:
                        ep = int(me.group(1))
                        tot_ep = int(me.group(2)) if me.group(2) else None
                    else:
                        if tq_last_n is not None and n < tq_last_n:
                            tq_resets += 1
                        tq_last_n = n
                    rate = None
                    if mt.group("rate") != "?":
                        r = float(mt.group("rate"))
                        if mt.group("unit").startswith("s/"):
                            rate = (1.0 / r) if r > 0 else None
                        else:
                            rate = r
                    if len(st.progress) >= _CAP:
                        _compact_progress(st)
                    st.progress.append({
                        "file": name, "epoch": ep, "epochs_total": tot_ep, "labelled": me is not None,
                        "reset_index": tq_resets, "n": n, "total": tot,
                        "progress": max(0.0, min(1.0, n / tot)), "rate": rate,
                        "src": src, "evidence": seg.strip(), "elapsed": mt.group("el")})
            tail = line.rsplit("\r", 1)[-1]
            if "NCCL" not in tail and "Error" not in tail and "rror:" not in tail and "Rank" not in tail \
                    and "Killed" not in tail:
                continue

        if "'epoch'" in line or '"epoch"' in line:
            m = _HF_EPOCH.search(line)
            if m:
                try:
                    st.hf_epoch = (float(m.group(1)), src)
                except ValueError:
                    pass

        # ---------------- NCCL lines
        host = pid = dev = None
        if "NCCL" in line:
            mp = _NCCL_PREFIX.search(line)
            body = None
            if mp:
                host, pid, dev = mp.group("host"), int(mp.group("pid")), int(mp.group("dev"))
                body = line[mp.end():]
                if prefixed:
                    st.pid_rank[(host, pid)] = rank
                    st.rank_host.setdefault(rank, host)
                elif rank is not None:                    # per-rank file: weaker than a line prefix
                    st.pid_rank_weak.setdefault((host, pid), rank)
                    st.rank_host_weak.setdefault(rank, host)
            else:
                mb = _NCCL_BARE.search(line)
                if mb:
                    body = line[mb.end():]
            if body is not None:
                ev = _nccl_body(body, raw, src, rank, prefixed, host, pid, dev, st)
                if ev is not None and ev.get("vendor_err") is None:
                    pending_ib = ev
                continue
            mv = _NCCL_VERSION.search(line)
            if mv:
                st.nccl_version = mv.group(1)

        # ---------------- IB completion without NCCL prefix ("Last error:" block)
        if "Got completion from peer" in line:
            ev = _ib_completion(line, raw, src, rank, None, None, None, st)
            if ev is not None and ev.get("vendor_err") is None:
                pending_ib = ev

        # ---------------- PyTorch ProcessGroupNCCL
        if "Watchdog caught collective operation timeout" in line:
            mr = _MSG_RANK.search(line)
            r = rank if prefixed else (int(mr.group(1)) if mr else rank)
            ms, mo = _SEQ.search(line), _OPTYPE.search(line)
            mn, mtm, mrf = _NUMEL_IN.search(line), _TIMEOUT_MS.search(line), _RAN_FOR.search(line)
            mpg = _PG_ID.search(line)
            _add(st.timeouts, {
                "rank": r, "seq": int(ms.group(1)) if ms else None,
                "op": mo.group(1) if mo else None,
                "numel_in": int(mn.group(1)) if mn else None,
                "timeout_ms": int(mtm.group(1)) if mtm else None,
                "ran_ms": int(mrf.group(1)) if mrf else None,
                "pg": mpg.group(1) if mpg else None, "src": src, "evidence": raw})
            if r is not None:
                st.ranks_seen.add(r)
        elif "last completed" in line:
            m = _LAST_WORK.search(line)
            if m:
                mr = _MSG_RANK.search(line)
                r = rank if prefixed else (int(mr.group(1)) if mr else rank)
                if r is not None:
                    st.last_work[r] = (int(m.group(1)), int(m.group(2)), int(m.group(3)), src)
        if "Some NCCL operations have failed or timed out" in line:
            mr = _MSG_RANK.search(line)
            st.some_failed.append((rank if prefixed else (int(mr.group(1)) if mr else rank), src, raw))
        if "watchdog got stuck" in line or "Heartbeat monitor timed out" in line:
            mr = _MSG_RANK.search(line)
            st.stuck.append({"rank": rank if prefixed else (int(mr.group(1)) if mr else rank),
                             "src": src, "evidence": raw})
        if _BLOCKING_TIMEOUT.search(line) and "Watchdog" not in line:
            st.some_failed.append((rank, src, raw))

        # ---------------- desync debug report
        if "lagging" in line or "collective #" in line or "Timeout at collective" in line:
            m = _DESYNC_MISSING.search(line)
            if m:
                st.desync_missing.append((_ints(m.group(1)), None, src, raw))
            m = _DESYNC_JOINED.search(line)
            if m:
                st.desync_lagging.append((_ints(m.group(1)), int(m.group(2)), "joined", src, raw))
            m = _DESYNC_FINISHED.search(line)
            if m:
                st.desync_lagging.append((_ints(m.group(1)), int(m.group(3)), "finished", src, raw))
            m = _DESYNC_TIMEOUT_AT.search(line)
            if m:
                st.desync_timeout.append((int(m.group(1)), m.group(2), int(m.group(3)), src))

        # ---------------- flight recorder (fr_trace text and JSON dump)
        if "Not all ranks joining collective" in line:
            m = _FR_NOT_ALL.search(line)
            seq = m.group(1) or m.group(2)
            last_fr_missing_ctx = {"seq": int(seq) if seq else None, "op": None, "src": src, "raw": raw}
            mm = _FR_MISSING.search(line)
            if mm:
                st.fr_missing.append((_ints(mm.group(1)), last_fr_missing_ctx["seq"], None, src, raw))
                last_fr_missing_ctx = None
        elif last_fr_missing_ctx is not None:
            mc = _FR_COLLECTIVE.match(line)
            if mc:
                last_fr_missing_ctx["op"] = mc.group(1)
            mm = _FR_MISSING.search(line)
            if mm:
                c = last_fr_missing_ctx
                st.fr_missing.append((_ints(mm.group(1)), c["seq"], c["op"], c["src"], c["raw"]))
                last_fr_missing_ctx = None
        if "collective_seq_id" in line or "profiling_name" in line or "state" in line \
                or "is_p2p" in line or '"rank"' in line:
            m = _FR_JSON_RANK.match(line)
            if m and not fr_cur:
                fr_file_rank = int(m.group(1))
            for rx, key in ((_FR_JSON_SEQ, "seq"), (_FR_JSON_STATE, "state"), (_FR_JSON_NAME, "op"),
                            (_FR_JSON_P2P, "p2p")):
                for m in rx.finditer(line):
                    if key in fr_cur and key in ("seq", "state"):
                        _fr_flush(fr_cur, fr_file_rank if fr_file_rank is not None else rank, st)
                        fr_cur = {}
                    fr_cur[key] = m.group(1)
            if "seq" in fr_cur and "state" in fr_cur and "op" in fr_cur:
                _fr_flush(fr_cur, fr_file_rank if fr_file_rank is not None else rank, st)
                fr_cur = {}

        # ---------------- application / host errors
        if "DataLoader" in line or "bus error encountered in worker" in line:
            for rx, kind in ((_DL_KILLED, "dataloader_worker_killed"), (_DL_EXITED, "dataloader_worker_exited"),
                             (_DL_TIMEOUT, "dataloader_timeout"), (_DL_BUS, "dataloader_shm_bus_error")):
                m = rx.search(line)
                if m:
                    ev = {"kind": kind, "rank": rank, "src": src, "evidence": raw}
                    if kind == "dataloader_worker_killed":
                        ev["signal"] = m.group(1).strip()
                    _add(st.events, ev)
                    break
        elif "bus error encountered in worker" in line:
            _add(st.events, {"kind": "dataloader_shm_bus_error", "rank": rank, "src": src, "evidence": raw})
        if "out of memory" in line.lower():
            m = _CUDA_OOM.search(line)
            if m:
                _add(st.events, {"kind": "cuda_oom", "rank": rank, "src": src, "evidence": raw,
                                  "alloc": m.group(1)})
        if "CUDA" in line or "cuda" in line or "GPU" in line or "NVLink" in line:
            m = _CUDA_ERR.search(line)
            if m:
                _add(st.events, {"kind": "cuda_error", "what": m.group(1), "rank": rank, "src": src,
                                  "evidence": raw, "host": host, "pid": pid})
        ml = line.lower()
        if ("oom" in ml or "out of memory" in ml) and not line.startswith("srun: error:"):
            m = _HOST_OOM.search(line)
            if m:
                _add(st.events, {"kind": "host_oom", "rank": rank, "src": src, "evidence": raw})
        if line.startswith("srun: error:"):
            m = _SRUN_ERR.search(line)
            if m:
                tasks = _task_list(m.group(2))
                for t in tasks:
                    st.rank_host_weak.setdefault(t, m.group(1))
                    st.ranks_seen.add(t)
                if "Out Of Memory" in m.group(3) and len(tasks) == 1:
                    _add(st.events, {"kind": "host_oom", "rank": tasks[0], "host": m.group(1), "src": src,
                                     "evidence": raw})
        elif ": " in line and (line.lstrip().startswith("host") or line.lstrip().startswith("rank")):
            m = _ELASTIC_HOST.match(line)
            if m:
                elastic_host = m.group(1)
            else:
                m = _ELASTIC_RANK.match(line)
                if m and elastic_host:
                    r = int(m.group(1))
                    st.rank_host_weak.setdefault(r, elastic_host)
                    st.local_rank_weak.setdefault(r, int(m.group(2)))
                    elastic_host = None
        if "NCCL error" in line or "nccl" in line:
            m = _NCCL_ERROR_IN.search(line)
            if m:
                what = _NCCL_ERROR_NAME.get(m.group(1), m.group(1))
                if not any(e["kind"] == "nccl_error" and e["rank"] == rank and e["what"] == what
                           for e in st.events[-8:]):
                    _add(st.events, {"kind": "nccl_error", "what": what, "rank": rank, "src": src,
                                     "evidence": raw})
        if "orld" in line or "barrier" in line:
            for m in _WORLD.finditer(line):
                st.world_hints.append(int(m.group(1)))
            m = _STORE_BARRIER.search(line)
            if m:
                st.world_hints.append(int(m.group(2)))

        # ---------------- python tracebacks: the exception line that ends one
        if _TRACEBACK in line:
            in_tb = True
            tb_rank = rank
        elif in_tb and line and not line[0].isspace():
            m = _EXC_LINE.match(line.strip())
            if m:
                _add(st.events, {"kind": "python_exception", "exc": m.group(1), "msg": m.group(2) or "",
                                  "rank": tb_rank if tb_rank is not None else rank,
                                  "src": src, "evidence": raw})
                in_tb = False

    if fr_cur:
        _fr_flush(fr_cur, fr_file_rank if fr_file_rank is not None else file_rank, st)


_CAP = 50000


def _add(lst, item):
    """Bounded append: a pathological log cannot grow memory without limit (first ones win)."""
    if len(lst) < _CAP:
        lst.append(item)


def _compact_progress(st):
    """Keep at most 64 evenly spaced observations per bar (plus its last) once there are too many."""
    groups = OrderedDict()
    for p in st.progress:
        groups.setdefault((p["file"], p["labelled"], p["epoch"], p["reset_index"]), []).append(p)
    out = []
    for obs in groups.values():
        if len(obs) > 64:
            step = len(obs) / 63.0
            obs = [obs[int(i * step)] for i in range(63)] + [obs[-1]]
        out.extend(obs)
    st.progress = out


def _task_list(spec):
    out = []
    for part in (spec or "").replace(" ", "").split(","):
        if "-" in part:
            a, _, b = part.partition("-")
            if a.isdigit() and b.isdigit() and int(b) - int(a) < 100000:
                out.extend(range(int(a), int(b) + 1))
        elif part.isdigit():
            out.append(int(part))
    return out


def _fr_flush(cur, rank, st):
    if rank is None or "seq" not in cur or "state" not in cur or cur.get("p2p"):
        return
    try:
        seq = int(cur["seq"])
    except ValueError:
        return
    if seq <= 0:
        return
    st.fr_entries.setdefault(rank, {})[seq] = (cur["state"], cur.get("op"))


def _nccl_body(body, raw, src, rank, prefixed, host, pid, dev, st):
    m = _COMM.search(body)
    if m:
        rec = {"comm": m.group(1), "rank": int(m.group(2)), "nranks": int(m.group(3)),
               "host": host, "pid": pid, "dev": dev,
               "local_rank": int(m.group(6)) if m.group(6) else None, "pci": None,
               "line_rank": rank}
        mb = _BUSID.search(body)
        if mb:
            rec["pci"] = _busid_to_pci(mb.group(1))
        mc = _CUDADEV.search(body)
        if mc:
            rec["cuda_dev"] = int(mc.group(1))
        st.comm.append(rec)
        return
    if "NET/IB" in body and "Using" in body:
        m = _NET_IB_USING.search(body)
        if m:
            for d, _port, ll in _NET_DEV.findall(m.group(1)):
                lst = st.ib_devices if ll == "IB" else st.roce_devices
                if d not in lst:
                    lst.append(d)
            mo = _OOB.search(body)
            if mo:
                st.oob = mo.group(1)
                if host:
                    st.ip_host.setdefault(mo.group(2), host)
            if st.net_ib_line is None:
                st.net_ib_line = (src, raw)
        return
    if "Bootstrap" in body:
        m = _BOOTSTRAP.search(body)
        if m and host:
            st.ip_host.setdefault(m.group(2), host)
        return
    if "NET/Socket" in body and "Using" in body:
        m = _NET_SOCKET_USING.search(body)
        if m:
            for _ifn, ip in _SOCK_DEV.findall(m.group(1)):
                if host:
                    st.ip_host.setdefault(ip, host)
            if st.socket_evidence is None:
                st.socket_evidence = (src, raw)
        return
    m = _USING_NETWORK.search(body)
    if m:
        st.networks.append(m.group(1))
        if m.group(1).lower().startswith("socket") and st.socket_evidence is None:
            st.socket_evidence = (src, raw)
        return
    if "via " in body:
        m = _VIA.search(body)
        if m:
            st.via[m.group(1).split("/")[0] + ("/" + m.group(1).split("/")[1] if "/" in m.group(1) else "")] += 1
        return
    m = _IB_DISABLE.search(body)
    if m:
        if st.ib_disabled is None:
            st.ib_disabled = (src, raw)
        return
    if _IB_NODEV.search(body):
        if st.ib_nodev is None:
            st.ib_nodev = (src, raw)
        return
    if "Got completion from peer" in body:
        return _ib_completion(body, raw, src, rank, host, pid, dev, st)
    m = _CONN_ERR.search(body)
    if m:
        mp = _PEER_ADDR.search(body)
        _add(st.events, {"kind": "nccl_peer_connection", "what": m.group(1),
                          "peer": mp.group(1).strip("[]") if mp else None,
                          "rank": rank, "host": host, "pid": pid,
                          "src": src, "evidence": raw})
        return
    if "out of memory" in body and "Cuda failure" in body:
        _add(st.events, {"kind": "cuda_oom", "rank": rank, "host": host, "pid": pid, "src": src,
                         "evidence": raw, "alloc": None})
        return None
    m = _CUDA_ERR.search(body)
    if m:
        _add(st.events, {"kind": "cuda_error", "what": m.group(1), "rank": rank,
                          "host": host, "pid": pid, "src": src, "evidence": raw})


def _ib_completion(body, raw, src, rank, host, pid, dev, st):
    m = _IB_COMPLETION.search(body)
    if not m:
        return None
    status = int(m.group("st") or m.group("st2"))
    ev = {"kind": "ib_completion_error", "peer": m.group("peer"), "status": status,
          "status_name": IBV_WC_STATUS.get(status, ("IBV_WC_%d" % status, "unknown status"))[0],
          "status_text": IBV_WC_STATUS.get(status, (None, (m.group("stname") or "unknown status").strip()))[1],
          "vendor_err": None, "opcode": None, "direction": None, "hca": None,
          "rank": rank, "host": host, "pid": pid, "dev": dev, "src": src, "evidence": raw}
    rest = body[m.end():]
    mv = _IB_VENDOR.search(rest)
    if mv:
        ev["vendor_err"] = int(mv.group(1))
    mo = _IB_OPCODE.search(rest)
    if mo:
        ev["opcode"] = int(mo.group(1))
    md = _IB_DIR.search(rest)
    if md and md.group(1) in ("Send", "Recv", "Read", "Write", "Flush"):
        ev["direction"] = md.group(1)
    mh = _IB_HCA.search(rest)
    if mh:
        ev["hca"] = mh.group(1)
    _add(st.events, ev)
    return ev


# ---------------------------------------------------------------------------- analysis

def _world_and_map(st):
    world = None
    if st.comm:
        world = max(c["nranks"] for c in st.comm)
    hints = [w for w in st.world_hints if 0 < w < 10 ** 6]
    if world is None and hints:
        world = max(hints)
    rank_map = {}
    for c in st.comm:
        if c["nranks"] != world:
            continue
        r = c["rank"]
        if c["host"] and c["pid"] is not None:
            st.pid_rank.setdefault((c["host"], c["pid"]), r)
        ent = rank_map.setdefault(r, {"host": None, "gpu_pci": None, "local_rank": None})
        if c["host"] and not ent["host"]:
            ent["host"] = c["host"]
        if c["pci"] and not ent["gpu_pci"]:
            ent["gpu_pci"] = c["pci"]
        if c["local_rank"] is not None:
            ent["local_rank"] = c["local_rank"]
    for k, v in st.pid_rank_weak.items():
        st.pid_rank.setdefault(k, v)
    # sub-communicator lines still give pci/local rank for a process whose global rank we know
    for c in st.comm:
        if c["host"] is None or c["pid"] is None:
            continue
        r = st.pid_rank.get((c["host"], c["pid"]))
        if r is None:
            continue
        ent = rank_map.setdefault(r, {"host": c["host"], "gpu_pci": None, "local_rank": None})
        if not ent["gpu_pci"] and c["pci"]:
            ent["gpu_pci"] = c["pci"]
        if ent["host"] is None:
            ent["host"] = c["host"]
    for c in st.comm:  # fill local_rank from the NCCL prefix device when nothing better exists
        r = st.pid_rank.get((c["host"], c["pid"])) if c["host"] else None
        if r is not None and r in rank_map and rank_map[r]["local_rank"] is None and c["local_rank"] is None:
            rank_map[r]["local_rank"] = c["dev"]
    for src_map in (st.rank_host, st.rank_host_weak):
        for r, h in src_map.items():
            ent = rank_map.setdefault(r, {"host": None, "gpu_pci": None, "local_rank": None})
            if not ent["host"]:
                ent["host"] = h
    for r, lr in st.local_rank_weak.items():
        if r in rank_map and rank_map[r]["local_rank"] is None:
            rank_map[r]["local_rank"] = lr
    if world is not None:
        rank_map = {r: v for r, v in rank_map.items() if 0 <= r < world}
    return world, OrderedDict(sorted(rank_map.items()))


def _resolve_event_ranks(st):
    for ev in st.events:
        if ev.get("rank") is None and ev.get("host") and ev.get("pid") is not None:
            ev["rank"] = st.pid_rank.get((ev["host"], ev["pid"]))


def _collective(st):
    """The collective the job hung in: most reported (op, seq) among the watchdog timeouts."""
    per_rank_min = {}
    for t in st.timeouts:
        r = t["rank"]
        if r is None:
            continue
        key = (t["seq"] if t["seq"] is not None else -1)
        if r not in per_rank_min or key < per_rank_min[r][0]:
            per_rank_min[r] = (key, t)
    counts = Counter((v[1]["seq"], v[1]["op"]) for v in per_rank_min.values())
    if not counts and st.timeouts:
        counts = Counter((t["seq"], t["op"]) for t in st.timeouts)
    if not counts:
        return None, [], [], {}
    (seq, op), _n = max(counts.items(), key=lambda kv: (kv[1], kv[0][0] is not None, -(kv[0][0] or 0)))
    at_target = sorted(r for r, v in per_rank_min.items() if v[1]["seq"] == seq)
    behind = sorted(r for r, v in per_rank_min.items()
                    if seq is not None and v[1]["seq"] is not None and v[1]["seq"] < seq)
    return {"op": op, "seq": seq}, at_target, behind, per_rank_min


def _culprits(st, world, collective, timed_out, behind):
    """Returns (ranks, how)."""
    # 1. Flight Recorder analysis / dumps
    if st.fr_missing:
        ranks = sorted(set(r for item in st.fr_missing for r in item[0]))
        if ranks:
            return ranks, "flight_recorder"
    if st.fr_entries and len(st.fr_entries) >= 2:
        max_seq = {r: max(e) for r, e in st.fr_entries.items() if e}
        target = max(max_seq.values())
        never = sorted(r for r, s in max_seq.items() if s < target)
        if never and len(never) < len(max_seq):
            return never, "flight_recorder"
        sched = sorted(r for r, e in st.fr_entries.items() if e.get(target, ("",))[0] == "scheduled")
        started = [r for r, e in st.fr_entries.items() if e.get(target, ("",))[0] == "started"]
        if sched and started:
            return sched, "flight_recorder"
    # 2. desync debug report
    if st.desync_missing:
        ranks = sorted(set(r for item in st.desync_missing for r in item[0]))
        if ranks:
            return ranks, "desync_report"
    if st.desync_lagging:
        ranks = set(r for item in st.desync_lagging for r in item[0])
        everyone = set(range(world)) if world else set(st.ranks_seen)
        if ranks and (not everyone or ranks < everyone or len(ranks) < len(everyone)):
            return sorted(ranks), "desync_report"
    # 3. the ranks that did not time out on the collective everyone else waits in
    if timed_out:
        known = set(range(world)) if world else set(st.ranks_seen) | set(st.rank_host) | set(st.rank_host_weak)
        ahead = set()
        if collective and collective.get("seq") is not None:
            for t in st.timeouts:
                if t["rank"] is not None and t["seq"] is not None and t["seq"] > collective["seq"] \
                        and t["rank"] not in timed_out:
                    ahead.add(t["rank"])
        missing = known - set(timed_out) - ahead
        cand = missing | set(behind)
        # a rank we have log lines from (its own file, its prefix) and that stayed silent beats a rank
        # whose log we simply do not have
        seen = cand & st.ranks_seen
        if seen and len(seen) < len(cand):
            cand = seen
        cand = sorted(cand)
        if cand and len(timed_out) >= max(1, len(known) // 2) and len(cand) <= len(timed_out):
            return cand, "watchdog_missing_rank"
    # 4. lowest last-completed work
    if len(st.last_work) >= 2:
        comp = {r: v[2] for r, v in st.last_work.items()}
        lo = min(comp.values())
        ranks = sorted(r for r, c in comp.items() if c == lo)
        if lo < max(comp.values()) and len(ranks) < len(comp):
            return ranks, "last_completed_work"
    # 5. a rank that logged a hardware / network / crash error first
    for kinds in (("cuda_error",), ("ib_completion_error",), ("cuda_oom", "host_oom"),
                  ("dataloader_worker_killed", "dataloader_worker_exited", "dataloader_timeout",
                   "dataloader_shm_bus_error")):
        for ev in st.events:
            if ev["kind"] in kinds and ev.get("rank") is not None:
                return [ev["rank"]], "first_error"
    for s in st.stuck:
        if s["rank"] is not None:
            return [s["rank"]], "watchdog_stuck"
    return [], None


def _iteration(st):
    train = [p for p in st.progress]
    labelled = [p for p in train if p["labelled"]]
    use = labelled if labelled else train
    by_epoch = {}
    for p in use:
        ep = p["epoch"] if p["labelled"] else p["reset_index"]
        if p["rate"] is not None and p["rate"] > 0:
            by_epoch.setdefault(ep, []).append(p["rate"])
    rates = OrderedDict((ep, round(_median(v), 4)) for ep, v in sorted(by_epoch.items()))
    trend = "unknown"
    eps = list(rates)
    if len(eps) >= 3:
        # the first epoch carries warm-up / compilation; drop it when there is enough history
        if len(eps) >= 5:
            eps = eps[1:]
        ys = [rates[e] for e in eps]
        xs = list(range(len(ys)))
        mx, my = sum(xs) / float(len(xs)), sum(ys) / float(len(ys))
        sxx = sum((x - mx) ** 2 for x in xs)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
        fit_first, fit_last = my - slope * mx, my + slope * (xs[-1] - mx)
        resid = [y - (my + slope * (x - mx)) for x, y in zip(xs, ys)]
        rs = (sum(r * r for r in resid) / len(resid)) ** 0.5
        down = sum(1 for a, b in zip(ys, ys[1:]) if b < a)
        rel = (fit_last - fit_first) / fit_first if fit_first > 0 else 0.0
        if my > 0 and rs / my > 0.25:
            trend = "erratic"
        elif rel < -0.15 and down >= 0.6 * (len(ys) - 1):
            trend = "falling"
        elif my > 0 and rs / my > 0.12:
            trend = "erratic"
        else:
            trend = "steady"
    return rates, trend


def _failed_at(st):
    if not st.progress:
        if st.hf_epoch:
            v = st.hf_epoch[0]
            return {"epoch": int(v), "progress": round(v - int(v), 4)}, None, None
        return None, None, None
    labelled = [p for p in st.progress if p["labelled"]]
    if labelled:
        best = max(labelled, key=lambda p: (p["epoch"], p["progress"]))
        run_frac = None
        if best["epochs_total"]:
            run_frac = (best["epoch"] + best["progress"]) / float(best["epochs_total"] + 1)
        return {"epoch": best["epoch"], "progress": round(best["progress"], 4)}, run_frac, best
    best = max(st.progress, key=lambda p: (p["reset_index"], p["progress"]))
    if any(p["reset_index"] for p in st.progress):
        return {"epoch": best["reset_index"], "progress": round(best["progress"], 4)}, None, best
    # one bar over the whole run (HF Trainer): its fraction is the run fraction
    fa = None
    if st.hf_epoch:
        v = st.hf_epoch[0]
        fa = {"epoch": int(v), "progress": round(v - int(v), 4)}
    return fa, best["progress"], best


def _phase(failed_at, run_frac, collective):
    if failed_at is not None:
        if failed_at["epoch"] < 3 or (run_frac is not None and run_frac < 0.10):
            return "early"
        return "late"
    if run_frac is not None:
        return "early" if run_frac < 0.10 else "late"
    seq = collective.get("seq") if collective else None
    if seq is not None:
        if seq < 50:
            return "early"
        if seq >= 5000:
            return "late"
    return "unknown"


def _transport(st):
    nets = [n.lower() for n in st.networks]
    if nets:
        last = nets[-1]
        if any(n.startswith("ib") for n in nets) and not any(n.startswith("socket") for n in nets):
            return "IB"
        if any(n.startswith("socket") for n in nets) and not any(n.startswith("ib") for n in nets):
            return "Socket"
        if last.startswith("ib"):
            return "IB"
        if last.startswith("socket"):
            return "Socket"
    if st.via:
        keys = list(st.via)
        if any(k.startswith("NET/IB") for k in keys):
            return "IB"
        if any(k.startswith("NET/Socket") for k in keys):
            return "Socket"
        if any(k.startswith("P2P") or k.startswith("SHM") for k in keys):
            return "P2P"
    if st.socket_evidence and not st.ib_devices:
        return "Socket"
    if st.ib_devices or st.roce_devices:
        return "IB"
    return "unknown"


# ---------------------------------------------------------------------------- findings

def _finding_for_event(ev, st, phase, trend, rank_map):
    host = ev.get("host") or (rank_map.get(ev.get("rank"), {}) or {}).get("host")
    r = ev.get("rank")
    where = ("rank %s" % r if r is not None else "a rank") + (" on %s" % host if host else "")
    gpu = None
    if r is not None and rank_map.get(r, {}).get("gpu_pci"):
        gpu = gpu_ref(rank_map[r]["gpu_pci"], rank_map[r].get("local_rank"))
    k = ev["kind"]
    src, evid = ev["src"], _evidence(ev["evidence"])
    if k == "ib_completion_error":
        peer = ev.get("peer")
        peer_host = st.ip_host.get(peer)
        return make_finding(
            "ib_network", "critical" if ev["status"] in (12, 13, 5, 4, 10, 11, 19, 20) else "warning",
            "ib_completion_error",
            "%s got IB work completion %s (%d, %s) from peer %s%s%s; the RDMA path between the two "
            "hosts is broken." % (where, ev["status_name"], ev["status"], ev["status_text"], peer,
                                  " (%s)" % peer_host if peer_host else "",
                                  ", vendor err %s" % ev["vendor_err"] if ev.get("vendor_err") is not None else ""),
            "Check the IB port state and error counters (ibstat, perfquery) on %s and on peer %s, "
            "restart or reseat the link, then drain the host if it repeats." % (host or "the reporting host", peer),
            evidence=evid, source=src, rank=r, gpu=gpu,
            ib=ib_ref(ev["hca"], None) if ev.get("hca") else None, rung="ib_restart")
    if k == "nccl_peer_connection":
        peer = ev.get("peer")
        peer_host = st.ip_host.get(peer) if peer else None
        return make_finding(
            "ib_network", "critical", "nccl_peer_connection_error",
            "%s: NCCL connection to peer %s%s failed (%s); that node's network is broken or its "
            "process is gone." % (where, peer or "?", " (%s)" % peer_host if peer_host else "", ev["what"]),
            "Resolve %s to its node, exclude it (sbatch --exclude) and drain it for checks." % (peer or "the peer"),
            evidence=evid, source=src, rank=r, rung="drain")
    if k == "cuda_error":
        what = ev["what"]
        if "ECC" in what or "NVLink" in what or "fallen off the bus" in what:
            return make_finding(
                "gpu_hardware", "critical", "cuda_hardware_error",
                "%s hit CUDA error '%s': a GPU hardware fault." % (where, what),
                "Drain the host, read Xid/ECC counters (nvidia-smi -q -d ECC,ROW_REMAPPER) and reset or RMA the GPU.",
                evidence=evid, source=src, rank=r, gpu=gpu, rung="gpu_reset")
        if what == "unspecified launch failure" and phase == "late":
            return make_finding(
                "gpu_hardware", "critical", "cuda_launch_failure",
                "%s hit '%s' after a long healthy run: likely a GPU fault (check Xid 13/31/43/79)." % (where, what),
                "Drain the host and read its kernel log for Xid errors before returning it.",
                evidence=evid, source=src, rank=r, gpu=gpu, rung="drain")
        return make_finding(
            "application", "critical", "cuda_error",
            "%s hit CUDA error '%s' (usually a kernel/application bug; Xid 13/31 in the kernel log "
            "confirms where)." % (where, what),
            "Rerun with CUDA_LAUNCH_BLOCKING=1 to locate the kernel; check the host's kernel log for Xids.",
            evidence=evid, source=src, rank=r, gpu=gpu, rung="fix_application")
    if k == "cuda_oom":
        cat = "memory_leak" if (trend == "falling" or phase == "late") else "application"
        return make_finding(
            cat, "critical", "cuda_oom",
            "%s ran out of GPU memory%s%s." % (where, " allocating %s" % ev["alloc"] if ev.get("alloc") else "",
                                               " late in the run (memory grows over time)" if cat == "memory_leak"
                                               else ""),
            "Find what keeps growing (tensors kept across steps, caches) or reduce the batch size.",
            evidence=evid, source=src, rank=r, gpu=gpu, rung="fix_application")
    if k == "host_oom":
        cat = "memory_leak" if (trend == "falling" or phase == "late") else "application"
        return make_finding(
            cat, "critical", "host_oom",
            "The kernel/Slurm OOM killer killed a training process (%s)." % where,
            "Reduce host memory use (DataLoader workers, pinned memory, prefetch) or find the leak.",
            evidence=evid, source=src, rank=r, rung="fix_application")
    if k.startswith("dataloader"):
        what = {"dataloader_worker_killed": "a DataLoader worker was killed by signal %s" % ev.get("signal", "?"),
                "dataloader_worker_exited": "a DataLoader worker exited unexpectedly",
                "dataloader_timeout": "the DataLoader timed out waiting for a batch",
                "dataloader_shm_bus_error": "a DataLoader worker hit a bus error (shared memory /dev/shm too small)"}[k]
        return make_finding(
            "dataloader", "critical", k,
            "On %s %s; the rank stopped feeding its collectives." % (where, what),
            "Check host memory and /dev/shm on that node, the storage it reads from, and the dataset code "
            "(num_workers, pin_memory).", evidence=evid, source=src, rank=r, rung="fix_application")
    if k == "nccl_error":
        what = ev["what"]
        cat = "ib_network" if "network" in what else "unknown"
        return make_finding(
            cat, "warning", "nccl_error",
            "%s: NCCL call failed with '%s'." % (where, what),
            "Read the NCCL WARN lines around it (NCCL_DEBUG=INFO) for the peer or device at fault.",
            evidence=evid, source=src, rank=r, rung="none")
    if k == "python_exception":
        return make_finding(
            "application", "warning", "python_exception",
            "%s raised %s%s." % (where, ev["exc"], (": " + ev["msg"][:200]) if ev["msg"] else ""),
            "Read the traceback; fix the application if the exception is not a consequence of a hardware error.",
            evidence=evid, source=src, rank=r, rung="fix_application")
    return None


def _dedupe(findings):
    out, seen, per_kind = [], set(), Counter()
    for f in findings:
        key = (f["kind"], f["rank"], f["evidence"][:200] if f["kind"] == "python_exception" else None,
               f["message"] if f["kind"] in ("ib_completion_error", "nccl_peer_connection_error") else None)
        if key in seen:
            continue
        seen.add(key)
        per_kind[f["kind"]] += 1
        if per_kind[f["kind"]] > _MAX_FINDINGS_PER_KIND:
            continue
        out.append(f)
    return out


# ---------------------------------------------------------------------------- entry point

def parse_job_logs(files, since=None):
    """Parse the job's logs. ``files``: {name: text}. Returns (job, findings)."""
    st = _State()
    since_dt = _since_value(since)
    st.since_dt = since_dt
    st.year = since_dt.year if since_dt is not None else datetime.utcnow().year
    if isinstance(files, dict):
        items = list(files.items())
    elif isinstance(files, (list, tuple)):
        items = [(str(i), t) for i, t in enumerate(files)]
    else:
        items = [("job.log", files)]
    for name, text in items:
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("utf-8", "replace")
        if not isinstance(text, str) or not text:
            continue
        try:
            _parse_file(str(name), text, st, since_dt)
        except Exception:  # noqa: BLE001 - a parser must never take the runbook down on garbage
            continue
    try:
        return _analyse(st)
    except Exception:  # noqa: BLE001
        return _empty_job(), []


_RANK_PREFIX = re.compile(r"^\s*\[(?:rank|Rank )?\d+\]:\s*|^\s*\d+:\s+")


def _timeline(st):
    """Timed job events for the incident timeline: when the hang began (first watchdog fire
    minus its timeout) and when the watchdog fired. Times are naive UTC ISO strings."""
    timed = []
    for t in st.timeouts:
        when = _line_time(_RANK_PREFIX.sub("", t.get("evidence") or ""), getattr(st, "year", None),
                          getattr(st, "since_dt", None))
        if when is not None:
            timed.append((when, t))
    if not timed:
        return []
    timed.sort(key=lambda x: x[0])
    when, first = timed[0]
    ranks = sorted(set(t["rank"] for _w, t in timed if t.get("rank") is not None))
    what = "%s SeqNum %s" % (first.get("op") or "collective", first.get("seq"))
    events = []
    if first.get("timeout_ms"):
        began = when - timedelta(milliseconds=first.get("ran_ms") or first["timeout_ms"])
        events.append({"time": began.isoformat(), "kind": "collective_started",
                       "text": "%s began; it never completed (watchdog fired %d s later)"
                               % (what, (first.get("ran_ms") or first["timeout_ms"]) // 1000)})
    events.append({"time": when.isoformat(), "kind": "watchdog_timeout",
                   "text": "watchdog fired: %d rank(s) timed out in %s" % (len(ranks), what),
                   "evidence": first.get("evidence")})
    return events


def _empty_job():
    return {"timed_out_ranks": [], "culprit_ranks": [], "culprit_hosts": [], "collective": None,
            "failed_at": None, "rank_map": {}, "world_size": None,
            "iteration_rate": {"by_epoch": {}, "trend": "unknown"}, "phase": "unknown", "events": [],
            "culprit_evidence": None,
            "nccl": {"transport": "unknown", "ib_devices": [], "errors": []}}


def _analyse(st):
    world, rank_map = _world_and_map(st)
    _resolve_event_ranks(st)
    for ev in st.events:
        if ev.get("host") is None and ev.get("rank") is not None and ev["rank"] in rank_map:
            ev["host"] = rank_map[ev["rank"]]["host"]

    collective, at_target, behind, _per_rank = _collective(st)
    if collective is None and st.desync_timeout:
        c = Counter((op, seq) for _r, op, seq, _s in st.desync_timeout).most_common(1)[0][0]
        collective = {"op": c[0], "seq": c[1]}
    timed_out = sorted(set(t["rank"] for t in st.timeouts if t["rank"] is not None))
    if not timed_out and st.desync_timeout:
        timed_out = sorted(set(r for r, _o, _s, _src in st.desync_timeout))

    culprits, how = _culprits(st, world, collective, set(at_target) or set(timed_out), behind)
    rates, trend = _iteration(st)
    failed_at, run_frac, last_prog = _failed_at(st)
    phase = _phase(failed_at, run_frac, collective)

    # network side: who is the peer everyone complains about?
    nccl_errors = []
    ib_peer_reporters = {}
    keys = ("kind", "rank", "host", "peer", "status", "status_name", "status_text", "vendor_err", "hca",
            "direction", "what", "src")
    for ev in st.events:
        if ev["kind"] in ("ib_completion_error", "nccl_peer_connection", "nccl_error"):
            nccl_errors.append({k: ev.get(k) for k in keys})
            if ev.get("peer") and ev["kind"] != "nccl_error":
                ib_peer_reporters.setdefault(ev["peer"], set()).add(ev.get("host") or ev.get("rank"))

    culprit_hosts = []
    for r in culprits:
        h = (rank_map.get(r) or {}).get("host")
        if h and h not in culprit_hosts:
            culprit_hosts.append(h)
    net_events = [e for e in st.events if e["kind"] in ("ib_completion_error", "nccl_peer_connection")]
    shared_peers = [p for p, rep in ib_peer_reporters.items() if len(rep) > 1]
    if shared_peers and how in (None, "first_error"):
        # several hosts complain about the same IB peer: that peer is the suspect, not the first reporter
        culprit_hosts = []
        culprits = []
        for p in shared_peers:
            h = st.ip_host.get(p, p)
            if h not in culprit_hosts:
                culprit_hosts.append(h)
            culprits.extend(r for r, ent in rank_map.items() if ent.get("host") == h)
        culprits, how = sorted(set(culprits)), "ib_peer"
    if net_events and not culprit_hosts:
        # a refused/closed peer is itself the suspect; an IB peer named by >1 reporter is the suspect,
        # otherwise both ends of the broken link are
        for e in net_events:
            peer = e.get("peer")
            peer_name = st.ip_host.get(peer, peer) if peer else None
            if e["kind"] == "nccl_peer_connection":
                cands = [peer_name]
            elif peer and len(ib_peer_reporters.get(peer, ())) > 1:
                cands = [peer_name]
            else:
                cands = [e.get("host"), peer_name]
            for h in cands:
                if h and h not in culprit_hosts:
                    culprit_hosts.append(h)
        if not culprits:
            rs = []
            for e in net_events:
                if e["kind"] == "ib_completion_error" and e.get("rank") is not None and e["rank"] not in rs:
                    rs.append(e["rank"])
            if rs:
                culprits, how = sorted(rs), how or "first_error"

    transport = _transport(st)
    job = {
        "timed_out_ranks": timed_out,
        "culprit_ranks": sorted(culprits),
        "culprit_hosts": culprit_hosts,
        "culprit_evidence": how,
        "collective": collective,
        "failed_at": failed_at,
        "rank_map": dict(rank_map),
        "world_size": world,
        "iteration_rate": {"by_epoch": dict(rates), "trend": trend},
        "phase": phase,
        "events": _timeline(st),
        "nccl": {"transport": transport, "ib_devices": list(st.ib_devices), "roce_devices": list(st.roce_devices),
                 "oob_interface": st.oob, "version": st.nccl_version, "errors": nccl_errors[:64]},
    }

    findings = []
    for ev in st.events:
        f = _finding_for_event(ev, st, phase, trend, rank_map)
        if f is not None:
            findings.append(f)
    # a python exception that only restates a classified error adds nothing
    classified_srcs = set()
    for ev in st.events:
        if ev["kind"] != "python_exception":
            classified_srcs.add(ev["src"])
    findings = [f for f in findings if not (f["kind"] == "python_exception" and (
        f["source"] in classified_srcs or "NCCL" in f["evidence"]
        or any(x in f["evidence"] for x in _CONSEQUENCE_EXC) or "DistBackendError" in f["evidence"]
        or "DataLoader" in f["evidence"] or "out of memory" in f["evidence"].lower()
        or "CUDA error" in f["evidence"]))]

    for s in st.stuck[:1]:
        findings.append(make_finding(
            "driver", "critical", "nccl_watchdog_stuck",
            "rank %s: the NCCL watchdog itself got stuck, which means a CUDA/NCCL call hung inside the "
            "driver on that process." % s["rank"],
            "Drain that rank's host and check it for GPU hangs (Xid) before returning it.",
            evidence=_evidence(s["evidence"]), source=s["src"], rank=s["rank"], rung="drain"))

    # transport configuration
    if transport == "Socket" and (st.ib_devices or st.roce_devices or st.ib_disabled or st.ib_nodev):
        why = st.ib_disabled or st.ib_nodev or st.socket_evidence or st.net_ib_line
        findings.append(make_finding(
            "nccl_config", "warning", "nccl_socket_fallback",
            "NCCL fell back to sockets (TCP) instead of InfiniBand%s: collectives are slow and time out "
            "under load." % (" because NCCL_IB_DISABLE is set" if st.ib_disabled else
                             " because NET/IB found no device" if st.ib_nodev else ""),
            "Unset NCCL_IB_DISABLE, check NCCL_IB_HCA / NCCL_NET and that the IB devices are visible in the job.",
            evidence=_evidence(why[1]), source=why[0], rung="nccl_env"))
    if st.ib_devices and st.roce_devices and st.net_ib_line:
        findings.append(make_finding(
            "nccl_config", "warning", "nccl_ib_hca_mixed",
            "NCCL's NET/IB list mixes InfiniBand HCAs with RoCE device(s) %s; traffic over them will be "
            "slow or unroutable." % ", ".join(st.roce_devices),
            "Exclude them, e.g. NCCL_IB_HCA=^%s (or list the IB HCAs explicitly)." % ",".join(st.roce_devices),
            evidence=_evidence(st.net_ib_line[1]), source=st.net_ib_line[0], rung="nccl_env"))

    # slowing iteration rate
    if trend == "falling":
        eps = list(rates)
        ev_p = [p for p in st.progress if p["rate"]]
        lastp = ev_p[-1] if ev_p else None
        findings.append(make_finding(
            "memory_leak", "warning", "iteration_rate_falling",
            "Training slows down epoch after epoch (%.3g it/s in epoch %s -> %.3g it/s in epoch %s): "
            "typical of a leak (memory, caches, growing graphs)." % (rates[eps[0]], eps[0], rates[eps[-1]], eps[-1]),
            "Profile memory over steps (torch.cuda.memory_allocated, host RSS) and fix what grows.",
            evidence=_evidence(lastp["evidence"]) if lastp else "", source=lastp["src"] if lastp else "",
            rung="fix_application"))

    hw_cats = ("gpu_hardware", "ib_network", "driver")
    failure = bool(timed_out or st.timeouts or st.some_failed or
                   any(f["severity"] == "critical" for f in findings))
    if phase == "early" and failure and not any(f["category"] in hw_cats for f in findings):
        fa = failed_at or {}
        src = last_prog["src"] if last_prog else (st.timeouts[0]["src"] if st.timeouts else "")
        evid = last_prog["evidence"] if last_prog else (st.timeouts[0]["evidence"] if st.timeouts else "")
        findings.append(make_finding(
            "application", "critical", "early_phase_failure",
            "The job failed early (%s): a setup/application problem (code, config, data, "
            "mismatched collectives), not a node that wore out." % (
                "epoch %s at %d%%" % (fa.get("epoch"), round(100 * fa.get("progress", 0))) if fa
                else "within the first collectives"),
            "Fix the application: read the first traceback and check that every rank issues the same collectives.",
            evidence=_evidence(evid), source=src, rank=culprits[0] if culprits else None, rung="fix_application"))

    # the watchdog timeout itself
    if st.timeouts or st.desync_timeout:
        first = st.timeouts[0] if st.timeouts else None
        cause = None
        prio = {"gpu_hardware": 0, "ib_network": 1, "driver": 2, "dataloader": 3, "memory_leak": 4,
                "application": 5, "nccl_config": 6}
        cands = [f for f in findings if f["category"] in prio and (
            f["severity"] == "critical" or (f["kind"] == "nccl_socket_fallback" and not culprits))]
        on_culprit = [f for f in cands if f["rank"] is not None and f["rank"] in culprits]
        pool = on_culprit or cands
        if pool:
            cause = min(pool, key=lambda f: prio[f["category"]])
        if cause is not None:
            category, rung = cause["category"], cause["rung"]
        elif phase == "early":
            category, rung = "application", "fix_application"
        else:
            category, rung = "nccl_deadlock", ("drain" if culprit_hosts or phase == "late" else "none")
        c = collective or {}
        cul = ("culprit rank(s) %s on %s (%s)" % (
            ",".join(str(r) for r in culprits), ",".join(culprit_hosts) or "unknown host", how)
            if culprits else "culprit not identified")
        r0 = culprits[0] if culprits else None
        gpu = None
        if r0 is not None and (rank_map.get(r0) or {}).get("gpu_pci"):
            gpu = gpu_ref(rank_map[r0]["gpu_pci"], rank_map[r0].get("local_rank"))
        findings.append(make_finding(
            category, "critical", "nccl_watchdog_timeout",
            "%d rank(s) timed out in %s SeqNum %s%s; %s%s." % (
                len(timed_out), c.get("op") or "a collective", c.get("seq"),
                (" of %d" % world) if world else "", cul,
                ("; cause: %s" % cause["kind"]) if cause else ""),
            ("Drain %s and run the node checks on it before the job restarts." % (
                ", ".join(culprit_hosts) if culprit_hosts else "the culprit's host")) if rung == "drain"
            else cause["action"] if cause is not None else
            "Fix the application: every rank must issue the same collectives in the same order.",
            evidence=_evidence(first["evidence"]) if first else "",
            source=first["src"] if first else st.desync_timeout[0][3], rank=r0, gpu=gpu, rung=rung))

    findings = _dedupe(findings)
    return job, findings
