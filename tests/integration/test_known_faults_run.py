"""remember=yes through the real ansible-playbook on the demo rack's captures: the first scheduled
run fails on its new critical faults, the next one (the same faults) does not and says they were
reported before, an operator acknowledges one with gpu_runbook_ledger action=ack, and check mode
leaves the record as it was."""

import json
import os
import subprocess

from tests.conftest import BIN, REPO, ansible_env, run_playbook

DIAGNOSE = ["playbooks/diagnose.yml", "-i", "inventory-examples/demo", "-l", "gpu-rack3",
            "-e", "remember=yes", "-e", "fail_on_critical=yes"]


def diagnose(state, *extra):
    return run_playbook(DIAGNOSE + ["-e", "gpu_runbook_state_dir=%s" % state] + list(extra))


def ledger(state, **args):
    args = dict(args, state_dir=str(state))
    return subprocess.run([os.path.join(BIN, "ansible"), "localhost", "-m", "gpu_runbook_ledger", "-a", json.dumps(args)],
                          cwd=REPO, env=ansible_env(), capture_output=True, text=True, timeout=120)


def record(state):
    with open(os.path.join(str(state), "known-faults.json")) as fh:
        return json.load(fh)["faults"]


def test_a_scheduled_run_fails_once_per_new_fault_and_an_acknowledged_one_stays_quiet(tmp_path):
    state = tmp_path / "state"
    first = diagnose(state)
    assert first.returncode == 2, first.stdout[-3000:]
    said = first.stdout + first.stderr  # ansible-playbook's [ERROR] line: the fail task's message, unwrapped
    assert "new critical faults: " in said and "gpu-r3-n03|xid|xid=79|gpu=0000:75:00.0" in said, said[-3000:]
    assert "new since the last run: " in first.stdout
    faults = record(state)
    assert {f["host"] for f in faults.values()} == {"gpu-r3-n03", "gpu-r3-n05", "gpu-r3-n06"}
    assert oct(os.stat(str(state / "known-faults.json")).st_mode & 0o777) == "0o600"

    second = diagnose(state)
    assert second.returncode == 0, second.stdout[-3000:]
    assert "new since the last run" not in second.stdout
    assert "reported before, not new: %d fault(s) (0 acknowledged)" % len(faults) in second.stdout

    ack = ledger(state, action="ack", hosts=["gpu-r3-n05"], kinds=["ib_link_flap"], note="cable ticket 42")
    assert ack.returncode == 0 and "localhost | CHANGED" in ack.stdout, ack.stdout[-2000:]
    acked = [f for f in record(state).values() if f.get("acknowledged")]
    assert [(f["host"], f["kind"], f["acknowledged"]["note"]) for f in acked] == [
        ("gpu-r3-n05", "ib_link_flap", "cable ticket 42")]
    nothing = ledger(state, action="ack", hosts=["gpu-r3-n99"])
    assert nothing.returncode != 0 and "no known fault of gpu-r3-n99" in nothing.stdout, nothing.stdout[-2000:]

    before = (state / "known-faults.json").read_text()
    checked = diagnose(state, "--check")
    assert checked.returncode == 0 and "(1 acknowledged)" in checked.stdout, checked.stdout[-3000:]
    assert (state / "known-faults.json").read_text() == before  # check mode writes no record


def test_a_record_that_cannot_be_read_is_said_every_fault_is_new_and_it_is_left_alone(tmp_path):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "known-faults.json").write_text("{broken")
    proc = diagnose(state)
    assert proc.returncode == 2, proc.stdout[-3000:]
    assert "known faults not read (" in proc.stdout and "every fault is reported as new" in proc.stdout
    assert (state / "known-faults.json").read_text() == "{broken"
