"""GPU identity from the kernel log: which board (UUID, serial) sits at which PCI address.

The driver prints, just before a GPU's first Xid:
    NVRM: GPU at PCI:0000:9b:00: GPU-509665ad-...
    NVRM: GPU Board Serial Number: 1650124014249
and with Xid 79 also 'NVRM: GPU 0000:9b:00.0: GPU serial number is <serial>.'. A GPU off the
bus no longer answers nvidia-smi, so these lines are where its serial survives for the RMA.
Real lines: tests/fixtures/kernlog_identity/ (sources.json names each source) and the
reference capture 003; single lines below name where they were seen.
"""

import json
import pathlib
import shutil

import pytest

from gpu_runbook.analyze import analyze_host
from gpu_runbook.kernlog import KernelLogScanner, parse_kernel_log, scan_kernel_log_file, scan_kernel_log_files
from gpu_runbook.kernlog.identity import PAIR_LINES
from gpu_runbook.kernlog.patterns import board_serial
from gpu_runbook.kernlog.prefilter import has_needle
from gpu_runbook.plan.verify import gpu_catalog, gpu_words, identify

HERE = pathlib.Path(__file__).resolve().parent.parent / "fixtures"
IDENT = HERE / "kernlog_identity"
SOURCES = json.loads((IDENT / "sources.json").read_text())
FILES = sorted(k for k in SOURCES if not k.startswith("_"))
CAPTURE_003 = HERE / "kernlog" / "003-gpud-xid119-gsp-rpc-timeout" / "kern.log"

UUID_9B = "GPU-509665ad-b600-ac93-3616-d754b23d636d"
AT_9B = "NVRM: GPU at PCI:0000:9b:00: " + UUID_9B
SN_9B = "NVRM: GPU Board Serial Number: 1650124014249"
X79_9B = "NVRM: Xid (PCI:0000:9b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."


def gpu_findings(findings):
    return [f for f in findings if isinstance(f.get("gpu"), dict)]


# -- the real captures ---------------------------------------------------------------------

def test_capture_003_serial_in_facts_and_on_the_xid_finding():
    facts, findings = parse_kernel_log(CAPTURE_003.read_text())
    assert facts["gpus"] == {"0000:9b:00.0": {"uuid": UUID_9B, "serial": "1650124014249"}}
    (f,) = findings
    assert f["xid"] == 119
    assert f["gpu"] == {"pci": "0000:9b:00.0", "index": 4, "uuid": UUID_9B, "serial": "1650124014249"}


@pytest.mark.parametrize("name", FILES)
def test_real_identity_lines(name):
    facts, findings = parse_kernel_log((IDENT / name).read_text(), source=name)
    assert facts["gpus"] == SOURCES[name]["expect"]
    named = gpu_findings(findings)
    assert named, "a GPU finding names the board"
    for f in named:
        assert f["gpu"]["serial"] == SOURCES[name]["expect"][f["gpu"]["pci"]]["serial"]
        assert f["gpu"]["uuid"] == SOURCES[name]["expect"][f["gpu"]["pci"]]["uuid"]


def test_k80_two_gpus_one_board_serial_both_fallen_off():
    facts, findings = parse_kernel_log((IDENT / "pubsum-k80-xid79.syslog").read_text())
    off = sorted((f["gpu"]["pci"], f["gpu"]["serial"]) for f in findings if f["kind"] == "gpu_fallen_off_bus")
    assert off == [("0000:05:00.0", "0325015054694"), ("0000:06:00.0", "0325015054694")]
    xids = sorted((f["gpu"]["pci"], f["gpu"]["uuid"]) for f in findings if f["kind"] == "xid")
    assert xids == [("0000:05:00.0", "GPU-97363126-e553-8dd4-9ad8-56844b42694a"),
                    ("0000:06:00.0", "GPU-86d7b114-cfa7-c7bb-97c7-e76781232889")]


