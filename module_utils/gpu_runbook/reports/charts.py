# SPDX-License-Identifier: Apache-2.0
"""Inline SVG pictures for report.html: the incident timeline across hosts and the job's
iteration rate per epoch. Pure functions from data to an SVG string: no script, no
external resource (inline SVG in HTML5 needs no xmlns URL either), every text escaped, so
the report stays one file that opens offline.
Bad input is normal input: an empty or odd list draws nothing ('' back), never a traceback."""

from datetime import timedelta
from html import escape

from ..timeutil import to_utc

WIDTH = 1000
LABEL_W = 150          # the host names' column
ROW_H = 28
AXIS_H = 34
TOP = 24               # room for the watchdog's and first fault's labels
RIGHT = 20

# Tick steps a person reads at a glance, shortest first (seconds).
_STEPS = (1, 5, 10, 30, 60, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800)

# A kernel/job event's kind -> its dot's class (colour in the report's CSS).
_KIND_CLASS = (("watchdog", "ev-watchdog"), ("collective", "ev-job"), ("xid", "ev-fault"), ("fallen", "ev-fault"),
               ("_down", "ev-down"), ("flap", "ev-down"), ("_up", "ev-up"))


def _kind_class(kind):
    kind = str(kind or "")
    return next((cls for key, cls in _KIND_CLASS if key in kind), "ev-other")


def _attr(value):
    return escape(str(value), quote=True)


def _num(x):
    return ("%.1f" % x).rstrip("0").rstrip(".")


def _tick_step(span_s, wanted=7):
    return next((s for s in _STEPS if span_s / s <= wanted), _STEPS[-1])


def _tick_label(dt, step, with_date):
    if step >= 86400:
        return dt.strftime("%m-%d")
    text = dt.strftime("%H:%M:%S" if step < 60 else "%H:%M")
    return dt.strftime("%m-%d ") + text if with_date else text


