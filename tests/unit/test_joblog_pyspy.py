"""py-spy dumps in a job's logs (joblog/pyspy.py): the real samples of
tests/fixtures/formats/pyspy_dump (each case.json says what it shows and its truth), then
synthetic dumps written in py-spy's own format (benfred/py-spy v0.4.2 src/dump.rs: 'Process
<pid>: <cmdline>', 'Python v<ver> (<exe>)', 'Thread <tid> (<status>): "<name>"', frames
'    <func> (<file>:<line>)', --locals blocks at 8/12 spaces; v0.1.x 'Thread 0x../0x.. (idle)' and
'\\t <func> (...)' frames). The handler is tested directly, line by line, as lines.parse_file
would call it (blank lines never reach a handler)."""

import json
import os

import pytest

from gpu_runbook.joblog import lines as joblog_lines
from gpu_runbook.joblog import parse_job_logs
from gpu_runbook.joblog import pyspy
from gpu_runbook.joblog.state import FileState, JobState

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "formats", "pyspy_dump")


def read(text, name="dump.txt", file_rank=None):
    """(JobState, [handler's answer per non-blank line]) after feeding ``text`` to the handler."""
    st, fs = JobState(), FileState(name, file_rank)
    said = []
    for n, raw in enumerate(text.split("\n"), 1):
        if not raw:
            continue
        line = joblog_lines.read_line(raw, "%s:%d" % (name, n), fs, st)
        if line is not None:
            said.append((raw, pyspy.pyspy(line, fs, st)))
    return st, fs, said


def sample(case):
    d = os.path.join(FIX, case)
    with open(os.path.join(d, "case.json")) as fh:
        meta = json.load(fh)
    name = [n for n in os.listdir(d) if n.endswith(".txt")][0]
    with open(os.path.join(d, name)) as fh:
        return meta, fh.read()


def categories(findings):
    return sorted(set(f["category"] for f in findings))


# ------------------------------------------------------------------ the real samples

def test_01_accelerate_zero3_allgather_one_rank():
    meta, text = sample("01-accelerate3104-zero3-hang-allgather")
    st, fs, said = read(text)
    assert all(ok for _raw, ok in said)  # every line is the dump's
    [rec] = st.pyspy
    assert rec["pid"] == 42 and rec["cmd"] is None and rec["rank"] is None  # no Process line: the main tid
    assert [(t["tid"], t["state"], t["name"], len(t["frames"])) for t in rec["threads"]] == [
        ("42", "idle", "MainThread", 13), ("928", "idle", "Thread-1", 5), ("4076", "idle", None, 0),
        ("4077", "idle", None, 0), ("4078", "idle", None, 0), ("4079", "active", None, 6)]
    assert rec["threads"][0]["frames"][0] == ("backward", "torch/autograd/__init__.py", 266)
    what, category, severity, why = pyspy.where(rec)
    # the MainThread is idle in backward (no row); the active thread waits in DeepSpeed's all-gather
    assert (what, category, severity) == ("waiting in all_gather_into_tensor", "nccl_deadlock", "warning")
    assert "thread 4079 (active)" in why and "distributed_c10d.py:2709" in why
    found = pyspy.findings(st)
    # one rank waiting and none dumped elsewhere: the job hangs in NCCL (its cause, the rank that did not
    # arrive, is among those not dumped), as a watchdog timeout without a culprit reads
    assert len(found) == 1 and found[0]["kind"] == "pyspy_collective_wait" and found[0]["severity"] == "warning"
    assert categories(found) == [meta["truth"]["category"]] == ["nccl_deadlock"]
    assert pyspy.culprit_ranks(st) == []


