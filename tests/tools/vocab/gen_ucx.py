#!/usr/bin/env python3
"""Generate module_utils/gpu_runbook/vocab/ucx.py: the messages UCX (openucx/ucx, the
communication library under Open MPI, UCC, NCCL/UCC plugins and PyTorch's UCC backend)
prints at the levels a job's output shows (FATAL, ERROR, WARN, DIAG), read from UCX's own
source at a pinned release tag.

Usage (from the repository root)::

    # get the sources: any clones of https://github.com/openucx/ucx and of
    # https://github.com/linux-rdma/rdma-core (for the ibv_wc_status / ibv_event_type strings
    # UCX prints through libibverbs)
    git clone --bare https://github.com/openucx/ucx.git /tmp/ucx.git
    git clone --bare https://github.com/linux-rdma/rdma-core.git /tmp/rdma-core.git
    .venv/bin/python tests/tools/vocab/gen_ucx.py --src /tmp/ucx.git --rdma-src /tmp/rdma-core.git \\
        [--rev v1.22.0] [--rdma-rev v64.0]
    .venv/bin/python tests/tools/vocab/write_index.py   # once "ucx" is in vocab.EMITTERS

``--rev`` defaults to the pin (tag v1.22.0 = 8a6b06fb880a), ``--rdma-rev`` to rdma-core v64.0
(the pin of gen_rdma.py). Deterministic: the same sources and pins give the same module.

What UCX prints (src/ucs/debug/log.c, src/ucs/debug/assert.c, src/ucm/util/log.c):

- a message at ERROR / WARN / DIAG (``ucs_error``, ``ucs_warn``, ``ucs_diag``, ``ucs_log(level,
  ...)``, and UCM's ``ucm_error`` ...): ``[<sec>.<usec>] [<host>:<pid>:<thread>] <file>:<line>
  UCX  <LEVEL> <message>`` (UCS_LOG_FMT: ``"[%lu.%06lu] [%s:%-5d:%s] %17s:%-4u %-4s %-5s
  %*s%s"``; the component is always "UCX"), one line per line of the message;
- a FATAL one (``ucs_fatal`` = "Fatal: " + format, ``ucs_assert*_always``, and any message
  logged at FATAL, e.g. an IB completion error nobody handles): ``[<host>:<pid>:<thread>:<tid>]
  <file>:<line> <message>`` (ucs_fatal_error_message -> ucs_log_fatal_error), then a backtrace,
  and the process aborts; UCM's fatal keeps the UCX log shape ("UCX  FATAL");
- the signal handler's ``Caught signal %d (%s: %s%s)`` in the fatal shape without file:line.

Rows: the level word is part of the format ("UCX  ERROR " + message, as Slurm's table keeps
"error: ") when the message alone is matchable (vocab.matchable) and the level is one fixed
level; a message whose level is chosen at run time (``ucs_log(log_level, ...)``, the
"failure level" of an interface: FATAL when no error handler took the failure) and a message a
fatal path prints carry no level word. TEMPLATES print ``[1700000000.123456]
[gpu-a-01:12345:0] <file>:<line> <message>`` for every row (the fatal shape's prefix differs
only in the bracket, which no row reads).

Read (every .c/.h/.inl/.cc/.cuh of src/ucs, src/uct, src/ucp, src/ucm at the pin):

- every call of the logging functions and macros at FATAL/ERROR/WARN/DIAG, and every call of a
  function-like macro that (through others) makes one: the macro is expanded at the call (its
  parameters substituted, ``#param`` / UCS_PP_MAKE_STRING / UCS_PP_QUOTE stringized as the
  preprocessor does), so the row's file and line are the call's, as __FILE__/__LINE__ print;
  format macros (``UCT_IB_IFACE_FMT``, ``UCS_PGT_REGION_FMT``, ...) and inttypes macros are
  joined into the format (a literal macro defined otherwise under another #if branch, such as
  UCT_UD_EP_PEER_NAME_FMT "%s:%d" / "%s", gives a row per definition); a ``%s`` whose argument
  is a string literal (a stringized call, ``UCS_DEFAULT_ENV_PREFIX``) is written into the format;
- the level of ``ucs_log(level, ...)`` from its argument (``UCS_LOG_LEVEL_X``), else from the
  UCS_LOG_LEVEL_* its function names (LEVELS_BY_FUNCTION where the source says more);
- derived rows (derived_sites, ENUM_ARGS; classified by SYNDROMES, EVENTS, STATUSES, SIGNALS and
  gen_rdma.STATUS's meanings): the completion error of the mlx5 transports
  (src/uct/ib/mlx5/ib_mlx5_log.c: each syndrome's text, e.g. "Transport retry count exceeded",
  in "%s on %s:%d/%s (synd 0x%x vend 0x%x hw_synd %d/%d)"), and its second line ("RC QP 0x%x
  wqe[%d]: ..." for each queue type) as a detail row; the verbs transports' completion error
  ("%s completion[%d] with error on %s/%p: %s, vendor_err 0x%x wr_id 0x%lx") with each
  ibv_wc_status_str text of rdma-core; the IB async event line ("IB Async event on %s: %s")
  with each event UCX logs at DIAG or above (ib_device.c's switch) and its ibv_event_type_str
  text; the endpoint-failure line of ucp_ep.c with the statuses a transport reports for a lost
  peer (ucs_status_string: status.c); the signal handler's causes.

Left out: INFO/DEBUG/TRACE levels, ``ucs_bug`` and ``ucs_assert``/``ucs_assertv`` (debug builds
only), src/tools (ucx_info, ucx_perftest, the vfs daemon), the debugger-attach and freeze
messages of debug.c (UCX_HANDLE_ERRORS=debug/freeze only), a format that is a variable (a
string built at run time; a call whose format is the literal "%s" of one is a row, never
matched), ucs_log_fatal_error's lines other than the caught signal.

Classification: RULES (first match wins, by source path and message, each group with its
reason); severity: critical where the rule says (IB completion errors, fatal ones: the process
aborts), info for DIAG (not printed unless UCX_LOG_LEVEL=diag), warning otherwise. One format
has one verdict (the generator stops otherwise).
"""

import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402
import gen_rdma  # noqa: E402

sys.path.insert(0, os.path.join(common.REPO, "module_utils"))
from gpu_runbook.taxonomy import KINDS  # noqa: E402
from gpu_runbook.vocab import matchable  # noqa: E402

GENERATOR = "tests/tools/vocab/gen_ucx.py"
PIN = "v1.22.0"
RDMA_PIN = gen_rdma.PIN
ORIGIN = "https://github.com/openucx/ucx"
LICENCE = "BSD-3-Clause (LICENSE)"

SCAN = ("src/ucs", "src/uct", "src/ucp", "src/ucm")
CODE_EXT = re.compile(r"\.(?:c|h|inl|cc|cuh|cpp)$")

TEMPLATES = (("", "[1700000000.123456] [gpu-a-01:12345:0] {file}:{line} {message}"),)
# the literals of the lines' shapes; the file names of the rows printed without a level word are
# added by the generator (marker_files)
BASE_MARKERS = ("UCX  ERROR", "UCX  WARN", "UCX  DIAG", "UCX  FATAL", "UCX ERROR", "UCX WARN", "UCX DIAG",
                "UCX FATAL", "Fatal: ", "Assertion `", "Caught signal", " retry count exceeded")

LEVELS = ("FATAL", "ERROR", "WARN", "DIAG")  # the levels read, most severe first

# ---------------------------------------------------------------------------------------------
# the logging functions: name -> (index of the format, level, shape, text before, text after);
# level: a level name, or ("arg", i) for the argument that gives it; shape: "log" (the UCX log
# line), "fatal" (ucs_fatal_error_message: no level word), "raw" (ucs_log_fatal_error)
BASE = {
    "ucs_error": (0, "ERROR", "log", "", ""),
    "ucs_warn": (0, "WARN", "log", "", ""),
    "ucs_diag": (0, "DIAG", "log", "", ""),
    "ucs_log": (1, ("arg", 0), "log", "", ""),
    "ucs_log_component": (2, ("arg", 0), "log", "", ""),
    "ucs_log_dispatch": (5, ("arg", 3), "log", "", ""),
    "ucs_fatal": (0, "FATAL", "fatal", "Fatal: ", ""),
    "ucs_fatal_error_format": (3, "FATAL", "fatal", "", ""),
    "ucs_assertv_always": (1, "FATAL", "fatal", "Assertion `{#0}' failed: ", ""),
    "ucs_assert_always": (None, "FATAL", "fatal", "Assertion `{#0}' failed", ""),
    "ucs_log_fatal_error": (0, "FATAL", "raw", "", ""),
    "ucm_error": (0, "ERROR", "log", "", ""),
    "ucm_warn": (0, "WARN", "log", "", ""),
    "ucm_diag": (0, "DIAG", "log", "", ""),
    "ucm_fatal": (0, "FATAL", "log", "", ""),  # UCM prints "UCX  FATAL" in its log shape, then aborts
    "ucm_log": (1, ("arg", 0), "log", "", ""),
    "__ucm_log": (4, ("arg", 3), "log", "", ""),
    # src/ucs/memory/rcache.c: "%s: %s region " UCS_PGT_REGION_FMT ...: the suffix is read there
    "ucs_rcache_region_log": (6, ("arg", 3), "log", "%s: ", None),
}
# below the levels read: never expanded
QUIET = ("ucs_info", "ucs_debug", "ucs_trace", "ucs_trace_req", "ucs_trace_data", "ucs_trace_async",
         "ucs_trace_func", "ucs_trace_poll", "ucs_print", "ucm_info", "ucm_debug", "ucm_trace",
         "ucs_bug",  # ENABLE_ASSERT builds only (assert.h)
         "ucs_module_debug", "ucs_module_trace", "ucs_rcache_region_debug", "ucs_rcache_region_trace")
