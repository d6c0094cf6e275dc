# SPDX-License-Identifier: Apache-2.0
"""dcgmi's reports as findings: ``dcgmi diag -r N`` (its boxed table and ``-j`` JSON) and
``dcgmi health -c`` (its tree and ``-j`` JSON), as DCGM's own source prints them (NVIDIA/DCGM
72fa3feaa67d: dcgmi/Diag.cpp, Health.cpp, DcgmiOutput.cpp, nvvs/include/NvvsJsonStrings.h; tags
v2.1.4-v4.0.0 for the older shapes): a test's row ``| name | Fail - GPU: 0 |`` (3.x) or ``| name |
Fail |`` then ``|  | GPU0: Fail |`` (4.x), ``Warning``/``Error`` rows whose message is cut into
45-column pieces over the rows below; ``{"DCGM GPU Diagnostic"|"DCGM Diagnostic": {"test_categories":
[{"category", "tests": [{"name", "results": [{status, gpu_ids|gpu_id|entity_id, warnings}]}]}]}}``;
``| -> PCIe system | Warning |`` and its message in 54-column pieces; ``{"body": {"Overall Health":
{"value"}, "GPU": {"children": {"0": ... {"PCIe system": {"value", "overflow"}}}}}}``.

A failed or warned test is one finding per GPU, read by the DCGM error code the output carries
(``error_id``: vocab/dcgm.py CODES), else by its message (the DCGM table, then DCGM's older
wordings: ``_LEGACY``), else by the test's name (``_NAME_RULES``). A test failed on every GPU is one
node-wide finding but for a GPU whose own message is critical hardware: a cause every GPU shares (a
false NVLink expectation, power, cooling) is no one GPU's fault. ``dcgmi nvlink --link-status``: its
own module (nvlink.py). ``OPENING``/``opens``/``belongs``: for content/'s block finder."""

import json
import re

from .. import vocab
from ..findings import SEVERITY_RANK, SUSPICION, finding, gpu_ref, iter_lines, never_raise, small_int, unpaste
from ..taxonomy import KINDS
from ..taxonomy.kinds_vocab import BY_CATEGORY
from .nvlink import LINE as _LINK_LINE, read_nvlink

SOURCE = "dcgmi.txt"
_SECTIONS = r"(?:Metadata|Deployment|Integration|Hardware|Stress|Training)"
# a block's first line: a box's top line (only above a header: opens()), a diag section line, the
# health report's header, a diag result row, a JSON object's opening (only as DCGM's: opens())
OPENING = re.compile(r"^(?:[ \t]{9,80}\{|[ \t]{0,8}(?:\+-[-+=]{4,}[ \t]*$|[+|]-{3,}[ \t]{1,4}" + _SECTIONS + r"[ \t]{1,4}-|"
                     r"\|?[ \t]{0,3}Health Monitor Report\b|\|[ \t][^|\n]{0,40}\|[ \t]{1,3}(?:(?:Pass|Fail|Warn|Skip)"
                     r" - (?:All\b|GPUs?: \d)|[A-Za-z_]{1,12}\d{1,4}: (?:Pass|Fail|Warn|Skip|Not Run)\b)|\{))")
_BOX_TOP = re.compile(r"^[ \t]{0,8}\+-[-+=]{4,}[ \t]*$")
_HEADER_ROW = re.compile(r"^[ \t]{0,8}(?:\|[ \t]{1,3}(?:Diagnostic[ \t]{1,40}\|[ \t]{1,3}Result|Health Monitor "
                         r"Report|NvLink Link Status|NVLINK Error Counts)\b|[+|]-{3,}[ \t]{1,4}" + _SECTIONS + r"[ \t])")
