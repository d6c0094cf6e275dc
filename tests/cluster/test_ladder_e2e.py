"""remediate.yml end to end on the emulated cluster: real ansible-playbook over real SSH to 10
namespaced hosts, the real slurmctld/slurmd with real jobs running, fake GPUs/HCAs only
(tests/scenarios/ladder-e2e.yml says which host has which fault and what must happen).

One module-scoped run of the whole story, in order: plan mode (changes nothing), the ladder
(-e confirm=yes), a second run (changes nothing), then the caps and the correlated-failure
rule on fresh faults. The assertions read the final Slurm states and reasons, the fakes'
per-host command logs, the ledger and the files written on the controller."""

import json
import os
import re
import time

import pytest

from module_utils.gpu_runbook.slurm import parse_scontrol_show_node
from tests.cluster.conftest import own_testbed

N = {i: "gpu-r5-n%02d" % i for i in range(1, 11)}
INCIDENT = "INC-E2E-1"
ADMIN_REASON = "bad fan, ticket 4711"
RUNGS_TOUCHING = ("-r", "--gpu-reset", "restart")


def node(tb, name):
    return parse_scontrol_show_node(tb.slurm("scontrol", "show", "node", "-o", name).stdout)


def slurm_view(tb):
    return {h: {k: node(tb, h).get(k) for k in ("state", "reason", "reason_user", "reason_time")} for h in tb.hosts}


def admin_view(view):
    """A Slurm view without what jobs change: the drain flag, the reason and who set it."""
    return {h: {"drain": "drain" in (v.get("state") or "").lower(), "reason": v.get("reason"),
                "reason_user": v.get("reason_user"), "reason_time": v.get("reason_time")} for h, v in view.items()}


def jobs_on(tb, name):
    out = tb.slurm("squeue", "-h", "-w", name, "-o", "%i %T").stdout
    return [ln.split() for ln in out.splitlines() if ln.strip()]


def acting_calls(tb, name):
    """The fakes' calls that change hardware: GPU resets, persistence changes, openibd restarts."""
    out = []
    for c in tb.commands(name):
        argv = c.get("argv") or []
        tool = os.path.basename(argv[0]) if argv else ""
        if tool == "nvidia-smi" and any(a in ("-r", "--gpu-reset", "-pm") for a in argv[1:]):
            out.append(argv)
        elif tool == "systemctl" and len(argv) > 2 and argv[1] in ("restart", "stop", "start"):
            out.append(argv)
        elif tool == "modprobe":
            out.append(argv)
    return out


class Run(object):
    def __init__(self, proc, plan_dir):
        self.proc = proc
        self.text = proc.stdout + proc.stderr
        self.plan = self._load(plan_dir, "plan.json")
        self.result = self._load(plan_dir, "result.json")

    @staticmethod
    def _load(d, name):
        p = os.path.join(d, name)
        return json.load(open(p)) if os.path.exists(p) else None

    def changed_total(self):
        recap = self.text[self.text.index("PLAY RECAP"):]
        return sum(int(n) for n in re.findall(r"changed=(\d+)", recap))

    def host_plan(self, name):
        return next(h for h in self.plan["hosts"] if h["host"] == name)

    def outcome(self, name):
        return next((h for h in (self.result or {}).get("hosts", []) if h["host"] == name), None)