# ucs_log_fatal_error's own messages kept (the others are the debugger-attach / freeze helpers and
# ucs_fatal_error_message's own "%13s:%-4u %s")
RAW_KEPT = re.compile(r"^Caught signal")


# ---------------------------------------------------------------------------------------------
# C source reading

blank_comments, call_args = common.blank_comments, common.call_args

# inttypes.h macros (common's, and the narrow ones UCX uses)
PRI_MACROS = dict(common.PRI_MACROS, PRIx16="x", PRIx8="x", PRId16="d", PRId8="d", PRIX16="X", PRIi32="i",
                  PRIo64="lo", PRIxLEAST64="lx")
_TOKEN = re.compile(r'\s*(?:(?P<str>"(?:[^"\\\n]|\\.)*")|(?P<id>[A-Za-z_]\w*))')


def join_format(expr, literals):
    """A format expression (adjacent literals, inttypes macros, literal macros ``literals``
    {name: text}) -> its text, or None when some part is neither or no part is a literal."""
    expr = expr.replace("\\\n", "").strip()
    while expr.startswith("(") and expr.endswith(")") and _balanced(expr[1:-1]):
        expr = expr[1:-1].strip()
    pos, parts, literal = 0, [], False
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if not m:
            return None
        if m.group("str"):
            parts.append(common.c_unescape(m.group("str")[1:-1]))
            literal = True
        else:
            name = m.group("id")
            if name in literals:
                parts.append(literals[name])
                literal = True
            elif name in PRI_MACROS:
                parts.append(PRI_MACROS[name])
            else:
                return None
        pos = m.end()
        if not expr[pos:].strip():
            break
    return "".join(parts) if literal else None


def _balanced(s):
    depth = 0
    for c in s:
        depth += c == "("
        depth -= c == ")"
        if depth < 0:
            return False
    return depth == 0


_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)(\([^)]*\))?", re.M)


def defines(text):
    """[(name, params or None, body, start, end)] of the file's #defines (continuations joined)."""
    out = []
    for m in _DEFINE.finditer(text):
        end = m.end()
        while True:
            nl = text.find("\n", end)
            if nl < 0:
                end = len(text)
                break
            if not text[end:nl].rstrip().endswith("\\"):
                end = nl
                break
            end = nl + 1
        body = text[m.end():end].replace("\\\n", "\n")
        params = None
        if m.group(2) is not None:
            params = [p.strip() for p in m.group(2)[1:-1].split(",") if p.strip()]
        out.append((m.group(1), params, body, m.start(), end))
    return out


def c_literal(text):
    """A C string literal of ``text`` (what #x makes of a macro argument)."""
    text = " ".join(text.split())
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


_IDENT_OR_LIT = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|#\s*#|#\s*[A-Za-z_]\w*|[A-Za-z_]\w*')


def substitute(body, params, args):
    """The body of a function-like macro with its parameters replaced by ``args`` (``#p`` by
    the argument's spelling; ``a ## b`` pasted; ``...`` as __VA_ARGS__)."""
    subst = {}
    named = list(params)
    variadic = None
    if named and named[-1].endswith("..."):
        variadic = named[-1][:-3].strip() or "__VA_ARGS__"
        named = named[:-1]
    for i, p in enumerate(named):
        subst[p] = args[i].strip() if i < len(args) else ""
    if variadic:
        subst[variadic] = ", ".join(a.strip() for a in args[len(named):])

    def repl(m):
        tok = m.group(0)
        if tok[0] in "\"'":
            return tok
        if tok.startswith("#"):
            rest = tok[1:].strip()
            if rest == "#":
                return "##"
            if rest in subst:
                return c_literal(subst[rest])
            return tok
        return subst.get(tok, tok)
    out = _IDENT_OR_LIT.sub(repl, body)
    out = re.sub(r"\s*##\s*", " ", out)
    return out


_STRINGIZE = re.compile(r"\bUCS_PP_(?:MAKE_STRING|QUOTE)\s*\(")


def stringize_calls(text):
    """UCS_PP_MAKE_STRING(x) / UCS_PP_QUOTE(x) -> the literal "x"."""
    while True:
        m = _STRINGIZE.search(text)
        if not m:
            return text
        args, end = call_args(text, m.end() - 1)
        text = text[:m.start()] + c_literal(",".join(args)) + text[end + 1:]


class Site(object):
    __slots__ = ("path", "line", "fmt", "levels", "shape", "func", "via", "tag")

    def __init__(self, path, line, fmt, levels, shape, func, via, tag=None):
        self.path, self.line, self.fmt, self.levels, self.shape = path, line, fmt, levels, shape
        self.func, self.via, self.tag = func, via, tag

    def derived(self, fmt, tag, levels=None):
        return Site(self.path, self.line, fmt, levels or self.levels, self.shape, self.func, self.via, tag)


# printf conversions, for the argument that each takes
_CONV = re.compile(r"%[-+ #0']*(\*|\d+)?(?:\.(\*|\d+))?(?:hh|h|ll|l|j|z|t|L|q)?([diouxXeEfFgGaAcspnm%])")


def conversions(fmt):
    """[(match, index of the argument it takes or None)] of a printf format."""
    out, k = [], 0
    for m in _CONV.finditer(fmt):
        if m.group(3) in "%m":
            out.append((m, None))
            continue
        k += (m.group(1) == "*") + (m.group(2) == "*")
        out.append((m, k))
        k += 1
    return out


def inline_literal_args(fmt, args, literals):
    """``fmt`` with each %s whose argument is a string literal written in (a literal % as %%);
    -> (format, [(position in the new format, argument)] of the other %s)."""
    out, pos, rest, size = [], 0, [], 0
    for m, k in conversions(fmt):
        out.append(fmt[pos:m.start()])
        size += m.start() - pos
        pos = m.end()
        arg = args[k] if k is not None and k < len(args) else None
        if m.group(0) == "%s" and arg is not None:
            lit = join_format(arg, literals) if re.match(r'\s*(?:\(\s*)*"', arg) else None
            if lit is not None:
                out.append(lit.replace("%", "%%"))
                size += len(lit.replace("%", "%%"))
                continue
            rest.append((size, arg))
        out.append(m.group(0))
        size += len(m.group(0))
    out.append(fmt[pos:])
    return "".join(out), rest


