#!/usr/bin/env python3
"""Generate module_utils/gpu_runbook/vocab/ray.py: the messages Ray (ray-project/ray) prints in a
training or inference job's log -- vLLM multi-node, verl, OpenRLHF and Ray Train run their workers
as Ray actors, so the driver's log carries Ray's own errors and warnings -- read from the pinned
release's wheel (its Python files, and the message literals its C++ binaries carry).

    pip download ray==2.60.0 --no-deps --only-binary=:all: --python-version 3.11 \
        --platform manylinux2014_x86_64 -d /tmp/ray
    pip download ray==2.49.2 --no-deps --only-binary=:all: --python-version 3.11 \
        --platform manylinux2014_x86_64 -d /tmp/ray
    mkdir /tmp/ray/w260 /tmp/ray/w249
    (cd /tmp/ray/w260 && unzip -q ../ray-2.60.0-*.whl); (cd /tmp/ray/w249 && unzip -q ../ray-2.49.2-*.whl)
    .venv/bin/python tests/tools/vocab/gen_ray.py --src /tmp/ray/w260 --older /tmp/ray/w249
    .venv/bin/python tests/tools/vocab/write_index.py

What is read:

- Python (exactly the pin): ray/exceptions.py (the ``__str__`` of each error class: what a
  traceback's last line says), ray/_private/ (worker.py, node.py, services.py, state.py,
  gcs_utils.py, utils.py, memory_monitor.py, log_monitor.py, ...), ray/actor.py,
  ray/remote_function.py, ray/util/placement_group.py, ray/util/scheduling_strategies.py,
  ray/train/ and the autoscaler's user-facing messages (ray/autoscaler/_private/autoscaler.py,
  resource_demand_scheduler.py, monitor.py, util.py, ...): ``raise X(msg)``, logger.warning /
  error / exception / critical, warnings.warn and messages built into a *msg*/*message*/*err*
  variable (gen_torch.py's site reader, PyFile), with ``return "..."`` of an error class's
  ``__str__``. Left out: tests, the dashboard, rllib, tune, serve, data, llm, the client
  server and the cluster launchers' cloud providers (a training log does not print them), info
  and debug output (but the start-up lines listed in START_INFO, read as benign), and a
  message holding none of MARKERS (Ray's own words).
- C++: ray-project/ray is 1.8 GB, too big to fetch here, and the wheel carries no C++ source;
  the raylet's, the GCS server's and the core worker's messages (CPP_MESSAGES below: node death
  and missed heartbeats, the memory monitor's kills, worker and actor deaths, the GCS connection,
  the scheduler's infeasible requests) are written as the source streams them, and each literal
  fragment of 8 characters or more is checked against the strings the pin's binaries carry
  (ray/core/src/ray/raylet/raylet, ray/core/src/ray/gcs/gcs_server, ray/_raylet.so): a row's file
  is that binary (its path in the wheel) and its line the line of the fragment in the binary's
  ``strings -n 8`` dump (deterministic, so the rows are provenance at the pin, not at a copy of
  the source). A message no fragment of which the pin carries fails the run.

``--older``: an earlier release's unpacked wheel (2.49.2): a Python message in a wording the pin
no longer has is a row ``path@<version>``, and the C++ messages of OLDER_CPP are checked against
its binaries (``binary@<version>``): Ray 2.55 reworded the memory monitor's kill ('Task was killed
due to the node running low on memory.' became '%d worker(s) were killed ...').

Classification: RULES below, first match wins, each with its reason. In short: a node or raylet
Ray declared dead (missed heartbeats, failed health checks, 'Task failed because the node it was
running on is dead', the local raylet gone) is a node failure, as Slurm's 'Node failure' (vocab/
slurm.py: logged_node_failure, critical); the memory monitor's kills are the node running out of
host memory, as the kernel OOM killer's rows (vocab/linux.py: oom_kill, memory_leak, warning); an
actor or worker that died unexpectedly names no cause (unknown, warning: the cause is elsewhere in
the log); the GCS unreachable or an RPC failing at start-up is classified as PyTorch's TCPStore
connection failures (vocab/torch.py: a failed try logged_error / unknown / warning, the final
time-out launch_rendezvous_timeout / application / critical); infeasible resource requests and
placement groups that cannot be placed are the job's configuration (application, warning); the
user's own function raising (RayTaskError) is the application; Ray's argument checks are the
job's code (application, warning); other raised or logged errors name no cause (unknown,
warning); warnings are advice (deprecations, performance, configuration): benign, unless they
name a failure (unknown, info)."""

