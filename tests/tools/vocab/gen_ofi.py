#!/usr/bin/env python3
"""Generate module_utils/gpu_runbook/vocab/ofi.py: the messages aws-ofi-nccl (the NCCL net
plugin for AWS EFA over libfabric) prints through NCCL's logger (its ``NET/OFI`` lines), read
from aws/aws-ofi-nccl's own source at a pinned tag.

Usage (from the repository root)::

    # get the source: any clone of https://github.com/aws/aws-ofi-nccl
    git clone --bare https://github.com/aws/aws-ofi-nccl.git /tmp/aws-ofi-nccl.git
    .venv/bin/python tests/tools/vocab/gen_ofi.py --src /tmp/aws-ofi-nccl.git [--rev v1.21.1]

``--rev`` defaults to the pin (tag v1.21.1 = 2475c4c73690). Deterministic: the same source and
pin give the same module.

What is read:

- every ``NCCL_OFI_WARN(`` call in src/** and include/** (macro of include/nccl_ofi_log.h:
  ``(*ofi_log_function)(NCCL_LOG_WARN, NCCL_ALL, __PRETTY_FUNCTION__, __LINE__, "NET/OFI "
  fmt, ...)``, so NCCL prints ``host:pid:tid [dev] <function>:<line> NCCL WARN NET/OFI
  <message>``); the format is its first argument, adjacent literals joined, with the
  "NET/OFI " the macro puts before it; a WARN inside a ``#define`` whose format takes a
  macro parameter (``"Called " fn_name " on ..."``, ``#sym``, ``STRINGIFY(sym)``) is read once
  at the macro with the parameter as ``%s`` and once per invocation that passes a literal;
- ``NCCL_OFI_INFO(`` / ``NCCL_OFI_TRACE(`` / ``NCCL_OFI_TRACE_WHEN(`` calls only where their
  format reads as an error (vocab/reading.py ``error_like``);
- the releases in OLDER (the newest patch of each minor release 1.4 .. 1.20, the plugin the
  AWS Deep Learning AMIs and containers of the last years ship): every WARN format of theirs
  that the pin words otherwise is a row too, file "path@tag" (the line at that tag), classified
  by the same rules.

Left out: INFO/TRACE lines that do not read as errors (set-up, selected providers, topology),
formats that are no literal (a variable), the tests/ and 3rd-party/ trees.

Classification: WARN_RULES / INFO_RULES (first match wins, by source path and message, each
group with its reason); severity critical when the code fails the operation after the WARN
(returns an error, jumps to its error exit, throws, aborts), warning when it goes on, info for
INFO/TRACE lines. One format has one verdict (the generator stops otherwise).
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
from gpu_runbook.vocab.reading import error_like  # noqa: E402

GENERATOR = "tests/tools/vocab/gen_ofi.py"
PIN = "v1.21.1"
# the newest patch of each minor release 1.4 .. 1.20, newest first (a format is kept once, at the
# newest release that has it)
OLDER = ("v1.20.0", "v1.19.2", "v1.18.0", "v1.17.3", "v1.16.3", "v1.15.0", "v1.14.2", "v1.13.2-aws",
         "v1.12.1-aws", "v1.11.1-aws", "v1.10.0-aws", "v1.9.2-aws", "v1.8.1-aws", "v1.7.4-aws", "v1.6.0",
         "v1.5.0-aws", "v1.4.0-aws")
ORIGIN = "https://github.com/aws/aws-ofi-nccl"
LICENCE = "Apache-2.0 (LICENSE)"

SCAN = ("src", "include")
CODE_EXT = re.compile(r"\.(?:c|cc|cpp|h|hpp)$")
PREFIX = "NET/OFI "

HOST = "gpu-a-01:12345:12399 [0]"
# NCCL's logger prints the function (__PRETTY_FUNCTION__) and line the plugin passes where it
# prints its own file:line; the rows' file stands in for it
TEMPLATES = (("", HOST + " {file}:{line} NCCL WARN {message}"),)
MARKERS = ("NET/OFI",)

# ---------------------------------------------------------------------------------------------
# C / C++ source reading


blank_comments, call_args = common.blank_comments, common.call_args


_TOKEN = re.compile(r'\s*(?:(?P<str>"(?:[^"\\\n]|\\.)*")|(?P<hash>#\s*[A-Za-z_]\w*)|'
                    r'(?P<call>STRINGIFY\s*\(\s*\w+\s*\))|(?P<id>[A-Za-z_]\w*))')


def join_format(expr, subst=None):
    """A format expression (adjacent literals, PRI macros, macro parameters in ``subst`` {name:
    text}, ``#param`` / ``STRINGIFY(param)`` as {"#name": text}) -> its text, or None when some
    part is neither (a variable, a call) or no part is a literal."""
    subst = subst or {}
    expr = expr.replace("\\\n", "").strip()
    pos, parts, literal = 0, [], False
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if not m:
            return None
        if m.group("str"):
            parts.append(common.c_unescape(m.group("str")[1:-1]))
            literal = True
        elif m.group("hash") or m.group("call"):
            name = m.group("hash")[1:].strip() if m.group("hash") else re.search(r"\((\s*\w+\s*)\)",
                                                                                  m.group("call")).group(1).strip()
            if "#" + name not in subst:
                return None
            parts.append(subst["#" + name])
        else:
            name = m.group("id")
            if name in subst:
                parts.append(subst[name])
            elif name in common.PRI_MACROS:
                parts.append(common.PRI_MACROS[name])
            else:
                return None
        pos = m.end()
    return "".join(parts) if literal else None


def define_span(text, pos):
    """(start, end) of the #define ``pos`` lies in (continued lines included), or None."""
    start = text.rfind("\n", 0, pos) + 1
    while True:
        nl = text.find("\n", start)
        line = text[start:nl if nl >= 0 else len(text)]
        if re.match(r"\s*#\s*define\b", line):
            end = start
            while True:
                nl = text.find("\n", end)
                if nl < 0:
                    return start, len(text)
                if not text[end:nl].rstrip().endswith("\\"):
                    return start, nl
                end = nl + 1
        if start == 0:
            return None
        prev_end = start - 1
        prev_start = text.rfind("\n", 0, prev_end) + 1
        if not text[prev_start:prev_end].rstrip().endswith("\\"):
            return None
        start = prev_start


# what the code does after a WARN: fails the operation (critical) or goes on (warning)
_OK_RETURN = re.compile(r"\breturn\s*(?:;|0\s*;|ncclSuccess\s*;|true\s*;)")
_FAIL = re.compile(r"\breturn\b|\bgoto\b|\bthrow\b|\babort\s*\(|\bexit\s*\(|\bassert_always\s*\(|"
                   r"\bassert\s*\(\s*(?:0|false)\s*\)|\bNCCL_OFI_ASSERT\b|=\s*-?E[A-Z]+\s*;|=\s*nccl\w*Error\s*;")


def fails_after(text, end):
    """True when the code after a WARN ending at ``end`` fails the operation (returns an error,
    jumps to its exit, throws, aborts, sets an error code), up to the end of its block."""
    window = text[end:end + 500]
    depth, cut = 0, len(window)
    for i, c in enumerate(window):
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth < 0:
                cut = i
                break
    window = window[:cut]
    stop = re.search(r"\bbreak\s*;|\bcontinue\s*;", window)
    if stop:
        window = window[:stop.start()]
    first = _FAIL.search(window)
    if first is None:
        return False
    ok = _OK_RETURN.search(window)
    return not (ok is not None and ok.start() <= first.start())


class Site(object):
    __slots__ = ("path", "line", "fmt", "level", "fails")

    def __init__(self, path, line, fmt, level, fails):
        self.path, self.line, self.fmt, self.level, self.fails = path, line, fmt, level, fails


_CALL = re.compile(r"\bNCCL_OFI_(WARN|INFO|TRACE|TRACE_WHEN)\s*\(")
# the position of the format among a logging macro's arguments
_FMT_ARG = {"WARN": 0, "INFO": 1, "TRACE": 1, "TRACE_WHEN": 2}


def find_macros(text):
    """{name: [(params, warn line, format expression, fails)]} of the file's function-like
    #defines whose NCCL_OFI_WARN format uses one of their parameters."""
    out = {}
    for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+(\w+)\(([^)]*)\)", text, re.M):
        name, params = m.group(1), [p.strip() for p in m.group(2).split(",")]
        start, end = define_span(text, m.start())
        body = text[start:end]
        for w in re.finditer(r"\bNCCL_OFI_WARN\s*\(", body):
            args, wend = call_args(body, w.end() - 1)
            expr = args[0] if args else ""
            idents = set(re.findall(r"[A-Za-z_]\w*", re.sub(r'"(?:[^"\\\n]|\\.)*"', "", expr)))
            if idents & set(params):
                out.setdefault(name, []).append((params, common.line_of(text, start + w.start()), expr,
                                                 fails_after(body, wend)))
    return out


