"""Shared test helpers: repo paths and a runner for real ansible-playbook."""

import json
import os
import subprocess
import sys

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


def load_json(path):
    with open(path) as fh:
        return json.load(fh)


@pytest.fixture
def repo():
    return REPO
