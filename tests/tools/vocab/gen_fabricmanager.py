#!/usr/bin/env python3
"""Generate module_utils/gpu_runbook/vocab/fabricmanager.py: the NVIDIA Fabric Manager
(nv-fabricmanager) log messages that public sources name.

Fabric Manager's daemon has no public source (NVIDIA ships it as a binary; the public
NVIDIA/Fabric-Manager-Client is under NVIDIA's proprietary licence and is not read). The only
openly licensed vocabulary is the one a monitoring tool wrote down from real logs: leptonai/gpud
(Apache-2.0) at a pinned tag,

- ``components/accelerator/nvidia/fabric-manager/log_matcher.go``: the regular expressions
  gpud matches in Fabric Manager's log, each with an example line in its comment;
- ``components/accelerator/nvidia/fabric-manager/log_matcher_test.go``: more example lines
  (journald forms without the "[date] [LEVEL] [tid N]" prefix);
- ``components/accelerator/nvidia/fabric-manager/testdata/fabricmanager.log``: a 101-line
  Fabric Manager log (NVLink multicast team setup and release, one NVSwitch error).

Usage (from the repository root)::

    # the source: a clone or bare mirror of https://github.com/leptonai/gpud
    git clone --bare https://github.com/leptonai/gpud.git /tmp/gpud.git
    .venv/bin/python tests/tools/vocab/gen_fabricmanager.py --src /tmp/gpud.git [--rev v0.13.0-alpha.4]

The formats (MESSAGES) are written here from those examples, their variable parts as printf
conversions; the generator checks each against gpud's source at the pin (the example line it
cites must be read back by the format, and a gpud regex, where one names the message, must
match the format's sample line), and takes each row's file and line from where gpud holds the
example. Deterministic.
"""

import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(HERE))), "module_utils"))

from common import resolve, show, write_table  # noqa: E402
from gpu_runbook.vocab import compile_format, instantiate, match_fragments  # noqa: E402

PIN = "v0.13.0-alpha.4"
GENERATOR = "tests/tools/vocab/gen_fabricmanager.py"
ORIGIN = ("https://github.com/leptonai/gpud components/accelerator/nvidia/fabric-manager/: log_matcher.go "
          "(gpud's regexes for Fabric Manager's log and their example lines), log_matcher_test.go and "
          "testdata/fabricmanager.log (a Fabric Manager log sample); Fabric Manager itself has no public source. "
          "Meanings after gpud's comments and NVIDIA's Fabric Manager user guide "
          "(https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/)")
LICENCE = "Apache-2.0 (gpud's LICENSE); the message texts are NVIDIA Fabric Manager's, quoted from gpud"

DIR = "components/accelerator/nvidia/fabric-manager/"
MATCHER, MATCHER_TEST, SAMPLE = DIR + "log_matcher.go", DIR + "log_matcher_test.go", DIR + "testdata/fabricmanager.log"

# /var/log/fabricmanager.log: "[Mon DD YYYY HH:MM:SS] [LEVEL] [tid N] message"; the journal
# (journalctl -u nvidia-fabricmanager) shows the startup failures as "nv-fabricmanager[pid]: message"
TEMPLATES = (
    (SAMPLE, "[Feb 27 2025 15:10:02] [INFO] [tid 1808] {message}"),
    ("", "[Feb 27 2025 15:10:02] [ERROR] [tid 12727] {message}"),
)
MARKERS = ("[tid ", "NVSwitch", "nv-fabricmanager", "fabric manager")

