"""libfabric's fi_info (infiniband/fi_info.py): read by content under any name; an RDMA provider with a
reliable endpoint is a healthy reading of the node's fabric software, only sockets / shared-memory
providers a warning of the NCCL configuration (rung none), fi_getinfo's -61 a warning that no
provider matched, and a text that opens like fi_info but holds no entry never healthy. The EFA
listing is a real healthy node's; the others are written as ofiwg/libfabric util/info.c and
src/fi_tostr.c print them."""

import pytest

from gpu_runbook.cli import analyze_paths
from gpu_runbook.infiniband.fi_info import parse_fi_info
from tests.unit.test_read_by_content import analyze_json

EFA = ("provider: efa\n    fabric: EFA-fe80::39:beff:fe6e:c23\n    domain: efa_0-rdm\n    version: 2.0\n"
       "    type: FI_EP_RDM\n    protocol: FI_PROTO_EFA\n"
       "provider: efa\n    fabric: EFA-fe80::39:beff:fe6e:c23\n    domain: efa_0-dgrm\n    version: 2.0\n"
       "    type: FI_EP_DGRAM\n    protocol: FI_PROTO_EFA\n"
       "provider: efa;ofi_rxd\n    fabric: EFA-fe80::39:beff:fe6e:c23\n    domain: efa_0-dgrm\n    version: 1.0\n"
       "    type: FI_EP_RDM\n    protocol: FI_PROTO_RXD\n")
SOCKETS_ONLY = ("provider: tcp;ofi_rxm\n    fabric: 10.0.0.0/24\n    domain: eth0\n    version: 1.0\n"
                "    type: FI_EP_RDM\n    protocol: FI_PROTO_RXM\n"
                "provider: shm\n    fabric: shm\n    domain: shm\n    version: 118.0\n"
                "    type: FI_EP_RDM\n    protocol: FI_PROTO_SHM\n")
VERBOSE = ("---\nfi_info:\n    caps: [ FI_MSG, FI_RMA, FI_READ, FI_RECV, FI_SEND ]\n    mode: [  ]\n"
           "    addr_format: FI_ADDR_EFA\n    fi_tx_attr:\n        caps: [ FI_MSG, FI_SEND ]\n"
           "    fi_ep_attr:\n        type: FI_EP_RDM\n        protocol: FI_PROTO_EFA\n        protocol_version: 4\n"
           "    fi_domain_attr:\n        domain: 0x0\n        name: efa_0-rdm\n        threading: FI_THREAD_SAFE\n"
           "    caps: [ FI_LOCAL_COMM, FI_REMOTE_COMM ]\n    mode: [  ]\n        mr_cnt: 65535\n"
           "    fi_fabric_attr:\n        name: efa\n        prov_name: efa\n        prov_version: 120.10\n"
           "        api_version: 1.21\n    nic_fid: 0x0\n")
LISTED = ("efa:\n    version: 120.10\nshm:\n    version: 120.10\ntcp:\n    version: 120.10\n"
          "ofi_rxm:\n    version: 120.10\n")


def test_an_efa_node_is_read_and_healthy():
    facts, findings = parse_fi_info(EFA, "fi_info.txt")
    assert findings == [] and facts["rdma"]
    assert [(p["provider"], p["domain"], p["type"]) for p in facts["providers"]] == [
        ("efa", "efa_0-rdm", "FI_EP_RDM"), ("efa", "efa_0-dgrm", "FI_EP_DGRAM"),
        ("efa;ofi_rxd", "efa_0-dgrm", "FI_EP_RDM")]


@pytest.mark.parametrize("name", ["fi_info.txt", "output.txt"])
def test_the_same_text_under_any_name_gives_the_same_verdict(tmp_path, capsys, name):
    (tmp_path / name).write_text(EFA)
    rc, doc, err = analyze_json(capsys, tmp_path / name)
    (h,) = doc["hosts"]
    assert (rc, h["verdict"], h["findings"]) == (0, "healthy", []) and doc["files"][0]["read_as"] == ["fi_info"]
    (tmp_path / name).write_text(SOCKETS_ONLY)
    rc, doc, err = analyze_json(capsys, tmp_path / name)
    (h,) = doc["hosts"]
    assert (h["verdict"], h["severity"], [f["kind"] for f in h["findings"]]) == (
        "nccl_config", "warning", ["fi_info_no_rdma_provider"])


def test_only_sockets_and_shared_memory_is_a_warning_of_the_nccl_configuration():
    facts, (f,) = parse_fi_info(SOCKETS_ONLY, "fi_info.txt")
    assert not facts["rdma"] and [p["core"] for p in facts["providers"]] == ["tcp", "shm"]
    assert (f["kind"], f["category"], f["severity"], f["rung"]) == ("fi_info_no_rdma_provider", "nccl_config",
                                                                   "warning", "none")
    assert "fall back to sockets" in f["message"] and f["source"] == "fi_info.txt:1"


def test_an_rdma_provider_without_a_reliable_endpoint_is_no_healthy_reading():
    dgram_only = EFA.split("provider: efa;ofi_rxd")[0].replace("type: FI_EP_RDM", "type: FI_EP_DGRAM")
    facts, findings = parse_fi_info(dgram_only, "fi_info.txt")
    assert [f["kind"] for f in findings] == ["fi_info_no_rdma_provider"]
    assert "reliable endpoint" in findings[0]["message"]


