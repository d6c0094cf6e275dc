# SPDX-License-Identifier: Apache-2.0
"""The kernel messages the scanner reads, as patterns: NVRM (Xid, GPU UUIDs, fallen off the
bus, RmInitAdapter), mlx5_core (link, port module, health, command timeouts), PCIe AER, the
OOM killer and hung tasks."""

import re

_PCI = r"[0-9a-fA-F]{2,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?"
PCI_FULL_RE = re.compile(r"\b([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\b")

# The parenthesis holds the GPU's address in every driver since the 3xx era ('PCI:0000:3b:00',
# '0000:3b:00', '0000:3b:00.0'), but shared logs elide it ('PCI:...', 'PCI:<redacted>'): the code
# after it counts whatever the parenthesis holds; the address is read from it only when it is one.
# 'NVRM: Xid (PCI:0000:3b:00): 79, ...'; a paste that dropped the GPU ('NVRM: Xid: 154, ...') is still that Xid
XID_RE = re.compile(r"NVRM: Xid(?: ?\((?P<inside>[^()\n]{0,80})\))?:? *(?P<code>\d{1,6})(?![\d.])(?P<rest>.*)")
XID_PCI_RE = re.compile(r"(?:PCI:)?(?P<pci>" + _PCI + r")\s*$")
# NVIDIA/k8s-device-plugin internal/rm/health.go: 'XidCriticalError: Xid=%d on Device=%s, the device will go
# unhealthy.' (older) / '...; marking device as unhealthy.'; v0.4.0 (2019) named it 'on GPU=%s'
PLUGIN_XID_RE = re.compile(r"XidCriticalError: Xid=(?P<code>\d{1,6}) on (?:Device|GPU)=(?P<uuid>GPU-[0-9a-fA-F-]{8,64})"
                           r"(?P<rest>[,;] [^\n]{0,200})?")
# leptonai/gpud's Xid component (components/accelerator/nvidia/xid: its health reason and events,
# worded as its SXid component's 'SXID %d(%s) detected on %s'): 'XID 79(GPU has fallen off the
# bus) detected on PCI:0000:ae:00' -- the device a PCI address or a GPU UUID
GPUD_XID_RE = re.compile(r"\bXID (?P<code>\d{1,6})\((?P<name>[^()\n]{1,160})\) detected on (?:PCI:(?P<pci>[0-9a-fA-F]{4,8}:"
                         r"[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?)|(?P<uuid>GPU-[0-9a-fA-F-]{8,64}))")
XID_CAUSE_RE = re.compile(r"caused by previous Xid (?P<code>\d{1,6})\b")
# NVLink5 Xids 144-150 say themselves whether the error was fatal: 'RLW_RXPIPE Nonfatal XC0 i0 Link 11'
NVLINK_FATALITY_RE = re.compile(r"\b(?P<f>Non-?fatal|Fatal)\b", re.I)
XID_REST_RE = re.compile(
    r"^(?:, *pid=(?P<pid>'[^']*'|[^,\s]*))?(?:, *name=(?P<name>[^,]*))?(?:, *(?P<msg>.*))?$")
GPU_IDX_RE = re.compile(r"\bGPU(\d{1,3})\b")
GPU_UUID_RE = re.compile(r"NVRM: GPU at (?:PCI:)?(?P<pci>" + _PCI + r"): (?P<uuid>GPU-[0-9a-fA-F-]{8,})")
NVRM_PCI_RE = re.compile(r"NVRM: (?:GPU |Xid \()?(?:at )?(?:PCI:)?(?P<pci>" + _PCI + r")")
# The board serial the driver prints right after 'GPU at PCI:..: GPU-uuid' (no address of its
# own), and the one it prints with the address when a GPU falls off the bus (osinit.c).
GPU_SERIAL_RE = re.compile(r"NVRM: GPU Board Serial Number: *(?P<serial>.*)$")
GPU_SERIAL_AT_RE = re.compile(r"NVRM: GPU (?:at )?(?:PCI:)?(?P<pci>" + _PCI + r"): GPU serial number is "
                              r"(?P<serial>.*)$")
