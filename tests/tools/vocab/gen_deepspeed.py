#!/usr/bin/env python3
"""Generate module_utils/gpu_runbook/vocab/deepspeed.py: the messages DeepSpeed prints or raises
in a training job's log (its runtime and ZeRO stages, pipeline and MoE code, checkpointing,
its communication layer and its launcher), read from the release's own source (the PyPI sdist).

    pip download deepspeed==0.19.8 --no-deps --no-binary :all: -d /tmp/ds
    mkdir /tmp/dssrc && tar xzf /tmp/ds/deepspeed-0.19.8.tar.gz -C /tmp/dssrc
    .venv/bin/python tests/tools/vocab/gen_deepspeed.py --src /tmp/dssrc/deepspeed-0.19.8 \
        --older /tmp/dssrc/deepspeed-0.16.9 /tmp/dssrc/deepspeed-0.14.5 /tmp/dssrc/deepspeed-0.12.6 \
        /tmp/dssrc/deepspeed-0.10.3 /tmp/dssrc/deepspeed-0.9.5 /tmp/dssrc/deepspeed-0.8.3 /tmp/dssrc/deepspeed-0.7.7

``--older``: earlier releases (sdists unpacked the same way, each its own version.txt): a message
one of them prints in a wording the pin no longer has is a row too, its file written
``path@<version>`` (the newest release that has the wording), so logs of older installs are read.

What is read: every Python file under deepspeed/ (runtime, launcher, comm, utils, checkpoint,
moe, pipe, accelerator, ...; not the op builders, kernels, inference and tools that a training
job's log does not print): ``raise X(msg)``, ``assert cond, msg`` (printed as ``AssertionError:
msg``), logger.warning / error / exception / critical, ``log_dist(msg, level=logging.WARNING|
ERROR)``, warnings.warn and messages built into a *msg*/*message*/*err* variable (the site
reader is gen_torch.py's PyFile). Info and debug output is left out: it reports progress.

Classification: RULES below, first match wins, by file, site and keywords, each with its reason.
In short: what DeepSpeed raises or asserts is its check of the job's own configuration, model or
call order (application), but for its communication set-up (comm/, the launcher's hostfile and
environment: nccl_config); its warnings are advice about configuration, precision or
performance (fp16 overflow and loss scaling, allocator cache flushes under memory pressure,
deprecations): benign, unless they name a failure (info: explained, no cause named); logged
errors name no cause by themselves (unknown, warning)."""

import argparse
import ast
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402
from gen_torch import PyFile, exception_classes, printed_lines  # noqa: E402

sys.path.insert(0, os.path.join(common.REPO, "module_utils"))
from gpu_runbook.taxonomy import KINDS  # noqa: E402

GENERATOR = "tests/tools/vocab/gen_deepspeed.py"
PIN = "0.19.8"
EMITTER = "DeepSpeed"
# what a training job's log prints from; op_builder/, ops/, inference/, autotuning/, compression/,
# model_implementations/, module_inject/ (inference kernels and tooling) are left out
DIRS = ("deepspeed/runtime/", "deepspeed/launcher/", "deepspeed/comm/", "deepspeed/utils/", "deepspeed/checkpoint/",
        "deepspeed/moe/", "deepspeed/pipe/", "deepspeed/accelerator/", "deepspeed/elasticity/", "deepspeed/sequence/",
        "deepspeed/monitor/", "deepspeed/__init__.py", "accelerator/")
APP, ERR, CFG = "logged_application_error", "logged_error", "logged_nccl_config_error"
B = "benign"
_FAILING = r"(?i)\b(fail|failed|failure|error|timed? ?out|hang|hung|mismatch|not match|corrupt|crash|nan\b|inf\b)"

