"""Issue 24: every text is read by its content, never by its file's name. The six pastes the
issue names, each under several names where the name used to decide: the same lines give the
same findings, verdict and confidence, and nothing is silently healthy."""

import io
import json
import os

import pytest

from gpu_runbook.cli import main

XID79 = "[Tue Dec  2 07:09:51 2026] NVRM: Xid (PCI:0000:75:00): 79, pid=2414, name=python, GPU has fallen off the bus.\n"
# NVIDIA's own lines after a crash dump (open-gpu-kernel-modules, kernel-open/nvidia/nv.c): they name
# the bug-report script inside a kernel line, and are no bug report
CRASH_DUMP = ("[Tue Dec  2 07:09:51 2026] NVRM: GPU 0000:75:00.0: GPU has fallen off the bus.\n"
              "[Tue Dec  2 07:09:51 2026] NVRM: A GPU crash dump has been created. If possible, please run\n"
              "[Tue Dec  2 07:09:51 2026] NVRM: nvidia-bug-report.sh as root to collect this data before\n"
              "[Tue Dec  2 07:09:51 2026] NVRM: the NVIDIA kernel module is unloaded.\n")
NAMES = ("kern.log", "dmesg.txt", "journalctl.txt", "paste.txt", "output", "bug.log")


def run(capsys, *args, stdin=None, monkeypatch=None):
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    rc = main(["analyze"] + list(args))
    out, err = capsys.readouterr()
    return rc, out, err


def analyze_json(capsys, path):
    rc, out, err = run(capsys, str(path), "--format", "json", "--tz", "UTC")
    return rc, json.loads(out) if out.strip() else None, err


def _host_summary(doc):
    (h,) = doc["hosts"]
    return (h["verdict"], h["severity"], h["confidence"], tuple(sorted((f["kind"], f.get("xid")) for f in h["findings"])))


@pytest.mark.parametrize("name", NAMES)
def test_a_dmesg_ending_in_the_crash_dump_lines_is_no_bug_report(tmp_path, capsys, name):
    (tmp_path / name).write_text(XID79 + CRASH_DUMP)
    rc, doc, err = analyze_json(capsys, tmp_path)
    assert rc == 2, err
    (h,) = doc["hosts"]
    assert h["verdict"] == "gpu_hardware" and h["confidence"] == "high"
    assert 79 in [f.get("xid") for f in h["findings"]]
    assert all(f["source"].startswith(name + ":") for f in h["findings"] if f.get("xid"))
    assert "no usable evidence" not in err


def test_the_same_xid_lines_give_the_same_result_under_any_name(tmp_path, capsys):
    seen = {}
    for name in NAMES:
        d = tmp_path / name.replace(".", "_")
        d.mkdir()
        (d / name).write_text(XID79)
        rc, doc, _ = analyze_json(capsys, d)
        seen[name] = (rc, _host_summary(doc))
    assert len(set(seen.values())) == 1, seen
    rc, (verdict, severity, confidence, _kinds) = seen["kern.log"]
    assert (rc, verdict, severity, confidence) == (2, "gpu_hardware", "critical", "high")


SLURM_NODE_FAILURE = ("srun: error: Node failure on gpu-b-12\n"
                      "slurmstepd: error: *** STEP 77.0 ON gpu-b-11 CANCELLED AT 2026-12-02T07:10:00 DUE TO NODE "
                      "FAILURE ***\n"
                      "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n")


@pytest.mark.parametrize("name", ("slurm-77.out", "job.log", "notes.txt"))
def test_slurm_node_failure_is_not_healthy(tmp_path, capsys, name):
    (tmp_path / name).write_text(SLURM_NODE_FAILURE)
    rc, doc, _ = analyze_json(capsys, tmp_path)
    job = doc["job"]
    assert rc == 2 and job["verdict"] not in ("healthy", None)
    kinds = [f["kind"] for f in job["findings"]]
    assert "logged_node_failure" in kinds
    assert "gpu-b-12" in job["culprit_hosts"]
    assert job["decided_by"]["kind"] == "logged_node_failure"


TORCHRUN_CUDA = ("Traceback (most recent call last):\n"
                 '  File "/home/u/train.py", line 88, in <module>\n'
                 "    loss.backward()\n"
                 "RuntimeError: CUDA error: unknown error\n"
                 "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
                 "below might be incorrect.\n"
                 "For debugging consider passing CUDA_LAUNCH_BLOCKING=1.\n")


@pytest.mark.parametrize("name", ("job.log", "train_output.txt", "slurm-9.out"))
def test_a_torchrun_traceback_with_a_cuda_error_is_read_under_any_name(tmp_path, capsys, name):
    (tmp_path / name).write_text(TORCHRUN_CUDA)
    rc, doc, err = analyze_json(capsys, tmp_path)
    job = doc["job"]
    assert job is not None and rc == 1, err
    assert "cuda_unknown_error" in [f["kind"] for f in job["findings"]]
    assert job["verdict"] == "unknown"
    rc, out, _ = run(capsys, str(tmp_path), "--tz", "UTC")
    assert "unknown error" in out  # the finding that says what it is reaches the text


def test_a_lone_cuda_error_with_no_waiting_rank_is_no_nccl_hang(tmp_path, capsys):
    (tmp_path / "slurm-5.out").write_text("[rank3]: RuntimeError: CUDA error: unknown error\n")
    rc, doc, _ = analyze_json(capsys, tmp_path)
    assert doc["job"]["verdict"] != "nccl_deadlock"
    assert doc["job"]["decided_by"]["kind"] == "cuda_unknown_error"
    rc, out, _ = run(capsys, str(tmp_path), "--tz", "UTC")
    assert "why: rank 3 hit CUDA error 'unknown error'" in out


@pytest.mark.parametrize("content", ["", "\n\n  \n", "hello world\nnothing to see here\n", "\x00" * 64])
def test_input_nobody_can_read_is_named_and_exits_3(tmp_path, capsys, content):
    (tmp_path / "mystery.txt").write_text(content)
    rc, out, err = run(capsys, str(tmp_path / "mystery.txt"))
    assert rc == 3
    assert "mystery.txt" in err and out == ""


def test_a_readable_file_beside_an_unreadable_one_is_analysed_and_the_other_named(tmp_path, capsys):
    (tmp_path / "kern.log").write_text(XID79)
    (tmp_path / "readme.txt").write_text("hello\n")
    rc, out, err = run(capsys, str(tmp_path), "--tz", "UTC")
    assert rc == 2 and "readme.txt: nothing in it was recognised" in err


def test_error_lines_nobody_explains_are_quoted_never_healthy(tmp_path, capsys):
    (tmp_path / "train.log").write_text("epoch 1 loss 0.3\nERROR: the frobnicator refused the widget\n"
                                        "ERROR: the frobnicator refused the widget\n")
    rc, doc, _ = analyze_json(capsys, tmp_path)
    found = [f for h in doc["hosts"] for f in h["findings"]] + list((doc["job"] or {}).get("findings") or [])
    (f,) = [f for f in found if f["kind"] == "unexplained_errors"]
    assert "frobnicator refused the widget" in f["message"] and "(x2)" in f["message"]
    assert rc == 1


def test_a_syslog_with_a_nul_run_before_the_xid_keeps_the_xid(tmp_path, capsys):
    (tmp_path / "syslog").write_bytes(
        b"Dec  2 07:00:01 gpu-b-12 kernel: [  100.1] nvidia: loading out-of-tree module taints kernel.\n"
        + b"\x00" * 70000 + b"Dec  2 07:09:51 gpu-b-12 kernel: [  200.2] " + XID79.split("] ", 1)[1].encode())
    rc, doc, _ = analyze_json(capsys, tmp_path)
    (h,) = doc["hosts"]
    assert h["host"] == "gpu-b-12" and h["verdict"] == "gpu_hardware"
    assert 79 in [f.get("xid") for f in h["findings"]]
    assert any(f["kind"] == "capture_truncated" and "64 KiB" in f["message"] for f in h["findings"])


def test_standard_input_is_read(capsys, monkeypatch):
    rc, out, err = run(capsys, "-", "--format", "json", "--tz", "UTC", stdin=XID79 + CRASH_DUMP,
                       monkeypatch=monkeypatch)
    doc = json.loads(out)
    assert rc == 2 and [f.get("xid") for f in doc["hosts"][0]["findings"]].count(79) == 1


def test_a_proc_file_is_refused_not_read(tmp_path, capsys):
    if not os.path.exists("/proc/kmsg"):
        pytest.skip("no /proc/kmsg")
    os.symlink("/proc/kmsg", str(tmp_path / "kern.log"))
    (tmp_path / "dmesg.txt").write_text(XID79)
    rc, doc, _ = analyze_json(capsys, tmp_path)
    (h,) = doc["hosts"]
    notes = [f for f in h["findings"] if f["kind"] == "capture_unreadable"]
    assert notes and "/proc pseudo file" in notes[0]["message"]
    assert 79 in [f.get("xid") for f in h["findings"]]


def test_a_paste_of_three_commands_is_read_as_each(tmp_path, capsys):
    (tmp_path / "paste.txt").write_text(
        "root@gpu07:~# nvidia-smi\n"
        "Unable to determine the device handle for GPU 0000:75:00.0: Unknown Error\n"
        "root@gpu07:~# ibstat mlx5_0\n"
        "CA 'mlx5_0'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tPort 1:\n\t\tState: Down\n"
        "\t\tPhysical state: Disabled\n\t\tRate: 400\n\t\tLink layer: InfiniBand\n"
        "root@gpu07:~# dmesg -T | grep -i xid\n" + XID79)
    rc, doc, _ = analyze_json(capsys, tmp_path)
    (h,) = doc["hosts"]
    assert h["host"] == "gpu07"
    kinds = {f["kind"] for f in h["findings"]}
    assert "xid" in kinds and "gpu_handle_error" in kinds
    assert any(k.startswith("ib_port") for k in kinds), kinds
    (files,) = doc["files"]
    assert set(files["read_as"]) == {"nvidia-smi", "ibstat", "kernel log"}


def test_a_bug_report_is_known_by_its_header(tmp_path, capsys):
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    src = os.path.join(here, "fixtures", "bugreport", "synthetic-2025-h100-ib", "nvidia-bug-report.log")
    (tmp_path / "attachment.txt").write_bytes(open(src, "rb").read())
    rc, doc, _ = analyze_json(capsys, tmp_path)
    assert doc["files"][0]["read_as"] == ["nvidia-bug-report"]
    assert any(f.get("xid") == 79 for h in doc["hosts"] for f in h["findings"])