def timeline_svg(events, rows, words):
    """events: [{time, host, kind, text, first_fault?, culprit_fault?}] (cluster.build_timeline);
    rows: the host names in display order (the job's row is 'job'); words: {"job", "first_fault",
    "culprit_fault", "job_start", "watchdog", "no_events", "axis"} in the report's language.
    -> '<svg ...>' or ''."""
    placed = []
    for e in events or []:
        if not isinstance(e, dict):
            continue
        t = to_utc(e.get("time"))
        if t is not None and e.get("host") in rows:
            placed.append((t, e))
    if not placed or not rows:
        return ""
    t0 = min(t for t, _e in placed)
    t1 = max(t for t, _e in placed)
    span = max((t1 - t0).total_seconds(), 60.0)
    pad = span * 0.03
    start, seconds = t0 - timedelta(seconds=pad), span + 2 * pad
    plot_w = WIDTH - LABEL_W - RIGHT
    height = TOP + ROW_H * len(rows) + AXIS_H

    def x_of(t):
        return LABEL_W + plot_w * (t - start).total_seconds() / seconds

    out = ['<svg class="chart timeline" width="100%%" viewBox="0 0 %d %d" '
           'role="img" aria-label="%s">' % (WIDTH, height, _attr(words.get("title", "timeline")))]
    out.append('<title>%s</title>' % escape(words.get("title", "timeline")))
    # axis: ticks on round times, the date named when the span crosses midnight
    step = _tick_step(seconds)
    first_tick = int(to_utc(start).timestamp() // step + 1) * step
    with_date = t0.date() != t1.date()
    axis_y = TOP + ROW_H * len(rows)
    out.append('<g class="axis"><line x1="%d" y1="%d" x2="%d" y2="%d"/>' % (LABEL_W, axis_y, WIDTH - RIGHT, axis_y))
    tick = first_tick
    while tick <= start.timestamp() + seconds:
        dt = start + timedelta(seconds=tick - start.timestamp())
        x = x_of(dt)
        out.append('<line class="grid" x1="%s" y1="%d" x2="%s" y2="%d"/><text x="%s" y="%d" text-anchor="middle">%s'
                   '</text>' % (_num(x), TOP, _num(x), axis_y + 4, _num(x), axis_y + 17,
                                escape(_tick_label(dt, step, with_date))))
        tick += step
    out.append('<text class="axis-note" x="%d" y="%d" text-anchor="end">%s</text></g>'
               % (WIDTH - RIGHT, axis_y + 31, escape(words.get("axis", "UTC"))))
    by_row = {h: [] for h in rows}
    for t, e in placed:
        by_row[e["host"]].append((t, e))
    for host in by_row:  # drawn last is on top: recoveries under faults, the first fault over all
        by_row[host].sort(key=lambda te: (bool(te[1].get("first_fault") or te[1].get("culprit_fault")),
                                          _kind_class(te[1].get("kind")) != "ev-up", te[0]))
    for i, host in enumerate(rows):
        y = TOP + ROW_H * i
        mid = y + ROW_H / 2
        name = words.get("job", "job") if host == "job" else host
        out.append('<g class="tl-row" data-host="%s">' % _attr(host))
        out.append('<rect class="lane%s" x="%d" y="%d" width="%d" height="%d"/>'
                   % (" lane-job" if host == "job" else "", LABEL_W, y + 3, plot_w, ROW_H - 6))
        out.append('<text class="row-label" x="%d" y="%s" text-anchor="end">%s</text>'
                   % (LABEL_W - 8, _num(mid + 4), escape(name)))
        if not by_row[host]:
            out.append('<text class="muted" x="%d" y="%s">%s</text>'
                       % (LABEL_W + 8, _num(mid + 4), escape(words.get("no_events", "-"))))
        for t, e in by_row[host]:
            x = x_of(t)
            tip = "%s %s: %s" % (t.strftime("%Y-%m-%d %H:%M:%S UTC"), name, e.get("text") or e.get("kind") or "")
            cls = " ".join(c for c, on in (("first-fault", e.get("first_fault")), ("culprit-fault", e.get("culprit_fault")))
                           if on) or _kind_class(e.get("kind"))
            r = 7 if e.get("first_fault") or e.get("culprit_fault") else 5
            out.append('<circle class="ev %s" cx="%s" cy="%s" r="%d"><title>%s</title></circle>'
                       % (cls, _num(x), _num(mid), r, escape(tip[:400])))
        out.append('</g>')
    # the marks a reader looks for first, drawn over the rows with a label above them
    for t, e in placed:
        if e.get("kind") == "job_start":
            out.append(_marker(x_of(t), TOP, axis_y, "mark-start", words.get("job_start", "job start"), "start"))
            break
    for t, e in placed:
        if e.get("first_fault") and not e.get("culprit_fault"):
            out.append(_marker(x_of(t), TOP, axis_y, "mark-fault", words.get("first_fault", "first fault"), "end"))
            break
    for t, e in placed:
        if e.get("culprit_fault"):
            # the fault that stopped the job: the first fault's own mark when it is the same event
            cls = "mark-fault mark-culprit" if e.get("first_fault") else "mark-culprit"
            out.append(_marker(x_of(t), TOP, axis_y, cls, words.get("culprit_fault", "culprit's fault"), "end"))
            break
    for t, e in placed:
        if "watchdog" in str(e.get("kind") or ""):
            out.append(_marker(x_of(t), TOP, axis_y, "mark-watchdog", words.get("watchdog", "watchdog"), "start"))
            break
    out.append('</svg>')
    return "".join(out)


def _marker(x, top, bottom, cls, label, anchor):
    # a label right of the line reads 'start'; one that would run off the right edge flips
    nudge = 4 if anchor == "start" else -4
    if anchor == "start" and x > WIDTH - 160:
        anchor, nudge = "end", -4
    if anchor == "end" and x < LABEL_W + 120:
        anchor, nudge = "start", 4
    return ('<g class="%s"><line x1="%s" y1="%d" x2="%s" y2="%d"/><text x="%s" y="%d" text-anchor="%s">%s</text></g>'
            % (cls, _num(x), top - 4, _num(x), bottom, _num(x + nudge), top - 8, anchor, escape(label)))


def rate_svg(by_epoch, failed_at, words):
    """The iteration rate per epoch ({epoch: it/s}) as a line, with the failure marked at
    failed_at {epoch, progress}; words: {"title", "epoch", "rate", "failed"}. '' without
    two points to draw."""
    points = []
    for k, v in (by_epoch or {}).items():
        try:
            points.append((float(k), float(v)))
        except (TypeError, ValueError):
            continue
    points.sort()
    if len(points) < 2:
        return ""
    fail_x = None
    fa = failed_at if isinstance(failed_at, dict) else {}
    try:
        if fa.get("epoch") is not None:
            fail_x = float(fa["epoch"]) - 1 + float(fa.get("progress") or 0)  # epoch N runs from N-1 to N
    except (TypeError, ValueError):
        fail_x = None
    # epoch N runs from N-1 to N: its rate sits mid-epoch, or at the failure when it is the failing epoch
    points = [(e, r, e - 0.5 if fail_x is None or not e - 1 <= fail_x <= e else min(e - 0.5, fail_x))
              for e, r in points]
    x_lo = min(p[0] for p in points) - 1
    x_hi = max([p[0] for p in points] + ([fail_x] if fail_x is not None else []))
    y_hi = max(p[1] for p in points) * 1.15 or 1.0
    left, right, top, bottom, height = 60, WIDTH - RIGHT, 28, 220, 256
    plot_w, plot_h = right - left, bottom - top

    def x_of(ep):
        return left + plot_w * (ep - x_lo) / max(x_hi - x_lo, 1)

    def y_of(rate):
        return bottom - plot_h * rate / y_hi

    out = ['<svg class="chart rate" width="100%%" viewBox="0 0 %d %d" role="img" '
           'aria-label="%s"><title>%s</title>' % (WIDTH, height, _attr(words.get("title", "")),
                                                   escape(words.get("title", "")))]
    out.append('<g class="axis"><line x1="%d" y1="%d" x2="%d" y2="%d"/><line x1="%d" y1="%d" x2="%d" y2="%d"/>'
               % (left, bottom, right, bottom, left, top, left, bottom))
    for frac in (0, 0.5, 1):
        rate = y_hi / 1.15 * frac
        out.append('<text x="%d" y="%s" text-anchor="end">%s</text>' % (left - 6, _num(y_of(rate) + 4), _num(rate)))
    step = max(1, int(round((x_hi - x_lo) / 10.0)))
    ep = int(x_lo) + 1
    while ep <= x_hi:
        if ep % step == 0 or ep == int(x_lo) + 1:
            out.append('<text x="%s" y="%d" text-anchor="middle">%d</text>' % (_num(x_of(ep - 0.5)), bottom + 16, ep))
        ep += 1
    out.append('<text class="axis-note" x="%d" y="%d" text-anchor="end">%s</text>'
               % (right, bottom + 32, escape(words.get("epoch", "epoch"))))
    out.append('<text class="axis-note" x="%d" y="%d">%s</text></g>' % (left, top - 10, escape(words.get("rate", ""))))
    coords = " ".join("%s,%s" % (_num(x_of(x)), _num(y_of(r))) for _e, r, x in points)
    out.append('<polyline class="rate-line" points="%s"/>' % coords)
    for e, r, x in points:
        out.append('<circle class="rate-dot" cx="%s" cy="%s" r="3"><title>epoch %s: %s it/s</title></circle>'
                   % (_num(x_of(x)), _num(y_of(r)), _num(e), _num(r)))
    if fail_x is not None:
        x = x_of(fail_x)
        out.append(_marker(x, top + 8, bottom, "mark-fail", words.get("failed", "failed"), "end"))
    out.append('</svg>')
    return "".join(out)
