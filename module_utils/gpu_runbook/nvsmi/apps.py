# SPDX-License-Identifier: Apache-2.0
"""``nvidia-smi --query-compute-apps=pid,process_name,gpu_bus_id,gpu_uuid,used_memory
--format=csv[,noheader]``: the processes the remediation ladder checks before a GPU reset."""

from ..findings import finding, iter_lines, normalize_pci
from .failures import scan_failures
from .model import PCI_RE, as_text, clean, field_name, looks_like_header, split_csv, src, to_int, to_str

APPS_DEFAULT_FIELDS = ("pid", "process_name", "gpu_bus_id", "gpu_uuid", "used_memory")
_APPS_ALIASES = {"pid": "pid", "process_name": "process", "name": "process", "gpu_bus_id": "pci",
                 "pci.bus_id": "pci", "gpu_uuid": "uuid", "uuid": "uuid", "used_memory": "used_memory_mib",
                 "used_gpu_memory": "used_memory_mib", "gpu_name": "gpu_name", "gpu_serial": "gpu_serial"}


def _names(cols):
    return [_APPS_ALIASES.get(field_name(c), c) for c in cols]


def _fit_process_name(cols, names):
    """A process name with commas splits into extra columns: join them back, keeping the
    fields around it in place."""
    if len(cols) > len(names) and "process" in names:
        i = names.index("process")
        extra = len(cols) - len(names)
        cols = cols[:i] + [", ".join(cols[i:i + extra + 1])] + cols[i + extra + 1:]
    return cols


def _process(row):
    pci = to_str(row.get("pci"))
    pm = PCI_RE.search(pci) if pci else None
    return {
        "pid": to_int(row.get("pid")),
        "process": clean(row.get("process")),
        "pci": normalize_pci(pm.group(0)) if pm else None,
        "uuid": to_str(row.get("uuid")),
        "used_memory_mib": to_int(row.get("used_memory_mib")),
    }


def parse_apps(text, source, fields):
    """-> (processes, findings); rows that are not processes become info findings."""
    lines = list(iter_lines(as_text(text)))
    names = _names(fields or APPS_DEFAULT_FIELDS)
    procs = []
    findings = []
    for ln, line in lines:
        s = line.strip()
        if not s or "," not in s:
            continue
        cols = split_csv(s)
        if looks_like_header(cols) and "pid" in [field_name(c) for c in cols]:
            names = _names(cols)
            continue
        cols = _fit_process_name(cols, names)
        if len(cols) != len(names):
            findings.append(finding("nvsmi_csv_bad_row", "compute-apps row has %d columns, expected %d"
                                    % (len(cols), len(names)), evidence=s, source=src(source, ln)))
            continue
        proc = _process(dict(zip(names, cols)))
        if proc["pid"] is None:
            findings.append(finding("nvsmi_csv_bad_row", "compute-apps row without a numeric pid",
                                    evidence=s, source=src(source, ln)))
            continue
        procs.append(proc)
    fails, _ = scan_failures(lines, source, [])
    findings.extend(fails)
    return procs, findings
