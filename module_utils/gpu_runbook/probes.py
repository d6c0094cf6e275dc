# SPDX-License-Identifier: Apache-2.0
"""Probes: run the host's tools and read its files under ONE deadline; no interpretation.

Output is ``{source_name: text | error dict}``, the same dict a capture directory yields
(capture.py), so everything downstream cannot tell live from offline. An error dict is
``{"error": message, "kind": "missing|timeout|denied|failed", "cmd": what ran}`` plus, for a
timeout, ``"seconds"`` (how long it was waited for) and, for a tool that failed, ``"rc"``
and ``"text"`` (its stderr + stdout, bounded: what names the cause). ``sources["_notes"]``
lists findings about reads that were cut (a log bigger than the cap).

Every probe answers by the deadline or is reported as hung; every process started is
killed (its whole process group) when the deadline passes, so nothing outlives the module.
Commands are argv lists, never shell strings.
"""

import glob
import os
import shutil
import signal
import subprocess
import threading
import time

from .findings import finding
from .sources import COMPUTE_APPS, KERNEL_LOG, NOTES, NVSMI_SOURCES, detect_source

DEFAULT_PROBES = ("nvidia_smi", "compute_apps", "kernel_log", "ib_sysfs")
ALL_PROBES = DEFAULT_PROBES + ("ibstat", "perfquery")

_PORT_FILES = ("state", "phys_state", "rate", "link_layer")
_DEVICE_FILES = ("hca_type", "sys_image_guid", "fw_ver")
_MAX_OUTPUT = 64 * 1024 * 1024  # a runaway tool must not exhaust the node's memory
_MAX_STDERR = 64 * 1024
_MAX_SAID = 4096  # what a failed tool said, kept for the finding that names the cause
# Where Ansible's get_bin_path also looks: ibstat and perfquery live in sbin, often off PATH.
_SBIN_DIRS = ("/usr/local/sbin", "/usr/sbin", "/sbin")
_GRACE = 2.0  # seconds past the deadline for killed probes to report how they ended
_EXIT_GRACE = 1.0  # seconds after a tool's exit for its pipes to reach their end


def find_tool(tool, path=None):
    """The executable for ``tool``: PATH first, then the sbin directories."""
    return shutil.which(tool, path=path) or shutil.which(tool, path=os.pathsep.join(_SBIN_DIRS))


def _error(kind, message, cmd, **extra):
    err = {"error": message, "kind": kind, "cmd": " ".join(cmd) if isinstance(cmd, (list, tuple)) else cmd}
    err.update(extra)
    return err


def _timeout_error(cmd, seconds, doing=""):
    return _error("timeout", "no answer after %ss%s" % (seconds, doing), cmd, seconds=seconds)


class Gather(object):
    """One deadline for a whole gather and the processes started under it. ``child()`` is a
    scope with the same deadline whose processes (and notes) can be dropped on their own;
    ``close()`` kills every process group of the scope still running and starts no more."""

    def __init__(self, seconds, parent=None):
        self.seconds = seconds
        self.root = parent.root if parent is not None else self
        self.deadline = self.root.deadline if parent is not None else time.monotonic() + seconds
        self.notes = []
        self._procs = []
        self._closed = False
        if parent is None:
            self._lock = threading.Lock()

    def child(self):
        return Gather(self.seconds, parent=self)

    def left(self):
        return max(0.0, self.deadline - time.monotonic())

    def note(self, kind, message, source):
        self.notes.append(finding(kind, message, source=source))

    def spawn(self, argv, env=None):
        # under the root's lock: a process cannot start after the gather closed and escape the kill
        with self.root._lock:
            if self._closed or self.root._closed:
                raise TimeoutError("the deadline passed before %s started" % argv[0])
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, env=env, start_new_session=True)
            self._procs.append(proc)
            if self.root is not self:
                self.root._procs.append(proc)
        return proc

    def close(self):
        with self.root._lock:
            self._closed = True
            procs = list(self._procs)
        for proc in procs:
            _kill_group(proc)


