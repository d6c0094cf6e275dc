#!/usr/bin/env python3
"""Generate module_utils/gpu_runbook/vocab/megatron.py: the messages NVIDIA's Megatron-LM prints or
raises in a training job's log (Megatron-Core -- its parallel state, distributed data parallel,
optimizer, pipeline schedules, transformer layers, distributed checkpointing, datasets, the rerun
state machine's result validation -- and Megatron-LM's training loop; NeMo and Megatron-Bridge run
on the same core), read from the pinned release's PyPI sdist and the matching tag of
NVIDIA/Megatron-LM.

    pip download megatron-core==0.16.1 --no-deps --no-binary :all: -d /tmp/mcore
    pip download megatron-core==0.12.3 --no-deps --no-binary :all: -d /tmp/mcore
    pip download megatron-core==0.9.0 --no-deps --only-binary :all: -d /tmp/mcore   # no sdist
    pip download megatron-core==0.6.0 --no-deps --only-binary :all: -d /tmp/mcore   # no sdist
    (cd /tmp/mcore && tar xzf megatron_core-0.16.1.tar.gz && tar xzf megatron_core-0.12.3.tar.gz
     && mkdir w090 w060 && (cd w090 && unzip -q ../megatron_core-0.9.0-*.whl)
     && (cd w060 && unzip -q ../megatron_core-0.6.0-*.whl))
    .venv/bin/python tests/tools/vocab/gen_megatron.py --src /tmp/mcore/megatron_core-0.16.1 \
        --repo <NVIDIA/Megatron-LM.git> --older /tmp/mcore/megatron_core-0.12.3 /tmp/mcore/w090 /tmp/mcore/w060
    .venv/bin/python tests/tools/vocab/write_index.py

What is read: megatron/core/ from the sdist (0.9.0 and 0.6.0 were published as wheels only: their
unpacked wheels), and, since the sdist ships megatron/core only, the training loop
(megatron/training/: training.py, utils.py, checkpointing.py, initialize.py, arguments.py,
global_vars.py, async_utils.py, ft_integration.py, ...) and pretrain_gpt.py / pretrain_mamba.py
(the loss function's NaN checks) from the tag core_v<version> of NVIDIA/Megatron-LM (git show); the
generator checks that the tag's megatron/core is the sdist's, file for file. Left out: inference/,
export/, post_training/, tokenizers/, resharding/, quantization/ and the multimodal, vision and
retro models (a training job's log does not print them), and info/debug output but the start-up
and progress lines of START_INFO (read as benign). Sites: ``raise X(msg)``, ``assert cond, msg``
(printed as ``AssertionError: msg``: how Megatron reports a configuration error),
logger.warning / error / exception / critical, warnings.warn, ``log_single_rank(logger,
logging.WARNING|ERROR, msg)``, print_rank_0 / print / print_datetime of a message that names a
failure or a warning, messages built into a *msg*/*message*/*err* variable (gen_torch.py's PyFile),
and the rerun state machine's result validation as printed: each ``validate_result(message=...)``
of the release inside the formats that quote it ('Unexpected result %s on rank %s at iteration #%s
invocation #%s (message='found NaN in local grad norm ...')'), and each ``log_failure(msg)`` inside
its 'Rank %s, node %s, device %s, iteration #%s: %s!'.

``--older``: earlier releases (0.12.3, 0.9.0 of 2024, 0.6.0): a message one of them prints in a
wording the pin no longer has is a row ``path@<version>`` (the newest such release), so logs of
older installs (NeMo 1.x / 2.0 containers) are read.

Classification: RULES below, first match wins, each with its reason. In short: the rerun state
machine (megatron/core/rerun_state_machine.py validate_result) reruns an iteration whose result it
rejected (NaN, Inf, a spiky loss) first on the same GPU: a result that is not reproduced there
('First rerun: unexpected result is not reproducible within the tolerance', 'Possible transient
error!') is a transient fault of that GPU (gpu_hardware, warning); one reproduced there is rerun
from a checkpoint on another GPU: not reproduced on the other GPU ('Second rerun: ... not
reproducible on a different GPU, therefore was likely incorrect', 'Possible persistent error!')
is a persistent fault of the first GPU (gpu_hardware, warning; the line names the second GPU's
node, the first is the 'First rerun' line's), reproduced there ('Second rerun: ... reproducible on
a different GPU, therefore it was likely correct', 'Correct result (but possible Application
error)') is the application or its data (application, warning); the rejected result itself
('Unexpected result', 'found NaN in local grad norm', 'found NaN in local forward loss
calculation') is numerics that the line alone does not attribute (unknown, warning: the model or
a GPU's silent corruption). What Megatron raises or asserts is its check of the run's
configuration (parallel sizes that do not divide, batch sizes, arguments; application, critical,
as DeepSpeed's table), but a missing checkpoint at start (application, critical), a failed
checkpoint save or load and its file IO (unknown, warning), distributed initialisation and
timeouts (unknown, warning); logged errors name no cause (unknown, warning); the straggler
detector's periodic report is statistics (benign); warnings are advice about configuration,
performance or deprecation (benign), unless they name a failure (unknown, info)."""

