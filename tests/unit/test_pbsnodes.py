"""PBS's pbsnodes (-l rows and the long form): each node its own host, its state and its
comment read as a Slurm node's state and drain reason are."""

from gpu_runbook.cli import analyze_paths
from gpu_runbook.content import plan
from gpu_runbook.pbsnodes import STATES, host_parts, is_list_row, node_records, parse_pbsnodes

LIST = """$ pbsnodes -l
x3014c0s19b0n0       offline,resv-exclusive Xid 74 -- GPUs need reseat
x3102c0s7b1n0        down node down: communication closed
x3209c0s13b0n0       state-unknown,down
"""

LONG = """gpu017
     Mom = gpu017.cluster
     ntype = PBS
     state = offline
     pcpus = 64
     comment = NHC: check_hw_ib:  No IB port mlx5_0:1 is ACTIVE (LinkUp 100 Gb/sec).
     resources_available.ngpus = 8

gpu018
     Mom = gpu018.cluster
     ntype = PBS
     state = free
     pcpus = 64
"""


def hosts_of(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    return dict((h["host"], h) for h in analyze_paths([str(tmp_path)])["hosts"])


def test_each_listed_node_is_its_own_host_read_by_state_and_comment(tmp_path):
    hosts = hosts_of(tmp_path, "nodes.txt", LIST)
    assert sorted(hosts) == ["x3014c0s19b0n0", "x3102c0s7b1n0", "x3209c0s13b0n0"]
    xid = hosts["x3014c0s19b0n0"]
    assert (xid["verdict"], xid["severity"]) == ("gpu_hardware", "warning")
    (f,) = [f for f in xid["findings"] if f.get("name") == "PBS"]
    assert f["xid"] == 74 and f["source"] == "nodes.txt:2"
    for node in ("x3102c0s7b1n0", "x3209c0s13b0n0"):  # the server lost the node: a node failure
        assert [f["kind"] for f in hosts[node]["findings"] if f.get("name") == "PBS"] == ["logged_node_failure"]


def test_the_long_form_reads_a_comment_with_nhcs_words_and_a_free_node_says_nothing_wrong(tmp_path):
    hosts = hosts_of(tmp_path, "output.log", LONG)
    assert hosts["gpu017"]["verdict"] == "ib_network"
    assert [f for f in hosts["gpu018"]["findings"] if f["severity"] in ("warning", "critical")] == []
    facts, findings = parse_pbsnodes(LONG)
    assert facts["pbs_nodes"][1] == {"node": "gpu018", "state": "free", "comment": ""} and len(findings) == 1


def test_only_rows_laid_out_as_pbsnodes_prints_them_are_its_rows():
    assert "offline" in STATES and "down" in STATES
    assert is_list_row("x3014c0s19b0n0       offline,resv-exclusive Xid 74 -- GPUs need reseat")
    assert not is_list_row("Port offline since boot")  # not padded to 20 columns
    assert not is_list_row("node0001             free")  # -l lists only nodes down or offline
    assert node_records("just some text\nmore\n") == []
    assert set(plan(LIST).blocks) == {"pbsnodes.txt"} and set(plan(LONG).blocks) == {"pbsnodes.txt"}
    # a lone word after the listing is another program's line, left to the line readers
    assert "Killed" in plan(LIST + "Killed\n").rest


def test_each_nodes_part_keeps_the_files_line_numbers_and_a_node_listed_twice_keeps_both():
    text = LIST + "x3014c0s19b0n0       offline Xid 74 -- GPUs need reseat\n"
    parts = dict(host_parts(text))
    assert sorted(parts) == ["x3014c0s19b0n0", "x3102c0s7b1n0", "x3209c0s13b0n0"]
    lines = parts["x3014c0s19b0n0"].split("\n")
    assert lines[1].startswith("x3014c0s19b0n0") and lines[4].startswith("x3014c0s19b0n0") and not lines[2]
    # a line separator other than a newline inside a record's line does not move the lines that follow
    assert dict(host_parts("\x0c" + LIST))["x3102c0s7b1n0"].split("\n")[2].startswith("x3102c0s7b1n0")
