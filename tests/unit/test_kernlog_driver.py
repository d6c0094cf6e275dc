"""Driver vs hardware, NVLink fabric, Xid lines in the forms they really take, and node
faults with no GPU in them (kernlog/driverlog.py, patterns.py, derive.py, xid_catalog.py).
Lines follow real captures (tests/fixtures/real/k-*)."""

import time

from gpu_runbook.kernlog import parse_kernel_log
from gpu_runbook.xid_catalog import remedy, lookup


def kinds(text):
    return {f["kind"]: f for f in parse_kernel_log(text)[1]}


def xids(text):
    return [f for f in parse_kernel_log(text)[1] if f["kind"] == "xid"]


def test_elided_pci_still_counts_the_code_and_says_what_was_odd():
    fs = xids("kernel: NVRM: Xid (PCI:...): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 11 (...)\n")
    assert [f["xid"] for f in fs] == [145] and fs[0]["gpu"] is None
    assert "odd: PCI address not in the line" in fs[0]["message"]
    assert fs[0]["component"] == "nvlink_fabric" and fs[0]["severity"] == "warning" and fs[0]["rung"] == "none"


def test_xid_address_forms():
    for line in ("NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.",
                 "NVRM: Xid (0000:3b:00.0): 79, GPU has fallen off the bus.",
                 "NVRM: Xid (0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."):
        fs = xids("[ 1.0] " + line + "\n")
        assert [f["xid"] for f in fs] == [79] and fs[0]["gpu"]["pci"] == "0000:3b:00.0", line


def test_two_xids_joined_on_one_line_both_count():
    fs = xids("[ 1.0] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.[ 1.1] NVRM: Xid "
              "(PCI:0000:3b:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)\n")
    by = {f["xid"]: f for f in fs}
    assert set(by) == {79, 154} and by[154]["rung"] == "reboot"
    assert "joined" in by[79]["message"]


def test_cut_line_without_code_is_unparsed_not_dropped_silently():
    assert "xid_unparsed" in kinds("[ 1.0] NVRM: Xid (PCI:0000:3b\n")


def test_xid154_recovery_action_drives_the_rung():
    e = lookup(154)
    assert remedy(e, "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)")[0] == "gpu_reset"
    assert remedy(e, "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)")[0] == "reboot"
    assert remedy(e, "GPU recovery action changed from 0x0 (None) to 0x1 (PF FLR)")[0] == "gpu_reset"
    assert remedy(e, "GPU recovery action changed from 0x0 (None) to 0x3 (Drain P2P)")[0] == "drain"
    assert remedy(e, "GPU recovery action changed from 0x0 (None) to 0x2")[0] == "reboot"


def test_xid62_with_gsp_halt_is_the_driver_and_154_after_it_too():
    text = ("[ 1.0] NVRM: GPU0 _kgspRpcGspEventPmuHalted: Received signal from GSP that PMU has halted.\n"
            "[ 1.1] NVRM: Xid (PCI:0000:01:00): 62, 224f811e 00000000\n"
            "[ 1.2] NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (PF FLR)\n")
    by = {f["xid"]: f for f in xids(text)}
    assert by[62]["category"] == "driver" and by[154]["category"] == "driver"
    assert by[154]["rung"] == "gpu_reset"
    # without the GSP lines, Xid 62 stays the board's
    assert xids("[ 1.1] NVRM: Xid (PCI:0000:01:00): 62, 224f811e 00000000\n")[0]["category"] == "gpu_hardware"


def test_xid45_names_the_nvlink_xid_that_caused_it():
    f = xids("kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1, name=python3, Ch 00000001 caused by previous Xid 149\n")[0]
    assert f["category"] == "gpu_hardware" and f["component"] == "nvlink_fabric"
    alone = xids("[ 1.0] NVRM: Xid (PCI:0000:dc:00): 45, pid=1, name=python3, Ch 00000001\n")[0]
    assert alone["category"] == "application" and "component" not in alone


def test_nvlink_xids_carry_the_fabric_component():
    for code in (74, 137, 144, 149):
        f = xids("[ 1.0] NVRM: Xid (PCI:0000:3b:00): %d, something\n" % code)[0]
        assert f["component"] == "nvlink_fabric" and f["category"] == "gpu_hardware", code
    assert "component" not in xids("[ 1.0] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n")[0]


def test_sxid_fatal_and_nonfatal():
    k = kinds("[ 1.0] nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV "
              "error (First)\n")
    f = k["nvswitch_sxid"]
    assert f["severity"] == "warning" and f["rung"] == "none" and f["component"] == "nvlink_fabric"
    f = kinds("[ 1.0] nvidia-nvswitch0: SXid (PCI:0000:c3:00.0): 24007, Fatal, Link 30 sourcetrack timeout error\n")[
        "nvswitch_sxid"]
    assert f["severity"] == "critical" and f["rung"] == "reboot" and f["sxid"] == 24007
    assert f["category"] == "gpu_hardware"


def test_an_sxid_nvidia_says_only_a_partition_set_up_causes_is_the_drivers():
    # 11004 'ingress invalid ACL': the Fabric Manager User Guide's appendix (vocab/nvrm.py's row) says only
    # an incorrect FM partition configuration causes it (held-out x41-06: GPUs of two partitions in one VM)
    f = kinds("[ 8123.617543] nvidia-nvswitch1: SXid (PCI:0000:00:08.0): 11004, Non-fatal, Link 36 ingress invalid "
              "ACL (First)\n")["nvswitch_sxid"]
    assert (f["category"], f["severity"], f["rung"], f["steps"]) == ("driver", "warning", "none",
                                                                    ["sxid_check_fm_partition"])
    assert "incorrect FM partition configuration" in f["message"]


