"""The tqdm reader's shortcuts read what the plain reading reads: progress.read_bars (searches
started at a '%|', the percentages of a chain compared as text before they are numbers) against
a reading of every bar with TQDM.finditer, and text.has_crlf against a search for "\\r\\n"."""

import random

import pytest

from gpu_runbook.joblog import progress, text
from gpu_runbook.joblog.patterns import TQDM


def _plain_sampled(updates):
    """progress._sampled as it was first written: every update's percentage made a number."""
    if len(updates) <= progress.MAX_UPDATES:
        return updates
    keep = set(progress._spaced(len(updates)))
    heads = [seg[:seg.find("%|")][-3:].strip() for seg in updates]
    pcts = [int(h) if h.isdigit() else None for h in heads]
    for i in range(1, len(pcts)):
        if pcts[i] is not None and pcts[i - 1] is not None and pcts[i] < pcts[i - 1]:
            keep.update((i - 1, i))
    return [updates[i] for i in sorted(keep)]


def _plain_read_bars(line):
    """read_bars with every update's bars found by TQDM.finditer over the whole update."""
    bars = []
    try:
        for seg in _plain_sampled([seg for seg in line.split("\r") if "%|" in seg]):
            for mt in TQDM.finditer(seg):
                bar = progress._bar(seg, mt)
                if bar is not None:
                    bars.append(bar)
    except (ValueError, LookupError, TypeError, ArithmeticError, AttributeError) as exc:
        return bars, False, exc
    tail = line.rsplit("\r", 1)[-1]
    return bars, not any(k in tail for k in ("NCCL", "Error", "rror:", "Rank", "Killed")), None


def _same(got, want):
    assert got[:2] == want[:2]
    assert type(got[2]) is type(want[2]) and str(got[2]) == str(want[2])


PIECES = ["Epoch 3: ", "Validation: ", "", "100%|", "99%|", "1100%|", "5%|", "\u00b2%|", "%|", "|", "\r", "\r", "x",
          " 7%|##  | 3/10 [00:01<00:02,  2.5it/s]", "12/0 [00:01<?, ?it/s]", "3.5k/10M [1:00<2:00, 1.5s/it]",
          "Epoch 2/5: ", "50%|#####     | 5/10 [00:05<00:05, 1.00it/s]", "0%|          | 0/10 [00:00<?, ?it/s]",
          "Epoch 4: 10%|#| 1/10 [0:01<0:09, 3.2it/s] 20%|##| 2/10 [0:02<0:08, 3.3it/s]", "NCCL Error", "0", "1", " "]


def _chain(updates, start=0, label="Epoch 1: ", total=1000, step=7):
    return "\r".join("%s%3d%%|%-10s| %d/%d [00:%02d<01:00, %.2fit/s]" % (
        label, (start + k * step) * 100 // total, "#" * ((start + k * step) * 10 // total), start + k * step, total,
        k % 60, 1.5 + k / 100.0) for k in range(updates))


@pytest.mark.parametrize("line", [
    _chain(3), _chain(8), _chain(9), _chain(20), _chain(200, step=1), _chain(30, start=900, step=40),  # a fall past 100 %
    _chain(25, label=""), _chain(25, label="Validation: "), _chain(20) + "\r" + _chain(20),  # a bar that starts again
    _chain(20) + " [rank3]: NCCL Error", "Epoch 1: 10%|#| 1/10 [0:01<0:09, 3.2it/s] 20%|##| 2/10 [0:02<0:08, 3.3it/s]",
    "\r".join(["Epoch 4: 10%|#| 1/10 [0:01<0:09, 3.2it/s] 20%|##| 2/10 [0:02<0:08, 3.3it/s]"] * 12),
    "\r".join(" \u00b2%|" if k == 10 else "%d%%|#| %d/100 [0:01<0:09, 3.2it/s]" % (k, k) for k in range(20)),
    "1100%|#| 11/1 [0:01<0:09, 3.2it/s]", "%|" * 30, "",
])
def test_read_bars_reads_what_finditer_reads(line):
    _same(progress.read_bars(line), _plain_read_bars(line))


