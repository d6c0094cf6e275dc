# SPDX-License-Identifier: Apache-2.0
"""perftest's bandwidth report (linux-rdma/perftest: ib_write_bw, ib_read_bw, ib_send_bw), as
src/perftest_parameters.h prints it: the header ``#bytes #iterations BW peak[Gb/sec] BW
average[Gb/sec] MsgRate[Mpps]`` (``[MiB/sec]`` without ``--report_gbits``) and one row per
message size, between lines of dashes; connection and set-up failures (``Couldn't connect to
...``, ``Unable to ...``, ``Failed to ...``). -> {"unit", "rows": [{"bytes", "iterations",
"peak", "average"}], "average_gbps": the last row's average in Gb/s, "errors": [(n, line)]}."""

import re

from ..findings import finding

_HEADER = re.compile(r"#bytes\s+(?:#sl\s+)?#iterations\s+BW peak\[(Gb/sec|MiB/sec|MB/sec)\]\s+BW average\[")
_ROW = re.compile(r"^\s*(\d{1,12})\s+(\d{1,15})\s+(\d{1,9}(?:\.\d{1,9})?)\s+(\d{1,9}(?:\.\d{1,9})?)\s+"
                  r"(\d{1,9}(?:\.\d{1,9})?)")
_TEST = re.compile(r"^\s{0,40}((?:RDMA_Write|RDMA_Read|Send|Atomic)(?: Bidirectional)? BW Test)\s*$")
_DEVICE = re.compile(r"\bDevice\s*:\s*([\w.\-]{1,64})")
_LINK = re.compile(r"^\s{0,8}Link type\s*:\s*(\w{1,32})")
_ERROR = re.compile(r"^\s*(?:Couldn't|Unable to|Failed to|Error|ERROR|IB device \S+ not found|"
                    r"No IB devices found)|\bfailed\b", re.I)


def parse_perftest_bw(text):
    """-> {"unit", "rows", "average_gbps", "errors"} (see the module doc); never raises on text."""
    unit, rows, errors = None, [], []
    for n, line in enumerate((text or "").splitlines()[:100000], 1):
        m = _HEADER.search(line)
        if m:
            unit = m.group(1)
            continue
        m = _ROW.match(line) if unit else None
        if m:
            rows.append({"bytes": int(m.group(1)), "iterations": int(m.group(2)), "peak": float(m.group(3)),
                         "average": float(m.group(4))})
            continue
        if _ERROR.search(line):
            errors.append((n, line.strip()))
    avg = rows[-1]["average"] if rows else None
    if avg is not None and unit in ("MiB/sec", "MB/sec"):
        avg = avg * (1048576.0 if unit == "MiB/sec" else 1e6) * 8 / 1e9
    return {"unit": unit, "rows": rows, "average_gbps": avg, "errors": errors}


# the share of a port's signalling rate ib_write_bw reaches on a sound link: headers and the 64b/66b
# coding leave 90-97% of it (NVIDIA's ib_write_bw figures: ~370-395 Gb/s on NDR 400)
LINE_RATE_SHARE = 0.85


def parse_perftest_report(text, source="perftest.txt", expected_gbps=None):
    """A pasted perftest report (the capture's, not the active tier's run) -> (facts, findings):
    facts {"test", "device", "link_type", "unit", "rows", "average_gbps", "errors"}; a failure
    line (no connection, no device) and an average under LINE_RATE_SHARE of ``expected_gbps`` (the
    port's rate) are findings; a report with its figure and nothing else is a reading of a working
    link. Never raises on text."""
    parsed = parse_perftest_bw(text)
    facts = dict(parsed, errors=[line for _n, line in parsed["errors"]][:20], test=None, device=None,
                 link_type=None)
    for line in (text or "").splitlines()[:200]:
        m = _TEST.match(line)
        if m and facts["test"] is None:
            facts["test"] = m.group(1)
        m = _DEVICE.search(line)
        if m and facts["device"] is None:
            facts["device"] = m.group(1)
        m = _LINK.match(line)
        if m and facts["link_type"] is None:
            facts["link_type"] = m.group(1)
    what = facts["test"] or "perftest"
    bw = parsed["average_gbps"]
    ib = {"device": facts["device"], "port": 1} if facts["device"] else None
    findings = []
    if bw is None and parsed["errors"]:
        n, line = parsed["errors"][0]
        findings.append(finding("active_test_failed", "%s%s failed before a figure: %s" % (
            what, " on %s" % facts["device"] if facts["device"] else "", line[:200]),
            evidence=line[:300], source="%s:%d" % (source, n)))
    elif bw is not None and expected_gbps and bw < LINE_RATE_SHARE * float(expected_gbps):
        findings.append(finding("active_ib_bw_low", "%s%s averaged %.1f Gb/s, under %d%% of the link's %.0f Gb/s" % (
            what, " on %s" % facts["device"] if facts["device"] else "", bw, round(100 * LINE_RATE_SHARE),
            float(expected_gbps)), source=source, ib=ib))
    return facts, findings
