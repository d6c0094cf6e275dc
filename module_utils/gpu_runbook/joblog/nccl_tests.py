# SPDX-License-Identifier: Apache-2.0
"""nccl-tests output (NVIDIA/nccl-tests: all_reduce_perf, all_gather_perf, alltoall_perf ...),
as it prints itself, alone or under mpirun/srun prefixes:

* the device list ``#  Rank  0 Group  0 Pid  28893 on  dgx1 device  0 [0x07] Tesla V100``
  (older builds: no ``Group``; the PCI bus as ``[0x07]``, ``[0002:00:01]`` or a full
  ``[0000:07:00.0]``): rank -> host -> local device -> PCI bus, the job's rank map;
* the column header ``#  size  count  type  redop  root  time  algbw  busbw #wrong ...``
  (``error`` in builds before 2.x) and the result rows under it: a non-zero ``#wrong`` is data
  that arrived wrong -- corruption on a GPU, NVLink or the network, never a tuning matter;
* the end summary ``# Out of bounds values : N OK|FAILED`` and ``# Avg bus bandwidth : X``:
  a run that printed it ran to its end;
* ``Test NCCL failure common.cu:N 'unhandled system error'`` / ``Test CUDA failure ...``.

A run with the device list but neither the summary nor a failure was cut off (hung, killed, or
the log is partial): not a healthy run. Findings: taxonomy/kinds_job.py (``nccl_tests_*``)."""

import re

from ..findings import finding, small_int
from .patterns import CUDA_ERR
from .emitter_lines import read_vocabulary
from .text import add, evidence

HEADER = re.compile(r"^#? {0,8}Rank +(\d{1,6}) +(?:Group +\d{1,6} +)?Pid +(\d{1,9}) +on +(\S{1,253}) +device +(\d{1,4})"
                    r" +\[(0x[0-9A-Fa-f]{1,4}|[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)\] ?(.{0,120})")
COLUMNS = re.compile(r"^#? {0,12}size +count +type ")
OOB = re.compile(r"^# ?Out of bounds values ?: ?(\d{1,12}) (OK|FAILED)")
AVG_BW = re.compile(r"^# ?Avg bus bandwidth +: ?(-?[\d.]{1,20}|nan|inf)")
TEST_FAIL = re.compile(r"Test (NCCL|CUDA) failure (\S{1,120}) '([^'\n]{1,200})'")
_WRONG_COLS = ("#wrong", "error")
# a result row: size, count, type, redop[, root], then times and bandwidths (nccl-tests' own
# column order, out-of-place then in-place; 'root' since 2.x, 'error' before '#wrong')
BARE_ROW = re.compile(r"^\d{1,15} +\d{1,15} +(?:float|half|double|bfloat16|u?int(?:8|32|64)|fp8_e\dm\d|char|int) +"
                      r"(?:sum|prod|max|min|avg|none|mulsum) +")
_DEFAULT_COLS = {
    13: ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
         "time", "algbw", "busbw", "#wrong"),
    12: ("size", "count", "type", "redop", "time", "algbw", "busbw", "error", "time", "algbw", "busbw", "error"),
}


def _state(st):
    if st.nccl_tests is None:
        st.nccl_tests = {"ranks": {}, "cols": None, "wrong": [], "rows": 0, "oob": None, "avg_busbw": None,
                         "failures": [], "first": None}
    return st.nccl_tests


def _pci(raw):
    if raw.startswith("0x"):
        return "0000:%02x:00.0" % int(raw, 16)
    parts = raw.lower().split(":")
    return raw.lower() if "." in raw else "%s:%s:%s.0" % (parts[0], parts[1], parts[2])


