# SPDX-License-Identifier: Apache-2.0
"""The RMA bundle: what a hardware ticket needs, as JSON (schema gpu-runbook/rma/v1) and as
Markdown a ticket can paste.

    rma_bundle(host, analysis_host, gpu_facts, history, attempts, paths, incident, now,
               reason=None, assessment=None, earlier_facts=None, outcomes=None, plan_host=None)
        -> (bundle, markdown)

- ``analysis_host``: the host's findings of this run (verdict, severity, findings; the
  diagnosis' findings and the fresh ones after the ladder may be merged in one list);
- ``gpu_facts``: the fresh gather's facts ({"gpu": {...}, "ib": {...}}) or nvidia-smi facts
  ({"gpus": [...]}); ``earlier_facts``: the gather before the ladder (identity of a GPU that
  has since fallen off the bus);
- ``history``: the ledger's history.jsonl entries, ``attempts``: its audit.jsonl entries
  (only those of this incident and host count, the verify step's own lines aside);
- ``paths``: logs and reports to attach; ``reason``: the Slurm reason set on the node;
- ``assessment``: what ``verify.assess`` said (the GPUs and ports to replace); computed from
  ``outcomes`` and ``plan_host`` when not given.

Pure (no I/O) and never raises on partial input: what is missing reads "unknown".
"""

import re

from ..timeutil import iso, to_utc
from ..validate import control_characters
from .policy import one_line
from .verify import same_ids, dicts, gpus_in, gpu_ref, names_gpu, assess, clean_id, gpu_catalog, gpu_words

SCHEMA = "gpu-runbook/rma/v1"
UNKNOWN = "unknown"
OWN_STEPS = ("verify", "resume")  # the verify step's own audit lines are not "what was tried"
_VOLUME = ("_data", "_packets", "_wait")  # traffic counters: not evidence of a fault


def _u(v):
    return UNKNOWN if v is None or v == "" else v


def _when(v):
    t = to_utc(v) if isinstance(v, str) and v else None
    return iso(t) if t is not None else (str(v) if v else UNKNOWN)


def _finding_row(f):
    return {"severity": _u(f.get("severity")), "kind": _u(f.get("kind")), "xid": f.get("xid"),
            "message": one_line(f.get("message") or "", 300), "source": _u(f.get("source")),
            "evidence": one_line(f.get("evidence") or "", 300)}


def _unique(rows):
    seen, out = set(), []
    for r in rows:
        key = (r["kind"], r["xid"], r["message"])
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out


def _gpu_record(gpu_facts, earlier_facts, g):
    """The GPU's record in the fresh facts, else in the earlier ones (None: not seen)."""
    for facts in (gpu_facts, earlier_facts):
        for rec in gpus_in(facts):
            if same_ids(gpu_ref(rec), g) or (g.get("pci") and gpu_ref(rec)["pci"] == g["pci"]):
                return rec
    return None


def _memory_state(rec):
    if not isinstance(rec, dict):
        return {"seen": False, "ecc": UNKNOWN, "remapped_rows": UNKNOWN, "retired_pages": UNKNOWN}
    keep = ("correctable", "uncorrectable", "pending", "failure", "single_bit", "double_bit")

    def part(d):
        return {k: _u(v) for k, v in d.items() if k in keep} if isinstance(d, dict) else UNKNOWN
    ecc = rec.get("ecc") if isinstance(rec.get("ecc"), dict) else {}
    return {"seen": True, "ecc": {"volatile": part(ecc.get("volatile")), "aggregate": part(ecc.get("aggregate"))},
            "remapped_rows": part(rec.get("remapped_rows")), "retired_pages": part(rec.get("retired_pages")),
            "reset_required": _u(rec.get("reset_required")), "recovery_action": _u(rec.get("recovery_action"))}


def _history_row(e):
    row = {"when": _when(e.get("when")), "type": _u(e.get("type")), "incident": _u(e.get("incident"))}
    for k in ("xid", "kind", "rung", "result"):
        if e.get(k) is not None:
            row[k] = e[k]
    return row


def _same_host(e, host):
    return str(e.get("host") or "").strip().lower() == str(host or "").strip().lower()


