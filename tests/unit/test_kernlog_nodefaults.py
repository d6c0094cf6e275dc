"""Node faults and wrapped driver lines in the kernel log: OOM (global vs cgroup, every
wording), hung tasks, machine checks, PCIe AER wordings and the device under the port, the
driver core's probe failures, Xid 154's action on a line of its own, mlx5 firmware health."""

import time

from gpu_runbook.kernlog import parse_kernel_log
from gpu_runbook.kernlog.patterns import HUNG_RE, KPROBE_FAIL_RE, MCE_FATAL_RE, OOM_RE, OOM_TASK_RE, mlx5_event


def kinds(findings):
    return sorted(f["kind"] for f in findings)


def test_oom_wordings_all_count():
    for line in ("Out of memory: Killed process 1234 (python) total-vm:1kB",
                 "Out of memory: Kill process 456 (python) score 50 or sacrifice child",
                 "Out of memory: Killed process 123, UID 48, (httpd)"):
        facts, findings = parse_kernel_log("[ 1.0] " + line + "\n")
        assert facts["oom_kills"] == 1, line
        assert kinds(findings) == ["oom_kill"], line
        assert findings[0]["category"] == "memory_leak" and "host ran out of memory" in findings[0]["message"]


def test_summary_constraint_decides_scope_once():
    text = "\n".join([
        "[ 1.0] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/slurm/uid_1/job_7,mems_allowed=0-1,"
        "oom_memcg=/slurm/uid_1/job_7,task_memcg=/slurm/uid_1/job_7/step_0,task=python,pid=77,uid=1",
        "[ 1.1] Out of memory: Killed process 77 (python) total-vm:1kB",   # same kill: counted once, cgroup
        "[ 2.0] Out of memory: Killed process 88 (java) total-vm:1kB",     # no summary of its own: the node's
    ])
    facts, findings = parse_kernel_log(text)
    assert facts["oom_kills"] == 2 and facts["oom_kills_cgroup"] == 1
    by = {f["kind"]: f for f in findings}
    assert "python" in by["oom_kill_cgroup"]["message"] and by["oom_kill_cgroup"]["source"] == "kern.log:2"
    assert "java" in by["oom_kill"]["message"]


def test_summary_alone_is_a_kill():
    text = "[ 1.0] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/,task=torchrun,pid=9,uid=0\n"
    facts, findings = parse_kernel_log(text)
    assert kinds(findings) == ["oom_kill"] and "torchrun" in findings[0]["message"]


def test_node_fault_alone_makes_the_host_unhealthy():
    from gpu_runbook.verdict import host_verdict
    for text in ("[ 1.0] Out of memory: Killed process 1 (python)\n",
                 "[ 1.0] INFO: task python:1234 blocked for more than 120 seconds.\n",
                 "[ 1.0] {1}[Hardware Error]: event severity: fatal\n"):
        _, findings = parse_kernel_log(text)
        assert host_verdict(findings)["verdict"] != "healthy", text


def test_hung_comm_with_colon_and_driver_category():
    _, findings = parse_kernel_log("[ 1.0] INFO: task nvc:[driver]:5403 blocked for more than 120 seconds.\n")
    assert kinds(findings) == ["hung_task"]
    assert "nvc:[driver]" in findings[0]["message"] and findings[0]["category"] == "driver"


def test_machine_checks():
    _, f = parse_kernel_log("[ 1.0] mce: [Hardware Error]: Machine check events logged\n"
                            "[ 1.1] mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 9: 0000000000000000\n")
    assert kinds(f) == ["host_mce_corrected"] and f[0]["severity"] == "info"
    _, f = parse_kernel_log("[ 1.0] {1}[Hardware Error]: event severity: recoverable\n")
    assert kinds(f) == ["host_mce_uncorrected"] and f[0]["severity"] == "critical"
    assert MCE_FATAL_RE.search("[Hardware Error]: Uncorrected error") and not MCE_FATAL_RE.search(
        "[Hardware Error]: Corrected error, no action required.")


def test_aer_correctable_wording_is_not_fatal():
    text = ("[ 1.0] pcieport 0000:00:03.1: AER: Correctable error message received from 0000:00:00.0\n"
            "[ 1.1] pcieport 0000:00:03.1: PCIe Bus Error: severity=Correctable, type=Data Link Layer, (Receiver ID)\n"
            "[ 2.0] pcieport 0000:00:03.1: AER: Uncorrectable (Non-Fatal) error message received from 0000:41:00.0\n")
    _, f = parse_kernel_log(text)
    assert kinds(f) == ["pcie_aer_corrected", "pcie_aer_nonfatal"]