# (or one test of a -j report pasted alone, as deep as it nests: a plugin's name, nvvs/include/PluginStrings.h)
_JSON_HEAD = re.compile(r'"name" ?: ?"(?:software|pcie|targeted_power|targeted_stress|memory|memtest|sm_stress|diagn'
                        r'ostic|context_create|memory_bandwidth|pulse_test|eud|nvbandwidth|nccl_tests|rist)" ?, ?"results"|'
                        r'"(?:DCGM GPU Diagnostic|DCGM Diagnostic|Health Monitor Report)"|"Overall Result" ?: ?"|"body"'
                        r' ?: ?\{ ?"(?:Overall Health|GPU|vGPU|Switch|GPU_I|GPU_CI|LINK|CPU|CPU_CORE|ConnectX)" ?:')
_JSON_SCALAR = re.compile(r'^(?:-?\d{1,20}(?:\.\d{1,20})?|true|false|null),?$|'
                          r'^\[[ \t]*(?:$|[\[{"]|\][ \t]*,?$|-?\d[^\]]{0,200}\][ \t]*,?$)')  # an array's
_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[{}\[\],]')  # a string, or what nests or separates
_PREFIX = re.compile(r"^[A-Za-z0-9][\w.\-]{0,252}: (?=[ \t]{0,8}[|+{}\[\]\"])")  # pdsh 'host: '
_SECTION = re.compile(r"^[+|]-{3,}[ \t]{1,4}(?P<name>[A-Z][A-Za-z]{1,20}(?: [A-Z][A-Za-z]{1,20})?)[ \t]{1,4}-")
_STATUS = re.compile(r"^(?P<st>Pass|Fail|Warn|Skip|Not Run)(?: - (?:(?P<all>All)|GPUs?: (?P<ids>[\d, ]{1,400})))?$")
_ENTITY = re.compile(r"^(?P<grp>[A-Za-z_]{1,12}?)(?P<id>\d{1,6}): (?P<st>Pass|Fail|Warn|Skip|Not Run)$")
_LABEL = re.compile(r"^(?P<kind>Warning|Error|Info)(?:: (?P<grp>[A-Za-z_]{1,12}?)(?P<id>\d{1,6}))?$")
_GPU_IN = re.compile(r"\bGPU ?(\d{1,3})(?!\d)")
_DOUBLE_GPU = re.compile(r"GPU \d{1,3}(?=GPU \d)")  # 2.x put the GPU before its message: 'GPU 0GPU 0's NvLink'
_INLINE = re.compile(r"^(?P<sys>[^:|]{1,60}?) ?: ?(?P<h>Healthy|Warning|Failure)\b(?: ?- ?(?P<msg>.{1,2000}))?$")
_RANK = {"Not Run": 0, "Skip": 1, "Pass": 2, "Warn": 3, "Fail": 4}
_BAD = ("Warn", "Fail")
_MAX_JSON = 32  # JSON objects tried in one text (each try reads the rest of the text)
# a test's name (or a message nothing else reads) -> category; the first match wins
_NAME_RULES = (
    (re.compile(r"cpu", re.I), "unknown"),
    (re.compile(r"deny ?list|black ?list|cuda|nvml|librar|context.create|driver", re.I), "driver"),
    (re.compile(r"persistence|environment|permission|os block|graphics process|software|nccl", re.I), "unknown"),
    (re.compile(r"row.remap|page.retire|retired page|ecc|\bdbe\b|memory|memtest|inforom|pcie|nvlink|nvswitch|p2p|"
                r"bandwidth|diagnostic|\beud\b|stress|power|pulse|thermal|clock|sm.perf", re.I), "gpu_hardware"),
)
# DCGM's older wordings of a code's message (dcgmlib/dcgm_errors.h, v2.1.4-v4.0.0) the 4.6 table
# does not match: (format, DCGM_FR_* number)
_LEGACY = (
    ("Found blacklisted driver: %s", 23), ("Row remapping failed.", 80), ("The %s test is skipped for this GPU.", 48),
    ("GPU %u was unsuccessfully written to in a peer-to-peer test: %s", 86), ("GPU %u unsuccessfully wrote data in "
                                                                              "a peer-to-peer test: %s", 87),
    ("Detected clock throttling due to power violation in GPU %u.", 12), ("Detected clock throttling due to thermal "
                                                                          "violation in GPU %u.", 10),
    ("Clocks are being throttled for GPU %u because of clock throttling starting %.1f seconds into the test. %s", 43),
    ("GPU %u has uncorrectable memory errors and row remappings are pending", 85),
    ("Persistence mode for GPU %u is currently disabled. The DCGM diagnostic requires peristence mode to be "
     "enabled.", 29),
    ("Temperature %lld of GPU %u exceeded user-specified maximum allowed temperature %lld", 42),
    ("Thermal violations totaling %lu samples started at %.1f seconds into the test for GPU %u", 41),
)
_HEALTH_SYSTEM = {"Driver": "driver", "ConnectX system": "ib_network"}  # any other watch: the GPU's
_cache = {}


