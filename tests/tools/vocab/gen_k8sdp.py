#!/usr/bin/env python3
"""Generate module_utils/gpu_runbook/vocab/k8sdp.py: the messages NVIDIA's Kubernetes device plugin
(NVIDIA/k8s-device-plugin, the ``nvidia-device-plugin`` pod of a GPU node: ``kubectl logs`` of the
nvidia-device-plugin-daemonset) prints, read from its Go source at the newest release tag, with the
wordings of older releases back to the 2019 ``log.Println`` plugin.

    git clone --bare https://github.com/NVIDIA/k8s-device-plugin.git /tmp/k8s-device-plugin.git
    .venv/bin/python tests/tools/vocab/gen_k8sdp.py --src /tmp/k8s-device-plugin.git
    .venv/bin/python tests/tools/vocab/write_index.py

What is read: at the pin (PIN) and at each of OLDER (newest first), the plugin's own Go files
(PLUGIN_DIRS: cmd/nvidia-device-plugin, internal/plugin, internal/rm, internal/cdi, internal/mig,
internal/imex, internal/watch, api/config/v1; before v0.10 the files at the repository's root: main.go,
server.go, nvidia.go, mig.go, mig-strategy.go), never vendor/, tests or mocks: every klog.Info / Infof /
InfoS / Warning / Warningf / Error / Errorf / ErrorS / Fatal / Fatalf call, Go's log.Print / Printf /
Println / Fatal / Fatalf / Panic* (the plugin before v0.12 printed with the standard logger) and every
fmt.Errorf / errors.New (a returned error the plugin prints at its top, 'error starting plugins: ...',
or with klog.Error(err)); Go's verbs as ``%s`` (``%d`` kept), Println's operands joined by blanks.
gen_container.py's Go literal reader (go_literal, go_verbs) reads the literals. Left out: klog.V(n)
(debug), internal/lm and cmd/gpu-feature-discovery (GPU feature discovery's labeller: another
container, which the plugin's binary does not run), cmd/config-manager and cmd/mps-control-daemon (other
containers), messages with too little literal text to be matched (vocab.matchable: 12 characters, a
fragment of 6) and messages holding none of MARKERS (the plugin's own words: the node reader's prefilter
lets every line holding one through; the plugin is a node daemon, its lines the node's: linefamily). An older release's message the pin words otherwise is a row
``<path>@<tag>`` at the newest release that has it.

How it prints: klog's head, 'I0809 13:32:51.873541       1 health.go:185] <message>' (TEMPLATES:
KLOG_TEMPLATE), from v0.12; Go's standard logger, '2019/07/27 07:33:07 <message>' (GO_LOG_TEMPLATE), before
(the rows of a file read with the standard logger; the generator knows which from the file's calls).

Classification: RULES below, first match wins, each with its reason. In short:
- an Xid the plugin reports ('XidCriticalError: Xid=%d on Device=%s; marking device as unhealthy.', and
  its older wordings): the engine's Xid readers read this line (kernlog/xidread.py read_plugin_xid, the
  line a node's line by linefamily.py; an older wording or a GPU named otherwise by vocab.xid_named) and
  class it by NVIDIA's Xid catalog, as the NVRM table leaves the Xid printer's own line to the catalog.
  The row is kind "xid" (as the NVRM table's Xid detail lines: a message whose kind a dedicated finding
  has is said once, by it) with the catalog's class of an Xid it does not name: unknown, warning.
- NVML failing to initialise, the plugin's advice that follows it ('If this is a GPU node, did you set the
  docker default runtime to `nvidia`?', 'did you configure the NVIDIA Container Toolkit?'), an
  incompatible platform and no devices found: the node's GPU driver or container runtime set-up, as DCGM's
  'Failed to initialize NVML: %s' (vocab/dcgmlog.py) and nvidia-container-cli's 'initialization error: %s'
  (vocab/container.py) are: logged_driver_error, driver, warning (the NVML return in the line can say
  more: vocab/reading.py makes a GPU that is lost gpu_hardware).
- a device the plugin marked unhealthy for any other reason (its health check could not register the
  GPU's events, an event wait failed, the GPU's placement or handle could not be read): the GPU was
  withdrawn from the node's allocatable nvidia.com/gpu; the line names no fault of the GPU (NVML's return
  in it may: vocab/reading.py makes 'GPU is lost' gpu_hardware): unknown, warning. The server's echo of
  every withdrawal ('%s' device marked unhealthy: %s) follows the health checker's own line, which says
  why and carries the warning (an Xid: the Xid readers'): unknown, info, so one withdrawal is not said
  twice. A GPU too old for health checks is not withdrawn (v0.14+): unknown, info.
- the plugin could not register with the kubelet, serve its socket, start its gRPC server or watch the
  kubelet's directory: unknown, warning. Not driver: the GPUs and the driver may be fine; what an SRE acts
  on is the node's Kubernetes side (the kubelet's device-plugin socket directory, its restart, the
  plugin's pod), which no category of the taxonomy names; a driver verdict would send them to the driver.
- the plugin's configuration (flags, its config file, the MIG strategy against the GPUs' MIG layout,
  sharing and replicas, CDI, MPS): unknown, warning. The plugin's deployment (its Helm values, config
  map, the GPU operator's ClusterPolicy) is neither the job's code (application, which would blame the
  workload) nor the driver (which would send an SRE to reinstall it): the line says what to change.
- the plugin's start-up and serving lines (Loading NVML, Fetching / Retreiving devices and plugins,
  Starting FS / OS watcher, Starting to serve, Registered device plugin with Kubelet, Starting GRPC
  server, the config it runs with, the platform and strategy detected, signals, the kubelet restarting)
  and its health checker's own bookkeeping (events skipped or processed, Xids ignored by configuration):
  benign.
- other errors it logs or returns: unknown, warning; other info or warning lines naming a failure:
  unknown, info; the rest benign."""

