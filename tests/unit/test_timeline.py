"""The incident timeline's first fault is this job's: a fault logged before the job started
(Slurm's start, else the first time the job's log carries) is marked ``before_job`` and is
never the first fault. Also: PyTorch >= 2.3 writes its watchdog lines with c10's own logger
(nanoseconds, no thread id), and those lines still carry their time."""

import os

from gpu_runbook.cli import analyze_paths
from gpu_runbook.cluster import build_timeline, job_start
from gpu_runbook.joblog import parse_job_logs
from gpu_runbook.joblog.text import line_time
from gpu_runbook.timeutil import to_utc
from tests.conftest import FIXTURES, REPO

C10_LOG = os.path.join(FIXTURES, "real", "x4-004-llamafactory6269-rank0-4-3-reduce-scatter-seq7753", "nccl.log")
DEMO = os.path.join(REPO, "inventory-examples", "demo-captures")
XID = "2026-12-02T{t}+0000 {h} kernel: NVRM: Xid (PCI:0000:{bus}:00): {code}, pid='<unknown>', name=<unknown>, {msg}\n"


def test_c10_logger_lines_carry_their_time():
    with open(C10_LOG) as fh:
        first = fh.readline()
    assert "[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607]" in first
    t = line_time(first.split("]:", 1)[1], 2024)
    assert (t.month, t.day, t.hour, t.minute, t.second) == (12, 6, 18, 44, 12)


def test_c10_watchdog_lines_reach_the_timeline():
    with open(C10_LOG) as fh:
        job, _findings = parse_job_logs({"nccl.log": fh.read()})
    kinds = [e["kind"] for e in job["events"]]
    assert "watchdog_timeout" in kinds
    assert job["log_start"].startswith("%d-12-06T18:44:12" % to_utc(job["log_start"]).year)


def _host(name, lines):
    return {"host": name, "facts": {"kernel_log": {"events": [
        {"time": t, "kind": k, "text": k} for t, k in lines]}}}


def test_a_fault_before_the_job_is_not_its_first_fault():
    hosts = [_host("n06", [("2026-12-01T21:39:51+00:00", "xid_48")]),
             _host("n05", [("2026-12-02T06:01:17+00:00", "ib_link_up"), ("2026-12-02T06:11:17+00:00", "ib_link_down")]),
             _host("n03", [("2026-12-02T07:09:51+00:00", "xid_79")])]
    job = {"log_start": "2026-12-01T22:06:32", "events": []}
    tl = build_timeline(hosts, job)
    first = [e for e in tl if e.get("first_fault")]
    assert [(e["host"], e["kind"]) for e in first] == [("n05", "ib_link_down")]
    assert [e["host"] for e in tl if e.get("before_job")] == ["n06"]
    # Slurm's start wins over the log's first line
    tl = build_timeline(hosts, dict(job, slurm={"start": "2026-12-02T07:00:00+00:00"}))
    assert [(e["host"], e["kind"]) for e in tl if e.get("first_fault")] == [("n03", "xid_79")]
    assert sorted(e["host"] for e in tl if e.get("before_job")) == ["n05", "n06"]


def test_without_a_job_start_the_earliest_fault_is_first():
    hosts = [_host("n06", [("2026-12-01T21:39:51+00:00", "xid_48")]),
             _host("n03", [("2026-12-02T07:09:51+00:00", "xid_79")])]
    for job in (None, {"events": [], "log_start": None}):
        tl = build_timeline(hosts, job)
        assert [(e["host"]) for e in tl if e.get("first_fault")] == ["n06"]
        assert not any(e.get("before_job") for e in tl)
        assert job_start(job) is None


def test_every_fault_before_the_job_still_names_one_first():
    hosts = [_host("n06", [("2026-12-01T21:39:51+00:00", "xid_48")])]
    tl = build_timeline(hosts, {"log_start": "2026-12-02T00:00:00", "events": []})
    assert tl[0].get("first_fault") and tl[0].get("before_job")


def test_demo_first_fault_falls_inside_the_job():
    a = analyze_paths([os.path.join(DEMO, "nodes"), os.path.join(DEMO, "job-4242")], expected_gpus=8)
    tl = a["cluster"]["timeline"]
    start = to_utc(a["job"]["log_start"])
    assert start is not None
    first = [e for e in tl if e.get("first_fault")]
    assert len(first) == 1 and to_utc(first[0]["time"]) >= start
    xid48 = [e for e in tl if e["host"] == "gpu-r3-n06" and e["kind"] == "xid_48"]
    assert xid48 and all(e.get("before_job") for e in xid48)
    assert any(e["host"] == "job" and e["kind"] == "watchdog_timeout" for e in tl)


def _f(severity, last, kind="xid"):
    return {"kind": kind, "severity": severity, "last": last}


