#!/usr/bin/env python3
"""Generate module_utils/gpu_runbook/vocab/linux.py: the Linux kernel messages gpu-runbook
reads in a node's kernel log (mlx5 / InfiniBand / IPoIB, EDAC, machine checks, the OOM killer,
hung tasks, PCIe AER, IOMMU faults, panics, a user process's segfault or trap), read from one
pinned kernel release.

Usage (from the repository root)::

    # the source: Debian's linux-source package (the kernel tree is too big to clone)
    cd /tmp && apt-get download linux-source-6.1=6.1.192-3
    .venv/bin/python tests/tools/vocab/gen_linux.py --src /tmp/linux-source-6.1_6.1.192-3_all.deb
    # or an extracted tree (its directory holds Makefile) with --version, or the .tar.xz:
    .venv/bin/python tests/tools/vocab/gen_linux.py --src /tmp/linux-source-6.1 --version 6.1.192-3

(An older package version that the archive no longer serves is on snapshot.debian.org.)
The output is deterministic: the same source gives the same module byte for byte.

What is read: every call of the kernel's print functions (pr_*/dev_*/netdev_*/ibdev_*/pci_*,
printk, panic, and the drivers' wrappers mlx5_core_*, mlx5_ib_*, esw_*, ipoib_warn,
edac_mc_printk, mlx5_log, ...) whose format is a string literal, in SCOPE; each row is that
format (adjacent literals, HW_ERR / FW_BUG macros and the wrapper's own fixed text joined),
with the file and line of the call. Error and warning levels are all kept; info/notice
only where INFO_KEEP says (healthy states, and info lines that read like an error).
panic(fmt) rows are written as the line panic() prints: "Kernel panic - not syncing: fmt".
DERIVED rows spell out an argument whose values are literals in the source (the mlx5 port
module states and errors, AER severities, the OOM killer's message and constraint, the MCE
exception flag).
"""

import argparse
import os
import re
import subprocess
import sys
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(HERE))), "module_utils"))

from common import join_literals, write_table  # noqa: E402
from gpu_runbook.vocab import compile_format, instantiate, match_fragments, matchable  # noqa: E402

PIN = "6.1.192-3"            # Debian's linux-source-6.1 package version (upstream 6.1.192)
GENERATOR = "tests/tools/vocab/gen_linux.py"
ORIGIN = ("Debian package linux-source-6.1 (its usr/src/linux-source-6.1.tar.xz), "
          "the kernel.org tree https://git.kernel.org/pub/scm/linux/kernel/git/stable/linux.git v6.1.192 "
          "with Debian's patches; COMMIT is the Debian package version, not a git commit")
LICENCE = ("GPL-2.0 (COPYING); the mlx5, InfiniBand core and IPoIB files are dual GPL-2.0 / "
           "Linux-OpenIB BSD (their SPDX headers)")
TS = "[ 1234.567890] "

MLX5 = "drivers/net/ethernet/mellanox/mlx5/core/"
SCOPE = (MLX5, "drivers/infiniband/core/", "drivers/infiniband/ulp/ipoib/", "drivers/infiniband/hw/mlx5/",
         "drivers/edac/edac_mc.c", "drivers/edac/ghes_edac.c", "arch/x86/kernel/cpu/mce/", "mm/oom_kill.c",
         "kernel/hung_task.c", "drivers/pci/pcie/aer.c", "drivers/pci/pcie/err.c", "drivers/iommu/amd/iommu.c",
         "drivers/iommu/intel/", "kernel/panic.c", "kernel/module/", "arch/x86/mm/fault.c",
         "arch/x86/kernel/traps.c")
# left out of the scope above: the MCE error injector (a test module), the iWARP port mapper
# (iWARP is not used on InfiniBand/RoCE GPU clusters; its messages are all info-level), and the
# detail lines of a kernel oops's register dump (fault.c show_ldttss '%s: NULL', dump_pagetable: too
# little text of their own, and the oops's head line says what happened)
SKIP_FILES = ("arch/x86/kernel/cpu/mce/inject.c", "drivers/infiniband/core/iwpm_msg.c",
              "drivers/infiniband/core/iwpm_util.c", "drivers/infiniband/core/device.c:__ibdev_printk",
              "arch/x86/mm/fault.c:show_ldttss", "arch/x86/mm/fault.c:dump_pagetable")
# header files read for the macros the formats use
EXTRA = ("Makefile", "include/linux/printk.h", "drivers/net/ethernet/mellanox/mlx5/core/mlx5_core.h")

# ---------------------------------------------------------------------------------------------
# the print functions: name -> (index of the format argument, level or None = read from the
# level argument, fixed text the wrapper prints before the format, how the line starts)
# "how the line starts" (PREFIX below): "mlx5pid" mlx5_core_* with "func:line:(pid N): ",
# "mlx5dev" dev_* of the mlx5 PCI device, "netdev" netdev_*, "ibpid" mlx5_ib_* on the IB
# device with the pid prefix, "ibdev" ibdev_*, "dev" dev_*/pci_*, "ipoib" ipoib_*,
# "edacmc"/"edac" the EDAC macros, "pr" pr_*/printk (the file's pr_fmt), "panic"
CALLS = {}


def _calls(names, idx, level, pre="", how="pr"):
    for n in names.split():
        CALLS[n] = (idx, level, pre, how)


_calls("mlx5_core_err mlx5_core_err_rl mlx5dr_err fs_err", 1, "error", how="mlx5pid")
_calls("mlx5_core_warn mlx5_core_warn_once mlx5_core_warn_rl fs_warn fs_warn_once mlx5e_rss_warn", 1, "warning",
       how="mlx5pid")
_calls("mlx5_core_info_rl", 1, "info", how="mlx5pid")
_calls("mlx5_core_info mlx5dr_info", 1, "info", how="mlx5dev")
_calls("qos_err", 1, "error", "QoS: ", "mlx5pid")
_calls("qos_warn", 1, "warning", "QoS: ", "mlx5pid")
_calls("mlx5_fpga_err", 1, "error", "FPGA: ", "mlx5pid")
_calls("mlx5_fpga_warn mlx5_fpga_warn_ratelimited", 1, "warning", "FPGA: ", "mlx5pid")
_calls("mlx5_fpga_info", 1, "info", "FPGA: ", "mlx5dev")
_calls("esw_warn", 1, "warning", "E-Switch: ", "mlx5dev")
_calls("esw_info", 1, "info", "E-Switch: ", "mlx5dev")
_calls("mlx5_log", 2, None, how="mlx5pid")
_calls("mlx5_ib_err", 1, "error", how="ibpid")
_calls("mlx5_ib_warn", 1, "warning", how="ibpid")
_calls("ipoib_warn", 1, "warning", how="ipoib")
_calls("ipoib_printk", 2, None, how="ipoib")
_calls("edac_mc_printk", 2, None, how="edacmc")
_calls("edac_printk", 2, None, how="edac")
_calls("panic", 0, "panic", how="panic")
_calls("mce_panic", 0, "panic", how="mcepanic")
_calls("printk printk_ratelimited printk_once", 0, None)
_calls("dev_printk pci_printk", 2, None, how="dev")
_calls("netdev_printk", 2, None, how="netdev")
_LEVELS = {"emerg": "error", "alert": "error", "crit": "error", "err": "error", "warn": "warning",
           "notice": "info", "info": "info"}
