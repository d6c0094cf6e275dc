#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu-runbook contributors
# SPDX-License-Identifier: Apache-2.0

DOCUMENTATION = r"""
---
module: gpu_reset
short_description: Reset one NVIDIA GPU on a drained node, after named pre-checks, and verify it
description:
  - Resets one GPU with C(nvidia-smi -r -i <gpu>) on the node the task runs on (as root), the
    C(gpu_reset) rung of the remediation ladder.
  - "Pre-checks, in this order, each a named refusal (C(failed=true), C(blocked_by) names it,
    nothing is changed): the node is not drained (O(node_drained)); a fault that a reset cannot
    fix is among O(fault_kinds) (its rung in the taxonomy or the Xid catalog is C(reboot) or
    C(rma), for example C(gpu_fallen_off_bus), C(xid:79), C(row_remap_failure)): the result
    carries C(escalate) instead; the GPU is lost or not visible to nvidia-smi (escalate
    C(reboot)); the GPU's own state says a reset will not help (a row-remap failure read from
    C(nvidia-smi -q -x)); compute processes hold the GPU; the message names them, for
    example 'GPU 0000:3b:00.0 is held by python (pid 4711), python (pid 4712)'; then what else holds
    it (monitors, nvidia_drm, Fabric Manager and NVLink peers, see the notes)."
  - Persistence mode holds the GPU like a client and makes the reset fail with
    C(In use by another client); when it is Enabled it is released with
    C(nvidia-smi -pm 0 -i <gpu>) before the reset and, with O(restore_persistence), set back with
    C(nvidia-smi -pm 1 -i <gpu>) after it, also when the reset failed. What was done is in
    C(persistence) (and in C(released) / C(restored)).
    The persistence daemon is left to C(-pm 0) only as the main process of the C(nvidia-persistenced)
    unit; a process that merely calls itself so is a holder like any other.
  - "Reads the reset's exit code: 0 and 'successfully reset' is a reset; 255 with 'In use by
    another client' is a refusal naming the holders nvidia-smi printed; 15 is a GPU lost during
    the reset (escalate C(reboot)); 4 is no permission; anything else fails with nvidia-smi's text."
  - After a reset the GPU is read again (C(nvidia-smi -q -x -i <gpu>)) and C(after) says whether a
    pending row remap was applied, volatile uncorrectable ECC cleared and reset-required cleared;
    C(verified) is true only when all hold. A reset that is not verified is not a module
    failure; the ladder's verify rung keeps the node drained.
  - Every nvidia-smi call runs under O(timeout) (with coreutils C(timeout) when it is
    installed); a call that hangs is reported as C(nvidia_smi_hang) and escalates to C(reboot).
version_added: "0.2.0"
author: gpu-runbook contributors
options:
  gpu:
    description:
      - The GPU to reset, by PCI bus id (C(0000:3b:00.0) or C(00000000:3B:00.0)) or UUID
        (C(GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)). An index is refused on purpose, since
        indexes move when a GPU drops out.
    type: str
    required: true
  node_drained:
    description:
      - Whether the Slurm drain step confirmed that the node is drained (no jobs). The module
        refuses to act unless this is true; it does not query Slurm itself.
    type: bool
    required: true
  restore_persistence:
    description: Set persistence mode back to Enabled after the reset when it was Enabled before.
    type: bool
    default: true
  fault_kinds:
    description:
      - Finding kinds that led to this reset (taxonomy names such as C(row_remap_pending),
        C(gpu_fallen_off_bus), C(row_remap_failure)), and Xid codes as C(xid:79). A kind whose
        rung is reboot or RMA blocks the reset and sets C(escalate). An unknown name blocks it too.
    type: list
    elements: str
    default: []
  allow_mig:
    description:
      - Reset a GPU whose MIG mode is Enabled, or whose MIG mode change is pending. MIG mode survives a reset
        but its GPU instances and compute instances do not (each MIG slice, and the jobs on it, is gone until it
        is recreated, for example by nvidia-mig-parted); a pending mode change is applied by the reset. When
        false such a GPU is refused (C(mig_enabled)) before anything changes.
    type: bool
    default: false
  timeout:
    description: Seconds each nvidia-smi call may take before it is killed.
    type: int
    default: 120
  release_monitors:
    description:
      - Stop the active units of O(monitor_units) before the reset and start them after. When false an
        active one blocks the reset (C(monitors_running)).
    type: bool
    default: true
  monitor_units:
    description: The systemd units of GPU monitors that hold the GPU, in the order they are stopped.
    type: list
    elements: str
    default: [dcgm-exporter, nvidia-dcgm, dcgm]
  release_nvidia_drm:
    description: Unload an unused C(nvidia_drm) before the reset and load it after. When false a loaded one blocks the reset.
    type: bool
    default: true
  fabric_manager_unit:
    description: The Fabric Manager unit on NVSwitch systems (read only, never stopped or started).
    type: str
    default: nvidia-fabricmanager
  proc_root:
    description: Where procfs is (C(<proc_root>/modules), C(<proc_root>/<pid>/fd)).
    type: path
    default: /proc
  dev_root:
    description: Where the device nodes are (C(<dev_root>/nvidia-nvswitch*)).
    type: path
    default: /dev
extends_documentation_fragment:
  - action_common_attributes
attributes:
  check_mode:
    support: partial
    details:
      - Runs the read-only pre-checks (nvidia-smi queries, C(systemctl show), procfs, C(nvidia-smi topo -m)) and, when
        none blocks, returns the argv lists a real run would execute in RV(would_run); nothing is stopped, unloaded or
        reset. A pre-check that blocks fails the task as it would for real.
      - C(changed) stays false in check mode; a non-empty RV(would_run) is the prediction that a real run changes the GPU.
  diff_mode:
    support: none
  platform:
    platforms: posix
    details: Linux nodes with the NVIDIA driver.
requirements:
  - root on the node
  - C(nvidia-smi) (NVIDIA driver)
  - C(systemctl) (systemd) to stop and start the monitor units of O(monitor_units)
  - C(modprobe) (kmod) to unload and load C(nvidia_drm)
  - coreutils C(timeout) to bound each nvidia-smi call (optional)
notes:
  - Needs root on the node (C(nvidia-smi -r) and C(-pm) do).
  - "Other holders, each found before anything changes (procfs under O(proc_root), systemd, /proc/modules).
    DCGM: a unit of O(monitor_units) that is active (C(systemctl show)) is stopped before the reset and
    started again after it, also when the reset failed (exporter first, host engine last; back in
    reverse); a process that holds the GPU's /dev/nvidiaN and is no such unit's main process (a
    C(dcgm-exporter) in a container, an C(nvidia-smi dmon), any client) blocks the reset, named
    (C(gpu_holders)). C(nvidia_drm): loaded and used (a refcount, a process holding /dev/dri, a
    dependent module) blocks the reset, named (C(nvidia_drm_in_use)); loaded and unused it is unloaded
    with C(modprobe -r nvidia_drm) and loaded back after."
  - "NVSwitch systems (a /dev/nvidia-nvswitch* under O(dev_root), a fabric state in C(nvidia-smi -q -x),
    or the Fabric Manager unit installed): an Ampere (or unrecognised) GPU is reset alone only while
    Fabric Manager runs, else C(fabric_manager_not_running); Hopper and later have no Fabric Manager
    dependency and Fabric Manager is neither asked nor touched. A pre-Ampere GPU (or one of a model not
    recognised, such as a new board) with NVLink peers
    (C(nvidia-smi topo -m)) is refused naming the peers that must be reset with it (C(nvlink_peers));
    resetting several GPUs in one command is not done by this module."
  - "What was released is in C(released), what was put back, re-read after, in C(restored). A restore that
    fails (a unit that does not come back active, nvidia_drm not loaded, persistence not Enabled) fails
    the module (C(restore_failed)) and the message says what to start by hand."
  - A GPU whose Xid history repeats should go to RMA instead of another reset; that budget
    belongs to the ladder's per-GPU history, not to this module.
  - The rung_gpu_reset role runs it on a node the rung_drain role drained, after the ledger's decision.
seealso:
  - module: ansible.legacy.slurm_node
    description: Drains the node first; its RV(ansible.legacy.slurm_node#module:drained) feeds O(node_drained).
  - module: ansible.legacy.gpu_runbook_ledger
    description: Decides whether this GPU gets another reset or goes to RMA, and records the result.
  - module: ansible.legacy.gpu_health_facts
    description: Gathers the findings whose kinds go into O(fault_kinds), and re-checks the GPU after the ladder.
  - name: nvidia-smi documentation
    description: The C(-r) / C(--gpu-reset) and C(-pm) options and the exit codes.
    link: https://docs.nvidia.com/deploy/nvidia-smi/index.html
  - name: NVIDIA Xid errors
    description: Which Xids a GPU reset can clear and which need a reboot or an RMA.
    link: https://docs.nvidia.com/deploy/xid-errors/index.html
  - name: NVIDIA GPU memory error management
    description: Pending row remaps are applied by a GPU reset; a row-remap failure is an RMA.
    link: https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html
  - name: NVIDIA Fabric Manager user guide
    description: GPU reset on NVSwitch systems and what Fabric Manager must be doing meanwhile.
    link: https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/index.html
"""

