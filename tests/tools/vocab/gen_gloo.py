#!/usr/bin/env python3
"""Generate module_utils/gpu_runbook/vocab/gloo.py: the messages Gloo (the collective library
behind PyTorch's ``gloo`` backend: ``init_process_group(backend="gloo")``, CPU collectives,
``monitored_barrier``) raises or logs, read from facebookincubator/gloo's own source at a
pinned commit.

Usage (from the repository root)::

    # get the source: any clone of https://github.com/facebookincubator/gloo (now also
    # https://github.com/pytorch/gloo)
    git clone --bare https://github.com/facebookincubator/gloo.git /tmp/gloo.git
    .venv/bin/python tests/tools/vocab/gen_gloo.py --src /tmp/gloo.git [--rev <commit>]
    .venv/bin/python tests/tools/vocab/write_index.py   # once the table is registered

``--rev`` defaults to the pin (PIN below: main at 2025-05-16, the newest commit read). Gloo has
no release tags: PyTorch vendors a commit as its ``third_party/gloo`` submodule (the commit of
its newest releases, 2.8 and later, was not found; they are newer than v2.7.1's). The commits in
OLDER (v2.7.1's 5354032ea08e, and two earlier releases', as packagers' manifests of PyTorch's
submodules record them) are read too: each message of theirs that the pin words otherwise is a
row, file "path@<commit12>" (the line at that commit). Deterministic: the same source and pins
give the same module.

What is read, in gloo/** (C++ and CUDA sources; not gloo/test, gloo/benchmark, gloo/examples,
gloo/mpi/example):

- ``GLOO_ENFORCE(cond, msg...)``: ``EnforceNotMet`` (gloo/common/logging.cc) prints
  ``[enforce fail at FILE:LINE] <cond>. <msg>``: the row's format is ``<cond>. <msg>`` (the
  condition as the preprocessor stringifies it, blanks collapsed), the message parts
  concatenated as ``MakeString`` streams them;
- ``GLOO_ENFORCE_EQ/NE/LE/LT/GE/GT(x, y, msg...)``: ``<x> == <y>. %s vs %s[. <msg>]``
  (``enforce_detail::Equals`` and friends print both values, then the message);
- ``GLOO_THROW``, ``GLOO_THROW_INVALID_OPERATION_EXCEPTION``, ``GLOO_THROW_IO_EXCEPTION`` and
  every ``GLOO_ERROR_MSG(msg...)`` (thrown as ``gloo::IoException``, handed to
  ``signalException`` or kept): ``[FILE:LINE] <msg>``, the row's format is ``<msg>``; a macro
  whose only argument is a ``GLOO_ERROR_MSG`` is read at the inner one;
- ``GLOO_ERROR/WARN/INFO(msg...)`` (``GLOO_LOG_MSG``: ``[FILE:LINE] LEVEL <msg>`` on stderr):
  ``LEVEL <msg>``; INFO lines only as benign notes;
- the tcp transport's connection errors (gloo/transport/tcp/error.cc ``what()``): each
  construction of ``SystemError("<syscall>", errno, peer)`` as ``<syscall>: %m, remote=[%s]%s``,
  ``ShortReadError``/``ShortWriteError`` as their texts, ``TimeoutError``/``LoopError`` as the
  message they are given;
- ``throw std::<exception>(...)`` and literals handed to ``Context::signalException(...)``
  (an ``IoException`` without the ``[FILE:LINE]`` prefix).

In a message, adjacent literals are joined; ``strerror(...)`` is ``%m``; a transport address
(``peer_.str()``, ``remote_.str()`` ...) is what its ``Address::str()`` prints (address.cc at
that commit: tcp and uv ``[<ip>]:<port>``, written ``[%s]%s``; ibverbs ``LID: %d QPN: %d PSN:
%d``); every other argument (numbers included: ``MakeString`` streams them) is ``%s``;
``"lit" + expr`` is ``lit%s``.
Left out: messages with no literal text (``GLOO_ERROR_MSG(error.what())``: the text is the
wrapped error's, read at its construction), the ``[FILE:LINE]`` prefix (TEMPLATES has it).

Classification: RULES (first match wins, by source path and message; the M_* texts are the
reasons): interface / hostname / address lookup, bind, connect-to-self, memory registration,
TLS and file-store set-up -> nccl_config; a peer that closed, reset or timed out, connections
that could not be made, store waits -> unknown (a peer's death cannot be told from the
network's failure); ibverbs completions, work requests, the HCA -> ib_network; collectives'
argument and size checks, API misuse -> application; every other internal check -> unknown,
warning; the INFO line naming the ibverbs device -> benign. Severity: critical for an exception
that fails the operation, warning for a WARN/ERROR log line, a retried attempt, a consequence
or an internal check. One format has one verdict (the generator stops otherwise).

``gen_gloo.py --dump <src> [<rev>]`` prints every site read and its verdict (to review RULES).
"""

