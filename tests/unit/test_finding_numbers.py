"""A finding's numbers are numbers: how often (``count``), when (``first`` / ``last``, ISO 8601
with an offset, or null when the log had no wall-clock times) and the counters it judged
(``counters``, ``threshold``), checked against the raw lines of real captures, read here
without the engine's parsers. And the message says them as a person would
('3x between 2026-12-02 07:09:51 and 07:12:03 UTC', 'once at ...'), never 'x1 first T'."""

import os
import re
from datetime import datetime, timedelta, timezone

import pytest

from gpu_runbook.cli import analyze_paths
from gpu_runbook.findings import normalize_pci
from gpu_runbook.infiniband.counters import COUNTER_RULES
from gpu_runbook.kernlog import parse_kernel_log
from gpu_runbook.timeutil import UTC, span_text, to_utc
from tests.conftest import FIXTURES
from tests.real_captures import case_dirs

KERNLOG = os.path.join(FIXTURES, "kernlog")
XID_LINE = re.compile(r"NVRM: Xid \(PCI:([0-9A-Fa-f:.]+)\): (\d+),")
ISO_TIME = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)[,.](\d{6})([+-]\d\d:\d\d)")
CTIME = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]")
UPTIME = re.compile(r"^\[ *(\d+\.\d+)\]")


def _read(path):
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.read()


def _line_time(line):
    """The wall-clock time a kernel-log line was written, read the plain way (UTC when no zone)."""
    m = ISO_TIME.search(line)
    if m:
        return datetime.fromisoformat("%s.%s%s" % m.groups())
    m = CTIME.match(line)
    if m:
        return datetime.strptime(" ".join(m.group(1).split()), "%a %b %d %H:%M:%S %Y").replace(tzinfo=UTC)
    return None


def _xid_lines(text):
    """{(xid, pci): [lines]} of the Xid lines of a log, in order."""
    out = {}
    for line in text.splitlines():
        m = XID_LINE.search(line)
        if m:
            out.setdefault((int(m.group(2)), normalize_pci(m.group(1))), []).append(line)
    return out


def _xids(findings):
    return {(f["xid"], f["gpu"]["pci"]): f for f in findings if f["kind"] == "xid" and f.get("gpu")}


# -- Xids: count, first and last from the log's own lines -----------------------------------

TIMED = ["001-gpud-xid13-xid43-oob-warp-exception", "002-gpud-xid48-63-94-dbe-row-remap",
         "003-gpud-xid119-gsp-rpc-timeout", "024-gpud-xid13-xid109-ctx-switch-timeout"]


@pytest.mark.parametrize("case", TIMED)
def test_xid_count_first_and_last_are_those_of_its_lines(case):
    text = _read(os.path.join(KERNLOG, case, "kern.log"))
    lines = _xid_lines(text)
    assert lines, "the capture has Xid lines"
    _, findings = parse_kernel_log(text)
    got = _xids(findings)
    assert sorted(got) == sorted(lines)
    for key, raw in lines.items():
        f = got[key]
        assert f["count"] == len(raw) and isinstance(f["count"], int)
        assert to_utc(f["first"]) == _line_time(raw[0]) and to_utc(f["last"]) == _line_time(raw[-1])
        assert re.search(r"[+-]\d\d:\d\d$", f["first"]) and re.search(r"[+-]\d\d:\d\d$", f["last"])
        assert span_text(f["count"], f["first"], f["last"]) in f["message"]
        if len(raw) > 1 and _line_time(raw[0]).replace(microsecond=0) != _line_time(raw[-1]).replace(microsecond=0):
            assert "%dx between " % len(raw) in f["message"]
        elif len(raw) == 1:
            assert " once at " in f["message"]


def test_a_repeated_xid_reads_naturally():
    """The issue's own example: one Xid many times is 'Nx between <date> <time> and <time> UTC'."""
    text = _read(os.path.join(KERNLOG, TIMED[0], "kern.log"))
    raw = max(_xid_lines(text).values(), key=len)
    first, last = _line_time(raw[0]), _line_time(raw[-1])
    _, findings = parse_kernel_log(text)
    f = max(_xids(findings).values(), key=lambda f: f["count"])
    assert "%dx between %s and %s UTC" % (len(raw), first.strftime("%Y-%m-%d %H:%M:%S"),
                                          last.strftime("%H:%M:%S")) in f["message"]