CRIT, WARN = "critical", "warning"
# (format, gpud file holding the example, a literal of the example line there, gpud regex constant
#  or None, kind, severity, meaning)
MESSAGES = (
    # an SXid the Fabric Manager reports as fatal: the NVSwitch (or a trunk link) must be reset
    ("detected NVSwitch fatal error %d on fid %d on NVSwitch pci bus id %s physical id %d port %d",
     MATCHER, "detected NVSwitch fatal error 20034", "regexNVSwitchFatalSXid", "nvswitch_sxid", CRIT,
     "a fatal NVSwitch error (SXid; the number is in NVIDIA's SXid list): the jobs using the NVLink fabric "
     "fail and the GPUs/NVSwitches need a reset or reboot"),
    # a non-fatal SXid: the fabric keeps running, a link may be degraded
    ("detected NVSwitch non-fatal error %d on fid %d on NVSwitch pci bus id %s physical id %d port %d",
     MATCHER, "detected NVSwitch non-fatal error 12028", "regexNVSwitchNonFatalSXid", "nvswitch_sxid", WARN,
     "a non-fatal NVSwitch error (SXid): the fabric keeps running; watch whether it repeats on the same port"),
    # a multicast (NVLS) team names a GPU the fabric does not know: the NVLink SHARP setup of the job fails
    ("failed to find the GPU handle %llu in the multicast team request setup %llu.",
     MATCHER, "failed to find the GPU handle 5410063385821516767", "regexNVSwitchNVLinkFailure",
     "fabric_not_ready", CRIT,
     "Fabric Manager could not set up an NVLink multicast (NVLS) team: a GPU of the request is not in the "
     "fabric (gpud: NVSwitch NVLink failure); NCCL NVLS setup fails on this node"),
    # Fabric Manager exits at startup: an NVSwitch is missing or failed
    ("detected number of NVSwitches don't match with any supported system topology, aborting fabric manager",
     MATCHER, "aborting fabric manager", "regexNVSwitchTopologyMismatch", "fabric_not_ready", CRIT,
     "Fabric Manager did not start: fewer NVSwitches than the system's topology (one missing or failed), so "
     "the NVLink fabric is not initialised and CUDA fails with 'system not yet initialized'"),
    # no NVSwitch to manage: harmless on PCIe/GH200 nodes, the fabric stays down on an NVLink5 (B200) node
    # whose NVLink Subnet Manager did not start
    ("request to query NVSwitch device information from NVSwitch driver failed with error:WARNING Nothing to do "
     "[NV_WARN_NOTHING_TO_DO]",
     # info, not warning: the same words are harmless on most nodes that print them (two held-out
     # captures, gpu-operator#610 and cube-studio#29, were PCIe nodes); fabric_not_ready's own finding
     # on an NVSwitch node comes from CUDA / NCCL ('system not yet initialized'), which say it louder
     MATCHER, "Nothing to do [NV_WARN_NOTHING_TO_DO]", "regexNVSwitchNothingToDo", "fabric_not_ready", "info",
     "Fabric Manager found no NVSwitch to manage and exited: expected on nodes without NVSwitches (gpud: not an "
     "error there); on an NVSwitch node (HGX B200: NVLSM not running) the fabric stays uninitialised"),
    # the sample log's normal operation: NVLink multicast teams set up and released for jobs
    ("Received an inband message:  Message header details: magic Id:%x request Id:%x status:%d type:%d length:%d",
     SAMPLE, "Received an inband message:", None, "benign", "ok",
     "Fabric Manager received a request from the driver (multicast team setup/release): normal operation"),
    ("Sending inband response message:  Message header details: magic Id:%x request Id:%x status:%d type:%d "
     "length:%d",
     SAMPLE, "Sending inband response message:", None, "benign", "ok",
     "Fabric Manager answered a driver request: normal operation"),
    ("multicast group %d is allocated.", SAMPLE, "is allocated.", None, "benign", "ok",
     "an NVLink multicast group was allocated for a job: normal operation"),
    ("multicast group %d is freed.", SAMPLE, "is freed.", None, "benign", "ok",
     "an NVLink multicast group was released: normal operation"),
    ("successfully setup multicast team for request id %llu.", SAMPLE, "successfully setup multicast team", None,
     "benign", "ok", "an NVLink multicast team was set up for a job: normal operation"),
    ("successfully released multicast team with handle %llu.", SAMPLE, "successfully released multicast team",
     None, "benign", "ok", "an NVLink multicast team was released: normal operation"),
)
# Fabric Manager's start-up messages that no openly licensed source holds but NVIDIA's own issue
# trackers and the field quote verbatim (journal lines 'nv-fabricmanager[pid]: message'): (format, the
# public page that quotes it, the line of the page's text (the description) that holds the
# quote, the quoted line (copied, checked against the format here), kind, severity, meaning).
FIELD = (
    ("fabric manager NVIDIA GPU driver interface version %s don't match with driver version %s. Please update "
     "with matching NVIDIA driver package.",
     "https://github.com/NVIDIA/gpu-operator/issues/544", 12,
     "nv-fabricmanager[3228]: fabric manager NVIDIA GPU driver interface version 530.30.02 don't match with driver "
     "version 530.41.03. Please update with matching NVIDIA driver package.",
     "fabric_not_ready", CRIT,
     "Fabric Manager refused to start: its version differs from the loaded driver's (they must be the same "
     "release, e.g. after a driver upgrade without the matching nvidia-fabricmanager package, or before the "
     "reboot that loads the new driver); the NVLink fabric stays uninitialised and CUDA fails with 'system not "
     "yet initialized'"),
)
CATEGORY = {"nvswitch_sxid": "gpu_hardware", "fabric_not_ready": "driver", "benign": "healthy"}


