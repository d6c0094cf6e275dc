# SPDX-License-Identifier: Apache-2.0
"""How a job started and how its processes ended, as the launcher and NCCL's RAS report them:

* launch skew / rendezvous (PyTorch c10d): ``Timed out initializing process group in store
  based barrier on rank: 7, for key: store_based_barrier_key:1 (world_size=8, worker_count=4,
  timeout=0:30:00)``, ``DistStoreError: Timed out after 901 seconds waiting for clients. 1/2
  clients joined.`` (also ``workers``), ``The client socket has timed out after 600000ms while
  trying to connect to (host, 29500)``, ``The client socket has failed to connect to ...``,
  ``The connection to the C10d store has failed``, ``RendezvousTimeoutError``, ``[11] is
  setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store``:
  some ranks never reached the first barrier -- a launch, not a GPU;
* torchrun's failure summary and agent lines: ``exitcode  : -9 (pid: N)``, ``traceback :
  Signal 9 (SIGKILL) received by PID N``, ``failed (exitcode: -9) local_rank: 5 (pid: N)``:
  a process killed from outside (host OOM killer, Slurm memory limit, an operator);
* NCCL RAS (``ncclras``, NCCL >= 2.24): ``DEAD`` / ``INCOMPLETE`` sections (``Process P on node
  H managing GPU G``), per-communicator ``#0-0 (hash) INCOMPLETE|ERROR|MISMATCH`` with ``Rank R
  -- GPU G managed by process P on node H`` and ``N ranks have launched up to operation K``.

* OpenSSH's ``ssh: connect to host H port 22: No route to host``: a node a launcher or a pasted
  loop could not reach (host_unreachable, its node a culprit host).

Records go to ``st.launch`` and ``st.ras``; ``launch_findings`` and ``ras_culprits`` read them."""

import re

from ..findings import finding
from ..linefamily import prompt_host
from .patterns import ELASTIC_RANK
from .patterns import RANK_PREFIX
from .text import add, evidence, line_time

STORE_BARRIER = re.compile(r"[Tt]imed out initializing process group in store based barrier on rank:? ?(\d{1,7})"
                           r"(?:, for key: \S{1,200} \(world_size=(\d{1,7}), worker_count=(\d{1,7}))?")
STORE_CLIENTS = re.compile(r"Timed out after (\d{1,7}) seconds waiting for (?:clients|workers)\. ?(\d{1,7})/(\d{1,7})")
STORE_SOCKET = re.compile(r"(client socket has timed out after \d{1,12} ?m?s while trying to connect to|"
                          r"client socket has failed to connect to|connection to the C10d store has failed|"
                          r"RendezvousTimeoutError|RendezvousConnectionError|"
                          r"via c10d key-value store by key|Connection to the TCPStore)")
# DeepSpeed's launcher (deepspeed/launcher/launch.py sigkill_handler): "[cmd, ...] exits with return code = -9";
# the command's '--local_rank=N' says which process
EXIT_KILLED = re.compile(r"exitcode {0,8}: {0,4}-9\b|Signal 9 \(SIGKILL\) received by PID (\d{1,9})|"
                         r"failed \(exitcode: -9\) local_rank: (\d{1,6})|exits with return code = -9\b")
LOCAL_RANK_ARG = re.compile(r"'--local_rank=(\d{1,6})'")
# a checkpoint being written (HF Trainer 'Saving model checkpoint to', Megatron 'saving checkpoint at
# iteration', DeepSpeed 'Checkpoint global_step500 is about to be saved!', 'Saving latest checkpoint')
CKPT_SAVE = re.compile(r"\b[Ss]av(?:ing|e)\b[^\n]{0,60}?\b[Cc]heckpoint|\b[Cc]heckpoint\b[^\n]{0,60}?\b(?:is about to be saved|saving)\b")
# ... not a line that says a save failed or did not fit ('Failed saving model checkpoint', DeepSpeed's
# 'layout does not match ... the setting used to save the checkpoint'): the vocabularies read those
NOT_A_SAVE = re.compile(r"(?i)\bfail|\berror\b|\bnot\b|\bcannot\b|\bunable\b")
RAS_HEAD = re.compile(r"^(?:#\d{1,6}-\d{1,6} \([0-9a-fA-F]{1,16}\) )?(INCOMPLETE|DEAD|ERROR|MISMATCH|TIMEOUT)\s*$")
RAS_RANK = re.compile(r"^\s{1,8}Rank (\d{1,7})(?: has (?:status \w{1,20}|launched up to operation (\d{1,15})))?"
                      r"(?: -- GPU (\S{1,40}) managed by process (\d{1,9}) on node (\S{1,253}))?")
