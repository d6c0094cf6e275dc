#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu-runbook contributors
# SPDX-License-Identifier: Apache-2.0

DOCUMENTATION = r"""
---
module: ib_restart
short_description: Restart the InfiniBand stack (openibd) on a drained node, after named pre-checks, and verify the ports
description:
  - The C(ib_restart) rung of the remediation ladder. Runs on the node (as root) C(systemctl restart <unit>)
    for an MLNX/DOCA OFED stack, or (O(method=modules)) reloads mlx5_ib/mlx5_core with modprobe on an inbox
    rdma-core stack, with C(nvidia_peermem) unloaded before and loaded again after (it holds ib_core).
  - "Pre-checks, each a named refusal (C(failed=true), C(blocked_by) names them all, nothing is restarted):
    the node is not drained (C(node_not_drained)); the IB ports cannot be read from sysfs
    (C(no_ib_devices), C(ib_state_unreadable), C(unknown_port), C(no_expected_ports)); what makes openibd
    refuse or break things: processes holding C(/dev/infiniband/*) (C(dev_infiniband_held), named by pid and
    command), opensm/osmtest/ibbs/ibns/ibacm running (C(ib_daemons)), Lustre o2ib C(ko2iblnd) loaded
    (C(lustre_o2ib)), NFS over RDMA C(rpcrdma)/C(xprtrdma) (C(nfs_rdma)), NVMe over RDMA C(nvme_rdma)/C(nvmet_rdma)
    (C(nvme_rdma)), iSER/SRP targets C(ib_isert)/C(ib_srpt) (C(iser_srp_target)); processes whose open files
    cannot be read (C(ib_users_unreadable))."
  - "What rides the fabric, which openibd does not check (each a named refusal, the mount, module or address
    named): a network filesystem in C(<proc_root>/mounts) (NFS, Lustre, BeeGFS, GPFS, SMB, CephFS, GlusterFS,
    9P, ...) whose server is reached over an IPoIB interface (the main route table, C(<proc_root>/net/route) and
    C(net/ipv6_route)), whose local C(clientaddr) lives on one, or that uses RDMA (C(proto=rdma), Lustre C(@o2ib),
    SMB Direct, C(trans=rdma)) (C(network_fs_over_ib)); one whose server the mount table does not name or that
    does not resolve (BeeGFS, GPFS) (C(network_fs_unplaced)); the root filesystem on the network (C(/) a network
    filesystem, an overlay or tmpfs root over one, C(root=/dev/nfs)/C(nfsroot=)/C(netroot=) in
    C(<proc_root>/cmdline)) (C(root_on_network)); storage modules C(beegfs) (C(beegfs)), C(mmfs26)/C(mmfslinux)
    (C(gpfs)), C(lustre)/C(lnet) (C(lustre)), C(ib_iser)/C(ib_srp) (C(iser_srp_initiator)), C(rds_rdma)
    (C(rds_rdma)), C(svcrdma) (C(nfs_rdma)); the controller's address (O(controller_addresses) and the module's own
    C(SSH_CONNECTION)) on or routed over an IPoIB interface (C(controller_on_ib)); slurmd's O(slurmd_address) on
    one (C(slurmd_on_ib)); the mount table, the route table or C(<sysfs_root>/class/net) unreadable
    (C(fabric_users_unreadable)). An IPoIB interface is one whose C(type) is 32 (ARPHRD_INFINIBAND), whatever
    its name, or an C(ib*) one whose type cannot be read."
  - "Verification: waits up to O(wait) seconds for every expected port to be Active and LinkUp (at
    O(expected_rate) when given), then reads the error counters twice O(soak) seconds apart. Any rise of
    link_downed, link_error_recovery, symbol_error, port_rcv_errors, local_link_integrity_errors or
    excessive_buffer_overrun_errors means the link is still sick: C(verified=false), C(still_rising) and
    C(escalate=cable) (a bad cable keeps flapping after a restart). A restart that is not verified is not a
    module failure; the ladder's verify rung keeps the node drained."
version_added: "0.2.0"
author: gpu-runbook contributors
options:
  node_drained:
    description: Whether the drain step confirmed that the node is drained (no jobs). The module refuses unless true.
    type: bool
    required: true
  unit:
    description: The systemd unit of the IB stack (C(openibd) for MLNX_OFED / DOCA-OFED).
    type: str
    default: openibd
  method:
    description:
      - C(service) restarts O(unit) with C(systemctl restart) (MLNX_OFED / DOCA-OFED openibd).
      - C(modules) reloads the mlx5 driver with modprobe, for an inbox rdma-core stack without openibd
        (C(modprobe -r) of every module that uses C(mlx5_core) per the 'used by' column of C(/proc/modules), users
        first, C(mlx5_ib) then C(mlx5_core), then C(modprobe) of each in reverse order). Other users of
        C(mlx5_core) than C(mlx5_ib), C(mlx5_fwctl) and C(mlx5_dpll) (C(mlx5_vdpa), C(mlx5_vfio_pci), a third-party
        module) block it (C(mlx5_users)), as does a reference no module accounts for (C(module_in_use)) or
        C(mlx5_core) not being a loaded module (C(mlx5_not_loaded)). ib_core's users (rdma_ucm, ib_ipoib, ib_umad)
        stay loaded and re-bind.
      - C(auto) runs C(systemctl cat <unit>) (read-only, also in check mode) and picks C(service) when the unit
        exists, C(modules) when systemd says there is no such unit; anything else refuses (C(method_undecided)).
      - The default stays C(service) because the plan's command and the taxonomy name C(systemctl restart openibd);
        the ladder role passes C(rung_ib_restart_method).
    type: str
    choices: [auto, service, modules]
    default: service
  expected_ports:
    description:
      - Ports that must come back, as C(mlx5_N/1) or a device name (all its ports). Default, every InfiniBand
        port that is Active before the restart. Pass the diagnosed port here when it may be down right now.
    type: list
    elements: str
    default: []
  expected_rate:
    description: Link rate in Gb/s every expected port must reach (for example 400 for NDR); none checks no rate.
    type: float
  sysfs_root:
    description: Where sysfs is mounted (C(class/infiniband) and C(class/net/*/type) are read below it).
    type: path
    default: /sys
  proc_root:
    description: Where procfs is mounted (C(modules), C(mounts), C(cmdline), C(net/route), C(net/ipv6_route),
      C(net/if_inet6), C(<pid>/comm) and C(<pid>/fd) are read below it).
    type: path
    default: /proc
  wait:
    description: Seconds to wait for the expected ports to come back Active/LinkUp after the restart.
    type: int
    default: 60
  soak:
    description: Seconds between the two counter reads after the ports are back.
    type: int
    default: 10
  reload_peermem:
    description: Unload C(nvidia_peermem) before the restart and load it again after, when it is loaded.
    type: bool
    default: true
  controller_addresses:
    description:
      - Addresses (or host names, resolved on the node) by which the controller reaches this node, such as the
        inventory's C(ansible_host) and both ends of C(SSH_CONNECTION). The module adds its own C(SSH_CONNECTION)
        when it has one (C(become) through sudo usually drops it). One on or routed over an IPoIB interface
        refuses the restart (C(controller_on_ib)).
    type: list
    elements: str
    default: []
  slurmd_address:
    description: Slurm's C(NodeAddr) of this node (where slurmctld reaches slurmd); on an IPoIB interface it refuses
      the restart (C(slurmd_on_ib)). Empty checks none.
    type: str
    default: ""
extends_documentation_fragment:
  - action_common_attributes
attributes:
  check_mode:
    support: partial
    details:
      - Runs the read-only pre-checks (sysfs, procfs, and C(systemctl cat <unit>) for O(method=auto)) and, when none
        blocks, returns the argv lists a real run would execute in RV(would_run); nothing is unloaded or restarted and
        no port is waited for. A pre-check that blocks fails the task as it would for real.
      - C(changed) stays false in check mode; a non-empty RV(would_run) is the prediction that a real run restarts the stack.
  diff_mode:
    support: none
  platform:
    platforms: posix
    details: Linux nodes with InfiniBand HCAs (mlx5).
requirements:
  - root on the node
  - InfiniBand sysfs (C(<sysfs_root>/class/infiniband))
  - C(systemctl) (systemd) and the O(unit) unit (MLNX_OFED / DOCA-OFED openibd) for O(method=service)
  - C(modprobe) (kmod) for O(method=modules) and for C(nvidia_peermem)
notes:
  - Needs root on the node (systemctl restart, modprobe, reading every process's open files).
  - O(method=modules) re-reads C(/proc/modules) between steps, so a module that C(modprobe -r) already took out as
    an unused dependency is not removed again; anything loaded before and missing after is loaded again by name.
  - "IPoIB interfaces go away and come back with the restart, so mounts, SSH sessions and slurmd over them are
    refused first. openibd's C(ALLOW_STOP) (openibd.conf) guards only C(stop), C(systemctl restart openibd) ignores
    it: this module's own pre-checks are the gate."
  - Route-aware through the main table only (C(ip rule) policy routing is not seen).
  - The rung_ib_restart role runs it on a node the rung_drain role drained, after the ledger's per-port decision.
seealso:
  - module: ansible.legacy.slurm_node
    description: Drains the node first; its RV(ansible.legacy.slurm_node#module:drained) feeds O(node_drained).
  - module: ansible.legacy.gpu_runbook_ledger
    description: Decides per port whether the restart budget is spent (then the cable), and records the result.
  - module: ansible.legacy.gpu_health_facts
    description: Finds the flapping or degraded port this rung is for.
  - name: openibd (mlnx-ofa_kernel ofed_scripts/openibd)
    description: The checks openibd makes before it unloads the stack, which this module makes first.
    link: https://github.com/Mellanox/mlnx-ofa_kernel
  - name: sysfs-class-infiniband (Linux kernel ABI)
    description: Port state, physical state, rate and the error counters read before and after the restart.
    link: https://www.kernel.org/doc/Documentation/ABI/stable/sysfs-class-infiniband
"""

