"""State that cannot be poisoned (issue 25, items 8 and 9): the ledger's state directory, its
files and its records, attacked through the real file system (links, FIFOs, sockets, torn
lines from a real short write, records from the future, host-name aliases)."""

import json
import os
import socket
import subprocess
import sys
from datetime import datetime, timedelta, timezone

import pytest

from gpu_runbook.ledger import (LedgerError, acquire, append_lines, clear, decide, fault_entry, read_lines, read_lock,
                                remedy_entry)
from gpu_runbook.safewrite import WriteRefused, check_private_dir, open_regular, read_bytes

NOW = datetime(2024, 5, 10, 12, 0, 0, tzinfo=timezone.utc)
SERIAL = {"serial": "1652221000123", "uuid": "GPU-aaaa", "pci": "0000:3b:00.0"}
OWNER = {"user": "u", "host": "ctl", "pid": 1}


def state(tmp_path):
    sd = tmp_path / "state"
    sd.mkdir(mode=0o700)
    return sd


# ------------------------------------------------------------------ the state directory

def test_group_or_world_writable_state_dir_is_refused_naming_it(tmp_path):
    sd = state(tmp_path)
    sd.chmod(0o777)
    with pytest.raises(LedgerError) as e:
        append_lines(str(sd / "history.jsonl"), [{"a": 1}], "GPU history")
    msg = e.value.msg
    assert e.value.kind == "unsafe" and str(sd) in msg and "mode 0777" in msg and "group/world-writable" in msg
    assert "chmod 0700 %s" % sd in msg and "must not run disruptive steps" in msg
    assert not (sd / "history.jsonl").exists()
    for fn in (lambda: read_lines(str(sd / "history.jsonl")), lambda: read_lock(str(sd))):
        with pytest.raises(LedgerError) as e:
            fn()
        assert "mode 0777" in e.value.msg
    sd.chmod(0o750)  # group-readable is fine: only writers can plant
    assert append_lines(str(sd / "history.jsonl"), [{"a": 1}], "GPU history") == 1


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a directory to another user")
def test_state_dir_of_another_user_is_refused_naming_owner_and_fix(tmp_path):
    sd = state(tmp_path)
    os.chown(str(sd), 65534, 65534)
    with pytest.raises(WriteRefused) as e:
        check_private_dir(str(sd), "ledger state directory")
    assert "owned by" in str(e.value) and "chown root %s" % sd in str(e.value)
    with pytest.raises(LedgerError) as e:
        acquire(str(sd), OWNER, "INC-1", NOW)
    assert e.value.kind == "unsafe" and not (sd / "lock.json").exists()


def test_a_missing_state_dir_is_created_private(tmp_path):
    sd = tmp_path / "new" / "state"
    acquire(str(sd), OWNER, "INC-1", NOW)
    assert (sd.stat().st_mode & 0o077) == 0


# ------------------------------------------------------------------ records from the future

def test_a_record_from_the_future_is_refused_on_record():
    with pytest.raises(LedgerError) as e:
        fault_entry({"host": "n1", "gpu": SERIAL, "xid": 79, "when": "2099-01-01T00:00:00Z"}, NOW)
    assert "future" in e.value.msg and "2099-01-01" in e.value.msg
    # inside the clock skew it is fine
    ok = remedy_entry({"host": "n1", "gpu": SERIAL, "rung": "gpu_reset", "result": "ok",
                       "when": (NOW + timedelta(seconds=120)).isoformat()}, NOW)
    assert ok["rung"] == "gpu_reset"


