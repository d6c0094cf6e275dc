# SPDX-License-Identifier: Apache-2.0
"""The plain ``nvidia-smi`` table (+ the warnings printed around it), ``nvidia-smi nvlink --status``
and ``nvidia-smi -L``.

A table GPU takes three rows (name/bus-id/ECC, fan/temp/power/memory/util, MIG mode) between
the '|===' line under the header and the next '+---' border or the Processes box."""

import re

from ..findings import finding, iter_lines
from .failures import unparseable
from .model import PCI_RE, as_text, assign, empty_facts, new_gpu, note, src, to_str
from .rules import wrap_up

_TABLE_HDR_RE = re.compile(r"NVIDIA-SMI\s+(\S+)\s+Driver Version:\s*(\S+)(?:\s+CUDA Version:\s*(\S+))?")
_ROW1_RE = re.compile(r"^\s*(\d+)\s+(.*)$")  # the name is stripped in code (linear)
# 'GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-...)'; newer builds print it without the UUID
# name and UUID are split in code: `(.*?)\s*(...)?\s*$` backtracks quadratically on a line of
# spaced words (found by the fuzzer: 47 s on 23 KB)
_NVLINK_GPU_RE = re.compile(r"^\s*GPU\s+(\d+):(.*)$")
# 'nvidia-smi nvlink -e': '\t Link 0: Replay Errors: 0' (Recovery, CRC, ... Errors)
_NVLINK_ERR_RE = re.compile(r"^\s*Link\s+(\d+)\s*:\s*([A-Za-z][\w ]{0,40}?) Errors?\s*:\s*(\d+)\s*$")
_NVLINK_LINK_RE = re.compile(r"^\s*Link\s+(\d+)\s*:(.*)$")
_ALL_INACTIVE = "unable to retrieve nvlink information as all links are inactive"  # compared in lower case


def _cells(line):
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|"):
        s = s[:-1]
    return s.split("|")


def _first_row(g, cells, ln, s, m1):
    """'|   0  NVIDIA H100 80GB HBM3   On  |   00000000:19:00.0 Off |   0 |'"""
    rest = m1.group(2).rstrip()
    pm = re.match(r"^(.*?)(?<!\s)\s+(On|Off|N/A|ERR!)$", rest)
    name, pers = (pm.group(1), pm.group(2)) if pm else (rest, None)
    assign(g, "name", name, ln, s, "Name")
    if pers == "ERR!":
        assign(g, None, pers, ln, s, "Persistence-M")
    toks = cells[1].split()
    pci = next((t for t in toks if PCI_RE.match(t)), None)
    if pci:
        assign(g, "pci", pci, ln, s, "Bus-Id")
    elif "ERR!" in toks:
        assign(g, None, "ERR!", ln, s, "Bus-Id")
    if len(toks) >= 2 and toks[-1] == "ERR!" and pci:
        assign(g, None, "ERR!", ln, s, "Disp.A")
    if len(cells) >= 3:
        assign(g, "ecc.volatile.uncorrectable", cells[2].strip(), ln, s, "Volatile Uncorr. ECC")


def _second_row(g, cells, ln, s):
    """'| N/A   27C    P0   70W /  700W |  1MiB / 81559MiB |   0%   Default |'"""
    parts = cells[0].split(None, 3) if cells else []
    for label, val in zip(("Fan", "Temp", "Perf", "Pwr:Usage/Cap"), parts):
        if label == "Temp":
            assign(g, "temperature_c", val.rstrip("C"), ln, s, "Temp")
        elif "ERR!" in val:
            assign(g, None, "ERR!", ln, s, label)
    if len(cells) >= 2 and "ERR!" in cells[1]:
        assign(g, None, "ERR!", ln, s, "Memory-Usage")
    if len(cells) >= 3:
        for label, val in zip(("GPU-Util", "Compute M."), cells[2].split(None, 1)):
            if "ERR!" in val:
                assign(g, None, "ERR!", ln, s, label)


def _is_gpu_row(s):
    """'|   1  Tesla V100-PCIE...  On   | 00008ED0:00:00.0 Off |   0 |': a GPU box's first row."""
    if not s.startswith("|") or s.count("|") < 3:
        return False
    cells = _cells(s)
    return bool(_ROW1_RE.match(cells[0]) and len(cells) >= 3 and PCI_RE.search(cells[1]))