RAS_PROC = re.compile(r"^\s{1,8}Process (\d{1,9}) on node (\S{1,253}) managing GPUs? (\S{1,80})")
RAS_OPS = re.compile(r"^\s{1,8}(\d{1,7}) ranks? (?:have|has) launched up to operation (\d{1,15})")
RAS_DEAD_N = re.compile(r"(\d{1,7}) job process(?:es are| is) considered dead")


# OpenSSH's client could not connect (sshconnect.c ssh_connect_direct: "ssh: connect to host %s port %s:
# %s", strerror): a node a launcher, pdsh or a pasted loop could not reach -- down, wedged or off the network
SSH_CONNECT = re.compile(r"\bssh: connect to host ([A-Za-z0-9][\w.\-]{0,252}) port (\w{1,16}): ([^\n]{1,120})")


def remote_shell(line, fs, st):
    """OpenSSH's connect failure: the node it names did not answer (st.launch, kind ssh_unreachable)."""
    if "ssh: connect to host" not in line.text:
        return False
    m = SSH_CONNECT.search(line.text)
    if m is None:
        return False
    if not any(r["kind"] == "ssh_unreachable" and r["node"] == m.group(1) for r in st.launch):
        add(st.launch, {"kind": "ssh_unreachable", "node": m.group(1), "port": m.group(2), "why": m.group(3).strip(),
                        "rank": None, "src": line.src, "evidence": line.raw})
    return True


def shell_prompt(line, fs, st):
    """A shell prompt pasted with the output ('[alice@gpu-a-07 ~]$ python train.py'): the host the
    text was captured on (analysis: the culprit host when nothing else names one). Never takes the line."""
    host = prompt_host(line.raw)
    if host and host not in st.prompt_hosts:
        add(st.prompt_hosts, host)
    return False


def launch_and_exit(line, fs, st):
    text = line.text
    if ("heckpoint" in text) and ("av" in text) and CKPT_SAVE.search(text) and not NOT_A_SAVE.search(text):
        if not any(r["kind"] == "checkpoint_save" for r in st.launch[-4:]):
            add(st.launch, {"kind": "checkpoint_save", "rank": line.rank if line.prefixed else None,
                            "before_timeout": not st.timeouts, "src": line.src, "evidence": line.raw})
    if "exitcode" in text and ("failed (exitcode" in text or "ChildFailedError" in text) and len(st.workers_failed) < 64:
        st.workers_failed.add(fs.name)
    if "imed out" in text or "socket" in text or "C10d" in text or "Rendezvous" in text or "TCPStore" in text \
            or "key-value store" in text:
        _launch(text, line, st, after_failure=fs.name in st.workers_failed)
    if "-9" in text or "SIGKILL" in text:
        m = EXIT_KILLED.search(text)
        if m:
            rank = fs.exit_ctx if m.group(1) is None and m.group(2) is None else None
            if not any(r["kind"] == "sigkill" and r["src"].split(":")[0] == line.src.split(":")[0]
                       and r["rank"] == rank for r in st.launch[-4:]):
                ml = LOCAL_RANK_ARG.search(text) if m.group(2) is None else None
                add(st.launch, {"kind": "sigkill", "rank": rank if rank is not None else
                                (line.rank if line.prefixed else None),
                                "local_rank": int(m.group(2)) if m.group(2) else int(ml.group(1)) if ml else None,
                                "src": line.src, "evidence": line.raw})
    elif "rank" in text and ": " in text:
        m = ELASTIC_RANK.match(text)
        if m:
            fs.exit_ctx = int(m.group(1))
    return False


