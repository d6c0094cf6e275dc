# SPDX-License-Identifier: Apache-2.0
"""``nvidia-smi topo -m`` (the GPUs' and NICs' connection matrix) -> (facts, findings).

Its layout: a header row of the device columns (``GPU0 .. GPUn``, then ``NIC0 ..`` on current
drivers or the HCAs' own names, ``mlx5_0 ..``, on older ones) followed by ``CPU Affinity``,
``NUMA Affinity`` and, on newer drivers, ``GPU NUMA ID``; one row per GPU and per NIC whose cells
are ``X`` (self), ``NV<n>`` (a bonded set of n NVLinks), ``SYS``, ``NODE``, ``PHB``, ``PXB``,
``PIX`` (older drivers: ``SOC``), then the GPU's affinities; a ``Legend:`` block and, on drivers
that number the NICs, a ``NIC Legend:`` (``  NIC0: mlx5_0``). The header may carry the
terminal's underline escapes (``\\x1b[4m``).

What it tells: how each GPU pair is linked. Every pair NV<k> with one k (an HGX/NVSwitch board)
or no NVLink at all (a PCIe box) is a healthy reading of the topology. A GPU whose NVLink count
to every peer is below what all the other GPUs show among themselves (NV16 where the rest are
NV18), or with no NVLink while they are all NVLink-connected, has links down: ``nvlink_inactive``
on that GPU (critical when it has no NVLink left, a warning when only some bonds are missing).
Other layouts (NVLink bridges on pairs of PCIe cards, a hybrid cube-mesh) are read but are no
verdict: nothing in the matrix alone says whether they are as built. A matrix cut before every
GPU's row, an asymmetric pair or a cell of no known kind is unreadable, never healthy.

``read_matrix`` is the one reader of the format (nvsmi/holders.py's ``parse_topo_peers`` uses
it too); ``parse_nvidia_smi_topo`` is the analysis. Pure, standard library only, never raises."""

import re

from ..findings import finding, gpu_ref, iter_lines, never_raise, strip_ansi
from .model import as_text

TOOL = "nvidia-smi topo -m"
# the header row: GPU0 first (after its indent and any terminal escape), the affinity columns after
OPENING = re.compile(r"^[ \t]{0,40}(?:\x1b\[[0-9;]{0,8}m)?GPU0(?:[ \t]+[\w.\-]{1,32}){0,80}[ \t]+CPU Affinity\b")
_DEVICE_RE = re.compile(r"^(?:GPU\d{1,3}|NIC\d{1,3}|mlx\w{1,32}|[a-z][\w\-]{0,31}\d)$")
_GPU_RE = re.compile(r"^GPU(\d{1,3})$")
_NV_RE = re.compile(r"^NV(\d{1,3})$")
# what a cell may say (SOC: older drivers' name for SYS)
_PATH_CELLS = ("X", "SYS", "NODE", "PHB", "PXB", "PIX", "SOC")
_ROW_RE = re.compile(r"^[\w.\-]{1,32}[ \t]+(?:X|NV\d{1,3}|SYS|NODE|PHB|PXB|PIX|SOC)\b")
_NIC_LEGEND_RE = re.compile(r"^[ \t]*(NIC\d{1,3}):[ \t]*(\S{1,64})[ \t]*$")
_AFFINITY_KEYS = ("cpu_affinity", "numa_affinity", "gpu_numa_id")
MAX_COLUMNS = 128


def belongs(line):
    """The matrix's rows, its legends (indented) and blank lines (content/)."""
    return (not line.strip() or line[:1] in (" ", "\t") or line.startswith(("Legend:", "NIC Legend:"))
            or bool(_ROW_RE.match(line)))


def read_matrix(text):
    """``nvidia-smi topo -m`` -> {"columns": [device names], "rows": {name: {column: cell}},
    "order": [row names], "affinity": {row: {...}}, "nic_legend": {NICn: device}, "short": [(row,
    lineno, cells read)], "lines": {row: (lineno, line)}, "header_line": lineno, "opening": whether
    the header is topo -m's whole (its affinity columns)} or None when no header row is found.
    Reads only the first matrix of the text."""
    header, out = None, None
    for lineno, raw in iter_lines(as_text(text)):
        line = strip_ansi(raw).rstrip()
        tok = line.split()
        if not tok:
            continue
        if header is None:
            if tok[0] == "GPU0" and tok[1:2] != ["X"]:
                header = []
                for t in tok[:MAX_COLUMNS]:  # a box has tens of devices: a longer header bounds no work
                    if not _DEVICE_RE.match(t):
                        break
                    header.append(t)
                out = {"columns": header, "rows": {}, "order": [], "affinity": {}, "nic_legend": {}, "short": [],
                       "lines": {}, "header_line": lineno, "opening": bool(OPENING.match(line))}
            continue
        m = _NIC_LEGEND_RE.match(line)
        if m:
            out["nic_legend"][m.group(1)] = m.group(2)
            continue
        if tok[0] == "GPU0" and tok[1:2] != ["X"]:
            break  # a second matrix (another host's, pasted after it): only the first is read
        if tok[0] not in header or tok[0] in out["rows"]:
            continue
        cells = tok[1:1 + len(header)]
        out["rows"][tok[0]] = dict(zip(header, cells))
        out["order"].append(tok[0])
        out["lines"][tok[0]] = (lineno, " ".join(tok))  # tabs or spaces: quoted one way
        if len(cells) < len(header):
            out["short"].append((tok[0], lineno, len(cells)))
        rest = tok[1 + len(header):]
        if rest:
            out["affinity"][tok[0]] = dict(zip(_AFFINITY_KEYS, rest))
    return out


