"""The ledger's memory across runs (ledger/recall.py): a rung already done for an incident,
and when each host was last verified healthy. Real history lines, written and read back."""

from datetime import datetime, timedelta, timezone

import pytest

from gpu_runbook.ledger import (LedgerError, already_done, append_lines, decide, read_lines, remedy_entry, resolved,
                                target_of)

NOW = datetime(2024, 5, 10, 12, 0, 0, tzinfo=timezone.utc)
HOUR = timedelta(hours=1)
GPU = {"host": "n1", "gpu": {"serial": "1650", "uuid": "GPU-aaaa", "pci": "0000:3b:00.0"}}
PORT = {"host": "n2", "port": "mlx5_1/1"}


def remedy(rung, when=NOW - HOUR, result="ok", incident="INC-1", target=None, **extra):
    raw = dict(target or GPU, rung=rung, result=result, when=when.isoformat(), **extra)
    if incident:
        raw["incident"] = incident
    return remedy_entry(raw, NOW)


def on_disk(tmp_path, entries):
    """Through the real file: what a later run reads is what an earlier run appended."""
    path = str(tmp_path / "history.jsonl")
    append_lines(path, entries, "GPU history")
    history, bad = read_lines(path)
    assert not bad
    return history


def item(target=None, rung="gpu_reset", **extra):
    return dict(target or GPU, proposed_rung=rung, **extra)


# --------------------------------------------------------------------------- already done

def test_second_run_of_the_same_incident_climbs_nothing(tmp_path):
    h = on_disk(tmp_path, [remedy("gpu_reset")])
    d = decide(h, item(incident="INC-1"), NOW)
    assert d["already_done"] is True and d["rung"] == "none" and d["done_rung"] == "gpu_reset"
    assert d["escalated"] is False and "INC-1" in d["reason"] and "n1/serial:1650" in d["reason"]
    # the module-wide incident is the default of an item without one
    assert decide(h, item(), NOW, incident="INC-1")["already_done"] is True
    # the item's own incident wins over the default
    assert decide(h, item(incident="INC-2"), NOW, incident="INC-1")["already_done"] is False


def test_another_incident_gpu_host_rung_or_result_is_not_done(tmp_path):
    h = on_disk(tmp_path, [
        remedy("gpu_reset", incident="INC-0"),                                   # another incident
        remedy("gpu_reset", target={"host": "n1", "gpu": {"serial": "9999"}}),   # another GPU
        remedy("gpu_reset", target={"host": "n9", "gpu": {"pci": "0000:3b:00.0"}}),  # that slot on another host
        remedy("reboot"),                                                        # another rung
        remedy("gpu_reset", result="failed"), remedy("gpu_reset", result="refused"),
        remedy("gpu_reset", check_mode=True),                                    # a dry run
        remedy("gpu_reset", incident=None),                                      # no incident
    ])
    d = decide(h, item(incident="INC-1"), NOW)
    # none of them is INC-1's reset: the ordinary rules decide (their tries spent the reset's
    # budget, and the reboot's: the GPU faults again after a reboot, so it is replaced)
    assert d["already_done"] is False and "done_rung" not in d and d["rung"] == "rma"
    assert "gpu_reset tried 3 times" in d["reason"]
    # no incident asked: nothing can be "already done" (the budget alone decides)
    assert decide(h, item(), NOW)["already_done"] is False


def test_already_done_comes_before_a_spent_budget(tmp_path):
    # two resets of INC-1 spent the budget (2): without the incident the answer is a reboot,
    # with it a second run changes nothing
    h = on_disk(tmp_path, [remedy("gpu_reset", NOW - 2 * HOUR), remedy("gpu_reset")])
    assert decide(h, item(), NOW)["rung"] == "reboot"
    d = decide(h, item(incident="INC-1"), NOW)
    assert d["rung"] == "none" and d["already_done"] is True


def test_same_gpu_by_strongest_common_id_and_ports(tmp_path):
    h = on_disk(tmp_path, [remedy("gpu_reset", target={"host": "N1", "gpu": "GPU-AAAA"}),
                           remedy("ib_restart", target=PORT)])
    assert decide(h, item(incident="INC-1"), NOW)["already_done"] is True  # same UUID, host case aside
    assert decide(h, item({"host": "n2", "port": "mlx5_1/1"}, "ib_restart", incident="INC-1"),
                  NOW)["already_done"] is True
    assert decide(h, item({"host": "n2", "port": "mlx5_2/1"}, "ib_restart", incident="INC-1"),
                  NOW)["already_done"] is False


