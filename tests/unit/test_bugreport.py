"""nvidia-bug-report.log splitter: section markers of nvidia-bug-report.sh (see
tests/fixtures/bugreport/README.md for where the layout comes from)."""

import os

import pytest

from gpu_runbook import infiniband as ib
from gpu_runbook.bugreport import split_bug_report

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(os.path.dirname(HERE), "fixtures", "bugreport")
IBFIX = os.path.join(os.path.dirname(HERE), "fixtures", "ib")
SEP = "____________________________________________"


def read(case):
    with open(os.path.join(FIX, case, "nvidia-bug-report.log")) as fh:
        return fh.read()


def test_current_layout_sections():
    parts = split_bug_report(read("synthetic-2025-h100-ib"))
    assert sorted(parts) == ["ibstat.txt", "kern.log", "nvidia-smi-q.txt"]

    q = parts["nvidia-smi-q.txt"]
    assert q.startswith("==============NVSMI LOG==============")
    assert "Attached GPUs                             : 8" in q
    assert q.count("NVSMI LOG") == 1                       # not the --query --unit run
    assert "Attached Units" not in q and "Link 0: Replay Errors" not in q
    assert SEP not in q and "/usr/bin/nvidia-smi" not in q
    assert len(q.splitlines()) == 1652                     # the whole -q output (capture 005)

    k = parts["kern.log"]
    assert k.splitlines()[0].startswith("[    0.000000] Linux version")
    assert "[16423.001122] NVRM: Xid (PCI:0000:53:00): 79" in k
    assert "Scanning kernel" not in k and "xset" not in k and "gcc version" not in k
    assert len(k.splitlines()) == 5                        # dmesg only, not the grep'd copies too

    s = parts["ibstat.txt"]
    assert s.startswith("CA 'mlx5_0'") and s.rstrip().endswith("No such file or directory")
    assert "Running InfiniBand" not in s and "iblinkinfo" not in s and "CA: gpu-r3-n05" not in s
    facts, findings = ib.parse_ibstat(s, source="ibstat.txt")
    assert len(facts["ports"]) == 8
    assert [(f["kind"], f["ib"]["device"]) for f in findings if f["severity"] == "critical"] == \
        [("ib_device_missing", "mlx5_8")]


def test_ibstat_section_equals_the_capture_it_came_from():
    parts = split_bug_report(read("synthetic-2025-h100-ib"))
    with open(os.path.join(IBFIX, "014-gpud-ibstat-a100-ibpanic-mlx5_8-missing", "ibstat.txt")) as fh:
        assert parts["ibstat.txt"].rstrip("\n") == fh.read().rstrip("\n")


def test_legacy_layout_kernel_lines_from_current_boot_journal():
    parts = split_bug_report(read("synthetic-legacy-390-journal-only"))
    assert sorted(parts) == ["kern.log", "nvidia-smi-q.txt"]
    k = parts["kern.log"].splitlines()
    assert len(k) == 2
    assert k[1] == ("Jun 21 01:58:40 gpu-r3-n05 kernel: NVRM: Xid (PCI:0000:53:00): 79, pid=12345, "
                    "name=python, GPU has fallen off the bus.")
    assert not any("[16423" in ln for ln in k)             # not the /var/log/messages copy


def test_safe_mode_has_no_smi_and_no_ib():
    parts = split_bug_report(read("synthetic-safe-mode"))
    assert sorted(parts) == ["kern.log"]


def test_crlf_ansi_and_bytes():
    text = read("synthetic-2025-h100-ib")
    base = split_bug_report(text)
    crlf = split_bug_report(text.replace("\n", "\r\n"))
    assert crlf == base
    assert all("\r" not in v for v in crlf.values())
    assert split_bug_report(text.encode("utf-8")) == base
    colored = text.replace("dmesg:\n", "\x1b[1mdmesg:\x1b[0m\n")
    assert split_bug_report(colored)["kern.log"] == base["kern.log"]


def test_journalctl_k_section_and_ibv_devinfo_section():
    text = "\n".join([
        SEP, "", "journalctl -b -0 -k", "",
        "Jun 21 01:58:40 n1 kernel: mlx5_core 0000:18:00.0: mlx5_fw_fatal_reporter_err_work:703:(pid 7): "
        "Driver is in error state. Unloading", "",
        SEP, "", "/usr/bin/ibv_devinfo -v", "",
        "hca_id:\tmlx5_0", "\ttransport:\t\t\tInfiniBand (0)", "\t\tport:\t1",
        "\t\t\tstate:\t\t\tPORT_ACTIVE (4)", "",
        SEP, "", "End of NVIDIA bug report log file.", ""])
    parts = split_bug_report(text)
    assert sorted(parts) == ["ibv_devinfo.txt", "kern.log"]
    assert parts["kern.log"].startswith("Jun 21 01:58:40 n1 kernel: mlx5_core")
    facts, _ = ib.parse_ibv_devinfo(parts["ibv_devinfo.txt"])
    assert [(p["device"], p["state"]) for p in facts["ports"]] == [("mlx5_0", "Active")]


def test_excerpt_without_command_header_still_finds_nvsmi_log():
    text = "\n".join([SEP, "", "==============NVSMI LOG==============", "",
                      "Attached GPUs                             : 1", "GPU 00000000:3B:00.0",
                      "    Product Name                          : NVIDIA A100-SXM4-80GB", "",
                      SEP, "", "End of NVIDIA bug report log file.", ""])
    parts = split_bug_report(text)
    assert list(parts) == ["nvidia-smi-q.txt"]
    assert parts["nvidia-smi-q.txt"].startswith("==============NVSMI LOG==============")
    assert "A100" in parts["nvidia-smi-q.txt"] and "End of NVIDIA" not in parts["nvidia-smi-q.txt"]


def test_truncated_report_keeps_what_is_there():
    text = read("synthetic-2025-h100-ib")
    cut = text[:text.index("/usr/bin/nvidia-smi --query\n") + 2000]
    parts = split_bug_report(cut)
    assert "kern.log" in parts and "ibstat.txt" not in parts
    assert parts["nvidia-smi-q.txt"].startswith("==============NVSMI LOG==============")


@pytest.mark.parametrize("junk", [None, "", "\n\n\n", 42, b"\x1f\x8b\x08\x00 gzip bytes \xff",
                                  "random words\nno sections at all\n", SEP + "\n" * 3 + SEP])
def test_garbage_gives_empty_dict(junk):
    assert split_bug_report(junk) == {}


def test_grepped_log_under_a_host_root_prefix():
    text = "\n".join([
        SEP, "", "Scanning kernel log files for NVIDIA kernel messages:", "",
        "  /.bottlerocket/rootfs/var/log/kern.log:",
        "Jun 21 01:58:40 n1 kernel: NVRM: Xid (PCI:0000:3b:00): 48, pid=1, name=x, An uncorrectable double bit error",
        "", "No NVIDIA kernel messages found in recent systemd journal entries.", "",
        SEP, "", "dmesg:", "", SEP, "", "End of NVIDIA bug report log file.", ""])
    parts = split_bug_report(text)
    assert list(parts) == ["kern.log"]
    assert parts["kern.log"].startswith("Jun 21 01:58:40 n1 kernel: NVRM: Xid (PCI:0000:3b:00): 48")
    assert "No NVIDIA kernel messages" not in parts["kern.log"]