def test_read_bars_on_random_chains():
    r = random.Random(11)
    for _ in range(20000):
        line = "".join(r.choice(PIECES) for _ in range(r.randint(1, 60)))
        _same(progress.read_bars(line), _plain_read_bars(line))


def test_sampled_keeps_both_sides_of_a_fall():
    # 40 updates, the percentage falls once (from 90 to 5): both kept besides the evenly spaced ones
    pcts = list(range(10, 91, 4))[:20] + list(range(5, 100, 5))[:20]
    updates = ["%d%%|#| %d/100 [0:01<0:09, 3.2it/s]" % (p, p) for p in pcts]
    got = progress._sampled(updates)
    assert got == _plain_sampled(updates)
    assert updates[19] in got and updates[20] in got


def test_sampled_of_one_percentage_all_along():
    updates = ["Epoch 2:  42%%|####| %d/1000 [0:01<0:09, 3.2it/s]" % (420 + k) for k in range(30)]
    got = progress._sampled(updates)
    assert got == _plain_sampled(updates)
    assert len(got) == progress.MAX_UPDATES and got[0] is updates[0] and got[-1] is updates[-1]


@pytest.mark.parametrize("block", [
    "", "\r", "\n", "\r\n", "a\rb\nc\r\n", "a\rb\nc\rd", "x\r\r\n", "\r" * 5 + "\n", "a\nb\r", "\n\r",
    "a\rb\rc\nd\r\ne",
])
def test_has_crlf(block):
    assert text.has_crlf(block) == ("\r\n" in block)


def test_has_crlf_past_the_lines_it_looks_at(monkeypatch):
    monkeypatch.setattr(text, "MAX_CR_LINES", 2)
    assert text.has_crlf("a\rb\nc\rd\ne\rf\ng\r\n") is True
    assert text.has_crlf("a\rb\nc\rd\ne\rf\ng\rh") is False
    r = random.Random(5)
    for limit in (1, 2, 3, 32):
        monkeypatch.setattr(text, "MAX_CR_LINES", limit)
        for _ in range(3000):
            block = "".join(r.choice(["\r", "\n", "a", "\r\n", "\r\r", "xx"]) for _ in range(r.randint(0, 60)))
            assert text.has_crlf(block) == ("\r\n" in block), repr(block)


def test_a_crlf_block_is_cleaned_past_tqdm_chains():
    chains = "\n".join(_chain(5) for _ in range(40))
    # each line as FileLines cleans it alone: the \r run at its end dropped, a chain's bare \r's kept
    assert text.clean_block(chains + "\nlast\r\nmore") == chains + "\nlast\nmore"
    assert text.clean_block(chains + "\nlast\r\r\nmore\r") == chains + "\nlast\nmore"
    assert text.clean_block(chains) == chains


def _plain_compact(progress_list):
    """compact_progress as first written: each observation grouped on its own."""
    groups = {}
    for p in progress_list:
        p = dict(zip(progress.FIELDS, p))
        groups.setdefault((p["file"], p["labelled"], p["epoch"], p["reset_index"]), []).append(p)
    per = max(2, min(64, progress.MAX_OBSERVATIONS // (2 * len(groups))))
    out = []
    for obs in groups.values():
        if len(obs) > per:
            step = len(obs) / (per - 1.0)
            obs = [obs[int(i * step)] for i in range(per - 1)] + [obs[-1]]
        out.extend(obs)
    return out


@pytest.mark.parametrize("bars", [1, 3, 40, 300])
def test_compact_progress_keeps_what_grouping_each_observation_keeps(bars):
    r = random.Random(bars)
    obs, k = [], 0
    while len(obs) < 9000:  # runs of one bar, bars coming back (interleaved files, epochs that start again)
        bar = r.randrange(bars)
        for _ in range(r.randint(1, 400)):
            p = {"file": "rank-%d.log" % (bar % 7), "labelled": bar % 2 == 0, "epoch": bar // 14 or None,
                 "reset_index": bar % 3, "n": k}
            obs.append(tuple(p.get(f) for f in progress.FIELDS))  # as the parser keeps one
            k += 1

    class St(object):
        progress = list(obs)

    progress.compact_progress(St)
    assert progress.observations(St) == _plain_compact(obs)