def macro_subst(params, args, consts):
    """A macro's parameters for one invocation: a literal argument as its text, ``#param`` as the
    argument's spelling, anything else as %s."""
    subst = dict(consts)
    for i, p in enumerate(params):
        a = args[i].replace("\\\n", "").strip() if i < len(args) else ""
        lit = join_format(a) if a.startswith('"') else None
        subst[p] = lit.replace("%", "%%") if lit is not None else "%s"
        subst["#" + p] = a if re.fullmatch(r"\w+", a) else "%s"
    return subst


def macro_generic(params, expr, consts):
    """A macro's WARN format with every parameter as %s."""
    subst = dict(consts)
    for q in params:
        subst[q] = subst["#" + q] = "%s"
    return join_format(expr, subst)


def read_sites(src, rev):
    """(sites, unread): every logging call of src/** and include/** at ``rev`` with a literal
    format, and the WARNs whose format is no literal."""
    paths = [p for p in common.ls_files(src, rev, *SCAN) if CODE_EXT.search(p)]
    consts = {"PACKAGE_NAME": package_name(src, rev)}  # autoconf's, from configure.ac
    texts = dict((p, blank_comments(common.show(src, rev, p))) for p in paths)
    macros = {}
    for p in paths:
        for name, defs in find_macros(texts[p]).items():
            for d in defs:
                macros.setdefault(name, []).append((p,) + d)
    sites, unread = [], []
    for p in paths:
        text = texts[p]
        for m in _CALL.finditer(text):
            span = define_span(text, m.start())
            args, end = call_args(text, m.end() - 1)
            k = _FMT_ARG[m.group(1)]
            expr = args[k] if len(args) > k else ""
            level = "warn" if m.group(1) == "WARN" else "info"
            if expr.strip() in ("fmt", "...", "__VA_ARGS__"):
                continue  # the logging macros themselves
            fmt = join_format(expr, consts)
            if fmt is None:
                if span is None and level == "warn":
                    unread.append("%s:%d %s" % (p, common.line_of(text, m.start()), " ".join(expr.split())[:80]))
                continue  # a macro's WARN with a parameter: read at the macro and per invocation below
            sites.append(Site(p, common.line_of(text, m.start()), PREFIX + fmt, level,
                              fails_after(text if span is None else text[:span[1]], end)))
        for name, defs in macros.items():
            for inv in re.finditer(r"\b%s\s*\(" % re.escape(name), text):
                if define_span(text, inv.start()) is not None:
                    continue
                args, _end = call_args(text, inv.end() - 1)
                for (mpath, params, _wline, expr, fails) in defs:
                    if mpath != p and not mpath.endswith((".h", ".hpp")):
                        continue
                    fmt = join_format(expr, macro_subst(params, args, consts))
                    if fmt is not None and fmt != macro_generic(params, expr, consts):
                        sites.append(Site(p, common.line_of(text, inv.start()), PREFIX + fmt, "warn", fails))
    for name, defs in sorted(macros.items()):
        for (mpath, params, wline, expr, fails) in defs:
            fmt = macro_generic(params, expr, consts)
            if fmt is not None:
                sites.append(Site(mpath, wline, PREFIX + fmt, "warn", fails))
    return sites, unread