import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402

sys.path.insert(0, os.path.join(common.REPO, "module_utils"))
from gpu_runbook.taxonomy import KINDS  # noqa: E402
from gpu_runbook.vocab import matchable  # noqa: E402

GENERATOR = "tests/tools/vocab/gen_gloo.py"
# main at 2025-05-16 (cc441984208d, "run CI on all PRs (#445)"): the newest commit of the source
# read; PyTorch releases after 2.7 vendor a commit of 2025 or later
PIN = "cc441984208d0b54b4fc614301f41e82e951e5cd"
PIN_NOTE = "main@2025-05-16"
# earlier commits PyTorch releases vendor (third_party/gloo), newest first: a format is kept once,
# at the newest commit that has it
OLDER = (
    ("5354032ea08eadd7fc4456477f7f7c6308818509", "2023-12-02: PyTorch v2.7.1's third_party/gloo (a manifest of its "
                                                 "submodules), v2.4's too (Gentoo's ebuild)"),
    ("597accfd79f5b0f9d57b228dec088ca996686475", "2023-05-19: an earlier PyTorch 2.x's (Gentoo's ebuild)"),
    ("5b143513263133af2b95547e97c07cebeb72bf72", "2022-05-18: a PyTorch 1.12/1.13-era release's (Gentoo's ebuild)"),
)
ORIGIN = "https://github.com/facebookincubator/gloo"
LICENCE = "BSD-3-Clause (LICENSE)"

SKIP_DIRS = ("gloo/test/", "gloo/benchmark/", "gloo/examples/", "gloo/mpi/example/")
# the macros' own definitions
SKIP_FILES = ("gloo/common/logging.h", "gloo/common/logging.cc", "gloo/common/error.h")
CODE_EXT = re.compile(r"\.(?:cc|cpp|h|cu|cuh)$")

# where PyTorch's wheels compile Gloo (its __FILE__): the line's "[FILE:LINE]"
FILE_ROOT = "/pytorch/third_party/gloo/"
MARKERS = ("enforce fail at", "gloo/", "gloo\\", "Application timeout caused pair closure")

# ---------------------------------------------------------------------------------------------
# C++ source reading

_ENFORCE_OPS = {"EQ": "==", "NE": "!=", "LE": "<=", "LT": "<", "GE": ">=", "GT": ">"}
_SITE = re.compile(r"\b(?P<macro>GLOO_ENFORCE(?:_(?:EQ|NE|LE|LT|GE|GT|THAT))?|"
                   r"GLOO_THROW(?:_INVALID_OPERATION_EXCEPTION|_IO_EXCEPTION)?|GLOO_ERROR_MSG|GLOO_ERROR|"
                   r"GLOO_WARN|GLOO_INFO|"
                   r"(?:SystemError|ShortReadError|ShortWriteError|TimeoutError|LoopError)(?:\s+\w+)?|"
                   r"throw\s+std::\w+|signalException)\s*\(")
_STRING_RUN = re.compile(r'\s*(?:"(?:[^"\\\n]|\\.)*"\s*)+$')
_CHAR = re.compile(r"\s*'((?:[^'\\]|\\.){1,2})'\s*$")
_STRERROR = re.compile(r"\s*(?:std::)?strerror\s*\(.*\)\s*$", re.S)


class Site(object):
    __slots__ = ("path", "line", "macro", "fmt", "level")

    def __init__(self, path, line, macro, fmt, level):
        self.path, self.line, self.macro, self.fmt, self.level = path, line, macro, fmt, level