import argparse
import ast
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402
from gen_torch import _PY_CONV, PyFile, exception_classes, printed_lines, py_braces, py_printf  # noqa: E402

sys.path.insert(0, os.path.join(common.REPO, "module_utils"))
from gpu_runbook.taxonomy import KINDS  # noqa: E402

GENERATOR = "tests/tools/vocab/gen_megatron.py"
PIN = "0.16.1"
EMITTER = "Megatron-LM"
# megatron/core, less what a training job's log does not print
CORE_SKIP = ("megatron/core/inference/", "megatron/core/export/", "megatron/core/post_training/",
             "megatron/core/tokenizers/", "megatron/core/resharding/", "megatron/core/quantization/",
             "megatron/core/models/multimodal/", "megatron/core/models/vision/", "megatron/core/models/retro/",
             "megatron/core/models/mimo/", "megatron/core/models/huggingface/", "megatron/core/models/backends.py",
             "/tests/", "/test_")
# the training loop (from the git tag): every module of megatron/training/ but these, and the scripts' loss checks
TRAINING_SKIP = ("megatron/training/wandb_utils.py", "megatron/training/one_logger_utils.py",
                 "megatron/training/theoretical_memory_usage.py", "megatron/training/yaml_arguments.py",
                 "megatron/training/dgrad_logging.py", "megatron/training/log_handler.py")
SCRIPTS = ("pretrain_gpt.py", "pretrain_mamba.py")

APP, ERR, GPU = "logged_application_error", "logged_error", "logged_gpu_error"
B = "benign"
_FAILING = r"(?i)\b(fail|failed|failure|error|unable|timed? ?out|hang|hung|mismatch|corrupt|crash|nan|inf|abort|exiting)"

