"""apt's history.log and dpkg.log (pkglog.py): when the NVIDIA driver's packages changed, and by
what command, read by content under any name."""

import pytest

from gpu_runbook.cli import analyze_paths
from gpu_runbook.pkglog import parse_pkglog

# apt-pkg/deb/dpkgpm.cc: '\nStart-Date: %F  %T', the tags, 'End-Date:' (lyulyul/shine-cluster#50, held-out x40-A02)
UNATTENDED = ("Start-Date: 2021-06-04  06:41:09\nCommandline: /usr/bin/unattended-upgrade\n"
              "Upgrade: libnvidia-common-460:amd64 (460.73.01-0ubuntu0.20.04.1, 460.80-0ubuntu0.20.04.2)\n"
              "End-Date: 2021-06-04  06:41:09\n")
OTHERS = ("\nStart-Date: 2021-06-03  10:00:00\nCommandline: apt-get install -y htop\nRequested-By: alice (1000)\n"
          "Install: htop:amd64 (3.0.5-1), libnl-3-200:amd64 (3.5.0-0.1, automatic)\n"
          "Upgrade: libnvidia-container1:amd64 (1.13.5-1, 1.14.0-1), nvidia-container-toolkit:amd64 (1.13.5-1, 1.14.0-1)\n"
          "End-Date: 2021-06-03  10:00:05\n")
# lib/dpkg/log.c + src/main/help.c log_action: '%Y-%m-%d %H:%M:%S ACTION PKG OLD NEW'
DPKG = ("2024-01-15 06:25:01 startup archives unpack\n"
        "2024-01-15 06:25:02 upgrade libnvidia-compute-535:amd64 535.129.03-0ubuntu0.22.04.1 535.146.02-0ubuntu0.22.04.1\n"
        "2024-01-15 06:25:02 status half-configured libnvidia-compute-535:amd64 535.129.03-0ubuntu0.22.04.1\n"
        "2024-01-15 06:25:03 remove nvidia-fabricmanager-535:amd64 535.129.03-1 <none>\n"
        "2024-01-15 06:25:04 upgrade tzdata:all 2023c-0ubuntu0.22.04.2 2023d-0ubuntu0.22.04\n")


def test_an_unattended_upgrade_of_the_drivers_libraries_is_a_driver_warning_naming_when_and_who():
    facts, (f,) = parse_pkglog(OTHERS + "\n" + UNATTENDED)
    assert (f["kind"], f["category"], f["severity"]) == ("driver_packages_changed", "driver", "warning")
    assert "2021-06-04 06:41:09 (local time) by /usr/bin/unattended-upgrade" in f["message"]
    assert "libnvidia-common-460 upgraded 460.73.01-0ubuntu0.20.04.1 -> 460.80-0ubuntu0.20.04.2" in f["message"]
    assert f["source"] == "apt-history.log:11" and f["evidence"].startswith("Upgrade: libnvidia-common-460")
    # the container toolkit is not the driver: the other run changed nothing of it
    assert facts["runs"] == 2 and [c["package"] for c in facts["driver_changes"]] == ["libnvidia-common-460"]


def test_dpkg_log_lines_count_each_change_and_removals_too():
    facts, (f,) = parse_pkglog(DPKG, source="dpkg.log")
    assert [(c["op"], c["package"]) for c in facts["driver_changes"]] == [
        ("upgraded", "libnvidia-compute-535"), ("removed", "nvidia-fabricmanager-535")]
    assert f["count"] == 2 and "nvidia-fabricmanager-535 removed 535.129.03-1" in f["message"]


def test_a_log_with_no_driver_change_is_a_reading_without_a_finding_and_other_text_is_none():
    facts, findings = parse_pkglog(OTHERS)
    assert findings == [] and facts == {"runs": 1, "driver_changes": []}
    assert parse_pkglog("Upgrade: nvidia-driver-535 (1, 2)\n") == ({}, [])  # no run opened it
    assert parse_pkglog("") == ({}, [])


