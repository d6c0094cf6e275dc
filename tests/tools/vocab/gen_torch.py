#!/usr/bin/env python3
"""Generate module_utils/gpu_runbook/vocab/torch.py: the messages PyTorch's distributed runtime
prints (c10d's ProcessGroupNCCL watchdog and heartbeat monitor, NCCLUtils, TCPStore and its
sockets, the Flight Recorder), torchrun's elastic agent (torch.distributed.elastic, torch.
distributed.run / launcher), torch.distributed's Python front end (distributed_c10d.py,
rendezvous.py) and the DataLoader (torch/csrc/DataLoader.cpp, torch/utils/data), with the c10
CUDA check wrapper (c10/cuda/CUDAException.*).

    pip download torch==2.13.0 --no-deps -d /tmp/torchwheel
    mkdir /tmp/torchsrc && cd /tmp/torchsrc && unzip -q /tmp/torchwheel/torch-2.13.0*.whl 'torch/*'
    # the C++ sources (not in the wheel) at their repository paths under the same folder:
    #   torch/csrc/distributed/c10d/{ProcessGroupNCCL,NCCLUtils,TCPStore,socket,FlightRecorder}.cpp,
    #   torch/csrc/DataLoader.cpp, c10/cuda/CUDAException.cpp  (see CPP_SOURCES for where each was read)
    .venv/bin/python tests/tools/vocab/gen_torch.py --src /tmp/torchsrc [--rev 2.13.0] [--libs DIR]

``--src`` is either such a folder (the wheel unpacked, Python files at ``torch/...``, headers at
``torch/include/...``, the C++ files overlaid at their repository paths) or a pytorch/pytorch
clone / bare mirror, then with ``--rev`` the commit or tag to read (every path at its repository
location). Without ``--rev`` the version and commit are read from ``torch/version.py`` and the
expected version is PIN. ``--libs DIR`` (optional, report only, the module does not depend on
it): a folder of ``strings``-dumps (``*.strings``) of the release's shared libraries; the
generator reports each C++ row whose literal text is not in any of them (a message the build
does not carry, or one whose wording changed).

Why an overlay: pytorch/pytorch is a 4 GB repository (too big for this environment's fetch), so
the Python side and the headers are the torch 2.13.0 wheel's own files (exactly git_version
cf30153c4c13), while the C++ files were read from the public search index's stored copies of
pytorch/pytorch: the copy the index holds is not at the wheel's commit (CPP_SOURCES says which
copy, its commit where the index names one, and how it compares with the 2.13.0 binaries).

Extraction (no compiler): C++ comments are blanked (lines kept); message sites are LOG(ERROR|
WARNING|INFO|FATAL) << streams, C10_LOG_EVERY_MS, TORCH_WARN[_ONCE], TORCH_CHECK[_WITH|_VALUE|
_TYPE] (the arguments after the condition), C10_THROW_ERROR / C10D_THROW_ERROR / C10_BUILD_ERROR,
std::runtime_error, C10D_ERROR / WARNING / INFO (fmt, printed after "[c10d] "), fprintf(stderr),
the DataLoader's SIGNAL_HANDLER, std::ostringstream streams, and messages built into a variable
(std::string x = ..., c10::str(...), fmt::format(...)). Adjacent literals are joined, every other
argument is %s (fmt's {} too), a literal % is %%. VLOG, C10D_DEBUG/TRACE and TORCH_INTERNAL_ASSERT
are left out (debug output, or "please report a bug to PyTorch"). Python: ``raise X(msg)``,
logger.info/warning/error/exception/critical, warnings.warn, messages assigned to a
*msg*/*message*/*err*/*reason* variable, and module-level message templates (string.Template,
one row per printed line); f-strings, %-format, str.format and + are joined the same way.
logger.debug is left out.

Classification: RULES below, first match wins, by source file, site (exception, ERROR, WARNING,
INFO log) and keywords of the message, each with its reason; the module docstring repeats them.
"""

import argparse
import ast
import collections
import glob
import os
import re
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402

sys.path.insert(0, os.path.join(common.REPO, "module_utils"))
from gpu_runbook.taxonomy import KINDS  # noqa: E402

GENERATOR = "tests/tools/vocab/gen_torch.py"
PIN = "2.13.0"
EMITTER = "PyTorch"

# ---------------------------------------------------------------------------------------------
# what is read

# C++ sources not in the wheel: repository path -> where the copy was read (the search index's
# stored copy of pytorch/pytorch; "commit" when the index names it, else the index id).
# Comparison with the release binaries (torch 2.13.0 CPU wheel for CPU-built files, torch
# 2.14.1 CUDA wheel for ProcessGroupNCCL / NCCLUtils, which the CPU build lacks) by --libs.
CPP_SOURCES = {
    "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp": (
        "search-index copy id 23264163 (commit not named by the index; 223461 characters, with the "
        "Watchdog / HeartbeatMonitor classes and ProcessGroupNCCL::shrink: a 2025 main, near 2.14.1)"),
    "torch/csrc/distributed/c10d/NCCLUtils.cpp": (
        "commit 0323141fed065e2d6dbdaab41c93ea979ce8004e (older than the pin: the getNcclErrorDetailStr "
        "texts are those of 2.14.1, the newer NCCLComm messages are missing)"),
    "torch/csrc/distributed/c10d/TCPStore.cpp": (
        "search-index copy id 439643406 (commit not named; older than the pin: lacks 2.13's TCPStore "
        "barrier)"),
    "torch/csrc/distributed/c10d/socket.cpp": "commit 056b6f38c0c210908e686eb3457d2b6f92cf74d9",
    "torch/csrc/distributed/c10d/FlightRecorder.cpp": (
        "search-index copy id 5847807431 (a documentation page quoting the file whole, 4139 "
        "bytes; line numbers are the quoted file's)"),
    "torch/csrc/DataLoader.cpp": (
        "commit 03d4ef67a3b6390069b2c3cc55db0ae575aedbaa (2.13 builds the same texts with fmt)"),
    "c10/cuda/CUDAException.cpp": "commit 0e4c6cd66277444e521c0d3190b00ee3992cff03",
}
# headers shipped in the wheel (torch/include/...): exactly the pin
HEADERS = (
    "torch/csrc/distributed/c10d/NCCLUtils.hpp",
    "torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp",
    "torch/csrc/distributed/c10d/FlightRecorder.hpp",
    "torch/csrc/distributed/c10d/FlightRecorderDetail.hpp",
    "torch/csrc/distributed/c10d/Utils.hpp",
    "torch/csrc/distributed/c10d/TCPStore.hpp",
    "torch/csrc/distributed/c10d/socket.h",
    "c10/cuda/CUDAException.h",
)
PY_GLOBS = (
    "torch/distributed/elastic/**/*.py",
    "torch/distributed/run.py",
    "torch/distributed/launcher/api.py",
    "torch/distributed/distributed_c10d.py",
    "torch/distributed/rendezvous.py",
    "torch/distributed/c10d_logger.py",
    "torch/distributed/flight_recorder/**/*.py",
    "torch/utils/data/dataloader.py",
    "torch/utils/data/_utils/*.py",
)
LEFT_OUT = (
    "c10/cuda/CUDACachingAllocator.cpp ('CUDA out of memory. Tried to allocate ...'): its message "
    "lies past the first 100,000 characters the index searches and the file (over 200 KB) was not "
    "read whole; joblog/patterns.py CUDA_OOM reads that line already",
    "TCPStoreLibUvBackend.cpp and TCPStoreBackend.cpp (the store server's per-client INFO/WARNING "
    "and internal checks): the stored copies are older than the pin and worded differently",
    "ProcessGroupGloo, ProcessGroupMPI/UCC, symmetric memory, DDP reducer: not the NCCL path",
)

