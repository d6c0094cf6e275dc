"""Job join (culprit rank -> host -> GPU -> that host's Xid), timeline and the md/html reports."""

import os

import pytest

from gpu_runbook.analyze import analyze_host
from gpu_runbook.cluster import build_cluster
from gpu_runbook.joblog import parse_job_logs
from gpu_runbook.reports import json_text, render_html, render_markdown, write_reports
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
    assert "| 확신도 | 높음: 원인 랭크 11이 실행된 gpu-r3-n02의 자체 근거 Xid 79가 이를 설명함" in render_markdown(a, "ko")
    assert "rank 11 → gpu-r3-n02 → GPU 0000:5d:00.0 → Xid 79 (GPU has fallen off the bus)" in md
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


# ---------------------------------------------------------------- issue 10: reports an engineer can hand off
import json  # noqa: E402

from markdown_it import MarkdownIt  # noqa: E402

from gpu_runbook import __version__  # noqa: E402
from gpu_runbook.reports.charts import rate_svg, timeline_svg  # noqa: E402
from gpu_runbook.cluster import build_timeline  # noqa: E402
from gpu_runbook.plan import make_plan  # noqa: E402
from gpu_runbook.reports import (WORDS, annotate, describe_inputs, describe_window, md_code, md_text,  # noqa: E402
                                 report_facts, shell_line)
from gpu_runbook.timeutil import span_text  # noqa: E402

XID79_THREE_TIMES = "".join(
    "2026-12-02T%s+0000 gpu-r3-n02 kernel: NVRM: Xid (PCI:0000:5d:00): 79, pid='<unknown>', name=<unknown>, "
    "GPU has fallen off the bus.\n" % t for t in ("14:02:58", "14:03:10", "14:05:00"))
EVIL = "gpu|<script>alert(1)</script>`x"


def _md_tables(md):
    """Every table of the Markdown as the parser sees it: [(header cells, [row cells])]."""
    tokens = MarkdownIt("commonmark").enable("table").parse(md)
    tables, cur, row, cell = [], None, None, None
    for tok in tokens:
        if tok.type == "table_open":
            cur = {"head": [], "rows": []}
        elif tok.type == "table_close":
            tables.append((cur["head"][0], cur["rows"]))
            cur = None
        elif tok.type == "tr_open":
            row = []
        elif tok.type == "tr_close":
            (cur["head"] if not cur["rows"] and not cur["head"] else cur["rows"]).append(row)
        elif tok.type == "inline" and cur is not None:
            row.append(tok.content)
            cell = tok
    assert cell is not None or not tables
    return tables


def _paragraphs(md):
    tokens = MarkdownIt("commonmark").enable("table").parse(md)
    return [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "paragraph_open"]


def _analysis(kern=None, job=True, lang_results=None):
    res = lang_results or _results(kern if kern is not None else {"gpu-r3-n02": BENIGN.format(h="gpu-r3-n02")
                                                                 + XID79_THREE_TIMES})
    a = build_cluster(res, job=_job() if job else None, generated="2026-12-02T15:00:00+00:00")
    inputs = describe_inputs(res, {"slurm-48213.out": "line one\nline two\n"}, ["rank-7.log: not found"])
    return annotate(a, inputs=inputs, window=describe_window(inputs, {"start": "2026-12-02T09:00:00"},
                                                             a["generated"]))


def _table_with(tables, first_header):
    return next(rows for head, rows in tables if head and head[0] == first_header)


