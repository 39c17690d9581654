"""Forward kinematics in root coordinates: body poses, motion subspaces S, first and
second moments of the bodies, frame poses, Jacobians and point accelerations."""

import numpy as np
from numba import njit

from ..bodies import PRISMATIC, REVOLUTE
from .coordinates import expand_positions
from .options import _DRIVER, _JIT
from .spatial import _cross
from .trig import sin_cos

# ------------------------------------------------------------------ kinematics
@njit(**_DRIVER)
def _m9(R):
    """The 3x3 R as a 9-tuple, row-major (kinematics in registers: no scratch arrays)."""
    return (R[0, 0], R[0, 1], R[0, 2], R[1, 0], R[1, 1], R[1, 2], R[2, 0], R[2, 1], R[2, 2])


@njit(**_DRIVER)
def _mul33(a, c):
    """a c of two row-major 9-tuples (sums in the order r0 c0 + r1 c1 + r2 c2)."""
    return (a[0] * c[0] + a[1] * c[3] + a[2] * c[6], a[0] * c[1] + a[1] * c[4] + a[2] * c[7],
            a[0] * c[2] + a[1] * c[5] + a[2] * c[8],
            a[3] * c[0] + a[4] * c[3] + a[5] * c[6], a[3] * c[1] + a[4] * c[4] + a[5] * c[7],
            a[3] * c[2] + a[4] * c[5] + a[5] * c[8],
            a[6] * c[0] + a[7] * c[3] + a[8] * c[6], a[6] * c[1] + a[7] * c[4] + a[8] * c[7],
            a[6] * c[2] + a[7] * c[5] + a[8] * c[8])


@njit(**_DRIVER)
def _times_rotation(A, k0, k1, k2, angle):
    """A Rot(k, angle) for a unit axis k, A a row-major 9-tuple. An axis along +-x, +-y or
    +-z (most URDF joints) mixes two columns of A with c = cos(angle), s = +-sin(angle):
    12 products instead of building Rot (Rodrigues) and a full 3x3 product (27). sin and
    cos from one argument reduction (:func:`trig.sin_cos`)."""
    s, c = sin_cos(angle)
    if k0 == 0.0 and k1 == 0.0:             # Rot_z(+-angle): columns 0 and 1
        s *= k2
        return (A[0] * c + A[1] * s, A[1] * c - A[0] * s, A[2],
                A[3] * c + A[4] * s, A[4] * c - A[3] * s, A[5],
                A[6] * c + A[7] * s, A[7] * c - A[6] * s, A[8])
    if k1 == 0.0 and k2 == 0.0:             # Rot_x(+-angle): columns 1 and 2
        s *= k0
        return (A[0], A[1] * c + A[2] * s, A[2] * c - A[1] * s,
                A[3], A[4] * c + A[5] * s, A[5] * c - A[4] * s,
                A[6], A[7] * c + A[8] * s, A[8] * c - A[7] * s)
    if k0 == 0.0 and k2 == 0.0:             # Rot_y(+-angle): columns 2 and 0
        s *= k1
        return (A[0] * c - A[2] * s, A[1], A[2] * c + A[0] * s,
                A[3] * c - A[5] * s, A[4], A[5] * c + A[3] * s,
                A[6] * c - A[8] * s, A[7], A[8] * c + A[6] * s)
    return _mul33(A, _rotation_about(k0, k1, k2, s, 1.0 - c))


@njit(**_DRIVER)
def _rotation_about(k0, k1, k2, s, c1):
    """Rot(k, angle) for a unit axis k as a row-major 9-tuple, given s = sin(angle) and
    c1 = 1 - cos(angle) (Rodrigues: I + s K + (1 - c) K^2)."""
    return (1.0 - c1 * (k1 * k1 + k2 * k2), -s * k2 + c1 * k0 * k1, s * k1 + c1 * k0 * k2,
            s * k2 + c1 * k0 * k1, 1.0 - c1 * (k0 * k0 + k2 * k2), -s * k0 + c1 * k1 * k2,
            -s * k1 + c1 * k0 * k2, s * k0 + c1 * k1 * k2, 1.0 - c1 * (k0 * k0 + k1 * k1))


