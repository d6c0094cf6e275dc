"""The active tier (gpu_active_checks) on the emulated cluster with real Slurm, through the real
ansible-playbook: a node is resumed only after the tier passes; DCGM's memory test failing on
one GPU keeps its node drained with the test and the GPU in the Slurm reason; a node at half
NCCL bandwidth is found by diagnose.yml -e active=yes; a missing GPU and an inactive NVLink are
found; DCGM absent is never a pass. The tools (dcgmi, all_reduce_perf, nvbandwidth) are the
testbed's fakes printing the real formats (tests/testbed/fakehw.py); nothing of Ansible, SSH or
Slurm is faked."""
import json

import pytest

pytestmark = pytest.mark.cluster

N01, N02 = "gpu-r1-n01", "gpu-r1-n02"
ACTIVE_TOOLS = ("dcgmi", "all_reduce_perf", "nvbandwidth")

PLAYBOOK = """
- name: Verify after the ladder
  hosts: gpu_nodes
  gather_facts: false
  vars:
    gpu_runbook_drain_dir: {dir}/drains
    gpu_runbook_state_dir: {dir}/state
    gpu_runbook_rma_dir: {dir}/rma
    gpu_health_expected_gpus: {expected}
    remediation_plan_incident: INC-ACT
    remediation_plan_host: {{host: "{{{{ inventory_hostname }}}}", verdict: unknown, severity: warning,
                             decision: act, rungs: [{{rung: drain, scope: host, status: done}}]}}
    rung_drain_outcome: {{rung: drain, result: ok, drained: true, message: drained by us}}
    rung_verify_active_require: "{{{{ requires[inventory_hostname] | default([]) }}}}"
    requires: {requires}
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


def _idle(tb, hosts):
    """The job is gone: no process on any GPU (the tier refuses a busy node)."""
    for h in hosts:
        for g in range(len(tb.state(h)["gpus"])):
            tb.set_processes(h, g, [])


def _drain(tb, d, host):
    p = tb.run_ansible("localhost", "-m", "slurm_node", "-a", json.dumps(
        {"name": host, "state": "drained", "incident": "INC-ACT", "reason": "straggler under test",
         "state_dir": str(d / "drains")}))
    assert p.returncode == 0, p.stdout[-2000:]


def _reason(tb, node):
    out = tb.slurm("scontrol", "show", "node", "-o", node).stdout
    return out.split(" Reason=", 1)[1].strip() if " Reason=" in out else None


def _verify(tb, tmp_path, d, requires=None, expected=8):
    """rung_verify on both nodes; ``expected``: gpu_health_expected_gpus (0: Slurm's Gres count)."""
    play = tmp_path / "verify.yml"
    play.write_text(PLAYBOOK.format(dir=d, requires=json.dumps(requires or {}), expected=expected))
    p = tb.run_ansible(str(play), tool="ansible-playbook", timeout=600)
    assert p.returncode == 0, p.stdout[-4000:]
    return dict((n, json.loads((d / ("outcome-%s.json" % n)).read_text())) for n in (N01, N02)), p


def _ran(tb, host):
    return [c["cmd"] for c in tb.commands(host) if c.get("cmd") in ACTIVE_TOOLS]


@pytest.mark.slow  # the full tier: the active tier's other checks run in the fast tier
def test_active_dcgm_memory_failure_keeps_the_node_drained_and_a_passing_node_is_resumed(cluster_factory, tmp_path):
    tb = cluster_factory("healthy", hosts=2, slurm=True)
    d = tmp_path / "gpurb"
    d.mkdir()
    _idle(tb, (N01, N02))

    tb.set_active(N02, gpus={3: {"dcgm_fail": {"test": "memory"}}})  # DCGM's own code and text
    for h in (N01, N02):
        _drain(tb, d, h)
    tb.clear_commands()
    out, proc = _verify(tb, tmp_path, d)

    # n01: the tier ran (DCGM, NCCL all-reduce, nvbandwidth) and passed, then it was resumed
    assert _ran(tb, N01) == ["dcgmi", "all_reduce_perf", "nvbandwidth"], tb.commands(N01)
    assert (out[N01]["final"], out[N01]["result"]) == ("resumed", "ok"), out[N01]
    assert tb.sinfo_states()[N01] == "idle"
    # n02: DCGM's memory test failed on GPU 3 -> stays drained, the reason names the test and the GPU
    assert out[N02]["final"] == "drained" and not out[N02]["healthy"], out[N02]
    reason = _reason(tb, N02)
    assert tb.sinfo_states()[N02] == "drained" and reason
    assert "memory" in reason.lower() and ("GPU 3" in reason or "0000:" in reason), reason
    audit = [json.loads(line) for line in (d / "state" / "audit.jsonl").read_text().splitlines()]
    assert [a["result"] for a in audit if a["host"] == N02 and a["rung"] == "verify"][0] == "failed"
    # the failure is a fault in GPU 3's history: three in a week make it a lemon (RMA), as Xids do
    history = [json.loads(line) for line in (d / "state" / "history.jsonl").read_text().splitlines()]
    faults = [h for h in history if h["type"] == "fault" and h["host"] == N02]
    assert faults and all(h.get("pci") for h in faults), faults  # the GPU DCGM named, by its bus id
    assert not [h for h in history if h["type"] == "fault" and h["host"] == N01]


def test_active_dcgm_absent_is_not_a_pass(cluster_factory, tmp_path):
    tb = cluster_factory("healthy", hosts=2, slurm=True)
    d = tmp_path / "gpurb"
    d.mkdir()
    _idle(tb, (N01, N02))
    for h in (N01, N02):
        tb.set_active(h, absent=["dcgmi"])  # DCGM not installed: no dcgmi on the node's PATH
        _drain(tb, d, h)
    tb.clear_commands()
    # n01 requires DCGM's diagnostic: without it the node stays out; n02 does not: resumed, but the
    # audit and the verdict say DCGM did not run (its healthy verdict is not 'high')
    out, proc = _verify(tb, tmp_path, d, requires={N01: ["dcgm"]})
    assert out[N01]["final"] == "drained" and "dcgm" in (_reason(tb, N01) or "").lower(), (out[N01], _reason(tb, N01))
    assert out[N02]["final"] == "resumed", out[N02]
    assert "dcgmi" not in _ran(tb, N02) and "all_reduce_perf" in _ran(tb, N02)
    assert "dcgm: not run: dcgmi is not installed" in proc.stdout or "dcgm not_run" in proc.stdout, proc.stdout[-3000:]


def _diagnose(tb, tmp_path, *extra):
    report = tmp_path / "report"
    args = ["playbooks/diagnose.yml", "-i", tb.inventory_path, "-l", tb.rack,
            "-e", "diagnosis_report_dir=%s" % report, "-e", "gpu_health_expected_gpus=8",
            "-e", "gpu_health_probe_timeout=10"] + list(extra)
    proc = tb.run_ansible(*args, tool="ansible-playbook")
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-3000:]
    with open(report / "report.json") as fh:
        rep = json.load(fh)
    return rep, {h["host"]: h for h in rep["hosts"]}, proc


