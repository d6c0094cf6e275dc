"""joblog: training-job logs -> the rank / host / GPU behind an NCCL timeout.

Fixtures under tests/fixtures/joblog/:
  049..052-*            real NCCL captures (copied from the reference set) with case.json truth
  epoch35-hang-*        4 nodes x 8 GPUs, rank 11 (gpu-r3-n02, GPU 3) goes silent, 31 ranks time out
                        on SeqNum 88341; one combined slurm .out and the same as per-rank files
  desync-report, flight-recorder*, socket-fallback, dataloader-killed, leak-falling-rate,
  early-epoch1, ib-error12-messy (CRLF, ANSI colour, garbage bytes, truncated last line)
"""

import json
import os
import random
import re

import pytest

from gpu_runbook import findings as F
from gpu_runbook.joblog import IBV_WC_STATUS, _busid_to_pci, _rank_from_name, parse_job_logs
from gpu_runbook.vocab import code
from tests.unit.scaling import assert_linear

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "joblog")


def load(case):
    d = os.path.join(FIX, case)
    out = {}
    for name in sorted(os.listdir(d)):
        if name == "case.json":
            continue
        with open(os.path.join(d, name), newline="") as fh:
            out[name] = fh.read()
    return out


def truth(case):
    with open(os.path.join(FIX, case, "case.json")) as fh:
        return json.load(fh)["truth"]


def parse(case, **kw):
    return parse_job_logs(load(case), **kw)


def kinds(findings):
    return [f["kind"] for f in findings]


def one(findings, kind):
    got = [f for f in findings if f["kind"] == kind]
    assert len(got) == 1, (kind, kinds(findings))
    return got[0]


def worst(findings):
    crit = sorted(findings, key=lambda f: -F.SEVERITY_RANK[f["severity"]])
    return crit[0] if crit else None


SYNTHETIC = ["epoch35-hang-combined", "epoch35-hang-per-rank", "desync-report", "flight-recorder",
             "flight-recorder-json", "socket-fallback", "dataloader-killed", "leak-falling-rate",
             "early-epoch1", "ib-error12-messy"]
REAL = ["049-mleng-azure-ib-not-connected-error12", "050-mleng-broken-node-connection-refused",
        "051-mleng-nccl-ib-hca-includes-roce-bond", "052-mleng-nccl-net-ib-8hca-healthy"]


# ------------------------------------------------------------------ contract on every fixture

@pytest.mark.parametrize("case", REAL + SYNTHETIC)
def test_findings_are_valid_and_evidence_is_verbatim(case):
    files = load(case)
    job, findings = parse_job_logs(files)
    clean = {n: F.strip_ansi(t).replace("\x00", "").replace("\r\n", "\n") for n, t in files.items()}
    for f in findings:
        assert f["category"] in F.CATEGORIES and f["severity"] in F.SEVERITIES and f["rung"] in F.RUNGS
        name, _, line = f["source"].rpartition(":")
        assert name in files and line.isdigit(), f["source"]
        physical = clean[name].split("\n")[int(line) - 1]
        first = f["evidence"].split("\n")[0]
        assert first and first in physical, (f["kind"], f["source"], first[:80])
        assert "\x1b" not in f["evidence"] and "\r" not in f["evidence"]
    json.dumps(job)  # JSON-ready (int keys become strings, nothing unserialisable)
    for r, ent in job["rank_map"].items():
        assert isinstance(r, int) and set(ent) == {"host", "gpu_pci", "local_rank"}


# ------------------------------------------------------------------ real captures vs case.json

@pytest.mark.parametrize("case", REAL)
def test_real_capture_category_matches_truth(case):
    job, findings = parse(case)
    want = truth(case)["category"]
    if want == "healthy":
        assert not [f for f in findings if f["severity"] in ("warning", "critical")]
    else:
        assert worst(findings)["category"] == want


def test_049_ib_error12_not_connected():
    t = truth("049-mleng-azure-ib-not-connected-error12")
    job, findings = parse("049-mleng-azure-ib-not-connected-error12")
    f = one(findings, "ib_completion_error")
    assert f["severity"] == "critical" and f["rung"] == "ib_restart"
    assert "IBV_WC_RETRY_EXC_ERR" in f["message"] and "transport retry counter exceeded" in f["message"]
    assert t["remote_peer_ip"] in f["message"]
    err = job["nccl"]["errors"][0]
    assert err["status"] == t["ib_wc_status"] == 12
    assert err["vendor_err"] == t["vendor_err"]          # from the wrapped continuation line
    assert err["direction"] == "Recv"
    assert err["host"] == t["local_host"].split()[0]
    assert err["peer"] == t["remote_peer_ip"]
    assert "vendor err 129 (Recv)" in f["evidence"]        # the wrapped line is kept with its head
    assert job["culprit_hosts"][:2] == ["node-2", "10.2.0.5"]
    assert job["nccl"]["transport"] == "IB"
    assert job["nccl"]["ib_devices"] == ["ibP111p0s0"] and job["nccl"]["roce_devices"] == ["rdmaP1111p0s2"]


