#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu-runbook contributors
# SPDX-License-Identifier: Apache-2.0

DOCUMENTATION = r"""
---
module: gpu_health_facts
short_description: Gather GPU (Xid, ECC, row remap), kernel-log and InfiniBand health in one round trip
description:
  - Runs every probe on the host in parallel under one deadline (O(probe_timeout)) and
    returns the parsed facts, the findings and the host verdict as C(ansible_facts.gpu_health).
  - Probes are C(nvidia-smi -q -x), C(nvidia-smi --query-compute-apps), the kernel log
    (C(dmesg -T), C(journalctl -k) and C(/var/log/kern.log), all three at once; the best that
    answered is used, in that order) and the InfiniBand sysfs tree. Optional probes are
    C(ibstat) and C(perfquery -x). Tools are looked up on PATH, then in C(/usr/local/sbin),
    C(/usr/sbin) and C(/sbin) (as Ansible's get_bin_path does).
  - A hanging probe is itself a finding naming the source and how long it was waited for
    (a wedged GPU hangs nvidia-smi, a wedged HCA hangs a sysfs read); a missing tool or
    permission denied is a finding plus a fallback, never a module failure. A failing
    nvidia-smi is read for its cause (driver/library mismatch, driver not loaded, ...) and
    is never taken as healthy.
  - With O(capture_dir) nothing is run; captured files are read instead (offline replay).
    Kernel logs there are streamed whole, whatever their size, name, compression (gzip) or
    encoding (UTF-16); a capture cut short, bigger than the read cap or unreadable is a
    finding, never dropped silently.
  - Read-only; supports check mode.
version_added: "0.1.0"
author: gpu-runbook contributors
options:
  capture_dir:
    description:
      - Directory of captured outputs (C(kern.log), C(nvidia-smi-q.xml), C(nvidia-smi-q.txt),
        C(nvidia-smi.txt), C(ib-sysfs.txt), C(ibstat.txt), C(perfquery.txt), ...) to analyse
        instead of running probes.
    type: path
  probes:
    description: Probes to run in live mode.
    type: list
    elements: str
    choices: [nvidia_smi, compute_apps, kernel_log, ib_sysfs, ibstat, perfquery]
    default: [nvidia_smi, compute_apps, kernel_log, ib_sysfs]
  probe_timeout:
    description:
      - One deadline, in seconds, for the whole gather. Every probe runs concurrently and must
        answer by it; a probe that has not (a hung tool, a sysfs read stuck in the kernel) is
        reported as hung and every process the module started that still runs is killed with
        its process group. The module returns within about O(probe_timeout) + 3 seconds.
      - 1 to 3600. A value outside fails the module before any probe runs (C(setting_error)).
    type: int
    default: 30
  since:
    description:
      - Only kernel-log events at or after this time count (ISO 8601, for example the job's
        start time). Older events are ignored. A time without a zone is in O(tz).
    type: str
  not_before:
    description:
      - "A lower bound of the kernel-log window that O(since) cannot lower - typically the time
        the remediation ladder last verified this host healthy after a fix (C(gpu_runbook_ledger
        action=resolved)): evidence from before a verified fix is not evidence again."
      - The window starts at the later of O(since) and O(not_before); C(window.bound) in the
        result says which one it was. ISO 8601, with or without a zone (read as O(since) is).
        A value that is not a time fails the module (a fix's bound is never silently dropped).
    type: str
  sysfs_root:
    description: Root of the sysfs tree holding C(class/infiniband).
    type: path
    default: /sys
  kern_log_path:
    description: Syslog file used when neither dmesg nor journald answer usefully (its last 64 MiB).
    type: path
    default: /var/log/kern.log
  tz:
    description:
      - Time zone of log times written without one (C(dmesg -T), syslog), as an offset
        (C(+09:00)) or an IANA name (C(Asia/Seoul)). Defaults to the local zone of the machine
        the module runs on (the node itself in live mode).
    type: str
  expected_gpus:
    description: GPUs this host should show; fewer is a critical finding. Not negative.
    type: int
  expected_ib_rate:
    description: Expected InfiniBand port rate in Gb/s; a slower port is a degraded link. Not negative.
    type: float
  expected_ib_devices:
    description: HCA names that must be present (for example mlx5_0 ... mlx5_7).
    type: list
    elements: str
  ib_counter_thresholds:
    description: Overrides of the IB error-counter thresholds, by counter name.
    type: dict
  hostname:
    description: Name to report the host under (defaults to the node's hostname).
    type: str
extends_documentation_fragment:
  - action_common_attributes
  - action_common_attributes.facts
attributes:
  check_mode:
    support: full
    details: Every probe only reads, so check mode runs them as a normal run does; C(changed) is always false.
  diff_mode:
    support: none
  facts:
    support: full
  platform:
    platforms: posix
    details: Linux GPU nodes (procfs, sysfs, the kernel log). With O(capture_dir) any host with Python 3 (offline replay).
requirements:
  - Python 3 on the node
  - C(nvidia-smi) (NVIDIA driver) for the GPU probes; without it the GPU is a finding, never healthy
  - C(dmesg) (util-linux) or C(journalctl) (systemd) for the kernel log, else a readable O(kern_log_path)
  - InfiniBand sysfs (C(<sysfs_root>/class/infiniband), rdma-core or MLNX_OFED)
  - C(ibstat) and C(perfquery) (infiniband-diags) only for the probes of those names
notes:
  - Needs root for the kernel log where C(kernel.dmesg_restrict=1).
  - The gpu_health role runs it on every host and registers C(gpu_health_result); the rung_verify role runs it again
    after the remediation ladder, with O(since) set to when the ladder started.
seealso:
  - module: ansible.legacy.gpu_runbook_report
    description: Aggregates every host's result into the cluster view, the job's culprit and the report files.
  - module: ansible.legacy.gpu_runbook_ledger
    description: Its C(action=resolved) gives the time for O(not_before).
  - name: NVIDIA Xid errors
    description: What each Xid code means and the catalog of resolutions the taxonomy follows.
    link: https://docs.nvidia.com/deploy/xid-errors/index.html
  - name: NVIDIA GPU memory error management
    description: Row remapping, pending remaps and when they need a GPU reset.
    link: https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html
  - name: nvidia-smi documentation
    description: The C(-q) report and C(--query-compute-apps) this module parses.
    link: https://docs.nvidia.com/deploy/nvidia-smi/index.html
  - name: sysfs-class-infiniband (Linux kernel ABI)
    description: The port state, rate and error counters read from sysfs.
    link: https://www.kernel.org/doc/Documentation/ABI/stable/sysfs-class-infiniband
"""

