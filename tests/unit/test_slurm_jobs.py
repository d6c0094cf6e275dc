"""slurm_jobs: squeue's line for the hung job and what requeue / scancel said (pure)."""

import pytest

from gpu_runbook.slurm_jobs import (JOB_FORMAT, action_argv, action_outcome, find_hung_job, holds_node,
                                    job_id_problem, parse_squeue_jobs)

N03 = "gpu-r3-n03"


def test_squeue_lines_with_a_hostlist_and_a_name_holding_the_separator():
    text = ("4242|RUNNING|gpu-r3-n[03-04]|alice|train|None\n"
            "4243|PENDING||bob|eval|a|b|Resources\n"
            "garbage line\n\n"
            "4244_7|COMPLETING|gpu-r3-n03|carol|sweep|None\n")
    jobs = parse_squeue_jobs(text)
    assert [j["id"] for j in jobs] == ["4242", "4243", "4244_7"]
    assert jobs[0]["nodes"] == ["gpu-r3-n03", "gpu-r3-n04"] and jobs[0]["user"] == "alice"
    assert jobs[1]["nodes"] == [] and jobs[1]["name"] == "eval|a|b" and jobs[1]["reason"] == "Resources"
    assert JOB_FORMAT.count("|") == 5


@pytest.mark.parametrize("state,node,held", [("RUNNING", N03, True), ("COMPLETING", N03, True),
                                              ("SUSPENDED", N03, True), ("PENDING", N03, False),
                                              ("RUNNING", "gpu-r3-n09", False), ("CANCELLED", N03, False)])
def test_holds_node(state, node, held):
    assert holds_node({"state": state, "nodes": [N03]}, node) is held


def test_only_the_incidents_job_on_the_drained_node_is_ever_found():
    jobs = parse_squeue_jobs("4242|RUNNING|gpu-r3-n[03-04]|alice|train|None\n")
    job, why = find_hung_job(jobs, "4242", N03)
    assert job["id"] == "4242" and why is None
    job, why = find_hung_job(jobs, "4242", "gpu-r3-n07")
    assert job is None and "runs on gpu-r3-n03,gpu-r3-n04, not on gpu-r3-n07" in why
    assert find_hung_job(jobs, "9999", N03) == (None, None)            # gone: nothing to do
    assert find_hung_job(parse_squeue_jobs("4242|PENDING||alice|train|BeginTime\n"), "4242", N03) == (None, None)


@pytest.mark.parametrize("job_id,ok", [("4242", True), ("4242_3", True), ("", False), ("42 43", False),
                                       ("-1", False), ("4242;rm", False), (None, False), ("ALL", False)])
def test_job_id_problem(job_id, ok):
    assert (job_id_problem(job_id) is None) is ok


def test_argv_and_what_slurm_said():
    assert action_argv("requeue", "4242") == ["scontrol", "requeue", "4242"]
    assert action_argv("cancel", "4242") == ["scancel", "4242"]
    assert action_outcome("requeue", 0, "")["outcome"] == "done"
    # an interactive allocation cannot be requeued: a refusal, which the caller never turns into a cancel
    refused = action_outcome("requeue", 1, "Requeue of JobId=4242 returned an error: Only batch jobs are "
                                           "accepted or processed\n")
    assert refused == {"outcome": "refused", "said": "Requeue of JobId=4242 returned an error: Only batch jobs "
                                                     "are accepted or processed"}
    assert action_outcome("cancel", 1, "scancel: error: Kill job error on job id 4242: Access/permission denied")[
        "outcome"] == "denied"
    assert action_outcome("cancel", 1, "scancel: error: something new")["outcome"] == "failed"
