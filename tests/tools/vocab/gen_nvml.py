#!/usr/bin/env python3
"""Generate module_utils/gpu_runbook/vocab/nvml.py: NVML's return codes (``nvmlReturn_t``) as
the programs that query GPUs print them, read from NVIDIA's Python bindings on PyPI
(``nvidia-ml-py``, its single module pynvml.py) by parsing the module's text: it is never
imported (importing it runs code that looks for libnvidia-ml).

    pip download --no-deps -d /tmp/nvmlpy nvidia-ml-py==13.615.71
    .venv/bin/python tests/tools/vocab/gen_nvml.py --src /tmp/nvmlpy [--rev 13.615.71]

``--src``: the wheel, the folder holding it, or the wheel unpacked; ``--rev``: the package
version expected (the one read from the wheel's METADATA must equal it). Then
tests/tools/vocab/write_index.py (once the table is registered in vocab/__init__.py EMITTERS).
Deterministic: the same wheel gives the same module byte for byte.

What is read from pynvml.py: every module-level ``NVML_ERROR_<NAME> = <number>`` (the codes of
nvmlReturn_t, with their line numbers); ``NVMLError._errcode_to_string``, the fallback text
pynvml prints for a code without asking the driver (only some codes have one); and the rule by
which ``_extractNVMLErrorsAsClasses`` names each code's exception class
("NVMLError_" + string.capwords(NAME, "_") without the underscores: NVML_ERROR_GPU_IS_LOST ->
NVMLError_GpuIsLost). The rule and the way ``NVMLError.__str__`` picks its text are checked
against the source: a change stops the generator until someone reads it. pynvml.py is checked
against the wheel's RECORD (an unpacked copy that was edited is refused).

Licence: BSD-3-Clause (pynvml.py's header, Copyright NVIDIA Corporation; METADATA "License:
BSD"). Only names, numbers and pynvml's fallback strings are stored, as data with their
provenance; no code is copied.
"""

import argparse
import ast
import base64
import glob
import hashlib
import os
import re
import shutil
import string
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402

sys.path.insert(0, os.path.join(common.REPO, "module_utils"))
from gpu_runbook.taxonomy import KINDS  # noqa: E402
from gpu_runbook.vocab import BENIGN, matchable  # noqa: E402

GENERATOR = "tests/tools/vocab/gen_nvml.py"
PACKAGE = "nvidia-ml-py"
DIST = "nvidia_ml_py"
PIN = "13.615.71"
MODULE = "pynvml.py"

# How an nvmlReturn_t is printed in the logs we read. CODES' ``name`` is the C enumerator
# (NVML_ERROR_GPU_IS_LOST) and ``text`` pynvml's fallback string ("" for a code without one);
# each code in each CODE_FORMATS is a row:
CODE_FORMATS = (
    # the C enum name, as nvml.h spells it: C/C++ tools and logs print it (a switch over
    # nvmlReturn_t, or a macro's #ret), and the name is what people paste into tickets
    "{name}",
)
# The other forms depend on the code (a fallback text or not; a name long enough to match), so
# they are ROWS, generated per code (file pynvml.py, the line the form is read from):
#
# - PY_TEXT: pynvml's exception as Python prints it on a traceback's last line,
#   "pynvml.NVMLError_GpuIsLost: GPU is lost". The class is made by _extractNVMLErrorsAsClasses
#   (its __module__ is "pynvml", hence the "pynvml." Python prints before it; the row leaves the
#   module out, so a vendored copy under another module name is read too). The text is
#   NVMLError.__str__: _errcode_to_string[code] when pynvml has a fallback (the row's line is the
#   dict entry's) -- only for those codes;
# - PY_CLASS: the class alone, for every code (line: the constant's): where pynvml has no fallback,
#   __str__ asks the driver (nvmlErrorString in libnvidia-ml, not in the wheel: its texts are not
#   stored), so the class is all that is known of the line; code that logs ``type(e).__name__``
#   or ``repr(e)`` prints it too;
# - GO: NVIDIA/go-nvml pkg/nvml/return.go (Return.Error -> errorStringFunc; its
#   defaultErrorStringFunc is used until libnvidia-ml is loaded, so a failed nvml.Init() prints
#   the Go constant's name): the Kubernetes device plugin and dcgm-exporter log e.g.
#   "Failed to initialize NVML: ERROR_LIBRARY_NOT_FOUND". The name without "NVML_", only where
#   it is matchable (vocab.matchable: MIN_LITERAL / MIN_FRAGMENT) and the code is no routine
#   (benign) one, line: the constant's.
PY_TEXT = "{pyclass}: {text}"
PY_CLASS = "{pyclass}"
GO = "ERROR_{NAME}"

