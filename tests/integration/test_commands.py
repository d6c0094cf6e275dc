"""The playbooks as an on-call engineer types them, through the real ansible-playbook: from any
directory, with a job whose Slurm cannot be reached, with the job's nodes named by hand, and
with the inventory's Slurm controller asked instead of the machine running Ansible.

Slurm is absent for real here: its clients are kept off PATH, or the installed clients are
pointed at a controller nobody listens on. One case uses a stand-in scontrol that prints
Slurm's own error text and exits 1, as a controller that is down makes it do."""

import json
import os
import re
import shutil
import subprocess
import textwrap

import pytest

from tests.conftest import BIN, DEMO, REPO, ansible_env, run_module, run_playbook, write_tool

JOB_LOGS = os.path.join(REPO, "tests", "fixtures", "joblog", "epoch35-hang-combined")
RACK = ["gpu-r3-n%02d" % i for i in range(1, 9)]
SLURM_CLIENTS = {"scontrol", "sacct", "sinfo", "squeue", "sbatch", "srun", "salloc", "scancel", "sacctmgr",
                 "sstat", "sprio", "sshare", "sreport", "sdiag", "strigger", "sattach", "sbcast", "scrontab"}
LOOKUP = "TASK [job_context : Find the job's nodes"
NARROW = "TASK [job_context : Keep only the job's nodes for the diagnosis]"
GATHER = "TASK [gpu_health : Gather GPU, kernel-log and InfiniBand health]"
UNREACHABLE = "Slurm was unreachable for job 4242"
WAY_ON = "to go on without Slurm, name the job's nodes and logs: -e job_nodes='NODES' -e job_log_dir=DIR"
DOWN = "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"


def path_without_slurm(tmp_path):
    """A PATH with every tool of this machine's PATH but Slurm's clients (links in one dir)."""
    bindir = tmp_path / "no-slurm-bin"
    bindir.mkdir()
    for d in [BIN] + os.environ.get("PATH", "").split(os.pathsep):
        if not os.path.isdir(d):
            continue
        for name in os.listdir(d):
            full = os.path.join(d, name)
            if name in SLURM_CLIENTS or (bindir / name).exists() or not os.access(full, os.X_OK):
                continue
            os.symlink(full, bindir / name)
    return str(bindir)


def report(tmp_path):
    with open(tmp_path / "report" / "report.json") as fh:
        return json.load(fh)


def task_headers(stdout):
    return re.findall(r"^TASK \[(.+?)\] \*+$", stdout, re.M)


def diagnose(tmp_path, *extra, env=None, inventory=None):
    inv = ["-i", inventory] if inventory else ["-i", "inventory-examples/demo"]
    return run_playbook(["playbooks/diagnose.yml"] + inv + ["-l", "gpu-rack3", "-e",
                        "report_dir=%s" % (tmp_path / "report")] + list(extra), env=env)


# ------------------------------------------------------------------ from any working directory

def _from_elsewhere(cwd, playbook, *extra):
    """ansible-playbook by absolute paths from ``cwd``, with no ansible.cfg in reach: the
    repository's config (library, roles_path, module_utils) is not read."""
    env = ansible_env()
    del env["ANSIBLE_CONFIG"]
    assert not os.path.exists(os.path.join(str(cwd), "ansible.cfg"))
    cmd = [os.path.join(BIN, "ansible-playbook"), os.path.join(REPO, "playbooks", playbook),
           "-i", DEMO, "-l", "gpu-rack3"] + list(extra)
    return subprocess.run(cmd, cwd=str(cwd), env=env, capture_output=True, text=True, timeout=600)


