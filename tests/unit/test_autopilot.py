"""IBM Autopilot's health checks: its report (one section per node), its daemon's log, its node
labels; each read by content under any file name, each check in the category of what it tests."""

import pytest

from gpu_runbook.autopilot import LABEL_RE, OPENING, host_parts, parse_autopilot
from gpu_runbook.autopilot_checks import BANNERS, CHECKS, COMMIT, KLOG, LABELS
from gpu_runbook.cli import analyze_paths
from gpu_runbook.content import plan
from gpu_runbook.findings import CATEGORIES

# the report's layout as runHealthchecks.py prints it (makeconnection / get_node_status)
REPORT = """Checking status on all nodes
Autopilot Endpoint: 10.128.6.187
Node: gpu-a-07
url(s): http://10.128.6.187:3333/status?host=gpu-a-07&check=pciebw
Response:
Checking system status of host gpu-a-07 (localhost)

[[ PCIEBW ]] Briefings completed. Continue with PCIe Bandwidth evaluation.
[[ PCIEBW ]] FAIL
Host  gpu-a-07
24.1 24.3 24.0 3.9 24.2 24.1 24.3 24.2

Node Status: PCIE Failed
-------------------------------------


Autopilot Endpoint: 10.131.4.93
Node: gpu-a-08
url(s): http://10.131.4.93:3333/status?host=gpu-a-08&check=pciebw
Response:
Checking system status of host gpu-a-08 (localhost)

[[ PCIEBW ]] Briefings completed. Continue with PCIe Bandwidth evaluation.
[[ PCIEBW ]] SUCCESS
Host  gpu-a-08
24.1 24.0 24.3 24.3 23.9 23.5 24.1 24.1

Node Status: Ok
-------------------------------------

Node Summary:

{'gpu-a-07': ['PCIE Failed'],
 'gpu-a-08': ['Ok']}

runtime: 31.845192193984985 sec
"""


def klog(msg, n=226):
    return "I0423 20:14:46.690934       9 healthchecks.go:%d] %s" % (n, msg)


def test_the_generated_checks_carry_their_provenance():
    assert len(COMMIT) == 40 and int(COMMIT, 16) >= 0
    assert all(c[2].endswith("runHealthchecks.py") and c[3] > 0 and c[4] in CATEGORIES for c in CHECKS)
    assert {b[0] for b in BANNERS} >= {"PCIEBW", "REMAPPED ROWS", "DCGM", "GPU-MEM"}
    assert {k[2] for k in KLOG} == {"completed", "failed", "not_run"}
    assert ("gpuhealth", "EVICT") in [(k, v) for k, v, _f, _l in LABELS]


def test_a_report_of_two_nodes_is_read_per_node_and_names_the_slow_gpu(tmp_path):
    (tmp_path / "output.txt").write_text(REPORT)
    hosts = dict((h["host"], h) for h in analyze_paths([str(tmp_path)])["hosts"])
    assert sorted(hosts) == ["gpu-a-07", "gpu-a-08"]  # the report's head and summary are no host
    bad, good = hosts["gpu-a-07"], hosts["gpu-a-08"]
    assert (bad["verdict"], bad["severity"], good["severity"]) == ("gpu_hardware", "critical", "ok")
    (f,) = [f for f in bad["findings"] if f.get("name") == "Autopilot"]
    assert f["gpu"] == 3 and "3.9" in f["message"] and f["source"] == "output.txt:9"  # its FAIL line


@pytest.mark.parametrize("status", [c[1] for c in CHECKS])
def test_every_node_status_autopilot_prints_is_its_checks_category(status):
    category = dict((c[1], c[4]) for c in CHECKS)[status]
    _facts, findings = parse_autopilot("Node: n1\nNode Status: %s\n" % status)
    assert [(f["category"], f["severity"]) for f in findings] == [
        (category, "critical" if category == "gpu_hardware" else "warning")]


