"""Job join (culprit rank -> host -> GPU -> that host's Xid), timeline and the md/html reports."""

import os

from gpu_runbook.analyze import analyze_host
from gpu_runbook.cluster import build_cluster
from gpu_runbook.joblog import parse_job_logs
from gpu_runbook.reports import render_html, render_markdown, write_reports
from tests.conftest import FIXTURES

JOB_DIR = os.path.join(FIXTURES, "joblog", "epoch35-hang-combined")
XID79_ON_RANK11_GPU = ("2026-12-02T14:02:58+0000 gpu-r3-n02 kernel: NVRM: Xid (PCI:0000:5d:00): 79, "
                       "pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n")
BENIGN = "2026-12-02T09:00:00+0000 {h} kernel: usb 1-1: new high-speed USB device number 2 using xhci_hcd\n"


def _job():
    files = {f: open(os.path.join(JOB_DIR, f), errors="replace").read() for f in os.listdir(JOB_DIR) if f != "case.json"}
    job, findings = parse_job_logs(files, since="2026-12-01T20:00:00")
    job = dict(job, findings=findings, job_id="48213")
    return job


def _results(kern_for):
    out = {}
    for h in ("gpu-r3-n01", "gpu-r3-n02", "gpu-r3-n03", "gpu-r3-n04"):
        res = analyze_host({"kern.log": kern_for.get(h, BENIGN.format(h=h))}, host=h)
        out[h] = {"ansible_facts": {"gpu_health": res}}
    return out


def test_job_logs_alone_name_the_rank_and_the_report_ties_it_to_the_hosts_xid():
    a = build_cluster(_results({"gpu-r3-n02": BENIGN.format(h="gpu-r3-n02") + XID79_ON_RANK11_GPU}), job=_job())
    job = a["job"]
    assert job["culprit_ranks"] == [11]
    (c,) = job["culprits"]
    assert c["host"] == "gpu-r3-n02" and c["gpu_pci"] == "0000:5d:00.0" and c["explained_by"] == "Xid 79"
    assert job["verdict"] == "gpu_hardware"
    n02 = next(h for h in a["hosts"] if h["host"] == "gpu-r3-n02")
    culprit = next(f for f in n02["findings"] if f["kind"] == "job_culprit")
    assert culprit["rank"] == 11 and culprit["xid"] == 79 and culprit["gpu"]["pci"] == "0000:5d:00.0"
    assert a["cluster"]["suspects"] == ["gpu-r3-n02"]
    assert a["cluster"]["remediate"] == ["gpu-r3-n02"]
    # timeline: the host's Xid is the first fault, before the collective began and the watchdog fired
    order = [(e["host"], e["kind"]) for e in a["cluster"]["timeline"]]
    xid_at = next(i for i, (h, _k) in enumerate(order) if h == "gpu-r3-n02")
    assert xid_at < order.index(("job", "collective_started")) < order.index(("job", "watchdog_timeout"))
    first = next(e for e in a["cluster"]["timeline"] if e.get("first_fault"))
    assert first["host"] == "gpu-r3-n02"


def test_silent_rank_without_hardware_finding_is_a_node_suspect_not_hardware():
    a = build_cluster(_results({}), job=_job())
    assert a["job"]["verdict"] == "nccl_deadlock"
    n02 = next(h for h in a["hosts"] if h["host"] == "gpu-r3-n02")
    assert n02["rung"] == "drain" and n02["findings"][0]["kind"] == "job_culprit"
    others = [h for h in a["hosts"] if h["host"] != "gpu-r3-n02"]
    assert all(h["verdict"] == "healthy" for h in others)


def test_markdown_and_html_reports(tmp_path):
    a = build_cluster(_results({"gpu-r3-n02": XID79_ON_RANK11_GPU}), job=_job(), generated="2026-12-02T15:00:00+00:00")
    md = render_markdown(a)
    assert "| gpu-r3-n02 | GPU hardware | high: the job's culprit rank 11 runs here and this host's Xid 79 " \
           "(kern.log:1) explains it | critical |" in md
    assert "| how sure | high: culprit rank 11 runs on gpu-r3-n02, whose own Xid 79 explains it" in md
    assert "| 확신도 | 높음: 원인 랭크 11가 실행된 gpu-r3-n02의 자체 근거 Xid 79가 이를 설명함" in render_markdown(a, "ko")
    assert "rank 11 → gpu-r3-n02 0000:5d:00.0 (Xid 79)" in md
    assert "epoch 35, 64%" in md and "ALLREDUCE SeqNum=88341" in md
    html = render_html(a, lang="ko")
    assert html.startswith("<!DOCTYPE html>") and "<script" not in html and "http" not in html.split("<body>")[1]
    assert "장애 보고서" in html and "GPU 하드웨어" in html
    assert "watchdog fired" in html and 'class="fault"' in html
    # evidence is escaped, never injected
    a["hosts"][0]["findings"][0]["evidence"] = "<img src=x onerror=alert(1)>"
    assert "<img src=x" not in render_html(a)
    paths = write_reports(a, str(tmp_path / "r"))
    assert sorted(os.path.basename(p) for p in paths) == ["report.html", "report.json", "report.md"]
    assert all(os.path.getsize(p) > 200 for p in paths)


def test_job_nodes_outside_the_run_are_reported_not_dropped():
    job = _job()
    job["slurm"] = {"nodes": ["gpu-r3-n01", "gpu-r3-n02", "gpu-r3-n03", "gpu-r3-n04", "gpu-r3-n05"]}
    res = _results({})
    del res["gpu-r3-n02"]  # the culprit's host is not in this run
    a = build_cluster(res, job=job)
    missing = {f["message"].split()[0]: f for f in a["cluster"]["findings"]
               if f["kind"] in ("job_node_not_checked", "job_culprit_node_not_checked")}
    assert set(missing) == {"gpu-r3-n02", "gpu-r3-n05"}
    # it hosts the culprit rank: critical, and drained until checked
    assert (missing["gpu-r3-n02"]["kind"], missing["gpu-r3-n02"]["severity"], missing["gpu-r3-n02"]["rung"]) == (
        "job_culprit_node_not_checked", "critical", "drain")
    assert (missing["gpu-r3-n05"]["severity"], missing["gpu-r3-n05"]["rung"]) == ("warning", "none")
