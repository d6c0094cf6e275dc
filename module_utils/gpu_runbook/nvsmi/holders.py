# SPDX-License-Identifier: Apache-2.0
"""Pure helpers for what else holds a GPU around ``nvidia-smi -r`` (``library/gpu_reset.py``):
DCGM (``nv-hostengine``, ``dcgm-exporter``) as systemd units or bare processes, ``nvidia_drm``,
and the NVSwitch / Fabric Manager / NVLink-peer rules of a single-GPU reset.

Facts (../shared/design/ladder-facts.md, "GPU reset"): no process may hold the device (CUDA
apps, X, monitors, another nvidia-smi) [R1]; NVSentinel stops DCGM host engine / exporter
before a reset and starts them after [R4][R5]; on an Ampere NVSwitch system a single GPU can be
reset only while Fabric Manager RUNS, Hopper and later have no FM dependency, and before
Ampere all NVLink peers must be reset in one command [R1][R34].

Text in, dicts out, never raises on garbage; standard library only.
"""

import re

from .model import as_text
from .topo import nvlink_peers, read_matrix

# stop order: the exporter talks to the host engine, so it goes first and comes back last
MONITOR_UNITS = ("dcgm-exporter", "nvidia-dcgm", "dcgm")
FABRIC_MANAGER_UNIT = "nvidia-fabricmanager"
DRM_MODULE = "nvidia_drm"
# the daemon behind persistence mode: released by ``nvidia-smi -pm 0``, not a holder to name --
# known by its unit's MainPID, never by its name (any process can call itself that)
PERSISTENCE_UNIT = "nvidia-persistenced"

_GPU_DEV_RE = re.compile(r"^nvidia(\d+)$")
_GENERATIONS = (  # (generation, pattern on the product name), first match wins
    ("hopper_plus", re.compile(r"\b(?:G?B(?:100|200|300)|G?H(?:100|200|800|20)|GB\d{3}|RTX PRO \d+ Blackwell|"
                               r"RTX 50\d\d)\b", re.I)),
    ("ampere", re.compile(r"\b(?:A(?:100|800|30|40|10G?|16|2)|RTX A\d+|RTX 30\d\d|L40S?|L4|L20|"
                          r"RTX 40\d\d|RTX \d+ Ada)\b", re.I)),
    ("pre_ampere", re.compile(r"\b(?:V100S?|TITAN (?:RTX|V|Xp|X)|T4|P100|P40|P4|P6|K80|M60|M40|RTX 20\d\d|"
                              r"GTX \d{3,4}|Quadro (?:RTX|GV|GP)\w*)\b", re.I)),
)


# ----------------------------------------------------------------------------------- systemd

def parse_systemctl_show(text):
    """``systemctl show UNIT [--property=...]`` -> {key: value} (KEY=VALUE lines)."""
    out = {}
    for line in as_text(text).splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def unit_state(props, name):
    """-> {"name", "loaded", "active", "state", "pid"}: loaded = the unit file exists (LoadState
    loaded); active = ActiveState active/activating/reloading; pid = MainPID or None."""
    load = props.get("LoadState", "")
    state = props.get("ActiveState", "") or "unknown"
    try:
        pid = int(props.get("MainPID", "0"))
    except ValueError:
        pid = 0
    return {"name": name, "loaded": load == "loaded", "active": state in ("active", "activating", "reloading"),
            "state": state, "pid": pid or None}


# ----------------------------------------------------------------------------------- procfs

def parse_proc_modules(text):
    """/proc/modules -> {name: {"refcount": int, "users": [modules]}}."""
    out = {}
    for line in as_text(text).splitlines():
        cols = line.split()
        if len(cols) < 3:
            continue
        try:
            refs = int(cols[2])
        except ValueError:
            refs = 0
        users = [u for u in (cols[3] if len(cols) > 3 else "-").split(",") if u and u != "-"]
        out[cols[0]] = {"refcount": refs, "users": users}
    return out


