# SPDX-License-Identifier: Apache-2.0
"""Handlers of PyTorch ProcessGroupNCCL lines: watchdog timeouts and their 'last completed
work', 'watchdog got stuck', the TORCH_NCCL_DESYNC_DEBUG report, and the Flight Recorder
(fr_trace text and raw JSON dumps).

A handler takes (line, file state, job state) and returns True when the line is fully read."""

from .patterns import (BARRIER_FAILED, BARRIER_REACHED, BLOCKING_TIMEOUT, DESYNC_FINISHED, DESYNC_JOINED, DESYNC_MISSING, DESYNC_TIMEOUT_AT,
                       FR_COLLECTIVE, FR_JSON_NAME, FR_JSON_P2P, FR_JSON_RANK, FR_JSON_SEQ, FR_JSON_STATE, FR_MISSING,
                       FR_NOT_ALL, LAST_WORK, MSG_RANK, NUMEL_IN, OP_TYPES, OPTYPE, PG_ID, RAN_FOR, SEQ, TIMEOUT_MS)
from .text import add, ints


def watchdog(line, fs, st):
    text = line.text
    if "Watchdog caught collective operation timeout" in text:
        _timeout(line, st)
    elif text.startswith("WorkNCCL(") and st.timeouts and st.timeouts[-1]["seq"] is None and \
            st.timeouts[-1]["src"].rsplit(":", 1)[0] == line.src.rsplit(":", 1)[0]:
        _work_continued(line, st.timeouts[-1])
    elif "last completed" in text:
        m = LAST_WORK.search(text)
        if m:
            r = line.msg_rank(MSG_RANK.search(text))
            if r is not None:
                st.last_work[r] = (int(m.group(1)), int(m.group(2)), int(m.group(3)), line.src)
                mpg = PG_ID.search(text)
                for t in st.timeouts[-64:] if mpg else ():
                    # torch 2.3/2.4 names the group here ('[PG 5 Rank 3] Timeout at NCCL work: N, ...'), not
                    # on its '[Rank 3] Watchdog caught ...' line: the timeout of that rank and SeqNum is the group's
                    if t["rank"] == r and t["seq"] == int(m.group(1)) and t.get("pg") is None:
                        t["pg"] = mpg.group(1)
    if "Some NCCL operations have failed or timed out" in text:
        st.some_failed.append((line.msg_rank(MSG_RANK.search(text)), line.src, line.raw))
        add(st.held, line)
    if "ProcessGroup abort timed out" in text:
        # ProcessGroupNCCL's abort waits for ncclCommAbort with a timeout: the communicator's teardown hung
        st.abort_hung.append({"rank": line.msg_rank(MSG_RANK.search(text)), "src": line.src, "evidence": line.raw})
    if "watchdog got stuck" in text or "Heartbeat monitor timed out" in text:
        st.stuck.append({"rank": line.msg_rank(MSG_RANK.search(text)), "src": line.src, "evidence": line.raw})
    if BLOCKING_TIMEOUT.search(text) and "Watchdog" not in text:
        # TORCH_NCCL_BLOCKING_WAIT=1: the waiting call times out instead of the watchdog, same collective
        _timeout(line, st)
    return False


def _work(text):
    """What a WorkNCCL(...) says of its collective: seq, op, numel_in, timeout_ms, ran_ms (None where
    it says nothing)."""
    ms, mo = SEQ.search(text), OPTYPE.search(text)
    mn, mtm, mrf = NUMEL_IN.search(text), TIMEOUT_MS.search(text), RAN_FOR.search(text)
    return {"seq": int(ms.group(1)) if ms else None, "op": mo.group(1) if mo and mo.group(1) in OP_TYPES else None,
            "numel_in": int(mn.group(1)) if mn else None, "timeout_ms": int(mtm.group(1)) if mtm else None,
            "ran_ms": int(mrf.group(1)) if mrf else None}


def _work_continued(line, entry):
    """The WorkNCCL(...) of a timeout line a terminal wrapped onto the next line: its collective's."""
    work = _work(line.text)
    entry["seq"] = work.pop("seq")
    entry.update((k, v) for k, v in work.items() if v is not None)


def _timeout(line, st):
    """'[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=.., ...)'."""
    text = line.text
    r = line.msg_rank(MSG_RANK.search(text))
    mpg = PG_ID.search(text)
    entry = {"rank": r}
    entry.update(_work(text))
    entry.update({"pg": mpg.group(1) if mpg else None, "src": line.src, "evidence": line.raw})
    add(st.timeouts, entry)
    if r is not None:
        st.ranks_seen.add(r)