def opens(line, after=()):
    """Does ``line`` open a dcgmi block (``after``: the next 3 lines)? A box's top line only above
    dcgmi's header or a section line; a ``{`` only when its first 200 characters name DCGM's report."""
    if not OPENING.match(line):
        return False
    s, after = line.strip(), list(after)[:3]
    if s.startswith("{"):
        return bool(_JSON_HEAD.search(" ".join((s + " " + " ".join(after)).split())[:200]))
    return not _BOX_TOP.match(line) or any(_HEADER_ROW.match(a) for a in after)


def belongs(line):
    """True when ``line`` may continue a dcgmi block: a box line, a JSON line, a blank."""
    s = line.strip()
    return not s or s[0] in "|+{}]\"" or bool(_JSON_SCALAR.match(s)) or bool(_LINK_LINE.match(s))


def parse_dcgmi(text, source=SOURCE):
    """-> (facts, findings) of dcgmi diag / health output (module docstring); never raises.
    facts: {"tool": "dcgmi diag"|"dcgmi health"|None, "format": "text"|"json", "version", "gpus"
    (diag: how many), "tests": [{"name", "category", "status", "gpus", "messages"}] (health: its watches'
    incidents), "overall", "healthy"}; of several reports the first's, all in "reports"."""
    return never_raise(_parse, source, text, source=source)


def _parse(text, source=SOURCE):
    raw = [line for _n, line in iter_lines(text if isinstance(text, str) else "")]
    lines = [_PREFIX.sub("", unpaste(line), count=1) for line in raw]
    reports, taken, i, tries = [], set(), 0, 0
    while i < len(lines):
        if lines[i].lstrip().startswith("{") and tries < _MAX_JSON and opens(lines[i], lines[i + 1:i + 4]):
            tries += 1
            obj, end, cut = _load_json(lines, i)
            if isinstance(obj, dict):
                reports.append(_json_report(obj, cut))
                taken.update(range(i, end))
            i = end  # a broken object's lines are no table: past them
            continue
        i += 1
    findings, facts, read = read_nvlink(lines, raw, source)  # dcgmi nvlink -s / -e (dcgm/nvlink.py)
    for rep in _text_reports(lines, raw, taken | read) + reports:
        found = _health_findings(rep, source) if rep["tool"] != "dcgmi diag" else [
            _make(c if isinstance(c, dict) else _named("unknown"), "warning", "dcgmi diag did not run: %s" % t[:300],
                  {}, None, source) for t, c in ((t, _by_text(t)) for t in rep["errors"])] + [
            f for test in rep["tests"] for f in _test_findings(rep, test, source)]
        found += [finding("capture_truncated", "The %s JSON is cut off: it was read as far as it goes" % rep["tool"],
                          source=source)] if rep["cut"] else []
        findings.extend(found)
        facts.append(_facts(rep, found))
    out = dict(facts[0]) if facts else _facts(_report(None, None, False), [])
    out.update({"reports": facts} if len(facts) > 1 else {})
    return out, _unique(findings)


