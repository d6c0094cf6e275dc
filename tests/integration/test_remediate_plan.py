"""remediate.yml in plan mode through the real ansible-playbook on the local connection:
the demo rack (captures replayed) and a live host (stand-in nvidia-smi/dmesg on PATH).
It plans, it never changes anything; only GPU tools are faked."""

import json
import os
import re
import subprocess

import pytest

from tests.conftest import BIN, DEMO, REPO, ansible_env, make_live_host, run_playbook, write_tool

N03, N05, N06 = "gpu-r3-n03", "gpu-r3-n05", "gpu-r3-n06"
HEALTHY = ["gpu-r3-n01", "gpu-r3-n02", "gpu-r3-n04", "gpu-r3-n07", "gpu-r3-n08"]
WIDE = ["-e", "max_drain=8", "-e", "max_drain_percent=100", "-e", "max_per_domain=8"]
PLAN_TASK = "Plan the remediation from the fresh diagnosis"
HEALTHY_SMI = os.path.join(REPO, "inventory-examples", "demo-captures", "nodes", "gpu-r3-n01", "nvidia-smi-q.txt")
PLAN_KEYS = {"schema", "incident_id", "generated", "policy", "hosts", "incidents", "job", "commands", "waves",
             "summary", "errors"}
HOST_KEYS = {"host", "verdict", "severity", "rung", "confidence", "confidence_reason", "evidence", "slurm", "decision",
             "reason", "rungs", "blockers", "final", "after"}
RUNG_KEYS = {"rung", "label", "scope", "disruptive", "status", "why", "target", "commands", "env", "notes",
             "blockers"}


def remediate(*args, inventory=None, env=None):
    """Run remediate.yml (-v, results as JSON on the default console); -> (proc, Output)."""
    extra = dict(env or {}, ANSIBLE_CALLBACK_RESULT_FORMAT="json")
    cmd = ["playbooks/remediate.yml", "-v", "-i", inventory or os.path.join(DEMO, "hosts.ini")]
    if inventory is None:
        cmd += ["-l", "gpu-rack3"]
    proc = run_playbook(cmd + list(args), env=extra)
    return proc, Output(proc.stdout)


class Output(object):
    """The console of one run: task results (JSON after '=>') and the recap."""

    def __init__(self, text):
        self.text = text

    def result(self, name=PLAN_TASK):
        """The (run_once) result of the task named ``name``; None when it did not run."""
        at = self.text.find(name + "] ***")
        if at < 0:
            return None
        at = self.text.index("=> ", at) + 3
        return json.JSONDecoder().raw_decode(self.text[at:])[0]

    def ran(self, fragment):
        return re.search(r"^TASK \[[^\]]*%s" % re.escape(fragment), self.text, re.M) is not None

    def nothing_changed(self):
        recap = self.text[self.text.index("PLAY RECAP"):]
        changed = [int(n) for n in re.findall(r"changed=(\d+)", recap)]
        return bool(changed) and not any(changed)


def task_result(out, name=PLAN_TASK):
    return out.result(name)


def task_ran(out, fragment):
    return out.ran(fragment)


def nothing_changed(out):
    return out.nothing_changed()


def the_plan(out):
    res = task_result(out)
    assert res is not None and not res.get("failed"), res
    return res["plan"], res["lines"]


def host(plan, name):
    return next(h for h in plan["hosts"] if h["host"] == name)


def statuses(h):
    return [(r["rung"], r["status"]) for r in h["rungs"]]


def planned_argvs(h):
    return [c for r in h["rungs"] if r["status"] == "planned" for c in r["commands"]]


def check_schema(plan):
    assert set(plan) == PLAN_KEYS
    assert plan["schema"] == "gpu-runbook/plan/v1"
    assert plan["errors"] == []
    for h in plan["hosts"]:
        assert set(h) == HOST_KEYS
        assert h["decision"] in ("act", "review", "blocked", "skip", "report_only")
        for r in h["rungs"]:
            assert set(r) == RUNG_KEYS
            assert all(isinstance(argv, list) and all(isinstance(a, str) for a in argv) for argv in r["commands"])
    assert plan["commands"] == [{"host": h["host"], "rung": r["rung"], "argv": argv} for h in plan["hosts"]
                                for r in h["rungs"] if r["status"] == "planned" for argv in r["commands"]]


# ------------------------------------------------------------------------------ demo rack
@pytest.fixture(scope="module")
def demo_plan(tmp_path_factory):
    plan_dir = tmp_path_factory.mktemp("plan")
    proc, out = remediate(*(WIDE + ["-e", "incident_id=INC-42", "-e", "plan_dir=%s" % plan_dir]))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    plan, lines = the_plan(out)
    return {"plan": plan, "lines": lines, "dir": plan_dir, "out": out}


