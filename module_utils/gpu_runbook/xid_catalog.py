# SPDX-License-Identifier: Apache-2.0
"""NVIDIA Xid catalog as data: what each Xid means, who is likely at fault, what to do.

Sources (read 2026-12-02):
  * NVIDIA, "Analyzing Xid Errors with the Xid Catalog",
    https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html -- columns
    Code / Mnemonic / Description / "Resolution Bucket (Immediate Action)" /
    "Resolution Bucket (Investigatory Action)".
  * Its machine-readable mirror in leptonai/gpud (Apache-2.0):
    components/accelerator/nvidia/xid/catalog_generated.go at commit
    73e270e3e0fd490ec5c33e144ad894de7d6c4d21 ("Generated at 2025-10-29T00:35:32Z",
    sheet "Catalog"), from which ``nvidia_action`` / ``investigate`` below are copied.
  * NVIDIA A100/H100 GPU Memory Error Management
    (https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/) for 48/63/64/94/95/171/172.

``nvidia_action`` is NVIDIA's immediate-action bucket verbatim; ``rung`` is this
runbook's remedy for it (RESTART_APP -> fix_application when the Xid points at the
job's own code, else none; RESET_GPU -> gpu_reset; RESTART_BM/RESTART_VM -> reboot;
CONTACT_SUPPORT -> rma; IGNORE -> none).  Where we deviate from the bucket, ``why``
says so.  category/severity are our triage judgement, not NVIDIA's.

``_ROWS`` is our hand-made triage of the Xids that matter on GPU clusters. Every other code of
NVIDIA's catalog gets an entry derived from the generated table vocab/xid.py (NVIDIA's catalog
as gpud mirrors it, tests/tools/vocab/gen_xid.py): its mnemonic, description (``name``),
NVIDIA's buckets verbatim (read from the row's meaning), the table's category and severity, and
steps by the bucket (``_derived``): RESTART_APP -> re-run the job, and check its code
(fix_application) when the table files the code under the application, else none;
RESET_GPU -> drain and reset; RESTART_BM/RESTART_VM -> drain and reboot; IGNORE -> no action
(plus what the investigatory bucket asks if it recurs); CONTACT_SUPPORT -> drain, reboot and
rma_if_recurs (an RMA needs the fault to recur, never the bucket alone), but for a code the
catalog marks "Unused" the steps of an unknown Xid plus contact support (``why`` says so);
no bucket (162-170) -> ``_NO_BUCKET``, with its reason.

What to do is ``steps``: step ids of the taxonomy (taxonomy/rungs.py, and the ``xid_`` steps
of taxonomy/kinds_kernel.py), so the advice reads the same in every language; the costliest
rung among them is the entry's ``rung`` (checked at import). ``note`` is guidance no step says
(a tool to use, a table to decode with), kept verbatim in every language; ``action`` is the
English sentence both make, for readers of the catalog.
"""

import re

from .taxonomy import RUNG_STEPS, action_text, rung_of_steps
from .vocab import xid as _catalog_table  # static: Ansible ships only what is imported so

# Shared step tuples of the common buckets.
_APP_CUDA = ("restart_job", "xid_check_app_cuda")
_IGNORE_SUPPORT = ("no_action", "contact_support_if_recurs")
_RESTART_SUPPORT = ("restart_job", "contact_support_if_recurs")   # RESTART_APP on a driver Xid
_RESET_SUPPORT = ("drain_node", "reset_gpu", "contact_support_if_recurs")
_RESET_RMA = ("drain_node", "reset_gpu", "rma_if_recurs")
_RESET_GSP = ("drain_node", "reset_gpu", "xid_reboot_if_reset_fails", "check_driver")

