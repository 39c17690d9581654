"""Progress and a time limit for the derivation and the printing: a slow simplification or
printing reports where it is and stops with a clear message instead of hanging.

:class:`Budget` is used as a context manager around a derivation (the command line: around
the derivation and the printing of its result, so ``--time-limit`` covers both).
``budget.step(stage, done, total)`` reports progress (to the ``progress`` callback:
``progress(stage, done, total, elapsed_s)``; ``begin(stage, total)`` then ``tick()`` counts
the steps of a stage) and raises :class:`DerivationTimeout` once ``seconds`` have passed. A single
sympy call can run long between two steps, so in the main thread a POSIX interval timer
(SIGALRM, every 0.25 s after the limit) raises the same error inside that call; sympy is pure
Python, so the error arrives between two bytecodes. (Elsewhere, e.g. in a worker thread,
only the checks between steps apply.)
"""
from __future__ import annotations

import math
import signal
import threading
import time

from ..core.errors import InputError, ManipDynamicsError


class DerivationTimeout(ManipDynamicsError, TimeoutError):
    """The symbolic derivation or simplification passed its time limit (seconds); the message
    names the stage it was in and how to go on (fewer joints, no --simplify, a larger limit)."""


class Budget:
    """Time limit (``seconds``, None = none) and progress reporting for one derivation."""

    def __init__(self, seconds=None, progress=None):
        if seconds is not None and not (math.isfinite(seconds) and seconds > 0):
            raise InputError(
                f"time limit: must be a finite number of seconds > 0, got {seconds!r}")
        self.seconds, self.progress = seconds, progress
        self.start = time.monotonic()
        self.stage = "start"
        self._timer = False
        self._counted = ["start", 0, 0]

    def elapsed(self):
        return time.monotonic() - self.start

    def expired(self):
        return DerivationTimeout(
            f"symbolic path stopped at its time limit of {self.seconds:g} s "
            f"({self.elapsed():.1f} s elapsed) while {self.stage}; use fewer joints "
            "(--joints), drop --simplify, or raise --time-limit")

    def step(self, stage, done=0, total=0):
        """Report ``stage`` (``done`` of ``total``) and raise if the limit has passed."""
        self.stage = stage if not total else f"{stage} ({done}/{total})"
        if self.progress is not None:
            self.progress(stage, done, total, self.elapsed())
        if self.seconds is not None and self.elapsed() > self.seconds:
            raise self.expired()

    def begin(self, stage, total):
        """Start a stage of ``total`` steps, each reported by :meth:`tick`."""
        self._counted = [stage, 0, total]

    def tick(self):
        """One more step of the stage started by :meth:`begin` (progress, time limit)."""
        self._counted[1] += 1
        self.step(*self._counted)

    def _alarm(self, signum, frame):
        raise self.expired()

    def __enter__(self):
        self.start = time.monotonic()
        if self.seconds is not None and threading.current_thread() is threading.main_thread() \
                and hasattr(signal, "setitimer"):
            self._old = signal.signal(signal.SIGALRM, self._alarm)
            self._timer = True
            try:                    # a tiny limit can fire before ``with`` would call __exit__
                signal.setitimer(signal.ITIMER_REAL, self.seconds, 0.25)
            except DerivationTimeout:
                self.__exit__()
                raise
        return self

    def __exit__(self, *exc):
        if self._timer:
            signal.setitimer(signal.ITIMER_REAL, 0, 0)
            signal.signal(signal.SIGALRM, self._old)
            self._timer = False
        return False
