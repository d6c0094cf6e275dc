"""Megatron-LM's vocabulary (vocab/megatron.py, from the megatron-core sdist and the matching tag of
NVIDIA/Megatron-LM) in the job reader: the rerun state machine's attribution of a rejected result,
NaN in a loss or a gradient norm, configuration assertions, checkpoints, as a Megatron / NeMo
training log prints them (Python's logging 'LEVEL:module:message', print_rank_0's bare lines)."""

from gpu_runbook import vocab
from gpu_runbook.joblog import parse_job_logs
from gpu_runbook.joblog.emitter_lines import JOB_TABLES, emitter_markers
from gpu_runbook.vocab import megatron

RSM = "%s:megatron.core.rerun_state_machine:%s\n"
ITER = (" [2024-06-20 10:%02d:00] iteration %8d/     100 | consumed samples:        %5d | elapsed time per iteration "
        "(ms): 494.1 | learning rate: 2.992734E-04 | global batch size:   128 | lm loss: 7.994669E+00 | loss scale: 1.0 "
        "| grad norm: 1.607 | number of skipped iterations:   0 | number of nan iterations:   0 |\n")
HEALTHY = (
    "> initializing torch distributed ...\n"
    "> initialized tensor model parallel with size 8\n"
    "> initialized pipeline model parallel with size 1\n"
    + RSM % ("WARNING", "RerunStateMachine initialized in mode RerunMode.VALIDATE_RESULTS")
    + "[after megatron is initialized] datetime: 2024-06-20 10:00:05 \n"
    "WARNING: could not find the metadata file /ckpt/latest_checkpointed_iteration.txt\n"
    "    will not load any checkpoints and will start from random\n"
    "[after model, optimizer, and learning rate scheduler are built] datetime: 2024-06-20 10:00:09 \n"
    "[after dataloaders are built] datetime: 2024-06-20 10:00:10 \n"
    "done with setup ...\n"
    "training ...\n"
    "[before the start of training step] datetime: 2024-06-20 10:00:11 \n"
    + RSM % ("WARNING", "Result validation enabled")
    + "".join(ITER % (i, i * 10, i * 1280) for i in range(1, 10))
    + "WARNING:megatron.core.utils:fused_indices_to_multihot has reached end of life. Please migrate to a "
    "non-experimental function.\n"
)
DONE = "[after training is done] datetime: 2024-06-20 10:10:00 \n"


def findings(text):
    _facts, found = parse_job_logs({"train.log": text})
    return [(f["kind"], f["category"], f["severity"]) for f in found if f["kind"] != "job_end_unknown"]


def serious(text):
    return [k for k in findings(text) if k[2] in ("warning", "critical") or k[0] == "unexplained_errors"]


def test_the_table_is_registered_with_its_pin_and_provenance():
    assert "megatron" in vocab.EMITTERS and "megatron" in JOB_TABLES
    assert megatron.VERSION == "0.16.1" and len(megatron.COMMIT) == 40
    assert megatron.ORIGIN.startswith("https://pypi.org/project/megatron-core/0.16.1/")
    files = set(r[0].split("@")[0] for r in megatron.ROWS)
    assert "megatron/core/rerun_state_machine.py" in files and "megatron/training/arguments.py" in files
    older = set(r[0].rsplit("@", 1)[1] for r in megatron.ROWS if "@" in r[0])
    assert older == {"0.12.3", "0.9.0", "0.6.0"}


def test_a_result_the_same_gpu_does_not_reproduce_is_that_gpus_transient_fault():
    # rerun_state_machine.py validate_result: rerun in place (same GPU), comparison > tolerance
    lines = (RSM % ("ERROR", "Unexpected result tensor(nan, device='cuda:3') on rank 3 at iteration #1200 invocation #1 "
                    "(message='found NaN in local grad norm for bucket #0 in backward pass before data-parallel "
                    "communication collective')")
             + RSM % ("WARNING", "Need to rerun step to check reproducibility of initial result")
             + RSM % ("ERROR", "Rank 3, node gpu-node-07, device 3, iteration #1200: First rerun: unexpected result is "
                      "not reproducible within the tolerance (tensor(2.5312, device='cuda:3') != tensor(nan, "
                      "device='cuda:3'))!")
             + RSM % ("ERROR", "Rank 3, node gpu-node-07, device 3, iteration #1200: Possible transient error!!"))
    got = findings(HEALTHY + lines)
    assert ("logged_gpu_error", "gpu_hardware", "warning") in got
    # the rejected result alone is numerics the line does not attribute
    assert findings(HEALTHY + lines.split("\n", 1)[0] + "\n") == [("logged_error", "unknown", "warning")]


def test_another_gpu_decides_between_a_persistent_fault_and_the_application():
    persistent = RSM % ("ERROR", "Rank 5, node gpu-node-11, device 5, iteration #1200: Possible persistent error!!")
    assert ("logged_gpu_error", "gpu_hardware", "warning") in findings(persistent)
    correct = (RSM % ("WARNING", "Second rerun: unexpected result is reproducible on a different GPU, therefore it was "
                      "likely correct (tensor(nan, device='cuda:5') = tensor(nan, device='cuda:3'))")
               + RSM % ("ERROR", "Rank 5, node gpu-node-11, device 5, iteration #1200: Correct result (but possible "
                        "Application error) (found NaN in local forward loss calculation)!"))
    got = findings(correct)
    assert ("logged_application_error", "application", "warning") in got
    assert not [k for k in got if k[1] == "gpu_hardware"]
    # 0.12's wording, without the iteration
    old = RSM % ("ERROR", "Rank 3, node n7, device 3: Possible transient error!!")
    assert ("logged_gpu_error", "gpu_hardware", "warning") in findings(old)


