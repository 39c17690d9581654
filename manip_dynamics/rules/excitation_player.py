"""Playing an excitation trajectory file (core/identification/excitation.py) as a controller
reference. No ROS.

A :class:`~manip_dynamics.core.identification.excitation.FourierTrajectory` starts and ends at rest
at ``q(0)``; the arm is usually elsewhere when playing starts. The reference is therefore,
with t the time since playing started and q_s the measured start position:

    lead-in, 0 <= t < T_in:       q_d = q_s + (q(0) - q_s) s(t / T_in),
                                  s(x) = 10 x^3 - 15 x^4 + 6 x^5   (quintic: rest to rest,
                                  zero acceleration at both ends)
    excitation, T_in <= t <= T_in + T:   q_d, qd_d, qdd_d = the series at t - T_in
    after:                         q_d = q(0), at rest (the series ends where it began)

T_in = max_j |q(0)_j - q_s_j| / LEAD_IN_SPEED (peak lead-in speed 1.875 x LEAD_IN_SPEED).
Joints the file does not name hold q_s; a file naming a joint the arm lacks is refused.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from manip_dynamics.core.errors import InputError
from manip_dynamics.core.identification.excitation import FourierTrajectory

LEAD_IN_SPEED = 0.3      # rad/s (m/s): the mean speed of the lead-in of the farthest joint


def load_trajectory(path: str) -> FourierTrajectory:
    """The trajectory in ``path``; InputError naming the file and the problem."""
    try:
        return FourierTrajectory.load(path)
    except InputError:
        raise
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"excitation file {path!r}: {type(exc).__name__}: {exc}") from None


@dataclass(frozen=True)
class ExcitationPlayer:
    """The reference of the module docstring for the arm's joints ``joint_names``.

    trajectory: the file's series; q_start (n,): measured position when playing started,
    in ``joint_names`` order."""

    trajectory: FourierTrajectory
    joint_names: tuple
    q_start: np.ndarray
    columns: np.ndarray        # index into joint_names of each trajectory joint
    lead_in: float             # T_in, s

    @classmethod
    def start(cls, trajectory: FourierTrajectory, joint_names, q_start) -> "ExcitationPlayer":
        names = tuple(joint_names)
        unknown = [j for j in trajectory.joint_names if j not in names]
        if unknown:
            raise InputError(f"excitation trajectory names joints the arm lacks: {unknown} "
                             f"(arm: {', '.join(names)})")
        columns = np.array([names.index(j) for j in trajectory.joint_names], dtype=int)
        q_start = np.array(q_start, dtype=float)
        q0 = trajectory.sample(0.0)[0][0]
        lead_in = float(np.max(np.abs(q0 - q_start[columns]), initial=0.0)) / LEAD_IN_SPEED
        return cls(trajectory, names, q_start, columns, lead_in)

    @property
    def end_time(self) -> float:
        """Time (s since start) after which the reference rests at q(0)."""
        return self.lead_in + self.trajectory.duration

    def reference(self, t: float):
        """(q_d, qd_d, qdd_d), each (n,) in ``joint_names`` order, at t s since start."""
        q_d = self.q_start.copy()
        qd_d, qdd_d = np.zeros_like(q_d), np.zeros_like(q_d)
        q0 = self.trajectory.sample(0.0)[0][0]
        if t < self.lead_in:
            x = max(t, 0.0) / self.lead_in
            s = x ** 3 * (10 - 15 * x + 6 * x * x)
            ds = 30 * x * x * (1 - x) ** 2 / self.lead_in
            dds = 60 * x * (1 - x) * (1 - 2 * x) / self.lead_in ** 2
            dq = q0 - self.q_start[self.columns]
            q_d[self.columns] = self.q_start[self.columns] + dq * s
            qd_d[self.columns], qdd_d[self.columns] = dq * ds, dq * dds
        elif t <= self.end_time:
            q, qd, qdd = self.trajectory.sample(t - self.lead_in)
            q_d[self.columns], qd_d[self.columns], qdd_d[self.columns] = q[0], qd[0], qdd[0]
        else:
            q_d[self.columns] = q0
        return q_d, qd_d, qdd_d
