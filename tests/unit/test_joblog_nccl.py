"""NCCL's own words (joblog/nccl_words.py) and the host behind them: each wording of each
class, the peer as the suspect, setup errors that make lost connections a consequence, and
linear-time patterns on hostile lines. Real captures: tests/fixtures/real/n-*."""

import glob
import os
import time

import pytest

from gpu_runbook.joblog import nccl_words as W
from gpu_runbook.joblog import parse_job_logs

REAL = os.path.join(os.path.dirname(__file__), "..", "fixtures", "real")


def kinds(text):
    job, findings = parse_job_logs({"job.log": text})
    return job, {f["kind"]: f for f in findings}


@pytest.mark.parametrize("line", [
    "node1:1:2 [0] NCCL WARN Bootstrap : no socket interface found",
    "node1:1:2 [0] misc/socket.cc:10 NCCL WARN NET/Socket : no interface found",
    "node1:1:2 [0] NCCL WARN NET/IB : No IP interface found.",
    "node1:1:2 [0] NCCL WARN Net : No interface found in the same subnet as remote address 10.0.0.1<1234>",
    "Bootstrap : no NCCL_SOCKET_IFNAME interface found",
    "ncclSocketInit: connecting to address  with family 59936 is neither AF_INET(2) nor AF_INET6(10)",
])
def test_no_socket_interface_in_every_wording(line):
    job, f = kinds(line)
    assert "nccl_socket_interface" in f and f["nccl_socket_interface"]["category"] == "nccl_config"
    assert f["nccl_socket_interface"]["rung"] == "nccl_env"


def test_ifname_from_the_env_line_is_named_in_the_advice():
    text = ("h:1:1 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth9\n"
            "h:1:1 [0] NCCL WARN Bootstrap : no socket interface found\n")
    _job, f = kinds(text)
    assert f["nccl_socket_interface"]["note"] == "`NCCL_SOCKET_IFNAME=eth9`"


def test_duplicate_gpu_is_config_and_the_peer_losses_are_its_consequence():
    text = ("[1,2]<stdout>:gpu-03:29880:30398 [0] init.cc:497 NCCL WARN Duplicate GPU detected : rank 2 and rank 0 "
            "both on CUDA device 1000\n"
            "gpu-04:1:2 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer gpu-03<57557>\n")
    job, f = kinds(text)
    assert f["nccl_duplicate_gpu"]["severity"] == "critical" and f["nccl_duplicate_gpu"]["rung"] == "fix_application"
    assert f["nccl_peer_closed"]["severity"] == "warning"
    assert job["culprit_hosts"] == []            # a setup error names no host to drain
    assert "nccl_invalid_usage" not in f


def test_invalid_usage_alone():
    _job, f = kinds("RuntimeError: NCCL error in: x.cpp:1, invalid usage (run with NCCL_DEBUG=WARN for details)")
    assert f["nccl_invalid_usage"]["category"] == "nccl_config"


@pytest.mark.parametrize("line", [
    "[3] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device",
    "h:1:2 [6] misc/shmutils.cc:71 NCCL WARN Error: failed to extend /dev/shm/nccl-fjwOOB to 5967876 bytes",
    "h:1:2 [0] misc/shmutils.cc:132 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-WU88OE "
    "(size 9637888), error: No space left on device (28)",
    "h:1:2 [0] NCCL WARN Error while attaching to shared memory segment /dev/shm/nccl- (size 192814336), error: "
    "No such file or directory (2)",
])
def test_shared_memory_failures(line):
    _job, f = kinds(line)
    assert f["nccl_shm_failed"]["rung"] == "nccl_env"


@pytest.mark.parametrize("line,sev", [
    ("misc/ibvwrap.cc:278 NCCL WARN Call to ibv_reg_mr_iova2 failed with error Cannot allocate memory", "critical"),
    ("h:1:2 [0] NCCL WARN Call to ibv_reg_mr failed", "critical"),
    ("h:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)", "warning"),
])
def test_memory_registration(line, sev):
    job, f = kinds(line)
    assert f["nccl_ib_registration_failed"]["severity"] == sev
    if line.startswith("h:"):
        assert job["culprit_hosts"] == ["h"]      # the host's own limits / modules


