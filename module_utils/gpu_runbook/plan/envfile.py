# SPDX-License-Identifier: Apache-2.0
"""The job's environment for its next run, pure: the env file (``KEY=VALUE``, ``#`` comments
saying why and what each value means), parsed back; variable validation (known ``NCCL_*`` /
``TORCH_*`` names, values without shell metacharacters); the sbatch snippet; the rail-exclusion
record (host, rail, incident, since), with exclusions a later run finds healthy reverted.
One section per job-scoped rung between markers: a rung rewrites only its own; lines outside
are kept. A section's variables stay until unset, except NCCL_IB_HCA, driven by the record.
NCCL: the job's environment beats ~/.nccl.conf (or NCCL_CONF_FILE), which beats /etc/nccl.conf."""

import json
import re

from ..findings import small_int
from .jobenv import COLLECTIVE_NOTE, ib_timeout_seconds
from .ladder import JOB_RUNGS
from .policy import one_line

SECTIONS = JOB_RUNGS
RECORD_SCHEMA = "gpu-runbook/excluded-rails/v1"
PRECEDENCE = ("the job's environment beats ~/.nccl.conf (or NCCL_CONF_FILE), which beats /etc/nccl.conf: "
              "a variable exported for the job wins over both files")
ANY_HOST = "*"
_KEEP_REVERTED = 100

_BEGIN = "# >>> gpu-runbook %s: managed section, rewritten by the %s rung (edit outside it)"
_BEGIN_RE = re.compile(r"^# >>> gpu-runbook (\S+?):")
_END = "# <<< gpu-runbook %s"
_END_RE = re.compile(r"^# <<< gpu-runbook (\S+)\s*$")
_WHY_RE = re.compile(r"^# why(?: \[(?P<inc>[^\]]*)\])?: (?P<text>.*)$")
_LINE_RE = re.compile(r"^(?:export\s+)?(?P<key>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*)$")
HEADER = (
    "# gpu-runbook: NCCL / PyTorch environment for the job's NEXT run.",
    "# Precedence: " + PRECEDENCE + ".",
    "# PyTorch reads TORCH_* from the environment only (never from nccl.conf).",
    "# Use it in the batch script: set -a; . <this file>; set +a   (or paste nccl.sbatch).",
    "# Lines outside the gpu-runbook sections are kept as they are.",
)

# -- variables -------------------------------------------------------------------------

# no whitespace, quotes, $, `, ;, |, &, <, >, (, ), *, ?, [, ], {, }, ~, !, #, backslash
_SAFE = re.compile(r"^[A-Za-z0-9_.,:=^/%@+-]+$")
_NAME = r"[A-Za-z0-9_.-]+"
_HCA_RE = re.compile(r"^\^?=?%s(?::\d+)?(?:,%s(?::\d+)?)*$" % (_NAME, _NAME))
_IFACES_RE = re.compile(r"^\^?=?%s(?:,%s)*$" % (_NAME, _NAME))
_PATH_RE = re.compile(r"^/[A-Za-z0-9_./%@+-]*$")
_WORD_RE = re.compile(r"^[A-Za-z0-9_.,^-]+$")
_PCI_LIKE = re.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:")

REFUSED = {
    "NCCL_TIMEOUT": "there is no NCCL_TIMEOUT: " + COLLECTIVE_NOTE,
    "NCCL_ASYNC_ERROR_HANDLING": "legacy name: set TORCH_NCCL_ASYNC_ERROR_HANDLING instead",
    "NCCL_BLOCKING_WAIT": "legacy name: set TORCH_NCCL_BLOCKING_WAIT instead",
}


def _int(low, high=None):
    def check(v):
        # ASCII digits only, at most 18: int() refuses 4300 digits, and \d would take '٣'
        if not re.fullmatch(r"-?[0-9]{1,18}", v) or int(v) < low or (high is not None and int(v) > high):
            return "an integer %s" % ("%d-%d" % (low, high) if high is not None else ">= %d" % low)
        return None
    return check


