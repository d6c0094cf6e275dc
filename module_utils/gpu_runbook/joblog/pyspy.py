# SPDX-License-Identifier: Apache-2.0
"""``py-spy dump`` output in a job's logs: which stack each dumped process of a hung job is in,
and from many of them, the few that are not where the others wait (the likely culprits).

The format, as py-spy writes it (benfred/py-spy v0.4.2, src/dump.rs ``write_traces`` /
``write_trace``, src/stack_trace.rs ``status_str`` / ``format_threadid``; the same since v0.3.0)::

    Process <pid>: <cmdline joined by spaces>
    Python v<version> (<executable>)
    Parent Process <pid>: <cmdline>                 (--subprocesses, a child's dump)
    <blank>
    Thread <tid> (idle|active|active+gil): "<name>"  (no ': "name"' when the thread has none;
                                                      <tid> is 0x.. hex on macOS or without an OS id)
        <function> (<file>:<line>)                  (innermost frame first; '(<file>)' alone
        <function> (<file>)                          when the line is 0: a --native frame)
            Arguments:                               (--locals: 8 spaces, then each
                <name>: <repr>                       variable at 12)
            Locals:

    <a rule of '-' the terminal's width>          (--subprocesses: before each child's dump)

v0.1.x wrote ``Thread 0x7F../0x1A2B (idle)`` and frames as ``\\t <function> (<file>:<line>)``.
Excerpts pasted into issues often lack the Process/Python lines (the dump then starts at a
Thread line), and authors condense dumps of many processes: several frameless ``Thread ..:
"MainThread"`` headers, one per process, then the one stack they share.

``pyspy(line, fs, st)`` is a line handler (lines.HANDLERS); ``where(rec)`` says where a dumped
process is stuck; ``findings(st)`` and ``culprit_ranks(st)`` read the job's dumps."""

import re

from ..findings import finding
from .text import add, evidence

# ------------------------------------------------------------------ the format (py-spy v0.4.2)
PYSPY_PROCESS = re.compile(r"^Process (\d{1,10}): ?(.*)$")
PYSPY_PARENT = re.compile(r"^Parent Process (\d{1,10}): ?(.*)$")
PYSPY_PYTHON = re.compile(r"^Python v(\d[\w.+]{0,40}) \((.*)\)$")
PYSPY_THREAD = re.compile(r'^Thread (\d{1,20}|0[xX][0-9A-Fa-f]{1,16})(?:/0[xX][0-9A-Fa-f]{1,16})? '
                          r'\((active\+gil|active|idle|gil)\)(?:: "(.*)")?$')
# the rank in the dumped process's command line: '--rank 3', '--rank=3', 'RANK=3' (an 'env' prefix),
# else its local rank ('--local_rank=3', '--local-rank 3', 'LOCAL_RANK=3')
PYSPY_CMD_RANK = re.compile(r"(?:^|\s)(?:--rank[= ]|RANK=)(\d{1,7})(?!\d)")
PYSPY_CMD_LOCAL_RANK = re.compile(r"(?:^|\s)(?:--local[_-]rank[= ]|LOCAL_RANK=)(\d{1,7})(?!\d)")

MAX_THREADS = 256   # threads kept per process
MAX_FRAMES = 128    # frames kept per thread (the innermost: py-spy prints them first)
DEPTH = 48          # frames the where-table looks at, from the innermost
MAX_GROUPS = 32     # findings per job (one per distinct place)
LOCALS_INDENT = 6   # frames are indented 4 (v0.1: 2), --locals lines 8 and 12 (a prefix may take one)


