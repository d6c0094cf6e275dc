# SPDX-License-Identifier: Apache-2.0
"""InfiniBand async events the job's processes logged (NCCL's 'Got async event', Open MPI's openib
BTL's [of error event]: joblog/nccl_words.py and ompi_lines.py record them): what each means by
rdma-core's ibv_event_type_str table (vocab/rdma.py), the job's one finding of them, and the hosts
whose own HCA reported a failing port."""

from ..findings import finding, ib_ref
from ..vocab import ROW_FIELDS
from .text import evidence

# ibv_event_type_str() texts: what an async event means for the link
# rdma-core's ibv_event_type_str (libibverbs/enum_strs.c); NCCL prints them as they are
ASYNC_CRITICAL = ("port error", "local catastrophic error", "local work queue catastrophic error", "CQ error",
                  "SRQ catastrophic error", "path migration request error", "path migration error")
ASYNC_INFO = ("port active", "LID change", "P_Key change", "SM change", "client reregistration", "GID table change",
              "communication established", "send queue drained", "path migrated", "path migration successful",
              "SRQ limit reached", "last WQE reached")


def event_name(text):
    """The ibv_event_type_str() text at the start of what NCCL printed (some builds add more)."""
    text = text.strip()
    for e in ASYNC_CRITICAL + ASYNC_INFO + ("local access violation work queue error",
                                            "invalid request local work queue error"):
        if text.startswith(e):
            return e
    return text


def async_findings(st):
    """One finding for every async event of the job (the job's findings keep one per kind and
    rank): its severity is the worst event's, its message counts each (host, device, event)."""
    groups = {}
    for rec in st.nccl_words:
        if rec["kind"] == "nccl_ib_async_event":
            groups.setdefault((rec.get("host"), rec.get("hca"), rec["event"]), []).append(rec)
    if not groups:
        return []
    order = {"critical": 0, "warning": 1, "info": 2, "ok": 3}
    rows = dict((e, async_row(e)) for _h, _d, e in groups)  # one look-up per event, not per use

    def sev(event):
        row = rows[event]
        if row is not None:
            return row["severity"]
        return "critical" if event in ASYNC_CRITICAL else "info" if event in ASYNC_INFO else "warning"
    items = sorted(groups.items(), key=lambda kv: (order.get(sev(kv[0][2]), 1), -len(kv[1])))
    (host, hca, event), recs = items[0]
    first = recs[0]
    seen = "; ".join("'%s'%s on %s x%d" % (e, " (%s)" % d if d else "", h or "an unnamed host", len(r))
                     for (h, d, e), r in items[:8])
    who = first.get("emitter") or "NCCL"  # Open MPI's openib BTL reports them too (ompi_lines.py)
    row, severity = rows[event], sev(event)
    if row is not None and row["category"] not in ("ib_network", "healthy"):
        # not the port's: a queue pair's error (the peer's request or memory key), per rdma-core
        return [finding(row["kind"], "%s got IB async events: %s%s. %s" % (
            who, seen, " ..." if len(items) > 8 else "", row["meaning"]), category=row["category"],
            severity=severity, name="libibverbs", ib=ib_ref(hca, first.get("port")) if hca else None,
            **common(first))]
    return [finding(
        "nccl_ib_async_event",
        "%s got IB async events from the hosts' own HCAs: %s%s. %s" % (
            who, seen, " ..." if len(items) > 8 else "",
            "The HCA port of %s is failing (link down or flapping)." % (host or "that host")
            if severity == "critical" else "The port changed state."),
        severity=severity if severity != "ok" else "info", ib=ib_ref(hca, first.get("port")) if hca else None,
        **common(first))]


def async_row(event):
    """What rdma-core says of an async event (vocab/rdma.py, ibv_event_type_str), or None."""
    from ..vocab import table
    t = table("rdma")
    m = t.match("Got async event : " + event) if t is not None else None
    return dict(zip(ROW_FIELDS, m[0])) if m else None


def async_port_hosts(st):
    """Hosts whose own HCA reported a failing-port async event, most reports first."""
    counts = {}
    for r in st.nccl_words:
        if r["kind"] == "nccl_ib_async_event" and r["event"] in ASYNC_CRITICAL and r.get("host"):
            counts[r["host"]] = counts.get(r["host"], 0) + 1
    return [h for h, _n in sorted(counts.items(), key=lambda kv: -kv[1])]


def common(rec):
    """A finding's evidence, source and rank from one NCCL-words record."""
    return {"evidence": evidence(rec["evidence"]), "source": rec["src"], "rank": rec.get("rank")}