EXAMPLES = r"""
- name: Restart the IB stack for the flapping port (the node is drained)
  ib_restart:
    node_drained: "{{ gpu_runbook_drain_result.drained }}"
    expected_ports: [mlx5_6/1]
    expected_rate: 400
  register: ib_restart
  become: true

- name: Plan only
  ib_restart:
    node_drained: true
  check_mode: true
  register: plan

- name: Inbox rdma-core stack (no openibd) - reload mlx5_ib/mlx5_core, or let systemctl cat decide
  ib_restart:
    node_drained: true
    method: auto
    expected_ports: [mlx5_0, mlx5_1]
  become: true
"""

RETURN = r"""
blocked_by:
  description:
    - The names of what refused the restart, all of them - node_not_drained, bad_expected_ports, bad_parameter,
      no_ib_devices, ib_state_unreadable, unknown_port, no_expected_ports, dev_infiniband_held, ib_daemons,
      lustre_o2ib, nfs_rdma, nvme_rdma, iser_srp_target, ib_users_unreadable, network_fs_over_ib,
      network_fs_unplaced, root_on_network, beegfs, gpfs, lustre, iser_srp_initiator, rds_rdma, controller_on_ib,
      slurmd_on_ib, fabric_users_unreadable, method_undecided, mlx5_users,
      module_in_use, mlx5_not_loaded, systemctl_missing, modprobe_missing, peermem_unload_failed, restart_failed.
  returned: on refusal
  type: list
  elements: str
  sample: [dev_infiniband_held, nfs_rdma]
holders:
  description: Processes holding /dev/infiniband (pid, comm, devices).
  returned: when the pre-checks ran
  type: list
  elements: dict
  sample: [{"pid": 4711, "comm": "python", "devices": ["uverbs0"]}]
daemons:
  description: IB daemons running (pid, comm).
  returned: when the pre-checks ran
  type: list
  elements: dict
  sample: [{"pid": 1632, "comm": "opensm"}]
modules:
  description: Loaded modules that make openibd refuse, and storage-over-RDMA modules (BeeGFS, GPFS, Lustre, iSER/SRP
    initiators, RDS, NFS server over RDMA) that ride the fabric.
  returned: when the pre-checks ran
  type: list
  elements: str
  sample: [rpcrdma, mmfs26]
fabric:
  description:
    - What rides the fabric, as read - C(ib_interfaces) (IPoIB, by type 32), C(network_mounts) (target, kind, source,
      servers, rdma), C(controller_addresses) and C(slurmd_address) checked, C(blockers) (one sentence each, empty
      when nothing rides the fabric).
  returned: when the pre-checks ran
  type: dict
  sample: {"ib_interfaces": ["ib0"], "network_mounts": [{"target": "/home", "kind": "NFS", "source": "10.0.0.5:/home",
           "servers": ["10.0.0.5"], "rdma": null}], "controller_addresses": ["10.201.0.1", "10.201.0.11"],
           "slurmd_address": "", "blockers": ["NFS mount /home (10.0.0.5:/home, proto=tcp) from 10.0.0.5 over
           IPoIB interface ib0 (route 10.0.0.0/24 dev ib0)"]}
expected_ports:
  description: The ports that must come back (C(mlx5_N/1)).
  returned: when sysfs was read
  type: list
  elements: str
  sample: [mlx5_6/1]
before:
  description: State, physical state and rate of the expected ports before the restart.
  returned: when sysfs was read
  type: dict
after:
  description: The same once they were back (or when the wait ended).
  returned: when the restart ran
  type: dict
  sample: {"mlx5_6/1": {"state": "Active", "phys_state": "LinkUp", "rate_gbps": 400.0}}
not_back:
  description: Expected ports that did not come back, and how they are.
  returned: when some did not come back
  type: dict
  sample: {"mlx5_6/1": "Down/Polling"}
still_rising:
  description: Error counters that rose during the soak, per port and counter, with how much they rose.
  returned: when the soak ran
  type: dict
  sample: {"mlx5_0/1": {"symbol_error": 40, "port_rcv_errors": 6}}
escalate:
  description: The rung to climb instead (cable, reboot) when the restart did not mend the link.
  returned: when the restart did not help
  type: str
  sample: cable
peermem:
  description: Whether nvidia_peermem was loaded before, unloaded and reloaded.
  returned: when the pre-checks passed
  type: dict
restart:
  description:
    - How C(systemctl restart) ended (rc, stderr, the unit's status text on failure); for O(method=modules) the
      first modprobe that failed (rc, argv, stderr), rc 0 when none did.
  returned: when the restart ran
  type: dict
method:
  description: The method used (C(service) or C(modules)); with O(method=auto) the one C(systemctl cat) chose.
  returned: when the pre-checks got that far
  type: str
  sample: service
method_reason:
  description: Why that method (the parameter, or what C(systemctl cat <unit>) said).
  returned: when RV(method) is
  type: str
reload:
  description:
    - O(method=modules) only. C(unload) the planned order (users of mlx5_core first, mlx5_core last);
      C(unloaded) what modprobe -r took out; C(gone_with_others) what went out as an unused dependency of an
      earlier one (not unloaded again); C(loaded) what was loaded back; C(restored) other modules that were
      loaded before and came back only by an explicit modprobe; C(missing) loaded before and still missing.
  returned: when O(method=modules) passed its pre-checks
  type: dict
  sample: {"unload": ["mlx5_ib", "mlx5_core"], "unloaded": ["mlx5_ib"], "gone_with_others": ["mlx5_core"],
           "loaded": ["mlx5_core", "mlx5_ib"], "restored": [], "missing": []}
verified:
  description: True only when every expected port is back and no watched counter rose during the soak.
  returned: always
  type: bool
  sample: true
commands:
  description: The argv lists that changed something, in order.
  returned: always
  type: list
  elements: list
  sample: [["/usr/sbin/modprobe", "-r", "nvidia_peermem"], ["/usr/bin/systemctl", "restart", "openibd"],
           ["/usr/sbin/modprobe", "nvidia_peermem"]]
would_run:
  description: In check mode, the argv lists a real run would execute, in order.
  returned: in check mode when no pre-check blocks
  type: list
  elements: list
  sample: [["/usr/bin/systemctl", "restart", "openibd"]]
"""