EXAMPLES = r"""
- name: Gather GPU / IB health on every node in one round trip
  gpu_health_facts:
    expected_gpus: 8
    expected_ib_rate: 400
    since: "2026-12-02T09:00:00"

- name: Gather again after a verified fix; older Xids do not count
  gpu_health_facts:
    since: "2026-12-02T09:00:00"
    not_before: "2026-12-02T11:42:10+00:00"

- name: Replay captured outputs (no commands run)
  gpu_health_facts:
    capture_dir: /srv/captures/gpu-r3-n04
  delegate_to: localhost
"""

RETURN = r"""
setting_error:
  description:
    - True when the module failed on its own arguments (a probe_timeout out of range, a capture
      directory that is not there, a not_before that is not a time, ...), before any probe ran.
      A playbook can stop on it and still keep a host whose probes broke as a suspect.
  returned: failure
  type: bool
  sample: true
ansible_facts:
  description: Facts added under C(gpu_health).
  returned: success
  type: dict
  contains:
    gpu_health:
      description: The host's analysis.
      returned: always
      type: dict
      contains:
        host: {description: Host name., returned: always, type: str}
        verdict:
          description: healthy, gpu_hardware, driver, ib_network, nccl_config, nccl_deadlock,
            application, dataloader, memory_leak or unknown.
          returned: always
          type: str
        severity: {description: "ok, info, warning or critical.", returned: always, type: str}
        confidence:
          description:
            - How sure the verdict is - high, medium or low. High is a critical finding read from a primary
              hardware source (a catalogued Xid, nvidia-smi ECC / row-remap counters, an IB port state or
              counter) or two independent sources that agree, or healthy with every source read and parsed;
              medium is one warning-level finding or a host only the job log names; low is an unknown cause, a
              single odd reading or an inference from absence. The remediation ladder acts on a node only
              on high.
          returned: always
          type: str
        confidence_reason: {description: "One sentence naming the evidence that set the confidence.", returned: always, type: str}
        confidence_basis: {description: "The rule and fields behind the reason (for reports in other languages).", returned: always, type: dict}
        rung:
          description: Next ladder rung (none, drain, nccl_env, timeout, gpu_reset, ib_restart,
            reboot, rma, fix_application).
          returned: always
          type: str
        findings:
          description: Findings, most important first, each with category, severity, kind,
            xid, gpu, ib, rank, source, evidence, message, action and rung.
          returned: always
          type: list
          elements: dict
        facts: {description: "Parsed data per source (gpu, kernel_log, ib, compute_apps).", returned: always, type: dict}
        probes: {description: Per-source probe status., returned: always, type: dict}
        timings: {description: "Seconds each probe took (a probe that hit the deadline: how long it was waited for).", returned: always, type: dict}
        mode: {description: live or capture., returned: always, type: str}
        window:
          description:
            - The kernel-log window asked for - C(since) and C(not_before) as read (UTC ISO 8601, or
              C(since) as given when it is not a time), C(start) (the later of the two, null for the
              whole log) and C(bound) (C(since), C(not_before), or null when neither was given; a tie
              is C(since)).
          returned: always
          type: dict
          sample: {"since": "2026-12-02T09:00:00+00:00", "not_before": "2026-12-02T11:42:10+00:00",
                   "start": "2026-12-02T11:42:10+00:00", "bound": "not_before"}
"""