# Every line a row above matches holds one of these: the pynvml forms hold "NVMLError", the C
# and Go names "ERROR_" ("NVML_ERROR_" holds "ERROR_", so it needs no marker of its own). Both
# are rare outside error reports (an upper-case enum name or a pynvml exception), so the table
# is tried only on such lines; the generator checks every row's format holds one.
MARKERS = ("NVMLError", "ERROR_")

# ---- classification -------------------------------------------------------------------------
# (kind, category, severity) per group; every code number must be placed in exactly one group
# (a new code in a new nvidia-ml-py stops the generator until someone decides). Kinds are the
# vocabulary's generic ones per category (taxonomy/kinds_vocab.py): the message is a program's
# report, the host's own evidence (Xid, nvidia-smi) decides the remedy.
HW = ("logged_gpu_error", "gpu_hardware", "critical")
HW_WARN = ("logged_gpu_error", "gpu_hardware", "warning")
DRIVER = ("logged_driver_error", "driver", "critical")
DRIVER_WARN = ("logged_driver_error", "driver", "warning")
UNKNOWN = ("logged_error", "unknown", "warning")
# a monitoring tool's routine failed query: the caller's own usage or a feature this GPU lacks
ROUTINE = (BENIGN, "healthy", "ok")

GROUPS = (
    # the GPU itself: lost on the bus (15), needs a reset (16), external power (8)
    (HW, (8, 15, 16)),
    # a corrupted infoROM: the GPU still runs, its stored records are not to be trusted
    (HW_WARN, (14,)),
    # NVML cannot work on this node: kernel driver not loaded, library and kernel module of
    # different versions, libnvidia-ml missing, interrupts not delivered
    (DRIVER, (9, 11, 12, 18)),
    # the driver is older than the tool (13, 25), slow (10), blocked by the OS (17), short of
    # memory (20), not ready (27), no GPU found (28), no permission (4: a container or user
    # without access to the GPU)
    (DRIVER_WARN, (4, 10, 13, 17, 20, 25, 27, 28)),
    (UNKNOWN, (999,)),
    (ROUTINE, (1, 2, 3, 5, 6, 7, 19, 21, 22, 23, 24, 26, 29, 30)),
)

