# SPDX-License-Identifier: Apache-2.0
"""``perfquery`` / ``perfquery -x`` (and ``-a``, ``-E``, ``-D``) output, and ``ibqueryerrors``': the
fabric's ports whose error counters are past its thresholds (rdma-core v64.0
infiniband-diags/ibqueryerrors.c: 'Errors for 0x<guid> "<node description>"' (or 'Errors for
"<desc>"'), then per port '   GUID 0x<guid> port <n>: [<Counter> == <value>] ...', the node's
'port ALL' sum, and '## Summary: N nodes checked, M bad nodes found'). Its counters are judged as
perfquery's (counters.py); a port is named by its node's description; 'port ALL' is a sum of the
ports already read, so it is not read again. A mail reply's '> ' quote is read through.

Also the older ``ibcheckerrors`` (infiniband-diags 1.5 and before, its ibcheckerrs script): a port's
'#warn: counter <Name> = <value>  (threshold <t>)' lines, then 'Error check on lid <n> (<node
description>) port <p>:  FAILED' (a paste may wrap it before 'port'); 'port all' is the node's sum."""

import re

from ..findings import iter_lines
from .model import Host, guarded
from .names import NOT_COUNTERS, normalize_counter_name, to_int
from .ports import finish

_PQ_HDR_RE = re.compile(
    r"^\s*#\s*Port\s+(?P<what>[^:]*?)\s*:\s*(?:Lid|lid)\s+(?P<lid>\d+)\s+port\s+(?P<port>\d+)", re.I)
_PQ_KV_RE = re.compile(r"^\s*(?P<name>[A-Za-z][A-Za-z0-9_\[\]]*)\s*:[.\s]*(?P<val>\S+)\s*$")
_QUOTE = r"(?:> ?)?"
IQE_NODE_RE = re.compile(r"^" + _QUOTE + r"Errors for (?:0x[0-9a-fA-F]{1,16} )?\"(?P<desc>[^\"\n]{0,200})\"\s*$")
IQE_PORT_RE = re.compile(r"^" + _QUOTE + r"\s{1,8}GUID 0x[0-9a-fA-F]{1,16} port (?P<port>\d{1,3}|ALL):(?P<rest>[^\n]*)$")
IQE_SUMMARY_RE = re.compile(r"^" + _QUOTE + r"(?:## |\s*$)")
_IQE_PAIR_RE = re.compile(r"\[(?P<name>\w{1,64}) == (?P<val>\d{1,20})")
ICE_WARN_RE = re.compile(r"^" + _QUOTE + r"#warn: counter (?P<name>\w{1,64}) = (?P<val>\d{1,20})\s{0,20}\(threshold \d{1,20}\)")
ICE_CHECK_RE = re.compile(r"^" + _QUOTE + r"Error check on lid (?P<lid>\d{1,5})(?: \([^()\n]{0,200}\))?\s{0,8}"
                          r"(?:port(?: (?P<port>\d{1,3}|all):\s{0,8}(?:FAILED|OK|PASSED))?)?\s*$")
# the port's verdict on a line of its own: wrapped before 'port N:' or, in a mail, after 'port'
ICE_PORT_RE = re.compile(r"^" + _QUOTE + r"(?:port )?(?P<port>\d{1,3}|all):\s{0,8}(?:FAILED|OK|PASSED)\s*$")


def parse_perfquery(text, source="perfquery.txt", thresholds=None, device=None,
                    expected_rate=None, expected_devices=None):
    """``perfquery`` output -> (facts, findings); never raises. Several port blocks may
    follow each other. perfquery names a port by LID, so ``device`` is ``"lid:<n>"`` unless
    the caller knows the HCA (``device="mlx5_0"`` for ``perfquery -C``). Counters only:
    ``expected_rate``/``expected_devices`` are accepted and ignored."""
    return guarded("perfquery", _parse, text, source, thresholds=thresholds, device=device)


def _parse(text, source, thresholds=None, device=None):
    h = Host("perfquery", source)
    cur = None
    node = None
    ice = {"warns": [], "lid": None}  # ibcheckerrors: the warnings above a port's check line
    for n, line in iter_lines(text):
        if not line.strip():
            continue
        if _ibcheckerrors(h, ice, line, n):
            continue
        m = IQE_NODE_RE.match(line)
        if m:  # ibqueryerrors: a node's ports follow
            node = m.group("desc").strip() or "?"
            continue
        m = IQE_PORT_RE.match(line)
        if m and node is not None:
            if m.group("port") != "ALL":
                _iqe_port(h, node, int(m.group("port")), m.group("rest"), n, line)
            continue
        m = _PQ_HDR_RE.match(line)
        if m:
            cur = h.port(device or ("lid:%s" % m.group("lid")), int(m.group("port")))
            continue
        if re.search(r"ibwarn|iberror|ibpanic|can't open|failed", line, re.I):
            h.tool_errors.append((n, line))
            continue
        if cur is None:
            continue
        m = _PQ_KV_RE.match(line)
        if m:
            _counter(h, cur, m.group("name"), m.group("val"), n, line)
    return finish(h, text, None, None, thresholds, check_ports=False)


def ibcheckerrors_line(line):
    """ibcheckerrors' own lines (content/): its warnings, check lines, '# Checked ...' and '## Summary'."""
    return (not line.strip() or bool(ICE_WARN_RE.match(line) or ICE_CHECK_RE.match(line) or ICE_PORT_RE.match(line))
            or line.startswith(("# Checked ", "## ")))


def _ibcheckerrors(h, ice, line, n):
    """One line of ibcheckerrors, read into ``ice`` (its pending warnings, a check line wrapped before
    its port); True when the line was one of its own."""
    m = ICE_WARN_RE.match(line)
    if m:
        ice["warns"].append((m.group("name"), m.group("val"), n, line))
        return True
    m = ICE_CHECK_RE.match(line)
    port = None
    if m:
        ice["lid"], port = m.group("lid"), m.group("port")
        if port is None:
            return True  # wrapped: 'port N:  FAILED' follows
    else:
        m = ICE_PORT_RE.match(line)
        if not m or ice["lid"] is None:
            return False
        port = m.group("port")
    if port != "all":  # 'port all' sums the node's ports
        cur = h.port("lid:%s" % ice["lid"], int(port))
        cur["link_layer"] = "InfiniBand"
        for name, val, wn, wline in ice["warns"]:
            _counter(h, cur, name, val, wn, wline)
    ice["warns"], ice["lid"] = [], None
    return True


def _iqe_port(h, node, port, rest, n, line):
    """One port line of ibqueryerrors: its '[Counter == value]' pairs."""
    cur = h.port(node, port)
    cur["link_layer"] = "InfiniBand"
    for m in _IQE_PAIR_RE.finditer(rest):
        _counter(h, cur, m.group("name"), m.group("val"), n, line)


def _counter(h, cur, name, val, n, line):
    """One counter of a port (perfquery's 'Name:....value', ibqueryerrors' '[Name == value]'), with the
    line that holds it; a field that is no counter, or no number, is not one."""
    if name.lower() in NOT_COUNTERS:
        return
    iv = to_int(val)
    if iv is None:
        return
    cname = normalize_counter_name(name)
    cur["counters"][cname] = iv
    h.cev[(cur["device"], cur["port"], cname)] = (n, line)
