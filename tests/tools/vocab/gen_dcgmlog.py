#!/usr/bin/env python3
"""Generate module_utils/gpu_runbook/vocab/dcgmlog.py: the messages DCGM writes to its own logs
(nv-hostengine.log, and nvvs.log of its diagnostic, which uses the same formatter), read from
every logging call of NVIDIA/DCGM's source at the levels a host engine writes by default
(fatal, error, warning).

Usage (from the repository root)::

    git clone --bare https://github.com/NVIDIA/DCGM.git /tmp/dcgm.git   # or any clone
    .venv/bin/python tests/tools/vocab/gen_dcgmlog.py --src /tmp/dcgm.git [--rev 72fa3feaa67d] [--dump]
    .venv/bin/python tests/tools/vocab/write_index.py

The line (common/DcgmLoggingImpl.h DcgmLogFormatter; v2 common/DcgmLogging.h)::

    2024-02-01 14:12:01.207 ERROR [9596:9598] Failed to load module 9 [/workspaces/dcgm-rel_dcgm_3_3-
    postmerge/dcgmlib/src/DcgmHostEngineHandler.cpp:1831] [DcgmHostEngineHandler::LoadModule]

(one line; the source path is __FILE__ in NVIDIA's build directory).

What is read: under dcgmlib/, modules/, common/, hostengine/ and nvvs/ (test code left out:
``*_tests*``, ``tests/``, ``Test*.cpp``), every

- ``log_fatal/log_error/log_warning("fmt", ...)`` (common/DcgmLogging.h, fmt syntax: ``{}`` ->
  ``%s``, ``{:x}``/``{:d}``/``{:f}`` -> the matching conversion, ``{{``/``}}`` -> braces), and the
  ``SYSLOG_CRITICAL/ERROR/WARNING`` wrappers of them;
- ``DCGM_LOG_FATAL/ERROR/WARNING << "..." << expr << ...`` (plog streams: each operand that is
  not a literal -> ``%s``, adjacent literals joined, stream manipulators print nothing);
- ``PRINT_CRITICAL/ERROR/WARNING("<types>", "printf format", ...)`` (v2's printf wrappers: the
  second argument is the format);
- ``fmt::print(stderr, "fmt", ...)``: what a child process DCGM starts (a diagnostic plugin's helper,
  nvvs) prints before it exits; the parent logs it as the command's output, at any level.

Dropped, and counted by reason (``--dump``): a call whose message is not a literal (a variable,
``fmt::format``), one whose literal text is too short to tell its line from another
(vocab.matchable), a message dcgm.py (gen_dcgm.py) already holds, an older release's wording that
the pinned one prints alike (the same literal fragments), a message printed alike at another
place (one row, its first place), and the info / debug / verbose levels.
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

GENERATOR = "tests/tools/vocab/gen_dcgmlog.py"
PIN = "72fa3feaa67d"   # master at "DCGM 4.6.0 (#306)", gen_dcgm.py's pin
OLDER = ("v3.3.9", "v2.1.4")  # the DCGM 3 and DCGM 2 releases clusters still run: their wordings
ORIGIN = "https://github.com/NVIDIA/DCGM"
LICENCE = "Apache-2.0"
DIRS = ("dcgmlib/", "modules/", "common/", "hostengine/", "nvvs/")
EXTS = (".cpp", ".cc", ".c", ".h", ".hpp", ".inl")
STRUCTS = "dcgmlib/dcgm_structs.h"
ERRORS = ("dcgmlib/src/dcgm_errors.c", "common/dcgm_errors.c")  # errorString (common/ in DCGM 2)

# ---- reading the calls ------------------------------------------------------------------------
_FMT_CALL = re.compile(r"(?<![\w.>:])(?:log_(fatal|error|warning|info|debug|verbose)|"
                       r"SYSLOG_(CRITICAL|ERROR|WARNING|NOTICE|INFO))\s*\(")
_STREAM = re.compile(r"\bDCGM_LOG_(FATAL|ERROR|WARNING|INFO|DEBUG|VERBOSE)(?:_TO\s*\([^()]*\))?\s*<<")
_PRINTF = re.compile(r"\bPRINT_(CRITICAL|ERROR|WARNING|INFO|DEBUG)\s*\(")
# what DCGM's child processes (a diagnostic plugin's helper, nvvs itself) print on stderr before they exit
# (common/DcgmUtilities.cpp: 'Could not exec ...'): the parent logs their output ('External command
# stdout: ...', at any level), so they are read as errors
_STDERR = re.compile(r"\bfmt::print\s*\(\s*stderr\s*,")
# the levels read; info, debug and verbose (below a host engine's default) are counted, not read
_LEVEL = {"fatal": "fatal", "critical": "fatal", "error": "error", "warning": "warning"}
BELOW = "below warning (info, debug, verbose)"
# stream manipulators: they change how the next value prints, and print nothing themselves
_MANIPULATOR = re.compile(r"^(?:std::)?(?:hex|dec|oct|endl|flush|showbase|noshowbase|boolalpha|noboolalpha|"
                          r"uppercase|nouppercase|fixed|scientific|left|right|setw\s*\(.*\)|setfill\s*\(.*\)|"
                          r"setprecision\s*\(.*\))$", re.S)
_FMT_FIELD = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")
_FMT_TYPE = {"x": "%x", "X": "%X", "d": "%d", "f": "%f", "F": "%f", "e": "%f", "g": "%f", "c": "%c", "p": "%p"}


def is_test(path):
    name = path.rsplit("/", 1)[-1]
    return "_tests" in path or "/tests/" in path or path.startswith("tests/") or \
        (name.startswith("Test") and name.endswith(".cpp"))


def fmt_to_printf(text):
    """fmt's format string -> the printf form rows use."""
    out, pos = [], 0
    for m in _FMT_FIELD.finditer(text):
        out.append(text[pos:m.start()].replace("%", "%%"))
        pos = m.end()
        if m.group(0) in ("{{", "}}"):
            out.append(m.group(0)[0])
            continue
        spec = m.group(1).split(":", 1)[1] if ":" in m.group(1) else ""
        width = re.search(r"(\d+)(?:\.\d+)?[a-zA-Z]?$", spec)
        if not spec or (width and int(width.group(1)) > 16):
            out.append("%s")  # a number wider than the reader's 16 digits ('{:#064x}'): any text
        else:
            out.append(_FMT_TYPE.get(spec[-1:], "%s"))
    out.append(text[pos:].replace("%", "%%"))
    return "".join(out)