def pyspy(line, fs, st):
    """Read one line of a py-spy dump. ``fs.pyspy`` is the dump being read: {"rec": the process
    record (already in ``st.pyspy``, filled as its lines come), "thread": the thread being read,
    "pending": frameless headers just before it (a condensed dump's), "main": a MainThread seen}.
    A dump ends at a line that is none of its own (not indented, not a Thread/Process/Python
    line); that line is left to the other handlers."""
    text = line.text
    cur = fs.pyspy
    if cur is not None and text[:1] in (" ", "\t"):
        return _indented(text, cur)
    c = text[:1]
    if c == "P":
        if text.startswith("Process "):
            m = PYSPY_PROCESS.match(text)
            if m:
                _open(line, fs, st, int(m.group(1)), m.group(2))
                return True
        elif text.startswith("Python v"):
            m = PYSPY_PYTHON.match(text)
            if m:
                if cur is None or cur["rec"]["threads"] or cur["rec"]["python"]:
                    _open(line, fs, st, None, None)
                fs.pyspy["rec"]["python"] = m.group(1)
                return True
        elif text.startswith("Parent Process ") and cur is not None:
            m = PYSPY_PARENT.match(text)
            if m:
                cur["rec"]["parent"] = int(m.group(1))
                return True
    elif c == "T" and text.startswith("Thread "):
        m = PYSPY_THREAD.match(text)
        if m:
            _thread(line, fs, st, m.group(1), m.group(2), m.group(3))
            return True
    if cur is not None:
        if text and not text.strip("-"):
            return True  # --subprocesses: the rule before a child's dump
        fs.pyspy = None  # not a line of the dump: it ended
    return False


def _open(line, fs, st, pid, cmd, pending=None):
    """A new process record, in ``st.pyspy`` at once (a dump at the end of a file needs no flush)."""
    rank, how = line.rank, ("prefix" if line.prefixed else "file") if line.rank is not None else None
    if cmd and not line.prefixed:
        m = PYSPY_CMD_RANK.search(cmd)
        m_local = None if m else PYSPY_CMD_LOCAL_RANK.search(cmd)
        if m or m_local:
            rank, how = int((m or m_local).group(1)), "cmdline" if m else "cmdline_local_rank"
    rec = {"pid": pid, "cmd": cmd, "rank": rank, "rank_from": how, "src": line.src,
           "evidence": evidence(line.raw), "threads": [], "python": None, "parent": None}
    add(st.pyspy, rec)
    fs.pyspy = {"rec": rec, "thread": None, "pending": pending or [], "main": False}


def _key(thread):
    return thread["name"], thread["state"]


def _thread(line, fs, st, tid, state, name):
    """A Thread header. A second MainThread in one dump is a second process (a condensed or
    headerless dump): a new record. Frameless headers just before this one, with its name and
    state, will share its stack (a condensed dump prints it once, after the last header)."""
    cur = fs.pyspy
    pending = []
    if cur is not None:
        prev = cur["thread"]
        pending = cur["pending"]
        if prev is not None and not prev["frames"]:
            if pending and _key(pending[0]) != _key(prev):
                pending = []
            pending.append(prev)
        else:
            pending = []
    if cur is None or (name == "MainThread" and cur["main"]):
        _open(line, fs, st, None, None, pending)
        cur = fs.pyspy
    cur["pending"] = pending
    rec = cur["rec"]
    if name == "MainThread":
        cur["main"] = True
        if rec["pid"] is None and rec["cmd"] is None and tid.isdigit():
            rec["pid"] = int(tid)  # Linux: the main thread's id is the process id
    thread = {"tid": tid, "name": name, "state": state, "frames": []}
    if len(rec["threads"]) < MAX_THREADS:
        rec["threads"].append(thread)
    cur["thread"] = thread


def _indented(text, cur):
    """A frame of the current thread (True), a --locals line (True), else False (the dump
    goes on: an indented line never ends it)."""
    thread = cur["thread"]
    if thread is None:
        return False
    body = text.lstrip(" \t")
    if len(text) - len(body) >= LOCALS_INDENT:
        return True
    frame = parse_frame(body)
    if frame is None:
        return False
    frames = thread["frames"]
    if not frames and cur["pending"]:
        for other in cur["pending"]:
            if other["name"] is not None and _key(other) == _key(thread):
                other["frames"] = frames  # one list: the frames still to come are theirs too
        cur["pending"] = []
    if len(frames) < MAX_FRAMES:
        frames.append(frame)
    return True


def parse_frame(body):
    """'func (file:line)' or 'func (file)' -> (func, file, line or None); None if not a frame.
    The last ' (' splits: a demangled native name may hold parentheses ('(anonymous namespace)')."""
    body = body.rstrip()
    if not body.endswith(")"):
        return None
    at = body.rfind(" (")
    if at <= 0:
        return None
    func, loc = body[:at], body[at + 2:-1]
    if not loc:
        return None
    path, sep, num = loc.rpartition(":")
    if sep and num.isdigit() and path:
        return func, path, int(num)
    return func, loc, None