def test_a_log_without_times_has_no_first_or_last():
    text = _read(os.path.join(KERNLOG, "047-mleng-xid63-a100-remap-pending-dram-ce177", "kern.log"))
    lines = _xid_lines(text)
    _, findings = parse_kernel_log(text)
    got = _xids(findings)
    assert sorted(got) == sorted(lines)
    for key, raw in lines.items():
        f = got[key]
        assert f["count"] == len(raw) and f["first"] is None and f["last"] is None
        assert "between" not in f["message"] and " at " not in f["message"] and "None" not in f["message"]
        assert ("once" if len(raw) == 1 else "%dx" % len(raw)) in f["message"]


def test_dmesg_seconds_since_boot_are_no_wall_clock_but_are_said():
    path = os.path.join(FIXTURES, "real", "x4-013-chia301-xid31-xid62-xid45-after-driver-update", "kern.log")
    text = _read(path)
    _, findings = parse_kernel_log(text)
    got = _xids(findings)
    for key, raw in _xid_lines(text).items():
        f = got[key]
        up = [str(float(UPTIME.match(line).group(1))) for line in raw]
        assert f["count"] == len(raw) and f["first"] is None and f["last"] is None
        said = ("%s s" % up[0]) if len(raw) == 1 else ("%s to %s s" % (up[0], up[-1]))
        assert said + " after boot" in f["message"] and "between" not in f["message"]


def test_node_faults_carry_their_numbers():
    """OOM kills and hung tasks, each counted with its first and last time."""
    text = "\n".join([
        "2026-12-02T07:09:51+00:00 n1 kernel: INFO: task python:1234 blocked for more than 120 seconds.",
        "2026-12-02T07:11:51+00:00 n1 kernel: INFO: task python:1234 blocked for more than 120 seconds.",
        "2026-12-02T07:12:03+00:00 n1 kernel: INFO: task python:1234 blocked for more than 120 seconds.",
        "2026-12-02T23:59:58+00:00 n1 kernel: Out of memory: Killed process 4242 (python) total-vm:1kB",
        "2026-12-03T00:00:04+00:00 n1 kernel: Out of memory: Killed process 4343 (python) total-vm:1kB",
    ]) + "\n"
    _, findings = parse_kernel_log(text)
    by = {f["kind"]: f for f in findings}
    hung, oom = by["hung_task"], by["oom_kill"]
    assert (hung["count"], hung["first"], hung["last"]) == (3, "2026-12-02T07:09:51+00:00", "2026-12-02T07:12:03+00:00")
    assert "3x between 2026-12-02 07:09:51 and 07:12:03 UTC" in hung["message"]
    assert (oom["count"], oom["first"], oom["last"]) == (2, "2026-12-02T23:59:58+00:00", "2026-12-03T00:00:04+00:00")
    assert "2x between 2026-12-02 23:59:58 and 2026-12-03 00:00:04 UTC" in oom["message"]   # across midnight


def test_a_hca_link_that_dropped_says_when():
    text = "\n".join([
        "2026-12-02T06:11:17+00:00 n5 kernel: mlx5_core 0000:9c:00.0: Port module event: module 0, Cable plugged",
        "2026-12-02T06:11:18+00:00 n5 kernel: mlx5_core 0000:9c:00.0 ib4: Link up",
        "2026-12-02T06:21:17+00:00 n5 kernel: mlx5_core 0000:9c:00.0 ib4: Link down",
        "2026-12-02T06:21:19+00:00 n5 kernel: mlx5_core 0000:9c:00.0 ib4: Link up",
        "2026-12-02T06:51:17+00:00 n5 kernel: mlx5_core 0000:9c:00.0 ib4: Link down",
    ]) + "\n"
    _, findings = parse_kernel_log(text)
    flap = [f for f in findings if f["kind"] == "ib_link_flap"]
    assert len(flap) == 1
    f = flap[0]
    assert (f["count"], f["first"], f["last"]) == (2, "2026-12-02T06:21:17+00:00", "2026-12-02T06:51:17+00:00")
    assert "dropped 2x between 2026-12-02 06:21:17 and 06:51:17 UTC" in f["message"]


# -- every real capture: the numbers are well formed and the message says them -----------------

CAPTURES = sorted(set(case_dirs(os.path.join(FIXTURES, "real")) + case_dirs(KERNLOG)
                      + case_dirs(os.path.join(FIXTURES, "ib")) + case_dirs(os.path.join(FIXTURES, "nvsmi"))))


