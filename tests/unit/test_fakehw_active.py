"""The testbed's fake active tests (tests/testbed/fakehw.py): dcgmi diag, all_reduce_perf, nvbandwidth,
ib_write_bw print the real tools' formats (public samples in tests/fixtures/active/ and
tests/fixtures/formats/dcgmi_diag_text/), driven per host by the state's ``active`` knobs."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from tests.testbed import core, fakehw
from tests.testbed import scenario as scn

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures")
ACTIVE = os.path.join(FIXTURES, "active")
FAKEHW = os.path.abspath(fakehw.__file__)


def build(sc=None, n=1):
    sc = dict({"name": "active-unit", "hosts": "gpu-a[01-04]"}, **(sc or {}))
    names = scn.host_names(sc, n)
    _job, states, _f = scn.build(sc, names, dict((h, "10.201.0.%d" % (11 + i)) for i, h in enumerate(names)))
    return [states[h] for h in names]


@pytest.fixture
def host(tmp_path, monkeypatch):
    """-> put(state changes) -> runs a fake: run(argv) -> (rc, stdout, stderr)."""
    st = build()[0]
    st["active"] = {"seconds": 0.0, "ib_server_seconds": 0.0}

    class Host:
        root = str(tmp_path)
        state = st

        def save(self):
            fakehw.save(self.state, self.root)

    h = Host()
    h.save()
    monkeypatch.setenv("FAKEHW_ROOT", h.root)
    monkeypatch.delenv("NCCL_TESTS_MIN_BW", raising=False)
    monkeypatch.delenv("NCCL_DEBUG", raising=False)
    return h


def run(capsys, *argv):
    rc = fakehw.main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def categories_of(doc):
    """{category: {test name: [result]}} of dcgmi's JSON."""
    return dict((c["category"], dict((t["name"], t["results"]) for t in c["tests"]))
                for c in doc["DCGM GPU Diagnostic"]["test_categories"])


# ------------------------------------------------------------------------------------------ dcgmi
def test_dcgm_json_parses_and_a_failing_gpu_carries_its_code(host, capsys):
    host.state["gpus"][3]["dcgm_fail"] = {"test": "memory", "error_id": 58}
    host.save()
    rc, out, _ = run(capsys, "dcgmi", "diag", "-r", "2", "-j")
    doc = json.loads(out)
    cats = categories_of(doc)
    assert list(cats) == ["Deployment", "Integration", "Hardware"]
    mem = dict((r["gpu_id"], r) for r in cats["Hardware"]["GPU Memory"])
    assert set(mem) == set(str(i) for i in range(8))
    assert mem["3"]["status"] == "Fail"
    w = mem["3"]["warnings"][0]
    assert w["error_id"] == 58 and w["warning"].startswith("A memory mismatch was detected on GPU 3, but no error "
                                                            "was reported by CUDA or NVML.")
    assert all(r["status"] == "Pass" for g, r in mem.items() if g != "3")
    assert [t for t, res in cats["Deployment"].items() if res[0]["status"] != "Pass"] == []
    assert doc["version"] == "3.3.9" and doc["Driver Version Detected"] == host.state["driver_version"]
    assert rc == 205        # DCGM_ST_NVVS_ISOLATE_ERROR (-51) & 0xff: code 58 isolates the GPU


def test_dcgm_json_is_jsoncpp_styled_like_the_real_output():
    st = build({"gpus": {"count": 1, "model": "NVIDIA T400 4GB"}})[0]
    sw, per, gpus, _ = fakehw._dcgm_run(st, fakehw._dcgm_parse(["diag", "-r", "3", "-j"]))
    ours = fakehw.dcgm_diag_json(st, [], [p for p in per if p[0] != "memtest"], gpus).splitlines()
    with open(os.path.join(ACTIVE, "dcgmi_diag_r3_json_dcgm139.txt")) as fh:
        real = fh.read().splitlines()
    assert ours[:5] == real[:5]                     # {, "DCGM GPU Diagnostic" : , {, "test_categories" : , [
    # the Integration block of DCGM issue #139 (tabs, "key" : , a nested [ / { on its own line), line for line
    start = real.index("\t\t\t{", 6)
    end = real.index("\t\t\t},", start)
    block = real[start:end + 1]
    i = ours.index(block[0], 5)
    assert ours[i:i + len(block)] == [ln.replace('"Skip"', '"Pass"') for ln in block]