for _fam, _idx, _how in (("pr", 0, "pr"), ("dev", 1, "dev"), ("netdev", 1, "netdev"), ("ibdev", 1, "ibdev"),
                         ("pci", 1, "dev")):
    for _l, _lvl in _LEVELS.items():
        for _suf in ("", "_ratelimited", "_once"):
            _calls("%s_%s%s" % (_fam, _l, _suf), _idx, _lvl, how=_how)
CALLS["pr_warning"] = CALLS["pr_warn"]

KERN = {"KERN_EMERG": "error", "KERN_ALERT": "error", "KERN_CRIT": "error", "KERN_ERR": "error",
        "KERN_WARNING": "warning", "KERN_NOTICE": "info", "KERN_INFO": "info", "KERN_DEBUG": "debug",
        "KERN_CONT": "cont", "KERN_DEFAULT": "warning", "LOGLEVEL_ERR": "error", "LOGLEVEL_WARNING": "warning",
        "LOGLEVEL_INFO": "info"}
MACROS = {"HW_ERR": "[Hardware Error]: ", "FW_BUG": "[Firmware Bug]: ", "FW_WARN": "[Firmware Warn]: ",
          "FW_INFO": "[Firmware Info]: ", "EDAC_MC": ""}
MACROS.update({k: "" for k in KERN})
CALL_RE = re.compile(r"(?<![\w.>#])(%s)\s*\(" % "|".join(sorted(CALLS, key=len, reverse=True)))

# the mlx5e health reporters build their message with snprintf(err_str, ...) and print it with
# netdev_err(priv->netdev, "%s\n", err_str) (en/health.c mlx5e_health_report)
SNPRINTF_ERR_STR = re.compile(r"(?<![\w.>])snprintf\s*\(\s*err_str\s*,")

# how each kind of line starts (the device names are samples)
MLX5_DEV = "mlx5_core 0000:3b:00.0: "
PREFIX = {
    "mlx5pid": MLX5_DEV + "handler:{line}:(pid 1234): ",
    "mlx5dev": MLX5_DEV,
    "ibpid": "infiniband mlx5_0: handler:{line}:(pid 1234): ",
    "ibdev": "mlx5_core 0000:3b:00.0 mlx5_0: ",
    "ipoib": "ib0: ",
    "edacmc": "EDAC MC0: ",
    "edac": "EDAC MC: ",
    "panic": "",
}
# dev_*/netdev_* on a device of each area (what dev_name/netdev_name print)
DEV_BY_AREA = (
    (MLX5, MLX5_DEV, "mlx5_core 0000:3b:00.0 eth0: "),
    ("drivers/infiniband/ulp/ipoib/", "infiniband mlx5_0: ", "infiniband mlx5_0 ib0: "),
    ("drivers/infiniband/", "infiniband mlx5_0: ", "mlx5_core 0000:3b:00.0 eth0: "),
    ("drivers/pci/", "pcieport 0000:00:03.1: ", ""),
    ("drivers/iommu/amd/", "mlx5_core 0000:3b:00.0: ", ""),
    ("drivers/iommu/intel/", "pci 0000:3b:00.0: ", ""),
    ("", "", ""),
)
IPOIB_NETDEV = "ib0: "

# ---------------------------------------------------------------------------------------------
# informational messages kept (the rest of info/notice is left out): the ones that mean healthy
# and the ones a line reader would take for an error
INFO_KEEP = re.compile(
    r"fail|error|\berr\b|timeout|timed out|time-out|abort|fatal|bad |\binvalid|unable|cannot|can't|couldn't|"
    r"not supported|unsupported|lost|\bdown\b|Link up|reset|recover|overflow|corrupt|killed|Killed|oom|OOM|"
    r"Out of memory|health|firmware version|sufficient power|power capability|enabled with IRQ|"
    r"Virtualization Technology|IOMMU enabled|Port module|Machine check|CMCI|storm|not syncing|panic|"
    r"Shutdown was called|responds to PCI|Live patch|Tasks state|oom_score_adj|Rebooting|Uncorrected|"
    r"Corrected|hung|blocked|poison|crappy BIOS|error report|taints kernel|tainting kernel", re.I)
# informational lines that a reader might flag but that report nothing wrong
INFO_DROP = re.compile(r"Device state = %d health sensors|wait vital counter|WQE DUMP|Self test|xfrm|"
                       r"DIMM%i size|allocate memory for EDAC|register with the EDAC|is not present|"
                       r"Unknown option|ignore not valid path|pte level|MCE support|mce argument|"
                       r"no error details|Unable to init device /dev/mcelog, already", re.I)

# ---------------------------------------------------------------------------------------------
# classification: (path regex, message regex, kind, severity, meaning); the first that matches
# wins ("" = any path / any message). severity "lvl" = warning for error/warning lines and info
# for info lines; "benign" rows get category healthy and severity ok.
IB, U = "logged_ib_error", "logged_error"
LVL = "lvl"
MLX5_CONFIG = (r"^" + re.escape(MLX5) +
               r"(en_tc|en/tc|en/rep|en_rep|esw/|eswitch|steering/|en_accel/|fpga/|sf/|en_dcbnl|en_ethtool|"
               r"en_fs|en/fs|en_arfs|fs_|lib/fs_|lib/geneve|lib/vxlan|lib/mpfs|lib/port_tun|lib/macsec|"
               r"lib/crypto|lib/dm\.c|lib/smfs|lib/hv|lib/clock|lib/aso|en/xsk|en_selftest|rl\.c|qos|"
               r"en/qos|en/htb|devlink|en/devlink|sriov|ecpf|diag/|en/mapping|en/mod_hdr|en/port_buffer|"
               r"en/params|en/monitor_stats|en/ptp|en/trap|en/xdp|en/rss|en/rx_res|en/selq|en/channels|"
               r"en/tir|en/rqt|en/hv_vhca|debugfs|mcg\.c)")