def desync_report(line, fs, st):
    text, src, raw = line.text, line.src, line.raw
    if "monitoredBarrier" in text:
        _monitored_barrier(text, src, raw, st)
        return False
    if st.barrier_missing and text.strip() == "Original exception:":
        return True  # the head over what rank 0's wait raised (monitoredBarrier: error + "\n Original exception: \n")
    if not ("lagging" in text or "collective #" in text or "Timeout at collective" in text):
        return False
    m = DESYNC_MISSING.search(text)
    if m:
        st.desync_missing.append((ints(m.group(1)), None, src, raw))
    m = DESYNC_JOINED.search(text)
    if m:
        st.desync_lagging.append((ints(m.group(1)), int(m.group(2)), "joined", src, raw))
    m = DESYNC_FINISHED.search(text)
    if m:
        st.desync_lagging.append((ints(m.group(1)), int(m.group(3)), "finished", src, raw))
    m = DESYNC_TIMEOUT_AT.search(text)
    if m:
        st.desync_timeout.append((int(m.group(1)), m.group(2), int(m.group(3)), src))
    return False


def _monitored_barrier(text, src, raw, st):
    """torch.distributed.monitored_barrier: rank 0 waits for every other rank and names those that did
    not come in time (the culprits, as a desync report does); a rank that came says so."""
    m = BARRIER_FAILED.search(text)
    if m:
        st.barrier_missing.append((ints(m.group(1)), int(m.group(2)), src, raw))
        st.barrier_waited.add(0)  # only rank 0 checks the others in (ProcessGroupGloo::monitoredBarrier)
    m = BARRIER_REACHED.search(text)
    if m:
        st.barrier_waited.add(int(m.group(1)))


def flight_recorder_text(line, fs, st):
    """fr_trace: 'Not all ranks joining collective N', then (same or a later line)
    'collective: nccl:all_reduce' and 'Missing ranks: {11}'."""
    text = line.text
    if "Not all ranks joining collective" in text:
        m = FR_NOT_ALL.search(text)
        seq = m.group(1) or m.group(2)
        fs.fr_missing_ctx = {"seq": int(seq) if seq else None, "op": None, "src": line.src, "raw": line.raw}
        mm = FR_MISSING.search(text)
        if mm:
            st.fr_missing.append((ints(mm.group(1)), fs.fr_missing_ctx["seq"], None, line.src, line.raw))
            fs.fr_missing_ctx = None
        else:
            add(st.held, line)
    elif fs.fr_missing_ctx is not None:
        mc = FR_COLLECTIVE.match(text)
        if mc:
            fs.fr_missing_ctx["op"] = mc.group(1)
        mm = FR_MISSING.search(text)
        if mm:
            c = fs.fr_missing_ctx
            st.fr_missing.append((ints(mm.group(1)), c["seq"], c["op"], c["src"], c["raw"]))
            fs.fr_missing_ctx = None
    return False


def flight_recorder_json(line, fs, st):
    """A raw Flight Recorder dump: entries of collective_seq_id / state / profiling_name,
    one per line or several on one line; the dump's rank from its "rank" field or the file."""
    text = line.text
    if not ("collective_seq_id" in text or "profiling_name" in text or "state" in text
            or "is_p2p" in text or '"rank"' in text):
        return False
    m = FR_JSON_RANK.match(text)
    if m and not fs.fr_cur:
        fs.fr_file_rank = int(m.group(1))
    for rx, key in ((FR_JSON_SEQ, "seq"), (FR_JSON_STATE, "state"), (FR_JSON_NAME, "op"), (FR_JSON_P2P, "p2p")):
        for m in rx.finditer(text):
            if key in fs.fr_cur and key in ("seq", "state"):
                fr_flush(fs, line.rank, st)
            fs.fr_cur[key] = m.group(1)
    if "seq" in fs.fr_cur and "state" in fs.fr_cur and "op" in fs.fr_cur:
        fr_flush(fs, line.rank, st)
    return False


def fr_flush(fs, rank, st):
    """Record the Flight Recorder entry being read (p2p entries and seq 0 do not count)."""
    cur, fs.fr_cur = fs.fr_cur, {}
    if fs.fr_file_rank is not None:
        rank = fs.fr_file_rank
    if rank is None or "seq" not in cur or "state" not in cur or cur.get("p2p"):
        return
    try:
        seq = int(cur["seq"])
    except ValueError:
        return
    if seq <= 0:
        return
    st.fr_entries.setdefault(rank, {})[seq] = (cur["state"], cur.get("op"))
