# SPDX-License-Identifier: Apache-2.0
"""What a value from outside (an option, an inventory name, a job id) may be before it reaches
a command line, a file name or a Slurm reason. Each check answers None when the value is
fine, else one sentence naming the option: a module refuses with it before any command runs.

Whole-string matches only (``re.fullmatch``: ``$`` alone would let a trailing newline
through), and a value that could be read as an option never starts with '-'."""

import re
import unicodedata

# (pattern, what it must be) per kind of value
_KINDS = {
    "node": (r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}",
             "one Slurm node name (letters, digits, '.', '_', '-'; no hostlist, space or slash)"),
    # names of at most 128 between commas (disjoint classes: linear to match)
    "hostlist": (r"[A-Za-z0-9][A-Za-z0-9._\[\]-]{0,127}(?:[, ]+[A-Za-z0-9][A-Za-z0-9._\[\]-]{0,127})*",
                 "a Slurm hostlist such as gpu-r3-n[01-04],gpu-r4-n07"),
    "job_id": (r"[0-9]{1,12}(?:_[0-9]{1,12}|\+[0-9]{1,6})?",
               "a Slurm job id (12345, an array task 12345_7 or a het component 12345+1)"),
    "incident": (r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}",
                 "an incident id (letters, digits and _.:-, starting with a letter or digit, at most 64)"),
    "interface": (r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,14}", "a network interface name such as ib0 or enp65s0f0"),
    "hca": (r"[A-Za-z0-9_]{1,64}", "an HCA name such as mlx5_0"),
    "port": (r"[0-9]{1,3}", "an IB port number such as 1"),
    "ib_port": (r"[A-Za-z0-9_]{1,64}(?:/[0-9]{1,3})?", "an IB port as mlx5_N/1 or an HCA name such as mlx5_0"),
    "pci": (r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]", "a PCI bus id such as 0000:3b:00.0"),
    "gpu_index": (r"[0-9]{1,3}", "a GPU index such as 3"),
    "unit": (r"[A-Za-z0-9][A-Za-z0-9@._:-]{0,127}",
             "a systemd unit name (letters, digits and @._:-, starting with a letter or digit)"),
    "file_name": (r"[A-Za-z0-9][A-Za-z0-9_.:@+-]{0,127}",
                  "a name for a file (letters, digits and _.:@+-, starting with a letter or digit)"),
}
_COMPILED = dict((k, re.compile(p)) for k, (p, _w) in _KINDS.items())
# Words Slurm's clients read as something other than a node (case-insensitive, as Slurm compares
# them): `scontrol reboot ALL` and `NodeName=ALL` mean every node, DEFAULT is slurm.conf's defaults
# line, ASAP and the node states are scontrol's own arguments (scontrol.1: reboot, update State=;
# slurm.h node_state_string). A node may not be called one of them here.
SLURM_KEYWORDS = frozenset((
    "ALL", "DEFAULT", "ASAP", "NONE", "NULL", "UNKNOWN", "DOWN", "IDLE", "ALLOCATED", "ALLOC",
    "MIXED", "MIX", "FUTURE", "ERROR", "DRAIN", "DRAINED", "DRAINING", "FAIL", "FAILING", "RESUME",
    "UNDRAIN", "COMPLETING", "MAINT", "MAINTENANCE", "REBOOT", "REBOOT_REQUESTED", "REBOOT_ISSUED",
    "POWER_DOWN", "POWER_UP", "POWERED_DOWN", "POWERING_UP", "POWERING_DOWN", "POWER_DOWN_ASAP",
    "POWER_DOWN_FORCE", "NO_RESPOND", "NOT_RESPONDING", "PLANNED", "RESERVED", "CLOUD", "DYNAMIC_FUTURE",
    "DYNAMIC_NORM", "INVALID_REG", "INVAL", "PERFCTRS", "CANCEL_REBOOT", "BLOCKED", "EXTERNAL"))
MAX_PATH = 4096
MAX_TEXT = 1024


def shown(value, cap=60):
    """The value for a message: escaped (no control character reaches a terminal) and short."""
    text = repr(value)
    return text if len(text) <= cap else text[:cap] + "...'"


def check(kind, option, value):
    """None when ``value`` is a ``kind`` (see _KINDS), else why not, naming ``option``."""
    if isinstance(value, str) and _COMPILED[kind].fullmatch(value) and ".." not in value:
        if kind == "node" and value.upper() in SLURM_KEYWORDS:
            return "%s %s is a Slurm keyword (scontrol reads it as more than one node), not a node name" % (
                option, shown(value))
        return None
    return "%s %s is not %s" % (option, shown(value), _KINDS[kind][1])


def control_characters(value):
    """The control and format characters in ``value`` (a newline, ESC, NUL, a C1 control, a
    bidi override), which change what a log line or a terminal shows."""
    return sorted(set(c for c in value if unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co", "Cn")))


def check_text(option, value, cap=MAX_TEXT, one_line=True):
    """Free text (a Slurm reason): printable, at most ``cap`` characters; tabs and newlines
    allowed only when not ``one_line``."""
    if not isinstance(value, str):
        return "%s must be text, not %s" % (option, type(value).__name__)
    if len(value) > cap:
        return "%s is %d characters; at most %d" % (option, len(value), cap)
    bad = [c for c in control_characters(value) if one_line or c not in "\t\n"]
    if bad:
        return "%s holds control characters (%s): give printable text" % (
            option, ", ".join("U+%04X" % ord(c) for c in bad[:5]))
    return None


def check_path(option, value):
    """A path given to a module: no NUL or other control character, bounded."""
    if not isinstance(value, str) or not value:
        return "%s must be a path" % option
    if len(value) > MAX_PATH:
        return "%s is %d characters long; a path is at most %d" % (option, len(value), MAX_PATH)
    if control_characters(value):
        return "%s %s holds control characters: not a path this tool reads or writes" % (option, shown(value))
    return None


def problems(params, kinds):
    """Every refusal for ``params`` by ``kinds`` ({option: kind | "path" | "text"}); an unset or
    empty option is not checked (the module's own defaults and required= cover it); a list is
    checked element by element, and an empty element is refused (it would be an empty argv word)."""
    out = []
    for option, kind in kinds.items():
        value = params.get(option)
        if value is None or value == "":
            continue
        for v in value if isinstance(value, (list, tuple)) else [value]:
            if kind == "path":
                why = check_path(option, v)
            elif kind == "text":
                why = check_text(option, v)
            else:
                why = check(kind, option, v)
            if why:
                out.append(why)
                break
    return out