import argparse
import ast
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402
from gen_torch import PyFile, exception_classes, printed_lines  # noqa: E402

sys.path.insert(0, os.path.join(common.REPO, "module_utils"))
from gpu_runbook.taxonomy import KINDS  # noqa: E402

GENERATOR = "tests/tools/vocab/gen_ray.py"
PIN = "2.60.0"
EMITTER = "Ray"
# what a training job's driver and its actors print from
DIRS = ("ray/exceptions.py", "ray/_private/", "ray/actor.py", "ray/remote_function.py", "ray/_common/",
        "ray/util/placement_group.py", "ray/util/scheduling_strategies.py", "ray/util/actor_pool.py",
        "ray/util/collective/", "ray/train/", "ray/autoscaler/_private/autoscaler.py",
        "ray/autoscaler/_private/resource_demand_scheduler.py", "ray/autoscaler/_private/monitor.py",
        "ray/autoscaler/_private/util.py", "ray/autoscaler/_private/load_metrics.py",
        "ray/autoscaler/v2/autoscaler.py", "ray/autoscaler/v2/monitor.py", "ray/autoscaler/v2/event_logger.py", "ray/runtime_env/",
        "ray/job_config.py", "ray/runtime_context.py", "ray/cross_language.py", "ray/types.py")
SKIP_DIRS = ("/tests/", "/test_", "ray/_private/runtime_env/agent/thirdparty_files/", "ray/train/tests",
             "ray/_private/thirdparty/", "ray/_private/usage/", "ray/util/collective/examples/",
             "ray/train/examples/", "ray/_private/ray_perf.py", "ray/_private/ray_microbenchmark_helpers.py",
             "ray/_private/test_utils.py", "ray/_private/resource_isolation_config.py")
BINARIES = ("ray/core/src/ray/raylet/raylet", "ray/core/src/ray/gcs/gcs_server", "ray/_raylet.so")

NODE, OOM, ERR, APP, RDZV = ("logged_node_failure", "oom_kill", "logged_error", "logged_application_error",
                             "launch_rendezvous_timeout")
B = "benign"

