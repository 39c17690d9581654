"""The monitored points of one state in one numba pass: positions, speeds, directions,
effective masses and ISO/TS 15066 speed limits (:mod:`.points`, :mod:`.assessment`).

For a state (q, qd) and P points, each fixed on a body ``fb[i]`` at the constant pose
``X_body_point[i]`` (4 x 4, the link's pose on its body with the point's offset folded into
the translation), one pass computes:

1. the forward kinematics of every body and M by the CRBA, then M = L L^T (Cholesky):
   the core's kernels (:mod:`manip_dynamics.core.dynamics.kernels`), once for all points;
2. per point i, at its root-frame position p_i: J_p,i (3, n), the linear rows of the
   Jacobian at p_i, i.e. [I, -[r]x] J of its link origin (r = p_i - the link origin: the
   core's ``frame_jacobian`` evaluated at p_i, columns G^T (S_v + S_w x p_i));
   v_i = J_p,i qd; Y_i = L^-1 J_p,i^T (three forward substitutions);
   A_i = Y_i^T Y_i = J_p,i M^-1 J_p,i^T (3 x 3, 1/kg);
3. u_i = v_i / |v_i|, or for a point at rest (|v_i| <= the round-off bound of J_p,i qd,
   :func:`rest_speed`; its speed then 0) the unit eigenvector of A_i's smallest
   eigenvalue (the direction of its largest effective mass; :func:`smallest_eigenvector`);
   m_i = 1 / (u_i^T A_i u_i) kg, +inf where u_i^T A_i u_i <= 1e-12 trace(A_i) (the arm
   cannot move the point along u_i);
4. (:func:`assess_points` only) the permissible transient speed v_max,i = F / sqrt(mu_i k),
   mu_i = (1/m_H + 1/m_i)^-1 (:mod:`.limits`), the ratio |v_i| / v_max,i (0 at rest) and
   the index of the largest ratio.

Results go to a caller's ``table`` (P, COLUMNS), one row per point, the float64 fields of
``manip_dynamics_interfaces/SafetyPoint`` in message order: position x, y, z (m, root
axes), speed (m/s), direction x, y, z, effective mass (kg), permissible speed (m/s), ratio.
Scratch is allocated inside the kernel (the core's ``workspace``): nothing is shared between
calls, so several threads may run it at once (nogil).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..core.dynamics.kernels import (BAD_INPUT, NOT_POSITIVE_DEFINITE, OK, OVERFLOW, all_finite,
                            cholesky, frame_jacobian, frame_pose, gram, mass_matrix,
                            solve_lower, state_kinematics, workspace)
from ..core.dynamics.kernels.symmetric_eigen import symmetric_eigenvalues

_JIT = dict(cache=True, nogil=True, fastmath=False, error_model="numpy")

# the table's columns (SafetyPoint's float64 fields, in message order)
X, Y, Z, SPEED, UX, UY, UZ, MASS, V_MAX, RATIO = range(10)
COLUMNS = 10
SINGULAR_MASS = 1e-12     # m = inf where u^T A u <= SINGULAR_MASS trace(A)
EPS = 2.0 ** -52          # float64 machine epsilon
REST_ROUNDOFF = 8.0       # c of the at-rest bound c (d + 2) eps sum_j ... (rest_speed)
EQUAL_EIGENVALUES = 1e-6  # eigenvalues closer than this x the largest are treated as equal

__all__ = ["X", "Y", "Z", "SPEED", "UX", "UY", "UZ", "MASS", "V_MAX", "RATIO", "COLUMNS",
           "OK", "NOT_POSITIVE_DEFINITE", "OVERFLOW", "BAD_INPUT", "point_table",
           "assess_points", "smallest_eigenvector", "rest_speed", "REST_ROUNDOFF"]


@njit(**_JIT)
def _null_vector(A, lam, u):
    """u = a unit vector with (A - lam I) u = 0 for a simple eigenvalue lam of the symmetric
    3 x 3 A: the largest of the cross products of two rows of A - lam I (each is orthogonal
    to the row space, which has rank 2)."""
    b = np.empty((3, 3))
    for r in range(3):
        for c in range(3):
            b[r, c] = A[r, c] - (lam if r == c else 0.0)
    best = -1.0
    for r, s in ((0, 1), (0, 2), (1, 2)):
        c0 = b[r, 1] * b[s, 2] - b[r, 2] * b[s, 1]
        c1 = b[r, 2] * b[s, 0] - b[r, 0] * b[s, 2]
        c2 = b[r, 0] * b[s, 1] - b[r, 1] * b[s, 0]
        size = c0 * c0 + c1 * c1 + c2 * c2
        if size > best:
            best, u[0], u[1], u[2] = size, c0, c1, c2
    size = math.sqrt(best)
    u[0], u[1], u[2] = u[0] / size, u[1] / size, u[2] / size


@njit(**_JIT)
def smallest_eigenvector(A, u):
    """u (3,) = a unit eigenvector of the smallest eigenvalue of the symmetric positive
    semi-definite 3 x 3 A, signed so that its largest component is positive.

    Eigenvalues w0 <= w1 <= w2 by the core's :func:`symmetric_eigenvalues` (no LAPACK);
    with t = EQUAL_EIGENVALUES w2: w1 - w0 > t (w0 simple): the null vector of A - w0 I;
    w2 - w0 <= t (A a multiple of I, e.g. 0: every direction is one): (1, 0, 0); else
    (w0 double): the eigenspace is orthogonal to w2's eigenvector x, u = x times the axis
    along which x is smallest, normalised. (Should the QR iteration not converge, never
    seen: LAPACK's eigh.)"""
    W, w, e, v, p = np.empty((3, 3)), np.empty(3), np.empty(3), np.empty(3), np.empty(3)
    if not symmetric_eigenvalues(A, W, w, e, v, p):
        u[:] = np.linalg.eigh(A)[1][:, 0]
    else:
        t = EQUAL_EIGENVALUES * max(abs(w[2]), abs(w[0]))
        if w[1] - w[0] > t:
            _null_vector(A, w[0], u)
        elif w[2] - w[0] <= t:
            u[0], u[1], u[2] = 1.0, 0.0, 0.0
        else:
            _null_vector(A, w[2], v)
            k = 0
            for j in range(1, 3):
                if abs(v[j]) < abs(v[k]):
                    k = j
            e[:] = 0.0
            e[k] = 1.0
            u[0] = v[1] * e[2] - v[2] * e[1]
            u[1] = v[2] * e[0] - v[0] * e[2]
            u[2] = v[0] * e[1] - v[1] * e[0]
            size = math.sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2])
            u[0], u[1], u[2] = u[0] / size, u[1] / size, u[2] / size
    k = 0
    for j in range(1, 3):
        if abs(u[j]) > abs(u[k]):
            k = j
    if u[k] < 0.0:
        u[0], u[1], u[2] = -u[0], -u[1], -u[2]