# A training log with no NCCL line: progress and loss lines, then what its trainer prints when the
# run ends as it was told to (each marker from its program's source: joblog/emitter_lines.SUCCESS)
TRAIN_LINES = "".join("epoch 1 | step %d | loss %.3f\n" % (s, 3.0 - s / 100.0) for s in range(1, 40))
RUN_ENDS = {
    "megatron-done": "[after training is done] datetime: 2026-12-02 07:10:00\n",
    "megatron-exit-interval": "[exiting program at iteration 6000] datetime: 2026-12-02 07:10:00\n",
    "megatron-exit-duration": "[exiting program after 239.5 minutes] datetime: 2026-12-02 07:10:00\n",
    "fairseq": "2026-12-02 07:10:00 | INFO | fairseq_cli.train | done training in 8123.4 seconds\n",
    "torchtitan": "[rank0]:[titan] 2026-12-02 07:10:00,123 - root - INFO - Training completed\n",
    "hf-trainer-metrics": "{'train_runtime': 5421.3, 'train_samples_per_second': 11.8, 'train_steps_per_second': "
                          "0.37, 'train_loss': 1.92, 'epoch': 3.0}\n",
    "hf-log-metrics": "***** train metrics *****\n  epoch                    =        3.0\n",
    "ultralytics": "\n300 epochs completed in 12.482 hours.\n",
    "llama-recipes-max-steps": "max training steps reached, stopping training, total_train_steps:  6\n",
    "llama-recipes-results": "Key: avg_train_prep, Value: 1.2784380912780762\nKey: avg_train_loss, Value: 0.2456\n",
    # deepspeed/launcher/launch.py, each rank that returned 0
    "deepspeed-launcher": "[2026-12-02 07:10:00,424] [INFO] [launch.py:460:main] Process 10393 exits successfully.\n"
                          "[2026-12-02 07:10:01,426] [INFO] [launch.py:460:main] Process 10388 exits successfully.\n",
}


def test_every_run_end_marker_reaches_the_reader_past_both_prefilters():
    # three lists must agree: the markers (SUCCESS), the quiet prefilter's words, might_read's gate
    from gpu_runbook.joblog.emitter_lines import SUCCESS, might_read
    for end, text in RUN_ENDS.items():
        line = next(part for part in text.splitlines() if part.strip())
        assert any(rx.search(line) for rx, _who in SUCCESS), end
        assert might_read(line), end


@pytest.mark.parametrize("end", sorted(RUN_ENDS))
def test_a_run_that_says_it_ended_is_healthy_and_one_that_stops_unsaid_is_not(tmp_path, capsys, end):
    (tmp_path / "train.log").write_text(TRAIN_LINES + RUN_ENDS[end])
    rc, doc, err = analyze_json(capsys, tmp_path)
    assert rc == 0 and doc["job"]["verdict"] == "healthy", err
    (tmp_path / "train.log").write_text(TRAIN_LINES)
    rc, doc, err = analyze_json(capsys, tmp_path)
    assert doc["job"]["verdict"] == "unknown" and "job_end_unknown" in [f["kind"] for f in doc["job"]["findings"]]


@pytest.mark.parametrize("last", ["step:4740/4740 val_loss:2.9165 train_time:1041071ms step_avg:219.64ms",
                                  " iteration      500/     500 | consumed samples: 512000 | lm loss: 2.1E+00 |",
                                  "0: global_step 1000/1000 loss=1.92"])
def test_a_run_that_counted_its_steps_to_their_total_ended_its_work(tmp_path, capsys, last):
    # its own count says N of N, whatever follows that is not an error (a memory summary):
    # healthy, medium (the exit is not in the log); one step short, or an error after it, is not
    (tmp_path / "train.log").write_text(TRAIN_LINES + last + "\npeak memory allocated: 57397 MiB\n")
    rc, doc, err = analyze_json(capsys, tmp_path)
    assert rc == 0 and doc["job"]["verdict"] == "healthy" and doc["job"]["confidence"] == "medium", err
    assert [s["end"] for s in doc["job"]["success"]] == ["step_count"]
    short = last.replace("4740/4740", "4739/4740").replace("500/     500", "499/     500").replace("1000/1000", "999/1000")
    (tmp_path / "train.log").write_text(TRAIN_LINES + short + "\n")
    assert analyze_json(capsys, tmp_path)[1]["job"]["verdict"] == "unknown"
    (tmp_path / "train.log").write_text(TRAIN_LINES + last + "\nRuntimeError: CUDA error: an illegal memory access\n")
    assert analyze_json(capsys, tmp_path)[1]["job"]["verdict"] != "healthy"


def test_a_step_count_outside_a_training_run_is_no_end(tmp_path, capsys):
    # 'Step 3/3' is also a Docker build's; with no loss line the log is no training run's
    (tmp_path / "build.log").write_text("Step 1/3 : FROM nvcr.io/nvidia/pytorch:24.01-py3\nStep 3/3 : CMD [\"bash\"]\n")
    rc, doc, err = analyze_json(capsys, tmp_path)
    assert not (doc and doc.get("job") and doc["job"].get("verdict") == "healthy"), err


def test_megatrons_sigterm_exit_is_no_end_of_the_run(tmp_path, capsys):
    # training.py prints it when the job was signalled (a cancel, a preemption): the run did not end
    (tmp_path / "train.log").write_text(TRAIN_LINES + "[exiting program after receiving SIGTERM.] datetime: "
                                        "2026-12-02 07:10:00\n")
    rc, doc, err = analyze_json(capsys, tmp_path)
    assert doc["job"]["verdict"] != "healthy", err


SACCT_HEAD = ("JobID           JobName      State ExitCode        NodeList \n"
              "------------ ---------- ---------- -------- --------------- \n")


@pytest.mark.parametrize("code,verdict", [("127:0", "application"), ("126:0", "application"), ("1:0", "unknown")])
def test_a_failed_sacct_row_whose_shell_found_no_command_is_the_jobs(tmp_path, capsys, code, verdict):
    # 126/127 are the shell's own exit codes (POSIX): the job's command line, never a node to drain
    (tmp_path / "sacct.txt").write_text(SACCT_HEAD + "4242            train     FAILED %8s     gpu-a-[01-02] \n"
                                        % code)
    rc, doc, err = analyze_json(capsys, tmp_path)
    assert doc["job"]["verdict"] == verdict, err


def test_sacct_rows_without_their_header_are_read_by_their_fields(tmp_path, capsys):
    # sacct -b -P -n: JobID|State|ExitCode, no header: a job id, a job state and an exit code make a row
    (tmp_path / "out.txt").write_text("$ sacct -b -P -n\n77|COMPLETED|0:0\n77.batch|COMPLETED|0:0\n")
    rc, doc, err = analyze_json(capsys, tmp_path)
    assert rc == 0 and doc["job"]["verdict"] == "healthy", err
    # without an exit code field, or without a state, a '|' line is no sacct row
    for text in ("77|COMPLETED|done\n", "77|finished|0:0\n"):
        (tmp_path / "out.txt").write_text(text)
        rc, doc, err = analyze_json(capsys, tmp_path)
        assert not (doc and doc.get("job") and doc["job"].get("verdict") == "healthy"), (text, err)


QUERY_CMD = "user@gpu-a-07:~$ nvidia-smi --query-gpu=index,pci.bus_id,gpu_recovery_action --format=csv%s\n"
QUERY_ROWS = "".join("%d, 00000000:%02X:00.0, %s\n" % (i, 0x18 + i, "Reset" if i == 1 else "None") for i in range(8))


@pytest.mark.parametrize("header", ("", "index, pci.bus_id, gpu_recovery_action\n"))
def test_a_query_gpu_paste_is_read_by_the_columns_its_command_names(tmp_path, capsys, header):
    # --format=csv,noheader prints no header: the pasted command line names the columns
    (tmp_path / "paste.txt").write_text(QUERY_CMD % ("" if header else ",noheader") + header + QUERY_ROWS)
    rc, doc, err = analyze_json(capsys, tmp_path)
    (h,) = doc["hosts"]
    assert h["host"] == "gpu-a-07" and h["severity"] == "critical", err
    (f,) = [f for f in h["findings"] if f["severity"] == "critical"]
    assert f["kind"] == "gpu_recovery_reset" and f["gpu"]["pci"] == "0000:19:00.0"


def test_a_query_gpu_paste_with_one_field_and_no_header(tmp_path, capsys):
    (tmp_path / "paste.txt").write_text("$ nvidia-smi --query-gpu=gpu_recovery_action --format=csv,noheader\n"
                                        "None\nReboot\n")
    rc, doc, err = analyze_json(capsys, tmp_path)
    (h,) = doc["hosts"]
    assert "gpu_recovery_reboot" in [f["kind"] for f in h["findings"]], err


def test_an_inventory_query_is_no_health_reading_and_a_row_not_read_is_not_healthy(tmp_path, capsys):
    (tmp_path / "paste.txt").write_text("$ nvidia-smi --query-gpu=gpu_name,gpu_bus_id,vbios_version --format=csv\n"
                                        "name, pci.bus_id, vbios_version\n"
                                        "NVIDIA H100 80GB HBM3, 00000000:04:00.0, 96.00.89.00.01\n")
    rc, doc, err = analyze_json(capsys, tmp_path)
    (h,) = doc["hosts"]
    assert h["verdict"] == "unknown" and "nvsmi_no_health_fields" in [f["kind"] for f in h["findings"]]
    rows = QUERY_ROWS.replace("1, 00000000:19:00.0, Reset", "1, 00000000:19:00.0, None, see below")
    (tmp_path / "paste.txt").write_text(QUERY_CMD % ",noheader" + rows)
    rc, doc, err = analyze_json(capsys, tmp_path)
    (h,) = doc["hosts"]
    assert h["verdict"] == "unknown" and "nvsmi_csv_bad_row" in [f["kind"] for f in h["findings"]], err


@pytest.mark.parametrize("raised", ["RuntimeError: CUDA error: device-side assert triggered",
                                    "RuntimeError: CUDA error: an illegal memory access was encountered"])
def test_a_traceback_that_raises_an_emitters_message_is_read_by_its_vocabulary(tmp_path, capsys, raised):
    # the exception line is the traceback's and a CUDA message: neither reader may leave it to the other
    (tmp_path / "train.log").write_text("train Loss: 2.7186 Acc: 0.4082\nTraceback (most recent call last):\n"
                                        '  File "train.py", line 379, in train_model\n'
                                        "    running_loss += loss.item() * now_batch_size\n" + raised + "\n")
    rc, doc, err = analyze_json(capsys, tmp_path)
    assert doc["job"]["verdict"] == "application", err
    assert doc["job"]["decided_by"]["evidence"].endswith(raised.split(": ", 1)[1])


def _watchdog(rank, seq):
    return ("[E ProcessGroupNCCL.cpp:474] [Rank %d] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=%d, "
            "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=120000) ran for 120621 milliseconds before timing "
            "out.\n" % (rank, seq))


def test_every_rank_stuck_in_the_first_collective_is_the_transports_question_not_the_codes(tmp_path, capsys):
    (tmp_path / "output.log").write_text("".join(_watchdog(r, 1) for r in range(4)))
    rc, doc, err = analyze_json(capsys, tmp_path)
    job = doc["job"]
    assert job["verdict"] == "unknown" and job["decided_by"]["kind"] == "nccl_watchdog_timeout_first", err
    assert "early_phase_failure" not in [f["kind"] for f in job["findings"]]
    # a few collectives in, with every rank waiting, it is still early: the code's (mismatched collectives)
    (tmp_path / "output.log").write_text("".join(_watchdog(r, 7) for r in range(4)))
    rc, doc, err = analyze_json(capsys, tmp_path)
    assert doc["job"]["verdict"] == "application", err