def test_02_bigscience_dataloader_deadlock():
    meta, text = sample("02-bigscience-tr11-dataloader-deadlock-single-rank")
    st, fs, said = read(text)
    [rec] = st.pyspy
    assert rec["pid"] == 1439102 and len(rec["threads"][0]["frames"]) == 17
    assert rec["threads"][0]["frames"][-1] == ("<module>", "pretrain_gpt.py", 249)
    what, category, severity, why = pyspy.where(rec)
    assert (what, category, severity) == ("waiting in the DataLoader (_try_get_data)", "dataloader", "warning")
    assert "innermost: wait (threading.py:306)" in why
    found = pyspy.findings(st)
    assert [f["kind"] for f in found] == ["logged_dataloader_error"]
    assert categories(found) == [meta["truth"]["category"]] == ["dataloader"]
    assert pyspy.culprit_ranks(st) == []


def test_03_bigscience_condensed_two_nodes():
    meta, text = sample("03-bigscience-tr11-eval-hang-2node-condensed")
    st, fs, said = read(text)
    # the author's headings end a dump and are left to the other handlers
    assert [raw for raw, ok in said if not ok] == ["Node 48:", "4 in:", "1 in:", "3 in:", "Node 49", "4 in:", "4 in:"]
    pids = [r["pid"] for r in st.pyspy]
    assert len(pids) == 16 == len(set(pids))
    by_pid = {r["pid"]: r for r in st.pyspy}
    # condensed: the frameless headers share the stack printed after the last one (not empty stacks)
    assert all(len(r["threads"]) == 1 and r["threads"][0]["frames"] for r in st.pyspy)
    assert by_pid[688510]["threads"][0]["frames"] == by_pid[599213]["threads"][0]["frames"]
    assert by_pid[688510]["threads"][0]["frames"][1] == ("_bcast_pipe_scalar", "deepspeed/runtime/pipe/engine.py", 542)
    assert by_pid[686185]["threads"][0]["frames"][0] == ("recv", "torch/distributed/distributed_c10d.py", 1002)
    wheres = {pid: pyspy.where(r)[:3] for pid, r in by_pid.items()}
    assert sum(1 for w in wheres.values() if w[0] == "waiting in broadcast") == 7
    assert sum(1 for w in wheres.values() if w[0] == "waiting in all_reduce") == 4
    assert sum(1 for w in wheres.values() if w[0] == "waiting in recv") == 4
    assert wheres[688514] == ("waiting in the DataLoader (_try_get_data)", "dataloader", "warning")
    found = pyspy.findings(st)
    assert len(found) == 4  # broadcast, DataLoader, all_reduce, recv
    [blamed] = [f for f in found if "likely culprit" in f["message"] and "pid 688514 is" in f["message"]]
    assert blamed["kind"] == "logged_dataloader_error" and "15 other dumped process(es)" in blamed["message"]
    # the author: 'possibly ... the first process 688514 has moved on missing the syncing on
    # broadcast'. The case's truth (application) is the authors' conclusion from the fix (a
    # DeepSpeed rollback, later a barrier before eval); the stacks show where 688514 is, which is
    # what the dump can say: no hardware, driver or network category is claimed
    assert meta["truth"]["category"] == "application"
    assert set(categories(found)) <= {"dataloader", "unknown", "application"}
    assert all("elsewhere: pid 688514" in f["message"] for f in found if f is not blamed)
    assert pyspy.culprit_ranks(st) == []  # the condensed dump names no ranks


# ------------------------------------------------------------------ synthetic dumps (py-spy's format)

ALL_REDUCE = """\
Thread {pid} (active+gil): "MainThread"
    all_reduce (torch/distributed/distributed_c10d.py:2050)
    wrapper (torch/distributed/c10d_logger.py:75)
    _reduce_grads (train.py:88)
    train_step (train.py:120)
    <module> (train.py:210)
Thread {pid2} (idle): "Thread-1"
    wait (threading.py:324)
    run (tqdm/_monitor.py:60)
    _bootstrap_inner (threading.py:1016)
"""

