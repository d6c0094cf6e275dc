"""diagnose.yml through the real ansible-playbook on the local connection:
capture mode (the demo rack) and live mode (stand-in tools on PATH)."""

import json
import os
import shlex
import textwrap
import time

import pytest

from tests.conftest import DEMO, REPO, make_live_host, run_playbook, write_tool

DEMO_CAPTURES = os.path.join(REPO, "inventory-examples", "demo-captures", "nodes")
HEALTHY_SMI = os.path.join(DEMO_CAPTURES, "gpu-r3-n01", "nvidia-smi-q.txt")


def _report(tmp_path, proc):
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    with open(tmp_path / "report" / "report.json") as fh:
        return json.load(fh)


def test_demo_rack_names_the_three_broken_nodes(tmp_path):
    proc = run_playbook(["playbooks/diagnose.yml", "-i", "inventory-examples/demo", "-l", "gpu-rack3",
                         "-e", "diagnosis_report_dir=%s" % (tmp_path / "report")])
    rep = _report(tmp_path, proc)
    by_host = {h["host"]: h for h in rep["hosts"]}
    assert len(by_host) == 8
    assert by_host["gpu-r3-n03"]["verdict"] == "gpu_hardware"
    assert by_host["gpu-r3-n03"]["severity"] == "critical"
    assert any(f.get("xid") == 79 and f["gpu"]["pci"] == "0000:75:00.0" for f in by_host["gpu-r3-n03"]["findings"])
    assert by_host["gpu-r3-n05"]["verdict"] == "ib_network"
    assert any((f.get("ib") or {}).get("device") == "mlx5_4" for f in by_host["gpu-r3-n05"]["findings"])
    assert by_host["gpu-r3-n06"]["verdict"] == "gpu_hardware"
    assert by_host["gpu-r3-n06"]["rung"] in ("gpu_reset", "reboot", "rma")
    healthy = sorted(h for h, v in by_host.items() if v["verdict"] == "healthy")
    assert healthy == ["gpu-r3-n01", "gpu-r3-n02", "gpu-r3-n04", "gpu-r3-n07", "gpu-r3-n08"]
    assert sorted(rep["cluster"]["suspects"]) == ["gpu-r3-n03", "gpu-r3-n05", "gpu-r3-n06"]
    # console: one line per suspect host, then one line for the healthy ones
    assert "gpu-r3-n03" in proc.stdout and "healthy (5)" in proc.stdout


def test_demo_limit_narrows_and_fail_on_critical(tmp_path):
    proc = run_playbook(["playbooks/diagnose.yml", "-i", "inventory-examples/demo", "-l", "gpu-r3-n03",
                         "-e", "diagnosis_report_fail_on_critical=true"])
    assert proc.returncode != 0
    assert "critical findings on gpu-r3-n03" in proc.stdout
    proc = run_playbook(["playbooks/diagnose.yml", "-i", "inventory-examples/demo", "-l", "gpu-r3-n01",
                         "-e", "diagnosis_report_fail_on_critical=true"])
    assert proc.returncode == 0, proc.stdout[-3000:]


_tool = write_tool


@pytest.fixture
def live_host(tmp_path):
    """A local 'host': stand-in tools on PATH, an IB sysfs tree, an inventory."""
    return dict(make_live_host(tmp_path), log=tmp_path / "calls.log")


def _run_live(h, *extra):
    env = {"PATH": "%s:%s" % (h["bin"], os.environ["PATH"])}
    return run_playbook(["playbooks/diagnose.yml", "-i", str(h["inv"]),
                         "-e", "diagnosis_report_dir=%s" % (h["tmp"] / "report")] + list(extra), env=env)


