#!/usr/bin/env python3
"""Generate module_utils/gpu_runbook/vocab/nvrm.py: what the NVIDIA driver
(open-gpu-kernel-modules) prints to the kernel log in a release build: its "NVRM: " lines, the
bodies of its Xid lines, the NVSwitch SXid lines and nvidia-peermem's errors, read from the
driver's public source at a pinned release.

Usage (from the repository root)::

    # the source: a clone or bare mirror of https://github.com/NVIDIA/open-gpu-kernel-modules
    git clone --bare https://github.com/NVIDIA/open-gpu-kernel-modules.git /tmp/ogkm.git
    .venv/bin/python tests/tools/vocab/gen_xid.py --src /tmp/gpud.git     # first: the Xid catalog
    .venv/bin/python tests/tools/vocab/gen_nvrm.py --src /tmp/ogkm.git [--rev 595.45.04]
    .venv/bin/python tests/tools/vocab/write_index.py

gen_xid.py comes first: an Xid body is filed under its Xid by the engine's catalog
(xid_catalog.py), which reads vocab/xid.py. ``--dump`` prints the rows and what was dropped, by
reason. Deterministic: the same pin (and the same catalog) gives the same module byte for byte.

What is read (calls whose format is a string literal, after expanding the driver's own
wrapper macros; code under a debug-only #if -- DEBUG, NV_MODS, QA builds, NV_MEM_DEBUG,
NV_PRINTF_STRINGS_ALLOWED -- is skipped):

- ``nv_printf(NV_DBG_ERRORS | NV_DBG_WARNINGS | NV_DBG_INFO, "NVRM: ...")`` in kernel-open/ and
  in the RM's OS layer (src/nvidia/arch/nvalloc/unix/), with its wrappers ``NV_DEV_PRINTF``,
  ``NV_DEV_PRINTF_STATUS`` ("NVRM: GPU <pci>: ..."), ``NV_DMA_DEV_PRINTF``; the debug levels below
  the default (SETUP, USERERRORS, MEMINFO) are left out. (NV_DBG_INFO is not printed either
  unless the driver's debug level is raised; its rows are kept, at most info.)
- ``portDbgPrintf("NVRM...")`` anywhere in src/nvidia (always printed): the GPU identity lines,
  the data lines of a GSP RPC timeout (``NV_ERROR_LOG_DATA``) and the crash reports of the GSP /
  falcon engines (``CRASHCAT_REPORT_LOG_*``).
- the Xid message bodies: ``nvErrorLog_va`` and its wrappers (``NV_ERROR_LOG``,
  ``NV_ERROR_LOG_COND``, ``GPU_LOG_AND_NOTIFY_INFOROM_XID_WITHOUT_INFO``); the driver prints
  them as "NVRM: Xid (PCI:<bus>): <xid>, pid=<pid>, name=<process>, <body>" (krcReportXid,
  kernel_rc.c; "pid=.., name=.., " only when a process is known).
- the SXid lines of the NVSwitch driver: ``NVSWITCH_PRINT_SXID`` and its wrappers
  (``NVSWITCH_REPORT_FATAL`` ...), "nvidia-<name>: SXid (PCI:<bus>): <sxid>, <message>", the
  number from ctrl_dev_nvswitch.h.
- kernel-open/nvidia-peermem's ``peer_err`` (the GPUDirect RDMA peer-memory client).
- the RM's ``NV_PRINTF(level, fmt, ...)``, ``NV_PRINTF_EX`` / ``NV_PRINTF_STRING`` and their
  wrappers (``NV_PRINTF_COND`` ...) in src/nvidia, at the levels a release build prints. They are
  NOT compiled out of the Linux module: nvprintf.h:230-236 defaults NV_PRINTF_STRINGS_ALLOWED
  to DEBUG/QA/MODS only, but src/nvidia/Makefile:136 builds nv-kernel.o with
  ``-DNV_PRINTF_STRINGS_ALLOWED=1`` (and :137 ``-DNV_ASSERT_FAILED_USES_STRINGS=1``), so
  NV_PRINTF_STRING is nvDbg_Printf (nvprintf.h:252-270) and every level from LEVEL_INFO up is
  compiled (nvprintf.h:294-295 NV_PRINTF_LEVEL). What reaches the log is decided at run time:
  nvDbg_PrintMsg (src/kernel/diagnostics/nvlog_printf.c:138-142, 168) prints a level >=
  LEVEL_ERROR only (LEVEL_NOTICE in DEVELOP/DEBUG/QA builds), unless the RmMsg registry key
  (NVreg_RmMsg) forces one: so LEVEL_ERROR, LEVEL_HW_ERROR and LEVEL_FATAL are read, and
  LEVEL_WARNING, LEVEL_NOTICE, LEVEL_INFO and LEVEL_SILENT are left out. The line: NV_PRINTF's
  format is "NVRM" ": " fmt (NV_PRINTF_ADD_PREFIX, nvprintf.h:141); _nvDbgPrepareString
  (nvlog_printf.c:214-217) replaces the leading "NVRM" by RmMsgPrefix (:1130-1165) with the
  default flags NVRM | GPU_INSTANCE | FUNCTION (:939): "NVRM: [GPU<n> ]<__FUNCTION__>: <fmt>".
  A row is "NVRM: %s <function>: <fmt>" (the %s is "GPU<n>" or nothing; the function the C
  definition around the call, ``_IMPL`` and HAL suffixes as written), or "NVRM: %s: <fmt>" when
  no function definition is found around the call; a format passed to NV_PRINTF_EX without
  "NVRM" is printed bare and left out with the lines that have no "NVRM" of their own.
- the NV_ASSERT_OK / NV_CHECK_OK (and NV_ASSERT / NV_CHECK) failure lines: printed by
  nvassert.c's nvAssertFailed, nvAssertOkFailed, nvCheckFailed, nvCheckOkFailed and their
  ``NoLog`` twins (the macros call these), "NVRM: <printer>: Assertion failed: <status text>
  [<NV_ERR name>] (0x%08X) returned from <expr> @ <file>:<line>": one row per printer and
  wording, read from nvassert.c like any NV_PRINTF_STRING call (an NV_CHECK's printer prints
  at the check's level: its row stands for LEVEL_ERROR); plus, per printer of a status, one row
  per status of ASSERT_STATUSES with its text spelled out (nvstatuscodes.h).

Left out: NV_PRINTF below LEVEL_ERROR (above); what the GSP firmware itself prints (not in
this source: it reaches the log as an Xid body or an RPC error string, "%s"); nvidia-uvm's
UVM_ERR_PRINT (only with its debug-prints parameter), nvidia-modeset and nvidia-drm (display);
formats that are not a literal (a variable, a buffer); the lines of a message that carry no
"NVRM" of their own.
"""

import argparse
import bisect
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(HERE))), "module_utils"))

import common  # noqa: E402
from gpu_runbook import vocab  # noqa: E402
from gpu_runbook.taxonomy import KINDS  # noqa: E402
from gpu_runbook.taxonomy.kinds_vocab import BY_CATEGORY  # noqa: E402
from gpu_runbook.xid_catalog import lookup as xid_lookup  # noqa: E402  (reads vocab/xid.py: gen_xid.py first)

PIN = "595.45.04"
# the driver branches most clusters still run (LTS and production branches), read too: a message
# whose line the pinned release no longer prints is kept with its older wording ("path@tag"),
# except the NV_ASSERT / NV_CHECK failure lines (one printer's line per call site and expression:
# thousands per release, and an unmatched one stays an unexplained driver line, never healthy)
OLDER = ("580.126.20", "570.211.01", "550.163.01", "535.288.01")
GENERATOR = "tests/tools/vocab/gen_nvrm.py"
ORIGIN = "https://github.com/NVIDIA/open-gpu-kernel-modules"
LICENCE = "MIT (COPYING; SPDX-License-Identifier: MIT per file)"

# where each kind of call is read
NV_PRINTF_SCOPE = ("kernel-open/nvidia/", "kernel-open/common/", "src/nvidia/arch/nvalloc/unix/")
PORTDBG_SCOPE = ("src/nvidia/",)
NVPRINTF_SCOPE = ("src/nvidia/",)  # every .c there but the firmware images (g_bindata_*) is in srcs.mk
XID_SCOPE = ("src/nvidia/",)
SXID_SCOPE = ("src/common/nvswitch/",)
PEERMEM_SCOPE = ("kernel-open/nvidia-peermem/",)
# the headers that define the macros the formats use
MACRO_SCOPE = ("kernel-open/", "src/nvidia/inc/", "src/nvidia/generated/", "src/nvidia/arch/nvalloc/",
               "src/common/nvswitch/", "src/common/sdk/nvidia/inc/", "src/common/inc/", "src/common/nvlink/")
