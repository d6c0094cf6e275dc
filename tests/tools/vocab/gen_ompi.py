#!/usr/bin/env python3
"""Generate module_utils/gpu_runbook/vocab/ompi.py: the help texts Open MPI (and PRRTE, the
run-time of Open MPI 5) prints when a launch, a transport or a process fails, read from their
own help files at pinned releases.

Usage (from the repository root)::

    git clone --bare https://github.com/open-mpi/ompi.git /tmp/ompi.git
    git clone --bare https://github.com/openpmix/prrte.git /tmp/prrte.git
    .venv/bin/python tests/tools/vocab/gen_ompi.py --src /tmp/ompi.git --prrte-src /tmp/prrte.git
    .venv/bin/python tests/tools/vocab/write_index.py

Pins: Open MPI v4.1.8 (the 4.1 series: ORTE, the openib BTL; what HPC-X and most GPU clusters'
MPI stacks shipped in 2021-2025), Open MPI v5.0.10 (its ompi/ and opal/ help files), PRRTE at
the commit v5.0.10's 3rd-party/prrte submodule pins (v3.0.13), and Open MPI v4.0.7 for the older
wordings of the 4.0 and 3.1 series. Deterministic: the same sources
give the same module.

How Open MPI prints them (opal/util/show_help.c, ``opal_show_help`` / ``orte_show_help``): the
text of a topic of a help file (``help-*.txt``: ``[topic]`` then its lines, ``#`` lines are
comments), its ``%`` conversions filled in by vasprintf, between two lines of 74 dashes
(``dash_line``), on stderr; mpirun collects its processes' help texts and prints each once
("N more processes have sent help message ..."). With ``--tag-output`` every line carries
``[jobid,rank]<stderr>:``. The frame is this emitter's marker: a help text has no other literal
in common with the next, so the job-log reader (joblog/ompi_lines.py) matches the lines inside a
frame against this table; the MARKERS are the dash line and the few words that name Open MPI on
their own.

Rows: one per topic, its format the topic's first line with enough literal text to be matched
(vocab.matchable) that no topic of another class shares; a message of several lines is read by
its first such line (the reader takes the frame's other lines as that message's). The same text
in several releases is one row, at the first pin that has it (v4.1.8, then v5.0.10 as
"path@v5.0.10", then v4.0.7 as "path@v4.0.7", then PRRTE as "prrte:path@v3.0.13").

Left out: command-line help and option documentation (usage/version topics, PRRTE's option
topics: a topic name without a colon in its prterun/prun/prte files), the info tools (ompi_info,
orte-info, prte_info, pmix_info), the compiler wrappers, checkpoint/restart (crs, snapc,
sstore), OpenSHMEM (oshmem/), build-time contrib/ examples, topics with no matchable line.

Classification: RULES (first match wins, by help file and topic; each group says why). Topics no
rule names: an Open MPI message of no class the runbook acts on (unknown), a warning when its
text reads as an error (vocab/reading.py error_like), else info.
"""

import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402

sys.path.insert(0, os.path.join(common.REPO, "module_utils"))
from gpu_runbook.taxonomy import KINDS  # noqa: E402
from gpu_runbook.vocab import compile_format, matchable  # noqa: E402
from gpu_runbook.vocab.reading import error_like  # noqa: E402

GENERATOR = "tests/tools/vocab/gen_ompi.py"
PIN, PIN5 = "v4.1.8", "v5.0.10"
# the 4.0 series (and 3.1 before it) word some help texts otherwise ('There is at least non-excluded
# one OpenFabrics device found,'): its wordings are rows too, after the pins above
PIN40 = "v4.0.7"
PRRTE_PIN, PRRTE_TAG = "643db1bd3d53bb44bd5afc1dc40e3786f7da9009", "v3.0.13"
ORIGIN = "https://github.com/open-mpi/ompi"
LICENCE = "BSD-3-Clause-Open-MPI (LICENSE); PRRTE BSD-3-Clause (LICENSE)"
DASH_LINE = "-" * 74  # opal/util/show_help.c dash_line
# what names Open MPI in a line of its own; the dash line frames every help text
MARKERS = (DASH_LINE, "*** An error occurred", "MPI_ERRORS_ARE_FATAL", "mpirun noticed", "prterun noticed", "orterun noticed", "ORTE_ERROR_LOG", "PRTE_ERROR_LOG",
           "Open MPI", "OpenFabrics", "ORTE ", "PRTE ", "sent help message", "help_aggregate")
