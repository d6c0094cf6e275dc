"""What the fuzzer found, kept as plain tests: each input crashed a parser or cost it
gigabytes / tens of seconds before the fix."""

import time
import tracemalloc

from gpu_runbook import slurm
from gpu_runbook.infiniband.reload import parse_module_table
from gpu_runbook.kernlog.hosts import expand_nodeset
from tests.unit.scaling import assert_linear


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


# --- found by the full profile (make fuzz) of the nvidia-smi parsers

def test_blank_lines_do_not_make_format_detection_quadratic():
    # `^\s+(ECC Errors|...)\s*$` with re.M: at every line start \s+ ran across all the blank lines
    # after it; 68 KB of mostly empty lines took 20 s (70 s on a loaded machine)
    from gpu_runbook.nvsmi import detect_format, parse_nvidia_smi_failure
    def blanks(n):
        return "\n" * n + "  \n" * n + "x"
    assert_linear(lambda t: (parse_nvidia_smi_failure(t, 6), detect_format(t)), blanks, 2500, factor=8,
                  label="blank lines")
    text = blanks(20000)
    facts, findings = parse_nvidia_smi_failure(text, 6)
    assert detect_format(text) is None
    assert any(f["kind"] == "nvidia_smi_failed" for f in findings), findings
    # the real formats are still told apart
    assert detect_format("\n\n    ECC Errors\n") == "q" and detect_format("GPU 0: A (UUID: GPU-1)\n") == "table"


def test_a_spaced_nvlink_line_is_read_in_linear_time():
    # `GPU N: (.*?)\s*(\(UUID: ...\))?\s*$` backtracked over every blank run: 21 s on 23 KB
    from gpu_runbook.nvsmi.dispatch import parse_nvidia_smi_table
    def spaced(n):
        line = "GPU 0: " + "a " * (n // 8) + " " * n + "b"
        return "+-----+\n| NVIDIA-SMI 550.90.07   Driver Version: 550.90.07 |\n" + line + "\n  Link 0: " + " " * n + "x\n"
    assert_linear(parse_nvidia_smi_table, spaced, 2500, factor=8, label="spaced nvlink line")
    ok = parse_nvidia_smi_table("GPU 3: NVIDIA H100 80GB HBM3 (UUID: GPU-abc-123)\n\t Link 0: <inactive>\n")[0]
    gpu = ok["gpus"][0]
    assert (gpu["name"], gpu["uuid"], gpu["nvlink_inactive"]) == ("NVIDIA H100 80GB HBM3", "GPU-abc-123", [0])


def test_deeply_nested_xml_is_walked_without_recursion():
    # <a> nested 2000 deep inside <gpu> ended in RecursionError in _xml_errors
    from gpu_runbook.nvsmi.q_xml import parse_xml
    def nested(n):
        return ('<?xml version="1.0"?><nvidia_smi_log><gpu id="00000000:19:00.0">' + "<a>" * n +
                "<b>Unknown Error</b>" + "</a>" * n + "</gpu></nvidia_smi_log>")
    # linear in the depth (timed as a ratio of two depths, not by the clock: ~0.6 s at 50,000 alone)
    assert_linear(lambda x: parse_xml(x, "q.xml", 8, None), nested, 6250, factor=8, label="nested XML")
    facts, findings = parse_xml(nested(50000), "q.xml", 8, None)
    err = [f for f in findings if "Unknown Error" in (f.get("evidence") or "") + f.get("message", "")]
    assert err and "a/a/b" in err[0]["message"] + (err[0].get("evidence") or ""), findings[:3]