DATALOADER = """\
Thread {pid} (idle): "MainThread"
    wait (threading.py:324)
    get (queue.py:180)
    _try_get_data (torch/utils/data/dataloader.py:1133)
    _get_data (torch/utils/data/dataloader.py:1294)
    _next_data (torch/utils/data/dataloader.py:1332)
    __next__ (torch/utils/data/dataloader.py:631)
    train_step (train.py:115)
    <module> (train.py:210)
Thread {pid2} (active): "Thread-2 (_pin_memory_loop)"
    select (selectors.py:416)
    _poll (multiprocessing/connection.py:424)
    get (multiprocessing/queues.py:113)
    do_one_step (torch/utils/data/_utils/pin_memory.py:31)
    _pin_memory_loop (torch/utils/data/_utils/pin_memory.py:54)
"""


def dump(rank, stack, locals_=False):
    pid = 1000 + rank
    head = ("Process %d: /usr/bin/python3 -u train.py --config cfg.yaml --rank %d\n"
            "Python v3.10.12 (/usr/bin/python3.10)\n\n" % (pid, rank))
    body = stack.format(pid=pid, pid2=pid + 50)
    if locals_:  # --locals: 'Arguments:'/'Locals:' at 8 spaces, each variable at 12
        body = body.replace("    all_reduce (torch/distributed/distributed_c10d.py:2050)\n",
                            "    all_reduce (torch/distributed/distributed_c10d.py:2050)\n"
                            "        Arguments:\n            tensor: <Tensor at 0x7f3a2c0>\n"
                            "            op: <RedOpType at 0x7f3a2d0>\n        Locals:\n"
                            "            opts: <AllreduceOptions at 0x7f3a2e0> (x)\n")
    return head + body


def four_ranks(culprit_stack=DATALOADER, culprit=2):
    return "\n".join(dump(r, culprit_stack if r == culprit else ALL_REDUCE, locals_=(r == 0)) for r in range(4))


def test_synthetic_four_ranks_rank2_in_dataloader():
    st, fs, said = read(four_ranks())
    assert all(ok for _raw, ok in said)
    assert [(r["pid"], r["rank"], r["rank_from"], r["python"]) for r in st.pyspy] == [
        (1000 + r, r, "cmdline", "3.10.12") for r in range(4)]
    assert st.pyspy[0]["cmd"] == "/usr/bin/python3 -u train.py --config cfg.yaml --rank 0"
    assert st.pyspy[0]["evidence"].startswith("Process 1000: ")
    # --locals lines are not frames (the '(x)' of a repr included)
    assert [f[0] for f in st.pyspy[0]["threads"][0]["frames"]] == [
        "all_reduce", "wrapper", "_reduce_grads", "train_step", "<module>"]
    # the MainThread decides, not the DataLoader's pin-memory thread, not the tqdm monitor
    assert pyspy.where(st.pyspy[0])[:3] == ("waiting in all_reduce", "nccl_deadlock", "warning")
    assert pyspy.where(st.pyspy[2])[:3] == ("waiting in the DataLoader (_try_get_data)", "dataloader", "warning")
    assert pyspy.culprit_ranks(st) == [2]
    found = pyspy.findings(st)
    assert len(found) == 2
    waiting, blamed = found
    assert waiting["kind"] == "logged_error" and waiting["rank"] == 0 and "ranks 0,1,3" in waiting["message"]
    assert "elsewhere: rank 2 / pid 1002" in waiting["message"]
    assert blamed["kind"] == "logged_dataloader_error" and blamed["rank"] == 2
    assert "likely culprit" in blamed["message"] and "(all_reduce)" in blamed["message"]
    at = four_ranks().split("\n").index("Process 1002: /usr/bin/python3 -u train.py --config cfg.yaml --rank 2")
    assert blamed["source"] == "dump.txt:%d" % (at + 1) and blamed["name"] == "py-spy"


def test_parse_file_with_the_handler_first(monkeypatch):
    """What the lead wires: the handler first in HANDLERS, every line read (no prefilter)."""
    monkeypatch.setattr(joblog_lines, "HANDLERS", (pyspy.pyspy,) + joblog_lines.HANDLERS)
    monkeypatch.setattr(joblog_lines, "PREFILTER", False)
    st = JobState()
    joblog_lines.parse_file("dumps.txt", four_ranks() + "[W] training resumed\n", st)
    assert len(st.pyspy) == 4 and pyspy.culprit_ranks(st) == [2]
    assert st.files_read["dumps.txt"]