# mpirun's note after it aggregated one help text printed by several processes (orte/util/show_help.c,
# opal_output(0, ...) with its "[host:pid] " prefix, outside any frame): read from its source, benign
AGGREGATE_FILE = "orte/util/show_help.c"
AGGREGATE_WHY = ("mpirun printed one help text for several processes and says how to see every copy: the help text "
                 "above it says what happened")
TEMPLATES = ((AGGREGATE_FILE, "[node1:07511] {message}"), ("", DASH_LINE + "\n{message}\n" + DASH_LINE))

SKIP_FILE = re.compile(r"help-(?:ompi_info|orte-info|prte-info|prte_info|pmix-info|opal_info|opal-wrapper|"
                       r"opal-restart|opal-checkpoint|orte-checkpoint|orte-restart|ompi-crcp|opal-crs|orte-snapc|"
                       r"orte-sstore|ompi-dynamic|orte-ps|orte-top|orte-clean|orte-server|orte-dvm|ompi-server|"
                       r"prte-clean|pterm|pmix-server|cli|prted)\b|crs|snapc|sstore|-info\.txt$")
SKIP_PATH = re.compile(r"^(?:oshmem/|contrib/|examples/|test/|docs/)")
SKIP_TOPIC = re.compile(r"usage|version|^help$|:help\b|info:", re.I)
PRRTE_RUNTIME_FILES = re.compile(r"help-(?:errmgr-base|plm-base|plm-slurm|prte-runtime|prted|prte-odls-\w+|"
                                 r"prte-rmaps-\w+|prte-hwloc-base|prte-rtc-\w+|prte-util|oob-tcp|ess-base)\.txt$")

# (file regex, topic regex, kind, category, severity, meaning): first match wins
DEATH = ("a process of the job died: Open MPI names its rank, its node and the signal or exit; its own "
         "output (and the node's kernel log, for a SIGKILL or SIGBUS) says why")
