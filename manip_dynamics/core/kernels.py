"""Numba kernels: the rigid-body algorithms, one implementation, batched inside numba.

Conventions (all kernels):

- Every body quantity is expressed in the ROOT frame, about the root ORIGIN ("world"
  spatial notation, Featherstone ch. 2 with linear-first ordering ``[v; w]``):
  a spatial velocity ``V = [v_O; w]`` gives the velocity ``v_P = v_O + w x P`` of any
  body-fixed point P; a spatial force ``F = [f; n_O]``.  In this notation the motion
  subspaces add without transforms: ``V_i = V_parent + S_i qd_i``.
- Body ``i`` (one per moving joint) has parent ``parent[i] < i`` (-1 = root); ``topo``,
  ``geom``, ``inert`` are described in :mod:`manip_dynamics.core.urdf`.
- ``q`` arguments are always batches ``(N, n)`` of independent coordinates; mimic joints
  are expanded by ``q_full = mult * q[master] + offset`` and results are mapped back by
  ``tau = G^T tau_full``, ``M = G^T M_full G``.
- Scratch arrays are allocated per call (never stored in the model): thread safe, and
  ``nogil=True`` lets several threads run kernels at once.
"""
import numpy as np
from numba import njit

_JIT = dict(cache=True, nogil=True, fastmath=False, error_model="numpy")


# ------------------------------------------------------------------ small spatial algebra
@njit(**_JIT)
def _cross(a0, a1, a2, b0, b1, b2):
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@njit(**_JIT)
def _inertia_times(m, h, Io, x, out):
    """out = I x for the spatial inertia (m, h = m c, Io about the origin): [m x_v - h x x_w; h x x_v + Io x_w]."""
    c0, c1, c2 = _cross(h[0], h[1], h[2], x[3], x[4], x[5])
    d0, d1, d2 = _cross(h[0], h[1], h[2], x[0], x[1], x[2])
    out[0] = m * x[0] - c0
    out[1] = m * x[1] - c1
    out[2] = m * x[2] - c2
    for r in range(3):
        out[3 + r] = Io[r, 0] * x[3] + Io[r, 1] * x[4] + Io[r, 2] * x[5]
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


# ------------------------------------------------------------------ kinematics
@njit(**_JIT)
def _expand(topo, geom, q, qf):
    """q_full[i] = mult[i] * q[master[i]] + offset[i]."""
    for i in range(topo.shape[0]):
        qf[i] = geom[i, 15] * q[topo[i, 2]] + geom[i, 16]


@njit(**_JIT)
def _expand_rate(topo, geom, qd, qdf):
    """qd_full = G qd (no offset)."""
    for i in range(topo.shape[0]):
        qdf[i] = geom[i, 15] * qd[topo[i, 2]]


@njit(**_JIT)
def _reduce_vec(topo, geom, tf, out):
    """out = G^T tau_full."""
    out[:] = 0.0
    for i in range(topo.shape[0]):
        out[topo[i, 2]] += geom[i, 15] * tf[i]