def test_050_connection_refused_names_the_broken_peer():
    t = truth("050-mleng-broken-node-connection-refused")
    job, findings = parse("050-mleng-broken-node-connection-refused")
    f = one(findings, "nccl_peer_connection_error")
    assert f["category"] == t["category"] and f["severity"] == "critical" and f["rung"] == "drain"
    assert t["culprit_ip"] in f["message"] and "Connection refused" in f["message"]
    assert t["culprit_ip"] in job["culprit_hosts"]          # unresolved IP: no NCCL line maps it to a host
    assert t["reporting_host"] not in job["culprit_hosts"]
    assert job["nccl"]["version"] == t["nccl_version"]
    assert [e["what"] for e in job["nccl"]["errors"] if e["kind"] == "nccl_error"] == ["unhandled system error"]


def test_051_roce_bond_in_ib_hca_list():
    t = truth("051-mleng-nccl-ib-hca-includes-roce-bond")
    job, findings = parse("051-mleng-nccl-ib-hca-includes-roce-bond")
    assert len(job["nccl"]["ib_devices"]) == t["ib_devices"]
    assert job["nccl"]["roce_devices"] == [t["unwanted_device"].split(":")[0]]
    f = one(findings, "nccl_ib_hca_mixed")
    assert (f["category"], f["severity"], f["rung"]) == ("nccl_config", "warning", "nccl_env")
    assert "NCCL_IB_HCA=^mlx5_bond_0" in f["action"]


def test_052_healthy_8_hca():
    t = truth("052-mleng-nccl-net-ib-8hca-healthy")
    job, findings = parse("052-mleng-nccl-net-ib-8hca-healthy")
    assert findings == []
    assert job["nccl"]["ib_devices"] == t["ib_devices"]
    assert job["nccl"]["oob_interface"] == t["oob_interface"]
    assert job["nccl"]["transport"] == "IB"
    assert job["culprit_ranks"] == [] and job["phase"] == "unknown" and job["collective"] is None


# ------------------------------------------------------------------ the epoch-35 hang

ALL_BUT_11 = [r for r in range(32) if r != 11]


@pytest.mark.parametrize("case", ["epoch35-hang-combined", "epoch35-hang-per-rank"])
def test_epoch35_hang_finds_rank_11(case):
    job, findings = parse(case)
    assert job["world_size"] == 32
    assert job["timed_out_ranks"] == ALL_BUT_11
    assert job["culprit_ranks"] == [11]
    assert job["culprit_hosts"] == ["gpu-r3-n02"]
    assert job["collective"] == {"op": "ALLREDUCE", "seq": 88341}
    assert job["rank_map"][11] == {"host": "gpu-r3-n02", "gpu_pci": "0000:5d:00.0", "local_rank": 3}
    assert job["failed_at"]["epoch"] == 35 and abs(job["failed_at"]["progress"] - 4711 / 7305.0) < 1e-3
    assert job["phase"] == "late"
    assert job["iteration_rate"]["trend"] == "steady"
    assert sorted(job["iteration_rate"]["by_epoch"]) == list(range(1, 36))
    assert job["nccl"]["transport"] == "IB" and len(job["nccl"]["ib_devices"]) == 8
    f = one(findings, "nccl_watchdog_timeout")
    assert (f["category"], f["severity"], f["rung"]) == ("nccl_deadlock", "critical", "drain")
    assert f["rank"] == 11 and f["gpu"]["pci"] == "0000:5d:00.0" and f["gpu"]["index"] == 3
    assert "gpu-r3-n02" in f["action"]
    assert "Watchdog caught collective operation timeout" in f["evidence"]
    assert [g for g in findings if g["severity"] == "critical"] == [f]


def test_combined_and_per_rank_agree():
    a, fa = parse("epoch35-hang-combined")
    b, fb = parse("epoch35-hang-per-rank")
    for k in ("timed_out_ranks", "culprit_ranks", "culprit_hosts", "collective", "world_size", "rank_map", "phase"):
        assert a[k] == b[k], k
    # the combined log also holds srun's and torchrun's own lines (Slurm's cancellation, the elastic
    # agent's exit): their emitters' messages are findings of their own (taxonomy/kinds_vocab.py)
    from gpu_runbook.taxonomy import kinds_vocab
    job_kinds = lambda fs: [k for k in kinds(fs) if k not in kinds_vocab.KINDS]  # noqa: E731
    assert job_kinds(fa) == job_kinds(fb)


