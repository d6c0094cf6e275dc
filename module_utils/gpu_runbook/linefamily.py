# SPDX-License-Identifier: Apache-2.0
"""Which family a log line belongs to, by its shape: the kernel's, another program's of the
node (through syslog / journald, or a daemon's own log file), or neither (a job's output, a
tool's). The two line readers share it: the kernel-log reader takes the node's lines, the
job-log reader leaves them. Pure, stdlib, every pattern linear in its input."""

import re

_MONTH = r"(?:[^\W\d_]{3,5}\.?|\d{1,2}[月월])"  # 'Dec', 'déc.', 'Okt', 'sep', '9月', '12월'
# 'grep -H' of syslog files prefixes the file's name: '/var/log/messages:Jun 17 20:18:08 node kernel: ...'
GREP_FILE = r"(?:[\w./\-]{0,200}(?:messages|syslog|kern|\.log)[\w.\-]{0,16}:)?"
# a syslog / journal line up to its hostname field (group 1) and its tag: kernlog/hostscan
# searches whole chunks for it, kernlog/hosts' demultiplexer matches it per line
_TIME_HOST_TAG = (
    r"(?:" + _MONTH + r" {1,2}\d{1,2} \d\d:\d\d:\d\d(?:\.\d{1,9})?"
    r"|\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?)"
    r" {1,4}([A-Za-z0-9][^\s:\[\]<>]{0,252}) [^\s:\[\]]{1,128}(?:\[\d{1,10}\])?:(?: |$)")
SYSLOG_HOST = (
    # a paste indented in notes or a markdown list keeps its lines whole after the indent
    r"[ \t]{0,8}" + GREP_FILE + r"(?:<\d{1,3}>)?" + _TIME_HOST_TAG)
_SYSLOG_RE = re.compile(SYSLOG_HOST)
# a syslog / journal line quoted whole after another tool's words, as an alert carries it ('Xid errors
# on instance: node7, Error: May 19 07:08:57 node7 kernel: [680111.6] NVRM: Xid ..'): after a separator
# (a separator, then the line; group 1 the host: hostscan's findall)
EMBEDDED_SYSLOG_RE = re.compile(r"[\s,;|>\"'(=]" + _TIME_HOST_TAG)
# the kernel's line heads: dmesg (seconds since boot, -T, --time-format iso: a T, a comma and
# an offset), --decode's 'kern  :warn  : ', a syslog / journal line tagged 'kernel'
_KERNEL_HEAD_RE = re.compile(
    r"^(?:kernel: )?(?:[a-z]{1,8} *:[a-z]{1,8} *: )?(?:\[ *\+?\d{1,12}\.\d{1,9}\]|\[(?:[A-Z][a-z]{2} )?[A-Z][a-z]{2} "
    r"{1,2}\d{1,2} \d\d:\d\d(?::\d\d \d{4})?\]|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d,\d{1,9}[+-]\d\d:?\d\d )|"
    # Talos's kernel lines (machined: '%s: %7s: [%s]: %s', facility kern, then the priority and an RFC 3339 time)
    r"^kern: {1,8}[a-z]{3,7}: \[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d)\]: |"
    # a /dev/kmsg record ('6,3964,206764307,-;nvidia-nvswitch2: open (major=510)': prio,seq,usec,flags;)
    r"^\d{1,4},\d{1,20},\d{1,20},[-c+](?:,[^;\n]{0,80})?;")
_KERNEL_TAG_RE = re.compile(SYSLOG_HOST.replace(r"[^\s:\[\]]{1,128}(?:\[\d{1,10}\])?:", r"kernel(?:\[\d{1,10}\])?:"))
# UCX's own log head (src/ucs/debug/log.c: '[%lu.%06lu] [%s:%-5d:%s]'): a Unix time, never dmesg's uptime
_UCX_HEAD_RE = re.compile(r"\[\d{9,12}\.\d{6}\] \[[^\]\s:]{1,256}:")
# the same line with its host field cut out (a paste with the node's name removed): time, then 'kernel:'
_KERNEL_TAG_NO_HOST_RE = re.compile(SYSLOG_HOST.replace(r" {1,4}([A-Za-z0-9][^\s:\[\]<>]{0,252}) [^\s:\[\]]{1,128}(?:\[\d{1,10}\])?:",
                                                        r" {1,4}kernel(?:\[\d{1,10}\])?:"))
