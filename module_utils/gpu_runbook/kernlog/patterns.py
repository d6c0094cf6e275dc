"""The kernel messages the scanner reads, as patterns: NVRM (Xid, GPU UUIDs, fallen off the
bus, RmInitAdapter), mlx5_core (link, port module, health, command timeouts), PCIe AER, the
OOM killer and hung tasks."""

import re

_PCI = r"[0-9a-fA-F]{2,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?"
PCI_FULL_RE = re.compile(r"\b([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\b")

XID_RE = re.compile(r"NVRM: Xid \((?:PCI:)?(?P<pci>" + _PCI + r")\): (?P<code>\d{1,6})(?![\d.])(?P<rest>.*)")
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

AER_RE = re.compile(r"AER: (?:Multiple )?(?P<sev>Corrected|Uncorrected \((?:Non-Fatal|Fatal)\)) error"
                    r"(?: message)? received(?: from)?:? *(?P<src>" + _PCI + r")?")
AER_SEV_RE = re.compile(r"severity=(?P<sev>Corrected|Uncorrected \((?:Non-Fatal|Fatal)\))")
AER_CLASS = {"Corrected": "corrected", "Uncorrected (Non-Fatal)": "nonfatal"}  # anything else: fatal

OOM_RE = re.compile(r"of memory: Kill(?:ed)? process (?P<pid>\d+) \((?P<comm>[^)]*)\)")
HUNG_RE = re.compile(r"task (?P<comm>.+?):(?P<pid>\d+) blocked for more than (?P<secs>\d+) seconds")
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
    if "port module event" in low:
        if "unplugged" in low:
            return "cable_unplugged"
        if "error" in low or "exceeded" in low or "not supported" in low or "temperature" in low:
            return "cable_error"
        return "cable_plugged"
    if _LINK_DOWN_RE.search(msg):
        return "link_down"
    if _LINK_UP_RE.search(msg):
        return "link_up"
    if ("health compromised" in low or "assert" in low or "fw fatal" in low or "fatal error" in low
            or "unrecoverable" in low or "internal error" in low):
        return "health"
    if ("cmd_work_handler" in low or "wait_func" in low or "cmd exec" in low) and (
            "timeout" in low or "no done completion" in low):
        return "cmd_timeout"
    if "async event" in low:
        return "async_event"
    if "insufficient power" in low:
        return "pcie_power"
    return None
