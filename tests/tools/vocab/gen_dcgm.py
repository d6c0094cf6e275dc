#!/usr/bin/env python3
"""Generate module_utils/gpu_runbook/vocab/dcgm.py: DCGM's health and diagnostic error codes
(``DCGM_FR_*`` of dcgmlib/dcgm_errors.h, with each code's message ``_MSG``, next step
``_NEXT``, and DCGM's own severity and category from dcgmlib/src/dcgm_errors.c), and the
words of ``dcgmi diag`` / ``dcgmi health`` text output (dcgmi/Diag.cpp, dcgmi/Health.cpp).

    git clone --bare https://github.com/NVIDIA/DCGM.git /tmp/dcgm.git   # or any clone
    .venv/bin/python tests/tools/vocab/gen_dcgm.py --src /tmp/dcgm.git [--rev 72fa3feaa67d]

The default pin is master at "DCGM 4.6.0 (#306)" (the tag v4.6.0 is not an ancestor of it);
licence Apache-2.0.
"""

import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402

sys.path.insert(0, os.path.join(common.REPO, "module_utils"))
from gpu_runbook import vocab  # noqa: E402
from gpu_runbook.taxonomy import KINDS  # noqa: E402
from gpu_runbook.taxonomy.kinds_vocab import BY_CATEGORY  # noqa: E402

GENERATOR = "tests/tools/vocab/gen_dcgm.py"
PIN = "72fa3feaa67d"
HEADER = "dcgmlib/dcgm_errors.h"
TABLE = "dcgmlib/src/dcgm_errors.c"
DIAG = "dcgmi/Diag.cpp"
HEALTH = "dcgmi/Health.cpp"
FRAMEWORK = "nvvs/include/TestFramework.inl"  # the diagnostic's plugin loading (its errors reach dcgmi's output)
# nv-hostengine's own log (dcgmlib/src/DcgmLogging: "DATE TIME LEVEL [pid:tid] [[Module]] message
# [source:line] [function]"): where it loads its modules, and the modules that start only on the
# hardware they watch (dcgm_structs.h dcgmModuleId_t names the numbers it logs)
ENGINE = "dcgmlib/src/DcgmHostEngineHandler.cpp"
MODULE = "modules/DcgmModule.h"
NSCQ = "modules/nvswitch/DcgmNscqManager.cpp"
SYSMON = "modules/sysmon/DcgmSystemMonitor.h"
STRUCTS = "dcgmlib/dcgm_structs.h"

# a code's number as `dcgmi diag -j` prints it (dcgmi/Diag.cpp HelperJsonAddResult:
# errorEntry["error_id"] = error.code, written by jsoncpp's toStyledString: keys sorted, so
# "error_id" is never an object's last key and always ends in a comma)
CODE_FORMATS = ('"error_id" : {number},',)
# a _MSG row printed whole: as `dcgmi diag -j` writes it (errorEntry["warning"] = error.msg)
TEMPLATES = ((HEADER, '"warning" : "{message}"'),
             # nv-hostengine.log (DCGM 3.3: '2024-02-01 14:12:01.207 ERROR [9596:9598] Failed to load module 9
             # [/workspaces/dcgm-rel_dcgm_3_3-postmerge/dcgmlib/src/DcgmHostEngineHandler.cpp:1831]
             # [DcgmHostEngineHandler::LoadModule]')
             ("modules/", "2026-12-02 07:10:01.000 ERROR [4242:4243] {message} [/workspaces/dcgm/modules/{file}:{line}] "
                          "[DcgmModule]"),
             ("dcgmlib/src/DcgmHostEngineHandler.cpp", "2026-12-02 07:10:01.000 ERROR [4242:4243] {message} "
                              "[/workspaces/dcgm/dcgmlib/src/{file}:{line}] [DcgmHostEngineHandler::LoadModule]"),
             ("", "{message}"))

