"""Scenario files -> per-host fake-hardware state + the job-log side of the incident.

A scenario (``tests/scenarios/*.yml``)::

    name: rack3-epoch35
    rack: gpu-rack3                 # inventory group (child of gpu_nodes)
    hosts: gpu-r3-n[01-08]          # hostlist expression or a list of names
    gpus: {count: 8, model: NVIDIA H100 80GB HBM3}      # optional (defaults shown)
    hcas: 8                                             # optional
    job: {id: 4242, epoch: 35, progress: 0.645, iters_per_epoch: 7305, it_per_s: 3.29,
          incident_minutes_ago: 30, timeout_ms: 600000}
    faults:
      gpu-r3-n03: [{type: xid79, gpu: 2}]
      gpu-r3-n06: [{type: ib_flapping, hca: mlx5_4, at_minutes: -120, fatal: false}]

Fault ``at_minutes`` is relative to the incident (the moment the collective hung);
negative = earlier. The first *fatal* fault (default: the one at minute 0) is the culprit
of the job-log side. Host-side state is plain JSON (see fakehw.py).

The active tier's tests (dcgmi diag, all_reduce_perf, nvbandwidth, ib_write_bw) are set per host the way
faults are, by host, hostlist or ``all`` (``all`` first, then the others in file order)::

    active:
      all: {seconds: 0.2}                                   # every fake test takes 0.2 s
      gpu-r3-n03:
        dcgm: hostengine_down                               # ok | hostengine_down | embedded | absent
        absent: [nvbandwidth]                               # not installed on that host
        hang: [all_reduce_perf]                             # blocks until killed
        busbw_gbps: 300                                     # all_reduce_perf's bus bandwidth at large sizes
        nvbandwidth_gbps: {device_to_device_memcpy_read_ce: 200}
        ib_bw_gbps: 180
        gpus: {2: {dcgm_fail: {test: memory, error_id: 58}, h2d_gbps: 20}}   # per GPU, by index
        hcas: {mlx5_4: {ib_bw_gbps: 150}}                                     # per HCA, by name

Every key but ``gpus``/``hcas`` lands in the host state's ``"active"`` dict (dicts merge, lists and
scalars replace); ``gpus``/``hcas`` entries merge into those GPUs/HCAs. fakehw.py's module doc lists
the knobs and their defaults. (The testbed's ``hardware:`` overlay accepts the same ``active`` dict.)
"""
import copy
import hashlib
import json
import os
import random
import re
import time

import yaml

DEFAULT_GPU_BUSES = ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"]
DEFAULT_HCA_BUSES = ["1a", "2c", "3c", "5e", "9c", "ac", "bc", "dc"]
DEFAULT_MODEL = "NVIDIA H100 80GB HBM3"
DRIVER = "550.90.07"
CUDA = "12.4"

FAULT_TYPES = {
    # type: (layer, fatal by default)
    "xid79": ("gpu", True), "dbe_remap": ("gpu", True), "xid94": ("gpu", True),
    "app_xid": ("app", True), "xid119": ("gpu", True), "ib_down": ("ib", True),
    "ib_flapping": ("ib", True), "ib_symbol_errors": ("ib", False), "bad_cable": ("ib", True),
    "nccl_socket": ("nccl", True), "dataloader_stall": ("host", True), "memory_leak": ("host", True),
    "smi_hang": ("gpu", True), "fabric_not_ready": ("gpu", False),
}


def expand_hostlist(expr):
    if isinstance(expr, list):
        out = []
        for e in expr:
            out.extend(expand_hostlist(e))
        return out
    out = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\][^,\[]*)*", str(expr)):
        m = re.match(r"^(.*?)\[([^\]]+)\](.*)$", part)
        if not m:
            out.append(part)
            continue
        pre, rng, post = m.groups()
        for r in rng.split(","):
            if "-" in r:
                a, b = r.split("-")
                w = len(a)
                for i in range(int(a), int(b) + 1):
                    out.extend(expand_hostlist(pre + str(i).zfill(w) + post))
            else:
                out.extend(expand_hostlist(pre + r + post))
    return out


def load(path):
    with open(path) as f:
        sc = yaml.safe_load(f) or {}
    sc.setdefault("name", os.path.splitext(os.path.basename(path))[0])
    sc["_path"] = os.path.abspath(path)
    return sc


def host_names(sc, n=None):
    names = expand_hostlist(sc.get("hosts", "node[01-08]"))
    if n is not None:
        if n <= len(names):
            names = names[:n]
        else:   # extend the pattern: prefix + zero padded numbers
            m = re.match(r"^(.*?)(\d+)$", names[-1] if names else "node00")
            pre, num = m.group(1), m.group(2)
            w = max(2, len(num))
            i = int(num)
            while len(names) < n:
                i += 1
                names.append(pre + str(i).zfill(w))
    return names


