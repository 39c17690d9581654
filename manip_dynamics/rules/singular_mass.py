"""A model whose M(q) is singular everywhere: which joint moves no inertia, what to add, and
what the dynamics node can still give (no ROS).

A joint i whose subtree has no mass off its axis and no rotational inertia about it (a
vendor URDF with all inertia tensors zero, a wrist roll carrying a link whose centre of
mass is on the roll axis) has M_ii(q) = 0 at every q: row and column i of M are zero and
M^-1 does not exist. g(q), C(q, qd) qd, M(q) and J(q) are still defined (gravity
compensation needs only g); what needs M^-1 is not: J M^-1 J^T and Lambda, forward
dynamics, the momentum observer's contact estimates.
"""
from __future__ import annotations

import math

import numpy as np

# What needs M^-1 (said in the log, on /diagnostics and in the services' refusals).
NEEDS_INVERSE = ("effective inertia Lambda and J M^-1 J^T", "forward dynamics",
                 "the momentum observer (external torques, wrench, contact)")


def joints_moving_no_inertia(model, samples: int = 8, seed: int = 0,
                             rtol: float = 1e-12) -> list:
    """Names of the joints i with M_ii(q) <= rtol * max_j M_jj(q) at every sampled q.

    Samples: q = 0 clipped into the joint limits, and ``samples`` states drawn uniformly
    within the limits (+-pi where a joint has none), seed ``seed``. A joint listed moves no
    mass and no inertia about its axis at any of them (M(q) singular there)."""
    lower = np.maximum(np.asarray(model.position_lower, dtype=float), -np.pi)
    upper = np.minimum(np.asarray(model.position_upper, dtype=float), np.pi)
    rng = np.random.default_rng(seed)
    Q = np.vstack([np.clip(0.0, lower, upper),
                   lower + (upper - lower) * rng.random((samples, model.n))])
    diag = np.diagonal(model.mass_matrix(Q), axis1=1, axis2=2)      # (N, n)
    zero = diag <= rtol * np.maximum(diag.max(axis=1, keepdims=True), np.finfo(float).tiny)
    return [j for j, z in zip(model.joint_names, zero.all(axis=0)) if z]


def advice(model, joints) -> str:
    """One line: which joints move no inertia, the link to give an inertia, what is
    published and what is not."""
    child = dict(zip(model.body_joint_names, model.body_links))
    named = ", ".join(f"joint '{j}' (give link '{child.get(j, '?')}' a mass off the axis or "
                      "a positive inertia in its <inertial>)" for j in joints)
    return (f"M(q) is singular: {named} moves no inertia about its axis; publishing g, C qd, "
            f"M and J; unavailable: {', '.join(NEEDS_INVERSE)}")


def terms_without_inverse(model, q, qd, frame):
    """DynamicsTerms at one state (q, qd (n,)) with what needs no M^-1: g(q), c = C(q, qd) qd
    (n,), M(q) (n, n), J(q) (6, n) of ``frame``'s origin in root axes; what needs it marked
    unavailable: A = J M^-1 J^T and Lambda empty (0, 0), condition_number inf, singular
    True."""
    from manip_dynamics.core.dynamics.model import DynamicsTerms

    return DynamicsTerms(model.gravity_torques(q), model.coriolis_torques(q, qd),
                         model.mass_matrix(q), model.jacobian(q, frame), np.empty((0, 0)),
                         np.empty((0, 0)), math.inf, True)
