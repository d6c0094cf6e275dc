# SPDX-License-Identifier: Apache-2.0
"""The active tier's judges (module_utils/gpu_runbook/active): each check's status and findings
from what its tool printed, on the tools' own output formats."""

import os

from gpu_runbook.active import judge_dcgm, judge_ib_pair, judge_inventory, judge_nccl, judge_nvbandwidth, summarize
from gpu_runbook.active.expected import for_gpus
from gpu_runbook.active.nvbandwidth import parse_nvbandwidth
from gpu_runbook.active.perftest import parse_perftest_bw

FORMATS = os.path.join(os.path.dirname(__file__), "..", "fixtures", "formats")


def _read(*parts):
    with open(os.path.join(FORMATS, *parts), encoding="utf-8") as fh:
        return fh.read()


# nccl-tests' src/common.cu layout (all_reduce_perf -b 16G -e 16G -g 8), the busbw figures set here
def _all_reduce(busbw, wrong=0, avg=True):
    lines = ["# nThread 1 nGpus 8 minBytes 17179869184 maxBytes 17179869184 step: 2(factor) warmup iters: 5 "
             "iters: 20 agg iters: 1 validation: 1 graph: 0", "#", "# Using devices"]
    lines += ["#  Rank %2d Group  0 Pid  28893 on     node01 device %2d [0x%02x] NVIDIA H100 80GB HBM3" % (r, r, 0x18 + r)
              for r in range(8)]
    lines += ["#", "#                                                              out-of-place                       "
              "in-place          ",
              "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw"
              "   busbw #wrong",
              "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)"
              "  (GB/s)       ",
              " 17179869184    4294967296     float     sum      -1    65000  %6.2f  %6.2f  %5d    65010  %6.2f  %6.2f"
              "  %5d" % (busbw / 1.75, busbw, wrong, busbw / 1.75, busbw, 0),
              "# Out of bounds values : 0 OK"]
    if avg:
        lines.append("# Avg bus bandwidth    : %g " % busbw)
    return "\n".join(lines) + "\n"


def test_nccl_at_half_the_models_bandwidth_fails_naming_the_figure():
    c = judge_nccl(_all_reduce(230.1), "", 0, gpu_name="NVIDIA H100 80GB HBM3", gpus=8)
    assert c["status"] == "failed" and c["figures"]["busbw_gbps"] == 230.1 and c["figures"]["expected_gbps"] == 460.0
    (f,) = c["findings"]
    assert f["kind"] == "active_busbw_low" and f["severity"] == "critical" and "50%" in f["message"]
    assert judge_nccl(_all_reduce(471.3), "", 0, gpu_name="NVIDIA H100 80GB HBM3", gpus=8)["status"] == "passed"


def test_nccl_wrong_data_or_no_summary_is_no_pass():
    assert judge_nccl(_all_reduce(471.3, wrong=3), "", 0, expected_busbw=400)["findings"][0]["kind"] == \
        "active_data_wrong"
    cut = judge_nccl(_all_reduce(471.3, avg=False).replace("# Out of bounds values : 0 OK\n", ""), "", 1,
                     expected_busbw=400)
    assert cut["status"] == "error" and cut["findings"][0]["kind"] == "active_test_failed"


def test_a_missing_tool_is_not_run_never_passed():
    for judge, args in ((judge_nccl, ()), (judge_nvbandwidth, ()), (judge_ib_pair, ()), (judge_dcgm, (2,))):
        c = judge("", "all_reduce_perf: command not found", 127, *args)
        assert c["status"] == "not_run" and [f["kind"] for f in c["findings"]] == ["active_not_run"]
    s = summarize([judge_nccl("", "", 127)], ["nccl"])
    assert s["status"] == "incomplete" and s["probes"]["active:nccl"]["ok"] is False
    s = summarize([judge_nccl("", "", 127)], ["nccl"], require=["nccl"])
    assert s["status"] == "failed" and any(f["severity"] == "critical" for f in s["findings"])


def test_dcgm_absent_or_its_host_engine_down_is_not_a_pass():
    down = judge_dcgm("", "Error: unable to establish a connection to the specified host: localhost", 255, 2)
    assert down["status"] == "not_run" and "host engine" in down["why"]


def test_dcgm_pass_and_fail_read_from_dcgms_own_output():
    ok = judge_dcgm(_read("dcgmi_diag_json", "01-gcm-testdata-deployment-pass", "dcgmi_diag_j.json"), "", 0, 1)
    assert ok["status"] == "passed"
    bad = judge_dcgm(_read("dcgmi_diag_text", "03-mlengineering-r2-gpu-memory-fail-gpu0", "dcgmi_diag_r2.txt"), "", 0, 2)
    assert bad["status"] == "failed" and bad["findings"]
    assert any((f.get("gpu") or {}).get("index") == 0 for f in bad["findings"])