def test_a_host_wide_remedy_covers_every_target_of_its_host(tmp_path):
    h = on_disk(tmp_path, [remedy("ib_restart", target={"host": "n2"})])
    for port in ("mlx5_1/1", "mlx5_7/1"):
        d = decide(h, item({"host": "n2", "port": port}, "ib_restart", incident="INC-1"), NOW)
        assert d["already_done"] is True and d["rung"] == "none"
    assert decide(h, item({"host": "n3", "port": "mlx5_1/1"}, "ib_restart", incident="INC-1"),
                  NOW)["already_done"] is False


def test_an_escalation_already_done_is_not_redone(tmp_path):
    # INC-1's reset budget was spent, the reboot did not fix it and the escalation (rma) was
    # carried out: a second run neither resets nor escalates again
    h = on_disk(tmp_path, [remedy("gpu_reset", NOW - 3 * HOUR, result="failed"),
                           remedy("gpu_reset", NOW - 2 * HOUR, result="failed"), remedy("reboot", NOW - HOUR),
                           remedy("rma")])
    d = decide(h, item(incident="INC-1"), NOW)
    assert d["already_done"] is True and d["done_rung"] == "rma" and d["rung"] == "none"


def test_already_done_returns_the_latest_record():
    h = [remedy("gpu_reset", NOW - 3 * HOUR), remedy("gpu_reset", NOW - HOUR), remedy("gpu_reset", NOW - 2 * HOUR)]
    assert already_done(h, target_of(GPU), "gpu_reset", "INC-1")["when"] == (NOW - HOUR).isoformat()
    assert already_done(h, target_of(GPU), "gpu_reset", "") is None


def test_decide_still_refuses_bad_items_whatever_the_history():
    h = [remedy("gpu_reset", target={"host": "n1"})]
    with pytest.raises(LedgerError) as e:
        decide(h, {"host": "n1", "proposed_rung": "gpu_reset", "incident": "INC-1"}, NOW)
    assert "serial, UUID or PCI" in e.value.msg
    for bad in ("x", {"host": "n1"}, {"host": "n1", "gpu": "GPU-a", "proposed_rung": "defrag"}):
        with pytest.raises(LedgerError):
            decide(h, bad, NOW)


# ------------------------------------------------------------------------------- resolved

def test_resolved_is_the_latest_verify_ok_per_host(tmp_path):
    h = on_disk(tmp_path, [
        remedy("verify", NOW - 5 * HOUR, target={"host": "n1"}),
        remedy("verify", (NOW - 2 * HOUR).astimezone(timezone(timedelta(hours=9))), target={"host": "N1"}),
        remedy("verify", NOW - 3 * HOUR, target={"host": "n1"}),
        remedy("verify", NOW - HOUR, result="failed", target={"host": "n1"}),   # not healthy
        remedy("verify", NOW - HOUR, target={"host": "n1"}, check_mode=True),   # a dry run
        remedy("gpu_reset", NOW - HOUR),                                         # not a verify
        remedy("verify", NOW - 4 * HOUR, target={"host": "n2"}),
    ])
    got = resolved(h)
    assert got == {"n1": (NOW - 2 * HOUR).isoformat(), "n2": (NOW - 4 * HOUR).isoformat()}
    assert got["n1"].endswith("+00:00")  # UTC, whatever zone it was recorded in


def test_resolved_filters_hosts_and_keeps_their_spelling():
    h = [remedy("verify", NOW - HOUR, target={"host": "gpu-r1-n03"}),
         remedy("verify", NOW - HOUR, target={"host": "gpu-r1-n04"})]
    assert resolved(h, ["GPU-R1-N03", "gpu-r9-n01"]) == {"GPU-R1-N03": (NOW - HOUR).isoformat()}
    assert resolved(h, []) == {}
    assert resolved([], None) == {}
    for bad in ("gpu-r1-n03", [None], [""], [3]):
        with pytest.raises(LedgerError):
            resolved(h, bad)


def test_resolved_skips_records_without_a_readable_time():
    good = remedy("verify", NOW - HOUR, target={"host": "n1"})
    h = [dict(good, when="yesterday-ish"), dict(good, host=None), good]
    assert resolved(h) == {"n1": (NOW - HOUR).isoformat()}


def test_verify_is_a_remedy_step_but_not_a_rung_to_decide():
    assert remedy("verify", target={"host": "n1"})["rung"] == "verify"
    with pytest.raises(LedgerError):
        remedy("resume", target={"host": "n1"})
    with pytest.raises(LedgerError):
        decide([], {"host": "n1", "proposed_rung": "verify"}, NOW)
