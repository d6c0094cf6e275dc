"""gpu_health_facts ``not_before``: the kernel-log window starts at the later of ``since`` and
``not_before`` (the time the ladder last verified the host healthy), so an Xid from before a
verified fix is not evidence again. The real module through ``ansible -m`` on the local
connection, on real kernel-log captures (tests/fixtures/kernlog, from gpud); in live mode only
the kernel-log tools are stand-ins."""

import json
import os
import shutil
from datetime import datetime, timezone

import pytest

from tests.conftest import FIXTURES, make_live_host, run_module, run_playbook, write_tool

# Fri Aug 30 2024, dmesg --ctime (no zone): Xid 13 at 11:43:09, Xid 109 at 11:43:14
CTX_SWITCH = os.path.join(FIXTURES, "kernlog", "024-gpud-xid13-xid109-ctx-switch-timeout", "kern.log")
# Sun Feb 23 2025, dmesg -T: Xid 119 at 16:24:18, 16:24:24, 16:24:30, 16:27:12, 16:30:13
GSP_TIMEOUT = os.path.join(FIXTURES, "kernlog", "003-gpud-xid119-gsp-rpc-timeout", "kern.log")


def gather(tmp_path, env=None, **args):
    res, proc = run_module(tmp_path, "gpu_health_facts", dict(args, hostname="node-live"), env=env)
    assert proc.returncode == 0, res.get("msg")
    return res["ansible_facts"]["gpu_health"]


def xids(health):
    return sorted({x["xid"] for x in health["facts"]["kernel_log"]["xids"]})


def xid_findings(health):
    return sorted({f["xid"] for f in health["findings"] if f.get("xid") is not None})


@pytest.fixture
def capture(tmp_path):
    d = tmp_path / "capture"
    d.mkdir()
    shutil.copy(CTX_SWITCH, str(d / "kern.log"))
    return str(d)


def test_without_bounds_the_whole_capture_counts(tmp_path, capture):
    h = gather(tmp_path, capture_dir=capture, tz="+00:00")
    assert xids(h) == [13, 109] and xid_findings(h) == [13, 109]
    assert h["window"] == {"since": None, "not_before": None, "start": None, "bound": None}


def test_an_xid_before_not_before_is_not_reported_one_after_is(tmp_path, capture):
    h = gather(tmp_path, capture_dir=capture, tz="+00:00", not_before="2024-08-30T11:43:12Z")
    assert xids(h) == [109] and xid_findings(h) == [109]  # Xid 13 came before the verified fix
    assert h["window"]["bound"] == "not_before" and h["window"]["start"] == "2024-08-30T11:43:12+00:00"
    kw = h["facts"]["kernel_log"]["window"]
    assert kw["applied"] is True and kw["excluded"] == 3  # the three Xid 13 lines
    # a fix verified after both: neither is evidence any more
    h = gather(tmp_path, capture_dir=capture, tz="+00:00", not_before="2024-08-30T11:43:15Z")
    assert xids(h) == [] and xid_findings(h) == [] and h["verdict"] != "application"


def test_the_later_bound_wins(tmp_path, capture):
    # since later than not_before: since wins, Xid 13 is out
    h = gather(tmp_path, capture_dir=capture, tz="+00:00", since="2024-08-30T11:43:12Z",
               not_before="2024-08-30T11:00:00Z")
    assert xids(h) == [109] and h["window"]["bound"] == "since"
    assert h["window"]["not_before"] == "2024-08-30T11:00:00+00:00"
    # not_before later than since: the job started before the fault, the fix came after it
    h = gather(tmp_path, capture_dir=capture, tz="+00:00", since="2024-08-30T11:00:00Z",
               not_before="2024-08-30T11:43:12Z")
    assert xids(h) == [109] and h["window"]["bound"] == "not_before"
    # a tie is since's (not_before moved nothing)
    h = gather(tmp_path, capture_dir=capture, tz="+00:00", since="2024-08-30T11:43:12Z",
               not_before="2024-08-30T11:43:12+00:00")
    assert h["window"]["bound"] == "since" and xids(h) == [109]


def test_not_before_is_read_like_since_with_or_without_a_zone(tmp_path, capture):
    # the log's times have no zone: with tz +09:00, 11:43:09 there is 02:43:09Z
    for nb in ("2024-08-30T11:43:12", "2024-08-30T02:43:12Z", "2024-08-30 11:43:12+09:00"):
        h = gather(tmp_path, capture_dir=capture, tz="+09:00", not_before=nb)
        assert xids(h) == [109], nb
        assert h["window"]["start"] == "2024-08-30T02:43:12+00:00", nb
    # the same naive time read in UTC is nine hours later than both Xids
    h = gather(tmp_path, capture_dir=capture, tz="+00:00", not_before="2024-08-30T11:43:08")
    assert xids(h) == [13, 109]


def test_a_not_before_that_is_not_a_time_fails_clearly(tmp_path, capture):
    res, proc = run_module(tmp_path, "gpu_health_facts", {"capture_dir": capture, "not_before": "after the fix"})
    assert proc.returncode != 0 and "ansible_facts" not in res
    assert res["msg"].startswith("not_before 'after the fix' is not an ISO 8601 time")


