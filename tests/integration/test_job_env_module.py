"""library/gpu_runbook_job_env.py through the real ``ansible localhost -m gpu_runbook_job_env``
(local connection, files under tmp). Nothing is mocked."""

import json
import os

from tests.conftest import run_module

JOB = {"rungs": [{"rung": "nccl_env", "host": "n5", "why": "link errors on mlx5_1 only",
                  "target": {"rails": ["mlx5_1"]}, "env": ["NCCL_IB_HCA=^=mlx5_1", "NCCL_IB_DISABLE=0"]},
                 {"rung": "timeout", "host": None, "why": "retry exceeded",
                  "env": ["NCCL_IB_TIMEOUT=22", "NCCL_IB_RETRY_CNT=7", "TORCH_NCCL_ASYNC_ERROR_HANDLING=1",
                          "TORCH_FR_BUFFER_SIZE=2000", "TORCH_NCCL_DUMP_ON_TIMEOUT=1"]}],
       "env": ["NCCL_IB_HCA=^=mlx5_1", "NCCL_IB_DISABLE=0", "NCCL_IB_TIMEOUT=22"]}


def job_env(tmp_path, check=False, diff=False, **args):
    args.setdefault("dir", str(tmp_path / "out"))
    args.setdefault("now", "2024-05-01T00:00:00Z")
    return run_module(tmp_path, "gpu_runbook_job_env", args, host="localhost", check=check,
                      env={"ANSIBLE_DIFF_ALWAYS": "1"} if diff else None)


def files(tmp_path):
    out = tmp_path / "out"
    return {n: (out / n).read_text() for n in ("nccl.env", "nccl.sbatch", "excluded-rails.json")
            if (out / n).exists()}


def test_writes_both_sections_idempotent(tmp_path):
    res, proc = job_env(tmp_path, section="nccl_env", job=JOB, incident="INC-1", analysis_hosts=[])
    assert proc.returncode == 0 and res["changed"] and len(res["written"]) == 3
    first = files(tmp_path)
    assert "NCCL_IB_HCA=^=mlx5_1\n" in first["nccl.env"] and "export NCCL_IB_HCA='^=mlx5_1'" in first["nccl.sbatch"]
    assert json.loads(first["excluded-rails.json"])["excluded"][0]["host"] == "n5"
    assert any("add to the next sbatch" in ln for ln in res["lines"])
    assert any("beats ~/.nccl.conf" in ln for ln in res["lines"])
    again, proc = job_env(tmp_path, section="nccl_env", job=JOB, incident="INC-1", analysis_hosts=[],
                          now="2024-05-02T00:00:00Z")
    assert proc.returncode == 0 and again["changed"] is False and again["written"] == [] and files(tmp_path) == first
    t, proc = job_env(tmp_path, section="timeout", job=JOB, incident="INC-1",
                      env=["TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC=600", "TORCH_FR_DUMP_TEMP_FILE=/shared/fr/rank_"])
    assert proc.returncode == 0 and t["changed"]
    assert sorted(t["written"]) == sorted(str(tmp_path / "out" / n) for n in ("nccl.env", "nccl.sbatch"))
    both = files(tmp_path)
    assert both["excluded-rails.json"] == first["excluded-rails.json"]
    assert "NCCL_IB_HCA=^=mlx5_1\n" in both["nccl.env"]
    assert "TORCH_FR_DUMP_TEMP_FILE=/shared/fr/rank_\n" in both["nccl.env"]
    assert "there is no NCCL_TIMEOUT" in both["nccl.env"] and any("init_process_group(timeout=)" in ln
                                                                   for ln in t["lines"])
    t2, _ = job_env(tmp_path, section="timeout", job=JOB, incident="INC-1",
                    env=["TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC=600", "TORCH_FR_DUMP_TEMP_FILE=/shared/fr/rank_"])
    n2, _ = job_env(tmp_path, section="nccl_env", job=JOB, incident="INC-1", analysis_hosts=[])
    assert t2["changed"] is False and n2["changed"] is False and files(tmp_path) == both