def _kill_group(proc):
    """SIGKILL the tool and everything it started (its own session, see spawn), then reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass  # already gone
    try:
        proc.wait(timeout=1)
    except subprocess.TimeoutExpired:
        pass  # uninterruptible sleep (D state): nothing more we can do


class _Drain(threading.Thread):
    """Read a pipe to its end, keeping at most ``cap`` bytes (the rest is read and dropped,
    so the tool never blocks on a full pipe)."""

    def __init__(self, stream, cap):
        threading.Thread.__init__(self)
        self.daemon = True
        self.stream, self.cap = stream, cap
        self.chunks, self.size, self.truncated = [], 0, False
        self.start()

    def run(self):
        fd = self.stream.fileno()
        try:
            for data in iter(lambda: os.read(fd, 65536), b""):
                room = self.cap - self.size
                if len(data) > room:  # this chunk crosses the cap: the rest is dropped, and said
                    self.truncated = True
                    data = data[:room]
                if data:
                    self.chunks.append(data)
                    self.size += len(data)
        except OSError:
            pass
        finally:
            self.stream.close()

    def text(self):
        return b"".join(self.chunks).decode("utf-8", "replace")


def _run(gather, argv, env=None):
    """Run argv within the gather's deadline -> (rc, stdout, stderr, stdout_cut).
    TimeoutError when the tool itself has not exited by the deadline: a wedged GPU leaves
    nvidia-smi in uninterruptible sleep. Only the tool's own exit counts: a child it left
    holding the pipes (a daemon it spawned) is killed with its process group once what the
    tool wrote has been read, and is not a hang."""
    proc = gather.spawn(argv, env)
    out, err = _Drain(proc.stdout, _MAX_OUTPUT), _Drain(proc.stderr, _MAX_STDERR)
    try:
        proc.wait(timeout=gather.left())
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out.join(1)
        err.join(1)
        raise TimeoutError("no answer after %ss" % gather.seconds)
    if not _drained(out, err, gather):
        _kill_group(proc)  # what still holds the pipes is a child of the tool: its output is not the tool's
        _drained(out, err, gather)
    return proc.returncode, out.text(), err.text(), out.truncated


def _drained(out, err, gather):
    """Did both pipes reach their end within a short grace (what the exited tool wrote is
    already in them)? A child that escaped the process group leaves its reader behind."""
    # one grace for both pipes; at least a moment, even at the deadline: the tool did answer
    end = time.monotonic() + max(0.25, min(_EXIT_GRACE, gather.left()))
    for drain in (out, err):
        drain.join(max(0.0, end - time.monotonic()))
    return not (out.is_alive() or err.is_alive())


def run_argv(argv, timeout, env=None):
    """Run argv with a hard timeout. Returns (rc, stdout, stderr) or raises TimeoutError
    (the tool and its children killed) or FileNotFoundError."""
    gather = Gather(timeout)
    try:
        rc, out, err, _ = _run(gather, argv, env)
    except TimeoutError:  # an OSError too: not a missing tool
        raise
    except OSError as exc:
        raise FileNotFoundError(str(exc))
    finally:
        gather.close()
    return rc, out, err


def _any_output(out):
    return bool(out.strip())


def _nvsmi_report(out):
    """Does nvidia-smi's stdout hold a report (not just its failure message)?"""
    return detect_source(out) in NVSMI_SOURCES


