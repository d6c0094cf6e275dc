"""The project run the way AWX runs a job template (awx/assets.yml), on the demo rack's captures.

What AWX does for a job, and this test too: a private data dir per job with the inventory as an
executable script of the imported inventory's JSON (inventory/hosts), the extra vars in
env/extravars (the template's own as written, the survey answers and awx_* vars tagged !unsafe:
an empty answer is `!unsafe ''`, which ansible-core 2.19 reads as null),
`-u root` and the limit on the command line; ansible-runner (pexpect, nothing answers a prompt)
with the project checkout as cwd; a fresh environment (no ANSIBLE_CONFIG: the project's
ansible.cfg is found in the cwd) with AWX's roles/collections paths and ControlPath dir.

What must hold: the run ends without prompting, writes nothing outside the private data dir and
the persistent data dir the template names (reports, plans, the ladder's state: docs/awx.md),
and its set_stats reach the runner's artifacts, where AWX takes them for the next workflow node.
"""

import configparser
import hashlib
import json
import os
import shutil
import subprocess

import ansible_runner
import pytest
import yaml

from tests.conftest import BIN, REPO

ASSETS = os.path.join(REPO, "awx", "assets.yml")
# what a project sync checks out that a job can touch (AWX clones the repository)
PROJECT_PARTS = ("ansible.cfg", "playbooks", "roles", "library", "module_utils", "plugins", "inventory-examples")
JOB_ID = 4711
LIMIT = "gpu-rack3"
# The demo inventory finds its captures from inventory_dir, which under AWX is the private data
# dir's inventory/: on the demo the template sets it from the playbook's place (docs/awx.md).
DEMO_CAPTURES = "{{ playbook_dir | dirname }}/inventory-examples/demo-captures/nodes/{{ inventory_hostname }}"


class _UnsafeDumper(yaml.SafeDumper):
    """Every string, keys too, tagged !unsafe: Ansible never templates it."""

    def represent_data(self, data):
        if isinstance(data, str):
            return self.represent_scalar("!unsafe", data)
        return super().represent_data(data)


def awx_extravars(values, trusted):
    """env/extravars as AWX writes it: a variable equal to the template's own extra var as is
    (Jinja allowed there), every other one (survey answers, awx_* vars) tagged !unsafe."""
    return "".join(yaml.dump({key: value}, default_flow_style=False,
                             Dumper=yaml.SafeDumper if key in trusted and trusted[key] == value else _UnsafeDumper)
                   for key, value in values.items())


def _template(name):
    with open(ASSETS, encoding="utf-8") as fh:
        assets = yaml.safe_load(fh)
    (jt,) = [t for t in assets["job_templates"] if t["name"] == name]
    return jt


def _tree(path):
    """{relative path: sha256 (files) / 'dir' / link target} of everything under path."""
    out = {}
    for top, dirs, files in os.walk(path):
        for name in dirs + files:
            full = os.path.join(top, name)
            rel = os.path.relpath(full, path)
            if os.path.islink(full):
                out[rel] = "-> " + os.readlink(full)
            elif os.path.isdir(full):
                out[rel] = "dir"
            else:
                with open(full, "rb") as fh:
                    out[rel] = hashlib.sha256(fh.read()).hexdigest()
    return out


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """The project checkout AWX keeps (a copy: other work in this tree must not count as writes)."""
    checkout = tmp_path_factory.mktemp("awx-project") / "_8__gpu_runbook"
    checkout.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for part in PROJECT_PARTS:
        src = os.path.join(REPO, part)
        if os.path.isdir(src):
            shutil.copytree(src, checkout / part, symlinks=True, ignore=ignore)
        elif os.path.exists(src):
            shutil.copy2(src, checkout / part)
    return str(checkout)


@pytest.fixture(scope="module")
def inventory_json(project, tmp_path_factory):
    """The demo inventory as AWX imports it from a project source (ansible-inventory --export:
    variables kept as written, templates unrendered)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(PATH=BIN + os.pathsep + env.get("PATH", ""), HOME=str(tmp_path_factory.mktemp("sync-home")))
    done = subprocess.run([os.path.join(BIN, "ansible-inventory"), "-i", "inventory-examples/demo", "--list", "--export"],
                          cwd=project, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _awx_env(project, pdd, job_id):
    """The variables AWX's RunJob.build_env sets (those that matter off an AWX node)."""
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(project, "ansible.cfg"))
    roles = cfg.get("defaults", "roles_path", fallback=None)
    return {
        "JOB_ID": str(job_id), "INVENTORY_ID": "3", "PROJECT_REVISION": "0" * 40, "AWX_HOST": "https://awx.example.com",
        "ANSIBLE_RETRY_FILES_ENABLED": "False", "MAX_EVENT_RES": "700000", "AWX_PRIVATE_DATA_DIR": pdd,
        "ANSIBLE_SSH_CONTROL_PATH_DIR": os.path.join(pdd, "cp"),
        "ANSIBLE_ROLES_PATH": os.pathsep.join([os.path.join(pdd, "requirements_roles")] + ([roles] if roles else [])
                                              + ["~/.ansible/roles", "/usr/share/ansible/roles", "/etc/ansible/roles"]),
        "ANSIBLE_COLLECTIONS_PATH": os.pathsep.join([os.path.join(pdd, "requirements_collections"),
                                                     "~/.ansible/collections", "/usr/share/ansible/collections"]),
    }


