"""library/slurm_node.py against the REAL slurmctld of the emulated cluster, through real
`ansible` / `ansible-playbook` (repo ansible.cfg: library=./library). Nothing of Slurm or
Ansible is faked: drains, resumes and reason changes by "an admin" are real `scontrol` calls.
Every test puts its nodes back (RESUME, scancel) in a finally."""
import itertools
import json
import os
import socket
import stat
import time

import pytest

pytestmark = pytest.mark.cluster

N04, N05, N06, N07, N08 = ["gpu-r3-n%02d" % i for i in range(4, 9)]
_calls = itertools.count()


def node_mod(tb, tmp_path, args, *extra, env=None):
    """One ad-hoc `ansible localhost -m slurm_node`; (process, the module's result dict)."""
    tree = tmp_path / ("tree-%d" % next(_calls))
    e = {"ANSIBLE_LOAD_CALLBACK_PLUGINS": "1", "ANSIBLE_CALLBACKS_ENABLED": "ansible.builtin.tree",
         "ANSIBLE_CALLBACK_TREE_DIR": str(tree)}
    e.update(env or {})
    proc = tb.run_ansible("localhost", "-m", "slurm_node", "-a", json.dumps(args), *extra, env=e, timeout=120)
    with open(str(tree / "localhost")) as fh:
        return proc, json.load(fh)


def show(tb, node):
    return tb.scontrol_show("node", node)


def reason_of(tb, node):
    out = tb.slurm("scontrol", "show", "node", "-o", node).stdout
    return out.split(" Reason=", 1)[1].strip() if " Reason=" in out else None


def put_back(tb, *nodes):
    for n in nodes:
        for job in tb.slurm("squeue", "-h", "-w", n, "-o", "%i", check=False).stdout.split():
            tb.slurm("scancel", job, check=False)
    for n in nodes:
        tb.slurm("scontrol", "update", "NodeName=%s" % n, "State=RESUME", check=False)
    tb.wait_nodes(lambda st: st == "idle", nodes=list(nodes), timeout=60)


def test_drain_records_ownership_is_idempotent_checkable_and_resumes(cluster, tmp_path):
    sd = tmp_path / "drains"
    rec = sd / (N05 + ".json")
    base = {"name": N05, "state_dir": str(sd)}
    drain = dict(base, state="drained", incident="INC-7", reason="Xid 79 on GPU 3 [0000:9a:00.0]")
    try:
        p, r = node_mod(cluster, tmp_path, drain, "--check", "--diff")
        assert p.returncode == 0 and r["changed"] is True, p.stdout[-2000:]
        assert "check mode" in r["msg"] and r["state"] == "IDLE+DRAIN"
        assert "+state: IDLE+DRAIN" in p.stdout and "gpu-runbook: INC-7: Xid 79" in p.stdout
        assert cluster.sinfo_states()[N05] == "idle" and not rec.exists()      # nothing ran

        p, r = node_mod(cluster, tmp_path, drain, "--diff")
        want = "gpu-runbook: INC-7: Xid 79 on GPU 3 [0000:9a:00.0]"
        assert p.returncode == 0 and r["changed"] is True and r["owned"] is True, p.stdout[-2000:]
        assert (r["state"], r["drain"], r["drained"], r["reason"]) == ("IDLE+DRAIN", "DRAINED", True, want)
        assert "-state: IDLE" in p.stdout and "+reason: " + want in p.stdout
        assert show(cluster, N05)["State"] == "IDLE+DRAIN" and cluster.sinfo_states()[N05] == "drained"
        slurm_says = reason_of(cluster, N05)
        assert slurm_says.startswith(want + " [root@")
        assert stat.S_IMODE(os.stat(str(rec)).st_mode) == 0o600
        record = json.loads(rec.read_text())
        assert (record["node"], record["reason"], record["incident"]) == (N05, want, "INC-7")
        assert slurm_says == "%s [%s@%s]" % (want, record["reason_set_by_user"], record["reason_changed_at"])

        p, r = node_mod(cluster, tmp_path, drain)                      # again: nothing to do
        assert p.returncode == 0 and r["changed"] is False and r["owned"] is True
        assert reason_of(cluster, N05) == slurm_says                   # not even re-set (time unchanged)

        p, r = node_mod(cluster, tmp_path, dict(drain, reason="Xid 79: needs reboot"))  # ours: re-reason
        assert r["changed"] is True and r["reason"] == "gpu-runbook: INC-7: Xid 79: needs reboot"
        assert json.loads(rec.read_text())["reason"] == r["reason"]

        p, r = node_mod(cluster, tmp_path, dict(base, state="resumed"), "--check")
        assert r["changed"] is True and cluster.sinfo_states()[N05] == "drained" and rec.exists()

        p, r = node_mod(cluster, tmp_path, dict(base, state="resumed"), "--diff")
        assert p.returncode == 0 and r["changed"] is True and "DRAIN" not in r["flags"], p.stdout[-2000:]
        assert r["reason"] is None and not rec.exists()
        cluster.wait_nodes(lambda st: st == "idle", nodes=[N05], timeout=30)

        p, r = node_mod(cluster, tmp_path, dict(base, state="resumed"))
        assert r["changed"] is False and "in service" in r["msg"]
    finally:
        put_back(cluster, N05)


