"""NVIDIA's Kubernetes device plugin's vocabulary (vocab/k8sdp.py, from NVIDIA/k8s-device-plugin's Go
source at v0.20.0, with the wordings of older releases back to the 2019 plugin) in the node reader (the
plugin is a node daemon: its lines are the node's, linefamily.GO_LOG_RE), as `kubectl logs` of the
nvidia-device-plugin pod prints them: klog's head from v0.12, Go's standard logger's ('2019/07/27 07:33:07 ')
before."""

from gpu_runbook import vocab
from gpu_runbook.joblog.emitter_lines import JOB_TABLES
from gpu_runbook.kernlog.nodelines import HOST_TABLES
from gpu_runbook.kernlog.prefilter import NEEDLES
from gpu_runbook.linefamily import line_family
from gpu_runbook.vocab import k8sdp
from tests.tools.vocab.coverage import engine_findings

# tests/fixtures/real/x36-06-k8s-allocatable-gpu-drop-no-log (NVIDIA/k8s-device-plugin#129, 2019): the
# plugin's whole start-up, as its 1.11 image printed it
START_2019 = ("2019/07/27 07:33:07 Loading NVML\n"
              "2019/07/27 07:33:07 Fetching devices.\n"
              "2019/07/27 07:33:07 Starting FS watcher.\n"
              "2019/07/27 07:33:07 Starting OS watcher.\n"
              "2019/07/27 07:33:07 Starting to serve on /var/lib/kubelet/device-plugins/nvidia.sock\n"
              "2019/07/27 07:33:07 Registered device plugin with Kubelet\n")
KLOG = "I0809 13:32:51.873541       1 %s] %s\n"
ERROR = "E0809 13:32:51.873541       1 %s] %s\n"
START_NOW = (KLOG % ("main.go:391", "Retrieving plugins.")
             + KLOG % ("server.go:142", "Starting to serve 'nvidia.com/gpu' on /var/lib/kubelet/device-plugins/nvidia-gpu.sock")
             + KLOG % ("server.go:149", "Registered device plugin for 'nvidia.com/gpu' with Kubelet")
             + KLOG % ("server.go:198", "Starting GRPC server for 'nvidia.com/gpu'"))


def findings(text):
    """What the engine makes of the plugin's lines, read as a capture is (both line readers)."""
    return [(f["kind"], f["category"], f["severity"]) for f in engine_findings("k8sdp", text.rstrip("\n"))
            if f["kind"] not in ("job_end_unknown", "capture_truncated")]


def serious(text):
    return [k for k in findings(text) if k[2] in ("warning", "critical") or k[0] == "unexplained_errors"]


def test_the_table_is_registered_with_its_pin_and_provenance():
    assert "k8sdp" in vocab.EMITTERS and "k8sdp" in HOST_TABLES and "k8sdp" not in JOB_TABLES
    assert k8sdp.VERSION == "v0.20.0" and len(k8sdp.COMMIT) == 40
    assert k8sdp.ORIGIN.startswith("https://github.com/NVIDIA/k8s-device-plugin")
    files = set(r[0].split("@")[0] for r in k8sdp.ROWS)
    assert {"internal/rm/health.go", "internal/plugin/server.go", "internal/plugin/factory.go"} <= files
    tags = set(r[0].split("@")[1] for r in k8sdp.ROWS if "@" in r[0])
    # a release of each era the pin no longer words as it does: klog (v0.15, v0.14, v0.12), the standard
    # logger (v0.10, v0.7), and 2019's plugin (v0.4.0; v0.17.4 and 1.0.0-beta are read, every wording of
    # theirs is the pin's or a newer release's)
    assert {"v0.15.1", "v0.14.5", "v0.12.3", "v0.10.0", "v0.7.3", "v0.4.0"} <= tags
    assert "v0.17.4" in k8sdp.__doc__ and "1.0.0-beta (" in k8sdp.__doc__
    assert all(not r[0].startswith(("vendor/", "internal/lm/", "cmd/gpu-feature-discovery")) for r in k8sdp.ROWS)


