# SPDX-License-Identifier: Apache-2.0
"""Slurm outputs -> job facts. Pure: `scontrol show job [-o]`, `sacct -P`, hostlists.

Slurm prints times without a zone, in the local time of the process that printed them (the
controller running scontrol/sacct): callers pass that zone as ``tz`` and get the start and
end back as ISO 8601 with the offset, so a node in another zone compares them correctly."""

import itertools
import re

import ipaddress

from .findings import small_int
from .slurm_gres import gres_gpu_count, gres_names  # noqa: F401 (gres_names: the inventory plugin reads it here)
from .timeutil import parse_time
from .validate import check, shown

_KV_RE = re.compile(r"(?:(?<=\s)|^)([A-Za-z][\w:/]*)=(.*?)(?=\s+[A-Za-z][\w:/]*=|\s*$)", re.S)
_RANGE_RE = re.compile(r"^(\d+)(?:-(\d+))?$")


MAX_NODES = 65536  # names one hostlist may expand to: 'n[1-99999999]' must not cost gigabytes
_MAX_ITEM = 1024   # a longer comma-separated item is no hostlist: kept verbatim


def expand_hostlist(expr, limit=MAX_NODES):
    """'gpu-r3-n[01-03,07],ctl' -> ['gpu-r3-n01', 'gpu-r3-n02', 'gpu-r3-n03', 'gpu-r3-n07', 'ctl'];
    at most ``limit`` names."""
    if not expr or expr in ("(null)", "None_assigned"):
        return []
    out, depth, cur = [], 0, []
    for ch in expr:  # split on commas outside brackets
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    hosts = []
    for item in (x.strip() for x in out):
        if item:
            hosts.extend(_expand_one(item, limit - len(hosts)))
        if len(hosts) >= limit:
            break
    return hosts[:limit]


def _expand_one(item, limit):
    """One item's names, bracket by bracket (no recursion: 'n[1][1]...' may have thousands),
    lazily, so a huge range or product stops at ``limit``."""
    if len(item) > _MAX_ITEM:
        return [item]
    pieces, pos = [], 0
    for m in re.finditer(r"\[([^\][]*)\]", item):
        numbers = []
        for part in m.group(1).split(","):
            r = _RANGE_RE.match(part.strip())
            if not r or len(r.group(0)) > 40:
                return [item]  # not a hostlist we understand: keep it verbatim
            lo, hi = r.group(1), r.group(2) or r.group(1)
            numbers.append((int(lo), int(hi), len(lo)))
        pieces.append((item[pos:m.start()], numbers))
        pos = m.end()
    names = [""]
    for lit, numbers in pieces:
        names = list(itertools.islice((name + lit + "%0*d" % (width, n) for name in names
                                       for lo, hi, width in numbers for n in range(lo, hi + 1)), limit))
    return [name + item[pos:] for name in names]


def parse_scontrol_show_job(text, tz=None):
    """`scontrol show job [-o] ID` -> {job_id, name, state, nodes, start, end, stdout, stderr, workdir, ...}.
    Unknown or empty input -> {} (the caller reports 'job not found')."""
    if not text or "JobId=" not in text:
        return {}
    kv = {}
    for m in _KV_RE.finditer(text.replace("\n", " ")):
        kv.setdefault(m.group(1), m.group(2).strip())
    job = _job(kv.get("JobId"), kv.get("JobName"), kv.get("JobState"), kv.get("NodeList"),
               kv.get("StartTime"), kv.get("EndTime"), kv.get("StdOut"), kv.get("StdErr"),
               kv.get("WorkDir"), kv.get("NumNodes"), tz)
    job["user"] = kv.get("UserId") or None  # 'alice(1001)': the job's StdOut/StdErr are read with its rights
    return job


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


def _count(value, default):
    """'5' or '4-8' (a range) -> 5 / 4; ``default`` for anything else ('²', 5000 digits)."""
    return small_int((value or "").split("-")[0], default)