import errno
import os
import socket
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.gpu_runbook.infiniband import parse_ib_sysfs
from ansible.module_utils.gpu_runbook.infiniband.restart import (
    PEERMEM, blockers, blocking_modules, default_expected, escalation, ib_ports, parse_port_specs,
    parse_proc_modules, plan_argv, port_summary, ports_back, running_daemons, select_ports, still_rising,
    unreadable_ports)
from ansible.module_utils.gpu_runbook.infiniband.reload import (
    METHODS, parse_module_table, reload_argv, reload_plan, unit_presence)
from ansible.module_utils.gpu_runbook.infiniband.fabric_users import (
    fabric_blockers, network_mounts, parse_mounts, storage_modules)
from ansible.module_utils.gpu_runbook.infiniband.netpaths import (
    as_ip, ib_interfaces, parse_if_inet6, parse_ipv6_route, parse_route)
from ansible.module_utils.gpu_runbook.probes import read_ib_sysfs
from ansible.module_utils.gpu_runbook.slurm import node_addr_problem
from ansible.module_utils.gpu_runbook.validate import problems


class Refusal(Exception):
    """A pre-check (or step) that stops the restart: ``blocked`` names it, ``extra`` goes into the result."""

    def __init__(self, blocked, msg, **extra):
        Exception.__init__(self, msg)
        self.blocked = blocked if isinstance(blocked, list) else [blocked]
        self.msg = msg
        self.extra = extra


