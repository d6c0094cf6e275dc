"""The link test between two hosts (infiniband/pingpong.py): a run that printed its result is a reading
of the link, no finding (its bandwidth is latency-bound, never judged); a completion error takes the
category of rdma-core's status table (retry exceeded: the network); the TCP side channel, a missing
device or port, a set-up failure each one warning with no rung; an output that opened with neither a
result nor an error is incomplete, never healthy; anything else is no pingpong output at all. The
completed ibv_rc_pingpong is a real capture (Open MPI users list, 2009, host tango090); the other
texts are written with the formats of rdma-core libibverbs/examples/*_pingpong.c and libfabric
util/pingpong.c."""

import pytest

from gpu_runbook.infiniband.pingpong import MAX_LINE, OPENING, belongs, parse_pingpong
from gpu_runbook.taxonomy import KINDS
from gpu_runbook.vocab import code
from tests.unit.scaling import assert_linear

TANGO = ("[root_at_tango090 ~]# ibv_rc_pingpong\n"
         "   local address:  LID 0x005f, QPN 0xe4045d, PSN 0xdd13f0\n"
         "   remote address: LID 0x005d, QPN 0xfe0425, PSN 0xc43fe2\n"
         "8192000 bytes in 0.07 seconds = 996.93 Mbit/sec\n"
         "1000 iters in 0.07 seconds = 65.74 usec/iter\n")
ADDRESSES = ("  local address:  LID 0x0012, QPN 0x00011a, PSN 0x5b8a3c, GID ::\n"
             "  remote address: LID 0x0019, QPN 0x00011b, PSN 0x0c2d1e, GID ::\n")
RETRY = ("$ ibv_rc_pingpong -d mlx5_0 node2\n" + ADDRESSES +
         "Failed status transport retry counter exceeded (12) for wr_id 2\n"
         "parse WC failed 1\n")
# util/pingpong.c show_perf(): the header and a row per size, printed with its own formats
FI_HEADER = "%-8s%-8s%-9s%-8s%8s %10s%13s%13s" % ("bytes", "#sent", "#ack", "total", "time", "MB/sec", "usec/xfer",
                                                   "Mxfers/sec")
FI_ROW = "%-8s%-8s=%-8s%-8s%8.2fs%10.2f%11.2f%11.2f"
FI_RUN = "\n".join(["$ fi_pingpong -p verbs -S all node2", FI_HEADER,
                    "64      10      =10      1.2k        0.00s      1.17      54.55       0.02",
                    FI_ROW % ("1k", "10", "10", "20k", 0.0, 19.5, 52.51, 0.02),
                    FI_ROW % ("1.5m", "1k", "1k", "3g", 2.31, 1361.06, 1155.57, 0.0)]) + "\n"


def kinds(findings):
    return [(f["kind"], f["category"], f["severity"], f["rung"]) for f in findings]


def test_a_completed_ibv_rc_pingpong_is_a_reading_of_the_link_and_no_finding():
    facts, findings = parse_pingpong(TANGO, "pingpong.txt")
    assert findings == []
    assert facts == {
        "tool": "ibv_rc_pingpong", "completed": True, "errors": [],
        "results": [{"bytes": 8192000, "seconds": 0.07, "mbit_per_sec": 996.93, "iters": 1000,
                     "usec_per_iter": 65.74}],
        "local": {"lid": 0x5f, "qpn": 0xe4045d, "psn": 0xdd13f0, "gid": None},
        "remote": {"lid": 0x5d, "qpn": 0xfe0425, "psn": 0xc43fe2, "gid": None}}


def test_a_slow_result_is_not_judged():
    # a pingpong's bandwidth is latency-bound: 4 KB messages one at a time, not a link's rate
    slow = TANGO.replace("996.93 Mbit/sec", "12.50 Mbit/sec").replace("65.74 usec", "5243.00 usec")
    facts, findings = parse_pingpong(slow)
    assert findings == [] and facts["completed"] and facts["results"][0]["mbit_per_sec"] == 12.5


