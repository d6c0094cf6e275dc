#!/usr/bin/env python3
"""Generate module_utils/gpu_runbook/vocab/nhc.py: the messages LBNL Node Health Check (NHC)
prints when a node fails a check, read from NHC's own source at a pinned tag, and the messages
of Azure's NHC checks (Azure/azurehpc-health-checks, run by NHC 1.4.3) at a pinned commit.

Usage (from the repository root)::

    # the sources: clones or bare mirrors of https://github.com/mej/nhc and
    # https://github.com/Azure/azurehpc-health-checks
    git clone --bare https://github.com/mej/nhc.git /tmp/nhc.git
    git clone --bare https://github.com/Azure/azurehpc-health-checks.git /tmp/azurehpc-health-checks.git
    .venv/bin/python tests/tools/vocab/gen_nhc.py --src /tmp/nhc.git \
        [--azure-src /tmp/azurehpc-health-checks.git] [--rev 1.4.3] [--azure-rev 0e0a1ac26a64...]
    .venv/bin/python tests/tools/vocab/write_index.py

``--rev`` defaults to the pin, tag 1.4.3 (d534d41db423, 2021-12-21, the latest release). The
``dev`` branch (7d9cec9, 2023-09-20) adds no GPU or InfiniBand check (it refactors the
hardware checks' data gathering), so the release is read. ``--azure-src`` defaults to
``azurehpc-health-checks.git`` (or ``azurehpc-health-checks``) beside ``--src``, or, in a mirror
tree laid out ``<dir>/<owner>+<name>/repo``, to ``<dir>/Azure+azurehpc-health-checks/repo``;
the generator stops when none is there (a table without Azure's rows is never written
silently). ``--azure-rev`` defaults to the pin, commit 0e0a1ac26a64 (2026-05-01, main; its
Docker image builds NHC 1.4.3, the release read here). Azure's older releases are read too:
every release tag of the repository (AZURE_OLDER, v0.1.0 .. v0.4.5; a tag the source lacks is
skipped with a note on stderr). The output is deterministic.

What is read (ROWS):

- every ``die N "..."`` in ``scripts/*.nhc`` and ``nhc``: the failure message of a check;
- the messages a check builds first and dies with (``MSG="..."``, ``UNAUTH_MSG=``,
  ``KSWAPD_MSG=``: their first assignment, the parts appended later are left out);
- ``nhc``'s own log lines that are not debug output (watchdog, start/finish);
- the resource-manager helpers' "Marking ... offline/online" lines (helpers/node-mark-*);
- Azure (row file ``azurehpc-health-checks:<path>``): every ``die N "..."`` (and
  ``die N -e "..."``) in ``customTests/*.nhc``; the line of ``pass()`` in
  customTests/azure_common.nhc (row file ``...azure_common.nhc:pass()``, so that its TEMPLATE
  is not die's); the messages azure_gpu_bandwidth.nhc's ``catch_error()`` dies with, one row
  per literal ``$2`` a caller passes (derived rows: catch_error_rows); dockerfile/aznhc-entrypoint.sh's last line
  "Health checks completed with exit code: N." and the row derived for N = 0;
- Azure's older releases (AZURE_OLDER: every release tag, newest first): the same messages read
  at each tag (their azure_cuda_bandwidth.nhc's catch_error() too, and v0.4.0 .. v0.4.2's last
  line "Health checks completed."), each one the pin does not print a row with file
  ``azurehpc-health-checks:<path>@<tag>`` and the line at that tag, once, at the newest release
  that prints it, classified by the same AZURE_RULES (they name the wordings of the releases
  before v0.4.1, whose messages end with no FaultCode). A 2024 ND96asr_v4 log's
  "check_all_reduce_dependencies: HPCX_DIR is not set. ..." is v0.2.7's.

A message is a bash string: ``$VAR``, ``${...}``, ``$(...)``, ``$((...))`` become ``%s``,
except ``$FUNCNAME`` (and ``${FUNCNAME[0]}``), which bash sets to the enclosing function's
name: it is written as that name ("check_hw_ib:  No IB port%s is %s (%s%s)."); in Azure's
files also a variable the file assigns once, at its top level, to a literal (GPU_XID_TEST,
IB_FLAPPING_LINK_TEST: written as its value), and in pass() ``$NAME``, which nhc sets to its
own name ("nhc", as Azure runs it). A bash word made of several quoted parts
(``"...file "$TOPO_FILE" does..."``) is read whole. ``die 1 -e "..."`` prints the ``-e`` too
(die logs ``"$*"``, it is no echo); so are a die's other words (``die 1 "...: $error" on GPU $i``:
"...: %s on GPU %s") and a die continued on the next line (a trailing backslash: the words are
joined by one space, the row's line is the first).
"""

import argparse
import os
import re
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from common import ls_files, resolve, show, write_table  # noqa: E402

PIN = "1.4.3"
GENERATOR = "tests/tools/vocab/gen_nhc.py"
ORIGIN = "https://github.com/mej/nhc"
LICENCE = "BSD-3-Clause-style LBNL licence (LICENSE; Copyright The Regents of the University of California)"

# Azure's NHC checks: a second source, its rows' file "azurehpc-health-checks:<path>"
AZURE_PIN = "0e0a1ac26a64b32ac4dd7632a529638505d3314a"
AZURE_ORIGIN = "https://github.com/Azure/azurehpc-health-checks"
AZURE_LICENCE = "MIT (LICENSE; Copyright (c) Microsoft Corporation)"
AZ = "azurehpc-health-checks:"
AZURE_PASS = AZ + "customTests/azure_common.nhc:pass()"
# Azure's release tags (every one the repository has, newest first; v.0.2.5 is a mistyped tag of 2023-09-15,
# before v0.2.5; v0.2.8 and v0.2.9 are a branch beside v0.4.0): each message of theirs that the pin no longer
# prints is a row too, file "azurehpc-health-checks:<path>@<tag>" (a 2024 ND96asr_v4 log's "HPCX_DIR is not
# set" is v0.2.7's). Read without --azure-rev's pin only: a tag the source lacks is skipped with a note.
AZURE_OLDER = ("v0.4.5", "v0.4.4", "v0.4.3", "v0.4.2", "v0.4.1", "v0.4.0", "v0.2.9", "v0.2.8", "v0.2.7", "v0.2.6",
               "v0.2.5", "v.0.2.5", "v0.2.4", "v0.2.3", "v0.2.2", "v0.2.1", "v0.2.0", "v0.1.0")

