"""nvsmi/reset.py: the pure readers of the GPU reset rung (ids, fault kinds, -pm / -r output,
the re-read after the reset). Real nvidia-smi wording from NVIDIA/NVSentinel #1690 and
NVIDIA/gpu-operator #118; the XML comes from the testbed's fake (the same the cluster uses)."""

import pytest

from gpu_runbook import reset_rule
from gpu_runbook.nvsmi import parse_nvidia_smi, reset
from tests.testbed import fakehw

IN_USE_255 = """The following GPUs could not be reset:
  GPU 00000000:1A:00.0: In use by another client

1 device is currently being used by one or more other processes (e.g. Fabric
Manager, CUDA application, graphics application such as an X server, or a
monitoring application such as another instance of nvidia-smi). Please first kill
all processes using this device and all compute applications running in the
system.
"""
OLD_IN_USE = """GPU 00000000:C1:00.0 is currently in use by another process.

1 device is currently being used by one or more other processes (e.g., Fabric Manager, CUDA application, \
graphics application such as an X server, or a monitoring application such as another instance of nvidia-smi). \
Please first kill all processes using this device and all compute applications running in the system.
"""


@pytest.mark.parametrize("text,kind,value", [
    ("0000:3b:00.0", "pci", "0000:3b:00.0"),
    ("00000000:3B:00.0", "pci", "0000:3b:00.0"),
    (" GPU-4a7b2c1d-0000-1111-2222-333344445555 ", "uuid", "GPU-4a7b2c1d-0000-1111-2222-333344445555"),
])
def test_gpu_ids_accepted(text, kind, value):
    assert reset.parse_gpu_id(text) == (kind, value)


@pytest.mark.parametrize("text,words", [
    ("3", "is an index"), ("", "empty"), (None, "empty"), ("3b:00.0", "neither"),
    ("MIG-4a7b2c1d-0000-1111-2222-333344445555", "neither"), ("0000:3b:00.0; reboot", "neither"),
])
def test_gpu_ids_refused_with_a_reason(text, words):
    kind, why = reset.parse_gpu_id(text)
    assert kind is None and words in why


def test_escalation_rungs_come_from_the_taxonomy():
    assert reset_rule.escalation_rungs() == ("reboot", "rma")


def test_faults_a_reset_cannot_fix():
    v = reset_rule.reset_cannot_fix(["row_remap_pending", "ecc_uncorrectable_volatile", "xid:48", "xid"])
    assert v == {"escalate": None, "blocking": [], "unknown": []}
    v = reset_rule.reset_cannot_fix(["gpu_fallen_off_bus", "xid_79"])
    assert v["escalate"] == "reboot" and v["blocking"] == ["gpu_fallen_off_bus (reboot)", "Xid 79 (reboot)"]
    v = reset_rule.reset_cannot_fix(["xid 79", "row_remap_failure"])
    assert v["escalate"] == "rma"                      # the costliest wins
    assert reset_rule.reset_cannot_fix(["remap_failure"])["escalate"] == "rma"
    v = reset_rule.reset_cannot_fix(["bogus", "xid:9999", 7])
    assert v["unknown"] == ["bogus", "Xid 9999", "7"] and v["escalate"] is None


def test_identity_csv_and_finding_the_gpu():
    text = ("0, 00000000:18:00.0, GPU-11111111-2222-3333-4444-555555555555, Enabled\n"
            "garbage line\n"
            "1, 00000000:2A:00.0, GPU-aaaaaaaa-2222-3333-4444-555555555555, Disabled\n"
            "2, not-a-bus, GPU-x, Enabled\n")
    rows = reset.parse_identity_csv(text)
    assert [(r["index"], r["pci"], r["persistence"]) for r in rows] == [
        (0, "0000:18:00.0", True), (1, "0000:2a:00.0", False)]
    assert reset.find_gpu(rows, "pci", "0000:2a:00.0")["index"] == 1
    assert reset.find_gpu(rows, "uuid", "gpu-AAAAAAAA-2222-3333-4444-555555555555")["index"] == 1
    assert reset.find_gpu(rows, "pci", "0000:ff:00.0") is None
    assert reset.parse_identity_csv("\x00\xff<<<") == [] and reset.parse_identity_csv(None) == []


