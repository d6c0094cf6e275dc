# SPDX-License-Identifier: Apache-2.0
"""Xid lines: the driver's 'NVRM: Xid (PCI:..): N, pid=.., name=.., message', the Kubernetes
device plugin's report of one, and an Xid 154's recovery action on a line of its own, counted
per (code, GPU) into the scanner ``sc`` (methods of KernelLogScanner kept in a file of their own;
they use the scanner's tables)."""

from ..findings import normalize_pci
from .nodelog import count_line
from .patterns import GPU_IDX_RE, GPUD_XID_RE, PLUGIN_XID_RE, XID_PCI_RE, XID_RE, XID_REST_RE


def read_xid(sc, ctx):
    """An 'NVRM: Xid' line (several when lines were joined in transit)."""
    sc._drv.reset()
    line = ctx[1]
    parts = line.split("NVRM: Xid")
    if len(parts) > 2:  # lines joined in transit: each Xid counts
        for part in parts[1:]:
            _xid_one(sc, ctx, "NVRM: Xid" + part.split("NVRM:")[0], joined=True)
    else:
        _xid_one(sc, ctx, line)

def _xid_one(sc, ctx, line, joined=False):
    m = XID_RE.search(line)
    if not m:
        if "Xid" in line and sc._in_window(ctx):
            count_line(sc._bad_xid, None, (ctx[0], line) + ctx[2:], 1, {})
            sc._event(ctx, "xid_unparsed")
        return
    if not sc._in_window(ctx):
        return
    code = int(m.group("code"))
    inside = m.group("inside") or ""
    pm = XID_PCI_RE.search(inside)
    pci = normalize_pci(pm.group("pci")) if pm else None
    odd = [] if pm else ["PCI address not in the line (%r)" % inside[:40]]
    if joined:
        odd.append("several Xids joined on one line")
    if pci:
        sc._gpu(pci)
    r = XID_REST_RE.match(m.group("rest")) or XID_REST_RE.match("")
    pid = (r.group("pid") or "").strip("'")
    name = (r.group("name") or "").strip()
    msg = (r.group("msg") or "").strip()
    if not r.group("pid") and not r.group("name") and not msg:
        msg = m.group("rest").lstrip(", ").strip()
    rec = sc._bump(sc._xids, (code, pci), ctx, xid=code, pci=pci, pid=None, process=None,
                     message=msg, index=None, processes=[], odd=odd)
    if rec is None:
        return
    if rec["pid"] is None and pid.isdigit():
        rec["pid"] = int(pid)
    if name and not name.startswith("<"):
        if rec["process"] is None:
            rec["process"] = name
        if name not in rec["processes"] and len(rec["processes"]) < 8:
            rec["processes"].append(name)
    if rec["index"] is None:
        gi = GPU_IDX_RE.search(msg)
        if gi:
            rec["index"] = int(gi.group(1))
    sc._last_xid = (rec, ctx[0])
    sc._event(ctx, "xid_%d" % code)

def read_plugin_xid(sc, ctx):
    """NVIDIA's k8s-device-plugin (internal/rm/health.go): 'XidCriticalError: Xid=79 on
    Device=GPU-<uuid>; marking device as unhealthy.': an Xid NVML reported to the plugin,
    the GPU named by its UUID."""
    m = PLUGIN_XID_RE.search(ctx[1])
    if not m or not sc._in_window(ctx):
        return
    code, uuid = int(m.group("code")), m.group("uuid")
    rec = sc._bump(sc._xids, (code, uuid), ctx, xid=code, pci=None, pid=None, process=None,
                     message="reported by the Kubernetes device plugin" + (m.group("rest") or ""), index=None,
                     processes=[], odd=[], uuid=uuid)
    if rec is not None:
        sc._event(ctx, "xid_%d" % code)

def read_gpud_xid(sc, ctx):
    """leptonai/gpud's report of an Xid it read (patterns.GPUD_XID_RE): 'XID 79(GPU has fallen off
    the bus) detected on PCI:0000:ae:00'; the GPU named by its PCI address or its UUID."""
    m = GPUD_XID_RE.search(ctx[1])
    if not m or not sc._in_window(ctx):
        return
    code = int(m.group("code"))
    pci = normalize_pci(m.group("pci")) if m.group("pci") else None
    if pci:
        sc._gpu(pci)
    rec = sc._bump(sc._xids, (code, pci or m.group("uuid")), ctx, xid=code, pci=pci, pid=None, process=None,
                   message="reported by gpud: %s" % m.group("name"), index=None, processes=[], odd=[],
                   **({"uuid": m.group("uuid")} if m.group("uuid") else {}))
    if rec is not None:
        sc._event(ctx, "xid_%d" % code)

def read_xid_continued(sc, ctx):
    """'GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)' on a line of its
    own, right after an Xid 154 whose line the journal or a terminal cut: it is that Xid's text."""
    last = sc._last_xid
    if last is None or ctx[0] - last[1] > 2 or last[0]["xid"] != 154:
        return
    rec, line = last[0], ctx[1]
    if "recovery action" not in rec["message"]:
        i = line.find("recovery action")
        head = line[:i].rstrip()
        word = head.split()[-1] if head.split() else ""
        rec["message"] = (rec["message"] + " " + (word + " " if word.isalpha() else "") + line[i:]).strip()
    sc._last_xid = None