def test_retry_exceeded_is_the_network_and_names_the_path_not_the_node():
    facts, findings = parse_pingpong(RETRY, "pp.txt")
    assert kinds(findings) == [("ib_pingpong_completion_error", "ib_network", "warning", "none")]
    (f,) = findings  # 'parse WC failed' follows from the status: no second finding
    assert f["source"] == "pp.txt:4" and f["evidence"] == "Failed status transport retry counter exceeded (12) for wr_id 2"
    assert "remote LID 0x0019" in f["message"] and "NCCL" not in f["message"]
    assert facts["completed"] is False and facts["results"] == [] and facts["tool"] == "ibv_rc_pingpong"
    assert facts["errors"] == ["Failed status transport retry counter exceeded (12) for wr_id 2", "parse WC failed 1"]
    assert facts["remote"] == {"lid": 0x19, "qpn": 0x11b, "psn": 0x0c2d1e, "gid": "::"}


@pytest.mark.parametrize("status,name,category", [
    (12, "transport retry counter exceeded", "ib_network"),
    (7, "bad response error", "ib_network"),
    (13, "RNR retry counter exceeded", "unknown"),        # the peer process stalled or gone, not the link
    (10, "remote access error", "unknown"),
    (5, "Work Request Flushed Error", "unknown"),
    (1, "local length error", "unknown"),                 # nccl_config in the table: no NCCL runs in a pingpong
])
def test_a_completion_status_takes_the_category_of_rdma_cores_table(status, name, category):
    row = code("rdma", status)
    assert row["text"] == name
    assert category == (row["category"] if row["category"] != "nccl_config" else "unknown")
    _facts, findings = parse_pingpong(ADDRESSES + "Failed status %s (%d) for wr_id 1\n" % (name, status))
    assert kinds(findings) == [("ib_pingpong_completion_error", category, "warning", "none")]
    if status == 1:
        assert "-s" in findings[0]["message"] and "NCCL" not in findings[0]["message"]


def test_the_tcp_side_channel_is_not_the_rdma_link():
    facts, findings = parse_pingpong("$ ibv_rc_pingpong node2\n" + ADDRESSES.splitlines()[0] + "\n"
                                     "Couldn't connect to node2:18515\n")
    assert kinds(findings) == [("ib_pingpong_no_peer", "unknown", "warning", "none")]
    assert "18515" in findings[0]["message"] and facts["completed"] is False and facts["remote"] is None
    _facts, findings = parse_pingpong("Name or service not known for nodee2:18515\n")
    assert kinds(findings) == [("ib_pingpong_no_peer", "unknown", "warning", "none")]


@pytest.mark.parametrize("line,kind,category", [
    ("No IB devices found", "ib_no_devices", "ib_network"),
    ("Failed to get IB devices list: Function not implemented", "ib_no_devices", "ib_network"),
    ("IB device mlx5_9 not found", "ib_pingpong_port_error", "ib_network"),
    ("Couldn't get port info", "ib_pingpong_port_error", "ib_network"),
    ("Couldn't get local LID", "ib_pingpong_port_error", "ib_network"),
    ("Failed to modify QP to RTR", "ib_pingpong_port_error", "unknown"),   # RoCE without -g, -m: the options
    ("can't read sgid of index 3", "ib_pingpong_port_error", "unknown"),
    ("Couldn't register MR", "ib_pingpong_setup_error", "unknown"),
    ("invalid data in page 0", "ib_pingpong_data_mismatch", "unknown"),
])
def test_device_port_and_setup_errors(line, kind, category):
    facts, findings = parse_pingpong("$ ibv_rc_pingpong -d mlx5_9 node2\n" + line + "\n")
    assert kinds(findings) == [(kind, category, "warning", "none")]
    assert findings[0]["evidence"] == line and facts["errors"] == [line] and not facts["completed"]


def test_an_error_after_the_result_keeps_the_result():
    facts, findings = parse_pingpong(TANGO + "Couldn't destroy QP\n")
    assert kinds(findings) == [("ib_pingpong_setup_error", "unknown", "info", "none")] and facts["completed"]
    facts, findings = parse_pingpong(TANGO + "invalid data in page 2\n")  # -c: not a clean run
    assert kinds(findings) == [("ib_pingpong_data_mismatch", "unknown", "warning", "none")]
    assert not facts["completed"]


