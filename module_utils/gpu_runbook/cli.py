"""gpu-runbook command line: the same engine as the Ansible module, on captured files.

    gpu-runbook analyze PATH... [--format json|text] [--lang en|ko] [--since ISO] [--tz ZONE]
    gpu-runbook diagnose|remediate [-i INVENTORY] [--limit L] [--job-id N] [-e K=V] (runbook.py)

Exit status and inputs: see INPUTS_AND_EXIT_STATUS (what `analyze --help` prints).
"""

import argparse
import json
import math
import os
import sys

from . import __version__, runbook
from .analyze import SCHEMA, analyze_host, exit_status
from .capture import load_capture_dir, split_hosts, stream_large_sources
from .diagnose import diagnose
from .findings import finding
from .sources import NOTES
from .textio import keep_freed_memory, printable, printable_json
from .timeutil import local_tz, parse_time, parse_tz

EXIT_UNUSABLE = 3
EXIT_OUTPUT_FAILED = 4

# The epilog of `analyze --help`. The job-log names are canonical_name()'s and the contents
# DETECTORS' (sources.py); the codes are exit_status()'s plus EXIT_UNUSABLE: the tests hold
# this text to that behaviour.
INPUTS_AND_EXIT_STATUS = """\
inputs:
  host captures   a directory of one host's files (kern.log or dmesg.txt, nvidia-smi-q.txt
                  or .xml, ib-sysfs.txt, ibstat.txt, perfquery.txt, nvidia-bug-report.log,
                  ...), a directory of such per-host directories, or one file; files are
                  also recognised by their content, and may be gzipped.
  job logs        the training job's output, one combined file or one file per rank, in any
                  of those directories: files named nccl.log, *.out, *.err, rank-*, rank_*
                  or slurm-* (.gz too), or any file whose start shows NCCL INFO/WARN lines,
                  ProcessGroupNCCL, "Watchdog caught collective" or a tqdm progress bar.
                  They fill the job section: the rank the others waited for, its host and
                  GPU, and the host finding that explains it.

exit status:
  0  nothing at warning or above
  1  warnings
  2  critical (a host or the job)
  3  unusable input: a bad argument or a missing path (one line on stderr, nothing
     analysed), or no input gave usable evidence
  4  the output could not be written (a closed pipe, as in `| head`, or a full disk):
     one line on stderr

A host directory that cannot be listed does not stop the others: it is reported as a
host with no usable evidence, saying why. Control characters in the logs' text (terminal
escapes) are printed escaped, as \x1b.
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
    runbook.add_parsers(sub, argparse.RawDescriptionHelpFormatter)
    return p


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


def _host_dirs(path):
    """A path -> list of (host name, sources, job files, ignored)."""
    if os.path.isfile(path):
        directory, entry = os.path.split(os.path.abspath(path))
        sources, jobs, ignored = load_capture_dir(directory, files=[entry])
        return [(os.path.basename(directory) or entry, sources, jobs, ignored)]
    if not os.path.isdir(path):
        raise UsageError("%s: no such file or directory" % path)
    sources, jobs, ignored = load_capture_dir(path)
    if sources or jobs:
        return [(os.path.basename(os.path.abspath(path)), sources, jobs, ignored)]
    out = []
    for entry in sorted(os.listdir(path)):
        sub = os.path.join(path, entry)
        if os.path.isdir(sub):
            try:
                s, j, i = load_capture_dir(sub)
            except OSError as exc:  # one host's directory unreadable: the others are still analysed
                why = "%s could not be read: %s" % (entry, exc.strerror or exc)
                s, j, i = {NOTES: [finding("capture_unreadable", why, evidence=sub, source=entry)]}, {}, []
            if s or j:
                out.append((entry, s, j, i))
    return out


def analyze_paths(paths, since=None, expected_gpus=None, expected_ib_rate=None, include_facts=False, tz=None):
    """Paths -> analysis (schema v1): every host, cross-host rules, and the job joined.
    ``tz``: the zone of times written without one (None: UTC)."""
    if since is not None:
        since = parse_time(since, tz).isoformat()  # a naive --since is in the captures' zone
    results, job_files = {}, {}
    for path in paths:
        found = _host_dirs(path)
        if not found:
            raise UsageError("%s: no recognisable capture (kern.log, nvidia-smi-q.txt, ibstat.txt, ...)" % path)
        for name, sources, jobs, _ignored in found:
            job_files.update({os.path.join(name, k): v for k, v in jobs.items()})
            if not sources:
                continue
            for host, host_sources, parsed in split_hosts(sources, since=since, tz=tz):
                host_sources, more = stream_large_sources(host_sources, since=since, tz=tz)
                parsed.update(more)
                if not host_sources and not parsed:
                    continue
                h = analyze_host(host_sources, since=since, expected_gpus=expected_gpus,
                                 expected_ib_rate=expected_ib_rate, parsed=parsed, tz=tz)
                host = host or (h.get("facts", {}).get("kernel_log") or {}).get("hostname") or name
                while host in results:  # two capture dirs of one host stay two entries
                    host += "'"
                h["host"] = host
                results[host] = {"ansible_facts": {"gpu_health": h}}
    from .joblog.parallel import job_log_workers  # here: the other commands never read a job log
    analysis = diagnose(results, job_logs=job_files, since=since, keep_facts=include_facts,
                        job_workers=job_log_workers())
    return {"schema": SCHEMA, "hosts": analysis["hosts"], "job": analysis["job"], "cluster": analysis["cluster"]}


def main(argv=None):
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command in runbook.PLAYBOOKS:
            return runbook.main(args)
        if args.command != "analyze":
            raise UsageError("usage: gpu-runbook analyze|diagnose|remediate ... (see gpu-runbook COMMAND --help)")
        _check_paths(args.paths)
        keep_freed_memory()  # logs are read block by block: no page faults for every block
        analysis = analyze_paths(args.paths, since=args.since, expected_gpus=args.expected_gpus,
                                 expected_ib_rate=args.expected_ib_rate, include_facts=args.facts,
                                 tz=args.tz if args.tz is not None else local_tz())
    except UsageError as exc:
        print("gpu-runbook: %s" % exc, file=sys.stderr)
        return EXIT_UNUSABLE
    except (OSError, UnicodeError) as exc:
        print("gpu-runbook: cannot read input: %s" % exc, file=sys.stderr)
        return EXIT_UNUSABLE
    unusable = _unusable(analysis)
    for host, why in unusable:
        print(printable("gpu-runbook: %s: no usable evidence: %s" % (host, why)), file=sys.stderr)
    if unusable and len(unusable) == len(analysis["hosts"]) and not analysis.get("job"):
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
