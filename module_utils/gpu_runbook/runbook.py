# SPDX-License-Identifier: Apache-2.0
"""`gpu-runbook diagnose|remediate`: the playbooks through ansible-runner, as AWX runs them.

The project dir is the cwd of ansible-playbook, the runner's artifacts (job_events/, stdout,
rc, status) stay in <private data dir>/artifacts/<ident>/ as AWX keeps them, nothing
prompts, and the run is followed from the runner's events: a progress line while it runs,
then the lines the playbook prints last, read from the modules' results (never the text).
"""

import json
import os
import re
import shutil
import sys
import time
import uuid

from .analyze import exit_status
from .textio import NotRegularFile, open_regular, printable

PLAYBOOKS = {"diagnose": "playbooks/diagnose.yml", "remediate": "playbooks/remediate.yml"}
DEFAULT_PRIVATE_DIR = "~/.gpu-runbook/runner"
PROJECT_ENV = "GPU_RUNBOOK_PROJECT"
# The ladder's roles, as the rung names the ladder play's tasks say them.
RUNGS = {"rung_drain": "Drain", "rung_gpu_reset": "Reset", "rung_ib_restart": "Restart", "rung_verify": "Verify"}
# Extra vars that name paths: relative to where the command ran, not the project dir (the runner's cwd).
PATH_VARS = ("report_dir", "job_log_dir", "plan_dir")
# Results whose `lines` the playbook prints last: the diagnosis, then the plan.
REPORT_ACTIONS = ("gpu_runbook_report", "gpu_runbook_plan")
LADDER_LINES_TASK = "Show what the ladder did, one line per host"
SLURM_JOB_ID = re.compile(r"\d+([_+]\d+)?\Z")
VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# ansible-playbook's own codes for a playbook that could not be parsed or bad options: unusable input.
ANSIBLE_BAD_INPUT = (4, 5)

EXIT_UNUSABLE = 3
EXIT_IO = 4
EXIT_CRITICAL = 2
EXIT_INTERRUPTED = 130  # the shell's 128 + SIGINT

EPILOG = """\
exit status (as `analyze`):
  0  every host healthy: nothing at warning or above
  1  warnings
  2  critical findings (a host or the job), or a host failed or was unreachable, or the
     playbook stopped before its report
  (remediate: the fresh diagnosis's, before any rung; what the ladder did is printed after
  the plan and kept in result.json next to plan.json)
  3  unusable input: a bad argument, no playbooks, no inventory, no host matched (one line
     on stderr)
  4  the private data dir or the output could not be written (one line on stderr)

Progress goes to stderr: on a terminal one line redrawn in place, else one line per play
and per rung (Drain, Reset, Restart, Verify) with its counts. The diagnosis (and the plan)
go to stdout, last the summary count line and the report's path, then where the runner's
artifacts are (job_events/, stdout, rc, status). Relative paths in -i, --report-dir and -e
report_dir/job_log_dir/plan_dir are from the current directory.
"""


class RunbookError(Exception):
    """One line for stderr and the exit status that goes with it."""

    def __init__(self, message, status=EXIT_UNUSABLE):
        super().__init__(message)
        self.status = status


def add_parsers(sub, formatter_class):
    """The diagnose and remediate subcommands on the CLI's subparsers."""
    d = sub.add_parser("diagnose", help="run playbooks/diagnose.yml through ansible-runner, with progress",
                       description="Diagnose the hosts (read-only) through ansible-runner.",
                       epilog=EPILOG, formatter_class=formatter_class)
    r = sub.add_parser("remediate", help="run playbooks/remediate.yml: plan only, or act with --confirm",
                       description="Plan the remediation (fresh diagnosis); act only with --confirm.",
                       epilog=EPILOG, formatter_class=formatter_class)
    for p in (d, r):
        p.add_argument("-i", "--inventory", action="append", metavar="INVENTORY",
                       help="inventory path or host list (repeatable; default: ansible.cfg's)")
        p.add_argument("-l", "--limit", metavar="PATTERN", help="hosts or groups to run on (ansible --limit)")
        p.add_argument("--job-id", metavar="N", help="the Slurm job that hung (12345, 12345_7 or 12345+1)")
        p.add_argument("-e", "--extra-vars", action="append", default=[], metavar="K=V",
                       help="extra vars: K=V, a JSON object or @FILE (YAML/JSON); repeatable")
        p.add_argument("--report-dir", metavar="DIR",
                       help="write report.json/.md/.html here (default: the run's artifacts dir)")
        p.add_argument("--project-dir", metavar="DIR",
                       help="the checkout with playbooks/ (default: $%s, else the installed one)" % PROJECT_ENV)
        p.add_argument("--private-data-dir", metavar="DIR",
                       help="ansible-runner's private data dir (default: %s)" % DEFAULT_PRIVATE_DIR)
    r.add_argument("--confirm", action="store_true", help="act: climb the ladder where the plan says ACT")
    r.add_argument("--check", action="store_true", help="ansible --check (refused with --confirm)")


