"""The last reader of a job's lines: what no dedicated handler read (lines.py calls it for a
line that left the job's state as it was).

In order:

- Slurm's own words about the job (srun and slurmstepd, ``src/srun`` and
  ``src/slurmd/slurmstepd`` of SchedMD/slurm): a node that failed (``srun: error: Node
  failure on NODE``, ``*** JOB|STEP ID ON NODE CANCELLED AT TIME DUE TO NODE FAILURE ***``),
  a job cancelled by its time limit, by preemption or by a user;
- the markers of a run that ended well (``SUCCESS``: each with the program that prints it);
- the emitters' vocabularies (vocab/: NCCL, PyTorch, CUDA, rdma-core, Slurm, DCGM, NHC,
  Fabric Manager): a line one of their messages explains becomes a finding of that message's
  category (benign messages are explained and make none);
- last, error-like lines that nothing explains (``ERROR_LIKE``): kept, counted and quoted in
  one ``unexplained_errors`` finding: not understood, so never healthy.

Records go to the job state: ``st.slurm``, ``st.success`` and ``st.seen`` (vocab/reading.py:
per message, and per line shape of what nothing explains); job_findings.py makes the findings.
"""

import re

from ..vocab import markers, match_line
from ..linefamily import is_node_line
from ..vocab.reading import error_like
from .text import add



# the tables of the programs whose lines a job's output carries (the kernel's and the node
# daemons' are read by the kernel-log reader)
JOB_TABLES = ("nccl", "torch", "cuda", "rdma", "slurm", "dcgm", "nhc", "fabricmanager")

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
    # Lightning src/lightning/pytorch/loops/fit_loop.py: rank_zero_info(f"`Trainer.fit` stopped: ...")
    (re.compile(r"`Trainer\.fit` stopped: `max_(?:epochs|steps)=\d+` reached"), "PyTorch Lightning"),
    # torch/distributed/elastic/agent/server/api.py: '[%s] worker group successfully finished.' and
    # 'Local worker group finished (WorkerState.SUCCEEDED)', 'Done waiting for other agents'
    (re.compile(r"worker group successfully finished|Local worker group finished \(WorkerState\.SUCCEEDED\)|"
                r"Done waiting for other agents"), "torchrun (elastic agent)"),
    # NVIDIA/Megatron-LM megatron/training/training.py: print_datetime('after training is done')
    (re.compile(r"\[after training is done\]"), "Megatron-LM"),
)

# A training run's own progress lines, with no NCCL in them: a step/iteration/epoch counter and
# a loss ('step 1200 loss 2.31', Megatron's ' iteration  100/ 500000 | ... | lm loss: 7.1E+00 |',
# Hugging Face's "{'loss': 2.31, ..., 'epoch': 0.5}")
_STEP = re.compile(r"(?i)\b(?:global[ _])?(?:step|iter(?:ation)?s?|epoch|batch)\b['\"]?\s{0,4}[:=#]?\s{0,4}\[?\s{0,8}\d")
_LOSS = re.compile(r"(?i)\b(?:lm |train(?:ing)?[ _/]|val(?:id(?:ation)?)?[ _/])?loss\b['\"]?\s{0,4}[:=]?\s{0,4}[-+]?"
                   r"(?:\d{1,12}\.?\d{0,12}|\.\d{1,12})(?:[eE][-+]?\d{1,3})?")


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
        words = ["srun", "***", "Training completed", "Trainer.fit", "worker group", "WorkerState", "Done waiting",
                 "after training is done", "oss", "OSS", "rror", "RROR", "xception", "atal", "ATAL", "ailed",
                 "AILED", "ailure", "AILURE", "bort", "anic", "egmentation", "dumped", "illed", "imed out",
                 "TIMEOUT"] + list(emitter_markers())
        _GATE = re.compile("|".join(re.escape(w) for w in sorted(set(words), key=len, reverse=True)))
    return _GATE.search(text) is not None


def read(line, fs, st):
    """Read one line no other handler used; True when it was read as a job's (an error-like
    line nothing explains is kept, and is no sign of a job: False)."""
    text = line.text
    if is_node_line(text):
        return False  # a program's line through syslog/journald or a daemon's log: the node's (kernlog/nodelines.py)
    if "srun" in text or "***" in text:
        if _slurm(line, st):
            return True
    for rx, who in SUCCESS:
        if rx.search(text):
            add(st.success, {"who": who, "src": line.src, "evidence": line.raw})
            return True
    if ("oss" in text or "OSS" in text) and _LOSS.search(text) and _STEP.search(text):
        st.training_lines += 1
        return True
    m = match_line(text, JOB_TABLES)
    if m is not None:
        st.seen.message(m[0], m[1], line.src, line.raw, rank=line.rank)
        return True
    if error_like(text):
        st.seen.line(text, line.src, line.raw)
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


# ---------------------------------------------------------------- findings
def findings(st, existing):
    """The findings of what this reader recorded; a message a dedicated finding already
    quotes is not said twice."""
    from ..findings import finding
    from .text import evidence
    quoted = set(f.get("evidence") for f in existing)
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
    out.extend(st.seen.findings(quoted, evidence))
    return out
