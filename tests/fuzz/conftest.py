"""Hypothesis profiles for the parser fuzz tests, and their figures.

``make test`` runs the "ci" profile: a few hundred inputs per parser, derandomized, so every
change is guarded and CI is reproducible. ``make fuzz`` sets GPURB_FUZZ_EXAMPLES (10,000):
random inputs, and a summary of inputs, slowest input and wall time per parser."""

import os
import time

from hypothesis import HealthCheck, settings

EXAMPLES = int(os.environ.get("GPURB_FUZZ_EXAMPLES") or 0)
# The time bound of one input: linear in its size, generous because CI has 2 shared cores.
# Measured: a 1 MiB run of blank lines takes the nvidia-smi table parser ~4.5 s on a loaded
# 2-core machine, a 19 MB bug report the XML parser ~11 s; a quadratic pattern takes minutes.
SECONDS = float(os.environ.get("GPURB_FUZZ_SECONDS") or 5)
SECONDS_PER_MIB = 10.0
_SLOW = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example]

settings.register_profile("ci", max_examples=int(os.environ.get("GPURB_FUZZ_CI_EXAMPLES") or 100),
                          derandomize=True, deadline=None, database=None,
                          suppress_health_check=_SLOW, print_blob=True)
settings.register_profile("full", max_examples=EXAMPLES or 10000, derandomize=False, deadline=None,
                          database=None, suppress_health_check=_SLOW, print_blob=True)
settings.load_profile("full" if EXAMPLES else "ci")

STATS = {}  # parser name -> {"inputs", "max_s", "wall_s"}


def record(name, seconds):
    s = STATS.setdefault(name, {"inputs": 0, "max_s": 0.0, "started": time.monotonic()})
    s["inputs"] += 1
    s["max_s"] = max(s["max_s"], seconds)
    s["wall_s"] = time.monotonic() - s["started"]


def pytest_runtest_logreport(report):
    """With GPURB_FUZZ_LOG set, each parser's figures as it finishes (a long run in chunks)."""
    path = os.environ.get("GPURB_FUZZ_LOG")
    if path and report.when == "call":
        with open(path, "a", encoding="utf-8") as fh:
            fh.write("%s %s %.1f s %r\n" % (report.nodeid, report.outcome, report.duration,
                                            {k: v for k, v in STATS.items() if k.split(".")[-1] in report.nodeid}))


def pytest_terminal_summary(terminalreporter):
    if not STATS:
        return
    tr = terminalreporter
    tr.section("parser fuzzing: inputs, slowest input, wall time")
    for name, s in sorted(STATS.items()):
        tr.write_line("%-62s %7d inputs  slowest %6.3f s  wall %7.1f s" % (name, s["inputs"], s["max_s"], s["wall_s"]))
    tr.write_line("%-62s %7d inputs  slowest %6.3f s  wall %7.1f s" % (
        "total (%d parsers)" % len(STATS), sum(s["inputs"] for s in STATS.values()),
        max(s["max_s"] for s in STATS.values()), sum(s["wall_s"] for s in STATS.values())))