def test_live_mode_runs_each_probe_once_per_host(live_host):
    h = live_host
    _tool(h["bin"], "nvidia-smi", 'echo "nvidia-smi $*" >> %s\ncase "$*" in *query-compute-apps*) exit 0;; esac\ncat %s\n'
          % (h["log"], HEALTHY_SMI))
    _tool(h["bin"], "dmesg", 'echo "dmesg $*" >> %s\necho "[Wed Dec  2 07:09:51 2026] NVRM: Xid (PCI:0000:53:00): 79, pid=\'<unknown>\', name=<unknown>, GPU has fallen off the bus."\n' % h["log"])
    proc = _run_live(h)
    rep = _report(h["tmp"], proc)
    host = rep["hosts"][0]
    assert host["host"] == "node-live"
    assert host["verdict"] == "gpu_hardware" and any(f.get("xid") == 79 for f in host["findings"])
    calls = h["log"].read_text().splitlines()
    # one module run: exactly one nvidia-smi -q -x, one compute-apps query, one dmesg
    assert sum(1 for c in calls if c == "nvidia-smi -q -x") == 1
    assert sum(1 for c in calls if "--query-compute-apps" in c) == 1
    assert sum(1 for c in calls if c.startswith("dmesg")) == 1


def test_live_mode_hung_nvidia_smi_is_a_critical_finding_not_a_hang(live_host):
    h = live_host
    _tool(h["bin"], "nvidia-smi", "exec sleep 120\n")
    _tool(h["bin"], "dmesg", "echo '[Wed Dec  2 07:00:00 2026] usb 1-1: new device'\n")
    t0 = time.monotonic()
    proc = _run_live(h, "-e", "gpu_health_probe_timeout=2")
    elapsed = time.monotonic() - t0
    rep = _report(h["tmp"], proc)
    host = rep["hosts"][0]
    assert host["severity"] == "critical"
    assert host["findings"][0]["kind"] == "nvidia_smi_hang"
    assert host["rung"] == "reboot"
    assert elapsed < 60  # the play moved on instead of waiting for the 120 s sleep


def test_live_mode_missing_tools_and_denied_dmesg_fall_back(live_host, tmp_path):
    h = live_host
    # no nvidia-smi on PATH at all; dmesg refused as with kernel.dmesg_restrict=1
    _tool(h["bin"], "nvidia-smi", "echo 'nvidia-smi: command not found' >&2; exit 127\n")
    os.remove(h["bin"] / "nvidia-smi")
    _tool(h["bin"], "dmesg", "echo 'dmesg: read kernel buffer failed: Operation not permitted' >&2; exit 1\n")
    _tool(h["bin"], "journalctl", 'echo "2026-12-02T07:09:51+0000 node-live kernel: NVRM: Xid (PCI:0000:53:00): 48, pid=\'<unknown>\', name=<unknown>, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at physAddr 0x12bac1c3e0 partition 2, subpartition 1."\n')
    env_path = "%s:/usr/bin:/bin" % h["bin"]  # keeps the real nvidia-smi of a GPU box out too
    proc = run_playbook(["playbooks/diagnose.yml", "-i", str(h["inv"]),
                         "-e", "diagnosis_report_dir=%s" % (h["tmp"] / "report")], env={"PATH": "%s:%s" % (env_path, os.path.dirname(os.sys.executable))})
    rep = _report(h["tmp"], proc)
    host = rep["hosts"][0]
    kinds = {f["kind"] for f in host["findings"]}
    assert "nvidia_smi_missing" in kinds
    assert any(f.get("xid") == 48 for f in host["findings"]), host["findings"]  # found through journalctl


def test_unreachable_host_is_a_prime_suspect(tmp_path):
    inv = tmp_path / "hosts.ini"
    inv.write_text(textwrap.dedent("""\
        [gpu_nodes]
        gpu-r3-n01 ansible_connection=local gpu_health_capture_dir={cap}/gpu-r3-n01
        gpu-dead ansible_host=127.0.0.1 ansible_port=1 ansible_connection=ssh ansible_ssh_common_args='-o ConnectTimeout=2'

        [gpu_nodes:vars]
        ansible_python_interpreter={{{{ ansible_playbook_python }}}}
        """).format(cap=DEMO_CAPTURES))
    proc = run_playbook(["playbooks/diagnose.yml", "-i", str(inv), "-e", "diagnosis_report_dir=%s" % (tmp_path / "report")])
    rep = _report(tmp_path, proc)
    by_host = {h["host"]: h for h in rep["hosts"]}
    assert by_host["gpu-dead"]["severity"] == "critical"
    assert by_host["gpu-dead"]["findings"][0]["kind"] == "host_unreachable"
    assert rep["cluster"]["suspects"][0] == "gpu-dead"
    assert by_host["gpu-r3-n01"]["verdict"] == "healthy"