# ---- C++ messages ------------------------------------------------------------------------------
# (binary, format as the source streams it: every value %s, absl::StrFormat's conversions kept)
RAYLET, GCS, CORE = BINARIES
CPP_MESSAGES = (
    # gcs/gcs_node_manager.cc: the error the GCS publishes to every driver when a node missed its heartbeats
    # (the driver's worker.py prints it as a WARNING: 'The node with node id: ... has been marked dead ...')
    (GCS, "The node with node id: %s and address: %s and node name: %s has been marked dead because the "
          "detector has missed too many heartbeats from it. This can happen when a \t(1) raylet crashes "
          "unexpectedly (OOM, etc.) \n\t(2) raylet has lagging heartbeats due to slow network or busy workload."),
    # gcs/gcs_health_check_manager.cc: a failed check of a raylet (it is marked dead when no checks remain),
    # and the death reason GCS records then
    (GCS, "Health check failed for node %s, remaining checks %s, status %s"),
    (GCS, "Node is dead because the health check failed."),
    # core_worker/task_submission/normal_task_submitter.cc: a task's node died under it
    (CORE, "Task failed because the node it was running on is dead or unavailable. Node IP: %s, node ID: %s. This "
           "can happen if the node was preempted, had a hardware failure, or its raylet crashed unexpectedly. To "
           "see node death information, use `ray list nodes --filter node_id=%s`, check the Ray dashboard cluster "
           "page, search the node ID in the GCS logs, or use `ray logs raylet.out -ip %s`."),
    # core_worker/core_worker.cc, core_worker_process.cc: the worker's own raylet is gone
    (CORE, "The worker failed to receive a response from the local raylet\nbecause the raylet is unavailable "
           "(crashed)."),
    (CORE, "Exiting because the Raylet IPC connection failed and the local Raylet is dead. Status: %s"),
    (CORE, "Terminating the worker due to local raylet death"),
    # raylet/node_manager.cc, worker_killing_policy*.cc: the memory monitor killed workers (2.55+ wording)
    (RAYLET, "%d worker(s) were killed due to the node running low on memory. %s"),
    (RAYLET, "Memory on the node (IP: %s, ID: %s) was %sGB used / %sGB limit (%f)"),
    (RAYLET, "Killing %d worker(s), kill details: %s"),
    (RAYLET, "Ray killed %d worker(s) based on the killing policy"),
    # raylet/node_manager.cc CreateOomKillMessageSuggestions: the memory monitor's advice, printed with
    # its kill and under the summary below only when it killed (the page it names moved in 2.55: %s)
    (RAYLET, "Refer to the documentation on how to address the out of memory issue: https://docs.ray.io/en/latest/%s. "
             "Consider provisioning more memory on this node or reducing task parallelism by requesting more CPUs "
             "per task."),
    # raylet/node_manager.cc: the raylet's summary when workers died (the OOM count may be 0: one row cannot
    # say which, so it names no cause; its meaning says how to read the counts)
    (RAYLET, "%d Workers (tasks / actors) killed due to memory pressure (OOM), %d Workers crashed due to other "
             "reasons at node (ID: %s, IP: %s) over the last time period. To see more information about the Workers "
             "killed on this node, use `ray logs raylet.out -ip %s`"),
    # raylet/node_manager.cc: a worker's connection dropped while it ran a task
    (RAYLET, "A worker died or was killed while executing a task by an unexpected system error. To troubleshoot "
             "the problem, check the logs for the dead worker."),
    (RAYLET, "Worker unexpectedly exits with a connection error code %s. Some common causes include: (1) the "
             "process was killed by the OOM killer due to high memory usage, (2) ray stop --force was called, or (3) "
             "the worker crashed unexpectedly due to SIGSEGV or another unexpected error."),
    # gcs/gcs_actor_manager.cc: why an actor is dead
    (GCS, "The actor is dead because its worker process has died. Worker exit type: %s"),
    (GCS, "The actor is dead because its owner has died. Owner Id: %s"),
    (GCS, "The actor is dead because it was killed by `ray.kill`."),
    (GCS, "The actor is dead because all references to the actor were removed."),
    # gcs_rpc_client/gcs_client.cc (raylet and workers): the GCS does not answer
    # ('within ' << timeout << ' seconds. ' << 'GCS may ...': the seconds are %s)
    (CORE, "Failed to connect to GCS within %s GCS may have been killed. It's either GCS is terminated by "
           "`ray stop` or is killed unexpectedly. If it is killed unexpectedly, see the log file gcs_server.out."),
    (CORE, "Failed to connect to GCS at address %s"),
    (CORE, "Failed to connect to GCS, TaskEventBuffer will stop now. [status=%s"),
    (CORE, "Observability pubsub is still unreachable after %s seconds (this check repeats with backoff)."),
    # raylet/scheduling: a lease no node can take
    (RAYLET, "%s cannot be scheduled right now. It requires %s for placement, however the cluster currently cannot "
             "provide the requested resources."),
    (RAYLET, "%s cannot be scheduled right now. You can ignore this message if this"),
)
# the wordings of the memory monitor's kill before 2.55 (raylet/node_manager.cc, memory_monitor.cc)
OLDER_CPP = (
    (RAYLET, "Task was killed due to the node running low on memory."),
    (RAYLET, "Memory on the node (IP: %s) where the task (%s) was running was %s), which exceeds the memory usage "
             "threshold of %s"),
)

