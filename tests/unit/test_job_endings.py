"""A job's verdict from how it ended: a run that said it ended well with only warnings, a rank
that died of the code's own error, a rank the OOM killer took, and the process groups a
watchdog's SeqNums belong to."""

import pytest

from gpu_runbook.cli import analyze_paths
from gpu_runbook.joblog import parse_job_logs

SUCCESS = (':::MLLOG {"namespace": "", "time_ms": 1715900000000, "event_type": "INTERVAL_END", "key": "run_stop", '
           '"value": null, "metadata": {"file": "train.py", "lineno": 300, "status": "success"}}\n')
SHARP = ("ip-0A230408:7276:7875 [0] sharp_plugin.c:288 NCCL WARN NET/IB :SHARP coll init error: Cannot create SHArP "
         "job(-11)\n"
         "ip-0A230408:7276:7875 [0] transport.cc:253 NCCL WARN Cannot initialize CollNet, using point-to-point network "
         "instead\n")


def job(tmp_path, text, name="result_0.txt"):
    (tmp_path / name).write_text(text)
    return analyze_paths([str(tmp_path)])["job"]


def test_a_run_that_said_it_ended_well_with_only_warnings_is_healthy(tmp_path):
    # SHARP not set up, NCCL went on without CollNet: advice for the next run, not why this one failed
    j = job(tmp_path, SHARP + SUCCESS)
    assert j["verdict"] == "healthy"
    assert any(f["category"] == "nccl_config" and f["severity"] == "warning" for f in j["findings"])
    assert job(tmp_path, SHARP)["verdict"] == "nccl_config"  # without the end said, the warning stands
    # a critical finding of NCCL's set-up still decides, end said or not
    shm = "h:1:2 [0] NCCL WARN Error: failed to extend /dev/shm/nccl-Hx3k9a to 9637892 bytes\n"
    j = job(tmp_path, shm + SUCCESS)
    assert j["verdict"] == "nccl_config" and j["decided_by"]["severity"] == "critical"


def test_the_codes_own_error_on_every_rank_is_the_application_even_after_an_end_said(tmp_path):
    ranks = "".join("%d: [rank%d]: IndexError: list index out of range\n" % (r, r) for r in range(4))
    text = "".join("%d: [rank%d]: Traceback (most recent call last):\n%d: [rank%d]:   File \"run.py\", line 9, in "
                   "<module>\n" % (r, r, r, r) for r in range(4)) + ranks
    j = job(tmp_path, text)
    assert j["verdict"] == "application" and "IndexError" in j["decided_by"]["message"]
    assert job(tmp_path, SUCCESS + text)["verdict"] == "application"  # an evaluation after training failed
    # RuntimeError is CUDA's and NCCL's too: not by itself the code's
    assert job(tmp_path, text.replace("IndexError", "RuntimeError"))["verdict"] != "application"


def test_a_deprecated_environment_variable_is_no_configuration_fault(tmp_path):
    line = (" 48: [W929 17:59:44.006593710 Utils.hpp:135] Warning: Environment variable NCCL_ASYNC_ERROR_HANDLING is "
            "deprecated; use TORCH_NCCL_ASYNC_ERROR_HANDLING instead (function operator())\n")
    j = job(tmp_path, line + SUCCESS)
    assert j["verdict"] == "healthy" and not [f for f in j["findings"] if f["category"] == "nccl_config"]


# ProcessGroupNCCL's destructor at exit: torch 2.5.1's words (its libtorch_cuda.so) and 2.8+'s
EXIT_25 = ("[rank{r}]:[W530 08:34:35.154236112 ProcessGroupNCCL.cpp:1250] Warning: WARNING: process group has NOT been "
           "destroyed before we destruct ProcessGroupNCCL. On normal program exit, the application should call "
           "destroy_process_group to ensure that any pending NCCL operations have finished in this process. "
           "(function operator())\n")