RULES = (
    # --- a user-space process's crash, as the kernel reports it ----------------------------------
    # arch/x86/mm/fault.c show_signal_msg ('python[1234]: segfault at 0 ip ... error 4 in libx.so[...]') and
    # traps.c show_signal ('traps: python[1234] general protection fault ip:... error:0 in libc.so.6[...]'):
    # the process died of its own code or a library's (the line names which), the node is not at fault
    (r"^arch/x86/mm/fault\.c$", r"segfault at", "logged_application_error", "warning",
     "a user-space process crashed (SIGSEGV) in the code the line names: the program's or a library's fault, not "
     "the node's; the job that ran it died"),
    (r"^arch/x86/kernel/traps\.c$", r"ip:%lx sp:%lx error:%lx|attempts to use CLI/STI", "logged_application_error",
     "warning", "a user-space process was killed by a CPU exception in its own code (a general protection fault, "
     "an invalid opcode, a divide error): the program's fault, not the node's"),
    (r"^arch/x86/(?:mm/fault|kernel/traps)\.c$", r"", U, LVL,
     "the kernel's own fault handling (an oops, a CPU exception in kernel code): the node's kernel misbehaved"),
    # --- mlx5 core ------------------------------------------------------------------------------
    (MLX5 + "en_main.c", r"^Link up$", "benign", "ok", "the Ethernet/RoCE port's link came up"),
    (MLX5 + "en_main.c", r"^Link down$", "ib_link_dropped", "warning",
     "the Ethernet/RoCE port of this HCA lost its link (cable, transceiver or switch port; or the peer went down)"),
    (MLX5 + "health.c", r"PCI slot is unavailable|PCI channel offline", "ib_device_missing", "critical",
     "the HCA no longer answers on PCIe: it fell off the bus or its slot was reset"),
    (MLX5 + "health.c", r"^Health issue observed", "ib_hca_health", "critical",
     "the HCA's firmware reported a health syndrome (the lines after it give the syndrome and firmware version)"),
    (MLX5 + "health.c", r"Fatal error %u detected|health compromised|recovery fl|recovery failed|"
     r"Driver is in error state|handling bad device|health works are not permitted", "ib_hca_health", "critical",
     "the HCA entered its fatal error state: the driver resets it or unloads; its ports drop until it recovers"),
    (MLX5 + "health.c", r"health recovery succeeded", "ib_hca_health", "warning",
     "the HCA recovered from a fatal error (its ports went down meanwhile)"),
    (MLX5 + "health.c", r"^(assert_|fw_ver|time |hw_id|rfr |severity |irisc_index|synd |ext_synd|raw fw_ver)",
     "ib_hca_health", "warning", "a detail line of an HCA health report ('Health issue observed' before it)"),
    (MLX5 + "health.c", r"NIC SW reset|disabled NIC|NIC IFC", "ib_hca_health", "warning",
     "the HCA is being reset after an error"),
    (MLX5 + "health.c", r"", IB, LVL, ""),
    (MLX5 + "cmd.c", r"timeout|timed out|No done completion|after timeout", "ib_cmd_timeout", "warning",
     "a firmware command of the HCA did not complete in time: the firmware is slow or wedged"),
    # a refused command is the caller's problem far more often than the HCA's: monitoring agents
    # that read registers the firmware does not offer (gpud #1164, node_exporter #3434) log it
    (MLX5 + "cmd.c", r"failed, status %s\(0x%x\), syndrome", IB, "info",
     "a firmware command was refused (status and syndrome shown): usually a query the firmware does not "
     "support, sent by a tool or agent; not a link or HCA fault by itself"),
    (MLX5 + "fw_reset.c", r"PCI Link up|responds to PCI config cycles again|Live patch updated", "benign", "ok",
     "the HCA came back after a firmware reset or live patch"),
    (MLX5 + "fw_reset.c", r"", "ib_hca_health", LVL, "a firmware reset of the HCA (its ports go down meanwhile)"),
    (MLX5 + "lib/pci_vsc.c", r"", "ib_hca_health", LVL, ""),
    (MLX5 + "main.c", r"^firmware version: ", "benign", "ok", "the HCA's firmware version at probe"),
    (MLX5 + "main.c", r"^Shutdown was called", "benign", "ok", "the driver is shut down with the host"),
    (MLX5 + "main.c", r"Waiting for FW initialization", "ib_hca_health", "warning",
     "the HCA's firmware is still initialising (the driver waits, then gives up)"),
    (MLX5 + "main.c", r"Firmware over %llu MS|wait vital failed", "ib_hca_health",
     "critical", "the HCA's firmware did not finish initialising: the device is unusable until it does"),
    (MLX5 + "main.c", r"Device state = %d pci_status", "ib_hca_health", "warning",
     "PCI error recovery of the HCA (after an AER or a slot reset)"),
    (MLX5 + "main.c", r"crdump", IB, "info", "the firmware crash-dump facility could not be enabled"),
    (MLX5 + "main.c", r"aborting|failed with error code|init_one failed|load_one failed|init hca failed|"
     r"enable hca failed|Failed to create EQs|Failed to alloc IRQs|failed to initialize", IB, "critical",
     "the HCA failed to initialise: its ports are unusable"),
    (MLX5 + "events.c", r"High temperature", "ib_hca_health", "warning", "the HCA reports an overheating sensor"),
    (MLX5 + "events.c", r"insufficient power on the PCIe slot", "ib_pcie_power", "warning",
     "the HCA's PCIe slot gives it less power than it needs"),
    (MLX5 + "events.c", r"not advertised", "ib_pcie_power", "info",
     "the PCIe slot does not advertise its power budget to the HCA"),
    (MLX5 + "events.c", r"advertised sufficient power", "benign", "ok", "the PCIe slot powers the HCA enough"),
    (MLX5 + "eq.c", r"CQ error on CQN|bogus CQ", IB, "warning", "the HCA reported an error on a completion queue"),
    (MLX5 + "eq.c", r"Recovered %d EQEs", IB, "warning", "the driver recovered missed events (lost interrupts)"),
    (MLX5 + "pagealloc.c", r"corruption|FW did not return all pages", "ib_hca_health", "warning", ""),
    (MLX5 + "port.c", r"mcia|I2C address", IB, "info",
     "reading the port module's EEPROM failed (often no module in the cage)"),
    (MLX5 + "en_main.c", r"TX timeout detected", IB, "warning",
     "a transmit queue of the Ethernet/RoCE port stalled; the driver recovers it"),
    (MLX5 + "en/reporter_tx.c", r"TX timeout on queue", IB, "warning",
     "a transmit queue of the Ethernet/RoCE port stalled; the driver recovers it"),
    (MLX5 + "en/reporter_", r"ERR CQE on|RX timeout on channel", IB, "warning",
     "an error completion on a send/receive queue; the driver recovers the queue"),
    (MLX5 + "en_txrx.c", r"cqn=", IB, "warning", "the HCA reported an error event on a completion queue"),
    (MLX5 + "ipoib/", r"", IB, LVL, ""),
    (MLX5 + "lag/", r"", IB, LVL, "RoCE/Ethernet port bonding (LAG) on the HCA"),
    (MLX5_CONFIG, r"", IB, "info",
     "an offload or configuration path of the mlx5 driver (tc, E-Switch, steering, IPsec/TLS, DCB, ethtool, "
     "SR-IOV, ...): not a link or HCA fault"),
    (MLX5, r"not supported|unsupported|incompatible|^Disabling|^Dropping|can't turn|XDP|MQPRIO|HTB|not allowed|"
     r"too big|not in range|Unaligned|deprecated|Invalid module parameter|crdump", IB, "info",
     "a configuration the driver refused or adjusted, not a link or HCA fault"),
    (MLX5, r"", IB, LVL, ""),
    # --- InfiniBand core, mlx5_ib, IPoIB -------------------------------------------------------
    ("drivers/infiniband/hw/mlx5/", r"WC error: %d, Message", IB, "warning",
     "a kernel consumer's work request completed in error"),
    ("drivers/infiniband/hw/mlx5/", r"[Ff]atal|port .*down|timeout|timed out", IB, "warning", ""),
    ("drivers/infiniband/", r"not supported|unsupported|[Ii]nvalid|bad |wrong |exceed|too |only |must |"
     r"doesn't support|does not support|requested|not allowed|changed security contexts|P_Key index support|"
     r"Documentation/|unsafe global rkey|already", IB, "info",
     "a request or configuration the driver refused (a caller's parameters), not a link or HCA fault"),
    ("drivers/infiniband/core/(packer|ud_header|uverbs|ucma|user_mad|rw|umem|iwcm|netlink|nldev|restrack)",
     r"", IB, "info", "a verbs/user-space interface error of the InfiniBand core, not a link or HCA fault"),
    ("drivers/infiniband/ulp/ipoib/", r"multicast join failed|ib_sa_join_multicast failed|ib_sa_path_rec_get",
     IB, "warning", "IPoIB could not join a multicast group or resolve a path through the subnet manager "
     "(SM unreachable, or the port not active)"),
    ("drivers/infiniband/ulp/ipoib/", r"transmit timeout|sends? .*not completed|drain timing out", IB, "warning",
     "IPoIB sends did not complete: the port or the fabric path is stuck"),
    ("drivers/infiniband/ulp/ipoib/", r"mtu|connected mode|umcast|userspace|child", IB, "info",
     "an IPoIB configuration note"),
    ("drivers/infiniband/", r"", IB, LVL, ""),
    # --- EDAC ------------------------------------------------------------------------------------
    ("drivers/edac/", r"^%d CE ", "host_memory_ce", "info", "corrected host memory (DIMM) errors"),
    ("drivers/edac/", r"^(%d )?UE |Kernel panic - not syncing: UE", "host_memory_ue", "critical",
     "uncorrectable host memory (DIMM) error: replace the DIMM"),
    ("drivers/edac/ghes_edac.c", r"", "benign", "ok",
     "the firmware-first EDAC driver's note about BIOS memory tables at load; no error"),
    ("drivers/edac/", r"", U, LVL, ""),
    # --- machine checks --------------------------------------------------------------------------
    ("arch/x86/kernel/cpu/mce/", r"MSR access error|\[Firmware Bug\]|bios_cmci_threshold", U, "info",
     "a firmware or setup note of the machine check code, not a hardware error"),
    ("arch/x86/kernel/cpu/mce/", r"reporting enabled|architecture supported", "benign", "ok",
     "machine check reporting is set up at boot"),
    ("arch/x86/kernel/cpu/mce/", r"Unexpected int18|Machine Check Exception:|Machine Check Exception\.|Fatal|fatal|"
     r"Machine check: |Uncorrected|not recovered|poison|Consecutive machine checks|Too many consecutive|"
     r"Failed kernel mode recovery|not responding to MCE broadcast|Panicing machine check|"
     r"MCA architectural violation|Possible thermal failure|Machine Check Exception: ", "host_mce_uncorrected",
     "critical", "an uncorrected machine check: host CPU or memory hardware"),
    ("arch/x86/kernel/cpu/mce/", r"Machine check events logged|CMCI storm detected|records pool full",
     "host_mce_corrected", "warning", "machine check events (usually corrected) were logged: read them with "
     "mcelog/rasdaemon"),
    ("arch/x86/kernel/cpu/mce/", r"CMCI storm subsided", "host_mce_corrected", "info",
     "a storm of corrected machine checks ended"),
    ("arch/x86/kernel/cpu/mce/", r"^\[Hardware Error\]: (RIP|TSC|PROCESSOR|Run the above)", "host_mce_corrected",
     "warning", "a detail line of a machine check record"),
    ("arch/x86/kernel/cpu/mce/", r"\[Firmware Bug\]|BIOS|Unexpected (deferred|threshold) interrupt|Erratum|"
     r"Using only|MCA_IPID|Unable to init|Couldn't allocate|Ignoring request", U, "info",
     "a firmware or setup note of the machine check code, not a hardware error"),
    ("arch/x86/kernel/cpu/mce/", r"", "host_mce_corrected", LVL, ""),
    # --- OOM killer ------------------------------------------------------------------------------
    ("mm/oom_kill.c", r"^Memory cgroup out of memory|CONSTRAINT_MEMCG", "oom_kill_cgroup", "warning",
     "a memory cgroup (the job's own limit) killed a process: the job needs more memory or leaks"),
    ("mm/oom_kill.c", r"OOM killer (en|dis)abled", "benign", "ok",
     "the OOM killer is switched around suspend/resume; nothing was killed"),
    ("mm/oom_kill.c", r"panic_on_oom|deadlocked on memory|no killable processes", "oom_kill", "critical",
     "the host ran out of memory with nothing left to kill (or panic_on_oom is set): the node goes down"),
    ("mm/oom_kill.c", r"Killed process|invoked oom-killer|oom-kill:constraint", "oom_kill", "warning",
     "the kernel's OOM killer killed a process: host memory ran out"),
    ("mm/oom_kill.c", r"", "oom_kill", "info", "a line of an OOM killer report"),
    # --- hung tasks ------------------------------------------------------------------------------
    ("kernel/hung_task.c", r"Kernel panic", "hung_task", "critical",
     "a task blocked in the kernel and hung_task_panic is set: the node panicked"),
    ("kernel/hung_task.c", r"blocked for more than", "hung_task", "warning",
     "a task was blocked in the kernel (D state) for minutes: storage, a driver or a GPU/NIC call that hangs"),
    ("kernel/hung_task.c", r"", "hung_task", "info", "a line of a hung task report"),
    # --- PCIe AER --------------------------------------------------------------------------------
    ("drivers/pci/pcie/", r"Uncorrected \(Fatal\)|recovery failed|can't recover", "pcie_aer_fatal", "critical",
     "an uncorrected fatal PCIe error: the device behind this port may be lost until a reset or reboot"),
    ("drivers/pci/pcie/", r"Uncorrected \(Non-Fatal\)", "pcie_aer_nonfatal", "warning",
     "an uncorrected non-fatal PCIe error: a transaction was lost; the driver may recover"),
    ("drivers/pci/pcie/", r"severity=Corrected|Corrected error message", "pcie_aer_corrected", "info",
     "a corrected PCIe error (harmless unless it repeats as a storm: then the link or slot is marginal)"),
    ("drivers/pci/pcie/", r"enabled with IRQ", "benign", "ok", "AER is active on this port"),
    ("drivers/pci/pcie/", r"recovery successful", "pcie_aer_nonfatal", "info",
     "the device recovered from the PCIe error reported before"),
    ("drivers/pci/pcie/", r"has been reset|reset failed", "pcie_aer_nonfatal", "warning",
     "a PCIe port was reset to recover from an uncorrected error (see the AER lines before)"),
    ("drivers/pci/pcie/", r"", U, "info", "a detail line of an AER report; the 'PCIe Bus Error: severity=' line "
     "says how serious it is"),
    # --- IOMMU -----------------------------------------------------------------------------------
    ("drivers/iommu/", r"IO_PAGE_FAULT|Request device \[|INTR-REMAP|handling fault status|RMP_PAGE_FAULT|"
     r"INVALID_DEVICE_REQUEST|ILLEGAL_DEV_TABLE_ENTRY|not attached to domain|INVALID_PPR_REQUEST|"
     r"Invalid page request|Page request", "iommu_fault", "warning",
     "the IOMMU blocked a device's DMA: GPU peer-to-peer or GPUDirect RDMA through it fails or hangs "
     "(iommu=pt, or ACS/ATS settings)"),
    ("drivers/iommu/", r"cleared|^(DTE|CMD)\[|^  device=|QI (HEAD|PRIOR)", U, "info",
     "a detail line of an IOMMU error report, or the error being cleared"),
    ("drivers/iommu/", r"HARDWARE_ERROR|Completion-Wait loop timed out|Command buffer timeout|IOTLB_INV_TIMEOUT|"
     r"Invalidation (Queue|Time-out|Completion) Error|DMAR hardware is malfunctioning|COMMAND_HARDWARE",
     U, "warning", "the IOMMU itself reported an error or timed out"),
    ("drivers/iommu/", r"Intel\(R\) Virtualization Technology|^IOMMU enabled|Enabled IRQ remapping|"
     r"Queued invalidation will be enabled", "benign", "ok", "the IOMMU is set up at boot"),
    ("drivers/iommu/", r"\[Firmware Bug\]|BIOS|deprecated|IOMMU disabled|kdump mode|previous kernel|"
     r"Scalable Mode|Forcing|[Dd]oesn't support|^No .*support|ineligible|vulnerable", U, "info",
     "a firmware or setup note of the IOMMU driver, not a fault"),
    ("drivers/iommu/", r"", U, LVL, ""),
    # --- modules: NVIDIA's and MLNX_OFED's are out-of-tree, proprietary or unsigned on most GPU nodes
    ("kernel/module/", r"taints kernel|tainting kernel", "benign", "ok",
     "the kernel marks itself tainted for a module outside its tree, proprietary or unsigned (NVIDIA's, "
     "MLNX_OFED's) or a live patch: no fault"),
    ("kernel/module/", r"", U, LVL, ""),
    # --- panics and warnings ---------------------------------------------------------------------
    ("kernel/panic.c", r"end trace|lock debugging", U, "info", "the end of a kernel WARN/oops report"),
    ("kernel/panic.c", r"^WARNING: CPU", U, LVL,
     "a kernel WARN splat: the code path it names (the lines after it) hit an unexpected state"),
    ("", r"Kernel panic - not syncing|end Kernel panic|Rebooting in|panic_on_|stack is corrupted|"
     r"Press Stop-A", "logged_node_failure", "critical", "the kernel panicked: the node is down until it reboots"),
    ("", r"", U, LVL, ""),
)
_RULES = [(re.compile("^" + p if not p.startswith("^") else p), re.compile(m), k, s, mean)
          for p, m, k, s, mean in RULES]

