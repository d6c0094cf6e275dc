# SPDX-License-Identifier: Apache-2.0
"""gpu-runbook command line: the same engine as the Ansible module, on captured files.

    gpu-runbook analyze PATH... [--format json|text] [--lang en|ko] [--since ISO] [--tz ZONE]
    gpu-runbook diagnose|remediate [-i INVENTORY] [--limit L] [--job-id N] [-e K=V] (runbook.py)

Exit status and inputs: see INPUTS_AND_EXIT_STATUS (what `analyze --help` prints).
"""

import argparse
import json
import math
import os
import shutil
import sys

from . import __version__, runbook
from .analyze import SCHEMA, analyze_host, exit_status, host_of_findings, not_a_kernel_log
from .capture import load_capture_dir, split_hosts, stream_large_sources
from .diagnose import diagnose
from .findings import finding
from .sources import KERNEL_LOG, NAMES, NOTES
from .slurm import node_name_problem
from .textio import keep_freed_memory, printable, printable_json
from .timeutil import local_tz, parse_time, parse_tz

EXIT_UNUSABLE = 3
EXIT_OUTPUT_FAILED = 4

# The epilog of `analyze --help`: the tests hold this text to the behaviour (the exit codes are
# exit_status()'s plus EXIT_UNUSABLE).
INPUTS_AND_EXIT_STATUS = """\
inputs:
  PATH is a file, a directory of one host's files, or a directory of per-host directories;
  - is standard input. Every file is read by its content, never by its name: a kernel log
  (dmesg, dmesg -T, journalctl -k, syslog, kern.log), a training job's output (job logs: NCCL_DEBUG,
  PyTorch, torchrun, srun/slurmstepd, progress bars), the output of nvidia-smi (-q, -q -x,
  the table, --query-gpu CSV, topo -m, dmon), ibstat, ibstatus, ibv_devinfo, ibdev2netdev, lshca, perfquery,
  iblinkinfo, ibdiagnet, ibportstate, mlxlink, the InfiniBand sysfs dump, libfabric's fi_info, dcgmi dmon,
  ibv_rc_pingpong and fi_pingpong,
  the subnet manager's unhealthy-ports report, sinfo -R, kubectl describe node, NCCL's topology dump,
  an nvidia-bug-report.log,
  GPUd's health states, lspci -vv, systemctl status, apt's history.log and dpkg.log, the node
  daemons' lines (Slurm, NHC, DCGM, Fabric Manager), or a paste of several of them. Files may be gzipped
  or UTF-16. Findings name the file as it is named. The job section says which rank the
  others waited for, its host and GPU, and the host finding that explains it.
  Error-like lines nothing explains are quoted as "unexplained", never taken as healthy; a
  file nothing in which is recognised is named on stderr.

exit status:
  0  nothing at warning or above
  1  warnings
  2  critical (a host or the job)
  3  unusable input: a bad argument or a missing path (one line on stderr, nothing
     analysed), or no input gave usable evidence (each such input named on stderr)
  4  the output could not be written (a closed pipe, as in `| head`, or a full disk):
     one line on stderr

A host directory that cannot be listed does not stop the others: it is reported as a
host with no usable evidence, saying why. Control characters in the logs' text (terminal
escapes) are printed escaped, like \\x1b.
"""


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # exit 3 with one line, not argparse's 2
        raise UsageError(message)


