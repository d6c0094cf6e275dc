"""dcgmi's reports as findings: ``dcgmi diag -r N`` (its boxed table and ``-j`` JSON) and
``dcgmi health -c`` (its tree and ``-j`` JSON), read as DCGM's own source prints them
(NVIDIA/DCGM 72fa3feaa67d, DCGM 4.6: dcgmi/Diag.cpp, dcgmi/Health.cpp, dcgmi/DcgmiOutput.cpp,
nvvs/include/NvvsJsonStrings.h; the tags v2.1.4 to v4.0.0 for the older shapes).

- diag text: a 78-column box; section lines (``|-----  Deployment  ---+...|``); a test's row
  ``| name | Pass|Fail|Warn|Skip[ - All| - GPU[s]: 0, 3] |`` (3.x and older) or ``| name | Fail |``
  followed by ``|  | GPU0: Fail |`` per entity (4.x); ``Warning``/``Error`` rows (``Warning: GPU3``
  in 4.x) whose message is cut into 45-character pieces, mid-word, over the rows below them;
  ``Info`` rows (verbose) are not failures. Metadata rows give the DCGM version and GPU count.
- diag JSON: ``{"DCGM GPU Diagnostic"`` (2.x/3.x) or ``"DCGM Diagnostic"`` (4.x) ``: {"test_categories":
  [{"category", "tests": [{"name", "results": [{status, gpu_ids|gpu_id|entity_group+entity_id,
  warnings: "msg" (2.x) | [{"warning", "error_id", ...}]}], "test_summary"}]}]}}``; a run that did
  not start: ``"runtime_error"``; several iterations: ``{"Overall Result", "iterations": [...]}``.
- health: the tree ``| Overall Health | Warning |``, ``| GPU |``, ``| -> 0 | Warning |``,
  ``|       -> PCIe system | Warning |`` and the message in 54-column pieces cut at words; its JSON
  ``{"body": {"Overall Health": {"value"}, "GPU": {"children": {"0": {"value", "children":
  {"Errors": {"children": {"PCIe system": {"value", "overflow": [...]}}}}}}}}, "header": [...]}``.

A failed or warned test gives one finding per GPU, classified by the DCGM error code the output
carries (``error_id``: vocab/dcgm.py CODES), else by its message (the DCGM table, then DCGM's
older wordings in ``_LEGACY``), else by the test's name (``_NAME_RULES``). A test that failed on
every GPU of the run is one node-wide finding unless a GPU's own message is critical hardware
(a false NVLink/PCIe expectation, a shared power or cooling cause: not one GPU's fault).
``OPENING``/``opens``/``belongs`` let content.py find these blocks in any text.
"""

import json
import re

from . import vocab
from .findings import SEVERITY_RANK, SUSPICION, finding, gpu_ref, iter_lines, never_raise, unpaste
from .taxonomy import kind_info
from .taxonomy.kinds_vocab import BY_CATEGORY

SOURCE = "dcgmi.txt"
_SECTIONS = r"(?:Metadata|Deployment|Integration|Hardware|Stress|Training)"
# the first line of a block: a box's top line (only with a header below it: opens()), a diag
# section line, the health report's header, a diag result row, a JSON object's opening
OPENING = re.compile(r"^[ \t]{0,8}(?:\+-[-+=]{4,}[ \t]*$|[+|]-{3,}[ \t]{1,4}" + _SECTIONS + r"[ \t]{1,4}-|"
                     r"\|?[ \t]{0,3}Health Monitor Report\b|\|[ \t][^|\n]{0,40}\|[ \t]{1,3}(?:(?:Pass|Fail|Warn|Skip)"
                     r" - (?:All\b|GPUs?: \d)|[A-Za-z_]{1,12}\d{1,4}: (?:Pass|Fail|Warn|Skip|Not Run)\b)|\{)")
_BOX_TOP = re.compile(r"^[ \t]{0,8}\+-[-+=]{4,}[ \t]*$")
_HEADER_ROW = re.compile(r"^[ \t]{0,8}(?:\|[ \t]{1,3}(?:Diagnostic[ \t]{1,40}\|[ \t]{1,3}Result|Health Monitor Report)\b|"
                         r"[+|]-{3,}[ \t]{1,4}" + _SECTIONS + r"[ \t])")
_JSON_HEAD = re.compile(r'"(?:DCGM GPU Diagnostic|DCGM Diagnostic|Health Monitor Report)"|"Overall Result" ?: ?"|'
                        r'"body" ?: ?\{ ?"(?:Overall Health|GPU|vGPU|Switch|GPU_I|GPU_CI|LINK|CPU|CPU_CORE|ConnectX)" ?:')