# ---- classification -------------------------------------------------------------------------
# DCGM's category -> ours (then per-code overrides below)
CATEGORY = {
    "DCGM_FR_EC_NONE": "unknown",
    "DCGM_FR_EC_PERF_THRESHOLD": "gpu_hardware",   # the GPU under-performs a stress/bandwidth test
    "DCGM_FR_EC_PERF_VIOLATION": "gpu_hardware",
    "DCGM_FR_EC_SOFTWARE_CONFIG": "unknown",       # a test skipped/refused by the node's configuration
    "DCGM_FR_EC_SOFTWARE_LIBRARY": "driver",       # NVML / a library the driver ships
    "DCGM_FR_EC_SOFTWARE_XID": "unknown",          # an Xid: its number decides, not the code
    "DCGM_FR_EC_SOFTWARE_CUDA": "driver",          # CUDA cannot run on the GPU
    "DCGM_FR_EC_SOFTWARE_EUD": "unknown",          # the field-diagnostic tool's own trouble
    "DCGM_FR_EC_SOFTWARE_OTHER": "unknown",
    "DCGM_FR_EC_HARDWARE_THERMAL": "gpu_hardware",
    "DCGM_FR_EC_HARDWARE_MEMORY": "gpu_hardware",
    "DCGM_FR_EC_HARDWARE_NVLINK": "gpu_hardware",
    "DCGM_FR_EC_HARDWARE_NVSWITCH": "gpu_hardware",
    "DCGM_FR_EC_HARDWARE_PCIE": "gpu_hardware",
    "DCGM_FR_EC_HARDWARE_POWER": "gpu_hardware",
    "DCGM_FR_EC_HARDWARE_OTHER": "gpu_hardware",
    "DCGM_FR_EC_INTERNAL_OTHER": "unknown",
}
# DCGM's severity -> ours: ISOLATE (cannot run work) and RESET (drain and reset) are critical
SEVERITY = {
    "DCGM_ERROR_NONE": "info", "DCGM_ERROR_MONITOR": "warning", "DCGM_ERROR_ISOLATE": "critical",
    "DCGM_ERROR_UNKNOWN": "warning", "DCGM_ERROR_TRIAGE": "warning", "DCGM_ERROR_CONFIG": "warning",
    "DCGM_ERROR_RESET": "critical",
}
# per code: (kind or None for the category's generic one, category or None, severity or None)
OVERRIDE = {
    "DCGM_FR_OK": ("benign", "healthy", "ok"),                                   # no error
    "DCGM_FR_VOLATILE_DBE_DETECTED": ("ecc_uncorrectable_volatile", None, None),
    "DCGM_FR_CUDA_DBE": ("ecc_uncorrectable_volatile", None, None),
    "DCGM_FR_VOLATILE_SBE_DETECTED": (None, None, "info"),     # corrected errors: "can still perform workload"
    # DCGM: RESET, but its own next step is "Monitor - this GPU can still perform workload"
    "DCGM_FR_PENDING_PAGE_RETIREMENTS": ("retired_pages_pending", None, "warning"),
    "DCGM_FR_DBE_PENDING_PAGE_RETIREMENTS": ("retired_pages_pending", None, None),
    "DCGM_FR_RETIRED_PAGES_LIMIT": ("retired_pages_limit", None, None),
    "DCGM_FR_RETIRED_PAGES_DBE_LIMIT": ("retired_pages_limit", None, None),
    "DCGM_FR_CORRUPT_INFOROM": ("inforom_corrupted", None, None),
    "DCGM_FR_CLOCKS_EVENT_THERMAL": ("gpu_temperature_high", None, None),
    "DCGM_FR_THERMAL_VIOLATIONS": ("gpu_temperature_high", None, None),
    "DCGM_FR_THERMAL_VIOLATIONS_TS": ("gpu_temperature_high", None, None),
    "DCGM_FR_TEMP_VIOLATION": ("gpu_temperature_high", None, None),
    "DCGM_FR_CLOCKS_EVENT_POWER": (None, None, "info"),        # capped at its power limit: by design
    # DCGM: ISOLATE, but its own next step is "Monitor the NVLink. It can still perform workload."
    "DCGM_FR_NVLINK_ERROR_THRESHOLD": ("nvlink_errors", None, "warning"),
    "DCGM_FR_NVLINK_CRC_ERROR_THRESHOLD": ("nvlink_errors", None, None),
    "DCGM_FR_NVLINK_ERROR_CRITICAL": ("nvlink_errors", None, None),
    "DCGM_FR_NVLINK_EFFECTIVE_BER_THRESHOLD": ("nvlink_errors", None, None),
    "DCGM_FR_NVLINK_SYMBOL_BER_THRESHOLD": ("nvlink_errors", None, None),
    "DCGM_FR_NVLINK_DOWN": ("nvlink_inactive", None, None),
    "DCGM_FR_GPU_EXPECTED_NVLINKS_UP": ("nvlink_inactive", None, None),
    "DCGM_FR_NVSWITCH_FATAL_ERROR": ("nvswitch_sxid", None, None),
    "DCGM_FR_NVSWITCH_NON_FATAL_ERROR": ("nvswitch_sxid", None, None),
    "DCGM_FR_SXID_ERROR": ("nvswitch_sxid", "gpu_hardware", None),              # a fatal NVSwitch SXid
    "DCGM_FR_ROW_REMAP_FAILURE": ("row_remap_failure", None, None),
    "DCGM_FR_PENDING_ROW_REMAP": ("row_remap_pending", None, None),
    "DCGM_FR_SRAM_THRESHOLD": ("ecc_sram_threshold_exceeded", None, None),
    "DCGM_FR_FALLEN_OFF_BUS": ("gpu_fallen_off_bus", None, None),
    "DCGM_FR_GPU_RECOVERY_RESET": ("gpu_recovery_reset", None, None),
    "DCGM_FR_GPU_RECOVERY_REBOOT": ("gpu_recovery_reboot", None, None),
    "DCGM_FR_GPU_RECOVERY_DRAIN_P2P": ("gpu_recovery_drain_p2p", None, None),
    "DCGM_FR_GPU_RECOVERY_DRAIN_RESET": ("gpu_drain_and_reset_recommended", None, None),
    "DCGM_FR_UNCORRECTABLE_ROW_REMAP_LIMIT": (None, None, "critical"),        # out of spare rows: replace the GPU
    "DCGM_FR_UNCONTAINED_ERROR": (None, "gpu_hardware", None),   # Xid 95: an uncontained memory error
    "DCGM_FR_CONTAINED_ERROR": (None, "gpu_hardware", None),     # Xid 94: a contained memory error
    "DCGM_FR_EUD_TEST_FAILED": (None, "gpu_hardware", None),     # the field diagnostic found a fault
    "DCGM_FR_DENYLISTED_DRIVER": ("driver_conflict", "driver", "critical"),  # nouveau owns the GPUs
    "DCGM_FR_CUDA_FM_NOT_INITIALIZED": ("fabric_not_ready", None, None),
    "DCGM_FR_FABRIC_MANAGER_TRAINING_ERROR": ("fabric_not_ready", None, "critical"),  # NVLink fabric unusable
    "DCGM_FR_FABRIC_PROBE_STATE": ("fabric_not_ready", "driver", None),
    "DCGM_FR_IMEX_UNHEALTHY": (None, "driver", None),            # IMEX daemon: the driver's multi-node side
    "DCGM_FR_BAD_CUDA_ENV": (None, "nccl_config", None),         # an environment variable of the run
    "DCGM_FR_PERSISTENCE_MODE": (None, "driver", None),          # driver setting of the node
    "DCGM_FR_MEMORY_ALLOC_HOST": (None, "memory_leak", None),    # the host is out of memory
    # DCGM files these under hardware/RESET, but what they say is configuration or a process
    "DCGM_FR_GRAPHICS_PROCESSES": (None, "unknown", "warning"),  # a display process may make tests fail
    "DCGM_FR_ECC_DISABLED": (None, "unknown", None),             # ECC off: a node setting, test skipped
    "DCGM_FR_ECC_UNSUPPORTED": (None, "unknown", None),
    "DCGM_FR_ECC_PENDING": (None, "unknown", None),
    "DCGM_FR_ENFORCED_POWER_LIMIT": (None, "unknown", None),     # a power cap set too low to test
    # an NCCL error seen by DCGM's NCCL test: the GPU, NVLink or the network; DCGM's
    # HARDWARE_OTHER would blame the GPU on a message that does not
    "DCGM_FR_NCCL_ERROR": (None, "unknown", None),
    # a test that did not run: no fault
    "DCGM_FR_TEST_DISABLED": ("benign", "healthy", "ok"),
    "DCGM_FR_TEST_SKIPPED": ("benign", "healthy", "ok"),
    "DCGM_FR_CONCURRENT_GPUS": ("benign", "healthy", "ok"),
    "DCGM_FR_L1TAG_UNSUPPORTED": ("benign", "healthy", "ok"),
    "DCGM_FR_ABORTED": (None, None, "info"),                     # the user stopped the test
    "DCGM_FR_RETEST_REQUESTED": (None, None, "info"),
}
BENIGN_WHY = {
    "DCGM_FR_OK": "DCGM_FR_OK: no error.",
    "DCGM_FR_TEST_DISABLED": "The test is disabled for this GPU by configuration: skipped, not failed.",
    "DCGM_FR_TEST_SKIPPED": "The test was skipped: not a failure.",
    "DCGM_FR_CONCURRENT_GPUS": "The pair bandwidth test needs two GPUs: skipped, not failed.",
    "DCGM_FR_L1TAG_UNSUPPORTED": "This GPU has no L1 tag test: skipped, not failed.",
}

