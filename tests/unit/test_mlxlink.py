"""mlxlink (NVIDIA MFT / mstflint) output: its sections, read by content under any name."""

import json

import pytest

from gpu_runbook.cli import main
from gpu_runbook.infiniband import detect_ib_format, parse_ib, parser


def section(title, rows):
    """One section as MlxlinkCmdPrint prints it: a blank, the title, dashes as long, then each
    record's key padded to 37 columns and ': value' (printutil/mlxlink_record.cpp:329)."""
    return "\n%s\n%s\n" % (title, "-" * len(title)) + "".join("%-35s: %s\n" % kv for kv in rows)


def mlxlink(state="Active", phys="LinkUp", opcode="0", rec="No issue was observed", counters=None,
            command="[root@gpu-b-07 ~]# mlxlink -d mlx5_3 -p 1 -c"):
    text = (command + "\n" if command else "")
    op = [("State", state), ("Physical state", phys)]
    if state == "Active":
        op += [("Speed", "IB-HDR"), ("Width", "4x"), ("FEC", "Standard LL RS-FEC - RS(271,257)")]
    op += [("Loopback Mode", "No Loopback"), ("Auto Negotiation", "ON")]
    text += section("Operational Info", op)
    text += section("Supported Info", [("Enabled Link Speed", "0x00000035 (HDR,EDR,FDR,SDR)"),
                                       ("Supported Cable Speed", "0x0000003f (HDR,EDR,FDR,FDR10,QDR,SDR)")])
    text += section("Troubleshooting Info", [("Status Opcode", opcode), ("Group Opcode", "N/A"),
                                             ("Recommendation", rec)])
    text += section("Tool Information", [("Firmware Version", "20.39.1002"), ("amBER Version", "3.2"),
                                         ("MSTFLINT Version", "mstflint 4.26.0-1")])
    if counters is not None:
        text += section("Physical Counters and BER Info", counters)
    return text


CLEAN_COUNTERS = [("Time Since Last Clear [Min]", "1440.3"), ("Effective Physical Errors", "0"),
                  ("Effective Physical BER", "15E-255"), ("Raw Physical Errors Per Lane", "0,0,0,0"),
                  ("Raw Physical BER", "15E-255"), ("Link Down Counter", "0"), ("Link Error Recovery Counter", "0")]


def analyze(capsys, path):
    rc = main(["analyze", str(path), "--format", "json", "--tz", "UTC"])
    out, err = capsys.readouterr()
    return rc, json.loads(out), err


def test_an_active_hdr_port_reads_as_a_port_at_200_gbps_with_its_counters():
    text = mlxlink(counters=CLEAN_COUNTERS)
    assert detect_ib_format(text) == "mlxlink"
    facts, findings = parse_ib(text, source="mlxlink.txt")
    (p,) = facts["ports"]
    assert (p["device"], p["port"], p["state"], p["phys_state"], p["link_layer"], p["rate_gbps"]) == \
        ("mlx5_3", 1, "Active", "LinkUp", "InfiniBand", 200.0)
    assert p["counters"] == {"symbol_error": 0, "link_downed": 0, "link_error_recovery": 0}
    assert [f for f in findings if f["severity"] not in ("ok", "info")] == []


def test_a_polling_port_is_down_and_says_the_firmwares_recommendation():
    text = mlxlink(state="Polling", phys="N/A", opcode="1024", rec="Cable is unplugged")
    facts, findings = parse_ib(text, source="mlxlink.txt")
    (f,) = [f for f in findings if f["severity"] == "critical"]
    assert f["kind"] == "ib_port_down" and f["ib"] == {"device": "mlx5_3", "port": 1}
    assert "Polling" in f["message"] and "status opcode 1024): Cable is unplugged." in f["message"]
    assert f["source"] == "mlxlink.txt:5"  # the State line, under the title and its dashes


def test_a_physically_up_port_that_is_not_active_is_softwares_not_the_cables():
    facts, findings = parse_ib(mlxlink(state="Physical LinkUp", phys="LinkUp"), source="mlxlink.txt")
    assert [f["kind"] for f in findings if f["severity"] == "critical"] == ["ib_port_not_active"]


