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
point at rest (a computed |v_i| within the round-off bound of J_p,i qd,
:func:`.kernel.rest_speed`; its speed is then reported as 0) has no direction of motion:
its m_i is reported along the direction of the largest effective mass (the smallest
eigenvalue of A_i), the worst case for a contact (the eigenvector's sign: its largest
component positive).

All points of a state come from one numba pass (:mod:`.kernel`): one forward kinematics,
one mass matrix and its Cholesky factor, then the few 3 x n products of each point.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.errors import InputError, NonFiniteResultError
from ..core.dynamics.launch import direct_call
from . import kernel as K


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
    axes, speed (P,) m/s (0 at rest: no speed beyond round-off, :func:`.kernel.rest_speed`),
    direction u (P, 3) (of motion; of the largest effective mass for a point at rest),
    effective_mass (P,) kg along u (+inf where the arm cannot move the point
    along u)."""
    position: np.ndarray
    velocity: np.ndarray
    speed: np.ndarray
    direction: np.ndarray
    effective_mass: np.ndarray

    @classmethod
    def from_table(cls, table):
        """Views of a :mod:`.kernel` table (P, COLUMNS); velocity = speed u (a new array)."""
        speed, u = table[:, K.SPEED], table[:, K.UX:K.UZ + 1]
        return cls(table[:, K.X:K.Z + 1], u * speed[:, None], speed, u, table[:, K.MASS])


class PointKinematics:
    """Effective masses of a fixed set of monitored points of one model (see module doc).

    Each point is laid out once as a frame of its own on its link's body (the link's pose
    on the body with the offset folded in); per state, one numba pass
    (:func:`.kernel.point_table`) computes every point: one forward kinematics, one M and
    its Cholesky factor, then per point J_p, v = J_p qd and A = J_p M^-1 J_p^T."""

    def __init__(self, model, points):
        self.model = model
        self.points = list(points)
        if not self.points:
            raise InputError("no monitored points")
        fb, X = [], []
        for p in self.points:
            b, X_body_point = model.frame_body(p.link)
            X_body_point[:3, 3] += X_body_point[:3, :3] @ np.asarray(p.offset, dtype=float)
            fb.append(b)
            X.append(X_body_point)
        self._fb = np.array(fb, dtype=np.int64)
        self._X = np.ascontiguousarray(X, dtype=np.float64)
        self._bodies = model.body_table     # the core's body table, what its kernels read
        self.table_shape = (len(self.points), K.COLUMNS)

    def motion(self, q, qd):
        """PointMotion of every point at (q, qd), (n,) each (views of a new table)."""
        table = np.empty(self.table_shape)
        q, qd = self.state(q, qd)
        status = direct_call(K.point_table, (self._bodies, q, qd, self._fb, self._X, table))
        if status != K.OK:
            self.refuse(q, qd)
        return PointMotion.from_table(table)

    def state(self, q, qd):
        """(q, qd) as contiguous float64 (n,) arrays; InputError for another shape."""
        q = np.ascontiguousarray(q, dtype=np.float64)
        qd = np.ascontiguousarray(qd, dtype=np.float64)
        n = self.model.n
        if qd.shape != q.shape or q.shape != (n,):
            raise InputError(f"q and qd must have shape ({n},), got {q.shape}, {qd.shape}")
        return q, qd

    def check_table(self, table):
        """InputError unless ``table`` is a C-contiguous float64 array of table_shape (what
        the kernel writes into without further checks)."""
        if not (type(table) is np.ndarray and table.dtype == np.float64
                and table.shape == self.table_shape and table.flags.c_contiguous):
            raise InputError(f"table must be a C-contiguous float64 array of shape "
                             f"{self.table_shape}")

    def refuse(self, q, qd):
        """Raise the core's error for a state the kernel refused: compute_all of the same
        state names it (a non-finite q or qd entry: InputError; M not positive definite:
        SingularConfigurationError; an overflow: NonFiniteResultError); should the core
        accept the state, the points' own results overflowed."""
        self.model.compute_all(q, qd, self.points[0].link)
        raise NonFiniteResultError("monitored points: a position, velocity or J M^-1 J^T "
                                   "overflowed to inf/NaN (q, qd or the offsets too large)")