def test_demo_plan_names_the_three_hosts_with_exact_commands(demo_plan):
    plan = demo_plan["plan"]
    assert plan["incident_id"] == "INC-42"
    assert [h["host"] for h in plan["hosts"] if h["decision"] == "act"] == [N03, N06, N05]
    n03 = host(plan, N03)  # a first Xid 79: reset skipped, reboot not allowed: drained for a reboot, no RMA
    assert statuses(n03) == [("drain", "planned"), ("gpu_reset", "skipped"), ("reboot", "blocked")]
    assert planned_argvs(n03) == [["scontrol", "update", "NodeName=gpu-r3-n03", "State=DRAIN",
                                   "Reason=gpu-runbook: INC-42: " + n03["evidence"]]]
    assert any("a reset cannot fix Xid 79 (reboot)" in b for b in n03["blockers"])
    assert "reboot not allowed here: the node stays drained until it gets one (-e allow_reboot=true)" \
        in n03["blockers"]
    assert n03["final"] == "stay drained: needs a reboot (-e allow_reboot=true)"
    n06 = host(plan, N06)  # Xid 48: drain, then reset that one GPU
    assert statuses(n06) == [("drain", "planned"), ("gpu_reset", "planned")]
    assert planned_argvs(n06) == [["scontrol", "update", "NodeName=gpu-r3-n06", "State=DRAIN",
                                   "Reason=gpu-runbook: INC-42: " + n06["evidence"]],
                                  ["nvidia-smi", "-r", "-i", "0000:97:00.0"]]
    assert n06["evidence"].startswith("Xid 48")
    n05 = host(plan, N05)  # the flapping port
    assert "port flapping" in n05["evidence"] and n05["rungs"][0]["rung"] == "drain"
    assert planned_argvs(n05)[0][:4] == ["scontrol", "update", "NodeName=gpu-r3-n05", "State=DRAIN"]
    for name in HEALTHY:
        h = host(plan, name)
        assert (h["decision"], h["rungs"], h["blockers"]) == ("skip", [], []), h
    assert {c["host"] for c in plan["commands"]} == {N03, N05, N06}


def test_demo_plan_with_allow_reboot_plans_a_reboot_that_keeps_the_node_drained(tmp_path):
    # the short extra var the AWX survey sets, read once by the plan: n03's first Xid 79 gets
    # its reboot (NVIDIA: RESTART_BM), never an RMA, and the reboot's argv keeps our drain
    proc, out = remediate(*(WIDE + ["-e", "incident_id=INC-42", "-e", "plan_dir=%s" % tmp_path,
                                    "-e", "allow_reboot=true"]))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    plan, _lines = the_plan(out)
    assert plan["policy"]["allow_reboot"] is True
    n03 = host(plan, N03)
    assert statuses(n03) == [("drain", "planned"), ("gpu_reset", "skipped"), ("reboot", "planned")]
    (boot,) = [a for a in planned_argvs(n03) if a[:2] == ["scontrol", "reboot"]]
    assert boot == ["scontrol", "reboot", "Reason=gpu-runbook: INC-42: reboot: " + n03["evidence"], N03]
    assert n03["final"] == "verify; resume if healthy and the drain is still ours"


def test_demo_plan_lines_one_short_line_per_host_the_commands_in_plan_md(demo_plan):
    lines = demo_plan["lines"]
    assert "plan only: nothing was changed" in lines[0]
    by_host = {ln.split(":")[0]: ln for ln in lines[1:4]}
    assert sorted(by_host) == [N03, N05, N06]
    assert "rungs: drain -> gpu_reset skipped -> reboot blocked |" in by_host[N03]
    # the blocker an operator acts on, with how; the explanation of the skipped reset is plan.md's
    assert "blocker: reboot not allowed here" in by_host[N03] and "-e allow_reboot=true" in by_host[N03]
    assert "a reset cannot fix" not in by_host[N03] and "(+1 more in plan.md)" in by_host[N03]
    n06 = host(demo_plan["plan"], N06)
    planned = sum(len(r["commands"]) for r in n06["rungs"] if r["status"] == "planned")
    assert planned >= 2 and by_host[N06].endswith("| %d command(s) in plan.md" % planned), by_host[N06]
    assert "scontrol" not in by_host[N06] and max(len(ln) for ln in lines[1:4]) < 300, lines[1:4]
    md = (demo_plan["dir"] / "plan.md").read_text()
    assert "scontrol update NodeName=gpu-r3-n06 State=DRAIN 'Reason=gpu-runbook: INC-42: Xid 48" in md
    assert "nvidia-smi -r -i 0000:97:00.0" in md
    assert lines[4] == "nothing to do (5): %s" % ", ".join(HEALTHY)
    assert not any(name in ln for ln in lines[:4] + lines[5:] for name in HEALTHY)