EXIT_213 = ("[rank{r}]:[W1202 07:10:01.000000000 ProcessGroupNCCL.cpp:1553] WARNING: destroy_process_group() was not "
            "called before program exit, which can leak resources. For more info, please see "
            "https://pytorch.org/docs/stable/distributed.html#shutdown\n")
STEPS = "".join("[rank0]: step %d/1000 loss %.2f\n" % (i, 3.0 - i / 100.0) for i in range(1, 40))


@pytest.mark.parametrize("exit_line", [EXIT_25, EXIT_213])
def test_a_process_that_reached_its_exit_with_no_error_ended_its_run(tmp_path, exit_line):
    ends = "".join(exit_line.format(r=r) for r in range(2))
    j = job(tmp_path, STEPS + ends)
    assert j["verdict"] == "healthy" and j["confidence_reason"].startswith("its processes reached their exit")
    # without the exit, a log of progress that stops says nothing of how it ended
    assert job(tmp_path, STEPS)["verdict"] == "unknown"
    # the exit after an uncaught exception: the exception is the failure
    tb = ("[rank1]: Traceback (most recent call last):\n[rank1]:   File \"train.py\", line 9, in <module>\n"
          "[rank1]: IndexError: list index out of range\n")
    assert job(tmp_path, STEPS + tb + ends)["verdict"] == "application"
    # an exit is weaker than a trainer's word that the run ended well: a line nobody explains stands
    odd = "[rank1]: frobnicator failed: the widget is out of sync\n"
    assert job(tmp_path, STEPS + odd + ends)["verdict"] == "unknown"
    assert job(tmp_path, STEPS + odd + ends + SUCCESS)["verdict"] == "healthy"


def _timeout(rank, seq, numel, pg=None):
    head = "[PG %s Rank %d] Process group watchdog thread terminated with exception: " % (pg, rank % 4) if pg else ""
    return ("%d: [rank%d]:[E ProcessGroupNCCL.cpp:563] %s[Rank %d] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=%d, OpType=ALLREDUCE, NumelIn=%d, NumelOut=%d, Timeout(ms)=1800000) ran for 1800000 "
            "milliseconds before timing out.\n" % (rank, rank, head, rank % 4, seq, numel, numel))


def test_the_rank_the_oom_killer_took_is_the_one_the_others_waited_for():
    # slurmstepd's report rides on the stream of the node's first task ('0:' under srun -l, whichever task
    # was killed: x27-18's task 5); srun's own line names the task
    text = ("0: slurmstepd: error: Detected 1 oom_kill event in StepId=130.13. Some of the step tasks have been OOM "
            "Killed.\nsrun: error: gpu-a-01: task 0: Out Of Memory\n" +
            "".join(_timeout(r, 3054761, 8192) for r in (1, 2, 3)) +
            "".join(_timeout(r, 3054764, 67108864) for r in (4, 5, 6, 7)) + _timeout(4, 3119, 2))
    j, findings = parse_job_logs({"job.log": text})
    assert j["culprit_ranks"] == [0]
    # several process groups (rank 4 timed out at two SeqNums): their SeqNums are not one group's
    assert "collective_mismatch" not in {f["kind"] for f in findings}


@pytest.mark.parametrize("pgs,mismatch", [(("0", "0"), True), (("5", "5"), False)])
def test_seqnums_of_a_numbered_group_compare_only_for_the_default_group_when_several_are_named(pgs, mismatch):
    text = (_timeout(0, 7559, 4, pg=pgs[0]) + _timeout(1, 7561, 4, pg=pgs[1]) + _timeout(2, 10, 2, pg="1"))
    j, findings = parse_job_logs({"job.log": text})
    assert ("collective_mismatch" in {f["kind"] for f in findings}) == mismatch