NVBW = """nvbandwidth Version: v0.7
Built from Git version: v0.7

CUDA Runtime Version: 12040
CUDA Driver Version: 12040
Driver Version: 550.54.15

Device 0: NVIDIA H100 80GB HBM3 (00000000:18:00)
Device 1: NVIDIA H100 80GB HBM3 (00000000:2a:00)

Running host_to_device_memcpy_ce.
memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)
           0         1
 0     55.64     {slow}

SUM host_to_device_memcpy_ce 111.28

Running device_to_device_memcpy_read_ce.
memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)
           0         1
 0       N/A    389.51
 1    389.12       N/A

SUM device_to_device_memcpy_read_ce 778.63
"""


def test_nvbandwidth_names_the_slow_gpu():
    parsed = parse_nvbandwidth(NVBW.format(slow="55.60"))
    assert parsed["tests"]["host_to_device_memcpy_ce"]["cells"][(0, 1)] == 55.6
    assert parsed["tests"]["device_to_device_memcpy_read_ce"]["sum"] == 778.63
    assert (0, 0) not in parsed["tests"]["device_to_device_memcpy_read_ce"]["cells"]  # N/A
    ok = judge_nvbandwidth(NVBW.format(slow="55.60"), "", 0, {"h2d_gbps": 48, "p2p_gbps": 335})
    assert ok["status"] == "passed"
    bad = judge_nvbandwidth(NVBW.format(slow="24.10"), "", 0, {"h2d_gbps": 48, "p2p_gbps": 335},
                            pcis={1: "00000000:2A:00.0"})
    (f,) = bad["findings"]
    assert bad["status"] == "failed" and f["kind"] == "active_nvbandwidth_low"
    assert f["gpu"] == {"pci": "0000:2a:00.0", "index": 1, "uuid": None} and "24.1 GB/s" in f["message"]


# perftest's src/perftest_parameters.h RESULT_LINE / RESULT_FMT_G / REPORT_FMT
IB_WRITE_BW = """---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Dual-port       : OFF		Device         : mlx5_0
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 65536      5000             {bw:.2f}             {bw:.2f}		     0.740000
---------------------------------------------------------------------------------------
"""


def test_ib_write_bw_against_the_links_figure():
    assert parse_perftest_bw(IB_WRITE_BW.format(bw=388.0))["average_gbps"] == 388.0
    assert judge_ib_pair(IB_WRITE_BW.format(bw=388.0), "", 0, 360, "node02", "mlx5_0")["status"] == "passed"
    bad = judge_ib_pair(IB_WRITE_BW.format(bw=96.5), "", 0, 360, "node02", "mlx5_0")
    assert bad["status"] == "failed" and bad["findings"][0]["kind"] == "active_ib_bw_low"
    refused = judge_ib_pair(" Couldn't connect to node02:18515\n Unable to open file descriptor for socket "
                            "connection\n", "", 1, 360, "node02")
    assert refused["status"] == "error" and "Couldn't connect" in refused["why"]


def test_inventory_counts_gpus_and_reads_nvlink():
    xml = _read_any("nvidia-smi-q.xml")
    c = judge_inventory(xml, None, expected_gpus=9)
    assert c["status"] == "failed" and any(f["kind"] == "gpu_missing" for f in c["findings"])
    links = ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n\t Link 0: 26.562 GB/s\n\t Link 1: <inactive>\n"
             "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-2)\n\t Link 0: 26.562 GB/s\n\t Link 1: 26.562 GB/s\n")
    c = judge_inventory(xml, links)
    assert c["figures"]["nvlink_inactive"] == 1 and any(f["kind"] == "nvlink_inactive" for f in c["findings"])
    assert judge_inventory(None, None)["status"] == "not_run"


def _read_any(name):
    for root, _dirs, files in os.walk(os.path.join(FORMATS, "..")):
        if name in files:
            return open(os.path.join(root, name), encoding="utf-8").read()
    raise AssertionError("no %s fixture" % name)


def test_expected_figures_are_for_the_board_they_were_measured_on():
    assert for_gpus("NVIDIA H100 80GB HBM3", 8)["busbw_gbps"] == 460.0
    assert for_gpus("NVIDIA H100 80GB HBM3", 4) is None  # an 8-GPU figure says nothing of 4
    assert for_gpus("NVIDIA A100-SXM4-80GB", 8)["source"].endswith("nd96amsr_a100_v4.conf")


ACTIVE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "active")


def _sample(name):
    with open(os.path.join(ACTIVE, name), encoding="utf-8") as fh:
        return fh.read()


