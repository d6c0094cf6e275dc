# SPDX-License-Identifier: Apache-2.0
"""perftest's bandwidth report (linux-rdma/perftest: ib_write_bw, ib_read_bw, ib_send_bw), as
src/perftest_parameters.h prints it: the header ``#bytes #iterations BW peak[Gb/sec] BW
average[Gb/sec] MsgRate[Mpps]`` (``[MiB/sec]`` without ``--report_gbits``) and one row per
message size, between lines of dashes; connection and set-up failures (``Couldn't connect to
...``, ``Unable to ...``, ``Failed to ...``). -> {"unit", "rows": [{"bytes", "iterations",
"peak", "average"}], "average_gbps": the last row's average in Gb/s, "errors": [(n, line)]}."""

import re

_HEADER = re.compile(r"#bytes\s+(?:#sl\s+)?#iterations\s+BW peak\[(Gb/sec|MiB/sec|MB/sec)\]\s+BW average\[")
_ROW = re.compile(r"^\s*(\d{1,12})\s+(\d{1,15})\s+(\d{1,9}(?:\.\d{1,9})?)\s+(\d{1,9}(?:\.\d{1,9})?)\s+"
                  r"(\d{1,9}(?:\.\d{1,9})?)")
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