def _tool_probe(gather, argv, is_report=_any_output):
    """Run a tool; text on success, or an error dict. Output with a bad rc is still text
    when it holds a report (nvidia-smi exits non-zero but prints the GPUs it can see)."""
    exe = find_tool(argv[0])
    if not exe:
        return _error("missing", "%s: command not found" % argv[0], argv)
    argv = [exe] + list(argv[1:])
    try:
        rc, out, err, cut = _run(gather, argv)
    except TimeoutError as exc:
        return _error("timeout", "%s: %s" % (os.path.basename(exe), exc), argv, seconds=gather.seconds)
    except OSError as exc:
        return _error("missing", str(exc), argv)
    if cut:
        gather.note("capture_truncated", "%s printed more than %d MiB: only the first %d MiB were read"
                    % (" ".join(argv), _MAX_OUTPUT >> 20, _MAX_OUTPUT >> 20), argv[0])
    if rc == 0:
        return out
    if rc is not None and rc < 0 and gather.left() <= 0:
        # killed by a signal once the deadline had passed: our own deadline kill, seen by this
        # thread as the tool's exit before the timeout was raised to it
        return _error("timeout", "%s: no answer after %ss" % (os.path.basename(exe), gather.seconds), argv,
                      seconds=gather.seconds)
    said = (err.strip() + "\n" + out.strip()).strip()[:_MAX_SAID]
    low = said.lower()
    if "permission denied" in low or "operation not permitted" in low or "insufficient permissions" in low:
        return _error("denied", (err or out).strip()[:300], argv, rc=rc, text=said)
    if is_report(out):
        return out + (("\n" + err) if err.strip() else "")
    return _error("failed", "exit %s: %s" % (rc, (err or out).strip()[:300] or "no output"), argv,
                  rc=rc, text=said)


def probe_nvidia_smi(timeout, gather=None):
    return _scoped(timeout, gather, lambda g: _tool_probe(g, ["nvidia-smi", "-q", "-x"], _nvsmi_report))


def probe_compute_apps(timeout, gather=None):
    argv = ["nvidia-smi", "--query-compute-apps=pid,process_name,gpu_bus_id,gpu_uuid,used_memory",
            "--format=csv,noheader"]
    return _scoped(timeout, gather, lambda g: _tool_probe(g, argv))


def _scoped(timeout, gather, fn):
    """Run fn in the given gather, or in one of its own that is closed afterwards."""
    if gather is not None:
        return fn(gather)
    own = Gather(timeout)
    try:
        return fn(own)
    finally:
        own.close()


def _kernel_alternatives(since, kern_log_path):
    """(cmd, fn(scope), usable(text)), best first: the ring buffer, journald, the syslog file."""
    journal = ["journalctl", "-k", "-o", "short-iso", "--no-pager"] + (["--since", str(since)] if since else [])
    return (
        ("dmesg -T", lambda g: _tool_probe(g, ["dmesg", "-T"]), _any_output),
        (" ".join(journal), lambda g: _tool_probe(g, journal),
         lambda t: bool(t.strip()) and not t.startswith("-- No entries --")),
        (kern_log_path, lambda g: _read_kern_file(g, kern_log_path), lambda t: True),
    )


def _read_kern_file(scope, path):
    try:
        size = os.path.getsize(path)
        text = read_tail(path, _MAX_OUTPUT)
    except OSError as exc:
        kind = "denied" if isinstance(exc, PermissionError) else "missing"
        return _error(kind, "%s: %s" % (path, exc.strerror), path)
    if size > _MAX_OUTPUT:
        scope.note("capture_truncated", "%s is %d MiB: only its last %d MiB were read"
                   % (path, size >> 20, _MAX_OUTPUT >> 20), KERNEL_LOG)
    return text


def probe_kernel_log(timeout, since=None, kern_log_path="/var/log/kern.log", gather=None):
    """dmesg -T, then journald, then the syslog file, within one deadline: the best that answered
    wins (dmesg > journalctl > file). The next alternative starts as soon as every better one
    answered with nothing usable, or when its turn comes (a quarter of the deadline apart, at
    most _KERNEL_LOG_STAGGER s): a hanging dmesg still leaves journald and the file most of the
    deadline (sequential fallbacks, each with the whole deadline, let two hanging tools hide the
    file's Xid), and a dmesg that answers at once spares the node a journal read it would not use.
    Returns (text_or_error, tried) where tried lists what the better alternatives said."""
    return _scoped(timeout, gather, lambda g: _kernel_log(g, since, kern_log_path))


# At most this many seconds between two alternatives' turns (8 s: 7.5 s at the default 30 s
# deadline). A dmesg slower than that is far more often a node under load than a hung one, and
# journalctl -k there adds seconds of CPU and I/O it does not need: at 2 s, 28-31 of 32 testbed
# hosts sharing 2 cores read the journal for nothing on every gather. A hung dmesg still leaves
# journald three quarters of the deadline and the file half of it.
_KERNEL_LOG_STAGGER = 8.0