def _build_parser():
    p = _Parser(prog="gpu-runbook", description=__doc__.split("\n")[0])
    p.add_argument("--version", action="version", version="gpu-runbook " + __version__)
    sub = p.add_subparsers(dest="command")
    a = sub.add_parser("analyze", help="analyze captured outputs of one or more hosts and the job's logs",
                       description="Analyze captured outputs of one or more hosts and the job's logs.",
                       epilog=INPUTS_AND_EXIT_STATUS, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("paths", nargs="+", metavar="PATH",
                   help="a directory of one host's captures (or of per-host subdirectories), "
                        "a directory of job logs, or a single file")
    a.add_argument("--format", choices=("json", "text"), default="text", help="text (default) or json")
    a.add_argument("--lang", choices=("en", "ko"), default="en", help="language of the text: en (default) or ko")
    a.add_argument("--since", type=_iso_time, metavar="TIME",
                   help="only kernel-log events at/after this time (ISO 8601, e.g. the job start; "
                        "without a zone it is in --tz)")
    a.add_argument("--tz", type=_zone, default=None, metavar="ZONE",
                   help="zone of times written without one, in the captures (dmesg -T, syslog) and --since: "
                        "an offset like +09:00 or an IANA name (default: this machine's local zone)")
    a.add_argument("--expected-gpus", type=_positive(int), metavar="N", help="GPUs every host should have (e.g. 8)")
    a.add_argument("--expected-ib-rate", type=_positive(float), metavar="GBPS",
                   help="expected IB port rate in Gb/s (e.g. 400)")
    a.add_argument("--facts", action="store_true", help="include parsed facts in the JSON")
    a.add_argument("--host", type=_host_name, metavar="NAME",
                   help="the host that files given one by one (or standard input) come from, when their lines "
                        "do not name one (without it: '%s'); a directory is named after itself" % UNNAMED)
    runbook.add_parsers(sub, argparse.RawDescriptionHelpFormatter)
    return p


# what files given one by one are called when no line in them names their host: their directory's
# name ('tmp', 'caps', 'Downloads') is where the user saved them, not the node
UNNAMED = "unnamed host"


def _host_name(value):
    why = node_name_problem(value, "--host")
    if why:
        raise argparse.ArgumentTypeError(why)
    return value


def _iso_time(value):
    try:
        parse_time(value)
    except ValueError:
        raise argparse.ArgumentTypeError("not an ISO 8601 time: %r (e.g. 2026-12-02T07:00:00+09:00)" % value)
    return value


def _zone(value):
    try:
        return parse_tz(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc))


def _positive(kind):
    def convert(value):
        try:
            number = kind(value)
        except ValueError:
            raise argparse.ArgumentTypeError("not a number: %r" % value)
        if not math.isfinite(number):  # float('nan') and 'inf' parse, but compare as no rate
            raise argparse.ArgumentTypeError("not a number: %r" % value)
        if number <= 0:
            raise argparse.ArgumentTypeError("must be greater than 0: %r" % value)
        return number
    convert.__name__ = kind.__name__
    return convert


def _units(paths):
    """The paths given -> what is read as one capture: a directory; or the files given of one
    directory, together (two files of one host's capture are one host, not two)."""
    out, by_dir = [], {}
    for path in paths:
        if os.path.isfile(path):
            directory, entry = os.path.split(os.path.abspath(path))
            if directory in by_dir:
                by_dir[directory][1].append(entry)
                by_dir[directory][2][entry] = path
                continue
            by_dir[directory] = (path, [entry], {entry: path})
            out.append(by_dir[directory])
        else:
            out.append(path)
    return out


def _host_dirs(path, ignore=(), host=None):
    """A path (or (a file given, [files of its directory])) -> list of (host name, directory,
    sources, job files, empty files, blocks per file). Files given one by one are ``host``'s
    (--host), else the unnamed host's, unless their lines name one."""
    if isinstance(path, tuple):
        directory = os.path.dirname(os.path.abspath(path[0]))
        blocks = {}
        sources, jobs, empty = load_capture_dir(directory, files=list(path[1]), blocks=blocks, ignore=ignore)
        return [(host or UNNAMED, directory, sources, jobs, empty, blocks)]
    if not os.path.isdir(path):
        raise UsageError("%s: no such file or directory" % path)
    blocks = {}
    sources, jobs, empty = load_capture_dir(path, blocks=blocks, ignore=ignore)
    out = [(os.path.basename(os.path.abspath(path)), path, sources, jobs, empty, blocks)]
    for entry in sorted(os.listdir(path)):
        sub = os.path.join(path, entry)
        if os.path.isdir(sub):
            blocks = {}
            try:
                s, j, e = load_capture_dir(sub, blocks=blocks, ignore=ignore)
            except OSError as exc:  # one host's directory unreadable: the others are still analysed
                why = "%s could not be read: %s" % (entry, exc.strerror or exc)
                s, j, e = {NOTES: [finding("capture_unreadable", why, evidence=sub, source=entry)]}, {}, []
            out.append((entry, sub, s, j, e, blocks))
    return out


