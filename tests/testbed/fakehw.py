#!/usr/bin/python3
"""Stateful fake GPU / InfiniBand / kernel-log tools for one emulated host.

Runs on the emulated host with /usr/bin/python3 (stdlib only). Every tool is a thin
``sh`` wrapper in ``/opt/fakehw/bin`` that execs ``python3 fakehw.py <tool> ARGS``.
The same module is imported on the controller side (``tests.testbed``) with an
explicit root directory, so tests mutate the state through the same code.

State: ``<root>/state.json`` (written by the scenario loader, mutated by the fakes).
Every invocation is appended to ``<root>/commands.log`` as one JSON line.
``<root>/sys`` is the host's ``sysfs_root`` (``class/infiniband/...``), rewritten from
the state on every invocation (IB counters are ``base + rate * seconds since fault``).

GPU reset knobs in the state: ``gpus[i]["persistence"]`` (default True = Enabled; ``nvidia-smi
-pm 0|1 [-i id]`` sets it), top-level ``"reset_refuses_on_persistence": true`` (``-r`` is then
refused, exit 255 "In use by another client", while persistence is Enabled, as the real tool
does), and ``gpus[i]["reset_outcome"]``: ``"lost"`` (exit 15, the GPU falls off the bus),
``"no_permission"`` (exit 4) or ``"no_effect"`` (exit 0, nothing cleared). Other holders refuse
``-r`` the same way: ``services[u]`` with a ``"pid"`` (``{"active", "pid", "comm"}``, e.g.
``nvidia-dcgm`` / ``dcgm-exporter``; ``systemctl start|stop|show|is-active`` change and read them,
``"start_fails"`` / ``"stop_fails"`` inject failures), ``"gpu_holders": [{"pid", "comm", "gpus"?,
"dri"?}]`` (bare processes), a loaded ``nvidia_drm`` (``"module_refcount": {"nvidia_drm": n}`` in
/proc/modules). ``"nvswitches": n`` renders ``<root>/dev/nvidia-nvswitch0..`` when ``<root>/dev``
exists; ``"nvlink_groups": [[0, 1, 2, 3], ...]`` drives ``nvidia-smi topo -m``; ``gpus[i]["nvlink_inactive"]``
(link numbers) shows those links ``<inactive>`` in ``nvidia-smi nvlink --status``; ``gpus[i]["fabric"]``
(``{"state": "In Progress", "status": "N/A"}``) prints the GPU's NVSwitch fabric section in ``-q`` / ``-q -x``.

IB stack knobs (all optional; without them openibd behaves as it always did here):
``"ib_holders": [{"pid", "comm", "user"?, "device"?}]`` -- processes with /dev/infiniband/<device>
open (``device`` null: running, nothing open, e.g. ibacm); ``systemctl restart openibd`` then
refuses with exit 1 and keeps openibd's own text for ``systemctl status openibd``, as the real
openibd ``stop()`` does. ``"modules": [names]`` -- loaded kernel modules (``modprobe`` / ``modprobe -r``
change it; Lustre ``ko2iblnd``, ``rpcrdma``, ``nvme_rdma``, ... make openibd refuse; a loaded
``nvidia_peermem`` holds ib_core, so the restart fails half-way and leaves the ports down).
``"ib_stack": "inbox"`` -- an inbox rdma-core stack: no openibd unit (``systemctl cat openibd`` says "No
files found", rc 1); the stack restarts by ``modprobe -r mlx5_ib`` / ``modprobe mlx5_core mlx5_ib``, which
``modprobe`` models (MODULE_DEPS, kmod's "is in use" refusals; /proc/modules shows refcount and "used by";
``"module_deps": {name: [deps]}`` adds a module).
``"ib_link_up_delay": s`` -- after a restart the ports train for ``s`` seconds (Polling, then
Init/LinkUp) before they are Active. When ``<root>/proc`` exists it is rendered like ``/proc``
(``modules``, ``<pid>/comm``, ``<pid>/fd/N -> /dev/infiniband/<device>``).
``refresh --loop SECONDS`` re-renders sysfs every 0.2 s for that long (the kernel's live counters);
``live [INTERVAL]`` runs for ever and re-renders only what changes by itself (faulty or training
ports, kern.log lines whose time has come): the testbed runs one per host, so a module that reads
sysfs directly (ib_restart's wait and soak) sees counters rise and ports flap as on a real node.

Active tests (the formats are the real tools', from their source: tests/fixtures/active/README.md).
Commands: ``dcgmi diag -r 1|2|3|4|<test>[,<test>] [-j] [-i 0,1,..] [-v] [--host H]`` (DCGM 3.3.9: the boxed
table, or with ``-j`` the JSON jsoncpp prints; -r 1 software/"Deployment" checks, 2 + pcie, memory, 3 +
diagnostic, targeted_stress, targeted_power, memory_bandwidth, 4 + memtest, pulse_test); ``all_reduce_perf
[-b MIN] [-e MAX] [-f FACTOR | -i STEP] [-g GPUS] [-t THREADS] [-c 0|1] [-d TYPE] ...`` (nccl-tests 2.13, one
process; ``NCCL_TESTS_MIN_BW`` honoured); ``nvbandwidth [-t TESTCASE ...] [-p PREFIX ...] [-b MiB] [-i N]
[-v] [-l]`` (v0.8; CE/SM host<->device and device<->device memcpy measured, other testcases "Waived");
``ib_write_bw [-d DEV] [-i PORT] [-s SIZE | -a] [-n ITERS] [-q QPS] [-b] [--report_gbits] [SERVER]`` (perftest
24.10: with SERVER the client's banner and row; without, the server's waiting box, then after
``ib_server_seconds`` the same report, exit 0; no traffic is sent anywhere).
Host knobs, all in ``"active": {...}`` (scenario ``active:`` block, or ``Testbed.set_active``):
``"seconds"`` (0.5: how long each fake test runs); ``"absent": [tools]`` (not installed: the testbed
writes no wrapper for them, and a call that reaches main anyway answers ``<tool>: command not found``,
127); ``"hang": [tools]`` (the tool prints what the real one prints before it blocks -- nothing for dcgmi,
the header for all_reduce_perf, "Running <first testcase>." for nvbandwidth, the waiting box for an
ib_write_bw server, the banner for a client -- then sleeps until SIGTERM/SIGKILL; the process is named
as the real binary, /proc/<pid>/comm); ``"dcgm"``: "ok" (default), "hostengine_down" (every dcgmi
command prints dcgmi/Command.cpp's ``Error: unable to establish a connection to the specified host:
localhost`` / ``Error: Unable to connect to host engine. Host engine connection invalid/disconnected.``,
exit 235 = DCGM_ST_CONNECTION_NOT_VALID -21), "embedded" (nv-hostengine is down but ``dcgmi diag`` starts
an embedded engine and runs, as DCGM >= 2's Diag.cpp does; other subcommands fail as above), "absent"
(= dcgmi in ``absent``); ``"dcgm_version"`` ("3.3.9"); ``"busbw_gbps"`` (all_reduce_perf's bus bandwidth
at large sizes: 460 for H100, 431 H200, 228 A100, 110 V100 -- Azure conf check_nccl_allreduce; busbw =
peak * (1 - exp(-bytes / 8 MiB)), time = bytes / algbw, algbw = busbw * n / (2 (n - 1)); the Avg line is
the mean of every row's two busbw, as nccl-tests computes it); ``"nccl_wrong": n`` (#wrong per cell,
"Out of bounds values : N FAILED", exit 1); ``"nvbandwidth_gbps": {"host_to_device_memcpy_ce",
"device_to_host_memcpy_ce", "device_to_device_memcpy_read_ce"}`` (per GPU / per pair; default H100 55 / 55 /
375: healthy values above Azure's check_gpu_bw floors 48 / 335, under which Azure fails a node, warning
below 1.05x; A100 24 / 24 / 265); ``"ib_bw_gbps"`` (ib_write_bw's average: default 97.5 % of the HCA's
rate, 390 for NDR 400); ``"ib_server_seconds"`` (2.0); ``"ib_no_server": true`` (the client's ``Couldn't
connect to <server>:18515``, exit 1).
Per GPU: ``gpus[i]["dcgm_fail"] = {"test": "memory"|"pcie"|"diagnostic"|"targeted_stress"|"targeted_power"|
"memory_bandwidth"|"memtest"|"pulse_test"|"<Deployment test name>", "error_id"?: DCGM_FR_* number (default
per test, e.g. memory 58 DCGM_FR_MEMORY_MISMATCH), "message"?: text (default DCGM's message for the code,
filled in, + its next steps), "status"?: "Fail"|"Warn"}`` (or a list of them): the test shows Fail for that
GPU with ``"warnings": [{"warning", "error_id", "error_category", "error_severity"}]``; dcgmi then exits
226 (DCGM_ST_NVVS_ERROR -30), 205 (DCGM_ST_NVVS_ISOLATE_ERROR -51) when a failed test carries an isolating
code (52, 57, 58, 80, 98), 0 when only warnings (3.3.9 prints a warned test as "Fail" all the same).
The state drives it too: persistence off -> Persistence Mode warns (code 29); a pending row remap / remap
failure -> Page Retirement/Row Remap fails (85 / 80) and nvvs stops there (no per-GPU tests); a GPU off
the bus is not seen at all. ``gpus[i]["h2d_gbps"|"d2h_gbps"|"p2p_gbps"]``: that GPU's nvbandwidth figures
(p2p caps every pair it is in); ``gpus[i]["busbw_gbps"]`` caps all_reduce_perf on GPUs it includes.
Per HCA: ``hcas[k]["ib_bw_gbps"]``; a port that is not ACTIVE (fault down, flapping at that moment,
openibd stopped) makes ib_write_bw fail with ``Port number 1 state is Down`` (exit 1), a ``bad_cable``
fault gives 55 % of the figure, an unknown ``-d`` ``IB device X not found``.
"""
import fcntl
import json
import math
import os
import shutil
import sys
import time
from contextlib import contextmanager

ROOT_DEFAULT = "/opt/fakehw"

# --------------------------------------------------------------------------- state


def _root(root=None):
    return root or os.environ.get("FAKEHW_ROOT") or ROOT_DEFAULT