# ---- classification ----------------------------------------------------------------------------
_FAILING = r"(?i)\b(fail|failed|failure|error|timed? ?out|crash|died|dead|killed|lost|unreachable)"
RULES = (
    # (file, site, message, kind, severity, meaning)
    # the raylet's summary of the workers that died on a node: how many for memory, how many otherwise
    (r"", r"", r"Workers \(tasks / actors\) killed due to memory pressure", ERR, "warning",
     "Ray's raylet counts the workers that died on a node: the first number were killed for memory pressure (Ray's "
     "memory monitor, as the kernel's OOM killer: if it is not 0, the node ran out of host memory), the second "
     "crashed for other reasons (the log before it, or the node's kernel log, says why)"),
    # the memory monitor: the node ran low on host memory and Ray killed workers (as the kernel's OOM killer)
    (r"", r"", r"(?i)running low on memory|which exceeds the memory usage threshold|"
     r"killed based on the killing policy|based on the killing policy|kill details|GB used / %sGB limit|"
     r"how to address the out of memory issue", OOM,
     "warning", "Ray's memory monitor killed workers because the node ran low on host memory (the job's processes, "
                "or others on the node, need more memory than it has)"),
    (r"", r"", r"(?i)\bOutOfMemoryError\b", OOM, "warning",
     "Ray's memory monitor killed a worker because the node ran low on host memory"),
    # a worker whose connection dropped, with Ray's own list of causes: no cause named
    (r"", r"", r"Worker unexpectedly exits with a connection error code", ERR, "warning",
     "a Ray worker process died (killed, crashed or OOM-killed): the cause is elsewhere in the log or in the node's "
     "kernel log"),
    # one failed health check of a raylet (GCS retries; the node is marked dead when none remain), and the
    # autoscaler's word that a node sent no heartbeat lately (it restarts Ray there): not yet a death
    (r"", r"", r"(?i)remaining checks|No recent heartbeat", ERR, "warning",
     "a Ray node missed a health check or a heartbeat (Ray retries; a node marked dead follows if it does not "
     "recover)"),
    # node / raylet death: the node failed (Slurm's 'Node failure')
    (r"", r"", r"(?i)marked dead because the detector|missed too many heartbeats|health check failed|"
     r"node it was running on is dead|raylet is unavailable \(crashed\)|local raylet (is )?dead|local raylet death|"
     r"local raylet died|Raylet IPC connection failed|the node (was|is) (dead|preempted)|"
     r"\bnode .{0,40}\b(has )?died\b", NODE, "critical",
     "Ray says a node of the cluster died or stopped answering (its raylet crashed or missed its heartbeats; "
     "preempted, OOM-killed or a hardware failure): check that node"),
    # the GCS does not answer: a failed try names no cause; the final time-out is the start-up's rendezvous
    (r"", r"", r"(?i)Failed to connect to GCS within|could not connect to (the )?GCS|Timed out while (waiting|trying) "
     r"(for|to connect to) (the )?GCS", RDZV, "critical",
     "the processes could not reach Ray's GCS (the head node) in time: the head is down, the address is wrong or "
     "the network blocks its port"),
    (r"", r"", r"(?i)\bGCS\b.{0,60}(unreachable|unavailable|not available|failed|dead|timed? ?out|is down)|"
     r"(connect|reach|RPC|rpc).{0,40}\bGCS\b|pubsub is still unreachable", ERR, "warning",
     "a connection to Ray's GCS (the head node) failed: the head node died or is unreachable"),
    # the user's own function raised: the application (before 'the actor died': its creation task raised)
    (r"^ray/exceptions\.py", r"^exception:RayTaskError", r"", APP, "critical",
     "the job's own function raised inside a Ray task or actor (the traceback under it says what)"),
    (r"", r"", r"(?i)user code|raised in its creation task|error raised in", APP, "critical",
     "the job's own code raised inside a Ray task or actor (the traceback under it says what)"),
    # an actor or worker that died: a consequence, the cause is elsewhere
    (r"", r"", r"(?i)killed by `ray\.kill`|ray\.kill\(", ERR, "info",
     "the job's own code killed the actor with ray.kill: intended"),
    (r"", r"", r"(?i)all references to the actor were removed", B, "ok",
     "an actor the job no longer references was ended: Ray's normal clean-up"),
    (r"", r"", r"(?i)\b(actor|worker|task)\b.{0,60}\b(died|dead|crashed|unexpected system error|exited unexpectedly|"
     r"owner has died)|unexpected system error|\bowner\b.{0,30}\bdied\b", ERR, "warning",
     "a Ray actor or worker died unexpectedly: a consequence; the cause (a crash, a kill, a node's death) is "
     "elsewhere in the log"),
    # scheduling: resources that cannot be met, placement groups: the job's configuration
    (r"", r"", r"(?i)cannot be scheduled|infeasible|not schedulable|unschedulable|placement group|PlacementGroup|"
     r"resource request|insufficient resources|no (node|nodes) (with|that)|exceeds the (cluster|node)'?s? "
     r"(total )?resources|num_gpus|num_cpus|satisfy the request|can fulfill|fulfill resource", APP, "warning",
     "the job asked Ray for resources (GPUs, CPUs, a placement group) the cluster cannot give now: its "
     "configuration, or nodes not yet added"),
    # the object store and the node's disk
    (r"", r"", r"(?i)object store is full|ObjectStoreFull|disk's utilization is over capacity|OutOfDisk|"
     r"local disk|disk is full|over \d+% full", ERR, "warning",
     "the node's object store or disk is full: the job keeps too many objects, or the disk is too small"),
    # raised by Ray's checks of its API's arguments: the job's code
    (r"", r"^exception:(ValueError|TypeError|KeyError|IndexError|AttributeError|NotImplementedError)$", r"",
     APP, "warning", "Ray rejected an argument or a call of the job's code (its own check)"),
    (r"", r"^assert", r"", APP, "warning", "a Ray assertion on the job's arguments or state failed"),
    # the messages of Ray's error classes (built in their constructors): what the exception says
    (r"^ray/exceptions\.py", r"^built$", r"", ERR, "warning", "Ray raised an error that names no cause by itself"),
    # other raised and logged errors: no cause named
    (r"", r"^exception", r"", ERR, "warning", "Ray raised an error that names no cause by itself"),
    (r"", r"^(error|cpp)$", r"", ERR, "warning", "Ray logged an error that names no cause by itself"),
    # start-up lines (START_INFO): a Ray instance that started or joined
    (r"", r"^info$", r"", B, "ok", "Ray started or joined its cluster: no fault"),
    # warnings that name a failure: Ray's, no cause named, it goes on
    (r"", r"^(warning|built)$", _FAILING, ERR, "info",
     "Ray's warning of something that failed or was retried (it goes on; the lines after say more)"),
    (r"", r"^(warning|built)$", r"", B, "ok",
     "Ray's advice about configuration, performance or deprecation: no fault"),
)
_RULES = common.compile_rules(RULES)

