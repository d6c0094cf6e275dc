"""sinfo -R (--list-reasons, with and without --long): each listed node is read as its own
scontrol record would be, under any file name, so a fleet's drained nodes are each a host."""

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
