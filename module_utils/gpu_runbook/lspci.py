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
does not). Other devices are not this runbook's business."""

import re

from .findings import finding, iter_lines, never_raise

SOURCE = "lspci.txt"
HEADER_RE = re.compile(r"^(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7] (?P<cls>[^:\n]{2,80}): "
                       r"(?P<name>[^\n]{2,300})$")
_CAP_RE = re.compile(r"^\s{1,16}LnkCap:\s{0,8}Port #\d{1,4}, Speed (?P<speed>[\d.]{1,5})GT/s, Width x(?P<width>\d{1,2})\b")
_STA_RE = re.compile(r"^\s{1,16}LnkSta:\s{0,8}Speed (?P<speed>[\d.]{1,5})GT/s(?P<sd> \(downgraded\))?[^,\n]{0,20}, "
                     r"Width x(?P<width>\d{1,2})(?P<wd> \(downgraded\))?")
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
                   "sta": None, "line": None} if kind else None
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
    read = [d for d in devices if d["sta"]]
    findings = []
    for d in read:
        f = _link_finding(d, source)
        if f:
            findings.append(f)
    facts = {"devices": [{"address": d["address"], "kind": d["kind"], "cap": d["cap"], "sta": d["sta"]} for d in read]}
    return (facts if read else {}), findings


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