def test_a_completed_fi_pingpong_table_is_read_and_no_finding():
    assert FI_HEADER == "bytes   #sent   #ack     total       time     MB/sec    usec/xfer   Mxfers/sec"
    facts, findings = parse_pingpong(FI_RUN, "fi.txt")
    assert findings == [] and facts["tool"] == "fi_pingpong" and facts["completed"] is True
    assert [(r["size"], r["bytes"], r["sent"], r["acked"], r["mb_per_sec"], r["usec_per_xfer"])
            for r in facts["results"]] == [("64", 64, 10, 10, 1.17, 54.55), ("1k", 1024, 10, 10, 19.5, 52.51),
                                           ("1.5m", 1572864, 1000, 1000, 1361.06, 1155.57)]
    assert facts["results"][0] == {"size": "64", "bytes": 64, "sent": 10, "acked": 10, "total": "1.2k",
                                   "seconds": 0.0, "mb_per_sec": 1.17, "usec_per_xfer": 54.55,
                                   "mxfers_per_sec": 0.02}


@pytest.mark.parametrize("text,kind,category", [
    ("fi_getinfo(): util/pingpong.c:1492, ret=-61 (No data available)", "ib_pingpong_setup_error", "unknown"),
    ("[error] util/pingpong.c:411 : failed to connect: Connection refused", "ib_pingpong_no_peer", "unknown"),
    ("ctrl/read(): util/pingpong.c:566 , ret=-104 (Connection reset by peer)", "ib_pingpong_no_peer", "unknown"),
    ("[error] util/pingpong.c:1122: cq_readerr: transport retry counter exceeded\n"
     "[error] util/pingpong.c:1218: Failed to get receive completion", "ib_pingpong_completion_error", "ib_network"),
    ("0s timeout expired\n[error] util/pingpong.c:1218: Failed to get receive completion",
     "ib_pingpong_completion_error", "unknown"),
    ("Error at iteration=3 size=64 byte=0", "ib_pingpong_data_mismatch", "unknown"),
])
def test_fi_pingpong_errors(text, kind, category):
    facts, findings = parse_pingpong(FI_HEADER + "\n" + text + "\n")
    assert kinds(findings) == [(kind, category, "warning", "none")]
    assert facts["tool"] == "fi_pingpong" and not facts["completed"] and facts["results"] == []


@pytest.mark.parametrize("text,why", [
    (ADDRESSES.splitlines()[0] + "\n", "no peer connected"),
    (ADDRESSES, "no result followed"),
    (FI_HEADER + "\n", "no row"),
])
def test_an_output_with_neither_result_nor_error_is_never_healthy(text, why):
    facts, findings = parse_pingpong(text)
    assert kinds(findings) == [("ib_pingpong_incomplete", "unknown", "warning", "none")]
    assert why in findings[0]["message"] and facts["completed"] is False


def test_the_tool_is_what_the_command_or_the_lines_say():
    assert parse_pingpong(ADDRESSES + "Couldn't get local LID\n")[0]["tool"] == "ibv_*_pingpong"
    ud = "  local address:  LID 0x0012, QPN 0x00011a, PSN 0x5b8a3c: GID ::\n"
    assert parse_pingpong(ud)[0]["tool"] == "ibv_ud_pingpong"
    xsrq = ("   local: LID 0005, QPN RECV 000123 SEND 000124, PSN 0abcde, SRQN 000042, GID ::\n"
            "  remote: LID 0006, QPN RECV 000223 SEND 000224, PSN 0bcdef, SRQN 000043, GID ::\nsuccess\n")
    facts, findings = parse_pingpong(xsrq)
    assert (facts["tool"], facts["completed"], facts["local"]["qpn"], findings) == ("ibv_xsrq_pingpong", True, 0x123, [])
    _facts, findings = parse_pingpong(xsrq.replace("success", "Work completion error 12"))
    assert kinds(findings) == [("ib_pingpong_completion_error", "ib_network", "warning", "none")]