import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402
from gen_container import go_literal, go_verbs  # noqa: E402

sys.path.insert(0, os.path.join(common.REPO, "module_utils"))
from gpu_runbook import vocab  # noqa: E402
from gpu_runbook.taxonomy import KINDS  # noqa: E402

GENERATOR = "tests/tools/vocab/gen_k8sdp.py"
EMITTER = "NVIDIA device plugin"
PIN = "v0.20.0"
# newest first; at least one release of each era: the klog plugin (v0.17, v0.15, v0.14, v0.12), the
# standard logger's cmd/ layout (v0.10), its root layout with MIG (v0.9, v0.7), the 2019-20 plugin
# (v0.5.0 = 1.0.0-beta5; v0.4.0 = 1.0.0-beta4, October 2019: 'XidCriticalError: Xid=%d on GPU=%s, the device will
# go unhealthy.', 'device marked unhealthy: %s'; 1.0.0-beta, March 2019: 'Loading NVML', 'Starting to serve on %s',
# and no Xid line at all)
OLDER = ("v0.17.4", "v0.15.1", "v0.14.5", "v0.12.3", "v0.10.0", "v0.9.0", "v0.7.3", "v0.5.0", "v0.4.0", "1.0.0-beta")
ORIGIN = "https://github.com/NVIDIA/k8s-device-plugin"
PLUGIN_DIRS = ("cmd/nvidia-device-plugin/", "internal/plugin/", "internal/rm/", "internal/cdi/", "internal/mig/",
               "internal/imex/", "internal/watch/", "api/config/v1/")
ROOT_FILES = ("main.go", "server.go", "nvidia.go", "mig.go", "mig-strategy.go", "watchers.go")
# literals the reading relies on: a pin that lost one must be read again
REQUIRED = (
    ("internal/rm/health.go", "XidCriticalError: Xid=%d on Device=%s; marking device as unhealthy."),
    ("internal/plugin/server.go", "device marked unhealthy: %s"),
    ("internal/plugin/factory.go", "Failed to initialize NVML: %v."),
)

KLOG_TEMPLATE = "I0809 13:32:51.873541       1 {file}:{line}] {message}"
GO_LOG_TEMPLATE = "2019/07/27 07:33:07 {message}"