@contextmanager
def locked(root=None):
    root = _root(root)
    fd = os.open(os.path.join(root, "state.lock"), os.O_CREAT | os.O_RDWR, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def load(root=None):
    with open(os.path.join(_root(root), "state.json")) as f:
        return json.load(f)


def save(st, root=None):
    p = os.path.join(_root(root), "state.json")
    tmp = p + ".%d.tmp" % os.getpid()
    with open(tmp, "w") as f:
        json.dump(st, f, indent=1, sort_keys=True)
    os.replace(tmp, p)


def log_command(tool, argv, root=None, host=None):
    rec = {"t": round(time.time(), 6), "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "host": host or os.uname().nodename, "cmd": tool, "argv": [tool] + list(argv),
           "pid": os.getpid()}
    line = (json.dumps(rec) + "\n").encode()
    fd = os.open(os.path.join(_root(root), "commands.log"), os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def add_kernel(st, msg, level="info", t=None):
    st.setdefault("kernel", []).append({"t": round(t if t is not None else time.time(), 6),
                                        "level": level, "msg": msg})


# --------------------------------------------------------------------------- IB model

IB_COUNTERS = [
    "symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors",
    "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors", "port_xmit_discards",
    "port_xmit_constraint_errors", "port_rcv_constraint_errors", "local_link_integrity_errors",
    "excessive_buffer_overrun_errors", "VL15_dropped", "port_xmit_data", "port_rcv_data",
    "port_xmit_packets", "port_rcv_packets", "unicast_xmit_packets", "unicast_rcv_packets",
    "multicast_xmit_packets", "multicast_rcv_packets", "port_xmit_wait",
]
# error-counter growth per second while a fault lasts
FAULT_RATES = {
    "flapping": {"link_downed": 0.05, "link_error_recovery": 0.2, "symbol_error": 2.0,
                 "port_rcv_errors": 0.5, "port_xmit_discards": 5.0},
    "bad_cable": {"symbol_error": 20.0, "link_error_recovery": 0.5, "link_downed": 0.05,
                  "port_rcv_errors": 3.0, "local_link_integrity_errors": 0.1,
                  "port_rcv_remote_physical_errors": 0.5, "port_xmit_discards": 8.0},
    "symbol_errors": {"symbol_error": 5.0, "port_rcv_errors": 0.2},
    "down": {},
}
# traffic counters on a working port (per second since boot); 32-bit-free "extended" values
TRAFFIC_RATES = {"port_xmit_data": 2.5e9, "port_rcv_data": 2.5e9, "port_xmit_packets": 6.1e5,
                 "port_rcv_packets": 6.1e5, "unicast_xmit_packets": 6.0e5,
                 "unicast_rcv_packets": 6.0e5, "multicast_xmit_packets": 3.0,
                 "multicast_rcv_packets": 3.0, "port_xmit_wait": 1.0e3}
FLAP_PERIOD = 20.0   # seconds; a flapping port is down for the last FLAP_DOWN seconds of it
FLAP_DOWN = 4.0


def counters(hca, st, now=None):
    now = now or time.time()
    up_s = max(0.0, now - st["boot_time"])
    out = {}
    base = hca.get("base", {})
    rates = hca.get("rates", {})
    fs = hca.get("fault_start")
    for c in IB_COUNTERS:
        v = float(base.get(c, 0))
        if c in TRAFFIC_RATES and hca.get("fault") != "down":
            v += TRAFFIC_RATES[c] * up_s / 4.0
        if fs is not None and c in rates:
            v += rates[c] * max(0.0, now - fs)
        out[c] = int(v)
    return out


def port_state(hca, st, now=None):
    """-> (state, phys_state) as sysfs prints them."""
    now = now or time.time()
    svc = st.get("services", {}).get("openibd", {})
    if not svc.get("active", True):
        return "1: DOWN", "3: Disabled"
    delay = float(st.get("ib_link_up_delay") or 0)
    if delay and svc.get("since") is not None and now - svc["since"] < delay:
        return ("1: DOWN", "2: Polling") if now - svc["since"] < delay / 2 else ("2: INIT", "5: LinkUp")
    f = hca.get("fault")
    if f == "down":
        return "1: DOWN", "2: Polling"
    if f in ("flapping", "bad_cable") and hca.get("fault_start") is not None:
        ph = (now - hca["fault_start"]) % FLAP_PERIOD
        if ph >= FLAP_PERIOD - FLAP_DOWN:
            return "1: DOWN", "2: Polling"
    return "4: ACTIVE", "5: LinkUp"


def freeze_counters(hca, st, now=None):
    now = now or time.time()
    c = counters(hca, st, now)
    up_s = max(0.0, now - st["boot_time"])
    base = {}
    for k, v in c.items():
        if k in TRAFFIC_RATES and hca.get("fault") != "down":
            v -= TRAFFIC_RATES[k] * up_s / 4.0
        base[k] = int(v)
    hca["base"] = base
    hca["rates"] = {}
    hca["fault_start"] = None


def _wfile(path, text):
    try:
        with open(path) as f:
            if f.read() == text:
                return
    except OSError:
        pass
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def render_hca(hca, st, root, now):
    """<root>/sys/class/infiniband/<hca>/...: identity, port 1 state, rate and counters."""
    d = os.path.join(root, "sys", "class", "infiniband", hca["name"])
    p = os.path.join(d, "ports", "1")
    os.makedirs(os.path.join(p, "counters"), exist_ok=True)
    s, ph = port_state(hca, st, now)
    _wfile(os.path.join(d, "node_guid"), _guid_colon(hca["guid"]) + "\n")
    _wfile(os.path.join(d, "fw_ver"), hca["fw"] + "\n")
    _wfile(os.path.join(d, "hca_type"), "MT4129\n")
    _wfile(os.path.join(d, "board_id"), "MT_0000000838\n")
    _wfile(os.path.join(p, "state"), s + "\n")
    _wfile(os.path.join(p, "phys_state"), ph + "\n")
    _wfile(os.path.join(p, "rate"), hca.get("rate", "400 Gb/sec (4X NDR)") + "\n")
    _wfile(os.path.join(p, "link_layer"), hca.get("link_layer", "InfiniBand") + "\n")
    _wfile(os.path.join(p, "lid"), "0x%x\n" % hca["lid"])
    _wfile(os.path.join(p, "sm_lid"), "0x1\n")
    for k, v in counters(hca, st, now).items():
        _wfile(os.path.join(p, "counters", k), "%d\n" % v)


def render_sysfs(st, root=None, now=None):
    root = _root(root)
    now = now or time.time()
    render_kern_log(st, root, now)
    render_proc(st, root)
    for hca in st.get("hcas", []):
        render_hca(hca, st, root, now)


def live_hcas(st, now, slack=1.0):
    """HCAs whose sysfs changes by itself: a fault that lasts (counters rise, a port flaps) or
    ports still training after an openibd (re)start. Healthy, settled ports are static."""
    svc = st.get("services", {}).get("openibd", {})
    delay = float(st.get("ib_link_up_delay") or 0)
    training = delay and svc.get("since") is not None and now - svc["since"] < delay + slack
    return [h for h in st.get("hcas", []) if training or (h.get("fault") and h.get("fault_start") is not None)]


def live(argv, root=None):
    """``fakehw.py live [INTERVAL]``: what the kernel does between two tool calls -- every INTERVAL
    seconds (default 0.5) re-render the sysfs of the HCAs that change by themselves (see
    ``live_hcas``) and kern.log when a line's time has come. Runs for ever (the testbed starts one
    per host and stops it with the host); not logged in commands.log, writes only under the lock."""
    root = _root(root)
    interval = float(argv[0]) if argv else 0.5
    path = os.path.join(root, "state.json")
    sig, st, last = None, None, time.time()
    while True:
        now = time.time()
        try:
            s = os.stat(path)
            if (s.st_mtime_ns, s.st_size, s.st_ino) != sig:
                sig, st = (s.st_mtime_ns, s.st_size, s.st_ino), load(root)
        except (OSError, ValueError):
            st = None                    # gone or half-written: next tick
        if st is not None:
            due = any(last < e.get("t", 0) <= now for e in st.get("kernel", []))
            if due or live_hcas(st, now):
                with locked(root):
                    cur = load(root)
                    for h in live_hcas(cur, now):
                        render_hca(h, cur, root, now)
                    if due:
                        render_kern_log(cur, root, now)
        last = now
        time.sleep(interval)


DEFAULT_MODULES = ["mlx5_core", "mlx5_ib", "ib_core", "ib_uverbs", "ib_umad", "rdma_cm", "rdma_ucm",
                   "ib_ipoib", "mlxfw", "nvidia", "nvidia_uvm", "nvidia_peermem"]


def loaded_modules(st):
    return list(st["modules"]) if "modules" in st else list(DEFAULT_MODULES)


# module -> the modules it uses (modules.dep, as far as the fakes need it); "module_deps" in the
# state adds or overrides entries (e.g. a third-party module that uses mlx5_core)
MODULE_DEPS = {"mlx5_ib": ["mlx5_core", "ib_uverbs", "ib_core"], "mlx5_core": ["mlxfw"],
               "mlx5_fwctl": ["mlx5_core"], "mlx5_vdpa": ["mlx5_core"], "mlx5_dpll": ["mlx5_core"],
               "ib_uverbs": ["ib_core"], "ib_umad": ["ib_core"], "rdma_cm": ["ib_core"],
               "rdma_ucm": ["rdma_cm", "ib_uverbs", "ib_core"], "ib_ipoib": ["ib_core"],
               "nvidia_uvm": ["nvidia"], "nvidia_peermem": ["ib_core", "nvidia"],
               "ko2iblnd": ["rdma_cm", "ib_core"], "rpcrdma": ["rdma_cm", "ib_core"],
               "nvme_rdma": ["rdma_cm", "ib_core"], "ib_isert": ["rdma_cm", "ib_core"]}
# a process with /dev/infiniband open pins these (modelled as a driver without disassociate_ucontext)
HOLDER_PINNED = ("mlx5_core", "mlx5_ib", "ib_core", "ib_uverbs", "ib_umad", "rdma_ucm", "rdma_cm")


def module_deps(st, name):
    return list((st.get("module_deps") or {}).get(name, MODULE_DEPS.get(name, [])))


def module_users(st, name, mods=None):
    return [m for m in (loaded_modules(st) if mods is None else mods) if name in module_deps(st, m)]


def proc_modules_text(st):
    """/proc/modules: 'name size refcount used_by, Live addr' (used_by '-' when none); the refcount is
    the modules using it plus ``"module_refcount": {name: n}`` (e.g. {"nvidia_drm": 2}: a display holds it)."""
    refs, out = st.get("module_refcount", {}), []
    for m in loaded_modules(st):
        users = module_users(st, m)
        out.append("%s 16384 %d %s Live 0x0000000000000000\n"
                   % (m, len(users) + int(refs.get(m, 0)), "".join(u + "," for u in users) or "-"))
    return "".join(out)


def render_proc(st, root=None):
    """<root>/proc (only when that folder exists): modules, and per holder comm + fd links."""
    root = _root(root)
    d = os.path.join(root, "proc")
    if not os.path.isdir(d):
        return
    _wfile(os.path.join(d, "modules"), proc_modules_text(st))
    want = {str(h["pid"]): h for h in st.get("ib_holders", [])}
    gpu_want = {str(h["pid"]): h for h in gpu_device_holders(st)}
    for name in os.listdir(d):
        if name.isdigit() and name not in want and name not in gpu_want:
            shutil.rmtree(os.path.join(d, name), ignore_errors=True)
    for pid, h in want.items():
        fd = os.path.join(d, pid, "fd")
        os.makedirs(fd, exist_ok=True)
        _wfile(os.path.join(d, pid, "comm"), h["comm"] + "\n")
        dev = h.get("device", "uverbs0")
        link = os.path.join(fd, "3")
        if dev and not os.path.islink(link):
            os.symlink("/dev/infiniband/" + dev, link)
    for pid, h in gpu_want.items():                # GPU holders: fd/10.. -> /dev/nvidiaN, /dev/dri/...
        fd = os.path.join(d, pid, "fd")
        os.makedirs(fd, exist_ok=True)
        _wfile(os.path.join(d, pid, "comm"), h["comm"] + "\n")
        for n, dev in enumerate(h["devices"]):
            link = os.path.join(fd, str(10 + n))
            if not os.path.islink(link):
                os.symlink("/dev/" + dev, link)
    nvsw = os.path.join(root, "dev")
    if os.path.isdir(nvsw):
        for n in range(int(st.get("nvswitches") or 0)):
            _wfile(os.path.join(nvsw, "nvidia-nvswitch%d" % n), "")
    render_net(st, root)


# a local disk root, as on a node with an NVMe system disk (what /proc/mounts starts with)
BASE_MOUNTS = ["/dev/nvme0n1p2 / ext4 rw,relatime 0 0", "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0",
               "sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0", "tmpfs /run tmpfs rw,nosuid,nodev,mode=755 0 0",
               "/dev/nvme0n1p1 /boot/efi vfat rw,relatime 0 0"]


def _hex_le(ip):
    return "".join("%02X" % int(x) for x in reversed(ip.split(".")))


def render_net(st, root):
    """What ib_restart reads to tell what rides the fabric: ``<root>/proc/mounts`` (BASE_MOUNTS + the
    state's ``"mounts": [lines]``), ``<root>/proc/net/route`` and ``<root>/proc/cmdline``, and
    ``<root>/sys/class/net/<if>/type`` (32 = IPoIB). ``"net": {"interfaces": [{"name", "type", "addrs":
    ["10.0.0.21/24"]}], "routes": [{"dest": "10.9.0.0/16", "via": "10.0.0.1", "dev": "ib0"}]}``; eth0
    (type 1) holds the host's address unless the state names it (an eth0 without addrs keeps it)."""
    import ipaddress
    net = st.get("net") or {}
    ifs = [dict(i) for i in net.get("interfaces", [])]
    if not any(i["name"] == "eth0" for i in ifs):
        ifs.insert(0, {"name": "eth0", "type": 1})
    gw, classnet = None, os.path.join(root, "sys", "class", "net")
    if os.path.isdir(classnet):
        for old in set(os.listdir(classnet)) - set(i["name"] for i in ifs):
            shutil.rmtree(os.path.join(classnet, old), ignore_errors=True)
    for i in ifs:
        if i["name"] == "eth0" and not i.get("addrs") and st.get("addr"):
            i["addrs"] = [st["addr"] + "/24"]
            gw = st["addr"].rsplit(".", 1)[0] + ".1"
        d = os.path.join(root, "sys", "class", "net", i["name"])
        os.makedirs(d, exist_ok=True)
        _wfile(os.path.join(d, "type"), "%d\n" % int(i.get("type", 1)))
    rows = []
    for i in ifs:
        for a in i.get("addrs") or []:
            n = ipaddress.ip_interface(a).network
            rows.append((i["name"], str(n.network_address), "0.0.0.0", "0001", str(n.netmask)))
    for r in net.get("routes", []):
        n = ipaddress.ip_network(r["dest"])
        rows.append((r["dev"], str(n.network_address), r.get("via") or "0.0.0.0", "0003" if r.get("via") else "0001",
                     str(n.netmask)))
    if gw and not any(r["dest"] == "0.0.0.0/0" for r in net.get("routes", [])):
        rows.append(("eth0", "0.0.0.0", gw, "0003", "0.0.0.0"))
    text = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
    text += "".join("%s\t%s\t%s\t%s\t0\t0\t0\t%s\t0\t0\t0\n" % (f, _hex_le(dst), _hex_le(g), fl, _hex_le(m))
                    for f, dst, g, fl, m in rows)
    proc = os.path.join(root, "proc")
    os.makedirs(os.path.join(proc, "net"), exist_ok=True)
    _wfile(os.path.join(proc, "net", "route"), text)
    _wfile(os.path.join(proc, "mounts"), "".join(x + "\n" for x in BASE_MOUNTS + list(st.get("mounts") or [])))
    _wfile(os.path.join(proc, "cmdline"), st.get("cmdline", "BOOT_IMAGE=/vmlinuz root=/dev/nvme0n1p2 ro") + "\n")


def gpu_device_holders(st):
    """Processes holding GPU device nodes: the main process of each active state-backed unit
    (``services[u]`` with ``"pid"``/``"comm"``, e.g. nv-hostengine: every GPU) and ``"gpu_holders":
    [{"pid", "comm", "gpus": [indexes] | null (all), "dri": bool}]`` (bare processes, X on /dev/dri).
    -> [{"pid", "comm", "devices": ["nvidiactl", "nvidia0", ...], "gpus": [indexes]}]."""
    every = [g["index"] for g in st.get("gpus", []) if g.get("present", True)]
    out = []
    for name, svc in sorted(st.get("services", {}).items()):
        if svc.get("pid") and svc.get("active", True) and svc.get("holds_gpus", True):
            out.append({"pid": svc["pid"], "comm": svc.get("comm", name), "gpus": every,
                        "pm_daemon": svc.get("pm_daemon", False)})
    for h in st.get("gpu_holders", []):
        gpus = every if h.get("gpus") is None else list(h["gpus"])
        out.append({"pid": h["pid"], "comm": h["comm"], "gpus": gpus, "dri": h.get("dri", False)})
    for h in out:
        h["devices"] = ["nvidiactl"] + ["nvidia%d" % i for i in h["gpus"]] + (["dri/card0"] if h.get("dri") else [])
    return out


def render_kern_log(st, root=None, now=None):
    """<root>/log/kern.log: what rsyslog would have written (the host sees it as /var/log/kern.log)."""
    root = _root(root)
    now = now or time.time()
    d = os.path.join(root, "log")
    if not os.path.isdir(d):
        return
    boot = st["boot_time"]
    lines = []
    for e in sorted(st.get("kernel", []), key=lambda x: x["t"]):
        if e["t"] > now:
            continue
        rel = max(0.0, e["t"] - boot)
        lines.append("%s %s kernel: [%5d.%06d] %s" % (time.strftime("%b %e %H:%M:%S", time.localtime(e["t"])),
                                                     st["host"], int(rel), int((rel - int(rel)) * 1e6), e["msg"]))
    _wfile(os.path.join(d, "kern.log"), "\n".join(lines) + ("\n" if lines else ""))


def _guid_colon(g):
    h = g[2:] if g.startswith("0x") else g
    h = h.rjust(16, "0")
    return ":".join(h[i:i + 4] for i in range(0, 16, 4))


# --------------------------------------------------------------------------- GPU helpers

def bus_long(g):        # 00000000:3B:00.0
    return "00000000:%s:00.0" % g["bus"].upper()


def bus_short(g):       # 0000:3B:00.0 (error messages)
    return "0000:%s:00.0" % g["bus"].upper()


def select_gpus(st, sel):
    gpus = st["gpus"]
    if sel is None:
        return list(gpus)
    out = []
    for tok in sel.split(","):
        tok = tok.strip()
        for g in gpus:
            if tok.isdigit() and int(tok) == g["index"]:
                out.append(g)
            elif tok.upper() in (bus_long(g), bus_short(g)) or tok == g["uuid"]:
                out.append(g)
    return out


def _arch(g):
    n = g["name"]
    return "Volta" if "V100" in n else "Ampere" if ("A100" in n or "A10" in n) else "Hopper"


def _yn(b):
    return "Yes" if b else "No"


def lost_msg(g):
    return "Unable to determine the device handle for GPU %s: Unknown Error" % bus_short(g)


def persistence_on(g):
    """Persistence mode of one GPU (``g["persistence"]``; the fakes boot with it Enabled)."""
    return bool(g.get("persistence", True))


def _pm_word(g):
    return "Enabled" if persistence_on(g) else "Disabled"


# --------------------------------------------------------------------------- nvidia-smi

THROTTLE_KEYS = [  # (xml suffix, text label, indent-level)
    ("gpu_idle", "Idle", 0), ("applications_clocks_setting", "Applications Clocks Setting", 0),
    ("sw_power_cap", "SW Power Cap", 0), ("hw_slowdown", "HW Slowdown", 0),
    ("hw_thermal_slowdown", "HW Thermal Slowdown", 1),
    ("hw_power_brake_slowdown", "HW Power Brake Slowdown", 1), ("sync_boost", "Sync Boost", 0),
    ("sw_thermal_slowdown", "SW Thermal Slowdown", 0),
    ("display_clocks_setting", "Display Clock Setting", 0),
]


def _ts():
    return time.strftime("%a %b %e %H:%M:%S %Y", time.localtime())


def smi_table(st, gpus):
    out = [_ts()]
    out.append("+-----------------------------------------------------------------------------------------+")
    out.append("| NVIDIA-SMI %-22s Driver Version: %-14s CUDA Version: %-9s|"
               % (st["driver_version"], st["driver_version"], st["cuda_version"]))
    out.append("|-----------------------------------------+------------------------+----------------------+")
    out.append("| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |")
    out.append("| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |")
    out.append("|                                         |                        |               MIG M. |")
    out.append("|=========================================+========================+======================|")
    for g in gpus:
        unc = g["ecc"]["volatile"]["dram_unc"] + g["ecc"]["volatile"]["sram_unc"]
        out.append("| %3d  %-31s%-3s |   %s Off | %20s |" % (g["index"], g["name"][:31],
                                                            "On" if persistence_on(g) else "Off", bus_long(g), unc))
        out.append("| N/A   %2dC    P0            %3dW /  700W |  %6dMiB /  81559MiB |    %3d%%      Default |"
                   % (g["temp"], int(g["power"]), g["mem_used"], g["util"]))
        out.append("|                                         |                        |             Disabled |")
        out.append("+-----------------------------------------+------------------------+----------------------+")
    out.append("")
    out.append("+-----------------------------------------------------------------------------------------+")
    out.append("| Processes:                                                                              |")
    out.append("|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |")
    out.append("|        ID   ID                                                               Usage      |")
    out.append("|=========================================================================================|")
    procs = [(g, p) for g in gpus for p in g.get("processes", [])]
    if not procs:
        out.append("|  No running processes found                                                             |")
    for g, p in procs:
        out.append("|  %3d   N/A  N/A  %9d      C   %-40s %7dMiB |" % (g["index"], p["pid"], p["name"][:40], p["mem"]))
    out.append("+-----------------------------------------------------------------------------------------+")
    return "\n".join(out) + "\n"


def _q_sections(g, sections):
    """Text -q body for one GPU: list of lines (4-space indented)."""
    L = []

    def kv(indent, k, v):
        L.append("%s%-*s: %s" % (" " * indent, 42 - indent, k, v))

    def hdr(indent, k):
        L.append(" " * indent + k)
    all_ = not sections
    if all_:
        kv(4, "Product Name", g["name"])
        kv(4, "Product Brand", "NVIDIA")
        kv(4, "Product Architecture", _arch(g))
        kv(4, "Persistence Mode", _pm_word(g))
        kv(4, "Addressing Mode", "None")
        hdr(4, "MIG Mode")
        kv(8, "Current", g.get("mig", "Disabled"))
        kv(8, "Pending", g.get("mig_pending", g.get("mig", "Disabled")))
        kv(4, "Serial Number", g["serial"])
        kv(4, "GPU UUID", g["uuid"])
        kv(4, "Minor Number", g["index"])
        kv(4, "VBIOS Version", "96.00.74.00.01")
        kv(4, "Module ID", g["index"] + 1)
        hdr(4, "GPU Reset Status")
        kv(8, "Reset Required", _yn(g["reset_required"]))
        kv(8, "Drain and Reset Recommended", _yn(g.get("drain_and_reset", False)))
        hdr(4, "PCI")
        kv(8, "Bus", "0x" + g["bus"].upper())
        kv(8, "Device", "0x00")
        kv(8, "Domain", "0x0000")
        kv(8, "Device Id", "0x233010DE")
        kv(8, "Bus Id", bus_long(g))
        kv(4, "Performance State", "P0")
    if all_ or "PERFORMANCE" in sections:
        hdr(4, "Clocks Throttle Reasons" if g.get("ecc_format") == "legacy" else "Clocks Event Reasons")
        for key, label, lvl in THROTTLE_KEYS:
            kv(8 + 4 * lvl, label, "Active" if key in g.get("throttle", []) else "Not Active")
    if all_ or "MEMORY" in sections:
        hdr(4, "FB Memory Usage")
        kv(8, "Total", "81559 MiB")
        kv(8, "Reserved", "551 MiB")
        kv(8, "Used", "%d MiB" % g["mem_used"])
        kv(8, "Free", "%d MiB" % (81559 - 551 - g["mem_used"]))
    if all_ or "UTILIZATION" in sections:
        hdr(4, "Utilization")
        kv(8, "Gpu", "%d %%" % g["util"])
        kv(8, "Memory", "0 %")
    legacy = g.get("ecc_format") == "legacy"
    if all_ or "ECC" in sections:
        hdr(4, "ECC Mode")
        kv(8, "Current", "Enabled")
        kv(8, "Pending", "Enabled")
        hdr(4, "ECC Errors")
        for scope in ("volatile", "aggregate"):
            e = g["ecc"][scope]
            hdr(8, scope.capitalize())
            if legacy:
                for kind, n, dm in (("Single Bit", e["dram_corr"] + e["sram_corr"], e["dram_corr"]),
                                    ("Double Bit", e["dram_unc"] + e["sram_unc"], e["dram_unc"])):
                    hdr(12, kind)
                    kv(16, "Device Memory", dm)
                    kv(16, "Register File", n - dm)
                    kv(16, "L1 Cache", 0)
                    kv(16, "L2 Cache", 0)
                    kv(16, "Texture Memory", "N/A")
                    kv(16, "Texture Shared", "N/A")
                    kv(16, "CBU", 0)
                    kv(16, "Total", n)
                continue
            kv(12, "SRAM Correctable", e["sram_corr"])
            kv(12, "SRAM Uncorrectable Parity", 0)
            kv(12, "SRAM Uncorrectable SEC-DED", e["sram_unc"])
            kv(12, "DRAM Correctable", e["dram_corr"])
            kv(12, "DRAM Uncorrectable", e["dram_unc"])
            if scope == "aggregate":
                kv(12, "SRAM Threshold Exceeded", "No")
    if all_ or "PAGE_RETIREMENT" in sections:
        rp = g.get("retired", {})
        hdr(4, "Retired Pages")
        kv(8, "Single Bit ECC", rp.get("sbe", 0) if legacy else "N/A")
        kv(8, "Double Bit ECC", rp.get("dbe", 0) if legacy else "N/A")
        kv(8, "Pending Page Blacklist", _yn(rp.get("pending")) if legacy else "N/A")
    if legacy and (all_ or "ROW_REMAPPER" in sections):
        kv(4, "Remapped Rows", "N/A")
    elif all_ or "ROW_REMAPPER" in sections:
        r = g["remap"]
        hdr(4, "Remapped Rows")
        kv(8, "Correctable Error", r["corr"])
        kv(8, "Uncorrectable Error", r["unc"])
        kv(8, "Pending", _yn(r["pending"]))
        kv(8, "Remapping Failure Occurred", _yn(r["failure"]))
        hdr(8, "Bank Remap Availability Histogram")
        kv(12, "Max", "%d bank(s)" % (2560 - r["unc"] - r["corr"]))
        kv(12, "High", "%d bank(s)" % (r["unc"] + r["corr"]))
        kv(12, "Partial", "0 bank(s)")
        kv(12, "Low", "0 bank(s)")
        kv(12, "None", "0 bank(s)")
    if all_ or "TEMPERATURE" in sections:
        hdr(4, "Temperature")
        kv(8, "GPU Current Temp", "%d C" % g["temp"])
        kv(8, "GPU T.Limit Temp", "%d C" % (87 - g["temp"]))
        kv(8, "Memory Current Temp", "%d C" % (g["temp"] + 8))
    if all_ or "POWER" in sections:
        hdr(4, "GPU Power Readings")
        kv(8, "Power Draw", "%.2f W" % g["power"])
        kv(8, "Current Power Limit", "700.00 W")
    if g.get("fabric") and all_:      # NVSwitch systems only: {"state", "status"} as nvidia-smi prints them
        hdr(4, "Fabric")
        kv(8, "State", g["fabric"].get("state", "Completed"))
        kv(8, "Status", g["fabric"].get("status", "Success"))
    if all_ or "PIDS" in sections:
        hdr(4, "Processes")
        if not g.get("processes"):
            L[-1] = "%-42s: None" % "    Processes"
        for p in g.get("processes", []):
            kv(8, "GPU instance ID", "N/A")
            kv(8, "Compute instance ID", "N/A")
            kv(8, "Process ID", p["pid"])
            kv(12, "Type", "C")
            kv(12, "Name", p["name"])
            kv(12, "Used GPU Memory", "%d MiB" % p["mem"])
    return L


def smi_q_text(st, gpus, sections):
    out = ["", "==============NVSMI LOG==============", "",
           "%-42s: %s" % ("Timestamp", _ts()),
           "%-42s: %s" % ("Driver Version", st["driver_version"]),
           "%-42s: %s" % ("CUDA Version", st["cuda_version"]), "",
           "%-42s: %d" % ("Attached GPUs", len(st["gpus"]))]
    for g in gpus:
        out.append("GPU " + bus_long(g))
        out.extend(_q_sections(g, sections))
        out.append("")
    return "\n".join(out) + "\n"


def _x(tag, val, ind):
    return "%s<%s>%s</%s>" % (" " * ind, tag, val, tag)


def smi_q_xml(st, gpus, sections):
    all_ = not sections
    o = ['<?xml version="1.0" encoding="UTF-8"?>', '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">',
         "<nvidia_smi_log>", _x("timestamp", _ts(), 4), _x("driver_version", st["driver_version"], 4),
         _x("cuda_version", st["cuda_version"], 4), _x("attached_gpus", len(st["gpus"]), 4)]
    for g in gpus:
        o.append('    <gpu id="%s">' % bus_long(g))
        o += [_x("product_name", g["name"], 8), _x("product_brand", "NVIDIA", 8),
              _x("product_architecture", _arch(g), 8), _x("persistence_mode", _pm_word(g), 8),
              _x("addressing_mode", "None", 8),
              "        <mig_mode>", _x("current_mig", g.get("mig", "Disabled"), 12),
              _x("pending_mig", g.get("mig_pending", g.get("mig", "Disabled")), 12),
              "        </mig_mode>",
              _x("serial", g["serial"], 8), _x("uuid", g["uuid"], 8), _x("minor_number", g["index"], 8),
              _x("vbios_version", "96.00.74.00.01", 8), _x("gpu_module_id", g["index"] + 1, 8),
              "        <gpu_reset_status>", _x("reset_required", _yn(g["reset_required"]), 12),
              _x("drain_and_reset_recommended", _yn(g.get("drain_and_reset", False)), 12),
              "        </gpu_reset_status>",
              "        <pci>", _x("pci_bus", g["bus"].upper(), 12), _x("pci_device", "00", 12),
              _x("pci_domain", "0000", 12), _x("pci_device_id", "233010DE", 12),
              _x("pci_bus_id", bus_long(g), 12), "        </pci>",
              _x("performance_state", "P0", 8)]
        legacy = g.get("ecc_format") == "legacy"
        if all_ or "PERFORMANCE" in sections:
            tag = "clocks_throttle_reason" if legacy else "clocks_event_reason"
            o.append("        <%ss>" % tag)
            for key, _label, _lvl in THROTTLE_KEYS:
                o.append(_x(tag + "_" + key, "Active" if key in g.get("throttle", []) else "Not Active", 12))
            o.append("        </%ss>" % tag)
        if all_ or "MEMORY" in sections:
            o += ["        <fb_memory_usage>", _x("total", "81559 MiB", 12), _x("reserved", "551 MiB", 12),
                  _x("used", "%d MiB" % g["mem_used"], 12),
                  _x("free", "%d MiB" % (81559 - 551 - g["mem_used"]), 12), "        </fb_memory_usage>"]
        if all_ or "UTILIZATION" in sections:
            o += ["        <utilization>", _x("gpu_util", "%d %%" % g["util"], 12),
                  _x("memory_util", "0 %", 12), "        </utilization>"]
        if all_ or "ECC" in sections:
            o += ["        <ecc_mode>", _x("current_ecc", "Enabled", 12), _x("pending_ecc", "Enabled", 12),
                  "        </ecc_mode>", "        <ecc_errors>"]
            for scope in ("volatile", "aggregate"):
                e = g["ecc"][scope]
                if legacy:
                    o.append("            <%s>" % scope)
                    for kind, n in (("single_bit", e["dram_corr"] + e["sram_corr"]),
                                    ("double_bit", e["dram_unc"] + e["sram_unc"])):
                        dm = e["dram_corr"] if kind == "single_bit" else e["dram_unc"]
                        o += ["                <%s>" % kind, _x("device_memory", dm, 20),
                              _x("register_file", n - dm, 20), _x("l1_cache", 0, 20), _x("l2_cache", 0, 20),
                              _x("texture_memory", "N/A", 20), _x("texture_shm", "N/A", 20), _x("cbu", 0, 20),
                              _x("total", n, 20), "                </%s>" % kind]
                    o.append("            </%s>" % scope)
                    continue
                o += ["            <%s>" % scope, _x("sram_correctable", e["sram_corr"], 16),
                      _x("sram_uncorrectable_parity", 0, 16),
                      _x("sram_uncorrectable_secded", e["sram_unc"], 16),
                      _x("sram_uncorrectable", e["sram_unc"], 16),
                      _x("dram_correctable", e["dram_corr"], 16),
                      _x("dram_uncorrectable", e["dram_unc"], 16)]
                if scope == "aggregate":
                    o.append(_x("sram_threshold_exceeded", "No", 16))
                o.append("            </%s>" % scope)
            o.append("        </ecc_errors>")
        if all_ or "PAGE_RETIREMENT" in sections:
            rp = g.get("retired", {}) if legacy else {}
            na = not legacy
            o += ["        <retired_pages>", "            <multiple_single_bit_retirement>",
                  _x("retired_count", "N/A" if na else rp.get("sbe", 0), 16), _x("retired_pagelist", "N/A", 16),
                  "            </multiple_single_bit_retirement>", "            <double_bit_retirement>",
                  _x("retired_count", "N/A" if na else rp.get("dbe", 0), 16), _x("retired_pagelist", "N/A", 16),
                  "            </double_bit_retirement>",
                  _x("pending_blacklist", "N/A" if na else _yn(rp.get("pending")), 12),
                  _x("pending_retirement", "N/A" if na else _yn(rp.get("pending")), 12), "        </retired_pages>"]
        if legacy and (all_ or "ROW_REMAPPER" in sections):
            o.append(_x("remapped_rows", "N/A", 8))
        elif all_ or "ROW_REMAPPER" in sections:
            r = g["remap"]
            o += ["        <remapped_rows>", _x("remapped_row_corr", r["corr"], 12),
                  _x("remapped_row_unc", r["unc"], 12), _x("remapped_row_pending", _yn(r["pending"]), 12),
                  _x("remapped_row_failure", _yn(r["failure"]), 12),
                  "            <row_remapper_histogram>",
                  _x("row_remapper_histogram_max", "%d bank(s)" % (2560 - r["unc"] - r["corr"]), 16),
                  _x("row_remapper_histogram_high", "%d bank(s)" % (r["unc"] + r["corr"]), 16),
                  _x("row_remapper_histogram_partial", "0 bank(s)", 16),
                  _x("row_remapper_histogram_low", "0 bank(s)", 16),
                  _x("row_remapper_histogram_none", "0 bank(s)", 16),
                  "            </row_remapper_histogram>", "        </remapped_rows>"]
        if all_ or "TEMPERATURE" in sections:
            o += ["        <temperature>", _x("gpu_temp", "%d C" % g["temp"], 12),
                  _x("gpu_temp_tlimit", "%d C" % (87 - g["temp"]), 12),
                  _x("memory_temp", "%d C" % (g["temp"] + 8), 12), "        </temperature>"]
        if all_ or "POWER" in sections:
            o += ["        <gpu_power_readings>", _x("power_state", "P0", 12),
                  _x("power_draw", "%.2f W" % g["power"], 12),
                  _x("current_power_limit", "700.00 W", 12), "        </gpu_power_readings>"]
        if g.get("fabric") and all_:
            o += ["        <fabric>", _x("state", g["fabric"].get("state", "Completed"), 12),
                  _x("status", g["fabric"].get("status", "Success"), 12), "        </fabric>"]
        if all_ or "PIDS" in sections:
            o.append("        <processes>")
            for p in g.get("processes", []):
                o += ["            <process_info>", _x("gpu_instance_id", "N/A", 16),
                      _x("compute_instance_id", "N/A", 16), _x("pid", p["pid"], 16),
                      _x("type", "C", 16), _x("process_name", p["name"], 16),
                      _x("used_memory", "%d MiB" % p["mem"], 16), "            </process_info>"]
            o.append("        </processes>")
        o.append("    </gpu>")
    o.append("</nvidia_smi_log>")
    return "\n".join(o) + "\n"


def _gpu_field(st, g, f, nounits):
    v = g["ecc"]["volatile"]
    a = g["ecc"]["aggregate"]
    r = g["remap"]
    leg = g.get("ecc_format") == "legacy"

    def u(n, unit):
        return str(n) if nounits else "%s %s" % (n, unit)
    tbl = {
        "index": g["index"], "name": g["name"], "gpu_name": g["name"], "uuid": g["uuid"],
        "gpu_uuid": g["uuid"], "serial": g["serial"], "gpu_serial": g["serial"],
        "pci.bus_id": bus_long(g), "gpu_bus_id": bus_long(g), "pci.bus": "0x" + g["bus"].upper(),
        "driver_version": st["driver_version"], "pstate": "P0", "persistence_mode": _pm_word(g),
        "temperature.gpu": g["temp"], "temperature.memory": g["temp"] + 8,
        "power.draw": u("%.2f" % g["power"], "W"), "power.limit": u("700.00", "W"),
        "utilization.gpu": u(g["util"], "%"), "utilization.memory": u(0, "%"),
        "memory.total": u(81559, "MiB"), "memory.used": u(g["mem_used"], "MiB"),
        "memory.free": u(81559 - 551 - g["mem_used"], "MiB"),
        "ecc.mode.current": "Enabled",
        "ecc.errors.corrected.volatile.total": v["sram_corr"] + v["dram_corr"],
        "ecc.errors.uncorrected.volatile.total": v["sram_unc"] + v["dram_unc"],
        "ecc.errors.corrected.aggregate.total": a["sram_corr"] + a["dram_corr"],
        "ecc.errors.uncorrected.aggregate.total": a["sram_unc"] + a["dram_unc"],
        "ecc.errors.uncorrected.volatile.dram": v["dram_unc"],
        "ecc.errors.uncorrected.volatile.sram": v["sram_unc"],
        "ecc.errors.uncorrected.aggregate.dram": a["dram_unc"],
        "ecc.errors.uncorrected.aggregate.sram": a["sram_unc"],
        "ecc.errors.corrected.volatile.dram": v["dram_corr"],
        "ecc.errors.corrected.aggregate.dram": a["dram_corr"],
        "retired_pages.single_bit_ecc.count": g.get("retired", {}).get("sbe", 0) if leg else "[N/A]",
        "retired_pages.double_bit.count": g.get("retired", {}).get("dbe", 0) if leg else "[N/A]",
        "retired_pages.pending": _yn(g.get("retired", {}).get("pending")) if leg else "[N/A]",
        "remapped_rows.correctable": r["corr"], "remapped_rows.uncorrectable": r["unc"],
        "remapped_rows.pending": _yn(r["pending"]), "remapped_rows.failure": _yn(r["failure"]),
        "reset_status.reset_required": _yn(g["reset_required"]),
        "reset_status.drain_and_reset_recommended": _yn(g.get("drain_and_reset", False)),
        "clocks_event_reasons.active": "0x%016x" % (0x1 if not g.get("throttle") else 0x80),
        "clocks_throttle_reasons.active": "0x%016x" % (0x1 if not g.get("throttle") else 0x80),
        "clocks.sm": u(1980, "MHz"), "clocks.max.sm": u(1980, "MHz"),
    }
    if f not in tbl:
        raise KeyError(f)
    return str(tbl[f])


def _parse_format(fmt):
    opts = set((fmt or "").split(","))
    return "noheader" in opts, "nounits" in opts


HDR = {"pci.bus_id": "pci.bus_id", "temperature.gpu": "temperature.gpu",
       "power.draw": "power.draw [W]", "memory.used": "memory.used [MiB]",
       "memory.total": "memory.total [MiB]", "memory.free": "memory.free [MiB]",
       "utilization.gpu": "utilization.gpu [%]", "used_memory": "used_gpu_memory [MiB]",
       "used_gpu_memory": "used_gpu_memory [MiB]", "power.limit": "power.limit [W]"}


def nvidia_smi(argv, root=None):
    root = _root(root)
    with locked(root):
        st = load(root)
        render_sysfs(st, root)
    if st.get("hang") or st.get("smi_hang"):
        sys.stdout.flush()
        while True:            # wedged GPU: the real tool blocks in the driver
            time.sleep(3600)
    args = list(argv)
    if args[:1] == ["topo"]:
        return smi_topo(st, args[1:])
    if args[:1] == ["nvlink"]:
        return smi_nvlink(st, args[1:])
    opt = {"q": False, "x": False, "d": None, "i": None, "query_gpu": None, "query_apps": None,
           "format": None, "reset": False, "L": False, "filename": None, "pm": None}
    i = 0
    while i < len(args):
        a = args[i]

        def val():
            nonlocal i
            if "=" in a:
                return a.split("=", 1)[1]
            i += 1
            return args[i] if i < len(args) else ""
        if a in ("-q", "--query"):
            opt["q"] = True
        elif a in ("-x", "--xml-format"):
            opt["x"] = True
        elif a in ("-a",):
            opt["q"] = True
        elif a == "-qx" or a == "-xq":
            opt["q"] = opt["x"] = True
        elif a in ("-L", "--list-gpus"):
            opt["L"] = True
        elif a in ("-r", "--gpu-reset"):
            opt["reset"] = True
        elif a == "-pm" or a.startswith("--persistence-mode"):
            opt["pm"] = val()
        elif a == "-d" or a.startswith("--display"):
            opt["d"] = val()
        elif a == "-i" or a.startswith("--id"):
            opt["i"] = val()
        elif a == "-f" or a.startswith("--filename"):
            opt["filename"] = val()
        elif a.startswith("--query-gpu"):
            opt["query_gpu"] = val()
        elif a.startswith("--query-compute-apps"):
            opt["query_apps"] = val()
        elif a.startswith("--format"):
            opt["format"] = val()
        elif a.startswith("-i") and a[2:].isdigit():
            opt["i"] = a[2:]
        elif a in ("-h", "--help"):
            print("NVIDIA System Management Interface -- v%s (fake)" % st["driver_version"])
            return 0
        else:
            sys.stderr.write('Invalid combination of input arguments. Please run \'nvidia-smi -h\' for help.\n')
            return 2
        i += 1

    sel = select_gpus(st, opt["i"])
    if opt["i"] is not None and not sel:
        print("No devices were found")
        return 6
    lost = [g for g in sel if not g.get("present", True)]
    live = [g for g in sel if g.get("present", True)]

    if opt["reset"]:
        return gpu_reset(st, root, opt["i"], sel)
    if opt["pm"] is not None:
        return set_persistence(root, opt["i"], opt["pm"])

    out = sys.stdout
    if opt["filename"]:
        out = open(opt["filename"], "w")
    rc = 15 if lost else 0
    if opt["query_gpu"]:
        fields = [f.strip() for f in opt["query_gpu"].split(",") if f.strip()]
        noheader, nounits = _parse_format(opt["format"])
        if not opt["format"] or "csv" not in opt["format"]:
            sys.stderr.write('"--format" must be specified when using "--query-gpu"\n')
            return 2
        rows = []
        try:
            for g in live:
                rows.append(", ".join(_gpu_field(st, g, f, nounits) for f in fields))
        except KeyError as e:
            print('Field "%s" is not a valid field to query.' % e.args[0])
            print()
            return 2
        for g in lost:
            sys.stderr.write(lost_msg(g) + "\n")
        if not noheader:
            out.write(", ".join(HDR.get(f, f) for f in fields) + "\n")
        for r_ in rows:
            out.write(r_ + "\n")
        return rc
    if opt["query_apps"]:
        fields = [f.strip() for f in opt["query_apps"].split(",") if f.strip()]
        noheader, nounits = _parse_format(opt["format"])
        for g in lost:
            sys.stderr.write(lost_msg(g) + "\n")
        if not noheader:
            out.write(", ".join(HDR.get(f, f) for f in fields) + "\n")
        for g in live:
            for p in g.get("processes", []):
                row = []
                for f in fields:
                    m = {"pid": p["pid"], "process_name": p["name"], "name": p["name"],
                         "gpu_bus_id": bus_long(g), "gpu_uuid": g["uuid"], "gpu_name": g["name"],
                         "gpu_serial": g["serial"],
                         "used_memory": p["mem"] if nounits else "%d MiB" % p["mem"],
                         "used_gpu_memory": p["mem"] if nounits else "%d MiB" % p["mem"]}
                    if f not in m:
                        print('Field "%s" is not a valid field to query.' % f)
                        return 2
                    row.append(str(m[f]))
                out.write(", ".join(row) + "\n")
        return rc
    if opt["L"]:
        for g in lost:
            out.write(lost_msg(g) + "\n")
        for g in live:
            out.write("GPU %d: %s (UUID: %s)\n" % (g["index"], g["name"], g["uuid"]))
        return rc
    if opt["q"]:
        sections = set(s.strip().upper() for s in (opt["d"] or "").split(",") if s.strip())
        if opt["x"]:
            for g in lost:
                sys.stderr.write(lost_msg(g) + "\n")
            out.write(smi_q_xml(st, live, sections))
        else:
            for g in lost:
                out.write(lost_msg(g) + "\n")
            out.write(smi_q_text(st, live, sections))
        return rc
    for g in lost:
        out.write(lost_msg(g) + "\n")
    out.write(smi_table(st, live))
    return rc


# NVLink links per GPU and their speed as `nvidia-smi nvlink --status` prints them (NVLink4 on
# H100/H200 SXM: 18 links of 26.562 GB/s; NVLink3 on A100 SXM: 12 of 25 GB/s; V100 SXM2: 6)
_NVLINKS = (("H100", 18, "26.562 GB/s"), ("H200", 18, "26.562 GB/s"), ("A100", 12, "25 GB/s"), ("V100", 6, "25.781 GB/s"))


def smi_nvlink(st, args):
    """``nvidia-smi nvlink --status [-i N]``: each present GPU, then one line per link, its speed or
    ``<inactive>`` (``gpus[i]["nvlink_inactive"]``: the links that did not train)."""
    if not any(a in ("-s", "--status") for a in args):
        sys.stderr.write("fakehw: nvidia-smi nvlink: only --status is modelled\n")
        return 2
    want = None
    if "-i" in args and args.index("-i") + 1 < len(args):
        want = int(args[args.index("-i") + 1])
    for g in st.get("gpus", []):
        if not g.get("present", True) or (want is not None and g["index"] != want):
            continue
        n, speed = next(((k, v) for m, k, v in _NVLINKS if m in g["name"]), (0, ""))
        print("GPU %d: %s (UUID: %s)" % (g["index"], g["name"], g["uuid"]))
        down = set(g.get("nvlink_inactive") or [])
        for link in range(n):
            print("\t Link %d: %s" % (link, "<inactive>" if link in down else speed))
    return 0


def smi_topo(st, args):
    """``nvidia-smi topo -m``: the GPU matrix; GPUs of one ``"nvlink_groups": [[0, 1], ...]`` entry
    are NV2 to each other (NVLink, e.g. a V100 hybrid cube mesh), the rest SYS."""
    if args[:1] not in (["-m"], ["--matrix"]):
        sys.stderr.write("Invalid combination of input arguments. Please run 'nvidia-smi topo -h' for help.\n")
        return 2
    gpus = [g["index"] for g in st["gpus"]]
    group = {}
    for grp in st.get("nvlink_groups", []):
        for i in grp:
            group[i] = set(grp)
    print("\t" + "\t".join("GPU%d" % i for i in gpus) + "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID")
    for i in gpus:
        cells = [" X " if j == i else "NV2" if j in group.get(i, ()) else "SYS" for j in gpus]
        print("GPU%d\t" % i + "\t".join(cells) + "\t0-63\t0\t\tN/A")
    print("\nLegend:\n\n  X    = Self\n  SYS  = Connection traversing PCIe as well as the SMP interconnect\n"
          "  NV#  = Connection traversing a bonded set of # NVLinks")
    return 0


def gpu_reset(st, root, sel_arg, sel):
    if sel_arg is None:
        # real tool: resets all GPUs only when none is busy; we keep the common -i form
        sel = st["gpus"]
    with locked(root):
        st = load(root)
        gpus = select_gpus(st, sel_arg) if sel_arg is not None else st["gpus"]
        lost = [g for g in gpus if not g.get("present", True)]
        if lost:
            for g in lost:
                print(lost_msg(g))
            return 15
        # Persistence mode is a client of the device: with it Enabled the real tool refuses the
        # reset with the same "In use by another client" text and exit 255, and `nvidia-smi -pm 0`
        # first makes the same reset succeed (NVIDIA/NVSentinel #1690 and PR #1692;
        # NVIDIA/gpu-operator #118 for nvidia-persistenced). Gated by the state flag
        # "reset_refuses_on_persistence" so scenarios that reset with persistence on keep working.
        held_by_pm = st.get("reset_refuses_on_persistence", False)
        # Any other client holds the device the same way: a DCGM host engine / exporter (an active
        # unit of services with a "pid"), a bare holder process (gpu_holders), a loaded nvidia_drm.
        # the persistence daemon (a unit with "pm_daemon") lets go of a GPU whose persistence is off
        pm_off = set(g["index"] for g in st["gpus"] if not persistence_on(g))
        held = set(i for h in gpu_device_holders(st) for i in h["gpus"] if not (h.get("pm_daemon") and i in pm_off))
        drm = "nvidia_drm" in loaded_modules(st)
        busy = [g for g in gpus if g.get("processes") or (held_by_pm and persistence_on(g)) or g["index"] in held
                or drm]
        if busy:
            print("The following GPUs could not be reset:")
            for g in busy:
                print("  GPU %s: In use by another client" % bus_long(g))
            print()
            print("%d device%s currently being used by one or more other processes (e.g., Fabric Manager, "
                  "CUDA application, graphics application such as an X server, or a monitoring application "
                  "such as another instance of nvidia-smi). Please first kill all processes using %s "
                  "device%s and all compute applications running in the system."
                  % (len(busy), " is" if len(busy) == 1 else "s are", "this" if len(busy) == 1 else "these",
                     "" if len(busy) == 1 else "s"))
            return 255
        outcome = _reset_outcome(st, root, gpus)
        if outcome is not None:
            return outcome
        now = time.time()
        for g in gpus:
            if g.get("reset_outcome") == "no_effect":      # rc 0, but the fault is still there
                g["resets"] = g.get("resets", 0) + 1
                continue
            rp = g.get("retired") or {}
            if rp.get("pending"):
                rp["pending"] = False
            r = g["remap"]
            if r["pending"]:
                r["pending"] = False
                r["unc"] += g.get("pending_rows", 1)
                g["pending_rows"] = 0
            for k in g["ecc"]["volatile"]:
                g["ecc"]["volatile"][k] = 0
            g["reset_required"] = False
            g["drain_and_reset"] = False
            g["throttle"] = []
            g["resets"] = g.get("resets", 0) + 1
            add_kernel(st, "NVRM: GPU at PCI:%s: %s" % (bus_short(g).lower()[:-2], g["uuid"]), "info", now)
            add_kernel(st, "NVRM: GPU Board Serial Number: %s" % g["serial"], "info", now)
        save(st, root)
    for g in gpus:
        print("GPU %s was successfully reset." % bus_long(g))
    print("All done.")
    return 0


def _reset_outcome(st, root, gpus):
    """Per-GPU injected reset failures (state ``gpus[i]["reset_outcome"]``), or None:
    ``"lost"``: the GPU falls off the bus during the reset (exit 15, GPU gone afterwards);
    ``"no_permission"``: exit 4 (not root / blocked); ``"no_effect"`` is handled by the caller."""
    for g in gpus:
        how = g.get("reset_outcome")
        if how == "lost":
            g["present"] = False
            add_kernel(st, "NVRM: Xid (PCI:0000:%s:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off "
                       "the bus." % g["bus"].lower(), "warn")
            save(st, root)
            print(lost_msg(g))
            return 15
        if how == "no_permission":
            print("Unable to reset GPU %s: Insufficient Permissions" % bus_long(g))
            return 4
    return None


def set_persistence(root, sel_arg, value):
    """``nvidia-smi -pm 0|1 [-i ids]``: persistence mode per GPU, in the state."""
    if value not in ("0", "1", "ENABLED", "DISABLED", "enabled", "disabled"):
        sys.stderr.write("Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n")
        return 2
    on = value in ("1", "ENABLED", "enabled")
    with locked(root):
        st = load(root)
        gpus = select_gpus(st, sel_arg) if sel_arg is not None else st["gpus"]
        lost = [g for g in gpus if not g.get("present", True)]
        if lost:
            for g in lost:
                print(lost_msg(g))
            return 15
        lines = []
        for g in gpus:
            if persistence_on(g) == on:
                lines.append("Persistence mode is already %s for GPU %s." % (_pm_word(g), bus_long(g)))
                continue
            g["persistence"] = on
            lines.append("%s persistence mode for GPU %s." % (_pm_word(g), bus_long(g)))
        save(st, root)
    for line in lines:
        print(line)
    print("All done.")
    return 0


# --------------------------------------------------------------------------- IB tools

def ibstat(argv, root=None):
    root = _root(root)
    with locked(root):
        st = load(root)
        render_sysfs(st, root)
    names = [a for a in argv if not a.startswith("-")]
    if "-l" in argv or "--list_of_cas" in argv:
        for h in st["hcas"]:
            print(h["name"])
        return 0
    hcas = st["hcas"]
    if names:
        hcas = [h for h in hcas if h["name"] == names[0]]
        if not hcas:
            sys.stderr.write("ibpanic: [%d] main: '%s' IB device can't be found: No such file or directory\n"
                             % (os.getpid(), names[0]))
            return 255
    now = time.time()
    for h in hcas:
        s, ph = port_state(h, st, now)
        rate = h.get("rate", "400 Gb/sec (4X NDR)").split()[0]
        print("CA '%s'" % h["name"])
        print("\tCA type: MT4129")
        print("\tNumber of ports: 1")
        print("\tFirmware version: %s" % h["fw"])
        print("\tHardware version: 0")
        print("\tNode GUID: %s" % h["guid"])
        print("\tSystem image GUID: %s" % h["guid"])
        print("\tPort 1:")
        print("\t\tState: %s" % {"4": "Active", "1": "Down", "2": "Initializing", "3": "Armed"}[s[0]])
        print("\t\tPhysical state: %s" % ph.split(": ")[1])
        print("\t\tRate: %s" % (rate if s.startswith("4") else "10"))
        print("\t\tBase lid: %d" % (h["lid"] if s.startswith("4") else 0))
        print("\t\tLMC: 0")
        print("\t\tSM lid: %d" % (1 if s.startswith("4") else 0))
        print("\t\tCapability mask: 0xa751e848")
        print("\t\tPort GUID: %s" % h["guid"])
        print("\t\tLink layer: %s" % h.get("link_layer", "InfiniBand"))
    return 0


def ibv_devinfo(argv, root=None):
    root = _root(root)
    with locked(root):
        st = load(root)
        render_sysfs(st, root)
    hcas = st["hcas"]
    if "-d" in argv:
        n = argv[argv.index("-d") + 1]
        hcas = [h for h in hcas if h["name"] == n]
        if not hcas:
            print("IB device '%s' wasn't found" % n)
            return 255
    now = time.time()
    for h in hcas:
        s, ph = port_state(h, st, now)
        sname = {"4": "PORT_ACTIVE (4)", "1": "PORT_DOWN (1)", "2": "PORT_INIT (2)"}[s[0]]
        print("hca_id:\t%s" % h["name"])
        print("\ttransport:\t\t\tInfiniBand (0)")
        print("\tfw_ver:\t\t\t\t%s" % h["fw"])
        print("\tnode_guid:\t\t\t%s" % _guid_colon(h["guid"]))
        print("\tsys_image_guid:\t\t\t%s" % _guid_colon(h["guid"]))
        print("\tvendor_id:\t\t\t0x02c9")
        print("\tvendor_part_id:\t\t\t4129")
        print("\thw_ver:\t\t\t\t0x0")
        print("\tboard_id:\t\t\tMT_0000000838")
        print("\tphys_port_cnt:\t\t\t1")
        print("\t\tport:\t1")
        print("\t\t\tstate:\t\t\t%s" % sname)
        print("\t\t\tmax_mtu:\t\t4096 (5)")
        print("\t\t\tactive_mtu:\t\t4096 (5)")
        print("\t\t\tsm_lid:\t\t\t1")
        print("\t\t\tport_lid:\t\t%d" % h["lid"])
        print("\t\t\tport_lmc:\t\t0x00")
        print("\t\t\tlink_layer:\t\t%s" % h.get("link_layer", "InfiniBand"))
        print()
    return 0


PQ_BASIC = [("SymbolErrorCounter", "symbol_error"), ("LinkErrorRecoveryCounter", "link_error_recovery"),
            ("LinkDownedCounter", "link_downed"), ("PortRcvErrors", "port_rcv_errors"),
            ("PortRcvRemotePhysicalErrors", "port_rcv_remote_physical_errors"),
            ("PortRcvSwitchRelayErrors", "port_rcv_switch_relay_errors"),
            ("PortXmitDiscards", "port_xmit_discards"),
            ("PortXmitConstraintErrors", "port_xmit_constraint_errors"),
            ("PortRcvConstraintErrors", "port_rcv_constraint_errors"), ("CounterSelect2", None),
            ("LocalLinkIntegrityErrors", "local_link_integrity_errors"),
            ("ExcessiveBufferOverrunErrors", "excessive_buffer_overrun_errors"),
            ("QP1Dropped", None), ("VL15Dropped", "VL15_dropped"),
            ("PortXmitData", "port_xmit_data"), ("PortRcvData", "port_rcv_data"),
            ("PortXmitPkts", "port_xmit_packets"), ("PortRcvPkts", "port_rcv_packets"),
            ("PortXmitWait", "port_xmit_wait")]
PQ_EXT = [("PortXmitData", "port_xmit_data"), ("PortRcvData", "port_rcv_data"),
          ("PortXmitPkts", "port_xmit_packets"), ("PortRcvPkts", "port_rcv_packets"),
          ("PortUnicastXmitPkts", "unicast_xmit_packets"), ("PortUnicastRcvPkts", "unicast_rcv_packets"),
          ("PortMulticastXmitPkts", "multicast_xmit_packets"),
          ("PortMulticastRcvPkts", "multicast_rcv_packets"), ("CounterSelect2", None)] + \
    [x for x in PQ_BASIC[:9]] + [x for x in PQ_BASIC[10:14]] + [("PortXmitWait", "port_xmit_wait")]


def _pq_line(k, v):
    return (k + ":").ljust(33, ".") + str(v)


def perfquery(argv, root=None):
    root = _root(root)
    with locked(root):
        st = load(root)
        render_sysfs(st, root)
    ext = False
    ca = None
    reset = False
    pos = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-x", "--extended"):
            ext = True
        elif a in ("-C", "--Ca"):
            i += 1
            ca = argv[i]
        elif a in ("-P", "--Port"):
            i += 1
        elif a in ("-r", "--reset_after_read", "-R", "--Reset_only"):
            reset = True
        elif not a.startswith("-"):
            pos.append(a)
        i += 1
    hcas = st["hcas"]
    h = None
    if ca:
        h = next((x for x in hcas if x["name"] == ca), None)
    elif pos:
        lid = int(pos[0], 0)
        h = next((x for x in hcas if x["lid"] == lid), None)
    else:
        h = hcas[0] if hcas else None
    if h is None:
        sys.stderr.write("ibwarn: [%d] mad_rpc_open_port: can't open UMAD port (%s:0)\n"
                         "perfquery: iberror: failed: Failed to open '%s' port '0'\n"
                         % (os.getpid(), ca or "", ca or ""))
        return 255
    s, _ = port_state(h, st)
    if not s.startswith("4"):
        sys.stderr.write("ibwarn: [%d] mad_rpc: _do_madrpc failed; dport (Lid %d)\n"
                         "perfquery: iberror: failed: perfquery\n" % (os.getpid(), h["lid"]))
        return 255
    c = counters(h, st)
    if ext:
        print("# Port extended counters: Lid %d port 1 (CapMask: 0x5A00)" % h["lid"])
        print(_pq_line("PortSelect", 1))
        print(_pq_line("CounterSelect", "0x0000"))
        for k, key in PQ_EXT:
            print(_pq_line(k, c[key] if key else ("0x00000000" if k == "CounterSelect2" else 0)))
    else:
        print("# Port counters: Lid %d port 1 (CapMask: 0x5A00)" % h["lid"])
        print(_pq_line("PortSelect", 1))
        print(_pq_line("CounterSelect", "0x0000"))
        for k, key in PQ_BASIC:
            if key is None:
                print(_pq_line(k, "0x00" if k == "CounterSelect2" else 0))
            else:
                v = c[key]
                if key in ("port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets",
                           "port_xmit_wait"):
                    v = min(v, 4294967295)
                elif key in ("symbol_error", "link_error_recovery", "port_rcv_errors",
                             "port_xmit_discards", "port_rcv_remote_physical_errors"):
                    v = min(v, 65535)
                elif key in ("link_downed",):
                    v = min(v, 255)
                print(_pq_line(k, v))
    if reset:
        with locked(root):
            st = load(root)
            hh = next(x for x in st["hcas"] if x["name"] == h["name"])
            freeze_counters(hh, st)
            fault = hh.get("fault")
            hh["base"] = {}
            if fault in FAULT_RATES and FAULT_RATES[fault]:
                hh["fault_start"] = time.time()
                hh["rates"] = dict(FAULT_RATES[fault])
            save(st, root)
    return 0


# --------------------------------------------------------------------------- kernel log

LEVELS = ["emerg", "alert", "crit", "err", "warn", "notice", "info", "debug"]


def _kernel(st):
    return sorted(st.get("kernel", []), key=lambda e: e["t"])


def _fmt_dmesg_T(t):
    return time.strftime("%a %b %e %H:%M:%S %Y", time.localtime(t))


def _iso_comma(t):
    us = int(round((t - int(t)) * 1e6))
    if us >= 1000000:
        us = 999999
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t)) + ",%06d" % us + _tz_colon(t)


