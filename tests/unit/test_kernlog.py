import json
import pathlib
import random
from datetime import datetime, timedelta, timezone

import pytest

from gpu_runbook import kernlog
from gpu_runbook.findings import SEVERITY_RANK, normalize_pci, strip_ansi
from gpu_runbook.kernlog import KernelLogScanner, parse_kernel_log

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "kernlog"
CASES = sorted(p.name for p in FIXTURES.iterdir() if (p / "kern.log").is_file())

X79 = "NVRM: Xid (PCI:0000:3b:00): 79, pid=4321, name=python, GPU has fallen off the bus."


def load(case):
    d = FIXTURES / case
    return (d / "kern.log").read_text(encoding="utf-8", errors="replace"), json.loads((d / "case.json").read_text())


def above(findings, sev):
    return [f for f in findings if SEVERITY_RANK[f["severity"]] > SEVERITY_RANK[sev]]


def xid_findings(findings):
    return [f for f in findings if f["kind"] == "xid"]


# -- reference captures against their case.json truth ------------------------------------

def test_fixture_set_is_complete():
    assert len(CASES) >= 7
    assert any(load(c)[1]["truth"]["category"] == "healthy" for c in CASES)


@pytest.mark.parametrize("case", CASES)
def test_capture_matches_truth(case):
    text, meta = load(case)
    truth = meta["truth"]
    facts, findings = parse_kernel_log(text, source="kern.log")
    codes = sorted({x["xid"] for x in facts["xids"]})
    assert codes == sorted(truth["xid_codes"])
    if truth["category"] == "healthy":
        assert above(findings, "info") == []
        assert facts["xids"] == []
        return
    pci = normalize_pci(truth["faulty_gpu_pci"])
    assert {x["pci"] for x in facts["xids"]} == {pci}
    xf = sorted(xid_findings(findings), key=lambda f: int(f["source"].split(":")[1]))
    assert {f["gpu"]["pci"] for f in xf} == {pci}
    # the earliest Xid is the cause; later ones on the same GPU are its echoes
    assert xf[0]["category"] == truth["category"]
    assert all(f["category"] in (truth["category"], "driver", "gpu_hardware") for f in xf)
    if "process" in truth:
        names = {x["process"] for x in facts["xids"] if x["process"]}
        assert any(truth["process"].startswith(n) for n in names), names


@pytest.mark.parametrize("case", CASES)
def test_capture_evidence_is_the_verbatim_line(case):
    text, _ = load(case)
    lines = text.split("\n")
    _, findings = parse_kernel_log(text, source="kern.log")
    for f in findings:
        if f["evidence"] and f["source"].startswith("kern.log:"):
            n = int(f["source"].split(":")[1])
            assert f["evidence"] == lines[n - 1].rstrip("\r")


def test_capture_001_counts_repeats():
    facts, findings = parse_kernel_log(load("001-gpud-xid13-xid43-oob-warp-exception")[0])
    by = {x["xid"]: x for x in facts["xids"]}
    assert by[13]["count"] == 24 and by[43]["count"] == 2
    assert by[13]["first"] == "2025-01-21T02:21:33.498559+00:00"
    assert by[13]["last"] == "2025-01-21T02:44:00.564343+00:00"
    assert by[43]["pid"] == 2815167 and by[43]["process"] == "pt_main_thread"
    assert by[13]["pid"] is None and by[13]["process"] is None   # pid='<unknown>'
    assert facts["format"] == "dmesg_iso"
    msgs = {f["xid"]: f["message"] for f in findings}
    assert "24x between" in msgs[13] and "2x between" in msgs[43]
    assert {f["xid"]: f["count"] for f in findings} == {13: 24, 43: 2}
    assert all(f["rung"] == "fix_application" for f in findings)


def test_capture_002_peermem_noise_not_blamed():
    text = load("002-gpud-xid48-63-94-dbe-row-remap")[0]
    facts, findings = parse_kernel_log(text)
    assert not any("peermem" in f["evidence"] for f in findings)
    assert {f["xid"] for f in findings} == {48, 63, 94}
    assert max(findings, key=lambda f: SEVERITY_RANK[f["severity"]])["xid"] == 48
    by = {x["xid"]: x for x in facts["xids"]}
    assert by[94]["count"] == 9 and by[94]["pid"] == 1248209