# ---------------------------------------------------------------------------------------------
# classification

ERR, CFG, IB, B = "logged_error", "logged_nccl_config_error", "logged_ib_error", "benign"
CATEGORY = {ERR: "unknown", CFG: "nccl_config", IB: "ib_network", B: "healthy"}

M_COMPLETION = ("A libfabric (EFA) operation completed with an error: the provider reports the transfer failed on the "
                "fabric (the peer unreachable or gone, the NIC or link); the error text and prov_errno say which.")
M_CQ = ("Reading the completion queue of the EFA/libfabric endpoint failed: the provider reported an error on the "
        "endpoint (the NIC or the fabric).")
M_POST = ("Posting a send, receive, read or write to the EFA/libfabric endpoint failed: the provider refused it (the "
          "endpoint is in error after a fabric failure, or its queue is full); the error text says which.")
M_AV = ("The address of a peer could not be inserted into the libfabric address vector: the peer's EFA address "
        "cannot be resolved or reached (a NIC outside this fabric, a peer that went away).")
M_CONNECT = "Connecting to a peer through the plugin's connection manager failed: the peer or the fabric."
M_MR = ("Registering memory with the EFA/libfabric provider failed: the locked-memory limit (ulimit -l), GPUDirect "
        "RDMA support (DMA-BUF or the peer-memory module) or the provider's MR limits on this host.")
