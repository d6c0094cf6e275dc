"""library/gpu_runbook_rma.py through the real ``ansible localhost -m gpu_runbook_rma`` (local
connection, tmp dirs); the ledger it reads is written by the real gpu_runbook_ledger module."""

import json
import os
import stat

from tests.conftest import run_module

HOST = "gpu-r1-n02"
PCI, UUID = "0000:ab:00.0", "GPU-15f55b61-9643-8acc-fdfc-d0f0ede1a6ea"


def rma(tmp_path, check=False, **args):
    return run_module(tmp_path, "gpu_runbook_rma", args, host="localhost", check=check)


def xid79_args(tmp_path, **extra):
    """The Xid 79 host after the ladder: nvidia-smi cannot open GPU 5; the kernel line of the
    diagnosis before named its UUID; the reset was skipped and escalated."""
    fresh = {"host": HOST, "verdict": "gpu_hardware", "severity": "critical", "rung": "reboot", "findings": [
        {"category": "gpu_hardware", "severity": "critical", "kind": "gpu_handle_error", "xid": None, "rung": "reboot",
         "gpu": {"pci": PCI, "index": 5, "uuid": None}, "message": "nvidia-smi cannot open GPU %s" % PCI,
         "source": "nvidia-smi-q.xml:773"}]}
    earlier = [{"category": "gpu_hardware", "severity": "critical", "kind": "xid", "xid": 79, "rung": "reboot",
                "gpu": {"pci": PCI, "index": None, "uuid": UUID}, "message": "Xid 79 on GPU %s" % PCI,
                "source": "kern.log:53"}]
    args = dict(host=HOST, incident="INC-7", analysis_host=fresh, earlier_findings=earlier,
                facts={"gpu": {"driver_version": "550.90.07", "gpus": [
                    {"index": 0, "pci": "0000:18:00.0", "serial": "1657748414109", "name": "NVIDIA H100 80GB HBM3"}]}},
                outcomes=[{"rung": "drain", "result": "ok", "drained": True},
                          {"rung": "gpu_reset", "result": "skipped", "escalate": "reboot", "message": "fell off the bus"}],
                plan_host={"rungs": [{"rung": "rma", "scope": "host", "status": "planned", "target": {"gpus": [PCI]}}]},
                state_dir=str(tmp_path / "state"), rma_dir=str(tmp_path / "rma"), now="2026-12-03T07:00:00Z")
    args.update(extra)
    return args


def ledger(tmp_path, **args):
    args.setdefault("state_dir", str(tmp_path / "state"))
    res, proc = run_module(tmp_path, "gpu_runbook_ledger", args, host="localhost")
    assert proc.returncode == 0, res
    return res


def test_assess_only_writes_nothing_and_says_what_the_node_needs(tmp_path):
    res, proc = rma(tmp_path, **xid79_args(tmp_path))
    assert proc.returncode == 0 and res["changed"] is False and "files" not in res
    a = res["assessment"]
    assert (a["resume"], a["action"], a["escalate"], a["bundle"]) == (False, "drain", "rma", True)
    assert a["reason"].startswith("replace GPU (S/N unknown, index 5, %s) at %s" % (UUID, PCI))
    assert not (tmp_path / "rma").exists()


def test_bundle_written_atomically_from_the_real_ledger_and_unchanged_on_a_second_run(tmp_path):
    ledger(tmp_path, action="record", incident="INC-7", entries=[
        {"type": "fault", "host": HOST, "gpu": {"pci": PCI, "uuid": UUID, "serial": "1652221000999"}, "xid": 79}])
    ledger(tmp_path, action="audit", incident="INC-7", entries=[
        {"host": HOST, "rung": "drain", "result": "ok", "argv": ["scontrol", "update", "NodeName=%s" % HOST, "State=DRAIN"],
         "message": "drained"},
        {"host": HOST, "rung": "gpu_reset", "result": "skipped", "message": "fell off the bus"},
        {"host": HOST, "rung": "verify", "result": "failed", "message": "the verify's own line"},
        {"host": "gpu-r1-n01", "rung": "drain", "result": "ok", "message": "another host"}])
    ledger(tmp_path, action="audit", incident="INC-6", entries=[{"host": HOST, "rung": "drain", "result": "ok"}])
    args = xid79_args(tmp_path, write=True, reason="gpu-runbook: INC-7: replace GPU", paths=["/srv/inc7/report.json"])
    res, proc = rma(tmp_path, **args)
    assert proc.returncode == 0 and res["changed"] is True, res
    d = tmp_path / "rma" / "INC-7"
    assert res["files"] == {"json": str(d / (HOST + ".json")), "md": str(d / (HOST + ".md"))}
    bundle = json.loads((d / (HOST + ".json")).read_text())
    assert bundle["schema"] == "gpu-runbook/rma/v1" and bundle["host"] == HOST and bundle["incident"] == "INC-7"
    (gpu,) = bundle["gpus"]
    assert (gpu["serial"], gpu["uuid"], gpu["pci"], gpu["index"]) == ("1652221000999", UUID, PCI, 5)
    assert [h["xid"] for h in gpu["history"]] == [79]
    assert [(a["rung"], a["result"]) for a in bundle["attempts"]] == [("drain", "ok"), ("gpu_reset", "skipped")]
    assert bundle["slurm_reason"] == "gpu-runbook: INC-7: replace GPU" and bundle["paths"] == ["/srv/inc7/report.json"]
    md = (d / (HOST + ".md")).read_text()
    assert md.startswith("# RMA: %s - replace GPU 1652221000999 at %s" % (HOST, PCI))
    assert stat.S_IMODE(os.stat(str(d / (HOST + ".json"))).st_mode) == 0o640
    assert sorted(os.listdir(str(d))) == [HOST + ".json", HOST + ".md"]  # no temporary file left

    again, proc = rma(tmp_path, **dict(args, now="2026-12-03T09:30:00Z"))  # later, same content
    assert proc.returncode == 0 and again["changed"] is False and "unchanged" in again["msg"]
    assert json.loads((d / (HOST + ".json")).read_text())["generated"] == "2026-12-03T07:00:00+00:00"

    ledger(tmp_path, action="audit", incident="INC-7", entries=[
        {"host": HOST, "rung": "reboot", "result": "refused", "message": "not allowed"}])
    third, proc = rma(tmp_path, **dict(args, now="2026-12-03T10:00:00Z"))  # new evidence: rewritten
    assert third["changed"] is True
    assert json.loads((d / (HOST + ".json")).read_text())["attempts"][-1]["rung"] == "reboot"