def squash(expr):
    """An expression as the preprocessor stringifies it (#x): blanks collapsed, continuations gone."""
    return " ".join(expr.replace("\\\n", " ").split())


def split_top(expr, op):
    """``expr`` split at the top-level (outside brackets and literals) occurrences of ``op``."""
    parts, depth, i, start, n = [], 0, 0, 0, len(expr)
    while i < n:
        c = expr[i]
        if c in "\"'":
            j = i + 1
            while j < n and expr[j] != c:
                if expr[j] == "\\":
                    j += 1
                j += 1
            i = j + 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and expr.startswith(op, i):
            parts.append(expr[start:i])
            i += len(op)
            start = i
            continue
        i += 1
    parts.append(expr[start:])
    return parts


# an argument that is a transport address's text (Address::str())
_ADDRESS = re.compile(r"(?:\b(?:peer_?|self_|remote_|local_)|\bpeer\(\)|\bsafePeerName\(\)|\bsockName\(\)|"
                      r"\bAddress\(.*\))\s*\.\s*str\s*\(\s*\)$", re.S)


def arg_text(arg, addr="%s"):
    """One MakeString argument (or one operand of ``+`` or ``<<``) -> its text in a format:
    literals joined, a char literal as itself, strerror(...) as %m, a transport address's str()
    as ``addr`` (address_format), any other expression as %s."""
    arg = arg.replace("\\\n", " ").strip()
    if _STRING_RUN.match(arg):
        return common.join_literals(arg).replace("%", "%%")
    m = _CHAR.match(arg)
    if m:
        return common.c_unescape(m.group(1)).replace("%", "%%")
    m = re.match(r"std::string\s*\((.*)\)$", arg, re.S)
    if m and _STRING_RUN.match(m.group(1)):
        return common.join_literals(m.group(1)).replace("%", "%%")
    if _STRERROR.match(arg):
        return "%m"
    if _ADDRESS.search(arg):
        return addr
    parts = split_top(arg, "+")
    if len(parts) > 1 and any(_STRING_RUN.match(p) for p in parts):
        return "".join(arg_text(p, addr) for p in parts)
    return "%s"


def message(args, addr="%s"):
    """MakeString(args...): the parts concatenated."""
    return "".join(arg_text(a, addr) for a in args if a.strip())


def address_format(src, rev, transport):
    """How a transport's Address::str() prints (its address.cc): tcp and uv "[<ip>]:<port>"
    (the port, and a sequence number, only when set): "[%s]%s"; ibverbs a printf format
    ("LID: %d QPN: %d PSN: %d"); "%s" when the source says otherwise."""
    path = "gloo/transport/%s/address.cc" % transport
    try:
        text = common.show(src, rev, path)
    except Exception:  # noqa: BLE001 - no such transport at that commit
        return "%s"
    m = re.search(r"std::string\s+Address::str\(\)\s*const\s*\{(.*?)\n\}", text, re.S)
    if not m:
        return "%s"
    body = m.group(1)
    if "str[0] = '['" in body and '"]:%d"' in body and '"]"' in body:
        return "[%s]%s"
    f = re.search(r'snprintf\(\s*[^,]+,\s*[^,]+,\s*("(?:[^"\\]|\\.)*")', body)
    return common.join_literals(f.group(1)) if f else "%s"


def is_call(arg, name):
    return re.match(r"\s*%s\s*\(" % name, arg) is not None


def error_class_formats(text, addr="%s"):
    """gloo/transport/tcp/error.cc: class -> the format of its what(); "{syscall}" where
    SystemError prints the syscall it was given, "{msg}" where the class prints its message."""
    out = {}
    for m in re.finditer(r"std::string\s+(\w+)::what\(\)\s*const\s*\{(.*?)\n\}", text, re.S):
        cls, body = m.group(1), m.group(2)
        r = re.search(r'return\s+("(?:[^"\\]|\\.)*")\s*;', body)
        if r:
            out[cls] = common.join_literals(r.group(1))
            continue
        if re.search(r"return\s+msg_\s*;", body):
            out[cls] = "{msg}"
            continue
        s = re.search(r"ss\s*<<(.*?);", body, re.S)
        if s:
            parts = []
            for operand in split_top(s.group(1), "<<"):
                operand = operand.strip()
                if operand == "syscall_":
                    parts.append("{syscall}")
                else:
                    parts.append(arg_text(operand, addr))
            out[cls] = "".join(parts)
    return out


