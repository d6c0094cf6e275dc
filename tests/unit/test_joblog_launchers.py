"""Launcher prefixes, nccl-tests output, NCCL RAS reports, launch skew, SIGKILL, checkpoint
stalls and terminal-wrapped lines (joblog/launchers.py, nccl_tests.py, launch_lines.py,
text.logical_lines). Lines quoted from public issues name their source; lines built for a
case the public threads do not show are marked synthetic and follow the format's source."""

import pytest

from gpu_runbook.joblog import parse_job_logs
from gpu_runbook.joblog import launchers
from gpu_runbook.joblog.text import logical_lines, wrap_width
from tests.unit.scaling import assert_linear


def kinds(findings):
    return set(f["kind"] for f in findings)


# ------------------------------------------------------------------ launcher prefixes

def test_mpirun_tag_output_gives_rank_and_nccl_host():
    # horovod/horovod#3625 (mpirun --tag-output): '[jobid,rank]<stdout>:' then NCCL's host:pid:tid
    log = ("[1,0]<stdout>:biomind:6502:6588 [0] misc/argcheck.cc:39 NCCL WARN AllReduce : invalid root 0 "
           "(root should be in the 0..-1 range)\n"
           "[1,1]<stdout>:biomind:6503:6591 [1] misc/argcheck.cc:39 NCCL WARN AllReduce : invalid root 0 "
           "(root should be in the 0..-1 range)\n")
    job, _ = parse_job_logs({"slurm-1.out": log})
    assert job["rank_map"][0]["host"] == "biomind"
    assert job["rank_map"][1]["host"] == "biomind"


def test_horovodrun_rank_tag():
    # pytorch/ignite#3466: horovodrun's '[rank]<stderr>:'
    log = "[1]<stderr>:RuntimeError: ncclCommInitRank failed: unhandled cuda error (run with NCCL_DEBUG=INFO for details)\n"
    job, findings = parse_job_logs({"job.log": log})
    errs = [f for f in findings if f["kind"] == "nccl_error"]
    assert errs and errs[0]["rank"] == 1


def test_ray_prefix_stripped_and_ip_names_host():
    # ray-project/ray#59778: '(RayWorkerWrapper pid=581, ip=10.225.128.18) k8s17:581:581 [0] NCCL INFO ...'
    raw = ("(RayWorkerWrapper pid=581, ip=10.225.128.18) k8s17:581:581 [0] NCCL INFO P2P Chunksize set to 131072")
    text, rank, host, ip = launchers.strip(raw)
    assert text.startswith("k8s17:581:581 [0] NCCL INFO") and rank is None and ip == "10.225.128.18"
    # synthetic peer error (NCCL's format) naming that address: the peer is resolved to k8s17
    log = raw + "\n" + ("k8s19:2361:2380 [0] NCCL INFO misc/socket.cc:47 -> 3 Connection refused "
                        "10.225.128.18<34567>\n")
    job, _ = parse_job_logs({"job.log": log})
    assert "k8s17" in job["culprit_hosts"]


def test_ray_prefix_without_actor_or_ip():
    text, rank, host, ip = launchers.strip("(pid=77) [rank2]: RuntimeError: boom")
    assert text == "[rank2]: RuntimeError: boom" and ip is None


def test_pdsh_host_prefix_then_torch_rank():
    # huggingface/transformers#22363 (DeepSpeed's pdsh runner): 'gpu1504: ' before the rank's line
    text, rank, host, ip = launchers.strip("gpu1504: [2023-03-24 10:26:51,118] [INFO] [launch.py:142:main] WORLD "
                                           "INFO DICT: {'gpu1504': [0], 'gpu1505': [0]}")
    assert host == "gpu1504" and text.startswith("[2023-03-24")
    # synthetic: the same pdsh prefix before PyTorch's '[rankN]:' (torch >= 2.2)
    log = ("gpu1505: [rank1]:[E324 10:40:00.1 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective "
           "operation timeout: WorkNCCL(SeqNum=9000, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
           "ran for 600011 milliseconds before timing out.\n")
    job, _ = parse_job_logs({"job.log": log})
    assert job["timed_out_ranks"] == [1]
    assert job["rank_map"][1]["host"] == "gpu1505"