def test_capture_003_gpu_index_uuid_and_ctime():
    facts, findings = parse_kernel_log(load("003-gpud-xid119-gsp-rpc-timeout")[0])
    (f,) = findings
    assert f["gpu"] == {"pci": "0000:9b:00.0", "index": 4, "uuid": "GPU-509665ad-b600-ac93-3616-d754b23d636d",
                        "serial": "1650124014249"}  # 'NVRM: GPU Board Serial Number', line 2
    assert f["rung"] == "gpu_reset" and f["severity"] == "critical" and f["source"] == "kern.log:3"
    x = facts["xids"][0]
    assert x["count"] == 5 and x["first"] == "2025-02-23T16:24:18+00:00" and x["last"] == "2025-02-23T16:30:13+00:00"
    assert x["processes"] == ["nvidia-smi", "cache_mgr_main", "gpud"]
    assert facts["format"] == "dmesg_ctime"


def test_capture_016_journal_peermem_only():
    facts, findings = parse_kernel_log(load("016-gpud-journalctl-peermem-noise")[0])
    assert findings == []
    assert facts["format"] == "journalctl_short_iso"
    assert facts["hostname"] == "exp03-ft-896z-1-lan.exp03-ft-896z-job-svc"


def test_capture_015_boot_noise_is_at_most_info():
    facts, findings = parse_kernel_log(load("015-gpud-boot-dmesg-healthy")[0])
    assert findings and above(findings, "info") == []
    assert facts["aer"] == []   # '[SHPCHotplug AER DPC]' is not an AER error
    kinds = {f["kind"] for f in findings}
    assert kinds <= {"ib_pcie_power", "ib_port_never_up"}


# -- streaming ------------------------------------------------------------------------

def _normal(res):
    facts, findings = res
    return json.dumps(facts, sort_keys=True, default=str), json.dumps(findings, sort_keys=True)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("size", [1, 7, 100, 4096, 1 << 20])
def test_chunked_bytes_equal_whole(case, size):
    text = load(case)[0]
    whole = _normal(parse_kernel_log(text))
    data = text.encode()
    sc = KernelLogScanner()
    for i in range(0, len(data), size):
        sc.feed_chunk(data[i:i + size])
    assert _normal(sc.result()) == whole


@pytest.mark.parametrize("case", CASES)
def test_line_feed_equals_whole(case):
    text = load(case)[0]
    sc = KernelLogScanner()
    for line in text.split("\n") if not text.endswith("\n") else text[:-1].split("\n"):
        sc.feed(line + "\n")
    assert _normal(sc.result()) == _normal(parse_kernel_log(text))


@pytest.mark.parametrize("case", CASES)
def test_reused_bytearray_buffer_equals_whole(case):
    import io
    text = load(case)[0]
    f = io.BytesIO(text.encode())
    buf = bytearray(333)
    sc = KernelLogScanner()
    while True:
        n = f.readinto(buf)
        if not n:
            break
        sc.feed_chunk(buf if n == len(buf) else buf[:n])
        buf[:] = b"\xee" * len(buf)   # the scanner must not keep views into the buffer
    assert _normal(sc.result()) == _normal(parse_kernel_log(text))