def test_rank_map_ignores_sub_communicator_numbering():
    job, _ = parse("epoch35-hang-combined")
    assert len(job["rank_map"]) == 32
    assert job["rank_map"][3]["host"] == "gpu-r3-n01"       # the 8-rank TP comm also says "rank 3" on n02..n04
    assert job["rank_map"][27] == {"host": "gpu-r3-n04", "gpu_pci": "0000:5d:00.0", "local_rank": 3}
    assert job["rank_map"][8]["gpu_pci"] == "0000:18:00.0"


def test_per_rank_truncated_last_line_and_old_format():
    files = load("epoch35-hang-per-rank")
    assert not files["rank-11.log"].endswith("\n")
    assert "SeqNum" in files["rank-0.log"] and "NumelIn" not in files["rank-0.log"]
    job, _ = parse_job_logs({k: v for k, v in files.items() if k != "rank-0.log"})
    assert job["culprit_ranks"] == [11] and job["failed_at"] is None
    assert job["phase"] == "late"                            # SeqNum 88341: far into the run


def test_only_a_few_rank_files_do_not_invent_a_culprit():
    files = load("epoch35-hang-per-rank")
    job, findings = parse_job_logs({"rank-0.log": files["rank-0.log"], "rank-1.log": files["rank-1.log"]})
    assert job["timed_out_ranks"] == [0, 1]
    assert job["culprit_ranks"] == []                       # 30 silent ranks are missing logs, not culprits
    assert one(findings, "nccl_watchdog_timeout")["rank"] is None


# ------------------------------------------------------------------ other culprit sources

def test_desync_report_names_the_lagging_rank():
    job, findings = parse("desync-report")
    assert job["world_size"] is None and job["rank_map"] == {}
    assert job["timed_out_ranks"] == list(range(8))
    assert job["culprit_ranks"] == [11] and job["culprit_evidence"] == "desync_report"
    assert one(findings, "nccl_watchdog_timeout")["rank"] == 11


def test_desync_everyone_joined_gives_no_culprit():
    text = "\n".join(
        ["[rank%d]:[E1202 14:13:11.1 9 ProcessGroupNCCL.cpp:616] [Rank %d] Watchdog caught collective operation "
         "timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600001 "
         "milliseconds before timing out." % (r, r) for r in range(4)] +
        ["[rank0]:\t   - [0, 1, 2, 3] joined but didn't finish collective #7 (count from 1)"])
    job, _ = parse_job_logs({"slurm-1.out": text})
    assert job["timed_out_ranks"] == [0, 1, 2, 3] and job["culprit_ranks"] == []


def test_desync_never_joined_format():
    text = ("[rank0]:[E1202 14:13:11.1 9 ProcessGroupNCCL.cpp:1580] Rank 0\n"
            "[rank0]:\t - [0] Timeout at collective: BROADCAST, #12\n"
            "[rank0]:\t - To our best knowledge, ranks [5, 6] are the lagging ranks that caused this timeout. "
            "They never joined any collectives\n")
    job, findings = parse_job_logs({"out": text})
    assert job["culprit_ranks"] == [5, 6]
    assert job["collective"] == {"op": "BROADCAST", "seq": 12}
    assert job["phase"] == "early"
    assert one(findings, "nccl_watchdog_timeout_app")["category"] == "application"


def test_flight_recorder_text():
    job, findings = parse("flight-recorder")
    assert job["culprit_ranks"] == [11] and job["culprit_evidence"] == "flight_recorder"
    assert len(job["timed_out_ranks"]) == 31


def test_flight_recorder_json_dumps():
    job, _ = parse("flight-recorder-json")
    assert job["culprit_ranks"] == [2] and job["culprit_evidence"] == "flight_recorder"


def test_flight_recorder_scheduled_rank_is_culprit():
    def dump(state):
        return '{"entries": [{"collective_seq_id": 40, "profiling_name": "nccl:all_reduce", "state": "%s"}]}' % state
    job, _ = parse_job_logs({"trace_rank_0": dump("started"), "trace_rank_1": dump("scheduled"),
                             "trace_rank_2": dump("started")})
    assert job["culprit_ranks"] == [1]


def test_last_completed_work_lowest_rank():
    lines = []
    for r, done in ((0, 99), (1, 99), (2, 98), (3, 99)):
        lines.append("[rank%d]:[E1202 1:1:1.1 9 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank %d] "
                     "Exception (either an error or timeout) detected by watchdog at work: %d, last enqueued NCCL "
                     "work: 101, last completed NCCL work: %d." % (r, r, done + 1, done))
    job, _ = parse_job_logs({"a.out": "\n".join(lines)})
    assert job["culprit_ranks"] == [2] and job["culprit_evidence"] == "last_completed_work"


# ------------------------------------------------------------------ causes

def test_socket_fallback():
    job, findings = parse("socket-fallback")
    assert job["nccl"]["transport"] == "Socket"
    f = one(findings, "nccl_socket_fallback")
    assert (f["category"], f["severity"], f["rung"]) == ("nccl_config", "warning", "nccl_env")
    assert "NCCL_IB_DISABLE" in f["evidence"]
    t = one(findings, "nccl_watchdog_timeout_config")
    assert t["category"] == "nccl_config" and t["rung"] == "nccl_env"
    assert job["culprit_ranks"] == [] and len(job["timed_out_ranks"]) == 16