# info lines read as benign rows: a healthy start-up's lines hold Ray's markers, so they are matched
# (explained) rather than only passed over
START_INFO = re.compile(r"^(Started a local Ray instance|Connecting to existing Ray cluster at address|"
                        r"Ray runtime started|Connected to Ray cluster)")

# literals of Ray's own messages (a message's text, or its line's prefix): the job reader's prefilter lets
# every line holding one through, so words every training log prints ('actor' inside 'factor', 'worker'
# of a DataLoader, 'node', 'memory') are not markers; a message holding none is left out
# (Ray's API by name, not 'ray.': that is in every 'array.' of a training log)
MARKERS = ("Ray", "ray.init", "ray.get", "ray.put", "ray.wait", "ray.remote", "ray.kill", "ray.cancel", "ray.util",
           "ray.exceptions", "ray._private", "ray.train", "ray.actor", "ray.runtime", "ray.job_config", "ray::", "raylet", "Raylet", "GCS", "gcs_", " actor", "Actor", "placement group",
           "worker(s)", "low on memory", "heartbeats", "autoscal", "ObjectRef", "object store", "Object store",
           "node types can fulfill")
# how Ray prints: its Python logger ('%(asctime)s\t%(levelname)s %(filename)s:%(lineno)s -- %(message)s',
# ray/_private/ray_constants.py LOGGER_FORMAT) behind an actor's prefix (the driver prints each actor's
# lines with it: '(RayWorkerWrapper pid=1234, ip=10.0.0.2) '), and its C++ logger (src/ray/util/logging.cc:
# '[%Y-%m-%d %H:%M:%S,%e %L %P %t] file:line: msg') behind the '(raylet) ' the driver puts before the lines
# the raylet sends it
PY_TEMPLATE = "(RayWorkerWrapper pid=1234, ip=10.0.0.2) 2024-05-01 10:00:00,123\tWARNING {file}:{line} -- {message}"
CPP_TEMPLATE = "(raylet) [2024-05-01 10:00:00,123 E 1234 5678] {file}:{line}: {message}"


def classify(path, site, fmt):
    return common.rule_class(_RULES, KINDS, path, site, fmt)