# dcgmi's own text output: (file, literal that locates the line, format, kind, category,
# severity, meaning); the line is where the literal first occurs in the file at the pin
DCGMI_ROWS = (
    (HEALTH, 'out.addHeader("Health Monitor Report")', "Health Monitor Report",
     "benign", "healthy", "ok", "The header of dcgmi health --check output; its lines below say the health."),
    (HEALTH, '"Health monitor systems set successfully."', "Health monitor systems set successfully.",
     "benign", "healthy", "ok", "dcgmi health --set succeeded."),
    (HEALTH, '"Error: Unable to get health watches. Return: "', "Error: Unable to get health watches. Return: %s",
     "logged_error", "unknown", "warning", "dcgmi could not read DCGM's health watches: GPU health was not checked."),
    (HEALTH, '"Error: Unable to set health watches. Return: "', "Error: Unable to set health watches. Return: %s",
     "logged_error", "unknown", "warning", "dcgmi could not set DCGM's health watches: GPU health is not watched."),
    (HEALTH, '"Error: Unable to check health watches. Return: "',
     "Error: Unable to check health watches. Return: %s",
     "logged_error", "unknown", "warning", "dcgmi could not check DCGM's health watches: GPU health was not checked."),
    (HEALTH, '"Error: Health watches not enabled. Please enable watches. ',
     "Error: Health watches not enabled. Please enable watches. ",
     "logged_error", "unknown", "warning", "DCGM's health watches are off: GPU health was not checked."),
    (DIAG, '"Error: Unable to install diagnostic signal handlers."',
     "Error: Unable to install diagnostic signal handlers.",
     "logged_error", "unknown", "warning", "The DCGM diagnostic did not run: GPU health was not checked."),
    (DIAG, '"Error: Diagnostic can only be performed on a homogeneous group of GPUs."',
     "Error: Diagnostic can only be performed on a homogeneous group of GPUs.",
     "logged_error", "unknown", "warning", "The DCGM diagnostic did not run (mixed GPU models in the group)."),
    (DIAG, '"Error: Diagnostic could not be run because the Tesla recommended driver is not being used."',
     "Error: Diagnostic could not be run because the Tesla recommended driver is not being used.",
     "logged_driver_error", "driver", "warning", "The DCGM diagnostic refuses the installed NVIDIA driver."),
    (DIAG, '"Error: Diagnostic could not be run while DCGM is paused."',
     "Error: Diagnostic could not be run while DCGM is paused.",
     "logged_error", "unknown", "warning", "The DCGM diagnostic did not run (DCGM is paused)."),
    (DIAG, '"Error: Unable to complete diagnostic for group "',
     "Error: Unable to complete diagnostic for group %u. Return: (%d) : %s",
     "logged_error", "unknown", "warning", "The DCGM diagnostic did not complete: its return code says why."),
    (DIAG, '"Error: Unable to complete diagnostic for entities "',
     "Error: Unable to complete diagnostic for entities %s. Return: (%d) : %s",
     "logged_error", "unknown", "warning", "The DCGM diagnostic did not complete: its return code says why."),
    (DIAG, '"Error: Unable to complete diagnostic. "', "Error: Unable to complete diagnostic. Return: (%d) : %s",
     "logged_error", "unknown", "warning", "The DCGM diagnostic did not complete: its return code says why."),
    (DIAG, '"Error: Unable to start an embedded host engine. "',
     "Error: Unable to start an embedded host engine. %s.",
     "logged_error", "unknown", "warning", "dcgmi could not start DCGM: GPU health was not checked."),
    # the diagnostic's plugins are built per CUDA major (plugins/cudaNN/): a DCGM whose package lacks the
    # driver's CUDA cannot run its tests (the DCGM / driver versions do not match)
    (FRAMEWORK, '"Error: Cannot load plugins. Unable to change to the plugin dir',
     "Error: Cannot load plugins. Unable to change to the plugin dir '%s': '%s'",
     "logged_driver_error", "driver", "warning",
     "The DCGM diagnostic has no plugins for this driver's CUDA version (the DCGM package does not match the "
     "driver): GPU health was not checked."),
    (FRAMEWORK, '"Error: Cannot load plugins: unable to open the plugin dir',
     "Error: Cannot load plugins: unable to open the plugin dir '%s': '%s'",
     "logged_driver_error", "driver", "warning",
     "The DCGM diagnostic could not open its plugins for this driver's CUDA version: GPU health was not checked."),
    (DIAG, '"Successfully ran diagnostic for group."', "Successfully ran diagnostic for group.",
     "benign", "healthy", "ok", "The DCGM diagnostic ran; its table follows (a test's result is in it)."),
    (DIAG, '"Passed all "', "Passed all %u runs of the diagnostic",
     "benign", "healthy", "ok", "Every iteration of the DCGM diagnostic passed."),
    (DIAG, '"Aborting the iterative runs of the diagnostic due to failure: "',
     "Aborting the iterative runs of the diagnostic due to failure: %s",
     "logged_error", "unknown", "warning", "An iteration of the DCGM diagnostic failed; its results say why."),
    # the diag table (DIAG_DATA stencil "| <name> | <info> |"): a test's per-GPU result
    # (fmt "{}{}: {}" of entity group, id, result) and its warnings ("Warning: GPU<n>" with the
    # message cut in 45-character pieces)
    (DIAG, '"{}{}: {}"', "|%s| GPU%u: Fail", "logged_error", "unknown", "warning",
     "A DCGM diagnostic test failed on this GPU: the Warning lines under it give the reason."),
    (DIAG, '"{}{}: {}"', "|%s| GPU%u: Warn", "logged_error", "unknown", "warning",
     "A DCGM diagnostic test warned on this GPU: the Warning lines under it give the reason."),
    (DIAG, '"{}{}: {}"', "|%s| GPU%u: Pass", "benign", "healthy", "ok", "The DCGM diagnostic test passed on this GPU."),
    (DIAG, '"{}{}: {}"', "|%s| GPU%u: Skip", "benign", "healthy", "ok", "The DCGM diagnostic test was skipped on "
                                                                          "this GPU."),
    (DIAG, 'fmt::format("{}: {}{}",', "Warning: GPU%u", "logged_error", "unknown", "warning",
     "A DCGM diagnostic warning for this GPU (the message beside it, cut at 45 characters, says what)."),
)
# dcgmi health --check's tree: "| Overall Health | <health> |", and per GPU
# "|       -> <system> | <health> |" (Health::HelperSystemToString, HelperHealthToString)
HEALTH_STATUS = {"Healthy": ("benign", "ok"), "Warning": ("logged_error", "warning"),
                 "Failure": ("logged_error", "critical")}