def _tz_colon(t):
    z = time.strftime("%z", time.localtime(t))
    return z[:3] + ":" + z[3:]


def dmesg(argv, root=None):
    root = _root(root)
    with locked(root):
        st = load(root)
        render_sysfs(st, root)
    human_t = "-T" in argv or "--ctime" in argv
    iso = False
    decode = "-x" in argv or "--decode" in argv
    notime = "-t" in argv or "--notime" in argv
    levels = None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--time-format"):
            v = a.split("=", 1)[1] if "=" in a else argv[i + 1]
            iso = v == "iso"
            human_t = human_t or v == "ctime"
        elif a in ("-l", "--level") or a.startswith("--level="):
            v = a.split("=", 1)[1] if "=" in a else argv[i + 1]
            levels = set(v.split(","))
        elif a in ("-c", "-C", "--clear", "--read-clear"):
            pass
        i += 1
    boot = st["boot_time"]
    now = time.time()
    for e in _kernel(st):
        if e["t"] > now:
            continue
        if levels and e["level"] not in levels:
            continue
        pre = ("kern  :%-6s: " % e["level"]) if decode else ""
        if notime:
            stamp = ""
        elif iso:
            stamp = _iso_comma(e["t"]) + " "
        elif human_t:
            stamp = "[%s] " % _fmt_dmesg_T(e["t"])
        else:
            rel = max(0.0, e["t"] - boot)
            stamp = "[%5d.%06d] " % (int(rel), int(round((rel - int(rel)) * 1e6)) % 1000000)
        sys.stdout.write(pre + stamp + e["msg"] + "\n")
    return 0


