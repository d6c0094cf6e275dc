"""Handlers of training progress: tqdm bars (also many ``\\r``-chained updates on one
physical line, labelled 'Epoch N' or not) and HF Trainer's ``'epoch': x`` dicts.

A handler takes (line, file state, job state) and returns True when the line is fully read."""

from collections import OrderedDict

from .patterns import EPOCH_LABEL, HF_EPOCH, NON_TRAIN_LABEL, TQDM, TQDM_LABEL
from .text import to_unit


def tqdm_bars(line, fs, st):
    """Every training bar update on the line; True when nothing else can follow the last
    update (the line is only progress)."""
    text = line.text
    if "%|" not in text:
        return False
    for seg in _sampled([seg for seg in text.split("\r") if "%|" in seg]):
        for mt in TQDM.finditer(seg):
            _bar(seg, mt, line.src, fs, st)
    tail = text.rsplit("\r", 1)[-1]
    # an error glued to the last bar update is read by the other handlers
    return not any(k in tail for k in ("NCCL", "Error", "rror:", "Rank", "Killed"))


# observations held before compact_progress thins them: a long log's bars cost a few MB, not tens
MAX_OBSERVATIONS = 4096
MAX_UPDATES = 8  # bar updates read in full per physical line (a log's \r chain can hold thousands)


def _sampled(updates):
    """The updates of one physical line worth reading: all of a short chain; of a longer one
    MAX_UPDATES evenly spaced, the last, and both sides of every fall of the percentage (a
    bar that starts again: a new epoch). The rate's median and the furthest progress stay as
    they were; what is dropped is what compact_progress would drop later."""
    if len(updates) <= MAX_UPDATES:
        return updates
    keep = set(int(i * (len(updates) - 1) / (MAX_UPDATES - 1.0)) for i in range(MAX_UPDATES))
    last = None
    for i, seg in enumerate(updates):
        at = seg.find("%|")
        pct = seg[max(0, at - 3):at].strip()
        pct = int(pct) if pct.isdigit() else None
        if pct is not None and last is not None and pct < last:
            keep.update((i - 1, i))
        last = pct
    return [updates[i] for i in sorted(keep)]


def _bar(seg, mt, src, fs, st):
    ml = TQDM_LABEL.search(seg[max(0, mt.start() - 220):mt.start()])
    label = ml.group(1).strip() if ml else ""
    if label and NON_TRAIN_LABEL.search(label):
        return
    n = to_unit(mt.group("n"), mt.group("nu"))
    tot = to_unit(mt.group("tot"), mt.group("tu"))
    if n is None or not tot:
        return
    ep = tot_ep = None
    me = None
    for me in EPOCH_LABEL.finditer(label):
        pass
    if me:
        ep = int(me.group(1))
        tot_ep = int(me.group(2)) if me.group(2) else None
    else:
        # an unlabelled bar that starts again counts as a new epoch
        if fs.tq_last_n is not None and n < fs.tq_last_n:
            fs.tq_resets += 1
        fs.tq_last_n = n
    rate = None
    if mt.group("rate") != "?":
        r = float(mt.group("rate"))
        if mt.group("unit").startswith("s/"):
            rate = (1.0 / r) if r > 0 else None
        else:
            rate = r
    if len(st.progress) >= max(MAX_OBSERVATIONS, st.progress_kept * 2):
        compact_progress(st)
        st.progress_kept = len(st.progress)  # many bars (one per rank log) keep more: thin again only past twice it
    st.progress.append({
        "file": fs.name, "epoch": ep, "epochs_total": tot_ep, "labelled": me is not None,
        "reset_index": fs.tq_resets, "n": n, "total": tot,
        "progress": max(0.0, min(1.0, n / tot)), "rate": rate,
        "src": src, "evidence": seg.strip(), "elapsed": mt.group("el")})


def hf_epoch(line, fs, st):
    text = line.text
    if "'epoch'" in text or '"epoch"' in text:
        m = HF_EPOCH.search(text)
        if m:
            try:
                st.hf_epoch = (float(m.group(1)), line.src)
            except ValueError:
                pass
    return False


def compact_progress(st):
    """Keep at most 64 evenly spaced observations per bar (plus its last) once there are too many;
    fewer when there are many bars, down to 2 each (the first kept and the last)."""
    groups = OrderedDict()
    for p in st.progress:
        groups.setdefault((p["file"], p["labelled"], p["epoch"], p["reset_index"]), []).append(p)
    per = max(2, min(64, MAX_OBSERVATIONS // (2 * len(groups))))
    out = []
    for obs in groups.values():
        if len(obs) > per:
            step = len(obs) / (per - 1.0)
            obs = [obs[int(i * step)] for i in range(per - 1)] + [obs[-1]]
        out.extend(obs)
    st.progress = out