SYSTEM_CATEGORY = {
    "DCGM_HEALTH_WATCH_PCIE": "gpu_hardware", "DCGM_HEALTH_WATCH_NVLINK": "gpu_hardware",
    "DCGM_HEALTH_WATCH_PMU": "gpu_hardware", "DCGM_HEALTH_WATCH_MCU": "gpu_hardware",
    "DCGM_HEALTH_WATCH_MEM": "gpu_hardware", "DCGM_HEALTH_WATCH_SM": "gpu_hardware",
    "DCGM_HEALTH_WATCH_INFOROM": "gpu_hardware", "DCGM_HEALTH_WATCH_THERMAL": "gpu_hardware",
    "DCGM_HEALTH_WATCH_POWER": "gpu_hardware", "DCGM_HEALTH_WATCH_DRIVER": "driver",
    "DCGM_HEALTH_WATCH_CONNECTX": "ib_network",
}

MARKERS_BASE = ('"warning" : "', '"error_id" : ', "GPU", "DCGM", "Dcgm", "[[SysMon]]", "NvSwitch", "NvLink", "NVLink",
                "NVVS", "NVML",
                "Cannot load plugins",
                "CUDA", "Fabric Manager", "IMEX", "Overall Health", "Health Monitor Report", "health watches",
                "Health watches", "Health monitor", "diagnostic", "Diagnostic", "host engine")

# ---- parsing --------------------------------------------------------------------------------
_TOKENS = re.compile(r'"(?:[^"\\\n]|\\.)*"|/\*.*?\*/|//[^\n]*|.', re.S)


def strip_comments(text):
    return "".join(t if not (t.startswith("/*") or t.startswith("//")) else " " for t in _TOKENS.findall(text))


def defines(text):
    """{NAME: (expression, line)} of every #define (continuations joined, comments dropped)."""
    lines = text.split("\n")
    out, i = {}, 0
    while i < len(lines):
        m = re.match(r"#define\s+([A-Za-z_]\w*)\s*(.*)$", lines[i])
        if not m:
            i += 1
            continue
        start, body = i, m.group(2)
        while body.endswith("\\") and i + 1 < len(lines):
            i += 1
            body = body[:-1] + " " + lines[i].strip()
        out[m.group(1)] = (strip_comments(body).strip(), start + 1)
        i += 1
    return out