def test_active_half_bandwidth_is_found_by_diagnose_and_a_busy_node_is_left_alone(cluster_factory, tmp_path):
    tb = cluster_factory("healthy", hosts=4, slurm=True)
    n01, n02, n03, n04 = tb.hosts
    _idle(tb, (n01, n02, n03))
    tb.set_processes(n04, 0)  # a job's process still on n04's GPU 0
    tb.set_active(n02, busbw_gbps=229.5)
    tb.clear_commands()
    rep, hosts, _ = _diagnose(tb, tmp_path, "-e", "active=yes")
    kinds = {h: sorted(f["kind"] for f in hosts[h]["findings"]) for h in hosts}
    # the node at half the NCCL bus bandwidth its 8 H100s reach: found, and why
    (low,) = [f for f in hosts[n02]["findings"] if f["kind"] == "active_busbw_low"]
    assert hosts[n02]["verdict"] == "gpu_hardware" and "229.5 GB/s" in low["message"] and "460" in low["message"]
    assert hosts[n01]["verdict"] == "healthy" and "active_busbw_low" not in kinds[n01]
    # the tier ran on the idle nodes, not on the one whose GPUs the job still uses
    assert "all_reduce_perf" in _ran(tb, n01) and not _ran(tb, n04)
    assert "active_refused_busy" in kinds[n04]
    # without -e active=yes nothing loads the nodes
    tb.clear_commands()
    _diagnose(tb, tmp_path)
    assert not any(_ran(tb, h) for h in tb.hosts)


@pytest.mark.slow  # the full tier: the active tier's other checks run in the fast tier
def test_active_topology_finds_a_missing_gpu_and_an_inactive_nvlink(cluster_factory, tmp_path):
    tb = cluster_factory("healthy", hosts=2, slurm=True)
    d = tmp_path / "gpurb"
    d.mkdir()
    _idle(tb, (N01, N02))

    def nvlink_down(st):
        st["gpus"][2]["nvlink_inactive"] = [4, 5]
    tb.update_state(N01, nvlink_down)
    # gone from the bus listing altogether (no handle error to read): only a count can tell
    tb.update_state(N02, lambda st: st["gpus"].pop(6))
    for h in (N01, N02):
        _drain(tb, d, h)
    # no count in the inventory and no earlier gather: the 8 come from Slurm's Gres=gpu:h100:8
    out, proc = _verify(tb, tmp_path, d, expected=0)
    assert out[N01]["final"] == "drained" and "nvlink" in (_reason(tb, N01) or "").lower(), _reason(tb, N01)
    assert out[N02]["final"] == "drained", out[N02]
    assert "7 of 8" in (_reason(tb, N02) or ""), _reason(tb, N02)


def test_active_bandwidth_ib_pair_finds_the_slow_link(cluster_factory):
    """playbooks/ib_pair.yml: perftest's server on the first node, the client on the second, the
    client's figure against the link's."""
    tb = cluster_factory("healthy", hosts=2, slurm=True)
    _idle(tb, (N01, N02))
    tb.update_state(N02, lambda st: st["hcas"][0].update(ib_bw_gbps=95.0))  # mlx5_0 at a quarter of NDR

    def pair(*extra):
        p = tb.run_ansible("playbooks/ib_pair.yml", "-i", tb.inventory_path, "-e", "pair=%s,%s" % (N01, N02),
                           "-e", "ib_device=mlx5_0", "-e", "expected_ib_gbps=360", *extra, tool="ansible-playbook")
        assert p.returncode == 0, p.stdout[-4000:]
        return p.stdout

    tb.clear_commands()
    out = pair()
    assert "ib_pair failed" in out and "95.0 Gb/s" in out, out[-3000:]
    (server,) = [c["argv"] for c in tb.commands(N01) if c.get("cmd") == "ib_write_bw"]
    (client,) = [c["argv"] for c in tb.commands(N02) if c.get("cmd") == "ib_write_bw"]
    assert "-d" in server and "mlx5_0" in server and tb.addr(N01) in client  # the client dialled the server
    tb.update_state(N02, lambda st: st["hcas"][0].pop("ib_bw_gbps", None))
    assert "ib_pair passed" in pair()