@njit(**_JIT)
def _kinematics_over(bodies, q_full, path, every_body, R_root_body, p_root_body, S):
    """Pose and S of every body (every_body) or of the bodies in ``path`` (ascending), each
    from its parent's pose: the joint frame X_root_joint = X_root_parent * X_tree (A, p),
    then the joint. In registers: no scratch arrays (one loop body here, not a call per
    body: numba compiles that call into slower code)."""
    for j in range(bodies.shape[0] if every_body else path.shape[0]):
        i = j if every_body else path[j]
        b = bodies[i]
        par = b.parent
        T = _m9(b.R_tree)
        t0, t1, t2 = b.p_tree[0], b.p_tree[1], b.p_tree[2]
        if par < 0:
            A = T
            p0, p1, p2 = t0, t1, t2
        else:
            P = _m9(R_root_body[par])
            A = _mul33(P, T)
            p0 = p_root_body[par, 0] + P[0] * t0 + P[1] * t1 + P[2] * t2
            p1 = p_root_body[par, 1] + P[3] * t0 + P[4] * t1 + P[5] * t2
            p2 = p_root_body[par, 2] + P[6] * t0 + P[7] * t1 + P[8] * t2
        k0, k1, k2 = b.axis[0], b.axis[1], b.axis[2]
        a0 = A[0] * k0 + A[1] * k1 + A[2] * k2          # the joint axis in root axes
        a1 = A[3] * k0 + A[4] * k1 + A[5] * k2
        a2 = A[6] * k0 + A[7] * k1 + A[8] * k2
        if b.jtype == REVOLUTE:
            S[i, 0], S[i, 1], S[i, 2] = p1 * a2 - p2 * a1, p2 * a0 - p0 * a2, p0 * a1 - p1 * a0
            S[i, 3], S[i, 4], S[i, 5] = a0, a1, a2
            A = _times_rotation(A, k0, k1, k2, q_full[i])
        elif b.jtype == PRISMATIC:
            x = q_full[i]
            p0, p1, p2 = p0 + a0 * x, p1 + a1 * x, p2 + a2 * x
            S[i, 0], S[i, 1], S[i, 2], S[i, 3], S[i, 4], S[i, 5] = a0, a1, a2, 0.0, 0.0, 0.0
        else:
            raise ValueError("forward_kinematics: unknown joint type in the body table "
                             "(only REVOLUTE and PRISMATIC bodies exist)")
        R = R_root_body[i]
        R[0, 0], R[0, 1], R[0, 2] = A[0], A[1], A[2]
        R[1, 0], R[1, 1], R[1, 2] = A[3], A[4], A[5]
        R[2, 0], R[2, 1], R[2, 2] = A[6], A[7], A[8]
        p_root_body[i, 0], p_root_body[i, 1], p_root_body[i, 2] = p0, p1, p2


_NO_PATH = np.zeros(0, dtype=np.int64)


@njit(**_JIT)
def forward_kinematics(bodies, q_full, R_root_body, p_root_body, S):
    """Root-frame pose (R_root_body[i], p_root_body[i]) of every body and its motion subspace S[i] (6,).

    ``X_root_i = X_root_parent * X_tree_i * joint_i(q_i)``; revolute ``S = [p x a; a]``,
    prismatic ``S = [a; 0]`` with ``a`` the joint axis in root axes and ``p`` the joint
    origin. Any other joint type raises ValueError.
    """
    _kinematics_over(bodies, q_full, _NO_PATH, True, R_root_body, p_root_body, S)


@njit(**_DRIVER)
def _centre_of_mass(b, R_root_body, p_root_body, i):
    """c = p_root_body[i] + R_root_body[i] com of body b = bodies[i], root coordinates."""
    R, p = R_root_body[i], p_root_body[i]
    return (p[0] + R[0, 0] * b.com[0] + R[0, 1] * b.com[1] + R[0, 2] * b.com[2],
            p[1] + R[1, 0] * b.com[0] + R[1, 1] * b.com[1] + R[1, 2] * b.com[2],
            p[2] + R[2, 0] * b.com[0] + R[2, 1] * b.com[1] + R[2, 2] * b.com[2])


@njit(**_JIT)
def first_moments(bodies, R_root_body, p_root_body, m, h):
    """m_i and h_i = m_i c_i with c_i the centre of mass of body i in root coordinates (all
    that gravity needs of the inertias)."""
    for i in range(bodies.shape[0]):
        b = bodies[i]
        c0, c1, c2 = _centre_of_mass(b, R_root_body, p_root_body, i)
        m[i] = b.mass
        h[i, 0], h[i, 1], h[i, 2] = b.mass * c0, b.mass * c1, b.mass * c2