EXAMPLES = r"""
- name: Reset the GPU with a pending row remap (the node is drained)
  gpu_reset:
    gpu: "0000:3b:00.0"
    node_drained: "{{ gpu_runbook_drain_result.drained }}"
    fault_kinds: [row_remap_pending, ecc_uncorrectable_volatile]
  register: reset
  become: true

- name: Reset on a node whose DCGM runs under site-specific unit names (stopped, then started again)
  gpu_reset:
    gpu: "0000:3b:00.0"
    node_drained: true
    monitor_units: [dcgm-exporter, nvidia-dcgm]
    release_nvidia_drm: false       # a loaded nvidia_drm then blocks, named
  register: reset
  become: true

- name: Plan only
  gpu_reset:
    gpu: GPU-4a7b2c1d-0000-1111-2222-333344445555
    node_drained: true
  check_mode: true
  register: plan
"""

RETURN = r"""
gpu:
  description: The GPU as identified by nvidia-smi (PCI bus id, UUID, index).
  returned: when it was found
  type: dict
  sample: {"pci": "0000:3b:00.0", "uuid": "GPU-...", "index": 2}
blocked_by:
  description:
    - What refused the reset, by name. One or more of
      node_not_drained, bad_gpu_id, bad_timeout, bad_unit_name, bad_parameter, unknown_fault_kind,
      fault_not_fixable_by_reset, nvidia_smi_missing, gpu_lost, gpu_not_visible, nvidia_smi_hang,
      gpu_state_unreadable, mig_enabled, compute_processes, gpu_holders, gpu_holders_unreadable, monitors_running,
      monitor_stop_failed, nvidia_drm_in_use, nvidia_drm_loaded, nvidia_drm_unload_failed,
      fabric_manager_not_running, nvlink_peers, nvlink_topology_unreadable, persistence_release_failed,
      gpu_in_use, no_permission, reset_failed, restore_failed.
  returned: on refusal
  type: list
  elements: str
  sample: [compute_processes]
escalate:
  description: The rung to climb instead (reboot or rma) when a reset cannot fix what the GPU has.
  returned: when a reset cannot help
  type: str
  sample: reboot
holders:
  description: Compute processes that hold the GPU, as nvidia-smi listed them.
  returned: when compute processes hold the GPU
  type: list
  elements: dict
  sample: [{"pid": 4711, "process": "python", "pci": "0000:3b:00.0"}]
persistence:
  description: Persistence mode before the reset and what was done with it.
  returned: when the GPU was found
  type: dict
  sample: {"before": true, "released": true, "restored": true}
mig:
  description:
    - The GPU's MIG mode (current and pending, as C(nvidia-smi -q -x) reports them; null where the GPU has none)
      and C(changes), what a reset would do to its MIG setup (null when nothing).
  returned: when the GPU was read
  type: dict
  sample: {"mode": "Enabled", "pending": "Enabled", "changes": "MIG mode is Enabled: a reset destroys its GPU instances ..."}
holding:
  description:
    - What else was found holding the GPU before anything changed - C(units) (active monitor units
      to stop, with state and main pid), C(processes) (bare holders), C(nvidia_drm) (loaded, refcount,
      users), C(fabric) (generation, NVSwitch evidence, Fabric Manager state, NVLink peers).
  returned: when the GPU was found and had no compute process
  type: dict
released:
  description: What was released before the reset, in order (kind unit, nvidia_drm or persistence; name; argv; ok).
  returned: when the reset was attempted or a release failed
  type: list
  elements: dict
  sample: [{"kind": "unit", "name": "dcgm-exporter", "argv": ["/usr/bin/systemctl", "stop", "dcgm-exporter"], "ok": true}]
restored:
  description:
    - What was put back after the reset (also after a failed one), re-read afterwards - C(ok) is the re-read
      state, C(state) what was read, C(by_hand) the command to run when it is not back.
  returned: when something was released
  type: list
  elements: dict
  sample: [{"kind": "unit", "name": "dcgm-exporter", "ok": true, "state": "active", "by_hand": "systemctl start dcgm-exporter"}]
reset:
  description: How nvidia-smi -r ended (outcome reset, in_use, gpu_lost, no_permission, timeout or
    failed; the rc, its message and the holder text nvidia-smi printed).
  returned: when the reset ran
  type: dict
  sample: {"outcome": "reset", "rc": 0, "message": "GPU 00000000:3B:00.0 was successfully reset.", "reset": ["0000:3b:00.0"],
           "held": [], "holder_text": "", "escalate": null}
before:
  description: The GPU's reset-relevant state before (row remap pending, volatile uncorrectable ECC, reset required).
  returned: when the GPU was read
  type: dict
after:
  description: The same, read again after the reset, with the reasons it is not verified.
  returned: when the reset ran
  type: dict
verified:
  description: True only when after the reset no remap is pending, no volatile uncorrectable ECC and no reset required is left.
  returned: always
  type: bool
  sample: true
commands:
  description: The argv lists that changed something (systemctl stop/start, modprobe -r/modprobe, nvidia-smi -pm/-r), in order.
  returned: always
  type: list
  elements: list
  sample: [["/usr/bin/nvidia-smi", "-pm", "0", "-i", "0000:3b:00.0"], ["/usr/bin/nvidia-smi", "-r", "-i", "0000:3b:00.0"],
           ["/usr/bin/nvidia-smi", "-pm", "1", "-i", "0000:3b:00.0"]]
would_run:
  description: In check mode, the argv lists a real run would execute, in order.
  returned: in check mode when no pre-check blocks
  type: list
  elements: list
  sample: [["/usr/bin/systemctl", "stop", "dcgm-exporter"], ["/usr/bin/nvidia-smi", "-r", "-i", "0000:3b:00.0"],
           ["/usr/bin/nvidia-smi", "-q", "-x", "-i", "0000:3b:00.0"], ["/usr/bin/systemctl", "start", "dcgm-exporter"]]
"""