def _kernel_log(gather, since, kern_log_path):
    alts = _kernel_alternatives(since, kern_log_path)
    scopes = [gather.child() for _ in alts]
    answers = [None] * len(alts)
    cond = threading.Condition()
    stagger = min(_KERNEL_LOG_STAGGER, gather.seconds / 4.0)
    t0 = time.monotonic()

    def run(i):
        try:
            value = alts[i][1](scopes[i])
        except Exception as exc:  # noqa: BLE001 -- a probe bug is an answer, not a crash
            value = _error("failed", "%s: %s" % (type(exc).__name__, exc), alts[i][0])
        with cond:
            answers[i] = value
            cond.notify_all()

    started = 0
    with cond:
        while True:
            # decided before anything more starts: a usable answer means the worse ones never run
            # (answers change only while this loop waits: the threads take the lock to set them)
            pick = _best(alts, answers, final=False)
            if pick is not None:
                break
            if gather.left() <= 0:
                pick = _best(alts, answers, final=True)
                break
            # start the next alternative once every started one answered (none usable), or at its turn
            while started < len(alts) and (all(a is not None for a in answers[:started])
                                           or time.monotonic() - t0 >= started * stagger):
                threading.Thread(target=run, args=(started,), daemon=True).start()
                started += 1
            wait = gather.left()
            if started < len(alts):
                wait = min(wait, max(0.0, t0 + started * stagger - time.monotonic()))
            cond.wait(wait)
        answers = list(answers)
    for scope in scopes:
        scope.close()  # the alternatives not taken stop now
    tried = []
    for i, (cmd, _, _) in enumerate(alts):
        if i == pick:
            gather.notes.extend(scopes[i].notes)
            return answers[i], tried
        a = answers[i]
        if a is None:  # still running (or blocked reading the file) at the deadline
            tried.append(_timeout_error(cmd, gather.seconds, " (%s)" % cmd))
        else:
            tried.append(a if isinstance(a, dict) else _error("failed", "%s printed nothing" % cmd.split()[0], cmd))
    err = _error(tried[0].get("kind", "failed"), "; ".join(t["error"] for t in tried),
                 " | ".join(t["cmd"] for t in tried))
    if any(t["kind"] == "timeout" for t in tried):
        err["seconds"] = gather.seconds
    return err, tried


def _best(alts, answers, final):
    """Index of the best usable answer once every better alternative has answered (at the
    deadline: the best usable one so far); -1 when none is usable; None while undecided."""
    for i, (_, _, usable) in enumerate(alts):
        a = answers[i]
        if a is None:
            if final:
                continue
            return None
        if isinstance(a, str) and usable(a):
            return i
    return -1


def read_tail(path, limit, nofollow=False):
    """The last ``limit`` bytes of a file as text: the end of a log holds the incident. Only a
    regular file is read, without blocking (textio.open_regular): a FIFO, a device or a
    socket is a NotRegularFile (an OSError)."""
    from .textio import read_tail_bytes  # on use: most gathers read dmesg, not the file
    return read_tail_bytes(path, limit, nofollow).decode("utf-8", "replace")


def read_ib_sysfs(sysfs_root="/sys", status=None):
    """The IB sysfs tree as ``grep -H . <files>`` prints it: one 'PATH:VALUE' line per file.
    ``status["cmd"]`` follows the file being read: a read that blocks (a wedged HCA driver
    leaves it in D state) is then reported by its path."""
    base = os.path.join(sysfs_root, "class", "infiniband")
    if not os.path.isdir(base):
        return ""
    status = status if status is not None else {}
    lines = []
    dev_files = []
    for dev_dir in sorted(glob.glob(os.path.join(base, "*"))):
        # CA type and system image GUID group ports by card (dual-port NICs, RoCE peers)
        dev_files += [os.path.join(dev_dir, f) for f in _DEVICE_FILES]
    _read_into(lines, dev_files, status)
    for port_dir in sorted(glob.glob(os.path.join(base, "*", "ports", "*"))):
        files = [os.path.join(port_dir, f) for f in _PORT_FILES]
        for sub in ("counters", "hw_counters"):
            files += sorted(glob.glob(os.path.join(port_dir, sub, "*")))
        _read_into(lines, files, status)
    return "\n".join(lines) + ("\n" if lines else "")