def _match(regex, words):
    return lambda v: None if regex.match(v) else words


def _choice(*values):
    return lambda v: None if v in values else "one of %s" % ", ".join(values)


def _secs(v):
    return "%.1f s" % float(v) if float(v) < 120 else "%.1f min" % (float(v) / 60.0)


def _ib_timeout(v, env):
    n = int(v)
    return ("each InfiniBand retry waits 4.096 us x 2^%d = %s (NCCL default 20 = %s since 2.23; 0 or >= 32 "
            "would wait forever)" % (n, _secs(ib_timeout_seconds(n)), _secs(ib_timeout_seconds(20))))


def _retry_cnt(v, env):
    t = env.get("NCCL_IB_TIMEOUT")
    n = small_int(t)
    n = n if n is not None and 0 < n < 32 else 20
    t = ib_timeout_seconds(n)
    return ("retries before a 'retry exceeded' error: %s (0-7, default 7); a dead peer is declared after "
            "about (%s + 1) x %s = %s" % (v, v, _secs(t), _secs((int(v) + 1) * t)))


_ASYNC = {"0": "no handling", "1": "abort the communicators and tear the process down on an error or timeout",
          "2": "abort the communicators only", "3": "tear the process down without aborting (PyTorch's default)"}

# name: (checker, explain(value, env) or None)
KNOWN = {
    "NCCL_IB_HCA": (_match(_HCA_RE, "HCA names, e.g. ^=mlx5_1,mlx5_4 or mlx5_0:1"),
                    lambda v, e: ("'^' excludes, '=' matches the exact name (without it mlx5_1 also matches "
                                  "mlx5_10-19): the whole job %s %s" % ("avoids" if v.startswith("^") else "uses only",
                                                                         ", ".join(hca_names(v))))),
    "NCCL_IB_DISABLE": (_choice("0", "1"), lambda v, e: "0: use InfiniBand/RoCE; 1 would force TCP sockets"),
    "NCCL_SOCKET_IFNAME": (_match(_IFACES_RE, "interface names, e.g. ib0 or ^docker,lo"),
                           lambda v, e: "interfaces for NCCL's bootstrap and socket transport (prefix match; '^' "
                                        "excludes, '=' exact); every node must really have one"),
    "NCCL_IB_TIMEOUT": (_int(1, 31), _ib_timeout),
    "NCCL_IB_RETRY_CNT": (_int(0, 7), _retry_cnt),
    "NCCL_NET": (_match(_WORD_RE, "a network name, e.g. IB or Socket"), None),
    "NCCL_NET_GDR_LEVEL": (_match(_WORD_RE, "a level, e.g. PHB or 2"), None),
    "NCCL_DEBUG": (_choice("VERSION", "WARN", "INFO", "TRACE", "ABORT"), None),
    "NCCL_DEBUG_SUBSYS": (_match(_WORD_RE, "subsystems, e.g. INIT,NET"), None),
    "NCCL_DEBUG_FILE": (_match(_PATH_RE, "an absolute path (%h host, %p pid)"), None),
    "NCCL_TOPO_FILE": (_match(_PATH_RE, "an absolute path"), None),
    "TORCH_NCCL_ASYNC_ERROR_HANDLING": (_choice("0", "1", "2", "3"), lambda v, e: "%s: %s" % (v, _ASYNC[v])),
    "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC": (
        _int(1), lambda v, e: "the watchdog itself must answer within %s s (%s) or the process is killed "
                              "(after a dump); PyTorch default 480 s" % (v, _secs(v))),
    "TORCH_FR_BUFFER_SIZE": (_int(0), lambda v, e: "Flight Recorder keeps the last %s collectives per rank%s"
                             % (v, " (0: off)" if v == "0" else "")),
    "TORCH_NCCL_TRACE_BUFFER_SIZE": (_int(0), lambda v, e: "older PyTorch's name of TORCH_FR_BUFFER_SIZE"),
    "TORCH_NCCL_DUMP_ON_TIMEOUT": (_choice("0", "1"), lambda v, e: "on a collective timeout every rank dumps its "
                                   "Flight Recorder: the dump names the rank that never joined" if v == "1" else None),
    "TORCH_FR_DUMP_TEMP_FILE": (_match(_PATH_RE, "an absolute path prefix"),
                                lambda v, e: "rank N writes its dump to %sN; the directory must exist on every node "
                                             "(shared storage keeps the dumps after the job)" % v),
    "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": (_match(_PATH_RE, "an absolute path prefix"),
                                        lambda v, e: "older PyTorch's name of TORCH_FR_DUMP_TEMP_FILE"),
    "TORCH_DISTRIBUTED_DEBUG": (_choice("OFF", "INFO", "DETAIL"), None),
}
KNOWN.update((k, (_choice("0", "1"), None)) for k in (
    "NCCL_IB_ADAPTIVE_ROUTING", "NCCL_NVLS_ENABLE", "NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "TORCH_NCCL_BLOCKING_WAIT",
    "TORCH_NCCL_ENABLE_MONITORING", "TORCH_NCCL_DESYNC_DEBUG", "TORCH_NCCL_ENABLE_TIMING",
    "TORCH_NCCL_TRACE_CPP_STACK"))