# code: (mnemonic, name, category, nvidia_action, investigate, rung, severity, steps, note, why)
_ROWS = {
    8: ("ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT", "GPU stopped processing (idle timeout)",
        "application", "RESTART_APP", "CONTACT_SUPPORT", "fix_application", "warning",
        ("restart_job", "xid_check_app_cuda", "xid_support_if_follows_gpu"), None, ""),
    11: ("ROBUST_CHANNEL_GR_ERROR_MISSING_HW", "Invalid or corrupted push buffer stream",
         "application", "RESTART_APP", "CHECK_APP/CUDA", "fix_application", "warning",
         _APP_CUDA, None, ""),
    13: ("ROBUST_CHANNEL_GR_EXCEPTION", "Graphics Engine Exception (SM warp exception)",
         "application", "RESTART_APP", "WORKFLOW_XID_13", "fix_application", "warning",
         ("xid_debug_app", "xid_dcgm_if_follows_gpu"),
         "Find the faulting kernel with compute-sanitizer (`compute-sanitizer --tool memcheck`).", ""),
    25: ("ROBUST_CHANNEL_GR_ILLEGAL_NOTIFY", "Invalid or illegal push buffer stream",
         "application", "RESTART_APP", "CHECK_APP/CUDA", "fix_application", "warning",
         _APP_CUDA, None, ""),
    31: ("ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT", "GPU memory page fault",
         "application", "RESTART_APP", "WORKFLOW_XID_31", "fix_application", "warning",
         ("xid_debug_app",), None, ""),
    32: ("ROBUST_CHANNEL_PBDMA_ERROR", "Invalid or corrupted push buffer stream",
         "application", "RESTART_APP", "CHECK_APP/CUDA", "fix_application", "warning",
         _APP_CUDA, None, ""),
    38: ("ROBUST_CHANNEL_FECS_ERR_WATCHDOG_TIMEOUT", "Driver firmware error",
         "driver", "IGNORE", "CONTACT_SUPPORT", "none", "info",
         _IGNORE_SUPPORT, None, ""),
    39: ("ROBUST_CHANNEL_CE0_ERROR", "Copy Engine Exception",
         "driver", "RESTART_APP", "CONTACT_SUPPORT", "none", "warning",
         _RESTART_SUPPORT, None, ""),
    40: ("ROBUST_CHANNEL_CE1_ERROR", "Copy Engine Exception",
         "driver", "RESTART_APP", "CONTACT_SUPPORT", "none", "warning",
         _RESTART_SUPPORT, None, ""),
    41: ("ROBUST_CHANNEL_CE2_ERROR", "Copy Engine Exception",
         "driver", "RESTART_APP", "CONTACT_SUPPORT", "none", "warning",
         _RESTART_SUPPORT, None, ""),
    43: ("ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", "GPU stopped processing (channel reset)",
         "application", "IGNORE", "CONTACT_SUPPORT", "fix_application", "warning",
         ("check_follow_up", "fix_application"),
         None,
         "NVIDIA bucket is IGNORE for the GPU; the job that owned the channel still died, so the remedy is on"
         " the application side."),
    44: ("ROBUST_CHANNEL_GR_FAULT_DURING_CTXSW", "Graphics Engine fault during context switch",
         "driver", "IGNORE", "CONTACT_SUPPORT", "none", "info",
         _IGNORE_SUPPORT, None, ""),
    45: ("ROBUST_CHANNEL_PREEMPTIVE_REMOVAL", "Preemptive cleanup, due to previous errors",
         "application", "WORKFLOW_XID_45", "Solo: RESTART_FM; Not Solo: IGNORE (follow other Xid)", "none", "info",
         ("check_follow_up", "xid_teardown_alone_is_normal"), None, ""),
    46: ("ROBUST_CHANNEL_GPU_TIMEOUT_ERROR", "GPU stopped processing",
         "driver", "RESET_GPU", "CONTACT_SUPPORT", "gpu_reset", "critical",
         _RESET_SUPPORT, None, ""),
    48: ("ROBUST_CHANNEL_GPU_ECC_DBE", "Double Bit ECC Error (uncorrectable)",
         "gpu_hardware", "WORKFLOW_XID_48", "WORKFLOW_XID_48", "gpu_reset", "critical",
         _RESET_RMA,
         None,
         "WORKFLOW_XID_48: on Ampere+ a reset applies the pending row remap."),
    54: ("SILENT_RUNNING_PWR_REDUCED_CLOCKING", "Auxiliary power is not connected to the GPU board",
         "gpu_hardware", "CHECK_MECHANICALS", "CONTACT_SUPPORT", "drain", "warning",
         ("drain_node", "check_power_cabling"), None, ""),
    61: ("PMU_BREAKPOINT", "Internal micro-controller breakpoint/warning",
         "gpu_hardware", "CONTACT_SUPPORT", "", "rma", "critical",
         ("drain_node", "replace_hardware"),
         None,
         "Catalog marks 61 unused on Ampere+; older GPUs log it for a micro-controller fault."),
    62: ("PMU_HALT_ERROR", "Internal micro-controller halt",
         "gpu_hardware", "RESET_GPU", "CONTACT_SUPPORT", "gpu_reset", "critical",
         _RESET_SUPPORT, None, ""),
    63: ("INFOROM_DRAM_RETIREMENT_EVENT", "GPU memory row remapping / page retirement event",
         "gpu_hardware", "IGNORE", "IGNORE", "gpu_reset", "warning",
         ("xid_reset_at_next_drain", "xid_rma_if_remap_fails"),
         None,
         "NVIDIA bucket is IGNORE, but the remap only takes effect after a GPU reset ('reset gpu to "
         "activate')."),
    64: ("INFOROM_DRAM_RETIREMENT_FAILURE", "GPU memory row remapping / page retirement failure",
         "gpu_hardware", "RESET_GPU", "CONTACT_SUPPORT", "gpu_reset", "critical",
         _RESET_RMA, None, ""),
    68: ("ROBUST_CHANNEL_NVDEC0_ERROR", "NVDEC0 (video decoder) exception",
         "application", "RESTART_APP", "CONTACT_SUPPORT", "fix_application", "warning",
         ("restart_job", "xid_check_video_input", "contact_support_if_recurs"), None, ""),
    69: ("ROBUST_CHANNEL_GR_CLASS_ERROR", "Graphics Engine class error",
         "application", "RESTART_APP", "CHECK_APP/CUDA", "fix_application", "warning",
         _APP_CUDA, None, ""),
    74: ("NVLINK_ERROR", "NVLink error",
         "gpu_hardware", "WORKFLOW_NVLINK_ERR", "CONTACT_SUPPORT", "gpu_reset", "critical",
         _RESET_RMA, None, ""),
    79: ("ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "GPU has fallen off the bus",
         "gpu_hardware", "RESTART_BM", "CONTACT_SUPPORT", "reboot", "critical",
         ("drain_node", "reboot_node", "rma_if_recurs"), None, ""),
    80: ("PBDMA_PUSHBUFFER_CRC_MISMATCH", "Corrupted data sent to GPU",
         "application", "RESTART_APP", "CHECK_APP/CUDA", "fix_application", "warning",
         _APP_CUDA, None, ""),
    92: ("EXCESSIVE_SBE_INTERRUPTS", "High single-bit ECC error rate",
         "gpu_hardware", "IGNORE", "CONTACT_SUPPORT", "none", "warning",
         ("no_action", "xid_trend_ecc"), None, ""),
    93: ("INFOROM_ERASE_LIMIT_EXCEEDED", "Non-fatal violation of provisioned InfoROM wear limit",
         "gpu_hardware", "IGNORE", "CONTACT_SUPPORT", "none", "info",
         ("no_action", "xid_support_next_window"), None, ""),
    94: ("ROBUST_CHANNEL_CONTAINED_ERROR", "Contained uncorrectable memory (ECC) error",
         "gpu_hardware", "RESTART_APP", "IGNORE (sympathetic)", "none", "warning",
         ("restart_job", "xid_remap_at_next_drain"),
         None,
         "RESTART_APP here means re-run, not fix the code: the fault is in GPU memory."),
    95: ("ROBUST_CHANNEL_UNCONTAINED_ERROR", "Uncontained uncorrectable memory (ECC) error",
         "gpu_hardware", "RESET_GPU", "IGNORE (sympathetic)", "gpu_reset", "critical",
         ("drain_node", "reset_gpu"), None, ""),
    109: ("ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR", "Context Switch Timeout Error",
          "driver", "RESET_GPU", "CONTACT_SUPPORT", "gpu_reset", "critical",
          ("drain_node", "reset_gpu", "xid_fix_app_xid_first"), None, ""),
    110: ("SEC_FAULT_ERROR", "Security Fault Error",
          "driver", "RESET_GPU", "INVESTIGATE_SW", "gpu_reset", "critical",
          ("drain_node", "reset_gpu", "check_driver"), None, ""),
    119: ("GSP_RPC_TIMEOUT", "GSP RPC Timeout",
          "driver", "RESET_GPU", "INVESTIGATE_SW", "gpu_reset", "critical",
          _RESET_GSP, None, ""),
    120: ("GSP_ERROR", "GSP Error",
          "driver", "RESET_GPU", "INVESTIGATE_SW", "gpu_reset", "critical",
          _RESET_GSP, None, ""),
    121: ("C2C_ERROR", "C2C (chip-to-chip) link error",
          "gpu_hardware", "IGNORE", "CONTACT_SUPPORT", "none", "warning",
          _IGNORE_SUPPORT, None, ""),
    136: ("ALI_TRAINING_FAIL", "NVLink link training failed",
          "gpu_hardware", "RESET_GPU", "INVESTIGATE_LINK_SI", "gpu_reset", "critical",
          ("drain_node", "reset_gpu", "xid_check_nvlink_if_recurs"), None, ""),
    137: ("NVLINK_PRIV_ERR", "NVLink privilege error",
          "gpu_hardware", "IGNORE", "XID_137_FLOW", "none", "warning",
          ("no_action", "xid_follow_nvidia_flow"), None,
          "Category is the NVLink fabric's (component nvlink_fabric): it comes with Xid 145 on B200/B300 links."),
    140: ("UNRECOVERABLE_ECC_ERROR_ESCAPE", "ECC unrecovered error",
          "gpu_hardware", "RESET_GPU", "CONTACT_SUPPORT", "gpu_reset", "critical",
          _RESET_SUPPORT, None, ""),
    141: ("ROBUST_CHANNEL_FAST_PATH_ERROR", "CUDA fast path error",
          "driver", "IGNORE", "CONTACT_SUPPORT", "none", "info",
          ("no_action",), None, ""),
    143: ("GPU_INIT_ERROR", "GPU initialization error",
          "gpu_hardware", "RESET_GPU", "CONTACT_SUPPORT", "gpu_reset", "critical",
          _RESET_SUPPORT, None, ""),
    151: ("ROBUST_CHANNEL_KEY_ROTATION_ERROR", "Key rotation error (confidential computing)",
          "driver", "RESTART_VM", "CONTACT_SUPPORT", "reboot", "critical",
          ("drain_node", "reboot_node"), None, ""),
    154: ("GPU_RECOVERY_ACTION_CHANGED", "GPU recovery action changed",
          "gpu_hardware", "XID_154", "N/A Informational only regarding another Xid", "drain", "critical",
          ("drain_node", "xid_apply_recovery_action"),
          None,
          "The rung is taken from the message when it names one (see rung_for_xid154)."),
    155: ("NVLINK_SW_DEFINED_ERROR", "NVLink software-defined error",
          "driver", "RESET_GPU", "INVESTIGATE_SW_USER", "gpu_reset", "critical",
          ("drain_node", "reset_gpu", "check_driver", "xid_check_fabric_manager"), None, ""),
    156: ("RESOURCE_RETIREMENT_EVENT", "Resource retirement event",
          "gpu_hardware", "RESET_GPU", "IGNORE", "gpu_reset", "warning",
          ("xid_reset_at_next_drain",), None, ""),
    157: ("RESOURCE_RETIREMENT_FAILURE", "Resource retirement failure",
          "gpu_hardware", "IGNORE", "CONTACT_SUPPORT", "rma", "critical",
          ("drain_node", "replace_hardware"),
          None,
          "Immediate bucket is IGNORE; the investigatory CONTACT_SUPPORT is what decides the GPU's fate."),
    158: ("GPU_FATAL_TIMEOUT", "GPU fatal timeout",
          "gpu_hardware", "RESET_GPU", "CONTACT_SUPPORT", "gpu_reset", "critical",
          _RESET_SUPPORT, None, ""),
    159: ("ROBUST_CHANNEL_CHI_NON_DATA_ERROR", "CHI non-data error",
          "driver", "CHECK_UVM", "SYMPATHETIC_REPORT_SOLO", "none", "warning",
          ("xid_check_uvm", "check_follow_up"), None, ""),
    160: ("CHANNEL_RETIREMENT_EVENT", "Channel retirement event",
          "driver", "IGNORE", "INVESTIGATE_SW", "none", "info",
          ("no_action",), None, ""),
    161: ("CHANNEL_RETIREMENT_FAILURE", "Channel retirement failure",
          "driver", "IGNORE", "INVESTIGATE_SW", "none", "warning",
          ("no_action", "xid_check_driver_if_recurs"), None, ""),
    167: ("PCIE_FATAL_TIMEOUT", "PCIe fatal timeout",
          "gpu_hardware", None, None, "reboot", "critical",
          ("drain_node", "reboot_node", "rma_if_recurs"),
          None,
          "No bucket in the catalog snapshot; treated like Xid 79."),
    171: ("UNCORRECTABLE_DRAM_ERROR", "Uncorrectable DRAM error (detail for Xid 48)",
          "gpu_hardware", None, None, "gpu_reset", "critical",
          _RESET_RMA,
          None,
          "No bucket in the catalog snapshot; companion of Xid 48."),
    172: ("UNCORRECTABLE_SRAM_ERROR", "Uncorrectable SRAM error (detail for Xid 48)",
          "gpu_hardware", None, None, "gpu_reset", "critical",
          ("drain_node", "reset_gpu"),
          "RMA the GPU when its SRAM errors reach NVIDIA's RMA threshold (GPU Memory Error Management guide).",
          "No bucket in the catalog snapshot; companion of Xid 48."),
}

