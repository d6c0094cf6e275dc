"""roles/rung_drain against the REAL slurmctld of the emulated cluster, through real
ansible-playbook: the rescue path (tasks_from: failed) that leaves only our drain (or the
drain the plan asked for) with what failed as the reason, a busy node whose wait for DRAINED
runs out (drained false, no job cancelled, no error), 'done' and 'blocked' plan entries.
Every test puts its nodes back (RESUME, scancel) in a finally."""
import json
import time

import pytest

from tests.cluster.test_slurm_node import put_back, reason_of, show

pytestmark = pytest.mark.cluster

N01, N02, N03, N04, N05, N06 = ["gpu-r3-n%02d" % i for i in range(1, 7)]
INC = "INC-RD-1"


def drain_rung(node, status="planned", blockers=()):
    return {"rung": "drain", "status": status, "disruptive": False, "target": {"node": node},
            "commands": [] if status == "done" else [["scontrol", "update", "NodeName=%s" % node, "State=DRAIN",
                                                      "Reason=gpu-runbook: %s: Xid 48 on %s" % (INC, node)]],
            "blockers": list(blockers)}


def entry(node, rungs, decision="act"):
    return {"host": node, "decision": decision, "evidence": "Xid 48 on %s" % node, "rungs": rungs}


def playbook(tmp_path, hosts, plans, body, rescue=True, extra_vars=""):
    """A play over ``hosts`` with this plan per host: ``body`` (tasks, YAML) in a block whose
    rescue is the role's failed.yml; each host's outcome goes to tmp_path/<kind>-<host>.json."""
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    (tmp_path / "plans.json").write_text(json.dumps(plans))
    pb = tmp_path / "play.yml"
    pb.write_text("""
- hosts: %(hosts)s
  gather_facts: false
  vars:
    remediation_plan_host: "{{ (lookup('file', '%(tmp)s/plans.json') | from_json)[inventory_hostname] }}"
    remediation_plan_incident: %(inc)s
    gpu_runbook_drain_dir: %(tmp)s/drains
    gpu_runbook_state_dir: %(tmp)s/state
    %(extra)s
  tasks:
    - block:
%(body)s
      rescue:
        - include_role: {name: rung_drain, tasks_from: failed}
        - copy: {content: "{{ rung_drain_rescue_outcome | to_json }}", dest: "%(out)s/rescue-{{ inventory_hostname }}.json", mode: "0600"}
          delegate_to: localhost
      always:
        - copy: {content: "{{ rung_drain_outcome | default({}) | to_json }}", dest: "%(out)s/outcome-{{ inventory_hostname }}.json", mode: "0600"}
          delegate_to: localhost
""" % {"hosts": ",".join(hosts), "tmp": tmp_path, "inc": INC, "body": body, "out": out, "extra": extra_vars})
    return pb, out


def results(out, kind, host):
    p = out / ("%s-%s.json" % (kind, host))
    return json.loads(p.read_text()) if p.exists() else None


def audit(tmp_path):
    p = tmp_path / "state" / "audit.jsonl"
    return [json.loads(x) for x in p.read_text().splitlines()] if p.exists() else []