# ------------------------------------------------------------------ where a process is stuck
# torch.distributed's collectives and waits (torch 2.13 torch/distributed/distributed_c10d.py,
# _functional_collectives.py 'wait_tensor'; DeepSpeed deepspeed/comm/comm.py wraps the same names
# and adds 'allgather_fn', 'reduce_scatter_fn', 'inference_all_reduce'). '_wait_for_work' is the
# runbook's own listing (no torch release defines it; kept for forks).
COLLECTIVES = frozenset((
    "broadcast", "all_reduce", "all_reduce_coalesced", "reduce", "all_gather", "all_gather_single",
    "all_gather_into_tensor", "_all_gather_base", "all_gather_coalesced", "all_gather_object", "gather",
    "gather_object", "scatter", "scatter_object_list", "broadcast_object_list", "send_object_list",
    "recv_object_list", "reduce_scatter", "reduce_scatter_single", "reduce_scatter_tensor",
    "_reduce_scatter_base", "all_to_all", "all_to_all_single", "barrier", "monitored_barrier",
    "_store_based_barrier", "send", "recv", "wait", "wait_tensor", "all_gather_tensor", "_wait_for_work",
    "allgather_fn", "reduce_scatter_fn", "inference_all_reduce"))
# DeepSpeed's ZeRO gathers and reduce-scatters, which issue those collectives themselves (deepspeed 0.19.8
# runtime/zero/partition_parameters.py, runtime/comm/coalesced_collectives.py): a ZeRO-3 rank blocked in
# one, with no deeper Python frame, waits inside the collective for its peers
ZERO_COLLECTIVES = frozenset((
    "all_gather", "_all_gather", "_all_gather_dtype", "_all_gather_sequential", "_all_gather_coalesced",
    "all_gather_coalesced", "_allgather_param", "_allgather_params_coalesced", "_allgather_params_sequential",
    "_reduce_scatter_gradients", "_reduce_scatter_gradient", "_dist_allgather_fn", "_torch_reduce_scatter_fn",
    "all_to_all_quant_reduce", "all_to_all_loco_quant_reduce", "reduce_scatter_coalesced"))
ZERO_FILES = ("deepspeed/runtime/zero/partition_parameters.py", "deepspeed/runtime/comm/coalesced_collectives.py")
# PyTorch checkpoint writers and readers: torch/serialization.py save/_save/_legacy_save, load/_load;
# safetensors' save_file/save/load_file; torch.distributed.checkpoint (state_dict_saver.save,
# async_save, _async_thread_executor.save_wrapper); the frameworks' entry points: DeepSpeed
# DeepSpeedEngine.save_checkpoint/_save_checkpoint/_save_zero_checkpoint/save_16bit_model,
# transformers Trainer._save_checkpoint/save_model and save_pretrained, accelerate save_state,
# Lightning and Megatron save_checkpoint
SAVE_FUNCS = frozenset(("save_checkpoint", "save_zero_checkpoint", "save_16bit_model", "save_pretrained",
                        "save_model", "save_state", "save_file", "async_save", "save_wrapper", "save_state_dict"))
SERIALIZATION_FILES = ("torch/serialization.py", "safetensors/", "torch/distributed/checkpoint/")


def _collective(func, path, native):
    if native:  # --native: c10d's C++ (ProcessGroupNCCL::WorkNCCL::wait ...), NCCL's own API, Gloo
        return "c10d::" in func or "gloo::" in func or func.startswith(("nccl", "pnccl"))
    # not torchrun's agent (torch/distributed/elastic/: its own waits and store barriers are the launch's)
    if func in ZERO_COLLECTIVES and any(f in path for f in ZERO_FILES):
        return True
    return func in COLLECTIVES and ("torch/distributed/" in path or "deepspeed/comm/" in path) \
        and "torch/distributed/elastic/" not in path


def _cuda_python_sync(func, path, native):
    """torch.cuda.synchronize / Stream / Event .synchronize (torch/cuda/__init__.py, streams.py):
    without native frames, the wait of a stream that runs the collectives' kernels."""
    return not native and func == "synchronize" and "torch/cuda/" in path


def _dataloader(func, path, native):
    # torch/utils/data/dataloader.py: _next_data, _get_data, _try_get_data (the queues and their
    # poll/recv are inside them), _utils/worker.py _worker_loop, fetch.py; not the pin-memory
    # thread's loop (_utils/pin_memory.py), which waits on the workers' queue in every healthy run
    return not native and "torch/utils/data/" in path and not path.endswith("pin_memory.py")


