"""Files made by someone else: FIFOs, devices, links to secrets, unlistable directories, logs
full of terminal escapes, a closed pipe or a full disk for the output, and a year-less
syslog line near New Year. Each must end in a clear message, never a hang or a traceback.

What could hang (a FIFO, /dev/zero) runs in a child with a deadline and a memory cap, so a
regression fails the test instead of stopping the suite."""

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from datetime import datetime, timedelta, timezone

import pytest

from gpu_runbook.cli import main
from gpu_runbook.kernlog.scanner import KernelLogScanner
from gpu_runbook import textio
from tests.conftest import DEMO

CAPS = os.path.join(os.path.dirname(DEMO), "demo-captures", "nodes")
EXE = os.path.join(os.path.dirname(sys.executable), "gpu-runbook")
DEADLINE = 20  # seconds: a blocked open or an endless read would take forever


def _cap_memory():
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def _child(code, *args):
    """Run ``code`` (Python) in a child with a deadline and 2 GiB of memory."""
    return subprocess.run([sys.executable, "-c", code] + list(args), capture_output=True, text=True,
                          timeout=DEADLINE, preexec_fn=_cap_memory)


READ_TAIL = ("import sys\nfrom gpu_runbook.probes import read_tail\n"
             "try:\n    read_tail(sys.argv[1], 1 << 20)\n    print('read')\n"
             "except OSError as exc:\n    print('refused:', exc.strerror)\n")


@pytest.fixture
def world_dir():
    """A directory outside root's private /tmp/pytest-of-root, which user nobody can enter."""
    path = tempfile.mkdtemp(prefix="gpu-runbook-hostile-")
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path)


def test_a_fifo_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "slurm-7.err"
    os.mkfifo(fifo)
    proc = _child(READ_TAIL, str(fifo))
    assert proc.stdout.strip() == "refused: skipped: a FIFO, not a regular file", proc.stderr


def test_an_endless_device_is_refused_not_read(tmp_path):
    link = tmp_path / "slurm-7.out"
    os.symlink("/dev/zero", link)
    for path in ("/dev/zero", "/dev/urandom", str(link)):
        proc = _child(READ_TAIL, path)
        assert proc.stdout.strip() == "refused: skipped: a character device, not a regular file", proc.stderr


def test_a_socket_is_refused(tmp_path):
    import socket
    path = str(tmp_path / "s")
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(path)
        with pytest.raises(textio.NotRegularFile, match="a socket"):
            textio.open_regular(path)
    finally:
        sock.close()


def test_a_link_is_refused_where_none_is_followed(tmp_path):
    target = tmp_path / "log"
    target.write_text("NCCL INFO\n")
    link = tmp_path / "link"
    os.symlink(target, link)
    with pytest.raises(textio.NotRegularFile, match="a symlink"):
        textio.open_regular(str(link), nofollow=True)
    fd, _st = textio.open_regular(str(link))  # followed where the caller allows it
    os.close(fd)


def test_a_job_log_linked_to_shadow_is_not_readable_by_the_jobs_user(world_dir):
    link = os.path.join(world_dir, "slurm-7.out")
    os.symlink("/etc/shadow", link)
    assert textio.why_not_readable_by(link, 1001) == "skipped: uid 1001 may not read /etc/shadow"
    private = os.path.join(world_dir, "home")
    os.mkdir(private, 0o700)  # root's: user 1001 cannot enter it
    inside = os.path.join(private, "x.out")
    with open(inside, "w") as fh:
        fh.write("x")
    assert textio.why_not_readable_by(inside, 1001) == "skipped: uid 1001 cannot enter %s" % private
    mine = os.path.join(world_dir, "mine.out")
    with open(mine, "w") as fh:
        fh.write("x")
    os.chown(mine, 1001, 1001)
    os.chmod(mine, 0o600)
    assert textio.why_not_readable_by(mine, 1001) is None
    assert textio.why_not_readable_by(mine, 1002) == "skipped: uid 1002 may not read %s" % mine