def _load_json(lines, i):
    """(object or None, end line index, cut) of the JSON object that starts at line ``i``; one cut
    off (by a cap, or by the next command's lines) is closed after its last complete value."""
    text = "\n".join(lines[i:])
    start = text.index("{")
    try:
        obj, end = json.JSONDecoder().raw_decode(text, start)
        return obj, i + text.count("\n", 0, end) + 1, False
    except RecursionError:
        return None, i + 1, False
    except ValueError as exc:
        pos = getattr(exc, "pos", None) or len(text)
    fixed, end = _repair(text[start:pos]), max(i + 1, i + text.count("\n", 0, pos))
    try:
        return (json.loads(fixed), end, True) if fixed else (None, end, False)
    except (ValueError, RecursionError):
        return None, end, False


def _repair(text):
    """A JSON object cut off closed after its last complete value; None if not cut, or nested too deep."""
    stack, cut = [], None
    for m in _JSON_TOKEN.finditer(text):
        ch, pos = m.group(), m.start()
        if ch[0] == '"':
            continue  # a string (the last one may be cut)
        if ch in "{[" and len(stack) < 64:
            stack.append("}" if ch == "{" else "]")
            cut = (pos + 1, "".join(reversed(stack)))
        elif ch in "{[" or (ch in "}]" and len(stack) < 2):
            return None  # too deep, or closed: complete (and malformed) or not one object
        elif ch in "}]":
            stack.pop()
            cut = (pos + 1, "".join(reversed(stack)))
        elif ch == ",":
            cut = (pos, "".join(reversed(stack)))
    return text[:cut[0]] + cut[1] if cut else None


def _json_report(obj, cut):
    if isinstance(obj.get("body"), dict):
        return _json_health(obj["body"], cut)
    rep = _report("dcgmi diag", "json", cut)
    if isinstance(obj.get("results"), list) and "name" in obj:  # one test's object, cut out of its report
        rep["tests"].append(_json_test(obj, None))
    for root in obj.get("iterations") if isinstance(obj.get("iterations"), list) else [obj]:
        diag = root.get("DCGM GPU Diagnostic", root.get("DCGM Diagnostic")) if isinstance(root, dict) else None
        if not isinstance(diag, dict):
            continue
        meta, ids = _obj(root.get("metadata")), root.get("GPU Device IDs")
        rep["version"] = rep["version"] or _str(diag.get("version") or root.get("version") or meta.get("version"))
        groups = [_list(_obj(g).get("entities")) for g in _list(root.get("entity_groups")) if _obj(g).get(
            "entity_group") == "GPU"]
        rep["gpus"] = len(ids) if isinstance(ids, list) else len(groups[0]) if groups else None
        if diag.get("runtime_error"):
            rep["errors"].append(_str(diag["runtime_error"]))
        for cat in map(_obj, _list(diag.get("test_categories"))):
            rep["tests"].extend(_json_test(t, _str(cat.get("category"))) for t in _list(cat.get("tests")) if _obj(t))
    return rep


def _json_test(t, category):
    test = _test(_str(t.get("name")), category, None, None, json.dumps(t, sort_keys=True)[:400])
    summary, results = _obj(t.get("test_summary")), [r for r in _list(t.get("results")) if isinstance(r, dict)]
    for res in results + [summary]:  # a summary repeats its results' messages, and has the test's own
        group, eid = (_str(res.get("entity_group") or "GPU"), _int(res["entity_id"])) if "entity_id" in res else (
            "GPU", _int(res.get("gpu_id", res.get("gpu_ids"))))
        if res is not summary:
            test["results"].append({"gpu": eid if group == "GPU" else None, "ent": (group, eid), "lineno": None,
                                    "status": _str(res.get("status")), "line": json.dumps(res, sort_keys=True)[:400]})
        w = res.get("warnings")
        for e in [w] if isinstance(w, str) else w if isinstance(w, list) else ():
            text, code = (e, res.get("error_id")) if isinstance(e, str) else (
                _str(e.get("warning") or e.get("warnings")), e.get("error_id")) if isinstance(e, dict) else ("", None)
            if res is not summary or all(m["text"] != text for m in test["messages"]):
                test["messages"].append({"text": text, "code": code, "ent": (group, eid) if eid is not None else None,
                                         "info": False, "pieces": []})
    test["status"] = _worst([r["status"] for r in test["results"]] + [_str(summary.get("status"))])
    return test