def _rng(*parts):
    return random.Random(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest())


def _uuid(r):
    h = "%032x" % r.getrandbits(128)
    return "GPU-%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])


# --------------------------------------------------------------------------- timeline

def job_params(sc, now):
    j = dict(sc.get("job") or {})
    j.setdefault("id", 4242)
    j.setdefault("name", "llama-70b-pretrain")
    j.setdefault("epoch", 35)
    j.setdefault("progress", 0.645)
    j.setdefault("iters_per_epoch", 7305)
    j.setdefault("it_per_s", 3.29)
    j.setdefault("incident_minutes_ago", 30)
    j.setdefault("timeout_ms", 600000)
    j.setdefault("numel", 26214400)
    j.setdefault("seq_per_iter", 2)
    j.setdefault("leak_per_epoch", 0.0)
    incident = now - 60.0 * j["incident_minutes_ago"]
    # epoch durations (memory leak: iteration time grows every epoch)
    durs = []
    for e in range(j["epoch"] + 1):
        ips = j["it_per_s"] / (1.0 + j["leak_per_epoch"] * e)
        durs.append(j["iters_per_epoch"] / ips)
    hang_iter = int(j["iters_per_epoch"] * j["progress"])
    before = sum(durs[:j["epoch"]]) + hang_iter / (j["it_per_s"] / (1.0 + j["leak_per_epoch"] * j["epoch"]))
    j["start"] = incident - before - 95.0   # ~95 s of NCCL init / warmup
    j["incident"] = incident
    j["epoch_durations"] = durs
    j["hang_iter"] = hang_iter
    j["seqnum"] = (sum(j["iters_per_epoch"] for _ in range(j["epoch"])) + hang_iter) * j["seq_per_iter"] + 7
    return j


# --------------------------------------------------------------------------- host state

def host_state(sc, name, index, addr, job, now):
    r = _rng(sc.get("name"), name)
    gcfg = sc.get("gpus") or {}
    gcount = int(gcfg.get("count", 8))
    model = gcfg.get("model", DEFAULT_MODEL)
    buses = gcfg.get("buses", DEFAULT_GPU_BUSES)
    nh = int(sc.get("hcas", 8))
    boot = job["start"] - 3600 * (20 + r.random() * 30)
    gpus = []
    for i in range(gcount):
        gpus.append({
            "index": i, "bus": buses[i % len(buses)], "pci": "00000000:%s:00.0" % buses[i % len(buses)].upper(),
            "name": model, "uuid": _uuid(r),
            "serial": str(1650000000000 + r.randrange(10 ** 10)), "present": True,
            "ecc": {"volatile": {"sram_corr": 0, "sram_unc": 0, "dram_corr": 0, "dram_unc": 0},
                    "aggregate": {"sram_corr": 0, "sram_unc": 0, "dram_corr": r.choice([0, 0, 0, 2]),
                                  "dram_unc": 0}},
            "remap": {"corr": 0, "unc": 0, "pending": False, "failure": False},
            "reset_required": False, "drain_and_reset": False,
            "temp": 30 + r.randrange(8), "power": 68 + r.random() * 8, "mem_used": 0, "util": 0,
            "throttle": ["gpu_idle"], "processes": [],
        })
        if gcfg.get("ecc_format") == "legacy":          # pre-Ampere: page retirement, no row remapper
            gpus[-1]["ecc_format"] = "legacy"
            gpus[-1]["retired"] = {"sbe": 0, "dbe": 0, "pending": False}
    hcas = []
    for k in range(nh):
        bus = DEFAULT_HCA_BUSES[k % len(DEFAULT_HCA_BUSES)]
        hcas.append({
            "name": "mlx5_%d" % k, "pci": "0000:%s:00.0" % bus, "netdev": "ibp%ds0" % int(bus, 16),
            "guid": "0x%016x" % (0xa088c20300000000 + r.getrandbits(24)), "lid": 100 + index * 16 + k,
            "fw": "28.39.1002", "rate": "400 Gb/sec (4X NDR)", "link_layer": "InfiniBand",
            "fault": None, "fault_start": None, "base": {"link_downed": 0, "symbol_error": 0},
            "rates": {},
        })
    st = {"host": name, "host_index": index, "addr": addr, "boot_time": boot, "driver_version": DRIVER,
          "cuda_version": CUDA, "hang": False, "gpus": gpus, "hcas": hcas, "kernel": [],
          "services": {"openibd": {"active": True, "since": boot + 40}}, "faults": [],
          "scenario": sc.get("name")}
    _boot_noise(st, r)
    if sc.get("processes") == "job":   # training still holds the GPUs
        for g in gpus:
            g["processes"] = [{"pid": 48000 + index * 37 + g["index"], "name": "pt_main_thread", "mem": 71234}]
            g["mem_used"] = 71234
            g["throttle"] = []
    return st