@pytest.mark.parametrize("prefix", [
    "[Sun Feb 23 16:24:18 2025] ",                              # dmesg -T (capture 003)
    "[ 4254.197854] ",                                          # raw dmesg
    "Jan 22 18:38:35 fnOS-device kernel: ",                     # syslog, no dmesg stamp
    "Jun 10 03:09:55 phx8-2fa kernel: ",                        # syslog
    "Jan 16 14:04:39 pyrite kernel: [44643.002803] ",           # syslog with the dmesg stamp
    "2025-02-23T16:24:18+0000 gpu-node-a kernel: ",             # journalctl -o short-iso
    "2025-02-23T16:24:18.123456+00:00 gpu-node-a kernel: ",     # RFC 3339 syslog
    "",                                                         # bare (nvidia-bug-report)
])
def test_every_log_prefix(prefix):
    # the prefixes of journalctl/syslog captures seen with these lines (fnOS-device, phx8-2fa:
    # public GitHub markdown found in the code index; the others: the fixtures here)
    text = "".join(prefix + x + "\n" for x in (AT_9B, SN_9B, X79_9B))
    facts, findings = parse_kernel_log(text)
    assert facts["gpus"]["0000:9b:00.0"] == {"uuid": UUID_9B, "serial": "1650124014249"}
    (x,) = [f for f in findings if f["kind"] == "xid"]
    assert x["gpu"]["serial"] == "1650124014249"


@pytest.mark.parametrize("at", ["PCI:0000:9b:00", "PCI:0000:9b:00.0", "PCI:00000000:9B:00", "0000:9b:00.0"])
def test_pci_with_or_without_function_and_long_domain(at):
    text = "[ 1.0] NVRM: GPU at %s: %s\n[ 1.0] %s\n[ 1.0] %s\n" % (at, UUID_9B, SN_9B, X79_9B)
    facts, findings = parse_kernel_log(text)
    assert list(facts["gpus"]) == ["0000:9b:00.0"]
    assert facts["gpus"]["0000:9b:00.0"]["serial"] == "1650124014249"


def test_serial_is_line_alone_names_the_board_of_a_gpu_off_the_bus():
    # seen in a public dmesg capture (code index): a consumer GPU, no 'Board Serial' line,
    # an alphanumeric serial
    text = ("[  485.913085] NVRM: GPU 0000:2f:00.0: GPU has fallen off the bus.\n"
            "[  485.913727] NVRM: GPU 0000:2f:00.0: GPU serial number is PKWUQ0B9VFK0SG.\n")
    facts, findings = parse_kernel_log(text)
    assert facts["gpus"] == {"0000:2f:00.0": {"uuid": None, "serial": "PKWUQ0B9VFK0SG"}}
    (off,) = findings
    assert off["kind"] == "gpu_fallen_off_bus" and off["gpu"]["serial"] == "PKWUQ0B9VFK0SG"


# -- serials that are no serial --------------------------------------------------------------

@pytest.mark.parametrize("raw,want", [
    ("1650124014249", "1650124014249"),
    ("0325015054694", "0325015054694"),     # leading zero kept (K80 fixture)
    ("PKWUQ0B9VFK0SG.", "PKWUQ0B9VFK0SG"),  # 'serial number is X.' ends a sentence
    ("  1653723052734  ", "1653723052734"),
    ("[N/A]", None),                        # seen in public dmesg (code index)
    ("[not supported]", None),              # seen in public dmesg notes (code index)
    ("N/A", None), ("Not Supported", None), ("Unknown", None),
    ("0", None),                            # 'GPU serial number is 0.': a GPU back degraded
    ("0000000000000", None), ("", None),
    ("17946256XXXXX ", "17946256XXXXX"),    # anonymised in a blog: still the token printed
    ("has spaces in it", None), ("x" * 80, None),
])
def test_board_serial(raw, want):
    assert board_serial(raw) == want


@pytest.mark.parametrize("value", ["[N/A]", "[not supported]", "0"])
def test_placeholder_serial_is_none_but_uuid_stays(value):
    text = "[ 5.234] %s\n[ 5.234] NVRM: GPU Board Serial Number: %s\n[ 5.235] %s\n" % (AT_9B, value, X79_9B)
    facts, findings = parse_kernel_log(text)
    assert facts["gpus"]["0000:9b:00.0"] == {"uuid": UUID_9B, "serial": None}
    (x,) = [f for f in findings if f["kind"] == "xid"]
    assert x["gpu"]["uuid"] == UUID_9B and "serial" not in x["gpu"]


