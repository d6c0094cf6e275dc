"""What the real gpu_health_facts imports on a node, through ansible on the local connection.

An Ansible payload carries the engine as source, so every module a gather imports is compiled on
the node on every run. A live gather reads ``nvidia-smi -q -x``, the compute-apps CSV, dmesg and
the IB sysfs tree; the other formats' parsers (and the capture reader) are imported only when their
text is read. Both halves are checked here: a live gather does not import them, and a gather that
reads those formats finds them in the payload (Ansible's module_utils finder ships imports made
inside functions too)."""

import json
import os
import subprocess
import sys

from tests.conftest import BIN, FIXTURES, REPO, ansible_env, make_live_host, write_tool

ENGINE = "ansible.module_utils.gpu_runbook."
XML = os.path.join(FIXTURES, "nvsmi", "xml-telegraf-a10g", "nvidia-smi-q.xml")
KERN_LOG = os.path.join(FIXTURES, "kernlog", "002-gpud-xid48-63-94-dbe-row-remap", "kern.log")

# parsers of formats a live gather does not read, and the rungs' helpers
NOT_LIVE = ("nvsmi.q_text", "nvsmi.table", "nvsmi.query_csv", "nvsmi.reset", "infiniband.ibstat",
            "infiniband.ibv_devinfo", "infiniband.perfquery", "infiniband.iblinkinfo", "infiniband.restart",
            "kernlog.filescan", "capture", "textio", "joblog")
LIVE = ("analyze", "probes", "nvsmi.q_xml", "nvsmi.apps", "kernlog.scanner", "infiniband.sysfs")


def _interpreter_logging_imports(tmp_path):
    """An interpreter that runs Python with -X importtime (inherited by any Python it starts, as
    PYTHONPROFILEIMPORTTIME) and keeps its stderr in a file."""
    log = tmp_path / "importtime.log"
    wrapper = tmp_path / "python-importtime"
    wrapper.write_text("#!/bin/sh\nPYTHONPROFILEIMPORTTIME=1 exec %s \"$@\" 2>>%s\n" % (sys.executable, log))
    wrapper.chmod(0o755)
    return wrapper, log


def _imported(log):
    return {line.rsplit("|", 1)[1].strip() for line in log.read_text().splitlines() if line.startswith("import time:")}


def _gather(tmp_path, inv, args, env=None):
    """gpu_health_facts on every host of ``inv`` through the real ``ansible``; -> {host: gpu_health}."""
    tree = tmp_path / "tree"
    proc = subprocess.run([os.path.join(BIN, "ansible"), "all", "-i", str(inv), "-m", "gpu_health_facts",
                           "-a", json.dumps(args), "--tree", str(tree)],
                          cwd=REPO, env=ansible_env(env), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = {}
    for host in sorted(os.listdir(tree)):
        with open(tree / host) as fh:
            out[host] = json.load(fh)["ansible_facts"]["gpu_health"]
    return out


def test_a_live_gather_imports_only_the_parsers_of_what_it_reads(tmp_path):
    h = make_live_host(tmp_path)
    wrapper, log = _interpreter_logging_imports(tmp_path)
    write_tool(h["bin"], "nvidia-smi", 'case "$*" in *query-compute-apps*) exit 0;; esac\ncat %s\n' % XML)
    write_tool(h["bin"], "dmesg", "cat %s\n" % KERN_LOG)
    inv = tmp_path / "live.ini"
    inv.write_text("node-live ansible_connection=local ansible_python_interpreter=%s\n" % wrapper)
    res = _gather(tmp_path, inv, {"hostname": "node-live", "sysfs_root": str(h["sysfs"])},
                  env={"PATH": "%s:%s" % (h["bin"], os.environ["PATH"])})["node-live"]
    # it read all three sources: the XML's one A10G, the log's Xid 48, the 8 HCAs in sysfs
    assert res["mode"] == "live"
    assert (res["facts"]["gpu"]["format"], res["facts"]["gpu"]["count"]) == ("xml", 1)
    assert any(f.get("xid") == 48 for f in res["findings"]), res["findings"]
    assert res["facts"]["ib"]["format"] == "ib-sysfs" and len(res["facts"]["ib"]["ports"]) == 8
    imported = _imported(log)
    assert {ENGINE + m for m in LIVE} <= imported, sorted(m for m in imported if m.startswith(ENGINE))
    assert not {ENGINE + m for m in NOT_LIVE} & imported


QUERY_GPU_CSV = ("index, pci.bus_id, clocks_throttle_reasons.active\n0, 00000000:19:00.0, 0x0000000000000001\n"
                 "1, 00000000:3B:00.0, 0x0000000000000088\n")


def _capture(root, name, files):
    d = root / name
    d.mkdir()
    for fname, src in files.items():
        if src.startswith("/"):
            with open(src) as fh:
                src = fh.read()
        (d / fname).write_text(src)
    return d


def test_every_format_a_live_gather_does_not_import_is_in_the_payload(tmp_path):
    ib = os.path.join(FIXTURES, "ib")
    caps = {
        "node-table": _capture(tmp_path, "table", {
            "nvidia-smi.txt": os.path.join(FIXTURES, "nvsmi", "009-gpud-smi-table-h100x8-healthy", "nvidia-smi.txt"),
            "ibstat.txt": os.path.join(FIXTURES, "ib", "010-gpud-ibstat-h100-roce-2of8-down", "ibstat.txt"),
            "perfquery.txt": os.path.join(ib, "043-ibexporter-perfquery-switch-discards-linkdowned", "perfquery.txt"),
            "kern.log": KERN_LOG}),
        "node-csv": _capture(tmp_path, "csv", {
            "nvidia-smi-query-gpu.csv": QUERY_GPU_CSV,
            "ibv_devinfo.txt": os.path.join(ib, "ibv_devinfo-heioy-mlx4-2hca-port2-down", "ibv_devinfo.txt"),
            "iblinkinfo.txt": os.path.join(ib, "iblinkinfo-xcat-edr-2node", "iblinkinfo.txt")}),
    }
    inv = tmp_path / "hosts.ini"
    inv.write_text("".join("%s ansible_connection=local ansible_python_interpreter=%s capture_dir=%s\n"
                           % (host, sys.executable, d) for host, d in caps.items()))
    res = _gather(tmp_path, inv, {"hostname": "{{ inventory_hostname }}", "capture_dir": "{{ capture_dir }}"})
    assert sorted(res) == sorted(caps)
    kinds = {h: {f["kind"] for f in r["findings"]} for h, r in res.items()}
    for host, r in res.items():
        assert not kinds[host] & {"parser_error", "ib_unparseable", "nvsmi_unparseable"}, (host, r["findings"])
    table = res["node-table"]["facts"]
    assert (table["gpu"]["format"], table["gpu"]["count"]) == ("table", 8)
    assert table["ib"]["format"] == "ibstat" and table["perfquery"]["format"] == "perfquery"
    assert {"ib_port_down", "ib_link_downed"} & kinds["node-table"], kinds["node-table"]
    assert any(f.get("xid") == 48 for f in res["node-table"]["findings"])  # the log file, read by filescan
    csv = res["node-csv"]["facts"]
    assert (csv["gpu"]["format"], csv["gpu"]["count"]) == ("csv", 2)
    assert "hw_slowdown" in kinds["node-csv"]
    assert csv["ib"]["format"] == "ibv_devinfo" and csv["iblinkinfo"]["format"] == "iblinkinfo"