class Source(object):
    """The files of SCAN at one commit, their macros, and the logging calls they make."""

    def __init__(self, src, rev, enums):
        self.src, self.rev, self.enums = src, rev, enums
        self.paths = [p for p in common.ls_files(src, rev, *SCAN) if CODE_EXT.search(p)]
        self.texts = dict((p, blank_comments(common.show(src, rev, p))) for p in self.paths)
        self.unread, self.notes = [], []
        self._macros()

    # -- macros ---------------------------------------------------------------------------
    def _macros(self):
        objects, functions, all_objects = {}, {}, {}
        self.define_spans = {}
        for p in self.paths:
            spans = []
            for name, params, body, start, end in defines(self.texts[p]):
                spans.append((start, end))
                if params is None:
                    objects.setdefault(name, body.strip())
                    if body.strip() and body.strip() not in all_objects.setdefault(name, []):
                        all_objects[name].append(body.strip())
                else:
                    functions.setdefault(name, []).append((params, body, p))
            self.define_spans[p] = spans
        # literal macros: bodies that join to a string (fixpoint: one may use another)
        self.literals = {}
        changed = True
        while changed:
            changed = False
            for name, body in objects.items():
                if name in self.literals or not body:
                    continue
                text = join_format(body, self.literals)
                if text is not None:
                    self.literals[name] = text
                    changed = True
        # literal macros defined otherwise under another #if branch (UCT_UD_EP_PEER_NAME_FMT "%s:%d" / "%s")
        self.literal_alts = {}
        for name, bodies in all_objects.items():
            if name in self.literals and len(bodies) > 1:
                alts = [join_format(b, self.literals) for b in bodies[1:]]
                alts = [a for a in alts if a is not None and a != self.literals[name]]
                if alts:
                    self.literal_alts[name] = alts
        # format macros: function-like macros whose body starts with a literal ("fmt", args...)
        self.fmt_macros = {}
        for name, defs in functions.items():
            params, body, _p = defs[0]
            if re.match(r'\s*"', body):
                self.fmt_macros[name] = (params, body)
        # log macros: function-like macros that make a logging call, through others too
        self.functions = functions
        self.log_macros = {}
        names = set(BASE)
        changed = True
        while changed:
            changed = False
            for name, defs in functions.items():
                if name in names or name in QUIET or name in BASE:
                    continue
                for params, body, p in defs:
                    called = set(re.findall(r"\b([A-Za-z_]\w*)\s*\(", body))
                    if called & names:
                        self.log_macros[name] = (params, body, p)
                        names.add(name)
                        changed = True
                        break
        self.callables = names

    def in_define(self, path, pos):
        for s, e in self.define_spans[path]:
            if s <= pos < e:
                return True
        return False

    # -- calls ----------------------------------------------------------------------------
    def sites(self):
        out = []
        call = re.compile(r"\b(%s)\s*\(" % "|".join(sorted(map(re.escape, self.callables), key=len, reverse=True)))
        for p in self.paths:
            text = self.texts[p]
            for m in call.finditer(text):
                if self.in_define(p, m.start()):
                    continue
                if m.group(1) in ("ucs_log_dispatch", "__ucm_log", "ucs_fatal_error_format") and \
                        p in ("src/ucs/debug/log.c", "src/ucs/debug/assert.c", "src/ucm/util/log.c"):
                    continue  # the logger's own definitions
                func = enclosing_function(text, m.start())
                if func in BASE or func in ("ucs_log_default_handler",):
                    continue  # inside a logging function itself
                args, _e = call_args(text, m.end() - 1)
                if any(re.search(r"\bconst\s+char\s*\*|\bucs_log_level_t\s+\w|^\s*\.\.\.\s*$", a) for a in args):
                    continue  # a declaration
                out.extend(self.expand(m.group(1), text, m.end() - 1, p, common.line_of(text, m.start()), func, text,
                                       m.start(), 0, ()))
        return out

    def expand(self, name, text, paren, path, line, func, ftext, fpos, depth, via):
        """The sites a call of ``name`` whose '(' is at ``paren`` of ``text`` makes."""
        if depth > 12:
            return []
        args, end = call_args(text, paren)
        if name in BASE:
            return self.base_call(name, args, path, line, func, ftext, fpos, via)
        params, body, _mp = self.log_macros[name]
        expanded = stringize_calls(substitute(body, params, args))
        out = []
        call = re.compile(r"\b(%s)\s*\(" % "|".join(sorted(map(re.escape, self.callables), key=len, reverse=True)))
        for m in call.finditer(expanded):
            out.extend(self.expand(m.group(1), expanded, m.end() - 1, path, line, func, ftext, fpos, depth + 1,
                                   via + (name,)))
        return out

    def expand_fmt_macros(self, args):
        """A format argument that is a format macro's call ("fmt", args...): its expansion, split."""
        for _ in range(3):
            out, changed = [], False
            for a in args:
                m = re.match(r"\s*([A-Za-z_]\w*)\s*\(", a)
                if m and m.group(1) in self.fmt_macros:
                    params, body = self.fmt_macros[m.group(1)]
                    inner, end = call_args(a, m.end() - 1)
                    if a[end + 1:].strip():
                        out.append(a)
                        continue
                    exp = stringize_calls(substitute(body, params, inner))
                    parts, _e = call_args("(" + exp + ")", 0)
                    out.extend(parts)
                    changed = True
                else:
                    out.append(a)
            args = out
            if not changed:
                break
        return args

    def base_call(self, name, args, path, line, func, ftext, fpos, via):
        fidx, level, shape, before, after = BASE[name]
        args = [stringize_calls(a) for a in args]
        if isinstance(level, tuple) and level[0] == "arg":
            levels = self.levels_of(args[level[1]] if level[1] < len(args) else "", path, func, ftext, fpos)
        else:
            levels = (level,)
        levels = tuple(lv for lv in levels if lv in LEVELS)
        if not levels:
            return []
        if fidx is None:
            fmt, rest = "", []
        else:
            args = args[:fidx] + self.expand_fmt_macros(args[fidx:])
            if fidx >= len(args):
                return []
            fmt = join_format(args[fidx], self.literals)
            if fmt is None and re.match(r"\s*\w+\s*$", args[fidx]):
                return []  # a variable: the format is built at run time
            if fmt is None:
                self.unread.append("%s:%d %s(%s)" % (path, line, name, " ".join(args[fidx].split())[:80]))
                return []
            alt_fmts = []
            for name_alt in sorted(set(re.findall(r"[A-Za-z_]\w*", args[fidx])) & set(self.literal_alts)):
                for value in self.literal_alts[name_alt]:
                    alt = join_format(args[fidx], dict(self.literals, **{name_alt: value}))
                    if alt is not None and alt != fmt:
                        alt_fmts.append(inline_literal_args(alt, args[fidx + 1:], self.literals)[0])
            fmt, rest = inline_literal_args(fmt, args[fidx + 1:], self.literals)
        before = before.replace("{#0}", " ".join(args[0].split()).replace("%", "%%") if args else "")
        if after is None:
            after = self.rcache_suffix()
        if shape == "raw" and not RAW_KEPT.search(fmt):
            return []
        site = Site(path, line, before + fmt + after, levels, shape, func, via + (name,))
        out = [site] + [site.derived(before + a + after, None) for a in (alt_fmts if fidx is not None else ())]
        # a %s printed from an enumeration's strings: a row per string (ENUM_ARGS)
        for at, arg in (rest if fidx is not None else ()):
            for rx_arg, rx_fmt, enum in ENUM_ARGS:
                if re.search(rx_arg, arg) and re.search(rx_fmt, fmt):
                    for name, text in self.enums[enum]:
                        out.append(site.derived(before + fmt[:at] + text.replace("%", "%%") + fmt[at + 2:] + after,
                                                (enum, name)))
        return out

    def rcache_suffix(self):
        """What ucs_rcache_region_log prints after the caller's message (src/ucs/memory/rcache.c)."""
        text = self.texts["src/ucs/memory/rcache.c"]
        m = re.search(r"\bucs_log_dispatch\s*\(", text[text.index("void ucs_rcache_region_log("):])
        start = text.index("void ucs_rcache_region_log(") + m.end() - 1
        args, _e = call_args(text, start)
        fmt = join_format(args[5], self.literals)
        head = "%s: %s"
        if fmt is None or not fmt.startswith(head):
            raise SystemExit("ucs_rcache_region_log's format changed: %r" % fmt)
        return fmt[len(head):]

    def levels_of(self, expr, path, func, ftext, fpos):
        """The levels a level expression can take, most severe first."""
        expr = " ".join(expr.split())
        named = re.findall(r"UCS_LOG_LEVEL_(\w+)|(failure_log_level\s*\()|(failure_level)\b", expr)
        if named:
            return self._named(named)
        m = re.match(r"\(?\s*(\w+)\s*\(", expr)
        if m and m.group(1) not in ("ucs_min", "ucs_max"):
            found = self.level_function(m.group(1))
            if found:
                return found
        for (rx_path, rx_func, rx_expr), levels in LEVELS_BY_FUNCTION:
            if re.search(rx_path, path) and re.search(rx_func, func or "") and re.search(rx_expr, expr):
                return levels
        # a variable: the levels its function names, or the levels its callers pass for it
        body = function_text(ftext, fpos)
        named = re.findall(r"UCS_LOG_LEVEL_(\w+)|(failure_log_level\s*\()|(failure_level)\b", body)
        found = self._named(named)
        if found:
            return found
        var = re.sub(r"[()\s]", "", expr)
        found = self.levels_from_callers(func, var, ftext, fpos) if re.fullmatch(r"\w+", var) else ()
        if found:
            return found
        if named:
            return ()  # only quiet levels
        self.unread.append("%s %s: level %r not resolved" % (path, func, expr))
        return ()

    @staticmethod
    def _named(named):
        """Levels of the UCS_LOG_LEVEL_X names and failure-level expressions found, most severe first.
        An interface's failure level (uct_base_iface_failure_log_level) is FATAL when no error
        handler took the failure, ERROR for other errors, else the configured failure level
        (UCX_<TL>_FAILURE, default diag); a connection manager's is the configured one."""
        found = set()
        for lv, iface, cm in named:
            if lv:
                found.add(lv)
            elif iface:
                found.update(("FATAL", "ERROR", "DIAG"))
            elif cm:
                found.update(("ERROR", "DIAG"))
        return tuple(lv for lv in LEVELS if lv in found)

    def levels_from_callers(self, func, var, ftext, fpos, depth=0):
        """The levels the callers of ``func`` pass for its parameter ``var`` (literals, failure levels,
        a variable of the caller that is set from those, or the caller's own parameter: its callers)."""
        if depth > 3:
            return ()
        start = ftext.rfind("\n{", 0, fpos)
        head = ftext[max(0, start - 800):start]
        m = None
        for m in re.finditer(r"\b%s\s*\(" % re.escape(func), head):
            pass
        if m is None:
            return ()
        params, _e = call_args(head, m.end() - 1)
        names = [re.findall(r"(\w+)\s*(?:\[[^]]*\])?\s*$", q.strip()) for q in params]
        names = [n[0] if n else "" for n in names]
        if var not in names:
            return ()
        idx = names.index(var)
        found = []
        call = re.compile(r"\b%s\s*\(" % re.escape(func))
        for p in self.paths:
            text = self.texts[p]
            if func not in text:
                continue
            for c in call.finditer(text):
                if text.rfind("\n{", 0, c.start()) < 0:
                    continue
                args, _e = call_args(text, c.end() - 1)
                if idx >= len(args) or re.search(r"\b(?:const|void|ucs_log_level_t)\b", args[idx]):
                    continue  # the definition or a declaration
                arg = args[idx]
                found.extend(re.findall(r"UCS_LOG_LEVEL_(\w+)|(failure_log_level\s*\()|(failure_level)\b", arg))
                v = re.sub(r"[()\s]", "", arg)
                if re.fullmatch(r"\w+", v) and not v.startswith("UCS_LOG_LEVEL_"):
                    body = function_text(text, c.start())
                    named = re.findall(r"UCS_LOG_LEVEL_(\w+)|(failure_log_level\s*\()|(failure_level)\b", body)
                    if named:
                        found.extend(named)
                    else:
                        caller = enclosing_function(text, c.start())
                        found.extend((lv, "", "") for lv in
                                     self.levels_from_callers(caller, v, text, c.start(), depth + 1))
        return self._named(found)

    def level_function(self, name):
        """The levels a function returning a ucs_log_level_t names in its body."""
        rx = re.compile(r"ucs_log_level_t\s+%s\s*\(" % re.escape(name))
        for p in self.paths:
            m = rx.search(self.texts[p])
            if m:
                body = function_text(self.texts[p], self.texts[p].find("\n{", m.end()) + 2)
                return self._named(re.findall(r"UCS_LOG_LEVEL_(\w+)|(failure_log_level\s*\()|(failure_level)\b",
                                              body)) or ("QUIET",)
        return ()


