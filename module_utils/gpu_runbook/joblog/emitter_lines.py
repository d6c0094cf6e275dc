# SPDX-License-Identifier: Apache-2.0
"""The last reader of a job's lines: what no dedicated handler read (lines.py calls it for a
line that left the job's state as it was).

In order:

- Slurm's own words about the job (srun and slurmstepd, ``src/srun`` and
  ``src/slurmd/slurmstepd`` of SchedMD/slurm): a node that failed (``srun: error: Node
  failure on NODE``, ``*** JOB|STEP ID ON NODE CANCELLED AT TIME DUE TO NODE FAILURE ***``),
  a job cancelled by its time limit, by preemption or by a user;
- the markers of a run that ended well (``SUCCESS``: each with the program that prints it);
- the emitters' vocabularies (vocab/: NCCL, aws-ofi-nccl, PyTorch, Gloo, CUDA, rdma-core, UCX, Slurm,
  DCGM, NHC, Fabric Manager; Open MPI's help texts are read inside their frame of dashes by
  ompi_lines.py): a line one of their messages explains becomes a finding of that message's
  category (benign messages are explained and make none);
- last, error-like lines that nothing explains (``ERROR_LIKE``): kept, counted and quoted in
  one ``unexplained_errors`` finding: not understood, so never healthy.

Records go to the job state: ``st.slurm``, ``st.success`` and ``st.seen`` (vocab/reading.py:
per message, and per line shape of what nothing explains); job_findings.py makes the findings.
"""

import re

from ..vocab import continues_a_message, markers, match_line, xid_named
from ..linefamily import is_node_line
from ..vocab.reading import error_like
from .patterns import TQDM, unroutable
from .progress import one_bar
from .text import add

# PyTorch's 'Last error:' head, alone or after a tag a launcher puts before every line ('opt-1_3b.0 [stderr] ',
# a bracketed or colon-ended word, no blanks inside but the one before '[')
LAST_ERROR_HEAD = re.compile(r"^((?:[\w.\-]{1,80}(?: \[\w{1,20}\])?:? )?)Last error:\s*$")



# the tables of the programs whose lines a job's output carries (the kernel's and the node
# daemons' are read by the kernel-log reader)
JOB_TABLES = ("nccl", "ofi", "torch", "gloo", "cuda", "rdma", "ucx", "slurm", "dcgm", "nhc", "fabricmanager", "nvml", "container", "deepspeed",
              "ompi", "libfabric", "dcgmlog", "ray", "megatron", "pmix", "opensm")

# src/srun/srun_job.c / step_launch.c: 'srun: error: Node failure on %s'
NODE_FAILURE = re.compile(r"\bsrun: error: Node failure on ([A-Za-z0-9][\w.\-]{0,252})")
# src/slurmd/slurmstepd/req.c, slurmstepd.c: '*** %s ON %s CANCELLED AT %s DUE TO %s ***' and
# '*** %s ON %s CANCELLED AT %s ***' (by a user); %s a 'JOB 77' / 'STEP 77.0' id
CANCELLED = re.compile(r"\*\*\* (JOB|STEP) ([0-9][\w.+]{0,40}) ON ([A-Za-z0-9][\w.\-]{0,252}) CANCELLED AT "
                       r"(\S{1,40})(?: DUE TO ([A-Z][A-Z ]{1,40}?))?(?: by \S{1,64})? \*\*\*")
# why Slurm cancelled: (kind, severity, what it means)
CANCEL_REASONS = {
    "NODE FAILURE": ("logged_node_failure", "critical", "a node of the job failed (Slurm's NODE_FAIL)"),
    "TIME LIMIT": ("logged_error", "warning",
                   "the job ran into its time limit: a job that hung keeps running until it does"),
    "PREEMPTION": ("logged_error", "info", "the job was preempted by another job: not a fault of the node"),
    "JOB REQUEUE": ("logged_error", "info", "the job was requeued"),
    None: ("logged_error", "info", "the job was cancelled (scancel)"),
}

