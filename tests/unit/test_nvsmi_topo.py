"""nvidia-smi topo -m (nvsmi/topo.py): read by content under any name; uniform NVLink or none at all
is a healthy reading, a GPU below the others' NVLink count (or with none where they are all linked)
is nvlink_inactive on that GPU, and a matrix cut, asymmetric or with unknown cells is unknown, never
healthy. The 4-GPU matrix is a real node's; the 8-GPU ones are an HGX H100's layout (NV18 on every
pair) with one GPU changed."""

import pytest

from gpu_runbook.cli import analyze_paths
from gpu_runbook.nvsmi.holders import parse_topo_peers
from gpu_runbook.nvsmi.topo import parse_nvidia_smi_topo, read_matrix
from tests.unit.test_read_by_content import analyze_json
from tests.unit.test_reset_holders import TOPO as BRIDGED_PAIRS

REAL = ("        GPU0    GPU1    GPU2    GPU3    NIC0    NIC1    NIC2    NIC3    CPU Affinity    NUMA Affinity   "
        "GPU NUMA ID\n"
        "GPU0     X      NV6     NV6     NV6     PIX     SYS     SYS     SYS     6,14,22,30      3               N/A\n"
        "GPU1    NV6      X      NV6     NV6     SYS     PIX     SYS     SYS     4,12,20,28      1               N/A\n"
        "GPU2    NV6     NV6      X      NV6     SYS     SYS     PIX     SYS     7,15,23,31      7               N/A\n"
        "GPU3    NV6     NV6     NV6      X      SYS     SYS     SYS     PIX     5,13,21,29      5               N/A\n"
        "NIC0    PIX     SYS     SYS     SYS      X      SYS     SYS     SYS\n"
        "NIC1    SYS     PIX     SYS     SYS     SYS      X      SYS     SYS\n"
        "NIC2    SYS     SYS     PIX     SYS     SYS     SYS      X      SYS\n"
        "NIC3    SYS     SYS     SYS     PIX     SYS     SYS     SYS      X \n\n"
        "Legend:\n\n  X    = Self\n"
        "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)\n")