def test_fabric_manager_and_nvls():
    job, f = kinds("[2025-05-10 23:09:41] bm-h100-02:630335:630409 [2] transport/nvls.cc:254 NCCL WARN Cuda failure 1 "
                   "'invalid argument'")
    assert f["nccl_fabric_manager"]["category"] == "driver" and job["culprit_hosts"] == ["bm-h100-02"]
    _job, f = kinds("h:1:2 [0] init.cc:1 NCCL WARN Cuda failure 'system not yet initialized'")
    assert "nccl_fabric_manager" in f
    # a CUDA failure outside NVLS that is not the Fabric Manager's is not one
    _job, f = kinds("h:1:2 [0] enqueue.cc:1 NCCL WARN Cuda failure 'out of memory'")
    assert "nccl_fabric_manager" not in f


def test_async_events_are_counted_per_host_and_name_the_reporter():
    text = "".join("node%d:1%d:2 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : port error\n"
                   % (n, i) for n in (7,) for i in range(5))
    text += "node7:11:2 [0] NCCL WARN NET/IB : mlx5_3:1 Got async event : port active\n"
    text += "node9:1:2 [0] transport/net_ib.cc:1 NCCL WARN NET/IB : Got completion from peer 10.0.0.7<1> with error 12, opcode 0, len 0, vendor err 129\n"
    job, findings = parse_job_logs({"job.log": text})
    asy = [f for f in findings if f["kind"] == "nccl_ib_async_event"]
    assert len(asy) == 1 and asy[0]["severity"] == "critical"
    assert "'port error' on node7 x5" in asy[0]["message"] and "'port active' (mlx5_3) on node7 x1" in asy[0]["message"]
    assert job["culprit_hosts"][0] == "node7"
    # only state changes: informational, nobody to blame
    job, findings = parse_job_logs({"j": "n1:1:2 [0] NCCL WARN NET/IB : mlx5_3:1 Got async event : port active\n"})
    asy = [f for f in findings if f["kind"] == "nccl_ib_async_event"]
    assert asy[0]["severity"] == "info" and asy[0]["ib"] == {"device": "mlx5_3", "port": 1}
    assert job["culprit_hosts"] == []


@pytest.mark.parametrize("line,peer", [
    ("h:1:2 [1] misc/socket.cc:518 NCCL WARN Net : Call to recv from 10.200.84.247<58355> failed : Broken pipe",
     "10.200.84.247"),
    ("h:1:2 [0] misc/socket.cc:483 NCCL WARN socketStartConnect: Connect to 10.0.0.2<45763> failed : Software caused "
     "connection abort", "10.0.0.2"),
    ("h:1:2 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer node1<57557>", "node1"),
    ("h:1:2 [0] misc/socket.cc:30 NCCL WARN socketProgressOpt: Call to recv from 11.1.128.128<52035> failed : "
     "Connection reset by peer", "11.1.128.128"),
])
def test_the_peer_is_the_suspect_not_the_reporter(line, peer):
    job, f = kinds(line)
    # a peer that closed the socket ended its process (its own log says why): not a network verdict
    closed = "closed by remote peer" in line
    kind = "nccl_peer_closed" if closed else "nccl_peer_connection_error"
    assert f[kind]["category"] == ("unknown" if closed else "ib_network")
    assert job["culprit_hosts"] == [peer]