def test_socket_selected_though_ib_devices_exist():
    text = ("h1:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB eth0:10.0.0.1<0>\n"
            "h1:1:2 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
            "h1:1:2 [0] NCCL INFO Using network Socket\n")
    job, findings = parse_job_logs({"x": text})
    assert job["nccl"]["transport"] == "Socket"
    assert one(findings, "nccl_socket_fallback")["rung"] == "nccl_env"


def test_plain_ib_job_has_no_fallback():
    job, findings = parse("epoch35-hang-combined")
    assert "nccl_socket_fallback" not in kinds(findings)


def test_dataloader_worker_killed_with_srun_labels():
    job, findings = parse("dataloader-killed")
    assert job["culprit_ranks"] == [5] and job["culprit_hosts"] == ["gpu-r3-n01"]
    f = [x for x in findings if x["kind"] == "dataloader_worker_killed"][0]
    assert (f["category"], f["rank"]) == ("dataloader", 5) and "Killed" in f["message"]
    assert "dataloader_worker_exited" in kinds(findings)
    t = one(findings, "nccl_watchdog_timeout_app")
    assert t["category"] == "dataloader" and t["rung"] == "fix_application"
    assert job["failed_at"] == {"epoch": 20, "progress": 0.48}
    assert "python_exception" not in kinds(findings)        # the RuntimeError is the DataLoader one


def test_leak_falling_rate_then_cuda_oom():
    job, findings = parse("leak-falling-rate")
    rates = job["iteration_rate"]["by_epoch"]
    assert job["iteration_rate"]["trend"] == "falling"
    assert rates[1] > 3.3 and rates[12] < 1.8
    f = one(findings, "iteration_rate_falling")
    assert (f["category"], f["severity"]) == ("memory_leak", "warning")
    oom = one(findings, "cuda_oom")
    assert (oom["category"], oom["rank"]) == ("memory_leak", 6) and "2.00 GiB" in oom["message"]
    assert job["culprit_ranks"] == [6]
    assert one(findings, "nccl_watchdog_timeout_app")["category"] == "memory_leak"


def test_early_failure_epoch1():
    job, findings = parse("early-epoch1")
    assert job["phase"] == "early" and job["failed_at"] == {"epoch": 1, "progress": 0.03}
    assert job["collective"] == {"op": "BROADCAST", "seq": 57}
    assert job["culprit_ranks"] == [3]
    f = one(findings, "early_phase_failure")
    assert (f["category"], f["rung"]) == ("application", "fix_application")
    t = one(findings, "nccl_watchdog_timeout_app")
    assert (t["category"], t["rung"]) == ("application", "fix_application")
    exc = one(findings, "python_exception")
    assert exc["rank"] == 3 and "KeyError" in exc["message"]


def test_ib_error12_messy_crlf_ansi_garbage():
    files = load("ib-error12-messy")
    text = files["slurm-50600.out"]
    assert "\r\n" in text and "\x1b[" in text and "\x00" in text and not text.endswith("\n")
    job, findings = parse_job_logs(files)
    assert job["culprit_ranks"] == [11] and job["culprit_hosts"] == ["gpu-r3-n02"]
    assert job["failed_at"] == {"epoch": 35, "progress": 0.64}
    f = one(findings, "ib_completion_error")
    assert f["ib"] == {"device": "mlx5_3", "port": None} and f["rank"] == 11
    assert "gpu-r3-n01" in f["message"]                    # the peer IP resolved through the OOB/bootstrap lines
    t = one(findings, "nccl_watchdog_timeout_ib")
    assert (t["category"], t["rung"]) == ("ib_network", "ib_restart")
    errs = [e for e in job["nccl"]["errors"] if e["kind"] == "ib_completion_error"]
    assert errs and all(e["status_name"] == "IBV_WC_RETRY_EXC_ERR" and e["vendor_err"] == 129 for e in errs)
    assert [(e["rank"], e["what"]) for e in job["nccl"]["errors"] if e["kind"] == "nccl_error"] == \
        [(11, "remote process exited or there was a network error")]


# ------------------------------------------------------------------ formats, one by one

