"""The report step through the real ansible-playbook: the diagnosis_report role passes each
host's result trimmed to what the report reads, as one JSON string, and the report is the one
the whole results give -- the same play then runs gpu_runbook_report on every host's whole
registered result (a dict, as rung_verify passes it) and both report.json agree. The demo
rack's captures with job 4242's log, plus a host that does not answer and one whose gather
fails. And the module refuses bad ``results`` with a message, never a traceback."""

import json
import os
import textwrap

from tests.conftest import REPO, run_playbook

CAPTURES = os.path.join(REPO, "inventory-examples", "demo-captures")

PLAY = """\
---
- name: Diagnose as diagnose.yml does, then the same step on the whole results
  hosts: gpu_nodes
  gather_facts: false
  roles:
    - role: job_context
    - role: gpu_health
    - role: diagnosis_report
  tasks:
    - name: The report from every host's whole registered result
      gpu_runbook_report:
        results: "{{ dict(ansible_play_hosts | zip(ansible_play_hosts | map('extract', hostvars, 'gpu_health_result'))) }}"
        report_dir: "{{ whole_dir }}"
        job_log_dir: "{{ job_log_dir }}"
      delegate_to: localhost
      run_once: true
      vars:
        ansible_python_interpreter: "{{ ansible_playbook_python }}"
    - name: Keep what the role registered
      ansible.builtin.copy:
        content: "{{ diagnosis_report_result.analysis | to_json }}"
        dest: "{{ whole_dir }}/registered.json"
        mode: "0600"
      delegate_to: localhost
      run_once: true
"""

BAD = """\
---
- name: Bad results
  hosts: localhost
  gather_facts: false
  vars:
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
  tasks:
    - name: Each bad value
      gpu_runbook_report:
        results: "{{ item }}"
      loop: "{{ bad }}"
      register: got
      ignore_errors: true
    - name: Keep what each said
      ansible.builtin.copy:
        content: "{{ got.results | map(attribute='msg') | list | to_json }}"
        dest: "{{ out }}"
        mode: "0600"
"""


def _without_time(report):
    report = dict(report, generated=None, window=dict(report["window"], generated=None))
    return json.loads(json.dumps(report).replace(report["tool"]["version"], "V"))


def test_the_role_passes_what_the_report_reads_and_reports_the_same(tmp_path):
    inv = tmp_path / "hosts.ini"
    nodes = "\n".join("gpu-r3-n%02d gpu_health_capture_dir=%s/nodes/gpu-r3-n%02d" % (i, CAPTURES, i)
                      for i in range(1, 9))
    inv.write_text(textwrap.dedent("""\
        [gpu_nodes]
        {nodes}
        gpu-dead ansible_host=127.0.0.1 ansible_port=1 ansible_connection=ssh ansible_ssh_common_args='-o ConnectTimeout=2'
        gpu-broken ansible_python_interpreter=/nonexistent/python3

        [gpu_nodes:vars]
        ansible_connection=local
        ansible_python_interpreter={{{{ ansible_playbook_python }}}}
        gpu_health_expected_gpus=8
        gpu_health_expected_ib_rate=400
        """).format(nodes=nodes))
    play = tmp_path / "play.yml"
    play.write_text(PLAY)
    role_dir, whole_dir = tmp_path / "role", tmp_path / "whole"
    proc = run_playbook(["-i", str(inv), str(play), "-e", "report_dir=%s" % role_dir, "-e", "whole_dir=%s" % whole_dir,
                         "-e", "job_log_dir=%s" % os.path.join(CAPTURES, "job-4242"),
                         "-e", "diagnosis_report_analysis_findings=suspects"])
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    with open(role_dir / "report.json") as fh:
        role = json.load(fh)
    with open(whole_dir / "report.json") as fh:
        whole = json.load(fh)
    assert _without_time(role) == _without_time(whole)
    by_host = {h["host"]: h for h in role["hosts"]}
    assert len(by_host) == 10
    assert by_host["gpu-dead"]["findings"][0]["kind"] == "host_unreachable"
    assert by_host["gpu-broken"]["findings"][0]["kind"] == "gather_failed"
    assert by_host["gpu-r3-n03"]["verdict"] == "gpu_hardware" and role["job"]["culprits"]
    assert role["inputs"]["hosts"]["gpu-r3-n01"]["read"] and role["cluster"]["timeline"]
    # analysis_findings=suspects: what the role registered has the suspects' findings only
    with open(whole_dir / "registered.json") as fh:
        registered = json.load(fh)
    suspects = set(role["cluster"]["suspects"])
    assert suspects and len(suspects) < len(by_host)
    for h in registered["hosts"]:
        full = by_host[h["host"]]
        assert h["findings"] == (full["findings"] if h["host"] in suspects else [])
        assert {k: v for k, v in h.items() if k != "findings"} == {k: v for k, v in full.items() if k != "findings"}
    assert any(by_host[h]["findings"] for h in by_host if h not in suspects)  # not vacuous
    assert {k: v for k, v in registered.items() if k != "hosts"} == {k: v for k, v in role.items() if k != "hosts"}


def test_bad_results_are_refused_with_a_message(tmp_path):
    play = tmp_path / "bad.yml"
    play.write_text(BAD)
    out = tmp_path / "said.json"
    bad = ["{not json", "[1, 2]", {"gpu-r3-n01": "a string, not a result"}, 42]
    proc = run_playbook(["-i", "localhost,", "-c", "local", str(play), "-e", json.dumps({"bad": bad, "out": str(out)})])
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    said = json.loads(out.read_text())
    assert said[0].startswith("results is a string but not JSON (") and "map of inventory host name" in said[0]
    assert said[1].startswith("results must be a map of inventory host name") and said[1].endswith("; got [1, 2]")
    assert said[3].endswith("; got 42")
    assert "the value for 1 host(s) is not a result (a dict): 'gpu-r3-n01'" in said[2]
    assert "Traceback" not in proc.stdout + proc.stderr
