"""A mistaken setting is not a sick fleet: bad settings stop diagnose.yml before any host is
gathered, with one clear message, no report and nobody listed for remediation."""

import os

import pytest

from tests.conftest import REPO, run_playbook


GATHER = "TASK [gpu_health : Gather GPU, kernel-log and InfiniBand health]"
REPORT = "TASK [diagnosis_report : Build the cluster view"
STOP = "TASK [gpu_health : Stop unless every host's gather was read]"


def _section(stdout, header):
    """The output of one task: from its header to the next header or the recap."""
    start = stdout.index(header)
    ends = [i for i in (stdout.find("\nTASK [", start + 1), stdout.find("\nPLAY RECAP", start + 1)) if i > 0]
    return stdout[start:min(ends)]


@pytest.mark.parametrize("extra,needle,stops_at", [
    # ranges and the capture directory: the gather module refuses them before any probe runs
    (["-e", "gpu_health_probe_timeout=0"], "probe_timeout must be 1-3600 seconds (got 0)", "gather"),
    (["-e", "gpu_health_probe_timeout=3601"], "probe_timeout must be 1-3600 seconds (got 3601)", "gather"),
    (["-e", "gpu_health_expected_gpus=-1"], "expected_gpus must not be negative (got -1)", "gather"),
    (["-e", "gpu_health_capture_dir=/nonexistent/captures"], "/nonexistent/captures is not a directory", "gather"),
    # types: the role's argument spec, on every host, before the gather
    (["-e", "gpu_health_probe_timeout=soon"], "gpu_health_probe_timeout", "gpu_health spec"),
    # the job lookup's settings: checked once, before Slurm is asked
    (["-e", "job_context_slurm_timeout=abc"], "job_context_slurm_timeout", "job spec"),
    # the report role's settings: checked once, after the (read-only) gather, before anything is
    # aggregated, reported or handed to a workflow
    (["-e", "report_lang=fr"], "diagnosis_report_lang", "report spec"),
])
def test_bad_settings_fail_the_play_before_anything_runs(tmp_path, extra, needle, stops_at):
    proc = run_playbook(["playbooks/diagnose.yml", "-i", "inventory-examples/demo", "-l", "gpu-rack3",
                         "-e", "diagnosis_report_dir=%s" % (tmp_path / "report")] + extra)
    assert proc.returncode != 0
    assert needle in proc.stdout, proc.stdout[-3000:]
    if stops_at == "gather":
        # every host refused the setting; none gathered anything
        gather = _section(proc.stdout, GATHER)
        assert gather.count("fatal: [") == 8 and needle in gather, gather[-3000:]
        assert "ok: [" not in gather
    else:
        assert (GATHER in proc.stdout) == (stops_at == "report spec")
    if stops_at == "job spec":
        assert "TASK [job_context : Keep only the job's nodes" not in proc.stdout
    assert REPORT not in proc.stdout
    assert not (tmp_path / "report").exists()  # no report that lists 8 'sick' hosts
    assert "remediate" not in proc.stdout



@pytest.mark.parametrize("bad,where", [
    ("gpu_health_expected_gpus=-8", "gather"),   # a value the gather module refuses
    ("gpu_health_probe_timeout=soon", "spec"),   # a type the role's argument check refuses
])
def test_one_host_refusing_its_setting_stops_the_whole_play(tmp_path, bad, where):
    # a host_vars mistake on one node: the others gathered, yet nothing is reported, since a
    # report without that host would call the rack healthy without having read it
    inv = tmp_path / "hosts.ini"
    inv.write_text(
        "[gpu_nodes]\n"
        "gpu-r3-n01 gpu_health_capture_dir=%(cap)s/gpu-r3-n01\n"
        "gpu-r3-n02 gpu_health_capture_dir=%(cap)s/gpu-r3-n02 %(bad)s\n"
        "gpu-r3-n03 gpu_health_capture_dir=%(cap)s/gpu-r3-n03\n"
        "[gpu_nodes:vars]\nansible_connection=local\n"
        "ansible_python_interpreter={{ ansible_playbook_python }}\n"
        % {"cap": os.path.join(REPO, "inventory-examples", "demo-captures", "nodes"), "bad": bad})
    proc = run_playbook(["playbooks/diagnose.yml", "-i", str(inv),
                         "-e", "diagnosis_report_dir=%s" % (tmp_path / "report")])
    assert proc.returncode != 0
    gather = _section(proc.stdout, GATHER)
    assert gather.count("fatal: [") == (1 if where == "gather" else 0), gather
    assert "fatal: [gpu-r3-n02]" in (gather if where == "gather" else proc.stdout.split(GATHER)[0])
    assert gather.count("ok: [") == 2
    stop = _section(proc.stdout, STOP)
    assert "gpu-r3-n02 left the play before its gather was read" in stop, stop
    assert REPORT not in proc.stdout
    assert not (tmp_path / "report").exists()
