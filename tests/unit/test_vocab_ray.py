"""Ray's vocabulary (vocab/ray.py, from the ray wheel: its Python files and the message literals of
its raylet, GCS server and core worker) in the job reader, as the driver of a vLLM / verl / Ray
Train job prints Ray's lines: its logger's, an actor's behind '(Actor pid=N, ip=A) ', the
raylet's behind '(raylet) '."""

from gpu_runbook import vocab
from gpu_runbook.joblog import parse_job_logs
from gpu_runbook.joblog.emitter_lines import JOB_TABLES, emitter_markers
from gpu_runbook.vocab import ray

PY = "2024-05-01 10:00:%02d,123\t%s %s -- %s\n"
CPP = "(raylet) [2024-05-01 10:00:%02d,123 %s 1234 5678] %s: %s\n"
ACTOR = "(RayWorkerWrapper pid=1234, ip=10.0.0.2) "
HEALTHY_START = (
    PY % (1, "INFO", "worker.py:1841", "Connecting to existing Ray cluster at address: 10.0.0.1:6379...")
    + PY % (2, "INFO", "worker.py:2027", "Connected to Ray cluster. View the dashboard at 127.0.0.1:8265 ")
    + PY % (3, "INFO", "worker.py:2027", "Started a local Ray instance. View the dashboard at 127.0.0.1:8265 ")
    + ACTOR + "INFO 05-01 10:00:05 model_runner.py:1060] Loading model weights took 14.9888 GB\n"
)
# torchrun-like end (emitter_lines.SUCCESS): a run that ended well, so no job_end_unknown
DONE = "Done waiting for other agents. Elapsed: 0.5 seconds\n"


def findings(text):
    _facts, found = parse_job_logs({"driver.log": text})
    return [(f["kind"], f["category"], f["severity"]) for f in found if f["kind"] != "job_end_unknown"]


def serious(text):
    return [k for k in findings(text) if k[2] in ("warning", "critical") or k[0] == "unexplained_errors"]


def test_the_table_is_registered_with_its_pin_and_provenance():
    assert "ray" in vocab.EMITTERS and "ray" in JOB_TABLES
    assert ray.VERSION == "2.60.0" and len(ray.COMMIT) == 40 and ray.ORIGIN.startswith("https://pypi.org/project/ray/")
    files = set(r[0].split("@")[0] for r in ray.ROWS)
    assert "ray/exceptions.py" in files and "ray/core/src/ray/raylet/raylet" in files
    assert any(r[0].endswith("@2.49.2") for r in ray.ROWS)  # the wordings the pin no longer prints


def test_a_node_marked_dead_is_a_node_failure():
    line = PY % (9, "WARNING", "worker.py:2192", (
        "The node with node id: 9426f44574cce4866be798cfed308f2d3e21ba69487d422872cdd6e3 and address: "
        "10.130.0.113 and node name: 10.130.0.113 has been marked dead because the detector has missed too many "
        "heartbeats from it. This can happen when a \t(1) raylet crashes unexpectedly (OOM, etc.) "))
    line += "\t(2) raylet has lagging heartbeats due to slow network or busy workload.\n"
    assert ("logged_node_failure", "unknown", "critical") in findings(HEALTHY_START + line)
    # and a task whose node died under it, as the core worker says so
    task = ("Task failed because the node it was running on is dead or unavailable. Node IP: 10.83.9.118, node "
            "ID: 262a3ba829352c16a66c49578b9f1c5506cea9b1503c2d65e984e53d. This can happen if the node was "
            "preempted, had a hardware failure, or its raylet crashed unexpectedly. To see node death information, "
            "use `ray list nodes --filter node_id=262a`, check the Ray dashboard cluster page, search the node ID "
            "in the GCS logs, or use `ray logs raylet.out -ip 10.83.9.118`.")
    assert ("logged_node_failure", "unknown", "critical") in findings("ray.exceptions.NodeDiedError: " + task + "\n")


def test_the_memory_monitors_kill_is_a_memory_finding():
    line = ("(raylet) Task _map_task failed due to oom. There are infinite oom retries remaining, so the task will "
            "be retried. Error: 1 worker(s) were killed due to the node running low on memory. Memory on the node "
            "(IP: 10.0.50.112, ID: 4cb25bc0) was 28.62GB used / 30.00GB limit (0.954017)\n")
    got = findings(HEALTHY_START + line)
    assert ("oom_kill", "memory_leak", "warning") in got
    # Ray before 2.55 worded it otherwise
    old = ACTOR + "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.\n"
    assert ("oom_kill", "memory_leak", "warning") in findings(old)


def test_an_actor_that_died_alone_is_unknown_never_healthy():
    line = ("ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n")
    got = findings(HEALTHY_START + line)
    assert got and all(k[1] == "unknown" for k in got if k[2] in ("warning", "critical"))
    assert any(k[2] == "warning" for k in got)
    # the worker's death, as the raylet words it: a consequence, no cause named
    line = CPP % (7, "E", "node_manager.cc:1302", "A worker died or was killed while executing a task by an "
                  "unexpected system error. To troubleshoot the problem, check the logs for the dead worker.")
    assert ("logged_error", "unknown", "warning") in findings(line)


def test_the_users_function_raising_is_the_application():
    line = ("ray.exceptions.RayTaskError(ValueError): ray::train_func() (pid=4242, ip=10.0.0.3)\n")
    assert any(k[1] == "application" for k in findings(line))


def test_a_resource_request_that_cannot_be_met_is_the_jobs_configuration():
    line = ("(autoscaler +1m2s) Error: No available node types can fulfill resource request {'GPU': 8.0}. Add "
            "suitable node types to this cluster to resolve this issue.\n")
    assert ("logged_application_error", "application", "warning") in findings(line)