# NVLink5 (Blackwell) errors; the bucket depends on the intrinfo/errorstatus decode
# (catalog sheet "XID 144-150 Decode"), from IGNORE to RESET_GPU.
for _code, _unit in ((144, "SAW"), (145, "RLW"), (146, "TLW"), (147, "TREX"),
                     (148, "NVLPW_CTRL"), (149, "NETIR"), (150, "MSE")):
    _ROWS[_code] = (
        "NVLINK_%s_ERROR" % _unit, "NVLink5 %s error" % _unit,
        "gpu_hardware", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR", "gpu_reset", "warning",
        ("xid_reset_if_fatal", "contact_support_if_recurs"),
        "Tell fatal from non-fatal by decoding intrinfo/errorstatus with NVIDIA's Xid 144-150 table.",
        "Rung is the worst case of the decode table; severity stays warning because most decodes are non-fatal.")

_FIELDS = ("mnemonic", "name", "category", "nvidia_action", "investigate", "rung",
           "severity", "steps", "note", "why")


def _entry(code, row):
    e = dict(zip(_FIELDS, row), xid=code)
    if rung_of_steps(e["steps"]) != e["rung"]:  # a typo fails at import, in every test
        raise ValueError("Xid %d: steps %r do not perform rung %r" % (code, e["steps"], e["rung"]))
    e["action"] = action_text(e["steps"]) + (" " + e["note"] if e["note"] else "")
    return e