# die() (nhc:48-84) writes "ERROR:  $NAME:  Health check failed:  $*" to the log (NAME is "nhc"),
# "Health check failed:  $*" to syslog (logger -t nhc[pid]), and with MARK_OFFLINE the resource
# manager's note "NHC: $*" (helpers/node-mark-offline: Slurm Reason="NHC: ...", pbsnodes -N)
# Azure's pass() (customTests/azure_common.nhc) writes "SUCCESS:  $NAME:  Health check passed:  $*" to the log
# (its row is the whole line); the container's entrypoint echoes its last line as it is; nhc's own
# log/vlog/syslog lines ("Node Health Check starting.", "Running check: ...") are written as they are:
# their rows' file is "nhc:log()"
LOGGED = "nhc:log()"
TEMPLATES = (
    ("helpers/", "{message}"),
    (LOGGED, "{message}"),
    (AZURE_PASS, "{message}"),
    (AZ + "dockerfile/", "{message}"),
    ("", "ERROR:  nhc:  Health check failed:  {message}"),
)
MARKERS = ("Health check failed", "NHC", "Node Health Check", "Health check passed", "Health checks completed",
           "health checks failed", "Running check:")

# ---------------------------------------------------------------------------------------------
# classification: (file regex, function regex, message regex, kind, severity, meaning); first wins

NODE, ERR = "logged_node_failure", "logged_error"
CSC = r"^(?:scripts|azurehpc-health-checks:customTests)/csc_nvidia_smi\.nhc$"
CONFIG_MEANING = ("NHC's own configuration is wrong (a check's syntax or options): the node was marked "
                  "offline by a misconfigured check, not by a fault")
RULES = (
    # NHC configuration errors: not the node's fault
    ("", "", r"Syntax error|Invalid option|requires an argument|No target\(s\) given|No match criteria|"
     r"requires a supported resource manager|External match check command|Invalid/unsupported operator|"
     r"Missing parameters|exceeds NHC timeout|No command specified|Unsupported additional arguments|"
     r"failed to terminate\.", ERR, "warning", CONFIG_MEANING),
    # GPU checks: nvidia-smi's exit codes (csc_nvidia_smi.nhc, and Azure's copy of it with a FaultCode at the
    # end of each message) and nvidia-healthmon (lbnl_nv.nhc)
    (CSC, "", r"Permission denied", "nvml_permission", "warning",
     "nvidia-smi (run by NHC) lacked the permission to query the GPUs: GPU health was not checked"),
    (CSC, "", r"Power cables not attached", "gpu_insufficient_power", "critical",
     "nvidia-smi exit code 8: a GPU's external power cables are not properly attached"),
    (CSC, "", r"Invalid argument or flag", ERR, "warning", CONFIG_MEANING),
    (CSC, "", r"NVIDIA driver not loaded|NVML shared library", "logged_driver_error",
     "critical", "the NVIDIA driver or its NVML library is missing: no GPU can be used on this node"),
    (CSC, "", r"fallen off the bus", "gpu_fallen_off_bus", "critical",
     "nvidia-smi exit code 15: a GPU fell off the bus or is otherwise inaccessible"),
    (CSC, "", r"Interrupt issue|InfoROM is corrupted", "logged_gpu_error", "critical",
     "nvidia-smi reports a GPU hardware problem (interrupts, or a corrupted InfoROM)"),
    (CSC, "", r"", "nvidia_smi_failed", "warning",
     "nvidia-smi (run by NHC) failed without a known reason: GPU health is unknown, not healthy"),
    ("scripts/lbnl_nv.nhc", "", r"returned failure code", "logged_gpu_error", "critical",
     "nvidia-healthmon found a GPU problem (its own output says which)"),
    ("scripts/lbnl_nv.nhc", "", r"", ERR, "warning",
     "the GPU health tool nvidia-healthmon is missing or crashed: GPU health was not checked"),
    # InfiniBand / interconnect checks
    ("scripts/lbnl_hw.nhc", "check_hw_ib", r"Version mismatch", "logged_ib_error", "critical",
     "the kernel's OFED/IB drivers do not match the user-space libraries: RDMA does not work"),
    ("scripts/lbnl_hw.nhc", "check_hw_ib", r"", "logged_ib_error", "critical",
     "no InfiniBand port is in the state (and rate) the check requires: the link is down, not active "
     "or degraded"),
    ("scripts/lbnl_hw.nhc", "check_hw_gm", r"", "logged_ib_error", "critical",
     "the Myrinet (GM) interconnect device is not active"),
    # machine checks through mcelog
    ("scripts/lbnl_hw.nhc", "check_hw_mcelog", r"UNcorrected", "host_mce_uncorrected", "critical",
     "mcelog shows uncorrected memory errors above the allowed rate: node hardware"),
    ("scripts/lbnl_hw.nhc", "check_hw_mcelog", r"corrected memory errors", "host_mce_corrected", "warning",
     "mcelog shows corrected memory errors above the allowed rate: a DIMM to watch or replace"),
    ("scripts/lbnl_hw.nhc", "check_hw_mcelog", r"", "host_mce_corrected", "warning",
     "mcelog logged machine check events (corrected or not)"),
    # memory checks
    ("scripts/lbnl_hw.nhc", "check_hw_(physmem|mem|swap)_free", r"", "logged_memory_error", "warning",
     "the node has less free memory than NHC requires: memory held by leftover processes, a leak or the "
     "page cache"),
    ("scripts/lbnl_hw.nhc", "check_hw_(physmem|mem|swap)$", r"less than minimum", NODE, "critical",
     "the node has less memory than it should: a DIMM failed or was disabled by the firmware"),
    # process checks
    ("scripts/lbnl_ps.nhc", "check_ps_(service|daemon)", r"not running", NODE, "critical",
     "a service the node needs (e.g. slurmd, nvidia-persistenced, the subnet manager) is not running"),
    ("scripts/lbnl_ps.nhc", "", r"unauthorized|rogue|using .*% (CPU|RAM)|using %s (RAM|memory)|consumed|"
     r"load average|NUMA imbalance|running$", NODE, "warning",
     "a process or load the node should not have (a leftover job process, a runaway daemon)"),
    # NHC itself
    # detached mode's parent prints "ERROR Health check failed:  $MSG" and exits 1 with this message when
    # DETACHED_MODE_FAIL_NODATA=1 (nhc:610-630): the node is failed for want of results, not by a check
    ("^nhc$", "", r"Detached mode -- pending checks", ERR, "warning",
     "NHC's detached mode has no results yet and fails the node until a run completes "
     "(DETACHED_MODE_FAIL_NODATA=1): no check has failed"),
    ("^nhc$", "", r"Running check", "benign", "ok", "NHC's progress (verbose mode)"),
    ("^nhc$", "", r"Node Health Check failed|health checks failed", NODE, "critical",
     "the node failed an NHC check (the check's own message is on the lines before)"),
    ("^nhc$", "", r"Script timed out|Watchdog timer unable", NODE, "critical",
     "an NHC check hung until NHC's timeout: often a hung filesystem or a GPU tool that does not answer"),
    ("^nhc$", "", r"Terminated by signal", ERR, "warning", "NHC was killed by a signal before it finished"),
    ("^nhc$", "", r"Node Health Check (starting|completed successfully|detached parent completed successfully)",
     "benign", "ok", "NHC started or found the node healthy"),
    ("^nhc$", "", r"watchdog timer|defunct", ERR, "warning",
     "NHC's watchdog is ending a hung NHC run (the check that hung follows)"),
    ("^nhc$", "", r"", ERR, "warning", "NHC could not write its log or results (a read-only or full filesystem?)"),
    ("helpers/", "", r"online and clearing note", "benign", "ok",
     "NHC passed and put the node back online, clearing its earlier note"),
    ("helpers/", "", r"offline", NODE, "critical", "NHC marked the node offline in the resource manager"),
    ("", "", r"greater than maximum|exceeds maximum", NODE, "warning",
     "the node has more of a resource than the check allows: usually the check's configuration, not a fault"),
    # everything else: a check the node failed (file systems, files, DMI, sockets, ping, hardware counts)
    ("", "", r"", NODE, "critical", "the node failed an NHC check and was marked offline"),
)
# Azure's checks (customTests/azure_*.nhc, read before RULES: their own rules end with a rule for any other
# failure of theirs; Azure's copy of csc_nvidia_smi.nhc is read by RULES). Each message ends with Azure's
# FaultCode (triggerGHR/config/nhc_fault_dictionary.cfg): NHCNA is "NHC set up issue ... not an impact
# category", the others name the fault Azure reports (NHC2009 missing GPU, NHC2007 row remap, ...)
A = r"^azurehpc-health-checks:"
AC = A + r"customTests/azure_"
AZURE_XID_EC = "48 56 57 58 62 63 64 65 68 69 73 74 79 80 81 92 119 120"  # the Xids the gpu_xid rule names
AZURE_SETUP_MEANING = ("Azure's NHC is not set up for this check (a tool, directory or expected value is missing, or "
                       "the VM size is not supported: FaultCode NHCNA, a set-up issue): the check did not run, no "
                       "fault of the node")
