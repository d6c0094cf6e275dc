#!/usr/bin/env python3
"""Generate module_utils/gpu_runbook/vocab/cuda.py: the CUDA runtime's and driver's error codes
(``cudaError`` of driver_types.h, ``CUresult`` of cuda.h), read from NVIDIA's PyPI wheel
``nvidia-cuda-runtime-cu12``, with the text the runtime prints for each (``cudaGetErrorString``
/ ``cudaGetErrorName``, called with ctypes from the wheel's libcudart.so.12: no GPU or driver
is needed).

    pip download --no-deps -d /tmp/cuda nvidia-cuda-runtime-cu12==12.9.79
    .venv/bin/python tests/tools/vocab/gen_cuda.py --src /tmp/cuda [--rev 12.9.79]

``--src``: the wheel, the folder holding it, or the wheel unpacked; ``--rev``: the package
version expected (the one read from the wheel's METADATA must equal it). x86_64 Linux only
(the wheel's library is loaded into this process).

Licence: NVIDIA proprietary EULA. Only names, numbers, the runtime's strings and the first
sentence of a code's doc comment are stored, as data with their provenance; no header or
library is copied into the repository.
"""

import argparse
import ctypes
import glob
import os
import re
import shutil
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402

sys.path.insert(0, os.path.join(common.REPO, "module_utils"))
from gpu_runbook.taxonomy import KINDS  # noqa: E402

GENERATOR = "tests/tools/vocab/gen_cuda.py"
PACKAGE = "nvidia-cuda-runtime-cu12"
PIN = "12.9.79"
INC = "nvidia/cuda_runtime/include/"
RT_HEADER = INC + "driver_types.h"
DRV_HEADER = INC + "cuda.h"
LIB = "nvidia/cuda_runtime/lib/libcudart.so.12"

# How a cudaError is printed in the logs we read (each code in each is a row):
CODE_FORMATS = (
    # PyTorch c10/cuda/CUDAException.cpp c10_cuda_check_implementation: "CUDA error: " + cudaGetErrorString
    "CUDA error: {text}",
    # CuPy cupy_backends/cuda/api/runtime.pyx CUDARuntimeError: '%s: %s' % (cudaGetErrorName, cudaGetErrorString)
    "{name}: {text}",
    # NVIDIA/cuda-samples Common/helper_cuda.h check(): "CUDA error at %s:%d code=%d(%s) \"%s\"" (name)
    "code={number}({name})",
    # NVIDIA/nccl src/include/checks.h CUDACHECK: WARN("Cuda failure '%s'", cudaGetErrorString(err))
    "Cuda failure '{text}'",
    # NVIDIA/nccl-tests src/common.h CUDACHECK: "%s: Test CUDA failure %s:%d '%s'" (cudaGetErrorString)
    "Test CUDA failure %s:%d '{text}'",
)
MARKERS = ("CUDA", "cudaError", "Cuda failure")

# ---- classification -------------------------------------------------------------------------
# (kind, category, severity) per group; every code number must be placed in exactly one group
# (a new code in a new CUDA release stops the generator until someone decides).
APP = ("logged_application_error", "application", "warning")
APP_INFO = ("logged_application_error", "application", "info")
APP_CRIT = ("logged_application_error", "application", "critical")
KERNEL = ("cuda_error", "application", "critical")
OOM = ("cuda_oom", "application", "critical")
HW = ("cuda_hardware_error", "gpu_hardware", "critical")
DRIVER = ("logged_driver_error", "driver", "critical")
DRIVER_WARN = ("logged_driver_error", "driver", "warning")
TOO_OLD = ("cuda_driver_too_old", "driver", "critical")
MISMATCH = ("driver_version_mismatch", "driver", "critical")
FABRIC = ("fabric_not_ready", "driver", "critical")
CONFIG = ("logged_nccl_config_error", "nccl_config", "critical")
CONFIG_WARN = ("logged_nccl_config_error", "nccl_config", "warning")
UNKNOWN = ("logged_error", "unknown", "warning")
UNKNOWN_CRIT = ("logged_error", "unknown", "critical")
CUDA_UNKNOWN = ("cuda_unknown_error", "unknown", "warning")