# A run that ended well, as the program that ran it says so (first matching wins).
SUCCESS = (
    # huggingface/transformers src/transformers/trainer.py (_inner_training_loop)
    (re.compile(r"Training completed\. Do not forget to share your model"), "Hugging Face Trainer"),
    # ... which then logs the run's speed metrics (speed_metrics("train", ...): 'train_runtime' is
    # logged once, when training ended; its callbacks print the dict), and the example scripts'
    # trainer.log_metrics("train", metrics): print(f"***** {split} metrics *****")
    (re.compile(r"""['"]train_runtime['"]: ?\d|\*\*\*\*\* train metrics \*\*\*\*\*"""), "Hugging Face Trainer"),
    # ultralytics (YOLOv5/v8 train.py, engine/trainer.py): LOGGER.info(f"\n{epoch - start_epoch + 1} epochs
    # completed in {...:.3f} hours.") after the last epoch
    (re.compile(r"\b\d+ epochs completed in \d+(?:\.\d+)? hours\."), "Ultralytics YOLO"),
    # meta-llama/llama-recipes (llama-cookbook) src/llama_recipes/utils/train_utils.py train(): print("max
    # training steps reached, stopping training, total train steps finished: ", ...) (older: ..., total_train_steps:
    # ...), and finetuning.py main() printing train()'s results: [print(f'Key: {k}, Value: {v}') ...]
    (re.compile(r"\bmax training steps reached, stopping training\b|^Key: avg_train_prep, Value: "),
     "llama-recipes"),
    # Lightning src/lightning/pytorch/loops/fit_loop.py: rank_zero_info(f"`Trainer.fit` stopped: ...")
    (re.compile(r"`Trainer\.fit` stopped: `max_(?:epochs|steps)=\d+` reached"), "PyTorch Lightning"),
    # torch/distributed/elastic/agent/server/api.py: '[%s] worker group successfully finished.' and
    # 'Local worker group finished (WorkerState.SUCCEEDED)', 'Done waiting for other agents'
    (re.compile(r"worker group successfully finished|Local worker group finished \(WorkerState\.SUCCEEDED\)|"
                r"Done waiting for other agents"), "torchrun (elastic agent)"),
    # NVIDIA/Megatron-LM megatron/training/training.py: print_datetime('after training is done'), and
    # the two stops the run was told to make (--exit-interval, --exit-duration-in-mins; a checkpoint
    # is saved first): print_datetime('exiting program at iteration {}'), ('exiting program after
    # {} minutes'); 'exiting program after receiving SIGTERM.' is a cancel, not an end
    (re.compile(r"\[after training is done\]|\bexiting program at iteration \d+|"
                r"\bexiting program after \d+(?:\.\d+)? minutes"), "Megatron-LM"),
    # facebookresearch/fairseq fairseq_cli/train.py: logger.info("done training in {:.1f} seconds")
    (re.compile(r"\bdone training in \d+(?:\.\d+)? seconds"), "fairseq"),
    # pytorch/torchtitan torchtitan/train.py: logger.info("Training completed"), the last words of its line
    (re.compile(r"\bTraining completed\.?\s*$"), "torchtitan"),
    # microsoft/DeepSpeed deepspeed/launcher/launch.py: logger.info(f"Process {process.pid} exits successfully.")
    # for each rank that returned 0 (one that did not: "exits with return code = N", and the others killed)
    (re.compile(r"\bProcess \d+ exits successfully\."), "DeepSpeed launcher"),
    # mlcommons/logging mlperf_logging/mllog (constants.py RUN_STOP, STATUS, SUCCESS): the benchmark's
    # ':::MLLOG {..., "key": "run_stop", ..., "metadata": {..., "status": "success"}}' ("aborted": no end)
    # (its metadata is a file, a line number and the status: a few hundred characters; a bound of 4000
    # made each run_stop in a hostile 1 MiB line cost 4000 steps)
    (re.compile(r'"key": "run_stop",[^\n]{0,1000}?"status": "success"'), "MLPerf logging (mllog)"),
    # wandb/wandb wandb/sdk/wandb_run.py _display_exit_status: "Waiting for W&B process to finish..." then
    # "(success)" when the run finished with exit code 0 ("(failed N)" otherwise), and before 0.10
    # wandb/run_manager.py: "Program ended successfully." ("Program failed with code N")
    (re.compile(r"\bwandb: Waiting for W&B process to finish\.\.\. \(success\)|\bwandb: Program ended successfully\."),
     "Weights & Biases (the run's exit code 0)"),
)
# a literal every line SUCCESS reads holds: the prefilters (quiet.py, might_read) let those lines through
SUCCESS_WORDS = ("wandb: ", "Training completed", "train_runtime", "train metrics", "epochs completed in",
                 "max training steps reached", "Key: avg_train_prep", "Trainer.fit", "worker group", "WorkerState",
                 "Done waiting", "after training is done", "exiting program", "done training", "exits successfully",
                 '"key": "run_stop"', "been destroyed before", "not called before program exit")

