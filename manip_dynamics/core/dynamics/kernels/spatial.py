"""Spatial algebra in root coordinates (cross products, inertia times a motion, dot
products of 6-vectors) and the per-call Workspace the passes fill."""

from collections import namedtuple

import numpy as np
from numba import njit

from .options import _DRIVER, _JIT

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