def test_ranks_nccl_names_in_a_setup_error_are_culprits_with_no_host_to_drain(tmp_path, capsys):
    (tmp_path / "log.txt").write_text(
        "".join("gpu-03:2988%d:2988%d [0] NCCL INFO comm 0x55d0c8a0000%d rank %d nranks 4 cudaDev 0 nvmlDev 0 busId "
                "e2000 commId 0x5eed - Init START\n" % (r, r, r, r) for r in (2, 3)) +
        "gpu-03:29883:29883 [0] init.cc:497 NCCL WARN Duplicate GPU detected : rank 3 and rank 2 both on CUDA "
        "device e2000\n")
    rc, doc, err = analyze_json(capsys, tmp_path)
    job = doc["job"]
    assert job["verdict"] == "nccl_config" and job["culprit_ranks"] == [2, 3], err
    assert job["culprit_hosts"] == [] and job["rank_map"]["2"]["host"] == "gpu-03"
    # with the host's own capture beside it, the host gets no job_culprit (nothing to drain)
    (tmp_path / "gpu-03").mkdir()
    (tmp_path / "gpu-03" / "kern.log").write_text(XID79)
    rc, doc, err = analyze_json(capsys, tmp_path)
    (h,) = [h for h in doc["hosts"] if h["host"] == "gpu-03"]
    assert "job_culprit" not in [f["kind"] for f in h["findings"]], err


@pytest.mark.parametrize("prompt", ["zeyer@cn-234 ~ % nvidia-smi", "[zeyer@cn-234 ~]$ nvidia-smi",
                                    "zeyer@cn-234:~$ nvidia-smi", "    [zeyer@cn-234 ~]$ nvidia-smi"])
def test_a_shell_prompt_names_the_host_of_what_follows(tmp_path, capsys, prompt):
    # zsh's default prompt (user@host ~ %), bash's two, and one indented as a code block
    (tmp_path / "paste.txt").write_text(prompt + "\nUnable to determine the device handle for GPU0000:03:00.0: "
                                                 "Unknown Error\n")
    rc, doc, err = analyze_json(capsys, tmp_path)
    assert [h["host"] for h in doc["hosts"]] == ["cn-234"], err


def test_a_device_nccl_could_not_open_is_information_when_it_went_on_with_others(tmp_path, capsys):
    head = "pod-0:80744:80744 [1] "
    skipped = head + "transport/net_ib.cc:149 NCCL WARN NET/IB : Unable to open device mlx5_59\n"
    (tmp_path / "log.txt").write_text(skipped)
    rc, doc, err = analyze_json(capsys, tmp_path)
    assert doc["job"]["verdict"] == "nccl_config", err  # alone: the job could not use the device it saw
    (tmp_path / "log.txt").write_text(skipped + head + "NCCL INFO NET/IB : Using [0]mlx5_1:1/RoCE [1]mlx5_18:1/RoCE ; "
                                                    "OOB eth0:10.0.0.7<0>\n" + head + "NCCL INFO Using network IB\n")
    rc, doc, err = analyze_json(capsys, tmp_path)
    job = doc["job"]
    (f,) = [f for f in job["findings"] if "mlx5_59" in f["evidence"]]
    assert f["severity"] == "info" and "mlx5_1" in f["message"]
    assert job["verdict"] == "unknown", err  # NCCL warned: not an end said well, not a failure either


# ibportstate.c's query output (infiniband-diags): a switch port and its peer
IBPORTSTATE = ("[root@sw01 ~]# ibportstate 1 6\n"
               "PortInfo:\n# Port info: Lid 1 port 6\n"
               "LinkState:.......................{state}\nPhysLinkState:...................{phys}\n"
               "LinkWidthActive:.................4X\nLinkSpeedActive:.................10.0 Gbps\n"
               "Peer PortInfo:\n# Port info: Lid 1 DR path slid 2; dlid 65535; 0,6 port 1\n"
               "LinkState:.......................{state}\nPhysLinkState:...................{phys}\n"
               "LinkWidthActive:.................4X\nLinkSpeedActive:.................10.0 Gbps\n")