def enclosing_function(text, pos):
    """The name of the function whose body holds ``pos`` (UCX's style: '{' and '}' of a function
    at column 0), or ""."""
    start = text.rfind("\n{", 0, pos)
    if start < 0:
        return ""
    head = text[max(0, start - 600):start]
    names = re.findall(r"([A-Za-z_]\w*)\s*\(", head)
    return names[-1] if names else ""


def function_text(text, pos):
    start = text.rfind("\n{", 0, pos)
    end = text.find("\n}", pos)
    return text[start if start >= 0 else 0:end if end >= 0 else len(text)]


# where a level chosen at run time is known from elsewhere: ((path, function, level expression),
# levels). Filled from reading the source; the generator stops on a level it cannot resolve.
# a %s argument whose values are an enumeration's strings: (argument, format, enumeration)
ENUM_ARGS = (
    (r"\b(?:uct_ib_|ibv_)wc_status_str\s*\(", r"", "wc"),
    (r"\bucs_status_string\s*\(", r"will not be handled since no error callback is installed", "status"),
)

LEVELS_BY_FUNCTION = [
    # uct_tcp_sockcm_event_err_to_ucs_err_log() sets it: DEBUG / DIAG for a peer that went away, else ERROR
    ((r"src/uct/tcp/tcp_sockcm\.c$", r"^uct_tcp_sa_data_handler$", r"^log_level$"), ("ERROR", "DIAG")),
    # ucs_pgtable_dump(): a debugging dump no caller of the library makes at a level read here
    ((r"src/ucs/datastruct/pgtable\.c$", r"^ucs_pgt", r"^log_level$"), ()),
]


# ---------------------------------------------------------------------------------------------
# derived rows: messages whose %s takes the strings of a table in the source

def function_body(text, name):
    """The text of function ``name``'s body (UCX's style: '{' and '}' at column 0)."""
    m = re.search(r"\b%s\s*\([^;{]*\)\s*\n\{" % re.escape(name), text)
    if not m:
        raise SystemExit("function %s not found" % name)
    end = text.find("\n}", m.end())
    return m.end(), text[m.end():end]


def case_blocks(body):
    """[(labels, block text, offset)] of the switch statements in ``body``: the case labels that
    share a block, up to its break/return."""
    out, labels, start = [], [], None
    for m in re.finditer(r"\bcase\s+(\w+)\s*:|\bdefault\s*:|\bbreak\s*;", body):
        if m.group(0).startswith("break"):
            if labels:
                out.append((tuple(labels), body[start:m.start()], start))
            labels, start = [], None
            continue
        if start is not None and body[start:m.start()].strip() and not re.fullmatch(
                r"\s*(?:#\s*(?:if|endif|else)[^\n]*\s*)*", body[start:m.start()]):
            out.append((tuple(labels), body[start:m.start()], start))
            labels = []
        labels.append(m.group(1) or "default")
        start = m.end()
    return out


def mlx5_syndromes(text):
    """[(syndrome name, text, level or None)] of uct_ib_mlx5_completion_with_err()'s switch."""
    _off, body = function_body(text, "uct_ib_mlx5_completion_with_err")
    out = []
    for labels, block, _o in case_blocks(body):
        m = re.search(r'snprintf\s*\(\s*err_info\s*,\s*sizeof\s*\(\s*err_info\s*\)\s*,\s*("(?:[^"\\]|\\.)*")\s*\)',
                      block)
        if not m:
            continue
        lv = re.search(r"log_level\s*=\s*UCS_LOG_LEVEL_(\w+)", block)
        for label in labels:
            out.append((label, common.c_unescape(m.group(1)[1:-1]), lv.group(1) if lv else None))
    return out


def qp_types(src_texts):
    """The queue types the completion error's second line names: uct_ib_qp_type_str()'s strings
    and the "SRQ" of a receive-side error (ib_mlx5_log.c)."""
    _off, body = function_body(src_texts["src/uct/ib/base/ib_log.c"], "uct_ib_qp_type_str")
    out = [t for t in re.findall(r'return\s+"([^"]+)"', body) if t != "unknown"]
    out += re.findall(r'qp_type_str\s*=\s*"([^"]+)"', src_texts["src/uct/ib/mlx5/ib_mlx5_log.c"])
    return sorted(set(out))


def async_events(text):
    """[(event names, event_info format with the event's %s first, level)] of
    uct_ib_handle_async_event()'s switch (ib_device.c)."""
    _off, body = function_body(text, "uct_ib_handle_async_event")
    out = []
    for labels, block, _o in case_blocks(body):
        m = re.search(r"snprintf\s*(\()\s*event_info\s*,\s*sizeof\s*\(\s*event_info\s*\)\s*,", block)
        lv = re.search(r"level\s*=\s*UCS_LOG_LEVEL_(\w+)", block)
        if not m or not lv:
            continue
        args, _e = call_args(block, m.start(1))
        fmt = join_format(args[2], {})
        out.append((tuple(lb for lb in labels if lb != "default"), fmt, "ibv_event_type_str" in args[3], lv.group(1)))
    return out


def signal_causes(text):
    """{cause function suffix: [(si_code, text)]} of debug.c's ucs_signal_cause_*()."""
    out = {}
    for m in re.finditer(r"static const char \*ucs_signal_cause_(\w+)\(int si_code\)\s*\{(.*?)\n\}", text, re.S):
        out[m.group(1)] = re.findall(r'case\s+(\w+)\s*:\s*return\s+"([^"]+)"', m.group(2))
    return out


def handled_signals(text):
    """[(SIGNAME, cause function, suffix format)] of ucs_error_signal_handler()'s switch."""
    _off, body = function_body(text, "ucs_error_signal_handler")
    out = []
    for labels, block, _o in case_blocks(body):
        m = re.search(r"ucs_debug_handle_error_signal\s*\(\s*signo\s*,\s*ucs_signal_cause_(\w+)\([^)]*\)\s*,"
                      r"\s*(\"[^\"]*\")", block)
        if m:
            for label in labels:
                if label.startswith("SIG"):
                    out.append((label, m.group(1), common.c_unescape(m.group(2)[1:-1])))
    return out


# glibc's strsignal() text of the signals UCX handles by default (UCX_ERROR_SIGNALS=ILL,SEGV,BUS,FPE);
# not UCX's source: the C library's (string/strsignal.c, sysdeps/generic/siglist.h)
STRSIGNAL = {"SIGILL": "Illegal instruction", "SIGSEGV": "Segmentation fault", "SIGBUS": "Bus error",
             "SIGFPE": "Floating point exception"}


def status_strings(text):
    """{UCS_ERR_X: string} of ucs_status_string() (src/ucs/type/status.c)."""
    return dict(re.findall(r'case\s+(UCS_\w+)\s*:\s*return\s+"([^"]+)"', text))


# ---------------------------------------------------------------------------------------------
# classification

ERR, CFG, IB, DRV, APP, MEM, B = ("logged_error", "logged_nccl_config_error", "logged_ib_error", "logged_driver_error",
                                  "logged_application_error", "logged_memory_error", "benign")
CATEGORY = {ERR: "unknown", CFG: "nccl_config", IB: "ib_network", DRV: "driver", APP: "application",
            MEM: "memory_leak", B: "healthy"}
# the kind of an IB completion error (the mlx5 syndromes, the verbs statuses, the generic rows):
# the transport lost its peer; the category says where to look first (the fabric), the meaning
# names the other causes (a dead or hung peer process)
COMPLETION_KIND = IB
SEVERITY_OF_LEVEL = {"FATAL": "critical", "ERROR": "warning", "WARN": "warning", "DIAG": "info"}

