# SPDX-License-Identifier: Apache-2.0
"""Handlers of application and host errors: DataLoader worker deaths and timeouts, CUDA and
host OOM, CUDA errors, ``srun: error:`` lines, the torchrun failure summary, NCCL errors as
PyTorch raises them, world-size hints, and the exception line that ends a Python traceback.

A handler takes (line, file state, job state) and returns True when the line is fully read."""

import re

from .patterns import (COLL_MISMATCH, COLL_MISMATCH_OTHER, CUDA_DRIVER_OLD, CUDA_ERR, CUDA_OOM, DEVICE_ASSERT, DL_BUS, DL_EXITED, DL_KILLED, DL_TIMEOUT, ELASTIC_HOST, ELASTIC_RANK,
                       EXC_LINE, HOST_OOM, MSG_GLOBAL_RANK, NCCL_ERROR_IN, NCCL_ERROR_NAME, SRUN_ERR, SRUN_EXIT, STORE_BARRIER, TRACEBACK, WORLD)
from .text import add, task_list
from .emitter_lines import read_vocabulary

_DATALOADER = ((DL_KILLED, "dataloader_worker_killed"), (DL_EXITED, "dataloader_worker_exited"),
               (DL_TIMEOUT, "dataloader_timeout"), (DL_BUS, "dataloader_shm_bus_error"))


def dataloader(line, fs, st):
    text = line.text
    if "DataLoader" in text or "bus error encountered in worker" in text:
        for rx, kind in _DATALOADER:
            m = rx.search(text)
            if m:
                ev = {"kind": kind, "rank": line.rank, "src": line.src, "evidence": line.raw}
                if kind == "dataloader_worker_killed":
                    ev["signal"] = m.group(1).strip()
                add(st.events, ev)
                break
    return False


def memory_and_cuda(line, fs, st):
    """CUDA OOM, CUDA errors, host OOM (kernel or Slurm OOM killer)."""
    text = line.text
    base = {"rank": line.rank, "src": line.src, "evidence": line.raw}
    if line.host:
        base["prefix_host"] = line.host  # the host a launcher's prefix names (pdsh 'gpu-q-13: '): where it failed
    if "out of memory" in text.lower():
        m = CUDA_OOM.search(text)
        if m:
            add(st.events, dict(base, kind="cuda_oom", alloc=m.group(1)))
    if "CUDA" in text or "cuda" in text or "GPU" in text or "NVLink" in text or "Assertion `" in text:
        m = CUDA_ERR.search(text)
        what = m.group(1) if m else None
        if m is None and "Assertion `" in text:
            m = DEVICE_ASSERT.search(text)
            what = "device-side assert triggered (%s)" % m.group(1)[:120] if m else None
        if m:
            # NCCL-prefixed lines (which carry host and pid) never reach this handler; the rank a
            # watchdog names ('[PG ID 0 PG GUID 0(default_pg) Rank 2] Process group watchdog thread
            # terminated with exception: CUDA error: ...') when the line has no prefix of its own
            ev = dict(base, kind="cuda_error", what=what, host=None, pid=None)
            if not line.prefixed and "Rank" in text:
                mr = MSG_GLOBAL_RANK.search(text)
                if mr:
                    ev["rank"] = int(mr.group(1))
                    st.ranks_seen.add(ev["rank"])
            add(st.events, ev)
    if "driver" in text or "HW" in text:
        m = CUDA_DRIVER_OLD.search(text)
        if m and not any(e["kind"] == "cuda_driver_old" for e in st.events[-8:]):
            add(st.events, dict(base, kind="cuda_driver_old", what=m.group(1)))
    ml = text.lower()
    if ("oom" in ml or "out of memory" in ml) and not text.startswith("srun: error:"):
        if HOST_OOM.search(text):
            # slurmstepd's 'Detected N oom_kill event in StepId=...' is the step's: srun -l labels it with
            # the task whose stream carried it, not the task that was killed (srun's own line names that one)
            add(st.events, dict(base, kind="host_oom", rank=None if "slurmstepd" in text else base.get("rank")))
    return False


# a process killed by SIGBUS for an address with no page behind it (BUS_ADRERR): UCX's handler ('Caught signal 7
# (Bus error: nonexistent physical address)', ucs/debug/debug.c), the shell's 'Bus error (core dumped)', Python's
# faulthandler, torchelastic's 'Signal 7 (SIGBUS) received'. Not BUS_MCEERR ('object-specific hardware error', a
# memory error) nor BUS_ADRALN (alignment)
_SIGBUS = re.compile(r"Caught signal 7 \(Bus error: nonexistent physical address|^\S{0,40}\s?Bus error \(core dumped\)|"
                     r"Fatal Python error: Bus error|Signal 7 \(SIGBUS\) received")
# a backtrace frame (UCX's ' 2 0x000000000007587d ncclGroupEnd()  ???:0', gdb's '#3 0x... in ncclShmOpen', glibc's
# 'libnccl.so.2(+0x489b1)') in NCCL's code
_NCCL_FRAME = re.compile(r"^\s{0,8}(?:#?\d{1,3}\s{1,4}0x[0-9a-fA-F]{4,16}\s[^\n]{0,300}?\bnccl|"
                         r"[^\n]{0,300}?libnccl[\w.\-]{0,20}\.so)", re.I)
SIGBUS_FRAMES = 40  # how far below the signal its backtrace is looked for