_JSON_SCALAR = re.compile(r"^(?:-?\d{1,20}(?:\.\d{1,20})?|true|false|null),?$")
_PREFIX = re.compile(r"^[A-Za-z0-9][\w.\-]{0,252}: (?=[ \t]{0,8}[|+{}\[\]\"])")
_SECTION = re.compile(r"^[+|]-{3,}[ \t]{1,4}(?P<name>[A-Z][A-Za-z]{1,20}(?: [A-Z][A-Za-z]{1,20})?)[ \t]{1,4}-")
_STATUS = re.compile(r"^(?P<st>Pass|Fail|Warn|Skip|Not Run)(?: - (?:(?P<all>All)|GPUs?: (?P<ids>[\d, ]{1,400})))?$")
_ENTITY = re.compile(r"^(?P<grp>[A-Za-z_]{1,12}?)(?P<id>\d{1,6}): (?P<st>Pass|Fail|Warn|Skip|Not Run)$")
_LABEL = re.compile(r"^(?P<kind>Warning|Error|Info)(?:: (?P<grp>[A-Za-z_]{1,12}?)(?P<id>\d{1,6}))?$")
_GPU_IN = re.compile(r"\bGPU ?(\d{1,3})(?!\d)")
_DOUBLE_GPU = re.compile(r"GPU \d{1,3}(?=GPU \d)")  # 2.x prefixed a message with its GPU: 'GPU 0GPU 0's NvLink'
_INLINE = re.compile(r"^(?P<sys>[^:|]{1,60}?) ?: ?(?P<h>Healthy|Warning|Failure)\b(?: ?- ?(?P<msg>.{1,2000}))?$")
_RANK = {"Not Run": 0, "Skip": 1, "Pass": 2, "Warn": 3, "Fail": 4}
_BAD = ("Warn", "Fail")
_MAX_JSON = 32  # JSON objects tried in one text (each try reads the rest of the text)

# a test's name (or a message nothing else explains) -> category; first match wins
_NAME_RULES = (
    (re.compile(r"cpu", re.I), "unknown"),
    (re.compile(r"deny ?list|black ?list|cuda|nvml|librar|context.create|driver", re.I), "driver"),
    (re.compile(r"persistence|environment|permission|os block|graphics process|software|nccl", re.I), "unknown"),
    (re.compile(r"row.remap|page.retire|retired page|ecc|\bdbe\b|memory|memtest|inforom|pcie|nvlink|nvswitch|p2p|"
                r"bandwidth|diagnostic|\beud\b|stress|power|pulse|thermal|clock|sm.perf", re.I), "gpu_hardware"),
)
_NAME_WHY = {"unknown": "a node setting or a check with no hardware verdict", "driver": "the driver or CUDA/NVML library",
             "gpu_hardware": "what the test exercises"}
# DCGM's older wordings of a code's message (dcgmlib/dcgm_errors.h, tags v2.1.4-v4.0.0) that the
# 4.6 table does not match: (format, DCGM_FR_* number)
_LEGACY = (
    ("Found blacklisted driver: %s", 23),
    ("GPU %u was unsuccessfully written to in a peer-to-peer test: %s", 86),
    ("GPU %u unsuccessfully wrote data in a peer-to-peer test: %s", 87),
    ("Detected clock throttling due to power violation in GPU %u.", 12),
    ("Detected clock throttling due to thermal violation in GPU %u.", 10),
    ("Clocks are being throttled for GPU %u because of clock throttling starting %.1f seconds into the test. %s", 43),
    ("GPU %u has uncorrectable memory errors and row remappings are pending", 85),
    ("Persistence mode for GPU %u is currently disabled. The DCGM diagnostic requires peristence mode to be enabled.",
     29),
    ("Row remapping failed.", 80),
    ("Temperature %lld of GPU %u exceeded user-specified maximum allowed temperature %lld", 42),
    ("The %s test is skipped for this GPU.", 48),
    ("Thermal violations totaling %lu samples started at %.1f seconds into the test for GPU %u", 41),
)
_HEALTH_SYSTEM = {"Driver": "driver", "ConnectX system": "ib_network"}  # any other watch: the GPU's
_BENIGN = "benign"
_cache = {}