def test_demo_plan_json_written_and_valid(demo_plan):
    with open(demo_plan["dir"] / "plan.json") as fh:
        written = json.load(fh)
    check_schema(written)
    assert written == demo_plan["plan"]
    md = (demo_plan["dir"] / "plan.md").read_text()
    assert md.startswith("# Remediation plan INC-42")
    assert "nvidia-smi -r -i 0000:97:00.0" in md and "## gpu-r3-n03: act" in md
    assert not [n for n in os.listdir(demo_plan["dir"]) if n.startswith(".")]  # no temp file left behind
    res = task_result(demo_plan["out"])
    assert res["changed"] is True and sorted(res["summary"]["files"]) == sorted(
        str(demo_plan["dir"] / n) for n in ("plan.json", "plan.md"))
    stats = task_result(demo_plan["out"], "Hand the plan's summary to an AWX approval node")
    assert stats["ansible_stats"]["data"]["gpu_runbook_plan_act"] == [N03, N06, N05]
    assert stats["ansible_stats"]["data"]["gpu_runbook_plan"]["incident_id"] == "INC-42"


def test_check_mode_gives_the_same_plan_and_writes_nothing(demo_plan, tmp_path):
    proc, out = remediate(*(WIDE + ["-e", "incident_id=INC-42", "-e", "plan_dir=%s" % (tmp_path / "p"),
                                    "--check"]))
    assert proc.returncode == 0, proc.stdout[-4000:]
    plan, lines = the_plan(out)
    strip = lambda p: {k: v for k, v in p.items() if k != "generated"}  # noqa: E731 -- the diagnosis time
    assert strip(plan) == strip(demo_plan["plan"])
    assert lines[1:5] == demo_plan["lines"][1:5]
    assert not (tmp_path / "p").exists()
    assert nothing_changed(out)


def test_the_plan_is_the_same_whether_the_diagnosis_keeps_every_finding_or_the_suspects(demo_plan, tmp_path):
    """diagnosis_report_analysis_findings=suspects (the default) hands the plan only the suspect
    hosts' findings; the plan reads warning and critical findings, which only suspects have."""
    proc, out = remediate(*(WIDE + ["-e", "incident_id=INC-42", "-e", "plan_dir=%s" % (tmp_path / "p"),
                                    "-e", "diagnosis_report_analysis_findings=all"]))
    assert proc.returncode == 0, proc.stdout[-4000:]
    plan, lines = the_plan(out)
    strip = lambda p: {k: v for k, v in p.items() if k != "generated"}  # noqa: E731 -- the diagnosis time
    assert strip(plan) == strip(demo_plan["plan"])
    assert lines[:5] == demo_plan["lines"][:5]  # then where the plan was written: another directory
    report = task_result(out, "Build the cluster view from every host's result")
    assert any(h["findings"] for h in report["analysis"]["hosts"] if h["host"] in HEALTHY)  # "all" kept them
    default = task_result(demo_plan["out"], "Build the cluster view from every host's result")
    assert not any(h["findings"] for h in default["analysis"]["hosts"] if h["host"] in HEALTHY)


def test_confirm_yes_on_replayed_captures_changes_nothing_and_says_why(tmp_path):
    proc, out = remediate(*(WIDE + ["-e", "confirm=yes", "-e", "gpu_runbook_state_dir=%s" % tmp_path]))
    assert proc.returncode == 0, proc.stdout[-4000:]
    plan, lines = the_plan(out)
    assert "plan only: nothing was changed" in lines[0]
    assert "confirm=yes ignored: the hosts are replayed from captures" in proc.stdout
    assert not out.ran("Take the remediation lock") and not out.ran("Drain the node")
    assert list(tmp_path.iterdir()) == []  # no lock, no audit line
    assert nothing_changed(out)
    assert [h["host"] for h in plan["hosts"] if h["decision"] == "act"] == [N03, N06, N05]


NOT_APPROVED = "not in the approved plan (approved_hosts): nothing is done on this host"


def test_each_host_gets_its_own_entry_by_one_lookup(demo_plan):
    res = task_result(demo_plan["out"])
    assert res["by_host"] == {h["host"]: h for h in res["plan"]["hosts"]}
    assert "selectattr" not in open(os.path.join(REPO, "roles", "remediation_plan", "tasks", "main.yml")).read()