def test_rescue_leaves_our_drain_or_the_planned_one_with_what_failed(cluster, tmp_path):
    plans = {N01: entry(N01, [drain_rung(N01)]),                  # drained by the rung, then a rung fails
             N02: entry(N02, [drain_rung(N02)]),                  # admin's drain: never touched
             N03: entry(N03, [{"rung": "nccl_env", "status": "planned", "commands": []}]),  # no drain planned
             N04: entry(N04, [drain_rung(N04)])}                  # fails before its drain ran
    body = """
        - fail: {msg: "before the drain"}
          when: inventory_hostname == '%s'
        - include_role: {name: rung_drain}
        - name: Reset the GPUs
          fail:
            msg: |
              GPU 0000:53:00.0: In use by another client
              (pid 4711)
""" % N04
    pb, out = playbook(tmp_path, [N01, N02, N03, N04], plans, body)
    try:
        cluster.slurm("scontrol", "update", "NodeName=%s" % N02, "State=DRAIN", "Reason=admin: PSU swap")
        admin = reason_of(cluster, N02)
        p = cluster.run_ansible(str(pb), tool="ansible-playbook")
        assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]     # rescued, the rescue never raised
        assert "rescued=1" in p.stdout

        want = "gpu-runbook: %s: ladder stopped: Reset the GPUs: GPU 0000:53:00.0: In use by another client (pid 4711)" % INC
        assert reason_of(cluster, N01).startswith(want + " [root@")
        assert show(cluster, N01)["State"] == "IDLE+DRAIN"
        rec = json.loads((tmp_path / "drains" / (N01 + ".json")).read_text())
        assert rec["reason"] == want                                      # still ours: resumable later
        r = results(out, "rescue", N01)
        assert (r["result"], r["changed"], r["drained"]) == ("ok", True, True), r

        assert reason_of(cluster, N02) == admin                           # same text, user and time
        assert results(out, "rescue", N02)["result"] == "refused"
        assert not (tmp_path / "drains" / (N02 + ".json")).exists()
        assert results(out, "outcome", N02)["result"] == "refused"

        assert cluster.sinfo_states()[N03] == "idle"                      # the plan never drained it
        r = results(out, "rescue", N03)
        assert r["result"] == "skipped" and "the plan did not drain" in r["message"]
        assert results(out, "outcome", N03)["result"] == "none"

        assert reason_of(cluster, N04).startswith(                        # the plan said drain: drained
            "gpu-runbook: %s: ladder stopped: fail: before the drain [root@" % INC)
        assert results(out, "rescue", N04)["result"] == "ok"

        lines = audit(tmp_path)
        stopped = [(a["host"], a["result"]) for a in lines if a["message"].startswith("left drained: " + want)]
        assert stopped == [(N01, "ok")] and any("Reason=" + want in x for a in lines for x in a["argv"])
        assert sorted((a["host"], a["result"]) for a in lines) == sorted([
                (N01, "ok"), (N01, "ok"), (N02, "refused"), (N02, "refused"), (N03, "skipped"), (N04, "ok")])
        assert all(a["incident"] == INC and a["rung"] == "drain" for a in lines)
    finally:
        put_back(cluster, N01, N02, N03, N04)


def test_busy_node_done_and_blocked_entries(cluster, tmp_path):
    reset = {"rung": "gpu_reset", "status": "planned", "disruptive": True, "commands": [["nvidia-smi", "-r"]]}
    plans = {N05: entry(N05, [drain_rung(N05), reset]),
             N06: entry(N06, [drain_rung(N06, "blocked", ["cap: 2 of max 2 nodes already drained (max_drain)"]),
                              dict(reset, status="blocked", blockers=["needs the drain, which is blocked"])],
                        decision="blocked")}
    body = """
        - include_role: {name: rung_drain}
"""
    pb, out = playbook(tmp_path, [N05, N06], plans, body, extra_vars="rung_drain_wait: 3")
    try:
        job = cluster.sbatch([N05], "sleep 300", name="gpurb-drain-busy")
        deadline = time.monotonic() + 30
        while cluster.slurm("squeue", "-h", "-j", str(job), "-o", "%T").stdout.strip() != "RUNNING":
            assert time.monotonic() < deadline, "job %s never started" % job
            time.sleep(0.3)
        p = cluster.run_ansible(str(pb), tool="ansible-playbook")
        assert p.returncode == 0 and "rescued=0" in p.stdout, p.stdout[-4000:] + p.stderr[-2000:]
        r = results(out, "outcome", N05)                                  # drained, but jobs still run
        assert (r["result"], r["changed"], r["drained"], r["owned"], r["waited"]) == ("failed", True, False, True, 3), r
        assert "still DRAINING after 3s" in r["message"] and len(r["jobs"]) == 1 \
            and r["jobs"][0].startswith("%s root gpurb-drain-busy RUNNING " % job)  # then its running time
        assert cluster.slurm("squeue", "-h", "-j", str(job), "-o", "%T").stdout.strip() == "RUNNING"
        assert cluster.sinfo_states()[N05] == "draining"
        r = results(out, "outcome", N06)
        assert (r["result"], r["changed"], r["drained"]) == ("refused", False, False)
        assert r["message"] == "cap: 2 of max 2 nodes already drained (max_drain)"
        assert cluster.sinfo_states()[N06] == "idle"

        cluster.slurm("scancel", str(job))                                # next run: the plan says done
        plans[N05]["rungs"][0] = drain_rung(N05, "done")
        (tmp_path / "plans.json").write_text(json.dumps(plans))
        p = cluster.run_ansible(str(pb), tool="ansible-playbook", env={"ANSIBLE_EXTRA_VARS": ""})
        assert p.returncode == 0, p.stdout[-4000:]
        r = results(out, "outcome", N05)
        assert (r["result"], r["changed"], r["drained"], r["state"]) == ("ok", False, True, "IDLE+DRAIN"), r
        lines = audit(tmp_path)
        assert [a["result"] for a in lines if a["host"] == N05] == ["failed", "ok"]
        assert [a["result"] for a in lines if a["host"] == N06] == ["refused", "refused"]
        assert [a["argv"] for a in lines if a["host"] == N06][0][:2] == ["scontrol", "update"]
    finally:
        put_back(cluster, N05, N06)


