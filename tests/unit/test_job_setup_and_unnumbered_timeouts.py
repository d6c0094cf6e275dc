"""What round x30 showed (tests/fixtures/real/x30-17, -19, -20 hold the real captures): NCCL's
socket channels over an interface whose only address is IPv6 link-local, a collective timeout set
shorter than any collective takes, and watchdog timeouts of a PyTorch that printed no SeqNum whose
operations differ across the ranks."""

import pytest

from gpu_runbook.joblog import parse_job_logs

USING = ("worker:101542:101542 [0] NCCL INFO NET/Socket : Using [0]eno1:172.18.40.41<0> "
         "[1]veth25f2e72:fe80::380d:bfff:fe5b:54d2%veth25f2e72<0>\n"
         "worker:101542:101542 [0] NCCL INFO Using network Socket\n")
CONNECT = "worker:101542:101934 [0] NCCL INFO Call to connect returned Connection timed out, retrying\n" * 3


def _via(dev):
    return ("worker:101542:101934 [0] NCCL INFO Channel 00 : 0[18000] -> 1[18000] [receive] via NET/Socket/%d\n"
            "worker:101542:101934 [0] NCCL INFO Channel 00 : 1[18000] -> 0[18000] [send] via NET/Socket/%d\n"
            % (dev, dev))


def kinds(found):
    return set((f["kind"], f["category"]) for f in found)


def test_channels_over_a_link_local_socket_interface_are_the_set_up():
    _job, found = parse_job_logs({"worker.log": USING + _via(1) + CONNECT})
    socket = [f for f in found if f["kind"] == "nccl_socket_interface"]
    assert socket and socket[0]["category"] == "nccl_config" and "veth25f2e72" in socket[0]["message"]
    # the same failure over the routable interface says nothing of the interface
    _job, found = parse_job_logs({"worker.log": USING + _via(0) + CONNECT})
    assert "nccl_socket_interface" not in [f["kind"] for f in found]


def _timeout(rank, op, ms=1800000, seq=None, ran=1801060, numel=None):
    work = "WorkNCCL(%sOpType=%s, %sTimeout(ms)=%d)" % ("SeqNum=%d, " % seq if seq is not None else "", op,
                                                       "NumelIn=%d, NumelOut=%d, " % (numel, numel) if numel else "", ms)
    return ("[E ProcessGroupNCCL.cpp:566] [Rank %d] Watchdog caught collective operation timeout: %s ran for %d "
            "milliseconds before timing out.\n" % (rank, work, ran))


def test_unnumbered_timeouts_in_different_operations_are_mismatched_collectives():
    text = _timeout(0, "ALLREDUCE") + "".join(_timeout(r, "BROADCAST") for r in (1, 2, 3))
    job, found = parse_job_logs({"train.log": text})
    mism = [f for f in found if f["kind"] == "collective_mismatch"]
    assert mism and "ALLREDUCE (rank 0)" in mism[0]["message"] and "BROADCAST (ranks 1, 2, 3)" in mism[0]["message"]
    assert job["culprit_ranks"] == [0]  # the one rank in an operation of its own


def test_unnumbered_timeouts_that_could_be_several_groups_are_no_mismatch():
    same = "".join(_timeout(r, "ALLREDUCE") for r in (0, 1, 2, 3))
    two_each = "".join(_timeout(r, "ALLREDUCE") + _timeout(r, "ALLGATHER") for r in (0, 1))
    other_timeouts = _timeout(0, "ALLREDUCE", ms=600000) + _timeout(1, "BROADCAST")
    for text in (same, two_each, other_timeouts):
        _job, found = parse_job_logs({"train.log": text})
        assert "collective_mismatch" not in [f["kind"] for f in found], text


def test_a_collective_timeout_of_milliseconds_is_the_setting():
    _job, found = parse_job_logs({"job.err": _timeout(3, "ALLREDUCE", ms=1, seq=1, ran=90)})
    short = [f for f in found if f["kind"] == "collective_timeout_too_short"]
    assert short and short[0]["category"] == "nccl_config" and short[0]["rank"] == 3
    _job, found = parse_job_logs({"job.err": _timeout(3, "ALLREDUCE", ms=600000, seq=1, ran=600100)})
    assert "collective_timeout_too_short" not in [f["kind"] for f in found]


def test_one_rank_alone_in_another_call_at_one_seqnum_is_the_odd_one():
    # x29-21's shape: ranks 2 and 4 in an ALLREDUCE of 16666624 elements, rank 0 in one of 4096, all #3106
    text = "".join(_timeout(r, "ALLREDUCE", seq=3106, numel=n) for r, n in ((0, 4096), (2, 16666624), (4, 16666624)))
    job, found = parse_job_logs({"train.log": text})
    assert "collective_mismatch" in [f["kind"] for f in found] and job["culprit_ranks"] == [0]
    # two ranks, two sizes: which one is odd nothing says
    text = "".join(_timeout(r, "ALLREDUCE", seq=3106, numel=n) for r, n in ((0, 4096), (2, 16666624)))
    job, found = parse_job_logs({"train.log": text})
    assert "collective_mismatch" in [f["kind"] for f in found] and job["culprit_ranks"] != [0]


