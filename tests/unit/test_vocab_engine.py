"""Issue 24: the engine reads every message of every emitter's vocabulary as its table says.

Each matchable row of each generated table (vocab/<emitter>.py) is printed as its emitter
prints it and given to the engine as a capture is (both line readers): a fault row must come
out as a finding of the row's category, a benign one (its table says why) as nothing at warning
or above and nothing "unexplained". Where the engine's dedicated readers read a message, they
and the table agree; where none does, the table is the reader (vocab.match_line). The same
check prints the coverage table: tests/tools/vocab/coverage.py."""

import pytest

from gpu_runbook import vocab
from tests.tools.vocab.coverage import coverage
from tests.unit.test_vocab_tables import GENERATED


@pytest.mark.parametrize("name", GENERATED)
def test_the_engine_reads_every_vocabulary_row_as_its_table_says(name):
    (row,), bad = coverage([name], failures=10)
    assert row["matchable"] > 0
    assert row["agree"] == row["matchable"], "\n".join(
        "%s:%s %s/%s: %r -> %s" % (r["file"], r["line"], r["kind"], r["category"], line[:160], said or "nothing")
        for _n, r, line, said in bad)


def test_an_unmatchable_row_is_never_matched():
    # a row without enough literal text would match any line: the coverage counts it, the reader skips it
    assert not vocab.matchable("%s: %s") and not vocab.matchable("error %d")


def test_a_benign_message_quoted_inside_an_error_does_not_explain_the_line():
    # docker quotes the container hook's stderr inside its own error: the benign row ("Auto-detected
    # mode as '%s'", nvidia-container-toolkit internal/info/auto.go) matches only the quoted tail
    alone = "Auto-detected mode as 'legacy'"
    quoted = ("docker: Error response from daemon: failed to create task for container: error running hook #0: "
              "error running hook: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'")
    m = vocab.match_line(alone)
    assert m is not None and m[1]["kind"] == vocab.BENIGN
    assert vocab.match_line(quoted) is None


def test_a_benign_message_beside_words_of_success_is_still_explained():
    # 'passed', 'successfully' around the message: the error word is part of a success report
    line = "SUCCESS: nhc: Health check passed: check_gpu_xid: GPU XID error check passed."
    m = vocab.match_line(line)
    assert m is None or m[1]["kind"] == vocab.BENIGN
    line = "[2024-05-01 10:00:00] ERROR Auto-detected mode as 'legacy'"
    assert vocab.match_line(line) is None


FM_CONFIG_ERRORS = ("[ERROR] not all local fabric manager instances finished their configuration\n"
                    "[ERROR] fabric manager error handler is called for unhandled config error type 8\n"
                    "[ERROR] failed to configure all the available GPUs or NVSwitches\n")


@pytest.mark.parametrize("line", [
    "[Feb 27 2025 15:10:02] [ERROR] [tid 12727] fabric manager error handler is called for unhandled config error type 8",
    "gpu-a-03: fabric manager config file item: FABRIC_NODE_CONFIG_FILE has an invalid value",
    "Unknown option: /usr/share/nvidia/nvswitch/fabricmanager.cfg",
    # the version check printed over two lines (stdout), its first alone
    "fabric manager NVIDIA GPU driver interface version 590.48.01 don't match with driver version 580.126.09.",
])
def test_a_fabric_manager_line_that_says_it_failed_and_no_row_lists_is_fabric_not_ready(line):
    m = vocab.match_line(line)
    assert m is not None and m[0].name == "fabricmanager"
    assert (m[1]["kind"], m[1]["category"], m[1]["severity"]) == ("fabric_not_ready", "driver", "warning")


@pytest.mark.parametrize("line", [
    # its own success words, and the unit's state in systemd's and systemctl's words (not why it failed)
    "[Feb 27 2025 15:10:02] [INFO] [tid 1808] Successfully configured all the available NVSwitches to route GPU "
    "NVLink traffic",
    "Sep 18 03:19:01 gpu01 systemd[1]: nvidia-fabricmanager.service: Control process exited, code=exited, "
    "status=1/FAILURE",
    "Job for nvidia-fabricmanager.service failed because the control process exited with error code.",
    # another program's error that merely names it
    "NCCL WARN NET/IB : Got completion from peer 10.0.0.2 with error 12, opcode 0",
])
def test_other_fabric_manager_lines_are_not_its_failures(line):
    m = vocab.match_line(line)
    assert m is None or m[1]["kind"] != "fabric_not_ready" or m[1]["file"] != vocab.FM_UNLISTED[0]