def test_the_rescue_never_raises_on_a_dead_controller_or_a_broken_plan(cluster, tmp_path):
    plans = {N01: entry(N01, [drain_rung(N01)]), N02: "not a plan entry"}
    pb, out = playbook(tmp_path, [N01, N02], plans, """
        - include_role: {name: rung_drain}
""", extra_vars="rung_drain_timeout: 5")
    bogus = tmp_path / "no-such-slurm.conf"
    p = cluster.run_ansible(str(pb), tool="ansible-playbook", env={"SLURM_CONF": str(bogus)})
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
    assert p.stdout.count("rescued=1") == 2
    r = results(out, "rescue", N01)                   # slurmctld unreachable: said, not raised
    assert (r["result"], r["changed"], r["drained"]) == ("failed", False, False), r
    assert "scontrol" in r["message"] or "slurmctld" in r["message"]
    r = results(out, "rescue", N02)                   # a plan that is no plan: the rescue drains nothing
    assert r["result"] == "skipped" and "the plan did not drain %s" % N02 in r["message"], r
    assert cluster.sinfo_states()[N01] == "idle" and cluster.sinfo_states()[N02] == "idle"
    assert sorted((a["host"], a["result"]) for a in audit(tmp_path)) == [(N01, "failed"), (N02, "skipped")]


def test_a_variable_cannot_say_drained_the_reset_asks_slurm_first(cluster, tmp_path):
    # red team: the old role took node_drained from a variable an inventory could set. Now the
    # disruptive rungs take it from this run's drain outcome AND Slurm asked just before.
    #   N05: a job that does not finish; the drain wait runs out; "drained" vars say yes -> refused
    #   N06: no drain at all, a drain outcome planted as a play var -> Slurm says not ours -> refused
    gpu = {"pci": "0000:3b:00.0", "index": 0, "uuid": None, "serial": None, "kinds": ["xid:48"]}
    reset = {"rung": "gpu_reset", "status": "planned", "disruptive": True, "target": {"gpus": [gpu]},
             "commands": [["nvidia-smi", "-r", "-i", gpu["pci"]]], "blockers": []}
    plans = {N05: entry(N05, [drain_rung(N05), reset]), N06: entry(N06, [reset])}
    body = """
        - include_role: {name: rung_drain}
          when: inventory_hostname == '%s'
        - set_fact:
            rung_drain_outcome: {rung: drain, result: ok, drained: true, node: '%s', message: planted}
          when: inventory_hostname == '%s'
        - include_role: {name: rung_gpu_reset}
        - copy: {content: "{{ rung_gpu_reset_outcome | to_json }}", dest: "%s/reset-{{ inventory_hostname }}.json", mode: "0600"}
          delegate_to: localhost
""" % (N05, N06, N06, tmp_path / "out")
    pb, out = playbook(tmp_path, [N05, N06], plans, body, extra_vars=(
        # play vars are stronger than any inventory variable: the role must not take them
        "rung_drain_wait: 3\n    rung_gpu_reset_node_drained: true\n    rung_gpu_reset_drained_now: true\n"
        "    rung_ib_restart_node_drained: true"))
    try:
        job = cluster.sbatch([N05], "sleep 300", name="gpurb-drain-var")
        deadline = time.monotonic() + 30
        while cluster.slurm("squeue", "-h", "-j", str(job), "-o", "%T").stdout.strip() != "RUNNING":
            assert time.monotonic() < deadline, "job %s never started" % job
            time.sleep(0.3)
        before = {h: len(cluster.commands(h)) for h in (N05, N06)}
        p = cluster.run_ansible(str(pb), tool="ansible-playbook")
        assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
        r5, r6 = results(out, "reset", N05), results(out, "reset", N06)
        assert r5["result"] == "refused" and "is not drained" in r5["message"], r5
        assert "still DRAINING after 3s" in r5["message"], r5
        assert r6["result"] == "refused" and "drain not ours" in r6["message"], r6
        for h in (N05, N06):
            assert not [c for c in cluster.commands(h)[before[h]:] if c["argv"][0] == "nvidia-smi" and "-r" in c["argv"]]
        assert cluster.slurm("squeue", "-h", "-j", str(job), "-o", "%T").stdout.strip() == "RUNNING"
        assert cluster.sinfo_states()[N06] == "idle"
        assert [a["result"] for a in audit(tmp_path) if a["rung"] == "gpu_reset"] == ["refused", "refused"]
    finally:
        put_back(cluster, N05, N06)