# the plugin's own words: every kept message holds one. Not 'plugin', 'device', 'strategy', 'config' or
# 'error' (every training log prints them: PyTorch Lightning's strategy and plugins, a DataLoader's
# device); 'NVML' (upper case: what NVIDIA's own programs print) but not 'nvml'; not 'Running with config'
# (maskrcnn-benchmark's trainer prints it too: the plugin's config dump is left out)
# every line the plugin prints opens with klog's head (a .go file's) or Go's log package's: its markers are
# looked for only behind one (at a line's start, or after a syslog / journal head's ': '), so the node's
# other lines -- a busy kernel log's -- cost no search of them (vocab._marked)
GATE = (r"(?:^|: )(?:[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{6} {1,12}\d{1,10} [\w.\-]{1,80}\.go:\d{1,6}\] |"
        r"\d{4}/\d\d/\d\d \d\d:\d\d:\d\d )")
MARKERS = ("device plugin", "Kubelet", "XidCriticalError", "unhealthy", "nvidia.com/gpu", "NVML",
           "nvml init", "MIG strategy", "mig-strategy", "mig.strategy", "migEnabled", "MIG device", "MIG profile",
           "MIG minors", "FS watcher", "OS watcher", "GRPC server", "Fetching devices", "No devices found",
           "Retreiving plugins", "Retrieving plugins", "Starting Plugins", "Stopping plugins", "plugins from",
           "start plugin", "one or more plugins", "starting plugins", "stopping plugins", "getting plugins",
           "create plugins", "Starting to serve", "Stopping to serve", "device-list-strategy", "device-id-strategy",
           "device-discovery-strategy", "device discovery strategy", "docker default runtime",
           "NVIDIA Container Toolkit", "nodeSelector", "healthcheck", "health check", "Tegra", "CDI ", " CDI", "MPS ", " MPS",
           "IMEX", "resource patterns", "replicas", "timeSlicing")

B = "benign"
DRV, ERR, XID = "logged_driver_error", "logged_error", "xid"
M_XID = ("An Xid NVML reported for this GPU: the device plugin withdrew it from the node's allocatable "
         "nvidia.com/gpu. The engine's Xid readers read the number and class it by NVIDIA's Xid catalog "
         "(an Xid the catalog does not class names no cause)")
M_NVML = ("The device plugin could not use NVML: the NVIDIA driver is not loaded or not mounted into the plugin's "
          "pod (the container runtime's NVIDIA hook or CDI, docker's default runtime), or no GPU is visible: the "
          "node advertises no nvidia.com/gpu")
M_ADVICE = "The device plugin's advice printed after the failure above it (which says what failed): no fault of its own"
M_UNHEALTHY = ("The device plugin withdrew a GPU from the node's allocatable nvidia.com/gpu: the line names no "
               "fault of the GPU (the Xid line before it, or NVML's return in it, says why)")
M_ECHO = ("The device plugin withdrew a GPU from the node's allocatable nvidia.com/gpu (the node's capacity drops): "
          "the health checker's line before it says why (an Xid, or an NVML call that failed)")
M_KUBELET = ("The device plugin could not register with the kubelet or serve its socket: the node's Kubernetes "
             "side (the kubelet's device-plugins directory, its restart, the plugin's pod), not the GPU or the "
             "driver: the node advertises no nvidia.com/gpu until it registers")
M_CONFIG = ("The device plugin's configuration (its flags, config file, MIG strategy against the GPUs' MIG layout, "
            "sharing, CDI or MPS settings) is invalid for this node: fix the plugin's deployment (Helm values, "
            "config map, the GPU operator's policy)")
M_HEALTH_OFF = ("The device plugin's health checks are off or failed to start: an Xid on this node will not "
                "withdraw its GPU")
M_START = "The device plugin's start-up or serving line: no fault"
M_HEALTH_OK = "The device plugin's health checker's own bookkeeping (an event skipped, ignored or about to be read): no fault"
M_SKIP = "The device plugin passes over a MIG minors line or a MIG device it does not use: no fault"
M_ERR = "The device plugin reports an error that names no cause by itself"
M_INFO_FAIL = "The device plugin notes something that failed and goes on (the lines after say more)"
M_SHUTDOWN = "The device plugin could not shut NVML down cleanly as it stopped: no fault of the GPUs"