def _job(job_id, name, state, nodelist, start, end, stdout, stderr, workdir, num_nodes, tz=None):
    def clean(v):
        return None if v in (None, "", "(null)", "Unknown", "None") else v
    nodes = expand_hostlist(clean(nodelist) or "")
    return {
        "job_id": clean(job_id), "name": clean(name), "state": clean(state), "nodelist": clean(nodelist),
        "nodes": nodes, "num_nodes": _count(num_nodes, len(nodes)),
        "start": _with_zone(clean(start), tz), "end": _with_zone(clean(end), tz), "stdout": clean(stdout), "stderr": clean(stderr),
        "workdir": clean(workdir),
    }


# ------------------------------------------------------------------ nodes: `scontrol show node`
# State is `BASE[+FLAG...]` (21.08+: `IDLE+DRAIN+NOT_RESPONDING`); before 21.08 a not-responding
# node was `DOWN*+DRAIN`. sinfo's one-character suffixes are read too (`drain*`, `idle~`).
STATE_SUFFIX = {"*": "NOT_RESPONDING", "~": "POWERED_DOWN", "#": "POWERING_UP", "%": "POWERING_DOWN",
                 "!": "POWER_DOWN", "$": "MAINTENANCE", "@": "REBOOT_REQUESTED", "^": "REBOOT_ISSUED",
                 "-": "PLANNED"}
# sinfo's compound names -> (base, flag)
_STATE_ALIAS = {"DRAINED": ("IDLE", "DRAIN"), "DRAINING": ("ALLOCATED", "DRAIN"), "DRAIN": ("IDLE", "DRAIN"),
                "DRNG": ("ALLOCATED", "DRAIN"), "ALLOC": ("ALLOCATED", None), "MIX": ("MIXED", None)}
_BUSY_BASES = ("ALLOCATED", "MIXED")
# Slurm prints `Reason=<text> [<user>@<time>]` (node_info.c); the time in SLURM_TIME_FORMAT
# (ISO by default, callers set SLURM_TIME_FORMAT=standard to be sure of it).
_REASON_KEY_RE = re.compile(r"(?:^|\s)Reason=")
_REASON_TAIL_RE = re.compile(r"(?<!\s)\s*\[([^\s@\[\]]+)@(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\](?=\s*$|\s+[A-Z][\w:/]*=)", re.M)


def parse_node_state(state):
    """'DOWN*+DRAIN' -> ('DOWN', ['NOT_RESPONDING', 'DRAIN']); 'IDLE+DRAIN' -> ('IDLE', ['DRAIN'])."""
    parts = [p for p in (state or "").strip().upper().split("+") if p]
    if not parts:
        return None, []
    flags = []
    base = parts[0]
    while base and base[-1] in STATE_SUFFIX:
        flags.append(STATE_SUFFIX[base[-1]])
        base = base[:-1]
    if base in _STATE_ALIAS:
        base, flag = _STATE_ALIAS[base]
        if flag:
            flags.append(flag)
    for p in parts[1:]:
        while p and p[-1] in STATE_SUFFIX:
            flags.append(STATE_SUFFIX[p[-1]])
            p = p[:-1]
        if p and p not in flags:
            flags.append(p)
    return base, flags


def drain_status(base, flags):
    """'DRAINED' (drain set, no jobs left), 'DRAINING' (drain set, jobs still run) or None (not
    draining), as Slurm's IS_NODE_DRAINED / IS_NODE_DRAINING decide it."""
    if "DRAIN" not in flags:
        return None
    if base in _BUSY_BASES or "COMPLETING" in flags:
        return "DRAINING"
    return "DRAINED"


def _split_node_records(text):
    records, cur = [], []
    for line in (text or "").splitlines():
        if line.startswith("NodeName="):
            if cur:
                records.append("\n".join(cur))
            cur = [line]
        elif cur:
            cur.append(line)
    if cur:
        records.append("\n".join(cur))
    return records


def _split_reason(record):
    """record -> (record without the reason, reason text, user, time). The reason is free text
    (spaces, brackets, even 'x=y'): it runs from `Reason=` to its `[user@time]` tail, or to the
    end of its line when Slurm printed no tail."""
    m = _REASON_KEY_RE.search(record)
    if not m:
        return record, None, None, None
    head, rest = record[:m.start()], record[m.end():]
    tail = _REASON_TAIL_RE.search(rest)
    if tail:
        text, user, when, after = rest[:tail.start()], tail.group(1), tail.group(2), rest[tail.end():]
    else:
        nl = rest.find("\n")
        text, user, when, after = (rest, None, None, "") if nl < 0 else (rest[:nl], None, None, rest[nl:])
    return head + " " + after, text.strip() or None, user, when


