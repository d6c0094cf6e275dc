"""How sure (gpu_runbook.confidence): a confidence and a reason that names the evidence for
every host and job verdict, the plan's review state below high, and the nvidia-smi table's
single odd ERR! reading."""

import os
import re
import time

import pytest

from gpu_runbook.analyze import analyze_host
from gpu_runbook.cluster import build_cluster
from gpu_runbook.confidence import RULES, WEAK_KINDS, host_confidence, job_confidence, reason_text
from gpu_runbook.findings import finding, gpu_ref, ib_ref
from gpu_runbook.nvsmi import parse_nvidia_smi
from gpu_runbook.plan import make_plan
from tests.conftest import FIXTURES
from gpu_runbook.render import render_text

REAL = os.path.join(os.path.dirname(__file__), "..", "fixtures", "real")
REF = os.path.join(FIXTURES, "nvsmi")  # the reference capture 009, copied into the repository
PCI = "0000:3b:00.0"


def xid(code, rung="reboot", source="kern.log:4"):
    return finding("xid", "Xid %d on GPU %s" % (code, PCI), xid=code, rung=rung, gpu=gpu_ref(PCI),
                   source=source, evidence="NVRM: Xid (PCI:%s): %d" % (PCI, code))


def level(findings, verdict=None, probes=None):
    from gpu_runbook.verdict import host_verdict
    v = verdict or host_verdict(findings)["verdict"]
    return host_confidence(v, findings, probes)


def cluster(hosts, job=None):
    results = {h: {"ansible_facts": {"gpu_health": {"findings": list(fs), "facts": {}, "probes": {}}}}
               for h, fs in hosts.items()}
    return build_cluster(results, job=job, generated="2026-12-02T07:30:00+00:00")


# ---------------------------------------------------------------- hosts
def test_catalogued_xid_from_the_kernel_log_is_high_and_names_it():
    c = level([xid(79)])
    assert c["confidence"] == "high"
    assert c["confidence_reason"] == "critical Xid 79 read from kern.log:4, a primary hardware source"


def test_two_sources_agree_is_high_and_names_both():
    ecc = finding("ecc_uncorrectable_volatile", "GPU 0: 3 uncorrectable ECC errors", gpu=gpu_ref(PCI),
                  source="nvidia-smi-q.txt:88", severity="warning")
    c = level([ecc, xid(48, "gpu_reset")])
    assert c["confidence"] == "high" and c["confidence_basis"]["rule"] == "agree"
    assert "Xid 48 (kern.log:4)" in c["confidence_reason"] and "nvidia-smi-q.txt:88" in c["confidence_reason"]


def test_one_warning_is_medium():
    sym = finding("ib_symbol_errors", "mlx5_1/1: 40 symbol errors", ib=ib_ref("mlx5_1", 1), source="perfquery.txt:9")
    c = level([sym])
    assert c["confidence"] == "medium"
    assert c["confidence_reason"] == ("one warning-level finding, no critical evidence: ib_symbol_errors "
                                      "(perfquery.txt:9)")


def test_a_hung_probe_is_not_a_hardware_reading():
    hang = finding("nvidia_smi_hang", "nvidia-smi did not answer within 60s", source="nvidia-smi-q.xml")
    assert level([hang])["confidence"] == "medium"
    # with the kernel's word for the same GPU it is high
    assert level([hang, xid(79)])["confidence"] == "high"


@pytest.mark.parametrize("kind", sorted(WEAK_KINDS))
def test_weak_kinds_alone_are_low(kind):
    f = finding(kind, "weak evidence", source="nvidia-smi.txt:3")
    c = level([f])
    assert c["confidence"] == "low", c


def test_unknown_category_and_no_evidence_are_low():
    assert level([finding("hung_task", "task blocked", source="kern.log:2")])["confidence"] == "low"
    assert level([finding("no_evidence", "nothing usable")])["confidence_basis"]["rule"] == "no_evidence"


def test_healthy_is_high_only_when_every_source_was_read_and_the_gpus_seen():
    ok = {"nvidia-smi-q.txt": {"ok": True, "usable": True}, "kern.log": {"ok": True, "usable": True}}
    assert host_confidence("healthy", [], ok)["confidence"] == "high"
    part = dict(ok, **{"ibstat.txt": {"ok": False, "kind": "timeout"}})
    c = host_confidence("healthy", [], part)
    assert c["confidence"] == "medium" and "ibstat.txt" in c["confidence_reason"]
    assert host_confidence("healthy", [], {"ibstat.txt": {"ok": True, "usable": True}})["confidence"] == "medium"