# a message the kernel itself prints, on a line with no timestamp ('NVRM: Xid ..', 'mlx5_core 0000:..: ..')
KERNEL_MSG_RE = re.compile(r"^(?:<\d{1,2}>)?(?:kernel: )?(?:NVRM: |nvidia(?:-nvswitch\d{0,3}|-modeset|-uvm|-nvlink|"
                           r"-peermem)?: |mlx5_(?:core|ib)|EDAC |pcieport |\S{1,40} \S{1,40}: AER: |Out of memory|"
                           r"oom-kill|INFO: task |mce: |\[Hardware Error\]|DMAR: |AMD-Vi: |ib_\w{1,20}: |ipoib)")
# NHC with TS=1 puts '[$SECONDS] - ' before each line (nhc's log functions: PREFIX="[$SECONDS] - ")
_NHC_TS = r"(?:\[\d{1,12}\] - )?"
# a node daemon's own log file: Fabric Manager's '[Feb 27 2025 15:10:02] [ERROR] [tid N] ..',
# slurmd's / slurmctld's '[2026-12-02T07:10:01.123] error: ..', NHC's 'ERROR:  nhc:  Health check failed:  ..'
# (and the pass lines and the exit code of Azure's NHC checks)
DAEMON_LOG_RE = re.compile(r"^(?:\[(?:[A-Z][a-z]{2} \d{1,2} \d{4} \d\d:\d\d:\d\d\] \[(?:ERROR|WARNING|WARN|INFO|"
                           r"DEBUG|FATAL)\]|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?\] )|"
                           # NHC's own log (its errors, its -d debug output), after its TS prefix
                           + _NHC_TS + r"(?:ERROR: {1,2}nhc: |DEBUG: {2})|"
                           r"Node Health Check (?:starting|completed successfully)|"
                           # Azure's NHC checks (azurehpc-health-checks customTests/azure_common.nhc, and
                           # its container's entrypoint): 'SUCCESS:  nhc:  Health check passed:  ..'
                           r"SUCCESS: {1,2}nhc: {1,2}Health check passed:|Health checks completed with exit code: \d|"
                           # DCGM's nv-hostengine.log (common/DcgmLoggingImpl.h DcgmLogFormatter: 'YYYY-mm-dd
                           # HH:MM:ss.sss <severity padded to 5> [<PID>:<TID>] <message> [<file>:<line>] [<function>]')
                           r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} (?:NONE|FATAL|ERROR|WARN|INFO|DEBUG|VERB) {1,2}"
                           r"\[\d{1,10}:\d{1,10}\] |"
                           # ... its line pasted without the time: the severity, [pid:tid], and the source
                           # and function in brackets at its end ('ERROR [3468:4824] ... [/workspaces/dcgm-rel_
                           # dcgm_2_0-postmerge/modules/nvswitch/DcgmModuleNvSwitch.cpp:372] [DcgmNs::..::RunOnce]')
                           r"(?:FATAL|ERROR|WARN|INFO|DEBUG|VERB) {1,2}\[\d{1,10}:\d{1,10}\] [^\n]{0,4000}"
                           r"\[[^\[\]\s]{1,512}\.(?:cpp|h|hpp|c):\d{1,6}\] \[[^\[\]\n]{0,512}\]\s*$|"
                           # OpenSM's own log (libopensm/osm_log.c: '%s %02d %02d:%02d:%02d %06d [%04X] 0x%02x -> %s',
                           # or '[%02d:%02d:%02d:%03d][%04X] 0x%02x -> %s'): the subnet manager's node
                           r"(?:[A-Z][a-z]{2} \d\d \d\d:\d\d:\d\d \d{6} |\[\d\d:\d\d:\d\d:\d{3}\])\[[0-9A-F]{1,16}\] "
                           r"0x[0-9a-f]{2} -> )")
# Slurm's daemons' own log lines ('[2026-12-02T07:10:01.123] ...'): slurmctld's are the controller's,
# about every node; a node's health is not read from them
# NHC's dbg() (nhc: echo "${PREFIX}DEBUG:  $*" with -d): its debug output, no finding of a check
NHC_DEBUG_RE = re.compile(r"^" + _NHC_TS + r"DEBUG: {2}")
SLURM_DAEMON_RE = re.compile(r"^\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?\] ")
# NVIDIA's k8s-device-plugin (internal/rm/health.go): 'XidCriticalError: Xid=%d on Device=%s, ...': an
# Xid the node's NVML reported, as the plugin logs it
_PLUGIN_XID = "XidCriticalError: Xid="
# a Go daemon's log line: klog's 'I0810 15:36:05.551834       1 health.go:169] ' (the device plugin, the GPU
# operator's, the kubelet's), or Go's log package's '2019/07/27 07:33:07 ' (the device plugin before v0.10)
GO_LOG_RE = re.compile(r"^(?:[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{6} {1,12}\d{1,10} [\w.\-]{1,80}\.go:\d{1,6}\] |"
                       r"\d{4}/\d\d/\d\d \d\d:\d\d:\d\d )")
