"""How a reader's time grows with its input, measured rather than bounded by the clock.

A wall-clock bound ("< 20 s") fails on a loaded CI machine and passes a quadratic reader on a fast
one; the ratio of two sizes does neither: a load that slows the machine slows both runs alike, and
the time is the process's own CPU time, which other processes do not take.
Linear work grows by the size factor, quadratic work by its square (minutes at 1 MiB). Speed
targets themselves are benchmark scripts' (tests/benchmarks), not tests'.
"""

import gc
import time


def seconds(fn, arg, tries=1):
    """fn(arg)'s best time, in this process's CPU seconds (time.process_time: what other processes on
    the machine do -- make test runs three pytest processes on CI's two cores -- is not charged to it);
    Python's cyclic collector is run before and held off during the call, so a test process's large
    heap (the whole suite's) is not charged to the bigger input's allocations."""
    best = float("inf")
    for _ in range(tries):
        gc.collect()
        gc.disable()
        try:
            t0 = time.process_time()
            fn(arg)
            best = min(best, time.process_time() - t0)
        finally:
            gc.enable()
    return best


def assert_linear(fn, make, size, factor=8, label=""):
    """fn(make(size * factor)) costs at most a few times factor x fn(make(size)): not factor ** 2.
    The small input is timed twice (its best), and a 0.25 s floor absorbs a scheduler's hiccup."""
    small = seconds(fn, make(size), tries=2)
    big = seconds(fn, make(size * factor))
    assert big < 3 * factor * small + 0.25, "%s: %.3f s at %d, %.3f s at %d (linear: ~%.3f s)" % (
        label, small, size, big, size * factor, factor * small)
    return small, big