CATEGORY = {"logged_ib_error": "ib_network", "logged_error": "unknown", "logged_node_failure": "unknown",
            "ib_link_dropped": "ib_network", "ib_device_missing": "ib_network", "ib_hca_health": "ib_network",
            "ib_cmd_timeout": "ib_network", "ib_pcie_power": "ib_network", "ib_cable_error": "ib_network",
            "ib_cable_unplugged": "ib_network", "host_memory_ce": "unknown", "host_memory_ue": "unknown",
            "host_mce_corrected": "unknown", "host_mce_uncorrected": "unknown", "oom_kill": "memory_leak",
            "oom_kill_cgroup": "memory_leak", "hung_task": "unknown", "pcie_aer_corrected": "unknown",
            "pcie_aer_nonfatal": "unknown", "pcie_aer_fatal": "unknown", "iommu_fault": "unknown",
            "logged_application_error": "application",
            "benign": "healthy"}

# explicit per-message classes (each with its reason), over RULES: (file, format regex) -> class
OVERRIDES = (
    # a firmware command that fails with a status is routine for optional features probed at load
    (MLX5 + "main.c", r"QUERY_HCA_CAP|Query ISSI is not supported", (IB, "info", "a capability probe at load")),
    # the hung-task hint line carries no cause of its own
    ("kernel/hung_task.c", r"disables this message", ("hung_task", "info", "the hint printed after a hung task "
                                                                          "report")),
    # user-space access to poisoned memory is handled by killing the process: still a memory UE
    ("arch/x86/kernel/cpu/mce/core.c", r"Kernel accessed poison in user space",
     ("host_mce_uncorrected", "critical", "uncorrectable memory error in a page the kernel read for a process")),
)

