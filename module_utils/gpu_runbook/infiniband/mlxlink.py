# SPDX-License-Identifier: Apache-2.0
"""``mlxlink -d <dev> [-p <port>] [-c] [-m]`` output (NVIDIA MFT / mstflint), text or ``--json``.

Known from its source: Mellanox/mstflint v4.36.0-1 (b9d9e844a14a), mlxlink/modules/ (GPL-2.0 or
BSD; only the printed words are used here). MlxlinkCmdPrint prints each section as its title, a
line of dashes as long, then MlxlinkRecord's ``key`` padded to 37 columns and ``: value``
(printutil/mlxlink_record.cpp:329); ``--json`` puts the same pairs under
``{"result": {"output": {"<title>": {"<key>": "<value>"}}}}`` (mlxlink_cmd_print.cpp toJsonFormat).
- "Operational Info" (mlxlink_commander.cpp:2342): ``State`` is the port's PHY manager state,
  one of mlxlink_maps.cpp:69-82 (Disable, Port PLL Down, Polling, Active, Close port,
  Physical LinkUp, Sleep, Rx disable, Signal detect, Receiver detect, Sync peer, Negotiation,
  Training, SubFSM active): only ``Active`` is a link in service. ``Physical state`` is the IB
  PHY FSM (mlxlink_maps.cpp:127-134: Initializing, Recover Config, Config Test, Wait Remote
  Test, Wait Config Enhanced, Config Idle, LinkUp; N/A when disabled) or Ethernet's
  auto-negotiation FSM (ETH_AN_FSM_*, :113-125). ``Speed`` (IB-HDR, IB-NDR, 200G ...) and
  ``Width`` (4x) only while the link is up.
- "Troubleshooting Info" (:2483): ``Status Opcode`` (the firmware's monitor opcode, 0: no issue;
  1024: cable unplugged, mlxlink_enums.h:1844) and ``Recommendation``, the firmware's own text.
- "Physical Counters and BER Info" (-c, :2861-2967): ``Symbol Errors`` / ``Effective Physical
  Errors`` (errors left after FEC), ``Link Down Counter``, ``Link Error Recovery Counter``; the BER
  figures are ratios and are quoted, not judged.
- Its own errors on stderr start ``-E-`` (``-W-`` warnings, ``-I-`` notes are not failures).
mlxlink does not print the device it read: the port is named from a pasted ``mlxlink -d DEV -p N``
command line when the text has one, else ``mlxlink`` port 1 (``mlxlink(2)`` for a second run)."""

import json
import re

from ..findings import iter_lines
from .model import Host, guarded
from .ports import finish

_ANSI_RE = re.compile(r"\x1b\[[0-9;]{0,12}m|\^\[\[[0-9;]{0,12}m")
# 'State                              : Active' (key at the margin, padded, ': value')
_KV_RE = re.compile(r"^(?P<key>[A-Za-z][A-Za-z0-9 ()\[\]/.,#_+\-]{0,60}?)\s{0,40}:\s(?P<val>[^\n]{0,400}?)\s*$")
# mlxlink's section titles (setPrintTitle calls in mlxlink_commander.cpp and the HEADER_* defines of
# printutil/mlxlink_record.h): a section is known by its title, with or without the dashes under it
# (a capture split by host drops lines of dashes, which also separate hosts' blocks)
SECTIONS = ("Operational Info", "Supported Info", "Troubleshooting Info", "Tool Information",
            "Physical Counters and BER Info", "Physical Counters and BER Info (PRBS)", "Module Info",
            "Device Info", "Port Info", "Test Mode Info", "FEC Capability Info", "BER Monitor Info",
            "External PHY Info", "Histogram of FEC Errors", "Cable DDM Information", "DDM Flags",
            "DDM Thresholds", "Module Control Parameters", "Module PRBS Diagnostic Counters", "PLR Info",
            "KR Info", "PEQ info", "Rx Recovery Counters", "PCIe Operational (Enabled) Info",
            "Management PCIe Performance Counters Info", "Valid PCIe Links", "Eye Centering Control Information")