# A process that reached its exit: PyTorch's ProcessGroupNCCL destructor warns when the program did
# not destroy its process group, and a destructor runs only when the interpreter shuts down (after
# the script ended, or after it printed an uncaught exception: that exception is then the job's
# failure); a process killed or aborted never prints it. Weaker than SUCCESS: a line nothing explains
# still leaves the end unknown (cluster._job_verdict). torch 2.4-2.7 and 2.8+ wordings (vocab/torch.py)
EXITS = (
    (re.compile(r"\bprocess group has NOT been destroyed before\b|"
                r"\bdestroy_process_group\(\) was not called before program exit\b"),
     "PyTorch (the process group's destructor ran at the process's exit)"),
)

# A training run's own progress lines, with no NCCL in them: a step/iteration/epoch counter and
# a loss ('step 1200 loss 2.31', Megatron's ' iteration  100/ 500000 | ... | lm loss: 7.1E+00 |',
# Hugging Face's "{'loss': 2.31, ..., 'epoch': 0.5}")
# (mmengine's log_processor.py: 'Epoch(train) [1][ 50/1000]', 'Iter(train) [ 50/1000]')
_STEP = re.compile(r"(?i)\b(?:global[ _])?(?:step|iter(?:ation)?s?|epoch|batch)\b(?:\((?:train|val|test)\))?['\"]?\s{0,4}[:=#]?"
                   r"\s{0,4}\[?\s{0,8}\d")
_LOSS = re.compile(r"(?i)\b(?:lm |train(?:ing)?[ _/]|val(?:id(?:ation)?)?[ _/])?loss\b['\"]?\s{0,4}[:=]?\s{0,4}[-+]?"
                   r"(?:\d{1,12}\.?\d{0,12}|\.\d{1,12})(?:[eE][-+]?\d{1,3})?")


# a run's own count of its steps against the steps it was told to run ('step:4740/4740',
# Megatron's 'iteration      500/     500 |', 'global_step 1000/1000'): steps and iterations
# count the whole run (an epoch's or a batch's count does not: 'Epoch 10/10' starts the last one)
STEP_OF = re.compile(r"(?i)\b(?:global[ _])?(?:step|iter(?:ation)?)s?\b['\"]?\s{0,4}[:=#]?\s{0,4}\[?\s{0,12}"
                     r"(\d{1,10})\s{0,2}/\s{0,12}(\d{1,10})\b")


# the run's own count of its epochs ('Epoch 2/2', 'epoch: [3/3]'), and a save of the model or its
# weights ('saving model to ./out', 'Saving model checkpoint to', 'model saved'): a trainer saves the
# model when an epoch ends, so a save after the last epoch began is that epoch's end
EPOCH_OF = re.compile(r"(?i)\bepoch\b['\"]?\s{0,4}[:=#]?\s{0,4}\[?\s{0,12}(\d{1,6})\s{0,2}/\s{0,12}(\d{1,6})\b")
SAVED_MODEL = re.compile(r"(?i)\b(?:sav(?:e|ed|ing)|writ(?:e|ing|ten))\b[^\n]{0,40}?\b(?:model|checkpoint|weights|"
                         r"adapters?)\b|\b(?:model|checkpoint|weights)\b[^\n]{0,20}?\bsaved\b")