def test_check_mode_writes_nothing_and_returns_the_paths(tmp_path):
    res, proc = rma(tmp_path, check=True, **xid79_args(tmp_path, write=True))
    assert proc.returncode == 0 and res["changed"] is True and "would be written" in res["msg"]
    assert res["files"]["json"] == str(tmp_path / "rma" / "INC-7" / (HOST + ".json"))
    assert res["bundle"]["gpus"][0]["pci"] == PCI
    assert not (tmp_path / "rma").exists()


def test_a_symlinked_target_or_directory_is_refused_and_nothing_is_written(tmp_path):
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text("precious\n")
    d = tmp_path / "rma" / "INC-7"
    d.mkdir(parents=True)
    os.symlink(str(elsewhere), str(d / (HOST + ".json")))
    res, proc = rma(tmp_path, **xid79_args(tmp_path, write=True))
    assert proc.returncode != 0 and "is a symlink" in res["msg"] and "nothing written" in res["msg"]
    assert elsewhere.read_text() == "precious\n" and not (d / (HOST + ".md")).exists()

    other = tmp_path / "other"
    other.mkdir()
    os.symlink(str(other), str(tmp_path / "rma-link"))
    res, proc = rma(tmp_path, **xid79_args(tmp_path, write=True, rma_dir=str(tmp_path / "rma-link")))
    assert proc.returncode != 0 and "rma_dir" in res["msg"] and os.listdir(str(other)) == []

    os.symlink(str(other), str(tmp_path / "rma" / "INC-8"))
    res, proc = rma(tmp_path, **xid79_args(tmp_path, write=True, incident="INC-8"))
    assert proc.returncode != 0 and "incident directory" in res["msg"] and os.listdir(str(other)) == []


def test_names_that_could_escape_the_directory_are_refused(tmp_path):
    for incident, host in (("../INC-7", HOST), ("INC-7", "../../etc/x"), ("INC 7", HOST)):
        res, proc = rma(tmp_path, **xid79_args(tmp_path, write=True, incident=incident, host=host))
        assert proc.returncode != 0 and "cannot name a file" in res["msg"], res
    assert not (tmp_path / "rma").exists()


def test_a_cable_bundle_names_the_port_counters_and_rate(tmp_path):
    port = {"device": "mlx5_0", "port": 1, "state": "Active", "phys_state": "LinkUp", "rate_gbps": 400.0,
            "counters": {"symbol_error": 4210, "port_rcv_data": 123}}
    res, proc = rma(tmp_path, host="gpu-r1-n04", incident="INC-9", write=True, rma_dir=str(tmp_path / "rma"),
                    analysis_host={"host": "gpu-r1-n04", "verdict": "ib_network", "severity": "critical",
                                   "findings": [{"severity": "critical", "kind": "ib_symbol_errors", "rung": "ib_restart",
                                                 "ib": {"device": "mlx5_0", "port": 1}, "message": "symbol errors"}]},
                    facts={"ib": {"ports": [port]}},
                    outcomes=[{"rung": "ib_restart", "result": "failed", "escalate": "cable", "message": "still rising",
                               "still_rising": {"mlx5_0/1": {"symbol_error": 40}}}])
    assert proc.returncode == 0, res
    assert res["assessment"]["reason"] == "IB restart failed: still rising; replace the cable of mlx5_0 port 1"
    (p,) = res["bundle"]["ib_ports"]
    assert (p["device"], p["rate_gbps"], p["counters"], p["still_rising"]) == (
        "mlx5_0", 400.0, {"symbol_error": 4210}, {"symbol_error": 40})
    assert (tmp_path / "rma" / "INC-9" / "gpu-r1-n04.md").read_text().count("mlx5_0 port 1") >= 1


def test_an_unreadable_ledger_line_is_skipped_with_a_warning(tmp_path):
    sd = tmp_path / "state"
    sd.mkdir()
    (sd / "history.jsonl").write_text('{"type": "fault", "host": "%s", "pci": "%s", "xid": 79}\n{torn\n' % (HOST, PCI))
    res, proc = rma(tmp_path, **xid79_args(tmp_path, write=True))
    assert proc.returncode == 0 and res["warnings_lines"] == ["%s:2: not JSON, skipped" % (sd / "history.jsonl")]
    assert [h["xid"] for h in res["bundle"]["gpus"][0]["history"]] == [79]
