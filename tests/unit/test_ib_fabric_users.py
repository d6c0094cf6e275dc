"""infiniband/fabric_users.py + netpaths.py: what rides the IB fabric (IPoIB mounts, RDMA storage,
a network root, the controller's SSH, slurmd), read from the kernel's own texts as a node writes them."""

from gpu_runbook.infiniband.fabric_users import (
    fabric_blockers, mount_blockers, network_mounts, network_root, parse_mounts, storage_modules)
from gpu_runbook.infiniband.netpaths import (
    fabric_path, ib_interfaces, parse_if_inet6, parse_ipv6_route, parse_route, route_for)

# a GPU node: eno1 192.168.1.21/24 (default route), ib0 10.0.0.21/24, the storage net 10.9/16 via ib0
ROUTE = """\
Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
eno1\t00000000\t0101A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0
eno1\t0001A8C0\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0
ib0\t0000000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
ib0\t0000090A\t0100000A\t0003\t0\t0\t0\t0000FFFF\t0\t0\t0
eno1\t0000140A\t00000000\t0201\t0\t0\t0\t0000FFFF\t0\t0\t0
"""
IF_INET6 = """\
fe800000000000000202c90300a1b2c3 04 40 20 80      ib0
fd000000000000000000000000000021 04 40 00 80      ib0
00000000000000000000000000000001 01 80 10 80       lo
"""
IPV6_ROUTE = """\
fd000000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001      ib0
00000000000000000000000000000001 80 00000000000000000000000000000000 00 00000000000000000000000000000000 00000000 00000002 00000000 80200001       lo
"""
TYPES = {"eno1": "1\n", "ib0": "32\n", "lo": "772\n", "ibp65s0": None, "eth2": "32\n", "ib_unused": "1\n"}
NFS_HOME = ("10.0.0.5:/export/home /home nfs4 rw,relatime,vers=4.2,rsize=1048576,wsize=1048576,namlen=255,hard,"
            "proto=tcp,timeo=600,retrans=2,sec=sys,clientaddr=10.0.0.21,local_lock=none,addr=10.0.0.5 0 0")
NFS_ETH = ("nas01:/data /data nfs4 rw,relatime,vers=4.1,hard,proto=tcp,timeo=600,retrans=2,sec=sys,"
           "clientaddr=192.168.1.21,local_lock=none,addr=192.168.1.10 0 0")
NFS_RDMA = ("10.0.0.5:/scratch /scratch nfs rw,relatime,vers=3,rsize=1048576,wsize=1048576,namlen=255,hard,"
            "proto=rdma,port=20049,timeo=600,retrans=2,sec=sys,mountaddr=10.0.0.5,mountvers=3,mountproto=tcp,"
            "local_lock=none,addr=10.0.0.5 0 0")
LOCAL = """\
/dev/nvme0n1p2 / ext4 rw,relatime 0 0
proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0
tmpfs /run tmpfs rw,nosuid,nodev,size=52428800k,mode=755 0 0
/dev/nvme0n1p1 /boot/efi vfat rw,relatime,fmask=0077,dmask=0077 0 0
"""


def net():
    types = ib_interfaces(TYPES)
    return {"ib": types, "routes": parse_route(ROUTE) + parse_ipv6_route(IPV6_ROUTE),
            "addrs": parse_if_inet6(IF_INET6)}


def test_ipoib_interfaces_are_found_by_type_not_only_by_name():
    # eth2 has type 32 (a renamed IPoIB port); ibp65s0's type is unreadable so its name counts;
    # ib_unused says type 1 (Ethernet): the content wins over the name
    assert ib_interfaces(TYPES) == ["eth2", "ib0", "ibp65s0"]
    assert ib_interfaces({}) == [] and ib_interfaces(None) == []


def test_ipoib_route_table_is_read_little_endian_and_longest_prefix_wins():
    routes = parse_route(ROUTE)
    assert [(r["iface"], str(r["net"]), r["gateway"]) for r in routes] == [
        ("eno1", "0.0.0.0/0", "192.168.1.1"), ("eno1", "192.168.1.0/24", None), ("ib0", "10.0.0.0/24", None),
        ("ib0", "10.9.0.0/16", "10.0.0.1")]          # the reject route (0x0200) is left out
    assert route_for("10.9.3.4", routes)["iface"] == "ib0"
    assert route_for("8.8.8.8", routes)["iface"] == "eno1"
    assert route_for("not-an-ip", routes) is None


def test_ipoib_storage_behind_a_gateway_on_ib0_rides_the_fabric():
    p = fabric_path("10.9.3.4", net())
    assert p == {"iface": "ib0", "how": "route 10.9.0.0/16 via 10.0.0.1 dev ib0"}
    assert fabric_path("192.168.1.10", net()) is None