def _json_health(body, cut):
    rep = _report("dcgmi health", "json", cut)
    rep["overall"] = _str(_obj(body.get("Overall Health")).get("value"))
    for group, node in body.items():
        for eid, ent in _obj(_obj(node).get("children")).items():
            for system, sn in _obj(_obj(_obj(_obj(ent).get("children")).get("Errors")).get("children")).items():
                sn = _obj(sn)
                text = " ".join(_str(p) for p in _list(sn.get("overflow")))
                rep["tests"].append(_incident(group, _int(eid), system, _str(sn.get("value")), text, None,
                                              json.dumps({system: sn}, sort_keys=True)[:400]))
    return rep


def _text_reports(lines, raw, taken):
    reports, rep = [], None
    for i, line in enumerate(lines):
        sec = _SECTION.match(line.strip()) if i not in taken else None
        cells = _cells(line) if i not in taken and not sec else None
        if not sec and cells is None:
            continue
        name, piece = cells or ("", "")
        info, new = piece.strip(), None
        head = name == "Health Monitor Report" or (info == "Result" and name == "Diagnostic")
        if head or (sec and (rep is None or rep["tool"] != "dcgmi diag")) or (rep is None and (name or info)):
            health = name == "Health Monitor Report" or (not head and not sec and name.startswith(("->", "Overall H")))
            rep = _report("dcgmi health" if health else "dcgmi diag", "text", False)
            reports.append(rep)
        if rep is None or head:
            continue  # a header row
        if sec:
            rep["section"] = sec.group("name")
        elif rep["tool"] == "dcgmi diag":
            _diag_row(rep, name, piece[:45], info, i + 1, raw[i])  # a message's piece: its first 45 columns
        else:
            _health_row(rep, name, info, i + 1, raw[i])
    return [r for r in reports if r["tests"] or r["overall"] or r["meta"]]


def _cells(line):
    """(name cell, value cell as printed, without the space and bar around it) of a box row, or None."""
    s = line.lstrip(" \t")
    if not s.startswith("|") or s[1:2] in ("-", "="):
        return None
    bar = s.find("|", 1)
    rest = s[bar + 1:] if bar > 0 else ""
    rest = rest[1:] if rest[:1] == " " else rest
    r = rest.rstrip()
    return s[1:bar if bar > 0 else None].strip(), rest[:len(r) - 1] if r.endswith("|") else rest


def _diag_row(rep, name, piece, info, lineno, line):
    test, msg, lab = rep["test"], rep["msg"], _LABEL.match(name)
    st, en = _STATUS.match(info), _ENTITY.match(info)
    if lab:
        if test is None:  # an excerpt that starts at a message: its test is not shown
            test = rep["test"] = _test("", rep["section"], "Fail" if lab.group("kind") == "Error" else "Warn",
                                       lineno, line)
            rep["tests"].append(test)
        rep["msg"] = {"text": "", "code": None, "ent": (lab.group("grp"), int(lab.group("id"))) if lab.group("id")
                      else None, "info": lab.group("kind") == "Info", "pieces": [piece]}
        test["messages"].append(rep["msg"])
    elif not name and test is not None and en:
        test["results"].append({"gpu": int(en.group("id")) if en.group("grp") == "GPU" else None, "lineno": lineno,
                                "ent": (en.group("grp"), int(en.group("id"))), "status": en.group("st"), "line": line})
        rep["msg"] = None
    elif not name and test is not None and st and msg is None:
        _add_status(test, st, lineno, line)
    elif not name and msg is not None:
        msg["pieces"].append(piece)
    elif not name:
        return
    elif rep["section"] == "Metadata" or name.endswith(("Detected", "Version")):
        rep["meta"][name], rep["msg"] = info, None
        if name == "DCGM Version":
            rep["version"] = info
        elif name == "GPU Device IDs Detected":
            rep["gpus"] = None if info.endswith("...") else len([x for x in info.split(",") if x.strip()])
    else:
        rep["test"], rep["msg"] = _test(name, rep["section"], None, lineno, line), None
        rep["tests"].append(rep["test"])
        if st:
            _add_status(rep["test"], st, lineno, line)