RULES = (
    # ---- the run-time's report of a process that died: the consequence, named with its rank and node
    (r"help-(?:orterun|prun|prterun|prte)\.txt", r"proc-aborted(?:-strsignal)?$|proc-exit-no-sync$|"
     r"proc-ordered-abort$|non-zero-exit$", "logged_error", "unknown", "warning", DEATH),
    (r"help-errmgr-base\.txt", r"normal-termination-but", "logged_error", "unknown", "warning",
     "a process of the job exited with a non-zero status and mpirun aborted the job: that process's own "
     "output says why"),
    (r"help-(?:orterun|prun)\.txt", r"proc-aborted-unknown|proc-aborted-signal-unknown|proc-exit-no-sync-unknown",
     "logged_error", "unknown", "warning", "the job aborted and Open MPI cannot tell which process caused it"),
    (r"help-(?:orterun|prun)\.txt", r"proc-mem-exceeded", "logged_memory_error", "memory_leak", "critical",
     "a process exceeded the memory limit the run-time watches"),
    # ---- a node (its daemon) lost while the job ran
    (r"help-errmgr-base\.txt", r"node-died|failed-daemon$", "logged_node_failure", "unknown", "critical",
     "mpirun lost its daemon on a node while the job ran: the node crashed, rebooted or dropped off the "
     "management network (or the daemon was killed)"),
    (r"help-(?:orterun|prun)\.txt", r"daemon-died-during-execution|proc-comm-failed|proc-heartbeat-failed",
     "logged_node_failure", "unknown", "critical",
     "mpirun lost contact with a node's daemon or process while the job ran: the node or its network failed"),
    # ---- the fabric: InfiniBand errors the openib BTL / OFI MTL met while transferring
    (r"help-mpi-btl-openib\.txt", r"retry exceeded|of error event|of unknown event", "logged_ib_error",
     "ib_network", "critical", "an InfiniBand transfer between two processes failed (retries exhausted, or "
     "the HCA reported an error event): a link, a port or a peer's HCA on the path; ibstat and the port "
     "counters of both hosts say which"),
    # ---- warnings of a set-up the run goes on with (another transport is used, a default applies)
    (r"help-mpi-btl-openib\.txt", r"default subnet prefix|no active ports found|error in device init|"
     r"no devices right type|ib port not selected|no device params found|ibv_fork|non optimal rd_win|"
     r"ptmalloc2 with no threads|nonexistent port",
     "benign", "healthy", "ok", "a warning Open MPI prints while choosing its transports; the run goes on "
     "(another transport, UCX on InfiniBand since 4.0, or a default is used)"),
    (r"help-mpi-btl-base\.txt", r"btl:no-nics", "benign", "healthy", "ok",
     "a point-to-point module found no interface it can use on this host; the run goes on over another one"),
    (r"help-opal-runtime\.txt", r"warn-fork", "benign", "healthy", "ok",
     "a process called fork() (a DataLoader worker, a subprocess): Open MPI warns that fork and RDMA memory "
     "may not mix; the run goes on"),
    (r"help-mca-var\.txt", r"deprecated", "benign", "healthy", "ok",
     "a deprecated MCA parameter name was used; Open MPI maps it to the new one and goes on"),
    (r"help-mpi-runtime\.txt", r"param-check-enabled-but-compiled-out|sparse groups", "benign", "healthy", "ok",
     "a setting this build ignores; the run goes on"),
    # ---- the launch and its set-up: PMI/PMIx with srun, daemons that could not start, slots, binding,
    # hostfiles, interfaces, limits: the communication set-up of the job, not a node's hardware
    (r"help-ess-base\.txt|help-ess-\w+\.txt", r"slurm-error|alps-error|execv-error|legacy-tool", "logged_nccl_config_error",
     "nccl_config", "critical", "the processes were started in a way this Open MPI cannot join (e.g. srun "
     "without PMI/PMIx support built in, or a missing orted): the launch set-up"),
    (r"help-(?:mpi-runtime|orte-runtime|opal-runtime|prte-runtime)\.txt", r"init:startup:internal-failure|"
     r"pml-add-procs-fail|num_daemons|session:dir", "logged_nccl_config_error", "nccl_config", "critical",
     "MPI (or its run-time) failed to start up in this process: the launch or the transports' set-up; the "
     "lines under it name the step and the error"),
    (r"help-(?:plm-\w+|errmgr-base|orted|prted|odls-\w+|orte-odls-\w+|prte-odls-\w+)\.txt",
     r"daemon|failed-daemon-launch|no-local-orted|agent-not-found|srun-failed|no-available|init-failure|"
     r"no-path|no-connect|undeliverable", "logged_nccl_config_error", "nccl_config", "critical",
     "mpirun could not start or reach its daemons on the job's nodes (the remote launch agent, ssh or srun, "
     "the PATH/prefix of orted, the management network)"),
    (r"help-(?:orterun|prun|prterun)\.txt", r"not-enough|allocate-resources|exe-not|wdir-not|error-spawning|"
     r"proc-failed-to-start|sys-limit|pipe-setup|failed-set-paff|slot-list|binding|paffinity|topo-not|"
     r"conflicting|pmix-failed|init-failure|environ|precondition|socket", "logged_nccl_config_error",
     "nccl_config", "critical", "mpirun could not launch the application as asked (slots, binding, the "
     "executable or its working directory, system limits): the job's launch set-up"),
    (r"help-(?:orte-rmaps-\w+|prte-rmaps-\w+|rmaps_rank_file|hostfile|dash-host|ras-\w+|prte-hwloc-base|"
     r"opal-hwloc-base|orte-rtc-\w+|prte-rtc-\w+)\.txt", r".", "logged_nccl_config_error", "nccl_config",
     "critical", "the job's placement could not be done as asked (the allocation, hostfile, mapping or "
     "binding policy): the launch set-up"),
    (r"help-(?:oob-tcp|mpi-btl-tcp)\.txt", r"invalid|include|exclude|no-listeners|not-parseable|static|"
     r"version mismatch", "logged_nccl_config_error", "nccl_config", "critical",
     "the TCP interfaces or ports Open MPI was told to use do not exist or conflict (btl_tcp_if_include, "
     "oob_tcp_if_include): the set-up of its sockets"),
    (r"help-(?:oob-tcp|mpi-btl-tcp)\.txt", r"connect|handshake|accept|hung up|dropped|guid|getpeername|endpoint|"
     r"authent", "logged_nccl_config_error", "nccl_config", "warning",
     "a TCP connection between Open MPI processes failed: usually the interface chosen (an address another "
     "node cannot reach) or a firewall; the text names the peer"),
    (r"help-mpi-btl-openib\.txt", r"reg mem limit low", "logged_nccl_config_error", "nccl_config", "warning",
     "the node limits locked (registered) memory below what InfiniBand needs (ulimit -l, Slurm's "
     "PropagateResourceLimits): transfers can fail or fall back"),
    (r"help-mpi-btl-openib\.txt", r".", "logged_nccl_config_error", "nccl_config", "warning",
     "a setting of the openib BTL (its parameters, queues, GPUDirect RDMA, the GID index) does not fit this "
     "device, or the BTL could not initialise with it"),
    (r"help-mtl-ofi\.txt|help-common-ofi\.txt", r"OFI call fail|modex failed", "logged_error", "unknown", "critical",
     "a libfabric call of Open MPI's OFI transport failed; the provider's error text under it says why"),
    (r"help-mca-base\.txt", r"find-available", "logged_nccl_config_error", "nccl_config", "warning",
     "an MCA component asked for was not found or could not be opened (a missing library, a mismatched "
     "build): the installation or the --mca selection"),
    (r"help-mca-var\.txt|help-pmix-mca-var\.txt", r"invalid-value|mutually-exclusive|missing-param-file|"
     r"environment-only|incorrect-env", "logged_nccl_config_error", "nccl_config", "warning",
     "an MCA parameter was given a value Open MPI cannot use"),
    # ---- CUDA inside Open MPI: the driver library cannot be opened, or a CUDA call failed
    (r"help-mpi-common-cuda\.txt|help-accelerator-cuda\.txt", r"dlopen failed|dlsym failed", "logged_driver_error",
     "driver", "critical", "Open MPI could not load the CUDA driver library (libcuda.so) or its functions on "
     "this node: the driver is missing or does not match"),
    # ---- the program's own use of MPI
    (r"help-mpi-runtime\.txt", r"invoked multiple times|already finalized|not initialized|noconxcpt",
     "logged_application_error", "application", "critical",
     "the program called MPI_Init or MPI_Finalize out of order: the program's own bug"),
    (r"help-mpi-errors\.txt", r"mpi_errors_are_fatal", "logged_error", "unknown", "critical",
     "an MPI call returned an error and the error handler aborts the job; the error class and the "
     "message under it say which"),
)