def _literal(expr):
    """The text of an operand that is only string literals (or a char literal), else None."""
    e = expr.strip()
    m = re.fullmatch(r"'(\\.|[^'\\])'", e)
    if m:
        return common.c_unescape(m.group(1))
    if not e.startswith('"'):
        return None
    rest = re.sub(r'"(?:[^"\\\n]|\\.)*"', "", e)
    if rest.strip() and not re.fullmatch(r"(?:\s|PRI[a-zA-Z0-9]+)*", rest):
        return None
    return common.join_literals(e)


def _statement_end(text, pos):
    """The offset of the ';' that ends the statement from ``pos`` (outside literals and brackets)."""
    depth, i, n = 0, pos, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            i = common.literal_end(text, i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth < 0:
                return i
        elif c == ";" and depth == 0:
            return i
        i += 1
    return n


def _split_stream(body):
    """A stream's operands, split at the '<<' outside literals and brackets."""
    parts, cur, depth, i, n = [], [], 0, 0, len(body)
    while i < n:
        c = body[i]
        if c in "\"'":
            j = common.literal_end(body, i)
            cur.append(body[i:j])
            i = j
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif body.startswith("<<", i) and depth == 0:
            parts.append("".join(cur))
            cur = []
            i += 2
            continue
        cur.append(c)
        i += 1
    parts.append("".join(cur))
    return [p for p in (p.strip() for p in parts) if p]


def stream_format(body):
    """(format, the operands that print a value) of a plog stream, or (None, _) when no operand is
    a literal."""
    out, values, lit = [], [], False
    for op in _split_stream(body):
        text = _literal(op)
        if text is not None:
            out.append(text.replace("%", "%%"))
            lit = True
        elif _MANIPULATOR.match(op):
            continue
        else:
            out.append("%s")
            values.append(op)
    return ("".join(out) if lit else None), values


def calls(text):
    """[(offset, level, style, format or None, the value arguments)] of one file's logging calls."""
    clean = common.blank_comments(text)
    found = []
    for m in _FMT_CALL.finditer(clean):
        level = _LEVEL.get((m.group(1) or m.group(2)).lower(), BELOW)
        if level == BELOW:
            found.append((m.start(), level, "fmt", None, []))
            continue
        args, _end = common.call_args(clean, m.end() - 1)
        fmt = _literal(args[0]) if args and args[0].strip() else None
        found.append((m.start(), level, "fmt", fmt_to_printf(fmt) if fmt is not None else None, args[1:]))
    for m in _STREAM.finditer(clean):
        level = _LEVEL.get(m.group(1).lower(), BELOW)
        if level == BELOW:
            found.append((m.start(), level, "stream", None, []))
            continue
        end = _statement_end(clean, m.end())
        fmt, values = stream_format(clean[m.end():end])
        found.append((m.start(), level, "stream", fmt, values))
    for m in _STDERR.finditer(clean):
        args, _end = common.call_args(clean, m.start() + m.group().index("("))
        fmt = _literal(args[1]) if len(args) > 1 else None
        found.append((m.start(), "error", "fmt", fmt_to_printf(fmt).rstrip("\n") if fmt is not None else None,
                      args[2:]))
    for m in _PRINTF.finditer(clean):
        if clean[clean.rfind("\n", 0, m.start()) + 1:m.start()].strip().startswith("#"):
            continue  # the macro's own #define / #undef
        level = _LEVEL.get(m.group(1).lower(), BELOW)
        if level == BELOW:
            found.append((m.start(), level, "printf", None, []))
            continue
        args, _end = common.call_args(clean, m.end() - 1)
        fmt = _literal(args[1]) if len(args) > 1 else None
        if fmt is None and len(args) > 1:
            fmt = common.join_literals(args[1].strip())
        found.append((m.start(), level, "printf", fmt, args[2:]))
    return sorted(found)


_WIDE = re.compile(r"%[-+ #0]*(\d+)(?:hh|h|ll|l|j|z|t)?[diouxX]")


def printf_wide(fmt):
    """A printf format with its numbers wider than the reader's 16 digits ('0x%064llx') as %s."""
    return _WIDE.sub(lambda m: "%s" if int(m.group(1)) > 16 else m.group(0), fmt)


# ---- classification ---------------------------------------------------------------------------
# (kind, category, severity, meaning) per class; the rules below pick one per message, the first
# that matches (the message's format, and the file where the path pattern is given)
AREAS = (  # the part of DCGM a message comes from, named in the default meaning
    (r"^hostengine/", "nv-hostengine's start-up (its options, its socket, its service)"),
    (r"^common/transport/|DcgmIpc|DcgmClientHandler|DcgmApi|ClientHandler", "its client connections "
     "(dcgmi, dcgm-exporter, other DCGM API callers) and their requests"),
    (r"CacheManager|DcgmGpmManager|DcgmFieldGroup|DcgmWatcher|FieldCollection|DcgmFv", "its field cache (the "
     "values it samples and the watches clients set)"),
    (r"DcgmGroupManager|DcgmGroup", "its GPU groups (set up by its callers)"),
    (r"^modules/(\w+)/", None),   # DCGM's module of that name
    (r"^nvvs/plugin_src/(\w+)/", None),   # a plugin of the diagnostic
    (r"^nvvs/", "the diagnostic's (nvvs) own framework (its configuration, plugins, child processes)"),
    (r"ChildProcess|HangDetect|DcgmThread|TaskRunner|DcgmMutex|Semaphore", "its threads and child processes"),
    (r".", "its own work"),
)
MODULE_NAMES = {"nvswitch": "NvSwitch", "sysmon": "system monitor (Sysmon)", "profiling": "profiling",
                "health": "health-watch", "policy": "policy", "config": "configuration", "diag": "diagnostic",
                "introspect": "introspection", "vgpu": "vGPU", "mndiag": "multi-node diagnostic", "core": "core"}

OWN = ("logged_error", "unknown", "info",
       "DCGM's own work failed, in %s: the monitor's own trouble, not a GPU's state (nvidia-smi and the kernel's "
       "Xid lines say the GPUs' health).")
NVSWITCH_ABSENT = ("logged_error", "unknown", "info",
                   "DCGM's NvSwitch module found no NVSwitch to watch, or could not load its switch library (NSCQ: "
                   "libnvidia-nscq; NVSDM on newer systems): expected on a node without NVSwitches. On an HGX / "
                   "NVSwitch node, check that Fabric Manager runs and that libnvidia-nscq is installed and matches "
                   "the driver. The GPUs are not its subject.")
NVSWITCH_POLL = ("logged_error", "unknown", "warning",
                 "DCGM's NvSwitch module could not read the NVSwitches' status, link states or fatal errors (through "
                 "NSCQ): on an HGX / NVSwitch node the switches' health is not known from DCGM; check Fabric Manager "
                 "and that libnvidia-nscq matches the driver (nvidia-smi -q and the kernel's SXid lines say the "
                 "switches' state). 'No data is available' there is a node without NVSwitches.")
NVSWITCH_NO_DATA = ("logged_error", "unknown", "info",
                    "DCGM's NvSwitch module polls switches this node does not have ('No data is available'): "
                    "expected on a node without NVSwitches. On an HGX / NVSwitch node, check Fabric Manager and "
                    "libnvidia-nscq. The GPUs are not its subject.")
SYSMON = ("logged_error", "unknown", "info",
          "DCGM's system monitor (Sysmon: the power, temperature and identity of NVIDIA Grace CPUs) could not read "
          "a CPU file or does not start: expected on a node without a Grace CPU (x86). Nothing of the GPUs.")
MODULE_NOT_LOADED = ("logged_error", "unknown", "info",
                     "nv-hostengine did not load one of its modules (the number: %s): that DCGM feature is "
                     "unavailable, the host engine goes on. A module for hardware this node lacks (Sysmon without "
                     "a Grace CPU, NvSwitch without NVSwitches) refuses to start: expected there. The GPUs are not "
                     "its subject.")
GPU_EVENT = ("logged_error", "unknown", "warning",
             "DCGM saw a GPU event (an Xid, error counts, a policy or health-watch violation, a GPU it lost): the "
             "GPU's own evidence (the kernel's Xid lines, nvidia-smi -q) says which part and how serious.")
GPU_FAULT = ("logged_gpu_error", "gpu_hardware", "warning",
             "DCGM reports a fault of the GPU's hardware (uncorrectable ECC errors, pages past the retirement "
             "limit, unrepairable memory, an uncontained error, miscompares of its memory tests): confirm it with "
             "nvidia-smi -q and the kernel's Xid lines.")
INSTALL = ("logged_driver_error", "driver", "warning",
           "DCGM could not start one of its own programs (a diagnostic plugin's helper built for one CUDA major, "
           "such as plugins/cuda13/..., or nvvs itself): its packages for the driver's CUDA version are missing or "
           "DCGM is installed incompletely, so the test it ran failed without testing the GPU. Install the "
           "datacenter-gpu-manager packages that match the driver's CUDA version; not a GPU fault.")
DRIVER = ("logged_driver_error", "driver", "warning",
          "DCGM could not use the NVIDIA driver: NVML (libnvidia-ml) did not load or initialise, the driver's "
          "version could not be read or is not one this DCGM supports, or a driver call timed out. Check that the "
          "driver is loaded (nvidia-smi) and that DCGM's package matches the driver.")

RULES = (
    # --- what a message's words could be mistaken for: DCGM's own bookkeeping about the fields
    # it watches (an Xid, ECC, NVLink field not watched, a sample not read, a check skipped)
    (r"^Env variable __DCGM|Skipping XID check|^Ignoring XID|^Not watched for|not watched for gpuId|Skipping this "
     r"check|^Get latest sample of|^Unable to retrieve|from cache|^Failed to (?:get|read) (?!(?:CUDA )?driver "
     r"version)|^Got error %s from Monitor|Arch detection failed|kmsg|KMSG|Kmsg",
     None, "own_if_not_event"),
    # --- a GPU's state, as DCGM's policy manager, health watches and caches saw it
    (r"new ECC double-bit errors|has > 0 ECC double-bit errors|exceeds the max retired pages count|uncontained "
     r"error|^Unrepairable memory \(|miscompare\(s\) on loop|miscompares, but error log|errors found in block",
     None, "gpu_fault"),
    (r"\bXID\b.*\b(?:detected|hit|error)\b|[Dd]evastating XID|\bhit (?:fatal )?XID|subsystem XID|^GPU %s is "
     r"lost|^A lost GPU|violated (?:thermal|power) settings|new NVLink .*errors|has > 0 Nvlink|PCIe replays|"
     r"^Detected a %s in health system|fewer operating NvLinks than the test expected", None, "gpu_event"),
    # --- the driver: NVML not loaded or not initialised, the driver's version, a driver timeout
    (r"Failed to initialize NVML(?::|$)|^Cannot load NVML|NVML isn't loaded|without NVML loaded|^nvmlInit\w* "
     r"returned|^nvmlSystemGetDriverVersion returned|incompatible driver version|unsupported Cuda version|while "
     r"getting driver version|^Failed to (?:get|parse) (?:CUDA )?driver version|^Driver version %s is not in the "
     r"expected format|detected driver timeout|^Failed to (?:process )?attach driver|it may lack of driver|Ensure "
     r"driver version matches NSCQ version", None, "driver"),
    # --- a module for hardware the node lacks: the NvSwitch module's polls, its switch libraries
    (r"^Read(?:NvSwitchStatus|LinkStates|NvSwitchFatalErrors)AllSwitches\(\) returned|^Could not read (?:NvSwitch|"
     r"Switch) status|^Could not read (?:Switch fatal errors|NvLink states)", None, "nvswitch_poll"),
    (r"Could not load NSCQ|AttachToNscq\(\)|Could not initialize NSCQ|Could not create NSCQ session|AttachNvSwitches "
     r"returned|Not populating NvSwitches|Could not load NVSDM|Not attached to NVSDM|AttachToNvsdm|"
     r"AttachNvsdmDevices|InitNvsdmDevice failed|Could not initialize switch manager|Could not query NvSwitches|"
     r"Not attached to NvSwitches", None, "nvswitch_absent"),
    (r"^Could not exec '%s'", None, "install"),
    (r".", r"^modules/sysmon/", "sysmon"),
    (r"soc_id|CPU Vendor|Incompatible hardware vendor|[Ss]ysmon", None, "sysmon"),
    (r"^Failed to load module|^Skipping loading of module|module %s cannot be loaded|exception occured when creating "
     r"module|due to the module not being loaded", None, "module_not_loaded"),
    (r".", None, "own"),
)
# a message of the first rule that is still an event of the GPU (DCGM read an Xid in the kernel's log)
_EVENT_TOO = re.compile(r"\bXID %s detected|detected XID error in /dev/kmsg")


def module_names(structs):
    """'0 Core, 1 NvSwitch, ...' of dcgmModuleId_t (dcgm_structs.h)."""
    found = re.findall(r"DcgmModuleId(\w+)\s*=\s*(\d+),", structs)
    if len(found) < 5:
        raise SystemExit("dcgmModuleId_t not read from %s" % STRUCTS)
    return ", ".join("%s %s" % (n, name) for name, n in sorted(found, key=lambda x: int(x[1])) if int(n))


def area(path):
    for rx, what in AREAS:
        m = re.search(rx, path)
        if m:
            if what is None and rx.startswith("^modules"):
                return "its %s module" % MODULE_NAMES.get(m.group(1), m.group(1))
            if what is None:
                return "the diagnostic's %s plugin (nvvs)" % m.group(1)
            return what
    raise AssertionError(path)


def classify(fmt, path, modules):
    """(kind, category, severity, meaning) of one message."""
    for text_rx, path_rx, cls in RULES:
        if re.search(text_rx, fmt) and (path_rx is None or re.search(path_rx, path)):
            break
    if cls == "own_if_not_event":
        cls = "gpu_event" if _EVENT_TOO.search(fmt) else "own"
    if cls == "own":
        return OWN[:3] + (OWN[3] % area(path),)
    if cls == "module_not_loaded":
        return MODULE_NOT_LOADED[:3] + (MODULE_NOT_LOADED[3] % modules,)
    return {"gpu_fault": GPU_FAULT, "gpu_event": GPU_EVENT, "driver": DRIVER, "install": INSTALL, "nvswitch_poll": NVSWITCH_POLL,
            "nvswitch_absent": NVSWITCH_ABSENT, "sysmon": SYSMON}[cls]


def no_data_text(src, rev):
    """errorString(DCGM_ST_NO_DATA): what the NvSwitch polls print on a node without NVSwitches."""
    have = set(common.ls_files(src, rev, *(p.rsplit("/", 1)[0] for p in ERRORS)))
    text = common.show(src, rev, next(p for p in ERRORS if p in have))
    m = re.search(r"case DCGM_ST_NO_DATA:\s*return \"([^\"]+)\";", text)
    if not m:
        raise SystemExit("DCGM_ST_NO_DATA's string not found in %s" % ERRORS)
    return m.group(1)


# ---- reading a release ------------------------------------------------------------------------
def messages(src, commit, dropped):
    """[(path, line, format, level, value arguments)] of one release, in path order; what is left
    out is counted in ``dropped`` {reason: count}."""
    out = []
    for path in common.ls_files(src, commit, *DIRS):
        if not path.endswith(EXTS):
            continue
        if is_test(path):
            dropped["test code (files)"] = dropped.get("test code (files)", 0) + 1
            continue
        text = common.show(src, commit, path)
        for off, level, style, fmt, values in calls(text):
            if level == BELOW:
                dropped[BELOW] = dropped.get(BELOW, 0) + 1
                continue
            if fmt is None:
                dropped["message not a literal"] = dropped.get("message not a literal", 0) + 1
                continue
            if style == "printf":
                fmt = printf_wide(fmt)
            if not vocab.matchable(fmt):
                dropped["too little literal text"] = dropped.get("too little literal text", 0) + 1
                continue
            out.append((path, common.line_of(text, off), fmt, level, values))
    return out


def build(src, commit, older, known_elsewhere):
    """-> (rows, dropped {reason: count}, kept {release: rows})."""
    modules = module_names(common.show(src, commit, STRUCTS))
    rows, dropped, kept, seen = [], {}, {}, set(known_elsewhere)
    for rev in (commit,) + tuple(older):
        at = "" if rev == commit else "@" + rev
        no_data = no_data_text(src, rev)
        n, here = 0, set()
        for path, line, fmt, level, values in messages(src, rev, dropped):
            key = vocab.compile_format(fmt)[0]
            if key in known_elsewhere:
                dropped["in dcgm.py (gen_dcgm.py)"] = dropped.get("in dcgm.py (gen_dcgm.py)", 0) + 1
                continue
            if key in seen or key in here:
                why = "printed alike at another place" if key in here else "worded as a newer release words it"
                dropped[why] = dropped.get(why, 0) + 1
                here.add(key)
                continue
            seen.add(key)
            here.add(key)
            cls = classify(fmt, path, modules)
            common.check_class(cls[0], cls[1], cls[2], KINDS)
            rows.append((path + at, line, fmt) + cls)
            n += 1
            # a NvSwitch poll that prints the DCGM return it got: 'No data is available' is a node without
            # NVSwitches (the poll's other returns stay the poll's warning)
            if cls is NVSWITCH_POLL and values and "errorString(" in values[-1] and fmt.count("%s") == 1:
                rows.append((path + at, line, fmt.replace("%s", no_data)) + NVSWITCH_NO_DATA)
                n += 1
        kept[rev] = n
    return rows, dropped, kept


def dcgm_table_keys():
    """The literal fragments of every row dcgm.py (gen_dcgm.py) holds: its nv-hostengine lines are
    not repeated here."""
    from gpu_runbook.vocab import dcgm
    return set(vocab.compile_format(r[2])[0] for r in dcgm.ROWS)


def templates(rows):
    """The line nv-hostengine prints for each directory the rows come from (a row's file is
    printed whole: the formatter prints __FILE__, here under NVIDIA's build directory)."""
    dirs = sorted(set(r[0].rsplit("/", 1)[0] + "/" for r in rows), key=lambda d: (-len(d), d))
    out = [(d, "2026-12-02 07:10:01.000 ERROR [4242:4243] {message} [/workspaces/dcgm/%s{file}:{line}] [Function]" % d)
           for d in dirs]
    return tuple(out) + (("", "2026-12-02 07:10:01.000 ERROR [4242:4243] {message} [/workspaces/dcgm/{file}:{line}] "
                              "[Function]"),)


# the build directories NVIDIA's packages print in each line's source path ('/workspaces/dcgm-rel_dcgm_3_3-
# postmerge/', '/builds/dcgm/dcgm/'), and the source directories of a build elsewhere
MARKERS = ("/workspaces/dcgm", "/builds/dcgm/", "/dcgmlib/src/", "/nvvs/src/", "/nvvs/plugin_src/", "/nvvs/include/",
           "/hostengine/src/", "/modules/nvswitch/", "/modules/sysmon/", "/modules/health/", "/modules/policy/",
           "/modules/diag/", "/modules/profiling/", "/modules/config/", "/modules/introspect/", "/modules/mndiag/",
           "/modules/DcgmModule", "/common/transport/", "/common/DcgmLogging",
           # how DCGM logs what a child process printed (modules/diag/DcgmDiagManager.cpp, nvvs/plugin_src/pcie/
           # PcieMain.cpp, nvvs/src/Plugin.cpp): a debug line, whose source path a paste often lacks
           "External command stdout: ", "External command stderr: ")

DOC = __doc__.split("What is read:", 1)[1].split("Dropped, and counted", 1)[0]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", required=True, help="NVIDIA/DCGM: a bare mirror or a clone")
    ap.add_argument("--rev", default=PIN, help="tag, branch or commit (default %s)" % PIN)
    ap.add_argument("--dump", action="store_true", help="print the rows' classes and what was dropped, by reason")
    args = ap.parse_args(argv)
    commit = common.resolve(args.src, args.rev)
    subject = common.git(args.src, "log", "-1", "--format=%s", commit).strip()
    m = re.match(r"DCGM (\d[\w.]*)", subject)
    version = "%s (%s)" % (m.group(1), commit[:12]) if m else commit[:12]
    older = tuple(common.resolve(args.src, t) and t for t in OLDER)
    rows, dropped, kept = build(args.src, commit, older, dcgm_table_keys())
    tmpl = templates(rows)
    for r in rows:  # every matchable row, printed, holds a marker (vocab/__init__.py's contract)
        line = next(t for p, t in tmpl if r[0].startswith(p)).replace("{file}", r[0].rsplit("/", 1)[-1]) \
            .replace("{message}", vocab.instantiate(r[2]))
        if not any(mk in line for mk in MARKERS):
            raise SystemExit("no marker in %r" % line)
    classes = {}
    for r in rows:
        classes["%s/%s/%s" % (r[3], r[4], r[5])] = classes.get("%s/%s/%s" % (r[3], r[4], r[5]), 0) + 1
    if args.dump:
        for r in sorted(rows):
            print("%s:%d\t%s/%s/%s\t%r" % (r[0], r[1], r[3], r[4], r[5], r[2]))
        for rev in (commit,) + older:
            print("KEPT %s: %d rows" % (rev if rev != commit else version, kept[rev]))
        for k, v in sorted(dropped.items()):
            print("DROPPED %s: %d" % (k, v))
        for k, v in sorted(classes.items()):
            print("CLASS %s: %d" % (k, v))
        return
    meta = {"EMITTER": "DCGM", "PROJECT": "NVIDIA DCGM (nv-hostengine and nvvs logs)", "VERSION": version,
            "COMMIT": commit, "LICENCE": LICENCE, "ORIGIN": ORIGIN, "GENERATOR": GENERATOR}
    doc = ("What is read:" + DOC + "Rows: %s. Older releases read: %s (a row is added where the wording differs; "
           "its file 'path@tag').\nLeft out: %s.\nClassification (the generator's RULES): %s.\n" % (
               ", ".join("%s %d" % (rev if rev != commit else "pin", kept[rev]) for rev in (commit,) + older),
               ", ".join(older), "; ".join("%s %d" % kv for kv in sorted(dropped.items())),
               "; ".join("%s %d" % kv for kv in sorted(classes.items()))))
    path = common.write_table("dcgmlog", meta, MARKERS, tmpl, rows, doc=doc)
    print("%s: %d rows" % (path, len(set(rows))))


if __name__ == "__main__":
    main()
