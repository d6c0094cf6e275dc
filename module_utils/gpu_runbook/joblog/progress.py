# SPDX-License-Identifier: Apache-2.0
"""Handlers of training progress: tqdm bars (also many ``\\r``-chained updates on one
physical line, labelled 'Epoch N' or not) and HF Trainer's ``'epoch': x`` dicts.

A handler takes (line, file state, job state) and returns True when the line is fully read."""

from collections import OrderedDict
from itertools import groupby
from operator import itemgetter

from .patterns import EPOCH_LABEL, HF_EPOCH, NON_TRAIN_LABEL, TQDM, TQDM_LABEL


def tqdm_bars(line, fs, st):
    """Every training bar update on the line; True when nothing else can follow the last
    update (the line is only progress). What the line says is read_bars' (a pure function of
    its text: another process may have read it, st.bars_read); what it adds is this one's."""
    text = line.text
    if "%|" not in text:
        return False
    got = st.bars_read
    if got is not None and got[0] is line.raw:
        bars, only, exc = got[1]
    else:
        bars, only, exc = read_bars(text)
    for bar in bars:
        _add(bar, line.src, fs, st)
    if exc is not None:
        raise exc
    return only


def read_bars(text):
    """(the training bar updates of a line's text that count, as tuples; whether nothing else
    can follow the last update; the exception that cut the reading short, or None: what came
    before it still counts, as when each update was added as it was read)."""
    bars = []
    try:
        for seg in _sampled([seg for seg in text.split("\r") if "%|" in seg]):
            # TQDM.finditer(seg), each search started where a match can start: a bar's
            # percentage is at most 3 digits before a '%|' (no scan of the label or the tail)
            pos = max(seg.find("%|") - 3, 0)
            while True:
                mt = TQDM.search(seg, pos)
                if mt is None:
                    break
                bar = _bar(seg, mt)
                if bar is not None:
                    bars.append(bar)
                end = mt.end()
                at = seg.find("%|", end)
                if at < 0:
                    break
                pos = max(at - 3, end)
    # what a malformed bar can raise; raised again by tqdm_bars, after these (never_raise names it)
    except (ValueError, LookupError, TypeError, ArithmeticError, AttributeError) as exc:
        return bars, False, exc
    tail = text.rsplit("\r", 1)[-1]
    # an error glued to the last bar update is read by the other handlers
    return bars, not any(k in tail for k in ("NCCL", "Error", "rror:", "Rank", "Killed")), None


# observations held before compact_progress thins them: a long log's bars cost a few MB, not tens
MAX_OBSERVATIONS = 4096
MAX_UPDATES = 8  # bar updates read in full per physical line (a log's \r chain can hold thousands)


_SPACED = {}


def _spaced(n):
    """MAX_UPDATES evenly spaced indexes of n (the first and the last among them)."""
    got = _SPACED.get(n)
    if got is None:
        got = tuple(int(i * (n - 1) / (MAX_UPDATES - 1.0)) for i in range(MAX_UPDATES))
        if len(_SPACED) < 4096:
            _SPACED[n] = got
    return got


def _sampled(updates):
    """The updates of one physical line worth reading: all of a short chain; of a longer one
    MAX_UPDATES evenly spaced, the last, and both sides of every fall of the percentage (a
    bar that starts again: a new epoch). The rate's median and the furthest progress stay as
    they were; what is dropped is what compact_progress would drop later."""
    if len(updates) <= MAX_UPDATES:
        return updates
    keep = set(_spaced(len(updates)))
    # each update's percentage: the (stripped) three characters before its first '%|'
    heads = [seg[:seg.find("%|")][-3:] for seg in updates]
    if heads.count(heads[0]) == len(heads):  # the same percentage all along (the common case): no fall
        return [updates[i] for i in sorted(keep)]
    pcts = [int(h) if h.isdigit() else None for h in map(str.strip, heads)]
    for i in range(1, len(pcts)):
        pct, last = pcts[i], pcts[i - 1]
        if pct is not None and last is not None and pct < last:
            keep.update((i - 1, i))
    return [updates[i] for i in sorted(keep)]


_MUL = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9}  # text.to_unit's, for TQDM's [kMG]?
_LABELS = {}  # what stands before a bar -> _label's answer (a pure function of it: kept across jobs)
MAX_LABELS = 4096


def _label(before):
    """(not a training bar, epoch, epochs in all, labelled) from the text before a bar's
    percentage: its label ('Epoch 3/10', 'Validation') -- the same few on every update."""
    got = _LABELS.get(before)
    if got is None:
        ml = TQDM_LABEL.search(before)
        label = ml.group(1).strip() if ml else ""
        me = None
        if label and NON_TRAIN_LABEL.search(label):
            got = (True, None, None, False)
        else:
            for me in EPOCH_LABEL.finditer(label):
                pass
            if me:
                got = (False, int(me.group(1)), int(me.group(2)) if me.group(2) else None, True)
            else:
                got = (False, None, None, False)
        if len(_LABELS) >= MAX_LABELS:
            _LABELS.clear()
        _LABELS[before] = got
    return got


