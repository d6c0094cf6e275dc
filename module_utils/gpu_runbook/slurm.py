"""Slurm outputs -> job facts. Pure: `scontrol show job [-o]`, `sacct -P`, hostlists.

Slurm prints times without a zone, in the local time of the process that printed them (the
controller running scontrol/sacct): callers pass that zone as ``tz`` and get the start and
end back as ISO 8601 with the offset, so a node in another zone compares them correctly."""

import re

from .timeutil import parse_time

_KV_RE = re.compile(r"(?:(?<=\s)|^)([A-Za-z][\w:/]*)=(.*?)(?=\s+[A-Za-z][\w:/]*=|\s*$)", re.S)
_RANGE_RE = re.compile(r"^(\d+)(?:-(\d+))?$")


def expand_hostlist(expr):
    """'gpu-r3-n[01-03,07],ctl' -> ['gpu-r3-n01', 'gpu-r3-n02', 'gpu-r3-n03', 'gpu-r3-n07', 'ctl']."""
    if not expr or expr in ("(null)", "None_assigned"):
        return []
    out, depth, cur = [], 0, ""
    for ch in expr:  # split on commas outside brackets
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    hosts = []
    for item in (x.strip() for x in out):
        if not item:
            continue
        hosts.extend(_expand_one(item))
    return hosts


def _expand_one(item):
    m = re.search(r"\[([^\]]*)\]", item)
    if not m:
        return [item]
    head, tail = item[:m.start()], item[m.end():]
    names = []
    for part in m.group(1).split(","):
        r = _RANGE_RE.match(part.strip())
        if not r:
            return [item]  # not a hostlist we understand: keep it verbatim
        lo, hi = r.group(1), r.group(2) or r.group(1)
        width = len(lo)
        for n in range(int(lo), int(hi) + 1):
            names.extend(_expand_one("%s%0*d%s" % (head, width, n, tail)))
    return names


def parse_scontrol_show_job(text, tz=None):
    """`scontrol show job [-o] ID` -> {job_id, name, state, nodes, start, end, stdout, stderr, workdir, ...}.
    Unknown or empty input -> {} (the caller reports 'job not found')."""
    if not text or "JobId=" not in text:
        return {}
    kv = {}
    for m in _KV_RE.finditer(text.replace("\n", " ")):
        kv.setdefault(m.group(1), m.group(2).strip())
    return _job(kv.get("JobId"), kv.get("JobName"), kv.get("JobState"), kv.get("NodeList"),
                kv.get("StartTime"), kv.get("EndTime"), kv.get("StdOut"), kv.get("StdErr"),
                kv.get("WorkDir"), kv.get("NumNodes"), tz)


def parse_sacct(text, job_id=None, tz=None):
    """`sacct -j ID -X -n -P -o JobID,JobName,State,Start,End,NodeList,WorkDir` -> same dict shape."""
    for line in (text or "").splitlines():
        cols = line.strip().split("|")
        if len(cols) < 7 or (job_id and cols[0].split(".")[0] != str(job_id)):
            continue
        return _job(cols[0], cols[1], cols[2].split()[0] if cols[2] else None, cols[5], cols[3], cols[4],
                    None, None, cols[6], None, tz)
    return {}


def _with_zone(value, tz):
    """Slurm's zoneless time -> ISO 8601 with the printer's offset (kept verbatim if odd)."""
    if value is None or tz is None:
        return value
    try:
        return parse_time(value, tz).isoformat()
    except (ValueError, OverflowError):
        return value


def _job(job_id, name, state, nodelist, start, end, stdout, stderr, workdir, num_nodes, tz=None):
    def clean(v):
        return None if v in (None, "", "(null)", "Unknown", "None") else v
    nodes = expand_hostlist(clean(nodelist) or "")
    return {
        "job_id": clean(job_id), "name": clean(name), "state": clean(state), "nodelist": clean(nodelist),
        "nodes": nodes, "num_nodes": int(num_nodes.split("-")[0]) if num_nodes and num_nodes.split("-")[0].isdigit() else len(nodes),
        "start": _with_zone(clean(start), tz), "end": _with_zone(clean(end), tz), "stdout": clean(stdout), "stderr": clean(stderr),
        "workdir": clean(workdir),
    }