MARKERS = ("mlx5", "infiniband", "ib_core", "user_mad", "RDMA CMA", "] ib", ": ib", "EDAC", "ghes_edac", "mce:",
           "[Hardware Error]", "Machine check", "Out of memory", "out of memory", "oom", "OOM",
           "blocked for more than", "hung_task", "AER:", "AMD-Vi", "DMAR", "Kernel panic", "WARNING: CPU:",
           "---[ end", "taints kernel", "tainting kernel", "segfault at", "traps: ")


# ---------------------------------------------------------------------------------------------
# reading the source

class Tree(object):
    """The kernel tree: an extracted directory, a linux-source-*.tar.xz or the .deb holding it.
    Only the files in SCOPE and EXTRA are read."""

    def __init__(self, src):
        self.files = {}
        self.version = None
        if os.path.isdir(src):
            for rel in self._walk(src):
                with open(os.path.join(src, rel), encoding="utf-8", errors="replace") as fh:
                    self.files[rel] = fh.read()
        elif src.endswith(".deb"):
            self.version = subprocess.run(["dpkg-deb", "-f", src, "Version"], check=True, capture_output=True,
                                          text=True).stdout.strip()
            fs = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", src], stdout=subprocess.PIPE)
            with tarfile.open(fileobj=fs.stdout, mode="r|") as outer:
                for m in outer:
                    if re.fullmatch(r"\./usr/src/linux-source-[\d.]+\.tar\.xz", m.name):
                        self._read_tar(tarfile.open(fileobj=outer.extractfile(m), mode="r|xz"))
                        break
            fs.stdout.close()
            fs.wait()
        else:
            with open(src, "rb") as fh:
                self._read_tar(tarfile.open(fileobj=fh, mode="r|xz"))
        if not self.files:
            raise SystemExit("no kernel source found in %s" % src)

    @staticmethod
    def _wanted(rel):
        return rel.endswith((".c", ".h")) and rel.startswith(SCOPE) or rel in EXTRA

    def _walk(self, root):
        for d, _dirs, names in os.walk(root):
            for n in names:
                rel = os.path.relpath(os.path.join(d, n), root)
                if self._wanted(rel):
                    yield rel

    def _read_tar(self, tar):
        for m in tar:
            rel = m.name.split("/", 1)[1] if "/" in m.name else m.name
            if m.isfile() and self._wanted(rel):
                self.files[rel] = tar.extractfile(m).read().decode("utf-8", "replace")

    def upstream(self):
        mk = self.files.get("Makefile", "")
        v = [re.search(r"^%s = (\S*)" % k, mk, re.M) for k in ("VERSION", "PATCHLEVEL", "SUBLEVEL")]
        return ".".join(m.group(1) for m in v if m)


