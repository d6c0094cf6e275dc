# SPDX-License-Identifier: Apache-2.0
"""The public entry points: detect which nvidia-smi output a text is, and parse it.

Each entry point is guarded by ``never_raise``: a bug in a parser becomes one
``parser_error`` finding, never a traceback (the facts keep their shape)."""

import re

from ..findings import never_raise, strip_ansi
from .apps import parse_apps
from .failures import unparseable
from .model import PCI_RE, PCI_TXT, as_text, empty_facts, field_name, looks_like_header, split_csv
from .q_xml import parse_xml

# The other formats' parsers are imported where they are used: a gather reads ``-q -x`` (and the
# compute-apps CSV), and every module a gather imports is compiled from source on every node
# on every run (an Ansible payload carries no bytecode). Ansible still ships them: its
# module_utils finder follows imports inside functions too.

# Line-start patterns run over a whole head (re.M): blanks are [ \t\r\f\v], never \s, which would
# let `^\s+` at every line start run across all the blank lines after it (quadratic: the fuzzer
# found 70 s on 68 KB of empty lines).
_H = r"[ \t\r\f\v]"
# the headers of the -q sections an excerpt is pasted from (indented, no colon): the health ones
Q_SECTIONS = r"ECC Errors|Retired Pages|Remapped Rows|Clocks (?:Throttle|Event) Reasons|GPU Reset Status|Fabric"
# a section's title at its indent, or pasted without it over its own indented lines ([ \t] only: ^\s+ would
# run across every blank line after a line start, quadratic in a text of blank lines)
_Q_SECTION_RE = re.compile(r"^(?:" + _H + r"+(?:" + Q_SECTIONS + r")" + _H + r"*$|(?:" + Q_SECTIONS + r")" + _H +
                           r"*\r?\n" + _H + r"+\S)", re.M | re.I)
_Q_ATTACHED_RE = re.compile(r"^" + _H + r"*Attached GPUs" + _H + r"*:", re.M)
_Q_GPU_RE = re.compile(r"^" + _H + r"*GPU" + _H + r"+" + PCI_TXT + _H + r"*$", re.M)
_TABLE_BORDER_RE = re.compile(r"^" + _H + r"*\+-{5,}", re.M)
_TABLE_UUID_RE = re.compile(r"^" + _H + r"*GPU" + _H + r"+\d+:" + _H + r"[^\n]*\(UUID:", re.M)
_TABLE_NVLINK_RE = re.compile(r"^" + _H + r"*GPU" + _H + r"+\d+:" + _H + r"[^\n]{1,120}\n" + _H + r"*Link" + _H +
                              r"+\d+" + _H + r"*:", re.M)


# Imported inside the guard: a parser that cannot even be imported is a parser_error like any other.
def _parse_q(*args):
    from .q_text import parse_q
    return parse_q(*args)


def _parse_table(*args):
    from .table import parse_table
    return parse_table(*args)


def _parse_csv(*args):
    from .query_csv import parse_csv
    return parse_csv(*args)


def _guarded(fn, fmt, source, *args):
    facts, findings = never_raise(fn, source, *args)
    if not facts:  # the parser raised: keep the facts shape callers index into
        facts = empty_facts(fmt)
    return facts, findings


def parse_nvidia_smi_xml(text, source="nvidia-smi-q.xml", expected_gpus=None, thresholds=None):
    """Parse ``nvidia-smi -q -x`` (any DTD version; truncated XML is read best effort)."""
    return _guarded(parse_xml, "xml", source, text, source, expected_gpus, thresholds)


def parse_nvidia_smi_q(text, source="nvidia-smi-q.txt", expected_gpus=None, thresholds=None):
    """Parse ``nvidia-smi -q`` text (whole, or ``-d ECC,PAGE_RETIREMENT,...``, or an excerpt)."""
    return _guarded(_parse_q, "q", source, text, source, expected_gpus, thresholds)


def parse_nvidia_smi_table(text, source="nvidia-smi.txt", expected_gpus=None, thresholds=None):
    """Parse the plain ``nvidia-smi`` table (+ trailing warnings), ``nvidia-smi nvlink --status`` and ``-L``."""
    return _guarded(_parse_table, "table", source, text, source, expected_gpus, thresholds)


def parse_query_gpu_csv(text, source="nvidia-smi-query-gpu.csv", expected_gpus=None, fields=None,
                        thresholds=None):
    """Parse ``nvidia-smi --query-gpu=... --format=csv`` (header gives the fields; pass ``fields``
    for ``noheader`` output).  Known fields map onto the common GPU facts."""
    return _guarded(_parse_csv, "csv", source, text, source, expected_gpus, fields, thresholds)