def _add_status(test, st, lineno, line):
    test["status"] = _worst([test["status"], st.group("st")])
    test["all"] = test["all"] or bool(st.group("all"))
    for gid in (st.group("ids") or "").replace(",", " ").split():
        test["results"].append({"gpu": _int(gid), "ent": ("GPU", _int(gid)), "status": st.group("st"),
                                "lineno": lineno, "line": line})


def _health_row(rep, name, info, lineno, line):
    arrow = name.startswith("->")
    label = name[2:].strip() if arrow else name
    inline = _INLINE.match(label) if arrow and not info else None
    if name == "Overall Health":
        rep["overall"], rep["where"] = info, {"lineno": lineno, "line": line}
    elif arrow and small_int(label) is not None:
        rep["entity"] = small_int(label)
    elif arrow and label != "Errors":
        health, text = (inline.group("h"), inline.group("msg") or "") if inline else (info, "")
        rep["msg"] = _incident(rep["group"], rep["entity"], inline.group("sys") if inline else label, health, text,
                               lineno, line)
        rep["tests"].append(rep["msg"])
    elif not name and info and rep["msg"] is not None:
        rep["msg"]["messages"].append(info)
    elif name and not arrow:
        rep["group"], rep["entity"], rep["msg"] = name, None, None


def _report(tool, fmt, cut):
    return dict(tool=tool, format=fmt, cut=cut, version=None, gpus=None, meta={}, tests=[], errors=[], overall=None,
                where={}, section=None, test=None, msg=None, group="GPU", entity=None)


def _test(name, category, status, lineno, line):
    return {"name": name, "category": category, "status": status, "all": False, "lineno": lineno, "line": line,
            "results": [], "messages": []}


def _incident(group, eid, system, health, text, lineno, line):
    return {"name": system, "category": group, "group": group, "entity": eid, "status": health, "line": line,
            "gpus": [eid] if group == "GPU" and eid is not None else [], "messages": [text] * bool(text),
            "lineno": lineno}


def _text_of(m):
    return _DOUBLE_GPU.sub("", " ".join((m["text"] or "".join(m["pieces"])).split()))


def _gpu_of(m):
    g = _GPU_IN.search(_text_of(m)) if m["ent"] is None else None
    return int(g.group(1)) if g else m["ent"][1] if m["ent"] and m["ent"][0] == "GPU" else None