def test_ipoib_ipv6_addresses_and_routes():
    n = net()
    assert fabric_path("fd00::21", n) == {"iface": "ib0", "how": "an address of ib0"}
    assert fabric_path("fd00::99", n)["how"] == "route fd00::/64 dev ib0"
    assert fabric_path("fe80::202:c903:a1:b2c3%ib0", n)["iface"] == "ib0"


def test_ipoib_nfs_home_mount_is_named_with_server_interface_and_proto():
    found = mount_blockers(parse_mounts(LOCAL + NFS_HOME + "\n" + NFS_ETH + "\n"), net())
    assert found == [("network_fs_over_ib", "NFS mount /home (10.0.0.5:/export/home, proto=tcp, clientaddr=10.0.0.21) "
                      "from 10.0.0.5 over IPoIB interface ib0 (route 10.0.0.0/24 dev ib0)")]


def test_ipoib_nfs_over_ethernet_and_local_disks_do_not_block():
    assert mount_blockers(parse_mounts(LOCAL + NFS_ETH), net()) == []
    assert fabric_blockers(parse_mounts(LOCAL), "root=/dev/nvme0n1p2 ro", {"mlx5_core", "ib_core"}, net(),
                           ["192.168.1.5"], ["192.168.1.21"]) == []


def test_ipoib_nfs_over_rdma_blocks_whatever_the_route():
    [(name, why)] = mount_blockers(parse_mounts(NFS_RDMA), {"ib": [], "routes": [], "addrs": []})
    assert name == "network_fs_over_ib" and why == ("NFS mount /scratch (10.0.0.5:/scratch, proto=rdma) over RDMA: "
                                                    "proto=rdma")


def test_ipoib_local_end_of_the_mount_on_ib0_blocks():
    # the server is reached through a gateway on the Ethernet side, but the mount's own address is ib0's
    line = NFS_ETH.replace("clientaddr=192.168.1.21", "clientaddr=10.0.0.21").replace("addr=192.168.1.10",
                                                                                       "addr=172.16.0.10")
    [(name, why)] = mount_blockers(parse_mounts(line), net())
    assert name == "network_fs_over_ib" and "clientaddr 10.0.0.21 on IPoIB interface ib0" in why


def test_ipoib_lustre_o2ib_beegfs_gpfs_and_their_modules():
    text = LOCAL + ("10.0.0.7@o2ib:10.0.0.8@o2ib:/lfs01 /lustre lustre rw,flock,lazystatfs 0 0\n"
                    "beegfs_nodev /mnt/beegfs beegfs rw,relatime,cfgFile=/etc/beegfs/beegfs-client.conf 0 0\n"
                    "gpfs01 /gpfs/gpfs01 gpfs rw,relatime 0 0\n")
    found = fabric_blockers(parse_mounts(text), "", {"beegfs", "mmfs26", "mmfslinux", "lnet", "lustre", "ib_core"},
                            net())
    names = [n for n, _w in found]
    assert names == ["network_fs_over_ib", "network_fs_unplaced", "network_fs_unplaced", "beegfs", "gpfs", "gpfs",
                     "lustre", "lustre"]
    assert "Lustre mount /lustre" in found[0][1] and "LNet o2ib (10.0.0.7@o2ib, 10.0.0.8@o2ib)" in found[0][1]
    assert found[1][1].startswith("BeeGFS mount /mnt/beegfs (beegfs_nodev") and "no server" in found[1][1]
    assert "module mmfs26 is loaded" in found[4][1]
    assert [m["module"] for m in storage_modules({"ib_srp", "rds_rdma", "svcrdma", "ib_iser"})] == [
        "ib_iser", "ib_srp", "rds_rdma", "svcrdma"]


def test_ipoib_smb_direct_ceph_and_gluster_by_name():
    text = ("//fs01/share /mnt/share cifs rw,relatime,vers=3.1.1,cache=strict,addr=192.168.1.9,soft,rdma 0 0\n"
            "10.0.0.11:6789,10.0.0.12:6789:/ /mnt/ceph ceph rw,relatime,name=admin,secret=<hidden>,acl 0 0\n"
            "gl01-ib:/vol0 /mnt/gl fuse.glusterfs rw,relatime,user_id=0,group_id=0 0 0\n"
            "gl02:/vol1 /mnt/gl2 fuse.glusterfs rw,relatime,user_id=0,group_id=0 0 0\n")
    found = mount_blockers(parse_mounts(text), net(), resolved={"gl01-ib": ["10.0.0.31"], "gl02": []})
    assert [n for n, _w in found] == ["network_fs_over_ib"] * 3 + ["network_fs_unplaced"]
    assert "SMB Direct" in found[0][1] and "from 10.0.0.11 over IPoIB interface ib0" in found[1][1]
    assert "from gl01-ib (10.0.0.31) over IPoIB interface ib0" in found[2][1]
    assert "cannot tell whether it rides the fabric (gl02)" in found[3][1]