# Older releases' wordings of messages the pin words otherwise, as (path@tag, line, format), each
# read from that release's own binary (torch/lib/libtorch_cuda.so of its PyPI CUDA wheel, `strings`),
# since pytorch/pytorch cannot be fetched here. The line is the one that release's builds print in the
# message's glog prefix. Classified by RULES like the pin's rows.
OLDER_ROWS = (
    # ProcessGroupNCCL's destructor, torch 2.4.1 (git 38b96d3399a6) and 2.5.1 (git a8d6afb511a6): the
    # literal "WARNING: process group has NOT been destroyed before we destruct ProcessGroupNCCL. " (2.4
    # nightlies: "... before it is being destructed."), then "On normal program exit, ..."; 2.8+ word it
    # as the pin's "destroy_process_group() was not called before program exit"; 2.5.1's builds print
    # ProcessGroupNCCL.cpp:1250
    ("torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp@v2.5.1", 1250,
     "WARNING: process group has NOT been destroyed before %s"),
)

# ---------------------------------------------------------------------------------------------
# reading the source


class Source(object):
    """A folder (wheel + overlay) or a git clone/mirror at a revision."""

    def __init__(self, src, rev=None):
        self.src, self.rev = src, rev

    def read(self, path):
        if self.rev:
            try:
                return common.show(self.src, self.rev, path)
            except Exception:
                return None
        for cand in (path, "torch/include/" + path):
            full = os.path.join(self.src, cand)
            if os.path.isfile(full):
                with open(full, encoding="utf-8", errors="replace") as fh:
                    return fh.read()
        return None

    def py_files(self):
        out = []
        if self.rev:
            allf = common.ls_files(self.src, self.rev, "torch/distributed", "torch/utils/data")
            for g in PY_GLOBS:
                rx = re.compile("^" + re.escape(g).replace(r"\*\*/", "(?:.*/)?").replace(r"\*", "[^/]*") + "$")
                out.extend(p for p in allf if rx.match(p))
        else:
            for g in PY_GLOBS:
                out.extend(os.path.relpath(p, self.src)
                           for p in glob.glob(os.path.join(self.src, g), recursive=True))
        return sorted(set(p for p in out if "/test" not in p))

    def version(self):
        text = self.read("torch/version.py") or ""
        ver = re.search(r"__version__ = '([^']+)'", text)
        git = re.search(r"git_version = '([0-9a-f]{40})'", text)
        return (ver.group(1).split("+")[0] if ver else None), (git.group(1) if git else None)


# ---------------------------------------------------------------------------------------------
# C++: comments, literals, calls

def blank_comments(text):
    """Comments replaced by blanks (newlines kept), strings and chars untouched."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _skip_string(s, i):
    q = s[i]
    j = i + 1
    while j < len(s) and s[j] != q:
        j += 2 if s[j] == "\\" else 1
    return j + 1


def matching(s, i):
    """Index of the bracket closing the one at s[i]."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    stack, j = [], i
    while j < len(s):
        c = s[j]
        if c in "\"'":
            j = _skip_string(s, j)
            continue
        if c in pairs:
            stack.append(pairs[c])
        elif c in ")]}":
            if not stack or stack.pop() != c:
                return -1
            if not stack:
                return j
        j += 1
    return -1


def split_top(s, sep):
    """Split at top-level ``sep`` (',', '+', '<<'); brackets and strings respected."""
    parts, depth, start, j = [], 0, 0, 0
    while j < len(s):
        c = s[j]
        if c in "\"'":
            j = _skip_string(s, j)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and s.startswith(sep, j):
            if sep == "+" and (s.startswith("++", j) or s.startswith("+=", j) or s[j - 1:j] == "+"):
                j += 1
                continue
            parts.append(s[start:j])
            j += len(sep)
            start = j
            continue
        j += 1
    parts.append(s[start:])
    return [p.strip() for p in parts]


_LIT = re.compile(r'\s*(?:u8|L|u|U)?"((?:[^"\\\n]|\\.)*)"')


def literals(expr, macros=None):
    """Adjacent C string literals (with inttypes macros) -> their text, or None when ``expr`` is
    not made of literals alone."""
    pos, parts = 0, []
    macros = dict(common.PRI_MACROS, **(macros or {}))
    while pos < len(expr):
        m = _LIT.match(expr, pos)
        if m:
            parts.append(common.c_unescape(m.group(1)))
            pos = m.end()
            continue
        m = re.match(r"\s*([A-Za-z_]\w*)", expr[pos:])
        if m and m.group(1) in macros and parts:
            parts.append(macros[m.group(1)])
            pos += m.end()
            continue
        if expr[pos:].strip() == "":
            break
        return None
    return "".join(parts) if parts else None


def esc(text):
    return text.replace("%", "%%")


def fmt_braces(text):
    """fmt's replacement fields -> %s, {{ }} -> { }, % -> %%."""
    out, i = [], 0
    while i < len(text):
        if text.startswith("{{", i):
            out.append("{")
            i += 2
        elif text.startswith("}}", i):
            out.append("}")
            i += 2
        elif text[i] == "{":
            j = text.find("}", i)
            if j < 0:
                out.append(esc(text[i:]))
                break
            out.append("%s")
            i = j + 1
        else:
            out.append(esc(text[i]))
            i += 1
    return "".join(out)


