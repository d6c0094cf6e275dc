"""The report step through the real ansible-playbook: the diagnosis_report role names the hosts
and the action plugin reads each one's result from hostvars, and the report is the one the
whole results give -- the same play then runs gpu_runbook_report on every host's whole
registered result (a dict, as rung_verify passes it), and once more as the module alone (no
action plugin), and the report.json files agree. The demo rack's captures with job 4242's log,
plus a host that does not answer and one whose gather fails. And bad ``results`` or ``hosts``
are refused with a message, never a traceback."""

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
    # one host per line: report.json at fleet size is read with grep as much as with jq
    lines = (role_dir / "report.json").read_text().splitlines()
    assert sum(1 for line in lines if line.startswith('    {"host": ')) == len(role["hosts"])
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
    bad = ["{not json", "[1, 2]", 42]
    proc = run_playbook(["-i", "localhost,", "-c", "local", str(play), "-e", json.dumps({"bad": bad, "out": str(out)})])
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    said = json.loads(out.read_text())
    assert said[0].startswith("results is a string but not JSON (") and "map of inventory host name" in said[0]
    assert said[1].startswith("results must be a map of inventory host name") and said[1].endswith("; got [1, 2]")
    assert said[2].endswith("; got 42")
    assert "Traceback" not in proc.stdout + proc.stderr


ONE_BAD = """\
---
- name: One host's malformed result among good ones
  hosts: localhost
  gather_facts: false
  vars:
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
  tasks:
    - name: Report
      gpu_runbook_report:
        results:
          gpu-a: {ansible_facts: {gpu_health: {findings: [], facts: {}, probes: {}}}}
          gpu-b: {ansible_facts: {gpu_health: {findings: "Xid 79 everywhere", facts: {}, probes: {}}}}
          gpu-c: "a string, not a result"
      register: rep
    - name: Keep the hosts
      ansible.builtin.copy:
        content: "{{ rep.analysis.hosts | to_json }}"
        dest: "{{ out }}"
        mode: "0600"
"""


def test_one_malformed_host_is_that_hosts_error_not_the_plays(tmp_path):
    play = tmp_path / "one_bad.yml"
    play.write_text(ONE_BAD)
    out = tmp_path / "hosts.json"
    proc = run_playbook(["-i", "localhost,", "-c", "local", str(play), "-e", json.dumps({"out": str(out)})])
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    by = {h["host"]: h for h in json.loads(out.read_text())}
    assert by["gpu-a"]["verdict"] == "healthy"
    assert by["gpu-b"]["verdict"] == "unknown" and "malformed gather result: gpu_health.findings is a str" in \
        by["gpu-b"]["findings"][0]["message"]
    assert by["gpu-c"]["verdict"] == "unknown" and "the registered result is a str" in by["gpu-c"]["findings"][0]["message"]


MODULE_PLAY = """\
---
- name: The step as a module alone (no action plugin)
  hosts: gpu_nodes
  gather_facts: false
  roles:
    - role: job_context
    - role: gpu_health
  tasks:
    - name: The report from every host's registered result, in the module's own process
      gpu_runbook_report:
        results: "{{ dict(ansible_play_hosts | zip(ansible_play_hosts | map('extract', hostvars, 'gpu_health_result'))) | to_json }}"
        report_dir: "{{ report_dir }}"
        job_log_dir: "{{ job_log_dir }}"
      delegate_to: localhost
      run_once: true
      vars:
        ansible_python_interpreter: "{{ ansible_playbook_python }}"
    - name: Name the hosts instead, which only the action plugin can read
      gpu_runbook_report:
        hosts: "{{ ansible_play_hosts }}"
      delegate_to: localhost
      run_once: true
      register: refused
      ignore_errors: true
      vars:
        ansible_python_interpreter: "{{ ansible_playbook_python }}"
    - name: Keep what it said
      ansible.builtin.copy:
        content: "{{ refused.msg }}"
        dest: "{{ report_dir }}/refused.txt"
        mode: "0600"
      delegate_to: localhost
      run_once: true
"""


