# SPDX-License-Identifier: Apache-2.0
"""The report step: every host's result -> analysis, report files, console lines, summary.

One implementation for the two ways Ansible runs it: the gpu_runbook_report action plugin
(in the controller's ansible-playbook, reading each host's result from hostvars: no
arguments to encode, no module process, no 17 MB result to decode at 10,000 hosts) and the
gpu_runbook_report module (the same step as a module, for a run without the plugin).
Both validate with ARGUMENT_SPEC and return what ``run`` returns. Above diagnose (it orchestrates
the diagnosis, the report files and the console lines, as the CLI does)."""

import datetime
import json
import os
import re

from . import validate
from .hostresult import report_input
from .diagnose import console_lines, diagnose, summary as make_summary
from .reports import annotate, describe_inputs, describe_window, write_reports
from .safewrite import WriteRefused
from .textio import TextLines, open_regular, printable, why_not_readable_by

MAX_LOG = 256 * 1024 * 1024  # bytes read from the END of a job log (the hang is there); a skipped head is said

ARGUMENT_SPEC = dict(
    results=dict(type="raw"),
    hosts=dict(type="list", elements="str"),
    result_var=dict(type="str", default="gpu_health_result"),
    lang=dict(type="str", choices=["en", "ko"], default="en"),
    report_dir=dict(type="path"),
    job=dict(type="dict"),
    job_log_dir=dict(type="path"),
    job_log_files=dict(type="list", elements="path", default=[]),
    analysis_findings=dict(type="str", choices=["all", "suspects"], default="all"),
    known_faults_dir=dict(type="path"),
)
REQUIRED_ONE_OF = [["results", "hosts"]]
MUTUALLY_EXCLUSIVE = [["results", "hosts"]]


class StepFailed(Exception):
    """The step cannot run as asked; the message says why (a setting, an unwritable directory)."""


def job_uid(job):
    """The job owner's uid from Slurm's UserId ('alice(1001)', '1001' or 'alice'); None if unknown."""
    user = str((job or {}).get("user") or "").strip()
    m = re.search(r"\((\d+)\)$", user) or re.match(r"(\d+)$", user)
    if m:
        return int(m.group(1))
    try:
        import pwd
        return pwd.getpwnam(user).pw_uid if user else None
    except KeyError:
        return None


def read_logs(log_dir, files, job=None):
    """{name: line source} of the job's logs (textio.TextLines: streamed by the parser, never
    held whole; at most the last MAX_LOG bytes of each); unreadable files are reported, not fatal.

    The job's files are named by its owner (Slurm's StdOut/StdErr, what the job wrote), but
    read here as root: each is read only as its owner could -- for Slurm's paths the job's
    user, for a file in the log directory the owner of its name (who made the link; an
    operator's root-owned copy is root's) -- and only when it is a regular file (a FIFO,
    /dev/zero or /proc/kmsg would block or never end)."""
    found, problems = {}, []
    paths = list(files or [])
    slurm_paths = set(paths)
    if log_dir:
        if not os.path.isdir(log_dir):
            problems.append("job_log_dir %s is not a directory" % log_dir)
        else:
            for root, _dirs, names in os.walk(log_dir):
                paths += [os.path.join(root, n) for n in sorted(names)]
    uid = job_uid(job)
    for path in paths:
        if not os.path.lexists(path):
            problems.append("%s: not found" % path)
            continue
        try:
            as_uid = uid if path in slurm_paths and uid is not None else os.lstat(path).st_uid
            why = why_not_readable_by(path, as_uid)
            if why:
                problems.append("%s: %s" % (path, why))
                continue
            name = os.path.relpath(path, log_dir) if log_dir and path.startswith(log_dir) else os.path.basename(path)
            # the checked real path, its last step not followed: a link swapped in since is refused,
            # here (a FIFO or device is a problem now) and again when the parser opens it
            real = os.path.realpath(path)
            os.close(open_regular(real, nofollow=True)[0])
            found[name] = TextLines(real, tail=MAX_LOG, nofollow=True)
        except OSError as exc:
            problems.append("%s: %s" % (path, exc.strerror or exc))
    return found, problems


def results_map(value):
    """The ``results`` option as {host: result}: a map, or that map as one JSON string.
    -> (results, None) or (None, why it is refused)."""
    what = "a map of inventory host name to its registered gpu_health_facts result"
    if isinstance(value, (bytes, bytearray)):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            return None, "results is a string but not JSON (%s); it must be %s, or that map as JSON" % (exc, what)
    if not isinstance(value, dict):
        return None, "results must be %s (or that map as JSON); got %s" % (what, validate.shown(value))
    # a host whose value is no result is that host's error (reported unknown, with why), not the run's
    return value, None


