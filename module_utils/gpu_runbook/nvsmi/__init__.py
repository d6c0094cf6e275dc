# SPDX-License-Identifier: Apache-2.0
"""Parsers for nvidia-smi outputs: ``-q -x`` XML, ``-q`` text, the plain table (plus trailing
warnings, ``nvlink --status`` and ``-L``), ``--query-gpu`` CSV and ``--query-compute-apps`` CSV,
and the error text of an nvidia-smi that failed.

``parse_nvidia_smi(text, source, expected_gpus=None, thresholds=None)`` detects the format; the
GPU parsers (``parse_nvidia_smi_xml``, ``parse_nvidia_smi_q``, ``parse_nvidia_smi_table``,
``parse_query_gpu_csv``) are pure (text in, no I/O), never raise on garbage and return
``(facts, findings)``.  ``facts``::

    {"format": "xml" | "q" | "table" | "csv" | None, "driver_version": str | None,
     "cuda_version": str | None, "attached_gpus": int | None, "count": int,
     "gpus": [{"index", "pci", "uuid", "serial", "name", "minor_number", "ecc_mode",
               "ecc": {"volatile": {"correctable", "uncorrectable", "sram_correctable", ...},
                       "aggregate": {...}, "sram_threshold_exceeded": bool | None, ...},
               "retired_pages": {"single_bit", "double_bit", "pending"},
               "remapped_rows": {"correctable", "uncorrectable", "pending", "failure"},
               "reset_required", "drain_and_reset_recommended", "recovery_action",
               "throttle": {"hw_slowdown", "hw_power_brake", "hw_thermal", "sw_thermal", ...},
               "temperature_c", "mig_mode", "fabric_state", "fabric_status",
               "errors": [field names reading Unknown Error / ERR! / GPU is lost],
               "nvlink_inactive": [link numbers] | None,
               "nvlink_all_inactive": bool (nvlink --status said none of its links is up)}]}

``N/A`` / ``[Not Supported]`` read as None (never 0, never a finding).  The GPU ``index`` is the
nvidia-smi index: explicit in the table, CSV and nvlink output; for ``-q``/XML it is the order in
the file (nvidia-smi enumerates by PCI bus id), rebuilt around GPUs it could not open, and None
when the file holds fewer GPUs than 'Attached GPUs' for another reason (``-i N``, an excerpt).
``Minor Number`` is the /dev/nvidiaN number, *not* the nvidia-smi index (the RTX 4090 capture
shows them differ), so it is kept apart as ``minor_number``.

``parse_compute_apps_csv(text, source)`` returns the process list the remediation ladder checks
before a GPU reset (``parse_compute_apps_csv_findings`` also returns findings).

``parse_nvidia_smi_failure(text, rc=None, source, expected_gpus=None)`` reads a failed run
(non-zero exit, stderr + stdout): at least one warning-or-worse finding naming the cause, and the
expected-GPU-count finding when ``expected_gpus`` is given.

Thresholds (``thresholds={...}`` overrides ``DEFAULT_THRESHOLDS``): aggregate uncorrectable SRAM
ECC above 4 -> RMA, GPU temperature >= 85 C -> warning, 60 retired pages -> RMA.

Modules: ``model`` (the GPU record, value cleaning), one per format (``q_text``, ``q_xml``,
``table``, ``query_csv``, ``apps``), ``rules`` (findings from the records), ``failures`` (the
error lines nvidia-smi prints), ``dispatch`` (entry points), ``failed_run`` (a failed run).
Finding kinds: taxonomy/kinds_gpu.py.

Standard library only, relative imports only, Python 3.9+ (runs inside Ansible payloads).
"""

from ..findings import never_raise
from .dispatch import (detect_format, parse_compute_apps_csv, parse_compute_apps_csv_findings, parse_nvidia_smi,
                       parse_nvidia_smi_q, parse_nvidia_smi_table, parse_nvidia_smi_xml, parse_query_gpu_csv)
from .failed_run import EXIT_CODES, parse_failure
from .failures import FAILURES
from .model import empty_facts
from .rules import DEFAULT_THRESHOLDS

__all__ = ["DEFAULT_THRESHOLDS", "EXIT_CODES", "FAILURES", "detect_format", "parse_compute_apps_csv",
           "parse_compute_apps_csv_findings", "parse_nvidia_smi", "parse_nvidia_smi_failure", "parse_nvidia_smi_q",
           "parse_nvidia_smi_table", "parse_nvidia_smi_xml", "parse_query_gpu_csv"]


def parse_nvidia_smi_failure(text, rc=None, source="nvidia-smi-q.xml", expected_gpus=None):
    """Read a failed nvidia-smi run: ``text`` = its stderr + stdout, ``rc`` = its exit code.
    -> (facts, findings), findings never empty and never only "info": the cause nvidia-smi named
    (driver not loaded, driver/library mismatch, no devices, a lost GPU, permissions ...), or
    ``nvidia_smi_failed`` with the exit code and the first line it printed."""
    facts, findings = never_raise(parse_failure, source, text, rc, source, expected_gpus)
    if not facts:  # a bug in the reader: still not healthy (parser_error is a warning)
        facts = empty_facts(None)
    return facts, findings