def test_diagnose_runs_from_any_directory(tmp_path):
    proc = _from_elsewhere(tmp_path, "diagnose.yml", "-e", "report_dir=%s" % (tmp_path / "report"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert GATHER in proc.stdout  # the role, its module and the engine in module_utils were all found
    assert sorted(h["host"] for h in report(tmp_path)["hosts"]) == RACK
    assert "couldn't resolve module" not in proc.stderr and "was not found" not in proc.stderr


def test_remediate_plans_from_any_directory(tmp_path):
    proc = _from_elsewhere(tmp_path, "remediate.yml", "-e", "plan_dir=%s" % (tmp_path / "plan"),
                           "-e", "gpu_runbook_state_dir=%s" % (tmp_path / "state"), "-e", "max_drain=8",
                           "-e", "max_drain_percent=100", "-e", "max_per_domain=8")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with open(tmp_path / "plan" / "plan.json") as fh:
        plan = json.load(fh)
    assert sorted(h["host"] for h in plan["hosts"]) == RACK
    assert "plan only" in proc.stdout  # plan mode: nothing acted on


# ------------------------------------------------------------------ Slurm unreachable

def _refused_before_the_gather(proc, tmp_path):
    assert proc.returncode != 0
    assert GATHER not in proc.stdout  # no host was gathered for a job whose nodes are unknown
    assert not (tmp_path / "report").exists()
    assert "Traceback" not in proc.stdout + proc.stderr


def test_no_slurm_client_says_slurm_was_unreachable_and_how_to_go_on(tmp_path):
    proc = diagnose(tmp_path, "-e", "job_id=4242", env={"PATH": path_without_slurm(tmp_path)})
    _refused_before_the_gather(proc, tmp_path)
    out = proc.stdout + proc.stderr
    assert UNREACHABLE in out and WAY_ON in out
    assert "scontrol show job -o 4242: command not found" in out
    assert "sacct -j 4242: command not found" in out


@pytest.mark.skipif(shutil.which("scontrol") is None, reason="Slurm's clients are not installed here")
def test_installed_slurm_with_its_controller_down_says_so(tmp_path):
    # the real scontrol and sacct, configured for a controller on a port nobody listens on
    conf = tmp_path / "slurm.conf"
    conf.write_text(textwrap.dedent("""\
        ClusterName=gone
        SlurmctldHost=ctl-gone(127.0.0.1)
        SlurmctldPort=1
        MessageTimeout=2
        NodeName=gpu-r3-n[01-08] CPUs=1 State=UNKNOWN
        PartitionName=gpu Nodes=gpu-r3-n[01-08] Default=YES
        """))
    proc = diagnose(tmp_path, "-e", "job_id=4242", env={"SLURM_CONF": str(conf)})
    _refused_before_the_gather(proc, tmp_path)
    out = proc.stdout + proc.stderr
    assert UNREACHABLE in out and WAY_ON in out
    assert "scontrol show job -o 4242: " + DOWN in out  # Slurm's own words, with the command


def test_controller_down_error_from_scontrol_is_named(tmp_path):
    path = path_without_slurm(tmp_path)
    write_tool(tmp_path / "no-slurm-bin", "scontrol", "echo '%s' >&2\nexit 1\n" % DOWN)
    proc = diagnose(tmp_path, "-e", "job_id=4242", env={"PATH": path})
    _refused_before_the_gather(proc, tmp_path)
    out = proc.stdout + proc.stderr
    assert "%s (scontrol show job -o 4242: %s; sacct -j 4242: command not found)" % (UNREACHABLE, DOWN) in out
    assert WAY_ON in out


# ------------------------------------------------------------------ -e job_nodes: on without Slurm

def test_job_nodes_narrow_the_play_without_slurm_and_the_job_logs_still_count(tmp_path):
    path = path_without_slurm(tmp_path)
    # a stand-in that records any call: with the nodes given, Slurm is not asked at all
    calls = tmp_path / "slurm-calls"
    write_tool(tmp_path / "no-slurm-bin", "scontrol", "echo \"$*\" >> %s\nexit 1\n" % calls)
    proc = diagnose(tmp_path, "-e", "job_id=4242", "-e", "job_nodes=gpu-r3-n[02-04]",
                    "-e", "job_log_dir=%s" % JOB_LOGS, env={"PATH": path})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert not calls.exists()
    rep = report(tmp_path)
    assert sorted(h["host"] for h in rep["hosts"]) == ["gpu-r3-n02", "gpu-r3-n03", "gpu-r3-n04"]
    job = rep["job"]
    assert job["culprit_hosts"] == ["gpu-r3-n02"] and job["failed_at"]["epoch"] == 35
    assert job["slurm"]["nodes"] == ["gpu-r3-n02", "gpu-r3-n03", "gpu-r3-n04"]
    assert job["slurm"]["source"] == "job_nodes" and job["job_id"] == "4242"
    # hosts outside the job were neither gathered nor reported
    assert not re.search(r"^ok: \[gpu-r3-n0[15-8]\]", proc.stdout[proc.stdout.index(GATHER):], re.M)


def test_the_narrowing_prints_nothing_and_under_v_one_header_for_the_whole_play(tmp_path):
    # the console (plugins/callback) leaves the in-memory grouping out: one line per node of the job
    no_slurm = {"PATH": path_without_slurm(tmp_path)}
    (tmp_path / "quiet").mkdir()
    quiet = diagnose(tmp_path / "quiet", "-e", "job_nodes=gpu-r3-n[01-02],gpu-r3-n07", env=no_slurm)
    assert quiet.returncode == 0 and NARROW not in quiet.stdout and "item=" not in quiet.stdout, quiet.stdout[-3000:]
    proc = diagnose(tmp_path, "-e", "job_nodes=gpu-r3-n[01-02],gpu-r3-n07", "-v", env=no_slurm)
    assert proc.returncode == 0, proc.stdout[-3000:]
    headers = task_headers(proc.stdout)
    assert proc.stdout.count(NARROW) == 1 and sum(h.startswith(LOOKUP[6:]) for h in headers) == 1
    assert len(headers) == len(set(headers)), [h for h in headers if headers.count(h) > 1]
    assert sorted(h["host"] for h in report(tmp_path)["hosts"]) == ["gpu-r3-n01", "gpu-r3-n02", "gpu-r3-n07"]
    # the grouping is in memory: a read-only run reports no change for it
    narrow = proc.stdout[proc.stdout.index(NARROW):]
    narrow = narrow[:narrow.index("\nTASK [") if "\nTASK [" in narrow else len(narrow)]
    assert "ok: [gpu-r3-n01]" in narrow and not re.search(r"^changed: \[", narrow, re.M), narrow


def test_job_nodes_outside_the_inventory_stop_with_what_to_check(tmp_path):
    proc = diagnose(tmp_path, "-e", "job_nodes=gpu-r9-n[01-04]", env={"PATH": path_without_slurm(tmp_path)})
    assert proc.returncode != 0 and GATHER not in proc.stdout
    assert "none of the job's nodes (gpu-r9-n[01-04]) is among this play's hosts (gpu-r3-n01, " in proc.stdout
    assert "... 8 in all): check -i and -l" in proc.stdout  # the rack is named by its first hosts and its size


def test_without_a_job_every_target_is_diagnosed(tmp_path):
    proc = diagnose(tmp_path, "-v")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert proc.stdout.count(NARROW) == 1
    assert sorted(h["host"] for h in report(tmp_path)["hosts"]) == RACK


# ------------------------------------------------------------------ the inventory's Slurm controller

def _with_controller(tmp_path, text):
    inv = tmp_path / "controller.ini"
    inv.write_text(textwrap.dedent(text).format(python=os.path.join(BIN, "python")))
    return inv


@pytest.mark.parametrize("inventory,extra,asks", [
    ("[slurm_controller]\nslurmctl-test ansible_connection=local ansible_python_interpreter={python}\n",
     [], "slurmctl-test"),
    ("[login]\nlogin-test ansible_connection=local ansible_python_interpreter={python}\n",
     ["-e", "gpu_runbook_slurm_controller=login-test"], "login-test"),
    ("", [], "localhost"),
])
def test_the_job_is_looked_up_on_the_inventorys_slurm_controller(tmp_path, inventory, extra, asks):
    inv = _with_controller(tmp_path, inventory)
    proc = run_playbook(["playbooks/diagnose.yml", "-i", "inventory-examples/demo", "-i", str(inv), "-l", "gpu-rack3",
                         "-e", "job_id=4242"] + extra, env={"PATH": path_without_slurm(tmp_path)})
    assert proc.returncode != 0
    # Ansible names the host a delegated task ran on: the lookup ran there, and only there
    assert re.search(r"^fatal: \[gpu-r3-n01 -> %s\]: FAILED!" % re.escape(asks), proc.stdout, re.M), proc.stdout[-2000:]
    assert UNREACHABLE in proc.stdout


def test_slurm_cluster_example_names_its_controller():
    proc = subprocess.run([os.path.join(BIN, "ansible-inventory"), "-i", os.path.join(REPO, "inventory-examples",
                           "slurm-cluster"), "--list"], cwd=REPO, env=ansible_env(), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    inv = json.loads(proc.stdout)
    assert inv["slurm_controller"]["hosts"] == ["slurmctl01"]
    assert "slurmctl01" not in inv["gpu_nodes"].get("hosts", []) and len(inv["gpu-rack3"]["hosts"]) == 32


def test_lookup_module_matches_fqdn_inventory_names_to_slurms_short_names(tmp_path):
    res, proc = run_module(tmp_path, "gpu_runbook_job", {
        "job_id": "4242", "nodes": "gpu-r3-n[01-02,07]",
        "play_hosts": ["gpu-r3-n01.cluster.local", "gpu-r3-n03.cluster.local", "gpu-r3-n07"]}, host="localhost")
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert res["hosts"] == ["gpu-r3-n01.cluster.local", "gpu-r3-n07"]
    assert res["job"]["nodes"] == ["gpu-r3-n01", "gpu-r3-n02", "gpu-r3-n07"] and res["job"]["num_nodes"] == 3
    assert res["job"]["nodelist"] == "gpu-r3-n[01-02,07]" and res["changed"] is False