# ---- every other code of NVIDIA's catalog, derived from vocab/xid.py (module docstring) -------
_BUCKETS_RE = re.compile(r"^NVIDIA: immediate (?P<imm>[^;]{1,80}); investigate (?P<inv>[^.]{1,80})\.(?: |$)")
_VIDEO = ("NVDEC", "NVJPG", "NVENC")
_UNUSED = "Unused"
_UNUSED_STEPS = ("xid_look_up", "xid_drain_if_job_died", "contact_support_if_recurs")
_UNUSED_WHY = ("NVIDIA's catalog lists the code as unused and says CONTACT_SUPPORT: the code names no fault, so "
               "it is read like an unknown Xid, never a reboot or an RMA on its own.")
# codes the catalog gives no bucket (newer than its buckets): (steps, why)
_NO_BUCKET = {
    162: (("no_action",), "power smoothing is back in service."),
    163: (("no_action", "contact_support_if_recurs"), "power smoothing is out of service; the GPU runs on."),
    164: (("xid_support_next_window",), "the power smoothing circuitry wears out: plan its replacement."),
    165: (("xid_support_next_window",), "the power smoothing circuitry is worn out; the GPU runs on without it."),
    166: (("check_driver", "contact_support_if_recurs"),
          "encrypted NVLink traffic came before the link was set up for it: the confidential-computing setup."),
    168: (("drain_node", "reset_gpu", "rma_if_recurs"),
          "memory errors took capacity away: reset the GPU; replace it only if it recurs."),
    169: (_RESET_SUPPORT, "the micro-controller halt of Xid 62 (RESET_GPU), in SEC2."),
    170: (("xid_look_up", "contact_support_if_recurs"), "an interrupt in confidential-computing mode names no fault."),
}


