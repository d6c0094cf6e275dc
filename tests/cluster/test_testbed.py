"""The emulated cluster itself: real SSH, real Slurm, stateful fakes, clean tear-down."""
import glob
import json
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest

from tests.testbed import leftovers, our_netns
from tests.testbed import scenario as scn
from tests.testbed.core import BRIDGE, REPO_DIR, SCENARIO_DIR, _procs_of_workdir

pytestmark = pytest.mark.cluster

N01, N02, N03, N04, N05, N06, N07, N08 = ["gpu-r3-n%02d" % i for i in range(1, 9)]


def sh(tb, host, cmd, timeout=30):
    return tb.ssh(host, cmd, timeout=timeout)


def xml_gpus(out):
    root = ET.fromstring(out)
    return {g.get("id"): g for g in root.findall("gpu")}


# ---------------------------------------------------------------- no root needed

@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(SCENARIO_DIR, "*.yml"))),
                         ids=lambda p: os.path.basename(p))
def test_every_scenario_builds_consistent_state_and_job_logs(path, tmp_path):
    sc = scn.load(path)
    names = scn.host_names(sc)
    addrs = {n: "10.201.0.%d" % (11 + i) for i, n in enumerate(names)}
    job, states, faults = scn.build(sc, names, addrs)
    d = scn.write_job_logs(sc, job, states, faults, names, str(tmp_path))
    truth = json.load(open(os.path.join(d, "job.json")))
    assert len(glob.glob(os.path.join(d, "rank-*.log"))) == 8 * len(names)
    combined = open(os.path.join(d, "slurm-%d.out" % job["id"])).read()
    assert "Init COMPLETE" in combined
    cul = truth["culprit"]
    if sc.get("expect", {}).get("culprit") is None:
        assert cul is None or sc.get("expect") is None
    else:
        exp = sc["expect"]["culprit"]
        if any(f.get("fatal") for fl in faults.values() for f in fl):
            assert cul["host"] == exp["host"] and cul["type"] == exp["type"], cul
        else:
            # the suspect comes from the node's state (fabric-not-ready: the node cannot run CUDA),
            # not from a fault that stopped this job: the job logs name no culprit rank
            assert cul is None, cul
            assert exp["host"] in faults and any(f["type"] == exp["type"] for f in faults[exp["host"]])
    if cul and cul.get("rank") is not None and cul["type"] not in ("app_xid",):
        own = open(os.path.join(d, "rank-%d.log" % cul["rank"])).read()
        others = [r for r in range(8 * len(names)) if r != cul["rank"]]
        other = open(os.path.join(d, "rank-%d.log" % others[0])).read()
        assert "Watchdog caught collective operation timeout" in other
        if cul["type"] in ("xid79", "xid119", "smi_hang", "dataloader_stall", "memory_leak"):
            assert "Watchdog" not in own          # the culprit rank is silent
        # the culprit's NCCL busId is the bus of the faulty GPU in the host state
        if "gpu" in cul:
            pass
        st = states[cul["host"]]
        g = st["gpus"][cul["rank"] % 8]
        assert "busId %s000" % g["bus"] in own
    if sc.get("name") == "nccl-socket-fallback":
        assert "NET/Socket : Using" in combined and "NET/IB : Using" not in combined
    # kernel lines sit inside the job window for faults of this job
    for host, fl in faults.items():
        for f in fl:
            if f["type"] in ("xid79", "dbe_remap", "xid94", "xid119") and float(f["at_minutes"]) == 0:
                xl = [e for e in states[host]["kernel"] if "Xid" in e["msg"]]
                assert xl and job["start"] < xl[0]["t"] <= truth["watchdog"]


# ---------------------------------------------------------------- session cluster