def _bar(seg, mt):
    """One update, read: (n, total, epoch, epochs, labelled, rate, progress, evidence, elapsed),
    or None when it is no training bar's."""
    at = mt.start()
    not_train, ep, tot_ep, labelled = _label(seg[at - 220 if at > 220 else 0:at])
    if not_train:
        return None
    _pct, n, nu, tot, tu, elapsed, _rem, rate, unit = mt.groups()  # TQDM's groups, in order
    if unit.endswith("B/s") or unit.startswith("s/") and unit.endswith("B"):
        return None  # counted in bytes (tqdm's unit="B"): a transfer, not a training loop
    try:
        n, tot = float(n) * _MUL[nu], float(tot) * _MUL[tu]
    except (ValueError, KeyError):
        return None
    if not tot:
        return None
    if rate == "?":
        rate = None
    else:
        r = float(rate)
        if unit.startswith("s/"):
            rate = (1.0 / r) if r > 0 else None
        else:
            rate = r
    part = n / tot
    part = part if part < 1.0 else 1.0  # max(0.0, min(1.0, part)), NaN too
    return n, tot, ep, tot_ep, labelled, rate, part if part > 0.0 else 0.0, seg.strip(), elapsed


# an observation as the parser keeps it (a tuple: cheaper than a dict by the million), and
# as analysis reads it (observations(): a dict of these keys)
FIELDS = ("file", "epoch", "epochs_total", "labelled", "reset_index", "n", "total", "progress", "rate", "src",
          "evidence", "elapsed")


def _add(bar, src, fs, st):
    n, tot, ep, tot_ep, labelled, rate, part, evidence, elapsed = bar
    if not labelled:
        # an unlabelled bar that starts again counts as a new epoch
        if fs.tq_last_n is not None and n < fs.tq_last_n:
            fs.tq_resets += 1
        fs.tq_last_n = n
    if len(st.progress) >= MAX_OBSERVATIONS and len(st.progress) >= st.progress_kept * 2:
        compact_progress(st)
        st.progress_kept = len(st.progress)  # many bars (one per rank log) keep more: thin again only past twice it
    st.progress.append((fs.name, ep, tot_ep, labelled, fs.tq_resets, n, tot, part, rate, src, evidence, elapsed))


def one_bar(st, name):
    """True when file ``name``'s progress so far is one bar that never restarted and no label calls
    an epoch's (a bar per epoch reaches its total at every epoch's end)."""
    i_file, i_reset, i_label = FIELDS.index("file"), FIELDS.index("reset_index"), FIELDS.index("labelled")
    mine = [o if not isinstance(o, dict) else tuple(o[f] for f in FIELDS) for o in st.progress]
    mine = [o for o in mine if o[i_file] == name]
    return bool(mine) and not any(o[i_reset] or o[i_label] for o in mine)


def observations(st):
    """The job's progress observations as dicts (FIELDS), once the logs are read."""
    if st.progress and not isinstance(st.progress[0], dict):
        st.progress = [dict(zip(FIELDS, obs)) for obs in st.progress]
    return st.progress


def hf_epoch(line, fs, st):
    text = line.text
    if "train_runtime" in text or "run_stop" in text:
        # the Trainer's metrics at the end of training, mllog's run_stop (its metadata may name the epoch):
        # the run's end, not an epoch
        from .emitter_lines import ended
        if ended(line, st):
            return True
    if "'epoch'" in text or '"epoch"' in text:
        m = HF_EPOCH.search(text)
        if m:
            try:
                st.hf_epoch = (float(m.group(1)), line.src)
            except ValueError:
                pass
    return False


_BAR_KEY = itemgetter(0, 3, 1, 4)  # which bar an observation is of: its file, labelled, epoch and reset_index


def compact_progress(st):
    """Keep at most 64 evenly spaced observations per bar (plus its last) once there are too many;
    fewer when there are many bars, down to 2 each (the first kept and the last)."""
    groups = OrderedDict()
    # a bar's observations come in long runs (a file's bar, epoch after epoch): one step per run
    for key, run in groupby(st.progress, _BAR_KEY):
        groups.setdefault(key, []).extend(run)
    per = max(2, min(64, MAX_OBSERVATIONS // (2 * len(groups))))
    out = []
    for obs in groups.values():
        if len(obs) > per:
            step = len(obs) / (per - 1.0)
            obs = [obs[int(i * step)] for i in range(per - 1)] + [obs[-1]]
        out.extend(obs)
    st.progress = out