_FAIL = r"(?i)\b(fail|failed|failure|error|unable|cannot|could not|invalid|crash|crashed)"
RULES = (
    # (level regex, format regex, kind, severity, meaning); level: info, warning, error, returned
    # the health checker's bookkeeping: events it skips (not critical, or an Xid configured away) or reads next
    (r"", r"^Skipping non-nvmlEventTypeXidCriticalError event|^Skipping event|^Processing event|"
          r"^Ignoring event for unexpected device|^Event for mig device|^Ignoring the following XIDs", B, "ok",
     M_HEALTH_OK),
    # an Xid the plugin reports: the engine's Xid readers read it (kernlog/xidread.py, vocab.xid_named)
    (r"", r"XidCriticalError: Xid=", XID, "warning", M_XID),
    (r"", r"^Skipping (line in MIG minors file|unsupported MIG device)", B, "ok", M_SKIP),
    # NVML, the runtime, no GPU: the node's driver or container runtime set-up
    (r"", r"(?i)^You can (check the prerequisites|learn how to set the runtime)|^If this is not a GPU node", B, "ok",
     M_ADVICE),
    (r"", r"(?i)failed to initialize NVML|nvml init failed|did you set the docker default runtime|did you configure "
          r"the NVIDIA Container Toolkit|Incompatible (platform|strategy) detected|^No devices found|NVML not detected|"
          r"could not load NVML", DRV, "warning", M_NVML),
    (r"", r"(?i)Error shutting down NVML|Shutdown of NVML returned", ERR, "info", M_SHUTDOWN),
    # a GPU withdrawn for a reason that is not an Xid
    (r"", r"(?i)health ?check(s|ing)? disabled|Failed to start health check", ERR, "warning", M_HEALTH_OFF),
    # the server's echo of a GPU the health checker withdrew: the health checker's own line before it says why
    # (an Xid: the Xid readers'; a failed NVML call: its row here, a warning), so the echo is said at info
    (r"", r"^('%s' )?device marked unhealthy: %s$", ERR, "info", M_ECHO),
    (r"", r"(?i)unhealthy", ERR, "warning", M_UNHEALTHY),
    (r"", r"(?i)too old to support health ?checking", ERR, "info", M_HEALTH_OFF),
    # start-up and serving, signals, the kubelet restarting (the plugin registers again)
    (r"^info$", r"(?i)^(Loading NVML|Fetching devices|Starting|Stopping|Registered device plugin|Retreiving|"
                r"Retrieving|Loading configuration|Updating config|\nRunning with config|Running with config|Received|"
                r"inotify: %s created|Detected|Using|No MIG devices found|\"MPS daemon is healthy\"|Generating CDI)",
     B, "ok", M_START),
    # the kubelet, the plugin's socket and gRPC server, the watcher of the kubelet's directory
    (r"", r"(?i)register device plugin|contact Kubelet|start device plugin|GRPC server .*crashed|repeatedly crashed|"
          r"FS watcher|Failed to start plugin|start one or more plugins|error (starting|stopping) plugins|"
          r"plugins from previous run", ERR, "warning", M_KUBELET),
    # the plugin's configuration
    (r"^(error|returned|warning)$", r"(?i)strategy|MIG|config|replica|sharing|timeSlicing|CDI|MPS|IMEX|resource "
     r"patterns|flags|--[a-z-]+|option|not supported|Customizing|rename", ERR, "warning", M_CONFIG),
    (r"^info$", r"(?i)not yet supported in the config|Customizing", ERR, "info", M_CONFIG),
    (r"^info$", r"(?i)^(invalid|unknown|error creating|unable to|failed to|could not)\b.{0,40}(strategy|MIG|config|"
                r"replica|sharing|CDI|MPS|IMEX|option)", ERR, "warning", M_CONFIG),
    (r"^(error|returned)$", r"", ERR, "warning", M_ERR),
    (r"", _FAIL, ERR, "info", M_INFO_FAIL),
    (r"", r"", B, "ok", "The device plugin's note about what it does: no fault"),
)
_RULES = [(re.compile(lv), re.compile(f), k, sev, m) for lv, f, k, sev, m in RULES]


def classify(level, fmt):
    for lv, f, kind, sev, meaning in _RULES:
        if lv.search(level) and f.search(fmt):
            if kind == B:
                return B, "healthy", "ok", meaning
            cat = "unknown" if kind == XID else KINDS[kind]["categories"][0]
            common.check_class(kind, cat, sev, KINDS)
            return kind, cat, sev, meaning
    raise SystemExit("no rule for %s %r" % (level, fmt))


