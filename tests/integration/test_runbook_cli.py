"""`gpu-runbook diagnose|remediate`: the venv's real CLI, the real ansible-runner and
ansible-playbook, on the demo rack (captures replayed), each run from a temp cwd with its own
HOME (the default private data dir is ~/.gpu-runbook/runner). Nothing is mocked; only the rung
progress is also fed a ladder's event sequence, since the demo can only plan."""

import fcntl
import glob
import json
import os
import pty
import select
import struct
import subprocess
import termios

import pytest
import yaml

from gpu_runbook.runbook import Progress
from tests.conftest import BIN, DEMO, REPO

CLI = os.path.join(BIN, "gpu-runbook")
JOB_LOGS = os.path.join(REPO, "inventory-examples", "demo-captures", "job-4242")
PROGRESS = "hosts done %d/%d, failed 0, unreachable 0"


def cli_env(home, extra=None):
    """The user's environment without the venv on PATH (the CLI finds its own ansible-playbook)
    and without ANSIBLE_CONFIG (the project's ansible.cfg is found from the runner's cwd)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_") and k != "GPU_RUNBOOK_PROJECT"}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p and p != BIN)
    env["HOME"] = str(home)
    env.update(extra or {})
    return env


def run_cli(tmp_path, *args, extra_env=None, timeout=600):
    cwd = tmp_path / "cwd"
    cwd.mkdir(exist_ok=True)
    return subprocess.run([CLI] + list(args), cwd=str(cwd), env=cli_env(tmp_path / "home", extra_env),
                          capture_output=True, text=True, timeout=timeout)


def play_names(playbook):
    with open(os.path.join(REPO, "playbooks", playbook)) as fh:
        return [p["name"] for p in yaml.safe_load(fh)]


def expected(report):
    """The summary line and exit status report.json implies (the same counting as the console's)."""
    sev = [h["severity"] for h in report["hosts"]]
    crit, warn = sev.count("critical"), sev.count("warning")
    line = "%d host(s): %d critical, %d warning, %d healthy" % (len(sev), crit, warn, len(sev) - crit - warn)
    worst = sev + [f["severity"] for f in (report.get("job") or {}).get("findings") or []]
    return line, 2 if "critical" in worst else 1 if "warning" in worst else 0


def artifacts_of(proc):
    last = proc.stdout.splitlines()[-1]
    assert last.startswith("artifacts: "), proc.stdout[-2000:]
    return last[len("artifacts: "):]


def job_events(artifacts):
    out = []
    for name in glob.glob(os.path.join(artifacts, "job_events", "*.json")):
        with open(name) as fh:
            out.append(json.load(fh))
    return out


def assert_runner_kept(path, rc=None):
    """The runner's own files: rc (ansible-playbook's), status, the console's stdout."""
    with open(os.path.join(path, "rc")) as fh:
        kept_rc = fh.read().strip()
    with open(os.path.join(path, "status")) as fh:
        status = fh.read().strip()
    assert kept_rc.isdigit() and status in ("successful", "failed"), (kept_rc, status)
    if rc is not None:
        assert (kept_rc, status) == (str(rc), "successful" if rc == 0 else "failed")
    assert os.path.getsize(os.path.join(path, "stdout")) > 0


def assert_artifacts(path, home):
    """Where AWX keeps them: <private data dir>/artifacts/<ident>/ with job_events, stdout, rc, status."""
    assert os.path.dirname(os.path.dirname(path)) == os.path.join(str(home), ".gpu-runbook", "runner")
    kinds = {ev["event"] for ev in job_events(path)}
    assert {"playbook_on_play_start", "runner_on_ok", "playbook_on_stats"} <= kinds
    assert_runner_kept(path, rc=0)


def progress_lines(stderr):
    assert "\r" not in stderr and "\x1b" not in stderr  # not a TTY: no redrawing
    return [ln for ln in stderr.splitlines() if ln.startswith(("play: ", "recap: "))]


@pytest.fixture(scope="module")
def diagnosed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("diagnose")
    proc = run_cli(tmp, "diagnose", "-i", DEMO, "--limit", "gpu-rack3", "-e", "job_log_dir=" + JOB_LOGS,
                   "--report-dir", "reports")  # relative: from the cwd, not the project dir
    return tmp, proc


def test_diagnose_progress_summary_and_artifacts(diagnosed):
    tmp, proc = diagnosed
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    report_json = tmp / "cwd" / "reports" / "report.json"
    with open(str(report_json)) as fh:
        report = json.load(fh)
    summary_line, status = expected(report)
    assert proc.returncode == status, proc.stderr[-3000:]
    n = len(report["hosts"])
    assert n == 8  # the demo rack: gpu-r3-n[01:08]
    lines = progress_lines(proc.stderr)
    plays = [ln[len("play: "):].split(": hosts done")[0] for ln in lines if ln.startswith("play: ")]
    assert plays == play_names("diagnose.yml")
    assert all(PROGRESS % (n, n) in ln for ln in lines), lines
    assert lines[-1] == "recap: " + PROGRESS % (n, n)
    assert "task: Show the diagnosis" in lines[-2]  # the play's line carries its last task
    out = proc.stdout.splitlines()
    assert out[-3] == summary_line
    assert out[-2] == "report: %s" % (tmp / "cwd" / "reports" / "report.html")
    assert_artifacts(artifacts_of(proc), tmp / "home")


def test_remediate_without_confirm_only_plans(tmp_path):
    proc = run_cli(tmp_path, "remediate", "-i", DEMO, "-l", "gpu-rack3", "--job-id", "4242",
                   "-e", "job_nodes=gpu-r3-n[01-08]", "-e", "job_log_dir=" + JOB_LOGS,
                   "-e", "max_drain=3 max_per_domain=3", "-e", '{"max_drain_percent": 50}')
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    art = artifacts_of(proc)
    assert_artifacts(art, tmp_path / "home")
    with open(os.path.join(art, "report", "report.json")) as fh:
        summary_line, status = expected(json.load(fh))
    assert proc.returncode == status
    with open(os.path.join(art, "plan", "plan.json")) as fh:
        policy = json.load(fh)["policy"]
    assert (policy["max_drain"], policy["max_per_domain"], policy["max_drain_percent"]) == (3, 3, 50)  # -e reached it
    planned = [ev["event_data"]["res"] for ev in job_events(art)
               if ev["event"] == "runner_on_ok" and ev["event_data"].get("task_action") == "gpu_runbook_plan"]
    assert len(planned) == 1 and planned[0]["summary"]["plan_only"] is True  # no confirm=yes reached it
    assert not os.path.exists(os.path.join(art, "plan", "result.json"))  # the ladder never ran
    lines = progress_lines(proc.stderr)
    plays = [ln[len("play: "):].split(": hosts done")[0] for ln in lines if ln.startswith("play: ")]
    assert plays == play_names("remediate.yml")
    ladder = next(ln for ln in lines if ln.startswith("play: Climb the ladder"))
    assert PROGRESS % (0, 0) in ladder and "rung" not in ladder  # plan only: no host climbs
    assert PROGRESS % (8, 8) in lines[1] and lines[-1] == "recap: " + PROGRESS % (8, 8)
    out = proc.stdout.splitlines()
    assert summary_line in out
    assert out.index(summary_line) < next(i for i, ln in enumerate(out) if ln.startswith("plan "))
    assert out[-2].startswith("plan written: %s" % os.path.join(art, "plan", "plan.json"))


def test_progress_on_a_terminal_is_one_redrawn_line(tmp_path):
    """Under a pty (60 columns): \\r-redrawn, never wider than the terminal, no per-play lines."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 60, 0, 0))
    (tmp_path / "cwd").mkdir()
    proc = subprocess.Popen([CLI, "diagnose", "-i", DEMO, "-l", "gpu-r3-n01:gpu-r3-n02", "--report-dir", "r"],
                            cwd=str(tmp_path / "cwd"), env=cli_env(tmp_path / "home"),
                            stdin=slave, stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 300)
        if not ready:
            proc.kill()
            pytest.fail("no output for 300 s")
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the pty
            break
        if not data:
            break
        chunks.append(data)
    rc = proc.wait(timeout=60)
    os.close(master)
    text = b"".join(chunks).decode("utf-8", "replace")
    assert "Traceback" not in text and os.path.isfile(str(tmp_path / "cwd" / "r" / "report.json")), text[-3000:]
    with open(str(tmp_path / "cwd" / "r" / "report.json")) as fh:
        summary_line, status = expected(json.load(fh))
    assert rc == status
    draws = text.split("\r\x1b[K")[1:]
    assert len(draws) >= 5
    shown = [d.split("\r\n")[0] for d in draws]
    assert all(0 < len(s) <= 59 for s in shown), shown
    assert shown[-1] == PROGRESS % (2, 2)
    assert "\nplay: " not in text and "recap: " not in text
    assert summary_line in text and "artifacts: " in text


@pytest.mark.parametrize("args", [
    ["diagnose", "--job-id", "12 34"],
    ["diagnose", "-e", "no_equals_sign"],
    ["diagnose", "-e", "{not json"],
    ["diagnose", "-e", "@missing-vars.yml"],
    ["diagnose", "-i", "no-such-inventory"],
    ["diagnose", "--no-such-option"],
    ["remediate", "--confirm", "--check"],
    ["remediate", "-e", "confirm=yes"],
    ["frobnicate"],
], ids=lambda a: " ".join(a))
def test_bad_arguments_say_one_line_and_exit_3(tmp_path, args):
    proc = run_cli(tmp_path, *args)
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith("gpu-runbook: "), proc.stderr
    assert not (tmp_path / "home" / ".gpu-runbook").exists()  # refused before anything ran


@pytest.mark.parametrize("command,inventory,limit", [
    ("diagnose", DEMO, "no-such-host"),
    ("remediate", "empty.ini", None),
], ids=["limit matches nothing", "empty inventory"])
def test_no_host_to_run_on_exits_3_with_one_line(tmp_path, command, inventory, limit):
    (tmp_path / "cwd").mkdir()
    (tmp_path / "cwd" / "empty.ini").write_text("")
    proc = run_cli(tmp_path, command, "-i", inventory, *(["--limit", limit] if limit else []))
    assert proc.returncode == 3, proc.stderr[-3000:]
    said = [ln for ln in proc.stderr.splitlines() if ln.startswith("gpu-runbook: ")]
    assert len(said) == 1 and said[0].startswith("gpu-runbook: nothing ran: "), proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert_runner_kept(artifacts_of(proc))


@pytest.mark.parametrize("how", ["option", "env"])
def test_no_playbooks_says_where_it_looked(tmp_path, how):
    empty = tmp_path / "not-a-checkout"
    empty.mkdir()
    if how == "option":
        proc = run_cli(tmp_path, "diagnose", "--project-dir", str(empty))
    else:
        proc = run_cli(tmp_path, "diagnose", extra_env={"GPU_RUNBOOK_PROJECT": str(empty)})
    assert proc.returncode == 3
    assert proc.stderr.count("\n") == 1 and "no playbooks in %s" % empty in proc.stderr, proc.stderr


def test_unwritable_private_dir_exits_4(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    proc = run_cli(tmp_path, "diagnose", "-i", DEMO, "--private-data-dir", str(blocker / "runner"))
    assert proc.returncode == 4
    assert proc.stderr.count("\n") == 1 and "private data dir" in proc.stderr, proc.stderr


def _event(kind, play, task=None, role=None, host=None):
    data = {"play": play, "task": task, "role": role or ""}
    if kind == "playbook_on_play_start":
        data["name"] = play
    if host:
        data["host"] = host
    return {"event": kind, "event_data": data}


class Lines(object):
    def __init__(self):
        self.text = ""

    def write(self, s):
        self.text += s

    def flush(self):
        pass


def test_ladder_progress_names_the_rung_and_host():
    """The ladder play's events (the shape ansible-runner hands the event handler): one line
    per rung and host, in the order climbed, on a non-TTY stream."""
    ladder = play_names("remediate.yml")[3]
    stream = Lines()
    progress = Progress(stream, tty=False)
    events = [_event("playbook_on_play_start", ladder)]
    for host in ("gpu-r3-n03", "gpu-r3-n05"):  # serial: 1, as the ladder play runs
        # the play's own steps (set_fact, include_role) have no role; the rungs' tasks name theirs
        for role, task in ((None, "Note when this host's ladder started"), (None, "Drain the node"),
                           ("rung_drain", "Validating arguments - rung_drain"), ("rung_drain", "Drain the node"),
                           (None, "Reset the GPUs the plan names"), ("rung_gpu_reset", "Validating arguments - "
                                                                     "rung_gpu_reset"),
                           ("rung_gpu_reset", "Reset the GPUs"), ("rung_verify", "Verify the node")):
            events += [_event("playbook_on_task_start", ladder, task, role),
                       _event("runner_on_start", ladder, task, role, host),
                       _event("runner_on_ok", ladder, task, role, host)]
    events.append({"event": "playbook_on_stats", "event_data": {"processed": {"gpu-r3-n03": 1, "gpu-r3-n05": 1},
                                                                 "failures": {}, "dark": {}}})
    for ev in events:
        assert progress.event(ev) is True
    progress.close()
    rung_lines = [ln for ln in stream.text.splitlines() if "; rung " in ln]
    rungs = [ln.split("; rung ")[1].split(";")[0] for ln in rung_lines]
    # each rung's line ends with a task of its own, not the next rung's first one
    assert not any("Validating arguments - rung_gpu_reset" in ln or "Validating arguments - rung_verify" in ln
                   for ln in rung_lines), rung_lines
    assert rungs == ["Drain on gpu-r3-n03", "Reset on gpu-r3-n03", "Verify on gpu-r3-n03",
                     "Drain on gpu-r3-n05", "Reset on gpu-r3-n05", "Verify on gpu-r3-n05"]
    assert stream.text.splitlines()[-1] == "recap: " + PROGRESS % (2, 2)


def test_unreachable_host_is_counted_named_and_exits_2(tmp_path):
    """One replayed host and one whose sshd is not there (a closed local port): the run goes on,
    the progress and the recap count it, stderr names it, the report holds both."""
    inv = tmp_path / "hosts.ini"
    inv.write_text(
        "[gpu_nodes]\n"
        "gpu-r3-n01 ansible_connection=local ansible_python_interpreter=%s gpu_health_capture_dir=%s\n"
        "dead-node ansible_host=127.0.0.1 ansible_port=9 ansible_connection=ssh\n"
        % (os.path.join(BIN, "python"), os.path.join(REPO, "inventory-examples", "demo-captures", "nodes",
                                                      "gpu-r3-n01")))
    proc = run_cli(tmp_path, "diagnose", "-i", str(inv), "--report-dir", "r")
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    with open(str(tmp_path / "cwd" / "r" / "report.json")) as fh:
        report = json.load(fh)
    assert sorted(h["host"] for h in report["hosts"]) == ["dead-node", "gpu-r3-n01"]
    assert proc.returncode == 2
    lines = progress_lines(proc.stderr)
    assert lines[-1] == "recap: hosts done 2/2, failed 0, unreachable 1"
    named = [ln for ln in proc.stderr.splitlines() if ln.startswith("gpu-runbook: dead-node: unreachable: ")]
    assert len(named) == 1 and "Connection refused" in named[0], proc.stderr
    assert proc.stdout.splitlines()[-3] == expected(report)[0]


def test_closed_stdout_exits_4_with_one_line(tmp_path):
    """stdout a pipe nobody reads any more (as in `| head -0`): one line on stderr, exit 4."""
    (tmp_path / "cwd").mkdir()
    read_end, write_end = os.pipe()
    os.close(read_end)
    with open(os.devnull, "w") as devnull:
        proc = subprocess.Popen([CLI, "diagnose", "-i", DEMO, "-l", "gpu-r3-n01"], cwd=str(tmp_path / "cwd"),
                                env=cli_env(tmp_path / "home"), stdout=write_end, stderr=subprocess.PIPE,
                                stdin=devnull, text=True)
    os.close(write_end)
    _, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 4, stderr[-3000:]
    said = [ln for ln in stderr.splitlines() if ln.startswith("gpu-runbook: ")]
    assert said == ["gpu-runbook: output could not be written: Broken pipe"], stderr[-3000:]
    assert "Traceback" not in stderr
