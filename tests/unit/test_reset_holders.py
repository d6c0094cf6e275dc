"""nvsmi.holders: what else holds a GPU around nvidia-smi -r (DCGM, nvidia_drm, Fabric Manager, NVLink peers)."""

import pytest

from gpu_runbook.nvsmi.holders import (MONITOR_UNITS, classify_holders, drm_state, fabric_verdict, generation,
                                       holds_gpu, monitor_refusal, not_restored, nvlink_peer_list, nvswitch_evidence,
                                       parse_proc_modules, parse_systemctl_show, parse_topo_peers, reset_plan,
                                       unit_state)

SHOW_ACTIVE = "LoadState=loaded\nActiveState=active\nMainPID=4100\n"
SHOW_MISSING = "Id=dcgm.service\nLoadState=not-found\nActiveState=inactive\nMainPID=0\n"
# nvidia-smi topo -m of a DGX-1 V100 (hybrid cube mesh, trimmed to 4 GPUs), with the underline codes
# newer drivers print in the header, a NIC column and the legend
TOPO = ("\t\x1b[4mGPU0\tGPU1\tGPU2\tGPU3\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n"
        "GPU0\t X \tNV1\tNV1\tSYS\tPXB\t0-19,40-59\t0\t\tN/A\n"
        "GPU1\tNV1\t X \tSYS\tNV2\tPXB\t0-19,40-59\t0\t\tN/A\n"
        "GPU2\tNV1\tSYS\t X \tSYS\tSYS\t20-39,60-79\t1\t\tN/A\n"
        "GPU3\tSYS\tNV2\tSYS\t X \tSYS\t20-39,60-79\t1\t\tN/A\n"
        "NIC0\tPXB\tPXB\tSYS\tSYS\t X \t\t\t\t\n\nLegend:\n\n  X    = Self\n  NV#  = Connection traversing a "
        "bonded set of # NVLinks\n\nNIC Legend:\n\n  NIC0: mlx5_0\n")


def test_unit_state_from_systemctl_show():
    assert unit_state(parse_systemctl_show(SHOW_ACTIVE), "nvidia-dcgm") == {
        "name": "nvidia-dcgm", "loaded": True, "active": True, "state": "active", "pid": 4100}
    u = unit_state(parse_systemctl_show(SHOW_MISSING), "dcgm")
    assert not u["loaded"] and not u["active"] and u["pid"] is None
    assert unit_state(parse_systemctl_show("garbage\x00\nMainPID=x"), "x")["active"] is False
    assert MONITOR_UNITS[0] == "dcgm-exporter"      # the exporter stops first, comes back last


def test_proc_modules_refcount_and_dependents():
    mods = parse_proc_modules("nvidia_drm 98304 4 - Live 0x0\nnvidia_modeset 1314816 6 nvidia_drm, Live 0x0\n"
                              "nvidia 56852480 110 nvidia_uvm,nvidia_modeset, Live 0x0\nshort\n")
    assert mods["nvidia_drm"] == {"refcount": 4, "users": []}
    assert mods["nvidia"]["users"] == ["nvidia_uvm", "nvidia_modeset"] and "short" not in mods


@pytest.mark.parametrize("devices,minor,held", [
    (["nvidiactl", "nvidia1"], 1, True), (["nvidiactl", "nvidia0"], 1, False), (["nvidiactl", "nvidia-uvm"], 1, False),
    (["nvidia3"], None, True), (["dri/card0"], 1, False), ([], 0, False)])
def test_holds_gpu_by_minor(devices, minor, held):
    assert holds_gpu(devices, minor) is held


def test_classify_holders_unit_process_vs_bare():
    procs = [{"pid": 4100, "comm": "nv-hostengine", "devices": ["nvidia0", "nvidia1"]},
             {"pid": 777, "comm": "dcgm-exporter", "devices": ["nvidiactl", "nvidia1"]},
             {"pid": 900, "comm": "nvidia-persistenced", "devices": ["nvidia1"]},
             {"pid": 901, "comm": "python", "devices": ["nvidia0"]}]
    owned, bare = classify_holders(procs, 1, {4100: "nvidia-dcgm"}, daemon_pids=[900])
    assert [(p["pid"], p["unit"]) for p in owned] == [(4100, "nvidia-dcgm")]
    assert [p["pid"] for p in bare] == [777]
    # the persistence daemon is known by its unit's MainPID, not by its name
    _owned, bare = classify_holders(procs, 1, {4100: "nvidia-dcgm"})
    assert [p["pid"] for p in bare] == [777, 900]
    assert monitor_refusal("0000:2a:00.0", bare, [], True)[0] == "gpu_holders"
    assert "dcgm-exporter (pid 777)" in monitor_refusal("0000:2a:00.0", bare, [], True)[1]
    assert monitor_refusal("0000:2a:00.0", [], [{"name": "dcgm"}], False)[0] == "monitors_running"
    assert monitor_refusal("0000:2a:00.0", [], [{"name": "dcgm"}], True) is None


