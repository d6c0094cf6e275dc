# SPDX-License-Identifier: Apache-2.0
"""The structured blocks a text may hold, as data: ``BLOCKS`` rows of (source, the line that
opens the block, what belongs to it, a gate on the lines after the opening), the line shapes
that end a block (a shell prompt, a log line, another block's opening), and ``opening`` /
``ends_block`` for the block finder (content/__init__.py). A new format is a row here and its
own module's ``OPENING`` / ``belongs`` / ``opens``.

Pure functions of text, stdlib only; every pattern is linear in its input.
"""


import re

from .. import dcgm, pbsnodes
from ..dcgm import dmon as dcgm_dmon
from ..autopilot import OPENING as AUTOPILOT_OPENING, belongs as autopilot_belongs
from ..gpud import FABRIC_REASON_RE as GPUD_FABRIC_REASON_RE
from ..gpud_components import COMPONENTS as GPUD_COMPONENTS
from ..slurm_reasons import HEAD_RE as SINFO_REASONS_RE, ROW_RE as SINFO_ROW_RE, STATE_HEAD_RE as SINFO_STATES_RE
from ..infiniband import fi_info, ibdiagnet, lshca, pingpong, sm_unhealthy
from .. import k8s_node, nccl_topo
from ..nvsmi.table import BOX_MEMORY_RE
from ..infiniband.names import NO_DEVICES_RE
from ..infiniband.perfquery import ICE_CHECK_RE, ICE_WARN_RE, IQE_NODE_RE, IQE_PORT_RE, IQE_SUMMARY_RE, \
    ibcheckerrors_line
from ..lspci import FIELD_RE as LSPCI_FIELD_RE, HEADER_RE as LSPCI_HEADER_RE
from .. import pkglog
from ..nvsmi import dmon as nvsmi_dmon
from ..systemd_units import HEADER_RE as SYSTEMCTL_HEADER_RE, JOB_FAILED_RE as SYSTEMCTL_JOB_FAILED_RE, \
    NOT_FOUND_RE as SYSTEMCTL_NOT_FOUND_RE
from ..nvsmi.dispatch import Q_SECTIONS
from ..nvsmi import topo as nvsmi_topo
from ..nvsmi.query_csv import QUERY_COMMAND_RE, command_fields

# -- structured blocks --------------------------------------------------------------------
_H = r"[ \t]"
# a shell prompt that starts another command's output ('root@node4:~# ibstat', '[root@n4 ~]# ..', '$ dmesg')
PROMPT_RE = re.compile(r"^(?:\([^()\s]{1,64}\) )?(?:\[?[A-Za-z0-9_.\-]{1,64}@[A-Za-z0-9_.\-]{1,253}[^\n#$]{0,256}"
                       r"[#$%]|[$#>]) ?\S")
# a prompt, then output no command was typed for (two blanks after it): a background job's
# ('root@pod:/#  Port number 1 state is Down', ib_write_bw sent off with '&')
PROMPT_OUTPUT_RE = re.compile(r"^(?:\([^()\s]{1,64}\) )?\[?[A-Za-z0-9_.\-]{1,64}@[A-Za-z0-9_.\-]{1,253}[^\n#$]{0,256}"
                               r"[#$%] {2,}(\S[^\n]{0,4000})$")
# a log line: a timestamp at its start (dmesg, dmesg -T, ISO, syslog, journal, glog, slurm daemons)
LOG_LINE_RE = re.compile(r"^(?:[\w.\-]{1,64}: )?(?:\[ *\d+\.\d+\]|\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d |"
                         r"\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d|[A-Z][a-z]{2} {1,2}\d{1,2} \d\d:\d\d:\d\d|"
                         r"[EWIF]\d{4} \d\d:\d\d:\d\d)")


def _indented(line):
    return line[:1] in (" ", "\t")


def _q_text(line):
    # 'Timestamp : ..', 'Driver Version : ..', 'GPU 00000000:3B:00.0', indented 'Key : Value', blanks
    return (not line.strip() or _indented(line) or " : " in line or line.startswith("GPU ")
            or line.startswith("="))


def _table(line):
    s = line.strip()
    return not s or s[:1] in ("|", "+") or s.startswith(("Processes:", "WARNING: infoROM", "No running processes"))