def matrix(n, cell, nics=(), legend=True):
    """An n-GPU topo -m whose GPU pair (i, j) reads cell(i, j), NICs named by ``nics``."""
    cols = ["GPU%d" % i for i in range(n)] + ["NIC%d" % i for i in range(len(nics))]
    out = ["\t" + "\t".join(cols) + "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID"]
    for i in range(n):
        cells = [" X " if i == j else cell(i, j) for j in range(n)] + [
            "PIX" if k == i else "SYS" for k in range(len(nics))]
        cpus = "0-55,112-167" if i < n // 2 else "56-111"
        out.append("GPU%d\t%s\t%s\t%d\t\tN/A" % (i, "\t".join(cells), cpus, i // 4))
    for k in range(len(nics)):
        out.append("NIC%d\t%s" % (k, "\t".join(["PIX" if i == k else "SYS" for i in range(n)] +
                                               [" X " if m == k else "SYS" for m in range(len(nics))])))
    if legend:
        out += ["", "Legend:", "", "  X    = Self", "  NV#  = Connection traversing a bonded set of # NVLinks", ""]
        if nics:
            out += ["NIC Legend:", ""] + ["  NIC%d: %s" % (k, name) for k, name in enumerate(nics)]
    return "\n".join(out) + "\n"


def hgx(odd=None, odd_cell="NV16"):
    return matrix(8, lambda i, j: odd_cell if odd in (i, j) else "NV18", nics=("mlx5_0", "mlx5_3"))


def test_a_uniform_matrix_is_read_and_healthy():
    facts, findings = parse_nvidia_smi_topo(REAL, "nvidia-smi-topo.txt")
    assert findings == [] and facts["read_whole"] and facts["pattern"] == "uniform" and facts["gpus"] == [0, 1, 2, 3]
    assert facts["nvlinks"][0] == [0, 1, 6] and all(k == 6 for _a, _b, k in facts["nvlinks"])
    assert facts["gpu_nic"]["GPU2"] == {"NIC0": "SYS", "NIC1": "SYS", "NIC2": "PIX", "NIC3": "SYS"}
    assert facts["affinity"]["GPU0"] == {"cpu_affinity": "6,14,22,30", "numa_affinity": "3", "gpu_numa_id": "N/A"}
    facts, findings = parse_nvidia_smi_topo(hgx(), "t.txt")
    assert findings == [] and facts["pattern"] == "uniform"
    assert facts["nic_legend"] == {"NIC0": "mlx5_0", "NIC1": "mlx5_3"}


@pytest.mark.parametrize("name", ["nvidia-smi-topo.txt", "output.txt"])
def test_the_same_text_under_any_name_gives_the_same_verdict(tmp_path, capsys, name):
    (tmp_path / name).write_text(REAL)
    rc, doc, err = analyze_json(capsys, tmp_path / name)
    (h,) = doc["hosts"]
    assert (rc, h["verdict"], h["findings"]) == (0, "healthy", [])
    assert doc["files"][0]["read_as"] == ["nvidia-smi topo -m"]
    (tmp_path / name).write_text(hgx(odd=3))
    rc, doc, err = analyze_json(capsys, tmp_path / name)
    (h,) = doc["hosts"]
    assert (h["verdict"], h["severity"], [(f["kind"], f["gpu"]["index"]) for f in h["findings"]]) == (
        "gpu_hardware", "warning", [("nvlink_inactive", 3)])


def test_a_pcie_box_without_nvlink_is_healthy():
    facts, findings = parse_nvidia_smi_topo(matrix(4, lambda i, j: "NODE" if i // 2 == j // 2 else "SYS"), "t.txt")
    assert findings == [] and facts["pattern"] == "none"


def test_a_gpu_with_fewer_nvlinks_than_the_rest_has_links_down():
    facts, (f,) = parse_nvidia_smi_topo(hgx(odd=3), "nvidia-smi-topo.txt")
    assert facts["pattern"] == "degraded"
    assert (f["kind"], f["category"], f["severity"], f["gpu"]["index"]) == ("nvlink_inactive", "gpu_hardware",
                                                                          "warning", 3)
    assert "NV16" in f["message"] and "NV18" in f["message"] and f["source"] == "nvidia-smi-topo.txt:5"
    assert f["evidence"].startswith("GPU3")


@pytest.mark.parametrize("cell", ["SYS", "NODE", "PHB"])
def test_a_gpu_without_nvlink_among_linked_peers_has_all_its_links_down(tmp_path, cell):
    facts, (f,) = parse_nvidia_smi_topo(hgx(odd=5, odd_cell=cell), "nvidia-smi-topo.txt")
    assert (f["kind"], f["severity"], f["gpu"]["index"]) == ("nvlink_inactive", "critical", 5)
    assert "no NVLink" in f["message"]
    (tmp_path / "topo.log").write_text(hgx(odd=5, odd_cell=cell))
    (h,) = analyze_paths([str(tmp_path / "topo.log")])["hosts"]
    assert (h["verdict"], h["severity"], h["rung"]) == ("gpu_hardware", "critical", "reboot")


def test_two_gpus_below_the_rest_are_both_named():
    text = matrix(8, lambda i, j: "NV12" if {i, j} & {2, 6} else "NV18")
    facts, findings = parse_nvidia_smi_topo(text, "t.txt")
    assert sorted(f["gpu"]["index"] for f in findings) == [2, 6]


def test_nvlink_bridges_on_pairs_are_read_but_no_verdict(tmp_path):
    # PCIe cards bridged two by two (and holders' capture): no GPU is below a linked core
    facts, findings = parse_nvidia_smi_topo(BRIDGED_PAIRS, "t.txt")
    assert findings == [] and facts["read_whole"] and facts["pattern"] == "mixed"
    assert parse_topo_peers(BRIDGED_PAIRS) == {0: [1, 2], 1: [0, 3], 2: [0], 3: [1]}
    (tmp_path / "topo.txt").write_text(BRIDGED_PAIRS)
    (h,) = analyze_paths([str(tmp_path / "topo.txt")])["hosts"]
    assert h["verdict"] != "healthy"  # nothing in the matrix alone says it is as built


def test_an_asymmetric_matrix_is_unknown(tmp_path, capsys):
    lines = REAL.splitlines(True)
    lines[3] = lines[3].replace("NV6     NV6      X", "SYS     NV6      X")  # GPU2->GPU0 SYS, GPU0->GPU2 NV6
    text = "".join(lines)
    facts, (f,) = parse_nvidia_smi_topo(text, "nvidia-smi-topo.txt")
    assert (f["kind"], f["category"], f["severity"]) == ("nvsmi_topo_unreadable", "unknown", "warning")
    assert "GPU0->GPU2 is NV6 but GPU2->GPU0 is SYS" in f["message"] and not facts["read_whole"]
    (tmp_path / "paste.txt").write_text(text)
    rc, doc, err = analyze_json(capsys, tmp_path / "paste.txt")
    (h,) = doc["hosts"]
    assert (h["verdict"], [f["kind"] for f in h["findings"]]) == ("unknown", ["nvsmi_topo_unreadable"])


@pytest.mark.parametrize("keep", [3, 6])
def test_a_matrix_cut_before_every_gpus_row_is_never_healthy(tmp_path, capsys, keep):
    text = "\n".join(hgx().splitlines()[:keep]) + "\n"
    facts, (f,) = parse_nvidia_smi_topo(text, "nvidia-smi-topo.txt")
    assert f["kind"] == "nvsmi_topo_unreadable" and "is cut" in f["message"] and f["evidence"] == "cut"
    assert "GPU7" in f["message"]
    (tmp_path / "topo.txt").write_text(text)
    rc, doc, err = analyze_json(capsys, tmp_path / "topo.txt")
    assert doc["hosts"][0]["verdict"] == "unknown" and rc == 1


def test_a_row_cut_mid_line_is_cut_and_an_unknown_cell_unreadable():
    text = hgx()
    cut = text[:text.index("\nGPU7") + 20]
    facts, (f,) = parse_nvidia_smi_topo(cut, "t.txt")
    assert "is cut" in f["message"] and "GPU7 holds" in f["message"]
    facts, (f,) = parse_nvidia_smi_topo(REAL.replace("PIX     SYS     SYS     SYS     6,14", "PIX     S?S     SYS     "
                                                     "SYS     6,14"), "t.txt")
    assert f["kind"] == "nvsmi_topo_unreadable" and "'S?S'" in f["message"] and "cannot be read whole" in f["message"]


def test_older_drivers_name_the_hcas_in_the_header():
    old = ("\t\x1b[4mGPU0\tGPU1\tmlx5_0\tmlx5_1\tCPU Affinity\x1b[0m\n"
           "GPU0\t X \tNV2\tPIX\tSYS\t0-19\nGPU1\tNV2\t X \tSYS\tPIX\t20-39\n"
           "mlx5_0\tPIX\tSYS\t X \tSYS\t\nmlx5_1\tSYS\tPIX\tSYS\t X \t\n\nLegend:\n\n  X   = Self\n")
    facts, findings = parse_nvidia_smi_topo(old, "t.txt")
    assert findings == [] and facts["pattern"] == "uniform"
    assert facts["gpu_nic"]["GPU1"] == {"mlx5_0": "SYS", "mlx5_1": "PIX"}
    assert read_matrix(old)["nic_legend"] == {}


def test_other_text_is_no_matrix():
    assert parse_nvidia_smi_topo("GPU0 is fine\n", "x.txt") == ({}, [])
    assert parse_nvidia_smi_topo(b"\xff\xfe garbage", "x.txt") == ({}, [])
    assert parse_topo_peers("") == {} and parse_topo_peers("GPU0\nsegfault") == {}