def test_each_host_is_its_own_machine_over_real_ssh_via_ansible(cluster, tmp_path):
    r = cluster.run_ansible("gpu_nodes", "-m", "shell", "-a",
                            "echo $(hostname) $(hostname -I) $(command -v nvidia-smi) "
                            "$(grep -o '\"host\": \"[^\"]*\"' /opt/fakehw/state.json) $SSH_CONNECTION",
                            env={"ANSIBLE_LOAD_CALLBACK_PLUGINS": "1",
                                 "ANSIBLE_CALLBACKS_ENABLED": "ansible.builtin.tree",
                                 "ANSIBLE_CALLBACK_TREE_DIR": str(tmp_path)})
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    seen = {}
    for f in os.listdir(tmp_path):
        seen[f] = json.load(open(os.path.join(tmp_path, f)))["stdout"].split()
    assert sorted(seen) == cluster.hosts
    for host, (hn, ip, smi, _k, fh_host, *conn) in seen.items():
        assert hn == host
        assert ip == cluster.addr(host)
        assert smi == "/opt/fakehw/bin/nvidia-smi"
        assert fh_host == '"%s"' % host          # its own /opt/fakehw
        assert conn[2] == cluster.addr(host)     # sshd of that namespace answered
    inv = open(cluster.inventory_path).read()
    assert "[gpu_nodes:children]\ngpu-rack3" in inv and "gpu_health_sysfs_root=/opt/fakehw/sys" in inv
    assert open(cluster.slurm_env_path).read().strip() == "SLURM_CONF=%s" % cluster.slurm_conf


def test_sbatch_job_runs_on_chosen_nodes_and_drain_is_real(cluster):
    jid = cluster.sbatch([N01, N02], wrap="sleep 300")
    try:
        deadline = time.time() + 20
        while cluster.scontrol_show("job", jid).get("JobState") != "RUNNING":
            assert time.time() < deadline, cluster.scontrol_show("job", jid)
            time.sleep(0.2)
        job = cluster.scontrol_show("job", jid)
        assert job["NodeList"] == "gpu-r3-n[01-02]"
        # slurmd of that host really runs the batch script inside the host's namespaces
        assert "sleep 300" in sh(cluster, N01, "ps -eo args").stdout
        cluster.slurm("scontrol", "update", "NodeName=%s,%s" % (N01, N08), "State=DRAIN", "Reason=gpurb-test")
        st = cluster.sinfo_states()
        assert st[N01] == "draining" and st[N08] == "drained", st
        assert "Reason=gpurb-test" in cluster.slurm("scontrol", "show", "node", N01).stdout
        cluster.slurm("scontrol", "update", "NodeName=%s,%s" % (N01, N08), "State=RESUME")
        # after RESUME a node shows a trailing '*' (not responding) for a few seconds (slurm 22.05)
        st = cluster.wait_nodes(lambda s: "drain" not in s and not s.endswith("*"), nodes=[N01, N08], timeout=20)
        assert st[N01] in ("allocated", "mixed") and st[N08] == "idle", st
    finally:
        cluster.slurm("scancel", str(jid), check=False)
    cluster.wait_nodes(lambda s: s == "idle", nodes=[N01, N02], timeout=30)


def test_gpu_reset_applies_pending_remap_and_clears_volatile_dbe(fresh_cluster):
    cluster = fresh_cluster
    before = xml_gpus(sh(cluster, N05, "nvidia-smi -q -x").stdout)["00000000:BA:00.0"]
    assert before.findtext("remapped_rows/remapped_row_pending") == "Yes"
    assert before.findtext("ecc_errors/volatile/dram_uncorrectable") == "1"
    assert before.findtext("gpu_reset_status/reset_required") == "Yes"
    unc0 = int(before.findtext("remapped_rows/remapped_row_unc"))
    r = sh(cluster, N05, "nvidia-smi --gpu-reset -i 6")
    assert r.returncode == 0 and "GPU 00000000:BA:00.0 was successfully reset." in r.stdout, r
    after = xml_gpus(sh(cluster, N05, "nvidia-smi -q -x").stdout)["00000000:BA:00.0"]
    assert after.findtext("remapped_rows/remapped_row_pending") == "No"
    assert int(after.findtext("remapped_rows/remapped_row_unc")) == unc0 + 1
    assert after.findtext("ecc_errors/volatile/dram_uncorrectable") == "0"
    assert after.findtext("ecc_errors/aggregate/dram_uncorrectable") == "1"
    assert after.findtext("gpu_reset_status/reset_required") == "No"