def test_a_grep_of_dpkg_log_under_its_prompt_is_read():
    # the prompt stands first: the runs are counted line by line, not only from the text's first line
    facts, (f,) = parse_pkglog("$ grep nvidia /var/log/dpkg.log\n" + DPKG.splitlines()[1] + "\n", source="notes.txt")
    assert facts["runs"] == 1 and f["source"] == "notes.txt:2" and f["count"] == 1
    assert parse_pkglog(DPKG)[0]["runs"] == 1  # one 'startup' line: one run


def test_apt_error_is_said():
    text = UNATTENDED.replace("End-Date", "Error: Sub-process /usr/bin/dpkg returned an error code (1)\nEnd-Date")
    _, (f,) = parse_pkglog(text)
    assert "apt reported an error (Error: Sub-process /usr/bin/dpkg returned an error code (1))" in f["message"]


@pytest.mark.parametrize("name", ["history.log", "notes.txt", "dpkg.log"])
def test_read_by_content_under_any_name(tmp_path, name):
    (tmp_path / name).write_text(UNATTENDED if name != "dpkg.log" else DPKG)
    (h,) = analyze_paths([str(tmp_path)])["hosts"]
    assert (h["verdict"], h["severity"]) == ("driver", "warning")
    # the change is the driver's warning; the GPUs' health itself was not read
    assert [f["kind"] for f in h["findings"]] == ["driver_packages_changed", "no_evidence"]


# kernel-open/nvidia/nv-procfs.c nv_procfs_read_version: 'NVRM version: %s' (pNVRM_ID), 'GCC version:  %s'
# (the first line as x41-24's fleet sweep printed it; the GCC line as the same function prints it)
PROC_VERSION = ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.126.09  Release Build  "
                "(dvs-builder@U22-I3-AE18-09-3)  Wed Jan  7 22:59:56 UTC 2026\n"
                "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n")
UPGRADE_580 = ("Start-Date: 2026-02-10  06:52:11\nCommandline: /usr/bin/unattended-upgrade\n"
               "Upgrade: libnvidia-compute-580-server:amd64 (580.126.09-0ubuntu0.22.04.1, 580.159.03-0ubuntu0.22.04.1)\n"
               "End-Date: 2026-02-10  06:53:40\n")


def test_the_loaded_module_is_a_fact_and_a_package_change_to_another_release_names_it():
    facts, findings = parse_pkglog(PROC_VERSION, source="version.txt")
    assert findings == [] and facts["loaded_module"] == {"version": "580.126.09", "open": True}
    facts, (f,) = parse_pkglog(UPGRADE_580 + "\n" + PROC_VERSION)
    assert "the loaded kernel module is 580.126.09 (apt-history.log:6), not 580.159.03" in f["message"]
    # the same release loaded as installed: nothing more to say
    same = PROC_VERSION.replace("580.126.09", "580.159.03")
    assert "loaded kernel module is" not in parse_pkglog(UPGRADE_580 + same)[1][0]["message"]
    # the proprietary module's spelling (x86_64 before 'Kernel Module'), and the kernel's load banner is not it
    prop = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n"
    assert parse_pkglog(prop)[0]["loaded_module"] == {"version": "535.104.05", "open": False}
    assert parse_pkglog("NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.104.05\n") == ({}, [])


@pytest.mark.parametrize("text", [OTHERS, PROC_VERSION])
def test_a_package_log_or_the_loaded_version_alone_never_makes_a_host_healthy(tmp_path, text):
    # which driver is installed or loaded says nothing of how the GPUs are
    (tmp_path / "notes.txt").write_text(text)
    (h,) = analyze_paths([str(tmp_path)])["hosts"]
    assert h["verdict"] == "unknown" and [f["kind"] for f in h["findings"]] == ["no_evidence"]
