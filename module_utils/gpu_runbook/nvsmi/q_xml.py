# SPDX-License-Identifier: Apache-2.0
"""``nvidia-smi -q -x``: any DTD version; truncated XML is read best effort.

A lenient tokenizer instead of xml.etree: captures are often cut off, carry stderr lines
around the document, or hold mismatched tags, and entities must never be expanded (no DTD,
no external entities)."""

import bisect
import re

from ..findings import finding, iter_lines
from .failures import index_fewer_sections, unparseable
from .model import ECC_FLAGS, as_text, assign, ecc_sub, empty_facts, err_of, new_gpu, note, src, throttle_key, \
    to_int, to_str
from .rules import wrap_up

_XML_TOKEN_RE = re.compile(
    r"<!--.*?(?:-->|\Z)"
    r"|<\?.*?(?:\?>|\Z)"
    r"|<!\[CDATA\[(?P<cdata>.*?)(?:\]\]>|\Z)"
    r"|<!DOCTYPE[^\[>]*(?:\[.*?(?:\]|\Z))?\s*>?"  # an unclosed subset ends the text, as a comment does
    r"|<(?P<close>/?)(?P<tag>[A-Za-z_][\w.:-]*)(?P<attrs>(?:\s+[^\s=/>]+\s*=\s*(?:\"[^\"]*\"|'[^']*'))*)\s*"
    r"(?P<empty>/?)>",
    re.S)
_XML_ATTR_RE = re.compile(r"(?<![^\s=/>])([^\s=/>]+)\s*=\s*(?:\"([^\"]*)\"|'([^']*)')")
_XML_ENT_RE = re.compile(r"&(#x[0-9A-Fa-f]+|#\d+|amp|lt|gt|quot|apos);")
_NAMED_ENTITIES = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}

_XML_SKIP_ERR_SUBTREES = ("processes", "accounted_processes", "supported_clocks", "mig_devices")
# (canonical key, path under <gpu>) of the plain leaf fields
_LEAVES = (("name", ("product_name",)), ("serial", ("serial",)), ("uuid", ("uuid",)),
           ("minor_number", ("minor_number",)), ("pci", ("pci", "pci_bus_id")),
           ("mig_mode", ("mig_mode", "current_mig")), ("mig_mode_pending", ("mig_mode", "pending_mig")),
           ("ecc_mode", ("ecc_mode", "current_ecc")),
           ("reset_required", ("gpu_reset_status", "reset_required")),
           ("drain_and_reset_recommended", ("gpu_reset_status", "drain_and_reset_recommended")),
           ("recovery_action", ("gpu_recovery_action",)), ("temperature_c", ("temperature", "gpu_temp")),
           ("fabric_state", ("fabric", "state")), ("fabric_status", ("fabric", "status")))
_REMAP_TAGS = (("remap.correctable", "remapped_row_corr"), ("remap.uncorrectable", "remapped_row_unc"),
               ("remap.pending", "remapped_row_pending"), ("remap.failure", "remapped_row_failure"))


def _unescape_one(m):
    e = m.group(1)
    if e.startswith("#"):
        try:
            return chr(int(e[2:], 16)) if e.startswith("#x") else chr(int(e[1:]))
        except (ValueError, OverflowError):
            return m.group(0)
    return _NAMED_ENTITIES[e]


def _xml_unescape(s):
    return _XML_ENT_RE.sub(_unescape_one, s) if "&" in s else s


def _open_tag(m, line):
    attrs = {}
    for a in _XML_ATTR_RE.finditer(m.group("attrs") or ""):
        attrs[a.group(1)] = _xml_unescape(a.group(2) if a.group(2) is not None else a.group(3))
    return {"tag": m.group("tag"), "attrs": attrs, "text": "", "children": [], "line": line}


def xml_tree(text):
    """A lenient XML reader -> (root, truncated, open stack).  Nodes: {tag, attrs, text, children, line}.

    Tolerates truncation, junk and mismatched tags (best effort)."""
    nl = [i for i, ch in enumerate(text) if ch == "\n"]
    top = {"tag": "#document", "attrs": {}, "text": "", "children": [], "line": 0}
    stack = [top]
    pos = 0
    for m in _XML_TOKEN_RE.finditer(text):
        if m.start() > pos:
            stack[-1]["text"] += text[pos:m.start()]
        pos = m.end()
        if m.group("cdata") is not None:
            stack[-1]["text"] += m.group("cdata")
            continue
        tag = m.group("tag")
        if not tag:
            continue
        if m.group("close"):
            for i in range(len(stack) - 1, 0, -1):
                if stack[i]["tag"] == tag:
                    del stack[i:]
                    break
            continue
        node = _open_tag(m, bisect.bisect_right(nl, m.start() - 1) + 1)
        stack[-1]["children"].append(node)
        if not m.group("empty"):
            stack.append(node)
    if pos < len(text):
        tail = text[pos:]
        stack[-1]["text"] += tail[:tail.index("<")] if "<" in tail else tail
    root = next((n for n in top["children"] if n["tag"] == "nvidia_smi_log"), None)
    if root is None and top["children"]:
        root = top["children"][0]
    return root, len(stack) > 1, stack


def _xtext(node):
    return _xml_unescape(node["text"]).strip() if node is not None else None


def _xchild(node, *path):
    cur = node
    for tag in path:
        if cur is None:
            return None
        cur = next((c for c in cur["children"] if c["tag"] == tag), None)
    return cur


def _xev(node):
    return "<%s>%s</%s>" % (node["tag"], _xtext(node), node["tag"])


def _put(g, key, n, label):
    """Assign leaf node ``n`` to ``key`` on ``g``."""
    assign(g, key, _xtext(n), n["line"], _xev(n), label)