class CppFile(object):
    def __init__(self, path, text):
        self.path = path
        self.raw = text
        # comments blanked, macro line continuations joined (lines kept)
        self.text = blank_comments(text).replace("\\\n", " \n")
        # string constants: (position, name, text); a lower-case name is a local (used only
        # within CONST_REACH characters after its definition), an upper-case one file-wide
        self.consts = []
        for m in re.finditer(r"constexpr\s+(?:const\s+)?(?:char\s*\*\s*(?:const\s+)?|auto\s*\*\s*)(\w+)\s*=\s*"
                             r"((?:\s*\"(?:[^\"\\\n]|\\.)*\")+)\s*;", self.text):
            self.consts.append((m.start(), m.group(1), literals(m.group(2))))
        self.here = 0  # position of the site being read (for local constants)
        self.streams = set(re.findall(r"std::(?:o?stringstream)\s+(\w+)", self.text))

    def line_of(self, pos):
        return self.raw.count("\n", 0, pos) + 1

    # -- expressions ----------------------------------------------------------------------
    def expr(self, e, style="concat"):
        """One argument / operand -> format text."""
        e = e.strip()
        while e.startswith("(") and matching(e, 0) == len(e) - 1:
            e = e[1:-1].strip()
        if not e:
            return ""
        lit = literals(e)
        if lit is not None:
            return fmt_braces(lit) if style == "fmt" else (lit if style == "printf" else esc(lit))
        parts = split_top(e, "+")
        if len(parts) > 1:
            return "".join(self.expr(p) for p in parts)
        m = re.match(r"(c10::str|fmt::format|std::string|fmt::vformat)\s*\(", e)
        if m and matching(e, m.end() - 1) == len(e) - 1:
            args = split_top(e[m.end():-1], ",")
            if m.group(1) == "c10::str":
                return "".join(self.expr(a) for a in args)
            if m.group(1) == "fmt::format":
                return self.expr(args[0], "fmt") if literals(args[0]) is not None else "%s"
            if m.group(1) == "std::string" and len(args) == 1:
                return self.expr(args[0])
            return "%s"
        if re.fullmatch(r"[A-Za-z_]\w*", e):
            c = self.const(e)
            if c is not None:
                return fmt_braces(c) if style == "fmt" else esc(c)
        return "%s"

    CONST_REACH = 600

    def const(self, name):
        best = None
        for pos, n, text in self.consts:
            if n != name or text is None:
                continue
            if re.fullmatch(r"[A-Z][A-Z0-9_]+|k[A-Z]\w*", name) or 0 <= self.here - pos <= self.CONST_REACH:
                best = text
        return best

    def join(self, args, style="concat"):
        return "".join(self.expr(a, style) for a in args)

    # -- sites --------------------------------------------------------------------------
    SITE = re.compile(
        r"\b(LOG|C10_LOG_EVERY_MS|TORCH_WARN_ONCE|TORCH_WARN|TORCH_CHECK_WITH|TORCH_CHECK_VALUE|TORCH_CHECK_TYPE|"
        r"TORCH_CHECK|C10_THROW_ERROR|C10D_THROW_ERROR|C10D_CHECK_WITH|C10_BUILD_ERROR|C10D_ERROR|C10D_WARNING|"
        r"C10D_INFO|SIGNAL_HANDLER|fprintf|recordError|std::runtime_error|std::string\s+\w+\s*=|"
        r"(?:auto|const\s+auto|std::string)\s+\w+\s*=\s*(?=c10::str|fmt::format)|\w+\s*=\s*c10::str|"
        r"\w+\s*=\s*fmt::format|interpret\s*\+?=|err\s*=|\w+\.append\s*\(|\w+\s*<<|return\s+(?=c10::str|fmt::format))")

    def sites(self):
        """-> [(line, site, format)]: site is one of exception, error, warning, info, built."""
        out, consumed_to = [], -1
        for m in self.SITE.finditer(self.text):
            if m.start() < consumed_to:
                continue
            name = m.group(1)
            self.here = m.start()
            res = self._site(m, name)
            if res is None:
                continue
            end, site, fmt = res
            consumed_to = end
            if fmt is None:
                continue
            out.append((self.line_of(m.start()), site, fmt))
        return out

    def _call(self, m):
        """Arguments of the call whose '(' follows the match (or None), and the end index."""
        i = self.text.find("(", m.end())
        if i < 0 or self.text[m.end():i].strip():
            return None, m.end()
        j = matching(self.text, i)
        if j < 0:
            return None, m.end()
        return split_top(self.text[i + 1:j], ","), j + 1

    def _stream(self, start):
        """The ``<< a << b ...;`` operands from ``start`` (just after the stream head)."""
        semi = start
        depth = 0
        while semi < len(self.text):
            c = self.text[semi]
            if c in "\"'":
                semi = _skip_string(self.text, semi)
                continue
            if c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
                if depth < 0:
                    break
            elif c == ";" and depth == 0:
                break
            semi += 1
        body = self.text[start:semi].strip()
        if not body.startswith("<<"):
            return None, semi
        return split_top(body[2:], "<<"), semi

    def _site(self, m, name):
        t = self.text
        if name == "LOG" or name == "C10_LOG_EVERY_MS":
            args, end = self._call(m)
            if not args:
                return None
            level = args[0].strip().upper()
            ops, end2 = self._stream(end)
            if ops is None:
                return None
            site = {"ERROR": "error", "FATAL": "error", "WARNING": "warning", "INFO": "info"}.get(level)
            if site is None:
                return end2, None, None
            return end2, site, self.join(ops)
        if name in ("TORCH_WARN", "TORCH_WARN_ONCE"):
            args, end = self._call(m)
            return (end, "warning", self.join(args)) if args else None
        if name in ("TORCH_CHECK", "TORCH_CHECK_VALUE", "TORCH_CHECK_TYPE"):
            args, end = self._call(m)
            if not args or len(args) < 2:
                return (end, None, None) if args else None
            return end, "exception", self.join(args[1:])
        if name in ("TORCH_CHECK_WITH", "C10D_CHECK_WITH"):
            args, end = self._call(m)
            if not args or len(args) < 3:
                return (end, None, None) if args else None
            return end, "exception", self.join(args[2:])
        if name in ("C10_THROW_ERROR", "C10D_THROW_ERROR", "C10_BUILD_ERROR"):
            args, end = self._call(m)
            if not args or len(args) < 2:
                return None
            return end, "exception", self.join(args[1:])
        if name == "std::runtime_error":
            args, end = self._call(m)
            return (end, "exception", self.join(args)) if args else None
        if name in ("C10D_ERROR", "C10D_WARNING", "C10D_INFO", "recordError"):
            args, end = self._call(m)
            if not args:
                return None
            site = {"C10D_ERROR": "error", "C10D_WARNING": "warning", "C10D_INFO": "info",
                    "recordError": "warning"}[name]
            head = self.expr(args[0], "fmt")
            return end, site, "[c10d] " + head
        if name == "SIGNAL_HANDLER":
            args, end = self._call(m)
            if not args or len(args) < 3:
                return None
            return end, "error", self.expr(args[2])
        if name == "fprintf":
            args, end = self._call(m)
            if not args or len(args) < 2 or args[0] != "stderr":
                return None
            return end, "error", self.expr(args[1], "printf")
        if name.startswith("return"):  # return c10::str(...) / fmt::format(...): a message helper
            rhs, end = self._assign_rhs(m.end())
            return (end, "built", self.expr(rhs)) if rhs else None
        if name.endswith("("):  # check_message.append("...")
            args, end = self._call(re.match(r"[\w.]+", t[m.start():]) and
                                   re.compile(r"[\w.]+\s*").match(t, m.start()))
            return (end, "built", self.join(args)) if args and '"' in args[0] else None
        if name.endswith("<<"):
            var = name[:-2].strip()
            if var not in self.streams:
                return None
            ops, end = self._stream(m.end() - 2)
            return (end, "built", self.join(ops)) if ops else None
        # assignments: std::string x = ...; auto x = c10::str(...); x = fmt::format(...); interpret = "..."
        eq = t.find("=", m.start())
        if eq < 0:
            return None
        semi_ops, end = self._assign_rhs(eq + 1)
        if semi_ops is None:
            return None
        fmt = self.expr(semi_ops)
        return end, "built", fmt

    def _assign_rhs(self, start):
        j, depth = start, 0
        while j < len(self.text):
            c = self.text[j]
            if c in "\"'":
                j = _skip_string(self.text, j)
                continue
            if c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
                if depth < 0:
                    return None, j
            elif c == ";" and depth == 0:
                break
            j += 1
        rhs = self.text[start:j].strip()
        if '"' not in rhs:
            return None, j
        if rhs.startswith("?") or re.match(r"[\w:]+\s*\?", rhs):
            return None, j
        return rhs, j


# ---------------------------------------------------------------------------------------------
# Python

LOG_LEVELS = {"info": "info", "warning": "warning", "warn": "warning", "error": "error",
              "exception": "error", "critical": "error", "fatal": "error"}
_PY_CONV = re.compile(r"%(?:\((\w+)\))?([-+ #0]*\d*(?:\.\d+)?)([diouxXeEfFgGcrsa%])")


def py_printf(text):
    """A Python %-format -> our printf: %r/%a -> %s, %(name)x -> %x."""
    def sub(m):
        conv = m.group(3)
        if conv == "%":
            return "%%"
        if conv in "ra":
            conv = "s"
        return "%" + m.group(2) + conv
    out, pos = [], 0
    for m in _PY_CONV.finditer(text):
        out.append(text[pos:m.start()].replace("%", "%%"))
        out.append(sub(m))
        pos = m.end()
    out.append(text[pos:].replace("%", "%%"))
    return "".join(out)


def py_braces(text):
    return fmt_braces(text)


