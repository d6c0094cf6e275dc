"""roles/rung_verify on the emulated cluster with real Slurm (scenario xid79-fallen-off-bus, 2
hosts), through the real ansible-playbook: the paths the molecule scenario does not take -- the
reboot rung when the plan allows it (slurm_node state=reboot_requested wait_rebooted, the
testbed's RebootProgram: slurmd re-registers with a new boot time and the fake GPU that fell off
the bus is back, unless it is marked gone_after_reboot), verified before any resume, and a
healthy host drained by an admin, never resumed. Nothing of Ansible, SSH or Slurm is faked."""
import gzip
import json
import time

import pytest

pytestmark = pytest.mark.cluster

N01, N02 = "gpu-r1-n01", "gpu-r1-n02"
LOST = {"pci": "0000:ab:00.0", "index": 5, "uuid": None, "serial": None, "kinds": ["xid", "xid:79"]}

PLAYBOOK = """
- name: Verify after the ladder
  hosts: gpu_nodes
  gather_facts: false
  serial: 1
  vars:
    gpu_runbook_drain_dir: {dir}/drains
    gpu_runbook_state_dir: {dir}/state
    gpu_runbook_rma_dir: {dir}/rma
    # the plan is the one place allow_reboot is read (-e allow_reboot=true)
    remediation_plan_result: {{plan: {{policy: {{allow_reboot: true}}}}}}
    rung_verify_reboot_wait: 120
    gpu_health_expected_gpus: 8
    remediation_plan_incident: INC-CL-V
    remediation_plan_host: "{{{{ plans[inventory_hostname] }}}}"
    rung_drain_outcome: "{{{{ drains[inventory_hostname] }}}}"
    rung_gpu_reset_outcome: "{{{{ resets[inventory_hostname] }}}}"
    plans: {plans}
    drains: {drains}
    resets: {resets}
  tasks:
    - name: Note when the ladder started
      ansible.builtin.set_fact:
        gpu_runbook_ladder_started: "{{{{ now(utc=true).strftime('%Y-%m-%dT%H:%M:%SZ') }}}}"
    - name: Verify
      ansible.builtin.include_role:
        name: rung_verify
    - name: Keep the outcome
      ansible.builtin.copy:
        content: "{{{{ rung_verify_outcome | to_json }}}}"
        dest: "{dir}/outcome-{{{{ inventory_hostname }}}}.json"
        mode: "0600"
      delegate_to: localhost
"""


def _plan(host, rungs):
    return {"host": host, "verdict": "gpu_hardware", "severity": "critical", "decision": "act", "rungs": rungs}


def _reason(tb, node):
    out = tb.slurm("scontrol", "show", "node", "-o", node).stdout
    return out.split(" Reason=", 1)[1].strip() if " Reason=" in out else None


def _setup(tb, d, admin=True):
    """gpu-r1-n02 drained by the ladder (ours, recorded); gpu-r1-n01 healthy, drained by an admin."""
    p = tb.run_ansible("localhost", "-m", "slurm_node", "-a", json.dumps(
        {"name": N02, "state": "drained", "incident": "INC-CL-V", "reason": "Xid 79 on GPU 0000:ab:00.0",
         "state_dir": str(d / "drains")}))
    assert p.returncode == 0, p.stdout[-2000:]
    if admin:
        tb.slurm("scontrol", "update", "NodeName=%s" % N01, "State=DRAIN", "Reason=admin: PSU swap")
    tb.clear_commands()


def _verify(tb, tmp_path, d):
    plans = {N01: _plan(N01, [{"rung": "drain", "scope": "host", "status": "blocked",
                               "blockers": ["node already drained by someone else"]}]),
             N02: _plan(N02, [{"rung": "drain", "scope": "host", "status": "done"},
                              {"rung": "gpu_reset", "scope": "gpu", "status": "skipped", "target": {"gpus": [LOST]}},
                              {"rung": "reboot", "scope": "host", "status": "planned", "target": {"node": N02}}])}
    drains = {N01: {"rung": "drain", "result": "refused", "drained": False, "message": "drained by someone else"},
              N02: {"rung": "drain", "result": "ok", "drained": True, "message": "already drained by us"}}
    resets = {N01: {"rung": "gpu_reset", "result": "none"},
              N02: {"rung": "gpu_reset", "result": "skipped", "escalate": "reboot", "gpus": [],
                    "message": "a reset cannot fix a GPU that fell off the bus (Xid 79)"}}
    play = tmp_path / "verify.yml"
    play.write_text(PLAYBOOK.format(dir=d, plans=json.dumps(plans), drains=json.dumps(drains),
                                    resets=json.dumps(resets)))
    p = tb.run_ansible(str(play), tool="ansible-playbook", timeout=600)
    assert p.returncode == 0, p.stdout[-4000:]
    return [json.loads((d / ("outcome-%s.json" % n)).read_text()) for n in (N01, N02)]


def _audit(d):
    return [json.loads(line) for line in (d / "state" / "audit.jsonl").read_text().splitlines()]


