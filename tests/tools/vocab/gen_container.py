#!/usr/bin/env python3
"""Generate module_utils/gpu_runbook/vocab/container.py: the messages the NVIDIA container stack
prints when a GPU container cannot be set up (Docker ``--gpus`` / ``--runtime=nvidia``,
Kubernetes with the NVIDIA device plugin or GPU operator, Slurm's pyxis/enroot), read from
NVIDIA/libnvidia-container's own source (``nvidia-container-cli`` and the library under it) at a
pinned commit, and from NVIDIA/nvidia-container-toolkit's (the runtime, its hooks) at a pinned
tag.

Usage (from the repository root)::

    # the sources: clones or bare mirrors of https://github.com/NVIDIA/libnvidia-container and
    # https://github.com/NVIDIA/nvidia-container-toolkit (any clone that holds the pinned commits)
    git clone --bare https://github.com/NVIDIA/libnvidia-container.git /tmp/libnvidia-container.git
    git clone --bare https://github.com/NVIDIA/nvidia-container-toolkit.git /tmp/nvidia-container-toolkit.git
    .venv/bin/python tests/tools/vocab/gen_container.py --src /tmp/libnvidia-container.git \\
        [--toolkit-src /tmp/nvidia-container-toolkit.git] [--rev <commit>] [--toolkit-rev <tag>]
    .venv/bin/python tests/tools/vocab/write_index.py   # once the table is registered

``--rev`` defaults to the pin, commit 63d366ee3b41 of libnvidia-container: the commit NVIDIA
Container Toolkit's tags v1.17.0, v1.17.1 and v1.17.2 vendor as ``third_party/libnvidia-container``
(the generator checks this against the toolkit source: TOOLKIT_VENDORS). It is the newest
release commit of libnvidia-container whose source was at hand when the table was made (the
upstream repository, with its packages branch, was too large to copy; the forks at hand, e.g.
github.com/KevinLiangX/libnvidia-container, hold upstream's history to 2024-10-17, the pin and
every OLDER commit among it, by the same hashes); any clone of upstream holds them too, and the
generator reads newer commits as well (``--rev``), stopping where a literal it relies on
(REQUIRED) is gone.
``--toolkit-src`` defaults to ``nvidia-container-toolkit.git`` (or ``nvidia-container-toolkit``)
beside ``--src`` or, in a mirror tree laid out ``<dir>/<owner>+<name>/repo``, to
``<dir>/NVIDIA+nvidia-container-toolkit/repo``; the generator stops when none is there (a table
without the toolkit's rows is never written silently). ``--toolkit-rev`` defaults to TK_PIN,
tag v1.20.0 (the newest release). The output is deterministic.

How nvidia-container-cli reports an error (read from the source, checked by REQUIRED): the
command (src/cli/configure.c, info.c, list.c) calls the library and, when a call fails, prints
``warnx("<context> error: %s", libnvc.error(nvc))`` (or ``err.msg`` for its own helpers), so
stderr gets ``nvidia-container-cli: <context> error: <message>`` ("initialization",
"detection", "mount", "ldcache", "container", "requirement", "device", "permission", "input");
the container engine quotes it inside its own error, often followed by ``: unknown``. The
message is the last one the library set with ``error_set*`` (src/error_generic.c, src/error.c):
``error_setx(err, fmt, ...)`` gives ``fmt`` as printed, ``error_set`` (strerror),
``error_set_dl`` (dlerror), ``error_set_nvml`` (nvmlErrorString), ``error_set_elf`` and
``error_set_rpc`` give ``fmt: <reason>`` (the reason lower-cased from the last colon). A message
travels up the call chain unchanged, except where a caller wraps a local error
(``error_setx(err, "%s: %s", dev, ierr.msg)``) or drops it (an error object that is never read).

What is read (ROWS):

- libnvidia-container, src/**.c and .h (not src/nvcgo/vendor): every ``error_set*`` site (and
  the ``call_nvml`` macro's), composed with every CLI context its function reaches it from: the
  row is ``<context> error: <message>``, file and line of the message's own site. The call graph
  is by name (a function's calls, the callbacks it names, ``libnvc.X`` -> ``nvc_X``, an RPC call
  ``call_rpc(..., X_1)`` -> the server's ``X_1_svc``); the error object a call is given decides
  whether its messages travel up (the caller's own), are wrapped (a local ``ierr`` a wrapper
  quotes) or are dropped (a local error never quoted). Derived rows: ``call_rpc`` failures as
  ``<program> rpc error: <reason>`` (its program from the function's name, its reasons
  error_set_rpc's own texts, or any), a message of src/rpc.c that begins with the program's name
  once per program, ``xdlopen`` of a named library as ``load library failed: <library>: %s``.
- the CLI's contexts themselves (``initialization error: %s``, ...) and its other warnx/warn
  lines (warn adds ``: <strerror>``).
- the CLI's cgroup helper (src/nvcgo, Go): every ``fmt.Errorf``/``errors.New``/``C.CString(
  fmt.Sprintf(...))`` message of the exported function the C side called (by name), composed
  with the C wrapper that quotes it (``failed to add device rules: %s``) and that wrapper's
  contexts; file and line the Go site's.
- the debug log (``--debug`` / ``debug`` in config.toml, e.g. /var/log/nvidia-container-toolkit.log):
  every ``log_info/log_warn/log_err[f]`` line, printed ``<I|W|E>MMDD hh:mm:ss.us tid file:line]
  <message>`` (utils.c log_write); row file ``debug-log:<path>``, written only with
  READ_DEBUG_LOG (off: the readers take such a glog head off, and the file name with it).
- libnvidia-container's earlier releases (OLDER, v1.16.2 .. v1.0.7, newest first: the commits
  NVIDIA Container Toolkit's tags vendor from v1.6.0 on, libnvidia-container's own release
  commits before): the same CLI and debug-log messages; each one the pin words otherwise is a
  row with file ``<path>@<version>`` (``debug-log@<version>:<path>``) and the line at that
  release, once, at the newest release that has it (before 1.8 the driver helper's failure read
  ``driver error: <reason>``, as GPU-operator-era logs show it). A release the source lacks is
  skipped with a note.
- nvidia-container-toolkit (row file ``nvidia-container-toolkit:<path>``), the code that runs when
  a container is created (TK_DIRS: the legacy runtime hook, the runtime and its modifiers, the
  OCI and requirement packages, the mode detection, the CDI hooks): every ``fmt.Errorf``,
  ``errors.New``, ``log.Panic*``/``log.Printf`` and logger ``Errorf/Warningf/Infof`` (and their
  print forms), Go verbs written as ``%s`` (``%d``/``%x`` kept), ``Println`` operands joined by
  blanks; kept where the message is matchable and names the stack (TK_MARKERS): a generic Go
  message ("failed to open root: %s") would be read in any program's line.

In a format, adjacent literals and string macros are joined (the library's own ``#define``s,
glibc's ``_PATH_DEV``/``_PATH_VARRUN``/``_PATH_TMP``), every argument a printf conversion.
One row per format: the first site (by file and line) of a format reached from several.
Left out: messages with no literal text (``"%s"``), debug lines whose format is not a literal,
the toolkit's nvidia-ctk (an administrator's configuration tool) and older toolkit releases.

Classification: RULES (first match wins, on the row's source and its composed format; the M_*
texts are the meanings): the image's CUDA newer than the driver -> cuda_driver_too_old
critical; another NVIDIA_REQUIRE_* condition, NVML failures, the driver's libraries not
loadable, the driver helper's RPC failing, no GPU or an unknown GPU -> driver critical; the
driver's files and devices not readable (detection) and kernel modules not loadable -> driver
warning; mount, ldcache, cgroup, permission, container and input errors of the container set-up
and the toolkit's runtime/CDI/hook failures -> unknown warning (the node's container runtime
set-up); debug-log notes, routine skips of optional driver components and the toolkit's mode
notes -> benign.

``gen_container.py --dump --src <dir> [...]`` prints every row with its verdict (to review RULES).
"""

import argparse
import os
import re
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402

sys.path.insert(0, os.path.join(common.REPO, "module_utils"))
from gpu_runbook.taxonomy import KINDS  # noqa: E402
from gpu_runbook.vocab import matchable  # noqa: E402
from gpu_runbook.vocab import nvml  # noqa: E402  (generated: NVML's returns, classified, with provenance)

