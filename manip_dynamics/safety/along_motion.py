"""Power and force limiting along a sampled motion: every monitored point's ratio over
time, before and after retiming, and the standard's shortcut beside the
configuration-dependent effective mass.

A motion sampled at times t_k (K,) s with q_k, qd_k (K, n) and one body region give, per
sample k and monitored point i (``SafetyMonitor.assess``, :mod:`.assessment`):

    m_ki      the point's effective mass along its own velocity, kg (+inf: cannot move so)
    v_max,ki  = F_T / sqrt(mu_ki k_H),  mu_ki = (1/m_H + 1/m_ki)^-1,  m/s
    rho_ki    = |v_ki| / v_max,ki       (> 1: faster than the region permits)

Retiming: ``check_trajectory``'s s = max(1, max_ki rho_ki); the retimed motion passes the
same q_k at t_k s with qd_k / s. Every |v_ki| scales by 1/s and m_ki, v_max,ki do not
(the direction of motion is unchanged), so the retimed ratios are rho_ki / s; they are
recomputed here from qd_k / s (a check of that property, not an assumption). That retiming
never speeds a motion up; s* = max_ki rho_ki is the uniform time scaling that puts the
motion exactly at its limit (s* < 1: it could run 1/s* times faster; s = max(1, s*)), with
its ratios recomputed from qd_k / s* as well.

The standard's shortcut m_R = M/2 + m_L (``simplified_robot_mass``) has one constant
v_max,S. At sample k the governing point w_k is the one of largest ratio (the monitor's
worst), and

    c_k = v_max,S / v_max,k,w_k

c_k > 1: the shortcut allows a speed that is unsafe for the point that governs there (its
real effective mass exceeds m_R); c_k < 1: the shortcut is conservative by that factor.
Where no monitored point moves (every speed 0, e.g. the start from rest) nothing governs:
c_k = nan and ``moving[k]`` is False; ``unsafe_fraction`` is the share of the moving
samples with c_k > 1 (0 if no sample moves). Samples count equally: for a motion sampled
at a fixed rate (the demo's 100 Hz) that is the share of the motion's time.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .assessment import SafetyMonitor, _times, _waypoints, check_trajectory
from .points import default_points


@dataclass
class MotionSafety:
    """The analysis of one sampled motion (K samples, P monitored points; module doc).

    t (K,) s; labels (P,) of the points; effective_mass, speed, v_max, ratio (K, P) in kg,
    m/s, m/s, 1; worst (K,) index of the governing point; scale s >= 1; t_retimed (K,) = t s;
    ratio_retimed (K, P) from qd / s; limit_scale s* (1 if nothing moves), t_at_limit (K,)
    = t s*, ratio_at_limit (K, P) from qd / s*; simplified_mass m_R (kg) and
    simplified_v_max (m/s) of the shortcut; moving (K,) bool; shortcut_ratio c (K,) (nan
    where not moving); unsafe_fraction in [0, 1]."""
    t: np.ndarray
    labels: tuple
    effective_mass: np.ndarray
    speed: np.ndarray
    v_max: np.ndarray
    ratio: np.ndarray
    worst: np.ndarray
    scale: float
    t_retimed: np.ndarray
    ratio_retimed: np.ndarray
    limit_scale: float
    t_at_limit: np.ndarray
    ratio_at_limit: np.ndarray
    simplified_mass: float
    simplified_v_max: float
    moving: np.ndarray
    shortcut_ratio: np.ndarray
    unsafe_fraction: float

    @property
    def worst_sample(self):
        """Index k of the largest ratio of the whole motion."""
        return int(np.argmax(self.ratio.max(axis=1)))

    @property
    def worst_ratio(self):
        """max_ki rho_ki (before retiming)."""
        return float(self.ratio.max())

    def governing(self, field):
        """``field`` (K, P) (e.g. effective_mass, v_max) at each sample's governing point."""
        return getattr(self, field)[np.arange(len(self.t)), self.worst]


def safety_along_motion(model, region, t, q, qd, points=None, contact_area=None):
    """MotionSafety of the motion (t (K,) s, q (K, n), qd (K, n)) for ``region`` (a
    BodyRegion, e.g. ``BodyModel.load()["hands_fingers"]``); ``points`` default
    ``default_points(model)``; ``contact_area`` (m^2) as in SafetyMonitor. InputError names
    q, qd or t when empty, of the wrong shape, not finite, or t decreasing."""
    n = model.n
    q = _waypoints(q, "q", n)
    qd = _waypoints(qd, "qd", n, len(q))
    t = _times(t, "t", len(q))
    monitor = SafetyMonitor(model, default_points(model) if points is None else points,
                            region, contact_area)
    before = _assess_all(monitor, q, qd)
    check = check_trajectory(monitor, q, qd, t)
    after = _assess_all(monitor, q, check.velocities)
    top = float(before["ratio"].max())
    s_star = top if top > 0 else 1.0
    at_limit = _assess_all(monitor, q, qd / s_star)
    moving = before["speed"].max(axis=1) > 0
    k = np.arange(len(t))
    with np.errstate(invalid="ignore"):
        c = np.where(moving, monitor.simplified_v_max / before["v_max"][k, before["worst"]],
                     np.nan)
    unsafe = float((c[moving] > 1).mean()) if moving.any() else 0.0
    return MotionSafety(
        t=t, labels=tuple(p.label for p in monitor.points),
        effective_mass=before["effective_mass"], speed=before["speed"],
        v_max=before["v_max"], ratio=before["ratio"], worst=before["worst"],
        scale=check.scale, t_retimed=check.time_from_start, ratio_retimed=after["ratio"],
        limit_scale=s_star, t_at_limit=t * s_star, ratio_at_limit=at_limit["ratio"],
        simplified_mass=monitor.simplified_mass, simplified_v_max=monitor.simplified_v_max,
        moving=moving, shortcut_ratio=c, unsafe_fraction=unsafe)


def _assess_all(monitor, q, qd):
    """SafetyMonitor.assess at every sample, stacked: effective_mass, speed, v_max, ratio
    (K, P) and worst (K,)."""
    states = [monitor.assess(q[k], qd[k]) for k in range(len(q))]
    return dict(effective_mass=np.array([s.motion.effective_mass for s in states]),
                speed=np.array([s.motion.speed for s in states]),
                v_max=np.array([s.v_max for s in states]),
                ratio=np.array([s.ratio for s in states]),
                worst=np.array([s.worst for s in states], dtype=int))
