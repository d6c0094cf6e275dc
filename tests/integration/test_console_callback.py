"""The console (plugins/callback/gpu_runbook.py, ansible.cfg's stdout_callback) through the real
ansible-playbook: the role argument checks and the in-memory grouping of hosts print nothing when
they pass, a failing one prints its banner and its error as Ansible's default output does, and
-v shows every line."""

import pytest

from tests.conftest import run_playbook

PLAY = """
- name: Group and check
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Keep the job's nodes
      ansible.builtin.add_host:
        name: "{{ item }}"
        groups: in_scope
      loop: [node-a, node-b, node-c]
    - name: Check the settings
      ansible.builtin.validate_argument_spec:
        argument_spec:
          count: {type: int, required: true}
        provided_arguments:
          count: "{{ count }}"
    - name: Keep a fact for later
      ansible.builtin.set_fact:
        kept: "{{ count | int * 2 }}"
    - name: Check the fact
      ansible.builtin.assert:
        that: kept | int == 6
        fail_msg: kept is {{ kept }}
    - name: Say the story
      ansible.builtin.debug:
        msg: the story line
"""


@pytest.fixture
def play(tmp_path):
    path = tmp_path / "play.yml"
    path.write_text(PLAY)
    return str(path)


def test_passing_checks_and_host_grouping_print_nothing_and_the_story_still_does(play):
    proc = run_playbook([play, "-i", "localhost,", "-e", "count=3"])
    assert proc.returncode == 0, proc.stdout[-3000:]
    out = proc.stdout
    assert "the story line" in out and "TASK [Say the story]" in out
    for hidden in ("Keep the job's nodes", "item=node-a", "Check the settings", "Keep a fact", "Check the fact",
                   "All assertions passed"):
        assert hidden not in out, out


def test_a_failing_check_prints_its_banner_and_its_error(play):
    proc = run_playbook([play, "-i", "localhost,", "-e", "count=many"])
    assert proc.returncode == 2, proc.stdout[-3000:]
    out = proc.stdout
    assert "TASK [Check the settings]" in out and "fatal: [localhost]" in out and "count" in out
    assert "the story line" not in out


def test_a_failing_assert_prints_its_banner_and_its_message(play):
    proc = run_playbook([play, "-i", "localhost,", "-e", "count=4"])
    assert proc.returncode == 2, proc.stdout[-3000:]
    assert "TASK [Check the fact]" in proc.stdout and "kept is 8" in proc.stdout, proc.stdout[-3000:]
    assert "the story line" not in proc.stdout


def test_verbose_shows_every_line(play):
    proc = run_playbook([play, "-i", "localhost,", "-e", "count=3", "-v"])
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "item=node-a" in proc.stdout and "TASK [Check the settings]" in proc.stdout