def nccl_tests_line(line, fs, st):
    """One line of nccl-tests output; True when it was one (nothing else needs it)."""
    text = line.text
    s = text.lstrip()
    if not s:
        return False
    if s[0] == "#" or s.startswith("Rank") or s.startswith("size "):
        return _hash_line(s, line, st)
    if s[0].isdigit():
        if st.nccl_tests is not None and st.nccl_tests["cols"]:
            return _row(s, line, st)
        if BARE_ROW.match(s):  # the table without its header (a log cut, an excerpt)
            cols = _DEFAULT_COLS.get(len(s.split()))
            if cols:
                _state(st)["cols"] = list(cols)
                return _row(s, line, st)
    if "Test " in text and " failure " in text:
        m = TEST_FAIL.search(text)
        if m:
            nt = _state(st)
            what = m.group(3)
            add(nt["failures"], {"lib": m.group(1), "where": m.group(2), "what": what, "src": line.src,
                                 "evidence": line.raw})
            base = {"rank": line.rank, "src": line.src, "evidence": line.raw, "host": line.host, "pid": None}
            if m.group(1) == "CUDA":
                mc = CUDA_ERR.search(what)
                if mc:
                    add(st.events, dict(base, kind="cuda_error", what=mc.group(1)))
                else:  # what the CUDA error string means is CUDA's table (vocab/cuda.py)
                    read_vocabulary(line, st)
            else:
                add(st.events, dict(base, kind="nccl_error", what=what.split(" (run with")[0]))
            return False       # NCCL's own words in it ('system not yet initialized') are read on
    return False


def _hash_line(s, line, st):
    m = HEADER.match(s)
    if m:
        nt = _state(st)
        rank = int(m.group(1))
        had = nt["ranks"].get(rank)
        if had is not None and had["host"] != m.group(3) and nt.get("twice") is None:
            # the same rank listed on another host: each process ran a test of its own (mpirun started copies
            # of a binary built without MPI=1), not one job over every host (two runs one after the other on
            # one host list their ranks again too: only another host's copy says it)
            nt["twice"] = {"rank": rank, "hosts": [had["host"], m.group(3)], "src": line.src, "evidence": line.raw}
        if rank not in nt["ranks"] and len(nt["ranks"]) < 100000:
            nt["ranks"][rank] = {"pid": int(m.group(2)), "host": m.group(3), "dev": int(m.group(4)),
                                 "pci": _pci(m.group(5)), "gpu": m.group(6).strip() or None}
        if nt["first"] is None:
            nt["first"] = (line.src, line.raw)
        st.ranks_seen.add(rank)
        return True
    if COLUMNS.match(s):
        _state(st)["cols"] = s.lstrip("#").split()
        return True
    m = OOB.match(s)
    if m:
        _state(st)["oob"] = (int(m.group(1)), m.group(2), line.src, line.raw)
        return True
    m = AVG_BW.match(s)
    if m:
        try:
            _state(st)["avg_busbw"] = float(m.group(1))
        except ValueError:
            _state(st)["avg_busbw"] = 0.0
        return True
    return False


def _row(s, line, st):
    nt = st.nccl_tests
    cols = nt["cols"]
    vals = s.split()
    if len(vals) != len(cols) or small_int(vals[0]) is None:
        return False
    nt["rows"] += 1
    for i, c in enumerate(cols):
        if c in _WRONG_COLS and (small_int(vals[i]) or 0) > 0:
            add(nt["wrong"], {"size": small_int(vals[0]), "wrong": small_int(vals[i]), "src": line.src,
                              "evidence": line.raw})
            break
    return True


# ------------------------------------------------------------------ the whole run

def summary(st):
    """What the job dict says about the nccl-tests run (None without one)."""
    nt = st.nccl_tests
    if nt is None:
        return None
    oob = nt["oob"]
    return {"ranks": len(nt["ranks"]), "hosts": sorted(set(r["host"] for r in nt["ranks"].values())),
            "complete": nt["avg_busbw"] is not None or oob is not None, "result_rows": nt["rows"],
            "wrong_rows": len(nt["wrong"]), "out_of_bounds": oob[0] if oob else None,
            "avg_busbw": nt["avg_busbw"], "failures": len(nt["failures"])}