def main(args, out=None, err=None):
    """Run args.command ('diagnose' or 'remediate'); -> exit status. Never raises on bad input."""
    out, err = out or sys.stdout, err or sys.stderr
    run = progress = None
    try:
        run = prepare(args)
        progress = Progress(err, err.isatty())
        result = execute(run, progress)
    except RunbookError as exc:
        _say(err, "gpu-runbook: %s" % exc)
        return exc.status
    except KeyboardInterrupt:  # ansible-playbook got the same ^C; what it wrote so far is kept
        if progress is not None:
            progress.close()
        _say(err, "gpu-runbook: interrupted%s" % ("; artifacts: %s" % run["artifact_dir"] if run else ""))
        return EXIT_INTERRUPTED
    return finish(run, progress, result, out, err)


def prepare(args):
    """Arguments -> the runner's keyword arguments (and what the end needs); RunbookError when unusable."""
    confirm, check = getattr(args, "confirm", False), getattr(args, "check", False)
    if confirm and check:
        raise RunbookError("--confirm acts and --check changes nothing: choose one")
    if args.job_id is not None and not SLURM_JOB_ID.match(args.job_id):
        raise RunbookError("--job-id: not a Slurm job id: %r (e.g. 12345, 12345_7, 12345+1)" % args.job_id)
    extravars = parse_extra_vars(args.extra_vars)
    if "confirm" in extravars:
        raise RunbookError("-e confirm: use --confirm (remediate), which never prompts")
    project = find_project(args.project_dir)
    inventory = _inventories(args.inventory)
    private_dir = _make_dir(os.path.expanduser(args.private_data_dir or DEFAULT_PRIVATE_DIR), "private data dir")
    ident = "%s-%s-%s" % (args.command, time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()), uuid.uuid4().hex[:6])
    artifact_dir = os.path.join(private_dir, "artifacts", ident)
    for key in PATH_VARS:
        if isinstance(extravars.get(key), str) and extravars[key]:
            extravars[key] = os.path.abspath(os.path.expanduser(extravars[key]))
    if args.report_dir:
        extravars["report_dir"] = os.path.abspath(os.path.expanduser(args.report_dir))
    extravars.setdefault("report_dir", os.path.join(artifact_dir, "report"))
    if args.command == "remediate":
        extravars.setdefault("plan_dir", os.path.join(artifact_dir, "plan"))
        if confirm:
            extravars["confirm"] = "yes"
    if args.job_id is not None:
        extravars["job_id"] = args.job_id
    return {"private_data_dir": private_dir, "project_dir": project, "playbook": PLAYBOOKS[args.command],
            "ident": ident, "artifact_dir": artifact_dir, "inventory": inventory,
            "limit": args.limit, "extravars": extravars, "cmdline": "--check" if check else None}


def parse_extra_vars(values):
    """-e values -> one dict, later ones winning, read as ansible-playbook reads them: @FILE,
    an inline YAML/JSON mapping ({...}), else K=V pairs (quoted values may hold spaces)."""
    from ansible.errors import AnsibleError
    from ansible.parsing.splitter import parse_kv

    out = {}
    for value in values:
        if value.startswith("@"):
            out.update(_vars_file(value[1:]))
        elif value.lstrip().startswith("{"):
            out.update(_mapping(value, "-e %s" % _short(value)))
        else:
            try:
                pairs = parse_kv(value)
            except AnsibleError as exc:  # an unbalanced quote
                raise RunbookError("-e %s: %s" % (_short(value), str(exc).splitlines()[0]))
            # parse_kv keeps words without '=' as _raw_params
            if not pairs or "_raw_params" in pairs or not all(VAR_NAME.match(k) for k in pairs):
                raise RunbookError("-e %s: expected KEY=VALUE, a JSON object or @FILE" % _short(value))
            out.update(pairs)
    return out


