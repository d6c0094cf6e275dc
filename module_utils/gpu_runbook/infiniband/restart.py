# SPDX-License-Identifier: Apache-2.0
"""Pure helpers for the ``ib_restart`` rung (library/ib_restart.py): who would make
``openibd`` refuse or break, which ports must come back, and whether they did.

What openibd checks before it unloads the stack (mlnx-ofa_kernel ``ofed_scripts/openibd``,
``stop()``): Lustre ``ko2iblnd`` in /proc/modules; the daemons opensm, osmtest, ibbs, ibns,
ibacm (pgrep); any process with ``/dev/infiniband`` open (lsof); and the storage modules
ib_isert, nvme_rdma, nvmet_rdma, rpcrdma, xprtrdma, ib_srpt. ``nvidia_peermem`` depends on
ib_core, so it is unloaded before and loaded again after (ladder-facts, openibd section).

Standard library only, Python 3.9+, never raise on odd input.
"""

import re

from .ports import NO_PHYSICAL_LINK

# module -> what has to stop first (openibd's own wording, shortened)
BLOCKING_MODULES = (
    ("ko2iblnd", "lustre_o2ib", "Lustre over InfiniBand (o2ib LNet): stop Lustre services"),
    ("rpcrdma", "nfs_rdma", "NFS over RDMA: unmount the NFS/RDMA mounts and unload rpcrdma"),
    ("xprtrdma", "nfs_rdma", "NFS over RDMA: unmount the NFS/RDMA mounts and unload xprtrdma"),
    ("nvme_rdma", "nvme_rdma", "NVMe over RDMA initiator: disconnect the nvme sessions and unload nvme_rdma"),
    ("nvmet_rdma", "nvme_rdma", "NVMe over RDMA target: close the nvmet sessions and unload nvmet_rdma"),
    ("ib_isert", "iser_srp_target", "iSER target: close the isert sessions and unload ib_isert"),
    ("ib_srpt", "iser_srp_target", "SRP target: stop it and unload ib_srpt"),
)
IB_DAEMONS = ("opensm", "osmtest", "ibbs", "ibns", "ibacm")
PEERMEM = "nvidia_peermem"
# any rise of these during the soak after a restart means the link is still sick (a cable)
WATCHED_COUNTERS = ("link_downed", "link_error_recovery", "symbol_error", "port_rcv_errors",
                    "local_link_integrity_errors", "excessive_buffer_overrun_errors")
_PORT_RE = re.compile(r"^(?P<dev>[A-Za-z][A-Za-z0-9_.\-]{0,63})(?:/(?P<port>\d{1,3}))?$")
UNIT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9:_.@\-]{0,127}$")


def parse_proc_modules(text):
    """/proc/modules text -> set of loaded module names ('name size refs deps state addr')."""
    out = set()
    for line in (text or "").splitlines():
        parts = line.split()
        if parts and re.match(r"^[A-Za-z0-9_\-]+$", parts[0]):
            out.add(parts[0].replace("-", "_"))
    return out


def blocking_modules(loaded):
    """Loaded modules that make openibd refuse -> [{"module", "blocker", "why"}] in a fixed order."""
    return [{"module": m, "blocker": b, "why": why} for m, b, why in BLOCKING_MODULES if m in loaded]


def running_daemons(procs):
    """``procs``: [{"pid", "comm"}] -> the IB daemons among them (opensm, ibacm, ...)."""
    return [p for p in procs if (p.get("comm") or "") in IB_DAEMONS]


def who(procs):
    """'python (pid 4711) on uverbs0, opensm (pid 1632)'."""
    out = []
    for p in procs:
        s = "%s (pid %s)" % (p.get("comm") or "?", p.get("pid"))
        if p.get("devices"):
            s += " on " + ",".join(p["devices"])
        out.append(s)
    return ", ".join(out)


def blockers(holders, daemons, modules, unreadable=0):
    """The pre-check verdict -> (blocked_by names, message); ([], "") when nothing blocks."""
    names, msgs = [], []
    if daemons:
        names.append("ib_daemons")
        msgs.append("IB daemons run: %s (openibd refuses; stop them first)" % who(daemons))
    if holders:
        names.append("dev_infiniband_held")
        msgs.append("/dev/infiniband is held by %s; stop them (or wait for the drain) and run again" % who(holders))
    for m in modules:
        if m["blocker"] not in names:
            names.append(m["blocker"])
        msgs.append("module %s is loaded: %s" % (m["module"], m["why"]))
    if unreadable:
        names.append("ib_users_unreadable")
        msgs.append("could not read the open files of %d process(es), so /dev/infiniband may be in use "
                    "(run as root)" % unreadable)
    return names, "; ".join(msgs)