def run_end(name, tail, st):
    """A training run that counted its steps to their total ended its work: the last step count
    among a file's last lines (``tail``) says N of N (N > 1), and no error-like line follows it
    (only where a loss line was read: 'Step 3/3' is also a Docker build's); or the last epoch
    count says N of N and the model was saved after it, with no error-like line after that (only
    in a training run's logs: its progress was read); or the run's one progress bar (it never
    restarted: no bar per epoch) reached its total and the model was saved after it."""
    training = st.training_lines or st.progress or st.hf_epoch is not None
    if not training:
        return
    saved = None
    for i in range(len(tail) - 1, -1, -1):
        line = tail[i]
        m = STEP_OF.search(line) if st.training_lines else None
        e = EPOCH_OF.search(line) if saved is not None and m is None else None
        if m is None and e is None and saved is not None and _one_bar_done(line, name, st):
            add(st.success, {"who": "its one progress bar at its total, then a save of the model",
                             "src": "%s (its end)" % name, "evidence": saved, "end": "step_count"})
            return
        if m is None and e is None:
            if error_like(line):
                return
            if saved is None and SAVED_MODEL.search(line):
                saved = line
            continue
        done, total = int((m or e).group(1)), int((m or e).group(2))
        if m is not None and done == total > 1:
            add(st.success, {"who": "its step count: step %d of %d" % (done, total),
                             "src": "%s (its end)" % name, "evidence": line, "end": "step_count"})
        elif e is not None and done == total:
            add(st.success, {"who": "its last epoch (%d of %d), then a save of the model" % (done, total),
                             "src": "%s (its end)" % name, "evidence": saved, "end": "step_count"})
        return


def _one_bar_done(line, name, st):
    """A tqdm bar's update at its total (N/N, N > 1), when the run's progress was one bar that never
    restarted (a bar per epoch reaches its total at every epoch's end)."""
    mt = TQDM.search(line) if "%|" in line else None
    if mt is None or mt.group("n") != mt.group("tot") or mt.group("nu") != mt.group("tu") or float(mt.group("n")) <= 1:
        return False
    return one_bar(st, name)


def emitter_markers():
    """The literals one of which every line of the job's emitters holds (their tables' MARKERS):
    the prefilter (quiet.py) must let those lines through to this reader."""
    return markers(JOB_TABLES)


_GATE = None


def might_read(text):
    """True when ``read`` could make something of a line: it holds a word of a failure, of
    Slurm, of a run's end, a loss, or an emitter's marker (one search)."""
    global _GATE
    if _GATE is None:
        words = ["srun", "***", "oss", "OSS", "rror", "RROR", "xception", "atal", "ATAL", "ailed",
                 "AILED", "ailure", "AILURE", "bort", "anic", "egmentation", "dumped", "illed", "imed out",
                 "TIMEOUT"] + list(SUCCESS_WORDS) + list(emitter_markers())
        _GATE = re.compile("|".join(re.escape(w) for w in sorted(set(words), key=len, reverse=True)))
    return _GATE.search(text) is not None


# ---------------------------------------------------------------- sacct's table
# src/sacct/print.c: a header of the chosen fields (JobID, JobName, State, ExitCode, NodeList, ...),
# a line of dashes under each (the fixed widths), then a row per job and step; with -P the fields
# are separated by '|' and there are no dashes. A row's State is one of the job states
# (src/common/slurm_protocol_defs.c job_state_string, 'CANCELLED by <uid>' with its canceller).
_SACCT_HEAD = re.compile(r"^\s{0,4}JobID\b")
_DASHES = re.compile(r"^\s{0,4}-{4,}(?: +-{2,}){1,60}\s*$")
SACCT_STATES = {
    "NODE_FAIL": ("logged_node_failure", "critical", "a node of the job failed (NODE_FAIL)"),
    "BOOT_FAIL": ("logged_node_failure", "critical", "a node of the job failed to boot (BOOT_FAIL)"),
    "OUT_OF_MEMORY": ("host_oom", "critical", "the job ran out of its memory (OUT_OF_MEMORY)"),
    "TIMEOUT": ("logged_error", "warning", "the job reached its time limit: it needed more time or hung until it "
                                            "(TIMEOUT)"),
    "DEADLINE": ("logged_error", "warning", "the job reached its deadline (DEADLINE)"),
    "FAILED": ("logged_error", "warning", "the job failed: a task exited non-zero (FAILED)"),
    "CANCELLED": ("logged_error", "info", "the job was cancelled (CANCELLED)"),
    "PREEMPTED": ("logged_error", "info", "the job was preempted (PREEMPTED)"),
    "REQUEUED": ("logged_error", "info", "the job was requeued (REQUEUED)"),
}

# a FAILED task's exit code that its shell set (POSIX XCU 2.8.2 "Exit Status for Commands"): the
# job's command line, not a node: the cause of the failure (critical), whatever else was logged
SHELL_EXITS = {
    "126": "the job's command was found but could not be run (exit code 126: not executable)",
    "127": "the job's command was not found (exit code 127: a wrong path or a missing environment)",
}


