# SPDX-License-Identifier: Apache-2.0
"""What a diagnosis reported before (``known-faults.json`` in the state directory): a scheduled
run (AWX, hourly) says a fault is new once, not every hour until the log rotates, and an
operator can acknowledge one. A fault is a host's serious finding (warning or critical) keyed
by host, kind, Xid, GPU and IB port, never by its wording (counts change from run to run).

- ``compare``: this run's analysis against the record -> new, still known, cleared, the record
  to keep. A fault whose severity rose is new again (its acknowledgement goes); one no longer
  seen on a host whose evidence was read is cleared (it comes back as new); a host not read
  this time (unreachable, unknown) keeps its faults.
- ``acknowledge``: mark faults of named hosts (and kinds) as acknowledged, with who, when, why.

Pure logic plus two small file helpers (``read_known`` / ``write_known``), stdlib only."""

import json
import os

from ..safewrite import WriteRefused, read_bytes, write_atomic
from .errors import LedgerError, io_error
from .journal import check_dir

KNOWN_FILE = "known-faults.json"
SCHEMA = "gpu-runbook/known-faults/v1"
SERIOUS = {"warning": 1, "critical": 2}
MAX_FAULTS = 50000          # a record this large is a fleet on fire: the oldest go first
MAX_MESSAGE = 300


def fault_key(host, f):
    """'host|kind|xid=79|gpu=0000:75:00.0|ib=mlx5_4/1': what makes two readings one fault."""
    parts = [str(host), str(f.get("kind") or "?")]
    if f.get("xid") is not None:
        parts.append("xid=%s" % f["xid"])
    gpu = f.get("gpu")
    if isinstance(gpu, dict):
        which = gpu.get("pci") or gpu.get("uuid") or gpu.get("index")
        if which is not None:
            parts.append("gpu=%s" % which)
    ib = f.get("ib")
    if isinstance(ib, dict) and ib.get("device"):
        parts.append("ib=%s/%s" % (ib["device"], ib.get("port") or 1))
    return "|".join(parts)


def faults_of(hosts):
    """{key: fault} of the analysis hosts' serious findings; the job_culprit finding restates a
    host's own and is left out."""
    out = {}
    for h in hosts or ():
        if not isinstance(h, dict) or not h.get("host"):
            continue
        for f in h.get("findings") or ():
            if not isinstance(f, dict) or f.get("severity") not in SERIOUS or f.get("kind") == "job_culprit":
                continue
            key = fault_key(h["host"], f)
            prev = out.get(key)
            if prev is None or SERIOUS[f["severity"]] > SERIOUS[prev["severity"]]:
                out[key] = {"key": key, "host": str(h["host"]), "kind": str(f.get("kind") or "?"),
                            "severity": f["severity"], "message": str(f.get("message") or "")[:MAX_MESSAGE]}
    return out


def _read_hosts(hosts):
    """The hosts whose evidence this run read (a verdict other than unknown): only their faults clear."""
    return set(str(h["host"]) for h in hosts or () if isinstance(h, dict) and h.get("host")
               and h.get("verdict") not in (None, "unknown"))


def compare(known, hosts, now):
    """(new, still, cleared, record): this run's faults against ``known`` (a record as
    read_known returns it); ``now`` an ISO time. Each list holds fault records {key, host, kind,
    severity, message, first_reported, last_seen, acknowledged}, sorted by key."""
    faults = dict((known or {}).get("faults") or {})
    seen = faults_of(hosts)
    new, still = [], []
    for key, f in sorted(seen.items()):
        rec = faults.get(key)
        if not isinstance(rec, dict) or SERIOUS[f["severity"]] > SERIOUS.get(rec.get("severity"), 0):
            rec = dict(f, first_reported=now, last_seen=now, acknowledged=None)
            new.append(rec)
        else:
            rec = dict(rec, severity=f["severity"], message=f["message"], last_seen=now)
            still.append(rec)
        faults[key] = rec
    read = _read_hosts(hosts)
    cleared = [rec for key, rec in sorted(faults.items())
               if key not in seen and isinstance(rec, dict) and rec.get("host") in read]
    for rec in cleared:
        del faults[rec["key"]]
    if len(faults) > MAX_FAULTS:
        keep = sorted(faults.values(), key=lambda r: str(r.get("last_seen") or ""))[-MAX_FAULTS:]
        faults = dict((r["key"], r) for r in keep)
    return new, still, cleared, {"schema": SCHEMA, "updated": now, "faults": faults}


def acknowledge(known, now, who, note, hosts=None, kinds=None):
    """(acknowledged, record): the faults of ``hosts`` (of ``kinds`` when given) marked as
    acknowledged by ``who`` with ``note``. Hosts are required: acknowledging a whole fleet's
    faults at once is refused (LedgerError)."""
    if not hosts:
        raise LedgerError("name the host(s) whose faults you acknowledge (hosts=...)")
    names = set(str(h).split(".")[0] for h in hosts)
    faults = dict((known or {}).get("faults") or {})
    done = []
    for key, rec in sorted(faults.items()):
        if not isinstance(rec, dict) or str(rec.get("host") or "").split(".")[0] not in names:
            continue
        if kinds and rec.get("kind") not in kinds:
            continue
        rec = dict(rec, acknowledged={"by": who, "at": now, "note": str(note or "")[:MAX_MESSAGE]})
        faults[key] = rec
        done.append(rec)
    return done, {"schema": SCHEMA, "updated": now, "faults": faults}


def known_path(state_dir):
    return os.path.join(state_dir, KNOWN_FILE)


def read_known(state_dir):
    """The record in ``state_dir`` ({} when there is none yet). LedgerError when it cannot be
    read or parsed: a record that says nothing is never taken for one that says "no fault"."""
    path = known_path(state_dir)
    check_dir(state_dir)
    try:
        raw = read_bytes(path, "known-faults record", limit=64 << 20)
    except (WriteRefused, OSError) as exc:
        raise LedgerError("cannot read the known-faults record %s: %s" % (path, getattr(exc, "strerror", None) or exc),
                          kind="io")
    if raw is None:
        return {}
    try:
        rec = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise LedgerError("the known-faults record %s is not JSON (%s): move it away to start afresh" % (path, exc),
                          kind="io")
    if not isinstance(rec, dict) or not isinstance(rec.get("faults"), dict):
        raise LedgerError("the known-faults record %s holds no 'faults' mapping: move it away to start afresh"
                          % path, kind="io")
    return rec


def write_known(state_dir, record):
    """Replace the record atomically (0600 in a private state directory, created 0700)."""
    check_dir(state_dir, create=True)
    path = known_path(state_dir)
    try:
        write_atomic(path, json.dumps(record, indent=1, sort_keys=True) + "\n", mode=0o600,
                     what="known-faults record")
    except WriteRefused as exc:
        raise LedgerError(str(exc), kind="unsafe")
    except OSError as exc:
        raise io_error("known-faults record", path, exc)
    return path
