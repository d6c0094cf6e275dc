"""Probes: run the host's tools and read its files, with a timeout each; no interpretation.

Output is ``{source_name: text | {"error", "kind", "cmd"}}``, the same dict a capture
directory yields, so everything downstream cannot tell live from offline.
Commands are argv lists, never shell strings.
"""

import glob
import os
import shutil
import subprocess
import threading
import time

from .sources import COMPUTE_APPS, KERNEL_LOG, canonical_name, detect_source

DEFAULT_PROBES = ("nvidia_smi", "compute_apps", "kernel_log", "ib_sysfs")
ALL_PROBES = DEFAULT_PROBES + ("ibstat", "perfquery")

_PORT_FILES = ("state", "phys_state", "rate", "link_layer")
_DEVICE_FILES = ("hca_type", "sys_image_guid", "fw_ver")
_MAX_OUTPUT = 64 * 1024 * 1024  # a runaway tool must not exhaust the node's memory


def _which(tool, path=None):
    return shutil.which(tool, path=path)


def run_argv(argv, timeout, env=None):
    """Run argv with a hard timeout. Returns (rc, stdout, stderr) or raises TimeoutError.

    A wedged GPU can leave nvidia-smi in uninterruptible sleep: we kill it and stop
    waiting instead of blocking the whole gather on it.
    """
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env, start_new_session=True)
    except OSError as exc:
        raise FileNotFoundError(str(exc))
    box = {}

    def _reader():
        out, err = proc.communicate()
        box["out"], box["err"] = out, err

    t = threading.Thread(target=_reader, daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        try:
            os.killpg(proc.pid, 9)
        except OSError:
            pass
        t.join(2)  # give up on a process that ignores SIGKILL (D state)
        raise TimeoutError("no answer after %ss" % timeout)
    out = box.get("out", b"")[:_MAX_OUTPUT].decode("utf-8", "replace")
    err = box.get("err", b"")[:65536].decode("utf-8", "replace")
    return proc.returncode, out, err


def _error(kind, message, argv):
    return {"error": message, "kind": kind, "cmd": " ".join(argv) if isinstance(argv, (list, tuple)) else argv}


def _tool_probe(argv, timeout, accept_rc=(0,)):
    """Run a tool; text on success, or an error dict. Output with a bad rc is still text
    when it has content (nvidia-smi exits non-zero but prints the GPUs it can see)."""
    exe = _which(argv[0])
    if not exe:
        return _error("missing", "%s: command not found" % argv[0], argv)
    argv = [exe] + list(argv[1:])
    try:
        rc, out, err = run_argv(argv, timeout)
    except TimeoutError as exc:
        return _error("timeout", str(exc), argv)
    except FileNotFoundError as exc:
        return _error("missing", str(exc), argv)
    if rc in accept_rc:
        return out
    low = (err + out).lower()
    if "permission denied" in low or "operation not permitted" in low:
        return _error("denied", (err or out).strip()[:300], argv)
    if out.strip():
        return out + (("\n" + err) if err.strip() else "")
    return _error("failed", "exit %s: %s" % (rc, (err or out).strip()[:300]), argv)


def probe_nvidia_smi(timeout):
    return _tool_probe(["nvidia-smi", "-q", "-x"], timeout)


def probe_compute_apps(timeout):
    return _tool_probe(["nvidia-smi", "--query-compute-apps=pid,process_name,gpu_bus_id,gpu_uuid,used_memory",
                        "--format=csv,noheader"], timeout)


def probe_kernel_log(timeout, since=None, kern_log_path="/var/log/kern.log"):
    """dmesg -T first (the ring buffer), then journald, then the syslog file.
    Returns (text_or_error, notes) where notes records the fallbacks taken."""
    tried = []
    r = _tool_probe(["dmesg", "-T"], timeout)
    if isinstance(r, str) and r.strip():
        return r, tried
    tried.append(r if isinstance(r, dict) else _error("failed", "dmesg printed nothing", ["dmesg", "-T"]))
    argv = ["journalctl", "-k", "-o", "short-iso", "--no-pager"]
    if since:
        argv += ["--since", str(since)]
    r = _tool_probe(argv, timeout)
    if isinstance(r, str) and r.strip() and not r.startswith("-- No entries --"):
        return r, tried
    tried.append(r if isinstance(r, dict) else _error("failed", "journalctl printed nothing", argv))
    try:
        return read_tail(kern_log_path, _MAX_OUTPUT), tried
    except OSError as exc:
        kind = "denied" if isinstance(exc, PermissionError) else "missing"
        tried.append(_error(kind, "%s: %s" % (kern_log_path, exc.strerror), kern_log_path))
    first = tried[0]
    return _error(first.get("kind", "failed"),
                  "; ".join(t["error"] for t in tried), " | ".join(t["cmd"] for t in tried)), tried


def read_tail(path, limit):
    """The last ``limit`` bytes of a file as text: the end of a log holds the incident."""
    with open(path, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        fh.seek(max(0, fh.tell() - limit))
        return fh.read().decode("utf-8", "replace")


def read_ib_sysfs(sysfs_root="/sys"):
    """The IB sysfs tree as ``grep -H . <files>`` prints it: one 'PATH:VALUE' line per file."""
    base = os.path.join(sysfs_root, "class", "infiniband")
    if not os.path.isdir(base):
        return ""
    lines = []
    dev_files = []
    for dev_dir in sorted(glob.glob(os.path.join(base, "*"))):
        # CA type and system image GUID group ports by card (dual-port NICs, RoCE peers)
        dev_files += [os.path.join(dev_dir, f) for f in _DEVICE_FILES]
    _read_into(lines, dev_files)
    for port_dir in sorted(glob.glob(os.path.join(base, "*", "ports", "*"))):
        files = [os.path.join(port_dir, f) for f in _PORT_FILES]
        for sub in ("counters", "hw_counters"):
            files += sorted(glob.glob(os.path.join(port_dir, sub, "*")))
        _read_into(lines, files)
    return "\n".join(lines) + ("\n" if lines else "")


def _read_into(lines, paths):
    for path in paths:
        try:
            with open(path) as fh:
                value = fh.read().strip()
        except OSError as exc:
            if not os.path.exists(path):
                continue
            value = "<%s>" % (exc.strerror or "unreadable")
        lines.append("%s:%s" % (path, value))


def collect(probes=DEFAULT_PROBES, timeout=30, since=None, sysfs_root="/sys",
            kern_log_path="/var/log/kern.log"):
    """Run the selected probes concurrently; -> (sources, timings)."""
    jobs = {
        "nvidia_smi": ("nvidia-smi-q.xml", lambda: probe_nvidia_smi(timeout)),
        "compute_apps": (COMPUTE_APPS, lambda: probe_compute_apps(timeout)),
        "kernel_log": (KERNEL_LOG, lambda: probe_kernel_log(timeout, since, kern_log_path)[0]),
        "ib_sysfs": ("ib-sysfs.txt", lambda: read_ib_sysfs(sysfs_root)),
        "ibstat": ("ibstat.txt", lambda: _tool_probe(["ibstat"], timeout)),
        "perfquery": ("perfquery.txt", lambda: _tool_probe(["perfquery", "-x"], timeout)),
    }
    sources, timings, threads = {}, {}, []

    def _run(key, name, fn):
        t0 = time.monotonic()
        try:
            sources[name] = fn()
        except Exception as exc:  # noqa: BLE001 -- a probe bug is a finding, not a crash
            sources[name] = _error("failed", "%s: %s" % (type(exc).__name__, exc), key)
        timings[key] = round(time.monotonic() - t0, 3)

    for key in probes:
        if key not in jobs:
            continue
        name, fn = jobs[key]
        th = threading.Thread(target=_run, args=(key, name, fn), daemon=True)
        th.start()
        threads.append(th)
    for th in threads:
        th.join(timeout + 10)
    return sources, timings


def load_capture_dir(path, files=None):
    """A capture directory -> (host sources, job log files, ignored names).

    Known names are read directly; a file with another name is recognised by its
    content, else ignored. ``*.gz`` is decompressed. Job logs (NCCL / PyTorch output)
    keep their own names: the rank may only be in the file name. ``files`` limits the
    load to those entries of the directory (a single file given on the command line)."""
    import gzip
    sources, job_files = {}, {}
    unknown = []
    for entry in sorted(os.listdir(path) if files is None else files):
        full = os.path.join(path, entry)
        if not os.path.isfile(full):
            continue
        name = canonical_name(entry)
        if name in (None, KERNEL_LOG) and not entry.endswith(".gz") and os.path.getsize(full) > _MAX_OUTPUT:
            # a big kernel log is streamed later (scan_kernel_log_file), never read whole
            with open(full, "rb") as fh:
                head = fh.read(65536).decode("utf-8", "replace")
            if (name or detect_source(head)) == KERNEL_LOG:
                sources[KERNEL_LOG] = {"path": full, "size": os.path.getsize(full)}
                continue
        try:
            if entry.endswith(".gz"):
                with gzip.open(full, "rb") as fh:
                    text = fh.read(_MAX_OUTPUT).decode("utf-8", "replace")
                entry = entry[:-3]
            else:
                with open(full, "rb") as fh:
                    text = fh.read(_MAX_OUTPUT).decode("utf-8", "replace")
        except (OSError, EOFError) as exc:
            sources[entry] = _error("unreadable", str(exc), full)
            continue
        name = canonical_name(entry)
        if name is None:
            name = detect_source(text)
            if name is None:
                unknown.append(entry)
                continue
        if name == "nccl.log":
            job_files[entry] = text
            continue
        if name == "nvidia-smi-q.txt" and text.lstrip().startswith("<"):
            name = "nvidia-smi-q.xml"
        if name in sources and isinstance(sources[name], str):
            sources[name] += "\n" + text
        else:
            sources[name] = text
    return sources, job_files, unknown


_GREP_BATCH = 4096


def scan_kernel_log_file(path, source="kern.log", since=None, year=None, use_grep=True):
    """Stream a kernel-log file of any size through the scanner, memory flat in its size.

    Where grep exists it is the prefilter: it finds the candidate lines (the scanner's own
    NEEDLES, fixed strings) at memory speed and numbers them (-n); ``wc -l`` counts all lines
    on the other core. The scanner parses only the selected lines, so the result is the same
    as feeding it the whole file. Without grep the file is read in chunks by Python.
    -> (facts, findings)."""
    from .kernlog import NEEDLES, KernelLogScanner
    sc = KernelLogScanner(source=source, since=since, year=year)
    grep = _which("grep") if use_grep else None
    if not grep:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(16 * 1024 * 1024), b""):
                sc.feed_chunk(chunk)
        sc.close()
        return sc.result()
    env = dict(os.environ, LC_ALL="C")  # byte semantics: no UTF-8 decoding cost, no locale surprises
    wc = _which("wc")
    counter = subprocess.Popen([wc, "-l", path], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env) if wc else None
    with open(path, "rb") as fh:
        head = fh.read(16 * 1024).split(b"\n")[:20]
    argv = [grep, "-a", "-n", "-F"] + [x for n in NEEDLES for x in ("-e", n)] + ["--", path]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    batch, first = [], True
    for raw in proc.stdout:
        num, _, line = raw.partition(b":")
        if not num.isdigit():
            continue
        batch.append((int(num) - 1, line.rstrip(b"\r\n")))
        if len(batch) >= _GREP_BATCH:
            sc.feed_prefiltered(0, batch, head if first else ())  # absolute indices: base stays 0
            batch, first = [], False
    sc.feed_prefiltered(0, batch, head if first else ())
    proc.wait()
    total = None
    if counter is not None:
        out = counter.communicate()[0].split()
        total = int(out[0]) if out and out[0].isdigit() else None
    if total is None:
        with open(path, "rb") as fh:
            total = sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(16 * 1024 * 1024), b""))
    with open(path, "rb") as fh:  # an unterminated last line is a line too (wc -l does not count it)
        fh.seek(0, os.SEEK_END)
        if fh.tell():
            fh.seek(-1, os.SEEK_END)
            total += fh.read(1) != b"\n"
    sc.lines = total
    return sc.result()


def stream_large_sources(sources, since=None, year=None):
    """Replace file references left by load_capture_dir (big kernel logs) by their parse:
    -> (sources without them, {source name: (facts, findings)}) for analyze_host(parsed=)."""
    rest, parsed = {}, {}
    for name, value in sources.items():
        if isinstance(value, dict) and "path" in value and "error" not in value:
            try:
                parsed[name] = scan_kernel_log_file(value["path"], source=name, since=since, year=year)
            except OSError as exc:
                rest[name] = _error("unreadable", str(exc), value["path"])
        else:
            rest[name] = value
    return rest, parsed
