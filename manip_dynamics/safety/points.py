"""Monitored points of an arm and the effective mass each one presents along its motion.

A monitored point is a point fixed on a link: (link, offset in the link's axes, m). For
one state (q, qd) and every point i, with J the link origin's Jacobian (rows [v; w], root
axes) and r_i = R_root_link offset_i:

    J_p,i = [I, -[r_i]x] J              (3, n)   the point's linear Jacobian
    v_i   = J_p,i qd                    (3,)     its velocity, m/s; speed |v_i|, u_i = v_i/|v_i|
    A_i   = J_p,i M^-1 J_p,i^T          (3, 3)   = T_i A_L T_i^T, A_L = J M^-1 J^T of L's origin
    m_i   = 1 / (u_i^T A_i u_i)                  the effective mass along the motion, kg

(Khatib's operational-space inertia of the point: the mass that an obstacle met along u_i
feels; RobotModel.effective_mass computes the same for one point and any direction). A
point at rest has no direction of motion: its m_i is reported along the direction of the
largest effective mass (the smallest eigenvalue of A_i), the worst case for a contact.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.errors import InputError
from ..core.dynamics.model import point_transform


@dataclass(frozen=True)
class MonitoredPoint:
    """A point fixed on ``link`` at ``offset`` (3,) m in the link's axes; ``label`` names it."""
    link: str
    offset: tuple
    label: str


def default_points(model, tip=None, extra=()):
    """The points ISO/TS 15066 monitoring needs by default: the origin of every link that
    moves (the ends of the capsules the simulator puts along the links: each link's capsule
    runs from its origin to its children's origins), plus ``tip`` (default the model's
    default tip) and ``extra`` (MonitoredPoint or (link, (x, y, z)) pairs)."""
    points = [MonitoredPoint(f, (0.0, 0.0, 0.0), f) for f in model.frame_names
              if model.frame_body(f)[0] >= 0]
    tip = model.default_tip if tip is None else tip
    model.frame_body(tip)                       # (UnknownFrameError names a bad tip)
    if all(p.link != tip for p in points):
        points.append(MonitoredPoint(tip, (0.0, 0.0, 0.0), tip))
    for k, e in enumerate(extra):
        points.append(_as_point(model, e, k))
    return points


def _as_point(model, e, k):
    if isinstance(e, MonitoredPoint):
        link, offset, label = e.link, e.offset, e.label
    else:
        try:
            link, offset = e
        except (TypeError, ValueError):
            raise InputError(f"extra point {k} must be (link, (x, y, z)), got {e!r}") from None
        label = None
    model.frame_body(link)
    off = np.asarray(offset, dtype=float)
    if off.shape != (3,) or not np.isfinite(off).all():
        raise InputError(f"extra point {k} on {link!r}: offset must be 3 finite numbers (m), "
                         f"got {offset!r}")
    label = label or f"{link}+[{off[0]:g}, {off[1]:g}, {off[2]:g}]"
    return MonitoredPoint(link, tuple(float(x) for x in off), label)


@dataclass
class PointMotion:
    """Per point (P points) for one state: position (P, 3) m and velocity (P, 3) m/s in root
    axes, speed (P,) m/s, direction u (P, 3) (of motion; of the largest effective mass for a
    point at rest), effective_mass (P,) kg along u (+inf where the arm cannot move the point
    along u)."""
    position: np.ndarray
    velocity: np.ndarray
    speed: np.ndarray
    direction: np.ndarray
    effective_mass: np.ndarray


class PointKinematics:
    """Effective masses of a fixed set of monitored points of one model (see module doc)."""

    def __init__(self, model, points):
        self.model = model
        self.points = list(points)
        if not self.points:
            raise InputError("no monitored points")
        self._links = sorted({p.link for p in self.points})
        self._offsets = np.array([p.offset for p in self.points], dtype=float)
        self._link_index = np.array([self._links.index(p.link) for p in self.points])

    def motion(self, q, qd):
        """PointMotion of every point at (q, qd), (n,) each.

        Per link: J and the pose (the core's kinematics kernels) and A = J M^-1 J^T of its
        origin (the core's bundle: Cholesky solves against M in numba, no BLAS call, so no
        BLAS threads woken for a 7 x 7 solve); per point A_p = T A T^T and v = T J qd with
        T = [I, -[r]x] (einsum over 3 x 6 blocks)."""
        model = self.model
        q = np.ascontiguousarray(q, dtype=float)
        qd = np.ascontiguousarray(qd, dtype=float)
        if qd.shape != q.shape or q.shape != (model.n,):
            raise InputError(f"q and qd must have shape ({model.n},), got {q.shape}, {qd.shape}")
        J, origin, R, A6 = self._link_kinematics(q)
        idx = self._link_index
        r = np.einsum("pij,pj->pi", R[idx], self._offsets)
        T = point_transform(r)                                    # (P, 3, 6)
        v = np.einsum("pik,pk->pi", T, np.einsum("pkj,j->pk", J[idx], qd))
        A = np.einsum("pik,pkl,pjl->pij", T, A6[idx], T)          # (P, 3, 3)
        speed = np.sqrt(np.einsum("pi,pi->p", v, v))
        u = _directions(v, speed, A)
        uau = np.einsum("pi,pij,pj->p", u, A, u)
        tr = np.trace(A, axis1=1, axis2=2)
        with np.errstate(divide="ignore"):
            m = np.where(uau > 1e-12 * tr, 1.0 / np.where(uau > 0, uau, 1.0), np.inf)
        return PointMotion(origin[idx] + r, v, speed, u, m)

    def _link_kinematics(self, q):
        """Per monitored link: J (6, n), origin (3,), R (3, 3), A = J M^-1 J^T (6, 6)."""
        model = self.model
        J = np.stack([model.jacobian(q, f) for f in self._links])
        X = np.stack([model.frame_pose(q, f) for f in self._links])
        A = np.stack([model.inverse_effective_inertia(q, f) for f in self._links])
        return J, X[:, :3, 3], X[:, :3, :3], A


def _directions(v, speed, A):
    """u = v / |v|; for a point at rest the eigenvector of A's smallest eigenvalue."""
    u = np.empty_like(v)
    moving = speed > 0
    u[moving] = v[moving] / speed[moving, None]
    if not moving.all():
        u[~moving] = np.linalg.eigh(A[~moving])[1][:, :, 0]
    return u
