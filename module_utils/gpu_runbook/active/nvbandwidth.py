# SPDX-License-Identifier: Apache-2.0
"""``nvbandwidth`` output (NVIDIA/nvbandwidth): for each testcase ``Running <name>.``, a title
``memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)``, a header of column indices, one row per
source with a figure (or ``N/A``) per column, and ``SUM <name> <GB/s>``; ``ERROR:``/``WARNING``
lines and the ``Waived`` testcases in between. -> {"tests": {name: {"title", "cells": {(row,
col): GB/s}, "sum"}}, "errors": [(line number, line)]}. Pure, stdlib, never raises on text."""

import re

_RUNNING = re.compile(r"^Running ([A-Za-z0-9_]{1,80})\.\s*$")
_TITLE = re.compile(r"bandwidth \(GB/s\)\s*$")
_HEADER = re.compile(r"^\s*\d{1,3}(?:\s+\d{1,3})*\s*$")
_ROW = re.compile(r"^\s*(\d{1,3})((?:\s+(?:-?\d{1,9}(?:\.\d{1,6})?|N/A))+)\s*$")
_SUM = re.compile(r"^SUM ([A-Za-z0-9_]{1,80}) (-?\d{1,9}(?:\.\d{1,6})?)\s*$")
_ERROR = re.compile(r"^(?:ERROR|Error|FATAL)\b|\bCUDA error\b|\bfailed\b", re.I)


def parse_nvbandwidth(text):
    """-> {"tests": {...}, "errors": [...]} (see the module doc)."""
    tests, errors = {}, []
    cur, cols = None, None
    for n, line in enumerate((text or "").splitlines()[:200000], 1):
        m = _RUNNING.match(line)
        if m:
            cur = tests.setdefault(m.group(1), {"title": None, "cells": {}, "sum": None})
            cols = None
            continue
        m = _SUM.match(line)
        if m:
            tests.setdefault(m.group(1), {"title": None, "cells": {}, "sum": None})["sum"] = float(m.group(2))
            continue
        if cur is None:
            if _ERROR.search(line):
                errors.append((n, line.strip()))
            continue
        if _TITLE.search(line):
            cur["title"] = line.strip()
            cols = None
            continue
        if cols is None and cur["title"] and _HEADER.match(line):
            cols = [int(c) for c in line.split()]
            continue
        m = _ROW.match(line)
        if m and cols is not None:
            vals = m.group(2).split()
            for c, v in zip(cols, vals):
                if v != "N/A":
                    cur["cells"][(int(m.group(1)), c)] = float(v)
            continue
        if _ERROR.search(line):
            errors.append((n, line.strip()))
    return {"tests": tests, "errors": errors}
