"""Who the rank is, and application vs infrastructure, in job logs (issue 9).

Line formats are the real ones (the j-* captures under tests/fixtures/real quote their
sources); each test varies the prefix or wording the way real logs do."""

import glob
import json
import os

import pytest

from gpu_runbook.joblog import parse_job_logs
from gpu_runbook.joblog import patterns as P
from tests.unit.scaling import assert_linear

HERE = os.path.dirname(os.path.abspath(__file__))
REAL = os.path.join(HERE, "..", "fixtures", "real")

ECC = ("[E817 17:40:34.227531918 ProcessGroupNCCL.cpp:1515] [PG 0 (default_pg) Rank 12] Process group watchdog "
       "thread terminated with exception: CUDA error: uncorrectable ECC error encountered")
ILLEGAL = ("[PG ID 0 PG GUID 0(default_pg) Rank 2] Process group watchdog thread terminated with exception: "
           "CUDA error: an illegal memory access was encountered")


def _kinds(findings):
    return set(f["kind"] for f in findings)


# ---------------------------------------------------------------- whose line is it

@pytest.mark.parametrize("prefix,rank", [
    ("[rank12]:", 12),                                  # torch >= 2.2
    ("[default0]:[rank12]:", 12),                       # torchrun --tee role prefix (local rank 0) first
    ("[trainer3]:[rank12]:", 12),
    ("[12]:", 12),                                      # TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE='[${rank}]:'
    ("12: [rank12]:", 12),                              # srun --label before torch's own prefix
    ("[80746] [rank12]:", 12),                          # a line number a log viewer added
    ("dinov2-giant-nodes.cn-d003.nolog [stderr] [rank12]:", 12),   # a collector's '<name> [stderr] '
    (" 2025-02-18 12:54 [rank12]:", 12),                # a viewer's time first
])
def test_the_rank_prefix_in_every_form_names_the_rank(prefix, rank):
    job, findings = parse_job_logs({"job.log": prefix + ECC + "\n"})
    assert job["culprit_ranks"] == [rank]
    hw = [f for f in findings if f["kind"] == "cuda_hardware_error"]
    assert hw and hw[0]["rank"] == rank


def test_a_role_prefix_alone_is_a_local_rank_not_a_global_one():
    job, findings = parse_job_logs({"job.log": "[default3]:RuntimeError: CUDA error: uncorrectable ECC error "
                                               "encountered\n"})
    assert job["culprit_ranks"] == []
    assert "cuda_hardware_error" in _kinds(findings)


@pytest.mark.parametrize("text,rank", [
    ("[Rank 5] Watchdog", 5),
    ("[PG 0 Rank 5] x", 5),
    ("[PG 0 (default_pg) Rank 5] x", 5),
    ("[PG ID 0 PG GUID 0(default_pg) Rank 5] x", 5),
    ("[PG ID 0 PG GUID 0 Rank 5] x", 5),
    ("[PG ID 2 PG GUID 3 Rank 1] x", None),           # a rank inside a sub-group is not a global rank
    ("[PG 1 Rank 0] x", None),
])
def test_only_the_default_group_names_a_global_rank(text, rank):
    m = P.MSG_GLOBAL_RANK.search(text)
    assert (int(m.group(1)) if m else None) == rank


def test_the_watchdog_message_names_the_rank_when_the_line_has_no_prefix():
    job, findings = parse_job_logs({"job.log": "  what():  " + ILLEGAL + "\n"})
    assert job["culprit_ranks"] == [2]
    f = [f for f in findings if f["kind"] == "cuda_error"][0]
    assert f["rank"] == 2 and f["category"] == "application"


def test_a_sub_group_watchdog_names_no_culprit():
    job, _ = parse_job_logs({"job.log": "  what():  [PG ID 2 PG GUID 3 Rank 1] Process group watchdog thread "
                                        "terminated with exception: CUDA error: an illegal memory access was "
                                        "encountered\n"})
    assert job["culprit_ranks"] == []


# ---------------------------------------------------------------- the culprit

def _wd(r, seq=808):
    return ("[rank%d]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank %d] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=%d, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, "
            "Timeout(ms)=600000) ran for 600020 milliseconds before timing out." % (r, r, seq))


def test_the_rank_whose_gpu_reports_ecc_is_the_culprit_even_if_it_timed_out_too():
    lines = [_wd(r) for r in range(4)] + ["[rank2]:" + ECC.replace("Rank 12", "Rank 2")]
    job, findings = parse_job_logs({"job.log": "\n".join(lines) + "\n"})
    assert job["culprit_ranks"] == [2]
    assert job["culprit_evidence"] == "cuda_hardware_error"
    assert "nccl_watchdog_timeout_gpu" in _kinds(findings)


def test_an_illegal_address_does_not_outrank_the_silent_rank():
    # ranks 0..2 time out; rank 3 is silent; rank 0 also logs an illegal address (a consequence)
    lines = [_wd(r) for r in range(3)] + ["[rank3]:[I626 06:00:00.1 1 train.py:1] step 1",
                                         "[rank0]:RuntimeError: CUDA error: an illegal memory access was "
                                         "encountered"]
    job, _ = parse_job_logs({"job.log": "\n".join(lines) + "\n"})
    assert job["culprit_ranks"] == [3]


