"""`gpu-runbook diagnose|remediate -e ...` read as ansible-playbook reads -e, and an @FILE read
only if it is a regular file of bounded size (a FIFO or /dev/zero must not hang the command)."""
import os
import threading

import pytest

from gpu_runbook.runbook import RunbookError, parse_extra_vars


def test_pairs_json_and_files_later_ones_win(tmp_path):
    f = tmp_path / "vars.yml"
    f.write_text("max_drain: 3\nrungs: [drain]\n")
    got = parse_extra_vars(["max_drain=1 incident_id=INC-1", '{"rail_errors": "drain"}', "@%s" % f])
    assert got == {"max_drain": 3, "incident_id": "INC-1", "rail_errors": "drain", "rungs": ["drain"]}


@pytest.mark.parametrize("value", ["justaword", "a=1 b", "1x=2", "'unbalanced=1"])
def test_bad_values_are_one_line_errors(value):
    with pytest.raises(RunbookError) as e:
        parse_extra_vars([value])
    assert "\n" not in str(e.value) and "-e" in str(e.value)


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "vars.fifo"
    os.mkfifo(fifo)
    out = {}

    def call():
        try:
            parse_extra_vars(["@%s" % fifo])
        except RunbookError as exc:
            out["err"] = str(exc)

    t = threading.Thread(target=call, daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive(), "reading -e @FIFO blocked"
    assert "FIFO" in out["err"] or "fifo" in out["err"].lower(), out


def test_a_device_and_a_huge_file_are_refused(tmp_path):
    with pytest.raises(RunbookError, match="not read"):
        parse_extra_vars(["@/dev/zero"])
    big = tmp_path / "big.yml"
    with open(big, "wb") as fh:
        fh.truncate(17 * 1024 * 1024)
    with pytest.raises(RunbookError, match="larger than 16 MiB"):
        parse_extra_vars(["@%s" % big])