def test_markdown_parses_into_the_tables_the_report_promises():
    a = _analysis()
    md = render_markdown(a)
    tables = _md_tables(md)
    job_rows = _table_with(tables, "field")
    assert [r[0] for r in job_rows] == ["job id", "verdict", "decided by", "how sure", "failed at",
                                        "collective", "ranks timed out"]
    # the culprit chain once, as a list: rank -> host -> GPU -> the host's finding that explains it
    chain = [p for p in _paragraphs(md) if p.startswith("rank 11 → ")]
    assert chain == ["rank 11 → gpu-r3-n02 → GPU 0000:5d:00.0 → " + next(
        f["message"] for h in a["hosts"] for f in h["findings"] if f["kind"] == "xid" and f["xid"] == 79)]
    assert chain[0].split(" → ")[-1].startswith("Xid 79 (GPU has fallen off the bus)")
    assert all(len(r) == 2 for r in job_rows)
    assert dict(job_rows)["job id"] == "48213"
    # 'which ranks timed out' says which did not
    assert dict(job_rows)["ranks timed out"] == "31 of 32 waited; rank 11 did not"
    suspects = _table_with(tables, "host")
    assert [r[0] for r in suspects] == a["cluster"]["suspects"]
    assert all(len(r) == 6 for r in suspects)
    timeline = _table_with(tables, "time (UTC)")
    assert len(timeline) == len(a["cluster"]["timeline"]) and all(len(r) == 3 for r in timeline)
    # the job's start opens it; the culprit's Xid is both the first fault and the culprit's
    assert timeline[0][1:] == ["job", "job start"], timeline[0]
    assert timeline[1][2].startswith("first fault, culprit's fault: "), timeline[1]
    job_findings = _table_with(tables, "severity")
    assert len(job_findings) == len(a["job"]["findings"])
    inputs = next(rows for head, rows in tables if head == ["host", "read", "not read"])
    assert [r[0] for r in inputs] == sorted(a["inputs"]["hosts"])
    # the healthy line is a paragraph of its own, never a row of the table above it
    healthy = [p for p in _paragraphs(md) if p.startswith("healthy (3): ")]
    assert healthy == ["healthy (3): gpu-r3-n01, gpu-r3-n03, gpu-r3-n04"]
    assert not any("healthy" in c for _h, rows in tables for r in rows for c in r)


def test_counts_and_time_ranges_come_from_the_findings_numbers():
    a = _analysis()
    n02 = next(h for h in a["hosts"] if h["host"] == "gpu-r3-n02")
    xid = next(f for f in n02["findings"] if f["kind"] == "xid")
    assert (xid["count"], xid["xid"]) == (3, 79)  # the engine's numbers, as numbers
    said = span_text(xid["count"], xid["first"], xid["last"])
    assert said == "3x between 2026-12-02 14:02:58 and 14:05:00 UTC"
    assert said in render_markdown(a) and said in render_html(a)
    assert md_text(span_text(3, xid["first"], xid["last"], "ko")) in render_markdown(a, "ko")


def test_a_host_name_or_log_line_with_pipes_backticks_and_html_is_escaped():
    bad = ("2026-12-02T14:02:58+0000 node kernel: NVRM: Xid (PCI:0000:5d:00): 79, pid='<unknown>', "
           "name=<script>alert(2)</script> | `tick` GPU has fallen off the bus.\n")
    res = _results({})
    res[EVIL] = {"ansible_facts": {"gpu_health": analyze_host({"kern.log": bad}, host=EVIL)}}
    a = build_cluster(res, generated="2026-12-02T15:00:00+00:00")
    assert EVIL in a["cluster"]["suspects"]
    md = render_markdown(a)
    html_of_md = MarkdownIt("commonmark").enable("table").render(md)
    assert "<script" not in html_of_md and "&lt;script&gt;alert(1)" in html_of_md
    suspects = _table_with(_md_tables(md), "host")
    row = next(r for r in suspects if "alert(1)" in r[0])
    assert len(row) == 6  # the '|' in the name did not split the row
    assert MarkdownIt("commonmark").renderInline(row[0]) == "gpu|&lt;script&gt;alert(1)&lt;/script&gt;`x"
    html = render_html(a)
    assert "<script" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;script&gt;alert(2)" in html
    # the building blocks on their own
    assert md_text("a|b <i> *c* `d`") == "a\\|b \\<i\\> \\*c\\* \\`d\\`"
    assert md_code("x ` y", in_table=True) == "``x ` y``" and md_code("p|q", in_table=True) == "`p\\|q`"