def test_three_planted_2099_faults_do_not_make_a_good_gpu_an_rma(tmp_path):
    sd = state(tmp_path)
    path = str(sd / "history.jsonl")
    real = fault_entry({"host": "n1", "gpu": SERIAL, "xid": 48}, NOW - timedelta(hours=1))
    planted = [dict(real, when="2099-0%d-01T00:00:00+00:00" % m) for m in (1, 2, 3)]
    with open(path, "w") as fh:  # planted by hand, past the module's refusal
        fh.write("".join(json.dumps(e) + "\n" for e in [real] + planted))
    history, notes = read_lines(path, NOW)
    assert history == [real]
    assert len(notes) == 1 and "3 record(s) from the future" in notes[0] and "2099-01-01" in notes[0]
    assert "2099-03-01" in notes[0]
    d = decide(history, {"host": "n1", "gpu": SERIAL, "proposed_rung": "gpu_reset"}, NOW)
    assert d["rung"] == "gpu_reset"
    # the pure rule refuses them too, whoever hands it the list
    assert decide([real] + planted, {"host": "n1", "gpu": SERIAL, "proposed_rung": "gpu_reset"}, NOW)["rung"] \
        == "gpu_reset"


# ------------------------------------------------------------------ torn lines

_SHORT_WRITE = r"""
import resource, signal, sys, json
sys.path.insert(0, %r)
from gpu_runbook.ledger import LedgerError, append_lines
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (%d, %d))
try:
    append_lines(%r, [{"type": "remedy", "pad": "x" * 400}], "GPU history")
    print("no error")
except LedgerError as e:
    print(e.msg)
"""


def _remedy(when, host="n1"):
    return remedy_entry({"host": host, "gpu": SERIAL, "rung": "gpu_reset", "result": "failed",
                         "incident": "INC-1", "when": when.isoformat()}, NOW)


def test_a_real_short_write_is_an_error_and_the_torn_line_is_skipped_by_every_read(tmp_path):
    sd = state(tmp_path)
    path = str(sd / "history.jsonl")
    append_lines(path, [_remedy(NOW - timedelta(hours=3))], "GPU history")
    size = os.path.getsize(path)
    mu = os.path.join(os.path.dirname(__file__), "..", "..", "module_utils")
    limit = size + 100  # the file may grow by 100 bytes: the next line is cut short, as on a full disk
    proc = subprocess.run([sys.executable, "-c", _SHORT_WRITE % (os.path.abspath(mu), limit, limit, path)],
                          capture_output=True, text=True)
    assert "short write" in proc.stdout and "must not run disruptive steps" in proc.stdout, proc.stdout + proc.stderr
    with open(path, "rb") as fh:
        assert not fh.read().endswith(b"\n")  # torn
    # the next append ends the torn line first: the new record stays whole
    append_lines(path, [_remedy(NOW - timedelta(hours=1))], "GPU history")
    history, notes = read_lines(path, NOW)
    assert len(history) == 2 and len(notes) == 1 and ":2: not JSON, skipped" in notes[0]
    with open(path) as fh:
        assert json.loads(fh.read().splitlines()[-1])["rung"] == "gpu_reset"  # its own line, not glued on
    assert "kept" not in notes[0]
    d = decide(history, {"host": "n1", "gpu": SERIAL, "proposed_rung": "gpu_reset"}, NOW)
    assert d["rung"] == "reboot" and "gpu_reset tried 2 times" in d["reason"]


def test_a_whole_record_glued_behind_a_torn_line_still_counts(tmp_path):
    sd = state(tmp_path)
    path = sd / "history.jsonl"
    first, second = (json.dumps(_remedy(NOW - timedelta(hours=h)), sort_keys=True) for h in (3, 1))
    # an older writer with no newline repair: torn prefix + the next record on one line
    path.write_text(first + "\n" + second[:40] + second + "\n")
    history, notes = read_lines(str(path), NOW)
    assert len(history) == 2 and "whole record after it kept" in notes[0]
    d = decide(history, {"host": "n1", "gpu": SERIAL, "proposed_rung": "gpu_reset"}, NOW)
    assert d["rung"] == "reboot", d  # both tries count: not one retry too few


# ------------------------------------------------------------------ budgets follow the GPU