@njit(**_JIT)
def world_inertias(bodies, R_root_body, p_root_body, m, h, I_o):
    """Spatial inertia of each body about the root origin: m, h = m c, I_o = R I_com R^T + m(|c|^2 1 - c c^T),
    with c = p_root_body + R_root_body com the centre of mass in root coordinates."""
    first_moments(bodies, R_root_body, p_root_body, m, h)
    for i in range(bodies.shape[0]):
        b = bodies[i]
        mi = b.mass
        c = _centre_of_mass(b, R_root_body, p_root_body, i)
        cc = c[0] * c[0] + c[1] * c[1] + c[2] * c[2]
        R = _m9(R_root_body[i])
        RT = (R[0], R[3], R[6], R[1], R[4], R[7], R[2], R[5], R[8])
        I = _mul33(_mul33(R, _m9(b.I_com)), RT)          # R I_com R^T, in registers
        for r in range(3):
            for s in range(3):
                I_o[i, r, s] = I[3 * r + s] - mi * c[r] * c[s]
            I_o[i, r, r] += mi * cc


@njit(**_JIT)
def frame_pose(R_root_body, p_root_body, fb, X_body_frame, R_root_frame, p_root_frame):
    """Root-frame pose of a frame attached to body fb (-1 = root) by the fixed 4x4 X_body_frame."""
    X = X_body_frame
    if fb < 0:
        for r in range(3):
            for c in range(3):
                R_root_frame[r, c] = X[r, c]
            p_root_frame[r] = X[r, 3]
        return
    R = R_root_body[fb]
    for r in range(3):
        for c in range(3):
            R_root_frame[r, c] = R[r, 0] * X[0, c] + R[r, 1] * X[1, c] + R[r, 2] * X[2, c]
        p_root_frame[r] = p_root_body[fb, r] + R[r, 0] * X[0, 3] + R[r, 1] * X[1, 3] + R[r, 2] * X[2, 3]


@njit(**_DRIVER)
def state_kinematics(bodies, q, ws):
    """The opening of every per-state computation: q_full, body poses, S, body inertias."""
    expand_positions(bodies, q, ws.q_full)
    forward_kinematics(bodies, ws.q_full, ws.R_root_body, ws.p_root_body, ws.S)
    world_inertias(bodies, ws.R_root_body, ws.p_root_body, ws.m, ws.h, ws.I_o)


@njit(**_JIT)
def frame_jacobian(bodies, S, fb, p_root_frame, J):
    """J (6 x n) of the frame origin p: column of joint j on the path = G^T [S_v + S_w x p; S_w]."""
    J[:, :] = 0.0
    j = fb
    while j >= 0:
        c0, c1, c2 = _cross(S[j, 3], S[j, 4], S[j, 5],
                            p_root_frame[0], p_root_frame[1], p_root_frame[2])
        col = bodies[j].q_index
        mult = bodies[j].mimic_multiplier
        J[0, col] += mult * (S[j, 0] + c0)
        J[1, col] += mult * (S[j, 1] + c1)
        J[2, col] += mult * (S[j, 2] + c2)
        J[3, col] += mult * S[j, 3]
        J[4, col] += mult * S[j, 4]
        J[5, col] += mult * S[j, 5]
        j = bodies[j].parent


@njit(**_JIT)
def point_acceleration(V, Vd, p, out):
    """Classical acceleration of the point p of a body with spatial V, Vd (root origin):
    [a_O + alpha x p + w x (v_O + w x p); alpha]."""
    w0, w1, w2 = _cross(V[3], V[4], V[5], p[0], p[1], p[2])
    v0, v1, v2 = V[0] + w0, V[1] + w1, V[2] + w2
    x0, x1, x2 = _cross(Vd[3], Vd[4], Vd[5], p[0], p[1], p[2])
    y0, y1, y2 = _cross(V[3], V[4], V[5], v0, v1, v2)
    out[0] = Vd[0] + x0 + y0
    out[1] = Vd[1] + x1 + y1
    out[2] = Vd[2] + x2 + y2
    out[3] = Vd[3]
    out[4] = Vd[4]
    out[5] = Vd[5]
