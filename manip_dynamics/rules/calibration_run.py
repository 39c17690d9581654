"""The dynamics node's contact calibration without ROS: collecting the observer's samples.

A :class:`CalibrationRun` is what ``~/calibrate_contact`` (or the start-up calibration,
``contact.calibration.startup_duration``) asks of the state listener: every sample the
observer integrates from now on, (t, q, qd, r) with r the RAW residual (before any bias:
the bias is what is learned), until the stamps span ``duration`` seconds. The learning
itself is the core's (:mod:`manip_dynamics.core.contact.calibration`); the rules here are
only what is collected and when it is complete:

* ``duration`` must be finite and > 0 and at most :data:`MAX_DURATION` s (the samples are
  kept in memory: 10 minutes at 1 kHz is 600 000 states);
* the span is measured on the joint states' stamps (the observer's t), not the wall clock,
  so a replayed log or a simulation calibrates on its own time;
* a run ends with ``duration`` collected (:attr:`CalibrationRun.complete`) or is given up
  (:meth:`CalibrationRun.abandon`, e.g. no state within the caller's wall-clock wait, or
  the robot model changed underneath it: the samples would mix two models).

Nothing here imports rclpy.
"""
from __future__ import annotations

import math
import threading
from typing import Optional

import numpy as np

from manip_dynamics.core.errors import InputError

MAX_DURATION = 600.0        # s of stamps one run may collect
STAMP_RESOLUTION = 1e-9     # s: a span this close to the duration is the duration


def check_duration(duration) -> float:
    """``duration`` as a float, or InputError saying why it cannot be collected."""
    try:
        value = float(duration)
    except (TypeError, ValueError):
        raise InputError(f"duration must be a number of seconds, got {duration!r}") from None
    if not math.isfinite(value) or value <= 0.0:
        raise InputError(f"duration must be finite and > 0 s, got {value}")
    if value > MAX_DURATION:
        raise InputError(f"duration {value} s is longer than the {MAX_DURATION:g} s a "
                         "calibration may collect")
    return value


class CalibrationRun:
    """Samples of one calibration (module docstring). ``add`` is called by the state
    listener's thread, ``wait`` / ``samples`` by the caller's: the hand-over is the
    ``finished`` event (set once, on completion or abandon)."""

    def __init__(self, duration: float, source: str, joint_names=None):
        self.duration = check_duration(duration)
        self.source = source                  # "service" or "startup"
        # the model's joints (None: those of the first sample's model, :meth:`joints`)
        self.joint_names = None if joint_names is None else tuple(joint_names)
        self.finished = threading.Event()
        self.reason: Optional[str] = None     # why abandoned (None: complete or running)
        self._t: list = []
        self._q: list = []
        self._qd: list = []
        self._r: list = []
        self.last_stamp = None                # (sec, nanosec) of the last state collected

    @property
    def complete(self) -> bool:
        return self.finished.is_set() and self.reason is None

    @property
    def span(self) -> float:
        """Seconds of stamps collected so far."""
        return self._t[-1] - self._t[0] if len(self._t) > 1 else 0.0

    @property
    def count(self) -> int:
        """Samples collected so far."""
        return len(self._t)

    def joints(self, joint_names) -> bool:
        """Whether samples of a model with ``joint_names`` belong to this run (the first
        model seen fixes them when none were given); a model with other joints abandons
        the run (-> False)."""
        names = tuple(joint_names)
        if self.joint_names is None:
            self.joint_names = names
        if names != self.joint_names:
            self.abandon("the robot model changed during the calibration (joints "
                         f"{', '.join(names)} instead of {', '.join(self.joint_names)})")
            return False
        return True

    def add(self, t: float, q, qd, r, stamp=None) -> bool:
        """One integrated sample (t s, q, qd, r raw (n,) in model order); copies the
        arrays. -> True when this sample completed the run (the caller then learns)."""
        if self.finished.is_set():
            return False
        self._t.append(float(t))
        self._q.append(np.array(q, dtype=float))
        self._qd.append(np.array(qd, dtype=float))
        self._r.append(np.array(r, dtype=float))
        self.last_stamp = stamp
        if self.span >= self.duration - STAMP_RESOLUTION:      # (t is a float of stamps)
            self.finished.set()
            return True
        return False

    def abandon(self, reason: str) -> None:
        """Give the run up (no-op once finished); ``reason`` ends up in the answer."""
        if not self.finished.is_set():
            self.reason = reason
            self.finished.set()

    def wait(self, timeout: float) -> bool:
        """Block until finished or ``timeout`` s passed; -> finished."""
        return self.finished.wait(timeout)

    def samples(self):
        """(t (N,), q (N, n), qd (N, n), r (N, n)) collected (N may be 0)."""
        n = len(self.joint_names or ())
        if not self._t:
            empty = np.zeros((0, n))
            return np.zeros(0), empty, empty.copy(), empty.copy()
        return (np.array(self._t), np.array(self._q), np.array(self._qd), np.array(self._r))


__all__ = ["CalibrationRun", "MAX_DURATION", "check_duration"]
