"""diagnose.yml on the emulated cluster: real SSH to 8 namespaced hosts, real Slurm,
fake GPUs/HCAs driven by the scenario files in tests/scenarios."""

import json
import os
import time

import pytest
import yaml

from tests.conftest import REPO

SCENARIOS = os.path.join(REPO, "tests", "scenarios")

# What each fault of the catalogue must be diagnosed as on its host: (verdicts, rungs).
# Job-side faults (DataLoader, leak, socket fallback) leave the hosts healthy: the job logs decide.
HOST_EXPECT = {
    "xid79": ({"gpu_hardware"}, {"reboot", "rma"}),
    "dbe_remap": ({"gpu_hardware"}, {"gpu_reset"}),
    "xid94": ({"gpu_hardware"}, {"gpu_reset", "reboot", "fix_application"}),
    "xid119": ({"driver", "gpu_hardware"}, {"gpu_reset", "reboot"}),
    "app_xid": ({"application"}, {"fix_application"}),
    # a link without a physical link, flapping or erroring is its cable's, not openibd's
    "ib_down": ({"ib_network"}, {"drain", "ib_restart"}),
    "ib_flapping": ({"ib_network"}, {"drain"}),
    "ib_symbol_errors": ({"ib_network"}, {"drain", "rma"}),
    "bad_cable": ({"ib_network"}, {"drain", "rma"}),
    "smi_hang": ({"driver"}, {"reboot"}),
    # CUDA and NCCL cannot use the GPU until Fabric Manager has it: drained, a reboot after FM
    "fabric_not_ready": ({"driver"}, {"reboot"}),
}
JOB_EXPECT = {"dataloader_stall": "dataloader", "memory_leak": "memory_leak", "nccl_socket": "nccl_config"}
# A job-side fault may leave its own trace in the host's kernel log (an OOM kill, a hung task
# on NFS), never a hardware verdict.
JOB_HOST_OK = {"dataloader_stall": {"healthy", "dataloader", "unknown"}, "memory_leak": {"healthy", "memory_leak"},
               "nccl_socket": {"healthy", "nccl_config"}}


def _diagnose(tb, tmp_path, *extra, limit=None, env=None):
    report = tmp_path / "report"
    args = ["playbooks/diagnose.yml", "-i", tb.inventory_path, "-l", limit or tb.rack,
            "-e", "diagnosis_report_dir=%s" % report, "-e", "gpu_health_expected_gpus=8",
            "-e", "gpu_health_expected_ib_rate=400", "-e", "gpu_health_probe_timeout=5"] + list(extra)
    proc = tb.run_ansible(*args, tool="ansible-playbook", env=env)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-3000:]
    with open(report / "report.json") as fh:
        rep = json.load(fh)
    return rep, {h["host"]: h for h in rep["hosts"]}, proc


def _faults(tb):
    sc = tb.sc
    out = {}
    for host, faults in (sc.get("faults") or {}).items():
        targets = tb.hosts if host == "all" else [host]
        for h in targets:
            out.setdefault(h, []).extend(faults)
    return out