def _test_findings(rep, test, source):
    by_gpu = {}  # the messages of each GPU they name (None: of none)
    for m in (m for m in test["messages"] if not m["info"]):
        by_gpu.setdefault(_gpu_of(m), []).append(m)
    on_gpus = [r for r in test["results"] if r["gpu"] is not None]
    every = len(on_gpus) >= 2 and all(r["status"] in _BAD for r in on_gpus)
    bad = {}  # one result per GPU (entity)
    for r in (r for r in test["results"] if r["status"] in _BAD):
        bad.setdefault((r["gpu"], r["ent"]), r)
    if not bad and test["status"] in _BAD:  # no per-GPU result: the GPUs its messages name, or the test
        every = every or (test["all"] and rep["gpus"] != 1)
        bad = {g: {"gpu": g, "ent": None, "status": test["status"], "lineno": test["lineno"], "line": test["line"]}
               for g in sorted(g for g in by_gpu if g is not None) or [None]}
    pairs, rest = [], []
    for r in bad.values():
        mine = by_gpu.get(r["gpu"]) or by_gpu.get(None) or [] if r["gpu"] is not None else [
            m for ms in by_gpu.values() for m in ms if r["ent"] is not None and m["ent"] == r["ent"]] or [
            m for ms in by_gpu.values() for m in ms]
        c = _classify(mine, test["name"])
        sev = _severity(r["status"], c["severity"])
        (pairs if not every or (c["category"] == "gpu_hardware" and sev == "critical") else rest).append((r, c, sev))
    out = [_make(c, sev, _say(test, r, c), r, r["gpu"], source) for r, c, sev in pairs]
    if rest:  # failed on every GPU: one finding for the node
        r, c, sev = max(rest, key=lambda p: _weight(dict(p[1], severity=p[2])))
        if c["category"] == "gpu_hardware":
            c, sev = dict(c, kind="logged_error", category="unknown"), "warning"
        where = {"lineno": test["lineno"], "line": test["line"]} if test["lineno"] else r
        out.append(_make(c, sev, _say(test, dict(r, gpu=None, ent=None), c, every=True), where, None, source))
    return out


def _say(test, r, c, every=False):
    ent = r.get("ent")
    where = (" on every GPU" if every else " on GPU %d" % r["gpu"] if r["gpu"] is not None else
             " on %s %s" % ent if ent and ent[1] is not None else "")
    text = "dcgmi diag: %s %s%s" % (test["name"] or "a %s check" % (test["category"] or "diagnostic"),
                                    "failed" if r["status"] == "Fail" else "warned", where)
    return text + _tail(c) + (": a cause the GPUs share (the node, its configuration or what the test expects of "
                              "it), not one GPU's fault" if every else "")


def _tail(c):
    return (": " + c["text"][:300] if c.get("text") else "") + (" (%s)" % c["code"] if c.get("code") else "")


def _health_findings(rep, source):
    out = []
    for inc in (i for i in rep["tests"] if i["status"] in ("Warning", "Failure")):
        text = " ".join(" ".join(inc["messages"]).split())
        c = _by_text(text)
        c = dict(c if isinstance(c, dict) else _named(_HEALTH_SYSTEM.get(inc["name"], "gpu_hardware")), text=text)
        who = "%s %s" % (inc["group"], inc["entity"]) if inc["entity"] is not None else inc["group"]
        say = "dcgmi health: the %s watch of %s reports %s%s" % (inc["name"], who, inc["status"], _tail(c))
        out.append(_make(c, "critical" if inc["status"] == "Failure" else "warning", say, inc,
                         inc["entity"] if inc["group"] == "GPU" else None, source))
    if not out and rep["overall"] in ("Warning", "Failure"):
        out.append(_make(_named("unknown"), "warning", "dcgmi health: Overall Health is %s, and no watch says which "
                         "GPU or what" % rep["overall"], rep["where"], None, source))
    return out


def _make(c, severity, message, where, gpu, source):
    """A reading's finding: the table's kind if the taxonomy fixes its rung, else the category's generic one."""
    info = KINDS.get(c["kind"])
    kind = c["kind"] if info and info["rung"] is not None and c["category"] in info["categories"] else \
        BY_CATEGORY[c["category"]]
    return finding(kind, message, evidence=where.get("line") or "",
                   source="%s:%d" % (source, where["lineno"]) if where.get("lineno") else source,
                   gpu=gpu_ref(index=gpu) if gpu is not None else None, severity=severity, category=c["category"],
                   note=c.get("note"), name="DCGM" if kind in BY_CATEGORY.values() else None)