GENERATOR = "tests/tools/vocab/gen_container.py"
# libnvidia-container at the commit NVIDIA Container Toolkit v1.17.0 .. v1.17.2 vendor
PIN = "63d366ee3b4183513c310ac557bf31b05b83328f"
PIN_VERSION = "v1.17.0"
# toolkit tags that must vendor PIN as third_party/libnvidia-container (checked when the pin is read)
TOOLKIT_VENDORS = ("v1.17.0", "v1.17.1", "v1.17.2")
ORIGIN = "https://github.com/NVIDIA/libnvidia-container"
LICENCE = ("Apache-2.0 (LICENSE; NOTICE: Copyright (c) 2017-2018 NVIDIA CORPORATION, earlier under BSD-3-Clause; "
           "COPYING/COPYING.LESSER: GPL-3.0/LGPL-3.0 of elfutils' libelf where linked); NVIDIA Container Toolkit: "
           "Apache-2.0 (LICENSE)")
# earlier releases, newest first: (commit, version, how the commit is known to be that release).
# A message of theirs the pin words otherwise is a row too (file "path@version"). "toolkit": the
# commit NVIDIA Container Toolkit's tag of that version vendors (checked against the toolkit
# source); "bump": libnvidia-container's own release commit, whose subject names the version
# (checked). Before 1.6 the toolkit vendored no submodule.
OLDER = (
    ("921e2f3197385173cf8670342e96e98afe9b3dd3", "v1.16.2", "toolkit"),
    ("6c8f1df7fd32cea3280cf2a2c6e931c9b3132465", "v1.15.0", "toolkit"),
    ("1eb5a30a6ad0415550a9df632ac8832bf7e2bbba", "v1.14.3", "toolkit"),
    ("6f4aea0fca16aaff01bab2567adb34ec30847a0e", "v1.13.1", "toolkit"),
    ("7678e1af094d865441d0bc1b97c3e72d15fcab50", "v1.12.0", "toolkit"),
    ("c8f267be0bac1c654d59ad4ea5df907141149977", "v1.11.0", "toolkit"),
    ("395fd41701117121f1fd04ada01e1d7e006a37ae", "v1.10.0", "toolkit"),
    ("5e135c17d6dbae861ec343e9a8d3a0d2af758a4f", "v1.9.0", "toolkit"),
    ("abd4e14d8cb923e2a70b7dcfee55fbc16bffa353", "v1.8.1", "toolkit"),
    ("f37bb387ad05f6e501069d99e4135a97289faf1f", "v1.7.0", "toolkit"),
    ("dd2c49d6699e4d8529fbeaa58ee91554977b652e", "v1.6.0", "toolkit"),
    ("d1db62995003c4aef0148a8a4aff2553df0ea376", "v1.5.1", "bump"),
    ("5db61cf1b33fc4f553d2016bd0c625cdf4728f41", "v1.4.0", "bump"),
    ("5621068aacdbae589b58b9c09960ccca343f8b99", "v1.3.3", "bump"),
    ("d22237acaea94aa5ad5de70aac903534ed598819", "v1.2.0", "bump"),
    ("e5d6156aba457559979597c8e3d22c5d8d0622db", "v1.1.1", "bump"),
    ("48d33cc952bceb682457e1e063d0a3b7975e1d25", "v1.0.7", "bump"),
)
TK_PIN = "v1.20.0"
TK_ORIGIN = "https://github.com/NVIDIA/nvidia-container-toolkit"
TK = "nvidia-container-toolkit:"
DEBUG = "debug-log"  # row file "debug-log:<path>" (an earlier release's: "debug-log@<version>:<path>")
# The debug log's lines are left out of the table: their glog head ('I0101 ... dxcore.c:149] ') is
# taken off by the readers that read such heads (the job's, the node's), and with it the file name
# that told them from another program's; the CLI's own error (the rows kept) says what failed.
READ_DEBUG_LOG = False

# the toolkit's code that runs when a container is created
TK_DIRS = ("cmd/nvidia-container-runtime-hook/", "cmd/nvidia-container-runtime/", "cmd/nvidia-container-runtime.cdi/",
           "cmd/nvidia-container-runtime.legacy/", "cmd/nvidia-cdi-hook/", "internal/runtime/", "internal/modifier/",
           "internal/oci/", "internal/requirements/", "internal/info/")
# a toolkit message is kept when it names the stack (its own words, not a generic Go error)
TK_MARKERS = ("NVIDIA Container Runtime", "NVIDIA devices", "nvidia-container-cli", "CDI", "OCI spec", "CUDA compat",
              "CUDA Compat", "CUDA version", "CUDA Compute Capability", "ldcache", "ldconfig", "unsatisfied condition",
              "requirements not met", "Auto-detected mode", "requested mode", "MIG_", "prestart hook",
              "driver capabilit", "modifier")

# glibc's <paths.h> (the library's device and run paths are built on them)
SYSTEM_MACROS = {"_PATH_DEV": "/dev/", "_PATH_VARRUN": "/var/run/", "_PATH_TMP": "/tmp/"}

# literals the reading relies on: (path, literal); a missing one stops the generator
REQUIRED = (
    ("src/error_generic.c", 'asprintf(&err->msg, "%s: %s", msg, errmsg)'),
    ("src/error_generic.c", "str_lower(strrchr(err->msg, ':'))"),
    ("src/error.c", '"failed to process request"'),
    ("src/error.c", '"failed to perform handshake"'),
    ("src/xfuncs.h", '"load library failed"'),
    ("src/driver.c", '"nvml error"'),
    ("src/driver.c", ".nvml_path = SONAME_LIBNVML"),
    ("src/rpc.h", '"%s rpc error", (ctx)->prog.name'),
    ("src/utils.c", '"%c%s.%06ld %ld %s:%lu] "'),
    ("src/cli/dsl.c", '#define CUDA_REQUIRE_GREATER "cuda>="'),
    ("src/cli/dsl.c", '"unsatisfied condition: %s, please update your driver to a newer version, or use an earlier '
                      'cuda container"'),
    ("src/cli/configure.c", 'warnx("initialization error: %s", libnvc.error(nvc))'),
    ("src/cli/configure.c", 'warnx("requirement error: %s", err.msg)'),
    ("src/cli/configure.c", 'warnx("mount error: %s", libnvc.error(nvc))'),
    ("src/cli/configure.c", 'warnx("detection error: %s", libnvc.error(nvc))'),
    ("src/cli/libnvc.c", "libnvc.func = nvc_##func"),
)
TK_REQUIRED = (
    ("internal/info/auto.go", "Auto-detected mode as '%v'"),
    ("internal/requirements/constraints/binary.go", '"unsatisfied condition: %v (%v)"'),
    ("internal/modifier/cdi/registry.go", '"failed to inject CDI devices: %v"'),
)
# an xdlopen argument that is no literal, and the macro the source sets it to (checked: REQUIRED)
DL_ALIASES = {"ctx->nvml_path": "SONAME_LIBNVML"}

ERROR_SETTERS = {"error_set": 1, "error_setx": 1, "error_set_elf": 1, "error_set_dl": 1, "error_set_nvml": 3,
                 "error_set_rpc": 2}
# the call_rpc macro is read at its call sites (derived rows), never as a function
SPECIAL_MACROS = ("call_rpc",)

_C_LITERAL = r'"(?:[^"\\\n]|\\.)*"'
_CONV = re.compile(r"%[-+ #0']*(?:\*|\d+)?(?:\.(?:\*|\d+))?(?:hh|h|ll|l|j|z|t|L|q)?[diouxXeEfFgGaAcspnm%]")
_KEYWORDS = {"if", "while", "for", "switch", "return", "sizeof", "alignof", "defined", "do", "else", "case",
             "__attribute__", "__typeof__", "__extension__", "static_assert", "_Static_assert"}


class Msg(object):
    """A message as it leaves its site: its format and provenance."""
    __slots__ = ("fmt", "path", "line")

    def __init__(self, fmt, path, line):
        self.fmt, self.path, self.line = fmt, path, line

    def key(self):
        return (self.fmt, self.path, self.line)

    def __eq__(self, other):
        return self.key() == other.key()

    def __hash__(self):
        return hash(self.key())


def conversions(fmt):
    return [m for m in _CONV.finditer(fmt) if m.group(0) != "%%"]


def compose(outer, index, inner):
    """``outer`` with its ``index``-th conversion replaced by the text ``inner``."""
    convs = conversions(outer)
    if index is None or index >= len(convs):
        raise SystemExit("cannot compose %r at %r" % (outer, index))
    m = convs[index]
    return outer[:m.start()] + inner + outer[m.end():]