def parse_compute_apps_csv(text, source="nvidia-smi-compute-apps.csv", fields=None):
    """Parse ``nvidia-smi --query-compute-apps=pid,process_name,gpu_bus_id,gpu_uuid,used_memory
    --format=csv[,noheader]`` (a header line, if present, gives the field order).

    Returns the list the remediation ladder checks before a GPU reset::

        [{"pid": int, "process": str, "pci": "0000:3b:00.0" | None, "uuid": str | None,
          "used_memory_mib": int | None}]

    Garbage lines are skipped; never raises.  ``parse_compute_apps_csv_findings`` returns
    ``(processes, findings)`` for callers that want the skipped rows and error lines too.
    """
    return parse_compute_apps_csv_findings(text, source, fields)[0]


def parse_compute_apps_csv_findings(text, source="nvidia-smi-compute-apps.csv", fields=None):
    """Like ``parse_compute_apps_csv`` but returns ``(processes, findings)``."""
    procs, findings = never_raise(parse_apps, source, text, source, fields)
    return (procs if isinstance(procs, list) else []), findings


def _detect_csv(t):
    if "--query-gpu" in t[:4000] or "--query-retired-pages" in t[:4000]:
        from .query_csv import command_fields
        if any(command_fields(l) for l in t[:4000].splitlines()):
            return "csv"  # the pasted command names the columns (query_csv reads them from it)
    first = next((l.strip() for l in t.splitlines() if l.strip() and "," in l), None)
    if not first:
        return None
    cols = split_csv(first)
    if "pid" in [field_name(c) for c in cols] and looks_like_header(cols):
        return "compute_apps"
    if looks_like_header(cols):
        return "csv"
    if re.match(r"^\d+$", cols[0]) and len(cols) >= 3 and PCI_RE.search(first) and \
            any(c.startswith("GPU-") for c in cols):
        return "compute_apps"
    return None


def detect_format(text):
    """'xml' | 'q' | 'table' | 'csv' | 'compute_apps' | None for an nvidia-smi output."""
    if not isinstance(text, str) or not text.strip():
        return None
    t = strip_ansi(text).replace("\x00", "")
    head = t[:20000]
    if head.lstrip("\ufeff \t\r\n").startswith("<?xml") or "<nvidia_smi_log" in head:
        return "xml"
    if "NVSMI LOG" in head or _Q_ATTACHED_RE.search(head) or _Q_GPU_RE.search(head) or _Q_SECTION_RE.search(head):
        return "q"
    from .table import is_gpu_box_excerpt
    if (_TABLE_BORDER_RE.search(head) and ("NVIDIA-SMI" in head or "Bus-Id" in head or "MIG devices:" in head)) or \
            _TABLE_UUID_RE.search(head) or is_gpu_box_excerpt(head) or _TABLE_NVLINK_RE.search(head):
        return "table"
    return _detect_csv(t)


def _route_by_name(fmt, text, source):
    """A noheader CSV says nothing about itself: the probe's file name does."""
    src = (source or "").lower()
    if fmt in (None, "csv", "compute_apps") and isinstance(text, str) and "," in text:
        if "compute-apps" in src or "compute_apps" in src:
            return "compute_apps"
        if "query-gpu" in src or "query_gpu" in src:
            return "csv"
    return fmt


def _dispatch(text, source, expected_gpus, thresholds):
    fmt = _route_by_name(detect_format(text), text, source)
    if fmt == "xml":
        return parse_nvidia_smi_xml(text, source, expected_gpus, thresholds)
    if fmt == "q":
        return parse_nvidia_smi_q(text, source, expected_gpus, thresholds)
    if fmt == "table":
        return parse_nvidia_smi_table(text, source, expected_gpus, thresholds)
    if fmt == "csv":
        return parse_query_gpu_csv(text, source, expected_gpus, thresholds=thresholds)
    if fmt == "compute_apps":
        procs, findings = parse_compute_apps_csv_findings(text, source)
        facts = empty_facts("csv")
        facts["processes"] = procs
        return facts, findings
    return unparseable(None, as_text(text), source, "any known nvidia-smi output")


def parse_nvidia_smi(text, source="nvidia-smi.txt", expected_gpus=None, thresholds=None):
    """Detect which nvidia-smi output ``text`` is and parse it; failure outputs ('No devices were
    found', 'couldn't communicate with the NVIDIA driver', 'GPU is lost', empty) become findings."""
    return _guarded(_dispatch, None, source, text, source, expected_gpus, thresholds)