import errno
import glob
import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.gpu_runbook.nvsmi import parse_compute_apps_csv, parse_nvidia_smi, parse_nvidia_smi_failure
from ansible.module_utils.gpu_runbook.nvsmi.reset import (IDENTITY_FIELDS, after_reset, find_gpu, holders_message,
                                                         parse_gpu_id, parse_identity_csv,
                                                         parse_persistence_output, parse_reset_output,
                                                         mig_blocker, says_lost, says_not_found)
# the one rule for "a reset cannot fix this", the plan's too
from ansible.module_utils.gpu_runbook.reset_rule import reset_cannot_fix
from ansible.module_utils.gpu_runbook.validate import problems
from ansible.module_utils.gpu_runbook.nvsmi.holders import (DRM_MODULE, FABRIC_MANAGER_UNIT, MONITOR_UNITS,
                                                           PERSISTENCE_UNIT, classify_holders, drm_state, fabric_verdict, generation,
                                                           monitor_refusal, not_restored, nvlink_peer_list,
                                                           nvswitch_evidence, parse_proc_modules, parse_systemctl_show,
                                                           peers_message, reset_plan, unit_state, who)

APPS_FIELDS = ("pid", "process_name", "gpu_bus_id")
_REFUSAL_NAMES = {"in_use": "gpu_in_use", "gpu_lost": "gpu_lost", "no_permission": "no_permission",
                  "timeout": "nvidia_smi_hang", "failed": "reset_failed"}


