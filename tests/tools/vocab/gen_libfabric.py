#!/usr/bin/env python3
"""Generate module_utils/gpu_runbook/vocab/libfabric.py: the error codes and abort message of
libfabric's EFA provider (AWS's Elastic Fabric Adapter, the fabric NCCL reaches through
aws-ofi-nccl), read from ofiwg/libfabric's own source at a pinned tag.

Usage (from the repository root)::

    # any clone of https://github.com/ofiwg/libfabric
    git clone --bare https://github.com/ofiwg/libfabric.git /tmp/libfabric.git
    .venv/bin/python tests/tools/vocab/gen_libfabric.py --src /tmp/libfabric.git [--rev v2.6.0]
    .venv/bin/python tests/tools/vocab/write_index.py

What is read:

- the EFA provider's error codes (prov/efa/src/efa_errno.h): the completion statuses of the EFA
  device (EFA_IO_COMP_STATUSES, 0..4095, rdma-core's) and the provider's own (EFA_PROV_ERRNOS,
  4096..), each ``_(code, SUFFIX, message)``; releases before the X macros (OLDER) give their
  numbers in the enum and their words in efa_strerror.c's tables (``[FI_EFA_X] = "text"``);
- the words they are printed in: the abort a job prints when the provider cannot report an error
  (efa_base_ep.c ``efa_base_ep_write_eq_error``: "Libfabric EFA provider has encountered an internal
  error:" / "Libfabric error: (%zd) %s" / "EFA internal error: (%zd) %s" / "Your application will
  now abort()."), and its EFA_WARN line "Writing error to EQ: err: %s (%zd) prov_errno: %s (%zd)";
- ``efa_show_help``'s explanation of a code (efa_strerror.c), logged at INFO under it.

Classification (CODE_RULES, by the code's suffix, with the reason; the provider's help text is
where one exists): a peer the device cannot reach or that stopped answering, a connection reset,
a queue pair that no longer exists -> unknown (a peer process that died, the peer's hardware, or
the security group: the peer's own log says which; never the node that logged it); memory the
provider could not get for its buffers -> nccl_config (the job's locked-memory limit: EFA needs
``ulimit -l unlimited``); pools of entries exhausted -> nccl_config, warning (their sizes are
FI_EFA_* settings); packet types or features a peer does not know -> nccl_config (peers on
different libfabric versions, or FI_EFA_USE_ZCPY_RX on one side); Success -> benign; flushed at
teardown -> info; every other local or internal error -> unknown. The abort's lines are unknown,
critical: the code on its line says why.
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

GENERATOR = "tests/tools/vocab/gen_libfabric.py"
PIN = "v2.6.0"
OLDER = ("v2.0.0", "v1.22.0", "v1.18.0", "v1.16.0")  # wordings of releases in the field (AWS EFA installers)
ORIGIN = "https://github.com/ofiwg/libfabric"
LICENCE = "BSD-2-Clause or GPL-2.0 (COPYING)"
ERRNO = "prov/efa/src/efa_errno.h"
STRERROR = "prov/efa/src/efa_strerror.c"
ABORT = "prov/efa/src/efa_base_ep.c"

# the code's words as the provider prints them
CODE_FORMATS = ("EFA internal error: ({number}) {text}", "prov_errno: {text} ({number})")
MARKERS = ("Libfabric EFA provider", "EFA internal error", "Libfabric error: (", "prov_errno: ",
           "Your application will now abort()", "This error is detected")
TEMPLATES = (("prov/efa/", "libfabric:4242:1733561200::efa:cq:efa_cq_poll():105<warn> {message}"),
             ("", "{message}"))

PEER = ("unknown", "critical", "logged_error",
        "A peer the EFA device cannot reach, that stopped answering, or whose queue pair is gone: a peer process "
        "that died, the peer's hardware, or the security group (EFA needs all traffic allowed between the "
        "instances); the peer's own log says which, not this node's.")
MEMORY = ("nccl_config", "critical", "logged_nccl_config_error",
          "The EFA provider could not get memory for its buffers: the job's locked-memory limit (EFA needs "
          "`ulimit -l unlimited`; Slurm's PropagateResourceLimits) or the host's memory.")
POOL = ("nccl_config", "warning", "logged_nccl_config_error",
        "The EFA provider ran out of its send or receive entries: their sizes are FI_EFA_* settings (FI_EFA_TX_SIZE, "
        "FI_EFA_RX_SIZE).")
VERSIONS = ("nccl_config", "critical", "logged_nccl_config_error",
            "A peer sent a packet type or asked for a feature this side does not know: the peers run different "
            "libfabric versions, or one enables zero-copy receive (FI_EFA_USE_ZCPY_RX) and the other not.")
INTERNAL = ("unknown", "critical", "logged_error",
            "An error inside the EFA provider or device (a queue pair, a key, an address handle, a length): "
            "it names no cause outside libfabric.")
CODE_RULES = (
    (r"^OK$", ("healthy", "ok", vocab.BENIGN, "A completion that succeeded.")),
    (r"^FLUSHED$", ("unknown", "info", "logged_error",
                    "Work flushed while a queue pair was destroyed: a consequence of a teardown or an earlier error.")),
    (r"UNREACH_REMOTE|UNRESP_REMOTE|RECV_UNRESP|PEER_HANDSHAKE|REMOTE_ERROR_ABORT|BAD_DEST_QPN|UNKNOWN_PEER|"
     r"REMOTE_ERROR_RNR|REMOTE_ERROR_BAD_STATUS", PEER),
    (r"^(?:ERR_)?OOM$|INTERNAL_RX_BUF_POST", MEMORY),
    (r"POOL_EXHAUSTED", POOL),
    (r"PKT_TYPE|FEATURE_MISMATCH", VERSIONS),
    (r".", INTERNAL),
)
ABORT_ROW = ("unknown", "critical", "logged_error",
             "The EFA provider met an error it could not report to the application and aborted the process: the "
             "EFA code on its next lines says which.")

_XMACRO = re.compile(r"_\(\s*(\d+)\s*,\s*([A-Z0-9_]+)\s*,\s*(.*?)\)\s*\\?\s*$", re.M)
_ENUM = re.compile(r"\b(FI_EFA_[A-Z0-9_]+)\s*=\s*(\d+)")
_TABLE = re.compile(r"\[\s*(FI_EFA_[A-Z0-9_]+)(?:\s*-\s*FI_EFA_ERRNO_OFFSET)?\s*\]\s*=\s*((?:\"(?:[^\"\\]|\\.)*\"\s*)+)")
_STR = re.compile(r'"((?:[^"\\]|\\.)*)"')
_HELP_CASE = re.compile(r"case\s+([A-Z0-9_]+):\s*help\s*=\s*((?:\"(?:[^\"\\]|\\.)*\"\s*)+);")


def _classify(suffix):
    for rx, cls in CODE_RULES:
        if re.search(rx, suffix):
            return cls
    raise AssertionError(suffix)


def _codes_xmacro(text):
    """[(number, SUFFIX, text)] of efa_errno.h's X macros (its message is the stringized rest)."""
    return [(int(n), s, re.sub(r"\s+", " ", msg).strip()) for n, s, msg in _XMACRO.findall(text)]


