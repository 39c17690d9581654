"""rules/gc_pauses.py: the collector's runs counted per generation and timed; freeze."""
import gc

from manip_dynamics.rules import gc_pauses


def _garbage(n=2000):
    """n reference cycles that only the collector frees."""
    for _ in range(n):
        a = []
        a.append(a)


def test_counts_collections_per_generation_and_the_longest_pause():
    ticks = iter(range(0, 10_000, 1))          # a fake clock: each read 1 s later

    pauses = gc_pauses.GcPauses(clock=lambda: float(next(ticks)))
    try:
        assert pauses.take() == ((0, 0, 0), 0.0)
        _garbage()
        gc.collect(0)
        gc.collect(1)
        gc.collect(2)
        counts, longest = pauses.take()
        # the three explicit ones at least (allocations may have triggered more gen 0)
        assert counts[0] >= 1 and counts[1] >= 1 and counts[2] == 1
        assert longest == 1.0                   # start and stop: two clock reads apart
        assert pauses.take() == ((0, 0, 0), 0.0)   # take() starts a new interval
    finally:
        pauses.close()
    gc.collect(2)
    assert pauses.take() == ((0, 0, 0), 0.0)    # closed: no longer called
    assert pauses._callback not in gc.callbacks


def test_real_clock_pause_is_positive():
    pauses = gc_pauses.GcPauses()
    try:
        _garbage()
        gc.collect()
        counts, longest = pauses.take()
        assert counts[2] == 1 and longest > 0.0
    finally:
        pauses.close()


def test_freeze_moves_the_live_objects_out_of_collections():
    keep = [[i] for i in range(1000)]
    try:
        gc_pauses.freeze()
        frozen = gc.get_freeze_count()
        assert frozen >= len(keep)
        # a full collection now walks only what was made since: no frozen object moves
        gc.collect()
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
    assert gc.get_freeze_count() == 0
