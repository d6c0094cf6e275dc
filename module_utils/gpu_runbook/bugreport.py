# SPDX-License-Identifier: Apache-2.0
"""Split an ``nvidia-bug-report.log`` (already decompressed) into the sources the other
parsers read.

nvidia-bug-report.sh writes one section per file or command, each opened by a line of
underscores (``____________________________________________``), a blank line and a header:
``*** /path`` for files, the command line itself for commands (``/usr/bin/nvidia-smi --query``,
then ``... --query --unit``, ``... nvlink --status`` in the same section), ``dmesg:`` for the
kernel ring buffer, ``Scanning kernel log files for NVIDIA kernel messages:`` for grep'd
logs (sub-headers ``  /var/log/kern.log:`` and ``  journalctl -b -0:``) and, in recent
versions, an InfiniBand section (``/usr/sbin/ibstat`` followed by ``Running InfiniBand
commands for device: mlx5_0`` and ibnetdiscover/ibswitches/iblinkinfo runs).

``split_bug_report(text) -> {"nvidia-smi-q.txt": ..., "kern.log": ..., "ibstat.txt": ...,
"ibv_devinfo.txt": ...}`` with only the parts found. Pure, standard library.
"""

import re

from .findings import strip_ansi

_SEP_RE = re.compile(r"^\s*_{20,}\s*$")
# a command header inside a section (report_command/append_command echo the command line)
_CMD_HDR_RE = re.compile(
    r"^(?:\S*/)?(?:nvidia-smi|ibstat|ibstatus|ibv_devinfo|iblinkinfo|ibnetdiscover|ibswitches|"
    r"perfquery|nvidia-debugdump|timeout\s+\d+\s+\S*mst)(?:\s+[^\s].*)?\s*$")
_RUNNING_IB_RE = re.compile(r"^Running InfiniBand commands for device:\s*\S+")
_SMI_Q_RE = re.compile(r"^(?:\S*/)?nvidia-smi\s+(?:--query|-q)(?:\s+(?:-a|--all))?\s*$")
_SMI_QX_RE = re.compile(r"^(?:\S*/)?nvidia-smi\s+(?:--query|-q)\s+(?:-x|--xml-format)\s*$")
_DMESG_RE = re.compile(r"^dmesg(?:\s+-\S+)*\s*:?\s*$")
_JOURNAL_K_RE = re.compile(r"^journalctl\b.*(?:\s-k\b|--dmesg\b).*$")
_SCAN_RE = re.compile(r"^Scanning kernel log files for NVIDIA kernel messages:")
_IBSTAT_RE = re.compile(r"^(?:\S*/)?ibstat(?:\s+-v)?\s*$")
_IBSTATUS_RE = re.compile(r"^(?:\S*/)?ibstatus\s*$")
_IBV_RE = re.compile(r"^(?:\S*/)?ibv_devinfo(?:\s+-v+)?\s*$")
_SCAN_NOTE_RE = re.compile(r"^(?:No NVIDIA kernel messages found|No suitable log found|\S+ is not readable)")
_SUBHDR_RE = re.compile(r"^\s{0,4}(?P<name>journalctl -b -?\d+|/\S+):\s*$")
# the prologue: 'uname: Linux node07 5.15.0-1063-nvidia #64-Ubuntu SMP ...' (uname -a)
_UNAME_RE = re.compile(r"^uname: +\S+ +([A-Za-z0-9][A-Za-z0-9_.\-]{0,252}) ", re.M)


def bug_report_hostname(text):
    """The host an nvidia-bug-report.log was taken on (its 'uname: ' prologue line), or None;
    a redacted name ('****-****') is none."""
    if isinstance(text, bytes):
        text = text[:65536].decode("utf-8", "replace")
    if not isinstance(text, str):
        return None
    m = _UNAME_RE.search(text[:65536])
    return m.group(1) if m else None


def _blocks(lines):
    """-> [(header, [content lines])]: a new block at each separator and at each command
    header; the header of a separator block is its first non-blank line."""
    blocks = []
    header = None
    body = []
    want_header = False
    for line in lines:
        if _SEP_RE.match(line):
            if header is not None or body:
                blocks.append((header, body))
            header, body, want_header = None, [], True
            continue
        if want_header:
            if not line.strip():
                continue
            header, body, want_header = line.strip(), [], False
            continue
        s = line.rstrip()
        if s and not s[0].isspace() and (_CMD_HDR_RE.match(s) or _RUNNING_IB_RE.match(s)):
            if header is not None or body:
                blocks.append((header, body))
            header, body = s.strip(), []
            continue
        body.append(line)
    if header is not None or body:
        blocks.append((header, body))
    return blocks


