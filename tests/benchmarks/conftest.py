# Benchmarks are scripts run by hand (python tests/benchmarks/bench_kernlog.py), never collected.
collect_ignore_glob = ["*.py"]