@pytest.mark.parametrize("text", [
    "", "   \n\n", "hello world\nnothing to see\n", "Sep  1 node1 kernel: mlx5_core 0000:3b:00.0: link up\n",
    "8192000 bytes\n", "LID 0x005f, QPN 0xe4045d\n", "ibv_rc_pingpong node2\n", None, 42, b"garbage\xff\n",
])
def test_text_that_is_no_pingpong_output_says_nothing(text):
    assert parse_pingpong(text) == ({}, [])


def test_bytes_are_read_as_text():
    assert parse_pingpong(TANGO.encode()) == parse_pingpong(TANGO)


def test_opening_and_belongs_find_the_block_in_a_mixed_paste():
    lines = TANGO.splitlines()
    assert [bool(OPENING.match(line)) for line in lines] == [False, True, True, True, True]
    assert all(belongs(line) for line in lines) and belongs("") and belongs("   ")
    assert OPENING.match(FI_HEADER) and belongs(FI_RUN.splitlines()[2]) and belongs(RETRY.splitlines()[-2])
    assert belongs("[error] util/pingpong.c:411 : failed to connect: Connection refused")
    for other in ("Sep  1 node1 kernel: mlx5_core 0000:3b:00.0: link up", "NCCL INFO Bootstrap : Using eth0",
                  "  local address: " + "x" * MAX_LINE):
        assert not belongs(other) and not OPENING.match(other)


def test_every_finding_is_a_declared_kind_and_the_new_kinds_never_act_on_the_node():
    for name in ("ib_pingpong_completion_error", "ib_pingpong_port_error", "ib_pingpong_no_peer",
                 "ib_pingpong_setup_error", "ib_pingpong_data_mismatch", "ib_pingpong_incomplete"):
        assert KINDS[name]["rung"] == "none" and KINDS[name]["severity"] == "warning"


HOSTILE = ("  local address:  LID 0x", "   remote address: LID 0x005d, QPN 0x", "8192000 bytes in 0.", "1000 iters in ",
           "Failed status ", "Failed status x (12) for wr_id ", "Couldn't connect to ", "A for ", "bytes   #sent   ",
           "64      10      =", "fi_getinfo(", "x(): a:1, ret=", "[error] a:1 : ", "ibv_rc_pingpong ", "9", " ", ":")


@pytest.mark.parametrize("unit", HOSTILE)
def test_hostile_lines_take_linear_time(unit):
    # one 1 MiB line (longer than any line of theirs: skipped), and lines just under the longest read
    one = lambda n: unit * (n // len(unit) + 1)  # noqa: E731
    assert parse_pingpong(one(1 << 20)) == ({}, [])
    assert belongs(one(1 << 20)) is (not unit.strip())  # only a blank line belongs whatever its length
    many = lambda n: "\n".join([one(MAX_LINE - 8)] * max(1, n // MAX_LINE))  # noqa: E731
    assert_linear(parse_pingpong, many, 1 << 17, label=unit)  # 128 KiB and 1 MiB
    assert_linear(lambda t: [belongs(line) for line in t.splitlines()], many, 1 << 17, label=unit)


@pytest.mark.parametrize("name", ["ibv_rc_pingpong.txt", "notes.txt"])
def test_read_by_content_under_any_name_and_a_completed_run_is_a_reading(tmp_path, name):
    from gpu_runbook.cli import analyze_paths
    (tmp_path / name).write_text(TANGO)
    doc = analyze_paths([str(tmp_path)], include_facts=True)
    (h,) = doc["hosts"]
    assert h["verdict"] == "healthy" and h["probes"]["pingpong.txt"]["usable"]
    assert doc["files"][0]["read_as"] == ["ibv_rc_pingpong / fi_pingpong"]
    (tmp_path / name).write_text(RETRY)
    (h,) = analyze_paths([str(tmp_path)])["hosts"]
    assert (h["verdict"], h["severity"]) == ("ib_network", "warning")
