"""Shared test helpers: repo paths and a runner for real ansible-playbook."""

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(REPO, "tests", "fixtures")
DEMO = os.path.join(REPO, "inventory-examples", "demo")
BIN = os.path.dirname(sys.executable)


def ansible_env(extra=None):
    env = dict(os.environ)
    env["PATH"] = BIN + os.pathsep + env.get("PATH", "")
    env["ANSIBLE_CONFIG"] = os.path.join(REPO, "ansible.cfg")
    env["ANSIBLE_NOCOLOR"] = "1"
    env["ANSIBLE_FORCE_COLOR"] = "0"
    env.setdefault("ANSIBLE_LOCAL_TEMP", os.path.join(REPO, ".venv", "ansible-tmp"))
    if extra:
        env.update(extra)
    return env


def run_playbook(args, env=None, timeout=600):
    """Run the real ansible-playbook from the repo root; -> CompletedProcess."""
    cmd = [os.path.join(BIN, "ansible-playbook")] + list(args)
    return subprocess.run(cmd, cwd=REPO, env=ansible_env(env), capture_output=True, text=True, timeout=timeout)


SLEEP = shutil.which("sleep")  # absolute: tests that fake tools put only the stand-ins on PATH


def hang_script(pids_path):
    """Body of a stand-in tool that never answers and has a child; it records both pids, so
    a test can check that the deadline killed them."""
    return "%s 300 &\necho $! >> %s\necho $$ >> %s\nwait\n" % (SLEEP, pids_path, pids_path)


def process_alive(pid):
    """A process that still runs (a zombie waiting for its reaper does not)."""
    try:
        with open("/proc/%d/stat" % pid) as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def still_running(pids, within=2.0):
    """The pids still alive after at most ``within`` seconds (SIGKILL lands asynchronously)."""
    end = time.monotonic() + within
    while True:
        alive = [p for p in pids if process_alive(p)]
        if not alive or time.monotonic() > end:
            return alive
        time.sleep(0.05)


def load_json(path):
    with open(path) as fh:
        return json.load(fh)


@pytest.fixture
def repo():
    return REPO
