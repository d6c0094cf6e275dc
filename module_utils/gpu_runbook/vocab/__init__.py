# SPDX-License-Identifier: Apache-2.0
"""The emitters' vocabularies: the messages each program we read can print, as data generated
from that program's own public source by a script in the repository
(``tests/tools/vocab/gen_<emitter>.py``), one row per message with its provenance.

A table module ``vocab/<emitter>.py`` is generated (edit its generator, never the module) and
defines:

- ``EMITTER``: the short name findings show ("NCCL", "Slurm", "mlx5_core", ...);
- ``PROJECT``, ``VERSION``, ``COMMIT`` (40 hex digits, or the package's version for a
  registry package), ``LICENCE``, ``ORIGIN`` (where the source was read: a repository URL,
  a PyPI package, NVIDIA's document) and ``GENERATOR`` (the script's path in this repository);
- ``MARKERS``: literals one of which every line this emitter prints for a row holds (in the
  row's format or in the line's fixed prefix): the reader's cheap prefilter;
- ``TEMPLATES``: ``((file prefix, line template), ...)``: how a row's message is printed as a
  whole line, the first whose prefix starts the row's ``file`` wins ("" matches every file);
  ``{message}`` is the message, ``{file}``/``{line}`` the row's; used to instantiate rows
  (tests, coverage);
- ``ROWS``: ``(file, line, format, kind, category, severity, meaning)`` per message:

  - ``format``: the message as the source writes it, adjacent literals joined, every argument
    a printf conversion (``%s``, ``%d``, ``%u``, ``%x``, ``%llu``, ``%p``, ``%f``, ...;
    a literal percent is ``%%``); sources that are not printf (fmt's ``{}``, Python
    f-strings, ``c10::str``/``<<`` streams, shell ``$VARS``) write each argument as ``%s``;
    a message printed over several lines keeps its ``\\n``;
  - ``kind``: a finding kind of the taxonomy (a dedicated one, or the generic one of its
    category: taxonomy/kinds_vocab.py BY_CATEGORY), or ``"benign"`` for a message that reports
    no fault (then ``meaning`` says why, ``category`` is "healthy" and ``severity`` "ok");
  - ``category``: one of the kind's categories; ``severity``: info, warning or critical;
  - ``meaning``: one short English sentence, "" when the format says it all;

- optionally ``CODES``: ``(number, name, text, kind, category, severity, meaning, file, line)``
  for an enumeration (CUDA's errors, ``ncclResult_t``, ``DCGM_FR_*``, the Xid catalog, ...),
  with ``CODE_FORMATS``: the messages a code is printed in, written with ``{number}``,
  ``{name}`` and ``{text}`` (e.g. ``"CUDA error: {text}"``); each code in each of them is a
  row too (the first is the one instantiated).

Matching is by literal fragments, never by a regular expression per row: a line matches a
row when the row's literal fragments occur in it in order and the text between two of them
has the shape of the conversion(s) there (digits for ``%d``, ...). Linear in the line, and
the row with the most literal characters wins. A row with too little literal text to tell
it from any other line (``"%s"``, ``"%s: %s"``) is never matched: the coverage says so.
"""

import importlib
import re

from .formats import (CUT_ENDS, CUT_VALUE, MIN_FRAGMENT, MIN_LITERAL, _CONV, _WORD, _quoted_in_error, _span,  # noqa: F401
                      _word_index, compile_format, literal_length, match_fragments, matchable, shape_regex)

# every generated table, in the order they are tried (a line is matched against the tables
# whose MARKERS it holds)
EMITTERS = ("nccl", "ofi", "torch", "gloo", "cuda", "nvrm", "xid", "linux", "slurm", "dcgm", "fabricmanager", "rdma", "ucx",
            "nhc", "nvml", "container", "deepspeed", "opensm", "ompi", "libfabric", "dcgmlog", "ray",
            "k8sdp", "megatron", "pmix")
ROW_FIELDS = ("file", "line", "format", "kind", "category", "severity", "meaning")
CODE_FIELDS = ("number", "name", "text", "kind", "category", "severity", "meaning", "file", "line")
BENIGN = "benign"