def resolve_strings(defs):
    """{NAME: text} of every define whose expression is string literals and string macros."""
    done = {}
    while True:
        added = False
        for name, (expr, _line) in defs.items():
            if name in done or not expr:
                continue
            val = common.join_literals(expr, macros=done)
            if val is None:
                continue
            # the whole expression must have been read (a macro not resolved yet stops it)
            rest = re.sub(r'"(?:[^"\\\n]|\\.)*"', "", expr)
            if any(tok not in done and tok not in common.PRI_MACROS for tok in re.findall(r"[A-Za-z_]\w*", rest)):
                continue
            done[name] = val
            added = True
        if not added:
            return done


def parse_codes(text):
    """[(number, name, description, line)] of enum dcgmError_enum (aliases skipped)."""
    lines = text.split("\n")
    start = next(i for i, ln in enumerate(lines) if ln.startswith("typedef enum dcgmError_enum"))
    out, pending = [], None
    for j in range(start + 1, len(lines)):
        ln = lines[j]
        if ln.strip().startswith("}"):
            break
        m = re.match(r"\s*(DCGM_FR_[A-Z0-9_]+)\s*(=\s*(\w+))?\s*,?\s*(?://!<\s*(.*))?$", ln)
        if m and m.group(2):
            pending = None
            if m.group(3).isdigit():
                out.append((int(m.group(3)), m.group(1), m.group(4) or "", j + 1))
            continue
        if m:
            pending = (m.group(1), j + 1)
            continue
        m = re.match(r"\s*=\s*(\w+)\s*,?\s*(?://!<\s*(.*))?$", ln)
        if m and pending:
            if m.group(1).isdigit():
                out.append((int(m.group(1)), pending[0], m.group(2) or "", pending[1]))
            pending = None
    return out


def parse_table(text):
    """{code name: (severity, category, line)} of dcgmErrorMeta's DCGM_ERROR_TABLE_ENTRY rows."""
    out = {}
    for j, ln in enumerate(text.split("\n")):
        m = re.match(r"\s*DCGM_ERROR_TABLE_ENTRY\((DCGM_FR_\w+),\s*(DCGM_ERROR_\w+),\s*(DCGM_FR_EC_\w+)\)", ln)
        if m:
            out[m.group(1)] = (m.group(2), m.group(3), j + 1)
    return out


# vocab.compile_format closes a gap at a literal of blanks only, then drops that literal: in
# "%s %u" the gap keeps only the %u and "abc 7" fails its shape. Until it keeps both, two
# conversions split by blanks only are written as one %s (one DCGM message: DCGM_FR_TEMP_VIOLATION)
_BLANK_SPLIT = re.compile(r"%[-+ #0']*\d*(?:\.\d+)?(?:hh|h|ll|l|z|j|t)?[diouxXeEfFgGsp] +(?=%[-+ #0']*\d*(?:\.\d+)?"
                          r"(?:hh|h|ll|l|z|j|t)?[diouxX])%[-+ #0']*\d*(?:\.\d+)?(?:hh|h|ll|l|z|j|t)?[diouxX]")