@njit(**_JIT)
def forward_kinematics(topo, geom, qf, R, p, S):
    """Root-frame pose (R[i], p[i]) of every body and its motion subspace S[i] (6,).

    ``X_root_i = X_root_parent * X_tree_i * joint_i(q_i)``; revolute ``S = [p x a; a]``,
    prismatic ``S = [a; 0]`` with ``a`` the joint axis in root axes.
    """
    for i in range(topo.shape[0]):
        par = topo[i, 0]
        Rt = geom[i, 3:12]
        pt = geom[i, 12:15]
        # rotation and origin of the joint frame before the joint moves
        Rj = np.empty((3, 3))
        pj = np.empty(3)
        for r in range(3):
            for c in range(3):
                if par < 0:
                    Rj[r, c] = Rt[3 * r + c]
                else:
                    Rj[r, c] = (R[par, r, 0] * Rt[c] + R[par, r, 1] * Rt[3 + c]
                                + R[par, r, 2] * Rt[6 + c])
            if par < 0:
                pj[r] = pt[r]
            else:
                pj[r] = p[par, r] + R[par, r, 0] * pt[0] + R[par, r, 1] * pt[1] + R[par, r, 2] * pt[2]
        k0, k1, k2 = geom[i, 0], geom[i, 1], geom[i, 2]
        a0 = Rj[0, 0] * k0 + Rj[0, 1] * k1 + Rj[0, 2] * k2
        a1 = Rj[1, 0] * k0 + Rj[1, 1] * k1 + Rj[1, 2] * k2
        a2 = Rj[2, 0] * k0 + Rj[2, 1] * k1 + Rj[2, 2] * k2
        if topo[i, 1] == 0:
            # revolute: R_i = Rj * Rot(k, q), Rodrigues Rot = I + s K + (1 - c) K^2
            s, c1 = np.sin(qf[i]), 1.0 - np.cos(qf[i])
            Rl = np.empty((3, 3))
            Rl[0, 0] = 1.0 - c1 * (k1 * k1 + k2 * k2)
            Rl[1, 1] = 1.0 - c1 * (k0 * k0 + k2 * k2)
            Rl[2, 2] = 1.0 - c1 * (k0 * k0 + k1 * k1)
            Rl[0, 1] = -s * k2 + c1 * k0 * k1
            Rl[1, 0] = s * k2 + c1 * k0 * k1
            Rl[0, 2] = s * k1 + c1 * k0 * k2
            Rl[2, 0] = -s * k1 + c1 * k0 * k2
            Rl[1, 2] = -s * k0 + c1 * k1 * k2
            Rl[2, 1] = s * k0 + c1 * k1 * k2
            for r in range(3):
                for c in range(3):
                    R[i, r, c] = Rj[r, 0] * Rl[0, c] + Rj[r, 1] * Rl[1, c] + Rj[r, 2] * Rl[2, c]
                p[i, r] = pj[r]
            v0, v1, v2 = _cross(pj[0], pj[1], pj[2], a0, a1, a2)
            S[i, 0], S[i, 1], S[i, 2] = v0, v1, v2
            S[i, 3], S[i, 4], S[i, 5] = a0, a1, a2
        else:
            R[i] = Rj
            p[i, 0] = pj[0] + a0 * qf[i]
            p[i, 1] = pj[1] + a1 * qf[i]
            p[i, 2] = pj[2] + a2 * qf[i]
            S[i, 0], S[i, 1], S[i, 2] = a0, a1, a2
            S[i, 3], S[i, 4], S[i, 5] = 0.0, 0.0, 0.0


@njit(**_JIT)
def world_inertias(inert, R, p, m, h, Io):
    """Spatial inertia of each body about the root origin: m, h = m c_W, Io = R Ic R^T + m(|c|^2 1 - c c^T)."""
    for i in range(inert.shape[0]):
        mi = inert[i, 0]
        m[i] = mi
        c = np.empty(3)
        for r in range(3):
            c[r] = p[i, r] + R[i, r, 0] * inert[i, 1] + R[i, r, 1] * inert[i, 2] + R[i, r, 2] * inert[i, 3]
            h[i, r] = mi * c[r]
        cc = c[0] * c[0] + c[1] * c[1] + c[2] * c[2]
        # Ic_W = R Ic R^T
        for r in range(3):
            for s in range(3):
                acc = 0.0
                for a in range(3):
                    for b in range(3):
                        acc += R[i, r, a] * inert[i, 4 + 3 * a + b] * R[i, s, b]
                Io[i, r, s] = acc - mi * c[r] * c[s]
            Io[i, r, r] += mi * cc


@njit(**_JIT)
def frame_point(R, p, fb, Xf, out_R, out_p):
    """Root-frame pose of a frame attached to body fb (-1 = root) by the fixed 4x4 Xf."""
    if fb < 0:
        for r in range(3):
            for c in range(3):
                out_R[r, c] = Xf[r, c]
            out_p[r] = Xf[r, 3]
        return
    for r in range(3):
        for c in range(3):
            out_R[r, c] = R[fb, r, 0] * Xf[0, c] + R[fb, r, 1] * Xf[1, c] + R[fb, r, 2] * Xf[2, c]
        out_p[r] = p[fb, r] + R[fb, r, 0] * Xf[0, 3] + R[fb, r, 1] * Xf[1, 3] + R[fb, r, 2] * Xf[2, 3]