KNOWN.update((k, (_choice("AF_INET", "AF_INET6"), None)) for k in ("NCCL_IB_ADDR_FAMILY", "NCCL_SOCKET_FAMILY"))
KNOWN.update((k, (_int(lo, hi), None)) for k, lo, hi in (
    ("NCCL_IB_GID_INDEX", -1, 255), ("NCCL_IB_SL", 0, 15), ("NCCL_IB_TC", 0, 255),
    ("NCCL_IB_QPS_PER_CONNECTION", 1, 128), ("TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC", 0, None)))
KNOWN.update((k, (_choice("0", "1", "2"), None)) for k in ("NCCL_IB_PCI_RELAXED_ORDERING", "NCCL_CROSS_NIC"))


class EnvError(ValueError):
    pass


def check_var(key, value):
    """-> None, or why ``key=value`` is refused."""
    if key in REFUSED:
        return "%s: %s" % (key, REFUSED[key])
    if key not in KNOWN:
        return "%s: not a known NCCL_* / TORCH_* variable (known: %s)" % (key, ", ".join(sorted(KNOWN)))
    if not isinstance(value, str) or not _SAFE.match(value):
        return "%s=%r: the value must be non-empty, without spaces, quotes or shell metacharacters" % (key, value)
    bad = KNOWN[key][0](value)
    return "%s=%s: must be %s" % (key, value, bad) if bad else None


def split_line(line):
    """'KEY=VALUE' -> (key, value) when known and safe; EnvError naming why not."""
    m = _LINE_RE.match(line.strip()) if isinstance(line, str) else None
    if not m:
        raise EnvError("%r: not a KEY=VALUE line" % (line,))
    why = check_var(m.group("key"), m.group("value"))
    if why:
        raise EnvError(why)
    return m.group("key"), m.group("value")


def validate(lines):
    """-> ([(key, value)], [errors]); the last value of a key wins."""
    pairs, errors = {}, []
    for line in lines or []:
        try:
            k, v = split_line(line)
        except EnvError as exc:
            errors.append(str(exc))
            continue
        pairs.pop(k, None)
        pairs[k] = v
    return list(pairs.items()), errors


def explain(key, value, env):
    fn = KNOWN.get(key, (None, None))[1]
    try:
        return fn(value, env) if fn else None
    except (KeyError, ValueError, TypeError):
        return None