def test_gpu_reset_fails_on_fallen_off_gpu_and_gpu_is_missing(cluster):
    r = sh(cluster, N03, "nvidia-smi -q -x")
    assert r.returncode == 15
    ids = set(xml_gpus(r.stdout))
    assert len(ids) == 7 and "00000000:3A:00.0" not in ids
    assert "Unable to determine the device handle for GPU 0000:3A:00.0: Unknown Error" in r.stderr
    r = sh(cluster, N03, "nvidia-smi --gpu-reset -i 2")
    assert r.returncode == 15 and "Unable to determine the device handle" in r.stdout
    assert "successfully reset" not in r.stdout
    assert cluster.state(N03)["gpus"][2]["present"] is False


def test_gpu_reset_refused_while_compute_processes_run(fresh_cluster):
    cluster = fresh_cluster
    cluster.set_processes(N01, 4, [{"pid": 51234, "name": "pt_main_thread", "mem": 70000}])
    apps = sh(cluster, N01, "nvidia-smi --query-compute-apps=pid,process_name,gpu_bus_id,gpu_uuid,used_memory "
                            "--format=csv,noheader").stdout.strip().splitlines()
    uuid = cluster.state(N01)["gpus"][4]["uuid"]
    assert apps == ["51234, pt_main_thread, 00000000:9A:00.0, %s, 70000 MiB" % uuid]
    r = sh(cluster, N01, "nvidia-smi --gpu-reset -i 4")
    assert r.returncode != 0 and "In use by another client" in r.stdout
    assert cluster.state(N01)["gpus"][4].get("resets", 0) == 0
    cluster.set_processes(N01, 4, [])
    r = sh(cluster, N01, "nvidia-smi --gpu-reset -i 4")
    assert r.returncode == 0 and cluster.state(N01)["gpus"][4]["resets"] == 1


def _ctr(tb, host, hca, name):
    return int(tb.sysfs(host, hca, "counters/" + name))


def test_ib_counters_rise_and_openibd_restart_fixes_flapping_not_bad_cable(fresh_cluster):
    cluster = fresh_cluster
    # both faulty ports accumulate errors while the fault lasts
    s6, s7 = _ctr(cluster, N06, "mlx5_4", "symbol_error"), _ctr(cluster, N07, "mlx5_1", "symbol_error")
    ld6 = _ctr(cluster, N06, "mlx5_4", "link_downed")
    assert ld6 > 0 and s7 > 0
    time.sleep(1.2)
    assert _ctr(cluster, N06, "mlx5_4", "symbol_error") > s6
    assert _ctr(cluster, N07, "mlx5_1", "symbol_error") > s7
    healthy = _ctr(cluster, N06, "mlx5_0", "symbol_error")
    assert healthy == 0
    # restart through the real PATH over SSH
    for h in (N06, N07):
        r = sh(cluster, h, "systemctl restart openibd && systemctl is-active openibd")
        assert r.returncode == 0 and r.stdout.strip() == "active", r
    f6 = _ctr(cluster, N06, "mlx5_4", "symbol_error")
    b7 = _ctr(cluster, N07, "mlx5_1", "symbol_error")
    time.sleep(1.2)
    assert _ctr(cluster, N06, "mlx5_4", "symbol_error") == f6          # flapping fixed: frozen
    assert cluster.sysfs(N06, "mlx5_4", "state") == "4: ACTIVE"
    assert _ctr(cluster, N07, "mlx5_1", "symbol_error") > b7           # bad cable: still climbing
    assert cluster.state(N07)["hcas"][1]["fault"] == "bad_cable"
    time.sleep(2.2)
    k6 = sh(cluster, N06, "dmesg").stdout
    k7 = sh(cluster, N07, "dmesg -T").stdout
    assert re.search(r"mlx5_core 0000:9c:00\.0 ibp156s0: Link up\n", k6)
    assert "Cable error, Bad or shorted cable/module" in k7.splitlines()[-1] or \
        "Bad or shorted cable" in "\n".join(k7.splitlines()[-3:])
    # a flapping port is Down a few seconds out of every 20: perfquery then fails like the real one
    deadline = time.time() + 8
    while True:
        r = sh(cluster, N07, "perfquery -x -C mlx5_1 -P 1")
        if r.returncode == 0 or time.time() > deadline:
            break
        assert "iberror" in r.stderr
        time.sleep(0.5)
    assert int(re.search(r"SymbolErrorCounter:\.+(\d+)", r.stdout).group(1)) >= b7
    ib = sh(cluster, N06, "ibstat mlx5_4").stdout
    assert "State: Active" in ib and "Physical state: LinkUp" in ib


