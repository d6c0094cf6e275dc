"""gpu_reset and ib_restart over REAL SSH on the emulated hosts (tests/testbed), and the fake
hardware under them: the refusals the real tools make (a process or persistence mode holding
the GPU, /dev/infiniband held), counters that keep rising after a restart for a bad cable, a
restart that mends a flapping or a down port. Nothing of Ansible or SSH is faked; the modules
run through `ansible HOST -m MODULE` from the repo's library, and read the host's own sysfs and
/proc views (/opt/fakehw/sys, /opt/fakehw/proc) kept live by the host's `fakehw.py live`.

The scenarios are the Molecule ones of the rung roles (2 hosts each, no Slurm needed here)."""
import itertools
import json
import os
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO
from tests.testbed import fakehw, scenario as scn
from tests.testbed.core import apply_hardware

pytestmark = pytest.mark.cluster

GPU_SCN = os.path.join(REPO, "roles", "rung_gpu_reset", "molecule", "default", "testbed", "cluster.yml")
IB_SCN = os.path.join(REPO, "roles", "rung_ib_restart", "molecule", "default", "testbed", "cluster.yml")
R1, R2 = "gpu-r5-n01", "gpu-r5-n02"          # Xid 48 + pending remap on GPU 1; R2: python (4711) holds it
F1, F2 = "gpu-r6-n01", "gpu-r6-n02"          # mlx5_6 flaps; mlx5_0 has a bad cable
SICK = "0000:2a:00.0"
_calls = itertools.count()


def mod(tb, tmp_path, host, module, args):
    """One `ansible HOST -m MODULE -a ARGS` over SSH; -> (process, the module's result)."""
    tree = tmp_path / ("tree-%d" % next(_calls))
    # minimal: the ad-hoc 'HOST | FAILED!' line read below (loading callback plugins would make an ad-hoc run use
    # ansible.cfg's stdout callback, the playbook console)
    env = {"ANSIBLE_LOAD_CALLBACK_PLUGINS": "1", "ANSIBLE_STDOUT_CALLBACK": "minimal",
           "ANSIBLE_CALLBACKS_ENABLED": "ansible.builtin.tree",
           "ANSIBLE_CALLBACK_TREE_DIR": str(tree)}
    proc = tb.run_ansible(host, "-m", module, "-a", json.dumps(args), env=env, timeout=240)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout[-3000:]
    with open(str(tree / host)) as fh:
        res = json.load(fh)
    res["failed"] = "%s | FAILED!" % host in proc.stdout
    assert res["failed"] == (proc.returncode != 0), proc.stdout[-2000:]
    return proc, res


def changing(tb, host):
    """The fakes' calls that change something, as argv lists (reads are left out)."""
    out = []
    for c in tb.commands(host):
        a = c["argv"]
        if a[0] == "nvidia-smi" and ("-r" in a or "-pm" in a):
            out.append(a)
        elif a[0] == "modprobe" or (a[0] == "systemctl" and a[1] not in ("status", "is-active", "show")):
            out.append(a)
    return out


# ---------------------------------------------------------------- no root needed

def test_hardware_overlay_sets_knobs_processes_and_ports():
    sc = scn.load(GPU_SCN)
    names = scn.host_names(sc)
    _job, states, _f = scn.build(sc, names, {n: "10.201.0.%d" % (11 + i) for i, n in enumerate(names)})
    apply_hardware(states, sc["hardware"])
    assert all(states[n]["reset_refuses_on_persistence"] is True for n in names)
    g = states[R2]["gpus"][1]
    assert g["processes"] == [{"pid": 4711, "name": "python", "mem": 1200}] and g["mem_used"] == 1200
    assert states[R1]["gpus"][1]["processes"] == [] and states[R2]["gpus"][0]["processes"] == []
    apply_hardware(states, {R1: {"hcas": {"mlx5_2": {"rate": "200 Gb/sec (4X HDR)"}},
                                 "ib_holders": [{"pid": 9, "comm": "ibacm", "device": None}]}})
    assert states[R1]["hcas"][2]["rate"] == "200 Gb/sec (4X HDR)" and states[R1]["hcas"][2]["name"] == "mlx5_2"
    assert states[R1]["ib_holders"][0]["comm"] == "ibacm" and "ib_holders" not in states[R2]


