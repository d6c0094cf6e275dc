#!/usr/bin/env python3
"""Generate module_utils/gpu_runbook/vocab/xid.py: NVIDIA's complete Xid catalog (every Xid
code 1-172 with its mnemonic, description and NVIDIA's "resolution buckets"), as the CODES of a
table, each printed as the driver prints an Xid line.

The catalog is NVIDIA's document "Analyzing Xid Errors with the Xid Catalog"
(https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html, its sheet "Catalog");
the copy read here is its machine-readable mirror in leptonai/gpud (Apache-2.0),
``components/accelerator/nvidia/xid/catalog_generated.go`` ("Generated at 2025-10-29T00:35:32Z"
from NVIDIA's spreadsheet), at a pinned gpud commit.

Usage (from the repository root)::

    # the source: a clone or bare mirror of https://github.com/leptonai/gpud
    git clone --bare https://github.com/leptonai/gpud.git /tmp/gpud.git
    .venv/bin/python tests/tools/vocab/gen_xid.py --src /tmp/gpud.git [--rev v0.13.0-alpha.4]

Run it before tests/tools/vocab/gen_nvrm.py (the NVRM table files each Xid message body under
its Xid, through the engine's catalog xid_catalog.py, which reads this table), then
tests/tools/vocab/write_index.py. Deterministic: the same pin gives the same module byte for
byte.

Each code's ``meaning`` starts with NVIDIA's two buckets, "NVIDIA: immediate <bucket>;
investigate <bucket>." ("-" where the catalog gives none), then the description: the engine's
catalog (xid_catalog.py) reads the buckets back from it for the codes it has no hand-made entry
for. Category and severity are ours, by the rules below (CLASSIFY), with per-code overrides
(OVERRIDE), each with its reason; the overrides include the hand-made triage of xid_catalog.py's
``_ROWS``, so that the table and the engine say the same of every code
(tests/unit/test_xid_catalog.py checks it).
"""

import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(HERE))), "module_utils"))

from common import git, resolve, show, write_table  # noqa: E402

PIN = "v0.13.0-alpha.4"
GENERATOR = "tests/tools/vocab/gen_xid.py"
CATALOG = "components/accelerator/nvidia/xid/catalog_generated.go"
DOC_URL = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
LICENCE = ("content: NVIDIA's Xid catalog (NVIDIA documentation, quoted as data); the copy read is in "
           "leptonai/gpud, Apache-2.0 (its LICENSE)")

# how the driver prints an Xid (open-gpu-kernel-modules src/nvidia/src/kernel/gpu/rc/kernel_rc.c
# krcReportXid: "NVRM: Xid (PCI:%04x:%02x:%02x): %d, pid=%s, name=%s, %s%s" or, with no process,
# "NVRM: Xid (PCI:..): %d, %s%s"): the %s before the text stands for "pid=.., name=.., " or nothing,
# so a code's line is matched with or without a process. The text is NVIDIA's description, which
# the driver rarely prints as such: the rows are there for the number (the engine's Xid reader
# reads it; the NVRM table holds what the driver really prints after it).
CODE_FORMATS = ("NVRM: Xid (PCI:%s): {number}, %s{text}",)
TEMPLATES = (("", "[ 1234.567890] {message}"),)
MARKERS = ("NVRM",)

CRIT, WARN, INFO = "critical", "warning", "info"
UNUSED = "Unused"

