"""Numba kernels: the rigid-body algorithms, one implementation, batched inside numba.

Conventions (all kernels):

- Every body quantity is expressed in the ROOT frame, about the root ORIGIN ("world"
  spatial notation, Featherstone ch. 2 with linear-first ordering ``[v; w]``):
  a spatial velocity ``V = [v_O; w]`` gives the velocity ``v_P = v_O + w x P`` of any
  body-fixed point P; a spatial force ``F = [f; n_O]``.  In this notation the motion
  subspaces add without transforms: ``V_i = V_parent + S_i qd_i``.
- ``bodies`` is the body table (:mod:`manip_dynamics.core.dynamics.bodies`): one record per moving
  joint, ``bodies[i].parent < i`` (-1 = root), ``.jtype``, ``.axis``, ``.R_tree``,
  ``.p_tree``, ``.q_index``, ``.mimic_multiplier``, ``.mimic_offset``, ``.mass``, ``.com``,
  ``.I_com``. A joint type other than revolute or prismatic is refused (ValueError).
- ``q`` arguments are always batches ``(N, n)`` of independent coordinates; mimic joints
  are expanded by ``q_full = G q + offset`` (:func:`expand_positions`) and results are
  mapped back by ``tau = G^T tau_full`` (:func:`reduce_vector`), ``M = G^T M_full G``
  (:func:`reduce_matrix`).
- Names carry frames as in markers.py: ``R_root_body[i]``, ``p_root_body[i]`` (pose of
  body i in the root frame), ``X_body_frame`` (a link's fixed 4x4 pose on its body),
  ``R_root_frame``, ``p_root_frame``. Spatial quantities are in root coordinates: ``S``
  (motion subspaces), ``V`` (velocities), ``Vd`` (accelerations), ``F`` (forces), the
  body inertias ``(m, h = m c, I_o)`` about the root origin.
- Scratch arrays are allocated per call (:func:`workspace`; the gravity, Coriolis, mass and
  kinematics chunks allocate only what they use, :func:`pose_scratch`), never stored in the
  model: thread safe, and ``nogil=True`` lets several threads run kernels at once.

spatial_v2 (Featherstone's ``ID.m`` / ``HandC.m``) in our symbols; spatial_v2 works in
body coordinates and carries ``Xup{i}`` between bodies, we work in root coordinates where
those transforms are identities:

=====================================  ==============================================
spatial_v2                             here
=====================================  ==============================================
``parent(i)``  (0 = base)              ``bodies[i].parent``  (-1 = root)
``Xtree{i}``                           ``bodies[i].R_tree, .p_tree``
``[XJ, S{i}] = jcalc(...)``            ``forward_kinematics``: ``R_root_body[i]``,
                                       ``p_root_body[i]``, ``S[i]`` (root coordinates)
``Xup{i} = XJ * Xtree{i}``             (none: no transform between bodies)
``v{i} = Xup{i}*v{p} + vJ``            ``V[i] = V[parent] + S[i] qd[i]``
``a{i} = Xup{i}*a{p} + S qdd +         ``Vd[i] = Vd[parent] + S[i] qdd[i] +
crm(v{i})*vJ``;  ``a_grav``            V[i] x S[i] qd[i]``;  ``Vd_root = [-g; 0]``
``f{i} = I{i}*a{i} + crf(v)*I{i}*v``   ``F[i] = I[i] Vd[i] + V[i] x* I[i] V[i]``
``tau(i) = S{i}' * f{i}``              ``tau_full[i] = S[i] . F[i]``
``f{p} += Xup{i}' * f{i}``             ``F[parent] += F[i]``
``IC{p} += Xup{i}' * IC{i} * Xup{i}``  ``Ic[parent] += Ic[i]``  (CRBA)
``H(i,j) = S{j}' * fh``                ``M_full[i, j] = S[j] . (Ic[i] S[i])``, j up the
                                       path of i
=====================================  ==============================================
"""
from collections import namedtuple

import numpy as np
from numba import njit, prange

from ..bodies import PRISMATIC, REVOLUTE
from .symmetric_eigen import symmetric_eigenvalues
from .trig import sin_cos

_JIT = dict(cache=True, nogil=True, fastmath=False, error_model="numpy")
_DRIVER = dict(_JIT, inline="always")   # small drivers over ws: no call boundary
_THREADS = dict(_JIT, parallel=True)     # the *_threads entry points: prange over chunks

# status of a state (batch_forward_dynamics, batch_bundle); BAD_INPUT: q or qd not finite
OK, NOT_POSITIVE_DEFINITE, OVERFLOW, BAD_INPUT = 0, 1, 2, 3

# batch_bundle's flags (or-ed): what to compute beyond M, J, A, Lambda and cond(A)
BIAS = 1            # g and c = C qd
OPERATIONAL = 2     # mu and p (implies BIAS)
EIGENVECTORS = 4    # the eigen-decomposition of A (inertia ellipsoid)
MOMENTUM = 8        # p = M qd and C^T qd (the momentum observer's terms; implies BIAS)

SINGULAR_COND = 1e12          # cond(A) above this: A is singular (pseudo-inverse Lambda)
EIGVALSH_MIN_RATIO = 1e-8     # batch_bundle: eigenvalues alone, not eigh, when smin > this * smax
EPS = 2.220446049250313e-16   # float64 machine epsilon
_ZERO3 = np.zeros(3)
_ZERO6 = np.zeros(6)


# ------------------------------------------------------------------ small spatial algebra
@njit(**_JIT)
def _cross(a0, a1, a2, b0, b1, b2):
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@njit(**_JIT)
def _inertia_times(m, h, I_o, x, out):
    """out = I x for the spatial inertia (m, h = m c, I_o about the origin): [m x_v - h x x_w; h x x_v + I_o x_w]."""
    c0, c1, c2 = _cross(h[0], h[1], h[2], x[3], x[4], x[5])
    d0, d1, d2 = _cross(h[0], h[1], h[2], x[0], x[1], x[2])
    out[0] = m * x[0] - c0
    out[1] = m * x[1] - c1
    out[2] = m * x[2] - c2
    for r in range(3):
        out[3 + r] = I_o[r, 0] * x[3] + I_o[r, 1] * x[4] + I_o[r, 2] * x[5]
    out[3] += d0
    out[4] += d1
    out[5] += d2


@njit(**_JIT)
def _cross_motion(V, U, out):
    """out = V x U (motion cross product): [w x u_v + v x u_w; w x u_w]."""
    a0, a1, a2 = _cross(V[3], V[4], V[5], U[0], U[1], U[2])
    b0, b1, b2 = _cross(V[0], V[1], V[2], U[3], U[4], U[5])
    c0, c1, c2 = _cross(V[3], V[4], V[5], U[3], U[4], U[5])
    out[0] = a0 + b0
    out[1] = a1 + b1
    out[2] = a2 + b2
    out[3] = c0
    out[4] = c1
    out[5] = c2


@njit(**_JIT)
def _cross_force(V, F, out):
    """out = V x* F (force cross product): [w x f; w x n + v x f]."""
    a0, a1, a2 = _cross(V[3], V[4], V[5], F[0], F[1], F[2])
    b0, b1, b2 = _cross(V[3], V[4], V[5], F[3], F[4], F[5])
    c0, c1, c2 = _cross(V[0], V[1], V[2], F[0], F[1], F[2])
    out[0] = a0
    out[1] = a1
    out[2] = a2
    out[3] = b0 + c0
    out[4] = b1 + c1
    out[5] = b2 + c2