class PyFile(object):
    def __init__(self, path, text, exceptions=None):
        self.path, self.text = path, text
        self.tree = ast.parse(text)
        self.exceptions = exceptions  # exception class name -> its qualified name (a bare raise prints it)
        self.consts = {}
        for node in self.tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                self.consts[node.targets[0].id] = node.value.value

    def expr(self, node, printf=False):
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                return py_printf(node.value) if printf else esc(node.value)
            return "%s"
        if isinstance(node, ast.JoinedStr):
            out = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    out.append(esc(str(v.value)))
                else:
                    out.append("%s")
            return "".join(out)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and self._stringy(node.left):
            return self.expr(node.left, printf=True)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self.expr(node.left, printf) + self.expr(node.right, printf)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format" \
                and isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str):
            return py_braces(node.func.value.value)
        if isinstance(node, ast.Name) and node.id in self.consts:
            return esc(self.consts[node.id])
        return "%s"

    @staticmethod
    def _stringy(node):
        return isinstance(node, (ast.Constant, ast.JoinedStr)) and not (
            isinstance(node, ast.Constant) and not isinstance(node.value, str))

    def _has_literal(self, node):
        for n in ast.walk(node):
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.strip():
                return True
        return False

    def sites(self):
        out = []
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Raise) and node.exc is not None and self.exceptions is not None:
                bare = node.exc.func if isinstance(node.exc, ast.Call) and not node.exc.args \
                    and not node.exc.keywords else node.exc
                if isinstance(bare, ast.Name) and bare.id in self.exceptions:
                    out.append((node.lineno, "exception:" + bare.id, esc(self.exceptions[bare.id])))
                    continue
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                call = node.exc
                exc = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
                arg = call.args[0] if call.args else next(
                    (k.value for k in call.keywords if k.arg in ("msg", "message")), None)
                if arg is not None and self._has_literal(arg):
                    fmt = self.expr(arg)
                    if isinstance(arg, ast.Constant) and re.search(r"\{\w*\}", arg.value):
                        fmt = py_braces(arg.value)  # formatted later
                    out.append((node.lineno, "exception:" + exc, fmt))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                attr = node.func.attr
                recv = node.func.value
                rname = recv.id if isinstance(recv, ast.Name) else (
                    recv.attr if isinstance(recv, ast.Attribute) else "")
                if attr in LOG_LEVELS and re.search(r"log", rname, re.I) and node.args \
                        and self._has_literal(node.args[0]):
                    out.append((node.lineno, LOG_LEVELS[attr], self.expr(node.args[0], printf=len(node.args) > 1)))
                elif attr == "warn" and rname == "warnings" and node.args and self._has_literal(node.args[0]):
                    out.append((node.lineno, "warning", self.expr(node.args[0])))
            elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                tgt = node.targets[0]
                tname = tgt.id if isinstance(tgt, ast.Name) else (tgt.attr if isinstance(tgt, ast.Attribute) else "")
                if re.search(r"(?i)(msg|message|^err|error_str|reason)", tname) and \
                        isinstance(node.value, (ast.JoinedStr, ast.BinOp, ast.Constant, ast.Call)) and \
                        self._has_literal(node.value) and node not in self.tree.body:
                    fmt = self.expr(node.value)
                    if isinstance(node.value, ast.Constant):  # formatted later with % or .format
                        v = node.value.value
                        fmt = py_printf(v) if _PY_CONV.search(v.replace("%%", "")) else (
                            py_braces(v) if re.search(r"\{\w*\}", v) else fmt)
                    if fmt.replace("%s", "").strip():
                        out.append((node.lineno, "built", fmt))
        # module-level templates printed line by line (string.Template ${x})
        for node in self.tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and re.search(r"TEMPLATE|FORMAT", node.targets[0].id) and isinstance(node.value, ast.Constant) \
                    and isinstance(node.value.value, str) and "${" in node.value.value:
                for k, ln in enumerate(node.value.value.split("\n")):
                    fmt = re.sub(r"\$\{\w+\}|\$\w+", "%s", esc(ln))
                    if fmt.replace("%s", "").strip():
                        out.append((node.lineno + k, "template", fmt))
        return out


def exception_classes(path, text):
    """Exception classes a Python file defines -> {name: qualified name}."""
    mod = path[:-3].replace("/", ".")
    if mod.endswith(".__init__"):
        mod = mod[:-9]
    out = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef) and any(
                re.search(r"(Error|Exception|Failure)$", getattr(b, "id", getattr(b, "attr", ""))) for b in node.bases):
            out[node.name] = mod + "." + node.name
    return out


# ---------------------------------------------------------------------------------------------
# classification: (file regex, site regex, message regex, kind, severity, meaning); the first
# rule that matches a row wins. Sites: C++ exception / error / warning / info / built (a message
# assembled into a variable, logged or thrown later); Python exception:<class>, error, warning,
# info, built, template. A kind may be written "kind/category" (else its first category). A comment
# on each group says why.

APP, ERR, CFG, DL, DRV = ("logged_application_error", "logged_error", "logged_nccl_config_error",
                          "logged_dataloader_error", "logged_driver_error")
B = "benign"
CPP = r"^(torch/csrc/|c10/)"
PG = r"ProcessGroupNCCL\.(cpp|hpp)$"
STORE = r"(TCPStore\.(cpp|hpp)|socket\.(cpp|h)|Utils\.hpp)$"
ELASTIC = r"^torch/distributed/(elastic/|run\.py|launcher/)"
RDZV = r"^torch/distributed/elastic/rendezvous/"
FR = r"(^torch/distributed/flight_recorder/|FlightRecorder)"
DLOAD = r"(^torch/utils/data/|DataLoader\.cpp$)"
EXC = r"^exception"