def read_ports(sysfs_root):
    """-> (raw text, facts) of the IB sysfs tree (probes.read_ib_sysfs + infiniband.parse_ib_sysfs)."""
    text = read_ib_sysfs(sysfs_root)
    facts, _findings = parse_ib_sysfs(text, source=os.path.join(sysfs_root, "class", "infiniband"))
    return text, facts


def _raw(text, key, leaf):
    dev, num = key.split("/")
    needle = "/%s/ports/%s/%s:" % (dev, num, leaf)
    for line in text.splitlines():
        if needle in line:
            return line.split(needle, 1)[1][:80]
    return None


def expected_ports(p):
    """Read sysfs before: -> (facts, expected port keys), or a Refusal when it cannot be trusted."""
    base = os.path.join(p["sysfs_root"], "class", "infiniband")
    text, facts = read_ports(p["sysfs_root"])
    if not text.strip():
        raise Refusal("no_ib_devices", "no InfiniBand device under %s: nothing to restart" % base)
    if not facts["ports"]:
        first = next((x for x in text.splitlines() if x.strip()), "")[:160]
        raise Refusal("ib_state_unreadable", "could not read any IB port from %s (it holds: %s)" % (base, first))
    specs, bad = parse_port_specs(p["expected_ports"])
    if bad:
        raise Refusal("bad_expected_ports", "expected_ports %s: give ports as mlx5_N/1 or a device name" % bad)
    if specs:
        keys, missing = select_ports(facts, specs)
        if missing:
            raise Refusal("unknown_port", "no such IB port in %s: %s (it has %s)" % (
                base, ", ".join(missing), ", ".join("%s/%s" % (x["device"], x["port"]) for x in facts["ports"])))
        check = keys
    else:
        check = ["%s/%s" % (x["device"], x["port"]) for x in ib_ports(facts)]
        keys = None
    bad_state = unreadable_ports(facts, check)
    if bad_state:
        raise Refusal("ib_state_unreadable", "the state of %s in %s is unreadable (%s): not restarting on doubt"
                      % (", ".join(bad_state), base, "; ".join("%s state=%r phys_state=%r" % (
                          k, _raw(text, k, "state"), _raw(text, k, "phys_state")) for k in bad_state)))
    if keys is None:
        keys = default_expected(facts)
        if not keys:
            raise Refusal("no_expected_ports", "no IB port is Active in %s, so none is known to come back: name the "
                          "ports in expected_ports" % base)
    return facts, keys


