# -*- coding: utf-8 -*-
# Copyright: gpu-runbook contributors
# SPDX-License-Identifier: Apache-2.0
"""Slurm's nodes as an Ansible inventory, from the real `scontrol` (parsed by the engine's one
Slurm parser, module_utils/gpu_runbook/slurm.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_nodes
short_description: Slurm nodes as an inventory, grouped by partition, state and feature
description:
  - Runs C(scontrol -o show node) (and C(scontrol -o show job ID) with O(job_id)) on the machine
    running Ansible, as an argument list, never through a shell.
  - "Groups: C(partition_<name>), C(state_<state>), C(feature_<feature>), and O(gpu_group) (default
    C(gpu_nodes), what the playbooks target) for the nodes with a C(gpu) gres; with O(job_id) also C(job_<id>)."
  - "C(state_<state>) is one state per node, the way an operator names it: C(down) (base state DOWN,
    whatever its flags), else C(drained) or C(draining) (DRAIN set; draining while jobs still run), else
    C(fail) or C(failing) (FAIL set), else the base state in lower case (C(idle), C(allocated), C(mixed),
    C(future), C(unknown)). Flags such as NOT_RESPONDING are in C(slurm_state_flags)."
  - "A feature becomes C(feature_<feature>) only, never a bare group: a feature named like a host or
    like C(gpu_nodes) would otherwise merge into it."
  - "Slurm's words are data, not inventory: a node whose name or C(NodeAddr) is not a node name or an IP
    address (C(-oProxyCommand=...), C(ALL), a Slurm state word; the rule C(slurm_node) applies) is left out
    with a warning naming it; a partition or feature that is not a plain name (letters, digits, C(_), C(-)) or
    would make a group named like an Ansible variable (C(ansible_connection=local), C(ansible_*), C(hostvars))
    makes no group, with a warning."
  - "Failure domains: with O(topology), each node's leaf switch from C(scontrol show topology) is
    C(slurm_switch) and C(gpu_runbook_domain) (what the remediation plan reads as the node's failure domain;
    a C(gpu_runbook_domain) in C(host_vars) wins). No topology plugin in Slurm: neither is set."
  - "Host vars: C(slurm_node_name), C(slurm_state), C(slurm_state_raw), C(slurm_state_flags),
    C(slurm_reason), C(slurm_partitions), C(slurm_features), C(slurm_gres), and C(ansible_host) (Slurm's
    NodeAddr), C(slurm_switch) and C(gpu_runbook_domain) (see above). Connection settings (C(ansible_user), keys) come from C(group_vars) next to the config file."
  - Any failure (no C(scontrol), slurmctld unreachable, output that holds no node, unknown job) is one
    line naming the command and Slurm's own words. With C(any_unparsed_is_failed) in C(ansible.cfg) the run
    stops there instead of going on with an empty inventory.
  - The config file's name must end in C(.slurm_nodes.yml) or C(.slurm_nodes.yaml).
version_added: "1.0.0"
author: gpu-runbook
requirements:
  - C(scontrol) (slurm-client) on the machine running Ansible, with a C(slurm.conf) or C(SLURM_CONF)
    naming the controller
extends_documentation_fragment:
  - constructed
options:
  plugin:
    description: The name of this plugin; it makes a YAML file this plugin's config.
    required: true
    type: str
    choices: [slurm_nodes]
  scontrol:
    description: The C(scontrol) to run (a name looked up on C(PATH), or a path).
    type: str
    default: scontrol
  slurm_conf:
    description: C(SLURM_CONF) for C(scontrol); unset, Slurm's own default (or the environment's) applies.
    type: path
  environment:
    description: More environment variables for C(scontrol) (e.g. C(SLURM_CLUSTERS)).
    type: dict
    default: {}
  partitions:
    description: Only the nodes in one of these partitions (empty = every node).
    type: list
    elements: str
    default: []
  job_id:
    description: Only the nodes of this job (C(scontrol -o show job ID)); a job without nodes is an error.
    type: str
  gpu_group:
    description: The group of the nodes with a C(gpu) gres.
    type: str
    default: gpu_nodes
  partition_prefix:
    description: Prefix of the partition groups.
    type: str
    default: partition_
  state_prefix:
    description: Prefix of the state groups.
    type: str
    default: state_
  feature_prefix:
    description: Prefix of the feature groups.
    type: str
    default: feature_
  topology:
    description: Read C(scontrol show topology) for each node's leaf switch (its failure domain); a Slurm
      without a topology plugin answers nothing and no domain is set.
    type: bool
    default: true
  timeout:
    description: Seconds each C(scontrol) call may take.
    type: int
    default: 30
"""