def test_checkpoint_writer_while_others_wait_in_barrier():
    save = """\
Thread {pid} (active): "MainThread"
    write (zipfile.py:1140)
    write_record (torch/serialization.py:742)
    _save (torch/serialization.py:967)
    save (torch/serialization.py:881)
    _save_checkpoint (transformers/trainer.py:2410)
    train (train.py:300)
"""
    barrier = """\
Thread {pid} (idle): "MainThread"
    barrier (torch/distributed/distributed_c10d.py:4160)
    _save_checkpoint (transformers/trainer.py:2420)
    train (train.py:300)
"""
    st, _fs, _said = read("\n".join(dump(r, save if r == 0 else barrier) for r in range(8)))
    what, category, severity, _why = pyspy.where(st.pyspy[0])
    assert (what, category) == ("in checkpoint I/O (write_record)", "application")
    # the others, inside the trainer's checkpoint too, wait in its barrier: innermost first
    assert pyspy.where(st.pyspy[1])[0] == "waiting in barrier"
    assert pyspy.culprit_ranks(st) == [0]
    [stall] = [f for f in pyspy.findings(st) if f["kind"] == "checkpoint_save_stall"]
    assert stall["severity"] == "critical" and stall["category"] == "application" and stall["rank"] == 0


def test_checkpoint_alone_is_not_a_stall():
    load = 'Thread 7 (active): "MainThread"\n    _load (torch/serialization.py:1500)\n    main (t.py:3)\n'
    st, _fs, _said = read(load)
    assert pyspy.where(st.pyspy[0])[:2] == ("in checkpoint I/O (_load)", "application")
    assert [f["kind"] for f in pyspy.findings(st)] == ["logged_application_error"]


def test_native_cuda_sync_the_gpu_may_be_stuck():
    text = ('Process 31: python train.py\nPython v3.11.9 (/opt/conda/bin/python3.11)\n'
            'Thread 31 (active): "MainThread"\n'
            '    0x7f3c1a2b3c4d (libcuda.so.535.104.05)\n'
            '    cudaStreamSynchronize (libcudart.so.12)\n'
            '    at::native::_local_scalar_dense_cuda (libtorch_cuda.so)\n'
            '    THPVariable_item (libtorch_python.so)\n'
            '    train_step (train.py:130)\n'
            '    <module> (train.py:210)\n')
    st, _fs, _said = read(text)
    what, category, severity, why = pyspy.where(st.pyspy[0])
    assert (category, severity) == ("unknown", "warning")
    assert what == "in CUDA synchronisation (cudaStreamSynchronize): the GPU itself may be stuck"
    assert pyspy.findings(st)[0]["kind"] == "logged_error"


def test_native_nccl_wait_is_the_collective_not_the_driver():
    text = ('Thread 40 (active): "MainThread"\n'
            '    0x7f3c1a2b3c4d (libcuda.so.1)\n'
            '    cudaEventQuery (libcudart.so.12)\n'
            '    c10d::ProcessGroupNCCL::WorkNCCL::isCompleted (libtorch_cuda.so)\n'
            '    c10d::ProcessGroupNCCL::WorkNCCL::wait (libtorch_cuda.so)\n'
            '    all_reduce (torch/distributed/distributed_c10d.py:2050)\n'
            '    step (train.py:9)\n')
    st, _fs, _said = read(text)
    assert pyspy.where(st.pyspy[0])[:3] == ("waiting in all_reduce", "nccl_deadlock", "warning")


def test_torch_cuda_synchronize_without_native_frames_is_a_wait():
    text = 'Thread 5 (active): "MainThread"\n    synchronize (torch/cuda/__init__.py:954)\n    step (t.py:4)\n'
    st, _fs, _said = read(text)
    assert pyspy.where(st.pyspy[0])[:3] == ("waiting in torch.cuda.synchronize", "nccl_deadlock", "warning")


