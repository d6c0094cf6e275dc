# SPDX-License-Identifier: Apache-2.0
"""Pure helpers for ``ib_restart method=modules``: reload the mlx5 driver with modprobe on an
inbox rdma-core stack (no openibd; ladder-facts, openibd section: "reload = modprobe -r / modprobe").

What has to come out before ``mlx5_core`` is read from /proc/modules' "used by" column: every
module that (transitively) uses mlx5_core. The mlx5 auxiliary drivers known to come back cleanly
(mlx5_ib and friends) are unloaded first, users first, and loaded again after in reverse order; any
other user (mlx5_vdpa / mlx5_vfio_pci serve VMs, an unknown third-party module) blocks the reload
by name. ib_core's users (rdma_ucm, ib_ipoib, ib_umad, ...) do not use mlx5_core: they stay loaded
and re-bind to the HCAs when mlx5_ib comes back; processes that hold their devices are refused by
the /dev/infiniband pre-check.

Standard library only, Python 3.9+, never raise on odd input.
"""

import re

from ..findings import small_int

CORE = "mlx5_core"
IB_DRIVER = "mlx5_ib"
# mlx5_core's auxiliary drivers that a reload may take out and bring back
RELOADABLE = (IB_DRIVER, "mlx5_fwctl", "mlx5_dpll")
METHODS = ("auto", "service", "modules")
_NAME = re.compile(r"^[A-Za-z0-9_\-]{1,64}$")


def parse_module_table(text):
    """/proc/modules -> {name: {"refs": int or None, "used_by": [names]}} ('name size refs deps state addr';
    deps is '-' or 'a,b,'). Names with '-' are spelt with '_' as the kernel does."""
    out = {}
    for line in (text or "").splitlines():
        parts = line.split()
        if not parts or not _NAME.match(parts[0]):
            continue
        refs = small_int(parts[2]) if len(parts) > 2 else None
        deps = parts[3] if len(parts) > 3 else "-"
        users = [] if deps in ("-", "") else [u.replace("-", "_") for u in deps.split(",") if _NAME.match(u)]
        out[parts[0].replace("-", "_")] = {"refs": refs, "used_by": users}
    return out


def users_of(table, name, skip=()):
    """Every loaded module that uses ``name``, directly or through another user (``skip`` left out)."""
    seen, todo = set(), [name]
    while todo:
        for u in (table.get(todo.pop()) or {}).get("used_by", []):
            if u not in seen and u not in skip and u != name:
                seen.add(u)
                todo.append(u)
    return seen


def unload_order(table, names):
    """``names`` in an order where a module comes out only after every user of it among them
    (mlx5_core last, mlx5_ib just before it) -> (order, names stuck in a loop)."""
    left, order = set(names), []
    rank = {CORE: 2, IB_DRIVER: 1}
    while left:
        ready = sorted((m for m in left if not set((table.get(m) or {}).get("used_by", [])) & left),
                       key=lambda m: (rank.get(m, 0), m))
        if not ready:
            return order, sorted(left)
        order.append(ready[0])
        left.discard(ready[0])
    return order, []


def reload_plan(table, skip=()):
    """-> {"unload": [modules in order, mlx5_core last], "blocked": [(name, words)...]}.
    ``skip``: modules handled apart (nvidia_peermem, unloaded first)."""
    if CORE not in table:
        return {"unload": [], "blocked": [("mlx5_not_loaded", "%s is not a loaded module (built into the kernel, "
                                            "or not an mlx5 HCA): method=modules reloads only the mlx5 driver"
                                            % CORE)]}
    users = users_of(table, CORE, skip)
    blocked = []
    foreign = sorted(u for u in users if u not in RELOADABLE)
    if foreign:
        blocked.append(("mlx5_users", "module(s) %s use %s (/proc/modules 'used by') and are not known to come "
                        "back after a reload: unload them first (or restart the stack by hand)"
                        % (", ".join(foreign), CORE)))
    order, loop = unload_order(table, users | {CORE})
    if loop:
        blocked.append(("mlx5_users", "/proc/modules shows a dependency loop among %s" % ", ".join(loop)))
    pinned = []
    for m in order:
        e = table.get(m) or {}
        extra = (e.get("refs") or 0) - len(e.get("used_by") or [])
        if extra > 0:
            pinned.append("%s (%d reference(s) no module accounts for)" % (m, extra))
    if pinned:
        blocked.append(("module_in_use", "in use by something other than a module: %s; a reload would fail or "
                        "pull the driver from under it" % ", ".join(pinned)))
    return {"unload": order, "blocked": blocked}


def reload_argv(modprobe, unload, peermem):
    """The argv lists of a reload: nvidia_peermem out (when ``peermem``), ``unload`` in order, then
    everything back in reverse order (mlx5_core first), nvidia_peermem last."""
    steps = [[modprobe, "-r", "nvidia_peermem"]] if peermem else []
    steps += [[modprobe, "-r", m] for m in unload]
    steps += [[modprobe, m] for m in reversed(unload)]
    if peermem:
        steps.append([modprobe, "nvidia_peermem"])
    return steps


def unit_presence(rc, out, err):
    """``systemctl cat <unit>`` -> True (there is a unit file), False (systemd says there is none),
    or None (it could not tell: no systemd, no bus, ...)."""
    if rc == 0 and (out or "").strip():
        return True
    text = "%s\n%s" % (out or "", err or "")
    if rc != 0 and re.search(r"No files found for|could not be found|not-found", text):
        return False
    return None