def _mapping(text, where):
    import yaml  # ansible-core's dependency

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise RunbookError("%s: not YAML or JSON: %s" % (where, str(exc).splitlines()[0]))
    if not isinstance(data, dict):
        raise RunbookError("%s: not a mapping of variables" % where)
    return data


_MAX_VARS_FILE = 16 * 1024 * 1024


def _vars_file(path):
    # a regular file only, and bounded: `-e @/dev/zero` or a FIFO must not hang the command
    try:
        fd, _st = open_regular(path)
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(_MAX_VARS_FILE + 1)
        if len(data) > _MAX_VARS_FILE:
            raise RunbookError("-e @%s: larger than %d MiB" % (_short(path), _MAX_VARS_FILE >> 20))
        text = data.decode("utf-8")
    except NotRegularFile as exc:
        raise RunbookError("-e @%s: not read: %s" % (_short(path), exc.strerror or exc))
    except (OSError, UnicodeError) as exc:
        raise RunbookError("-e @%s: cannot read: %s" % (_short(path), getattr(exc, "strerror", None) or exc))
    return _mapping(text, "-e @%s" % _short(path))


def _short(value, limit=60):
    return printable(value if len(value) <= limit else value[:limit] + "...")


def find_project(explicit=None):
    """The checkout with playbooks/: --project-dir, else $GPU_RUNBOOK_PROJECT, else the one this
    package lives in (an editable install: module_utils/gpu_runbook/../..)."""
    chosen = explicit or os.environ.get(PROJECT_ENV)
    where = chosen or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    missing = [p for p in PLAYBOOKS.values() if not os.path.isfile(os.path.join(where, p))]
    if missing:
        how = "" if chosen else " (pass --project-dir or set %s to the gpu-runbook checkout)" % PROJECT_ENV
        raise RunbookError("no playbooks in %s: %s not found%s" % (where, ", ".join(missing), how))
    return os.path.abspath(where)


def _inventories(values):
    """-i values: paths made absolute (the runner's cwd is the project), host lists ('a,b,') as given."""
    if not values:
        return None
    out = []
    for value in values:
        if os.path.exists(value):
            out.append(os.path.abspath(value))
        elif "," in value:
            out.append(value)
        else:
            raise RunbookError("-i %s: no such inventory (a path, or hosts separated by commas)" % _short(value))
    return out


def _make_dir(path, what):
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise RunbookError("%s %s cannot be created: %s" % (what, path, exc.strerror or exc), EXIT_IO)
    if not os.access(path, os.W_OK | os.X_OK):
        raise RunbookError("%s %s is not writable" % (what, path), EXIT_IO)
    return os.path.abspath(path)


def execute(run, progress):
    """Run the playbook through ansible-runner; -> {'rc', 'status'}. The runner looks
    ansible-playbook up on PATH: this Python's own comes first (a venv not on PATH)."""
    import ansible_runner  # only these commands pay for it
    from ansible_runner.exceptions import AnsibleRunnerException, ConfigurationError

    bindir = os.path.dirname(sys.executable)
    if os.path.isfile(os.path.join(bindir, "ansible-playbook")):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    if not shutil.which("ansible-playbook"):
        raise RunbookError("ansible-playbook not found on PATH (pip install ansible-core)")
    kwargs = {k: run[k] for k in ("private_data_dir", "project_dir", "playbook", "ident", "inventory", "limit",
                                  "extravars", "cmdline") if run[k] is not None}
    try:
        runner = ansible_runner.run(quiet=True, suppress_env_files=True, event_handler=progress.event, **kwargs)
    except OSError as exc:
        raise RunbookError("ansible-runner could not run: %s" % (exc.strerror or exc), EXIT_IO)
    except (AnsibleRunnerException, ConfigurationError) as exc:
        raise RunbookError("ansible-runner could not run: %s" % ((str(exc).splitlines() or [type(exc).__name__])[0]))
    return {"rc": runner.rc, "status": runner.status}