def _launch(text, line, st, after_failure=False):
    """A rendezvous or store record; ``after_failure``: torchrun already said a worker failed in this
    file, so a store the agents cannot reach any more is their teardown, not a launch that never met."""
    m = STORE_BARRIER.search(text)
    if m:
        rec = {"kind": "store_barrier", "rank": int(m.group(1)), "world": int(m.group(2)) if m.group(2) else None,
               "joined": int(m.group(3)) if m.group(3) else None}
    else:
        m = STORE_CLIENTS.search(text)
        if m:
            rec = {"kind": "store_clients", "rank": None, "world": int(m.group(3)), "joined": int(m.group(2))}
        else:
            m = STORE_SOCKET.search(text)
            if not m:
                return
            if after_failure:
                return
            rec = {"kind": "store_connect", "rank": line.rank, "world": None, "joined": None, "what": m.group(1)}
    if any(r["kind"] == rec["kind"] and r.get("rank") == rec["rank"] for r in st.launch[-8:]):
        return
    rec.update(src=line.src, evidence=line.raw)
    add(st.launch, rec)


def ras_report(line, fs, st):
    """The NCCL RAS report: its sections and the ranks/processes each names."""
    text = line.text
    if not text.strip():
        fs.ras_ctx = None
        return False
    m = RAS_HEAD.match(text)
    if m:
        fs.ras_ctx = {"section": m.group(1), "op": None, "ops": []}
        return True
    ctx = fs.ras_ctx
    if ctx is None:
        return False
    if not text[0].isspace():
        fs.ras_ctx = None
        return False
    m = RAS_OPS.match(text)
    if m:
        ctx["op"] = int(m.group(2))
        ctx["ops"].append((int(m.group(1)), int(m.group(2))))
        return True
    m = RAS_RANK.match(text)
    if m:
        op = int(m.group(2)) if m.group(2) else ctx["op"]
        if m.group(2):
            ctx["ops"].append((1, op))
        add(st.ras, {"section": ctx["section"], "rank": int(m.group(1)), "host": m.group(5), "gpu": m.group(3),
                     "op": op, "ctx": ctx, "src": line.src, "evidence": line.raw})
        return True
    m = RAS_PROC.match(text)
    if m:
        add(st.ras, {"section": ctx["section"], "rank": None, "host": m.group(2), "gpu": m.group(3), "op": None,
                     "ctx": ctx, "src": line.src, "evidence": line.raw})
        return True
    if ctx["section"] == "DEAD" and RAS_DEAD_N.search(text):
        add(st.ras, {"section": "DEAD", "rank": None, "host": None, "gpu": None, "op": None, "ctx": ctx,
                     "src": line.src, "evidence": line.raw})
        return True
    return False


# ------------------------------------------------------------------ culprits and findings

def _ras_stragglers(rec):
    """A MISMATCH outlier is a straggler only when its group launched fewer operations than
    the others (RAS prints the minority, ahead or behind)."""
    ops = [op for _n, op in rec["ctx"]["ops"]]
    return rec["op"] is not None and ops and rec["op"] < max(ops)


def ras_culprits(st):
    """(ranks, hosts) the RAS report names: dead or unresponsive processes, missing ranks,
    MISMATCH stragglers."""
    ranks, hosts = [], []
    for rec in st.ras:
        if rec["section"] == "MISMATCH" and not _ras_stragglers(rec):
            continue
        if rec["section"] not in ("DEAD", "INCOMPLETE", "MISMATCH"):
            continue
        if rec["rank"] is not None and rec["rank"] not in ranks:
            ranks.append(rec["rank"])
        if rec["host"] and rec["host"] not in hosts:
            hosts.append(rec["host"])
    return sorted(ranks), hosts