def test_pdsh_ip_prefix_maps_address_to_nccl_host():
    # NVIDIA/nccl#969: '10.10.23.10: so-ucloud-10-10-23-10:1307367:1307586 [0] ...'
    raw = ("10.10.23.10: so-ucloud-10-10-23-10:1307367:1307586 [0] NCCL INFO proxy.cc:520 -> 5")
    text, rank, host, ip = launchers.strip(raw)
    assert host == "10.10.23.10" and text.startswith("so-ucloud-10-10-23-10:1307367")


def test_words_that_are_not_hosts_are_kept():
    for line in ("RuntimeError: CUDA error: unknown error", "rank0: hello", "epoch1: loss 0.3",
                 "step100: x", "Traceback (most recent call last):", "NCCL INFO x: y",
                 "node: no digit here", "k8s17:581:581 [0] NCCL INFO Trees"):
        text, rank, host, ip = launchers.strip(line)
        assert text == line and host is None, line


def test_upper_rank_prefix():
    text, rank, host, ip = launchers.strip("[RANK 1] Training step 3 failed")
    assert rank == 1 and text == "Training step 3 failed"
    text, rank, host, ip = launchers.strip("[trainer0|3]: hello")
    assert text == "hello" and rank is None


# ------------------------------------------------------------------ nccl-tests

# NVIDIA/nccl#948 (mpirun, 2 nodes x 4 GPUs); the paste ends after the first row: a cut-off run
NCCL_TESTS_948 = """# nThread 1 nGpus 4 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid 272562 on   lrdn3166 device  0 [0x1d] NVIDIA PG506-243
#  Rank  1 Group  0 Pid 272562 on   lrdn3166 device  1 [0x56] NVIDIA PG506-243
#  Rank  2 Group  0 Pid 272562 on   lrdn3166 device  2 [0x8f] NVIDIA PG506-242
#  Rank  3 Group  0 Pid 272562 on   lrdn3166 device  3 [0xc8] NVIDIA PG506-242
#  Rank  4 Group  0 Pid 843876 on   lrdn3171 device  0 [0x1d] NVIDIA PG506-243
#  Rank  5 Group  0 Pid 843876 on   lrdn3171 device  1 [0x56] NVIDIA PG506-243
#  Rank  6 Group  0 Pid 843876 on   lrdn3171 device  2 [0x8f] NVIDIA PG506-242
#  Rank  7 Group  0 Pid 843876 on   lrdn3171 device  3 [0xc8] NVIDIA PG506-242
#
#                                                              out-of-place                       in-place          
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       
           8             2     float     sum      -1    32.47    0.00    0.00      0
"""


def test_nccl_tests_device_list_fills_rank_map():
    job, findings = parse_job_logs({"nccl.log": NCCL_TESTS_948})
    assert job["world_size"] == 8
    assert job["rank_map"][5] == {"host": "lrdn3171", "gpu_pci": "0000:56:00.0", "local_rank": 1}
    assert job["nccl_tests"]["hosts"] == ["lrdn3166", "lrdn3171"]
    # the paste stops after one row: never the end summary -> not a healthy run
    assert "nccl_tests_incomplete" in kinds(findings)
    assert job["nccl_tests"]["complete"] is False


def test_nccl_tests_domain_bus_device_and_old_header():
    # NVIDIA/nccl-tests#294 ('[0002:00:01]') and #82 (older builds: no 'Group')
    log = ("#  Rank  8 Group  0 Pid 739786 on     h100-4 device  0 [0002:00:01] NVIDIA H100 80GB HBM3\n"
           "#   Rank  1 Pid   9210 on v100-gpu-5 device  0 [0x00] Tesla V100-PCIE-16GB\n")
    job, _ = parse_job_logs({"nccl.log": log})
    assert job["rank_map"][8]["gpu_pci"] == "0002:00:01.0" and job["rank_map"][8]["host"] == "h100-4"
    assert job["rank_map"][1]["host"] == "v100-gpu-5"


