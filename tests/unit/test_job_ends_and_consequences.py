"""What a job's log says of its end and of what followed its first failure: wandb's and
nccl-tests' own end lines, NCCL INFO lines of failures NCCL handled, ncclRemoteError's two
causes, a watchdog's process group named on its next line, slurmstepd's lines (its OOM report's
srun label, its node in its own name) and a watchdog stuck after a rank died."""

import json

import pytest

from gpu_runbook.cli import main
from gpu_runbook.joblog import parse_job_logs
from gpu_runbook.vocab import match_line


def job(tmp_path, capsys, text, name="train.log"):
    """The job section of `analyze` over a fresh directory holding ``text`` as ``name``."""
    where = tmp_path / ("run%d" % len(list(tmp_path.iterdir())))
    where.mkdir()
    (where / name).write_text(text)
    main(["analyze", str(where), "--format", "json", "--tz", "UTC"])
    out, _err = capsys.readouterr()
    return json.loads(out)["job"]


RUN = "".join("step %d loss %.3f\n" % (i, 3.0 - i / 100.0) for i in range(1, 101))
NOISE = "Failed to download font: IBM Plex Sans, skipping!\n"


@pytest.mark.parametrize("end,verdict", [
    ("wandb: Waiting for W&B process to finish... (success).\n", "healthy"),
    ("wandb: Program ended successfully.\n", "healthy"),  # wandb before 0.10
    ("wandb: Waiting for W&B process to finish... (failed 1). Press Control-C to abort syncing.\n", "unknown"),
    ("", "unknown"),
])
def test_wandb_says_the_exit_code_of_the_run(tmp_path, capsys, end, verdict):
    j = job(tmp_path, capsys, NOISE + RUN + end)
    assert j["verdict"] == verdict
    assert bool(j["success"]) == (verdict == "healthy")