def sacct(line, fs, st):
    """A handler (lines.HANDLERS): sacct's header, its dashes and its rows (header -> columns)."""
    text = line.text
    if fs.sacct is None:
        if _SACCT_HEAD.match(text) and ("State" in text or "|" in text):
            sep = "|" if "|" in text else None
            fs.sacct = {"sep": sep, "cols": [c.strip().lower() for c in text.split(sep)], "spans": None}
            return True
        return _sacct_bare(line, st)
    if fs.sacct["sep"] is None and fs.sacct["spans"] is None and _DASHES.match(text):
        fs.sacct["spans"] = [(m.start(), m.end()) for m in re.finditer(r"-+", text)]
        return True
    cells = _cells(text, fs.sacct)
    if cells is None:
        fs.sacct = None  # the table ended
        return False
    row = dict(zip(fs.sacct["cols"], cells))
    state = (row.get("state") or "").split()
    if state:
        add(st.sacct, {"job": row.get("jobid"), "state": state[0].upper(), "detail": " ".join(state[1:]),
                       "exit": row.get("exitcode"), "nodes": row.get("nodelist"), "src": line.src,
                       "evidence": line.raw})
    return True


# a -P row without its header (sacct -n): a job id, then '|'-separated fields among which one is
# a job state and one an exit code 'N:S' -- both, or it is no sacct row (sacct -b -P -n prints
# JobID|State|ExitCode)
_BARE_ROW = re.compile(r"^\s{0,4}(\d{1,12}(?:_(?:\d{1,9}|\[[\d,%-]{1,40}\]))?(?:\.(?:batch|extern|interactive|\d{1,6}))?)"
                       r"\|(.{3,400})$")
_EXIT = re.compile(r"^\d{1,3}:\d{1,3}$")
_STATES = set(SACCT_STATES) | {"COMPLETED", "RUNNING", "PENDING", "SUSPENDED", "COMPLETING", "REVOKED", "SPECIAL_EXIT"}


def bare_sacct_row(text):
    """(job id, state words, exit code) of a -P row without its header, else None; a digit's value
    never decides it (quiet.py judges lines by their shape, digits written as 0)."""
    m = _BARE_ROW.match(text)
    if m is None:
        return None
    cells = [c.strip() for c in m.group(2).split("|")]
    state = next((c.split() for c in cells if c.split() and c.split()[0].upper() in _STATES), None)
    code = next((c for c in cells if _EXIT.match(c)), None)
    if state is None or code is None:
        return None
    return m.group(1), state, code


def _sacct_bare(line, st):
    row = bare_sacct_row(line.text)
    if row is None:
        return False
    job, state, code = row
    add(st.sacct, {"job": job, "state": state[0].upper(), "detail": " ".join(state[1:]), "exit": code,
                   "nodes": None, "src": line.src, "evidence": line.raw})
    return True


def _cells(text, table):
    """A row's cells by the header's separator or the dashes' widths; None: no row of it."""
    if not text.strip():
        return None
    if table["sep"]:
        cells = [c.strip() for c in text.split(table["sep"])]
        return cells if len(cells) >= len(table["cols"]) - 1 else None
    if table["spans"]:
        spans = table["spans"]
        cells = [text[a:(spans[i + 1][0] if i + 1 < len(spans) else len(text))].strip() for i, (a, _b) in
                 enumerate(spans)]
        return cells if cells and cells[0] else None
    cells = text.split()
    return cells if len(cells) == len(table["cols"]) else None


def sacct_findings(st):
    """What sacct said of the job: ([the finding of its worst state (a node failure first)], [],
    whether every row COMPLETED). A NODE_FAIL row's NodeList is every node of the job, not the one
    that failed: no culprit host is taken from it."""
    from ..findings import finding
    from .text import evidence
    rows = st.sacct
    if not rows:
        return [], [], False
    done = all(r["state"] == "COMPLETED" for r in rows)
    order = list(SACCT_STATES)
    bad = sorted((r for r in rows if r["state"] in SACCT_STATES), key=lambda r: order.index(r["state"]))
    if not bad:
        return [], [], done
    r = bad[0]
    kind, severity, what = SACCT_STATES[r["state"]]
    code = (r.get("exit") or "").split(":")[0]
    if r["state"] == "FAILED" and code in SHELL_EXITS:
        kind, severity, what = "logged_application_error", "critical", SHELL_EXITS[code]
    f = finding(kind, "sacct: job %s is %s%s%s: %s" % (r["job"], r["state"], " " + r["detail"] if r["detail"] else "",
                                                     " (exit code %s)" % r["exit"] if r.get("exit") else "", what),
                severity=severity, name="Slurm" if kind != "host_oom" else None,
                evidence=evidence(r["evidence"]), source=r["src"])
    return [f], [], done