@pytest.mark.parametrize("line,status,name,vendor,hca", [
    ("h:1:2 [0] transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion from peer 10.0.0.9<4711> with error 5, "
     "opcode 0, len 0, vendor err 249", 5, "IBV_WC_WR_FLUSH_ERR", 249, None),
    ("h:1:2 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer 10.0.0.9<54862> with status=13 "
     "opcode=0 len=0 vendor err 135 (Recv) localGid fd00::ff22 remoteGidsfd00::ff1f", 13, "IBV_WC_RNR_RETRY_EXC_ERR",
     135, None),
    ("h:1:2 [4] transport/net_ib.cc:1 NCCL WARN NET/IB: Got completion from peer 10.0.0.9<1> with "
     "status=local protection error(4) opcode=IBV_WC_RECV(128) vendor_err=51  hca mlx5_2", 4, "IBV_WC_LOC_PROT_ERR",
     51, "mlx5_2"),
    ("h:1:2 [0] NCCL WARN NET/IBP:Got completion from peer 7.6.13.83<36315> with status=12 opcode=32698 len=32696 "
     "vendor err 129 (Send)", 12, "IBV_WC_RETRY_EXC_ERR", 129, None),
])
def test_ib_completion_formats(line, status, name, vendor, hca):
    job, findings = parse_job_logs({"n.log": line})
    e = job["nccl"]["errors"][0]
    assert (e["status"], e["status_name"], e["vendor_err"], e["hca"]) == (status, name, vendor, hca)
    # what the status means is rdma-core's (vocab/rdma.py): retry exceeded is the path's, a flush a
    # consequence, a protection error GPUDirect's set-up
    row = code("rdma", status)
    f = one(findings, "ib_completion_error" if row["category"] == "ib_network" else row["kind"])
    assert f["category"] == row["category"] and f["severity"] == row["severity"]
    assert IBV_WC_STATUS[status][1] in f["message"]


def test_ib_peer_named_by_many_reporters_is_the_culprit():
    lines = ["[rank%d]:h%d:1:2 [0] NCCL WARN NET/IB : Got completion from peer 10.9.9.9<1> with status=12 opcode=0 "
             "len=0 vendor err 129 (Recv)" % (r, r) for r in range(3)]
    lines.append("hX:7:8 [0] NCCL INFO Bootstrap : Using ib0:10.9.9.9<0>")
    job, _ = parse_job_logs({"o": "\n".join(lines)})
    assert job["culprit_hosts"] == ["hX"]


def test_connection_closed_by_remote_peer():
    line = "n7:11:12 [2] misc/socket.cc:50 NCCL WARN socketProgress: Connection closed by remote peer 10.4.4.4<39181>"
    job, findings = parse_job_logs({"o": line})
    # the peer ended the connection in order: its process ended (why is in its own log), no network fault shown
    f = one(findings, "nccl_peer_closed")
    assert (f["category"], f["severity"], f["rung"]) == ("unknown", "warning", "none")
    assert "10.4.4.4" in f["message"] and job["culprit_hosts"] == ["10.4.4.4"]


@pytest.mark.parametrize("line,category,rung", [
    ("[rank2]:RuntimeError: CUDA error: uncorrectable ECC error encountered", "gpu_hardware", "gpu_reset"),
    ("[rank2]:RuntimeError: CUDA error: an illegal memory access was encountered", "application", "fix_application"),
    ("[rank2]:torch.AcceleratorError: CUDA error: unspecified launch failure", "application", "fix_application"),
])
def test_cuda_errors(line, category, rung):
    job, findings = parse_job_logs({"o": line})
    f = [x for x in findings if x["kind"].startswith("cuda")][0]
    assert (f["category"], f["rung"], f["rank"]) == (category, rung, 2)


def test_unspecified_launch_failure_late_is_hardware():
    text = ("Epoch 30: 50%|#####     | 10/20 [00:03<00:03,  3.00it/s]\n"
            "[rank2]:RuntimeError: CUDA error: unspecified launch failure\n")
    job, findings = parse_job_logs({"o": text})
    assert job["phase"] == "late"
    assert one(findings, "cuda_launch_failure")["category"] == "gpu_hardware"


def test_older_cuda_oom_early_is_application():
    text = ("Epoch 0:  10%|#         | 10/100 [00:03<00:30,  3.00it/s]\n"
            "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity; "
            "14.51 GiB already allocated)\n")
    job, findings = parse_job_logs({"rank-0.log": text})
    f = one(findings, "cuda_oom")
    assert (f["category"], f["rank"]) == ("application", 0) and "20.00 MiB" in f["message"]


def test_host_oom_and_dataloader_timeout():
    text = ("slurmstepd: error: Detected 1 oom_kill event in StepId=4242.0. Some of the step tasks have been "
            "OOM Killed.\n"
            "[rank1]:RuntimeError: DataLoader timed out after 1800 seconds\n")
    job, findings = parse_job_logs({"o": text})
    assert one(findings, "host_oom")["severity"] == "critical"
    assert one(findings, "dataloader_timeout")["rank"] == 1


def test_watchdog_stuck_rank():
    text = ("[rank4]:[E1202 14:00:00.1 9 ProcessGroupNCCL.cpp:1423] [PG ID 0 PG GUID 0(default_pg) Rank 4] "
            "ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring enqueued "
            "collectives.\n")
    job, findings = parse_job_logs({"o": text})
    f = one(findings, "nccl_watchdog_stuck")
    assert f["rank"] == 4 and f["rung"] == "drain"
    assert job["culprit_ranks"] == [4]