RULES = (
    # --- collective timeouts: the watchdog (or a blocking wait) saw a collective run past its
    # timeout: the engine's dedicated watchdog readers find the culprit rank
    (PG, "", r"Watchdog caught collective operation timeout", "nccl_watchdog_timeout", "critical",
     "a collective ran past the process group's timeout: the ranks waited for a rank that never reached it"),
    (PG, "", r"timed out in blocking wait", "nccl_watchdog_timeout", "critical",
     "a collective timed out while the caller waited on it (TORCH_NCCL_BLOCKING_WAIT)"),
    # the heartbeat monitor: the watchdog thread itself stopped making progress
    (PG, "", r"watchdog got stuck for", "nccl_watchdog_stuck", "critical",
     "the NCCL watchdog thread hung (usually a CUDA/NCCL call blocked in the driver); the monitor kills "
     "the process"),
    # consequences of a timeout or an error: they do not say which
    (PG, "", r"Some NCCL operations have failed or timed out", ERR, "critical",
     "a collective failed or timed out (the line before says which); the process is taken down"),
    (PG, "", r"taking the entire process down", ERR, "critical",
     "the process is terminated after a failed or timed-out collective (a consequence)"),
    (PG, "", r"failure detected by watchdog at work sequence id", ERR, "critical",
     "the watchdog found a failed or timed-out collective (sequence numbers show how far this rank got)"),
    (PG, "", r"Received a dump signal due to a collective timeout", ERR, "critical",
     "a rank (this one or another) hit a collective timeout or error and asked every rank to dump its "
     "flight recorder"),
    (PG, "", r"Terminating the process after attempting to dump debug info", ERR, "critical",
     "the heartbeat monitor ends the process after a collective timeout, error or watchdog hang"),
    (PG, "", r"monitor thread is disabled, but would have terminated", ERR, "warning",
     "a collective timeout, error or watchdog hang was seen; the monitor is disabled so the process goes on"),
    (PG, "", r"watchdog thread terminated with exception", ERR, "critical",
     "the watchdog stopped on an exception (its text, often an NCCL or CUDA error, says why)"),
    (PG, "", r"raised the following async exception", "nccl_error", "critical",
     "an NCCL communicator reported an asynchronous error for a collective (its text follows)"),
    (PG, "", r"^NCCL error: ", "nccl_error", "critical", "an NCCL call failed; the NCCL text decides why"),
    (PG, "", r"NCCL communicator encountered error set by ProcessGroupNCCL", ERR, "critical",
     "the communicator was aborted by ProcessGroupNCCL itself (timeout or error seen earlier)"),
    (PG, "", r"remote error detected from rank", ERR, "critical",
     "another rank of the group reported an error (TORCH_NCCL_PROPAGATE_ERROR): that rank failed first"),
    (PG, "", r"flight recorder dump signal from another rank|First PG on this rank to signal dumping|"
             r"Sending extra dumping signal", ERR, "warning",
     "a collective timeout or error was seen (on another rank, or first on this one): flight recorders dump"),
    (PG, "", r"Stack trace of the failed collective|preparing to dump debug info|Dumping c\+\+ stacktraces|"
             r"Finished c\+\+ stacktraces", ERR, "info",
     "diagnostics printed after a failed or timed-out collective (a consequence)"),
    (PG, "", r"Failed to (check|get|broadcast)|Failed to get timeout rank|Failed to get source rank", ERR, "warning",
     "the flight-recorder signal could not use the store: the store server (rank 0's agent) is probably gone"),
    (PG, "", r"Future for .* timed out after|Exception thrown when waiting for future|Unknown exception thrown when",
     ERR, "warning", "a flight-recorder dump or communicator abort did not finish in time (after a failure)"),
    (PG, "", r"Could not acquire GIL within", APP, "warning",
     "another Python thread held the GIL while the process was being torn down: a GIL deadlock can cause the hang"),
    (PG, "", r"TORCH_NCCL_DESYNC_DEBUG report", ERR, "warning",
     "the desync report (which rank is behind) could not be built"),
    # the engine's launch reader (joblog/launch_lines.py) reads these as ranks that never met: agree
    (PG, "", r"is setting up NCCL communicators? and retrieving ncclUniqueId|"
             r"This may indicate a possible application crash on rank 0", "launch_rendezvous_timeout", "critical",
     "this rank could not fetch the NCCL unique id from the store: rank 0 crashed or has not reached the "
     "collective, or the store is unreachable"),
    (PG, "", r"no GPUs found", ERR, "critical",
     "CUDA sees no GPU in this process (CUDA_VISIBLE_DEVICES, the allocation or the driver)"),
    (PG, "", r"Guessing device ID based on global rank", APP, "warning",
     "no device_id was given to init_process_group: a rank-to-GPU guess can hang a heterogeneous job"),
    (PG, "", r"destroy_process_group\(\) was not called|process group has NOT been destroyed before", APP, "info",
     "the program exited without destroy_process_group(): resources may leak (normal exit otherwise)"),
    (PG, "", r"Tensor found on device|not on device passed to init_process_group", APP, "critical",
     "a collective was called on a tensor on another GPU than the process group's device"),
    (PG, "", r"slept for .* watchdog hang", ERR, "info",
     "the heartbeat monitor waits before killing a process it believes hung (after a timeout or watchdog hang)"),
    (PG, "", r"unbatched P2P op", APP, "info",
     "unbatched send/recv are serialized with the group's other collectives (a performance note)"),
    (PG, "^info$", r"", B, "ok",
     "ProcessGroupNCCL's INFO progress or configuration line (communicator setup, shutdown, dumps written): "
     "no fault"),
    (PG, "", r"Hash of .* to NCCL", B, "ok",
     "collective hash debug output (TORCH_DISTRIBUTED_DEBUG=DETAIL): no fault"),
    (PG, "", r"named pipe", ERR, "warning",
     "the named pipe that triggers flight-recorder dumps could not be set up (no dump on request)"),
    (PG, "", r"NCCL>=|NCCL 2\.|NCCL version|requires NCCL|NCCL >=|is not supported in this NCCL",
     CFG, "warning", "the job uses a feature the NCCL PyTorch was built with does not have"),
    (PG, "", r"TORCH_NCCL_|NCCL_ALGO|deterministic mode", B, "ok",
     "ProcessGroupNCCL reports its configuration (environment variables) at start-up: no fault"),
    (PG, "", r"requires a single-element|Incorrect (output|input) list size|requires empty (input|output)", APP,
     "warning", "ProcessGroupNCCL rejected a gather/scatter argument: the job's code"),
    (PG, EXC, r"", APP, "warning",
     "ProcessGroupNCCL rejected a call (tensor, device, option or state check): the job's code"),
    (PG, "^warning$", r"", APP, "warning", "ProcessGroupNCCL warns about how it is used (deprecation, P2P)"),
    (PG, "", r"", ERR, "warning", "ProcessGroupNCCL reported an error that does not name its cause"),

    # --- NCCLUtils: how PyTorch surfaces an NCCL result (the NCCL text decides)
    (r"NCCLUtils\.(cpp|hpp)$", "", r"ncclInvalidUsage", "nccl_invalid_usage", "critical",
     "NCCL rejected a call as invalid usage (mismatched or malformed calls across ranks)"),
    (r"NCCLUtils\.(cpp|hpp)$", "", r"ncclInvalidArgument", APP, "critical",
     "NCCL rejected an argument of a call: the caller's bug"),
    # ncclRemoteError: names a network error or a peer's exit and establishes neither, as NCCL's own table
    # (vocab/nccl.py CODES) and the engine's NCCL reader (joblog/event_findings.py) say: unknown
    (r"NCCLUtils\.(cpp|hpp)$", "", r"^ncclRemoteError", "nccl_error/unknown", "warning",
     "NCCL says a call failed on a network error or a remote process that exited: look at the peer first"),
    (r"NCCLUtils\.(cpp|hpp)$", "", r"NCCL error in: |^ncclUnhandledCudaError|^ncclSystemError|^ncclInternalError|"
                                   r"Unknown NCCL error|Last error|unexpected exit of a remote peer",
     "nccl_error", "critical", "an NCCL call failed; the NCCL result and last-error text say why"),
    (r"NCCLUtils\.(cpp|hpp)$", "", r"NCCL timeout", ERR, "critical",
     "an NCCL call or communicator initialisation did not finish in time (non-blocking mode)"),
    (r"NCCLUtils\.(cpp|hpp)$", "", r"NCCL communicator was aborted", ERR, "critical",
     "the communicator was aborted earlier (timeout or error); the original reason follows"),
    (r"NCCLUtils\.(cpp|hpp)$", "", r"Error opening file for writing", ERR, "warning",
     "the flight-recorder dump could not be written (path or permission)"),
    (r"NCCLUtils\.(cpp|hpp)$", "", r"NCCLPG debug info|NCCL communicator is initialized|retire_id abandoned", B, "ok",
     "an INFO line of the NCCL communicator or its debug dump: no fault"),
    (r"NCCLUtils\.(cpp|hpp)$", "", r"TORCH_NCCL|non-blocking", CFG, "warning",
     "an NCCL-related environment setting has no effect or is experimental"),
    (r"NCCLUtils\.(cpp|hpp)$", "", r"", ERR, "warning", "an NCCL helper reported an error"),

    # --- the store (TCPStore client, sockets): start-up meeting of the ranks
    (STORE, "", r"wait timeout after|Timed out after .* waiting for clients|has timed out after .* while trying to "
                r"connect|failed to connect/validate to host .* - timed out", "launch_rendezvous_timeout", "critical",
     "the ranks did not all meet through the TCPStore in time (a rank or the store server is missing or late)"),
    (STORE, "", r"cannot be retrieved \(gai error", CFG, "critical",
     "the store's host name could not be resolved (MASTER_ADDR / rendezvous endpoint)"),
    (STORE, "", r"failed to bind|failed to listen|address reuse option|does not support IPv4|"
                r"could not be initialized on any address", CFG, "critical",
     "the store server could not listen on its port (already in use, or no usable address)"),
    (STORE, "", r"somaxconn|use_libuv|without libuv", CFG, "warning",
     "a host or build setting limits the store (connection backlog, libuv)"),
    (STORE, "", r"No socket on .* is listening yet|has connected to|has started to listen|has taken over the "
                r"listening socket", B, "ok",
     "normal store start-up: the client waits for the server, then connects"),
    (STORE, "", r"client socket has failed to connect to", "launch_rendezvous_timeout", "warning",
     "this rank could not reach the store server (MASTER_ADDR:MASTER_PORT): not up yet, gone, or unreachable"),
    (STORE, "", r"Connection was likely closed|Socket Timeout|failed on .*: |Ping failed|failed to connect to|"
                r"has timed out, will retry|waitForInput|failed to accept|not listening for connections|"
                r"connect/validate to host .* - retrying", ERR, "warning",
     "a TCPStore connection failed or timed out: the store server (rank 0 or its agent) died or is unreachable"),
    # c10d/Utils.hpp getCvarString: an old name (NCCL_ASYNC_ERROR_HANDLING) is still read, under its new one
    (STORE, "", r"is deprecated; use", B, "ok",
     "a deprecated environment variable's name: PyTorch reads its value under the new name and goes on"),
    (STORE, "", r"Invalid value for environment variable", CFG, "warning",
     "a TORCH_*/NCCL_* environment variable has an invalid value"),
    (STORE, EXC, r"environment variable|Received an empty list|device|tensor|Split|split", APP, "warning",
     "c10d rejected an argument or environment value"),
    (STORE, "", r"", ERR, "warning", "the c10d store or socket layer reported an error"),

    # --- Flight Recorder (dump writer and the fr_trace analyser)
    (FR, "", r"mismatch|Too many mismatches|has errors", "collective_mismatch", "critical",
     "the flight-recorder analysis found ranks issuing different collectives (operation, size or order)"),
    (FR, "", r"Not all ranks joining collective", ERR, "critical",
     "the flight-recorder analysis found ranks that never reached a collective (they hung or died first)"),
    (FR, "", r"Finished writing Flight Recorder|Writing Flight Recorder|Flight Recorder trace successfully|"
             r"retire_id abandoned", B, "ok",
     "a flight-recorder trace was written (after a timeout or error elsewhere): analyse it with torchfrtrace"),
    (FR, "", r"Error (opening|writing|flushing)", ERR, "warning",
     "the flight-recorder trace could not be written (path, permission or a full disk)"),
    (FR, "^info$", r"^(internal record id|group info|collective|input sizes|output sizes|world size|expected ranks|"
                   r"total (input|output) numel)", B, "ok",
     "a field of the flight-recorder analyser's (torchfrtrace, offline) report on a collective"),
    (FR, "", r"", ERR, "info",
     "the flight recorder or its analyser (torchfrtrace) reported a problem or a finding on the traces"),

    # --- DataLoader
    (DLOAD, "", r"bus error|out of shared memory", "dataloader_shm_bus_error", "critical",
     "a DataLoader worker hit SIGBUS: /dev/shm is too small for the batches (raise --shm-size or shm limit)"),
    (DLOAD, "", r"is killed by signal|segmentation fault encountered in worker|floating-point exception encountered "
                r"in worker", "dataloader_worker_killed", "critical",
     "a DataLoader worker was killed by a signal (SIGKILL: host OOM killer; SIGSEGV/SIGFPE: a crash in it)"),
    (DLOAD, "", r"Too many open files|Pin memory thread exited", DL, "critical",
     "the DataLoader cannot talk to its workers (file-descriptor limit, or the pin-memory thread died)"),
    (DLOAD, "", r"exited unexpectedly", "dataloader_worker_exited", "critical",
     "a DataLoader worker exited with an error: its own traceback is lost (rerun with num_workers=0)"),
    (DLOAD, "", r"DataLoader timed out after", "dataloader_timeout", "critical",
     "no batch came from the DataLoader workers within its timeout"),
    (DLOAD, "", r"", DL, "warning", "the DataLoader rejected its configuration or a batch"),

    # --- c10 CUDA check wrapper (the error text itself is the CUDA table's)
    (r"^c10/cuda/", "", r"", ERR, "warning",
     "a CUDA call reported a problem; the CUDA error text that follows decides (see the CUDA vocabulary)"),

    # --- torchrun / elastic agent
    (ELASTIC, "", r"stuck in uninterruptible sleep \(D-state\)", "hung_task", "critical",
     "a worker process is stuck in the kernel (D state), usually on a GPU or NIC driver call: check the host"),
    (ELASTIC, "", r"entered uninterruptible sleep \(D-state\)", "hung_task", "warning",
     "a worker process is in the kernel's D state; torchrun marks it unhealthy if it stays"),
    (ELASTIC, "", r"did not exit after .* within", ERR, "warning",
     "a worker did not die when torchrun stopped it (it may be stuck in the kernel)"),
    (ELASTIC, "", r"^failed \(exitcode: ", ERR, "critical",
     "a worker process exited with an error: its exit code / signal and its own log say why"),
    (ELASTIC, "", r"^Signal %s \(%s\) received by PID", ERR, "critical",
     "a worker was killed by a signal (9 SIGKILL: host OOM killer or the scheduler; 6/11: a crash; 15: stopped)"),
    (ELASTIC, "^template$", r"exitcode|Root Cause|rank|traceback|error_file|host|time", ERR, "critical",
     "a line of torchrun's ChildFailedError report (which rank failed, its exit code and signal)"),
    (ELASTIC, "", r"got signal: |death signal|Got termination signal", ERR, "warning",
     "torchrun itself was told to stop (SIGTERM/SIGINT: job cancelled, time limit or preemption)"),
    (ELASTIC, "", r"Closing process .* via signal|Sending process .* closing signal|Unable to shutdown process",
     ERR, "info", "torchrun stops the remaining workers after one failed or after a stop signal (a consequence)"),
    (ELASTIC, "", r"attempts left; will restart worker group|Worker group in .* state", ERR, "warning",
     "a worker group failed; torchrun restarts it while restarts remain"),
    (ELASTIC, "", r"Error waiting on exit barrier", ERR, "warning",
     "the agents did not all reach the exit barrier in time (another node failed or is slow)"),
    (RDZV, "^exception:RendezvousTimeoutError$|", r"RendezvousTimeoutError|Rendezvous timeout occurred|"
                                                   r"deadline reached|Timeout while waiting for keys",
     "launch_rendezvous_timeout", "critical",
     "the nodes did not all join the rendezvous in time (a node is missing, late or cannot reach the endpoint)"),
    (RDZV, "", r"RendezvousClosedError|observed to be closed|is closed, terminating", ERR, "warning",
     "the rendezvous was closed: another agent ended the job (after a failure or at the end)"),
    (RDZV, "", r"connection to the C10d store has failed", "launch_rendezvous_timeout", "critical",
     "the agent could not reach the rendezvous store (the C10d backend): the endpoint is down or unreachable"),
    (RDZV, "", r"connection to etcd has failed|Timed out waiting for etcd", ERR, "critical",
     "the rendezvous backend (the C10d store or etcd) is unreachable; the inner exception says why"),
    (RDZV, "", r"no heartbeat|Detected dead node|failed to send a keep-alive|Keep-alive key .* not renewed",
     ERR, "warning", "a node's agent stopped sending rendezvous heartbeats (it died or lost the network)"),
    (RDZV, "", r"can't complete rendezvous: not enough participants|less than min_nodes|No participants left",
     "launch_rendezvous_timeout", "warning", "fewer nodes than min_nodes have joined the rendezvous so far"),
    (RDZV, "", r"corrupt|Unexpected state|needs to die|failed to shutdown", ERR, "warning",
     "the rendezvous state could not be used"),
    (RDZV, "", r"EtcdStubError", CFG, "critical",
     "the etcd rendezvous backend was chosen but python-etcd is not installed"),
    (RDZV, "", r"EtcdRendezvousRetry|Must (try )?(join|re-enter)|CAS unsuccessful|Logic error", ERR, "info",
     "the etcd rendezvous retries a join (state changed under it); printed only if it escapes"),
    (RDZV, "", r"attempt failed, will retry|Shutdown failed|Failed to start etcd server|Etcd server process exited|"
               r"out of tree plugin", ERR, "warning", "the rendezvous (or its etcd server) hit an error and retries"),
    (RDZV, EXC, r"", CFG, "critical", "the rendezvous configuration (torchrun's --rdzv-* options) is invalid"),
    (RDZV, "^(info|built)$", r"", B, "ok",
     "a rendezvous progress line (nodes joining, syncing, completing): no fault"),
    (RDZV, "", r"", ERR, "warning", "the rendezvous reported an error that does not name its cause"),
    (r"^torch/distributed/elastic/utils/(store|distributed)\.py$", "",
     r"Timed out waiting on barrier|timed out waiting for all", "launch_rendezvous_timeout", "critical",
     "the ranks or agents did not all reach a store barrier in time (missing_ranks says which)"),
    (ELASTIC, "", r"already in use|Failed to create a socket|Socket creation attempt failed", CFG, "warning",
     "the store's port is taken or no socket could be made (MASTER_PORT / endpoint)"),
    (ELASTIC, "", r"uncaught exception|Error reaping|Error running watchdog|Error terminating|Could not open the "
                  r"FileTimerServer|Could not send the FileTimerRequest|Error running", ERR, "warning",
     "torchrun's worker timer (expired-timer reaping) failed"),
    (ELASTIC, "", r"Reaping worker|Terminating the server process=.* because of expired timers|Timers expired",
     ERR, "warning", "a worker's elastic timer expired: torchrun kills the worker that overran it"),
    (ELASTIC, "", r"error file|reply file|fault handler|Unable to write error|error code|already exists and will be "
                  r"overwritten", ERR, "info",
     "torchrun's error-file handling (where a worker's traceback is recorded)"),
    (ELASTIC, "", r"expected, but not set", CFG, "critical", "an environment variable the launcher needs is not set"),
    (r"^torch/distributed/elastic/utils/data/", "", r"", APP, "warning",
     "the elastic sampler rejected its dataset or start index: the job's code"),
    (ELASTIC, EXC, r"", CFG, "critical", "torchrun's launch configuration (arguments, environment) is invalid"),
    (ELASTIC, "^error$", r"", ERR, "warning", "torchrun reported an error that does not name its cause"),
    (ELASTIC, "^warning$", r"deprecat|not supported|ignored|is only used|Empty envs|No health check|"
                           r"run_id|Redirects|Failed to register signal|signal handlers", CFG, "info",
     "torchrun warns about its own configuration"),
    (ELASTIC, "^warning$", r"OMP_NUM_THREADS", B, "ok", "torchrun's start-up note, printed on every run"),
    (ELASTIC, "^(info|built)$", r"^(?!.*(?i:fail|error|exception))", B, "ok",
     "torchrun's progress line (rendezvous, starting or finishing workers): no fault"),
    (ELASTIC, "", r"", ERR, "info", "torchrun reported a problem with its own helpers (health check, logging)"),

    # --- torch.distributed front end
    (r"^torch/distributed/distributed_c10d\.py$", "", r"Timed out initializing process group in store based barrier",
     "launch_rendezvous_timeout", "critical",
     "init_process_group's store barrier timed out: not every rank joined (num_workers_joined says how many)"),
    (r"^torch/distributed/distributed_c10d\.py$", "", r"doesn't have (NCCL|Gloo|MPI|XCCL) built in|not compiled",
     CFG, "critical", "this PyTorch build lacks the requested distributed backend"),
    (r"^torch/distributed/distributed_c10d\.py$", "", r"LOCAL_RANK is not in the environment", CFG, "critical",
     "the launcher did not set LOCAL_RANK"),
    (r"^torch/distributed/distributed_c10d\.py$", "^info$", r"", B, "ok",
     "torch.distributed's progress line (store barrier done, backend chosen): no fault"),
    (r"^torch/distributed/distributed_c10d\.py$", "", r"", APP, "warning",
     "torch.distributed rejected or warned about a call (arguments, groups, devices): the job's code"),
    (r"^torch/distributed/rendezvous\.py$", "", r"", CFG, "critical",
     "the init_method URL (rank, world size, address, port) is invalid"),
    (r"^torch/distributed/c10d_logger\.py$", "", r"", ERR, "info", "c10d's own logger reported a problem"),
)
_RULES = [(re.compile(f), re.compile(s), re.compile(m), k, sev, mean) for f, s, m, k, sev, mean in RULES]