def _io_words(func):
    return set(func.lower().split("_")) & {"save", "load", "write", "read", "writes", "reads"}


def _checkpoint(func, path, native):
    if native:
        return False
    if any(p in path for p in SERIALIZATION_FILES):
        return bool(_io_words(func))  # save, _legacy_save, write_record, load, read_data ('thread' is no read)
    return func.lstrip("_") in SAVE_FUNCS


def _reading(func):
    return bool(_io_words(func) & {"load", "read", "reads"})


# the table, in order (the first row that matches the innermost frame that any row matches):
# (row, category, severity, what, matcher, why)
WHERE_TABLE = (
    ("collective", "nccl_deadlock", "warning", "waiting in %s", _collective,
     "a torch.distributed collective (or its wait): this rank waits for its peers; a rank waiting "
     "is not the culprit by itself"),
    ("cuda_stream_sync", "nccl_deadlock", "warning", "waiting in torch.cuda.%s", _cuda_python_sync,
     "torch.cuda.synchronize waits for the stream's kernels, a hung collective's among them"),
    ("dataloader", "dataloader", "warning", "waiting in the DataLoader (%s)", _dataloader,
     "torch.utils.data: the rank waits for a batch from its DataLoader (its workers' queue)"),
    ("checkpoint", "application", "warning", "in checkpoint I/O (%s)", _checkpoint,
     "checkpoint I/O (torch.save, safetensors, torch.distributed.checkpoint, a framework's save): "
     "the others wait while this rank reads or writes storage"),
)
# --native frames of a CUDA synchronisation: the CUDA runtime's/driver's synchronising calls,
# Tensor.item() (THPVariable_item -> at::native::_local_scalar_dense_cuda) and .cpu()/.tolist(),
# c10::cuda::device_synchronize, or any frame inside libcuda.so itself
CUDA_SYNC_ROW = ("cuda_sync", "unknown", "warning", "in CUDA synchronisation (%s): the GPU itself may be stuck",
                 None, "the CPU thread waits inside a CUDA synchronisation: the GPU's work never finished "
                       "(a hung kernel, a stuck GPU)")
_CUDA_SYNC_WORDS = ("Synchronize", "synchronize", "Memcpy", "_local_scalar_dense", "THPVariable_item",
                    "THPVariable_cpu", "THPVariable_tolist")


def is_native(path):
    """A --native frame: its 'file' is a shared object or a binary, not Python source."""
    return not path.endswith((".py", ".pyx", ">"))


def _cuda_sync(func, path):
    if "libcuda.so" in path or "libcudart" in path:
        return True
    return any(w in func for w in _CUDA_SYNC_WORDS) and (func.startswith(("cu", "c10::cuda", "at::cuda",
                                                                           "at::native", "THP")))


def classify(thread):
    """(row, frame index) of a thread's stack by WHERE_TABLE, else None."""
    frames = thread["frames"][:DEPTH]
    native = any(is_native(f[1]) for f in frames)
    for i, (func, path, _ln) in enumerate(frames):
        path = path.replace("\\", "/")
        for row in WHERE_TABLE:
            if row[4](func, path, is_native(path)):
                if is_native(path):  # c10d's C++ under a Python collective: name the collective
                    i = next((j for j in range(i + 1, len(frames)) if not is_native(frames[j][1])
                              and row[4](frames[j][0], frames[j][1].replace("\\", "/"), False)), i)
                return row, i
    fed = _waits_for_data(frames)
    if fed is not None:
        return WHERE_TABLE[2], fed
    if native:
        sync = [i for i, (func, path, _ln) in enumerate(frames) if is_native(path) and _cuda_sync(func, path)]
        named = [i for i in sync if not frames[i][0].startswith("0x")]
        if sync:
            return CUDA_SYNC_ROW, (named or sync)[0]
    return None


# a thread blocked on a queue or a lock (queue.get, threading's wait, multiprocessing's recv/poll) ...
_WAIT_FILES = ("threading.py", "queue.py", "queues.py", "connection.py")
# ... inside a data pipeline's own module (fairseq/data/iterators.py's buffered iterator, a framework's
# data_loader.py or datasets/ package): the framework's DataLoader, as torch.utils.data is torch's
_DATA_MODULE = re.compile(r"(?:^|/)(?:data|datasets?|dataloaders?|data_loaders?)/|(?:data_?loaders?|iterators?)\.py$", re.I)


