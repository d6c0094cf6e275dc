"""DCGM's own log (nv-hostengine.log, common/DcgmLoggingImpl.h DcgmLogFormatter: 'YYYY-mm-dd
HH:MM:ss.sss <severity> [<PID>:<TID>] <message> [<file>:<line>] [<function>]') is a node daemon's
log: its lines are the node's, and those of a module that did not load or found none of its
hardware (vocab/dcgm.py, from DCGM's source) are said as information, not a fault; any other
error of it stays not understood."""

from gpu_runbook.cli import analyze_paths
from gpu_runbook.linefamily import is_node_line

# a DGX A100 (x86) with DCGM 3.3: the Grace-only system monitor refuses to start, the host engine goes on
SYSMON = (
    "2024-02-01 14:12:01.205 ERROR [9596:9598] [[SysMon]] Couldn't open CPU Vendor info file file "
    "'/sys/devices/soc0/soc_id' for reading: 'No such file or directory' "
    "[/workspaces/dcgm-rel_dcgm_3_3-postmerge/modules/sysmon/DcgmSystemMonitor.cpp:261] "
    "[DcgmSystemMonitor::ReadCpuVendorAndModel]\n"
    "2024-02-01 14:12:01.207 ERROR [9596:9598] [[SysMon]] A runtime exception occured when creating module. Ex: "
    "Incompatible hardware vendor for sysmon. [/workspaces/dcgm-rel_dcgm_3_3-postmerge/modules/DcgmModule.h:146] "
    "[{anonymous}::SafeWrapper]\n"
    "2024-02-01 14:12:01.207 ERROR [9596:9598] Failed to load module 9 "
    "[/workspaces/dcgm-rel_dcgm_3_3-postmerge/dcgmlib/src/DcgmHostEngineHandler.cpp:1831] "
    "[DcgmHostEngineHandler::LoadModule]\n")
NSCQ = ("2024-04-02 12:54:06.828 ERROR [1264985:1264994] [[NvSwitch]] Not attached to NvSwitches. Aborting "
        "[/workspaces/dcgm-rel_dcgm_3_1-postmerge/modules/nvswitch/DcgmNvSwitchManager.cpp:967] "
        "[DcgmNs::DcgmNvSwitchManager::ReadNvSwitchStatusAllSwitches]\n")
# an error of the host engine no row explains
OTHER = ("2024-04-02 12:55:00.001 ERROR [1264985:1264994] Got error -15 from NVML for GPU 3 while reading field "
         "155 [/workspaces/dcgm-rel_dcgm_3_1-postmerge/dcgmlib/src/DcgmCacheManager.cpp:4242] "
         "[DcgmCacheManager::BufferOrCacheLatestGpuValue]\n")


def host(tmp_path, text):
    d = tmp_path / "gpu-a-07"
    d.mkdir(exist_ok=True)
    (d / "nv-hostengine.log").write_text(text)
    (h,) = analyze_paths([str(d)])["hosts"]
    return h


def test_a_module_that_did_not_load_or_found_no_hardware_is_information(tmp_path):
    h = host(tmp_path, SYSMON + NSCQ)
    assert h["verdict"] == "healthy"
    said = [f for f in h["findings"] if f.get("name") == "DCGM"]
    assert said and all(f["severity"] == "info" for f in said)
    assert any("9 Sysmon" in f["message"] for f in said)  # the module's number named from dcgm_structs.h
    assert any("NSCQ" in f["message"] for f in said)


def test_another_error_of_the_host_engine_is_not_understood(tmp_path):
    h = host(tmp_path, SYSMON + OTHER)
    assert h["verdict"] == "unknown"
    (f,) = [f for f in h["findings"] if f["kind"] == "unexplained_errors"]
    assert "DcgmCacheManager" in f["evidence"]


def test_its_lines_are_the_nodes():
    for line in (SYSMON + NSCQ + OTHER).splitlines():
        assert is_node_line(line)
    # a program's own Python logging ('2024-02-01 14:12:01,205 ERROR ...') is not DCGM's
    assert not is_node_line("2024-02-01 14:12:01,205 ERROR root: training failed")
    assert not is_node_line("2024-02-01 14:12:01.205 ERROR training failed [train.py:10]")



def test_dcgms_return_strings_said_by_its_callers_are_read_by_what_they_say_of_the_node(tmp_path):
    from gpu_runbook.joblog import parse_job_logs
    # dcgm-exporter (go-dcgm) after its own words: the monitoring stack's versions disagree (the driver stack)
    exporter = 'time="2022-07-19T14:22:41Z" level=fatal msg="Error getting device busid: API version mismatch"\n'
    _facts, found = parse_job_logs({"dcgm-exporter.log": exporter})
    assert [(f["category"], f["severity"]) for f in found if f.get("name") == "DCGM"] == [("driver", "warning")]
    # a call of DCGM's own (its profiling module) failed: information, not a reading of the GPUs
    h = host(tmp_path, "2026-06-10 03:10:16.478 ERROR [69:98] [[Profiling]] Got error from GetSamples: -37 The "
             "third-party Profiling module returned an unrecoverable error [/builds/dcgm/modules/profiling/"
             "DcgmModuleProfiling.cpp:1627] [DcgmModuleProfiling::ReadGpuMetrics]\n")
    assert [f["severity"] for f in h["findings"] if f.get("name") == "DCGM"] == ["info"]