@njit(**_JIT)
def rest_speed(bodies, S, p_root_body, fb, p, qd):
    """The round-off of the computed |v| = |J_p qd| (m/s) of the point p (3,) (root axes) on
    body fb: a point whose computed speed is at most this is at rest (module doc, step 3).

        v_rest = c (d + 2) eps sum_j |m_j qd_j| (|S_v,j| + |S_w,j| l),   c = REST_ROUNDOFF

    over the d joints j on the path from fb to the root (m_j the mimic multiplier, S_j the
    root-axes motion subspace [S_v; S_w], S_v = o_j x S_w for a revolute joint through o_j,
    the axis for a prismatic one), l = the largest distance from the root origin of p and
    of the path's body origins (m). Why: J_p's column j is m_j (S_v,j + S_w,j x p); p and
    o_j come out of d rotated translations (each shorter than 2 l), so each carries a
    round-off of about d eps l, and S_w,j one of about d eps: a column's computed entries
    are off by about (d + 1) eps (|S_v,j| + |S_w,j| l) (the cross product and the sum one
    eps more), and J_p qd sums at most d of them (eps per term). A point on the axis of the
    only moving joint has an exact column of 0 but a computed one of order eps l: its
    computed speed lies below v_rest. c = 8 leaves a margin of about 8 over that estimate;
    a point truly moving faster than v_rest (at 1 m from the root, a point 1e-13 m off the
    only moving joint's axis of a 7-joint arm) is treated as moving."""
    if fb < 0:
        return 0.0
    reach = p[0] * p[0] + p[1] * p[1] + p[2] * p[2]
    j = fb
    while j >= 0:
        o = p_root_body[j]
        reach = max(reach, o[0] * o[0] + o[1] * o[1] + o[2] * o[2])
        j = bodies[j].parent
    reach = math.sqrt(reach)
    total, depth, j = 0.0, 0, fb
    while j >= 0:
        Sj = S[j]
        lever = (math.sqrt(Sj[0] * Sj[0] + Sj[1] * Sj[1] + Sj[2] * Sj[2])
                 + math.sqrt(Sj[3] * Sj[3] + Sj[4] * Sj[4] + Sj[5] * Sj[5]) * reach)
        total += abs(bodies[j].mimic_multiplier * qd[bodies[j].q_index]) * lever
        depth += 1
        j = bodies[j].parent
    return REST_ROUNDOFF * (depth + 2) * EPS * total


