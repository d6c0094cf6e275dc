"""Throughput and memory of the job-log path: rank logs streamed through the real CLI.

    .venv/bin/python tests/benchmarks/bench_joblog.py [--files 100] [--mb 30] [--runs 3] [--dir /tmp]
                                                      [--keep | --reuse DIR]
    make bench-joblog

Writes --files rank logs of --mb MB each into a temp dir, with what a training job's rank log
holds: NCCL INFO setup lines, Megatron-style iteration lines with the loss, tqdm bars
(``\\r``-chained updates), a few warnings and sub-communicator NCCL lines, then the watchdog
tail of a collective timeout on every rank but one (rank 13 hung). Then it runs
``gpu-runbook analyze DIR --format json`` in a fresh process --runs times (as the CLI runs by
default: one worker process reads ahead where there are two CPUs; GPU_RUNBOOK_JOB_LOG_WORKERS=0
in the environment for the serial parse) and prints, for
the median run, MB/s (by wall time, and by the process's CPU time: on a shared machine the
wall time is mostly waiting), CPU seconds and the process's peak RSS; and the peak RSS of one run on
a tenth of the files (memory flat: the two peaks match within a few MB), and the load average
when it ended. Checks the answer (culprit rank 13) on every run, then deletes the files.
"""

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
CLI = [sys.executable, "-c", "import sys; from gpu_runbook.cli import main; sys.exit(main())"]
HUNG = 13
SEQ = 48211