def test_the_same_serial_under_the_fqdn_shows_tried_1_of_2():
    h = [_remedy(NOW - timedelta(hours=1), host="gpu-r1-n03")]
    d = decide(h, {"host": "gpu-r1-n03.cluster.local", "gpu": {"serial": SERIAL["serial"]},
                   "proposed_rung": "gpu_reset"}, NOW)
    assert d["rung"] == "gpu_reset" and "tried 1 of 2" in d["reason"], d
    # the GPU moved to another node: still that GPU's budget
    moved = decide(h, {"host": "gpu-r7-n11", "gpu": {"uuid": "gpu-aaaa"}, "proposed_rung": "gpu_reset"}, NOW)
    assert "tried 1 of 2" in moved["reason"]
    # another serial in the same slot of the same host is another board
    other = decide(h, {"host": "gpu-r1-n03", "gpu": {"serial": "999", "pci": SERIAL["pci"]},
                       "proposed_rung": "gpu_reset"}, NOW)
    assert "tried 0 of 2" in other["reason"]


def test_a_gpu_without_serial_or_uuid_falls_back_to_the_host_short_name():
    h = [remedy_entry({"host": "n03", "pci": "0000:3b:00.0", "rung": "gpu_reset", "result": "ok"}, NOW)]
    fqdn = decide(h, {"host": "N03.cluster.local", "pci": "0000:3b:00.0", "proposed_rung": "gpu_reset"}, NOW)
    assert "tried 1 of 2" in fqdn["reason"]
    elsewhere = decide(h, {"host": "n04", "pci": "0000:3b:00.0", "proposed_rung": "gpu_reset"}, NOW)
    assert "tried 0 of 2" in elsewhere["reason"]


# ------------------------------------------------------------------ links, FIFOs, sockets, devices

def _fifo(path):
    os.mkfifo(str(path))
    return path


@pytest.mark.parametrize("name", ["history.jsonl", "audit.jsonl"])
def test_a_fifo_as_a_ledger_file_is_refused_never_waited_on(tmp_path, name):
    sd = state(tmp_path)
    _fifo(sd / name)
    with pytest.raises(LedgerError) as e:
        read_lines(str(sd / name), NOW)
    assert "is a FIFO" in e.value.msg and name in e.value.msg
    with pytest.raises(LedgerError) as e:
        append_lines(str(sd / name), [{"a": 1}])
    assert "is a FIFO" in e.value.msg and e.value.kind == "unsafe"


def test_a_socket_a_device_and_a_link_are_refused_by_name(tmp_path):
    sd = state(tmp_path)
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(sd / "history.jsonl"))
        with pytest.raises(LedgerError) as e:
            read_lines(str(sd / "history.jsonl"), NOW)
        assert "is a socket" in e.value.msg
    finally:
        sock.close()
    real = tmp_path / "elsewhere.jsonl"
    real.write_text('{"type": "fault"}\n')
    os.symlink(str(real), str(sd / "audit.jsonl"))
    with pytest.raises(LedgerError) as e:
        append_lines(str(sd / "audit.jsonl"), [{"a": 1}])
    assert "is a symlink" in e.value.msg and real.read_text() == '{"type": "fault"}\n'
    with pytest.raises(WriteRefused) as w:
        open_regular("/dev/null", os.O_RDONLY, "history")
    assert "character device" in str(w.value)
    assert read_bytes(str(sd / "none")) is None


@pytest.mark.parametrize("make", ["dangling", "link", "fifo"])
def test_a_strange_lock_json_refuses_the_lock_and_the_clear_unlinks_it(tmp_path, make):
    sd = state(tmp_path)
    lock = sd / "lock.json"
    target = tmp_path / "target"
    if make == "fifo":
        _fifo(lock)
    else:
        if make == "link":
            target.write_text("precious\n")
        os.symlink(str(target), str(lock))
    with pytest.raises(LedgerError) as e:
        acquire(str(sd), OWNER, "INC-1", NOW)
    assert e.value.kind in ("held", "stale") and "unreadable lock file" in e.value.msg
    assert "state=absent force=true" in e.value.msg
    assert ("FIFO" if make == "fifo" else "symlink") in e.value.msg
    cleared = clear(str(sd), True, NOW)
    assert cleared["id"] is None and not os.path.lexists(str(lock))
    assert target.exists() == (make == "link") and (make != "link" or target.read_text() == "precious\n")
    lk, changed = acquire(str(sd), OWNER, "INC-1", NOW)
    assert changed and lk["id"]