def _follow_up(inv):
    """The step NVIDIA's investigatory bucket adds, for when the Xid recurs (it performs no rung)."""
    if inv == "CONTACT_SUPPORT":
        return ("contact_support_if_recurs",)
    if inv and inv.startswith("INVESTIGATE_SW"):
        return ("xid_check_driver_if_recurs",)
    if inv == "CHECK_APP/CUDA":
        return ("check_job_code",)
    if inv == "XID_137_FLOW":
        return ("xid_follow_nvidia_flow",)
    return ()


def _derived(code, mnemonic, name, category, imm, inv):
    """(steps, why) of a catalog code that has no hand-made row, by NVIDIA's immediate bucket."""
    video = any(v in mnemonic for v in _VIDEO)
    fix = "xid_check_video_input" if video else "xid_check_app_cuda"
    if imm is None:
        steps, why = _NO_BUCKET.get(code, (("xid_look_up", "xid_drain_if_job_died"), "no rule for it here."))
        return steps, "No bucket in the catalog snapshot; " + why
    if imm == "CONTACT_SUPPORT" and name == _UNUSED:
        return _UNUSED_STEPS, _UNUSED_WHY
    if imm == "IGNORE":
        return ("no_action",) + _follow_up(inv), ""
    if imm == "RESTART_APP":
        if category == "application":
            return ("restart_job", fix) + _follow_up(inv), ""
        return ("restart_job",) + (_follow_up(inv) or ("contact_support_if_recurs",)), ""
    if imm == "RESET_GPU":
        return ("drain_node", "reset_gpu") + (_follow_up(inv) or ("contact_support_if_recurs",)), ""
    if imm in ("RESTART_BM", "RESTART_VM"):
        return ("drain_node", "reboot_node", "contact_support_if_recurs"), ""
    if imm == "CONTACT_SUPPORT" and category == "application":
        return ("restart_job", fix, "contact_support_if_recurs"), (
            "CONTACT_SUPPORT on an engine the job drives: re-run it and check its use of the engine; support if it "
            "recurs across jobs (no hardware evidence for an RMA).")
    if imm == "CONTACT_SUPPORT":
        return ("drain_node", "reboot_node", "rma_if_recurs"), (
            "CONTACT_SUPPORT: a first occurrence is rebooted; an RMA needs the fault to recur, not the bucket alone.")
    if imm == "UPDATE_SWFW":
        return ("drain_node", "check_driver"), (
            "UPDATE_SWFW: keep the node drained until the driver/vGPU software is updated.")
    return ("xid_look_up", "xid_drain_if_job_died"), "Bucket %s has no rule here: read NVIDIA's catalog." % imm