def test_watchdog_on_the_tqdm_line_and_oldest_format():
    # shape seen in PyTorch issues: the error is glued to the last progress bar
    text = ("Epoch 0:   6%|\u2588\u2588      | 31870/480000 [6:25:10<96:02:11,  1.38it/s, loss=2.4, v_num=7]"
            "[E ProcessGroupNCCL.cpp:458] [Rank 0] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=95411, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 25133418 milliseconds before "
            "timing out.\n"
            "[E ProcessGroupNCCL.cpp:566] [Rank 1] Watchdog caught collective operation timeout: "
            "WorkNCCL(OpType=BROADCAST, Timeout(ms)=1800000) ran for 1805122 milliseconds before timing out.\n")
    job, findings = parse_job_logs({"o": text})
    assert job["timed_out_ranks"] == [0, 1]
    assert job["failed_at"] == {"epoch": 0, "progress": round(31870 / 480000.0, 4)}
    assert job["phase"] == "early"
    assert one(findings, "nccl_watchdog_timeout_app")["source"] == "o:1"


def test_pg_prefixed_watchdog_variants():
    text = "\n".join([
        "[rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=1580, OpType=_REDUCE_SCATTER_BASE, NumelIn=466119168, NumelOut=58264896, "
        "Timeout(ms)=600000) ran for 600060 milliseconds before timing out.",
        "[PG 1 Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1580, "
        "OpType=_REDUCE_SCATTER_BASE, NumelIn=466119168, NumelOut=58264896, Timeout(ms)=600000) ran for 600067 "
        "milliseconds before timing out.",
    ])
    job, _ = parse_job_logs({"o": text})
    assert job["timed_out_ranks"] == [0, 1]
    assert job["collective"] == {"op": "_REDUCE_SCATTER_BASE", "seq": 1580}


@pytest.mark.parametrize("raw,pci", [("2a000", "0000:2a:00.0"), ("0x6d000", "0000:6d:00.0"),
                                     ("1b000", "0000:1b:00.0"), ("11a010", "0001:1a:01.0")])
def test_busid(raw, pci):
    assert _busid_to_pci(raw.replace("0x", "")) == pci
    line = "h:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 1 cudaDev 0 nvmlDev 0 busId %s commId 0x2 - Init COMPLETE" % raw
    job, _ = parse_job_logs({"x": line})
    assert job["rank_map"][0]["gpu_pci"] == pci


@pytest.mark.parametrize("name,rank", [("rank-3.log", 3), ("logs/train.rank_11.err", 11), ("task7.out", 7),
                                       ("slurm-48213.out", None), ("node3.err", None), ("rank12345678.log", None)])
def test_rank_from_file_name(name, rank):
    assert _rank_from_name(name) == rank


def test_tqdm_variants():
    text = ("Epoch 1: 100%|##########| 10/10 [00:20<00:00,  2.00s/it]\n"
            "Validation DataLoader 0: 100%|##########| 5/5 [00:01<00:00, 50.00it/s]\n"
            "Epoch 2:  10%|#         | 1/10 [00:02<00:18,  2.00s/it]\rEpoch 2:  40%|####      | 4/10 [00:08<00:12,"
            "  2.00s/it]\rEpoch 2:  70%|#######   | 7/10 [00:14<00:06,  2.00s/it]\n"
            "Epoch 3:  50%|#####     | 5/10 [00:08<00:08,  1.60it/s]")
    job, _ = parse_job_logs({"o": text})
    assert job["iteration_rate"]["by_epoch"] == {1: 0.5, 2: 0.5, 3: 1.6}
    assert job["failed_at"] == {"epoch": 3, "progress": 0.5}


def test_unlabelled_resetting_bars_count_epochs_and_erratic_rate():
    bars = []
    for ep, rate in enumerate([3.0, 1.0, 4.0, 0.8, 3.5, 1.1]):
        bars.append(" 50%%|#####     | 50/100 [00:10<00:10,  %.2fit/s]" % rate)
        bars.append("100%%|##########| 100/100 [00:20<00:00,  %.2fit/s]" % rate)
    job, _ = parse_job_logs({"o": "\n".join(bars[:-1])})
    assert job["iteration_rate"]["trend"] == "erratic"
    assert job["failed_at"] == {"epoch": 5, "progress": 0.5}


def test_hf_single_bar_is_run_progress():
    text = ("  3%|3         | 150/5000 [01:10<38:00,  2.13it/s]\n"
            "{'loss': 2.31, 'grad_norm': 1.2, 'learning_rate': 5e-05, 'epoch': 0.09}\n"
            "[rank0]:[E1202 1:1:1.1 9 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=400, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
            "600001 milliseconds before timing out.\n")
    job, findings = parse_job_logs({"o": text})
    assert job["phase"] == "early" and job["failed_at"] == {"epoch": 0, "progress": 0.09}
    assert "early_phase_failure" in kinds(findings)