def test_driver_messages_are_driver_not_hardware():
    mismatch = kinds("[ 9.4] NVRM: API mismatch: the client 'kwin_wayland' (pid 1005)\n"
                     "               NVRM: has the version 595.84, but this kernel module has\n"
                     "               NVRM: the version 595.80.  Please make sure that this\n")
    f = mismatch["driver_version_mismatch"]
    assert f["category"] == "driver" and "595.84" in f["message"] and "595.80" in f["message"]
    assert kinds("[ 1.0] NVRM: GPU 0000:5e:00.0: RmInitAdapter failed! (0x26:0x56:1474)\n")[
        "gpu_init_failed"]["category"] == "driver"
    # the open module's refusal (over several lines) wins over the probe failure that follows it
    k = kinds("kernel: NVRM: The NVIDIA GPU 0000:09:00.0 (PCI ID: 10de:1d01)\n"
              "             NVRM: installed in this system is not supported by open\n"
              "             NVRM: nvidia.ko because it does not include the required GPU\n"
              "kernel: NVRM: The NVIDIA probe routine failed for 1 device(s).\n")
    assert set(k) == {"driver_open_unsupported"} and k["driver_open_unsupported"]["gpu"]["pci"] == "0000:09:00.0"


def test_an_unsupported_gpu_whose_later_line_dmesg_shows_without_its_head():
    # dmesg shows a record of several lines with its later lines indented and no 'NVRM: ' head (an
    # Azure H100 host, driver 580): the refusal is one message, read whole, and it says why the probe failed
    text = ("NVRM: The NVIDIA GPU 000a:00:00.0 (PCI ID: 10de:2330) installed in this system\n"
            "      is not supported by the NVIDIA 580.126.09 driver release.\n"
            "NVRM: The NVIDIA probe routine failed for 1 device(s).\n")
    k = kinds(text)
    assert set(k) == {"driver_gpu_unsupported"}
    assert "580.126.09" in k["driver_gpu_unsupported"]["message"]
    assert k["driver_gpu_unsupported"]["gpu"]["pci"] == "000a:00:00.0"


def test_a_probe_failure_is_said_when_the_lines_before_it_name_no_cause():
    # the refusal's first line alone says nothing of why: the probe failure is not dropped for it
    k = kinds("NVRM: The NVIDIA GPU 000a:00:00.0 (PCI ID: 10de:2330) installed in this system\n"
              "NVRM: The NVIDIA probe routine failed for 1 device(s).\n")
    assert "gpu_probe_failed" in k and k["gpu_probe_failed"]["severity"] == "critical"


def test_edac_ue_is_node_hardware_and_chatter_is_nothing():
    k = kinds("[ 1.0] EDAC MC1: 1 UE memory read error on CPU_SrcID#1_Ha#0_Chan#0_DIMM#0 (channel:0 slot:0)\n"
              "[ 1.1] EDAC MC0: Giving out device to module skx_edac controller Skylake Socket#0 IMC#0\n"
              "[ 1.2] EDAC sbridge MC1: HANDLING MCE MEMORY ERROR\n")
    assert set(k) == {"host_memory_ue"}
    f = k["host_memory_ue"]
    assert f["severity"] == "critical" and f["rung"] == "drain" and f["component"] == "host_memory"


def test_new_patterns_are_linear_on_a_hostile_mib_line():
    bodies = ["NVRM: Xid (" + "(" * (1 << 20), "NVRM: Xid (PCI:" + "0" * (1 << 20),
              "nvidia-nvswitch0: SXid (" + "PCI:" * (1 << 18), "EDAC " + "1 C" * (1 << 19),
              "NVRM: API mismatch: " + "has the version 1." * (1 << 16),
              "NVRM: " + "NVRM: Xid (PCI:...): 1" * (1 << 15)]
    for body in bodies:
        t = time.perf_counter()
        parse_kernel_log("[ 1.0] " + body + "\n")
        assert time.perf_counter() - t < 5.0, body[:40]


def test_a_call_the_driver_refused_its_caller_is_information_a_lost_gpu_is_not():
    # nvassert.c's check printer with the status nvstatusToString spells (open-gpu-kernel-modules)
    head = "[Wed Sep 16 05:36:00 2026] NVRM: GPU0 nvCheckOkFailedNoLog: Check failed: "
    tail = (" returned from gisubscriptionGetGPUInstanceSubscription(pRsClient, hParent, &pGPUInstanceSubscription) "
            "@ kernel_mig_manager.c:6418\n")
    refused = head + "Requested object not found [NV_ERR_OBJECT_NOT_FOUND] (0x00000057)" + tail
    lost = head + "GPU lost from the bus [NV_ERR_GPU_IS_LOST] (0x0000000F)" + tail
    other = head + "Generic Error: Invalid state [NV_ERR_INVALID_STATE] (0x00000040)" + tail
    sev = lambda text: sorted(f["severity"] for f in parse_kernel_log(text)[1])  # noqa: E731
    assert sev(refused) == ["info"]
    (f,) = parse_kernel_log(lost)[1]
    assert f["category"] == "gpu_hardware" and f["severity"] != "info"
    assert sev(other) == ["warning"]  # a status no rule names stays the driver's warning
    # osapi.c free_os_event: an OS event its caller never registered; ref_count.c: a feature's state change refused
    ev = ("[Wed Sep 16 05:23:27 2026] NVRM: free_os_event: failed to find OS event:\n"
          "[Wed Sep 16 05:23:27 2026] NVRM: free_os_event:    hParent: 0xc1d775c9\n"
          "[11677.672849] NVRM: refcntRequestReference_IMPL: Failed to enter state 1 (current state: 0, status: "
          "0x00000056)\n")
    assert set(sev(ev)) == {"info"}
