#!/usr/bin/env python3
"""Generate module_utils/gpu_runbook/vocab/nhc.py: the messages LBNL Node Health Check (NHC)
prints when a node fails a check, read from NHC's own source at a pinned tag.

Usage (from the repository root)::

    # the source: a clone or bare mirror of https://github.com/mej/nhc
    git clone --bare https://github.com/mej/nhc.git /tmp/nhc.git
    .venv/bin/python tests/tools/vocab/gen_nhc.py --src /tmp/nhc.git [--rev 1.4.3]

``--rev`` defaults to the pin, tag 1.4.3 (d534d41db423, 2021-12-21, the latest release). The
``dev`` branch (7d9cec9, 2023-09-20) adds no GPU or InfiniBand check (it refactors the
hardware checks' data gathering), so the release is read. The output is deterministic.

What is read (ROWS):

- every ``die N "..."`` in ``scripts/*.nhc`` and ``nhc``: the failure message of a check;
- the messages a check builds first and dies with (``MSG="..."``, ``UNAUTH_MSG=``,
  ``KSWAPD_MSG=``: their first assignment, the parts appended later are left out);
- ``nhc``'s own log lines that are not debug output (watchdog, start/finish);
- the resource-manager helpers' "Marking ... offline/online" lines (helpers/node-mark-*).

A message is a bash string: ``$VAR``, ``${...}``, ``$(...)``, ``$((...))`` become ``%s``,
except ``$FUNCNAME`` (and ``${FUNCNAME[0]}``), which bash sets to the enclosing function's
name: it is written as that name ("check_hw_ib:  No IB port%s is %s (%s%s).").
"""

import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from common import ls_files, resolve, show, write_table  # noqa: E402

PIN = "1.4.3"
GENERATOR = "tests/tools/vocab/gen_nhc.py"
ORIGIN = "https://github.com/mej/nhc"
LICENCE = "BSD-3-Clause-style LBNL licence (LICENSE; Copyright The Regents of the University of California)"

# die() (nhc:48-84) writes "ERROR:  $NAME:  Health check failed:  $*" to the log (NAME is "nhc"),
# "Health check failed:  $*" to syslog (logger -t nhc[pid]), and with MARK_OFFLINE the resource
# manager's note "NHC: $*" (helpers/node-mark-offline: Slurm Reason="NHC: ...", pbsnodes -N)
TEMPLATES = (
    ("helpers/", "{message}"),
    ("", "ERROR:  nhc:  Health check failed:  {message}"),
)
MARKERS = ("Health check failed", "NHC", "Node Health Check")

# ---------------------------------------------------------------------------------------------
# classification: (file regex, function regex, message regex, kind, severity, meaning); first wins

NODE, ERR = "logged_node_failure", "logged_error"
CONFIG_MEANING = ("NHC's own configuration is wrong (a check's syntax or options): the node was marked "
                  "offline by a misconfigured check, not by a fault")
