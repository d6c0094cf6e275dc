"""plan/envfile.py: the job env file (render, parse back, validate), the sbatch snippet and
the rail-exclusion record (merge, revert on a healthy rail, keep on doubt)."""

import json
import os
import subprocess

import pytest

from gpu_runbook.plan import envfile as E
from gpu_runbook.plan import make_plan

NOW1, NOW2 = "2024-05-01T00:00:00Z", "2024-05-08T00:00:00Z"


def nccl_rung(host, rails, why="link errors on mlx5_1 only", env=()):
    return {"rung": "nccl_env", "host": host, "why": why, "target": {"rails": list(rails)},
            "env": ["NCCL_IB_HCA=^=%s" % ",".join(rails)] + list(env)}


TIMEOUT = {"rung": "timeout", "host": None, "why": "retry exceeded on mlx5_2",
           "env": ["NCCL_IB_TIMEOUT=22", "NCCL_IB_RETRY_CNT=7", "TORCH_NCCL_ASYNC_ERROR_HANDLING=1",
                   "TORCH_FR_BUFFER_SIZE=2000", "TORCH_NCCL_DUMP_ON_TIMEOUT=1"]}


def job(*rungs):
    return {"rungs": list(rungs), "env": [v for r in rungs for v in r["env"]]}


def host(name, findings=(), verdict="healthy"):
    return {"host": name, "verdict": verdict, "findings": list(findings)}


def ib(device, severity="critical", kind="ib_symbol_errors", category="ib_network"):
    return {"kind": kind, "severity": severity, "category": category, "rung": "drain",
            "ib": {"device": device, "port": 1}, "message": "%s on %s" % (kind, device)}


# -- validation -----------------------------------------------------------------------------

@pytest.mark.parametrize("line,words", [
    ("NCCL_TIMEOUT=1800", "there is no NCCL_TIMEOUT"),
    ("NCCL_ASYNC_ERROR_HANDLING=1", "TORCH_NCCL_ASYNC_ERROR_HANDLING"),
    ("NCCL_BLOCKING_WAIT=1", "TORCH_NCCL_BLOCKING_WAIT"),
    ("NCCL_MADE_UP=1", "not a known"),
    ("LD_PRELOAD=/tmp/x.so", "not a known"),
    ("NCCL_IB_HCA=^=mlx5_1;rm -rf /", "shell metacharacters"),
    ("NCCL_SOCKET_IFNAME=$(id)", "shell metacharacters"),
    ("NCCL_DEBUG_FILE=/tmp/a b", "shell metacharacters"),
    ("NCCL_IB_HCA=", "non-empty"),
    ("NCCL_IB_TIMEOUT=32", "1-31"),
    ("NCCL_IB_TIMEOUT=0", "1-31"),
    ("NCCL_IB_RETRY_CNT=8", "0-7"),
    ("TORCH_NCCL_ASYNC_ERROR_HANDLING=4", "one of"),
    ("TORCH_FR_DUMP_TEMP_FILE=relative/path", "absolute"),
    ("not a line", "not a KEY=VALUE"),
])
def test_validation_refuses_with_the_reason(line, words):
    pairs, errors = E.validate([line])
    assert pairs == [] and len(errors) == 1 and words in errors[0]


def test_validation_accepts_known_values_and_last_wins():
    pairs, errors = E.validate(["NCCL_IB_HCA=^=mlx5_1,mlx5_4", "NCCL_SOCKET_IFNAME=^docker,lo", "NCCL_IB_TIMEOUT=20",
                                "export NCCL_IB_TIMEOUT=22", "TORCH_FR_DUMP_TEMP_FILE=/shared/fr/rank_"])
    assert errors == []
    assert pairs == [("NCCL_IB_HCA", "^=mlx5_1,mlx5_4"), ("NCCL_SOCKET_IFNAME", "^docker,lo"),
                     ("NCCL_IB_TIMEOUT", "22"), ("TORCH_FR_DUMP_TEMP_FILE", "/shared/fr/rank_")]


def test_explanations_in_seconds():
    assert "4.096 us x 2^22 = 17.2 s" in E.explain("NCCL_IB_TIMEOUT", "22", {})
    assert "default 20 = 4.3 s" in E.explain("NCCL_IB_TIMEOUT", "22", {})
    # the retry count's worst case uses the section's NCCL_IB_TIMEOUT
    assert "(7 + 1) x 17.2 s = 2.3 min" in E.explain("NCCL_IB_RETRY_CNT", "7", {"NCCL_IB_TIMEOUT": "22"})
    assert "mlx5_10-19" in E.explain("NCCL_IB_HCA", "^=mlx5_1", {})


