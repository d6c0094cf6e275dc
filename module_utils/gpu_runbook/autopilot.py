# SPDX-License-Identifier: Apache-2.0
"""IBM Autopilot's health checks (IBM/autopilot: a Kubernetes daemon that tests GPU nodes and
labels them), in the three forms an on-call has:

- the report of ``runHealthchecks.py`` / its /status endpoint: per node ``Node: NAME``, each
  check's ``[[ NAME ]] SUCCESS|FAIL|ABORT`` line, ``Host  NAME`` over the check's figures (one
  per GPU), ``Node Status: PCIE Failed`` (or ``Ok``), then ``Node Summary:`` with one entry per node;
- the daemon's own log (klog: ``I0423 20:14:46.690934 9 healthchecks.go:226] Observation: ...``),
  whose lines say a check failed or could not run;
- the node's labels (``autopilot.ibm.com/gpuhealth=EVICT``, ``autopilot.ibm.com/dcgm.level.3=
  ERR_<time>_<test>.<gpu>``), from ``kubectl describe node`` or ``-o json``.

What each check tests and its category: autopilot_checks.py (generated from Autopilot's source).
A failed GPU check (PCIe bandwidth, pending row remaps, DCGM, the memory test) or an EVICT label
is critical in the GPU's category; a check that failed on something that names no cause (power
capping, storage) or a WARN label is a warning of unknown cause; a check that could not run
(ABORT) says nothing of the node: unknown, with its reason. SUCCESS / Ok / PASS are readings."""

import re

from .autopilot_checks import BANNERS, CHECKS, FATAL_DCGM, GO_FILES, KLOG
from .findings import finding, iter_lines, never_raise
from .taxonomy.kinds_vocab import BY_CATEGORY

SOURCE = "autopilot.txt"
_CATEGORY = dict((c[0], c[4]) for c in CHECKS)
_STATUS = dict((c[1].lower(), c[0]) for c in CHECKS)
_BANNER = r"(?:\[\[ ?(?:%s) ?\]\]|\[(?:GPU POWER|PING)\])" % "|".join(re.escape(b[0]) for b in BANNERS)
_KLOG_HEAD = r"[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{1,9}\s{1,8}\d{1,9} [\w.\-]{1,64}\.go:\d{1,6}\] "
# the daemon's own log lines: klog's head with one of its source files (healthchecks.go before the pin's
# healthcheck.go); another program's klog line (the device plugin's) ends a block of Autopilot's text
_OWN_KLOG = _KLOG_HEAD.replace(r"[\w.\-]{1,64}\.go", "(?:healthchecks\\.go|%s)" % "|".join(re.escape(f) for f in GO_FILES))
_LABEL = r'\s{0,40}(?:Labels:\s{1,40})?"?autopilot\.ibm\.com/(?P<key>[\w.\-]{1,64})"?\s{0,4}(?:=|:\s{0,4}")(?P<val>[^"\s,]{0,200})'
LABEL_RE = re.compile(r"^" + _LABEL)
# what opens a block of Autopilot's text (content/): its report's own lines, a check's banner,
# the daemon's health-check log lines, a label of its
OPENING = re.compile(r"^(?:Checking status on all nodes\s*$|Autopilot Endpoint: \S|" + _BANNER + r"|"
                     + _KLOG_HEAD.replace(r"[\w.\-]{1,64}\.go", r"healthchecks?\.go") + r"|" + _LABEL + r")")
_BELONGS_RE = re.compile(r"^(?:\s*$|" + _OWN_KLOG + r"|Node: \S|url\(s\): |\s{4,}http|Response:|Checking system status "
                         r"of host |Host {1,2}\S{1,253}\s*$|[\d. ]{1,400}$|Node Status: |-{5,}\s*$|~~|Node Summary:|"
                         r"\s?[{ ]'[^'\n]{1,253}': \[|runtime: |Threshold: |(?:\[GPU POWER\] )?Detected NVIDIA GPU|"
                         r"(?:SUCCESS|FAIL|ABORT|SKIP)\s*$|"
                         r"!! |Initiated connection to |Server Disconnected|Node \S{1,253} \S{1,64} \S{1,64} [01]\s*$|"
                         + _BANNER + r"|" + _LABEL + r")")