def classify(path, site, fmt):
    path = path.split("@")[0]  # an older release's row: "path@tag"
    for f, s, m, kind, sev, mean in _RULES:
        if f.search(path) and s.search(site) and m.search(fmt):
            if kind == B:
                return B, "healthy", "ok", mean
            kind, _, cat = kind.partition("/")  # "kind/category" where the kind's first category is not meant
            cat = cat or KINDS[kind]["categories"][0]
            assert cat in KINDS[kind]["categories"], (kind, cat)
            return kind, cat, sev, mean
    raise AssertionError("no rule for %s [%s] %r" % (path, site, fmt))


# ---------------------------------------------------------------------------------------------
# rows

def printed_lines(fmt):
    """A message printed over several lines -> each line that holds text (a log reader sees one
    line at a time)."""
    out = []
    for ln in fmt.split("\n"):
        if re.search(r"[A-Za-z0-9]", re.sub(r"%[-+ #0]*\d*(?:\.\d+)?(?:l|ll|z)?[sdiuxXfgeEcp]", "", ln)):
            out.append(ln.rstrip())
    return out


# formats read as messages that are not (each with the reason)
SKIP = (
    r"^WorkNCCL\(SeqNum=",  # operator<< of a work item: part of the timeout message, not a line of its own
    r"^\[PG ID %s PG GUID ",  # ProcessGroupNCCL's log prefix (createLogPrefix), printed before messages
    r"^TCP(Server|Client|Store)\(",  # repr() of the store objects, part of other messages
)