M_PROVIDER = ("libfabric or its EFA provider is missing, too old or lacks a capability the plugin needs (fi_info -p "
              "efa; the Libfabric / EFA installer version).")
M_FI_SETUP = ("libfabric could not create a resource of the endpoint (fabric, domain, endpoint, address vector, "
              "completion queue) at set-up: the EFA provider or driver on this host, or its resource limits.")
M_UNSUPPORTED = "The plugin does not support this combination of settings, protocol or NCCL interface."
M_PARAM = "An OFI_NCCL_* / NCCL_* setting the plugin reads has an invalid, conflicting or deprecated value."
M_TOPO = ("The plugin could not read or write the hardware topology (hwloc, sysfs PCI attributes, the NCCL topology "
          "file it generates).")
M_NIC = "The plugin found no (or not the expected number of) EFA NICs for the GPUs: the instance's devices or drivers."
M_CUDA_SUPPORT = ("The plugin could not load or use CUDA, DMA-BUF or GPUDirect RDMA: the CUDA driver / runtime, "
                  "the build's features, or GDRCopy (libgdrapi, gdrdrv) on this host.")
M_NCCL_ENV = "The plugin could not set or read an NCCL setting or symbol (the NCCL library and the plugin disagree)."
M_CUDA_CALL = "A CUDA driver call inside the plugin failed; its error text says why."
M_INTERNAL = ("An internal step or consistency check of the plugin failed; the message names no cause outside it "
              "(an earlier NET/OFI WARN may).")
M_ALLOC = "The plugin could not allocate or take one of its internal structures (memory, a free list, an ID pool)."
M_CLEANUP = "Releasing a plugin resource failed at clean-up, usually after an earlier error."
M_CONSEQ = "A step failed because an earlier one did: the NET/OFI WARN before it names the cause."