def test_live_rerenders_only_what_changes_by_itself(tmp_path):
    sc = scn.load(IB_SCN)
    names = scn.host_names(sc)
    _job, states, _f = scn.build(sc, names, {n: "10.201.0.%d" % (11 + i) for i, n in enumerate(names)})
    root = tmp_path / "fakehw"
    for d in ("sys", "log", "proc"):
        (root / d).mkdir(parents=True)
    fakehw.save(states[F2], str(root))
    fakehw.render_sysfs(states[F2], str(root))
    open(str(root / "commands.log"), "w").close()
    port = root / "sys" / "class" / "infiniband"

    def ctr(hca, name="symbol_error"):
        return int((port / hca / "ports" / "1" / "counters" / name).read_text())
    bad0, ok0 = ctr("mlx5_0"), (port / "mlx5_3" / "ports" / "1" / "counters" / "port_xmit_data").stat().st_mtime_ns
    assert [h["name"] for h in fakehw.live_hcas(states[F2], time.time())] == ["mlx5_0"]
    live = subprocess.Popen([sys.executable, "-S", os.path.join(REPO, "tests", "testbed", "fakehw.py"), "live", "0.2"],
                            env=dict(os.environ, FAKEHW_ROOT=str(root)))
    try:
        time.sleep(1.5)
        assert ctr("mlx5_0") > bad0                                  # the bad cable keeps counting
        assert (port / "mlx5_3" / "ports" / "1" / "counters" / "port_xmit_data").stat().st_mtime_ns == ok0
    finally:
        live.terminate()
        live.wait(10)
    assert (root / "commands.log").read_text() == ""                 # the kernel is not a command


# ---------------------------------------------------------------- on the emulated hosts

@pytest.fixture
def gpu_tb(cluster_factory):
    return cluster_factory(GPU_SCN, hosts=2)


@pytest.fixture
def ib_tb(cluster_factory):
    return cluster_factory(IB_SCN, hosts=2)


def test_fake_nvidia_smi_refuses_reset_while_a_process_or_persistence_holds_the_gpu(gpu_tb):
    tb = gpu_tb
    r = tb.ssh(R2, "nvidia-smi -r -i %s" % SICK)
    assert r.returncode == 255 and "GPU 00000000:2A:00.0: In use by another client" in r.stdout, r
    r = tb.ssh(R1, "nvidia-smi -r -i %s" % SICK)                     # persistence mode holds it
    assert r.returncode == 255 and "In use by another client" in r.stdout, r
    assert tb.state(R1)["gpus"][1]["remap"]["pending"] is True
    r = tb.ssh(R1, "nvidia-smi -pm 0 -i %s && nvidia-smi -r -i %s" % (SICK, SICK))
    assert r.returncode == 0 and "GPU 00000000:2A:00.0 was successfully reset." in r.stdout, r
    assert tb.state(R1)["gpus"][1]["remap"]["pending"] is False
    assert [c["argv"] for c in tb.commands(R1)] == [["nvidia-smi", "-r", "-i", SICK], ["nvidia-smi", "-pm", "0", "-i", SICK],
                                                   ["nvidia-smi", "-r", "-i", SICK]]


def test_gpu_reset_module_over_ssh_resets_only_the_drained_free_gpu(gpu_tb, tmp_path):
    tb = gpu_tb
    base = {"gpu": SICK, "fault_kinds": ["xid:48", "row_remap_pending"]}
    p, r = mod(tb, tmp_path, R1, "gpu_reset", dict(base, node_drained=False))
    assert r["failed"] and r["blocked_by"] == ["node_not_drained"] and changing(tb, R1) == []
    p, r = mod(tb, tmp_path, R2, "gpu_reset", dict(base, node_drained=True))
    assert r["failed"] and r["blocked_by"] == ["compute_processes"], r
    assert "GPU 0000:2a:00.0 is held by python (pid 4711)" in r["msg"] and r["holders"][0]["pid"] == 4711
    assert changing(tb, R2) == [] and tb.state(R2)["gpus"][1]["remap"]["pending"] is True
    p, r = mod(tb, tmp_path, R1, "gpu_reset", dict(base, node_drained=True))
    assert p.returncode == 0 and r["changed"] and r["verified"], r
    assert r["persistence"] == {"before": True, "released": True, "restored": True}
    assert r["after"]["remap_pending"] is False and r["after"]["volatile_uncorrectable"] == 0
    assert changing(tb, R1) == [["nvidia-smi", "-pm", "0", "-i", SICK], ["nvidia-smi", "-r", "-i", SICK],
                                ["nvidia-smi", "-pm", "1", "-i", SICK]]
    g = tb.state(R1)["gpus"][1]
    assert g["persistence"] is True and g["resets"] == 1 and g["ecc"]["volatile"]["dram_unc"] == 0