def test_admin_drained_node_is_never_touched_by_drain_or_resume(cluster, tmp_path):
    sd = str(tmp_path / "drains")
    try:
        cluster.slurm("scontrol", "update", "NodeName=%s" % N06, "State=DRAIN", "Reason=admin: PSU swap [ticket 17]")
        before = reason_of(cluster, N06)
        p, r = node_mod(cluster, tmp_path, {"name": N06, "state": "drained", "reason": "Xid 48", "state_dir": sd})
        assert p.returncode == 0 and r["changed"] is False and r["owned"] is False, p.stdout[-2000:]
        assert r["reason"] == "admin: PSU swap [ticket 17]" and r["reason_user"] == "root"
        assert "not ours" in r["msg"] and not os.path.exists(os.path.join(sd, N06 + ".json"))
        p, r = node_mod(cluster, tmp_path, {"name": N06, "state": "resumed", "state_dir": sd})
        assert p.returncode == 0 and r["changed"] is False and r["owned"] is False
        assert r["msg"].startswith("left drained") and "admin: PSU swap" in r["msg"]
        p, r = node_mod(cluster, tmp_path, {"name": N06, "state": "present", "state_dir": sd})
        assert (r["changed"], r["owned"], r["drain"]) == (False, False, "DRAINED")
        assert reason_of(cluster, N06) == before                       # same text, same user@time
        assert cluster.sinfo_states()[N06] == "drained"
    finally:
        put_back(cluster, N06)


def test_a_reason_changed_after_our_drain_is_no_longer_ours(cluster, tmp_path):
    sd = tmp_path / "drains"
    args = {"name": N07, "state": "drained", "reason": "ib_flapping mlx5_2", "state_dir": str(sd)}
    try:
        p, r = node_mod(cluster, tmp_path, args)
        assert r["changed"] is True and r["owned"] is True, p.stdout[-2000:]
        ours, seen = r["reason"], reason_of(cluster, N07)
        time.sleep(1.1)   # Slurm keeps user@time when a reason is re-set to the SAME text: no change
        cluster.slurm("scontrol", "update", "NodeName=%s" % N07, "State=DRAIN", "Reason=%s" % ours)
        assert reason_of(cluster, N07) == seen
        p, r = node_mod(cluster, tmp_path, {"name": N07, "state": "present", "state_dir": str(sd)})
        assert r["owned"] is True
        cluster.slurm("scontrol", "update", "NodeName=%s" % N07, "State=DRAIN", "Reason=%s (vendor: hold)" % ours)
        p, r = node_mod(cluster, tmp_path, {"name": N07, "state": "resumed", "state_dir": str(sd)})
        assert r["changed"] is False and r["owned"] is False and "changed after our drain" in r["msg"]
        assert cluster.sinfo_states()[N07] == "drained"
        cluster.slurm("scontrol", "update", "NodeName=%s" % N07, "State=DRAIN", "Reason=admin: keep for vendor")
        p, r = node_mod(cluster, tmp_path, dict(args, reason="ib_flapping again"))
        assert r["changed"] is False and r["owned"] is False
        assert reason_of(cluster, N07).startswith("admin: keep for vendor [root@")   # not re-reasoned
        p, r = node_mod(cluster, tmp_path, {"name": N07, "state": "resumed", "state_dir": str(sd)})
        assert r["changed"] is False and cluster.sinfo_states()[N07] == "drained"
    finally:
        put_back(cluster, N07)