def _parse_node_record(record):
    rest, reason, user, when = _split_reason(record)
    kv = {}
    for m in _KV_RE.finditer(rest.replace("\n", " ")):
        kv.setdefault(m.group(1), m.group(2).strip())
    base, flags = parse_node_state(kv.get("State"))
    alloc = kv.get("CPUAlloc", "")
    return {
        "name": kv.get("NodeName"), "state": kv.get("State"), "base_state": base, "flags": flags,
        "drain": drain_status(base, flags), "drained": drain_status(base, flags) == "DRAINED",
        "reason": reason, "reason_user": user, "reason_time": when,
        "cpu_alloc": small_int(alloc), "alloc_tres": kv.get("AllocTRES") or None,
        "partitions": [p for p in (kv.get("Partitions") or "").split(",") if p],
        "version": kv.get("Version"), "node_addr": kv.get("NodeAddr"),
        "boot_time": None if kv.get("BootTime") in (None, "", "None", "(null)") else kv.get("BootTime"),
        # Slurm < 17.02 printed one `Features=`; later ones Active (in force now) and Available
        "features": _names(kv.get("ActiveFeatures") or kv.get("Features") or kv.get("AvailableFeatures")),
        "gres": None if kv.get("Gres") in (None, "", "(null)") else kv.get("Gres"),
        "gpus": gres_gpu_count(kv.get("Gres")),
    }


def _names(value):
    return [] if value in (None, "(null)") else [f for f in value.split(",") if f]


def node_name_problem(name, option="node name"):
    """None when ``name`` may be a node's name (the rule slurm_node applies: validate.check's
    "node", which refuses Slurm's keywords such as ALL), else why not."""
    return check("node", option, name)


def node_addr_problem(addr, option="NodeAddr"):
    """None when ``addr`` (a NodeAddr: what SSH connects to) is a host name or an IP address,
    else why not: '-oProxyCommand=...' would be read by ssh as an option."""
    if isinstance(addr, str) and ":" in addr:
        try:
            ipaddress.ip_address(addr)
            return None
        except ValueError:
            return "%s %s is not a host name or an IP address" % (option, shown(addr))
    return check("node", option, addr)


def parse_scontrol_show_topology(text):
    """`scontrol show topology` -> {node: leaf switch}: each node under the lowest-level switch
    that lists it (Level=0 is the leaf). Nothing (topology/flat, an error text) -> {}."""
    best = {}
    for line in (text or "").splitlines():
        kv = dict((m.group(1), m.group(2).strip()) for m in _KV_RE.finditer(line.strip()))
        switch, nodes = kv.get("SwitchName"), kv.get("Nodes")
        if not switch or not nodes or check("node", "switch", switch):
            continue
        level = small_int(kv.get("Level"), 0)
        for node in expand_hostlist(nodes):
            if node not in best or level < best[node][0]:
                best[node] = (level, switch)
    return dict((node, switch) for node, (_level, switch) in best.items())


def parse_scontrol_show_nodes(text):
    """`scontrol show node [-o]` (one or many nodes, one-liner or multi-line) -> [node dict]."""
    return [_parse_node_record(r) for r in _split_node_records(text)]


def parse_scontrol_show_node(text):
    """`scontrol show node [-o] NAME` -> {name, state, base_state, flags, drain, drained, reason,
    reason_user, reason_time, cpu_alloc, alloc_tres, partitions, version, node_addr, features, gres, gpus}; {} when the
    text holds no node ('Node x not found', empty)."""
    nodes = parse_scontrol_show_nodes(text)
    return nodes[0] if nodes else {}


# ------------------------------------------------------------------ drain ownership (pure)
# Slurm keeps one reason per node and overwrites its user and time on ANY reason change, so
# "ours" is our own record of the three as read back right after our drain: a node is ours
# only while reason, user and time all still match it.
REASON_PREFIX = "gpu-runbook: "
MAX_REASON = 512
_OUT_OF_SERVICE = ("DRAIN", "FAIL", "MAINTENANCE")