def scan_proc(proc_root):
    """-> (every process [{"pid", "comm"}], holders of /dev/infiniband, count of unreadable fd dirs)."""
    procs, holders, unreadable = [], [], 0
    try:
        names = os.listdir(proc_root)
    except OSError as exc:
        raise Refusal("ib_users_unreadable", "cannot list %s (%s): cannot tell who uses the IB stack"
                      % (proc_root, exc.strerror))
    me = str(os.getpid())
    for name in sorted((n for n in names if n.isdigit() and n != me), key=int):
        try:
            with open(os.path.join(proc_root, name, "comm")) as fh:
                comm = fh.read().strip()
        except OSError:
            continue                      # gone meanwhile
        procs.append({"pid": int(name), "comm": comm})
        fd_dir = os.path.join(proc_root, name, "fd")
        try:
            fds = os.listdir(fd_dir)
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EPERM):
                unreadable += 1
            continue
        devices = set()
        for fd in fds:
            try:
                target = os.readlink(os.path.join(fd_dir, fd))
            except OSError:
                continue
            if target.startswith("/dev/infiniband/"):
                devices.add(target[len("/dev/infiniband/"):])
        if devices:
            holders.append({"pid": int(name), "comm": comm, "devices": sorted(devices)})
    return procs, holders, unreadable


def _read(path, optional=False):
    try:
        with open(path) as fh:
            return fh.read()
    except OSError:
        if optional:
            return ""
        raise


def _resolve(names, cap=16):
    """Host names -> {name: [addresses]} with the node's own resolver (what its mounts used)."""
    out = {}
    for n in list(dict.fromkeys(x for x in names if x and not as_ip(x)))[:cap]:
        try:
            out[n] = sorted(set(ai[4][0] for ai in socket.getaddrinfo(n, None)))
        except (OSError, UnicodeError):
            out[n] = []
    return out


def precheck_fabric(p, loaded):
    """What rides the fabric (mounts, root, storage modules, the controller's SSH, slurmd) -> (blocked_by
    names and sentences, info); read from <proc_root> and <sysfs_root> so a test can fake them."""
    proc, netdir = p["proc_root"], os.path.join(p["sysfs_root"], "class", "net")
    try:
        mounts = parse_mounts(_read(os.path.join(proc, "mounts")))
        routes = parse_route(_read(os.path.join(proc, "net", "route")))
        types = dict((n, _read(os.path.join(netdir, n, "type"), True) or None) for n in sorted(os.listdir(netdir)))
    except OSError as exc:
        raise Refusal("fabric_users_unreadable", "cannot read %s (%s): cannot tell whether storage, the root "
                      "filesystem or the controller's SSH ride the IB fabric" % (exc.filename, exc.strerror))
    net = {"ib": ib_interfaces(types), "addrs": parse_if_inet6(_read(os.path.join(proc, "net", "if_inet6"), True)),
           "routes": routes + parse_ipv6_route(_read(os.path.join(proc, "net", "ipv6_route"), True))}
    ssh = os.environ.get("SSH_CONNECTION", "").split()
    controller = list(dict.fromkeys(list(p["controller_addresses"]) + ssh[0:1] + ssh[2:3]))
    slurmd = [p["slurmd_address"]] if p["slurmd_address"] else []
    nets = network_mounts(mounts)
    resolved = _resolve(controller + slurmd + [s for n in nets for s in n["servers"]])
    found = fabric_blockers(mounts, _read(os.path.join(proc, "cmdline"), True), loaded, net, controller, slurmd,
                            resolved)
    info = {"ib_interfaces": net["ib"], "controller_addresses": controller, "slurmd_address": p["slurmd_address"],
            "network_mounts": [dict((k, n[k]) for k in ("target", "kind", "source", "servers", "rdma")) for n in nets],
            "blockers": [why for _name, why in found]}
    return found, info