def test_no_none_anywhere_even_from_bad_input():
    odd = {"schema": "gpu-runbook/analysis/v1", "generated": None,
           "hosts": [{"host": "n1", "verdict": None, "severity": "critical", "rung": None,
                      "findings": [{"severity": "critical", "kind": None, "message": None, "evidence": None,
                                    "count": None, "first": None, "gpu": {"pci": None, "index": None}}]},
                     {"no": "host"}, "junk"],
           "job": {"verdict": None, "failed_at": {"epoch": None}, "collective": None, "culprits": [{"rank": None}],
                   "timed_out_ranks": [1, "x"], "findings": [None], "iteration_rate": {"by_epoch": {"a": None}}},
           "cluster": {"suspects": ["n1", "ghost"], "healthy": [None], "timeline": [{"time": None}, "x"],
                       "findings": None},
           "inputs": {"hosts": {"n1": {"reached": False, "why": None}}, "job_logs": {"read": [{"name": None}]}},
           "window": {"since": "not a time"}}
    for analysis in (_analysis(), _analysis(job=False), odd, {}, {"hosts": [], "cluster": {}}):
        for lang in ("en", "ko"):
            md, html = render_markdown(analysis, lang), render_html(analysis, lang)
            assert "None" not in md and "None" not in html, (lang, analysis.get("hosts"))


def test_every_english_word_has_a_korean_one_with_the_same_fields():
    import string
    assert set(WORDS["en"]) == set(WORDS["ko"])
    fields = {lang: {k: {f for _t, f, _s, _c in string.Formatter().parse(v) if f} for k, v in WORDS[lang].items()}
              for lang in WORDS}
    assert fields["en"] == fields["ko"]


def test_korean_report_states_the_same_facts():
    a = _analysis()
    en, ko = render_markdown(a, "en"), render_markdown(a, "ko")
    en_tables, ko_tables = _md_tables(en), _md_tables(ko)
    assert [(len(h), len(r)) for h, r in en_tables] == [(len(h), len(r)) for h, r in ko_tables]
    for text in (en, ko):  # the same commands, hosts, numbers
        assert 'scontrol update NodeName=gpu-r3-n02 State=DRAIN Reason="gpu-runbook: ' in text
        assert "epoch 35, 64%" in text and "ALLREDUCE SeqNum=88341" in text
    assert en.count("`scontrol update") == ko.count("`scontrol update") > 0
    assert "32개 중 31개 랭크가 대기함" in ko


def test_each_suspect_gets_the_plans_own_next_command():
    res = _results({"gpu-r3-n02": XID79_ON_RANK11_GPU, "gpu-r3-n04": (
        "2026-12-02T09:00:00+0000 gpu-r3-n04 kernel: NVRM: Xid (PCI:0000:18:00): 13, pid=1, name=python, "
        "Graphics Exception\n")})
    a = build_cluster(res, job=_job(), generated="2026-12-02T15:00:00+00:00")
    plan = make_plan(a)
    drain = next(c["argv"] for c in plan["commands"] if c["host"] == "gpu-r3-n02")
    assert drain[:4] == ["scontrol", "update", "NodeName=gpu-r3-n02", "State=DRAIN"]
    facts = {s["host"]: s for s in report_facts(a)["suspects"]}
    assert facts["gpu-r3-n02"]["command"] == shell_line(drain)
    entry = next(e for e in plan["hosts"] if e["host"] == "gpu-r3-n02")
    assert entry["decision"] == "act"  # the whole command that acts, not a hint of one
    assert facts["gpu-r3-n02"]["decision"] == ("ready: ansible-playbook playbooks/remediate.yml -l gpu-r3-n02 "
                                               "-e confirm=yes runs it")
    assert shell_line(drain) in render_markdown(a) and shell_line(drain).replace('"', "&#34;") in render_html(a)
    # a suspect the ladder has no command for: the plan-only playbook run names it
    others = [h for h in facts if h != "gpu-r3-n02"]
    assert others and all(facts[h]["command"] == "ansible-playbook playbooks/remediate.yml -l %s" % h
                          for h in others if not any(c["host"] == h for c in plan["commands"]))
    assert shell_line(["x", "Reason=a \"b\" $c"]) == 'x Reason="a \\"b\\" \\$c"'