XID_HEADER = "src/common/sdk/nvidia/inc/nverror.h"
SXID_HEADER = "src/common/nvswitch/interface/ctrl_dev_nvswitch.h"

# the calls a message is printed by, and where their level / number / format are:
# name -> (level arg or None, number arg or None, format arg)
BASE = {
    "nv_printf": (0, None, 1),
    # the RM's debug prints (nvprintf.h): NV_PRINTF adds "NVRM: " (NV_PRINTF_ADD_PREFIX), the other two
    # print their format as it is; NV_PRINTF_STRING is what NV_PRINTF_EX reaches the log by
    "NV_PRINTF": (0, None, 1),
    "NV_PRINTF_EX": (1, None, 2),
    "NV_PRINTF_STRING": (1, None, 2),
    "portDbgPrintf": (None, None, 0),
    "nvErrorLog_va": (None, 1, 2),
    "NVSWITCH_PRINT_SXID": (None, 1, 2),
    "NVSWITCH_PRINT_SXID_NO_BBX": (None, 1, 2),
    "printk": (None, None, 0),
}
BASE_SCOPE = {"nv_printf": NV_PRINTF_SCOPE, "portDbgPrintf": PORTDBG_SCOPE, "nvErrorLog_va": XID_SCOPE,
              "NVSWITCH_PRINT_SXID": SXID_SCOPE, "NVSWITCH_PRINT_SXID_NO_BBX": SXID_SCOPE,
              "printk": PEERMEM_SCOPE, "NV_PRINTF": NVPRINTF_SCOPE, "NV_PRINTF_EX": NVPRINTF_SCOPE,
              "NV_PRINTF_STRING": NVPRINTF_SCOPE}
NV_PRINTF_BASES = ("NV_PRINTF", "NV_PRINTF_EX", "NV_PRINTF_STRING")
# the NV_PRINTF levels a release build prints (nvlog_printf.c nvDbg_PrintMsg: debuglevel_min is
# LEVEL_ERROR unless DEVELOP/DEBUG/QA_BUILD; nvprintf_level.h: ERROR 4, HW_ERROR 5, FATAL 6)
PRINTED_LEVELS = ("LEVEL_ERROR", "LEVEL_HW_ERROR", "LEVEL_FATAL")
# a level the call passes in a variable: the value that prints (nvassert.c: the nvCheck*Failed
# printers take the NV_CHECK's level; their line reaches the log when the check's is LEVEL_ERROR)
LEVEL_VARIABLES = {("src/nvidia/src/libraries/utils/nvassert.c", "level"): "LEVEL_ERROR"}
# the printers of NV_ASSERT_OK / NV_CHECK_OK failures print the status as nvstatusToString does,
# "<text> [<name>]" (nvstatus.c): these statuses get a row of their own per printer (the rest: "%s")
ASSERT_STATUSES = ("NV_ERR_RESET_REQUIRED", "NV_ERR_GPU_IS_LOST", "NV_ERR_ECC_ERROR",
                   # a call the driver refused to its caller (a monitoring agent querying MIG instances, a
                   # profiler asking for counters a configuration lacks): NV_PRINTF_RULES says them as such
                   "NV_ERR_NOT_SUPPORTED", "NV_ERR_OBJECT_NOT_FOUND", "NV_ERR_INSUFFICIENT_PERMISSIONS",
                   "NV_ERR_INVALID_ARGUMENT", "NV_ERR_INVALID_OBJECT_HANDLE", "NV_ERR_INVALID_CLIENT",
                   "NV_ERR_IN_USE", "NV_ERR_STATE_IN_USE")
STATUS_HEADER = "src/common/sdk/nvidia/inc/nvstatuscodes.h"
KEPT_LEVELS = {"NV_DBG_ERRORS": "error", "NV_DBG_WARNINGS": "warning", "NV_DBG_INFO": "info"}
# macros that wrap a print but never print in a release build (or print what is out of scope)
NOT_WRAPPERS = frozenset(("DBG_PRINTF",
                          "portDbgPrintf", "portDbgExPrintfLevel", "NV_PRINT_AT", "NV_PRINT_VMA",
                          "peer_trace", "NV_ASSERT", "NVSWITCH_PRINT", "NVSWITCH_PRINT_LOG",
                          # the Xid line's own frame (kernel_rc.c): the bodies are the rows
                          "XID_PRINT_WITH_ATTR"))
# NvPort's lock and memory tracking (sync_tracking.h, memory_tracking.c): debug instrumentation,
# never "NVRM: " lines
NOT_WRAPPER_PREFIXES = ("portSync", "PORT_MEM_", "PORT_LOCKED_LIST_", "RS_SPINLOCK_")
# object-like macros with two definitions (#if defined(NVRM) ... #else ...): the kernel RM's
MACRO_OVERRIDES = {
    "NV_PRINTF_PREFIX": "NVRM", "NV_PRINTF_PREFIX_SEPARATOR": ": ", "CRASHCAT_LOG_PREFIX": "NVRM: ",
    # the kernel's log-level prefixes (KERN_SOH "3" ...): not printed
    "KERN_ERR": "", "KERN_WARNING": "", "KERN_INFO": "", "KERN_NOTICE": "", "KERN_DEBUG": "", "KERN_CRIT": "",
    "KERN_ALERT": "", "KERN_EMERG": "", "KERN_CONT": "", "KERN_DEFAULT": "",
    # nvtypes.h's printf lengths for 64-bit values: the gcc (kernel) branch
    "NvU64_fmtX": "llX", "NvU64_fmtx": "llx", "NvU64_fmtu": "llu", "NvU64_fmto": "llo", "NvS64_fmtd": "lld",
    "NvS64_fmti": "lli", "NvP64_fmt": "%p", "NvUPtr_fmtX": "llX", "NvUPtr_fmtx": "llx", "NvUPtr_fmtu": "llu",
    "NvUPtr_fmto": "llo", "NvSPtr_fmtd": "lld", "NvSPtr_fmti": "lli",
    # nvassert.c with NV_ASSERT_FAILED_USES_STRINGS=1 (src/nvidia/Makefile), and nvprintf.h's
    # NV_FILE_FMT / NV_FUNCTION_FMT with NV_PRINTF_STRINGS_ALLOWED=1 (same Makefile)
    "NV_ASSERT_FAILED_PRINTF_FMT": "%s @ %s:%d\n", "NV_FILE_FMT": "%s", "NV_FUNCTION_FMT": "%s",
    # the driver's own release in a message ("this kernel module has the version 595.45.04"): any
    # release, so that the row reads the line of another driver version too
    "NV_VERSION_STRING": "%s",
}
# an Xid number the call passes in a variable: the values it takes (read in the source)
XID_VARIABLES = {
    # kern_gpu_error_cont_ga100.c: rcErrorCode is the contained (94) or uncontained (95) error
    "rcErrorCode": ("ROBUST_CHANNEL_CONTAINED_ERROR", "ROBUST_CHANNEL_UNCONTAINED_ERROR"),
    # kernel_gsp_ecc_gb100.c: errorType = ROBUST_CHANNEL_GPU_ECC_DBE
    "errorType": ("ROBUST_CHANNEL_GPU_ECC_DBE",),
    # kernel_gsp.c: errorNum is GSP_RPC_TIMEOUT (Xid 119), or GSP_SLOWNESS (0: NV_ERROR_LOG_COND
    # then prints the plain NVRM line, not an Xid)
    "errorNum": ("GSP_RPC_TIMEOUT",),
}
TEMPLATES = (("", "[ 1234.567890] {message}"),)
MARKERS = ("NVRM", "SXid", "nvidia-peermem")

# ---- reading the source ---------------------------------------------------------------------


def read_files(src, commit, paths):
    """{path: text} of ``paths`` at ``commit`` (one git cat-file for all)."""
    gitdir = os.path.join(src, ".git") if os.path.isdir(os.path.join(src, ".git")) else src
    req = "".join("%s:%s\n" % (commit, p) for p in paths).encode()
    out = subprocess.run(["git", "--git-dir", gitdir, "cat-file", "--batch"], input=req, check=True,
                         capture_output=True).stdout
    texts, pos = {}, 0
    for p in paths:
        nl = out.index(b"\n", pos)
        head = out[pos:nl].split()
        size = int(head[2])
        texts[p] = out[nl + 1:nl + 1 + size].decode("utf-8", "replace")
        pos = nl + 1 + size + 1
    return texts


