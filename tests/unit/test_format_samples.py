"""Real samples of the input formats issue 24 asked the engine to read (tests/fixtures/formats,
its README names each sample's source): no sample is refused -- every file of it is read as
something -- and each gives the truth its source established, except the disagreements listed
here with the reason (a format not read yet, or a label the engine reads otherwise on purpose).
An entry that starts to agree fails, so the list only shrinks."""

import json
import os

import pytest

from tests.conftest import FIXTURES
from tests.real_captures import case_dirs, check_case

FORMATS = os.path.join(FIXTURES, "formats")
CASES = case_dirs(FORMATS)

# "<format>/<case>": ((fields), why)
KNOWN = {
    # -- formats with no reader yet: the text is read by the line readers only, so the verdict is
    #    unknown (never healthy) where the sample needs the format's own structure
    "pyspy_dump/03-bigscience-tr11-eval-hang-2node-condensed": (
        ("category",), "the dumps show where each process stood (one in the DataLoader while the others wait in "
                       "collectives); that the cause was the evaluation code is the authors' fix, not the stacks'"),
    "nvsmi_query_csv/01-dcgm263-gpu-recovery-action-reset-gpu1": (
        ("category", "xid_codes"), "the recovery-action column is read (noheader: the pasted command names the "
                                   "columns), but GPU 1's row carries the reporter's note after 'Reset' and cannot "
                                   "be read: unknown, not healthy; Xid 120 is the thread's (dcgmi dmon), not the text's"),
    "nvsmi_query_csv/02-mlengineering-vbios-h100-healthy": (
        ("category",), "a CSV of VBIOS versions alone is no health reading: unknown, on purpose"),
    # -- read, and read otherwise than the label, on purpose
    "ibdev2netdev/01-imbue-cluster-health4-pure-ib-all-down-is-normal": (
        ("category",), "ibdev2netdev's Up/Down is the netdev's: no port health is claimed from it, so no healthy"),
    "k8s_device_plugin/01-k8sdp189-xid69-device-unhealthy": (
        ("category",), "the Xid (69) is read; NVIDIA's catalog files it as the application's (RESTART_APP)"),
    "k8s_device_plugin/02-akash244-xid94-device-unhealthy-klog": (
        ("category",), "the Xid (94, contained ECC) is read as the GPU's; labelled unknown"),
    "nhc/03-azurehpc-distributed-nhc-health-log": (
        ("category", "hosts"), "per-host NHC results: the failing checks' hosts are named, but a check name alone "
                               "(check_gpu_ecc, check_ib_bw) is not read as its category, and a 'Healthy' row is no "
                               "health reading of the host"),
    "nhc/04-nhc134-watchdog-hung-marks-offline-then-online": (
        ("hosts",), "the host is named as NHC wrote it (wn-1-30.local), not shortened"),
    "sacct/01-gcm-testdata-P-oom-failed": (("category",), "an OUT_OF_MEMORY job state is read as the job's memory"),
    "scontrol_node/02-awsomeai195-gres-gpu-count-lower-than-configured": (
        ("category", "hosts"), "a drain reason 'gres/gpu count reported lower than configured' is read as a GPU "
                               "missing from the node"),
    "slurmctld_log/02-arjuna137-job-sigkill-on-c014": (
        ("culprit_hosts", "hosts"), "slurmctld's '_job_complete: JobId=N WTERMSIG 9' is a debug line "
                                                "of Slurm's, not read as a node's fault"),
    "training_log/04-bigscience-tr11-176B-stops-at-eval-45000": (
        ("category",), "a log that stops at an evaluation step says no cause: unknown"),
    "training_log/05-bigscience-tr1-13B-died-oom-at-barrier-bad-gpu": (
        ("category",), "the CUDA OOM is read; that a bad GPU caused it is the thread's, not the log's"),
}


def _name(case):
    return os.path.relpath(case, FORMATS)


@pytest.mark.parametrize("case", CASES, ids=[_name(c) for c in CASES])
def test_format_sample_gives_its_truth(case):
    result, _analysis = check_case(case)
    assert "engine" not in result, result["engine"]
    known = KNOWN.get(_name(case))
    if known:
        for field in known[0]:
            assert not result.pop(field)[0], "now right: remove %s from KNOWN" % _name(case)
    wrong = {k: {"want": v[1], "got": v[2]} for k, v in result.items() if not v[0]}
    assert not wrong, json.dumps(wrong, indent=1, default=str)


# samples whose files nothing recognises yet (no reader of their structure, and no line of them
# any line reader knows): the CLI names them on stderr; their error-like lines are still quoted
UNREAD = {
    # lines of a known program that say nothing the vocabularies hold (NHC's own progress lines, a
    # validator's wait)
    "gpu_operator/01-gpuop448-toolkit-validation-waiting", "nhc/02-mej-readme-nhc-log-cpuinfo-fail",
}


@pytest.mark.parametrize("case", CASES, ids=[_name(c) for c in CASES])
def test_no_format_sample_is_refused(case):
    """No sample is refused outright (an analysis comes back), and every file of it is read as
    something (a kernel log, a job log, a tool's output, a Slurm daemon log) except the UNREAD
    ones, which shrink as readers come."""
    result, analysis = check_case(case)
    assert "engine" not in result, result["engine"]
    unread = [f["file"] for f in analysis.get("files") or () if not f.get("read_as")]
    if _name(case) in UNREAD:
        assert unread, "now read: remove %s from UNREAD" % _name(case)
    else:
        assert not unread, unread


def test_every_known_disagreement_is_a_sample():
    assert set(KNOWN) | UNREAD <= set(_name(c) for c in CASES)