# ---- classification -------------------------------------------------------------------------
# (category, severity) by NVIDIA's immediate bucket; a few buckets need the description or the
# investigatory bucket to tell whose fault it is (classify() below), and OVERRIDE has the rest.
#   RESTART_APP: the job's channel failed and NVIDIA says re-run the job: the application, unless
#     a copy engine (the driver's data movers: hand triage of 39-41) or the investigatory bucket
#     says the software (INVESTIGATE_SW: the driver) is to be looked at;
#   RESET_GPU: the GPU must be reset: its hardware, unless the investigatory bucket points at the
#     software (INVESTIGATE_SW*: GSP firmware, security faults, the NVLink software);
#   RESTART_BM (reboot the bare-metal node): the GPU is lost on the bus: hardware;
#   RESTART_VM: the driver state of a confidential-computing VM: the driver;
#   CONTACT_SUPPORT: NVIDIA wants to see it: hardware; but a code NVIDIA marks "Unused" says
#     nothing of a cause: unknown, warning;
#   IGNORE: info; its category by what it is about (memory/ECC/InfoROM/links -> gpu_hardware,
#     firmware/driver/channels -> driver, else unknown); an SMBPBI test message is benign;
#   workflow buckets (WORKFLOW_XID_48, WORKFLOW_NVLINK_ERR, ...): by what they are about;
#   no bucket (162-172, newer than the catalog's buckets): by the description (DESCRIBED).
BUCKET = {
    "RESTART_APP": ("application", WARN),
    "RESET_GPU": ("gpu_hardware", CRIT),
    "RESTART_BM": ("gpu_hardware", CRIT),
    "RESTART_VM": ("driver", CRIT),
    "CONTACT_SUPPORT": ("gpu_hardware", CRIT),
    "IGNORE": (None, INFO),
    "WORKFLOW_XID_48": ("gpu_hardware", CRIT),          # uncorrectable ECC: NVIDIA's workflow resets / remaps
    "WORKFLOW_NVLINK_ERR": ("gpu_hardware", CRIT),      # NVLink error: the link
    "WORKFLOW_NVLINK5_ERR": ("gpu_hardware", WARN),     # NVLink5: fatal or not per the decode table
    "WORKFLOW_XID_45": ("application", INFO),           # the teardown of a channel after another error
    "XID_154": ("gpu_hardware", CRIT),                  # the driver names the recovery the GPU needs
    "CHECK_MECHANICALS": ("gpu_hardware", WARN),        # power cabling
    "CHECK_UVM": ("driver", WARN),                      # unified memory state: the driver
    "UPDATE_SWFW": ("driver", CRIT),                    # vGPU could not start: driver/firmware update
}
# IGNORE codes: category by words of the mnemonic/description (first match)
IGNORE_WORDS = (
    (("ECC", "INFOROM", "DRAM", "MEMORY", "C2C", "NVLINK", "RESOURCE_RETIREMENT"), "gpu_hardware"),
    (("FECS", "DRIVER", "FIRMWARE", "CTXSW", "FAST_PATH", "CHANNEL_RETIREMENT"), "driver"),
)
# codes without a bucket: (words of the mnemonic, category, severity)
DESCRIBED = (
    ("PSHC_REENGAGED", "gpu_hardware", INFO),       # power smoothing back in service
    ("PSHC_DISENGAGED", "gpu_hardware", WARN),      # power smoothing out of service
    ("PSHC_LOW_LIFETIME", "gpu_hardware", WARN),    # the circuitry wears out: plan a replacement
    ("PSHC_ZERO_LIFETIME", "gpu_hardware", WARN),   # worn out: power smoothing is gone, the GPU still runs
    ("NVLINK_SECURE_CRYPTO_ERR", "driver", WARN),   # encrypted traffic before the link was set up for it
    ("NVLINK_SECURE_OTHER", "unknown", WARN),       # "Interrupt seen in CC mode": says no cause
    ("PCIE_FATAL_TIMEOUT", "gpu_hardware", CRIT),
    ("REDUCED_GPU_MEMORY_CAPACITY", "gpu_hardware", CRIT),  # memory errors took capacity away
    ("SEC2_HALT_ERROR", "gpu_hardware", CRIT),      # same description as Xid 62 (RESET_GPU)
    ("UNCORRECTABLE_DRAM_ERROR", "gpu_hardware", CRIT),
    ("UNCORRECTABLE_SRAM_ERROR", "gpu_hardware", CRIT),
)
# per code: (category, severity, reason); the hand-made entries of xid_catalog.py's _ROWS where
# the rules above say otherwise, and the codes the rules cannot tell
OVERRIDE = {
    43: ("application", WARN, "xid_catalog _ROWS: IGNORE for the GPU, but the job that owned the channel died"),
    46: ("driver", CRIT, "xid_catalog _ROWS: 'GPU stopped processing' (a channel timeout the driver reports)"),
    61: ("gpu_hardware", CRIT, "xid_catalog _ROWS: 'Unused' on Ampere+, a micro-controller fault on older GPUs"),
    63: ("gpu_hardware", WARN, "xid_catalog _ROWS: a row remap pending until the GPU is reset"),
    92: ("gpu_hardware", WARN, "xid_catalog _ROWS: a high single-bit ECC rate is worth a warning"),
    94: ("gpu_hardware", WARN, "xid_catalog _ROWS: RESTART_APP means re-run: the fault is in GPU memory"),
    109: ("driver", CRIT, "xid_catalog _ROWS: a context-switch timeout: the driver/firmware (the job's if "
                          "it follows its Xid 13/31)"),
    121: ("gpu_hardware", WARN, "xid_catalog _ROWS: a C2C link error is worth a warning"),
    137: ("gpu_hardware", WARN, "xid_catalog _ROWS: NVLink privilege error, comes with Xid 145 on NVLink5"),
    142: ("application", WARN, "CONTACT_SUPPORT for the newest video encoder engine; its siblings' exceptions "
                               "(NVDEC/NVJPG/OFA) are RESTART_APP: the job's channel on that engine failed"),
    156: ("gpu_hardware", WARN, "xid_catalog _ROWS: a retirement event, applied at the next GPU reset"),
    157: ("gpu_hardware", CRIT, "xid_catalog _ROWS: a retirement that failed: the GPU's fate (CONTACT_SUPPORT)"),
    161: ("driver", WARN, "xid_catalog _ROWS: a channel retirement that failed is worth a warning"),
}
# codes that report no fault: (reason, kept as the row's meaning)
BENIGN = {
    106: "an SMBPBI test message (an out-of-band test through the BMC): no fault",
    107: "a silent SMBPBI test message (an out-of-band test through the BMC): no fault",
}