def test_placeholder_later_does_not_erase_a_serial_read_before():
    text = ("[ 1.0] %s\n[ 1.0] %s\n[ 9.0] %s\n[ 9.0] NVRM: GPU Board Serial Number: 0\n"
            "[ 9.1] NVRM: GPU 0000:9b:00.0: GPU serial number is 0.\n" % (AT_9B, SN_9B, AT_9B))
    facts, _ = parse_kernel_log(text)
    assert facts["gpus"]["0000:9b:00.0"]["serial"] == "1650124014249"


# -- pairing: the serial line belongs to the GPU announced just before it --------------------

def test_each_serial_goes_to_the_gpu_announced_just_before_it():
    text = ("[ 1.0] NVRM: GPU at PCI:0000:3b:00: GPU-11111111-2222-3333-4444-555555555555\n"
            "[ 1.0] NVRM: GPU Board Serial Number: 1111111111111\n"
            "[ 1.0] NVRM: Xid (PCI:0000:3b:00): 48, An uncorrectable double bit error (DBE) has been detected.\n"
            "[ 2.0] NVRM: GPU at PCI:0000:5e:00: GPU-66666666-7777-8888-9999-000000000000\n"
            "[ 2.0] NVRM: GPU Board Serial Number: 2222222222222\n"
            "[ 2.0] NVRM: Xid (PCI:0000:5e:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n")
    facts, findings = parse_kernel_log(text)
    assert {p: g["serial"] for p, g in facts["gpus"].items()} == {"0000:3b:00.0": "1111111111111",
                                                                  "0000:5e:00.0": "2222222222222"}
    assert {f["xid"]: f["gpu"]["serial"] for f in findings if f["kind"] == "xid"} == {
        48: "1111111111111", 79: "2222222222222"}


def test_serial_too_many_lines_after_the_announcement_is_not_paired():
    filler = "".join("[ 1.0] usb 1-1: new high-speed USB device number %d\n" % i for i in range(PAIR_LINES))
    text = "[ 1.0] %s\n%s[ 1.0] %s\n" % (AT_9B, filler, SN_9B)
    facts, _ = parse_kernel_log(text)
    assert facts["gpus"]["0000:9b:00.0"] == {"uuid": UUID_9B, "serial": None}
    near = "[ 1.0] %s\n%s[ 1.0] %s\n" % (AT_9B, filler[:filler.index("\n") + 1], SN_9B)
    assert parse_kernel_log(near)[0]["gpus"]["0000:9b:00.0"]["serial"] == "1650124014249"
    far = "[ 1.0] %s\n%s[ 1.0] %s\n" % (AT_9B, "[ 1.0] usb 1-1: new device\n" * 10, SN_9B)
    assert parse_kernel_log(far)[0]["gpus"]["0000:9b:00.0"]["serial"] is None


@pytest.mark.parametrize("t1,t2,paired", [
    ("[Sun Feb 23 16:24:18 2025]", "[Sun Feb 23 16:24:19 2025]", True),    # a second boundary
    ("[Sun Feb 23 16:24:18 2025]", "[Sun Feb 23 16:24:30 2025]", False),
    ("[ 100.000000]", "[ 100.900000]", True),
    ("[ 100.000000]", "[ 160.000000]", False),
])
def test_serial_from_another_moment_is_not_paired(t1, t2, paired):
    facts, _ = parse_kernel_log("%s %s\n%s %s\n" % (t1, AT_9B, t2, SN_9B))
    assert (facts["gpus"]["0000:9b:00.0"]["serial"] == "1650124014249") is paired


def test_serial_without_announcement_names_nobody():
    facts, findings = parse_kernel_log("[ 1.0] %s\n[ 1.0] %s\n" % (SN_9B, X79_9B))
    assert facts["gpus"] == {"0000:9b:00.0": {"uuid": None, "serial": None}}
    assert "serial" not in findings[0]["gpu"]