# a GPU box's second row: its memory cell ('|ERR!   50C    P0    N/A  /  N/A  |       0MiB /  81559MiB |')
BOX_MEMORY_RE = re.compile(r"^\|[^|]{0,80}\|\s*(?:\d{1,7}|N/A)MiB\s*/\s*\d{1,7}MiB")


def is_gpu_box_excerpt(head):
    """A table quoted without its header: a '+---' border and a GPU box's first row, or (no border
    either) a GPU box's first row over its second, whose memory cell ('0MiB /  81559MiB') says it is one."""
    lines = head.splitlines()[:200]
    for i, line in enumerate(lines):
        if line.lstrip().startswith("|") and _is_gpu_row(line.strip()):
            if "+--" in head or (i + 1 < len(lines) and BOX_MEMORY_RE.match(lines[i + 1].strip())):
                return True
    return False



def _name_and_uuid(rest):
    """'NVIDIA H100 80GB HBM3 (UUID: GPU-...)' -> (name, uuid or None)."""
    rest = rest.strip()
    cut = rest.rfind("(UUID:")
    if cut >= 0 and rest.endswith(")"):
        uuid = rest[cut + 6:-1].strip()
        if uuid and not any(ch.isspace() for ch in uuid):
            return rest[:cut].strip(), uuid
    return rest, None