def test_check_and_diff_write_nothing(tmp_path):
    res, proc = job_env(tmp_path, check=True, diff=True, section="nccl_env", job=JOB, analysis_hosts=[])
    assert proc.returncode == 0 and res["changed"] and res["written"] == []
    assert not (tmp_path / "out").exists()
    for name in ("nccl.env", "nccl.sbatch", "excluded-rails.json"):  # the diff, as ansible --diff prints it
        assert "+++ after: %s" % (tmp_path / "out" / name) in proc.stdout
    assert "+NCCL_IB_HCA=^=mlx5_1\n" in proc.stdout
    job_env(tmp_path, section="nccl_env", job=JOB, analysis_hosts=[])
    # the rail found healthy: the diff shows the exclusion going, nothing is written in check mode
    before = files(tmp_path)
    healthy = [{"host": "n5", "verdict": "healthy", "findings": []}]
    res, proc = job_env(tmp_path, check=True, diff=True, section="nccl_env", job={}, analysis_hosts=healthy)
    assert proc.returncode == 0 and res["changed"] and [r["rail"] for r in res["reverted"]] == ["mlx5_1"]
    assert "-NCCL_IB_HCA=^=mlx5_1\n" in proc.stdout and "+NCCL_IB_HCA" not in proc.stdout
    assert files(tmp_path) == before
    res, proc = job_env(tmp_path, section="nccl_env", job={}, analysis_hosts=healthy)
    assert res["changed"] and "NCCL_IB_HCA" not in files(tmp_path)["nccl.env"].split(">>> gpu-runbook nccl_env")[-1]


def test_symlinks_are_refused_nothing_written(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    os.symlink(str(victim), str(out / "nccl.sbatch"))
    res, proc = job_env(tmp_path, section="nccl_env", job=JOB, analysis_hosts=[])
    assert proc.returncode != 0 and "symlink" in res["msg"] and "nccl.sbatch" in res["msg"]
    assert victim.read_text() == "precious\n" and not (out / "nccl.env").exists()
    os.unlink(str(out / "nccl.sbatch"))
    os.symlink(str(victim), str(out / "nccl.env"))  # also never read through
    res, proc = job_env(tmp_path, section="timeout", job=JOB)
    assert proc.returncode != 0 and "symlink" in res["msg"] and victim.read_text() == "precious\n"
    os.unlink(str(out / "nccl.env"))
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(str(real), str(tmp_path / "link"))
    res, proc = job_env(tmp_path, section="nccl_env", job=JOB, dir=str(tmp_path / "link"), analysis_hosts=[])
    assert proc.returncode != 0 and "dir" in res["msg"] and "symlink" in res["msg"] and os.listdir(str(real)) == []


def test_bad_input_is_a_message_not_a_traceback(tmp_path):
    bad = {"rungs": [{"rung": "timeout", "env": ["NCCL_TIMEOUT=1800"]}]}
    res, proc = job_env(tmp_path, section="timeout", job=bad)
    assert proc.returncode != 0 and "there is no NCCL_TIMEOUT" in res["msg"] and not (tmp_path / "out").exists()
    res, proc = job_env(tmp_path, section="timeout", job={}, env=["TORCH_FR_DUMP_TEMP_FILE=/tmp/$(reboot)"])
    assert proc.returncode != 0 and "metacharacters" in res["msg"]
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "excluded-rails.json").write_text("{not json")
    res, proc = job_env(tmp_path, section="nccl_env", job=JOB, analysis_hosts=[])
    assert proc.returncode != 0 and "exclusion record cannot be read" in res["msg"]
    assert (tmp_path / "out" / "excluded-rails.json").read_text() == "{not json"
    assert not (tmp_path / "out" / "nccl.env").exists()