@njit(**_JIT)
def _dot6(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5]


# ------------------------------------------------------------------ workspace
Workspace = namedtuple("Workspace", (
    "q_full", "qd_full", "qdd_full",           # (nb,) joint values of every body
    "R_root_body", "p_root_body", "S",          # (nb, 3, 3), (nb, 3), (nb, 6)
    "m", "h", "I_o",                            # body inertias about the root origin
    "V", "Vd", "F",                             # (nb, 6) spatial velocity, acceleration, force
    "tau_full",                                 # (nb,) S . F per body
    "M_full",                                   # (nb, nb) before the mimic reduction
    "Ic_m", "Ic_h", "Ic_o",                     # composite inertias (CRBA)
    "R_root_frame", "p_root_frame",             # pose of the requested frame
    "tmp1", "tmp2"))                            # (6,) scratch


@njit(**_JIT)
def _take(out, start, shape):
    """(out[start:start + size].reshape(shape), start + size) with size = prod(shape)."""
    size = 1
    for d in shape:
        size *= d
    return out[start:start + size].reshape(shape), start + size


@njit(**_DRIVER)
def workspace(nb):
    """Fresh scratch for one call over a tree of nb bodies (see Workspace). One allocation per
    field: numba's reshape of views of one buffer costs more than small allocations."""
    e = np.empty
    return Workspace(e(nb), e(nb), np.zeros(nb), e((nb, 3, 3)), e((nb, 3)), e((nb, 6)), e(nb),
                     e((nb, 3)), e((nb, 3, 3)), e((nb, 6)), e((nb, 6)), e((nb, 6)), e(nb),
                     e((nb, nb)), e(nb), e((nb, 3)), e((nb, 3, 3)), e((3, 3)), e(3), e(6), e(6))


@njit(**_DRIVER)
def pose_scratch(nb):
    """(q_full, R_root_body, p_root_body, S): what :func:`forward_kinematics` fills, alone.
    The single-purpose chunks (gravity, Coriolis, mass, kinematics) allocate just what they
    use: a one-state call pays for each allocation (~25 ns), and the full workspace's
    twenty-one made up half of a single Panda g(q)."""
    e = np.empty
    return e(nb), e((nb, 3, 3)), e((nb, 3)), e((nb, 6))


# ------------------------------------------------------------------ mimic joints: G
@njit(**_JIT)
def expand_positions(bodies, q, q_full):
    """q_full[i] = mimic_multiplier[i] * q[q_index[i]] + mimic_offset[i]."""
    for i in range(bodies.shape[0]):
        b = bodies[i]
        q_full[i] = b.mimic_multiplier * q[b.q_index] + b.mimic_offset


@njit(**_JIT)
def expand_rates(bodies, qd, qd_full):
    """qd_full = G qd (no offset)."""
    for i in range(bodies.shape[0]):
        qd_full[i] = bodies[i].mimic_multiplier * qd[bodies[i].q_index]


@njit(**_JIT)
def reduce_vector(bodies, tau_full, tau):
    """tau = G^T tau_full."""
    tau[:] = 0.0
    for i in range(bodies.shape[0]):
        tau[bodies[i].q_index] += bodies[i].mimic_multiplier * tau_full[i]


@njit(**_JIT)
def no_mimic_joints(bodies):
    """G = I: body i moves with coordinate i (no mimic joint; n = nb)."""
    for i in range(bodies.shape[0]):
        if bodies[i].q_index != i or bodies[i].mimic_multiplier != 1.0:
            return False
    return True


@njit(**_JIT)
def reduce_matrix(bodies, X_full, X):
    """X = G^T X_full G (M, C: (nb, nb) -> (n, n)). Without mimic joints a copy: the general
    double loop reads both bodies' q_index and multiplier per entry (1.3 us of a 29-body M,
    against 0.8 us for its CRBA)."""
    nb = bodies.shape[0]
    if no_mimic_joints(bodies):
        for i in range(nb):
            for j in range(nb):
                X[i, j] = X_full[i, j]
        return
    X[:, :] = 0.0
    for i in range(bodies.shape[0]):
        bi = bodies[i]
        for j in range(bodies.shape[0]):
            bj = bodies[j]
            X[bi.q_index, bj.q_index] += bi.mimic_multiplier * bj.mimic_multiplier * X_full[i, j]


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


# ------------------------------------------------------------------ dynamics passes
@njit(**_JIT)
def rnea_forward(bodies, S, m, h, I_o, qd_full, qdd_full, g, V, Vd, F, tmp1, tmp2):
    """Forward pass: V_i = V_p + S_i qd_i; Vd_i = Vd_p + S_i qdd_i + V_i x S_i qd_i
    (Vd_root = [-g; 0], gravity as a fictitious base acceleration); F_i = I_i Vd_i + V_i x* I_i V_i."""
    for i in range(bodies.shape[0]):
        par = bodies[i].parent
        qd, qdd = qd_full[i], qdd_full[i]
        for k in range(6):
            if par >= 0:
                V[i, k] = V[par, k] + S[i, k] * qd
                Vd[i, k] = Vd[par, k] + S[i, k] * qdd
            else:
                V[i, k] = S[i, k] * qd
                Vd[i, k] = (-g[k] if k < 3 else 0.0) + S[i, k] * qdd
        if qd != 0.0:
            for k in range(6):
                tmp1[k] = S[i, k] * qd
            _cross_motion(V[i], tmp1, tmp2)
            for k in range(6):
                Vd[i, k] += tmp2[k]
        _inertia_times(m[i], h[i], I_o[i], Vd[i], F[i])
        _inertia_times(m[i], h[i], I_o[i], V[i], tmp1)
        _cross_force(V[i], tmp1, tmp2)
        for k in range(6):
            F[i, k] += tmp2[k]


@njit(**_JIT)
def rnea_backward(bodies, S, F, tau_full):
    """Backward pass: tau_i = S_i . F_i; F_parent += F_i (no transform: root-frame spatial forces)."""
    for i in range(bodies.shape[0] - 1, -1, -1):
        tau_full[i] = _dot6(S[i], F[i])
        par = bodies[i].parent
        if par >= 0:
            for k in range(6):
                F[par, k] += F[i, k]


@njit(**_JIT)
def gravity_pass(bodies, S, m, h, g, F, tau_full):
    """g_full: F_i = I_i [-g; 0] = [-m g; -h x g] summed down the tree, tau_i = S_i . F_i."""
    for i in range(bodies.shape[0]):
        c0, c1, c2 = _cross(h[i, 0], h[i, 1], h[i, 2], g[0], g[1], g[2])
        F[i, 0] = -m[i] * g[0]
        F[i, 1] = -m[i] * g[1]
        F[i, 2] = -m[i] * g[2]
        F[i, 3] = -c0
        F[i, 4] = -c1
        F[i, 5] = -c2
    rnea_backward(bodies, S, F, tau_full)