def test_busy_main_thread_beats_an_idle_background_match():
    text = ('Thread 5 (active+gil): "MainThread"\n    linear (torch/nn/modules/linear.py:116)\n'
            '    forward (model.py:40)\n'
            'Thread 6 (idle): "Thread-3"\n    wait (threading.py:324)\n'
            '    _worker_loop (torch/utils/data/_utils/worker.py:308)\n')
    st, _fs, _said = read(text)
    what, category, severity, _why = pyspy.where(st.pyspy[0])
    assert (category, severity) == ("unknown", "info")
    assert what == "in linear (torch/nn/modules/linear.py:116) <- forward (model.py:40)"


def test_old_format_hex_thread_ids_and_tab_frames():
    # py-spy v0.1.x (src/main.rs print_traces): 'Thread {:#X}/{:#X} ({})' and '\t {} ({}:{})'
    text = ("Thread 0x7F1B2C3D4E50/0x1A2B (active)\n"
            "\t all_reduce (/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py:907)\n"
            "\t step (train.py:9)\n")
    st, _fs, said = read(text)
    assert all(ok for _raw, ok in said)
    [rec] = st.pyspy
    assert rec["pid"] is None and rec["threads"][0]["tid"] == "0x7F1B2C3D4E50"
    assert pyspy.where(rec)[0] == "waiting in all_reduce"


def test_a_dump_ends_at_a_line_not_its_own():
    text = ('Thread 5 (idle): "MainThread"\n    get (queue.py:180)\n'
            '2024-05-01 10:00:00 INFO step 100 loss 2.1\n    later (x.py:1)\n')
    st, fs, said = read(text)
    assert [ok for _raw, ok in said] == [True, True, False, False]
    assert fs.pyspy is None and len(st.pyspy[0]["threads"][0]["frames"]) == 1


def test_process_line_starts_a_new_record_and_subprocess_children_do_not_vote():
    # --subprocesses: a rule of '-', then the child's dump with its 'Parent Process' line
    text = (dump(0, ALL_REDUCE) + "\n" + "-" * 80 + "\n"
            "Process 2001: /usr/bin/python3 -u train.py --config cfg.yaml --rank 0\n"
            "Python v3.10.12 (/usr/bin/python3.10)\n"
            "Parent Process 1000: /usr/bin/python3 -u train.py --config cfg.yaml --rank 0\n\n"
            'Thread 2001 (idle): "MainThread"\n    wait (threading.py:324)\n'
            '    _worker_loop (torch/utils/data/_utils/worker.py:308)\n')
    st, _fs, said = read(text + "\n" + dump(1, ALL_REDUCE))
    assert all(ok for _raw, ok in said)
    assert [(r["pid"], r["parent"]) for r in st.pyspy] == [(1000, None), (2001, 1000), (1001, None)]
    assert pyspy.where(st.pyspy[1])[1] == "dataloader"
    assert pyspy.culprit_ranks(st) == []  # a DataLoader worker waiting is no rank's culprit


@pytest.mark.parametrize("raw,name,rank,how", [
    ("[rank5]: Process 10: python t.py --rank 7", "job.log", 5, "prefix"),        # the prefix wins
    ("Process 10: python t.py --rank=7", "rank-1.log", 7, "cmdline"),             # over the file's rank
    ("Process 10: env LOCAL_RANK=3 python t.py --node_rank 1", "job.log", 3, "cmdline_local_rank"),
    ("Process 10: env RANK=12 LOCAL_RANK=4 python t.py", "job.log", 12, "cmdline"),
    ("Process 10: python t.py --node_rank 1", "rank-1.log", 1, "file"),
    ("Process 10: python t.py", "job.log", None, None),
])
def test_rank_of_a_dumped_process(raw, name, rank, how):
    st, _fs, _said = read(raw + "\n", name=name, file_rank=joblog_lines.rank_from_name(name))
    assert (st.pyspy[0]["rank"], st.pyspy[0]["rank_from"]) == (rank, how)