def test_drm_state():
    assert drm_state({}, [])["loaded"] is False
    free = drm_state(parse_proc_modules("nvidia_drm 98304 0 - Live 0x0\n"), [])
    assert free["loaded"] and not free["in_use"]
    x = [{"pid": 2100, "comm": "Xorg", "devices": ["dri/card0", "nvidia0"]}]
    used = drm_state(parse_proc_modules("nvidia_drm 98304 3 - Live 0x0\n"), x)
    assert used["in_use"] and used["message"].startswith("nvidia_drm is in use by Xorg (pid 2100) (refcount 3)")
    counted = drm_state(parse_proc_modules("nvidia_drm 98304 1 - Live 0x0\n"), [])
    assert counted["in_use"] and "something the kernel counts" in counted["message"]


@pytest.mark.parametrize("name,gen", [
    ("NVIDIA A100-SXM4-80GB", "ampere"), ("NVIDIA A100 80GB PCIe", "ampere"), ("NVIDIA A800-SXM4-80GB", "ampere"),
    ("NVIDIA H100 80GB HBM3", "hopper_plus"), ("NVIDIA H200", "hopper_plus"), ("NVIDIA GH200 480GB", "hopper_plus"),
    ("NVIDIA B200", "hopper_plus"), ("NVIDIA GB200", "hopper_plus"), ("Tesla V100-SXM2-32GB", "pre_ampere"),
    ("Tesla T4", "pre_ampere"), ("NVIDIA L40S", "ampere"), ("NVIDIA GeForce RTX 4090", "ampere"),
    ("NVIDIA TITAN RTX", "pre_ampere"), ("NVIDIA TITAN Xp", "pre_ampere"), ("NVIDIA TITAN V", "pre_ampere"),
    ("NVIDIA GeForce GTX 1080 Ti", "pre_ampere"), ("Quadro RTX 8000", "pre_ampere"),
    ("Some Future GPU", None), (None, None), ("", None)])
def test_generation_from_the_product_name(name, gen):
    assert generation(name) == gen


def test_topo_peers_real_layout():
    assert parse_topo_peers(TOPO) == {0: [1, 2], 1: [0, 3], 2: [0], 3: [1]}
    assert parse_topo_peers("") == {} and parse_topo_peers("GPU0\nsegfault") == {}
    rows = [{"index": 0, "pci": "0000:18:00.0"}, {"index": 2, "pci": "0000:3b:00.0"}]
    assert nvlink_peer_list(TOPO, 0, rows) == [{"index": 1, "pci": None}, {"index": 2, "pci": "0000:3b:00.0"}]
    assert nvlink_peer_list(TOPO, 7, rows) is None


def test_fabric_verdict():
    fm_down = {"name": "nvidia-fabricmanager", "loaded": True, "active": False, "state": "failed"}
    fm_up = dict(fm_down, active=True, state="active")
    ev = nvswitch_evidence(["/dev/nvidia-nvswitch0"], None, fm_down)
    assert ev == ["/dev/nvidia-nvswitch0", "unit nvidia-fabricmanager installed"]
    blocked, msg = fabric_verdict("ampere", "NVIDIA A100-SXM4-80GB", ev, fm_down)
    assert blocked == "fabric_manager_not_running"
    assert msg.startswith("Fabric Manager not running (nvidia-fabricmanager: failed)")
    assert fabric_verdict("ampere", "A100", ev, fm_up) is None
    assert fabric_verdict("hopper_plus", "H100", ev, fm_down) is None      # no FM dependency
    assert fabric_verdict("ampere", "A100", [], None) is None                # no NVSwitch: nothing to ask
    assert "not installed" in fabric_verdict(None, "X", ["/dev/nvidia-nvswitch0"], None)[1]


def test_reset_plan_order_and_not_restored():
    hold = {"units": [{"name": "dcgm-exporter"}, {"name": "nvidia-dcgm"}], "nvidia_drm": {"loaded": True}}
    plan = reset_plan("smi", "sc", "mp", "0000:2a:00.0", True, True, hold)
    assert plan == [["sc", "stop", "dcgm-exporter"], ["sc", "stop", "nvidia-dcgm"], ["mp", "-r", "nvidia_drm"],
                    ["smi", "-pm", "0", "-i", "0000:2a:00.0"], ["smi", "-r", "-i", "0000:2a:00.0"],
                    ["smi", "-pm", "1", "-i", "0000:2a:00.0"], ["smi", "-q", "-x", "-i", "0000:2a:00.0"],
                    ["mp", "nvidia_drm"], ["sc", "start", "nvidia-dcgm"], ["sc", "start", "dcgm-exporter"]]
    assert reset_plan("smi", None, None, "p", False, True, {"units": [], "nvidia_drm": None}) == [
        ["smi", "-r", "-i", "p"], ["smi", "-q", "-x", "-i", "p"]]
    msg = not_restored([{"name": "dcgm-exporter", "state": "failed", "error": "exit 1: Job failed",
                         "by_hand": "systemctl start dcgm-exporter"}])
    assert msg == "NOT restored: dcgm-exporter (failed, exit 1: Job failed) -- by hand: systemctl start dcgm-exporter"