def run_like_awx(tmp_path, monkeypatch, project, inventory, template_name, answers, extra_template_vars=None,
                 job_id=JOB_ID, artifacts=None):
    """One job of the template, as AWX would launch it (``artifacts``: what earlier workflow nodes
    published); -> (runner result, private data dir, data dir, HOME). The data dir is the shared
    volume: the same for every job of a test."""
    pdd, data, home = tmp_path / ("awx_%d_job" % job_id), tmp_path / "gpu-runbook-data", tmp_path / ("home-%d" % job_id)
    for d in (pdd / "inventory", pdd / "env", pdd / "cp", data, home):
        d.mkdir(parents=True, exist_ok=True)
    pdd, data, home = str(pdd), str(data), str(home)
    hosts = os.path.join(pdd, "inventory", "hosts")
    with open(hosts, "w") as fh:
        fh.write("#! /usr/bin/env python3\n# -*- coding: utf-8 -*-\nprint(%r)\n" % json.dumps(inventory))
    os.chmod(hosts, 0o700)

    jt = _template(template_name)
    survey = {q["variable"]: q.get("default", "") for q in jt["related"]["survey_spec"]["spec"]}
    survey.update(answers)
    # the template's extra vars, with the data volume's mount point where this test has it
    template_vars = dict(yaml.safe_load(jt["extra_vars"]), gpu_runbook_data=data, **(extra_template_vars or {}))
    extra = dict(template_vars, **(artifacts or {}))
    extra.update(survey)
    extra.update(awx_job_id=job_id, tower_job_id=job_id, awx_job_launch_type="workflow" if artifacts else "manual",
                 awx_job_template_name=jt["name"], awx_user_name="admin")
    with open(os.path.join(pdd, "env", "extravars"), "w") as fh:
        fh.write(awx_extravars(extra, template_vars))

    # a fresh job environment: nothing of this shell's Ansible settings, HOME empty
    for key in [k for k in os.environ if k.startswith(("ANSIBLE_", "PYTEST_"))]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", home)
    monkeypatch.setenv("PATH", BIN + os.pathsep + os.environ.get("PATH", ""))
    result = ansible_runner.run(
        private_data_dir=pdd, project_dir=project, playbook=jt["playbook"], inventory=hosts, limit=LIMIT,
        cmdline="-u root", envvars=_awx_env(project, pdd, job_id), ident=str(job_id), quiet=True,
        # a prompt would wait for an answer nobody gives: the idle timeout ends the job instead
        settings={"idle_timeout": 180, "job_timeout": 600, "suppress_ansible_output": True})
    return result, pdd, data, home


def _stdout(result):
    return "".join(e.get("stdout", "") for e in result.events)


def _artifact_data(result):
    stats = [e for e in result.events if e["event"] == "playbook_on_stats"]
    assert len(stats) == 1
    return stats[0]["event_data"].get("artifact_data") or {}


def _assert_no_writes_outside(result, project_before, project, home):
    assert result.status == "successful", (result.status, result.rc, _stdout(result)[-3000:])
    assert not [e for e in result.events if e["event"] == "playbook_on_vars_prompt"]
    assert _tree(project) == project_before, "the job wrote into the project checkout"
    # ansible-core makes its local temp root (~/.ansible/tmp) and leaves it empty; in AWX's
    # execution environment HOME is /runner, the private data dir itself
    left = _tree(home)
    assert set(left) <= {".ansible", os.path.join(".ansible", "tmp")} and set(left.values()) <= {"dir"}, left