def read_file(src, rev, path, classes, addresses):
    """The message sites of one file: (sites, unread) -- unread: sites whose message has no
    literal text (path:line: macro)."""
    text = common.blank_comments(common.show(src, rev, path))
    sites, unread = [], []
    t = re.match(r"gloo/transport/(\w+)/", path)
    addr = addresses.get(t.group(1), "%s") if t else "%s"
    for m in _SITE.finditer(text):
        macro = m.group("macro")
        line = common.line_of(text, m.start())
        args, _end = common.call_args(text, m.end() - 1)
        level = "raise"
        head = macro.split()[0]
        if head.startswith("GLOO_ENFORCE"):
            if not args:
                continue
            if head == "GLOO_ENFORCE":
                fmt = squash(args[0]).replace("%", "%%") + ". " + message(args[1:], addr)
            elif head == "GLOO_ENFORCE_THAT":
                fmt = squash(args[0]).replace("%", "%%") + ". %s" + (". " + message(args[1:], addr) if args[1:] else "")
            else:
                if len(args) < 2:
                    continue
                op = _ENFORCE_OPS[head.rsplit("_", 1)[1]]
                extra = message(args[2:], addr)
                fmt = "%s %s %s. %%s vs %%s" % (squash(args[0]).replace("%", "%%"), op,
                                                squash(args[1]).replace("%", "%%")) + (". " + extra if extra else "")
            fmt = fmt.rstrip()
        elif head in ("GLOO_THROW", "GLOO_THROW_INVALID_OPERATION_EXCEPTION", "GLOO_THROW_IO_EXCEPTION",
                      "GLOO_ERROR_MSG"):
            if len(args) == 1 and is_call(args[0], "GLOO_ERROR_MSG"):
                continue  # read at the inner GLOO_ERROR_MSG
            fmt = message(args, addr)
        elif head in ("GLOO_ERROR", "GLOO_WARN", "GLOO_INFO"):
            level = head.split("_")[1].lower()
            fmt = head.split("_")[1] + " " + message(args, addr)
        elif head == "throw":
            if not args or is_call(args[0], "GLOO_ERROR_MSG"):
                continue
            fmt = arg_text(args[0], addr)
        elif head == "signalException":
            # Context::signalException(msg) / Pair::signalException(msg): an IoException of msg
            if len(args) != 1 or not _STRING_RUN.match(args[0]):
                continue
            fmt = arg_text(args[0], addr)
        else:  # an error class of the tcp transport
            cls = head
            base = classes.get(cls)
            if base is None or not args:
                continue
            if cls == "SystemError":
                if not _STRING_RUN.match(args[0]):
                    continue
                fmt = base.replace("{syscall}", common.join_literals(args[0]).replace("%", "%%"))
            elif base == "{msg}":
                fmt = arg_text(args[0], addr)
            else:
                fmt = base
            level = "error_class"
        if not re.sub(r"%[a-z]|%%|\s", "", fmt.split(" ", 1)[1] if level in ("error", "warn", "info") else fmt):
            unread.append("%s:%d: %s" % (path, line, head))
            continue
        sites.append(Site(path, line, head, fmt, level))
    return sites, unread


def read_sites(src, rev):
    """Every message site at ``rev``: (sites, unread)."""
    files = [p for p in common.ls_files(src, rev, "gloo")
             if CODE_EXT.search(p) and not p.startswith(SKIP_DIRS) and p not in SKIP_FILES]
    addresses = dict((t, address_format(src, rev, t)) for t in ("tcp", "uv", "ibverbs"))
    classes = {}
    if "gloo/transport/tcp/error.cc" in files:
        classes = error_class_formats(common.show(src, rev, "gloo/transport/tcp/error.cc"), addresses["tcp"])
    sites, unread = [], []
    for path in sorted(files):
        if path in ("gloo/transport/tcp/error.cc", "gloo/transport/tcp/error.h"):
            continue
        s, u = read_file(src, rev, path, classes, addresses)
        sites.extend(s)
        unread.extend(u)
    return sites, unread



