"""Payload estimation at a frame: mass, centre of mass and (when excited) inertia.

The arm's own model is taken as right; what it does not explain is the payload::

    tau - tau_model(q, qd, qdd) = Y_f(q, qd, qdd) pi_p        (regressor.frame_regressor)

pi_p = [m, m c, I_O] about the frame origin in the frame's axes. At rest (static poses)
only gravity acts and the torque that holds the payload is ``tau_p = J_f^T [-m g;
-(R m c) x g]`` (root axes, R = R_root_frame): linear in (m, m c), the inertia columns of
Y_f are zero. The CoM component along gravity is only
seen if the frame is held in at least two orientations (rank check). Least squares on the
stacked equations; c = (m c) / m; standard deviations from the residual (sigma^2 (Y^T Y)^-1,
propagated to c to first order).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from . import arguments
from .regressor import frame_regressor, inertia_from_parameters


@dataclass(frozen=True)
class PayloadEstimate:
    """mass kg, com (3,) m and inertia (3, 3) kg m^2 about the com (None if not estimated),
    in the frame's axes; mass_std, com_std (3,) one-sigma; residual_rms (n,) N m per joint
    after the fit; rows (equations used)."""

    frame: str
    mass: float
    com: np.ndarray
    inertia: np.ndarray | None
    mass_std: float
    com_std: np.ndarray
    residual_rms: np.ndarray
    rows: int


def estimate_payload(model, frame, q, tau, qd=None, qdd=None, inertia=None, friction=False,
                     min_speed=0.0):
    """Estimate the payload rigidly attached to link ``frame`` from measured joint torques.

    q, tau (N, n) (N >= 2 poses); qd, qdd (N, n) for a moving recording, None for static
    poses (then the residual is tau - g(q)). inertia: estimate the inertia too (default:
    only if qd is given and the stacked 10-column regressor has full rank, condition
    number < 1e6). friction: subtract the model's friction torques. min_speed (rad/s, m/s;
    moving recordings): drop the equation of joint j where |qd_j| < min_speed, where dry
    friction sticks and slips and sign(qd) is not its torque. Raises InputError if
    the poses cannot determine the mass and CoM (e.g. a single orientation).
    """
    q = arguments.rows("q", q, model.n)
    tau = arguments.rows("tau", tau, model.n, len(q))
    static = qd is None
    qd = np.zeros_like(q) if static else arguments.rows("qd", qd, model.n, len(q))
    qdd = np.zeros_like(q) if qdd is None else arguments.rows("qdd", qdd, model.n, len(q))
    min_speed = arguments.scalar("min_speed", min_speed, 0.0)
    Y = frame_regressor(model, q, qd, qdd, frame)                      # (N, n, 10)
    r = tau - model.inverse_dynamics(q, qd, qdd, friction=friction)
    rows = (np.abs(qd) >= min_speed).ravel() if not static else np.ones(r.size, bool)
    W, y = Y.reshape(-1, 10)[rows], r.ravel()[rows]
    if len(y) < 4:
        raise InputError(f"{len(y)} equations with |qd| >= min_speed {min_speed}: need at "
                         "least 4 (more poses or a lower min_speed)")
    if inertia is None:
        inertia = not static and _cond(W) < 1e6
    cols = 10 if inertia else 4
    W = W[:, :cols]
    if _cond(W) > 1e8:
        raise InputError(f"the {len(q)} poses do not determine the payload's mass and centre of "
                         f"mass at {frame!r} (stacked regressor rank-deficient): hold the frame in "
                         "at least two orientations differing about a horizontal axis")
    x, *_ = np.linalg.lstsq(W, y, rcond=None)
    res = y - W @ x
    dof = max(len(y) - cols, 1)
    cov = float(res @ res) / dof * np.linalg.inv(W.T @ W)
    pi = np.zeros(10)
    pi[:cols] = x
    m, c, I_c = inertia_from_parameters(pi)
    if m <= 0:
        raise InputError(f"estimated payload mass {m:.4g} kg at {frame!r} is not positive: no "
                         "payload, or the arm model does not match the arm")
    G = np.zeros((3, cols))                     # d c / d [m, h] = [-c / m, 1 / m]
    G[:, 0], G[:, 1:4] = -c / m, np.eye(3) / m
    com_std = np.sqrt(np.diag(G @ cov @ G.T))
    full = np.zeros(r.size)
    full[rows] = res
    used = np.maximum(rows.reshape(r.shape).sum(axis=0), 1)
    return PayloadEstimate(frame, float(m), c, I_c if inertia else None,
                           float(np.sqrt(cov[0, 0])), com_std,
                           np.sqrt((full.reshape(r.shape) ** 2).sum(axis=0) / used), len(y))


def _cond(W):
    sv = np.linalg.svd(W, compute_uv=False)
    return sv[0] / sv[-1] if sv[-1] > 0 else np.inf
