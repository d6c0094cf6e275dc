# SPDX-License-Identifier: Apache-2.0
"""``nvidia-smi -q`` text: whole, ``-d ECC,PAGE_RETIREMENT,...``, or an excerpt.

The layout is indentation: 'GPU <pci>' starts a GPU, a line without a colon opens a section,
'Key : Value' is a field of the innermost open section.
"""

import re

from ..findings import finding, iter_lines
from .failures import index_fewer_sections, scan_failures, unparseable
from .model import ECC_FLAGS, PCI_TXT, as_text, assign, ecc_sub, empty_facts, new_gpu, norm, note, src, \
    throttle_key, to_int, to_str
from .rules import wrap_up

_GPU_HDR_RE = re.compile(r"^\s*GPU\s+(" + PCI_TXT + r")\s*$")
# no lazy group before '\s*$' or after '(\s*)': each would rescan a run of spaces (quadratic)
_KV_RE = re.compile(r"^(\s*)(\S(?:[^:]*?\S)?)\s*:\s*(.*\S)?\s*$")
_Q_GLOBAL_KEYS = ("timestamp", "driver version", "cuda version", "attached gpus", "cuda driver version")
_THROTTLE_SECTIONS = ("clocks throttle reasons", "clocks event reasons", "clocks_throttle_reasons",
                      "clocks_event_reasons")
_TOP_KEYS = {"product name": "name", "serial number": "serial", "gpu uuid": "uuid",
             "minor number": "minor_number", "gpu recovery action": "recovery_action"}


def _prefix_key(key, table):
    """The canonical key of the first (prefix, canonical) in ``table`` that ``key`` starts with."""
    return next((canon for prefix, canon in table if key.startswith(prefix)), None)


def _ecc_key(path, key):
    if len(path) == 1:
        sub = re.sub(r"\s+", "_", key)
        return "ecc.flag." + sub if sub in ECC_FLAGS else None
    if path[1] not in ("volatile", "aggregate"):
        return None
    scope = path[1]
    if len(path) >= 3 and path[2] in ("single bit", "double bit"):
        if key == "total":
            return "ecc.%s.%s" % (scope, "correctable" if path[2] == "single bit" else "uncorrectable")
        return None
    if key == "sram threshold exceeded":
        return "ecc.flag.sram_threshold_exceeded"
    sub = ecc_sub(key)
    return "ecc.%s.%s" % (scope, sub) if sub else None


def q_key(path, key):
    """Map a -q field (section path within the GPU, leaf key; normalised) to a canonical key."""
    sec = path[0] if path else None
    if sec is None:
        return _TOP_KEYS.get(key)
    if (sec, key) in (("pci", "bus id"), ("mig mode", "current"), ("ecc mode", "current"),
                      ("temperature", "gpu current temp")):
        return {"pci": "pci", "mig mode": "mig_mode", "ecc mode": "ecc_mode", "temperature": "temperature_c"}[sec]
    if (sec, key) == ("mig mode", "pending"):
        return "mig_mode_pending"
    if sec == "gpu reset status":
        return _prefix_key(key, (("reset required", "reset_required"),
                                 ("drain and reset", "drain_and_reset_recommended")))
    if sec == "fabric" and len(path) == 1 and key in ("state", "status"):
        return "fabric_" + key
    if sec == "ecc errors":
        return _ecc_key(path, key)
    if sec == "retired pages":
        return _prefix_key(key, (("single bit", "retired.single_bit"), ("double bit", "retired.double_bit"),
                                 ("pending", "retired.pending")))
    if sec == "remapped rows":
        if key == "pending":
            return "remap.pending"
        return _prefix_key(key, (("correctable", "remap.correctable"), ("uncorrectable", "remap.uncorrectable"),
                                 ("remapping failure", "remap.failure")))
    if sec in _THROTTLE_SECTIONS:
        t = throttle_key(key)
        return "throttle." + t if t else None
    return None