AZURE_GPU_BW_MEANING = ("a GPU's copy bandwidth is below the expected figure (nvbandwidth on NVIDIA: host to GPU and "
                        "GPU to host over its PCIe link, GPU to GPU over NVLink; rocm-bandwidth-test on AMD)")
AZURE_RULES = (
    # the container's last line (dockerfile/aznhc-entrypoint.sh) and a check that passed (azure_common.nhc pass())
    (A + r"dockerfile/", "", r"exit code: 0\.$", "benign", "ok", "nhc exited 0: every check of the run passed"),
    (A + r"dockerfile/", "", r"^Health checks completed\.$", "benign", "ok",
     "the container's nhc run finished (v0.4.0 .. v0.4.2 print it, and exit 0, whatever the checks found: a failed "
     "check's 'Health check failed' line is above)"),
    (A + r"dockerfile/", "", r"exit code", NODE, "critical",
     "nhc exited non-zero: the node failed a check (its 'Health check failed' line is above) or nhc itself "
     "failed"),
    (A + r"customTests/azure_common\.nhc:pass\(\)$", "", r"Health check passed", "benign", "ok",
     "an Azure NHC check passed (the check's own message follows)"),
    # GPU checks
    (AC + r"gpu_xid", "", r"Xid", "logged_gpu_error", "critical",
     "the kernel log holds a recent GPU Xid of those the check fails a node for (XID_EC: 48, 56-58, 62-65, 68, "
     "69, 73, 74, 79-81, 92, 119, 120): the quoted Xid line says which"),
    (AC + r"gpu_ecc", "", r"Row remap pending", "row_remap_pending", "critical",
     "nvidia-smi shows a row remap pending on the GPU: it takes effect only after a GPU reset"),
    (AC + r"gpu_ecc", "", r"Row remap error", "row_remap_failure", "critical",
     "nvidia-smi shows a row remapping failure on the GPU: no spare row was left for a bad memory row"),
    (AC + r"gpu_ecc", "", r"Row remap uncorrectable error count", "logged_gpu_error", "critical",
     "more rows of the GPU's memory were remapped for uncorrectable errors than the check allows (512)"),
    (AC + r"gpu_ecc", "", r"SRAM correctable ECC", "logged_gpu_error", "critical",
     "the GPU's correctable SRAM ECC errors (volatile or aggregate) are above the check's threshold: its on-chip "
     "memory is failing"),
    (AC + r"gpu_ecc", "", r"SRAM Uncorrectable ECC", "logged_gpu_error", "critical",
     "the GPU has uncorrectable SRAM ECC errors (volatile or aggregate)"),
    (AC + r"gpu_ecc", "", r"DRAM Uncorrectable/correctable ECC", "logged_gpu_error", "critical",
     "the GPU's DRAM ECC errors (uncorrectable or correctable, volatile or aggregate) are above the check's "
     "threshold"),
    (AC + r"gpu_ecc", r"^check_SDBE_ecc$", r"", "retired_pages_limit", "critical",
     "a V100's page retirement table is full (62 or more pages retired for single/double-bit ECC errors, one "
     "pending): the GPU has reached the replacement threshold"),
    (AC + r"gpu_ecc", "", r"Number GPU's not correct", "logged_gpu_error", "warning",
     "nvidia-smi's ECC query and its remapped-rows query list different numbers of GPUs: a GPU is missing from "
     "one of them"),
    (AC, "", r"check_gpu_count: Expected to see|No GPUs found", "gpu_missing", "critical",
     "the node shows fewer GPUs than the check expects (nvidia-smi's or rocm-smi's count, or none on the PCI "
     "bus): a GPU fell off the bus or was not enumerated"),
    (AC + r"(?:gpu_|cuda_bandwidth)", "",
     r"nvidia-smi \(|nvidia-smi failed|Failed to get NVLINK status|Failed to get GPU Count", "nvidia_smi_failed",
     "warning", "nvidia-smi (run by the check) exited non-zero: the GPUs' state was not read (or not set); "
                "unknown, not healthy"),
    (AC + r"gpu_bandwidth", "", r"Failed to run NVBandwidth", ERR, "warning",
     "nvbandwidth exited non-zero: the GPUs' copy bandwidth was not measured (its output, logged before, says "
     "why)"),
    # (releases before v0.4.1 end no message with a FaultCode: their wordings are named here too)
    (AC, r"^(?:check_nvBW_gpu_bw|check_ib_bw_gdr)$", r"NHCNA|^-e check_gpu_bw: %s$|Failed to boost GPU clocks",
     "nvidia_smi_failed", "warning",
     "locking the GPU clocks at their maximum for the test (sudo nvidia-smi -lgc) failed: the test did not run"),
    (AC + r"gpu_bandwidth", "", r"FaultCode: NHC2020|Bandwidth %s is less than", "logged_gpu_error", "critical",
     AZURE_GPU_BW_MEANING),
    (AC + r"gpu_bandwidth", r"^check_rocm_gpu_bw$", r"^check_gpu_bw: %s$", "logged_gpu_error", "critical",
     AZURE_GPU_BW_MEANING),
    (AC + r"cuda_bandwidth", "", r"[Bb]andwidth is low|[Ll]ow bandwidth|low htod or dtoh", "logged_gpu_error",
     "critical", "a GPU's host-to-device or device-to-host copy bandwidth (over its PCIe link) is below the expected "
                 "figure (azure_cuda_bandwidth.nhc's gpu_copy test, releases before v0.2.7)"),
    (AC + r"gpu_nvlink", "", r"nvlinks inactive", "nvlink_inactive", "critical",
     "nvidia-smi shows NVLink links of the GPU inactive: GPU-to-GPU traffic falls back to slower paths or fails"),
    (AC + r"gpu_amd_xgmi", "", r"XGMI error count", "logged_gpu_error", "critical",
     "rocm-smi counts XGMI (AMD GPU-to-GPU link) errors on the GPU"),
    (AC + r"gpu_vbios", "", r"VBIOS", "logged_gpu_error", "warning",
     "the GPUs' VBIOS (firmware) is not the version expected, or differs between GPUs: a GPU replaced or "
     "flashed otherwise"),
    # single-node all-reduce (nccl-tests / rccl-tests all_reduce_perf under mpirun)
    (AC + r"[nr]ccl_allreduce", "", r"Out of bounds values failed", "nccl_tests_wrong_results", "critical",
     "the single-node all-reduce test found wrong data (out-of-bounds values): data corrupted on a GPU or its "
     "links"),
    (AC + r"nccl_allreduce_ib_loopback", "", r"BUS BW", "logged_ib_error", "critical",
     "the all-reduce run with shared memory and GPU peer-to-peer disabled, so through the InfiniBand HCAs in "
     "loopback (GPUDirect RDMA), is below the expected bus bandwidth: a degraded HCA or IB link, or a GPU-HCA "
     "PCIe path"),
    (AC + r"[nr]ccl_allreduce", "", r"BUS BW", "logged_gpu_error", "critical",
     "the single-node all-reduce (over NVLink / AMD xGMI) is below the expected bus bandwidth: a slow GPU, NVLink "
     "or NVSwitch, a straggler in every collective"),
    (AC + r"[nr]ccl_allreduce", "", r"returned error code", ERR, "warning",
     "the single-node all-reduce test exited non-zero: it did not complete (its output says why)"),
    # InfiniBand checks
    (AC + r"ib_link_flapping", "", r"IB link flapping", "logged_ib_error", "critical",
     "an InfiniBand port lost carrier at least the allowed number of times within the window (syslog 'lost "
     "carrier' lines): the link is flapping"),
    (AC + r"ib_write_bw", "", r"IB BW \(expected", "logged_ib_error", "critical",
     "ib_write_bw in loopback on one HCA (with GPUDirect RDMA in the gdr check) measured less than the expected "
     "bandwidth: a degraded HCA or IB link, or the GPU-HCA PCIe path"),
    (AC + r"ib_write_bw", "", r"returned error code", "logged_ib_error", "warning",
     "ib_write_bw (the loopback bandwidth test) exited non-zero on the HCA: a port down or the test's port busy; "
     "the bandwidth was not measured"),
    (AC + r"ib_write_bw", "", r"NUMA node", "logged_ib_error", "warning",
     "the HCA's NUMA node could not be read from sysfs: its device is incomplete or gone; the bandwidth test did "
     "not run"),
    (A + r"customTests/azure_common\.nhc$", r"IB_devices|IB_to_numa|ib_numa_node", r"IB system directory",
     "logged_ib_error", "warning",
     "the InfiniBand sysfs directory (or an HCA's numa_node in it) is missing: no RDMA device is visible (an HCA "
     "missing or its driver not loaded); Azure files it as a set-up issue"),
    # the node's other checks
    (AC + r"cpu_stream", "", r"Stream test failed", NODE, "critical",
     "the STREAM benchmark ran below the expected memory bandwidth: the node's CPU memory bandwidth is degraded (a "
     "DIMM, a BIOS setting, or a busy node)"),
    (AC + r"nvme_count", "", r"Expected to see", NODE, "critical",
     "the node has another number of local NVMe disks than expected: a disk failed or was not enumerated"),
    (AC + r"hw_topology_check", "", r"Topology mismatch", NODE, "critical",
     "lstopo does not show PCI devices (GPUs, HCAs) the VM size's topology file expects on their NUMA nodes: a "
     "device fell off the bus or was not enumerated"),
    # set-up issues (FaultCode NHCNA), then any other failed check of Azure's
    (AC, "", r"NHCNA|not currently implemented|not supported for this test", ERR, "warning", AZURE_SETUP_MEANING),
    # ... and their wordings in the releases before v0.4.1 (no FaultCode yet)
    (AC, "", r"Ensure |Set/export|executable directory|executable was not built|failed to parse results|"
     r"bandwidth not set!|No expected value provided|topology file (?:%s )?does not exist|"
     r"could not determine NUMA core|Missing one or more dependencies", ERR, "warning", AZURE_SETUP_MEANING),
    (AC, "", r"", NODE, "critical", "the node failed an Azure NHC check and was marked offline"),
)
_RULES = [(re.compile(f), re.compile(fn), re.compile(m), k, s, mean)
          for f, fn, m, k, s, mean in AZURE_RULES + RULES]