@pytest.mark.parametrize("name", ["fabricmanager.log", "notes.txt"])
def test_fabric_managers_unlisted_errors_give_a_driver_verdict_quoting_them(tmp_path, name):
    # lines with no host or time: the job-side reader reads them, through the same tables
    from gpu_runbook.cli import analyze_paths
    (tmp_path / name).write_text(FM_CONFIG_ERRORS)
    job = analyze_paths([str(tmp_path)])["job"]
    assert job["verdict"] == "driver"
    (f,) = [f for f in job["findings"] if f["kind"] == "fabric_not_ready"]
    assert (f["severity"], f["count"]) == ("warning", 2) and f["evidence"] == FM_CONFIG_ERRORS.split("\n")[0]
    assert f["source"].endswith(name + ":1")


def test_an_unlisted_fabric_manager_failure_after_a_listed_one_says_nothing_more(tmp_path):
    # NV_WARN_NOTHING_TO_DO (no NVSwitch: gpud's row, info) explains the start script's exit that follows
    from gpu_runbook.cli import analyze_paths
    (tmp_path / "kern.log").write_text(
        "Sep 18 03:19:01 gpu01 nvidia-fabricmanager-start.sh[4756]: request to query NVSwitch device information "
        "from NVSwitch driver failed with error:WARNING Nothing to do [NV_WARN_NOTHING_TO_DO]\n"
        'Sep 18 03:19:01 gpu01 nvidia-fabricmanager-start.sh[4753]: "/usr/bin/nv-fabricmanager -c '
        '/usr/share/nvidia/nvswitch/fabricmanager.cfg" failed! Exit code: 1\n')
    (h,) = analyze_paths([str(tmp_path)])["hosts"]
    assert [f["severity"] for f in h["findings"] if f["kind"] == "fabric_not_ready"] == ["info"]
    (tmp_path / "kern.log").write_text(
        'Sep 18 03:19:01 gpu01 nvidia-fabricmanager-start.sh[4753]: "/usr/bin/nv-fabricmanager -c '
        '/usr/share/nvidia/nvswitch/fabricmanager.cfg" failed! Exit code: 1\n')
    (h,) = analyze_paths([str(tmp_path)])["hosts"]
    assert [f["severity"] for f in h["findings"] if f["kind"] == "fabric_not_ready"] == ["warning"]


@pytest.mark.parametrize("line", [
    # 525.60.11 (open module) and 535.129.03: no ": " after NVRM (NV_PRINTF_PREFIX_SEPARATOR came later)
    "[    1.924873] NVRM objClInitPcieChipset: *** Chipset Setup Function Error!",
    "[   43.429059] NVRM objClInitPcieChipset: *** Unable to get PCI port handles",
    # today's prefix
    "[    1.924873] NVRM: objClInitPcieChipset: *** Chipset Setup Function Error!",
])
def test_an_older_drivers_rm_prefix_is_read_and_the_chipset_set_up_is_a_note(line):
    m = vocab.match_line(line)
    assert m is not None and m[0].name == "nvrm"
    assert (m[1]["category"], m[1]["severity"]) == ("driver", "info")


def test_an_older_drivers_rm_prefix_reads_a_fault_as_its_row_says():
    m = vocab.match_line("NVRM _threadNodeCheckTimeout: API_GPU_ATTACHED_SANITY_CHECK failed!")
    assert m is not None and m[0].name == "nvrm" and m[1]["severity"] != "ok"


@pytest.mark.parametrize("line", [
    # arch/x86/mm/fault.c show_signal_msg (x46: a framework's library crashing under a serving job)
    "[ 6437.300616] spec_infer[32508]: segfault at 7f49925c6590 ip 00007f59653e0794 sp 00007f4b710a8020 error 4 in "
    "libflexflow.so.1[7f59650c0000+8fd000]",
    # arch/x86/kernel/traps.c show_signal (pr_fmt "traps: ")
    "[ 9121.112233] traps: python[4242] general protection fault ip:7f1c2d3e4f50 sp:7ffd1a2b3c40 error:0 in "
    "libc.so.6[7f1c2d200000+195000]",
])
def test_a_user_process_crash_the_kernel_reports_is_the_programs(line):
    m = vocab.match_line(line)
    assert m is not None and m[0].name == "linux"
    assert (m[1]["category"], m[1]["severity"]) == ("application", "warning")