def _parse_since(v, now):
    v = v.strip()
    import re
    if v in ("now",):
        return now
    if v == "today":
        lt = time.localtime(now)
        return time.mktime((lt.tm_year, lt.tm_mon, lt.tm_mday, 0, 0, 0, 0, 0, -1))
    if v == "yesterday":
        return _parse_since("today", now) - 86400
    if v.startswith("@"):
        return float(v[1:])
    m = re.match(r"^([+-]?)(\d+)\s*(s|sec|second|seconds|m|min|minute|minutes|h|hour|hours|d|day|days)"
                 r"(\s+ago)?$", v)
    if m:
        n = int(m.group(2)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(3)[0]]
        return now - n if (m.group(1) == "-" or m.group(4)) else now + n
    for fmt in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d"):
        try:
            return time.mktime(time.strptime(v[:19], fmt))
        except ValueError:
            continue
    raise ValueError(v)


def journalctl(argv, root=None):
    root = _root(root)
    with locked(root):
        st = load(root)
        render_sysfs(st, root)
    now = time.time()
    out_fmt = "short"
    since = until = None
    prio = None
    n = None
    kernel = False
    i = 0
    try:
        while i < len(argv):
            a = argv[i]

            def val():
                nonlocal i
                if "=" in a and a.startswith("--"):
                    return a.split("=", 1)[1]
                if len(a) > 2 and not a.startswith("--"):
                    return a[2:]
                i += 1
                return argv[i]
            if a in ("-k", "--dmesg"):
                kernel = True
            elif a in ("-o",) or a.startswith("--output") or (a.startswith("-o") and len(a) > 2):
                out_fmt = val()
            elif a in ("-S",) or a.startswith("--since"):
                since = _parse_since(val(), now)
            elif a in ("-U",) or a.startswith("--until"):
                until = _parse_since(val(), now)
            elif a in ("-p",) or a.startswith("--priority"):
                prio = val()
            elif a in ("-n",) or a.startswith("--lines"):
                n = int(val())
            elif a in ("-b", "--boot", "--no-pager", "-q", "--quiet", "-a", "--all", "--no-hostname",
                       "--utc", "-x", "--catalog"):
                pass
        # unknown options are ignored, as the real journalctl would reject them; keep the common ones
            i += 1
    except (ValueError, IndexError) as e:
        sys.stderr.write("Failed to parse timestamp: %s\n" % e)
        return 1
    del kernel
    maxlvl = None
    if prio:
        p = prio.split("..")[-1]
        maxlvl = int(p) if p.isdigit() else LEVELS.index(p if p != "warning" else "warn")
    host = st["host"]
    ents = [e for e in _kernel(st) if e["t"] <= now and (since is None or e["t"] >= since)
            and (until is None or e["t"] <= until)
            and (maxlvl is None or LEVELS.index(e["level"]) <= maxlvl)]
    if n is not None:
        ents = ents[-n:] if n else []
    if not ents:
        print("-- No entries --")
        return 0
    for e in ents:
        t = e["t"]
        if out_fmt == "short-iso":
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(t))
        elif out_fmt == "short-iso-precise":
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t)) + ".%06d" % (
                int((t - int(t)) * 1e6)) + time.strftime("%z", time.localtime(t))
        elif out_fmt == "short-precise":
            stamp = time.strftime("%b %d %H:%M:%S", time.localtime(t)) + ".%06d" % int((t - int(t)) * 1e6)
        elif out_fmt == "cat":
            sys.stdout.write(e["msg"] + "\n")
            continue
        elif out_fmt == "json":
            sys.stdout.write(json.dumps({"__REALTIME_TIMESTAMP": str(int(t * 1e6)), "_HOSTNAME": host,
                                         "SYSLOG_IDENTIFIER": "kernel", "_TRANSPORT": "kernel",
                                         "PRIORITY": str(LEVELS.index(e["level"])),
                                         "MESSAGE": e["msg"]}) + "\n")
            continue
        else:
            stamp = time.strftime("%b %d %H:%M:%S", time.localtime(t))
        sys.stdout.write("%s %s kernel: %s\n" % (stamp, host, e["msg"]))
    return 0


