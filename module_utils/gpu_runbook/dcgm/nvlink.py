# SPDX-License-Identifier: Apache-2.0
"""``dcgmi nvlink --link-status`` (``-s``): DCGM's view of every NVLink of every GPU and NVSwitch.

dcgmi/Nvlink.cpp prints a box headed "NvLink Link Status", then ``GPUs:`` and per GPU a line
``gpuId <n>:`` and a line of one letter per link, then ``NvSwitches:`` (``physicalId <n>:``
and its links, or "No NvSwitches found."), then its key: ``Up=U, Down=D, Disabled=X, Not
Supported=_``. A link that is Down on a GPU is what ``nvidia-smi nvlink --status`` shows as
inactive (nvlink_inactive); Disabled and Not Supported links are not faults.

``dcgmi nvlink --errors -g N`` (``-e``): a box headed "NVLINK Error Counts" and "GPU <n>", then per
link a row "Link <n>" and its counters, "-> <name>" and the count (Nvlink.cpp: CRC FLIT Error, CRC Data
Error, Replay Error, Recovery Error, ... Tx Discards; the BER rows are rates, not counts). A count
above zero is nvlink_errors; every count zero is a reading of sound links."""

import re

from ..findings import finding, gpu_ref

HEADER = re.compile(r"^[ \t]{0,8}\|[ \t]{1,4}NvLink Link Status[ \t]{1,4}\|")
# the lines of the block after its box (what belongs() lets through)
LINE = re.compile(r"^(?:GPUs:|NvSwitches:|(?:gpuId|physicalId|nvSwitchId|switchId) ?\d{1,6}:|(?:[UDX_] ?){1,64}|"
                  r"No NvSwitches found\.|Key: Up=U[^\n]{0,80})$")
_ENTITY = re.compile(r"^(?P<what>gpuId|physicalId|nvSwitchId|switchId) ?(?P<id>\d{1,6}):$")
_LINKS = re.compile(r"^(?:[UDX_] ?){1,64}$")


def link_status(lines, raw, source):
    """([report], {line indexes read}) of the link-status blocks in ``lines`` (prefixes removed;
    ``raw``: as written, for evidence)."""
    reports, taken, rep, entity = [], set(), None, None
    for i, line in enumerate(lines):
        s = line.strip()
        if HEADER.match(line):
            rep = {"gpus": {}, "switches": {}, "lines": {}}
            reports.append(rep)
            taken.add(i)
            entity = None
            continue
        if rep is None:
            continue
        if s and not s.startswith(("+", "|")) and not LINE.match(s):
            rep, entity = None, None  # the block ended
            continue
        taken.add(i)
        m = _ENTITY.match(s)
        if m:
            entity = ("gpus" if m.group("what") == "gpuId" else "switches", int(m.group("id")))
        elif entity is not None and _LINKS.match(s):
            rep[entity[0]][entity[1]] = s.split() if " " in s else list(s)
            rep["lines"][entity] = (i + 1, raw[i])
            entity = None
    return [r for r in reports if r["gpus"] or r["switches"]], taken


ERRORS_HEADER = re.compile(r"^[ \t]{0,8}\|[ \t]{1,4}NVLINK Error Counts[ \t]{0,80}\|")
_ERR_GPU = re.compile(r"^\|[ \t]{1,4}GPU (\d{1,6})[ \t]{0,80}\|$")
_ERR_LINK = re.compile(r"^\|[ \t]{1,4}Link (\d{1,4})[ \t]{0,40}\|")
_ERR_ROW = re.compile(r"^\|[ \t]{1,4}-> (?P<name>[A-Za-z][A-Za-z ]{1,40}?)[ \t]{0,40}\|[ \t]{1,4}(?P<val>\S{1,40})")


