# SPDX-License-Identifier: Apache-2.0
"""What rides the InfiniBand fabric, so an IB stack restart (openibd) must not run: network
filesystems mounted over an IPoIB interface or RDMA, storage-over-RDMA kernel modules, a root
filesystem on the network, the controller's SSH or slurmd's address on an IPoIB interface.

openibd's own ``stop()`` refuses only for ko2iblnd, a few storage modules, its daemons and
holders of /dev/infiniband (restart.py); ``systemctl restart openibd`` ignores openibd.conf's
``ALLOW_STOP`` (that guards only ``stop``). An NFS mount over ``ib0``, BeeGFS, GPFS or a diskless
root pass it and hang or die with the interface, so the ladder makes this check itself.

Inputs are texts: ``/proc/mounts`` (or ``/proc/self/mountinfo``), ``/proc/cmdline``, the loaded
module names (restart.parse_proc_modules) and the interfaces/routes of netpaths.py.
Standard library only, never raise.
"""

import re

from .netpaths import as_ip, fabric_path

# fstype -> what to call it in a message
NETWORK_FS = {"nfs": "NFS", "nfs4": "NFS", "lustre": "Lustre", "beegfs": "BeeGFS", "gpfs": "GPFS",
              "cifs": "SMB", "smb3": "SMB", "ceph": "CephFS", "fuse.ceph-fuse": "CephFS",
              "glusterfs": "GlusterFS", "fuse.glusterfs": "GlusterFS", "9p": "9P", "wekafs": "WekaFS",
              "panfs": "PanFS", "orangefs": "OrangeFS", "pvfs2": "OrangeFS", "afs": "AFS",
              "fuse.sshfs": "SSHFS", "fuse.beegfs": "BeeGFS"}
# module -> (blocked_by name, why); openibd's own seven stay in restart.BLOCKING_MODULES
STORAGE_MODULES = (
    ("beegfs", "beegfs", "BeeGFS client (RDMA or IPoIB): unmount BeeGFS and stop beegfs-client"),
    ("mmfs26", "gpfs", "IBM Storage Scale / GPFS (verbs RDMA or IPoIB): mmshutdown on this node first"),
    ("mmfslinux", "gpfs", "IBM Storage Scale / GPFS kernel layer: mmshutdown on this node first"),
    ("lustre", "lustre", "Lustre client: unmount Lustre (lustre_rmmod) first"),
    ("lnet", "lustre", "Lustre networking (LNet): unmount Lustre and unload lnet first"),
    ("ib_iser", "iser_srp_initiator", "iSCSI over RDMA (iSER) initiator: log out of the iSER sessions first"),
    ("ib_srp", "iser_srp_initiator", "SCSI RDMA Protocol initiator: remove the SRP targets first"),
    ("rds_rdma", "rds_rdma", "RDS over RDMA (Oracle RDS): stop its users and unload rds_rdma"),
    ("svcrdma", "nfs_rdma", "NFS server over RDMA: stop the RDMA listener of nfsd"),
)
_SYSTEM_DIRS = ("/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc", "/var", "/opt")
_NET_CMDLINE = re.compile(r"(?:^|\s)(root=(?:/dev/nfs|nfs4?:|cifs:|nbd:|iscsi:|live:(?:nfs|https?|ftp|tftp):)\S*"
                          r"|nfsroot=\S+|netroot=\S+|rd\.iscsi\.\S+)")
_ESC = re.compile(r"\\([0-7]{3})")


def _unescape(s):
    """/proc/mounts writes space, tab, newline and backslash as \\040 \\011 \\012 \\134."""
    return _ESC.sub(lambda m: chr(int(m.group(1), 8)), s)


def _options(text):
    out = {}
    for o in (text or "").split(","):
        k, sep, v = o.partition("=")
        if k:
            out[k] = v if sep else True
    return out


def parse_mounts(text):
    """/proc/mounts or /proc/self/mountinfo -> [{"source", "target", "fstype", "options": {k: v|True}}]
    in file order (a later mount on the same target hides the earlier one)."""
    out = []
    for line in (text or "").splitlines():
        f = line.split()
        if " - " in line and len(f) >= 10 and f[0].isdigit() and f[1].isdigit():
            i = f.index("-", 6) if "-" in f[6:] else -1
            if i < 0 or len(f) < i + 3:
                continue
            opts = _options(f[5])
            opts.update(_options(f[i + 3] if len(f) > i + 3 else ""))
            out.append({"source": _unescape(f[i + 2]), "target": _unescape(f[4]), "fstype": f[i + 1],
                        "options": opts})
        elif len(f) >= 4:
            out.append({"source": _unescape(f[0]), "target": _unescape(f[1]), "fstype": f[2],
                        "options": _options(f[3])})
    return out