def test_rack3_epoch35_rack_wide(cluster, tmp_path):
    tb = cluster
    tb.clear_commands()
    rep, by, proc = _diagnose(tb, tmp_path)
    assert sorted(by) == sorted(tb.hosts)
    # exactly one gather module run per host: one nvidia-smi -q -x and one compute-apps query each
    for h in tb.hosts:
        argvs = [c["argv"] for c in tb.commands(h)]
        assert sum(1 for a in argvs if a[:3] == ["nvidia-smi", "-q", "-x"]) == 1, (h, argvs)
        assert sum(1 for a in argvs if any(x.startswith("--query-compute-apps") for x in a)) == 1, (h, argvs)
    n03 = by["gpu-r3-n03"]
    assert n03["verdict"] == "gpu_hardware" and n03["severity"] == "critical"
    gpu2 = tb.state("gpu-r3-n03")["gpus"][2]
    xid = next(f for f in n03["findings"] if f.get("xid") == 79)
    assert xid["gpu"]["pci"] == gpu2["pci"].lower()[-12:] or xid["gpu"]["pci"].endswith(gpu2["pci"].lower()[-7:])
    assert by["gpu-r3-n05"]["verdict"] == "gpu_hardware" and by["gpu-r3-n05"]["rung"] == "gpu_reset"
    assert by["gpu-r3-n06"]["verdict"] == "ib_network"
    assert any((f.get("ib") or {}).get("device") == "mlx5_4" for f in by["gpu-r3-n06"]["findings"])
    assert by["gpu-r3-n07"]["verdict"] == "ib_network"
    assert any((f.get("ib") or {}).get("device") == "mlx5_1" for f in by["gpu-r3-n07"]["findings"])
    healthy = {h for h, v in by.items() if v["verdict"] == "healthy"}
    assert healthy == {"gpu-r3-n01", "gpu-r3-n02", "gpu-r3-n04", "gpu-r3-n08"}
    # the suspicion order puts the dead GPU first
    assert rep["cluster"]["suspects"][0] == "gpu-r3-n03"
    assert os.path.getsize(tmp_path / "report" / "report.html") > 1000


def test_rack3_epoch35_job_logs_name_the_rank_and_tie_it_to_the_xid(cluster, tmp_path):
    tb = cluster
    rep, by, proc = _diagnose(tb, tmp_path, "-e", "job_log_dir=%s" % tb.job_log_dir)
    job = rep["job"]
    assert job["culprit_hosts"] == ["gpu-r3-n03"]
    (c,) = [c for c in job["culprits"] if c["host"] == "gpu-r3-n03"]
    assert c["explained_by"] == "Xid 79"
    assert job["verdict"] == "gpu_hardware"
    assert job["failed_at"]["epoch"] == 35
    assert len(job["timed_out_ranks"]) == len(tb.hosts) * 8 - len(job["culprit_ranks"])
    culprit = next(f for f in by["gpu-r3-n03"]["findings"] if f["kind"] == "job_culprit")
    assert culprit["rank"] in job["culprit_ranks"] and culprit["xid"] == 79
    assert "culprit rank" in proc.stdout and "gpu-r3-n03" in proc.stdout
    md = (tmp_path / "report" / "report.md").read_text()
    assert "gpu-r3-n03" in md and "Xid 79" in md


def test_job_id_from_slurm_narrows_the_play_and_the_window(cluster, tmp_path):
    tb = cluster
    nodes = ["gpu-r3-n02", "gpu-r3-n03", "gpu-r3-n04"]
    job_id = tb.sbatch(nodes)
    try:
        tb.wait_nodes(lambda st: st.startswith(("alloc", "mix")), nodes=nodes, timeout=30)
        rep, by, _ = _diagnose(tb, tmp_path, "-e", "job_id=%d" % job_id)
    finally:
        tb.slurm("scancel", str(job_id), check=False)
    assert sorted(by) == nodes  # only the job's nodes were touched
    # the kernel-log window starts at the job's start (just now): the old Xid 79 line is out,
    # but the missing GPU still shows in nvidia-smi
    n03 = by["gpu-r3-n03"]
    assert n03["severity"] == "critical"
    assert not any(f.get("xid") == 79 for f in n03["findings"])
    assert any(f["kind"] in ("gpu_missing", "gpu_handle_error") and f["severity"] == "critical"
               for f in n03["findings"]), n03["findings"]