GROUPS = (
    # API misuse the program reports (invalid arguments, handles, symbols, capture rules ...):
    # the job's code or the library it calls; it may recover, so a warning
    (APP, (1, 9, 12, 13, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 31, 32, 37, 43, 44, 45, 49, 52,
           65, 66, 67, 68, 69, 98, 200, 201, 205, 206, 207, 208, 210, 211, 212, 213, 215, 216, 218, 219, 224,
           225, 300, 301, 302, 303, 400, 401, 402, 500, 600, 703, 705, 708, 711, 713, 720, 801, 811, 812, 900, 901,
           902, 903, 904, 905, 906, 907, 908, 910, 912, 913, 914, 915)),
    # profiler state and "already enabled / registered": programs check for these and go on
    (APP_INFO, (5, 6, 7, 8, 202, 704, 712)),
    # the build has no code for this GPU's architecture: the job's software, not the node
    (APP_CRIT, (209,)),
    # a fault inside a kernel (sticky: the context is lost): the job's code as a rule. 719/53
    # 'unspecified launch failure' too: NVIDIA's doc names invalid pointers and out-of-bounds
    # shared memory as its common causes; the job-log reader decides 'GPU fault' only after a
    # long healthy run (cuda_launch_failure), which a single line cannot tell
    (KERNEL, (53, 700, 701, 710, 714, 715, 716, 717, 718, 719, 721)),
    (OOM, (2,)),
    # uncorrectable ECC / NVLink error: the hardware says so
    (HW, (214, 220)),
    # CUDA could not start on this node: driver not loaded/usable, stub libcuda, no GPU visible
    # to the driver, licence, integrity checks, startup, JIT compiler library missing, MPS daemon,
    # confidential-computing key rotation
    (DRIVER, (3, 34, 100, 102, 103, 127, 221, 805, 806, 807, 916)),
    (DRIVER_WARN, (808, 809)),
    (TOO_OLD, (35, 36, 222, 804)),
    (MISMATCH, (803,)),
    # cudaErrorSystemNotReady: on NVSwitch systems, Fabric Manager not running / fabric not trained
    (FABRIC, (802,)),
    # invalid device ordinal: more ranks per node than visible GPUs (CUDA_VISIBLE_DEVICES, --gpus)
    (CONFIG, (101,)),
    # CUDA_DISABLE_PTX_JIT set in the job's environment
    (CONFIG_WARN, (223,)),
    # consequences or causes the message does not establish
    (UNKNOWN, (4, 217, 304, 709, 800, 909, 911)),
    (UNKNOWN_CRIT, (46, 226, 702, 810)),
    (CUDA_UNKNOWN, (999,)),
)

# a sentence where NVIDIA's doc comment does not say what an SRE needs (number -> meaning)
MEANING = {
    2: "A CUDA allocation failed: the GPU is out of memory (the batch, a leak, or another process on the GPU).",
    3: "CUDA could not initialise: the driver is not loaded or unusable on this node (or CUDA was used in a "
       "forked child process).",
    46: "The GPU is busy or unavailable: another process holds it in exclusive-process mode (a stray process of "
        "an earlier job?) or it is in a bad state; look at nvidia-smi.",
    53: "Unspecified launch failure (deprecated code): a kernel faulted.",
    100: "The driver sees no GPU, or CUDA_VISIBLE_DEVICES hides them all (a container without --gpus?).",
    101: "The device index is not among the visible GPUs: more ranks per node than GPUs "
         "(CUDA_VISIBLE_DEVICES, --gpus, nproc_per_node) or a GPU is missing.",
    209: "The program was not built for this GPU's architecture (wrong build of PyTorch/CUDA libraries).",
    214: "An uncorrectable ECC error: the GPU's memory returned bad data; drain the GPU and reset it.",
    220: "An uncorrectable NVLink error was detected while the kernel ran.",
    222: "The PTX was built by a newer toolkit than the driver supports: the driver is too old.",
    226: "The GPU contained an error: an invalid peer access over NVLink, or a hardware error (Xid 94/95 on the "
         "host tells which).",
    700: "A kernel read or wrote an invalid address: usually the job's code (Xid 13/31 on the host); the CUDA "
         "context is lost.",
    702: "A kernel ran past the watchdog time limit (a GPU with a display) or hung, and was killed.",
    710: "A device-side assert in the job's code (often an index out of range); the CUDA context is lost.",
    719: "A kernel faulted (usually an invalid pointer or out-of-bounds access); after a long healthy run, with "
         "Xid 79/48/94/95 on the host, a GPU fault.",
    802: "CUDA is not ready on this node: on NVSwitch systems Fabric Manager is not running or the NVLink fabric "
         "is not trained.",
    803: "The display driver and the CUDA driver are different versions (a driver upgrade without a reboot?).",
    804: "CUDA forward compatibility is not supported on this GPU: the driver is too old for the job's CUDA.",
    999: "Unknown CUDA error: not a hardware verdict by itself; the host's Xids decide.",
}