def test_fake_openibd_and_ib_restart_refuse_while_dev_infiniband_is_held(ib_tb, tmp_path):
    tb = ib_tb
    tb.update_state(F1, lambda st: st.update(ib_holders=[{"pid": 5120, "comm": "pt_main_thread", "user": "alice",
                                                          "device": "uverbs6"}]))
    # the host's /proc view names the holder as lsof would see it
    r = tb.ssh(F1, "readlink /opt/fakehw/proc/5120/fd/3; cat /opt/fakehw/proc/5120/comm")
    assert r.stdout.split() == ["/dev/infiniband/uverbs6", "pt_main_thread"], r
    p, res = mod(tb, tmp_path, F1, "ib_restart", {"node_drained": True, "expected_ports": ["mlx5_6"],
                                                  "sysfs_root": "/opt/fakehw/sys", "proc_root": "/opt/fakehw/proc"})
    assert res["failed"] and res["blocked_by"] == ["dev_infiniband_held"], res
    assert "pt_main_thread (pid 5120) on uverbs6" in res["msg"] and changing(tb, F1) == []
    r = tb.ssh(F1, "systemctl restart openibd; echo rc=$?; systemctl status openibd")
    assert "rc=1" in r.stdout and "pt_main_thread(5120) user alice is using device uverbs6" in r.stdout, r
    assert "Job for openibd.service failed" in r.stderr
    assert tb.state(F1)["hcas"][6]["fault"] == "flapping"           # nothing was unloaded


def test_ib_restart_mends_flapping_and_down_ports_not_a_bad_cable(ib_tb, tmp_path):
    tb = ib_tb
    args = {"node_drained": True, "sysfs_root": "/opt/fakehw/sys", "proc_root": "/opt/fakehw/proc",
            "wait": 30, "soak": 4, "expected_rate": 400}
    tb.set_fault(F1, "ib_down", hca="mlx5_3")
    assert tb.ssh(F1, "cat /opt/fakehw/sys/class/infiniband/mlx5_3/ports/1/state").stdout.strip() == "1: DOWN"
    p, r = mod(tb, tmp_path, F1, "ib_restart", dict(args, expected_ports=["mlx5_6", "mlx5_3"]))
    assert p.returncode == 0 and r["verified"] and r.get("escalate") is None, r
    assert r["still_rising"] == {} and sorted(r["after"]) == ["mlx5_3/1", "mlx5_6/1"]
    assert changing(tb, F1) == [["modprobe", "-r", "nvidia_peermem"], ["systemctl", "restart", "openibd"],
                                ["modprobe", "nvidia_peermem"]]
    assert [h["fault"] for h in tb.state(F1)["hcas"]] == [None] * 8
    p, r = mod(tb, tmp_path, F2, "ib_restart", dict(args, expected_ports=["mlx5_0"]))
    assert p.returncode == 0 and r["changed"] and not r["verified"] and r["escalate"] == "cable", r
    assert r["still_rising"]["mlx5_0/1"]["symbol_error"] > 0
    # after the restart the cable keeps counting: the host's sysfs (kept live) says so
    read = "cat /opt/fakehw/sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error"
    before = int(tb.ssh(F2, read).stdout)
    time.sleep(1.5)
    assert int(tb.ssh(F2, read).stdout) > before
    assert tb.state(F2)["hcas"][0]["fault"] == "bad_cable"
    assert tb.state(F2)["services"]["openibd"]["restarts"] == 1
