"""lshca (Mellanox's HCA lister) tables: read by content under any name, its port states,
its elastic view (a table without LnkStat has every port Active), its PCIe error sign."""

import json

import pytest

from gpu_runbook.cli import main
from gpu_runbook.infiniband import detect_ib_format, parse_ib

RULE = "-" * 100


def dev(n, desc, cols, rows):
    """One HCA as lshca's system view prints it: the Dev header, then its table (lshca.py
    print_output: cells padded and joined by ' | ')."""
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]

    def line(cells):
        return " | ".join(c.center(w) for c, w in zip(cells, widths)).rstrip()
    return "\n".join([RULE, "Dev #%d" % n, " Desc: %s" % desc, " FW: 20.39.1002", RULE, line(cols), RULE] +
                     [line(r) for r in rows] + [RULE]) + "\n"


SYSTEM = ["PCI_addr", "RDMA", "Net", "Numa", "LnkStat", "IpStat", "Link", "Rate", "LnkCapWidth", "HCA_Type"]
# elastic view: LnkStat left out because every port of this table is actv
ALL_ACTIVE = ["PCI_addr", "RDMA", "Net", "Numa", "IpStat", "Link", "Rate", "LnkCapWidth", "LnkStaWidth", "HCA_Type"]


def hgx_node(second=("down", "down", "10*"), third="actv"):
    """Two dual-port ConnectX-7 cards, the second port of each uncabled, and one table whose
    ports are all active."""
    a = dev(1, "Mellanox Technologies MT2910 Family [ConnectX-7]", SYSTEM, [
        ["0000:1a:00.0", "mlx5_0", "ib0", "0", "actv", "up_ip4", "IB", "400", "x16 G5", "MT4129"],
        ["0000:1a:00.1", "mlx5_1", "ib1", "0", second[0], second[1], "IB", second[2], "x16 G5", "MT4129"],
        ["0000:3c:00.0", "mlx5_2", "ib2", "0", third, "up_ip4", "IB", "400", "x16 G5", "MT4129"],
        ["0000:3c:00.1", "mlx5_3", "ib3", "0", "down", "down", "IB", "10*", "x16 G5", "MT4129"]])
    b = dev(2, "Mellanox Technologies MT2910 Family [ConnectX-7]", ALL_ACTIVE, [
        ["0000:4d:00.0", "mlx5_4", "ib4", "1", "up_ip4", "IB", "400", "x16 G5", "x16 G5", "MT4129"],
        ["0000:5e:00.0", "mlx5_5", "ib5", "1", "up_ip4", "IB", "400", "x16 G5", "x16 G5", "MT4129"]])
    return a + b


def serious(findings):
    return [(f["kind"], f["ib"]["device"]) for f in findings if f["severity"] in ("critical", "warning")]


def test_a_table_is_its_ports_and_a_table_without_lnkstat_is_all_active():
    text = hgx_node()
    assert detect_ib_format(text) == "lshca"
    facts, findings = parse_ib(text, source="lshca.txt")
    got = [(p["device"], p["state"], p["phys_state"], p["rate_gbps"], p["link_layer"], p["ca_type"])
           for p in facts["ports"]]
    assert got[0] == ("mlx5_0", "Active", "LinkUp", 400.0, "InfiniBand", "MT4129")
    assert got[1] == ("mlx5_1", "Down", None, None, "InfiniBand", "MT4129")  # a down port's rate says nothing
    assert got[4:] == [("mlx5_4", "Active", "LinkUp", 400.0, "InfiniBand", "MT4129"),
                       ("mlx5_5", "Active", "LinkUp", 400.0, "InfiniBand", "MT4129")]
    # the second function of each card is down while the first is used: uncabled spares
    assert serious(findings) == []
    assert [(f["kind"], f["ib"]["device"]) for f in findings if f["kind"] == "ib_port_unused"] == \
        [("ib_port_unused", "mlx5_1"), ("ib_port_unused", "mlx5_3")]


@pytest.mark.parametrize("state,kind,phys", [("init", "ib_port_not_active", "LinkUp"),
                                             ("poll", "ib_port_down", "Polling")])
def test_init_is_a_cabled_port_the_sm_did_not_activate_and_poll_has_no_partner(state, kind, phys):
    facts, findings = parse_ib(hgx_node(second=(state, "down", "400" if state == "init" else "10*")),
                               source="lshca.txt")
    p = [p for p in facts["ports"] if p["device"] == "mlx5_1"][0]
    assert p["phys_state"] == phys
    if state == "init":  # a physical link up is never an uncabled spare
        assert serious(findings) == [(kind, "mlx5_1")]
    else:  # Polling on the second function, like the other card's: still the uncabled spare
        assert serious(findings) == []


def test_the_first_port_of_a_card_down_is_a_fault_not_a_spare():
    facts, findings = parse_ib(hgx_node(third="down"), source="lshca.txt")
    assert ("ib_port_down", "mlx5_2") in serious(findings)


def test_pcie_width_below_its_capability_is_named_once_per_card():
    cols = SYSTEM[:-1] + ["LnkStaWidth", "HCA_Type"]
    text = dev(1, "Mellanox Technologies MT27800 Family [ConnectX-5]", cols, [
        ["000a:11:00.0", "mlx5_0", "ib0", "2", "actv", "up_ip4", "IB", "100", "x16 G3", "x8 >!<", "MT4119"],
        ["000a:11:00.1", "mlx5_1", "ib1", "2", "actv", "up_ip4", "IB", "100", "x16 G3", "x8 >!<", "MT4119"]])
    facts, findings = parse_ib(text, source="lshca.txt")
    (f,) = [f for f in findings if f["kind"] == "pcie_link_degraded"]
    assert f["ib"]["device"] == "mlx5_0" and "x8" in f["message"] and "x16 G3" in f["message"]
    assert f["source"] == "lshca.txt:%d" % (text.split("\n").index(f["evidence"]) + 1)


def analyze(capsys, path):
    rc = main(["analyze", str(path), "--format", "json", "--tz", "UTC"])
    out, err = capsys.readouterr()
    return rc, json.loads(out), err


@pytest.mark.parametrize("name", ["lshca.txt", "hca_status.txt", "notes.log"])
def test_read_by_content_under_any_name_in_a_paste_after_a_prompt(tmp_path, capsys, name):
    (tmp_path / name).write_text("[root@gpu-c-11 ~]# lshca\n" + hgx_node())
    rc, doc, _ = analyze(capsys, tmp_path)
    (h,) = doc["hosts"]
    assert (h["host"], h["verdict"]) == ("gpu-c-11", "healthy") and doc["files"][0]["read_as"] == ["lshca"]
    (tmp_path / name).write_text("[root@gpu-c-11 ~]# lshca\n" + hgx_node(second=("init", "down", "400")))
    rc, doc, _ = analyze(capsys, tmp_path)
    (h,) = doc["hosts"]
    assert h["verdict"] == "ib_network" and rc != 0


def test_lines_after_the_table_are_not_swallowed(tmp_path, capsys):
    # an indented paste of the job's error right after the table is the job's, not lshca's
    text = hgx_node() + "    [rank0]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
    (tmp_path / "paste.txt").write_text(text)
    rc, doc, _ = analyze(capsys, tmp_path)
    assert doc["job"] and doc["job"]["verdict"] == "application"