def test_busy_node_is_draining_and_the_bounded_wait_names_the_job(cluster, tmp_path):
    sd = str(tmp_path / "drains")
    try:
        job = cluster.sbatch([N08], "sleep 300", name="gpurb-busy")
        deadline = time.monotonic() + 30
        while cluster.slurm("squeue", "-h", "-j", str(job), "-o", "%T").stdout.strip() != "RUNNING":
            assert time.monotonic() < deadline, "job %s never started" % job
            time.sleep(0.3)
        t0 = time.monotonic()
        p, r = node_mod(cluster, tmp_path, {"name": N08, "state": "drained", "reason": "Xid 94",
                                            "wait_drained": 3, "state_dir": sd})
        assert p.returncode != 0 and r["changed"] is True, p.stdout[-2000:]
        assert time.monotonic() - t0 < 60
        assert "still DRAINING after 3s" in r["msg"] and "not cancelling" in r["msg"]
        assert len(r["jobs"]) == 1 and r["jobs"][0].startswith("%s root gpurb-busy RUNNING " % job)
        assert r["jobs"][0] in r["msg"]
        # how to release the node, named, never done
        assert "scontrol requeue %s (a requeueable job) or scancel %s" % (job, job) in r["msg"]
        assert r["drain"] == "DRAINING" and r["drained"] is False and r["owned"] is True
        assert r["state"] in ("MIXED+DRAIN", "ALLOCATED+DRAIN")
        assert cluster.sinfo_states()[N08] == "draining"
        assert cluster.slurm("squeue", "-h", "-j", str(job), "-o", "%T").stdout.strip() == "RUNNING"
        cluster.slurm("scancel", str(job))
        p, r = node_mod(cluster, tmp_path, {"name": N08, "state": "drained", "reason": "Xid 94",
                                            "wait_drained": 30, "state_dir": sd})
        assert p.returncode == 0 and r["changed"] is False and r["drained"] is True, p.stdout[-2000:]
        assert r["drain"] == "DRAINED"
    finally:
        put_back(cluster, N08)


def test_playbook_delegated_to_the_controller(cluster, tmp_path):
    sd = str(tmp_path / "drains")
    pb = tmp_path / "drain.yml"
    pb.write_text("""
- hosts: %s
  gather_facts: false
  tasks:
    - slurm_node: {name: "{{ inventory_hostname }}", state: drained, incident: INC-9, reason: "dbe remap", state_dir: "%s"}
      delegate_to: localhost
      register: d
    - slurm_node: {name: "{{ inventory_hostname }}", state: drained, incident: INC-9, reason: "dbe remap", state_dir: "%s"}
      delegate_to: localhost
      register: again
    - assert: {that: [d is changed, d.owned, again is not changed]}
    - slurm_node: {name: "{{ inventory_hostname }}", state: resumed, state_dir: "%s"}
      delegate_to: localhost
      register: r
    - assert: {that: [r is changed, "'DRAIN' not in r.flags"]}
""" % (N04, sd, sd, sd))
    try:
        p = cluster.run_ansible(str(pb), tool="ansible-playbook")
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
        assert "changed=2" in p.stdout
    finally:
        put_back(cluster, N04)