def test_culprit_rank_confirmed_by_its_hosts_xid_and_job_log_only():
    job = {"culprit_ranks": [11], "rank_map": {"11": {"host": "n2", "gpu_pci": PCI}}, "findings": []}
    a = cluster({"n1": [], "n2": [xid(79)]}, job=job)
    n2 = next(h for h in a["hosts"] if h["host"] == "n2")
    assert n2["confidence"] == "high" and n2["confidence_basis"]["rule"] == "culprit_confirmed"
    assert a["job"]["confidence"] == "high" and "culprit rank 11 runs on n2" in a["job"]["confidence_reason"]
    # nothing on the culprit's host explains it: only the job log names the host
    a = cluster({"n1": [], "n2": []}, job=job)
    n2 = next(h for h in a["hosts"] if h["host"] == "n2")
    assert (n2["verdict"], n2["confidence"]) == ("nccl_deadlock", "medium")
    assert n2["confidence_reason"].startswith("only the job log names this host (culprit rank 11)")
    # no rank is said to have waited (no timeout): no NCCL hang is claimed, the cause is unknown
    assert (a["job"]["verdict"], a["job"]["confidence"]) == ("unknown", "low")


def test_job_cause_from_the_job_log_alone():
    ecc = finding("cuda_hardware_error", "rank 3: uncorrectable ECC error encountered", rank=3, source="nccl.log:9")
    c = job_confidence({"verdict": "gpu_hardware", "findings": [ecc], "culprits": []}, [])
    assert c["confidence"] == "medium" and c["confidence_reason"].startswith("job-log evidence only: cuda_hardware_error on rank 3")
    sock = finding("nccl_socket_fallback", "NCCL fell back to sockets", source="nccl.log:2")
    assert job_confidence({"verdict": "nccl_config", "findings": [sock]})["confidence"] == "high"
    assert job_confidence({"verdict": "memory_leak", "findings": []})["confidence"] == "low"
    assert job_confidence({"verdict": None})["confidence"] == "low"


_STEP_OOM = ("slurmstepd: error: Detected 1 oom-kill event(s) in StepId=14604003.0 cgroup. Some of your processes "
             "may have been killed by the cgroup out-of-memory handler.\n")


def _job_of(tmp_path, name, text):
    from gpu_runbook.cli import analyze_paths
    (tmp_path / name).write_text(text)
    return analyze_paths([str(tmp_path / name)])["job"]


def test_an_oom_whose_category_only_a_default_chose_is_low(tmp_path):
    # Slurm states the OOM kill; nothing says when in the run or how memory went: code or leak is a guess
    job = _job_of(tmp_path, "slurm-14604003.out", _STEP_OOM)
    assert job["verdict"] == "application"
    assert (job["confidence"], job["confidence_basis"]["rule"]) == ("low", "job_category_default")
    assert job["confidence_reason"].startswith("the logs state host_oom")


def test_an_oom_late_in_the_run_is_a_leak_inferred_from_when_so_medium(tmp_path):
    epochs = "".join("Epoch %d/50: 100%%|##########| 500/500 [01:40<00:00,  5.00it/s]\n" % e for e in range(1, 41))
    job = _job_of(tmp_path, "slurm-77.out", epochs + _STEP_OOM)
    assert job["verdict"] == "memory_leak"
    assert (job["confidence"], job["confidence_basis"]["rule"]) == ("medium", "job_category_inferred")
    assert "inferred from a failure late in the run" in job["confidence_reason"]


def test_every_rule_has_both_languages_with_the_same_fields():
    for rule, (lvl, en, ko) in RULES.items():
        assert lvl in ("high", "medium", "low")
        fields = set(re.findall(r"{(\w+)}", en))
        ko_fields = set(re.findall(r"{(\w+)}", ko))
        assert {f.replace("_ko", "") for f in ko_fields} == fields, rule


def test_korean_reason():
    c = level([xid(79)])
    assert reason_text(c, "ko") == "1차 하드웨어 소스 kern.log:4에서 읽은 심각 Xid 79"
    assert reason_text(c, "en") == c["confidence_reason"]