def precheck_users(p):
    """-> loaded module names; a Refusal naming every user that makes openibd refuse or break, and everything
    that rides the fabric (precheck_fabric)."""
    proc_root = p["proc_root"]
    path = os.path.join(proc_root, "modules")
    try:
        with open(path) as fh:
            text = fh.read()
        loaded = parse_proc_modules(text)
    except OSError as exc:
        raise Refusal("ib_users_unreadable", "cannot read %s (%s): cannot tell whether Lustre or NFS/NVMe over RDMA "
                      "use the IB stack" % (path, exc.strerror))
    procs, holders, unreadable = scan_proc(proc_root)
    daemons = running_daemons(procs)
    mods = blocking_modules(loaded)
    names, msg = blockers(holders, daemons, mods, unreadable)
    found, fabric = precheck_fabric(p, loaded)
    for name, why in found:
        names += [name] if name not in names else []
    msg = "; ".join([x for x in [msg] if x] + [why for _name, why in found])
    info = {"holders": holders, "daemons": daemons, "modules": [m["module"] for m in mods], "fabric": fabric}
    info["modules"] += [m["module"] for m in storage_modules(loaded) if m["module"] not in info["modules"]]
    if names:
        raise Refusal(names, "not restarting the IB stack: " + msg, **info)
    return parse_module_table(text), info


def loaded_now(proc_root):
    """The loaded module names now, or None when /proc/modules cannot be read."""
    try:
        with open(os.path.join(proc_root, "modules")) as fh:
            return parse_proc_modules(fh.read())
    except OSError:
        return None


def _tail(text, n=12):
    lines = [x for x in (text or "").splitlines() if x.strip()]
    return "\n".join(lines[-n:])


def _unload_peermem(module, argv, result):
    """modprobe -r nvidia_peermem; a failure stops everything before the stack is touched."""
    result["commands"].append(argv)
    rc, out, err = module.run_command(argv)
    if rc != 0:
        raise Refusal("peermem_unload_failed", "%s failed (exit %d: %s): the IB stack was not restarted"
                      % (" ".join(argv), rc, _tail(err + out, 3)), commands=result["commands"],
                      peermem=result["peermem"], method=result.get("method"))
    result["peermem"]["unloaded"] = True


def _load_peermem(module, argv, result):
    result["commands"].append(argv)
    rc, out, err = module.run_command(argv)
    result["peermem"]["reloaded"] = rc == 0
    if rc != 0:
        result["peermem"]["error"] = _tail(err + out, 3)


def do_restart(module, p, steps, result):
    """modprobe -r nvidia_peermem, systemctl restart, modprobe nvidia_peermem (also after a failed restart)."""
    unload, restart, load = (steps[0], steps[1], steps[2]) if len(steps) == 3 else (None, steps[0], None)
    if unload:
        _unload_peermem(module, unload, result)
    result["commands"].append(restart)
    rc, out, err = module.run_command(restart)
    result["restart"] = {"rc": rc, "stderr": _tail(err, 5), "stdout": _tail(out, 5)}
    if load:
        _load_peermem(module, load, result)
    result["changed"] = True
    if rc != 0:
        _src, st_out, st_err = module.run_command([restart[0], "status", p["unit"], "--no-pager", "--lines", "20"])
        result["restart"]["status"] = _tail(st_out + st_err, 20)
        return False
    return True


def do_reload(module, p, steps, unload, result):
    """method=modules: nvidia_peermem out, ``unload`` in order (skipping what an earlier modprobe -r already
    took out), then load back what is gone, in reverse order -- also after a failed step -- and anything else
    that was loaded before; nvidia_peermem last. -> True when every modprobe succeeded."""
    modprobe, peermem = steps[0][0], steps[0][1:] == ["-r", PEERMEM]
    before = loaded_now(p["proc_root"]) or set()
    rl = result["reload"] = {"unload": unload, "unloaded": [], "gone_with_others": [], "loaded": [],
                             "restored": [], "missing": []}
    failed = []

    def step(argv, done):
        result["commands"].append(argv)
        rc, out, err = module.run_command(argv)
        if rc == 0:
            done.append(argv[-1])
        elif not failed:
            failed.append({"rc": rc, "argv": argv, "stderr": _tail(err + out, 5)})
        return rc == 0

    if peermem:
        _unload_peermem(module, steps[0], result)
    result["changed"] = True
    for m in unload:
        now = loaded_now(p["proc_root"])
        if now is not None and m not in now:
            rl["gone_with_others"].append(m)
        elif not step([modprobe, "-r", m], rl["unloaded"]):
            break
    now = loaded_now(p["proc_root"])
    for m in reversed(unload):
        if now is None or m not in now:
            step([modprobe, m], rl["loaded"])
    now = loaded_now(p["proc_root"])
    for m in sorted(before - (now if now is not None else before) - {PEERMEM}):
        step([modprobe, m], rl["restored"])
    now = loaded_now(p["proc_root"])
    rl["missing"] = sorted(before - now - {PEERMEM}) if now is not None else []
    if peermem:
        _load_peermem(module, steps[-1], result)
    result["restart"] = failed[0] if failed else {"rc": 0}
    return not failed


