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
# perftest_parameters.c ctx_set_link_layer: the port it was given is not Active (then "Couldn't set
# the link layer", "Couldn't get context for the device")
_PORT_STATE = re.compile(r"(?:^|\s)Port number (\d{1,3}) state is (Nop|Down|Init|Armed|Active Defer)\s*$")
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
    state = _port_state(text)
    if state is not None:
        n, port, said, line = state
        facts["port_state"] = {"port": port, "state": said}
        where = "%s port %d" % (facts["device"], port) if facts["device"] else "port %d of the HCA it was given" % port
        # Down: no link (cable, switch port, or a virtual function the subnet manager never enabled);
        # Init/Armed: a link the subnet manager has not made Active
        findings.append(finding(
            "ib_port_down" if said == "Down" else "ib_port_not_active",
            "%s refused %s: its state is %s, not Active (perftest: 'Port number %d state is %s')" % (
                what, where, said, port, said),
            evidence=line.strip()[:300], source="%s:%d" % (source, n),
            ib={"device": facts["device"], "port": port} if facts["device"] else None))
    elif bw is None and parsed["errors"]:
        n, line = parsed["errors"][0]
        findings.append(finding("active_test_failed", "%s%s failed before a figure: %s" % (
            what, " on %s" % facts["device"] if facts["device"] else "", line[:200]),
            evidence=line[:300], source="%s:%d" % (source, n)))
    elif bw is not None and expected_gbps and bw < LINE_RATE_SHARE * float(expected_gbps):
        findings.append(finding("active_ib_bw_low", "%s%s averaged %.1f Gb/s, under %d%% of the link's %.0f Gb/s" % (
            what, " on %s" % facts["device"] if facts["device"] else "", bw, round(100 * LINE_RATE_SHARE),
            float(expected_gbps)), source=source, ib=ib))
    return facts, findings


def _port_state(text):
    """(line number, port, state, line) of perftest's refusal of a port that is not Active, or None."""
    for n, line in enumerate((text or "").splitlines()[:2000], 1):
        if "state is" in line:
            m = _PORT_STATE.match(line)
            if m:
                return n, int(m.group(1)), m.group(2), line
    return None