def has_literal(fmt):
    return bool(re.sub(r"%[a-z]+|%%|[\s:,.;()\[\]'\"-]", "", _CONV.sub("", fmt)))


# ---------------------------------------------------------------------------------------------
# libnvidia-container: C sources

class Func(object):
    __slots__ = ("path", "name", "start", "body", "is_macro")

    def __init__(self, path, name, start, body, is_macro=False):
        self.path, self.name, self.start, self.body, self.is_macro = path, name, start, body, is_macro

    @property
    def key(self):
        return (self.path, self.name)


class CSource(object):
    def __init__(self, src, rev):
        self.src, self.rev = src, rev
        paths = [p for p in common.ls_files(src, rev, "src") if re.search(r"\.[ch]$", p)
                 and not p.startswith("src/nvcgo/")]
        self.raw = dict((p, common.show(src, rev, p)) for p in paths)
        self.text = dict((p, common.blank_comments(t)) for p, t in self.raw.items())
        self.macros = self._string_macros()
        self.funcs = {}
        for p in sorted(self.text):
            self._read_functions(p)
        self.by_name = {}
        for f in self.funcs.values():
            self.by_name.setdefault(f.name, []).append(f)

    def _string_macros(self):
        """#define NAME <literals and macro names> -> its text (resolved), plus glibc's paths."""
        raw = {}
        for p in sorted(self.text):
            for m in re.finditer(r"^#define[ \t]+(\w+)[ \t]+((?:%s|\w+|[ \t])+)$" % _C_LITERAL, self.text[p], re.M):
                if '"' in m.group(2):
                    raw.setdefault(m.group(1), m.group(2).strip())
        out = dict(SYSTEM_MACROS)
        for _ in range(5):  # macros built on macros
            for name, expr in sorted(raw.items()):
                if all(n in out for n in re.findall(r"\b[A-Za-z_]\w*\b", re.sub(_C_LITERAL, " ", expr))):
                    out[name] = common.join_literals(expr, out)
        return out

    def _read_functions(self, path):
        text = self.text[path]
        for m in re.finditer(r"^([A-Za-z_]\w*)\s*\(", text, re.M):
            name = m.group(1)
            if name in _KEYWORDS:
                continue
            _args, end = common.call_args(text, m.end() - 1)
            rest = text[end + 1:end + 200]
            brace = re.match(r"\s*\{", rest)
            if not brace:
                continue
            open_pos = end + 1 + brace.end() - 1
            _a, close = common.call_args(text, open_pos)
            self.funcs[(path, name)] = Func(path, name, open_pos, text[open_pos:close + 1])
        # macros with a body that sets an error (call_nvml): pseudo-functions
        for m in re.finditer(r"^#define\s+(\w+)\(([^)]*)\)((?:.*\\\n)*.*)$", text, re.M):
            name, body = m.group(1), m.group(3)
            if name in SPECIAL_MACROS or not re.search(r"\berror_set\w*\s*\(", body):
                continue
            self.funcs[(path, name)] = Func(path, name, m.start(3), body.replace("\\\n", " \n"), is_macro=True)

    def line(self, func, offset):
        """The line of an offset in a function's (or macro's) body."""
        return common.line_of(self.text[func.path], func.start + offset)

    def resolve(self, name, path):
        """The definitions a call of ``name`` from a file reaches: the file's own, else every one."""
        defs = self.by_name.get(name, ())
        own = [f for f in defs if f.path == path]
        return own or list(defs)

    def fmt_of(self, expr):
        """A format argument: its literals and string macros joined; None when it is no literal."""
        if not re.match(r'\s*(?:"|[A-Z_][A-Z0-9_]*\b)', expr):
            return None
        text = common.join_literals(expr, self.macros)
        if text is None:
            return None
        # the whole argument must have been literals and macros
        rest = re.sub(_C_LITERAL, " ", expr)
        if any(w not in self.macros and w not in common.PRI_MACROS for w in re.findall(r"\b[A-Za-z_]\w*\b", rest)):
            return None
        return text


def blank_strings(text):
    """``text`` with the insides of its string literals blanked (offsets kept)."""
    return re.sub(_C_LITERAL, lambda m: '"' + " " * (len(m.group(0)) - 2) + '"', text)


def enclosing_condition(body, pos):
    """The condition of the ``if (...) {`` block around ``pos`` in ``body``; None when the
    innermost block is no if's (a function's body, a loop's)."""
    depth = 0
    i = pos
    while i > 0:
        i -= 1
        c = body[i]
        if c == "}":
            depth += 1
        elif c == "{":
            if depth == 0:
                break
            depth -= 1
    else:
        return None
    head = body[:i].rstrip()
    if not head.endswith(")"):
        return None
    depth, j = 0, len(head)
    while j > 0:
        j -= 1
        if head[j] == ")":
            depth += 1
        elif head[j] == "(":
            depth -= 1
            if depth == 0:
                break
    if re.search(r"\bif\s*$", head[:j]):
        return head[j + 1:-1]
    return None