_SERIAL_TOKEN_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_NO_SERIAL = frozenset(("n/a", "na", "none", "null", "unknown", "not supported", "not available", "unavailable"))

MLX_RE = re.compile(r"mlx5_core (?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])"
                    r"(?: (?P<dev>[^\s:]+))?: (?P<msg>.*)")
PORT_RE = re.compile(r"\bport:? ?(\d{1,2})\b", re.I)
_LINK_DOWN_RE = re.compile(r"\blink (?:is )?down\b", re.I)
_LINK_UP_RE = re.compile(r"\blink (?:is )?(?:up|active)\b", re.I)

# systemd-networkd (src/network/networkd-link.c, link_update: log_link_info(link, "Gained carrier") /
# "Lost carrier", older releases "lost carrier") about an IPoIB netdev: said only on a change of the
# link's carrier (had it, lost it), so each 'Lost carrier' is a drop of a link that was up
CARRIER_RE = re.compile(r"systemd-networkd\[\d{1,10}\]: (?P<dev>ib[\w.]{0,15}): (?P<what>[Ll]ost|Gained) carrier\b")
# Kernels before 6.x say 'Corrected' / 'Uncorrected (Fatal) error received: 0000:..' (or ': id=0010'),
# 6.x 'Correctable error message received from 0000:..' and 'severity=Correctable'.
AER_RE = re.compile(r"AER: (?:Multiple )?(?P<sev>Correct(?:ed|able)|Uncorrect(?:ed|able) \((?:Non-Fatal|Fatal)\))"
                    r" error(?: message)? received(?: from)?:? *(?P<src>" + _PCI + r")?")
# the detail lines of an AER report as kernels before 4.19 print them (drivers/pci/pcie/aer.c
# aer_print_error without pci_fmt's 'AER: '): the status/mask line and one '[bit] Name' per error
AER_DETAIL_RE = re.compile(r"error status/mask=|: +\[ ?\d{1,2}\] [A-Z]")
AER_SEV_RE = re.compile(r"severity=(?P<sev>Correct(?:ed|able)|Uncorrect(?:ed|able) \((?:Non-Fatal|Fatal)\))")
AER_CLASS = {"Corrected": "corrected", "Correctable": "corrected", "Uncorrected (Non-Fatal)": "nonfatal",
             "Uncorrectable (Non-Fatal)": "nonfatal"}  # anything else: fatal
# The device a PCIe/AER line is printed for, by the driver bound to it: 'nvidia 0000:03:00.0: AER: ..'
# is a GPU, 'mlx5_core 0000:81:00.0: ..' an HCA (dev_printk's '<driver> <pci>: ' prefix).
AER_DEV_RE = re.compile(r"\b(?P<drv>nvidia|mlx5_core) (?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])"
                        r"(?: [^\s:]{1,32})?: ")

# 'Out of memory: Killed process 1234 (python) total-vm:..', old 'Kill process 1234 (java) score 1309 or
# sacrifice child', RHEL 'Killed process 123, UID 48, (httpd)'; 'Memory cgroup out of memory: ..' the same.
OOM_RE = re.compile(r"of memory: Kill(?:ed)? process (?P<pid>\d{1,10})(?:, UID \d{1,10},)? \((?P<comm>[^)]{0,64})\)")
# The kill's summary (4.19+): 'oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=..,task=python,pid=1234,uid=0'
_NV_FRAME = r"(?<![\w.])[\w.]{1,80}\+0x[0-9a-f]{1,10}/0x[0-9a-f]{1,10} \[nvidia\w{0,12}\]"  # 'fn+0x1b/0x350 [nvidia]'
NV_FRAME_RE = re.compile(_NV_FRAME)
NV_RIP_RE = re.compile(r"\bRIP: [0-9a-f]{4}:(" + _NV_FRAME + ")")
# AMD 'nvidia 0000:07:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=..' (older: '[IO_PAGE_FAULT
# device=07:00.0 domain=..'), Intel 'DMAR: [DMA Read NO_PASID] Request device [3b:00.0] fault addr'
IOMMU_RE = re.compile(r"(?:(\w{4}:\w\w:\w\w\.\w): AMD-Vi: Event logged \[IO_PAGE_FAULT|"
                      r"\[IO_PAGE_FAULT device=(\w{1,4}:\w\w\.\w)|"
                      r"DMAR: \[DMA \w{1,8}[^\]]{0,20}\] Request device \[(\w{1,4}:\w\w\.\w)\])")
