# SPDX-License-Identifier: Apache-2.0
"""Kernel messages about the driver, the NVLink fabric and the node that carry no Xid.

- NVIDIA driver messages (NVRM) that say the driver, not the GPU, is what failed: a driver
  and user-space library of different versions ('API mismatch'), nouveau or another driver
  owning the device ('probe routine was not called'), the probe failing, the open kernel
  module refusing a GPU without GSP, a driver release that does not support the GPU, GSP
  firmware timeouts. Several are printed over 2-6 lines, each with its own 'NVRM: ' prefix
  (or, through rsyslog, on one line with '#012' for each newline): the lines that follow a
  message's first line within ``JOIN_LINES`` are joined to it before it is read.
- NVSwitch errors ('nvidia-nvswitchN: SXid (PCI:..): 12028, Non-fatal, Link 32 ...'): the
  NVLink fabric, not one GPU.
- EDAC memory-controller reports ('EDAC MC0: 1 UE ...'): host DIMMs, uncorrectable (node
  hardware) or correctable (a trend).
"""

import re

from ..findings import finding, gpu_ref, normalize_pci
from .nodelog import KeyedTables, seen, seen_text
from .patterns import (API_MISMATCH_RE, DRIVER_RELEASE_RE, EDAC_COUNT_RE, EDAC_MC_RE, KPROBE_FAIL_RE, NVRM_PCI_RE,
                       NVSWITCH_RE, PROBE_COUNT_RE, SXID_RE, UNSUPPORTED_RE, XID_PCI_RE, nvrm_driver_event,
                       sxid_fatal)

_SAYS_WHY_PROBE_FAILED = frozenset(("driver_conflict", "driver_open_unsupported", "gpu_unsupported"))
# mcelog's default DIMM threshold for corrected errors is 10 per 24 h (ce-error-threshold =
# 10 / 24h): a controller that corrected that many in one log has a DIMM going bad
EDAC_CE_WARN = 10
JOIN_LINES = 8          # a multi-line NVRM message spans at most this many lines
MAX_TEXT = 2048         # joined text kept per message