class Reader(object):
    """The messages of libnvidia-container: leaves, the flow up the call graph, the CLI contexts."""

    def __init__(self, csrc, gosrc):
        self.c = csrc
        self.go = gosrc
        self.progs = self._rpc_programs()
        self.rpc_reasons = self._rpc_reasons()
        self.rpc_macro = self._rpc_macro()
        self.dl_fmt = self._xdlopen_format()
        self.leaves = {}     # func key -> [(channel var or None, Msg)]
        self.calls = {}      # func key -> [(callee key, channel var or None)]
        self.wrappers = {}   # func key -> {var: [(fmt, index, Msg site)]}
        self.notes = []
        for f in sorted(self.c.funcs.values(), key=lambda f: f.key):
            self._read(f)
        self.out = self._flow()

    # --- what the source says of its programs, reasons and library loads
    def _rpc_programs(self):
        """The RPC programs' names (``.name = "driver"``); none before 1.8, whose one RPC
        program was the driver's."""
        progs = set()
        for p, t in self.c.text.items():
            progs.update(re.findall(r'\.name\s*=\s*"(\w+)"', t))
        return sorted(progs)

    def _rpc_macro(self):
        """The call_rpc macro: (index of its RPC function parameter, error_set_rpc's format, the
        format's first value); None when the source has none."""
        for p in sorted(self.c.text):
            m = re.search(r"^#define\s+call_rpc\(([^)]*)\)((?:.*\\\n)*.*)$", self.c.text[p], re.M)
            if not m:
                continue
            params = [a.strip() for a in m.group(1).split(",")]
            body = m.group(2).replace("\\\n", " \n")
            fn = re.search(r"\b(\w+)\s*\(\s*\(ptr_t\)", body)
            setter = re.search(r"\berror_set_rpc\s*\(", body)
            if not fn or fn.group(1) not in params or not setter:
                raise SystemExit("%s: call_rpc no longer reads as before: the reading must be revised" % p)
            args, _end = common.call_args(body, setter.end() - 1)
            fmt = common.join_literals(args[2]) if len(args) > 2 else None
            if fmt is None:
                raise SystemExit("%s: call_rpc's error_set_rpc format is no literal" % p)
            return params.index(fn.group(1)), fmt, (args[3].strip() if len(args) > 3 else "")
        return None

    def _rpc_reasons(self):
        body = self.c.text["src/error.c"]
        m = re.search(r"error_set_rpc\s*\(.*?\n\}", body, re.S)
        return sorted(set(re.findall(r'errmsg\s*=\s*"([^"]+)"', m.group(0)))) if m else []

    def _xdlopen_format(self):
        f = self.c.resolve("xdlopen", "src/xfuncs.h")
        for func in f:
            m = re.search(r'error_set_dl\s*\(\s*err\s*,\s*("(?:[^"\\]|\\.)*")', func.body)
            if m:
                return common.join_literals(m.group(1))
        raise SystemExit("xdlopen's error_set_dl format not found in src/xfuncs.h")

    def per_program(self, fmt, values):
        """A message of src/rpc.c that names its RPC program first ("%s rpc ...",
        rpc->prog.name): once per program; any other message as it is."""
        convs = conversions(fmt)
        if values and values[0] == "rpc->prog.name" and convs and fmt[convs[0].end():].startswith(" rpc"):
            return [compose(fmt, 0, prog) for prog in self.progs]
        return [fmt]

    # --- one function
    def _read(self, f):
        body = f.body
        leaves, calls, wrappers = [], [], {}
        quoted = set(re.findall(r"\b(\w+)(?:\.|->)msg\b", body))
        setter_rx = re.compile(r"\b(%s)\s*\(" % "|".join(sorted(ERROR_SETTERS, key=len, reverse=True)))
        for m in setter_rx.finditer(body):
            args, _end = common.call_args(body, m.end() - 1)
            idx = ERROR_SETTERS[m.group(1)]
            if len(args) <= idx:
                continue
            fmt = self.c.fmt_of(args[idx])
            line = self.c.line(f, m.start())
            if fmt is None:
                self.notes.append("%s:%d: %s format is no literal: left out" % (f.path, line, m.group(1)))
                continue
            if m.group(1) != "error_setx":
                fmt += ": %s"  # error_vset: "<message>: <reason>"
            values = [a.strip() for a in args[idx + 1:]]
            site = Msg(fmt, f.path, line)
            channel = self._channel(args[0], quoted)
            # a wrapper: quotes a local error's message (ierr.msg) or the Go helper's (rerr)
            for vi, v in enumerate(values):
                w = re.fullmatch(r"(\w+)(?:\.|->)msg", v)
                if w and w.group(1) != "err":
                    wrappers.setdefault(w.group(1), []).append((fmt, vi, site))
                elif v == "rerr" and self.go is not None:
                    cond = enclosing_condition(body, m.start())
                    api = re.findall(r"\bapi\.(\w+)\s*\(", cond or "")
                    for gm in self.go.messages(api):
                        leaves.append((channel, Msg(compose(fmt, vi, gm.fmt), gm.path, gm.line)))
            for each in self.per_program(fmt, values):
                leaves.append((channel, Msg(each, f.path, line)))
        # calls: direct, libnvc.X, callbacks named; call_rpc and xdlopen derived (identifiers
        # inside string literals are no calls)
        code = blank_strings(body)
        for m in re.finditer(r"(?<![\w.>])([A-Za-z_]\w*)\s*(\()?", code):
            name, paren = m.group(1), m.group(2)
            if name in _KEYWORDS or name in ERROR_SETTERS:
                continue
            if name == "call_rpc" and paren:
                args, _end = common.call_args(body, m.end() - 1)
                self._rpc_call(f, m.start(), args, leaves, calls, quoted)
                continue
            if name == "xdlopen" and paren:
                args, _end = common.call_args(body, m.end() - 1)
                lib = None
                if len(args) > 1:
                    a = args[1].strip()
                    lib = self.c.fmt_of(a) if a.startswith('"') or a in self.c.macros else None
                    if lib is None and a in DL_ALIASES:
                        lib = self.c.macros.get(DL_ALIASES[a])
                if lib:
                    leaves.append((self._channel(args[0], quoted),
                                   Msg("%s: %s: %%s" % (self.dl_fmt, lib), f.path, self.c.line(f, m.start()))))
            targets = self.c.resolve(name, f.path)
            if not targets or (len(targets) == 1 and targets[0].key == f.key):
                continue
            channel = None
            if paren:
                args, _end = common.call_args(body, m.end() - 1)
                channel = self._channel(args[0], quoted) if args else None
            if channel == "drop":
                continue
            for t in targets:
                if t.key != f.key:
                    calls.append((t.key, channel))
        for m in re.finditer(r"\blibnvc\.(\w+)\s*\(", body):
            for t in self.c.resolve("nvc_" + m.group(1), f.path):
                calls.append((t.key, None))
        self.leaves[f.key] = leaves
        self.calls[f.key] = calls
        self.wrappers[f.key] = wrappers

    def _channel(self, arg, quoted):
        """How an error object passed to a call (or set) travels: None (the caller's own: up),
        a local's name (a wrapper quotes it), "drop" (a local never quoted)."""
        a = arg.strip()
        m = re.fullmatch(r"&(\w+)", a)
        if m and m.group(1) != "err":
            if m.group(1) in quoted:
                return m.group(1)
            if m.group(1).endswith("err"):
                return "drop"
        return None

    def _rpc_call(self, f, pos, args, leaves, calls, quoted):
        """A call_rpc(...) site: its failure ("<program> rpc error: <reason>"; before 1.8 "driver
        error: <reason>"), and the server's messages, which come back through XDR unchanged."""
        if self.rpc_macro is None:
            return
        fi, fmt, first = self.rpc_macro
        if len(args) <= fi:
            return
        func = args[fi].strip()
        if "%s" in fmt:
            prog = func.split("_", 1)[0]
            if "prog.name" not in first or prog not in self.progs:
                raise SystemExit("%s: call_rpc of %s: no RPC program %r among %s" % (f.path, func, prog, self.progs))
            fmt = compose(fmt, 0, prog)
        line = self.c.line(f, pos)
        channel = self._channel(args[0], quoted)
        leaves.append((channel, Msg(fmt + ": %s", f.path, line)))
        for reason in self.rpc_reasons:
            leaves.append((channel, Msg("%s: %s" % (fmt, reason.replace("%", "%%")), f.path, line)))
        if channel != "drop":
            for t in self.c.resolve(func + "_svc", f.path):
                calls.append((t.key, channel))

    # --- the flow: the messages each function's error can hold when it returns
    def _flow(self):
        out = {}
        for key in self.leaves:
            own = set(m for ch, m in self.leaves[key] if ch is None)
            for var, ws in self.wrappers[key].items():
                for ch, m in self.leaves[key]:
                    if ch == var:
                        own.update(self._wrap(ws, m))
            out[key] = own
        changed = True
        rounds = 0
        while changed:
            changed = False
            rounds += 1
            if rounds > 50:
                raise SystemExit("the message flow does not settle")
            for key in sorted(self.calls):
                cur = out[key]
                before = len(cur)
                for callee, ch in self.calls[key]:
                    inner = out.get(callee, ())
                    if ch is None:
                        cur.update(inner)
                    elif ch in self.wrappers[key]:
                        for m in list(inner):
                            cur.update(self._wrap(self.wrappers[key][ch], m))
                if len(cur) != before:
                    changed = True
        return out

    @staticmethod
    def _wrap(ws, m):
        return [Msg(compose(fmt, vi, m.fmt), m.path, m.line) for fmt, vi, _site in ws]

    # --- the CLI's contexts: warnx/warn/errx/err lines of src/cli
    def cli_rows(self):
        """(context rows, composed rows, plain rows): each (path, line, fmt)."""
        contexts, composed, plain = [], [], []
        for f in sorted(self.c.funcs.values(), key=lambda f: f.key):
            if not f.path.startswith("src/cli/") or f.is_macro:
                continue
            for m in re.finditer(r"(?<![\w.>])(warnx|warn|errx|err)\s*\(", f.body):
                args, _end = common.call_args(f.body, m.end() - 1)
                fi = 1 if m.group(1) in ("errx", "err") else 0
                if len(args) <= fi:
                    continue
                fmt = self.c.fmt_of(args[fi])
                line = self.c.line(f, m.start())
                if fmt is None:
                    continue
                if m.group(1) in ("warn", "err"):
                    fmt += ": %s"  # warn(3): "<message>: <strerror(errno)>"
                values = [a.strip() for a in args[fi + 1:]]
                ctx_index, ctx_var = None, None
                for vi, v in enumerate(values):
                    if re.fullmatch(r"(?:libnvc\.error|nvc_error)\s*\(.*\)", v, re.S):
                        ctx_index, ctx_var = vi, "libnvc"
                    else:
                        w = re.fullmatch(r"(\w+)(?:\.|->)msg", v)
                        if w:
                            ctx_index, ctx_var = vi, w.group(1)
                if ctx_index is None:
                    plain.append((f.path, line, fmt))
                    continue
                contexts.append((f.path, line, fmt))
                for msg in sorted(self._context_messages(f, m.start(), ctx_var), key=Msg.key):
                    composed.append((msg.path, msg.line, compose(fmt, ctx_index, msg.fmt)))
        return contexts, composed, plain

    def _context_messages(self, f, pos, var):
        cond = enclosing_condition(f.body, pos)
        roots = []
        own = []
        if cond is not None:
            # the library's calls: libnvc.X (1.6 on) or nvc_X called directly (before)
            for m in re.finditer(r"\blibnvc\.(\w+)\s*\(|(?<![\w.>])(nvc_\w+)\s*\(", cond):
                roots.extend(t.key for t in self.c.resolve(m.group(2) or "nvc_" + m.group(1), f.path))
            if var != "libnvc":
                for m in re.finditer(r"(?<![\w.>])([A-Za-z_]\w*)\s*\(", cond):
                    roots.extend(t.key for t in self.c.resolve(m.group(1), f.path) if t.key != f.key)
        else:
            # after a label (fatal:): every call and every message of the function on that error
            for callee, ch in self.calls[f.key]:
                if ch is None:
                    roots.append(callee)
            own = [m for ch, m in self.leaves[f.key] if ch is None]
        msgs = set(own)
        for r in roots:
            msgs.update(self.out.get(r, ()))
        return msgs

    # --- the debug log
    def debug_rows(self):
        rows = []
        for p in sorted(self.c.text):
            if p in ("src/utils.h",):
                continue
            text = self.c.text[p]
            for m in re.finditer(r"(?<![\w.>])log_(info|warn|err)(f?)\s*\(", text):
                args, _end = common.call_args(text, m.end() - 1)
                if not args:
                    continue
                fmt = self.c.fmt_of(args[0])
                line = common.line_of(text, m.start())
                if fmt is None or not has_literal(fmt):
                    self.notes.append("%s:%d: debug line with no literal format: left out" % (p, line))
                    continue
                for each in self.per_program(fmt, [a.strip() for a in args[1:]]):
                    rows.append((p, line, each, m.group(1)))
        return rows