def remediate(tb, work, tag, *extra):
    plan_dir = os.path.join(work, tag)
    args = ["playbooks/remediate.yml", "-l", tb.rack,
            "-e", "gpu_health_expected_gpus=8", "-e", "gpu_health_expected_ib_rate=400",
            "-e", "gpu_health_probe_timeout=5",
            "-e", "gpu_runbook_state_dir=%s/state" % work, "-e", "gpu_runbook_drain_dir=%s/drains" % work,
            "-e", "gpu_runbook_rma_dir=%s/rma" % work, "-e", "gpu_runbook_job_env_dir=%s/job-env" % work,
            "-e", "plan_dir=%s" % plan_dir, "-e", "incident_id=%s" % INCIDENT,
            # the fakes' sysfs and procfs; short waits: the fakes answer at once
            "-e", "rung_ib_restart_sysfs_root=/opt/fakehw/sys", "-e", "rung_ib_restart_proc_root=/opt/fakehw/proc",
            "-e", "rung_ib_restart_soak=3", "-e", "rung_ib_restart_wait=20", "-e", "rung_ib_restart_expected_rate=400",
            "-e", "rung_drain_wait=180"] + list(extra)
    proc = tb.run_ansible(*args, tool="ansible-playbook", timeout=900)
    return Run(proc, plan_dir)


# rail_errors=exclude: n05 shows the job-scoped exclusion, still there by policy (the default drains)
WIDE = ["-e", "max_drain=8", "-e", "max_drain_percent=100", "-e", "max_per_domain=8",
        "-e", "rail_errors=exclude"]


@pytest.fixture(scope="module")
def story(tmp_path_factory):
    work = str(tmp_path_factory.mktemp("ladder"))
    with own_testbed("ladder-e2e", 10) as tb:
        tb.slurm("scontrol", "update", "NodeName=%s" % N[6], "State=DRAIN", "Reason=%s" % ADMIN_REASON)
        tb.set_processes(N[7], 5, [{"pid": 4711, "name": "python", "mem": 70000}])
        long_job = tb.sbatch([N[8]], "sleep 900", name="long-train")
        short_job = tb.sbatch([N[2]], "sleep 25", name="short-eval")
        tb.wait_nodes(lambda st: st.startswith(("alloc", "mix")), nodes=[N[2], N[8]], timeout=30)
        s = {"tb": tb, "work": work, "long_job": long_job, "short_job": short_job,
             "admin_before": node(tb, N[6])}
        before = slurm_view(tb)
        s["plan"] = remediate(tb, work, "plan", *WIDE)
        s["after_plan"] = slurm_view(tb)
        s["before_plan"] = before
        s["calls_after_plan"] = {h: acting_calls(tb, h) for h in tb.hosts}
        t0 = time.monotonic()
        s["act"] = remediate(tb, work, "act", *(WIDE + ["-e", "confirm=yes"]))
        s["act_s"] = time.monotonic() - t0
        s["after_act"] = slurm_view(tb)
        s["calls_after_act"] = {h: acting_calls(tb, h) for h in tb.hosts}
        s["again"] = remediate(tb, work, "again", *(WIDE + ["-e", "confirm=yes"]))
        s["after_again"] = slurm_view(tb)
        s["calls_after_again"] = {h: acting_calls(tb, h) for h in tb.hosts}
        yield s


def _ok(run):
    assert run.proc.returncode == 0, run.text[-6000:]


def test_plan_mode_changes_nothing(story):
    run = story["plan"]
    _ok(run)
    assert run.changed_total() == 1  # plan.json/plan.md written on the controller, nothing else
    # what we could change: drains and reasons; a job ending meanwhile (short-eval on n02) is not ours
    assert admin_view(story["after_plan"]) == admin_view(story["before_plan"])
    assert all(calls == [] for calls in story["calls_after_plan"].values()), story["calls_after_plan"]
    assert run.result is None
    decisions = {h["host"]: h["decision"] for h in run.plan["hosts"]}
    assert {h for h, d in decisions.items() if d == "act"} == {N[1], N[2], N[3], N[4], N[5], N[7]}, decisions
    assert decisions[N[6]] in ("skip", "report_only") and decisions[N[8]] == "skip"


def test_the_ladder_run_succeeds_and_writes_its_result(story):
    _ok(story["act"])
    res = story["act"].result
    assert res and res["incident_id"] == INCIDENT
    # the nodes the ladder climbed on; n05's rail is the job's business, its node is not touched
    assert {h["host"] for h in res["hosts"]} == {N[1], N[2], N[3], N[4], N[7]}
    assert story["act"].text.count("ladder acted on no host") == 0


