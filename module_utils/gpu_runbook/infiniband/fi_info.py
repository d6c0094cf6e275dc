# SPDX-License-Identifier: Apache-2.0
"""libfabric's ``fi_info`` -> the providers (fabric software stack) this node offers.

Its output, as ofiwg/libfabric util/info.c prints it:

- default (print_short_info): per provider and endpoint, ``provider: NAME`` then indented
  ``fabric:``, ``domain:``, ``version: M.m``, ``type: FI_EP_RDM|FI_EP_DGRAM|FI_EP_MSG..`` and
  ``protocol: FI_PROTO_..``; with ``-l`` (print_providers) ``NAME:`` over ``    version: M.m``;
- ``-v`` (print_long_info): ``---`` then ``fi_info:`` and src/fi_tostr.c's nested attributes
  (``caps: [ .. ]``, ``fi_ep_attr:`` ``type:``, ``fi_domain_attr:`` ``name:``,
  ``fi_fabric_attr:`` ``name:`` / ``prov_name:`` / ``prov_version:``);
- failure (run()): ``fi_getinfo: -61`` on stderr (newer builds add `` (No data available)``):
  no provider matched the hints (``-p NAME``: that provider is not on this node).

A provider's name may be layered, core first (``tcp;ofi_rxm``, ``efa;ofi_rxd``). What it tells:
an RDMA-capable core provider (efa, verbs, cxi, psm3, opx ..) offering a reliable endpoint
(FI_EP_RDM; FI_EP_MSG for verbs) is a healthy reading of the node's fabric software; only
tcp / udp / sockets / shm means NCCL's OFI plugin would fall back to sockets (a warning of the
NCCL configuration, rung none); no provider at all is a warning naming the one asked for.
Text that opens like fi_info but holds no readable entry is unparseable, never healthy."""

import re

from ..findings import finding, iter_lines
from .model import guarded, unparseable

FORMAT = "fi_info"
_PROVIDER_RE = re.compile(r"^provider:[ \t]+([\w.;\-]{1,64})[ \t]*$")
_LIST_NAME_RE = re.compile(r"^([A-Za-z][\w.;\-]{0,63}):[ \t]*$")
_LONG_RE = re.compile(r"^fi_info:[ \t]*$")
_FAILURE_RE = re.compile(r"^fi_getinfo:[ \t]*(-?\d{1,5})(?:[ \t]*\(([^)\n]{1,80})\))?[ \t]*$")
_FIELD_RE = re.compile(r"^([ \t]+)([a-z_]{1,32}):[ \t]*([^\n]{0,200}?)[ \t]*$")
_VERSION_LINE_RE = re.compile(r"^[ \t]+version:[ \t]*\d{1,4}\.\d{1,4}[ \t]*$")
# where its output opens: a provider's line, a verbose entry, or its failure; -l's bare
# 'NAME:' only over its version line (opens)
OPENING = re.compile(_PROVIDER_RE.pattern + "|" + _LONG_RE.pattern + "|" + _FAILURE_RE.pattern + "|" +
                     _LIST_NAME_RE.pattern)
# the command line pasted above it: the provider asked for ('fi_info -p efa')
_ASKED_RE = re.compile(r"\bfi_info\b[^\n]{0,200}?(?:-p|--provider)[ =]+([\w.;\-]{1,64})")
# core providers that move data by RDMA (libfabric's prov/): NCCL's OFI plugin wants one of them
RDMA_PROVIDERS = ("efa", "verbs", "cxi", "psm3", "psm2", "opx", "gni", "usnic", "ucx", "lpp", "mlx")
# providers over the kernel's sockets or shared memory: no RDMA
SOCKET_PROVIDERS = ("tcp", "udp", "sockets", "shm", "sm2", "net")
# utility providers (-l lists them alone: ofi_rxm, ofi_rxd, ofi_hook_noop, off_coll): they move no data themselves
_UTILITY_PREFIXES = ("ofi_", "off_", "hook")
_RELIABLE = ("FI_EP_RDM", "FI_EP_MSG")
ENODATA = 61


def opens(line, after=()):
    """Whether ``line`` opens fi_info's output (content/): a provider's line over its indented
    fields, a verbose entry, the failure line, or -l's ``NAME:`` over its version line."""
    if _FAILURE_RE.match(line):
        return True
    nxt = after[0] if after else ""
    if _PROVIDER_RE.match(line) or _LONG_RE.match(line):
        return nxt[:1] in (" ", "\t")
    return bool(_LIST_NAME_RE.match(line) and _VERSION_LINE_RE.match(nxt))


def belongs(line):
    """fi_info's lines: indented fields, its entries' openings, the verbose '---' between them."""
    return (not line.strip() or line[:1] in (" ", "\t") or line.rstrip() == "---"
            or bool(_PROVIDER_RE.match(line) or _LONG_RE.match(line) or _LIST_NAME_RE.match(line)
                    or _FAILURE_RE.match(line)))