def test_bounds_and_frames():
    many = 'Thread 9 (idle): "MainThread"\n' + "".join("    f%d (m.py:%d)\n" % (i, i) for i in range(500))
    st, _fs, _said = read(many)
    assert len(st.pyspy[0]["threads"][0]["frames"]) == pyspy.MAX_FRAMES
    assert pyspy.parse_frame("(anonymous namespace)::run (libx.so)") == ("(anonymous namespace)::run", "libx.so", None)
    assert pyspy.parse_frame(r"main (C:\work\train.py:12)") == ("main", r"C:\work\train.py", 12)
    assert pyspy.parse_frame("not a frame") is None
    assert pyspy.where({"threads": [{"tid": "1", "name": None, "state": "idle", "frames": []}]})[1:3] == (
        "unknown", "info")
    assert pyspy.findings(JobState()) == [] and pyspy.culprit_ranks(JobState()) == []


def test_even_split_names_no_culprit():
    text = "\n".join(dump(r, DATALOADER if r in (0, 1) else ALL_REDUCE) for r in range(4))
    st, _fs, _said = read(text)
    assert pyspy.culprit_ranks(st) == []
    assert not any("likely culprit" in f["message"] for f in pyspy.findings(st))


def test_checkpoint_io_words():
    # 'thread' holds no 'read': a checkpoint library's thread helper is not a read
    assert pyspy.classify({"frames": [("_run_thread", "torch/distributed/checkpoint/_async_thread_executor.py", 20),
                                      ("write_data", "torch/distributed/checkpoint/filesystem.py", 600)]})[1] == 1
    assert pyspy.classify({"frames": [("save_for_backward", "torch/autograd/function.py", 30)]}) is None
    assert pyspy.classify({"frames": [("checkpoint", "torch/utils/checkpoint.py", 495)]}) is None  # activation


UNKNOWN_FRAMES = """\
Thread {pid} (active): "MainThread"
    train (megatron/training.py:915)
    pretrain (megatron/training.py:187)
    <module> (pretrain_gpt.py:239)
"""


def test_dumps_with_one_process_elsewhere_and_the_rest_in_collectives_are_a_hang(tmp_path, capsys):
    # the ranks that waited are the dumps in a collective; the one elsewhere is the culprit even
    # when no line names its rank (py-spy printed pids only): a hang, not 'unknown'
    from gpu_runbook import cli
    text = "\n".join(dump(r, UNKNOWN_FRAMES if r == 3 else ALL_REDUCE) for r in range(4))
    text = text.replace("--rank ", "--seed ")  # no rank on the command lines
    (tmp_path / "py-spy.txt").write_text(text)
    assert cli.main(["analyze", "--format", "json", str(tmp_path)]) == 1
    job = json.loads(capsys.readouterr().out)["job"]
    assert job["verdict"] == "nccl_deadlock" and job["pyspy"] == {"waiting": 3, "elsewhere": 1}
    # an even split names nobody: unknown, as a watchdog timeout with no culprit is
    text = "\n".join(dump(r, UNKNOWN_FRAMES if r < 2 else ALL_REDUCE) for r in range(4))
    (tmp_path / "py-spy.txt").write_text(text.replace("--rank ", "--seed "))
    cli.main(["analyze", "--format", "json", str(tmp_path)])
    assert json.loads(capsys.readouterr().out)["job"]["verdict"] == "unknown"


def test_a_thread_waiting_on_a_queue_inside_a_frameworks_data_module_is_the_input_pipeline():
    # fairseq's buffered iterator: the main thread waits for the next batch from its background thread
    dump = ('Thread 0x7FA6E7C01740 (idle): "MainThread"\n'
            "    wait (threading.py:302)\n    get (queue.py:170)\n    __next__ (fairseq/data/iterators.py:648)\n"
            "    train (fairseq_cli/train.py:274)\n")
    job, findings = parse_job_logs({"py-spy-dump.txt": dump})
    (f,) = [f for f in findings if f["category"] == "dataloader"]
    assert "fairseq/data/iterators.py" in f["message"]
    # torch's own pin-memory thread waits on its queue in every healthy run: not this rule's
    pin = dump.replace("fairseq/data/iterators.py:648", "torch/utils/data/_utils/pin_memory.py:52").replace(
        "__next__", "do_one_step")
    job, findings = parse_job_logs({"py-spy-dump.txt": pin})
    assert not [f for f in findings if f["category"] == "dataloader"]


