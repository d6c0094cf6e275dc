# SPDX-License-Identifier: Apache-2.0
"""Launcher and collector prefixes that stand before a training process's own line, and what
they say about the rank and its host:

* Open MPI ``mpirun --tag-output``: ``[1,12]<stdout>:`` / ``[1,3]<stderr>:`` (``[jobid,rank]``;
  the second number is the MPI_COMM_WORLD rank); horovodrun's ``[3]<stderr>:`` (the rank);
* Ray actors: ``(RayWorkerVllm pid=1234)``, ``(RayWorkerWrapper pid=581, ip=10.225.128.18)``,
  ``(pid=77)``: the ip is the actor's host (the address, as Ray printed it); no rank;
* pdsh-launched ranks (DeepSpeed's multi-node runner, ``pdsh -w``): ``192.168.1.51: `` or
  ``worker-1: `` before the rank's line: the host the line came from;
* ``[RANK 1]`` / ``[RANK1]:`` (SimpleTuner, accelerate wrappers): a global rank;
* ``[trainer0|3]:``-style role prefixes: stripped (a role and numbers whose meaning the
  launcher does not print), no rank taken from them.

``strip(raw) -> (text, rank, host, ip)``: the line without those prefixes (at most a few, in
any order), the global rank a prefix names (or None), the host a pdsh prefix names, the address
a Ray prefix names. Every pattern is anchored at the start and bounded (linear on 1 MiB lines)."""

import re

MPI_TAG = re.compile(r"^\[(\d{1,9}),(\d{1,7})\]<(?:stdout|stderr|stddiag)>: ?")
HVD_TAG = re.compile(r"^\[(\d{1,7})\]<(?:stdout|stderr)>: ?")
RAY = re.compile(r"^\((?:([A-Za-z_][\w.:\-]{0,80}) )?pid=(\d{1,9})(?:, ip=([0-9A-Fa-f.:]{3,45}))?\) ?")
UPPER_RANK = re.compile(r"^\[RANK ?(\d{1,6})\]:? ?")
ROLE_PAIR = re.compile(r"^\[[A-Za-z_][\w\-]{0,40}?\d{1,6}\|\d{1,6}\]: ?")
# pdsh: '<host>: ' -- an IPv4 address, or a lower-case host name with a digit in it (node17,
# worker-1, gpu1504, lambda-scalar02.cluster): never a word like 'RuntimeError: '
PDSH = re.compile(r"^((?:\d{1,3}\.){3}\d{1,3}|[a-z][a-z0-9\-]{0,62}(?:\.[a-z0-9\-]{1,63}){0,6}): (?=\S)")
_NOT_HOSTS = ("rank", "local_rank", "epoch", "step", "iter", "batch", "loss", "layer", "cuda", "device", "python",
              "worker_", "gpu_", "thread", "proc", "task", "line", "frame", "error", "warn", "info")


def _pdsh_host(text):
    m = PDSH.match(text)
    if not m:
        return None, 0
    host = m.group(1)
    if host.startswith("slurmstepd-"):
        # slurmstepd's own name when Slurm runs several slurmd per host (src/slurmd/slurmstepd/mgr.c,
        # MULTIPLE_SLURMD: argv0 "slurmstepd-%s" with the node's name): the node the step ran on
        host = host[len("slurmstepd-"):]
        return (host, m.end()) if host else (None, 0)
    if not any(c.isdigit() for c in host):
        return None, 0
    if host[0].isalpha():
        low = host.split(".")[0]
        if any(low.startswith(w) and (len(low) == len(w) or low[len(w)].isdigit()) for w in _NOT_HOSTS):
            return None, 0
    return host, m.end()


def strip(raw):
    """(text, rank, host, ip) -- see the module docstring."""
    text, rank, host, ip = raw, None, None, None
    body = raw.lstrip(" \t")
    if body is not raw and body[:1] in ("[", "(") and 0 < len(raw) - len(body) <= 16:
        # an indented paste (a markdown code block, a quoted log): the tag still starts the line
        stripped = strip(body)
        if stripped[1] is not None or stripped[2] is not None or stripped[3] is not None \
                or stripped[0] is not body:
            return stripped
    for _ in range(4):
        if not text:
            break
        c = text[0]
        if c == "[":
            m = MPI_TAG.match(text)
            if m:
                rank = int(m.group(2))
                text = text[m.end():]
                continue
            m = HVD_TAG.match(text)
            if m:
                rank = int(m.group(1))
                text = text[m.end():]
                continue
            m = UPPER_RANK.match(text)
            if m:
                rank = int(m.group(1))
                text = text[m.end():]
                continue
            m = ROLE_PAIR.match(text)
            if m:
                text = text[m.end():]
                continue
            break
        if c == "(":
            m = RAY.match(text)
            if m:
                ip = m.group(3) or ip
                text = text[m.end():]
                continue
            break
        if host is None and (c.isdigit() or c.islower()):
            h, end = _pdsh_host(text)
            if h:
                host = h
                text = text[end:]
                continue
        break
    return text, rank, host, ip