class Table(object):
    """One emitter's table, compiled for matching."""

    def __init__(self, name, module):
        self.name = name
        self.module = module
        self.emitter = module.EMITTER
        self.markers = tuple(module.MARKERS)
        self._rows = self._compiled = None  # made on first use: a reader that never meets a line of
        # this emitter never pays for its table
        self._by_word = self._unindexed = self._shapes = None  # made with the compiled rows

    @property
    def rows(self):
        if self._rows is None:
            self._rows = self._all_rows()
        return self._rows

    @property
    def compiled(self):
        if self._compiled is None:
            self._compiled = self._compile()
        return self._compiled

    def _all_rows(self):
        module = self.module
        rows = list(module.ROWS)
        for code in getattr(module, "CODES", ()):
            c = dict(zip(CODE_FIELDS, code))
            for fmt in getattr(module, "CODE_FORMATS", ()):
                text = fmt.replace("{number}", str(c["number"])).replace("{name}", str(c["name"])) \
                    .replace("{text}", str(c["text"]))
                rows.append(code_row(c, text))
        return rows

    def _compile(self):
        compiled, shapes = [], []
        for i, row in enumerate(self.rows):
            if matchable(row[2]):
                frags, gaps = compile_format(row[2])
                compiled.append((max(frags, key=len), sum(len(f) for f in frags), frags, gaps, i))
                continue
            rx = shape_regex(row[2])  # too little text to be found by: perhaps by its shape
            if rx is not None:
                shapes.append((rx.pattern.count(" ?"), literal_length(row[2]), rx, i))
        compiled.sort(key=lambda c: -c[1])  # most specific first: the first match wins
        self._by_word, self._unindexed = _word_index(compiled)
        shapes.sort(key=lambda c: (-c[0], c[3]))  # the longest shape first
        self._shapes = tuple((size, rx, i) for _n, size, rx, i in shapes)
        return compiled

    def candidates(self, line):
        """The compiled rows that may match ``line`` (blanks joined), in match order: those whose
        key word the line holds as a word, and those with no key word. Exact: a row matches only
        where its fragments are, and a key word stands between non-word characters inside one."""
        compiled = self.compiled
        by_word = self._by_word
        picked = set(self._unindexed)
        for word in set(_WORD.findall(line)):
            found = by_word.get(word)
            if found is not None:
                picked.update(found)
        return [compiled[k] for k in sorted(picked)]

    def holds_marker(self, line):
        for m in self.markers:
            if m in line:
                return True
        return False

    def match(self, line):
        """The best row of this table for ``line``: (row tuple, literal length) or None. Runs of
        blanks in the line count as one, as in the rows' fragments."""
        if "  " in line or "\t" in line:
            line = " ".join(line.split())  # once here, not in each match_fragments
        partial = []  # rows whose longest fragment the line holds but which did not match whole
        for longest, size, frags, gaps, i in self.candidates(line):
            if longest in line:
                span = _span(line, frags, gaps)
                if span is None:
                    if len(frags) > 1:
                        partial.append((frags, gaps, i))
                    continue
                row = self.rows[i]
                if row[3] == BENIGN and _quoted_in_error(line, span):
                    continue  # a benign message quoted by an error: the next row, or nothing, explains it
                return row, size
        for size, rx, i in self._shapes:
            if rx.search(line) is not None:
                return self.rows[i], size
        if partial and (len(line) >= CUT_VALUE or line.endswith(CUT_ENDS)):  # last: cut in a value (_cut_here)
            for frags, gaps, i in partial:
                span = _span(line, frags, gaps, cut=True)
                if span is not None and not (self.rows[i][3] == BENIGN and _quoted_in_error(line, span)):
                    return self.rows[i], MIN_LITERAL  # the least sure match: another table's whole one wins
        return None


def code_row(c, text):
    """The row (ROW_FIELDS order) a numbered code (a CODE_FIELDS dict) is read by when printed as ``text``."""
    return (c["file"], c["line"], text, c["kind"], c["category"], c["severity"], c["meaning"] or c["text"])


_TABLES = {}


def table(name):
    """The compiled table of one emitter (None when its module is not generated yet)."""
    if name not in _TABLES:
        try:
            module = importlib.import_module("%s.%s" % (__name__, name))
        except ImportError:
            module = None
        _TABLES[name] = Table(name, module) if module is not None else None
    return _TABLES[name]