def scan_call(text, pos):
    """text[pos] == '(' -> (top-level arguments, index of the closing parenthesis)."""
    depth, i, start, args, n = 0, pos, pos + 1, [], len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            i += 1
            while i < n and text[i] != c:
                i += 2 if text[i] == "\\" else 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append(text[start:i])
                return args, i
        elif c == "," and depth == 1:
            args.append(text[start:i])
            start = i + 1
        i += 1
    return None, n


_FUNC_DEF = re.compile(r"^(?!static\s+const|struct\s+\w+\s*\{|#|return\b|typedef\b)[A-Za-z_][\w \t\*]*?"
                       r"\b(\w+)\s*\([^;{]*$", re.M)


def functions(text):
    """[(offset, name)] of the function definitions (a line at column 0 that opens one)."""
    return [(m.start(), m.group(1)) for m in _FUNC_DEF.finditer(text)
            if m.group(1) not in ("if", "for", "while", "switch", "sizeof")]


def in_macro(text, pos):
    """True when ``pos`` is inside a #define (its line or a continued line of it)."""
    ls = text.rfind("\n", 0, pos) + 1
    while True:
        if text[ls:pos].lstrip().startswith("#define") or text[ls:].lstrip().startswith("#define"):
            return True
        if ls == 0:
            return False
        prev = text.rfind("\n", 0, ls - 1) + 1
        if not text[prev:ls - 1].rstrip().endswith("\\"):
            return False
        ls = prev


def pr_fmt(text):
    """The file's pr_fmt / dev_fmt prefix text (None when the file defines none)."""
    out = {}
    for name in ("pr_fmt", "dev_fmt"):
        m = re.search(r"^#define\s+%s(?:\(fmt\))?\s+(.*)$" % name, text, re.M)
        if not m:
            continue
        body = m.group(1).strip()
        if body in ("pr_fmt(fmt)", "pr_fmt"):
            out[name] = out.get("pr_fmt")
            continue
        body = re.sub(r"\bfmt\b.*$", "", body)
        out[name] = join_literals(body, {"KBUILD_MODNAME": "%KBUILD_MODNAME%"})
    return out


KBUILD = {"drivers/infiniband/core/": "ib_core", "drivers/edac/ghes_edac.c": "ghes_edac"}


def kbuild_modname(path):
    for p, name in KBUILD.items():
        if path.startswith(p):
            return name
    return os.path.splitext(os.path.basename(path))[0]


def local_headers(files, path, text):
    """The text of the headers of the same directory that ``text`` includes ("internal.h")."""
    d = os.path.dirname(path)
    return "".join(files.get(os.path.join(d, h), "") for h in re.findall(r'^#include\s+"([\w.]+)"', text, re.M))


def extract(path, text, files=None):
    """-> [(line, call, level, format, function, prefix, sample of a leading %s)] of one file."""
    fmts = pr_fmt(text)
    if "pr_fmt" not in fmts and files is not None:
        fmts = dict(pr_fmt(local_headers(files, path, text)), **fmts)
    prf = (fmts.get("pr_fmt") or "").replace("%KBUILD_MODNAME%", kbuild_modname(path))
    devf = (fmts.get("dev_fmt") or "").replace("%KBUILD_MODNAME%", kbuild_modname(path))
    funcs = functions(text)
    out = []
    hits = [(m, m.group(1)) for m in CALL_RE.finditer(text)]
    if path.startswith(MLX5 + "en/"):
        hits += [(m, "snprintf") for m in SNPRINTF_ERR_STR.finditer(text)]
    for m, name in sorted(hits, key=lambda h: h[0].start()):
        if in_macro(text, m.start()):
            continue
        open_paren = text.find("(", m.start())
        args, _end = scan_call(text, open_paren)
        if not args:
            continue
        if name == "snprintf":
            idx, lvl, pre, how = 2, "error", "", "netdev"
        else:
            idx, lvl, pre, how = CALLS[name]
        if len(args) <= idx:
            continue
        if lvl is None:
            lvarg = args[0] if how == "pr" else args[1] if name in ("ipoib_printk", "edac_mc_printk", "mlx5_log",
                                                                     "edac_printk") else args[0]
            tok = re.match(r"\s*(\w+)", lvarg)
            lvl = KERN.get(tok.group(1)) if tok else None
            if lvl is None:
                lvl = "varies" if name == "mlx5_log" else "warning"
        if lvl in ("debug", "cont"):
            continue
        fmt = join_literals(args[idx], MACROS)
        if fmt is None:
            continue
        # a leading %s that prints a device's name (what the line then holds)
        lead = None
        if len(args) > idx + 1:
            a = args[idx + 1].strip()
            if re.search(r"\b(h?ca|device|ib_dev|ibdev)->name$|dev_name\(", a):
                lead = "mlx5_0"
            elif re.search(r"\b(dev|netdev|ndev)->name$", a):
                lead = IPOIB_NETDEV[:-2] if path.startswith("drivers/infiniband/ulp/ipoib/") else "eth0"
        func = ""
        for pos, f in funcs:
            if pos > m.start():
                break
            func = f
        if "%s:%s" % (path, func) in SKIP_FILES:
            continue
        line = text.count("\n", 0, m.start()) + 1
        fmt = pre + fmt
        # how the line starts
        if how == "pr":
            prefix = prf
        elif how in ("dev", "netdev"):
            dev, net = next((d, n) for a, d, n in DEV_BY_AREA if path.startswith(a))
            prefix = (net or dev) if how == "netdev" else dev
            if path.startswith("drivers/infiniband/ulp/ipoib/") and how == "netdev":
                prefix = "infiniband mlx5_0 " + IPOIB_NETDEV
            prefix += devf
        elif how == "mcepanic":
            # mce_panic(msg): pr_emerg(HW_ERR "Machine check: %s\n", msg), then panic(msg)
            out.append((line, name, "error", "[Hardware Error]: Machine check: " + fmt, func, prf, None))
            prefix, fmt = "", "Kernel panic - not syncing: " + fmt
        elif how == "panic":
            prefix, fmt = "", "Kernel panic - not syncing: " + fmt
        else:
            prefix = PREFIX[how]
        out.append((line, name, lvl, fmt, func, prefix, lead))
    return out