def _boot_noise(st, r):
    b = st["boot_time"]

    def k(dt, msg, lvl="info"):
        st["kernel"].append({"t": round(b + dt, 6), "level": lvl, "msg": msg})
    k(0.0, "Linux version 6.1.0-26-amd64 (debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14) 12.2.0, "
           "GNU ld (GNU Binutils for Debian) 2.40) #1 SMP PREEMPT_DYNAMIC Debian 6.1.112-1 (2024-09-30)", "notice")
    k(0.0, "Command line: BOOT_IMAGE=/boot/vmlinuz-6.1.0-26-amd64 root=UUID=2f7c0e1a ro quiet iommu=pt "
           "pci=realloc=off")
    k(0.000001, "BIOS-provided physical RAM map:")
    k(0.25, "ACPI: PCI Root Bridge [PC00] (domain 0000 [bus 00-16])")
    k(1.8, "pci 0000:18:00.0: [10de:2330] type 00 class 0x030200")
    k(3.1, "EDAC MC0: Giving out device to module skx_edac controller Skylake Socket#0 IMC#0: DEV 0000:7e:0c.0")
    for i, h in enumerate(st["hcas"]):
        k(8.0 + 0.35 * i, "mlx5_core %s: firmware version: %s" % (h["pci"], h["fw"]))
        k(8.0 + 0.35 * i + 0.0001, "mlx5_core %s: 504.112 Gb/s available PCIe bandwidth (32.0 GT/s PCIe x16 link)"
          % h["pci"])
        k(8.3 + 0.35 * i, "mlx5_core %s: Port module event: module %d, Cable plugged" % (h["pci"], i))
    k(11.2, "nvidia: loading out-of-tree module taints kernel.", "warn")
    k(11.2001, "nvidia: module license 'NVIDIA' taints kernel.", "warn")
    k(11.9, "nvidia-nvlink: Nvlink Core is being initialized, major device number 509")
    k(12.0, "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  %s  Sun Jun 23 07:30:47 UTC 2024" % DRIVER)
    k(12.4, "nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver for UNIX platforms  %s  "
            "Sun Jun 23 07:12:10 UTC 2024" % DRIVER)
    k(13.1, "nvidia_uvm: module uses symbols nvUvmInterfaceDisableAccessCntr from proprietary module nvidia, "
            "inheriting taint.", "warn")
    k(14.0, "nvidia-peermem: Loading nvidia-peermem module, version 550.90.07")
    for i, h in enumerate(st["hcas"]):
        k(24.0 + 0.1 * i, "IPv6: ADDRCONF(NETDEV_CHANGE): %s: link becomes ready" % h["netdev"])
    k(41.0, "Bluetooth: Core ver 2.22")
    # benign, well known noise (gpud capture 016): peermem invalid context after a job ends
    t0 = st["boot_time"] + 3600 * 3 + r.random() * 600
    for i in range(4):
        st["kernel"].append({"t": round(t0 + 0.011 * i, 6), "level": "err",
                             "msg": "nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context, "
                                    "skipping further processing"})


def _xid_pci(g):
    return "PCI:0000:%s:00" % g["bus"].lower()