def holds_gpu(devices, minor):
    """Whether open device nodes (names under /dev: ``nvidia3``, ``nvidiactl``, ``dri/card0``)
    hold the GPU whose /dev/nvidiaN number is ``minor``; with ``minor`` None any GPU node counts
    (on doubt, a holder). ``nvidiactl`` / ``nvidia-uvm`` alone hold no particular GPU."""
    for d in devices or ():
        m = _GPU_DEV_RE.match(d)
        if m and (minor is None or int(m.group(1)) == minor):
            return True
    return False


def who(procs):
    """'dcgm-exporter (pid 777), Xorg (pid 2100)'."""
    return ", ".join("%s (pid %s)" % (p.get("comm") or "?", p.get("pid")) for p in procs)


def classify_holders(procs, minor, unit_pids, daemon_pids=()):
    """Processes ([{"pid", "comm", "devices"}]) that hold GPU ``minor`` -> (owned, bare):
    owned = the main process of a monitor unit that will be stopped (``unit_pids``: pid -> unit);
    bare = every other holder, which blocks the reset -- except ``daemon_pids``, the main process
    of the persistence daemon's unit (``nvidia-smi -pm 0`` releases it). A process that merely
    calls itself nvidia-persistenced is a holder like any other."""
    owned, bare = [], []
    for p in procs or ():
        if not holds_gpu(p.get("devices"), minor) or p.get("pid") in daemon_pids:
            continue
        if p.get("pid") in unit_pids:
            owned.append(dict(p, unit=unit_pids[p["pid"]]))
        else:
            bare.append(p)
    return owned, bare


def drm_state(modules, procs):
    """nvidia_drm from /proc/modules and the processes holding /dev/dri -> {"loaded", "refcount",
    "users": [procs], "in_use", "message"}."""
    info = (modules or {}).get(DRM_MODULE)
    users = [p for p in procs or () if any(d.startswith("dri/") for d in p.get("devices") or ())]
    out = {"loaded": info is not None, "refcount": info["refcount"] if info else 0,
           "dependents": info["users"] if info else [], "users": users, "in_use": False, "message": ""}
    if info is None:
        return out
    if users or info["refcount"] > 0 or info["users"]:
        out["in_use"] = True
        names = [who(users)] if users else []
        names += ["module %s" % m for m in info["users"]]
        out["message"] = "nvidia_drm is in use by %s (refcount %d): a display (X, a Wayland compositor, the " \
                         "console) holds the GPU; stop it and run again" % (
                             ", ".join(names) or "something the kernel counts", info["refcount"])
    return out


# ----------------------------------------------------------------------------------- NVSwitch

def generation(name):
    """The product name -> "hopper_plus" | "ampere" (Ampere and Ada) | "pre_ampere" | None."""
    n = as_text(name)
    for gen, rx in _GENERATIONS:
        if rx.search(n):
            return gen
    return None


def parse_topo_peers(text):
    """``nvidia-smi topo -m`` -> {gpu index: [indexes of its NVLink peers]} (``NV<n>`` cells):
    read by the one reader of the format (nvsmi/topo.py)."""
    return nvlink_peers(read_matrix(text))


def fabric_verdict(gen, name, evidence, fm):
    """On a GPU of generation ``gen``, with NVSwitch ``evidence`` (list of words, empty = none seen)
    and the Fabric Manager unit state ``fm`` (``unit_state``) -> None (a single-GPU reset may run)
    or (blocked_by, message). Hopper and later: no FM dependency, never asked here."""
    if gen == "hopper_plus" or not evidence:
        return None
    if fm and fm["active"]:
        return None
    st = ("%s: %s" % (fm["name"], fm["state"])) if fm and fm["loaded"] else "%s not installed" % FABRIC_MANAGER_UNIT
    return ("fabric_manager_not_running",
            "Fabric Manager not running (%s) on an NVSwitch system (%s): %s GPU (%s) can be reset alone only "
            "while it runs, and a dead Fabric Manager is itself a fault; start it (systemctl start %s) and run "
            "again, or reset all GPUs of the NVLink fabric together"
            % (st, ", ".join(evidence), {"ampere": "an Ampere", "pre_ampere": "a pre-Ampere"}.get(gen, "an unrecognised"),
               name or "unknown model", FABRIC_MANAGER_UNIT))


