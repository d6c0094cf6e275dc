# SPDX-License-Identifier: Apache-2.0
"""The one registry of evidence sources: their canonical names, the family each belongs to,
and how a probe's output is told from its content (``detect_source``: a live probe checks
that nvidia-smi answered with its report). A capture's files are read by their content
(content/), never by their names. Probes, capture loading and the dispatcher all read it;
it imports nothing of the engine."""

import re

NVSMI_SOURCES = ("nvidia-smi-q.xml", "nvidia-smi-q.txt", "nvidia-smi.txt", "nvidia-smi-query-gpu.csv")
COMPUTE_APPS = "nvidia-smi-compute-apps.csv"
KERNEL_LOG = "kern.log"
IB_LINK_SOURCES = ("ib-sysfs.txt", "ibstat.txt", "ibv_devinfo.txt", "rdma-link.txt", "ibportstate.txt",
                   "mlxlink.txt", "lshca.txt", "ibdev2netdev.txt")
# first present wins (sysfs is authoritative; rdma link has states, no rate; ibdev2netdev says the
# least: a port's interface Up or Down)
IB_COUNTER_SOURCES = ("perfquery.txt", "iblinkinfo.txt")
IB_SOURCES = IB_LINK_SOURCES + IB_COUNTER_SOURCES
BUG_REPORT = "bug-report.txt"
SLURM_NODE = "slurm-node.txt"  # `scontrol show node`: what Slurm says of a node (its state, its reason)
PBSNODES = "pbsnodes.txt"  # PBS's `pbsnodes -l` / `pbsnodes -a`: what PBS says of a node (its state, its comment)
DCGMI = "dcgmi.txt"  # `dcgmi diag` / `dcgmi health` (text or -j): DCGM's own test of the GPUs
IBDIAGNET = "ibdiagnet.txt"  # ibdiagnet's fabric scan (its console output, ibdiagnet2.log): each stage's errors
FI_INFO = "fi_info.txt"  # libfabric's fi_info: the providers (EFA, verbs, tcp ...) NCCL's OFI plugin can load
SM_UNHEALTHY = "sm-unhealthy-ports.txt"  # the subnet manager's unhealthy-ports report (NVIDIA OpenSM / UFM)
K8S_NODE = "k8s-node.txt"  # kubectl describe node: the GPUs Kubernetes can allocate, the node's conditions
NVSMI_TOPO = "nvidia-smi-topo.txt"  # nvidia-smi topo -m: the GPUs' NVLink and PCIe links, GPU to NIC
NCCL_TOPO = "nccl-topo.xml"  # NCCL's topology dump (NCCL_TOPO_DUMP_FILE): the GPUs and NICs NCCL found
DCGMI_DMON = "dcgmi-dmon.txt"  # dcgmi dmon -e: DCGM's field values per GPU (the last Xid, ECC, row remaps ...)
PERFTEST = "perftest.txt"  # ib_write_bw / ib_read_bw / ib_send_bw's report: a link measured under load
GPUD = "gpud.txt"  # GPUd's health states (gpud status, its /v1/states API): a node agent's checks
AUTOPILOT = "autopilot.txt"  # IBM Autopilot's health checks: its report, its daemon's log, its node labels
LSPCI = "lspci.txt"  # lspci -vv: the PCIe link of each GPU and HCA (LnkSta against LnkCap)
SYSTEMCTL = "systemctl.txt"  # systemctl status: Fabric Manager, IMEX, persistenced, openibd, opensm, DCGM
NVSMI_DMON = "nvidia-smi-dmon.txt"  # nvidia-smi dmon: per-GPU samples (power, temperature, ECC, utilization)
PINGPONG = "pingpong.txt"  # ibv_rc_pingpong & co (rdma-core), fi_pingpong (libfabric): a link tested between two hosts
PKGLOG = "apt-history.log"  # apt's history.log / dpkg.log: when the NVIDIA driver's packages changed
JOB_LOG = "nccl.log"
# not a source: the key under which a loader or probe hands over findings about the evidence
# itself (a read cut at the cap, a truncated capture); analyze adds them to the host's findings
NOTES = "_notes"
# not a source: {source name: the file it was read from, as the user named it} (capture.py); the
# parsers cite that name, not the source's
NAMES = "_names"
HOST_SOURCES = NVSMI_SOURCES + (COMPUTE_APPS, KERNEL_LOG) + IB_SOURCES + (BUG_REPORT, SLURM_NODE, PBSNODES, DCGMI, PERFTEST,
                                                                       IBDIAGNET, FI_INFO, NVSMI_TOPO, GPUD, AUTOPILOT, LSPCI,
                                                                       SYSTEMCTL, DCGMI_DMON, SM_UNHEALTHY, K8S_NODE,
                                                                       NCCL_TOPO, PKGLOG, PINGPONG, NVSMI_DMON)

# source -> family: what a failed probe of it means (probe_findings.py)
FAMILY = dict([(n, "gpu") for n in NVSMI_SOURCES] + [(COMPUTE_APPS, "gpu_apps"), (KERNEL_LOG, "kernel")]
              + [(n, "ib") for n in IB_SOURCES] + [(BUG_REPORT, "bug_report"), (JOB_LOG, "job"),
                                                   (SLURM_NODE, "slurm"), (PBSNODES, "slurm"), (DCGMI, "gpu"), (PERFTEST, "ib"), (IBDIAGNET, "ib"),
                                                   (FI_INFO, "ib"), (SM_UNHEALTHY, "ib"), (NVSMI_TOPO, "gpu"), (NCCL_TOPO, "gpu"),
                                                   (DCGMI_DMON, "gpu"), (K8S_NODE, "gpu"),
                                                   (GPUD, "gpu"), (AUTOPILOT, "gpu"), (LSPCI, "gpu"),
                                                   (SYSTEMCTL, "gpu"), (PKGLOG, "packages"), (PINGPONG, "ib"), (NVSMI_DMON, "gpu")])

# (source, pattern searched in the first 64 KiB), most specific first
DETECTORS = (
    (BUG_REPORT, re.compile(r"nvidia-bug-report\.sh|^_{20,}\s*$", re.M)),
    ("nvidia-smi-q.xml", re.compile(r"<nvidia_smi_log\b")),
    ("nvidia-smi-q.txt", re.compile(r"(?<!=)=+NVSMI LOG=+|^Attached GPUs\s*:", re.M)),
    ("nvidia-smi.txt", re.compile(r"NVIDIA-SMI \d|^\|\s*GPU\s+Name|^GPU \d+: [^\n]{1,120}\n\s*Link \d+: ", re.M)),
    ("ib-sysfs.txt", re.compile(r"/ports/\d+/(?:state|counters/\w+):", re.M)),
    ("ibstat.txt", re.compile(r"^CA '[^']+'", re.M)),
    ("ibv_devinfo.txt", re.compile(r"^hca_id:\s*\S+", re.M)),
    ("perfquery.txt", re.compile(r"^# Port (?:extended )?counters:", re.M)),
    (JOB_LOG, re.compile(r"NCCL (?:INFO|WARN)|ProcessGroupNCCL|Watchdog caught collective|"
                         r"(?<!\d)\d+%\|[^\n%]*?it/s\]")),
    (KERNEL_LOG, re.compile(r"NVRM:|mlx5_core|kernel:|^\[\s*\d+\.\d+\]|^\[\w{3} \w{3} [ \d]\d ", re.M)),
)


def detect_source(text):
    """Which source a probe's output is, from its content; None when nothing fits."""
    head = text[:65536]
    for name, pattern in DETECTORS:
        if pattern.search(head):
            return name
    return None