def test_every_row_is_read_back_as_the_table_says():
    from tests.tools.vocab.coverage import coverage
    (row,), bad = coverage(["k8sdp"], failures=10)
    assert row["matchable"] == row["messages"] == len(k8sdp.ROWS)
    assert row["agree"] == row["matchable"], bad


def test_the_2019_start_up_is_read_and_benign():
    assert serious(START_2019) == []
    assert not [f for f in findings(START_2019) if f[0] == "unexplained_errors"]
    assert all(line_family(line) == "node" for line in START_2019.splitlines())  # the node's lines
    for line in START_2019.splitlines():
        m = vocab.match_line(line)
        assert m is not None and m[0].name == "k8sdp" and m[1]["kind"] == vocab.BENIGN, line
    # and its klog successor's
    assert serious(START_NOW) == []


def test_the_2019_log_is_read_rather_than_refused(tmp_path):
    from gpu_runbook.cli import analyze_paths
    (tmp_path / "device-plugin.log").write_text(START_2019)
    analysis = analyze_paths([str(tmp_path)])
    read = [f for f in analysis["files"] if f["file"].endswith("device-plugin.log")]
    assert read and read[0]["read_as"], analysis["files"]


def test_nvml_failing_to_initialise_is_the_drivers_set_up():
    old = ("2019/07/27 07:33:07 Loading NVML\n"
           "2019/07/27 07:33:07 Failed to initialize NVML: could not load NVML library.\n"
           "2019/07/27 07:33:07 If this is a GPU node, did you set the docker default runtime to `nvidia`?\n"
           "2019/07/27 07:33:07 You can check the prerequisites at: https://github.com/NVIDIA/k8s-device-plugin"
           "#prerequisites\n")
    got = serious(old)
    assert got and set(got) == {("logged_driver_error", "driver", "warning")}
    now = (ERROR % ("factory.go:99", "Failed to initialize NVML: ERROR_LIBRARY_NOT_FOUND.")
           + ERROR % ("factory.go:119", "If this is a GPU node, did you configure the NVIDIA Container Toolkit?"))
    assert set(serious(now)) == {("logged_driver_error", "driver", "warning")}
    # as NVIDIA's other programs' NVML initialisation failures are (DCGM's, nvidia-container-cli's)
    for name, fmt in (("dcgmlog", "Failed to initialize NVML: %s"), ("container", "initialization error: %s")):
        row = [r for r in vocab.table(name).rows if r[2] == fmt][0]
        assert row[4:6] == ("driver", "warning")


def test_an_xid_the_plugin_reports_is_the_xid_readers():
    # the line is a node's (linefamily): the kernel-log reader's Xid reader takes it, by NVIDIA's catalog
    line = ("I0810 15:36:05.551834 1 health.go:169] XidCriticalError: Xid=48 on Device="
            "GPU-455e672a-1111-2222-3333-444455556666; marking device as unhealthy.")
    got = engine_findings("k8sdp", line)
    assert [(f["kind"], f["category"]) for f in got] == [("xid", "gpu_hardware")]
    # the row says so: kind xid (a message a dedicated reader found is said once, by it)
    rows = [r for r in k8sdp.ROWS if "XidCriticalError: Xid=" in r[2]]
    assert len(rows) == 4 and all(r[3:6] == ("xid", "unknown", "warning") for r in rows)
    # 2019's wording names the GPU as 'GPU=': read by the Xid it names (vocab.xid_named)
    old = "2019/10/20 07:33:07 XidCriticalError: Xid=79 on GPU=GPU-455e672a, the device will go unhealthy."
    got = engine_findings("k8sdp", old)
    assert [f["category"] for f in got] == ["gpu_hardware"] and got[0].get("xid") == 79


def test_a_gpu_withdrawn_otherwise_is_unknown_and_its_echo_is_info():
    line = KLOG % ("health.go:99", "unable to determine the supported events for GPU-455e672a: ERROR_UNKNOWN; "
                                   "marking it as unhealthy")
    assert ("logged_error", "unknown", "warning") in findings(line)
    echo = KLOG % ("server.go:279", "'nvidia.com/gpu' device marked unhealthy: GPU-455e672a")
    assert serious(echo) == []  # the health checker's own line above it carries the warning