M_UNUSED = ("A UCX_* variable set in the environment was not read by any UCX component this process loaded "
            "(a misspelt name, or a setting of a transport it does not use): no fault; the setting has no effect.")
M_BACKTRACE = "The frame of the backtrace UCX prints after an error: the error is the line before it."
M_DEPRECATED = "A UCX_* setting in use is deprecated: it still works; no fault."
M_COMPLETION = ("A work request on the InfiniBand/RoCE adapter completed with an error: the connection to the peer "
                "failed on the fabric (link, switch, peer host or its adapter) or the peer process went away; the "
                "status text and syndrome say which.")
M_COMPLETION_DETAIL = ("The queue pair and work request of the completion error printed on the line before "
                       "(detail of that error).")
M_UD_TIMEOUT = ("The UD transport got no answer from a peer within its timeout (UCX_UD_TIMEOUT) and nobody handles "
                "the failure: the peer host or process is gone, or the InfiniBand path to it is down; the process "
                "aborts.")
M_ASYNC = "The InfiniBand adapter reported an asynchronous event; the event's text says which."
M_GDR = ("GPUDirect RDMA is not available to UCX: the nvidia-peermem (nv_peer_mem) module is not loaded, DMA-BUF "
         "is not supported by the driver/kernel, or the NVIDIA driver option it needs is not set.")
M_MEMLOCK = ("The locked-memory limit (ulimit -l / RLIMIT_MEMLOCK) is too low for registering memory with the "
             "network adapter: raise it (unlimited) for the job.")
M_REG = ("Registering memory with the network adapter (or importing GPU memory) failed: the locked-memory limit "
         "(ulimit -l), GPUDirect RDMA support (nvidia-peermem or DMA-BUF), or the adapter's limits on this host.")
M_PARAM = "A UCX_* setting (environment or ucx.conf) has an invalid value or name, or conflicts with another one."
M_TLS = ("The transports or devices UCX was asked for (UCX_TLS, UCX_NET_DEVICES, ...) are not all available on this "
         "host, or the list leaves none to use.")
M_NO_TRANSPORT = ("UCX found no transport that reaches the peer: the transports/devices allowed (UCX_TLS, "
                  "UCX_NET_DEVICES) differ between the hosts or exclude the ones that would, or the network between "
                  "them is not up; the reasons per transport follow in the message.")
M_SHM = ("Shared memory for the intra-node transports could not be created or mapped: /dev/shm is full or too small "
         "(a container's default 64 MB), or a huge-page setting is not supported.")
M_CMA = ("Cross-memory attach (process_vm_readv/writev) between processes of this host failed: ptrace is restricted "
         "(kernel.yama.ptrace_scope), the processes run as different users or in different containers, or the peer "
         "process exited.")
M_KNEM_XPMEM = "The KNEM or XPMEM kernel module UCX uses for intra-node copies is missing, mismatched or failed."
M_LIMIT = ("A limit of the host is too low for the job: open files (ulimit -n), or the kernel's socket backlog "
           "settings (net.core.somaxconn ...), or a reverse-path filter that drops its traffic.")
M_GDRCOPY = "GDRCopy (the gdrdrv module and libgdrapi) is missing, of another version, or could not map GPU memory."
M_CUDA = ("A CUDA driver call in UCX's CUDA support failed; its error text says why (the GPU or driver, an earlier "
          "CUDA error of the process, or its CUDA context).")
M_CUDA_CFG = "A CUDA/GPU feature UCX was asked for is not supported on this host (driver, GPU or build)."
M_OTHER_ACCEL = "An error of UCX's support for a non-NVIDIA accelerator (ROCm, oneAPI Level Zero, Gaudi)."
M_RDMACM = ("RDMA connection management (rdma_cm: address and route resolution, connect, accept) with a peer failed: "
            "the IP address/route of the RDMA device, the peer's listener, or the network between them.")
M_VERBS = ("An InfiniBand/RoCE verbs operation (device, port, GID, queue pair or completion queue) failed on this "
           "host's adapter: its state, its driver/firmware, or its resource limits; the error text says which.")
M_TCP = ("A TCP connection of UCX's tcp transport or connection manager failed: the peer is unreachable or went away, "
         "or the network (Ethernet/IPoIB) between the hosts.")
M_PEER = ("A connection to a peer failed; the status in the message tells why (a timeout on the network, or the peer "
          "process went away) and no error handler of the program took it.")
M_API = ("The program using UCX (MPI, UCC, a plugin) called UCP with invalid or unsupported arguments or in a wrong "
         "order: its use of the library, not a fault of the host.")
M_UCT_USE = ("An argument check of a UCT transport failed (UCX's own upper layer called it wrongly, or the build has "
             "parameter checks on): an internal error of UCX or its use.")
M_LEFTOVER = ("Resources were still held when UCX was finalized or a component closed: the program did not release "
              "them, usually because it is exiting after an error; a note, not a cause.")
M_ALLOC = "UCX could not allocate host memory for its structures: the host or the job ran out of memory."
M_CLEANUP = "Releasing a resource (closing, unmapping, deregistering, destroying) failed while UCX cleaned up."
M_ASSERT = "An internal consistency check of UCX failed and the process aborts: a UCX bug or memory corruption."
M_FATAL = "UCX hit an error it cannot recover from and the process aborts; the message says where."
M_SIGNAL = ("The process crashed with a signal that UCX's error handler caught (a backtrace follows): the fault is "
            "in the code the backtrace names (the program, a library or UCX).")
M_INTERNAL = ("An internal step of UCX failed; the message names no cause outside it (an earlier UCX line or the "
              "program's own error may).")

M_FORK = ("The program called fork() while UCX holds memory registered with the network adapter and fork support "
          "is off: the child may corrupt data (RDMAV_FORK_SAFE / UCX_IB_FORK_INIT).")
M_CUDA_IPC = ("GPU memory IPC (CUDA IPC; ROCm's the same) between processes of this host failed: they do not see "
              "the same GPUs (CUDA_VISIBLE_DEVICES, separate containers), IPC is not permitted between them, or the "
              "peer freed the memory; UCX_TLS=^cuda_ipc avoids it.")