# ---------------------------------------------------------------------------------------------
# Classification

B = "benign"
CFG, IB, APP, ERR = "logged_nccl_config_error", "logged_ib_error", "logged_application_error", "logged_error"
CATEGORY = {CFG: "nccl_config", IB: "ib_network", APP: "application", ERR: "unknown"}

M_IFACE = ("Gloo found no address for its socket: GLOO_SOCKET_IFNAME names an interface without an address on this "
           "host, or the hostname does not resolve to one of this host's addresses.")
M_BIND = ("Gloo could not bind its listening socket: the address is not this host's (GLOO_SOCKET_IFNAME, the "
          "hostname) or the port is taken.")
M_SELF = ("Gloo was asked to connect a rank to its own address: two ranks advertise the same address and port "
          "(a hostname resolving to a loopback or shared address, or a duplicated rank).")
M_IP = "An address given to Gloo is not an IPv4 or IPv6 address: the job's network settings."
M_MR = ("Gloo could not register memory with the HCA: the locked-memory limit (ulimit -l) or, for GPU memory, "
        "the GPUDirect peer-memory module.")
M_IBDEV_NAME = "The ibverbs device Gloo was told to use does not exist on this host: the job's device setting."
M_TLS = ("Gloo's TLS transport is not set up: its key, certificate or CA files are missing or unreadable, or the "
         "loaded libssl lacks a symbol.")
M_FILESTORE = "Gloo's file store cannot use its rendezvous path: it is missing or not writable."
M_WC = ("An InfiniBand work completion of Gloo's ibverbs transport failed (the status names why): the RDMA path "
        "between this host and the peer broke (link, cable, switch or the peer's HCA).")
M_POST = ("The HCA refused an RDMA work request of Gloo's ibverbs transport: the queue pair is in error after a "
          "link or peer failure.")
M_IBDEV = ("Gloo could not open or query the host's InfiniBand device: its HCA, its driver, or the container's "
           "access to /dev/infiniband.")
M_IBTHREAD = "Gloo's ibverbs completion thread caught an error: the RDMA transport failed (the text says how)."
M_CLOSED = ("A peer closed its connection to this rank: usually that rank's process exited first (find its own "
            "error), otherwise the network between them failed.")
M_IOERR = ("Reading from or writing to a peer's socket failed (reset, broken pipe): the peer's process died or the "
           "network between them failed.")
M_GONE = ("The connection to a peer was already closed when this rank used it: the peer died or an earlier error "
          "closed it.")
M_TIMEOUT = ("A peer did not send or receive within Gloo's timeout: it is stuck, dead or slow, the ranks issue "
             "different collectives, or the network between them drops traffic.")
M_APP_TIMEOUT = ("Gloo closed this pair because an operation elsewhere in the process timed out: a consequence, the "
                 "'Timed out waiting' line says which.")
M_CONNECT = ("Gloo could not connect to a peer: the peer is not listening (not started, or dead), or a firewall, a "
             "route or the wrong interface (GLOO_SOCKET_IFNAME) blocks the way.")
M_RETRY = "A connection attempt to a peer failed and Gloo retries it: fatal only if the retries run out."
M_STORE_WAIT = ("Gloo's rendezvous store waited in vain for other ranks' keys: a rank did not start or reach the "
                "rendezvous.")
M_REDIS = "Gloo could not reach its Redis rendezvous server."
M_MESH = ("Gloo has no connection to a rank it must talk to: the full mesh was never established (an earlier "
          "connection error of this rank says why).")
M_ARGS = ("Gloo rejected a collective's arguments (sizes, counts, element size, root, buffers): the job's call, or "
          "ranks that pass different sizes.")
M_USAGE = "Gloo rejected a use of its API (an option, a mode, a store operation, a slot or a key): the job's code."
M_BOUNDS = ("A send or receive addressed bytes outside its buffer, or a peer sent more than this rank posted: the "
            "ranks' tensor sizes or collectives differ.")
