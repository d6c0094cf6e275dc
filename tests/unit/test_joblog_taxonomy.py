"""joblog against the taxonomy: every finding it emits is a declared kind with an action in
both languages, its remedy is the kind's, and no input -- garbage, binary, one huge line, a
bug in a handler -- makes parse_job_logs raise."""

import ast
import os
import random

import pytest

from gpu_runbook import joblog
from gpu_runbook.joblog import lines, parse_job_logs
from gpu_runbook.taxonomy import KINDS, action_text, kinds_job, kinds_vocab

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "joblog")
PKG = os.path.dirname(joblog.__file__)
CASES = sorted(os.listdir(FIX))


def load(case):
    d = os.path.join(FIX, case)
    out = {}
    for name in sorted(os.listdir(d)):
        if name != "case.json":
            with open(os.path.join(d, name), newline="") as fh:
                out[name] = fh.read()
    return out


@pytest.mark.parametrize("case", CASES)
def test_every_finding_has_a_declared_kind_and_an_action(case):
    _job, findings = parse_job_logs(load(case))
    for f in findings:
        info = KINDS.get(f["kind"])
        # the job's own kinds, or an emitter's message read through its vocabulary (kinds_vocab)
        assert info is not None and (f["kind"] in kinds_job.KINDS or f["kind"] in kinds_vocab.KINDS), f["kind"]
        assert f["action"].strip(), f["kind"]
        assert action_text(f["steps"], "ko").strip(), f["kind"]
        assert f["rung"] == info["rung"] and tuple(f["steps"]) == info["steps"]   # every job kind has a fixed rung
        assert f["category"] in info["categories"]


def test_fixtures_exercise_the_timeout_kinds():
    # the split timeout kinds are really produced, each with the remedy of its cause
    got = {}
    for case in CASES:
        for f in parse_job_logs(load(case))[1]:
            if f["kind"].startswith("nccl_watchdog_timeout"):
                got[f["kind"]] = f["rung"]
    assert got == {"nccl_watchdog_timeout": "drain", "nccl_watchdog_timeout_app": "fix_application",
                   "nccl_watchdog_timeout_config": "nccl_env", "nccl_watchdog_timeout_ib": "ib_restart"}


def test_drain_timeout_names_the_host_in_every_language():
    _job, findings = parse_job_logs(load("epoch35-hang-combined"))
    f = [x for x in findings if x["kind"] == "nccl_watchdog_timeout"][0]
    assert f["note"] == "Culprit host(s): gpu-r3-n02." and f["action"].endswith(f["note"])


def test_unexplained_timeout_suggests_the_desync_debug():
    wd = ("[rank%d]:[E1202 14:13:11.1 9 ProcessGroupNCCL.cpp:616] [Rank %d] Watchdog caught collective operation "
          "timeout: WorkNCCL(SeqNum=900, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, Timeout(ms)=600000) ran for "
          "600001 milliseconds before timing out.")
    job, findings = parse_job_logs({"o": "\n".join(wd % (r, r) for r in range(2))})
    assert job["phase"] == "unknown" and job["culprit_ranks"] == []
    f = [x for x in findings if x["kind"].startswith("nccl_watchdog_timeout")]
    assert [x["kind"] for x in f] == ["nccl_watchdog_timeout_unexplained"] and f[0]["rung"] == "none"
    assert "TORCH_NCCL_DESYNC_DEBUG=1" in f[0]["action"]


def test_every_declared_job_kind_is_emitted_somewhere():
    source = ""
    for name in os.listdir(PKG):
        if name.endswith(".py"):
            with open(os.path.join(PKG, name)) as fh:
                source += fh.read()
    dead = [k for k in kinds_job.KINDS if '"%s"' % k not in source]
    assert dead == []


# ------------------------------------------------------------------ never raise

def test_garbage_binary_and_huge_lines_never_raise():
    rnd = random.Random(11)
    binary = bytes(rnd.randrange(256) for _ in range(200000))
    huge_nccl = ("h:1:2 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.9<1> with status=12 " * 40000)
    huge_tqdm = "\r".join("Epoch 3: %d%%|#| %d/100 [00:01<00:01,  2.00it/s]" % (i % 100, i % 100)
                          for i in range(60000))
    files = {"bin.out": binary, "nccl.log": huge_nccl, "bar.err": huge_tqdm,
             "weird": "\x00\x1b[31m[rank9999999]: \udcff\ufffd" * 1000, "rank-1.log": "\n" * 100000}
    job, findings = parse_job_logs(files)
    assert isinstance(job, dict) and isinstance(findings, list)
    assert all(f["kind"] in KINDS and f["action"] for f in findings)
    assert "parser_error" not in [f["kind"] for f in findings]


def test_a_bug_in_a_handler_becomes_one_parser_error(monkeypatch):
    def broken(line, fs, st):
        raise RuntimeError("boom")
    monkeypatch.setattr(lines, "HANDLERS", (broken,))
    job, findings = parse_job_logs({"a.log": "x\n", "b.log": "y\n", "empty": ""})
    assert [(f["kind"], f["source"]) for f in findings] == [("parser_error", "a.log"), ("parser_error", "b.log")]
    assert "RuntimeError: boom" in findings[0]["message"]
    assert job["culprit_ranks"] == [] and job["phase"] == "unknown"


def test_a_bug_in_the_analysis_returns_an_empty_job_and_a_parser_error(monkeypatch):
    def broken(st):
        raise KeyError("x")
    monkeypatch.setattr(joblog, "analyse", broken)
    job, findings = parse_job_logs(load("epoch35-hang-combined"))
    assert [f["kind"] for f in findings] == ["parser_error"]
    assert job["culprit_ranks"] == [] and job["collective"] is None


# ------------------------------------------------------------------ shape (issue 7)

def test_package_modules_and_functions_stay_small():
    for name in sorted(os.listdir(PKG)):
        if not name.endswith(".py"):
            continue
        with open(os.path.join(PKG, name)) as fh:
            text = fh.read()
        assert text.count("\n") <= 500, name
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                assert node.end_lineno - node.lineno + 1 <= 100, (name, node.name)


def test_package_imports_only_what_a_parser_may():
    allowed = {"findings", "taxonomy", "sources", "xid_catalog", "vocab", "linefamily"}
    for name in sorted(os.listdir(PKG)):
        if name.endswith(".py"):
            with open(os.path.join(PKG, name)) as fh:
                tree = ast.parse(fh.read())
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom):
                    assert node.level in (0, 1, 2), (name, node.module)
                    if node.level == 2:
                        assert (node.module or "").split(".")[0] in allowed, (name, node.module)
                    if node.level == 0:
                        assert not (node.module or "").startswith("gpu_runbook"), (name, node.module)
