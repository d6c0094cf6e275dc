"""gpu-runbook command line: the same engine as the Ansible module, on captured files.

    gpu-runbook analyze PATH... [--format json|text] [--lang en|ko] [--since ISO] [--tz ZONE]

Exit status: 0 nothing at warning or above, 1 warnings, 2 critical, 3 unusable input (bad
arguments, or no input gave usable evidence; an input that could not be used beside others
that could is reported on stderr and listed as an unknown host).
"""

import argparse
import json
import os
import sys

from . import __version__
from .analyze import SCHEMA, analyze_host, exit_status
from .capture import load_capture_dir, split_hosts, stream_large_sources
from .diagnose import diagnose
from .timeutil import local_tz, parse_time, parse_tz

EXIT_UNUSABLE = 3


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # exit 3 with one line, not argparse's 2
        raise UsageError(message)


def _build_parser():
    p = _Parser(prog="gpu-runbook", description=__doc__.split("\n")[0])
    p.add_argument("--version", action="version", version="gpu-runbook " + __version__)
    sub = p.add_subparsers(dest="command")
    a = sub.add_parser("analyze", help="analyze captured outputs of one or more hosts")
    a.add_argument("paths", nargs="+", metavar="PATH",
                   help="a directory of one host's captures (or of per-host subdirectories), or a single file")
    a.add_argument("--format", choices=("json", "text"), default="text")
    a.add_argument("--lang", choices=("en", "ko"), default="en")
    a.add_argument("--since", type=_iso_time,
                   help="only kernel-log events at/after this time (ISO 8601, e.g. the job start; "
                        "without a zone it is in --tz)")
    a.add_argument("--tz", type=_zone, default=None,
                   help="zone of times written without one, in the captures (dmesg -T, syslog) and --since: "
                        "an offset like +09:00 or an IANA name (default: this machine's local zone)")
    a.add_argument("--expected-gpus", type=_positive(int), help="GPUs every host should have (e.g. 8)")
    a.add_argument("--expected-ib-rate", type=_positive(float), help="expected IB port rate in Gb/s (e.g. 400)")
    a.add_argument("--facts", action="store_true", help="include parsed facts in the JSON")
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
            s, j, i = load_capture_dir(sub)
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
    analysis = diagnose(results, job_logs=job_files, since=since, keep_facts=include_facts)
    return {"schema": SCHEMA, "hosts": analysis["hosts"], "job": analysis["job"]}


def main(argv=None):
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command != "analyze":
            raise UsageError("usage: gpu-runbook analyze PATH... [--format json|text] [--lang en|ko]")
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
        print("gpu-runbook: %s: no usable evidence: %s" % (host, why), file=sys.stderr)
    if unusable and len(unusable) == len(analysis["hosts"]) and not analysis.get("job"):
        return EXIT_UNUSABLE
    if args.format == "json":
        json.dump(analysis, sys.stdout, indent=2, ensure_ascii=False, default=str)
        sys.stdout.write("\n")
    else:
        from .render import render_text
        print(render_text(analysis, lang=args.lang))
    status = exit_status(analysis["hosts"])
    job = analysis.get("job") or {}
    for f in job.get("findings", []):
        status = max(status, {"warning": 1, "critical": 2}.get(f["severity"], 0))
    return status


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