def opens(line, after=()):
    """True when ``line`` opens a dcgmi block; ``after``: the (up to 3) lines that follow it. A
    box's top line opens one only above dcgmi's header row or a section line; a ``{`` only when
    the object's first 200 characters name DCGM's diag or health report."""
    if not OPENING.match(line):
        return False
    s = line.strip()
    if s.startswith("{"):
        head = " ".join((s + " " + " ".join(a for a in list(after)[:3])).split())[:200]
        return bool(_JSON_HEAD.search(head))
    if _BOX_TOP.match(line):
        return any(_HEADER_ROW.match(a) for a in list(after)[:3])
    return True


def belongs(line):
    """True when ``line`` may continue a dcgmi block: a box line, a JSON line, a blank."""
    s = line.strip()
    return not s or s[0] in "|+{}[]\"" or bool(_JSON_SCALAR.match(s))


def parse_dcgmi(text, source=SOURCE):
    """-> (facts, findings) of dcgmi diag / health output (module docstring); never raises.
    facts: {"tool": "dcgmi diag"|"dcgmi health"|None, "format": "text"|"json", "version",
    "gpus" (count, diag), "tests": [{"name", "category", "status", "gpus", "messages"}],
    "overall", "healthy"}; several reports in one text: the first one's, with all of them in
    "reports". Findings cite "<source>:<line>" (text) or "<source>" (JSON)."""
    return never_raise(_parse, source, text, source=source)


def _parse(text, source=SOURCE):
    raw = [line for _n, line in iter_lines(text if isinstance(text, str) else "")]
    lines = [_clean(line) for line in raw]
    reports, taken, i, tries = [], set(), 0, 0
    while i < len(lines):
        if lines[i].lstrip().startswith("{") and tries < _MAX_JSON and opens(lines[i], lines[i + 1:i + 4]):
            tries += 1
            obj, end, cut = _load_json(lines, i)
            if isinstance(obj, dict):
                reports.append(_json_report(obj, cut))
                taken.update(range(i, end))
                i = end
                continue
        i += 1
    reports = _text_reports(lines, raw, taken) + reports
    findings, facts = [], []
    for rep in reports:
        found = _diag_findings(rep, source) if rep["tool"] == "dcgmi diag" else _health_findings(rep, source)
        findings.extend(found)
        facts.append(_facts(rep, found))
    out = dict(facts[0]) if facts else {"tool": None, "format": None, "version": None, "tests": [], "overall": None,
                                        "healthy": False}
    if len(facts) > 1:
        out["reports"] = facts
    return out, _unique(findings)


def _clean(line):
    line = unpaste(line)
    m = _PREFIX.match(line)
    return line[m.end():] if m else line


# -- JSON ---------------------------------------------------------------------------------
def _load_json(lines, i):
    """(object, end line index, cut) of the JSON object that starts at line ``i``; a cut-off one
    is closed after its last complete value (cut True); (None, i, False) when it is no JSON."""
    text = "\n".join(lines[i:])
    start = text.index("{")
    try:
        obj, end = json.JSONDecoder().raw_decode(text, start)
        return obj, i + text.count("\n", 0, end) + 1, False
    except (ValueError, RecursionError):
        fixed = _repair(text[start:])
    try:
        return (json.loads(fixed), len(lines), True) if fixed else (None, i, False)
    except (ValueError, RecursionError):
        return None, i, False


def _repair(text):
    """A JSON object cut off (a capture's cap, a paste's end) closed after its last complete value,
    or None when it is not cut off (or nests too deep to be dcgmi's)."""
    stack, in_str, esc, cut = [], False, False, None
    for pos, ch in enumerate(text):
        if in_str:
            esc, in_str = (False, in_str) if esc else (ch == "\\", ch != '"')
            continue
        if ch == '"':
            in_str = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
            if len(stack) > 64:
                return None
            cut = (pos + 1, "".join(reversed(stack)))
        elif ch in "}]":
            if not stack or len(stack) == 1:
                return None  # closed: complete (malformed) or not one object
            stack.pop()
            cut = (pos + 1, "".join(reversed(stack)))
        elif ch == ",":
            cut = (pos, "".join(reversed(stack)))
    return text[:cut[0]] + cut[1] if cut else None


