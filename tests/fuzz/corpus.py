"""Seed texts for the fuzzer: the real captures under tests/fixtures, grouped by the parser
family that reads them, plus short samples of the inputs no fixture holds (Slurm, CSV,
/proc/modules, env files). Read once, as bytes: the mutations work on bytes and decode them
the way the engine does (textio.decode)."""

import functools
import json
import os

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")

# file name -> family; a name not here is skipped (case.json, README.md, scripts)
_FAMILY_BY_NAME = (
    ("nvidia-smi-q.xml", "nvsmi_xml"), (".xml", "nvsmi_xml"),
    ("nvidia-smi-q.txt", "nvsmi_q"), ("nvidia-smi-nvlink.txt", "nvsmi_table"), ("nvidia-smi.txt", "nvsmi_table"),
    ("kern.log", "kernlog"), (".dmesg", "kernlog"), (".syslog", "kernlog"),
    ("ibstat.txt", "ib"), ("ibv_devinfo.txt", "ib"), ("perfquery.txt", "ib"), ("iblinkinfo.txt", "ib"),
    ("ib-sysfs.txt", "ib"), ("ibstatus.txt", "ib"), ("ibportstate.txt", "ib"),
    ("dcgmi_", "dcgmi"), ("dcgmi-dmon.txt", "dcgmi"),
    ("nccl.log", "joblog"), (".out", "joblog"), ("rank-", "joblog"), (".json", "joblog"),
    ("nvidia-bug-report.log", "bugreport"), ("node_", "slurm_node"),
)