# what each code means for the node (number -> one sentence); every code needs one (pynvml has
# no doc comments to fall back on)
MEANING = {
    1: "NVML was called before nvmlInit (or after nvmlShutdown): the calling program's own usage, not the node.",
    2: "The program passed NVML an invalid argument (a wrong handle or index): its own usage, not the node.",
    3: "This GPU or driver does not support the query (a feature the model lacks): monitoring tools meet it "
       "routinely.",
    4: "The caller may not use the GPU or the operation: a container or user without access to the GPU (device "
       "files, --gpus) or a call that needs root; the GPU was not checked.",
    5: "NVML was already initialised (a deprecated code: initialisations are counted now): the program's own "
       "usage.",
    6: "The object queried does not exist (a process, a MIG instance, a field): a routine empty answer.",
    7: "The buffer the program passed was too small: it asks again with a larger one.",
    8: "A GPU lacks power: its external power cable is not properly attached or the supply fails; the GPU "
       "cannot run.",
    9: "The NVIDIA kernel driver is not loaded: no GPU on this node can be used.",
    10: "An NVML call timed out: the driver or the GPU was slow to answer (busy, or starting to hang).",
    11: "The NVIDIA kernel driver saw an interrupt problem with a GPU: it cannot talk to the GPU reliably.",
    12: "libnvidia-ml.so was not found: the NVIDIA user-space driver is not installed, or not mounted into the "
        "container.",
    13: "The installed libnvidia-ml lacks the function the tool calls: the driver is older than the tool expects.",
    14: "The GPU's infoROM is corrupted: its stored settings and error records cannot be trusted.",
    15: "The GPU fell off the bus: NVML can no longer reach it (Xid 79 on the host); the node needs a reboot.",
    16: "The GPU must be reset (or the node rebooted) before it works again.",
    17: "The operating system blocked the request (a cgroup, a security policy or a locked-down container).",
    18: "libnvidia-ml and the NVIDIA kernel module are different versions (a driver upgrade without a reboot?): "
        "NVML and CUDA fail until they match.",
    19: "The operation cannot run while the GPU is in use (a reset or mode change with processes on the GPU): "
        "the caller's request, not a fault.",
    20: "NVML could not allocate memory: the host is short of memory.",
    21: "No data yet for the query (no samples or events recorded): a routine empty answer.",
    22: "ECC is not supported in this vGPU configuration: a feature the GPU lacks, not a fault.",
    23: "Not enough resources for the request (e.g. a MIG instance that does not fit): the caller's request, "
        "not a fault.",
    24: "The GPU does not support the clock frequency asked for: the caller's setting, not a fault.",
    25: "The tool passed a structure version the driver does not know: the driver is older (or newer) than the "
        "tool expects.",
    26: "The function called is deprecated: the calling program's own usage.",
    27: "The system was not ready for the request (the driver or the GPU still initialising).",
    28: "NVML found no GPU: none is visible to the driver or the container, or one went missing.",
    29: "The GPU is not in the state the request needs (a mode not enabled): the caller's request, not a fault.",
    30: "The GPU does not support the reset type asked for: a feature it lacks, not a fault.",
    999: "Unknown NVML error: not a verdict by itself; the host's Xids and nvidia-smi decide.",
}

# what pynvml must still say for the class names and texts derived here to hold (ast.unparse
# of the source; a different text stops the generator)
NAMES_FILTER = "[x for x in dir(this_module) if x.startswith('NVML_ERROR_')]"
CLASS_NAME = "'NVMLError_' + string.capwords(err_name.replace('NVML_ERROR_', ''), '_').replace('_', '')"
STR_USES = ("NVMLError._errcode_to_string[self.value] = str(nvmlErrorString(self.value))",
            "return NVMLError._errcode_to_string[self.value]")


def pyclass(name):
    """The exception class pynvml makes for NVML_ERROR_<name> (CLASS_NAME, checked against the
    source)."""
    return "NVMLError_" + string.capwords(name, "_").replace("_", "")


def classification():
    by_number = {}
    for cls, numbers in GROUPS:
        for n in numbers:
            if n in by_number:
                raise SystemExit("code %d is in two groups" % n)
            by_number[n] = cls
    for kind, category, severity in set(by_number.values()):
        if kind == BENIGN:
            if (category, severity) != ("healthy", "ok"):
                raise SystemExit("a benign group must be healthy/ok, not %s/%s" % (category, severity))
        elif kind not in KINDS or category not in KINDS[kind]["categories"]:
            raise SystemExit("undeclared kind/category %s/%s" % (kind, category))
    return by_number


def open_wheel(src):
    """-> the folder the wheel is unpacked in (a temporary one for a .whl)."""
    if os.path.isdir(src) and os.path.isfile(os.path.join(src, MODULE)):
        return src
    if os.path.isdir(src):
        wheels = sorted(glob.glob(os.path.join(src, "%s-*.whl" % DIST)))
        if not wheels:
            raise SystemExit("no %s wheel (nor an unpacked %s) in %s" % (DIST, MODULE, src))
        src = wheels[-1]
    out = tempfile.mkdtemp(prefix="gen_nvml_")
    with zipfile.ZipFile(src) as z:
        z.extractall(out)
    return out