def test_nccl_tests_wrong_column_is_data_corruption():
    # synthetic: one row of the #wrong table (nccl-tests' format, as in NVIDIA/nccl-tests#287) with
    # a non-zero #wrong, and the summary line NVIDIA/nccl-tests#7 reports ('248 FAILED')
    log = ("#  Rank  0 Group  0 Pid   8756 on     Meowth device  0 [0x01] NVIDIA GeForce GTX 1050 Ti\n"
           "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
           "busbw #wrong\n"
           "     1048576        262144     float     sum      -1    325.1    3.23    3.23      0    322.4    3.25    "
           "3.25     12\n"
           "# Out of bounds values : 248 FAILED\n"
           "# Avg bus bandwidth    : 1.2\n")
    job, findings = parse_job_logs({"nccl.log": log})
    wrong = [f for f in findings if f["kind"] == "nccl_tests_wrong_results"]
    assert wrong and wrong[0]["category"] == "gpu_hardware"
    assert job["nccl_tests"]["wrong_rows"] == 1 and job["nccl_tests"]["out_of_bounds"] == 248
    assert job["culprit_hosts"] == ["Meowth"]      # one host ran it: its wrong data are that host's


def test_nccl_tests_whose_ranks_repeat_on_another_host_ran_one_test_per_host():
    # nccl-tests built without MPI=1 under mpirun: each process lists ranks 0..1 of its own test and prints
    # its own summary; the figures are single-node ones, the network between the hosts was never used
    head = ("#  Rank  0 Group  0 Pid   3591 on   testgpu1 device  0 [0x03] NVIDIA A100-PCIE-40GB\n"
            "#  Rank  1 Group  0 Pid   3591 on   testgpu1 device  1 [0x03] NVIDIA A100-PCIE-40GB\n")
    other = head.replace("3591", "2451").replace("testgpu1", "testgpu2")
    tail = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 1.80135\n"
    job, findings = parse_job_logs({"output.txt": head + other + tail + tail})
    (f,) = [f for f in findings if f.get("name") == "nccl-tests"]
    assert f["category"] == "nccl_config" and "testgpu1 and on testgpu2" in f["message"]
    # two runs one after the other on one host list their ranks again: that is no mistake
    job, findings = parse_job_logs({"output.txt": head + tail + head.replace("3591", "4000") + tail})
    assert not [f for f in findings if f.get("name") == "nccl-tests"]


def test_nccl_tests_test_failure_line():
    # NVIDIA/nccl-tests#252 (title 'Test NCCL failure common with network error'); synthetic line in the
    # format nccl-tests prints ('<host>: Test NCCL failure common.cu:N '<ncclGetErrorString>'')
    log = " node-1: Test NCCL failure common.cu:1279 'remote process exited or there was a network error'\n"
    job, findings = parse_job_logs({"nccl.log": log})
    errs = [f for f in findings if f["kind"] == "nccl_error"]
    # the test failed on ncclRemoteError: a peer's exit or the network, not established which
    assert errs and errs[0]["category"] == "unknown" and errs[0]["severity"] in ("warning", "critical")


# ------------------------------------------------------------------ NCCL RAS (format: src/ras/client_support.cc)

RAS_DEAD = """Errors
======

DEAD
  1 job process is considered dead (unreachable via the RAS network)
  Process 3487984 on node 172.16.64.213 managing GPU 5

#0-0 (27a079b828ff1a75) INCOMPLETE
  Missing communicator data from 1 rank
  Rank 13 -- GPU 5 managed by process 3487984 on node 172.16.64.213
"""


def test_ras_dead_process_names_rank_and_host():
    # synthetic: NCCL's own format strings (rasOutAppend in src/ras/client_support.cc)
    job, findings = parse_job_logs({"ras.txt": RAS_DEAD})
    assert job["culprit_ranks"] == [13]
    assert "172.16.64.213" in job["culprit_hosts"]
    assert "nccl_ras_unresponsive" in kinds(findings)


def test_ras_mismatch_straggler_minority():
    # synthetic: the minority launched FEWER operations -> they are the stragglers
    log = ("#0-0 (fa93daea854b060b) MISMATCH\n"
           "  Communicator ranks have different AllReduce operation counts\n"
           "  30 ranks have launched up to operation 641\n"
           "  2 ranks have launched up to operation 640\n"
           "  Rank 3 -- GPU 3 managed by process 11 on node nodeA\n"
           "  Rank 4 -- GPU 4 managed by process 12 on node nodeA\n")
    job, findings = parse_job_logs({"ras.txt": log})
    assert job["culprit_ranks"] == [3, 4]