# WARN rules, first match wins: (path regex, message regex (on the format, without "NET/OFI "),
# kind, severity or None (critical when the code fails the operation after the WARN, else warning),
# meaning). Each group says why.
WARN_RULES = [
    # --- not a fault: WARN-level notes of what the plugin chose
    (r"", r"^CUDA flush enabled$", B, "ok", "The plugin reports it flushes GPUDirect RDMA writes with CUDA: a "
                                          "set-up choice, not a fault."),
    (r"", r"^Enabling error checking on mutex$", B, "ok", "A debugging option of the plugin is on: not a fault."),
    (r"", r"^AWS platform priority: -1 \(topo not set\)$", B, "ok",
     "The AWS platform code was not chosen for want of a topology: the generic platform is used, not a fault."),
    # --- completions that failed: the fabric, the NIC or the peer (the provider's error says which)
    (r"", r"completed? with error|^Unknown remote write error", IB, "critical", M_COMPLETION),
    (r"", r"^Unable to read from fi_cq_readerr|^Unable to retrieve completion queue entries|^Failed to process CQ|"
          r"^Received error entry without a context", IB, None, M_CQ),
    (r"", r"^fi_getname failed", CFG, None, "The endpoint's own libfabric address could not be read at set-up: "
                                             "the EFA provider on this host."),
    # --- the endpoint refused to post work at run time
    (r"", r"^Error posting (?:RDMA|flush|rx|bounce)|^fi_\w+ (?:\(eager\) )?failed(?:;| with RC)|^%s failed; RC|"
          r"^Unable to post (?:request|receive|a buffer)|^Could not send request|^Unable to issue read|"
          r"^Failed call to fi_\w+; RC|^Failed to post (?:ACK send|recv)\. RC|^Unable to send connect message|"
          r"^Error in call to fi_send|^fi_read (?:iflush|iget) failed|^Call to post_with_pending_retry failed|"
          r"^Write failed for seq_num|^Metadata send failed|^Failed to (?:post|issue) eager read", IB, None, M_POST),
    (r"", r"^(?:CM: )?Unable to insert remote address into address vector|^Failed to insert address for peer",
     IB, None, M_AV),
    (r"", r"^CM connect failed|^preparing for connection failed|^Error in bootstrap ring (?:accept|connect)|"
          r"^bootstrap allgather (?:isend|irecv|test) failed|^Failed to exchange connect metadata", IB, None,
     M_CONNECT),
    # --- memory registration (set-up of the host: locked memory, GPUDirect RDMA / DMA-BUF)
    (r"", r"^(?:CM: )?Unable to (?:register memory|bind MR to EP|enable MR)|register memory region|"
          r"^Could not register memory|^Failed to register memory|^fi_mr_(?:bind|enable)|"
          r"^Local endpoint memory registration failed|^Failed call to reg_mr|registration failed|"
          r"^Memory registration may not have completed|^Could not set registration request attributes|"
          r"^Call to freelist_init_mr failed|^Failed call to sendrecv_mr_buffers_internal_register|"
          r"^Could not register dummy buffer for flush", CFG, None, M_MR),
    # --- libfabric and its provider: missing, too old, lacking a capability
    (r"", r"libfabric version|^Only EFA provider is supported|optimal provider|fabric provider|fi_getinfo|"
          r"^Unable to find a protocol that worked|^Unable to find plugin protocol|^Provider |^Querying provider|"
          r"provider requires it|provider data progress model|^Endpoint does not support RMA|"
          r"^No viable endpoint found for TCP provider|^fi_open_ops|FI_OPT_|^Using Libfabric 1\.18 API|"
          r"^GDR support reported to NCCL|^Disabling shared memory failed|^Could not set %s\. RC|"
          r"^Unexpected failure setting (?:inorder|max_msg_size)|^Setting %s option failed|mode is not supported|"
          r"^GIN plugin does not support FI_MR_ENDPOINT|^fi_nic attributes not available|"
          r"^Libfabric returned rkey larger", CFG, None, M_PROVIDER),
    (r"", r"^Couldn't (?:create|open|allocate|bind|enable) (?:fabric|domain|a fabric access domain|endpoint|AV|CQ|"
          r"completion queue|EP-AV|EP-CQ)|^Could not create (?:Libfabric endpoint|address vector)|"
          r"^Unable to insert local address into address vector|^Call to fi_getname\(\) failed", CFG, None,
     M_FI_SETUP),
    # --- settings: invalid, conflicting, deprecated, unsupported together
    (r"", r"set to invalid value|is deprecated|^Invalid value for|^Conflicted configuration|"
          r"^Number of forced rails|^Provided mr keypool size|^MR key config parsing failed|"
          r"^domain_per_thread is true|NCCL_OFI_NIC_DUP_CONNS set|^unk\w+ transport %s|"
          r"when explicitly choosing an algorithm or protocol|^Attempt to set %s after get|"
          r"^Unrecognized histogram|^Cannot print histograms, invalid print format|^GDR disabled on GDR-supported",
     CFG, None, M_PARAM),
    (r"", r"not supported for SendRecv protocol|^(?:RDMA )?[Pp]rotocol does not support|not supported together|"
          r"^GIN only supports RDMA|GDAKI requested but plugin was built without|non-GDA-capable|"
          r"^gin GDAKI: not supported on this platform|^gin GDAKI: unsupported backendVersion|"
          r"^Group receives are not supported|^Model is not supported for platform|^Can not support more than",
     CFG, None, M_UNSUPPORTED),
    # --- topology and NICs
    (r"", r"[Tt]opology file|NCCL topology|hwloc|^Failed to (?:print|write) .*(?:tag|PCI)|NCCL_TOPO_FILE|topo file|"
          r"topology XML|hardware topology|"
          r"^Failed to create NCCL OFI topology|device property|link (?:width|speed)|^pciPath: Could not find|"
          r"^Could not find real path|^Failed to populate topology|^Unable to attach NIC to|"
          r"^Failed to retrieve PCI|^Error (?:opening|reading) file: %s|product name", CFG, None, M_TOPO),
    (r"", r"^Insufficient Libfabric devices|reported unexpected number of devices|^Failed to group NICs|"
          r"[Nn]umber of (?:NICs|rails|control rails|remote rails|remote control rails)|number of rails|"
          r"^Unexpected topo group size|^Unexpected group size|^Could not extract provider information",
     CFG, None, M_NIC),
    # --- CUDA, DMA-BUF, GPUDirect RDMA, GDRCopy support
    (r"", r"CUDA (?:Runtime|Driver) library|CUDA runtime symbol|^Failed to load symbol|CUDA function|"
          r"CUDA driver entry point|^Failed to query (?:CUDA|HIP) (?:driver|runtime) version|DMA-BUF|"
          r"^CUDA initialization failed|CUDA flush requested|cudaDriverEntryPointQueryResutlt|"
          r"^cu(?:da)?(?:Driver|Runtime)GetVersion failed|CUDA device|^Incorrect number of CUDA devices|"
          r"gdr handle|libgdrapi|GDRCopy support not available|GDRCopy v2 API|GDRCopy 2\.5|"
          r"^Failed to initialize GDRCopy|DMABUF_SUPPORTED|^Passed fd handle|PTR_CUDA type", CFG, None,
     M_CUDA_SUPPORT),
    (r"", r"^Cuda failure|^cu\w+ failed|^vmm_alloc: cu|^Failed to (?:disable|restore) stream capture|"
          r"^cuStreamDestroy failed|^Could not capture a CUDA context|^Unable to copy sentinel value to gpu",
     ERR, None, M_CUDA_CALL),
    # --- NCCL's own settings and symbols
    (r"", r"NCCL_PROTO|^Unable to set (?:NCCL_\w+|%s)$|ncclGetVersion|NCCL_TUNER_PLUGIN|^Unable to configure "
          r"(?:NVLS option|tuner)|Error setting NCCL_|^NCCL_OFI_TUNER is not available", CFG, None, M_NCCL_ENV),
    # --- clean-up after an error
    (r"", r"^Closing (?:recv|send)_comm %p with inflight requests|^Failed to close|^Unable to close|"
          r"^Error de-?registering|de-register|^Unable to deallocate|^Unable to unmap|^Cleanup of|^Freeing \w+ "
          r"failed|still (?:active|open) after cleanup|^Failed to (?:delete|destroy|fini|finalize|free|cleanup)\b|"
          r"^Could not (?:free|destroy|deregister)|^Error freeing|leaking key|destructor|^Also failed|"
          r"^Finalizing already finalized|^Failure in plugin cleanup|^Destructing base plugin|"
          r"^Attempted to deregister NULL|^Failed to deregister|dereg failed|^Unable to de-register|"
          r"^Unable to destroy mutex|^Mutex destroy failed|^pthread_mutex_destroy|^Could not deregister|"
          r"^GDRCopy (?:segment )?deregister failed|^gdr_un(?:map|pin)|Forcing release of remaining entries|"
          r"in-use entries that are not released|^Call to nccl_ofi_freelist_fini|^nccl_ofi_freelist_fini failed|"
          r"^rdma endpoint cleanup|^Failed call to (?:dereg_mr|sendrecv_comm_mr_base_dereg)|^delete ep for addr",
     ERR, None, M_CLEANUP),
    # --- a step that failed because an earlier one did
    (r"", r"^Context progress failed|^Failed call to (?:process_pending_reqs|send_progress)|"
          r"^Call to receive_progress failed|initialization failed$|^Initializing (?:plugin|a new domain|rail|"
          r"control rail|device|base|endpoint base)|^Creating new endpoint|^Failed to initiali[sz]ed? "
          r"(?:%s|rdma|sendrecv) protocol|^Caught exception|^Aborting due to call failure|^Device creation failed|"
          r"^Error performing (?:GPU|CUDA) GDR flush|^Creating domain failed|^Preparation of|^Posting of|"
          r"^Failed to start GIN gdrcopy worker|^gdrcopy worker failed|^Failed to allocate GIN context|"
          r"^gin GDAKI: createContext failed: %s|^GIN: error listening|^Failed to complete signal|"
          r"^\w+_completion failure$|^handle_ack_completion failure", ERR, None, M_CONSEQ),
    # --- internal structures that could not be allocated or taken
    (r"", r"[Aa]lloc(?:ation|ate)?\b.*(?:fail|error)|^(?:Failed|Unable|Could not|Couldn't) (?:to )?(?:get )?"
          r"(?:calloc|malloc|allocate|alloc)\b|^Unable to allocate|^Unable to \(re\)allocate|[Ff]reelist|"
          r"free list|^No (?:free|IDs|MR keys|comm id|pre-allocated)|queue full|window full|^Unable to get "
          r"(?:NCCL OFI|allocate)|^Cannot allocate an ID|^Stack is full|^Unable to grow cache|^Failed to grow|"
          r"^Failed to allocate|^Memory allocation|^Refusing to allocate|calloc failure|^Could not allocate|"
          r"^Unable to allocate stack|^Could not extend freelist|^MR key allocation failed|^Allocating",
     ERR, None, M_ALLOC),
]