def _waits_for_data(frames):
    """The index of the data-pipeline frame a thread waits under (its innermost frames a queue's or a
    lock's wait, within 3 frames of a data module's), else None."""
    i = 0
    while i < len(frames) and frames[i][1].replace("\\", "/").rsplit("/", 1)[-1] in _WAIT_FILES:
        i += 1
    if i == 0:
        return None
    for j in range(i, min(i + 3, len(frames))):
        path = frames[j][1].replace("\\", "/")
        # torch's own DataLoader is the table's row; its pin-memory and worker threads wait in every healthy run
        if _DATA_MODULE.search(path) and "torch/utils/data/" not in path:
            return j
    return None


def frame_text(frame):
    func, path, ln = frame
    return "%s (%s%s)" % (func, path, ":%d" % ln if ln is not None else "")


def _pick(threads):
    """The thread that says where the process is: the MainThread when a row matches it, else an
    active thread a row matches, else an idle one unless the MainThread is busy (active) in code
    no row knows; with no match, the MainThread, else the first active thread, else the first."""
    hits = [(t, classify(t)) for t in threads]
    main = next((t for t, _h in hits if t["name"] == "MainThread"), None)
    matched = [(t, h) for t, h in hits if h is not None]
    for t, h in matched:
        if t is main:
            return t, h
    for t, h in matched:
        if t["state"].startswith("active"):
            return t, h
    if matched and (main is None or not main["state"].startswith("active")):
        return matched[0]
    if main is not None:
        return main, None
    return next(((t, None) for t in threads if t["state"].startswith("active")), (threads[0], None))


def where(rec):
    """(what, category, severity, why): where the process's active (or main) thread is stuck,
    from its innermost frames by WHERE_TABLE; else "unknown", info, its top frames quoted."""
    threads = [t for t in rec["threads"] if t["frames"]]
    if not threads:
        return ("no Python stack in the dump", "unknown", "info",
                "py-spy printed no frames for this process's threads")
    thread, hit = _pick(threads)
    label = 'thread %s (%s%s)' % (thread["tid"], thread["state"],
                                  ', "%s"' % thread["name"] if thread["name"] else "")
    if hit is None:
        top = " <- ".join(frame_text(f) for f in thread["frames"][:3])
        return ("in " + top, "unknown", "info",
                "%s is in %s: no row of the where-table knows these frames" % (label, top))
    (row, category, severity, what, _m, why), i = hit
    frame = thread["frames"][i]
    return (what % frame[0], category, severity,
            "%s: %s%s; %s" % (label, frame_text(frame),
                              " (innermost: %s)" % frame_text(thread["frames"][0]) if i else "", why))


# ------------------------------------------------------------------ the job's dumps
def _voters(st):
    """The dumped ranks that vote on who the others wait for: top-level processes (not a
    --subprocesses child: a DataLoader worker) with a stack; one vote per pid (its last dump)."""
    last = {}
    for rec in st.pyspy:
        if rec["parent"] is None and any(t["frames"] for t in rec["threads"]):
            last[rec["pid"] if rec["pid"] is not None else id(rec)] = rec
    return list(last.values())


def _wheres(st):
    """{id(record): where(record)} of the job's dumps, read once when the logs are read (the
    culprits, the summary and the findings all ask; a record added since is read then)."""
    got = st.pyspy_wheres
    if got is None or len(got) != len(st.pyspy):
        got = st.pyspy_wheres = {id(r): where(r) for r in st.pyspy}
    return got