# ------------------------------------------------------------------ dynamics passes
@njit(**_JIT)
def rnea_forward(topo, S, m, h, Io, qdf, qddf, grav, V, A, F, t1, t2):
    """Forward pass: V_i = V_p + S_i qd_i; A_i = A_p + S_i qdd_i + V_i x S_i qd_i
    (A_root = [-g; 0], gravity as a fictitious base acceleration); F_i = I_i A_i + V_i x* I_i V_i."""
    for i in range(topo.shape[0]):
        par = topo[i, 0]
        qd, qdd = qdf[i], qddf[i]
        for k in range(6):
            if par >= 0:
                V[i, k] = V[par, k] + S[i, k] * qd
                A[i, k] = A[par, k] + S[i, k] * qdd
            else:
                V[i, k] = S[i, k] * qd
                A[i, k] = (-grav[k] if k < 3 else 0.0) + S[i, k] * qdd
        if qd != 0.0:
            for k in range(6):
                t1[k] = S[i, k] * qd
            _cross_motion(V[i], t1, t2)
            for k in range(6):
                A[i, k] += t2[k]
        _inertia_times(m[i], h[i], Io[i], A[i], F[i])
        _inertia_times(m[i], h[i], Io[i], V[i], t1)
        _cross_force(V[i], t1, t2)
        for k in range(6):
            F[i, k] += t2[k]


@njit(**_JIT)
def rnea_backward(topo, S, F, tf):
    """Backward pass: tau_i = S_i . F_i; F_parent += F_i (no transform: root-frame spatial forces)."""
    for i in range(topo.shape[0] - 1, -1, -1):
        tf[i] = _dot6(S[i], F[i])
        par = topo[i, 0]
        if par >= 0:
            for k in range(6):
                F[par, k] += F[i, k]


@njit(**_JIT)
def crba(topo, geom, S, m, h, Io, Mf, M, Fi):
    """Composite-rigid-body algorithm: Ic_i = I_i + sum_children Ic_c (plain sums in the root
    frame); M_full[i, j] = S_j . (Ic_i S_i) for j on the path i -> root; M = G^T M_full G."""
    nb = topo.shape[0]
    Mf[:, :] = 0.0          # pairs that are not on one root path stay zero
    mc = m.copy()
    hc = h.copy()
    Ioc = Io.copy()
    for i in range(nb - 1, -1, -1):
        _inertia_times(mc[i], hc[i], Ioc[i], S[i], Fi)
        j = i
        while j >= 0:
            Mf[i, j] = _dot6(S[j], Fi)
            Mf[j, i] = Mf[i, j]
            j = topo[j, 0]
        par = topo[i, 0]
        if par >= 0:
            mc[par] += mc[i]
            hc[par] += hc[i]
            Ioc[par] += Ioc[i]
    M[:, :] = 0.0
    for i in range(nb):
        for j in range(nb):
            M[topo[i, 2], topo[j, 2]] += geom[i, 15] * geom[j, 15] * Mf[i, j]


@njit(**_JIT)
def frame_jacobian(topo, geom, S, fb, pf, J):
    """J (6 x n) of the frame origin pf: column of joint j on the path = [S_v + S_w x pf; S_w]."""
    J[:, :] = 0.0
    j = fb
    while j >= 0:
        c0, c1, c2 = _cross(S[j, 3], S[j, 4], S[j, 5], pf[0], pf[1], pf[2])
        col = topo[j, 2]
        mult = geom[j, 15]
        J[0, col] += mult * (S[j, 0] + c0)
        J[1, col] += mult * (S[j, 1] + c1)
        J[2, col] += mult * (S[j, 2] + c2)
        J[3, col] += mult * S[j, 3]
        J[4, col] += mult * S[j, 4]
        J[5, col] += mult * S[j, 5]
        j = topo[j, 0]


@njit(**_JIT)
def point_acceleration(V, A, pf, out):
    """Classical acceleration of the point pf of a body with spatial V, A (root origin):
    [a_O + alpha x pf + w x (v_O + w x pf); alpha]."""
    w0, w1, w2 = _cross(V[3], V[4], V[5], pf[0], pf[1], pf[2])
    v0, v1, v2 = V[0] + w0, V[1] + w1, V[2] + w2
    x0, x1, x2 = _cross(A[3], A[4], A[5], pf[0], pf[1], pf[2])
    y0, y1, y2 = _cross(V[3], V[4], V[5], v0, v1, v2)
    out[0] = A[0] + x0 + y0
    out[1] = A[1] + x1 + y1
    out[2] = A[2] + x2 + y2
    out[3] = A[3]
    out[4] = A[4]
    out[5] = A[5]