@pytest.mark.parametrize("level,want", [
    (1, {"Deployment": 9}),
    (2, {"Deployment": 9, "Integration": ["PCIe"], "Hardware": ["GPU Memory"]}),
    (3, {"Deployment": 9, "Integration": ["PCIe"], "Hardware": ["GPU Memory", "Diagnostic"],
         "Stress": ["Targeted Stress", "Targeted Power", "Memory Bandwidth"]}),
    (4, {"Deployment": 9, "Integration": ["PCIe"], "Hardware": ["GPU Memory", "Diagnostic", "Memtest", "Pulse Test"],
         "Stress": ["Targeted Stress", "Targeted Power", "Memory Bandwidth"]}),
])
def test_dcgm_levels_run_dcgms_tests(host, capsys, level, want):
    rc, out, _ = run(capsys, "dcgmi", "diag", "-r", str(level), "-j")
    cats = categories_of(json.loads(out))
    assert rc == 0
    assert len(cats.pop("Deployment")) == want.pop("Deployment")
    assert dict((c, list(t)) for c, t in cats.items()) == want


def test_dcgm_text_table_is_dcgms_own(host, capsys):
    """With the awsome p4de run's versions and GPUs, the fake prints that real r2 table byte for byte."""
    sample = os.path.join(FIXTURES, "formats", "dcgmi_diag_text", "01-awsome-p4de-r2-all-pass", "dcgmi_diag_r2.txt")
    with open(sample) as fh:
        real = fh.read().splitlines()[1:]            # less the shell prompt line
    host.state["driver_version"] = "535.104.12"
    host.state["active"]["dcgm_version"] = "3.3.3"
    for g in host.state["gpus"]:
        g["name"] = "NVIDIA A100-SXM4-80GB"
    host.save()
    rc, out, _ = run(capsys, "dcgmi", "diag", "-r", "2")
    assert rc == 0 and out.splitlines() == real


def test_dcgm_text_shows_the_failing_gpu_and_its_message_in_45_column_pieces(host, capsys):
    msg = fakehw.dcgm_message(30, 5, direction="d2h", value=4.17, minimum=20.0)
    host.state["gpus"][5]["dcgm_fail"] = {"test": "pcie", "error_id": 30, "message": msg}
    host.save()
    rc, out, _ = run(capsys, "dcgmi", "diag", "-r", "2")
    lines = out.splitlines()
    i = lines.index("| PCIe                      | Pass - GPUs: 0, 1, 2, 3, 4, 6, 7               |")
    assert lines[i + 1] == "|                           | Fail - GPU: 5                                  |"
    assert lines[i + 2].startswith("| Warning                   | Bandwidth of GPU 5 in direction d2h of 4.17")
    pieces = []
    for ln in lines[i + 2:]:
        if not (ln.startswith("| Warning ") or ln.startswith("|                           | ")) or "Stress" in ln:
            break
        pieces.append(ln[30:75])
    assert "".join(pieces).rstrip() == msg          # DisplayVerboseInfo: 45 characters a row, cut mid-word
    assert all(len(ln) == 78 for ln in lines[1:] if ln.startswith(("|", "+")))
    assert msg.endswith("please run a field diagnostic.")
    assert rc == 226        # DCGM_ST_NVVS_ERROR (-30) & 0xff: code 30 does not isolate


def test_dcgm_state_drives_deployment_checks(host, capsys):
    host.state["gpus"][1]["persistence"] = False            # nvidia-smi -pm 0
    host.save()
    rc, out, _ = run(capsys, "dcgmi", "diag", "-r", "1", "-j")
    pm = categories_of(json.loads(out))["Deployment"]["Persistence Mode"][0]
    assert rc == 0 and pm["status"] == "Fail" and pm["gpu_id"] == 1       # 3.3.9 prints a warning as Fail
    assert pm["warnings"][0]["error_id"] == 29 and "Persistence mode for GPU 1 is disabled." in \
        pm["warnings"][0]["warnings"]

    st = build({"faults": {"gpu-a01": [{"type": "dbe_remap", "gpu": 6}]}})[0]      # a row remap is pending
    st["active"] = {"seconds": 0}
    fakehw.save(st, host.root)
    rc, out, _ = run(capsys, "dcgmi", "diag", "-r", "2", "-j")
    cats = categories_of(json.loads(out))
    rr = cats["Deployment"]["Page Retirement/Row Remap"][0]
    assert rr["status"] == "Fail" and rr["warnings"][0]["error_id"] == 85 and rr["gpu_id"] == 6
    assert list(cats) == ["Deployment"]            # nvvs stops after a pending row remap
    assert rc == 226