@njit(**_JIT)
def velocity_pass(bodies, S, qd_full, V, Vd, tmp1, tmp2):
    """V_i = V_p + S_i qd_i; Vd_i = Vd_p + V_i x S_i qd_i (qdd = 0, no gravity)."""
    for i in range(bodies.shape[0]):
        par = bodies[i].parent
        for k in range(6):
            V[i, k] = (V[par, k] if par >= 0 else 0.0) + S[i, k] * qd_full[i]
            Vd[i, k] = Vd[par, k] if par >= 0 else 0.0
            tmp1[k] = S[i, k] * qd_full[i]
        _cross_motion(V[i], tmp1, tmp2)
        for k in range(6):
            Vd[i, k] += tmp2[k]


@njit(**_JIT)
def crba(bodies, S, m, h, I_o, Ic_m, Ic_h, Ic_o, M_full, tmp):
    """Composite-rigid-body algorithm: Ic_i = I_i + sum_children Ic_c (plain sums in the root
    frame); M_full[i, j] = S_j . (Ic_i S_i) for j on the path i -> root (others zero)."""
    for i in range(bodies.shape[0]):    # (element by element: a slice copy costs 4x more)
        Ic_m[i] = m[i]
        for r in range(3):
            Ic_h[i, r] = h[i, r]
            for c in range(3):
                Ic_o[i, r, c] = I_o[i, r, c]
    crba_in_place(bodies, S, Ic_m, Ic_h, Ic_o, M_full, tmp)


@njit(**_JIT)
def crba_in_place(bodies, S, Ic_m, Ic_h, Ic_o, M_full, tmp):
    """crba with the body inertias given in (Ic_m, Ic_h, Ic_o), which end up composite (the
    mass chunk's own scratch: no copy)."""
    M_full[:, :] = 0.0
    for i in range(bodies.shape[0] - 1, -1, -1):
        _inertia_times(Ic_m[i], Ic_h[i], Ic_o[i], S[i], tmp)
        j = i
        while j >= 0:
            M_full[i, j] = _dot6(S[j], tmp)
            M_full[j, i] = M_full[i, j]
            j = bodies[j].parent
        par = bodies[i].parent
        if par >= 0:                    # (element by element: no array expressions on views)
            Ic_m[par] += Ic_m[i]
            for r in range(3):
                Ic_h[par, r] += Ic_h[i, r]
                for c in range(3):
                    Ic_o[par, r, c] += Ic_o[i, r, c]


@njit(**_DRIVER)
def mass_matrix(bodies, ws, M):
    """M = G^T M_full G by CRBA, from the kinematics and inertias in ws."""
    crba(bodies, ws.S, ws.m, ws.h, ws.I_o, ws.Ic_m, ws.Ic_h, ws.Ic_o, ws.M_full, ws.tmp1)
    reduce_matrix(bodies, ws.M_full, M)


@njit(**_JIT)
def coriolis_full(bodies, S, m, h, I_o, V, C_full, IV, IS, tmp1, tmp2, Y):
    """Christoffel-consistent C_full = sum_k J_k^T (B_k J_k + I_k Jdot_k), with
    B(I, V) = 1/2 [V x* I + (I V) xbar* - I V x] (Echeandia & Wensing 2021) and
    Jdot_k columns Sdot_j = V_j x S_j; then dM/dt = C + C^T."""
    C_full[:, :] = 0.0
    for k in range(bodies.shape[0]):
        _inertia_times(m[k], h[k], I_o[k], V[k], IV)
        j = k
        while j >= 0:
            _inertia_times(m[k], h[k], I_o[k], S[j], IS)
            _cross_force(V[k], IS, Y)            # V x* (I S)
            _cross_force(S[j], IV, tmp1)         # S x* (I V)  = (I V) xbar* S
            for a in range(6):
                Y[a] = 0.5 * (Y[a] + tmp1[a])
            _cross_motion(V[k], S[j], tmp1)      # V x S
            _inertia_times(m[k], h[k], I_o[k], tmp1, tmp2)
            for a in range(6):
                Y[a] -= 0.5 * tmp2[a]
            _cross_motion(V[j], S[j], tmp1)      # Sdot_j
            _inertia_times(m[k], h[k], I_o[k], tmp1, tmp2)
            for a in range(6):
                Y[a] += tmp2[a]
            i = k
            while i >= 0:
                C_full[i, j] += _dot6(S[i], Y)
                i = bodies[i].parent
            j = bodies[j].parent


@njit(**_JIT)
def apply_external_wrench(F, fb, p_root_frame, f_ext):
    """F[fb] -= the wrench f_ext = [f; n] acting at the frame origin p, moved to the root
    origin: [f; n + p x f] (the backward pass then gives tau = ... - J^T f_ext)."""
    c0, c1, c2 = _cross(p_root_frame[0], p_root_frame[1], p_root_frame[2],
                        f_ext[0], f_ext[1], f_ext[2])
    F[fb, 0] -= f_ext[0]
    F[fb, 1] -= f_ext[1]
    F[fb, 2] -= f_ext[2]
    F[fb, 3] -= f_ext[3] + c0
    F[fb, 4] -= f_ext[4] + c1
    F[fb, 5] -= f_ext[5] + c2


@njit(**_JIT)
def inverse_dynamics_state(bodies, ws, g, fb, X_body_frame, f_ext, s, tau):
    """tau = G^T RNEA(q_full, qd_full, qdd_full) - J_f^T f_ext[s] from the kinematics in ws
    (f_ext (N, 6) at frame (fb, X_body_frame); an empty f_ext (0, 6) or fb < 0: none)."""
    rnea_forward(bodies, ws.S, ws.m, ws.h, ws.I_o, ws.qd_full, ws.qdd_full, g, ws.V, ws.Vd,
                 ws.F, ws.tmp1, ws.tmp2)
    if fb >= 0 and f_ext.shape[0] > 0:
        frame_pose(ws.R_root_body, ws.p_root_body, fb, X_body_frame, ws.R_root_frame,
                   ws.p_root_frame)
        apply_external_wrench(ws.F, fb, ws.p_root_frame, f_ext[s])
    rnea_backward(bodies, ws.S, ws.F, ws.tau_full)
    reduce_vector(bodies, ws.tau_full, tau)


# ------------------------------------------------------------------ dense helpers
@njit(**_JIT)
def all_finite(a):
    """True if every entry of the 1-D or 2-D array a is finite (x * 0 is NaN for inf/NaN).
    An and of comparisons, not a sum: a running float sum is a chain of dependent additions
    (0.65 us for a 29 x 29 M; the and vectorises: 0.03 us)."""
    ok = True
    for x in a.flat:                 # (flat, not ravel: no reshape call per check)
        ok &= x * 0.0 == 0.0
    return ok


@njit(**_JIT)
def damped_inverse_gain(s, d):
    """s / (s^2 + d^2) for an eigenvalue s >= 0 and damping d > 0, written 1 / (s + d (d / s))
    so that d^2 never underflows to 0 (s = 0 -> 0; a non-finite gain -> 0)."""
    if s <= 0.0:
        return 0.0
    e = 1.0 / (s + d * (d / s))
    return e if e * 0.0 == 0.0 else 0.0


# The dot products below keep four partial sums: one running sum is a chain of dependent
# additions (about 4 cycles each), which bounded a 29-joint Cholesky and its solves, not
# the arithmetic. Same order on every machine (no fastmath): the same bits everywhere.
@njit(**_DRIVER)
def _dot(a, b, m):
    """sum_{k < m} a[k] b[k] of two 1-D arrays (rows, columns or vectors)."""
    s0 = s1 = s2 = s3 = 0.0
    k = 0
    while k + 4 <= m:
        s0 += a[k] * b[k]
        s1 += a[k + 1] * b[k + 1]
        s2 += a[k + 2] * b[k + 2]
        s3 += a[k + 3] * b[k + 3]
        k += 4
    while k < m:
        s0 += a[k] * b[k]
        k += 1
    return (s0 + s1) + (s2 + s3)


