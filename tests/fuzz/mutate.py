"""Inputs a hostile or broken host could hand a parser, built from a hypothesis-drawn recipe
(which seed, which mutations, a random seed for the details) so that thousands are cheap to
make and every failure replays from its recipe. Bytes are decoded as the engine decodes a
file (textio.decode: BOM / UTF-16 sniffing, bad bytes -> U+FFFD)."""

import codecs
import random

from hypothesis import strategies as st

from gpu_runbook.textio import decode

from .corpus import seeds

# words that switch a parser into another state; dropped at random places
KEYWORDS = (
    "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.",
    "NVRM: Xid (PCI:", "<gpu id=", "<gpu id=\"00000000:3B:00.0\">", "</gpu>", "<nvidia_smi_log>",
    "<?xml version=\"1.0\" ?>", "<!DOCTYPE nvidia_smi_log SYSTEM \"x.dtd\">", "<!DOCTYPE[", "<![CDATA[",
    "State:", "Physical state:", "Rate:", "CA 'mlx5_0'", "Port 1:", "hca_id:\tmlx5_0", "port:\t1",
    "# Port counters: Lid 1 port 1", "SymbolErrorCounter:.......", "/ports/1/state: 4: ACTIVE",
    "[rank", "[rank3]:", "[default0]:[rank12]:", "0: ", "NCCL WARN", "NCCL INFO", "ProcessGroupNCCL",
    "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE",
    "DataLoader worker (pid(", "RuntimeError: CUDA error: an illegal memory access",
    "Traceback (most recent call last):", "ibv_poll_cq", "status=12", "GPU 00000000:3B:00.0",
    "==============NVSMI LOG==============", "Attached GPUs                             : 8",
    "| NVIDIA-SMI 550.54.15", "|   0  NVIDIA H100 80GB HBM3", "+-----------------------------------------+",
    "Remapped Rows", "Pending                           : Yes", "Volatile", "ERR!", "[N/A]",
    "JobId=", "NodeName=gpu-r3-n01", "NodeList=gpu[01-99999999]", "State=DOWN*+DRAIN", "Reason=",
    "StdErr=/dev/kmsg", "|", ",", "=", ":", "[", "]", "(", ")", "<", ">", "\"", "'", "\\", "\t", " " * 200,
    "# >>> gpu-runbook nccl_env:", "# <<< gpu-runbook nccl_env", "export NCCL_IB_HCA=^=mlx5_1",
    "____________________________________________", "*** /var/log/kern.log", "uname -a",
    "Dec  3 13:59:04 gpu-r3-n01 kernel: ", "[ 1234.567890] ", "2026-12-03T13:59:04.123456+09:00 ",
    "\x1b]8;;http://x\x07", "\x1bP", "\x1bc", "\x0e", "\x85", "\u2028", "\ufeff", "\x00",
    "\U0001f600", "\u0661\u0662", "\u00b2", "9" * 400, "-1", "1e309", "nan",
)

# the engine's line caps: a kernel log line is cut at 64 KiB, a job log line at 1 MiB
HUGE_LINE = (64 * 1024, 1 << 20)
MAX_GROWTH = 4 << 20  # bytes one duplication may add: a huge line copied 20 times made 19 MB inputs
FAMILIES = tuple(sorted(seeds()))
OPS = ("flip", "truncate", "dup_lines", "del_lines", "crlf", "cr", "nul", "keyword", "splice",
       "huge_line", "utf16", "latin1", "bom", "random_bytes")


def _lines(data):
    return data.splitlines(True) or [b""]


def mutate(rng, data, op):
    """One mutation of ``data`` (bytes) -> bytes."""
    n = len(data)
    if op == "flip" and n:
        buf = bytearray(data)
        for _ in range(rng.randint(1, 16)):
            buf[rng.randrange(n)] = rng.randrange(256)
        return bytes(buf)
    if op == "truncate":
        return data[:rng.randint(0, n)]
    if op in ("dup_lines", "del_lines"):
        lines = _lines(data)
        i = rng.randrange(len(lines))
        j = min(len(lines), i + rng.randint(1, 50))
        if op == "del_lines":
            return b"".join(lines[:i] + lines[j:])
        block = lines[i:j]
        copies = min(rng.randint(1, 20), max(1, MAX_GROWTH // max(1, sum(map(len, block)))))
        return b"".join(lines[:j] + block * copies + lines[j:])
    if op == "crlf":
        return data.replace(b"\n", b"\r\n")
    if op == "cr":
        return data.replace(b"\n", b"\r")
    if op == "nul":
        buf = bytearray(data)
        for _ in range(rng.randint(1, 64)):
            pos = rng.randint(0, len(buf))
            buf[pos:pos] = b"\0" * rng.choice((1, 2, 7, 4096))
        return bytes(buf)
    if op == "keyword":
        buf = bytearray(data)
        for _ in range(rng.randint(1, 20)):
            word = rng.choice(KEYWORDS).encode("utf-8", "surrogatepass")
            pos = rng.randint(0, len(buf))
            sep = rng.choice((b"", b"\n", b" "))
            buf[pos:pos] = sep + word * rng.choice((1, 1, 2, 50)) + sep
        return bytes(buf)
    if op == "splice":
        other = rng.choice(seeds()[rng.choice(FAMILIES)])
        a, b = rng.randint(0, n), rng.randint(0, len(other))
        return data[:a] + other[b:b + rng.randint(0, 20000)] + data[a:]
    if op == "huge_line":
        # up to just over the cap: a repeated keyword (pattern-heavy) or one byte value
        size = rng.choice(HUGE_LINE) + rng.choice((-1, 0, 1, 4096))
        unit = rng.choice(KEYWORDS).encode("utf-8") if rng.random() < 0.7 else bytes([rng.randrange(256)])
        line = (unit * (size // max(1, len(unit)) + 1))[:size]
        pos = rng.choice((0, n, rng.randint(0, n)))
        return data[:pos] + b"\n" + line + b"\n" + data[pos:]
    if op == "utf16":
        text = data.decode("utf-8", "replace")
        enc = rng.choice(("utf-16", "utf-16-le", "utf-16-be"))
        return text.encode(enc, "surrogatepass")
    if op == "latin1":
        return data.decode("utf-8", "replace").encode("latin-1", "replace")
    if op == "bom":
        return rng.choice((codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) + data
    if op == "random_bytes":
        return rng.randbytes(rng.choice((0, 1, 7, 64, 512, 4096, 65536)))
    return data


@st.composite
def texts(draw, family):
    """A text for a parser of ``family``: a seed of that family (or, rarely, another's) with
    0-4 mutations, decoded as the engine decodes a file."""
    pool = seeds()[family] if draw(st.integers(0, 9)) else seeds()[draw(st.sampled_from(FAMILIES))]
    data = pool[draw(st.integers(0, len(pool) - 1))]
    ops = draw(st.lists(st.sampled_from(OPS), max_size=4))
    rng = random.Random(draw(st.integers(0, 2 ** 32 - 1)))
    for op in ops:
        # a huge line is costly: one in ten of its draws keeps it, so most inputs stay small
        if op == "huge_line" and rng.random() > 0.1:
            continue
        data = mutate(rng, data, op)
    return decode(data)