def wait_for_ports(p, keys):
    """Poll sysfs until every expected port is back or ``wait`` runs out -> (facts, not_back, seconds)."""
    start = time.monotonic()
    while True:
        _text, facts = read_ports(p["sysfs_root"])
        not_back = ports_back(facts, keys, p["expected_rate"])
        left = p["wait"] - (time.monotonic() - start)
        if not not_back or left <= 0:
            return facts, not_back, round(time.monotonic() - start, 1)
        time.sleep(min(1.0, left))


def verify(p, keys, result):
    """Ports back, then the soak; fills after / not_back / still_rising / escalate / verified."""
    facts, not_back, waited = wait_for_ports(p, keys)
    result["waited_s"] = waited
    result["after"] = port_summary(facts, keys)
    problems = []
    if not_back:
        result["not_back"] = not_back
        result["escalate"] = escalation(not_back, facts)
        problems.append("not back after %ds: %s" % (p["wait"], ", ".join("%s %s" % kv for kv in not_back.items())))
    else:
        time.sleep(p["soak"])
        _text, later = read_ports(p["sysfs_root"])
        rising = still_rising(facts, later, keys)
        result["still_rising"] = rising
        if rising:
            result["escalate"] = "cable"
            problems.append("error counters still rising over %ds: %s (a bad cable or transceiver keeps flapping "
                            "after a restart)" % (p["soak"], "; ".join("%s %s" % (k, ", ".join(
                                "%s +%d" % cv for cv in sorted(v.items()))) for k, v in sorted(rising.items()))))
        down = ports_back(later, keys, p["expected_rate"])
        if down:
            result["not_back"] = down
            result.setdefault("escalate", escalation(down, later))
            problems.append("down again after the soak: %s" % ", ".join("%s %s" % kv for kv in down.items()))
    missing = (result.get("reload") or {}).get("missing")
    if missing:
        problems.append("module(s) loaded before are missing after the reload: %s" % ", ".join(missing))
    pm = result["peermem"]
    if pm["unloaded"] and not pm["reloaded"]:
        problems.append("nvidia_peermem was not loaded again (%s): GPUDirect RDMA is off" % pm.get("error", ""))
    result["verified"] = not problems
    return problems


def choose_method(module, p):
    """-> (service|modules, why); method=auto asks ``systemctl cat <unit>`` (read-only)."""
    if p["method"] != "auto":
        return p["method"], "method=%s" % p["method"]
    systemctl = module.get_bin_path("systemctl")
    if not systemctl:
        raise Refusal("method_undecided", "method=auto: systemctl is not on PATH, so whether %s is installed cannot "
                      "be told: set method=service or method=modules" % p["unit"])
    argv = [systemctl, "cat", "--no-pager", p["unit"]]
    rc, out, err = module.run_command(argv)
    has = unit_presence(rc, out, err)
    if has is None:
        raise Refusal("method_undecided", "method=auto: %s gave exit %d (%s), neither the unit nor 'no such unit': "
                      "set method=service or method=modules" % (" ".join(argv), rc, _tail(err + out, 3) or "nothing"))
    if has:
        return "service", "method=auto: systemctl cat %s found the unit" % p["unit"]
    return "modules", "method=auto: no %s unit (%s), an inbox rdma-core stack" % (p["unit"], _tail(err + out, 1))


def plan_steps(module, p, table, peermem):
    """-> (argv lists, the modules to unload or None for service); a Refusal when the method cannot run."""
    reload_pm = peermem and p["reload_peermem"]
    modprobe = module.get_bin_path("modprobe") if reload_pm or p["method"] == "modules" else None
    if p["method"] == "service":
        systemctl = module.get_bin_path("systemctl")
        if not systemctl:
            raise Refusal("systemctl_missing", "systemctl is not installed or not on PATH: cannot restart %s"
                          % p["unit"])
        if reload_pm and not modprobe:
            raise Refusal("modprobe_missing", "nvidia_peermem is loaded but modprobe is not on PATH: it must be "
                          "unloaded before the restart (it holds ib_core)")
        return plan_argv(systemctl, modprobe, p["unit"], peermem, p["reload_peermem"]), None
    plan = reload_plan(table, skip=(PEERMEM,) if p["reload_peermem"] else ())
    if plan["blocked"]:
        raise Refusal([b for b, _w in plan["blocked"]], "not reloading the mlx5 driver: "
                      + "; ".join(w for _b, w in plan["blocked"]))
    if not modprobe:
        raise Refusal("modprobe_missing", "modprobe is not on PATH: cannot reload %s" % ", ".join(plan["unload"]))
    return reload_argv(modprobe, plan["unload"], reload_pm), plan["unload"]