@njit(**_JIT)
def _point_row(J6, L, qd, p, rest, Yp, A, u, row):
    """One point's row (steps 2-3 of the module doc) from J6 (its first three rows J_p),
    L = chol(M), qd, its position p (3,) and its round-off speed ``rest`` (m/s,
    :func:`rest_speed`: a computed speed up to it is 0, the point at rest); False if p, v,
    rest or A is not finite (the row is then unspecified). Yp (3, n), A (3, 3), u (3,):
    scratch."""
    n = qd.shape[0]
    speed2 = 0.0
    for r in range(3):
        v = 0.0
        for j in range(n):
            Yp[r, j] = J6[r, j]
            v += J6[r, j] * qd[j]
        u[r] = v
        speed2 += v * v
        solve_lower(L, Yp[r])                 # row r of Y^T: L^-1 (row r of J_p)
    gram(Yp, A)                               # A = Y^T Y (Yp = Y^T, 3 x n)
    speed = math.sqrt(speed2)
    if not (all_finite(A) and all_finite(p) and speed * 0.0 == 0.0 and rest * 0.0 == 0.0):
        return False
    if speed <= rest:                         # no speed beyond round-off: at rest
        speed = 0.0
    if speed > 0.0:
        u[0], u[1], u[2] = u[0] / speed, u[1] / speed, u[2] / speed
    else:
        smallest_eigenvector(A, u)
    uau = 0.0
    for r in range(3):
        for c in range(3):
            uau += u[r] * A[r, c] * u[c]
    trace = A[0, 0] + A[1, 1] + A[2, 2]
    row[X], row[Y], row[Z] = p[0], p[1], p[2]
    row[SPEED] = speed
    row[UX], row[UY], row[UZ] = u[0], u[1], u[2]
    row[MASS] = 1.0 / uau if uau > SINGULAR_MASS * trace else np.inf
    row[V_MAX] = 0.0
    row[RATIO] = 0.0
    return True


@njit(**_JIT)
def point_table(bodies, q, qd, fb, X_body_point, table):
    """Columns X..MASS of ``table`` (P, COLUMNS) for the state (q, qd) (n,) each and the P
    points (fb (P,) int, X_body_point (P, 4, 4)); see the module doc. Returns OK, BAD_INPUT
    (q or qd not finite), NOT_POSITIVE_DEFINITE (M) or OVERFLOW (a result not finite); the
    table is unspecified unless OK."""
    if not (all_finite(q) and all_finite(qd)):
        return BAD_INPUT
    n, nb = q.shape[0], bodies.shape[0]
    ws = workspace(nb)
    state_kinematics(bodies, q, ws)            # poses, S and body inertias
    M, L = np.empty((n, n)), np.empty((n, n))
    mass_matrix(bodies, ws, M)                 # CRBA
    if not all_finite(M):
        return OVERFLOW
    if not cholesky(M, L):
        return NOT_POSITIVE_DEFINITE
    J6, Yp, A, u = np.empty((6, n)), np.empty((3, n)), np.empty((3, 3)), np.empty(3)
    for i in range(fb.shape[0]):
        frame_pose(ws.R_root_body, ws.p_root_body, fb[i], X_body_point[i], ws.R_root_frame,
                   ws.p_root_frame)
        frame_jacobian(bodies, ws.S, fb[i], ws.p_root_frame, J6)
        rest = rest_speed(bodies, ws.S, ws.p_root_body, fb[i], ws.p_root_frame, qd)
        if not _point_row(J6, L, qd, ws.p_root_frame, rest, Yp, A, u, table[i]):
            return OVERFLOW
    return OK


@njit(**_JIT)
def speed_limits(table, F, m_H, k):
    """Columns V_MAX and RATIO of ``table`` from its MASS and SPEED columns: v_max = F /
    sqrt(mu k), mu = (1/m_H + 1/m) (m = inf: mu = m_H), ratio = speed / v_max (0 at rest;
    inf for a moving point where F = 0). Returns the row of the largest ratio (the first)."""
    worst, top = 0, -1.0
    for i in range(table.shape[0]):
        row = table[i]
        mu = 1.0 / (1.0 / m_H + 1.0 / row[MASS])
        row[V_MAX] = F / math.sqrt(mu * k)
        row[RATIO] = row[SPEED] / row[V_MAX] if row[SPEED] > 0.0 else 0.0
        if row[RATIO] > top:
            worst, top = i, row[RATIO]
    return worst


@njit(**_JIT)
def assess_points(bodies, q, qd, fb, X_body_point, F, m_H, k, table):
    """Every column of ``table``: :func:`point_table` then :func:`speed_limits` for a body
    region (m_H kg, k N/m) and the force F (N) of v_max = F / sqrt(mu k). Returns (status,
    the row of the largest ratio) (status as point_table's; the row 0 unless OK)."""
    status = point_table(bodies, q, qd, fb, X_body_point, table)
    if status != OK:
        return status, 0
    return OK, speed_limits(table, F, m_H, k)