def test_xid79_host_stays_drained_for_a_reboot_reset_skipped_and_no_rma_without_evidence(story):
    # a first Xid 79 is NVIDIA's RESTART_BM: with reboots not allowed the node stays drained for
    # one, its reason saying so and naming the GPU; an RMA needs hardware evidence, not a policy
    tb, after = story["tb"], story["after_act"][N[1]]
    assert "DRAIN" in after["state"] and after["reason"].startswith("gpu-runbook: %s: " % INCIDENT)
    assert "needs a reboot (-e allow_reboot=true)" in after["reason"], after["reason"]
    gpu = tb.state(N[1])["gpus"][2]
    assert gpu["bus"].lower() in after["reason"].lower(), after["reason"]
    assert not [c for c in story["calls_after_act"][N[1]] if "-r" in c or "--gpu-reset" in c]
    assert not os.path.exists(os.path.join(story["work"], "rma", INCIDENT, N[1] + ".json"))
    assert story["act"].host_plan(N[1])["final"] == "stay drained: needs a reboot (-e allow_reboot=true)"


def test_xid48_pending_remap_host_is_reset_verified_and_resumed_after_its_job_ended(story):
    tb = story["tb"]
    after = story["after_act"][N[2]]
    assert "DRAIN" not in after["state"] and after["state"].startswith("IDLE"), after
    resets = [c for c in story["calls_after_act"][N[2]] if "-r" in c or "--gpu-reset" in c]
    assert len(resets) == 1, resets
    g = tb.state(N[2])["gpus"][4]
    assert resets[0][-1].lower().endswith(g["pci"].lower()[-7:])
    assert str(g.get("remapped_row_pending", "No")).lower() in ("no", "false")
    # the drain waited for the running job; it was never cancelled
    acct = tb.slurm("scontrol", "show", "job", str(story["short_job"]), check=False).stdout
    assert "JobState=CANCELLED" not in acct


def test_flapping_port_host_is_restarted_verified_and_resumed(story):
    after = story["after_act"][N[3]]
    assert "DRAIN" not in after["state"], after
    restarts = [c for c in story["calls_after_act"][N[3]] if c[:2] == ["systemctl", "restart"] or
                (len(c) > 2 and c[1] == "restart")]
    assert len(restarts) == 1 and restarts[0][-1] == "openibd", story["calls_after_act"][N[3]]


def test_bad_cable_stays_drained_for_the_cable_after_one_restart(story):
    after = story["after_act"][N[4]]
    assert "DRAIN" in after["state"]
    assert "cable" in after["reason"] and "mlx5_0" in after["reason"], after["reason"]
    restarts = [c for c in story["calls_after_act"][N[4]] if len(c) > 2 and c[1] == "restart"]
    assert len(restarts) == 1


def test_one_bad_rail_is_excluded_for_the_job_without_a_drain(story):
    after = story["after_act"][N[5]]
    assert "DRAIN" not in after["state"] and story["calls_after_act"][N[5]] == []
    env = open(os.path.join(story["work"], "job-env", "nccl.env")).read()
    assert re.search(r"^NCCL_IB_HCA=\^=mlx5_3$", env, re.M), env


def test_admin_drained_healthy_host_is_untouched_before_and_after(story):
    before = story["admin_before"]
    for view in ("after_plan", "after_act", "after_again"):
        now = story[view][N[6]]
        assert now["reason"] == before["reason"] == ADMIN_REASON
        assert now["reason_user"] == before["reason_user"] and now["reason_time"] == before["reason_time"]
    assert story["calls_after_again"][N[6]] == []


def test_busy_gpu_reset_is_refused_with_the_holder_named(story):
    after = story["after_act"][N[7]]
    assert "DRAIN" in after["state"]
    assert "python" in after["reason"] and "4711" in after["reason"], after["reason"]
    assert not [c for c in story["calls_after_act"][N[7]] if "-r" in c or "--gpu-reset" in c]