# -- the file -------------------------------------------------------------------------------

def test_render_parse_round_trip_keeps_why_and_other_lines():
    first = E.update("nccl_env", "", "", job(nccl_rung("n5", ["mlx5_1"], env=["NCCL_IB_DISABLE=0"])),
                     analysis_hosts=[], incident="INC-1", now=NOW1)
    text = "# my own line\nNCCL_DEBUG=INFO\n\n" + first["env_text"]
    parsed = E.parse_env_file(text)
    assert parsed["other"] == ["# my own line", "NCCL_DEBUG=INFO"]
    entries = parsed["sections"]["nccl_env"]
    assert [(e["key"], e["value"]) for e in entries] == [("NCCL_IB_HCA", "^=mlx5_1"), ("NCCL_IB_DISABLE", "0")]
    assert entries[1]["incident"] == "INC-1" and entries[1]["why"] == "link errors on mlx5_1 only"
    assert E.render_env_file(parsed) == E.render_env_file(E.parse_env_file(E.render_env_file(parsed)))
    assert "# my own line\nNCCL_DEBUG=INFO\n" in E.render_env_file(parsed)


def test_sections_are_kept_when_the_other_rung_writes():
    a = E.update("nccl_env", "", "", job(nccl_rung("n5", ["mlx5_1"])), analysis_hosts=[], incident="INC-1",
                 now=NOW1)
    b = E.update("timeout", a["env_text"], a["record_text"], job(TIMEOUT),
                 extra=["TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC=600"], incident="INC-1")
    assert b["env"][:1] == ["NCCL_IB_HCA=^=mlx5_1"] and "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC=600" in b["env"]
    assert "init_process_group(timeout=)" in b["env_text"] and "there is no NCCL_TIMEOUT" in b["env_text"]
    # nccl_env again with a plan that has nothing: the timeout section survives, the rail stays
    c = E.update("nccl_env", b["env_text"], b["record_text"], job(), analysis_hosts=None, incident="INC-2",
                 now=NOW2)
    assert c["env_text"] == b["env_text"] and c["env"] == b["env"]


def test_env_file_is_sourceable_and_sbatch_exports_the_same(tmp_path):
    a = E.update("nccl_env", "", "", job(nccl_rung("n5", ["mlx5_1", "mlx5_4"])), analysis_hosts=[], now=NOW1)
    b = E.update("timeout", a["env_text"], a["record_text"], job(TIMEOUT), extra=["TORCH_FR_DUMP_TEMP_FILE=/x/r_"])
    env, sb = tmp_path / "nccl.env", tmp_path / "nccl.sbatch"
    env.write_text(b["env_text"])
    sb.write_text(b["sbatch_text"])
    show = "env | grep -E '^(NCCL|TORCH)_' | sort"
    one = subprocess.run(["bash", "-c", "set -a; . %s; set +a; %s" % (env, show)], capture_output=True, text=True,
                         env={"PATH": os.environ["PATH"]})
    two = subprocess.run(["sh", "-c", ". %s; %s" % (sb, show)], capture_output=True, text=True,
                         env={"PATH": os.environ["PATH"]})
    assert one.returncode == 0 and two.returncode == 0 and one.stderr == "" and two.stderr == ""
    assert one.stdout == two.stdout and "NCCL_IB_HCA=^=mlx5_1,mlx5_4\n" in one.stdout
    assert sorted(one.stdout.split()) == sorted(b["env"])
    assert "--export" in b["sbatch_text"] and "NCCL_TIMEOUT" in b["sbatch_text"]


@pytest.mark.parametrize("text,words", [
    ("# >>> gpu-runbook nccl_env: x\nNCCL_IB_DISABLE=0\n", "never closed"),
    ("# <<< gpu-runbook timeout\n", "without its start"),
    ("# >>> gpu-runbook nccl_env: x\n# >>> gpu-runbook timeout: y\n", "opened inside"),
])
def test_broken_markers_refuse_the_update(text, words):
    with pytest.raises(E.EnvError) as exc:
        E.update("nccl_env", text, "", job(nccl_rung("n5", ["mlx5_1"])), now=NOW1)
    assert words in str(exc.value) and "nothing was written" in str(exc.value)


def test_a_refused_plan_line_refuses_the_whole_update():
    bad = dict(TIMEOUT, env=TIMEOUT["env"] + ["NCCL_TIMEOUT=1800"])
    with pytest.raises(E.EnvError) as exc:
        E.update("timeout", "", "", job(bad))
    assert "there is no NCCL_TIMEOUT" in str(exc.value)
    with pytest.raises(E.EnvError):
        E.update("timeout", "", "", job(TIMEOUT), extra=["TORCH_FR_DUMP_TEMP_FILE=/tmp/`id`"])
    with pytest.raises(E.EnvError):
        E.update("gpu_reset", "", "", job())


