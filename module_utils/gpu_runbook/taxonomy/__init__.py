# SPDX-License-Identifier: Apache-2.0
"""One source of truth for what the engine can say: categories, severities, the rung
table, the steps actions are made of, and every finding kind.

A kind is declared once, in the table of its domain (``kinds_*.py``), with
``kind(category, severity, rung, steps, en, ko)``:

- ``category``/``severity``: defaults; a finding may raise or lower its own severity,
  and may take one of the kind's ``also`` categories, nothing else;
- ``rung`` and ``steps``: the remedy. ``rung`` must equal the costliest rung among the
  steps. ``rung=None`` means decided per finding (an Xid's catalog entry, a job culprit
  that inherits its host's finding): the finding then brings its rung, and its steps
  are that rung's (``RUNG_STEPS``) unless it brings steps consistent with it;
- ``en``/``ko``: what the kind means, a template over the finding's ``gpu``, ``ib``,
  ``xid``, ``rank`` and ``name`` fields.

Every module that needs a rung, a label or an action reads it here.

Names say who speaks: a parser's own words about its input carry the parser's prefix
(``nvsmi_empty``, ``nvsmi_unparseable``, ``kernlog_unparseable``, ``ib_unparseable``); a probe's
about running the command carry the command's (``nvidia_smi_hang``, ``nvidia_smi_missing``: the
run, not the output); an emitter's messages read through its vocabulary are ``logged_*``; the
active tier's checks ``active_*``. No kind is a bare word another reader could mean.
"""

from . import kinds_active, kinds_gpu, kinds_host, kinds_ib, kinds_job, kinds_kernel, kinds_probe, kinds_vocab
from .rungs import RUNG_RANK, RUNG_STEPS, RUNG_TABLE, RUNGS, STEPS, rung_of_steps
from .table import CATEGORIES, CATEGORY_LABEL, SEVERITIES, SEVERITY_LABEL, SEVERITY_RANK, kind

__all__ = ["CATEGORIES", "CATEGORY_LABEL", "KINDS", "RUNGS", "RUNG_RANK", "RUNG_STEPS", "RUNG_TABLE",
           "SEVERITIES", "SEVERITY_LABEL", "SEVERITY_RANK", "STEPS", "action_text", "kind", "kind_info",
           "rung_label", "rung_of_steps", "steps_for"]


_TABLES = (kinds_probe, kinds_host, kinds_gpu, kinds_kernel, kinds_ib, kinds_job, kinds_vocab, kinds_active)


def _merge(tables):
    """One KINDS table from the domain tables; a domain may declare steps of its own
    (``STEPS``, same row format as rungs.STEPS). Checked here: no name twice, every step
    known, every fixed rung equal to the costliest rung of its steps."""
    kinds = {}
    for t in tables:
        for sid, row in getattr(t, "STEPS", {}).items():
            if sid in STEPS:
                raise ValueError("step %r declared twice (%s)" % (sid, t.__name__))
            if row[0] is not None and row[0] not in RUNG_RANK:
                raise ValueError("step %r: unknown rung %r" % (sid, row[0]))
            STEPS[sid] = row
        for name, entry in t.KINDS.items():
            if name in kinds:
                raise ValueError("finding kind %r declared twice (%s)" % (name, t.__name__))
            kinds[name] = entry
    for name, entry in kinds.items():
        if entry["rung"] is None:
            continue
        unknown = [s for s in entry["steps"] if s not in STEPS]
        if unknown:
            raise ValueError("kind %r: unknown steps %r" % (name, unknown))
        if rung_of_steps(entry["steps"]) != entry["rung"]:
            raise ValueError("kind %r: rung %r contradicts steps %r" % (name, entry["rung"], entry["steps"]))
    return kinds


KINDS = _merge(_TABLES)


def kind_info(name):
    """The table entry of a finding kind; ValueError for a kind nobody declared."""
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError("unknown finding kind %r: declare it in taxonomy/kinds_*.py" % (name,))


def steps_for(name, rung=None, steps=None):
    """(rung, steps) of one finding of kind ``name``; ValueError when they contradict the table."""
    info = kind_info(name)
    if info["rung"] is not None:
        if rung not in (None, info["rung"]):
            raise ValueError("kind %r takes rung %r, not %r" % (name, info["rung"], rung))
        if steps is not None and tuple(steps) != info["steps"]:
            raise ValueError("kind %r has fixed steps" % (name,))
        return info["rung"], info["steps"]
    if rung not in RUNG_RANK:
        raise ValueError("kind %r needs a rung per finding, got %r" % (name, rung))
    steps = tuple(steps) if steps else RUNG_STEPS[rung]
    if rung_of_steps(steps) != rung:
        raise ValueError("kind %r: steps %r do not perform rung %r" % (name, steps, rung))
    return rung, steps


def action_text(steps, lang="en"):
    """The action sentence of a tuple of step ids, in ``lang`` (en or ko)."""
    col = 2 if lang == "ko" else 1
    return " ".join(STEPS[s][col] for s in steps)


def rung_label(rung, lang="en"):
    row = RUNG_TABLE.get(rung)
    return row["label"].get(lang, row["label"]["en"]) if row else str(rung)