# ---------------------------------------------------------------------------------------------
# derived rows: an argument whose values are literals in the source

def switch_strings(text, func):
    """The string literals a function returns (a switch over an enum), in order."""
    m = re.search(r"\b%s\s*\([^)]*\)\s*\{" % re.escape(func), text)
    if not m:
        raise SystemExit("function %s not found" % func)
    depth, i = 0, m.end() - 1
    while True:
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                break
        i += 1
    return [join_literals(s) for s in re.findall(r'return\s+("(?:[^"\\]|\\.)*")\s*;', text[m.end():i])]


def array_strings(text, name):
    """The string literals of ``static const char *name[] = {...}``."""
    m = re.search(r"\b%s\s*\[\s*\w*\s*\]\s*=\s*\{(.*?)\};" % re.escape(name), text, re.S)
    if not m:
        raise SystemExit("array %s not found" % name)
    return [join_literals(s) for s in re.findall(r'"(?:[^"\\]|\\.)*"', m.group(1))]


def call_literals(text, call):
    """The string literal arguments of every ``call(...)`` in ``text`` (also the ternaries)."""
    out = []
    for m in re.finditer(r"\b%s\s*\(" % re.escape(call), text):
        args, _end = scan_call(text, m.end() - 1)
        for a in args or ():
            out.extend(join_literals(s) for s in re.findall(r'"(?:[^"\\]|\\.)*"', a))
    return out


def nth_conversion(fmt, n, value):
    """``fmt`` with its n-th (0-based) %s replaced by the literal ``value`` (percent signs doubled)."""
    parts = re.split(r"(%%|%s)", fmt)
    k = 0
    for i, p in enumerate(parts):
        if p == "%s":
            if k == n:
                parts[i] = value.replace("%", "%%").rstrip("\n")
                return "".join(parts)
            k += 1
    raise ValueError("no %%s #%d in %r" % (n, fmt))


def derived(tree):
    """-> {(file, format): [(format', forced class or None), ...]}: rows that replace a row."""
    ev = tree.files[MLX5 + "events.c"]
    aer = tree.files["drivers/pci/pcie/aer.c"]
    oom = tree.files["mm/oom_kill.c"]
    out = {}
    status = switch_strings(ev, "mlx5_pme_status_to_string")
    errors = switch_strings(ev, "mlx5_pme_error_to_string")
    status_class = {"Cable plugged": ("benign", "ok", "a cable or transceiver was plugged into the port"),
                    "Cable unplugged": ("ib_cable_unplugged", "warning",
                                        "the cable or transceiver was unplugged from the port: its link is down"),
                    "Cable disabled": (IB, "warning", "the port module was disabled: its link is down")}
    out[(MLX5 + "events.c", "Port module event: module %u, %s")] = [
        (nth_conversion("Port module event: module %u, %s", 0, s),
         status_class.get(s, (IB, "warning", "the port module reported an unknown state")))
        for s in status if s != "Cable error"]
    err_rows = []
    for e in errors:
        if "powered down" in e:
            cls = ("ib_pcie_power", "critical", "the HCA powered its ports down: its PCIe slot does not give it "
                                                "enough power")
        else:
            cls = ("ib_cable_error", "critical", "the port module (cable or transceiver) reported an error: "
                                                 "its link is down or unusable")
        err_rows.append((nth_conversion(nth_conversion("Port module event[error]: module %u, %s, %s", 0,
                                                       "Cable error"), 0, e), cls))
    out[(MLX5 + "events.c", "Port module event[error]: module %u, %s, %s")] = err_rows
    sev = array_strings(aer, "aer_error_severity_string")
    for fmt in ("PCIe Bus Error: severity=%s, type=%s, (%s)",
                "PCIe Bus Error: severity=%s, type=Inaccessible, (Unregistered Agent ID)"):
        out[("drivers/pci/pcie/aer.c", fmt)] = [(nth_conversion(fmt, 0, s), None) for s in sev]
    out[("drivers/pci/pcie/aer.c", "%s%s error message received from %04x:%02x:%02x.%d")] = [
        (nth_conversion("%s%s error message received from %04x:%02x:%02x.%d", 1, s), None) for s in sev]
    # oom_kill_process(oc, message): the messages are literals at its calls
    messages = sorted(set(s for s in call_literals(oom, "oom_kill_process") if "ut of memory" in s))
    for fmt in ("%s: Killed process %d (%s) total-vm:%lukB, anon-rss:%lukB, file-rss:%lukB, shmem-rss:%lukB, "
                "UID:%u pgtables:%lukB oom_score_adj:%hd",
                "%s: OOM victim %d (%s) is already exiting. Skip killing the task"):
        out[("mm/oom_kill.c", fmt)] = [(nth_conversion(fmt, 0, s), None) for s in messages]
    fmt = "oom-kill:constraint=%s,nodemask=%*pbl"
    out[("mm/oom_kill.c", fmt)] = [(nth_conversion(fmt, 0, s), None)
                                   for s in array_strings(oom, "oom_constraint_text")]
    # __print_mce: "Machine Check%s" is " Exception" while the machine check is in progress (MCIP)
    fmt = "[Hardware Error]: CPU %d: Machine Check%s: %Lx Bank %d: %016Lx"
    out[("arch/x86/kernel/cpu/mce/core.c", fmt)] = [
        (nth_conversion(fmt, 0, " Exception"), ("host_mce_uncorrected", "critical",
                                                "a machine check exception: an uncorrected host CPU or memory error")),
        (nth_conversion(fmt, 0, ""), ("host_mce_corrected", "warning",
                                      "a machine check record (corrected, or uncorrected without an exception): "
                                      "read its status with mcelog/rasdaemon"))]
    return out


# ---------------------------------------------------------------------------------------------

def classify(path, fmt, level):
    for f, pat, cls in OVERRIDES:
        if path.startswith(f) and re.search(pat, fmt):
            return cls
    for p, m, kind, sev, mean in _RULES:
        if level == "panic" and not m.pattern and p.pattern != "^":
            continue  # a panic no rule names: the last rules (the node is down)
        if p.search(path) and m.search(fmt):
            if sev == LVL:
                sev = "info" if level == "info" else "critical" if level == "panic" else "warning"
            return kind, sev, mean
    raise AssertionError("no rule for %s %r" % (path, fmt))


def row_for(path, line, fmt, cls):
    kind, sev, mean = cls
    if kind == "benign":
        return (path, line, fmt, "benign", "healthy", "ok", mean)
    return (path, line, fmt, kind, CATEGORY[kind], sev, mean)


def holds_marker(text):
    return any(m in text for m in MARKERS)