def _host_of(source):
    """'server:/export', '[fd00::5]:/x', '//server/share' -> 'server' (None when the source has no host)."""
    s = source or ""
    m = re.match(r"^//([^/]+)/", s) or re.match(r"^\[([0-9A-Fa-f:.]+)\]:", s) or re.match(r"^([^:/\s]+):", s)
    return m.group(1) if m else None


def _lustre_nids(source):
    """'10.0.0.5@o2ib,10.0.1.5@o2ib1:10.0.0.6@tcp:/fs' -> [(address, lnet network)]."""
    head = (source or "").rsplit(":/", 1)[0]
    return [tuple(n.split("@", 1)) for n in re.split(r"[:,]", head) if "@" in n]


def mount_servers(m):
    """One network mount -> {"servers": [addresses or names], "rdma": why or None, "detail": text}."""
    fs, o, src = m["fstype"], m["options"], m["source"]
    servers, rdma, detail = [], None, []
    if fs in ("nfs", "nfs4"):
        servers = [o["addr"]] if isinstance(o.get("addr"), str) else [x for x in [_host_of(src)] if x]
        detail.append("proto=%s" % (o.get("proto") or "?"))
        if o.get("proto") in ("rdma", "rdma6"):
            rdma = "proto=%s" % o["proto"]
    elif fs in ("cifs", "smb3"):
        servers = [o["addr"]] if isinstance(o.get("addr"), str) else [x for x in [_host_of(src)] if x]
        if o.get("rdma") is True:
            rdma = "SMB Direct (rdma)"
    elif fs == "lustre":
        nids = _lustre_nids(src)
        servers = [a for a, _n in nids]
        o2ib = [a + "@" + n for a, n in nids if n.startswith("o2ib")]
        if o2ib:
            rdma = "LNet o2ib (%s)" % ", ".join(o2ib)
    elif fs == "ceph":
        servers = re.findall(r"(?<![\d.])(\d{1,3}(?:\.\d{1,3}){3})(?![\d.])", src + " " + str(o.get("mon_addr", "")))
    elif fs == "9p":
        servers = [src] if as_ip(src) else []
        if o.get("trans") == "rdma":
            rdma = "trans=rdma"
    else:
        servers = [x for x in [_host_of(src)] if x]
        if o.get("transport") == "rdma":
            rdma = "transport=rdma"
    if isinstance(o.get("clientaddr"), str):
        detail.append("clientaddr=%s" % o["clientaddr"])
    return {"servers": list(dict.fromkeys(servers)), "rdma": rdma, "detail": ", ".join(detail)}


def network_mounts(mounts):
    """The network filesystems among parsed mounts -> [{"target", "fstype", "kind", "source", "servers",
    "rdma", "clientaddr", "detail"}]."""
    out = []
    for m in mounts or []:
        kind = NETWORK_FS.get(m["fstype"])
        if not kind:
            continue
        s = mount_servers(m)
        ca = m["options"].get("clientaddr")
        out.append(dict(s, target=m["target"], fstype=m["fstype"], kind=kind, source=m["source"],
                        clientaddr=ca if isinstance(ca, str) else None))
    return out


def _under(path, top):
    return path == top or path.startswith(top.rstrip("/") + "/")


def network_root(mounts, cmdline=""):
    """Root on the network -> one sentence, else None: / itself a network filesystem; an overlay
    whose lower/upper dirs lie on one; a tmpfs/overlay root with /usr, /etc, ... on the network;
    a kernel command line that boots from the network (root=/dev/nfs, nfsroot=, netroot=, iSCSI)."""
    roots = [m for m in mounts or [] if m["target"] == "/"]
    nets = network_mounts(mounts)
    root = roots[-1] if roots else None
    if root and root["fstype"] in NETWORK_FS:
        return "the root filesystem / is %s from %s" % (NETWORK_FS[root["fstype"]], root["source"])
    if root and root["fstype"] in ("overlay", "tmpfs", "ramfs", "rootfs", "squashfs"):
        opts = root["options"]
        dirs = [d for k in ("lowerdir", "upperdir", "workdir") if isinstance(opts.get(k), str)
                for d in opts[k].split(":") if d]
        for n in nets:
            hit = [d for d in dirs if _under(d, n["target"])]
            if hit:
                return "the root filesystem / is %s over %s, which is %s %s from %s" % (
                    root["fstype"], hit[0], n["kind"], n["target"], n["source"])
            if n["target"] != "/" and any(_under(n["target"], s) or _under(s, n["target"]) for s in _SYSTEM_DIRS):
                return "the root filesystem / is %s and %s comes from %s %s (a diskless node)" % (
                    root["fstype"], n["target"], n["kind"], n["source"])
    m = _NET_CMDLINE.search(cmdline or "")
    if m:
        return "the kernel booted with %s (root on the network)" % m.group(1)
    return None