_SECTION_KEYS = dict((t.lower(), t) for t in SECTIONS)
_DASHES_RE = re.compile(r"^-{4,}\s*$")
_COMMAND_RE = re.compile(r"\bmlxlink\b(?P<args>[^\n]{0,300})")
_DEV_ARG_RE = re.compile(r"(?:^|\s)(?:-d|--device)(?:\s{1,4}|=)(?P<dev>[^\s'\"]{1,80})")
_PORT_ARG_RE = re.compile(r"(?:^|\s)(?:-p|--port)(?:\s{1,4}|=)(?P<port>\d{1,3})\b")
_TOOL_ERROR_RE = re.compile(r"^\s{0,8}-E-\s")

# mlxlink_maps.cpp:69-82, the PHY manager's states -> (ibstat's logical state, its physical state)
_PM_STATE = {
    "active": ("Active", "LinkUp"),
    "disable": ("Down", "Disabled"),
    "polling": ("Down", "Polling"),
    "sleep": ("Down", "Sleep"),
    "port pll down": ("Down", None),
    "close port": ("Down", None),
    "rx disable": ("Down", "Disabled"),
    # the physical link trained, the port is not in service: software (the SM, the driver), not the cable
    "physical linkup": ("Down", "LinkUp"),
    "signal detect": ("Down", "PortConfigurationTraining"),
    "receiver detect": ("Down", "PortConfigurationTraining"),
    "sync peer": ("Down", "PortConfigurationTraining"),
    "negotiation": ("Down", "PortConfigurationTraining"),
    "training": ("Down", "PortConfigurationTraining"),
    "subfsm active": ("Down", "PortConfigurationTraining"),
}
# mlxlink's counters -> the sysfs names the counter rules use (counters.py)
_COUNTERS = {"symbol errors": "symbol_error", "effective physical errors": "symbol_error",
             "link down counter": "link_downed", "link error recovery counter": "link_error_recovery"}
# IB speeds by lane (Gb/s), as mlxlink names the active speed ('IB-HDR')
_IB_LANE_GBPS = {"SDR": 2.5, "DDR": 5.0, "QDR": 10.0, "FDR10": 10.0, "FDR": 14.0, "EDR": 25.0, "HDR": 50.0,
                 "NDR": 100.0, "XDR": 200.0}


def parse_mlxlink(text, source="mlxlink.txt", expected_rate=None, expected_devices=None, thresholds=None):
    """``mlxlink`` output -> (facts, findings); never raises."""
    return guarded("mlxlink", _parse, text, source, expected_rate=expected_rate, thresholds=thresholds)


def _json_lines(text):
    """--json output as the text form's lines (title, dashes, 'key : value'); None when not JSON."""
    s = text.strip()
    if not s.startswith("{"):
        return None
    try:
        doc = json.loads(s)
    except ValueError:
        return None
    out = (doc.get("result") or {}).get("output") if isinstance(doc, dict) else None
    if not isinstance(out, dict):
        return None
    lines = []
    for title, group in out.items():
        if not isinstance(group, dict):
            continue
        lines += ["", str(title), "-" * max(4, len(str(title)))]
        for k, v in group.items():
            if isinstance(v, dict):
                v = ",".join(str(x) for x in v.get("values") or ())
            lines.append("%s : %s" % (k, v))
    return "\n".join(lines)