CATEGORY = {"logged_node_failure": "unknown", "logged_error": "unknown", "nvml_permission": "unknown",
            "nvidia_smi_failed": "unknown", "gpu_insufficient_power": "gpu_hardware",
            "gpu_fallen_off_bus": "gpu_hardware", "logged_gpu_error": "gpu_hardware",
            "logged_driver_error": "driver", "logged_ib_error": "ib_network", "host_mce_corrected": "unknown",
            "host_mce_uncorrected": "unknown", "logged_memory_error": "memory_leak", "benign": "healthy",
            "row_remap_pending": "gpu_hardware", "row_remap_failure": "gpu_hardware",
            "retired_pages_limit": "gpu_hardware", "gpu_missing": "gpu_hardware", "nvlink_inactive": "gpu_hardware",
            "nccl_tests_wrong_results": "gpu_hardware"}


def classify(path, func, fmt):
    for f, fn, m, kind, sev, mean in _RULES:
        if f.search(path) and fn.search(func) and m.search(fmt):
            return kind, sev, mean
    raise AssertionError((path, func, fmt))


# ---------------------------------------------------------------------------------------------
# bash strings

def _balanced(s, i, open_, close):
    """Index just past the ``close`` that balances the ``open_`` at s[i]."""
    depth = 0
    while i < len(s):
        if s[i] == "\\":
            i += 2
            continue
        if s.startswith(open_, i):
            depth += 1
            i += len(open_)
            continue
        if s.startswith(close, i):
            depth -= 1
            i += len(close)
            if depth == 0:
                return i
            continue
        i += 1
    raise ValueError("unbalanced %s in %r" % (open_, s))