def storage_modules(loaded):
    """Loaded storage-over-RDMA modules beyond openibd's own -> [{"module", "blocker", "why"}]."""
    return [{"module": m, "blocker": b, "why": why} for m, b, why in STORAGE_MODULES if m in (loaded or ())]


def _path_of(n, net, resolved):
    """-> (over IB: how, or None; the addresses it could not place)."""
    if n["rdma"]:
        return n["rdma"], []
    unknown = []
    for s in n["servers"]:
        for ip in ([s] if as_ip(s) else (resolved or {}).get(s) or []):
            p = fabric_path(ip, net)
            if p:
                return "%s over IPoIB interface %s (%s)" % (s if ip == s else "%s (%s)" % (s, ip), p["iface"],
                                                             p["how"]), []
        if not as_ip(s) and not (resolved or {}).get(s):
            unknown.append(s)
    ca = n.get("clientaddr") and fabric_path(n["clientaddr"], net)
    if ca:      # the local end of the mount lives on an IPoIB interface
        return "clientaddr %s on IPoIB interface %s (%s)" % (n["clientaddr"], ca["iface"], ca["how"]), []
    return None, unknown if n["servers"] else ["no server in the mount table"]


def mount_blockers(mounts, net, resolved=None):
    """Network mounts that ride the fabric -> [(blocked_by name, sentence)]: over an IPoIB interface or
    RDMA ("network_fs_over_ib"), or whose path cannot be told ("network_fs_unplaced": BeeGFS/GPFS name
    no server; a host name that did not resolve)."""
    out = []
    for n in network_mounts(mounts):
        how, unknown = _path_of(n, net, resolved)
        where = "%s mount %s (%s%s)" % (n["kind"], n["target"], n["source"],
                                        ", " + n["detail"] if n["detail"] else "")
        if how:
            out.append(("network_fs_over_ib", "%s from %s" % (where, how) if "IPoIB" in how
                        else "%s over RDMA: %s" % (where, how)))
        elif unknown:
            out.append(("network_fs_unplaced", "%s: cannot tell whether it rides the fabric (%s); unmount it "
                        "or restart the IB stack by hand" % (where, ", ".join(unknown))))
    return out


def address_blockers(who, addresses, net, resolved=None, name="controller_on_ib"):
    """Addresses (the controller's SSH, slurmd's NodeAddr) on or routed over an IPoIB interface ->
    [(name, sentence)]: restarting the stack would cut them."""
    out = []
    for a in addresses or []:
        for ip in ([a] if as_ip(a) else (resolved or {}).get(a) or []):
            p = fabric_path(ip, net)
            if p:
                out.append((name, "%s %s is on IPoIB interface %s (%s): the restart would cut it" % (
                    who, a if ip == a else "%s (%s)" % (a, ip), p["iface"], p["how"])))
                break
    return out


def fabric_blockers(mounts, cmdline, loaded, net, controller=(), slurmd=(), resolved=None):
    """Every reason the IB stack must not restart -> [(blocked_by name, sentence)], in a fixed order:
    network mounts, root on the network, storage modules, the controller's SSH, slurmd."""
    out = mount_blockers(mounts, net, resolved)
    root = network_root(mounts, cmdline)
    if root:
        out.append(("root_on_network", root + ": the node may hang when the IB stack goes down"))
    for m in storage_modules(loaded):
        out.append((m["blocker"], "module %s is loaded: %s" % (m["module"], m["why"])))
    out += address_blockers("the controller's SSH address", controller, net, resolved, "controller_on_ib")
    out += address_blockers("slurmd's address (NodeAddr)", slurmd, net, resolved, "slurmd_on_ib")
    return out