_SENTENCE_END = re.compile(r"(?<=[a-z0-9\)])\.\s+(?=[A-Z])")


def first_sentence(doc):
    doc = doc.replace("\\deprecated", "").replace("::", "").strip()
    doc = re.sub(r"\s+", " ", doc)
    s = _SENTENCE_END.split(doc, 1)[0].strip()
    return s if s.endswith(".") else s + "."


def parse_enum(text, start_re, path):
    """[(number, name, doc, line)] of one C enum with a /** doc */ comment before each entry."""
    lines = text.split("\n")
    start = next(i for i, ln in enumerate(lines) if re.search(start_re, ln))
    out, doc, in_doc = [], [], False
    for j in range(start + 1, len(lines)):
        s = lines[j].strip()
        if s.startswith("}"):
            break
        if s.startswith("/**"):
            in_doc, doc, s = True, [], s[3:]
        if in_doc:
            end = "*/" in s
            s = s.replace("*/", "").lstrip("*").strip()
            if s:
                doc.append(s)
            in_doc = not end
            continue
        m = re.match(r"([A-Za-z_]\w*)\s*=\s*(\d+)\s*,?", s)
        if m:
            out.append((int(m.group(2)), m.group(1), " ".join(doc), j + 1))
            doc = []
    if not out:
        raise SystemExit("no enum entries in %s" % path)
    return out


def classification():
    by_number = {}
    for cls, numbers in GROUPS:
        for n in numbers:
            if n in by_number:
                raise SystemExit("code %d is in two groups" % n)
            by_number[n] = cls
    for kind, category, severity in set(by_number.values()):
        if kind not in KINDS or category not in KINDS[kind]["categories"]:
            raise SystemExit("undeclared kind/category %s/%s" % (kind, category))
    return by_number


