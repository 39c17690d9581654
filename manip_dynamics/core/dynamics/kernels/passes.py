"""The recursive passes (Featherstone ch. 5-6, root coordinates): RNEA forward and
backward, gravity and velocity passes, the CRBA mass matrix, the Coriolis matrix, and
inverse dynamics of one state with an external wrench."""

from numba import njit

from .coordinates import reduce_matrix, reduce_vector
from .kinematics import frame_pose
from .options import _DRIVER, _JIT
from .spatial import _cross, _cross_force, _cross_motion, _dot6, _inertia_times

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
    frame); M_full[i, j] = S_j . (Ic_i S_i) for j on the path i -> root (others zero), plus
    the armature on the diagonal, M_full[i, i] += bodies[i].armature (:func:`crba_in_place`)."""
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
    mass chunk's own scratch: no copy). Every M of the kernels comes from here, so the
    armature (reflected rotor inertia, M = M_rigid + diag(armature)) is added here once."""
    M_full[:, :] = 0.0
    for i in range(bodies.shape[0] - 1, -1, -1):
        _inertia_times(Ic_m[i], Ic_h[i], Ic_o[i], S[i], tmp)
        j = i
        while j >= 0:
            M_full[i, j] = _dot6(S[j], tmp)
            M_full[j, i] = M_full[i, j]
            j = bodies[j].parent
        M_full[i, i] += bodies[i].armature
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
    """tau = G^T (RNEA(q_full, qd_full, qdd_full) + armature * qdd_full) - J_f^T f_ext[s]
    from the kinematics in ws (f_ext (N, 6) at frame (fb, X_body_frame); an empty f_ext
    (0, 6) or fb < 0: none). The armature term is the rotors' share of M qdd."""
    rnea_forward(bodies, ws.S, ws.m, ws.h, ws.I_o, ws.qd_full, ws.qdd_full, g, ws.V, ws.Vd,
                 ws.F, ws.tmp1, ws.tmp2)
    if fb >= 0 and f_ext.shape[0] > 0:
        frame_pose(ws.R_root_body, ws.p_root_body, fb, X_body_frame, ws.R_root_frame,
                   ws.p_root_frame)
        apply_external_wrench(ws.F, fb, ws.p_root_frame, f_ext[s])
    rnea_backward(bodies, ws.S, ws.F, ws.tau_full)
    for i in range(bodies.shape[0]):
        ws.tau_full[i] += bodies[i].armature * ws.qdd_full[i]
    reduce_vector(bodies, ws.tau_full, tau)