def test_a_peer_at_an_ipv4_link_local_address_is_the_socket_interfaces():
    # RFC 3927's 169.254.0.0/16 routes within one link only (held-out x42-11, an SGLang decode node)
    text = ("hd03-gpu2-0031:14133:14133 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to "
            "169.254.20.10<43369> failed : Software caused connection abort\n"
            "hd03-gpu2-0031:14133:14133 [0] NCCL INFO bootstrap.cc:285 -> 2\n")
    _job, found = parse_job_logs({"decode.log": text})
    (f,) = [f for f in found if f["kind"] == "nccl_socket_interface"]
    assert f["category"] == "nccl_config" and "an IPv4 link-local address" in f["message"]
    _job, found = parse_job_logs({"decode.log": text.replace("169.254.20.10", "10.1.20.10")})
    assert "nccl_socket_interface" not in [f["kind"] for f in found]


def test_a_peer_at_dockers_default_bridge_address_is_the_socket_interfaces():
    # 172.17.0.1 is docker0's address on every host: NCCL's sockets chose docker0
    text = ("n1:10:20 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 172.17.0.1<54321> failed : "
            "Connection refused\nn1:10:20 [0] NCCL INFO misc/socket.cc:565 -> 6\n")
    job, found = parse_job_logs({"train.log": text})
    (f,) = [f for f in found if f["kind"] == "nccl_socket_interface"]
    assert f["category"] == "nccl_config" and "docker0" in f["message"] and not job["culprit_hosts"]
    _job, found = parse_job_logs({"train.log": text.replace("172.17.0.1", "172.17.0.9")})
    assert "nccl_socket_interface" not in [f["kind"] for f in found]


@pytest.mark.parametrize("addr, what", [("172.17.0.1", "docker0"), ("127.0.1.1", "loopback"),
                                        ("169.254.3.4", "link-local")])
def test_another_transports_failed_connection_to_an_address_no_node_shares_is_the_set_up(addr, what):
    # x44: UCX (under Open MPI) connected to docker0's address; a routable peer stays the network's
    line = ("[1695332443.361791] [histamine0:1224050:0]            sock.c:323  UCX  ERROR   connect(fd=42, "
            "dest_addr=%s:54351) failed: Connection refused\n")
    _job, found = parse_job_logs({"slurm-1484.out": line % addr})
    cats = {f["category"] for f in found if f["severity"] in ("warning", "critical")}
    assert cats == {"nccl_config"} and any(what in f["message"] for f in found)
    _job, found = parse_job_logs({"slurm-1484.out": line % "10.0.0.7"})
    assert {f["category"] for f in found if f["severity"] in ("warning", "critical")} == {"ib_network"}


# misc/ibvwrap.cc's WARN, before 2.24 ('with error %s[ errno %d]') and since ('with %d %s, on dev ...')
QP_EINVAL = ("node-a:1:2 [0] misc/ibvwrap.cc:206 NCCL WARN Call to ibv_modify_qp failed with error Invalid argument "
             "errno 22\nnode-a:1:2 [0] NCCL INFO transport/net_ib.cc:1000 -> 2\n")
QP_TIMEOUT = ("node-a:1:2 [0] misc/ibvwrap.cc:376 NCCL WARN Call to ibv_modify_qp failed with 110 Connection timed "
              "out, on dev mlx5_bond_1:1, curr state INIT, next state RTR, local GID index 3\n")


def test_a_queue_pair_the_hca_rejects_before_the_run_trained_is_the_rdma_set_up():
    _job, found = parse_job_logs({"run.log": QP_EINVAL})
    (f,) = [f for f in found if f["kind"] == "nccl_ib_qp_setup_failed"]
    assert f["category"] == "nccl_config" and "NCCL_IB_GID_INDEX" in f["message"] and f["inferred"] == "early"
    _job, found = parse_job_logs({"run.log": QP_EINVAL.replace("Invalid argument errno 22", "No such device errno 19")})
    assert [f["kind"] for f in found if f["kind"] == "nccl_ib_qp_setup_failed"] == ["nccl_ib_qp_setup_failed"]


def test_a_queue_pair_whose_peer_never_answered_or_one_failing_after_training_is_the_fabrics():
    # ETIMEDOUT: the peer's address did not answer (a rail not cross-connected, a route missing)
    _job, found = parse_job_logs({"run.log": QP_TIMEOUT})
    assert "nccl_ib_qp_setup_failed" not in [f["kind"] for f in found]
    assert any(f["category"] == "ib_network" for f in found)
    # after the run trained, a GID that changed under it (a NIC reset) is no set-up error
    steps = "".join("step %d loss %.3f\n" % (i, 3.0 - i / 100.0) for i in range(1, 41))
    trained = "".join("Epoch 1: %d%%|###| %d/100 [00:%02d<00:10, 9.1it/s]\n" % (i, i, i) for i in range(1, 60))
    _job, found = parse_job_logs({"run.log": steps + trained + QP_EINVAL})
    assert "nccl_ib_qp_setup_failed" not in [f["kind"] for f in found]