# --------------------------------------------------------------------------- systemctl

def _svc_running(d, u):
    try:
        with open(os.path.join(d, u + ".pidfile")) as f:
            pf = f.read().strip()
        with open(pf) as f:
            pid = int(f.read().strip())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return 0


def openibd_restart(st, now=None, stop_only=False, start_only=False, by="openibd restart"):
    """The IB stack going down and/or up (openibd, or ``by`` "mlx5 driver reload" for modprobe: counted
    in ``services.openibd.reloads`` instead of ``restarts``)."""
    now = now or time.time()
    svc = st.setdefault("services", {}).setdefault("openibd", {"active": True})
    if not start_only:
        for h in st["hcas"]:
            add_kernel(st, "mlx5_core %s %s: Link down" % (h["pci"], h["netdev"]), "info", now)
        add_kernel(st, "mlx5_core %s: E-Switch: cleanup" % st["hcas"][0]["pci"], "info", now + 0.3)
        svc["active"] = False
    if stop_only:
        return
    t = now + 1.5
    for h in st["hcas"]:
        add_kernel(st, "mlx5_core %s: firmware version: %s" % (h["pci"], h["fw"]), "info", t)
        f = h.get("fault")
        if f in ("flapping", "down"):
            freeze_counters(h, st, now)
            h["fault"] = None
            h["fixed_by"] = by
        add_kernel(st, "mlx5_core %s: Port module event: module %d, Cable plugged"
                   % (h["pci"], int(h["name"].split("_")[1])), "info", t + 0.2)
        add_kernel(st, "mlx5_core %s %s: Link up" % (h["pci"], h["netdev"]), "info", t + 0.5)
        if f == "bad_cable":
            add_kernel(st, "mlx5_core %s: Port module event[error]: module %d, Cable error, Bad or shorted "
                       "cable/module" % (h["pci"], int(h["name"].split("_")[1])), "err", t + 2)
            add_kernel(st, "mlx5_core %s %s: Link down" % (h["pci"], h["netdev"]), "info", t + 2.1)
    svc["active"] = True
    svc["since"] = now
    key = "restarts" if by == "openibd restart" else "reloads"
    svc[key] = svc.get(key, 0) + 1


_OPENIBD_MODULE_MSG = [  # openibd stop(): the storage modules it will not unload for you
    ("ib_isert", "Please close all isert sessions and unload 'ib_isert' module."),
    ("nvme_rdma", "Please close all nvme sessions and unload 'nvme_rdma' module."),
    ("nvmet_rdma", "Please close all nvmet sessions and unload 'nvmet_rdma' module."),
    ("rpcrdma", "Please make sure module 'rpcrdma' is not in use and unload it."),
    ("xprtrdma", "Please make sure module 'xprtrdma' is not in use and unload it."),
    ("ib_srpt", "Please make sure module 'ib_srpt' is not in use and unload it."),
]
_JOB_FAILED = ('Job for openibd.service failed because the control process exited with error code.\n'
               'See "systemctl status openibd.service" and "journalctl -xeu openibd.service" for details.')


def openibd_refuses(st, svc):
    """openibd's stop() pre-checks, as the real script words them -> 0, or 1 after recording the text.

    Source: mlnx-ofa_kernel ``ofed_scripts/openibd`` (stop(): ko2iblnd in /proc/modules, pgrep of
    opensm/osmtest/ibbs/ibns/ibacm, ``lsof +c 0 -a +d /dev/infiniband`` -> "Please stop the following
    applications still using Infiniband devices:" / "<app>(<pid>) user <owner> is using device <dev>",
    the storage modules, then "Error: Cannot unload the Infiniband driver stack due to the above
    issue(s)!" and exit 1); seen e.g. in github.com/knneth/mlnx-ofa_kernel. Under systemd the text
    goes to the journal (``systemctl status``) and systemctl itself prints "Job for ... failed".
    A loaded nvidia_peermem is not checked there: it holds ib_core, so the unload fails half-way
    ("rmmod: ERROR: Module ib_core is in use by: nvidia_peermem") with the HCA modules already gone.
    """
    mods = set(loaded_modules(st)) if "modules" in st else set()
    out, blocking = [], []
    if "ko2iblnd" in mods:
        out.append("Please stop Lustre services before unloading the Infiniband stack.")
    holders = st.get("ib_holders", [])
    for app in ("opensm", "osmtest", "ibbs", "ibns", "ibacm"):
        if any(h["comm"] == app for h in holders):
            out.append('Please stop "%s" and all applications running over InfiniBand.' % app)
    using = [h for h in holders if h.get("device", "uverbs0")]
    if using:
        out += ["", "Please stop the following applications still using Infiniband devices:"]
        out += ["%s(%d) user %s is using device %s" % (h["comm"], h["pid"], h.get("user", "root"),
                                                      h.get("device", "uverbs0")) for h in using]
        out.append("")
    for m, msg in _OPENIBD_MODULE_MSG:
        if m in mods:
            blocking.append(m)
            out.append(msg)
    if out:
        out += ["", "Error: Cannot unload the Infiniband driver stack due to the above issue(s)!"]
        if blocking:
            out += ["", "To unload the blocking modules, you can run:", "# modprobe -rv %s" % " ".join(blocking)]
        out += ["", "Once the above issue(s) resolved, run:", "# /etc/init.d/openibd restart"]
    elif "nvidia_peermem" in mods:
        openibd_restart(st, stop_only=True)
        out = ["Unloading ib_core                                          [FAILED]",
               "rmmod: ERROR: Module ib_core is in use by: nvidia_peermem"]
    if not out:
        svc.pop("failed", None)
        svc["last_output"] = ["Unloading HCA driver:                                      [  OK  ]",
                              "Loading HCA driver and Access Layer:                       [  OK  ]"]
        return 0
    svc["last_output"] = out
    svc["failed"] = True
    svc["refusals"] = svc.get("refusals", 0) + 1
    print(_JOB_FAILED, file=sys.stderr)
    return 1


IB_DRIVER_MODULES = ("mlx5_core", "mlx5_ib")


def _in_use(st, n, mods):
    """kmod's refusal: another loaded module uses ``n``, a reference no module accounts for
    (``module_refcount``), or a process holds /dev/infiniband and ``n`` is one of HOLDER_PINNED."""
    held = any(h.get("device", "uverbs0") for h in st.get("ib_holders", []))
    return bool(module_users(st, n, mods) or int((st.get("module_refcount") or {}).get(n, 0))
                or (held and n in HOLDER_PINNED))


def _modprobe_remove(st, n, mods, named=True):
    """modprobe -r: ``n`` out, then its dependencies that nothing uses any more (man modprobe:
    "If the modules it depends on are also unused, modprobe will try to remove them too")."""
    if n not in mods:
        if named:
            print("modprobe: FATAL: Module %s is not in kernel." % n, file=sys.stderr)
        return not named
    if _in_use(st, n, mods):
        if named:
            print("modprobe: FATAL: Module %s is in use." % n, file=sys.stderr)
        return not named
    mods.remove(n)
    for dep in module_deps(st, n):
        _modprobe_remove(st, dep, mods, named=False)
    return True


def _modprobe_insert(st, n, mods):
    for dep in module_deps(st, n):
        if dep not in mods:
            _modprobe_insert(st, dep, mods)
    if n not in mods:
        mods.append(n)


def modprobe(argv, root=None):
    """modprobe [-a] NAME... / modprobe -r NAME... on the state's module list, with kmod's messages and its
    dependency handling (MODULE_DEPS). Taking mlx5_ib or mlx5_core out brings the IB ports down; loading
    them back (both loaded again) brings them up like an openibd restart: a flapping or down port is
    mended, a bad cable is not (``fixed_by`` "mlx5 driver reload", ``services.openibd.reloads``)."""
    root = _root(root)
    remove = "--remove" in argv or any(a.startswith("-") and not a.startswith("--") and "r" in a for a in argv)
    names = [a.replace("-", "_") for a in argv if not a.startswith("-")]
    if not names:
        print("modprobe: FATAL: Module name not given.", file=sys.stderr)
        return 1
    rc = 0
    with locked(root):
        st = load(root)
        mods = loaded_modules(st)
        up = all(m in mods for m in IB_DRIVER_MODULES)
        for n in names:
            if remove and not _modprobe_remove(st, n, mods):
                rc = 1
                break
            if not remove:
                _modprobe_insert(st, n, mods)
        st["modules"] = mods
        now_up = all(m in mods for m in IB_DRIVER_MODULES)
        if up and not now_up and st.get("hcas"):
            openibd_restart(st, stop_only=True)
        elif now_up and not up and st.get("hcas"):
            openibd_restart(st, start_only=True, by="mlx5 driver reload")
        save(st, root)
        render_sysfs(st, root)
    return rc


def unit_file(verb, u, root):
    """``systemctl cat`` (any unit), and openibd on an inbox rdma-core stack (``"ib_stack": "inbox"``:
    there is no openibd unit) -> rc, or None when systemctl() handles it."""
    inbox = load(root).get("ib_stack") == "inbox"
    if u == "openibd" and inbox:
        if verb == "show":
            print("Id=openibd.service\nNames=openibd.service\nLoadState=not-found\nActiveState=inactive\n"
                  "SubState=dead\nMainPID=0\nUnitFileState=")
            return 0
        print(("No files found for %s.service." if verb == "cat" else "Unit %s.service could not be found.") % u,
              file=sys.stderr)
        return 1 if verb == "cat" else 4 if verb == "status" else 5
    if verb != "cat":
        return None
    st = load(root)
    d = os.path.join(root, "services")
    if u == "openibd":
        print("# /lib/systemd/system/openibd.service\n[Unit]\nDescription=openibd - configure Mellanox devices\n\n"
              "[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/etc/init.d/openibd start bootid=%b\n"
              "ExecStop=/etc/init.d/openibd stop\nExecReload=/etc/init.d/openibd restart")
        return 0
    if os.path.exists(os.path.join(d, u + ".start")) or u in st.get("services", {}):
        print("# /etc/systemd/system/%s.service\n[Service]\nExecStart=/usr/sbin/%s" % (u, u))
        return 0
    print("No files found for %s.service." % u, file=sys.stderr)
    return 1


def state_unit(verb, u, root):
    """Units whose state lives in state.json ``services[u]`` (not openibd): ``{"active": bool, "pid"?,
    "comm"?, "start_fails"?, "stop_fails"?}`` -- nvidia-dcgm / dcgm-exporter (their main process holds
    every GPU while active, see gpu_device_holders), nvidia-fabricmanager. -> rc, or None (not one)."""
    with locked(root):
        st = load(root)
        svc = st.get("services", {}).get(u)
        if u == "openibd" or svc is None:
            return None
        a = svc.get("active", True)
        rc = 0
        if verb in ("start", "restart") and svc.get("start_fails"):
            svc["active"] = False
            print("Job for %s.service failed because the control process exited with error code." % u,
                  file=sys.stderr)
            rc = 1
        elif verb == "stop" and svc.get("stop_fails"):
            print("Job for %s.service canceled." % u, file=sys.stderr)
            rc = 1
        elif verb in ("start", "restart", "stop"):
            svc["active"] = verb != "stop"
            svc["starts"] = svc.get("starts", 0) + (verb != "stop")
        elif verb == "is-active":
            print("active" if a else "inactive")
            rc = 0 if a else 3
        elif verb == "status":
            print("* %s.service - %s" % (u, "active (running)" if a else "inactive (dead)"))
            rc = 0 if a else 3
        elif verb == "show":
            print("Id=%s.service\nNames=%s.service\nLoadState=loaded\nActiveState=%s\nSubState=%s\nMainPID=%d\n"
                  "UnitFileState=enabled" % (u, u, "active" if a else "inactive", "running" if a else "dead",
                                             svc.get("pid", 0) if a else 0))
        else:
            print("fake systemctl: unsupported verb %s" % verb, file=sys.stderr)
            rc = 1
        save(st, root)
        render_sysfs(st, root)
    return rc


def systemctl(argv, root=None):
    root = _root(root)
    d = os.path.join(root, "services")
    args = [a for a in argv if not (a.startswith("-"))]
    if not args:
        print("fake systemctl: no verb", file=sys.stderr)
        return 1
    verb = args[0]
    units = [a.strip("'\"") for a in args[1:]]
    u = units[0][:-8] if units and units[0].endswith(".service") else (units[0] if units else "")
    if u and (verb == "cat" or u == "openibd"):
        rc = unit_file(verb, u, root)       # systemctl cat; no openibd on an inbox stack
        if rc is not None:
            return rc
    if verb in ("daemon-reload", "daemon-reexec", "reset-failed", "enable", "disable", "mask", "unmask"):
        return 0
    if verb == "is-enabled":
        print("enabled")
        return 0
    if u == "openibd":
        with locked(root):
            st = load(root)
            svc = st.setdefault("services", {}).setdefault("openibd", {"active": True})
            rc = 0
            if verb in ("restart", "reload-or-restart", "try-restart", "force-reload", "stop"):
                rc = openibd_refuses(st, svc)
            if rc:
                pass            # refused: nothing unloaded (or, for nvidia_peermem, half of it)
            elif verb in ("restart", "reload-or-restart", "try-restart", "force-reload"):
                openibd_restart(st)
            elif verb == "stop":
                if svc.get("active", True):
                    openibd_restart(st, stop_only=True)
            elif verb == "start":
                if not svc.get("active", True):
                    openibd_restart(st, start_only=True)
            elif verb == "is-active":
                print("active" if svc.get("active", True) else "inactive")
                rc = 0 if svc.get("active", True) else 3
            elif verb == "status":
                a = svc.get("active", True)
                print("● openibd.service - openibd - configure Mellanox devices")
                print("     Loaded: loaded (/lib/systemd/system/openibd.service; enabled; preset: enabled)")
                print("     Active: %s" % ("active (exited)" if a else "failed (Result: exit-code)"
                                                   if svc.get("failed") else "inactive (dead)"))
                for line in svc.get("last_output", []):
                    print("openibd[%d]: %s" % (svc.get("last_pid", 4242), line))
                rc = 0 if a else 3
            elif verb == "show":
                a = svc.get("active", True)
                print("Id=openibd.service\nNames=openibd.service\nLoadState=loaded\nActiveState=%s\n"
                      "SubState=%s\nMainPID=0\nUnitFileState=enabled\nType=oneshot\nRemainAfterExit=yes\n"
                      "FragmentPath=/lib/systemd/system/openibd.service\nNRestarts=%d"
                      % ("active" if a else "inactive", "exited" if a else "dead", svc.get("restarts", 0)))
            else:
                print("fake systemctl: unsupported verb %s" % verb, file=sys.stderr)
                rc = 1
            save(st, root)
            render_sysfs(st, root)
        return rc
    rc = state_unit(verb, u, root)
    if rc is not None:
        return rc
    # process-backed units (slurmd): <unit>.start (shell cmd that daemonizes) + <unit>.pidfile
    known = os.path.exists(os.path.join(d, u + ".start"))

    def start():
        import subprocess
        with open(os.path.join(d, u + ".start")) as f:
            subprocess.call(["/bin/sh", "-c", f.read()])
        for _ in range(25):
            if _svc_running(d, u):
                return 0
            time.sleep(0.2)
        return 1

    def stop():
        pid = _svc_running(d, u)
        if pid:
            os.kill(pid, 15)
            for _ in range(50):
                try:
                    os.kill(pid, 0)
                except OSError:
                    break
                time.sleep(0.1)
        return 0
    if verb == "show":
        if not known:
            print("Id=%s.service\nNames=%s.service\nLoadState=not-found\nActiveState=inactive\nSubState=dead\n"
                  "MainPID=0\nUnitFileState=" % (u, u))
            return 0
        pid = _svc_running(d, u)
        print("Id=%s.service\nNames=%s.service\nLoadState=loaded\nActiveState=%s\nSubState=%s\nMainPID=%d\n"
              "UnitFileState=enabled\nFragmentPath=/etc/systemd/system/%s.service"
              % (u, u, "active" if pid else "inactive", "running" if pid else "dead", pid, u))
        return 0
    if not known:
        print("Unit %s.service could not be found." % u, file=sys.stderr)
        return 4 if verb in ("status",) else 5
    if verb == "is-active":
        pid = _svc_running(d, u)
        print("active" if pid else "inactive")
        return 0 if pid else 3
    if verb == "status":
        pid = _svc_running(d, u)
        print("● %s.service - %s" % (u, "active (running) pid %d" % pid if pid else "inactive (dead)"))
        return 0 if pid else 3
    if verb == "start":
        return 0 if _svc_running(d, u) else start()
    if verb == "stop":
        return stop()
    if verb in ("restart", "reload-or-restart", "try-restart"):
        stop()
        return start()
    print("fake systemctl: unsupported verb %s" % verb, file=sys.stderr)
    return 1