def host_results(hosts, lookup):
    """{host: what the report reads of its result} for ``hosts``, each result from
    ``lookup(host)`` (None when the host has none: a host the gather never reached is
    reported as such, never dropped)."""
    return {str(h): report_input(lookup(h)) for h in hosts}


MAX_LISTED = 50  # fault keys a summary lists (AWX shows them); the counts are whole


def remember(analysis, state_dir, now, check_mode=False):
    """This run's faults against the known-faults record in ``state_dir``, the record updated
    (not in check mode) -> {"summary", "new", "still", "cleared", "written"}. A record that cannot be
    read is said, every fault is new, and it is left as it is (never overwritten by this run)."""
    from .ledger import LedgerError
    from .ledger.known import compare, read_known, write_known
    error = None
    try:
        record = read_known(os.path.expanduser(state_dir))
    except LedgerError as exc:
        record, error = None, exc.msg
    new, still, cleared, updated = compare(record or {}, analysis["hosts"], now)
    written = False
    if error is None and not check_mode:
        try:
            write_known(os.path.expanduser(state_dir), updated)
            written = True
        except LedgerError as exc:
            error = exc.msg
    fresh = [f for f in new if not f.get("acknowledged")]
    summary = {
        "new_critical": [f["key"] for f in fresh if f["severity"] == "critical"][:MAX_LISTED],
        "new_warning": [f["key"] for f in fresh if f["severity"] == "warning"][:MAX_LISTED],
        "new": len(new), "known": len(still), "acknowledged": sum(1 for f in still if f.get("acknowledged")),
        "cleared": len(cleared), "error": error,
    }
    return {"summary": summary, "new": new, "still": still, "cleared": cleared, "written": written}


def known_lines(known, lang):
    """The console's lines on what was reported before: new ones first, by host."""
    from .i18n import text
    s = known["summary"]
    out = []
    if s["error"]:
        out.append(text(lang, "faults_unread", why=s["error"]))
    if known["new"]:
        shown = ", ".join("%s %s" % (f["host"], f["kind"]) for f in known["new"][:8])
        more = len(known["new"]) - 8
        out.append(text(lang, "faults_new", n=len(known["new"]), faults=shown + (" +%d" % more if more > 0 else "")))
    if known["still"] or known["cleared"]:
        out.append(text(lang, "faults_known", n=len(known["still"]), acked=s["acknowledged"], cleared=len(known["cleared"])))
    return out


def refused(params):
    """Why these (validated) parameters cannot be used, or None."""
    why = validate.problems(params, {"report_dir": "path", "job_log_dir": "path", "job_log_files": "path",
                                     "known_faults_dir": "path"})
    return "; ".join(why) if why else None


def run(params, results, check_mode=False):
    """The step on validated ``params`` and ``results`` ({host: result}) -> the task's result:
    changed, analysis, lines, summary. Raises StepFailed with the reason."""
    lang = params["lang"]
    logs, problems = read_logs(params["job_log_dir"], params["job_log_files"], params["job"])
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()
    workers = 0
    if logs:  # a worker reads big logs ahead, as in the CLI: 3 GB of rank logs in 15 s, not 23
        from .joblog.parallel import job_log_workers
        workers = job_log_workers()
    analysis = diagnose(results, job_logs=logs, slurm_job=params["job"], log_problems=problems, generated=now,
                        job_workers=workers)
    inputs = describe_inputs(results, logs, problems)
    annotate(analysis, inputs=inputs, window=describe_window(inputs, params["job"], now))
    summary = make_summary(analysis)
    report_dir = params["report_dir"]
    report_path = None
    changed = False
    if report_dir and not check_mode:
        report_dir = os.path.abspath(report_dir)
        try:
            summary["report_files"] = write_reports(analysis, report_dir, lang)
        except ImportError as exc:  # the HTML's template engine, imported when it is rendered
            raise StepFailed("report_dir needs jinja2 on the controller's Python: %s" % exc)
        except (OSError, WriteRefused) as exc:
            raise StepFailed("cannot write reports to %s: %s" % (report_dir, exc))
        report_path = next((p for p in summary["report_files"] if p.endswith(".html")), None)
        changed = True
    lines = console_lines(analysis, lang, report_path=report_path)
    if params.get("known_faults_dir"):
        # what an earlier run reported: a scheduled run says a fault is new once (ledger/known.py)
        known = remember(analysis, params["known_faults_dir"], now, check_mode)
        summary["faults"] = known["summary"]
        changed = changed or known["written"]
        lines += known_lines(known, lang)
    # the play prints these: a log's terminal escapes are shown escaped, never acted on
    lines = [printable(line) for line in lines]
    if params["analysis_findings"] == "suspects":
        suspects = set(analysis["cluster"]["suspects"])
        analysis = dict(analysis, hosts=[h if h["host"] in suspects else dict(h, findings=[])
                                         for h in analysis["hosts"]])
    return dict(changed=changed, analysis=analysis, lines=lines, summary=summary)