class _Reader(object):
    """Walks the lines once, keeping the current GPU and the open sections."""

    def __init__(self):
        self.facts = empty_facts("q")
        self.gpus = []
        self.g = None
        self.base = 0
        self.stack = []  # [(indent, normalised name, original name)]
        self.attached_ln = None

    def line(self, ln, raw):
        line = raw.expandtabs(4)
        if not line.strip():
            return
        m = _GPU_HDR_RE.match(line)
        if m:
            self.g = new_gpu(m.group(1), len(self.gpus))
            note(self.g, "header", ln, line.strip())
            self.gpus.append(self.g)
            self.base = len(line) - len(line.lstrip())
            self.stack = []
            return
        indent = len(line) - len(line.lstrip())
        kv = _KV_RE.match(line)
        if kv:
            self._field(ln, line, indent, kv)
            return
        # a section header (no colon), or noise like '[...]'
        name = line.strip()
        self._pop(indent)
        if self.g is not None and not self.stack and norm(name) == "processes":
            self.g["_ev"]["_end"] = (ln, "")
        self.stack.append((indent, norm(name), name))

    def _pop(self, indent):
        while self.stack and self.stack[-1][0] >= indent:
            self.stack.pop()

    def _global(self, ln, line, key, val):
        if key == "driver version":
            self.facts["driver_version"] = to_str(val)
        elif key in ("cuda version", "cuda driver version") and self.facts["cuda_version"] is None:
            self.facts["cuda_version"] = to_str(val)
        elif key == "attached gpus":
            self.facts["attached_gpus"] = to_int(val)
            self.attached_ln = (ln, line.strip())

    def _field(self, ln, line, indent, kv):
        key = norm(kv.group(2))
        val = kv.group(3) or ""
        if key in _Q_GLOBAL_KEYS and (self.g is None or indent <= self.base):
            self._global(ln, line, key, val)
            return
        self._pop(indent)
        path = tuple(s[1] for s in self.stack)
        if self.g is None:
            if q_key(path, key) is None:
                return  # an error line or noise before any GPU
            self.g = new_gpu(None, None)  # an excerpt without its 'GPU <pci>' header (capture 048)
            self.gpus.append(self.g)
            self.base = -1
        if not path and key == "processes":
            self.g["_ev"]["_end"] = (ln, "")  # a full -q GPU section ends with 'Processes'
        label = ".".join([s[2] for s in self.stack] + [kv.group(2).strip()])
        assign(self.g, q_key(path, key), val, ln, line.strip(), label)


def _truncation(gpus, source):
    """An info finding when the last GPU section looks cut off, else None."""
    if len(gpus) < 2:
        return None
    sizes = sorted(x["_nlines"] for x in gpus[:-1])
    med = sizes[len(sizes) // 2]
    ended = all("_end" in x["_ev"] for x in gpus[:-1])
    if (ended and "_end" not in gpus[-1]["_ev"]) or (med >= 20 and gpus[-1]["_nlines"] < med // 2):
        hdr = gpus[-1]["_ev"].get("header", (0, ""))
        return finding("nvsmi_truncated", "The last GPU section is much shorter than the others: output looks cut off",
                       evidence=hdr[1], source=src(source, hdr[0]))
    return None


def parse_q(text, source, expected_gpus, thresholds):
    text = as_text(text)
    lines = list(iter_lines(text))
    r = _Reader()
    for ln, raw in lines:
        r.line(ln, raw)
    facts, gpus, attached_ln = r.facts, r.gpus, r.attached_ln
    parse_findings = []
    cut = _truncation(gpus, source)
    if cut:
        parse_findings.append(cut)
    # 'Attached GPUs : 8' but fewer sections: lost GPUs, filtered (-i N) or elided output
    lost_index = {}
    if not cut and facts["attached_gpus"] is not None and 0 < len(gpus) < facts["attached_gpus"]:
        lost_index, explained = index_fewer_sections(gpus, lines, facts["attached_gpus"])
        if not explained:
            parse_findings.append(finding(
                "nvsmi_incomplete", "Output lists %d GPU section(s) for %d attached GPUs (filtered with -i, or an "
                "excerpt)" % (len(gpus), facts["attached_gpus"]),
                evidence=attached_ln[1], source=src(source, attached_ln[0])))
    if not gpus:
        fails, _ = scan_failures(lines, source, [])
        if fails:
            return facts, fails
        if facts["driver_version"] is None:
            return unparseable("q", text, source, "nvidia-smi -q")
    if facts["attached_gpus"] is None and all("header" not in g["_ev"] for g in gpus):
        expected_gpus = None  # a bare excerpt (no 'GPU <pci>' line, no count): nothing to count
    return wrap_up(facts, gpus, lines, source, expected_gpus, thresholds, parse_findings, attached_ln, lost_index)