def said_its_end(st):
    """Record, once every line was read, that the test said it ran to its end: its end summary
    (src/common.cu: '# Out of bounds values : %d %s', OK when every checked result was right) after
    every size. Not when each process ran a test of its own (a rank listed by two hosts): the figures
    of that run say nothing of the job it was meant to be."""
    nt = st.nccl_tests
    if nt is None or not nt["oob"] or nt.get("twice") or nt["wrong"] or nt["failures"]:
        return
    count, word, src, raw = nt["oob"]
    if word == "OK" and count == 0:
        add(st.success, {"who": "nccl-tests (its end summary: every result checked, none out of bounds)",
                         "src": src, "evidence": raw})


def fill_rank_map(st, rank_map, world):
    """The device list's rank -> host, PCI bus, local device (NCCL's own comm lines win)."""
    nt = st.nccl_tests
    if nt is None:
        return world
    if world is None and nt["ranks"]:
        world = max(nt["ranks"]) + 1
    for r, ent in nt["ranks"].items():
        cur = rank_map.setdefault(r, {"host": None, "gpu_pci": None, "local_rank": None})
        if not cur["host"]:
            cur["host"] = ent["host"]
        if not cur["gpu_pci"]:
            cur["gpu_pci"] = ent["pci"]
        if cur["local_rank"] is None:
            cur["local_rank"] = ent["dev"]
    return world


def findings(st):
    nt = st.nccl_tests
    if nt is None:
        return []
    out = []
    oob = nt["oob"]
    hosts = sorted(set(r["host"] for r in nt["ranks"].values()))
    where = (" on %s" % hosts[0]) if len(hosts) == 1 else (" across %d hosts" % len(hosts) if hosts else "")
    if nt["wrong"] or (oob and oob[1] == "FAILED"):
        first = nt["wrong"][0] if nt["wrong"] else {"src": oob[2], "evidence": oob[3]}
        out.append(finding(
            "nccl_tests_wrong_results",
            "nccl-tests%s found wrong data: %d result row(s) with a non-zero #wrong%s. Data corrupted on a "
            "GPU, NVLink/PCIe or the network: a hardware suspect until the faulty device is isolated." % (
                where, len(nt["wrong"]),
                "; Out of bounds values : %d FAILED" % oob[0] if oob and oob[1] == "FAILED" else ""),
            evidence=evidence(first["evidence"]), source=first["src"]))
    if nt.get("twice"):
        tw = nt["twice"]
        out.append(finding(
            "logged_nccl_config_error",
            "nccl-tests: rank %d is listed by two processes (%s): each process ran a test of its own, so the "
            "figures are single-node ones and the network between the hosts was never used. nccl-tests was "
            "built without MPI (make MPI=1) or started without its launcher's ranks" % (
                tw["rank"], " and ".join("on %s" % h for h in tw["hosts"])),
            category="nccl_config", severity="warning", name="nccl-tests", evidence=evidence(tw["evidence"]),
            source=tw["src"]))
    if nt["ranks"] and not (nt["avg_busbw"] is not None or oob) and not nt["failures"]:
        src, raw = nt["first"]
        out.append(finding(
            "nccl_tests_incomplete",
            "nccl-tests%s printed its device list (%d rank(s)) but never its end summary (Avg bus bandwidth): "
            "the run hung, was killed or the log is cut off." % (where, len(nt["ranks"])),
            evidence=evidence(raw), source=src))
    return out


def single_host(st):
    """The one host of an nccl-tests run (its wrong results, or the NCCL or CUDA failure it stopped on,
    are that host's), else None."""
    nt = st.nccl_tests
    if nt is None or not (nt["wrong"] or nt["failures"] or (nt["oob"] and nt["oob"][1] == "FAILED")):
        return None
    hosts = set(r["host"] for r in nt["ranks"].values())
    return hosts.pop() if len(hosts) == 1 else None
