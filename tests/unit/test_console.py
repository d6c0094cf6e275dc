"""The console an engineer reads at 3 a.m. (diagnose.console_lines, render.render_text), in
English and Korean, on analyses built by the real engine: the job's logs of the epoch-35 hang
(tests/fixtures/joblog/epoch35-hang-combined) and kernel logs of the rack's hosts.

The incident: rank 11 (gpu-r3-n02, GPU 0000:5d:00.0) is the rank the other 31 waited for, and
its GPU fell off the bus (Xid 79). Rank 20 on gpu-r3-n03 logged an IB completion error (the
job's logs name that host); gpu-r3-n04 has an unrelated Xid 48; gpu-r4-n01, outside the job,
lost a GPU three times."""

import os
import re

import pytest

from gpu_runbook.analyze import analyze_host
from gpu_runbook.diagnose import console_lines, diagnose
from gpu_runbook.i18n import RUNG_LABEL, display_width, finding_message, xid_label
from gpu_runbook.joblog import parse_job_logs
from gpu_runbook.render import WIDTH, render_text, rung_finding
from gpu_runbook.timeutil import span_text
from tests.conftest import FIXTURES

JOB_LOG = os.path.join(FIXTURES, "joblog", "epoch35-hang-combined", "slurm-48213.out")
XID48_LOG = os.path.join(FIXTURES, "kernlog", "002-gpud-xid48-63-94-dbe-row-remap", "kern.log")
REPORT = "/srv/reports/incident-48213/report.html"

BENIGN = "2026-12-02T09:00:00+0000 {h} kernel: usb 1-1: new high-speed USB device number 2 using xhci_hcd\n"
XID = ("2026-12-02T{t}+0000 {h} kernel: NVRM: Xid (PCI:{pci}): {code}, pid='<unknown>', name=<unknown>, {msg}\n")
OFF_BUS = "GPU has fallen off the bus."
REMAP = "Row Remapper: New row (0x00000012bac1c3e0) marked for remapping, reset gpu to activate."
# rank 20 (gpu-r3-n03) logs the IB error NCCL prints when a peer stops answering (the format of
# tests/fixtures/joblog/ib-error12-messy)
IB_ERROR = ("[rank20]:gpu-r3-n03:41020:41180 [4] transport/net_ib.cc:1911 NCCL WARN NET/IB: Got completion "
            "from peer 10.2.0.5<46271> with status=transport retry counter exceeded(12) "
            "opcode=IBV_WC_RDMA_WRITE(1) vendor_err=129  hca mlx5_4\n")


def _job_logs():
    with open(JOB_LOG) as fh:
        lines = fh.readlines()
    return {"slurm-48213.out": "".join(lines[:300] + [IB_ERROR] + lines[300:])}


def _kern_logs():
    with open(XID48_LOG) as fh:
        xid48 = fh.read()
    return {
        "gpu-r3-n01": BENIGN.format(h="gpu-r3-n01"),
        "gpu-r3-n02": BENIGN.format(h="gpu-r3-n02") + XID.format(t="14:02:58", h="gpu-r3-n02", pci="0000:5d:00",
                                                                 code=79, msg=OFF_BUS),
        "gpu-r3-n03": XID.format(t="14:01:00", h="gpu-r3-n03", pci="0000:97:00", code=63, msg=REMAP),
        "gpu-r3-n04": xid48,
        "gpu-r4-n01": "".join(XID.format(t=t, h="gpu-r4-n01", pci="0000:75:00", code=79, msg=OFF_BUS)
                              for t in ("07:09:51", "07:10:30", "07:12:03")),
    }


def _results(names=None):
    logs = _kern_logs()
    return {h: {"ansible_facts": {"gpu_health": analyze_host({"kern.log": logs[h]}, host=h)}}
            for h in (names or logs)}


@pytest.fixture(scope="module")
def incident():
    return diagnose(_results(), job_logs=_job_logs())


def _host_line_index(lines, host):
    return next(i for i, ln in enumerate(lines) if ln.startswith(host + " "))


def _host(analysis, name):
    return next(h for h in analysis["hosts"] if h["host"] == name)


def _flat(lines):
    return " ".join(" ".join(lines).split())


def _squash(s):
    return " ".join(str(s).split())