def test_an_approved_list_acts_only_on_its_hosts_the_others_are_blocked_by_name(demo_plan):
    proc, out = remediate(*(WIDE + ["-e", "incident_id=INC-42", "-e", "approved_hosts=gpu-r3-n06,gpu-r3-n99", "--check"]))
    assert proc.returncode == 0, proc.stdout[-4000:]
    plan, lines = the_plan(out)
    assert plan["policy"]["approved_hosts"] == [N06, "gpu-r3-n99"]
    assert [h["host"] for h in plan["hosts"] if h["decision"] == "act"] == [N06]
    for name in (N03, N05):
        h = host(plan, name)
        assert h["decision"] == "blocked" and h["reason"] == NOT_APPROVED and planned_argvs(h) == []
        # planned as before: the same rungs, each blocked
        assert [r["rung"] for r in h["rungs"]] == [r["rung"] for r in host(demo_plan["plan"], name)["rungs"]]
        assert any(ln.startswith(name + ": BLOCKED") and "not in the approved plan" in ln for ln in lines)
    assert host(plan, N06)["rungs"] == host(demo_plan["plan"], N06)["rungs"]
    stats = task_result(out, "Hand the plan's summary to an AWX approval node")
    assert stats["ansible_stats"]["data"]["gpu_runbook_plan_act"] == [N06]
    assert nothing_changed(out)
    # an approval of nothing (AWX: the plan's gpu_runbook_plan_act was empty)
    proc, out = remediate(*(WIDE + ["-e", '{"approved_hosts": []}', "--check"]))
    assert proc.returncode == 0, proc.stdout[-4000:]
    plan, _lines = the_plan(out)
    assert plan["summary"]["act"] == 0 and plan["commands"] == [] and plan["summary"]["blocked"] == 3


def test_symlinked_plan_json_is_refused(tmp_path):
    plan_dir = tmp_path / "plan"
    plan_dir.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    os.symlink(victim, plan_dir / "plan.json")
    proc, out = remediate(*(WIDE + ["-e", "plan_dir=%s" % plan_dir]))
    assert proc.returncode != 0
    res = task_result(out)
    assert "FAILED!" in proc.stdout and "plan.json is a symlink: refusing to write through it" in res["msg"]
    assert victim.read_text() == "keep me\n"
    assert os.path.islink(plan_dir / "plan.json")
    assert sorted(os.listdir(plan_dir)) == ["plan.json"]  # plan.md not written either, no temp file
    linked = tmp_path / "linked"
    os.symlink(tmp_path / "elsewhere", linked)  # plan_dir itself a symlink: not followed
    (tmp_path / "elsewhere").mkdir()
    proc, out = remediate(*(WIDE + ["-e", "plan_dir=%s" % linked]))
    assert proc.returncode != 0 and "is a symlink: refusing to follow it" in task_result(out)["msg"]
    assert os.listdir(tmp_path / "elsewhere") == []


def test_max_drain_1_shows_the_cap_blocker():
    proc, out = remediate("-e", "max_drain=1", "-e", "max_drain_percent=100", "-e", "max_per_domain=8")
    assert proc.returncode == 0, proc.stdout[-4000:]
    plan, lines = the_plan(out)
    assert host(plan, N03)["decision"] == "act"  # the most severe, costliest rung gets the budget
    for name in (N06, N05):
        h = host(plan, name)
        assert h["decision"] == "blocked"
        assert h["blockers"][0] == "cap: 1 of max 1 nodes already drained (max_drain)"
        assert planned_argvs(h) == []
    assert {c["host"] for c in plan["commands"]} == {N03}
    assert any(ln.startswith(N06 + ": BLOCKED") and "(max_drain)" in ln for ln in lines)


@pytest.mark.slow  # the full tier: the domains' rules are unit-tested; this runs them through the playbook
def test_failure_domains_come_from_named_groups_or_the_hosts_variable_never_a_prefix():
    # max_per_domain stays 1
    proc, out = remediate("-e", "max_drain=8", "-e", "max_drain_percent=100",
                          "-e", '{"remediation_plan_domain_groups": ["gpu-rack*"]}')
    assert proc.returncode == 0, proc.stdout[-4000:]
    plan, _lines = the_plan(out)
    assert plan["policy"]["domains"] == {"gpu-r3-n%02d" % i: "gpu-rack3" for i in range(1, 9)}
    assert host(plan, N03)["decision"] == "act"
    assert host(plan, N06)["blockers"][0] == \
        "cap: 1 of max 1 nodes already drained in failure domain gpu-rack3 (max_per_domain)"
    proc, out = remediate("-e", "max_drain=8", "-e", "max_drain_percent=100")  # gpu-rack3 is only a name
    plan, _lines = the_plan(out)
    assert plan["policy"]["domains"] == {} and plan["incidents"] == []
    assert [h["host"] for h in plan["hosts"] if h["decision"] == "act"] == [N03, N06, N05]
    # each host's gpu_runbook_domain (what the slurm_nodes plugin sets from Slurm's topology)
    proc, out = remediate("-e", "max_drain=8", "-e", "max_drain_percent=100", "-e", "gpu_runbook_domain=leaf7")
    plan, _lines = the_plan(out)
    assert set(plan["policy"]["domains"].values()) == {"leaf7"} and N06 in plan["policy"]["domains"]
    assert host(plan, N06)["blockers"][0] == \
        "cap: 1 of max 1 nodes already drained in failure domain leaf7 (max_per_domain)"