class _Reader(object):
    """Walks the lines once: the table's GPU rows, then any nvlink / -L blocks."""

    def __init__(self):
        self.facts = empty_facts("table")
        self.gpus = []
        self.by_index = {}
        self.in_hdr = self.in_gpu = False
        self.g = None
        self.row = 0
        self.nv = None  # current GPU in nvlink / -L output
        self.mig = 0     # the 'MIG devices:' box: 1 in its header, 2 in its rows
        self.mig_ecc = {}  # GPU index -> (its instances' ECC sum, (line, text) of the evidence)

    def _gpu(self, idx):
        g = new_gpu(None, idx)
        self.gpus.append(g)
        self.by_index[idx] = g
        return g

    def line(self, ln, line):
        s = line.strip()
        if "MIG devices" in s and s.startswith("|"):
            self.mig, self.in_gpu, self.g = 1, False, None
            return
        if self.mig:
            if self.mig == 1 and re.match(r"^\|[=|+]+\|?$", s):
                self.mig = 2
                return
            if s.startswith(("|", "+")) and "Processes:" not in s:
                if self.mig == 2:
                    self._mig_row(ln, s)
                return
            self.mig = 0
        m = _TABLE_HDR_RE.search(line)
        if m:
            self.facts["driver_version"] = to_str(m.group(2))
            self.facts["cuda_version"] = to_str(m.group(3))
        elif s.startswith("|") and "Bus-Id" in s:
            self.in_hdr = True
        elif self.in_hdr and re.match(r"^\|[=|+]+\|?$", s):
            self.in_hdr, self.in_gpu = False, True
        elif not self.in_gpu and _is_gpu_row(s):
            # an excerpt quoted without the header (one GPU's box pasted in an issue): its first
            # row names the index and the Bus-Id, which is enough to read the box
            self.in_gpu = True
            self._table_row(ln, s)
        elif not (self.in_gpu and self._table_row(ln, s)):
            self._nvlink(ln, line, s)

    def _mig_row(self, ln, s):
        """'|  1    3   0   0  |  14366MiB / 19968MiB | 28      0 |  2   0    1 ...|': a MIG
        instance of GPU 1, its volatile uncorrectable ECC count last in the third cell. A GPU
        seen only here (the box pasted alone) gets a record of its own: its index, its ECC."""
        cells = _cells(s)
        ids = cells[0].split() if cells else []
        if len(ids) != 4 or not all(t.isdigit() for t in ids) or len(cells) < 3:
            return
        idx = int(ids[0])
        g = self.by_index.get(idx)
        if g is None:
            g = self._gpu(idx)
            g["_mig_only"] = True
            note(g, "header", ln, s)
        ecc = cells[2].split()[-1:]
        # a GPU whose own row was read states its count already (its instances' included)
        if ecc and ecc[0].isdigit() and not g.get("_table"):
            total, where = self.mig_ecc.get(idx, (0, (ln, s)))
            # the evidence: the first instance with errors, else the first instance
            self.mig_ecc[idx] = (total + int(ecc[0]), (ln, s) if not total and ecc[0] != "0" else where)

    def mig_counts(self):
        """Each MIG-only GPU's volatile uncorrectable ECC: its instances' sum, once."""
        for idx, (total, (ln, s)) in self.mig_ecc.items():
            assign(self.by_index[idx], "ecc.volatile.uncorrectable", str(total), ln, s, "MIG Vol Unc ECC")

    def _table_row(self, ln, s):
        """Read one line inside the GPU box; False when the box has ended there."""
        if s.startswith("+"):
            return True
        if not s.startswith("|") or "MIG devices" in s or "Processes:" in s:
            self.in_gpu = False
            self.g = None
            return False
        cells = _cells(s)
        m1 = _ROW1_RE.match(cells[0]) if cells else None
        if m1 and len(cells) >= 2 and (PCI_RE.search(cells[1]) or "ERR!" in cells[1]):
            self.g = self._gpu(int(m1.group(1)))
            self.g["_table"] = True
            self.row = 1
            note(self.g, "header", ln, s)
            _first_row(self.g, cells, ln, s, m1)
        elif self.g is not None:
            self.row += 1
            if self.row == 2:
                _second_row(self.g, cells, ln, s)
            elif self.row == 3 and len(cells) >= 3:
                assign(self.g, "mig_mode", cells[2].strip(), ln, s, "MIG M.")
        return True

    def _nvlink(self, ln, line, s):
        m = _NVLINK_GPU_RE.match(line)
        if m:
            idx = int(m.group(1))
            self.nv = self.by_index.get(idx) or self._gpu(idx)
            name, uuid = _name_and_uuid(m.group(2))
            self.nv["name"] = self.nv["name"] or name
            self.nv["uuid"] = uuid or self.nv["uuid"]
            note(self.nv, "header", ln, s)
            return
        m = _NVLINK_ERR_RE.match(line)
        if m and self.nv is not None:
            errs = self.nv["nvlink_errors"] = self.nv["nvlink_errors"] or {}
            n = int(m.group(3))
            if n and len(errs) < 256:
                errs.setdefault(int(m.group(1)), {})[m.group(2).strip()] = n
                note(self.nv, "nvlink_errors", ln, s)
            return
        # nvidia-smi nvlink -s on a GPU none of whose links is up ('... are inActive' in newer drivers)
        if self.nv is not None and _ALL_INACTIVE in line.lower():
            self.nv["nvlink_inactive"] = self.nv["nvlink_inactive"] or []
            self.nv["nvlink_all_inactive"] = True
            note(self.nv, "nvlink", ln, s)
            return
        m = _NVLINK_LINK_RE.match(line)
        if m and self.nv is not None:
            if self.nv["nvlink_inactive"] is None:
                self.nv["nvlink_inactive"] = []
            v = m.group(2).strip().lower()
            if "inactive" in v or v in ("down", "not active", "disabled"):
                self.nv["nvlink_inactive"].append(int(m.group(1)))
                note(self.nv, "nvlink", ln, s)
            else:
                self.nv["_nvlink_up"] = self.nv.get("_nvlink_up", 0) + 1
            return
        if s and not s.startswith(("|", "+")):
            self.nv = None


def parse_table(text, source, expected_gpus, thresholds):
    text = as_text(text)
    lines = list(iter_lines(text))
    r = _Reader()
    for ln, line in lines:
        r.line(ln, line)
    r.mig_counts()
    if not r.gpus and r.facts["driver_version"] is None:
        return unparseable("table", text, source, "the nvidia-smi table")
    inventory = any(g["_ev"].get("header", (0, ""))[1].startswith("|") for g in r.gpus)
    if not inventory:
        expected_gpus = None  # nvlink --status / -L only: not a GPU inventory we can count on
    extra = []
    only_mig = [g for g in r.gpus if g.get("_mig_only")]
    if only_mig:
        ln, s = only_mig[0]["_ev"]["header"][:2]
        extra.append(finding(
            "nvsmi_incomplete", "GPU(s) %s appear only in the 'MIG devices' box (their own rows were not given): only "
            "their instances' volatile uncorrectable ECC counts were read" % ", ".join(str(g["index"]) for g in only_mig),
            evidence=s, source=src(source, ln)))
    for g in only_mig:
        del g["_mig_only"]
    return wrap_up(r.facts, r.gpus, lines, source, expected_gpus, thresholds, extra, inventory=inventory)