# words of the GPU stack's node daemons (vocab/k8sdp.py reads the device plugin's lines): Go's log
# head is common, these words make it a node daemon's line rather than a job's
# (never a word a job's own line may hold under such a head: 'device', 'GPU' and 'plugin' would take a training
# script's '2024/05/01 10:00:01 RuntimeError: CUDA error: device-side assert' from the job reader)
_GO_NODE_WORDS = ("NVML", "device plugin", "Kubelet", "kubelet", "unhealthy", "nvidia.com/", "watcher", "to serve",
                  "Fetching devices", "default runtime", "GRPC", "MIG", "CDI", "MPS", "strategy", "health check",
                  "XidCriticalError")


# words one of which every bare kernel message (KERNEL_MSG_RE) holds: the cheap first look
_BARE_WORDS = ("NVRM", "nvidia", "mlx5_", "EDAC", "pcieport", "AER:", "Out of memory", "oom-kill", "INFO: task",
               "mce:", "Hardware Error", "DMAR:", "AMD-Vi", "ib_", "ipoib")


def is_kernel_line(line):
    """True when ``line`` (cleaned) is the kernel's: a dmesg timestamp, a syslog / journal
    line tagged ``kernel``, or a kernel message with no timestamp. A launcher's or a Python
    logger's ISO time, or another program's syslog line, is not. (The job-log reader asks it
    of every line it reads: what cannot be one is told without a regex.)"""
    s = line.lstrip()
    c = s[:1]
    if c in ("[", "<") or c.isdigit() or s.startswith("kern"):  # ('kern  :warn  : ', 'kernel: [ 1.2]')
        if c == "[" and _UCX_HEAD_RE.match(s):
            return False  # UCX's log head: an epoch time, then [host:pid:thread] (no seconds since boot)
        if _KERNEL_HEAD_RE.match(s):
            return True
    if "kernel" in line and (_KERNEL_TAG_RE.match(line) or _KERNEL_TAG_NO_HOST_RE.match(line)):
        return True
    for w in _BARE_WORDS:
        if w in s:
            return bool(KERNEL_MSG_RE.match(s))
    return False


def syslog_line(line):
    """True when ``line`` carries a syslog / journal head (a time, the node's name, a tag)."""
    return bool(_SYSLOG_RE.match(line))


def embedded_syslog(line):
    """Where a syslog / journal line quoted whole inside ``line`` starts (after another tool's
    words: an alert, a ticket), or 0 when there is none. Only a line that holds a tag's colon
    after a time is searched (the first character is never a start: that line is syslog's own)."""
    if ":" not in line[8:] or not (" kernel" in line or "]: " in line):
        return 0
    m = EMBEDDED_SYSLOG_RE.search(line, 1)
    return m.start() + 1 if m else 0


def line_family(line):
    """Which of the node's logs ``line`` is a line of: "kernel" (the kernel's), "slurm" (a Slurm
    daemon's own log, which speaks of every node), "node" (any other program's through syslog /
    journald -- it carries the node's name --, a node daemon's own log file, an Xid the Kubernetes
    device plugin logged, a Go daemon's klog line, the device plugin's Go log line), or None (a job's output, a tool's)."""
    if is_kernel_line(line):
        return "kernel"
    if SLURM_DAEMON_RE.match(line):
        return "slurm"
    if syslog_line(line) or DAEMON_LOG_RE.match(line) or _PLUGIN_XID in line:
        return "node"
    if go_daemon_line(line):
        return "node"
    return None


def go_daemon_line(line):
    """True when ``line`` is a Go node daemon's: a klog line of a .go file, or Go's log line with
    a word of the GPU stack's daemons (the device plugin before klog)."""
    if not (line[:1].isdigit() or line[:1] in "IWEF"):
        return False
    m = GO_LOG_RE.match(line)
    return bool(m) and (".go:" in m.group(0) or any(w in line for w in _GO_NODE_WORDS))


def is_node_line(line):
    """True when ``line`` is a line of the node's own logs (line_family)."""
    return line_family(line) is not None