# ---- classification ------------------------------------------------------------------------------
RULES = (
    # (file, site, message, kind, severity, meaning)
    # --- the rerun state machine (rerun_state_machine.py validate_result): the same GPU gave another result
    (r"", r"", r"(?i)First rerun: unexpected result is not reproducible|Possible transient error", GPU, "warning",
     "Megatron's result validation reran the iteration on the same GPU and got another result "
     "(rerun_state_machine.py validate_result, RERUNNING_IN_PLACE, comparison > tolerance): a transient fault of "
     "the GPU the line names (silent data corruption); drain and test that GPU if it recurs"),
    # ... another GPU did not reproduce what the first GPU reproduced twice: the first GPU is at fault
    (r"", r"", r"(?i)not reproducible on a different GPU|Possible persistent error", GPU, "warning",
     "Megatron's result validation reproduced a rejected result on the first GPU but not when the job resumed on "
     "another GPU (rerun_state_machine.py validate_result, RERUNNING_FROM_CHECKPOINT, comparison > tolerance): a "
     "persistent fault of the first GPU, the one the earlier 'First rerun: ... reproducible' line names (this "
     "line's node and device are the second GPU's)"),
    # ... another GPU reproduced it: the computation itself (the model, its data) gives that result
    (r"", r"", r"(?i)reproducible on a different GPU, therefore it was likely correct|"
     r"Correct result \(but possible Application error\)", APP, "warning",
     "Megatron's result validation got the same rejected result on another GPU (rerun_state_machine.py "
     "validate_result, RERUNNING_FROM_CHECKPOINT, within tolerance): not a GPU fault; the model, its "
     "hyper-parameters or its data produce it"),
    (r"", r"", r"(?i)Need to rerun on a different GPU|unexpected result is reproducible within the tolerance",
     ERR, "warning",
     "Megatron's result validation reproduced a rejected result on the same GPU (rerun_state_machine.py "
     "validate_result): not yet attributed; the job checkpoints and must resume on another GPU to tell a "
     "persistent GPU fault from the application"),
    (r"", r"", r"(?i)Got rescheduled on the same GPU|Need to restart job from the same checkpoint|"
     r"resume the job from (the same )?checkpoint|Exiting now\. (A checkpoint|Please resume)|"
     r"rerun the last iteration", ERR, "info",
     "a step of Megatron's result validation after a rejected result (the job exits to be resumed elsewhere; the "
     "'Unexpected result' and 'rerun' lines before it say what was found)"),
    (r"", r"", r"(?i)Need to rerun step to check reproducibility|Continuing normal execution because failed "
     r"validation|Will rerun step|Will skip these iterations|Will not skip these iterations", ERR, "info",
     "Megatron's result validation reruns or skips an iteration after a rejected result (the 'Unexpected result' "
     "line says which)"),
    (r"", r"", r"(?i)Injecting error type", B, "ok",
     "Megatron's result validation injects a fault on purpose (--error-injection-rate): a test, not a fault"),
    (r"", r"", r"(?i)Result validation enabled|RerunStateMachine (initialized|disabled)|Setting RerunStateMachine|"
     r"initialization of Rerun State Machine|RerunStateMachine checkpoints ONLY|Max value for ", B, "ok",
     "the rerun state machine's configuration (result validation on or off): no fault"),
    # --- the rejected result itself: NaN / Inf / a spiky loss; the line alone does not say whose
    (r"", r"", r"Unexpected result|found (NaN|Inf)\b|\bNaN\b[^-_]{0,40}\b(loss|grad)|(loss|grad)[^-_]{0,40}\b"
     r"(NaN|Inf)\b|[Ss]piky loss", ERR, "warning",
     "Megatron found NaN, Inf or an unexpectedly large value in a loss or a gradient norm: numerics (the model, "
     "its learning rate or data) or a GPU's silent corruption; the line alone does not say which (Megatron's "
     "result validation, --rerun-mode validate_results, reruns the iteration to tell)"),
    # --- the straggler detector (megatron/core/utils.py StragglerDetector): statistics every log interval
    (r"", r"", r"(?i)MnRtt/Rnk|Ranks with (lowest|highest) +Etpt|StragglerDetector|Controller ready to recv|"
     r"stragler handler|Start/Stop out of sync", B, "ok",
     "Megatron's straggler detector (--log-straggler) reports each interval the ranks with the least and the most "
     "time, power, temperature, clock and throughput: statistics of a healthy run too; a rank that is always the "
     "slowest is a slow GPU or node to look at"),
    # --- checkpoints: no tracker file under --load is a first run (checkpointing.py load_checkpoint: 'will not
    # load any checkpoints and will start from random'), unless --exit-on-missing-checkpoint stops the run
    (r"", r"", r"(?i)exit-on-missing-checkpoint", APP, "critical",
     "Megatron was told to stop when the checkpoint to load is missing (--exit-on-missing-checkpoint), and it is: "
     "the run's --load path or its storage"),
    (r"", r"^print$", r"(?i)could not find the metadata file|will not load any checkpoints and will start from random|"
     r"Checkpoint file not found in load directory .* attempting to finetune", B, "ok",
     "no checkpoint under --load: Megatron starts from random weights (or the pretrained checkpoint), as on a "
     "run's first start"),
    # training.py: the stops the run was told to make (--exit-interval, --exit-duration-in-mins), a checkpoint saved
    # first: a run that ended well (joblog/emitter_lines.py SUCCESS reads them so)
    (r"", r"", r"exiting program at iteration|exiting program after %s minutes", B, "ok",
     "the run stopped where it was told to (--exit-interval, --exit-duration-in-mins) after saving a checkpoint"),
    # training.py: --exit-signal-handler caught SIGTERM (a scheduler's cancel, a preemption): a checkpoint, then exit
    (r"", r"", r"exiting program after receiving SIGTERM", ERR, "info",
     "the run received SIGTERM (a cancel or a preemption by the scheduler) and exits after saving a checkpoint: "
     "not a fault of the run; the scheduler's lines say who sent it"),
    # --- checkpoints: none at start is the run's configuration; a failed save or load is IO or storage
    (r"", r"^(exception|assert|error|warning|built)", r"(?i)(no|not find|could not find|cannot find|does not "
     r"exist|not exist|doesn't exist|missing)\b.{0,60}\bcheckpoint|checkpoint.{0,60}\b(not found|does not exist|"
     r"doesn't exist|is missing|not exist)|tracker file.{0,40}(not found|does not exist)|Could not find the "
     r"checkpoint|No checkpoint|unable to load checkpoint", APP, "critical",
     "the checkpoint Megatron was told to load (--load, --pretrained-checkpoint) is not there: the run's "
     "configuration or its storage path"),
    # (a distributed checkpoint whose files or shards are missing or unreadable: a save cut short, the storage)
    (r"^megatron/core/dist_checkpointing/", r"^(exception|assert|error|built)", r"(?i)does not exist|not found|"
     r"Missing (loaded )?(item |tensor |object )?shard|could not be loaded|incomplete|corrupt", ERR, "warning",
     "Megatron could not read part of a distributed checkpoint (a file or shard missing or unreadable: a save that "
     "was cut short, the storage); or the checkpoint was saved for another model or parallel layout"),
    (r"", r"^(exception|assert|error|built|print)", r"(?i)Invalid metadata file|error parsing metadata file", ERR,
     "warning", "Megatron could not read the checkpoint's tracker file (latest_checkpointed_iteration.txt): a save "
     "cut short, or the storage"),
    (r"", r"^(exception|error|built|print)", r"(?i)(fail|failed|failure|error|unable|could not|couldn't|cannot)\b.{0,60}"
     r"\b(sav|load|writ|read|open|persist|finaliz)\w*|checkpoint.{0,60}\b(fail|failed|failure|corrupt)|"
     r"\b(OSError|IOError|No space left)", ERR, "warning",
     "Megatron could not save or load a checkpoint (file IO, the file system, an async save): the storage, or "
     "the checkpoint's files"),
    # --- distributed initialisation, rendezvous and timeouts: no cause named
    (r"", r"^(exception|error|built)", r"(?i)timed? ?out|timeout|not initialized|initialize.{0,30}(fail|error)|"
     r"init_process_group|distributed.{0,30}(fail|error)|process group.{0,40}(fail|error)", ERR, "warning",
     "Megatron's distributed set-up or a wait timed out or failed: the cause (a rank that did not come, the "
     "network, the store) is elsewhere in the log"),
    # --- out of memory, as Megatron words it
    (r"", r"^(exception|error|warning|built)", r"(?i)out of memory|\bOOM\b", "logged_memory_error", "warning",
     "Megatron reports running out of memory"),
    # --- deprecation and performance advice
    (r"", r"^(warning|built|print)$", r"(?i)deprecat|will be removed|end of life|no longer|is not supported "
     r"anymore|performance|slower|faster|recommend|consider|experimental", B, "ok",
     "Megatron's advice about deprecation, performance or an experimental feature: no fault"),
    # --- raised / asserted: Megatron's check of the run's configuration, model or call order
    (r"", r"^exception", r"", APP, "critical",
     "Megatron rejected the run's configuration, model or call order (its own check: parallel sizes, batch "
     "sizes, arguments, shapes): the job's code or config"),
    (r"", r"^assert", r"", APP, "critical",
     "a Megatron assertion on the run's configuration, model or state failed (how Megatron reports a "
     "configuration error: parallel sizes that do not divide, batch sizes, missing arguments): the job's code "
     "or config"),
    # --- logged errors name no cause
    (r"", r"^error$", r"", ERR, "warning", "Megatron logged an error that names no cause by itself"),
    # --- start-up and progress lines (START_INFO)
    (r"", r"^info$", r"", B, "ok", "Megatron's start-up or progress line: the run is going as it should"),
    # --- warnings that name a failure: Megatron's, it goes on
    (r"", r"^(warning|built|print)$", _FAILING, ERR, "info",
     "Megatron's warning of something that failed or was skipped (it goes on; the lines around it say more)"),
    (r"", r"^(warning|built|print)$", r"", B, "ok",
     "Megatron's advice about configuration, precision or performance: no fault"),
)
_RULES = common.compile_rules(RULES)