def drain_reason(reason, incident=None):
    """'Xid 79 on GPU 3', 'INC-7' -> 'gpu-runbook: INC-7: Xid 79 on GPU 3' (one line). Raises
    ValueError with the reason why when it cannot be a Slurm reason."""
    text = " ".join(str(reason or "").split())
    if not text:
        raise ValueError("a reason is required to drain a node (Slurm refuses a drain without one)")
    body = text[len(REASON_PREFIX.strip()):].strip() if text.startswith(REASON_PREFIX.strip()) else text
    inc = " ".join(str(incident or "").split())
    if inc and not body.startswith(inc + ":"):
        body = "%s: %s" % (inc, body)
    out = REASON_PREFIX + body
    if len(out) > MAX_REASON:
        raise ValueError("reason is %d characters; keep it under %d (one line of evidence)" % (len(out), MAX_REASON))
    return out


def out_of_service(node):
    """Is the node drained, down or failed by anyone, or does it carry a reason?"""
    return bool(node.get("reason")) or node.get("base_state") in ("DOWN", "FUTURE") or \
        any(f in node.get("flags", ()) for f in _OUT_OF_SERVICE)


def ownership_record(node, incident=None, recorded_at=None):
    """What we store right after our drain, as read back from Slurm."""
    return {"node": node.get("name"), "reason": node.get("reason"), "reason_set_by_user": node.get("reason_user"),
            "reason_changed_at": node.get("reason_time"), "incident": incident, "state": node.get("state"),
            "recorded_at": recorded_at}


def owns(record, node):
    """(True, why) when ``record`` (ours) still describes the node's reason exactly; else (False, why)."""
    if not record:
        return False, "no drain record of ours for this node"
    now = (node.get("name"), node.get("reason"), node.get("reason_user"), node.get("reason_time"))
    then = (record.get("node"), record.get("reason"), record.get("reason_set_by_user"), record.get("reason_changed_at"))
    if now != then:
        return False, ("its reason changed after our drain (we set %r by %s at %s)"
                       % (then[1], then[2], then[3]))
    if "DRAIN" not in node.get("flags", ()):
        return False, "it is not drained any more"
    return True, "drained by us at %s (reason unchanged)" % then[3]


def _foreign(node, why):
    who = " [%s@%s]" % (node.get("reason_user"), node.get("reason_time")) if node.get("reason_time") else ""
    return "%s is %s by someone else: reason %r%s is not ours (%s)" % (
        node.get("name"), node.get("state"), node.get("reason"), who, why)


# A reboot Slurm already has in hand: asked for (`scontrol reboot`), sent to slurmd, or the
# node is booting (older Slurm prints REBOOT for the requested one).
REBOOT_FLAGS = ("REBOOT_REQUESTED", "REBOOT_ISSUED", "REBOOT", "POWERING_UP")


def reboot_flag(node):
    """The reboot in progress on the node ('REBOOT_REQUESTED', 'REBOOT_ISSUED', ...) or None."""
    return next((f for f in node.get("flags", ()) if f in REBOOT_FLAGS), None)


def plan_node(state, node, record, want_reason=None):
    """What to do with a node, from its state as read and our record: {action: none|drain|
    re-reason|resume|reboot, owned, msg}. Never plans a change to a node someone else took out."""
    owned, why = owns(record, node)
    if state == "present":
        return {"action": "none", "owned": owned, "msg": why}
    if state == "reboot_requested":
        return _plan_reboot(node, owned, why)
    if state == "drained":
        if owned and node.get("reason") == want_reason:
            return {"action": "none", "owned": True, "msg": "already drained by us with this reason"}
        if owned:
            return {"action": "re-reason", "owned": True, "msg": "drained by us; reason updated"}
        if out_of_service(node):
            return {"action": "none", "owned": False, "msg": "left alone: " + _foreign(node, why)}
        return {"action": "drain", "owned": True, "msg": "drained"}
    if state == "resumed":
        if owned and (node.get("base_state") == "DOWN" or "FAIL" in node.get("flags", ())):
            return {"action": "none", "owned": True,
                    "msg": "left drained: %s is %s, which we never set; a person should look" % (node.get("name"), node.get("state"))}
        if owned:
            return {"action": "resume", "owned": True, "msg": "resumed our drain"}
        if out_of_service(node):
            return {"action": "none", "owned": False, "msg": "left drained: " + _foreign(node, why)}
        return {"action": "none", "owned": False, "msg": "%s is in service already" % node.get("name")}
    raise ValueError("unknown state %r" % state)


