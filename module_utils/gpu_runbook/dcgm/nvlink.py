# SPDX-License-Identifier: Apache-2.0
"""``dcgmi nvlink --link-status`` (``-s``): DCGM's view of every NVLink of every GPU and NVSwitch.

dcgmi/Nvlink.cpp prints a box headed "NvLink Link Status", then ``GPUs:`` and per GPU a line
``gpuId <n>:`` and a line of one letter per link, then ``NvSwitches:`` (``physicalId <n>:``
and its links, or "No NvSwitches found."), then its key: ``Up=U, Down=D, Disabled=X, Not
Supported=_``. A link that is Down on a GPU is what ``nvidia-smi nvlink --status`` shows as
inactive (nvlink_inactive); Disabled and Not Supported links are not faults."""

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