_NODE_RE = re.compile(r"^Node: (\S{1,253})\s*$")
_HOST_RE = re.compile(r"^Host {1,2}(\S{1,253})\s*$")
_SUMMARY_RE = re.compile(r"^\s?[{ ]'([^'\n]{1,253})': \[([^\]\n]{0,400})\]")
_RESULT_RE = re.compile(r"\b(FAIL|ABORT|SUCCESS|SKIP)\b|\bHealth Check (successful|unsuccessful)")
_VALUES_RE = re.compile(r"^\s*\d{1,6}(?:\.\d{1,3})?(?:\s+\d{1,6}(?:\.\d{1,3})?){0,63}\s*$")
_DCGM_LABEL_RE = re.compile(r"^(PASS|ERR)_(\d{4}-\d\d-\d\d_\d\d\.\d\d\.\d\dUTC)(?:_(\S{1,200}))?$")
_KLOG_RE = re.compile(r"^" + _KLOG_HEAD + r"(?P<msg>.{0,2000})$")


def belongs(line):
    """A line of Autopilot's text (its report, its daemon's log, its labels), or a blank."""
    return bool(_BELONGS_RE.match(line))


def host_parts(text):
    """-> [(node or None, text)]: each ``Node: NAME`` section of a report (with its entry of the
    node summary) is that node's; what precedes any is None's. Line numbers are kept (the other
    parts' lines are blank)."""
    lines = text.split("\n")
    owner, current = [], None
    for line in lines:
        m = _NODE_RE.match(line.rstrip("\r"))
        s = _SUMMARY_RE.match(line)
        if m:
            current = m.group(1)
        owner.append(s.group(1) if s else current)
    hosts = [h for h in dict.fromkeys(owner) if h is not None]
    if not hosts:
        return [(None, text)]
    out = []
    for h in [None] + hosts:
        part = "\n".join(x if o == h else "" for x, o in zip(lines, owner))
        # the report's own head and tail ('Checking status on all nodes', 'runtime: 31.8 sec')
        # say nothing of any node: not a host of their own
        if part.strip() and (h is not None or _parse(part)[0]):
            out.append((h, part))
    return out


def parse_autopilot(text, source=SOURCE):
    """-> (facts, findings) of Autopilot's text; never raises. facts: {"checks": {check: result},
    "statuses": [...], "labels": {key: value}, "figures": {check: [numbers]}} ({} when nothing of
    Autopilot's was read)."""
    return never_raise(_parse, source, text, source=source)


def _observed(checks, figures, check, body, where):
    """An ``Observation: NODE ...`` line after a check completed: its reading (healthcheck.go
    logs one per GPU, or the node's DCGM Pass/Fail, or a ping peer Unreachable). The check
    passed unless the log says otherwise (a failed line, an Unreachable peer, DCGM's Fail)."""
    words = body.split()[2:]
    bad = any(w in ("Unreachable", "Fail") for w in words)
    if bad or check not in checks:
        checks[check] = ("FAIL" if bad else "SUCCESS", body, where)
    if check == "PCIE" and len(words) == 2 and words[0].isdigit():
        try:
            figures.setdefault(check, []).append(float(words[1]))
        except ValueError:
            pass


def _check_of(line):
    upper = line.upper()
    return next((c[0] for c in CHECKS if c[0].upper() in upper), None)