# (source path, message) -> (kind, severity or None: the level's, meaning); first match wins
RULES = [
    # --- no fault
    (r"src/ucs/config/parser\.c$",
     r"^unused environment variable|^\(set %s%s=n to suppress|to suppress this warning\)$", B, None, M_UNUSED),
    (r"src/ucs/config/parser\.c$", r"is deprecated \(set", B, None, M_DEPRECATED),
    (r"src/ucs/debug/log\.c$", r"^==== backtrace|^=+$", B, None, M_BACKTRACE),
    # --- crashes, completion errors, async events
    (r"src/ucs/debug/debug\.c$", r"^Caught signal", ERR, "critical", M_SIGNAL),
    (r"src/uct/ib/", r" on %s:%d/%s \(synd 0x%x|completion\[%d\] with error on|^send completion with error:|"
                     r"^Send completion \(wr_id=|^(?:Fatal: )?(?:send|receive) completion", COMPLETION_KIND,
     "critical", M_COMPLETION),
    (r"src/uct/ib/mlx5/ib_mlx5_log\.c$", r"QP 0x%x wqe\[%d\]", IB, "info", M_COMPLETION_DETAIL),
    (r"src/uct/ib/ud/", r"unhandled timeout error", IB, "critical", M_UD_TIMEOUT),
    (r"src/uct/ib/base/ib_device\.c$", r"^IB Async event on", IB, None, M_ASYNC),
    # --- internal checks
    (r"", r"^Assertion `", ERR, "critical", M_ASSERT),
    # --- the program's use of UCP, UCX's use of UCT
    (r"src/ucp/", r"must not be NULL|must be set|must not be|were not set for ucp_init|invalid memory type parameter|"
                  r"mutually exclusive|only supported for|naturally aligned|invalid atomic|unsupported number of|"
                  r"has already been closed|already called|invalid AM id|header length|incompatible UCP Active Message|"
                  r"FLAG_DATA|requires page aligned|(?i:wrong combination)|^missing|mismatched memory handle|"
                  r"asymmetric endpoint|different endpoint than|rkey is NULL|NULL memory handle|unsupported flags|"
                  r"(?i:invalid data ?type)|does not support rendezvous|Stream API support|without connection matching|"
                  r"user's memory handle|^sgl\[|^sgl put:|invalid field_mask|invalid thread mode|multi-threaded worker|"
                  r"no registered callback|is missing|invalid (?:local|remote) mem list params|"
                  r"one and only one accept handler|are not supported by|unsupported datatype|Unsupported datatype|"
                  r"feature flags|empty features set|does not support registration|undefined address|"
                  r"the length value or exported_memh_buffer|wrong combinations of parameters|"
                  r"does not contain exported|packing rkey using ucp_memh_pack\(\) is unsupported|"
                  r"error handling is not supported with tag-sync", APP, None, M_API),
    (r"src/uct/", r"is set but the callback is NULL|PARAM_FIELD|must be provided|are not defined|is not defined|"
                  r"Unsupported callback flag|Synchronous callback|only UCT_IFACE_OPEN_MODE|supports only UCT_IFACE|"
                  r"multi-threaded worker|mutually exclusive|completion must be non-NULL|flush\(remote\) is not "
                  r"supported|^Invalid [%\w ]+ length|^iovcnt\(|Invalid active message id|active message id|"
                  r"Unsupported flags|Wrong iovcnt|Invalid (?:RTS|header) len|missing params|null info_string|"
                  r"alignment offset|TX/RX token fields", ERR, None, M_UCT_USE),
    (r"src/uct/(?:cuda/cuda_ipc|rocm/ipc)/", r"open ipc mem handle|cuIpcOpenMemHandle|Import", CFG, None,
     M_CUDA_IPC),
    (r"src/uct/(?:rocm|ze|gaudi)/|src/ucm/(?:rocm|ze)/", r"", ERR, None, M_OTHER_ACCEL),
    # --- what was left at exit
    (r"", r"were not (?:destroyed|flushed|released|purged|removed)|was not (?:returned|matched|purged|removed|"
          r"released)|not released|remained on lru list|not empty during|still running|being destroyed with|"
          r"destroying .*(?:with|inuse)|some eps were not destroyed|\bnot removed|unprocessed connection requests|"
          r"removing user pending|canceling user pending|with uncompleted operation|contains %zd elements on destroy|"
          r"releasing ptr_array with|not empty$|table is not empty|with block_count|timers being destroyed|"
          r"queue is not empty|send ops were not released|outstanding events", APP, "info", M_LEFTOVER),
    (r"src/uct/ib/base/ib_md\.c$", r"fork\(\) has been issued|data corruption might occur when using registered",
     APP, None, M_FORK),
    # --- GPUDirect RDMA, locked memory
    (r"", r"GPUDirect RDMA|nv_peer_mem|peermem|PeerMappingOverride|DMA-BUF|dmabuf support", CFG, None, M_GDR),
    (r"", r"memlock|MEMLOCK|locked memory", CFG, None, M_MEMLOCK),
    # --- clean-up
    (r"", r"(?i)(?:destroy|dealloc|dereg|close|unmap|unlink|release|free\b|freeing|detach|unregister|unpin|"
          r"remove)\w*[^:]*(?:failed|returned|error)|failed to (?:close|free|remove|destroy|deregister|detach)|"
          r"^(?:Fatal: )?(?:ibv_destroy|ibv_dealloc|ibv_dereg|ibv_close|mlx5dv_destroy|munmap|shmctl\(IPC_RMID|"
          r"cuMem(?:Free|Release|Unmap|AddressFree|HostUnregister)|cuIpcClose|cuEventDestroy|cuStreamDestroy|"
          r"cuCtxPopCurrent|cuDevicePrimaryCtxRelease|gdr_un)", ERR, None, M_CLEANUP),
    # --- GPUs: CUDA IPC, features, settings
    (r"src/uct/(?:cuda|ib/mlx5/gdaki)/|src/ucm/cuda/",
     r"(?i)not supported|doesn't support|unsupported|is requested but|no active primary|legacy CUDA-only|nvml",
     DRV, None, M_CUDA_CFG),
    # --- settings
    (r"^(?!src/ucs/(?:debug|datastruct)/|src/ucm/|src/ucp/wireup/address\.c)",
     r"(?i)invalid value|UCX_[A-Z_]+|must be (?:>|<|greater|larger|bigger|smaller|less|positive|a power|"
     r"lower|in the range|power|a whole)|should be (?:>|bigger|in the range|limited)|can be up to|"
     r"requested,? but (?:not (?:supported|found)|unsupported)|requested but not|not supported by the device|"
     r"failed to parse|invalid parameter for|is invalid, should be|unable to find specified pkey|"
     r"no valid pkey|please select only one|must not be empty|timeout for resending|"
     r"does not support setUCX|exceeds maximal supported size|try to decrease|values do not match on peers|"
     r"unsupported value|invalid max_rd_atomic|invalid .*(?:value|specifier|flag|method)|"
     r"subnet filter|fence value|segment size is too big|Max congestion avoidance|timer (?:tick|back off)|"
     r"The factor for|expected lower than|must be <= TX segment|must be >= TX segment|"
     r"reserved qpn is not supported|not suitable for transport|was requested for SL|cannot set ar_enable|"
     r"does not support ECE|Transport '%s' does not exist|using maximal value for|using max_value|"
     r"reduced max_get_zcopy|max batch is too low", CFG, None, M_PARAM),
    # --- host memory
    (r"", r"(?i)(?:failed to|could not|couldn't|cannot|can't|unable to) (?:re)?alloc|allocation failed|"
          r"out of memory|failed to grow|allocationd? failed|alloc(?:ate)? failure|allocate \w+ failed|"
          r"memory allocation|^(?:Fatal: )?(?:ucm_)?(?:mmap|mremap)\(|strdup\(%s\) failed|failed to reserve space",
     MEM, None, M_ALLOC),
    # --- CUDA calls
    (r"src/uct/(?:cuda|ib/mlx5/gdaki)/|src/ucm/cuda/", r"^cu[A-Z]\w*\(|^cuda_cu\w+\(|\bcu[A-Z]\w* failed|"
                                                      r"(?i:cuda|gpu)", DRV, None, M_CUDA),
    # --- memory registration
    (r"", r"(?i)ibv_reg_mr|reg_mr|register memory|memory registration|registration failed|failed to register|"
          r"uct_md_mem_reg|mem_reg|mkey|memory key|UMR|mlock\(|export memory|exporting|imported key|"
          r"register user buffer|register buffer", CFG, None, M_REG),
    # --- transports and devices
    (r"src/ucp/core/ucp_context\.c$", r"not available, please use one or more of|no usable transports|"
                                      r"device lists are empty|TLs list is empty|same checksum|"
                                      r"exceeded transports/devices limit|is specified multiple times|"
                                      r"too long, only first", CFG, None, M_TLS),
    (r"src/ucp/wireup/", r"^no %s transport to|^No transports selected to|is not enabled, enable it in "
                         r"UCX_NET_DEVICES|which was not present during UCP initialization", CFG, None, M_NO_TRANSPORT),
    # --- intra-node transports and host limits
    (r"src/uct/sm/|src/ucs/sys/sys\.c$", r"/dev/shm|shared memory|shm_|shmat|MAP_HUGETLB|\bmmap\(", CFG, None, M_SHM),
    (r"", r"max open files|maximal number of files|somaxconn|rp_filter|netdev_max_backlog", CFG, None, M_LIMIT),
    (r"src/uct/cuda/gdr_copy/", r"(?i)gdr|pin|USE_PCIE", CFG, None, M_GDRCOPY),
    # --- the network
    (r"src/uct/ib/rdmacm/", r"rdma_\w+|RDMACM|event|peer|reject|connect|resolve|addr|ibv_query", IB, None, M_RDMACM),
    (r"src/uct/ib/", r"^(?:Fatal: )?(?:%s: )?(?:ibv_|mlx5dv_|uct_ib_mlx5_devx|rdma_)|(?i:modify(?:ing)? (?:qp|dc|srd|"
                     r"ud|tm|dummy))|QP to (?:INIT|RTR|RTS)|(?i:(?:create|query|connect|reset)\w* (?:\S+ )?(?:dci|dct|"
                     r"qp|cq|srq|ah)\b)|create_cq/qp|\bport\b|\bgid\b|(?i:devx)|syndrome|create_ah|ibv_|active width|"
                     r"active_speed|Failed to query|failed to query|mlx5 information|mlx5 QP information|"
                     r"device capabilities|RoCE|poll (?:send|receive) CQ|failed to post receives|post_send|post_recv|"
                     r"async event|get_async_event", IB, None, M_VERBS),
    (r"src/uct/tcp/", r"connection|connect\b|peer|error event|failed to (?:send|recv)|was unsuccessful|retries|"
                      r"bind|%s\(%d\) failed", IB, None, M_TCP),
    (r"src/ucs/sys/sock\.c$", r"^(?:connect|bind|listen)\(", IB, None, M_TCP),
    (r"src/ucp/", r"will not be handled since no error callback|keepalive failed|recovery retries exhausted|"
                  r"error during flush|flush failed|failed to connect to", ERR, None, M_PEER),
    # --- what a component's path says
    (r"src/ucs/config/", r"", CFG, None, M_PARAM),
    (r"src/uct/sm/scopy/cma/", r"", CFG, None, M_CMA),
    (r"src/uct/sm/scopy/knem/|src/uct/sm/mm/xpmem/", r"", CFG, None, M_KNEM_XPMEM),
    (r"", r"^Fatal: ", ERR, None, M_FATAL),
]
DEFAULT = (ERR, None, M_INTERNAL)

# -- derived rows

