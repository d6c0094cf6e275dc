"""Controller aggregation at fleet scale, through the real report step (issue 12 "Scale").

    .venv/bin/python tests/benchmarks/bench_aggregate.py [--sizes 1000,10000] [--repeat 3] [--faulty 0.01]

For each size N: an inventory of N hosts in racks of 32 (ansible_connection=local, no SSH; a
small inventory plugin written next to the run), and each host's gather as a real run leaves
it in ansible-playbook: its gpu_health facts and its registered ``gpu_health_result`` (a
callback written next to the run sets both at the play's start, as the strategy does for a
result: the facts make Ansible's per-host variable lookups cost what they cost in a real run;
one set_fact per host took over 24 minutes at 10,000). Then the real diagnosis_report role: the
gpu_runbook_report action plugin, once on the controller, reading every host's result, report
files written. The results are real: the gpu_health_facts module run by the gpu_health role on
the demo rack's captures (inventory-examples/demo: 5 healthy hosts, 3 sick ones), copied to N
host names with ~1% of the hosts sick. Nothing is timed but the report task.

Per run: the report task's wall time (task start -> its result: a small callback); the CPU
ansible-playbook and its workers used from the task's start to the end of the run; the most
memory any worker or module process had to itself (sampled; the worker that runs the step);
and the whole run's wall, CPU and peak RSS (the load included). Median of --repeat runs up to --once-above hosts, one run above. Goal: < 10 s and
< 1 GB at 10,000 hosts. Every run checks report.json: N hosts, exactly the sick ones critical
and listed for remediation.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
VENV_BIN = os.path.join(REPO, ".venv", "bin")
RACK_SIZE = 32
REPORT_TASK = "diagnosis_report : Build the cluster view from every host's result"

# The demo rack's real gather results: which template each synthetic host copies.
DEMO_INVENTORY = os.path.join(REPO, "inventory-examples", "demo")
HEALTHY_TEMPLATE = "gpu-r3-n01"
SICK_TEMPLATES = ("gpu-r3-n03", "gpu-r3-n05", "gpu-r3-n06")  # Xid 79, mlx5_4 flapping, Xid 48 + row remap

_DUMP_PLAY = """
- name: Gather the demo rack with the real gpu_health role and keep each result
  hosts: gpu-rack3
  gather_facts: false
  roles:
    - role: gpu_health
  tasks:
    - name: Keep the registered result
      ansible.builtin.copy:
        content: "{{ gpu_health_result | to_json }}"
        dest: "%s/{{ inventory_hostname }}.json"
        mode: "0600"
      delegate_to: localhost
"""

# Each host's result is loaded by a callback (below) as a real run leaves it: no load play.
# Kept for the scripts that list it among their plays (bench_plan.py).
LOAD_PLAY = ""

# N hosts in racks (the results come from the bench_fleet_load callback).
_FLEET_INVENTORY = '''
import json
from ansible.plugins.inventory import BaseInventoryPlugin


class InventoryModule(BaseInventoryPlugin):
    NAME = "bench_fleet"

    def verify_file(self, path):
        return path.endswith(".bench_fleet.json")

    def parse(self, inventory, loader, path, cache=True):
        super().parse(inventory, loader, path, cache)
        with open(path) as fh:
            fleet = json.load(fh)
        inventory.add_group("gpu_nodes")
        inventory.set_variable("gpu_nodes", "ansible_connection", "local")
        for rack, hosts in fleet["racks"].items():
            inventory.add_group(rack)
            inventory.add_child("gpu_nodes", rack)
            for name, _tpl in hosts:
                inventory.add_host(name, group=rack)
'''

# Each host's gather as a real run leaves it in ansible-playbook: its facts (gpu_health, from the
# module's ansible_facts) and its registered gpu_health_result, two copies as Ansible keeps them
# (set_host_facts and set_nonpersistent_facts are what the strategy calls for a host's result).
# json.loads per host: every host its own objects, plain (untrusted) strings, as register leaves them.
# A load play of one set_fact per host ran 24 minutes at 10,000 without finishing.
_LOAD_CALLBACK = '''
import json, os
from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "bench_fleet_load"
    CALLBACK_NEEDS_ENABLED = True

    def v2_playbook_on_play_start(self, play):
        if not os.path.exists(os.environ["BENCH_FLEET_FILE"]):  # the run that gathers the templates
            return
        with open(os.environ["BENCH_FLEET_FILE"]) as fh:
            fleet = json.load(fh)
        manager = play.get_variable_manager()
        for hosts in fleet["racks"].values():
            for name, tpl in hosts:
                text = fleet["templates"][tpl].replace(tpl, name)
                manager.set_host_facts(name, json.loads(text)["ansible_facts"])
                manager.set_nonpersistent_facts(name, {"gpu_health_result": json.loads(text)})
'''

REPORT_PLAY = """
- name: Aggregate as diagnose.yml does
  hosts: gpu_nodes
  gather_facts: false
  roles:
    - role: job_context
    - role: diagnosis_report