def tables(names=EMITTERS):
    return [t for t in (table(n) for n in names) if t is not None]


def code(name, number):
    """One numbered code of a table (its CODES: an ibv_wc_status, an ncclResult_t) as a dict of
    CODE_FIELDS, or None: what a dedicated reader that parsed the number says of it."""
    t = table(name)
    for c in getattr(t.module, "CODES", ()) if t is not None else ():
        if c[0] == number:
            return dict(zip(CODE_FIELDS, c))
    return None


def markers(names=EMITTERS):
    """The markers of the tables ``names`` (from vocab/index.py: no table is loaded)."""
    from .index import MARKERS
    out = []
    for name in names:
        out.extend(m for m in MARKERS.get(name, ()) if m not in out)
    return tuple(out)


_MARKED = {}  # names -> ((name, its markers), ...)


def _marked(line, names):
    """The tables among ``names`` whose markers ``line`` holds (behind the table's GATE, where it
    has one), in order (vocab/index.py's markers: no table is loaded to know)."""
    plan = _MARKED.get(names)
    if plan is None:
        from .index import GATES, MARKERS
        plan = _MARKED[names] = tuple((name, tuple(MARKERS.get(name, ())),
                                       re.compile(GATES[name]) if name in GATES else None) for name in names)
    out = []
    for name, marks, gate in plan:
        if gate is not None and not gate.search(line, 0, 400):
            continue  # the table's emitter prints every line behind its head (the table's GATE)
        for m in marks:
            if m in line:
                out.append(name)
                break
    return out


# The RM's debug prefix (nvlog_printf.c RmMsgPrefix) had no separator before the function until a
# 535 release added NV_PRINTF_PREFIX_SEPARATOR (": "; 525.60.11 and 535.129.03 print "NVRM
# objClInitPcieChipset: ..."): the tables hold today's "NVRM: <function>: ", so a line of an older
# driver is read in that form
_NVRM_UNSEPARATED = re.compile(r"\bNVRM (?=[A-Za-z_]\w{0,80}: )")


def _line_form(name, line):
    if name == "nvrm" and "NVRM " in line and "NVRM:" not in line:  # today's prefix: as it is
        return _NVRM_UNSEPARATED.sub("NVRM: ", line, 1)
    return line


def match_line(line, names=EMITTERS):
    """The best (table, row) for one line among the tables whose markers it holds, or None.
    A table is loaded the first time a line holds one of its markers."""
    best = None
    for name in _marked(line, tuple(names)):
        t = table(name)
        if t is None:
            continue
        m = t.match(_line_form(name, line))
        if m is not None and (best is None or m[1] > best[2]):
            best = (t, m[0], m[1])
    if best is None and "nvml" in names:
        found = _nvml_return_quoted(line)
        if found is not None:
            return found
    if best is None and "fabricmanager" in names:
        found = _fabric_manager_unlisted(line)
        if found is not None:
            return found
    if best is None and "nccl" in names:
        found = _nccl_info_unlisted(line)
        if found is not None:
            return found
    if best is None and "xid" in names:
        return xid_named(line)
    return None if best is None else (best[0], dict(zip(ROW_FIELDS, best[1])))


# NCCL's INFO lines that say something failed are, in every release the table pins, failures NCCL
# handled (gen_nccl.py INFO_RULES' last rule: a WARN reports one that mattered); the releases between
# the pinned ones word some of them otherwise (2.19-2.21's 'TUNER/Plugin: Failed to find
# ncclTunerPlugin_v2, using internal tuner instead.' names the symbol through a macro): the same class
NCCL_INFO_UNLISTED = ("https://github.com/NVIDIA/nccl src/include/debug.h (INFO)", 0,
                      "(an NCCL INFO line that says something failed, worded as no pinned release words it)",
                      "logged_error", "unknown", "info",
                      "An NCCL_DEBUG=INFO line about a failure NCCL handled (a WARN reports it if it mattered).")
_NCCL_INFO_RE = re.compile(r"\bNCCL INFO (?!\S+:\d+ -> \d)")


def _nccl_info_unlisted(line):
    """(nccl table, the row) for an error-like NCCL INFO line no row matched, else None (an error
    trail's 'file.cc:123 -> 3' is the NCCL reader's)."""
    m = _NCCL_INFO_RE.search(line)
    if m is None:
        return None
    from .reading import error_like
    if not error_like(line[m.end():]):
        return None
    t = table("nccl")
    return None if t is None else (t, dict(zip(ROW_FIELDS, NCCL_INFO_UNLISTED)))