def test_dcgm_warn_only_exits_zero_and_gpu_list(host, capsys):
    host.state["gpus"][2]["dcgm_fail"] = {"test": "targeted_power", "status": "Warn"}
    host.save()
    rc, out, _ = run(capsys, "dcgmi", "diag", "-r", "3", "-i", "1,2", "-j")
    tp = categories_of(json.loads(out))["Stress"]["Targeted Power"]
    assert [r["gpu_id"] for r in tp] == ["1", "2"] and tp[1]["warnings"][0]["error_id"] == 63
    assert rc == 0


def test_dcgm_hostengine_down_and_embedded(host, capsys):
    host.state["active"]["dcgm"] = "hostengine_down"
    host.save()
    rc, out, _ = run(capsys, "dcgmi", "diag", "-r", "1", "-j")
    assert out == ("Error: unable to establish a connection to the specified host: localhost\n"
                   "Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n")
    assert rc == 235
    host.state["active"]["dcgm"] = "embedded"            # dcgmi diag falls back to an embedded host engine
    host.save()
    rc, out, _ = run(capsys, "dcgmi", "diag", "-r", "1", "-j")
    assert rc == 0 and "Deployment" in categories_of(json.loads(out))


# --------------------------------------------------------------------------------- all_reduce_perf
ROW = re.compile(r"^\s+(\d+)\s+(\d+)\s+float\s+sum\s+-1" + r"\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\d+)" * 2 + r"\s*$")


def nccl_rows(out):
    return [tuple(float(x) for x in m.groups()) for m in (ROW.match(ln) for ln in out.splitlines()) if m]


def avg_line(out):
    return float(re.search(r"^# Avg bus bandwidth    : (\S+) $", out, re.M).group(1))