def test_sticky_values_change_and_unset():
    a = E.update("nccl_env", "", "", job(nccl_rung("n5", ["mlx5_1"], env=["NCCL_IB_DISABLE=0"])),
                 analysis_hosts=[], incident="INC-1", now=NOW1)
    b = E.update("nccl_env", a["env_text"], a["record_text"], job(), analysis_hosts=[], incident="INC-2", now=NOW2)
    assert "NCCL_IB_DISABLE=0" in b["section"]  # a fix for the job's config stays
    c = E.update("nccl_env", b["env_text"], b["record_text"], job(), analysis_hosts=[], unset=["NCCL_IB_DISABLE"])
    assert "NCCL_IB_DISABLE=0" not in c["section"] and "NCCL_IB_HCA=^=mlx5_1" in c["section"]
    d = E.update("timeout", c["env_text"], c["record_text"], job(TIMEOUT), extra=["NCCL_IB_TIMEOUT=20"],
                 incident="INC-3")
    assert "NCCL_IB_TIMEOUT=20" in d["section"] and "NCCL_IB_TIMEOUT=22" not in d["env"]
    assert "# why [INC-3]: the timeout rung's settings" in d["env_text"]


# -- the rail-exclusion record ----------------------------------------------------------------

def test_exclusion_recorded_once_then_reverted_when_healthy():
    a = E.update("nccl_env", "", "", job(nccl_rung("n5", ["mlx5_1"])), analysis_hosts=[], incident="INC-1",
                 now=NOW1)
    rec = json.loads(a["record_text"])
    assert rec["excluded"] == [{"host": "n5", "rail": "mlx5_1", "incident": "INC-1", "since": NOW1,
                                "why": "link errors on mlx5_1 only"}]
    # the same plan again later: the exclusion keeps its incident and since
    again = E.update("nccl_env", a["env_text"], a["record_text"], job(nccl_rung("n5", ["mlx5_1"])),
                     analysis_hosts=[], incident="INC-2", now=NOW2)
    assert again["record_text"] == a["record_text"] and again["env_text"] == a["env_text"] and not again["added"]
    # a later run: n5 diagnosed, nothing on mlx5_1 (a finding on another rail does not count)
    later = E.update("nccl_env", a["env_text"], a["record_text"], job(),
                     analysis_hosts=[host("n5", [ib("mlx5_3", kind="ib_rcv_errors")], verdict="ib_network")],
                     incident="INC-9", now=NOW2)
    assert [r["rail"] for r in later["reverted"]] == ["mlx5_1"] and later["excluded"] == []
    assert "NCCL_IB_HCA" not in later["env_text"].split("# <<<")[0].split(">>> gpu-runbook nccl_env")[-1]
    assert not any(v.startswith("NCCL_IB_HCA=") for v in later["env"])
    rec = json.loads(later["record_text"])
    assert rec["reverted"][0]["reverted_by"] == "INC-9" and rec["reverted"][0]["reverted_at"] == NOW2
    assert any("REVERT exclusion of mlx5_1 on n5" in ln for ln in later["lines"])


@pytest.mark.parametrize("analysis,why", [
    ([host("n5", [ib("mlx5_1", severity="warning")])], "still sick"),
    ([host("n5", [ib("0000:9c:00.0", kind="ib_link_flap")])], "names no HCA"),
    ([host("n5", [{"kind": "probe_timeout", "severity": "warning", "category": "unknown", "rung": "drain"}])],
     "names no HCA"),
    ([host("n5", verdict="unknown")], "unknown"),
    ([host("n6")], "not in this run's analysis"),
    (None, "no analysis given"),
])
def test_exclusion_kept_on_doubt(analysis, why):
    a = E.update("nccl_env", "", "", job(nccl_rung("n5", ["mlx5_1"])), analysis_hosts=[], now=NOW1)
    b = E.update("nccl_env", a["env_text"], a["record_text"], job(), analysis_hosts=analysis, now=NOW2)
    assert b["reverted"] == [] and "NCCL_IB_HCA=^=mlx5_1" in b["env"]
    assert why in b["kept"][0]["kept"]