# INFO / TRACE lines that read as errors (error_like), first match wins
INFO_RULES = [
    (r"", r"^fi_setopt\(%s\) ordering result", B, "ok",
     "The result of asking the provider for in-order delivery (error code 0 when it took): a set-up report."),
]
# what no rule names: an internal check of the plugin
DEFAULT = (ERR, M_INTERNAL)


def classify(site):
    """(kind, category, severity, meaning) of one site."""
    msg = site.fmt[len(PREFIX):]
    rules = WARN_RULES if site.level == "warn" else INFO_RULES + WARN_RULES
    for path_rx, msg_rx, kind, severity, meaning in rules:
        if re.search(path_rx, site.path) and re.search(msg_rx, msg):
            break
    else:
        kind, severity, meaning = DEFAULT[0], None, DEFAULT[1]
    if kind == B:
        return kind, "healthy", "ok", meaning
    if site.level != "warn":
        severity = "info"
    elif severity is None:
        severity = "critical" if site.fails else "warning"
    return kind, CATEGORY[kind], severity, meaning


# ---------------------------------------------------------------------------------------------

DOC = """\
Read: every NCCL_OFI_WARN( of src/** and include/** (include/nccl_ofi_log.h: NCCL's logger
with "NET/OFI " before the format, which the rows' formats keep); a WARN in a #define whose
format takes a macro parameter once at the macro (the parameter as %s) and once per invocation
that passes a literal; PACKAGE_NAME is configure.ac's AC_INIT name; NCCL_OFI_INFO / _TRACE /
_TRACE_WHEN lines only where their format reads as an error (vocab/reading.py error_like).
Older releases (OLDER: the newest patch of each of 1.4 .. 1.20): each of their WARN formats that
the pin words otherwise is a row too, file "path@tag" with the line at that tag, classified by
the same rules (a format once, at the newest release that has it).
Lines: "host:pid:tid [dev] <function>:<line> NCCL WARN NET/OFI <message>" (NCCL prints the
function the plugin passes, __PRETTY_FUNCTION__, where its own lines have file:line; TEMPLATES
puts the row's file there). INFO/TRACE lines are "host:pid:tid [dev] NCCL INFO NET/OFI ...".
Left out: INFO/TRACE lines that do not read as errors (set-up, providers, topology dumps),
formats that are not literals, tests/ and 3rd-party/.
Classification (generator rules, first match wins): completions "completed with error", CQ read
errors, posting sends/receives/RMA that the provider refuses, peers that cannot be inserted in
the address vector, connection set-up to a peer -> ib_network; memory registration (MR
register/bind/enable) -> nccl_config; libfabric / EFA provider missing, too old or lacking a
capability, libfabric resources that cannot be created at set-up, invalid or conflicting
OFI_NCCL_* settings, unsupported combinations, topology (hwloc, sysfs, the NCCL topology file),
NICs not found, CUDA / DMA-BUF / GDRCopy support, NCCL settings the plugin sets -> nccl_config;
CUDA calls that fail at run time, clean-up failures, consequences of an earlier error,
allocation of internal structures and every other internal check -> unknown; three WARN-level
notes of a set-up choice (CUDA flush enabled, mutex error checking, no AWS topology) -> benign.
Severity: critical when the code fails the operation after the WARN (returns an error, jumps to
its exit, throws, aborts), warning when it goes on, info for INFO/TRACE lines.
"""