def help_topics(text):
    """[(topic, line of its header, [(line number, text), ...])] of a help file (show_help_lex.l:
    '#' lines are comments, '[topic]' starts a topic)."""
    out, cur = [], None
    for i, line in enumerate(text.split("\n"), 1):
        if line.startswith("#"):
            continue
        m = re.match(r"^\[(.+)\]\s*$", line)
        if m:
            cur = (m.group(1), i, [])
            out.append(cur)
            continue
        if cur is not None:
            cur[2].append((i, line.rstrip()))
    return out


def classify(path, topic, body):
    name = path.rsplit("/", 1)[-1]
    for file_rx, topic_rx, kind, category, severity, meaning in RULES:
        if re.search(file_rx, name) and re.search(topic_rx, topic):
            return kind, category, severity, meaning
    whole = " ".join(t for _i, t in body)
    if error_like(whole):
        return ("logged_error", "unknown", "warning",
                "an Open MPI help text that says something failed, of no class the runbook acts on; its text "
                "says what")
    return ("logged_error", "unknown", "info", "an Open MPI help text that reports no failure the runbook acts on")


def sources(src, prrte_src):
    """[(row file, path, rev, text)] of every help file read, newest pin last."""
    out = []
    for rev, tag in ((PIN, None), (PIN5, PIN5), (PIN40, PIN40)):
        for path in common.ls_files(src, rev):
            if not re.search(r"(?:^|/)help-[^/]*\.txt$", path) or SKIP_PATH.match(path) or SKIP_FILE.search(path):
                continue
            out.append((path if tag is None else "%s@%s" % (path, tag), path, rev, common.show(src, rev, path)))
    for path in common.ls_files(prrte_src, PRRTE_PIN):
        if not re.search(r"(?:^|/)help-[^/]*\.txt$", path) or SKIP_FILE.search(path):
            continue
        out.append(("prrte:%s@%s" % (path, PRRTE_TAG), path, PRRTE_PIN, common.show(prrte_src, PRRTE_PIN, path)))
    return out


def _prrte_topic_kept(path, topic):
    return bool(PRRTE_RUNTIME_FILES.search(path)) or ":" in topic