# ---------------------------------------------------------------------------------------------
# Go sources: libnvidia-container's src/nvcgo and the toolkit

_GO_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"|`([^`]*)`')


def go_literal(expr, escape=False):
    """A Go expression of string literals and operands joined by ``+`` -> its text (operands as
    ``%s``; ``escape``: the literals' own percent signs as ``%%``, for a print-style call); None
    when it holds no literal."""
    parts, found = [], False
    for piece in split_plus(expr):
        piece = piece.strip()
        m = _GO_STRING.fullmatch(piece)
        if m:
            found = True
            text = common.c_unescape(m.group(1)) if m.group(1) is not None else m.group(2)
            parts.append(text.replace("%", "%%") if escape else text)
        else:
            parts.append("%s")
    return "".join(parts) if found else None


def split_plus(expr):
    parts, depth, cur, i, n = [], 0, [], 0, len(expr)
    while i < n:
        c = expr[i]
        if c in "\"`":
            j = i + 1
            while j < n and expr[j] != c:
                if expr[j] == "\\" and c == '"':
                    j += 1
                j += 1
            cur.append(expr[i:j + 1])
            i = j + 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "+" and depth == 0:
            parts.append("".join(cur))
            cur = []
            i += 1
            continue
        cur.append(c)
        i += 1
    parts.append("".join(cur))
    return parts


def go_verbs(fmt):
    """Go's fmt verbs as printf conversions: %v %+v %#v %w %q %T %s -> %s; %d, %x kept."""
    return re.sub(r"%[-+# 0]*\d*(?:\.\d+)?([a-zA-Z%])",
                  lambda m: "%%" if m.group(1) == "%" else ("%" + m.group(1) if m.group(1) in "dxXoeEfFgGc"
                                                             else "%s"), fmt)


def go_functions(text):
    """(name, start, end) of each func in a Go file (methods by their name)."""
    out = []
    for m in re.finditer(r"^func\s+(?:\([^)]*\)\s*)?(\w+)\s*\(", text, re.M):
        brace = text.find("{\n", m.end())
        if brace < 0:
            continue
        _a, close = common.call_args(text, brace)
        out.append((m.group(1), m.start(), close))
    return out


_GO_SITE = re.compile(r"(?<![\w])((?:[\w.]*\.)?(?:Errorf|New|Panicln|Panicf|Panic|Printf|Println|Fatalf|Fatalln|"
                      r"Warningf|Warnf|Infof|Warning|Warn|Info|Error|Sprintf))\s*\(")


def go_sites(text, levels):
    """(offset, level, fmt) of each message site of a Go file; level one of "error", "warning",
    "info"."""
    out = []
    for m in _GO_SITE.finditer(text):
        call = m.group(1)
        recv, _, meth = call.rpartition(".")
        args, _end = common.call_args(text, m.end() - 1)
        if not args:
            continue
        if meth == "Errorf" and recv == "fmt" or meth == "New" and recv == "errors":
            level = "error"
        elif meth == "Sprintf" and recv == "fmt":
            if not re.search(r"C\.CString\(\s*$", text[:m.start()]):
                continue
            level = "error"
        elif recv == "log" and meth in ("Panicln", "Panicf", "Panic", "Fatalf", "Fatalln"):
            level = "error"
        elif recv == "log" and meth in ("Printf", "Println"):
            level = "info"
        elif recv.endswith("logger") or recv == "l":
            level = {"Errorf": "error", "Error": "error", "Warningf": "warning", "Warnf": "warning",
                     "Warning": "warning", "Warn": "warning", "Infof": "info", "Info": "info"}.get(meth)
            if level is None:
                continue
        else:
            continue
        if level not in levels:
            continue
        if meth.endswith("ln") or meth in ("Panic", "Warning", "Warn", "Info", "Error") and not meth.endswith("f"):
            # Println: operands joined by blanks, each printed with %v
            parts = [go_literal(a, escape=True) or "%s" for a in args]
            if not any(go_literal(a) is not None for a in args):
                continue
            fmt = " ".join(parts) if meth.endswith("ln") else "".join(parts)
        else:
            fmt = go_literal(args[0])
            if fmt is None:
                continue
            fmt = go_verbs(fmt)
        fmt = fmt.rstrip("\n")
        out.append((m.start(), level, fmt))
    return out


# Go packages of the standard library whose calls are no calls of the helper's own functions
GO_STD = ("fmt", "errors", "os", "strings", "strconv", "filepath", "bufio", "unix", "syscall", "C", "asm", "ebpf",
          "link")


class GoHelper(object):
    """libnvidia-container's src/nvcgo (the cgroup helper the C side calls by name)."""

    def __init__(self, src, rev):
        paths = [p for p in common.ls_files(src, rev, "src/nvcgo") if p.endswith(".go")
                 and not p.startswith("src/nvcgo/vendor/") and not p.endswith("_test.go")]
        self.funcs = {}   # name -> [(path, start, end)]
        self.sites = {}   # (path, name) -> [Msg]
        self.calls = {}   # (path, name) -> set(names)
        for p in sorted(paths):
            text = common.blank_comments(common.show(src, rev, p))
            funcs = go_functions(text)
            for name, start, end in funcs:
                self.funcs.setdefault(name, []).append((p, start, end))
                body = text[start:end]
                self.calls[(p, name)] = set(n for q, n in re.findall(r"(?<![\w.])(?:(\w+)\.)?(\w+)\s*\(",
                                                                     body[body.find("{"):])
                                            if q not in GO_STD)
                self.sites[(p, name)] = [Msg(fmt, p, common.line_of(text, start + off))
                                         for off, _lvl, fmt in go_sites(body, ("error",))]

    def messages(self, roots):
        """Every message of the Go functions named ``roots`` and those they call (by name)."""
        seen, todo, out = set(), list(roots), []
        while todo:
            name = todo.pop()
            for p, _s, _e in self.funcs.get(name, ()):
                if (p, name) in seen:
                    continue
                seen.add((p, name))
                out.extend(self.sites[(p, name)])
                todo.extend(n for n in self.calls[(p, name)] if n in self.funcs)
        return sorted(set(m for m in out if has_literal(m.fmt)), key=Msg.key)


def toolkit_rows(src, rev):
    """(path, line, fmt, level) of the toolkit's messages in TK_DIRS (kept: TK_MARKERS)."""
    rows = []
    for p in common.ls_files(src, rev, *[d.rstrip("/") for d in TK_DIRS]):
        if not p.endswith(".go") or p.endswith("_test.go") or not p.startswith(TK_DIRS):
            continue
        text = common.blank_comments(common.show(src, rev, p))
        for off, level, fmt in go_sites(text, ("error", "warning", "info")):
            if not matchable(fmt) or not any(k in fmt for k in TK_MARKERS):
                continue
            rows.append((TK + p, common.line_of(text, off), fmt, level))
    return rows


# ---------------------------------------------------------------------------------------------
# classification

B = "benign"
CRIT_KIND = "cuda_driver_too_old"
DRV = "logged_driver_error"
ERR = "logged_error"
CATEGORY = {DRV: "driver", ERR: "unknown", CRIT_KIND: "driver"}

M_CUDA_OLD = ("The container image requires a newer CUDA than this node's NVIDIA driver supports "
              "(NVIDIA_REQUIRE_CUDA): update the driver, or run an image built for an older CUDA; the GPUs are fine.")
M_REQUIRE = ("The container's NVIDIA_REQUIRE_* condition (CUDA or driver version, GPU architecture or brand) is not "
             "met by this node's driver or GPUs: the container is not started here.")
