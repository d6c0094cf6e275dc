"""Values from outside are validated and only ever argv (issue 11). Every string, path and
list-of-strings option of every module in library/ (read from its DOCUMENTATION, so a new
option is covered by itself) gets shell metacharacters, quotes, a newline, option-like words,
a glob, a path climbing out, 8 KB and a NUL, through the real ansible-playbook on the local
connection, in check mode where the module has it. The host's tools are stand-ins that log
their argv (and a `touch` an injected shell would find). Then: nothing was executed, no
traceback, no shell ever ran, a value reaches a command whole (never split into words, an
option-like value only after '--'), and the options that name things (nodes, units, ids)
refuse every such value, naming the option, before any command runs."""

import ast
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import uuid

import pytest
import yaml

from tests.conftest import BIN, REPO, ansible_env

MARK = "PWNED-%s" % uuid.uuid4().hex
PWNED = "/tmp/" + MARK
HOSTILE = [
    "; touch %s" % PWNED,
    "$(touch %s)" % PWNED,
    "`touch %s`" % PWNED,
    "a'b\"c",
    "a\nb",
    "-rf",
    "--all",
    "*",
    "../../etc/passwd",
    "x" * 8192,
    "a\x00b",
]
# Options whose value names something on a command line or a file name: every hostile value
# is refused, by a message naming the option, before any command runs.
NAMES = {
    "slurm_node": ["name", "incident"],
    "gpu_reset": ["gpu", "monitor_units", "fabric_manager_unit"],
    "ib_restart": ["unit", "expected_ports"],
    "gpu_runbook_job": ["job_id", "nodes"],
    "gpu_runbook_rma": ["host"],
    "slurm_job": ["job_id", "node"],
    "gpu_runbook_restart_ib": ["unit", "hcas"],
    "gpu_active_checks": ["ib_pair_peer", "ib_device", "expected_pci", "nccl_message_size"],
}
# Free text that reaches a command as one word (a Slurm reason): only control characters and
# length are refused.
TEXT = {"slurm_node": ["reason"]}
# what the baseline runs: the stand-ins are reached, so the argv checks are not vacuous
BASELINE_RUNS = {"slurm_node": "scontrol", "gpu_runbook_job": "scontrol", "gpu_health_facts": "nvidia-smi",
                 "gpu_reset": "nvidia-smi", "slurm_job": "squeue"}
TOOLS = ("nvidia-smi", "scontrol", "squeue", "sacct", "systemctl", "modprobe", "dmesg", "journalctl",
         "ibstat", "perfquery", "lspci", "ip", "sh", "bash")

# a stand-in logs (case, argc, argv...) NUL-separated: no argv word can hold a NUL
STUB = """#!/bin/sh
printf '%%s\\0' "$HOSTILE_CASE" "$#" "$0" "$@" >> %s
if [ "$1 $2" = "show node" ]; then for last; do :; done; echo "NodeName=$last State=IDLE"; fi
"""


def module_options():
    """{module: (the options taking strings, paths or lists of them, check mode supported)}."""
    out = {}
    for path in sorted(glob.glob(os.path.join(REPO, "library", "*.py"))):
        tree = ast.parse(open(path).read())
        doc = next(n.value.value for n in tree.body if isinstance(n, ast.Assign)
                   and getattr(n.targets[0], "id", "") == "DOCUMENTATION")
        doc = yaml.safe_load(doc)
        opts = [k for k, v in doc["options"].items()
                if v.get("type", "str") in ("str", "path")
                or (v.get("type") == "list" and v.get("elements", "str") in ("str", "path"))]
        check = (doc.get("attributes") or {}).get("check_mode", {}).get("support") in ("full", "partial")
        out[os.path.basename(path)[:-3]] = (opts, check, doc["options"])
    return out


MODULES = module_options()


