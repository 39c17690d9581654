"""Batch and one-state entry points of the single-purpose algorithms (RNEA, g, C qd, M,
kinematics and Jacobians, bias accelerations, C, energies, forward dynamics), serial and
threaded (prange over chunks of states)."""

import numpy as np
from numba import njit, prange

from .coordinates import expand_positions, expand_rates, reduce_matrix, reduce_vector
from .kinematics import (_kinematics_over, first_moments, forward_kinematics, frame_jacobian,
                         frame_pose, point_acceleration, state_kinematics, world_inertias)
from .linalg import all_finite, cho_solve, cholesky
from .options import NOT_POSITIVE_DEFINITE, OK, OVERFLOW, _JIT, _THREADS, _ZERO3
from .passes import (coriolis_full, crba_in_place, gravity_pass, inverse_dynamics_state,
                     mass_matrix, rnea_backward, rnea_forward, velocity_pass)
from .spatial import _dot6, _inertia_times, pose_scratch, workspace

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
    """out[s] = (T, U): T = 1/2 sum_k (V_k . I_k V_k + armature_k qd_k^2) (= 1/2 qd^T M qd),
    U = -g . sum_k m_k c_k."""
    ws = workspace(bodies.shape[0])
    for s in range(q.shape[0]):
        state_kinematics(bodies, q[s], ws)
        expand_rates(bodies, qd[s], ws.qd_full)
        velocity_pass(bodies, ws.S, ws.qd_full, ws.V, ws.Vd, ws.tmp1, ws.tmp2)
        T = 0.0
        U = 0.0
        for k in range(bodies.shape[0]):
            _inertia_times(ws.m[k], ws.h[k], ws.I_o[k], ws.V[k], ws.tmp1)
            T += 0.5 * (_dot6(ws.V[k], ws.tmp1) + bodies[k].armature * ws.qd_full[k] ** 2)
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
