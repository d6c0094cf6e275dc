"""The slurm_nodes inventory plugin's grouping (plugins/inventory/slurm_nodes.py: slurm_hosts, node_state)
on real `scontrol show node` outputs (tests/fixtures/slurm), parsed by the engine's one Slurm parser;
and its one-line errors through the real ansible-inventory when scontrol is missing or prints no node."""
import os
import subprocess
import sys

import pytest

from gpu_runbook.slurm import gres_names, parse_scontrol_show_job, parse_scontrol_show_nodes
from tests.conftest import BIN, REPO, ansible_env

sys.path.insert(0, os.path.join(REPO, "plugins", "inventory"))
from slurm_nodes import node_state, slurm_hosts  # noqa: E402

FIX = os.path.join(REPO, "tests", "fixtures", "slurm")


def nodes(*names):
    text = ""
    for name in names:
        with open(os.path.join(FIX, name)) as fh:
            text += fh.read().rstrip("\n") + "\n"
    return parse_scontrol_show_nodes(text)


@pytest.mark.parametrize("name,state", [
    ("node_2205_idle_oneline.txt", "idle"),
    ("node_2205_idle_drain_multiline.txt", "drained"),
    ("node_2205_mixed_drain_oneline.txt", "draining"),
    ("node_2205_allocated_drain_multiline.txt", "draining"),
    # down wins over drain: the node does not answer, whoever drained it
    ("node_2205_down_drain_noresp_oneline.txt", "down"),
    ("node_1605_down_star_drain_oneline.txt", "down"),
])
def test_state_group_is_the_operators_name_for_slurms_state(name, state):
    (host,) = slurm_hosts(nodes(name)).values()
    assert host["vars"]["slurm_state"] == state
    assert [g for g in host["groups"] if g.startswith("state_")] == ["state_" + state]


def test_fail_flag_and_base_states_without_flags():
    base = {"name": "n1", "drain": None, "flags": ["FAIL"]}
    assert node_state(dict(base, base_state="IDLE")) == "fail"
    assert node_state(dict(base, base_state="MIXED")) == "failing"
    assert node_state({"name": "n1", "base_state": "FUTURE", "flags": []}) == "future"
    assert node_state({"name": "n1", "base_state": None, "flags": []}) == "unknown"


def test_groups_and_hostvars_of_a_mixed_cluster():
    hosts = slurm_hosts(nodes("node_1605_down_star_drain_oneline.txt", "node_2002_mixed_drain_multiline.txt",
                              "node_2205_idle_oneline.txt"))
    assert list(hosts) == ["datamover2", "med0304", "gpu-r1-n02"]
    assert sorted(hosts["med0304"]["groups"]) == ["feature_skylake", "gpu_nodes", "partition_gpu", "state_draining"]
    # no gres: not a GPU node, whatever its partition
    assert sorted(hosts["datamover2"]["groups"]) == ["partition_copy", "state_down"]
    assert sorted(hosts["gpu-r1-n02"]["groups"]) == ["gpu_nodes", "partition_gpu", "state_idle"]
    assert hosts["gpu-r1-n02"]["vars"] == {
        "slurm_node_name": "gpu-r1-n02", "slurm_state": "idle", "slurm_state_raw": "IDLE", "slurm_state_flags": [],
        "slurm_reason": None, "slurm_partitions": ["gpu"], "slurm_features": [], "slurm_gres": "gpu:h100:8",
        "ansible_host": "10.201.0.12"}
    med = hosts["med0304"]["vars"]
    assert med["slurm_reason"] == "deep power-off required for PSU" and med["slurm_features"] == ["skylake"]
    assert med["slurm_gres"] == "gpu:tesla:4(S:0-1)" and med["slurm_state_raw"] == "MIXED+DRAIN"
    assert hosts["datamover2"]["vars"]["slurm_state_flags"] == ["NOT_RESPONDING", "DRAIN"]


def test_partition_filter_job_narrowing_prefixes_and_gpu_group():
    parsed = nodes("node_1605_down_star_drain_oneline.txt", "node_2002_mixed_drain_multiline.txt",
                   "node_2205_idle_oneline.txt")
    assert list(slurm_hosts(parsed, partitions=["copy"])) == ["datamover2"]
    assert list(slurm_hosts(parsed, partitions=["gpu", "nosuch"])) == ["med0304", "gpu-r1-n02"]
    job = parse_scontrol_show_job("JobId=77 JobName=x JobState=RUNNING NodeList=gpu-r1-n[02-03],med0304 NumNodes=3")
    hosts = slurm_hosts(parsed, job=job)
    assert list(hosts) == ["med0304", "gpu-r1-n02"]  # gpu-r1-n03 is the job's but not Slurm's node list here
    assert "job_77" in hosts["med0304"]["groups"] and hosts["gpu-r1-n02"]["vars"]["slurm_job_id"] == "77"
    hosts = slurm_hosts(parsed, prefixes={"partition": "p_", "state": "s_", "feature": "f_"}, gpu_group="gpus")
    assert sorted(hosts["med0304"]["groups"]) == ["f_skylake", "gpus", "p_gpu", "s_draining"]


def test_gres_names_read_types_counts_and_socket_lists():
    assert gres_names("gpu:h100:8") == ["gpu"]
    assert gres_names("gpu:a100:4(S:0,1),nic:2") == ["gpu", "nic"]
    assert gres_names("(null)") == [] and gres_names(None) == [] and gres_names("") == []
    assert gres_names("gpuish:2") == ["gpuish"]  # a name that starts with gpu is not gpu


def _inventory(tmp_path, config):
    cfg = tmp_path / "c.slurm_nodes.yml"
    cfg.write_text(config)
    return subprocess.run([os.path.join(BIN, "ansible-inventory"), "-i", str(cfg), "--list"], cwd=REPO,
                          env=ansible_env(), capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("config,says", [
    ("plugin: slurm_nodes\nscontrol: /nonexistent/scontrol\n",
     "slurm_nodes: /nonexistent/scontrol not found: install slurm-client or set `scontrol:` in the config"),
    # a program that answers anything but nodes (here: its own argv)
    ("plugin: slurm_nodes\nscontrol: %s\n" % "/bin/echo",
     "slurm_nodes: `scontrol -o show node` printed no node (SLURM_CONF="),
])
def test_no_scontrol_or_no_nodes_stops_ansible_with_one_line(tmp_path, config, says):
    proc = _inventory(tmp_path, config)
    assert proc.returncode != 0, proc.stdout
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("slurm_nodes: ")]
    assert lines and all(line.startswith(says) for line in lines), proc.stderr
    assert "Completely failed to parse inventory source" in proc.stderr  # any_unparsed_is_failed: no empty run


def test_an_unknown_option_is_a_config_error_not_a_traceback(tmp_path):
    proc = _inventory(tmp_path, "plugin: slurm_nodes\ntimeout: soon\n")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("slurm_nodes: ")]
    assert lines and "'timeout'" in lines[0], proc.stderr