# ------------------------------------------------------------------ launch skew, SIGKILL, checkpoints

def test_store_clients_timeout_is_launch_not_gpu():
    # lewandofskee/MobileMamba#15 title; the DistStoreError wording of pytorch/pytorch#111805
    log = "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 clients joined.\n"
    job, findings = parse_job_logs({"job.log": log})
    f = [x for x in findings if x["kind"] == "launch_rendezvous_timeout"]
    assert f and "1 of 2" in f[0]["message"] and f[0]["category"] == "application"


def test_agent_line_sigkill_local_rank():
    # hpcaitech/ColossalAI#3514
    log = ("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 3 (pid: 812917) of "
           "binary: /data/chenhao/anaconda3/envs/ColossalAI-Chat/bin/python\n")
    job, findings = parse_job_logs({"job.log": log})
    f = [x for x in findings if x["kind"] == "worker_sigkill"]
    assert f and "local rank 3" in f[0]["message"] and f[0]["severity"] == "warning"


def _ckpt_log(save_first=True, saver="", timed_out_rank=7):
    save = "2026-02-18T10:28:25.497Z %s2026-02-18 10:28:25,496 - root - INFO - Saving latest checkpoint\n" % saver
    tmo = ("2026-02-18T10:48:25.681Z [rank%d]:[E218 10:48:25.033625188 ProcessGroupNCCL.cpp:632] [Rank %d] Watchdog "
           "caught collective operation timeout: WorkNCCL(SeqNum=1512677, OpType=ALLREDUCE, NumelIn=306176, "
           "NumelOut=306176, Timeout(ms)=1200000) ran for 1200027 milliseconds before timing out.\n"
           % (timed_out_rank, timed_out_rank))
    return save + tmo if save_first else tmo + save


def test_checkpoint_stall_needs_the_save_before_the_timeout():
    _job, findings = parse_job_logs({"job.log": _ckpt_log()})
    assert "checkpoint_save_stall" in kinds(findings)
    _job, findings = parse_job_logs({"job.log": _ckpt_log(save_first=False)})
    assert "checkpoint_save_stall" not in kinds(findings)
    # the saver itself timed out: it was not the one the others waited for
    _job, findings = parse_job_logs({"job.log": _ckpt_log(saver="[rank7]: ", timed_out_rank=7)})
    assert "checkpoint_save_stall" not in kinds(findings)


def test_loading_a_checkpoint_is_not_saving_one():
    log = _ckpt_log().replace("Saving latest checkpoint", "Loading checkpoint shards: 57% 4/7")
    _job, findings = parse_job_logs({"job.log": log})
    assert "checkpoint_save_stall" not in kinds(findings)


# ------------------------------------------------------------------ wrapped lines

def test_equal_length_nccl_lines_are_not_joined():
    line = "k8s17:581:581 [0] NCCL INFO Channel %02d/0 : 16[17000] -> 18[21000] via P2P/IPC comm 0x5609976f9470 nRanks 32"
    text = "\n".join(line % i for i in range(10)) + "\n"
    out = [l for _n, l in logical_lines(text)]
    assert len(out) == 10


def test_repeated_long_lines_are_not_joined():
    line = ("Waiting in store based barrier to initialize process group for rank: 0, key: store_based_barrier_key:1 "
            "(world_size=4, worker_count=8, timeout=0:30:00)")
    text = "\n".join([line] * 6) + "\n"
    assert wrap_width(text) is None
    assert len(list(logical_lines(text))) == 6


def test_wrapped_watchdog_line_is_joined():
    # huggingface/open-r1#620 (the fixture j2-openr1-620-terminal-wrapped-watchdog has the whole excerpt)
    from tests.real_captures import case_dirs  # noqa: F401 -- the fixture is checked there too
    import os
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.path.join(here, "fixtures", "real", "j2-openr1-620-terminal-wrapped-watchdog", "nccl.log")
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    assert wrap_width(text) == 137
    job, _ = parse_job_logs({"nccl.log": text})
    assert job["collective"] == {"op": "BROADCAST", "seq": 4}
    assert job["timed_out_ranks"] == [1]