def package_name(src, rev):
    m = re.search(r"AC_INIT\(\s*\[([^\]]+)\]", common.show(src, rev, "configure.ac"))
    return m.group(1) if m else "aws-ofi-nccl"


def site_rows(sites, suffix=""):
    rows = []
    for s in sites:
        if s.level == "info" and not error_like(s.fmt):
            continue
        kind, category, severity, meaning = classify(s)
        common.check_class(kind, category, severity, KINDS)
        rows.append((s.path + suffix, s.line, s.fmt, kind, category, severity, meaning))
    return rows


def build(src, rev, older=None):
    """(rows, notes) of the pin ``rev`` and, for the releases ``older``, their WARN formats the pin
    words otherwise (file "path@tag")."""
    sites, unread = read_sites(src, rev)
    if unread:
        raise SystemExit("WARN formats not read:\n  " + "\n  ".join(unread))
    rows = site_rows(sites)
    known = set(r[2] for r in rows)
    notes = []
    for tag in (OLDER if older is None else older):
        try:
            trev = common.resolve(src, tag)
        except Exception:  # noqa: BLE001 - an older tag is optional
            notes.append("tag %s not in the source: skipped" % tag)
            continue
        tsites, tunread = read_sites(src, trev)
        if tunread:
            notes.append("%s: %d WARN formats not literals: skipped" % (tag, len(tunread)))
        for r in site_rows([s for s in tsites if s.fmt not in known], "@" + tag):
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
    ap.add_argument("--src", required=True, help="aws/aws-ofi-nccl: a bare mirror or a clone")
    ap.add_argument("--rev", default=PIN, help="tag, branch or commit (default %s)" % PIN)
    args = ap.parse_args(argv)
    commit = common.resolve(args.src, args.rev)
    tags = sorted(t for t in common.git(args.src, "tag", "--points-at", commit).split() if re.match(r"v\d", t))
    version = tags[0] if tags else args.rev
    rows, notes = build(args.src, commit)
    for note in notes:
        print("note: " + note)
    meta = {"EMITTER": "aws-ofi-nccl", "PROJECT": "aws-ofi-nccl (NCCL net plugin for libfabric / AWS EFA)",
            "VERSION": version, "COMMIT": commit, "LICENCE": LICENCE, "ORIGIN": ORIGIN, "GENERATOR": GENERATOR}
    path = common.write_table("ofi", meta, MARKERS, TEMPLATES, rows, doc=DOC)
    print("%s: %d rows" % (path, len(set(rows))))


if __name__ == "__main__":
    main()
