"""The CLI's progress line from ansible-runner events (runbook.Progress), without a run."""

import io

from gpu_runbook.runbook import Progress


def _play(progress, name):
    progress.event({"event": "playbook_on_play_start", "event_data": {"name": name}})


def _ok(progress, host, task, res=None, kind="runner_on_ok"):
    progress.event({"event": "runner_on_start", "event_data": {"host": host, "task": task}})
    progress.event({"event": kind, "event_data": {"host": host, "task": task, "res": res or {}}})


def test_a_play_that_runs_once_counts_the_hosts_it_put_in_groups():
    # job_context's narrowing: two tasks that run once on the first host; add_host's items name
    # every host of the play, and the play line counts them all, not the one that ran the task
    out = io.StringIO()
    p = Progress(out, tty=False)
    _play(p, "Find the job and its nodes")
    for h in ("n01", "n02", "n03"):
        p.event({"event": "runner_item_on_ok",
                 "event_data": {"host": "n01", "res": {"add_host": {"host_name": h, "groups": ["in_scope"]}}}})
    _ok(p, "n01", "Keep only the job's nodes for the diagnosis")
    _play(p, "Diagnose")
    assert out.getvalue().splitlines()[0].startswith("play: Find the job and its nodes: hosts done 3/3, failed 0")


def test_items_without_a_host_added_count_only_the_host_that_ran():
    out = io.StringIO()
    p = Progress(out, tty=False)
    _play(p, "Loop")
    p.event({"event": "runner_item_on_ok", "event_data": {"host": "n01", "res": {"item": "x", "add_host": "n09"}}})
    p.event({"event": "runner_item_on_ok", "event_data": {"host": "n01", "res": "not a mapping"}})
    _ok(p, "n01", "A loop")
    _play(p, "Next")
    assert "hosts done 1/1" in out.getvalue().splitlines()[0]
