# SPDX-License-Identifier: Apache-2.0
"""The prefilter of the line parser: most lines of a training log (loss and iteration lines)
say nothing any handler reads. ``quiet(raw, fs, st)`` is True for a line whose full reading
(read_line, then every handler of lines.HANDLERS) would change nothing, so the parser may
skip it; it is exact, not a guess:

* no handler's gate can pass: the line holds none of NEEDLES, the literals every handler
  checks before its regexes (kept beside the handlers' own ``in`` tests; a test parses
  every fixture with and without this filter and compares);
* no launcher prefix to read other than torchrun's ``[rankN]:`` (whose rank is read here),
  no glog prefix, no start that a handler reads (``#``, ``Rank``, ``host :``, a table row);
* no training-progress line was read yet, or the line holds no loss (emitter_lines reads the
  first one: a training log with no NCCL line must still be known as one);
* the line's rank is already known, the first lines' time search is over, and the file is
  in no multi-line construct (a traceback, a Flight Recorder or RAS section, an IB error
  whose vendor code may be on the next line).

The verdict on a line's shape (its bytes with every digit written as 0: numbers do not decide
it, as every needle with a digit is matched in that form too, and a pattern with a digit in it
is matched with any digit there, ROW_SHAPE) is cached per job, so a quiet line costs one
translate and one dict lookup; scan.py judges whole blocks of lines by their shapes so."""

import re

from .emitter_lines import SUCCESS_WORDS, bare_sacct_row, emitter_markers
from ..linefamily import prompt_host
from .horovod import NEEDLES as HVD_NEEDLES
# memtrend's words: a line holding one is read while the job's first memtrend.EARLY memory figures
# are gathered (then its file's last lines give the late ones), not every line of a long run
from .memtrend import EARLY, WORDS as MEMORY_WORDS
from .launchers import MPI_TAG, HVD_TAG, PDSH, RAY, ROLE_PAIR, UPPER_RANK
from .patterns import GLOG, GLOG_OLD, SRUN_LABEL, TORCHRUN_GLOBAL, TORCHRUN_RANK, TORCHRUN_ROLE

# each handler's gates (necessary literals), case as the handler tests them
NEEDLES = (
    "NCCL", "nccl", "%|", "'epoch'", '"epoch"', " failure ",                      # nccl_line, tqdm, HF, nccl-tests
    "Process ", " (idle)", " (active",                                            # pyspy (a dump's heads)
    "Got completion ", "Got async event", "Bootstrap", "NET/", "Net :", "shared memory", "/dev/shm",  # nccl_words
    "ibv_reg", "invalid usage", "system not yet initialized", "nvls", "NVLS", "in-addr.arpa", "ismatched collective",
    "collective mismatch", "Socket creation failed",
    "Watchdog caught", "last completed", "watchdog got stuck", "Heartbeat monitor", "imed out",  # torch_lines
    "lagging", "collective #", "Timeout at collective", "Not all ranks joining", "collective_seq_id",
    "profiling_name", "state", "is_p2p", '"rank"',
    "DataLoader", "bus error encountered", "CUDA", "cuda", "GPU", "NVLink", "driver", "HW", "Assertion `",  # error_lines
    "Detected mismatch", "srun: error:", "orld", "barrier",
    "heckpoint", "socket", "C10d", "Rendezvous", "TCPStore", "key-value store", "exitcode", "SIGKILL",  # launch_lines
    "INCOMPLETE", "DEAD", "ERROR", "MISMATCH", "TIMEOUT",
    "Traceback", "GLOBAL_RANK", "[rank", "](",                                      # error_lines, read_line
    ".c:",                                                                          # ompi_lines.btl_error's head
    # emitter_lines: Slurm's words, a run's end, the words of a failure (vocab/reading.py ERROR_LIKE)
    "srun", "***", "JobID",
    "rror", "RROR", "xception", "atal", "ATAL", "ailed", "AILED", "ailure", "AILURE", "bort", "anic",
    "egmentation fault", "core dumped", "illed", "TIMEOUT",
) + HVD_NEEDLES + SUCCESS_WORDS + emitter_markers()
FOLDED = ("oom", "out of memory")  # memory_and_cuda tests these on the line in lower case

ZERO = bytes.maketrans(b"123456789", b"000000000")
_NEEDLES = tuple(n.encode().translate(ZERO) for n in NEEDLES)
_FOLDED = tuple(n.encode() for n in FOLDED)
_MEMORY = tuple(n.encode() for n in MEMORY_WORDS)
_BRACKET = tuple(rx.match for rx in (MPI_TAG, HVD_TAG, UPPER_RANK, ROLE_PAIR, TORCHRUN_GLOBAL, TORCHRUN_ROLE, GLOG,
                                     GLOG_OLD))
