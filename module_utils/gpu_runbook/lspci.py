# SPDX-License-Identifier: Apache-2.0
"""``lspci -vv`` (or ``-vvv``): the PCIe link of each NVIDIA GPU and each InfiniBand/RoCE HCA.

Known from its source: pciutils v3.14.0 (0f5b941aa5cf), ls-caps.c cap_express_link(): a device's
header line (``3b:00.0 3D controller: NVIDIA Corporation ...``, the domain first with -D), then
``\\t\\tLnkCap:\\tPort #%d, Speed %s, Width x%d, ASPM ...`` and ``\\t\\tLnkSta:\\tSpeed %s%s, Width
x%d%s``, where link_compare() adds `` (downgraded)`` when an endpoint's link runs below what it
can (since pciutils 3.6; older ones print the figures alone, compared here). Speeds are
``2.5GT/s`` .. ``64GT/s``.

What an SRE reads in it: a GPU or HCA whose link runs at fewer lanes than it can (x8 of x16: a
riser, the slot, a bent pin, the card) halves its bandwidth and slows every collective through
it (warning, the device's category). A lower speed alone is normal for an idle NVIDIA GPU, which
drops its link to 2.5GT/s to save power until it works: info for a GPU, warning for an HCA (which
does not). Other devices are not this runbook's business.

Which driver holds the device: ls-kernel.c show_kernel() ends a device's block with
``\tKernel driver in use: %s`` (only when one is bound) and right after it ``\tKernel modules: %s``
(the modules that could). A GPU whose block reaches ``Kernel modules:`` with no driver in use has
none: the nvidia module is not loaded or its probe failed (the kernel log's ``NVRM:`` lines say
which); one that ``nouveau`` holds is not the CUDA driver's. Both mean no job can use the GPU
(driver, warning). ``vfio-pci`` hands it to a virtual machine on purpose: a fact, no finding.
Forum copies often lose the tab before a field: a field line lspci prints is read without it."""

import re

from .findings import finding, iter_lines, never_raise

SOURCE = "lspci.txt"
HEADER_RE = re.compile(r"^(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7] (?P<cls>[^:\n]{2,80}): "
                       r"(?P<name>[^\n]{2,300})$")
_CAP_RE = re.compile(r"^\s{1,16}LnkCap:\s{0,8}Port #\d{1,4}, Speed (?P<speed>[\d.]{1,5})GT/s, Width x(?P<width>\d{1,2})\b")
_STA_RE = re.compile(r"^\s{1,16}LnkSta:\s{0,8}Speed (?P<speed>[\d.]{1,5})GT/s(?P<sd> \(downgraded\))?[^,\n]{0,20}, "
                     r"Width x(?P<width>\d{1,2})(?P<wd> \(downgraded\))?")
_DRIVER_RE = re.compile(r"^\s{0,16}Kernel driver in use: (?P<driver>[\w.\-]{1,64})\s*$")
_MODULES_RE = re.compile(r"^\s{0,16}Kernel modules: (?P<modules>[\w.\-, ]{1,300})$")
# the field lines lspci -v prints under a device (lspci.c show_verbose, ls-kernel.c): read without their tab
FIELD_RE = re.compile(r"^\s{0,16}(?:Subsystem|DeviceName|Physical Slot|Device tree node|Control|Status|Latency|Interrupt|"
                      r"NUMA node|IOMMU group|Flags|BIST result|Region \d|Expansion ROM at|Capabilities|"
                      r"Kernel driver in use|Kernel modules)\b")
_GPU_RE = re.compile(r"NVIDIA Corporation", re.I)
_HCA_RE = re.compile(r"Mellanox|Infiniband controller|ConnectX", re.I)


def parse_lspci(text, source=SOURCE):
    """-> (facts, findings); never raises. facts: {"devices": [{"address", "kind": "gpu"|"hca",
    "cap": (GT/s, lanes), "sta": (GT/s, lanes)}]} of the NVIDIA GPUs and HCAs with a link read."""
    return never_raise(_parse, source, text, source=source)