def test_reset_success():
    r = reset.parse_reset_output("GPU 00000000:1A:00.0 was successfully reset.\nAll done.\n", 0)
    assert r["outcome"] == "reset" and r["reset"] == ["0000:1a:00.0"] and r["escalate"] is None


def test_exit_0_without_the_success_line_is_not_a_reset():
    assert reset.parse_reset_output("All done.\n", 0)["outcome"] == "failed"


@pytest.mark.parametrize("text", [IN_USE_255, OLD_IN_USE])
def test_reset_refused_in_use_names_the_holder_text(text):
    r = reset.parse_reset_output(text, 255)
    assert r["outcome"] == "in_use" and r["escalate"] is None
    assert "being used by one or more other processes" in r["holder_text"]
    assert "Fabric Manager" in " ".join(r["holder_text"].split())   # the whole explanation, wrapped or not
    if text is IN_USE_255:
        assert r["held"] == ["0000:1a:00.0"]


def test_reset_lost_timeout_permission_and_other():
    r = reset.parse_reset_output("Unable to determine the device handle for GPU 0000:3B:00.0: Unknown Error\n", 15)
    assert r["outcome"] == "gpu_lost" and r["escalate"] == "reboot"
    assert reset.parse_reset_output("", 15)["outcome"] == "gpu_lost"
    r = reset.parse_reset_output("", 124)
    assert r["outcome"] == "timeout" and r["escalate"] == "reboot"
    r = reset.parse_reset_output("Unable to reset GPU 00000000:3B:00.0: Insufficient Permissions\n", 4)
    assert r["outcome"] == "no_permission" and "Insufficient Permissions" in r["message"]
    r = reset.parse_reset_output("Resetting GPU 00000000:3B:00.0 is not supported.\n", 3)
    assert r["outcome"] == "failed" and "exited 3" in r["message"] and "not supported" in r["message"]
    assert "printed nothing" in reset.parse_reset_output(None, 99)["message"]


def test_persistence_output():
    ok = reset.parse_persistence_output("Disabled persistence mode for GPU 00000000:2A:00.0.\nAll done.\n", 0)
    assert ok["ok"] and ok["outcome"] == "set"
    al = reset.parse_persistence_output("Persistence mode is already Enabled for GPU 00000000:2A:00.0.\nAll done.", 0)
    assert al["ok"] and al["outcome"] == "already"
    assert reset.parse_persistence_output("Unable to determine the device handle for GPU 0000:2A:00.0: "
                                          "Unknown Error", 15)["outcome"] == "gpu_lost"
    assert reset.parse_persistence_output("Insufficient Permissions", 4)["outcome"] == "no_permission"
    bad = reset.parse_persistence_output("", 0)      # exit 0 but it did not say it: not ok
    assert not bad["ok"] and bad["outcome"] == "failed"


def test_holders_message():
    procs = [{"pid": 4711, "process": "python"}, {"pid": 4712, "process": "python"}]
    assert reset.holders_message("0000:3b:00.0", procs) == \
        "GPU 0000:3b:00.0 is held by python (pid 4711), python (pid 4712)"


def _gpu_state(**kw):
    g = {"index": 1, "bus": "2a", "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-aaaaaaaa-2222-3333-4444-555555555555",
         "serial": "1650000000001", "present": True,
         "ecc": {"volatile": {"sram_corr": 0, "sram_unc": 0, "dram_corr": 0, "dram_unc": 0},
                 "aggregate": {"sram_corr": 0, "sram_unc": 0, "dram_corr": 0, "dram_unc": 1}},
         "remap": {"corr": 0, "unc": 1, "pending": False, "failure": False}, "reset_required": False,
         "temp": 31, "power": 70.0, "mem_used": 0, "util": 0, "throttle": [], "processes": []}
    for k, v in kw.items():
        if k == "dram_unc":
            g["ecc"]["volatile"]["dram_unc"] = v
        elif k == "pending":
            g["remap"]["pending"] = v
        else:
            g[k] = v
    st = {"driver_version": "550.90.07", "cuda_version": "12.4", "gpus": [g]}
    return parse_nvidia_smi(fakehw.smi_q_xml(st, [g], set()), "nvidia-smi-q.xml")[0]


