# SPDX-License-Identifier: Apache-2.0
"""Who wrote a line: the host a capture's text names, and the line without what named it.

One capture file may hold the lines of many hosts. The host of a line is, first found first:

- its own prefix: ``pdsh -w`` / ``clush`` (line mode) / ``xdsh`` print ``node17: <line>``;
  the prefix is stripped, so the rest parses as the node wrote it;
- its syslog / journal hostname field: BSD syslog and journalctl ``short`` / ``short-precise``
  (``Dec  1 07:09:12[.123456] node07 kernel: ...``, any locale's month), RFC 3339 / journalctl
  ``short-iso`` (``2024-05-01T07:09:12.123+00:00 node07 kernel: ...``) and RFC 5424
  (``<6>1 2024-05-01T07:09:12Z node07 kernel - - - ...``);
- the block it sits in: the lines after a shell prompt (``root@node4:~# dmesg -T``,
  ``[root@node4 ~]# ...``) until the next prompt; a ``clush -b`` / ``dshbak`` header
  (``---------------`` / ``node[1-3] (3)`` / ``---------------``, or one line
  ``----- node[1-3] -----``) whose lines belong to every node of the set; an ansible ad-hoc
  header (``node17 | CHANGED | rc=0 >>``); a line that is only a node name, at the start or
  after a blank line (``echo $h; ssh $h nvidia-smi`` loops).

A ``node: `` prefix counts only once its host is established: its rest looks like a log or
tool line (a timestamp, NVRM, an nvidia-smi table...), so ``NVRM: Xid`` or ``kernel: ...``
never name a host. ``node07`` and ``node07.cluster.local`` are one host (the first name seen).
Pure, stdlib, bounded: at most ``max_hosts`` hosts (the lines of more are counted, not routed);
every pattern is linear-time on hostile input.
"""

import itertools
import re

from ..findings import has_escape, strip_ansi, unpaste
from ..linefamily import _MONTH, SYSLOG_HOST, embedded_syslog  # noqa: F401 (SYSLOG_HOST: hostscan's)
from ..linefamily import ECHO_BANNER_RE, banner_re
from ..linefamily import NOT_HOSTS as _NOT_HOSTS, hostlike as _hostlike, prompt  # noqa: F401 (_NOT_HOSTS: hostscan's)

MAX_HOSTS = 4096
_MAX_SET = 4096  # names one node-set header may expand to
_MAX_PART = 1024  # a longer comma-separated part of a node set is no host set
_NUMBER_RE = re.compile(r"[0-9]{1,18}\Z")

_NAME = r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,252}"
_PREFIX_RE = re.compile(r"(" + _NAME + r"): ")
_ANSIBLE_RE = re.compile(r"(" + _NAME + r") \| (?:CHANGED|SUCCESS|FAILED!?|UNREACHABLE!?)(?: \||  ?=>| >>|$)")
_DASHES_RE = re.compile(r"-{3,}\s*$")
# 'for h in ...; do echo $h; ssh $h cmd; done': a line that is only a node name (with a digit),
# at the start or after a blank line, heads that node's output
_BARE_RE = re.compile(r"([A-Za-z][A-Za-z0-9_.\-]{0,62}\d[A-Za-z0-9_.\-]{0,62}):?\s*$")
# 'uname -a' ('Linux gpu07 5.15.0-91-generic #101-Ubuntu SMP ... x86_64 GNU/Linux') or 'uname -snm'
# ('Linux gpu07 x86_64') pasted above a command's output: the node it was run on
# (the release, then the build's '#N'; or the machine ending the line)
_UNAME_RE = re.compile(r"Linux (" + _NAME + r") (?:\d{1,3}\.\d{1,3}\.\d{1,3}[\w.\-+~]{0,64} #\d|"
                       r"(?:x86_64|aarch64|ppc64le|s390x)\s*$)")
