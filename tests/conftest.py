"""Shared test helpers: repo paths and a runner for real ansible-playbook."""

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import textwrap
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


# A Python warning printed by an installed package, not by this repo's code: "FILE:LINE: NameWarning:
# text" and the source line Python quotes under it (cryptography 51 deprecates DSA, and ansible-core
# 2.19 imports it at start: every ansible command prints that warning, whatever our docs and roles say).
PYTHON_WARNING = re.compile(r"^(\S+\.py):\d+: \w*Warning: .*\n(?:[ \t]+\S.*\n)?", re.M)


def _foreign(path):
    return "/site-packages/" in path or "/dist-packages/" in path or not path.startswith(REPO + os.sep)


def own_stderr(text):
    """``text`` without the Python warnings of installed packages: what is left is ansible's own
    [WARNING]s / [DEPRECATION WARNING]s about our modules and roles, and our errors."""
    text = text if text.endswith("\n") else text + "\n"
    return PYTHON_WARNING.sub(lambda m: "" if _foreign(m.group(1)) else m.group(0), text).strip()


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


def write_tool(bindir, name, body):
    """A stand-in tool: a /bin/sh script ``body`` (dedented) named ``name`` in ``bindir``."""
    path = bindir / name
    path.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


HEALTHY_SYSFS = os.path.join(REPO, "inventory-examples", "demo-captures", "nodes", "gpu-r3-n01", "ib-sysfs.txt")


def make_live_host(tmp_path):
    """A local 'host' for the real gpu_health_facts: a bin dir for stand-in tools, a healthy
    8-HCA IB sysfs tree (from the demo's capture) and an inventory pointing at both."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    sysfs = tmp_path / "sys"
    with open(HEALTHY_SYSFS) as fh:
        for line in fh:
            path, _, value = line.rstrip("\n").partition(":")
            dest = sysfs / path[len("/sys/"):]
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(value + "\n")
    inv = tmp_path / "hosts.ini"
    inv.write_text(textwrap.dedent("""\
        [gpu_nodes]
        node-live ansible_connection=local

        [gpu_nodes:vars]
        ansible_python_interpreter={python}
        gpu_health_sysfs_root={sysfs}
        gpu_health_expected_gpus=8
        """).format(python=shutil.which("python3", path=os.path.dirname(sys.executable)) or sys.executable,
                    sysfs=sysfs))
    return {"bin": bindir, "sysfs": sysfs, "inv": inv, "tmp": tmp_path}


def run_module(tmp_path, module, args, host="node-live", check=False, env=None):
    """One module through the real ``ansible HOST -m MODULE`` on the local connection;
    -> (its result as ``--tree`` wrote it, CompletedProcess). Never a traceback."""
    inv = tmp_path / "hosts.ini"
    inv.write_text("%s ansible_connection=local ansible_python_interpreter=%s\n" % (host, sys.executable))
    tree = tmp_path / "tree"
    if (tree / host).exists():
        os.unlink(str(tree / host))  # a result is this run's or none
    cmd = [os.path.join(BIN, "ansible"), host, "-i", str(inv), "-m", module,
           "-a", json.dumps(args), "--tree", str(tree)] + (["--check"] if check else [])
    proc = subprocess.run(cmd, cwd=REPO, env=ansible_env(env), capture_output=True, text=True, timeout=300)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout[-3000:] + proc.stderr[-3000:]
    try:
        with open(str(tree / host)) as fh:
            return json.load(fh), proc
    except (OSError, ValueError):
        pytest.fail("no result from ansible: %s %s" % (proc.stdout[-2000:], proc.stderr[-2000:]))


def load_json(path):
    with open(path) as fh:
        return json.load(fh)


@pytest.fixture
def repo():
    return REPO