def test_gcs_unreachable_at_start_up_is_read_as_pytorchs_store():
    line = CPP % (4, "E", "gcs_client.cc:120", "Failed to connect to GCS within 60 seconds. GCS may have been "
                  "killed. It's either GCS is terminated by `ray stop` or is killed unexpectedly. If it is killed "
                  "unexpectedly, see the log file gcs_server.out.")
    assert ("launch_rendezvous_timeout", "application", "critical") in findings(line)
    line = CPP % (4, "W", "gcs_client.cc:98", "Failed to connect to GCS at address 10.0.0.1:6379")
    assert ("logged_error", "unknown", "warning") in findings(line)


def test_a_healthy_start_and_a_benign_warning_stay_healthy():
    assert serious(HEALTHY_START + DONE) == []
    advice = PY % (8, "WARNING", "worker.py:1110", "The driver may not be able to keep up with the stdout/stderr of "
                   "the workers. To avoid forwarding logs to the driver, use 'ray.init(log_to_driver=False)'.")
    assert serious(HEALTHY_START + advice + DONE) == []
    _facts, found = parse_job_logs({"driver.log": HEALTHY_START + advice + DONE})
    assert not [f for f in found if f["kind"] == "job_end_unknown"]


def test_the_markers_are_rays_own_words():
    # the prefilter lets a marked line through: a training log's plain lines hold none of Ray's
    marks = vocab.markers(("ray",))
    assert set(marks) <= set(emitter_markers())
    for line in (" iteration     1211/ 500000 | consumed samples: 1240064 | lm loss: 2.1E+00 | loss scale: 1.0 |",
                 "{'loss': 2.31, 'grad_norm': 0.8, 'learning_rate': 1e-05, 'epoch': 0.5}",
                 "Epoch 3: 100%|##########| 500/500 [01:00<00:00, lr factor 0.5, array shape (8, 8)]",
                 "[rank3]: worker 7 of the DataLoader finished"):
        assert not any(m in line for m in marks), line


def test_the_raylets_death_summary_is_explained_and_names_no_cause_of_its_own():
    # raylet/node_manager.cc's summary (EasyR1's GRPO run after its step-50 checkpoint, hiyouga/EasyR1#50): its
    # first count may be 0 (the workers crashed otherwise), so one row names no cause; its meaning says how to read it
    line = ("(raylet) [2025-03-01 16:18:15,116 E 2687 2687] (raylet) node_manager.cc:3069: %d Workers (tasks / "
            "actors) killed due to memory pressure (OOM), %d Workers crashed due to other reasons at node (ID: "
            "c1572ef0f1cf8c62fb3157942667d9e41b3c7a17276b11f6020ab9eb, IP: 10.1.17.3) over the last time period. "
            "To see more information about the Workers killed on this node, use `ray logs raylet.out -ip "
            "10.1.17.3`\n")
    for counts in ((2, 0), (0, 1)):
        _facts, found = parse_job_logs({"driver.log": line % counts})
        said = [f for f in found if f.get("name") == "Ray"]
        assert [(f["category"], f["severity"]) for f in said] == [("unknown", "warning")]
        assert "memory pressure" in said[0]["message"] and "OOM killer" in said[0]["message"]
        assert not [f for f in found if f["kind"] in ("unexplained_errors", "host_oom")]


def test_the_memory_monitors_advice_follows_only_a_kill_and_says_memory():
    # raylet/node_manager.cc CreateOomKillMessageSuggestions, printed under the summary only when the memory
    # monitor killed (hiyouga/EasyR1#185); the page it names moved in 2.55, both wordings are read
    summary = ("(raylet) [2025-04-02 15:02:00,117 E 135782 135782] (raylet) node_manager.cc:3069: 1 Workers (tasks / "
               "actors) killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at node (ID: "
               "351e406b, IP: 10.95.143.76) over the last time period. To see more information about the Workers "
               "killed on this node, use `ray logs raylet.out -ip 10.95.143.76`\n(raylet) \n")
    for page in ("ray-core/scheduling/ray-oom-prevention.html",
                 "ray-observability/user-guides/debug-apps/debug-memory.html"):
        advice = ("(raylet) Refer to the documentation on how to address the out of memory issue: "
                  "https://docs.ray.io/en/latest/%s. Consider provisioning more memory on this node or reducing task "
                  "parallelism by requesting more CPUs per task. To adjust the kill threshold, set th\n" % page)
        assert ("oom_kill", "memory_leak", "warning") in findings(summary + advice)
    assert ("oom_kill", "memory_leak", "warning") not in findings(summary)  # the summary alone names no cause


def test_a_wrapped_paste_of_rsyslogs_written_escapes_is_joined_then_read():
    # rsyslog writes ESC as '#033' (its control-character escape); a terminal 116 columns wide shows those
    # characters, so the wrapped lines are joined at that width and the escapes go after (vllm-project/vllm#1160)
    esc = "#033[2m#033[33m(raylet)#033[0m "
    text = (esc + "Refer to the documentation on how to address the out of memory issue: https://docs.ra\n"
            "y.io/en/latest/ray-core/scheduling/ray-oom-prevention.html. Consider provisioning more memory on this "
            "node or reduci\nng task parallelism by requesting more CPUs per task. To adjust the kill threshold, set "
            "the environment variable `RA\nY_memory_usage_threshold` when starting Ray. To disable worker killing, "
            "set the environment variable `RAY_memory_mon\nitor_refresh_ms` to zero.\n")
    assert {len(line) for line in text.split("\n")[:4]} == {116}
    assert ("oom_kill", "memory_leak", "warning") in findings(text)