def _all_findings(analysis):
    for h in analysis["hosts"]:
        yield from h.get("findings", [])
    yield from ((analysis.get("job") or {}).get("findings") or [])


@pytest.fixture(scope="module")
def analyses():
    return {os.path.relpath(c, FIXTURES): analyze_paths([c], tz=UTC) for c in CAPTURES}


def test_every_count_first_last_and_counter_is_a_number(analyses):
    counted = with_counters = 0
    for case, a in analyses.items():
        for f in _all_findings(a):
            msg = f.get("message") or ""
            assert " x1 first" not in msg and not re.search(r" x\d+ first ", msg), (case, msg)
            # 'None' only where the log itself said it ('recovery action changed from 0x0 (None)')
            assert msg.count("None") <= (f.get("evidence") or "").count("None"), (case, msg)
            assert f["kind"] != "xid" or "count" in f, (case, f)
            if "count" in f:
                counted += 1
                assert isinstance(f["count"], int) and not isinstance(f["count"], bool) and f["count"] >= 1, (case, f)
                assert (f["first"] is None) == (f["last"] is None), (case, f)
                if f["first"] is not None:
                    a0, a1 = to_utc(f["first"]), to_utc(f["last"])
                    assert a0 is not None and a1 is not None and a0 <= a1, (case, f)
                    assert re.search(r"([+-]\d\d:\d\d)$", f["first"]), (case, f["first"])
                    assert span_text(f["count"], f["first"], f["last"]) in msg, (case, msg)
                else:
                    assert "between" not in span_text(f["count"], f["first"], f["last"])
            if "counters" in f:
                with_counters += 1
                assert f["counters"] and all(isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
                                             for k, v in f["counters"].items()), (case, f["counters"])
                if "threshold" in f:
                    assert isinstance(f["threshold"], (int, float)) and not isinstance(f["threshold"], bool)
    # the captures hold repeated log lines and judged counters: a scan that saw none is broken
    assert counted >= 50 and with_counters >= 5, (counted, with_counters)


def test_xids_in_every_real_capture_match_their_lines(analyses):
    """For each capture with one kernel log: the Xid findings count its Xid lines."""
    checked = 0
    for case, a in analyses.items():
        path = os.path.join(FIXTURES, case, "kern.log")
        if not os.path.isfile(path) or len(a["hosts"]) != 1:
            continue
        text = _read(path)
        if "NVRM: Xid" in text.replace("NVRM: Xid", "", 1) and any(
                line.count("NVRM: Xid") > 1 for line in text.splitlines()):
            continue  # lines joined in transit: counted per part, not per line
        lines = _xid_lines(text)
        got = _xids(_all_findings(a))
        for key, raw in lines.items():
            if key not in got:
                continue  # an Xid left out on purpose (outside a window, a case's options)
            assert got[key]["count"] == len(raw), (case, key)
            t0, t1 = _line_time(raw[0]), _line_time(raw[-1])
            if t0 is not None and t1 is not None and ISO_TIME.search(raw[0]) and ISO_TIME.search(raw[-1]):
                assert to_utc(got[key]["first"]) == t0 and to_utc(got[key]["last"]) == t1, (case, key)
            checked += 1
    assert checked >= 20, checked


# -- counters: the values of the capture, and the limit they crossed ----------------------------

SYSFS_COUNTER = re.compile(r"^/sys/class/infiniband/([^/]+)/ports/(\d+)/counters/(\w+):(\d+)\s*$")
# perfquery's IBTA names -> the sysfs names (the spelling of every finding)
PERFQUERY = {"SymbolErrorCounter": "symbol_error", "LinkErrorRecoveryCounter": "link_error_recovery",
             "LinkDownedCounter": "link_downed", "PortRcvErrors": "port_rcv_errors",
             "PortRcvRemotePhysicalErrors": "port_rcv_remote_physical_errors",
             "PortRcvSwitchRelayErrors": "port_rcv_switch_relay_errors", "PortXmitDiscards": "port_xmit_discards",
             "PortXmitConstraintErrors": "port_xmit_constraint_errors",
             "PortRcvConstraintErrors": "port_rcv_constraint_errors",
             "LocalLinkIntegrityErrors": "local_link_integrity_errors",
             "ExcessiveBufferOverrunErrors": "excessive_buffer_overrun_errors", "VL15Dropped": "VL15_dropped",
             "PortXmitWait": "port_xmit_wait"}