def test_ipoib_mountinfo_and_escaped_paths():
    info = ("36 25 0:45 / /home/my\\040data rw,relatime shared:20 - nfs4 10.0.0.5:/export/home "
            "rw,vers=4.2,proto=tcp,clientaddr=10.0.0.21,addr=10.0.0.5\n"
            "25 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n")
    ms = parse_mounts(info)
    assert [(m["target"], m["fstype"]) for m in ms] == [("/home/my data", "nfs4"), ("/", "ext4")]
    assert network_mounts(ms)[0]["servers"] == ["10.0.0.5"]
    assert "/home/my data" in mount_blockers(ms, net())[0][1]


def test_ipoib_root_on_the_network():
    assert network_root(parse_mounts("10.0.0.5:/roots/n01 / nfs rw,vers=3,proto=tcp,addr=10.0.0.5 0 0\n")) == (
        "the root filesystem / is NFS from 10.0.0.5:/roots/n01")
    overlay = ("10.0.0.5:/images/rocky9 /run/rootfsbase nfs ro,vers=3,proto=tcp,addr=10.0.0.5 0 0\n"
               "overlay / overlay rw,lowerdir=/run/rootfsbase,upperdir=/run/overlayfs,workdir=/run/ovlwork 0 0\n")
    assert "overlay over /run/rootfsbase, which is NFS /run/rootfsbase" in network_root(parse_mounts(overlay))
    diskless = "tmpfs / tmpfs rw 0 0\n10.0.0.5:/usr /usr nfs ro,proto=tcp,addr=10.0.0.5 0 0\n"
    assert "(a diskless node)" in network_root(parse_mounts(diskless))
    assert "root=/dev/nfs" in network_root(parse_mounts(LOCAL), "BOOT_IMAGE=/vmlinuz root=/dev/nfs nfsroot=10.0.0.5:/r")
    assert network_root(parse_mounts(LOCAL), "BOOT_IMAGE=/vmlinuz root=UUID=1234 ro") is None
    # a tmpfs root with only /home on NFS over Ethernet is not a diskless root
    assert network_root(parse_mounts("tmpfs / tmpfs rw 0 0\n" + NFS_ETH)) is None
    [(name, why)] = fabric_blockers(parse_mounts(diskless), "", set(), {"ib": [], "routes": [], "addrs": []})
    assert name == "root_on_network" and why.endswith("the node may hang when the IB stack goes down")


def test_ipoib_controller_ssh_and_slurmd_on_ib0_are_refused_by_name():
    found = fabric_blockers(parse_mounts(LOCAL), "", set(), net(), controller=["10.0.0.2", "192.168.1.5"],
                            slurmd=["gpu-n01-ib"], resolved={"gpu-n01-ib": ["10.0.0.21"]})
    assert found == [
        ("controller_on_ib", "the controller's SSH address 10.0.0.2 is on IPoIB interface ib0 (route 10.0.0.0/24 dev "
                             "ib0): the restart would cut it"),
        ("slurmd_on_ib", "slurmd's address (NodeAddr) gpu-n01-ib (10.0.0.21) is on IPoIB interface ib0 (route "
                         "10.0.0.0/24 dev ib0): the restart would cut it")]
    # an address reached through a renamed IPoIB interface (type 32) counts the same
    n = {"ib": ib_interfaces({"eth2": "32\n"}), "addrs": [],
         "routes": parse_route(ROUTE.replace("ib0", "eth2"))}
    assert fabric_blockers([], "", set(), n, controller=["10.0.0.2"])[0][1].startswith(
        "the controller's SSH address 10.0.0.2 is on IPoIB interface eth2")


def test_ipoib_odd_input_is_skipped_never_raised_on():
    junk = "\x00\n  \nnot a route line\nib0\tZZZZ\t0\t0001\t0\t0\t0\t00FFFFFF\n"
    assert parse_route(junk) == [] and parse_ipv6_route(junk) == [] and parse_if_inet6(junk) == []
    assert parse_mounts(junk)[0] == {"source": "not", "target": "a", "fstype": "route", "options": {"line": True}}
    assert network_mounts(parse_mounts(junk)) == []
    assert parse_mounts(None) == [] and network_mounts(None) == [] and network_root(None) is None
    assert fabric_path("10.0.0.5", {}) is None
    assert mount_blockers(parse_mounts("x /mnt nfs4 rw 0 0\n"), net()) == [
        ("network_fs_unplaced", "NFS mount /mnt (x, proto=?): cannot tell whether it rides the fabric (no server in "
                                "the mount table); unmount it or restart the IB stack by hand")]