class DriverLog(KeyedTables):
    """Tables of the driver, NVSwitch and EDAC events of one log, fed in log order."""

    def __init__(self, max_keys):
        self.max_keys = max_keys
        self.events = {}        # (kind, pci) -> record
        self.sxids = {}         # (code, switch pci) -> record
        self.dimm = {}          # (CE|UE, mc) -> record
        self.overflow = 0
        self._open = None       # [record, first line, last line] of the message being joined

    def reset(self):
        """Another file begins: a message never continues into another file."""
        self._open = None

    # -- NVRM ----------------------------------------------------------------------------
    def continues(self, ctx):
        """Append an NVRM line to the message being joined; True when it was one of its lines."""
        op = self._open
        if op is None or ctx[0] - op[1] >= JOIN_LINES or ctx[0] - op[2] > 2:
            self._open = None
            return False
        op[2] = ctx[0]
        rec = op[0]
        if len(rec["text"]) < MAX_TEXT:
            rec["text"] = (rec["text"] + " " + _body(ctx[1]))[:MAX_TEXT]
        return True

    def nvrm(self, ctx, in_window):
        """An NVRM line that is no Xid, identity or GPU event. True when it opened an event."""
        kind = nvrm_driver_event(ctx[1])
        op = self._open
        if (kind == "driver_open_unsupported" and op is not None and op[0]["kind"] == "gpu_unsupported"
                and self.continues(ctx)):
            return True  # its next line says why ('.. not supported by open nvidia.ko ..'): one message
        if kind is None:
            return self.continues(ctx)
        if not in_window(ctx):
            self._open = None
            return True
        pm = UNSUPPORTED_RE.search(ctx[1]) or NVRM_PCI_RE.search(ctx[1])
        pci = normalize_pci(pm.group("pci")) if pm else None
        rec = self._rec(self.events, (kind, pci), ctx, kind=kind, pci=pci, text="")
        if rec is None:
            return True
        if rec["count"] == 1:
            rec["text"] = _body(ctx[1])[:MAX_TEXT]
            self._open = [rec, ctx[0], ctx[0]]
        else:
            self._open = None
        return True

    def kprobe(self, ctx, in_window):
        """The kernel's driver core saying the nvidia driver's probe of a device failed (no NVRM
        prefix: 'nvidia 0000:01:00.0: probe with driver nvidia failed with error -1')."""
        m = KPROBE_FAIL_RE.search(ctx[1])
        if not m or not in_window(ctx):
            return None
        pci = normalize_pci(m.group("pci") or m.group("pci2"))
        rec = self._rec(self.events, ("gpu_probe_failed", pci), ctx, kind="gpu_probe_failed", pci=pci, text="")
        if rec is not None and not rec["text"]:
            rec["text"] = "probe failed with error %s" % m.group("err")
        return "gpu_probe_failed"

    # -- NVSwitch ------------------------------------------------------------------------
    def sxid(self, ctx, in_window):
        line = ctx[1]
        m = SXID_RE.search(line)
        if not m or not in_window(ctx):
            return None
        code = int(m.group("code"))
        pm = XID_PCI_RE.search(m.group("inside"))
        pci = normalize_pci(pm.group("pci")) if pm else None
        sw = NVSWITCH_RE.search(line)
        rest = m.group("rest").lstrip(", ")
        rec = self._rec(self.sxids, (code, pci), ctx, sxid=code, pci=pci, switch=sw.group(1) if sw else None,
                        fatal=None, message=rest[:300])
        if rec is not None:
            fatal = sxid_fatal(rest)
            if fatal is not None:
                rec["fatal"] = bool(rec["fatal"]) or fatal
        return "sxid_%d" % code

    # -- EDAC ----------------------------------------------------------------------------
    def edac(self, ctx, in_window):
        line = ctx[1]
        m = EDAC_COUNT_RE.search(line)
        low = line.lower()
        if m:
            typ, n = m.group("t"), int(m.group("n"))
        elif "uncorrect" in low and "error" in low:
            typ, n = "UE", 1
        else:
            return None  # 'EDAC MC0: Giving out device to module ..' and other boot chatter
        if n <= 0 or not in_window(ctx):
            return None
        mc = EDAC_MC_RE.search(line)
        rec = self._rec(self.dimm, (typ, mc.group("mc") if mc else None), ctx, type=typ,
                        mc=mc.group("mc") if mc else None, errors=0)
        if rec is not None:
            rec["errors"] += n
        return "edac_" + typ.lower()

    # -- output --------------------------------------------------------------------------
    def findings(self, sref, ids, xid_codes):
        """``xid_codes``: the Xids of the log (a GSP timeout already reported as Xid 119/120 is
        not reported twice)."""
        out = []
        made = []
        for (kind, pci), r in sorted(self.events.items(), key=lambda kv: kv[1]["line"]):
            f = _driver_finding(kind, pci, r, ids, xid_codes)
            if f is not None:
                f["source"] = sref(r["line"])
                f.update(seen(r))
                made.append((kind, f))
        # 'probe routine failed' / 'No NVIDIA graphics adapter probed!' follow the cause: said by the
        # cause's finding, when there is one (a cause whose lines did not say enough made none)
        said_why = set(k for k, _f in made) & _SAYS_WHY_PROBE_FAILED
        out.extend(f for k, f in made if not (k == "gpu_probe_failed" and said_why))
        for (code, pci), r in sorted(self.sxids.items(), key=lambda kv: kv[1]["line"]):
            out.append(_sxid_finding(code, pci, r, sref))
        for (typ, mc), r in sorted(self.dimm.items(), key=lambda kv: kv[1]["line"]):
            where = ("memory controller MC%s" % mc) if mc is not None else "a memory controller"
            nums = dict(seen(r), counters={typ.lower(): r["errors"]})
            if typ == "UE":
                f = finding("host_memory_ue", "EDAC: %d uncorrectable host memory error(s) on %s, logged %s" % (
                    r["errors"], where, seen_text(r)), evidence=r["evidence"], source=sref(r["line"]), **nums)
            else:
                f = finding("host_memory_ce", "EDAC: %d correctable host memory error(s) on %s, logged %s" % (
                    r["errors"], where, seen_text(r)), evidence=r["evidence"], source=sref(r["line"]),
                    severity="warning" if r["errors"] >= EDAC_CE_WARN else None,
                    threshold=EDAC_CE_WARN, **nums)
            f["component"] = "host_memory"
            out.append(f)
        return out

    def facts(self):
        return {
            "driver_events": [{"kind": k, "pci": p, "count": r["count"], "line": r["line"]}
                              for (k, p), r in sorted(self.events.items(), key=lambda kv: kv[1]["line"])],
            "sxids": [{"sxid": c, "pci": p, "switch": r["switch"], "fatal": r["fatal"], "count": r["count"],
                       "message": r["message"], "line": r["line"]}
                      for (c, p), r in sorted(self.sxids.items(), key=lambda kv: kv[1]["line"])],
            "edac": {"ue": sum(r["errors"] for (t, _), r in self.dimm.items() if t == "UE"),
                     "ce": sum(r["errors"] for (t, _), r in self.dimm.items() if t == "CE")},
        }