# nvmlErrorString's texts of the two returns that say the GPU itself is gone (nvml.h
# NVML_ERROR_GPU_IS_LOST 15, NVML_ERROR_RESET_REQUIRED 16), too short to be rows of their own
# (vocab/reading.py reads them in a driver message that quotes them)
NVML_GONE = (("GPU is lost", 15), ("GPU requires reset", 16))


def _nvml_return_quoted(line):
    """(nvml table, the code's row) for a line that quotes NVML's return text for a GPU that is
    gone and names NVML (a Go or C caller's 'error creating nvml.Device 5: nvml: GPU is lost'),
    else None: the return value says what failed, whichever program met it."""
    if "GPU " not in line or "nvml" not in line.lower():
        return None
    for text, number in NVML_GONE:
        if text in line:
            t, c = table("nvml"), code("nvml", number)
            if t is None or c is None:
                return None
            return t, dict(zip(ROW_FIELDS, code_row(c, c["text"])))
    return None


# Fabric Manager is closed source: its table holds only the messages public sources quote. Its
# other lines still name it ('fabric manager config file item: ... has an invalid value', the
# start script's 'Unknown option: /usr/share/nvidia/nvswitch/fabricmanager.cfg', the unit's
# 'nvidia-fabricmanager.service: Failed with result ...') and say that they failed by its log level
# ('[ERROR]' / '[FATAL]', gpud's testdata/fabricmanager.log) or by words of refusal: Fabric Manager
# did not set the NVLink fabric up, which the taxonomy gives the driver stack (fabric_not_ready), as
# a warning: which message it was, no source says.
_FM_NAMED_RE = re.compile(r"(?i)fabric[ _-]?manager")
_FM_FAILED_RE = re.compile(r"\[(?:ERROR|FATAL|CRITICAL)\]|(?i:\binvalid\b|\bunknown option\b|\bunable to\b|"
                           r"\bcannot\b|\bcould not\b|\babort(?:ed|ing)?\b|\bdo(?:es)?n'?t match\b|"
                           r"\bdo(?:es)? not match\b|\bmismatch)")
# systemd's and systemctl's words about the unit ('systemd[1]: nvidia-fabricmanager.service: Failed with
# result ...', 'Job for nvidia-fabricmanager.service failed because ...'): the unit's state, not why
_UNIT_STATE_RE = re.compile(r"\bsystemd\[1\]:|^\s{0,8}Job for \S{1,200} failed because")
FM_UNLISTED = ("https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/", 0,
               "(a Fabric Manager line that says it failed, in no public list)", "fabric_not_ready", "driver",
               "warning", "Fabric Manager (or its start-up) reports an error no public source lists: the NVLink "
               "fabric may not be set up on this node, so CUDA can fail with 'system not yet initialized'")


def _fabric_manager_unlisted(line):
    """(Fabric Manager's table, FM_UNLISTED) for a line of Fabric Manager's that says it failed
    and that no row explains, else None."""
    if "abric" not in line or not _FM_NAMED_RE.search(line) or _UNIT_STATE_RE.search(line):
        return None
    from .reading import error_like
    if not (_FM_FAILED_RE.search(line) or error_like(line)):
        return None
    t = table("fabricmanager")
    return None if t is None else (t, dict(zip(ROW_FIELDS, FM_UNLISTED)))


# an Xid another program's line names (a site health check's 'Found XID errors: 63', an agent's 'xid=48',
# 'GPU 0 has XID 79 errors'): NVIDIA's catalog (the xid table's CODES) says what the code is. A record of
# the fault, not the driver's own line (NVRM's Xid lines are the kernel reader's): a warning, to confirm
# in the node's kernel log
_XID_NAMED_RE = re.compile(r"\b(?:XID|Xid|xid)(?:[ _-]?(?:errors?|events?|codes?))?\s{0,3}[:=#]?\s{0,3}(\d{1,3})\b")
XID_NAMED = "https://docs.nvidia.com/deploy/xid-errors/"