# ---------------------------------------------------------------- job mode
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_job_mode_starts_with_the_verdict_and_the_culprit_chain(incident, lang):
    lines = console_lines(incident, lang, report_path=REPORT)
    job = incident["job"]
    assert job["verdict"] == "gpu_hardware" and [c["rank"] for c in job["culprits"]] == [11]
    # the job's id as its own log names it (slurmstepd's banner: STEP 48213.0)
    assert job["job_id"] == "48213"
    assert lines[0].startswith("job 48213: GPU hardware" if lang == "en" else "작업 48213: GPU 하드웨어")
    chain = next(i for i, ln in enumerate(lines) if ln.strip().startswith("culprit:" if lang == "en" else "원인:"))
    first_host = min(_host_line_index(lines, h) for h in incident["cluster"]["suspects"])
    assert chain < first_host  # the job and its culprit come before any host
    # rank -> host -> GPU -> that host's own finding, with how often and when
    xid79 = next(f for f in _host(incident, "gpu-r3-n02")["findings"] if f["kind"] == "xid")
    rank = "rank 11" if lang == "en" else "랭크 11"
    want = "%s -> gpu-r3-n02 GPU 0000:5d:00.0 -> Xid 79 (GPU has fallen off the bus) %s" % (
        rank, span_text(xid79["count"], xid79["first"], xid79["last"], lang))
    assert want in _flat(lines[chain:first_host])


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_suspects_are_ordered_by_how_much_they_explain_the_failure(incident, lang):
    # the culprit's host, then the host the job's logs name (a warning), then the job's other
    # sick node (critical), then the critical host outside the job
    want = ["gpu-r3-n02", "gpu-r3-n03", "gpu-r3-n04", "gpu-r4-n01"]
    assert incident["cluster"]["suspects"] == want
    assert _host(incident, "gpu-r3-n03")["severity"] == "warning"
    assert _host(incident, "gpu-r3-n04")["severity"] == "critical"
    lines = console_lines(incident, lang, report_path=REPORT)
    at = [_host_line_index(lines, h) for h in want]
    assert at == sorted(at)
    tags = {"en": ("culprit's host (rank 11)", "named in the job's logs", "not in job"),
            "ko": ("원인 랭크의 호스트 (랭크 11)", "작업 로그에 언급됨", "작업 외 호스트")}[lang]
    assert lines[at[0]].endswith(tags[0])
    assert lines[at[1]].endswith(tags[1])
    assert not lines[at[2]].endswith(tags) and lines[at[3]].endswith(tags[2])


def test_without_the_job_the_suspects_follow_severity_and_no_host_is_marked():
    a = diagnose(_results())
    assert a["cluster"]["suspects"][-1] == "gpu-r3-n03"  # the only warning comes last
    lines = console_lines(a)
    assert lines[0].startswith(a["cluster"]["suspects"][0] + " ")
    assert not any("not in job" in ln or "culprit" in ln for ln in lines)
    assert lines[-1] == "5 host(s): 3 critical, 1 warning, 1 healthy"


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_one_healthy_line_one_summary_line_and_the_report_path_last(incident, lang):
    lines = console_lines(incident, lang, report_path=REPORT)
    healthy = [ln for ln in lines if ln.startswith("healthy (" if lang == "en" else "정상 (")]
    assert healthy == ["healthy (1): gpu-r3-n01" if lang == "en" else "정상 (1대): gpu-r3-n01"]
    summary = "5 host(s): 3 critical, 1 warning, 1 healthy" if lang == "en" else "호스트 5대: 심각 3, 경고 1, 정상 1"
    assert lines[-2:] == [summary, ("report: " if lang == "en" else "보고서: ") + REPORT]
    assert sum(1 for ln in lines if ln == summary) == 1
    # no report written: the summary is the last line
    assert console_lines(incident, lang)[-1] == summary


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_which_ranks_timed_out_says_which_did_not(incident, lang):
    job = incident["job"]
    assert job["world_size"] == 32 and len(job["timed_out_ranks"]) == 31 and 11 not in job["timed_out_ranks"]
    text = _flat(console_lines(incident, lang))
    assert ("31 of 32 ranks waited; rank 11 did not" if lang == "en"
            else "랭크 32개 중 31개가 기다림 (랭크 11 제외)") in text
    # without the world size, only what is known: no 'of N', no rank said not to have waited
    unknown = diagnose(_results(), job_logs=_job_logs())
    unknown["job"]["world_size"] = None
    text = _flat(console_lines(unknown, lang))
    assert ("31 ranks timed out" if lang == "en" else "랭크 31개가 타임아웃됨") in text
    assert " of 32" not in text and "32개 중" not in text


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_no_line_is_cut_and_long_text_wraps_between_words(incident, lang):
    lines = console_lines(incident, lang, report_path=REPORT)
    assert not any(ln.rstrip().endswith("...") for ln in lines)
    flat = _flat(lines)
    for name in incident["cluster"]["suspects"]:
        h = _host(incident, name)
        msg, act = finding_message(rung_finding(h), lang)
        assert _squash(msg) in flat and _squash(act) in flat  # whole, in order, however wrapped
        assert len(msg) > 60  # long enough that a cut would have shown
    for ln in lines:  # wrapped to the width, unless one word is longer than a line
        assert display_width(ln) <= WIDTH or " " not in ln.strip()
    # the CLI's text shows every evidence line verbatim, on its own line
    full = render_text(incident, lang).splitlines()
    for name in incident["cluster"]["suspects"]:
        for f in _host(incident, name)["findings"]:
            if f.get("evidence") and f["severity"] != "ok":
                assert any(f["evidence"].strip() in ln for ln in full), f["evidence"]


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_counts_and_times_read_naturally(incident, lang):
    f = next(f for f in _host(incident, "gpu-r4-n01")["findings"] if f["kind"] == "xid")
    assert f["count"] == 3 and f["first"] != f["last"]
    span = span_text(3, f["first"], f["last"], lang)
    assert span.startswith("3x between 2026-12-02 07:09:51 and 07:12:03") if lang == "en" else span.endswith("3회")
    for text in (_flat(console_lines(incident, lang)), _squash(render_text(incident, lang))):
        assert span in text
        assert " x1 first" not in text and " x3 first" not in text and "None" not in text


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_next_step_is_the_shown_findings_own(incident, lang):
    lines = console_lines(incident, lang, report_path=REPORT)
    for name in incident["cluster"]["suspects"]:
        h = _host(incident, name)
        f = rung_finding(h)
        assert f["rung"] == h["rung"]  # the finding shown is the one that sets the rung
        i = _host_line_index(lines, name)
        nxt = "next: " if lang == "en" else "다음 단계: "
        assert (nxt + RUNG_LABEL[lang][h["rung"]] + " ") in lines[i] + " "
        msg, act = finding_message(f, lang)
        block = lines[i + 1:]
        block = block[:next((k for k, ln in enumerate(block) if not ln.startswith(" ")), len(block))]
        assert _flat(block) == _squash("%s %s: %s" % (msg, "action" if lang == "en" else "조치", act))
    # the culprit host's next step is its Xid 79's: reboot, and the Xid is the reason shown
    n02 = _host(incident, "gpu-r3-n02")
    assert n02["rung"] == "reboot" and rung_finding(n02)["kind"] == "xid" and rung_finding(n02)["xid"] == 79