def _json_report(obj, cut):
    body = obj.get("body")
    if isinstance(body, dict):
        return _json_health(obj, body, cut)
    rep = _report("dcgmi diag", "json", cut)
    roots = obj.get("iterations") if isinstance(obj.get("iterations"), list) else [obj]
    for root in (r for r in roots if isinstance(r, dict)):
        diag = root.get("DCGM GPU Diagnostic", root.get("DCGM Diagnostic"))
        if not isinstance(diag, dict):
            continue
        meta = root.get("metadata") if isinstance(root.get("metadata"), dict) else {}
        rep["version"] = rep["version"] or _str(diag.get("version") or root.get("version") or meta.get("version"))
        ids = root.get("GPU Device IDs")
        groups = [g for g in root.get("entity_groups") or () if isinstance(g, dict) and g.get("entity_group") == "GPU"]
        rep["gpus"] = len(ids) if isinstance(ids, list) else len(groups[0].get("entities") or ()) if groups else None
        if diag.get("runtime_error"):
            rep["errors"].append(_str(diag["runtime_error"]))
        for cat in diag.get("test_categories") or ():
            for t in (cat.get("tests") or ()) if isinstance(cat, dict) else ():
                if isinstance(t, dict):
                    rep["tests"].append(_json_test(t, _str(cat.get("category"))))
    return rep


def _json_test(t, category):
    test = _test(_str(t.get("name")), category, None, None, json.dumps(t, sort_keys=True)[:400])
    summary = t.get("test_summary") if isinstance(t.get("test_summary"), dict) else {}
    results = [r for r in t.get("results") or () if isinstance(r, dict)]
    for res in results or ([summary] if summary else []):
        group, eid = _json_entity(res)
        gpu = eid if group == "GPU" else None
        if res is not summary:
            test["results"].append({"gpu": gpu, "ent": (group, eid), "status": _str(res.get("status")),
                                    "lineno": None, "line": json.dumps(res, sort_keys=True)[:400]})
        for text, code in _json_warnings(res):
            test["messages"].append(_msg(text, code, (group, eid) if eid is not None else None))
    test["status"] = _worst([r["status"] for r in test["results"]] + [_str(summary.get("status"))])
    return test


def _json_entity(res):
    if "entity_id" in res:
        return _str(res.get("entity_group") or "GPU"), _int(res.get("entity_id"))
    for key in ("gpu_id", "gpu_ids"):
        if key in res:
            return "GPU", _int(res[key])
    return "GPU", None


def _json_warnings(res):
    w = res.get("warnings")
    for e in [w] if isinstance(w, str) else w if isinstance(w, list) else ():
        if isinstance(e, str):
            yield e, res.get("error_id")
        elif isinstance(e, dict):
            yield _str(e.get("warning") or e.get("warnings")), e.get("error_id")


def _json_health(obj, body, cut):
    rep = _report("dcgmi health", "json", cut)
    rep["overall"] = _str((body.get("Overall Health") or {}).get("value"))
    for group, node in body.items():
        if group == "Overall Health" or not isinstance(node, dict):
            continue
        for eid, ent in (node.get("children") or {}).items():
            errors = ((ent.get("children") or {}).get("Errors") or {}).get("children") or {}
            for system, sn in errors.items():
                sn = sn if isinstance(sn, dict) else {}
                text = " ".join(_str(p) for p in sn.get("overflow") or ())
                rep["tests"].append(_incident(group, _int(eid), system, _str(sn.get("value")), text, None,
                                              json.dumps({system: sn}, sort_keys=True)[:400]))
    return rep


# -- text ---------------------------------------------------------------------------------
def _text_reports(lines, raw, taken):
    reports, rep = [], None
    for i, line in enumerate(lines):
        if i in taken:
            continue
        s = line.strip()
        sec = _SECTION.match(s)
        cells = _cells(line) if not sec else None
        if not sec and cells is None:
            continue
        name, piece = cells or ("", "")
        info = piece.strip()
        new = None
        if name == "Health Monitor Report" or s.lstrip("| ").startswith("Health Monitor Report"):
            new = "dcgmi health"
        elif (name == "Diagnostic" and info == "Result") or (sec and (rep is None or rep["tool"] != "dcgmi diag")):
            new = "dcgmi diag"
        elif rep is None and (name or info):
            new = "dcgmi health" if name.startswith("->") or name == "Overall Health" else "dcgmi diag"
        if new:
            rep = _report(new, "text", False)
            reports.append(rep)
        if sec:
            rep["section"] = sec.group("name")
        elif rep["tool"] == "dcgmi diag":
            _diag_row(rep, name, piece, info, i + 1, raw[i])
        else:
            _health_row(rep, name, info, i + 1, raw[i])
    return [r for r in reports if r["tests"] or r["overall"] or r["meta"]]


def _cells(line):
    """(name cell, the value cell's text as printed: its first 45 columns) of a box row, or None."""
    s = line.lstrip(" \t")
    if not s.startswith("|") or s[1:2] in ("-", "="):
        return None
    bar = s.find("|", 1)
    if bar < 0:
        return s[1:].strip(), ""
    rest = s[bar + 1:]
    rest = rest[1:] if rest[:1] == " " else rest
    r = rest.rstrip()
    r = rest[:len(r) - 1] if r.endswith("|") else rest
    return s[1:bar].strip(), r[:45]