def sigbus_in_nccl(line, fs, st):
    """SIGBUS with NCCL's frames on the stack: NCCL maps its shared-memory segments from /dev/shm
    (src/misc/shmutils.cc, ncclShmOpen); a segment larger than what /dev/shm holds (a container's
    64 MB default) maps, and the first touch of a page /dev/shm cannot back kills the process with
    SIGBUS instead of an error NCCL could print: the set-up's /dev/shm, as NCCL's own shm failures."""
    text = line.text
    if "ignal" in text or "Bus error" in text:
        if _SIGBUS.search(text):
            fs.sigbus = line
            return False
    if fs.sigbus is None or ("ccl" not in text and "CCL" not in text):
        return False
    bus = fs.sigbus
    if line.lineno() - bus.lineno() > SIGBUS_FRAMES:
        fs.sigbus = None
        return False
    if _NCCL_FRAME.match(text):
        fs.sigbus = None
        add(st.nccl_words, {"kind": "nccl_shm_failed", "rank": bus.rank, "host": bus.host, "pid": None,
                            "src": bus.src, "evidence": bus.raw, "what": "SIGBUS with NCCL's frames on the stack",
                            "why": "a page of a shared-memory segment /dev/shm could not back"})
    return False


def collective_mismatch(line, fs, st):
    """TORCH_DISTRIBUTED_DEBUG=DETAIL: 'Detected mismatch between collectives on ranks. Rank 1
    is running collective: CollectiveFingerPrint(SequenceNumber=.., OpType=..), but Rank 7 is
    running collective: ...': the ranks issue different collectives (an application bug)."""
    text = line.text
    if "Detected mismatch between collectives" in text:
        m = COLL_MISMATCH.search(text)
        if m:
            mo = COLL_MISMATCH_OTHER.search(text, m.end())
            ranks = [int(m.group(1))] + ([int(mo.group(1))] if mo else [])
            seqs = [int(x) for x in (m.group(2), mo.group(2) if mo else None) if x is not None]
            if not any(e["kind"] == "collective_mismatch" and e["ranks"] == ranks for e in st.events[-8:]):
                add(st.events, {"kind": "collective_mismatch", "rank": line.rank if line.prefixed else None,
                                "ranks": ranks, "seqs": seqs, "src": line.src, "evidence": line.raw})
    return False


def srun_and_elastic(line, fs, st):
    """'srun: error: host: task N: ...' maps tasks to hosts (and reports Slurm's OOM kill);
    torchrun's failure summary ('host : x' then 'rank : N (local_rank: M)') does too."""
    text = line.text
    if "srun: error:" in text:  # also after slurmstepd's line, when a paste joined them
        m = SRUN_ERR.search(text)
        if m:
            tasks = task_list(m.group(2))
            for t in tasks:
                st.rank_host_weak.setdefault(t, m.group(1))
                st.ranks_seen.add(t)
            if "Out Of Memory" in m.group(3) and tasks:  # the tasks Slurm's cgroup OOM killer ended, on that node
                add(st.events, {"kind": "host_oom", "rank": tasks[0], "host": m.group(1), "src": line.src,
                                "evidence": line.raw})
            ex = SRUN_EXIT.match(m.group(3))
            add(st.srun_exits, {"tasks": tasks, "code": int(ex.group(1)) if ex else None, "how": m.group(3)[:80],
                                "src": line.src})
            # srun's own words (launch.c: an exit code, a signal): the vocabulary says what they are
            read_vocabulary(line, st, quote=False)
    elif ": " in text and (text.lstrip().startswith("host") or text.lstrip().startswith("rank")):
        m = ELASTIC_HOST.match(text)
        if m:
            fs.elastic_host = m.group(1)
        else:
            m = ELASTIC_RANK.match(text)
            if m and fs.elastic_host:
                r = int(m.group(1))
                st.rank_host_weak.setdefault(r, fs.elastic_host)
                st.local_rank_weak.setdefault(r, int(m.group(2)))
                fs.elastic_host = None
    return False


def nccl_error(line, fs, st):
    """'NCCL error ... unhandled system error', ncclRemoteError ...: one event per rank and
    error among the last few (PyTorch repeats them)."""
    text = line.text
    if "NCCL error" in text or "nccl" in text:
        m = NCCL_ERROR_IN.search(text)
        if m:
            what = NCCL_ERROR_NAME.get(m.group(1), m.group(1))
            if not any(e["kind"] == "nccl_error" and e["rank"] == line.rank and e["what"] == what
                       for e in st.events[-8:]):
                add(st.events, {"kind": "nccl_error", "what": what, "rank": line.rank, "src": line.src,
                                "evidence": line.raw})
    return False


def world_hints(line, fs, st):
    text = line.text
    if "orld" in text or "barrier" in text:
        for m in WORLD.finditer(text):
            st.world_hints.append(int(m.group(1)))
        m = STORE_BARRIER.search(text)
        if m:
            st.world_hints.append(int(m.group(2)))
    return False


def traceback(line, fs, st):
    """The exception line that ends a Python traceback (the first unindented line after it)."""
    text = line.text
    if TRACEBACK in text:
        fs.in_tb = True
        fs.tb_rank = line.rank
    elif fs.in_tb and text and not text[0].isspace():
        m = EXC_LINE.match(text.strip())
        if m:
            add(st.events, {"kind": "python_exception", "exc": m.group(1), "msg": m.group(2) or "",
                            "rank": fs.tb_rank if fs.tb_rank is not None else line.rank,
                            "src": line.src, "evidence": line.raw})
            fs.in_tb = False
    return False