def test_the_judges_on_the_tools_public_samples():
    # gcm's all_reduce_perf fixture stops before its summary: a run without its end is no pass
    c = judge_nccl(_sample("all_reduce_perf_gcm_a100_8gpu.txt"), "", 0, gpu_name="NVIDIA A100-SXM4-80GB", gpus=8)
    assert c["status"] == "error" and "no bus bandwidth" in c["why"]
    # nvbandwidth's README sample: 8 GPUs, 0.00 on the diagonal (an older build) is no path
    c = judge_nvbandwidth(_sample("nvbandwidth_readme_d2d_write_ce.txt"), "", 0, {"p2p_gbps": 270})
    assert c["status"] == "passed" and c["figures"]["device_to_device_memcpy_write_ce"]["min"] == 274.89
    c = judge_nvbandwidth(_sample("nvbandwidth_readme_d2d_write_ce.txt"), "", 0, {"p2p_gbps": 276})
    (f,) = c["findings"]  # one pair under 276 GB/s: GPU 6 from GPU 0 at 274.89
    assert c["status"] == "failed" and "GPU 6 to GPU 0" in f["message"] and f["gpu"]["index"] == 6
    # deepops' ib_write_bw client over RoCE, reported in Gb/s
    c = judge_ib_pair(_sample("ib_write_bw_deepops_client.txt"), "", 0, 90, "10.10.11.11", "mlx5_0")
    assert c["status"] == "passed" and c["figures"]["bw_gbps"] == 92.4
    # DCGM #139's JSON as pasted (cut after a test): unreadable to the end is an error, never a pass
    c = judge_dcgm(_sample("dcgmi_diag_r3_json_dcgm139.txt"), "", 0, 3)
    assert c["status"] == "error"


def test_a_pasted_perftest_report_is_read_by_content_as_a_link_reading(tmp_path):
    """The capture reader (not the tier's own run): ib_write_bw's report under any file name is a
    reading of the link; its average under 85% of the port's rate, or a failure line, is a finding."""
    from gpu_runbook.active.perftest import parse_perftest_report
    from gpu_runbook.cli import analyze_paths
    facts, found = parse_perftest_report(IB_WRITE_BW.format(bw=388.0), expected_gbps=400)
    assert (facts["test"], facts["device"], facts["average_gbps"], found) == ("RDMA_Write BW Test", "mlx5_0", 388.0, [])
    _facts, (low,) = parse_perftest_report(IB_WRITE_BW.format(bw=196.0), expected_gbps=400)
    assert low["kind"] == "active_ib_bw_low" and low["ib"] == {"device": "mlx5_0", "port": 1}
    assert "196.0 Gb/s, under 85% of the link's 400 Gb/s" in low["message"]
    _facts, (failed,) = parse_perftest_report(" Couldn't connect to node02:18515\n", source="bw.log")
    assert failed["kind"] == "active_test_failed" and failed["source"] == "bw.log:1"
    (tmp_path / "n7").mkdir()
    (tmp_path / "n7" / "link-check.log").write_text("some notes first\n\n" + IB_WRITE_BW.format(bw=196.0))
    a = analyze_paths([str(tmp_path / "n7")], expected_ib_rate=400)
    (h,) = a["hosts"]
    assert (h["host"], h["verdict"]) == ("n7", "ib_network")
    assert a["files"][0]["read_as"] == ["ib_write_bw (perftest)"]
    a = analyze_paths([str(tmp_path / "n7")])  # no rate given: the figure alone is no fault
    assert a["hosts"][0]["verdict"] == "healthy"


def test_perftest_refusing_a_port_that_is_not_active_is_a_reading_of_that_port(tmp_path):
    """perftest_parameters.c ctx_set_link_layer: ' Port number %d state is %s' (Down, Init, Armed)
    then "Couldn't set the link layer": the port is not Active (a pod's SR-IOV function here, whose
    output a background job printed after the next prompt)."""
    from gpu_runbook.active.perftest import parse_perftest_report
    from gpu_runbook.cli import analyze_paths
    facts, (down,) = parse_perftest_report(" Port number 1 state is Down\n Couldn't set the link layer\n")
    assert down["kind"] == "ib_port_down" and facts["port_state"] == {"port": 1, "state": "Down"}
    _facts, (init,) = parse_perftest_report(" Port number 2 state is Init\n")
    assert init["kind"] == "ib_port_not_active" and init["category"] == "ib_network"
    (tmp_path / "console.txt").write_text(
        "root@pod-5d99:/# ib_write_bw -a -d mlx5_18 &\n[1] 10690\n"
        "root@pod-5d99:/#  Port number 1 state is Down\n Couldn't set the link layer\n"
        " Couldn't get context for the device\n")
    (h,) = analyze_paths([str(tmp_path / "console.txt")])["hosts"]
    assert (h["host"], h["verdict"]) == ("pod-5d99", "ib_network")
    assert any(f["kind"] == "ib_port_down" and f["source"] == "console.txt:3" for f in h["findings"])


def test_a_finding_that_names_its_gpu_by_index_gets_the_bus_id_the_inventory_read():
    from gpu_runbook.active.run import with_pci
    found = [{"kind": "logged_gpu_error", "gpu": {"pci": None, "index": 3, "uuid": None}},
             {"kind": "x", "gpu": {"pci": "0000:1b:00.0", "index": 0, "uuid": None}},
             {"kind": "y", "gpu": {"pci": None, "index": 9, "uuid": None}}, {"kind": "z", "gpu": None}]
    with_pci(found, {3: "00000000:9A:00.0", 0: "00000000:18:00.0"})
    assert [f["gpu"] and f["gpu"]["pci"] for f in found] == ["0000:9a:00.0", "0000:1b:00.0", None, None]