EXAMPLES = r"""
# inventory-examples/slurm-cluster/cluster.slurm_nodes.yml
plugin: slurm_nodes
slurm_conf: /etc/slurm/slurm.conf
partitions: [gpu]
keyed_groups:
  - key: slurm_reason is not none
    prefix: has_reason

# ansible-inventory -i inventory-examples/slurm-cluster/cluster.slurm_nodes.yml --graph
# ansible-playbook playbooks/diagnose.yml -i inventory-examples/slurm-cluster/cluster.slurm_nodes.yml -l feature_rack3
# the nodes of one job only:
#   plugin: slurm_nodes
#   job_id: "12345"
"""

import os
import re
import subprocess
import sys
import weakref

from ansible.errors import AnsibleError, AnsibleParserError
from ansible.plugins.inventory import BaseInventoryPlugin, Constructable
from ansible.utils.display import Display
from ansible.vars.reserved import get_reserved_names

try:
    from gpu_runbook import slurm
    from gpu_runbook.validate import shown
except ImportError:  # a checkout without the package installed (an AWX project): the engine beside it
    sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "module_utils"))
    from gpu_runbook import slurm
    from gpu_runbook.validate import shown

display = Display()
# auto and enable_plugins may both try one config file in one inventory load: a failure asks Slurm
# once. Kept per inventory data, so a refresh_inventory (a new one) asks again.
_FAILED = weakref.WeakKeyDictionary()


def node_state(node):
    """One state per node, as an operator names it (see DOCUMENTATION)."""
    base, flags = node.get("base_state"), node.get("flags") or []
    if base == "DOWN":
        return "down"
    if node.get("drain"):
        return node["drain"].lower()
    if "FAIL" in flags:
        return "failing" if base in ("ALLOCATED", "MIXED") else "fail"
    return (base or "unknown").lower()


# a group name Ansible or a playbook reads as something else (magic variables, the implicit groups)
_MAGIC = frozenset(("all", "ungrouped", "hostvars", "groups", "group_names", "inventory_hostname",
                    "inventory_hostname_short", "inventory_dir", "inventory_file", "playbook_dir", "role_path",
                    "play_hosts", "omit", "environment"))
_GROUP_VALUE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


def group_problem(value, group, what):
    """None when Slurm's ``value`` (a partition or feature) may make the group ``group``, else why not."""
    if not isinstance(value, str) or not _GROUP_VALUE.fullmatch(value):
        return "%s %s is not a plain name (letters, digits, '_', '-'): no group made of it" % (what, shown(value))
    for name in (value.lower(), group.lower().replace("-", "_")):
        if name.startswith("ansible_") or name in _MAGIC or name in get_reserved_names():
            return "%s %s would make group %s, named like an Ansible variable: no group made of it" % (
                what, shown(value), shown(group))
    return None


def slurm_hosts(nodes, partitions=(), job=None, prefixes=None, gpu_group="gpu_nodes", switches=None,
                warnings=None):
    """Parsed nodes -> {name: {"vars": {...}, "groups": [...]}}, in Slurm's order. Pure: the grouping
    the plugin adds to the inventory. ``job``: parse_scontrol_show_job's dict (only its nodes kept);
    ``switches``: {node: leaf switch} (parse_scontrol_show_topology); ``warnings``: a list that gets
    one line per node left out and per value that made no group."""
    prefixes = dict({"partition": "partition_", "state": "state_", "feature": "feature_"}, **(prefixes or {}))
    wanted = set(partitions or ())
    in_job = set(job["nodes"]) if job else None
    warnings = [] if warnings is None else warnings
    switches = switches or {}
    out = {}
    for node in nodes:
        name = node.get("name")
        if not name or (wanted and not wanted.intersection(node["partitions"])) or \
                (in_job is not None and name not in in_job):
            continue
        bad = slurm.node_name_problem(name, "NodeName") or \
            (node.get("node_addr") and slurm.node_addr_problem(node["node_addr"], "NodeAddr of %s" % shown(name)))
        if bad:
            warnings.append("slurm_nodes: node left out of the inventory: %s" % bad)
            continue
        state = node_state(node)
        groups = [prefixes["state"] + state]
        for what, values in (("partition", node["partitions"]), ("feature", node["features"])):
            for value in values:
                why = group_problem(value, prefixes[what] + str(value), "%s of %s:" % (what, name))
                if why:
                    warnings.append("slurm_nodes: " + why)
                else:
                    groups.append(prefixes[what] + value)
        if "gpu" in slurm.gres_names(node["gres"]):
            groups.append(gpu_group)
        if job:
            groups.append("job_%s" % job["job_id"])
        hostvars = {"slurm_node_name": name, "slurm_state": state, "slurm_state_raw": node["state"],
                    "slurm_state_flags": node["flags"], "slurm_reason": node["reason"],
                    "slurm_partitions": node["partitions"], "slurm_features": node["features"],
                    "slurm_gres": node["gres"]}
        if node.get("node_addr"):
            hostvars["ansible_host"] = node["node_addr"]
        if switches.get(name):
            hostvars["slurm_switch"] = hostvars["gpu_runbook_domain"] = switches[name]
        if job:
            hostvars["slurm_job_id"] = job["job_id"]
        out[name] = {"vars": hostvars, "groups": groups}
    return out


