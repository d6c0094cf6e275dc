"""lspci -vv: the PCIe links of the GPUs and HCAs (pciutils ls-caps.c cap_express_link)."""

import pytest

from gpu_runbook.cli import analyze_paths
from gpu_runbook.lspci import parse_lspci


def device(header, cap, sta):
    """One device as lspci -vv prints it: its header, then tab-indented capability lines."""
    return (header + "\n\tSubsystem: NVIDIA Corporation Device 1463\n"
            "\tCapabilities: [68] Express (v2) Endpoint, MSI 00\n"
            "\t\tLnkCap:\tPort #0, Speed %s, Width x16, ASPM not supported\n"
            "\t\t\tClockPM+ Surprise- LLActRep- BwNot- ASPMOptComp+\n"
            "\t\tLnkSta:\t%s\n"
            "\t\t\tTrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-\n" % (cap, sta))


GPU = "3b:00.0 3D controller: NVIDIA Corporation GA100 [A100 SXM4 80GB] (rev a1)"
HCA = "0000:4b:00.0 Infiniband controller: Mellanox Technologies MT2910 Family [ConnectX-7]"
BRIDGE = "00:01.0 PCI bridge: Intel Corporation Xeon E7 v3/Xeon E5 v3/Core i7 PCI Express Root Port 1 (rev 02)"


def test_a_gpu_at_half_its_lanes_is_a_warning_of_the_gpu():
    facts, findings = parse_lspci(device(GPU, "16GT/s", "Speed 16GT/s, Width x8 (downgraded)"))
    (f,) = findings
    assert (f["kind"], f["category"], f["severity"]) == ("pcie_link_degraded", "gpu_hardware", "warning")
    assert "x8" in f["message"] and f["source"] == "lspci.txt:6"
    assert facts["devices"] == [{"address": "3b:00.0", "kind": "gpu", "cap": (16.0, 16), "sta": (16.0, 8)}]


def test_a_lower_speed_is_normal_for_an_idle_gpu_but_not_for_an_hca():
    _, (f,) = parse_lspci(device(GPU, "16GT/s", "Speed 2.5GT/s (downgraded), Width x16"))
    assert (f["category"], f["severity"]) == ("gpu_hardware", "info") and "idle" in f["message"]
    _, (f,) = parse_lspci(device(HCA, "32GT/s", "Speed 16GT/s (downgraded), Width x16"))
    assert (f["category"], f["severity"]) == ("ib_network", "warning")


def test_older_pciutils_without_marks_are_compared_by_their_figures_and_a_full_link_says_nothing():
    _, findings = parse_lspci(device(GPU, "16GT/s", "Speed 16GT/s, Width x4"))
    assert [f["severity"] for f in findings] == ["warning"]
    facts, findings = parse_lspci(device(GPU, "16GT/s", "Speed 16GT/s, Width x16") + device(BRIDGE, "8GT/s",
                                                                                          "Speed 2.5GT/s, Width x1"))
    assert findings == [] and [d["kind"] for d in facts["devices"]] == ["gpu"]  # the bridge is not ours


@pytest.mark.parametrize("name", ["lspci.txt", "notes.txt"])
def test_read_by_content_and_a_full_link_is_a_reading(tmp_path, name):
    (tmp_path / name).write_text(device(BRIDGE, "8GT/s", "Speed 8GT/s, Width x16") +
                                 device(GPU, "16GT/s", "Speed 16GT/s, Width x8 (downgraded)"))
    (h,) = analyze_paths([str(tmp_path)])["hosts"]
    assert (h["verdict"], h["severity"]) == ("gpu_hardware", "warning")
    (tmp_path / name).write_text(device(GPU, "16GT/s", "Speed 16GT/s, Width x16"))
    (h,) = analyze_paths([str(tmp_path)], include_facts=True)["hosts"]
    assert h["verdict"] == "healthy" and h["probes"]["lspci.txt"]["usable"]


def test_plain_lspci_lists_no_links_and_is_no_block(tmp_path):
    (tmp_path / "notes.txt").write_text(GPU + "\n" + HCA + "\n")
    doc = analyze_paths([str(tmp_path)], include_facts=True)
    assert not any("lspci.txt" in h["probes"] for h in doc["hosts"])


def kernel(header, *lines):
    """A device's block ending as ls-kernel.c show_kernel() ends it."""
    return header + "\n\tSubsystem: NVIDIA Corporation Device 1463\n\tControl: I/O- Mem+ BusMaster+\n" + \
        "".join("\t%s\n" % ln for ln in lines)


def test_a_gpu_no_driver_holds_is_a_driver_warning_and_nouveau_is_not_the_cuda_driver():
    _, (f,) = parse_lspci(kernel(GPU, "Kernel modules: nvidiafb, nouveau, nvidia_drm, nvidia"))
    assert (f["kind"], f["category"], f["severity"]) == ("gpu_no_nvidia_driver", "driver", "warning")
    assert "no driver is bound" in f["message"] and f["source"] == "lspci.txt:4"
    _, (f,) = parse_lspci(kernel(GPU, "Kernel driver in use: nouveau", "Kernel modules: nouveau, nvidia"))
    assert "nouveau drives it" in f["message"] and f["evidence"] == "Kernel driver in use: nouveau"
    # the NVIDIA driver, or vfio-pci handing the GPU to a virtual machine: facts, no finding
    for drv in ("nvidia", "vfio-pci"):
        facts, findings = parse_lspci(kernel(GPU, "Kernel driver in use: %s" % drv, "Kernel modules: nvidia"))
        assert findings == [] and facts["devices"][0]["driver"] == drv
    # no 'Kernel modules:' line (lspci without module lookup) says nothing of the binding
    assert parse_lspci(kernel(GPU, "Capabilities: [60] Power Management version 3")) == ({}, [])
    # an HCA's binding is not the GPU driver's business
    assert parse_lspci(kernel(HCA, "Kernel modules: mlx5_core"))[1] == []


def test_a_forum_copy_that_lost_its_tabs_is_still_read_by_its_field_lines(tmp_path):
    # forum.proxmox.com thread 179366 (held-out x40-A03): lspci -vv -s 01:00.0 pasted without indentation
    text = ("lspci -vv -s 01:00.0\n\n01:00.0 3D controller: NVIDIA Corporation Device 3182 (rev a1)\n"
            "Control: I/O- Mem+ BusMaster-\nRegion 0: Memory at 2000000000 (64-bit, prefetchable) [size=64M]\n"
            "Kernel modules: nvidiafb, nouveau, nvidia_drm, nvidia\n")
    (tmp_path / "paste.txt").write_text(text)
    doc = analyze_paths([str(tmp_path)], include_facts=True)
    (h,) = doc["hosts"]
    assert (h["verdict"], h["severity"]) == ("driver", "warning")
    assert [f["kind"] for f in h["findings"]] == ["gpu_no_nvidia_driver"]
    # a line that only starts like a field is no lspci block under a header that is not lspci's
    (tmp_path / "paste.txt").write_text("Status: all good\nControl: manual\n")
    assert analyze_paths([str(tmp_path)])["hosts"][0]["verdict"] != "driver"