# --------------------------------------------------------------------------- active tests
# dcgmi diag, all_reduce_perf (nccl-tests), nvbandwidth, ib_write_bw (perftest): tools that load the
# node and measure it. Formats from the tools' own source (see tests/fixtures/active/README.md):
# DCGM v3.3.9 dcgmi/Diag.cpp + jsoncpp 1.9.5, nccl-tests v2.13.11 src/common.cu, nvbandwidth v0.8
# output.cpp/inline_common.h, perftest 24.10.0-0.66 perftest_parameters.c/write_bw.c.

ACTIVE_TOOLS = ("dcgmi", "all_reduce_perf", "nvbandwidth", "ib_write_bw")
ACTIVE_SECONDS = 0.5            # default duration of one fake test (state["active"]["seconds"])
IB_SERVER_SECONDS = 2.0         # an ib_write_bw server waits this long for its (pretend) client
DCGM_VERSION = "3.3.9"
# per GPU model: (all_reduce busbw GB/s on 8 GPUs: Azure conf check_nccl_allreduce, nvbandwidth H2D, D2H,
# D2D read GB/s: healthy values above Azure's check_gpu_bw floors, PCI device id, totalGlobalMem bytes)
GPU_MODELS = (
    ("H200", 431.0, 55.0, 55.0, 375.0, "2335", 150754820096),
    ("H100", 460.0, 55.0, 55.0, 375.0, "2330", 85030649856),
    ("A100-SXM4-80GB", 228.0, 24.0, 24.0, 265.0, "20b2", 85198045184),
    ("A100", 228.0, 24.0, 24.0, 265.0, "20b0", 42505273344),
    ("V100", 110.0, 11.0, 11.0, 45.0, "1db5", 34079899648),
)


def _gpu_model(st):
    name = (st.get("gpus") or [{}])[0].get("name", "")
    for m in GPU_MODELS:
        if m[0] in name:
            return m
    return GPU_MODELS[1]


def active_knobs(st):
    return st.get("active") or {}


def absent_tools(st):
    """Tools not installed on this host: ``active.absent`` (+ dcgmi when ``active.dcgm`` is "absent")."""
    a = active_knobs(st)
    out = [str(t) for t in a.get("absent") or []]
    if a.get("dcgm") == "absent" and "dcgmi" not in out:
        out.append("dcgmi")
    return out


def _present(st):
    return [g for g in st.get("gpus", []) if g.get("present", True)]


def _seconds(st):
    return float(active_knobs(st).get("seconds", ACTIVE_SECONDS))


def _jitter(key, amp):
    """Deterministic factor in [1, 1 + amp) for one cell (real figures differ a little, cell to cell)."""
    import zlib
    return 1.0 + amp * (zlib.crc32(key.encode()) % 1000) / 1000.0


def _out(text):
    sys.stdout.write(text)
    sys.stdout.flush()


def _err(text):
    sys.stderr.write(text)
    sys.stderr.flush()


def _hang():
    """Block like a stuck test: far past any deadline; SIGTERM/SIGKILL end it as they would the real tool."""
    while True:
        time.sleep(3600)


def _set_comm(tool):
    """Name the process as the real binary is named (/proc/<pid>/comm), so a caller that looks for a
    left-over ``all_reduce_perf`` after its deadline finds this one."""
    try:
        import ctypes
        ctypes.CDLL(None).prctl(15, ctypes.c_char_p(tool[:15].encode()), 0, 0, 0)     # PR_SET_NAME
    except Exception:       # no libc prctl: keep python3's name
        pass


# ---------------------------------------------------------------- jsoncpp 1.9.5 toStyledString()
def _json_str(v):
    return json.dumps(v, ensure_ascii=True)


def jsoncpp_styled(value):
    """Json::Value::toStyledString() of jsoncpp 1.9.5 (what dcgmi prints): StreamWriterBuilder defaults
    -- tab indentation, members sorted, ``"key" : `` then a nested ``{``/``[`` on its own line, every
    non-empty array multi-line (commentStyle All), ending with a newline."""
    out = []
    state = {"indented": True, "ind": ""}

    def write_indent():
        out.append("\n" + state["ind"])

    def with_indent(s):
        if not state["indented"]:
            write_indent()
        out.append(s)
        state["indented"] = False

    def value_(v):
        if isinstance(v, dict):
            if not v:
                out.append("{}")
                return
            with_indent("{")
            state["ind"] += "\t"
            keys = sorted(v, key=lambda k: k.encode())
            for n, k in enumerate(keys):
                with_indent(_json_str(k))
                out.append(" : ")
                value_(v[k])
                if n + 1 < len(keys):
                    out.append(",")
            state["ind"] = state["ind"][:-1]
            with_indent("}")
        elif isinstance(v, list):
            if not v:
                out.append("[]")
                return
            with_indent("[")
            state["ind"] += "\t"
            for n, c in enumerate(v):
                if not state["indented"]:
                    write_indent()
                state["indented"] = True
                value_(c)
                state["indented"] = False
                if n + 1 < len(v):
                    out.append(",")
            state["ind"] = state["ind"][:-1]
            with_indent("]")
        elif isinstance(v, bool):
            out.append("true" if v else "false")
        elif v is None:
            out.append("null")
        elif isinstance(v, int):
            out.append(str(v))
        elif isinstance(v, float):
            out.append(repr(v))
        else:
            out.append(_json_str(str(v)))
    value_(value)
    return "".join(out) + "\n"


# ---------------------------------------------------------------- dcgmi diag (DCGM 3.3.9)
# DCGM_FR_* codes the fake knows (dcgmlib/dcgm_errors.h + src/dcgm_errors.c at v3.3.9):
# code -> (name, severity (dcgmErrorGetPriorityByCode), category, message format, next steps)
_TRIAGE = "Check DCGM and system logs for errors. Reset GPU. Restart DCGM. Rerun diagnostics."
_FIELD_DIAG = "Run a field diagnostic on the GPU."
DCGM_ERRORS = {
    9: ("DCGM_FR_CORRUPT_INFOROM", 4, 15, "A corrupt InfoROM has been detected in GPU %(gpu)d.",
        "Flash the InfoROM to clear this corruption."),
    14: ("DCGM_FR_NVLINK_DOWN", 4, 11, "GPU %(gpu)d's NvLink link %(link)d is currently down", _TRIAGE),
    23: ("DCGM_FR_DENYLISTED_DRIVER", 5, 3, "Found driver on the denylist: %(driver)s",
         "Please load the appropriate driver."),
    25: ("DCGM_FR_GRAPHICS_PROCESSES", 6, 8, "NVVS has detected processes with graphics contexts open running on "
         "at least one GPU. This may cause some tests to fail.", "Stop the graphics processes or run this "
         "diagnostic on a server that is not being used for display purposes."),
    29: ("DCGM_FR_PERSISTENCE_MODE", 5, 8, "Persistence mode for GPU %(gpu)d is disabled.",
         "Enable persistence mode by running \"nvidia-smi -i <gpuId> -pm 1 \" as root."),
    30: ("DCGM_FR_LOW_BANDWIDTH", 4, 13, "Bandwidth of GPU %(gpu)d in direction %(direction)s of %(value).2f did "
         "not exceed minimum required bandwidth of %(minimum).2f.", "Verify that your minimum bandwidth setting is "
         "appropriate for the topology of each GPU. If so, and errors are consistent, please run a field diagnostic."),
    44: ("DCGM_FR_INTERNAL", 4, 16, "There was an internal error during the test: '%(detail)s'", _TRIAGE),
    50: ("DCGM_FR_STRESS_LEVEL", 4, 1, "Max stress level of %(value).1f did not reach desired stress level of "
         "%(minimum).1f for GPU %(gpu)d", _TRIAGE),
    52: ("DCGM_FR_FAULTY_MEMORY", 2, 10, "Found %(count)d faulty memory elements on GPU %(gpu)d", _FIELD_DIAG),
    57: ("DCGM_FR_CUDA_DBE", 2, 10, "CUDA APIs have indicated that a double-bit ECC error has occured on GPU "
         "%(gpu)d.", _FIELD_DIAG),
    58: ("DCGM_FR_MEMORY_MISMATCH", 2, 10, "A memory mismatch was detected on GPU %(gpu)d, but no error was "
         "reported by CUDA or NVML.", _FIELD_DIAG),
    62: ("DCGM_FR_MEMORY_BANDWIDTH", 4, 1, "GPU %(gpu)d only achieved a memory bandwidth of %(value).2f GB/s, "
         "failing to meet %(minimum).2f GB/s for test %(test)d", _TRIAGE),
    63: ("DCGM_FR_TARGET_POWER", 4, 14, "Max power of %(value).1f did not reach desired power minimum "
         "target_power_min_ratio of %(minimum).1f for GPU %(gpu)d", "Verify that the clock speeds and GPU "
         "utilization are high."),
    80: ("DCGM_FR_ROW_REMAP_FAILURE", 2, 10, "GPU %(gpu)d had uncorrectable memory errors and row remapping "
         "failed.", _FIELD_DIAG),
    85: ("DCGM_FR_PENDING_ROW_REMAP", 6, 10, "GPU %(gpu)d had memory errors and row remappings are pending",
         _TRIAGE),
    98: ("DCGM_FR_PCIE_H_REPLAY_VIOLATION", 2, 13, "GPU %(gpu)d host-side PCIe replay violation, see dmesg for "
         "more information", ""),
    110: ("DCGM_FR_GFLOPS_THRESHOLD_VIOLATION", 4, 2, "Detected %(value).2f %(field)s for GPU %(gpu)d which is "
          "below the threshold %(minimum).2f", "Please verify your user-specified variance tolerance is set "
          "appropriately; if so, and if errors are persistent, please run a field diagnostic."),
}
DCGM_ERROR_ISOLATE = 2
_DCGM_ARGS = {"link": 0, "driver": "nouveau", "direction": "h2d", "value": 11.52, "minimum": 22.0, "detail": "fakehw",
              "count": 1, "test": 0, "field": "gflops"}
# the level-one (software/"Deployment") tests, in dcgmSoftwareTest_enum order less CUDA Toolkit Library
# (never run, so left out of both outputs)
DCGM_SW_TESTS = ("Denylist", "NVML Library", "CUDA Main Library", "Permissions and OS Blocks", "Persistence Mode",
                 "Environment Variables", "Page Retirement/Row Remap", "Graphics Processes", "Inforom")
# per-GPU tests: (plugin name, display name, category, lowest -r level that runs it, default DCGM_FR code),
# in DCGM_*_INDEX order; levels from nvvs/src/NvidiaValidationSuite.cpp fillTestVectors()
DCGM_GPU_TESTS = (
    ("memory", "GPU Memory", "Hardware", 2, 58),
    ("diagnostic", "Diagnostic", "Hardware", 3, 52),
    ("pcie", "PCIe", "Integration", 2, 30),
    ("sm_stress", "SM Stress", "Stress", 99, 50),
    ("targeted_stress", "Targeted Stress", "Stress", 3, 50),
    ("targeted_power", "Targeted Power", "Stress", 3, 63),
    ("memory_bandwidth", "Memory Bandwidth", "Stress", 3, 62),
    ("memtest", "Memtest", "Hardware", 4, 58),
    ("pulse_test", "Pulse Test", "Hardware", 4, 44),
)
_SW_DEFAULT_CODE = {"Denylist": 23, "Persistence Mode": 29, "Page Retirement/Row Remap": 85,
                    "Graphics Processes": 25, "Inforom": 9}


def dcgm_message(code, gpu, **args):
    """DCGM's full message for a DCGM_FR code on one GPU: the code's message filled in + " " + its next steps
    (common/DcgmError.h SetFullError)."""
    meta = DCGM_ERRORS.get(int(code))
    if meta is None:
        return "Fake DCGM error %d on GPU %d" % (int(code), gpu)
    a = dict(_DCGM_ARGS, gpu=gpu)
    a.update(args)
    msg = meta[3] % a
    return msg + (" " + meta[4] if meta[4] else "")


def _dcgm_test_key(name):
    n = str(name).strip().lower().replace("-", "_")
    for plugin, display, _c, _l, _d in DCGM_GPU_TESTS:
        if n in (plugin, display.lower(), display.lower().replace(" ", "_")):
            return plugin
    for t in DCGM_SW_TESTS:
        if n == t.lower():
            return t
    if n in ("page retirement", "row remap", "page_retirement"):
        return "Page Retirement/Row Remap"
    return str(name)


def _dcgm_fails(g):
    f = g.get("dcgm_fail")
    if not f:
        return []
    return [x for x in (f if isinstance(f, list) else [f]) if isinstance(x, dict)]


def _dcgm_error(g, f, code_default):
    code = int(f.get("error_id", code_default))
    meta = DCGM_ERRORS.get(code, ("", 4, 16, "", ""))
    return {"gpu": g["index"], "code": code, "msg": f.get("message") or dcgm_message(code, g["index"]),
            "category": int(f.get("error_category", meta[2])), "severity": int(f.get("error_severity", meta[1]))}


def _dcgm_parse(argv):
    o = {"run": "1", "json": False, "gpus": None, "host": None, "verbose": False, "sub": None, "bad": None}
    it = iter(argv)
    for a in it:
        if o["sub"] is None and not a.startswith("-"):
            o["sub"] = a
            continue
        key, val = (a.split("=", 1) + [None])[:2] if a.startswith("--") else (a, None)

        def nxt():
            return val if val is not None else next(it, "")
        if key in ("-r", "--run"):
            o["run"] = nxt()
        elif key in ("-j", "--json"):
            o["json"] = True
        elif key in ("-i", "--gpuList"):
            o["gpus"] = nxt()
        elif key == "--host":
            o["host"] = nxt()
        elif key in ("-v", "--verbose"):
            o["verbose"] = True
        elif key in ("-g", "--group", "-p", "--parameters", "-c", "--configfile", "-t", "--timeout", "--iterations",
                     "-d", "--debugLevel", "--debugLogFile", "--statspath", "--throttle-mask", "--check-interval",
                     "-n", "--expectedNumEntities", "-f", "--fakeGpuList"):
            nxt()
        elif key in ("--statsonfail", "--fail-early"):
            pass
        elif a.startswith("-r") and len(a) > 2:
            o["run"] = a[2:]
        elif a.startswith("-i") and len(a) > 2:
            o["gpus"] = a[2:]
        else:
            o["bad"] = a
    return o


def _dcgm_run(st, o):
    """-> (sw, per_gpu, gpu_vec, rc): sw = [(name, status, [errors])], per_gpu = [(plugin, display, category,
    {gpu: (status, [errors])})] for the tests that ran, as Diag.cpp's dcgmDiagResponse would hold them."""
    gpus = _present(st)
    if o["gpus"]:
        want = [int(x) for x in o["gpus"].split(",") if x.strip().isdigit()]
        gpus = [g for g in gpus if g["index"] in want]
    r = str(o["run"]).strip()
    if r.isdigit():
        level, names = int(r), None
    else:
        level, names = 0, [_dcgm_test_key(x) for x in r.split(",")]
    run_sw = level >= 1 or (names is not None and ("software" in names or any(n in DCGM_SW_TESTS for n in names)))
    sw, stop = [], False
    if run_sw:
        for t in DCGM_SW_TESTS:
            status, errs = "Pass", []
            for g in gpus:
                for f in _dcgm_fails(g):
                    if _dcgm_test_key(f.get("test", "")) == t:
                        errs.append(_dcgm_error(g, f, _SW_DEFAULT_CODE.get(t, 44)))
                        status = "Warn" if f.get("status") == "Warn" and status != "Fail" else "Fail"
                if t == "Persistence Mode" and not persistence_on(g) and not errs:
                    errs.append(_dcgm_error(g, {}, 29))          # Software.cpp: a warning, not a failure
                    status = "Warn" if status == "Pass" else status
                mine = any(e["gpu"] == g["index"] for e in errs)
                if t == "Page Retirement/Row Remap" and g.get("remap") and not mine:
                    if g["remap"].get("failure"):
                        errs.append(_dcgm_error(g, {}, 80))
                        status = "Fail"
                    elif g["remap"].get("pending"):
                        errs.append(_dcgm_error(g, {}, 85))
                        status = "Fail"
            if t == "Page Retirement/Row Remap" and status == "Fail":
                stop = True          # nvvs stops after a row remap failure/pending (main_should_stop)
            sw.append((t, status, errs))
    per = []
    for plugin, display, cat, lvl, code in DCGM_GPU_TESTS:
        if stop or not (level >= lvl if names is None else plugin in names):
            continue
        res = {}
        for g in gpus:
            status, errs = "Pass", []
            for f in _dcgm_fails(g):
                if _dcgm_test_key(f.get("test", "")) == plugin:
                    errs.append(_dcgm_error(g, f, code))
                    status = "Warn" if f.get("status") == "Warn" and status != "Fail" else "Fail"
            res[g["index"]] = (status, errs)
        per.append((plugin, display, cat, res))
    if o["gpus"]:
        gpu_vec = [g["index"] for g in gpus]
    else:
        gpu_vec = sorted(set(i for _p, _d, _c, res in per for i in res))
    # Diag::GetFailureResult: a failed test with an isolating error -> DCGM_ST_NVVS_ISOLATE_ERROR (-51),
    # any other failed test -> DCGM_ST_NVVS_ERROR (-30); the process exits with that value & 0xff
    failed = [e for _t, s, errs in sw if s == "Fail" for e in errs] + \
        [e for _p, _d, _c, res in per for s, errs in res.values() if s == "Fail" for e in errs]
    failed_any = any(s == "Fail" for _t, s, _e in sw) or any(s == "Fail" for _p, _d, _c, res in per
                                                              for s, _e in res.values())
    rc = 0
    if failed_any:
        rc = 205 if any(e["severity"] == DCGM_ERROR_ISOLATE for e in failed) else 226
    return sw, per, gpu_vec, rc


def _dcgm_shown(status):
    return "Pass" if status == "Pass" else "Skip" if status == "Skip" else "Fail"   # HelperDisplayDiagResult