# what a structured block of a file was read as, in the words of the "read as" lines
BLOCK_LABEL = {"nvidia-smi-q.xml": "nvidia-smi -q -x", "nvidia-smi-q.txt": "nvidia-smi -q", "nvidia-smi.txt": "nvidia-smi",
               "nvidia-smi-query-gpu.csv": "nvidia-smi --query-gpu", "nvidia-smi-compute-apps.csv": "compute apps",
               "ib-sysfs.txt": "InfiniBand sysfs", "ibstat.txt": "ibstat", "ibv_devinfo.txt": "ibv_devinfo",
               "perfquery.txt": "perfquery", "iblinkinfo.txt": "iblinkinfo", "ibdev2netdev.txt": "ibdev2netdev", "lshca.txt": "lshca", "rdma-link.txt": "rdma link", "ibportstate.txt": "ibportstate", "mlxlink.txt": "mlxlink", "slurm-node.txt": "scontrol show node", "pbsnodes.txt": "pbsnodes", "dcgmi.txt": "dcgmi", "perftest.txt": "ib_write_bw (perftest)", "ibdiagnet.txt": "ibdiagnet", "fi_info.txt": "fi_info", "sm-unhealthy-ports.txt": "the SM's unhealthy ports", "k8s-node.txt": "kubectl describe node", "nvidia-smi-topo.txt": "nvidia-smi topo -m", "nccl-topo.xml": "NCCL's topology dump", "dcgmi-dmon.txt": "dcgmi dmon", "gpud.txt": "GPUd states", "autopilot.txt": "IBM Autopilot", "lspci.txt": "lspci -vv", "systemctl.txt": "systemctl status", "apt-history.log": "apt's history.log / dpkg.log", "pingpong.txt": "ibv_rc_pingpong / fi_pingpong", "nvidia-smi-dmon.txt": "nvidia-smi dmon", "bug-report.txt": "nvidia-bug-report"}


def analyze_paths(paths, since=None, expected_gpus=None, expected_ib_rate=None, include_facts=False, tz=None,
                  ignore=(), host=None):
    """Paths -> analysis (schema v1): every host, cross-host rules, and the job joined, and
    ``files``: what each file was read as (none: nothing in it was recognised).
    ``tz``: the zone of times written without one (None: UTC). ``ignore``: file names that
    are not captures (a test case's case.json). ``host``: the name of files given one by one whose
    lines name no host (None: "unnamed host")."""
    if since is not None:
        since = parse_time(since, tz).isoformat()  # a naive --since is in the captures' zone
    results, job_files, inputs, job_paths, dir_hosts, dir_files = {}, {}, {}, {}, {}, {}
    for unit in _units(paths):
        for name, directory, sources, jobs, empty, blocks in _host_dirs(unit, ignore, host):
            path, given = (None, unit[2]) if isinstance(unit, tuple) else (unit, {})
            for entry, found in blocks.items():
                inputs[os.path.join(directory, entry)] = {"file": given.get(entry) or _shown(path, directory, entry),
                                                          "read_as": [BLOCK_LABEL.get(b, b) for b in found]}
            for entry in empty:
                inputs[os.path.join(directory, entry)] = {"file": given.get(entry) or _shown(path, directory, entry),
                                                          "read_as": [], "empty": True}
            if path is not None and os.path.isdir(path) and (blocks or empty):  # a directory: its host is named
                dir_files[name] = dict([(e, True) for e in empty] + [(e, False) for e in blocks if not blocks[e]])
            for k, v in jobs.items():
                key = os.path.join(name, k)
                job_files[key] = v
                job_paths[key] = os.path.join(directory, k if k in blocks else k + ".gz")
            if not sources:
                continue
            for host, host_sources, parsed in split_hosts(sources, since=since, tz=tz):
                host_sources, more = stream_large_sources(host_sources, since=since, tz=tz)
                parsed.update(more)
                if KERNEL_LOG in parsed:
                    _kernel_read(parsed[KERNEL_LOG][0], inputs)
                    if not_a_kernel_log(*parsed[KERNEL_LOG]):
                        del parsed[KERNEL_LOG]  # none of its lines was the kernel's: no kernel log here
                if not [k for k in host_sources if k not in (NOTES, NAMES)] and not parsed and not host_sources.get(NOTES):
                    continue
                h = analyze_host(host_sources, since=since, expected_gpus=expected_gpus,
                                 expected_ib_rate=expected_ib_rate, parsed=parsed, tz=tz)
                host = host or (h.get("facts", {}).get("kernel_log") or {}).get("hostname") or name
                while host in results:  # two capture dirs of one host stay two entries
                    host += "'"
                h["host"] = host
                results[host] = {"ansible_facts": {"gpu_health": h}}
                dir_hosts.setdefault(name, []).append(host)

    def loose_lines(res, findings, files_read):
        """What the job-log reader left: its unexplained lines go to the host the same capture
        named (the first), else to a host of the capture's name; a directory of captures
        nothing was read of is an unknown host that says why (never dropped)."""
        for f in findings:
            name = str(f.get("source") or "").split(os.sep)[0]
            host = (dir_hosts.get(name) or [None])[0]
            if host is not None and host in res:
                res[host]["ansible_facts"]["gpu_health"]["findings"].append(f)
            else:
                res[name] = {"ansible_facts": {"gpu_health": host_of_findings(name, [f])}}
                dir_hosts[name] = [name]
        for name, files in dir_files.items():
            if dir_hosts.get(name) or any(files_read.get(os.path.join(name, k)) for k in files):
                continue
            why = ", ".join("%s: %s" % (k, "empty" if v else "not recognised") for k, v in sorted(files.items()))
            res[name] = {"ansible_facts": {"gpu_health": host_of_findings(name, [finding(
                "no_evidence", "no source gave usable evidence (%s): this host's health is unknown" % why,
                source=", ".join(sorted(files)))])}}
    from .joblog.parallel import job_log_workers  # here: the other commands never read a job log
    analysis = diagnose(results, job_logs=job_files, since=since, keep_facts=include_facts,
                        job_workers=job_log_workers(), loose_lines=loose_lines, offline=True)
    job = analysis.get("job") or {}
    cited = set(str(f.get("source") or "").rsplit(":", 1)[0] for f in job.get("findings") or [])
    for key, n in (job.get("files_read") or {}).items():
        full = job_paths.get(key)
        if (n or key in cited) and full is not None:
            for k in (full, full[:-3] if full.endswith(".gz") else full + ".gz"):
                if k in inputs:
                    inputs[k]["read_as"].append("job log")
    return {"schema": SCHEMA, "hosts": analysis["hosts"], "job": analysis["job"], "cluster": analysis["cluster"],
            "files": sorted(inputs.values(), key=lambda i: i["file"])}