def baseline(module, tmp):
    """Valid arguments that take the module as far as it goes on this host."""
    sysfs, proc = str(tmp / "sys"), str(tmp / "proc")
    return {
        # check mode: the plan of each check, nothing run
        "gpu_active_checks": {"checks": ["inventory", "dcgm", "nccl", "nvbandwidth", "ib_pair"], "expected_gpus": 8,
                              "ib_pair_peer": "gpu-r3-n02", "ib_device": "mlx5_0"},
        "gpu_health_facts": {"probes": ["nvidia_smi", "compute_apps", "kernel_log", "ib_sysfs", "ibstat",
                                        "perfquery"], "probe_timeout": 20, "sysfs_root": sysfs,
                             "kern_log_path": str(tmp / "kern.log")},
        "gpu_reset": {"gpu": "0000:3b:00.0", "node_drained": True, "proc_root": proc, "dev_root": str(tmp)},
        "gpu_runbook_job": {"job_id": "12345"},
        "gpu_runbook_job_env": {"dir": str(tmp / "env"), "section": "nccl_env"},
        "gpu_runbook_ledger": {"state_dir": str(tmp / "state"), "action": "show"},
        "gpu_runbook_plan": {"analysis": {}},
        "gpu_runbook_report": {"results": {}, "report_dir": str(tmp / "report")},
        "gpu_runbook_rma": {"host": "gpu-r3-n01", "rma_dir": str(tmp / "rma")},
        "ib_restart": {"node_drained": True, "sysfs_root": sysfs, "proc_root": proc, "wait": 1, "soak": 0},
        "slurm_job": {"job_id": "4242", "action": "requeue", "node": "gpu-r3-n01"},
        # the rung plugins: no GPU / HCA named, so the ledger (a fresh state dir) is all they touch
        "gpu_runbook_reset_gpus": {"gpus": [], "incident": "INC-1", "state_dir": str(tmp / "state"),
                                   "reset": {"node_drained": True}},
        "gpu_runbook_restart_ib": {"hcas": ["mlx5_0"], "incident": "INC-1", "state_dir": str(tmp / "state"),
                                   "restart": {"node_drained": True, "sysfs_root": sysfs, "proc_root": proc,
                                               "wait": 1, "soak": 0}},
        # not in check mode: the drain's update (Reason=...) is what reaches scontrol; the stand-in changes nothing
        "slurm_node": {"name": "gpu-r3-n01", "state": "drained", "reason": "Xid 79", "incident": "INC-1",
                       "state_dir": str(tmp / "drains")},
    }[module]


def _stubs(tmp):
    bindir = tmp / "bin"
    bindir.mkdir()
    log = tmp / "argv.jsonl"
    for tool in TOOLS:
        (bindir / tool).write_text(STUB % log)
        (bindir / tool).chmod(0o755)
    os.symlink(shutil.which("touch"), str(bindir / "touch"))  # an injected shell would find it
    return bindir, log


def _playbook(module, tmp, bindir):
    """One play: the baseline, then each hostile value in options; -> (playbook path, cases), a case
    being (options, value). An option that names something gets every value alone; the others
    (paths, free text) get each value all at once, to keep the run short; an option with choices,
    refused by Ansible's own check, a few values alone."""
    opts, check, spec = MODULES[module]
    base = baseline(module, tmp)
    named = [o for o in opts if o in NAMES.get(module, ())]
    choices = [o for o in opts if spec[o].get("choices")]
    rest = tuple(o for o in opts if o not in named and o not in choices)
    cases = [((), None)] + [((o,), v) for o in named for v in HOSTILE] + \
        [((o,), v) for o in choices for v in HOSTILE[::4]] + [(rest, v) for v in HOSTILE if rest]
    tasks = []
    for n, (options, value) in enumerate(cases):
        args = dict(base)
        for opt in options:
            args[opt] = [value] if spec[opt].get("type") == "list" else value
        tasks.append({"name": "case %d" % n, module: args, "register": "c%d" % n, "ignore_errors": True,
                      "check_mode": check and module != "slurm_node",
                      "environment": {"PATH": str(bindir), "HOSTILE_CASE": str(n), "HOME": str(tmp / "home")}})
    tasks.append({"name": "results", "copy": {"dest": str(tmp / "results.json"),
                                              "content": "{{ [%s] | to_json }}" % ", ".join(
                                                  "c%d" % n for n in range(len(cases)))}})
    play = [{"hosts": "hostile", "gather_facts": False, "tasks": tasks}]
    path = tmp / "play.json"
    path.write_text(json.dumps(play))  # JSON is YAML: every value exactly as given
    return path, cases