# ------------------------------------------------------------------ hostile input

def _hostile(size):
    return ["[" * size, "(" + "a" * size, "1." * (size // 2), "a1-" * (size // 3) + ": x",
            "# Rank " + " " * size, "#  Rank  0 Group  0 Pid 1 on " + "x" * size,
            "  Rank 1 -- GPU " + "9" * size, "Saving " + "x" * size + " checkpoint",
            "checkpoint " + "a " * (size // 2), "Timed out initializing process group in store based barrier on rank: 1, "
            "for key: " + "k" * size, "exitcode " + " " * size, "#0-0 (" + "f" * size,
            "x" * 137 + "\n" + "y" * size]


@pytest.mark.parametrize("which", range(len(_hostile(8))))
def test_new_patterns_are_linear_on_long_lines(which):
    def read(h):
        parse_job_logs({"job.log": h + "\n"})
    # 64 KiB and 512 KiB: both under the 1 MiB a line is cut to (MAX_LINE), where a line that lost its
    # head to the cut is read as other text is, and no size above it reaches a reader
    size = (1 << 20) // 16
    assert_linear(read, lambda n: _hostile(n)[which], size, label=_hostile(8)[which][:20])
    if which < 6:
        assert_linear(launchers.strip, lambda n: _hostile(n)[which], size, label="strip")


def test_garbage_never_raises():
    for junk in ("#  Rank  99999999 Group 0 Pid x on", "[1,2]<stdout>:", "(pid=)", "DEAD\n  Process x on node",
                 "#       size count type\n 1 2 3", "\x00\x1b[31m[RANK 9999999]", "# Out of bounds values : 9" * 50):
        job, findings = parse_job_logs({"job.log": junk})
        assert not [f for f in findings if f["kind"] == "parser_error"], junk


def test_nccl_tests_rows_are_a_table_not_a_wrapped_log_and_validate_without_a_header():
    row = "%12d  %12d     float     sum      -1    50.58    0.00    0.00       0    54.46    0.00    0.00       0"
    header = ("#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw"
              "   busbw  #wrong")
    rows = "\n".join(row % (8 << i, 2 << i) for i in range(6)) + "\n"
    assert len(list(logical_lines(header + "\n" + rows))) == 7   # one row per line, none joined
    for text in (header + "\n" + rows, rows, "".join("        [1,0]<stdout>: " + r + "\n" for r in rows.split("\n") if r)):
        job, _f = parse_job_logs({"job.log": text})
        assert job["nccl_tests"]["result_rows"] == 6 and job["nccl_tests"]["wrong_rows"] == 0, text[:60]


def test_cuda_error_out_of_memory_is_an_oom_and_explains_the_lost_peers():
    text = ("[rank0]: RuntimeError: CUDA error: out of memory\n"
            "n1:1:2 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer n1-ib<5>\n")
    job, findings = parse_job_logs({"job.log": text})
    f = {x["kind"]: x for x in findings}
    assert f["cuda_oom"]["rank"] == 0
    assert f["nccl_peer_closed"]["severity"] == "warning"   # the consequence, not the cause
    assert job["culprit_ranks"] == [0] and "n1-ib" not in job["culprit_hosts"]


def test_a_rank_whose_watchdog_detected_the_timeout_is_not_the_silent_one():
    wd = ("[%d] [rank%d]:[E321 02:07:08.408 ProcessGroupNCCL.cpp:607] [Rank %d] Watchdog caught collective operation "
          "timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600060 "
          "milliseconds before timing out.\n")
    det = ("[%d] [rank%d]:[E321 02:07:08.465 ProcessGroupNCCL.cpp:1664] [PG 1 Rank %d] Exception (either an error or "
           "timeout) detected by watchdog at work: 1580, last enqueued NCCL work: 1582, last completed NCCL work: 1579.\n")
    job, _f = parse_job_logs({"job.log": wd % (1, 0, 0) + wd % (2, 4, 4) + det % (3, 3, 3)})
    assert job["timed_out_ranks"] == [0, 3, 4] and 3 not in job["culprit_ranks"]


def test_an_emitters_message_raised_as_an_exception_is_the_emitters_not_a_bare_exception():
    """PyTorch's DataLoader says 'Too many open files ...' through a RuntimeError at the end of a
    traceback: the DataLoader's message (its table: dataloader) decides, the exception that only
    restates it does not (it was the other way round: the message was dropped as quoted)."""
    text = ("Traceback (most recent call last):\n"
            '  File "/usr/lib/python3/site-packages/torch/utils/data/dataloader.py", line 1017, in _try_get_data\n'
            "    raise RuntimeError(\n"
            "RuntimeError: Too many open files. Communication with the workers is no longer possible. Please "
            "increase the limit using `ulimit -n` in the shell or change the sharing strategy by calling "
            "`torch.multiprocessing.set_sharing_strategy('file_system')` at the beginning of your code\n")
    job, findings = parse_job_logs({"log.txt": text})
    kinds = [f["kind"] for f in findings]
    assert "logged_dataloader_error" in kinds and "python_exception" not in kinds, kinds


def test_the_host_a_pdsh_prefix_names_on_the_failing_line_is_the_jobs_culprit_host():
    # DeepSpeed's multi-node runner: pdsh puts 'host: ' before each line; no rank names the host otherwise
    text = ("gpu-q-13:     ret = input.softmax(dim, dtype=dtype)\n"
            "gpu-q-13: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 896.00 MiB (GPU 2; 79.17 GiB "
            "total capacity; 76.68 GiB already allocated; 381.31 MiB free; 77.24 GiB reserved in total by PyTorch)\n")
    job, findings = parse_job_logs({"train.log": text})
    assert "cuda_oom" in kinds(findings) and job["culprit_hosts"] == ["gpu-q-13"]
    job, findings = parse_job_logs({"train.log": text.replace("gpu-q-13: ", "")})
    assert job["culprit_hosts"] == []


@pytest.mark.parametrize("why", ["No route to host", "Connection timed out", "Connection refused"])
def test_a_node_ssh_could_not_reach_is_named_never_dropped(why):
    # a pasted loop over nodes ('for h in ...; do echo "=== $h ==="; ssh $h nvidia-smi -L; done'):
    # OpenSSH's own words for the node that did not answer (sshconnect.c)
    text = ("=== gpu01 ===\nGPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-aaaaaaaa-1111-2222-3333-444444444444)\n"
            "=== gpu02 ===\nssh: connect to host gpu02 port 22: %s\n" % why)
    job, findings = parse_job_logs({"loop.txt": text})
    (f,) = [f for f in findings if f["kind"] == "host_unreachable"]
    assert "gpu02" in f["message"] and why in f["message"] and f["severity"] == "critical"
    assert job["culprit_hosts"] == ["gpu02"]


def test_ssh_that_connected_names_no_unreachable_node():
    job, findings = parse_job_logs({"loop.txt": "ssh: Could not resolve hostname gpu0x: Name or service not known\n"})
    assert "host_unreachable" not in [f["kind"] for f in findings] and not job["culprit_hosts"]


def test_a_store_the_agents_cannot_reach_after_a_worker_failed_is_teardown_not_a_launch_skew():
    # x46: the tail of a large NeMo run: torchrun's failure summaries, then every agent failing to
    # reach the rendezvous store that the failed node's agent served
    failed = ("E1206 21:41:00.577000 1247 torch/distributed/elastic/multiprocessing/api.py:832] failed (exitcode: 1) "
              "local_rank: 5 (pid: 1660) of binary: /usr/bin/python\n")
    store = ("torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the C10d store "
             "has failed. See inner exception for details.\n")
    _job, findings = parse_job_logs({"server.log": failed + store})
    assert [f["severity"] for f in findings if f["kind"] == "launch_rendezvous_timeout"] in ([], ["info"])
    _job, findings = parse_job_logs({"server.log": store})  # alone (at start-up): the launch
    assert [f["severity"] for f in findings if f["kind"] == "launch_rendezvous_timeout"] == ["critical"]