def bash_format(body, func, values=None):
    """The body of a double-quoted bash string -> a printf-style format (see the module doc).
    ``values``: {variable: literal} of the variables whose value the source fixes (written as it)."""
    values = values or {}
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            n = body[i + 1]
            out.append(n if n in '"$`\\' else "\\" + n)
            i += 2
        elif c == "%":
            out.append("%%")
            i += 1
        elif c == "`":
            j = body.index("`", i + 1)
            out.append("%s")
            i = j + 1
        elif c == "$":
            if body.startswith("$((", i):
                i = _balanced(body, i + 1, "((", "))")
                out.append("%s")
            elif body.startswith("$(", i):
                i = _balanced(body, i + 1, "(", ")")
                out.append("%s")
            elif body.startswith("${", i):
                j = _balanced(body, i + 1, "{", "}")
                expr = body[i + 2:j - 1]
                out.append(func if func and expr in ("FUNCNAME", "FUNCNAME[0]") else
                           values[expr].replace("%", "%%") if expr in values else "%s")
                i = j
            else:
                m = re.match(r"\$([A-Za-z_]\w*|[0-9*@#?$!-])", body[i:])
                if not m:
                    out.append("$")
                    i += 1
                    continue
                name = m.group(1)
                out.append(func if func and name == "FUNCNAME" else
                           values[name].replace("%", "%%") if name in values else "%s")
                i += m.end()
        else:
            out.append(c)
            i += 1
    return "".join(out)


_DQ = r'"((?:[^"\\]|\\.)*)"'
DIE = re.compile(r"(?<![\w-])die\s+\d+\s+(-e\s+)?(?=\")")
MSG_SET = re.compile(r"(?:^|[\s;])(?:local\s+)?(\w*MSG)=" + _DQ)
LOG = re.compile(r"^\s*(?:log|syslog|vlog)\s+" + _DQ)
ECHO = re.compile(r"\becho\s+" + _DQ)
FUNC = re.compile(r"^\s*(?:function\s+(\w+)\s*(?:\(\))?|(\w+)\s*\(\))\s*\{?\s*$")


def bash_word(line, i):
    """The bash word that starts at line[i] (quoted parts and unquoted text joined: ``"a "$X" b"``)
    as the body of one double-quoted string (what bash_format reads)."""
    out = []
    while i < len(line) and not line[i].isspace() and line[i] not in ";|&<>()":
        c = line[i]
        if c == '"':
            m = re.compile(_DQ).match(line, i)
            if not m:
                raise ValueError("unterminated string in %r" % line)
            out.append(m.group(1))
            i = m.end()
        elif c == "'":
            j = line.index("'", i + 1)
            out.append(re.sub(r'([\\$`"])', r"\\\1", line[i + 1:j]))  # literal: nothing expands
            i = j + 1
        elif c == "\\" and i + 1 < len(line):
            out.append(line[i:i + 2])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _word_end(line, i):
    """The index just past the bash word that starts at line[i] (as bash_word reads it)."""
    while i < len(line) and not line[i].isspace() and line[i] not in ";|&<>()":
        if line[i] == '"':
            i = re.compile(_DQ).match(line, i).end()
        elif line[i] == "'":
            i = line.index("'", i + 1) + 1
        else:
            i += 2 if line[i] == "\\" else 1
    return i