def test_errors_are_one_clear_sentence(cluster, tmp_path):
    p, r = node_mod(cluster, tmp_path, {"name": "gpu-r9-n99", "state": "present"})
    assert p.returncode != 0 and r["msg"].startswith("unknown node gpu-r9-n99"), r
    p, r = node_mod(cluster, tmp_path, {"name": "gpu-r3-n[01-02]", "state": "drained", "reason": "x"})
    assert "not one Slurm node name" in r["msg"] and "Traceback" not in p.stdout + p.stderr
    # a controller that accepts the connection and never answers
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    port = silent.getsockname()[1]
    conf = tmp_path / "silent.conf"
    text = open(cluster.slurm_conf).read().replace("SlurmctldPort=6917", "SlurmctldPort=%d" % port)
    conf.write_text("\n".join("SlurmctldHost=ctl(127.0.0.1)" if ln.startswith("SlurmctldHost=") else ln
                              for ln in text.splitlines()) + "\n")
    try:
        t0 = time.monotonic()
        p, r = node_mod(cluster, tmp_path, {"name": N05, "state": "drained", "reason": "x", "timeout": 2},
                        env={"SLURM_CONF": str(conf)})
        assert r["msg"].startswith("slurmctld did not answer within 2s"), r
        assert time.monotonic() - t0 < 30
    finally:
        silent.close()
    # scontrol missing: a PATH with every tool but Slurm's
    farm = tmp_path / "bin"
    farm.mkdir()
    for d in ("/usr/local/bin", "/usr/bin", "/bin"):
        for f in os.listdir(d) if os.path.isdir(d) else ():
            if not (farm / f).exists() and f not in ("scontrol", "squeue", "sinfo"):
                os.symlink(os.path.join(d, f), str(farm / f))
    p, r = node_mod(cluster, tmp_path, {"name": N05, "state": "present"}, env={"PATH": str(farm)})
    assert r["msg"].startswith("scontrol not found"), r
    assert cluster.sinfo_states()[N05] == "idle"