M_CUDA = "A CUDA or NCCL call Gloo made failed: the error text names why."
M_P2P = "Gloo's CUDA collective needs peer access between two GPUs that do not have it."
M_MPI = "An MPI call under Gloo's MPI context failed."
M_INTERNAL = ("An internal check of Gloo failed (the condition shown): a Gloo bug, or the consequence of an earlier "
              "error of this rank.")
M_INFO = "Which ibverbs device Gloo uses: a set-up note."

COLLECTIVES = (r"^gloo/(?:allgatherv?|allreduce(?:_\w+)?|alltoallv?|barrier\w*|broadcast(?:_one_to_all)?|gatherv?|"
               r"reduce(?:_scatter)?|scatter|pairwise_exchange|cuda_allreduce_\w+|cuda_broadcast_one_to_all|"
               r"cuda_collectives_\w+|nccl/nccl)\.(?:cc|h|cu)")

# (path regex, format regex, kind, severity, meaning): first match wins; severity None: critical
# for an exception, warning for a log line
RULES = [
    # --- set-up notes
    (r"", r"^INFO ", B, "ok", M_INFO),
    # --- InfiniBand: the ibverbs transport
    (r"", r"IBV_WC_SUCCESS", IB, None, M_WC),
    (r"", r"^ibv_post_(?:send|recv): ", IB, None, M_POST),
    (r"", r"ibv_query_(?:device|port): |ibv_create_cq failed|ibv_get_cq_event|^No ibverbs devices present", IB, None,
     M_IBDEV),
    (r"/ibverbs/", r"^ERROR Exception (?:while handling completion event|in handleCompletion)", IB, None, M_IBTHREAD),
    # --- the job's network set-up: interface, hostname, addresses, TLS, memory registration
    (r"", r"Unable to find (?:address|interface) for", CFG, None, M_IFACE),
    (r"", r"(?:^|\. )bind: %m$", CFG, None, M_BIND),
    (r"", r"(?i)cannot connect to self", CFG, None, M_SELF),
    (r"", r"^Invalid IP address$", CFG, None, M_IP),
    (r"", r"ibv_reg_mr: ", CFG, None, M_MR),
    (r"", r"^Unable to find device named: ", CFG, None, M_IBDEV_NAME),
    (r"/tls/", r"must be specified|SSL_CTX_|^ssl_ctx != nullptr|^Can't find %s in", CFG, None, M_TLS),
    (r"", r"File cannot be (?:created|opened)", CFG, None, M_FILESTORE),
    # --- a peer or the network between: the one cannot be told from the other
    (r"", r"^Connection closed by peer ", ERR, "critical", M_CLOSED),
    (r"", r"^Read error |^writev |^SSL_(?:read|write) .+ failed|^(?:read|write): %m(?:, remote=|$)|"
          r"^short (?:read|write): ",
     ERR, "critical", M_IOERR),
    (r"", r"^Socket (?:unexpectedly )?closed |Pair is not connected \(|Pair is not SSL connected", ERR, "critical",
     M_GONE),
    (r"", r"^(?:Read|Write|Send|Connect) timeout |^Timed out waiting %sms for (?:recv|send) operation|"
          r"^Timeout waiting for memory region", ERR, "critical", M_TIMEOUT),
    (r"", r"^Application timeout caused pair closure$", ERR, "warning", M_APP_TIMEOUT),
    (r"", r"^SO_ERROR: |^ERROR failed to connect", ERR, "warning", M_RETRY),
    (r"", r"^timed out connecting: |^getsockopt: %m, remote=|(?:^|\. )connect(?: \S+)?: %m$|^Error connecting to |"
          r"handshake was not succeeded|^SSL_do_handshake failed|Error on listener socket", ERR, "critical", M_CONNECT),
    (r"", r"^Wait timeout for key\(s\): ", ERR, "critical", M_STORE_WAIT),
    (r"", r"^Connecting to Redis: ", ERR, "critical", M_REDIS),
    (r"", r"missing connection between rank|Missing pair in backing context|Backing context not fully connected|"
          r"pair missing \(index", ERR, "critical", M_MESH),
    # --- CUDA, NCCL, MPI under Gloo
    (r"", r"Error at: ", ERR, "critical", M_CUDA),
    (r"", r"does not have peer access to GPU", ERR, "critical", M_P2P),
    (r"^gloo/mpi/", r"", ERR, "critical", M_MPI),
    # --- the job's use of Gloo
    (r"", r"^(?:offset|nbytes) <=? (?:this->size|tbuf->size)|^offset \+ length <= size_|"
          r"^op\.preamble\.(?:roffset \+ op\.preamble\.)?length <= op\.(?:nbytes|buf->size_)", APP, "critical",
     M_BOUNDS),
    (r"", r"Element size does not match|Non-root may not specify input|NCCL (?:source|destination|does not support|"
          r"elements must map)|localBroadcastOp must be initialized|(?:target|source)Ptr must be one of", APP,
     "critical", M_ARGS),
    (COLLECTIVES, r"", APP, "critical", M_ARGS),
    (r"", r"duplicate buffer for slot|^Slot overflow|' already set|doesn't support|^Can only switch to sync mode|"
          r"Cannot (?:send|recv) in sync mode|only supports busy polling|not supported yet|"
          r"Only one src rank is supported|LocalRank must be non-negative|Invalid timeout|Device not set|"
          r"Transport context not set|^!?useRankAsSeqNumber_\. Listener|^rank >= 0\.|^rank < size\.|^size >= 1\.",
     APP, "critical", M_USAGE),
]
# what no rule names: an internal check
DEFAULT = (ERR, "warning", M_INTERNAL)


