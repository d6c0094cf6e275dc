# SPDX-License-Identifier: Apache-2.0
"""What a text holds, read by its content: never by its file's name.

A capture file may be one tool's output, a log, or a paste of several commands' outputs and
log lines. ``plan(text)`` finds:

- a bug report (nvidia-bug-report.log), by its header and its section markers together
  (``Start of NVIDIA bug report log file`` / ``nvidia-bug-report.sh Version:``, or two
  sections opened by a line of underscores and a ``*** /path`` or command header): never by
  the script's name inside a line (the driver's own "please run nvidia-bug-report.sh" is a
  kernel line);
- the structured blocks (``BLOCKS``): nvidia-smi ``-q -x`` XML, ``-q`` text, the table,
  ``nvlink --status``/``-L``, ``--query-gpu`` CSV, ibstat, ibstatus, ibv_devinfo, perfquery, the IB
  sysfs dump; each from the line that opens it to the first line that cannot belong to it
  (a shell prompt, a log line with a timestamp, another block's opening line);
- the rest: lines for the line readers (the kernel-log reader and the job-log reader, each
  of which takes the lines of its own emitters and leaves the others).

Pure functions of text, stdlib only; every pattern is linear in its input.
"""

import re

from ..linefamily import ECHO_BANNER_RE, banner_re
from .blocks import (LOG_LINE_RE, PROMPT_RE, PROMPT_OUTPUT_RE, ONE_LINE_OK, ends_block, opening)


# -- the bug report -----------------------------------------------------------------------
_BR_HEADER_RE = re.compile(r"^\s{0,4}(?:Start of NVIDIA bug report log file|nvidia-bug-report\.sh Version:)", re.M)
_BR_SEP_RE = re.compile(r"^_{20,}[ \t]*\r?\n(?:[ \t]*\r?\n){0,2}(?:\*\*\* /|/usr/bin/nvidia-smi|dmesg|Scanning kernel "
                        r"log files|/sbin/lspci|lspci|uname)", re.M)


def is_bug_report(text):
    """True when ``text`` (its head is enough) is an nvidia-bug-report.log: its header, or two
    of its section openings (a line of underscores, then a ``*** /path`` or command header)."""
    head = text[:262144]
    if _BR_HEADER_RE.search(head):
        return True
    return len(_BR_SEP_RE.findall(head, 0, len(head))[:2]) >= 2



# a pdsh / clush / xdsh line prefix ('gpu01: '): blocks are found in what follows it, and keep it
_PREFIX_RE = re.compile(r"^[A-Za-z0-9][\w.\-]{0,252}: ")
# what names the host of the lines below it (kernlog/hosts.py reads them): kept with the block
_HEADER_RE = re.compile(r"^(?:[A-Za-z][\w.\-]{0,62}\d[\w.\-]{0,62}:?\s*$|-{3,}|[A-Za-z0-9][\w.\-]{0,252} \| "
                        r"(?:CHANGED|SUCCESS|FAILED|UNREACHABLE)|[A-Za-z0-9][\w.,\-\[\]]{0,400}(?: \(\d{1,9}\))?\s*$)")


_DATE_RE = re.compile(r"^[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\s*$")


def _unprefixed(line):
    m = _PREFIX_RE.match(line)
    return line[m.end():] if m else None


def loop_banner(lines):
    """(index of a pasted loop's 'echo "=== $h ==="', the regex of its headings) or (None, None)."""
    for k, line in enumerate(lines):
        if "echo" in line and "$" in line:
            m = ECHO_BANNER_RE.search(line)
            if m:
                return k, banner_re(m)
    return None, None


def _header_start(lines, i, banner=None):
    """The first of the lines just above line ``i`` that name its host (a shell prompt, a
    clush/dshbak or ansible header, a bare node name, a pasted loop's banner), or ``i``."""
    k, start = i - 1, i
    while k >= 0 and i - k <= 4:
        line = lines[k].rstrip("\r")
        if not line.strip() or _DATE_RE.match(line):  # nvidia-smi prints the date above its table
            k -= 1
            continue
        indent = len(line) - len(line.lstrip(" "))
        prompt = PROMPT_RE.match(line[indent:] if indent <= 8 else line)  # under a code block's indent
        prompt = prompt or (banner is not None and banner.match(line))
        if prompt or (_HEADER_RE.match(line) and not LOG_LINE_RE.match(line)):
            start = k
            if prompt:
                break
            k -= 1
            continue
        break
    return start