def test_a_gather_that_breaks_on_the_host_is_a_suspect_not_a_stopped_play(tmp_path):
    # Only a mistaken setting stops the play at the gather (setting_error); a module that cannot
    # run on one host (here its Python is /bin/false) leaves that host unknown, the others are read.
    inv = tmp_path / "hosts.ini"
    inv.write_text(textwrap.dedent("""\
        [gpu_nodes]
        gpu-r3-n01 gpu_health_capture_dir={cap}/gpu-r3-n01
        gpu-broken gpu_health_capture_dir={cap}/gpu-r3-n02 ansible_python_interpreter=/bin/false

        [gpu_nodes:vars]
        ansible_connection=local
        ansible_python_interpreter={{{{ ansible_playbook_python }}}}
        """).format(cap=DEMO_CAPTURES))
    proc = run_playbook(["playbooks/diagnose.yml", "-i", str(inv), "-e", "diagnosis_report_dir=%s" % (tmp_path / "report")])
    rep = _report(tmp_path, proc)
    by_host = {h["host"]: h for h in rep["hosts"]}
    assert by_host["gpu-broken"]["verdict"] == "unknown", by_host["gpu-broken"]
    assert by_host["gpu-r3-n01"]["verdict"] == "healthy"

def test_job_logs_naming_hosts_outside_the_run_are_reported(tmp_path):
    job_dir = os.path.join(REPO, "tests", "fixtures", "joblog", "epoch35-hang-combined")
    proc = run_playbook(["playbooks/diagnose.yml", "-i", "inventory-examples/demo", "-l", "gpu-r3-n01",
                         "-e", "job_log_dir=%s" % job_dir, "-e", "report_dir=%s" % (tmp_path / "report")])
    rep = _report(tmp_path, proc)
    assert rep["job"]["culprit_hosts"] == ["gpu-r3-n02"]
    kinds = [f["kind"] for f in rep["cluster"]["findings"]]
    assert "job_culprit_node_not_checked" in kinds  # the culprit's node: drained until checked
    assert "cluster: gpu-r3-n02 ran this job and hosts a culprit rank but was not checked" in proc.stdout


def test_korean_report_and_all_three_files(tmp_path):
    proc = run_playbook(["playbooks/diagnose.yml", "-i", "inventory-examples/demo", "-l", "gpu-rack3",
                         "-e", "report_lang=ko", "-e", "report_dir=%s" % (tmp_path / "report")])
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "GPU 하드웨어" in proc.stdout and "정상 (5대)" in proc.stdout
    html = (tmp_path / "report" / "report.html").read_text()
    assert "장애 보고서" in html and "gpu-r3-n03" in html
    md = (tmp_path / "report" / "report.md").read_text()
    assert "| gpu-r3-n03 | GPU 하드웨어 |" in md


def test_the_diagnosis_ends_with_the_command_that_plans_the_fix_and_that_command_plans_it(tmp_path):
    proc = run_playbook(["playbooks/diagnose.yml", "-i", "inventory-examples/demo", "-l", "gpu-rack3",
                         "-e", "diagnosis_report_dir=%s" % (tmp_path / "report")])
    assert proc.returncode == 0, proc.stdout[-3000:]
    (line,) = [ln.strip() for ln in proc.stdout.splitlines() if "next: plan the fix" in ln]
    argv = shlex.split(line.split(": ", 2)[2])
    assert argv[:2] == ["ansible-playbook", "playbooks/remediate.yml"] and argv[argv.index("-l") + 1] == "gpu-rack3"
    assert "confirm=yes" not in line  # plan only
    plan = run_playbook(argv[1:])
    assert plan.returncode == 0, plan.stdout[-3000:]
    assert "Could not match supplied host pattern" not in plan.stdout + plan.stderr  # a clean plan run
    assert os.path.isfile(os.path.join(str(tmp_path / "report"), "plan", "plan.md"))