def test_rungs_allow_list_and_a_typo_stop_with_a_message():
    proc, out = remediate(*(WIDE + ["-e", "rungs=drain"]))
    assert proc.returncode == 0, proc.stdout[-4000:]
    plan, _lines = the_plan(out)
    assert plan["policy"]["allowed_rungs"] == ["drain"]
    assert ("gpu_reset", "blocked") in statuses(host(plan, N06))
    assert "rung gpu_reset not allowed by the policy (allowed_rungs)" in host(plan, N06)["blockers"]
    proc, out = remediate("-e", "rungs=drain,gpu_rest")
    assert proc.returncode != 0
    res = task_result(out)
    assert "FAILED!" in proc.stdout and "cannot plan: policy allowed_rungs: unknown rung(s) gpu_rest" in res["msg"]


def test_bad_cap_stops_the_play_before_any_host_is_gathered():
    proc, out = remediate("-e", "max_drain_percent=150")
    assert proc.returncode != 0
    assert "max_drain_percent (150) in 0-100" in proc.stdout
    assert not task_ran(out, "Gather GPU, kernel-log and InfiniBand health")
    proc, out = remediate("-e", "max_drain=lots")
    assert proc.returncode != 0
    assert not task_ran(out, "Gather GPU, kernel-log and InfiniBand health")
    assert "remediation_plan_max_drain" in proc.stdout


# ------------------------------------------------------------------------------ live host
_tool = write_tool


XID48 = ("[Wed Dec  2 07:09:51 2026] NVRM: Xid (PCI:0000:53:00): 48, pid='<unknown>', name=<unknown>, "
         "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at physAddr "
         "0x12bac1c3e0 partition 2, subpartition 1.")


@pytest.fixture
def live(tmp_path):
    """A local host with an Xid 48 on GPU 0000:53:00.0; nvidia-smi logs every call."""
    h = make_live_host(tmp_path)
    bindir, inv = h["bin"], h["inv"]
    _tool(bindir, "dmesg", 'echo "%s"\n' % XID48.replace('"', '\\"'))
    log = tmp_path / "nvidia-smi.log"

    def smi(apps_body):
        _tool(bindir, "nvidia-smi", 'echo "$*" >> %s\ncase "$*" in *query-compute-apps*) %s;; esac\ncat %s\n'
              % (log, apps_body, HEALTHY_SMI))

    def run(*args, env=None):
        # a live host without Slurm: the plan reads no Slurm state (its drains would be blocked)
        return remediate("-e", "remediation_plan_read_slurm=false", "-e", "gpu_runbook_state_dir=%s" % state,
                         *args, inventory=str(inv),
                         env=dict(env or {}, PATH="%s:%s" % (bindir, os.environ["PATH"])))

    state = tmp_path / "state"

    return {"smi": smi, "run": run, "log": log}


def test_live_busy_gpu_blocks_the_reset_by_name(live):
    live["smi"]('printf "pid, process_name, gpu_bus_id, gpu_uuid, used_memory [MiB]\\n'
                '4711, python, 00000000:53:00.0, GPU-1, 70000 MiB\\n'
                '4712, torchrun, 00000000:64:00.0, GPU-2, 100 MiB\\n"; exit 0')
    proc, out = live["run"]()
    assert proc.returncode == 0, proc.stdout[-4000:]
    plan, lines = the_plan(out)
    h = host(plan, "node-live")
    reset = next(r for r in h["rungs"] if r["rung"] == "gpu_reset")
    assert reset["status"] == "blocked"
    assert reset["blockers"] == ["GPU 0000:53:00.0 has 1 compute process: python (pid 4711)"]
    assert "GPU 0000:53:00.0 has 1 compute process: python (pid 4711)" in lines[1]
    calls = live["log"].read_text().splitlines()
    assert calls and not any(c.startswith(("-r", "--gpu-reset", "-pm")) or " -r" in c for c in calls), calls
    assert nothing_changed(out)


