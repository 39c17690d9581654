"""Power and force limiting along a motion: each monitored point's speed against its limit.

For one state and a body region (ISO/TS 15066, transient contact), every monitored point i
gets its effective mass m_i along its motion (:mod:`.points`), the permissible speed
v_max,i = F_T / sqrt(mu_i k) with mu_i = (1/m_H + 1/m_i)^-1 (:mod:`.limits`), and the ratio
rho_i = |v_i| / v_max,i (> 1: too fast for that region). Scaling every joint velocity by s
scales every |v_i| by s and leaves each direction, m_i and v_max,i unchanged, so the largest
uniform speed factor that keeps every point within its limit is

    speed_scale = min(1, min_i v_max,i / |v_i|) = min(1, 1 / max_i rho_i).

A trajectory (waypoints q_k, qd_k at times t_k) is compliant after retiming by
s = max(1, max_k,i rho_k,i): times t_k s, velocities qd_k / s, accelerations qdd_k / s^2
(the same path, s times slower). No s exists when a waypoint moves a point whose
permissible speed is 0 (a region that permits no transient contact: skull and forehead,
face; rho = inf): slowing down never brings a moving point to rest, so such a trajectory
is refused, as is an s whose retimed times overflow or exceed a caller's ``max_time``
(e.g. what a message's time field holds).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.errors import InputError
from ..core.dynamics.launch import direct_call
from . import kernel as K
from .limits import permissible_force, permissible_speed, simplified_robot_mass
from .points import PointKinematics, PointMotion


@dataclass
class SafetyState:
    """One state's assessment: motion (PointMotion), v_max (P,) m/s, ratio (P,), worst (index
    of the largest ratio), speed_scale in [0, 1], and the standard's shortcut for comparison:
    simplified_mass m_R = M/2 + m_L (kg) and simplified_v_max (m/s)."""
    motion: object
    v_max: np.ndarray
    ratio: np.ndarray
    worst: int
    speed_scale: float
    simplified_mass: float
    simplified_v_max: float


class SafetyMonitor:
    """Speed limits of a model's monitored points for one body region (see module doc).

    model: a RobotModel (payloads included through ``with_payload``); points: a list of
    MonitoredPoint (``default_points``); region: a BodyRegion; contact_area (m^2, optional):
    use the pressure form as well (the smaller limit wins)."""

    def __init__(self, model, points, region, contact_area=None):
        self.kinematics = PointKinematics(model, points)
        self.region = region
        self.contact_area = contact_area
        self._limit = (float(permissible_force(region, contact_area)),
                       float(region.effective_mass), float(region.spring_constant))
        self.simplified_mass = simplified_robot_mass(model)
        self.simplified_v_max = float(permissible_speed(region, self.simplified_mass,
                                                        contact_area))

    @property
    def points(self):
        return self.kinematics.points

    def assess(self, q, qd):
        """SafetyState at (q, qd) (n,) each (its arrays: views of a new table)."""
        table = np.empty(self.kinematics.table_shape)
        worst, scale = self.assess_into(q, qd, table)
        return SafetyState(PointMotion.from_table(table), table[:, K.V_MAX],
                           table[:, K.RATIO], worst, scale, self.simplified_mass,
                           self.simplified_v_max)

    def assess_into(self, q, qd, table):
        """The assessment at (q, qd) into ``table`` (P, kernel.COLUMNS) float64, C-contiguous:
        per point the columns of :mod:`.kernel` (position, speed, direction, effective mass,
        v_max, ratio); -> (worst, speed_scale). No Python objects per state besides those
        two: the node's per-state path."""
        kin = self.kinematics
        kin.check_table(table)
        q, qd = kin.state(q, qd)
        F, m_H, k = self._limit
        status, worst = direct_call(K.assess_points, (kin._bodies, q, qd, kin._fb, kin._X, F,
                                                      m_H, k, table))
        if status != K.OK:
            kin.refuse(q, qd)
        top = table[worst, K.RATIO]
        return worst, (1.0 if top <= 1.0 else float(1.0 / top))


