"""The per-state bundle (RobotModel.compute_all): g, c, M, J, A = J M^-1 J^T, Lambda and
cond(A), the inertia ellipsoid, the operational-space terms and the momentum observer's
terms, in one buffer per batch (bundle_layout / bundle_views)."""

from collections import namedtuple

import numpy as np
from numba import njit, prange

from .coordinates import expand_positions, expand_rates, reduce_matrix, reduce_vector
from .kinematics import (forward_kinematics, frame_jacobian, frame_pose, point_acceleration,
                         world_inertias)
from .linalg import _dot, all_finite, cho_solve, cholesky, condition_number, damped_inverse_gain
from .options import (BAD_INPUT, BIAS, EIGENVECTORS, EIGVALSH_MIN_RATIO, MOMENTUM,
                      NOT_POSITIVE_DEFINITE, OK, OPERATIONAL, OVERFLOW, SINGULAR_COND, _DRIVER,
                      _JIT, _THREADS, _ZERO3, _ZERO6)
from .passes import crba, gravity_pass, rnea_backward, rnea_forward
from .spatial import _cross_motion, _dot6, _inertia_times, _take, workspace
from .symmetric_eigen import symmetric_eigenvalues

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
def momentum_terms(bodies, S, m, h, I_o, V, qd_full, H, tmp, p_full, ct_full, p, ct):
    """p = M(q) qd and ct = C(q, qd)^T qd (C the Christoffel factorization, dM/dt = C + C^T),
    both (n,), in O(n) from the body velocities V of a velocity pass (V_i = V_p + S_i qd_i)
    with the joint rates qd_full it used.

    With h_k = I_k V_k the spatial momentum of body k (root origin, root axes) and H_i the
    sum of h_k over the subtree of body i: M = sum_k J_k^T I_k J_k gives p_i = S_i . H_i.
    Differentiating, dM/dt qd = C qd + w with w_i = Sdot_i . H_i, Sdot_i = V_i x S_i (the
    other two terms of the derivative, J_k^T (I_k Jdot_k qd + V_k x* I_k V_k), are RNEA's
    C qd at qdd = 0). Since dM/dt = C + C^T, C^T qd = dM/dt qd - C qd = w: no n x n matrix
    (docs/math.md section 8). The armature adds armature_i qd_i to p_i and nothing to ct
    (it is constant: no dM/dt). Mimic joints: p = G^T p_full, ct = G^T ct_full.
    H (nb, 6), tmp (6,), p_full, ct_full (nb,) are scratch."""
    nb = bodies.shape[0]
    for i in range(nb):
        _inertia_times(m[i], h[i], I_o[i], V[i], H[i])
    for i in range(nb - 1, -1, -1):
        p_full[i] = _dot6(S[i], H[i]) + bodies[i].armature * qd_full[i]
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
    if flags & MOMENTUM:       # (ws.V, ws.qd_full: those of bias_terms' forward pass)
        momentum_terms(bodies, ws.S, ws.m, ws.h, ws.I_o, ws.V, ws.qd_full, bs.H, ws.tmp1,
                       bs.p_full, bs.ct_full, res.momentum[s], res.ctqd[s])
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