class Refusal(Exception):
    """A pre-check (or step) that stops the reset: ``blocked`` names it, ``extra`` goes into the result."""

    def __init__(self, blocked, msg, **extra):
        Exception.__init__(self, msg)
        self.blocked = blocked
        self.msg = msg
        self.extra = extra


class Smi(object):
    """nvidia-smi through run_command, argv lists only, each call under the deadline."""

    def __init__(self, module, timeout):
        self.module = module
        self.timeout = timeout
        self.bin = module.get_bin_path("nvidia-smi")
        self.timeout_bin = module.get_bin_path("timeout")
        self.changes = []

    def argv(self, *args):
        return [self.bin] + list(args)

    def run(self, *args, **kw):
        argv = self.argv(*args)
        if kw.get("changes"):
            self.changes.append(argv)
        full = argv
        if self.timeout_bin:
            full = [self.timeout_bin, "-k", "5", str(self.timeout)] + argv
        rc, out, err = self.module.run_command(full, errors="surrogate_then_replace")
        return rc, out or "", err or ""


def _summary(facts, pci):
    a = after_reset(facts, pci)
    return {k: a[k] for k in ("found", "remap_pending", "retired_pages_pending", "volatile_uncorrectable",
                              "reset_required", "errors")}


def precheck_faults(fault_kinds):
    verdict = reset_cannot_fix(fault_kinds)
    if verdict["unknown"]:
        raise Refusal("unknown_fault_kind", "unknown fault kind(s) %s: not resetting on a fault nobody declared "
                      "(taxonomy kinds, or xid:<code>)" % ", ".join(verdict["unknown"]))
    if verdict["escalate"]:
        raise Refusal("fault_not_fixable_by_reset", "a GPU reset cannot fix %s: escalate to %s instead"
                      % (", ".join(verdict["blocking"]), verdict["escalate"]), escalate=verdict["escalate"])


def find_target(smi, kind, value, asked):
    """The GPU row from --query-gpu (pci, uuid, index, persistence), or a Refusal."""
    rc, out, err = smi.run("--query-gpu=" + ",".join(IDENTITY_FIELDS), "--format=csv,noheader", "-i", value)
    text = out + "\n" + err
    if rc in (124, 137):
        raise Refusal("nvidia_smi_hang", "nvidia-smi did not answer within %ds: the GPU or driver is wedged; "
                      "escalate to reboot" % smi.timeout, escalate="reboot")
    if says_lost(text, rc):
        raise Refusal("gpu_lost", "GPU %s is lost (nvidia-smi exit %s: %s); a reset cannot reach it: escalate to "
                      "reboot" % (asked, rc, _first(text)), escalate="reboot")
    if says_not_found(text, rc):
        raise Refusal("gpu_not_visible", "nvidia-smi does not see GPU %s (%s): if the id is right the GPU is "
                      "gone from the bus; escalate to reboot" % (asked, _first(text)), escalate="reboot")
    if rc != 0:
        facts, findings = parse_nvidia_smi_failure(text, rc)
        raise Refusal("gpu_state_unreadable", "nvidia-smi failed reading GPU %s: %s"
                      % (asked, findings[0]["message"] if findings else _first(text)))
    row = find_gpu(parse_identity_csv(out), kind, value)
    if row is None:
        raise Refusal("gpu_state_unreadable", "could not read GPU %s from nvidia-smi --query-gpu (it printed: %s)"
                      % (asked, _first(text) or "nothing"))
    return row