def test_ibportstate_is_read_by_its_fields_and_the_prompt_names_the_host(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text(IBPORTSTATE.format(state="Active", phys="LinkUp"))
    rc, doc, _ = analyze_json(capsys, tmp_path)
    (h,) = doc["hosts"]
    assert (h["host"], h["verdict"]) == ("sw01", "healthy") and doc["files"][0]["read_as"] == ["ibportstate"]
    (tmp_path / "notes.txt").write_text(IBPORTSTATE.format(state="Down", phys="Polling"))
    rc, doc, _ = analyze_json(capsys, tmp_path)
    (h,) = doc["hosts"]
    assert h["verdict"] == "ib_network" and rc != 0
    assert {(f["kind"], f["ib"]["device"]) for f in h["findings"] if f["severity"] == "critical"} == \
        {("ib_port_down", "lid:1"), ("ib_port_down", "lid:1/6 peer")}


def test_ibportstate_says_when_two_ends_run_slower_than_they_could():
    from gpu_runbook.infiniband import parse_ib
    text = IBPORTSTATE.format(state="Active", phys="LinkUp") + \
        "ibwarn: [4242] validate_width: Peer ports operating at active width 1 rather than 4 (4x)\n"
    facts, findings = parse_ib(text, source="ibportstate.txt")
    assert facts["format"] == "ibportstate" and facts["ports"][0]["rate_gbps"] == 40.0
    (f,) = [f for f in findings if f["severity"] != "ok"]
    assert f["kind"] == "ib_link_degraded" and f["source"] == "ibportstate.txt:14"


@pytest.mark.parametrize("name", ["ibstat.txt", "paste.txt"])
def test_an_ibstat_excerpt_cut_above_its_port_is_still_a_port_reading(tmp_path, capsys, name):
    (tmp_path / name).write_text("...\nPort 1:\n                State: Down\n                Physical state: Polling\n"
                                 "...\n")
    rc, doc, _ = analyze_json(capsys, tmp_path)
    (h,) = doc["hosts"]
    assert h["verdict"] == "ib_network"
    assert [f["kind"] for f in h["findings"] if f["severity"] == "critical"] == ["ib_port_down"]


def test_ibv_devinfos_hca_id_lines_name_no_host(tmp_path, capsys):
    (tmp_path / "out.txt").write_text(
        "root@f51fec68bf55:~# ibv_devinfo\nhca_id: mlx5_0\n        transport:                      InfiniBand (0)\n"
        "        phys_port_cnt:                  1\n                port:   1\n"
        "                        state:                  PORT_DOWN (1)\n"
        "                        link_layer:             InfiniBand\n\nhca_id: mlx5_1\n"
        "        transport:                      InfiniBand (0)\n")
    rc, doc, _ = analyze_json(capsys, tmp_path)
    (h,) = doc["hosts"]
    assert (h["host"], h["verdict"]) == ("f51fec68bf55", "ib_network")


def test_a_mig_devices_box_alone_is_a_reading_of_its_gpus_ecc(tmp_path, capsys):
    box = ("+-----------------------------------------------------------------------------+\n"
           "| MIG devices:                                                                |\n"
           "+------------------+----------------------+-----------+-----------------------+\n"
           "| GPU  GI  CI  MIG |         Memory-Usage |        Vol|         Shared        |\n"
           "|      ID  ID  Dev |           BAR1-Usage | SM     Unc| CE  ENC  DEC  OFA  JPG|\n"
           "|                  |                      |        ECC|                       |\n"
           "|==================+======================+===========+=======================|\n"
           "|  1    3   0   0  |  14366MiB / 19968MiB | 28      {ecc} |  2   0    1    0    0 |\n"
           "|                  |      4MiB / 32767MiB |           |                       |\n"
           "+------------------+----------------------+-----------+-----------------------+\n")
    (tmp_path / "nvidia-smi.txt").write_text(box.format(ecc=0))
    rc, doc, _ = analyze_json(capsys, tmp_path)
    (h,) = doc["hosts"]
    assert h["verdict"] == "healthy"
    assert [f["kind"] for f in h["findings"]] == ["nvsmi_incomplete"]  # its own rows were not given
    (tmp_path / "nvidia-smi.txt").write_text(box.format(ecc=3))
    rc, doc, _ = analyze_json(capsys, tmp_path)
    (h,) = doc["hosts"]
    assert h["verdict"] == "gpu_hardware" and any(f["kind"].startswith("ecc") for f in h["findings"])


def test_nvidia_smis_failure_quoted_inside_a_sentence_is_read(tmp_path, capsys):
    (tmp_path / "issue.txt").write_text(
        "Sometimes GPU 1 falls off the bus and nvidia-smi outputs the following error: Unable to determine the "
        "device handle for GPU 0000:0B:00.0: Unknown Error.\n")
    rc, doc, _ = analyze_json(capsys, tmp_path)
    (h,) = doc["hosts"]
    (f,) = [f for f in h["findings"] if f["kind"] == "gpu_handle_error"]
    assert h["verdict"] == "gpu_hardware" and f["gpu"]["pci"] == "0000:0b:00.0" and "(Unknown Error)" in f["message"]


# the message's closing full stop is lost when it is quoted inside a sentence: it is still Fabric Manager's
@pytest.mark.parametrize("end", [".", ""])
def test_fabric_managers_version_check_in_the_journal_is_the_driver(tmp_path, capsys, end):
    (tmp_path / "journal.txt").write_text(
        "Nov 05 13:55:26 node1 systemd[1]: Starting NVIDIA fabric manager service...\n"
        "Nov 05 13:55:26 node1 nv-fabricmanager[104230]: fabric manager NVIDIA GPU driver interface version "
        "550.127.05 don't match with driver version 550.120. Please update with matching NVIDIA driver package%s\n"
        % end)
    rc, doc, _ = analyze_json(capsys, tmp_path)
    verdicts = [h["verdict"] for h in doc["hosts"]] + [(doc.get("job") or {}).get("verdict")]
    assert "driver" in verdicts, doc
    assert all(v != "healthy" for v in verdicts)


def test_infiniband_diags_own_complaints_are_tool_errors_not_unexplained(tmp_path, capsys):
    # libibmad's IBWARN and ibdiag_common.c's ibexit(), as perfquery / ibnetdiscover print them on a
    # RoCE port (no MAD tool works there); the ports themselves are Active
    (tmp_path / "out.txt").write_text(
        "[root@node32 1]# ibnetdiscover\n"
        "ibwarn: [298726] mad_rpc_open_port: client_register for mgmt 1 failed\n"
        "/var/tmp/OFED_topdir/BUILD/rdma-core-2307mlnx47/libibnetdisc/ibnetdisc.c:802; can't open MAD port ((null):0)\n"
        "ibnetdiscover: iberror: failed: discover failed\n"
        # argv[0] as the shell gave it: a path (x43-13)
        "/usr/sbin/ibnetdiscover: iberror: failed: discover failed\n"
        "[root@node32 1]# perfquery\n"
        "ibwarn: [299010] mad_rpc_open_port: client_register for mgmt 1 failed\n"
        "perfquery: iberror: failed: Failed to open '(null)' port '0'\n")
    (tmp_path / "ibstatus.txt").write_text(
        "[root@node32 1]# ibstatus\nInfiniband device 'mlx5_0' port 1 status:\n"
        "        state:           4: ACTIVE\n        phys state:      5: LinkUp\n"
        "        rate:            400 Gb/sec (4X NDR)\n        link_layer:      Ethernet\n")
    # the two files given one by one are one capture: one host
    rc, out, err = run(capsys, str(tmp_path / "out.txt"), str(tmp_path / "ibstatus.txt"), "--format", "json")
    doc = json.loads(out)
    (h,) = doc["hosts"]
    assert (h["host"], h["verdict"]) == ("node32", "healthy"), h
    assert {f["kind"] for f in h["findings"]} == {"ib_tool_error"}
    assert {f["file"]: f["read_as"] for f in doc["files"]} == {
        str(tmp_path / "out.txt"): ["ibstat"], str(tmp_path / "ibstatus.txt"): ["ibstat"]}


def test_a_mig_gpus_ecc_is_the_sum_of_its_instances_whatever_their_order():
    from gpu_runbook.nvsmi import parse_nvidia_smi_table
    row = "|  1    {gi}   0   {dev}  |   9880MiB / 19968MiB | 28      {ecc} |  2   0    1    0    0 |\n"
    box = ("+-----------------------------------------------------------------------------+\n"
           "| MIG devices:                                                                |\n"
           "+------------------+----------------------+-----------+-----------------------+\n"
           "|==================+======================+===========+=======================|\n"
           + row.format(gi=3, dev=0, ecc=3) + row.format(gi=5, dev=1, ecc=0) + row.format(gi=6, dev=2, ecc=2))
    facts, findings = parse_nvidia_smi_table(box, source="nvidia-smi.txt")
    (g,) = facts["gpus"]
    assert g["ecc"]["volatile"]["uncorrectable"] == 5  # 3 + 0 + 2: a later clean instance hides nothing
    (f,) = [f for f in findings if f["severity"] == "critical"]
    assert f["source"] == "nvidia-smi.txt:5"  # the first instance with errors


def _networkd(host, t, dev, what):
    return "Aug 17 %s %s systemd-networkd[5398]: %s: %s carrier\n" % (t, host, dev, what)


@pytest.mark.parametrize("name", NAMES)
def test_networkd_carrier_losses_of_an_ipoib_link_are_its_drops(tmp_path, capsys, name):
    # networkd says 'Lost carrier' only when the link had one (networkd-link.c link_update): each is a
    # drop, whatever the log shows before it; a gained carrier leaves it up (a flap, a warning)
    lines = "".join(_networkd("vm-0", "06:18:0%d" % i, "ib6", "lost") + _networkd("vm-0", "06:18:0%d" % i, "ib6", "Gained")
                    for i in range(3))
    (tmp_path / name).write_text("Aug 17 00:00:24 vm-0 systemd[1]: Finished Rotate log files.\n" + lines)
    rc, doc, err = analyze_json(capsys, tmp_path)
    (h,) = doc["hosts"]
    (f,) = [f for f in h["findings"] if f["kind"] == "ib_link_flap"]
    assert h["host"] == "vm-0" and h["verdict"] == "ib_network" and f["severity"] == "warning", err
    assert "ib6 (IPoIB netdev)" in f["message"] and "3x" in f["message"] and "last state up" in f["message"]
    # one loss, never regained: a dropped link that is still down (critical)
    (tmp_path / name).write_text(_networkd("vm-0", "06:18:01", "ib6", "Lost"))
    rc, doc, err = analyze_json(capsys, tmp_path)
    (f,) = [f for f in doc["hosts"][0]["findings"] if f["kind"] == "ib_link_dropped"]
    assert f["severity"] == "critical", err
    # an Ethernet netdev's carrier is no IB link's
    (tmp_path / name).write_text(_networkd("vm-0", "06:18:01", "eth0", "Lost"))
    rc, doc, err = analyze_json(capsys, tmp_path)
    assert not [f for h in doc["hosts"] for f in h["findings"] if f["kind"].startswith("ib_link")], err


def test_a_syslog_line_an_alert_quotes_whole_names_its_host(tmp_path, capsys):
    # an alerting tool's line that carries the syslog line after its own words: each host is its own
    (tmp_path / "xid-alerts.txt").write_text(
        "Xid errors on instance: ip-26-0-146-100, Error: May 19 07:08:57 ip-26-0-146-100 kernel: [680111.646286] "
        "NVRM: Xid (PCI:0000:10:1c): 63, pid=1850, Row Remapper: New row marked for remapping, reset gpu to activate\n"
        "Xid errors on instance: ip-26-0-147-135, Error: May 29 01:37:38 ip-26-0-147-135 kernel: [257087.812628] "
        "NVRM: Xid (PCI:0000:90:1c): 79, pid=0, GPU has fallen off the bus.\n")
    rc, doc, err = analyze_json(capsys, tmp_path)
    hosts = {h["host"]: sorted(f.get("xid") for f in h["findings"] if f["kind"] == "xid") for h in doc["hosts"]}
    assert hosts == {"ip-26-0-146-100": [63], "ip-26-0-147-135": [79]}, err


SRUN_STEP_DOWN = ("srun: error: node-a: task 5: Exited with exit code 1\n"
                  "srun: launch/slurm: _step_signal: Terminating StepId=4357.0\n"
                  "slurmstepd: error: *** STEP 4357.0 ON node-a CANCELLED AT 2021-07-14T08:00:36 ***\n"
                  "srun: error: node-a: tasks 3,7: Killed\n"
                  "srun: error: node-b: tasks 8-15: Killed\n"
                  "srun: Force Terminated StepId=4357.0\n")


def test_the_task_whose_exit_brought_the_step_down_is_named_and_the_job_is_not_healthy(tmp_path, capsys):
    # srun (launch.c) kills the other tasks when one exits non-zero: that one is the culprit, the
    # kills are its consequence; the step's cancel is no scancel's
    (tmp_path / "slurm.out").write_text(SRUN_STEP_DOWN)
    rc, doc, err = analyze_json(capsys, tmp_path)
    job = doc["job"]
    assert job["verdict"] == "unknown" and job["culprit_ranks"] == [5], err
    by_kind = {}
    for f in job["findings"]:
        by_kind.setdefault(f["kind"], []).append(f)
    (exited,) = [f for f in by_kind["logged_error"] if "exited non-zero" in f["message"]]
    assert exited["severity"] == "warning"
    assert all(f["severity"] == "info" and "task 5 exited with exit code 1" in f["message"]
               for f in by_kind["worker_sigkill"])
    # every task killed at once (no first exit): no culprit
    (tmp_path / "slurm.out").write_text(SRUN_STEP_DOWN.replace("task 5: Exited with exit code 1", "task 5: Killed"))
    rc, doc, err = analyze_json(capsys, tmp_path)
    assert doc["job"]["culprit_ranks"] == [] and doc["job"]["verdict"] != "healthy", err


def test_a_watchdog_stuck_in_the_process_groups_abort_is_a_teardown_hang_not_the_driver(tmp_path, capsys):
    log = ("100%|####| 50/50 [00:01<00:00, 40.67it/s]\n"
           "[rank0]:[E ProcessGroupNCCL.cpp:1025] [PG 0 Rank 0] Future for ProcessGroup abort timed out after 600000 ms\n"
           "[rank0]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 0] Heartbeat monitor timed out! Process will be terminated "
           "after dumping debug info. workMetaList_.size()=0\n")
    (tmp_path / "output.log").write_text(log)
    rc, doc, err = analyze_json(capsys, tmp_path)
    kinds = [f["kind"] for f in doc["job"]["findings"]]
    assert "nccl_abort_hang" in kinds and "nccl_watchdog_stuck" not in kinds, err
    assert doc["job"]["verdict"] == "unknown"
    # without the abort, a heartbeat timeout is the watchdog stuck in a CUDA/NCCL call (the driver)
    (tmp_path / "output.log").write_text(log.splitlines()[0] + "\n" + log.splitlines()[2] + "\n")
    rc, doc, err = analyze_json(capsys, tmp_path)
    assert "nccl_watchdog_stuck" in [f["kind"] for f in doc["job"]["findings"]], err


NCCL_TRAIL = ("Steps:   0%|          | 1/500000 [12:44<14459:40:43, 104.11s/it, loss=0.36, lr=5e-6]"
              "n124:312247:326969 [0] NCCL INFO misc/socket.cc:829 -> 3\n"
              "n124:312247:319408 [0] NCCL INFO misc/socket.cc:881 -> 3\n"
              "n124:312248:319407 [1] NCCL INFO misc/socket.cc:881 -> 3\n"
              "n124:312247:326969 [0] NCCL INFO transport/net_socket.cc:563 -> 3\n"
              "[rank6]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank 6] Some NCCL operations have failed or timed out. "
              "Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/"
              "incomplete data.\n")


def test_nccls_error_trail_says_where_a_failure_began_and_is_no_early_code_bug(tmp_path, capsys):
    # checks.h's 'file:line -> res' lines, innermost first: the first of a process is where it began
    (tmp_path / "train.log").write_text(NCCL_TRAIL)
    rc, doc, err = analyze_json(capsys, tmp_path)
    job = doc["job"]
    (f,) = [f for f in job["findings"] if f["kind"] == "nccl_error_trace"]
    assert "socket layer" in f["message"] and "misc/socket.cc:829" in f["message"], f["message"]
    assert "an internal error (3)" in f["message"] and "2 processes" in f["message"]
    assert job["verdict"] == "unknown" and "early_phase_failure" not in [g["kind"] for g in job["findings"]], err
    assert job["decided_by"]["kind"] == "nccl_error_trace"
    # NCCL's own WARN says what failed: the trail adds nothing
    warn = "n124:312247:326969 [0] NCCL WARN Net : Connection closed by remote peer n125<43602>\n"
    (tmp_path / "train.log").write_text(warn + NCCL_TRAIL)
    rc, doc, err = analyze_json(capsys, tmp_path)
    assert "nccl_error_trace" not in [g["kind"] for g in doc["job"]["findings"]], err


PASTED_CRASH = ("pcieport 0000:00:1b.0: PCIe Bus Error: severity=Correctable,\n"
                "  type=Physical Layer, (Receiver ID)  [ 0] RxErr (First)\n"
                "NVRM: Xid (PCI:0000:03:00): 79, GPU has fallen off the bus.\n"
                "NVRM: Xid: 154, GPU recovery action changed to 0x2 (Node Reboot Required)\n\n"
                "CUDA error: unspecified launch failure\n")


@pytest.mark.parametrize("name", NAMES)
def test_a_cuda_error_beside_its_hosts_xid_is_that_gpus_fault(tmp_path, capsys, name):
    # one paste: the kernel's Xid 79 and the job's sticky CUDA error; no rank names a host, the
    # captures hold one: the host's fault explains the job's error (not 'an application bug')
    (tmp_path / name).write_text(PASTED_CRASH)
    rc, doc, err = analyze_json(capsys, tmp_path)
    job, (h,) = doc["job"], doc["hosts"]
    assert job["verdict"] == "gpu_hardware" and job["confidence"] == "high", err
    assert job["decided_by"]["kind"] == "xid" and job["decided_by"]["xid"] == 79
    # a pasted Xid line whose GPU was cut out is still that Xid
    assert sorted(f["xid"] for f in h["findings"] if f["kind"] == "xid") == [79, 154]
    # the same CUDA error with no host fault stays the application's
    (tmp_path / name).write_text("CUDA error: unspecified launch failure\n")
    rc, doc, err = analyze_json(capsys, tmp_path)
    assert doc["job"]["verdict"] == "application", err


def test_nhcs_debug_lines_are_no_finding_and_its_timestamped_errors_are_read(tmp_path, capsys):
    # nhc -d prints 'DEBUG:  ...' (dbg()), TS=1 puts '[$SECONDS] - ' before every line (nhc's log functions)
    (tmp_path / "health.log").write_text(
        "DEBUG:  Debugging activated via -d option.\n"
        "[0] - DEBUG:  Restarting via setsid:  setsid /usr/sbin/nhc -v -d TIMEOUT=500 FORCE_SETSID=0\n"
        "[1705939176] - ERROR:  nhc:  Health check failed:  check_hw_ib:  No IB port mlx5_0:1 is ACTIVE "
        "(LinkUp 200 Gb/sec).\n")
    rc, doc, err = analyze_json(capsys, tmp_path)
    (h,) = doc["hosts"]
    assert h["verdict"] == "ib_network", err
    assert not [f for f in h["findings"] if f["kind"] == "unexplained_errors"], h["findings"]


def test_an_azure_nhc_run_that_passed_every_check_is_read_and_healthy(tmp_path, capsys):
    (tmp_path / "health.log").write_text(
        "root@gpu7:/azure-nhc# bash run-health-checks.sh\n"
        "SUCCESS:  nhc:  Health check passed:  check_gpu_count: Expected 8 and found 8\n"
        "SUCCESS:  nhc:  Health check passed:  check_gpu_xid:  GPU XID error check passed.\n"
        "Health checks completed with exit code: 0.\n")
    rc, doc, err = analyze_json(capsys, tmp_path)
    (h,) = doc["hosts"]
    assert (h["host"], h["verdict"]) == ("gpu7", "healthy") and "nothing in it was recognised" not in err, err
    (tmp_path / "health.log").write_text("Health checks completed with exit code: 1.\n")
    rc, doc, err = analyze_json(capsys, tmp_path)
    assert doc["hosts"][0]["verdict"] != "healthy", err


def test_a_kernels_failed_assert_is_the_applications_cuda_error(tmp_path, capsys):
    # the CUDA device assert's own line (CUDA C++ Programming Guide, 'Assertion'), as ATen's index checks print it
    (tmp_path / "train.log").write_text(
        "../aten/src/ATen/native/cuda/Indexing.cu:1146: indexSelectLargeIndex: block: [316,0,0], thread: [62,0,0] "
        "Assertion `srcIndex < srcSelectDimSize` failed.\nFatal Python error: Aborted\n")
    rc, doc, err = analyze_json(capsys, tmp_path)
    (f,) = [f for f in doc["job"]["findings"] if f["kind"] == "cuda_error"]
    assert doc["job"]["verdict"] == "application" and "srcIndex < srcSelectDimSize" in f["message"], err


@pytest.mark.parametrize("name", ["job.err", "dmesg.txt", "output.log"])
def test_ucx_lines_are_a_jobs_not_the_kernels(tmp_path, capsys, name):
    # UCX's log head is a Unix time then [host:pid:thread] (log.c), no dmesg uptime: its lines reach
    # the job's readers and UCX's table (an IB async event it logs is the network's)
    (tmp_path / name).write_text(
        "[1700000000.123456] [gpu-a-01:1234 :0]     ib_device.c:520  UCX  DIAG  IB Async event on mlx5_0: port error "
        "on port 1\n")
    rc, doc, err = analyze_json(capsys, tmp_path)
    assert doc["job"]["verdict"] == "ib_network", err
    assert [f["name"] for f in doc["job"]["findings"] if f["category"] == "ib_network"] == ["UCX"]


def test_a_ucx_completion_error_alone_is_no_healthy_run(tmp_path, capsys):
    (tmp_path / "job.err").write_text(
        "[jwb0296:32182:0:32182] ib_mlx5_log.c:145  Transport retry count exceeded on mlx5_2:1/IB (synd 0x15 vend 0x81 "
        "hw_synd 0/0)\n")
    rc, doc, err = analyze_json(capsys, tmp_path)
    assert doc["job"]["verdict"] == "ib_network" and "nothing in it was recognised" not in err, err


@pytest.mark.parametrize("bar", [
    # huggingface_hub's downloads count bytes (tqdm unit="B"); transformers' shard loading is labelled
    "Downloading (…)of-00002.safetensors:  98%|█████████▊| 9.78G/9.98G [01:10<00:01, 148MB/s]",
    "Loading checkpoint shards: 100%|██████████| 2/2 [00:09<00:00,  4.65s/it]",
    "Map (num_proc=8): 100%|██████████| 5000/5000 [00:02<00:00, 2139.77 examples/s]",
])
def test_set_up_bars_are_no_training_progress(bar):
    from gpu_runbook.joblog.progress import read_bars
    assert read_bars(bar)[0] == []
    # a training bar beside them still counts
    assert len(read_bars("Epoch 1: 100%|██████████| 50/50 [00:10<00:00,  4.90it/s]")[0]) == 1


def test_a_traceback_after_download_bars_is_the_applications_not_a_stalled_loader(tmp_path, capsys):
    bars = "".join("Downloading (…)of-00002.safetensors: %3d%%|█| %.2fG/9.98G [00:%02d<00:01, %dMB/s]\n"
                   % (p, p * 0.0998, p % 60, 40 + (p * 37) % 300) for p in range(1, 100, 3))
    tracebacks = "".join(
        "[rank%d]: Traceback (most recent call last):\n[rank%d]:   File \"main.py\", line 3, in <module>\n[rank%d]: "
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:%d and "
        "cpu!\n" % (r, r, r, r) for r in range(2))
    (tmp_path / "training.log").write_text(
        bars + "Epoch 0:   1%|          | 1/100 [00:02<03:18,  2.01s/it]\n" + tracebacks)
    rc, doc, err = analyze_json(capsys, tmp_path)
    # the downloads' uneven rates had been read as a training loop's erratic stalls (DataLoader)
    assert doc["job"]["verdict"] == "application", doc["job"]


@pytest.mark.parametrize("line,error_like", [
    ("[NeMo W 2024-12-16 11:44:50 nemo_logger:212] Please ensure that max_steps will run for at least 1 epochs to "
     "ensure that checkpointing will not error out.", False),
    ("the loader won't fail on empty shards", False),
    ("checkpointing failed: disk full", True),
    # a count of zero failures, as a JSON log writes it (a DCGM preflight's diagnostic summary)
    ('  "failed": 0,', False),
    ('  "failed": 2,', True),
])
def test_advice_that_names_a_failure_to_avoid_is_not_error_like(line, error_like):
    from gpu_runbook.vocab.reading import error_like as is_error_like
    assert is_error_like(line) is error_like


NCCL_TEARDOWN = (
    "h1:444:957 [0] NCCL INFO misc/socket.cc:47 -> 3\n"
    "h1:444:957 [0] proxy.cc:1458 NCCL WARN [Service thread] Accept failed Success\n"
    "h1:444:957 [0] proxy.cc:1521 NCCL WARN [Proxy Service 0] Failed to execute operation Close from rank 0, retcode 3\n"
    "h1:444:1409 [0] NCCL INFO comm 0x5635fed4f3c0 rank 0 nranks 1 cudaDev 0 busId 1000 - Abort COMPLETE\n")


def test_ncclS_complaints_after_the_run_said_it_ended_are_its_teardown(tmp_path, capsys):
    (tmp_path / "pretrain.log").write_text(
        "Epoch 0: 100%|██████████| 20/20 [00:10<00:00,  1.90it/s, loss=10.8]\n"
        "`Trainer.fit` stopped: `max_steps=20` reached.\n" + NCCL_TEARDOWN)
    rc, doc, err = analyze_json(capsys, tmp_path)
    assert doc["job"]["verdict"] == "healthy", doc["job"]
    assert all(f["severity"] == "info" for f in doc["job"]["findings"] if f.get("name") == "NCCL")
    # the same lines before the end marker are a failure of the run
    (tmp_path / "pretrain.log").write_text(
        "Epoch 0:  50%|█████     | 10/20 [00:10<00:10,  1.90it/s, loss=10.8]\n" + NCCL_TEARDOWN)
    rc, doc, err = analyze_json(capsys, tmp_path)
    assert doc["job"]["verdict"] != "healthy", doc["job"]


@pytest.mark.parametrize("name,severity", [("NVIDIA A100-SXM4-80GB", "critical"), ("NVIDIA H100 PCIe", "info")])
def test_nvlink_status_of_a_gpu_whose_links_are_all_inactive(tmp_path, capsys, name, severity):
    # nvidia-smi nvlink --status prints this instead of the links when none is up: on a baseboard
    # (SXM) GPU a fault; on a PCIe card a note: its bridge is optional and no other card of its
    # model here has a link up (one that has makes it a warning: test_no_black_holes.py)
    (tmp_path / "nvlink-status.txt").write_text(
        "GPU 6: %s (UUID: GPU-9667d95e-6d22-0c22-1f57-c481f13e7c44)\n"
        "NVML: Unable to retrieve NVLink information as all links are inactive\n" % name)
    rc, doc, err = analyze_json(capsys, tmp_path)
    (h,) = doc["hosts"]
    (f,) = [f for f in h["findings"] if f["kind"] == "nvlink_inactive"]
    assert f["severity"] == severity and "GPU 6 has all its NVLink links inactive" in f["message"]
    assert (h["verdict"] != "healthy") == (severity == "critical")


@pytest.mark.parametrize("name", ["live.log", "job.err", "dmesg.txt"])
def test_nvidia_smis_nvml_failure_quoted_inside_a_log_line(tmp_path, capsys, name):
    (tmp_path / name).write_text(
        "[task 2025-07-01T05:06:30.004+00:00] [train] nvidia-smi failed with return code 18\n"
        "[task 2025-07-01T05:06:30.005+00:00] [train] [nvidia-smi(stdout)] Failed to initialize NVML: "
        "Driver/library version mismatch\n")
    rc, doc, err = analyze_json(capsys, tmp_path)
    (h,) = doc["hosts"]
    assert (h["verdict"], h["findings"][0]["kind"]) == ("driver", "nvml_driver_mismatch"), err


@pytest.mark.parametrize("why,category", [("GPU is lost", "gpu_hardware"), ("GPU requires reset", "gpu_hardware"),
                                          ("Insufficient Permissions", "driver")])
def test_an_nvml_return_value_in_a_programs_message_decides_what_failed(tmp_path, capsys, why, category):
    # Slurm's gpu_nvml.c quotes nvmlErrorString: the GPU's state, not the caller's trouble, when it says so
    (tmp_path / "slurm-job.err").write_text("slurmstepd: error: NVML: Failed to get usage(15): %s\n" % why)
    rc, doc, err = analyze_json(capsys, tmp_path)
    assert doc["job"]["verdict"] == category, doc["job"]


def test_hosts_that_load_different_nccl_network_plugins(tmp_path, capsys):
    (tmp_path / "nccl_04_11.log").write_text(
        "HGX-H100-11:18226:18274 [5] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network "
        "plugin.\n"
        "HGX-H100-04:589474:589541 [0] NCCL INFO Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so\n")
    rc, doc, err = analyze_json(capsys, tmp_path)
    (f,) = [f for f in doc["job"]["findings"] if f["kind"] == "nccl_net_plugin_mixed"]
    assert doc["job"]["verdict"] == "nccl_config" and "HGX-H100-11" in f["message"] and "HGX-H100-04" in f["message"]
    # every host on the same plugin: nothing to say
    (tmp_path / "nccl_04_11.log").write_text(
        "HGX-H100-11:18226:18274 [5] NCCL INFO Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so\n"
        "HGX-H100-04:589474:589541 [0] NCCL INFO Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so\n")
    rc, doc, err = analyze_json(capsys, tmp_path)
    assert not [f for f in doc["job"]["findings"] if f["kind"] == "nccl_net_plugin_mixed"]


@pytest.mark.parametrize("last,category", [
    ("pynvml.nvml.NVMLError_GpuIsLost: GPU is lost", "gpu_hardware"),
    ("pynvml.NVMLError_DriverNotLoaded: Driver Not Loaded", "driver"),
    ("pynvml.NVMLError_LibRmVersionMismatch: RM has detected an NVML/RM version mismatch.", "driver"),
])
def test_a_traceback_ending_in_pynvmls_exception_is_nvmls_word(tmp_path, capsys, last, category):
    # NVML's return value, as nvidia-ml-py raises it (vocab/nvml.py): had been no capture at all
    (tmp_path / "monitor.log").write_text(
        "Traceback (most recent call last):\n  File \"gpu_stats.py\", line 12, in <module>\n"
        "    handle = pynvml.nvmlDeviceGetHandleByIndex(i)\n" + last + "\n")
    rc, doc, err = analyze_json(capsys, tmp_path)
    assert "nothing in it was recognised" not in err
    assert doc["job"]["verdict"] == category, doc["job"]


def test_a_desync_report_names_the_rank_it_waited_for_when_no_world_size_is_said(tmp_path, capsys):
    # rank 0's report (TORCH_NCCL_DESYNC_DEBUG) tells of rank 7, whose lines are not in the paste
    (tmp_path / "stderr.log").write_text(
        "[rank0]:[E515 18:36:47.341808597 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=241, OpType=ALLREDUCE, NumelIn=6, NumelOut=6, Timeout(ms)=600000) ran for 600086 "
        "milliseconds before timing out.\n"
        "[rank0]:[E515 18:36:47.343377708 ProcessGroupNCCL.cpp:1937] Rank 0\n"
        "         - [0] Timeout at collective: ALLREDUCE, #315\n"
        "         - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:\n"
        "             [7] finished collective #182, but didn't join collective #183 (count from 1)\n")
    rc, doc, err = analyze_json(capsys, tmp_path)
    assert doc["job"]["culprit_ranks"] == [7], doc["job"]


def test_nvls_bind_failure_in_pytorchs_last_error_block_is_the_fabric_managers(tmp_path, capsys):
    # NCCL's WARN (transport/nvls.cc) goes on over three lines; PyTorch copies it under 'Last error:'
    (tmp_path / "job.err").write_text(
        "torch.distributed.DistBackendError: NCCL error in: /var/lib/jenkins/workspace/torch/csrc/distributed/c10d/"
        "NCCLUtils.cpp:93, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.29.3\n"
        "ncclUnhandledCudaError: Call to CUDA function failed.\n"
        "Last error:\n"
        "Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 401 'the operation cannot be "
        "performed in the present state'.\n"
        "This is usually caused by a system or configuration error in the Fabric Manager or NVSwitches.\n"
        "Disable NVLS (NCCL_NVLS_ENABLE=0) if you wish to avoid this error in the future.\n")
    rc, doc, err = analyze_json(capsys, tmp_path)
    kinds = [f["kind"] for f in doc["job"]["findings"]]
    assert doc["job"]["verdict"] == "driver" and "nccl_fabric_manager" in kinds, kinds
    # the message's own later lines and PyTorch's header are explained, not quoted as nobody's
    assert "unexplained_errors" not in kinds, doc["job"]["findings"]


@pytest.mark.parametrize("device,pci", [("PCI:0000:ae:00", "0000:ae:00.0"),
                                        ("GPU-ac896b35-5782-c478-4b2a-a661de07770f", None)])
def test_an_xid_gpud_reports_is_that_xid(tmp_path, capsys, device, pci):
    (tmp_path / "gpud-events.txt").write_text("XID 79(GPU has fallen off the bus) detected on %s\n" % device)
    rc, doc, err = analyze_json(capsys, tmp_path)
    (h,) = doc["hosts"]
    (f,) = [f for f in h["findings"] if f.get("xid") == 79]
    assert h["verdict"] == "gpu_hardware" and (f.get("gpu") or {}).get("pci") == pci, f


RSS = ("2022-03-23 23:57:%02d,855 DEBUG TRAIN Batch 0/%d loss 4.57 lr 0.00065741 rank 0 RSS MEM USE: %sG\n")


@pytest.mark.parametrize("figures,leak", [
    (("5.11", "5.11", "5.11", "46.51", "105.61", "161.09", "212.04"), True),   # grows step after step
    (("2.10", "11.80", "12.02", "12.01", "12.03", "12.02", "12.02"), False),   # a warm-up that levels off
    (("5.47", "5.47", "5.47", "8.58", "8.58", "8.58", "8.58"), False),         # one jump: a bigger input
])
def test_memory_a_run_reports_that_keeps_growing_is_a_leak(tmp_path, capsys, figures, leak):
    (tmp_path / "train.log").write_text("".join(RSS % (i, 185100 + 100 * i, v) for i, v in enumerate(figures)))
    rc, doc, err = analyze_json(capsys, tmp_path)
    grown = [f for f in (doc.get("job") or {}).get("findings") or () if f["kind"] == "memory_growing"]
    assert bool(grown) is leak, doc.get("job")
    if leak:
        assert doc["job"]["verdict"] == "memory_leak" and grown[0]["rank"] == 0
        assert "5.11G" in grown[0]["message"] and "212.04G" in grown[0]["message"]


def test_free_snapshots_whose_used_memory_keeps_growing(tmp_path, capsys):
    snap = ("              total        used        free      shared  buff/cache   available\n"
            "Mem:             65          %d          19           0          44          63\n"
            "Swap:             2           0           2\n\n")
    (tmp_path / "free.log").write_text("".join(snap % u for u in (1, 6, 8, 10)))
    rc, doc, err = analyze_json(capsys, tmp_path)
    assert doc["job"]["verdict"] == "memory_leak" and "nothing in it was recognised" not in err, (doc, err)


def test_slurmctlds_words_about_a_node_are_that_nodes_not_the_controllers(tmp_path, capsys):
    # the controller's syslog carries its own host name; the line is about nodegpu1 (node_mgr.c)
    (tmp_path / "slurmctld.log").write_text(
        "May 23 12:49:52 mgmt1 slurmctld[80708]: slurmctld: error: Setting node nodegpu1 state to INVAL with "
        "reason:gres/gpu count reported lower than configured (3 < 4)\n"
        "May 23 12:49:52 mgmt1 slurmctld[80708]: slurmctld: drain_nodes: node nodegpu1 state set to DRAIN\n"
        "May 23 12:49:56 mgmt1 slurmctld[1264181]: slurmctld: debug:  NodeNames=nodegpu1 setting Sockets=32\n")
    rc, doc, err = analyze_json(capsys, tmp_path)
    by_host = {h["host"]: h for h in doc["hosts"]}
    assert [f["kind"] for f in by_host["nodegpu1"]["findings"] if f["severity"] == "critical"] == ["gpu_missing"]
    assert not [f for f in (by_host.get("mgmt1") or {}).get("findings") or () if f["severity"] == "critical"]


@pytest.mark.parametrize("line,kind", [
    ("nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.1, please update your driver to a newer "
     "version, or use an earlier cuda container: unknown.", "cuda_driver_too_old"),
    ("nvidia-container-cli: initialization error: nvml error: driver not loaded: unknown", "logged_driver_error"),
    ("nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: cannot open shared object "
     "file: no such file or directory: unknown", "logged_driver_error"),
])
def test_the_nvidia_container_clis_errors_are_the_nodes_driver_stack(tmp_path, capsys, line, kind):
    # libnvidia-container's words (vocab/container.py): had been quoted as nobody's
    (tmp_path / "job-output.txt").write_text(
        "docker: Error response from daemon: failed to create task for container: failed to create shim task: OCI "
        "runtime create failed: runc create failed: unable to start container process: error during container init: "
        "error running hook #0: error running hook: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\n"
        + line + "\n")
    rc, doc, err = analyze_json(capsys, tmp_path)
    findings = (doc.get("job") or {}).get("findings") or [f for h in doc["hosts"] for f in h["findings"]]
    assert kind in [f["kind"] for f in findings if f["category"] == "driver"], findings


def test_the_oom_killers_report_of_the_process_it_killed_is_no_memory_figure_of_the_run(tmp_path, capsys):
    # anon-rss:/file-rss: of each killed process (mm/oom_kill.c): bigger and bigger kills are no leak of one run
    (tmp_path / "job.err").write_text("".join(
        "slurmstepd: oom report: Killed process %d (python) total-vm:%dkB, anon-rss:%dkB, file-rss:0kB, "
        "shmem-rss:0kB\n" % (4000 + i, 9000000 * (i + 1), 2000000 * (i + 1) ** 2) for i in range(5)))
    rc, doc, err = analyze_json(capsys, tmp_path)
    findings = ((doc.get("job") or {}).get("findings") or []) + [f for h in doc["hosts"] for f in h["findings"]]
    assert not [f for f in findings if f["kind"] == "memory_growing"], findings


@pytest.mark.parametrize("fmt,values", [
    ("step: %d  loss:  7.9  memory: %sGiB(15.65%%)  tps: 1234", ("10.5", "14.2", "19.8", "26.1", "33.0")),  # torchtitan
    ("eta: 0:01:00  iter: %d  total_loss: 1.2  max_mem: %sM", ("5432", "9120", "14400", "21000", "30100")),  # detectron2
    ("Epoch(train) [1][%d/1000]  lr: 1e-2  time: 0.5  memory: %s  loss: 1.2", ("2000", "3100", "4500", "6800", "9900")),
    ("[%d] CPU Virtual Memory:  used = %s GB, percent = 12.1%%", ("40.1", "52.7", "66.0", "81.2", "99.5")),  # DeepSpeed
])
def test_the_memory_figures_trainers_print_make_one_series(tmp_path, capsys, fmt, values):
    (tmp_path / "train.log").write_text("".join((fmt % (10 * i, v)) + "\n" for i, v in enumerate(values)))
    rc, doc, err = analyze_json(capsys, tmp_path)
    kinds = [f["kind"] for f in (doc.get("job") or {}).get("findings") or ()]
    assert "memory_growing" in kinds, (doc, err)


@pytest.mark.parametrize("line", [
    "Epoch(train) [1][ 50/1000]  lr: 1.0000e-02  eta: 1:00:00  time: 0.5012  data_time: 0.0101  memory: 5472  "
    "loss: 0.8123",
    "Iter(train) [  50/90000]  lr: 2.0000e-02  eta: 12:00:00  time: 0.4800  data_time: 0.0090  memory: 3317  loss: 1.2",
])
def test_mmengines_progress_lines_are_a_training_runs(line):
    # mmengine's log_processor.py: read as a run's progress, so that its other loss lines go unread
    from gpu_runbook.joblog import parse_job_logs
    job, _findings = parse_job_logs({"train.log": line + "\n"})
    assert job["training"], job


def test_a_long_runs_memory_is_read_at_its_start_and_at_its_end(tmp_path, capsys):
    # more memory lines than memtrend.EARLY: the first ones and the file's last lines make the series
    from gpu_runbook.joblog import memtrend
    n = memtrend.EARLY * 3
    (tmp_path / "train.log").write_text("".join(
        "Epoch(train) [1][%5d/%d]  lr: 1.0000e-02  time: 0.5012  memory: %d  loss: 0.8123\n"
        % (i, n, 2000 + 8 * i) for i in range(n)))
    rc, doc, err = analyze_json(capsys, tmp_path)
    (f,) = [f for f in doc["job"]["findings"] if f["kind"] == "memory_growing"]
    assert "from 2000 to %d" % (2000 + 8 * (n - 1)) in f["message"], f["message"]


@pytest.mark.parametrize("continued", [True, False])
def test_a_watchdog_timeout_a_terminal_wrapped_keeps_its_collective(tmp_path, capsys, continued):
    head = ("dinov2-giant-nodes.cn-d004 [stderr] [rank14]:[E909 09:55:29.307629539 ProcessGroupNCCL.cpp:607] [Rank 14] "
            "Watchdog caught collective operation timeout: \n")
    work = ("WorkNCCL(SeqNum=2070, OpType=REDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600034 "
            "milliseconds before timing out.\n")
    (tmp_path / "job.err").write_text(head + (work if continued else ""))
    rc, doc, err = analyze_json(capsys, tmp_path)
    (f,) = [f for f in doc["job"]["findings"] if f["kind"].startswith("nccl_watchdog_timeout")]
    assert ("REDUCE SeqNum 2070" in f["message"]) is continued and "None" not in f["message"], f["message"]


# PyTorch's NCCL error (c10d NCCLUtils.cpp getNcclErrorDetailStr) with NCCL's last error under its
# 'Last error:' head, srun --label's 'N: ' before every line (an AWS p5 job)
_LAST_ERROR = (
    "10: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1331, unhandled system error (run "
    "with NCCL_DEBUG=INFO for details), NCCL version 2.18.5\n"
    "10: ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.\n"
    "10: Last error:\n"
    "10: socketStartConnect: Connect to {addr}<45069> failed : Software caused connection abort\n")


def test_nccl_last_error_under_pytorch_s_head_is_nccl_s_words(tmp_path, capsys):
    # a peer that advertised a loopback address: the sockets' set-up, not the network (and no host)
    (tmp_path / "job.err").write_text(_LAST_ERROR.format(addr="127.0.0.1"))
    rc, doc, err = analyze_json(capsys, tmp_path / "job.err")
    job = doc["job"]
    assert job["verdict"] == "nccl_config" and job["decided_by"]["kind"] == "nccl_socket_interface"
    assert job["culprit_hosts"] == [] and not any(f["kind"] == "unexplained_errors" for f in job["findings"])
    # another node's address: a peer connection that failed, never a line nobody explains
    (tmp_path / "job.err").write_text(_LAST_ERROR.format(addr="10.1.2.3"))
    rc, doc, err = analyze_json(capsys, tmp_path / "job.err")
    kinds = [f["kind"] for f in doc["job"]["findings"]]
    assert "nccl_peer_connection_error" in kinds and "unexplained_errors" not in kinds
    assert doc["job"]["culprit_hosts"] == ["10.1.2.3"]


def test_monitored_barrier_names_the_rank_that_never_came(tmp_path, capsys):
    # c10d ProcessGroupGloo.cpp monitoredBarrier: rank 0 names the rank that did not reach the barrier in
    # time, the others say they reached it: a hang whose culprit is named (as a desync report does)
    (tmp_path / "sft.log").write_text(
        "[E ProcessGroupGloo.cpp:138] Rank 3 successfully reached monitoredBarrier, but received errors while "
        "waiting for send/recv from rank 0. Please check rank 0 logs for faulty rank.\n"
        "[E ProcessGroupGloo.cpp:138] [Rank 0]: Rank 2 failed to pass monitoredBarrier in 30000 ms\n"
        "[E ProcessGroupGloo.cpp:138] Rank 1 successfully reached monitoredBarrier, but received errors while "
        "waiting for send/recv from rank 0. Please check rank 0 logs for faulty rank.\n"
        " Original exception: \n"
        "[../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 30000ms for recv "
        "operation to complete\n")
    rc, doc, err = analyze_json(capsys, tmp_path / "sft.log")
    job = doc["job"]
    assert (job["verdict"], job["culprit_ranks"], job["timed_out_ranks"]) == ("nccl_deadlock", [2], [0, 1, 3])
    assert job["collective"]["op"] == "monitored_barrier" and job["culprit_evidence"] == "monitored_barrier"
    assert not any(f["kind"] == "unexplained_errors" for f in job["findings"])
    # with wait_all_ranks=True rank 0 names every rank that did not come
    (tmp_path / "sft.log").write_text("[Rank 0]: Ranks 1, 2 failed to pass monitoredBarrier in 120000 ms\n")
    rc, doc, err = analyze_json(capsys, tmp_path / "sft.log")
    assert (doc["job"]["verdict"], doc["job"]["culprit_ranks"]) == ("nccl_deadlock", [1, 2])


def test_an_nvidia_smi_q_excerpt_of_its_fabric_section_is_read(tmp_path, capsys):
    # the Fabric section alone, as a GPU operator's driver pod logged it: registration never completed
    (tmp_path / "driver-pod.txt").write_text(
        "    Fabric\n"
        "        State                                          : In Progress\n"
        "        Status                                         : N/A\n"
        "        CliqueId                                       : N/A\n")
    rc, doc, err = analyze_json(capsys, tmp_path / "driver-pod.txt")
    (h,) = doc["hosts"]
    assert h["verdict"] == "driver" and [f["kind"] for f in h["findings"]] == ["fabric_not_ready"]
    assert doc["files"][0]["read_as"] == ["nvidia-smi -q"]


@pytest.mark.parametrize("line,category", [
    ("Message: Pod Allocate failed due to device plugin GetPreferredAllocation rpc failed with err: rpc error: "
     "code = Unknown desc = Unable to retrieve list of available devices: error creating nvml.Device 5: nvml: "
     "GPU is lost, which is unexpected", "gpu_hardware"),
    ("E1206 failed to get device 3: NVML call returned: GPU requires reset", "gpu_hardware"),
    # no NVML named: the words alone are nobody's
    ("error: GPU is lost, which is unexpected", "unknown"),
])
def test_nvml_s_return_text_quoted_by_its_caller_says_what_failed(tmp_path, capsys, line, category):
    (tmp_path / "describe.txt").write_text(line + "\n")
    rc, doc, err = analyze_json(capsys, tmp_path / "describe.txt")
    verdicts = [doc["job"]["verdict"]] if doc["job"] else []
    verdicts += [h["verdict"] for h in doc["hosts"]]
    assert category in verdicts, (verdicts, err)


_MLLOG = (':::MLLOG {"namespace": "", "time_ms": 1715848320425, "event_type": "INTERVAL_START", "key": "run_start", '
          '"value": null, "metadata": {"file": "/workspace/ft-llm/custom_callbacks.py", "lineno": 145}}\r\n'
          ':::MLLOG {"namespace": "", "time_ms": 1715850093688, "event_type": "INTERVAL_END", "key": "run_stop", '
          '"value": 0.92, "metadata": {"file": "/workspace/ft-llm/custom_callbacks.py", "lineno": 195, '
          '"samples_count": 3072, "status": "%s"}}\r\n')


def test_an_mlperf_result_log_says_how_its_run_ended(tmp_path, capsys):
    # mlcommons/logging mllog: run_stop's metadata status is "success" or "aborted"
    (tmp_path / "result_0.txt").write_bytes((_MLLOG % "success").encode())
    rc, doc, err = analyze_json(capsys, tmp_path / "result_0.txt")
    assert doc["job"]["verdict"] == "healthy" and doc["job"]["success"][0]["who"] == "MLPerf logging (mllog)"
    (tmp_path / "result_0.txt").write_bytes((_MLLOG % "aborted").encode())
    rc, doc, err = analyze_json(capsys, tmp_path / "result_0.txt")
    assert not (doc["job"] or {}).get("success") and (doc["job"] or {}).get("verdict") != "healthy"


def test_timeouts_in_one_seqnum_with_different_operations_are_mismatched_collectives(tmp_path, capsys):
    # rank 7 waits in a BROADCAST, rank 3 in an ALLREDUCE, both collective #80078 of the default group
    (tmp_path / "launch.log").write_text(
        "[rank7]:[E816 01:45:40.183009389 ProcessGroupNCCL.cpp:607] [Rank 7] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=80078, OpType=BROADCAST, NumelIn=5056, NumelOut=5056, Timeout(ms)=600000) ran for "
        "600071 milliseconds before timing out.\n"
        "[rank3]:[E816 01:45:40.212150935 ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=80078, OpType=ALLREDUCE, NumelIn=2106881, NumelOut=2106881, Timeout(ms)=600000) "
        "ran for 600099 milliseconds before timing out.\n")
    rc, doc, err = analyze_json(capsys, tmp_path / "launch.log")
    job = doc["job"]
    assert job["verdict"] == "application" and job["decided_by"]["kind"] == "collective_mismatch"
    assert "ALLREDUCE vs BROADCAST" in job["decided_by"]["message"]
    # the same operation of the same size on both ranks is one collective: no mismatch
    (tmp_path / "launch.log").write_text((tmp_path / "launch.log").read_text().replace(
        "OpType=BROADCAST, NumelIn=5056, NumelOut=5056", "OpType=ALLREDUCE, NumelIn=2106881, NumelOut=2106881"))
    rc, doc, err = analyze_json(capsys, tmp_path / "launch.log")
    assert not any(f["kind"] == "collective_mismatch" for f in doc["job"]["findings"])


def test_every_rank_joined_and_none_finished_is_the_collective_s_transport(tmp_path, capsys):
    # PyTorch's desync report: all 16 ranks joined #730, none finished, in the run's first step: no rank
    # fell behind and no code path diverged; the collective stalled (unknown, not the application's)
    everyone = ", ".join(str(r) for r in range(16))
    (tmp_path / "train.log").write_text(
        "  0%|          | 0/4325 [00:00<?, ?it/s]\n"
        "[rank6]:[E1115 16:42:37.766242859 ProcessGroupNCCL.cpp:629] [Rank 6] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=730, OpType=ALLREDUCE, NumelIn=544997376, NumelOut=544997376, Timeout(ms)=600000) "
        "ran for 600010 milliseconds before timing out.\n"
        "[rank6]:[E1115 16:42:37.768057301 ProcessGroupNCCL.cpp:1936] Rank 6\n"
        "\t - [6] Timeout at collective: ALLREDUCE, #730\n"
        "\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:\n"
        "\t   - [" + everyone + "] joined but didn't finish collective #730 (count from 1)\n")
    rc, doc, err = analyze_json(capsys, tmp_path / "train.log")
    job = doc["job"]
    assert job["verdict"] == "unknown" and job["decided_by"]["kind"] == "nccl_watchdog_timeout_stalled"
    assert "none finished" in job["decided_by"]["message"] and job["culprit_ranks"] == []
    # some ranks joined and did not finish, the others never joined: those are behind (a culprit), as before
    (tmp_path / "train.log").write_text((tmp_path / "train.log").read_text().replace(everyone, "0, 1, 2"))
    rc, doc, err = analyze_json(capsys, tmp_path / "train.log")
    assert doc["job"]["decided_by"]["kind"] != "nccl_watchdog_timeout_stalled"


def test_dcgmi_nvlink_error_counts_are_read(tmp_path, capsys):
    # dcgmi/Nvlink.cpp's 'NVLINK Error Counts' box: every count zero is a reading of sound links; a count
    # above zero is nvlink_errors on that GPU
    rows = "".join("| Link %d                      |                                                |\n" % n +
                   "".join("| -> %-24s | %-46s |\n" % (name, "{%s%d}" % (name.split()[0], n))
                           for name in ("CRC FLIT Error", "CRC Data Error", "Replay Error", "Recovery Error"))
                   for n in range(2))
    box = ("> dcgmi nvlink -g 1 -e\n+-----------------------------+------------------------------------------------+\n"
           "| NVLINK Error Counts                                                          |\n"
           "| GPU 1                                                                        |\n"
           "+=============================+================================================+\n" + rows +
           "+-----------------------------+------------------------------------------------+\n")
    zero = {k + str(n): "0" for k in ("CRC", "Replay", "Recovery") for n in range(2)}
    (tmp_path / "nvlink-errors.txt").write_text(box.format(**zero))
    rc, doc, err = analyze_json(capsys, tmp_path / "nvlink-errors.txt")
    (h,) = doc["hosts"]
    assert h["verdict"] == "healthy" and not h["findings"], h["findings"]
    (tmp_path / "nvlink-errors.txt").write_text(box.format(**dict(zero, Replay1="17")))
    rc, doc, err = analyze_json(capsys, tmp_path / "nvlink-errors.txt")
    (h,) = doc["hosts"]
    (f,) = [f for f in h["findings"] if f["kind"] == "nvlink_errors"]
    assert "link 1 Replay Error 17" in f["message"] and f["gpu"]["index"] == 1


def test_ibv_devinfo_listing_no_device_is_read_under_any_name(tmp_path, capsys):
    (tmp_path / "node.txt").write_text("ibv_devinfo\nFailed to get IB devices list: Function not implemented\n")
    rc, doc, err = analyze_json(capsys, tmp_path / "node.txt")
    (h,) = doc["hosts"]
    assert h["verdict"] == "ib_network" and "ib_no_devices" in [f["kind"] for f in h["findings"]]


def _wd(rank, seq, op, numel, pg=""):
    return ("[rank%d]:[E ProcessGroupNCCL.cpp:563] %s[Rank %d] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=%d, OpType=%s, NumelIn=%d, NumelOut=%d, Timeout(ms)=600000) ran for 600057 milliseconds "
            "before timing out.\n" % (rank, pg, rank, seq, op, numel, numel))


@pytest.mark.parametrize("lines,said", [
    # one SeqNum, one ALLREDUCE, two sizes: a gradient all-reduce on rank 0, a one-element one on rank 1
    ((_wd(0, 3437, "ALLREDUCE", 4311252), _wd(1, 3437, "ALLREDUCE", 1)), "ALLREDUCE of 1 vs ALLREDUCE of 4311252"),
    # one process group, each rank's first timeout at another SeqNum: their calls do not line up
    ((_wd(0, 7559, "_ALLGATHER_BASE", 8), _wd(1, 7561, "_ALLGATHER_BASE", 8)), "different SeqNums"),
])
def test_timeouts_that_cannot_be_one_collective_are_mismatched_calls(tmp_path, capsys, lines, said):
    (tmp_path / "train.log").write_text("".join(lines))
    rc, doc, err = analyze_json(capsys, tmp_path / "train.log")
    job = doc["job"]
    assert job["verdict"] == "application" and job["decided_by"]["kind"] == "collective_mismatch"
    assert said in job["decided_by"]["message"]


def test_the_one_rank_whose_seqnum_stands_alone_is_the_culprit_of_a_mismatch(tmp_path, capsys):
    # ranks 1 and 2 wait in BROADCAST #532339, rank 0 two collectives later: rank 0's calls went their own way
    (tmp_path / "train.log").write_text(_wd(2, 532339, "BROADCAST", 5164000) + _wd(1, 532339, "BROADCAST", 5164000)
                                        + _wd(0, 532341, "_ALLGATHER_BASE", 513))
    rc, doc, err = analyze_json(capsys, tmp_path / "train.log")
    assert doc["job"]["verdict"] == "application" and doc["job"]["culprit_ranks"] == [0]
    # two ranks, each at its own SeqNum: nobody stands alone against the others
    (tmp_path / "train.log").write_text(_wd(0, 7559, "_ALLGATHER_BASE", 8) + _wd(1, 7561, "_ALLGATHER_BASE", 8))
    rc, doc, err = analyze_json(capsys, tmp_path / "train.log")
    assert doc["job"]["culprit_ranks"] == []


def test_an_early_timeout_is_the_applications_by_inference_so_its_confidence_is_medium(tmp_path, capsys):
    # one rank's watchdog at SeqNum 44, nothing else: early failures are the code's or set-up's by the
    # field's priors, which no line states
    (tmp_path / "train.log").write_text(_wd(1, 44, "ALLREDUCE", 1))
    rc, doc, err = analyze_json(capsys, tmp_path / "train.log")
    job = doc["job"]
    assert job["verdict"] == "application" and job["decided_by"]["kind"] == "early_phase_failure"
    assert job["confidence"] == "medium" and "inferred from when the job failed" in job["confidence_reason"]


def test_timeouts_of_different_process_groups_or_sizes_that_may_differ_are_no_mismatch(tmp_path, capsys):
    # two process groups count their own SeqNums; an all-gather's input is each rank's own part
    (tmp_path / "train.log").write_text(
        _wd(0, 7559, "ALLREDUCE", 8, "[PG ID 1 PG GUID 1 Rank 0] ") + _wd(1, 12, "ALLREDUCE", 8, "[PG ID 2 PG GUID 2 Rank 1] ")
        + _wd(2, 40, "_ALLGATHER_BASE", 8) + _wd(3, 40, "_ALLGATHER_BASE", 16))
    rc, doc, err = analyze_json(capsys, tmp_path / "train.log")
    assert not any(f["kind"] == "collective_mismatch" for f in doc["job"]["findings"])


def test_a_gpu_box_pasted_without_header_or_borders_is_read(tmp_path, capsys):
    # one GPU's box of the table, as an issue quoted it (x25-08): its first row over its second row's
    # memory cell is nvidia-smi's, and the ERR! fields are read
    box = ("|   5  NVIDIA H100 80GB HBM3          On  |   00000000:97:00.0 N/A |                  N/A |\n"
           "|ERR!   50C    P0            N/A  /  N/A  |       0MiB /  81559MiB |     N/A      Default |\n"
           "|                                         |                        |                 ERR! |\n")
    (tmp_path / "gpu5.txt").write_text(box)
    rc, doc, err = analyze_json(capsys, tmp_path / "gpu5.txt")
    (h,) = doc["hosts"]
    assert [f["kind"] for f in h["findings"]] == ["nvml_field_error"] and h["findings"][0]["category"] == "gpu_hardware"
    assert doc["files"][0]["read_as"] == ["nvidia-smi"]
    # the same first row over anything but a memory cell is no GPU box (a table of another tool)
    (tmp_path / "other.txt").write_text(box.splitlines()[0] + "\n| a | b | c |\n")
    rc, doc, err = analyze_json(capsys, tmp_path / "other.txt")
    assert rc == 3 and doc is None  # nothing in it recognised


SLURMD_UNKILLABLE = (
    "[2020-12-14T08:59:01.890] launch task 63532.0 request from UID:1000  GID:1000 HOST:10.0.0.5 PORT:63195\n"
    "[2020-12-14T09:43:55.500] [63532.0] error: *** STEP 63532.0 ON cn106 CANCELLED AT 2020-12-14T09:43:55 ***\n"
    "[2020-12-14T09:44:56.002] [63532.0] error: *** STEP 63532.0 STEPD TERMINATED ON cn106 AT 2020-12-14T09:44:56 "
    "DUE TO JOB NOT ENDING WITH SIGNALS ***\n")


def test_a_slurmd_log_alone_is_read_shown_and_its_node_named_never_dropped_with_exit_3(tmp_path, capsys):
    # x45: Slurm's log is no account of the node's health (no usable evidence), but what it says
    # of the node (a step it could not kill: 'Kill task failed') is shown, not dropped
    (tmp_path / "slurmd.log").write_text(SLURMD_UNKILLABLE)
    rc, doc, err = analyze_json(capsys, tmp_path / "slurmd.log")
    assert rc != 3 and doc is not None, err
    (h,) = doc["hosts"]
    assert h["host"] == "cn106" and h["verdict"] == "unknown"
    kinds = {f["kind"]: f for f in h["findings"]}
    assert kinds["logged_node_failure"]["severity"] == "critical"
    assert "slurmd.log" in kinds["no_evidence"]["message"] and "kern.log" not in kinds["no_evidence"]["message"]
    assert [f["read_as"] for f in doc["files"]] == [["Slurm daemon log"]]
    assert "nothing in it was recognised" not in err


def test_a_slurmd_log_that_says_nothing_of_a_node_above_info_is_read_but_names_no_fault(tmp_path, capsys):
    (tmp_path / "slurmd.log").write_text(SLURMD_UNKILLABLE.splitlines(True)[1])
    rc, _doc, err = analyze_json(capsys, tmp_path / "slurmd.log")
    # read (as Slurm's log), and said to name no host's fault: not refused as unrecognised
    assert rc == 3 and "slurmd.log (Slurm daemon log)" in err and "nothing in it was recognised" not in err