def apply_fault(st, f, job, host_index):
    """Mutate host state for one fault; kernel lines stamped at the fault time."""
    typ = f["type"]
    t = job["incident"] + 60.0 * float(f.get("at_minutes", 0))
    f = dict(f)
    f["t"] = t
    st["faults"].append(f)
    pid = 48000 + host_index * 37 + int(f.get("gpu", 0))

    def k(msg, lvl="warn", dt=0.0):
        if f.get("kernel", True):          # `kernel: false` -> the fault leaves no kernel-log trace
            st["kernel"].append({"t": round(t + dt, 6), "level": lvl, "msg": msg})

    def gpu():
        return st["gpus"][int(f.get("gpu", 0))]
    if typ == "xid79":
        g = gpu()
        g["present"] = False
        k("NVRM: GPU at PCI:0000:%s:00: %s" % (g["bus"], g["uuid"]), "info")
        k("NVRM: GPU Board Serial Number: %s" % g["serial"], "info")
        k("NVRM: Xid (%s): 79, pid=%d, name=pt_main_thread, GPU has fallen off the bus." % (_xid_pci(g), pid),
          "warn", 0.00001)
        k("NVRM: GPU %s: GPU has fallen off the bus." % ("0000:%s:00.0" % g["bus"]), "err", 0.00002)
        k("NVRM: A GPU crash dump has been created. If possible, please run", "err", 0.1)
        k("NVRM: nvidia-bug-report.sh as root to collect this data before", "err", 0.1)
        k("NVRM: the NVIDIA kernel module is unloaded.", "err", 0.1)
    elif typ == "dbe_remap":
        g = gpu()
        addr = 0x12bac1c3e0 + host_index * 0x1000
        g["ecc"]["volatile"]["dram_unc"] += 1
        g["ecc"]["aggregate"]["dram_unc"] += 1
        if g.get("ecc_format") == "legacy":
            g["retired"]["dbe"] += 1
            g["retired"]["pending"] = True
            k("NVRM: Xid (%s): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has "
              "been detected on GPU in the framebuffer at physAddr 0x%x." % (_xid_pci(g), addr))
            k("NVRM: Xid (%s): 63, pid='<unknown>', name=<unknown>, Dynamic Page Retirement: New page retired, "
              "reboot to activate (0x%016x)." % (_xid_pci(g), addr >> 12), "warn", 0.0287)
            return
        g["remap"]["pending"] = True
        g["pending_rows"] = 1
        g["reset_required"] = True
        k("NVRM: Xid (%s): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been "
          "detected on GPU in the framebuffer at physAddr 0x%x partition 2, subpartition 1." % (_xid_pci(g), addr))
        k("NVRM: Xid (%s): 63, pid='<unknown>', name=<unknown>, Row Remapper: New row (0x%016x) marked for "
          "remapping, reset gpu to activate." % (_xid_pci(g), addr), "warn", 0.0287)
        k("NVRM: Xid (%s): 94, pid='<unknown>', name=<unknown>, Contained: SM (0x1). RST: No, D-RST: No"
          % _xid_pci(g), "warn", 0.036)
        for c in range(8, 12):
            k("NVRM: Xid (%s): 94, pid=%d, name=pt_main_thread, Ch %08x" % (_xid_pci(g), pid, c), "warn",
              0.05 + 0.009 * c)
    elif typ == "xid94":
        g = gpu()
        g["ecc"]["volatile"]["sram_unc"] += 1
        g["ecc"]["aggregate"]["sram_unc"] += 1
        k("NVRM: Xid (%s): 94, pid='<unknown>', name=<unknown>, Contained: SM (0x1). RST: No, D-RST: No"
          % _xid_pci(g))
        for c in range(8, 12):
            k("NVRM: Xid (%s): 94, pid=%d, name=pt_main_thread, Ch %08x" % (_xid_pci(g), pid, c), "warn",
              0.015 + 0.009 * c)
    elif typ == "app_xid":
        code = int(f.get("xid", 13))
        for g in st["gpus"]:
            p = 48000 + host_index * 37 + g["index"]
            dt = 0.0001 * g["index"]
            if code == 13:
                k("NVRM: Xid (%s): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on (GPC 8, TPC 5,"
                  " SM 0): Out Of Range Address" % _xid_pci(g), "warn", dt)
                k("NVRM: Xid (%s): 13, pid='<unknown>', name=<unknown>, Graphics SM Global Exception on (GPC 8, "
                  "TPC 5, SM 0): Multiple Warp Errors" % _xid_pci(g), "warn", dt + 0.00009)
                k("NVRM: Xid (%s): 13, pid='<unknown>', name=<unknown>, Graphics Exception: ESR 0x546f30=0x124000e "
                  "0x546f34=0x24 0x546f28=0xf81eb60 0x546f2c=0x1174" % _xid_pci(g), "warn", dt + 0.0002)
                k("NVRM: Xid (%s): 43, pid=%d, name=pt_main_thread, Ch 00000008" % (_xid_pci(g), p), "warn",
                  dt + 0.0037)
            else:
                k("NVRM: Xid (%s): 31, pid=%d, name=pt_main_thread, Ch 00000008, intr 00000000. MMU Fault: ENGINE "
                  "GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f2e_c4000000. Fault is of type FAULT_PDE "
                  "ACCESS_TYPE_VIRT_READ" % (_xid_pci(g), p), "warn", dt)
    elif typ == "xid119":
        g = gpu()
        n = g["index"]
        k("NVRM: GPU at PCI:0000:%s:00: %s" % (g["bus"], g["uuid"]), "info")
        k("NVRM: GPU Board Serial Number: %s" % g["serial"], "info")
        k("NVRM: Xid (%s): 119, pid=%d, name=pt_main_thread, Timeout after 6s of waiting for RPC response from "
          "GPU%d GSP! Expected function 76 (GSP_RM_CONTROL) (0x20802a02 0x8)." % (_xid_pci(g), pid, n), "warn",
          0.00001)
        k("NVRM: GPU%d GSP RPC buffer contains function 76 (GSP_RM_CONTROL) and data 0x0000000020802a02 "
          "0x0000000000000008." % n, "warn", 0.00002)
        g["reset_required"] = True
    elif typ in ("ib_down", "ib_flapping", "ib_symbol_errors", "bad_cable"):
        from . import fakehw
        name = f.get("hca", "mlx5_0")
        h = next(x for x in st["hcas"] if x["name"] == name)
        mode = {"ib_down": "down", "ib_flapping": "flapping", "ib_symbol_errors": "symbol_errors",
                "bad_cable": "bad_cable"}[typ]
        h["fault"] = mode
        h["fault_start"] = t
        h["rates"] = dict(fakehw.FAULT_RATES[mode])
        mod = int(name.split("_")[1])
        if mode == "down":
            h["base"]["link_downed"] = h["base"].get("link_downed", 0) + 1
            k("mlx5_core %s: Port module event: module %d, Cable unplugged" % (h["pci"], mod), "info")
            k("mlx5_core %s %s: Link down" % (h["pci"], h["netdev"]), "info", 0.001)
        elif mode in ("flapping", "bad_cable"):
            n_flaps = int(min(40, max(1, (time.time() - t) / fakehw.FLAP_PERIOD)))
            step = (time.time() - t) / max(1, n_flaps)
            if mode == "bad_cable":
                k("mlx5_core %s: Port module event[error]: module %d, Cable error, Bad or shorted cable/module"
                  % (h["pci"], mod), "err", -0.5)
            for i in range(n_flaps):
                k("mlx5_core %s %s: Link down" % (h["pci"], h["netdev"]), "info", i * step)
                k("mlx5_core %s %s: Link up" % (h["pci"], h["netdev"]), "info", i * step + fakehw.FLAP_DOWN)
        # symbol errors alone leave no kernel trace (only counters)
    elif typ == "nccl_socket":
        pass   # job-log only: NCCL picked NET/Socket (e.g. NCCL_IB_DISABLE or missing plugin)
    elif typ == "dataloader_stall":
        k("nfs: server storage01 not responding, still trying", "warn", -30)
        k("INFO: task pt_data_worker:%d blocked for more than 120 seconds." % (pid + 900), "err", 90)
        k("      Tainted: P           OE      6.1.0-26-amd64 #1 Debian 6.1.112-1", "err", 90.0001)
        k("\"echo 0 > /proc/sys/kernel/hung_task_timeout_secs\" disables this message.", "err", 90.0002)
    elif typ == "memory_leak":
        k("pt_main_thread invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, "
          "oom_score_adj=0", "warn")
        k("Out of memory: Killed process %d (pt_main_thread) total-vm:2103461888kB, anon-rss:1983441920kB, "
          "file-rss:524288kB, shmem-rss:0kB, UID:1000 pgtables:3921456kB oom_score_adj:0" % pid, "err", 0.2)
        k("oom_reaper: reaped process %d (pt_main_thread), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB" % pid,
          "info", 1.4)
    elif typ == "smi_hang":
        st["hang"] = True
        g = gpu()
        k("NVRM: GPU at PCI:0000:%s:00: %s" % (g["bus"], g["uuid"]), "info")
        k("INFO: task nvidia-smi:%d blocked for more than 120 seconds." % (pid + 5000), "err", 150)
        k("      Tainted: P           OE      6.1.0-26-amd64 #1 Debian 6.1.112-1", "err", 150.0001)
    elif typ == "fabric_not_ready":
        # an NVSwitch system whose Fabric Manager did not register the GPUs (``gpu``: only that one):
        # nvidia-smi's fabric state stays In Progress and CUDA fails with 802; no kernel-log trace
        st["nvswitches"] = st.get("nvswitches") or 4
        bad = [int(f["gpu"])] if "gpu" in f else [g["index"] for g in st["gpus"]]
        for g in st["gpus"]:
            g["fabric"] = ({"state": f.get("state", "In Progress"), "status": "N/A"} if g["index"] in bad
                           else {"state": "Completed", "status": "Success"})
    else:
        raise ValueError("unknown fault type %r (known: %s)" % (typ, ", ".join(sorted(FAULT_TYPES))))