OOM_INVOKED_RE = re.compile(r"(?:^|\] |kernel: )(?P<comm>[^\]\n]{1,64}?) invoked oom-killer\b")
OOM_CONSTRAINT_RE = re.compile(r"oom-kill:constraint=(?P<c>[A-Z_]{1,40})")
OOM_TASK_RE = re.compile(r",task=(?P<task>[^,]{1,64}),pid=(?P<pid>\d{1,10})\b")
# comm is at most 15 characters and may hold ':' ('nvc:[driver]'); bounded so a hostile line stays linear
HUNG_RE = re.compile(r"task (?P<comm>[^\n]{1,64}?):(?P<pid>\d{1,10}) blocked for more than (?P<secs>\d{1,9}) seconds")
# A machine check the hardware could not correct: 'Uncorrected error', GHES 'event severity: fatal',
# 'Machine check: Processor context corrupt', '[Hardware Error]: ... fatal'.
MCE_FATAL_RE = re.compile(r"(?i)\buncorrect|severity: (?:fatal|recoverable)|context corrupt|\bfatal\b")
# PyTorch names its DataLoader worker processes/threads so; a worker stuck in the kernel
# (NFS/Lustre I/O) starves the training loop: a DataLoader stall, not a GPU fault.
DATA_TASK_RE = re.compile(r"^(?:pt_data_worker|pt_data_pin|dataloader|data_worker)", re.I)
DRIVER_TASK_RE = re.compile(r"^(?:nv|nvidia|UVM|mlx5|ib_|rdma|kworker)", re.I)


def board_serial(raw):
    """The serial of a 'Board Serial Number' / 'serial number is' line, or None for what is no
    serial: '[N/A]', '[not supported]', '0' (a GPU that came back degraded), garbage."""
    s = (raw or "").strip().rstrip(".").strip().strip("[]()<>").strip()
    if not s or s.lower() in _NO_SERIAL or not s.strip("0") or not _SERIAL_TOKEN_RE.match(s):
        return None
    return s


def nvrm_gpu_event(line):
    """The GPU event an NVRM line other than an Xid reports, or None."""
    low = line.lower()
    if "fallen off the bus" in low:
        return "gpu_fallen_off_bus"
    if "rminitadapter failed" in low or "rm_init_adapter failed" in low:
        return "gpu_init_failed"
    return None


def mlx5_event(msg):
    """What an mlx5_core message (after '<pci> [dev]: ') reports, or None for chatter."""
    low = msg.lower()
    if low.startswith("print_health_info:"):
        # mlx5_core_err's 'func:line:(pid N): ' names health.c's print_health_info, which prints only
        # when the firmware set a health syndrome: each of its lines is that report's, even one whose
        # message a mail client wrapped onto the next line (held-out x42-C02)
        return "health"
    if "port module event" in low:
        if "unplugged" in low:
            return "cable_unplugged"
        if "error" in low or "exceeded" in low or "not supported" in low or "temperature" in low:
            return "cable_error"
        if "plugged" in low:
            return "cable_plugged"
        return None  # 'Cable disabled', 'Unknown status': the vocabulary (vocab/linux.py) says what they are
    if _LINK_DOWN_RE.search(msg):
        return "link_down"
    if _LINK_UP_RE.search(msg):
        return "link_up"
    if ("health compromised" in low or "assert" in low or "fw fatal" in low or "fw_fatal" in low
            or "fatal error" in low or "unrecoverable" in low or "internal error" in low
            or "health poll failed" in low or "recovery flow aborted" in low or "health recovery failed" in low):
        return "health"
    if "will cause a leak of a command resource" in low:
        return "cmd_timeout"
    if ("cmd_work_handler" in low or "wait_func" in low or "cmd exec" in low or "cmd_exec" in low) and (
            "timeout" in low or "no done completion" in low):
        return "cmd_timeout"
    if "async event" in low and "bogus" not in low:  # 'for bogus CQ': the driver's own bookkeeping (vocab)
        return "async_event"
    if "insufficient power" in low:
        return "pcie_power"
    return None