import os
import socket

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.gpu_runbook.analyze import analyze_host
from ansible.module_utils.gpu_runbook.probes import ALL_PROBES, DEFAULT_PROBES, collect
from ansible.module_utils.gpu_runbook.findings import finding
from ansible.module_utils.gpu_runbook.sources import KERNEL_LOG, NOTES
from ansible.module_utils.gpu_runbook.timeutil import UTC, iso, local_tz, parse_time, parse_tz
from ansible.module_utils.gpu_runbook.validate import check_text, problems


def _read_time(value, tz):
    return parse_time(value, tz).astimezone(UTC)


def kernel_window(since, not_before, tz):
    """-> (window dict, the since to scan from, the journal's --since, notes). The window
    starts at the later of since and not_before (a time without a zone is in ``tz``).
    ValueError for a not_before that is not a time; a since that is not one is a finding, as
    it always was (alone it reaches the scanner, which says so)."""
    window = {"since": since or None, "not_before": None, "start": None, "bound": None}
    bounds, notes = [], []
    if since:
        try:
            window["since"] = iso(_read_time(since, tz))
            bounds.append(("since", _read_time(since, tz)))
        except (ValueError, TypeError, OverflowError) as exc:
            window["since_error"] = str(exc)
    if not_before:
        try:
            nb = _read_time(not_before, tz)
        except (ValueError, TypeError, OverflowError):
            raise ValueError("not_before %r is not an ISO 8601 time (for example 2026-12-02T11:42:10+00:00 "
                             "or 2026-12-02T20:42:10 in the node's zone)" % (not_before,))
        window["not_before"] = iso(nb)
        bounds.append(("not_before", nb))
    if not bounds:
        return window, since or None, None, notes
    bound, start = max(bounds, key=lambda b: b[1])  # max keeps the first of equals: since
    window.update(start=iso(start), bound=bound)
    if "since_error" in window:
        notes.append(finding("kernlog_window_invalid", "since %r not understood (%s): the kernel-log window "
                             "starts at not_before %s instead" % (since, window["since_error"], iso(start)),
                             source=KERNEL_LOG))
    # journalctl --since: epoch seconds (floored) mean one instant whatever its version reads
    return window, iso(start), "@%d" % int(start.timestamp() // 1), notes


def setting_problems(p):
    """What is wrong with the numbers and the capture directory, in the operator's words."""
    why = []
    if not 1 <= p["probe_timeout"] <= 3600:
        why.append("probe_timeout must be 1-3600 seconds (got %d)" % p["probe_timeout"])
    if p["expected_gpus"] is not None and p["expected_gpus"] < 0:
        why.append("expected_gpus must not be negative (got %d)" % p["expected_gpus"])
    if p["expected_ib_rate"] is not None and not p["expected_ib_rate"] >= 0:  # NaN too
        why.append("expected_ib_rate must not be negative (got %s)" % p["expected_ib_rate"])
    if p["capture_dir"] and not os.path.isdir(p["capture_dir"]):
        why.append("capture_dir %s is not a directory on %s" % (p["capture_dir"], p["hostname"] or socket.gethostname()))
    return why


def main():
    module = AnsibleModule(
        argument_spec=dict(
            capture_dir=dict(type="path"),
            probes=dict(type="list", elements="str", choices=list(ALL_PROBES), default=list(DEFAULT_PROBES)),
            probe_timeout=dict(type="int", default=30),
            since=dict(type="str"),
            not_before=dict(type="str"),
            sysfs_root=dict(type="path", default="/sys"),
            kern_log_path=dict(type="path", default="/var/log/kern.log"),
            expected_gpus=dict(type="int"),
            expected_ib_rate=dict(type="float"),
            expected_ib_devices=dict(type="list", elements="str"),
            ib_counter_thresholds=dict(type="dict"),
            hostname=dict(type="str"),
            tz=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    refused = problems(p, {"capture_dir": "path", "sysfs_root": "path", "kern_log_path": "path",
                           "expected_ib_devices": "hca"})
    refused += [why for why in [p["hostname"] and check_text("hostname", p["hostname"], cap=255)] if why]
    refused += setting_problems(p)
    tz = None
    try:
        # dmesg -T and syslog print the node's local time: read them in its zone
        tz = parse_tz(p["tz"]) if p["tz"] else local_tz()
        window, since, journal_since, notes = kernel_window(p["since"], p["not_before"], tz)
    except ValueError as exc:
        refused.append("tz: %s" % exc if tz is None else str(exc))
    if refused:
        # before any probe runs: a mistaken setting is the operator's, not a sick host
        module.fail_json(msg="; ".join(refused), setting_error=True)
    if p["capture_dir"]:
        # imported here: a live gather does not compile the capture reader on the node
        from ansible.module_utils.gpu_runbook.capture import load_capture_dir, stream_large_sources
        sources, _jobs, _ignored = load_capture_dir(p["capture_dir"])
        sources, parsed = stream_large_sources(sources, since=since, tz=tz)
        timings, mode = {}, "capture"
    else:
        sources, timings = collect(probes=p["probes"], timeout=p["probe_timeout"], since=journal_since,
                                   sysfs_root=p["sysfs_root"], kern_log_path=p["kern_log_path"])
        mode, parsed = "live", None
    if notes:
        sources[NOTES] = list(sources.get(NOTES) or []) + notes
    result = analyze_host(
        sources, host=p["hostname"] or socket.gethostname(), since=since,
        expected_gpus=p["expected_gpus"], expected_ib_rate=p["expected_ib_rate"],
        expected_ib_devices=p["expected_ib_devices"], ib_thresholds=p["ib_counter_thresholds"], parsed=parsed,
        tz=tz)
    result["timings"] = timings
    result["mode"] = mode
    result["window"] = window
    module.exit_json(changed=False, ansible_facts={"gpu_health": result})


if __name__ == "__main__":
    main()