def test_prefilter_is_pure_and_merges():
    text = load("002-gpud-xid48-63-94-dbe-row-remap")[0].encode() + b"\n"
    half = text.index(b"\n", len(text) // 2) + 1
    sc = KernelLogScanner()
    for part in (text[:half], text[half:]):
        sc.feed_prefiltered(*kernlog.prefilter(part))
    assert _normal(sc.result()) == _normal(parse_kernel_log(text))
    n, hits, head = kernlog.prefilter(b"a\nNVRM: Xid (PCI:0000:01:00): 13, x\nb\n")
    assert n == 3 and hits == [(1, b"NVRM: Xid (PCI:0000:01:00): 13, x")] and head[:3] == [b"a", hits[0][1], b"b"]


def test_bytes_and_str_agree():
    text = load("002-gpud-xid48-63-94-dbe-row-remap")[0]
    assert _normal(parse_kernel_log(text.encode())) == _normal(parse_kernel_log(text))


def test_event_timeline_is_capped():
    sc = KernelLogScanner(max_events=5)
    for i in range(12):
        sc.feed("[ %d.000000] %s" % (i + 1, X79))
    facts, findings = sc.result()
    assert len(facts["events"]) == 5 and facts["events_dropped"] == 7
    assert facts["xids"][0]["count"] == 12 and len(findings) == 1


def test_distinct_keys_are_capped(monkeypatch):
    monkeypatch.setattr(kernlog.scanner, "MAX_KEYS", 50)   # the limit lives where the scanner reads it
    sc = KernelLogScanner()
    for i in range(300):
        sc.feed("NVRM: Xid (PCI:0000:%02x:%02x): 13, pid=1, name=x, boom" % (i // 32, i % 32))
    facts, _ = sc.result()
    assert len(facts["xids"]) == 50 and facts["keys_dropped"] == 250


def test_overlong_line_is_cut_not_buffered():
    sc = KernelLogScanner()
    sc.feed_chunk(b"A" * (kernlog.MAX_LINE * 3))
    sc.feed_chunk(b"B" * 10 + b"\n" + X79.encode() + b"\n")
    facts, findings = sc.result()
    assert facts["lines"] == 2 and findings[0]["source"] == "kern.log:2"
    assert len(sc._pending or b"") == 0


def test_last_line_without_newline():
    facts, findings = parse_kernel_log("noise\n" + X79)
    assert facts["lines"] == 2 and findings[0]["source"] == "kern.log:2"


# -- timestamp formats ------------------------------------------------------------------

FORMATS = [
    ("[Wed Dec  2 13:57:21 2026] " + X79, "dmesg_ctime", "2026-12-02T13:57:21+00:00"),
    ("[ 1234.567890] " + X79, "dmesg", 1234.56789),
    ("2026-12-02T13:57:21+0000 node7 kernel: " + X79, "journalctl_short_iso", "2026-12-02T13:57:21+00:00"),
    ("Dec  2 13:57:21 node7 kernel: [ 123.400000] " + X79, "syslog", "2026-12-02T13:57:21+00:00"),
    ("2026-12-02T13:57:21.123456+00:00 node7 kernel: " + X79, "syslog_rfc3339", "2026-12-02T13:57:21.123456+00:00"),
    ("2026-12-02T13:57:21,123456+00:00 " + X79, "dmesg_iso", "2026-12-02T13:57:21.123456+00:00"),
    ("kern  :err   : 2026-12-02T13:57:21,123456+00:00 " + X79, "dmesg_iso", "2026-12-02T13:57:21.123456+00:00"),
    ("Dec 02 13:57:21 node7 kernel: " + X79, "syslog", "2026-12-02T13:57:21+00:00"),
    ("2026-12-02T15:57:21+02:00 node7 kernel: " + X79, "syslog_rfc3339", "2026-12-02T13:57:21+00:00"),
    (X79, "bare", None),
]


@pytest.mark.parametrize("line,fmt,first", FORMATS)
def test_timestamp_formats(line, fmt, first):
    facts, findings = parse_kernel_log(line + "\n", year=2026)
    assert facts["format"] == fmt
    (x,) = facts["xids"]
    assert x["first"] == first and x["xid"] == 79 and x["pci"] == "0000:3b:00.0"
    assert x["pid"] == 4321 and x["process"] == "python"
    (f,) = findings
    assert f["severity"] == "critical" and f["rung"] == "reboot" and f["category"] == "gpu_hardware"
    if "node7" in line:
        assert facts["hostname"] == "node7"


def test_mixed_formats_in_one_file():
    text = "\n".join(line for line, _, _ in FORMATS) + "\n"
    facts, findings = parse_kernel_log(text, year=2026)
    assert facts["format"] == "mixed"
    assert facts["xids"][0]["count"] == len(FORMATS)
    assert len(findings) == 1 and "%dx" % len(FORMATS) in findings[0]["message"]


def test_syslog_year_defaults_to_since_year():
    facts, _ = parse_kernel_log("Dec  2 13:57:21 n kernel: " + X79, since="2025-01-01T00:00:00Z")
    assert facts["xids"][0]["first"] == "2025-12-02T13:57:21+00:00"
    facts, _ = parse_kernel_log("Dec  2 13:57:21 n kernel: " + X79)
    assert facts["window"]["year"] == datetime.now(timezone.utc).year


def test_impossible_date_keeps_event_without_time():
    facts, findings = parse_kernel_log("Feb 30 13:57:21 n kernel: " + X79, year=2026)
    assert facts["xids"][0]["first"] is None and len(findings) == 1


# -- Xid line variants ------------------------------------------------------------------

@pytest.mark.parametrize("line,pid,proc,msg", [
    ("NVRM: Xid (PCI:0000:3b:00): 13, pid='<unknown>', name=<unknown>, Graphics Exception", None, None,
     "Graphics Exception"),
    ("NVRM: Xid (PCI:0000:3b:00): 13, pid=<unknown>, name=<unknown>, Graphics Exception", None, None,
     "Graphics Exception"),
    ("NVRM: Xid (PCI:0000:3b:00.0): 13, pid=77, name=pt_main_thread, Ch 00000008", 77, "pt_main_thread",
     "Ch 00000008"),
    ("NVRM: Xid (PCI:0000:3B:00): 13, Graphics Exception: ESR 0x1", None, None, "Graphics Exception: ESR 0x1"),
    ("NVRM: Xid (0000:3b:00): 13, 0001 00000000 0000c1c0 00000144", None, None, "0001 00000000 0000c1c0 00000144"),
    ("NVRM: Xid (PCI:0000:3b:00): 13", None, None, ""),
])
def test_xid_variants(line, pid, proc, msg):
    facts, findings = parse_kernel_log("[ 5.0] " + line + "\n")
    (x,) = facts["xids"]
    assert (x["xid"], x["pci"], x["pid"], x["process"], x["message"]) == (13, "0000:3b:00.0", pid, proc, msg)
    assert findings[0]["gpu"]["pci"] == "0000:3b:00.0"


def test_mixed_gpus_and_repeats():
    lines = []
    for i in range(3):
        lines.append("[ %d.0] NVRM: Xid (PCI:0000:3b:00): 48, pid=1, name=a, DBE" % (10 + i))
    lines.append("[ 20.0] NVRM: Xid (PCI:0000:5e:00): 48, pid=2, name=b, DBE")
    lines.append("[ 21.0] NVRM: Xid (PCI:0000:3b:00): 63, pid=1, name=a, Row Remapper")
    facts, findings = parse_kernel_log("\n".join(lines))
    got = {(x["xid"], x["pci"]): (x["count"], x["first"], x["last"], x["line"]) for x in facts["xids"]}
    assert got == {(48, "0000:3b:00.0"): (3, 10.0, 12.0, 1), (48, "0000:5e:00.0"): (1, 20.0, 20.0, 4),
                   (63, "0000:3b:00.0"): (1, 21.0, 21.0, 5)}
    assert [f["source"] for f in findings] == ["kern.log:1", "kern.log:4", "kern.log:5"]
    assert findings[0]["evidence"] == lines[0]


def test_truncated_xid_line_is_reported_not_dropped():
    facts, findings = parse_kernel_log("[ 1.0] NVRM: Xid (PCI:0000:3b\n[ 2.0] " + X79[:40] + "\n")
    kinds = [f["kind"] for f in findings]
    assert "xid_unparsed" in kinds
    bad = [f for f in findings if f["kind"] == "xid_unparsed"][0]
    assert bad["severity"] == "warning" and bad["source"] == "kern.log:1"


def test_crlf_ansi_and_nul_are_cleaned():
    raw = "\x1b[31m[ 7.0] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, GPU has fallen\x00 off the bus.\x1b[0m\r\n"
    facts, findings = parse_kernel_log("noise\r\n" + raw)
    (f,) = findings
    assert f["evidence"] == "[ 7.0] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, GPU has fallen off the bus."
    assert facts["xids"][0]["first"] == 7.0 and f["source"] == "kern.log:2"
    assert strip_ansi(f["evidence"]) == f["evidence"] and "\r" not in f["evidence"]


def test_unknown_xid_is_never_silent():
    _, findings = parse_kernel_log("[ 1.0] NVRM: Xid (PCI:0000:3b:00): 999, pid=1, name=x, new thing\n")
    (f,) = findings
    assert f["severity"] == "warning" and f["xid"] == 999 and f["category"] == "unknown"
    assert "unknown Xid 999, not in catalog" in f["message"]


def test_xid154_rung_from_message():
    line = "[ 1.0] NVRM: Xid (PCI:0000:3b:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)"
    _, findings = parse_kernel_log(line)
    assert findings[0]["rung"] == "reboot"


def test_xid109_after_app_fault_is_application_else_driver():
    a = "[ 1.0] NVRM: Xid (PCI:0000:3b:00): 13, pid=1, name=x, Graphics SM Warp Exception\n"
    b = "[ 6.0] NVRM: Xid (PCI:0000:3b:00): 109, pid=1, name=x, CTX SWITCH TIMEOUT\n"
    other = "[ 6.0] NVRM: Xid (PCI:0000:5e:00): 109, pid=1, name=x, CTX SWITCH TIMEOUT\n"
    cat = lambda text, pci: [f["category"] for f in parse_kernel_log(text)[1]  # noqa: E731
                             if f["xid"] == 109 and f["gpu"]["pci"] == pci][0]
    assert cat(a + b, "0000:3b:00.0") == "application"
    assert cat(b, "0000:3b:00.0") == "driver"
    assert cat(a + other, "0000:5e:00.0") == "driver"
    assert cat(b + a, "0000:3b:00.0") == "driver"


# -- other NVRM -------------------------------------------------------------------------

def test_fallen_off_bus_without_xid_and_rminit():
    text = ("[ 1.0] NVRM: GPU at PCI:0000:3b:00: GPU-11111111-2222-3333-4444-555555555555\n"
            "[ 2.0] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.\n"
            "[ 3.0] NVRM: GPU 0000:5e:00.0: RmInitAdapter failed! (0x26:0x56:1474)\n"
            "[ 3.1] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15\n")
    facts, findings = parse_kernel_log(text)
    by = {f["kind"]: f for f in findings}
    assert set(by) == {"gpu_fallen_off_bus", "gpu_init_failed"}
    off = by["gpu_fallen_off_bus"]
    assert off["severity"] == "critical" and off["category"] == "gpu_hardware" and off["rung"] == "reboot"
    assert off["gpu"]["uuid"] == "GPU-11111111-2222-3333-4444-555555555555"
    assert by["gpu_init_failed"]["gpu"]["pci"] == "0000:5e:00.0"
    assert facts["gpus"]["0000:3b:00.0"]["uuid"].startswith("GPU-1111")


def test_peermem_noise_lines_make_no_finding():
    line = "[Fri Aug 30 11:11:22 2024] nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context, skipping further processing\n"
    facts, findings = parse_kernel_log(line * 500)
    assert findings == [] and facts["lines"] == 500 and facts["format"] == "dmesg_ctime"


# -- mlx5 ---------------------------------------------------------------------------------

def test_mlx5_link_flaps_named_by_ib_device():
    text = "\n".join([
        "[ 1.0] mlx5_core 0000:0c:00.0 mlx5_0: Port: 1 Link ACTIVE",
        "[ 2.0] mlx5_core 0000:0c:00.0 ibp12s0: Link down",
        "[ 3.0] mlx5_core 0000:0c:00.0 ibp12s0: Link up",
        "[ 4.0] mlx5_core 0000:0c:00.0 mlx5_0: Port: 1 Link DOWN",
        "[ 5.0] mlx5_core 0000:0c:00.0 mlx5_0: Port: 1 Link ACTIVE",
        "[ 6.0] mlx5_core 0000:0d:00.0: mlx5_port_module_event:1224:(pid 0): Port module event: module 0, Cable plugged",
        "[ 7.0] mlx5_core 0000:0d:00.0: mlx5_port_module_event:1224:(pid 0): Port module event: module 0, Cable unplugged",
        "[ 8.0] mlx5_core 0000:0d:00.0 ens2np0: Link up",
        "[ 9.0] mlx5_core 0000:0d:00.0 ens2np0: Link down",
    ])
    facts, findings = parse_kernel_log(text)
    flap = [f for f in findings if f["kind"] == "ib_link_flap"]
    assert len(flap) == 1 and flap[0]["ib"] == {"device": "mlx5_0", "port": 1}
    # a flapping link is physical: drain and check the cable (openibd does not fix a cable)
    assert flap[0]["severity"] == "warning" and flap[0]["rung"] == "drain" and "check_cable" in flap[0]["steps"]
    assert "dropped 2x" in flap[0]["message"] and flap[0]["source"] == "kern.log:2"
    d0 = facts["ib_events"]["devices"]["mlx5_0"]
    assert d0["counts"]["link_down"] == 2 and d0["pci"] == "0000:0c:00.0" and d0["drops"] == 2
    down = [f for f in findings if f["kind"] == "ib_link_dropped"]   # "ib_port_down" is the port-state kind
    assert len(down) == 1 and down[0]["severity"] == "critical" and down[0]["ib"]["device"] == "0000:0d:00.0"
    unplug = [f for f in findings if f["kind"] == "ib_cable_unplugged"]
    assert len(unplug) == 1 and unplug[0]["severity"] == "warning"
    assert all(f["category"] == "ib_network" for f in findings)


def test_mlx5_health_cmd_timeout_and_cable_error():
    text = "\n".join([
        "[ 1.0] mlx5_core 0000:0c:00.0: mlx5_health_check_fatal_sensors:1089:(pid 0): health compromised - reached miss count",
        "[ 2.0] mlx5_core 0000:0c:00.0: wait_func:1131:(pid 88): CREATE_QP(0x500) timeout. Will cause a leak of a command resource",
        "[ 3.0] mlx5_core 0000:1c:00.0: mlx5_port_module_event:1159:(pid 0): Port module event[error]: module 0, Cable error, Bus stuck (I2C or data shorted)",
        "[ 4.0] mlx5_core 0000:0c:00.0: firmware version: 28.39.1002",
    ])
    _, findings = parse_kernel_log(text)
    by = {f["kind"]: f for f in findings}
    assert by["ib_hca_health"]["severity"] == "critical"
    assert by["ib_cmd_timeout"]["severity"] == "warning"
    assert by["ib_cable_error"]["severity"] == "critical" and by["ib_cable_error"]["ib"]["device"] == "0000:1c:00.0"
    assert len(findings) == 3


# -- AER / OOM / hung tasks ----------------------------------------------------------------

def test_aer_classes():
    text = "\n".join(
        ["[ 1.0] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, GPU has fallen off the bus."]
        + ["[ 2.%d] pcieport 0000:00:03.1: AER: Corrected error received: 0000:5e:00.0" % i for i in range(3)]
        + ["[ 3.0] pcieport 0000:00:03.1: AER: Uncorrected (Non-Fatal) error received: 0000:5e:00.0",
           "[ 4.0] pcieport 0000:3a:00.0: AER: Uncorrected (Fatal) error received: 0000:3b:00.0",
           "[ 4.0] nvidia 0000:3b:00.0: AER: PCIe Bus Error: severity=Uncorrected (Fatal), type=Inaccessible, (Unregistered Agent ID)",
           "[ 5.0] pcieport 0000:00:01.0: AER: enabled with IRQ 24"])
    facts, findings = parse_kernel_log(text)
    aer = {f["kind"]: f for f in findings if f["kind"].startswith("pcie_aer")}
    assert aer["pcie_aer_corrected"]["severity"] == "info"
    assert aer["pcie_aer_nonfatal"]["severity"] == "warning"
    fatal = aer["pcie_aer_fatal"]
    assert fatal["severity"] == "critical" and fatal["rung"] == "reboot"
    assert fatal["gpu"]["pci"] == "0000:3b:00.0" and fatal["category"] == "gpu_hardware"
    assert "reported once" in fatal["message"]       # the detail line is not a second event
    assert {(a["class"], a["pci"], a["count"]) for a in facts["aer"]} == {
        ("corrected", "0000:5e:00.0", 3), ("nonfatal", "0000:5e:00.0", 1), ("fatal", "0000:3b:00.0", 1)}


def test_aer_reported_by_the_hca_itself():
    line = "[ 1.0] mlx5_core 0000:0c:00.0: AER: Uncorrected (Fatal) error received: 0000:0c:00.0\n"
    facts, findings = parse_kernel_log(line)
    assert [f["kind"] for f in findings] == ["pcie_aer_fatal"]
    assert facts["aer"][0]["pci"] == "0000:0c:00.0"


def test_aer_corrected_storm_and_surprise_down():
    storm = "\n".join("[ %d.0] pcieport 0000:00:03.1: AER: Corrected error message received from 0000:5e:00.0" % i
                      for i in range(30))
    _, findings = parse_kernel_log(storm)
    assert findings[0]["severity"] == "warning" and findings[0]["category"] == "unknown"
    sd = "[ 1.0] pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error received: 0000:00:01.0\n" \
         "[ 1.0] pcieport 0000:00:01.0: AER: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer\n" \
         "[ 1.0] pcieport 0000:00:01.0: AER:    [ 5] SDES                   (First)\n"
    _, findings = parse_kernel_log(sd)
    kinds = sorted(f["kind"] for f in findings)
    assert kinds == ["pcie_aer_fatal", "pcie_aer_fatal"]
    assert any("Surprise Down" in f["message"] for f in findings)


def test_oom_killer_once_per_kill():
    text = "\n".join([
        "[ 1.0] python invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0, oom_score_adj=0",
        "[ 1.1] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,global_oom,task_memcg=/slurm,task=python,pid=1234,uid=1000",
        "[ 1.2] Out of memory: Killed process 1234 (python) total-vm:123kB, anon-rss:99kB",
        "[ 9.0] Memory cgroup out of memory: Killed process 5678 (pt_data_worker) total-vm:1kB",
    ])
    facts, findings = parse_kernel_log(text)
    assert facts["oom_kills"] == 2
    by = {f["message"].split()[4]: f for f in findings}
    assert set(by) == {"python", "pt_data_worker"}
    f = by["python"]
    assert f["category"] == "memory_leak" and f["severity"] == "warning" and f["rung"] == "fix_application"
    assert f["source"] == "kern.log:3"
    # the global kill is the node's memory; the memcg kill is the job's own limit (Slurm --mem)
    assert f["kind"] == "oom_kill" and by["pt_data_worker"]["kind"] == "oom_kill_cgroup"
    assert facts["oom_kills_cgroup"] == 1


def test_hung_tasks():
    text = "\n".join([
        "[ 1.0] INFO: task python:1234 blocked for more than 120 seconds.",
        "[ 2.0] INFO: task python:1234 blocked for more than 120 seconds.",
        "[ 3.0] INFO: task nv_queue:77 blocked for more than 241 seconds.",
        "[ 3.1] \"echo 0 > /proc/sys/kernel/hung_task_timeout_secs\" disables this message.",
    ])
    facts, findings = parse_kernel_log(text)
    assert facts["hung_tasks"] == 3
    by = {f["message"].split()[1]: f for f in findings}
    assert by["python"]["category"] == "unknown" and "reported 2x" in by["python"]["message"]
    assert by["nv_queue"]["category"] == "driver"
    assert all(f["severity"] == "warning" for f in findings)


# -- time window -------------------------------------------------------------------------------

WINDOW_TEXT = "\n".join([
    "2026-12-02T12:00:00+0000 n kernel: NVRM: Xid (PCI:0000:3b:00): 48, pid=1, name=a, old DBE",
    "2026-12-02T13:00:00+0000 n kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=a, GPU has fallen off the bus.",
    "2026-12-02T14:00:00+0000 n kernel: Out of memory: Killed process 9 (python)",
])


@pytest.mark.parametrize("since", ["2026-12-02T13:00:00Z", "2026-12-02T13:00:00", "2026-12-02 15:00:00+02:00",
                                   "2026-12-02T13:00:00.000+00:00",
                                   datetime(2026, 12, 2, 13, 0), datetime(2026, 12, 2, 13, 0, tzinfo=timezone.utc),
                                   datetime(2026, 12, 2, 8, 0, tzinfo=timezone(timedelta(hours=-5)))])
def test_since_window(since):
    facts, findings = parse_kernel_log(WINDOW_TEXT, since=since)
    assert [x["xid"] for x in facts["xids"]] == [79]
    assert {f["kind"] for f in findings} == {"xid", "oom_kill"}
    assert facts["window"] == {"since": "2026-12-02T13:00:00+00:00", "applied": True, "excluded": 1,
                               "untimed": 0, "year": 2026}


def test_since_cannot_apply_to_relative_dmesg():
    facts, findings = parse_kernel_log("[ 5.0] " + X79, since="2026-12-02T13:00:00Z")
    assert len(findings) == 1 and facts["window"]["applied"] is False and facts["window"]["untimed"] == 1


def test_no_since_means_window_not_applied_and_all_counted():
    facts, _ = parse_kernel_log(WINDOW_TEXT)
    assert facts["window"]["applied"] is False and len(facts["xids"]) == 2


def test_bad_since_is_reported_not_raised():
    facts, findings = parse_kernel_log(WINDOW_TEXT, since="yesterday-ish")
    assert len(facts["xids"]) == 2
    assert any(f["kind"] == "kernlog_window_invalid" and f["severity"] == "warning" for f in findings)


# -- garbage ------------------------------------------------------------------------------------

@pytest.mark.parametrize("text", [None, "", b"", "\n\n\n"])
def test_empty_input(text):
    facts, findings = parse_kernel_log(text)
    assert findings == [] and facts["xids"] == [] and facts["events"] == []
    assert facts["format"] == ("empty" if not text else "unknown")


def test_binary_garbage_never_raises():
    rnd = random.Random(7)
    blob = bytes(rnd.getrandbits(8) for _ in range(200000))
    facts, findings = parse_kernel_log(blob)
    assert above(findings, "info") == [] and facts["lines"] == blob.count(b"\n") + 1
    facts, findings = parse_kernel_log(blob.decode("latin-1"))
    assert above(findings, "info") == []
    # garbage that happens to carry a keyword still does not crash
    junk = b"\xff\xfeNVRM: Xid (PCI:zz): \x00\x01mlx5_core AER: of memory: Kill blocked for more than\n" * 3
    facts, findings = parse_kernel_log(junk)
    assert {f["kind"] for f in findings} == {"xid_unparsed"}


def test_plain_text_that_is_not_a_log_is_flagged_info():
    facts, findings = parse_kernel_log("hello world\nthis is not a kernel log\n")
    assert [f["kind"] for f in findings] == ["kernlog_unparseable"] and findings[0]["severity"] == "info"


def test_hung_dataloader_worker_is_a_dataloader_stall_not_unknown():
    from gpu_runbook.kernlog import parse_kernel_log
    text = ("2026-12-02T07:00:00+0000 n3 kernel: INFO: task pt_data_worker:41234 blocked for more than 120 seconds.\n"
            "2026-12-02T07:00:01+0000 n3 kernel: INFO: task kworker/3:1:77 blocked for more than 120 seconds.\n")
    _facts, findings = parse_kernel_log(text)
    by_comm = {f["evidence"].split("task ")[1].split(":")[0]: f for f in findings if f["kind"] == "hung_task"}
    assert by_comm["pt_data_worker"]["category"] == "dataloader"
    assert by_comm["kworker/3"]["category"] != "dataloader"


def _drops(text):
    facts, findings = parse_kernel_log(text)
    return sum(d["drops"] for d in facts["ib_events"]["devices"].values()), findings


@pytest.mark.parametrize("first_down, counted", [
    ("2026-12-02T06:01:17+0000", True),    # ten hours after the boot: the port was up, it dropped
    ("2026-12-01T19:52:00+0000", False),   # two minutes after it: the port training, not a drop
])
def test_a_first_link_down_is_a_drop_only_long_after_the_boot_the_log_shows(first_down, counted):
    boot = "2026-12-01T19:50:10+0000 gpu-r3-n05 kernel: Linux version 5.15.0-125-generic (buildd@lcy02) #135-Ubuntu SMP"
    lines = [boot, "%s gpu-r3-n05 kernel: mlx5_core 0000:9c:00.0 ibp156s0: Link down" % first_down,
             "2026-12-02T06:01:19+0000 gpu-r3-n05 kernel: mlx5_core 0000:9c:00.0 ibp156s0: Link up",
             "2026-12-02T06:11:17+0000 gpu-r3-n05 kernel: mlx5_core 0000:9c:00.0 ibp156s0: Link down",
             "2026-12-02T06:11:19+0000 gpu-r3-n05 kernel: mlx5_core 0000:9c:00.0 ibp156s0: Link up"]
    drops, findings = _drops("\n".join(lines))
    assert drops == (2 if counted else 1)
    (f,) = [f for f in findings if f["kind"] in ("ib_link_flap", "ib_link_dropped")]
    assert ("between 2026-12-02 06:01:17" in f["message"]) == counted, f["message"]


def test_dmesg_seconds_since_boot_tell_a_drop_from_a_port_training():
    training = "[   41.2] mlx5_core 0000:0c:00.0 ibp12s0: Link down\n[   43.0] mlx5_core 0000:0c:00.0 ibp12s0: Link up\n"
    later = "[36012.5] mlx5_core 0000:0c:00.0 ibp12s0: Link down\n[36014.0] mlx5_core 0000:0c:00.0 ibp12s0: Link up\n"
    assert _drops(training)[0] == 0 and _drops(later)[0] == 1
    # a reboot in the log: the ports train again, the first down after it is not a drop
    reboot = "[    0.000000] Linux version 6.1.0 (x@y) #1 SMP\n" + training
    assert _drops(later + reboot)[0] == 1


def test_an_ib_stack_restart_long_after_boot_is_no_drop_but_a_down_then_up_is():
    # openibd restart: the driver unloads (the port's first 'Link down' in the window), reloads
    # ('firmware version'), the port trains: no drop. The same down followed by an up is one.
    boot = "2026-12-01T19:50:10+0000 n1 kernel: Linux version 5.15.0-125-generic (buildd@lcy02) #135-Ubuntu SMP"
    down = "2026-12-02T06:01:17+0000 n1 kernel: mlx5_core 0000:9c:00.0 ibp156s0: Link down"
    load = "2026-12-02T06:01:18+0000 n1 kernel: mlx5_core 0000:9c:00.0: firmware version: 28.39.1002"
    up = "2026-12-02T06:01:25+0000 n1 kernel: mlx5_core 0000:9c:00.0 ibp156s0: Link up"
    assert _drops("\n".join([boot, down, load, up]))[0] == 0
    assert _drops("\n".join([boot, down, up]))[0] == 1
    # a port that went down and stayed down, long after boot: a drop (it was up)
    drops, findings = _drops("\n".join([boot, down]))
    assert drops == 1 and [f["severity"] for f in findings if f["kind"] == "ib_link_dropped"] == ["critical"]


def test_mlx5_health_report_lines_wrapped_by_a_mail_are_the_reports_and_an_unknown_mlx5_error_is_quoted():
    # health.c print_health_info prints only when the firmware set a syndrome; a mail client put each
    # message on the next line (held-out x42-16)
    wrapped = ("[   13.283418] mlx5_core 0001:19:00.0: print_health_info:374:(pid 0):\nassert_var[0] 0x00000001\n"
               "[   13.283908] mlx5_core 0001:19:00.0: print_health_info:385:(pid 0):\nsynd 0x7: irisc not responding\n")
    _, findings = parse_kernel_log(wrapped)
    assert [(f["kind"], f["severity"]) for f in findings] == [("ib_hca_health", "critical")]
    # an mlx5 error no rule knows is not passed over as healthy
    _, findings = parse_kernel_log("[ 14.0] mlx5_core 0001:19:00.0: some_func:374:(pid 0): unknown failure here\n")
    assert [f["kind"] for f in findings] == ["unexplained_errors"]
    # its chatter is not an error
    _, findings = parse_kernel_log("[ 4.0] mlx5_core 0000:0c:00.0: firmware version: 28.39.1002\n")
    assert findings == []