def test_since_drops_older_timestamped_lines():
    old = ("[rank0]:[E1202 10:00:00.000000 9 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective "
           "operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran "
           "for 600001 milliseconds before timing out.")
    new = old.replace("10:00:00", "14:00:00").replace("SeqNum=5", "SeqNum=9000").replace("rank0", "rank1") \
        .replace("Rank 0", "Rank 1")
    files = {"o": old + "\n" + new + "\n"}
    assert parse_job_logs(files)[0]["timed_out_ranks"] == [0, 1]
    job, _ = parse_job_logs(files, since="2026-12-02T12:00:00")
    assert job["timed_out_ranks"] == [1] and job["collective"]["seq"] == 9000


def test_traceback_exception_is_reported_once():
    text = ("[rank2]:Traceback (most recent call last):\n"
            '[rank2]:  File "t.py", line 3, in <module>\n'
            "[rank2]:    x = y[0]\n"
            "[rank2]:IndexError: list index out of range\n")
    job, findings = parse_job_logs({"o": text})
    f = one(findings, "python_exception")
    assert f["rank"] == 2 and "IndexError" in f["message"] and f["source"] == "o:4"


# ------------------------------------------------------------------ garbage never raises

@pytest.mark.parametrize("value", [None, "", b"\xff\xfe\x00garbage", 42, ["x"], {"a": None, "b": 3}])
def test_odd_inputs(value):
    files = value if isinstance(value, dict) else {"f": value}
    job, findings = parse_job_logs(files)
    assert findings == [] and job["culprit_ranks"] == [] and job["phase"] == "unknown"


def test_random_garbage_yields_nothing():
    rnd = random.Random(7)
    alphabet = "abcXYZ0123456789 []:|%/<>#=(),.-_\t\r\n\x1b\x00" + "\u2588\u00e9"
    text = "".join(rnd.choice(alphabet) for _ in range(200000))
    job, findings = parse_job_logs({"slurm-1.out": text, "rank-3.log": bytes(rnd.randrange(256) for _ in range(50000))})
    assert findings == []
    assert job["culprit_ranks"] == [] and job["timed_out_ranks"] == [] and job["collective"] is None


def test_big_garbage_is_linear_and_finds_nothing():
    block = "x" * 70 + " [E] NCCL %| Rank oom Epoch : \r"   # a marker of every reader in each 500-byte line

    def make(lines):
        return {"slurm-2.out": (block * 5 + "\n") * lines}
    assert_linear(parse_job_logs, make, 1250, label="garbage lines")  # 0.6 MB and 5 MB
    job, findings = parse_job_logs(make(200))
    assert findings == [] and job["culprit_ranks"] == []


@pytest.mark.parametrize("case", SYNTHETIC)
def test_truncated_anywhere_never_raises(case):
    rnd = random.Random(case)
    for name, text in load(case).items():
        for _ in range(5):
            cut = rnd.randrange(len(text) + 1)
            job, findings = parse_job_logs({name: text[:cut]})
            assert isinstance(job, dict) and isinstance(findings, list)


def test_torchrun_failure_summary_maps_rank_to_host_and_srun_oom():
    text = "\n".join([
        "Traceback (most recent call last):",
        '  File "/usr/bin/torchrun", line 8, in <module>',
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        "train.py FAILED",
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2026-12-02_14:13:42",
        "  host      : gpu-r3-n02",
        "  rank      : 11 (local_rank: 3)",
        "  exitcode  : -9 (pid: 41103)",
        "  error_file: <N/A>",
        "  traceback : Signal 9 (SIGKILL) received by PID 41103",
        "srun: error: gpu-r3-n03: task 17: Out Of Memory",
    ])
    job, findings = parse_job_logs({"slurm-9.out": text})
    assert job["rank_map"][11] == {"host": "gpu-r3-n02", "gpu_pci": None, "local_rank": 3}
    assert job["rank_map"][17]["host"] == "gpu-r3-n03"
    oom = one(findings, "host_oom")
    assert oom["rank"] == 17 and "gpu-r3-n03" in oom["message"]
    assert "python_exception" not in kinds(findings)       # ChildFailedError only restates a rank's failure


def test_nccl_remote_error_and_system_error_names():
    text = ("[rank3]:torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
            "NCCLUtils.hpp:275, remote process exited or there was a network error, NCCL version 2.19.3\n"
            "[rank3]:ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
            "prematurely.\n"
            "[rank5]:ncclSystemError: System call (e.g. socket, malloc) or external library call failed or "
            "device error.\n")
    job, findings = parse_job_logs({"o": text})
    got = sorted((e["rank"], e["what"]) for e in job["nccl"]["errors"])
    assert got == [(3, "remote process exited or there was a network error"), (5, "unhandled system error")]
    cats = sorted((f["rank"], f["category"]) for f in findings if f["kind"] == "nccl_error")
    # ncclRemoteError names a peer's exit or the network and establishes neither (NCCL's own table)
    assert cats == [(3, "unknown"), (5, "unknown")]