ZERO3_GATHER = """\
Thread {pid} (active): "MainThread"
    all_gather_coalesced (deepspeed/runtime/zero/partition_parameters.py:1254)
    wrapped_fn (deepspeed/utils/nvtx.py:18)
    __all_gather_params_ (deepspeed/runtime/zero/partitioned_param_coordinator.py:464)
    fetch_sub_module (deepspeed/runtime/zero/partitioned_param_coordinator.py:386)
    _pre_forward_module_hook (deepspeed/runtime/zero/parameter_offload.py:275)
    forward (transformers/models/mixtral/modeling_mixtral.py:676)
"""


def test_a_zero3_gather_is_a_collective_and_every_dumped_rank_in_one_is_an_nccl_hang(tmp_path, capsys):
    # DeepSpeed's ZeRO-3 gathers issue the collective themselves (runtime/zero/partition_parameters.py)
    from gpu_runbook import cli
    st, _fs, _said = read(dump(0, ZERO3_GATHER))
    [rec] = st.pyspy
    assert pyspy.where(rec)[:3] == ("waiting in all_gather_coalesced", "nccl_deadlock", "warning")
    # a function of that name elsewhere is not DeepSpeed's gather
    other = ZERO3_GATHER.replace("deepspeed/runtime/zero/partition_parameters.py", "mylib/params.py")
    st, _fs, _said = read(dump(0, other))
    assert pyspy.where(st.pyspy[0])[1] != "nccl_deadlock"
    # every dumped rank waits and none is elsewhere: the job hangs in NCCL, as a watchdog timeout without a
    # culprit reads; the finding says the rank that did not arrive was not dumped
    (tmp_path / "py-spy.txt").write_text("\n".join(dump(r, ZERO3_GATHER) for r in range(2)))
    cli.main(["analyze", "--format", "json", str(tmp_path)])
    job = json.loads(capsys.readouterr().out)["job"]
    assert job["verdict"] == "nccl_deadlock" and job["pyspy"] == {"waiting": 2, "elsewhere": 0}
    [f] = [f for f in job["findings"] if f["kind"] == "pyspy_collective_wait"]
    assert f["category"] == "nccl_deadlock" and "not dumped" in f["message"]


def test_an_nccl_hang_from_dumps_yields_to_a_host_given_beside_them_that_is_not_healthy(tmp_path, capsys):
    # the ranks waited for something: a host whose own log says something is wrong may be it (x10-12: a
    # rank's process in D state on a frozen filesystem), so the job's cause is not called a plain hang
    from gpu_runbook import cli
    (tmp_path / "py-spy.txt").write_text(dump(0, ALL_REDUCE))
    (tmp_path / "node7").mkdir()
    (tmp_path / "node7" / "dmesg.txt").write_text(
        "[Sat Mar  4 04:10:52 2023] INFO: task python:280058 blocked for more than 120 seconds.\n")
    cli.main(["analyze", "--format", "json", str(tmp_path)])
    out = json.loads(capsys.readouterr().out)
    assert out["job"]["verdict"] == "unknown"
    assert any(f["kind"] == "hung_task" for h in out["hosts"] for f in h["findings"])
    # without that host the same dump is a hang
    (tmp_path / "node7" / "dmesg.txt").unlink()
    (tmp_path / "node7").rmdir()
    cli.main(["analyze", "--format", "json", str(tmp_path)])
    assert json.loads(capsys.readouterr().out)["job"]["verdict"] == "nccl_deadlock"