def hca_names(value):
    """'^=mlx5_1,mlx5_4:1' -> ['mlx5_1', 'mlx5_4']."""
    return [p.split(":")[0] for p in value.lstrip("^").lstrip("=").split(",") if p]


# -- the file --------------------------------------------------------------------------

def parse_env_file(text):
    """-> {"sections": {name: [{"key", "value", "why", "incident"}]}, "other": [lines]};
    EnvError for a file whose markers do not pair up (nothing is guessed)."""
    sections, other, cur, why, inc = {}, [], None, None, None
    for n, raw in enumerate((text or "").splitlines(), 1):
        line = raw.rstrip()
        begin, end = _BEGIN_RE.match(line), _END_RE.match(line)
        if begin:
            if cur is not None:
                raise EnvError("line %d: section %s opened inside section %s" % (n, begin.group(1), cur))
            cur, why, inc = begin.group(1), None, None
            if cur in sections:
                raise EnvError("line %d: section %s appears twice" % (n, cur))
            sections[cur] = []
        elif end:
            if end.group(1) != cur:
                raise EnvError("line %d: end of section %s without its start" % (n, end.group(1)))
            cur = None
        elif cur is None:
            if line not in HEADER:
                other.append(line)
        else:
            w, m = _WHY_RE.match(line), _LINE_RE.match(line)
            if w:
                why, inc = w.group("text"), w.group("inc") or None
            elif m:
                sections[cur].append({"key": m.group("key"), "value": m.group("value"), "why": why,
                                      "incident": inc})  # a why line covers the lines up to the next one
    if cur is not None:
        raise EnvError("section %s is never closed (no '%s' line)" % (cur, _END % cur))
    while other and not other[0]:
        other.pop(0)
    while other and not other[-1]:
        other.pop()
    return {"sections": sections, "other": other}


def _entry_lines(entry, env, prev):
    out = []
    if entry.get("why") and (entry.get("why"), entry.get("incident")) != prev:
        out.append("# why%s: %s" % (" [%s]" % entry["incident"] if entry.get("incident") else "",
                                    one_line(entry["why"], 300)))
    words = explain(entry["key"], entry["value"], env)
    if words:
        out.append("# %s: %s" % (entry["key"], one_line(words, 300)))
    return out + ["%s=%s" % (entry["key"], entry["value"])]


def render_env_file(parsed):
    out = list(HEADER) + [""]
    if parsed["other"]:
        out += parsed["other"] + [""]
    for name in SECTIONS:
        entries = parsed["sections"].get(name)
        if entries is None:
            continue
        env = {e["key"]: e["value"] for e in entries}
        out.append(_BEGIN % (name, name))
        prev = None
        for e in entries:
            out += _entry_lines(e, env, prev)
            prev = (e.get("why"), e.get("incident"))
        if name == "timeout":
            out.append("# %s" % COLLECTIVE_NOTE)
        out += [_END % name, ""]
    return "\n".join(out).rstrip("\n") + "\n"


def render_sbatch(parsed, env_path):
    """The snippet an SRE pastes into the batch script, after the #SBATCH lines."""
    out = ["# gpu-runbook: environment for the job's next run -- paste after the #SBATCH lines.",
           "# " + PRECEDENCE + ".",
           "# Exports, not '#SBATCH --export=ALL,...': with ALL the submit environment takes precedence over",
           "# the listed values, and the list is comma-separated (^=mlx5_1,mlx5_4 has commas). srun inherits these.",
           "# The same in one line: set -a; . %s; set +a" % env_path]
    for name in SECTIONS:
        entries = parsed["sections"].get(name) or []
        if not entries:
            continue
        env = {e["key"]: e["value"] for e in entries}
        out.append("# --- %s" % name)
        for e in entries:
            words = explain(e["key"], e["value"], env)
            if words:
                out.append("# %s" % one_line(words, 300))
            out.append("export %s='%s'" % (e["key"], e["value"]))  # validated: no quote can occur
        if name == "timeout":
            out.append("# %s" % COLLECTIVE_NOTE)
    if not any(parsed["sections"].get(n) for n in SECTIONS):
        out.append("# (nothing to set for the next run)")
    return "\n".join(out) + "\n"


