"""Python's garbage collector and a 1 kHz node (ROS-free).

A full (generation 2) collection walks every tracked object of the process. After rclpy,
numpy, numba and a warmed-up robot model are loaded that is about 165000 objects and a
pause of 30-115 ms (measured on the 2-core machine; docs/realtime.md): 30-115 input
periods at 1 kHz in which the node neither reads nor publishes. Collections of the young
generations (0 and 1) cost microseconds.

``freeze()`` collects once and moves every object alive to the permanent generation
(``gc.freeze``, Python 3.7+): later collections, full ones included, walk only the
objects made since. The nodes call it once their start-up is done and again after a
model change (the new model's objects), never from the hot path.

``GcPauses`` times every collection through ``gc.callbacks`` and hands out, per report
interval, the count of collections per generation and the longest pause, for
/diagnostics::

    pauses = GcPauses()
    ...
    counts, longest = pauses.take()     # since the last take: (n0, n1, n2), seconds
"""
from __future__ import annotations

import gc
import time
from typing import Callable


def freeze() -> None:
    """Collect garbage now, then exclude every surviving object from later collections."""
    gc.collect()
    gc.freeze()


class GcPauses:
    """Counts and times the collector's runs (see the module docstring). Registered on
    construction, unregistered by :meth:`close`. The callback runs inside the collector,
    on whichever thread triggered it: two clock reads and a few integer operations."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter):
        self._clock = clock
        self._start = 0.0
        self._counts = [0, 0, 0]
        self._longest = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start = self._clock()
            return
        pause = self._clock() - self._start
        self._counts[info["generation"]] += 1
        if pause > self._longest:
            self._longest = pause

    def take(self) -> tuple[tuple[int, int, int], float]:
        """((collections of generation 0, 1, 2), longest pause in s) since the last take."""
        counts, longest = tuple(self._counts), self._longest
        self._counts = [0, 0, 0]
        self._longest = 0.0
        return counts, longest

    def close(self) -> None:
        if self._callback in gc.callbacks:
            gc.callbacks.remove(self._callback)