def test_the_module_alone_reports_what_the_action_plugin_reports(tmp_path):
    """Without the action plugin (another action_plugins path) the task runs the module in its own
    process: the same report.json from the same hosts as the role's (the plugin's); and the module
    refuses ``hosts``, which only the plugin can read, with a message that says what to do."""
    inv = tmp_path / "hosts.ini"
    nodes = "\n".join("gpu-r3-n%02d gpu_health_capture_dir=%s/nodes/gpu-r3-n%02d" % (i, CAPTURES, i) for i in (1, 3, 5))
    inv.write_text("[gpu_nodes]\n%s\n\n[gpu_nodes:vars]\nansible_connection=local\n"
                   "ansible_python_interpreter={{ ansible_playbook_python }}\n" % nodes)
    logs = ["-e", "job_log_dir=%s" % os.path.join(CAPTURES, "job-4242")]
    (tmp_path / "play.yml").write_text(PLAY)
    plugin = run_playbook(["-i", str(inv), str(tmp_path / "play.yml"), "-e", "report_dir=%s" % (tmp_path / "p"),
                           "-e", "whole_dir=%s" % (tmp_path / "pw")] + logs)
    assert plugin.returncode == 0, plugin.stdout[-4000:] + plugin.stderr[-2000:]
    empty = tmp_path / "no-actions"
    empty.mkdir()
    (tmp_path / "module.yml").write_text(MODULE_PLAY)
    module = run_playbook(["-i", str(inv), str(tmp_path / "module.yml"), "-e", "report_dir=%s" % (tmp_path / "m")] + logs,
                          env={"ANSIBLE_ACTION_PLUGINS": str(empty)})
    assert module.returncode == 0, module.stdout[-4000:] + module.stderr[-2000:]
    said = (tmp_path / "m" / "refused.txt").read_text()
    assert said.startswith("hosts needs the gpu_runbook_report action plugin") and "pass results" in said
    assert "Traceback" not in module.stdout + module.stderr
    with open(tmp_path / "p" / "report.json") as fh:
        by_plugin = _without_time(json.load(fh))
    with open(tmp_path / "m" / "report.json") as fh:
        by_module = _without_time(json.load(fh))
    assert by_plugin == by_module
    assert {h["host"]: h["severity"] for h in by_plugin["hosts"]} == {
        "gpu-r3-n01": "info", "gpu-r3-n03": "critical", "gpu-r3-n05": "critical"}


HOSTS_PLAY = """\
---
- name: What the action plugin makes of the hosts it is given
  hosts: localhost
  gather_facts: false
  vars:
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
  tasks:
    - name: A host the inventory does not have
      gpu_runbook_report:
        hosts: [localhost, gpu-nowhere]
      register: unknown_host
      ignore_errors: true
    - name: Both hosts and results
      gpu_runbook_report:
        hosts: [localhost]
        results: {}
      register: both
      ignore_errors: true
    - name: Neither
      gpu_runbook_report:
        lang: en
      register: neither
      ignore_errors: true
    - name: A host whose variable holds no result
      gpu_runbook_report:
        hosts: [localhost]
        result_var: no_such_variable
      register: no_result
    - name: Register a result under a name an extra var also has
      ansible.builtin.set_fact:
        shadowed: {unreachable: false, msg: registered}
    - name: Registered on one host, from the inventory on the other, shadowed by an extra var
      gpu_runbook_report:
        hosts: [localhost, gpu-inv]
        result_var: "{{ item }}"
      loop: [inv_result, shadowed]
      register: sources
    - name: Keep what each said
      ansible.builtin.copy:
        content: "{{ {'unknown_host': unknown_host.msg, 'both': both.msg, 'neither': neither.msg,
                      'no_result': no_result.analysis.hosts,
                      'sources': sources.results | map(attribute='analysis') | map(attribute='hosts') | list} | to_json }}"
        dest: "{{ out }}"
        mode: "0600"
"""


def test_the_plugin_refuses_hosts_it_cannot_read_and_keeps_hosts_without_a_result(tmp_path):
    play = tmp_path / "hosts.yml"
    play.write_text(HOSTS_PLAY)
    out = tmp_path / "said.json"
    inv = tmp_path / "inventory.yml"
    inv.write_text(json.dumps({"all": {"hosts": {"localhost": {"inv_result": {"msg": "not from here"}},
                                                 "gpu-inv": {"inv_result": {"unreachable": True, "msg": "no route to host"}}}}}))
    shadow = json.dumps({"shadowed": {"msg": "from the extra var"}})
    proc = run_playbook(["-i", str(inv), "-c", "local", str(play), "-e", "out=%s" % out, "-e", shadow])
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    said = json.loads(out.read_text())
    assert said["unknown_host"] == "hosts not in the inventory: gpu-nowhere"
    assert "mutually exclusive" in said["both"] and "hosts" in said["both"] and "results" in said["both"]
    assert "one of the following is required" in said["neither"]
    # a host without a result stays in: unknown, saying why, never dropped or called healthy
    (host,) = said["no_result"]
    assert host["host"] == "localhost" and host["verdict"] == "unknown"
    assert host["findings"][0]["kind"] == "gather_failed"
    # each host's value as Ansible resolves it: an inventory var where nothing was registered under
    # that name; an extra var over what was registered (localhost's set_fact)
    inv_var, shadowed = ({h["host"]: h["findings"][0] for h in hosts} for hosts in said["sources"])
    assert inv_var["gpu-inv"]["kind"] == "host_unreachable" and "no route to host" in inv_var["gpu-inv"]["message"]
    assert inv_var["localhost"]["kind"] == "gather_failed" and "not from here" in inv_var["localhost"]["message"]
    assert sorted(shadowed) == ["gpu-inv", "localhost"]
    assert all(f["kind"] == "gather_failed" and "from the extra var" in f["message"] for f in shadowed.values()), shadowed
    assert "Traceback" not in proc.stdout + proc.stderr