RULES = (
    # NHC configuration errors: not the node's fault
    ("", "", r"Syntax error|Invalid option|requires an argument|No target\(s\) given|No match criteria|"
     r"requires a supported resource manager|External match check command|Invalid/unsupported operator|"
     r"Missing parameters|exceeds NHC timeout|No command specified|Unsupported additional arguments|"
     r"failed to terminate\.", ERR, "warning", CONFIG_MEANING),
    # GPU checks: nvidia-smi's exit codes (csc_nvidia_smi.nhc) and nvidia-healthmon (lbnl_nv.nhc)
    ("scripts/csc_nvidia_smi.nhc", "", r"Permission denied", "nvml_permission", "warning",
     "nvidia-smi (run by NHC) lacked the permission to query the GPUs: GPU health was not checked"),
    ("scripts/csc_nvidia_smi.nhc", "", r"Power cables not attached", "gpu_insufficient_power", "critical",
     "nvidia-smi exit code 4: a GPU's external power cables are not properly attached"),
    ("scripts/csc_nvidia_smi.nhc", "", r"Invalid argument or flag", ERR, "warning", CONFIG_MEANING),
    ("scripts/csc_nvidia_smi.nhc", "", r"NVIDIA driver not loaded|NVML shared library", "logged_driver_error",
     "critical", "the NVIDIA driver or its NVML library is missing: no GPU can be used on this node"),
    ("scripts/csc_nvidia_smi.nhc", "", r"fallen off the bus", "gpu_fallen_off_bus", "critical",
     "nvidia-smi exit code 15: a GPU fell off the bus or is otherwise inaccessible"),
    ("scripts/csc_nvidia_smi.nhc", "", r"Interrupt issue|InfoROM is corrupted", "logged_gpu_error", "critical",
     "nvidia-smi reports a GPU hardware problem (interrupts, or a corrupted InfoROM)"),
    ("scripts/csc_nvidia_smi.nhc", "", r"", "nvidia_smi_failed", "warning",
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
    ("^nhc$", "", r"Running check|Detached mode -- pending checks", "benign", "ok",
     "NHC's progress (verbose mode) or a detached run whose results are not in yet"),
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
_RULES = [(re.compile(f), re.compile(fn), re.compile(m), k, s, mean) for f, fn, m, k, s, mean in RULES]
CATEGORY = {"logged_node_failure": "unknown", "logged_error": "unknown", "nvml_permission": "unknown",
            "nvidia_smi_failed": "unknown", "gpu_insufficient_power": "gpu_hardware",
            "gpu_fallen_off_bus": "gpu_hardware", "logged_gpu_error": "gpu_hardware",
            "logged_driver_error": "driver", "logged_ib_error": "ib_network", "host_mce_corrected": "unknown",
            "host_mce_uncorrected": "unknown", "logged_memory_error": "memory_leak", "benign": "healthy"}


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


def bash_format(body, func):
    """The body of a double-quoted bash string -> a printf-style format (see the module doc)."""
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
                out.append(func if func and expr in ("FUNCNAME", "FUNCNAME[0]") else "%s")
                i = j
            else:
                m = re.match(r"\$([A-Za-z_]\w*|[0-9*@#?$!-])", body[i:])
                if not m:
                    out.append("$")
                    i += 1
                    continue
                out.append(func if func and m.group(1) == "FUNCNAME" else "%s")
                i += m.end()
        else:
            out.append(c)
            i += 1
    return "".join(out)


_DQ = r'"((?:[^"\\]|\\.)*)"'
DIE = re.compile(r"(?<![\w-])die\s+\d+\s+" + _DQ)
MSG_SET = re.compile(r"(?:^|[\s;])(?:local\s+)?(\w*MSG)=" + _DQ)
LOG = re.compile(r"^\s*(?:log|syslog|vlog)\s+" + _DQ)
ECHO = re.compile(r"\becho\s+" + _DQ)
FUNC = re.compile(r"^\s*(?:function\s+(\w+)\s*(?:\(\))?|(\w+)\s*\(\))\s*\{?\s*$")


def messages(path, text):
    """-> [(line, format, function)] of one file."""
    out, func, in_die = [], "", False
    for n, line in enumerate(text.splitlines(), 1):
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
        found = []
        if path.startswith("helpers/"):
            found = [b for b in ECHO.findall(line) if "Marking" in b]
        else:
            found = DIE.findall(line)
            for name, body in MSG_SET.findall(line):
                if body and not body.startswith("$" + name):
                    found.append(body)
            if path == "nhc" and not in_die:
                found += [b for b in LOG.findall(line) if re.search(r"[A-Za-z]{4}", re.sub(r"\$\w+", "", b))]
        for body in found:
            fmt = bash_format(body, func)
            if path.startswith("helpers/"):
                # the note's leader: "NHC:" (LEADER; OLD_NOTE_LEADER is "NHC:" where a node is put online)
                fmt = fmt.replace("%s %s\"", "NHC: %s\"").replace("offline:  %s %s", "offline:  NHC: %s") \
                    .replace("(%s %s)", "(NHC: %s)")
            if fmt.strip(" %s.:") == "":
                continue  # die 1 "$MSG" and the like: the message is the MSG= row
            out.append((n, fmt, func))
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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", required=True, help="a clone or bare mirror of github.com/mej/nhc")
    ap.add_argument("--rev", default=PIN)
    args = ap.parse_args(argv)
    commit = resolve(args.src, args.rev)
    paths = [p for p in ls_files(args.src, commit, "scripts", "nhc", "helpers")
             if p == "nhc" or re.fullmatch(r"scripts/\w+\.nhc", p) or p in ("helpers/node-mark-offline",
                                                                             "helpers/node-mark-online")]
    rows = []
    for path in sorted(paths):
        for line, fmt, func in messages(path, show(args.src, commit, path)):
            kind, sev, mean = classify(path, func, fmt)
            if kind == "benign":
                rows.append((path, line, fmt, kind, "healthy", "ok", mean))
            else:
                rows.append((path, line, fmt, kind, CATEGORY[kind], sev, mean))
    meta = {"EMITTER": "NHC", "PROJECT": "LBNL Node Health Check (NHC)", "VERSION": args.rev, "COMMIT": commit,
            "LICENCE": LICENCE, "ORIGIN": ORIGIN, "GENERATOR": GENERATOR}
    path = write_table("nhc", meta, MARKERS, TEMPLATES, rows, doc=DOC)
    print("%s: %d rows" % (path, len(set(rows))))


if __name__ == "__main__":
    main()
