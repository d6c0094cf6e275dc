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
"""

# code: (mnemonic, name, category, nvidia_action, investigate, rung, severity, action, why)
_ROWS = {
    8: ("ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT", "GPU stopped processing (idle timeout)",
        "application", "RESTART_APP", "CONTACT_SUPPORT", "fix_application", "warning",
        "Restart the job; if it recurs on the same GPU with other jobs, contact NVIDIA support.", ""),
    11: ("ROBUST_CHANNEL_GR_ERROR_MISSING_HW", "Invalid or corrupted push buffer stream",
         "application", "RESTART_APP", "CHECK_APP/CUDA", "fix_application", "warning",
         "Restart the job and check the application / CUDA version.", ""),
    13: ("ROBUST_CHANNEL_GR_EXCEPTION", "Graphics Engine Exception (SM warp exception)",
         "application", "RESTART_APP", "WORKFLOW_XID_13", "fix_application", "warning",
         "Debug the application (illegal address / instruction in a kernel, e.g. with "
         "compute-sanitizer); run DCGM diag only if it follows this GPU across jobs.", ""),
    25: ("ROBUST_CHANNEL_GR_ILLEGAL_NOTIFY", "Invalid or illegal push buffer stream",
         "application", "RESTART_APP", "CHECK_APP/CUDA", "fix_application", "warning",
         "Restart the job and check the application / CUDA version.", ""),
    31: ("ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT", "GPU memory page fault",
         "application", "RESTART_APP", "WORKFLOW_XID_31", "fix_application", "warning",
         "Debug the application: an illegal GPU memory access (MMU fault) killed its context.", ""),
    32: ("ROBUST_CHANNEL_PBDMA_ERROR", "Invalid or corrupted push buffer stream",
         "application", "RESTART_APP", "CHECK_APP/CUDA", "fix_application", "warning",
         "Restart the job and check the application / CUDA version.", ""),
    38: ("ROBUST_CHANNEL_FECS_ERR_WATCHDOG_TIMEOUT", "Driver firmware error",
         "driver", "IGNORE", "CONTACT_SUPPORT", "none", "info",
         "No immediate action; contact NVIDIA support if it repeats.", ""),
    39: ("ROBUST_CHANNEL_CE0_ERROR", "Copy Engine Exception",
         "driver", "RESTART_APP", "CONTACT_SUPPORT", "none", "warning",
         "Restart the job; contact NVIDIA support if copy-engine errors repeat.", ""),
    40: ("ROBUST_CHANNEL_CE1_ERROR", "Copy Engine Exception",
         "driver", "RESTART_APP", "CONTACT_SUPPORT", "none", "warning",
         "Restart the job; contact NVIDIA support if copy-engine errors repeat.", ""),
    41: ("ROBUST_CHANNEL_CE2_ERROR", "Copy Engine Exception",
         "driver", "RESTART_APP", "CONTACT_SUPPORT", "none", "warning",
         "Restart the job; contact NVIDIA support if copy-engine errors repeat.", ""),
    43: ("ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", "GPU stopped processing (channel reset)",
         "application", "IGNORE", "CONTACT_SUPPORT", "fix_application", "warning",
         "The job's GPU context was torn down after its own fault; fix the application, "
         "the GPU itself needs no action.",
         "NVIDIA bucket is IGNORE for the GPU; the job that owned the channel still died, "
         "so the remedy is on the application side."),
    44: ("ROBUST_CHANNEL_GR_FAULT_DURING_CTXSW", "Graphics Engine fault during context switch",
         "driver", "IGNORE", "CONTACT_SUPPORT", "none", "info",
         "No immediate action; contact NVIDIA support if it repeats.", ""),
    45: ("ROBUST_CHANNEL_PREEMPTIVE_REMOVAL", "Preemptive cleanup, due to previous errors",
         "application", "WORKFLOW_XID_45", "Solo: RESTART_FM; Not Solo: IGNORE (follow other Xid)",
         "none", "info",
         "Follow the Xid that preceded it; alone it is a normal channel teardown on process exit/kill.", ""),
    46: ("ROBUST_CHANNEL_GPU_TIMEOUT_ERROR", "GPU stopped processing",
         "driver", "RESET_GPU", "CONTACT_SUPPORT", "gpu_reset", "critical",
         "Drain the node and reset the GPU; contact NVIDIA support if it recurs.", ""),
    48: ("ROBUST_CHANNEL_GPU_ECC_DBE", "Double Bit ECC Error (uncorrectable)",
         "gpu_hardware", "WORKFLOW_XID_48", "WORKFLOW_XID_48", "gpu_reset", "critical",
         "Drain and reset the GPU so the row remap is applied; RMA if DBEs recur or the remap fails (Xid 64).",
         "WORKFLOW_XID_48: on Ampere+ a reset applies the pending row remap."),
    54: ("SILENT_RUNNING_PWR_REDUCED_CLOCKING", "Auxiliary power is not connected to the GPU board",
         "gpu_hardware", "CHECK_MECHANICALS", "CONTACT_SUPPORT", "drain", "warning",
         "Drain the node and check the GPU's auxiliary power cabling.", ""),
    61: ("PMU_BREAKPOINT", "Internal micro-controller breakpoint/warning",
         "gpu_hardware", "CONTACT_SUPPORT", "", "rma", "critical",
         "Contact NVIDIA support with an nvidia-bug-report; plan an RMA.",
         "Catalog marks 61 unused on Ampere+; older GPUs log it for a micro-controller fault."),
    62: ("PMU_HALT_ERROR", "Internal micro-controller halt",
         "gpu_hardware", "RESET_GPU", "CONTACT_SUPPORT", "gpu_reset", "critical",
         "Drain the node and reset the GPU; contact NVIDIA support if it recurs.", ""),
    63: ("INFOROM_DRAM_RETIREMENT_EVENT", "GPU memory row remapping / page retirement event",
         "gpu_hardware", "IGNORE", "IGNORE", "gpu_reset", "warning",
         "Reset the GPU (or reboot) at the next drain so the pending row remap is activated; "
         "RMA if Xid 64 follows.",
         "NVIDIA bucket is IGNORE, but the remap only takes effect after a GPU reset "
         "('reset gpu to activate')."),
    64: ("INFOROM_DRAM_RETIREMENT_FAILURE", "GPU memory row remapping / page retirement failure",
         "gpu_hardware", "RESET_GPU", "CONTACT_SUPPORT", "gpu_reset", "critical",
         "Drain and reset the GPU; the memory can no longer protect itself, so RMA if it recurs.", ""),
    68: ("ROBUST_CHANNEL_NVDEC0_ERROR", "NVDEC0 (video decoder) exception",
         "application", "RESTART_APP", "CONTACT_SUPPORT", "fix_application", "warning",
         "Restart the job and check its video input; contact NVIDIA support if it repeats.", ""),
    69: ("ROBUST_CHANNEL_GR_CLASS_ERROR", "Graphics Engine class error",
         "application", "RESTART_APP", "CHECK_APP/CUDA", "fix_application", "warning",
         "Restart the job and check the application / CUDA version.", ""),
    74: ("NVLINK_ERROR", "NVLink error",
         "gpu_hardware", "WORKFLOW_NVLINK_ERR", "CONTACT_SUPPORT", "gpu_reset", "critical",
         "Drain and reset the GPU (NVLink retrain); RMA the GPU/baseboard if the same link errors again.", ""),
    79: ("ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "GPU has fallen off the bus",
         "gpu_hardware", "RESTART_BM", "CONTACT_SUPPORT", "reboot", "critical",
         "Drain and reboot the node; if the GPU drops off again, RMA it.", ""),
    80: ("PBDMA_PUSHBUFFER_CRC_MISMATCH", "Corrupted data sent to GPU",
         "application", "RESTART_APP", "CHECK_APP/CUDA", "fix_application", "warning",
         "Restart the job and check the application / CUDA version.", ""),
    92: ("EXCESSIVE_SBE_INTERRUPTS", "High single-bit ECC error rate",
         "gpu_hardware", "IGNORE", "CONTACT_SUPPORT", "none", "warning",
         "No immediate action; trend correctable ECC counts and contact NVIDIA support if they keep rising.", ""),
    93: ("INFOROM_ERASE_LIMIT_EXCEEDED", "Non-fatal violation of provisioned InfoROM wear limit",
         "gpu_hardware", "IGNORE", "CONTACT_SUPPORT", "none", "info",
         "No immediate action; mention it to NVIDIA support at the next service window.", ""),
    94: ("ROBUST_CHANNEL_CONTAINED_ERROR", "Contained uncorrectable memory (ECC) error",
         "gpu_hardware", "RESTART_APP", "IGNORE (sympathetic)", "none", "warning",
         "Restart the job (only the affected process was killed); reset the GPU at the next drain "
         "to apply the row remap.",
         "RESTART_APP here means re-run, not fix the code: the fault is in GPU memory."),
    95: ("ROBUST_CHANNEL_UNCONTAINED_ERROR", "Uncontained uncorrectable memory (ECC) error",
         "gpu_hardware", "RESET_GPU", "IGNORE (sympathetic)", "gpu_reset", "critical",
         "Drain and reset the GPU; every process on it was affected.", ""),
    109: ("ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR", "Context Switch Timeout Error",
          "driver", "RESET_GPU", "CONTACT_SUPPORT", "gpu_reset", "critical",
          "Reset the GPU; if it follows an Xid 13/31 from the same job, fix that job first.", ""),
    110: ("SEC_FAULT_ERROR", "Security Fault Error",
          "driver", "RESET_GPU", "INVESTIGATE_SW", "gpu_reset", "critical",
          "Drain and reset the GPU; check driver/firmware versions.", ""),
    119: ("GSP_RPC_TIMEOUT", "GSP RPC Timeout",
          "driver", "RESET_GPU", "INVESTIGATE_SW", "gpu_reset", "critical",
          "Drain and reset the GPU (reboot if the reset fails); check the driver/GSP firmware version.", ""),
    120: ("GSP_ERROR", "GSP Error",
          "driver", "RESET_GPU", "INVESTIGATE_SW", "gpu_reset", "critical",
          "Drain and reset the GPU (reboot if the reset fails); check the driver/GSP firmware version.", ""),
    121: ("C2C_ERROR", "C2C (chip-to-chip) link error",
          "gpu_hardware", "IGNORE", "CONTACT_SUPPORT", "none", "warning",
          "No immediate action; contact NVIDIA support if C2C errors repeat.", ""),
    136: ("ALI_TRAINING_FAIL", "NVLink link training failed",
          "gpu_hardware", "RESET_GPU", "INVESTIGATE_LINK_SI", "gpu_reset", "critical",
          "Drain and reset the GPU to retrain NVLink; investigate the link if it fails again.", ""),
    137: ("NVLINK_PRIV_ERR", "NVLink privilege error",
          "unknown", "IGNORE", "XID_137_FLOW", "none", "warning",
          "No immediate action; follow NVIDIA's Xid 137 investigation flow if it repeats.", ""),
    140: ("UNRECOVERABLE_ECC_ERROR_ESCAPE", "ECC unrecovered error",
          "gpu_hardware", "RESET_GPU", "CONTACT_SUPPORT", "gpu_reset", "critical",
          "Drain and reset the GPU; contact NVIDIA support if it recurs.", ""),
    141: ("ROBUST_CHANNEL_FAST_PATH_ERROR", "CUDA fast path error",
          "driver", "IGNORE", "CONTACT_SUPPORT", "none", "info",
          "No immediate action.", ""),
    143: ("GPU_INIT_ERROR", "GPU initialization error",
          "gpu_hardware", "RESET_GPU", "CONTACT_SUPPORT", "gpu_reset", "critical",
          "Drain and reset the GPU; contact NVIDIA support if it does not initialise.", ""),
    151: ("ROBUST_CHANNEL_KEY_ROTATION_ERROR", "Key rotation error (confidential computing)",
          "driver", "RESTART_VM", "CONTACT_SUPPORT", "reboot", "critical",
          "Restart the VM / node.", ""),
    154: ("GPU_RECOVERY_ACTION_CHANGED", "GPU recovery action changed",
          "gpu_hardware", "XID_154", "N/A Informational only regarding another Xid", "drain", "critical",
          "Apply the recovery action named in the message (GPU reset, node reboot or drain P2P).",
          "The rung is taken from the message when it names one (see rung_for_xid154)."),
    155: ("NVLINK_SW_DEFINED_ERROR", "NVLink software-defined error",
          "driver", "RESET_GPU", "INVESTIGATE_SW_USER", "gpu_reset", "critical",
          "Drain and reset the GPU; check the driver and fabric manager versions.", ""),
    156: ("RESOURCE_RETIREMENT_EVENT", "Resource retirement event",
          "gpu_hardware", "RESET_GPU", "IGNORE", "gpu_reset", "warning",
          "Reset the GPU at the next drain so the retirement takes effect.", ""),
    157: ("RESOURCE_RETIREMENT_FAILURE", "Resource retirement failure",
          "gpu_hardware", "IGNORE", "CONTACT_SUPPORT", "rma", "critical",
          "Contact NVIDIA support and plan an RMA: a failing resource could not be retired.",
          "Immediate bucket is IGNORE; the investigatory CONTACT_SUPPORT is what decides the GPU's fate."),
    158: ("GPU_FATAL_TIMEOUT", "GPU fatal timeout",
          "gpu_hardware", "RESET_GPU", "CONTACT_SUPPORT", "gpu_reset", "critical",
          "Drain and reset the GPU; contact NVIDIA support if it recurs.", ""),
    159: ("ROBUST_CHANNEL_CHI_NON_DATA_ERROR", "CHI non-data error",
          "driver", "CHECK_UVM", "SYMPATHETIC_REPORT_SOLO", "none", "warning",
          "Check UVM (unified memory) state; follow any accompanying Xid.", ""),
    160: ("CHANNEL_RETIREMENT_EVENT", "Channel retirement event",
          "driver", "IGNORE", "INVESTIGATE_SW", "none", "info",
          "No immediate action.", ""),
    161: ("CHANNEL_RETIREMENT_FAILURE", "Channel retirement failure",
          "driver", "IGNORE", "INVESTIGATE_SW", "none", "warning",
          "No immediate action; investigate the driver if it repeats.", ""),
    167: ("PCIE_FATAL_TIMEOUT", "PCIe fatal timeout",
          "gpu_hardware", None, None, "reboot", "critical",
          "Drain and reboot the node; RMA if the GPU's PCIe link fails again.",
          "No bucket in the catalog snapshot; treated like Xid 79."),
    171: ("UNCORRECTABLE_DRAM_ERROR", "Uncorrectable DRAM error (detail for Xid 48)",
          "gpu_hardware", None, None, "gpu_reset", "critical",
          "Handle as Xid 48: drain and reset the GPU; RMA if it recurs.",
          "No bucket in the catalog snapshot; companion of Xid 48."),
    172: ("UNCORRECTABLE_SRAM_ERROR", "Uncorrectable SRAM error (detail for Xid 48)",
          "gpu_hardware", None, None, "gpu_reset", "critical",
          "Handle as Xid 48: drain and reset the GPU; RMA when SRAM errors reach NVIDIA's RMA threshold.",
          "No bucket in the catalog snapshot; companion of Xid 48."),
}

# NVLink5 (Blackwell) errors; the bucket depends on the intrinfo/errorstatus decode
# (catalog sheet "XID 144-150 Decode"), from IGNORE to RESET_GPU.
for _code, _unit in ((144, "SAW"), (145, "RLW"), (146, "TLW"), (147, "TREX"),
                     (148, "NVLPW_CTRL"), (149, "NETIR"), (150, "MSE")):
    _ROWS[_code] = (
        "NVLINK_%s_ERROR" % _unit, "NVLink5 %s error" % _unit,
        "gpu_hardware", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR", "gpu_reset", "warning",
        "Decode intrinfo/errorstatus with NVIDIA's Xid 144-150 table; fatal decodes need a GPU reset, "
        "repeats on one link need support.",
        "Rung is the worst case of the decode table; severity stays warning because most decodes are non-fatal.")

_FIELDS = ("mnemonic", "name", "category", "nvidia_action", "investigate", "rung",
           "severity", "action", "why")

XID_CATALOG = {code: dict(zip(_FIELDS, row), xid=code) for code, row in _ROWS.items()}

UNKNOWN_XID = {
    "mnemonic": None, "name": "unknown Xid, not in catalog", "category": "unknown",
    "nvidia_action": None, "investigate": None, "rung": "none", "severity": "warning",
    "action": "Look the code up in NVIDIA's Xid catalog and the driver release notes.", "why": "",
}


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
    if "reboot" in m:
        return "reboot"
    if "reset" in m:
        return "gpu_reset"
    if "drain" in m:
        return "drain"
    if "none" in m:
        return "none"
    return None