@pytest.mark.parametrize("row", KLOG, ids=[k[0] for k in KLOG])
def test_every_log_line_of_the_daemon_that_ends_a_check_is_read(row):
    message, check, outcome, _f, line = row
    text = "\n".join([klog("Running health check: x", 58), klog(message + " some output", line),
                      klog("Observation: gpu-a-07 0 24.1")])
    facts, findings = parse_autopilot(text)
    if outcome == "completed":  # then an observation: the check's reading
        assert facts["checks"] == {check: "SUCCESS"} and findings == []
    elif outcome == "failed":
        assert facts["checks"][check] == "FAIL" and [f["category"] for f in findings] == [
            dict((c[0], c[4]) for c in CHECKS)[check]]
    else:  # could not run: says nothing of the node
        assert [(f["category"], f["kind"]) for f in findings] == [("unknown", "logged_error")]


def test_the_daemons_log_of_a_passing_check_is_a_reading_and_opens_its_block():
    text = "\n".join([klog("Running health check: pciebw", 74), klog("GPU PCIe BW test completed:", 203)]
                     + [klog("Observation: pokmvp-b93r43s1 %d 55.2" % i) for i in range(8)])
    assert set(plan(text).blocks) == {"autopilot.txt"}
    facts, findings = parse_autopilot(text)
    assert facts["checks"] == {"PCIE": "SUCCESS"} and facts["figures"]["PCIE"] == [55.2] * 8 and findings == []
    # a klog line of another program (the device plugin) opens no block of Autopilot's
    assert not OPENING.match("I0423 20:14:46.690934       1 server.go:212] Registered device plugin")


def test_a_ping_peer_unreachable_fails_the_ping_check():
    text = "\n".join([klog("Ping test completed:", 272), klog("Observation: n2 net1-0 10.0.0.2 Unreachable", 293)])
    facts, findings = parse_autopilot(text)
    assert facts["checks"] == {"PING": "FAIL"} and [f["category"] for f in findings] == ["ib_network"]


@pytest.mark.parametrize("labels,want", [
    ('Labels:  autopilot.ibm.com/dcgm.level.3=ERR_2024-11-04_09.32.03UTC_page_retirement_row_remap.0\n'
     '         autopilot.ibm.com/gpuhealth=EVICT\n', [("gpu_hardware", "critical", None), ("gpu_hardware", "critical", 0)]),
    ('    "labels": {\n        "autopilot.ibm.com/gpuhealth": "WARN",\n', [("unknown", "warning", None)]),
    ('Labels:  autopilot.ibm.com/dcgm.level.3=PASS_2024-11-04_09.32.03UTC\n'
     '         autopilot.ibm.com/gpuhealth=PASS\n', []),
])
def test_node_labels_kubectl_shows(labels, want):
    facts, findings = parse_autopilot(labels)
    assert facts["labels"] and [(f["category"], f["severity"], f["gpu"]) for f in findings] == want


def test_an_aborted_check_is_no_reading_of_the_node_and_nothing_else_is_autopilots():
    facts, findings = parse_autopilot("Node: n1\n[[ DCGM ]] DCGM process terminated with errors. Other processes "
                                      "might be running on GPUs. ABORT\nNode Status: DCGM Failed\n")
    assert [(f["category"], f["severity"]) for f in findings] == [("unknown", "warning")]
    assert parse_autopilot("") == ({}, []) and parse_autopilot("\x00garbage\nFAIL\n") == ({}, [])
    assert host_parts("no node here\n") == [(None, "no node here\n")]
    assert not LABEL_RE.match("app.kubernetes.io/name=autopilot")
    # what follows the report and is not Autopilot's stays for the line readers
    rest = plan(REPORT + "Host key verification failed.\nFAILED: gpu-a-09 unreachable\n"
                "E0423 20:15:00.000001       1 server.go:212] Could not register device plugin\n").rest
    assert all(w in rest for w in ("Host key verification failed.", "FAILED: gpu-a-09", "server.go:212"))