def test_a_bad_since_gives_way_to_not_before_and_says_so(tmp_path, capture):
    h = gather(tmp_path, capture_dir=capture, tz="+00:00", since="job start", not_before="2024-08-30T11:43:12Z")
    assert xids(h) == [109] and h["window"]["bound"] == "not_before" and "since_error" in h["window"]
    bad = [f for f in h["findings"] if f["kind"] == "kernlog_window_invalid"]
    assert len(bad) == 1 and "not_before" in bad[0]["message"] and "job start" in bad[0]["message"]
    # alone, a bad since is what it always was: a finding, and the whole log
    h = gather(tmp_path, capture_dir=capture, tz="+00:00", since="job start")
    assert xids(h) == [13, 109] and any(f["kind"] == "kernlog_window_invalid" for f in h["findings"])


def _tools(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    write_tool(bindir, "nvidia-smi", "exit 0\n")
    return bindir, {"PATH": "%s:%s" % (bindir, os.environ["PATH"])}


def test_live_dmesg_window(tmp_path):
    bindir, env = _tools(tmp_path)
    write_tool(bindir, "dmesg", "cat %s\n" % GSP_TIMEOUT)
    common = dict(probes=["kernel_log"], tz="+00:00", kern_log_path=str(tmp_path / "none"))
    h = gather(tmp_path, env=env, **common)
    assert [x["count"] for x in h["facts"]["kernel_log"]["xids"] if x["xid"] == 119] == [5]
    h = gather(tmp_path, env=env, not_before="2025-02-23T16:28:00Z", since="2025-02-23T16:00:00Z", **common)
    got = [x for x in h["facts"]["kernel_log"]["xids"] if x["xid"] == 119]
    assert [x["count"] for x in got] == [1]  # only the 16:30:13 one came after the fix
    assert h["window"]["bound"] == "not_before" and h["mode"] == "live"


def test_live_journalctl_gets_the_window_start_as_one_instant(tmp_path):
    bindir, env = _tools(tmp_path)
    argv_log = tmp_path / "journalctl.argv"
    # dmesg_restrict=1 and not root: dmesg refuses, journald answers
    write_tool(bindir, "dmesg", "echo 'dmesg: read kernel buffer failed: Operation not permitted' >&2\nexit 1\n")
    write_tool(bindir, "journalctl", 'echo "$@" > %s\n'
               "echo '2025-02-23T16:24:18+0000 node-live kernel: NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, "
               "name=nvidia-smi, Timeout after 6s of waiting for RPC response from GPU4 GSP!'\n"
               "echo '2025-02-23T16:30:13+0000 node-live kernel: NVRM: Xid (PCI:0000:9b:00): 79, pid=1, "
               "name=gpud, GPU has fallen off the bus.'\n" % argv_log)
    h = gather(tmp_path, env=env, probes=["kernel_log"], tz="+00:00", kern_log_path=str(tmp_path / "none"),
               not_before="2025-02-23T17:28:00+01:00")
    start = datetime(2025, 2, 23, 16, 28, tzinfo=timezone.utc)
    assert argv_log.read_text().split()[-2:] == ["--since", "@%d" % start.timestamp()]
    assert xids(h) == [79] and h["window"]["start"] == "2025-02-23T16:28:00+00:00"


# ------------------------------------------------------------------- the gpu_health role

def _diagnose(h, *extra):
    env = {"PATH": "%s:%s" % (h["bin"], os.environ["PATH"]), "TZ": "UTC"}  # dmesg -T: the node's zone
    return run_playbook(["playbooks/diagnose.yml", "-i", str(h["inv"]), "-e", '{"gpu_health_probes": ["kernel_log"]}',
                         "-e", "gpu_health_kern_log_path=%s" % (h["tmp"] / "none"),
                         "-e", "diagnosis_report_dir=%s" % (h["tmp"] / "report")] + list(extra), env=env)


def _xid_119(h, proc):
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    with open(str(h["tmp"] / "report" / "report.json")) as fh:
        host = json.load(fh)["hosts"][0]
    return [f for f in host["findings"] if f.get("xid") == 119]


def test_role_passes_gpu_health_not_before_through(tmp_path):
    h = make_live_host(tmp_path)
    write_tool(h["bin"], "dmesg", "cat %s\n" % GSP_TIMEOUT)
    assert _xid_119(h, _diagnose(h))  # the GSP timeouts are evidence ...
    # ... until the ladder verified the host healthy after them
    assert _xid_119(h, _diagnose(h, "-e", "gpu_health_not_before=2025-02-23T16:31:00Z")) == []
    assert _xid_119(h, _diagnose(h, "-e", "gpu_health_not_before=2025-02-23T16:29:00+00:00"))


def test_role_refuses_a_not_before_that_is_not_a_time(tmp_path):
    h = make_live_host(tmp_path)
    write_tool(h["bin"], "dmesg", "cat %s\n" % GSP_TIMEOUT)
    proc = _diagnose(h, "-e", "gpu_health_not_before=after-the-fix")
    assert proc.returncode != 0
    assert "not_before 'after-the-fix' is not an ISO 8601 time" in proc.stdout
    assert not (h["tmp"] / "report" / "report.json").exists()