M_NVML = ("nvidia-container-cli could not use NVML (the text names why: driver not loaded, driver/library version "
          "mismatch after an upgrade without reboot, GPU lost, no permission): the NVIDIA driver is not working on "
          "this node; check nvidia-smi and the kernel log.")
M_NVML_LIB = ("The NVIDIA driver's library libnvidia-ml.so.1 cannot be loaded: the driver is not installed, "
              "installed incompletely, or not where the container toolkit looks (driver root, ldcache); check "
              "nvidia-smi on the node.")
M_LIB = ("nvidia-container-cli could not load a library it needs (the text names it): the NVIDIA driver's or the "
         "container toolkit's installation on this node is broken.")
M_DRIVER_RPC = ("nvidia-container-cli's driver helper (the process that calls NVML) failed or timed out: the driver "
                "hangs or a GPU does not answer (fallen off the bus, persistence mode off and slow to wake); check "
                "nvidia-smi and the kernel log (Xid).")
M_NO_GPU = ("No NVIDIA GPU (WSL: no adapter) was found by the driver on this node: the GPUs are missing or the "
            "driver does not see them.")
M_UNKNOWN_DEVICE = ("A GPU the container asked for (NVIDIA_VISIBLE_DEVICES: index, UUID or bus id) is not among the "
                    "GPUs the driver reports: it has fallen off the bus or is hidden, or the job named a GPU this node "
                    "does not have.")
M_DETECT = ("nvidia-container-cli could not read the driver's files or devices (/proc/driver/nvidia, /dev/nvidia*, "
            "the driver's libraries): the driver is missing or broken, or the toolkit's driver root is wrong.")
M_INIT = ("nvidia-container-cli could not initialize (the text after it names why): usually the NVIDIA driver is not "
          "installed or not working on this node.")
M_WSL = ("nvidia-container-cli's WSL (dxcore) adapter query failed: on WSL the Windows NVIDIA driver's GPU is not "
         "usable from Linux; on a Linux node the dxcore lines are notes of a probe that does not apply.")
M_KMOD = ("nvidia-container-cli could not load an NVIDIA kernel module or create its device node (/dev/nvidia*): "
          "the driver's modules are not built for the running kernel, or loading them is not allowed.")
M_MOUNT = ("nvidia-container-cli could not mount the driver's files or the GPU devices into the container: the "
           "node's container runtime set-up or the image (read-only or conflicting paths, mount namespace, "
           "SELinux/AppArmor); the GPUs are not implicated.")
M_CGROUP = ("nvidia-container-cli could not set up the container's device cgroup (cgroup v1 devices controller or "
            "the cgroup v2 BPF device filter): the node's container runtime or cgroup configuration (cgroup driver, "
            "no-cgroups in config.toml, nested or rootless containers).")
M_LDCACHE = ("Updating the container's library cache (ldconfig run inside it) failed: the node's container runtime "
             "set-up or the image (the ldconfig path in config.toml, a read-only image); the GPUs are not implicated.")
M_PERM = ("nvidia-container-cli lacks privileges or capabilities it needs (a rootless or user-namespaced runtime, a "
          "restrictive seccomp or AppArmor profile): the node's container runtime set-up.")
M_CONTAINER = ("nvidia-container-cli could not attach to the container being created (its process, namespaces, "
               "rootfs or cgroup): the node's container runtime set-up.")
M_INPUT = ("nvidia-container-cli rejected its arguments (the runtime hook's or the container's GPU options: "
           "NVIDIA_VISIBLE_DEVICES, NVIDIA_DRIVER_CAPABILITIES, MIG and IMEX settings): the container's or the "
           "runtime's configuration.")
M_SETUP = ("nvidia-container-cli failed while setting up the container (the text names the step): the node's "
           "container runtime set-up; the GPUs are not implicated.")
M_NVCGO = ("nvidia-container-cli's cgroup helper (libnvidia-container-go) failed: the container toolkit's "
           "installation or the node's cgroup set-up.")
M_DEBUG_FAIL = ("A failed step in nvidia-container-cli's debug log (the step and its reason are in the text): read "
                "it with the nvidia-container-cli error that followed.")
M_MISSING_DEV = ("A driver device node nvidia-container-cli expects (/dev/nvidia-uvm, -uvm-tools, -modeset) is "
                 "missing: the module is not loaded; CUDA in the container fails without nvidia-uvm.")
B_DEBUG = "A step nvidia-container-cli's debug log records (version, library, device, mount, RPC service): no failure."
B_OPTIONAL = ("An optional driver component (a library, binary, firmware or path this driver does not ship) is "
              "absent or skipped by design: routine unless the job needs that component.")
M_TK_CDI = ("The NVIDIA container runtime could not resolve or inject the CDI devices asked for (nvidia.com/gpu=...): "
            "the node's CDI specification is missing or stale (regenerate it with nvidia-ctk cdi generate after a "
            "driver change) or names devices this node lacks.")
M_TK_RUNTIME = ("The NVIDIA container runtime could not prepare the container's OCI specification (its config, the "
                "runtime it wraps, the modification it applies): the node's container runtime set-up; the text after "
                "it names why.")
M_TK_HOOK = ("The NVIDIA container runtime hook failed before or while calling nvidia-container-cli (its config, the "
             "OCI spec, the container's NVIDIA_* settings): the node's or the container's configuration.")
M_TK_CLI_MISSING = ("The runtime hook could not find nvidia-container-cli: the NVIDIA container toolkit "
                    "(libnvidia-container-tools) is not installed properly on this node.")
M_TK_MODE = ("The runtime hook was invoked in a way its mode does not allow (docker --gpus with the runtime in cdi "
             "or csv mode): the node's container runtime configuration.")
M_TK_CDI_HOOK = ("A CDI hook of the NVIDIA container toolkit (nvidia-cdi-hook: ldcache update, symlinks, CUDA compat "
                 "libraries) failed while the container was created: the node's container runtime set-up or the image.")
M_TK_CUDA = ("The NVIDIA container toolkit could not read the CUDA version or compatibility libraries it checks: "
             "the image's CUDA or the driver's version is not readable; the container may still start.")
B_TK_MODE = "The NVIDIA container runtime names the mode or the modification it applies: a set-up note, no failure."