def test_aer_fatal_on_port_names_the_gpu_below():
    text = ("[ 1.0] pcieport 0000:00:03.0: AER: Multiple Uncorrected (Fatal) error received: 0000:00:03.0\n"
            "[ 1.1] pcieport 0000:00:03.0:    [ 5] SDES\n"
            "[ 1.2] nvidia 0000:03:00.0: AER: can't recover (no error_detected callback)\n")
    _, f = parse_kernel_log(text)
    fatal = [x for x in f if x["kind"] == "pcie_aer_fatal"]
    assert fatal and all(x["category"] == "gpu_hardware" for x in fatal)
    assert fatal[0]["gpu"]["pci"] == "0000:03:00.0"


def test_aer_on_an_hca_is_the_network():
    text = ("[ 0.5] mlx5_core 0000:81:00.0: firmware version: 28.39.1002\n"
            "[ 1.0] pcieport 0000:80:01.0: AER: Uncorrected (Fatal) error received: 0000:81:00.0\n")
    _, f = parse_kernel_log(text)
    fatal = [x for x in f if x["kind"] == "pcie_aer_fatal"]
    assert fatal and fatal[0]["category"] == "ib_network" and fatal[0]["ib"]["device"] == "0000:81:00.0"


def test_driver_core_probe_failure_without_nvrm():
    for line, pci in (("nvidia 0000:01:00.0: probe with driver nvidia failed with error -1", "0000:01:00.0"),
                      ("nvidia: probe of 0000:02:00.0 failed with error -1", "0000:02:00.0")):
        m = KPROBE_FAIL_RE.search(line)
        assert m and (m.group("pci") or m.group("pci2")) == pci and m.group("err") == "-1"
        _, f = parse_kernel_log("[ 1.0] " + line + "\n")
        assert kinds(f) == ["gpu_probe_failed"] and f[0]["category"] == "driver" and pci in f[0]["message"]
    # when the driver says why (the open module refusing the GPU), that is the finding
    text = ("[ 1.0] NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:1c82)\n"
            "[ 1.0] NVRM: installed in this system is not supported by open\n"
            "[ 1.0] NVRM: nvidia.ko because it does not include the required GPU\n"
            "[ 1.1] nvidia 0000:01:00.0: probe with driver nvidia failed with error -1\n")
    _, f = parse_kernel_log(text)
    assert "gpu_probe_failed" not in kinds(f) and "driver_open_unsupported" in kinds(f)


def test_xid154_action_on_a_continuation_line():
    text = ("Jun 01 10:00:00 node7 kernel: NVRM: Xid (PCI:0000:41:00): 154, pid=123, name=python,\n"
            "Jun 01 10:00:00 node7 kernel: GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)\n")
    facts, f = parse_kernel_log(text)
    x = [y for y in f if y["kind"] == "xid"][0]
    assert x["xid"] == 154 and x["rung"] == "reboot", x
    assert "Node Reboot Required" in facts["xids"][0]["message"]
    # a stray 'recovery action' line far from any Xid 154 changes nothing
    _, f = parse_kernel_log("[ 1.0] something about a recovery action\n")
    assert f == [] or kinds(f) == ["kernlog_unparseable"]


def test_mlx5_firmware_health_wordings():
    assert mlx5_event("poll_health:852:(pid 0): device's health compromised - reached miss count") == "health"
    assert mlx5_event("print_health_info:458:(pid 0): synd 0x8: unrecoverable hardware error") == "health"
    assert mlx5_event("mlx5_fw_fatal_reporter_err_work:1965:(pid 7): Driver is in error state") == "health"
    assert mlx5_event("wait_func:964:(pid 112): ENABLE_HCA(0x104) timeout. Will cause a leak of a command "
                      "resource") == "cmd_timeout"
    assert mlx5_event("mlx5_cmd_out_err:838:(pid 1): ACCESS_REG(0x805) op_mod(0x1) failed, status bad "
                      "operation(0x2)") is None
    _, f = parse_kernel_log("kernel: [   17.982092] mlx5_core 0000:41:00.0: poll_health:852:(pid 0): device's "
                            "health compromised - reached miss count\n")
    assert kinds(f) == ["ib_hca_health"] and f[0]["category"] == "ib_network"