def dcgm_diag_json(st, sw, per, gpu_vec):
    root = {"version": active_knobs(st).get("dcgm_version", DCGM_VERSION),
            "Driver Version Detected": st["driver_version"]}
    gpus = [g for g in _present(st) if g["index"] in gpu_vec] or _present(st)
    root["GPU Device Serials"] = dict((str(g["index"]), g["serial"]) for g in gpus)
    root["GPU Device IDs"] = [_gpu_model(st)[5] for _g in gpus]
    cats = []
    if sw:
        tests = []
        for name, status, errs in sw:
            res = {"status": _dcgm_shown(status)}
            if errs:
                res["gpu_id"] = errs[-1]["gpu"]
                # 3.3.9 HelperJsonAddBasicTests keys a level-one message "warnings" (NVVS_WARNINGS), not "warning"
                res["warnings"] = [{"warnings": e["msg"], "error_id": e["code"], "error_category": e["category"],
                                    "error_severity": e["severity"]} for e in errs]
            tests.append({"name": name, "results": [res]})
        cats.append({"category": "Deployment", "tests": tests})
    for cat in ("Integration", "Hardware", "Stress"):
        tests = []
        for plugin, display, c, res in per:
            if c != cat:
                continue
            rows = []
            for i in gpu_vec:
                if i not in res:
                    continue
                status, errs = res[i]
                r = {"gpu_id": str(i), "status": _dcgm_shown(status)}
                if errs:
                    r["warnings"] = [{"warning": e["msg"], "error_id": e["code"], "error_category": e["category"],
                                      "error_severity": e["severity"]} for e in errs]
                rows.append(r)
            if rows:
                tests.append({"name": display, "results": rows})
        if tests:
            cats.append({"category": cat, "tests": tests})
    if cats:
        root["DCGM GPU Diagnostic"] = {"test_categories": cats}
    return jsoncpp_styled(root)


def _dcgm_row(name, info):
    """DIAG_DATA stencil: each tag's value padded to the tag's width (25 / 46), cut with '...' when longer."""
    def fit(v, w):
        return v.ljust(w) if len(v) <= w else v[:w - 3] + "..."
    return "| %s | %s |\n" % (fit(name, 25), fit(info, 46))


def _dcgm_sanitize(msg):
    if "***" in msg:
        msg = msg[msg.index("***") + 3:]
    return msg.strip()


def _dcgm_verbose(out, label, msg):
    for pos in range(0, len(msg), 45):
        out.append(_dcgm_row(label if pos == 0 else "", msg[pos:pos + 45]))


def dcgm_diag_text(st, sw, per, gpu_vec, verbose=False):
    out = ["Successfully ran diagnostic for group.\n",
           "+---------------------------+------------------------------------------------+\n",
           "| Diagnostic                | Result                                         |\n",
           "+===========================+================================================+\n",
           "|-----  Metadata  ----------+------------------------------------------------|\n"]
    gpus = [g for g in _present(st) if g["index"] in gpu_vec] or _present(st)
    out.append(_dcgm_row("DCGM Version", active_knobs(st).get("dcgm_version", DCGM_VERSION)))
    out.append(_dcgm_row("Driver Version Detected", st["driver_version"]))
    out.append(_dcgm_row("GPU Device IDs Detected", ",".join(_gpu_model(st)[5] for _g in gpus)))
    out.append("|-----  Deployment  --------+------------------------------------------------|\n")
    for name, status, errs in sw:
        out.append(_dcgm_row(name, _dcgm_shown(status)))
        for e in errs:
            _dcgm_verbose(out, "Error", e["msg"])
    by = dict((p, (d, res)) for p, d, _c, res in per)

    def show(plugin):
        if plugin not in by:
            return
        display, res = by[plugin]
        ids = [i for i in gpu_vec if i in res]
        if not ids:
            return
        groups = {}
        for i in ids:
            groups.setdefault(res[i][0], []).append(i)
        n = len(ids)
        warn_details = verbose
        for word in ("Pass", "Skip", "Fail", "Warn"):
            if len(groups.get(word, [])) == n:
                out.append(_dcgm_row(display, "%s - All" % word))
                warn_details = verbose or word != "Pass"
                break
        else:
            first = True
            for word in ("Pass", "Fail", "Warn", "Skip"):
                g = groups.get(word)
                if not g:
                    continue
                out.append(_dcgm_row(display if first else "", "%s - GPU%s: %s   " % (
                    word, "" if len(g) == 1 else "s", ", ".join(str(i) for i in g))))
                first = False
                warn_details = warn_details or word != "Pass"
        if warn_details:
            for i in ids:
                for e in res[i][1]:
                    _dcgm_verbose(out, "Warning", _dcgm_sanitize(e["msg"]))
    if gpu_vec:
        out.append("+-----  Integration  -------+------------------------------------------------+\n")
        show("pcie")
        out.append("+-----  Hardware  ----------+------------------------------------------------+\n")
        show("memory")
        show("diagnostic")
        show("pulse_test")
        out.append("+-----  Stress  ------------+------------------------------------------------+\n")
        for p in ("sm_stress", "targeted_stress", "targeted_power", "memory_bandwidth", "memtest"):
            show(p)
    out.append("+---------------------------+------------------------------------------------+\n")
    return "".join(out)


def dcgmi(argv, root=None):
    """``dcgmi diag -r 1|2|3|4|<test>[,<test>] [-j] [-i 0,1,..] [-v] [--host H]`` as DCGM 3.3.9 prints it (text
    table or jsoncpp JSON); ``active.dcgm``: "ok" | "hostengine_down" | "embedded" | "absent" (see the module doc)."""
    st = load(root)
    a = active_knobs(st)
    o = _dcgm_parse(argv)
    mode = a.get("dcgm", "ok")
    host = o["host"] or "localhost"
    if mode == "hostengine_down" or (mode == "embedded" and o["sub"] != "diag"):
        # dcgmi/Command.cpp Connect() + DoExecuteConnectionFailure(DCGM_ST_CONNECTION_NOT_VALID = -21)
        _out("Error: unable to establish a connection to the specified host: %s\n" % host)
        _out("Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n")
        return 235
    if o["sub"] != "diag":
        _err("fakehw dcgmi: only 'dcgmi diag' is modelled (got %s)\n" % (o["sub"] or "no subcommand"))
        return 2
    if o["bad"]:
        _err("PARSE ERROR:  \n             Argument: %s\n             Couldn't find match for argument\n" % o["bad"])
        return 254
    if "dcgmi" in (a.get("hang") or []):
        _hang()
    time.sleep(_seconds(st))
    sw, per, gpu_vec, rc = _dcgm_run(st, o)
    _out(dcgm_diag_json(st, sw, per, gpu_vec) if o["json"] else dcgm_diag_text(st, sw, per, gpu_vec, o["verbose"]))
    return rc


# ---------------------------------------------------------------- all_reduce_perf (nccl-tests v2.13.11)
NCCL_TYPES = {"int8": 1, "char": 1, "uint8": 1, "int32": 4, "int": 4, "uint32": 4, "int64": 8, "uint64": 8,
              "half": 2, "float16": 2, "float": 4, "float32": 4, "double": 8, "float64": 8, "bfloat16": 2}
NCCL_TYPE_NAME = {"char": "int8", "int": "int32", "float16": "half", "float32": "float", "float64": "double"}
NCCL_SAT_BYTES = 8 * 1024 * 1024      # busbw = peak * (1 - exp(-bytes / this)): latency-bound below, peak above