def keep(site, fmt):
    from gpu_runbook import vocab
    if any(re.search(p, fmt) for p in SKIP):
        return False
    if site == "built" and " " not in fmt.strip():
        return False  # a one-word string constant (a key, a parameter name), not a message
    if vocab.matchable(fmt):
        return True
    literal = re.sub(r"%[-+ #0]*\d*(?:\.\d+)?[a-zA-Z]", "", fmt).replace("[c10d]", "")
    return site not in ("built", "template", "info") and len(re.findall(r"[A-Za-z]", literal)) >= 4


def collect(source):
    rows, files = [], []
    for path in list(CPP_SOURCES) + list(HEADERS):
        text = source.read(path)
        if text is None:
            raise SystemExit("missing %s under %s (see the module docstring)" % (path, source.src))
        files.append(path)
        for line, site, fmt in CppFile(path, text).sites():
            lines = printed_lines(fmt)
            rows.extend((path, line, site, f) for f in (lines[:1] if site.startswith("exception") else lines))
    py = source.py_files()
    texts = {p: source.read(p) for p in py}
    exceptions = {}
    for p in py:
        exceptions.update(exception_classes(p, texts[p]))
    for p in py:
        files.append(p)
        for line, site, fmt in PyFile(p, texts[p], exceptions).sites():
            lines = printed_lines(fmt)
            rows.extend((p, line, site, f) for f in (lines[:1] if site.startswith("exception") else lines))
    rows.extend((path, line, "older", fmt) for path, line, fmt in OLDER_ROWS)
    out, unmarked = [], []
    for path, line, site, fmt in rows:
        if not keep(site, fmt):
            continue
        kind, cat, sev, meaning = classify(path, site, fmt)
        row = (path, line, fmt, kind, cat, sev, meaning)
        if not marked(fmt):
            unmarked.append(row)
            continue
        out.append(row)
    return out, unmarked


def marked(fmt):
    from gpu_runbook import vocab
    text = vocab.instantiate(fmt)
    return any(m in text for m in MARKERS)


# ---------------------------------------------------------------------------------------------
# markers, templates, module

# literals of the messages themselves: the engine reads a line without its log prefix (glog's
# "ProcessGroupNCCL.cpp:1234]", torch logging's "torch/distributed/...py:869]"), so a marker must be
# in the message; a few are cut to cover both cases ("atchdog": Watchdog / watchdog). A message
# holding none of them is left out (UNMARKED): nothing in its text says it is PyTorch's, and the
# engine would never consult this table for it.
MARKERS = (
    "NCCL", "nccl", "c10d", "atchdog", "Store", "store", "ocket", "endezvous", "DataLoader", "dataloader",
    "orker", "rank", "Rank", "ProcessGroup", "rocess group", "timed out", "Timed out", "imeout", "ollective",
    "Flight Recorder", "ensor", "CUDA", "exitcode", "received by PID", "GIL", "debug info", "signal", "backend",
    "group", "etcd", "mismatch", "device", "remote server", "Pin memory", "Distributed package", "barrier",
    "nvironment variable", "already in use", "FileTimer", "elastic",
)
CPP_TEMPLATE = "[rank3]:[E1202 07:10:01.000000000 {file}:{line}] {message}"
PY_TEMPLATE = "[rank3]:E1202 07:10:01.000000 3185 %s/{file}:{line}] {message}"


