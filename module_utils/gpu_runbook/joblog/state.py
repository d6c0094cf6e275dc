# SPDX-License-Identifier: Apache-2.0
"""What the line handlers collect: one JobState for the whole job, one FileState per file
(the multi-line constructs that span lines of one file), one Line per physical line."""

from collections import Counter

from ..vocab.reading import Seen


class JobState(object):
    """Everything the line handlers saw, across every file of the job."""

    def __init__(self, since_dt=None, year=None):
        self.since_dt = since_dt
        self.year = year
        self.first_time = None     # the earliest time a line of the log carries (the job ran since then)
        self.time_tries = 0        # lines tried for it: a log without times stops being searched
        self.comm = []             # dicts from NCCL comm lines
        self.rank_host = {}        # rank -> host from [rankN]: + NCCL prefix / srun
        self.rank_host_weak = {}   # rank -> host from srun error lines / torchrun failure summary
        self.local_rank_weak = {}
        self.pid_rank = {}         # (host, pid) -> rank (prefixed lines, then world communicator lines)
        self.pid_rank_weak = {}    # (host, pid) -> rank from the file name
        self.ranks_seen = set()
        self.world_hints = []
        self.ip_host = {}
        self.ib_devices = []
        self.roce_devices = []
        self.oob = None
        self.nccl_version = None
        self.networks = []         # "Using network X" values
        self.net_plugins = {}      # host -> (the network plugin its NCCL runs: 'internal' or its path/name, src, line)
        self.via = Counter()
        self.workers_failed = set()  # files where torchrun said a worker failed: later store errors are teardown
        self.ring_ranks = []       # a ring's ranks in order ('Channel 00/04 :  0 1'), the first one NCCL printed
        self.local_pairs = set()   # {rank, rank} joined by a channel inside a node (P2P/SHM)
        self.socket_evidence = None
        self.ib_disabled = None
        self.ib_nodev = None
        self.net_ib_line = None
        self.timeouts = []         # watchdog entries
        self.last_work = {}        # rank -> (seq, enqueued, completed)
        self.some_failed = []
        self.held = []             # Line: read as context of lines that may follow; the vocabulary's
        # when the job has no finding of warning or above (emitter_lines.findings)
        self.stuck = []
        self.nccl_traces = {}      # (host, pid) -> the innermost line of NCCL's error trail ('socket.cc:829 -> 3')
        self.bootstrap_trails = set()  # (host, pid) whose error trail passes bootstrap.cc: ranks meeting at init
        self.abort_hung = []       # 'Future for ProcessGroup abort timed out': ncclCommAbort did not return
        self.desync_missing = []
        self.desync_lagging = []
        self.desync_timeout = []
        self.barrier_missing = []  # (ranks, timeout ms, src, raw): monitored_barrier's ranks that never came
        self.barrier_waited = set()  # ranks that waited at a monitored_barrier (rank 0, and those that say so)
        self.stall_reported = False  # Horovod's stall inspector said some ranks wait for the missing ones
        self.fr_missing = []       # (ranks, seq, op, src)
        self.fr_entries = {}       # rank -> {seq: (state, op)}
        self.events = []           # error events (dicts)
        self.progress = []         # tqdm observations
        self.progress_kept = 0     # how many compact_progress kept last time
        self.hf_epoch = None
        self.nccl_words = []       # NCCL's own words: setup errors, IB async events (nccl_words.py)
        self.socket_ifname = None  # NCCL_SOCKET_IFNAME as NCCL reported it
        self.socket_link_local = {}  # (host, NET/Socket's device index) -> (interface, address) when link-local
        self.socket_via = set()      # the (host, NET/Socket device index) channels were built on
        self.socket_loopback = None  # (line, host, pid): NCCL's sockets on the loopback interface only
        self.ib_unopened = []     # RDMA devices NET/IB saw but could not open
        self.ipoib_seen = False    # NCCL's Bootstrap / NET/Socket used an IPoIB interface (ib0, ibp12s0 ...)
        self.net_plugin_failed = None  # (src, line) of a network plugin that could not start (aws-ofi-nccl)
        self.nccl_tests = None     # nccl-tests output (nccl_tests.py): header ranks, #wrong, the end summary
        self.launch = []           # launch/rendezvous and torchrun failure records (launch_lines.py)
        self.ras = []              # NCCL RAS report records (launch_lines.py)
        self.shapes = {}           # line shape -> quiet.shape_kind (the prefilter's cache)
        # what the last reader (emitter_lines.py) found in lines no dedicated handler read
        self.srun_exits = []       # srun's 'task N: Exited with exit code C' / 'Killed' lines, in order
        self.slurm = []            # Slurm's words: a node failure, a cancellation and its reason
        self.success = []          # a run that ended well, as its launcher or trainer says
        self.prefix_hosts = []     # nodes a line's prefix names where an emitter's message says it failed
        self.prompt_hosts = []     # nodes a shell prompt pasted with the output names (launch_lines.shell_prompt)
        self.training_lines = 0    # a training run's own progress lines (a step and a loss)
        self.sacct = []            # sacct's rows (emitter_lines.sacct): the job's state as Slurm accounted it
        self.memory = {}           # (file, label, rank) -> the memory figures a run reported (memtrend.py)
        self.memory_lines = 0      # ... lines read for them (the prefilter reads memtrend.EARLY, then the tails)
        self.memory_growth = None  # ... the series that keep growing (memtrend.growth: read once)
        self.pyspy = []            # py-spy dumps: one record per process dumped (pyspy.py)
        self.pyspy_wheres = None   # ... where each stands (pyspy._wheres: read once)
        self.seen = Seen()         # messages of an emitter's vocabulary, lines nothing explains
        self.files_read = {}       # file -> True when a reader took one of its lines (else it was no job log)
        self.bars_read = None      # (raw line, progress.read_bars of it): read by another process (parallel.py)


