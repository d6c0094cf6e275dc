# SPDX-License-Identifier: Apache-2.0
"""What a healthy node reaches, per GPU model: the floor an active test's figure is held to.

Source: Azure/azurehpc-health-checks (MIT), commit 0e0a1ac26a64b32ac4dd7632a529638505d3314a:
``conf/<sku>.conf`` -- ``check_nccl_allreduce <GB/s> 1 16G`` (all_reduce_perf's "Avg bus bandwidth"
on one node, all its GPUs, one 16 GiB message: customTests/azure_nccl_allreduce.nhc fails a node
below it), ``check_gpu_bw <H2D/D2H GB/s> <P2P GB/s>`` (nvbandwidth's host_to_device_memcpy_ce /
device_to_host_memcpy_ce per GPU and device_to_device_memcpy_read_ce per pair:
customTests/azure_gpu_bandwidth.nhc) and ``check_ib_bw_gdr <Gb/s>`` (ib_write_bw with GPUDirect
per HCA). Each figure is the one Azure holds that VM size to: 8 GPUs of that model on one board.
A node of another shape (fewer GPUs, PCIe boards) differs: set the figure (``expected_*``), or the
check reports what it measured and that it had nothing to compare it with."""

import re

ORIGIN = ("Azure/azurehpc-health-checks@0e0a1ac26a64b32ac4dd7632a529638505d3314a conf/*.conf "
          "(check_nccl_allreduce, check_gpu_bw, check_ib_bw_gdr)")

# (GPU name pattern, GPUs, all-reduce busbw GB/s, H2D/D2H GB/s, P2P GB/s, IB Gb/s per HCA, the conf file)
MODELS = (
    (r"H200", 8, 431.0, 48.0, 335.0, 360.0, "conf/nd96isr_h200_v5.conf"),
    (r"H100 80GB HBM3|H100[ -]SXM", 8, 460.0, 48.0, 335.0, 380.0, "conf/nd96isr_h100_v5.conf"),
    (r"A100-SXM4-80GB|A100-SXM-80GB", 8, 228.0, 21.0, 238.0, 180.0, "conf/nd96amsr_a100_v4.conf"),
    (r"A100-SXM4-40GB", 8, 228.0, 21.0, 235.0, 180.0, "conf/nd96asr_v4.conf"),
    (r"V100-SXM2", 8, 110.0, 9.0, None, None, "conf/nd40rs_v2.conf"),
)


def for_gpus(name, count):
    """The expected figures for ``count`` GPUs named ``name`` (nvidia-smi's name), or None when
    no row fits (another model, or another count: an 8-GPU figure says nothing of 4)."""
    if not name:
        return None
    for pattern, gpus, busbw, h2d, p2p, ib, conf in MODELS:
        if re.search(pattern, name, re.I) and count == gpus:
            return {"busbw_gbps": busbw, "h2d_gbps": h2d, "d2h_gbps": h2d, "p2p_gbps": p2p, "ib_gbps": ib,
                    "source": "%s %s" % (ORIGIN.split(" ")[0], conf)}
    return None