def launch_findings(st):
    out = []
    skew = [r for r in st.launch if r["kind"] not in ("sigkill", "checkpoint_save", "ssh_unreachable")]
    if skew:
        r = skew[0]
        joined = " (%s of %s ranks joined)" % (r["joined"], r["world"]) if r.get("world") else ""
        out.append(finding(
            "launch_rendezvous_timeout",
            "The job's ranks never all met at start-up%s: %s. Some ranks did not start, started late or cannot "
            "reach the rendezvous store (MASTER_ADDR/PORT): a launch problem, not a GPU fault." % (
                joined, "store-based barrier timed out" if r["kind"] == "store_barrier" else
                "the store waited for clients" if r["kind"] == "store_clients" else r.get("what", "store")),
            evidence=evidence(r["evidence"]), source=r["src"], rank=r.get("rank")))
    for r in [x for x in st.launch if x["kind"] == "sigkill"][:1]:
        out.append(finding(
            "worker_sigkill",
            "%s was killed by SIGKILL (exit code -9): the host's OOM killer, the scheduler's memory limit or an "
            "operator killed it; the node's kernel log says which." % (
                "rank %s" % r["rank"] if r["rank"] is not None else
                "local rank %s" % r["local_rank"] if r["local_rank"] is not None else "a training process"),
            evidence=evidence(r["evidence"]), source=r["src"], rank=r["rank"]))
    for r in [x for x in st.launch if x["kind"] == "ssh_unreachable"][:16]:
        out.append(finding(
            "host_unreachable",
            "ssh could not reach %s (port %s: %s): the node is down, wedged or off the network -- or, when it "
            "refuses, its sshd is not running" % (r["node"], r["port"], r["why"]),
            evidence=evidence(r["evidence"]), source=r["src"]))
    out.extend(_ras_findings(st))
    ck = checkpoint_stall(st)
    if ck is not None:
        out.append(finding(
            "checkpoint_save_stall",
            "%s was writing a checkpoint when the others' collective began (%s); they timed out waiting for it: "
            "a save longer than the collective timeout, not a fault of the node." % (
                "rank %s" % ck["rank"] if ck["rank"] is not None else "a rank (rank 0's log)",
                "the watchdog fired %s after it" % ck["gap"] if ck.get("gap") else "before the first timeout"),
            evidence=evidence(ck["evidence"]), source=ck["src"], rank=ck["rank"]))
    return out


def checkpoint_stall(st):
    """A checkpoint save logged before the first watchdog timeout, by a rank that did not itself
    time out, within the collective's timeout window when both lines carry times."""
    if not st.timeouts:
        return None
    timed_out = set(t["rank"] for t in st.timeouts if t.get("rank") is not None)
    first = st.timeouts[0]
    fire = line_time(RANK_PREFIX.sub("", first.get("evidence") or ""), st.year, st.since_dt)
    for r in st.launch:
        if r["kind"] != "checkpoint_save" or not r["before_timeout"] or (r["rank"] is not None and r["rank"] in timed_out):
            continue
        saved = line_time(RANK_PREFIX.sub("", r["evidence"]), st.year, st.since_dt)
        out = dict(r)
        if saved is not None and fire is not None:
            window = (first.get("ran_ms") or first.get("timeout_ms") or 0) / 1000.0 + 120
            gap = (fire - saved).total_seconds()
            if gap < 0 or (window > 120 and gap > window):
                continue
            out["gap"] = "%d s" % gap
        return out
    return None


def _ras_findings(st):
    out = []
    dead = [r for r in st.ras if r["section"] in ("DEAD", "INCOMPLETE")]
    if dead:
        ranks, hosts = ras_culprits(st)
        out.append(finding(
            "nccl_ras_unresponsive",
            "NCCL RAS reports job processes %s%s%s: they stopped answering (crashed, hung, or their node went "
            "away)." % ("dead" if any(r["section"] == "DEAD" for r in dead) else "missing",
                        " (ranks %s)" % ",".join(str(x) for x in ranks) if ranks else "",
                        " on %s" % ", ".join(hosts) if hosts else ""),
            evidence=evidence(dead[0]["evidence"]), source=dead[0]["src"], rank=ranks[0] if ranks else None))
    mism = [r for r in st.ras if r["section"] == "MISMATCH"]
    if mism:
        lag = [r for r in mism if _ras_stragglers(r)]
        ops = sorted(set(op for _n, op in mism[0]["ctx"]["ops"]))
        out.append(finding(
            "nccl_ras_mismatch",
            "NCCL RAS: the communicator's ranks launched different numbers of collectives (%s)%s." % (
                " vs ".join(str(o) for o in ops) or "?",
                "; ranks %s are behind" % ",".join(str(r["rank"]) for r in lag) if lag else
                "; the ranks listed are ahead of the others, who never launched the next collective"),
            evidence=evidence(mism[0]["evidence"]), source=mism[0]["src"],
            rank=lag[0]["rank"] if lag else None))
    return out