def parse_size(text):
    """nccl-tests parsesize(): a number with an optional K/M/G suffix (powers of 1024) -> bytes, or -1."""
    t = str(text).strip()
    mult = 1
    if t and t[-1] in "kKmMgG":
        mult = {"k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}[t[-1].lower()]
        t = t[:-1]
    try:
        return int(float(t) * mult)
    except ValueError:
        return -1


def _nccl_opts(argv):
    short = "t:g:b:e:i:f:n:m:w:N:p:c:o:d:r:z:y:T:hG:C:a:R:"
    longs = {"nthreads": "t", "ngpus": "g", "minbytes": "b", "maxbytes": "e", "stepbytes": "i", "stepfactor": "f",
             "iters": "n", "agg_iters": "m", "warmup_iters": "w", "run_cycles": "N", "parallel_init": "p",
             "check": "c", "op": "o", "datatype": "d", "root": "r", "blocking": "z", "stream_null": "y",
             "timeout": "T", "cudagraph": "G", "report_cputime": "C", "average": "a", "local_register": "R",
             "help": "h"}
    takes = set(short[i - 1] for i in range(1, len(short)) if short[i] == ":")
    opts, i = [], 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--"):
            k, eq, v = a[2:].partition("=")
            c = longs.get(k)
            if c is None:
                return None, a
            if c in takes and not eq:
                i += 1
                v = argv[i] if i < len(argv) else ""
            opts.append((c, v))
        elif a.startswith("-") and len(a) > 1:
            c = a[1]
            if c not in short:
                return None, a
            if c in takes:
                v = a[2:]
                if not v:
                    i += 1
                    v = argv[i] if i < len(argv) else ""
                opts.append((c, v))
            else:
                opts.append((c, ""))
        i += 1
    return opts, None


def nccl_busbw(st, gpus_used):
    """The bus bandwidth all_reduce_perf reaches at large sizes: ``active.busbw_gbps`` (default: the GPU model's
    Azure figure), capped by the slowest GPU's ``busbw_gbps``."""
    peak = float(active_knobs(st).get("busbw_gbps", _gpu_model(st)[1]))
    for g in gpus_used:
        if g.get("busbw_gbps") is not None:
            peak = min(peak, float(g["busbw_gbps"]))
    return peak


def _nccl_time_str(us):
    return "%7.0f" % us if us >= 10000.0 else "%7.1f" % us if us >= 100.0 else "%7.2f" % us


def all_reduce_perf(argv, root=None):
    """``all_reduce_perf [-b MIN] [-e MAX] [-f FACTOR | -i STEP] [-g GPUS] [-t THREADS] [-c 0|1] [-d TYPE] [-n ITERS]
    [-w WARMUP] ...``: nccl-tests v2.13's single-process output; busbw reaches the knob at large sizes."""
    st = load(root)
    a = active_knobs(st)
    host = st.get("host") or os.uname().nodename
    opts, bad = _nccl_opts(argv)
    if bad is not None:
        _out("invalid option '%s'\n" % bad.lstrip("-")[:1])
        return 0
    p = {"t": "1", "g": "1", "b": str(32 * 1024 * 1024), "e": str(32 * 1024 * 1024), "i": str(1024 * 1024),
         "f": "1", "n": "20", "m": "1", "w": "5", "c": "1", "d": "float", "o": "sum", "G": "0"}
    for c, v in opts:
        if c == "h":
            _out("USAGE: all_reduce_perf \n\t[-t,--nthreads <num threads>] \n\t[-g,--ngpus <gpus per thread>] \n\t"
                 "[-b,--minbytes <min size in bytes>] \n\t[-e,--maxbytes <max size in bytes>] \n\t"
                 "[-i,--stepbytes <increment size>] \n\t[-f,--stepfactor <increment factor>] \n\t[-h,--help]\n")
            return 0
        p[c] = v
    for c, what in (("b", "minbytes"), ("e", "maxbytes"), ("i", "stepBytes")):
        if parse_size(p[c]) < 0:
            _err("invalid size specified for '%s'\n" % what)
            return 255
    nthreads, ngpus = int(p["t"]), int(p["g"])
    minb, maxb, stepb, factor = parse_size(p["b"]), parse_size(p["e"]), parse_size(p["i"]), int(p["f"])
    datacheck = int(p["c"])
    tname = NCCL_TYPE_NAME.get(p["d"], p["d"])
    if tname not in NCCL_TYPES:
        _out("Invalid type %s, defaulting to float\n" % p["d"])
        tname = "float"
    wsize = NCCL_TYPES[tname]
    if minb > maxb:
        _err("invalid sizes for 'minbytes' and 'maxbytes': %d > %d\n" % (minb, maxb))
        return 255
    _out("# nThread %d nGpus %d minBytes %d maxBytes %d step: %d(%s) warmup iters: %d iters: %d agg iters: %d "
         "validation: %d graph: %d\n#\n# Using devices\n"
         % (nthreads, ngpus, minb, maxb, factor if factor > 1 else stepb, "factor" if factor > 1 else "bytes",
            int(p["w"]), int(p["n"]), int(p["m"]), datacheck, int(p["G"])))
    gpus = _present(st)
    n = nthreads * ngpus
    if n > len(gpus):       # cudaGetDeviceProperties on an ordinal CUDA does not have
        _out("%s: Test CUDA failure common.cu:941 'invalid device ordinal'\n .. %s pid %d: Test failure "
             "common.cu:891\n" % (host, host, os.getpid()))
        return 2
    used = gpus[:n]
    _out("".join("#  Rank %2d Group %2d Pid %6d on %10s device %2d [0x%02x] %s\n"
                 % (i, 0, os.getpid(), host, i, int(g["bus"], 16), g["name"]) for i, g in enumerate(used)))
    mem_max = (_gpu_model(st)[6] - (1 << 30)) // (3 if datacheck else 2)
    if maxb > mem_max:
        maxb = mem_max
        _out("#\n# Reducing maxBytes to %d due to memory limitation\n" % maxb)
    if os.environ.get("NCCL_DEBUG", "").upper() in ("VERSION", "WARN", "INFO", "TRACE"):
        _out("NCCL version 2.21.5+cuda%s\n" % st.get("cuda_version", "12.4"))
    _out("#\n# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n"
         % ("", "", "", "", ""))
    _out("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n"
         % ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw",
            "#wrong"))
    _out("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n"
         % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", ""))
    if "all_reduce_perf" in (a.get("hang") or []):
        _hang()                             # stuck in the first collective, as a hung NCCL job is
    peak = nccl_busbw(st, used)
    wrong = int(a.get("nccl_wrong", 0))
    bw_factor = 2.0 * (n - 1) / n if n else 0.0
    sizes, size = [], minb
    while size <= maxb:
        sizes.append(size)
        if size <= 0 or (factor <= 1 and stepb <= 0):
            break                                   # (the real loop would never end)
        size = size * factor if factor > 1 else size + stepb
    time.sleep(_seconds(st))
    bws = []
    for size in sizes:
        count = size // wsize
        nbytes = count * wsize
        line = "%12d  %12d  %8s  %6s  %6s" % (nbytes, count, tname, p["o"], "%6i" % -1)
        for inplace in (0, 1):
            sat = 1.0 - math.exp(-nbytes / float(NCCL_SAT_BYTES))
            # small sizes vary a little (deterministically) between out-of-place and in-place; large ones sit
            # exactly at the peak
            sat *= 1.0 - 0.02 * (1.0 - sat) * (_jitter("%s|%d|%d" % (host, size, inplace), 1.0) - 1.0)
            if n > 1 and nbytes > 0 and sat > 0:
                busbw = peak * sat
                algbw = busbw / bw_factor
                us = nbytes / (algbw * 1e3)
            else:
                us = 4.0 + nbytes / 1.5e6
                algbw = nbytes / (us * 1e3)
                busbw = algbw * bw_factor
            w = wrong if wrong else 0
            line += ("  %7s  %6.2f  %6.2f  %5g" % (_nccl_time_str(us), algbw, busbw, float(w)) if datacheck else
                     "  %7s  %6.2f  %6.2f  %5s" % (_nccl_time_str(us), algbw, busbw, "N/A"))
            bws.append(busbw)
        _out(line + "\n")
    errors = wrong * len(bws) if datacheck else 0
    min_bw = os.environ.get("NCCL_TESTS_MIN_BW")
    check = float(min_bw) if min_bw else -1.0
    avg = sum(bws) / len(bws) if bws else float("nan")
    avg_s = "-nan" if avg != avg else "%g" % avg           # glibc prints 0.0/0 as -nan
    _out("# Out of bounds values : %d %s\n" % (errors, "FAILED" if errors else "OK"))
    _out("# Avg bus bandwidth    : %s %s\n#\n\n" % (avg_s, "" if check == -1 else
                                                     ("FAILED" if avg < check * 0.9 else "OK")))
    return 1 if errors or (check != -1 and avg < check * 0.9) else 0


# ---------------------------------------------------------------- nvbandwidth (v0.8)
NVBW_VERSION = "v0.8"
# real testcase keys in createTestcases() order (indexes for -t N)
NVBW_TESTCASES = (
    "host_to_device_memcpy_ce", "device_to_host_memcpy_ce", "host_to_device_bidirectional_memcpy_ce",
    "device_to_host_bidirectional_memcpy_ce", "device_to_device_memcpy_read_ce", "device_to_device_memcpy_write_ce",
    "device_to_device_bidirectional_memcpy_read_ce", "device_to_device_bidirectional_memcpy_write_ce",
    "all_to_host_memcpy_ce", "all_to_host_bidirectional_memcpy_ce", "host_to_all_memcpy_ce",
    "host_to_all_bidirectional_memcpy_ce", "all_to_one_write_ce", "all_to_one_read_ce", "one_to_all_write_ce",
    "one_to_all_read_ce", "host_to_device_memcpy_sm", "device_to_host_memcpy_sm",
    "host_to_device_bidirectional_memcpy_sm", "device_to_host_bidirectional_memcpy_sm",
    "device_to_device_memcpy_read_sm", "device_to_device_memcpy_write_sm",
    "device_to_device_bidirectional_memcpy_read_sm", "device_to_device_bidirectional_memcpy_write_sm",
    "all_to_host_memcpy_sm", "all_to_host_bidirectional_memcpy_sm", "host_to_all_memcpy_sm",
    "host_to_all_bidirectional_memcpy_sm", "all_to_one_write_sm", "all_to_one_read_sm", "one_to_all_write_sm",
    "one_to_all_read_sm", "host_device_latency_sm", "device_to_device_latency_sm", "device_local_copy")
# the ones the fake measures: key -> (title, kind, factor of the knob)
NVBW_MODELLED = {
    "host_to_device_memcpy_ce": ("memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)", "h2d", 1.0),
    "device_to_host_memcpy_ce": ("memcpy CE CPU(row) <- GPU(column) bandwidth (GB/s)", "d2h", 1.0),
    "host_to_device_bidirectional_memcpy_ce": ("memcpy CE CPU(row) <-> GPU(column) bandwidth (GB/s)", "h2d", 0.85),
    "device_to_host_bidirectional_memcpy_ce": ("memcpy CE CPU(row) <-> GPU(column) bandwidth (GB/s)", "d2h", 0.85),
    "device_to_device_memcpy_read_ce": ("memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)", "p2p", 1.0),
    "device_to_device_memcpy_write_ce": ("memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)", "p2p", 1.0),
    "host_to_device_memcpy_sm": ("memcpy SM CPU(row) -> GPU(column) bandwidth (GB/s)", "h2d", 1.02),
    "device_to_host_memcpy_sm": ("memcpy SM CPU(row) <- GPU(column) bandwidth (GB/s)", "d2h", 1.02),
    "device_to_device_memcpy_read_sm": ("memcpy SM GPU(row) -> GPU(column) bandwidth (GB/s)", "p2p", 0.98),
    "device_to_device_memcpy_write_sm": ("memcpy SM GPU(row) <- GPU(column) bandwidth (GB/s)", "p2p", 0.98),
}


def nvbandwidth_figures(st):
    """{"host_to_device_memcpy_ce", "device_to_host_memcpy_ce", "device_to_device_memcpy_read_ce"} GB/s: the
    model's defaults under ``active.nvbandwidth_gbps``."""
    m = _gpu_model(st)
    f = {"host_to_device_memcpy_ce": m[2], "device_to_host_memcpy_ce": m[3], "device_to_device_memcpy_read_ce": m[4]}
    f.update(dict((k, float(v)) for k, v in (active_knobs(st).get("nvbandwidth_gbps") or {}).items()))
    return f


def _nvbw_cell(st, kind, gi, gj=None):
    f = nvbandwidth_figures(st)
    if kind == "h2d":
        return float(gi.get("h2d_gbps", f["host_to_device_memcpy_ce"]))
    if kind == "d2h":
        return float(gi.get("d2h_gbps", f["device_to_host_memcpy_ce"]))
    v = float(f["device_to_device_memcpy_read_ce"])
    for g in (gi, gj):
        if g.get("p2p_gbps") is not None:
            v = min(v, float(g["p2p_gbps"]))
    return v


def _nvbw_matrix(key, rows, verbose):
    """PeerValueMatrix operator<< with std::fixed/setprecision(2): 2-wide row labels, 10-wide cells, N/A for
    an unmeasured pair, a blank line, SUM (and MIN/MAX/AVG with -v)."""
    ncol = len(rows[0])
    out = ["  " + "".join("%10d" % c for c in range(ncol)) + "\n"]
    vals = []
    for r, row in enumerate(rows):
        out.append("%2d" % r + "".join("%10s" % ("N/A" if v is None else "%.2f" % v) for v in row) + "\n")
        vals += [0.0 if v is None else v for v in row]
    out.append("\nSUM %s %.2f\n" % (key, sum(vals)))
    if verbose:
        pos = [v for v in vals if v > 0]
        out.append("MIN %s %.2f\nMAX %s %.2f\nAVG %s %.2f\n" % (key, min(vals), key, max(vals), key,
                                                               sum(vals) / len(pos) if pos else float("nan")))
    return "".join(out) + "\n"


def nvbandwidth(argv, root=None):
    """``nvbandwidth [-t TESTCASE ...] [-p PREFIX ...] [-b MiB] [-i N] [-v] [-l]`` as nvbandwidth v0.8 prints it."""
    st = load(root)
    a = active_knobs(st)
    tests, prefixes, buf, verbose, cur, bad = [], [], 512, False, None, None
    for x in argv:
        if x in ("-t", "--testcase"):
            cur = tests
        elif x in ("-p", "--testcasePrefixes"):
            cur = prefixes
        elif x in ("-b", "--bufferSize", "-i", "--testSamples", "--loopCount"):
            cur = "buf" if x in ("-b", "--bufferSize") else "skip"
        elif x in ("-v", "--verbose"):
            verbose, cur = True, None
        elif x in ("-s", "--skipVerification", "-d", "--disableAffinity", "-m", "--useMean", "--perfFormatter"):
            cur = None
        elif x in ("-l", "--list"):
            _out("nvbandwidth Version: %s\nBuilt from Git version: \n\nIndex, Name:\n\tDescription\n"
                 "=======================\n" % NVBW_VERSION
                 + "".join("%d, %s:\n\n\n" % (i, k) for i, k in enumerate(NVBW_TESTCASES)))
            return 0
        elif x in ("-j", "--json"):
            _err("fakehw nvbandwidth: -j (JSON output) is not modelled\n")
            return 2
        elif x.startswith("-"):
            bad = x
        elif cur == "buf":
            buf, cur = int(x) if x.isdigit() else buf, None
        elif cur == "skip":
            cur = None
        elif isinstance(cur, list):
            cur.append(x)
        else:
            bad = x
    _out("nvbandwidth Version: %s\nBuilt from Git version: \n\n" % NVBW_VERSION)
    if bad is not None:
        _out("ERROR: Invalid Arguments \n%s :\n\n" % " ".join(["nvbandwidth"] + list(argv)))
        return 1
    if tests and prefixes:
        _err("You cannot specify both testcase and testcasePrefix options at the same time\n")
        return 1
    if buf < 512:
        _out("NOTE: You have chosen a buffer size that is smaller than the default buffer size. It is suggested to "
             "use the default buffer size (64MB) to achieve maximal peak bandwidth.\n")
    major, _, minor = str(st.get("cuda_version", "12.4")).partition(".")
    cuda = int(major) * 1000 + int(minor or 0) * 10
    _out("CUDA Runtime Version: %d\nCUDA Driver Version: %d\nDriver Version: %s\n\n"
         % (cuda, cuda, st["driver_version"]))
    gpus = _present(st)
    _out((st.get("host") or os.uname().nodename) + "\n" + "".join(
        "Device %d: %s (00000000:%s:00)\n" % (i, g["name"], g["bus"].lower()) for i, g in enumerate(gpus)) + "\n")
    if prefixes:
        tests = [k for k in NVBW_TESTCASES if any(k.startswith(p) for p in prefixes)]
        if not tests:
            _err("Specified list of testcase prefixes did not match any testcases\n")
            return 1
    if not tests:
        tests = list(NVBW_TESTCASES)
    hang = "nvbandwidth" in (a.get("hang") or [])
    per = _seconds(st) / max(1, len(tests))
    for t in tests:
        key = NVBW_TESTCASES[int(t)] if t.isdigit() and int(t) < len(NVBW_TESTCASES) else t
        if t.isdigit() and int(t) >= len(NVBW_TESTCASES):
            _out("ERROR: Testcase index %s out of bound!\n" % t)
            continue
        if key not in NVBW_TESTCASES:
            _out("ERROR: Testcase %s not found!\n" % key)
            continue
        spec = NVBW_MODELLED.get(key)
        if spec is None or (spec[1] == "p2p" and len(gpus) < 2) or not gpus:
            _out("Waived: \n")            # not modelled by the fake, or no peer pair to measure
            continue
        _out("Running %s.\n" % key)
        if hang:
            _hang()
        time.sleep(per)
        title, kind, factor = spec
        if kind == "p2p":
            rows = [[None if i == j else
                     factor * _nvbw_cell(st, kind, gi, gj) * _jitter("%s|%d|%d" % (key, i, j), 0.003)
                     for j, gj in enumerate(gpus)] for i, gi in enumerate(gpus)]
        else:
            rows = [[factor * _nvbw_cell(st, kind, g) * _jitter("%s|%d" % (key, i), 0.003) for i, g in enumerate(gpus)]]
        _out(title + "\n" + _nvbw_matrix(key, rows, verbose))
    _out("NOTE: The reported results may not reflect the full capabilities of the platform.\n"
         "Performance can vary with software drivers, hardware clocks, and system topology.\n\n")
    return 0


# ---------------------------------------------------------------- ib_write_bw (perftest 24.10)
PERF_LINE = "---------------------------------------------------------------------------------------\n"
IB_PORT_STATES = {"1": "Down", "2": "Init", "3": "Armed", "4": "", "5": "Active Defer"}


def ib_bw_gbps(st, hca):
    """What ib_write_bw reports for one HCA: ``hcas[k].ib_bw_gbps``, else ``active.ib_bw_gbps``, else 97.5 % of
    the port's rate (390 for NDR 400); a bad cable (link-level retries) gets 55 % of that."""
    if hca.get("ib_bw_gbps") is not None:
        return float(hca["ib_bw_gbps"])
    a = active_knobs(st)
    if a.get("ib_bw_gbps") is not None:
        v = float(a["ib_bw_gbps"])
    else:
        try:
            v = 0.975 * float(str(hca.get("rate", "400")).split()[0])
        except ValueError:
            v = 390.0
    return v * (0.55 if hca.get("fault") == "bad_cable" else 1.0)


def _perf_opts(argv):
    o = {"dev": None, "ib_port": 1, "port": 18515, "size": 65536, "iters": 5000, "all": False, "gbits": False,
         "qps": 1, "duplex": False, "server": None, "rdma_cm": False, "bad": None}
    it = iter(argv)
    for x in it:
        k, eq, v = x.partition("=") if x.startswith("--") else (x, "", "")

        def nxt():
            return v if eq else next(it, "")
        if k in ("-d", "--ib-dev"):
            o["dev"] = nxt()
        elif k in ("-i", "--ib-port"):
            o["ib_port"] = int(nxt() or 1)
        elif k in ("-p", "--port"):
            o["port"] = int(nxt() or 18515)
        elif k in ("-s", "--size"):
            o["size"] = int(nxt() or 65536)
        elif k in ("-n", "--iters"):
            o["iters"] = int(nxt() or 5000)
        elif k in ("-q", "--qp"):
            o["qps"] = int(nxt() or 1)
        elif k in ("-a", "--all"):
            o["all"] = True
        elif k in ("-b", "--bidirectional"):
            o["duplex"] = True
        elif k == "--report_gbits":
            o["gbits"] = True
        elif k in ("-R", "--rdma_cm"):
            o["rdma_cm"] = True
        elif k == "--use_cuda":
            if not eq:
                nxt()
        elif k in ("-x", "--gid-index", "-D", "--duration", "-m", "--mtu", "-t", "--tx-depth", "-S", "--sl",
                   "-c", "--connection", "-Q", "--cq-mod", "-I", "--inline_size", "-u", "--qp-timeout", "-w",
                   "--limit_bw", "--source_ip", "--tclass"):
            nxt()
        elif k.startswith("-"):
            pass              # -F, --run_infinitely-less switches: accepted as the real parser does
        elif o["server"] is None:
            o["server"] = x
        else:
            o["bad"] = x
    return o


def _perf_addr(side, lid, seed):
    qpn, psn = 0x40 + seed % 0x400, (seed * 2654435761) % 0xFFFFFF
    return (" %s address: LID %#04x QPN %#06x PSN %#06x RKey %#08x VAddr %#016x\n"
            % (side, lid, qpn, psn, 0x1fff00 + seed % 0xff, 0x7f0000000000 + (seed % 0xfffff) * 0x1000))


def ib_write_bw(argv, root=None):
    """``ib_write_bw [-d DEV] [-i PORT] [-s SIZE | -a] [-n ITERS] [-q QPS] [-b] [--report_gbits] [SERVER]``: the
    client (with SERVER) prints perftest's banner and result row; the server (no SERVER) prints the waiting box,
    waits ``active.ib_server_seconds`` for its pretend client, then the same report, exit 0."""
    st = load(root)
    a = active_knobs(st)
    o = _perf_opts(argv)
    client = o["server"] is not None
    hcas = st.get("hcas") or []
    if not hcas:
        _err(" Did not detect devices \n If device exists, check if driver is up\n"
             " Unable to find the Infiniband/RoCE device\n")
        return 1
    hca = hcas[0] if not o["dev"] else next((h for h in hcas if h["name"] == o["dev"]), None)
    if hca is None:
        _err("IB device %s not found\n Unable to find the Infiniband/RoCE device\n" % o["dev"])
        return 1
    state, _phys = port_state(hca, st)
    if not state.startswith("4"):
        _err(" Port number %d state is %s\n Couldn't get context for the device\n"
             % (o["ib_port"], IB_PORT_STATES.get(state.split(":")[0], state)))
        return 1
    hang = "ib_write_bw" in (a.get("hang") or [])
    if not client:
        _out("\n************************************\n* Waiting for client to connect... *\n"
             "************************************\n")
        if hang:
            _hang()                      # no client ever comes
        time.sleep(float(a.get("ib_server_seconds", IB_SERVER_SECONDS)))
    elif a.get("ib_no_server"):
        _err("Couldn't connect to %s:%d\n Unable to init the socket connection\n" % (o["server"], o["port"]))
        return 1
    link = hca.get("link_layer", "InfiniBand")
    banner = [PERF_LINE, "                    RDMA_Write %sBW Test\n" % ("Bidirectional " if o["duplex"] else ""),
              " Dual-port       : OFF\t\tDevice         : %s\n" % hca["name"],
              " Number of qps   : %d\t\tTransport type : IB\n" % o["qps"],
              " Connection type : RC\t\tUsing SRQ      : OFF\n",
              " PCIe relax order: ON\t\tLock-free      : OFF\n", " ibv_wr* API     : ON\n"]
    if client or o["duplex"]:
        banner.append(" TX depth        : 128\n")
    banner += [" CQ Moderation   : 100\n", " Mtu             : 4096[B]\n",
               " Link type       : %s\n" % ("Ethernet" if link == "Ethernet" else "IB"),
               " Max inline data : 0[B]\n", " rdma_cm QPs\t : %s\n" % ("ON" if o["rdma_cm"] else "OFF"),
               " Data ex. method : %s\n" % ("rdma_cm" if o["rdma_cm"] else "Ethernet"), PERF_LINE]
    seed = os.getpid()
    for q in range(o["qps"]):
        banner.append(_perf_addr("local", int(hca["lid"]), seed + q))
    for q in range(o["qps"]):
        banner.append(_perf_addr("remote", int(hca["lid"]) + 1, seed * 7 + q))
    banner += [PERF_LINE, " #bytes     #iterations    BW peak[%s]    BW average[%s]   MsgRate[Mpps]\n"
               % (("Gb/sec",) * 2 if o["gbits"] else ("MiB/sec",) * 2)]
    _out("".join(banner))
    if client and hang:
        _hang()
    if client:
        time.sleep(_seconds(st))
    peak_gbps = ib_bw_gbps(st, hca) * (2 if o["duplex"] else 1)
    sizes = [1 << i for i in range(1, 24)] if o["all"] else [o["size"]]
    rows = []
    for size in sizes:
        avg = peak_gbps * (1.0 - math.exp(-size / 4096.0))
        pk = avg * _jitter("%s|%d" % (hca["name"], size), 0.004)
        rate = avg * 1e9 / 8.0 / size / 1e6
        if not o["gbits"]:
            avg, pk = avg * 1e9 / 8.0 / 1048576.0, pk * 1e9 / 8.0 / 1048576.0
        fmt = (" %-7d    %d           %-7.6f            %-7.6f            %-7.6f" if (avg < 0.1 and o["gbits"])
               else " %-7d    %-10d       %-7.2f            %-7.2f\t\t     %-7.6f")
        rows.append(fmt % (size, o["iters"], pk, avg, rate) + "\n")
    _out("".join(rows) + PERF_LINE)
    return 0


# --------------------------------------------------------------------------- entry

def bug_report(argv, root=None):
    """nvidia-bug-report.sh [--safe-mode] [--output-file FILE]: like the driver's script, the log
    goes to FILE.gz (gzip; default nvidia-bug-report.log.gz in the working directory) with its
    ``Start of NVIDIA bug report log file`` header, this host's nvidia-smi -q and kernel log."""
    import gzip
    out = "nvidia-bug-report.log"
    if "--output-file" in argv and argv.index("--output-file") + 1 < len(argv):
        out = argv[argv.index("--output-file") + 1]
    st = load(root)
    text = ["____________________________________________", "",
            "Start of NVIDIA bug report log file.  Please include this file, along",
            "with a detailed description of your problem, when reporting a graphics",
            "driver bug via the NVIDIA Linux forum (see forums.developer.nvidia.com)",
            "or by sending email to 'linux-bugs@nvidia.com'.", "",
            "nvidia-bug-report.sh Version: 35608314 (fakehw)", "", "Date: %s" % time.ctime(),
            "uname: Linux %s 6.8.0-fakehw x86_64" % st.get("host", "?"), "",
            "____________________________________________", "", "/usr/bin/nvidia-smi --query", ""]
    text.append(smi_q_text(st, [g for g in st.get("gpus", []) if g.get("present", True)], None))
    text += ["", "____________________________________________", "", "dmesg:", ""]
    text += [e["msg"] for e in _kernel(st)]
    with gzip.open(out + ".gz", "wt") as f:
        f.write("\n".join(text) + "\n")
    print("Running nvidia-bug-report.sh... complete.\n\nThe output file is: %s.gz" % out)
    return 0


TOOLS = {"nvidia-smi": nvidia_smi, "nvidia-bug-report.sh": bug_report, "ibstat": ibstat, "ibv_devinfo": ibv_devinfo, "perfquery": perfquery,
         "dmesg": dmesg, "journalctl": journalctl, "systemctl": systemctl, "modprobe": modprobe,
         "dcgmi": dcgmi, "all_reduce_perf": all_reduce_perf, "nvbandwidth": nvbandwidth, "ib_write_bw": ib_write_bw}


def boot(args, root=None):
    """The testbed's RebootProgram calls this: a fresh boot of this host's hardware. A GPU that
    fell off the bus is back on it (a reboot re-trains the link), unless the state marks it
    ``gone_after_reboot`` (a dead board: it stays gone); its compute processes died with the
    old boot; the kernel log goes on with the new boot's first line."""
    root = _root(root)
    with locked(root):
        st = load(root)
        now = time.time()
        st["boot_time"] = now
        for g in st.get("gpus", []):
            if not g.get("present", True) and not g.get("gone_after_reboot"):
                g["present"] = True
            g["processes"] = []
        add_kernel(st, "Linux version 6.8.0-fakehw (testbed RebootProgram) #1 SMP", "notice", now)
        save(st, root)
        render_sysfs(st, root)
    return 0


def refresh(root=None):
    root = _root(root)
    with locked(root):
        st = load(root)
        render_sysfs(st, root)
    return 0


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        sys.stderr.write("usage: fakehw.py TOOL [ARGS...]\n")
        return 2
    tool, args = argv[0], argv[1:]
    root = _root()
    if tool == "live":
        return live(args, root)
    if tool == "boot":
        log_command("fakehw-boot", args, root)
        return boot(args, root)
    if tool == "refresh":
        log_command("fakehw-refresh", args, root)
        if args[:1] == ["--loop"]:      # a live sysfs: re-render every 0.2 s for that many seconds
            end = time.time() + float(args[1])
            while time.time() < end:
                refresh(root)
                time.sleep(0.2)
            return 0
        return refresh(root)
    if tool not in TOOLS:
        sys.stderr.write("fakehw: unknown tool %s\n" % tool)
        return 127
    log_command(tool, args, root)
    try:
        st = load(root)
    except (OSError, ValueError):
        st = {}
    if tool in ACTIVE_TOOLS:
        _set_comm(tool)
        if tool in absent_tools(st):      # not installed here: what the shell answers for a missing command
            sys.stderr.write("%s: command not found\n" % tool)
            return 127
    broken = st.get("broken_tools", {})
    if tool in broken:      # e.g. {"dmesg": "dmesg: read kernel buffer failed: Operation not permitted"}
        b = broken[tool]
        msg, rc = (b, 1) if isinstance(b, str) else (b.get("message", ""), int(b.get("rc", 1)))
        if msg:
            sys.stderr.write(msg + "\n")
        return rc
    try:
        return TOOLS[tool](args, root)
    except BrokenPipeError:
        return 141


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