def _culprits(st, wheres):
    """(culprit records, waiting records): when most dumped ranks wait in a collective and one or
    a few (a quarter at most, at least one) are elsewhere, those few are the likely culprits."""
    voters = _voters(st)
    waiting = [r for r in voters if wheres[id(r)][1] == "nccl_deadlock"]
    others = [r for r in voters if wheres[id(r)][1] != "nccl_deadlock"]
    if others and len(waiting) >= len(others) and len(others) <= max(1, len(voters) // 4):
        return others, waiting
    return [], waiting


def culprit_ranks(st):
    """The ranks the dumps name as the likely culprits (see findings); [] when none or unknown."""
    wheres = _wheres(st)
    return sorted(set(r["rank"] for r in _culprits(st, wheres)[0] if r["rank"] is not None))


def summary(st):
    """What the dumps say of a hang, ranks known or not: {"waiting": dumped processes that wait in
    a collective, "elsewhere": the likely culprits (findings)}; {} without a dump."""
    if not st.pyspy:
        return {}
    wheres = _wheres(st)
    culprits, waiting = _culprits(st, wheres)
    return {"waiting": len(waiting), "elsewhere": len(culprits)}


def _who(recs):
    ranks = sorted(set(r["rank"] for r in recs if r["rank"] is not None))
    pids = [r["pid"] for r in recs if r["pid"] is not None]
    n = len(recs)
    parts = []
    if ranks:
        parts.append("rank%s %s" % ("s" if len(ranks) > 1 else "", ",".join(str(r) for r in ranks[:16])))
    if pids:
        more = "..." if len(pids) > 8 else ""
        parts.append("pid%s %s%s" % ("s" if len(pids) > 1 else "", ",".join(str(p) for p in pids[:8]), more))
    who = " / ".join(parts) or "an unnamed process"
    return ("%d processes (%s)" % (n, who)) if n > 1 else who


_KIND = {"dataloader": "logged_dataloader_error", "application": "logged_application_error",
         "unknown": "logged_error", "nccl_deadlock": "logged_error"}


def findings(st):
    """One finding per distinct place the dumped processes are in (ranks grouped), the likely
    culprits named. Kinds: logged_* (py-spy's name) -- a collective wait is logged_error (waiting names
    no cause), pyspy_collective_wait (an NCCL hang) when no dumped process is elsewhere -- and checkpoint_save_stall
    for a rank writing a checkpoint while other dumped ranks wait in a collective."""
    if not st.pyspy:
        return []
    wheres = _wheres(st)
    culprits, waiting = _culprits(st, wheres)
    blamed = set(id(r) for r in culprits)
    groups = {}
    for rec in st.pyspy:
        w = wheres[id(rec)]
        groups.setdefault((w[0], w[1], w[2], id(rec) in blamed), []).append(rec)
    ops = sorted(set(wheres[id(r)][0].replace("waiting in ", "") for r in waiting))
    ctx = {"waiting": waiting, "ops": ops, "culprits": _who(culprits) if culprits else None,
           "all_wait": len(waiting) == len(st.pyspy)}
    return [_finding(recs, wheres[id(recs[0])], key[3], ctx) for key, recs in list(groups.items())[:MAX_GROUPS]]


def _finding(recs, w, blamed, ctx):
    what, category, severity, why = w
    first = recs[0]
    kind = _KIND.get(category, "logged_error")
    cat = None if kind != "logged_error" else "unknown"
    waiting = set(map(id, ctx["waiting"])) - set(map(id, recs))
    if category == "application" and waiting and not _reading(what.rsplit("(", 1)[-1].rstrip(")")):
        kind, cat, severity = "checkpoint_save_stall", None, None  # writing while the others wait
    msg = "py-spy dump: %s %s %s (%s)" % (_who(recs), "is" if len(recs) == 1 else "are", what,
                                          why.split("; ", 1)[0])
    if blamed:
        msg += ("; the %d other dumped process(es) wait in collectives (%s): %s the likely culprit%s"
                % (len(waiting), ", ".join(ctx["ops"][:6]), "it is" if len(recs) == 1 else "they are",
                   "" if len(recs) == 1 else "s"))
        if severity == "info":
            severity = "warning"
    elif category == "nccl_deadlock" and ctx["all_wait"] and not ctx["culprits"]:
        # nobody dumped is elsewhere: the job hangs in NCCL
        kind, cat = "pyspy_collective_wait", None
        msg += ("; no dumped process is elsewhere: the job hangs in NCCL, and the rank that did not arrive is "
                "among those not dumped (waiting names no cause by itself)")
    elif category == "nccl_deadlock":
        msg += "; waiting in a collective names no cause by itself"
        if ctx["culprits"]:
            msg += " (the likely culprit, elsewhere: %s)" % ctx["culprits"]
    ranks = sorted(r["rank"] for r in recs if r["rank"] is not None)
    return finding(kind, msg + ".", evidence=first["evidence"], source=first["src"],
                   rank=ranks[0] if ranks else None, severity=severity, category=cat, name="py-spy")