def _nvlink(line):
    # 'NVML: Unable to retrieve NVLink information as all links are inactive' stands under its GPU
    return not line.strip() or _indented(line) or line.startswith(("GPU ", "NVML: "))


_IBSTAT_KEYS = ("CA type", "Number of ports", "Firmware version", "Hardware version", "Node GUID",
                "System image GUID", "Port ", "State:", "Physical state", "Rate:", "Base lid", "LMC", "SM lid",
                "Capability mask", "Port GUID", "Link layer")


def _ibstat(line):
    # ibstat's own complaints ('ibpanic: ... stat of IB device 'mlx5_8' failed', 'ibwarn: ...') are its output too
    return (not line.strip() or _indented(line) or line.startswith(("CA '", "CA \u2018", "CA \u2019"))
            or line.startswith(_IBSTAT_KEYS)
            or line.startswith(("ibpanic:", "ibwarn:", "ibstat:")))


# ibstatus's fields (infiniband-diags' ibstatus script), flush left when a manual or a paste lost the indent
_IBSTATUS_KEYS = ("default gid:", "base lid:", "sm lid:", "state:", "phys state:", "rate:", "link_layer:")


def _ibstatus(line):
    return not line.strip() or _indented(line) or line.startswith("Infiniband device ") or line.startswith(_IBSTATUS_KEYS)


def _ibv(line):
    return not line.strip() or _indented(line) or line.startswith("hca_id:")


def _ibqueryerrors(line):
    return bool(IQE_NODE_RE.match(line) or IQE_PORT_RE.match(line) or IQE_SUMMARY_RE.match(line))


def _perfquery(line):
    return not line.strip() or line.startswith("# ") or bool(_PQ_ROW_RE.match(line))


# a sysfs file's value under head's '==> PATH <==': a count, a state ('4: ACTIVE'), a rate, a link layer
_SYSFS_VALUE_RE = re.compile(r"^\s{0,8}(?:\d{1,20}(?:: [A-Za-z_]{1,24})?|\d{1,4}(?:\.\d{1,3})? Gb/sec[^\n]{0,40}|"
                             r"InfiniBand|Ethernet|0x[0-9a-fA-F]{1,16})\s*$")


def _sysfs(line):
    return (not line.strip() or line.startswith("/sys/class/infiniband") or line.startswith("==> /sys/class/infiniband")
            or bool(_SYSFS_VALUE_RE.match(line)))


def _rdma_link(line):
    return not line.strip() or _RDMA_LINK_RE.match(line) is not None


def _ibtool_message(line):
    return not line.strip() or bool(IBTOOL_MESSAGE_RE.match(line) or _IBND_ERROR_RE.match(line))


def _ibportstate(line):
    return not line.strip() or bool(_IBPORTSTATE_LINE_RE.match(line))


def _mlxlink(line):
    # mlxlink's own lines: section titles, their dashes, 'Key   : value', its -E-/-W-/-I- messages
    return not line.strip() or bool(_MLXLINK_LINE_RE.match(line))


def _json_lines(line):
    # a JSON document's lines: brackets, braces, '"key": value' (GPUd's states)
    return not line.strip() or bool(_JSON_LINE_RE.match(line))


def _lspci(line):
    # lspci -vv: device headers and their indented capability lines
    return not line.strip() or _indented(line) or bool(LSPCI_HEADER_RE.match(line) or LSPCI_FIELD_RE.match(line))


def _pkglog(line):
    # apt's history.log runs (Start-Date: over its tags) and dpkg.log's lines (pkglog.py)
    return not line.strip() or bool(pkglog.START_RE.match(line) or pkglog.TAG_RE.match(line)
                                    or pkglog.DPKG_ANY_RE.match(line) or pkglog.GCC_VERSION_RE.match(line))


def _systemctl(line):
    # a unit's indented lines (Loaded:, Active:, its journal tail) and the tree of its processes
    return not line.strip() or _indented(line)


def _ibdev2netdev(line):
    return not line.strip() or "==>" in line


def _iblinkinfo(line):
    return not line.strip() or _indented(line) or "==(" in line or line.startswith(("CA: ", "Switch: "))


def _one_line(_line):
    return False


def _sinfo_row(line):
    # sinfo -R's rows: a reason, its user and time, a hostlist (slurm_reasons.py)
    return not line.strip() or bool(_SINFO_ROW_RE.match(line))