# the start-up and progress lines of a healthy run (print_rank_0 / print_datetime of training.py,
# initialize.py, checkpointing.py) and the straggler detector's report (logger.info), read as benign rows
START_INFO = re.compile(r"^(> initializing torch distributed|> initialized tensor model parallel|"
                        r"> initializing tensor model parallel|> initialized pipeline model parallel|"
                        r"> setting random seeds|done with setup|\[after megatron is initialized\]|"
                        r"\[after model, optimizer, and learning rate|\[after dataloaders are built\]|"
                        r"\[before the start of training step\]|> building train, validation, and test datasets|"
                        r"> finished creating|  successfully saved checkpoint|saving checkpoint at iteration|"
                        r" ?loading (distributed )?checkpoint from|  successfully loaded checkpoint|"
                        r"%s \| MnRtt/Rnk|\^\^\^\^ (Bottom|Top) +%s Ranks with)")
# print_rank_0 / print of a message that reports a failure or warns (the rest is progress)
PRINT_ERR = re.compile(r"(?i)\b(warning|error|fail|failed|failure|nan|inf|abort|exit|exiting|timed? ?out|not found|"
                       r"cannot|could not|unable|mismatch|deprecat|straggl)")

# literals of Megatron's own messages: the job reader's prefilter lets every line holding one through, so words
# every training log prints are not markers -- not 'iteration', 'loss', 'grad norm', 'learning rate', 'global batch
# size', 'nan' (Megatron's iteration line: ' iteration  100/ 500000 | consumed samples: ... | lm loss: ... | loss
# scale: 1.0 | grad norm: 0.6 | number of skipped iterations: 0 | number of nan iterations: 0 |'), nor a model
# config's keys a Hugging Face log dumps ('hidden_size', 'num_layers'), nor PyTorch's 'process group', 'FSDP'. A
# raised Megatron exception's line names its class ('megatron.core.dist_checkpointing.core.CheckpointingException:
# ...'); a message holding none is left out
MARKERS = ("Megatron", "megatron", "MCORE", "Rerun", "rerun", "Unexpected result", "found NaN", "found Inf",
           "transient error", "persistent error", "possible Application error", "failed validation",
           "Injecting error type", "skip these iterations",
           "tensor_model_parallel", "tensor-model-parallel", "tensor model parallel", "tensor-parallel",
           "tensor parallel", "pipeline_model_parallel", "pipeline-model-parallel", "pipeline model parallel",
           "pipeline-parallel", "pipeline parallel", "context_parallel", "context-parallel", "context parallel",
           "expert_model_parallel", "expert-model-parallel", "xpert", "virtual_pipeline", "virtual pipeline",
           "_parallel_size", "parallel size", "data-parallel", "data parallel", "data_parallel", "sequence_parallel",
           "sequence parallel", "sequence-parallel", "micro_batch", "micro-batch", "microbatch", "micro batch",
           "heckpoint", "dist_checkpointing", "sharded", "Sharded", "Transformer Engine", "TransformerEngine",
           "transformer_engine", "MoE", "pg_collection", "distributed optimizer", "DistributedOptimizer",
           "overlap_grad", "overlap_param", "CUDA graph", "cuda graph", "cuda_graph", "CudaGraph",
           "StragglerDetector", "MnRtt/Rnk", "Etpt", "torch distributed", "] datetime: ", "done with setup",
           "metadata file")