def test_running_job_on_a_healthy_host_keeps_running(story):
    tb = story["tb"]
    assert [j for j in jobs_on(tb, N[8]) if j[0] == str(story["long_job"])] == [[str(story["long_job"]), "RUNNING"]]
    assert story["calls_after_act"][N[8]] == [] and "DRAIN" not in story["after_act"][N[8]]["state"]


def test_a_second_run_changes_nothing(story):
    run = story["again"]
    _ok(run)
    assert story["after_again"] == story["after_act"]
    assert story["calls_after_again"] == story["calls_after_act"]


def test_the_audit_log_says_who_did_what_where(story):
    lines = [json.loads(x) for x in open(os.path.join(story["work"], "state", "audit.jsonl"))]
    by = {(a.get("host"), a["rung"], a["result"]) for a in lines}
    assert (N[2], "gpu_reset", "ok") in by and (N[3], "ib_restart", "ok") in by
    assert any(h == N[7] and r == "gpu_reset" and res == "refused" for h, r, res in by)
    assert not any(a.get("host") == N[6] for a in lines if a["rung"] != "plan")


@pytest.mark.slow  # the full tier: test_rung_verify's reboots run in the fast tier
def test_xid79_host_with_allow_reboot_is_rebooted_verified_and_resumed(story):
    # the same incident again, the reboot now allowed: Slurm reboots the node (the testbed's
    # RebootProgram), the drain survives the boot, the GPU is back on the bus, the ladder
    # re-gathers and verifies, and only then resumes it
    tb = story["tb"]
    boot_before = node(tb, N[1]).get("boot_time")
    run = remediate(tb, story["work"], "reboot", "-l", N[1], "-e", "allow_reboot=true", "-e", "confirm=yes",
                    "-e", "rung_verify_reboot_wait=120", *WIDE)
    _ok(run)
    assert run.plan["policy"]["allow_reboot"] is True
    assert [r["status"] for r in run.host_plan(N[1])["rungs"] if r["rung"] == "reboot"] == ["planned"]
    assert [c["cmd"] for c in tb.commands(N[1]) if c.get("cmd") in ("reboot", "fakehw-boot")] == ["reboot", "fakehw-boot"]
    after = node(tb, N[1])
    assert "DRAIN" not in after["flags"] and after["reason"] is None, after
    assert after.get("boot_time") != boot_before
    assert run.outcome(N[1])["final"] == "resumed", run.outcome(N[1])
    audit = [json.loads(x) for x in open(os.path.join(story["work"], "state", "audit.jsonl"))]
    mine = [(a["rung"], a["result"]) for a in audit if a.get("host") == N[1] and a["rung"] in ("reboot", "verify")]
    # sick before the reboot, rebooted, verified healthy after it (then resumed)
    assert mine[-3:] == [("verify", "failed"), ("reboot", "ok"), ("verify", "ok")], mine
    assert [a["rung"] for a in audit if a.get("host") == N[1]][-1] == "resume"


def _fresh_faults(story, tag):
    """Every fault of the scenario back on the hardware, every node but the admin's resumed,
    and a new ledger: a new incident on the same cluster."""
    tb = story["tb"]
    tb.reset_state()
    for h in tb.hosts:
        if h != N[6] and "DRAIN" in (node(tb, h).get("state") or ""):
            tb.slurm("scontrol", "update", "NodeName=%s" % h, "State=RESUME")
    work = os.path.join(story["work"], tag)
    os.makedirs(work)
    return tb, work