_ENTRY = re.compile(r'^\s*\{Code: (?P<code>\d+), Mnemonic: (?P<mn>"(?:[^"\\]|\\.)*"), '
                    r'Description: (?P<desc>"(?:[^"\\]|\\.)*"), ImmediateResolution: (?P<imm>"(?:[^"\\]|\\.)*"), '
                    r'InvestigatoryResolution: (?P<inv>"(?:[^"\\]|\\.)*")\},\s*$')
_GO_ESC = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}


def go_string(lit):
    body = lit[1:-1]
    return re.sub(r"\\(.)", lambda m: _GO_ESC.get(m.group(1), m.group(1)), body)


def one_line(text, sep=" "):
    """A catalog cell on one line: its line breaks (a cell with two entries) joined by ``sep``."""
    return sep.join(p.strip() for p in text.split("\n") if p.strip())


def parse_catalog(text):
    """-> (generated-at, source URL, [(code, mnemonic, description, immediate, investigatory, line)])."""
    head = re.search(r"Generated at (\S+?)\. Source: (\S+)", text)
    if not head:
        raise SystemExit("%s: no 'Generated at ... Source: ...' header" % CATALOG)
    out = []
    in_entries = False
    for i, ln in enumerate(text.split("\n"), 1):
        if ln.startswith("var catalogEntries"):
            in_entries = True
            continue
        if in_entries and ln.startswith("}"):
            break
        if not in_entries or not ln.strip():
            continue
        m = _ENTRY.match(ln)
        if not m:
            raise SystemExit("%s:%d: not a catalog entry: %r" % (CATALOG, i, ln[:120]))
        out.append((int(m.group("code")), one_line(go_string(m.group("mn"))), one_line(go_string(m.group("desc"))),
                    one_line(go_string(m.group("imm")), "; "), one_line(go_string(m.group("inv")), "; "), i))
    return head.group(1), head.group(2), out


def _words(mnemonic, desc):
    return (mnemonic + " " + desc).upper()


def classify(code, mnemonic, desc, imm, inv):
    """-> (kind, category, severity, reason) of one catalog code."""
    if code in BENIGN:
        return "benign", "healthy", "ok", BENIGN[code]
    if code in OVERRIDE:
        cat, sev, why = OVERRIDE[code]
        return "xid", cat, sev, why
    words = _words(mnemonic, desc)
    if desc == UNUSED:
        # NVIDIA lists it as unused (the driver at 595.45.04 still prints a few: 16, 108): whatever
        # the bucket, the code names no cause that hardware could be blamed for
        return "xid", "unknown", INFO if imm == "IGNORE" else WARN, "unused code"
    if not imm:
        for key, cat, sev in DESCRIBED:
            if key in mnemonic:
                return "xid", cat, sev, "no bucket: by the description"
        raise SystemExit("Xid %d (%s) has no bucket and no DESCRIBED rule" % (code, mnemonic))
    if imm not in BUCKET:
        raise SystemExit("Xid %d: bucket %r is not mapped (BUCKET)" % (code, imm))
    cat, sev = BUCKET[imm]
    if imm == "RESTART_APP":
        if re.search(r"\bCE\d+\b|COPY ENGINE", words):
            cat = "driver"
        elif inv.startswith("INVESTIGATE_SW"):
            cat = "driver"
    elif imm == "RESET_GPU" and inv.startswith("INVESTIGATE_SW"):
        cat = "driver"
    elif imm == "IGNORE":
        cat = next((c for keys, c in IGNORE_WORDS if any(k in words for k in keys)), "unknown")
    return "xid", cat, sev, "bucket %s" % imm


def meaning(kind, desc, imm, inv, why, unknown=False):
    """"NVIDIA: immediate <bucket>; investigate <bucket>. <description>." (xid_catalog.py reads the
    buckets back), and why a benign code is benign."""
    head = "NVIDIA: immediate %s; investigate %s." % (imm or "-", inv or "-")
    text = desc.rstrip(".")
    if desc == UNUSED:
        text += ": NVIDIA's catalog lists this code as unused" + (" (it names no fault)" if unknown else "")
    if kind == "benign":
        text += ": " + why
    return "%s %s." % (head, text)


