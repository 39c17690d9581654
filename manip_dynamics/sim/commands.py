"""The simulator's command rules, without ROS (times are ``time.monotonic()`` seconds).

* The latest valid command is applied until it is older than ``timeout`` (by arrival);
  then the motor torque is zero (a drive whose command stream stopped).
* Lockstep: a published state is answered by a command carrying its stamp (what the
  computed_torque_controller sends) or, for an unstamped command, by any command arriving
  after it was published.
"""
from __future__ import annotations

import numpy as np


class CommandHold:
    """Holds the latest command tau (n,) with its arrival time and stamp."""

    def __init__(self, n: int, timeout: float):
        self.n = n
        self.timeout = float(timeout)
        self.tau = np.zeros(n)
        self.arrival = None            # monotonic time of the latest valid command
        self.stamp = None              # (sec, nanosec) it carried, None if unstamped
        self.published_stamp = None    # (sec, nanosec) of the latest published state
        self.published_at = None       # monotonic time it was published
        self.timed_out_reported = False

    def accept(self, tau, now: float, stamp=None):
        self.tau = np.asarray(tau, dtype=float).reshape(self.n)
        self.arrival = now
        self.stamp = stamp if stamp and tuple(stamp) != (0, 0) else None
        self.timed_out_reported = False

    def drop(self):
        """Forget the held command (the state it answered is gone: a reset)."""
        self.tau = np.zeros(self.n)
        self.arrival = self.stamp = None
        self.timed_out_reported = False

    def torque(self, now: float) -> np.ndarray:
        """The command in force: the latest one if fresh, else zeros."""
        if self.arrival is not None and now - self.arrival <= self.timeout:
            return self.tau
        return np.zeros(self.n)

    def newly_timed_out(self, now: float) -> bool:
        """True once when a command stream stops (for a single warning)."""
        if self.arrival is None or now - self.arrival <= self.timeout or self.timed_out_reported:
            return False
        self.timed_out_reported = True
        return True

    def published(self, stamp, now: float):
        self.published_stamp, self.published_at = tuple(stamp), now

    def answered(self) -> bool:
        """Did a command answer the last published state (lockstep)?"""
        if self.published_at is None or self.arrival is None:
            return self.published_at is None
        if self.stamp is not None:
            return self.stamp >= self.published_stamp
        return self.arrival >= self.published_at

    def waited(self, now: float) -> float:
        """Seconds since the last state was published."""
        return 0.0 if self.published_at is None else now - self.published_at


class MeasurementNoise:
    """Gaussian noise on the published position, velocity and effort (standard deviations
    in rad, rad/s, N*m; 0 = exact)."""

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.sigma = {"position": 0.0, "velocity": 0.0, "effort": 0.0}

    def __call__(self, field: str, x: np.ndarray) -> np.ndarray:
        sigma = self.sigma[field]
        return x + self.rng.normal(0.0, sigma, np.shape(x)) if sigma > 0 else x