def test_a_save_of_the_model_after_the_last_epoch_began_is_the_runs_end(tmp_path):
    steps = "".join("Epoch %d/2 step %d loss %.3f\n" % (1 + i // 20, i, 2.0 - i / 100.0) for i in range(40))
    save = "***** Evaluating perplexity, Epoch 2/2 *****\nsaving model ...\nsaving model to ./output/final\n"
    j = job(tmp_path, steps + save, name="training.log")
    assert j["verdict"] == "healthy" and "its last epoch (2 of 2)" in j["confidence_reason"]
    # a save in an epoch that is not the last is a checkpoint, not the end
    assert job(tmp_path, steps.replace("/2 ", "/3 ") + save.replace("2/2", "2/3"), name="training.log")["verdict"] \
        == "unknown"
    # an error after the save: no end
    err = "Traceback (most recent call last):\n  File \"t.py\", line 3, in <module>\nOSError: [Errno 28] No space left\n"
    assert job(tmp_path, steps + save + err, name="training.log")["verdict"] != "healthy"
    # no save after the last epoch's count: the log stops in it
    assert job(tmp_path, steps + "***** Evaluating perplexity, Epoch 2/2 *****\n", name="training.log")["verdict"] \
        == "unknown"


def test_mllog_run_stop_naming_its_epoch_is_the_end_and_nvls_unavailable_info_is_no_fabric_fault(tmp_path):
    # transport/nvls.cc INFO: the GPU offers no multicast (no NVSwitch): NCCL goes on without NVLS
    info = "".join("node05:29725:29835 [%d] NCCL INFO NVLS multicast support is not available on dev %d\n" % (d, d)
                   for d in range(4))
    stop = (':::MLLOG {"namespace": "", "time_ms": 1696271502996, "event_type": "INTERVAL_END", "key": "run_stop", '
            '"value": null, "metadata": {"file": "fit.py", "lineno": 1050, "status": "success", "epoch": 34}}\n')
    j = job(tmp_path, info + stop, name="slurm.out")
    assert j["verdict"] == "healthy" and not [f for f in j["findings"] if f["kind"] == "nccl_fabric_manager"]
    # NCCL's WARN that it could not bind NVLS memory is still the fabric's
    warn = ("node05:29725:29835 [0] transport/nvls.cc:376 NCCL WARN Failed to bind NVLink SHARP (NVLS) Multicast "
            "memory of size 1048576 : CUDA error 801 'operation not supported'.\n")
    assert job(tmp_path, warn, name="slurm.out")["verdict"] != "healthy"


# Slurm's time limit ended the first attempts of a requeued run; the last one resumed and ended well
LIMIT = ("slurmstepd: error: *** STEP 454600.0 ON nid006459 CANCELLED AT 2025-05-21T11:33:42 ***\n"
         "slurmstepd: error: *** JOB 454600 ON nid006459 CANCELLED AT 2025-05-21T11:34:48 DUE TO TIME LIMIT ***\n")
RESUMED = ("2025-05-21 11:53:30,753 - root - INFO - Recovered model state from /scratch/state-454600.json\n"
           "2025-05-21 11:53:56,307 - root - INFO - Step: 1000 | Loss: 4.74 | Tokens per second: 7571.65\n")
END = "2025-05-21 11:53:56,307 - root - INFO - Training completed\n"


def test_warnings_the_run_went_on_from_do_not_outweigh_its_end_said_later(tmp_path):
    assert job(tmp_path, LIMIT + RESUMED + END, "slurm-454600.err")["verdict"] == "healthy"
    # the same warning after the end said, or without an end: it stands
    assert job(tmp_path, RESUMED + END + LIMIT, "slurm-454600.err")["verdict"] != "healthy"
    assert job(tmp_path, LIMIT + RESUMED, "slurm-454600.err")["verdict"] != "healthy"


def test_a_warning_in_another_ranks_file_is_not_one_the_run_went_on_from(tmp_path):
    (tmp_path / "rank-1.log").write_text(LIMIT)
    assert job(tmp_path, RESUMED + END, "rank-0.log")["verdict"] != "healthy"