def test_merge_two_hosts_revert_one_keeps_the_other():
    a = E.update("nccl_env", "", "", job(nccl_rung("n5", ["mlx5_1"]), nccl_rung("n7", ["mlx5_4"])),
                 analysis_hosts=[], incident="INC-1", now=NOW1)
    assert "NCCL_IB_HCA=^=mlx5_1,mlx5_4" in a["env"]
    b = E.update("nccl_env", a["env_text"], a["record_text"], job(nccl_rung("n7", ["mlx5_4"])),
                 analysis_hosts=[host("n5"), host("n7", [ib("mlx5_4")])], incident="INC-2", now=NOW2)
    assert [(r["host"], r["rail"]) for r in b["reverted"]] == [("n5", "mlx5_1")]
    assert b["section"] == ["NCCL_IB_HCA=^=mlx5_4"]
    # the same rail excluded for two hosts: reverted for one, still excluded for the job
    c = E.update("nccl_env", "", "", job(nccl_rung("n5", ["mlx5_1"]), nccl_rung("n6", ["mlx5_1"])),
                 analysis_hosts=[], now=NOW1)
    d = E.update("nccl_env", c["env_text"], c["record_text"], job(), analysis_hosts=[host("n5")], now=NOW2)
    assert len(d["reverted"]) == 1 and d["section"] == ["NCCL_IB_HCA=^=mlx5_1"]


def test_rail_incident_hosts_and_unnamed_rails_and_manual_revert():
    plan_job = {"rungs": [], "env": ["NCCL_IB_HCA=^=mlx5_2,mlx5_6"]}
    incidents = [{"kind": "rail", "name": "mlx5_2", "hosts": ["a", "b", "c"], "why": "leaf switch"}]
    a = E.update("nccl_env", "", "", plan_job, incidents=incidents, analysis_hosts=[], now=NOW1)
    assert sorted((e["host"], e["rail"]) for e in a["excluded"]) == [("*", "mlx5_6"), ("a", "mlx5_2"),
                                                                     ("b", "mlx5_2"), ("c", "mlx5_2")]
    healthy = [host(h) for h in "abc"]
    b = E.update("nccl_env", a["env_text"], a["record_text"], job(), analysis_hosts=healthy, now=NOW2)
    assert b["section"] == ["NCCL_IB_HCA=^=mlx5_6"]  # no host named: only by hand
    assert "by hand" in b["kept"][0]["kept"]
    c = E.update("nccl_env", b["env_text"], b["record_text"], job(), analysis_hosts=healthy, revert=["mlx5_6"],
                 now=NOW2)
    assert c["section"] == [] and c["reverted"][0]["reverted_because"] == "by hand"
    assert ">>> gpu-runbook nccl_env" not in c["env_text"]


def test_a_bad_record_is_refused():
    for text in ("{", '{"schema": "other"}',
                 json.dumps({"schema": E.RECORD_SCHEMA, "excluded": [{"host": "n1", "rail": "mlx5_1;reboot"}]})):
        with pytest.raises(E.EnvError) as exc:
            E.update("nccl_env", "", text, job(), now=NOW1)
        assert "exclusion record cannot be read" in str(exc.value)


def test_the_plans_job_section_feeds_the_env_file():
    """make_plan's job share for one bad rail on an otherwise healthy node -> the exclusion."""
    f = dict(ib("mlx5_1", severity="critical"), rung="drain", source="ib-sysfs.txt", evidence="", action="",
             steps=[], xid=None, gpu=None, rank=None, note=None, name=None)
    analysis = {"hosts": [{"host": "n5", "verdict": "ib_network", "severity": "warning", "rung": "drain",
                           "findings": [dict(f, severity="warning")]},
                          {"host": "n6", "verdict": "healthy", "severity": "ok", "rung": "none", "findings": []}],
                "cluster": {"remediate": []}}
    plan = make_plan(analysis)
    assert plan["job"]["env"] == ["NCCL_IB_HCA=^=mlx5_1"], plan["errors"]
    res = E.update("nccl_env", "", "", plan["job"], incidents=plan["incidents"], analysis_hosts=analysis["hosts"],
                   incident=plan["incident_id"], now=NOW1)
    assert [(e["host"], e["rail"]) for e in res["excluded"]] == [("n5", "mlx5_1")]
    assert res["nccl_conf"] == ["NCCL_IB_HCA=^=mlx5_1"]


def test_nvls_unavailable_asks_the_job_to_run_without_nvls_and_the_line_is_valid():
    from gpu_runbook.plan.envfile import validate
    from gpu_runbook.plan.jobenv import nccl_env_rung
    e = nccl_env_rung([{"kind": "nccl_nvls_unavailable", "rung": "nccl_env", "message": "m", "action": "a"}], [])
    assert "NCCL_NVLS_ENABLE=0" in e["env"]
    assert validate(e["env"]) == ([("NCCL_NVLS_ENABLE", "0")], [])
