"""A mistaken setting is not a sick fleet: bad settings stop diagnose.yml before any host is
gathered, with one clear message, no report and nobody listed for remediation."""

import pytest

from tests.conftest import run_playbook


@pytest.mark.parametrize("extra,needle,gathers", [
    (["-e", "gpu_health_probe_timeout=0"], "gpu_health_probe_timeout must be 1-3600 seconds (got 0)", False),
    (["-e", "gpu_health_capture_dir=/nonexistent/captures"], "/nonexistent/captures is not a directory", False),
    (["-e", "gpu_health_probe_timeout=soon"], "gpu_health_probe_timeout", False),
    # the report role checks its own settings when it starts: after the (read-only) gather,
    # before anything is aggregated, reported or handed to a workflow
    (["-e", "report_lang=fr"], "diagnosis_report_lang", True),
])
def test_bad_settings_fail_the_play_before_anything_runs(tmp_path, extra, needle, gathers):
    proc = run_playbook(["playbooks/diagnose.yml", "-i", "inventory-examples/demo", "-l", "gpu-rack3",
                         "-e", "diagnosis_report_dir=%s" % (tmp_path / "report")] + extra)
    assert proc.returncode != 0
    assert needle in proc.stdout, proc.stdout[-3000:]
    gathered = "TASK [gpu_health : Gather GPU, kernel-log and InfiniBand health]" in proc.stdout
    assert gathered == gathers
    assert "TASK [diagnosis_report : Build the cluster view" not in proc.stdout
    assert not (tmp_path / "report").exists()  # no report that lists 8 'sick' hosts
    assert "remediate" not in proc.stdout
