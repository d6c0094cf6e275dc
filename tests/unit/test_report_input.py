"""The report step passes each host's result trimmed to what the report reads
(hostresult.report_input; the diagnosis_report role's template builds the same): the analysis,
the inputs read and the report files are the same as from the whole results. The demo rack's
real gathers (capture mode, as gpu_health_facts makes them), one host made a straggler by its
nvidia-smi time, job 4242's log joined, an unreachable host, a failed gather, a skipped one and
a host without a result."""

import copy
import json
import os

import pytest

from gpu_runbook.analyze import analyze_host
from gpu_runbook.capture import load_capture_dir, stream_large_sources
from gpu_runbook.hostresult import report_input
from gpu_runbook.diagnose import console_lines, diagnose, summary
from gpu_runbook.reports import describe_inputs, render_html, render_markdown, report_facts, write_reports
from tests.conftest import REPO

CAPTURES = os.path.join(REPO, "inventory-examples", "demo-captures")
GENERATED = "2026-12-03T00:00:00+00:00"


def _gather(name, seconds):
    sources, _jobs, _ignored = load_capture_dir(os.path.join(CAPTURES, "nodes", name))
    sources, parsed = stream_large_sources(sources)
    facts = analyze_host(sources, host=name, expected_gpus=8, expected_ib_rate=400, parsed=parsed)
    facts.update(timings={"nvidia_smi": seconds, "kernel_log": 0.2}, mode="capture",
                 window={"since": "2026-12-02T00:00:00+00:00", "not_before": None, "start": None, "bound": None})
    return {"changed": False, "failed": False, "ansible_facts": {"gpu_health": facts}}


@pytest.fixture(scope="module")
def results():
    names = sorted(os.listdir(os.path.join(CAPTURES, "nodes")))
    out = {name: _gather(name, 40.0 if name == "gpu-r3-n08" else 1.5) for name in names}
    out["gpu-r9-n01"] = {"unreachable": True, "changed": False, "msg": "Failed to connect to the host via ssh"}
    out["gpu-r9-n02"] = {"failed": True, "msg": "MODULE FAILURE", "module_stderr": "Traceback ...", "rc": 1}
    out["gpu-r9-n03"] = {"skipped": True, "skip_reason": "Conditional result was False"}
    out["gpu-r9-n04"] = None
    return out


@pytest.fixture(scope="module")
def job_logs():
    with open(os.path.join(CAPTURES, "job-4242", "llama-70b-pretrain-4242.out")) as fh:
        return {"llama-70b-pretrain-4242.out": fh.read()}


def _both(results, job_logs):
    whole = diagnose(copy.deepcopy(results), job_logs=job_logs, generated=GENERATED)
    trimmed = diagnose({h: report_input(r) for h, r in results.items()}, job_logs=job_logs, generated=GENERATED)
    return whole, trimmed


def test_the_trimmed_results_give_the_same_analysis(results, job_logs):
    whole, trimmed = _both(results, job_logs)
    assert trimmed == whole
    # not vacuous: the rules that read more than findings fired
    kinds = {f["kind"] for f in whole["cluster"]["findings"]}
    assert "straggler" in kinds
    assert any(e["host"] not in ("job",) for e in whole["cluster"]["timeline"])  # kernel-log events
    assert whole["job"] and whole["job"]["culprits"]
    assert {"gpu-r9-n01", "gpu-r9-n02", "gpu-r9-n03", "gpu-r9-n04"} <= set(whole["cluster"]["suspects"])
    assert console_lines(trimmed) == console_lines(whole) and summary(trimmed) == summary(whole)


def test_the_trimmed_results_read_the_same_inputs(results):
    trimmed = {h: report_input(r) for h, r in results.items()}
    assert describe_inputs(trimmed) == describe_inputs(results)
    assert describe_inputs(results)["hosts"]["gpu-r3-n01"]["read"]  # not vacuous


def test_the_trimmed_results_are_a_tenth_of_the_bytes(results):
    whole = json.dumps(results["gpu-r3-n01"])
    trimmed = json.dumps(report_input(results["gpu-r3-n01"]))
    assert len(trimmed) * 8 < len(whole), (len(trimmed), len(whole))
    assert "ib" not in report_input(results["gpu-r3-n01"])["ansible_facts"]["gpu_health"]["facts"]