def _shown(given, directory, entry):
    """A file as the user would name it: the path given, or the path given + the entry."""
    if os.path.isfile(given):
        return given
    return os.path.normpath(os.path.join(given, os.path.relpath(os.path.join(directory, entry), given)))


def _kernel_read(facts, inputs):
    """Mark the files a kernel-log scan found the kernel's lines in."""
    files = (facts or {}).get("files") or []
    for f in files:
        # per file (filescan), or the host's totals (hostscan: one host's lines of several files)
        n = f.get("kernel_lines", (facts or {}).get("kernel_lines")) or f.get("node_lines", (facts or {}).get("node_lines"))
        label = "kernel log" if n else "Slurm daemon log" if f.get("slurm_lines", (facts or {}).get("slurm_lines")) \
            else None
        if label and f.get("path") in inputs and label not in inputs[f["path"]]["read_as"]:
            inputs[f["path"]]["read_as"].append(label)


def main(argv=None):
    parser = _build_parser()
    stdin_dir = None
    try:
        args = parser.parse_args(argv)
        if args.command in runbook.PLAYBOOKS:
            return runbook.main(args)
        if args.command != "analyze":
            raise UsageError("usage: gpu-runbook analyze|diagnose|remediate ... (see gpu-runbook COMMAND --help)")
        paths = list(args.paths)
        if "-" in paths:
            stdin_dir = _stdin_to_file()
            paths = [os.path.join(stdin_dir, STDIN_NAME) if p == "-" else p for p in paths]
        _check_paths(paths)
        keep_freed_memory()  # logs are read block by block: no page faults for every block
        analysis = analyze_paths(paths, since=args.since, expected_gpus=args.expected_gpus,
                                 expected_ib_rate=args.expected_ib_rate, include_facts=args.facts,
                                 tz=args.tz if args.tz is not None else local_tz(), host=args.host)
    except UsageError as exc:
        print("gpu-runbook: %s" % exc, file=sys.stderr)
        return EXIT_UNUSABLE
    except (OSError, UnicodeError) as exc:
        print("gpu-runbook: cannot read input: %s" % exc, file=sys.stderr)
        return EXIT_UNUSABLE
    finally:
        if stdin_dir is not None:
            shutil.rmtree(stdin_dir, ignore_errors=True)
    for line in unread_inputs(analysis):
        print(printable("gpu-runbook: %s" % line), file=sys.stderr)
    unnamed = [h["host"] for h in analysis["hosts"] if str(h.get("host") or "").startswith(UNNAMED)]
    if unnamed:
        print("gpu-runbook: no line names the host of the files given, shown as '%s': name it with --host NAME "
              "(or give the directory of one host's captures, named after the host)" % unnamed[0], file=sys.stderr)
    unusable = _unusable(analysis)
    for host, why in unusable:
        print(printable("gpu-runbook: %s: no usable evidence: %s" % (host, why)), file=sys.stderr)
    # a host no source gave usable evidence of may still carry a finding that says something (Slurm's
    # log: a step whose processes could not be killed): it is shown, never dropped with the exit
    if len(unusable) == len(analysis["hosts"]) and not analysis.get("job") and not any(
            f["severity"] in ("warning", "critical") and f["kind"] != "no_evidence"
            for h in analysis["hosts"] for f in h["findings"]):
        if not analysis["hosts"] and any(f.get("read_as") for f in analysis.get("files") or ()):
            read = ["%s (%s)" % (f["file"], ", ".join(f["read_as"])) for f in analysis["files"] if f.get("read_as")]
            print(printable("gpu-runbook: no host and no job to analyse: nothing read names a host's fault or a job: "
                            "%s" % "; ".join(read[:8])), file=sys.stderr)
        elif not analysis["hosts"]:
            print("gpu-runbook: nothing in the input was recognised: no host and no job to analyse", file=sys.stderr)
        return EXIT_UNUSABLE
    if args.format == "json":
        out = printable_json(json.dumps(analysis, indent=2, ensure_ascii=False, default=str)) + "\n"
    else:
        from .render import render_text
        out = render_text(analysis, lang=args.lang) + "\n"
    try:
        sys.stdout.write(out)
        sys.stdout.flush()  # here, not at exit: a full disk or closed pipe is seen and said once
    except OSError as exc:
        _silence_stdout()
        print("gpu-runbook: output could not be written: %s" % (exc.strerror or exc), file=sys.stderr)
        return EXIT_OUTPUT_FAILED
    # the job's findings weigh like a host's: a job that hung on no sick host is still critical
    return exit_status(analysis["hosts"] + list((analysis.get("job") or {}).get("findings") or []))


