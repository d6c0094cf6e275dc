"""Evidence from before a verified fix is not evidence again, on the emulated cluster: the
ledger's ``action=resolved`` time, fed to the gpu_health role as ``gpu_health_not_before``,
keeps an Xid from before it out of the diagnosis and an Xid after it in. Real SSH, the fake
GPUs' own kernel log (dmesg / journalctl on the hosts)."""

import time
from datetime import datetime, timezone

from tests.cluster.test_diagnose_cluster import _diagnose
from tests.conftest import run_module

N04 = "gpu-r3-n04"


def _now():
    return datetime.now(timezone.utc).replace(microsecond=0)


def _verified(tmp_path, when):
    """The ladder's record of a healthy, resumed host, and what action=resolved makes of it."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    sd = str(tmp_path / "state")
    res, proc = run_module(tmp_path, "gpu_runbook_ledger", {
        "action": "record", "state_dir": sd, "incident": "INC-T",
        "entries": [{"type": "remedy", "host": N04, "rung": "verify", "result": "ok", "when": when.isoformat()}]},
        host="localhost")
    assert proc.returncode == 0, res
    res, proc = run_module(tmp_path, "gpu_runbook_ledger", {"action": "resolved", "state_dir": sd, "hosts": [N04]},
                           host="localhost")
    assert proc.returncode == 0, res
    return res["resolved"][N04]


def _xid94(tmp_path, tb, not_before):
    tmp_path.mkdir(parents=True, exist_ok=True)
    rep, by, _ = _diagnose(tb, tmp_path, "-e", "gpu_health_not_before=%s" % not_before, limit=N04)
    return [f for f in by[N04]["findings"] if f.get("xid") == 94]


def test_an_xid_before_the_verified_fix_is_out_one_after_is_in(fresh_cluster, tmp_path):
    tb = fresh_cluster
    before = _now()
    time.sleep(1.5)
    tb.set_fault(N04, "xid94", gpu=1)  # the fault the ladder then fixed
    time.sleep(1.5)
    fixed = _verified(tmp_path / "a", _now())
    assert fixed.endswith("+00:00")
    assert _xid94(tmp_path / "a", tb, before.isoformat())  # not_before earlier: the Xid counts
    assert _xid94(tmp_path / "b", tb, fixed) == []          # from before the verified fix: out
    time.sleep(1.5)
    tb.set_fault(N04, "xid94", gpu=1)  # it comes back after the fix: evidence again
    found = _xid94(tmp_path / "c", tb, fixed)
    assert found and found[0]["severity"] in ("warning", "critical")