_SET_LINE_RE = re.compile(r"([A-Za-z0-9][A-Za-z0-9_.,\-\[\]]{0,4095})(?: \(\d{1,9}\))?\s*$")
_SET_INLINE_RE = re.compile(r"^-{3,} ([A-Za-z0-9][A-Za-z0-9_.,\-\[\]]{0,4095})(?: \(\d{1,9}\))? -{3,}\s*$")
_SYSLOG_RE = re.compile(SYSLOG_HOST)
# The node a Slurm daemon's or client's line is about (SchedMD/slurm: ping_nodes.c 'Nodes %s not
# responding', node_mgr.c 'Node %s now responding' / 'Node %s unexpectedly rebooted', power_save.c
# 'node %s not resumed by ResumeTimeout', job_mgr.c 'Killing %pJ on failed node %s', 'update_node:
# node %s reason set to', srun 'Node failure on %s', slurmstepd '*** STEP %s [STEPD TERMINATED ]ON %s'):
# the line is that node's (a node set names each of its nodes)
_NODESET = r"([A-Za-z0-9][\w.\-]{0,126}(?:\[[\d,\-]{1,400}\][\w.\-]{0,63})?)"
SLURM_NODE_RE = re.compile(
    r"(?:\b[Nn]odes? " + _NODESET + r" (?:not responding|now responding|unexpectedly rebooted|not resumed by)"
    r"|on failed node " + _NODESET + r"|update_node: node " + _NODESET + r" (?:reason|state) set to"
    r"|\bNode failure on " + _NODESET + r"|\*\*\* (?:STEP|JOB) \S{1,40} (?:STEPD TERMINATED )?ON " + _NODESET + r" "
    # slurmctld on a node's registration (node_mgr.c 'Setting node %s state to INVAL with reason:%s',
    # 'drain_nodes: node %s state set to DRAIN'; proc_req.c '_slurm_rpc_node_registration node=%s: %s';
    # gres.c '_node_config_validate: gres/gpu: Count changed on node %s (%d != %d)'): the node's, not the
    # controller's, whose host the syslog line carries
    r"|\bSetting node " + _NODESET + r" state to |drain_nodes: node " + _NODESET + r" state set to"
    r"|_slurm_rpc_node_registration node=" + _NODESET + r":|Count changed on node " + _NODESET + r" \("
    # LBNL NHC's helpers (helpers/node-mark-offline, -online): 'node-mark-offline:  Marking  n1 offline:  ..',
    # 'node-mark-online n1.local', 'node-mark-online:  Not onlining n1:  ..'
    r"|node-mark-(?:on|off)line:? {1,3}(?:Marking {1,3}|Not onlining {1,3})?" + _NODESET + r"(?=[ :.]|$))")
# 'mynode-066 | ERROR: nhc: ...': a per-host table of results (Azure's distributed NHC, a pdsh | dshbak -c
# style summary): the line is that host's
_PIPE_RESULT_RE = re.compile(r"(" + _NAME + r") \| (?=ERROR:|WARNING:|Healthy\b|Unhealthy\b|FAILED\b)")
_RFC5424_RE = re.compile(r"<\d{1,3}>\d{1,2} \S{1,64} ([A-Za-z0-9][^\s:\[\]<>]{0,252}) ")
# what the rest of a 'node: ' line looks like when node is a host (pdsh of dmesg, journalctl,
# syslog grep, nvidia-smi, ibstat...)
_LOGLIKE_RE = re.compile(
    r"\[ *\d+\.\d+\]|\[(?:[A-Z][a-z]{2} )?[A-Z][a-z]{2} [ \d]\d |\d{4}-\d\d-\d\d[T ]\d\d:\d\d|"
    r"(?:[A-Z][a-z]{2} )?" + _MONTH + r" {1,2}\d{1,2} \d\d:\d\d:\d\d|<\d{1,3}>|"
    r"NVRM|nvidia|mlx5|kernel:|\+-{3}|\| +NVIDIA-SMI|\|={3}|=+NVSMI LOG|CA '|hca_id:|Attached GPUs|"
    r"NCCL |GPU \d|pcieport|kern: ")


# a syslog / journal hostname field is a host by position, whatever the word ('gpu', '1013');
# only the placeholders of a host without a name are not
_FIELD_NOT_HOSTS = frozenset(("-", "localhost", "localhost.localdomain", "(none)", "unknown"))


def field_host(name):
    """A hostname field's value -> the host, or None for a placeholder."""
    return None if not name or name.lower() in _FIELD_NOT_HOSTS else name


def expand_nodeset(text, limit=_MAX_SET):
    """'node[1-3,7],gpu[01-02]-ib' -> the names, at most ``limit`` (never raises)."""
    out = []
    for part in _top_level_split(text):
        if len(part) > _MAX_PART:
            continue  # no node set: 4096 copies of a megabyte line would cost gigabytes
        names = [""]
        for lit, group in re.findall(r"([^\[\]]*)(?:\[([^\[\]]*)\])?", part):
            names = [n + lit for n in names]
            if group:
                items = _range_items(group, limit)
                # lazily: two sets of 4096 would otherwise build 16M names before the cut
                names = list(itertools.islice((n + i for n in names for i in items), limit))
        out.extend(n for n in names if n)
        if len(out) >= limit:
            break
    return out[:limit]


def _top_level_split(text):
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        depth += {"[": 1, "]": -1}.get(ch, 0)
        cur.append(ch)
    parts.append("".join(cur))
    return [p for p in parts if p]