def test_a_host_whose_logged_faults_all_came_before_the_job():
    from gpu_runbook.cluster import logged_before_job
    job = {"log_start": "2026-12-01T22:06:32", "events": []}
    before = {"host": "n06", "findings": [_f("critical", "2026-12-01T21:39:51+00:00"),
                                         _f("critical", None, "row_remap_pending")]}
    during = {"host": "n05", "findings": [_f("critical", "2026-12-01T21:00:00+00:00"),
                                         _f("warning", "2026-12-02T06:51:17+00:00")]}
    untimed = {"host": "n07", "findings": [_f("critical", None, "ecc_uncorrectable_volatile")]}
    assert logged_before_job(before, job)
    assert not logged_before_job(during, job)
    assert not logged_before_job(untimed, job)          # nothing says when: not claimed
    assert not logged_before_job(before, None)          # no job start: not claimed
    assert not logged_before_job(before, {"events": [], "log_start": None})


def test_demo_console_puts_the_fault_before_the_job_last_and_says_so():
    from gpu_runbook.diagnose import console_lines
    a = analyze_paths([os.path.join(DEMO, "nodes"), os.path.join(DEMO, "job-4242")], expected_gpus=8)
    for lang, tag in (("en", "fault before the job"), ("ko", "작업 시작 전 장애")):
        lines = console_lines(a, lang)
        hosts = [ln.split()[0] for ln in lines if ln.startswith("gpu-r3-")]
        assert hosts == ["gpu-r3-n03", "gpu-r3-n05", "gpu-r3-n06"], lines
        n06 = next(ln for ln in lines if ln.startswith("gpu-r3-n06"))
        assert n06.rstrip().endswith(tag)
        assert not any(ln.rstrip().endswith(tag) for ln in lines if ln.startswith(("gpu-r3-n03", "gpu-r3-n05")))
    # n05 flapped during the job, yet the job names rank 18 on n03: every suspect says how it relates
    for lang, tag in (("en", "not the culprit"), ("ko", "원인 호스트 아님")):
        n05 = next(ln for ln in console_lines(a, lang) if ln.startswith("gpu-r3-n05"))
        assert n05.rstrip().endswith(tag), n05


def test_the_culprits_fault_and_the_job_start_are_marked_beside_the_first_fault():
    hosts = [_host("n05", [("2026-12-02T06:01:17+00:00", "ib_link_down")]),
             _host("n03", [("2026-12-02T06:30:00+00:00", "ib_link_up"), ("2026-12-02T07:09:51+00:00", "xid_79"),
                           ("2026-12-02T07:10:00+00:00", "xid_45")])]
    job = {"log_start": "2026-12-01T22:06:32", "events": [], "culprit_hosts": ["n03.cluster"]}
    tl = build_timeline(hosts, job)
    assert [(e["host"], e["kind"]) for e in tl if e.get("first_fault")] == [("n05", "ib_link_down")]
    # the culprit host's first fault during the job (not its recovery, not its later Xid)
    assert [(e["host"], e["kind"]) for e in tl if e.get("culprit_fault")] == [("n03", "xid_79")]
    assert (tl[0]["host"], tl[0]["kind"], to_utc(tl[0]["time"])) == ("job", "job_start", to_utc("2026-12-01T22:06:32"))
    # no culprit named, no start known: neither mark
    tl = build_timeline(hosts, {"events": []})
    assert not any(e.get("culprit_fault") or e["kind"] == "job_start" for e in tl)


def test_the_demo_timeline_draws_the_job_start_the_first_fault_and_the_culprits_xid():
    from gpu_runbook.reports.facts import report_facts
    a = analyze_paths([os.path.join(DEMO, "nodes"), os.path.join(DEMO, "job-4242")], expected_gpus=8)
    culprit = [(e["host"], e["kind"]) for e in a["cluster"]["timeline"] if e.get("culprit_fault")]
    assert culprit == [("gpu-r3-n03", "xid_79")]
    svg = report_facts(a)["timeline_svg"]
    for cls, label in (("mark-start", "job start"), ("mark-fault", "first fault"), ("mark-culprit", "culprit's fault")):
        assert '<g class="%s"><line' % cls in svg and ">%s</text>" % label.replace("'", "&#x27;") in svg, cls


def test_the_demo_job_carries_its_id_and_name_in_the_analysis_and_the_console():
    from gpu_runbook.diagnose import console_lines
    a = analyze_paths([os.path.join(DEMO, "nodes"), os.path.join(DEMO, "job-4242")], expected_gpus=8)
    assert (a["job"]["job_id"], a["job"]["job_name"]) == ("4242", "llama-70b-pretrain")
    assert console_lines(a)[0].startswith("job 4242 (llama-70b-pretrain): GPU hardware")


def test_the_analysis_says_each_hosts_relation_to_the_job_once_for_every_reader():
    a = analyze_paths([os.path.join(DEMO, "nodes"), os.path.join(DEMO, "job-4242")], expected_gpus=8)
    rel = {h["host"]: (h["job_relation"], h["fault_before_job"]) for h in a["hosts"]}
    assert rel["gpu-r3-n03"] == ("culprit_host", False)
    assert rel["gpu-r3-n06"] == ("in_job", True) and rel["gpu-r3-n05"] == ("in_job", False)
    without_job = analyze_paths([os.path.join(DEMO, "nodes")], expected_gpus=8)
    assert not any("job_relation" in h for h in without_job["hosts"])