def _gpu_history(history, host, g):
    out = []
    for e in dicts(history):
        if _same_host(e, host) and not clean_id(e.get("port")):
            ref = gpu_ref(e.get("gpu") if isinstance(e.get("gpu"), dict) else e)
            if same_ids(ref, g):
                out.append(_history_row(e))
    return out


def _gpu_section(g, analysis_host, gpu_facts, earlier_facts, history, host):
    rec = _gpu_record(gpu_facts, earlier_facts, g)
    mine = [f for f in dicts((analysis_host or {}).get("findings")) if names_gpu(f, g)]
    out = {"serial": _u(g.get("serial")), "uuid": _u(g.get("uuid")), "pci": _u(g.get("pci")),
           "index": _u(g.get("index")), "model": _u(g.get("model")), "vbios": _u(g.get("vbios")),
           "what": gpu_words(g), "cause": _u(g.get("cause")),
           "findings": _unique([_finding_row(f) for f in mine]),
           "history": _gpu_history(history, host, g)}
    out.update(_memory_state(rec))
    return out


def _ib_record(gpu_facts, p):
    ib = (gpu_facts or {}).get("ib") if isinstance(gpu_facts, dict) else None
    for rec in dicts((ib or {}).get("ports")):
        if rec.get("device") == p["device"] and (rec.get("port") in (None, p["port"])):
            return rec
    return None


def _port_section(p, analysis_host, gpu_facts, history, host, outcomes):
    rec = _ib_record(gpu_facts, p) or {}
    name = "%s/%s" % (p["device"], p["port"])
    counters = rec.get("counters") if isinstance(rec.get("counters"), dict) else None
    rising = {}
    for o in dicts(outcomes):
        if isinstance(o.get("still_rising"), dict) and isinstance(o["still_rising"].get(name), dict):
            rising = o["still_rising"][name]
    mine = [f for f in dicts((analysis_host or {}).get("findings"))
            if isinstance(f.get("ib"), dict) and f["ib"].get("device") == p["device"]]
    hist = [_history_row(e) for e in dicts(history) if _same_host(e, host)
            and str(e.get("port") or "") in (name, p["device"])]
    return {"device": p["device"], "port": p["port"], "state": _u(rec.get("state")),
            "phys_state": _u(rec.get("phys_state")), "rate_gbps": _u(rec.get("rate_gbps")),
            "link_layer": _u(rec.get("link_layer")),
            "counters": {k: v for k, v in sorted(counters.items()) if not k.endswith(_VOLUME)}
            if counters is not None else UNKNOWN,
            "still_rising": rising or UNKNOWN, "findings": _unique([_finding_row(f) for f in mine]),
            "history": hist}


def _attempts(attempts, host, incident):
    out = []
    for e in dicts(attempts):
        if not _same_host(e, host) or e.get("check_mode") or e.get("rung") in OWN_STEPS:
            continue
        if incident and str(e.get("incident") or "") != str(incident):
            continue
        argv = e.get("argv") if isinstance(e.get("argv"), list) else []
        out.append({"when": _when(e.get("when")), "rung": _u(e.get("rung")), "argv": [str(a) for a in argv],
                    "result": _u(e.get("result")), "message": one_line(e.get("message") or "", 300)})
    return out


def _driver(gpu_facts, earlier_facts):
    for facts in (gpu_facts, earlier_facts):
        gpu = facts.get("gpu") if isinstance(facts, dict) and isinstance(facts.get("gpu"), dict) else facts
        if isinstance(gpu, dict) and (gpu.get("driver_version") or gpu.get("cuda_version")):
            return {"driver_version": _u(gpu.get("driver_version")), "cuda_version": _u(gpu.get("cuda_version"))}
    return {"driver_version": UNKNOWN, "cuda_version": UNKNOWN}


def rma_bundle(host, analysis_host, gpu_facts, history, attempts, paths, incident, now, reason=None,
               assessment=None, earlier_facts=None, outcomes=None, plan_host=None):
    try:
        bundle = _bundle(host, analysis_host, gpu_facts, history, attempts, paths, incident, now, reason,
                         assessment, earlier_facts, outcomes, plan_host)
    except Exception as exc:  # noqa: BLE001 -- bad input is normal input: a bundle that says so
        def text(v):
            return one_line(v, 400) if isinstance(v, str) and v.strip() else UNKNOWN
        bundle = {"schema": SCHEMA, "generated": UNKNOWN, "host": text(host), "incident": text(incident),
                  "summary": UNKNOWN, "escalate": UNKNOWN, "slurm_reason": text(reason), "verdict": UNKNOWN,
                  "severity": UNKNOWN, "driver": {"driver_version": UNKNOWN, "cuda_version": UNKNOWN},
                  "gpu_models": UNKNOWN, "gpus": [], "ib_ports": [], "findings": [], "attempts": [], "paths": [],
                  "errors": ["cannot build the bundle from this input: %s: %s" % (type(exc).__name__, one_line(exc, 200))]}
    return bundle, markdown(bundle)


