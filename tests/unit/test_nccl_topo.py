"""NCCL's topology dump (NCCL_TOPO_DUMP_FILE, src/graph/xml.cc ncclTopoDumpXmlToFile), read by its content:
the GPUs and NICs NCCL found, and a NIC it cannot use GPUDirect RDMA with (round x38 brought one: a
T600 and a RoCE NIC, NVIDIA/nccl-tests#329)."""

from gpu_runbook.cli import analyze_paths
from gpu_runbook.content import plan
from gpu_runbook.nccl_topo import parse_nccl_topo
from gpu_runbook.timeutil import UTC

DUMP = ('<system version="1">\n'
        '  <cpu numaid="1" affinity="aaaa,aaaaaaaa" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="85">\n'
        '    <pci busid="0000:af:00.0" class="0x020000" vendor="0x15b3" device="0x1019" subsystem_vendor="0x15b3" '
        'subsystem_device="0x0008" link_speed="8.0 GT/s PCIe" link_width="16">\n'
        '      <nic>\n'
        '        <net name="roce0" dev="0" speed="100000" port="1" latency="0.000000" guid="0xe6fb480003f6ceb8" '
        'maxconn="262144" gdr="0"/>\n'
        '      </nic>\n'
        '    </pci>\n'
        '    <pci busid="0000:d8:00.0" class="0x030000" vendor="0x10de" device="0x1fb1" subsystem_vendor="0x10de" '
        'subsystem_device="0x1488" link_speed="8.0 GT/s PCIe" link_width="16">\n'
        '      <gpu dev="0" sm="75" rank="0" gdr="1">\n'
        '        <nvlink target="0000:07:00.0" count="6" tclass="0x068000"/>\n'
        '      </gpu>\n'
        '    </pci>\n'
        '  </cpu>\n'
        '</system>\n')


def test_the_dump_names_its_gpus_and_nics_and_a_nic_without_gdr():
    facts, found = parse_nccl_topo(DUMP)
    assert facts["closed"] and facts["cpus"] == 1
    assert facts["gpus"] == [{"busid": "0000:d8:00.0", "dev": 0, "rank": 0, "sm": 75, "gdr": "1", "nvlinks": 6}]
    assert facts["nics"] == [{"name": "roce0", "busid": "0000:af:00.0", "speed_mbps": 100000, "port": 1, "gdr": "0"}]
    [f] = found
    assert (f["kind"], f["category"], f["severity"]) == ("nccl_topo_no_gdr", "nccl_config", "info")
    assert "roce0" in f["message"] and f["source"] == "nccl-topo.xml:5"
    # with gdr on, or with no GPU NCCL could pair it with, nothing to say
    assert parse_nccl_topo(DUMP.replace('gdr="0"', 'gdr="1"'))[1] == []
    assert parse_nccl_topo(DUMP.replace('<gpu dev="0" sm="75" rank="0" gdr="1">', "<gpux>"))[1] == []


def test_it_is_found_by_content_in_a_paste_and_read_whole_is_a_reading_of_the_node(tmp_path):
    paste = "root@gpu01:~# cat /tmp/topo.xml\n" + DUMP + "root@gpu01:~# \n"
    assert "nccl-topo.xml" in plan(paste).blocks
    (tmp_path / "paste.txt").write_text(paste)
    (h,) = analyze_paths([str(tmp_path / "paste.txt")], tz=UTC)["hosts"]
    assert h["host"] == "gpu01" and h["verdict"] == "healthy"
    assert [f["kind"] for f in h["findings"]] == ["nccl_topo_no_gdr"]


def test_a_dump_cut_before_its_end_is_no_claim_of_health(tmp_path):
    cut = DUMP.split("    <pci busid=\"0000:d8")[0]
    facts, _found = parse_nccl_topo(cut)
    assert not facts["closed"] and facts["gpus"] == []
    (tmp_path / "topo.xml").write_text(cut)
    out = analyze_paths([str(tmp_path / "topo.xml")], tz=UTC)
    assert all(h["verdict"] != "healthy" for h in out["hosts"])


def test_markup_that_is_not_an_element_line_is_no_part_of_it():
    facts, found = parse_nccl_topo('<system version="1">\n<script>x</script>\n<gpu dev="zz" rank=1>\n</system>\n')
    # the <script> line is no element of the dump; the <gpu> is, its unquoted or odd values read as unknown
    assert facts["lines"] == 3 and found == []
    assert [(g["dev"], g["rank"]) for g in facts["gpus"]] == [(None, None)]