def open_wheel(src):
    """-> the folder the wheel is unpacked in (a temporary one for a .whl)."""
    if os.path.isdir(src) and os.path.isdir(os.path.join(src, "nvidia")):
        return src
    if os.path.isdir(src):
        wheels = sorted(glob.glob(os.path.join(src, "nvidia_cuda_runtime_cu12-*.whl")))
        if not wheels:
            raise SystemExit("no nvidia_cuda_runtime_cu12 wheel in %s" % src)
        src = wheels[-1]
    out = tempfile.mkdtemp(prefix="gen_cuda_")
    with zipfile.ZipFile(src) as z:
        z.extractall(out)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", required=True, help="the wheel, its folder, or the wheel unpacked")
    ap.add_argument("--rev", default=PIN, help="the package version expected (default %s)" % PIN)
    args = ap.parse_args(argv)
    root = open_wheel(args.src)
    meta = glob.glob(os.path.join(root, "nvidia_cuda_runtime_cu12-*.dist-info", "METADATA"))
    if not meta:
        raise SystemExit("no dist-info METADATA under %s" % root)
    version = re.search(r"^Version: (\S+)$", open(meta[0], encoding="utf-8").read(), re.M).group(1)
    if version != args.rev:
        raise SystemExit("the wheel is version %s, not %s" % (version, args.rev))

    rt = parse_enum(open(os.path.join(root, RT_HEADER), encoding="utf-8").read(),
                    r"^enum __device_builtin__ cudaError\b", RT_HEADER)
    drv = parse_enum(open(os.path.join(root, DRV_HEADER), encoding="utf-8").read(),
                     r"^typedef enum cudaError_enum\b", DRV_HEADER)
    lib = ctypes.CDLL(os.path.join(root, LIB))
    lib.cudaGetErrorName.restype = ctypes.c_char_p
    lib.cudaGetErrorString.restype = ctypes.c_char_p
    lib.cudaGetErrorName.argtypes = lib.cudaGetErrorString.argtypes = (ctypes.c_int,)
    cls = classification()

    codes, rows = [], []
    for number, name, doc, line in rt:
        if number == 0:
            continue  # cudaSuccess
        printed_name = lib.cudaGetErrorName(number).decode()
        if printed_name != name:
            raise SystemExit("libcudart names %d %s, the header %s" % (number, printed_name, name))
        text = lib.cudaGetErrorString(number).decode()
        if number not in cls:
            raise SystemExit("cudaError %d (%s) has no classification: add it to GROUPS" % (number, name))
        kind, category, severity = cls[number]
        codes.append((number, name, text, kind, category, severity, MEANING.get(number) or first_sentence(doc),
                      RT_HEADER, line))
    for number, name, doc, line in drv:
        if number == 0:
            continue  # CUDA_SUCCESS
        if number not in cls:
            raise SystemExit("CUresult %d (%s) has no classification: add it to GROUPS" % (number, name))
        kind, category, severity = cls[number]
        # the driver's strings (cuGetErrorString) need libcuda, which the wheel does not ship:
        # the row is the name as programs print it ('CUDA_ERROR_ILLEGAL_ADDRESS')
        rows.append((DRV_HEADER, line, name, kind, category, severity, MEANING.get(number) or first_sentence(doc)))

    doc = """\
Read: driver_types.h `enum cudaError` (number, name, doc comment) and cuda.h `CUresult`
(number, name, doc comment) from the wheel; the printed names and strings of every cudaError
from the wheel's libcudart.so.12 (cudaGetErrorName / cudaGetErrorString, no GPU needed).
CODES: every cudaError but cudaSuccess, in the forms CODE_FORMATS lists (PyTorch's "CUDA error:
<text>", CuPy's "<name>: <text>", cuda-samples' "code=<n>(<name>)", NCCL's CUDACHECK "Cuda
failure '<text>'"). ROWS: every CUresult but CUDA_SUCCESS as its name (cuGetErrorString needs
libcuda, not in the wheel; the driver's text is not stored). meaning: the generator's note for
the number where it has one, else the doc comment's first sentence.
Left out: cudaSuccess / CUDA_SUCCESS (no fault; "CUDA error: no error" stays unexplained).
Classification (explicit groups by number in the generator; a new code stops it): API misuse
-> application warning (profiler, 'already enabled/registered' -> info); faults inside a kernel
(700 illegal address, 710 assert, 714-718, 719/53 unspecified launch failure, 721) -> cuda_error
critical (719 is a GPU fault only after a long healthy run: the job-log reader decides that);
2 -> cuda_oom; 214 ECC, 220 NVLink uncorrectable -> cuda_hardware_error; CUDA cannot start (3
init, 34 stub, 100 no device, 102, 103, 127, 221, MPS 805-809, 916) -> driver; 35/36/222/804
-> cuda_driver_too_old; 803 -> driver_version_mismatch; 802 -> fabric_not_ready; 101 invalid
device ordinal -> nccl_config (more ranks than visible GPUs); 223 JIT disabled by the
environment -> nccl_config; 999 -> cuda_unknown_error; 46 busy/unavailable, 226 contained,
702 launch timeout, 810 and other consequences -> unknown.
"""
    meta = {"EMITTER": "CUDA", "PROJECT": "CUDA runtime and driver API (%s)" % PACKAGE, "VERSION": version,
            "COMMIT": version, "LICENCE": "LicenseRef-NVIDIA-Proprietary (NVIDIA CUDA EULA)",
            "ORIGIN": "https://pypi.org/project/%s/%s/ (wheel: %s, %s, %s)" % (PACKAGE, version, RT_HEADER,
                                                                              DRV_HEADER, LIB),
            "GENERATOR": GENERATOR}
    path = common.write_table("cuda", meta, MARKERS, (("", "{message}"),), rows, codes=codes,
                              code_formats=CODE_FORMATS, doc=doc)
    if root != args.src:
        shutil.rmtree(root)  # the wheel unpacked here
    print("%s: %d codes x %d formats, %d rows" % (path, len(codes), len(CODE_FORMATS), len(rows)))


if __name__ == "__main__":
    main()