def _catalog_rows():
    """_ROWS, and a row derived from vocab/xid.py for every other code of NVIDIA's catalog."""
    rows = dict(_ROWS)
    for code in _catalog_table.CODES:
        number, mnemonic, name, kind, category, severity, meaning = code[:7]
        if number in rows:
            continue
        m = _BUCKETS_RE.match(meaning)
        if m is None:  # the generator's layout changed: fail at import, in every test
            raise ValueError("Xid %d: no 'NVIDIA: immediate ..; investigate ..' in %r" % (number, meaning))
        imm, inv = [None if b == "-" else b for b in (m.group("imm"), m.group("inv"))]
        if kind == "benign":  # a test message: nothing to fix, a note in the report
            category, severity = "unknown", "info"
        steps, why = _derived(number, mnemonic, name, category, imm, inv)
        rows[number] = (mnemonic, name, category, imm, inv, rung_of_steps(steps), severity, steps, None, why)
    return rows


XID_CATALOG = {code: _entry(code, row) for code, row in sorted(_catalog_rows().items())}

UNKNOWN_XID = _entry(None, (None, "unknown Xid, not in catalog", "unknown", None, None, "none", "warning",
                            ("xid_look_up", "xid_drain_if_job_died"), None, ""))


def lookup(code):
    """Catalog entry (a copy) for an Xid code, or None when the code is unknown or not an int."""
    try:
        c = int(code)
    except (TypeError, ValueError):
        return None
    entry = XID_CATALOG.get(c)
    return dict(entry) if entry else None