def test_report_json_has_its_schema_version_and_numbers_as_numbers(tmp_path):
    a = _analysis()
    paths = write_reports(a, str(tmp_path / "r"))
    with open(paths[0], encoding="utf-8") as fh:
        data = json.load(fh)
    assert data["schema"] == "gpu-runbook/analysis/v1" and data["tool"] == {"name": "gpu-runbook",
                                                                            "version": __version__}
    assert isinstance(data["job"]["failed_at"]["epoch"], int) and isinstance(data["job"]["failed_at"]["progress"],
                                                                               float)
    assert isinstance(data["job"]["collective"]["seq"], int)
    assert all(isinstance(r, int) for r in data["job"]["timed_out_ranks"])
    xid = next(f for h in data["hosts"] for f in h["findings"] if f.get("xid") == 79)
    assert isinstance(xid["count"], int)
    assert data["window"]["job_start"] == "2026-12-02T09:00:00"
    assert data["inputs"]["job_logs"] == {"read": [{"name": "slurm-48213.out", "lines": 2}],
                                          "problems": ["rank-7.log: not found"]}


def test_inputs_window_and_version_are_in_the_markdown():
    res = _results({})
    res["gpu-r3-n09"] = {"unreachable": True, "msg": "ssh: connect to host gpu-r3-n09 port 22: No route to host"}
    res["gpu-r3-n01"]["ansible_facts"]["gpu_health"]["probes"]["nvidia-smi -q"] = {
        "ok": False, "kind": "timeout", "error": "timed out after 30 s"}
    a = build_cluster(res, generated="2026-12-02T15:00:00+00:00")
    inputs = describe_inputs(res, {}, [])
    annotate(a, inputs=inputs, window={"since": "2026-12-02T09:00:00+00:00", "job_start": None,
                                       "generated": a["generated"]})
    md = render_markdown(a)
    rows = {r[0]: r for r in next(rows for head, rows in _md_tables(md) if head == ["host", "read", "not read"])}
    assert rows["gpu-r3-n09"][1:] == ["-", "not reached: ssh: connect to host gpu-r3-n09 port 22: No route to host"]
    assert rows["gpu-r3-n01"][1:] == ["kern.log", "nvidia-smi -q (timed out after 30 s)"]
    assert "gpu-runbook %s" % __version__ in md
    assert "kernel logs since 2026-12-02 09:00:00 UTC · generated 2026-12-02 15:00:00 UTC" in md


