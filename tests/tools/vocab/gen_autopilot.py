#!/usr/bin/env python3
"""Generate module_utils/gpu_runbook/autopilot_checks.py: the health checks of IBM Autopilot
(IBM/autopilot, a Kubernetes daemon that tests GPU nodes and labels them), read from its own
source at a pinned commit.

What is read:

- CHECKS: ``utils/runHealthchecks.py`` ``get_node_status``: the word it looks for in a line
  holding FAIL or ABORT (in its order: the first that the line holds decides) and the node
  status it then prints ('Node Status: PCIE Failed');
- BANNERS: the ``[[ NAME ]]`` / ``[NAME]`` prefixes each check's entrypoint prints before its
  result (gpu-bw, gpu-remapped, gpu-dcgm, gpu-mem, gpu-power, network ping);
- KLOG: the daemon's own log lines (``pkg/healthcheck/healthcheck.go`` ``klog.Info``) that say
  a check failed or could not run;
- GO_FILES: the daemon's own source files (pkg/), whose names head its log lines;
- LABELS: the values of the node label ``autopilot.ibm.com/gpuhealth`` (``pkg/utils/
  nodelabels.go``, and EVICT from ``gpu-dcgm/entrypoint.py``) and the DCGM errors its DCGM
  check calls fatal (EVICT).

Each check is given the category of what it tests (CATEGORY below, by the status it prints):
PCIe bandwidth to a GPU, pending row remaps, the DCGM diagnostic and the GPU memory test
are the GPU's; ping over the node's secondary (RDMA) networks is the fabric's; power capping,
the storage (PVC) test and a daemon that did not answer name no cause: unknown.

Usage (from the repository root)::

    git clone --bare https://github.com/IBM/autopilot.git /tmp/autopilot.git
    .venv/bin/python tests/tools/vocab/gen_autopilot.py --src /tmp/autopilot.git [--rev 09a177d184a7]

Deterministic: the same source and pin give the same module.
"""

import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))

from common import line_of, ls_files, resolve, show  # noqa: E402

PIN = "09a177d184a7a462a2e2896864f653ae8c535fdf"  # main, 2025-07-25 ("Update health check intervals (#75)")
ORIGIN = "https://github.com/IBM/autopilot"
LICENCE = "Apache-2.0 (autopilot's LICENSE)"
OUT = os.path.join(REPO, "module_utils", "gpu_runbook", "autopilot_checks.py")
D = "autopilot-daemon/"

CATEGORY = {
    "PCIE Failed": "gpu_hardware",
    "REMAPPED ROWS Failed": "gpu_hardware",
    "DCGM Failed": "gpu_hardware",
    "GPU MEM Test Failed": "gpu_hardware",
    "PING Failed": "ib_network",
    "GPU POWER Failed": "unknown",
    "PVC Create-Delete Test Failed": "unknown",
    "Connection to Server Failed": "unknown",
}
# the daemon's log names a check in its own words: which check of CHECKS each is
KLOG_CHECK = {"Remapped Rows": "REMAPPED ROWS", "GPU Memory": "GPU-MEM", "PCIe BW": "PCIE", "GPU PCIe BW": "PCIE",
              "Ping": "PING",
              "DCGM": "DCGM", "Power Throttle": "GPU POWER"}
ENTRYPOINTS = ("gpu-bw/entrypoint.py", "gpu-remapped/entrypoint.py", "gpu-dcgm/entrypoint.py", "gpu-mem/entrypoint.py",
               "gpu-power/power-throttle.sh", "network/ping-entrypoint.py")
_CHECK_RE = re.compile(r"(?:if|elif)\s*\(\s*['\"]([^'\"]{1,40})['\"] in line\)\s*:\s*\n\s*node_status_list\.append\("
                       r"\s*['\"]([^'\"]{1,60})['\"]\s*\)")
_BANNER_RE = re.compile(r"(\[\[ ?([A-Z][A-Z0-9 \-]{1,30}?) ?\]\]|\[(GPU POWER|PING)\] )")
_KLOG_RE = re.compile(r'klog\.Info\("([A-Z][A-Za-z0-9 ]{2,60}(?:failed\.|exited with errors\.|cannot be run\. |'
                      r'completed:))"')