def read(line, fs, st):
    """Read one line no other handler used; True when it was read as a job's (an error-like
    line nothing explains is kept, and is no sign of a job: False)."""
    text = line.text
    if is_node_line(text):
        return False  # a program's line through syslog/journald or a daemon's log: the node's (kernlog/nodelines.py)
    if "srun" in text or "***" in text:
        if _slurm(line, st):
            return True
    if ended(line, st):
        return True
    if ("oss" in text or "OSS" in text) and _LOSS.search(text) and _STEP.search(text):
        st.training_lines += 1
        return True
    if read_vocabulary(line, st, quote=False):
        return True
    if LAST_ERROR_HEAD.match(text):
        # the header PyTorch puts over NCCL's last error (c10d/NCCLUtils.cpp getNcclErrorDetailStr:
        # "\nLast error:\n" + ncclGetLastError()): the lines under it are NCCL's (nccl_words.read_bare)
        return True
    if error_like(text) and not continues_a_message(text, JOB_TABLES):
        st.seen.line(text, line.src, line.raw)
    return False


def ended(line, st):
    """True (and recorded) when the line is a trainer's or launcher's word that the run ended well
    (SUCCESS), or PyTorch's word that a process reached its exit (EXITS: end "exit")."""
    for rx, who in SUCCESS:
        if rx.search(line.text):
            add(st.success, {"who": who, "src": line.src, "evidence": line.raw})
            return True
    for rx, who in EXITS:
        if rx.search(line.text):
            add(st.success, {"who": who, "src": line.src, "evidence": line.raw, "end": "exit"})
            return True
    return False


# Gloo's pair could not connect to a loopback address (gloo/transport/tcp/pair.cc 'connect [%s]%s: %m'): a
# peer's address that resolved to this host itself, which no other node listens on
_GLOO_LOOPBACK = re.compile(r"\bconnect \[(?:127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1|::ffff:127\.[\d.]{5,11})\]")
_GLOO_LOOPBACK_MEANS = ("Gloo could not connect to a peer at a loopback address: the peer's address resolved to this "
                        "host itself (a host name /etc/hosts maps to 127.0.1.1, MASTER_ADDR=localhost on several "
                        "nodes), which no other node listens on: set GLOO_SOCKET_IFNAME to the real interface, or "
                        "fix the name's address")


# A connection that failed to an address no other node can be reached at (patterns.unroutable:
# loopback, link-local, docker0's 172.17.0.1): the transport chose the wrong interface, not a
# broken network. The addresses a line names: IPv4, ::1 and fe80::/10 between non-address characters
_ADDRESS = re.compile(r"(?<![\w.:])(?:\d{1,3}(?:\.\d{1,3}){3}|::1|fe[89ab][0-9a-f]:[0-9a-f:]{0,40})(?![\w.])", re.I)
_UNREACHABLE_MEANS = ("A connection to %s failed: %s, an address no other node is reached at (it is the same on "
                      "every host), so the transport chose the wrong interface: set UCX_NET_DEVICES / "
                      "NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME (or Open MPI's btl_tcp_if_include) to the interface "
                      "the nodes share")


def _unreachable_peer(text):
    """(address, what it is) of the first address ``text`` names that no other node is reached at, or None."""
    for m in _ADDRESS.finditer(text):
        a = m.group(0).lower()
        what = unroutable(a)
        if what is not None:
            return a, what
    return None


def _gloo_connect_row():
    """(gloo table, its pair's connect row) or None."""
    from ..vocab import ROW_FIELDS, table
    t = table("gloo")
    for r in t.rows if t is not None else ():
        if r[2].startswith("connect [%s]"):
            return t, dict(zip(ROW_FIELDS, r))
    return None