def test_a_peer_at_an_ipv6_link_local_address_is_the_sockets_interface_not_a_host():
    # NCCL's bootstrap on an IPoIB interface with only fe80:: (misc/socket.cc prints 'addr%ifname<port>'):
    # such an address routes within one link only, so no peer on another node is reachable through it
    text = ("n1:12246:12246 [0] NCCL INFO Bootstrap : Using ib1:fe80::966d:ae03:b2:62c4%ib1<0>\n"
            "n1:12251:12400 [5] misc/socket.cc:483 NCCL WARN socketStartConnect: Connect to "
            "fe80::966d:ae03:a2:8cf0%ib1<17943> failed : Software caused connection abort\n")
    job, f = kinds(text)
    assert f["nccl_socket_interface"]["category"] == "nccl_config"
    assert "fe80::966d:ae03:a2:8cf0%ib1" in f["nccl_socket_interface"]["message"]
    assert job["culprit_hosts"] == [] and "nccl_peer_connection_error" not in f
    # a global IPv6 address is a peer like any other (its scope kept off the name)
    job, f = kinds("n1:1:2 [0] misc/socket.cc:483 NCCL WARN socketStartConnect: Connect to 2001:db8::7<45763> "
                   "failed : Connection refused\n")
    assert f["nccl_peer_connection_error"]["category"] == "ib_network" and job["culprit_hosts"] == ["2001:db8::7"]


@pytest.mark.parametrize("warn", [
    # NCCL 2.21 (misc/socket.cc socketPollConnect) and 2.8 (include/socket.h connectAddress)
    "misc/socket.cc:533 NCCL WARN socketPollConnect: Connect to 10.0.0.4<56849> returned 113(No route to host) "
    "errno 115(Operation now in progress)",
    "include/socket.h:406 NCCL WARN Connect to 10.0.0.4<42427> failed : No route to host",
    "include/socket.h:406 NCCL WARN Connect to 10.0.0.4<42427> failed : Network is unreachable",
])
def test_no_route_while_bootstrap_brings_the_ranks_together_is_the_set_up(warn):
    # the process's error trail passes bootstrap.cc: the ranks were meeting at start-up, and routing refused the
    # peer's address: the interface NCCL chose or a firewall (icmp-host-prohibited), no link that failed mid-run
    text = ("node5:240:240 [6] NCCL INFO Bootstrap : Using bond0:10.0.0.3<0>\n"
            "node5:240:240 [6] %s\n"
            "node5:240:240 [6] NCCL INFO misc/socket.cc:570 -> 2\n"
            "node5:240:240 [6] NCCL INFO bootstrap.cc:285 -> 2\n"
            "node5:240:240 [6] NCCL INFO init.cc:1534 -> 2\n" % warn)
    job, f = kinds(text)
    assert f["nccl_bootstrap_unreachable"]["category"] == "nccl_config"
    assert "10.0.0.4" in f["nccl_bootstrap_unreachable"]["message"]
    assert "nccl_peer_connection_error" not in f and job["culprit_hosts"] == []
    # without bootstrap in that process's trail (a transport's connection) the peer's network is suspect
    job, f = kinds(text.replace("bootstrap.cc:285", "transport/net.cc:285"))
    assert f["nccl_peer_connection_error"]["category"] == "ib_network" and job["culprit_hosts"] == ["10.0.0.4"]
    # another process's bootstrap trail says nothing of this one
    job, f = kinds(text.replace("node5:240:240 [6] NCCL INFO bootstrap", "node5:241:241 [7] NCCL INFO bootstrap"))
    assert "nccl_bootstrap_unreachable" not in f
    # a refused connection is a listener that is not there (a peer that died or has not started): not routing
    job, f = kinds(text.replace("No route to host", "Connection refused").replace("Network is unreachable",
                                                                                  "Connection refused"))
    assert "nccl_bootstrap_unreachable" not in f and "nccl_peer_connection_error" in f


def test_peer_address_mapped_to_its_host_by_the_log():
    text = ("r10i6n5:1:1 [0] NCCL INFO Bootstrap : Using ib0:10.148.3.247<0>\n"
            "r11i6n2:2:2 [1] include/socket.h:403 NCCL WARN Connect to 10.148.3.247<56821> failed : Connection refused\n")
    job, _f = kinds(text)
    assert job["culprit_hosts"] == ["r10i6n5"]
    text = ("247.3.148.10.in-addr.arpa domain name pointer r10i6n5.ib0.xa.idris.fr.\n"
            "r11i6n2:2:2 [1] include/socket.h:403 NCCL WARN Connect to 10.148.3.247<56821> failed : Connection refused\n")
    job, _f = kinds(text)
    assert job["culprit_hosts"] == ["r10i6n5"]