SAMPLES = {
    # sinfo's default summary and -N --long (slurm_reasons.state_records)
    "slurm_node": [
        "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n"
        "gpu          up 14-00:00:0     12  drng@ c[002,004,008-010,012,016,024-028]\n"
        "gpu          up 14-00:00:0      3  fail* c[020-022]\ndebug*       up      10:00      2   idle e[001-002]\n",
        "NODELIST   NODES PARTITION       STATE CPUS    S:C:T MEMORY TMP_DISK WEIGHT AVAIL_FE REASON\n"
        "gpu-a-07       1      gpu*     drained  128   2:32:2 102400        0      1   (null) Xid 79 GPU fell off\n",
    ],
    "slurm_job": [
        "JobId=12345 JobName=train-llm\n   UserId=alice(1000) GroupId=alice(1000)\n"
        "   JobState=FAILED Reason=NonZeroExitCode Dependency=(null)\n"
        "   StartTime=2026-12-01T20:00:03 EndTime=2026-12-02T07:09:51 Deadline=N/A\n"
        "   NodeList=gpu-r3-n[01-04,07] BatchHost=gpu-r3-n01\n   NumNodes=5 NumCPUs=10 NumTasks=40\n"
        "   WorkDir=/home/alice/run7\n   StdErr=/home/alice/run7/slurm-12345.out\n"
        "   StdOut=/home/alice/run7/slurm-%j.out\n",
        "12345|train-llm|FAILED|2026-12-01T20:00:03|2026-12-02T07:09:51|gpu-r3-n[01-02]|/w\n"
        "12345.batch|batch|FAILED|2026-12-01T20:00:03|2026-12-02T07:09:51|gpu-r3-n01|\n",
    ],
    "csv": [
        "index, pci.bus_id, uuid, persistence_mode\n"
        "0, 00000000:3B:00.0, GPU-1b2c3d4e-0000-1111-2222-333344445555, Enabled\n"
        "1, 00000000:5E:00.0, GPU-9f8e7d6c-0000-1111-2222-333344445555, Disabled\n",
        "index, name, pci.bus_id, temperature.gpu, utilization.gpu [%], memory.used [MiB], "
        "ecc.errors.uncorrected.volatile.total\n"
        "0, NVIDIA H100 80GB HBM3, 00000000:18:00.0, 41, 100 %, 70001 MiB, 0\n"
        "1, NVIDIA H100 80GB HBM3, 00000000:2A:00.0, [GPU requires reset], [N/A], [Unknown Error], 3\n",
        # --query-retired-pages: a row per page (nvsmi/query_csv.py)
        "gpu_uuid, retired_pages.address, retired_pages.cause\nGPU-1b2c3d4e, 0x00001000, Double Bit ECC\n"
        "GPU-1b2c3d4e, [N/A], Single Bit ECC\n",
        "pid, process_name, gpu_bus_id, used_gpu_memory [MiB]\n4242, python, 00000000:18:00.0, 70000 MiB\n"
        "4243, [Insufficient Permissions], 00000000:2A:00.0, [N/A]\n",
    ],
    "system": [
        # /proc/mounts, /proc/net/route, /proc/net/ipv6_route, /proc/net/if_inet6 (ib_restart's fabric users)
        "10.0.0.5:/home /home nfs4 rw,relatime,vers=4.2,proto=tcp,clientaddr=10.0.0.11 0 0\n"
        "192.168.1.7@o2ib:/lustre /lustre lustre rw,flock 0 0\nbeegfs_nodev /mnt/beegfs beegfs rw 0 0\n"
        "/dev/nvme0n1p1 / ext4 rw,relatime 0 0\n",
        "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
        "ib0\t0000000A\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n"
        "eth0\t00000000\t0101A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n",
        "fe800000000000000000000000000000 40 00000000000000000000000000000000 00 "
        "00000000000000000000000000000000 00000100 00000001 00000000 00000001 ib0\n",
        "fe80000000000000021c290300a1b2c3 03 40 20 80 ib0\n00000000000000000000000000000001 01 80 10 80 lo\n",
        "nvidia_uvm 1532 2 - Live 0x0000000000000000\nnvidia_drm 77824 4 - Live 0x0\n"
        "nvidia 56287232 47 nvidia_uvm,nvidia_modeset,nvidia_peermem, Live 0x0\n"
        "mlx5_ib 446464 0 - Live 0x0\nib_core 421888 8 rdma_ucm,ib_ipoib,mlx5_ib, Live 0x0\n",
        "Id=nvidia-persistenced.service\nActiveState=active\nSubState=running\nMainPID=1234\nLoadState=loaded\n",
        # GPUd's states (cut mid-object), lspci -vv, systemctl status, mlxlink
        '[{"component": "accelerator-nvidia-fabric-manager", "states": [{"name": "x", "health": "Unhealthy", '
        '"reason": "fabric manager found but not active", "extra_info": {"data": "{\\"a\\":',
        "3b:00.0 3D controller: NVIDIA Corporation GA100 [A100 SXM4 80GB] (rev a1)\n"
        "\t\tLnkCap:\tPort #0, Speed 16GT/s, Width x16, ASPM not supported\n"
        "\t\tLnkSta:\tSpeed 2.5GT/s (downgraded), Width x8 (downgraded)\n",
        # apt's history.log run, dpkg.log lines (pkglog.py)
        "\nStart-Date: 2021-06-04  06:41:09\nCommandline: /usr/bin/unattended-upgrade\n"
        "Upgrade: libnvidia-common-460:amd64 (460.73.01-0ubuntu0.20.04.1, 460.80-0ubuntu0.20.04.2), "
        "nvidia-utils-460:amd64 (460.73.01, 460.80)\nEnd-Date: 2021-06-04  06:41:09\n",
        "2024-01-15 06:25:01 startup archives unpack\n2024-01-15 06:25:02 upgrade libnvidia-compute-535:amd64 "
        "535.129.03-0ubuntu0.22.04.1 535.146.02-0ubuntu0.22.04.1\n2024-01-15 06:25:03 status half-configured "
        "libnvidia-compute-535:amd64 535.146.02-0ubuntu0.22.04.1\n",
        # /proc/driver/nvidia/version (pkglog.py), a loop's banners (kernlog/hosts.py)
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.126.09  Release Build  (dvs-builder@U22)\n"
        "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n",
        '~$ for h in $NODES; do\n    echo "=== $h ==="\n    ssh $h "cat /proc/driver/nvidia/version"\n  done\n'
        "=== gpu-1 ===\nNVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 2023\n=== gpu-2 ===\n",
        "\u25cf nvidia-fabricmanager.service - NVIDIA fabric manager service\n"
        "     Loaded: loaded (/lib/systemd/system/nvidia-fabricmanager.service; enabled; preset: enabled)\n"
        "     Active: failed (Result: exit-code) since Thu 2024-05-16 23:22:02 UTC; 7s ago\n"
        "Unit nvidia-imex.service could not be found.\n",
        "Operational Info\n----------------\nState                              : Polling\n"
        "Physical state                     : N/A\n\nTroubleshooting Info\n--------------------\n"
        "Status Opcode                      : 1024\nRecommendation                     : Cable is unplugged\n",
        "\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV18\tSYS\t0-47\t0\n"
        "GPU1\tNV18\t X \tNODE\t0-47\t0\nNIC0\tSYS\tNODE\t X \n\nLegend:\n  X    = Self\n",
        "GPU 00000000:3B:00.0 was successfully reset.\nAll done.\n",
        "The following GPUs could not be reset:\n  GPU 00000000:3B:00.0: In use by another client\n"
        "1 device is currently being used by one or more other processes.\n",
        "Enabled persistence mode for GPU 00000000:3B:00.0.\nAll done.\n",
        "mlx5_0/1\nmlx5_3\nmlx5_1/2\n",
        "0000:3b:00.0\nGPU-1b2c3d4e-0000-1111-2222-333344445555\n",
        "DOWN*+DRAIN\nIDLE+DRAIN\nMIXED\n",
        "400 Gb/sec (4X NDR)\n25.78125 Gbps\n",
        "2026-12-01T20:00:03+09:00\nAsia/Seoul\n-0500\nUTC+9\n",
    ],
    # libfabric's fi_info (its short form, -l, a verbose entry, its refusal): no fixture holds one
    "ib": [
        "provider: efa\n    fabric: EFA-fe80::39:beff:fe6e:c23\n    domain: efa_0-rdm\n    version: 2.0\n"
        "    type: FI_EP_RDM\n    protocol: FI_PROTO_EFA\nprovider: tcp;ofi_rxm\n    fabric: 10.0.0.0/24\n"
        "efa:\n    version: 120.10\n---\nfi_info:\n    caps: [ FI_MSG ]\n    fi_ep_attr:\n        type: FI_EP_RDM\n"
        "    fi_fabric_attr:\n        prov_name: efa\nfi_getinfo: -61 (No data available)\n",
    ],
    "envfile": [
        "# managed by gpu-runbook\nexport OMP_NUM_THREADS=8\n"
        "# >>> gpu-runbook nccl_env: link errors on mlx5_1 only (incident 2024-05-01)\n"
        "export NCCL_IB_HCA=^=mlx5_1\n# <<< gpu-runbook nccl_env\n"
        "# >>> gpu-runbook timeout: retry exceeded\nexport NCCL_IB_TIMEOUT=22\nexport NCCL_IB_RETRY_CNT=7\n"
        "# <<< gpu-runbook timeout\n",
        json.dumps({"schema": "gpu-runbook/excluded-rails/v1",
                    "excluded": [{"host": "gpu-r3-n01", "rail": "mlx5_1", "incident": "x"}], "reverted": []}),
    ],
}


def _family(name):
    for pattern, family in _FAMILY_BY_NAME:
        if name == pattern or (pattern.startswith(".") and name.endswith(pattern)) or \
                (pattern.endswith("-") or pattern.endswith("_")) and name.startswith(pattern):
            return family
    return None


@functools.lru_cache(maxsize=None)
def seeds():
    """{family: (bytes, ...)}: every fixture file's bytes by family, and the samples."""
    out = {}
    for dirpath, _dirs, files in sorted(os.walk(FIXTURES)):
        for name in sorted(files):
            family = _family(name)
            if family is None or name in ("case.json", "sources.json"):
                continue
            with open(os.path.join(dirpath, name), "rb") as fh:
                out.setdefault(family, []).append(fh.read())
    for family, texts in SAMPLES.items():
        out.setdefault(family, []).extend(t.encode("utf-8") for t in texts)
    return {k: tuple(v) for k, v in out.items()}
