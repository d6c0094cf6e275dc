# SPDX-License-Identifier: Apache-2.0
"""Controller only: hosts' variables as Ansible resolves them, read in bulk.

The action plugins (plugins/action) read one variable of every host of a play -- each
host's registered gpu_health result, its Slurm read -- from the HostVars object Ansible gives
a task (``task_vars["hostvars"]``). Nothing here runs on a host, and nothing imports Ansible:
the HostVars is used through what it offers (``__contains__``, ``raw_get``)."""

from collections.abc import Mapping

MISSING = object()  # the host has no such variable (not None: a registered null is a value)


class HostVarsReader(object):
    """One variable of many hosts, untemplated (as a registered result is).

    A registered variable (``register:``, also set_fact) outranks every source but extra vars,
    so where a host has ``var`` registered that is its value. Reading it there skips
    VariableManager.get_vars, which for each host merges every source and deep-copies the
    host's facts: at 10,000 hosts with gpu_health facts ~11 CPU-s, against ~0 here
    (tests/benchmarks/bench_aggregate.py). Ansible keeps registered variables in the variable
    manager's non-persistent cache; where that is not there (another ansible-core), or the
    variable is an extra var, the host is read through ``hostvars.raw_get`` (what
    ``hostvars[host]`` reads). tests/integration/test_report_input.py checks both agree."""

    def __init__(self, hostvars):
        if hostvars is None or not hasattr(hostvars, "raw_get"):
            raise ValueError("hostvars are not available to this task")
        self.hostvars = hostvars
        manager = getattr(hostvars, "_variable_manager", None)
        cache = getattr(manager, "_nonpersistent_fact_cache", None)
        extra = getattr(manager, "extra_vars", None)
        self._registered = cache if isinstance(cache, Mapping) else {}
        self._extra = extra if isinstance(extra, Mapping) else None

    def unknown(self, hosts):
        """The hosts the inventory does not have."""
        return [h for h in hosts if h not in self.hostvars]

    def get(self, host, var):
        """``var`` of ``host`` as Ansible resolves it, or MISSING."""
        if self._extra is not None and var not in self._extra:
            mine = self._registered.get(host) if host in self._registered else None
            if isinstance(mine, Mapping) and var in mine:
                return mine[var]
        found = self.hostvars.raw_get(host)
        return found.get(var, MISSING) if isinstance(found, Mapping) else MISSING


def reader_for(task_vars, hosts, instead):
    """(HostVarsReader, None) for a task's variables when it can read every one of ``hosts``,
    else (None, why), naming the option to pass ``instead``."""
    try:
        reader = HostVarsReader((task_vars or {}).get("hostvars"))
    except ValueError as exc:
        return None, "%s; pass %s instead of hosts" % (exc, instead)
    unknown = reader.unknown(hosts)
    if unknown:
        return None, "hosts not in the inventory: %s" % ", ".join(unknown[:5]) + (", ..." if len(unknown) > 5 else "")
    return reader, None


def dig(value, keys, default=None):
    """``value[k1][k2]...``, or ``default`` where a step is not a mapping or lacks the key
    (Jinja's ``map(attribute='k1.k2', default=...)``: a null part way is undefined too)."""
    for key in keys:
        if not isinstance(value, Mapping) or key not in value:
            return default
        value = value[key]
    return value