@dataclass
class TrajectoryCheck:
    """Per waypoint (K): worst point index and its ratio; scale s >= 1 (1: compliant as is);
    the retimed time_from_start (K,) s, velocities (K, n), accelerations (K, n) or None."""
    worst: np.ndarray
    ratio: np.ndarray
    scale: float
    time_from_start: np.ndarray
    velocities: np.ndarray
    accelerations: np.ndarray | None


def check_trajectory(monitor, positions, velocities, time_from_start, accelerations=None,
                     max_time=None):
    """Assess every waypoint and retime the trajectory by s = max(1, max ratio) (module doc).

    positions, velocities (K, n) rad or m and rad/s or m/s; time_from_start (K,) s,
    non-decreasing; accelerations (K, n) or None; max_time (s, optional): the largest
    |time_from_start| the retimed trajectory may have (a message's limit). InputError,
    naming the waypoint and point, when no retiming makes the trajectory safe (a moving
    point whose permissible speed is 0: a region without transient contact) or when the
    retimed times are not finite or exceed max_time."""
    n = monitor.kinematics.model.n
    P = _waypoints(positions, "positions", n)
    V = _waypoints(velocities, "velocities", n, len(P))
    t = _times(time_from_start, "time_from_start", len(P))
    A = None if accelerations is None else _waypoints(accelerations, "accelerations", n, len(P))
    worst = np.empty(len(P), dtype=int)
    ratio = np.empty(len(P))
    table = np.empty(monitor.kinematics.table_shape)
    for k in range(len(P)):
        worst[k] = monitor.assess_into(P[k], V[k], table)[0]
        ratio[k] = table[worst[k], K.RATIO]
    _check_retimable(monitor, worst, ratio, t, max_time)
    scale = max(1.0, float(ratio.max()))
    return TrajectoryCheck(worst, ratio, scale, t * scale, V / scale,
                           None if A is None else A / scale ** 2)


def _check_retimable(monitor, worst, ratio, t, max_time):
    """InputError unless the retiming by s = max(1, max ratio) exists and its times t s are
    finite and within max_time (s, None: no limit); worst, ratio (K,) per waypoint."""
    labels = [p.label for p in monitor.points]
    if not np.isfinite(ratio).all():
        k = int(np.argmax(~np.isfinite(ratio)))
        moving = f"waypoint {k} moves {labels[worst[k]]!r}"
        if monitor.region.transient_force() == 0:
            raise InputError(
                f"body region {monitor.region.key!r} permits no transient contact "
                f"(ISO/TS 15066): {moving}, and the trajectory cannot be made safe by "
                f"slowing down (only by not moving)")
        raise InputError(f"the permissible speed is 0 to machine precision (contact_area "
                         f"{monitor.contact_area} m^2): {moving}, and the trajectory cannot "
                         f"be made safe by slowing down")
    k = int(ratio.argmax())
    scale = max(1.0, float(ratio[k]))
    last = float(np.abs(t).max()) * scale          # (a Python float: inf on overflow)
    limit = np.inf if max_time is None else float(max_time)
    if not (np.isfinite(last) and last <= limit):
        beyond = (f"beyond max_time = {limit:.10g} s" if np.isfinite(last)
                  else "overflowing float64")
        raise InputError(
            f"the retiming s = {scale:.3g} (the ratio of {labels[worst[k]]!r} at waypoint "
            f"{k}) would put time_from_start at {last:.3g} s, {beyond}: refused")


def _times(t, name, count):
    """t as (count,) finite non-decreasing seconds, else InputError naming ``name``."""
    t = np.asarray(t, dtype=float)
    if t.shape != (count,) or not np.isfinite(t).all() or (np.diff(t) < 0).any():
        raise InputError(f"{name} must be {count} finite non-decreasing times (s), got "
                         f"shape {t.shape}")
    return t


def _waypoints(x, name, n, count=None):
    a = np.asarray(x, dtype=float)
    if a.ndim != 2 or a.shape[1] != n or (count is not None and a.shape[0] != count):
        want = f"({count if count is not None else 'K'}, {n})"
        raise InputError(f"{name} must have shape {want}, got {a.shape}")
    if len(a) == 0:
        raise InputError(f"{name} has no waypoints")
    if not np.isfinite(a).all():
        k, j = np.argwhere(~np.isfinite(a))[0]
        raise InputError(f"{name}[{k}][{j}] is {a[k, j]}: must be finite")
    return a