def bash_args(line, i):
    """The words of the command from line[i] to its end (an operator, a redirection, a comment),
    joined by one space as ``"$*"`` joins them (``die 1 "...: $error" on GPU $i``)."""
    words = []
    while True:
        words.append(bash_word(line, i))
        j = _word_end(line, i)
        i = j
        while i < len(line) and line[i] in " \t":
            i += 1
        if i == j or i >= len(line) or line[i] in ";|&<>()#}" or re.match(r"\d+[<>]", line[i:]):
            return " ".join(words)


def die_bodies(line):
    """The messages of the ``die N "..."`` calls of one line (``die N -e "..."``: die logs "$*", "-e " too;
    every word of the call: ``die 1 "...: $error" on GPU $i`` logs "...: <error> on GPU <i>")."""
    return [(m.group(1) and "-e " or "") + bash_args(line, m.end()) for m in DIE.finditer(line)]


def constants(text):
    """{variable: literal} of the variables a script assigns once, at its top level, to a literal
    (``GPU_XID_TEST="GPU Xid errors detected"``): their value is the literal wherever they are read."""
    assigned, top, depth = {}, {}, 0
    for line in text.splitlines():
        if FUNC.match(line):
            depth = 1
            continue
        if line.startswith("}"):
            depth = 0
            continue
        # every way a script sets a variable counts (comments too: a name they seem to set is no constant)
        names = re.findall(r"(?:^|[\s;(])(\w+)\+?=", line) + re.findall(r"\bfor\s+(\w+)\s+in\b", line)
        for m in re.finditer(r"\b(?:read|mapfile|readarray)\s+((?:-\w+\s+)*)([\w ]+)", line):
            names += m.group(2).split()
        for name in names:
            assigned[name] = assigned.get(name, 0) + 1
        m = re.match(r"^(\w+)=(?:\"([^\"$`\\]*)\"|'([^']*)'|([^\s\"'$`\\;|&<>()#]+))\s*(?:#.*)?$", line)
        if m and not depth:
            top[m.group(1)] = next(g for g in m.groups()[1:] if g is not None)
    return {k: v for k, v in top.items() if assigned.get(k) == 1}


def messages(path, text, values=None):
    """-> [(line, format, function, logged)] of one file; ``logged``: written by nhc's log(), vlog()
    or syslog() as it is (not by die()). ``values``: variables written as their value."""
    out, func, in_die = [], "", False
    lines = text.splitlines()
    for n, line in enumerate(lines, 1):
        m = FUNC.match(line)
        if m:
            func = m.group(1) or m.group(2)
            in_die = func == "die"
            continue
        if line.startswith("}"):
            func, in_die = "", False
            continue
        code = line.lstrip()
        if code.startswith("#"):
            continue
        found, logged = [], []
        if path.startswith("helpers/"):
            found = [b for b in ECHO.findall(line) if "Marking" in b]
        else:
            # a die continued on the next line(s) (backslash-newline): read the whole command, at its first line
            whole, k = line, n
            while DIE.search(whole) and re.search(r"(?<!\\)\\$", whole) and k < len(lines):
                whole, k = whole[:-1] + lines[k], k + 1
            found = die_bodies(whole)
            for name, body in MSG_SET.findall(line):
                if body and not body.startswith("$" + name):
                    found.append(body)
            if path == "nhc" and not in_die:
                logged = [b for b in LOG.findall(line) if re.search(r"[A-Za-z]{4}", re.sub(r"\$\w+", "", b))]
        for body in found + logged:
            fmt = bash_format(body, func, values)
            if path.startswith("helpers/"):
                # the note's leader: "NHC:" (LEADER; OLD_NOTE_LEADER is "NHC:" where a node is put online)
                fmt = fmt.replace("%s %s\"", "NHC: %s\"").replace("offline:  %s %s", "offline:  NHC: %s") \
                    .replace("(%s %s)", "(NHC: %s)")
            if not re.search(r"[A-Za-z]{2}", re.sub(r"%[a-z%]|\\.", "", fmt)):
                continue  # die 1 "$MSG", die 1 "\t $2 $err_code" and the like: no text of their own
            out.append((n, fmt, func, body in logged))
    return out


# ---------------------------------------------------------------------------------------------
# Azure's checks (Azure/azurehpc-health-checks)

def _line_of(text, literal, start=False):
    """The line number of the one line holding ``literal`` (``start``: the line's code starts with it);
    the generator stops when the source changed."""
    hits = [n for n, line in enumerate(text.splitlines(), 1)
            if (line.strip().startswith(literal) if start else literal in line)]
    if len(hits) != 1:
        raise SystemExit("azurehpc-health-checks: %d lines hold %r (expected one): the source changed" % (
            len(hits), literal))
    return hits[0]


def _function_lines(text):
    """-> [(line, text, function)] of a script (function "" outside one)."""
    out, func = [], ""
    for n, line in enumerate(text.splitlines(), 1):
        m = FUNC.match(line)
        if m:
            func = m.group(1) or m.group(2)
        elif line.startswith("}"):
            func = ""
        out.append((n, line, func))
    return out


CATCH_ERROR_DIE = 'die 1 "\\t $2 $err_code"'


def catch_error_rows(path, text):
    """azure_gpu_bandwidth.nhc's catch_error() (and the older releases' azure_cuda_bandwidth.nhc's) dies with
    ``"\\t $2 $err_code"``: one row per call whose message (``$2``) is a variable its function set to a
    literal (``$FUNCNAME`` in it is the function's name) before the call, at the call."""
    die_line = _line_of(text, CATCH_ERROR_DIE)
    out, seen = [], {}
    for n, line, func in _function_lines(text):
        for name in re.findall(r"(?:^|[\s;(])(\w+)\+?=", line):
            seen.pop((func, name), None)  # set otherwise: no longer a known literal
        m = re.match(r'\s*(\w+)="([^"`\\]*)"\s*$', line)
        if m:
            value = re.sub(r"\$(?:FUNCNAME\b|\{FUNCNAME(?:\[0\])?\})", func, m.group(2)) if func else m.group(2)
            if "$" not in value:
                seen[(func, m.group(1))] = value
        m = re.search(r'\bcatch_error\s+"\$\w+"\s+"\$(\w+)"', line)
        if m and (func, m.group(1)) in seen:
            value = seen[(func, m.group(1))]
            out.append((n, "\\t %s %%s" % value.replace("%", "%%"), func,
                        "printed by catch_error() (line %d) with $2 = %s, \"%s\"" % (die_line, m.group(1), value)))
    return out