def error_counts(lines, raw, source):
    """([report], {line indexes read}) of the error-count boxes: report {"gpu", "links": {link:
    {counter: count}}, "bad": [(link, counter, count, lineno, line)]}."""
    reports, taken, rep, link = [], set(), None, None
    for i, line in enumerate(lines):
        s = line.strip()
        if ERRORS_HEADER.match(line):
            rep, link = {"gpu": None, "links": {}, "bad": []}, None
            reports.append(rep)
            taken.add(i)
            continue
        if rep is None:
            continue
        if s and not s.startswith(("+", "|")):
            rep = None
            continue
        taken.add(i)
        m = _ERR_GPU.match(s)
        if m and rep["gpu"] is None:
            rep["gpu"] = int(m.group(1))
            continue
        m = _ERR_LINK.match(s)
        if m:
            link = int(m.group(1))
            rep["links"].setdefault(link, {})
            continue
        m = _ERR_ROW.match(s)
        if m and link is not None and "BER" not in m.group("name"):
            val = m.group("val")
            if val.isdigit():
                rep["links"][link][m.group("name")] = int(val)
                if int(val) > 0:
                    rep["bad"].append((link, m.group("name"), int(val), i + 1, raw[i]))
    return [r for r in reports if r["links"]], taken


def error_findings_of(rep, source):
    """NVLink error counters above zero on a GPU: nvlink_errors (one finding per GPU)."""
    if not rep["bad"]:
        return []
    bad = rep["bad"]
    what = "; ".join("link %d %s %d" % (link, name, n) for link, name, n, _l, _r in bad[:8])
    return [finding("nvlink_errors", "dcgmi nvlink: GPU %s NVLink error counters are not zero: %s%s" % (
        rep["gpu"] if rep["gpu"] is not None else "?", what, " ..." if len(bad) > 8 else ""),
        evidence=bad[0][4].strip()[:300], source="%s:%d" % (source, bad[0][3]),
        gpu=gpu_ref(None, rep["gpu"]) if rep["gpu"] is not None else None)]


def error_facts_of(rep, found):
    return {"tool": "dcgmi nvlink", "format": "text", "version": None, "gpus": 1, "tests": [],
            "nvlink_errors": {"gpu": rep["gpu"], "links": {str(k): v for k, v in rep["links"].items()}},
            "overall": "Fail" if found else "Pass", "healthy": not found}


def findings_of(rep, source):
    """A GPU with links Down: nvlink_inactive (what nvidia-smi calls an inactive link)."""
    out = []
    for gpu, links in sorted(rep["gpus"].items()):
        down = [n for n, state in enumerate(links) if state == "D"]
        if not down:
            continue
        lineno, line = rep["lines"][("gpus", gpu)]
        out.append(finding(
            "nvlink_inactive", "dcgmi nvlink: GPU %d has %d of its %d NVLink links Down (%s)" % (
                gpu, len(down), sum(1 for s in links if s != "_"), ", ".join(str(n) for n in down[:18])),
            evidence=line.strip()[:300], source="%s:%d" % (source, lineno), gpu=gpu_ref(None, gpu)))
    return out


def facts_of(rep, found):
    return {"tool": "dcgmi nvlink", "format": "text", "version": None, "gpus": len(rep["gpus"]),
            "links": {"gpus": {str(k): "".join(v) for k, v in rep["gpus"].items()},
                      "switches": {str(k): "".join(v) for k, v in rep["switches"].items()}},
            "tests": [], "overall": "Fail" if found else "Pass", "healthy": not found}


def read_nvlink(lines, raw, source):
    """(findings, facts per report, {line indexes read}) of the link-status and error-count boxes."""
    findings, facts = [], []
    links, read = link_status(lines, raw, source)
    for rep in links:
        found = findings_of(rep, source)
        findings.extend(found)
        facts.append(facts_of(rep, found))
    counts, counted = error_counts(lines, raw, source)
    for rep in counts:
        found = error_findings_of(rep, source)
        findings.extend(found)
        facts.append(error_facts_of(rep, found))
    return findings, facts, read | counted