def test_live_unreadable_process_list_blocks_the_reset(live):
    live["smi"]('echo "Failed to initialize NVML: Unknown Error" >&2; exit 255')
    proc, out = live["run"]()
    assert proc.returncode == 0, proc.stdout[-4000:]
    plan, _lines = the_plan(out)
    reset = next(r for r in host(plan, "node-live")["rungs"] if r["rung"] == "gpu_reset")
    assert reset["status"] == "blocked"
    assert reset["blockers"] == ["GPU 0000:53:00.0: the compute process list is unreadable, so it may be in use"]


def test_live_idle_gpu_gets_the_reset_planned(live):
    live["smi"]("exit 0")
    proc, out = live["run"]()
    assert proc.returncode == 0, proc.stdout[-4000:]
    plan, _lines = the_plan(out)
    h = host(plan, "node-live")
    assert planned_argvs(h)[-1] == ["nvidia-smi", "-r", "-i", "0000:53:00.0"]


def test_module_documentation_parses():
    proc = subprocess.run([os.path.join(BIN, "ansible-doc"), "--json", "-M", "library", "gpu_runbook_plan"], cwd=REPO,
                          env=ansible_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)["gpu_runbook_plan"]
    assert set(doc["doc"]["options"]) == {"analysis", "facts", "gathered", "hosts", "result_var", "slurm_var",
                                          "domain_groups", "domain_group_names", "domain_var", "policy", "plan_dir",
                                          "confirm"}
    # check mode plans without writing plan.json/plan.md, and says changed=false where a real run writes them
    assert doc["doc"]["attributes"]["check_mode"]["support"] == "partial"
    assert {"schema", "hosts", "commands", "summary"} <= set(doc["return"]["plan"]["contains"])


def test_live_host_whose_slurm_state_is_unknown_is_not_drained(live, tmp_path):
    """Slurm read, but no slurmctld answers: the drain (and the reset after it) is blocked by name."""
    live["smi"]("exit 0")
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=none\nSlurmctldHost=ctl(127.0.0.1)\nSlurmctldPort=9\n"
                    "NodeName=node-live State=UNKNOWN\nPartitionName=p Nodes=node-live\n")
    proc, out = live["run"]("-e", "remediation_plan_read_slurm=true", "-e", "remediation_plan_slurm_timeout=5",
                            "-e", "confirm=yes", env={"SLURM_CONF": str(conf)})
    assert proc.returncode == 0, proc.stdout[-4000:]
    plan, lines = the_plan(out)
    h = host(plan, "node-live")
    assert h["decision"] == "blocked"
    assert h["rungs"][0]["blockers"][0].startswith("Slurm state unknown: ")
    assert h["rungs"][0]["blockers"][0].endswith("no drain without knowing the node's state")
    assert not out.ran("Drain the node") and not out.ran("Reset the GPU")
    # the run took the lock and gave it back; the audit says the host was refused
    audit = [json.loads(x) for x in (tmp_path / "state" / "audit.jsonl").read_text().splitlines()]
    assert [(a["rung"], a["result"]) for a in audit if a.get("host") == "node-live"] == [("plan", "refused")]
    assert not (tmp_path / "state" / "lock.json").exists()


def test_live_confirm_with_an_empty_approval_acts_on_nothing(live, tmp_path):
    """confirm=yes on a real host with an idle GPU (the plan would drain and reset it), but the
    approved plan names no host: the run stays a plan, no rung runs, the lock is given back."""
    live["smi"]("exit 0")
    proc, out = live["run"]("-e", "confirm=yes", "-e", '{"approved_hosts": []}')
    assert proc.returncode == 0, proc.stdout[-4000:]
    plan, lines = the_plan(out)
    h = host(plan, "node-live")
    assert h["decision"] == "blocked" and h["reason"] == NOT_APPROVED and planned_argvs(h) == []
    assert "the approved plan names no host, nothing acts" in lines[0]
    assert task_result(out)["summary"]["plan_only"] is True
    assert not out.ran("Drain the node") and not out.ran("Reset the GPU") and not out.ran("Audit the plan")
    assert not (tmp_path / "state" / "lock.json").exists()
    calls = live["log"].read_text().splitlines()
    assert not any(" -r" in c or c.startswith("-r") for c in calls), calls


def _listed(*tags):
    proc = run_playbook(["playbooks/remediate.yml", "-i", os.path.join(DEMO, "hosts.ini"), "-l", "gpu-rack3",
                         "--list-tasks"] + list(tags))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return proc.stdout


