"""The markers of each generated vocabulary table (vocab/<emitter>.py MARKERS): written by
tests/tools/vocab/write_index.py; edit the tables' generators, never this file."""

MARKERS = {
    'nccl': ('NCCL WARN', 'NCCL INFO', 'NCCL error', 'NCCL Error', 'NCCL failure', 'NCCL_DEBUG=', 'remote process exited or there was a network error', 'internal error - please report this issue to the NCCL developers', 'NCCL operation in progress'),
    'ofi': ('NET/OFI',),
    'torch': ('NCCL', 'nccl', 'c10d', 'atchdog', 'Store', 'store', 'ocket', 'endezvous', 'DataLoader', 'dataloader', 'orker', 'rank', 'Rank', 'ProcessGroup', 'rocess group', 'timed out', 'Timed out', 'imeout', 'ollective', 'Flight Recorder', 'ensor', 'CUDA', 'exitcode', 'received by PID', 'GIL', 'debug info', 'signal', 'backend', 'group', 'etcd', 'mismatch', 'device', 'remote server', 'Pin memory', 'Distributed package', 'barrier', 'nvironment variable', 'already in use', 'FileTimer', 'elastic'),
    'gloo': ('enforce fail at', 'gloo/', 'gloo\\', 'Application timeout caused pair closure'),
    'cuda': ('CUDA', 'cudaError', 'Cuda failure'),
    'nvrm': ('NVRM', 'SXid', 'nvidia-peermem'),
    'xid': ('NVRM',),
    'linux': ('mlx5', 'infiniband', 'ib_core', 'user_mad', 'RDMA CMA', '] ib', ': ib', 'EDAC', 'ghes_edac', 'mce:', '[Hardware Error]', 'Machine check', 'Out of memory', 'out of memory', 'oom', 'OOM', 'blocked for more than', 'hung_task', 'AER:', 'AMD-Vi', 'DMAR', 'Kernel panic', 'WARNING: CPU:', '---[ end', 'taints kernel', 'tainting kernel'),
    'slurm': ('srun:', 'slurmstepd', 'slurmstepd:', 'error:', 'fatal:', 'warning:', 'sched:', 'slurmd', 'slurmctld', 'JobState=', 'Reason=', 'CANCELLED by', '***', 'not responding', 'now responding', 'node failure', 'failed node', 'Killing', 'requeue', 'Requeue', 'Time limit exhausted', 'time limit reached', 'OOM failure', 'drain_nodes', 'unexpectedly rebooted', 'exceeded memory limit', 'exceeded virtual memory limit', 'memory limit at least once', 'memory+swap limit', 'DOWN node', 'epilog for', 'prolog for', 'preempted', 'ResumeTimeout', 'Exceeded job memory limit', 'cancelled by', 'unkillable stepd', 'died by signal', 'not able to requeue', 'killed while launch'),
    'dcgm': ('"warning" : "', '"error_id" : ', 'GPU', 'DCGM', 'Dcgm', '[[SysMon]]', 'NvSwitch', 'NvLink', 'NVLink', 'NVVS', 'NVML', 'Cannot load plugins', 'CUDA', 'Fabric Manager', 'IMEX', 'Overall Health', 'Health Monitor Report', 'health watches', 'Health watches', 'Health monitor', 'diagnostic', 'Diagnostic', 'host engine', '-> PCIe system', '-> NVLINK system', '-> PMU system', '-> MCU system', '-> Memory system', '-> SM system', '-> InfoROM system', '-> Thermal system', '-> Power system', '-> Driver', '-> ConnectX system'),
    'fabricmanager': ('[tid ', 'NVSwitch', 'nv-fabricmanager', 'fabric manager'),
    'rdma': ('status=', 'with error', 'Failed status', 'async event', 'async fatal event'),
    'ucx': ('UCX  ERROR', 'UCX  WARN', 'UCX  DIAG', 'UCX  FATAL', 'UCX ERROR', 'UCX WARN', 'UCX DIAG', 'UCX FATAL', 'Fatal: ', 'Assertion `', 'Caught signal', ' retry count exceeded', 'cma_ep.c:', 'cuda_copy_md.c:', 'cuda_ctx.c:', 'ib_device.c:', 'ib_mlx5_log.c:', 'mm_posix.c:', 'proto_common.c:', 'rc_iface.c:', 'rc_verbs_iface.c:', 'rdmacm_cm.c:', 'rdmacm_cm_ep.c:', 'srd_iface.c:', 'sys.c:', 'tcp_ep.c:', 'tcp_sockcm.c:', 'tcp_sockcm_ep.c:', 'ucp_ep.c:', 'ucp_listener.c:', 'ucp_mm.c:', 'uct_md.c:', 'wireup_cm.c:'),
    'nhc': ('Health check failed', 'NHC', 'Node Health Check', 'Health check passed', 'Health checks completed', 'health checks failed', 'Running check:'),
    'nvml': ('NVMLError', 'ERROR_'),
    'container': ('nvidia-container-cli', 'NVIDIA Container Runtime', 'NVIDIA devices', 'CDI', 'OCI spec', 'CUDA compat', 'CUDA Compat', 'CUDA version', 'CUDA Compute Capability', 'ldcache', 'ldconfig', 'unsatisfied condition', 'requirements not met', 'Auto-detected mode', 'requested mode', 'MIG_', 'prestart hook', 'driver capabilit', 'modifier'),
}