def _split(value):
    """The words a shell would make of ``value``: none may reach a command on its own."""
    return [w for w in re.split(r"[\s;'\"`$()\x00]+", value) if w and w != value]


def _argv_problems(value, argvs):
    out = []
    words = set(_split(value))
    for argv in argvs:
        for i, word in enumerate(argv):
            if word in words:
                out.append("%r split: %r is a word of its own in %r" % (value, word, argv[:8]))
            if word == value and value.startswith("-") and "--" not in argv[:i]:
                out.append("%r reaches %s as an option: %r" % (value, os.path.basename(argv[0]), argv[:8]))
            if MARK in word and value not in word:
                out.append("%r reaches %s cut: %r" % (value[:40], os.path.basename(argv[0]), word[:80]))
    return out


def run_module_cases(module, tmp_path):
    tmp = tmp_path
    (tmp / "sys").mkdir()
    (tmp / "proc").mkdir()
    (tmp / "home").mkdir()
    (tmp / "kern.log").write_text("")
    bindir, log = _stubs(tmp)
    play, cases = _playbook(module, tmp, bindir)
    inv = tmp / "hosts.ini"
    inv.write_text("hostile ansible_connection=local ansible_python_interpreter=%s\n" % sys.executable)
    # run from deep inside tmp: a relative hostile path ('../../etc/passwd', '*') stays in it
    cwd = tmp / "a" / "b" / "c" / "d"
    cwd.mkdir(parents=True)
    env = ansible_env({"ANSIBLE_CONFIG": os.path.join(REPO, "ansible.cfg")})
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", str(inv), str(play)], cwd=str(cwd),
                          env=env, capture_output=True, text=True, timeout=1200)
    output = proc.stdout + proc.stderr
    assert os.path.exists(str(tmp / "results.json")), output[-4000:]
    results = json.load(open(str(tmp / "results.json")))
    return cases, results, _logged(log), output


def _logged(log):
    """{case: [argv]} from the stand-ins' log."""
    argvs = {}
    words = log.read_bytes().decode("utf-8", "surrogateescape").split("\0") if log.exists() else []
    while len(words) > 2:
        case, argc = words[0], int(words[1])
        argvs.setdefault(int(case), []).append(words[2:3 + argc])
        words = words[3 + argc:]
    return argvs


@pytest.mark.parametrize("module", sorted(MODULES))
def test_hostile_values_never_run_and_reach_commands_whole(module, tmp_path):
    assert not os.path.exists(PWNED)
    cases, results, argvs, output = run_module_cases(module, tmp_path)
    assert not os.path.exists(PWNED), "a value was executed by a shell (%s)" % module
    assert "Traceback" not in output, output[-4000:]
    assert not re.search(r"\bsh: \d+: ", output), "a shell ran: %s" % output[-2000:]
    assert len(results) == len(cases)
    if module in BASELINE_RUNS:
        assert BASELINE_RUNS[module] in [os.path.basename(a[0]) for a in argvs.get(0, [])], argvs.get(0)
    problems = []
    for n, ((options, value), res) in enumerate(zip(cases, results)):
        said = json.dumps(res)
        where = "%s %s=%r" % (module, ",".join(options), (value or "")[:40])
        if "Traceback" in said or "MODULE FAILURE" in said:
            problems.append("%s: crashed: %s" % (where, said[-300:]))
        if any(os.path.basename(a[0]) in ("sh", "bash") for a in argvs.get(n, [])):
            problems.append("%s: ran a shell: %r" % (where, argvs[n]))
        if not options:
            continue
        problems += ["%s: %s" % (where, p) for p in _argv_problems(value, argvs.get(n, []))]
        must_refuse = any(o in NAMES.get(module, ()) for o in options) or (
            any(o in TEXT.get(module, ()) for o in options) and (len(value) > 512 or re.search(r"[\x00-\x1f]", value)))
        if must_refuse:
            if not (res.get("failed") and any(o in (res.get("msg") or "") for o in options)):
                problems.append("%s: not refused naming the option: %s" % (where, (res.get("msg") or "")[:200]))
            elif argvs.get(n):
                problems.append("%s: refused, but only after running %r" % (where, argvs[n]))
    assert not problems, "\n".join(problems[:40])
