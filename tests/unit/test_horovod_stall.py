"""Horovod's stall inspector (horovod/common/stall_inspector.cc): ranks that never submitted what the
others wait for are named, in each of its wordings; the job is a hang whose culprits the text names."""

import pytest

from gpu_runbook.cli import analyze_paths

PRE = ("One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting "
       "for remainder of ranks for more than 60 seconds. This may indicate that different ranks are trying to submit "
       "different tensors or that only subset of ranks is submitting tensors, which will cause deadlock. ")
# 0.21-0.28: 'Missing ranks:' (horovodrun puts '[0] ' before rank 0's lines)
MISSING = ("[0] [2023-06-26 07:23:58.477178: W /tmp/horovod/common/stall_inspector.cc:107] " + PRE + "\n"
           "[0] Missing ranks:\n"
           "[0] 0: [broadcast.conv.0.bias, broadcast.conv.0.weight ...]\n"
           "[0] 1: [broadcast.conv.0.bias, broadcast.conv.0.weight ...]\n")
# later: 'Stalled ranks:' and '!' for a rank it will shut down
STALLED = ("[2024-01-02 10:00:00.000000: W horovod/common/stall_inspector.cc:139] " + PRE + "\n"
           "Stalled ranks:\n3!: [DistributedAdam_Allreduce/HorovodAllreduce_grads_0]\n")
# before the stall inspector: operations.cc's 'Stalled ops:' with the missing (or ready) ranks inline
OLD = ("WARNING: " + PRE + "\nStalled ops:\nHorovodAllreduce_grads_0 [missing ranks: 2]\n")


# a rank's line 'R: [...]' has the shape of srun's --label prefix: under horovodrun's '[0]<stderr>:' tag or
# under none, the rank is still the report's (not the line's label)
@pytest.mark.parametrize("text, culprits", [(MISSING, [0, 1]), (STALLED, [3]), (OLD, [2]),
                                            (MISSING.replace("[0] ", "[0]<stderr>:"), [0, 1]),
                                            (MISSING.replace("[0] ", ""), [0, 1]),
                                            (MISSING.replace("[0] ", "[1,0]<stderr>:"), [0, 1])])
def test_the_ranks_the_stall_inspector_names_are_the_culprits_of_a_hang(tmp_path, text, culprits):
    (tmp_path / "horovodrun.log").write_text(text)
    job = analyze_paths([str(tmp_path)])["job"]
    assert job["verdict"] == "nccl_deadlock" and job["culprit_ranks"] == culprits
    assert job["culprit_evidence"] == "horovod_stall_inspector"
    (f,) = [f for f in job["findings"] if f["kind"] == "nccl_watchdog_timeout"]
    assert f["message"].startswith("Horovod's stall inspector") and "more than 60 s" in f["message"]


def test_a_report_cut_before_its_ranks_names_no_culprit(tmp_path):
    (tmp_path / "horovodrun.log").write_text("W stall_inspector.cc:107] " + PRE + "\nEpoch 3 loss 0.5\n")
    job = analyze_paths([str(tmp_path)])["job"]
    assert job["culprit_ranks"] == [] and job["verdict"] != "nccl_deadlock"