def test_kernel_log_in_real_formats_and_consistent_with_job(fresh_cluster):
    cluster = fresh_cluster
    job = json.load(open(os.path.join(cluster.job_log_dir, "job.json")))
    plain = sh(cluster, N03, "dmesg").stdout
    human = sh(cluster, N03, "dmesg -T").stdout
    iso = sh(cluster, N03, "journalctl -k -o short-iso --no-pager --since '2 hours ago'").stdout
    xid = "NVRM: Xid (PCI:0000:3a:00): 79, pid=48076, name=pt_main_thread, GPU has fallen off the bus."
    assert re.search(r"^\[ *\d+\.\d{6}\] " + re.escape(xid) + "$", plain, re.M)
    m = re.search(r"^\[(\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4})\] " + re.escape(xid) + "$", human, re.M)
    assert m
    t = time.mktime(time.strptime(m.group(1), "%a %b %d %H:%M:%S %Y"))
    assert abs(t - job["incident"]) < 2 and job["start"] < t < job["watchdog"]
    assert re.search(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4} gpu-r3-n03 kernel: " + re.escape(xid) + "$",
                     iso, re.M)
    early = sh(cluster, N03, "journalctl -k -o short-iso --no-pager --since '-1s'").stdout
    assert "Xid" not in early
    # last fallback of the gather module: the host's own /var/log/kern.log (syslog format)
    kl = sh(cluster, N03, "cat /var/log/kern.log").stdout
    assert re.search(r"^\w{3} [ \d]\d \d\d:\d\d:\d\d gpu-r3-n03 kernel: \[ *\d+\.\d{6}\] " + re.escape(xid) + "$",
                     kl, re.M)
    cluster.break_tool(N03, "dmesg", "dmesg: read kernel buffer failed: Operation not permitted")
    try:
        r = sh(cluster, N03, "dmesg -T")
        assert r.returncode == 1 and "Operation not permitted" in r.stderr and not r.stdout
    finally:
        cluster.break_tool(N03, "dmesg", None)
    assert xid in sh(cluster, N03, "dmesg -T").stdout
    # a healthy host has boot noise but no Xid
    ok = sh(cluster, N02, "dmesg -T").stdout
    assert "NVRM: loading NVIDIA UNIX" in ok and "Xid" not in ok


def test_nvidia_smi_hang_needs_a_timeout(fresh_cluster):
    cluster = fresh_cluster
    cluster.set_fault(N04, "smi_hang", gpu=0)
    t0 = time.time()
    r = sh(cluster, N04, "timeout 2 nvidia-smi -q -x; echo rc=$?", timeout=20)
    assert "rc=124" in r.stdout and time.time() - t0 < 10
    # a client that gives up leaves the wedged nvidia-smi behind on the host (down must reap it)
    with pytest.raises(Exception):
        sh(cluster, N04, "nvidia-smi", timeout=2)
    assert "fakehw.py nvidia-smi" in sh(cluster, N04, "ps -eo args").stdout
    cluster.clear_hang(N04)
    assert sh(cluster, N04, "nvidia-smi -L").returncode == 0


def test_reset_state_restores_the_scenario(cluster):
    # runs after the mutating tests above (each used fresh_cluster): everything is back
    g = cluster.state(N05)["gpus"][6]
    assert g["remap"]["pending"] is True and g["ecc"]["volatile"]["dram_unc"] == 1
    assert cluster.state(N06)["hcas"][4]["fault"] == "flapping"
    assert cluster.state(N04)["hang"] is False
    assert "fakehw.py nvidia-smi" not in sh(cluster, N04, "ps -eo args").stdout
    assert not [c for c in cluster.commands(N05) if "--gpu-reset" in c["argv"]]


