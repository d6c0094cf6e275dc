"""`make demo`: the README's incident, end to end. Job 4242 hung at epoch 35 on gpu-rack3; the
job's log names the stuck rank, the report ties it to its host, its GPU and that host's Xid.

The demo runs through the Makefile's own recipe (make, not a copy of its command line), and its
captures and job log are checked to tell one incident without the engine's help."""

import collections
import datetime
import json
import os
import re
import shutil
import subprocess

import pytest
import yaml

from tests.conftest import BIN, REPO, ansible_env
from tests.tools import make_demo

CAPTURES = os.path.join(REPO, "inventory-examples", "demo-captures")
NODES = os.path.join(CAPTURES, "nodes")
SCENARIO = os.path.join(CAPTURES, "scenario.yml")

TASK_HEADER = re.compile(r"^(?:TASK|RUNNING HANDLER) \[(.*)\] \*+$")
NCCL_INIT = re.compile(r"^\[rank(\d+)\]:([\w.-]+):(\d+):\d+ \[\d+\] NCCL INFO ncclCommInitRank comm \S+ rank (\d+) "
                       r"nranks (\d+) .*busId ([0-9a-fA-F]+) ")
WATCHDOG = re.compile(r"^\[rank(\d+)\]:\[E(\d\d)(\d\d) (\d\d:\d\d:\d\d)\.\d+ ProcessGroupNCCL\.cpp:\d+\] \[Rank \d+\] "
                      r"Watchdog caught collective operation timeout: .*Timeout\(ms\)=(\d+)\)")
LAUNCH = re.compile(r"^W(\d\d)(\d\d) (\d\d:\d\d:\d\d)\.\d+ \d+ torch/distributed/run\.py")
XID = re.compile(r"^(\S+) (\S+) kernel: NVRM: Xid \(PCI:([0-9a-fA-F:]+)\): (\d+),")


def scenario():
    with open(SCENARIO) as fh:
        return yaml.safe_load(fh)


def job_log_path():
    """The job script's --output=%x-%j.out: the job's name and id (make_demo.py writes it so)."""
    job = scenario()["job"]
    return os.path.join(CAPTURES, "job-%d" % job["id"], "%s-%d.out" % (job["name"], job["id"]))


def pci_of_nccl_bus_id(bus_id):
    """NCCL prints the PCI address as one hex number without separators: 75000 -> 0000:75:00.0."""
    digits = bus_id.lower().zfill(9)
    return "%s:%s:%s.%s" % (digits[:4], digits[4:6], digits[6:8], digits[8])


def read_capture(host, name):
    with open(os.path.join(NODES, host, name)) as fh:
        return fh.read()


def xid_lines(host):
    """[(time, pci without the function, xid)] of a host's kernel log."""
    out = []
    for line in read_capture(host, "kern.log").splitlines():
        m = XID.match(line)
        if m:
            assert m.group(2) == host, line  # the log is that host's own
            out.append((datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S%z"), m.group(3).lower(),
                        int(m.group(4))))
    return out


# ------------------------------------------------------------------ the captures tell one incident
@pytest.fixture(scope="module")
def job_log():
    """The job log read as an engineer would: rank -> host, pid and GPU; who timed out; when."""
    ranks, timed_out, watchdogs, launch = {}, set(), [], None
    with open(job_log_path()) as fh:
        for line in fh:
            m = NCCL_INIT.match(line)
            if m:
                assert m.group(1) == m.group(4), line  # the label and NCCL agree on the rank
                ranks[int(m.group(1))] = {"host": m.group(2), "pid": int(m.group(3)), "nranks": int(m.group(5)),
                                          "pci": pci_of_nccl_bus_id(m.group(6))}
            m = WATCHDOG.match(line)
            if m:
                timed_out.add(int(m.group(1)))
                watchdogs.append((m.group(2), m.group(3), m.group(4), int(m.group(5))))
            m = LAUNCH.match(line)
            if m and launch is None:
                launch = m.groups()
    return {"ranks": ranks, "timed_out": timed_out, "watchdogs": watchdogs, "launch": launch}