def _bundle(host, analysis_host, gpu_facts, history, attempts, paths, incident, now, reason, assessment,
            earlier_facts, outcomes, plan_host):
    analysis_host = analysis_host if isinstance(analysis_host, dict) else {}
    findings = dicts(analysis_host.get("findings"))
    history = dicts(history)
    if not isinstance(assessment, dict):
        catalog = gpu_catalog([gpu_facts, earlier_facts], findings, history, host)
        assessment = assess(analysis_host, outcomes, plan_host, False, catalog, findings)
    gpus = [_gpu_section(g, analysis_host, gpu_facts, earlier_facts, history, host)
            for g in dicts(assessment.get("gpus"))]
    ports = [_port_section(p, analysis_host, gpu_facts, history, host, outcomes)
             for p in dicts(assessment.get("ports")) if p.get("device")]
    t = to_utc(now) if isinstance(now, str) else now
    bundle = {
        "schema": SCHEMA, "generated": iso(t) if t is not None else UNKNOWN,
        "host": _u(clean_id(host)), "incident": _u(clean_id(incident)),
        "summary": _u(assessment.get("reason")), "escalate": _u(assessment.get("escalate")),
        "slurm_reason": _u(reason), "verdict": _u(analysis_host.get("verdict")),
        "severity": _u(analysis_host.get("severity")), "driver": _driver(gpu_facts, earlier_facts),
        "gpu_models": sorted({str(gpu_ref(g)["model"]) for f in (gpu_facts, earlier_facts) for g in gpus_in(f)
                              if gpu_ref(g)["model"]}) or UNKNOWN,
        "gpus": gpus, "ib_ports": ports,
        "findings": _unique([_finding_row(f) for f in findings if f.get("severity") in ("warning", "critical")]),
        "attempts": _attempts(attempts, host, incident),
        "paths": sorted({p.strip() for p in (paths if isinstance(paths, (list, tuple)) else [])
                         if isinstance(p, str) and p.strip()}),
    }
    return bundle


# ---------------------------------------------------------------- Markdown
# Every value in the Markdown came from a host (a reason, a message, a name) and is shown as text:
# one line (a newline would start a heading or a section of its own), control and format characters
# (ESC, C1, bidi overrides) as (U+XXXX), HTML as entities, and the characters that make a link, an
# image, a code span or a table cell (\\ ` [ ] |) backslash-escaped. Emphasis (* _) is left: it
# changes no structure, and kind names such as gpu_reset stay readable.
_MD_SPECIAL = re.compile(r"([\\`\[\]|])")


def _plain(v, cap=400):
    """One line, control characters shown as (U+XXXX), at most ``cap`` characters."""
    text = re.sub(r"[\r\n\t\v\f]+", " ", str(_u(v)))
    bad = set(control_characters(text))
    if bad:
        text = "".join("(U+%04X)" % ord(c) if c in bad else c for c in text)
    return one_line(text, cap)


def _text(v, cap=400):
    """A host's value as Markdown text that renders as itself."""
    text = _plain(v, cap).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", text)


def _code(v):
    """A host's value as a code span (a path, a source); one holding what a code span would show
    raw to a lax renderer (HTML, backticks, brackets) is escaped text instead."""
    text = _plain(v)
    return _text(v) if re.search(r"[`<>&\\\[\]|]", text) else "`%s`" % text


def _flat(v):
    if isinstance(v, (list, tuple)):
        return " ".join(str(x) for x in v)
    if isinstance(v, dict):
        return ", ".join("%s %s" % (k, _flat(x)) for k, x in sorted(v.items()))
    return v


def _cell(v):
    return _text(_flat(v))