def test_korean_host_columns_start_at_the_same_display_column(incident):
    lines = console_lines(incident, "ko", report_path=REPORT)
    heads = [lines[_host_line_index(lines, h)] for h in incident["cluster"]["suspects"]]
    starts, char_starts = [], []
    for ln in heads:
        cols = [m.start() for m in re.finditer(r"(?:^|(?<=\s\s))\S", ln)]
        starts.append([display_width(ln[:c]) for c in cols[:5]])
        char_starts.append(cols[:5])
    assert all(len(s) == 5 for s in starts)
    assert all(s == starts[0] for s in starts), heads
    # the labels are double-width: padding by characters would not have aligned them
    assert any(c != char_starts[0] for c in char_starts), heads


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_cli_text_shares_the_console_layout(incident, lang):
    console = console_lines(incident, lang)
    full = render_text(incident, lang).splitlines()
    for name in incident["cluster"]["suspects"]:
        assert console[_host_line_index(console, name)] == full[_host_line_index(full, name)]
    assert full[0] == console[0] and full[-1] == console[-1]


def test_korean_says_the_same_facts_and_advice_as_english(incident):
    en, ko = console_lines(incident, "en"), console_lines(incident, "ko")
    # the same hosts in the same order, with the same rung each
    order = [ln.split()[0] for ln in en if ln.startswith("gpu-")]
    assert order == [ln.split()[0] for ln in ko if ln.startswith("gpu-")] == incident["cluster"]["suspects"]
    for name in order:
        rung = _host(incident, name)["rung"]
        assert RUNG_LABEL["ko"][rung] in ko[_host_line_index(ko, name)]
    # NVIDIA's Xid names stay visible, the numbers and times are there
    flat_ko = _flat(ko)
    for code in (79, 48, 63):
        assert xid_label(code) in flat_ko
    f = next(f for f in _host(incident, "gpu-r4-n01")["findings"] if f["kind"] == "xid")
    assert span_text(f["count"], f["first"], f["last"], "ko") in flat_ko
    # the job's lines are Korean, English only inside NVIDIA's names and identifiers
    job_ko = ko[:_host_line_index(ko, order[0])]
    assert all(re.search("[\uac00-\ud7a3]", ln) for ln in job_ko)
    assert not any(w in _flat(job_ko) for w in (" of ", " did not", "culprit", "stopped at", "timed out", "how sure"))


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_culprit_host_outside_the_run_is_named_in_the_chain_and_the_cluster_line(lang):
    a = diagnose(_results(["gpu-r3-n01", "gpu-r3-n03", "gpu-r3-n04"]), job_logs=_job_logs())
    lines = console_lines(a, lang, report_path=REPORT)
    flat = _flat(lines)
    rank = "rank 11" if lang == "en" else "랭크 11"
    not_checked = ("host not checked (no evidence of it: not in the inventory, outside --limit, or no capture of it "
                   "given)" if lang == "en"
                   else "호스트를 점검하지 못함 (근거 없음: 인벤토리에 없거나 --limit 밖이거나 캡처가 주어지지 않음)")
    assert "%s -> gpu-r3-n02 GPU 0000:5d:00.0 -> %s" % (rank, not_checked) in flat
    # the cluster's finding names the node in either language
    cluster = [ln for ln in lines if ln.startswith("cluster: " if lang == "en" else "클러스터: ")]
    assert len(cluster) == 1 and "gpu-r3-n02" in cluster[0]
    assert lines[-1].endswith(REPORT)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_slurms_node_list_decides_who_is_in_the_job(lang):
    nodes = ["gpu-r3-n01", "gpu-r3-n02", "gpu-r3-n03", "gpu-r4-n01", "gpu-r3-n05"]
    a = diagnose(_results(), job_logs=_job_logs(), slurm_job={"job_id": "48213", "nodes": nodes})
    lines = console_lines(a, lang)
    assert lines[0].startswith("job 48213: " if lang == "en" else "작업 48213: ")
    outside = "not in job" if lang == "en" else "작업 외 호스트"
    # Slurm ran it on gpu-r4-n01 and not on gpu-r3-n04, whatever the rank map says
    assert not lines[_host_line_index(lines, "gpu-r4-n01")].endswith(outside)
    assert lines[_host_line_index(lines, "gpu-r3-n04")].endswith(outside)
    assert a["cluster"]["suspects"][-1] == "gpu-r3-n04"
    # a node of the job nobody checked is named, in either language
    cluster = [ln for ln in lines if ln.startswith("cluster: " if lang == "en" else "클러스터: ")]
    assert len(cluster) == 1 and "gpu-r3-n05" in cluster[0]