def test_timeline_keeps_the_job_and_every_host_when_one_host_is_noisy():
    noisy = {"host": "noisy", "findings": [], "facts": {"kernel_log": {"events": [
        {"time": "2026-12-02T10:%02d:%02d+00:00" % (i // 60, i % 60), "kind": "ib_link_down", "text": "down %d" % i}
        for i in range(500)]}}}
    quiet = {"host": "quiet", "findings": [], "facts": {"kernel_log": {"events": [
        {"time": "2026-12-02T12:00:00+00:00", "kind": "xid_79", "text": "Xid 79"}]}}}
    job = {"events": [{"time": "2026-12-02T14:13:11", "kind": "watchdog_timeout", "text": "watchdog fired"}]}
    events = build_timeline([noisy, quiet], job)
    assert sum(e["host"] == "noisy" for e in events) == 60
    assert [e["text"] for e in events if e["host"] == "noisy"][-1] == "down 499"  # the onset and the end kept
    assert any(e["host"] == "quiet" for e in events) and events[-1]["host"] == "job"
    assert [e for e in events if e.get("first_fault")] == [events[0]]


def test_the_pictures_are_svg_with_rows_marks_and_a_rate_line():
    a = _analysis()
    r = report_facts(a)
    svg = r["timeline_svg"]
    assert svg.startswith("<svg") and svg.endswith("</svg>") and "<script" not in svg and "http" not in svg
    rows = [m for m in svg.split('<g class="tl-row" data-host="')[1:]]
    assert [x.split('"')[0] for x in rows] == ["job", "gpu-r3-n02"]
    assert 'class="mark-fault mark-culprit"' in svg and 'class="mark-watchdog"' in svg and 'class="mark-start"' in svg
    assert svg.count("<circle") == len(
        a["cluster"]["timeline"])
    rate = r["job"]["rate_svg"]
    assert 'class="rate-line"' in rate and 'class="mark-fail"' in rate and rate.count('class="rate-dot"') == 35
    # bad input draws nothing rather than failing
    assert timeline_svg([{"time": "junk", "host": "x"}], ["x"], {}) == ""
    assert rate_svg({"1": 3.0}, None, {}) == "" and rate_svg({"a": "b", "c": None}, {"epoch": "x"}, {}) == ""
    assert "rate-line" in rate_svg({"1": 3.0, "2": 2.0}, {"epoch": "x"}, {})


def test_the_jobs_peer_and_ib_errors_are_a_table():
    d = os.path.join(FIXTURES, "joblog", "ib-error12-messy")
    files = {f: open(os.path.join(d, f), errors="replace").read() for f in os.listdir(d) if f != "case.json"}
    job, findings = parse_job_logs(files)
    a = build_cluster(_results({}), job=dict(job, findings=findings), generated="2026-12-02T15:00:00+00:00")
    errors = a["job"]["nccl"]["errors"]
    md = render_markdown(a)
    rows = next(rows for head, rows in _md_tables(md) if head[:4] == ["rank", "host", "peer", "HCA"])
    completion = [e for e in errors if e["kind"] == "ib_completion_error"]
    assert ["11", "gpu-r3-n02", "10.2.0.4", "mlx5_3", "IBV_WC_RETRY_EXC_ERR (12) transport retry counter exceeded",
            str(len(completion))] in [r[:6] for r in rows]
    assert len(rows) == len({(e["rank"], e["peer"], e["hca"], e["status"], e["what"]) for e in errors})
    findings_rows = _table_with(_md_tables(md), "severity")
    assert [r[1] for r in findings_rows] == [f["kind"] for f in a["job"]["findings"]]
    assert "from peer 10.2.0.4 (gpu-r3-n01)" in md and "10.2.0.4" in render_html(a)


def test_a_suspect_outside_the_job_is_marked_in_the_table():
    job = dict(_job(), slurm={"nodes": ["gpu-r3-n01", "gpu-r3-n02", "gpu-r3-n03", "gpu-r3-n04"]})
    res = _results({"gpu-r3-n02": XID79_ON_RANK11_GPU})
    res["gpu-r3-n09"] = {"ansible_facts": {"gpu_health": analyze_host(
        {"kern.log": XID79_ON_RANK11_GPU.replace("gpu-r3-n02", "gpu-r3-n09")}, host="gpu-r3-n09")}}
    a = build_cluster(res, job=job, generated="2026-12-02T15:00:00+00:00")
    rows = {r[0]: r for r in _table_with(_md_tables(render_markdown(a)), "host")}
    assert "gpu-r3-n09 (not in the job)" in rows and "gpu-r3-n02" in rows
    assert "gpu-r3-n09 (작업에 속하지 않음)" in render_markdown(a, "ko")


@pytest.mark.parametrize("body", [
    {},
    {"hosts": []},
    {"schema": "s", "hosts": [{"host": "gpu-a", "findings": [{"message": "é \u2028 \"q\"\n"}]}, {"host": "gpu-b"}],
     "cluster": {"suspects": ["gpu-a"], "nested": {"x": [1, 2.5, None, True]}}, "job": None},
])
def test_report_json_text_is_the_same_json_one_host_per_line(body):
    text = json_text(body)
    assert json.loads(text) == body and text.endswith("\n")
    hosts = body.get("hosts") or []
    # each element of a top-level list on its own line (a host per line in report.json)
    lines = text.splitlines()
    for h in hosts:
        assert "    " + json.dumps(h, ensure_ascii=False).replace("\u2028", "\\u2028") in [x.rstrip(",") for x in lines]
    # braces, a line per key, and a line per element and one for "]" of each non-empty list
    assert len(lines) == (2 + len(body) + sum(len(v) + 1 for v in body.values() if isinstance(v, list) and v)
                          if body else 1)


def test_report_json_text_writes_what_json_cannot_encode_as_text():
    import datetime
    when = datetime.datetime(2026, 12, 4, tzinfo=datetime.timezone.utc)
    assert json.loads(json_text({"generated": when, "hosts": [{"seen": when}]})) == {
        "generated": str(when), "hosts": [{"seen": str(when)}]}