_QUOTE = re.compile(r"^ {0,3}(?:> ?){1,4}(?=\S)")  # findings.py _QUOTE_RE
TEMPLATE = "[2024-06-20 10:00:00] WARNING:megatron.core.utils:{message}"


def classify(path, site, fmt):
    return common.rule_class(_RULES, KINDS, path, site, fmt)


def _call_name(node):
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")


class MegatronFile(PyFile):
    """PyFile's sites, with ``assert cond, msg``, log_single_rank(logger, logging.LEVEL, msg),
    print_rank_0 / print / print_datetime of failures and START_INFO, validate_result's messages
    ("validate") and log_failure's ("failure")."""

    def _level_site(self, node):
        level = node.args[1] if len(node.args) > 1 else None
        name = getattr(level, "attr", "")
        if name in ("WARNING", "WARN"):
            return "warning"
        if name in ("ERROR", "CRITICAL", "FATAL"):
            return "error"
        if name == "INFO":
            return "info"
        return None

    def sites(self):
        # a message built into a variable is read below, with the site that raises, asserts or logs it
        out = [x for x in super().sites() if x[1] != "built"]
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Assert) and node.msg is not None and self._has_literal(node.msg):
                out.append((node.lineno, "assert", self.expr(node.msg)))
                continue
            if not isinstance(node, ast.Call):
                continue
            name = _call_name(node)
            if name in ("log_single_rank", "log_on_each_pipeline_stage") and len(node.args) > 2 and \
                    self._has_literal(node.args[2]):
                site = self._level_site(node)
                if site:
                    out.append((node.lineno, site, self.expr(node.args[2], printf=len(node.args) > 3)))
            elif name in ("print_rank_0", "print", "print_rank_last", "print_datetime") and node.args and \
                    self._has_literal(node.args[0]):
                fmt = self.expr(node.args[0])
                if name == "print_datetime":
                    fmt = "[" + fmt + "] datetime: %s "
                out.append((node.lineno, "print", fmt))
            elif name == "validate_result":
                msg = next((k.value for k in node.keywords if k.arg == "message"), None)
                if msg is not None and self._has_literal(msg):
                    out.append((node.lineno, "validate", self.expr(msg)))
            elif name == "log_failure" and node.args and self._has_literal(node.args[0]):
                out.append((node.lineno, "failure", self.expr(node.args[0])))
        for fn in ast.walk(self.tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.extend(self._built(fn))
        return out

    def _use_site(self, node):
        """The site of a statement that raises, asserts or logs a variable: (name, site) or None."""
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args and \
                isinstance(node.exc.args[0], ast.Name):
            return node.exc.args[0].id, "exception:" + _call_name(node.exc)
        if isinstance(node, ast.Assert) and isinstance(node.msg, ast.Name):
            return node.msg.id, "assert"
        if isinstance(node, ast.Call) and node.args:
            name = _call_name(node)
            arg = node.args[2] if name == "log_single_rank" and len(node.args) > 2 else node.args[0]
            if not isinstance(arg, ast.Name):
                return None
            if name == "log_single_rank":
                site = self._level_site(node)
                return (arg.id, site) if site else None
            if name in ("warning", "warn", "error", "exception", "critical", "fatal"):
                return arg.id, "warning" if name in ("warning", "warn") else "error"
            if name in ("print_rank_0", "print"):
                return arg.id, "print"
        return None

    def _built(self, fn):
        """The messages a function builds into a variable (``msg = f'...'``, ``msg += '...'``), each
        with the site that raises, asserts or logs the variable (else "built")."""
        own = [n for n in ast.walk(fn) if self._owner(fn, n)]
        uses = {}
        for n in own:
            u = self._use_site(n)
            if u and u[0] not in uses:
                uses[u[0]] = u[1]
        out, last = [], {}
        for n in sorted((n for n in own if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign))),
                        key=lambda n: n.lineno):
            tgt = n.targets[0] if isinstance(n, ast.Assign) and len(n.targets) == 1 else getattr(n, "target", None)
            if not isinstance(tgt, ast.Name) or n.value is None or not self._has_literal(n.value):
                continue
            wanted = re.search(r"(?i)(msg|message|^err|error_str|reason)", tgt.id) or tgt.id in uses
            if not wanted or not isinstance(n.value, (ast.JoinedStr, ast.BinOp, ast.Constant, ast.Call)):
                continue
            fmt = self.expr(n.value)
            if isinstance(n.value, ast.Constant) and isinstance(n.value.value, str):
                v = n.value.value
                fmt = py_printf(v) if _PY_CONV.search(v.replace("%%", "")) else (
                    py_braces(v) if re.search(r"\{\w*\}", v) else fmt)
            if isinstance(n, ast.AugAssign) and tgt.id in last and isinstance(n.op, ast.Add):
                i = last[tgt.id]
                out[i] = (out[i][0], out[i][1], out[i][2] + fmt)
                continue
            if fmt.replace("%s", "").strip():
                last[tgt.id] = len(out)
                out.append((n.lineno, uses.get(tgt.id, "built"), fmt))
        return out

    def _owner(self, fn, node):
        """True when ``node`` is ``fn``'s own (not a nested function's)."""
        if not hasattr(self, "_parents"):
            self._parents = {}
            for p in ast.walk(self.tree):
                for c in ast.iter_child_nodes(p):
                    self._parents[c] = p
        p = self._parents.get(node)
        while p is not None and not isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef)):
            p = self._parents.get(p)
        return p is fn

    def failure_formats(self):
        """The formats log_failure (a function validate_result defines) prints its message in."""
        out = []
        for fn in ast.walk(self.tree):
            if isinstance(fn, ast.FunctionDef) and fn.name == "log_failure":
                for node in ast.walk(fn):
                    if isinstance(node, ast.Call) and _call_name(node) in ("error", "warning") and node.args:
                        fmt = self.expr(node.args[0])
                        if fmt.endswith("%s!") and fmt not in out:
                            out.append(fmt)
        return out