class Progress(object):
    """Follows the runner's events: hosts done/failed/unreachable, the play, the task and
    during the ladder the rung and its host; keeps the results the end prints."""

    def __init__(self, stream, tty, width=None):
        self.stream, self.tty, self.width = stream, tty, width
        self.play = self.task = self.rung = self.rung_host = self.task_rung = None
        self.play_hosts, self.in_flight = set(), set()
        self.failed, self.unreachable = {}, {}  # host -> first message
        self.results = {}  # REPORT_ACTIONS / the ladder's lines -> the module's result
        self.stats = None
        self.hosts_seen = set()  # over the whole run: none means nothing ran (inventory, limit, playbook)
        self.error = None  # ansible-playbook's last '[ERROR]: ...' line, for the one-line message
        self.last_key = self.drawn = None

    def event(self, ev):
        kind, data = ev.get("event"), ev.get("event_data") or {}
        host = data.get("host")
        if host:
            self.hosts_seen.add(host)
        if kind in ("verbose", "error") and "[ERROR]" in (ev.get("stdout") or ""):
            self.error = _plain(ev["stdout"])
        if kind == "playbook_on_play_start":
            self._segment_done()
            self.play, self.task, self.rung, self.rung_host = data.get("name") or data.get("play"), None, None, None
            self.play_hosts, self.in_flight = set(), set()
        elif kind == "playbook_on_task_start":
            self.task_rung = rung = RUNGS.get(data.get("role"))
            if rung and rung != self.rung:
                self._segment_done()  # the rung that ended, with its own last task
                self.rung, self.rung_host = rung, None  # the host is the next one it starts on
            self.task = data.get("task") or data.get("name")
        elif kind == "runner_on_start" and host:
            self.play_hosts.add(host)
            self.in_flight.add(host)
            if self.task_rung and host != self.rung_host:  # not the ladder's own set_fact/include steps
                self._segment_done()
                self.rung_host = host
        elif kind in ("runner_on_ok", "runner_on_skipped", "runner_on_failed", "runner_on_unreachable") and host:
            self._result(kind, host, data)
        elif kind == "runner_item_on_ok" and isinstance(data.get("res"), dict):
            # job_context's narrowing puts every host in its group in one task on the controller
            # (add_host): each item is a host the play dealt with, though no task ran on it
            added = data["res"].get("add_host")
            if isinstance(added, dict) and isinstance(added.get("host_name"), str):
                self.play_hosts.add(added["host_name"])
        elif kind == "playbook_on_stats":
            self._segment_done()
            self.stats = data
            # the recap's failures leave out rescued tasks; a host unreachable under ignore_unreachable
            # is not in its 'dark' but was unreachable all the same
            self.failed = {h: self.failed.get(h, "failed") for h in data.get("failures") or {}}
            self.unreachable.update({h: "unreachable" for h in data.get("dark") or {} if h not in self.unreachable})
            self.task, self.rung = None, None
            self.play_hosts, self.in_flight = set(data.get("processed") or {}), set()
        self._draw()
        return True  # keep the event in artifacts/<ident>/job_events

    def _result(self, kind, host, data):
        self.play_hosts.add(host)
        self.in_flight.discard(host)
        res = data.get("res") if isinstance(data.get("res"), dict) else {}
        message = _plain(str(res.get("msg") or kind.split("_")[-1]))
        if kind == "runner_on_failed" and not data.get("ignore_errors"):
            self.failed.setdefault(host, message)
        elif kind == "runner_on_unreachable":
            self.unreachable.setdefault(host, message)
        elif kind == "runner_on_ok":
            action = data.get("task_action") or ""
            if action in REPORT_ACTIONS:  # the first: rung_verify's re-diagnosis of one host comes later
                self.results.setdefault(action, res)
            elif data.get("task") == LADDER_LINES_TASK:
                self.results["ladder"] = {"lines": res.get("msg")}

    def line(self):
        """'hosts done N/M, failed F, unreachable U; [rung R on H; ]task: T'."""
        text = "hosts done %d/%d, failed %d, unreachable %d" % (
            len(self.play_hosts - self.in_flight), len(self.play_hosts), len(self.failed), len(self.unreachable))
        if self.rung:
            text += "; rung %s on %s" % (self.rung, self.rung_host or "?")
        if self.task:
            text += "; task: %s" % self.task
        return printable(text)

    def _segment_done(self):
        """Not on a TTY: one line for the play (or rung) that just ended, with its counts."""
        if self.tty or self.play is None or (self.rung and not self.rung_host and self.stats is None):
            return
        key = (self.play, self.rung, self.rung_host, self.stats is None)
        if key != self.last_key:
            self.last_key = key
            label = "play: %s" % self.play if self.stats is None else "recap"
            _say(self.stream, printable("%s: %s" % (label, self.line())))

    def _draw(self):
        if not self.tty or self.play is None:
            return
        width = self.width or _columns(self.stream)
        text = self.line()[:max(width - 1, 10)]
        if text != self.drawn:
            self.drawn = text
            _say(self.stream, "\r\x1b[K" + text, end="")

    def close(self):
        """The recap: the last line drawn stays on the terminal; elsewhere it is written once."""
        if self.tty and self.drawn is not None:
            _say(self.stream, "")
        elif self.stats is not None:
            self._segment_done()