def build(tree):
    rows, prefixes, dropped = [], {}, {"info": 0, "no marker": []}
    der = derived(tree)
    used = set()
    for path in sorted(tree.files):
        if not path.startswith(SCOPE) or path in SKIP_FILES:
            continue
        for line, call, level, fmt, func, prefix, lead in extract(path, tree.files[path], tree.files):
            fmt = fmt.rstrip("\n")
            if not fmt.strip():
                continue
            if level == "info" and (not INFO_KEEP.search(fmt) or INFO_DROP.search(fmt)):
                dropped["info"] += 1
                continue
            variants = [(fmt, None)]
            if (path, fmt) in der:
                variants = der[(path, fmt)]
                used.add((path, fmt))
            for f, forced in variants:
                # the line as printed (with the device's name where a leading %s prints it)
                msg = instantiate(f)
                if lead and f.startswith("%s"):
                    msg = lead + msg[3:]
                whole = TS + prefix + msg
                if matchable(f) and not holds_marker(whole):
                    dropped["no marker"].append("%s:%d %r" % (path, line, f))
                    continue
                prefixes.setdefault(path, []).append((prefix, holds_marker(TS + prefix)))
                rows.append(row_for(path, line, f, forced or classify(path, f, level)))
    missing = set(der) - used
    if missing:
        raise SystemExit("derived rows for calls not found: %r" % sorted(missing))
    return rows, prefixes, dropped


def self_check(rows, tmpl, dropped):
    """Drop the rows that fragment matching cannot read back from their own line (a short
    first fragment that also occurs in the line's prefix: "IR%d: ..." after "DMAR-IR: ")."""
    out, dropped["unreadable"] = [], []
    for r in rows:
        if matchable(r[2]):
            template = next(t for p, t in tmpl if r[0].startswith(p))
            line = template.replace("{line}", str(r[1])).replace("{message}", instantiate(r[2]))
            frags, gaps = compile_format(r[2])
            if not match_fragments(line, frags, gaps):
                dropped["unreadable"].append("%s:%d %r" % (r[0], r[1], r[2]))
                continue
        out.append(r)
    return out


def templates(prefixes):
    """(file, line template) per file: the prefix most of the file's rows print (ties: first seen);
    files under one directory that agree share one entry."""
    best = {}
    for path, entries in prefixes.items():
        # prefer the prefixes that hold a marker (a line of the file must be recognisable)
        prs = [p for p, marked in entries if marked] or [p for p, _m in entries]
        counts = {}
        for p in prs:
            counts[p] = counts.get(p, 0) + 1
        best[path] = max(counts, key=lambda p: (counts[p], -prs.index(p)))
    out = []
    bydir = {}
    for path, p in best.items():
        bydir.setdefault(os.path.dirname(path) + "/", {})[path] = p
    for d in sorted(bydir):
        files = bydir[d]
        common = max(set(files.values()), key=lambda p: (list(files.values()).count(p), p))
        for path in sorted(files):
            if files[path] != common:
                out.append((path, TS + files[path] + "{message}"))
        out.append((d, TS + common + "{message}"))
    # a directory's entry must not shadow a deeper one: longest prefixes first
    out.sort(key=lambda t: (-len(t[0]), t[0]))
    out.append(("", TS + "{message}"))
    return tuple(out)


DOC = """\
Read: %(scope)s (%(nfiles)d files), every print call whose format is a literal: error and
warning levels all, info/notice only the healthy states and the info lines that read like an
error (INFO_KEEP). Left out: debug prints; the MCE injector (inject.c) and the iWARP port
mapper (iwpm_*); info lines that report no fault (%(ninfo)d); %(nnomark)d messages whose line holds
no marker at all (bare pr_* lines of the IB core such as "Couldn't init SA": the reader could
never pick them out of a kernel log); %(nself)d messages that literal-fragment matching cannot
read back from their own line (a short first fragment that the line's prefix also holds, e.g.
"IR%%d: ..." after "DMAR-IR: "). TEMPLATES give the prefix most rows of a file print:
mlx5_core_* add "func:line:(pid N): " after the device, mlx5_core_info/dev_* do not, netdev_*
print "mlx5_core <pci> <netdev>: ", mlx5_ib_* "infiniband mlx5_0: func:line:(pid N): ",
ipoib "<ib netdev>: ", pr_* the file's pr_fmt ("mce: ", "AER: ", "DMAR: ", "AMD-Vi: ").
panic() rows are the line panic() prints ("Kernel panic - not syncing: ..."), mce_panic()
gives both that and "[Hardware Error]: Machine check: ...".
Classification (RULES, by file and message; OVERRIDES name single messages): mlx5 link down
-> ib_link_dropped, fatal/health/firmware-init errors -> ib_hca_health, command timeouts ->
ib_cmd_timeout, PCI lost -> ib_device_missing, port module events -> ib_cable_* (plugged:
benign), slot power -> ib_pcie_power; other mlx5/IB/IPoIB errors -> logged_ib_error (warning;
info for the offload/configuration paths and refused requests); EDAC CE/UE ->
host_memory_ce/ue; machine checks -> host_mce_corrected/uncorrected; OOM kills ->
oom_kill / oom_kill_cgroup (memory cgroup); hung tasks -> hung_task; AER by severity ->
pcie_aer_corrected/nonfatal/fatal; IOMMU DMA faults -> iommu_fault; panics ->
logged_node_failure; anything else -> logged_error. Probe/link-up/firmware-version lines are
benign.
"""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", required=True, help="linux-source .deb, its .tar.xz, or an extracted tree")
    ap.add_argument("--rev", "--version", dest="version", default=None,
                    help="the Debian package version (read from the .deb; default %s)" % PIN)
    ap.add_argument("--list-dropped", action="store_true")
    args = ap.parse_args(argv)
    tree = Tree(args.src)
    version = tree.version or args.version or PIN
    upstream = tree.upstream()
    if not version.startswith(upstream + "-"):
        raise SystemExit("the tree is Linux %s, not the package version %s: give --version" % (upstream, version))
    rows, prefixes, dropped = build(tree)
    tmpl = templates(prefixes)
    rows = self_check(rows, tmpl, dropped)
    meta = {"EMITTER": "Linux kernel", "PROJECT": "Linux (Debian linux-source-%s)" % ".".join(upstream.split(".")[:2]),
            "VERSION": version, "COMMIT": version, "LICENCE": LICENCE, "ORIGIN": ORIGIN, "GENERATOR": GENERATOR}
    nfiles = len([p for p in prefixes])
    doc = DOC % {"scope": ", ".join(SCOPE), "nfiles": nfiles, "ninfo": dropped["info"],
                 "nnomark": len(dropped["no marker"]), "nself": len(dropped["unreadable"])}
    path = write_table("linux", meta, MARKERS, tmpl, rows, doc=doc)
    if args.list_dropped:
        print("\n".join(dropped["no marker"] + dropped["unreadable"]))
    print("%s: %d rows" % (path, len(set(rows))))


if __name__ == "__main__":
    main()