def _parse(text, source=SOURCE):
    devices, cur = [], None
    for n, line in iter_lines(text):
        m = HEADER_RE.match(line)
        if m:
            kind = ("gpu" if _GPU_RE.search(m.group("name")) and re.search(r"3D|VGA|Display", m.group("cls"))
                    else "hca" if _HCA_RE.search(m.group("name")) or _HCA_RE.search(m.group("cls")) else None)
            cur = {"address": line.split(" ", 1)[0], "kind": kind, "name": m.group("name").strip(), "cap": None,
                   "sta": None, "line": None, "driver": None, "bound": None} if kind else None
            if cur:
                devices.append(cur)
            continue
        if cur is None:
            continue
        mc = _CAP_RE.match(line)
        if mc:
            cur["cap"] = (float(mc.group("speed")), int(mc.group("width")))
            continue
        ms = _STA_RE.match(line)
        if ms:
            cur["sta"] = (float(ms.group("speed")), int(ms.group("width")))
            cur["line"] = (n, line)
            cur["marks"] = (bool(ms.group("sd")), bool(ms.group("wd")))
            continue
        _kernel_line(cur, n, line)
    read = [d for d in devices if d["sta"] or d["bound"] is not None]
    findings = []
    for d in read:
        f = _link_finding(d, source) if d["sta"] else None
        if f:
            findings.append(f)
        f = _driver_finding(d, source)
        if f:
            findings.append(f)
    facts = {"devices": [dict({"address": d["address"], "kind": d["kind"], "cap": d["cap"], "sta": d["sta"]},
                              **({"driver": d["driver"]} if d["bound"] is not None else {})) for d in read]}
    return (facts if read else {}), findings


def _kernel_line(cur, n, line):
    md = _DRIVER_RE.match(line)
    if md:
        cur["driver"], cur["bound"] = md.group("driver"), (n, line)
        return
    mm = _MODULES_RE.match(line)
    if mm and cur["bound"] is None:  # show_kernel prints the driver in use first: none was
        cur["bound"], cur["modules"] = (n, line), mm.group("modules").strip()


def _driver_finding(d, source):
    if d["kind"] != "gpu" or d["bound"] is None or d["driver"] in ("nvidia", "vfio-pci"):
        return None
    n, line = d["bound"]
    if d["driver"] is None:
        what = ("no driver is bound to it (lspci lists the modules that could: %s): the nvidia module is not "
                "loaded or failed its probe (the kernel log's NVRM lines say which)" % d.get("modules", "?")[:120])
    else:
        what = "%s drives it, not the NVIDIA driver: CUDA cannot use it" % d["driver"]
    return finding("gpu_no_nvidia_driver", "GPU %s (%s): %s." % (d["address"], d["name"][:80], what),
                   evidence=line.strip(), source="%s:%d" % (source, n))


def _link_finding(d, source):
    (s_speed, s_width), cap = d["sta"], d["cap"]
    speed_down, width_down = d["marks"]
    if cap:  # pciutils before 3.6 printed no marks: the figures say the same
        speed_down, width_down = speed_down or s_speed < cap[0], width_down or s_width < cap[1]
    if not (speed_down or width_down):
        return None
    what = "GPU" if d["kind"] == "gpu" else "HCA"
    category = "gpu_hardware" if d["kind"] == "gpu" else "ib_network"
    n, line = d["line"]
    can = " (it can x%d at %gGT/s)" % (cap[1], cap[0]) if cap else ""
    if width_down:
        return finding("pcie_link_degraded", "%s %s (%s): its PCIe link runs at x%d%s: fewer lanes halve its bandwidth "
                       "and slow every collective through it (riser, slot or card)." % (
                           what, d["address"], d["name"][:80], s_width, can),
                       category=category, severity="warning", evidence=line.strip(), source="%s:%d" % (source, n))
    return finding("pcie_link_degraded", "%s %s (%s): its PCIe link runs at %gGT/s%s%s." % (
        what, d["address"], d["name"][:80], s_speed, can,
        ": an idle NVIDIA GPU lowers its link speed to save power, so this is normal unless the GPU was busy"
        if d["kind"] == "gpu" else ": an HCA runs at its full speed, so the link trained down (slot, riser or card)"),
        category=category, severity="info" if d["kind"] == "gpu" else "warning", evidence=line.strip(),
        source="%s:%d" % (source, n))