def test_capture_fifos_and_devices_do_not_hang_the_cli(tmp_path):
    host = tmp_path / "gpu-r3-n05"
    shutil.copytree(os.path.join(CAPS, "gpu-r3-n01"), host)
    os.mkfifo(host / "dmesg.txt")
    os.mkfifo(host / "nccl.log")
    os.symlink("/dev/zero", host / "nvidia-smi.txt")
    proc = subprocess.run([EXE, "analyze", str(host), "--format", "json"], capture_output=True, text=True,
                          timeout=DEADLINE, preexec_fn=_cap_memory)
    doc = json.loads(proc.stdout)
    notes = [f["message"] for f in doc["hosts"][0]["findings"] if f["kind"] == "capture_unreadable"]
    assert sorted(notes) == ["dmesg.txt is a FIFO, not a regular file: it was not read",
                             "nccl.log is a FIFO, not a regular file: it was not read",
                             "nvidia-smi.txt is a device, not a regular file: it was not read"]


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv")
def test_one_unlistable_host_directory_does_not_stop_the_others(world_dir):
    for name in ("gpu-r3-n01", "gpu-r3-n03"):
        shutil.copytree(os.path.join(CAPS, name), os.path.join(world_dir, name))
    locked = os.path.join(world_dir, "gpu-r3-n02")
    shutil.copytree(os.path.join(CAPS, "gpu-r3-n02"), locked)
    for root, dirs, files in os.walk(world_dir):
        for entry in dirs + files:
            os.chmod(os.path.join(root, entry), 0o755 if entry in dirs else 0o644)
    os.chmod(locked, 0o000)  # root lists it anyway: the CLI runs as nobody
    proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                           EXE, "analyze", world_dir, "--format", "json"],
                          capture_output=True, text=True, timeout=120, env=dict(os.environ, HOME=world_dir))
    assert "Traceback" not in proc.stderr
    doc = json.loads(proc.stdout)
    by_host = {h["host"]: h for h in doc["hosts"]}
    assert by_host["gpu-r3-n03"]["severity"] == "critical"  # the others were analysed
    assert by_host["gpu-r3-n01"]["verdict"] == "healthy"
    bad = by_host["gpu-r3-n02"]
    assert bad["verdict"] == "unknown"
    kinds = [f["kind"] for f in bad["findings"]]
    assert "no_evidence" in kinds
    assert "gpu-r3-n02 could not be read: Permission denied" in [f["message"] for f in bad["findings"]]
    assert "gpu-r3-n02: no usable evidence" in proc.stderr


ESCAPES = ("\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\", "\x1bP+q544e\x1b\\", "\x1bc", "\x0e\x0f",
           "\x9b31m", "\x90dcs\x9c", "\x07", "\x08\x08\x08", "\rOK", "\x1b[2J", "\u202egnp.exe")


def _hostile_kernel_log(tmp_path):
    host = tmp_path / "gpu-r3-n09"
    host.mkdir()
    lines = ["2026-12-02T07:09:%02d+00:00 gpu-r3-n09 kernel: NVRM: Xid (PCI:0000:5d:00): 79, pid=1, name=%s, "
             "GPU has fallen off the bus. %s" % (i, esc, esc) for i, esc in enumerate(ESCAPES)]
    lines.append("2026-12-02T07:10:00+00:00 gpu-r3-n09 kernel: mlx5_core 0000:3b:00.0: %s link down" % ESCAPES[0])
    (host / "kern.log").write_text("\n".join(lines) + "\n")
    return host