def _range_items(group, limit):
    items = []
    for piece in group.split(","):
        lo, sep, hi = piece.partition("-")
        # ASCII digits only ('²'.isdigit() is true, int('²') fails), and few of them
        if sep and _NUMBER_RE.match(lo) and _NUMBER_RE.match(hi) and int(hi) >= int(lo):
            width = len(lo) if lo.startswith("0") else 0
            for i in range(int(lo), min(int(hi), int(lo) + limit - 1) + 1):
                items.append(str(i).zfill(width))
                if len(items) >= limit:
                    return items
        elif piece:
            items.append(piece)
    return items


class HostDemux(object):
    """``route(line) -> (hosts, text)``: the hosts a line belongs to (a tuple; () when the
    text names none) and the line without its pdsh/clush prefix (None for a header or prompt
    line, which is no content). ``hosts`` is None for a
    line of a host over the cap (dropped, counted in ``overflow_lines``).

    After the stream: ``hosts`` (name -> lines routed to it, in first-seen order),
    ``prefixed`` (some line had a prefix stripped), ``unhosted`` (lines routed to no host)."""

    def __init__(self, max_hosts=MAX_HOSTS):
        self.max_hosts = max_hosts
        self.hosts = {}
        self.prefixed = 0
        self.unhosted = 0
        self.overflow_lines = 0
        self.first_overflow = None
        self._short = {}          # first label -> the name first seen with it
        self._block = ()          # hosts of the current prompt / clush / ansible block
        self._dash = 0            # clush/dshbak header state: 1 after dashes, 2 after the set line
        self._pending = ()
        self._after_blank = True  # the previous line was blank (or there was none)
        self._output = None       # what a prompt line holds after the prompt that is no command
        self._banner = None       # the fence of a pasted loop's 'echo "=== $h ==="' (its headings)

    # -- names ---------------------------------------------------------------------
    def _canon(self, name):
        """The one spelling of a host: 'node07.cluster' is 'node07' when that came first."""
        if name in self.hosts:
            return name
        first = name.split(".", 1)[0]
        if first and not first.isdigit():
            known = self._short.get(first)
            if known is not None:
                return known
        return name

    def _admit(self, names):
        """Canonical names of hosts within the cap; None when every one is over it."""
        out = []
        for n in names:
            n = self._canon(n)
            if n not in self.hosts:
                if len(self.hosts) >= self.max_hosts:
                    if self.first_overflow is None:
                        self.first_overflow = n
                    continue
                self.hosts[n] = 0
                first = n.split(".", 1)[0]
                if first and not first.isdigit():
                    self._short.setdefault(first, n)
            out.append(n)
        return tuple(out) if out or not names else None

    def _count(self, hosts):
        if hosts is None:
            self.overflow_lines += 1
            return
        if not hosts:
            self.unhosted += 1
        for h in hosts:
            self.hosts[h] += 1

    # -- lines ---------------------------------------------------------------------
    def route(self, line):
        if not isinstance(line, str):
            line = line.decode("utf-8", "replace")
        line = line.rstrip("\r\n")
        if "\x00" in line or has_escape(line):  # a coloured terminal capture
            line = strip_ansi(line).replace("\x00", "")
        line = unpaste(line)
        self._output = None
        if self._structure(line):
            # a pasted --query-gpu command names its output's columns (nvsmi/query_csv): kept; a
            # background job's output printed after a prompt is that host's line
            return self._block, (line if "--query-gpu" in line or "--query-retired-pages" in line else self._output)
        if not line.strip():
            return self._block, line
        text, own = line, None
        m = _PREFIX_RE.match(line)
        if m and _hostlike(m.group(1)):
            rest = line[m.end():]
            if self._canon(m.group(1)) in self.hosts or _LOGLIKE_RE.match(rest):
                own, text = m.group(1), rest
                self.prefixed += 1
        if own is None:
            own = self._field(text)
        if own is None:
            at = embedded_syslog(text)  # a syslog line quoted in an alert: the line is its own
            if at:
                own = self._field(text[at:])
                if own is not None:
                    text = text[at:]
        if own is None and "| " in text[:260]:
            m = _PIPE_RESULT_RE.match(text)
            if m and _hostlike(m.group(1)):
                own, text = m.group(1), text[m.end():]
        if own is None or "slurmctld" in text:
            # a line of no host is the node's it names; so is slurmctld's through the controller's
            # syslog (it speaks of nodes: 'Setting node n7 state to INVAL'), not the controller's
            named = slurm_nodes(text)
            if named:
                hosts = self._admit(named)
                self._count(hosts)
                return hosts, text
        hosts = self._admit((own,)) if own is not None else self._block
        self._count(hosts)
        return hosts, text

    def _field(self, text):
        """The hostname field of a syslog / journal line, or None."""
        c = text[:1]
        if c in " \t":  # a syslog line indented in notes or a markdown list
            text = text[:16].lstrip(" \t") + text[16:]
            c = text[:1]
        if not c or c in " [\t-":
            return None
        m = _SYSLOG_RE.match(text) or (_RFC5424_RE.match(text) if c == "<" else None)
        return field_host(m.group(1)) if m else None

    def _structure(self, line):
        """True for a line that opens a block (prompt, clush/dshbak/ansible header)."""
        after_blank, self._after_blank = self._after_blank, not line.strip()
        if "echo" in line and "$" in line and self._banner is None:
            m = ECHO_BANNER_RE.search(line)
            if m:
                self._banner = banner_re(m)
                return True  # the loop's command: no host's output
        if self._banner is not None and line[:1] in "=#*>~+- ":
            m = self._banner.match(line)
            if m and _hostlike(m.group(1)):
                self._block = self._admit((m.group(1),)) or ()
                return True
        if after_blank and self._dash == 0 and line[:1].isalpha():
            m = _BARE_RE.match(line)
            if m and _hostlike(m.group(1)):
                self._block = self._admit((m.group(1),)) or ()
                return True
        if self._dash == 2:
            self._dash = 0
            if _DASHES_RE.match(line):
                self._block = self._admit(self._pending) or ()
                return True
        if self._dash == 1:
            self._dash = 0
            m = _SET_LINE_RE.match(line)
            if m and not line.startswith("-"):
                names = [n for n in expand_nodeset(m.group(1)) if _hostlike(n)]
                if names:
                    self._pending, self._dash = tuple(names), 2
                    return True
        c = line[:1]
        if c == "L" and line.startswith("Linux "):
            m = _UNAME_RE.match(line)
            if m and _hostlike(m.group(1)) and field_host(m.group(1)):
                self._block = self._admit((m.group(1),)) or ()
                return True
        if c == "-":
            if _DASHES_RE.match(line):
                self._dash = 1
                return True
            m = _SET_INLINE_RE.match(line)
            if m:
                names = [n for n in expand_nodeset(m.group(1)) if _hostlike(n)]
                if names:
                    self._block = self._admit(names) or ()
                    return True
            return False
        if c == " " and "@" in line[:100] and len(line) - len(line.lstrip(" ")) <= 8:
            line = line.lstrip(" ")  # a prompt indented as a code block (markdown, rst): so is what follows
        found = prompt(line)
        if found:
            name, after = found
            self._block = self._admit((name,)) or ()
            if after[:1] == " " and after.strip():
                # 'root@pod:/#  Port number 1 state is Down': no command is typed after two blanks;
                # a job sent to the background printed after the prompt
                self._output = after.strip()
            return True
        if " | " in line[:300]:
            m = _ANSIBLE_RE.match(line)
            if m and _hostlike(m.group(1)):
                self._block = self._admit((m.group(1),)) or ()
                return True
        return False


