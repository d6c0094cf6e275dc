"""Every finding the kernel-log parser makes is a declared kind (taxonomy/kinds_kernel.py),
its remedy agrees with the table, and it reads in Korean from the same steps."""

import pathlib

import pytest

from gpu_runbook import kernlog, xid_catalog
from gpu_runbook.kernlog import parse_kernel_log
from gpu_runbook.taxonomy import KINDS, STEPS, action_text, kinds_kernel, rung_of_steps

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "kernlog"
LOGS = sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.name != "case.json")

# One line (or a few) of every message family the scanner reads.
ZOO = "\n".join([
    "[ 1.0] NVRM: GPU at PCI:0000:3b:00: GPU-11111111-2222-3333-4444-555555555555",
    "[ 1.1] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus.",
    "[ 1.2] NVRM: Xid (PCI:0000:3b:00): 13, pid=1, name=python, Graphics SM Warp Exception",
    "[ 1.3] NVRM: Xid (PCI:0000:3b:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)",
    "[ 1.4] NVRM: Xid (PCI:0000:3b:00): 999, pid=1, name=python, something new",
    "[ 1.5] NVRM: Xid (PCI:0000:3b",
    "[ 2.0] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.",
    "[ 2.1] NVRM: GPU 0000:5e:00.0: RmInitAdapter failed! (0x26:0x56:1474)",
    "[ 3.0] mlx5_core 0000:0c:00.0 mlx5_0: Port: 1 Link ACTIVE",
    "[ 3.1] mlx5_core 0000:0c:00.0 mlx5_0: Port: 1 Link DOWN",
    "[ 3.2] mlx5_core 0000:0c:00.0 mlx5_0: Port: 1 Link ACTIVE",
    "[ 3.3] mlx5_core 0000:0c:00.0 mlx5_0: Port: 1 Link DOWN",
    "[ 3.4] mlx5_core 0000:0d:00.0 mlx5_1: Port: 1 Link ACTIVE",
    "[ 3.5] mlx5_core 0000:0d:00.0 mlx5_1: Port: 1 Link DOWN",
    "[ 3.6] mlx5_core 0000:0e:00.0 mlx5_2: Port: 1 Link DOWN",
    "[ 3.7] mlx5_core 0000:0f:00.0: mlx5_port_module_event:1224:(pid 0): Port module event: module 0, Cable plugged",
    "[ 3.8] mlx5_core 0000:0f:00.0: mlx5_port_module_event:1224:(pid 0): Port module event: module 0, Cable unplugged",
    "[ 3.9] mlx5_core 0000:1c:00.0: mlx5_port_module_event:1159:(pid 0): Port module event[error]: module 0, "
    "Cable error, Bus stuck (I2C or data shorted)",
    "[ 4.0] mlx5_core 0000:0c:00.0: mlx5_health_check_fatal_sensors:1089:(pid 0): health compromised - reached miss count",
    "[ 4.1] mlx5_core 0000:0c:00.0: wait_func:1131:(pid 88): CREATE_QP(0x500) timeout. Will cause a leak",
    "[ 4.2] mlx5_core 0000:0c:00.0: mlx5_pcie_event:301:(pid 0): Detected insufficient power on the PCIe slot (27W).",
    "[ 5.0] pcieport 0000:00:03.1: AER: Corrected error received: 0000:5e:00.0",
    "[ 5.1] pcieport 0000:00:03.1: AER: Uncorrected (Non-Fatal) error received: 0000:5e:00.0",
    "[ 5.2] pcieport 0000:3a:00.0: AER: Uncorrected (Fatal) error received: 0000:3b:00.0",
    "[ 6.0] Out of memory: Killed process 1234 (python) total-vm:123kB, anon-rss:99kB",
    "[ 7.0] INFO: task pt_data_worker:41234 blocked for more than 120 seconds.",
    "[ 7.1] INFO: task nv_queue:77 blocked for more than 120 seconds.",
    "[ 7.2] Memory cgroup out of memory: Killed process 5678 (python) total-vm:1kB",
    "[ 8.0] NVRM: API mismatch: the client has the version 535.54.03, but",
    "[ 8.0] NVRM: this kernel module has the version 530.30.02.  Please",
    "[ 8.1] NVRM: The NVIDIA probe routine was not called for 1 device(s).",
    "[ 8.2] NVRM: The NVIDIA probe routine failed for 1 device(s).",
    "[ 8.3] NVRM: Open nvidia.ko is only ready for use on Data Center GPUs.",
    "[ 8.4] NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:25a0)",
    "               NVRM: installed in this system is not supported by the",
    "               NVRM: NVIDIA 520.56.06 driver release.",
    "[ 8.5] NVRM: GPU6 _kgspLogRpcTimeout: ********************************* GSP Timeout ****",
    "[ 9.0] nvidia-nvswitch0: SXid (PCI:0000:c3:00.0): 24007, Fatal, Link 30 sourcetrack timeout error",
    "[ 9.1] EDAC MC0: 1 UE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0",
    "[ 9.2] EDAC MC1: 3 CE memory read error on CPU_SrcID#1_Ha#0_Chan#0_DIMM#0",
    "[ 9.3] mce: [Hardware Error]: Machine check events logged",
    "[ 9.4] {1}[Hardware Error]: event severity: fatal",
    "[ 9.5] RIP: 0010:nvidia_vma_access+0x1b/0x350 [nvidia]",
    "[ 9.6] nvidia 0000:07:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x0003 address=0x80000040 flags=0x0020]",
]) + "\n"