# dcgmReturn_t's strings (dcgm_errors.c errorString): what dcgmi, dcgm-exporter, go-dcgm and the GPU operator
# print after their own words ('Error getting device busid: API version mismatch'). Each DCGM_ST_* by what it
# says of the node: (kind, category, severity, meaning); one this map does not name -> logged_error/unknown/
# info (a call of DCGM's own failed: its monitoring or a diagnostic's set-up, not a reading of the GPUs). Strings under RETURN_MIN_LITERAL characters ('Timeout', 'NVML error', 'No permission') are left out,
# and those the map does not name unless they name DCGM's own things (_DCGM_WORDS): another program's line would
# hold them as well.
RETURN_MIN_LITERAL = 20
RETURN_CLASS = {
    "DCGM_ST_RESET_REQUIRED": ("logged_gpu_error", "gpu_hardware", "critical",
                               "DCGM: the GPU must be reset (or the node rebooted) before it works again."),
    "DCGM_ST_GPU_IS_LOST": ("logged_gpu_error", "gpu_hardware", "critical",
                            "DCGM: the GPU fell off the bus (NVML can no longer reach it)."),
    "DCGM_ST_NVVS_ISOLATE_ERROR": ("logged_gpu_error", "gpu_hardware", "critical",
                                   "DCGM's diagnostic found a fault that needs the GPU drained."),
    "DCGM_ST_DIAG_THRESHOLD_EXCEEDED": ("logged_gpu_error", "gpu_hardware", "warning",
                                        "a GPU field DCGM's diagnostic watches crossed its error threshold."),
    "DCGM_ST_VER_MISMATCH": ("logged_driver_error", "driver", "warning",
                             "the DCGM library and its caller (dcgm-exporter, dcgmi, nv-hostengine) are different "
                             "versions: the node's GPU monitoring stack is mismatched."),
    "DCGM_ST_CONNECTION_NOT_VALID": ("logged_driver_error", "driver", "warning",
                                     "the DCGM host engine (nv-hostengine) is not running or not reachable."),
    "DCGM_ST_INIT_ERROR": ("logged_driver_error", "driver", "warning",
                           "DCGM could not initialise (its library, NVML or the driver)."),
    "DCGM_ST_LIBRARY_NOT_FOUND": ("logged_driver_error", "driver", "warning",
                                  "a library DCGM needs (its own, NVML) is not installed or not found."),
    "DCGM_ST_NVML_NOT_LOADED": ("logged_driver_error", "driver", "warning",
                                "NVML (the driver's library) is not on this system or did not load."),
    "DCGM_ST_NVML_DRIVER_TIMEOUT": ("logged_driver_error", "driver", "critical",
                                    "an NVML call timed out in the driver: the driver or a GPU stopped answering."),
    "DCGM_ST_INSUFFICIENT_DRIVER_VERSION": ("logged_driver_error", "driver", "warning",
                                            "the installed NVIDIA driver is older than this DCGM needs."),
    "DCGM_ST_REQUIRES_ROOT": ("logged_driver_error", "driver", "warning",
                              "nv-hostengine runs without root, so DCGM cannot do what was asked."),
    "DCGM_ST_NVVS_BINARY_NOT_FOUND": ("logged_driver_error", "driver", "warning",
                                      "DCGM's diagnostic (nvvs) is not installed where DCGM looks for it."),
    # no fault of the node: a feature or GPU DCGM does not support, a busy or already running diagnostic
    "DCGM_ST_NOT_SUPPORTED": ("logged_error", "unknown", "info", "DCGM does not support this on this GPU."),
    "DCGM_ST_GPU_NOT_SUPPORTED": ("logged_error", "unknown", "info", "DCGM does not support this GPU."),
    "DCGM_ST_PROFILING_NOT_SUPPORTED": ("logged_error", "unknown", "info",
                                        "DCGM's profiling metrics are not supported on this GPU."),
    "DCGM_ST_PROFILING_MULTI_PASS": ("logged_error", "unknown", "info",
                                     "the profiling metrics asked for need several passes: a configuration limit."),
    "DCGM_ST_MODULE_NOT_LOADED": ("logged_error", "unknown", "info", "a DCGM module this request needs is not loaded."),
    "DCGM_ST_DIAG_ALREADY_RUNNING": ("logged_error", "unknown", "info", "another DCGM diagnostic was running."),
    "DCGM_ST_IN_USE": ("logged_error", "unknown", "info", "the resource (a GPU) was in use by another process."),
    "DCGM_ST_GPU_IN_SYNC_BOOST_GROUP": ("logged_error", "unknown", "info", "a DCGM configuration state."),
    "DCGM_ST_GPU_NOT_IN_SYNC_BOOST_GROUP": ("logged_error", "unknown", "info", "a DCGM configuration state."),
    "DCGM_ST_GROUP_IS_EMPTY": ("logged_error", "unknown", "info", "a DCGM group with no GPU: the caller's request."),
}
_DCGM_WORDS = re.compile(r"DCGM|GPU|NVML|[Hh]ost ?engine|[Dd]iag|NVVS|[Pp]rofiling")
_RETURN_RE = re.compile(r"case (DCGM_ST_\w+):(?:\s*//[^\n]*)?\s*return ((?:\"(?:[^\"\\\n]|\\.)*\"\s*)+);")


def return_rows(text):
    """The rows of dcgmReturn_t's strings (errorString in dcgm_errors.c), and the markers they need."""
    body = text[text.index("errorString(dcgmReturn_t result)"):]
    rows, markers = [], []
    for m in _RETURN_RE.finditer(body):
        name, msg = m.group(1), common.c_unescape("".join(re.findall(r'"((?:[^"\\\n]|\\.)*)"', m.group(2))))
        if len(msg) < RETURN_MIN_LITERAL or name == "DCGM_ST_OK":
            continue
        if name not in RETURN_CLASS and not _DCGM_WORDS.search(msg):
            continue  # 'A file operation failed', 'Bad parameter passed to function': any program's words
        kind, category, severity, meaning = RETURN_CLASS.get(name, (
            "logged_error", "unknown", "info", "a DCGM call failed (%s): DCGM's own work (monitoring, profiling, "
            "a diagnostic's set-up), not a reading of the GPUs; the words before it say which." % name))
        line = text.count("\n", 0, text.index(body) + m.start()) + 1
        rows.append((TABLE, line, msg.replace("%", "%%"), kind, category, severity, meaning))
        markers.append(msg[:40])
    if len(rows) < 20:
        raise SystemExit("errorString's strings not found in %s" % TABLE)
    return rows, markers


def matcher_safe(fmt):
    return _BLANK_SPLIT.sub("%s", fmt)


def line_of(text, literal, path):
    for j, ln in enumerate(text.split("\n")):
        if literal in ln:
            return j + 1
    raise SystemExit("%r is not in %s: update DCGMI_ROWS" % (literal, path))


def sentence(s):
    s = s.strip()
    return s if not s or s.endswith(".") else s + "."


def classify(name, dcgm_sev, dcgm_cat):
    kind, category, severity = OVERRIDE.get(name, (None, None, None))
    if dcgm_cat not in CATEGORY or dcgm_sev not in SEVERITY:
        raise SystemExit("%s: DCGM category/severity %s/%s not mapped" % (name, dcgm_cat, dcgm_sev))
    category = category or CATEGORY[dcgm_cat]
    severity = severity or SEVERITY[dcgm_sev]
    if kind == "benign":
        return kind, "healthy", "ok"
    kind = kind or BY_CATEGORY[category]
    if kind not in KINDS or category not in KINDS[kind]["categories"]:
        raise SystemExit("%s: kind %s has no category %s" % (name, kind, category))
    return kind, category, severity


def merge(cls_list):
    """One classification for a message several codes print alike: the common one, else the
    generic kind of a common category (warning where the severities differ), else unknown."""
    if len(set(cls_list)) == 1:
        return cls_list[0]
    cats = set(c[1] for c in cls_list)
    sevs = set(c[2] for c in cls_list)
    if len(cats) == 1 and "healthy" not in cats:
        cat = cats.pop()
        return BY_CATEGORY[cat], cat, sevs.pop() if len(sevs) == 1 else "warning"
    return "logged_error", "unknown", "warning"


