"""roles/rung_verify on the emulated cluster with real Slurm (scenario xid79-fallen-off-bus, 2
hosts), through the real ansible-playbook: the paths the molecule scenario does not take -- a
reboot when allowed (slurm_node state=reboot_requested, the testbed's RebootProgram) and a healthy
host drained by an admin, never resumed. Nothing of Ansible, SSH or Slurm is faked."""
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
    gpu_runbook_allow_reboot: true
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


def test_reboot_when_allowed_and_an_admin_drain_is_never_resumed(cluster_factory, tmp_path):
    tb = cluster_factory("xid79-fallen-off-bus", hosts=2, slurm=True)
    d = tmp_path / "gpurb"
    d.mkdir()
    # the ladder drained gpu-r1-n02 (ours, recorded); an admin drained the healthy gpu-r1-n01
    p = tb.run_ansible("localhost", "-m", "slurm_node", "-a", json.dumps(
        {"name": N02, "state": "drained", "incident": "INC-CL-V", "reason": "Xid 79 on GPU 0000:ab:00.0",
         "state_dir": str(d / "drains")}))
    assert p.returncode == 0, p.stdout[-2000:]
    tb.slurm("scontrol", "update", "NodeName=%s" % N01, "State=DRAIN", "Reason=admin: PSU swap")
    admin_reason = _reason(tb, N01)
    tb.clear_commands()
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
    p = tb.run_ansible(str(play), tool="ansible-playbook", timeout=300)
    assert p.returncode == 0, p.stdout[-4000:]
    out1 = json.loads((d / ("outcome-%s.json" % N01)).read_text())
    out2 = json.loads((d / ("outcome-%s.json" % N02)).read_text())

    # the admin's healthy host: healthy, but not ours -> untouched (reason, user and time)
    assert (out1["final"], out1["result"], out1["healthy"]) == ("none", "skipped", True), out1
    assert tb.sinfo_states()[N01] == "drained" and _reason(tb, N01) == admin_reason

    # ours, needs only a reboot, reboots allowed: Slurm reboots it (RebootProgram on that host)
    assert (out2["final"], out2["escalate"], out2["rma"]) == ("reboot_requested", "reboot", []), out2
    # no diagnosis before the ladder in this play: the fresh gather's own words name the GPU
    assert out2["reason"] == "gpu-runbook: INC-CL-V: reboot: 0000:ab:00.0 (gpu_handle_error)"
    deadline = time.monotonic() + 60
    while not [c for c in tb.commands(N02) if c.get("cmd") == "reboot"]:
        assert time.monotonic() < deadline, "RebootProgram never ran on %s" % N02
        time.sleep(0.3)
    assert not [c for c in tb.commands(N01) if c.get("cmd") == "reboot"]
    assert not (d / "rma").exists()  # a reboot is no RMA

    audit = [json.loads(line) for line in (d / "state" / "audit.jsonl").read_text().splitlines()]
    (boot,) = [a for a in audit if a["rung"] == "reboot"]
    assert boot["host"] == N02 and boot["argv"][:4] == ["scontrol", "reboot", "ASAP", "nextstate=RESUME"]
    assert [a["result"] for a in audit if a["host"] == N01] == ["failed", "skipped"]  # drain refused; left alone
    assert not (d / "state" / "history.jsonl").exists()  # nothing resumed: no verify record