def parse_fi_info(text, source="fi_info.txt"):
    """fi_info's output -> (facts, findings); never raises (model.guarded, as every IB parser)."""
    return guarded(FORMAT, _parse, text, source)


def _core(name):
    return (name or "").split(";")[0].strip().lower()


def _read(text):
    """-> (entries, failure (lineno, code, line) or None, asked provider, opened)."""
    entries, failure, asked, opened = [], None, None, False
    cur, section = None, None
    for lineno, raw in iter_lines(text):
        line = raw.rstrip()
        if not line.strip():
            continue
        m = _ASKED_RE.search(line)
        if m and not line[:1].isspace():
            asked = m.group(1)
        m = _FAILURE_RE.match(line)
        if m:
            failure = (lineno, int(m.group(1)), line.strip())
            opened, cur = True, None
            continue
        m = _PROVIDER_RE.match(line)
        if m:
            cur, section, opened = {"provider": m.group(1), "line": lineno}, None, True
            entries.append(cur)
            continue
        if _LONG_RE.match(line):
            cur, section, opened = {"provider": None, "line": lineno, "verbose": True}, None, True
            entries.append(cur)
            continue
        m = _LIST_NAME_RE.match(line)
        if m and not (cur and cur.get("verbose")):
            cur, section, opened = {"provider": m.group(1), "line": lineno, "listed": True}, None, True
            entries.append(cur)
            continue
        m = _FIELD_RE.match(line)
        if not m or cur is None:
            continue
        indent, key, value = len(m.group(1).expandtabs(4)), m.group(2), m.group(3)
        if cur.get("verbose"):
            # fi_tostr.c: 'fi_xxx_attr:' at one indent, its fields one deeper
            if indent <= 4:
                section = key if not value else None
                continue
            if section == "fi_fabric_attr" and key in ("name", "prov_name"):
                cur["fabric" if key == "name" else "provider"] = value
            elif section == "fi_fabric_attr" and key == "prov_version":
                cur["version"] = value
            elif section == "fi_domain_attr" and key == "name":
                cur["domain"] = value
            elif section == "fi_ep_attr" and key in ("type", "protocol"):
                cur[key] = value
        elif key in ("fabric", "domain", "version", "type", "protocol"):
            cur[key] = value
    return entries, failure, asked, opened


def _parse(text, source):
    entries, failure, asked, opened = _read(text)
    if not opened:
        return {}, []
    read = [e for e in entries if e.get("provider") and (e.get("type") or e.get("listed") and e.get("version"))]
    cut = [e for e in entries if e not in read]
    providers = [{"provider": e["provider"], "core": _core(e["provider"]), "fabric": e.get("fabric"),
                  "domain": e.get("domain"), "version": e.get("version"), "type": e.get("type"),
                  "protocol": e.get("protocol")} for e in read]
    # a reliable endpoint of an RDMA core provider (-l prints no endpoint type: a listed one counts)
    rdma = [p for p in providers if p["core"] in RDMA_PROVIDERS and (p["type"] in _RELIABLE or p["type"] is None)]
    facts = {"format": FORMAT, "ports": [], "devices": [], "providers": providers, "asked": asked,
             "failure": failure[1] if failure else None, "rdma": bool(rdma)}
    if not providers and not failure:
        why = "%s opens like fi_info's output but holds no readable provider entry%s" % (
            source, " (cut before its endpoint type: %s)" % ", ".join(e.get("provider") or "?" for e in cut[:4])
            if cut else "")
        return unparseable(FORMAT, source, text, why)
    findings = []
    if failure and not rdma:
        lineno, code, line = failure
        what = ("provider %s is not available on this node (its driver or libfabric's build of it: the EFA "
                "driver and installer for efa, rdma-core for verbs)" % asked) if asked else \
            "no libfabric provider matched"
        findings.append(finding(
            "fi_info_no_provider",
            "fi_info: fi_getinfo returned %d%s: %s" % (
                code, " (FI_ENODATA, no data available)" if code == -ENODATA else "", what),
            evidence=line, source="%s:%d" % (source, lineno),
            category="nccl_config" if code == -ENODATA else "unknown"))
    if providers and not rdma:
        seen = sorted(set(p["provider"] for p in providers))
        only_sockets = all(p["core"] in SOCKET_PROVIDERS or p["core"].startswith(_UTILITY_PREFIXES) for p in providers)
        first = read[0]
        findings.append(finding(
            "fi_info_no_rdma_provider",
            "fi_info lists %s: %s" % (
                ", ".join(seen[:8]),
                "no RDMA provider (only sockets or shared memory): NCCL's OFI plugin would fall back to sockets"
                if only_sockets else "no RDMA provider with a reliable endpoint (FI_EP_RDM): NCCL's OFI plugin "
                "cannot use it"),
            evidence="provider: %s" % first["provider"], source="%s:%d" % (source, first["line"])))
    return facts, findings