@pytest.mark.parametrize("tags,runs,skipped", [
    (["--tags", "drain,verify"], ["Drain the node", "Verify, then resume"],
     ["Reset the GPUs", "Restart the IB stack", "Exclude sick rails and fix", "Set the IB retry timeouts"]),
    (["--skip-tags", "gpu_reset,ib_restart"], ["Drain the node", "Verify, then resume", "Exclude sick rails and fix"],
     ["Reset the GPUs", "Restart the IB stack"]),
])
def test_tags_choose_rungs_but_never_the_diagnosis_the_plan_or_the_rescue(tags, runs, skipped):
    out = _listed(*tags)
    for always in ("gpu_health : Gather GPU, kernel-log and InfiniBand health", "Plan the remediation from the fresh",
                   "Take the lock and group the hosts", "Note when this host's ladder started",
                   "Report and release the lock"):
        assert always in out, always
    for name in runs:
        assert name in out, name
    for name in skipped:
        assert name not in out, name


# ------------------------------------------------------------------------------ the plan step three ways
# What the remediation_plan role built in Jinja before the action plugin read it from hostvars:
# the plan from it must be the same (the action plugin's gathered_from is a port of this).
_GATHERED_TEMPLATE = """>-
          {%- set hv = ansible_play_hosts | map('extract', hostvars) | list -%}
          {%- set gh = hv | map(attribute='gpu_health_result.ansible_facts.gpu_health', default={}) | list -%}
          {%- set absent = '(not gathered)' -%}
          {{ {'hosts': ansible_play_hosts,
              'compute_apps': dict(ansible_play_hosts | zip(gh | map(attribute='facts.compute_apps', default=absent))
                                   | rejectattr('1', 'equalto', absent)),
              'probes': dict(ansible_play_hosts | zip(gh | map(attribute='probes', default={}))),
              'slurm': dict(ansible_play_hosts | zip(hv | map(attribute='remediation_plan_slurm', default={})))} }}"""

_STEP_PLAY = """\
---
- name: The plan step from the hosts' variables and from a map of them
  hosts: gpu_nodes
  gather_facts: false
  roles:
    - role: gpu_health
  tasks:
    - name: The Slurm read as the role registers it (one host read, one not answered, the others skipped)
      ansible.builtin.set_fact:
        remediation_plan_slurm: >-
          {{ {'state': 'ALLOCATED', 'reason': '', 'owned': false} if inventory_hostname == 'gpu-r3-n06'
             else {'failed': true, 'msg': 'slurmctld not answering'} if inventory_hostname == 'gpu-r3-n05'
             else {'skipped': true} }}
    - name: The diagnosis, as a map of whole results
      gpu_runbook_report:
        results: "{{ dict(ansible_play_hosts | zip(ansible_play_hosts | map('extract', hostvars, 'gpu_health_result'))) }}"
      delegate_to: localhost
      run_once: true
      register: diagnosis
    - name: Plan from what the role built before
      gpu_runbook_plan:
        analysis: "{{ diagnosis.analysis }}"
        gathered: %(template)s
        domain_groups: "{{ groups }}"
        domain_group_names: [gpu-rack*]
        policy: {max_drain: 8, max_drain_percent: 100, max_per_domain: 8, incident_id: INC-7}
        plan_dir: "{{ out }}/gathered"
      delegate_to: localhost
      run_once: true
    - name: Plan from the hosts' variables
      gpu_runbook_plan:
        analysis: "{{ diagnosis.analysis }}"
        hosts: "{{ ansible_play_hosts }}"
        domain_groups: "{{ groups }}"
        domain_group_names: [gpu-rack*]
        policy: {max_drain: 8, max_drain_percent: 100, max_per_domain: 8, incident_id: INC-7}
        plan_dir: "{{ out }}/hosts"
      delegate_to: localhost
      run_once: true
      register: by_hosts
      ignore_errors: "{{ without_plugin | default(false) | bool }}"
    - name: Keep what naming the hosts said
      ansible.builtin.copy:
        content: "{{ by_hosts.msg | default('') }}"
        dest: "{{ out }}/hosts.msg"
        mode: "0600"
      delegate_to: localhost
      run_once: true
"""


