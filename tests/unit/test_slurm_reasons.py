"""sinfo -R (--list-reasons, with and without --long): each listed node is read as its own
scontrol record would be, under any file name, so a fleet's drained nodes are each a host."""

import pytest

from gpu_runbook.cli import analyze_paths
from gpu_runbook.slurm_reasons import reason_records

SHORT = ("$ sinfo -R\n"
         "REASON               USER      TIMESTAMP           NODELIST\n"
         "Xid 79 fallen off th root      2026-12-01T03:14:15 gpu-a-[07,09]\n"
         "Kill task failed     slurm     2026-12-02T07:00:00 gpu-b-12\n"
         "maintenance          root      2026-11-30T09:00:00 gpu-c-[01-02]\n")
LONG = ("REASON               USER         TIMESTAMP           STATE  NODELIST\n"
        "Not responding       slurm(202)   2026-12-01T03:14:15 down*  gpu-a-03\n"
        "Xid 74 -- GPUs need  root(0)      2026-12-02T07:00:00 drain  gpu-b-[11-12]\n")


def test_each_row_is_each_of_its_nodes_record():
    recs = dict(reason_records(SHORT))
    assert sorted(recs) == ["gpu-a-07", "gpu-a-09", "gpu-b-12", "gpu-c-01", "gpu-c-02"]
    assert "Reason=Xid 79 fallen off th [root@2026-12-01T03:14:15]" in recs["gpu-a-07"]
    assert "State=" not in recs["gpu-a-07"]  # the short listing says no state
    recs = dict(reason_records(LONG))
    assert "State=DOWN+NOT_RESPONDING" in recs["gpu-a-03"] and "State=DRAIN" in recs["gpu-b-12"]
    assert reason_records("NodeName=gpu-a-07 State=IDLE\n") == []


def test_a_listing_under_any_name_gives_one_host_per_node(tmp_path):
    for name, text in (("nodes.txt", SHORT), ("paste", LONG)):
        (tmp_path / name).write_text(text)
        hosts = dict((h["host"], h) for h in analyze_paths([str(tmp_path / name)])["hosts"])
        if name == "nodes.txt":
            assert sorted(hosts) == ["gpu-a-07", "gpu-a-09", "gpu-b-12", "gpu-c-01", "gpu-c-02"]
            assert hosts["gpu-a-07"]["verdict"] == "gpu_hardware"  # the Xid the reason names
            assert hosts["gpu-c-01"]["verdict"] == "unknown"       # a reason that names no cause
            (f,) = hosts["gpu-a-07"]["findings"]
            assert f["xid"] == 79 and f["evidence"] == "Reason=Xid 79 fallen off th"
        else:
            assert hosts["gpu-a-03"]["findings"][0]["kind"] == "logged_node_failure"
            assert hosts["gpu-b-11"]["verdict"] == "gpu_hardware"


def test_the_default_listings_rows_without_their_header_are_read_by_their_fixed_columns(tmp_path):
    # 'sinfo -R | grep ...' drops the header; "%20E %9u %19H %N" still puts each column at its place
    # (JoramGranger/ACE-HPC-LEDGER docs/hpc/drainned-nodes.md: the fixture x36-02's rows)
    rows = "\n".join(SHORT.splitlines()[2:]) + "\n"
    assert dict(reason_records(rows)) == dict(reason_records(SHORT))
    (tmp_path / "drained.txt").write_text("[critical@kla-ac-hpc-02 ~]$ sinfo -R | grep gpu\n" + rows)
    hosts = dict((h["host"], h) for h in analyze_paths([str(tmp_path / "drained.txt")])["hosts"])
    assert sorted(hosts) == ["gpu-a-07", "gpu-a-09", "gpu-b-12", "gpu-c-01", "gpu-c-02"]
    assert hosts["gpu-b-12"]["findings"][0]["kind"] == "logged_node_failure"
    # a line of other words in those columns is no row: a time must stand at column 31
    assert reason_records("Kill task failed     slurm     yesterday           gpu-b-12\n") == []
    assert reason_records("a b c 2026-12-02T07:00:00 gpu-b-12\n") == []


# sinfo's default summary, as src/sinfo/opts.c prints it ("partition:9 ,available:.5 ,time:.10 ,nodes:.6
# ,statecompact:.6 ,nodelist:0"); the states' suffixes from node_state_string_compact (held-out x40-A06)
SUMMARY = ("PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n"
           "gpu          up 14-00:00:0     12  drng@ c[002,004,008-010,012,016,024-028]\n"
           "gpu          up 14-00:00:0      5  maint c[003,005,011,013,019]\n"
           "gpu          up 14-00:00:0      3  fail* c[020-022]\n"
           "gpu          up 14-00:00:0      7    mix c[006-007,014-015,017-018,023]\n"
           "debug*       up      10:00      2   idle e[001-002]\n"
           "idle         up 7-00:00:00      2   idle e[001-002]\n")
NODES_LONG = ("Mon Dec 07 10:00:00 2026\n"
              "NODELIST   NODES PARTITION       STATE CPUS    S:C:T MEMORY TMP_DISK WEIGHT AVAIL_FE REASON\n"
              "gpu-a-07       1      gpu*     drained  128   2:32:2 102400        0      1   (null) Xid 79 GPU fell off\n"
              "gpu-a-08       1      gpu*        idle  128   2:32:2 102400        0      1   (null) none\n")


def test_sinfo_listings_of_node_states_give_each_node_its_state():
    from gpu_runbook.slurm_reasons import state_records, state_word
    recs = dict(state_records(SUMMARY))
    assert len(recs) == 12 + 5 + 3 + 7 + 2  # e001-e002 once, though listed in two partitions
    assert recs["c002"] == "NodeName=c002 State=MIXED+DRAIN+REBOOT_REQUESTED\n"
    assert "State=DOWN+FAIL+NOT_RESPONDING" in recs["c021"] and "State=IDLE" in recs["e002"]
    recs = dict(state_records(NODES_LONG))
    assert recs["gpu-a-07"] == "NodeName=gpu-a-07 State=DRAIN\n   Reason=Xid 79 GPU fell off\n"
    assert "Reason" not in recs["gpu-a-08"]
    assert state_word("idle~") == "IDLE+POWERED_DOWN" and state_word("alloc") == "ALLOC"
    # rows whose STATE cell is not a state, or with no header above them, are nobody's
    assert state_records("gpu up 1:00 2 broken! c[1-2]\n") == []
    assert state_records("PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\ngpu up 1:00 2 IDLE c[1-2]\n") == []


@pytest.mark.parametrize("name", ["sinfo.txt", "paste"])
def test_the_summary_under_any_name_gives_one_host_per_node(tmp_path, name):
    (tmp_path / name).write_text("$ sinfo\n" + SUMMARY)
    hosts = dict((h["host"], h) for h in analyze_paths([str(tmp_path / name)])["hosts"])
    assert len(hosts) == 29
    assert (hosts["c020"]["verdict"], hosts["c020"]["severity"]) == ("unknown", "critical")
    assert hosts["c002"]["findings"][0]["evidence"] == "State=MIXED+DRAIN+REBOOT_REQUESTED"
    (tmp_path / name).write_text(NODES_LONG)
    hosts = dict((h["host"], h) for h in analyze_paths([str(tmp_path / name)])["hosts"])
    assert hosts["gpu-a-07"]["verdict"] == "gpu_hardware"  # the Xid its reason names