def test_diagnose_runs_as_an_awx_job(tmp_path, monkeypatch, project, inventory_json):
    before = _tree(project)
    answers = {"job_log_dir": os.path.join(project, "inventory-examples", "demo-captures", "job-4242")}
    result, pdd, data, home = run_like_awx(tmp_path, monkeypatch, project, inventory_json, "gpu-runbook diagnose",
                                           answers, {"gpu_health_capture_dir": DEMO_CAPTURES})
    _assert_no_writes_outside(result, before, project, home)
    reports = os.path.join("reports", str(JOB_ID))
    assert set(_tree(data)) == {"reports", reports} | {os.path.join(reports, "report." + ext)
                                                       for ext in ("json", "md", "html")}
    with open(os.path.join(data, reports, "report.json")) as fh:
        report = json.load(fh)
    # the survey's job log was read: it names the stuck rank
    assert [f["name"] for f in report["inputs"]["job_logs"]["read"]] == ["llama-70b-pretrain-4242.out"]
    assert report["job"]["culprit_ranks"]
    stats = _artifact_data(result)
    summary = stats["gpu_runbook_summary"]
    assert summary["hosts"] == len(inventory_json["gpu-rack3"]["hosts"])
    assert stats["gpu_runbook_remediate"] == summary["remediate"] == report["cluster"]["remediate"]
    assert summary["remediate"], "the demo has hosts to remediate"
    assert summary["report_files"] == [os.path.join(data, reports, "report." + ext) for ext in ("json", "md", "html")]
    assert summary["culprit_hosts"] == [c["host"] for c in report["job"]["culprits"]]
    # everything the runner kept is in the private data dir
    assert result.config.artifact_dir.startswith(pdd + os.sep)


@pytest.mark.slow  # the full tier: the AWX-like diagnose run stays in the fast tier
def test_remediate_plan_only_publishes_the_plan_for_the_approval(tmp_path, monkeypatch, project, inventory_json):
    """The workflow's plan node: the remediate template, confirm left at the survey's no; a
    multi-select (a list of !unsafe strings) and an integer answer reach the plan's policy."""
    before = _tree(project)
    answers = {"incident_id": "INC-4242", "rungs": ["drain", "gpu_reset"], "max_drain": 1}
    result, pdd, data, home = run_like_awx(tmp_path, monkeypatch, project, inventory_json, "gpu-runbook remediate",
                                           answers, {"gpu_health_capture_dir": DEMO_CAPTURES})
    _assert_no_writes_outside(result, before, project, home)
    stats = _artifact_data(result)
    plan = stats["gpu_runbook_plan"]
    assert plan["plan_only"] is True
    assert stats["gpu_runbook_plan_act"] == plan["hosts_act"]
    plans = os.path.join(data, "plans", str(JOB_ID))
    assert sorted(os.listdir(plans)) == ["plan.json", "plan.md"]
    assert sorted(os.path.join(plans, f) for f in ("plan.json", "plan.md")) == sorted(plan["files"])
    with open(os.path.join(plans, "plan.json")) as fh:
        written = json.load(fh)
    assert written["incident_id"] == "INC-4242"
    assert written["policy"]["allowed_rungs"] == ["drain", "gpu_reset"] and written["policy"]["max_drain"] == 1
    assert written["policy"]["approved_hosts"] is None  # the plan node asks for no approval: it plans every host
    # a plan takes no lock and writes no ledger, drain record or job environment
    assert sorted(os.listdir(data)) == ["plans", "reports"]

    # the workflow's act node after the approval: confirm=yes, the plan node's artifacts as extra
    # vars. The demo's hosts are replayed captures: it plans again and acts on nothing.
    act, _, _, act_home = run_like_awx(tmp_path, monkeypatch, project, inventory_json, "gpu-runbook remediate",
                                       dict(answers, confirm="yes"), {"gpu_health_capture_dir": DEMO_CAPTURES},
                                       job_id=JOB_ID + 2, artifacts=stats)
    _assert_no_writes_outside(act, before, project, act_home)
    assert "confirm=yes ignored: the hosts are replayed from captures" in _stdout(act)
    assert _artifact_data(act)["gpu_runbook_plan"]["hosts_act"] == plan["hosts_act"]
    assert sorted(os.listdir(data)) == ["plans", "reports"]
    assert sorted(os.listdir(os.path.join(data, "plans"))) == [str(JOB_ID), str(JOB_ID + 2)]
    # the artifact reached the act node's plan as its approval (the template's approved_hosts)
    with open(os.path.join(data, "plans", str(JOB_ID + 2), "plan.json")) as fh:
        assert json.load(fh)["policy"]["approved_hosts"] == sorted(plan["hosts_act"])


def test_demo_inventory_without_the_capture_dir_stops_with_one_message(tmp_path, monkeypatch, project, inventory_json):
    """Imported as is, the demo inventory's capture dir points into the private data dir, which
    has no captures: the settings check stops the job before any host is gathered, in one line."""
    before = _tree(project)
    result, pdd, data, home = run_like_awx(tmp_path, monkeypatch, project, inventory_json,
                                           "gpu-runbook diagnose", {})
    assert result.status == "failed"
    assert _tree(project) == before
    out = _stdout(result)
    assert "Traceback" not in out
    assert os.path.join(pdd, "demo-captures", "nodes") in out
    assert not os.path.exists(os.path.join(data, "reports"))