_LABEL_RE = re.compile(r'"autopilot\.ibm\.com/(gpuhealth|nodehealth)": "([A-Z]*)"')
_EVICT_RE = re.compile(r'general_health = "([A-Z]+)"')
_FATAL_RE = re.compile(r"dcgm_fatal_errors = \[([^\]\n]{1,200})\]")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", required=True, help="a clone or bare mirror of github.com/IBM/autopilot")
    ap.add_argument("--rev", default=PIN)
    args = ap.parse_args(argv)
    commit = resolve(args.src, args.rev)
    run_py = D + "utils/runHealthchecks.py"
    text = show(args.src, commit, run_py)
    checks = [(m.group(1), m.group(2), run_py, line_of(text, m.start()), CATEGORY[m.group(2)])
              for m in _CHECK_RE.finditer(text)]
    banners, seen = [], set()
    for rel in ENTRYPOINTS:
        src = show(args.src, commit, D + rel)
        for m in _BANNER_RE.finditer(src):
            name = m.group(2) or m.group(3)
            if name not in seen:
                seen.add(name)
                banners.append((name, D + rel, line_of(src, m.start())))
    hc_go = D + "pkg/healthcheck/healthcheck.go"
    src = show(args.src, commit, hc_go)
    klog = [(m.group(1).strip(), _klog_check(m.group(1)), _outcome(m.group(1)), hc_go, line_of(src, m.start()))
            for m in _KLOG_RE.finditer(src) if _klog_check(m.group(1))]
    labels_go = D + "pkg/utils/nodelabels.go"
    src = show(args.src, commit, labels_go)
    labels = [(m.group(1), m.group(2), labels_go, line_of(src, m.start())) for m in _LABEL_RE.finditer(src)]
    dcgm_py = D + "gpu-dcgm/entrypoint.py"
    src = show(args.src, commit, dcgm_py)
    labels += [("gpuhealth", m.group(1), dcgm_py, line_of(src, m.start())) for m in _EVICT_RE.finditer(src)
               if m.group(1) == "EVICT"]
    fm = _FATAL_RE.search(src)
    fatal = tuple(re.findall(r"'([^']{1,40})'", fm.group(1))) if fm else ()
    go_files = sorted(set(os.path.basename(p) for p in ls_files(args.src, commit, D + "pkg/") if p.endswith(".go")
                          and not p.endswith("_test.go")))
    if len(checks) < 6 or not go_files or len(banners) < 5 or not klog or not any(v == "EVICT" for _k, v, _f, _l in labels) or not fatal:
        raise SystemExit("Autopilot's checks, banners, log lines or labels not found at %s" % commit)
    lines = ["# SPDX-License-Identifier: Apache-2.0",
             '"""IBM Autopilot\'s health checks as data: generated by tests/tools/vocab/gen_autopilot.py; edit the',
             "generator, never this file.", "",
             "Source: IBM/autopilot %s, %s; licence %s." % (commit, ORIGIN, LICENCE),
             "CHECKS: (the word runHealthchecks.py looks for in a FAIL/ABORT line, in its order; the node status it",
             "prints; file; line; the category of what the check tests). BANNERS: (a check's prefix as its",
             "entrypoint prints it, file, line). KLOG: (the daemon's log message, the check, failed / not_run / completed, file, line).",
             "LABELS: (label, value, file, line). FATAL_DCGM: the DCGM errors its DCGM check labels EVICT.",
             "GO_FILES: the daemon's source files, whose names its log lines carry.\"\"\"", "",
             "# flake8: noqa  (generated)",
             "COMMIT = %r" % commit,
             "CHECKS = ("]
    lines += ["    %r," % (c,) for c in checks]
    lines += [")", "BANNERS = ("]
    lines += ["    %r," % (b,) for b in banners]
    lines += [")", "KLOG = ("]
    lines += ["    %r," % (k,) for k in klog]
    lines += [")", "LABELS = ("]
    lines += ["    %r," % (k,) for k in labels]
    lines += [")", "FATAL_DCGM = %r" % (fatal,), "GO_FILES = %r" % (tuple(go_files),), ""]
    with open(OUT, "w") as f:
        f.write("\n".join(lines))
    print("%s: %d checks, %d banners, %d log lines, %d label values" % (OUT, len(checks), len(banners), len(klog),
                                                                          len(labels)))


def _klog_check(message):
    """The check a log line names (the longest of KLOG_CHECK's words it opens with); None for one
    that CHECKS does not have (iperf3's)."""
    words = sorted((w for w in KLOG_CHECK if message.startswith(w)), key=len, reverse=True)
    return KLOG_CHECK[words[0]] if words else None


def _outcome(message):
    return "not_run" if "cannot be run" in message else "completed" if message.endswith("completed:") else "failed"


if __name__ == "__main__":
    main()