# -- NVIDIA driver messages that name no Xid (driverlog.py) ------------------------------
# Several are printed over 2-6 lines, each with its own 'NVRM: ' (or, through rsyslog, one line
# with '#012' for each newline); driverlog.py joins the lines of one message before these run.
API_MISMATCH_RE = re.compile(r"has the version (?P<client>\d+(?:\.\d+)*),? ?but this kernel module has the version "
                             r"(?P<module>\d+(?:\.\d+)*)")
# The kernel's driver core, not NVRM: 'nvidia 0000:01:00.0: probe with driver nvidia failed with error -1'
# (5.x+), 'nvidia: probe of 0000:01:00.0 failed with error -1' (older).
KPROBE_FAIL_RE = re.compile(r"(?:\bnvidia (?P<pci>" + _PCI + r"): probe with driver nvidia|\bnvidia: probe of "
                            r"(?P<pci2>" + _PCI + r")) failed with error (?P<err>-?\d{1,6})")
PROBE_COUNT_RE = re.compile(r"probe routine (?:was not called|failed) for (?P<n>\d{1,4}) device")
UNSUPPORTED_RE = re.compile(r"The NVIDIA GPU (?P<pci>" + _PCI + r") \(PCI ID: (?P<id>[0-9a-fA-F]{4}:[0-9a-fA-F]{4})\)")
DRIVER_RELEASE_RE = re.compile(r"\b(?P<ver>\d{3}\.\d{1,3}(?:\.\d{1,3})?)\b")
# NVSwitch errors: 'nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress ...'
SXID_RE = re.compile(r"SXid \((?P<inside>[^()\n]{0,80})\):? *(?P<code>\d{1,6})(?![\d.])(?P<rest>.*)")
NVSWITCH_RE = re.compile(r"\b(nvidia-nvswitch\d{1,3})\b")
# EDAC: 'EDAC MC0: 1 CE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0 (...)', '... 1 UE ...'
EDAC_COUNT_RE = re.compile(r"\b(?P<n>\d{1,9}) (?P<t>CE|UE)\b")
EDAC_MC_RE = re.compile(r"\bMC(?P<mc>\d{1,3})\b")

_GSP_TROUBLE = ("timeout", "timed out", "halted", "watchdog", "crashed", "gsp error")


def nvrm_driver_event(line):
    """The driver (not hardware) event an NVRM line opens, or None. 'gpu_unsupported' is
    decided by the lines that follow it (the open module refusing a GPU without GSP, or a
    driver release that does not support the GPU)."""
    low = line.lower()
    if "api mismatch" in low:
        return "driver_version_mismatch"
    if "probe routine was not called" in low:
        return "driver_conflict"
    if ("probe routine failed" in low or "no nvidia graphics adapter probed" in low
            or "none of the nvidia devices were initialized" in low):
        return "gpu_probe_failed"
    if ("open nvidia.ko is only ready" in low or "not supported by open" in low
            or "requires use of the nvidia proprietary" in low):
        return "driver_open_unsupported"
    if "(pci id:" in low and "the nvidia gpu" in low:
        return "gpu_unsupported"
    if "gsp" in low and "rminitadapter" not in low and any(t in low for t in _GSP_TROUBLE):
        return "gsp_error"
    return None


def sxid_fatal(rest):
    """True when an SXid line says Fatal, False for Non-fatal, None when it says neither."""
    m = NVLINK_FATALITY_RE.search(rest or "")
    if not m:
        return None
    return not m.group("f").lower().startswith("non")

# "Xid" as a word of its own (NVRM's "Xid (PCI:..)", NVSwitch's "SXid"), not inside a name: the
# driver's own function _kgspLogXid119 (580's GSP timeout banner) is no Xid line
XID_WORD_RE = re.compile(r"(?<![a-z0-9_])Xid")