def azure_rows(src, commit, pinned=True):
    """The rows of Azure's checks (file "azurehpc-health-checks:<path>") at ``commit``. ``pinned``: the
    pin, where each part read must be there; an older release (AZURE_OLDER) may lack pass() (before
    v0.4.0), the container's entrypoint (before v0.4.0) and catch_error() (azure_cuda_bandwidth.nhc has
    its own until v0.2.6, azure_gpu_bandwidth.nhc replaced it in v0.2.7)."""
    rows = []

    def add(path, line, fmt, func, note=""):
        kind, sev, mean = classify(path, func, fmt)
        mean = (mean + " " if mean else "") + "(" + note + ")" if note else mean
        rows.append((path, line, fmt, kind, "healthy" if kind == "benign" else CATEGORY[kind],
                     "ok" if kind == "benign" else sev, mean))

    paths = [p for p in ls_files(src, commit, "customTests") if re.fullmatch(r"customTests/\w+\.nhc", p)]
    for path in sorted(paths):
        text = show(src, commit, path)
        values = constants(text)
        if path == "customTests/azure_gpu_xid.nhc" and values.get("XID_EC") != AZURE_XID_EC:
            raise SystemExit("%s: XID_EC is %r, not the Xids AZURE_RULES names" % (path, values.get("XID_EC")))
        for line, fmt, func, _logged in messages(path, text, values):
            add(AZ + path, line, fmt, func)
        if (pinned and path == "customTests/azure_gpu_bandwidth.nhc") or CATCH_ERROR_DIE in text:
            for line, fmt, func, note in catch_error_rows(path, text):
                add(AZ + path, line, fmt, func, note)
        if path == "customTests/azure_common.nhc" and (pinned or "Health check passed" in text):
            # pass(): the line it writes to the log (and, with oecho, to nhc's stdout)
            line = _line_of(text, 'echo "SUCCESS:  $NAME:  Health check passed:  $*"', start=True)
            body = ECHO.search(text.splitlines()[line - 1]).group(1)
            add(AZURE_PASS, line, bash_format(body, "pass", {"NAME": "nhc"}), "pass")
    # the container's entrypoint: its last line, and the row of a run whose every check passed
    path = "dockerfile/aznhc-entrypoint.sh"
    if not pinned and path not in ls_files(src, commit, "dockerfile"):
        return rows
    text = show(src, commit, path)
    if not pinned and "nhc_exit_code" not in text:
        # v0.4.0 .. v0.4.2: the last line has no exit code (the entrypoint exits 0 whatever nhc found)
        line = _line_of(text, 'echo "Health checks completed."', start=True)
        _line_of(text, "exit 0", start=True)
        add(AZ + path, line, bash_format(ECHO.search(text.splitlines()[line - 1]).group(1), ""), "")
        return rows
    line = _line_of(text, 'echo "Health checks completed with exit code: ${nhc_exit_code}."')
    _line_of(text, "nhc_exit_code=$?")  # ... the exit status of the nhc run just before
    fmt = bash_format(ECHO.search(text.splitlines()[line - 1]).group(1), "")
    add(AZ + path, line, fmt, "")
    if fmt.count("%s") != 1:
        raise SystemExit("%s: %r is not the message this generator knows" % (path, fmt))
    add(AZ + path, line, fmt.replace("%s", "0"), "", "nhc_exit_code is 0")
    return rows


def azure_older_rows(src, known, notes):
    """The messages of the AZURE_OLDER releases that the pin's rows (``known``: their formats) do not
    have, newest release first: each format once, at the newest release that prints it, its file
    "azurehpc-health-checks:<path>@<tag>" with the line at that tag, classified as at the pin."""
    out = []
    for tag in AZURE_OLDER:
        try:
            commit = resolve(src, tag)
        except Exception:  # noqa: BLE001 - an older tag is optional
            notes.append("azurehpc-health-checks tag %s not in the source: skipped" % tag)
            continue
        for row in azure_rows(src, commit, pinned=False):
            if row[2] in known:
                continue
            known.add(row[2])
            out.append((row[0] + "@" + tag,) + row[1:])
    return out


DOC = """\
Read: every die message of scripts/*.nhc and nhc (and the messages the checks build in MSG=,
UNAUTH_MSG=, KSWAPD_MSG= before dying with them: their first part), nhc's own non-debug log
lines, and the helpers' "Marking ... offline/online" lines. A die message is printed three
ways: "ERROR:  nhc:  Health check failed:  <msg>" in /var/log/nhc.log (the TEMPLATE),
"nhc[pid]: Health check failed:  <msg>" in syslog, and "NHC: <msg>" as the node's note in the
resource manager (Slurm Reason=, pbsnodes note); the rows match all three. $FUNCNAME is the
check's name (bash sets it), other variables are %%s. Left out: debug output (dbg), the
messages a site writes itself (check_cmd_output -m, check_file_contents), and the text
appended to MSG after the first assignment (actions taken: "; killed", "; restart").
Classification: a failed check is about the node, so its category is what it checks: GPU
checks (csc_nvidia_smi.nhc: nvidia-smi's exit codes; lbnl_nv.nhc: nvidia-healthmon) ->
gpu_fallen_off_bus, gpu_insufficient_power, logged_gpu_error, logged_driver_error (driver not
loaded, NVML missing), nvml_permission / nvidia_smi_failed (not checked); check_hw_ib ->
logged_ib_error; check_hw_mcelog -> host_mce_*; free-memory checks -> logged_memory_error;
everything else a node failed (file systems, services, memory size, files, DMI, sockets) ->
logged_node_failure (critical; warning for stray processes and load); NHC's own configuration
errors, signals and log problems -> logged_error (warning). NHC starting/finishing healthy and
a node put back online are benign.
"""