def stamp(year, month, day, hms):
    return datetime.datetime.strptime("%s-%s-%s %s+0000" % (year, month, day, hms), "%Y-%m-%d %H:%M:%S%z")


def test_job_log_is_what_the_scenario_generates(capsys):
    # the committed log is the generator's output: edit scenario.yml and rerun tests/tools/make_demo.py
    assert make_demo.main(["--check"]) == 0, capsys.readouterr().out


def test_every_rank_runs_on_a_captured_host_and_gpu(job_log):
    ranks = job_log["ranks"]
    hosts = sorted(os.listdir(NODES))
    assert sorted(ranks) == list(range(len(ranks))) and all(r["nranks"] == len(ranks) for r in ranks.values())
    assert sorted({r["host"] for r in ranks.values()}) == hosts
    for rank, where in ranks.items():
        # every busId NCCL used is a GPU that host's nvidia-smi -q knows (listed, or lost by name)
        assert where["pci"] in read_capture(where["host"], "nvidia-smi-q.txt").lower(), (rank, where)
    per_host = collections.Counter(r["host"] for r in ranks.values())
    assert set(per_host.values()) == {len(ranks) // len(hosts)}


def test_the_one_silent_rank_is_the_gpu_whose_xid_its_host_logged(job_log):
    ranks = job_log["ranks"]
    silent = sorted(set(ranks) - job_log["timed_out"])
    assert len(silent) == 1, silent  # every other rank's watchdog fired
    culprit = ranks[silent[0]]
    pci = culprit["pci"]
    smi = read_capture(culprit["host"], "nvidia-smi-q.txt").lower()
    assert "device handle for gpu %s" % pci in smi  # nvidia-smi can no longer open it
    xids = [x for x in xid_lines(culprit["host"]) if pci.startswith(x[1] + ".")]
    assert xids, "no Xid for %s in %s's kern.log" % (pci, culprit["host"])
    when = xids[0][0]
    # the hang began at the Xid: the first watchdog fired one timeout later
    month, day, hms, timeout_ms = min(job_log["watchdogs"])
    first_fire = stamp(when.year, month, day, hms)
    began = first_fire - datetime.timedelta(milliseconds=timeout_ms)
    assert abs((began - when).total_seconds()) <= 60, (when, first_fire)
    truth = scenario()["expect"]["culprit"]
    assert (silent[0], culprit["host"], pci, xids[0][2]) == (truth["rank"], truth["host"], truth["gpu_pci"],
                                                             truth["xid"])


def test_no_other_gpu_threw_an_xid_while_the_job_ran(job_log):
    # the distractors predate the job (n06's pending row remap) or are not GPU faults (n05's port)
    truth = scenario()["expect"]["culprit"]
    month, day, hms = job_log["launch"]
    for host in sorted(os.listdir(NODES)):
        for when, pci, xid in xid_lines(host):
            started = stamp(when.year, month, day, hms)
            if (host, xid) != (truth["host"], truth["xid"]):
                assert when < started, (host, pci, xid, when)


# ------------------------------------------------------------------ make demo
@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    tmp = tmp_path_factory.mktemp("demo")
    report_dir = tmp / "report"
    stamp_file = tmp / "installed"  # the venv is there already: never reinstall (-o: an old file, not remade)
    cmd = ["make", "-s", "--no-print-directory", "-o", str(stamp_file), "demo", "BASE_STAMP=%s" % stamp_file,
           "BIN=%s" % BIN, "DEMO_REPORT=%s" % report_dir]
    proc = subprocess.run(cmd, cwd=REPO, env=ansible_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    with open(report_dir / "report.json") as fh:
        report = json.load(fh)
    return {"out": proc.stdout, "err": proc.stderr, "report": report, "dir": report_dir}


def console(out):
    """The diagnosis as printed: the non-empty lines before the recap, without their YAML indent."""
    before = out.split("PLAY RECAP")[0]
    return [line.strip() for line in before.splitlines() if line.strip()]


def test_demo_prints_no_warning(demo):
    for needle in ("[WARNING]", "Unable to parse", "DEPRECATION", "Traceback"):
        assert needle not in demo["out"] and needle not in demo["err"], needle


def test_demo_console_keeps_to_the_story(demo):
    # no grouping line per node, no argument check per host, no installed package's Python warning
    for needle in ("item=", "Validating arguments", "gpu_runbook_in_scope", "Warning:"):
        assert needle not in demo["out"] and needle not in demo["err"], needle
    job = [ln for ln in console(demo["out"]) if ln.startswith("job 4242")]
    assert job and job[0].startswith("job 4242 (llama-70b-pretrain): GPU hardware"), job
    assert demo["report"]["job"]["job_name"] == "llama-70b-pretrain"


def test_demo_prints_each_task_header_once(demo):
    headers = collections.Counter(m.group(1) for m in map(TASK_HEADER.match, demo["out"].splitlines()) if m)
    assert headers and [h for h, n in headers.items() if n > 1] == []
    assert "skipping:" not in demo["out"]  # a skipped step says nothing


def test_demo_ends_with_the_summary_the_report_path_and_the_next_command(demo):
    lines = console(demo["out"])
    hosts = demo["report"]["hosts"]
    summary, report_line, next_line = lines[-3], lines[-2], lines[-1]
    # the next step on screen: the whole command that plans the fix (issue 27)
    assert next_line.startswith("next: plan the fix (changes nothing; writes plan.md): ansible-playbook "
                                "playbooks/remediate.yml -i "), next_line
    assert " -l gpu-rack3 " in next_line and "-e job_log_dir=" in next_line and "confirm" not in next_line
    severity = collections.Counter(h["severity"] for h in hosts)
    healthy = sum(1 for h in hosts if h["verdict"] == "healthy")
    for count in ("%d critical" % severity["critical"], "%d warning" % severity["warning"], "%d healthy" % healthy):
        assert count in summary, (count, summary)
    assert summary.startswith(str(len(hosts)))
    path = report_line.split(": ", 1)[1]
    assert os.path.isfile(path) and os.path.dirname(path) == str(demo["dir"]), report_line
    assert "PLAY RECAP" in demo["out"].split(next_line, 1)[1]  # nothing but the recap after it


def test_demo_report_names_the_culprit_rank_host_and_gpu(demo):
    truth = scenario()["expect"]["culprit"]
    job = demo["report"]["job"]
    assert job["verdict"] == "gpu_hardware"
    culprits = [c for c in job["culprits"] if c.get("rank") == truth["rank"]]
    assert len(culprits) == 1 and job["culprit_hosts"] == [truth["host"]]
    culprit = culprits[0]
    assert (culprit["host"], culprit["gpu_pci"]) == (truth["host"], truth["gpu_pci"])
    host = next(h for h in demo["report"]["hosts"] if h["host"] == culprit["host"])
    xids = [f for f in host["findings"] if f.get("kind") == "xid" and f.get("xid") == truth["xid"]]
    assert xids and xids[0]["gpu"]["pci"] == culprit["gpu_pci"]
    assert host["verdict"] == "gpu_hardware" and host["severity"] == "critical"
    # the console ties them on one line: rank -> host -> GPU
    assert any("rank %d" % truth["rank"] in ln and truth["host"] in ln and truth["gpu_pci"] in ln
               for ln in console(demo["out"]))


def test_demo_classifies_the_distractors_without_blaming_them(demo):
    faults = scenario()["faults"]
    distractors = sorted(h for h, fl in faults.items() if not any(f.get("fatal", True) for f in fl))
    assert distractors
    report = demo["report"]
    assert set(distractors) <= set(report["cluster"]["suspects"])
    assert not set(distractors) & set(report["job"]["culprit_hosts"])
    healthy = sorted(h["host"] for h in report["hosts"] if h["verdict"] == "healthy")
    assert healthy == sorted(set(os.listdir(NODES)) - set(faults))