def _body(line):
    """The words of a message line: rsyslog's '#012' newlines and every 'NVRM:' prefix out."""
    text = line.replace("#012", " ")
    i = text.find("NVRM:")
    if i >= 0:
        text = text[i + 5:]
    return " ".join(text.replace("NVRM:", " ").split())


def _driver_finding(kind, pci, r, ids, xid_codes):
    text = r["text"]
    gpu = ids.ref(gpu_ref(pci)) if pci else None
    where = ("GPU %s" % pci) if pci else "the node"
    kw = dict(evidence=r["evidence"], gpu=gpu)
    if kind == "driver_version_mismatch":
        m = API_MISMATCH_RE.search(text)
        vers = (": user space %s, kernel module %s" % (m.group("client"), m.group("module"))) if m else ""
        return finding(kind, "NVIDIA driver and library versions differ (API mismatch, reported %s)%s" % (
            seen_text(r), vers), **kw)
    if kind == "driver_conflict":
        m = PROBE_COUNT_RE.search(text)
        return finding(kind, "the NVIDIA driver could not claim %s device(s): another driver (nouveau?) owns them, "
                             "reported %s" % (m.group("n") if m else "its", seen_text(r)), **kw)
    if kind == "gpu_probe_failed":
        m = PROBE_COUNT_RE.search(text)
        if m is None and pci:
            return finding(kind, "the NVIDIA driver's probe of %s failed (%s), reported %s" % (
                where, text, seen_text(r)), **kw)
        return finding(kind, "the NVIDIA driver's probe failed (%s device(s)): no GPU initialised, reported %s" % (
            m.group("n") if m else "?", seen_text(r)), **kw)
    if kind == "gpu_unsupported":
        low = text.lower()
        if "open" in low and ("nvidia.ko" in low or "gsp" in low):
            kind = "driver_open_unsupported"
        elif "driver release" in low or "not supported by" in low:
            ver = DRIVER_RELEASE_RE.search(text)
            return finding("driver_gpu_unsupported", "%s is not supported by this driver release%s" % (
                where, (" (%s)" % ver.group("ver")) if ver else ""), **kw)
        else:
            return None
    if kind == "driver_open_unsupported":
        return finding(kind, "the open NVIDIA kernel module refuses %s (no GSP, or not a data-center GPU)" % where,
                       **kw)
    if kind == "gsp_error":
        if xid_codes & {119, 120}:
            return None  # the Xid finding says it
        return finding(kind, "GSP firmware of %s timed out or halted, reported %s" % (where, seen_text(r)), **kw)
    return None


_SXID_CLASS = None


def sxid_class(code):
    """(category, meaning) the NVIDIA driver's table (vocab/nvrm.py) gives SXid ``code`` when all its
    lines agree, else None: an SXid NVIDIA says only Fabric Manager's set-up causes is the driver's."""
    global _SXID_CLASS
    if _SXID_CLASS is None:
        from ..vocab import nvrm
        by = {}
        for row in nvrm.ROWS:
            m = re.search(r"\): (\d{4,5}), ", row[2]) if row[3] == "nvswitch_sxid" else None
            if m:
                by.setdefault(int(m.group(1)), []).append((row[4], row[6]))
        _SXID_CLASS = dict((c, rows[0]) for c, rows in by.items() if len(set(r[0] for r in rows)) == 1)
    return _SXID_CLASS.get(code)


def _sxid_finding(code, pci, r, sref):
    sw = r["switch"] or "an NVSwitch"
    fatal = r["fatal"]
    what = "fatal" if fatal else ("non-fatal" if fatal is False else "")
    msg = "NVSwitch %s (%s) SXid %d%s %s: %s" % (sw, pci or "PCI address elided", code,
                                                 (" " + what) if what else "", seen_text(r), r["message"][:200])
    cls = sxid_class(code)
    if cls is not None and cls[0] == "driver":
        f = finding("nvswitch_sxid", "%s. %s" % (msg, cls[1].split(": ", 1)[-1]), evidence=r["evidence"],
                    source=sref(r["line"]), severity="critical" if fatal else "warning", category="driver",
                    rung="none", steps=("sxid_check_fm_partition",), **seen(r))
    elif fatal:
        f = finding("nvswitch_sxid", msg, evidence=r["evidence"], source=sref(r["line"]), severity="critical",
                    rung="reboot", steps=("drain_node", "sxid_reset_fabric", "reboot_node", "contact_support_if_recurs"),
                    **seen(r))
    else:
        f = finding("nvswitch_sxid", msg, evidence=r["evidence"], source=sref(r["line"]), severity="warning",
                    rung="none", steps=("no_action", "sxid_watch_links"), **seen(r))
    f["component"] = "nvlink_fabric"
    f["sxid"] = code
    return f