def test_command_log_records_what_ran_where(cluster):
    cluster.clear_commands(N08)
    sh(cluster, N08, "nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader; ibstat -l; dmesg -T >/dev/null")
    log = cluster.commands(N08)
    assert [c["argv"] for c in log] == [["nvidia-smi", "--query-gpu=index,pci.bus_id", "--format=csv,noheader"],
                                        ["ibstat", "-l"], ["dmesg", "-T"]]
    assert all(c["host"] == N08 and abs(c["t"] - time.time()) < 30 for c in log)
    sh(cluster, N05, "nvidia-smi --gpu-reset -i 0")
    resets = [c for c in cluster.commands(N05) if c["argv"][:2] == ["nvidia-smi", "--gpu-reset"]]
    assert [c["argv"] for c in resets] == [["nvidia-smi", "--gpu-reset", "-i", "0"]]
    assert not [c for c in cluster.commands(N02) if "--gpu-reset" in c["argv"]]
    cluster.reset_state()


# ---------------------------------------------------------------- other scenarios + tear-down

def test_factory_scenario_and_down_leaves_nothing(cluster, cluster_factory):
    sess_pids = cluster.started_pids()
    assert len(sess_pids) >= 8 * 2 + 2          # sshd + slurmd per host, slurmctld, munged
    tb = cluster_factory("nccl-socket-fallback", hosts=2)
    assert not any(os.path.exists("/proc/%d" % p) for p in sess_pids), "session cluster left processes"
    assert tb.hosts == ["gpu-r1-n01", "gpu-r1-n02"]
    assert sh(tb, tb.hosts[1], "hostname").stdout.strip() == tb.hosts[1]
    log = open(os.path.join(tb.job_log_dir, "rank-9.log")).read()
    assert "NET/Socket : Using [0]eth0:%s<0>" % tb.addr(tb.hosts[1]) in log
    # leave a wedged nvidia-smi and an ssh ControlPersist master behind, then tear down
    tb.set_fault(tb.hosts[0], "smi_hang", gpu=0)
    with pytest.raises(Exception):
        sh(tb, tb.hosts[0], "nvidia-smi", timeout=2)
    r = tb.run_ansible("all", "-m", "ping")
    assert r.returncode == 0, r.stdout + r.stderr
    assert os.listdir(tb.control_path_dir)
    pids = tb.started_pids()
    assert len(pids) >= 3
    tb.down()
    assert not our_netns()
    assert not os.path.exists("/sys/class/net/" + BRIDGE)
    assert leftovers() == {"netns": [], "links": [], "rules": [], "routes": []}
    time.sleep(0.2)
    alive = [p for p in pids if os.path.exists("/proc/%d" % p)]
    assert not alive, alive
    assert not os.path.exists(tb.workdir)
    tb.down()                                    # idempotent


def test_down_cleans_up_after_a_crashed_run_without_pidfiles(cluster_factory, tmp_path):
    cluster_factory("healthy", hosts=1)              # (takes the session cluster down, restores it after)
    wd = str(tmp_path / "crashed")
    cli = [sys.executable, "-m", "tests.testbed"]
    r = subprocess.run(cli + ["up", "--hosts", "2", "--scenario", "healthy", "--workdir", wd],
                       capture_output=True, text=True, cwd=REPO_DIR, timeout=120)
    assert r.returncode == 0, r.stderr
    daemons = _procs_of_workdir(wd)
    assert len(daemons) >= 2 * 2 + 2                # 2 sshd + 2 slurmd + slurmctld + munged
    # the process that brought it up is gone; now lose every pidfile as a crash might
    for pf in glob.glob(wd + "/slurm/*.pid") + glob.glob(wd + "/munge/*.pid") + glob.glob(wd + "/hosts/*/sshd.pid"):
        os.unlink(pf)
    r = subprocess.run(cli + ["down"], capture_output=True, text=True, cwd=REPO_DIR, timeout=120)
    assert r.returncode == 0, r.stderr
    time.sleep(0.2)
    assert not [p for p in daemons if os.path.exists("/proc/%d" % p)]
    assert leftovers() == {"netns": [], "links": [], "rules": [], "routes": []}
    assert not os.path.exists(wd)