def keep(site, fmt):
    from gpu_runbook import vocab
    if site == "template":
        return False
    if site == "info" and not START_INFO.match(fmt):
        return False  # info and debug output reports progress; the start-up lines are START_INFO's
    if site == "print" and not (START_INFO.match(fmt) or PRINT_ERR.search(fmt)):
        return False
    if site == "built" and " " not in fmt.strip():
        return False
    if fmt.lstrip().startswith("%s") and not re.search(r"[A-Za-z]{3,}.*[A-Za-z]{3,}", fmt.replace("%s", "")):
        return False
    return vocab.matchable(fmt)


# ---- the release's files ------------------------------------------------------------------------------
def _version(src):
    with open(os.path.join(src, "megatron", "core", "package_info.py")) as fh:
        text = fh.read()
    parts = [re.search(r"^%s = (\d+)" % k, text, re.M).group(1) for k in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(parts)


def core_files(src):
    out = {}
    for root, _dirs, files in os.walk(os.path.join(src, "megatron", "core")):
        for name in files:
            if name.endswith(".py"):
                rel = os.path.relpath(os.path.join(root, name), src).replace(os.sep, "/")
                if not any(s in rel for s in CORE_SKIP):
                    with open(os.path.join(src, rel), encoding="utf-8") as fh:
                        out[rel] = fh.read()
    return out


def release_files(src, repo):
    """{path: text} of one release: megatron/core from its package, the training loop and the scripts
    from the tag core_v<version> (whose megatron/core must be the package's); -> (version, commit, files)."""
    version = _version(src)
    tag = "core_v" + version
    commit = common.resolve(repo, tag)
    files = core_files(src)
    differ = [p for p in files if common.show(repo, commit, p) != files[p]]
    if differ:
        raise SystemExit("%s: %d files of megatron/core differ from the package, first %s" % (tag, len(differ), differ[0]))
    for p in common.ls_files(repo, commit, "megatron/training/") + list(SCRIPTS):
        if p.endswith(".py") and p.count("/") <= 2 and p not in TRAINING_SKIP:
            try:
                files[p] = common.show(repo, commit, p)
            except Exception:  # a script the release does not have
                continue
    return version, commit, files


# ---- rows -----------------------------------------------------------------------------------------
def _sites(files):
    exceptions = {}
    for p, text in files.items():
        try:
            exceptions.update(exception_classes(p, text))
        except SyntaxError:
            continue
    out, validate_formats, failure_formats = [], [], []
    for p in sorted(files):
        try:
            mf = MegatronFile(p, files[p], exceptions)
            sites = mf.sites()
        except SyntaxError:
            continue
        if p.endswith("rerun_state_machine.py"):
            failure_formats = mf.failure_formats()
            validate_formats = sorted(set(f for _l, s, f in sites if "(message='%s')" in f))
        for line, site, fmt in sites:
            out.append((p, line, site, fmt))
    # validate_result's and log_failure's messages, as the state machine prints them
    composed = []
    for p, line, site, fmt in out:
        if site == "validate":
            composed.extend((p, line, "validate", v.replace("(message='%s')", "(message='%s')" % fmt))
                            for v in validate_formats)
        elif site == "failure":
            sev = "error"
            composed.extend((p, line, sev, f[:-3] + fmt + "!") for f in failure_formats)
    plain = [s for s in out if s[2] not in ("validate", "failure") and s[3] not in failure_formats]
    return plain + composed, exceptions


def collect(files, dump=None):
    rows, unmarked, seen = [], 0, set()
    sites, exceptions = _sites(files)
    for p, line, site, fmt in sorted(sites, key=lambda x: (x[0], x[1], not x[2].startswith(
            ("exception", "assert")), x[2], x[3])):
        lines = printed_lines(fmt)
        for f in (lines[:1] if site.startswith(("exception", "assert")) else lines):
            if site in ("print", "info") and START_INFO.match(f):
                site = "info"
            if not keep(site, f):
                continue
            # a line that begins with '>' is read as a Markdown quote, its '>' dropped (findings.unpaste):
            # print_rank_0's '> initializing torch distributed ...', ">> '--exit-on-missing-checkpoint' set ..."
            f = _QUOTE.sub("", f, count=1)
            message = f  # what the rules read: the message, not its class's name
            if site == "assert":
                f = "AssertionError: " + f
            elif site.startswith("exception:") and exceptions.get(site[10:], "").startswith("megatron."):
                f = exceptions[site[10:]] + ": " + f  # Megatron's own class, as the traceback's last line names it
            if dump is not None:
                dump.append((p, line, site, f))
            if not common.holds_marker(f, MARKERS):
                unmarked += 1
                continue
            if f in seen:
                continue
            seen.add(f)
            kind, cat, sev, meaning = classify(p, "error" if site == "validate" else site, message)
            rows.append((p, line, f, kind, cat, sev, meaning))
    return rows, unmarked


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", required=True, help="the pin's unpacked sdist (holding megatron/core)")
    ap.add_argument("--repo", required=True, help="a clone or bare mirror of NVIDIA/Megatron-LM (its core_v tags)")
    ap.add_argument("--older", nargs="*", default=[], help="earlier releases' unpacked sdists or wheels, newest first")
    ap.add_argument("--dump", help="write every kept site (marked or not) to this file, and no table")
    args = ap.parse_args(argv)
    version, commit, files = release_files(args.src, args.repo)
    if version != PIN:
        raise SystemExit("expected megatron-core %s, found %s" % (PIN, version))
    dump = [] if args.dump else None
    rows, unmarked = collect(files, dump)
    nfiles = len(files)
    seen = set(r[2] for r in rows)
    older = []
    for old in args.older:
        over, _c, ofiles = release_files(old, args.repo)
        older.append(over)
        more, _u = collect(ofiles, dump)
        for r in more:
            if r[2] not in seen:
                seen.add(r[2])
                rows.append(("%s@%s" % (r[0], over),) + r[1:])
    if args.dump:
        with open(args.dump, "w") as fh:
            for d in dump:
                fh.write("%s:%s [%s] %s\n" % d)
        print("%d sites dumped" % len(dump))
        return
    for r in rows:
        common.check_class(r[3], r[4], r[5], KINDS)
    counts = {}
    for r in rows:
        counts[r[3]] = counts.get(r[3], 0) + 1
    doc = (__doc__.split("\n\n", 2)[2] + "\n\nFiles read at the pin: %d; rows: %d (%s); left out for holding no "
           "marker: %d." % (nfiles, len(rows), ", ".join("%s %d" % kv for kv in sorted(counts.items())), unmarked))
    meta = {"EMITTER": EMITTER, "PROJECT": "Megatron-LM / Megatron-Core (NVIDIA/Megatron-LM)", "VERSION": version,
            "COMMIT": commit, "LICENCE": "BSD-3-Clause (megatron-core's; Megatron-LM's LICENSE)",
            "ORIGIN": "https://pypi.org/project/megatron-core/%s/ (sdist: megatron/core) and "
                      "https://github.com/NVIDIA/Megatron-LM/tree/core_v%s (megatron/training, pretrain_gpt.py)"
                      % (version, version), "GENERATOR": GENERATOR}
    path = common.write_table("megatron", meta, MARKERS, (("", TEMPLATE),), rows, doc=doc)
    print("%s: %d rows from %d files (%d unmarked left out); %s" % (path, len(rows), nfiles, unmarked, counts))


if __name__ == "__main__":
    main()