def test_report_input_keeps_why_a_host_has_no_facts():
    assert report_input({"unreachable": True, "msg": "no route"}) == {
        "unreachable": True, "msg": "no route", "module_stderr": None}
    assert report_input({"failed": True, "module_stderr": "boom"}) == {
        "unreachable": False, "msg": None, "module_stderr": "boom"}
    assert report_input(None) == {"unreachable": False, "msg": None, "module_stderr": None}
    assert report_input("junk")["msg"] == "malformed gather result: the registered result is a str, not a mapping"
    assert report_input({"ansible_facts": {"gpu_health": {}}, "msg": "x"})["msg"] == "x"


def test_the_pages_are_made_from_one_report_facts(results, job_logs, tmp_path):
    whole, _trimmed = _both(results, job_logs)
    said = report_facts(whole)
    assert render_markdown(whole, facts=said) == render_markdown(whole)
    assert render_html(whole, facts=said) == render_html(whole)
    paths = write_reports(whole, str(tmp_path))
    with open(paths[1]) as fh:
        assert fh.read() == render_markdown(whole)


# ---------------------------------------------------------------- one host's malformed result (issue 25)
MALFORMED = {
    "gpu-r9-n05": ({"ansible_facts": {"gpu_health": {"findings": "Xid 79", "facts": {}, "probes": {}}}},
                   "gpu_health.findings is a str, not a list"),
    "gpu-r9-n06": ({"ansible_facts": {"gpu_health": {"findings": [], "facts": [1, 2], "probes": {}}}},
                   "gpu_health.facts is a list, not a mapping"),
    "gpu-r9-n07": ({"ansible_facts": {"gpu_health": {"findings": [{"kind": "xid", "category": "gpu_hardware",
                                                                    "severity": "apocalyptic"}]}}},
                   "gpu_health.findings[0] has severity 'apocalyptic'"),
    "gpu-r9-n08": ({"ansible_facts": ["gpu_health"]}, "ansible_facts is a list, not a mapping"),
    "gpu-r9-n09": (["changed", False], "the registered result is a list, not a mapping"),
    "gpu-r9-n11": ({"ansible_facts": {"gpu_health": {"findings": [], "window": 3, "mode": "live"}}},
                   "gpu_health.window is an int, not a mapping"),
    "gpu-r9-n10": ({"ansible_facts": {"gpu_health": {"findings": [{"kind": "xid", "category": "gpu_hardware",
                                                                    "severity": "critical", "rung": "rm -rf"}]}}},
                   "gpu_health.findings[0] has rung 'rm -rf', not a rung of the ladder"),
}


def test_a_malformed_host_is_that_hosts_unknown_and_the_others_are_reported(results, job_logs, tmp_path):
    hostile = dict(copy.deepcopy(results), **{h: r for h, (r, _why) in MALFORMED.items()})
    whole, trimmed = _both(hostile, job_logs)
    assert trimmed == whole
    clean, _ = _both(results, job_logs)
    by = {h["host"]: h for h in whole["hosts"]}
    for name, (_r, why) in MALFORMED.items():
        h = by[name]
        assert h["verdict"] == "unknown" and [f["kind"] for f in h["findings"]] == ["gather_failed"], h
        assert h["findings"][0]["message"].startswith("health gather failed on this host: malformed gather "
                                                      "result: " + why), h["findings"][0]["message"]
    # the well-formed hosts read exactly as without the malformed ones
    for h in clean["hosts"]:
        assert by[h["host"]]["verdict"] == h["verdict"] and by[h["host"]]["findings"] == h["findings"], h["host"]
    assert set(MALFORMED) <= set(whole["cluster"]["suspects"]) and not set(MALFORMED) & set(whole["cluster"]["remediate"])
    paths = write_reports(whole, str(tmp_path))
    with open(paths[1]) as fh:
        assert "malformed gather result: gpu_health.findings is a str" in fh.read()
    said = describe_inputs(hostile)["hosts"]
    assert said["gpu-r3-n01"]["read"] and said["gpu-r9-n09"]["reached"] is False
    assert said["gpu-r9-n06"]["why"] == "malformed gather result: gpu_health.facts is a list, not a mapping"