def slurm_nodes(text):
    """The nodes a Slurm line is about (SLURM_NODE_RE), expanded; () when it names none."""
    if "ode" not in text and "ON " not in text and "-mark-" not in text:
        return ()
    m = SLURM_NODE_RE.search(text)
    if not m:
        return ()
    spec = next(g for g in m.groups() if g)
    return tuple(n for n in expand_nodeset(spec) if _hostlike(n, digits=True))


def split_text(text, max_hosts=MAX_HOSTS):
    """A whole text -> (HostDemux after it, {host or None: text}), prefixes stripped. Lines
    of several hosts (a clush gathered block) go to each of them; lines of no host go to the
    one host the text names, else to None."""
    demux = HostDemux(max_hosts)
    if not isinstance(text, str) or not text:
        return demux, {}
    routed = []
    for n, line in enumerate(text[:-1].split("\n") if text.endswith("\n") else text.split("\n")):
        hosts, rest = demux.route(line)
        if hosts is not None and rest is not None:
            routed.append((n, hosts, rest))
    named = [h for h, n in demux.hosts.items() if n]
    default = named[0] if len(named) == 1 else None
    parts = {}
    for n, hosts, rest in routed:
        for h in hosts or (default,):
            parts.setdefault(h, []).append((n, rest))
    # each host's text keeps the file's line numbers: the lines it does not hold (another host's,
    # a prompt or heading read as its name) are blank in it, so its findings cite the file's lines
    return demux, {h: _numbered(lines) for h, lines in parts.items()}


def _numbered(lines):
    out, at = [], 0
    for n, rest in lines:
        if n > at:
            out.append("\n" * (n - at))
        out.append(rest + "\n")
        at = n + 1
    return "".join(out)
