# SPDX-License-Identifier: Apache-2.0
"""The error lines nvidia-smi prints instead of (or next to) its report, read by every
format's parser and by ``parse_nvidia_smi_failure``: one table of patterns, so a failure reads
the same whichever way it reached us.

Wording from NVIDIA's own tools (nvidia-smi and NVML's error strings), as seen in the field:
'NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. ...',
'Failed to initialize NVML: Driver/library version mismatch' (+ 'NVML library version: 550.54'),
'No devices were found', 'Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error',
'... : GPU is lost.  Reboot the system to recover this GPU', 'Failed to initialize NVML: Insufficient
Permissions', 'WARNING: infoROM is corrupted at gpu 0000:0B:00.0'.
"""

import re

from ..findings import finding, gpu_ref, iter_lines, normalize_pci
from .model import PCI_TXT, empty_facts, src

# (pattern, kind, what it means). Checked in order, first match wins, so the specific NVML
# messages come before the generic 'Failed to initialize NVML: <anything>'. Each kind at most
# once per output (the same message repeats per GPU on some drivers).
FAILURES = (
    (re.compile(r"NVIDIA-SMI has failed because it couldn'?t communicate with the NVIDIA driver"
                r"|Failed to initialize NVML:?\s*Driver Not Loaded", re.I),
     "nvsmi_driver_unreachable",
     "nvidia-smi cannot talk to the NVIDIA driver: the kernel module is not loaded (or crashed)"),
    (re.compile(r"Failed to initialize NVML:?\s*Driver/library version mismatch", re.I),
     "nvml_driver_mismatch",
     "NVML driver/library version mismatch: the loaded kernel module differs from the user-space "
     "driver{version}, upgraded without a reboot"),
    (re.compile(r"Failed to initialize NVML:?\s*Insufficient Permissions|\bPermission denied\b", re.I),
     "nvml_permission",
     "nvidia-smi was refused access to the GPUs: insufficient permissions (container or non-root user)"),
    (re.compile(r"GPU access blocked by the operating system", re.I),
     "nvsmi_access_blocked", "The operating system (cgroups/container policy) blocks access to the GPUs"),
    (re.compile(r"^\s*No devices were found|No supported GPUs were found", re.I),
     "nvsmi_no_devices", "The NVIDIA driver is loaded but sees no GPU"),
    (re.compile(r"Failed to initialize NVML:?\s*(.*)", re.I),
     "nvml_init_failed", "NVML failed to initialise: the driver or a GPU is wedged"),
    (re.compile(r"couldn'?t find libnvidia-ml\.so", re.I),
     "nvml_missing", "libnvidia-ml.so is missing: the NVIDIA user-space driver is not installed"),
)
# nvidia-smi's words, or the NVML call by name as NVIDIA's other tools print it (nvidia-debugdump --list:
# 'Error: nvmlDeviceGetHandleByIndex(): Unknown Error', held-out x42-15)
HANDLE_RE = re.compile(r"(?:Unable to determine the device handle for (?:GPU|gpu)\s*(" + PCI_TXT + r")?\s*:?|"
                       r"\bnvmlDeviceGetHandleBy(?:Index|PciBusId|UUID|Serial)(?:_v2)?\(\)\s*:?)\s*(.*)", re.I)
_INFOROM_RE = re.compile(r"infoROM is corrupted at gpu\s+(" + PCI_TXT + r")", re.I)
_NVML_VERSION_RE = re.compile(r"NVML library version:\s*(\S+)", re.I)


def _handle_kind(why):
    """The kind of 'Unable to determine the device handle ...: <why>' (None: not a GPU fault)."""
    w = why.lower()
    if "permission" in w:
        return "gpu_handle_permission"
    if "requires reset" in w:
        return "gpu_handle_reset_required"
    if "insufficient" in w and "power" in w:
        return "gpu_insufficient_power"
    if "lost" in w:
        return "gpu_lost"
    return "gpu_handle_error"


def _match_failure(s, lines, seen):
    """The finding args (kind, message) for one line matching FAILURES, or None."""
    for rx, kind, what in FAILURES:
        m = rx.search(s)
        if not m:
            continue
        if kind in seen:
            return None
        seen.add(kind)
        if kind == "nvml_init_failed" and m.group(1).strip():
            what = "NVML failed to initialise (%s): the driver or a GPU is wedged" % m.group(1).strip()
        elif kind == "nvml_driver_mismatch":
            v = next((_NVML_VERSION_RE.search(l) for _, l in lines if _NVML_VERSION_RE.search(l)), None)
            what = what.format(version=" (NVML %s)" % v.group(1) if v else "")
        return kind, what
    return None