class InventoryModule(BaseInventoryPlugin, Constructable):
    NAME = "slurm_nodes"

    def verify_file(self, path):
        return super().verify_file(path) and path.endswith((".slurm_nodes.yml", ".slurm_nodes.yaml"))

    def parse(self, inventory, loader, path, cache=True):
        super().parse(inventory, loader, path, cache)
        failed = _FAILED.setdefault(getattr(inventory, "__wrapped__", inventory), {})
        if path in failed:
            raise AnsibleParserError(failed[path])
        try:
            self._read_config_data(path)
            hosts = self._slurm_hosts()
        except AnsibleError as exc:  # a bad option too: one line, not Ansible's chained message
            failed[path] = "slurm_nodes: %s" % " ".join(str(exc.message).split())
            raise AnsibleParserError(failed[path])
        self._populate(hosts)

    def _slurm_hosts(self):
        nodes = slurm.parse_scontrol_show_nodes(self._scontrol("-o", "show", "node"))
        if not nodes:
            raise AnsibleParserError("`scontrol -o show node` printed no node (%s)" % self._conf_hint())
        job = None
        if self.get_option("job_id"):
            job_id = str(self.get_option("job_id")).strip()
            job = slurm.parse_scontrol_show_job(self._scontrol("-o", "show", "job", job_id))
            if not job:
                raise AnsibleParserError("Slurm knows no job %s" % job_id)
            if not job["nodes"]:
                raise AnsibleParserError("job %s has no nodes (state %s)" % (job_id, job["state"]))
        prefixes = {k: self.get_option(k + "_prefix") for k in ("partition", "state", "feature")}
        warnings = []
        hosts = slurm_hosts(nodes, self.get_option("partitions"), job, prefixes, self.get_option("gpu_group"),
                            self._switches(), warnings)
        for line in warnings:
            display.warning(line)
        return hosts

    def _switches(self):
        """{node: leaf switch}, or {} when Slurm has no topology plugin (its answer is an error)."""
        if not self.get_option("topology"):
            return {}
        try:
            return slurm.parse_scontrol_show_topology(self._scontrol("show", "topology"))
        except AnsibleParserError as exc:
            display.vvv("slurm_nodes: no failure domains from the topology: %s" % exc.message)
            return {}

    def _populate(self, hosts):
        strict = self.get_option("strict")
        for name, host in hosts.items():
            self.inventory.add_host(name)
            for group in host["groups"]:
                self.inventory.add_child(self.inventory.add_group(self._sanitize_group_name(group)), name)
            for key, value in host["vars"].items():
                self.inventory.set_variable(name, key, value)
            hostvars = self.inventory.get_host(name).get_vars()
            self._set_composite_vars(self.get_option("compose"), hostvars, name, strict=strict)
            self._add_host_to_composed_groups(self.get_option("groups"), hostvars, name, strict=strict)
            self._add_host_to_keyed_groups(self.get_option("keyed_groups"), hostvars, name, strict=strict)

    def _conf_hint(self):
        return "SLURM_CONF=%s" % (self._environ().get("SLURM_CONF") or "Slurm's default")

    def _environ(self):
        env = dict(os.environ, SLURM_TIME_FORMAT="standard")  # the reason's [user@time] tail as parsed
        if self.get_option("slurm_conf"):
            env["SLURM_CONF"] = self.get_option("slurm_conf")
        env.update({str(k): str(v) for k, v in (self.get_option("environment") or {}).items()})
        return env

    def _scontrol(self, *args):
        argv = [self.get_option("scontrol")] + list(args)
        shown = " ".join(["scontrol"] + list(args))
        try:
            proc = subprocess.run(argv, env=self._environ(), capture_output=True, text=True, errors="replace",
                                  timeout=self.get_option("timeout"), stdin=subprocess.DEVNULL)
        except FileNotFoundError:
            raise AnsibleParserError("%s not found: install slurm-client or set `scontrol:` in the config"
                                     % argv[0])
        except OSError as exc:
            raise AnsibleParserError("`%s` could not run: %s" % (shown, exc.strerror or exc))
        except subprocess.TimeoutExpired:
            raise AnsibleParserError("`%s` gave no answer in %ss (%s)" % (shown, self.get_option("timeout"),
                                                                           self._conf_hint()))
        if proc.returncode != 0:
            said = [line.strip() for line in (proc.stderr or proc.stdout).splitlines() if line.strip()]
            kind = slurm.slurm_error_kind(proc.stderr or proc.stdout)
            hint = {"unreachable": "; is slurmctld up?", "denied": "; munge or permissions?"}.get(kind, "")
            raise AnsibleParserError("`%s` failed (rc %s): %s (%s)%s" % (
                shown, proc.returncode, said[-1] if said else "no output", self._conf_hint(), hint))
        return proc.stdout