@njit(**_JIT)
def cholesky(A, L):
    """A = L L^T (lower). Returns False if A is not (numerically) positive definite."""
    n = A.shape[0]
    L[:, :] = 0.0
    scale = 0.0
    for i in range(n):
        scale = max(scale, abs(A[i, i]))
    for j in range(n):
        d = A[j, j] - _dot(L[j], L[j], j)
        if not (d > 1e-14 * scale) or scale == 0.0:
            return False
        d = np.sqrt(d)
        L[j, j] = d
        for i in range(j + 1, n):
            L[i, j] = (A[i, j] - _dot(L[i], L[j], j)) / d
    return True


@njit(**_JIT)
def solve_lower(L, b):
    """b <- L^-1 b."""
    n = L.shape[0]
    for i in range(n):
        b[i] = (b[i] - _dot(L[i], b, i)) / L[i, i]


@njit(**_JIT)
def solve_upper_t(L, b):
    """b <- L^-T b."""
    n = L.shape[0]
    for i in range(n - 1, -1, -1):
        b[i] = (b[i] - _dot(L[i + 1:, i], b[i + 1:], n - i - 1)) / L[i, i]


@njit(**_JIT)
def cho_solve(L, b):
    """b <- (L L^T)^-1 b by two triangular solves."""
    solve_lower(L, b)
    solve_upper_t(L, b)


@njit(**_JIT)
def condition_number(w_min, w_max, k, cholesky_ok):
    """cond = w_max / w_min of a symmetric (k, k) matrix with extreme eigenvalues w_min, w_max;
    +inf (numerically singular) when w_min <= k * eps * w_max, or w_max <= 0, or its
    Cholesky factorisation failed (cholesky_ok False)."""
    if not cholesky_ok or not (w_max > 0.0) or not (w_min > k * EPS * w_max):
        return np.inf
    return w_max / w_min


def spd_condition_number(A):
    """cond(A) of a symmetric positive (semi-)definite (k, k) matrix by the rule of
    :func:`condition_number` (the one every result of the package follows): eigenvalues
    by eigvalsh, +inf when w_min <= k * eps * w_max or the Cholesky factorisation fails.
    The same value on every CPU / BLAS kernel: a singular A gives +inf, never a 1e16 that
    depends on the round-off of one kernel. Plain Python (callers outside the kernels)."""
    A = np.ascontiguousarray(A, dtype=np.float64)
    k = A.shape[0]
    if k == 0:
        return 1.0
    w = np.linalg.eigvalsh(A)
    return float(condition_number(w[0], w[k - 1], k, cholesky(A, np.empty((k, k)))))


# ------------------------------------------------------------------ batch entry points
@njit(**_JIT)
def batch_rnea(bodies, g, q, qd, qdd, fb, X_body_frame, f_ext, out):
    """out[s] = M qdd + C qd + g - J_f^T F_ext (F_ext = f_ext[s] at frame (fb, X_body_frame),
    root axes; an empty f_ext: none)."""
    ws = workspace(bodies.shape[0])
    for s in range(q.shape[0]):
        state_kinematics(bodies, q[s], ws)
        expand_rates(bodies, qd[s], ws.qd_full)
        expand_rates(bodies, qdd[s], ws.qdd_full)
        inverse_dynamics_state(bodies, ws, g, fb, X_body_frame, f_ext, s, out[s])


@njit(**_JIT)
def gravity_chunk(bodies, g, q, out, lo, hi):
    """out[s] = g(q_s) for lo <= s < hi: RNEA with qd = qdd = 0 and Vd_root = [-g; 0], which
    needs only the body poses, the centres of mass and S (no velocities, no rotational
    inertias). Returns how many of those states have a q or a g(q) that is not finite (the
    caller names them). The workspace's arrays are taken out once: passing the whole
    workspace to a function per state costs more than this state's arithmetic."""
    nb, e = bodies.shape[0], np.empty
    q_full, R_root_body, p_root_body, S = pose_scratch(nb)
    m, h, F, tau_full = e(nb), e((nb, 3)), e((nb, 6)), e(nb)
    bad = 0
    for s in range(lo, hi):
        expand_positions(bodies, q[s], q_full)
        forward_kinematics(bodies, q_full, R_root_body, p_root_body, S)
        first_moments(bodies, R_root_body, p_root_body, m, h)
        gravity_pass(bodies, S, m, h, g, F, tau_full)
        reduce_vector(bodies, tau_full, out[s])
        if not (all_finite(q[s]) and all_finite(out[s])):
            bad += 1
    return bad


# One-state entry points: q (n,) and the output without the leading batch axis. The same
# chunk code as the batches (the same bits); the Python side saves building the (1, n)
# views and unwrapping the result, a fifth of a small robot's single call. The views here
# are ``x[None]`` (C-contiguous, no call), not ``x.reshape``: numba's reshape is a helper
# call of about 18 ns each.
@njit(**_JIT)
def one_gravity(bodies, g, q, out):
    """batch_gravity of one state: out (n,) = g(q); returns 1 if q or g(q) is not finite."""
    return gravity_chunk(bodies, g, q[None], out[None], 0, 1)


@njit(**_JIT)
def one_coriolis(bodies, q, qd, out):
    """batch_coriolis of one state: out (n,) = C(q, qd) qd; 1 if not finite."""
    return coriolis_chunk(bodies, q[None], qd[None], out[None], 0, 1)


@njit(**_JIT)
def one_mass(bodies, q, out):
    """batch_mass of one state: out (n, n) = M(q); 1 if not finite."""
    return mass_chunk(bodies, q[None], out[None], 0, 1)


@njit(**_JIT)
def one_jacobian(bodies, q, fb, X_body_frame, J):
    """batch_kinematics of one state, the Jacobian only: J (6, n); 1 if not finite."""
    return kinematics_chunk(bodies, q[None], fb, X_body_frame, np.empty((0, 4, 4)), J[None],
                            0, 1)


@njit(**_JIT)
def batch_gravity(bodies, g, q, out):
    """out[s] = g(q_s), every state in this thread; returns the count of non-finite states."""
    return gravity_chunk(bodies, g, q, out, 0, q.shape[0])