def _parse(text, source, expected_rate=None, thresholds=None):
    h = Host("mlxlink", source)
    text = _json_lines(text) or text
    dev, num, runs = "mlxlink", 1, 0
    port, section = None, None
    rows = []
    for n, raw in iter_lines(text):
        line = _ANSI_RE.sub("", raw).rstrip()
        if _TOOL_ERROR_RE.match(line):
            h.tool_errors.append((n, line))
            continue
        mc = _COMMAND_RE.search(line)
        if mc and not _KV_RE.match(line):
            # a pasted command line: the port of the output below it (one paste may hold several runs)
            md, mp = _DEV_ARG_RE.search(mc.group("args")), _PORT_ARG_RE.search(mc.group("args"))
            dev, num = (md.group("dev") if md else "mlxlink"), (int(mp.group("port")) if mp else 1)
            port, section = None, None
            continue
        title = _SECTION_KEYS.get(line.strip().lower())
        if title:
            section = title.lower()
            if section == "operational info" and port is not None and port.get("_seen_op"):
                port = None  # a second run's output with no command line above it: another port
                runs += 1
            continue
        m = _KV_RE.match(line)
        if not m or section is None or _DASHES_RE.match(line):
            continue
        if port is None:
            name = dev if not runs or dev != "mlxlink" else "mlxlink(%d)" % (runs + 1)
            port = h.port(name, num)
        if section == "operational info":
            port["_seen_op"] = True
        rows.append((port, section, m.group("key").strip().lower(), m.group("val").strip(), n, line))
    for p in h.ports.values():
        p.pop("_seen_op", None)
    symbol = set(id(r[0]) for r in rows if r[2] == "symbol errors")
    tr = {}
    for port, section, key, val, n, line in rows:
        _field(h, port, tr.setdefault(id(port), {}), section, key, val, n, line, id(port) in symbol)
    facts, findings = finish(h, text, expected_rate, None, thresholds)
    for p in h.port_list():
        _recommendation(findings, p, tr.get(id(p), {}))
    return facts, findings


def _field(h, port, tr, section, key, val, n, line, seen_symbol):
    k = (port["device"], port["port"])
    low = val.lower()
    if section.startswith("operational") and key == "state":
        state, phys = _PM_STATE.get(low, (None, None))
        port["state"] = state
        if phys and port["phys_state"] is None:
            port["phys_state"] = phys
        h.ev[k]["state"] = (n, line)
    elif section.startswith("operational") and key == "physical state":
        if low.startswith("eth_an_fsm"):
            port["link_layer"] = "Ethernet"  # Ethernet's auto-negotiation FSM (mlxlink_maps.cpp:113-125)
        elif low in ("linkup", "polling"):
            port["phys_state"] = "LinkUp" if low == "linkup" else "Polling"
    elif section.startswith("operational") and key == "speed":
        ms = re.match(r"^IB-(?P<ib>[A-Z0-9]{3,5})\b|^(?P<eth>\d{1,4})G", val)
        if ms and ms.group("ib"):
            port["link_layer"] = "InfiniBand"
            tr["lane"] = _IB_LANE_GBPS.get(ms.group("ib"))
        elif ms:
            port["link_layer"] = "Ethernet"
            port["rate_gbps"] = float(ms.group("eth"))
        h.ev[k]["rate"] = (n, line)
    elif section.startswith("operational") and key == "width":
        mw = re.match(r"^(\d{1,2})x$", val)
        if mw and tr.get("lane") and port["link_layer"] == "InfiniBand":
            port["rate_gbps"] = tr["lane"] * int(mw.group(1))
    elif section.startswith("troubleshooting") and key in ("status opcode", "recommendation"):
        tr[key] = val
    elif section.startswith("physical counters") and key in _COUNTERS:
        if key == "effective physical errors" and seen_symbol:
            return
        mv = re.match(r"^\d{1,20}$", val)
        if mv:
            name = _COUNTERS[key]
            port["counters"][name] = int(val)
            h.cev[(port["device"], port["port"], name)] = (n, line)


def _recommendation(findings, port, tr):
    """The firmware's troubleshooting text, where it reports an issue, said with the port's finding."""
    op, rec = tr.get("status opcode"), tr.get("recommendation")
    if not rec or op in (None, "0", "N/A"):
        return
    for f in findings:
        if f.get("kind") in ("ib_port_down", "ib_port_not_active", "roce_port_down", "roce_port_not_active",
                             "eth_port_down") and (f.get("ib") or {}).get("device") == port["device"] and \
                (f.get("ib") or {}).get("port") == port["port"]:
            f["message"] = "%s mlxlink's troubleshooting (status opcode %s): %s." % (
                f["message"], op, rec.rstrip("."))
