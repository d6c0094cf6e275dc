"""What the fuzzer found, kept as plain tests: each input crashed a parser or cost it
gigabytes / tens of seconds before the fix."""

import time
import tracemalloc

from gpu_runbook import slurm
from gpu_runbook.infiniband.reload import parse_module_table
from gpu_runbook.kernlog.hosts import expand_nodeset


def _timed(func, *args):
    start = time.monotonic()
    out = func(*args)
    return out, time.monotonic() - start


def test_node_set_product_stops_at_its_limit():
    # two ranges of 4096 built 16M names (about a gigabyte) before the cut to 4096
    tracemalloc.start()
    try:
        names = expand_nodeset("n[1-4096]x[1-4096]")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(names) == 4096 and names[:2] == ["n1x1", "n1x2"]
    assert peak < 16 << 20


def test_node_set_numbers_that_int_refuses_are_names():
    # '²'.isdigit() is true but int('²') raises; 5000 digits exceed int()'s limit
    assert expand_nodeset("n[1-\u00b2]") == ["n1-\u00b2"]
    assert expand_nodeset("n[1-%s]" % ("9" * 5000)) == []  # a 5 KB part is no node set
    assert expand_nodeset("n[1-%s]" % ("9" * 40)) == ["n1-" + "9" * 40]


def test_node_set_of_a_megabyte_line_is_not_copied_4096_times():
    names, took = _timed(expand_nodeset, "x" * (1 << 20) + "[1-4096]")
    assert names == [] and took < 5


def test_slurm_hostlist_is_bounded():
    # NodeList=n[1-99999999] expanded to 100M names; two ranges of 3000 to 9M (20 s)
    names, took = _timed(slurm.expand_hostlist, "n[1-99999999]")
    assert len(names) == slurm.MAX_NODES and names[-1] == "n%d" % slurm.MAX_NODES and took < 5
    names, took = _timed(slurm.expand_hostlist, "n[1-3000]m[1-3000]")
    assert len(names) == slurm.MAX_NODES and names[:2] == ["n1m1", "n1m2"] and took < 5
    assert slurm.expand_hostlist("r[1-2]n[01-02],ctl") == ["r1n01", "r1n02", "r2n01", "r2n02", "ctl"]


def test_slurm_hostlist_that_int_refuses_is_kept_verbatim():
    big = "n[1-%s]" % ("9" * 5000)
    assert slurm.expand_hostlist(big) == [big]
    deep = "n" + "[1]" * 2000  # was one recursion level per bracket
    assert slurm.expand_hostlist(deep) == [deep]


def test_superscript_digits_are_not_counts():
    assert parse_module_table("nvidia 56287232 \u00b2 - Live 0x0\n")["nvidia"]["refs"] is None
    node = slurm.parse_scontrol_show_node("NodeName=n1 CPUAlloc=\u00b2 CPUTot=64 State=IDLE\n")
    assert node["cpu_alloc"] is None
    job = slurm.parse_scontrol_show_job("JobId=1 JobName=x NodeList=n[1-2] NumNodes=\u00b2 JobState=FAILED\n")
    assert job["num_nodes"] == 2