RULES = (
    # ... until the scale is at its minimum: the loss overflows at every step (the training diverged) and
    # loss_scaler.py raises to end the run
    (r"", r"", r"loss scale already at minimum", APP, "critical",
     "fp16 dynamic loss scaling reached its minimum scale: the loss overflows at every step (the training "
     "diverged: NaN/Inf gradients, a learning rate too high, bad data), and DeepSpeed ends the run"),
    # fp16 dynamic loss scaling: an overflow skips a step and lowers the scale, by design
    (r"", r"", r"(?i)overflow|loss.?scal|skipping step", B, "ok",
     "fp16 dynamic loss scaling skipped a step and lowered the scale: expected, not a fault"),
    (r"", r"^(warning|built)$", r"(?i)allocator cache flush|memory pressure",
     B, "ok", "ZeRO-3 had to flush PyTorch's allocator cache (memory pressure): slower, not a fault"),
    # the launcher: hostfile, resources, environment; its child's exit is read by the launch readers
    (r"^deepspeed/launcher/", r"", r"exits with return code", ERR, "warning",
     "a process the launcher started exited with an error code (its own log says why)"),
    (r"^deepspeed/launcher/", r"", r"(?i)unable to find hostfile|proceed with training with local",
     B, "ok", "no hostfile: the launcher runs on this machine only, as intended for one node"),
    (r"^deepspeed/launcher/", r"^(exception|warning|error|built)", r"", CFG, "warning",
     "the launcher's set-up (hostfile, hosts, slots, environment, ssh/pdsh) is wrong"),
    # the communication layer's set-up (backend, environment, process groups)
    (r"^deepspeed/comm/", r"^(exception|error)", r"(?i)MASTER_ADDR|MASTER_PORT|environment|env var|backend|"
     r"init|not initialized|world.?size|rank", CFG, "warning",
     "DeepSpeed's communication set-up (backend, rendezvous environment, process groups) is wrong"),
    (r"^deepspeed/comm/", r"^(exception|error)", r"", APP, "warning",
     "DeepSpeed's communication layer rejected a call (its arguments or group): the job's code"),
    # raised / asserted: a check of the run's configuration, model or call order
    (r"", r"^exception", r"", APP, "critical",
     "DeepSpeed rejected the run's configuration, model or call order (its own check): the job's code or "
     "config"),
    (r"", r"^assert", r"", APP, "critical",
     "a DeepSpeed assertion on the run's configuration, model or state failed: the job's code or config"),
    # logged errors name no cause by themselves
    (r"", r"^error", r"", ERR, "warning", "DeepSpeed logged an error that names no cause by itself"),
    # warnings that name a failure: explained as DeepSpeed's, no cause named
    (r"", r"^(warning|built)$", _FAILING, ERR, "info",
     "DeepSpeed's warning of a failed or skipped step of its own (it goes on; the line after says more)"),
    (r"", r"^(warning|built)$", r"", B, "ok",
     "DeepSpeed's advice about configuration, precision, performance or deprecation: no fault"),
)
_RULES = common.compile_rules(RULES)
# literals of the messages themselves a line holds (the engine reads a line's message, its log prefix
# '[2024-06-20 10:00:00,000] [WARNING] [stage3.py:2069:step] ' aside): a row holding none is left out. Words
# of DeepSpeed's own things only: the job reader's prefilter lets every line holding a marker through, so a
# word every training log prints ('rank', 'config', 'layer', 'batch size', Megatron's 'loss scale: 1.0' on every
# iteration line) would cost every log its speed
MARKERS = ("ZeRO", "zero", "Zero", "DeepSpeed", "deepspeed", "partition", "offload", "heckpoint", "xpert",
           "loss scale already at minimum", "hostfile", "micro_batch", "train_batch", "nvme", "NVMe", "exits with return code",
           "disagreement")
TEMPLATE = "[2024-06-20 10:00:00,000] [WARNING] [{file}:{line}:step] {message}"


def classify(path, site, fmt):
    return common.rule_class(_RULES, KINDS, path, site, fmt)