def nccl_conf_lines(parsed, section="nccl_env"):
    """The NCCL_* lines of a section, for a managed /etc/nccl.conf (NCCL reads only NCCL_*
    there; TORCH_* belongs in the job's environment)."""
    return ["%s=%s" % (e["key"], e["value"]) for e in parsed["sections"].get(section) or []
            if e["key"].startswith("NCCL_") and not check_var(e["key"], e["value"])]


def merge_section(old_entries, new_items, incident, unset=(), hca=None, drive_hca=False):
    """Old entries kept (a changed value takes the new why), new [(key, value, why)] appended,
    ``unset`` keys removed; with ``drive_hca`` NCCL_IB_HCA is ``hca`` (first) or gone."""
    out, index = [], {}
    for e in old_entries or []:
        if e["key"] in unset or (drive_hca and e["key"] == "NCCL_IB_HCA") or check_var(e["key"], e["value"]):
            continue
        index[e["key"]] = len(out)
        out.append(dict(e))
    for key, value, why in new_items:
        if key in unset or (drive_hca and key == "NCCL_IB_HCA"):
            continue
        new = {"key": key, "value": value, "why": why, "incident": incident}
        if key not in index:
            index[key] = len(out)
            out.append(new)
        elif out[index[key]]["value"] != value:
            out[index[key]] = new
    if drive_hca and hca:
        out.insert(0, hca)
    return out


# -- the rail-exclusion record ------------------------------------------------------------

def empty_record():
    return {"schema": RECORD_SCHEMA, "excluded": [], "reverted": []}


def parse_record(text):
    """excluded-rails.json text (or empty) -> record; EnvError when it is not one."""
    if not (text or "").strip():
        return empty_record()
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise EnvError("not JSON: %s" % exc)
    if not isinstance(data, dict) or data.get("schema") != RECORD_SCHEMA or \
            not isinstance(data.get("excluded"), list) or not isinstance(data.get("reverted", []), list):
        raise EnvError("not a %s record" % RECORD_SCHEMA)
    for e in data["excluded"]:
        if not isinstance(e, dict) or not isinstance(e.get("host"), str) or not isinstance(e.get("rail"), str) \
                or check_var("NCCL_IB_HCA", "^=" + e["rail"]):
            raise EnvError("excluded entry %r has no valid host and rail" % (e,))
    return {"schema": RECORD_SCHEMA, "excluded": data["excluded"], "reverted": data.get("reverted") or []}


def render_record(record):
    return json.dumps(record, indent=2, sort_keys=True) + "\n"


def rails_from_plan(job, incidents=()):
    """[(host, rail, why)] the plan's job section excludes: the hosts of the nccl_env rungs and
    of rail incidents; a rail of the job's NCCL_IB_HCA line nobody accounts for is ANY_HOST."""
    out = {}
    for r in (job or {}).get("rungs") or []:
        if isinstance(r, dict) and r.get("rung") == "nccl_env" and isinstance(r.get("host"), str):
            for rail in (r.get("target") or {}).get("rails") or []:
                out.setdefault((r["host"], str(rail)), one_line(r.get("why") or "", 200))
    for inc in incidents or []:
        if isinstance(inc, dict) and inc.get("kind") == "rail" and inc.get("name"):
            for host in inc.get("hosts") or []:
                out.setdefault((str(host), str(inc["name"])), one_line(inc.get("why") or "", 200))
    named = {rail for _h, rail in out}
    for line in (job or {}).get("env") or []:
        if isinstance(line, str) and line.startswith("NCCL_IB_HCA=^"):
            for rail in hca_names(line.split("=", 1)[1]):
                if rail not in named:
                    out.setdefault((ANY_HOST, rail), "in the plan's NCCL_IB_HCA, no host named")
    return [(h, r, w) for (h, r), w in sorted(out.items())]


