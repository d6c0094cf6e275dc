"""The markers of each generated vocabulary table (vocab/<emitter>.py MARKERS): written by
tests/tools/vocab/write_index.py; edit the tables' generators, never this file."""

MARKERS = {
    'slurm': ('srun:', 'slurmstepd:', 'error:', 'fatal:', 'warning:', 'sched:', 'slurmd', 'slurmctld', 'JobState=', 'Reason=', 'CANCELLED by', '***', 'not responding', 'now responding', 'node failure', 'failed node', 'Killing', 'requeue', 'Requeue', 'Time limit exhausted', 'time limit reached', 'OOM failure', 'drain_nodes', 'unexpectedly rebooted', 'exceeded memory limit', 'exceeded virtual memory limit', 'memory limit at least once', 'memory+swap limit', 'DOWN node', 'epilog for', 'prolog for', 'preempted', 'ResumeTimeout', 'Exceeded job memory limit', 'cancelled by', 'unkillable stepd', 'died by signal', 'not able to requeue', 'killed while launch'),
}