def _handle_finding(m, s, where, by_pci, lost_index):
    """-> (finding, pci) for one 'Unable to determine the device handle' line."""
    pci = normalize_pci(m.group(1)) if m.group(1) else None
    why = (m.group(2) or "").strip().rstrip(".").strip()
    g = by_pci.get(pci)
    gref = gpu_ref(pci, g.get("index") if g else lost_index.get(pci), g.get("uuid") if g else None)
    kind = _handle_kind(why)
    if kind == "gpu_handle_permission":
        msg = "nvidia-smi lacks permission to open GPU %s" % (pci or "?")
    else:
        msg = "%s cannot open GPU %s (%s): the GPU is lost or wedged" % (
            "nvidia-smi" if "device handle" in s else "NVML", pci or "?", why or "error")
    return finding(kind, msg, evidence=s, source=where, gpu=gref), pci


def scan_failures(lines, source, gpus, lost_index=None):
    """Findings for the error lines among ``lines`` -> (findings, PCIs nvidia-smi could not open)."""
    lost_index = lost_index or {}
    out = []
    by_pci = dict((g["pci"], g) for g in gpus if g.get("pci"))
    handle_pcis = []
    seen = set()
    for ln, line in lines:
        s = line.strip()
        if not s or s.startswith("<"):
            continue
        hit = _match_failure(s, lines, seen)
        if hit:
            out.append(finding(hit[0], hit[1], evidence=s, source=src(source, ln)))
        m = HANDLE_RE.search(s)
        if m:
            f, pci = _handle_finding(m, s, src(source, ln), by_pci, lost_index)
            out.append(f)
            if f["kind"] != "gpu_handle_permission":
                handle_pcis.append(pci)
            continue
        m = _INFOROM_RE.search(s)
        if m:
            pci = normalize_pci(m.group(1))
            g = by_pci.get(pci)
            at = (" (index %s)" % g["index"]) if g and g.get("index") is not None else ""
            out.append(finding("inforom_corrupted", "infoROM is corrupted on GPU %s%s" % (pci, at),
                               evidence=s, source=src(source, ln),
                               gpu=gpu_ref(pci, g.get("index") if g else None, g.get("uuid") if g else None)))
    return out, handle_pcis


def unparseable(fmt, text, source, what):
    """(facts, findings) for an output no parser could read: its failure lines if any, else
    'empty' or 'unparseable' -- never an empty, healthy-looking result."""
    facts = empty_facts(fmt)
    lines = list(iter_lines(text))
    fail, _ = scan_failures(lines, source, [])
    if fail:
        return facts, fail
    if not any(line.strip() for _, line in lines):
        return facts, [finding("nvsmi_empty", "nvidia-smi produced no output (hung, killed or not installed?)",
                               source=source)]
    first = next(((n, l) for n, l in lines if l.strip()), (0, ""))
    return facts, [finding("nvsmi_unparseable", "Could not parse the output as %s" % what,
                           evidence=first[1][:200], source=src(source, first[0]))]


# ----------------------------------------------------------------------------------- GPUs it could not open

def lost_pcis(lines, gpus):
    """PCIs nvidia-smi printed 'Unable to determine the device handle' for, not among ``gpus``."""
    known = set(g["pci"] for g in gpus if g.get("pci"))
    out = []
    for _, line in lines:
        m = HANDLE_RE.search(line)
        if m and m.group(1) and "permission" not in (m.group(2) or "").lower():
            p = normalize_pci(m.group(1))
            if p not in known and p not in out:
                out.append(p)
    return out


def index_fewer_sections(gpus, lines, attached):
    """Fewer sections than 'Attached GPUs'.  When the gap is exactly the GPUs nvidia-smi could not
    open (it enumerates by PCI bus id), rebuild the indices around them -> ({pci: index} of the lost
    GPUs, True); otherwise (``-i N``, an excerpt, MIG) the file order is not the index -> ({}, False)."""
    lost = lost_pcis(lines, gpus)
    if lost and len(gpus) + len(lost) == attached and all(g.get("pci") for g in gpus):
        order = sorted([g["pci"] for g in gpus] + lost)
        for g in gpus:
            g["index"] = order.index(g["pci"])
        return dict((p, order.index(p)) for p in lost), True
    for g in gpus:
        g["index"] = None
    return {}, False