AZURE_DOC = """
Also read: Azure's NHC checks (Azure/azurehpc-health-checks, run by NHC 1.4.3), {origin}
at commit {commit},
licence {licence};
their rows' file is "azurehpc-health-checks:<path>". Every die message of customTests/*.nhc,
printed by NHC's die() as above ("die 1 -e ..." logs the "-e" too; $FUNCNAME is the function's
name, a variable the file sets once at its top level to a literal is its value; each message
ends with Azure's FaultCode: NHCNA is a set-up issue, the others the fault Azure reports);
catch_error()'s message for each literal $2 its callers pass (derived rows); pass()'s
"SUCCESS:  nhc:  Health check passed:  <msg>" (file "...azure_common.nhc:pass()", printed
whole); the container entrypoint's last line "Health checks completed with exit code: <n>."
and its row for 0 (derived). check_SDBE_ecc's "ERROR: $IFS$error_msg. ..." is printed over
several lines (IFS is a newline there): its row matches the one-line forms (syslog's #012, a
resource manager's note).
Older releases: every release tag of Azure/azurehpc-health-checks, newest first,
{older},
is read the same way; each message of theirs the pin does not print is a row with file
"azurehpc-health-checks:<path>@<tag>" (the line at that tag), once, at the newest release that
prints it, classified by the same rules (which name the wordings of the releases before v0.4.1,
whose messages end with no FaultCode: set-up complaints such as v0.2.7's "HPCX_DIR is not set"
are logged_error warning as NHCNA is); their azure_cuda_bandwidth.nhc (until v0.2.6: low
host/device copy bandwidth -> logged_gpu_error) and v0.4.0 .. v0.4.2's last line "Health checks
completed." (printed whatever the checks found: benign) are read too.
Left out: warning()'s "Nearing a failure threshold" line, the
messages pass() is called with (the SUCCESS row reads them all), the entrypoint's other lines,
and catch_error() where $2 is no literal (check_rocm_gpu_bw passes an unset variable; the older
azure_cuda_bandwidth.nhc's error_htod/error_dtoh are appended to with +=).
Classification (AZURE_RULES, read before RULES; Azure's copy of csc_nvidia_smi.nhc by RULES):
Xid, ECC, bandwidth, XGMI, VBIOS -> logged_gpu_error; row remap pending / failure ->
row_remap_pending / row_remap_failure; a V100's full page retirement table ->
retired_pages_limit; fewer GPUs -> gpu_missing; inactive NVLinks -> nvlink_inactive; nvidia-smi
failing -> nvidia_smi_failed (warning: not checked); all-reduce wrong data ->
nccl_tests_wrong_results, its bus bandwidth low -> logged_gpu_error (NVLink) or logged_ib_error
(the IB loopback run); IB link flapping, ib_write_bw bandwidth low -> logged_ib_error
(critical), the IB test not run -> logged_ib_error (warning); CPU STREAM bandwidth, NVMe count,
PCI topology -> logged_node_failure; NHCNA set-up issues and tests that did not complete ->
logged_error (warning); a check passed, and exit code 0 -> benign; another exit code ->
logged_node_failure.
"""


def azure_default(src):
    """Where Azure's source is when --azure-src is not given (the module doc), or None."""
    src = os.path.abspath(src.rstrip("/"))
    here = os.path.dirname(src)
    candidates = [os.path.join(here, "azurehpc-health-checks.git"), os.path.join(here, "azurehpc-health-checks")]
    if os.path.basename(src) == "repo":  # <dir>/mej+nhc/repo
        candidates.append(os.path.join(os.path.dirname(here), "Azure+azurehpc-health-checks", "repo"))
    return next((c for c in candidates if os.path.isdir(c)), None)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", required=True, help="a clone or bare mirror of github.com/mej/nhc")
    ap.add_argument("--rev", default=PIN, help="tag, branch or commit (default %(default)s)")
    ap.add_argument("--azure-src", help="a clone or bare mirror of github.com/Azure/azurehpc-health-checks "
                                        "(default: azurehpc-health-checks.git beside --src; the module doc)")
    ap.add_argument("--azure-rev", default=AZURE_PIN, help="commit, tag or branch (default %(default)s)")
    args = ap.parse_args(argv)
    azure_src = args.azure_src or azure_default(args.src)
    if not azure_src:
        ap.error("no Azure/azurehpc-health-checks source beside --src: give --azure-src")
    commit = resolve(args.src, args.rev)
    azure_commit = resolve(azure_src, args.azure_rev)
    helpers = ("helpers/node-mark-offline", "helpers/node-mark-online")
    paths = [p for p in ls_files(args.src, commit, "scripts", "nhc", "helpers")
             if p == "nhc" or re.fullmatch(r"scripts/\w+\.nhc", p) or p in helpers]
    rows = []
    for path in sorted(paths):
        for line, fmt, func, logged in messages(path, show(args.src, commit, path)):
            kind, sev, mean = classify(path, func, fmt)
            where = LOGGED if logged else path
            if kind == "benign":
                rows.append((where, line, fmt, kind, "healthy", "ok", mean))
            else:
                rows.append((where, line, fmt, kind, CATEGORY[kind], sev, mean))
    azure = azure_rows(azure_src, azure_commit)
    notes = []
    older = azure_older_rows(azure_src, set(r[2] for r in rows + azure), notes)
    azure += older
    meta = {"EMITTER": "NHC", "PROJECT": "LBNL Node Health Check (NHC)", "VERSION": args.rev, "COMMIT": commit,
            "LICENCE": LICENCE, "ORIGIN": ORIGIN, "GENERATOR": GENERATOR}
    doc = DOC + AZURE_DOC.format(commit=azure_commit, origin=AZURE_ORIGIN, licence=AZURE_LICENCE,
                                 older="\n".join(textwrap.wrap(", ".join(AZURE_OLDER), 96)))
    path = write_table("nhc", meta, MARKERS, TEMPLATES, rows + azure, doc=doc)
    for note in notes:
        print("note:", note, file=sys.stderr)
    print("%s: %d rows (%d of Azure's checks, %d of them its older releases')" % (
        path, len(set(rows + azure)), len(set(azure)), len(set(older))))


if __name__ == "__main__":
    main()