_GLOG_START = re.compile(r"\[?[EWIF]\d")
# BARE_ROW with any digit where it has one ('int32', 'fp8_e4m3', 'bfloat16'): a shape's verdict
# may not depend on a digit's value (its lines differ in them); what matches it is read
ROW_SHAPE = re.compile(r"^\d{1,15} +\d{1,15} +(?:float|half|double|bfloat\d\d|u?int\d{0,2}|fp\d_e\dm\d|char) +"
                       r"(?:sum|prod|max|min|avg|none|mulsum) +")
MAX_SHAPES, MAX_SHAPE_LEN = 1024, 2048  # the cache's bound: a few MB at most

# a shape's kind: LOUD (read it), else quiet with its rank from the file (PLAIN) or from its
# '[rankN]:' (RANKED), plus DIGIT when its text starts with a digit (a row, once nccl-tests' header came),
# plus LOSS when it holds a loss (loud until a training-progress line was read: emitter_lines),
# plus MEM when it holds a memory word (loud until memtrend.EARLY memory figures were read)
LOUD, PLAIN, RANKED, DIGIT, LOSS, MEM = 0, 1, 2, 4, 8, 16


def held(fs):
    """True while the file is in a multi-line construct: its next line is read whatever it is."""
    return (fs.in_tb or fs.fr_missing_ctx is not None or fs.hvd_stall is not None or fs.ras_ctx is not None
            or fs.pending_ib is not None
            or fs.sacct is not None or fs.pyspy is not None or fs.ompi_frame is not None or fs.ompi_btl is not None)


def quiet(raw, fs, st):
    """True when reading ``raw`` fully would change nothing (see the module docstring)."""
    if held(fs):
        return False
    key = raw.encode("utf-8", "surrogatepass").translate(ZERO)
    kind = st.shapes.get(key)
    if kind is None:
        kind = shape_kind(raw, key)
        if len(key) <= MAX_SHAPE_LEN and len(st.shapes) < MAX_SHAPES:
            st.shapes[key] = kind
    if kind == LOUD or (kind & DIGIT and st.nccl_tests is not None) or (kind & LOSS and not st.training_lines) or \
            (kind & MEM and st.memory_lines < EARLY):
        return False
    rank = fs.file_rank if kind & PLAIN else int(raw[5:raw.index("]")])
    if rank is not None and rank not in st.ranks_seen:
        return False  # its first line: read_line records the rank
    return True


def shape_kind(raw, key):
    """LOUD, or PLAIN or RANKED (| DIGIT) for a line, from its shape alone: ``key`` is the
    line's bytes with every digit a 0, and no test here depends on a digit's value."""
    if any(n in key for n in _NEEDLES):
        return LOUD
    low = key.lower()
    if any(n in low for n in _FOLDED):
        return LOUD
    if raw[:5].lstrip(" ")[:1] == ">":  # a Markdown quote: findings.unpaste rewrites it
        return LOUD
    if "@" in raw and prompt_host(raw):  # a shell prompt: its host (launch_lines.shell_prompt)
        return LOUD
    kind, body = PLAIN, raw
    c = raw[:1]
    if c == "[":
        m = TORCHRUN_RANK.match(raw)
        if m:
            kind, body = RANKED, raw[m.end():]
            if _GLOG_START.match(body) or GLOG_OLD.match(body):
                return LOUD  # read_line strips a glog prefix after the rank's
        elif any(match(raw) for match in _BRACKET):
            return LOUD
    elif c == "(":
        if RAY.match(raw):
            return LOUD
    elif c in (" ", "\t"):
        b = raw.lstrip(" \t")
        if b[:1].isdigit() or (b[:1] == "[" and (TORCHRUN_RANK.match(b) or any(match(b) for match in _BRACKET))) \
                or (b[:1] == "(" and RAY.match(b)):
            return LOUD  # an srun label, an indented tag (launchers.strip reads those too)
    elif c.isdigit() or c.islower():
        if SRUN_LABEL.match(raw) or PDSH.match(raw):
            return LOUD
    elif _GLOG_START.match(raw):
        return LOUD
    s = body.lstrip()
    if s[:1] == "#" or s[:4].lower() in ("rank", "host", "size"):
        return LOUD  # nccl-tests' header, torchrun's failure summary
    if b"oss" in key or b"OSS" in key:
        kind |= LOSS
    if any(n in key for n in _MEMORY):
        kind |= MEM
    if s[:1].isdigit():
        # an nccl-tests row, or sacct's -P row without its header ('77|NODE_FAIL|0:0'), which no needle gates
        return LOUD if ROW_SHAPE.match(s) or bare_sacct_row(s) else kind | DIGIT
    return kind

