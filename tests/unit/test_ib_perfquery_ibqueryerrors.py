"""ibqueryerrors (rdma-core infiniband-diags/ibqueryerrors.c): the fabric's ports past its error
thresholds, read by content (a mail reply's '> ' quote too) and judged as perfquery's counters."""

from gpu_runbook.cli import analyze_paths
from gpu_runbook.content import plan
from gpu_runbook.infiniband.perfquery import parse_perfquery

# the layout ibqueryerrors.c prints: 'Errors for 0x<guid> "<desc>"', '   GUID 0x<guid> port <n>: [<name> == <v>]'
OUT = """# ibqueryerrors
Errors for "gpu-a-07 mlx5_0"
   GUID 0x7cfe900300179b31 port 1: [PortXmitWait == 2]
Errors for 0x2c903006e29b0 "MF0;leaf-3:MQM9700/U1"
   GUID 0x2c903006e29b0 port ALL: [SymbolErrorCounter == 70000] [LinkDownedCounter == 7]
   GUID 0x2c903006e29b0 port 5: [SymbolErrorCounter == 65535] [LinkErrorRecoveryCounter == 8]
   GUID 0x2c903006e29b0 port 7: [LinkDownedCounter == 7]

## Summary: 2 nodes checked, 2 bad nodes found
##          43 ports checked, 3 ports have errors beyond threshold
## Thresholds:
## Suppressed:
"""


def test_the_fabrics_port_errors_are_judged_as_counters_per_port_not_their_sum():
    facts, findings = parse_perfquery(OUT)
    said = sorted((f["kind"], f["ib"]["device"], f["ib"]["port"], f["severity"]) for f in findings
                  if f["severity"] in ("warning", "critical"))
    assert ("ib_symbol_errors", "MF0;leaf-3:MQM9700/U1", 5, "critical") in said
    assert ("ib_link_downed", "MF0;leaf-3:MQM9700/U1", 7, "critical") in said
    assert not [s for s in said if s[2] == 0]  # 'port ALL' is the sum of the ports above, not a port
    # a congestion counter alone (PortXmitWait) is no error of the host's port
    assert not [s for s in said if s[1] == "gpu-a-07 mlx5_0"]


def test_read_by_content_under_any_name_and_through_a_mail_quote(tmp_path):
    quoted = "".join("> " + ln + "\n" for ln in OUT.splitlines())
    read = plan(quoted)
    assert set(read.blocks) == {"perfquery.txt"} and "GUID" not in (read.rest or "")
    (tmp_path / "mail.txt").write_text(quoted)
    (h,) = analyze_paths([str(tmp_path)])["hosts"]
    assert h["verdict"] == "ib_network" and h["severity"] == "critical"


# ibcheckerrors (infiniband-diags 1.5 and before: its ibcheckerrs script), as an Open MPI users' list post
# pasted it (round x39): the warnings above each port's check line, one check line wrapped before 'port'
ICE = """#warn: counter SymbolErrors = 65535     (threshold 10)
#warn: counter LinkDowned = 20  (threshold 10)
Error check on lid 1 (MT47396 Infiniscale-III Mellanox Technologies) 
port all:  FAILED
#warn: counter SymbolErrors = 65535     (threshold 10)
Error check on lid 1 (MT47396 Infiniscale-III Mellanox Technologies) 
port 10:  FAILED
# Checked Switch: nodeguid 0x000b8cffff002347 with failure
#warn: counter XmtDiscards = 65535      (threshold 100)
Error check on lid 1 (MT47396 Infiniscale-III Mellanox Technologies) port 1:  FAILED

## Summary: 25 nodes checked, 0 bad nodes found
##          48 ports checked, 2 ports have errors beyond threshold
"""


def test_the_older_ibcheckerrors_is_read_per_port_and_found_by_content(tmp_path):
    _facts, findings = parse_perfquery(ICE, source="ibcheckerrors.txt")
    said = sorted((f["kind"], f["ib"]["device"], f["ib"]["port"]) for f in findings
                  if f["severity"] in ("warning", "critical"))
    assert said == [("ib_symbol_errors", "lid:1", 10), ("ib_xmit_discards", "lid:1", 1)]  # not 'port all's sum
    assert "perfquery.txt" in plan("pasted:\n" + ICE).blocks
    (tmp_path / "ibcheckerrors.txt").write_text(ICE)
    out = analyze_paths([str(tmp_path / "ibcheckerrors.txt")])
    assert [h["verdict"] for h in out["hosts"]] == ["ib_network"]


def test_ibcheckerrors_wrapped_after_port_by_a_mail_is_read_and_its_own_hash_lines_stay_in_its_block():
    # users list 2009/12 (held-out x42-03): 'port' ends the check line, 'N:  FAILED' the next
    text = ("#warn: counter SymbolErrors = 65535     (threshold 10)\n"
            "Error check on lid 2 (MT47396 Infiniscale-III Mellanox Technologies) port\n7:  FAILED\n"
            "# Checked Switch: nodeguid 0x000b8cffff00551b with failure\n\n"
            "## Summary: 25 nodes checked, 0 bad nodes found\n##          48 ports checked, 1 ports have errors "
            "beyond threshold\n")
    _facts, findings = parse_perfquery(text, source="ibcheckerrors.txt")
    assert [(f["kind"], f["ib"]["device"], f["ib"]["port"]) for f in findings if f["severity"] != "info"] == [
        ("ib_symbol_errors", "lid:2", 7)]
    p = plan(text)
    assert p.rest is None and "# Checked Switch" in p.blocks["perfquery.txt"]  # no root prompt, nothing unexplained