_SINFO_ROW_RE = re.compile(r"^\S[^\n]{0,200}\s\S{1,4000}\s*$")


def _slurm_node(line):
    return not line.strip() or _indented(line) or line.startswith("NodeName=")


def _csv_rows(width):
    # a row with a few commas more is still the block's (a value with a comma, a note pasted after
    # it): the parser reports it as a row it could not read, never drops it silently
    def belongs(line):
        return bool(line.strip()) and width <= line.count(",") <= width + 4
    return belongs


# iproute2's `rdma link`: 'link mlx5_0/1 ... state ACTIVE physical_state LINK_UP' (infiniband/rdma_link.py)
_RDMA_LINK_RE = re.compile(r"^\s{0,8}(?:\d{1,4}/\d{1,3}:\s{1,4})?link\s{1,4}[\w.\-]{1,64}/\d{1,3}\s[^\n]{0,800}?"
                           r"\b(?:physical_)?state\s+[A-Z_]{2,32}")
# infiniband-diags' own complaints, whatever tool printed them (libibmad mad.h IBWARN / IBPANIC
# 'ibwarn: [pid] func: msg', 'ibpanic: [pid] func: msg: errno text'; ibdiag_common.c ibexit()
# '<prog>: iberror: [pid N] func: failed: msg' / '<prog>: iberror: failed: msg', prog as argv[0] gave
# it, a path too): read as the IB tool errors they are (infiniband/ibstat.py), which say nothing of
# a link -- on a RoCE port no
# MAD tool works at all ('mad_rpc_open_port: client_register for mgmt 1 failed')
IBTOOL_MESSAGE_RE = re.compile(r"^(?:[\w.\-]{1,64}: )?(?:ibwarn|ibpanic): \[\d{1,9}\] |^[\w./\-]{0,160}: iberror: "
                               r"(?:\[pid \d{1,9}\] [^\n]{0,200}?)?failed: ")
# libibnetdisc's IBND_ERROR ('<file>.c:<line>; msg'), printed among them
_IBND_ERROR_RE = re.compile(r"^\S{1,300}\.c:\d{1,6}; ")
# perftest (linux-rdma/perftest: ib_write_bw, ib_read_bw, ib_send_bw): 'RDMA_Write BW Test' or the
# results header, then its 'Key : value' settings, dashes, addresses, GIDs, rows and its warnings
# (or its refusal of a port that is not Active: perftest_parameters.c ctx_set_link_layer's
# " Port number %d state is %s", portStates[] = Nop, Down, Init, Armed, "", Active Defer)
_PERFTEST_OPEN_RE = re.compile(r"^\s{0,8}(?:(?:RDMA_Write|RDMA_Read|Send|Atomic)(?: Bidirectional)? BW Test\s*$|"
                               r"#bytes\s+(?:#sl\s+)?#iterations\s+BW peak\[|"
                               r"Port number \d{1,3} state is (?:Nop|Down|Init|Armed|Active Defer)\s*$)")
_PERFTEST_LINE_RE = re.compile(r"^\s{0,8}(?:-{20,}\s*$|[A-Za-z][\w .()/-]{0,40}?\s*:\s|(?:local|remote) address|GID:|"
                               r"#bytes|\d{1,12}\s+\d{1,15}\s|Conflicting CPU frequency|Couldn't|Unable to|Failed to|"
                               r"\*{5,}|WARNING|Requested mtu|Port number \d)")


def _perftest(line):
    return not line.strip() or bool(_PERFTEST_LINE_RE.match(line))


# ibportstate: its PortInfo headers, '# Port info: ...', libibmad's dotted fields, its ibwarn lines
_IBPORTSTATE_OPEN_RE = re.compile(r"^(?:Initial )?(?:Switch |CA/RT )?PortInfo:\s*$|^# Port info:[^\n]{0,200} port \d{1,3}\s*$")
_IBPORTSTATE_LINE_RE = re.compile(r"^(?:(?:Initial |Peer |After )?(?:Switch |CA/RT )?PortInfo(?: set)?:|# (?:MLNX ext )?Port "
                                  r"info:|[A-Za-z][A-Za-z0-9]{1,40}:\.{2,80}|ibwarn:|ibportstate)")