def peers_message(pci, peers, gen="pre_ampere", name=None):
    """peers: [{"index", "pci"}] -> the refusal naming them."""
    names = ["GPU %s (%s)" % (p.get("index"), p.get("pci") or "?") for p in peers]
    what = "a pre-Ampere GPU" if gen == "pre_ampere" else "a GPU of a model not known here (%s)" % (name or "no name")
    return ("GPU %s is %s with NVLink peers %s: they must be reset in one command with it "
            "(nvidia-smi -r -i <all of them>); this module resets one GPU, so none was reset"
            % (pci, what, ", ".join(names)))


def nvswitch_evidence(nvswitch_nodes, fabric_state, fm):
    """Why this looks like an NVSwitch system: device nodes, a fabric state, the FM unit installed."""
    ev = list(nvswitch_nodes or ())
    if fabric_state:
        ev.append("fabric state %s" % fabric_state)
    if fm and fm["loaded"]:
        ev.append("unit %s installed" % fm["name"])
    return ev


def nvlink_peer_list(topo_text, index, identity_rows):
    """-> [{"index", "pci"}] NVLink peers of GPU ``index`` (``identity_rows``: parsed --query-gpu),
    or None when ``topo -m`` has no row for it."""
    peers = parse_topo_peers(topo_text)
    if index not in peers:
        return None
    pcis = dict((r.get("index"), r.get("pci")) for r in identity_rows or ())
    return [{"index": i, "pci": pcis.get(i)} for i in peers[index]]


def monitor_refusal(pci, bare, active, release_monitors):
    """(blocked_by, message) when a bare process, or an active unit with release off, holds the GPU."""
    if bare:
        return ("gpu_holders", "GPU %s is held by %s, which no unit of monitor_units owns (a monitor in a container, "
                "another nvidia-smi, a client): stop it and run again" % (pci, who(bare)))
    if active and not release_monitors:
        names = [u["name"] for u in active]
        return ("monitors_running", "monitor unit(s) %s hold GPU %s and release_monitors is false: stop them "
                "(systemctl stop %s) or let the module release them" % (", ".join(names), pci, " ".join(names)))
    return None


def reset_plan(smi, systemctl, modprobe, pci, persistence_on, restore_pm, hold):
    """The argv lists a real run executes, in order: stop units, unload nvidia_drm, -pm 0, -r, -pm 1,
    -q -x, load nvidia_drm, start units (the reverse of their stop)."""
    pre, post = [], []
    for u in hold.get("units") or ():
        pre.append([systemctl, "stop", u["name"]])
        post.insert(0, [systemctl, "start", u["name"]])
    if (hold.get("nvidia_drm") or {}).get("loaded"):
        pre.append([modprobe, "-r", DRM_MODULE])
        post.insert(0, [modprobe, DRM_MODULE])
    if persistence_on:
        pre.append([smi, "-pm", "0", "-i", pci])
    pre.append([smi, "-r", "-i", pci])
    if persistence_on and restore_pm:
        pre.append([smi, "-pm", "1", "-i", pci])
    return pre + [[smi, "-q", "-x", "-i", pci]] + post


def not_restored(bad):
    """'NOT restored: dcgm-exporter (failed, exit 1: ...) -- by hand: systemctl start dcgm-exporter'."""
    return "NOT restored: %s -- by hand: %s" % (
        "; ".join("%s (%s%s)" % (b["name"], b.get("state"), ", " + b["error"] if b.get("error") else "") for b in bad),
        "; ".join(b["by_hand"] for b in bad))