def _clean(body):
    # drop the blank lines report_command puts around a command's output
    start, end = 0, len(body)
    while start < end and not body[start].strip():
        start += 1
    while end > start and not body[end - 1].strip():
        end -= 1
    return "\n".join(body[start:end]) + ("\n" if end > start else "")


def _scan_sections(body):
    """The 'Scanning kernel log files' section: {sub-header: text}."""
    subs = {}
    cur = None
    for line in body:
        m = _SUBHDR_RE.match(line)
        if m:
            cur = m.group("name")
            subs.setdefault(cur, [])
            continue
        if cur is not None and not _SCAN_NOTE_RE.match(line):
            subs[cur].append(line)
    return subs


def split_bug_report(text):
    """nvidia-bug-report.log text -> {source_name: text} for the sections found. The caller
    guards it with findings.never_raise, so a bug here is a finding, not an empty result."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if not isinstance(text, str) or not text.strip():
        return {}
    if "\x1b" in text:
        text = strip_ansi(text)
    if "\x00" in text:
        text = text.replace("\x00", "")
    lines = [ln.rstrip("\r") for ln in text.splitlines()]
    blocks = _blocks(lines)
    out = {}
    smi_q, smi_x, dmesg, journal_k, scan, ibstat, ibstatus, ibv = [], [], [], [], [], [], [], []
    for header, body in blocks:
        h = header or ""
        if _SMI_Q_RE.match(h):
            smi_q.append(_clean(body))
        elif _SMI_QX_RE.match(h):
            smi_x.append(_clean(body))
        elif _DMESG_RE.match(h):
            dmesg.append(_clean(body))
        elif _JOURNAL_K_RE.match(h):
            journal_k.append(_clean(body))
        elif _SCAN_RE.match(h):
            scan.append(body)
        elif _IBSTAT_RE.match(h):
            ibstat.append(_clean(body))
        elif _IBSTATUS_RE.match(h):
            ibstatus.append(_clean(body))
        elif _IBV_RE.match(h):
            ibv.append(_clean(body))

    q = "".join(t for t in smi_q if "NVSMI LOG" in t or "Attached GPUs" in t or t.strip())
    if not q.strip():
        # no command header (hand-made excerpt): take the block holding the NVSMI LOG banner
        for header, body in blocks:
            joined = "\n".join(([header] if header else []) + body)
            i = joined.find("==============NVSMI LOG==============")
            if i >= 0:
                q = joined[i:]
                cut = re.search(r"^(?:\S*/)?nvidia-smi\s", q, re.M)
                if cut:
                    q = q[:cut.start()]
                break
    if q.strip():
        out["nvidia-smi-q.txt"] = q
    x = "".join(smi_x)
    if "<nvidia_smi_log" in x:
        out["nvidia-smi-q.xml"] = x

    kern = "".join(t for t in dmesg if t.strip())
    if not kern.strip():
        kern = "".join(t for t in journal_k if t.strip())
    if not kern.strip() and scan:
        # only the grep'd NVIDIA lines: the current boot's journal first, then the log files
        subs = {}
        for body in scan:
            for k, v in _scan_sections(body).items():
                subs.setdefault(k, []).extend(v)
        for want in ("journalctl -b -0", "journalctl -b 0", "/var/log/kern.log", "/var/log/messages",
                     "/var/log/kernel.log", "/var/log/dmesg"):
            # log paths may carry a host-root prefix (/.bottlerocket/rootfs/var/log/kern.log)
            keys = [k for k in subs if k == want or (want.startswith("/") and k.endswith(want))]
            if keys and _clean(subs[keys[0]]).strip():
                kern = _clean(subs[keys[0]])
                break
    if kern.strip():
        out["kern.log"] = kern

    ib = "".join(t for t in ibstat if t.strip())
    if not ib.strip():
        ib = "".join(t for t in ibstatus if t.strip())
    if ib.strip():
        out["ibstat.txt"] = ib
    iv = "".join(t for t in ibv if t.strip())
    if iv.strip():
        out["ibv_devinfo.txt"] = iv
    return out