def rail_doubt(host, rail):
    """None when this run's analysis of ``host`` shows ``rail`` healthy, else why not."""
    if not isinstance(host, dict):
        return "not in this run's analysis"
    if host.get("verdict") == "unknown":
        return "its health is unknown in this run"
    for f in host.get("findings") or []:
        if not isinstance(f, dict) or f.get("severity") not in ("warning", "critical"):
            continue
        dev = str((f.get("ib") or {}).get("device") or "")
        if dev == rail:
            return "still sick: %s" % one_line(f.get("message") or f.get("kind") or "", 120)
        if f.get("category") in ("ib_network", "unknown") and (not dev or _PCI_LIKE.match(dev)):
            return "an InfiniBand or evidence finding names no HCA: %s" % one_line(f.get("message") or
                                                                                  f.get("kind") or "", 120)
    return None


def merge_rails(record, adds, analysis_hosts, incident, now, manual=()):
    """-> (record, added, reverted, kept): ``adds`` [(host, rail, why)] recorded (an existing
    (host, rail) keeps its incident and since); an exclusion this run does not make is
    reverted when its host is in ``analysis_hosts`` and healthy on the rail (None: no
    analysis, nothing reverted), or when its rail / host:rail is in ``manual``."""
    by_name = {h.get("host"): h for h in analysis_hosts or [] if isinstance(h, dict)}
    current = {(e["host"], e["rail"]): e for e in record["excluded"]}
    added, reverted, kept = [], [], []
    for host, rail, why in adds:
        if (host, rail) not in current:
            current[(host, rail)] = {"host": host, "rail": rail, "incident": incident or None, "since": now,
                                     "why": why}
            added.append(current[(host, rail)])
    adding = {(h, r) for h, r, _w in adds}
    for key in sorted(current):
        if key in adding:
            continue
        e, host, rail = current[key], key[0], key[1]
        if rail in manual or "%s:%s" % key in manual:
            doubt, by = None, "by hand"
        elif host == ANY_HOST:
            doubt, by = "no host named: revert it by hand", None
        elif analysis_hosts is None:
            doubt, by = "no analysis given", None
        else:
            doubt, by = rail_doubt(by_name.get(host), rail), "healthy in this run"
        if doubt:
            kept.append(dict(e, kept=doubt))
            continue
        del current[key]
        reverted.append(dict(e, reverted_at=now, reverted_by=incident or None, reverted_because=by))
    out = {"schema": RECORD_SCHEMA, "excluded": [current[k] for k in sorted(current)],
           "reverted": (record.get("reverted") or []) + reverted}
    out["reverted"] = out["reverted"][-_KEEP_REVERTED:]
    return out, added, reverted, kept


def hca_entry(record):
    rails = sorted({e["rail"] for e in record["excluded"]})
    if not rails:
        return None
    who = "; ".join("%s on %s since %s" % (e["rail"], e["host"], e.get("since") or "?")
                    for e in sorted(record["excluded"], key=lambda e: (e["rail"], e["host"])))
    return {"key": "NCCL_IB_HCA", "value": "^=" + ",".join(rails),
            "why": "rails excluded: %s; reverted when a later run finds the rail healthy" % who, "incident": None}


# -- one rung's update ---------------------------------------------------------------------

def _rung_why(rungs):
    whys = [one_line(r.get("why") or "", 200) for r in rungs]
    return "; ".join(w for i, w in enumerate(whys) if w and w not in whys[:i]) or "set by the operator"