def precheck_state(smi, pci):
    """-q -x before: the GPU's own state; a row-remap failure and the like -> escalate."""
    rc, out, err = smi.run("-q", "-x", "-i", pci)
    if rc in (124, 137):
        raise Refusal("nvidia_smi_hang", "nvidia-smi -q -x did not answer within %ds: escalate to reboot"
                      % smi.timeout, escalate="reboot")
    facts, findings = parse_nvidia_smi(out, "nvidia-smi-q.xml")
    before = _summary(facts, pci)
    if rc != 0 or not before["found"]:
        raise Refusal("gpu_state_unreadable", "could not read GPU %s with nvidia-smi -q -x (exit %s: %s)"
                      % (pci, rc, _first(err + "\n" + out) or "nothing printed"), before=before)
    kinds = sorted({f["kind"] for f in findings if (f.get("gpu") or {}).get("pci") in (None, pci)})
    verdict = reset_cannot_fix([k for k in kinds if k != "xid"])
    if verdict["escalate"]:
        raise Refusal("fault_not_fixable_by_reset", "GPU %s reports %s: a reset cannot fix it; escalate to %s"
                      % (pci, ", ".join(verdict["blocking"]), verdict["escalate"]),
                      escalate=verdict["escalate"], before=before)
    return before, next(g for g in facts["gpus"] if g.get("pci") == pci)


def precheck_mig(p, pci, g, result):
    """MIG: a reset destroys the GPU's instances (or applies a pending mode change): only when allowed."""
    why = mig_blocker(g)
    result["mig"] = {"mode": g.get("mig_mode"), "pending": g.get("mig_mode_pending"), "changes": why}
    if why and not p["allow_mig"]:
        raise Refusal("mig_enabled", "GPU %s: %s; not resetting it (allow_mig=true resets it anyway)" % (pci, why))


def precheck_processes(smi, pci):
    rc, out, err = smi.run("--query-compute-apps=" + ",".join(APPS_FIELDS), "--format=csv,noheader", "-i", pci)
    if rc != 0:
        raise Refusal("gpu_state_unreadable", "could not list the compute processes on GPU %s (exit %s: %s); "
                      "not resetting blind" % (pci, rc, _first(err + "\n" + out) or "nothing printed"))
    procs = [p for p in parse_compute_apps_csv(out, fields=list(APPS_FIELDS)) if p["pci"] in (None, pci)]
    if procs:
        raise Refusal("compute_processes", holders_message(pci, procs) + "; stop them (or wait for the drain) "
                      "and run again", holders=procs)


def _first(text):
    return next((line.strip() for line in (text or "").splitlines() if line.strip()), "")[:200]


class Node(object):
    """systemctl, modprobe and procfs of the node: argv lists only; what changes goes to ``changes``."""

    def __init__(self, module, p, changes):
        self.module, self.p, self.changes = module, p, changes
        self.systemctl = module.get_bin_path("systemctl")
        self.modprobe = module.get_bin_path("modprobe")

    def run(self, argv, change=False):
        if change:
            self.changes.append(argv)
        rc, out, err = self.module.run_command(argv, errors="surrogate_then_replace")
        return rc, out or "", err or ""

    def unit(self, name):
        if not self.systemctl:
            return unit_state({}, name)
        _rc, out, _err = self.run([self.systemctl, "show", name, "--property=LoadState,ActiveState,MainPID"])
        return unit_state(parse_systemctl_show(out), name)

    def modules(self):
        path = os.path.join(self.p["proc_root"], "modules")
        try:
            with open(path) as fh:
                return parse_proc_modules(fh.read())
        except (IOError, OSError) as exc:
            if exc.errno == errno.ENOENT and os.path.isdir(os.path.join(self.p["proc_root"], "self")):
                return {}  # a kernel built without loadable modules: nvidia_drm cannot be a loaded module
            raise Refusal("gpu_holders_unreadable", "cannot read %s (%s): cannot tell whether nvidia_drm is loaded"
                          % (path, exc.strerror))

    def processes(self):
        """-> ([{"pid", "comm", "devices"}] with a /dev/nvidia* or /dev/dri node open, count of unreadable fd dirs)."""
        root = self.p["proc_root"]
        try:
            names = [n for n in os.listdir(root) if n.isdigit() and n != str(os.getpid())]
        except OSError as exc:
            raise Refusal("gpu_holders_unreadable", "cannot list %s (%s): cannot tell what holds the GPU"
                          % (root, exc.strerror))
        out, unreadable = [], 0
        for name in sorted(names, key=int):
            fd_dir = os.path.join(root, name, "fd")
            try:
                links = [os.path.join(fd_dir, fd) for fd in os.listdir(fd_dir)]
            except OSError as exc:
                unreadable += int(exc.errno in (errno.EACCES, errno.EPERM))
                continue
            devices = sorted(set(t[5:] for t in map(_readlink, links) if t.startswith(("/dev/nvidia", "/dev/dri/"))))
            if devices:
                out.append({"pid": int(name), "comm": _read(os.path.join(root, name, "comm")), "devices": devices})
        return out, unreadable


