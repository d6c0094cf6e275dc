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