# mlxlink (MFT / mstflint): a section's title over its dashes (infiniband/mlxlink.py)
_MLXLINK_OPEN_RE = re.compile(r"^(?:Operational Info|Troubleshooting Info|Physical Counters and BER Info)" + _H + r"*$")
_MLXLINK_LINE_RE = re.compile(r"^(?:-{4,}\s*$|-[EWI]- |[A-Z][A-Za-z0-9 ()/&.\-]{2,60}$|[A-Za-z][A-Za-z0-9 ()\[\]/.,#_+\-]{0,60}?"
                              r"\s{0,40}: )")
# GPUd's health states: a "component" key naming one of gpud's checks (gpud_components.py)
_GPUD_OPEN_RE = re.compile(r'^\s{0,12}(?:\[\s{0,4})?(?:\{\s{0,4})?"component"\s{0,4}:\s{0,4}"(?:' +
                           "|".join(re.escape(c[0]) for c in GPUD_COMPONENTS) + r')"')
# ... and its fabric-manager component's reason on a line of its own: the line gpud.py reads
_GPUD_FABRIC_RE = re.compile(r"^[^\n]{0,200}?" + GPUD_FABRIC_REASON_RE.pattern)
_JSON_LINE_RE = re.compile(r'^\s{0,40}(?:[\[\]{}]|"[^"\n]{1,200}"\s{0,4}:)')
_PQ_ROW_RE = re.compile(r"^[A-Za-z][A-Za-z0-9]{1,60}:\.{0,80}-?\d")
_CSV_HEADER_RE = re.compile(r"^(?:index|name|pci\.bus_id|uuid|serial|pid|gpu_bus_id|gpu_uuid|timestamp|"
                            r"driver_version|gpu_name|retired_pages\.(?:address|cause))\b[^\n]{0,4000},")
# what nvidia-smi prints instead of its report (nvsmi/failures.py reads them): one line is a block
_SMI_FAILURE_RE = re.compile(r"NVIDIA-SMI has failed because|Failed to initialize NVML|Unable to determine the "
                             r"device handle for|No devices were found|infoROM is corrupted at gpu|"
                             r"couldn'?t find libnvidia-ml\.so|GPU access blocked by the operating system|"
                             r"^NVML library version:|^Error: nvmlDeviceGetHandleBy\w{0,20}\(\): ")

_SMI_QUOTED_RE = re.compile(r"^[^\n]{1,600}?(?:Unable to determine the device handle for (?:GPU|gpu) ?[0-9A-Fa-f]{4,8}:|"
                            r"NVIDIA-SMI has failed because it couldn'?t communicate with the NVIDIA driver|"
                            r"Failed to initialize NVML: [A-Z])")

_SMI_TABLE_HEAD_RE = re.compile(r"NVIDIA-SMI \d|\bGPU +Name\b|\| *MIG devices:|\bGPU +Fan +Temp|MiB */ *\d+ *MiB|"
                                r"^\|" + _H + r"+\d{1,3}" + _H + r"+\S")
_LINK_RE = re.compile(r"^" + _H + r"*Link" + _H + r"+\d{1,3}" + _H + r"*:")
# -- gates: an opening line that needs what follows it (BLOCKS' fourth field) -------------------
def _table_opens(line, after):
    # a box of dashes opens nvidia-smi's table only over its header or a GPU row (dcgmi and others
    # draw boxes too); a GPU's row pasted alone only over its second row's memory cell
    if line.lstrip()[:1] == "+":
        return any(_SMI_TABLE_HEAD_RE.search(a) for a in after[:3])
    if line.lstrip()[:1] == "|" and "NVIDIA-SMI" not in line:
        return bool(after and BOX_MEMORY_RE.match(after[0].strip()))
    return True


def _nvlink_opens(line, after):
    # 'GPU 0: name' opens nvlink's output only with its UUID or over a link's line
    return "(UUID:" in line or "(S/N:" in line or bool(after and _LINK_RE.match(after[0]))


def _xml_opens(line, after):
    return line.lstrip().startswith(("<!DOCTYPE", "<nvidia_smi_log")) or any("nvidia_smi_log" in a for a in after[:3])


def _q_opens(line, after):
    # a section's title pasted without its indent: only over its own indented lines
    return line[:1] in (" ", "\t", "=", "A", "G") or bool(after and after[0][:1] in (" ", "\t") and after[0].strip())