def _lowest(rule):
    return min(t for t in (rule["info"], rule["warning"], rule["critical"]) if t is not None)


def _counter_findings(a):
    return [f for f in _all_findings(a) if "counters" in f and f.get("ib")]


def test_ib_sysfs_counter_findings_carry_the_files_values():
    case = os.path.join(FIXTURES, "ib", "sysfs-demo-n05-mlx5_4-flapping")
    values = {}
    for line in _read(os.path.join(case, "ib-sysfs.txt")).splitlines():
        m = SYSFS_COUNTER.match(line)
        if m:
            values[(m.group(1), int(m.group(2)), m.group(3))] = int(m.group(4))
    expected = {k for k, v in values.items() if k[2] in COUNTER_RULES and v >= _lowest(COUNTER_RULES[k[2]])}
    assert len(expected) >= 4   # the flapping port's error counters
    found = _counter_findings(analyze_paths([case], tz=UTC))
    got = {}
    for f in found:
        (name, value), = f["counters"].items()
        got[(f["ib"]["device"], f["ib"]["port"], name)] = f
        assert value == values[(f["ib"]["device"], f["ib"]["port"], name)]
        rule = COUNTER_RULES[name]
        assert f["threshold"] in (rule["info"], rule["warning"], rule["critical"]) and value >= f["threshold"]
        assert str(value) in f["message"] and "%s or more" % f["threshold"] in f["message"]
    assert set(got) == expected


def test_perfquery_counter_findings_carry_the_captures_values():
    case = os.path.join(FIXTURES, "ib", "043-ibexporter-perfquery-switch-discards-linkdowned")
    values = {}
    for line in _read(os.path.join(case, "perfquery.txt")).splitlines():
        m = re.match(r"^(\w+):\.+(\d+)\s*$", line)
        if m and m.group(1) in PERFQUERY:
            values[PERFQUERY[m.group(1)]] = int(m.group(2))
    expected = {n for n, v in values.items() if n in COUNTER_RULES and v >= _lowest(COUNTER_RULES[n])}
    found = _counter_findings(analyze_paths([case], tz=UTC))
    got = {name: value for f in found for name, value in f["counters"].items()}
    assert expected and set(got) == expected
    assert all(got[n] == values[n] for n in got)