def normalize_faults(sc, names):
    out = {}
    for host, fl in (sc.get("faults") or {}).items():
        if isinstance(fl, dict):
            fl = [fl]
        targets = [n for n in names if n in expand_hostlist(host)] if host != "all" else list(names)
        for n in targets:
            for f in fl:
                f = dict(f)
                if f["type"] not in FAULT_TYPES:
                    raise ValueError("unknown fault type %r" % f["type"])
                f.setdefault("at_minutes", 0)
                f.setdefault("fatal", FAULT_TYPES[f["type"]][1] and float(f["at_minutes"]) == 0)
                out.setdefault(n, []).append(f)
    return out


def _merge_into(dst, src):
    for k, v in src.items():
        if isinstance(v, dict) and isinstance(dst.get(k), dict):
            _merge_into(dst[k], v)
        else:
            dst[k] = v


def apply_active(states, active):
    """The scenario's ``active:`` block (module doc) on the built host states."""
    if not active:
        return
    sels = sorted(active, key=lambda h: h != "all")       # ``all`` first, then file order (stable sort)
    for sel in sels:
        over = active[sel] or {}
        if not isinstance(over, dict):
            raise ValueError("active.%s: expected a mapping of knobs, got %r" % (sel, over))
        targets = list(states) if sel == "all" else [n for n in expand_hostlist(sel) if n in states]
        for n in targets:
            st = states[n]
            for k, v in copy.deepcopy(over).items():        # no dict shared between hosts
                if k == "gpus":
                    for idx, g in (v or {}).items():
                        _merge_into(st["gpus"][int(idx)], g)
                elif k == "hcas":
                    for name, h in (v or {}).items():
                        _merge_into(next(x for x in st["hcas"] if x["name"] == name), h)
                elif isinstance(v, dict) and isinstance(st.setdefault("active", {}).get(k), dict):
                    _merge_into(st["active"][k], v)
                else:
                    st.setdefault("active", {})[k] = v