def test_nobody_is_called_outside_the_job_when_its_nodes_are_unknown():
    # the logs place every rank (the rank map covers the world): gpu-r4-n01 is outside
    a = diagnose(_results(), job_logs=_job_logs())
    assert console_lines(a)[_host_line_index(console_lines(a), "gpu-r4-n01")].endswith("not in job")
    # the rank map lost a rank and Slurm is silent: the job's node list is not known
    job_logs = _job_logs()
    job_logs["slurm-48213.out"] = "\n".join(ln for ln in job_logs["slurm-48213.out"].splitlines()
                                            if not ln.startswith("[rank31]:"))
    a = diagnose(_results(), job_logs=job_logs)
    assert 31 not in {int(r) for r in a["job"]["rank_map"]}
    assert not any(ln.endswith("not in job") for ln in console_lines(a))


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_odd_analyses_render_without_a_traceback_or_none(lang):
    odd = [
        {},
        {"hosts": [{"host": "gpu-x"}]},
        {"hosts": [{"severity": "critical", "findings": [{"severity": "critical"}, "junk"]}],
         "job": {"culprits": ["junk", {"host": None, "rank": None}], "timed_out_ranks": [1, "x"], "world_size": "8",
                 "failed_at": {"epoch": 3, "progress": None}, "collective": {"op": None},
                 "rank_map": {"0": "bad"}, "nccl": {"errors": ["junk", {"peer": 5}]},
                 "findings": ["junk", {"severity": "critical", "rank": "7", "message": None}]}},
        {"hosts": [], "job": {"verdict": "no_such_category", "findings": [{"severity": "critical", "kind": "nope"}]},
         "cluster": {"suspects": ["gone"], "findings": [{"severity": "critical"}]}},
    ]
    for a in odd:
        for verbose in (False, True):
            lines = render_text(a, lang, verbose=verbose).splitlines() + console_lines(a, lang, report_path="r")
            assert lines and not any("None" in ln for ln in lines), lines
    lines = console_lines(odd[2], lang)
    assert any(ln.strip().startswith(("culprit: rank - -> -", "원인: 랭크 - -> -")) for ln in lines), lines


def test_the_job_line_names_the_job_as_slurm_does(incident):
    job = dict(incident["job"], job_id="4242", slurm={"job_id": "4242", "name": "train-llm"})
    lines = console_lines(dict(incident, job=job), "en", report_path=REPORT)
    assert lines[0].startswith("job 4242 (train-llm): GPU hardware")