class DsFile(PyFile):
    """PyFile's sites, with ``assert cond, msg`` and log_dist(msg, level=logging.WARNING|ERROR)."""

    def sites(self):
        out = super().sites()
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Assert) and node.msg is not None and self._has_literal(node.msg):
                out.append((node.lineno, "assert", self.expr(node.msg)))
            elif isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("log_dist", "log_dist_once") \
                    and node.args and self._has_literal(node.args[0]):
                level = next((k.value for k in node.keywords if k.arg == "level"), None)
                name = getattr(level, "attr", "")
                if name in ("WARNING", "WARN", "ERROR", "CRITICAL"):
                    out.append((node.lineno, "warning" if name.startswith("WARN") else "error",
                                self.expr(node.args[0])))
        return out


def keep(site, fmt):
    from gpu_runbook import vocab
    if site in ("info", "template"):
        return False
    if site == "built" and " " not in fmt.strip():
        return False
    return vocab.matchable(fmt)


def py_files(src):
    out = []
    for root, _dirs, files in os.walk(src):
        for name in files:
            if name.endswith(".py"):
                rel = os.path.relpath(os.path.join(root, name), src).replace(os.sep, "/")
                if rel.startswith(DIRS) or rel in DIRS:
                    out.append(rel)
    return sorted(out)


def collect(src):
    files = py_files(src)
    texts = {}
    for p in files:
        with open(os.path.join(src, p), encoding="utf-8") as fh:
            texts[p] = fh.read()
    exceptions = {}
    for p in files:
        exceptions.update(exception_classes(p, texts[p]))
    rows, unmarked = [], 0
    from gpu_runbook import vocab
    for p in files:
        try:
            sites = DsFile(p, texts[p], exceptions).sites()
        except SyntaxError:
            continue
        for line, site, fmt in sites:
            lines = printed_lines(fmt)
            for f in (lines[:1] if site.startswith(("exception", "assert")) else lines):
                if not keep(site, f):
                    continue
                if site == "assert":
                    f = "AssertionError: " + f
                if not any(m in vocab.instantiate(f) for m in MARKERS):
                    unmarked += 1
                    continue
                kind, cat, sev, meaning = classify(p, site, f)
                rows.append((p, line, f, kind, cat, sev, meaning))
    return rows, unmarked, len(files)


def _version(src):
    with open(os.path.join(src, "version.txt")) as fh:
        return fh.read().strip()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", required=True, help="the unpacked sdist (deepspeed-VERSION/)")
    ap.add_argument("--older", nargs="*", default=[], help="earlier releases' unpacked sdists, newest first")
    args = ap.parse_args(argv)
    version = _version(args.src)
    if version != PIN:
        raise SystemExit("expected DeepSpeed %s, found %s" % (PIN, version))
    rows, unmarked, nfiles = collect(args.src)
    seen = set(r[2] for r in rows)
    for old in args.older:
        over = _version(old)
        more, _u, _n = collect(old)
        for r in more:
            if r[2] not in seen:
                seen.add(r[2])
                rows.append(("%s@%s" % (r[0], over),) + r[1:])
    counts = {}
    for r in rows:
        counts[r[3]] = counts.get(r[3], 0) + 1
    doc = (__doc__.split("\n\n", 3)[3] + "\n\nFiles read: %d; rows: %d (%s); left out for holding no marker: %d."
           % (nfiles, len(rows), ", ".join("%s %d" % kv for kv in sorted(counts.items())), unmarked))
    meta = {"EMITTER": EMITTER, "PROJECT": "DeepSpeed (microsoft/DeepSpeed)", "VERSION": version,
            "COMMIT": version, "LICENCE": "Apache-2.0 (DeepSpeed's LICENSE)",
            "ORIGIN": "https://pypi.org/project/deepspeed/%s/" % version, "GENERATOR": GENERATOR}
    path = common.write_table("deepspeed", meta, MARKERS, (("", TEMPLATE),), rows, doc=doc)
    print("%s: %d rows from %d files (%d unmarked left out)" % (path, len(rows), nfiles, unmarked))


if __name__ == "__main__":
    main()