def _block(text, title):
    """{field: value} of an indented 'nvidia-smi -q' block (its direct fields)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == title:
            indent = len(line) - len(line.lstrip())
            out = {}
            for nxt in lines[i + 1:]:
                if nxt.strip() and len(nxt) - len(nxt.lstrip()) <= indent:
                    break
                if ":" in nxt:
                    k, v = nxt.split(":", 1)
                    out.setdefault(k.strip(), v.strip())
            return out
    return {}


@pytest.mark.parametrize("case", ["004-gpud-smi-q-a10-remap-pending", "047-mleng-xid63-a100-remap-pending-dram-ce177"])
def test_row_remap_findings_carry_the_gpus_counters(case):
    path = os.path.join(FIXTURES, "nvsmi", case)
    rows = _block(_read(os.path.join(path, "nvidia-smi-q.txt")), "Remapped Rows")
    yes = {"Yes": 1, "No": 0}
    want = {"remapped_correctable": int(rows["Correctable Error"]),
            "remapped_uncorrectable": int(rows["Uncorrectable Error"]),
            "remap_pending": yes[rows["Pending"]], "remap_failure": yes[rows["Remapping Failure Occurred"]]}
    found = [f for f in _all_findings(analyze_paths([path], tz=UTC)) if f["kind"] == "row_remap_pending"]
    assert len(found) == 1 and found[0]["counters"] == want and want["remap_pending"] == 1


def test_sram_ecc_rma_finding_carries_the_count_and_the_limit():
    path = os.path.join(FIXTURES, "nvsmi", "048-mleng-sram-uncorrectable-ecc-rma-threshold")
    agg = _block(_read(os.path.join(path, "nvidia-smi-q.txt")), "Aggregate")
    found = {f["kind"]: f for f in _all_findings(analyze_paths([path], tz=UTC))}
    rma = found["ecc_sram_uncorrectable_rma"]
    assert rma["counters"] == {"aggregate_sram_uncorrectable": int(agg["SRAM Uncorrectable"])}
    assert rma["counters"]["aggregate_sram_uncorrectable"] > rma["threshold"]
    assert "above the RMA threshold of %d" % rma["threshold"] in rma["message"]


# -- span_text ---------------------------------------------------------------------------------

def test_span_text_once_many_and_across_midnight():
    assert span_text(1, "2026-12-02T07:09:51+00:00", "2026-12-02T07:09:51+00:00") == \
        "once at 2026-12-02 07:09:51 UTC"
    assert span_text(3, "2026-12-02T07:09:51+00:00", "2026-12-02T07:12:03.5+00:00") == \
        "3x between 2026-12-02 07:09:51 and 07:12:03 UTC"
    assert span_text(2, "2026-12-02T23:59:58+00:00", "2026-12-03T00:00:04+00:00") == \
        "2x between 2026-12-02 23:59:58 and 2026-12-03 00:00:04 UTC"
    # both ends in the first time's zone; a zone with an offset names it
    assert span_text(2, "2026-12-02T16:09:51+09:00", "2026-12-02T07:12:03+00:00") == \
        "2x between 2026-12-02 16:09:51 and 16:12:03 UTC+09:00"
    # sixteen lines within one second are one time, not 'between 04:41:44 and 04:41:44'
    assert span_text(16, "2025-01-21T04:41:44.283302+00:00", "2025-01-21T04:41:44.285147+00:00") == \
        "16x at 2025-01-21 04:41:44 UTC"
    assert span_text(3, "2026-12-02T07:09:51+00:00", "2026-12-02T07:12:03+00:00", "ko") == \
        "2026-12-02 07:09:51 ~ 07:12:03 UTC 3회"
    assert span_text(1, "2026-12-02T07:09:51+00:00", None, "ko") == "2026-12-02 07:09:51 UTC 1회"


def test_span_text_without_times():
    assert span_text(1) == "once" and span_text(3) == "3x" and span_text(3, None, None, "ko") == "3회"
    assert span_text(2, 7.0, 9.5) == "2x"   # seconds since boot are no wall-clock time


def test_span_text_puts_reversed_ends_in_order():
    assert span_text(2, "2026-12-02T07:12:03+00:00", "2026-12-02T07:09:51+00:00") == \
        "2x between 2026-12-02 07:09:51 and 07:12:03 UTC"


@pytest.mark.parametrize("count,first,last", [
    (None, None, None), (0, None, None), (-3, "junk", "junk"), ("x", "2026-13-45T99:99:99", None),
    (float("inf"), None, None), (float("nan"), "", ""), (True, object(), []), (3, {"a": 1}, ("t",)),
    (2, datetime.max.replace(tzinfo=timezone.utc), datetime.min.replace(tzinfo=timezone(timedelta(hours=5)))),
    (2, "9999-12-31T23:59:59+00:00", "9999-12-31T23:59:59-05:00"), (10 ** 30, "0001-01-01T00:00:00+05:00", None),
])
def test_span_text_never_raises_and_never_says_none(count, first, last):
    for lang in ("en", "ko", None, 42):
        text = span_text(count, first, last, lang)
        assert isinstance(text, str) and "None" not in text and text == text.strip()


# -- the finding itself ------------------------------------------------------------------------

def test_a_finding_has_the_number_keys_only_when_it_has_numbers():
    from gpu_runbook.findings import finding
    plain = finding("hung_task", "task x blocked")
    assert not {"count", "first", "last", "counters", "threshold"} & set(plain)
    counted = finding("hung_task", "task x blocked 2x", count="2", first=None, last=None)
    assert counted["count"] == 2 and counted["first"] is None and counted["last"] is None
    judged = finding("ib_symbol_errors", "12 symbol errors", counters={"symbol_error": 12}, threshold=10)
    assert judged["counters"] == {"symbol_error": 12} and judged["threshold"] == 10 and "count" not in judged


def test_a_gpu_record_without_memory_counters_gives_no_empty_counters():
    from gpu_runbook.nvsmi.rules import counters
    assert counters({"ecc": {}, "remapped_rows": {"pending": None}}, "remap_pending", "volatile_uncorrectable") is None
    assert counters({"remapped_rows": {"pending": True, "uncorrectable": 4}}, "remap_pending",
                    "remapped_uncorrectable", "remap_failure") == {"remap_pending": 1, "remapped_uncorrectable": 4}
