"""The last seconds of joint states (q, qd, tau) and the payload estimate over them. No ROS.

:class:`StateBuffer` keeps, in a ring of fixed capacity, the states a dynamics node accepted
(stamp, q, qd and the measured effort tau, model order); a state without velocities or
efforts is not kept. :func:`estimate_from_states` turns a stretch of it into a
:class:`~manip_dynamics.core.identification.payload.PayloadEstimate`:

* ``static_only``: the states at rest (every |qd_j| < rest_speed) are static poses; the
  arm's model explains ``g_arm(q)``, the rest of tau holds the payload
  (core/identification/payload.py). Joint friction at rest can take any value in [-F_c, F_c] and is
  not in the model: use it on a plant without dry friction, or prefer the moving estimate.
* otherwise every state is used: q, qd and tau through the zero-phase filter of
  identification (core/identification.filter_recording, qdd from the filtered qd), then
  ``tau - ID_arm(q, qd, qdd) = Y_frame pi_p`` (friction of the model subtracted; the
  equations of joints slower than ``MIN_SPEED`` dropped: dry friction sticks and slips
  there. On the MuJoCo Panda this took the CoM error from 3-5 mm to 1-2 mm).

``effort_delay`` (s): the efforts describe the torque that long before their stamp. A
simulator that publishes the torque it held over the last period ``h`` (arm_simulator)
has ``effort_delay = h / 2``: the efforts are re-sampled at the stamps by linear
interpolation (the last ones, which would need extrapolation, are dropped).
"""
from __future__ import annotations

import threading

import numpy as np

from manip_dynamics.core.errors import InputError
from manip_dynamics.core.identification.pipeline import filter_recording
from manip_dynamics.core.identification.payload import estimate_payload

DEFAULT_REST_SPEED = 0.01      # rad/s (m/s)
MIN_SPEED = 0.05               # rad/s (m/s): slower joints' equations are not used (moving)


class StateBuffer:
    """Ring buffer of (t s, q, qd, tau) for one set of joint names; thread-safe.

    capacity: states kept (the oldest are overwritten). A state for other joint names (a
    new model) empties the buffer first."""

    def __init__(self, capacity: int = 60_000):
        if capacity < 2:
            raise InputError(f"capacity must be >= 2, got {capacity}")
        self.capacity = int(capacity)
        self._lock = threading.Lock()
        self._names: tuple = ()
        self._names_given = None      # the names object of the last append (identity)
        self._count = 0
        self._t = self._rows = None

    def clear(self) -> None:
        with self._lock:
            self._count = 0

    def append(self, names, t: float, q, qd, tau) -> None:
        """Add one state: t (s), q, qd, tau (n,) in ``names`` order, written in place into
        the ring's next row [q, qd, tau] (no temporaries; ``names`` compared by identity
        first when they are a tuple: a model's joint_names is the same tuple from one state to
        the next).
        InputError (nothing added) when q, qd or tau is not of length len(names)."""
        with self._lock:
            if names is not self._names_given:
                self._use_names(names)
            n = len(self._names)
            if not len(q) == len(qd) == len(tau) == n:
                raise InputError(f"q, qd, tau need {n} values each (one per name), got "
                                 f"{len(q)}, {len(qd)}, {len(tau)}")
            k = self._count % self.capacity
            row = self._rows[k]
            row[:n], row[n:2 * n], row[2 * n:] = q, qd, tau
            self._t[k] = t
            self._count += 1

    def reserve(self, names) -> None:
        """Allocate the ring for ``names`` now (as the first append of them would: a few
        milliseconds for 30 000 states of 7 joints), emptying it unless they equal the
        kept names."""
        with self._lock:
            self._use_names(tuple(names))

    def _use_names(self, names) -> None:
        """Start afresh (an empty ring of 3 len(names) columns) unless ``names`` equal the
        kept ones."""
        key = tuple(names)
        if key != self._names or self._rows is None:
            self._names = key
            self._t = np.zeros(self.capacity)
            self._rows = np.zeros((self.capacity, 3 * len(key)))
            self._count = 0
        self._names_given = names if type(names) is tuple else None   # (a list may change)

    def last(self, duration: float = 0.0):
        """(names, t (N,), q, qd, tau (N, n)) of the states within ``duration`` s of the
        newest (0: all kept), oldest first."""
        with self._lock:
            count = min(self._count, self.capacity)
            start = self._count - count
            index = np.arange(start, self._count) % self.capacity
            t, rows, names = self._t[index].copy(), self._rows[index].copy(), self._names
        if duration > 0 and len(t):
            keep = t >= t[-1] - duration
            t, rows = t[keep], rows[keep]
        n = len(names)
        return names, t, rows[:, :n], rows[:, n:2 * n], rows[:, 2 * n:]


def delay_efforts(t, tau, delay: float):
    """(keep mask (N,), tau at the stamps): tau[k] taken to be the torque at t[k] - delay,
    linearly interpolated back to t[k]; stamps beyond t[-1] - delay are not kept."""
    if delay <= 0:
        return np.ones(len(t), bool), tau
    keep = t <= t[-1] - delay
    shifted = np.stack([np.interp(t[keep], t - delay, col) for col in tau.T], axis=1)
    return keep, shifted


def estimate_from_states(model, frame, t, q, qd, tau, static_only=False,
                         rest_speed=DEFAULT_REST_SPEED, effort_delay=0.0, cutoff=10.0):
    """PayloadEstimate at ``frame`` from states t (N,), q, qd, tau (N, n) (module docstring).

    ``model``: the arm without the payload. Raises InputError (too few states, too few at
    rest, poses that do not determine the payload, states not increasing in time)."""
    if len(t) < 2:
        raise InputError(f"{len(t)} buffered states: need joint states with velocities and "
                         "efforts")
    keep, tau = delay_efforts(t, tau, effort_delay)
    t, q, qd = t[keep], q[keep], qd[keep]
    if static_only:
        rest = np.all(np.abs(qd) < rest_speed, axis=1)
        if rest.sum() < 2:
            raise InputError(f"{int(rest.sum())} of {len(t)} buffered states are at rest "
                             f"(all |qd| < {rest_speed} rad/s); need at least 2 poses")
        return estimate_payload(model, frame, q[rest], tau[rest])
    fs = (len(t) - 1) / (t[-1] - t[0]) if t[-1] > t[0] else 0.0
    samples = filter_recording(t, q, qd, tau, cutoff=min(cutoff, 0.4 * fs))
    return estimate_payload(model, frame, samples.q, samples.tau, samples.qd, samples.qdd,
                            friction=True, min_speed=MIN_SPEED)