def _diag_row(rep, name, piece, info, lineno, line):
    test, msg = rep["test"], rep["msg"]
    lab = _LABEL.match(name)
    if lab:
        if test is None:  # an excerpt that starts at a message: the test it belongs to is not shown
            test = rep["test"] = _test("", rep["section"], "Fail" if lab.group("kind") == "Error" else "Warn",
                                       lineno, line)
            rep["tests"].append(test)
        ent = (lab.group("grp"), int(lab.group("id"))) if lab.group("id") else None
        rep["msg"] = _msg("", None, ent, lineno, line, info=lab.group("kind") == "Info")
        rep["msg"]["pieces"].append(piece)
        if not rep["msg"]["info"]:
            test["messages"].append(rep["msg"])
        return
    st, en = _STATUS.match(info), _ENTITY.match(info)
    if not name:
        if test is not None and en:
            grp = en.group("grp")
            test["results"].append({"gpu": int(en.group("id")) if grp == "GPU" else None, "status": en.group("st"),
                                    "ent": (grp, int(en.group("id"))), "lineno": lineno, "line": line})
            rep["msg"] = None
        elif test is not None and st and msg is None:
            _add_status(test, st, lineno, line)
        elif msg is not None:
            msg["pieces"].append(piece)
        return
    rep["msg"] = None
    if rep["section"] == "Metadata" or name.endswith(("Detected", "Version")):
        rep["meta"][name] = info
        if name == "DCGM Version":
            rep["version"] = info
        elif name == "GPU Device IDs Detected":
            rep["gpus"] = None if info.endswith("...") else len([x for x in info.split(",") if x.strip()])
        return
    rep["test"] = _test(name, rep["section"], None, lineno, line)
    rep["tests"].append(rep["test"])
    if st:
        _add_status(rep["test"], st, lineno, line)


def _add_status(test, st, lineno, line):
    test["status"] = _worst([test["status"], st.group("st")])
    if st.group("all"):
        test["all"] = True
    for gid in (st.group("ids") or "").replace(",", " ").split():
        test["results"].append({"gpu": int(gid), "ent": ("GPU", int(gid)), "status": st.group("st"),
                                "lineno": lineno, "line": line})


def _health_row(rep, name, info, lineno, line):
    label = name[2:].strip() if name.startswith("->") else name
    inline = _INLINE.match(label) if name.startswith("->") and not info else None
    if name == "Overall Health":
        rep["overall"] = info
    elif name.startswith("->") and label.isdigit():
        rep["entity"] = int(label)
    elif name.startswith("->") and label != "Errors":
        health, text = (inline.group("h"), inline.group("msg") or "") if inline else (info, "")
        rep["msg"] = _incident(rep["group"], rep["entity"], inline.group("sys") if inline else label, health, text,
                               lineno, line)
        rep["tests"].append(rep["msg"])
    elif not name and info and rep["msg"] is not None:
        rep["msg"]["messages"].append(info)
    elif name and not name.startswith("->"):
        rep["group"], rep["entity"], rep["msg"] = name, None, None


# -- the model ----------------------------------------------------------------------------
def _report(tool, fmt, cut):
    return {"tool": tool, "format": fmt, "cut": cut, "version": None, "gpus": None, "meta": {}, "tests": [],
            "errors": [], "overall": None, "section": None, "test": None, "msg": None, "group": "GPU", "entity": None}


def _test(name, category, status, lineno, line):
    return {"name": name, "category": category, "status": status, "all": False, "lineno": lineno, "line": line,
            "results": [], "messages": []}


def _msg(text, code, ent, lineno=None, line=None, info=False):
    return {"text": text, "code": code, "ent": ent, "lineno": lineno, "line": line, "info": info, "pieces": []}


def _incident(group, eid, system, health, text, lineno, line):
    return {"name": system, "group": group, "entity": eid, "status": health, "messages": [text] if text else [],
            "lineno": lineno, "line": line}


def _text_of(m):
    text = m["text"] or "".join(m["pieces"])
    return _DOUBLE_GPU.sub("", " ".join(text.split()))


def _gpu_of(m):
    if m["ent"] is not None:
        return m["ent"][1] if m["ent"][0] == "GPU" else None
    g = _GPU_IN.search(_text_of(m))
    return int(g.group(1)) if g else None
