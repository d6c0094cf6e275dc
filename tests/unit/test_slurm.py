import pytest

from gpu_runbook.slurm import expand_hostlist, gres_gpu_count, parse_sacct, parse_scontrol_show_job, parse_scontrol_show_node

SHOW_JOB = """JobId=12345 JobName=train-llm
   UserId=alice(1000) GroupId=alice(1000) MCS_label=N/A
   Priority=4294901757 Nice=0 Account=(null) QOS=normal
   JobState=FAILED Reason=NonZeroExitCode Dependency=(null)
   RunTime=11:09:48 TimeLimit=UNLIMITED TimeMin=N/A
   SubmitTime=2026-12-01T19:59:58 EligibleTime=2026-12-01T19:59:58
   StartTime=2026-12-01T20:00:03 EndTime=2026-12-02T07:09:51 Deadline=N/A
   Partition=gpu AllocNode:Sid=ctl:1234
   NodeList=gpu-r3-n[01-04,07] BatchHost=gpu-r3-n01
   NumNodes=5 NumCPUs=10 NumTasks=40 CPUs/Task=1 ReqB:S:C:T=0:0:*:*
   TRES=cpu=10,mem=5000M,node=5,billing=10,gres/gpu=40
   Command=/home/alice/train.sh --epochs 100
   WorkDir=/home/alice/run7
   StdErr=/home/alice/run7/slurm-12345.out
   StdIn=/dev/null
   StdOut=/home/alice/run7/slurm-12345.out
"""


def test_expand_hostlist_ranges_padding_and_lists():
    assert expand_hostlist("gpu-r3-n[01-03,07],ctl") == ["gpu-r3-n01", "gpu-r3-n02", "gpu-r3-n03", "gpu-r3-n07", "ctl"]
    assert expand_hostlist("h[8-11]") == ["h8", "h9", "h10", "h11"]
    assert expand_hostlist("r[1-2]n[1-2]") == ["r1n1", "r1n2", "r2n1", "r2n2"]
    assert expand_hostlist("(null)") == []
    assert expand_hostlist("weird[a-b]") == ["weird[a-b]"]


def test_scontrol_show_job_multiline_and_oneliner():
    for text in (SHOW_JOB, " ".join(SHOW_JOB.split())):
        job = parse_scontrol_show_job(text)
        assert job["job_id"] == "12345" and job["state"] == "FAILED"
        assert job["nodes"] == ["gpu-r3-n01", "gpu-r3-n02", "gpu-r3-n03", "gpu-r3-n04", "gpu-r3-n07"]
        assert job["start"] == "2026-12-01T20:00:03"
        assert job["stdout"] == "/home/alice/run7/slurm-12345.out"
        assert job["num_nodes"] == 5


def test_scontrol_unknown_job_is_empty():
    assert parse_scontrol_show_job("slurm_load_jobs error: Invalid job id specified") == {}


def test_sacct_parsable_output():
    text = "12345|train-llm|FAILED|2026-12-01T20:00:03|2026-12-02T07:09:51|gpu-r3-n[01-02]|/home/alice/run7\n"
    job = parse_sacct(text, "12345")
    assert job["nodes"] == ["gpu-r3-n01", "gpu-r3-n02"] and job["state"] == "FAILED"
    assert parse_sacct(text, "999") == {}


def test_start_time_is_read_in_the_controllers_zone():
    # A Seoul controller prints local times without a zone; the node's window must be the
    # same instant, not the same wall-clock digits read as UTC.
    job = parse_scontrol_show_job(SHOW_JOB, tz="+09:00")
    assert job["start"] == "2026-12-01T20:00:03+09:00"
    assert job["end"] == "2026-12-02T07:09:51+09:00"
    sacct = "12345|train-llm|FAILED|2026-12-01T20:00:03|2026-12-02T07:09:51|gpu-r3-n[01-02]|/w\n"
    assert parse_sacct(sacct, "12345", tz="-05:00")["start"] == "2026-12-01T20:00:03-05:00"
    # no zone known: kept as Slurm printed it
    assert parse_scontrol_show_job(SHOW_JOB)["start"] == "2026-12-01T20:00:03"


def test_start_time_in_the_local_zone_follows_summer_time(monkeypatch):
    import time
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        winter = parse_scontrol_show_job(SHOW_JOB, tz="local")["start"]
        summer = parse_scontrol_show_job(SHOW_JOB.replace("2026-12-01T20:00:03", "2026-07-01T20:00:03"),
                                         tz="local")["start"]
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    assert winter == "2026-12-01T20:00:03-05:00" and summer == "2026-07-01T20:00:03-04:00"


@pytest.mark.parametrize("gres, count", [
    ("gpu:h100:8(S:0-1)", 8), ("gpu:8", 8), ("gpu:a100:4(S:0),gpu:t4:2(S:1)", 6),
    ("gpu:h100:8(S:0-1),shard:h100:32(S:0-1)", 8), ("nic:2,gpu:h100:4", 4),
    # a gpu entry without its count (gres.conf may autodetect): not a count to hold a node to
    ("gpu", None), ("gpu:h100", None), ("gpu:h100:8,gpu:t4", None),
    ("shard:8", None), ("(null)", None), (None, None), ("", None)])
def test_gres_gpu_count_sums_the_gpu_entries_that_say_their_count(gres, count):
    assert gres_gpu_count(gres) == count


def test_a_node_record_carries_its_gres_gpu_count():
    text = ("NodeName=gpu-r1-n01 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 CPUTot=2 Gres=gpu:h100:8(S:0-1) "
            "NodeAddr=10.0.0.1 State=IDLE+DRAIN Reason=gpu-runbook: INC-1: x [root@2026-12-05T01:02:03]")
    node = parse_scontrol_show_node(text)
    assert (node["gres"], node["gpus"], node["drained"]) == ("gpu:h100:8(S:0-1)", 8, True)


@pytest.mark.parametrize("names, said, want", [
    (["job-4242/slurm-4242.out"], None, ("4242", None)),            # Slurm's default: an id, no name
    (["llama-70b-pretrain-4242.out"], "4242", ("4242", "llama-70b-pretrain")),   # --output=%x-%j.out
    (["llama3_1_8b-FSDP_288.out"], "288", ("288", "llama3_1_8b-FSDP")),          # --output=%x_%j.out
    (["slurm-77_3.out"], None, ("77", None)),                      # an array task: %A_%a
    (["rank-3.log", "rank-4.log"], None, (None, None)),            # per-rank files name no job
    (["rank-3.log"], "4242", ("4242", None)),                      # a number that is not the job's: no name
    (["train-99.out"], None, (None, None)),                        # no id said elsewhere: the name is no proof
    (["a-4242.out", "b-4242.out"], "4242", ("4242", None)),        # two names for one job: neither
])
def test_the_output_files_names_give_the_job_id_and_name_only_when_they_agree(names, said, want):
    from gpu_runbook.slurm_jobs import job_from_output_names
    assert job_from_output_names(names, said) == want
