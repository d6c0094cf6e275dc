# SPDX-License-Identifier: Apache-2.0
"""``perfquery`` / ``perfquery -x`` (and ``-a``, ``-E``, ``-D``) output."""

import re

from ..findings import iter_lines
from .model import Host, guarded
from .names import NOT_COUNTERS, normalize_counter_name, to_int
from .ports import finish

_PQ_HDR_RE = re.compile(
    r"^\s*#\s*Port\s+(?P<what>[^:]*?)\s*:\s*(?:Lid|lid)\s+(?P<lid>\d+)\s+port\s+(?P<port>\d+)", re.I)
_PQ_KV_RE = re.compile(r"^\s*(?P<name>[A-Za-z][A-Za-z0-9_\[\]]*)\s*:[.\s]*(?P<val>\S+)\s*$")


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
    for n, line in iter_lines(text):
        if not line.strip():
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
        if not m or m.group("name").lower() in NOT_COUNTERS:
            continue
        iv = to_int(m.group("val"))
        if iv is None:
            continue
        cname = normalize_counter_name(m.group("name"))
        cur["counters"][cname] = iv
        h.cev[(cur["device"], cur["port"], cname)] = (n, line)
    return finish(h, text, None, None, thresholds, check_ports=False)