def test_link_down_counter_and_post_fec_errors_are_the_counter_rules():
    counters = [(k, {"Link Down Counter": "7", "Effective Physical Errors": "2500"}.get(k, v))
                for k, v in CLEAN_COUNTERS]
    facts, findings = parse_ib(mlxlink(counters=counters), source="mlxlink.txt")
    kinds = {f["kind"]: f["severity"] for f in findings}
    assert kinds["ib_link_downed"] == "critical" and kinds["ib_symbol_errors"] == "critical"


def test_symbol_errors_when_printed_are_the_symbol_count_not_the_effective_errors():
    counters = [("Symbol Errors", "0"), ("Symbol BER", "15E-255")] + \
        [(k, "40" if k == "Effective Physical Errors" else v) for k, v in CLEAN_COUNTERS]
    facts, _ = parse_ib(mlxlink(counters=counters), source="mlxlink.txt")
    assert facts["ports"][0]["counters"]["symbol_error"] == 0


def test_json_output_reads_as_the_text():
    doc = {"result": {"output": {"Operational Info": {"State": "Disable", "Physical state": "N/A"},
                                 "Troubleshooting Info": {"Status Opcode": "1", "Recommendation":
                                                          "Port is disabled by command"}}},
           "status": {"code": 0, "message": "Success"}}
    facts, findings = parser("mlxlink")(json.dumps(doc), source="mlxlink.txt")
    (f,) = [f for f in findings if f["severity"] == "critical"]
    assert f["kind"] == "ib_port_down" and "(physical state Disabled)" in f["message"]
    assert "Port is disabled by command" in f["message"]


def test_its_own_error_line_is_a_tool_error_not_a_traceback():
    text = "-E- Failed to open device: mlx5_9, No such file or directory\n" + mlxlink(command=None)
    facts, findings = parse_ib(text, source="mlxlink.txt")
    assert [f["kind"] for f in findings if f["kind"] == "ib_tool_error"] == ["ib_tool_error"]
    assert "Failed to open device" in [f for f in findings if f["kind"] == "ib_tool_error"][0]["message"]


@pytest.mark.parametrize("name", ["mlxlink.txt", "notes.txt", "link-check.log"])
def test_read_by_content_under_any_name_the_prompt_names_host_and_port(tmp_path, capsys, name):
    (tmp_path / name).write_text(mlxlink(counters=CLEAN_COUNTERS))
    rc, doc, _ = analyze(capsys, tmp_path)
    (h,) = doc["hosts"]
    assert (h["host"], h["verdict"]) == ("gpu-b-07", "healthy") and doc["files"][0]["read_as"] == ["mlxlink"]
    (tmp_path / name).write_text(mlxlink(state="Polling", phys="N/A", opcode="1024", rec="Cable is unplugged"))
    rc, doc, _ = analyze(capsys, tmp_path)
    (h,) = doc["hosts"]
    assert h["verdict"] == "ib_network" and rc != 0
    # the prompt line named the host; the port is mlxlink's own (it does not print the device)
    assert [(f["kind"], f["ib"]["device"]) for f in h["findings"] if f["severity"] == "critical"] == \
        [("ib_port_down", "mlxlink")]


def test_two_runs_in_one_paste_are_two_ports():
    text = mlxlink(command="$ mlxlink -d mlx5_0") + mlxlink(state="Polling", phys="N/A", command="$ mlxlink -d mlx5_1")
    facts, findings = parse_ib(text, source="mlxlink.txt")
    assert [(p["device"], p["state"]) for p in facts["ports"]] == [("mlx5_0", "Active"), ("mlx5_1", "Down")]
    # without the command lines (and without the dashes, as a capture split by host has it)
    bare = "\n".join(x for x in (mlxlink(command=None) + mlxlink(state="Polling", phys="N/A", command=None)).split("\n")
                     if not x.startswith("---"))
    facts, findings = parse_ib(bare, source="mlxlink.txt")
    assert [(p["device"], p["state"]) for p in facts["ports"]] == [("mlxlink", "Active"), ("mlxlink(2)", "Down")]