def _lines(section, parsed, added, reverted, kept, env_path, sbatch_path):
    env = ["%s=%s" % (e["key"], e["value"]) for e in parsed["sections"].get(section) or []]
    out = ["%s: next run's environment in %s: %s" % (section, env_path, " ".join(env) or "(nothing)"),
           "%s: add to the next sbatch: set -a; . %s; set +a   (or paste %s)" % (section, env_path, sbatch_path),
           "%s: precedence: %s" % (section, PRECEDENCE)]
    out += ["%s: exclude %s (host %s, incident %s): %s" % (section, e["rail"], e["host"], e.get("incident") or "-",
                                                        e.get("why") or "") for e in added]
    out += ["%s: REVERT exclusion of %s on %s (since %s, incident %s): %s" % (
        section, e["rail"], e["host"], e.get("since") or "?", e.get("incident") or "-", e["reverted_because"])
        for e in reverted]
    out += ["%s: keep excluding %s on %s (since %s): %s" % (section, e["rail"], e["host"], e.get("since") or "?",
                                                         e["kept"]) for e in kept]
    if section == "timeout":
        out.append("timeout: %s" % COLLECTIVE_NOTE)
    return out


def update(section, env_text, record_text, job=None, incidents=(), analysis_hosts=None, extra=(), unset=(),
           revert=(), incident="", now="", env_path="nccl.env", sbatch_path="nccl.sbatch"):
    """One rung's share of the job env: its section rewritten from the plan's ``job`` (the
    rung's env lines), ``extra`` lines (win over the plan's) and ``unset`` keys; for
    nccl_env the exclusion record merged and reverted and NCCL_IB_HCA rebuilt from it.
    -> {"env_text", "sbatch_text", "record_text", "section", "nccl_conf", "added", "reverted",
    "kept", "lines"}; EnvError on bad input (nothing to write then)."""
    if section not in SECTIONS:
        raise EnvError("section must be one of %s, not %r" % (", ".join(SECTIONS), section))
    bad = [u for u in unset or () if not isinstance(u, str) or not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", u)]
    if bad:
        raise EnvError("unset: not variable names: %s" % ", ".join(map(repr, bad)))
    parsed = _guarded("the env file", parse_env_file, env_text)
    record = _guarded("the exclusion record", parse_record, record_text)
    rungs = [r for r in (job or {}).get("rungs") or [] if isinstance(r, dict) and r.get("rung") == section]
    plan_lines = [v for r in rungs for v in r.get("env") or []]
    pairs, errors = validate(plan_lines)
    own, own_errors = validate(extra)
    if errors or own_errors:
        raise EnvError("refused: %s" % "; ".join(errors + own_errors))
    items = [(k, v, _rung_why(rungs)) for k, v in pairs if k not in dict(own)]
    items += [(k, v, "the %s rung's settings" % section) for k, v in own]
    added, reverted, kept = [], [], []
    old = parsed["sections"].get(section) or []
    if section == "nccl_env":
        record, added, reverted, kept = merge_rails(record, rails_from_plan(job, incidents), analysis_hosts,
                                                    incident, now, manual=tuple(revert or ()))
        entries = merge_section(old, items, incident or None, unset or (), hca_entry(record), drive_hca=True)
    else:
        entries = merge_section(old, items, incident or None, unset or ())
    if entries:
        parsed["sections"][section] = entries
    else:
        parsed["sections"].pop(section, None)
    return {"env_text": render_env_file(parsed), "sbatch_text": render_sbatch(parsed, env_path),
            "record_text": render_record(record), "section": ["%s=%s" % (e["key"], e["value"]) for e in entries],
            "env": ["%s=%s" % (e["key"], e["value"]) for n in SECTIONS for e in parsed["sections"].get(n) or []],
            "nccl_conf": nccl_conf_lines(parsed),
            "excluded": record["excluded"], "added": added, "reverted": reverted, "kept": kept,
            "lines": _lines(section, parsed, added, reverted, kept, env_path, sbatch_path)}


def _guarded(what, fn, text):
    try:
        return fn(text)
    except EnvError as exc:
        raise EnvError("%s cannot be read, nothing was written: %s" % (what, exc))
