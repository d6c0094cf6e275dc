#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu-runbook contributors
# Apache-2.0 (see pyproject.toml)

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
    type: int
    default: 30
  since:
    description:
      - Only kernel-log events at or after this time count (ISO 8601, for example the job's
        start time). Older events are ignored.
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
    description: GPUs this host should show; fewer is a critical finding.
    type: int
  expected_ib_rate:
    description: Expected InfiniBand port rate in Gb/s; a slower port is a degraded link.
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
notes:
  - Needs root for the kernel log where C(kernel.dmesg_restrict=1).
"""

EXAMPLES = r"""
- name: Gather GPU / IB health on every node in one round trip
  gpu_health_facts:
    expected_gpus: 8
    expected_ib_rate: 400
    since: "2026-12-02T09:00:00"

- name: Replay captured outputs (no commands run)
  gpu_health_facts:
    capture_dir: /srv/captures/gpu-r3-n04
  delegate_to: localhost
"""

RETURN = r"""
ansible_facts:
  description: Facts added under C(gpu_health).
  returned: always
  type: dict
  contains:
    gpu_health:
      description: The host's analysis.
      type: dict
      contains:
        host: {description: Host name., type: str}
        verdict:
          description: healthy, gpu_hardware, driver, ib_network, nccl_config, nccl_deadlock,
            application, dataloader, memory_leak or unknown.
          type: str
        severity: {description: "ok, info, warning or critical.", type: str}
        rung:
          description: Next ladder rung (none, drain, nccl_env, timeout, gpu_reset, ib_restart,
            reboot, rma, fix_application).
          type: str
        findings:
          description: Findings, most important first, each with category, severity, kind,
            xid, gpu, ib, rank, source, evidence, message, action and rung.
          type: list
          elements: dict
        facts: {description: Parsed data per source (gpu, kernel_log, ib, compute_apps)., type: dict}
        probes: {description: Per-source probe status., type: dict}
        timings: {description: "Seconds each probe took (a probe that hit the deadline: how long it was waited for).", type: dict}
        mode: {description: live or capture., type: str}
"""

import os
import socket

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.gpu_runbook.analyze import analyze_host
from ansible.module_utils.gpu_runbook.capture import load_capture_dir, stream_large_sources
from ansible.module_utils.gpu_runbook.probes import ALL_PROBES, DEFAULT_PROBES, collect
from ansible.module_utils.gpu_runbook.timeutil import local_tz, parse_tz


def main():
    module = AnsibleModule(
        argument_spec=dict(
            capture_dir=dict(type="path"),
            probes=dict(type="list", elements="str", choices=list(ALL_PROBES), default=list(DEFAULT_PROBES)),
            probe_timeout=dict(type="int", default=30),
            since=dict(type="str"),
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
    if p["probe_timeout"] < 1:
        module.fail_json(msg="probe_timeout must be at least 1 second")
    try:
        # dmesg -T and syslog print the node's local time: read them in its zone
        tz = parse_tz(p["tz"]) if p["tz"] else local_tz()
    except ValueError as exc:
        module.fail_json(msg="tz: %s" % exc)
    if p["capture_dir"]:
        if not os.path.isdir(p["capture_dir"]):
            module.fail_json(msg="capture_dir %s is not a directory" % p["capture_dir"])
        sources, _jobs, _ignored = load_capture_dir(p["capture_dir"])
        sources, parsed = stream_large_sources(sources, since=p["since"], tz=tz)
        timings, mode = {}, "capture"
    else:
        sources, timings = collect(probes=p["probes"], timeout=p["probe_timeout"], since=p["since"],
                                   sysfs_root=p["sysfs_root"], kern_log_path=p["kern_log_path"])
        mode, parsed = "live", None
    result = analyze_host(
        sources, host=p["hostname"] or socket.gethostname(), since=p["since"],
        expected_gpus=p["expected_gpus"], expected_ib_rate=p["expected_ib_rate"],
        expected_ib_devices=p["expected_ib_devices"], ib_thresholds=p["ib_counter_thresholds"], parsed=parsed,
        tz=tz)
    result["timings"] = timings
    result["mode"] = mode
    module.exit_json(changed=False, ansible_facts={"gpu_health": result})


if __name__ == "__main__":
    main()