@njit(**_JIT)
def coriolis_full(topo, S, m, h, Io, V, Cf, IV, IS, t1, t2, Y):
    """Christoffel-consistent C_full = sum_k J_k^T (B_k J_k + I_k Jdot_k), with
    B(I, V) = 1/2 [V x* I + (I V) xbar* - I V x] (Echeandia & Wensing 2021) and
    Jdot_k columns Sdot_j = V_j x S_j; then dM/dt = C + C^T."""
    nb = topo.shape[0]
    Cf[:, :] = 0.0
    for k in range(nb):
        _inertia_times(m[k], h[k], Io[k], V[k], IV)
        j = k
        while j >= 0:
            _inertia_times(m[k], h[k], Io[k], S[j], IS)
            _cross_force(V[k], IS, Y)          # V x* (I S)
            _cross_force(S[j], IV, t1)         # S x* (I V)  = (I V) xbar* S
            for a in range(6):
                Y[a] = 0.5 * (Y[a] + t1[a])
            _cross_motion(V[k], S[j], t1)      # V x S
            _inertia_times(m[k], h[k], Io[k], t1, t2)
            for a in range(6):
                Y[a] -= 0.5 * t2[a]
            _cross_motion(V[j], S[j], t1)      # Sdot_j
            _inertia_times(m[k], h[k], Io[k], t1, t2)
            for a in range(6):
                Y[a] += t2[a]
            i = k
            while i >= 0:
                Cf[i, j] += _dot6(S[i], Y)
                i = topo[i, 0]
            j = topo[j, 0]


# ------------------------------------------------------------------ dense helpers
@njit(**_JIT)
def all_finite(a):
    """True if every entry of the 1-D or 2-D array a is finite (x * 0 is NaN for inf/NaN)."""
    acc = 0.0
    for x in a.ravel():
        acc += x * 0.0
    return acc == 0.0


@njit(**_JIT)
def damped_inverse_gain(s, d):
    """s / (s^2 + d^2) for an eigenvalue s >= 0 and damping d > 0, written 1 / (s + d (d / s))
    so that d^2 never underflows to 0 (s = 0 -> 0; a non-finite gain -> 0)."""
    if s <= 0.0:
        return 0.0
    e = 1.0 / (s + d * (d / s))
    return e if e * 0.0 == 0.0 else 0.0