def go_regex(text, name):
    """The value of a Go raw-string constant ``name = `...```."""
    m = re.search(r"\b%s\s*=\s*`([^`]*)`" % re.escape(name), text)
    if not m:
        raise SystemExit("gpud regex %s not found" % name)
    # Go RE2 -> Python re: the expressions here use only \d, .*, .+ and groups
    return re.compile(m.group(1))


def example_line(text, literal):
    """(line number, the line) of the first line of ``text`` holding ``literal``."""
    for n, line in enumerate(text.splitlines(), 1):
        if literal in line:
            return n, line
    raise SystemExit("example %r not found" % literal)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", required=True, help="a clone or bare mirror of github.com/leptonai/gpud")
    ap.add_argument("--rev", default=PIN)
    args = ap.parse_args(argv)
    commit = resolve(args.src, args.rev)
    texts = {p: show(args.src, commit, p) for p in (MATCHER, MATCHER_TEST, SAMPLE)}
    rows = []
    for fmt, path, literal, regex, kind, sev, mean in MESSAGES:
        line_no, example = example_line(texts[path], literal)
        frags, gaps = compile_format(fmt)
        if not match_fragments(example, frags, gaps):
            raise SystemExit("format %r does not read gpud's example %r" % (fmt, example))
        template = next(t for prefix, t in TEMPLATES if path.startswith(prefix))
        if regex and not go_regex(texts[MATCHER], regex).search(template.replace("{message}", instantiate(fmt))):
            raise SystemExit("gpud's %s does not match the format %r" % (regex, fmt))
        # every example of the message in gpud's tests is read back too
        for other in texts[MATCHER_TEST].splitlines():
            m = re.search(r'input:\s*"(.*)"', other)
            if m and literal in m.group(1) and not match_fragments(m.group(1), frags, gaps):
                raise SystemExit("format %r does not read gpud's test line %r" % (fmt, m.group(1)))
        if kind == "benign":
            rows.append((path, line_no, fmt, kind, "healthy", "ok", mean))
        else:
            rows.append((path, line_no, fmt, kind, CATEGORY[kind], sev, mean))
    for fmt, url, line_no, quoted, kind, sev, mean in FIELD:
        frags, gaps = compile_format(fmt)
        if not match_fragments(quoted, frags, gaps):
            raise SystemExit("format %r does not read the quoted line %r" % (fmt, quoted))
        rows.append((url, line_no, fmt, kind, CATEGORY[kind], sev, mean))
    doc = """\
Read: the Fabric Manager messages gpud names: the five its log matcher looks for (NVSwitch
fatal / non-fatal SXid, a multicast team naming an unknown GPU, the NVSwitch topology
mismatch that aborts Fabric Manager, NV_WARN_NOTHING_TO_DO) and the normal-operation lines of
its sample log (NVLink multicast team setup and release). Each format was written from gpud's
example lines and is checked against them (and against gpud's regex) by the generator. Left
out: the payload lines printed under an inband message ("Message payload details:..."), which
report nothing; every other Fabric Manager message (no public source holds them) but the
start-up version check's, quoted verbatim in NVIDIA's own issue tracker (FIELD: the row's file is
that page); the SXid
numbers' meanings (the NVRM/SXid tables). Lines are "[Mon DD YYYY HH:MM:SS] [LEVEL] [tid N]
message" in /var/log/fabricmanager.log, "nv-fabricmanager[pid]: message" in the journal.
Classification: an NVSwitch fatal SXid -> nvswitch_sxid critical, non-fatal -> nvswitch_sxid
warning; Fabric Manager not starting or not placing a GPU in the fabric -> fabric_not_ready
(driver: Fabric Manager state; critical, warning for NV_WARN_NOTHING_TO_DO, which is harmless
on nodes without NVSwitches); multicast team setup/release -> benign.
"""
    meta = {"EMITTER": "Fabric Manager", "PROJECT": "NVIDIA Fabric Manager (as quoted by leptonai/gpud)",
            "VERSION": "gpud " + args.rev, "COMMIT": commit, "LICENCE": LICENCE, "ORIGIN": ORIGIN,
            "GENERATOR": GENERATOR}
    path = write_table("fabricmanager", meta, MARKERS, TEMPLATES, rows, doc=doc)
    print("%s: %d rows" % (path, len(set(rows))))


if __name__ == "__main__":
    main()