def test_new_patterns_are_linear_on_hostile_lines():
    mib = 1 << 20
    hostile = [
        "task " + "a:1 " * (mib // 4) + "blocked for more than",
        "of memory: Kill process 1" + ", UID 1," * (mib // 8),
        "oom-kill:constraint=" + ",task=x" * (mib // 7),
        "nvidia " + "0000:01:00.0: " * (mib // 14) + "probe with driver",
        "[Hardware Error]" + "uncorrec" * (mib // 8),
    ]
    for line in hostile:
        t = time.perf_counter()
        for rx in (HUNG_RE, OOM_RE, OOM_TASK_RE, KPROBE_FAIL_RE, MCE_FATAL_RE):
            rx.search(line)
        parse_kernel_log(line + "\n")
        assert time.perf_counter() - t < 5.0, line[:40]


def test_an_oom_report_whose_kill_line_was_cut_is_still_an_oom():
    head = "Apr 25 19:05:01 n1 kernel: [ 7097.0] GC Thread#9 invoked oom-killer: gfp_mask=0x100cca, order=0\n"
    facts, findings = parse_kernel_log(head + "Apr 25 19:05:01 n1 kernel: [ 7097.1] Call Trace:\n")
    assert facts["oom_invoked"] == 1 and kinds(findings) == ["oom_kill"]
    assert "GC Thread#9" in findings[0]["message"] and "not in the log" in findings[0]["message"]
    # with its kill line the kill is counted once, as the kill line says
    _, findings = parse_kernel_log(head + "[ 7097.2] Out of memory: Killed process 42 (java)\n")
    assert kinds(findings) == ["oom_kill"] and "java" in findings[0]["message"]


def test_ten_corrected_dimm_errors_are_a_warning_as_mcelog_counts_them():
    line = "[ 1.0] EDAC MC0: %d CE error on CPU#0Channel#2_DIMM#0 (channel:2 slot:0 page:0x0 offset:0x0)\n"
    _, findings = parse_kernel_log(line % 4 + line % 6)
    (f,) = [f for f in findings if f["kind"] == "host_memory_ce"]
    assert f["severity"] == "warning"
    _, findings = parse_kernel_log(line % 3)
    (f,) = [f for f in findings if f["kind"] == "host_memory_ce"]
    assert f["severity"] == "info"


def test_a_hung_task_whose_call_trace_is_in_the_nvidia_driver_is_the_drivers():
    text = ("[ 7510.1] INFO: task gdscheck:509579 blocked for more than 120 seconds.\n"
            "[ 7510.2] Call Trace:\n[ 7510.3]  down_read+0x43/0xa0\n"
            "[ 7510.4]  os_acquire_rwlock_read+0x35/0x50 [nvidia]\n")
    _, findings = parse_kernel_log(text)
    (f,) = findings
    assert f["kind"] == "hung_task" and f["category"] == "driver" and "[nvidia]" in f["message"]
    # a frame long after the report, or a task with no driver frame, is not the driver's
    _, findings = parse_kernel_log(text.split("[ 7510.4]")[0] + "".join(
        "[ 7511.%d] filler\n" % i for i in range(70)) + "[ 7512.0]  nv_x+0x1/0x2 [nvidia]\n")
    assert [f["category"] for f in findings] == ["unknown"]


def test_an_oops_inside_the_nvidia_driver_is_a_driver_crash():
    text = ("Apr 28 10:17:39 n kernel: BUG: kernel NULL pointer dereference, address: 0000000000000030\n"
            "Apr 28 10:17:39 n kernel: RIP: 0010:nvidia_vma_access+0x1b/0x350 [nvidia]\n")
    _, findings = parse_kernel_log(text)
    (f,) = findings
    assert f["kind"] == "driver_crash" and f["category"] == "driver" and f["rung"] == "reboot"
    assert "nvidia_vma_access" in f["message"]
    # an oops elsewhere is not the driver's
    _, findings = parse_kernel_log("[ 1.0] RIP: 0010:ext4_foo+0x1b/0x350 [ext4]\n")
    assert findings == []


def test_iommu_refusing_a_devices_dma_is_named_per_device():
    amd = "[ 1.0] nvidia 0000:07:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x0003 address=0x80000040 flags=0x0020]\n"
    intel = "[ 2.0] DMAR: [DMA Read NO_PASID] Request device [3b:00.0] fault addr 0x7f000 [fault reason 0x06] PTE Read access is not set\n"
    old = "[ 3.0] AMD-Vi: Event logged [IO_PAGE_FAULT device=41:00.0 domain=0x0000 address=0x1000 flags=0x0000]\n"
    facts, findings = parse_kernel_log(amd * 3 + intel + old)
    got = {f["message"].split("by device ", 1)[1].split()[0]: f for f in findings}
    assert sorted(got) == ["0000:07:00.0", "0000:3b:00.0", "0000:41:00.0"]
    assert all(f["kind"] == "iommu_fault" and f["severity"] == "warning" for f in findings)
    assert "0000:07:00.0 3x" in got["0000:07:00.0"]["message"] and got["0000:07:00.0"]["count"] == 3


def test_oops_and_iommu_patterns_are_linear_on_hostile_lines():
    from gpu_runbook.kernlog.patterns import IOMMU_RE, NV_RIP_RE
    for rx in (IOMMU_RE, NV_RIP_RE):
        for chunk in ("RIP: 0000:" + "a" * 90, "DMAR: [DMA " + "x" * 30, "0000:07:00.0: AMD-Vi: ", "a+0x1/0x2 "):
            line = (chunk * ((1 << 20) // len(chunk) + 1))[:1 << 20]
            t = time.perf_counter()
            rx.search(line)
            assert time.perf_counter() - t < 5.0, (rx.pattern, chunk[:20])