def test_the_kubelet_and_the_configuration_are_unknown_warnings():
    for text in (ERROR % ("server.go:146", "Could not register device plugin: rpc error: code = Unimplemented"),
                 "2020/04/06 07:33:07 Could not contact Kubelet, retrying. Did you enable the device plugin feature "
                 "gate?\n",
                 ERROR % ("main.go:198", "unable to load config: unknown MIG strategy: mixd"),
                 ERROR % ("main.go:198", "error starting plugins: unable to create plugins: failed to construct "
                                         "resource managers: error building device map: invalid MIG configuration: "
                                         "more than one MIG device type present on node")):
        got = serious(text)
        assert got and set(got) == {("logged_error", "unknown", "warning")}, text


def test_the_markers_are_the_plugins_own_words():
    marks = vocab.markers(("k8sdp",))
    # the node reader's prefilter looks for them: every one is long enough to be its needle (never '.go:', which
    # every klog line of a busy Kubernetes node's kubelet holds)
    assert all(len(m) >= 4 for m in marks) and all(any(n in m for n in NEEDLES) for m in marks)
    assert ".go:" not in NEEDLES
    for line in (" iteration     1211/ 500000 | consumed samples: 1240064 | lm loss: 2.1E+00 | loss scale: 1.0 |",
                 "{'loss': 2.31, 'grad_norm': 0.8, 'learning_rate': 1e-05, 'epoch': 0.5}",
                 "Using strategy ddp with 8 devices; plugins: [MixedPrecisionPlugin]",
                 "2022-05-17 07:06:21,569 maskrcnn_benchmark INFO: Running with config:",
                 "[rank3]: worker 7 of the DataLoader finished"):
        assert not any(m in line for m in marks), line


def test_a_go_daemons_lines_are_the_nodes_and_a_jobs_glog_lines_stay_the_jobs():
    # klog's head names a .go file; PyTorch's C++ glog lines name .cpp files and stay the job reader's
    assert line_family((KLOG % ("server.go:146", "Could not register device plugin: rpc error")).rstrip()) == "node"
    for job_line in ("E0810 15:36:05.551834  1234 ProcessGroupNCCL.cpp:629] [Rank 1] Watchdog caught collective "
                     "operation timeout",
                     "[E510 00:18:19.328053719 ProcessGroupNCCL.cpp:629] [Rank 1] Watchdog caught collective",
                     "2024/05/01 10:00:01 epoch 3 step 120 loss 2.31",
                     # a training script's own logger in Go's date format: its errors stay the job's
                     "2024/05/01 10:00:01 RuntimeError: CUDA error: device-side assert triggered on GPU 3",
                     "2024/05/01 10:00:01 loading plugin ddp_comm_hook for device cuda:0"):
        assert line_family(job_line) is None, job_line
    # and the job reader leaves the plugin's line to the node reader (never 'unexplained' twice)
    assert findings(ERROR % ("server.go:146", "Could not register device plugin: rpc error: code = Unimplemented")) \
        == [("logged_error", "unknown", "warning")]


def test_a_kernel_lines_kubelet_path_is_no_needle_of_the_node_reader():
    # a busy Kubernetes node's kernel log names /var/lib/kubelet in thousands of mount lines: the plugin's
    # markers say 'Kubelet' as the plugin does, never the path's word (the node reader's prefilter)
    from gpu_runbook.kernlog.prefilter import has_needle
    assert not has_needle("kern  :info  : 2026-12-02T00:00:00,563054+00:00 xfs filesystem being remounted at "
                          "/var/lib/kubelet/pods/c0398710/volume-subpaths supports timestamps until 2038")
    assert has_needle("2020/04/06 07:33:07 Could not contact Kubelet, retrying. Did you enable the device plugin "
                      "feature gate?")