def check_record(dist_info, data):
    """pynvml.py must be the file the wheel's RECORD lists (sha256, urlsafe base64)."""
    record = open(os.path.join(dist_info, "RECORD"), encoding="utf-8").read()
    m = re.search(r"^%s,sha256=([A-Za-z0-9_-]+),(\d+)$" % re.escape(MODULE), record, re.M)
    if not m:
        raise SystemExit("%s is not in %s/RECORD" % (MODULE, dist_info))
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    if digest != m.group(1) or len(data) != int(m.group(2)):
        raise SystemExit("%s differs from the wheel's RECORD (an edited copy?)" % MODULE)


def parse_codes(tree, text):
    """{NAME: (number, line)} of every module-level NVML_ERROR_<NAME> = <int>."""
    codes = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if isinstance(target, ast.Name) and target.id.startswith("NVML_ERROR_"):
                if not (isinstance(node.value, ast.Constant) and type(node.value.value) is int):
                    # _extractNVMLErrorsAsClasses makes a class of every NVML_ERROR_* name
                    raise SystemExit("line %d: %s is not a number: %s" % (node.lineno, target.id,
                                                                         ast.unparse(node.value)))
                name = target.id[len("NVML_ERROR_"):]
                if name in codes:
                    raise SystemExit("line %d: %s assigned twice" % (node.lineno, target.id))
                codes[name] = (node.value.value, node.lineno)
    # the same by the text: an NVML_ERROR_ constant anywhere else (indented, in a branch) would
    # be one the tree walk above missed
    by_text = {m.group(1): (int(m.group(2)), text.count("\n", 0, m.start()) + 1)
               for m in re.finditer(r"^\s*NVML_ERROR_(\w+)\s*=\s*(\d+)\s*(?:#.*)?$", text, re.M)}
    if by_text != codes:
        raise SystemExit("the NVML_ERROR_ constants differ between the module's top level and its text: %r"
                         % sorted(set(by_text.items()) ^ set(codes.items())))
    if not codes:
        raise SystemExit("no NVML_ERROR_ constants in %s" % MODULE)
    numbers = [n for n, _line in codes.values()]
    if len(set(numbers)) != len(numbers):
        raise SystemExit("two NVML_ERROR_ names share a number")
    return codes


def _function(body, name):
    for node in body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise SystemExit("%s: no function %s" % (MODULE, name))


def parse_exceptions(tree, codes):
    """{NAME: (text, line)} of NVMLError._errcode_to_string; checks NVMLError.__str__ and the
    class names of _extractNVMLErrorsAsClasses are still what this generator assumes."""
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "NVMLError"), None)
    if cls is None:
        raise SystemExit("%s: no class NVMLError" % MODULE)
    table = None
    for node in cls.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["_errcode_to_string"]:
            table = node.value
    if not isinstance(table, ast.Dict):
        raise SystemExit("%s: NVMLError._errcode_to_string is not a dict literal" % MODULE)
    texts = {}
    for key, value in zip(table.keys, table.values):
        if not (isinstance(key, ast.Name) and key.id.startswith("NVML_ERROR_")
                and key.id[len("NVML_ERROR_"):] in codes):
            raise SystemExit("line %d: _errcode_to_string key %s is no NVML_ERROR_ constant"
                             % (key.lineno, ast.unparse(key)))
        if not (isinstance(value, ast.Constant) and isinstance(value.value, str) and value.value):
            raise SystemExit("line %d: _errcode_to_string value is no string" % value.lineno)
        name = key.id[len("NVML_ERROR_"):]
        if name in texts:
            raise SystemExit("line %d: %s twice in _errcode_to_string" % (key.lineno, key.id))
        texts[name] = (value.value, key.lineno)

    str_src = ast.unparse(_function(cls.body, "__str__"))
    for use in STR_USES:
        if use not in str_src:
            raise SystemExit("NVMLError.__str__ changed (no %r): read it before trusting the fallback texts:\n%s"
                             % (use, str_src))

    extract = _function(tree.body, "_extractNVMLErrorsAsClasses")
    found = {ast.unparse(n.value) for n in ast.walk(extract) if isinstance(n, ast.Assign)}
    for expected in (NAMES_FILTER, CLASS_NAME):
        if expected not in found:
            raise SystemExit("_extractNVMLErrorsAsClasses changed (no %r): the exception class names would be "
                             "wrong; it now assigns:\n  %s" % (expected, "\n  ".join(sorted(found))))
    called = any(isinstance(n, ast.Expr) and isinstance(n.value, ast.Call)
                 and getattr(n.value.func, "id", None) == "_extractNVMLErrorsAsClasses" for n in tree.body)
    if not called:
        raise SystemExit("%s no longer calls _extractNVMLErrorsAsClasses at import" % MODULE)
    return texts


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", required=True, help="the wheel, its folder, or the wheel unpacked")
    ap.add_argument("--rev", default=PIN, help="the package version expected (default %s)" % PIN)
    args = ap.parse_args(argv)
    root = open_wheel(args.src)
    try:
        generate(args, root)
    finally:
        if root != args.src:
            shutil.rmtree(root)  # the wheel unpacked here