def _readlink(path):
    try:
        return os.readlink(path)
    except OSError:
        return ""


def _read(path):
    try:
        with open(path) as fh:
            return fh.read().strip()[:64]
    except (IOError, OSError):
        return "?"


def precheck_holders(node, smi, p, row, g, hold):
    """What else holds the GPU -> fills ``hold`` (units to stop, nvidia_drm, fabric), or a Refusal naming it."""
    pci = row["pci"]
    units = [node.unit(u) for u in dict.fromkeys(p["monitor_units"])] if node.systemctl else []
    hold["units"] = [u for u in units if u["active"]]
    procs, hold["unreadable"] = node.processes()
    daemon = node.unit(PERSISTENCE_UNIT) if node.systemctl else {"active": False, "pid": None}
    _owned, hold["processes"] = classify_holders(procs, g.get("minor_number"),
                                                 dict((u["pid"], u["name"]) for u in hold["units"] if u["pid"]),
                                                 [daemon["pid"]] if daemon["active"] and daemon["pid"] else [])
    refusal = monitor_refusal(pci, hold["processes"], hold["units"], p["release_monitors"])
    if refusal:
        raise Refusal(*refusal)
    drm = hold["nvidia_drm"] = drm_state(node.modules(), procs)
    if drm["in_use"]:
        raise Refusal("nvidia_drm_in_use", drm["message"])
    if drm["loaded"] and not (p["release_nvidia_drm"] and node.modprobe):
        raise Refusal("nvidia_drm_loaded", "nvidia_drm is loaded and holds GPU %s; %s" % (
            pci, "release_nvidia_drm is false: unload it (modprobe -r nvidia_drm) first" if node.modprobe
            else "modprobe is not installed to unload it"))
    # NVSwitch, Fabric Manager, NVLink peers: Hopper and later have no FM dependency (nothing asked or touched)
    gen = generation(g.get("name"))
    fab = hold["fabric"] = {"generation": gen, "name": g.get("name"), "nvswitch": [], "fabric_manager": None,
                            "peers": []}
    if gen == "hopper_plus":
        return
    fab["fabric_manager"] = fm = node.unit(p["fabric_manager_unit"]) if node.systemctl else None
    fab["nvswitch"] = nvswitch_evidence(sorted(glob.glob(os.path.join(p["dev_root"], "nvidia-nvswitch*"))),
                                        g.get("fabric_state"), fm)
    verdict = fabric_verdict(gen, g.get("name"), fab["nvswitch"], fm)
    if verdict:
        raise Refusal(*verdict)
    # pre-Ampere NVLink peers are reset together; a model not known here is asked the same (on doubt)
    if gen in ("pre_ampere", None):
        fab["peers"] = nvlink_peers(smi, row)
        if fab["peers"]:
            raise Refusal("nvlink_peers", peers_message(pci, fab["peers"], gen, g.get("name")))


def nvlink_peers(smi, row):
    """[{"index", "pci"}] of the GPU's NVLink peers, from ``nvidia-smi topo -m``; a Refusal when unreadable."""
    rc, out, err = smi.run("topo", "-m")
    _rc, ids, _err = smi.run("--query-gpu=" + ",".join(IDENTITY_FIELDS), "--format=csv,noheader")
    peers = nvlink_peer_list(out if rc == 0 else "", row["index"], parse_identity_csv(ids))
    if peers is None:
        raise Refusal("nvlink_topology_unreadable", "could not read the NVLink peers of GPU %s (pre-Ampere or unrecognised) from "
                      "nvidia-smi topo -m (exit %s: %s): not resetting one GPU of a possible NVLink set blind"
                      % (row["pci"], rc, _first(err + "\n" + out) or "no row for GPU %s" % row["index"]))
    return peers