def aggregate_rows(src):
    """The opal_output(0, "...") lines of orte/util/show_help.c at the pin: mpirun's aggregation note."""
    text = common.show(src, PIN, AGGREGATE_FILE)
    rows = []
    for m in re.finditer(r"\bopal_output\s*\(\s*0\s*,", text):
        args, _end = common.call_args(text, m.end() - len(m.group(0)) + m.group(0).index("("))
        fmt = common.join_literals(args[1]) if len(args) > 1 else None
        if fmt and matchable(fmt):
            rows.append((AGGREGATE_FILE, common.line_of(text, m.start()), fmt.strip(), "benign", "healthy", "ok",
                         AGGREGATE_WHY))
    if len(rows) < 2:
        raise SystemExit("%s: mpirun's aggregation lines not found at %s" % (AGGREGATE_FILE, PIN))
    return rows


def build(src, prrte_src):
    topics = []  # (row file, topic, [(line, text)], class)
    for rowfile, path, _rev, text in sources(src, prrte_src):
        for topic, _at, body in help_topics(text):
            if SKIP_TOPIC.search(topic):
                continue
            if rowfile.startswith("prrte:") and not _prrte_topic_kept(path, topic):
                continue
            lines = [(i, t) for i, t in body if t.strip() and matchable(t)]
            if not lines:
                continue
            topics.append((rowfile, topic, lines, classify(path, topic, body)))
    # a line's fragments -> the classes of the topics holding it: a row must not stand for two
    classes = {}
    for _f, _t, lines, cls in topics:
        for _i, t in lines:
            classes.setdefault(compile_format(t)[0], set()).add(cls[:3])
    rows, seen, dropped = [], set(), 0
    for rowfile, topic, lines, cls in topics:
        pick = next(((i, t) for i, t in lines if len(classes[compile_format(t)[0]]) == 1), None)
        if pick is None:
            dropped += 1
            continue
        key = compile_format(pick[1])[0]
        if key in seen:
            continue  # the same text at an older pin (or another topic of the same class): one row
        seen.add(key)
        kind, category, severity, meaning = cls
        common.check_class(kind, category, severity, KINDS)
        rows.append((rowfile, pick[0], pick[1].strip(), kind, category, severity, meaning))
    return rows, dropped


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--src", required=True, help="a clone (or bare mirror) of open-mpi/ompi")
    p.add_argument("--prrte-src", required=True, help="a clone (or bare mirror) of openpmix/prrte")
    a = p.parse_args(argv)
    rows, dropped = build(a.src, a.prrte_src)
    rows += aggregate_rows(a.src)
    meta = {"EMITTER": "Open MPI", "PROJECT": "Open MPI (help texts; with PRRTE %s for v5's run-time)" % PRRTE_TAG,
            "VERSION": "%s + %s + %s" % (PIN, PIN5, PIN40), "COMMIT": common.resolve(a.src, PIN), "LICENCE": LICENCE,
            "ORIGIN": ORIGIN, "GENERATOR": GENERATOR}
    path = common.write_table("ompi", meta, MARKERS, TEMPLATES, rows, doc=DOC)
    print("%s: %d rows (%d topics left out: every matchable line shared with a topic of another class)" % (
        path, len(rows), dropped))


DOC = """Read: every help-*.txt of Open MPI v4.1.8, v5.0.10 and v4.0.7 (ompi/, opal/, orte/) and of PRRTE at
v5.0.10's submodule pin (v3.0.13; its run-time files and its topics named with a colon); a topic's
row is its first line with enough literal text that no topic of another class shares (a format
once, at the first pin that has it; later pins' files are "path@tag", PRRTE's "prrte:path@tag").
Printed between two lines of 74 dashes (opal/util/show_help.c dash_line): the job-log reader
(joblog/ompi_lines.py) matches the lines inside such a frame against these rows. And mpirun's note
after it aggregated a help text several processes printed (orte/util/show_help.c: "N more
processes have sent help message ...", "Set MCA parameter "orte_base_help_aggregate" to 0 ..."): benign.
Left out: usage/version/option help, the info tools, compiler wrappers, checkpoint/restart,
OpenSHMEM, contrib/.
Classification (gen_ompi.py RULES, first match wins): a process that died (rank, node, signal) ->
unknown warning (the consequence); a daemon or node lost during the run -> logged_node_failure;
openib retry-exceeded and error events -> ib_network; launch set-up (PMI with srun, daemons,
slots, binding, placement, interfaces, MCA parameters) -> nccl_config; libcuda not loadable ->
driver; MPI_Init/Finalize misuse -> application; transport-choice warnings the run goes on after
-> benign; other topics -> unknown, warning when the text reads as an error, else info.
"""


if __name__ == "__main__":
    main()