def _codes_tables(errno_h, strerror_c):
    """[(number, SUFFIX, text)] of a release before the X macros: the enum's numbers, the tables' words."""
    numbers = dict(_ENUM.findall(common.blank_comments(errno_h)))
    out = []
    for name, lits in _TABLE.findall(strerror_c):
        if name in numbers:
            text = "".join(common.c_unescape(s) for s in _STR.findall(lits))
            out.append((int(numbers[name]), re.sub(r"^FI_EFA_(?:ERR_)?", "", name), text))
    return out


def _lines_of(src, rev, path, needle):
    text = common.show(src, rev, path)
    return text, [common.line_of(text, m.start()) for m in re.finditer(re.escape(needle), text)]


def build(src, commit, older):
    codes, rows, seen_text = [], [], set()
    for rev in (commit,) + tuple(older):
        at = "" if rev == commit else "@" + rev
        errno_h = common.show(src, rev, ERRNO)
        found = _codes_xmacro(errno_h)
        if not found:
            found = _codes_tables(errno_h, common.show(src, rev, STRERROR))
        for number, suffix, text in found:
            if (number, text) in seen_text:
                continue
            seen_text.add((number, text))
            category, severity, kind, meaning = _classify(suffix)
            common.check_class(kind, category, severity, KINDS)
            line = common.line_of(errno_h, errno_h.find(suffix)) if suffix in errno_h else 0
            codes.append((number, "FI_EFA_ERR_%s" % suffix if number >= 4096 else "EFA_IO_COMP_STATUS_%s" % suffix,
                          text, kind, category, severity, meaning, ERRNO + at, line))
        # the abort's lines and the help texts, at the pin only (the older wordings differ by a misspelling)
        if rev != commit:
            continue
        body, where = _lines_of(src, rev, ABORT, "Libfabric EFA provider has encountered an internal error")
        if not where:
            raise SystemExit("the abort message moved: %s" % ABORT)
        for fmt in ("Libfabric EFA provider has encountered an internal error:", "Libfabric error: (%zd) %s",
                    "EFA internal error: (%zd) %s", "Your application will now abort()."):
            rows.append((ABORT, where[0], fmt) + (ABORT_ROW[2], ABORT_ROW[0], ABORT_ROW[1], ABORT_ROW[3]))
        strerr = common.show(src, rev, STRERROR)
        for m in _HELP_CASE.finditer(strerr):
            suffix = re.sub(r"^(?:EFA_IO_COMP_STATUS_|FI_EFA_ERR_)", "", m.group(1))
            text = "".join(common.c_unescape(s) for s in _STR.findall(m.group(2)))
            category, severity, kind, meaning = _classify(suffix)
            rows.append((STRERROR, common.line_of(strerr, m.start()), text, kind, category,
                         severity, meaning))
    return codes, rows


DOC = __doc__.split("What is read:", 1)[1].split("Usage", 1)[0]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", required=True, help="ofiwg/libfabric: a bare mirror or a clone")
    ap.add_argument("--rev", default=PIN, help="tag, branch or commit (default %s)" % PIN)
    args = ap.parse_args(argv)
    commit = common.resolve(args.src, args.rev)
    codes, rows = build(args.src, commit, OLDER)
    meta = {"EMITTER": "libfabric EFA", "PROJECT": "libfabric (ofiwg/libfabric), its EFA provider",
            "VERSION": args.rev, "COMMIT": commit, "LICENCE": LICENCE, "ORIGIN": ORIGIN, "GENERATOR": GENERATOR}
    doc = "What is read:" + DOC + "Older releases read: %s.\n" % ", ".join(OLDER)
    path = common.write_table("libfabric", meta, MARKERS, TEMPLATES, rows, codes=codes, code_formats=CODE_FORMATS,
                              doc=doc)
    print("%s: %d rows, %d codes" % (path, len(set(rows)), len(set(codes))))


if __name__ == "__main__":
    main()