def test_serial_does_not_pair_across_files(tmp_path):
    a, b = tmp_path / "kern.log.1", tmp_path / "kern.log"
    a.write_text("[ 1.0] %s\n" % AT_9B)
    b.write_text("[ 1.0] %s\n" % SN_9B)
    facts, _ = scan_kernel_log_files([(str(a), "kern.log.1"), (str(b), "kern.log")], use_grep=False)
    assert facts["gpus"]["0000:9b:00.0"] == {"uuid": UUID_9B, "serial": None}


def test_another_board_at_the_same_address_is_the_current_one():
    new = "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
    text = ("[ 1.0] %s\n[ 1.0] %s\n" % (AT_9B, SN_9B)
            + "[ 9.0] NVRM: GPU at PCI:0000:9b:00: %s\n[ 9.0] NVRM: GPU Board Serial Number: 1652221000123\n" % new
            + "[ 9.1] " + X79_9B + "\n")
    facts, findings = parse_kernel_log(text)
    assert facts["gpus"]["0000:9b:00.0"] == {"uuid": new, "serial": "1652221000123",
                                             "earlier": [{"uuid": UUID_9B, "serial": "1650124014249"}]}
    assert findings[0]["gpu"]["serial"] == "1652221000123"


def test_identity_before_the_window_still_names_the_gpu():
    text = ("[Sun Feb 23 16:24:18 2025] %s\n[Sun Feb 23 16:24:18 2025] %s\n"
            "[Sun Feb 23 18:00:00 2025] %s\n" % (AT_9B, SN_9B, X79_9B))
    facts, findings = parse_kernel_log(text, since="2025-02-23T17:00:00+00:00")
    assert facts["window"]["applied"] and len(findings) == 1
    assert findings[0]["gpu"]["serial"] == "1650124014249"


# -- every way in: the prefilter, chunks, grep, files ----------------------------------------

def test_identity_lines_pass_the_prefilter():
    for line in (AT_9B, SN_9B, "NVRM: GPU 0000:91:00.0: GPU serial number is 1653723052734."):
        assert has_needle(line) and has_needle(line.encode())


@pytest.mark.parametrize("name", FILES)
def test_chunked_and_file_scans_agree(name, tmp_path):
    text = (IDENT / name).read_text()
    want = parse_kernel_log(text)[0]["gpus"]
    sc = KernelLogScanner()
    data = text.encode()
    for i in range(0, len(data), 7):
        sc.feed_chunk(data[i:i + 7])
    assert sc.result()[0]["gpus"] == want
    noise = "".join("[ 0.5] random: crng init done %d\n" % i for i in range(500))
    p = tmp_path / "kern.log"
    p.write_text(noise + text)
    for use_grep in ([True, False] if shutil.which("grep") else [False]):
        assert scan_kernel_log_file(str(p), use_grep=use_grep)[0]["gpus"] == want


# -- the facts a gather carries, as plan/verify.gpu_catalog reads them -----------------------

def test_gather_facts_carry_kernel_log_gpus_for_the_rma_catalog():
    host = analyze_host({"kern.log": (IDENT / "gpud-sxid-xid79.dmesg").read_text()}, host="gpu-07")
    gpus = host["facts"]["kernel_log"]["gpus"]
    assert gpus["0000:91:00.0"]["serial"] == "1653723052734"
    # nvidia-smi no longer sees the GPU: only the kernel log knows the board
    facts = dict(host["facts"], gpu={"gpus": []})
    catalog = gpu_catalog([facts], host["findings"])
    (rec,) = [g for g in catalog if g["pci"] == "0000:91:00.0"]
    assert rec["serial"] == "1653723052734" and rec["uuid"] == "GPU-b6c3b2be-c55b-d076-fa0e-d464e4c7e08b"
    assert gpu_words(identify("0000:91:00.0", catalog)) == "GPU 1653723052734 at 0000:91:00.0"
    # and from the findings alone (the analysis without facts, as a cluster report keeps it)
    (rec,) = [g for g in gpu_catalog([], host["findings"]) if g["pci"] == "0000:91:00.0"]
    assert rec["serial"] == "1653723052734"