def run(module, p):
    result = {"changed": False, "verified": False, "commands": []}
    if not p["node_drained"]:
        raise Refusal("node_not_drained", "node is not drained: restarting the IB stack kills every job's RDMA "
                      "traffic, so it runs only on a node the drain step confirmed as drained (node_drained=true)")
    facts, keys = expected_ports(p)
    result["expected_ports"] = keys
    result["before"] = port_summary(facts, keys)
    try:
        table, info = precheck_users(p)
        result.update(info)
        p["method"], result["method_reason"] = choose_method(module, p)
        result["method"] = p["method"]
        peermem = PEERMEM in table
        steps, unload = plan_steps(module, p, table, peermem)
    except Refusal as exc:
        exc.extra.update({k: v for k, v in result.items() if k not in ("verified", "changed", "commands")})
        raise
    result["peermem"] = {"loaded_before": peermem, "unloaded": False, "reloaded": False}
    what = "the mlx5 driver (%s)" % ", ".join(unload) if unload is not None else p["unit"]
    if module.check_mode:
        result["would_run"] = steps
        if unload is not None:
            result["reload"] = {"unload": unload}
        result["msg"] = "check mode: every pre-check passed; would %s %s and wait for %s" % (
            "reload" if unload is not None else "restart", what, ", ".join(keys))
        return result
    ok = do_restart(module, p, steps, result) if unload is None else do_reload(module, p, steps, unload, result)
    if not ok:
        _text, after = read_ports(p["sysfs_root"])
        down = ports_back(after, keys, p["expected_rate"])
        r = result["restart"]
        how = "systemctl restart %s" % p["unit"] if unload is None else " ".join(r["argv"])
        loaded = (result.get("reload") or {}).get("loaded")
        raise Refusal("restart_failed", "%s failed (exit %d): %s%s%s" % (
            how, r["rc"], r["stderr"] or "no message", "\n" + r["status"] if r.get("status") else "",
            "; loaded back: %s" % ", ".join(loaded) if loaded else ""),
            escalate="reboot" if down else None, not_back=down or None, after=port_summary(after, keys),
            **{k: v for k, v in result.items() if k != "verified"})
    problems = verify(p, keys, result)
    result["msg"] = "%s %s; %s" % (what, "restarted" if unload is None else "reloaded",
                                   "verified: %s Active/LinkUp, no error counter rose over %ds"
                                   % (", ".join(keys), p["soak"]) if not problems else
                                   "NOT verified: " + "; ".join(problems))
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            node_drained=dict(type="bool", required=True),
            unit=dict(type="str", default="openibd"),
            method=dict(type="str", default="service", choices=list(METHODS)),
            expected_ports=dict(type="list", elements="str", default=[]),
            expected_rate=dict(type="float"),
            sysfs_root=dict(type="path", default="/sys"),
            proc_root=dict(type="path", default="/proc"),
            wait=dict(type="int", default=60),
            soak=dict(type="int", default=10),
            reload_peermem=dict(type="bool", default=True),
            controller_addresses=dict(type="list", elements="str", default=[]),
            slurmd_address=dict(type="str", default=""),
        ),
        supports_check_mode=True,
    )
    p = module.params
    # the unit reaches systemctl's argv: it may not read as an option or hold a newline
    bad = "; ".join(problems(dict(p, unit=[p["unit"]]), {"unit": "unit", "sysfs_root": "path", "proc_root": "path"}))
    bad_ports = problems(p, {"expected_ports": "ib_port"})
    if bad_ports and not bad:
        module.fail_json(msg="%s: give ports as mlx5_N/1 or a device name" % bad_ports[0],
                         blocked_by=["bad_expected_ports"], changed=False, verified=False, commands=[])
    bad = bad or "; ".join(x for x in [node_addr_problem(a, "controller_addresses entry") for a in
                                        p["controller_addresses"]] + [p["slurmd_address"] and node_addr_problem(
                                            p["slurmd_address"], "slurmd_address")] if x)
    if not bad and (p["wait"] < 0 or p["soak"] < 0 or p["wait"] > 3600 or p["soak"] > 3600):
        bad = "wait and soak are seconds between 0 and 3600"
    elif not bad and p["expected_rate"] is not None and p["expected_rate"] <= 0:
        bad = "expected_rate is a link rate in Gb/s, above 0"
    if bad:
        module.fail_json(msg=bad, blocked_by=["bad_parameter"], changed=False, verified=False, commands=[])
    try:
        result = run(module, p)
    except Refusal as exc:
        out = {"changed": False, "verified": False, "commands": []}
        out.update({k: v for k, v in exc.extra.items() if v is not None})
        out["blocked_by"] = exc.blocked
        module.fail_json(msg=exc.msg, **out)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
