"""An Xid another program's line names (a site health check, an agent, a node's drain note),
read by NVIDIA's catalog as a record of the fault: its category, a warning, the code kept."""

import pytest

from gpu_runbook.joblog import parse_job_logs
from gpu_runbook.kernlog import nodelines
from gpu_runbook.vocab import xid_named


@pytest.mark.parametrize("line,xid,category", [
    ("Found XID errors: 63", 63, "gpu_hardware"),
    ('time="2024-03-01T10:00:00Z" level=warning msg="XID event occurred" xid=48 device=GPU-5a1f', 48,
     "gpu_hardware"),
    ("GPU 3 has XID 79 errors, draining", 79, "gpu_hardware"),
    ("user job hit Xid 13 on GPU 2", 13, "application"),
])
def test_a_named_xid_is_its_catalog_category_as_a_warning(line, xid, category):
    _tbl, row = xid_named(line)
    assert (row["xid"], row["category"], row["severity"]) == (xid, category, "warning")
    _facts, found = parse_job_logs({"health.log": line + "\n"})
    assert [(f["xid"], f["category"]) for f in found if f.get("xid")] == [(xid, category)]


@pytest.mark.parametrize("line", [
    "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.",  # the kernel reader's
    "ERROR:  nhc:  Health check failed:  Check check_xid_errors returned 1",  # a check's name, no code
    "Found XID errors: 999",  # not a code of NVIDIA's catalog
    "xidian university dataset loaded",
])
def test_other_lines_name_no_xid(line):
    assert xid_named(line) is None


def test_the_nodes_reader_reads_it_too():
    found = nodelines.read("Mar  1 10:00:00 gpu-a-07 gpu-health[812]: Found XID errors: 94", False)
    assert found != "unexplained" and found[1]["xid"] == 94 and found[1]["category"] == "gpu_hardware"


def test_a_benign_code_of_the_catalog_is_no_fault_when_a_line_names_it():
    # Xid 106 (SMBPBI's test message): the catalog calls it benign; the row says so and the reader keeps nothing
    _tbl, row = xid_named("Found XID errors: 106")
    assert (row["xid"], row["kind"], row["category"]) == (106, "benign", "healthy")
    _facts, found = parse_job_logs({"health.log": "Found XID errors: 106\n"})
    assert [f["kind"] for f in found if f["kind"] != "job_end_unknown"] == []
