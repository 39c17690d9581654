"""The nearest real rigid body to an estimate that is none (issue 34 item 6).

A least-squares estimate pi_b (10,) of a body may have a pseudo-inertia

    P = [[Sigma, h], [h^T, m]],    Sigma = tr(I_O)/2 1 - I_O            (regressor.pseudo_inertia)

with a negative eigenvalue: a negative principal moment, a broken triangle inequality or
m <= 0. No URDF parser takes such a body (ours and Pinocchio's refuse a negative moment), so
``identified_urdf`` writes instead the real body nearest to it in the body's own scale:
with ``D = diag(1/L_s, 1/L_s, 1/L_s, 1) / sqrt(m_s)`` (the consistent fit's congruence,
consistent_fit.body_scales: a body of the prior's size has D P D of order 1),

    S = D P D = V diag(lambda) V^T,    S' = V diag(max(lambda, margin)) V^T,    P' = D^-1 S' D^-1

S' is the nearest matrix to S in the Frobenius norm whose eigenvalues are all >= margin
(Higham 1988: eigenvalue clipping), so P' > 0 (a real body with the consistent fit's
margin) and what the data determined well (the large eigen-directions) is unchanged.
"""
from __future__ import annotations

import numpy as np

from .regressor import parameters_from_pseudo_inertia, pseudo_inertia

MARGIN = 1e-6      # the consistent fit's LMI margin: D P D >= MARGIN 1


def body_congruence(mass_scale, length_scale):
    """d (4,) with D = diag(d): 1/L_s on the three first rows, 1, all over sqrt(m_s)."""
    return np.array([1.0 / length_scale] * 3 + [1.0]) / np.sqrt(mass_scale)


def nearest_real_body(pi_b, mass_scale, length_scale, margin=MARGIN):
    """pi_b' (10,): the body whose scaled pseudo-inertia is the Frobenius-nearest to pi_b's
    with every eigenvalue >= margin (module docstring). pi_b (10,) [m, m c, I_O] in the body
    frame (kg, kg m, kg m^2); mass_scale kg and length_scale m of the body (the prior's)."""
    d = body_congruence(mass_scale, length_scale)
    lam, V = np.linalg.eigh(d[:, None] * pseudo_inertia(pi_b) * d[None, :])
    S = (V * np.maximum(lam, margin)) @ V.T
    return parameters_from_pseudo_inertia(0.5 * (S + S.T) / d[:, None] / d[None, :])


def scaled_min_eigenvalue(pi_b, mass_scale, length_scale):
    """The smallest eigenvalue of D P(pi_b) D (the margin a body has)."""
    d = body_congruence(mass_scale, length_scale)
    return float(np.linalg.eigvalsh(d[:, None] * pseudo_inertia(pi_b) * d[None, :])[0])