def _nccl_setup(rank, nranks, host, r):
    pid = 41000 + rank
    p = "%s:%d:%d [%d] NCCL INFO " % (host, pid, pid + 177, rank % 8)
    lines = ["%s:%d:%d [%d] NCCL INFO Bootstrap : Using eth0:10.0.%d.%d<0>" % (host, pid, pid, rank % 8,
                                                                                 rank // 8, 10 + rank % 8),
             p + "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB [RO]; "
             "OOB eth0:10.0.0.1<0>",
             p + "Using network IB",
             p + "comm 0x55d0c8a%05x rank %d nranks %d cudaDev %d nvmlDev %d busId %x000 commId 0x%016x - Init START"
             % (r.getrandbits(20), rank, nranks, rank % 8, rank % 8, 0x18 + 16 * (rank % 8), 0x5eed)]
    for ch in range(8):
        lines.append(p + "Channel %02d/0 : %d[%d] -> %d[%d] [send] via NET/IB/%d/GDRDMA"
                     % (ch, rank, rank % 8, (rank + 8) % nranks, rank % 8, rank % 8))
    lines.append(p + "Connected all rings")
    lines.append(p + "comm 0x55d0c8a00000 rank %d nRanks %d nNodes %d localRanks 8 localRank %d MNNVL 0 - Init COMPLETE"
                 % (rank, nranks, nranks // 8, rank % 8))
    return lines


def _iteration(step, r):
    return (" [2026-12-02 14:%02d:%02d] iteration %8d/ 500000 | consumed samples: %12d | elapsed time per iteration "
            "(ms): %.1f | learning rate: %.6E | global batch size:  1024 | lm loss: %.6E | loss scale: 1.0 | grad "
            "norm: %.3f | number of skipped iterations:   0 | number of nan iterations:   0 |"
            % (step // 60 % 60, step % 60, step, step * 1024, 480 + r.random() * 40, 3e-4 * (1 - step / 5e5),
               2.0 + r.random(), 0.5 + r.random()))


def _tqdm_chain(step, r):
    parts = []
    for k in range(20):
        n = step + k
        parts.append("Epoch 3:  %2d%%|%-10s| %d/500000 [1:02:%02d<12:03:11, %.2fit/s, loss=%.3f]"
                     % (n * 100 // 500000, "#" * (n * 10 // 500000), n, k, 2.0 + r.random(), 2.0 + r.random()))
    return "\r".join(parts)


def _tail(rank, host):
    if rank == HUNG:
        return []   # the hung rank logs nothing: it never entered the collective
    ts = "E1202 14:41:%02d.%06d" % (rank % 60, rank * 1000)
    return ["[rank%d]:[%s ProcessGroupNCCL.cpp:616] [Rank %d] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=%d, OpType=ALLREDUCE, NumelIn=262144, NumelOut=262144, Timeout(ms)=600000) ran for "
            "600012 milliseconds before timing out." % (rank, ts, rank, SEQ),
            "[rank%d]:[%s ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank %d] Exception (either an "
            "error or timeout) detected by watchdog at work: %d, last enqueued NCCL work: %d, last completed NCCL "
            "work: %d." % (rank, ts, rank, SEQ, SEQ + 2, SEQ - 1),
            "[rank%d]:[%s ProcessGroupNCCL.cpp:630] [Rank %d] Some NCCL operations have failed or timed out. Due "
            "to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete "
            "data." % (rank, ts, rank)]


def write_rank_log(path, rank, nranks, size):
    """One realistic rank log of about ``size`` bytes."""
    r = random.Random(rank)
    host = "gpu-node%02d" % (rank // 8)
    with open(path, "w") as fh:
        fh.write("\n".join(_nccl_setup(rank, nranks, host, r)) + "\n")
        step, written = 1000, 0
        while written < size:
            step += 1
            if step % 50 == 0:
                line = _tqdm_chain(step, r)
            elif step % 997 == 0:
                line = ("/usr/lib/python3/site-packages/torch/utils/checkpoint.py:464: UserWarning: "
                        "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly.")
            elif step % 4999 == 0:
                line = ("%s:%d:%d [%d] NCCL INFO comm 0x7f3a%08x rank %d nranks 8 cudaDev %d busId %x000 "
                        "commId 0x%016x - Init COMPLETE" % (host, 41000 + rank, 41177 + rank, rank % 8, step,
                                                            rank % 8, rank % 8, 0x18, step))
            else:
                line = _iteration(step, r)
            fh.write(line + "\n")
            written += len(line) + 1
        fh.write("\n".join(_tail(rank, host)) + "\n")


def write_logs(d, files, size):
    nranks = max(files, HUNG + 1)
    for rank in range(files):
        write_rank_log(os.path.join(d, "rank-%d.log" % rank), rank, nranks, size)


def run_cli(d):
    """(wall s, CPU s, peak RSS MiB, analysis) of one `gpu-runbook analyze` in a fresh process."""
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "module_utils"))
    t0 = time.monotonic()
    proc = subprocess.Popen(CLI + ["analyze", d, "--format", "json"], stdout=subprocess.PIPE, env=env)
    out = proc.stdout.read()
    _pid, status, ru = os.wait4(proc.pid, 0)  # this child's own rusage: its CPU and peak RSS
    wall = time.monotonic() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024.0, json.loads(out.decode())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=100)
    ap.add_argument("--mb", type=float, default=30.0, help="MB per rank log")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default=None, help="where the temp dir goes (default: the system's temp dir)")
    ap.add_argument("--reuse", metavar="DIR", help="the logs a run left with --keep (DIR/big, DIR/small): not rewritten")
    ap.add_argument("--keep", action="store_true", help="leave the logs for --reuse")
    args = ap.parse_args()
    base = args.reuse or tempfile.mkdtemp(prefix="bench-joblog-", dir=args.dir)
    small, big = os.path.join(base, "small"), os.path.join(base, "big")
    nsmall = max(HUNG + 1, args.files // 10)
    try:
        if not args.reuse:
            os.makedirs(small)
            os.makedirs(big)
            t0 = time.monotonic()
            write_logs(big, args.files, int(args.mb * 1e6))
            write_logs(small, nsmall, int(args.mb * 1e6))
            print("wrote %d + %d rank logs of %.0f MB in %.0f s" % (args.files, nsmall, args.mb, time.monotonic() - t0))
        nsmall = len(os.listdir(small))
        total = sum(os.path.getsize(os.path.join(big, n)) for n in os.listdir(big))
        runs = []
        for i in range(args.runs):
            wall, cpu, rss, analysis = run_cli(big)
            culprits = (analysis.get("job") or {}).get("culprit_ranks")
            if culprits != [HUNG]:
                raise SystemExit("wrong answer on run %d: culprit ranks %r, expected [%d]" % (i, culprits, HUNG))
            runs.append((wall, cpu, rss))
            print("run %d: %.1f s wall, %.1f CPU s, peak RSS %.0f MiB" % (i + 1, wall, cpu, rss))
        wall, cpu, rss = sorted(runs)[len(runs) // 2]
        _w, _c, small_rss, _a = run_cli(small)
        print(json.dumps({"files": len(os.listdir(big)), "total_mb": round(total / 1e6),
                          "median_wall_s": round(wall, 2), "mb_per_s": round(total / 1e6 / wall, 1),
                          "cpu_s": round(cpu, 2), "mb_per_cpu_s": round(total / 1e6 / cpu, 1),
                          "peak_rss_mib": round(rss, 1),
                          "peak_rss_mib_%d_files" % nsmall: round(small_rss, 1),
                          "load_average": [round(x, 2) for x in os.getloadavg()]}, indent=1))
    finally:
        if not (args.keep or args.reuse):
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