def classify(site):
    """(kind, category, severity, meaning) of one site."""
    for path_rx, msg_rx, kind, severity, meaning in RULES:
        if re.search(path_rx, site.path) and re.search(msg_rx, site.fmt):
            break
    else:
        kind, severity, meaning = DEFAULT
    if kind == B:
        return kind, "healthy", "ok", meaning
    if severity is None:
        severity = "warning" if site.level in ("error", "warn") else "critical"
    return kind, CATEGORY[kind], severity, meaning


def check(kind, category, severity):
    if kind == B:
        if (category, severity) != ("healthy", "ok"):
            raise SystemExit("benign with %s/%s" % (category, severity))
    elif kind not in KINDS or category not in KINDS[kind]["categories"] or severity not in ("info", "warning",
                                                                                             "critical"):
        raise SystemExit("bad classification %s/%s/%s" % (kind, category, severity))


# ---------------------------------------------------------------------------------------------

DOC = """\
Read: in gloo/** (not test/, benchmark/, examples/), every GLOO_ENFORCE* (EnforceNotMet prints
"[enforce fail at FILE:LINE] <cond>. <message>": the rows' format is "<cond>. <message>", the
condition as the preprocessor stringifies it; GLOO_ENFORCE_EQ/NE/LE/LT/GE/GT add "%s vs %s"
before the message), every GLOO_ERROR_MSG and GLOO_THROW* ("[FILE:LINE] <message>": the format
is the message), GLOO_ERROR/WARN/INFO log lines ("[FILE:LINE] LEVEL <message>": the format keeps
the level), the tcp transport's connection errors (error.cc what(): "<syscall>: %m, remote=%s"
per SystemError construction, short read/write, "timed out connecting: %s"), throw
std::<exception>(...) and literals handed to signalException (no "[FILE:LINE]" before them).
MakeString's arguments: literals joined, strerror() as %m, a peer's address as its
Address::str() prints it (tcp/uv "[%s]%s", ibverbs "LID: %d QPN: %d PSN: %d"), everything
else %s.
Older commits (OLDER: the commits PyTorch releases of 2022-2025 vendor, v2.7.1's 5354032ea08e
among them): each of their messages that the pin words otherwise is a row too, file
"path@<commit12>" (the line at that commit).
Lines: PyTorch raises Gloo's exceptions as they are ("RuntimeError: [enforce fail at
/pytorch/third_party/gloo/gloo/transport/tcp/device.cc:83] ifa != nullptr. Unable to find
address for: bond1", "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534]
Connection closed by peer [10.0.0.1]:1234"), also inside its own words ("Gloo connectFullMesh
failed with [...] ..."). TEMPLATES print "[<PyTorch's path>/<file>:<line>] <message>" for every
row: an enforce's real line has "enforce fail at " inside the brackets too, a signalException
literal ("Application timeout caused pair closure") has no brackets; rows match either way (the
bracket is no part of a format).
Classification (generator rules, first match wins): interface / hostname / address lookup, bind,
connect-to-self, memory registration (ulimit -l, peer memory), TLS and file-store set-up ->
nccl_config (the job's network set-up); connections closed or reset by a peer, read/write
errors, timeouts waiting for a peer, connection set-up that failed (retried attempts: warning),
store waits, a mesh never established -> unknown (a peer's death cannot be told from the
network's failure); ibverbs work completions, posting work requests, opening or querying the HCA
-> ib_network; collectives' argument, size and buffer checks, API misuse -> application; CUDA,
NCCL and MPI calls under Gloo and every other internal check -> unknown (internal checks:
warning); the INFO line naming the ibverbs device -> benign.
Severity: critical for an exception that fails the operation, warning for a log line, a retried
attempt, a consequence or an internal check.
"""