def test_all_reduce_rows_follow_b_e_f_and_reach_the_knob(host, capsys):
    rc, out, _ = run(capsys, "all_reduce_perf", "-b", "8", "-e", "1G", "-f", "2", "-g", "8")
    rows = nccl_rows(out)
    assert [int(r[0]) for r in rows] == [8 * 2 ** k for k in range(28)]
    assert [int(r[1]) for r in rows] == [8 * 2 ** k // 4 for k in range(28)]
    for r in rows:
        for t, alg, bus in ((r[2], r[3], r[4]), (r[6], r[7], r[8])):
            assert bus == pytest.approx(alg * 2 * 7 / 8, abs=0.011)
            assert r[0] / t / 1e3 == pytest.approx(alg, abs=0.011, rel=1e-3)
    assert rows[-1][4] == 460.0 and rows[0][4] < 1.0          # H100 default, latency-bound at 8 bytes
    busbws = [b for r in rows for b in (r[4], r[8])]
    assert avg_line(out) == pytest.approx(sum(busbws) / len(busbws), abs=0.01)
    assert "# Out of bounds values : 0 OK\n" in out and rc == 0
    assert out.count("#  Rank ") == 8
    assert "#  Rank  3 Group  0 Pid %6d on %10s device  3 [0x5d] NVIDIA H100 80GB HBM3" % (
        os.getpid(), host.state["host"]) in out


@pytest.mark.parametrize("knob", [None, 300.0, 123.4])
def test_all_reduce_avg_equals_the_knob_at_16g(host, capsys, knob):
    if knob is not None:
        host.state["active"]["busbw_gbps"] = knob
        host.save()
    rc, out, _ = run(capsys, "all_reduce_perf", "-b", "16G", "-e", "16G", "-f", "2", "-g", "8")
    assert rc == 0 and avg_line(out) == pytest.approx(knob or 460.0, abs=0.005)
    assert "minBytes 17179869184 maxBytes 17179869184 step: 2(factor)" in out


def test_all_reduce_layout_matches_a_real_run(host, capsys):
    with open(os.path.join(ACTIVE, "all_reduce_perf_gcm_a100_8gpu.txt")) as fh:
        real = [ln.rstrip() for ln in fh.read().splitlines()]
    rc, out, _ = run(capsys, "all_reduce_perf", "-b", "32M", "-e", "1G", "-f", "2", "-g", "8")
    ours = [ln.rstrip() for ln in out.splitlines()]
    hdr = [ln for ln in real if ln.startswith("#   ") or ln.startswith("#       ") or "out-of-place" in ln]
    assert hdr and all(ln in ours for ln in hdr)
    assert ours[0] == real[0].replace("nGpus 1", "nGpus 8")
    assert [len(ln) for ln in ours if ROW.match(ln)] == [len(ln) for ln in real if ROW.match(ln)]


def test_all_reduce_slow_gpu_wrong_values_and_missing_gpus(host, capsys):
    host.state["gpus"][4]["busbw_gbps"] = 200.0
    host.state["active"]["nccl_wrong"] = 3
    host.save()
    rc, out, _ = run(capsys, "all_reduce_perf", "-b", "1G", "-e", "1G", "-g", "8")
    assert avg_line(out) == pytest.approx(200.0, abs=0.01)
    assert "# Out of bounds values : 6 FAILED\n" in out and nccl_rows(out)[0][5] == 3 and rc == 1
    rc, out, _ = run(capsys, "all_reduce_perf", "-g", "9")
    assert "Test CUDA failure common.cu:941 'invalid device ordinal'" in out and rc == 2


# ------------------------------------------------------------------------------------- nvbandwidth
def nvbw(out):
    """{testcase: {"cells": {(row, col): GB/s}, "sum", "title"}} the way Azure's check reads it."""
    res, cur, cols = {}, None, None
    for ln in out.splitlines():
        m = re.match(r"^Running (\w+)\.$", ln)
        if m:
            cur, cols = res.setdefault(m.group(1), {"cells": {}, "sum": None, "title": None}), None
            continue
        m = re.match(r"^SUM (\w+) ([\d.]+)$", ln)
        if m:
            res[m.group(1)]["sum"] = float(m.group(2))
            continue
        if ln.startswith(("ERROR", "Waived", "NOTE")):
            cur = None
        if cur is None or not ln.strip():
            continue
        if "bandwidth (GB/s)" in ln:
            cur["title"] = ln
        elif cols is None:
            cols = [int(c) for c in ln.split()]
        else:
            f = ln.split()
            for c, v in zip(cols, f[1:]):
                if v != "N/A":
                    cur["cells"][(int(f[0]), c)] = float(v)
    return res


def test_nvbandwidth_matrices_and_sums(host, capsys):
    host.state["gpus"][2]["h2d_gbps"] = 20.0
    host.save()
    rc, out, _ = run(capsys, "nvbandwidth", "-t", "host_to_device_memcpy_ce", "device_to_host_memcpy_ce",
                     "device_to_device_memcpy_read_ce")
    assert rc == 0
    assert out.startswith("nvbandwidth Version: v0.8\nBuilt from Git version: \n\nCUDA Runtime Version: 12040\n")
    assert "Device 0: NVIDIA H100 80GB HBM3 (00000000:18:00)\n" in out
    r = nvbw(out)
    assert list(r) == ["host_to_device_memcpy_ce", "device_to_host_memcpy_ce", "device_to_device_memcpy_read_ce"]
    h2d, d2h, d2d = (r[k] for k in r)
    assert h2d["title"] == "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)"
    assert d2h["title"] == "memcpy CE CPU(row) <- GPU(column) bandwidth (GB/s)"
    assert d2d["title"] == "memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)"
    assert h2d["cells"][(0, 2)] == pytest.approx(20.0, rel=0.004)
    assert all(v == pytest.approx(55.0, rel=0.004) for k, v in h2d["cells"].items() if k != (0, 2))
    assert len(d2d["cells"]) == 56 and (3, 3) not in d2d["cells"]              # N/A on the diagonal
    assert all(v == pytest.approx(375.0, rel=0.004) for v in d2d["cells"].values())
    for t in (h2d, d2h, d2d):
        assert t["sum"] == pytest.approx(sum(t["cells"].values()), abs=0.01 * len(t["cells"]))
    assert "\n           0         1         2" in out and "\n 1    " in out          # v0.8 column layout


def test_nvbandwidth_knobs_missing_testcases_and_single_gpu(host, capsys):
    host.state["active"]["nvbandwidth_gbps"] = {"device_to_device_memcpy_read_ce": 150.0}
    host.state["gpus"][6]["p2p_gbps"] = 40.0
    host.save()
    rc, out, _ = run(capsys, "nvbandwidth", "-t", "device_to_device_memcpy_read_ce", "bogus_case")
    d2d = nvbw(out)["device_to_device_memcpy_read_ce"]["cells"]
    assert d2d[(6, 1)] == pytest.approx(40.0, rel=0.004) and d2d[(1, 6)] == pytest.approx(40.0, rel=0.004)
    assert d2d[(1, 2)] == pytest.approx(150.0, rel=0.004)
    assert "ERROR: Testcase bogus_case not found!\n" in out and rc == 0
    for g in host.state["gpus"][1:]:
        g["present"] = False
    host.save()
    rc, out, _ = run(capsys, "nvbandwidth", "-t", "device_to_device_memcpy_read_ce")
    assert "Waived: \n" in out and "Running device_to_device" not in out


# ------------------------------------------------------------------------------------- ib_write_bw
BW_ROW = re.compile(r"^ (\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)$")


def test_ib_write_bw_client_reports_the_knob(host, capsys):
    rc, out, _ = run(capsys, "ib_write_bw", "-d", "mlx5_0", "--report_gbits", "gpu-a02")
    lines = out.splitlines()
    assert rc == 0 and lines[0] == "-" * 87 and lines[1] == "                    RDMA_Write BW Test"
    assert " Dual-port       : OFF\t\tDevice         : mlx5_0" in lines and " TX depth        : 128" in lines
    i = lines.index(" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]")
    m = BW_ROW.match(lines[i + 1])
    assert m and lines[i + 2] == "-" * 87 and lines[-1] == "-" * 87
    size, iters = int(m.group(1)), int(m.group(2))
    peak, avg, rate = float(m.group(3)), float(m.group(4)), float(m.group(5))
    assert (size, iters, avg) == (65536, 5000, 390.0) and peak >= avg
    assert rate == pytest.approx(avg * 1e9 / 8 / size / 1e6, rel=1e-5)
    assert lines[i + 1] == " 65536      5000             %-7.2f            390.00 \t\t     %.6f" % (peak, rate)


def test_ib_write_bw_per_hca_knob_mib_units_port_down_and_server(host, capsys):
    host.state["hcas"][3]["ib_bw_gbps"] = 180.0
    host.state["hcas"][5]["fault"] = "down"
    host.save()
    rc, out, _ = run(capsys, "ib_write_bw", "-d", "mlx5_3", "peer")
    m = BW_ROW.match([ln for ln in out.splitlines() if BW_ROW.match(ln)][0])
    assert float(m.group(4)) == pytest.approx(180e9 / 8 / 1048576, abs=0.01) and "BW average[MiB/sec]" in out
    rc, _, err = run(capsys, "ib_write_bw", "-d", "mlx5_5", "--report_gbits", "peer")
    assert rc == 1 and err == " Port number 1 state is Down\n Couldn't get context for the device\n"
    rc, _, err = run(capsys, "ib_write_bw", "-d", "mlx5_9", "peer")
    assert rc == 1 and err.startswith("IB device mlx5_9 not found\n")
    t0 = time.time()
    rc, out, _ = run(capsys, "ib_write_bw", "-d", "mlx5_0", "--report_gbits")        # the server form
    assert rc == 0 and time.time() - t0 < 5
    assert out.startswith("\n************************************\n* Waiting for client to connect... *\n")
    assert " TX depth        : 128" not in out and BW_ROW.match(out.splitlines()[-2])
    host.state["active"]["ib_no_server"] = True
    host.save()
    rc, _, err = run(capsys, "ib_write_bw", "--report_gbits", "gpu-a02")
    assert rc == 1 and err.startswith("Couldn't connect to gpu-a02:18515\n")


# ------------------------------------------------------------------------- absent, hang, log, knobs
@pytest.mark.parametrize("tool", fakehw.ACTIVE_TOOLS)
def test_absent_tool_is_command_not_found(host, capsys, tmp_path, tool):
    host.state["active"]["absent"] = [tool]
    host.save()
    rc, out, err = run(capsys, tool, "--help")
    assert (rc, out, err) == (127, "", "%s: command not found\n" % tool)
    fh = str(tmp_path / "fh")
    core.write_tool_wrappers(fh, {})
    assert os.access(os.path.join(fh, "bin", tool), os.X_OK)
    core.write_tool_wrappers(fh, host.state)                      # the wrapper goes with the tool
    assert not os.path.lexists(os.path.join(fh, "bin", tool))
    assert set(os.listdir(os.path.join(fh, "bin"))) == set(core.FAKE_TOOLS) - {tool}


def test_dcgm_absent_knob_removes_dcgmi(tmp_path):
    core.write_tool_wrappers(str(tmp_path), {"active": {"dcgm": "absent"}})
    assert "dcgmi" not in os.listdir(str(tmp_path / "bin")) and "nvbandwidth" in os.listdir(str(tmp_path / "bin"))


@pytest.mark.parametrize("argv,first", [
    (["all_reduce_perf", "-b", "8", "-e", "8M", "-f", "2", "-g", "8"], "# nThread 1 nGpus 8"),
    (["nvbandwidth", "-t", "host_to_device_memcpy_ce"], "nvbandwidth Version: v0.8"),
    (["dcgmi", "diag", "-r", "1"], None),
    (["ib_write_bw", "-d", "mlx5_0"], ""),
])
def test_hang_blocks_until_killed(host, argv, first):
    host.state["active"]["hang"] = [argv[0]]
    host.save()
    env = dict(os.environ, FAKEHW_ROOT=host.root)
    p = subprocess.Popen([sys.executable, "-S", FAKEHW] + argv, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            p.wait(timeout=1.5)
        with open("/proc/%d/comm" % p.pid) as fh:
            assert fh.read().strip() == argv[0][:15]               # named like the real binary
        p.send_signal(signal.SIGTERM)
        out, _err = p.communicate(timeout=10)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == -signal.SIGTERM
    if first is None:
        assert out == ""
    else:
        assert out.startswith(first)
    if argv[0] == "all_reduce_perf":
        assert "#wrong" in out and "Avg bus bandwidth" not in out     # stuck in the first collective
    if argv[0] == "nvbandwidth":
        assert out.rstrip().endswith("Running host_to_device_memcpy_ce.")


def test_every_call_is_logged(host, capsys):
    run(capsys, "all_reduce_perf", "-b", "8", "-e", "16", "-g", "8")
    run(capsys, "dcgmi", "diag", "-r", "1", "-j")
    with open(os.path.join(host.root, "commands.log")) as fh:
        recs = [json.loads(ln) for ln in fh]
    assert [r["argv"] for r in recs] == [["all_reduce_perf", "-b", "8", "-e", "16", "-g", "8"],
                                         ["dcgmi", "diag", "-r", "1", "-j"]]


def test_seconds_knob_sets_how_long_a_test_runs(host, capsys):
    host.state["active"]["seconds"] = 0.4
    host.save()
    t0 = time.time()
    run(capsys, "all_reduce_perf", "-b", "8", "-e", "8", "-g", "8")
    assert 0.35 < time.time() - t0 < 3


def test_scenario_active_block_and_hardware_overlay():
    sc = {"active": {"gpu-a02": {"dcgm": "hostengine_down", "gpus": {2: {"dcgm_fail": {"test": "memory"}}},
                                 "hcas": {"mlx5_1": {"ib_bw_gbps": 150}},
                                 "nvbandwidth_gbps": {"host_to_device_memcpy_ce": 30}},
                     "all": {"seconds": 0.1, "nvbandwidth_gbps": {"device_to_host_memcpy_ce": 40}}}}
    a1, a2 = build(sc, n=2)
    assert a1["active"] == {"seconds": 0.1, "nvbandwidth_gbps": {"device_to_host_memcpy_ce": 40}}
    assert a2["active"] == {"seconds": 0.1, "dcgm": "hostengine_down",
                            "nvbandwidth_gbps": {"device_to_host_memcpy_ce": 40, "host_to_device_memcpy_ce": 30}}
    assert a2["gpus"][2]["dcgm_fail"] == {"test": "memory"} and a2["hcas"][1]["ib_bw_gbps"] == 150
    states = {"gpu-a01": a1, "gpu-a02": a2}
    core.apply_hardware(states, {"all": {"active": {"absent": ["dcgmi"]}}, "gpu-a01": {"active": {"seconds": 0}}})
    assert a1["active"]["absent"] == ["dcgmi"] and a1["active"]["seconds"] == 0
    assert a2["active"]["dcgm"] == "hostengine_down" and a2["active"]["absent"] == ["dcgmi"]


def test_module_doc_documents_the_knobs():
    doc = fakehw.__doc__
    for knob in ("seconds", "absent", "hang", "dcgm", "hostengine_down", "embedded", "busbw_gbps",
                 "nvbandwidth_gbps", "host_to_device_memcpy_ce", "device_to_host_memcpy_ce",
                 "device_to_device_memcpy_read_ce", "ib_bw_gbps", "ib_server_seconds", "ib_no_server", "nccl_wrong",
                 "dcgm_fail", "error_id", "h2d_gbps", "d2h_gbps", "p2p_gbps", "dcgm_version"):
        assert '"%s"' % knob in doc or "``%s``" % knob in doc or knob in doc, knob
    for tool in fakehw.ACTIVE_TOOLS:
        assert tool in doc and tool in core.FAKE_TOOLS
