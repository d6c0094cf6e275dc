"""The slurm_nodes inventory plugin (plugins/inventory/slurm_nodes.py) against the emulated cluster's real
slurmctld, through the real ansible-inventory / ansible-playbook: its groups are what Slurm says
(sinfo's own state names, checked after a real drain, a real feature change and a real job)."""

import json
import os
import re
import subprocess

import pytest
import yaml

from tests.conftest import REPO

RACK3 = "rack3"


def _config(tb, tmp_path, name="cluster", **options):
    """A config file of the plugin, with group_vars beside it for the testbed's SSH (as a site keeps them)."""
    lines = ["plugin: slurm_nodes", "slurm_conf: %s" % options.pop("slurm_conf", tb.slurm_conf)]
    lines += ["%s: %s" % (k, json.dumps(v)) for k, v in options.items()]
    cfg = tmp_path / ("%s.slurm_nodes.yml" % name)
    cfg.write_text("\n".join(lines) + "\n")
    gv = tmp_path / "group_vars"
    gv.mkdir(exist_ok=True)
    (gv / "gpu_nodes.yml").write_text("\n".join([
        "ansible_user: root", "ansible_ssh_private_key_file: %s" % tb.ssh_key,
        "ansible_python_interpreter: /usr/bin/python3",
        "ansible_ssh_common_args: '-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR'",
        "gpu_health_sysfs_root: /opt/fakehw/sys", ""]))
    return str(cfg)


def _run(tb, tool, *args, env=None, timeout=300):
    # the ambient SLURM_CONF is the testbed's: drop it, so only the config file points the plugin at Slurm
    full = dict(tb.ansible_env(env))
    full.pop("SLURM_CONF", None)
    return subprocess.run([tb.ansible_bin(tool)] + list(args), capture_output=True, text=True, timeout=timeout,
                          env=full, cwd=REPO)


def _inventory(tb, cfg):
    proc = _run(tb, "ansible-inventory", "-i", cfg, "--list")
    assert proc.returncode == 0, proc.stderr[-3000:]
    # Ansible marks the plugin's strings as data, never templates (a Slurm reason is anyone's text)
    inv = json.loads(proc.stdout, object_hook=lambda d: d["__ansible_unsafe"] if list(d) == ["__ansible_unsafe"] else d)
    groups = {g: sorted(v.get("hosts", [])) for g, v in inv.items() if g != "_meta"}
    return groups, inv["_meta"]["hostvars"]


def _members(groups, prefix):
    return {g[len(prefix):]: hosts for g, hosts in groups.items() if g.startswith(prefix)}


@pytest.fixture
def changed_slurm(cluster):
    """One node drained, two with the feature rack3, two running one exclusive job: all put back after."""
    tb = cluster
    drained, featured, busy = tb.hosts[1], tb.hosts[2:4], tb.hosts[4:6]
    tb.slurm("scontrol", "update", "NodeName=%s" % drained, "State=DRAIN", "Reason=gpu-runbook: INC-INV: PSU [t-9]")
    for h in featured:
        tb.slurm("scontrol", "update", "NodeName=%s" % h, "AvailableFeatures=%s" % RACK3, "ActiveFeatures=%s" % RACK3)
    out = tb.slurm("sbatch", "--parsable", "--exclusive", "-J", "inv-test", "-N", "2", "-w", ",".join(busy),
                   "-o", "/dev/null", "--chdir", "/tmp", "--wrap", "sleep 300").stdout
    job = int(out.strip().split(";")[0])
    try:
        tb.wait_nodes(lambda st: st == "allocated", nodes=busy, timeout=30)
        yield {"drained": drained, "featured": featured, "busy": busy, "job": job}
    finally:
        tb.slurm("scancel", str(job), check=False)
        tb.slurm("scontrol", "update", "NodeName=%s" % drained, "State=RESUME", check=False)
        for h in featured:
            tb.slurm("scontrol", "update", "NodeName=%s" % h, "AvailableFeatures=", "ActiveFeatures=", check=False)
        tb.wait_nodes(lambda st: st == "idle", timeout=60)