def _under_dashes(_line, after):
    return bool(after and after[0].startswith("----"))


def _systemctl_opens(_line, after):
    return any("Loaded:" in a for a in after[:2])


def _lspci_opens(_line, after):
    # -v's indented lines under the header (plain lspci's one line a device says no link)
    return bool(after and (after[0][:1] == "\t" or after[0].startswith("        ") or LSPCI_FIELD_RE.match(after[0])))


def _ibstat_port_opens(_line, after):
    return any(a.lstrip().startswith(("State:", "Physical state:")) for a in after[:3])


# (source, opening line pattern, belongs(line) -> bool, gate(line, after) -> bool or None); the
# first opening that matches and passes its gate wins
BLOCKS = (
    ("nvidia-smi-q.xml", re.compile(r"^\s{0,8}(?:<\?xml\b|<!DOCTYPE nvidia_smi_log|<nvidia_smi_log\b)"), None, _xml_opens),
    ("nvidia-smi-q.txt", re.compile(r"^=+NVSMI LOG=+|^Attached GPUs" + _H + r"*:|^GPU" + _H +
                                    r"+[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d" + _H + r"*$|^" + _H +
                                    r"*(?:" + Q_SECTIONS + r")" + _H + r"*$"), _q_text, _q_opens),
    ("nvidia-smi.txt", re.compile(r"^" + _H + r"*\+-{5,}[-+]*" + _H + r"*$|^\|" + _H + r"+NVIDIA-SMI \d"), _table, _table_opens),
    # a GPU's box pasted without the table's header and borders: its first row ('|   5  NVIDIA H100 80GB HBM3
    # On  |   00000000:97:00.0 N/A |  N/A |'), opening only over its second row's memory cell (opening)
    ("nvidia-smi.txt", re.compile(r"^\|" + _H + r"{1,6}\d{1,3}" + _H + r"+\S[^\n|]{0,80}\|" + _H +
                                  r"*[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]"), _table, _table_opens),
    ("nvidia-smi.txt", re.compile(r"^GPU" + _H + r"+\d{1,3}:" + _H + r"[^\n]{1,200}$"), _nvlink, _nvlink_opens),
    ("nvidia-smi.txt", _SMI_FAILURE_RE, _one_line, None),
    # the same words quoted inside a sentence ('... and nvidia-smi outputs: Unable to determine the
    # device handle for GPU 0000:0B:00.0: Unknown Error.'): nvidia-smi's, wherever they stand
    ("nvidia-smi.txt", _SMI_QUOTED_RE, _one_line, None),
    ("nvidia-smi-query-gpu.csv", _CSV_HEADER_RE, None, None),
    # the pasted command line of a --query-gpu output (with or without its header): its fields
    ("nvidia-smi-query-gpu.csv", re.compile(r"^[^\n]{0,300}?" + QUERY_COMMAND_RE.pattern), None, None),
    # (grep -H's 'PATH:VALUE', or head/tail's '==> PATH <==' over each file's value)
    ("ib-sysfs.txt", re.compile(r"^(?:==> )?/sys/class/infiniband/[^/\s]{1,64}/ports/\d{1,3}/(?:state|phys_state|rate|"
                                r"link_layer|counters/\w{1,64}|hw_counters/\w{1,64})(?::| <==\s*$)"), _sysfs, None),
    ("ibstat.txt", re.compile(r"^CA ['\u2018\u2019`][^'\u2018\u2019`\n]{1,64}['\u2018\u2019`]"), _ibstat, None),
    # an ibstat excerpt cut above its port block ('Port 1:' over its indented 'State:' lines)
    ("ibstat.txt", re.compile(r"^Port" + _H + r"{1,4}\d{1,3}:" + _H + r"*$"), _ibstat, _ibstat_port_opens),
    ("ibstat.txt", re.compile(r"^Infiniband device ['\u2018\u2019`][^'\u2018\u2019`\n]{1,64}['\u2018\u2019`] port \d{1,3} "
                              r"status:"), _ibstatus, None),
    ("ibv_devinfo.txt", re.compile(r"^hca_id:" + _H + r"*\S"), _ibv, None),
    # ibv_devinfo (rdma-core libibverbs/examples/devinfo.c) when the verbs stack lists no device: its one line
    ("ibv_devinfo.txt", NO_DEVICES_RE, _one_line, None),
    ("perfquery.txt", re.compile(r"^# (?:Port (?:extended )?counters|PortXmitData|Port counters):"), _perfquery, None),
    # ibqueryerrors: 'Errors for ... "<node>"' over its ports' counter lines (infiniband/perfquery.py)
    ("perfquery.txt", IQE_NODE_RE, _ibqueryerrors, None),
    # the older ibcheckerrors (infiniband-diags 1.5): '#warn: counter ...' over 'Error check on lid ...'
    ("perfquery.txt", ICE_WARN_RE, ibcheckerrors_line, None),
    ("perfquery.txt", ICE_CHECK_RE, ibcheckerrors_line, None),
    ("ibdev2netdev.txt", re.compile(r"^\s{0,8}(?:[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]\s+)?[\w.\-]{1,64}\s"
                                    r"[^\n]{0,500}?\bport\s+\d{1,3}(?:\s+\([A-Z_]{1,16}\))?\s+==>\s+\S{1,64}\s+\("
                                    r"(?:Up|Down)\)"), _ibdev2netdev, None),
    # lshca: an HCA's 'Dev #N' header, or a table header naming RDMA and its port columns, then its own lines
    ("lshca.txt", lshca.OPENING, lshca.belongs, None),
    ("slurm-node.txt", re.compile(r"^NodeName=\S{1,253}[ \t]"), _slurm_node, None),
    ("slurm-node.txt", SINFO_REASONS_RE, _sinfo_row, None),
    ("slurm-node.txt", SINFO_ROW_RE, _sinfo_row, None),  # its rows without the header (a grep of them)
    ("slurm-node.txt", SINFO_STATES_RE, _sinfo_row, None),  # sinfo's node states (slurm_reasons.state_records)
    # PBS's pbsnodes: a row of -l (a node down or offline), or a node's name over its attributes
    ("pbsnodes.txt", pbsnodes.OPENING, pbsnodes.belongs, pbsnodes.opens),
    ("rdma-link.txt", _RDMA_LINK_RE, _rdma_link, None),
    ("ibportstate.txt", _IBPORTSTATE_OPEN_RE, _ibportstate, None),
    ("mlxlink.txt", _MLXLINK_OPEN_RE, _mlxlink, _under_dashes),
    ("ibstat.txt", IBTOOL_MESSAGE_RE, _ibtool_message, None),
    ("iblinkinfo.txt", re.compile(r"^(?:CA|Switch): [^\n]{1,200}:$|^[^\n]{0,200}\[[^\]\n]{0,8}\] ==\("), _iblinkinfo, None),
    # perftest's report (ib_write_bw ...): its title line or its results header, then its own lines
    ("perftest.txt", _PERFTEST_OPEN_RE, _perftest, None),
    # ibdiagnet's fabric scan: its version head or its Summary's header (infiniband/ibdiagnet.py)
    ("ibdiagnet.txt", ibdiagnet.OPENING, ibdiagnet.belongs, None),
    # libfabric's fi_info: a provider's entry, a verbose one, -l's list or fi_getinfo's refusal (infiniband/fi_info.py)
    ("fi_info.txt", fi_info.OPENING, fi_info.belongs, fi_info.opens),
    # nvidia-smi topo -m: its header row of GPUs over its rows and legends (nvsmi/topo.py)
    ("nvidia-smi-topo.txt", nvsmi_topo.OPENING, nvsmi_topo.belongs, None),
    # the subnet manager's unhealthy-ports report: its header, or a row of it (infiniband/sm_unhealthy.py)
    ("sm-unhealthy-ports.txt", sm_unhealthy.OPENING, sm_unhealthy.belongs, None),
    # NCCL's topology dump (NCCL_TOPO_DUMP_FILE): its <system version=..> over its element lines (nccl_topo.py)
    ("nccl-topo.xml", nccl_topo.OPENING, nccl_topo.belongs, None),
    # kubectl describe node: its Capacity / Allocatable blocks, its Conditions' rows (k8s_node.py)
    ("k8s-node.txt", k8s_node.OPENING, k8s_node.belongs, None),
    # dcgmi dmon: its '#Entity' header of DCGM field tags over its rows (dcgm/dmon.py)
    ("dcgmi-dmon.txt", dcgm_dmon.OPENING, dcgm_dmon.belongs, None),
    ("gpud.txt", _GPUD_OPEN_RE, _json_lines, None),
    ("gpud.txt", _GPUD_FABRIC_RE, _one_line, None),
    # IBM Autopilot's report, its daemon's health-check log, its node labels (autopilot.py)
    ("autopilot.txt", AUTOPILOT_OPENING, autopilot_belongs, None),
    # lspci -vv: a device's header over its indented capabilities
    ("lspci.txt", LSPCI_HEADER_RE, _lspci, _lspci_opens),
    # systemctl status: a unit's first line over its indented Loaded:/Active: lines, or 'could not be found'
    ("systemctl.txt", SYSTEMCTL_HEADER_RE, _systemctl, _systemctl_opens),
    ("systemctl.txt", SYSTEMCTL_NOT_FOUND_RE, _one_line, None),
    ("systemctl.txt", SYSTEMCTL_JOB_FAILED_RE, _one_line, None),
    # nvidia-smi dmon: its '# gpu' header over its '# Idx' unit line and rows (nvsmi/dmon.py); the unit
    # line is an opening of its own too, so that its '# ' is not read as a root prompt that ends the block
    ("nvidia-smi-dmon.txt", re.compile(nvsmi_dmon.OPENING.pattern + "|" + nvsmi_dmon.UNITS_RE.pattern),
     nvsmi_dmon.belongs, None),
    # a pingpong between two hosts (rdma-core's ibv_*_pingpong, libfabric's fi_pingpong): its addresses, results, table
    ("pingpong.txt", pingpong.OPENING, pingpong.belongs, None),
    # the package manager's logs: an apt run's Start-Date, a dpkg.log line
    ("apt-history.log", pkglog.START_RE, _pkglog, None),
    ("apt-history.log", pkglog.DPKG_ANY_RE, _pkglog, None),
    # /proc/driver/nvidia/version: the loaded module's release beside the packages' (pkglog.py)
    ("apt-history.log", pkglog.NVRM_VERSION_RE, _pkglog, None),
    # dcgmi diag / health (its boxes, its JSON): after nvidia-smi's table, whose box needs its own header
    ("dcgmi.txt", dcgm.OPENING, dcgm.belongs, dcgm.opens),
)
# sources whose opening line may be the whole block (nvidia-smi's one-line messages, an ibstat
# of one CA line): not a box's first line alone (the table's opening needs what follows anyway)
ONE_LINE_OK = ("nvidia-smi.txt", "nvidia-smi-q.txt", "ibstat.txt", "ibv_devinfo.txt", "ib-sysfs.txt", "perfquery.txt",
                "ibdev2netdev.txt", "rdma-link.txt", "slurm-node.txt", "dcgmi.txt", "gpud.txt",
                "systemctl.txt", "autopilot.txt", "pbsnodes.txt", "fi_info.txt", "dcgmi-dmon.txt",
                "sm-unhealthy-ports.txt", "k8s-node.txt", "apt-history.log", "pingpong.txt")


def opening(line, after=()):
    """(source, belongs) of the block ``line`` opens, or None. ``after``: the lines that follow
    it; a row's gate may refuse an opening that needs what follows (``BLOCKS``)."""
    for source, opening_re, belongs, gate in BLOCKS:
        if not opening_re.match(line) or (gate is not None and not gate(line, after)):
            continue
        if belongs is None and source == "nvidia-smi-query-gpu.csv":
            fields = command_fields(line) if "--query-" in line else None
            belongs = _csv_rows(len(fields) - 1 if fields else line.count(","))
        return source, belongs
    return None


def ends_block(line, after, source):
    """A line that cannot belong to the block of ``source`` whatever it looks like: a shell
    prompt, a log line, another kind of block's opening."""
    if source == "perfquery.txt" and line.startswith(("# Checked ", "## ")):
        return False  # ibcheckerrors' own '# Checked Switch: ...' and '## Summary: ...', not a root prompt
    other = opening(line, after)
    if other is not None and other[0] == source:
        return False  # the block's own next part ('# Port info: ...' is ibportstate's, not a root prompt)
    return other is not None or bool(PROMPT_RE.match(line) or LOG_LINE_RE.match(line))