# ---- C text ---------------------------------------------------------------------------------
_TOK = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|/\*.*?\*/|//[^\n]*', re.S)


def masks(text):
    """(code, bare): comments blanked (newlines kept) in both; in ``bare`` the inside of every
    string and character literal is 'x' too, so that a search in it never lands in a literal."""
    code, bare, pos = [], [], 0
    for m in _TOK.finditer(text):
        code.append(text[pos:m.start()])
        bare.append(text[pos:m.start()])
        t = m.group(0)
        if t.startswith("/"):
            blank = re.sub(r"[^\n]", " ", t)
            code.append(blank)
            bare.append(blank)
        else:
            code.append(t)
            bare.append(t[0] + "x" * (len(t) - 2) + t[-1])
        pos = m.end()
    code.append(text[pos:])
    bare.append(text[pos:])
    return "".join(code), "".join(bare)


def call_args(code, bare, open_at):
    """The arguments of the call whose '(' is at ``open_at``: ([arg text], end) or None."""
    depth, start, args = 0, open_at + 1, []
    for i in range(open_at, len(bare)):
        c = bare[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append(code[start:i].strip())
                return ([] if args == [""] else args), i + 1
        elif c == "," and depth == 1:
            args.append(code[start:i].strip())
            start = i + 1
    return None


def find_calls(code, bare, names):
    """(name, args, offset) of each call to one of ``names`` in the text."""
    if not names:
        return
    pat = re.compile(r"(?<![\w.>])(%s)\s*\(" % "|".join(sorted(map(re.escape, names), key=len, reverse=True)))
    for m in pat.finditer(bare):
        got = call_args(code, bare, m.end() - 1)
        if got is not None:
            yield m.group(1), got[0], m.start()


_DEBUG_COND = re.compile(r"\b(?:DEBUG|DEVELOP|NV_MODS|QA_BUILD|NV_MEM_DEBUG|NV_PRINTF_STRINGS_ALLOWED|"
                         r"RMCFG_FEATURE_PLATFORM_MODS|NVSWITCH_DEBUG)\b")


def _cond_state(d, rest):
    """'debug' (a debug-only branch), 'not_debug' (its #else is debug-only) or 'other'."""
    rest = rest.strip()
    if d == "ifdef":
        return "debug" if _DEBUG_COND.fullmatch(rest) else "other"
    if d == "ifndef":
        return "not_debug" if _DEBUG_COND.fullmatch(rest) else "other"
    if re.fullmatch(r"0", rest):
        return "debug"
    terms = [t.strip() for t in rest.split("||")]
    if all(_DEBUG_COND.search(t) and not t.startswith("!") for t in terms) and "&&" not in rest:
        return "debug"
    if re.fullmatch(r"!\s*defined\s*\(?\s*\w+\s*\)?", rest) and _DEBUG_COND.search(rest):
        return "not_debug"
    return "other"


def preprocess(code):
    """-> (excluded, defines): ``excluded`` a set of line numbers (1-based) in debug-only
    conditional code (or #if 0), ``defines`` [(name, params or None, body, line, excluded)]."""
    lines = code.split("\n")
    stack, excluded, defines = [], set(), []
    i = 0
    while i < len(lines):
        s = lines[i].strip()
        j = i
        while s.endswith("\\") and j + 1 < len(lines):  # continuation lines
            j += 1
            s = s[:-1] + " " + lines[j].strip()
        m = re.match(r"#\s*(if|ifdef|ifndef|elif|else|endif|define)\b\s*(.*)$", s)
        if m:
            d, rest = m.group(1), m.group(2)
            if d in ("if", "ifdef", "ifndef"):
                stack.append(_cond_state(d, rest))
            elif d == "elif" and stack:
                stack[-1] = "debug" if _cond_state("if", rest) == "debug" else "other"
            elif d == "else" and stack:
                stack[-1] = {"debug": "other", "not_debug": "debug"}.get(stack[-1], "other")
            elif d == "endif" and stack:
                stack.pop()
        off = "debug" in stack
        if m and m.group(1) == "define":
            dm = re.match(r"([A-Za-z_]\w*)(\([^)]*\))?\s*(.*)$", m.group(2))
            if dm:
                params = None
                if dm.group(2) is not None:
                    params = [p.strip() for p in dm.group(2)[1:-1].split(",") if p.strip()]
                defines.append((dm.group(1), params, dm.group(3).strip(), i + 1, off))
        if off:
            excluded.update(range(i + 1, j + 2))
        i = j + 1
    return excluded, defines


def define_lines(code):
    """Line numbers (1-based) that belong to a #define (with its continuations)."""
    out, lines, i = set(), code.split("\n"), 0
    while i < len(lines):
        if re.match(r"\s*#\s*define\b", lines[i]):
            j = i
            while lines[j].rstrip().endswith("\\") and j + 1 < len(lines):
                j += 1
            out.update(range(i + 1, j + 2))
            i = j + 1
        else:
            i += 1
    return out


_NOT_FUNCTIONS = frozenset(("if", "for", "while", "switch", "return", "sizeof", "defined", "do", "else", "case",
                            "__attribute__", "typeof", "__typeof__", "NV_ALIGN_BYTES"))


def functions(bare):
    """[(body start, body end, name)] of the C function definitions of a file, read from ``bare``
    (masks()): an opening brace alone at column 0, or ending a line that starts at column 0,
    right after ``name(...)``; the body ends at the next closing brace at column 0 (the driver's
    style, and the kernel's). What fits no such shape has no known function."""
    out = []
    for m in re.finditer(r"^\{|^[A-Za-z_][^\n]*?\)[ \t]*(\{)[ \t]*$", bare, re.M):
        brace = m.start(1) if m.group(1) else m.start()
        i = brace - 1
        while i >= 0 and bare[i] in " \t\n":
            i -= 1
        if i < 0 or bare[i] != ")":
            continue
        depth = 0
        while i >= 0:  # back to the matching '('
            depth += {")": 1, "(": -1}.get(bare[i], 0)
            if depth == 0:
                break
            i -= 1
        name = re.search(r"([A-Za-z_]\w*)\s*$", bare[max(0, i - 200):max(0, i)])
        if i <= 0 or not name or name.group(1) in _NOT_FUNCTIONS:
            continue
        end = re.compile(r"^\}", re.M).search(bare, brace + 1)
        out.append((brace, end.start() if end else len(bare), name.group(1)))
    return out


def enclosing(funcs, offset):
    """The name of the function whose body holds ``offset`` (functions()), or None."""
    at = bisect.bisect_right([f[0] for f in funcs], offset) - 1
    return funcs[at][2] if at >= 0 and offset < funcs[at][1] else None


# ---- macros ---------------------------------------------------------------------------------
_LIT_OR_IDENT = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|[A-Za-z_]\w*')


def substitute(body, params, args):
    """The body of a function-like macro with ``args`` in place of ``params`` (C's rules enough
    for the driver's print wrappers: ``##`` pastes, ``, ## __VA_ARGS__`` drops its comma when
    there are no variadic arguments, GNU ``NAME...`` variadics)."""
    names, va_name, fixed = [], None, params
    if params and params[-1].endswith("..."):
        va_name = params[-1][:-3].strip() or "__VA_ARGS__"
        fixed = params[:-1]
    names = list(fixed)
    values = dict(zip(names, args[:len(names)]))
    va = ", ".join(args[len(names):]) if va_name else ""
    if va_name:
        body = re.sub(r",\s*##\s*%s\b" % re.escape(va_name), "\x00VA\x00", body)
        values[va_name] = va
    # '#param' makes a string of the argument ('"SEC_FAULT: " #field')
    body = re.sub(r"(?<!#)#\s*([A-Za-z_]\w*)",
                  lambda m: '"%s"' % values[m.group(1)].replace('"', '\\"') if m.group(1) in values else m.group(0),
                  body)

    def rep(m):
        t = m.group(0)
        return values.get(t, t) if t[0] not in "\"'" else t
    out = _LIT_OR_IDENT.sub(rep, body)
    out = out.replace("\x00VA\x00", (", " + va) if va else "")
    return re.sub(r"\s*##\s*", "", out)


class Macros(object):
    """The object-like string macros and the print wrappers of the files read."""

    def __init__(self, texts):
        self.strings, self.wrappers, self.string_fns, self.conflicts = {}, {}, {}, set()
        objects, functions = {}, {}
        for path in sorted(texts):
            code, _bare = masks(texts[path])
            _ex, defs = preprocess(code)
            for name, params, body, line, off in defs:
                if off:
                    continue
                (objects if params is None else functions).setdefault(name, []).append((params, body, path, line))
        self._strings(objects)
        self._functions(functions)

    def _strings(self, objects):
        done = dict(MACRO_OVERRIDES)
        while True:
            added = False
            for name, defs in objects.items():
                if name in done:
                    continue
                vals = set()
                for _p, body, _path, _line in defs:
                    body = body.strip()
                    while body.startswith("(") and body.endswith(")") and '"' in body:
                        body = body[1:-1].strip()
                    if not body or not (body.startswith('"') or re.match(r"[A-Za-z_]\w*", body)):
                        continue
                    val = common.join_literals(body, macros=done)
                    rest = re.sub(r'"(?:[^"\\\n]|\\.)*"', "", body)
                    if val is None or any(t not in done and t not in common.PRI_MACROS
                                          for t in re.findall(r"[A-Za-z_]\w*", rest)):
                        vals.add(None)
                        continue
                    vals.add(val)
                if len(vals) == 1 and None not in vals:
                    done[name] = vals.pop()
                    added = True
                elif len(vals - {None}) > 1:
                    self.conflicts.add(name)
            if not added:
                break
        self.strings = done

    def _functions(self, functions):
        known = set(BASE)
        while True:
            added = False
            for name, defs in functions.items():
                if name in known or name in NOT_WRAPPERS or name.startswith(NOT_WRAPPER_PREFIXES):
                    continue
                params, body, path, line = defs[0]
                code, bare = masks(body)
                if any(True for _ in find_calls(code, bare, known)):
                    self.wrappers[name] = (params, body, path, line)
                    known.add(name)
                    added = True
            if not added:
                break
        # function-like macros that only build a string ('NV_PRINTF_ADD_PREFIX(fmt)')
        for name, defs in functions.items():
            params, body, _path, _line = defs[0]
            if name in self.wrappers or not params:
                continue
            toks = [t for t in _LIT_OR_IDENT.findall(body)]
            rest = _LIT_OR_IDENT.sub("", body).strip()
            if toks and not rest and any(t.startswith('"') or t in self.strings for t in toks) and all(
                    t.startswith('"') or t in params or t in self.strings for t in toks):
                self.string_fns[name] = (params, body)

    def expand(self, name, args, depth=0):
        """[(base name, args)] that one call prints by."""
        if name in BASE:
            return [(name, args)]
        if name not in self.wrappers or depth > 8:
            return []
        params, body, _path, _line = self.wrappers[name]
        text = substitute(body, params or [], args)
        code, bare = masks(text)
        out = []
        for n, a, _off in find_calls(code, bare, set(BASE) | set(self.wrappers)):
            out.extend(self.expand(n, a, depth + 1))
        return out

    def literal(self, expr):
        """The text of a format expression that is literals and string macros only, else None."""
        expr = re.sub(r"\\\n", " ", expr.strip())  # a backslash-newline between two literals
        for _ in range(4):  # string-building macros, innermost last
            code, bare = masks(expr)
            calls = list(find_calls(code, bare, set(self.string_fns)))
            if not calls:
                break
            n, a, off = calls[0]
            params, body = self.string_fns[n]
            end = call_args(code, bare, bare.index("(", off))[1]
            expr = expr[:off] + substitute(body, params, a) + expr[end:]
        while expr.startswith("(") and expr.endswith(")"):
            expr = expr[1:-1].strip()
        val = common.join_literals(expr, macros=self.strings)
        if val is None:
            return None
        rest = re.sub(r'"(?:[^"\\\n]|\\.)*"', "", expr)
        if any(t not in self.strings and t not in common.PRI_MACROS for t in re.findall(r"[A-Za-z_]\w*", rest)):
            return None
        if re.sub(r"[A-Za-z_]\w*", "", rest).strip():
            return None  # an operator between the literals: not one string
        return val


_CONV = re.compile(r"%(?:%|[-+ #0']*(\*|\d+)?(?:\.(\*|\d+))?(?:hh|h|ll|l|j|z|t|L|q)?([diouxXeEfFgGaAcspn]))")


def pick_branch(arg, var, value):
    """``VAR == MACRO ? A : B`` with VAR's value known (the Xid an nvErrorLog_va call passes in a
    variable): the branch it takes; other arguments as they are."""
    m = re.match(r"^\(?\s*(\w+)\s*==\s*(\w+)\s*\)?\s*\?\s*([^:?]+?)\s*:\s*([^:?]+)$", (arg or "").strip())
    if m and var and m.group(1) == var:
        return m.group(3) if m.group(2) == value else m.group(4)
    return arg


def inline_args(fmt, args, macros):
    """Put the text of each argument that is a string literal in place of its %s."""
    out, pos, ai = [], 0, 0
    for m in _CONV.finditer(fmt):
        out.append(fmt[pos:m.start()])
        pos = m.end()
        if m.group(0) == "%%":
            out.append("%%")
            continue
        ai += (m.group(1) == "*") + (m.group(2) == "*")
        arg = args[ai] if ai < len(args) else None
        ai += 1
        lit = macros.literal(arg) if (arg is not None and m.group(3) == "s") else None
        # (a macro this generator reads as "%s", NV_VERSION_STRING, stays a conversion)
        out.append(lit.replace("%", "%%") if lit is not None and lit != "%s" else m.group(0))
    out.append(fmt[pos:])
    return "".join(out)


# ---- numbers --------------------------------------------------------------------------------


def xid_numbers(text):
    """{macro: number} of nverror.h's '#define NAME (N)'."""
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^#define\s+([A-Z0-9_]+)\s+\((\d+)\)", text, re.M)}


def enum_numbers(text, prefix):
    """{name: number} of the enumerators starting with ``prefix`` (implicit values counted)."""
    code, _bare = masks(text)
    out, last = {}, -1
    for m in re.finditer(r"\b(%s\w*)\s*(?:=\s*([^,}\n]+))?\s*[,}]" % re.escape(prefix), code):
        name, val = m.group(1), (m.group(2) or "").strip()
        if val:
            try:
                last = int(val, 0)
            except ValueError:
                if val in out:
                    last = out[val]
                else:
                    continue
        else:
            last += 1
        out[name] = last
    return out


# ---- the messages ---------------------------------------------------------------------------


def in_scope(path, prefixes):
    return any(path.startswith(p) for p in prefixes)


def collect(src, commit):
    """-> (messages, dropped, numbers): one message per printed format,
    {"path", "line", "base", "level", "number", "format"}; dropped: {reason: [where]}."""
    scan_prefixes = sorted(set(p for ps in BASE_SCOPE.values() for p in ps))
    all_c = [p for p in common.ls_files(src, commit, *scan_prefixes) if p.endswith((".c", ".h"))]
    headers = [p for p in common.ls_files(src, commit, *MACRO_SCOPE) if p.endswith(".h")]
    texts = read_files(src, commit, sorted(set(all_c) | set(headers) | {XID_HEADER, SXID_HEADER, STATUS_HEADER}))
    macros = Macros({p: t for p, t in texts.items() if p.endswith(".h") or p in all_c})
    names = set(BASE) | set(macros.wrappers)
    xids = xid_numbers(texts[XID_HEADER])
    xids["GSP_SLOWNESS"] = 0
    sxids = enum_numbers(texts[SXID_HEADER], "NVSWITCH_ERR_")
    statuses = {m.group(1): (int(m.group(2), 16), "%s [%s]" % (common.c_unescape(m.group(3)), m.group(1)))
                for m in re.finditer(r'NV_STATUS_CODE\((\w+),\s*0x([0-9A-Fa-f]+),\s*"((?:[^"\\]|\\.)*)"\)',
                                     texts[STATUS_HEADER])}
    messages, dropped = [], {}

    def drop(reason, where):
        dropped.setdefault(reason, []).append(where)

    needle = re.compile(r"\b(?:%s)\s*\(" % "|".join(sorted(names, key=len, reverse=True)))
    for path in sorted(all_c):
        text = texts[path]
        if not needle.search(text):
            continue
        code, bare = masks(text)
        excluded, _defs = preprocess(code)
        in_define = define_lines(code)
        funcs = None
        for name, args, off in find_calls(code, bare, names):
            line = code.count("\n", 0, off) + 1
            where = "%s:%d" % (path, line)
            if line in in_define:
                continue  # a macro's own definition: read where it is called
            if line in excluded:
                drop("debug-only code", where)
                continue
            for base, bargs in macros.expand(name, args):
                if not in_scope(path, BASE_SCOPE[base]):
                    continue
                lvl_at, num_at, fmt_at = BASE[base]
                if fmt_at >= len(bargs):
                    drop("no format argument", where)
                    continue
                level = bargs[lvl_at].strip() if lvl_at is not None else "always"
                if base == "nv_printf" and level not in KEPT_LEVELS:
                    drop("level %s" % level, where)
                    continue
                if base in NV_PRINTF_BASES:
                    printed = printed_level(path, level)
                    if printed is None:
                        drop("level %s" % level, where)
                        continue
                    level = printed
                fmt = macros.literal(bargs[fmt_at])
                if fmt is None:
                    drop("format not a literal", where)
                    continue
                if base == "printk":
                    lead = re.match(r"\s*(KERN_\w+)", bargs[fmt_at])
                    level = lead.group(1) if lead else "KERN_DEFAULT"
                    if level not in ("KERN_ERR", "KERN_WARNING", "KERN_CRIT", "KERN_ALERT", "KERN_EMERG"):
                        drop("printk level %s" % level, where)
                        continue
                rest = bargs[fmt_at + 1:]
                table = xids if base == "nvErrorLog_va" else sxids
                var = bargs[num_at].strip() if num_at is not None else None
                values = XID_VARIABLES.get(var, (None,)) if base == "nvErrorLog_va" else (None,)
                for value in values:
                    text = inline_args(fmt, [pick_branch(a, var, value) for a in rest], macros)
                    n = number_of(bargs[num_at], table) if num_at is not None else None
                    if value is not None:
                        n = table[value]
                    msg = {"path": path, "line": line, "base": base, "level": level, "number": n, "format": text,
                           "macro": name, "sxid_name": sxid_name(bargs, num_at, sxids)
                           if base.startswith("NVSWITCH") else None}
                    if base in NV_PRINTF_BASES:
                        if funcs is None:
                            funcs = functions(bare)
                        msg["function"] = enclosing(funcs, off)
                        msg["format"] = nv_printf_line(base, text, msg["function"])
                    messages.append(msg)
                    if base in NV_PRINTF_BASES:
                        messages.extend(status_messages(msg, statuses))
    return messages, dropped, macros


def printed_level(path, expr):
    """The level an NV_PRINTF call prints at when a release build prints it (PRINTED_LEVELS), else
    None; a level ``cond ? A : B`` prints at the higher of its branches."""
    expr = expr.strip()
    while expr.startswith("(") and expr.endswith(")"):
        expr = expr[1:-1].strip()
    expr = LEVEL_VARIABLES.get((path, expr), expr)
    m = re.fullmatch(r"[^?]+\?\s*\(?\s*(\w+)\s*\)?\s*:\s*\(?\s*(\w+)\s*\)?", expr)
    levels = [lv for lv in ((m.group(1), m.group(2)) if m else (expr,)) if lv in PRINTED_LEVELS]
    return max(levels, key=PRINTED_LEVELS.index) if levels else None


def nv_printf_line(base, fmt, function):
    """The line an NV_PRINTF prints: NV_PRINTF puts "NVRM: " before its format; nvDbg_vPrintf
    (nvlog_printf.c) replaces a leading "NVRM" by RmMsgPrefix's "NVRM: [GPU<n> ]<function>" (the
    GPU instance when one is current): "NVRM: %s <function>: <format>", the %s the GPU or nothing,
    or "NVRM: %s: <format>" when the function is not known. A format without "NVRM" is printed as
    it is (message_rows leaves it out)."""
    if base == "NV_PRINTF":
        fmt = "NVRM: " + fmt
    if not fmt.startswith("NVRM"):
        return fmt
    return ("NVRM: %%s %s" % function if function else "NVRM: %s") + fmt[len("NVRM"):]


def status_messages(msg, statuses):
    """The line of an NV_ASSERT_OK / NV_CHECK_OK failure printer with each of ASSERT_STATUSES
    spelled out (nvassert.c: "%s (0x%08X) returned from", nvstatusToString's text and the code)."""
    out = []
    if "%s (0x%08X) returned from" not in msg["format"]:
        return out
    for name in ASSERT_STATUSES:
        code, text = statuses[name]
        spelled = "%s (0x%08X) returned from" % (text.replace("%", "%%"), code)
        out.append(dict(msg, format=msg["format"].replace("%s (0x%08X) returned from", spelled, 1), status=name))
    return out


def sxid_name(args, at, table):
    expr = args[at].strip() if at is not None and at < len(args) else ""
    return expr if expr in table else None


def number_of(expr, table):
    """The number(s) an Xid/SXid argument names: an int, a tuple of ints (a variable that takes
    several, XID_VARIABLES), or None."""
    expr = re.sub(r"^\(\s*\w+\s*\)\s*", "", expr.strip()).strip("() ")
    if expr in table:
        return table[expr]
    if re.fullmatch(r"\d+", expr):
        return int(expr)
    if expr in XID_VARIABLES:
        return tuple(table[v] for v in XID_VARIABLES[expr])
    return None


# ---- classification -------------------------------------------------------------------------
CRIT, WARN, INFO = "critical", "warning", "info"
# NVRM lines (nv_printf, portDbgPrintf, NV_DEV_PRINTF ...), by words of the whole message
# (lower case, the lines of a multi-line message joined), first match wins:
# (regex, kind, category, severity or None for the level's, meaning). The engine's own readers
# (kernlog/patterns.py nvrm_gpu_event, nvrm_driver_event) read the first six the same way.
NVRM_RULES = (
    (r"fallen off the bus", "gpu_fallen_off_bus", "gpu_hardware", CRIT,
     "The GPU stopped answering on PCIe (Xid 79): reboot the node; replace the GPU if it recurs."),
    (r"rminitadapter failed|rm_init_adapter failed", "gpu_init_failed", "driver", CRIT,
     "The driver could not initialise this GPU: check the driver (and the Xid lines before it) first."),
    (r"api mismatch", "driver_version_mismatch", "driver", CRIT,
     "The user-space driver and the kernel module are different releases: reload the module or reboot."),
    (r"probe routine was not called|obtained ownership of the nvidia device|conflicting kernel module",
     "driver_conflict", "driver", CRIT, "Another driver (nouveau?) owns the GPUs."),
    (r"probe routine failed|no nvidia graphics adapter probed|none of the nvidia devices were initialized|"
     r"no nvidia devices probed|no nvidia gpu found|no nvidia pci devices found", "gpu_probe_failed", "driver", CRIT,
     "The driver loaded but initialised no GPU."),
    (r"not supported by open|open nvidia\.ko is only ready|requires use of the nvidia proprietary",
     "driver_open_unsupported", "driver", CRIT,
     "The open kernel module does not support this GPU: it needs the proprietary module."),
    (r"\(pci id: .*not supported by the .*driver release", "driver_gpu_unsupported", "driver", CRIT,
     "This driver release does not support the GPU."),
    # the lines the driver prints with a GSP RPC timeout (NV_ERROR_LOG_DATA: the data of Xid 119, or
    # of a slow answer) and a firmware engine's crash report (printed after its Xid): kind "xid", so
    # that the engine says them once, with the Xid finding of the same log (vocab/reading.py skips a
    # message whose kind a dedicated finding has); without one they read as the driver's generic kind, a
    # warning: the driver prints them only when something went wrong, and what is not in the capture
    (r"rate limiting gsp rpc error prints", "xid", "driver", CRIT,
     "The driver stops printing a GPU's GSP RPC errors (after Xid 119/120): the GPU likely needs a reset."),
    (r"rpc (event )?history|rpc buffer contains|rm dump report|dpc queue|work item queue|execution time|"
     r"entry function +(sequence +)?data0|^nvrm: +[ -]?\s*%c%-4d|^nvrm: \*+$", "xid", "driver", WARN,
     "A line of the state the driver dumps with a GSP RPC timeout (Xid 119) or a slow GSP answer: the Xid or "
     "the timeout line beside it says which (a warning when the capture holds neither)."),
    (r"crash report|risc-v|reported by (libos|partition)|stack trace:|pc trace:|address trace:|"
     r"register state:|^nvrm: +(0x%|\w+:0x%)", "xid", "driver", WARN,
     "A line of the crash report of a GPU firmware engine (GSP, PMU, SEC2): the Xid before it says what failed "
     "(a warning when the capture does not hold it)."),
    (r"gsp.*(timeout|timed out|halted|watchdog|crashed|gsp error)|gsp rpc error",
     "gsp_error", "driver", CRIT, "The GPU's GSP firmware stopped answering the driver: reset the GPU."),
    (r"necessary power cables", "gpu_insufficient_power", "gpu_hardware", CRIT,
     "The GPU's external power cables are not connected."),
    (r"corrupted runtime stack", "logged_driver_error", "driver", CRIT,
     "The driver found its own stack corrupted: its state cannot be trusted; reboot and report it to NVIDIA."),
    (r"gpu crash dump has been created", "logged_driver_error", "driver", WARN,
     "The driver saved a GPU crash dump: run nvidia-bug-report.sh before the module is unloaded."),
    (r"gpu is lost", "logged_gpu_error", "gpu_hardware", None,
     "The GPU is lost (fallen off the bus): the driver skips work on it."),
    (r"page offlining failed|offlining page", "logged_gpu_error", "gpu_hardware", None,
     "The driver offlines a page of coherent GPU memory (a memory error)."),
    (r"flr", "logged_gpu_error", "gpu_hardware", None,
     "A function-level reset of the GPU (FLR) failed or is unsupported."),
    (r"failed to initialize module|rm_init_rm\(\) failed|register_chrdev_region\(\) failed|cdev_add\(\) failed",
     "logged_driver_error", "driver", CRIT, "The NVIDIA kernel module failed to load."),
    (r"aborting probe|pci_enable_device failed|request_mem_region failed for %llum|i/o region assigned .*invalid|"
     r"rm_init_private_state\(\) failed|device start failed|failed to re-allocate bar1|"
     r"fatal error while attempting to resize|no interrupts of any type|can't find an irq",
     "logged_driver_error", "driver", CRIT,
     "The driver could not set this GPU up (PCI resources, interrupts): the BIOS or the host's PCI setup."),
    (r"(failed to allocate|unable to allocate|can't allocate|cannot allocate)(?! (msi|counter))|"
     r"(?<!msi-x )allocation failed|no cache memory",
     "logged_memory_error", "memory_leak", None, "The driver could not allocate host memory."),
    (r"unbindlock (acquired|released)|excluded gpu %s successfully|excluding all gpus", "benign", "healthy", "ok",
     "An operator's request (unbind lock, GPU exclusion) carried out: no fault."),
)
# benign NVRM messages: the driver's banners and a GPU's identity
NVRM_BENIGN = (
    (r"^nvrm: loading ", "The driver's load banner (module and release)."),
    (r"^nvrm: gpu at pci:%04x:%02x:%02x: %s$", "A GPU's identity (PCI address and UUID), printed once per GPU."),
    (r"gpu board serial number|gpu serial number is", "A GPU's board serial number (identity)."),
    (r"has software scheduler", "The GPU's scheduling policy (configuration), printed at start."),
    (r"persistence mode is deprecated", "Persistence mode set through the legacy interface: a deprecation notice."),
    (r"applied patches|patch #%d", "The list of patches built into the module."),
    (r"excluded gpu %s successfully|excluding all gpus|unbindlock (acquired|released)",
     "An operator's request (unbind lock, GPU exclusion) carried out: no fault."),
)
# words of a failure: an NV_DBG_INFO message without them is benign
FAILURE_WORDS = re.compile(r"fail|error|invalid|unable|cannot|can't|not supported|unsupported|lost|mismatch|corrupt|"
                           r"not found|not present|missing|wrong|abort|timeout|timed out|too large|is null|"
                           r"not a type|is not package")
INFO_BENIGN_WHY = "Informational (NV_DBG_INFO: printed only when the driver's debug level is raised): no fault."
# the files of Tegra / embedded display and SoC support, ACPI (laptops) and the Tegra iGPU's
# power gating: never on a datacenter GPU node; what they print names no cause there
PLATFORM_FILES = re.compile(r"nv-(platform|dsi|clk|gpio|i2c|imp|bpmp|backlight|acpi|nano-timer)|dynamic-power\.c")
# ... and the Tegra / display words of a message in the shared files
PLATFORM_WORDS = re.compile(r"tegra|devfreq|thermal.zone|cooling.device|bpmp|\bdsi\b|dpaux|hdacodec|mipi|framebuffer|"
                            r"railgat|gpu_pg_mask|pm_domain|power domain|\bsoc\b|of node|\bdt\b")

# nvidia-peermem (GPUDirect RDMA): (regex, kind, category, severity, meaning)
PEERMEM_RULES = (
    # the free callback found a context already released (the registration was torn down
    # first) and skipped it: harmless, and it comes in floods (tests/unit/test_kernlog.py)
    (r"detected invalid context, skipping further processing", "benign", "healthy", "ok",
     "nvidia-peermem skipped the free callback of a registration already torn down: harmless teardown noise."),
    (r"invalid \w+ param value", "logged_nccl_config_error", "nccl_config", WARN,
     "A bad nvidia-peermem module parameter."),
    (r"", "logged_driver_error", "driver", WARN,
     "nvidia-peermem (GPUDirect RDMA) could not map or release GPU memory for the HCA: RDMA from GPU memory fails."),
)


# NV_PRINTF lines ("NVRM: %s <function>: ...", LEVEL_ERROR and above), by words of the line with
# its function name (lower case), first match wins: (regex, kind, category, severity, reason)
NV_PRINTF_RULES = (
    # a caller (a CUDA process, nvidia-smi, a monitoring agent) asked the driver for something it refused,
    # and the driver said so: osapi.c free_os_event (an OS event the caller never registered:
    # NV_ERR_INVALID_EVENT to the caller), ref_count.c (a caller's request to switch a shared feature --
    # profiling counters, a timer -- whose state change the feature refused), and a check or assertion
    # whose status is a refused call (ASSERT_STATUSES spelled out): the caller's, not the GPU's
    (r"free_os_event: |refcntrequestreference\w*: failed to enter state|\[nv_err_(?:not_supported|object_not_found|"
     r"insufficient_permissions|invalid_argument|invalid_object_handle|invalid_client|in_use|state_in_use)\]",
     "logged_driver_error", "driver", INFO,
     "The driver refused a call of one of its callers (a CUDA process, a monitoring agent, a profiler) and said "
     "so: the caller's request, not a fault of the GPU."),
    # chipset_pcie.c objClInitPcieChipset, at load: a host bridge / root port quirk the driver's table
    # knows could not be set up, or the PCIe config space was not as expected; it prints and goes on
    # with its defaults (the GPU initialises; real captures show it on working hosts). A note for a
    # PCIe problem (P2P, bandwidth), no fault by itself
    (r"objclinitpciechipset: ", "logged_driver_error", "driver", INFO,
     "The driver could not apply its set-up for this host's chipset or root port at load and went on with "
     "its defaults: a note unless PCIe (P2P, bandwidth) misbehaves."),
    # the GPU (or a bridge before it) stopped answering on PCIe: as the nv_printf line says it
    (r"fallen off the bus", "gpu_fallen_off_bus", "gpu_hardware", CRIT,
     "The GPU stopped answering on PCIe (Xid 79): reboot the node; replace the GPU if it recurs."),
    # a call that failed because the GPU is already gone: the line that says why comes before it
    (r"gpu is lost|gpu lost|lost from the bus", "logged_gpu_error", "gpu_hardware", WARN,
     "The driver found the GPU lost from the bus: look for the fallen-off-the-bus line (Xid 79) before it."),
    # the adapter's start-up (RmInitAdapter, osInitNvMapping's attach, GSP-RM's bootstrap) failed
    (r"rminitadapter|rm_init_adapter|cannot attach gpu|cannot bootstrap|unattached gpu", "gpu_init_failed", "driver",
     CRIT, "The driver could not initialise this GPU: check the driver (and the Xid lines before it) first."),
    # the driver (or GSP-RM) says the GPU must be reset before it is used again
    (r"reset required|reset_required|requires? (a )?(gpu )?reset|needs? (a )?(gpu )?reset|for reset\b",
     "logged_driver_error", "driver", CRIT, "The GPU needs a reset (NV_ERR_RESET_REQUIRED): drain it and reset it."),
    # a security fault (SEC_FAULT) locks the GPU down: fatal to it until reset
    (r"sec_fault", "logged_gpu_error", "gpu_hardware", CRIT,
     "A GPU security fault (SEC_FAULT): the GPU is locked down; reset it, replace it if it recurs."),
    # memory errors of the GPU (ECC, row remapping, uncorrectable / double-bit errors)
    (r"\becc\b|_ecc|ecc_|eccservice|eccnotifier|row.?remap|uncorr|\bdbe\b|double.bit", "logged_gpu_error",
     "gpu_hardware", WARN, "A memory error of the GPU (ECC / row remapping): read the Xid lines with it."),
    # host memory the RM could not allocate (portMemAlloc, "no memory for", out of memory)
    (r"portmemalloc\w* failed|no memory for|out of memory|nv_err_no_memory|insufficient (host|system) memory",
     "logged_memory_error", "memory_leak", WARN, "The driver could not allocate host memory."),
    # an RM call that GSP-RM refused (rpc.c): its status says why (0x62 reset required, ...)
    (r"gsprm\w* failed", "gsp_error", "driver", WARN,
     "GSP-RM refused an RM call the driver forwarded to it: the status says why (0x62: the GPU needs a reset)."),
    # GSP: boot (booter, FMC, FWSEC, WPR2, GFW), its RPC channel, its firmware (libos, RISC-V)
    (r"gsp|libos|booter|\bfmc\b|-fmc|fwsec|wpr2?\b|risc-?v|gfw boot|rpc(recvpoll|sendmessage)",
     "gsp_error", "driver", CRIT, "The GPU's GSP firmware failed (boot, RPC or firmware): reset the GPU."),
)
# Tegra and its display controller engine (DCE): not on datacenter GPUs
NV_PRINTF_PLATFORM = re.compile(r"nvrm_rpc_dce|dceclient|_dce\b|tegra|\bsoc\b")


def classify_nvprintf(msg):
    """(kind, category, severity, meaning) of an NV_PRINTF line (all at LEVEL_ERROR or above)."""
    low = msg["format"].lower()
    for pat, kind, cat, sev, meaning in NV_PRINTF_RULES:
        if re.search(pat, low):
            return kind, cat, sev, meaning
    sev = CRIT if msg["level"] == "LEVEL_FATAL" else WARN
    if NV_PRINTF_PLATFORM.search(low) or PLATFORM_WORDS.search(low) or PLATFORM_FILES.search(msg["path"]):
        return "logged_error", "unknown", sev, "Tegra/embedded platform support (SoC, DCE): not on datacenter GPUs."
    return "logged_driver_error", "driver", sev, ""


def severity_of_level(level):
    return {"NV_DBG_ERRORS": WARN, "NV_DBG_WARNINGS": WARN, "NV_DBG_INFO": INFO}.get(level, WARN)


def classify_nvrm(msg):
    """(kind, category, severity, meaning) of an NVRM message (nv_printf / portDbgPrintf)."""
    low = re.sub(r"\n\s*nvrm:\s*", " ", msg["format"].lower())  # the lines of the message as one text
    info = msg["level"] == "NV_DBG_INFO"
    for pat, why in NVRM_BENIGN:
        if re.search(pat, low, re.M):
            return "benign", "healthy", "ok", why
    for pat, kind, cat, sev, meaning in NVRM_RULES:
        if re.search(pat, low, re.M):
            if kind == "benign":
                return kind, cat, sev, meaning
            if info:  # not printed unless the debug level is raised: a note, never a verdict
                return BY_CATEGORY[cat], cat, INFO, meaning
            return kind, cat, sev or severity_of_level(msg["level"]), meaning
    if info and not FAILURE_WORDS.search(low):
        return "benign", "healthy", "ok", INFO_BENIGN_WHY
    cat = "unknown" if PLATFORM_FILES.search(msg["path"]) or PLATFORM_WORDS.search(low) else "driver"
    meaning = "" if cat == "driver" else (
        "Tegra/embedded platform support (display, SoC clocks, ACPI): not on datacenter GPUs.")
    return BY_CATEGORY[cat], cat, INFO if info else severity_of_level(msg["level"]), meaning


def classify_xid(msg):
    """An Xid body is what its Xid is in the engine's catalog (xid_catalog.py, which the engine
    applies to the line whatever the body says)."""
    n = msg["number"]
    e = xid_lookup(n) if n is not None else None
    if e is None:
        return "logged_error", "unknown", WARN, "An Xid the catalog does not know: read NVIDIA's Xid catalog."
    cat, sev = e["category"], e["severity"]
    if n == 62 and "gsp" in msg["format"].lower():
        cat = "driver"  # the engine's rule: a PMU halt the GSP reports is the firmware's (kernlog/derive.py)
    kind = XID_KINDS.get(n) if cat in KINDS.get(XID_KINDS.get(n), {}).get("categories", ()) else None
    meaning = "Xid %d (%s); NVIDIA's immediate action: %s." % (n, e["name"], e["nvidia_action"] or "none given")
    return kind or BY_CATEGORY[cat], cat, sev, meaning


# an Xid body that is exactly what a dedicated kind describes
XID_KINDS = {79: "gpu_fallen_off_bus", 119: "gsp_error", 120: "gsp_error"}

SXID_CRITICAL = re.compile(r"^fatal|shutting down|shutdown|halted|halt data|overt activated|failed to boot|"
                           r"failed to reset|init failed|failed to init|initialization failure|faulty|boot failure|"
                           r"recovery failure")
SXID_INFO = re.compile(r"^correctable|disengaged|deactivated|^severity %d engine|^data \{")


# SXids NVIDIA's Fabric Manager User Guide (appendix D, "NVSwitch SXid Errors"; gpud's catalog of it,
# components/accelerator/nvidia/sxid/sxid.go at 4a8de33a) says only a configuration causes: the fabric's
# set-up by Fabric Manager, not a part that failed
SXID_CONFIG = {
    "11004": "NVIDIA's Fabric Manager User Guide: 'This SXid error can happen only because of an incorrect FM "
             "partition configuration and is expected not to occur in the field'; validate the partition's routing "
             "with nvswitch-audit",
}


def classify_sxid(msg):
    low = msg["format"].lower()
    sev = INFO if SXID_INFO.search(low) else CRIT if SXID_CRITICAL.search(low) else WARN
    meaning = "SXid %s (%s)." % (msg["number"], msg["sxid_name"]) if msg["sxid_name"] else (
        "A detail line of the NVSwitch error above it.")
    config = SXID_CONFIG.get(str(msg["number"]))
    if config:
        return "nvswitch_sxid", "driver", sev, meaning[:-1] + ": " + config + "."
    return "nvswitch_sxid", "gpu_hardware", sev, meaning


def classify_peermem(msg):
    low = msg["format"].lower()
    for pat, kind, cat, sev, meaning in PEERMEM_RULES:
        if re.search(pat, low):
            return kind, cat, sev, meaning


# ---- rows -----------------------------------------------------------------------------------
XID_FRAME = "NVRM: Xid (PCI:%%s): %s, %%s"   # kernel_rc.c krcReportXid, "pid=.., name=.., " in the %s
SXID_FRAME = "nvidia-%%s: SXid (PCI:%%04x:%%02x:%%02x.%%x): %s, "   # common_nvswitch.h NVSWITCH_PRINT_SXID


def message_rows(msg):
    """The rows of one message: [(format, kind, category, severity, meaning)]."""
    fmt = msg["format"].rstrip("\n")
    base = msg["base"]
    if base == "nvErrorLog_va":
        body = fmt.split("\n")[0]
        number = "%d" % msg["number"] if msg["number"] is not None else "%d"
        return [((XID_FRAME % number) + body,) + classify_xid(msg)]
    if base.startswith("NVSWITCH_PRINT_SXID"):
        number = "%05d" % msg["number"] if msg["number"] is not None else "%05d"
        return [((SXID_FRAME % number) + fmt,) + classify_sxid(msg)]
    if base == "printk":
        if not fmt.startswith("nvidia-peermem"):
            return []
        return [(fmt,) + classify_peermem(msg)]
    if not fmt.lstrip().startswith("NVRM"):
        return []
    cls = classify_nvprintf(msg) if base in NV_PRINTF_BASES else classify_nvrm(msg)
    rows = [(fmt,) + cls]
    # a message printed over several lines, each with its own "NVRM: ": each later line is a row
    # too (the table reads one line at a time; the first row is matched by its first line)
    for later in [ln for ln in fmt.split("\n")[1:] if ln.lstrip().startswith("NVRM")]:
        rows.append((later,) + cls)
    return rows


def merge(rows):
    """One classification per line shape: rows that read the same line (their first printed
    line compiles to the same fragments) and disagree on the category become 'unknown'; the
    first place a format is printed at is its row."""
    by_key, order = {}, []
    for r in rows:
        key = vocab.compile_format(r[2])
        if key not in by_key:
            by_key[key] = []
            order.append(key)
        by_key[key].append(r)
    out = []
    for key in order:
        group = by_key[key]
        cats = set(r[4] for r in group)
        kinds = set(r[3] for r in group)
        if len(cats) > 1 or (vocab.BENIGN in kinds and len(kinds) > 1):
            group = [(r[0], r[1], r[2], "logged_error", "unknown", WARN,
                      "The first line of several messages (%s): the lines after it say which." %
                      ", ".join(sorted(set("%s:%d" % (g[0].rsplit("/", 1)[-1], g[1]) for g in group))[:4]))
                     for r in group]
        seen = set()
        for r in sorted(group, key=lambda r: (r[0], r[1])):
            if r[2] in seen:
                continue  # the same format printed at another place: its first place stands
            seen.add(r[2])
            out.append(r)
    return out


# an older krcReportXid's own line, the Xid number a variable: the Xid reader reads it by the
# catalog (the pinned release's rows are the bodies, XID_FRAME around each)
XID_PRINTER = re.compile(r"NVRM: Xid \(PCI:[^)]*\): %d, ")


def older_rows(src, known):
    """The rows of the OLDER driver releases whose line the pinned release does not print
    (known: the compiled formats of the pinned rows, grown as releases are read), and a note
    per release: its commit, or why it was skipped."""
    out, notes = [], []
    for tag in OLDER:
        try:
            commit = common.resolve(src, tag)
        except Exception:  # noqa: BLE001 - an older release is optional
            notes.append("%s not in the source: skipped" % tag)
            continue
        messages, _dropped, _macros = collect(src, commit)
        added = 0
        for path, line, fmt, kind, cat, sev, meaning in build(messages):
            key = vocab.compile_format(fmt)
            if key in known or "Assertion failed" in fmt or "Check failed" in fmt or XID_PRINTER.match(fmt):
                continue
            known.add(key)
            added += 1
            out.append(("%s@%s" % (path, tag), line, fmt, kind, cat, sev,
                        "%s (driver %s wording)" % (meaning, tag) if meaning else "driver %s wording" % tag))
        notes.append("%s (%s): %d rows" % (tag, commit[:12], added))
    return out, notes


def build(messages):
    rows = []
    for m in messages:
        for fmt, kind, cat, sev, meaning in message_rows(m):
            if kind != vocab.BENIGN and (kind not in KINDS or cat not in KINDS[kind]["categories"]):
                raise SystemExit("%s:%d: kind %s has no category %s" % (m["path"], m["line"], kind, cat))
            rows.append((m["path"], m["line"], fmt, kind, cat, sev, meaning))
    return merge(rows)


DOC = """\
Read: %(counts)s, from %(files)d files. Formats are the driver's, literals and string macros
joined, after its wrapper macros are expanded. An Xid body's row is the whole line the driver
prints, "NVRM: Xid (PCI:%%s): <xid>, %%s<body>" (the %%s before the body stands for "pid=..,
name=.., " or nothing), with the Xid the call passes ("%%d" when it passes one the source does
not fix; a variable that takes known values is spelled out per value); an SXid row is the whole
"nvidia-%%s: SXid (PCI:..): <sxid>, <message>" line. A message printed over several lines, each
with its own "NVRM: ", is one row plus one row per later line. An NV_PRINTF row (LEVEL_ERROR,
HW_ERROR, FATAL: what nvDbg_PrintMsg prints in a release build) is the whole line, "NVRM: %%s
<function>: <format>" (the %%s "GPU<n>" or nothing; "NVRM: %%s: <format>" when the function is not
known); the NV_ASSERT_OK / NV_CHECK_OK failure printers (nvassert.c) have one row per printer and
wording, plus one per spelled-out status (Reset required, GPU lost, ECC). A format printed at
several places is one row (its first place). Left out (see the generator's docstring): NV_PRINTF
below LEVEL_ERROR, the GSP firmware's own prints, debug levels below the default and debug-only
code (%(debug)d calls), nvidia-uvm/modeset/drm, non-literal formats (%(nonlit)d calls), lines with
no "NVRM" of their own (%(nonvrm)d messages).
Classification: an Xid body is what its Xid is in the engine's catalog (xid_catalog.py:
category and severity; kind the category's generic one, or gpu_fallen_off_bus / gsp_error
where the body says exactly that); an SXid -> nvswitch_sxid (gpu_hardware), critical when
Fatal / shutdown / halted / firmware failure, info when Correctable or a condition ending,
warning otherwise; NVRM lines by keywords (NVRM_RULES: fallen off the bus, RmInitAdapter
failed, API mismatch, probe failures, open-module / release support, GSP timeouts and the
dumps and crash reports that go with them, power cables, a corrupted stack, module load
failures, host memory) and else the driver's generic kind (unknown for Tegra / display / ACPI
platform files); the load banner, a GPU's identity and serial, and informational
(NV_DBG_INFO) messages without a failure word are benign; NV_DBG_INFO messages are at most
info. NV_PRINTF lines by keywords of the line with its function name (NV_PRINTF_RULES: fallen off
the bus, GPU lost, RmInitAdapter / cannot attach -> gpu_init_failed, reset required -> driver
critical, SEC_FAULT, ECC / row remap / uncorrectable -> gpu_hardware, host memory -> memory_leak,
GspRm* failed -> gsp_error warning, GSP boot / RPC / firmware -> gsp_error critical), else the
driver's generic kind (warning; critical at LEVEL_FATAL; unknown for Tegra / DCE platform code).
nvidia-peermem: its "detected invalid context" teardown noise is benign, the rest driver
warnings. Rows that read the same line but disagree are merged into unknown.
Older releases (the branches clusters still run), read the same way; a row is added when the
pinned release no longer prints its line, its file "path@<release>"; NV_ASSERT / NV_CHECK
failure lines and the Xid printer's own line (its Xid a variable: read by the catalog) left out:
%(older)s.
"""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", required=True, help="NVIDIA/open-gpu-kernel-modules: a bare mirror or a clone")
    ap.add_argument("--rev", default=PIN, help="tag, branch or commit (default %s)" % PIN)
    ap.add_argument("--dump", action="store_true", help="print the messages and what was dropped")
    args = ap.parse_args(argv)
    commit = common.resolve(args.src, args.rev)
    tags = [t for t in common.git(args.src, "tag", "--points-at", commit).split() if t]
    version = tags[0] if tags else commit[:12]
    messages, dropped, macros = collect(args.src, commit)
    if args.dump:
        for m in messages:
            print("%s:%d\t%s\t%s\t%s\t%r" % (m["path"], m["line"], m["base"], m["level"], m["number"], m["format"]))
        for k, v in sorted(dropped.items()):
            print("DROPPED %s: %d (e.g. %s)" % (k, len(v), v[:3]))
        print("WRAPPERS", sorted(macros.wrappers))
        print("CONFLICTS", sorted(macros.conflicts))
        return
    rows = build(messages)
    older, older_notes = older_rows(args.src, set(vocab.compile_format(r[2]) for r in rows))
    rows += older
    nonvrm = sum(1 for m in messages if not message_rows(m))
    by = {}
    for m in messages:
        by[m["base"]] = by.get(m["base"], 0) + 1
    counts = ("%d nv_printf / NV_DEV_PRINTF calls, %d NV_PRINTF / NV_PRINTF_EX / NV_PRINTF_STRING (with the "
              "spelled-out statuses), %d portDbgPrintf, %d Xid bodies (nvErrorLog_va), %d SXid prints, "
              "%d nvidia-peermem errors (with their wrappers' expansions)" % (
                  by.get("nv_printf", 0), sum(by.get(b, 0) for b in NV_PRINTF_BASES),
                  by.get("portDbgPrintf", 0), by.get("nvErrorLog_va", 0),
                  by.get("NVSWITCH_PRINT_SXID", 0) + by.get("NVSWITCH_PRINT_SXID_NO_BBX", 0), by.get("printk", 0)))
    meta = {"EMITTER": "NVRM", "PROJECT": "NVIDIA open-gpu-kernel-modules", "VERSION": version, "COMMIT": commit,
            "LICENCE": LICENCE, "ORIGIN": ORIGIN, "GENERATOR": GENERATOR}
    doc = DOC % {"counts": counts, "files": len(set(m["path"] for m in messages)),
                 "debug": len(dropped.get("debug-only code", ())) + sum(
                     len(v) for k, v in dropped.items() if k.startswith(("level", "printk level"))),
                 "nonlit": len(dropped.get("format not a literal", ())), "nonvrm": nonvrm,
                 "older": "; ".join(older_notes)}
    path = common.write_table("nvrm", meta, MARKERS, TEMPLATES, rows, doc=doc)
    print("%s: %d rows" % (path, len(rows)))


if __name__ == "__main__":
    main()
