"""DeepSpeed's vocabulary (vocab/deepspeed.py, from its sdist) in the job reader: its launcher's
exit line, its advisory warnings and its own checks, as a training log prints them."""

from gpu_runbook import vocab
from gpu_runbook.joblog import parse_job_logs
from gpu_runbook.vocab import deepspeed

HEAD = "[2024-06-20 10:05:00,000] [%s] [%s] "


def kinds(text):
    _facts, findings = parse_job_logs({"train.log": text})
    return [(f["kind"], f["category"], f["severity"]) for f in findings if f["kind"] != "job_end_unknown"]


def test_the_table_carries_its_provenance_and_older_wordings():
    assert deepspeed.VERSION == "0.19.8" and deepspeed.ORIGIN.startswith("https://pypi.org/project/deepspeed/")
    older = [r for r in deepspeed.ROWS if "@" in r[0]]
    assert older and all(r[0].rsplit("@", 1)[1] in ("0.16.9", "0.14.5", "0.12.6", "0.10.3", "0.9.5", "0.8.3", "0.7.7")
                         for r in older)
    # DeepSpeed 0.7-0.9's comm layer (comm.py init_deepspeed_backend, logger.warn): advice, as a GPT-NeoX log
    # of 2023 prints it, its time cut off by the reporter (EleutherAI/gpt-neox#990)
    row = vocab.match_line("[WARNING] [comm.py:152:init_deepspeed_backend] NCCL backend in DeepSpeed not yet "
                           "implemented", ("deepspeed",))[1]
    assert (row["kind"], row["file"]) == ("benign", "deepspeed/comm/comm.py@0.9.5")
    # ZeRO's rank check as 0.10-0.16 worded it (a log of an older install) and as 0.19 does
    assert vocab.match_line("RuntimeError: disagreement between rank0 and rank6: rank0: [1, 2], rank6: [1, 3]",
                            ("deepspeed",))[1]["category"] == "application"
    assert vocab.match_line("Detected a disagreement on list length between rank0 and rank3:",
                            ("deepspeed",))[1]["category"] == "application"


def test_the_launchers_exit_line_is_explained_not_quoted_as_unknown_text():
    line = HEAD % ("ERROR", "launch.py:321:sigkill_handler") + \
        "['/usr/bin/python', '-u', 'train.py', '--local_rank=7'] exits with return code = 1\n"
    assert ("logged_error", "unknown", "warning") in kinds(line)
    assert not [k for k in kinds(line) if k[0] == "unexplained_errors"]


def test_zero3s_memory_pressure_warning_is_advice_not_a_fault():
    line = HEAD % ("WARNING", "stage3.py:2069:step") + (
        "4 pytorch allocator cache flushes since last step. this happens when there is high memory pressure "
        "and is detrimental to performance. if this is happening frequently consider adjusting settings to "
        "reduce memory consumption. If you are unable to make the cache flushes go away consider adding "
        "get_accelerator().empty_cache() calls in your training loop to ensure that all ranks flush their "
        "caches at the same time\n")
    assert [k for k in kinds(line) if k[2] in ("warning", "critical") or k[0] == "unexplained_errors"] == []


def test_a_failed_save_is_no_checkpoint_save_and_is_read_as_the_error_it_is():
    line = HEAD % ("ERROR", "engine.py:3400:save_checkpoint") + \
        "Failed saving model checkpoint to /ckpt with tag global_step500\n"
    _facts, findings = parse_job_logs({"train.log": line})
    # (read as a save, the line changed the job's state and no vocabulary read it)
    assert ("logged_error", "unknown", "warning") in [(f["kind"], f["category"], f["severity"]) for f in findings]


def test_the_loss_scale_at_its_minimum_ends_the_run_and_is_the_codes():
    # loss_scaler.py raises it when fp16 scaling cannot go lower: the training diverged, the run exits
    line = ("[2024-06-20 10:00:00,000] [INFO] [loss_scaler.py:183:update_scale] Current loss scale already at "
            "minimum - cannot decrease scale anymore. Exiting run.")
    tbl, row = vocab.match_line(line)
    assert tbl.name == "deepspeed" and (row["category"], row["severity"]) == ("application", "critical")


def test_megatrons_iteration_line_holds_no_emitters_marker():
    # every iteration line of a Megatron / NeMo run prints 'loss scale: 1.0': a marker there made every
    # such line go through the whole reader (a 10 MB log 0.27 s -> 7 s)
    from gpu_runbook.joblog.emitter_lines import emitter_markers
    line = (" [2026-12-02 14:20:11] iteration     1211/ 500000 | consumed samples:      1240064 | elapsed time per "
            "iteration (ms): 494.1 | learning rate: 2.992734E-04 | global batch size:  1024 | lm loss: 2.994669E+00 "
            "| loss scale: 1.0 | grad norm: 0.607 | number of skipped iterations:   0 | number of nan iterations:   0 |")
    assert [m for m in emitter_markers() if m in line] == []