# (source regex, format regex, kind, severity, meaning): first match wins. Sources: "cli" (a CLI
# line, composed), "debug:<level>" (the debug log), "tk:<level>" (the toolkit).
RULES = [
    # --- the driver is too old for the image / a requirement is not met
    (r"", r"please update your driver to a newer version", CRIT_KIND, "critical", M_CUDA_OLD),
    (r"^cli", r"unsatisfied condition: ", DRV, "critical", M_REQUIRE),
    (r"^tk", r"unsatisfied condition: |requirements not met", DRV, "critical", M_REQUIRE),
    # --- the driver is not working: NVML, its libraries, its helper, no GPU
    (r"^cli", r"nvml error: ", DRV, "critical", M_NVML),
    (r"^cli", r"load library failed: libnvidia-ml", DRV, "critical", M_NVML_LIB),
    (r"^cli", r"(?<!un)load library failed: ", DRV, "critical", M_LIB),
    (r"^cli", r"\bdriver (?:rpc |error: )", DRV, "critical", M_DRIVER_RPC),
    (r"^cli", r"no adapters were found", DRV, "critical", M_NO_GPU),
    (r"^cli", r": unknown device$|: unknown device id: ", DRV, "critical", M_UNKNOWN_DEVICE),
    # --- the container set-up
    (r"^cli", r"\bnvcgo rpc |dlsym error", ERR, "warning", M_NVCGO),
    (r"^cli", r"failed to (?:get device cgroup|add device rules)|cgroup", ERR, "warning", M_CGROUP),
    (r"^cli", r"^mount error: ", ERR, "warning", M_MOUNT),
    (r"^cli", r"^ldcache error: ", ERR, "warning", M_LDCACHE),
    (r"^cli", r"^permission error: ", ERR, "warning", M_PERM),
    (r"^cli", r"^container error: ", ERR, "warning", M_CONTAINER),
    (r"^cli", r"^(?:input error|device error|mig-config error|mig-monitor error|error parsing IMEX info): ", ERR,
     "warning", M_INPUT),
    (r"^cli", r"^detection error: ", DRV, "warning", M_DETECT),
    (r"^cli", r"^initialization error: .*(?:kernel module|mknod|nvidia-caps|mig-minors)", DRV, "warning", M_KMOD),
    (r"^cli", r"^initialization error: %s$", DRV, "warning", M_INIT),
    (r"^cli", r"^initialization error: ", ERR, "warning", M_SETUP),
    (r"^cli", r"^requirement error: ", ERR, "warning", M_INPUT),
    (r"^cli", r"", ERR, "warning", M_SETUP),
    # --- the debug log
    (r"^debug:info", r"", B, "ok", B_DEBUG),
    (r"^debug", r"^(?:missing (?:library|compat32 library|binary|firmware path|ipc|%s path)|%s not found; skipping|"
                r"skipping |seccomp is disabled|running in secure mode without host ldconfig|could not (?:set \w+|"
                r"preserve) capabilities, containers may require)|; skipping(?: create)?$", B, "ok", B_OPTIONAL),
    (r"^debug", r"^missing device ", DRV, "warning", M_MISSING_DEV),
    (r"^debug", r"kernel module|mknod|failed to detect NVIDIA devices", DRV, "warning", M_KMOD),
    (r"^debug", r"dxcore|WDDM|DriverStore|driver store|adapter", DRV, "warning", M_WSL),
    (r"^debug", r"\bnvcgo rpc ", ERR, "warning", M_NVCGO),
    (r"^debug", r"\bdriver (?:rpc )?service", DRV, "warning", M_DRIVER_RPC),
    (r"^debug:\w+:src/nvc_ldcache", r"", ERR, "warning", M_LDCACHE),
    (r"^debug", r"", ERR, "warning", M_DEBUG_FAIL),
    # --- the toolkit
    (r"^tk:info", r"", B, "ok", B_TK_MODE),
    (r"^tk", r"CDI devices|CDI registry|CDI spec|CDI device|CDI library|CDI modifier", ERR, "warning", M_TK_CDI),
    (r"^tk", r"nvidia-container-cli in PATH", ERR, "warning", M_TK_CLI_MISSING),
    (r"^tk", r"^no NVIDIA devices found", DRV, "warning", M_NO_GPU),
    (r"^tk", r"invoking the NVIDIA Container Runtime Hook directly", ERR, "warning", M_TK_MODE),
    (r"^tk", r"CUDA version|CUDA Compute Capability|CUDA compat|compat driver version|host (?:driver|CUDA) version",
     ERR, "warning", M_TK_CUDA),
    (r"nvidia-cdi-hook/", r"", ERR, "warning", M_TK_CDI_HOOK),
    (r"nvidia-container-runtime-hook/", r"", ERR, "warning", M_TK_HOOK),
    (r"^tk", r"", ERR, "warning", M_TK_RUNTIME),
]


def classify(source, fmt):
    for src_rx, fmt_rx, kind, severity, meaning in RULES:
        if re.search(src_rx, source) and re.search(fmt_rx, fmt):
            if kind == B:
                return kind, "healthy", "ok", meaning
            return kind, CATEGORY[kind], severity, meaning
    raise SystemExit("no rule for %s %r" % (source, fmt))


# ---------------------------------------------------------------------------------------------

def require(src, rev, required, what):
    for path, literal in required:
        try:
            text = common.show(src, rev, path)
        except Exception:  # noqa: BLE001 - a missing file is a missing literal
            text = ""
        if literal not in text:
            raise SystemExit("%s %s: %s no longer holds %r: the reading must be revised" % (what, rev[:12], path,
                                                                                           literal))


def check_licence(src, rev, what):
    text = common.show(src, rev, "LICENSE")
    if "Apache License" not in text or "Version 2.0" not in text:
        raise SystemExit("%s %s: LICENSE is no longer Apache-2.0" % (what, rev[:12]))


def toolkit_default(src):
    """Where the toolkit's source is when --toolkit-src is not given (the module doc), or None."""
    src = os.path.abspath(src.rstrip("/"))
    here = os.path.dirname(src)
    candidates = [os.path.join(here, "nvidia-container-toolkit.git"), os.path.join(here, "nvidia-container-toolkit")]
    if os.path.basename(src) == "repo":  # <dir>/<owner>+libnvidia-container/repo
        candidates.append(os.path.join(os.path.dirname(here), "NVIDIA+nvidia-container-toolkit", "repo"))
    return next((c for c in candidates if os.path.isdir(c)), None)


def lib_messages(src, rev):
    """(cli rows, debug rows, notes, counts) of libnvidia-container at ``rev``: cli rows
    (path, line, fmt), debug rows (path, line, fmt, level)."""
    reader = Reader(CSource(src, rev), GoHelper(src, rev))
    contexts, composed, plain = reader.cli_rows()
    counts = {"contexts": len(set(f for _p, _l, f in contexts)), "composed": len(set(f for _p, _l, f in composed)),
              "plain": len(set(f for _p, _l, f in plain))}
    return contexts + composed + plain, reader.debug_rows(), reader.notes, counts


def verify_older(src, tk_src, commit, version, how):
    """Why ``commit`` is release ``version`` (OLDER), or a note when it cannot be read."""
    try:
        common.resolve(src, commit)
    except Exception:  # noqa: BLE001 - an older release is optional
        return "%s (%s) not in the source: skipped" % (version, commit[:12])
    if how == "toolkit":
        tree = common.git(tk_src, "ls-tree", version, "third_party/libnvidia-container").split()
        if len(tree) < 3 or tree[2] != commit:
            raise SystemExit("toolkit %s does not vendor libnvidia-container %s" % (version, commit[:12]))
    else:
        subject = common.git(src, "log", "-1", "--format=%s", commit).strip()
        if version.lstrip("v") not in subject:
            raise SystemExit("%s: %r does not name release %s" % (commit[:12], subject, version))
    return None


def build(src, rev, tk_src, tk_rev, older=None):
    """(rows, notes, counts)."""
    require(src, rev, REQUIRED, "libnvidia-container")
    require(tk_src, tk_rev, TK_REQUIRED, "nvidia-container-toolkit")
    cli, debug, notes, counts = lib_messages(src, rev)
    notes = list(notes)
    rows = []

    def add(path, line, fmt, source):
        if not has_literal(fmt):
            notes.append("%s:%d: %r: no literal text: left out" % (path, line, fmt))
            return
        kind, category, severity, meaning = classify(source, fmt)
        common.check_class(kind, category, severity, KINDS)
        rows.append((path, line, fmt, kind, category, severity, meaning))

    for path, line, fmt in cli:
        add(path, line, fmt, "cli:" + path)
    for path, line, fmt, level in debug if READ_DEBUG_LOG else ():
        add(DEBUG + ":" + path, line, fmt, "debug:%s:%s" % (level, path))
    for path, line, fmt, level in toolkit_rows(tk_src, tk_rev):
        add(path, line, fmt, "tk:%s:%s" % (level, path))
    # earlier releases: each message the pin words otherwise, once, at the newest release that has it
    known = set(r[2] for r in rows)
    counts["older"] = 0
    for commit, version, how in (OLDER if older is None else older):
        note = verify_older(src, tk_src, commit, version, how)
        if note:
            notes.append(note)
            continue
        ocli, odebug, _onotes, _ocounts = lib_messages(src, commit)
        before = len(rows)
        for path, line, fmt in sorted(ocli):
            if fmt not in known:
                add("%s@%s" % (path, version), line, fmt, "cli:" + path)
        for path, line, fmt, level in sorted(odebug) if READ_DEBUG_LOG else ():
            if fmt not in known:
                add("%s@%s:%s" % (DEBUG, version, path), line, fmt, "debug:%s:%s" % (level, path))
        known.update(r[2] for r in rows[before:])
        counts["older"] += len(set(r[2] for r in rows[before:]))
    # one format, one verdict: the matcher cannot tell two rows of one format apart; one row per
    # format (its first site), the others are the same message reached another way
    seen = {}
    rows = sorted(set(rows), key=lambda r: (r[0], r[1], r[2]))
    for r in rows:
        if matchable(r[2]):
            prev = seen.setdefault(r[2], r)
            if (prev[3], prev[4]) != (r[3], r[4]):
                raise SystemExit("%r: %s:%d says %s/%s, %s:%d says %s/%s" % (r[2], prev[0], prev[1], prev[3], prev[4],
                                                                             r[0], r[1], r[3], r[4]))
    first = {}
    for r in rows:
        first.setdefault(r[2], r)
    rows = sorted(first.values(), key=lambda r: (r[0], r[1], r[2]))
    return rows, notes, counts


MARKERS_CLI = ("nvidia-container-cli",)

