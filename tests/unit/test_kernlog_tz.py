"""Time zones: a time written without a zone (dmesg -T, BSD syslog) is in the zone of the node
that wrote it. The caller says which (``tz``); only when nobody does is it read as UTC."""

from datetime import datetime, timezone

import pytest

from gpu_runbook.kernlog import KernelLogScanner, parse_kernel_log, parse_since, scan_kernel_log_files

XID79 = "NVRM: Xid (PCI:0000:3b:00): 79, pid=4321, name=python, GPU has fallen off the bus."
XID48 = "NVRM: Xid (PCI:0000:5e:00): 48, pid=4321, name=python, DBE"

# A node in Seoul (UTC+9) writes dmesg -T in its local time: an old DBE at 05:30 local,
# the Xid 79 of this incident at 07:09 local (= 2026-12-01T22:09Z).
SEOUL_DMESG_T = ("[Wed Dec  2 05:30:00 2026] " + XID48 + "\n"
                 "[Wed Dec  2 07:09:00 2026] " + XID79 + "\n")


def codes(facts):
    return [x["xid"] for x in facts["xids"]]


@pytest.mark.parametrize("since", ["2026-12-02T06:00:00+09:00",   # the node's own zone
                                   "2026-12-01T21:00:00Z",        # the same instant in UTC
                                   "2026-12-02T06:00:00",         # naive: read in tz too
                                   datetime(2026, 12, 1, 21, 0, tzinfo=timezone.utc)])
def test_seoul_node_window_keeps_the_xid(since):
    facts, findings = parse_kernel_log(SEOUL_DMESG_T, since=since, tz="+09:00")
    assert codes(facts) == [79]
    assert facts["xids"][0]["first"] == "2026-12-02T07:09:00+09:00"   # emitted with its offset
    assert facts["window"]["excluded"] == 1 and facts["window"]["applied"] is True
    assert facts["window"]["since"] == "2026-12-02T06:00:00+09:00"
    assert [f["xid"] for f in findings] == [79]


def test_same_log_read_as_utc_is_nine_hours_late():
    """tz=None: the naive 07:09 is read as 07:09Z (16:09 in Seoul), so BOTH lines land after
    a since of 06:00+09:00 (= 21:00Z the day before): the old DBE is not left out."""
    facts, _ = parse_kernel_log(SEOUL_DMESG_T, since="2026-12-02T06:00:00+09:00")
    assert codes(facts) == [48, 79]
    by = {x["xid"]: x for x in facts["xids"]}
    assert by[79]["first"] == "2026-12-02T07:09:00+00:00"
    assert by[48]["first"] == "2026-12-02T05:30:00+00:00"
    assert facts["window"]["excluded"] == 0
    assert facts["window"]["since"] == "2026-12-01T21:00:00+00:00"


def test_seoul_since_after_the_xid_excludes_it_only_when_tz_is_known():
    since = "2026-12-02T08:00:00+09:00"   # 23:00Z on Dec 1: after the Xid's real time (22:09Z)
    assert codes(parse_kernel_log(SEOUL_DMESG_T, since=since, tz="+09:00")[0]) == []
    assert codes(parse_kernel_log(SEOUL_DMESG_T, since=since)[0]) == [48, 79]


def test_iana_zone_name():
    facts, _ = parse_kernel_log(SEOUL_DMESG_T, since="2026-12-01T21:00:00Z", tz="Asia/Seoul")
    if facts["tz"] != "Asia/Seoul":  # read as UTC, with a kernlog_tz_invalid warning
        pytest.skip("no tzdata on this host")
    assert codes(facts) == [79] and facts["xids"][0]["first"] == "2026-12-02T07:09:00+09:00"


def test_aware_times_are_emitted_in_the_node_zone():
    # journald wrote UTC; the report speaks the node's zone, the instant is the same
    line = "2026-12-01T22:09:00+0000 n1 kernel: " + XID79 + "\n"
    facts, _ = parse_kernel_log(line, tz="+09:00")
    assert facts["xids"][0]["first"] == "2026-12-02T07:09:00+09:00"
    assert facts["events"][0]["time"] == "2026-12-02T07:09:00+09:00"
    facts, _ = parse_kernel_log(line)
    assert facts["xids"][0]["first"] == "2026-12-01T22:09:00+00:00"


def test_bsd_syslog_is_local_and_its_year_comes_from_since_in_the_node_zone():
    # 03:00 on New Year's Day in Seoul is still the old year in UTC: the year is the node's
    facts, _ = parse_kernel_log("Jan  1 05:00:00 n1 kernel: " + XID79 + "\n",
                                since="2026-01-01T03:00:00+09:00", tz="+09:00")
    assert facts["window"]["year"] == 2026
    assert facts["xids"][0]["first"] == "2026-01-01T05:00:00+09:00"


def test_naive_iso_without_offset_is_in_tz():
    facts, _ = parse_kernel_log("2026-12-02T07:09:00 " + XID79 + "\n", tz="+09:00")
    assert facts["xids"][0]["first"] == "2026-12-02T07:09:00+09:00"


def test_tzinfo_object_is_accepted():
    from datetime import timedelta
    facts, _ = parse_kernel_log(SEOUL_DMESG_T, tz=timezone(timedelta(hours=9)), since="2026-12-01T21:00:00Z")
    assert codes(facts) == [79]


def test_bad_tz_is_reported_and_read_as_utc():
    facts, findings = parse_kernel_log(SEOUL_DMESG_T, tz="Mars/Olympus")
    bad = [f for f in findings if f["kind"] == "kernlog_tz_invalid"]
    assert len(bad) == 1 and bad[0]["severity"] == "warning" and "Mars/Olympus" in bad[0]["message"]
    assert facts["xids"][1]["first"] == "2026-12-02T07:09:00+00:00"


def test_scanner_and_file_scan_take_tz(tmp_path):
    sc = KernelLogScanner(since="2026-12-01T21:00:00Z", tz="+09:00")
    sc.feed_chunk(SEOUL_DMESG_T)
    assert codes(sc.result()[0]) == [79]
    p = tmp_path / "dmesg.txt"
    p.write_text(SEOUL_DMESG_T)
    for use_grep in (True, False):
        facts, findings = scan_kernel_log_files(str(p), since="2026-12-01T21:00:00Z", tz="+09:00",
                                                use_grep=use_grep)
        assert codes(facts) == [79] and findings[0]["source"] == "dmesg.txt:2"


def test_parse_since_keeps_its_behaviour():
    utc = datetime(2026, 12, 2, 13, 0, tzinfo=timezone.utc)
    assert parse_since(None) is None
    assert parse_since("2026-12-02T13:00:00") == utc          # naive is UTC by default
    assert parse_since("2026-12-02 15:00:00+02:00") == utc
    assert parse_since(datetime(2026, 12, 2, 13, 0)) == utc
    assert parse_since("2026-12-02T22:00:00", tz="+09:00") == utc
    assert parse_since("2026-12-02T13:00:00Z", tz="+09:00") == utc   # aware: as is
    with pytest.raises(ValueError):
        parse_since("yesterday-ish")