def find_blocks(lines, banner=None):
    """The structured blocks of a text's lines: [(source, first index, end index, header
    index)], the end exclusive; ``header index`` <= first: the lines above the block that name
    its host. A block of one line only (an opening with nothing after it) is no block, but for
    nvidia-smi's own one-line messages. Lines may carry a pdsh ``host: `` prefix."""
    out, i, n = [], 0, len(lines)
    while i < n:
        line = lines[i].rstrip("\r")
        if not line.strip():
            i += 1
            continue
        opened = opening(line, lines[i + 1:i + 4])
        if opened is None and line[:1] == " " and line[:4].strip() == "":
            # a paste indented as a code block (markdown, rst): its opening under the indent
            opened = opening(line.lstrip(" "), lines[i + 1:i + 4])
        if opened is None and "@" in line[:400]:
            m = PROMPT_OUTPUT_RE.match(line)
            opened = opening(m.group(1), lines[i + 1:i + 4]) if m else None
        prefixed = False
        if opened is None:
            body = _unprefixed(line)
            opened = opening(body, [_unprefixed(x) or x for x in lines[i + 1:i + 4]]) if body else None
            prefixed = opened is not None
        if opened is None:
            i += 1
            continue
        source, belongs = opened
        j = i + 1
        if source == "nvidia-smi-q.xml":
            while j < n and "</nvidia_smi_log>" not in lines[j - 1]:
                j += 1
        else:
            while j < n:
                nxt = lines[j].rstrip("\r")
                if prefixed:
                    nxt = _unprefixed(nxt)
                    if nxt is None:
                        break
                if not belongs(nxt) or ends_block(nxt, lines[j + 1:j + 4], source):
                    break
                j += 1
            while j > i + 1 and not lines[j - 1].strip():  # trailing blanks are not the block's
                j -= 1
        if j > i + 1 or source in ONE_LINE_OK:
            out.append((source, i, j, _header_start(lines, i, banner)))
        i = max(j, i + 1)
    return out


class Plan(object):
    """What one text holds: ``bug_report`` (bool), ``blocks`` ({source: text} of the structured
    blocks, several of one source joined), ``rest`` (the text with every block's lines blanked,
    so line numbers stay the file's; None when nothing is left for the line readers) and
    ``block_lines`` (how many lines the blocks took)."""

    def __init__(self, bug_report=False, blocks=None, rest=None, block_lines=0):
        self.bug_report = bug_report
        self.blocks = blocks or {}
        self.rest = rest
        self.block_lines = block_lines


def plan(text):
    """-> Plan of ``text`` (see Plan)."""
    if is_bug_report(text):
        return Plan(bug_report=True)
    lines = text.split("\n")
    echo_at, banner = loop_banner(lines) if "echo" in text else (None, None)
    found = find_blocks(lines, banner)
    if not found:
        return Plan(rest=text)
    blocks, taken, ends = {}, 0, {}
    echo = lines[echo_at] if echo_at is not None else None
    for source, i, j, h in found:
        # whole lines (a newline ended the last one when a line follows), with those naming its
        # host; blank lines before it, so a parser's line numbers are the file's (not for XML:
        # a declaration must open the document). A loop's echo stays in its place: it says
        # what its banners are (kernlog/hosts.py)
        before = ends.get(source, 0)
        if source.endswith(".xml"):
            pad = ""
        elif echo is not None and before <= echo_at < h:
            pad = "\n" * (echo_at - before) + echo + "\n" * (h - echo_at)
        else:
            pad = "\n" * (h - before)
        part = pad + "\n".join(lines[h:j]) + ("\n" if j < len(lines) else "")
        blocks[source] = blocks[source] + part if source in blocks else part
        ends[source] = j
        for k in range(i, j):
            lines[k] = ""
        taken += j - i
    rest = "\n".join(lines)
    return Plan(blocks=blocks, rest=rest if rest.strip() else None, block_lines=taken)