def test_a_drain_it_cannot_record_says_so_and_stays_foreign(cluster, tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    sd = str(blocker / "drains")          # makedirs fails: the record cannot be written
    try:
        p, r = node_mod(cluster, tmp_path, {"name": N04, "state": "drained", "reason": "Xid 48", "state_dir": sd})
        assert p.returncode != 0 and "NOT recorded as ours" in r["msg"], p.stdout[-2000:]
        assert cluster.sinfo_states()[N04] == "drained"
        p, r = node_mod(cluster, tmp_path, {"name": N04, "state": "resumed", "state_dir": str(tmp_path / "d2")})
        assert r["changed"] is False and r["owned"] is False and cluster.sinfo_states()[N04] == "drained"
    finally:
        put_back(cluster, N04)


def _reboots(tb, node):
    return [c for c in tb.commands(node) if c.get("cmd") == "reboot"]


def test_reboot_only_on_our_drain_once_then_back_drained_and_ours_until_resumed(cluster, tmp_path):
    sd = tmp_path / "drains"
    rec = sd / (N08 + ".json")
    base = {"name": N08, "state_dir": str(sd)}
    boot = dict(base, state="reboot_requested", incident="INC-8", reason="reboot: Xid 79 GPU 3")
    want = "gpu-runbook: INC-8: reboot: Xid 79 GPU 3"
    cluster.clear_commands(N08)
    try:
        p, r = node_mod(cluster, tmp_path, boot)                        # in service: drain it first
        assert p.returncode == 0 and r["changed"] is False and r["owned"] is False, p.stdout[-2000:]
        assert "drain it first" in r["msg"] and cluster.sinfo_states()[N08] == "idle"
        job = cluster.sbatch([N08], "sleep 300", name="gpurb-reboot")
        deadline = time.monotonic() + 30
        while cluster.slurm("squeue", "-h", "-j", str(job), "-o", "%T").stdout.strip() != "RUNNING":
            assert time.monotonic() < deadline, "job %s never started" % job
            time.sleep(0.3)
        p, r = node_mod(cluster, tmp_path, dict(base, state="drained", incident="INC-8", reason="Xid 79 GPU 3"))
        assert r["changed"] is True and r["drain"] == "DRAINING", p.stdout[-2000:]

        p, r = node_mod(cluster, tmp_path, boot, "--check", "--diff")
        assert r["changed"] is True and "check mode" in r["msg"] and r["reboot"] == "REBOOT_REQUESTED"
        assert "+reason: " + want in p.stdout and "REBOOT" not in show(cluster, N08)["State"]

        p, r = node_mod(cluster, tmp_path, boot)                        # ours and busy: requested, waits for the job
        assert p.returncode == 0 and r["changed"] is True and r["owned"] is True, p.stdout[-2000:]
        node = show(cluster, N08)
        assert node["State"] in ("MIXED+DRAIN+REBOOT_REQUESTED", "ALLOCATED+DRAIN+REBOOT_REQUESTED"), node
        assert r["reboot"] == "REBOOT_REQUESTED" and r["reason"] == want
        slurm_says = reason_of(cluster, N08)
        record = json.loads(rec.read_text())                          # Slurm re-stamped it: recorded again
        assert slurm_says == "%s [%s@%s]" % (want, record["reason_set_by_user"], record["reason_changed_at"])
        assert record["incident"] == "INC-8"

        p, r = node_mod(cluster, tmp_path, boot)                        # asked once only
        assert r["changed"] is False and "already under way" in r["msg"] and reason_of(cluster, N08) == slurm_says
        assert _reboots(cluster, N08) == [] and cluster.slurm(
            "squeue", "-h", "-j", str(job), "-o", "%T").stdout.strip() == "RUNNING"   # no job cancelled

        cluster.slurm("scancel", str(job))                             # the job ends: Slurm reboots it
        seen, deadline = set(), time.monotonic() + 60
        while True:
            node = show(cluster, N08)
            seen.add(node["State"])
            if node["State"] == "IDLE+DRAIN" and _reboots(cluster, N08):
                break
            assert time.monotonic() < deadline, "never came back: %s" % sorted(seen)
            time.sleep(0.2)
        assert any("REBOOT_ISSUED" in s for s in seen), seen
        assert [c["host"] for c in _reboots(cluster, N08)] == [N08]    # RebootProgram ran once, on that host
        # no ASAP, no nextstate: back from the boot still drained, our reason plus Slurm's suffix
        assert reason_of(cluster, N08).startswith(want + " : reboot issued")
        p, r = node_mod(cluster, tmp_path, dict(boot, wait_rebooted=60))  # the ladder takes its drain back
        assert p.returncode == 0 and r["owned"] is True and r["reason"] == want, p.stdout[-2000:]
        assert r["rebooted"]["boot_time"] != r["rebooted"]["boot_time_before"]
        assert _reboots(cluster, N08) == [c for c in _reboots(cluster, N08)][:1]  # not asked again
        p, r = node_mod(cluster, tmp_path, dict(base, state="resumed"))  # verify said healthy: resumed
        assert r["changed"] is True and reason_of(cluster, N08) is None
        p, r = node_mod(cluster, tmp_path, dict(base, state="present"))
        assert (r["owned"], r["reboot"], r["drain"]) == (False, None, None)
    finally:
        put_back(cluster, N08)


def test_reboot_refused_on_an_admin_drain(cluster, tmp_path):
    sd = str(tmp_path / "drains")
    try:
        cluster.slurm("scontrol", "update", "NodeName=%s" % N06, "State=DRAIN", "Reason=admin: BIOS update")
        before = reason_of(cluster, N06)
        p, r = node_mod(cluster, tmp_path, {"name": N06, "state": "reboot_requested", "reason": "reboot: x",
                                            "state_dir": sd})
        assert p.returncode == 0 and r["changed"] is False and r["owned"] is False, p.stdout[-2000:]
        assert r["msg"].startswith("no reboot: ") and "admin: BIOS update" in r["msg"] and r["reboot"] is None
        assert show(cluster, N06)["State"] == "IDLE+DRAIN" and reason_of(cluster, N06) == before
        time.sleep(2)
        assert _reboots(cluster, N06) == []
    finally:
        put_back(cluster, N06)