def release(node, hold, released, pci, minor):
    """Stop the monitor units, unload nvidia_drm; then nothing may hold the GPU any more."""
    for u in hold["units"]:
        argv = [node.systemctl, "stop", u["name"]]
        rc, out, err = node.run(argv, change=True)
        released.append({"kind": "unit", "name": u["name"], "argv": argv, "ok": rc == 0})
        if rc != 0:
            raise Refusal("monitor_stop_failed", "could not stop %s before resetting GPU %s (systemctl exit %s: %s)"
                          % (u["name"], pci, rc, _first(err + "\n" + out) or "nothing printed"))
    if hold["nvidia_drm"]["loaded"]:
        argv = [node.modprobe, "-r", DRM_MODULE]
        rc, out, err = node.run(argv, change=True)
        released.append({"kind": "nvidia_drm", "name": DRM_MODULE, "argv": argv, "ok": rc == 0})
        if rc != 0:
            raise Refusal("nvidia_drm_unload_failed", "could not unload nvidia_drm before resetting GPU %s "
                          "(modprobe exit %s: %s)" % (pci, rc, _first(err + "\n" + out) or "nothing printed"))
    if released:
        procs, _unreadable = node.processes()
        _owned, left = classify_holders(procs, minor, {})
        if left:
            raise Refusal("gpu_holders", "GPU %s is still held by %s after releasing %s: not resetting"
                          % (pci, who(left), ", ".join(r["name"] for r in released)))


def restore(node, released):
    """Put back (in reverse) the units and nvidia_drm that ``release`` released; each one re-read."""
    out = []
    for r in reversed(released):
        if r["kind"] == "unit":
            argv = [node.systemctl, "start", r["name"]]
            rc, so, se = node.run(argv, change=True)
            st = node.unit(r["name"])
            ok, state, by_hand = st["active"], st["state"], "systemctl start %s" % r["name"]
        elif r["kind"] == "nvidia_drm":
            argv = [node.modprobe, DRM_MODULE]
            rc, so, se = node.run(argv, change=True)
            try:
                ok = DRM_MODULE in node.modules()
            except Refusal:
                ok = False
            state, by_hand = "loaded" if ok else "not loaded", "modprobe %s" % DRM_MODULE
        else:
            continue
        item = {"kind": r["kind"], "name": r["name"], "argv": argv, "ok": ok, "state": state, "by_hand": by_hand}
        if not ok:
            item["error"] = "exit %s: %s" % (rc, _first(se + "\n" + so) or "nothing printed")
        out.append(item)
    return out


def release_persistence(smi, pci, pers, released):
    argv = smi.argv("-pm", "0", "-i", pci)
    rc, out, err = smi.run("-pm", "0", "-i", pci, changes=True)
    res = parse_persistence_output(out + "\n" + err, rc)
    released.append({"kind": "persistence", "name": pci, "argv": argv, "ok": res["ok"]})
    if not res["ok"]:
        raise Refusal("gpu_lost" if res["outcome"] == "gpu_lost" else "persistence_release_failed",
                      "could not disable persistence mode on GPU %s before the reset: %s" % (pci, res["message"]),
                      escalate="reboot" if res["outcome"] == "gpu_lost" else None)
    pers["released"] = True


def restore_persistence(smi, pci, pers, restored):
    argv = smi.argv("-pm", "1", "-i", pci)
    rc, out, err = smi.run("-pm", "1", "-i", pci, changes=True)
    res = parse_persistence_output(out + "\n" + err, rc)
    _rc, q, _err = smi.run("--query-gpu=persistence_mode", "--format=csv,noheader", "-i", pci)
    pers["restored"] = res["ok"] and q.strip() == "Enabled"
    item = {"kind": "persistence", "name": pci, "argv": argv, "ok": pers["restored"], "state": q.strip()[:40],
            "by_hand": "nvidia-smi -pm 1 -i %s" % pci}
    if not pers["restored"]:
        pers["restore_error"] = item["error"] = res["message"]
    restored.append(item)


def do_reset(smi, pci, pers, restore_pm, released, restored):
    """-pm 0, -r, -pm 1 (on every path once released), -q -x. -> result dict (raises Refusal)."""
    if pers["before"]:
        release_persistence(smi, pci, pers, released)
    rc, out, err = smi.run("-r", "-i", pci, changes=True)
    res = parse_reset_output(out + "\n" + err, rc)
    res["rc"] = rc
    if pers["released"] and restore_pm and res["outcome"] != "gpu_lost":
        restore_persistence(smi, pci, pers, restored)
    if res["outcome"] != "reset":
        msg = "GPU %s was not reset: %s" % (pci, res["message"])
        if res["outcome"] == "in_use" and res["holder_text"]:
            msg += " -- nvidia-smi says: %s (a DCGM host engine, dcgm-exporter, nvidia-smi monitor or " \
                   "Fabric Manager may hold it)" % res["holder_text"][:300]
        raise Refusal(_REFUSAL_NAMES[res["outcome"]], msg, escalate=res["escalate"], reset=res)
    rc2, out2, _err2 = smi.run("-q", "-x", "-i", pci)
    facts, _findings = parse_nvidia_smi(out2 if rc2 == 0 else "", "nvidia-smi-q.xml")
    return res, after_reset(facts, pci)