# the mlx5 completion syndromes (ib_mlx5_log.c): (meaning) by syndrome, all ib_network critical
SYNDROMES = {
    "MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR": "A received message was longer than the buffer posted for it: the two ends "
                                          "disagree on sizes (UCX versions or settings differ across hosts).",
    "MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR": "The adapter rejected a work request as invalid for its queue pair (a UCX, "
                                         "driver or firmware fault).",
    "MLX5_CQE_SYNDROME_LOCAL_PROT_ERR": "The adapter could not use a local buffer with its registration: with GPU "
                                        "memory usually GPUDirect RDMA (nvidia-peermem, PCIe ACS) or memory freed "
                                        "while in use.",
    "MLX5_CQE_SYNDROME_MW_BIND_ERR": "A memory-window bind failed on the adapter.",
    "MLX5_CQE_SYNDROME_BAD_RESP_ERR": "The responder returned an unexpected transport opcode: the RDMA path or the "
                                      "peer's adapter.",
    "MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR": "A protection error on a local buffer: with GPU memory usually GPUDirect "
                                          "RDMA (nvidia-peermem, PCIe ACS).",
    "MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR": "The remote end rejected the request as invalid (too long for its "
                                              "buffer, or an operation it does not allow): mismatched settings or its "
                                              "queue pair's state.",
    "MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR": "The remote end refused access to its memory: its registration is gone (the "
                                           "peer process exited or restarted) or its GPUDirect RDMA setup.",
    "MLX5_CQE_SYNDROME_REMOTE_OP_ERR": "The remote end could not complete the operation (its queue pair or adapter "
                                       "failed): look at the peer host.",
    "MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR": "No acknowledgement after all transport retries: packets are lost on "
                                                 "the path (link, cable, switch), or the peer host, adapter or process "
                                                 "is gone or hung (a too short UCX_RC_TIMEOUT is a rarer cause).",
    "MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR": "The receiver had no receive buffer posted through all receiver-not-ready "
                                           "retries: the peer process is stalled or gone.",
    "MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR": "The remote end aborted the operation.",
    "default": "The adapter reported a completion error of no listed kind (see the syndrome numbers).",
}

# the async events UCX logs (ib_device.c): (kind, severity, meaning) by event
EVENTS = {
    "IBV_EVENT_CQ_ERR": (IB, "warning", "A completion queue of the adapter went into error (overrun)."),
    "IBV_EVENT_QP_FATAL": (IB, "warning", "A queue pair went into error: the connection it carried failed."),
    "IBV_EVENT_QP_REQ_ERR": (IB, "warning", "The peer sent a request this queue pair cannot serve (its state or "
                                            "settings)."),
    "IBV_EVENT_QP_ACCESS_ERR": (IB, "info", "The peer used a memory key this host no longer honours (a restarted peer "
                                            "process?)."),
    "IBV_EVENT_SRQ_ERR": (IB, "warning", "A shared receive queue of the adapter went into error."),
    "IBV_EVENT_PATH_MIG": (IB, "warning", "A connection migrated to its alternate path: the primary path failed."),
    "IBV_EVENT_PATH_MIG_ERR": (IB, "warning", "A connection failed to migrate to its alternate path."),
    "IBV_EVENT_DEVICE_FATAL": (IB, "critical", "The adapter is in a fatal state (catastrophic error): its kernel log "
                                               "(mlx5 health) says why; it needs a reset."),
    "IBV_EVENT_PORT_ERR": (IB, "critical", "The link of this adapter port went down."),
    "IBV_EVENT_SM_CHANGE": (IB, "info", "The subnet manager of the port changed: a fabric management event."),
    "IBV_EVENT_CLIENT_REREGISTER": (IB, "info", "The subnet manager asked the port to re-register: a fabric "
                                                "management event."),
    "IBV_EVENT_LID_CHANGE": (IB, "info", "The port's LID changed: a fabric management event."),
    "IBV_EVENT_PKEY_CHANGE": (IB, "info", "The port's P_Key table changed: a fabric management event."),
    "IBV_EVENT_GID_CHANGE": (IB, "info", "The port's GID table changed (an IP address of a RoCE port changed)."),
    "IBV_EVENT_PORT_SPEED_CHANGE": (IB, "warning", "The link speed of the port changed: a degraded or renegotiated "
                                                   "link."),
    "IBV_EVENT_PORT_ACTIVE": (B, None, "The port's link became active: it came (back) up; a port error before it is "
                                       "the fault."),
    "IBV_EVENT_COMM_EST": (B, None, "Communication was established on a queue pair: normal connection set-up."),
    "IBV_EVENT_SQ_DRAINED": (B, None, "The send queue was drained, as requested: normal operation."),
}

# the statuses a transport reports for a lost peer, in ucp_ep.c's "will not be handled" line
STATUSES = {
    "UCS_ERR_ENDPOINT_TIMEOUT": (IB, "warning", "The transport gave up on the peer after its retries/timeouts: the "
                                                "network path or the peer host is down (a peer that is only slow is "
                                                "rarer); no error handler of the program took it."),
    "UCS_ERR_CONNECTION_RESET": (ERR, "warning", "The peer reset the connection: the peer process exited or failed "
                                                 "(look at its own error); no error handler of the program took it."),
    "UCS_ERR_UNREACHABLE": (IB, "warning", "The peer became unreachable on the network; no error handler of the "
                                           "program took it."),
    "UCS_ERR_IO_ERROR": (ERR, "warning", "A transport reported an input/output error towards the peer; no error "
                                         "handler of the program took it."),
    "UCS_ERR_REJECTED": (ERR, "warning", "The peer rejected the connection; no error handler of the program took it."),
}

# the signals' causes: (kind, meaning) by (signal, cause function, si_code)
SIGNALS = {
    ("SIGBUS", "BUS_ADRERR"): (ERR, "The process touched a mapped page that does not exist: a file or shared-memory "
                                    "segment mapped past its end, typically /dev/shm full (or a memory error); a "
                                    "backtrace follows."),
    ("SIGBUS", "BUS_OBJERR"): (ERR, "A hardware memory error hit a page of the process (a machine check, poisoned "
                                    "page): look at the host's MCE/EDAC log."),
}


def wc_meaning(name):
    """The meaning of a work-completion status: gen_rdma's, its NCCL wording made UCX's."""
    meaning = gen_rdma.STATUS[name][3]
    meaning = re.sub(r" \(NCCL's hint:[^)]*\)", "", meaning)
    meaning = re.sub(r" \(not used by NCCL\)", "", meaning)
    return meaning.replace("NCCL", "UCX")


def classify(site):
    """(kind, category, severity, meaning) of one site."""
    tag = site.tag
    meaning = None
    if tag is not None:
        kind, severity, meaning = tagged(site)
    else:
        for path_rx, msg_rx, kind, severity, meaning in RULES:
            if re.search(path_rx, site.path) and re.search(msg_rx, site.fmt):
                break
        else:
            kind, severity, meaning = DEFAULT
    if kind == B:
        return kind, "healthy", "ok", meaning
    if severity is None:
        severity = SEVERITY_OF_LEVEL[site.levels[0]]
    return kind, CATEGORY[kind], severity, meaning


def tagged(site):
    what = site.tag[0]
    if what == "mlx5":
        return COMPLETION_KIND, "critical", SYNDROMES.get(site.tag[1], SYNDROMES["default"])
    if what == "qp":
        return IB, "info", M_COMPLETION_DETAIL
    if what == "wc":
        severity = "warning" if site.tag[1] in ("IBV_WC_WR_FLUSH_ERR", "IBV_WC_TM_RNDV_INCOMPLETE") else "critical"
        return COMPLETION_KIND, severity, wc_meaning(site.tag[1])
    if what == "event":
        return EVENTS[site.tag[1]]
    if what == "status":
        return STATUSES[site.tag[1]]
    if what == "signal":
        kind, meaning = SIGNALS.get(site.tag[1:], (ERR, M_SIGNAL))
        return kind, "critical", meaning
    raise SystemExit("unknown tag %r" % (site.tag,))


# ---------------------------------------------------------------------------------------------
# rows

WORDS = {"ERROR": "UCX  ERROR ", "WARN": "UCX  WARN  ", "DIAG": "UCX  DIAG  ", "FATAL": "UCX  FATAL "}


def level_word(site):
    """What the log line prints before the message ("UCX  ERROR "), or "" where it varies or is none."""
    if site.shape != "log" or len(site.levels) != 1:
        return ""
    if site.levels[0] == "FATAL" and not any(v.startswith(("ucm_", "__ucm")) for v in site.via):
        return ""  # ucs_log at FATAL goes to ucs_fatal_error_message: no level word
    return WORDS[site.levels[0]]


def one(sites, path, rx):
    found = [s for s in sites if s.path == path and s.tag is None and re.search(rx, s.fmt)]
    if len(found) != 1:
        raise SystemExit("%s: %d sites match %r" % (path, len(found), rx))
    return found[0]