class FileState(object):
    """What one file carries from one line to the next."""

    def __init__(self, name, file_rank):
        self.name = name
        self.file_rank = file_rank
        self.tb_rank = None            # rank of the open traceback
        self.in_tb = False
        self.elastic_host = None       # torchrun failure summary: 'host :' waits for its 'rank :'
        self.fr_cur = {}               # Flight Recorder JSON entry being read
        self.fr_file_rank = None       # the dump's own "rank": field
        self.fr_missing_ctx = None     # fr_trace 'Not all ranks joining' waiting for its missing ranks
        self.hvd_stall = None          # Horovod's stall report whose rank lines follow (horovod.py)
        self.tq_last_n = None          # unlabelled tqdm bar: a smaller n starts a new epoch
        self.tq_resets = 0
        self.pending_ib = None         # IB completion whose vendor err may be on the next line
        self.exit_ctx = None           # torchrun failure summary: 'exitcode : -9' waiting for its rank/host
        self.ras_ctx = None            # NCCL RAS report: the section being read
        self.sacct = None              # sacct's table being read: its columns (emitter_lines.sacct)
        self.pyspy = None              # the py-spy dump being read: its process and thread (pyspy.py)
        self.last_error = None         # (rank, line number, tag) of PyTorch's 'Last error:' (NCCL's words follow)
        self.sigbus = None             # the Line of a SIGBUS report whose backtrace may follow
        self.ompi_btl = None           # (who, (node, peer)) of an Open MPI BTL error head whose message is next
        self.ompi_frame = None         # an Open MPI help text's frame of dashes being read (ompi_lines.py)


class Line(object):
    """One physical line: ``raw`` as written (evidence), ``text`` with rank and glog prefixes
    stripped (what handlers match), ``rank`` (from the prefix, else the file name)."""

    __slots__ = ("src", "raw", "text", "rank", "prefixed", "host", "ip")

    def __init__(self, src, raw, text, rank, prefixed, host=None, ip=None):
        self.src = src
        self.raw = raw
        self.text = text
        self.rank = rank
        self.prefixed = prefixed
        self.host = host       # the host a launcher prefix names (pdsh 'node17: ')
        self.ip = ip           # the address a Ray prefix names ('(RayWorkerWrapper pid=1, ip=10.0.0.5)')

    def lineno(self):
        """The line's number in its file (``src`` is 'file:number')."""
        return int(self.src.rsplit(":", 1)[1])

    def msg_rank(self, match):
        """The rank a PyTorch message is about: the line prefix wins, then '[Rank N]' in the
        message, then the file's rank."""
        if self.prefixed:
            return self.rank
        return int(match.group(1)) if match else self.rank