def test_fqdn_peer_is_shortened_to_a_known_host():
    text = ("gpu-a:1:2 [0] NCCL WARN Net : Connection closed by remote peer gpu-b.cluster.local<47861>\n"
            "gpu-b:3:4 [0] NCCL WARN Net : Connection closed by remote peer gpu-c.example<1>\n")
    job, _f = kinds(text)
    assert "gpu-b" in job["culprit_hosts"] and "gpu-c.example" in job["culprit_hosts"]


@pytest.mark.parametrize("rx", [W.NO_IFACE, W.IFNAME_ENV, W.DUP_GPU, W.INVALID_USAGE, W.SHM, W.SHM_WHY, W.REG_MR,
                                W.GDR_NOMOD, W.CUDA_FAIL, W.FM_WORDS, W.ASYNC, W.PEER_GONE, W.REVERSE_DNS])
def test_patterns_are_linear_on_a_hostile_line(rx):
    for chunk in ("a" * 1024, "1." * 512, "Call to ibv_reg_mr (" + "x" * 100, "NET/IB : " * 50, "'" * 64,
                  "failed to extend " + "/" * 200, "Got async event : " * 20):
        line = (chunk * ((1 << 20) // len(chunk) + 1))[:1 << 20]
        t = time.time()
        rx.search(line)
        assert time.time() - t < 5.0, (rx.pattern, chunk[:20])  # linear: ~0.1 s; quadratic: minutes


def test_hostile_job_log_does_not_raise_and_stays_fast():
    words = ["NCCL WARN", "Duplicate GPU detected : rank", "Got async event :", "/dev/shm", "ibv_reg_mr",
             "Bootstrap : no socket interface found", "Connection closed by remote peer", "<1>", "in-addr.arpa"]
    text = "h:1:2 [0] " + " ".join(words * 12000)
    t = time.time()
    _job, findings = parse_job_logs({"job.log": text[:1 << 20]})
    assert time.time() - t < 10 and isinstance(findings, list)


def test_real_nccl_cases_are_here():
    cases = glob.glob(os.path.join(REAL, "n-*", "case.json"))
    assert len(cases) >= 15


def test_no_ib_device_is_only_a_fallback_when_ib_exists():
    base = ("ip-172-31-1-93:45294:45294 [0] NCCL INFO NET/IB : No device found.\n"
            "ip-172-31-1-93:45294:45294 [0] NCCL INFO NET/Socket : Using [0]%s:172.31.1.93<0>\n"
            "ip-172-31-1-93:45294:45300 [0] NCCL INFO Using network Socket\n")
    _job, f = kinds(base % "ens3")                 # a VM without IB: sockets are all there is
    assert f["nccl_socket_fallback"]["severity"] == "info"
    _job, f = kinds(base % "ib0")                  # IPoIB exists, so IB hardware does: a real fallback
    assert f["nccl_socket_fallback"]["severity"] == "warning"


def test_older_nccl_completion_without_a_peer_is_still_retry_exceeded():
    job, f = kinds("NCCL WARN NET/IB : Got completion with error 12, opcode 0, len 0, vendor err 129\n")
    e = f["ib_completion_error"]
    assert e["category"] == "ib_network" and "IBV_WC_RETRY_EXC_ERR" in e["message"]
    assert "None" not in e["message"] and "vendor err 129" in e["message"]


def test_nvls_refused_on_one_named_host_is_that_node_and_elsewhere_the_jobs_setting():
    line = "%s:1:2 [0] transport/nvls.cc:251 NCCL WARN Cuda failure 1 'invalid argument'\n"
    job, f = kinds(line % "node23")
    assert f["nccl_fabric_manager"]["category"] == "driver" and job["culprit_hosts"] == ["node23"]
    job, f = kinds(line % "node1" + line % "node2")
    assert f["nccl_nvls_unavailable"]["category"] == "nccl_config" and "nccl_fabric_manager" not in f
    assert f["nccl_nvls_unavailable"]["rung"] == "nccl_env"
    _job, f = kinds("transport/nvls.cc:251 NCCL WARN Cuda failure 1 'invalid argument'\n")
    assert "nccl_nvls_unavailable" in f


def test_an_rdma_device_that_cannot_be_opened_makes_sockets_a_fallback():
    text = ("NCCL INFO NCCL_IB_DISABLE set by environment to 0.\n"
            "transport/net_ib.cc:148 NCCL WARN NET/IB : Unable to open device mlx5_bond_0\n"
            "NCCL INFO NET/IB : No device found.\nNCCL INFO Using network Socket\n")
    _job, f = kinds(text)
    fb = f["nccl_socket_fallback"]
    assert fb["severity"] != "info" and "mlx5_bond_0" in fb["message"]


_IB_OFF = ("n1:1:1 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\n"
           "n1:1:1 [0] NCCL INFO NET/Socket : Using [0]ib0:172.19.146.21<0>\n"
           "n1:1:1 [0] NCCL INFO Using network Socket\n")


def test_ib_disabled_on_one_node_is_no_fallback_when_every_ring_hop_stays_inside_it():
    # x43-05: the ring's two ranks are joined by P2P both ways; NET carries nothing
    text = _IB_OFF + ("n1:1:2 [0] NCCL INFO Channel 00/04 :    0   1\n"
                      "n1:1:2 [0] NCCL INFO Channel 00 : 0[18000] -> 1[af000] via P2P/direct pointer\n")
    _job, f = kinds(text)
    assert f["nccl_socket_fallback"]["severity"] == "info"
    assert "inside one node" in f["nccl_socket_fallback"]["message"]


@pytest.mark.parametrize("channels", [
    # two nodes, the log cut before the hops between them (1 -> 2, 3 -> 0) were printed
    "Channel 00/02 :    0   1   2   3\nChannel 00 : 0[1000] -> 1[2000] via P2P/IPC\n"
    "Channel 00 : 2[1000] -> 3[2000] via P2P/IPC\n",
    # a hop over the network
    "Channel 00/02 :    0   1\nChannel 00 : 0[1000] -> 1[2000] via P2P/IPC\n"
    "Channel 00 : 1[2000] -> 0[1000] [send] via NET/Socket/0\n",
    # no ring line: nothing says how many ranks there are
    "Channel 00 : 0[1000] -> 1[2000] via P2P/IPC\n",
])
def test_ib_disabled_stays_a_fallback_unless_the_whole_ring_is_inside_one_node(channels):
    text = _IB_OFF + "".join("n1:1:2 [0] NCCL INFO %s\n" % c for c in channels.splitlines())
    _job, f = kinds(text)
    assert f["nccl_socket_fallback"]["severity"] != "info"


def test_records_joined_on_one_line_are_each_read_and_a_warn_gets_its_process_rank():
    rec = "n1:%d:9 [%d] NCCL INFO comm 0x1 rank %d nranks 16 cudaDev %d nvmlDev %d busId %s commId 0x2 - Init COMPLETE"
    joined = "     ".join(rec % (100 + r, r, r, r, r, bus) for r, bus in ((0, "3000"), (1, "4000"), (5, "9c000")))
    warn = ("n1:100:7 [0] transport/net_ib.cc:1 NCCL WARN NET/IB : Got completion from peer 10.0.0.9<1> with "
            "error 12, opcode 0, len 0, vendor err 129")
    job, f = kinds(joined + "\n" + warn + "\n")
    assert sorted(job["rank_map"]) == [0, 1, 5]
    assert job["rank_map"][5]["host"] == "n1"
    e = f["ib_completion_error"]
    assert e["rank"] == 0 and e["gpu"]["pci"] == "0000:03:00.0"


def test_cuda_that_cannot_initialise_names_the_reporting_host():
    text = ("worker-1: worker-1:2918:4483 [4] init.cc:263 NCCL WARN Cuda failure 'initialization error'\n"
            "worker-0: worker-0:10:11 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n")
    job, f = kinds(text)
    c = f["nccl_cuda_init_failed"]
    assert c["category"] == "driver" and c["rung"] == "drain" and job["culprit_hosts"] == ["worker-1"]


def test_file_line_links_a_markdown_paste_made_are_read_as_text():
    job, f = kinds("r1:1:2 [0] transport/[net_ib.cc:101](http://net_ib.cc:101) NCCL WARN NET/IB : Got completion "
                   "from peer 10.0.0.9<1> with error 12, opcode 0, len 0, vendor err 129\n")
    assert f["ib_completion_error"]["message"].startswith("a rank on r1")


def test_unpaste_is_linear_and_leaves_other_text_alone():
    from gpu_runbook.findings import unpaste
    assert unpaste("[rank1]: [PG 0 Rank 1] x") == "[rank1]: [PG 0 Rank 1] x"
    assert unpaste("> > [rank1]: x") == "[rank1]: x"
    for s in ("[a" * 500000, "[x](http://" + "a" * (1 << 20), ">" * (1 << 20), "[" + "a](" * 300000):
        t = time.time()
        unpaste(s)
        assert time.time() - t < 5.0


def test_sockets_on_loopback_with_refused_peers_is_the_jobs_setup_not_the_network():
    # NCCL < 2.12 prints the interface list with an index ('[0]lo:127.0.0.1<0>'); newer ones without
    for using in ("Bootstrap : Using [0]lo:127.0.0.1<0>", "Bootstrap : Using lo:127.0.0.1<0>",
                  "NET/Socket : Using [0]lo:127.0.0.1<0>"):
        text = ("GPU9:10330:10330 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to lo\n"
                "GPU9:10330:10330 [0] NCCL INFO %s\n"
                "GPU9:10330:10399 [0] NCCL INFO Call to connect returned Connection refused, retrying\n" % using)
        job, f = kinds(text)
        s = f["nccl_socket_interface"]
        assert s["category"] == "nccl_config" and s["severity"] == "critical", using
        assert "loopback" in s["message"] and s["note"] == "`NCCL_SOCKET_IFNAME=lo`"
        assert job["culprit_hosts"] == []
        assert f["nccl_peer_connection_error"]["severity"] == "warning"  # the consequence


def test_loopback_alone_or_beside_a_real_interface_is_no_finding():
    # one node alone: NCCL's sockets on lo carry nothing between nodes, nothing failed
    _job, f = kinds("n1:1:1 [0] NCCL INFO Bootstrap : Using lo:127.0.0.1<0>\n"
                    "n1:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 8 cudaDev 0 busId 1000 - Init COMPLETE\n")
    assert "nccl_socket_interface" not in f
    # a real interface in the list: a refused peer is the peer's, not the set-up's
    _job, f = kinds("n1:1:1 [0] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0> [1]eth0:10.0.0.1<0>\n"
                    "n1:1:2 [0] NCCL INFO Call to connect returned Connection refused, retrying\n")
    assert "nccl_socket_interface" not in f and "nccl_peer_connection_error" in f


@pytest.mark.parametrize("text", ["invalid argument", "invalid resource handle"])
def test_cuda_rejecting_nccls_own_call_is_the_nccl_build(text):
    job, f = kinds("[1] enqueue.cc:1500 NCCL WARN Cuda failure 1 '%s'\n"
                   "Failed, NCCL error x.cpp:308 'unhandled cuda error (run with NCCL_DEBUG=INFO for details)'\n"
                   % text)
    c = f["nccl_cuda_call_rejected"]
    assert c["category"] == "nccl_config" and c["rung"] == "nccl_env"
    assert text in c["message"] and job["culprit_hosts"] == []


@pytest.mark.parametrize("text", ["an illegal memory access was encountered", "uncorrectable ECC error encountered",
                                  "out of memory", "unspecified launch failure"])
def test_cuda_faults_inside_nccl_are_not_called_its_build(text):
    _job, f = kinds("n1:1:2 [0] enqueue.cc:1500 NCCL WARN Cuda failure '%s'\n" % text)
    assert "nccl_cuda_call_rejected" not in f


def test_a_local_completion_error_names_its_reporter_not_the_peer():
    # status 4 (local protection error) is the reporter's own HCA and buffer: the peers did nothing
    text = "".join("%s:1:2 [1] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer "
                   "fe80::966d:ae03:8b:df78%%ib0<53249> with error 4, opcode 32564, len 32564, vendor err 81 (Send)\n"
                   % h for h in ("H100-1", "H100-5"))
    job, f = kinds(text)
    assert job["culprit_hosts"] == ["H100-1", "H100-5"]
    # status 12 (retries exceeded) reported by two hosts about one peer: the peer is the suspect
    job, _f = kinds(text.replace("error 4,", "error 12,"))
    assert job["culprit_hosts"] == ["fe80::966d:ae03:8b:df78%ib0"]


def test_last_error_under_a_launchers_tag_is_read_as_nccls_words():
    # milabench tags every line ('opt-1_3b.0 [stderr] '): PyTorch's head and NCCL's last error under it
    text = ("opt-1_3b.0 [stderr] ncclInternalError: Internal check failed.\n"
            "opt-1_3b.0 [stderr] Last error:\n"
            "opt-1_3b.0 [stderr] Failed to find reverse path from remNode 0/5f000 nlinks 4 to node 0/cb000\n")
    job, f = kinds(text)
    (topo,) = [x for x in f.values() if "reverse path" in x["evidence"]]
    assert topo["category"] == "nccl_config" and "topology" in topo["message"]
    assert "unexplained_errors" not in f  # the head itself is no unexplained line
    # another tag's line under it is not the last error
    job, f = kinds(text.replace("opt-1_3b.0 [stderr] Failed", "other.1 [stdout] Failed"))
    assert not any("reverse path" in x["evidence"] and x["category"] == "nccl_config" for x in f.values())


@pytest.mark.parametrize("signal", ["[8d6bf97c3bf4:3039 :0:3095] Caught signal 7 (Bus error: nonexistent physical address)",
                                    "Fatal Python error: Bus error"])
def test_sigbus_with_nccls_frames_is_its_shared_memory(signal):
    frames = (" 2 0x000000000007587d ncclGroupEnd()  ???:0\n"
              " 5 0x00000000000489b1 ???()  /usr/lib/x86_64-linux-gnu/libnccl.so.2:0\n")
    job, f = kinds(signal + "\n==== backtrace (tid:   3095) ====\n" + frames)
    assert f["nccl_shm_failed"]["category"] == "nccl_config" and f["nccl_shm_failed"]["evidence"] == signal
    # without NCCL on the stack, or a SIGBUS of a memory error (BUS_MCEERR), it says nothing of /dev/shm
    job, f = kinds(signal + "\n 2 0x000000000007587d at::native::copy_()  ???:0\n")
    assert "nccl_shm_failed" not in f
    job, f = kinds("[h:1 :0:2] Caught signal 7 (Bus error: object-specific hardware error)\n" + frames)
    assert "nccl_shm_failed" not in f


def test_sockets_after_a_network_plugin_that_failed_to_start_are_a_fallback():
    # aws-ofi-nccl could not start on an EFA node: NCCL finds no IB device and runs on eth0
    text = ("h:954:3133 [6] nccl_net_ofi_create_plugin:1067 NCCL WARN NET/OFI aws-ofi-nccl initialization failed\n"
            "h:954:3133 [6] NCCL INFO NET/IB : No device found.\n"
            "h:954:3133 [6] NCCL INFO NET/Socket : Using [0]eth0:10.67.132.202<0>\n"
            "h:954:3133 [6] NCCL INFO Using network Socket\n")
    job, f = kinds(text)
    assert (f["nccl_socket_fallback"]["category"], f["nccl_socket_fallback"]["severity"]) == ("nccl_config", "warning")
    assert "network plugin failed to start" in f["nccl_socket_fallback"]["message"]
    job, f = kinds(text.split("\n", 1)[1])  # a cloud VM with no plugin and no IB: sockets are its network
    assert f["nccl_socket_fallback"]["severity"] == "info"


# src/init.cc (NCCL 2.19+): 'comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx commId 0x%llx - Init START',
# then '... - Init COMPLETE' when the communicator came up (vllm-project/vllm#8447, round x39)
INIT_START = ("VM-160-69:561:561 [0] NCCL INFO comm 0x1476dca0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 23000 "
              "commId 0xa015ae7e0a50005d - Init START\n"
              "VM-160-69:561:561 [0] NCCL INFO Channel 00/02 :    0   1\n")
INIT_DONE = ("VM-160-69:561:561 [0] NCCL INFO comm 0x1476dca0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 23000 "
             "commId 0xa015ae7e0a50005d localSize 1 used 541584 bytes on core 10 - Init COMPLETE\n")


def test_a_log_that_stops_inside_nccls_init_is_unknown_never_healthy(tmp_path):
    from gpu_runbook.cli import analyze_paths
    (tmp_path / "nccl.log").write_text(INIT_START)
    assert analyze_paths([str(tmp_path / "nccl.log")])["job"]["verdict"] == "unknown"
    (tmp_path / "nccl.log").write_text(INIT_START + INIT_DONE)
    assert analyze_paths([str(tmp_path / "nccl.log")])["job"]["verdict"] == "healthy"
    _job, f = kinds(INIT_START)
    g = f["nccl_init_incomplete"]
    assert (g["category"], g["severity"]) == ("unknown", "warning") and "0x1476dca0" in g["message"]
    # the same communicator came up: nothing to say of it
    _job, f = kinds(INIT_START + INIT_DONE)
    assert not f
    # NCCL before 2.19 printed no Init START: its lines alone say nothing of an init cut short
    _job, f = kinds(INIT_START.replace(" - Init START", ""))
    assert not f
    # an error that explains the stop speaks instead
    _job, f = kinds(INIT_START + "VM-160-69:561:600 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<1> with "
                                "status=12 opcode=0 len=0 vendor err 129 (Recv)\n")
    assert "nccl_init_incomplete" not in f


def test_a_warn_that_names_its_function_after_the_file_keeps_its_hosts_prefix():
    # x45: '[time] host:pid:tid [dev] transport/nvls.cc:379 (nvlsAllocateMem) NCCL WARN ...' names its host
    line = ("[2026-06-23 15:45:07] gpu-stress-dgc86-xfpt6:420:437 [5] transport/nvls.cc:379 (nvlsAllocateMem) NCCL "
            "WARN Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 401 'the operation "
            "cannot be performed in the present state'.\n")
    job, f = kinds(line)
    assert f["nccl_fabric_manager"]["category"] == "driver"
    assert job["culprit_hosts"] == ["gpu-stress-dgc86-xfpt6"]


def test_a_format_nccl_prints_at_both_levels_is_read_as_the_level_the_line_shows():
    # mlx5dvsymbols.cc: a required symbol's dlvsym failure is a WARN (NCCL gives up on the HCA), an
    # optional one's (MLX5_1.25's data-direct path) an INFO it goes on after (x46: a healthy A100 run)
    info = ("mew0:64904:64921 [1] NCCL INFO dlvsym failed on mlx5dv_get_data_direct_sysfs_path - "
            "/lib/x86_64-linux-gnu/libmlx5.so: undefined symbol: mlx5dv_get_data_direct_sysfs_path, version "
            "MLX5_1.25 version MLX5_1.25\n")
    _job, f = kinds(info)
    assert not [x for x in f.values() if x["severity"] in ("warning", "critical")]
    warn = info.replace("NCCL INFO", "misc/mlx5dvsymbols.cc:55 NCCL WARN").replace(
        "mlx5dv_get_data_direct_sysfs_path", "mlx5dv_is_supported").replace("MLX5_1.25", "MLX5_1.0")
    _job, f = kinds(warn)
    assert [x["severity"] for x in f.values() if x["category"] == "nccl_config"] == ["critical"]