def test_reboot_keeps_the_drain_waits_verifies_then_resumes_and_an_admin_drain_is_never_resumed(
        cluster_factory, tmp_path):
    tb = cluster_factory("xid79-fallen-off-bus", hosts=2, slurm=True)
    d = tmp_path / "gpurb"
    d.mkdir()
    _setup(tb, d)
    admin_reason = _reason(tb, N01)
    boot_before = tb.scontrol_show("node", N02).get("BootTime")
    out1, out2 = _verify(tb, tmp_path, d)

    # the admin's healthy host: healthy, but not ours -> untouched (reason, user and time)
    assert (out1["final"], out1["result"], out1["healthy"]) == ("none", "skipped", True), out1
    assert tb.sinfo_states()[N01] == "drained" and _reason(tb, N01) == admin_reason

    # ours, needs only a reboot, reboots allowed: Slurm rebooted it (RebootProgram on that host),
    # it came back drained, the fresh gather found the GPU back, and only then was it resumed
    assert [c["cmd"] for c in tb.commands(N02) if c.get("cmd") in ("reboot", "fakehw-boot")] == ["reboot", "fakehw-boot"]
    assert not [c for c in tb.commands(N01) if c.get("cmd") == "reboot"]
    assert (out2["final"], out2["result"], out2["healthy"]) == ("resumed", "ok", True), out2
    assert tb.sinfo_states()[N02] == "idle" and _reason(tb, N02) is None
    assert tb.scontrol_show("node", N02).get("BootTime") != boot_before
    assert not (d / "rma").exists()  # a reboot is no RMA

    audit = _audit(d)
    (boot,) = [a for a in audit if a["rung"] == "reboot"]
    # no ASAP, no nextstate: the drain survived the boot (scontrol(1)), verify resumed the node
    assert boot["host"] == N02 and boot["result"] == "ok"
    assert boot["argv"][:2] == ["scontrol", "reboot"] and boot["argv"][-1] == N02
    assert not [w for w in boot["argv"] if w == "ASAP" or w.startswith("nextstate")]
    verify_n02 = [a["result"] for a in audit if a["host"] == N02 and a["rung"] == "verify"]
    assert verify_n02 == ["failed", "ok"], audit  # sick before the reboot, healthy after it
    assert [a["result"] for a in audit if a["host"] == N01] == ["failed", "skipped"]  # drain refused; left alone
    history = [json.loads(line) for line in (d / "state" / "history.jsonl").read_text().splitlines()]
    assert [(h["rung"], h["result"]) for h in history if h.get("host") == N02] == [("reboot", "ok"), ("verify", "ok")]


def test_reboot_a_gpu_that_stays_gone_keeps_the_node_drained_with_the_reason_and_an_rma(cluster_factory, tmp_path):
    tb = cluster_factory("xid79-fallen-off-bus", hosts=2, slurm=True)
    d = tmp_path / "gpurb"
    d.mkdir()

    def dead_board(st):
        for g in st["gpus"]:
            if not g.get("present", True):
                g["gone_after_reboot"] = True
    tb.update_state(N02, dead_board)
    _setup(tb, d, admin=False)
    _out1, out2 = _verify(tb, tmp_path, d)
    assert [c["cmd"] for c in tb.commands(N02) if c.get("cmd") in ("reboot", "fakehw-boot")] == ["reboot", "fakehw-boot"]
    # back from the reboot, the GPU still gone: the fault survived a reboot -> drained, RMA
    assert (out2["final"], out2["result"], out2["escalate"]) == ("drained", "failed", "rma"), out2
    assert "still failing after the reboot" in out2["reason"] and "0000:ab:00.0" in out2["reason"]
    assert tb.sinfo_states()[N02] == "drained" and "still failing after the reboot" in _reason(tb, N02)
    assert len(out2["rma"]) == 2 and all((d / "rma").exists() for _ in out2["rma"])
    # nvidia-bug-report.sh's log goes with the bundle (the fake script writes the driver's header),
    # named in the bundle; the node keeps no copy
    log = d / "rma" / "INC-CL-V" / ("%s-nvidia-bug-report.log.gz" % N02)
    assert gzip.decompress(log.read_bytes()).decode().count("Start of NVIDIA bug report log file") == 1
    bundle = json.loads((d / "rma" / "INC-CL-V" / ("%s.json" % N02)).read_text())
    assert str(log) in json.dumps(bundle)
    assert tb.ssh(N02, "ls /tmp/gpu-runbook-nvidia-bug-report.log.gz").returncode != 0
    assert [c["argv"][1:] for c in tb.commands(N02) if c.get("cmd") == "nvidia-bug-report.sh"] == [
        ["--safe-mode", "--output-file", "/tmp/gpu-runbook-nvidia-bug-report.log"]]
    audit = _audit(d)
    assert [a["result"] for a in audit if a["rung"] == "reboot"] == ["ok"]
    # the verify before the reboot, the one after it, then one drain with its reason and one bundle
    assert [(a["rung"], a["result"]) for a in audit if a["host"] == N02] == [
        ("verify", "failed"), ("reboot", "ok"), ("verify", "failed"), ("verify", "ok"), ("verify", "ok")], audit