def _table(head, rows):
    out = ["| %s |" % " | ".join(head), "|%s" % ("---|" * len(head))]
    out += ["| %s |" % " | ".join(_cell(c) for c in r) for r in rows]
    return out


def _md_history(rows, title):
    if not rows:
        return ["%s: none recorded." % title, ""]
    return ["%s:" % title, ""] + ["- %s %s%s%s (incident %s)" % (
        _text(r["when"]), _text(r["type"]), " Xid %s" % _text(r["xid"]) if "xid" in r else "",
        " %s" % _text(" ".join(str(r[k]) for k in ("kind", "rung", "result") if k in r)), _text(r["incident"]))
        for r in rows] + [""]


def _md_findings(rows):
    return ["- **%s** %s%s (%s)" % (_text(r["severity"]), "Xid %s: " % _text(r["xid"]) if r["xid"] is not None else "",
                                     _text(r["message"] or r["kind"]), _code(r["source"])) for r in rows]


def _md_gpu(g):
    out = ["### %s" % _text(g["what"]), ""]
    out += _table(["Serial", "UUID", "PCI", "Index", "Model", "VBIOS"],
                  [[g["serial"], g["uuid"], g["pci"], g["index"], g["model"], g["vbios"]]])
    out += ["", "Cause: %s" % _text(g["cause"]), ""]
    if g.get("seen"):
        out += ["Row remap: %s" % _cell(g["remapped_rows"]),
                "ECC volatile: %s; aggregate: %s" % (_cell(g["ecc"]["volatile"]), _cell(g["ecc"]["aggregate"])),
                "Retired pages: %s" % _cell(g["retired_pages"]), ""]
    else:
        out += ["Not seen by nvidia-smi in the gathers of this run (fallen off the bus or lost): "
                "ECC and row-remap state unknown.", ""]
    out += ["Findings of this run:", ""] + (_md_findings(g["findings"]) or ["- none"]) + [""]
    return out + _md_history(g["history"], "Ledger history of this GPU")


def _md_port(p):
    out = ["### %s port %s" % (_text(p["device"]), _text(p["port"])), ""]
    out += _table(["State", "Physical state", "Rate (Gb/s)", "Link layer"],
                  [[p["state"], p["phys_state"], p["rate_gbps"], p["link_layer"]]])
    out += ["", "Error counters: %s" % _cell(p["counters"]),
            "Still rising after the restart: %s" % _cell(p["still_rising"]), ""]
    out += ["Findings of this run:", ""] + (_md_findings(p["findings"]) or ["- none"]) + [""]
    return out + _md_history(p["history"], "Ledger history of this port")


def markdown(b):
    lines = ["# RMA: %s - %s" % (_text(b["host"]), _text(b["summary"])), ""]
    lines += _table(["Field", "Value"], [
        ["Host", b["host"]], ["Incident", b["incident"]], ["Generated", b["generated"]],
        ["Slurm reason", b["slurm_reason"]], ["Verdict", "%s (%s)" % (b["verdict"], b["severity"])],
        ["Escalation", b["escalate"]], ["GPU models on the host", b["gpu_models"]],
        ["Driver / CUDA", "%s / %s" % (b["driver"]["driver_version"], b["driver"]["cuda_version"])]])
    lines.append("")
    if b["gpus"]:
        lines += ["## GPUs to replace", ""]
        for g in b["gpus"]:
            lines += _md_gpu(g)
    if b["ib_ports"]:
        lines += ["## InfiniBand ports (cable, transceiver, switch port)", ""]
        for p in b["ib_ports"]:
            lines += _md_port(p)
    lines += ["## Findings", ""] + (_md_findings(b["findings"]) or ["- none"]) + [""]
    lines += ["## What was tried", ""]
    lines += _table(["When", "Rung", "Command", "Result", "Message"],
                    [[a["when"], a["rung"], a["argv"] or "-", a["result"], a["message"]] for a in b["attempts"]]) \
        if b["attempts"] else ["Nothing recorded for this incident."]
    lines += ["", "## Logs and reports", ""] + (["- %s" % _code(p) for p in b["paths"]] or ["- none"])
    if b.get("errors"):
        lines += ["", "## Errors", ""] + ["- %s" % _text(e) for e in b["errors"]]
    return "\n".join(lines) + "\n"


__all__ = ["SCHEMA", "markdown", "rma_bundle"]