def _parse(text, source=SOURCE):
    checks, statuses, labels, figures, seen = {}, [], {}, {}, {}
    check, host = None, None
    for n, line in iter_lines(text):
        line = line.rstrip()
        where = "%s:%d" % (source, n)
        m = _KLOG_RE.match(line)
        body = m.group("msg") if m else line
        lm = LABEL_RE.match(line)
        if lm:
            labels[lm.group("key")] = (lm.group("val"), line, where)
            continue
        if m:  # the daemon's log: a check completed, failed or could not run; what it observed
            row = next((k for k in KLOG if body.startswith(k[0])), None)
            if row and row[2] == "completed":
                check = row[1]
            elif row:
                checks[row[1]] = ("FAIL" if row[2] == "failed" else "ABORT", body, where)
            elif check and body.startswith("Observation: "):
                _observed(checks, figures, check, body, where)
            continue
        if re.match(_BANNER, body) or (check and _RESULT_RE.match(body.strip())):
            check = _check_of(body) or check
            r = _RESULT_RE.search(body)
            if check and r:
                result = r.group(1) or ("SUCCESS" if r.group(2) == "successful" else "FAIL")
                checks[check] = (result, body, where)
            continue
        hm = _HOST_RE.match(body)
        if hm:
            host = hm.group(1)
            continue
        if check and host and _VALUES_RE.match(body):
            figures[check] = [float(v) for v in body.split()]
            continue
        if body.startswith("Node Status: "):
            statuses += [(s.strip(), body, where) for s in body[len("Node Status: "):].split(",") if s.strip()]
            continue
        s = _SUMMARY_RE.match(body)
        if s:
            statuses += [(x.strip(" '\""), body, where) for x in s.group(2).split(",") if x.strip(" '\"")]
    findings = []
    for st, line, where in statuses:  # the report's own verdict of the node, check by check
        c = _STATUS.get(st.lower())
        if c and c not in seen:
            seen[c] = True
            result = checks.get(c, ("FAIL", line, where))
            findings.append(_failed(c, result if result[0] != "SUCCESS" else ("FAIL", line, where), figures.get(c)))
    for c, result in checks.items():
        if c not in seen and result[0] in ("FAIL", "ABORT"):
            findings.append(_failed(c, result, figures.get(c)))
    findings += _label_findings(labels)
    facts = {"checks": dict((c, r[0]) for c, r in checks.items()), "statuses": [s[0] for s in statuses],
             "labels": dict((k, v[0]) for k, v in labels.items()), "figures": figures}
    return (facts if checks or statuses or labels else {}), findings


def _failed(check, result, figures):
    """A check that failed (critical in its category; a warning when it names no cause), or one
    that could not run (unknown: it says nothing of the node)."""
    outcome, line, where = result
    if outcome == "ABORT":
        return finding("logged_error", "Autopilot: the %s check could not run (ABORT): it says nothing of the node's "
                       "health" % check, category="unknown", severity="warning", name="Autopilot",
                       evidence=line.strip()[:300], source=where)
    category = _CATEGORY.get(check, "unknown")
    low = _low(figures)
    what = ": %s" % "; ".join("GPU %d at %g against a median of %g" % x for x in low) if low else ""
    return finding(BY_CATEGORY[category], "Autopilot: the %s check failed%s" % (check, what), category=category,
                   severity="critical" if category == "gpu_hardware" else "warning", name="Autopilot",
                   gpu=low[0][0] if len(low) == 1 else None, evidence=line.strip()[:300], source=where)


def _low(figures):
    """(index, figure, median) of the GPUs whose figure is under 3/4 of the node's median."""
    if not figures or len(figures) < 2:
        return []
    median = sorted(figures)[len(figures) // 2]
    return [(i, v, median) for i, v in enumerate(figures) if v < 0.75 * median]


def _label_findings(labels):
    out = []
    health = labels.get("gpuhealth")
    if health and health[0] in ("EVICT", "WARN"):
        evict = health[0] == "EVICT"
        out.append(finding(BY_CATEGORY["gpu_hardware" if evict else "unknown"],
                           "Autopilot labelled the node gpuhealth=%s: %s" % (
                               health[0], "a GPU test failed with an error Autopilot calls fatal (%s)" % ", ".join(
                                   FATAL_DCGM) if evict else "a health check failed (which one, the other labels say)"),
                           category="gpu_hardware" if evict else "unknown", severity="critical" if evict else "warning",
                           name="Autopilot", evidence=health[1].strip()[:300], source=health[2]))
    for key, (val, line, where) in sorted(labels.items()):
        m = _DCGM_LABEL_RE.match(val) if key.startswith("dcgm.level.") else None
        if m and m.group(1) == "ERR":
            tests = m.group(3) or "no test named"
            gpu = re.search(r"\.(\d{1,2})$", tests)
            out.append(finding("logged_gpu_error", "Autopilot: DCGM diagnostic %s failed on %s (%s)" % (
                key, m.group(2), tests), category="gpu_hardware", severity="critical", name="Autopilot",
                gpu=int(gpu.group(1)) if gpu else None, evidence=line.strip()[:300], source=where))
    return out
