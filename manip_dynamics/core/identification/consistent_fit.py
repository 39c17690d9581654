"""The physically consistent least-squares fit: a semidefinite program (Wensing, Kim &
Slotine, "Linear matrix inequalities for physically consistent inertial parameter
identification", RA-L 2017).

A real rigid body has a positive semidefinite pseudo-inertia ``P(pi_b) = int [r; 1][r; 1]^T
dm`` (regressor.pseudo_inertia), which is LINEAR in pi_b, so "every body is real" is a set
of linear matrix inequalities and the weighted least squares restricted to real bodies is
convex::

    min_pi  | [A pi - z; rho] |           A = R_w B (p_b, p), z = z_w (p_b,)  (R factor of the
    s.t.    D_b P(pi_b) D_b >= margin 1    QR of the weighted base regressor, rho its residual)
            armature, viscous, coulomb >= 0   (the joint terms after the bodies; an offset
                                               has any sign: ``nonnegative``)

(``|[A pi - z; rho]|`` is the whole weighted residual norm, rho the part no beta reduces).
Its optimum is a global one, and a conic interior-point solver certifies it with a dual
bound: the optimality gap reported is primal minus dual objective. Solved with cvxpy
(which writes the problem in conic form) and Clarabel (an interior-point solver for
second-order and semidefinite cones); SCS (first-order) if Clarabel fails. Both are
maintained libraries: scipy has no semidefinite solver, and a hand-written one would
neither be faster nor certify its optimum.

Scaling, so that the conditioning does not depend on the arm's size or units: per body a
mass scale m_s and a length scale L_s from the prior (its mass and sqrt(tr Sigma / m), the
RMS distance of its mass from the body origin; clipped to [1e-2, 1e2] of the arms' median
where the prior has none), the parameters in units of (m_s, m_s L_s, m_s L_s^2), the LMI as
``D_b P D_b`` with ``D_b = diag(1/L_s, 1/L_s, 1/L_s, 1) / sqrt(m_s)`` (a congruence: same
sign), friction in units of the unconstrained estimate's magnitudes (at least 1e-3 of the
largest), and the residual divided by ``|[z; rho]|`` (the objective is the RELATIVE
weighted residual).

The data leave the directions outside the base parameters free, and on a real arm they
barely see others (a wrist's mass) while the rigid-body model cannot explain everything
(rotor inertia, on the UR10e 0.44 kg m^2 on the last joint): fitting the residual exactly
then empties some links and overloads others. A second program (issue 34) takes, among the
real parameters whose relative weighted residual is within (1 + eps_r) of the first's
optimum (``tolerance``, default 1e-3), the one closest to the prior in the distance of
:func:`prior_weights` (friction: closest to the first stage's). Its objective is a weighted
Euclidean norm, whose minimiser over a convex set is unique: the answer does not depend on
round-off (the same input gives the same URDF). Every stage's solver status is kept
(:meth:`ConsistentFit.stage_statuses`); anything but 'optimal' is for the caller to show.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..extras import import_extra
from .regressor import pseudo_inertia

_PSD_VEC = np.stack([pseudo_inertia(e).ravel() for e in np.eye(10)], axis=1)   # (16, 10)


@dataclass(frozen=True)
class ConsistentFit:
    """pi (p,) the parameters written; status of the solver on the fit ('optimal',
    'optimal_inaccurate'); solver ('CLARABEL' or 'SCS'); residual: relative weighted
    residual at pi; optimality_gap: primal minus dual objective of the fit (same units: a
    bound on how far best_residual is from the best one over real bodies); prior_status:
    the solver's status on the closest-to-prior stage ('failed (...)' if it failed: then
    pi is the fit's own); best_residual: the fit's (first stage's) relative residual;
    tolerance: eps_r, residual <= (1 + eps_r) best_residual."""

    pi: np.ndarray
    status: str
    solver: str
    residual: float
    optimality_gap: float
    prior_status: str
    best_residual: float = float("nan")
    tolerance: float = 0.0

    def stage_statuses(self):
        """{stage: solver status}: 'fit' (the least squares over real bodies) and 'closest
        to the prior' (the second stage)."""
        return {"fit": self.status, "closest to the prior": self.prior_status}


def body_scales(prior, nb):
    """(m_s (nb,) kg, L_s (nb,) m): each body's mass and RMS distance of its mass from the
    origin, sqrt(tr Sigma / m), in the prior; where the prior has no (positive) value, the
    median of the others (1 kg, 0.1 m if none), and clipped to [1e-2, 1e2] x that median."""
    bodies = np.asarray(prior[:10 * nb], dtype=float).reshape(nb, 10)
    m = bodies[:, 0]
    tr_sigma = np.trace(pseudo_inertia(bodies)[:, :3, :3], axis1=1, axis2=2)
    ok_m = np.isfinite(m) & (m > 0)
    m_med = float(np.median(m[ok_m])) if ok_m.any() else 1.0
    m_s = np.clip(np.where(ok_m, m, m_med), 1e-2 * m_med, 1e2 * m_med)
    L = np.sqrt(np.where(ok_m & (tr_sigma > 0), tr_sigma / np.where(ok_m, m, 1.0), 0.0))
    ok_L = L > 0
    L_med = float(np.median(L[ok_L])) if ok_L.any() else 0.1
    return m_s, np.clip(np.where(ok_L, L, L_med), 1e-2 * L_med, 1e2 * L_med)


def prior_weights(prior, nb, p):
    """Weights (p,) of the second stage's distance |w (x - x_prior)| in the scaled variables
    x: 1 on masses, (L_s / L_ref)^k on first moments (k = 1) and inertias (k = 2), with L_ref
    the largest body's L_s, 1 on friction. So a change of inertia is measured in units of
    the body's mass times L_ref^2, the arm's size, not of its own tiny m_s L_s^2: a small
    wrist's inertia absorbs what the rigid-body model lacks (the rotor inertia reflected
    through the gear, 0.44 kg m^2 on the UR10e's last joint against 2e-3 of its link), and
    measured against the wrist's own size that change would outweigh every mass, which
    the distance would then move instead (the wrist's 0.2 kg to 1 g)."""
    _, L_s = body_scales(prior, nb)
    powers = np.array([0, 1, 1, 1, 2, 2, 2, 2, 2, 2])
    w = (L_s[:, None] / L_s.max()) ** powers
    return np.concatenate([w.ravel(), np.ones(p - 10 * nb)])


def _scales(A, prior, nb, start):
    """Per-parameter scale s (p,) and the scaled LMI maps G_b (nb, 16, 10): vec(D_b P D_b) =
    G_b x_b with pi_b = s_b x_b. Friction: |start| (the unconstrained estimate; at least
    1e-3 of its largest), else columns of the inertial columns' median norm."""
    m_s, L_s = body_scales(prior, nb)
    powers = np.array([0, 1, 1, 1, 2, 2, 2, 2, 2, 2])
    s_body = m_s[:, None] * L_s[:, None] ** powers                         # (nb, 10)
    d = np.concatenate([np.repeat(1.0 / L_s[:, None], 3, axis=1), np.ones((nb, 1))], axis=1)
    d = d / np.sqrt(m_s)[:, None]                                          # diag of D_b
    DD = (d[:, :, None] * d[:, None, :]).reshape(nb, 16)
    G = DD[:, :, None] * _PSD_VEC[None] * s_body[:, None, :]
    s = s_body.ravel()
    nf = A.shape[1] - 10 * nb
    if nf:
        norms = np.linalg.norm(A, axis=0)
        inertial = norms[:10 * nb] * s
        ref = float(np.median(inertial[inertial > 0])) if (inertial > 0).any() else 1.0
        fr = norms[10 * nb:]
        s_f = np.where(fr > 0, ref / np.where(fr > 0, fr, 1.0), 1.0)
        mag = np.abs(start[10 * nb:]) if start is not None else np.zeros(nf)
        if mag.max() > 0:
            s_f = np.maximum(mag, 1e-3 * mag.max())
        s = np.concatenate([s, s_f])
    return s, G


def consistent_fit(A, z, rho, prior, nb, margin=1e-6, start=None, tolerance=1e-3,
                   nonnegative=None, loose=()):
    """The semidefinite fit of the module docstring -> :class:`ConsistentFit`.

    A (p_b, p), z (p_b,), rho >= 0: min |[A pi - z; rho]| is the weighted least squares
    (identification._qr_ls of the weighted base regressor, A = R_w B); prior (p,): the
    parameters the data leave free are taken from; nb bodies (10 columns each, then
    friction columns, constrained >= 0); margin: the scaled pseudo-inertias D_b P D_b must
    have eigenvalues >= margin (1e-6 of the body's own scale: no body on the boundary,
    which a URDF parser would read as a flat body, and strictly real after the URDF's 12
    significant digits); start (p,) or None: the unconstrained estimate, whose friction
    magnitudes scale the friction columns (the prior's friction is often 0, and the
    friction torque of a small arm can dwarf its inertial torques); tolerance eps_r >= 0:
    the second stage keeps the relative weighted residual within (1 + eps_r) of the
    first's; nonnegative (p - 10 nb,) bool: which joint-term columns (armature, friction)
    are constrained >= 0 (default all); loose: columns the second stage hardly pulls
    (weight 1e-3: an armature no data can separate from its link's inertia takes what the
    link, kept close to the prior, does not hold). InputError if no solver finds the fit's
    optimum."""
    cp = import_extra("cvxpy", __name__)

    A, z, prior = (np.asarray(a, dtype=float) for a in (A, z, prior))
    p = A.shape[1]
    s, G = _scales(A, prior, nb, start)
    norm = float(np.sqrt(z @ z + rho ** 2)) or 1.0
    A_s, z_s, rho_s = A * s / norm, z / norm, float(rho) / norm
    x = cp.Variable(p)
    terms = _TermConstraints(p - 10 * nb, nb, nonnegative)
    real = [cp.reshape(G[b] @ x[10 * b:10 * b + 10], (4, 4), order="F") >> margin * np.eye(4)
            for b in range(nb)] + terms(x)
    residual = cp.norm(cp.hstack([A_s @ x - z_s, np.array([rho_s])]))
    status, solver, gap = _solve(cp.Problem(cp.Minimize(residual), real), ("CLARABEL", "SCS"))
    x_fit = np.array(x.value)
    best = float(np.sqrt(np.sum((A_s @ x_fit - z_s) ** 2) + rho_s ** 2))
    try:
        prior_status, x_out = _closest(A_s, z_s, rho_s, x_fit, best * (1.0 + tolerance),
                                       prior / s, _loosened(prior_weights(prior, nb, p), loose),
                                       G, nb, margin, terms)
    except InputError as exc:
        prior_status, x_out = f"failed ({exc})", x_fit
    res = float(np.sqrt(np.sum((A_s @ x_out - z_s) ** 2) + rho_s ** 2))
    return ConsistentFit(s * x_out, status, solver, res, gap, prior_status, best, tolerance)


def _loosened(weight, loose):
    weight = weight.copy()
    weight[list(loose)] = 1e-3
    return weight


class _TermConstraints:
    """The joint terms' constraints on the scaled x: x_k >= 0 where ``nonnegative`` (default
    every term column)."""

    def __init__(self, count, nb, nonnegative):
        mask = np.ones(count, dtype=bool) if nonnegative is None else np.asarray(nonnegative,
                                                                                 dtype=bool)
        if mask.shape != (count,):
            raise InputError(f"nonnegative must have shape ({count},), got {mask.shape}")
        self.nonneg = 10 * nb + np.nonzero(mask)[0]

    def __call__(self, x):
        return [x[self.nonneg] >= 0] if len(self.nonneg) else []


def _closest(A_s, z_s, rho_s, x_fit, bound, x_prior, weight, G, nb, margin, terms=None):
    """(status, x) of the second stage, in the scaled variables: among the real x with
    |[A_s x - z_s; rho_s]| <= bound, the closest to x_prior in |weight (x - target)| (target:
    x_prior's inertial part, x_fit's friction: the URDF's friction, usually 0, is no prior).
    Written in coordinates where the residual ball has radius 1 whatever its size (noise-free
    data give a best residual of 1e-11, below the solver's feasibility tolerance) and a
    unit step moves x by at most 1: x = x_fit + V diag(c) v + N w (A_s = U diag(sv) V^T, N
    its null space, c = min(radius / sv, 1)), so the ball is |U^T r_fit / radius +
    diag(sv c / radius) v| <= 1: directions the data fix well have coefficient 1, those
    they hardly see (the ball longer than the prior's scale along them) a small one.
    (With radius / sv alone, such a direction had steps of 1e3 and Clarabel stopped on a
    numerical error on the SO-101 made 30x smaller.)"""
    cp = import_extra("cvxpy", __name__)

    p, pb = A_s.shape[1], A_s.shape[0]
    U, sv, Vt = np.linalg.svd(A_s)                       # Vt (p, p): row space, null space
    r_fit = A_s @ x_fit - z_s
    radius = float(np.sqrt(max(bound ** 2 - rho_s ** 2, 0.0))) or 1e-300
    radius = max(radius, float(np.linalg.norm(r_fit)))
    c = np.minimum(radius / sv, 1.0)      # a unit step of v: at most 1 (the prior's scale)
    v, w = cp.Variable(pb), cp.Variable(p - pb)
    x = x_fit + (Vt[:pb].T * c) @ v + Vt[pb:].T @ w
    real = [cp.reshape(G[b] @ x[10 * b:10 * b + 10], (4, 4), order="F") >> margin * np.eye(4)
            for b in range(nb)]
    if terms is not None:
        real += terms(x)
    elif p > 10 * nb:
        real.append(x[10 * nb:] >= 0)
    target = np.concatenate([x_prior[:10 * nb], x_fit[10 * nb:]])
    problem = cp.Problem(cp.Minimize(cp.norm(cp.multiply(weight, x - target))),
                         real + [cp.norm(U.T @ r_fit / radius
                                         + cp.multiply(sv * c / radius, v)) <= 1.0])
    # where Clarabel stops short of 1e-9 ("almost solved": seen with OpenBLAS's Prescott
    # kernels on the SO-101 made 30x smaller, optimal on the host's), once more at 1e-8
    status = _solve(problem, ("CLARABEL_CLOSEST", "CLARABEL_CLOSEST_1E8"),
                    prefer_optimal=True)[0]
    return status, np.asarray(x.value, dtype=float)


_CLOSEST_TOL = 1e-9
_OPTIONS = {"CLARABEL": dict(tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10,
                             max_iter=200),
            "SCS": dict(eps_abs=1e-9, eps_rel=1e-9, max_iters=20000),
            # the second stage: its minimiser is unique (a weighted Euclidean distance), no
            # certificate is reported from it; at 1e-10 Clarabel stopped "almost solved"
            # (gap 4e-14, feasibility short of 1e-10) on a UR5 with noise
            "CLARABEL_CLOSEST": dict(tol_gap_abs=_CLOSEST_TOL, tol_gap_rel=_CLOSEST_TOL,
                                     tol_feas=_CLOSEST_TOL, max_iter=200),
            "CLARABEL_CLOSEST_1E8": dict(tol_gap_abs=1e-8, tol_gap_rel=1e-8, tol_feas=1e-8,
                                         max_iter=200)}


def _solve(problem, solvers, prefer_optimal=False):
    """(status, solver, primal - dual objective) of ``problem`` solved by the first of
    ``solvers`` that reaches an optimum; the variables hold the solution. InputError if
    none does. With ``prefer_optimal``, an 'optimal_inaccurate' end goes on to the next
    solver (options) and is returned only when none of them ends 'optimal'. Through cvxpy's
    get_problem_data / solve_via_data / unpack_results rather than Problem.solve: solve() keeps neither Clarabel's dual objective nor SCS's."""
    cp = import_extra("cvxpy", __name__)

    tried, inaccurate = [], None
    for solver in solvers:
        opts = _OPTIONS[solver]
        try:
            data, chain, inverse = problem.get_problem_data(getattr(cp, solver.split("_")[0]))
            raw = chain.solve_via_data(problem, data, False, False, opts)
            for item in inverse:              # cvxpy's invert reads the options it was given
                if hasattr(item, "solver_options"):
                    item.solver_options = {}
            problem.unpack_results(raw, chain, inverse)
        except (cp.error.SolverError, ValueError, ArithmeticError) as exc:
            tried.append(f"{solver}: {exc}")
            continue
        if problem.status in ("optimal", "optimal_inaccurate"):
            gap = (raw.obj_val - raw.obj_val_dual if solver.startswith("CLARABEL")
                   else raw["info"]["pobj"] - raw["info"]["dobj"])
            if problem.status == "optimal" or not prefer_optimal:
                return problem.status, solver, float(gap)
            inaccurate = (raw, chain, inverse, solver, float(gap))
        tried.append(f"{solver}: {problem.status}")
    if inaccurate is not None:
        raw, chain, inverse, solver, gap = inaccurate      # the last such end, restored
        problem.unpack_results(raw, chain, inverse)
        return problem.status, solver, gap
    raise InputError("the physically consistent fit found no optimum (" + "; ".join(tried)
                     + "): the data may not determine the base parameters")