@pytest.mark.slow  # the full tier: the three paths' agreement: the plan's own tests run in the fast tier
def test_the_plan_step_as_plugin_from_hostvars_as_plugin_from_a_map_and_as_module_agree(tmp_path):
    """The action plugin reading the hosts' variables, the action plugin given the map the role
    used to template, and the module alone in its own process (no action plugin; it refuses
    ``hosts`` with a message): the same plan.json. The demo rack, a Slurm read on one host and
    a host whose gather failed."""
    inv = tmp_path / "hosts.ini"
    captures = os.path.join(DEMO + "-captures", "nodes")
    nodes = "\n".join("gpu-r3-n%02d gpu_health_capture_dir=%s/gpu-r3-n%02d" % (i, captures, i) for i in range(1, 9))
    inv.write_text("[gpu-rack3]\n%s\ngpu-broken ansible_python_interpreter=/nonexistent/python3\n\n"
                   "[gpu_nodes:children]\ngpu-rack3\n\n[gpu_nodes:vars]\nansible_connection=local\n"
                   "ansible_python_interpreter={{ ansible_playbook_python }}\n" % nodes)
    play = tmp_path / "play.yml"
    play.write_text(_STEP_PLAY % {"template": _GATHERED_TEMPLATE})
    plans = {}
    for how, env in (("plugin", None), ("module", {"ANSIBLE_ACTION_PLUGINS": str(tmp_path / "none")})):
        (tmp_path / "none").mkdir(exist_ok=True)
        out = tmp_path / how
        proc = run_playbook(["-i", str(inv), str(play), "-e", "out=%s" % out,
                             "-e", "without_plugin=%s" % (how == "module")], env=env)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
        assert "Traceback" not in proc.stdout + proc.stderr
        for kind in ("gathered", "hosts") if how == "plugin" else ("gathered",):
            with open(out / kind / "plan.json") as fh:
                plans["%s, %s" % (how, kind)] = {k: v for k, v in json.load(fh).items() if k != "generated"}
        said = (out / "hosts.msg").read_text()
        assert said == ("" if how == "plugin" else
                        "hosts needs the gpu_runbook_plan action plugin (action_plugins = ./plugins/action in "
                        "ansible.cfg); without it pass gathered")
    first = plans["plugin, hosts"]
    assert all(p == first for p in plans.values()), sorted(plans)
    decided = {h["host"]: h["decision"] for h in first["hosts"]}
    # each host's Slurm read reached the plan: read, not answered (its drain blocked), skipped (none)
    assert (decided[N06], host(first, N06)["slurm"]) == ("act", "no reason given (ALLOCATED)")
    assert decided[N05] == "blocked" and "Slurm state unknown: slurmctld not answering" in host(first, N05)["slurm"]
    assert (decided[N03], host(first, N03)["slurm"]) == ("act", None)
    assert decided["gpu-broken"] == "report_only" and all(decided[h] == "skip" for h in HEALTHY)


def test_a_plan_with_errors_but_hosts_warns_and_plans_the_rest(tmp_path):
    """A host entry that is not a host analysis is left out with a warning (the action plugin's
    result carries it as the module's did), and the other hosts are still planned."""
    play = tmp_path / "warn.yml"
    play.write_text("""\
---
- name: A diagnosis with one bad host entry
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Plan
      gpu_runbook_plan:
        analysis:
          schema: gpu-runbook/analysis/v1
          hosts: [42, {host: gpu-a, verdict: healthy, severity: info, rung: none, findings: []}]
          cluster: {}
      register: planned
    - name: Keep it
      ansible.builtin.copy:
        content: "{{ planned | to_json }}"
        dest: "%s"
        mode: "0600"
""" % (tmp_path / "planned.json"))
    proc = run_playbook(["-i", "localhost,", "-c", "local", str(play), "-e",
                         "ansible_python_interpreter=%s" % os.path.join(BIN, "python")])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    said = "hosts[0] is not a host analysis: left out, nothing planned for it"
    assert "[WARNING]: " + said in proc.stdout + proc.stderr
    planned = json.loads((tmp_path / "planned.json").read_text())
    assert planned["warnings"] == [said] and [h["host"] for h in planned["plan"]["hosts"]] == ["gpu-a"]


def test_the_plan_ends_with_the_whole_command_that_acts_and_the_diagnosis_does_not_offer_to_plan(demo_plan):
    text = demo_plan["out"].text
    shown = task_result(demo_plan["out"], "Show the plan, one line per host, and the command that acts on it")["msg"]
    assert shown.splitlines()[-1].startswith("next: act on this plan"), shown
    cmd = shown.splitlines()[-1].split("): ", 1)[1]
    assert cmd.startswith("ansible-playbook playbooks/remediate.yml -i ") and " -l gpu-rack3" in cmd
    assert cmd.endswith(" -e confirm=yes"), cmd
    # remediate.yml is the planning run: its diagnosis does not print the command that plans
    assert "next: plan the fix" not in text


def test_a_check_mode_plan_prints_no_command_to_act(demo_plan):
    proc, out = remediate(*(WIDE + ["--check"]))
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert "next: act on this plan" not in out.text and "next: plan the fix" not in out.text