def test_analyze_host_and_the_text_report_say_how_sure():
    h = analyze_host({"kern.log": "[ 12.5] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n"}, host="n1")
    assert h["verdict"] == "gpu_hardware" and h["confidence"] == "high"
    a = build_cluster({"n1": {"ansible_facts": {"gpu_health": h}}})
    assert "how sure: high: critical Xid 79 read from kern.log:1" in render_text(a)
    assert "확신도: 높음" in render_text(a, "ko")


# ---------------------------------------------------------------- the plan
def test_the_ladder_acts_on_a_node_only_on_high():
    straggle = finding("hw_slowdown", "GPU 0 clocks held down", gpu=gpu_ref(PCI, 0), source="nvidia-smi-q.txt:40")
    unsure = finding("hw_slowdown_all_gpus", "every GPU reports HW Slowdown", severity="critical",
                     source="nvidia-smi-q.txt:1")
    a = cluster({"hi": [xid(79)], "lo": [unsure], "med": [straggle], "ok": []})
    plan = make_plan(a, {"max_drain": 8, "max_drain_percent": 100, "max_per_domain": 8})
    by = {h["host"]: h for h in plan["hosts"]}
    assert by["hi"]["decision"] == "act" and by["hi"]["confidence"] == "high"
    lo = by["lo"]
    assert lo["decision"] == "review" and lo["confidence"] == "low"
    assert lo["reason"].startswith("confidence low: the cause is not established")
    assert lo["rungs"] and all(r["status"] == "blocked" for r in lo["rungs"])
    assert not any(c["host"] == "lo" for c in plan["commands"])
    assert plan["summary"]["review"] == 1 and plan["summary"]["drains"] == 1
    # a warning (medium) host is not in the remediate list: reported, not reviewed
    assert by["med"]["decision"] == "report_only"


def test_review_takes_no_drain_cap():
    unsure = finding("hw_slowdown_all_gpus", "every GPU reports HW Slowdown", severity="critical",
                     source="nvidia-smi-q.txt:1")
    plan = make_plan(cluster({"a": [unsure], "b": [xid(79)]}), {"max_drain": 1, "max_drain_percent": 100})
    by = {h["host"]: h for h in plan["hosts"]}
    assert by["a"]["decision"] == "review" and by["b"]["decision"] == "act"


# ---------------------------------------------------------------- nvidia-smi ERR!
def test_one_err_power_reading_is_an_odd_reading_but_many_gpus_are_a_fault():
    text = open(os.path.join(REF, "009-gpud-smi-table-h100x8-healthy", "nvidia-smi.txt")).read()
    rows = [m.group(0) for m in re.finditer(r"(?m)^\| N/A\s+\d+C\s+P0\s+\d+W /\s+700W \|", text)]
    assert len(rows) == 8
    one = text.replace(rows[0], rows[0].replace(re.search(r"\d+W /", rows[0]).group(0), "ERR! /"), 1)
    f, = parse_nvidia_smi(one, "nvidia-smi.txt")[1]
    assert (f["kind"], f["category"]) == ("nvsmi_err_field", "unknown") and "single odd reading" in f["message"]
    assert level([f])["confidence"] == "low"
    many = text
    for r in rows[:3]:
        many = many.replace(r, r.replace(re.search(r"\d+W /", r).group(0), "ERR! /"), 1)
    fs = parse_nvidia_smi(many, "nvidia-smi.txt")[1]
    assert [f["kind"] for f in fs] == ["nvml_field_error"] * 3 and fs[0]["category"] == "gpu_hardware"


@pytest.mark.skipif(not os.path.isdir(REAL), reason="no real fixtures")
def test_headerless_excerpt_from_an_issue_is_read():
    path = os.path.join(REAL, "c-azhpc-v100-power-err-transient", "nvidia-smi.txt")
    facts, (f,) = parse_nvidia_smi(open(path).read(), "nvidia-smi.txt")
    assert facts["count"] == 1 and facts["gpus"][0]["index"] == 1 and facts["gpus"][0]["temperature_c"] == 29
    assert f["kind"] == "nvsmi_err_field" and f["source"] == "nvidia-smi.txt:3"


def test_err_patterns_are_fast_on_a_hostile_line():
    line = "|" + "   1  " * 50000 + "| " + "0" * 500000 + " |"
    t = time.time()
    parse_nvidia_smi("+-----+\n" + line + "\n" + "| ERR! " * 100000 + "\n", "nvidia-smi.txt")
    assert time.time() - t < 3