@njit(**_THREADS)
def batch_gravity_threads(bodies, g, q, out, chunks):
    """batch_gravity with the states split into ``chunks`` contiguous blocks run in parallel
    (numba prange; each block has its own workspace, so a state's result is the same bits
    as in batch_gravity)."""
    N, bad = q.shape[0], 0
    for c in prange(chunks):
        bad += gravity_chunk(bodies, g, q, out, c * N // chunks, (c + 1) * N // chunks)
    return bad


@njit(**_JIT)
def coriolis_chunk(bodies, q, qd, out, lo, hi):
    """out[s] = C(q_s, qd_s) qd_s for lo <= s < hi: RNEA with qdd = 0 and no gravity
    (qdd_full stays 0). Returns the count of non-finite states."""
    nb, e = bodies.shape[0], np.empty
    q_full, R_root_body, p_root_body, S = pose_scratch(nb)
    qd_full, qdd_full = e(nb), np.zeros(nb)
    m, h, I_o, V, Vd, F = e(nb), e((nb, 3)), e((nb, 3, 3)), e((nb, 6)), e((nb, 6)), e((nb, 6))
    tau_full, tmp1, tmp2 = e(nb), e(6), e(6)
    bad = 0
    for s in range(lo, hi):
        expand_positions(bodies, q[s], q_full)
        forward_kinematics(bodies, q_full, R_root_body, p_root_body, S)
        world_inertias(bodies, R_root_body, p_root_body, m, h, I_o)
        expand_rates(bodies, qd[s], qd_full)
        rnea_forward(bodies, S, m, h, I_o, qd_full, qdd_full, _ZERO3, V, Vd, F, tmp1, tmp2)
        rnea_backward(bodies, S, F, tau_full)
        reduce_vector(bodies, tau_full, out[s])
        if not (all_finite(q[s]) and all_finite(qd[s]) and all_finite(out[s])):
            bad += 1
    return bad


@njit(**_JIT)
def batch_coriolis(bodies, q, qd, out):
    """out[s] = C(q_s, qd_s) qd_s; returns the count of non-finite states."""
    return coriolis_chunk(bodies, q, qd, out, 0, q.shape[0])


@njit(**_THREADS)
def batch_coriolis_threads(bodies, q, qd, out, chunks):
    """batch_coriolis over ``chunks`` parallel blocks of states (see batch_gravity_threads)."""
    N, bad = q.shape[0], 0
    for c in prange(chunks):
        bad += coriolis_chunk(bodies, q, qd, out, c * N // chunks, (c + 1) * N // chunks)
    return bad


@njit(**_JIT)
def mass_chunk(bodies, q, out, lo, hi):
    """out[s] = M(q_s) (CRBA) for lo <= s < hi; returns the count of non-finite states."""
    nb, e = bodies.shape[0], np.empty
    q_full, R_root_body, p_root_body, S = pose_scratch(nb)
    Ic_m, Ic_h, Ic_o, M_full, tmp1 = e(nb), e((nb, 3)), e((nb, 3, 3)), e((nb, nb)), e(6)
    bad = 0
    for s in range(lo, hi):
        expand_positions(bodies, q[s], q_full)
        forward_kinematics(bodies, q_full, R_root_body, p_root_body, S)
        world_inertias(bodies, R_root_body, p_root_body, Ic_m, Ic_h, Ic_o)
        crba_in_place(bodies, S, Ic_m, Ic_h, Ic_o, M_full, tmp1)
        reduce_matrix(bodies, M_full, out[s])
        if not (all_finite(q[s]) and all_finite(out[s])):
            bad += 1
    return bad


@njit(**_JIT)
def batch_mass(bodies, q, out):
    """out[s] = M(q_s) (CRBA); returns the count of non-finite states."""
    return mass_chunk(bodies, q, out, 0, q.shape[0])


@njit(**_THREADS)
def batch_mass_threads(bodies, q, out, chunks):
    """batch_mass over ``chunks`` parallel blocks of states (see batch_gravity_threads)."""
    N, bad = q.shape[0], 0
    for c in prange(chunks):
        bad += mass_chunk(bodies, q, out, c * N // chunks, (c + 1) * N // chunks)
    return bad


@njit(**_JIT)
def path_kinematics(bodies, q_full, path, R_root_body, p_root_body, S):
    """forward_kinematics of the bodies listed in ``path`` only (ascending: a body after its
    parent), e.g. the support of one frame: what its pose and Jacobian need."""
    _kinematics_over(bodies, q_full, path, False, R_root_body, p_root_body, S)


@njit(**_JIT)
def support(bodies, fb):
    """The bodies from the root to body fb (fb and its ancestors), ascending; empty for fb < 0."""
    depth, j = 0, fb
    while j >= 0:
        depth, j = depth + 1, bodies[j].parent
    path = np.empty(depth, dtype=np.int64)
    j = fb
    for d in range(depth - 1, -1, -1):
        path[d], j = j, bodies[j].parent
    return path


@njit(**_JIT)
def kinematics_chunk(bodies, q, fb, X_body_frame, pose, J, lo, hi):
    """pose[s], J[s] (see batch_kinematics) for lo <= s < hi, computing only the support of
    body fb; returns the count of non-finite states."""
    q_full, R_root_body, p_root_body, S = pose_scratch(bodies.shape[0])
    R_root_frame, p_root_frame = np.empty((3, 3)), np.empty(3)
    path = support(bodies, fb)
    bad = 0
    for s in range(lo, hi):
        expand_positions(bodies, q[s], q_full)
        path_kinematics(bodies, q_full, path, R_root_body, p_root_body, S)
        frame_pose(R_root_body, p_root_body, fb, X_body_frame, R_root_frame, p_root_frame)
        finite = all_finite(q[s]) and all_finite(p_root_frame)
        if pose.shape[0] > 0:
            pose[s, :, :] = 0.0
            pose[s, :3, :3] = R_root_frame
            pose[s, :3, 3] = p_root_frame
            pose[s, 3, 3] = 1.0
            finite = finite and all_finite(pose[s])
        if J.shape[0] > 0:
            frame_jacobian(bodies, S, fb, p_root_frame, J[s])
            finite = finite and all_finite(J[s])
        if not finite:
            bad += 1
    return bad


@njit(**_JIT)
def batch_kinematics(bodies, q, fb, X_body_frame, pose, J):
    """pose[s] = X_root_frame (4x4) unless pose is empty (0, 4, 4); J[s] = frame Jacobian
    (6 x n) unless J is empty (0, 6, n). Returns the count of non-finite states."""
    return kinematics_chunk(bodies, q, fb, X_body_frame, pose, J, 0, q.shape[0])


@njit(**_THREADS)
def batch_kinematics_threads(bodies, q, fb, X_body_frame, pose, J, chunks):
    """batch_kinematics over ``chunks`` parallel blocks of states (see batch_gravity_threads)."""
    N, bad = q.shape[0], 0
    for c in prange(chunks):
        bad += kinematics_chunk(bodies, q, fb, X_body_frame, pose, J, c * N // chunks,
                                (c + 1) * N // chunks)
    return bad


@njit(**_JIT)
def batch_bias_acceleration(bodies, q, qd, fb, X_body_frame, out):
    """out[s] = Jdot qd of the frame origin, [linear; angular] in root axes."""
    ws = workspace(bodies.shape[0])
    for s in range(q.shape[0]):
        if fb < 0:
            out[s, :] = 0.0
            continue
        expand_positions(bodies, q[s], ws.q_full)
        expand_rates(bodies, qd[s], ws.qd_full)
        forward_kinematics(bodies, ws.q_full, ws.R_root_body, ws.p_root_body, ws.S)
        velocity_pass(bodies, ws.S, ws.qd_full, ws.V, ws.Vd, ws.tmp1, ws.tmp2)
        frame_pose(ws.R_root_body, ws.p_root_body, fb, X_body_frame, ws.R_root_frame,
                   ws.p_root_frame)
        point_acceleration(ws.V[fb], ws.Vd[fb], ws.p_root_frame, out[s])


@njit(**_JIT)
def batch_coriolis_matrix(bodies, q, qd, out):
    """out[s] = C(q_s, qd_s) = G^T C_full G, Christoffel-consistent."""
    nb = bodies.shape[0]
    ws = workspace(nb)
    C_full = np.empty((nb, nb))
    IV, IS, Y = np.empty(6), np.empty(6), np.empty(6)
    for s in range(q.shape[0]):
        state_kinematics(bodies, q[s], ws)
        expand_rates(bodies, qd[s], ws.qd_full)
        velocity_pass(bodies, ws.S, ws.qd_full, ws.V, ws.Vd, ws.tmp1, ws.tmp2)
        coriolis_full(bodies, ws.S, ws.m, ws.h, ws.I_o, ws.V, C_full, IV, IS, ws.tmp1,
                      ws.tmp2, Y)
        reduce_matrix(bodies, C_full, out[s])


@njit(**_JIT)
def batch_energy(bodies, g, q, qd, out):
    """out[s] = (T, U): T = 1/2 sum_k V_k . I_k V_k, U = -g . sum_k m_k c_k."""
    ws = workspace(bodies.shape[0])
    for s in range(q.shape[0]):
        state_kinematics(bodies, q[s], ws)
        expand_rates(bodies, qd[s], ws.qd_full)
        velocity_pass(bodies, ws.S, ws.qd_full, ws.V, ws.Vd, ws.tmp1, ws.tmp2)
        T = 0.0
        U = 0.0
        for k in range(bodies.shape[0]):
            _inertia_times(ws.m[k], ws.h[k], ws.I_o[k], ws.V[k], ws.tmp1)
            T += 0.5 * _dot6(ws.V[k], ws.tmp1)
            U -= g[0] * ws.h[k, 0] + g[1] * ws.h[k, 1] + g[2] * ws.h[k, 2]
        out[s, 0] = T
        out[s, 1] = U


@njit(**_JIT)
def batch_forward_dynamics(bodies, g, q, qd, tau, fb, X_body_frame, f_ext, out, status):
    """out[s] = M^-1 (tau - C qd - g + J^T F_ext) by Cholesky solves, kinematics once per
    state; status[s] = OK, NOT_POSITIVE_DEFINITE (M), or OVERFLOW (M or qdd not finite)."""
    n = q.shape[1]
    ws = workspace(bodies.shape[0])
    M = np.empty((n, n))
    L_M = np.empty((n, n))
    h_bias = np.empty(n)
    ws.qdd_full[:] = 0.0
    for s in range(q.shape[0]):
        state_kinematics(bodies, q[s], ws)
        expand_rates(bodies, qd[s], ws.qd_full)
        inverse_dynamics_state(bodies, ws, g, fb, X_body_frame, f_ext, s, h_bias)
        mass_matrix(bodies, ws, M)
        out[s, :] = 0.0
        if not all_finite(M):
            status[s] = OVERFLOW
        elif not cholesky(M, L_M):
            status[s] = NOT_POSITIVE_DEFINITE
        else:
            for i in range(n):
                out[s, i] = tau[s, i] - h_bias[i]
            cho_solve(L_M, out[s])
            status[s] = OK if all_finite(out[s]) else OVERFLOW


# ------------------------------------------------------------------ the per-state bundle
def bundle_layout(n, k):
    """The float fields of :func:`batch_bundle`'s output buffer, in order, as (name, per-state
    shape): field i is the C-contiguous block ``out[N * start_i:N * (start_i + size_i)]``
    reshaped to ``(N, *shape_i)`` (start_i = sum of the sizes before it). The numba
    mirror is :func:`bundle_views` (test_kernels checks that they agree)."""
    return (("g", (n,)), ("c", (n,)), ("M", (n, n)), ("J", (k, n)), ("A", (k, k)),
            ("Lambda", (k, k)), ("condition_number", ()), ("eigenvalues", (k,)),
            ("eigenvectors", (k, k)), ("mu", (k,)), ("p", (k,)), ("momentum", (n,)),
            ("ctqd", (n,)))


BundleViews = namedtuple("BundleViews", [name for name, _ in bundle_layout(0, 0)])


@njit(**_JIT)
def bundle_views(out, N, n, k):
    """BundleViews of the buffer ``out`` for N states (the order of bundle_layout)."""
    g, a = _take(out, 0, (N, n))
    c, a = _take(out, a, (N, n))
    M, a = _take(out, a, (N, n, n))
    J, a = _take(out, a, (N, k, n))
    A, a = _take(out, a, (N, k, k))
    Lambda, a = _take(out, a, (N, k, k))
    cond, a = _take(out, a, (N,))
    eigenvalues, a = _take(out, a, (N, k))
    eigenvectors, a = _take(out, a, (N, k, k))
    mu, a = _take(out, a, (N, k))
    p, a = _take(out, a, (N, k))
    momentum, a = _take(out, a, (N, n))
    ctqd, a = _take(out, a, (N, n))
    return BundleViews(g, c, M, J, A, Lambda, cond, eigenvalues, eigenvectors, mu, p,
                       momentum, ctqd)


BundleScratch = namedtuple("BundleScratch", (
    "J6",            # (6, n) frame Jacobian, of which J = the first k rows
    "L_M",           # (n, n) chol(M)
    "Y",             # (k, n) L_M^-1 J^T, transposed: A = Y Y^T
    "L_A",           # (k, k) chol(A)
    "x", "e",        # (n,), (k,) solve vectors
    "Jdot_qd",       # (6,) the frame's bias acceleration
    "W_A",           # (k, k) A's working copy for its eigenvalues (symmetric_eigenvalues)
    "t_A",           # (3, k) that function's vectors
    "H",             # (nb, 6) subtree momenta (momentum_terms)
    "p_full", "ct_full"))   # (nb,) M qd and C^T qd per body, before the mimic reduction


@njit(**_DRIVER)
def bundle_scratch(n, k, nb):
    """Fresh BundleScratch for n coordinates, k task rows and nb bodies (one allocation per
    field)."""
    e = np.empty
    return BundleScratch(e((6, n)), e((n, n)), e((k, n)), e((k, k)), e(n), e(k), e(6),
                         e((k, k)), e((3, k)), e((nb, 6)), e(nb), e(nb))


@njit(**_DRIVER)
def bias_terms(bodies, g, qd, fb, ws, want_Jdot_qd, g_out, c_out, Jdot_qd):
    """g_out = g(q), c_out = C(q, qd) qd, and (if want_Jdot_qd) Jdot qd of the frame origin
    ws.p_root_frame on body fb, from the kinematics and inertias in ws (ws.qdd_full = 0)."""
    gravity_pass(bodies, ws.S, ws.m, ws.h, g, ws.F, ws.tau_full)
    reduce_vector(bodies, ws.tau_full, g_out)
    expand_rates(bodies, qd, ws.qd_full)
    rnea_forward(bodies, ws.S, ws.m, ws.h, ws.I_o, ws.qd_full, ws.qdd_full, _ZERO3, ws.V,
                 ws.Vd, ws.F, ws.tmp1, ws.tmp2)
    if want_Jdot_qd:         # the frame's acceleration with qdd = 0, no gravity
        if fb >= 0:
            point_acceleration(ws.V[fb], ws.Vd[fb], ws.p_root_frame, Jdot_qd)
        else:
            Jdot_qd[:] = 0.0
    rnea_backward(bodies, ws.S, ws.F, ws.tau_full)
    reduce_vector(bodies, ws.tau_full, c_out)


@njit(**_JIT)
def momentum_terms(bodies, S, m, h, I_o, V, H, tmp, p_full, ct_full, p, ct):
    """p = M(q) qd and ct = C(q, qd)^T qd (C the Christoffel factorization, dM/dt = C + C^T),
    both (n,), in O(n) from the body velocities V of a velocity pass (V_i = V_p + S_i qd_i).

    With h_k = I_k V_k the spatial momentum of body k (root origin, root axes) and H_i the
    sum of h_k over the subtree of body i: M = sum_k J_k^T I_k J_k gives p_i = S_i . H_i.
    Differentiating, dM/dt qd = C qd + w with w_i = Sdot_i . H_i, Sdot_i = V_i x S_i (the
    other two terms of the derivative, J_k^T (I_k Jdot_k qd + V_k x* I_k V_k), are RNEA's
    C qd at qdd = 0). Since dM/dt = C + C^T, C^T qd = dM/dt qd - C qd = w: no n x n matrix
    (docs/math.md section 8). Mimic joints: p = G^T p_full, ct = G^T ct_full.
    H (nb, 6), tmp (6,), p_full, ct_full (nb,) are scratch."""
    nb = bodies.shape[0]
    for i in range(nb):
        _inertia_times(m[i], h[i], I_o[i], V[i], H[i])
    for i in range(nb - 1, -1, -1):
        p_full[i] = _dot6(S[i], H[i])
        _cross_motion(V[i], S[i], tmp)       # Sdot_i
        ct_full[i] = _dot6(tmp, H[i])
        par = bodies[i].parent
        if par >= 0:
            for k in range(6):
                H[par, k] += H[i, k]
    reduce_vector(bodies, p_full, p)
    reduce_vector(bodies, ct_full, ct)


@njit(**_JIT)
def task_space_inverse(M, J, L_M, Y, A):
    """A = J M^-1 J^T = Y Y^T with the rows of Y = L_M^-1 (rows of J), L_M = chol(M).
    Returns OK, NOT_POSITIVE_DEFINITE (M) or OVERFLOW (M, J or A not finite)."""
    if not all_finite(M):
        return OVERFLOW
    if not cholesky(M, L_M):
        return NOT_POSITIVE_DEFINITE
    k, n = J.shape
    # Y = (L_M^-1 J^T)^T: the k forward substitutions side by side (row i of every right-hand
    # side, then row i + 1): one substitution is a chain of dependent divisions, k of them
    # interleaved overlap (29 joints: 1.8 -> about 1 us for the six)
    for i in range(n):
        d = L_M[i, i]
        for r in range(k):
            Y[r, i] = (J[r, i] - _dot(Y[r], L_M[i], i)) / d
    for r in range(k):
        for c in range(r + 1):
            acc = _dot(Y[r], Y[c], n)
            A[r, c] = acc
            A[c, r] = acc
    if not (all_finite(J) and all_finite(A)):
        return OVERFLOW      # e.g. a huge prismatic q: no eigh of inf/NaN
    return OK


@njit(**_JIT)
def inverse_from_cholesky(L, Z, X):
    """X = (L L^T)^-1 = Z^T Z with Z = L^-1 (lower triangular, into Z; its upper part is not
    used): row i of Z from the rows above it, Z[i, c] = -(sum_{c <= m < i} L[i, m] Z[m, c]) /
    L[i, i], Z[i, i] = 1 / L[i, i]; then X[r, c] = sum_{i >= max(r, c)} Z[i, r] Z[i, c].
    Exactly symmetric. The entries of a row of Z are independent of each other, so their
    divisions overlap (k Cholesky solves against the unit vectors run k chains of dependent
    divisions one after the other: 0.35 us of a 6x6, against about 0.1 us here)."""
    k = L.shape[0]
    for i in range(k):
        d = L[i, i]
        for c in range(i):
            acc = 0.0
            for m in range(c, i):
                acc += L[i, m] * Z[m, c]
            Z[i, c] = -acc / d
        Z[i, i] = 1.0 / d
    for r in range(k):
        for c in range(r + 1):
            acc = 0.0
            for i in range(r, k):
                acc += Z[i, r] * Z[i, c]
            X[r, c] = acc
            X[c, r] = acc


@njit(**_JIT)
def spectral_inverse(w, vec, damping, Lambda, e):
    """Lambda = V diag(e) V^T over the eigenpairs (w ascending, vec columns) of A:
    e_i = s_i / (s_i^2 + damping^2) if damping > 0 (damped inverse), else the
    pseudo-inverse 1 / s_i over the s_i > 1e-12 s_max (0 below)."""
    k = w.shape[0]
    s_max = w[k - 1]
    for i in range(k):
        s_i = max(w[i], 0.0)
        if damping > 0.0:
            e[i] = damped_inverse_gain(s_i, damping)
        elif s_i > 1e-12 * s_max:
            e[i] = 1.0 / s_i
        else:
            e[i] = 0.0
    for r in range(k):
        for c in range(k):
            acc = 0.0
            for i in range(k):
                acc += vec[r, i] * e[i] * vec[c, i]
            Lambda[r, c] = acc


@njit(**_JIT)
def _eigh(A, w_out, vec_out):
    """w_out, vec_out = eigenvalues (ascending) and eigenvector columns of the symmetric A."""
    w, vec = np.linalg.eigh(A)
    w_out[:] = w
    vec_out[:, :] = vec


@njit(**_JIT)
def lambda_with_damping(A, damping, damping_condition, want_vectors, L_A, Lambda, w_out,
                        vec_out, e, W, t):
    """Lambda from A = J M^-1 J^T; returns (cond(A), singular).

    cond(A) from its eigenvalues (:func:`condition_number`): the eigenvalues alone
    (:func:`symmetric_eigenvalues`, no LAPACK call, W (k, k) and t (3, k) its scratch) when A
    is well conditioned (w_min > EIGVALSH_MIN_RATIO w_max) and no eigenvectors are wanted;
    LAPACK's eigh otherwise, into w_out, vec_out. singular = cond >
    SINGULAR_COND. Damping d > 0 applies to the states with cond > damping_condition:
    the damped inverse; a singular state without damping: the pseudo-inverse; every other
    state: A^-1 from its Cholesky factor (:func:`inverse_from_cholesky`).
    """
    k = A.shape[0]
    have_vectors = want_vectors
    if want_vectors:
        _eigh(A, w_out, vec_out)
    else:
        converged = symmetric_eigenvalues(A, W, w_out, t[0], t[1], t[2])
        if not (converged and w_out[0] > EIGVALSH_MIN_RATIO * w_out[k - 1]):
            _eigh(A, w_out, vec_out)
            have_vectors = True
    cond = condition_number(w_out[0], w_out[k - 1], k, cholesky(A, L_A))
    singular = cond > SINGULAR_COND
    damped = damping > 0.0 and cond > damping_condition
    if not damped and not singular:
        inverse_from_cholesky(L_A, W, Lambda)      # (W is free again: scratch for L_A^-1)
        return cond, False
    if not have_vectors:                     # the spectral inverse needs the eigenvectors
        _eigh(A, w_out, vec_out)
    spectral_inverse(w_out, vec_out, damping if damped else 0.0, Lambda, e)
    return cond, singular


@njit(**_JIT)
def operational_space_bias(L_M, J, v, Jdot_qd, Lambda, x, e, out):
    """out = Lambda (J M^-1 v - Jdot_qd): mu (v = C qd) or p (v = g, Jdot_qd = 0)."""
    k, n = J.shape
    x[:] = v
    cho_solve(L_M, x)
    for r in range(k):
        acc = 0.0
        for i in range(n):
            acc += J[r, i] * x[i]
        e[r] = acc - Jdot_qd[r]
    for r in range(k):
        acc = 0.0
        for c in range(k):
            acc += Lambda[r, c] * e[c]
        out[r] = acc


@njit(**_DRIVER)
def _bundle_state(bodies, g, q, qd, fb, X_body_frame, k, damping, damping_condition, flags,
                  ws, bs, res, s):
    """One state of batch_bundle into res.*[s]; returns (status, singular)."""
    expand_positions(bodies, q, ws.q_full)
    forward_kinematics(bodies, ws.q_full, ws.R_root_body, ws.p_root_body, ws.S)
    world_inertias(bodies, ws.R_root_body, ws.p_root_body, ws.m, ws.h, ws.I_o)
    M, J = res.M[s], res.J[s]
    crba(bodies, ws.S, ws.m, ws.h, ws.I_o, ws.Ic_m, ws.Ic_h, ws.Ic_o, ws.M_full, ws.tmp1)
    reduce_matrix(bodies, ws.M_full, M)
    frame_pose(ws.R_root_body, ws.p_root_body, fb, X_body_frame, ws.R_root_frame,
               ws.p_root_frame)
    frame_jacobian(bodies, ws.S, fb, ws.p_root_frame, bs.J6)
    J[:, :] = bs.J6[:k, :]
    if flags & (BIAS | OPERATIONAL | MOMENTUM):
        bias_terms(bodies, g, qd, fb, ws, (flags & OPERATIONAL) != 0, res.g[s], res.c[s], bs.Jdot_qd)
    if flags & MOMENTUM:       # (ws.V: the velocities of bias_terms' forward pass)
        momentum_terms(bodies, ws.S, ws.m, ws.h, ws.I_o, ws.V, bs.H, ws.tmp1, bs.p_full,
                       bs.ct_full, res.momentum[s], res.ctqd[s])
    status = task_space_inverse(M, J, bs.L_M, bs.Y, res.A[s])
    if status != OK:
        res.condition_number[s] = np.inf
        res.Lambda[s, :, :] = 0.0
        return status, True
    Lambda = res.Lambda[s]
    res.condition_number[s], singular = lambda_with_damping(
        res.A[s], damping, damping_condition, (flags & EIGENVECTORS) != 0, bs.L_A, Lambda,
        res.eigenvalues[s], res.eigenvectors[s], bs.e, bs.W_A, bs.t_A)
    finite = all_finite(Lambda)
    if flags & (BIAS | OPERATIONAL | MOMENTUM):
        finite = finite and all_finite(res.g[s]) and all_finite(res.c[s])
    if flags & MOMENTUM:
        finite = finite and all_finite(res.momentum[s]) and all_finite(res.ctqd[s])
    if flags & OPERATIONAL:
        operational_space_bias(bs.L_M, J, res.c[s], bs.Jdot_qd, Lambda, bs.x, bs.e, res.mu[s])
        operational_space_bias(bs.L_M, J, res.g[s], _ZERO6, Lambda, bs.x, bs.e, res.p[s])
        finite = finite and all_finite(res.mu[s]) and all_finite(res.p[s])
    return OK if finite else OVERFLOW, singular


@njit(**_JIT)
def one_bundle(bodies, g, q, qd, fb, X_body_frame, damping, damping_condition, g_out, c_out,
               M, J, A, Lambda, cond, p_out, ct_out):
    """batch_bundle of one state with flags BIAS (compute_all), k = J.shape[0], into separate
    outputs without the batch axis (cond (1,)): the same _bundle_state code (the same bits),
    without the buffer's views (twelve reshape calls) and with outputs the caller returns as
    they are; with MOMENTUM too when p_out and ct_out are (n,) (empty (0,): not asked for).
    Returns status * 2 + singular (status BAD_INPUT for a q or qd not finite)."""
    if not (all_finite(q) and all_finite(qd)):
        return BAD_INPUT * 2 + 1
    n, k, e, nb = q.shape[0], J.shape[0], np.empty, bodies.shape[0]
    momentum = p_out.shape[0] > 0
    res = BundleViews(g_out[None], c_out[None], M[None], J[None], A[None], Lambda[None], cond,
                      e((1, k)), e((1, k, k)), e((0, k)), e((0, k)),   # (mu, p: not asked for)
                      p_out[None], ct_out[None])
    status, singular = _bundle_state(bodies, g, q, qd, fb, X_body_frame, k, damping,
                                     damping_condition, (BIAS | MOMENTUM) if momentum else BIAS,
                                     workspace(nb), bundle_scratch(n, k, nb), res, 0)
    return status * 2 + (1 if singular else 0)


@njit(**_JIT)
def batch_bundle(bodies, g, q, qd, fb, X_body_frame, k, damping, damping_condition, flags,
                 out, singular, status):
    """Per-state bundle: M, J (the first k rows of the frame Jacobian: k = 3 linear only),
    A = J M^-1 J^T, cond(A), Lambda (:func:`lambda_with_damping`), and by ``flags``
    (BIAS | OPERATIONAL | EIGENVECTORS): g, c = C qd; mu = Lambda (J M^-1 c - Jdot qd),
    p = Lambda J M^-1 g; the eigen-decomposition of A.

    ``out`` (float, N * sum of the field sizes) holds the fields of :func:`bundle_layout`
    (one buffer: a single argument and allocation per call); ``singular`` (bool) and
    ``status`` (int: OK, NOT_POSITIVE_DEFINITE, OVERFLOW, BAD_INPUT) have one entry per state. A
    state whose status is not OK has cond = inf, singular True and its other fields
    unspecified.
    """
    bundle_chunk(bodies, g, q, qd, fb, X_body_frame, k, damping, damping_condition, flags, out,
                 singular, status, 0, q.shape[0])


@njit(**_THREADS)
def batch_bundle_threads(bodies, g, q, qd, fb, X_body_frame, k, damping, damping_condition,
                         flags, out, singular, status, chunks):
    """batch_bundle over ``chunks`` parallel blocks of states (see batch_gravity_threads)."""
    N = q.shape[0]
    for c in prange(chunks):
        bundle_chunk(bodies, g, q, qd, fb, X_body_frame, k, damping, damping_condition, flags,
                     out, singular, status, c * N // chunks, (c + 1) * N // chunks)


@njit(**_JIT)
def bundle_chunk(bodies, g, q, qd, fb, X_body_frame, k, damping, damping_condition, flags, out,
                 singular, status, lo, hi):
    """States lo <= s < hi of batch_bundle; a state whose q or qd is not finite is skipped
    with status BAD_INPUT (the caller names the entry)."""
    N, n = q.shape
    res = bundle_views(out, N, n, k)
    ws = workspace(bodies.shape[0])
    bs = bundle_scratch(n, k, bodies.shape[0])
    for s in range(lo, hi):
        if not (all_finite(q[s]) and all_finite(qd[s])):
            status[s], singular[s] = BAD_INPUT, True
            res.condition_number[s] = np.inf
            continue
        status[s], singular[s] = _bundle_state(bodies, g, q[s], qd[s], fb, X_body_frame, k,
                                               damping, damping_condition, flags, ws, bs,
                                               res, s)