def rung_for_xid154(message):
    """The rung Xid 154's message asks for ('... to 0x1 (GPU Reset Required)'), or None."""
    m = (message or "").lower()
    if " to " in m:  # 'changed from X to Y': only the new action counts
        m = m.rsplit(" to ", 1)[1]
    if "imex" in m:  # 0x5 'Recover IMEX Domain': the multi-node NVLink domain, not this GPU alone
        return "drain"
    if "reboot" in m or "bus reset" in m:  # 0x6 bus reset: more than the ladder's FLR, a reboot resets the bus
        return "reboot"
    if "reset" in m or "flr" in m:  # 'GPU Reset Required', 'Drain and Reset', 'PF FLR'
        return "gpu_reset"
    if "drain" in m:  # 'Drain P2P'
        return "drain"
    if "none" in m:
        return "none"
    # the code alone (the name cut off): NVML's nvmlDeviceGpuRecoveryAction_t
    return _RECOVERY_CODES.get(m.strip().split(" ", 1)[0].rstrip(".,"))


# nvmlDeviceGpuRecoveryAction_t (NVIDIA's nvidia-ml-py 13.615.71, pynvml.py): 0 NONE, 1 GPU_RESET,
# 2 NODE_REBOOT, 3 DRAIN_P2P, 4 DRAIN_AND_RESET, 5 RECOVER_IMEX_DOMAIN, 6 BUS_RESET, 7 SYSTEM_REBOOT
_RECOVERY_CODES = {"0x0": "none", "0x1": "gpu_reset", "0x2": "reboot", "0x3": "drain", "0x4": "gpu_reset",
                   "0x5": "drain", "0x6": "reboot", "0x7": "reboot"}


# The Xids of the NVLink fabric (links, NVSwitch path): a finding carries "component":
# "nvlink_fabric" so the fix goes to the fabric (links, NVSwitch tray, Fabric Manager), not
# the GPU board alone. 155 (NVLINK_SW_DEFINED_ERROR) is the driver's.
NVLINK_XIDS = frozenset((74, 136, 137, 144, 145, 146, 147, 148, 149, 150))
_NVLINK5 = frozenset(range(144, 151))
_NVLINK5_NONFATAL = ("no_action", "contact_support_if_recurs")


def component_of(code):
    """'nvlink_fabric' for an NVLink Xid, else None."""
    return "nvlink_fabric" if code in NVLINK_XIDS else None


def nvlink5_fatal(message):
    """Xid 144-150 name their fatality ('RLW_RXPIPE Nonfatal XC0 i0 Link 11'): True, False or None."""
    m = (message or "").lower().replace("-", "")
    if " nonfatal" in " " + m:
        return False
    if " fatal" in " " + m:
        return True
    return None


def severity_of(entry, message=""):
    """The severity of one Xid finding: the entry's, or what an NVLink5 Xid says of itself."""
    if entry.get("xid") in _NVLINK5:
        fatal = nvlink5_fatal(message)
        if fatal is not None:
            return "critical" if fatal else "warning"
    return entry["severity"]


def remedy(entry, message=""):
    """(rung, steps, note) of one Xid finding: the entry's, except for Xid 154, whose message
    names the recovery action (then that rung's standard steps, RUNG_STEPS), and Xid 144-150,
    whose message says Fatal (reset the GPU) or Nonfatal (nothing now)."""
    if entry.get("xid") == 154:
        rung = rung_for_xid154(message)
        if rung is not None:
            return rung, RUNG_STEPS[rung], None
    if entry.get("xid") in _NVLINK5:
        fatal = nvlink5_fatal(message)
        if fatal is False:
            return "none", _NVLINK5_NONFATAL, entry.get("note")
        if fatal:
            return "gpu_reset", ("drain_node", "reset_gpu", "contact_support_if_recurs"), entry.get("note")
    return entry["rung"], entry["steps"], entry.get("note")


def number_finding(code, said, **where):
    """The Xid finding of a tool that reports only an Xid's number, no driver message to refine it
    (DCGM's XIDER field, a node condition's '{"31":true}'): the catalog's reading of the code, or
    the unknown Xid's. ``said``: where the number was read, after 'Xid N (name) '."""
    from .findings import finding
    entry = lookup(code)
    if entry is None:
        u = UNKNOWN_XID
        return finding("xid", "unknown Xid %d, not in catalog, %s" % (code, said), severity=u["severity"],
                       category=u["category"], rung=u["rung"], steps=u["steps"], **where)
    rung, steps, note = remedy(entry, "")
    f = finding("xid", "Xid %d (%s) %s" % (code, entry["name"], said), severity=severity_of(entry, ""),
                category=entry["category"], rung=rung, steps=steps, note=note, **where)
    if component_of(code):
        f["component"] = component_of(code)
    return f
