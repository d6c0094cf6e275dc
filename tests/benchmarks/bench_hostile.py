"""Hostile inputs, timed and measured (issue 11): pathological regex lines, and the peak memory
of the kernel-log file scan on a file of NULs and on one huge line.

    .venv/bin/python tests/benchmarks/bench_hostile.py [--nul-gb 2] [--line-mb 200]

Each memory case runs in a fresh subprocess and reports its peak RSS (VmHWM)."""

import argparse
import os
import subprocess
import sys
import tempfile
import time

_CHILD = r"""
import sys
from gpu_runbook.kernlog import scan_kernel_log_file
scan_kernel_log_file(sys.argv[1])
for line in open("/proc/self/status"):
    if line.startswith("VmHWM:"):
        print(int(line.split()[1]) // 1024)
"""


def timed(label, fn):
    t0 = time.perf_counter()
    fn()
    print("%-55s %7.2f s" % (label, time.perf_counter() - t0), flush=True)


def peak_rss_mb(path):
    """Peak RSS of the scan in its own process; grep's own peak is that of its children (ru_maxrss)."""
    code = _CHILD + "\nimport resource\nprint(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)\n"
    out = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, check=False).stdout.split()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nul-gb", type=float, default=2.0)
    ap.add_argument("--line-mb", type=float, default=200.0)
    args = ap.parse_args()
    from gpu_runbook.joblog import parse_job_logs
    from gpu_runbook.nvsmi import parse_nvidia_smi
    line = ("DataLoader worker (pid(" * ((1 << 20) // 23 + 1))[:1 << 20]
    timed("job log: 1 MiB line of 'DataLoader worker (pid('", lambda: parse_job_logs({"rank-0.log": line + "\n"}))
    xml = '<?xml version="1.0" ?>\n<nvidia_smi_log>\n' + ("<!DOCTYPE[" * 20480)
    timed("nvidia-smi XML: 200 KB of '<!DOCTYPE['", lambda: parse_nvidia_smi(xml, source="nvidia-smi-q.xml"))
    with tempfile.TemporaryDirectory() as tmp:
        nul = os.path.join(tmp, "nul.log")
        with open(nul, "wb") as fh:
            fh.truncate(int(args.nul_gb * (1 << 30)))  # sparse: no disk used
        print("kernel log: %.1f GB of NULs: peak RSS python, grep (MB): %s" % (args.nul_gb, peak_rss_mb(nul)),
              flush=True)
        os.unlink(nul)
        big = os.path.join(tmp, "line.log")
        with open(big, "wb") as fh:
            fh.write(b"NVRM: " + b"x" * int(args.line_mb * (1 << 20)) + b"\n")
        print("kernel log: one %.0f MB line: peak RSS python, grep (MB): %s" % (args.line_mb, peak_rss_mb(big)),
              flush=True)


if __name__ == "__main__":
    main()