class RayFile(PyFile):
    """PyFile's sites, with ``assert cond, msg``, the string an error class's ``__str__`` returns
    (or a class constant ``*_MSG``), and logger.info lines of START_INFO."""

    def sites(self):
        out = super().sites()
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Assert) and node.msg is not None and self._has_literal(node.msg):
                out.append((node.lineno, "assert", self.expr(node.msg)))
            elif isinstance(node, ast.ClassDef) and self.exceptions is not None and node.name in self.exceptions:
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and item.name == "__str__":
                        for ret in ast.walk(item):
                            if isinstance(ret, ast.Return) and ret.value is not None and self._has_literal(ret.value):
                                out.append((ret.lineno, "exception:" + node.name, self.expr(ret.value)))
                    elif isinstance(item, ast.Assign) and isinstance(item.value, ast.Constant) and \
                            isinstance(item.value.value, str) and any(
                                isinstance(t, ast.Name) and t.id.endswith("_MSG") for t in item.targets):
                        out.append((item.lineno, "exception:" + node.name, self.expr(item.value)))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr.startswith("add") and "summarizer" in ast.dump(node.func.value) and node.args \
                    and self._has_literal(node.args[0]):
                # the autoscaler's event summarizer: what the driver prints as '(autoscaler +1m) ...'
                out.append((node.lineno, "warning", self.expr(node.args[0])))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "info" \
                    and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str) \
                    and START_INFO.match(node.args[0].value):
                out.append((node.lineno, "info", self.expr(node.args[0], printf=len(node.args) > 1)))
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and getattr(node.targets[0], "id", "") == \
                    "log_str" and self._has_literal(node.value) and "autoscaler" in self.path:
                out.append((node.lineno, "warning", self.expr(node.value)))  # the autoscaler v2's event log lines
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.Constant) \
                    and isinstance(node.value.value, str) and START_INFO.match(node.value.value):
                out.append((node.lineno, "info", self.expr(node.value)))
        if self.path == "ray/exceptions.py":
            # a RayTaskError is raised as the dynamic class 'RayTaskError(<the cause's class>)' (as_instanceof_cause),
            # its message the task's proctitle and place: the traceback's last line
            at = self.text.find('RayTaskError({')
            if at >= 0:
                out.append((self.text.count("\n", 0, at) + 1, "exception:RayTaskError",
                            "ray.exceptions.RayTaskError(%s): ray::%s (pid=%s, ip=%s)"))
        return out


def keep(site, fmt):
    from gpu_runbook import vocab
    if site == "template" or (site == "info" and not START_INFO.match(fmt)):
        return False  # info and debug output reports progress; the start-up lines are START_INFO's
    if site == "built" and " " not in fmt.strip():
        return False
    if fmt.lstrip().startswith("%s") and not re.search(r"[A-Za-z]{3,}.*[A-Za-z]{3,}", fmt.replace("%s", "")):
        return False
    return vocab.matchable(fmt)


def py_files(src):
    out = []
    for root, _dirs, files in os.walk(os.path.join(src, "ray")):
        for name in files:
            if name.endswith(".py"):
                rel = os.path.relpath(os.path.join(root, name), src).replace(os.sep, "/")
                if (rel.startswith(DIRS) or rel in DIRS) and not any(s in rel for s in SKIP_DIRS):
                    out.append(rel)
    return sorted(out)


def collect(src):
    files = py_files(src)
    texts = {}
    for p in files:
        with open(os.path.join(src, p), encoding="utf-8") as fh:
            texts[p] = fh.read()
    exceptions = {}
    for p in files:
        try:
            exceptions.update(exception_classes(p, texts[p]))
        except SyntaxError:
            continue
    rows, unmarked, seen = [], 0, set()
    for p in files:
        try:
            sites = RayFile(p, texts[p], exceptions).sites()
        except SyntaxError:
            continue
        # a message both raised and built at one line: the raise says how it is printed
        for line, site, fmt in sorted(sites, key=lambda x: (x[0], not x[1].startswith(("exception", "assert")),
                                                            x[1], x[2])):
            lines = printed_lines(fmt)
            for f in (lines[:1] if site.startswith(("exception", "assert")) else lines):
                if not keep(site, f):
                    continue
                if site == "assert":
                    f = "AssertionError: " + f
                if not common.holds_marker(f, MARKERS):
                    unmarked += 1
                    continue
                if f in seen:
                    continue
                seen.add(f)
                kind, cat, sev, meaning = classify(p, site, f)
                rows.append((p, line, f, kind, cat, sev, meaning))
    return rows, unmarked, len(files)