def test_seoul_controller_keeps_the_xid_that_broke_the_job(fresh_cluster, tmp_path):
    """The controller runs at +09:00 (TZ=KST-9, no tzdata needed), the nodes at the machine's
    zone: Slurm prints the job's start in Seoul time without a zone, the nodes print dmesg -T
    in theirs. Read as UTC, the start lies 9 hours after the node's Xid and drops it; read in
    the zone of whoever wrote it, the Xid that broke the job is in the window and the Xid 79
    from before the job stays out."""
    tb = fresh_cluster
    nodes = ["gpu-r3-n03", "gpu-r3-n04"]
    job_id = tb.sbatch(nodes)
    try:
        tb.wait_nodes(lambda st: st.startswith(("alloc", "mix")), nodes=nodes, timeout=30)
        time.sleep(1.5)  # Slurm's start has whole seconds: the fault comes clearly after it
        tb.set_fault("gpu-r3-n04", "xid94", gpu=1)
        rep, by, _ = _diagnose(tb, tmp_path, "-e", "job_id=%d" % job_id, env={"TZ": "KST-9"})
    finally:
        tb.slurm("scancel", str(job_id), check=False)
    start = rep["job"]["slurm"]["start"]
    assert start.endswith("+09:00"), start  # the controller's zone travels with the time
    assert sorted(by) == nodes
    n04 = by["gpu-r3-n04"]
    assert any(f.get("xid") == 94 for f in n04["findings"]), n04["findings"]
    assert n04["verdict"] == "gpu_hardware"
    assert not any(f.get("xid") == 79 for f in by["gpu-r3-n03"]["findings"])  # before the job: out


def _scenario_names():
    return sorted(os.path.splitext(f)[0] for f in os.listdir(SCENARIOS)
                  # the rack and the ladder's scenarios have tests of their own; act-waves is the
                  # benchmark's (20 sick nodes at once, tests/benchmarks/bench_act_waves.py)
                  if f.endswith(".yml") and f not in ("rack3-epoch35.yml", "ladder-e2e.yml", "cluster-faults.yml",
                                                      "act-waves.yml"))


# one scenario per family in the fast tier (a healthy node, a GPU off the bus, a DBE with a remap pending, an
# IB port down, a job-side leak); the rest of the catalogue in the full tier (make test-full)
CORE_SCENARIOS = ("healthy", "xid79-fallen-off-bus", "dbe-remap-pending", "ib-port-down", "memory-leak")


@pytest.mark.parametrize("scenario", [s if s in CORE_SCENARIOS else pytest.param(s, marks=pytest.mark.slow)
                                      for s in _scenario_names()])
def test_fault_catalogue_scenario(cluster_factory, tmp_path, scenario):
    tb = cluster_factory(scenario, hosts=8)
    rep, by, _ = _diagnose(tb, tmp_path, "-e", "job_log_dir=%s" % tb.job_log_dir)
    faults = _faults(tb)
    host_faults = {h: [f for f in fs if f["type"] in HOST_EXPECT] for h, fs in faults.items()}
    for h, v in by.items():
        fs = host_faults.get(h) or []
        if not fs:
            allowed = {"healthy"}
            for f in faults.get(h) or []:
                allowed |= JOB_HOST_OK.get(f["type"], set())
            assert v["verdict"] in allowed, (h, v["verdict"], v["findings"][:2])
            continue
        verdicts, rungs = HOST_EXPECT[fs[0]["type"]]
        assert v["verdict"] in verdicts, (h, fs[0], v["verdict"], v["findings"][:2])
        assert v["rung"] in rungs, (h, fs[0], v["rung"])
        f = fs[0]
        if "gpu" in f and f["type"] != "smi_hang":
            pci = tb.state(h)["gpus"][f["gpu"]]["pci"].lower()
            assert any((x.get("gpu") or {}).get("pci") and pci.endswith(x["gpu"]["pci"][-7:])
                       for x in v["findings"]), (h, pci)
        if "hca" in f:
            assert any((x.get("ib") or {}).get("device") == f["hca"] for x in v["findings"]), (h, f["hca"])
    job_types = [f["type"] for fs in faults.values() for f in fs if f["type"] in JOB_EXPECT]
    if job_types:
        assert rep["job"]["verdict"] == JOB_EXPECT[job_types[0]], rep["job"]
    expected = (yaml.safe_load(open(os.path.join(SCENARIOS, scenario + ".yml"))).get("expect") or {}).get("culprit")
    if expected is None:
        assert rep["cluster"]["suspects"] == []