def build(sc, names, addrs, now=None):
    """-> (job, {host: state}, faults_by_host)"""
    now = now or time.time()
    job = job_params(sc, now)
    faults = normalize_faults(sc, names)
    states = {}
    for i, n in enumerate(names):
        st = host_state(sc, n, i, addrs[n], job, now)
        for f in faults.get(n, []):
            apply_fault(st, f, job, i)
        st["kernel"].sort(key=lambda e: e["t"])
        states[n] = st
    apply_active(states, sc.get("active"))
    return job, states, faults


# --------------------------------------------------------------------------- job logs

def _torch_ts(t):
    lt = time.localtime(t)
    return "%s %s.%09d" % (time.strftime("%m%d", lt), time.strftime("%H:%M:%S", lt),
                           int((t - int(t)) * 1e9))


def _tqdm(epoch, n, total, elapsed, ips):
    frac = n / float(total)
    w = 10
    full = int(frac * w)
    rem = int((frac * w - full) * 10)
    bar = "#" * full + (str(rem) if full < w and rem else "")
    bar = bar.ljust(w)

    def hms(s):
        s = int(s)
        return "%02d:%02d" % (s // 60, s % 60) if s < 3600 else "%d:%02d:%02d" % (s // 3600, (s // 60) % 60, s % 60)
    left = (total - n) / ips if ips else 0
    return "Epoch %d: %3d%%|%s| %d/%d [%s<%s, %5.2fit/s]" % (epoch, int(frac * 100), bar, n, total, hms(elapsed),
                                                           hms(left), ips)


def culprit(job, faults, names):
    """First fatal fault (by time) -> dict describing the truth, or None."""
    cands = []
    for h, fl in faults.items():
        for f in fl:
            if f.get("fatal"):
                cands.append((float(f["at_minutes"]), names.index(h), h, f))
    if not cands:
        return None
    cands.sort(key=lambda c: (c[0], c[1]))
    _, hi, h, f = cands[0]
    layer = FAULT_TYPES[f["type"]][0]
    rank = None
    if "gpu" in f:
        rank = hi * 8 + int(f["gpu"])
    elif "hca" in f:
        rank = hi * 8 + int(str(f["hca"]).split("_")[1])
    elif f["type"] in ("dataloader_stall", "memory_leak"):
        rank = hi * 8 + int(f.get("rank_local", 0))
    return {"host": h, "host_index": hi, "type": f["type"], "layer": layer, "rank": rank, "fault": f}


def write_job_logs(sc, job, states, faults, names, jobs_dir):
    jid = job["id"]
    d = os.path.join(jobs_dir, str(jid))
    os.makedirs(d, exist_ok=True)
    nnodes = len(names)
    nranks = nnodes * 8
    cul = culprit(job, faults, names)
    socket = any(f["type"] == "nccl_socket" for fl in faults.values() for f in fl)
    app = cul and cul["type"] == "app_xid"
    r = _rng(sc.get("name"), "job", jid)
    events = []           # (t, rank, line)
    commid = "0x%016x" % r.getrandbits(64)
    t0 = job["start"]
    hang_t = job["incident"]
    wd_t = hang_t + job["timeout_ms"] / 1000.0
    for hi, h in enumerate(names):
        st = states[h]
        addr = st["addr"]
        pid_main = 48000 + hi * 37
        for lg in range(8):
            rank = hi * 8 + lg
            pid = pid_main + lg
            tid = pid + 177
            g = st["gpus"][lg % len(st["gpus"])]
            busid = "%s000" % g["bus"].lower()
            p = "%s:%d:%d [%d] NCCL INFO " % (h, pid, pid, lg)
            pt = "%s:%d:%d [%d] NCCL INFO " % (h, pid, tid, lg)
            t = t0 + 5 + hi * 0.01 + lg * 0.001

            def ev(dt, line, _rank=rank):
                events.append((t + dt, _rank, line))
            if rank == 0:
                ev(0, "NCCL version 2.21.5+cuda12.4")
            ev(0, p + "Bootstrap : Using eth0:%s<0>" % addr)
            ev(0.001, p + "NET/Plugin: No plugin found (libnccl-net.so)")
            ev(0.002, p + "cudaDriverVersion 12040")
            if socket:
                ev(0.3, pt + "NET/IB : No device found.")
                ev(0.31, pt + "NET/Socket : Using [0]eth0:%s<0>" % addr)
                ev(0.32, pt + "Using network Socket")
            else:
                ib = " ".join("[%d]%s:1/IB" % (k, x["name"]) for k, x in enumerate(st["hcas"]))
                ev(0.3, pt + "NET/IB : Using %s [RO]; OOB eth0:%s<0>" % (ib, addr))
                ev(0.32, pt + "Using network IB")
            comm = "0x%x" % (0x55d0c8a00000 + r.getrandbits(20) * 16)
            ev(0.4, pt + "ncclCommInitRank comm %s rank %d nranks %d cudaDev %d nvmlDev %d busId %s commId %s - "
               "Init START" % (comm, rank, nranks, lg, lg, busid, commid))
            ev(0.5, pt + "comm %s rank %d nRanks %d nNodes %d localRanks 8 localRank %d MNNVL 0"
               % (comm, rank, nranks, nnodes, lg))
            nxt = ((hi + 1) % nnodes) * 8 + lg
            prv = ((hi - 1) % nnodes) * 8 + lg
            via = "NET/Socket/0" if socket else "NET/IB/%d/GDRDMA" % lg
            for ch in (0, 1):
                ev(0.6 + ch * 0.01, pt + "Channel %02d/0 : %d[%d] -> %d[%d] [send] via %s" % (ch, rank, lg, nxt, lg, via))
                ev(0.61 + ch * 0.01, pt + "Channel %02d/0 : %d[%d] -> %d[%d] [receive] via %s"
                   % (ch, prv, lg, rank, lg, via))
            ev(0.7, pt + "Connected all rings")
            ev(0.8, pt + "ncclCommInitRank comm %s rank %d nranks %d cudaDev %d nvmlDev %d busId %s commId %s - "
               "Init COMPLETE" % (comm, rank, nranks, lg, lg, busid, commid))
            # tqdm progress (rank-local; every rank runs its own bar in this job)
            te = t0 + 95.0
            for e in range(job["epoch"] + 1):
                dur = job["epoch_durations"][e]
                ips = job["iters_per_epoch"] / dur
                if socket:
                    ips = ips / 6.0
                last = e == job["epoch"]
                stops = [0.25, 0.5, 0.75, 1.0] if not last else [0.25, 0.5, job["progress"]]
                for s_ in stops:
                    n = int(job["iters_per_epoch"] * s_)
                    if last and s_ == job["progress"]:
                        n = job["hang_iter"]
                    tt = te + n / (job["iters_per_epoch"] / dur)
                    if tt > hang_t:
                        break
                    events.append((tt, rank, _tqdm(e, n, job["iters_per_epoch"], tt - te, ips)))
                te += dur
            # the incident
            if cul is None:
                continue       # healthy job: still running, no timeout
            is_cul = cul.get("rank") == rank
            tsw = _torch_ts(wd_t + 0.004 * rank)
            if app:
                events.append((hang_t + 0.2, rank, "[rank%d]: RuntimeError: CUDA error: an illegal memory access "
                               "was encountered" % rank))
                events.append((hang_t + 0.2001, rank, "[rank%d]: CUDA kernel errors might be asynchronously reported "
                               "at some other API call, so the stacktrace below might be incorrect." % rank))
                continue
            if is_cul:
                typ = cul["type"]
                if typ in ("dbe_remap", "xid94"):
                    events.append((hang_t + 0.3, rank, "[rank%d]: RuntimeError: CUDA error: uncorrectable ECC error "
                                   "encountered" % rank))
                elif typ in ("ib_flapping", "bad_cable", "ib_down", "ib_symbol_errors"):
                    peer = states[names[(hi + 1) % nnodes]]["addr"]
                    events.append((hang_t + 0.1, rank, "%s:%d:%d [%d] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got "
                                   "completion from peer %s<%d> with status=12 opcode=0 len=0 vendor err 129 "
                                   "(Recv) localGid ::ffff:%s remoteGids::ffff:%s hca %s"
                                   % (h, pid, tid + 3, lg, peer, 40000 + rank, addr, peer, cul["fault"].get("hca"))))
                    events.append((hang_t + 0.11, rank, "%s:%d:%d [%d] NCCL INFO transport/net.cc:1298 -> 6"
                                   % (h, pid, tid + 3, lg)))
                    events.append((hang_t + 0.12, rank, "%s:%d:%d [%d] NCCL INFO proxy.cc:694 -> 6"
                                   % (h, pid, tid + 3, lg)))
                elif typ == "memory_leak":
                    continue   # killed by the kernel OOM killer: log just stops
                elif typ == "dataloader_stall":
                    continue   # stuck in DataLoader.__next__: never enqueues the collective, no watchdog
                else:
                    continue   # xid79 / xid119 / smi_hang: the rank hangs silently with its GPU
                if typ in ("ib_flapping", "bad_cable", "ib_down", "ib_symbol_errors"):
                    pass
                else:
                    continue
            events.append((wd_t + 0.004 * rank, rank,
                           "[rank%d]:[E%s ProcessGroupNCCL.cpp:616] [Rank %d] Watchdog caught collective operation "
                           "timeout: WorkNCCL(SeqNum=%d, OpType=ALLREDUCE, NumelIn=%d, NumelOut=%d, Timeout(ms)=%d) ran "
                           "for %d milliseconds before timing out."
                           % (rank, tsw, rank, job["seqnum"], job["numel"], job["numel"], job["timeout_ms"],
                              job["timeout_ms"] + 4 + (rank * 7) % 60)))
            events.append((wd_t + 0.004 * rank + 0.0003, rank,
                           "[rank%d]:[E%s ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank %d] Exception "
                           "(either an error or timeout) detected by watchdog at work: %d, last enqueued NCCL work: %d,"
                           " last completed NCCL work: %d."
                           % (rank, tsw, rank, job["seqnum"], job["seqnum"] + 2, job["seqnum"] - 1)))
            events.append((wd_t + 0.004 * rank + 0.0004, rank,
                           "[rank%d]:[E%s ProcessGroupNCCL.cpp:630] [Rank %d] Some NCCL operations have failed or timed "
                           "out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
                           "corrupted/incomplete data." % (rank, tsw, rank)))
            events.append((wd_t + 0.004 * rank + 0.0005, rank,
                           "[rank%d]:[E%s ProcessGroupNCCL.cpp:636] [Rank %d] To avoid data inconsistency, we are taking "
                           "the entire process down." % (rank, tsw, rank)))
    events.sort(key=lambda e: (e[0], e[1]))
    per = {}
    for t, rank, line in events:
        per.setdefault(rank, []).append(line)
    for rank in range(nranks):
        with open(os.path.join(d, "rank-%d.log" % rank), "w") as f:
            f.write("\n".join(per.get(rank, [])) + "\n")
    end = wd_t + 5
    with open(os.path.join(d, "slurm-%d.out" % jid), "w") as f:
        for t, rank, line in events:
            f.write(line + "\n")
        for hi, h in enumerate(names):
            if cul is None:
                break
            if cul["host_index"] == hi and cul["type"] in ("xid79", "xid119", "smi_hang"):
                continue
            f.write("srun: error: %s: task %d: Exited with exit code 1\n" % (h, hi))
        if cul and cul["type"] in ("xid79", "xid119", "smi_hang"):
            f.write("slurmstepd: error: *** STEP %d.0 ON %s CANCELLED AT %s ***\n"
                    % (jid, names[0], time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(end + 30))))
    truth = {"job_id": jid, "name": job["name"], "nodes": names, "nranks": nranks,
             "start": job["start"], "incident": hang_t, "watchdog": wd_t, "end": end,
             "epoch": job["epoch"], "seqnum": job["seqnum"], "transport": "Socket" if socket else "IB",
             "culprit": None if not cul else {k: v for k, v in cul.items() if k != "fault"},
             "faults": {h: fl for h, fl in faults.items()}}
    with open(os.path.join(d, "job.json"), "w") as f:
        json.dump(truth, f, indent=1, default=str)
    return d