def nccl_tests(hosts=("nid001", "nid002"), end=True):
    head = "# nThread 1 nGpus 1 minBytes 8 maxBytes 128 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1\n#\n"
    head += "# Using devices\n" + "".join(
        "#  Rank %2d Group  0 Pid %6d on %10s device  0 [0x03] NVIDIA A100-SXM4-40GB\n" % (r, 1000 + r, h)
        for r, h in enumerate(hosts))
    rows = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
    rows += "".join("%12d %12d     float     sum      -1    19.16    0.00    0.00      0    18.94    0.00    0.00      0\n"
                    % (s, s // 4) for s in (8, 16, 32, 64, 128))
    warn = "libfabric:1680522:1726870657::core:core:ofi_hmem_init():339<warn> Failed to initialize hmem iface FI_HMEM_ZE\n"
    info = "nid001:1:2 [0] NCCL INFO TUNER/Plugin: Failed to find ncclTunerPlugin_v2, using internal tuner instead.\n"
    tail = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.0012\n#\n" if end else ""
    return warn + info + head + rows + tail


def test_nccl_tests_end_summary_is_an_end_said_though_lines_nobody_explains_precede_it(tmp_path, capsys):
    j = job(tmp_path, capsys, nccl_tests())
    assert j["verdict"] == "healthy" and j["success"][0]["who"].startswith("nccl-tests")
    # the NCCL INFO line is a failure NCCL handled (info); libfabric's warn line is still quoted
    unexplained = [f for f in j["findings"] if f["kind"] == "unexplained_errors"]
    assert len(unexplained) == 1 and "libfabric" in unexplained[0]["message"] and "TUNER" not in unexplained[0]["message"]
    assert job(tmp_path, capsys, nccl_tests(end=False))["verdict"] != "healthy"


def test_nccl_tests_whose_ranks_each_host_lists_again_said_nothing_of_the_job(tmp_path, capsys):
    # (its summary is in another file, read before the device list: the end is judged after every line)
    (tmp_path / "a-tail.txt").write_text("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.0012\n")
    text = nccl_tests(hosts=("testgpu1",), end=False) + nccl_tests(hosts=("testgpu2",), end=False)
    j = job(tmp_path, capsys, text, name="b-head.txt")
    assert j["verdict"] == "nccl_config" and not j["success"]


def test_an_nccl_info_line_of_a_handled_failure_in_no_pinned_wording_is_nccls_info():
    tbl, row = match_line("h:1:2 [0] NCCL INFO TUNER/Plugin: Failed to find ncclTunerPlugin_v2, using internal tuner "
                          "instead.")
    assert tbl.emitter == "NCCL" and (row["severity"], row["category"]) == ("info", "unknown")
    assert match_line("h:1:2 [0] NCCL INFO transport/net.cc:123 -> 2") is None  # the error trail: its own reader
    assert match_line("h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC") is None


def test_ncclremoteerror_names_two_causes_and_establishes_neither():
    _job, found = parse_job_logs({"w.log": "2024-01-11 05:43:11.726330: E nccl_utils.cc:219] INTERNAL: NCCL operation "
                                           "async_err failed: remote process exited or there was a network error\n"})
    (f,) = [f for f in found if f["kind"] == "nccl_error"]
    assert f["category"] == "unknown"


OOM_THEN_STUCK = (
    "5: /workspace/run.sh: line 68: 1759457 Killed                  python train.py\n"
    "0: slurmstepd: error: Detected 1 oom_kill event in StepId=4.46. Some of the step tasks have been OOM Killed.\n"
    "srun: error: ml-node-001: task 5: Out Of Memory\n"
    "1: [rank1]:[F ProcessGroupNCCL.cpp:1169] [PG 5 Rank 1] [PG 5 Rank 1] ProcessGroupNCCL's watchdog got stuck for "
    "600 seconds without making progress in monitoring enqueued collectives.\n"
    "3: [rank3]:[E ProcessGroupNCCL.cpp:563] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3053634, "
    "OpType=ALLREDUCE, NumelIn=67108864, NumelOut=67108864, Timeout(ms)=1800000) ran for 1800015 milliseconds before timing out.\n"
    "3: [rank3]:[E ProcessGroupNCCL.cpp:1537] [PG 5 Rank 3] Timeout at NCCL work: 3053634, last enqueued NCCL work: "
    "3053753, last completed NCCL work: 3053633.\n"
    "0: [rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3117, "
    "OpType=ALLREDUCE, NumelIn=2, NumelOut=2, Timeout(ms)=1800000) ran for 1800043 milliseconds before timing out.\n"
    "0: [rank0]:[E ProcessGroupNCCL.cpp:1537] [PG 1 Rank 0] Timeout at NCCL work: 3117, last enqueued NCCL work: 3117, "
    "last completed NCCL work: 3116.\n")


def test_a_rank_killed_for_memory_is_the_culprit_and_what_followed_is_its_consequence():
    j, found = parse_job_logs({"slurm-4.log": OOM_THEN_STUCK})
    # slurmstepd's report rode on task 0's stream: srun's line names the task killed
    assert j["culprit_ranks"] == [5] and j["culprit_evidence"] == "rank_died"
    assert [f.get("rank") for f in found if f["kind"] == "host_oom"] == [None, 5]
    # two process groups (PG 1 on rank 0, PG 5 on rank 3, named on the lines after the watchdog's): no mismatch
    assert not [f for f in found if f["kind"] == "collective_mismatch"]
    (stuck,) = [f for f in found if f["kind"] == "nccl_watchdog_stuck"]
    assert stuck["severity"] == "info" and "rank(s) 5" in stuck["message"]


def test_a_watchdog_stuck_with_no_rank_dead_is_still_a_call_hung_in_the_driver():
    text = "\n".join(l for l in OOM_THEN_STUCK.split("\n") if "Killed" not in l and "Out Of Memory" not in l
                     and "oom_kill" not in l)
    _j, found = parse_job_logs({"slurm-4.log": text})
    (stuck,) = [f for f in found if f["kind"] == "nccl_watchdog_stuck"]
    assert stuck["severity"] == "critical" and stuck["category"] == "driver"


def test_slurmstepds_own_name_names_its_node(tmp_path, capsys):
    j = job(tmp_path, capsys, "slurmstepd-gypsum-gpu182: error: NVML: Failed to get usage(15): GPU is lost\n",
            name="srun.err")
    assert j["verdict"] == "gpu_hardware" and "gypsum-gpu182" in j["culprit_hosts"]


def test_gloo_refused_at_a_loopback_address_is_the_set_up(tmp_path, capsys):
    text = ("terminate called after throwing an instance of 'gloo::IoException'\n"
            "  what():  [/opt/conda/work/third_party/gloo/gloo/transport/tcp/pair.cc:724] connect [127.0.1.1]:3210: "
            "Connection refused\nAborted (core dumped)\n")
    j = job(tmp_path, capsys, text, name="job.err")
    assert j["verdict"] == "nccl_config"
    (f,) = [f for f in j["findings"] if f["category"] == "nccl_config"]
    assert "GLOO_SOCKET_IFNAME" in f["message"] and "127.0.1.1" in f["evidence"]
    # the same refusal at a routable address says nothing of the set-up
    j = job(tmp_path, capsys, text.replace("127.0.1.1", "10.0.0.12"), name="job.err")
    assert not j or j["verdict"] != "nccl_config"


def test_an_early_failure_that_is_an_nccl_result_is_not_inferred_to_be_the_codes(tmp_path, capsys):
    text = ("Epoch 1/1: 100%|##########| 10/10 [00:10<00:00, 1.00it/s]\n"
            "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote process exited or "
            "there was a network error, NCCL version 2.21.5\n")
    j = job(tmp_path, capsys, text)
    assert j["verdict"] == "unknown"


def _bar(n, total, label=""):
    return "%s%3d%%|%s| %d/%d [00:%02d<00:00,  7.81it/s]\n" % (label, n * 100 // total, "#" * (n * 10 // total),
                                                           n, total, n % 60)


SAVE = "[2024-03-09 10:38:21][INFO][trainer:667] - Saving model to: /runs/shakespeare/model.pth\n"


def test_one_bar_at_its_total_then_a_save_ended_the_runs_work_but_a_bar_per_epoch_does_not(tmp_path, capsys):
    # held-out x41-22 (a 2-node DDP run on Polaris): one bar over the whole run, its end, the model saved
    steps = "".join(_bar(i, 100) + "step=%d loss=%.4f\n" % (i, 3.0 - i / 100.0) for i in range(5, 101, 5))
    j = job(tmp_path, capsys, steps + SAVE)
    assert (j["verdict"], j["confidence"]) == ("healthy", "medium")
    assert j["success"][0]["who"] == "its one progress bar at its total, then a save of the model"
    # the same bar cut before its total, or no save after it: not an end
    assert job(tmp_path, capsys, steps.replace(_bar(100, 100), _bar(99, 100)) + SAVE)["verdict"] == "unknown"
    assert job(tmp_path, capsys, steps)["verdict"] == "unknown"
    # a bar per epoch reaches its total at every epoch's end: a save after one says nothing of the run's end
    epochs = "".join(_bar(i, 50, "Epoch %d: " % e) + "loss %.3f\n" % (3.0 - e / 10.0)
                     for e in range(3) for i in range(10, 51, 10))
    assert job(tmp_path, capsys, epochs + SAVE)["verdict"] == "unknown"