def _read_into(lines, paths, status):
    for path in paths:
        status["cmd"] = path
        try:
            with open(path) as fh:
                value = fh.read().strip()
        except OSError as exc:
            if not os.path.exists(path):
                continue
            value = "<%s>" % (exc.strerror or "unreadable")
        lines.append("%s:%s" % (path, value))


def _jobs(gather, since, sysfs_root, kern_log_path):
    """probe key -> (source name, what it runs or reads, fn(status))."""
    return {
        "nvidia_smi": ("nvidia-smi-q.xml", "nvidia-smi -q -x", lambda st: probe_nvidia_smi(gather.seconds, gather)),
        "compute_apps": (COMPUTE_APPS, "nvidia-smi --query-compute-apps",
                         lambda st: probe_compute_apps(gather.seconds, gather)),
        "kernel_log": (KERNEL_LOG, "dmesg -T | journalctl -k | %s" % kern_log_path,
                       lambda st: probe_kernel_log(gather.seconds, since, kern_log_path, gather)[0]),
        "ib_sysfs": ("ib-sysfs.txt", os.path.join(sysfs_root, "class", "infiniband"),
                     lambda st: read_ib_sysfs(sysfs_root, st)),
        "ibstat": ("ibstat.txt", "ibstat", lambda st: _tool_probe(gather, ["ibstat"])),
        "perfquery": ("perfquery.txt", "perfquery -x", lambda st: _tool_probe(gather, ["perfquery", "-x"])),
    }


def collect(probes=DEFAULT_PROBES, timeout=30, since=None, sysfs_root="/sys",
            kern_log_path="/var/log/kern.log"):
    """Run the selected probes concurrently under ONE deadline of ``timeout`` seconds;
    -> (sources, timings). A probe with no answer by then is a timeout error dict naming
    what it was doing and how long it was waited for; every process still running is
    killed, so the call returns within about ``timeout`` + 3 s whatever hangs."""
    gather = Gather(timeout)
    jobs = _jobs(gather, since, sysfs_root, kern_log_path)
    slots = []
    cond = threading.Condition()

    def run(slot, fn):
        try:
            value = fn(slot["status"])
        except Exception as exc:  # noqa: BLE001 -- a probe bug is a finding, not a crash
            value = _error("failed", "%s: %s" % (type(exc).__name__, exc), slot["key"])
        with cond:
            slot["value"], slot["seconds"] = value, round(time.monotonic() - slot["t0"], 3)
            cond.notify_all()

    for key in probes:
        if key in jobs:
            name, cmd, fn = jobs[key]
            slot = {"key": key, "name": name, "cmd": cmd, "status": {}, "t0": time.monotonic()}
            slots.append(slot)
            threading.Thread(target=run, args=(slot, fn), daemon=True).start()
    end = gather.deadline + _GRACE
    with cond:
        while not all("value" in s for s in slots) and time.monotonic() < end:
            cond.wait(max(0.0, end - time.monotonic()))
        answered = [(s, s.get("value"), s.get("seconds")) for s in slots]
    gather.close()
    sources, timings = {}, {}
    for slot, value, seconds in answered:
        if seconds is None:  # still blocked (a D-state read or tool): reported, left behind
            doing = slot["status"].get("cmd")
            value = _timeout_error(doing or slot["cmd"], timeout, " (reading %s)" % doing if doing else "")
            seconds = round(time.monotonic() - slot["t0"], 3)
        sources[slot["name"]] = value
        timings[slot["key"]] = seconds
    if gather.notes:
        sources[NOTES] = list(gather.notes)
    return sources, timings