def _classify(msgs, name):
    """The worst reading of a test's messages (by code, else by text), else of its name."""
    best = None
    for m in msgs:
        text = _text_of(m)
        c = _by_code(m["code"])
        c = _by_text(text) if c is None else c
        if isinstance(c, dict) and (best is None or _weight(c) > _weight(best)):
            best = dict(c, text=text)
    if best is None:
        texts = [t for t in map(_text_of, msgs) if t]
        cat = next((c for text in [name] + texts for pattern, c in _NAME_RULES if text and pattern.search(text)),
                   "unknown")
        best = dict(_named(cat), text="; ".join(texts)[:300])
    return best


def _by_code(number):
    """A DCGM_FR_* number's reading (vocab/dcgm.py CODES); vocab.BENIGN for a skip notice; None when unknown."""
    row = vocab.code("dcgm", number) if type(number) is int and number > 0 else None
    return _reading(row, row["name"]) if row else None


def _by_text(text):
    """A message's reading: the DCGM table's row, else an older wording's code; None when unknown."""
    if not text:
        return None
    if not _cache:
        _cache["names"] = {c[2]: c[1] for c in vocab.table("dcgm").module.CODES}
        _cache["legacy"] = [vocab.compile_format(fmt) + (number,) for fmt, number in _LEGACY]
    m = vocab.match_line(text, ("dcgm",))
    if m is not None:
        return _reading(m[1], _cache["names"].get(m[1]["format"]))
    return next((_by_code(n) for frags, gaps, n in _cache["legacy"] if vocab.match_fragments(text, frags, gaps)), None)


def _reading(row, code):
    return vocab.BENIGN if row["kind"] == vocab.BENIGN else {
        "kind": row["kind"], "category": row["category"], "severity": row["severity"], "note": row["meaning"] or None,
        "code": code}


def _named(category):
    return {"kind": BY_CATEGORY[category], "category": category, "severity": "warning", "code": None, "text": "",
            "note": None}


def _weight(c):
    return SEVERITY_RANK[c["severity"]], SUSPICION.get(c["category"], 0)


def _severity(status, severity):
    """A failed test is at least a warning; a warned one at most."""
    low, high = ("warning", "critical") if status == "Fail" else ("info", "warning")
    return low if SEVERITY_RANK[severity] < SEVERITY_RANK[low] else high if severity == "critical" else severity


def _facts(rep, found):
    diag, tests = rep["tool"] == "dcgmi diag", []
    for t in rep["tests"]:
        msgs = [m for m in t["messages"] if not m["info"]] if diag else [" ".join(t["messages"])] * bool(t["messages"])
        gpus = t["gpus"] if not diag else sorted({r["gpu"] for r in t["results"] if r["gpu"] is not None and r[
            "status"] == t["status"]} if t["results"] else {g for g in map(_gpu_of, msgs) if g is not None})
        tests.append({"name": t["name"], "category": t["category"], "status": t["status"], "gpus": gpus,
                      "messages": [_text_of(m) for m in msgs] if diag else msgs})
    overall = rep["overall"] if not diag else "Error" if rep["errors"] else _worst([t["status"] for t in tests])
    healthy = overall in ("Pass", "Healthy") and not rep["cut"] and all(
        SEVERITY_RANK[f["severity"]] < SEVERITY_RANK["warning"] for f in found)
    return {"tool": rep["tool"], "format": rep["format"], "version": rep["version"] or None, "gpus": rep["gpus"],
            "tests": tests, "overall": overall or None, "healthy": healthy}


def _worst(statuses):
    return max((s for s in statuses if s in _RANK), key=_RANK.get, default=None)


def _unique(findings):
    return list({(f["kind"], f["source"], (f["gpu"] or {}).get("index"), f["message"]): f for f in findings}.values())


def _obj(x):
    return x if isinstance(x, dict) else {}


def _list(x):
    return x if isinstance(x, list) else []


def _str(x):
    return x if isinstance(x, str) else "" if x is None else str(x)


def _int(x):
    return x if type(x) is int else small_int(_str(x).strip())