def nvlink_peers(matrix):
    """{gpu index: [indexes of its NVLink peers]} (``NV<n>`` cells) of a ``read_matrix`` result."""
    peers = {}
    for row in (matrix or {}).get("order", ()):
        m = _GPU_RE.match(row)
        if not m:
            continue
        me = int(m.group(1))
        peers[me] = sorted(int(c[3:]) for c, v in matrix["rows"][row].items()
                           if _GPU_RE.match(c) and _NV_RE.match(v) and int(c[3:]) != me)
    return peers


def parse_nvidia_smi_topo(text, source="nvidia-smi-topo.txt"):
    """``nvidia-smi topo -m`` -> (facts, findings); ({}, []) for text without its header row."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return never_raise(_parse, source, as_text(text), source)


def _problems(matrix, gpus):
    """Why the matrix cannot be read whole: (cut, [reasons])."""
    rows, cols, reasons, cut = matrix["rows"], matrix["columns"], [], False
    pos = {c: i for i, c in enumerate(cols)}
    missing = ["GPU%d" % g for g in gpus if "GPU%d" % g not in rows]
    if missing:
        cut = True
        reasons.append("it is cut before the row of %s" % ", ".join(missing[:8]))
    last = matrix["order"][-1] if matrix["order"] else None
    for row, _lineno, n in matrix["short"]:
        if row == last:
            cut = True
        reasons.append("the row of %s holds %d of its %d cells" % (row, n, len(cols)))
    for row in matrix["order"]:
        for col, cell in rows[row].items():
            if not (cell in _PATH_CELLS or _NV_RE.match(cell)):
                reasons.append("%s's cell for %s is %r, no link kind nvidia-smi prints" % (row, col, cell[:20]))
            elif (cell == "X") != (col == row):
                reasons.append("%s's cell for %s is %s" % (row, col, cell))
            elif col in rows and pos[col] > pos[row] and rows[col].get(row) not in (None, cell):
                reasons.append("%s->%s is %s but %s->%s is %s (an asymmetric matrix)"
                               % (row, col, cell, col, row, rows[col][row]))
    return cut, reasons


def _nvlinks(rows, a, b):
    m = _NV_RE.match(rows["GPU%d" % a].get("GPU%d" % b, ""))
    return int(m.group(1)) if m else 0


def _degraded(rows, gpus):
    """-> (pattern, {gpu: its NVLink counts to the others' core}, k): the GPUs whose links are below
    a core of the others all linked to each other by NV<k> (a majority of at least three GPUs)."""
    pairs = [(a, b) for i, a in enumerate(gpus) for b in gpus[i + 1:]]
    counts = {p: _nvlinks(rows, *p) for p in pairs}
    if not any(counts.values()):
        return "none", {}, 0
    k = max(counts.values())
    if all(c == k for c in counts.values()):
        return "uniform", {}, k
    # the core: GPUs joined to each other by NV<k>, the best-linked first
    best = sorted(gpus, key=lambda g: -sum(1 for h in gpus if h != g and _nvlinks(rows, g, h) == k))
    core = []
    for g in best:
        if all(_nvlinks(rows, g, h) == k for h in core):
            core.append(g)
    low = {g: [_nvlinks(rows, g, h) for h in core] for g in gpus if g not in core}
    # a GPU below the core with every member of it: its own links, not a board built that way
    if len(core) >= 3 and len(core) * 2 > len(gpus) and all(max(c) < k for c in low.values()):
        return "degraded", low, k
    return "mixed", {}, k


def _parse(text, source):
    matrix = read_matrix(text)
    if matrix is None or not matrix["opening"]:
        return {}, []  # a line that starts with GPU0 is no matrix without topo -m's header
    gpus = sorted(int(_GPU_RE.match(c).group(1)) for c in matrix["columns"] if _GPU_RE.match(c))
    rows = matrix["rows"]
    facts = {"tool": TOOL, "gpus": gpus, "columns": list(matrix["columns"]),
             "matrix": {r: dict(rows[r]) for r in matrix["order"]},
             "gpu_nic": {r: {c: v for c, v in rows[r].items() if not _GPU_RE.match(c)}
                         for r in matrix["order"] if _GPU_RE.match(r)},
             "affinity": matrix["affinity"], "nic_legend": matrix["nic_legend"],
             "nvlinks": [], "pattern": None, "read_whole": False}
    head = "%s:%d" % (source, matrix["header_line"])
    cut, reasons = _problems(matrix, gpus) if gpus else (True, ["its header names no GPU"])
    if reasons:
        return facts, [finding(
            "nvsmi_topo_unreadable",
            "the %s matrix %s: %s; the GPUs' links are not known" % (
                TOOL, "is cut" if cut else "cannot be read whole", "; ".join(reasons[:4])),
            evidence="cut" if cut else reasons[0][:200], source=head)]
    facts["read_whole"] = True
    facts["nvlinks"] = [[a, b, _nvlinks(rows, a, b)] for i, a in enumerate(gpus) for b in gpus[i + 1:]]
    pattern, low, k = _degraded(rows, gpus)
    facts["pattern"] = pattern
    findings = []
    for g, counts in sorted(low.items()):
        lineno, line = matrix["lines"]["GPU%d" % g]
        none_left = not any(counts)
        findings.append(finding(
            "nvlink_inactive",
            "GPU %d has %s to its peers where every other GPU has NV%d (%s): %s" % (
                g, "no NVLink" if none_left else "fewer NVLinks (%s)" % ", ".join(
                    "NV%d" % c if c else "none" for c in sorted(set(counts))),
                k, TOOL, "all its NVLink links are down" if none_left else "some of its NVLink links are down"),
            evidence=line[:200], source="%s:%d" % (source, lineno), gpu=gpu_ref(index=g),
            severity="critical" if none_left else "warning"))
    return facts, findings