def templates_for(rows):
    """A template per source directory of the rows, the deepest first."""
    dirs = sorted(set(r[0].split("@")[0].rsplit("/", 1)[0] for r in rows), key=lambda d: (-d.count("/"), d))
    return tuple((d + "/", "[%s%s/{file}:{line}] {message}" % (FILE_ROOT, d)) for d in dirs)


def site_rows(sites, suffix=""):
    rows = []
    for s in sites:
        if s.level == "info" and classify(s)[0] != B:
            continue  # INFO lines only as benign notes
        kind, category, severity, meaning = classify(s)
        check(kind, category, severity)
        rows.append((s.path + suffix, s.line, s.fmt, kind, category, severity, meaning))
    return rows


def build(src, rev, older=None):
    """(rows, notes) of the pin ``rev`` and, for the commits ``older``, their messages the pin words
    otherwise (file "path@<commit12>")."""
    sites, unread = read_sites(src, rev)
    notes = ["%s: no literal text: left out" % u for u in unread]
    rows = site_rows(sites)
    known = set(r[2] for r in rows)
    for commit, _why in (OLDER if older is None else older):
        try:
            crev = common.resolve(src, commit)
        except Exception:  # noqa: BLE001 - an older commit is optional
            notes.append("commit %s not in the source: skipped" % commit)
            continue
        csites, _cunread = read_sites(src, crev)
        for r in site_rows([s for s in csites if s.fmt not in known], "@" + crev[:12]):
            if r[2] not in known:
                known.add(r[2])
                rows.append(r)
    # one format, one verdict: the matcher cannot tell two rows of one format apart
    seen = {}
    for r in rows:
        if matchable(r[2]):
            prev = seen.setdefault(r[2], r)
            if (prev[3], prev[4]) != (r[3], r[4]):
                raise SystemExit("%r: %s:%d says %s/%s, %s:%d says %s/%s" % (r[2], prev[0], prev[1], prev[3], prev[4],
                                                                             r[0], r[1], r[3], r[4]))
    return rows, notes


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", required=True, help="facebookincubator/gloo: a bare mirror or a clone")
    ap.add_argument("--rev", default=PIN, help="commit, branch or tag (default %s, %s)" % (PIN[:12], PIN_NOTE))
    ap.add_argument("--notes", action="store_true", help="print what was left out")
    args = ap.parse_args(argv)
    commit = common.resolve(args.src, args.rev)
    date = common.git(args.src, "log", "-1", "--format=%cd", "--date=short", commit).strip()
    version = "main@%s" % date
    rows, notes = build(args.src, commit)
    if args.notes:
        for note in notes:
            print("note: " + note)
    meta = {"EMITTER": "Gloo", "PROJECT": "Gloo (collective communications library; PyTorch's gloo backend)",
            "VERSION": version, "COMMIT": commit, "LICENCE": LICENCE, "ORIGIN": ORIGIN, "GENERATOR": GENERATOR}
    path = common.write_table("gloo", meta, MARKERS, templates_for(rows), rows, doc=DOC)
    print("%s: %d rows" % (path, len(set(rows))))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--dump":  # the sites and their verdicts, to review the rules
        for s in read_sites(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else PIN)[0]:
            print("%s:%d\t%s\t%r\t%s" % (s.path, s.line, s.level, s.fmt, "/".join(classify(s)[:3])))
        sys.exit(0)
    main()