@pytest.mark.parametrize("line", ["fi_getinfo: -61", "fi_getinfo: -61 (No data available)"])
def test_fi_getinfo_61_says_no_provider_matched(tmp_path, capsys, line):
    facts, (f,) = parse_fi_info(line + "\n", "fi_info.txt")
    assert (f["kind"], f["category"], f["severity"], f["rung"]) == ("fi_info_no_provider", "nccl_config", "warning",
                                                                   "none")
    assert facts["failure"] == -61 and "no libfabric provider matched" in f["message"]
    # the command pasted above it names the provider asked for
    facts, (f,) = parse_fi_info("[root@gpu-st-p4d-1 ~]# fi_info -p efa\n" + line + "\n", "fi_info.txt")
    assert facts["asked"] == "efa" and "provider efa is not available on this node" in f["message"]
    (tmp_path / "paste.txt").write_text("$ fi_info -p efa\n" + line + "\n")
    rc, doc, err = analyze_json(capsys, tmp_path / "paste.txt")
    (h,) = doc["hosts"]
    assert (h["verdict"], h["severity"], [f["kind"] for f in h["findings"]]) == (
        "nccl_config", "warning", ["fi_info_no_provider"])
    assert "provider efa is not available on this node" in h["findings"][0]["message"]


def test_another_failure_code_is_unknown():
    facts, (f,) = parse_fi_info("fi_getinfo: -22\n", "fi_info.txt")
    assert (f["kind"], f["category"]) == ("fi_info_no_provider", "unknown") and "-22" in f["message"]


@pytest.mark.parametrize("text", [VERBOSE, LISTED, "$ fi_info -v\n" + VERBOSE + VERBOSE.replace("efa", "shm")])
def test_the_verbose_and_list_forms_are_found_by_content(tmp_path, capsys, text):
    (tmp_path / "paste.txt").write_text(text)
    rc, doc, err = analyze_json(capsys, tmp_path / "paste.txt")
    (h,) = doc["hosts"]
    assert (rc, h["verdict"], doc["files"][0]["read_as"]) == (0, "healthy", ["fi_info"])


def test_the_verbose_and_list_forms_are_read():
    facts, findings = parse_fi_info(VERBOSE, "fi_info.txt")
    assert findings == [] and [(p["provider"], p["domain"], p["type"], p["version"]) for p in facts["providers"]] == [
        ("efa", "efa_0-rdm", "FI_EP_RDM", "120.10")]
    facts, findings = parse_fi_info(LISTED, "fi_info.txt")
    assert findings == [] and [p["provider"] for p in facts["providers"]] == ["efa", "shm", "tcp", "ofi_rxm"]
    # a utility provider (ofi_rxm) moves no data itself: sockets and shared memory are all there is
    facts, findings = parse_fi_info(LISTED.split("efa:\n    version: 120.10\n")[1], "fi_info.txt")
    assert [f["kind"] for f in findings] == ["fi_info_no_rdma_provider"]
    assert "fall back to sockets" in findings[0]["message"]


def test_an_entry_cut_before_its_endpoint_type_is_unknown_never_healthy(tmp_path, capsys):
    cut = "provider: efa\n    fabric: EFA-fe80::39:beff:fe6e:c23\n    domain: efa_0-rdm\n"
    facts, (f,) = parse_fi_info(cut, "fi_info.txt")
    assert f["kind"] == "ib_unparseable" and "cut before its endpoint type: efa" in f["message"]
    (tmp_path / "fi_info.txt").write_text(cut)
    (h,) = analyze_paths([str(tmp_path / "fi_info.txt")])["hosts"]
    assert (h["verdict"], sorted(f["kind"] for f in h["findings"])) == ("unknown", ["ib_unparseable", "no_evidence"])
    rc, doc, err = analyze_json(capsys, tmp_path / "fi_info.txt")
    assert rc == 3 and "no usable evidence" in err  # never healthy


def test_a_paste_of_fi_info_and_ibv_devinfo_is_read_as_both(tmp_path, capsys):
    ibv = ("hca_id:\tmlx5_0\n\ttransport:\t\t\tInfiniBand (0)\n\tfw_ver:\t\t\t\t20.35.1012\n"
           "\tphys_port_cnt:\t\t\t1\n\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"
           "\t\t\tactive_mtu:\t\t4096 (5)\n\t\t\tlink_layer:\t\tInfiniBand\n")
    verbs = EFA.replace("efa_0-rdm", "mlx5_0").replace("provider: efa\n", "provider: verbs\n", 1)
    (tmp_path / "paste.txt").write_text("$ fi_info\n" + verbs + "\n$ ibv_devinfo\n" + ibv)
    rc, doc, err = analyze_json(capsys, tmp_path / "paste.txt")
    assert sorted(doc["files"][0]["read_as"]) == ["fi_info", "ibv_devinfo"]
    (h,) = doc["hosts"]
    assert h["verdict"] == "healthy"


def test_other_text_is_no_fi_info(tmp_path, capsys):
    assert parse_fi_info("provider and fabric: nothing here\nversion: 2.0\n", "x.txt") == ({}, [])
    assert parse_fi_info(b"\xff\xfe garbage", "x.txt") == ({}, [])
    # a word and a colon over an indented line that is no version is no -l listing
    (tmp_path / "notes.txt").write_text("Summary:\n    the run was fine\n")
    rc, doc, err = analyze_json(capsys, tmp_path / "notes.txt")
    assert doc is None or "fi_info" not in doc["files"][0].get("read_as", [])
