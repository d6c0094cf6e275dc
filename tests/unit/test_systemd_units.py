"""systemctl status: the node's services this runbook depends on (systemd's print_status_info)."""

import pytest

from gpu_runbook.cli import analyze_paths
from gpu_runbook.systemd_units import parse_systemctl


def status(unit, active, desc="NVIDIA fabric manager service", dot="\u25cf "):
    return ("%s%s - %s\n"
            "     Loaded: loaded (/lib/systemd/system/%s; enabled; preset: enabled)\n"
            "     Active: %s since Thu 2024-05-16 23:22:02 UTC; 7s ago\n"
            "   Main PID: 128549 (nv-fabricmanage)\n"
            "     CGroup: /system.slice/%s\n"
            "             \u2514\u2500128549 /usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/fabricmanager.cfg\n"
            % (dot, unit, desc, unit, active, unit))


@pytest.mark.parametrize("name", ["systemctl.txt", "notes.txt"])
def test_a_running_fabric_manager_is_a_reading_and_a_failed_one_the_drivers(tmp_path, name):
    (tmp_path / name).write_text(status("nvidia-fabricmanager.service", "active (running)"))
    (h,) = analyze_paths([str(tmp_path)], include_facts=True)["hosts"]
    assert h["verdict"] == "healthy" and h["probes"]["systemctl.txt"]["usable"]
    (tmp_path / name).write_text(status("nvidia-fabricmanager.service", "failed (Result: exit-code)", dot=""))
    (h,) = analyze_paths([str(tmp_path)])["hosts"]
    assert (h["verdict"], h["severity"]) == ("driver", "warning")
    (f,) = [f for f in h["findings"] if f["kind"] == "fabric_not_ready"]
    assert "not running: Active: failed (Result: exit-code)" in f["message"] and f["source"].endswith(name + ":3")


def test_not_installed_matters_for_fabric_manager_and_is_information_for_others():
    text = ("[root@hgx01 ~]# systemctl status nvidia-fabricmanager\n"
            "Unit nvidia-fabricmanager.service could not be found.\n"
            "Unit nvidia-dcgm.service could not be found.\n")
    facts, findings = parse_systemctl(text)
    assert [(f["kind"], f["category"], f["severity"]) for f in findings] == [
        ("fabric_not_ready", "driver", "warning"), ("logged_error", "unknown", "info")]


def test_units_this_runbook_does_not_depend_on_are_not_read():
    facts, findings = parse_systemctl(status("sshd.service", "failed (Result: exit-code)", desc="OpenSSH"))
    assert (facts, findings) == ({}, [])
    facts, findings = parse_systemctl(status("openibd.service", "inactive (dead)", desc="openibd"))
    assert [(f["category"], f["severity"]) for f in findings] == [("ib_network", "warning")]
    assert facts["units"][0]["active"] == "inactive"


@pytest.mark.parametrize("why", ["the control process exited with error code", "a timeout was exceeded", None])
def test_a_restart_whose_job_failed_is_the_service_not_started_on_the_prompts_host(tmp_path, why):
    # x45: systemctl's own words when a start/restart job fails (bus-wait-for-jobs.c), under the
    # prompt of the node it ran on; the journal after it shows an earlier, good start
    failed = "Job for nvidia-fabricmanager.service failed%s.\n" % (" because %s" % why if why else "")
    (tmp_path / "fm.txt").write_text(
        "[root@TENCENT64 ~]# systemctl restart nvidia-fabricmanager.service\n" + failed +
        "See \"systemctl status nvidia-fabricmanager.service\" and \"journalctl -xeu nvidia-fabricmanager.service\" "
        "for details.\n")
    (h,) = analyze_paths([str(tmp_path / "fm.txt")])["hosts"]
    assert (h["host"], h["verdict"], h["severity"]) == ("TENCENT64", "driver", "warning")
    (f,) = [f for f in h["findings"] if f["kind"] == "fabric_not_ready"]
    assert "failed to start" in f["message"] and (why is None or why in f["message"])
    assert f["source"] == "fm.txt:2"  # the file's own line: the prompt above it is not dropped from the count
    assert not [f for f in h["findings"] if f["kind"] == "unexplained_errors"]


def test_a_failed_job_of_a_unit_the_runbook_does_not_read_says_nothing():
    _facts, found = parse_systemctl("Job for nginx.service failed because a timeout was exceeded.\n")
    assert found == []