def read_vocabulary(line, st, quote=True):
    """The job's emitters' vocabularies read ``line``: its message is recorded (True), else,
    with ``quote``, the line is kept as one nothing explains (st.seen, vocab/reading.py)."""
    # (an Xid a line names outside the kernel's own lines: a site check's 'Found XID errors: 63')
    m = match_line(line.text, JOB_TABLES) or xid_named(line.text)
    loopback = "gloo" in line.text and _GLOO_LOOPBACK.search(line.text)
    if m is None and loopback:
        m = _gloo_connect_row()  # its format has too little text to be matched on its own (vocab.MIN_LITERAL)
    if m is not None:
        row = m[1]
        if loopback and m[0].name == "gloo":
            row = dict(row, kind="logged_nccl_config_error", category="nccl_config", meaning=_GLOO_LOOPBACK_MEANS)
        elif row["kind"] == "launch_rendezvous_timeout" and line.src.rsplit(":", 1)[0] in st.workers_failed:
            row = dict(row, severity="info", meaning=row["meaning"] + " (After a worker failed: the agents' teardown.)")
        elif row["category"] == "ib_network" and row["severity"] in ("warning", "critical"):
            peer = _unreachable_peer(line.text)
            if peer is not None:
                row = dict(row, kind="logged_nccl_config_error", category="nccl_config",
                           meaning=_UNREACHABLE_MEANS % peer)
        st.seen.message(m[0], row, line.src, line.raw, rank=line.rank)
        if line.host and m[1]["severity"] in ("warning", "critical") and line.host not in st.prefix_hosts and \
                len(st.prefix_hosts) < 64:
            st.prefix_hosts.append(line.host)  # the node a launcher's or slurmstepd's prefix names (launchers.py)
        return True
    if quote and not continues_a_message(line.text, JOB_TABLES):
        st.seen.line(line.text, line.src, line.raw)
    return False


def _slurm(line, st):
    text = line.text
    m = NODE_FAILURE.search(text)
    if m:
        add(st.slurm, {"kind": "node_failure", "node": m.group(1), "src": line.src, "evidence": line.raw})
        return True
    m = CANCELLED.search(text)
    if m:
        add(st.slurm, {"kind": "cancelled", "what": m.group(1).lower(), "id": m.group(2), "node": m.group(3),
                       "at": m.group(4), "reason": m.group(5), "src": line.src, "evidence": line.raw})
        return True
    return False


def logged_job_id(st):
    """The Slurm job id the job's own lines name -- slurmstepd's banner (STEP 4242.0, JOB 4242) or
    sacct's rows -- when they name one job; None otherwise."""
    ids = set(str(r.get("id") or "").split(".")[0] for r in st.slurm if r["kind"] == "cancelled")
    ids |= set(str(r.get("job") or "").split(".")[0] for r in st.sacct)
    ids.discard("")
    return ids.pop() if len(ids) == 1 else None


# ---------------------------------------------------------------- findings
def findings(st, existing):
    """The findings of what this reader recorded; a message a dedicated finding already
    quotes is not said twice."""
    from ..findings import finding
    from .text import evidence
    # a Python exception that raised an emitter's message quotes it, but only restates it: the
    # emitter's own meaning is said (job_findings drops the exception then)
    quoted = set(f.get("evidence") for f in existing if f.get("kind") != "python_exception")
    out = []
    for rec in st.slurm:
        if rec["kind"] == "node_failure":
            out.append(finding("logged_node_failure", "Slurm: node %s failed while the job ran (srun: Node failure "
                                                      "on %s)" % (rec["node"], rec["node"]),
                               name="Slurm", evidence=evidence(rec["evidence"]), source=rec["src"]))
            continue
        kind, severity, what = CANCEL_REASONS.get(rec["reason"], CANCEL_REASONS[None])
        out.append(finding(kind, "Slurm cancelled %s %s on %s at %s%s: %s" % (
            rec["what"], rec["id"], rec["node"], rec["at"], " due to %s" % rec["reason"].lower()
            if rec["reason"] else "", what), severity=severity, name="Slurm",
            evidence=evidence(rec["evidence"]), source=rec["src"]))
    if st.held and not (st.timeouts or st.desync_timeout or st.fr_missing) and not any(
            f["severity"] in ("warning", "critical") for f in existing + out):
        for line in st.held[:64]:  # context lines whose sequel never came: what they say alone
            read_vocabulary(line, st)
    out.extend(st.seen.findings(quoted, evidence))
    return out