# ---- the binaries' strings ------------------------------------------------------------------------
_PRINTABLE = re.compile(rb"[\t\x20-\x7e]{8,}")


def strings_dump(path):
    """The binary's printable runs of 8 or more characters, as ``strings -n 8`` lists them (one a line)."""
    with open(path, "rb") as fh:
        data = fh.read()
    return [m.group(0).decode("ascii") for m in _PRINTABLE.finditer(data)]


def fragments(fmt):
    """The literal runs of a format (split at its conversions and line breaks), 8 characters or more."""
    parts = re.split(r"%[-+ #0]*\d*(?:\.\d+)?(?:l|ll|z)?[sdiuxXfgeEcp]|\n", fmt.replace("%%", "%"))
    return [p for p in parts if len(p) >= 8]


def cpp_rows(src, messages, suffix=""):
    """Rows of the C++ messages, each checked against its binary's strings: (binary[@version], the dump's
    line of its first fragment, format, ...)."""
    dumps = {}
    rows = []
    for binary, fmt in messages:
        if binary not in dumps:
            dumps[binary] = strings_dump(os.path.join(src, binary))
        dump = dumps[binary]
        blob = "\n".join(dump)
        frags = fragments(fmt)
        # a fragment joins adjacent literals of a stream, which the binary keeps apart: its start is a
        # literal's start (gen_torch.py verify_libs)
        absent = [f for f in frags if f.lstrip()[:24] not in blob]
        if absent or not frags:
            raise SystemExit("%s%s does not carry %r of %r" % (binary, suffix, (absent or [""])[0], fmt))
        first = frags[0].lstrip()[:24]
        line = next(i for i, s in enumerate(dump, 1) if first in s)
        kind, cat, sev, meaning = classify(binary, "cpp", fmt)
        rows.append((binary + suffix, line, fmt, kind, cat, sev, meaning))
    return rows


def _version(src):
    path = os.path.join(src, "ray", "_version.py")
    with open(path) as fh:
        text = fh.read()
    version = re.search(r'version = "([^"]+)"', text).group(1)
    commit = re.search(r'commit = "([0-9a-f]{40})"', text).group(1)
    return version, commit


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", required=True, help="the pin's unpacked wheel (holding ray/)")
    ap.add_argument("--older", nargs="*", default=[], help="earlier releases' unpacked wheels, newest first")
    args = ap.parse_args(argv)
    version, commit = _version(args.src)
    if version != PIN:
        raise SystemExit("expected Ray %s, found %s" % (PIN, version))
    rows, unmarked, nfiles = collect(args.src)
    rows.extend(cpp_rows(args.src, CPP_MESSAGES))
    seen = set(r[2] for r in rows)
    for old in args.older:
        over, _c = _version(old)
        more, _u, _n = collect(old)
        for r in more:
            if r[2] not in seen:
                seen.add(r[2])
                rows.append(("%s@%s" % (r[0], over),) + r[1:])
        rows.extend(cpp_rows(old, OLDER_CPP, "@" + over))
    counts = {}
    for r in rows:
        counts[r[3]] = counts.get(r[3], 0) + 1
    doc = (__doc__.split("\n\n", 2)[2] + "\n\nPython files read: %d; rows: %d (%s); left out for holding no "
           "marker: %d." % (nfiles, len(rows), ", ".join("%s %d" % kv for kv in sorted(counts.items())), unmarked))
    meta = {"EMITTER": EMITTER, "PROJECT": "Ray (ray-project/ray)", "VERSION": version, "COMMIT": commit,
            "LICENCE": "Apache-2.0 (Ray's LICENSE)",
            "ORIGIN": "https://pypi.org/project/ray/%s/ (manylinux2014_x86_64 wheel)" % version,
            "GENERATOR": GENERATOR}
    templates = (("ray/core/", CPP_TEMPLATE), ("ray/_raylet.so", CPP_TEMPLATE), ("", PY_TEMPLATE))
    path = common.write_table("ray", meta, MARKERS, templates, rows, doc=doc)
    print("%s: %d rows from %d Python files and %d binaries (%d unmarked left out); %s" % (
        path, len(rows), nfiles, len(BINARIES), unmarked, counts))


if __name__ == "__main__":
    main()
