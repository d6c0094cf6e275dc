# SPDX-License-Identifier: Apache-2.0
"""A Slurm node's generic resources (its ``Gres=`` line, ``gpu:h100:8(S:0-1),nic:2``): their
names and the GPUs they configure. Pure, stdlib."""

import re


def gres_names(gres):
    """'gpu:h100:8(S:0-1),nic:2' -> ['gpu', 'nic'] (the resource names, without type and count)."""
    if gres in (None, "(null)"):
        return []
    bare = re.sub(r"\([^()]*\)", "", gres)  # socket lists such as (S:0,1) hold commas
    return [name for name in (item.split(":")[0].strip() for item in bare.split(",")) if name]


def gres_gpu_count(gres):
    """The GPUs a node's Gres line configures: 'gpu:h100:8(S:0-1)' -> 8, 'gpu:a100:4,gpu:t4:2' -> 6,
    'gpu:8' -> 8; None when no gpu entry says its count ('gpu' alone, 'shard:...', '(null)'): a count
    guessed from a bare name would call a healthy node short (gres.conf may leave it to autodetect)."""
    if gres in (None, "", "(null)"):
        return None
    bare = re.sub(r"\([^()]*\)", "", gres)
    counts = []
    for item in bare.split(","):
        parts = [part.strip() for part in item.split(":")]
        if parts[0] != "gpu" or len(parts) < 2 or not re.fullmatch(r"\d{1,4}", parts[-1]):
            if parts[0] == "gpu":
                return None  # one gpu entry without a count: the sum would be short
            continue
        counts.append(int(parts[-1]))
    return sum(counts) if counts else None