def test_flight_recorder_dump_rank_from_content():
    def dump(rank, last):
        ents = ",".join('{"collective_seq_id": %d, "profiling_name": "nccl:all_gather", "state": "%s"}'
                        % (s, "completed" if s < last else "started") for s in range(last - 2, last + 1))
        return '{\n  "rank": %d,\n  "entries": [%s]\n}\n' % (rank, ents)
    job, _ = parse_job_logs({"dump-a.json": dump(0, 50), "dump-b.json": dump(1, 49), "dump-c.json": dump(2, 50)})
    assert job["culprit_ranks"] == [1]


def test_rank_from_file_name_reaches_nccl_warn_lines():
    line = ("n9:77:78 [1] transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion from peer 10.1.0.2<1> with "
            "status=12 opcode=0 len=0 vendor err 129 (Send) localGid ::ffff:10.1.0.9 remoteGids::ffff:10.1.0.2\n")
    job, findings = parse_job_logs({"logs/rank-7.err": line})
    f = one(findings, "ib_completion_error")
    assert f["rank"] == 7 and job["rank_map"][7]["host"] == "n9"
    assert job["nccl"]["errors"][0]["direction"] == "Send"


def test_since_accepts_epoch_seconds():
    line = ("2026-12-02 09:00:00 [rank0]: RuntimeError: CUDA error: uncorrectable ECC error encountered\n"
            "2026-12-02 15:00:00 [rank1]: RuntimeError: CUDA error: uncorrectable ECC error encountered\n")
    import calendar
    since = calendar.timegm((2026, 12, 2, 12, 0, 0))
    _, findings = parse_job_logs({"o": line}, since=since)
    assert [f["source"] for f in findings if f["kind"] == "cuda_hardware_error"] == ["o:2"]


def test_rank_behind_on_an_older_seq_is_the_culprit():
    def wd(r, seq):
        return ("[rank%d]:[E1202 14:13:11.1 9 ProcessGroupNCCL.cpp:616] [Rank %d] Watchdog caught collective "
                "operation timeout: WorkNCCL(SeqNum=%d, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, Timeout(ms)=600000) "
                "ran for 600001 milliseconds before timing out." % (r, r, seq))
    text = "\n".join([wd(0, 900), wd(1, 900), wd(2, 899), wd(3, 900)])
    job, _ = parse_job_logs({"o": text})
    assert job["collective"] == {"op": "ALLREDUCE", "seq": 900}
    assert job["timed_out_ranks"] == [0, 1, 2, 3] and job["culprit_ranks"] == [2]


def test_two_rank_job_silent_peer_and_bracketed_epoch_label():
    text = ("h1:5:6 [0] NCCL INFO comm 0xa rank 0 nranks 2 cudaDev 0 busId 1b000 - Init COMPLETE\n"
            "h2:5:6 [0] NCCL INFO comm 0xb rank 1 nranks 2 cudaDev 0 busId 1b000 - Init COMPLETE\n"
            "Epoch [12/40]:  50%|#####     | 5/10 [00:02<00:02,  2.50it/s]\n"
            "[E ProcessGroupNCCL.cpp:828] [Rank 0] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=7000, OpType=ALLGATHER, Timeout(ms)=1800000) ran for 1800400 milliseconds before timing out.\n"
            "h2:5:9 [0] enqueue.cc:100 NCCL WARN Cuda failure 'out of memory'\n")
    job, findings = parse_job_logs({"o": text})
    assert job["failed_at"] == {"epoch": 12, "progress": 0.5}
    assert job["culprit_ranks"] == [1] and job["culprit_hosts"] == ["h2"]
    assert one(findings, "cuda_oom")["rank"] == 1


@pytest.mark.parametrize("since,kept", [("2026-12-31T23:00:00", ["o:2"]), ("2027-01-05", ["o:2"]),
                                        ("2026-12-30", ["o:1", "o:2"])])
def test_since_with_glog_dates_across_new_year(since, kept):
    text = ("[rank0]:[E1231 22:00:00.000000 9 CUDAException.cpp:1] RuntimeError: CUDA error: uncorrectable ECC "
            "error encountered\n"
            "[rank1]:[E0106 01:00:00.000000 9 CUDAException.cpp:1] RuntimeError: CUDA error: uncorrectable ECC "
            "error encountered\n")
    _, findings = parse_job_logs({"o": text}, since=since)
    assert [f["source"] for f in findings if f["kind"] == "cuda_hardware_error"] == kept