def _plan_reboot(node, owned, why):
    """`scontrol reboot` (no ASAP, no nextstate: the DRAIN survives the boot) only on our own
    drain, once."""
    flag = reboot_flag(node)
    if flag:
        return {"action": "none", "owned": owned,
                "msg": "%s is %s: a reboot is already under way; not asked again" % (node.get("name"), node.get("state"))}
    if owned:
        return {"action": "reboot", "owned": True, "msg": "reboot requested (the node stays drained through it)"}
    if out_of_service(node):
        return {"action": "none", "owned": False, "msg": "no reboot: " + _foreign(node, why)}
    return {"action": "none", "owned": False,
            "msg": "no reboot: %s is not drained by us (%s); drain it first" % (node.get("name"), why)}


# What slurmctld appends to a node's reason while it reboots the node (slurmctld/node_mgr.c,
# 22.05-25.05): the reason is still ours through the reboot when it is our reason plus these.
REBOOT_SUFFIXES = ("reboot issued", "reboot complete", "reboot timed out")


def reboot_progress(record, node):
    """Where our reboot of ``node`` stands, from our record's ``reboot`` entry and the node as
    read now -> (stage, words). stage: "foreign" (the reason is no longer ours: someone else took
    the node), "booting" (asked or issued, not back yet), "timed_out" (Slurm gave up: ResumeTimeout),
    "back" (registered again after a new boot, still drained: ours to verify), "in_service" (back
    and not drained: someone resumed it)."""
    asked = (record or {}).get("reboot") or {}
    ours = asked.get("reason") or (record or {}).get("reason") or ""
    reason = node.get("reason") or ""
    tail = reason[len(ours):].strip(" :") if ours and reason.startswith(ours) else None
    if tail is None or (tail and tail not in REBOOT_SUFFIXES):
        return "foreign", "its reason changed during the reboot: %r (ours: %r)" % (reason, ours)
    if tail == "reboot timed out":
        return "timed_out", "Slurm gave up waiting for it to boot (%s: %s)" % (node.get("state"), reason)
    flags = node.get("flags") or []
    booted = node.get("boot_time") and node.get("boot_time") != asked.get("boot_time_before")
    if reboot_flag(node) or "NOT_RESPONDING" in flags or node.get("base_state") in ("DOWN", "UNKNOWN", None) \
            or not booted:
        return "booting", "%s (boot time %s)" % (node.get("state"), node.get("boot_time") or "unknown")
    if "DRAIN" not in flags:
        return "in_service", "it is back but not drained any more (%s)" % node.get("state")
    return "back", "booted at %s, still drained (%s)" % (node.get("boot_time"), node.get("state"))


# What Slurm's clients print when they fail (slurm_errno strings, scontrol's own messages).
_ERROR_KINDS = (
    ("unreachable", ("Unable to contact slurm controller", "Socket timed out", "Zero Bytes were transmitted",
                     "Connection refused", "Could not establish a configuration source")),
    ("denied", ("Invalid user id", "Access/permission denied", "authentication error", "Permission denied",
                "Munge encode failed", "Security violation")),
    ("unknown_node", ("not found", "Invalid node name")),
)


def slurm_error_kind(text):
    """A Slurm client's error text -> 'unknown_node' | 'unreachable' | 'denied' | None."""
    low = (text or "").lower()
    for kind, needles in _ERROR_KINDS:
        if any(n.lower() in low for n in needles):
            return kind
    return None


# ------------------------------------------------------------------ a pasted node's state (pure)
def node_records(text):
    """`scontrol show node` text of one node or many -> [(node name or None, its record text)]."""
    out = []
    for record in _split_node_records(text):
        m = re.match(r"NodeName=(\S+)", record)
        out.append((m.group(1) if m else None, record + "\n"))
    return out