def templates(rows):
    dirs = sorted({os.path.dirname(r[0]) for r in rows if r[0].endswith(".py")}, key=lambda d: (-len(d), d))
    out = [("torch/csrc/", CPP_TEMPLATE), ("c10/", CPP_TEMPLATE)]
    out.extend((d + "/", PY_TEMPLATE % d) for d in dirs)
    return tuple(out)


def check_markers(rows, tmpl):
    from gpu_runbook import vocab
    missing = []
    for r in rows:
        if not vocab.matchable(r[2]):
            continue
        template = next(t for p, t in tmpl if r[0].startswith(p))
        line = template.replace("{file}", os.path.basename(r[0])).replace("{line}", str(r[1])) \
            .replace("{message}", vocab.instantiate(r[2]))
        if not any(m in line for m in MARKERS):
            missing.append(r[:3])
    if missing:
        raise SystemExit("rows without a marker: %r" % missing[:10])


def verify_libs(rows, libs):
    """Report (stderr) C++ rows whose text no release library carries: the first 24 characters of
    each literal fragment (a fragment joins adjacent literals of c10::str, which the binary keeps
    apart; its start is a literal's start) must be in one of the strings dumps."""
    from gpu_runbook import vocab
    blob = []
    for path in sorted(glob.glob(os.path.join(libs, "*.strings"))):
        with open(path, encoding="utf-8", errors="replace") as fh:
            blob.append(fh.read().replace("{}", "%s"))
    blob = "\n".join(blob)
    miss = 0
    for r in rows:
        if not re.match(CPP, r[0]) or not vocab.matchable(r[2]):
            continue
        fmt = r[2][len("[c10d] "):] if r[2].startswith("[c10d] ") else r[2]
        frags = [f for f in vocab.compile_format(fmt.replace("%%", "%"))[0] if len(f) >= 8]
        absent = [f for f in frags if f[:24] not in blob]
        if absent:
            miss += 1
            sys.stderr.write("not in the libraries: %s:%d %r\n" % (r[0], r[1], absent[0][:80]))
    sys.stderr.write("%d C++ rows whose text the libraries do not carry\n" % miss)


DOC = """Read: the torch {version} wheel's Python files (torch.distributed.elastic, run.py, launcher/api.py,
distributed_c10d.py, rendezvous.py, c10d_logger.py, flight_recorder/, torch.utils.data's
dataloader.py and _utils/) and c10d / c10 CUDA headers (NCCLUtils.hpp, ProcessGroupNCCL.hpp,
FlightRecorder[Detail].hpp, Utils.hpp, TCPStore.hpp, socket.h, CUDAException.h): exactly the pin.
The C++ sources are not in the wheel and pytorch/pytorch is too big to fetch here; they were read
from the public search index's stored copies, which are NOT at the wheel's commit:
{cpp}
Their literals were checked against the release binaries (torch 2.13.0 CPU wheel; ProcessGroupNCCL
and NCCLUtils against the 2.14.1 CUDA wheel): a row's text may differ from, or be missing in, 2.13.0
where the copy is older (NCCLUtils.cpp, TCPStore.cpp: 2.13's TCPStore barrier timeout "barrier
timeout after %sms, key: %s" has no row).
Left out:
{left}
  VLOG / C10D_DEBUG / C10D_TRACE / logger.debug (debug output) and TORCH_INTERNAL_ASSERT (internal bugs).
Older releases' wordings the pin words otherwise (rows "path@tag", OLDER_ROWS in the generator),
read from those releases' libtorch_cuda.so (torch 2.4.1 and 2.5.1 CUDA wheels): ProcessGroupNCCL's
destructor warning.
Format: C++ literals joined, every argument %s (fmt's {{}} too), C10D_* logs carry "[c10d] "; Python
f-strings, %-format, str.format and + likewise; a message printed over several lines is one row per
line (an exception: its first line); a bare raise of a torch exception prints its qualified name.
Classification (RULES in the generator, by file, site and keywords): the watchdog's collective
timeout and a blocking-wait timeout -> nccl_watchdog_timeout; "watchdog got stuck" ->
nccl_watchdog_stuck; NCCL results surfaced by PyTorch ("NCCL error in:", ncclSystemError ...) ->
nccl_error (ncclInvalidUsage -> nccl_invalid_usage); "Some NCCL operations have failed or timed
out", "failure detected by watchdog", aborts and dump signals -> logged_error (they do not say
why); TCPStore / socket / store-barrier / rendezvous timeouts -> launch_rendezvous_timeout; store
connection losses -> logged_error; bind / DNS / port / env-var problems -> logged_nccl_config_error;
DataLoader worker exit / signal / bus error / timeout -> dataloader_*; torchrun's "failed
(exitcode: ...)", "Signal N (...) received by PID" and its ChildFailedError report -> logged_error;
a worker in D state -> hung_task; flight-recorder analysis mismatches -> collective_mismatch; API /
argument checks -> logged_application_error (torch.distributed, ProcessGroupNCCL) or
logged_dataloader_error; launcher / rendezvous configuration errors -> logged_nccl_config_error;
INFO progress and configuration lines, normal rendezvous and shutdown steps -> benign.
Markers: literals of the messages themselves (the engine reads a line without its log prefix).
{unmarked} messages hold none and are left out: their text does not say they are PyTorch's
(argument and option checks, launcher / etcd / timer helpers, flight-recorder analyser asserts):
{kinds}.
"""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", required=True, help="the wheel unpacked with the C++ overlay, or a pytorch clone")
    ap.add_argument("--rev", help="with a clone: the commit or tag to read")
    ap.add_argument("--libs", help="folder of *.strings dumps of the release libraries (report only)")
    args = ap.parse_args(argv)
    source = Source(args.src, args.rev)
    version, commit = source.version()
    if not args.rev and version != PIN:
        raise SystemExit("torch/version.py says %s, expected %s" % (version, PIN))
    if args.rev:
        commit = common.resolve(args.src, args.rev)
        version = version or args.rev
    rows, unmarked = collect(source)
    tmpl = templates(rows)
    check_markers(rows, tmpl)
    if args.libs:
        verify_libs(rows, args.libs)
    cpp = "\n".join(textwrap.fill("%s: %s" % (p, w), width=100, initial_indent="  ", subsequent_indent="    ")
                    for p, w in sorted(CPP_SOURCES.items()))
    kinds = collections.Counter(r[3] for r in unmarked)
    wrap = textwrap.TextWrapper(width=100, initial_indent="  ", subsequent_indent="    ")
    doc = DOC.format(version=version, cpp=cpp, left="\n".join(wrap.fill(x) for x in LEFT_OUT),
                     unmarked=len(unmarked),
                     kinds=textwrap.fill(", ".join("%s %d" % kv for kv in sorted(kinds.items())), width=100))
    meta = {"EMITTER": EMITTER, "PROJECT": "pytorch/pytorch", "VERSION": version, "COMMIT": commit,
            "LICENCE": "BSD-3-Clause (PyTorch LICENSE)",
            "ORIGIN": "PyPI torch==%s wheel (torch/version.py git_version) + search-index copies of "
                      "pytorch/pytorch C++ sources (see below)" % version,
            "GENERATOR": GENERATOR}
    path = common.write_table("torch", meta, MARKERS, tmpl, rows, doc=doc)
    print(path, len(rows), "rows")


if __name__ == "__main__":
    main()