# words that end in ': ' in log lines, or sit where a prompt's host would, and are never a host
NOT_HOSTS = frozenset((
    "kernel", "nvrm", "call", "hardware", "info", "warning", "warn", "error", "err", "note", "notice",
    "debug", "fatal", "failed", "pdsh", "clush", "ssh", "sudo", "bash", "sh", "zsh", "cpu", "rip", "rsp",
    "code", "workqueue", "audit", "usb", "pci", "acpi", "ansible", "traceback", "file", "task", "modules",
    "tainted", "mem", "node", "host", "hostname", "dmesg", "journalctl", "grep", "output", "stdout",
    "stderr", "result", "msg", "message", "status", "state", "uuid", "serial", "name", "gpu", "port",
    "device", "driver", "version", "cuda", "nccl", "error_msg", "exception", "caused", "reason",
    "hca_id",  # ibv_devinfo's "hca_id: mlx5_0" (the value looks like a log line's start)
))


def hostlike(name, digits=False):
    """A word that may be a host's name: none of NOT_HOSTS, and not all digits unless ``digits``."""
    return bool(name) and name.lower() not in NOT_HOSTS and (digits or not name.isdigit())


# a shell prompt pasted with a command's output: 'root@node4:~# ', '[root@node4 ~]# ', '(env) bob@c002:~/run$ ',
# zsh's default 'user@host ~ %' (%n@%m %1~ %#); the host is group 1, 2 or 3
_NAME = r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,252}"
PROMPT_RE = re.compile(
    r"(?:\([^()\s]{1,64}\) )?[A-Za-z0-9_.\-]{1,64}@(" + _NAME + r"):[^\s#$%]{0,1024} {0,8}[#$%](?: |$)"
    r"|(?:\([^()\s]{1,64}\) )?\[?[A-Za-z0-9_.\-]{1,64}@(" + _NAME + r")(?: [^\]]{0,1024})?\][#$%](?: |$)"
    r"|(?:\([^()\s]{1,64}\) )?[A-Za-z0-9_.\-]{1,64}@(" + _NAME + r") [^\s#$%]{1,1024} [#$%](?: |$)")
_SSH_ARG_OPTS = frozenset("bcDEeFIiJLlmOoPpQRSWw")


def ssh_target(command):
    """'ssh -p 22 user@gpu-2-5 nvidia-smi' -> 'gpu-2-5': the host a prompt's one-shot ssh
    command ran on (its output is that host's); None for anything else, or an interactive
    ssh (the next prompt names the host)."""
    words = command[:1024].split()
    if words[:1] == ["sudo"]:
        words = words[1:]
    if words[:1] != ["ssh"]:
        return None
    i = 1
    while i < len(words) and words[i].startswith("-"):
        opt = words[i]
        i += 2 if len(opt) == 2 and opt[1] in _SSH_ARG_OPTS else 1
    if i + 1 >= len(words):
        return None
    target = words[i].rpartition("@")[2]
    return target if re.match(_NAME + r"$", target) else None


def prompt(line):
    """(host, what follows the prompt) of a shell prompt at the start of ``line``, an indented one (a
    code block's) too; the host is a one-shot ssh's target when one is typed after it. None otherwise."""
    if line[:1] == " " and "@" in line[:100] and len(line) - len(line.lstrip(" ")) <= 8:
        line = line.lstrip(" ")  # a prompt indented as a code block (markdown, rst)
    c = line[:1]
    if not ("@" in line[:400] and c in "([" or (c.isalnum() and "@" in line[:100])):
        return None
    m = PROMPT_RE.match(line)
    if m is None:
        return None
    name = ssh_target(line[m.end():]) or m.group(1) or m.group(2) or m.group(3)
    return (name, line[m.end():]) if hostlike(name) else None


# a loop's own banner ('for h in ...; do echo "=== $h ==="; ssh $h cmd; done'): the echo pasted with the
# loop gives the fence; only then is a line '=== gpu-worker-1 ===' a host's heading (a log's own
# '=== Summary ===' is not, and no banner counts before its echo was seen)
ECHO_BANNER_RE = re.compile(r"""\becho\s+(?:-e\s+)?["']?([=#*>~+\-]{2,20}) ?\$\{?[A-Za-z_]\w{0,30}\}? ?([=#*<~+\-]{2,20})""")


def banner_re(m):
    """The headings a loop's echo (an ECHO_BANNER_RE match) prints: the host is group 1."""
    return re.compile(r"\s{0,8}%s ?(%s) ?%s\s*$" % (re.escape(m.group(1)), _NAME, re.escape(m.group(2))))


def prompt_host(line):
    """The host a shell prompt at the start of ``line`` names ('[alice@gpu-a-07 ~]$ python train.py'), or
    the target of a one-shot ssh typed after it; None for any other line."""
    found = prompt(line)
    return found[0] if found else None