_DOWN_FLAGS = ("NOT_RESPONDING", "FAIL", "FAILING", "POWER_DOWN", "POWERED_DOWN")


def parse_node_findings(text, source="slurm-node.txt"):
    """`scontrol show node` text -> (facts, findings): what Slurm says of the node (one record;
    capture.split_hosts gives each node its own). A node DOWN, FAILed or not responding is a
    node failure; a drain is read by its reason (Slurm's and NHC's words, vocab/); our own drain
    (gpu-runbook: ...) is a note. A node Slurm runs jobs on says nothing wrong: no finding."""
    from .findings import finding
    node = parse_scontrol_show_node(text)
    if not node:
        return {}, []
    name, reason = node.get("name"), node.get("reason")
    facts = {"slurm_node": node}
    said = "Slurm: node %s is %s%s" % (name, node.get("state") or "listed out of service",
                                       " (reason: %s)" % reason if reason else "")
    ev = " ".join(x for x in ("State=%s" % node["state"] if node.get("state") else "",
                              "Reason=%s" % reason if reason else "") if x)
    if node.get("base_state") in ("DOWN", "FAIL", "FAILING") or any(f in node.get("flags") for f in _DOWN_FLAGS):
        return facts, [finding("logged_node_failure", said, name="Slurm", evidence=ev, source=source)]
    if not node.get("drain") and not reason:
        return facts, []
    if reason and reason.startswith(REASON_PREFIX):
        return facts, [finding("logged_error", said + ": drained by gpu-runbook", severity="info", name="Slurm",
                               evidence=ev, source=source)]
    return facts, [reason_finding(said, ev, node, source)]


def reason_finding(said, ev, node, source, name="Slurm"):
    """A drained node's reason, read with Slurm's and NHC's vocabularies (as scontrol prints it:
    'Reason=Kill task failed [root@2026-12-02T07:00:00]'). ``name``: the scheduler that holds it
    (PBS's comment on an offline node is read the same way: pbsnodes.py)."""
    from .findings import finding
    from .taxonomy import KINDS
    from .taxonomy.kinds_vocab import BY_CATEGORY
    from .vocab import BENIGN, match_line
    reason = node.get("reason") or ""
    tail = " [%s@%s]" % (node["reason_user"], node["reason_time"]) if node.get("reason_user") else ""
    m = match_line("Reason=%s%s" % (reason, tail), ("slurm", "nhc")) or match_line(reason, ("nhc", "slurm"))
    if m is None or m[1]["kind"] == BENIGN:
        return _xid_reason(said, ev, reason, source, name) or finding("logged_error", said, name=name, evidence=ev,
                                                                        source=source)
    row = m[1]
    kind = row["kind"] if row["kind"] in KINDS and KINDS[row["kind"]]["rung"] is not None else \
        BY_CATEGORY.get(row["category"], "logged_error")
    return finding(kind, "%s: %s" % (said, row["meaning"] or row["format"]), category=row["category"],
                   severity=row["severity"], name=m[0].emitter, evidence=ev, source=source)


_XID_NAMED = re.compile(r"\bXid[ :=#]{0,3}(\d{1,3})\b", re.I)


def _xid_reason(said, ev, reason, source, name="Slurm"):
    """A reason that names an Xid ('Xid 74 -- GPUs need reseat', an admin's or a health check's record):
    that Xid's category in NVIDIA's catalog, a warning (a record of the fault, not a reading of it)."""
    from .findings import finding
    from .taxonomy.kinds_vocab import BY_CATEGORY
    from .xid_catalog import lookup
    m = _XID_NAMED.search(reason)
    e = lookup(m.group(1)) if m else None
    if e is None or e["category"] not in BY_CATEGORY:
        return None
    return finding(BY_CATEGORY[e["category"]], "%s: the reason names Xid %s (%s), a record of the fault, not a "
                   "reading: confirm it in the node's kernel log" % (said, m.group(1), e["name"]),
                   category=e["category"], severity="warning", name=name, xid=int(m.group(1)), evidence=ev,
                   source=source)