def test_after_reset_verified_only_when_everything_cleared():
    a = reset.after_reset(_gpu_state(), "0000:2a:00.0")
    assert a["found"] and a["verified"] and a["not_verified"] == []
    assert a["remap_pending"] is False and a["volatile_uncorrectable"] == 0 and a["reset_required"] is False
    a = reset.after_reset(_gpu_state(pending=True, dram_unc=1, reset_required=True), "0000:2a:00.0")
    assert not a["verified"]
    assert a["not_verified"] == ["a row remap is still pending", "volatile uncorrectable ECC is 1",
                                 "the GPU still says reset required"]


def test_after_reset_without_the_gpu_or_with_garbage():
    assert reset.after_reset(_gpu_state(), "0000:3b:00.0")["verified"] is False
    facts, _ = parse_nvidia_smi("<<<not xml", "nvidia-smi-q.xml")
    a = reset.after_reset(facts, "0000:2a:00.0")
    assert not a["found"] and not a["verified"] and "not in the re-read" in a["not_verified"][0]
    assert reset.after_reset(None, "0000:2a:00.0")["verified"] is False


# ----------------------------------------------------------------------------------- MIG

@pytest.mark.parametrize("cur,pend,blocked", [
    ("Enabled", "Enabled", "MIG mode is Enabled"), ("Enabled", "Disabled", "MIG mode is Enabled"),
    ("Disabled", "Enabled", "a MIG mode change is pending (Disabled -> Enabled)"),
    ("Disabled", "Disabled", None), ("N/A", "N/A", None), (None, None, None), ("Disabled", None, None)])
def test_mig_blocker(cur, pend, blocked):
    why = reset.mig_blocker({"mig_mode": cur, "mig_mode_pending": pend})
    assert (why is None) if blocked is None else why.startswith(blocked)


def test_mig_mode_and_pending_are_read_from_every_nvidia_smi_format():
    xml = ('<?xml version="1.0" ?><nvidia_smi_log><attached_gpus>1</attached_gpus><gpu id="00000000:3B:00.0">'
           '<product_name>NVIDIA A100-SXM4-80GB</product_name><mig_mode><current_mig>Disabled</current_mig>'
           '<pending_mig>Enabled</pending_mig></mig_mode><pci><pci_bus_id>00000000:3B:00.0</pci_bus_id></pci>'
           '</gpu></nvidia_smi_log>')
    facts, _ = parse_nvidia_smi(xml, "nvidia-smi-q.xml")
    g = facts["gpus"][0]
    assert (g["mig_mode"], g["mig_mode_pending"]) == ("Disabled", "Enabled")
    text = ("==============NVSMI LOG==============\n\nAttached GPUs                             : 1\n"
            "GPU 00000000:3B:00.0\n    Product Name                          : NVIDIA A100-SXM4-80GB\n"
            "    MIG Mode\n        Current                           : Enabled\n"
            "        Pending                           : Enabled\n")
    facts, _ = parse_nvidia_smi(text, "nvidia-smi-q.txt")
    g = facts["gpus"][0]
    assert (g["mig_mode"], g["mig_mode_pending"]) == ("Enabled", "Enabled")
    csv = "pci.bus_id, mig.mode.current, mig.mode.pending\n00000000:3B:00.0, Enabled, Disabled\n"
    facts, _ = parse_nvidia_smi(csv, "query.csv")
    g = facts["gpus"][0]
    assert (g["mig_mode"], g["mig_mode_pending"]) == ("Enabled", "Disabled")