def _running(cluster, job):
    deadline = time.monotonic() + 30
    while cluster.slurm("squeue", "-h", "-j", str(job), "-o", "%T").stdout.strip() != "RUNNING":
        assert time.monotonic() < deadline, "job %s never started" % job
        time.sleep(0.3)


def test_hung_job_requeue_refused_is_reported_never_cancelled_then_cancel_or_requeue_release_the_node(
        cluster, tmp_path):
    # -e hung_job=... (the plan's policy): when the wait for DRAINED runs out with the incident's job
    # on the node, that job only is requeued or cancelled; a requeue Slurm refuses is never a cancel
    reset = {"rung": "gpu_reset", "status": "planned", "disruptive": True, "commands": [["nvidia-smi", "-r"]]}
    plans = {N05: entry(N05, [drain_rung(N05), reset]), N06: entry(N06, [drain_rung(N06), reset])}
    body = """
        - include_role: {name: rung_drain}
"""
    jobs = []
    try:
        stuck = cluster.sbatch([N05], "sleep 300", name="gpurb-hung", extra=["--no-requeue"])
        again = cluster.sbatch([N06], "sleep 300", name="gpurb-hung-requeueable", extra=["--requeue"])
        jobs += [stuck, again]
        _running(cluster, stuck)
        _running(cluster, again)

        def run(node, what, job):
            pb, out = playbook(tmp_path, [node], plans, body, extra_vars=(
                "rung_drain_wait: 3\n    rung_drain_hung_job: %s\n    rung_drain_hung_job_id: '%s'\n"
                "    rung_drain_hung_job_wait: 30" % (what, job)))
            p = cluster.run_ansible(str(pb), tool="ansible-playbook")
            assert p.returncode == 0 and "rescued=0" in p.stdout, p.stdout[-4000:] + p.stderr[-2000:]
            return results(out, "outcome", node)

        # 1. --no-requeue: Slurm refuses the requeue; the job keeps running, the node stays DRAINING
        r = run(N05, "requeue", stuck)
        assert (r["result"], r["drained"]) == ("failed", False), r
        assert r["hung_job"]["outcome"] == "refused" and "NOT cancelled" in r["hung_job"]["message"], r
        assert cluster.slurm("squeue", "-h", "-j", str(stuck), "-o", "%T").stdout.strip() == "RUNNING"
        assert cluster.sinfo_states()[N05] == "draining"
        # 2. the operator chooses cancel: that job goes, the node is DRAINED and ours
        r = run(N05, "cancel", stuck)
        assert (r["result"], r["drained"], r["hung_job"]["outcome"]) == ("ok", True, "done"), r
        assert "hung job: job %s (gpurb-hung, user root) cancelled" % stuck in r["message"], r
        assert cluster.sinfo_states()[N05] == "drained"
        # 3. a requeueable job is requeued (back in the queue, off the node), the node drained
        r = run(N06, "requeue", again)
        assert (r["result"], r["drained"], r["hung_job"]["outcome"]) == ("ok", True, "done"), r
        state = cluster.slurm("squeue", "-h", "-j", str(again), "-o", "%T|%N").stdout.strip()
        assert state.split("|")[0] in ("PENDING", "REQUEUED", "REQUEUE_HOLD") and N06 not in state, state
        hung = [a for a in audit(tmp_path) if a["argv"][:2] == ["scontrol", "requeue"] or a["argv"][:1] == ["scancel"]]
        assert [(a["host"], a["argv"][:2], a["result"]) for a in hung] == [
            (N05, ["scontrol", "requeue"], "refused"), (N05, ["scancel", str(stuck)], "ok"),
            (N06, ["scontrol", "requeue"], "ok")]
    finally:
        for j in jobs:
            cluster.slurm("scancel", str(j), check=False)
        put_back(cluster, N05, N06)