"""

# Task wall time: from the task's start to the last host result it produced.
_CLOCK_CALLBACK = '''
import json, os, resource, time
from ansible.plugins.callback import CallbackBase


def cpu():
    """CPU seconds of ansible-playbook and its reaped workers (with the modules they waited for)."""
    return sum(ru.ru_utime + ru.ru_stime for ru in (resource.getrusage(resource.RUSAGE_SELF),
                                                    resource.getrusage(resource.RUSAGE_CHILDREN)))

class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "task_clock"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self.start, self.end, self.cpu, self.name = {}, {}, {}, None

    def v2_playbook_on_task_start(self, task, is_conditional):
        self.name = task.get_name()
        self.start.setdefault(self.name, time.time())
        self.cpu.setdefault(self.name, cpu())

    def _done(self, result, **kw):
        self.end[result._task.get_name()] = time.time()

    v2_runner_on_ok = v2_runner_on_failed = v2_runner_on_skipped = v2_runner_on_unreachable = _done

    def v2_playbook_on_stats(self, stats):
        with open(os.environ["BENCH_CLOCK_FILE"], "w") as fh:
            # CPU from a task's start to the end: that task and every task after it
            json.dump({n: [t, self.end[n], cpu() - self.cpu[n]] for n, t in self.start.items() if n in self.end}, fh)
'''

def ansible_env(work):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_CALLBACK_PLUGINS=work,
               ANSIBLE_CALLBACKS_ENABLED="task_clock,bench_fleet_load", BENCH_CLOCK_FILE=os.path.join(work, "clock.json"),
               BENCH_FLEET_FILE=os.path.join(work, "fleet.bench_fleet.json"),
               ANSIBLE_INVENTORY_PLUGINS=work + os.pathsep + os.path.join(REPO, "plugins", "inventory"),
               ANSIBLE_INVENTORY_ENABLED="bench_fleet,host_list,auto,yaml,ini",
               PATH=VENV_BIN + os.pathsep + os.environ.get("PATH", ""))
    env.pop("ANSIBLE_STDOUT_CALLBACK", None)
    return env


def _descendants(root):
    """PIDs of every process under ``root`` (ansible-playbook's workers and the modules they start)."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        kids = children.get(todo.pop(), [])
        out += kids
        todo += kids
    return out


def _private_mb(pid):
    """Memory a process has to itself (Private_Clean + Private_Dirty of smaps_rollup), MB: for a
    worker forked from ansible-playbook, what it added (its copies included), not the pages it shares."""
    try:
        with open("/proc/%d/smaps_rollup" % pid) as fh:
            return sum(int(line.split()[1]) for line in fh if line.startswith(("Private_Clean:", "Private_Dirty:"))) / 1024.0
    except (OSError, ValueError, IndexError):
        return 0.0


class PeakPrivate(threading.Thread):
    """Samples, every ``interval`` s, the private memory of every process under ansible-playbook;
    ``peak`` is the largest seen (the report step's worker, at fleet size)."""

    def __init__(self, root, interval=0.2):
        super().__init__(daemon=True)
        self.root, self.interval, self.peak, self.done = root, interval, 0.0, threading.Event()

    def run(self):
        while not self.done.wait(self.interval):
            # root is /usr/bin/time; its child ansible-playbook (holding the whole inventory) is not counted
            playbook = set(_descendants(self.root)[:1])
            for pid in _descendants(self.root):
                if pid not in playbook:
                    self.peak = max(self.peak, _private_mb(pid))


def run_playbook(args, env, measure=None):
    """ansible-playbook ARGS; with ``measure`` (a file) under /usr/bin/time: wall, user, sys, max RSS,
    and the peak private memory of any of its workers or modules written next to it (``measure``.peak)."""
    timer = ["/usr/bin/time", "-f", "%e %U %S %M", "-o", measure] if measure else []
    proc = subprocess.Popen(timer + [os.path.join(VENV_BIN, "ansible-playbook")] + args, env=env, cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sampler = PeakPrivate(proc.pid)
    if measure:
        sampler.start()
    stdout, stderr = proc.communicate()
    sampler.done.set()
    if measure:
        sampler.join()
        with open(measure + ".peak", "w") as fh:
            fh.write("%.1f" % sampler.peak)
    if proc.returncode != 0:
        raise SystemExit("ansible-playbook %s failed:\n%s%s" % (" ".join(args), stdout[-4000:], stderr[-2000:]))
    return proc


def demo_results(work):
    """{template host: its registered gpu_health result as JSON text}, gathered for real."""
    out = os.path.join(work, "templates")
    os.makedirs(out)
    play = os.path.join(work, "dump.yml")
    with open(play, "w") as fh:
        fh.write(_DUMP_PLAY % out)
    run_playbook(["-i", DEMO_INVENTORY, play], ansible_env(work))
    texts = {}
    for name in (HEALTHY_TEMPLATE,) + SICK_TEMPLATES:
        with open(os.path.join(out, name + ".json")) as fh:
            texts[name] = fh.read()
    return texts


def fleet(n, faulty):
    """[(host, template)] for n hosts in racks of RACK_SIZE; every 1/faulty-th host is sick."""
    step = max(1, round(1 / faulty)) if faulty > 0 else n + 1
    hosts = []
    for i in range(n):
        name = "gpu-r%d-n%02d" % (i // RACK_SIZE + 1, i % RACK_SIZE + 1)
        sick = i % step == step // 2
        hosts.append((name, SICK_TEMPLATES[(i // step) % len(SICK_TEMPLATES)] if sick else HEALTHY_TEMPLATE))
    return hosts


def write_fleet(work, hosts, templates):
    """The inventory source (racks as gpu-rackN groups; each host's result is its template's,
    the template's host name replaced by the host's own: the kernel-log lines and messages
    name it), read by the bench_fleet inventory plugin. -> (inventory path, its directory)."""
    racks = {}
    for name, tpl in hosts:
        racks.setdefault(name.split("-n")[0].replace("gpu-r", "gpu-rack"), []).append([name, tpl])
    inv = os.path.join(work, "fleet.bench_fleet.json")
    with open(inv, "w") as fh:
        json.dump({"templates": templates, "racks": racks}, fh)
    return inv, work


def write_plugins(work):
    """The clock callback, the fleet's inventory plugin and its load callback, next to the run."""
    with open(os.path.join(work, "task_clock.py"), "w") as fh:
        fh.write(_CLOCK_CALLBACK)
    with open(os.path.join(work, "bench_fleet.py"), "w") as fh:
        fh.write(_FLEET_INVENTORY)
    with open(os.path.join(work, "bench_fleet_load.py"), "w") as fh:
        fh.write(_LOAD_CALLBACK)


def timed_run(work, inv, plays, extra=()):
    """One ansible-playbook run of ``plays``: (task clock {name: s}, the whole run's figures, argv)."""
    play = os.path.join(work, "bench.yml")
    with open(play, "w") as fh:
        fh.write("---" + "".join(plays))
    # the steps run in ansible-playbook (action plugins); a module that runs gets this Python
    argv = ["-i", inv, play, "-e", "ansible_python_interpreter=" + sys.executable] + list(extra)
    run_playbook(argv, ansible_env(work), measure=os.path.join(work, "time.txt"))
    with open(os.path.join(work, "clock.json")) as fh:
        clock = json.load(fh)
    with open(os.path.join(work, "time.txt")) as fh:
        wall, user, sys_, rss_kb = fh.read().split()[-4:]
    with open(os.path.join(work, "time.txt.peak")) as fh:
        private_mb = float(fh.read())
    whole = {"wall": float(wall), "cpu": float(user) + float(sys_), "rss_mb": int(rss_kb) / 1024.0,
             "private_mb": private_mb}
    return clock, whole, argv


def check_report(path, hosts):
    """report.json names every host, the sick ones critical and listed for remediation."""
    with open(path) as fh:
        analysis = json.load(fh)
    sick = sorted(h for h, tpl in hosts if tpl != HEALTHY_TEMPLATE)
    got = {h["host"]: h["severity"] for h in analysis["hosts"]}
    problems = []
    if len(got) != len(hosts):
        problems.append("%d hosts in report.json, %d in the run" % (len(got), len(hosts)))
    if sorted(h for h, sev in got.items() if sev == "critical") != sick:
        problems.append("critical hosts differ from the sick ones")
    if sorted(analysis["cluster"]["remediate"]) != sick:
        problems.append("remediate list differs from the sick ones")
    if problems:
        raise SystemExit("wrong report: " + "; ".join(problems))
    return len(sick)


def row(n, runs):
    """Medians over runs: the task's wall and CPU to the end; the largest private memory of a worker;
    the whole run's."""
    med = statistics.median
    return {"hosts": n, "runs": len(runs), "task_s": med(r["task_s"] for r in runs),
            "step_cpu_s": med(r["step_cpu_s"] for r in runs), "private_mb": med(r["whole"]["private_mb"] for r in runs),
            "run_s": med(r["whole"]["wall"] for r in runs), "run_cpu_s": med(r["whole"]["cpu"] for r in runs),
            "run_rss_mb": med(r["whole"]["rss_mb"] for r in runs)}


def print_table(title, rows):
    print("\n%s" % title)
    print("%7s %4s | %11s %10s | %11s | %10s %10s %11s" % (
        "N", "runs", "task wall s", "step CPU s", "private MB", "run wall s", "run CPU s", "run RSS MB"))
    for r in rows:
        print("%7d %4d | %11.2f %10.1f | %11.0f | %10.1f %10.1f %11.0f" % (
            r["hosts"], r["runs"], r["task_s"], r["step_cpu_s"], r["private_mb"], r["run_s"], r["run_cpu_s"],
            r["run_rss_mb"]))
    print("task: the step's task, start to result (Ansible's templating of its arguments included); step CPU: the"
          " CPU ansible-playbook and its workers used from the task's start to the end of the run (the step and the"
          " few run-once tasks after it); private MB: the most memory any worker or module had to itself (sampled"
          " every 0.2 s; the worker that runs the step); run: the whole ansible-playbook (the untimed load step"
          " included), peak RSS of its largest process. Load average at the end: %s"
          % " ".join(open("/proc/loadavg").read().split()[:3]))


def run_sizes(args, plays, task, check, extra=(), also=()):
    """Each size: the fleet written, ``plays`` run --repeat times (once above --once-above), ``check``
    on every run's output dir; prints a line per run (with the wall of the tasks named in ``also``)."""
    rows, argv = [], []
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as work:
        write_plugins(work)
        templates = demo_results(work)
        out = os.path.join(work, "out")
        for n in [int(x) for x in args.sizes.split(",")]:
            hosts = fleet(n, args.faulty)
            inv, _dir = write_fleet(work, hosts, templates)
            runs = []
            skip = ["--skip-tags", "always"] if n > args.arg_checks_up_to else []
            for _ in range(args.repeat if n <= args.once_above else 1):
                clock, whole, argv = timed_run(work, inv, plays, list(extra) + ["-e", "out=" + out] + skip)
                sick = check(out, hosts)
                (start, end, cpu_to_end) = clock[task]
                runs.append({"task_s": end - start, "step_cpu_s": cpu_to_end, "whole": whole})
                print("N=%d sick=%d: task %.2f s; from the task's start to the end %.1f CPU-s; largest private"
                      " memory of a worker or module %.0f MB; whole run %.1f s, %.1f CPU-s, peak RSS %.0f MB"
                      % (n, sick, end - start, cpu_to_end, whole["private_mb"], whole["wall"], whole["cpu"],
                         whole["rss_mb"]), flush=True)
                # every task of the play (per-host ones included: the roles' argument checks run on each host)
                for name, (t0, t1, cpu_after) in sorted(clock.items(), key=lambda kv: kv[1][0]):
                    print("  %s%s: %.2f s wall; from its start to the end %.1f CPU-s" % (
                        name, " (also)" if name in also else "", t1 - t0, cpu_after), flush=True)
            rows.append(row(n, runs))
        argv = " ".join(argv).replace(work, "$WORK")
    return rows, argv


def add_arguments(ap, sizes):
    ap.add_argument("--sizes", default=sizes)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--once-above", type=int, default=1000, help="one run (not --repeat) above this many hosts")
    ap.add_argument("--faulty", type=float, default=0.01, help="share of sick hosts")
    ap.add_argument("--arg-checks-up-to", type=int, default=1000,
                    help="above this many hosts skip the roles' per-host argument checks (--skip-tags always): each"
                         " forks a worker per host whose cost grows with the fleet (~0.13 CPU-s a host at 1,000)")


def print_commands(rows, title, argv):
    print_table(title, rows)
    print("ansible-playbook run: .venv/bin/ansible-playbook %s" % argv)
    print("command: .venv/bin/python %s" % " ".join([os.path.relpath(sys.argv[0], REPO)] + sys.argv[1:]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_arguments(ap, "1000,10000")
    ap.add_argument("-e", dest="extra_vars", action="append", default=[], metavar="VAR=VALUE",
                    help="more extra vars for the run, e.g. -e diagnosis_report_analysis_findings=suspects")
    args = ap.parse_args()
    extra = ["-e", "report_dir={{ out }}"] + [w for v in args.extra_vars for w in ("-e", v)]
    rows, argv = run_sizes(args, [LOAD_PLAY, REPORT_PLAY], REPORT_TASK,
                           lambda out, hosts: check_report(os.path.join(out, "report.json"), hosts), extra=extra)
    print_commands(rows, "gpu_runbook_report through the diagnosis_report role (medians; report files written)", argv)


if __name__ == "__main__":
    main()