def check(f):
    """One finding agrees with the taxonomy: declared kind, one of its categories, its rung
    performed by its steps, its action made of them, and Korean for all of it."""
    assert f["kind"] in KINDS, "undeclared kind %r" % f["kind"]
    info = KINDS[f["kind"]]
    assert f["category"] in info["categories"]
    assert rung_of_steps(f["steps"]) == f["rung"]
    if info["rung"] is not None:
        assert tuple(f["steps"]) == info["steps"] and f["rung"] == info["rung"]
    assert f["action"] == action_text(f["steps"]) + (" " + f["note"] if f["note"] else "")
    ko = action_text(f["steps"], "ko")
    assert any("\uac00" <= ch <= "\ud7a3" for ch in ko + info["ko"])
    assert all(s in STEPS for s in f["steps"])


@pytest.mark.parametrize("path", LOGS, ids=[str(p.relative_to(FIXTURES)) for p in LOGS])
def test_every_fixture_finding_has_a_declared_kind(path):
    _, findings = parse_kernel_log(path.read_bytes(), source=path.name)
    for f in findings:
        check(f)


def test_every_message_family_makes_declared_kinds():
    _, findings = parse_kernel_log(ZOO, since="not a time", tz="Nowhere/Atlantis")
    for f in findings:
        check(f)
    _, junk = parse_kernel_log("hello world\nthis is not a kernel log\n")
    for f in junk:
        check(f)
    # a probe failure alone (with a cause beside it -- nouveau, the open module -- the cause speaks)
    _, probe = parse_kernel_log("[ 8.2] NVRM: The NVIDIA probe routine failed for 1 device(s).\n")
    for f in probe:
        check(f)
    assert "gpu_probe_failed" not in {f["kind"] for f in findings}
    # GPUs of another vendor's driver (no NVIDIA line beside them)
    _, amd = parse_kernel_log("[ 9.9] amdgpu 0000:03:00.0: amdgpu: SMU is resuming...\n")
    for f in amd:
        check(f)
    made = {f["kind"] for f in findings + junk + probe + amd}
    # every kind the domain declares is one the parser can make, and nothing else
    assert made == set(kinds_kernel.KINDS), set(kinds_kernel.KINDS) ^ made


def test_xid_findings_take_the_catalog_remedy():
    _, findings = parse_kernel_log(ZOO)
    by = {f["xid"]: f for f in findings if f["kind"] == "xid"}
    e79, e13 = xid_catalog.XID_CATALOG[79], xid_catalog.XID_CATALOG[13]
    assert (by[79]["rung"], tuple(by[79]["steps"])) == (e79["rung"], e79["steps"])
    assert by[13]["note"] == e13["note"] and "compute-sanitizer" in by[13]["action"]
    assert by[154]["rung"] == "gpu_reset" and tuple(by[154]["steps"]) == ("drain_node", "reset_gpu")
    assert by[999]["rung"] == "none" and by[999]["category"] == "unknown"


def test_parser_never_raises_a_bug_becomes_parser_error(monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("boom")
    monkeypatch.setattr(kernlog.scanner.KernelLogScanner, "result", boom)
    facts, findings = parse_kernel_log(ZOO, source="dmesg.txt")
    assert facts == {} and [f["kind"] for f in findings] == ["parser_error"]
    assert findings[0]["source"] == "dmesg.txt"
    facts, findings = kernlog.scan_kernel_log_files([str(LOGS[0])])
    assert [f["kind"] for f in findings] == ["parser_error"]


def test_no_legacy_constructor_left():
    pkg = pathlib.Path(kernlog.__file__).parent
    for p in sorted(pkg.glob("*.py")) + [pathlib.Path(xid_catalog.__file__)]:
        assert "make_finding" not in p.read_text(), p.name