# ---- the Go sites --------------------------------------------------------------------------------
_SITE = re.compile(r"(?<![\w.])(klog|log|fmt|errors)\.(InfoS|ErrorS|Infof|Infoln|Info|Warningf|Warningln|Warning|"
                   r"Errorf|Errorln|Error|Fatalf|Fatalln|Fatal|Printf|Println|Print|Panicf|Panicln|Panic|New)\s*\(")
_LEVELS = {"Info": "info", "Print": "info", "Warning": "warning", "Error": "error", "Fatal": "error",
           "Panic": "error"}


def sites(text):
    """(offset, level, fmt, stdlog) of each message site of a Go file (comments blanked); level one of
    info, warning, error, returned; stdlog: printed by Go's standard logger (log.*), not klog."""
    out = []
    for m in _SITE.finditer(text):
        pkg, meth = m.group(1), m.group(2)
        if pkg == "fmt" and meth != "Errorf" or (pkg == "errors") != (meth == "New"):
            continue
        if pkg == "log" and meth.endswith("S"):
            continue
        args, _end = common.call_args(text, m.end() - 1)
        if not args:
            continue
        if pkg in ("fmt", "errors"):
            level = "returned"
        else:
            level = _LEVELS[re.sub(r"(S|f|ln)$", "", meth)]
        if meth == "ErrorS":
            args = args[1:]  # klog.ErrorS(err, msg, kv...): 'msg" err="..." k="v"'
        if meth in ("InfoS", "ErrorS"):
            msg = go_literal(args[0]) if args else None
            if msg is None:
                continue
            keys = [go_literal(a) or "%s" for a in args[1::2]]
            fmt = '"%s"' % msg.replace("%", "%%") + "".join(' %s="%%s"' % k for k in keys)
            if meth == "ErrorS":
                fmt += ' err="%s"'
        elif meth.endswith("f") or meth in ("Errorf", "New"):
            fmt = go_literal(args[0])
            if fmt is None:
                continue
            fmt = go_verbs(fmt)
        else:
            parts = [go_literal(a, escape=True) for a in args]
            if all(p is None for p in parts):
                continue
            sep = " " if meth.endswith("ln") else ""
            # fmt.Sprint puts a blank between operands only when neither is a string: a literal and a value
            # are joined as written ('log.Println("Starting to serve on", m.socket)' -> '... on %s')
            fmt = " ".join(p or "%s" for p in parts) if sep or pkg == "log" and meth == "Println" else \
                "".join(p or "%s" for p in parts)
        out.append((m.start(), level, fmt.rstrip("\n"), pkg == "log"))
    return out


def plugin_files(src, rev):
    paths = []
    for p in common.ls_files(src, rev):
        if not p.endswith(".go") or p.endswith("_test.go") or "/vendor/" in "/" + p or "mock" in p:
            continue
        if p.startswith(PLUGIN_DIRS) or p in ROOT_FILES:
            paths.append(p)
    return sorted(paths)


def keep(fmt):
    if not vocab.matchable(fmt.strip("\n")):
        return False
    return common.holds_marker(fmt, MARKERS)


def held_elsewhere():
    """{format without its closing '.': (table, category, severity)} of the other tables. A
    message of the plugin's that another table holds word for word but for the plugin's closing '.' (DCGM's
    'Failed to initialize NVML: %s') is written without its '.': with one more literal character it would win
    every line of the other program's that holds a '.' further on (DCGM's '... [/builds/dcgm/...cpp:1941]');
    as twins they tie, the other program's own table (tried first: vocab.EMITTERS) reads its lines, and this
    one the plugin's (which hold none of the other table's markers). Their classes must agree."""
    out = {}
    for name in vocab.EMITTERS:
        t = vocab.table(name) if name != "k8sdp" else None
        for r in t.rows if t is not None else ():
            out.setdefault(r[2].rstrip("."), (name, r[4], r[5]))
    return out


_HELD = {}
HELD_OUT = set()  # (format, the table that holds its twin)