def test_torchrun_log_with_nccl_info_names_host_and_gpu_of_the_culprit():
    """The must-show of issue 9, on line formats taken verbatim from real logs: the ECC line of
    pytorch#113128 (rank 12) and NCCL's own 'comm .. rank .. nranks .. busId' init line (the
    format of NVIDIA/nccl#1814). The two come from different jobs: this is a test of the join."""
    nccl = ("[default0]:[rank12]:hostname-test:984:1257 [4] NCCL INFO comm 0x557fe785f7a0 rank 12 nranks 64 "
            "cudaDev 4 nvmlDev 4 busId 9b000 commId 0x5ae77eb5ea4ec1ee - Init COMPLETE")
    other = ("[default1]:[rank13]:hostname-test2:985:1258 [5] NCCL INFO comm 0x55f01c18e490 rank 13 nranks 64 "
             "cudaDev 5 nvmlDev 5 busId 59000 commId 0x5ae77eb5ea4ec1ee - Init COMPLETE")
    job, findings = parse_job_logs({"job.log": "\n".join([nccl, other, "[default0]:[rank12]:" + ECC]) + "\n"})
    assert job["culprit_ranks"] == [12]
    assert job["rank_map"][12]["host"] == "hostname-test"
    assert job["rank_map"][12]["gpu_pci"] == "0000:9b:00.0"
    assert job["culprit_hosts"] == ["hostname-test"]
    hw = [f for f in findings if f["kind"] == "cuda_hardware_error"][0]
    assert hw["gpu"]["pci"] == "0000:9b:00.0"


# ---------------------------------------------------------------- application vs infrastructure

MISMATCH = ("[rank1]: RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running collective: "
            "CollectiveFingerPrint(SequenceNumber=101, OpType=ALLGATHER, TensorShape=[1]), but Rank 7 is running "
            "collective: CollectiveFingerPrint(SequenceNumber=0OpType=REDUCE).")


def test_mismatched_collectives_are_an_application_bug():
    _, findings = parse_job_logs({"job.log": MISMATCH + "\n" + MISMATCH + "\n"})
    f = [f for f in findings if f["kind"] == "collective_mismatch"]
    assert len(f) == 1
    assert f[0]["category"] == "application"
    assert "1 and 7" in f[0]["message"] and "101 vs 0" in f[0]["message"]


def test_the_older_mismatch_wording_without_the_other_fingerprint():
    line = ("RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running inconsistent "
            "collective: CollectiveFingerPrint(OpType=BROADCAST, TensorShape=[34112], TensorDtypes=Float)")
    _, findings = parse_job_logs({"job.log": line + "\n"})
    assert "collective_mismatch" in _kinds(findings)


@pytest.mark.parametrize("line", [
    "RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA runtime version",
    "RuntimeError: cuda runtime error (35) : CUDA driver version is insufficient for CUDA runtime version at x:74",
    "RuntimeError: CUDA error: forward compatibility was attempted on non supported HW",
    "RuntimeError: CUDA error: system has unsupported display driver / cuda driver combination",
    "AssertionError: The NVIDIA driver on your system is too old (found version 10010).",
])
def test_a_driver_too_old_for_the_runtime_is_driver_not_gpu(line):
    _, findings = parse_job_logs({"job.log": line + "\n"})
    f = [f for f in findings if f["kind"] == "cuda_driver_too_old"]
    assert f and f[0]["category"] == "driver"
    assert "cuda_hardware_error" not in _kinds(findings)


# ---------------------------------------------------------------- hostile input

@pytest.mark.parametrize("make, size", [
    (lambda n: "[" + "a" * n, 1 << 20),
    (lambda n: "[default" + "0" * n, 1 << 20),
    (lambda n: "[rank" * n, 1 << 18),
    (lambda n: " [rank1" * n, 1 << 17),
    (lambda n: "Detected mismatch between collectives on ranks. Rank 1 is running collective: "
               "CollectiveFingerPrint(" * n, 10000),
    (lambda n: "but Rank 1 is running collective: " * n, 30000),
    (lambda n: "[PG ID 0 PG GUID 0" * n + " Rank", 50000),
    (lambda n: "CUDA driver version is insufficient " * n, 30000),
], ids=["bracket", "default", "rank", "rank1", "mismatch", "running", "pg", "cuda"])
def test_new_patterns_are_fast_on_a_1mib_hostile_line(make, size):
    # linear in the line's length: a 1 MiB hostile line costs about 8 times its eighth, never its square
    # (~2 s for the slowest: every vocabulary row looked for in 2 MiB); timed as a ratio, not by the clock
    assert_linear(lambda text: parse_job_logs({"job.log": text + "\n" + text}), make, size // 8, factor=8,
                  label="job reader on a hostile line")


# ---------------------------------------------------------------- the real captures of this class

def _cases():
    return sorted(glob.glob(os.path.join(REAL, "j-*", "case.json")))


@pytest.mark.parametrize("case", _cases(), ids=lambda p: os.path.basename(os.path.dirname(p)))
def test_real_capture_ranks_and_kinds(case):
    with open(case, encoding="utf-8") as fh:
        truth = json.load(fh)["truth"]
    d = os.path.dirname(case)
    files = {}
    for name in os.listdir(d):
        if name != "case.json":
            with open(os.path.join(d, name), encoding="utf-8") as fh:
                files[name] = fh.read()
    job, findings = parse_job_logs(files)
    if "culprit_ranks" in truth:
        assert job["culprit_ranks"] == truth["culprit_ranks"]
    kinds = _kinds(findings)
    assert set(truth.get("kinds_present", [])) <= kinds
    assert not set(truth.get("kinds_absent", [])) & kinds
    if truth.get("category") in ("gpu_hardware", "driver", "dataloader", "application"):
        assert any(f["category"] == truth["category"] and f["severity"] == "critical" for f in findings)


def test_there_are_at_least_fifteen_real_cases():
    assert len(_cases()) >= 15