def _xml_ecc(g, node):
    ecc = _xchild(node, "ecc_errors")
    if ecc is None:
        return
    for scope in ("volatile", "aggregate"):
        sn = _xchild(ecc, scope)
        for c in (sn["children"] if sn else []):
            where = "ecc_errors/%s/%s" % (scope, c["tag"])
            if c["tag"] in ("single_bit", "double_bit"):
                tot = _xchild(c, "total")
                if tot is not None:
                    _put(g, "ecc.%s.%s" % (scope, "correctable" if c["tag"] == "single_bit" else "uncorrectable"),
                         tot, where + "/total")
            elif c["tag"] == "sram_threshold_exceeded":
                _put(g, "ecc.flag.sram_threshold_exceeded", c, where)
            elif ecc_sub(c["tag"]) and not c["children"]:
                _put(g, "ecc.%s.%s" % (scope, ecc_sub(c["tag"])), c, where)
    for c in ecc["children"]:
        if c["tag"] in ECC_FLAGS and not c["children"]:
            _put(g, "ecc.flag." + c["tag"], c, "ecc_errors/" + c["tag"])


def _xml_pages_and_rows(g, node):
    rp = _xchild(node, "retired_pages")
    if rp is not None:
        for sub, tag in (("single_bit", "multiple_single_bit_retirement"), ("double_bit", "double_bit_retirement")):
            n = _xchild(rp, tag, "retired_count")
            if n is not None:
                _put(g, "retired." + sub, n, "retired_pages/%s/retired_count" % tag)
        for c in rp["children"]:
            if c["tag"].startswith("pending"):
                _put(g, "retired.pending", c, "retired_pages/" + c["tag"])
    rr = _xchild(node, "remapped_rows")
    for key, tag in (_REMAP_TAGS if rr is not None else ()):
        n = _xchild(rr, tag)
        if n is not None:
            _put(g, key, n, "remapped_rows/" + tag)


def _xml_throttle(g, node):
    for sec in ("clocks_throttle_reasons", "clocks_event_reasons"):
        tn = _xchild(node, sec)
        for c in (tn["children"] if tn else []):
            t = throttle_key(c["tag"])
            if t and not c["children"]:
                _put(g, "throttle." + t, c, sec + "/" + c["tag"])


def _xml_errors(g, node):
    """Any other leaf reading 'Unknown Error' / 'GPU is lost', in document order. A loop, not
    recursion: hostile XML nests deeper than Python's stack; the label keeps the last 16 tags."""
    stack = [(iter(node["children"]), None)]
    while stack:
        c = next(stack[-1][0], None)
        if c is None:
            stack.pop()
        elif c["tag"] in _XML_SKIP_ERR_SUBTREES:
            continue
        elif c["children"]:
            stack.append((iter(c["children"]), c["tag"]))
        elif err_of(_xtext(c)):
            tags = [tag for _it, tag in stack[-15:] if tag is not None] + [c["tag"]]
            assign(g, None, _xtext(c), c["line"], _xev(c), "/".join(tags))


def xml_gpu(node, index):
    """The GPU record of one <gpu> element."""
    g = new_gpu(node["attrs"].get("id"), index)
    note(g, "header", node["line"], '<gpu id="%s">' % node["attrs"].get("id", ""))
    for key, path in _LEAVES:
        n = _xchild(node, *path)
        if n is not None and not n["children"]:
            _put(g, key, n, "/".join(path))
    _xml_ecc(g, node)
    _xml_pages_and_rows(g, node)
    _xml_throttle(g, node)
    _xml_errors(g, node)
    return g


def parse_xml(text, source, expected_gpus, thresholds):
    text = as_text(text)
    lines = list(iter_lines(text))
    clean = "\n".join(line for _, line in lines)  # same line numbering as iter_lines
    root, truncated, open_stack = xml_tree(clean)
    if root is None:
        return unparseable("xml", text, source, "nvidia-smi -q -x XML")
    facts = empty_facts("xml")
    facts["driver_version"] = to_str(_xtext(_xchild(root, "driver_version")))
    facts["cuda_version"] = to_str(_xtext(_xchild(root, "cuda_version")))
    att = _xchild(root, "attached_gpus")
    attached_ln = None
    if att is not None:
        facts["attached_gpus"] = to_int(_xtext(att))
        attached_ln = (att["line"], _xev(att))
    gpus = []
    for c in root["children"]:
        if c["tag"] == "gpu":
            gpus.append(xml_gpu(c, len(gpus)))
    parse_findings = []
    if truncated:
        last = open_stack[-1]
        parse_findings.append(finding(
            "nvsmi_truncated", "The XML is cut off (unclosed <%s>); parsed what was complete" % last["tag"],
            evidence="<%s>" % last["tag"], source=src(source, last["line"])))
    lost_index = {}
    if not truncated and facts["attached_gpus"] is not None and 0 < len(gpus) < facts["attached_gpus"]:
        lost_index, explained = index_fewer_sections(gpus, lines, facts["attached_gpus"])
        if not explained:
            parse_findings.append(finding(
                "nvsmi_incomplete", "Output has %d <gpu> element(s) for %d attached GPUs (filtered with -i, or MIG)"
                % (len(gpus), facts["attached_gpus"]),
                evidence=attached_ln[1], source=src(source, attached_ln[0])))
    if not gpus and facts["driver_version"] is None and root["tag"] != "nvidia_smi_log":
        return unparseable("xml", text, source, "nvidia-smi -q -x XML")
    return wrap_up(facts, gpus, lines, source, expected_gpus, thresholds, parse_findings, attached_ln, lost_index)