STDIN_NAME = "stdin"


def _stdin_to_file():
    """Standard input (``analyze -``) copied to a private temporary file, streamed: the readers
    read files (twice: the kernel's lines and the job's). -> its directory (removed after)."""
    import tempfile
    d = tempfile.mkdtemp(prefix="gpu-runbook-stdin-")
    src = getattr(sys.stdin, "buffer", None)
    with open(os.path.join(d, STDIN_NAME), "wb") as out:
        if src is None:  # a test's StringIO
            out.write(sys.stdin.read().encode("utf-8"))
        else:
            shutil.copyfileobj(src, out, 1 << 20)
    return d


def unread_inputs(analysis):
    """One line per input nothing was read from: empty, or nothing in it recognised."""
    out = []
    for i in analysis.get("files") or []:
        name = "standard input" if os.path.basename(i["file"]) == STDIN_NAME and "gpu-runbook-stdin-" in i["file"] \
            else i["file"]
        if i.get("empty"):
            out.append("%s: empty: nothing to read" % name)
        elif not i["read_as"]:
            out.append("%s: nothing in it was recognised (not a kernel log, a job's log, or the output of a tool "
                       "gpu-runbook reads): it was not used" % name)
    return out


def _silence_stdout():
    """Point stdout at /dev/null: what Python still holds for it is dropped at exit, not
    reported a second time as a traceback."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout already closed or not a real file (a test's StringIO)
        pass


def _check_paths(paths):
    """Every path exists, before any is read: a typo in the third path costs no analysis."""
    for path in paths:
        if not os.path.exists(path):
            raise UsageError("%s: no such file or directory" % path)


def _unusable(analysis):
    """(host, why) for every host none of whose inputs gave usable evidence."""
    out = []
    for h in analysis["hosts"]:
        f = next((f for f in h["findings"] if f["kind"] == "no_evidence"), None)
        if f is not None:
            out.append((h["host"], f["message"]))
    return out


if __name__ == "__main__":
    sys.exit(main())