TEMPLATES = (
    (DEBUG, "I0101 00:00:00.000000 1234 {file}:{line}] {message}"),
    (TK, "{message}"),
    ("src/", "nvidia-container-cli: {message}"),
)


def markers_for(rows):
    """The CLI's name, the debug log's file names ("nvc.c:"), the toolkit's TK_MARKERS its rows hold."""
    out = list(MARKERS_CLI)
    for f in sorted(set(r[0].rsplit("/", 1)[-1] for r in rows if r[0].startswith(DEBUG))):
        out.append(f + ":")
    tk = [r[2] for r in rows if r[0].startswith(TK)]
    out.extend(k for k in TK_MARKERS if any(k in f for f in tk) and k not in out)
    return tuple(out)


DOC = """\
Read (libnvidia-container, src/): every error_set* message (error_set: "<message>: <strerror>",
error_set_dl/_nvml/_elf/_rpc likewise with dlerror, nvmlErrorString, libelf's and the RPC
reason; error_setx: the message alone), followed up the call graph (by name; libnvc.X ->
nvc_X; call_rpc(..., X_1) -> X_1_svc; a local error a wrapper quotes is wrapped, one never
quoted dropped) to each nvidia-container-cli context that prints it: a row is
"<context> error: <message>" (warnx: "nvidia-container-cli: initialization error: nvml error:
driver not loaded"), file and line of the message's site. Derived: call_rpc failures as
"<program> rpc error: <reason>" (driver, nvcgo; reasons "failed to process request", "failed
to perform handshake", or any), xdlopen of a named library as "load library failed: <library>:
%s", src/rpc.c's "%s rpc ..." once per program. The CLI's contexts alone ("mount error: %s")
and its other warnx/warn lines are rows too. The Go cgroup helper's (src/nvcgo) messages are
composed with the C wrapper that quotes them ("mount error: failed to add device rules: unable
to find any existing device filters attached to the cgroup: %s"), file and line the Go site's.
The debug log (log_info/warn/err: "<I|W|E>MMDD hh:mm:ss.us tid <file>:<line>] <message>") is
left out: the readers take its glog head off, and with it the file name that told its lines
from another program's; the CLI's own error says what failed. One row per format (its first site). Earlier releases
({older}): each CLI or debug-log message of theirs that the pin words otherwise is a row too,
file "<path>@<version>" ("debug-log@<version>:<path>"), once, at the newest release that has it
("detection error: driver error: timed out", the driver helper's failure before 1.8). A
container engine quotes the CLI's line inside its own
error ("... stderr: Auto-detected mode as 'legacy'\\nnvidia-container-cli: requirement error:
unsatisfied condition: cuda>=12.1, please update your driver ...: unknown."): rows match it
there (fragments, not whole lines).

NVIDIA Container Toolkit ({tk_rev}, {tk_commit}, {tk_origin}; licence {tk_licence}), rows with
file "nvidia-container-toolkit:<path>": the messages of the code that runs when a container is
created ({tk_dirs}): fmt.Errorf, errors.New, log.Panic*/Printf, the logger's
Errorf/Warningf/Infof; Go verbs as %s (%d kept); kept where the message is matchable and names the stack
({tk_markers}).

Classification (generator RULES, first match wins): the image's CUDA newer than the driver
("cuda>=X, please update your driver") -> cuda_driver_too_old critical; another unsatisfied
NVIDIA_REQUIRE_* condition, NVML errors, libnvidia-ml.so.1 or another library not loadable, the
driver helper's RPC failing, no GPU/adapter, an unknown requested GPU -> driver critical;
detection errors (driver files and devices not readable), kernel modules not loadable -> driver
warning; mount, ldcache, cgroup, permission, container, input/device/requirement-parsing and
other set-up errors -> unknown warning (the node's container runtime set-up); debug-log notes,
optional driver components skipped, the toolkit's info lines -> benign; the toolkit's CDI,
runtime, hook and CUDA-compat failures -> unknown warning.

NVML's returns: each "... nvml error: %s" row is also written once per NVML return nvmlErrorString
names (vocab/nvml.py CODES, generated by gen_nvml.py from nvidia-ml-py), its text lower-cased as
error_set_nvml leaves it ("detection error: nvml error: unknown error"), classified as NVML's own
table classifies that return ("GPU is lost" the GPU's, "Unknown Error" no verdict by itself); a
return NVML's table calls benign keeps the generic row's class.
"""


def nvml_return_rows(rows):
    """The "nvml error: %s" rows once per NVML return text (DOC: NVML's returns)."""
    out = []
    for r in rows:
        if not r[2].endswith("nvml error: %s"):
            continue
        for number, name, text, kind, category, severity, meaning, _file, _line in nvml.CODES:
            if not text or kind == "benign":
                continue
            out.append((r[0], r[1], r[2][:-2] + text.lower(), kind, category, severity,
                        "nvidia-container-cli could not use NVML: it returned %s (%d): %s" % (name, number, meaning)))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", required=True, help="a clone or bare mirror of github.com/NVIDIA/libnvidia-container")
    ap.add_argument("--rev", default=PIN, help="commit, tag or branch (default %s, %s)" % (PIN[:12], PIN_VERSION))
    ap.add_argument("--toolkit-src", help="a clone or bare mirror of github.com/NVIDIA/nvidia-container-toolkit "
                                          "(default: beside --src; the module doc)")
    ap.add_argument("--toolkit-rev", default=TK_PIN, help="tag, commit or branch (default %(default)s)")
    ap.add_argument("--dump", action="store_true", help="print every row and its verdict, write nothing")
    ap.add_argument("--notes", action="store_true", help="print what was left out")
    args = ap.parse_args(argv)
    tk_src = args.toolkit_src or toolkit_default(args.src)
    if not tk_src:
        ap.error("no NVIDIA/nvidia-container-toolkit source beside --src: give --toolkit-src")
    commit = common.resolve(args.src, args.rev)
    tk_commit = common.resolve(tk_src, args.toolkit_rev)
    check_licence(args.src, commit, "libnvidia-container")
    check_licence(tk_src, tk_commit, "nvidia-container-toolkit")
    if commit == PIN:
        for tag in TOOLKIT_VENDORS:
            tree = common.git(tk_src, "ls-tree", tag, "third_party/libnvidia-container").split()
            if len(tree) < 3 or tree[2] != PIN:
                raise SystemExit("toolkit %s does not vendor libnvidia-container %s" % (tag, PIN[:12]))
        version = "%s (the commit NVIDIA Container Toolkit %s vendor)" % (PIN_VERSION, ", ".join(TOOLKIT_VENDORS))
    else:
        tags = sorted(t for t in common.git(args.src, "tag", "--points-at", commit).split() if re.match(r"v\d", t))
        version = tags[0] if tags else args.rev
    rows, notes, counts = build(args.src, commit, tk_src, tk_commit)
    if args.dump:
        for r in sorted(set(rows), key=lambda r: (r[0], r[1], r[2])):
            print("%s:%d\t%r\t%s/%s/%s" % (r[0], r[1], r[2], r[3], r[4], r[5]))
        return
    if args.notes:
        for note in notes:
            print("note: " + note)
    meta = {"EMITTER": "NVIDIA Container Toolkit", "PROJECT": "libnvidia-container (nvidia-container-cli; with NVIDIA "
            "Container Toolkit's runtime and hooks, below)", "VERSION": version, "COMMIT": commit, "LICENCE": LICENCE,
            "ORIGIN": ORIGIN, "GENERATOR": GENERATOR}
    text = DOC.format(older=", ".join("%s (%s)" % (v, c[:12]) for c, v, _how in OLDER), tk_rev=args.toolkit_rev,
                      tk_commit=tk_commit, tk_origin=TK_ORIGIN,
                      tk_licence="Apache-2.0 (LICENSE)", tk_dirs=", ".join(d.rstrip("/") for d in TK_DIRS),
                      tk_markers=", ".join(TK_MARKERS))
    doc = "\n".join("\n".join(textwrap.wrap(par.replace("\n", " "), 96, break_long_words=False, break_on_hyphens=False))
                    for par in text.split("\n\n"))
    rows = rows + nvml_return_rows(rows)
    rows = sorted(set(rows), key=lambda r: (r[0], r[1], r[2]))
    path = common.write_table("container", meta, markers_for(rows), TEMPLATES, rows, doc=doc)
    print("%s: %d rows (pin: CLI contexts %d, composed %d, other CLI lines %d; earlier releases' wordings %d)" % (
        path, len(rows), counts["contexts"], counts["composed"], counts["plain"], counts["older"]))


if __name__ == "__main__":
    main()