def _assert_printable(out):
    bad = sorted({"%#x" % ord(c) for c in out if (ord(c) < 0x20 and c not in "\n\t") or 0x7f <= ord(c) <= 0x9f
                  or c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"})
    assert not bad, bad


def test_terminal_escapes_in_logs_are_printed_escaped(tmp_path):
    host = _hostile_kernel_log(tmp_path)
    proc = subprocess.run([EXE, "analyze", str(host)], capture_output=True, timeout=120)
    out = proc.stdout.decode("utf-8")
    assert "Xid 79" in out or "79" in out
    _assert_printable(out)
    _assert_printable(proc.stderr.decode("utf-8"))
    assert "\\x1b]8;;https://evil.example/" in out or "\\x1b" in out  # seen, not acted on


def test_terminal_escapes_stay_json_and_keep_their_text(tmp_path):
    host = _hostile_kernel_log(tmp_path)
    proc = subprocess.run([EXE, "analyze", str(host), "--format", "json"], capture_output=True, timeout=120)
    out = proc.stdout.decode("utf-8")
    _assert_printable(out)
    doc = json.loads(out)
    evidence = "".join(f.get("evidence") or "" for f in doc["hosts"][0]["findings"])
    assert "name=\x1b]8;;https://evil.example/\x1b\\click" in evidence  # the log's text, kept as it was


def test_printable_escapes_every_control_but_newline_and_tab():
    text = "".join(chr(c) for c in range(0x00, 0xa0)) + "\u202e\u2066"
    out = textio.printable(text)
    _assert_printable(out)
    assert "\n" in out and "\t" in out and "\\x1b" in out and "\\x9b" in out and "\\u202e" in out


def test_closed_pipe_is_one_line_and_status_4():
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first byte, as `| head -1` is after its line
    try:
        proc = subprocess.run([EXE, "analyze", os.path.join(CAPS, "gpu-r3-n03")], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert proc.returncode == 4
    assert proc.stderr.strip() == "gpu-runbook: output could not be written: Broken pipe"


def test_head_one_ends_without_a_traceback():
    shell = "%s analyze %s | head -1" % (EXE, os.path.join(CAPS, "gpu-r3-n03"))
    proc = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=120)
    assert proc.stdout.count("\n") == 1
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_full_disk_for_the_output_is_one_line_and_status_4(fmt):
    with open("/dev/full", "w") as full:
        proc = subprocess.run([EXE, "analyze", os.path.join(CAPS, "gpu-r3-n03"), "--format", fmt],
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert proc.returncode == 4
    assert proc.stderr.strip() == "gpu-runbook: output could not be written: No space left on device"


def test_help_documents_status_4():
    proc = subprocess.run([EXE, "analyze", "--help"], capture_output=True, text=True, timeout=60)
    assert "  4  the output could not be written" in proc.stdout


def _xid_time(line, reference):
    sc = KernelLogScanner(year=reference, tz="UTC")
    sc.feed(line)
    sc.close()
    facts, findings = sc.result()
    xid = next(f for f in findings if f.get("xid") == 79)
    return xid["first"]


XID_LINE = "%s host kernel: NVRM: Xid (PCI:0000:5d:00): 79, pid=1, name=x, GPU has fallen off the bus."


def test_year_less_syslog_line_is_never_dated_after_the_capture():
    new_year = datetime(2026, 1, 1, 0, 0, 30, tzinfo=timezone.utc)
    assert _xid_time(XID_LINE % "Dec 31 23:59:59", new_year).startswith("2025-12-31T23:59:59")
    jan3 = datetime(2026, 1, 3, tzinfo=timezone.utc)
    assert _xid_time(XID_LINE % "Jan  2 07:09:51", jan3).startswith("2026-01-02T07:09:51")


def test_year_less_syslog_line_is_never_dated_in_the_future():
    now = datetime.now(timezone.utc)
    when = datetime.fromisoformat(_xid_time(XID_LINE % "Dec 31 23:59:59", None))
    assert when <= now + timedelta(days=1)  # a day of slack for a node's clock or zone ahead
    this_years = datetime(now.year, 12, 31, 23, 59, 59, tzinfo=timezone.utc)
    assert when.year == (now.year if this_years <= now + timedelta(days=1) else now.year - 1)


def test_capture_mtime_dates_year_less_lines(tmp_path, capsys):
    host = tmp_path / "gpu-r3-n08"
    host.mkdir()
    log = host / "kern.log"
    log.write_text(XID_LINE % "Dec 31 23:59:59" + "\n")
    captured = datetime(2026, 1, 1, 0, 5, tzinfo=timezone.utc).timestamp()
    os.utime(log, (captured, captured))
    assert main(["analyze", str(host), "--format", "json", "--tz", "UTC"]) == 2
    doc = json.loads(capsys.readouterr().out)
    xid = next(f for f in doc["hosts"][0]["findings"] if f.get("xid") == 79)
    assert xid["first"].startswith("2025-12-31T23:59:59")


def test_a_report_link_made_after_the_check_is_replaced_not_written_through(tmp_path, monkeypatch):
    """The race: the link appears between the check and the write. The check is taken away to
    stand for it; the write must still land in a new file, not the link's target."""
    from gpu_runbook import reports, safewrite
    outside = tmp_path / "authorized_keys"
    outside.write_text("root's key\n")
    report = tmp_path / "report"
    report.mkdir()
    os.symlink(outside, report / "report.json")
    monkeypatch.setattr(safewrite, "check_target", lambda path, what="target": None)
    analysis = json.loads(subprocess.run([EXE, "analyze", os.path.join(CAPS, "gpu-r3-n01"), "--format", "json"],
                                         capture_output=True, text=True, timeout=120).stdout)
    reports.write_reports(analysis, str(report))
    assert outside.read_text() == "root's key\n"
    assert not os.path.islink(report / "report.json")
    assert json.loads((report / "report.json").read_text())["hosts"][0]["host"] == "gpu-r3-n01"