def test_groups_are_what_slurm_says(cluster, changed_slurm, tmp_path):
    tb, ch = cluster, changed_slurm
    groups, hostvars = _inventory(tb, _config(tb, tmp_path))
    assert groups["gpu_nodes"] == sorted(tb.hosts)
    assert _members(groups, "partition_") == {"gpu": sorted(tb.hosts)}
    # each node's state group is sinfo's own name for its state (another Slurm client, not our parser)
    by_sinfo = {}
    for host, state in tb.sinfo_states().items():
        by_sinfo.setdefault(state, []).append(host)
    assert _members(groups, "state_") == {s: sorted(h) for s, h in by_sinfo.items()}
    assert groups["state_drained"] == [ch["drained"]] and groups["state_allocated"] == sorted(ch["busy"])
    assert groups["feature_rack3"] == sorted(ch["featured"]) and "rack3" not in groups
    d = hostvars[ch["drained"]]
    assert d["slurm_reason"] == "gpu-runbook: INC-INV: PSU [t-9]" and d["slurm_state_raw"] == "IDLE+DRAIN"
    assert d["slurm_state_flags"] == ["DRAIN"] and d["slurm_gres"] == "gpu:h100:8"
    for h in tb.hosts:  # where Ansible connects is Slurm's NodeAddr
        assert hostvars[h]["ansible_host"] == tb.addr(h) and hostvars[h]["slurm_node_name"] == h
    assert hostvars[ch["featured"][0]]["slurm_features"] == [RACK3]


def test_the_example_config_with_its_constructed_groups(cluster, changed_slurm, tmp_path):
    tb, ch = cluster, changed_slurm
    with open(os.path.join(REPO, "inventory-examples", "slurm-cluster", "cluster.slurm_nodes.yml")) as fh:
        example = yaml.safe_load(fh)
    example.pop("plugin")
    example.pop("slurm_conf")  # /etc/slurm/slurm.conf there; the testbed's here
    groups, _ = _inventory(tb, _config(tb, tmp_path, **example))
    assert groups["partition_gpu"] == sorted(tb.hosts)
    assert groups["flag_DRAIN"] == [ch["drained"]]  # keyed_groups on slurm_state_flags
    assert groups["drained_by_gpu_runbook"] == [ch["drained"]]  # groups: on the reason's prefix


def test_job_id_narrows_to_the_jobs_nodes(cluster, changed_slurm, tmp_path):
    tb, ch = cluster, changed_slurm
    groups, hostvars = _inventory(tb, _config(tb, tmp_path, job_id=str(ch["job"])))
    assert groups["job_%d" % ch["job"]] == sorted(ch["busy"]) == groups["gpu_nodes"]
    assert groups["state_allocated"] == sorted(ch["busy"]) and sorted(hostvars) == sorted(ch["busy"])
    # a job Slurm does not know: one line, and no inventory
    proc = _run(tb, "ansible-inventory", "-i", _config(tb, tmp_path, name="nojob", job_id="999999"), "--list")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert re.search(r"^slurm_nodes: `scontrol -o show job 999999` failed \(rc 1\): .*Invalid job id", proc.stderr,
                     re.M), proc.stderr


def test_a_dead_controller_stops_the_run_with_one_line(cluster, tmp_path):
    tb = cluster
    # the same cluster's config, its controller port closed: what a client sees when slurmctld is down
    conf = tmp_path / "slurm.conf"
    with open(tb.slurm_conf) as fh:
        conf.write_text(re.sub(r"^SlurmctldPort=\d+$", "SlurmctldPort=6999", fh.read(), flags=re.M))
    proc = _run(tb, "ansible-inventory", "-i", _config(tb, tmp_path, slurm_conf=str(conf)), "--list", timeout=180)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    ours = [line for line in proc.stderr.splitlines() if line.startswith("slurm_nodes: ")]
    assert ours and all(line == ours[0] for line in ours), proc.stderr
    assert ours[0].startswith("slurm_nodes: `scontrol -o show node` failed (rc 1): ")
    assert "Unable to contact slurm controller" in ours[0] and ours[0].endswith("; is slurmctld up?")
    assert "Completely failed to parse inventory source" in proc.stderr


def test_diagnose_targets_a_feature_group_in_check_mode(cluster, changed_slurm, tmp_path):
    tb, ch = cluster, changed_slurm
    tb.clear_commands()
    report = tmp_path / "report"
    proc = _run(tb, "ansible-playbook", "playbooks/diagnose.yml", "-i", _config(tb, tmp_path), "-l", "feature_rack3",
                "--check", "-e", "diagnosis_report_dir=%s" % report, "-e", "gpu_health_expected_gpus=8",
                "-e", "gpu_health_probe_timeout=5", timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    recap = re.findall(r"^(\S+)\s+: ok=\d+", proc.stdout, re.M)
    assert sorted(h for h in recap if h != "localhost") == sorted(ch["featured"]), proc.stdout[-3000:]
    # the probes ran on those two hosts only (the fakes log every call), and the culprit is named
    probed = sorted(h for h in tb.hosts if any(c["argv"][:3] == ["nvidia-smi", "-q", "-x"] for c in tb.commands(h)))
    assert probed == sorted(ch["featured"])
    assert re.search(r"^ +gpu-r3-n03 +GPU hardware +critical.*\n +Xid 79 ", proc.stdout, re.M), proc.stdout[-3000:]
    assert re.search(r"^ +healthy \(1\): gpu-r3-n04$", proc.stdout, re.M), proc.stdout[-3000:]