def prechecks(module, p, smi, node, result):
    """Every read-only pre-check, in order -> (row, persistence dict, hold dict); fills ``result``."""
    if not p["node_drained"]:
        raise Refusal("node_not_drained", "node is not drained: a GPU reset kills whatever runs on the GPU, so it "
                      "runs only on a node the drain step confirmed as drained (node_drained=true)")
    kind, value = parse_gpu_id(p["gpu"])
    if kind is None:
        raise Refusal("bad_gpu_id", value)
    precheck_faults(p["fault_kinds"])
    if not smi.bin:
        raise Refusal("nvidia_smi_missing", "nvidia-smi is not installed or not on PATH: cannot check or reset GPU %s"
                      % p["gpu"])
    row = find_target(smi, kind, value, p["gpu"])
    result["gpu"] = {"pci": row["pci"], "uuid": row["uuid"], "index": row["index"]}
    pers = result["persistence"] = {"before": row["persistence"], "released": False, "restored": False}
    result["before"], g = precheck_state(smi, row["pci"])
    precheck_mig(p, row["pci"], g, result)
    precheck_processes(smi, row["pci"])
    hold = result["holding"] = {"units": [], "processes": [], "nvidia_drm": None, "fabric": None, "unreadable": 0}
    precheck_holders(node, smi, p, row, g, hold)
    return row, pers, hold, g


def run(module, p, smi, node):
    result = {"changed": False, "verified": False, "commands": smi.changes}
    try:
        row, pers, hold, g = prechecks(module, p, smi, node, result)
    except Refusal as exc:
        exc.extra.update((k, v) for k, v in result.items() if k not in exc.extra and k != "changed")
        raise
    pci = row["pci"]
    if module.check_mode:
        result["would_run"] = reset_plan(smi.bin, node.systemctl, node.modprobe, pci, pers["before"],
                                         p["restore_persistence"], hold)
        result["msg"] = "check mode: every pre-check passed; would reset GPU %s" % pci
        return result
    released, restored = result["released"], result["restored"] = [], []
    failure = None
    try:
        release(node, hold, released, pci, g.get("minor_number"))
        result["reset"], result["after"] = do_reset(smi, pci, pers, p["restore_persistence"], released, restored)
    except Refusal as exc:
        failure = exc
    finally:
        restored.extend(restore(node, released))
    bad = [r for r in restored if not r["ok"]]
    if failure is not None:
        failure.extra.update((k, v) for k, v in result.items() if k not in failure.extra)
        failure.extra["changed"] = bool(bad) or (pers["released"] and not pers["restored"])
        if bad:
            failure.blocked = [failure.blocked, "restore_failed"]
            failure.msg += "; and " + not_restored(bad)
        raise failure
    result["changed"] = True
    result["verified"] = result["after"]["verified"]
    result["msg"] = "GPU %s reset%s" % (pci, ", verified" if result["verified"] else
                                        "; NOT verified: " + "; ".join(result["after"]["not_verified"]))
    if bad:
        msg = result.pop("msg") + "; but " + not_restored(bad)
        raise Refusal("restore_failed", msg, **result)
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            gpu=dict(type="str", required=True),
            node_drained=dict(type="bool", required=True),
            restore_persistence=dict(type="bool", default=True),
            fault_kinds=dict(type="list", elements="str", default=[]),
            allow_mig=dict(type="bool", default=False),
            timeout=dict(type="int", default=120),
            release_monitors=dict(type="bool", default=True),
            monitor_units=dict(type="list", elements="str", default=list(MONITOR_UNITS)),
            release_nvidia_drm=dict(type="bool", default=True),
            fabric_manager_unit=dict(type="str", default=FABRIC_MANAGER_UNIT),
            proc_root=dict(type="path", default="/proc"),
            dev_root=dict(type="path", default="/dev"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if p["timeout"] < 1:
        module.fail_json(msg="timeout must be at least 1 second", blocked_by=["bad_timeout"], changed=False)
    # unit names reach systemctl's argv: none may read as an option or hold a newline
    bad_units = problems(dict(p, fabric_manager_unit=[p["fabric_manager_unit"]]),
                         {"monitor_units": "unit", "fabric_manager_unit": "unit"})
    if bad_units:
        module.fail_json(msg="; ".join(bad_units),
                         blocked_by=["bad_unit_name"], changed=False)
    bad_paths = problems(p, {"proc_root": "path", "dev_root": "path"})
    if bad_paths:
        module.fail_json(msg="; ".join(bad_paths), blocked_by=["bad_parameter"], changed=False)
    smi = Smi(module, p["timeout"])
    node = Node(module, p, smi.changes)
    try:
        result = run(module, p, smi, node)
    except Refusal as exc:
        out = {"changed": False, "verified": False, "commands": smi.changes,
               "blocked_by": exc.blocked if isinstance(exc.blocked, list) else [exc.blocked]}
        out.update({k: v for k, v in exc.extra.items() if v is not None and k not in ("msg", "blocked_by")})
        module.fail_json(msg=exc.msg, **out)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
