"""The slurm_nodes inventory plugin's grouping (plugins/inventory/slurm_nodes.py: slurm_hosts, node_state)
on real `scontrol show node` outputs (tests/fixtures/slurm), parsed by the engine's one Slurm parser;
and its one-line errors through the real ansible-inventory when scontrol is missing or prints no node."""
import os
import subprocess
import sys

import pytest

from gpu_runbook.slurm import gres_names, parse_scontrol_show_job, parse_scontrol_show_nodes, parse_scontrol_show_topology
from tests.conftest import BIN, REPO, ansible_env, run_module

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


# ---------------------------------------------------------------- Slurm's words are data (issue 25)
HOSTILE_NODES = """NodeName=-oProxyCommand=touch_x Arch=x86_64 NodeAddr=10.0.0.9 State=IDLE Partitions=gpu Gres=gpu:8
NodeName=ALL Arch=x86_64 NodeAddr=10.0.0.8 State=IDLE Partitions=gpu Gres=gpu:8
NodeName=idle NodeAddr=10.0.0.7 State=IDLE Partitions=gpu Gres=gpu:8
NodeName=n1 NodeAddr=-oProxyCommand=sh State=IDLE Partitions=gpu Gres=gpu:8
NodeName=n2 NodeAddr=fe80::2 State=IDLE Partitions=gpu,ansible_connection=local \
ActiveFeatures=ansible_connection=local,ansible_become,hostvars,rack-3,a.b Gres=gpu:8
NodeName=n3 NodeAddr=n3.cluster State=IDLE Partitions=gpu Gres=gpu:8
"""


def test_hostile_node_names_and_addresses_are_left_out_with_a_warning_naming_them():
    warnings = []
    hosts = slurm_hosts(parse_scontrol_show_nodes(HOSTILE_NODES), warnings=warnings)
    assert list(hosts) == ["n2", "n3"]
    assert hosts["n2"]["vars"]["ansible_host"] == "fe80::2" and hosts["n3"]["vars"]["ansible_host"] == "n3.cluster"
    left = [w for w in warnings if "node left out" in w]
    assert len(left) == 4, warnings
    for said in ("'-oProxyCommand=touch_x'", "'ALL' is a Slurm keyword", "'idle' is a Slurm keyword",
                 "NodeAddr of 'n1' '-oProxyCommand=sh'"):
        assert any(said in w for w in left), (said, left)


def test_a_value_that_names_an_ansible_variable_makes_no_group():
    warnings = []
    hosts = slurm_hosts(parse_scontrol_show_nodes(HOSTILE_NODES), warnings=warnings)
    assert sorted(hosts["n2"]["groups"]) == ["feature_rack-3", "gpu_nodes", "partition_gpu", "state_idle"]
    assert hosts["n2"]["vars"]["slurm_features"][0] == "ansible_connection=local"  # kept as data
    for said in ("partition of n2: 'ansible_connection=local' is not a plain name",
                 "feature of n2: 'ansible_become' would make group 'feature_ansible_become'",
                 "feature of n2: 'hostvars' would make group", "feature of n2: 'a.b' is not a plain name"):
        assert any(w.startswith("slurm_nodes: " + said) for w in warnings), (said, warnings)
    # a bare prefix: the feature itself would be the group
    bare = slurm_hosts(parse_scontrol_show_nodes(HOSTILE_NODES), prefixes={"feature": ""}, warnings=[])
    assert "rack-3" in bare["n2"]["groups"] and "hostvars" not in bare["n2"]["groups"]


def test_the_leaf_switch_is_the_nodes_failure_domain():
    topo = parse_scontrol_show_topology(
        "SwitchName=leaf1 Level=0 LinkSpeed=1 Nodes=n[2-3]\n"
        "SwitchName=spine Level=1 LinkSpeed=1 Nodes=n[1-3] Switches=leaf1\n"
        "SwitchName=-x Level=0 Nodes=n9\n")
    assert topo == {"n2": "leaf1", "n3": "leaf1", "n1": "spine"}  # '-x' is no switch name
    assert parse_scontrol_show_topology("scontrol: error: topology/flat: no topology") == {}
    hosts = slurm_hosts(parse_scontrol_show_nodes(HOSTILE_NODES), switches=topo, warnings=[])
    assert hosts["n3"]["vars"]["slurm_switch"] == hosts["n3"]["vars"]["gpu_runbook_domain"] == "leaf1"
    plain = slurm_hosts(parse_scontrol_show_nodes(HOSTILE_NODES), warnings=[])
    assert "gpu_runbook_domain" not in plain["n3"]["vars"]


@pytest.mark.parametrize("name", ["ALL", "all", "DEFAULT", "drain", "-oProxyCommand=x"])
def test_slurm_node_refuses_a_keyword_as_a_node_name_before_any_command(tmp_path, name):
    res, proc = run_module(tmp_path, "slurm_node", {"name": name, "state": "drained", "reason": "x",
                                                    "state_dir": str(tmp_path / "st")})
    assert proc.returncode != 0 and res["msg"].startswith("name %r is " % name), res
    assert not (tmp_path / "st").exists()
