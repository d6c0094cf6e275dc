"""A child that keeps a tool's stdout open after the tool exited (a daemon nvidia-smi spawned)
is not the tool hanging: only the probe's own exit counts. What it printed is its answer, the
lingering child is killed with the tool's process group, and a tool that really does not exit
is still a hang within the deadline."""

import os
import shutil
import time

from gpu_runbook import probes
from gpu_runbook.probe_findings import probe_error_findings
from gpu_runbook.sources import detect_source
from tests.conftest import FIXTURES, SLEEP, still_running, write_tool

XML = os.path.join(FIXTURES, "nvsmi", "xml-telegraf-a10g", "nvidia-smi-q.xml")
CAT = shutil.which("cat")  # absolute: only the stand-ins are on PATH
DEADLINE = 20  # generous: 2 shared cores; the answer must come long before it


def _spawning_tool(bindir, pids):
    """nvidia-smi that starts a daemon holding its stdout, prints a valid report and exits 0."""
    write_tool(bindir, "nvidia-smi", """\
        %s 60 &
        echo $! > %s
        %s %s
        exit 0
        """ % (SLEEP, pids, CAT, XML))


def test_a_daemon_holding_stdout_is_not_an_nvidia_smi_hang(tmp_path, monkeypatch):
    pids = tmp_path / "pids"
    _spawning_tool(tmp_path, pids)
    monkeypatch.setenv("PATH", str(tmp_path))
    t0 = time.monotonic()
    out = probes.probe_nvidia_smi(DEADLINE)
    took = time.monotonic() - t0
    assert isinstance(out, str), "reported as %r" % (out,)
    assert detect_source(out) == "nvidia-smi-q.xml" and out.rstrip().endswith("</nvidia_smi_log>")
    assert took < 8, "took %.1fs: waited for the daemon instead of nvidia-smi's exit" % took
    assert not still_running([int(pids.read_text())]), "the lingering child outlived the probe"


def test_collect_reports_no_hang_for_a_daemon_holding_stdout(tmp_path, monkeypatch):
    _spawning_tool(tmp_path, tmp_path / "pids")
    monkeypatch.setenv("PATH", str(tmp_path))
    sources, timings = probes.collect(probes=["nvidia_smi"], timeout=DEADLINE)
    answer = sources["nvidia-smi-q.xml"]
    assert isinstance(answer, str) and "<nvidia_smi_log>" in answer, answer
    assert timings["nvidia_smi"] < 8


def test_run_argv_returns_what_a_tool_printed_before_its_child_kept_the_pipe(tmp_path):
    # the same for Slurm's clients (slurm_node, gpu_runbook_job run them through run_argv)
    pids = tmp_path / "pids"
    write_tool(tmp_path, "scontrol", "%s 60 &\necho $! > %s\necho NodeName=n1 State=IDLE\nexit 3\n" % (SLEEP, pids))
    t0 = time.monotonic()
    rc, out, _err = probes.run_argv([str(tmp_path / "scontrol")], DEADLINE)
    assert (rc, out) == (3, "NodeName=n1 State=IDLE\n")
    assert time.monotonic() - t0 < 8
    assert not still_running([int(pids.read_text())])


def test_a_tool_that_never_exits_is_still_a_hang_within_the_deadline(tmp_path, monkeypatch):
    write_tool(tmp_path, "nvidia-smi", "echo '<?xml version=\"1.0\" ?>'\nexec %s 60\n" % SLEEP)
    monkeypatch.setenv("PATH", str(tmp_path))
    t0 = time.monotonic()
    err = probes.probe_nvidia_smi(5)
    assert isinstance(err, dict) and err["kind"] == "timeout", err
    assert 4.5 <= time.monotonic() - t0 < 5 + 5
    kinds = [f["kind"] for f in probe_error_findings("nvidia-smi-q.xml", err)]
    assert kinds == ["nvidia_smi_hang"]