def port_key(p):
    return "%s/%s" % (p["device"], p["port"])


def parse_port_specs(specs):
    """['mlx5_0/1', 'mlx5_3'] -> ([(dev, port or None)], [bad specs])."""
    good, bad = [], []
    for s in specs or []:
        m = _PORT_RE.match(str(s).strip())
        if m:
            good.append((m.group("dev"), int(m.group("port")) if m.group("port") else None))
        else:
            bad.append(str(s))
    return good, bad


def ib_ports(facts):
    """The InfiniBand ports (RoCE/Ethernet ports are not this rung's business; unknown layer counts)."""
    return [p for p in facts.get("ports", []) if p.get("link_layer") in (None, "InfiniBand")]


def select_ports(facts, specs):
    """-> (port keys in sysfs order, specs that match no port)."""
    ports = facts.get("ports", [])
    keys, missing = [], []
    for dev, num in specs:
        hit = [port_key(p) for p in ports if p["device"] == dev and (num is None or p["port"] == num)]
        if not hit:
            missing.append(dev if num is None else "%s/%d" % (dev, num))
        keys += [k for k in hit if k not in keys]
    return keys, missing


def default_expected(facts):
    """Every IB port that is Active now (the ports a restart must bring back)."""
    return [port_key(p) for p in ib_ports(facts) if p.get("state") in ("Active", "ActiveDefer")]


def unreadable_ports(facts, keys):
    """Expected ports whose state or physical state sysfs did not say in words we know."""
    by = {port_key(p): p for p in facts.get("ports", [])}
    return [k for k in keys if k not in by or by[k].get("state") is None or by[k].get("phys_state") is None]


def port_status(p, expected_rate=None):
    """One port -> None when it is Active + LinkUp (at >= expected_rate), else what is wrong."""
    if p is None:
        return "gone from sysfs"
    if p.get("state") not in ("Active", "ActiveDefer") or p.get("phys_state") != "LinkUp":
        return "%s/%s" % (p.get("state") or "unknown", p.get("phys_state") or "unknown")
    if expected_rate and (p.get("rate_gbps") is None or p["rate_gbps"] + 1e-6 < float(expected_rate)):
        return "rate %s Gb/s below the expected %s Gb/s" % (_num(p.get("rate_gbps")), _num(expected_rate))
    return None


def ports_back(facts, keys, expected_rate=None):
    """-> {port: what is wrong} for the expected ports that are not back (empty: all back)."""
    by = {port_key(p): p for p in facts.get("ports", [])}
    out = {}
    for k in keys:
        why = port_status(by.get(k), expected_rate)
        if why:
            out[k] = why
    return out


def port_summary(facts, keys):
    by = {port_key(p): p for p in facts.get("ports", [])}
    return {k: {"state": (by.get(k) or {}).get("state"), "phys_state": (by.get(k) or {}).get("phys_state"),
                "rate_gbps": (by.get(k) or {}).get("rate_gbps")} for k in keys}


def still_rising(before, after, keys, counters=WATCHED_COUNTERS):
    """Counter deltas between two reads -> {port: {counter: delta}} for every watched counter
    that rose (a counter that went backwards was reset: it is not counted as a rise)."""
    b = {port_key(p): p.get("counters", {}) for p in before.get("ports", [])}
    a = {port_key(p): p.get("counters", {}) for p in after.get("ports", [])}
    out = {}
    for k in keys:
        for c in counters:
            v0, v1 = b.get(k, {}).get(c), a.get(k, {}).get(c)
            if isinstance(v0, int) and isinstance(v1, int) and v1 > v0:
                out.setdefault(k, {})[c] = v1 - v0
    return out


def escalation(not_back, facts):
    """What to climb when ports do not come back: no physical link (Polling, training) or a slow
    link -> 'cable'; a port the driver left Disabled or down otherwise -> 'reboot'."""
    by = {port_key(p): p for p in facts.get("ports", [])}
    no_link = [s for s in NO_PHYSICAL_LINK if s != "Disabled"]
    if any((by.get(k) or {}).get("phys_state") in no_link or "rate" in why for k, why in not_back.items()):
        return "cable"
    return "reboot"


def plan_argv(systemctl, modprobe, unit, peermem_loaded, reload_peermem):
    """The argv lists a restart runs, in order."""
    steps = []
    if peermem_loaded and reload_peermem:
        steps.append([modprobe, "-r", PEERMEM])
    steps.append([systemctl, "restart", unit])
    if peermem_loaded and reload_peermem:
        steps.append([modprobe, PEERMEM])
    return steps


def _num(v):
    if v is None:
        return "unknown"
    return ("%g" % v) if isinstance(v, float) else str(v)