DOC = """\
Read: every entry of NVIDIA's Xid catalog (sheet "Catalog": %(n)d codes, %(first)d-%(last)d), as
gpud's catalog_generated.go mirrors it (generated %(generated)s from %(url)s). A code is
printed as the driver prints an Xid line, "NVRM: Xid (PCI:<bus>): <code>, [pid=.., name=.., ]
<text>" (CODE_FORMATS; the text here is NVIDIA's description, the NVRM table holds what the
driver really prints); the engine's Xid reader takes the number. Each meaning starts with
NVIDIA's buckets verbatim ("NVIDIA: immediate <bucket>; investigate <bucket>."; "-" for none).
Left out: the catalog's "XID 144-150 Decode" sheet (nvlinkRules: the NVLink5 intrinfo /
errorstatus decode; the engine reads Fatal/Nonfatal from the line itself), and the Xids the
driver defines beyond the catalog (173-176 in nverror.h at 595.45.04). The catalog has no
Xid 154 recovery-action list (NVML's nvmlDeviceGpuRecoveryAction_t; the engine keeps its own,
xid_catalog.rung_for_xid154).
Classification (kind "xid"; category and severity ours, from NVIDIA's immediate bucket):
RESTART_APP -> application (a copy engine, or an investigatory INVESTIGATE_SW -> driver);
RESET_GPU -> gpu_hardware critical (INVESTIGATE_SW* -> driver); RESTART_BM -> gpu_hardware
critical; RESTART_VM -> driver critical; CONTACT_SUPPORT -> gpu_hardware critical; IGNORE ->
info, category by what it is about; a code the catalog marks "Unused" -> unknown (it names
no cause); no bucket (162-172) -> by the description; overrides (%(nover)d,
each with its reason in the generator) carry xid_catalog.py's hand-made triage; the SMBPBI
test messages (106, 107) are benign.
"""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", required=True, help="leptonai/gpud: a bare mirror or a clone")
    ap.add_argument("--rev", default=PIN, help="tag, branch or commit (default %s)" % PIN)
    args = ap.parse_args(argv)
    commit = resolve(args.src, args.rev)
    tags = [t for t in git(args.src, "tag", "--points-at", commit).split() if t]
    version = tags[0] if tags else commit[:12]
    generated, url, entries = parse_catalog(show(args.src, commit, CATALOG))
    if url != DOC_URL:
        raise SystemExit("the catalog's source is %s, not %s: check ORIGIN" % (url, DOC_URL))
    codes = []
    seen = set()
    for code, mnemonic, desc, imm, inv, line in entries:
        if code in seen:
            raise SystemExit("Xid %d listed twice" % code)
        seen.add(code)
        if "%" in desc or "{" in desc:
            raise SystemExit("Xid %d: the description holds %% or {: CODE_FORMATS would misread it" % code)
        kind, cat, sev, why = classify(code, mnemonic, desc, imm, inv)
        text = meaning(kind, desc, imm, inv, why, cat == "unknown")
        codes.append((code, mnemonic, desc, kind, cat, sev, text, CATALOG, line))
    if sorted(seen) != list(range(1, max(seen) + 1)):
        raise SystemExit("the catalog skips codes: %s" % sorted(set(range(1, max(seen) + 1)) - seen))
    unused = [c for c in codes if c[2] == UNUSED]
    meta = {"EMITTER": "NVRM Xid", "PROJECT": "NVIDIA Xid catalog (mirrored by leptonai/gpud)",
            "VERSION": "catalog generated %s; gpud %s" % (generated, version), "COMMIT": commit,
            "LICENCE": LICENCE,
            "ORIGIN": "NVIDIA, \"Analyzing Xid Errors with the Xid Catalog\", %s (sheet \"Catalog\"); the copy read: "
                      "https://github.com/leptonai/gpud %s at %s" % (DOC_URL, CATALOG, commit),
            "GENERATOR": GENERATOR}
    doc = DOC % {"n": len(codes), "first": min(seen), "last": max(seen), "generated": generated, "url": url,
                 "nover": len(OVERRIDE)}
    path = write_table("xid", meta, MARKERS, TEMPLATES, (), codes=codes, code_formats=CODE_FORMATS, doc=doc)
    print("%s: %d codes (%d unused, %d benign)" % (path, len(codes), len(unused),
                                                   sum(1 for c in codes if c[3] == "benign")))


if __name__ == "__main__":
    main()