def _columns(stream):
    """The width of the terminal the progress is drawn on (stderr's, not stdout's)."""
    try:
        columns = os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):
        columns = 0
    return columns or shutil.get_terminal_size((80, 24)).columns


def finish(run, progress, result, out, err):
    """The end: failed hosts, the playbook's last lines, the artifacts' place; -> exit status."""
    progress.close()
    for host, why in sorted(progress.unreachable.items()):
        _say(err, "gpu-runbook: %s: unreachable: %s" % (host, why))
    for host, why in sorted(progress.failed.items()):
        _say(err, "gpu-runbook: %s: failed: %s" % (host, why))
    lines = []
    for key in REPORT_ACTIONS + ("ladder",):
        got = (progress.results.get(key) or {}).get("lines")
        lines += [got] if isinstance(got, str) else list(got or [])
    lines.append("artifacts: %s" % run["artifact_dir"])
    try:
        out.write("".join(printable(str(line)) + "\n" for line in lines))
        out.flush()
    except OSError as exc:
        _say(err, "gpu-runbook: output could not be written: %s" % (exc.strerror or exc))
        return EXIT_IO
    return _status(run, progress, result, err)


def _status(run, progress, result, err):
    report = progress.results.get("gpu_runbook_report")
    if report is None and (not progress.hosts_seen or result["rc"] in ANSIBLE_BAD_INPUT):
        why = progress.error or "no host matched (inventory %s, limit %s)" % (
            ", ".join(run["inventory"] or ["ansible.cfg's"]), run["limit"] or "none")
        _say(err, "gpu-runbook: nothing ran: %s" % why)
        return EXIT_UNUSABLE
    if report is None:
        _say(err, "gpu-runbook: the playbook stopped before its report (ansible-playbook rc %s%s); see %s" % (
            result["rc"], ": " + progress.error if progress.error else "",
            os.path.join(run["artifact_dir"], "stdout")))
        return EXIT_CRITICAL
    if result["rc"] != 0 or progress.failed or progress.unreachable:
        return EXIT_CRITICAL
    analysis = report.get("analysis") or {}
    job = analysis.get("job") or {}
    cluster = analysis.get("cluster") or {}
    findings = list(analysis.get("hosts") or []) + list(job.get("findings") or []) + list(cluster.get("findings") or [])
    return exit_status([f for f in findings if isinstance(f, dict) and "severity" in f])


def _plain(text):
    """A console line of ansible's as plain text: no colour codes, one line, printable."""
    return printable(" ".join(re.sub(r"\x1b\[[0-9;]*m", "", text).split()))[:400]


def _say(stream, text, end="\n"):
    """Write to stderr-like streams; a closed one is not worth a traceback."""
    try:
        stream.write(text + end)
        stream.flush()
    except (OSError, ValueError):
        pass