def xid_named(line):
    """(xid table, a row for the Xid ``line`` names) when a line that is not NVRM's names an Xid
    of NVIDIA's catalog, else None. The row carries the code as ``xid``."""
    if ("xid" not in line and "Xid" not in line and "XID" not in line) or "NVRM" in line:
        return None
    m = _XID_NAMED_RE.search(line)
    c = code("xid", int(m.group(1))) if m else None
    if c is None:
        return None
    if c["kind"] == BENIGN:  # (Xid 106/107, SMBPBI's test messages): what the catalog says, no fault
        return table("xid"), dict(zip(ROW_FIELDS, code_row(c, "Xid %d" % c["number"])), xid=c["number"])
    from ..taxonomy.kinds_vocab import BY_CATEGORY
    row = dict(zip(ROW_FIELDS, (XID_NAMED, 0, "Xid %d" % c["number"], BY_CATEGORY.get(c["category"], "logged_error"),
                                c["category"], "info" if c["severity"] == "info" else "warning",
                                "a line names Xid %d (%s): a record of the fault by the program that wrote it, not "
                                "the driver's own line; confirm it in the node's kernel log" % (c["number"],
                                                                                                 c["text"]))))
    row["xid"] = c["number"]
    return table("xid"), row


_LATER = {}


def continues_a_message(line, names=EMITTERS):
    """True when ``line`` is a later printed line of a message of several lines (rows hold the
    whole format; only the first line is matched, compile_format): NCCL's WARN that goes on
    "This is usually caused by ... Fabric Manager or NVSwitches.", PyTorch's "Last error:".
    Such a line is its message's, explained by it, not a line nothing explains. Asked only of
    error-like lines no table matched, so the tables are loaded here."""
    key = tuple(names)
    later = _LATER.get(key)
    if later is None:
        later = []
        for t in tables(names):
            for row in t.rows:
                parts = [p for p in row[2].split("\n") if p.strip()]
                for part in parts[1:]:
                    if matchable(part) or (part.strip() and not _CONV.search(part) and len(part.strip()) >= MIN_FRAGMENT):
                        frags, gaps = compile_format(part)
                        if frags:
                            later.append((max(frags, key=len), frags, gaps))
        later = _LATER[key] = later
    if "  " in line or "\t" in line:
        line = " ".join(line.split())
    for longest, frags, gaps in later:
        if longest in line and match_fragments(line, frags, gaps):
            return True
    return False


# sample text for each conversion when a row is instantiated (tests, coverage)
_SAMPLE = {"d": "3", "i": "3", "u": "7", "o": "17", "x": "1f", "X": "1F", "c": "z", "s": "abc", "p": "0xffff1234",
           "m": "Connection refused", "e": "1.5e+00", "f": "1.500000", "g": "1.5", "a": "0x1p+0", "n": ""}


def instantiate(fmt, whole=False):
    """The message a format prints with sample arguments (its first printed line; ``whole``:
    all of its lines)."""
    first = fmt if whole else next((part for part in fmt.split("\n") if part.strip()), "")

    def sample(m):
        spec = m.group("spec")
        if spec == "%":
            return "%"
        return _SAMPLE.get(spec[0], "abc") if not spec.startswith("p") else _SAMPLE["p"]
    return _CONV.sub(sample, first)


def lines_for(tbl, row):
    """Every line the emitter prints for ``row`` (a message of several lines: each with the
    template's prefix, as a kernel log or a job log shows it)."""
    parts = [p for p in instantiate(row["format"], whole=True).split("\n") if p.strip()]
    return "\n".join(_templated(tbl, row, p) for p in parts) if len(parts) > 1 else line_for(tbl, row)


def line_for(tbl, row):
    """A whole line as the emitter prints ``row`` (a ROW_FIELDS dict), from its TEMPLATES."""
    return _templated(tbl, row, instantiate(row["format"]))


def _templated(tbl, row, message):
    for prefix, template in getattr(tbl.module, "TEMPLATES", (("", "{message}"),)):
        if str(row["file"]).startswith(prefix):
            # the file's name as its program prints it: never the '@<version>' a row of an older release carries
            return template.replace("{file}", str(row["file"]).split("@", 1)[0].rsplit("/", 1)[-1]) \
                .replace("{line}", str(row["line"])).replace("{message}", message)
    return message