@njit(**_JIT)
def cholesky(A, L):
    """A = L L^T (lower). Returns False if A is not (numerically) positive definite."""
    n = A.shape[0]
    L[:, :] = 0.0
    scale = 0.0
    for i in range(n):
        scale = max(scale, abs(A[i, i]))
    for j in range(n):
        d = A[j, j]
        for k in range(j):
            d -= L[j, k] * L[j, k]
        if not (d > 1e-14 * scale) or scale == 0.0:
            return False
        d = np.sqrt(d)
        L[j, j] = d
        for i in range(j + 1, n):
            s = A[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / d
    return True


@njit(**_JIT)
def solve_lower(L, b):
    """b <- L^-1 b."""
    n = L.shape[0]
    for i in range(n):
        s = b[i]
        for k in range(i):
            s -= L[i, k] * b[k]
        b[i] = s / L[i, i]


@njit(**_JIT)
def solve_upper_t(L, b):
    """b <- L^-T b."""
    n = L.shape[0]
    for i in range(n - 1, -1, -1):
        s = b[i]
        for k in range(i + 1, n):
            s -= L[k, i] * b[k]
        b[i] = s / L[i, i]


@njit(**_JIT)
def cho_solve(L, b):
    """b <- (L L^T)^-1 b by two triangular solves."""
    solve_lower(L, b)
    solve_upper_t(L, b)


@njit(**_JIT)
def gravity_pass(topo, S, m, h, grav, F, tf):
    """g_full: F_i = I_i [-g; 0] = [-m g; -h x g] summed down the tree, tau_i = S_i . F_i."""
    nb = topo.shape[0]
    for i in range(nb):
        c0, c1, c2 = _cross(h[i, 0], h[i, 1], h[i, 2], grav[0], grav[1], grav[2])
        F[i, 0] = -m[i] * grav[0]
        F[i, 1] = -m[i] * grav[1]
        F[i, 2] = -m[i] * grav[2]
        F[i, 3] = -c0
        F[i, 4] = -c1
        F[i, 5] = -c2
    rnea_backward(topo, S, F, tf)


# ------------------------------------------------------------------ batch entry points
@njit(**_JIT)
def _scratch(nb):
    return (np.empty(nb), np.empty(nb), np.empty(nb),            # qf, qdf, qddf
            np.empty((nb, 3, 3)), np.empty((nb, 3)), np.empty((nb, 6)),   # R, p, S
            np.empty(nb), np.empty((nb, 3)), np.empty((nb, 3, 3)),       # m, h, Io
            np.empty((nb, 6)), np.empty((nb, 6)), np.empty((nb, 6)),     # V, A, F
            np.empty(6), np.empty(6), np.empty(nb))                      # t1, t2, tf


@njit(**_JIT)
def batch_rnea(topo, geom, inert, grav, q, qd, qdd, fb, Xf, fext, out):
    """out[s] = M qdd + C qd + g - J_f^T F_ext (F_ext = fext[s] at frame (fb, Xf), root axes)."""
    nb = topo.shape[0]
    qf, qdf, qddf, R, p, S, m, h, Io, V, A, F, t1, t2, tf = _scratch(nb)
    Rf = np.empty((3, 3))
    pf = np.empty(3)
    for s in range(q.shape[0]):
        _expand(topo, geom, q[s], qf)
        _expand_rate(topo, geom, qd[s], qdf)
        _expand_rate(topo, geom, qdd[s], qddf)
        forward_kinematics(topo, geom, qf, R, p, S)
        world_inertias(inert, R, p, m, h, Io)
        rnea_forward(topo, S, m, h, Io, qdf, qddf, grav, V, A, F, t1, t2)
        if fb >= 0 and fext.shape[0] > 0:
            # wrench [f; n] at the frame origin pf -> about the root origin: [f; n + pf x f]
            frame_point(R, p, fb, Xf, Rf, pf)
            f = fext[s]
            c0, c1, c2 = _cross(pf[0], pf[1], pf[2], f[0], f[1], f[2])
            F[fb, 0] -= f[0]
            F[fb, 1] -= f[1]
            F[fb, 2] -= f[2]
            F[fb, 3] -= f[3] + c0
            F[fb, 4] -= f[4] + c1
            F[fb, 5] -= f[5] + c2
        rnea_backward(topo, S, F, tf)
        _reduce_vec(topo, geom, tf, out[s])


@njit(**_JIT)
def batch_gravity(topo, geom, inert, grav, q, out):
    """out[s] = g(q_s)."""
    nb = topo.shape[0]
    qf, qdf, qddf, R, p, S, m, h, Io, V, A, F, t1, t2, tf = _scratch(nb)
    for s in range(q.shape[0]):
        _expand(topo, geom, q[s], qf)
        forward_kinematics(topo, geom, qf, R, p, S)
        world_inertias(inert, R, p, m, h, Io)
        gravity_pass(topo, S, m, h, grav, F, tf)
        _reduce_vec(topo, geom, tf, out[s])


@njit(**_JIT)
def batch_mass(topo, geom, inert, q, out):
    """out[s] = M(q_s) (CRBA)."""
    nb = topo.shape[0]
    qf, qdf, qddf, R, p, S, m, h, Io, V, A, F, t1, t2, tf = _scratch(nb)
    Mf = np.empty((nb, nb))
    for s in range(q.shape[0]):
        _expand(topo, geom, q[s], qf)
        forward_kinematics(topo, geom, qf, R, p, S)
        world_inertias(inert, R, p, m, h, Io)
        crba(topo, geom, S, m, h, Io, Mf, out[s], t1)


@njit(**_JIT)
def batch_kinematics(topo, geom, q, fb, Xf, pose, J, want_J):
    """pose[s] = X_root_frame (4x4); J[s] = frame Jacobian (6 x n) if want_J."""
    nb = topo.shape[0]
    qf, qdf, qddf, R, p, S, m, h, Io, V, A, F, t1, t2, tf = _scratch(nb)
    Rf = np.empty((3, 3))
    pf = np.empty(3)
    for s in range(q.shape[0]):
        _expand(topo, geom, q[s], qf)
        forward_kinematics(topo, geom, qf, R, p, S)
        frame_point(R, p, fb, Xf, Rf, pf)
        pose[s, :, :] = 0.0
        pose[s, :3, :3] = Rf
        pose[s, :3, 3] = pf
        pose[s, 3, 3] = 1.0
        if want_J:
            frame_jacobian(topo, geom, S, fb, pf, J[s])


@njit(**_JIT)
def _velocity_pass(topo, S, qdf, V, A, t1, t2):
    """V_i = V_p + S_i qd_i; A_i = A_p + V_i x S_i qd_i (qdd = 0, no gravity)."""
    for i in range(topo.shape[0]):
        par = topo[i, 0]
        for k in range(6):
            V[i, k] = (V[par, k] if par >= 0 else 0.0) + S[i, k] * qdf[i]
            A[i, k] = A[par, k] if par >= 0 else 0.0
            t1[k] = S[i, k] * qdf[i]
        _cross_motion(V[i], t1, t2)
        for k in range(6):
            A[i, k] += t2[k]


@njit(**_JIT)
def batch_bias_acceleration(topo, geom, q, qd, fb, Xf, out):
    """out[s] = Jdot qd of the frame origin, [linear; angular] in root axes."""
    nb = topo.shape[0]
    qf, qdf, qddf, R, p, S, m, h, Io, V, A, F, t1, t2, tf = _scratch(nb)
    Rf = np.empty((3, 3))
    pf = np.empty(3)
    for s in range(q.shape[0]):
        _expand(topo, geom, q[s], qf)
        _expand_rate(topo, geom, qd[s], qdf)
        forward_kinematics(topo, geom, qf, R, p, S)
        if fb < 0:
            out[s, :] = 0.0
            continue
        _velocity_pass(topo, S, qdf, V, A, t1, t2)
        frame_point(R, p, fb, Xf, Rf, pf)
        point_acceleration(V[fb], A[fb], pf, out[s])


@njit(**_JIT)
def batch_coriolis_matrix(topo, geom, inert, q, qd, out):
    """out[s] = C(q_s, qd_s) = G^T C_full G, Christoffel-consistent."""
    nb = topo.shape[0]
    qf, qdf, qddf, R, p, S, m, h, Io, V, A, F, t1, t2, tf = _scratch(nb)
    Cf = np.empty((nb, nb))
    IV = np.empty(6)
    IS = np.empty(6)
    Y = np.empty(6)
    for s in range(q.shape[0]):
        _expand(topo, geom, q[s], qf)
        _expand_rate(topo, geom, qd[s], qdf)
        forward_kinematics(topo, geom, qf, R, p, S)
        world_inertias(inert, R, p, m, h, Io)
        _velocity_pass(topo, S, qdf, V, A, t1, t2)
        coriolis_full(topo, S, m, h, Io, V, Cf, IV, IS, t1, t2, Y)
        C = out[s]
        C[:, :] = 0.0
        for i in range(nb):
            for j in range(nb):
                C[topo[i, 2], topo[j, 2]] += geom[i, 15] * geom[j, 15] * Cf[i, j]


@njit(**_JIT)
def batch_energy(topo, geom, inert, grav, q, qd, out):
    """out[s] = (T, U): T = 1/2 sum_k V_k . I_k V_k, U = -g . sum_k m_k c_k."""
    nb = topo.shape[0]
    qf, qdf, qddf, R, p, S, m, h, Io, V, A, F, t1, t2, tf = _scratch(nb)
    for s in range(q.shape[0]):
        _expand(topo, geom, q[s], qf)
        _expand_rate(topo, geom, qd[s], qdf)
        forward_kinematics(topo, geom, qf, R, p, S)
        world_inertias(inert, R, p, m, h, Io)
        _velocity_pass(topo, S, qdf, V, A, t1, t2)
        T = 0.0
        U = 0.0
        for k in range(nb):
            _inertia_times(m[k], h[k], Io[k], V[k], t1)
            T += 0.5 * _dot6(V[k], t1)
            U -= grav[0] * h[k, 0] + grav[1] * h[k, 1] + grav[2] * h[k, 2]
        out[s, 0] = T
        out[s, 1] = U


@njit(**_JIT)
def batch_forward_dynamics(topo, geom, inert, grav, q, qd, tau, fb, Xf, fext, out, status):
    """out[s] = M^-1 (tau - C qd - g + J^T F_ext) by Cholesky solves; status[s] = 1 if M is not PD,
    2 if M or the result is not finite (overflow)."""
    n = q.shape[1]
    zero = np.zeros((1, n))
    Mf = np.empty((topo.shape[0], topo.shape[0]))
    M = np.empty((n, n))
    L = np.empty((n, n))
    hvec = np.empty((1, n))
    nb = topo.shape[0]
    qf, qdf, qddf, R, p, S, m, h, Io, V, A, F, t1, t2, tf = _scratch(nb)
    for s in range(q.shape[0]):
        batch_rnea(topo, geom, inert, grav, q[s:s + 1], qd[s:s + 1], zero, fb, Xf,
                   fext[s:s + 1] if fext.shape[0] > 0 else fext, hvec)
        _expand(topo, geom, q[s], qf)
        forward_kinematics(topo, geom, qf, R, p, S)
        world_inertias(inert, R, p, m, h, Io)
        crba(topo, geom, S, m, h, Io, Mf, M, t1)
        if not all_finite(M):
            status[s] = 2
            out[s, :] = 0.0
            continue
        if not cholesky(M, L):
            status[s] = 1
            out[s, :] = 0.0
            continue
        for i in range(n):
            out[s, i] = tau[s, i] - hvec[0, i]
        cho_solve(L, out[s])
        status[s] = 0 if all_finite(out[s]) else 2


SINGULAR_COND = 1e12
EIGVALSH_MIN_RATIO = 1e-8     # batch_bundle: eigvalsh instead of eigh when smin > this * smax


def bundle_layout(n, k):
    """The float fields of :func:`batch_bundle`'s output ``out``, in order, as (name, per-state
    shape): field i is the C-contiguous block ``out[N * start_i:N * (start_i + size_i)]``
    reshaped to ``(N, *shape_i)`` (start_i = sum of the sizes before it)."""
    return (("g", (n,)), ("c", (n,)), ("M", (n, n)), ("J", (k, n)), ("A", (k, k)),
            ("Lambda", (k, k)), ("cond", ()), ("ev", (k,)), ("V", (k, k)), ("mu", (k,)),
            ("p", (k,)))


@njit(**_JIT)
def _take(out, start, shape):
    """(out[start:start + size].reshape(shape), start + size) with size = prod(shape)."""
    size = 1
    for d in shape:
        size *= d
    return out[start:start + size].reshape(shape), start + size


@njit(**_JIT)
def batch_bundle(topo, geom, inert, grav, q, qd, fb, Xf, r0, k, damping, damp_cond, want_gc,
                 want_os, want_ev, out, sing, status):
    """Per-state bundle: g, c = C qd, M, J (rows r0:r0+k), A = J M^-1 J^T (by Cholesky
    solves: A = Y^T Y with Y = L^-1 J^T), its condition number (from its eigenvalues),
    Lambda and (if want_os) mu = Lambda (J M^-1 c - Jdot qd), p = Lambda J M^-1 g.
    want_ev: also the eigen-decomposition (ev, V); otherwise a state with cond(A) <
    1 / EIGVALSH_MIN_RATIO gets its eigenvalues alone (eigvalsh, about half the cost of eigh;
    they agree with eigh's to ~1e-8 relative there), and eigenvectors only if it takes the
    spectral Lambda below.

    ``out`` (float, N * sum of the sizes) holds the fields of :func:`bundle_layout` (one
    buffer: a single argument and allocation per call); ``sing`` (bool) and ``status`` (int)
    have one entry per state.

    Lambda: A^-1 by Cholesky solves when cond(A) <= 1e12; damping d > 0 applied to the
    states with cond(A) > damp_cond: V diag(s / (s^2 + d^2)) V^T; singular without
    damping: pseudo-inverse over the eigenvalues s > 1e-12 s_max (the flag ``sing`` says
    so). status[s] = 1 if M is not positive definite, 2 if an output is not finite (overflow).
    """
    N, n = q.shape
    g_out, a = _take(out, 0, (N, n))            # the order of bundle_layout
    c_out, a = _take(out, a, (N, n))
    M_out, a = _take(out, a, (N, n, n))
    J_out, a = _take(out, a, (N, k, n))
    A_out, a = _take(out, a, (N, k, k))
    L_out, a = _take(out, a, (N, k, k))
    cond, a = _take(out, a, (N,))
    evals, a = _take(out, a, (N, k))
    evecs, a = _take(out, a, (N, k, k))
    mu_out, a = _take(out, a, (N, k))
    p_out, a = _take(out, a, (N, k))
    nb = topo.shape[0]
    qf, qdf, qddf, R, p, S, m, h, Io, V, A, F, t1, t2, tf = _scratch(nb)
    Mf = np.empty((nb, nb))
    L = np.empty((n, n))
    Jfull = np.empty((6, n))
    Y = np.empty((k, n))
    LA = np.empty((k, k))
    e = np.empty(k)
    x = np.empty(n)
    jb = np.empty(6)
    Rf = np.empty((3, 3))
    pf = np.empty(3)
    zero3 = np.zeros(3)
    qddf[:] = 0.0
    for s in range(N):
        _expand(topo, geom, q[s], qf)
        forward_kinematics(topo, geom, qf, R, p, S)
        world_inertias(inert, R, p, m, h, Io)
        M = M_out[s]
        crba(topo, geom, S, m, h, Io, Mf, M, t1)
        frame_point(R, p, fb, Xf, Rf, pf)
        frame_jacobian(topo, geom, S, fb, pf, Jfull)
        J = J_out[s]
        J[:, :] = Jfull[r0:r0 + k, :]
        if want_gc:
            gravity_pass(topo, S, m, h, grav, F, tf)
            _reduce_vec(topo, geom, tf, g_out[s])
            _expand_rate(topo, geom, qd[s], qdf)
            rnea_forward(topo, S, m, h, Io, qdf, qddf, zero3, V, A, F, t1, t2)
            if want_os:          # Jdot qd: the frame's acceleration with qdd = 0, no gravity
                if fb >= 0:
                    point_acceleration(V[fb], A[fb], pf, jb)
                else:
                    jb[:] = 0.0
            rnea_backward(topo, S, F, tf)
            _reduce_vec(topo, geom, tf, c_out[s])
        if not all_finite(M):
            status[s] = 2
            A_out[s, :, :] = 0.0
            L_out[s, :, :] = 0.0
            cond[s] = np.inf
            sing[s] = True
            continue
        if not cholesky(M, L):
            status[s] = 1
            A_out[s, :, :] = 0.0
            L_out[s, :, :] = 0.0
            cond[s] = np.inf
            sing[s] = True
            continue
        status[s] = 0
        # A = J M^-1 J^T = Y Y^T with Y rows = L^-1 J rows
        for r in range(k):
            Y[r, :] = J[r, :]
            solve_lower(L, Y[r])
        Amat = A_out[s]
        for r in range(k):
            for c in range(r + 1):
                acc = 0.0
                for i in range(n):
                    acc += Y[r, i] * Y[c, i]
                Amat[r, c] = acc
                Amat[c, r] = acc
        if not (all_finite(J) and all_finite(Amat)):
            status[s] = 2            # overflow (e.g. a huge prismatic q): no eigh of inf/NaN
            L_out[s, :, :] = 0.0
            cond[s] = np.inf
            sing[s] = True
            continue
        # eigenvalues alone (eigvalsh, about half the cost of eigh) for a well-conditioned A
        # that needs no eigenvectors; eigh otherwise, so that ill-conditioned states (the
        # singular flag, the damping) use the same eigenvalues as inertia_ellipsoid
        have_vec = want_ev
        if not want_ev:
            w = np.linalg.eigvalsh(Amat)
            have_vec = not (w[0] > EIGVALSH_MIN_RATIO * w[k - 1])
        if have_vec:
            w, vec = np.linalg.eigh(Amat)
        if want_ev:
            evals[s] = w
            evecs[s] = vec
        smax, smin = w[k - 1], w[0]
        if smax > 0.0 and smin > 0.0:
            cond[s] = smax / smin
        else:
            cond[s] = np.inf
        singular = cond[s] > SINGULAR_COND
        damped = damping > 0.0 and cond[s] > damp_cond
        Lam = L_out[s]
        done = False
        if not damped and not singular:
            if cholesky(Amat, LA):
                for c in range(k):
                    e[:] = 0.0
                    e[c] = 1.0
                    cho_solve(LA, e)
                    Lam[:, c] = e
                done = True
            else:
                singular = True
        sing[s] = singular
        if not done:
            if not have_vec:                     # the spectral inverse needs the eigenvectors
                w, vec = np.linalg.eigh(Amat)
                smax = w[k - 1]
            for i in range(k):
                si = max(w[i], 0.0)
                if damped:
                    e[i] = damped_inverse_gain(si, damping)
                elif si > 1e-12 * smax:
                    e[i] = 1.0 / si
                else:
                    e[i] = 0.0
            for r in range(k):
                for c in range(k):
                    acc = 0.0
                    for i in range(k):
                        acc += vec[r, i] * e[i] * vec[c, i]
                    Lam[r, c] = acc
        if want_os:
            # mu = Lambda (J M^-1 c - Jdot qd), p = Lambda J M^-1 g
            for pass_ in range(2):
                src = c_out[s] if pass_ == 0 else g_out[s]
                x[:] = src
                cho_solve(L, x)
                for r in range(k):
                    acc = 0.0
                    for i in range(n):
                        acc += J[r, i] * x[i]
                    e[r] = acc - (jb[r0 + r] if pass_ == 0 else 0.0)
                dst = mu_out[s] if pass_ == 0 else p_out[s]
                for r in range(k):
                    acc = 0.0
                    for c in range(k):
                        acc += Lam[r, c] * e[c]
                    dst[r] = acc
        # overflow anywhere (huge q, qd, gravity or inertias) -> status 2, never a silent NaN
        ok = all_finite(Lam)
        if want_gc:
            ok = ok and all_finite(g_out[s]) and all_finite(c_out[s])
        if want_os:
            ok = ok and all_finite(mu_out[s]) and all_finite(p_out[s])
        if not ok:
            status[s] = 2