def derived_sites(source, sites):
    """The rows of the messages whose %s takes a table's strings (module docstring)."""
    texts, out = source.texts, []
    # the mlx5 completion error: each syndrome's text; its second line for each queue type
    site = one(sites, "src/uct/ib/mlx5/ib_mlx5_log.c", r"^%s on %s:%d/%s \(synd")
    first, second = site.fmt.split("\n", 1)
    for name, text, level in mlx5_syndromes(texts[site.path]):
        if level is not None and level not in LEVELS:
            continue  # a flushed work request: logged at TRACE
        out.append(site.derived(text.replace("%", "%%") + site.fmt[2:], ("mlx5", name)))
    if not second.startswith("%s QP "):
        raise SystemExit("ib_mlx5_log.c's second line changed: %r" % second)
    for qp in qp_types(texts):
        out.append(site.derived(qp + second[2:], ("qp", qp)))
    # the IB async events, at the level each is logged
    site = one(sites, "src/uct/ib/base/ib_device.c", r"^IB Async event on %s: %s$")
    names = dict(source.enums["event"])
    for labels, fmt, has_type, level in async_events(texts[site.path]):
        if level not in LEVELS:
            continue
        for label in labels:
            if label not in EVENTS:
                raise SystemExit("%s has no classification: add it to EVENTS" % label)
            if has_type and label not in names:
                source.notes.append("%s: not in rdma-core's ibv_event_type_str at the pin: no row" % label)
                continue
            info = fmt.replace("%s", names[label].replace("%", "%%"), 1) if has_type else fmt
            out.append(site.derived(site.fmt[:-2] + info, ("event", label), levels=(level,)))
    # the caught signals and their causes
    site = one(sites, "src/ucs/debug/debug.c", r"^Caught signal %d \(%s: %s%s\)$")
    causes = signal_causes(texts[site.path])
    for sig, cause, suffix in handled_signals(texts[site.path]):
        if sig not in STRSIGNAL:
            continue  # not among the default UCX_ERROR_SIGNALS
        for code, text in causes[cause]:
            out.append(site.derived("Caught signal %%d (%s: %s%s)" % (STRSIGNAL[sig], text, suffix),
                                    ("signal", sig, code)))
    return out


def site_rows(site):
    kind, category, severity, meaning = classify(site)
    common.check_class(kind, category, severity, KINDS)
    lines = [ln for ln in site.fmt.split("\n") if ln.strip()]
    word = level_word(site)
    if not (word and lines and matchable(lines[0])):
        word = ""
    fmt = "\n".join(word + ln for ln in lines) if word else site.fmt
    rows = [(site.path, site.line, fmt, kind, category, severity, meaning)]
    # each further line of the message is printed with its own prefix: a row of the same kind
    for ln in lines[1:]:
        if matchable(ln):
            rows.append((site.path, site.line, (word + ln) if word else ln, kind, category,
                         "ok" if kind == B else "info", meaning))
    return rows


def read_enums(rdma_src, rdma_rev, ucx_texts):
    strs = common.show(rdma_src, rdma_rev, gen_rdma.STRS)
    verbs = common.show(rdma_src, rdma_rev, gen_rdma.VERBS)
    wc_enum = gen_rdma.parse_enum(verbs, "ibv_wc_status")
    wc_str = gen_rdma.parse_strings(strs, "ibv_wc_status_str")
    ev_str = gen_rdma.parse_strings(strs, "ibv_event_type_str")
    wc = [(n, wc_str[n][0]) for n, _v in sorted(wc_enum.items(), key=lambda kv: kv[1][0]) if n != "IBV_WC_SUCCESS"]
    events = sorted((n, t) for n, (t, _line) in ev_str.items())
    statuses = status_strings(ucx_texts["src/ucs/type/status.c"])
    missing = set(STATUSES) - set(statuses)
    if missing:
        raise SystemExit("STATUSES names %s, not in status.c" % sorted(missing))
    return {"wc": wc, "event": events, "status": sorted((n, statuses[n]) for n in STATUSES)}


def build(src, rev, rdma_src, rdma_rev):
    """(rows, markers, notes) of the pin."""
    status_text = blank_comments(common.show(src, rev, "src/ucs/type/status.c"))
    enums = read_enums(rdma_src, rdma_rev, {"src/ucs/type/status.c": status_text})
    source = Source(src, rev, enums)
    if source.unread:
        raise SystemExit("logging calls not read:\n  " + "\n  ".join(source.unread))
    sites = source.sites()
    sites += derived_sites(source, sites)
    rows = []
    for s in sites:
        rows.extend(site_rows(s))
    # one format, one verdict: the matcher cannot tell two rows of one format apart
    seen = {}
    for r in rows:
        if matchable(r[2]):
            prev = seen.setdefault(r[2], r)
            if (prev[3], prev[4]) != (r[3], r[4]):
                raise SystemExit("%r: %s:%d says %s/%s, %s:%d says %s/%s" % (r[2], prev[0], prev[1], prev[3], prev[4],
                                                                             r[0], r[1], r[3], r[4]))
    # the markers: the lines' shapes, and the file of a row printed with no level word
    markers = list(BASE_MARKERS)
    files = set()
    for r in rows:
        if matchable(r[2]):
            line = TEMPLATES[0][1].replace("{file}", r[0].rsplit("/", 1)[-1]).replace("{message}", r[2])
            if not any(m in line for m in BASE_MARKERS):
                files.add(r[0].rsplit("/", 1)[-1] + ":")
    markers += sorted(files)
    notes = source.notes + ["%d logging calls, %d rows" % (len(sites), len(set(rows)))]
    return rows, markers, notes


DOC = """\
Read: every logging call at FATAL/ERROR/WARN/DIAG of src/ucs, src/uct, src/ucp, src/ucm
(ucs_error/_warn/_diag/_fatal, ucs_log(level, ...), ucs_assert*_always, UCM's ucm_error/...,
the rcache region logger) and every call of a function-like macro that makes one, expanded at
the call (the row's file:line is the call's, as __FILE__/__LINE__ print it); format macros and
stringized arguments written into the format; the level of ucs_log(level, ...) from its
argument, its function, or its callers' arguments.
Lines: "[<sec>.<usec>] [<host>:<pid>:<thread>] <file>:<line> UCX  <LEVEL> <message>"; a
fatal error "[<host>:<pid>:<thread>:<tid>] <file>:<line> <message>" (then a backtrace and an
abort). The level word ("UCX  ERROR ") is part of a row's format when the level is fixed and
the message alone is matchable; a message whose level is chosen at run time (an interface's
failure level: FATAL when no error handler took the failure) or that a fatal path prints has
none, and its file name is a marker. Each further line of a message is a row of its own
(severity info).
Derived rows: the mlx5 completion error with each syndrome's text (ib_mlx5_log.c) and its
second line per queue type; the verbs transports' completion errors with each
ibv_wc_status_str text (rdma-core, the pin of gen_rdma.py); the IB async event line with each
event's ibv_event_type_str text at the level ib_device.c logs it; ucp_ep.c's unhandled-error
line with the statuses of a lost peer; the caught signals (SEGV, BUS, ILL, FPE: glibc's
strsignal text) with debug.c's causes.
Left out: INFO/DEBUG/TRACE, ucs_bug/ucs_assert (debug builds), src/tools, the debugger-attach
and freeze messages, formats built at run time.
Classification (generator RULES, first match wins): IB completion errors (mlx5 syndromes,
verbs statuses, "unhandled timeout" of UD) -> ib_network critical; async events -> ib_network
(device fatal, port error critical; path migration, speed change, CQ/QP/SRQ errors warning;
subnet-management changes info; port active, communication established, SQ drained benign);
verbs calls, queue pairs, ports, GIDs, rdma_cm, TCP connections -> ib_network; GPUDirect RDMA,
locked memory, memory registration, UCX_* settings and parse errors, transports not available
or unreachable peers, /dev/shm, CMA/KNEM/XPMEM, host limits, GDRCopy -> nccl_config; CUDA calls
and GPU support -> driver; the program's misuse of UCP, leftovers at exit (info) ->
application; host allocation failures -> memory_leak; signals, assertions, clean-up failures,
UCT argument checks, other accelerators, other internal errors -> unknown; unused UCX_*
variables, deprecated settings, backtrace frames -> benign. Severity: critical for completion
errors and what aborts (FATAL, assertions, signals), info for DIAG and detail lines, warning
otherwise.
"""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", required=True, help="openucx/ucx: a bare mirror or a clone")
    ap.add_argument("--rev", default=PIN, help="tag, branch or commit (default %s)" % PIN)
    ap.add_argument("--rdma-src", required=True, help="linux-rdma/rdma-core: a bare mirror or a clone")
    ap.add_argument("--rdma-rev", default=RDMA_PIN, help="rdma-core tag (default %s)" % RDMA_PIN)
    args = ap.parse_args(argv)
    commit = common.resolve(args.src, args.rev)
    rdma_commit = common.resolve(args.rdma_src, args.rdma_rev)
    tags = sorted(t for t in common.git(args.src, "tag", "--points-at", commit).split()
                  if re.fullmatch(r"v\d+\.\d+\.\d+", t))
    version = tags[0] if tags else args.rev
    rows, markers, notes = build(args.src, commit, args.rdma_src, rdma_commit)
    for note in notes:
        print("note: " + note)
    meta = {"EMITTER": "UCX", "PROJECT": "openucx/ucx (Unified Communication X)", "VERSION": version,
            "COMMIT": commit, "LICENCE": LICENCE, "ORIGIN": ORIGIN, "GENERATOR": GENERATOR}
    doc = DOC + "rdma-core strings: %s (%s).\n" % (args.rdma_rev, rdma_commit)
    path = common.write_table("ucx", meta, markers, TEMPLATES, rows, doc=doc)
    print("%s: %d rows" % (path, len(set(rows))))


if __name__ == "__main__":
    main()