def collect(src, rev):
    """-> (rows, stdlog files, unmarked count, files read): a row per distinct format, its first place."""
    rows, seen, stdlog, unmarked = [], set(), set(), 0
    if not _HELD:
        _HELD.update(held_elsewhere())
    files = plugin_files(src, rev)
    for p in files:
        text = common.blank_comments(common.show(src, rev, p))
        for off, level, fmt, is_std in sites(text):
            if is_std:
                stdlog.add(p)
            if not keep(fmt):
                unmarked += vocab.matchable(fmt.strip("\n"))
                continue
            if fmt in seen:
                continue
            seen.add(fmt)
            kind, cat, sev, meaning = classify(level, fmt)
            other = _HELD.get(fmt.rstrip(".")) if fmt.endswith(".") else None
            if other is not None:
                if other[1:] != (cat, sev):
                    raise SystemExit("%s holds %r as %s/%s, this table as %s/%s" % (other + (fmt, cat, sev)))
                HELD_OUT.add((fmt, other[0]))
                fmt = fmt.rstrip(".")
            rows.append((p, common.line_of(text, off), fmt, kind, cat, sev, meaning))
    return rows, stdlog, unmarked, len(files)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", required=True, help="a clone or bare mirror of NVIDIA/k8s-device-plugin")
    ap.add_argument("--dump", action="store_true", help="print the rows, write nothing")
    args = ap.parse_args(argv)
    commit = common.resolve(args.src, PIN)
    for path, literal in REQUIRED:
        if literal not in common.show(args.src, PIN, path):
            raise SystemExit("%s: %s no longer holds %r: the reading must be revised" % (PIN, path, literal))
    if "Apache License" not in common.show(args.src, PIN, "LICENSE"):
        raise SystemExit("%s: LICENSE is no longer Apache-2.0" % PIN)
    rows, stdlog, unmarked, nfiles = collect(args.src, PIN)
    std_files = set(p for p in stdlog)
    known = set(vocab.compile_format(r[2]) for r in rows)
    notes = []
    for tag in OLDER:
        more, old_std, _u, n = collect(args.src, tag)
        added = 0
        for r in more:
            key = vocab.compile_format(r[2])
            if key in known:
                continue
            known.add(key)
            added += 1
            rows.append(("%s@%s" % (r[0], tag),) + r[1:])
            if r[0] in old_std:
                std_files.add("%s@%s" % (r[0], tag))
        notes.append("%s (%s): %d files, %d rows" % (tag, common.resolve(args.src, tag)[:12], n, added))
    counts = {}
    for r in rows:
        counts[r[4]] = counts.get(r[4], 0) + 1
    if args.dump:
        for r in rows:
            print("%s:%s [%s/%s/%s] %r" % (r[0], r[1], r[3], r[4], r[5], r[2]))
        print(counts, "unmarked", unmarked)
        return
    doc = (__doc__.split("\n\n", 2)[2] + "\n\nPin %s: %d Go files; older releases: %s. Rows: %d (%s); left out for "
           "holding no marker at the pin: %d; written without the closing '.' another table's twin lacks (held_elsewhere: "
           "its class checked to be this table's): %s." % (PIN, nfiles, "; ".join(notes), len(rows), ", ".join(
               "%s %d" % kv for kv in sorted(counts.items())), unmarked,
               ", ".join("%r (%s)" % kv for kv in sorted(HELD_OUT)) or "none"))
    meta = {"EMITTER": EMITTER, "PROJECT": "NVIDIA device plugin for Kubernetes (NVIDIA/k8s-device-plugin)",
            "VERSION": PIN, "COMMIT": commit, "LICENCE": "Apache-2.0 (its LICENSE)",
            "ORIGIN": "%s (tag %s)" % (ORIGIN, PIN), "GENERATOR": GENERATOR}
    # the rows of a file the standard logger printed: Go's head; exact files first (a prefix of a klog-era path)
    templates = tuple((f, GO_LOG_TEMPLATE) for f in sorted(std_files)) + (("", KLOG_TEMPLATE),)
    path = common.write_table("k8sdp", meta, MARKERS, templates, rows, doc=doc, gate=GATE)
    print("%s: %d rows (%s); %d unmarked left out" % (path, len(rows), counts, unmarked))


if __name__ == "__main__":
    main()