def module_names(structs):
    """{number: name} of dcgmModuleId_t (dcgm_structs.h), 'DcgmModuleIdSysmon = 9, //!< System Monitoring Module'."""
    out = dict((int(n), "%s (%s)" % (name, what.strip())) for name, n, what in re.findall(
        r"DcgmModuleId(\w+)\s*=\s*(\d+),\s*//!<\s*([^\n]*)", structs))
    if 9 not in out or 1 not in out:
        raise SystemExit("dcgmModuleId_t not read from %s" % STRUCTS)
    return out


def engine_rows(src, commit):
    """nv-hostengine's log lines of a module that did not load, or of one whose hardware is absent:
    DCGM's own features, not the GPUs' state (info: said, never a fault of the node)."""
    names = module_names(common.show(src, commit, STRUCTS))
    listed = ", ".join("%d %s" % kv for kv in sorted(names.items()) if kv[0])
    not_loaded = ("nv-hostengine could not load one of its modules (the number: %s). That DCGM feature is "
                  "unavailable; the host engine goes on. A module for hardware this node lacks (Sysmon without "
                  "an NVIDIA Grace CPU, NvSwitch without NVSwitches) refuses to start: expected there. The GPUs are "
                  "not its subject." % listed)
    out = []
    for path, literal, fmt, meaning in (
            (ENGINE, 'log_error("Failed to load module {}", moduleId)', "Failed to load module %s", not_loaded),
            (MODULE, '"A runtime exception occured when creating module. Ex: "',
             "A runtime exception occured when creating module. Ex: %s", not_loaded),
            (MODULE, '"An unknown exception occured when creating module"',
             "An unknown exception occured when creating module", not_loaded),
            (NSCQ, 'log_error("Not attached to NvSwitches. Aborting")', "Not attached to NvSwitches. Aborting",
             "DCGM's NvSwitch module is not attached to any NVSwitch through NSCQ (libnvidia-nscq): none on this "
             "node, or NSCQ missing; it cannot watch switches. On an NVSwitch node (HGX), check libnvidia-nscq "
             "and Fabric Manager; elsewhere it is expected."),
            (SYSMON, 'log_error("Couldn\'t open {} file \'{}\' for reading: \'{}\'"',
             "Couldn't open %s file '%s' for reading: '%s'",
             "DCGM's system monitor (Sysmon: the power, temperature and vendor of NVIDIA Grace CPUs) could not "
             "read a CPU file: without a Grace CPU it does not start. Nothing of the GPUs.")):
        text = common.show(src, commit, path)
        out.append((path, line_of(text, literal, path), fmt, "logged_error", "unknown", "info", meaning))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", required=True, help="NVIDIA/DCGM: a bare mirror or a clone")
    ap.add_argument("--rev", default=PIN, help="tag, branch or commit (default %s)" % PIN)
    args = ap.parse_args(argv)
    commit = common.resolve(args.src, args.rev)
    subject = common.git(args.src, "log", "-1", "--format=%s", commit).strip()
    m = re.match(r"DCGM (\d[\w.]*)", subject)
    at = commit[:12] if commit.startswith(args.rev.lower()) else "%s = %s" % (args.rev, commit[:12])
    version = "%s (%s)" % (m.group(1), at) if m else at
    header = common.show(args.src, commit, HEADER)
    table = parse_table(common.show(args.src, commit, TABLE))
    diag = common.show(args.src, commit, DIAG)
    health = common.show(args.src, commit, HEALTH)
    defs = defines(header)
    strings = resolve_strings(defs)

    codes, msg_rows = [], {}
    for number, name, desc, line in parse_codes(header):
        if name == "DCGM_FR_ERROR_SENTINEL":
            continue
        if name not in table:
            raise SystemExit("%s has no DCGM_ERROR_TABLE_ENTRY in %s" % (name, TABLE))
        if name + "_MSG" not in strings or name + "_NEXT" not in strings:
            raise SystemExit("%s: _MSG or _NEXT not resolved" % name)
        msg, nxt = strings[name + "_MSG"], strings[name + "_NEXT"]
        dcgm_sev, dcgm_cat, tline = table[name]
        kind, category, severity = classify(name, dcgm_sev, dcgm_cat)
        desc = re.sub(r"^\d+\s+", "", desc).replace(" - NOT USED: DEPRECATED", " (deprecated)")
        if kind == "benign":
            meaning = BENIGN_WHY[name]
        else:
            meaning = " ".join(s for s in (sentence(desc), "DCGM: " + sentence(nxt) if nxt and nxt != "N/A" else "")
                               if s)
        codes.append((number, name, msg, kind, category, severity, meaning, TABLE, tline))
        if msg:
            msg_rows.setdefault(msg, []).append((name, defs[name + "_MSG"][1], (kind, category, severity),
                                                 nxt if nxt != "N/A" else "", meaning))

    rows = []
    for msg, users in msg_rows.items():
        cls = merge([u[2] for u in users])
        if len(users) == 1:
            name, line, _c, nxt, meaning = users[0]
        else:
            line = min(u[1] for u in users)
            meaning = "One of %s: the field named in the message tells which." % ", ".join(u[0] for u in users)
        rows.append((HEADER, line, matcher_safe(msg), cls[0], cls[1], cls[2], meaning))

    framework = common.show(args.src, commit, FRAMEWORK)
    for path, literal, fmt, kind, category, severity, meaning in DCGMI_ROWS:
        text = {DIAG: diag, HEALTH: health, FRAMEWORK: framework}[path]
        rows.append((path, line_of(text, literal, path), fmt, kind, category, severity, meaning))
    rows.extend(engine_rows(args.src, commit))
    ret_rows, ret_markers = return_rows(common.show(args.src, commit, TABLE))
    rows.extend(ret_rows)
    # dcgmi health --check's tree
    labels = re.findall(r"case (DCGM_HEALTH_WATCH_\w+):\s*return \"([^\"]+)\";",
                        health[health.index("Health::HelperSystemToString"):])
    if not labels:
        raise SystemExit("no system labels in %s" % HEALTH)
    for status, (kind, severity) in sorted(HEALTH_STATUS.items()):
        if '"%s"' % status not in health:
            raise SystemExit("health %s not in %s" % (status, HEALTH))
        cat = "healthy" if kind == "benign" else "unknown"
        rows.append((HEALTH, line_of(health, "out[OVERALL_HEALTH_TAG]", HEALTH), "| Overall Health%%s| %s" % status,
                     kind, cat, severity,
                     "dcgmi health: every watched system is healthy." if kind == "benign" else
                     "dcgmi health: the overall health; the system lines below it say which GPU and what."))
    markers = list(MARKERS_BASE) + ret_markers
    for watch, label in labels:
        if watch not in SYSTEM_CATEGORY:
            raise SystemExit("health system %s has no category: add it to SYSTEM_CATEGORY" % watch)
        cat = SYSTEM_CATEGORY[watch]
        for status in ("Warning", "Failure"):
            kind, severity = HEALTH_STATUS[status]
            rows.append((HEALTH, line_of(health, 'return "%s";' % label, HEALTH), "-> %s%%s| %s" % (label, status),
                         BY_CATEGORY[cat], cat, severity, "dcgmi health: the %s watch of this GPU reports %s." % (
                             label, "a warning" if status == "Warning" else "a failure")))
        markers.append("-> %s" % label)

    # every matchable row, printed, holds a marker (vocab/__init__.py's contract)
    for r in rows:
        row = dict(zip(vocab.ROW_FIELDS, r))
        if vocab.matchable(row["format"]):
            tmpl = next(t for p, t in TEMPLATES if row["file"].startswith(p))
            line = tmpl.replace("{message}", vocab.instantiate(row["format"]))
            if not any(m in line for m in markers):
                raise SystemExit("no marker in %r" % line)

    doc = """\
Read: dcgmlib/dcgm_errors.h (enum dcgmError_enum: number, name, comment; every DCGM_FR_*_MSG
and _NEXT with their string macros resolved), dcgmlib/src/dcgm_errors.c (DCGM_ERROR_TABLE_ENTRY:
DCGM's severity and category per code), dcgmi/Diag.cpp and dcgmi/Health.cpp (text output), nvvs/include/TestFramework.inl (the diagnostic's plugin loading).
CODES: every code but the sentinel; CODE_FORMATS: its number as `dcgmi diag -j` prints it
('"error_id" : N,'); meaning: the code's comment and DCGM's _NEXT. ROWS: every non-empty _MSG
format once (printed as `dcgmi diag -j` does, '"warning" : "<message>"'; codes that share one
format, e.g. "Detected %ld %s for GPU %u", get one row classified by what they share), dcgmi's
own lines: its errors and success lines, the diag table's per-GPU "GPU<n>: Fail/Warn/Pass/Skip"
and "Warning: GPU<n>", and the health tree's "Overall Health" and "-> <system> | <health>".
DCGM_ST_* return codes' strings (errorString in dcgm_errors.c: what dcgmi, dcgm-exporter and
go-dcgm print after their own words), those of 20 characters or more (a shorter one, 'Timeout',
is any program's), each by what it says of the node (the generator's RETURN_CLASS).
Left out: the EUD/pause/binary-permission/retest codes' messages ("See message inplace": written
in plugin code, their codes are kept), nv-hostengine's
own log lines but those of a module that did not load (DcgmHostEngineHandler.cpp LoadModule,
DcgmModule.h) or that found none of its hardware (NSCQ not attached to NVSwitches, Sysmon's CPU
files): info, naming dcgm_structs.h's module numbers. dcgmi diag's text table cuts messages into
45-character pieces and the health tree into 54: a long message matches whole only in JSON output
or a log.
Classification: DCGM's category -> ours (HARDWARE_* and PERF_* -> gpu_hardware; SOFTWARE_LIBRARY
and SOFTWARE_CUDA -> driver; SOFTWARE_CONFIG, _XID, _EUD, _OTHER, INTERNAL -> unknown); DCGM's
severity -> ours (ISOLATE, RESET -> critical; TRIAGE, MONITOR, CONFIG, UNKNOWN -> warning); a
dedicated kind where the code is exactly one (volatile DBE -> ecc_uncorrectable_volatile, page
retirement, row remap, NVLink, NVSwitch SXid, thermal, fallen off the bus, GPU recovery actions,
Fabric Manager, nouveau); overrides in the generator, each with its reason (skipped tests ->
benign; ECC disabled, graphics processes, power cap, DCGM's NCCL test error -> unknown; Xid
94/95, EUD test failed -> gpu_hardware; corrected SBEs, power capping -> info).
"""
    meta = {"EMITTER": "DCGM", "PROJECT": "NVIDIA DCGM", "VERSION": version, "COMMIT": commit,
            "LICENCE": "Apache-2.0", "ORIGIN": "https://github.com/NVIDIA/DCGM", "GENERATOR": GENERATOR}
    path = common.write_table("dcgm", meta, markers, TEMPLATES, rows, codes=codes, code_formats=CODE_FORMATS,
                              doc=doc)
    print("%s: %d codes, %d rows" % (path, len(codes), len(rows)))


if __name__ == "__main__":
    main()