@pytest.mark.slow  # the full tier: the cap's arithmetic is the unit tests'; this is its run on the cluster
def test_the_drain_cap_stops_a_run_that_would_drain_too_much(story):
    tb, work = _fresh_faults(story, "cap")
    before = slurm_view(tb)
    # max_drain 2 counts the admin's drained node: one more drain, the rest blocked by the cap
    # (no failure domain known and most of the rack sick: without a share of 1 that is an incident)
    run = remediate(tb, work, "cap", "-e", "max_drain=2", "-e", "max_drain_percent=100", "-e", "max_per_domain=8",
                    "-e", "remediation_plan_correlated_fraction=1", "-e", "confirm=yes",
                    "-e", '{"rungs": ["drain"]}', "-e", "rail_errors=exclude")
    _ok(run)
    after = slurm_view(tb)
    newly = [h for h in tb.hosts if "DRAIN" in after[h]["state"] and "DRAIN" not in before[h]["state"]]
    acting = [h["host"] for h in run.plan["hosts"] if h["decision"] == "act" and h["host"] != N[5]]
    assert newly == acting and len(newly) == 1, (newly, acting)  # the plan's first in priority order
    blocked = [h["host"] for h in run.plan["hosts"] if h["decision"] == "blocked"]
    assert set(blocked) == {N[1], N[2], N[3], N[4], N[7]} - set(newly), blocked
    assert all("cap: 2 of max 2 nodes already drained (max_drain)" in run.host_plan(h)["reason"] for h in blocked)


@pytest.mark.slow  # the full tier: a second run of the story's cluster with most of it sick
def test_most_of_a_rack_sick_at_once_is_an_incident_not_drains(story):
    tb, work = _fresh_faults(story, "correlated")
    before = slurm_view(tb)
    run = remediate(tb, work, "correlated", "-e", "max_drain=8", "-e", "max_drain_percent=100",
                    "-e", "max_per_domain=8", "-e", "confirm=yes",
                    "-e", '{"remediation_plan_domain_groups": ["gpu-rack*"]}')
    _ok(run)
    drains = lambda view: {h: ("DRAIN" in (v["state"] or ""), v["reason"], v["reason_time"])  # noqa: E731
                           for h, v in view.items()}
    assert drains(slurm_view(tb)) == drains(before)
    inc = run.plan["incidents"]
    assert [i["kind"] for i in inc] == ["failure_domain"] and inc[0]["name"] == "gpu-rack5", inc
    for h in inc[0]["hosts"]:
        hp = run.host_plan(h)
        # every node rung is stopped by the incident; a rail left out for the job touches no node
        assert (hp["decision"] == "blocked" and "correlated failure" in hp["reason"]) or \
            all(r["scope"] == "job" for r in hp["rungs"]), hp
    assert sum(1 for h in inc[0]["hosts"] if run.host_plan(h)["decision"] == "blocked") >= 4


def test_a_rung_that_fails_leaves_the_node_drained_saying_what_failed_and_keeps_the_lock(story):
    tb, work = _fresh_faults(story, "rescue")
    limit = "%s,%s" % (N[2], N[9])
    # a knob the gpu_reset rung refuses: the rung fails after the drain, mid-ladder
    run = remediate(tb, work, "rescue", "-l", limit, "-e", "confirm=yes", "-e", "rung_gpu_reset_timeout=0", *WIDE)
    assert run.proc.returncode != 0, run.text[-3000:]
    after = node(tb, N[2])
    assert "DRAIN" in after["state"]
    assert after["reason"].startswith("gpu-runbook: %s: ladder stopped: " % INCIDENT), after["reason"]
    assert not [c for c in acting_calls(tb, N[2]) if "-r" in c or "--gpu-reset" in c]
    lock = os.path.join(work, "state", "lock.json")
    assert os.path.exists(lock)  # a stopped ladder keeps its lock: a person looks first
    # the next run stops before any change, naming the lock and how to clear it
    again = remediate(tb, work, "rescue-again", "-l", limit, "-e", "confirm=yes", *WIDE)
    assert again.proc.returncode != 0
    assert "Take the remediation lock" in again.text and "state=absent force=true" in again.text, again.text[-3000:]
    assert node(tb, N[2])["reason"] == after["reason"]