def test_nan_in_the_loss_or_grad_norm_is_unknown_numerics():
    # result validation disabled: validate_result raises (0.12+); 0.6-0.9 asserted
    for line in ("RuntimeError: Rank 3, node gpu-node-07, device 3, iteration 1200: Unexpected result nan "
                 "(message='found NaN in local forward loss calculation')",
                 "AssertionError: Rank 5: found NaN in local grad norm in backward pass before data-parallel "
                 "communication collective. Device: 5, node: gpu-node-02",
                 "AssertionError: Rank 0: found NaN in local forward loss calculation. Device: 0, node: dgx-01"):
        tbl, row = vocab.match_line(line, ("megatron",))
        assert (row["kind"], row["category"], row["severity"]) == ("logged_error", "unknown", "warning"), line
        assert ("logged_error", "unknown", "warning") in findings(line + "\n")


def test_a_configuration_assertion_is_the_application_and_stops_the_run():
    line = ("AssertionError: global batch size (100) is not divisible by micro batch size (4) times data parallel "
            "size (8)\n")
    assert ("logged_application_error", "application", "critical") in findings(line)
    line = ("AssertionError: world size (12) is not divisible by tensor model parallel size (8)\n")  # 0.6's wording
    assert ("logged_application_error", "application", "critical") in findings(line)
    # an assert whose words hold 'nan' but is a configuration check
    row = vocab.match_line("AssertionError: --no-check-for-nan-in-loss-and-grad should be set with full_iteration "
                           "CUDA graph", ("megatron",))[1]
    assert row["category"] == "application"


def test_checkpoints_a_missing_one_to_exit_on_is_the_runs_a_failed_load_is_unknown():
    assert ("logged_application_error", "application", "critical") in findings(
        ">> '--exit-on-missing-checkpoint' set ... exiting. <<\n")
    line = ("Unable to load optimizer from checkpoint /ckpt/iter_0001000. Specify --no-load-optim or --finetune to "
            "prevent attempting to load the optimizer state, exiting ...\n")
    assert ("logged_error", "unknown", "warning") in findings(line)
    line = ("megatron.core.dist_checkpointing.core.CheckpointingException: Missing shards after fully parallel "
            "loading: [('decoder.layers.self_attention.linear_qkv.weight', (0, 0))]\n")
    assert ("logged_error", "unknown", "warning") in findings(line)


def test_a_healthy_progress_log_stays_healthy():
    assert serious(HEALTHY + DONE) == []
    _facts, found = parse_job_logs({"train.log": HEALTHY + DONE})
    assert not [f for f in found if f["kind"] == "job_end_unknown"]
    # the straggler detector's report names the slowest and fastest ranks every interval: statistics
    report = ("[2024-06-20 10:05:00] | MnRtt/Rnk: 3710.49ms/7 | MxRtt/Rnk: 3718.16ms/0 | MnPwr/Rnk: 601000.00W/4 | "
              "MxPwr/Rnk: 693000.00W/2 | MnTmp/Rnk: 52.00C/1 | MxTmp/Rnk: 65.00C/6 | MnUtl/Rnk: 97.00%/0 | "
              "MxUtl/Rnk: 100.00%/3 | MnClk/Rnk: 1980.00MHz/0 | MxClk/Rnk: 1980.00MHz/0 | MnDRtt/Rnk: 14.27ms/3 | "
              "MxDRtt/Rnk: 18.44ms/5 | MnEtpt/Rnk: 395.04TF/0 | MxEtpt/Rnk: 395.85TF/7\n")
    assert vocab.match_line(report.strip(), ("megatron",))[1]["kind"] == "benign"
    assert serious(HEALTHY + report + DONE) == []


def test_the_markers_are_megatrons_own_words():
    marks = vocab.markers(("megatron",))
    assert set(marks) <= set(emitter_markers())
    for line in (ITER % (1, 10, 1280),
                 " [2026-12-02 14:20:11] iteration     1211/ 500000 | consumed samples:      1240064 | elapsed time per "
                 "iteration (ms): 494.1 | learning rate: 2.992734E-04 | global batch size:  1024 | lm loss: 2.994669E+00 "
                 "| loss scale: 1.0 | grad norm: 0.607 | number of skipped iterations:   0 | number of nan iterations:   0 |",
                 " iteration      500/    2000 | consumed samples: 64000 | lm loss: 6.1E+00 | load_balancing_loss: "
                 "1.0023E+00 | loss scale: 65536.0 | grad norm: 0.412 | number of nan iterations:   0 |",
                 "{'loss': 2.31, 'grad_norm': 0.8, 'learning_rate': 1e-05, 'epoch': 0.5}",
                 '  "hidden_size": 4096,', '  "num_attention_heads": 32,', '  "num_hidden_layers": 32,',
                 "Epoch 3: 100%|##########| 500/500 [01:00<00:00, loss=2.31, v_num=0]",
                 "[rank0]:[W1202 14:20:11 ProcessGroupNCCL.cpp:1250] Warning: WARNING: process group has NOT been "
                 "destroyed before we destruct ProcessGroupNCCL.",
                 "step 1200 | loss 2.31 | lr 3.0e-04 | tokens/s 91234 | mfu 41.2%"):
        assert not any(m in line for m in marks), (line, [m for m in marks if m in line])
