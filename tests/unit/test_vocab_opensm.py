"""OpenSM's own log (libopensm/osm_log.c's layout): the subnet manager's node lines, read with its
vocabulary (vocab/opensm.py, from linux-rdma/opensm): its errors are the fabric's, its state reports
are no fault."""

import pytest

from gpu_runbook.cli import analyze_paths
from gpu_runbook.linefamily import line_family
from gpu_runbook.vocab import opensm

ERRS = ("Mar 10 22:12:26 170831 [838BB700] 0x01 -> log_send_error: ERR 5411: DR SMP Send completed with error "
        "(IB_TIMEOUT) -- dropping\n"
        "Mar 10 22:12:26 176490 [838BB700] 0x01 -> sm_mad_ctrl_send_err_cb: ERR 3113: MAD completed in error "
        "(IB_TIMEOUT): SubnGet(SMInfo), attr_mod 0x0, TID 0x295d\n")
STATE = "Mar 10 06:06:06 480296 [848BD700] 0x80 -> Entering STANDBY state\n"


def test_the_table_is_opensms_own_and_pinned():
    assert opensm.VERSION == "3.3.24" and len(opensm.COMMIT) == 40
    assert all(r[0].startswith(("opensm/", "libopensm/", "libvendor/", "complib/")) for r in opensm.ROWS)


@pytest.mark.parametrize("line", ERRS.splitlines() + [STATE.strip(), "[22:12:26:170][838BB700] 0x01 -> x"])
def test_its_log_lines_are_the_nodes(line):
    assert line_family(line) == "node"


def test_its_errors_are_the_fabrics_and_its_state_is_no_fault(tmp_path):
    (tmp_path / "opensm.log").write_text(STATE + ERRS)
    (h,) = analyze_paths([str(tmp_path)])["hosts"]
    assert (h["verdict"], h["severity"]) == ("ib_network", "warning")
    assert {f["name"] for f in h["findings"] if f["severity"] == "warning"} == {"OpenSM"}
    (tmp_path / "opensm.log").write_text(STATE)
    (h,) = analyze_paths([str(tmp_path)])["hosts"]
    assert not [f for f in h["findings"] if f["severity"] in ("warning", "critical")]


CONSOLE = ("-------------------------------------------------\nOpenSM 5.25.1.MLNX20251030.e3791a47\n"
           "Command Line Arguments:\n Log File: /var/log/opensm.log\n"
           "-------------------------------------------------\nOpenSM 5.25.1.MLNX20251030.e3791a47\n\n"
           "Entering DISCOVERING state\n\n\n")
BIND = "Error from osm_opensm_bind (0x2A)\nPerhaps another instance of OpenSM is already running\nExiting SM\n"


def test_its_console_at_start_up_is_read_from_main_c():
    # x43-01: OpenSM run in the foreground on a DPU, its port already bound by another instance
    rows = {r[2]: r for r in opensm.ROWS if r[0] == "opensm/main.c"}
    assert rows["Error from osm_opensm_bind (0x%X)"][4] == "ib_network"
    assert rows["Command Line Arguments:"][3] == "benign"
    assert rows["OpenSM: Got signal %d - exiting..."][3] == "benign"  # told to stop: no failure


def test_a_console_that_could_not_bind_is_the_fabrics_and_a_clean_start_is_no_fault(tmp_path):
    (tmp_path / "opensm.txt").write_text(CONSOLE + BIND)
    doc = analyze_paths([str(tmp_path / "opensm.txt")])
    found = [f for h in doc["hosts"] for f in h["findings"]] + (doc["job"] or {}).get("findings", [])
    assert "unexplained_errors" not in [f["kind"] for f in found]
    assert any(f["category"] == "ib_network" and "could not start" in f["message"] for f in found)
    (tmp_path / "opensm.txt").write_text(CONSOLE)
    doc = analyze_paths([str(tmp_path / "opensm.txt")])
    found = [f for h in doc["hosts"] for f in h["findings"]] + (doc["job"] or {}).get("findings", [])
    assert not [f for f in found if f["severity"] in ("warning", "critical")]