def generate(args, root):
    infos = glob.glob(os.path.join(root, "%s-*.dist-info" % DIST))
    if len(infos) != 1 or not os.path.isfile(os.path.join(infos[0], "METADATA")):
        raise SystemExit("no single %s dist-info with a METADATA under %s" % (DIST, root))
    meta_text = open(os.path.join(infos[0], "METADATA"), encoding="utf-8").read()
    version = re.search(r"^Version: (\S+)$", meta_text, re.M).group(1)
    if version != args.rev:
        raise SystemExit("the wheel is version %s, not %s" % (version, args.rev))
    licence = re.search(r"^License: (.+)$", meta_text, re.M)
    if not licence or licence.group(1).strip() != "BSD":
        raise SystemExit("the wheel's licence is %r, not BSD: check it before storing its strings"
                         % (licence and licence.group(1)))

    data = open(os.path.join(root, MODULE), "rb").read()
    check_record(infos[0], data)
    text = data.decode("utf-8")
    tree = ast.parse(text, MODULE)
    codes = parse_codes(tree, text)
    texts = parse_exceptions(tree, codes)
    cls = classification()

    classes = {}
    for name in codes:
        classes.setdefault(pyclass(name), []).append(name)
    twice = {c: n for c, n in classes.items() if len(n) > 1}
    if twice:
        raise SystemExit("two codes give one exception class (the later wins in pynvml): %r" % twice)
    stale = sorted(set(cls) - {number for number, _line in codes.values()})
    if stale:
        raise SystemExit("GROUPS name codes %s that %s no longer has" % (stale, MODULE))

    out_codes, rows, counts = [], [], {}
    for name, (number, line) in sorted(codes.items(), key=lambda kv: kv[1][0]):
        if number not in cls:
            raise SystemExit("NVML_ERROR_%s (%d) has no classification: add it to GROUPS" % (name, number))
        if number not in MEANING:
            raise SystemExit("NVML_ERROR_%s (%d) has no meaning: add it to MEANING" % (name, number))
        kind, category, severity = cls[number]
        meaning = MEANING[number]
        fallback, text_line = texts.get(name, ("", None))
        out_codes.append((number, "NVML_ERROR_" + name, fallback, kind, category, severity, meaning, MODULE, line))
        forms = []
        if fallback:
            forms.append((text_line, PY_TEXT.replace("{pyclass}", pyclass(name)).replace("{text}", fallback)))
        forms.append((line, PY_CLASS.replace("{pyclass}", pyclass(name))))
        go = GO.replace("{NAME}", name)
        # the bare Go name only for a code that is a fault: another library's ERROR_TIMEOUT or
        # ERROR_NOT_FOUND read as a benign NVML row would be explained away, never quoted
        if matchable(go) and kind != BENIGN:
            forms.append((line, go))
        for form_line, fmt in forms:
            if "%" in fmt:
                raise SystemExit("a row's text holds a %% (it would read as a conversion): %r" % fmt)
            rows.append((MODULE, form_line, fmt, kind, category, severity, meaning))
        group = (kind, category, severity)
        counts[group] = (counts.get(group, (0, 0))[0] + 1, counts.get(group, (0, 0))[1] + len(forms))
    for fmt in [r[2] for r in rows] + [f.replace("{name}", c[1]) for c in out_codes for f in CODE_FORMATS]:
        if not any(m in fmt for m in MARKERS):
            raise SystemExit("no marker in %r: add one to MARKERS" % fmt)
    no_text = [c[1] for c in out_codes if not c[2]]
    no_go = [c[1] for c in out_codes if not matchable(GO.replace("{NAME}", c[1][len("NVML_ERROR_"):]))]

    doc = """\
Read (parsing pynvml.py's text, never importing it): every module-level NVML_ERROR_<NAME> =
<number> (nvmlReturn_t, with its line); NVMLError._errcode_to_string, pynvml's fallback texts;
the exception class _extractNVMLErrorsAsClasses makes of each (checked against the source).
CODES: every code but NVML_SUCCESS, name the C enumerator, text pynvml's fallback ("" for the
%d codes without one: their text is the driver's nvmlErrorString, not in the wheel), printed as
CODE_FORMATS lists (the C name, as C/C++ tools print it). ROWS, per code: pynvml's exception as
a traceback's last line shows it, "NVMLError_GpuIsLost: GPU is lost" (Python writes "pynvml."
before it), for the codes with a fallback text; the class alone for every code; Go's name
(NVIDIA/go-nvml, "Failed to initialize NVML: ERROR_LIBRARY_NOT_FOUND") for the codes that are
faults, where it is matchable (%s): a bare upper-case name is too common elsewhere to be
explained away as a routine NVML answer.
Left out: NVML_SUCCESS; the driver's texts for the codes without a fallback; "NVML Error with
code %%d" (pynvml's text when nvmlErrorString itself fails: the number alone, no class).
Classification (explicit groups by number in the generator; a new code stops it): 15 GPU is
lost, 16 reset required, 8 insufficient external power -> gpu_hardware critical; 14 corrupted
infoROM -> gpu_hardware warning; 9 driver not loaded, 18 library/kernel module version
mismatch, 12 libnvidia-ml not found, 11 IRQ issue -> driver critical; 13, 25 (driver older
than the tool), 10 timeout, 17 blocked by the OS, 20 host memory, 27 not ready, 28 no GPU
found, 4 no permission (a container or user without access to the GPU) -> driver warning; 999
-> unknown warning; the caller's own usage or a feature the GPU lacks (1, 2, 3, 5, 6, 7, 19,
21, 22, 23, 24, 26, 29, 30) -> benign: a monitoring tool's routine failed query.
""" % (len(no_text), "every code" if not no_go else "not: " + ", ".join(no_go))
    meta = {"EMITTER": "NVML", "PROJECT": "NVIDIA Management Library Python bindings (%s: pynvml)" % PACKAGE,
            "VERSION": version, "COMMIT": version,
            "LICENCE": "BSD-3-Clause (pynvml.py header, Copyright NVIDIA Corporation; METADATA License: BSD)",
            "ORIGIN": "https://pypi.org/project/%s/%s/ (wheel: %s, sha256 %s); Go's names after "
                      "https://github.com/NVIDIA/go-nvml pkg/nvml/return.go" % (
                          PACKAGE, version, MODULE, hashlib.sha256(data).hexdigest()),
            "GENERATOR": GENERATOR}
    path = common.write_table("nvml", meta, MARKERS, (("", "{message}"),), rows, codes=out_codes,
                              code_formats=CODE_FORMATS, doc=doc)
    print("%s: %d codes x %d formats, %d rows" % (path, len(out_codes), len(CODE_FORMATS), len(rows)))
    for (kind, category, severity), (n_codes, n_rows) in sorted(counts.items()):
        print("  %s/%s/%s: %d codes, %d rows" % (kind, category, severity, n_codes, n_rows))


if __name__ == "__main__":
    main()
