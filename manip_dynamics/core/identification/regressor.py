"""The joint-torque regressor tau = Y(q, qd, qdd) pi and the base parameters of a model.

Inverse dynamics is linear in the inertial parameters. With ``pi`` the stacked parameters
of every moving body (and optionally the friction coefficients)::

    tau = M(q) qdd + C(q, qd) qd + g(q) [+ I_a qdd] [+ tau_fr(qd)] = Y(q, qd, qdd) pi

**Bodies.** One moving body per revolute / continuous / prismatic joint, mimic joints
included (``RobotModel.body_links``: the joint's child link, depth-first). Links hanging
below it on ``fixed`` joints are lumped into it (their frames are fixed in the body), so
their inertia is not separately identifiable: the regressor has one 10-column block per
body, not per URDF link. Links fixed to the root carry no dynamics and have no columns.
The body frame is the frame of the body's link. A mimic body has its own block; its
motion is that of its master joint (the Jacobians carry the multiplier), so its columns
need no special case. (Pinocchio lumps the same way: one inertia per joint.)

**Parameter order** (per body, Pinocchio's ``Inertia.toDynamicParameters`` order, chosen so
Pinocchio's ``computeJointTorqueRegressor`` is a column-for-column reference)::

    pi_b = [m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz]

mass (kg), first moment ``h = m c`` (kg m), inertia ``I_O`` about the BODY ORIGIN (kg m^2;
``I_O = I_c + m (|c|^2 1 - c c^T)``, parallel-axis theorem), all in body axes. These ten
are the ones in which the dynamics are linear (``c`` and ``I_c`` are not). The armature
(reflected rotor inertia, ``tau_j += I_a,j qdd_j``), when asked for, appends
``[armature_1..n]`` (columns ``qdd_j``); friction then appends one block of n per term of
the friction model (:data:`FRICTION_MODELS`): ``viscous`` (column qd_j), ``coulomb``
(s(qd_j)), ``coulomb_positive`` (max(s, 0)), ``coulomb_negative`` (min(s, 0)), ``offset``
(1), with s = tanh(qd / width) where the model's ``friction_width`` > 0, else sign(qd)
(RobotModel.friction_torques). ``friction=True`` is the symmetric model
``[viscous_1..n, coulomb_1..n]``.

**Construction.** For body ``b`` with frame origin O, rotation ``R = R_root_b``, Jacobian
``J_b`` (root axes, [v; w] of O), body-axes angular velocity ``w = R^T J_w qd``, angular
acceleration ``dw = R^T (J_w qdd + alpha_bias)`` and classical acceleration of O minus
gravity ``a = R^T (J_v qdd + a_bias - g)``, the Newton-Euler wrench about O is linear in pi_b::

    f = m a + (S(dw) + S(w) S(w)) h
    n = -S(a) h + I_O dw + w x (I_O w)

and the joint torques that produce it are ``J_b^T [R f; R n] = (J_b^body)^T [f; n]``. Only
the public kinematics of RobotModel are used (frame_pose, jacobian, frame_bias_acceleration).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..dynamics.checks import _flag
from ..errors import InputError
from . import arguments

PARAMETER_NAMES = ("m", "mcx", "mcy", "mcz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")
# the friction models the regressor has columns for: name -> its terms, one block of n each
FRICTION_MODELS = {"symmetric": ("viscous", "coulomb"),
                   "asymmetric": ("viscous", "coulomb_positive", "coulomb_negative"),
                   "offset": ("viscous", "coulomb", "offset"),
                   "asymmetric+offset": ("viscous", "coulomb_positive", "coulomb_negative",
                                         "offset")}
NONNEGATIVE_TERMS = ("armature", "viscous", "coulomb", "coulomb_positive", "coulomb_negative")
_SYM = ((0, 0), (0, 1), (1, 1), (0, 2), (1, 2), (2, 2))    # I entries in parameter order


# ----------------------------------------------------------------------------- conversions
def skew(v):
    """S(v) (..., 3, 3) with S(v) x = v x x."""
    v = np.asarray(v, dtype=float)
    S = np.zeros(v.shape[:-1] + (3, 3))
    S[..., 0, 1], S[..., 0, 2], S[..., 1, 2] = -v[..., 2], v[..., 1], -v[..., 0]
    S[..., 1, 0], S[..., 2, 0], S[..., 2, 1] = v[..., 2], -v[..., 1], v[..., 0]
    return S


def _sym_to_vec(I):
    return np.stack([I[..., i, j] for i, j in _SYM], axis=-1)


def _vec_to_sym(v):
    I = np.empty(v.shape[:-1] + (3, 3))
    for k, (i, j) in enumerate(_SYM):
        I[..., i, j] = I[..., j, i] = v[..., k]
    return I


def inertial_parameters(mass, com, I_com):
    """pi (..., 10) from mass (...,) kg, com (..., 3) m and I_com (..., 3, 3) kg m^2 about the
    com, all in one frame: [m, m c, I_O in Pinocchio order], I_O = I_c + m (|c|^2 1 - c c^T)."""
    m = np.asarray(mass, dtype=float)
    c = np.asarray(com, dtype=float)
    I_O = np.asarray(I_com, dtype=float) - m[..., None, None] * skew(c) @ skew(c)
    return np.concatenate([m[..., None], m[..., None] * c, _sym_to_vec(I_O)], axis=-1)


def inertia_from_parameters(pi):
    """(mass (...,), com (..., 3), I_com (..., 3, 3)) from pi (..., 10); com = h / m (0 where
    m <= 0, I_com = I_O then), I_c = I_O + m S(c) S(c)."""
    pi = np.asarray(pi, dtype=float)
    m, h = pi[..., 0], pi[..., 1:4]
    safe = np.where(m > 0, m, 1.0)
    c = np.where((m > 0)[..., None], h / safe[..., None], 0.0)
    I_c = _vec_to_sym(pi[..., 4:10]) + m[..., None, None] * skew(c) @ skew(c)
    return m, c, I_c


def pseudo_inertia(pi):
    """P (..., 4, 4) = [[Sigma, h], [h^T, m]], Sigma = tr(I_O)/2 1 - I_O (the second moment of
    the mass distribution, int r r^T dm). P positive definite <=> a real rigid body (positive
    mass, principal moments obeying the triangle inequality, strictly)."""
    pi = np.asarray(pi, dtype=float)
    I_O = _vec_to_sym(pi[..., 4:10])
    P = np.zeros(pi.shape[:-1] + (4, 4))
    P[..., :3, :3] = 0.5 * np.trace(I_O, axis1=-2, axis2=-1)[..., None, None] * np.eye(3) - I_O
    P[..., :3, 3] = P[..., 3, :3] = pi[..., 1:4]
    P[..., 3, 3] = pi[..., 0]
    return P


def parameters_from_pseudo_inertia(P):
    """pi (..., 10) from P (..., 4, 4) (inverse of pseudo_inertia): I_O = tr(Sigma) 1 - Sigma."""
    P = np.asarray(P, dtype=float)
    Sigma = P[..., :3, :3]
    I_O = np.trace(Sigma, axis1=-2, axis2=-1)[..., None, None] * np.eye(3) - Sigma
    return np.concatenate([P[..., 3, 3:4], P[..., :3, 3], _sym_to_vec(I_O)], axis=-1)


def physically_consistent(pi, rel_tol=1e-12):
    """(...,) bool: smallest eigenvalue of P(pi) > -rel_tol * largest (P >= 0, a real body or
    a limit of real bodies, e.g. a point mass) and m > 0."""
    ev = np.linalg.eigvalsh(pseudo_inertia(pi))
    return (ev[..., 0] > -rel_tol * np.abs(ev).max(axis=-1)) & (np.asarray(pi)[..., 0] > 0)


# ----------------------------------------------------------------------------- regressor
def body_wrench_regressor(w, dw, a):
    """Y_b (N, 6, 10): the wrench [f; n_O] (N, N m) that moves a rigid body, = Y_b pi_b.

    w, dw (N, 3): angular velocity (rad/s) and acceleration (rad/s^2); a (N, 3): classical
    acceleration of the body origin O minus gravity (m/s^2); all in body axes. Moment about O.
    """
    w = arguments.array("w", w, (None, 3))
    dw, a = (arguments.array(name, x, w.shape) for name, x in (("dw", dw), ("a", a)))
    N = w.shape[0]
    Y = np.zeros((N, 6, 10))
    Sw = skew(w)
    Y[:, :3, 0] = a
    Y[:, :3, 1:4] = skew(dw) + Sw @ Sw
    Y[:, 3:, 1:4] = -skew(a)
    Y[:, 3:, 4:] = _inertia_map(dw) + Sw @ _inertia_map(w)
    return Y


def _inertia_map(x):
    """L(x) (N, 3, 6) with I x = L(x) [I_xx, I_xy, I_yy, I_xz, I_yz, I_zz]."""
    L = np.zeros(x.shape[:-1] + (3, 6))
    L[..., 0, 0], L[..., 0, 1], L[..., 0, 3] = x[..., 0], x[..., 1], x[..., 2]
    L[..., 1, 1], L[..., 1, 2], L[..., 1, 4] = x[..., 0], x[..., 1], x[..., 2]
    L[..., 2, 3], L[..., 2, 4], L[..., 2, 5] = x[..., 0], x[..., 1], x[..., 2]
    return L


def _check_states(model, q, qd, qdd):
    """-> (Q, QD, QDD) float (N, n) arrays and single?; InputError naming the bad argument."""
    arrays = []
    for name, x in (("q", q), ("qd", qd), ("qdd", qdd)):
        try:
            a = np.asarray(x, dtype=float)
        except (TypeError, ValueError):
            raise InputError(f"{name} must be a numeric array") from None
        if a.ndim not in (1, 2) or a.shape[-1] != model.n:
            raise InputError(f"{name} must have shape ({model.n},) or (N, {model.n}), "
                             f"got {a.shape}")
        if arrays and a.shape != arrays[0].shape:
            raise InputError(f"{name} must have the shape of q {arrays[0].shape}, got {a.shape}")
        if not np.isfinite(a).all():
            idx = tuple(np.argwhere(~np.isfinite(a))[0])
            raise InputError(f"{name}[{', '.join(map(str, idx))}] (joint "
                             f"{model.joint_names[idx[-1]]!r}) "
                             f"is {a[idx]}")
        arrays.append(a)
    single = arrays[0].ndim == 1
    return [np.atleast_2d(a) for a in arrays] + [single]


def frame_regressor(model, q, qd, qdd, frame):
    """Y_f (n, 10) or (N, n, 10): tau = Y_f pi_f, the joint torques that move (and hold against
    gravity) a rigid body of parameters pi_f (order above, about the origin of link ``frame``,
    in its axes) rigidly attached to ``frame``. A payload's regressor; summed over the bodies
    it gives :func:`joint_torque_regressor`."""
    Q, QD, QDD, single = _check_states(model, q, qd, qdd)
    R = model.frame_pose(Q, frame)[:, :3, :3]
    J = model.jacobian(Q, frame)
    bias = model.frame_bias_acceleration(Q, QD, frame)
    Rt = np.swapaxes(R, 1, 2)
    Jb = np.concatenate([Rt @ J[:, :3], Rt @ J[:, 3:]], axis=1)      # body axes (N, 6, n)
    w = np.einsum("nij,nj->ni", Jb[:, 3:], QD)
    dw = np.einsum("nij,nj->ni", Jb[:, 3:], QDD) + np.einsum("nji,nj->ni", R, bias[:, 3:])
    a = (np.einsum("nij,nj->ni", Jb[:, :3], QDD)
         + np.einsum("nji,nj->ni", R, bias[:, :3] - model.gravity))
    Y = np.swapaxes(Jb, 1, 2) @ body_wrench_regressor(w, dw, a)
    return Y[0] if single else Y


def friction_terms(friction):
    """The friction terms (a tuple of FRICTION_MODELS' names) of ``friction``: False / None
    -> none, True -> the symmetric model, or a key of :data:`FRICTION_MODELS`; InputError
    otherwise."""
    if isinstance(friction, str) and friction in FRICTION_MODELS:
        return FRICTION_MODELS[friction]
    if friction is None:
        return ()
    try:
        on = _flag(friction, "friction")
    except InputError:
        raise InputError(f"friction must be a bool or one of {', '.join(FRICTION_MODELS)}, "
                         f"got {friction!r}") from None
    return FRICTION_MODELS["symmetric"] if on else ()


def joint_terms(friction=False, armature=False):
    """The blocks of n columns after the bodies' (names, in order): 'armature' if
    ``armature``, then :func:`friction_terms`."""
    return (("armature",) if armature else ()) + friction_terms(friction)


def smooth_sign(model, qd):
    """s(qd) (..., n): tanh(qd / width) where the model's friction_width > 0, else sign(qd)."""
    width = model.friction_width
    smooth = width > 0
    return np.where(smooth, np.tanh(qd / np.where(smooth, width, 1.0)), np.sign(qd))


def _term_columns(term, QD, QDD, s):
    """The (N, n) values of one joint term's columns (each on its own joint's row)."""
    return {"armature": lambda: QDD, "viscous": lambda: QD, "coulomb": lambda: s,
            "coulomb_positive": lambda: np.maximum(s, 0.0),
            "coulomb_negative": lambda: np.minimum(s, 0.0),
            "offset": lambda: np.ones_like(QD)}[term]()


def joint_torque_regressor(model, q, qd, qdd, friction=False, armature=False):
    """Y (n, p) or (N, n, p): tau = Y(q, qd, qdd) pi (see the module docstring for pi).

    p = 10 * len(model.body_links) [+ n with armature: column qdd_j of joint j] [+ n per
    friction term (:func:`friction_terms`; True: qd_j (viscous) and s(qd_j) (Coulomb))].
    N*m (or N) per unit parameter; root-frame gravity ``model.gravity``.
    ``Y @ model_parameters(model, friction, armature) == inverse_dynamics`` (with friction;
    the symmetric model's where the model's Coulomb terms are symmetric).
    """
    Q, QD, QDD, single = _check_states(model, q, qd, qdd)
    blocks = [frame_regressor(model, Q, QD, QDD, link) for link in model.body_links]
    terms = joint_terms(friction, armature)
    if terms:
        eye, s = np.eye(model.n), smooth_sign(model, QD)
        blocks += [_term_columns(t, QD, QDD, s)[:, :, None] * eye for t in terms]
    Y = np.concatenate(blocks, axis=2) if blocks else np.zeros(Q.shape + (0,))
    return Y[0] if single else Y


def model_parameters(model, friction=False, armature=False):
    """pi (p,) of ``model`` (payloads included) in the order of joint_torque_regressor
    (coulomb: the model's coulomb, i.e. for qd > 0; coulomb_negative: its magnitude for
    qd < 0; offset: friction_offset)."""
    pi = inertial_parameters(*model.body_inertias()).ravel()
    values = {"armature": model.armature, "viscous": model.viscous, "coulomb": model.coulomb,
              "coulomb_positive": model.coulomb, "coulomb_negative": model.coulomb_negative,
              "offset": model.friction_offset}
    return np.concatenate([pi] + [values[t] for t in joint_terms(friction, armature)])


def parameter_names(model, friction=False, armature=False):
    """('<body link>.m', '<body link>.mcx', ..., 'armature.<joint>', 'viscous.<joint>',
    'coulomb.<joint>', ...): the terms of :func:`joint_terms`, each joint by joint."""
    names = [f"{link}.{p}" for link in model.body_links for p in PARAMETER_NAMES]
    names += [f"{kind}.{j}" for kind in joint_terms(friction, armature)
              for j in model.joint_names]
    return tuple(names)


def term_values(model, pi, friction=False, armature=False):
    """{term: (n,) values} of the joint terms in pi's tail (after the bodies' columns)."""
    start = 10 * len(model.body_links)
    return {t: np.asarray(pi[start + k * model.n:start + (k + 1) * model.n], dtype=float)
            for k, t in enumerate(joint_terms(friction, armature))}


# ----------------------------------------------------------------------------- base parameters
def random_states(model, count, rng):
    """(q, qd, qdd) (count, n): q uniform within the position limits (clipped to [-pi, pi];
    [-pi, pi] where the URDF gives none or an empty range, e.g. lower = upper = 0 as in
    example-robot-data's double pendulum: base parameters from q = 0 alone miss every
    gravity term that vanishes there), qd and qdd standard normal. rng: a numpy Generator."""
    lo = np.maximum(np.nan_to_num(model.position_lower, neginf=-np.pi), -np.pi)
    hi = np.minimum(np.nan_to_num(model.position_upper, posinf=np.pi), np.pi)
    empty = lo >= hi
    lo, hi = np.where(empty, -np.pi, lo), np.where(empty, np.pi, hi)
    q = rng.uniform(lo, hi, (count, model.n))
    return q, rng.normal(size=(count, model.n)), rng.normal(size=(count, model.n))


@dataclass(frozen=True)
class BaseParameters:
    """A minimal set of identifiable parameter combinations: ``beta = pi[base] + K pi[dependent]``
    and ``Y pi = Y[..., base] beta`` for every state.

    names: the full parameter names (p,); base, dependent: index arrays; K (p_b, p_d);
    tolerance: the relative threshold on |R_kk| used; r_kept / r_dropped: the smallest kept
    and largest dropped |R_kk| / |R_00| (a wide gap means a clear-cut rank)."""

    names: tuple
    base: np.ndarray
    dependent: np.ndarray
    K: np.ndarray
    tolerance: float
    r_kept: float
    r_dropped: float

    @property
    def count(self):
        return len(self.base)

    @property
    def matrix(self):
        """B (p_b, p): beta = B pi."""
        B = np.zeros((len(self.base), len(self.names)))
        B[np.arange(len(self.base)), self.base] = 1.0
        B[:, self.dependent] = self.K
        return B

    def beta(self, pi):
        """Base parameters (..., p_b) of full parameters pi (..., p)."""
        pi = np.asarray(pi, dtype=float)
        return pi[..., self.base] + pi[..., self.dependent] @ self.K.T

    def regressor(self, Y):
        """Base regressor Y[..., base] (..., n, p_b): tau = Y_base beta."""
        return Y[..., self.base]

    def expressions(self, digits=4, drop=1e-10):
        """One string per base parameter, e.g. 'panda_link2.Izz + 0.0975 panda_link3.m'."""
        out = []
        for i, k in enumerate(self.base):
            terms = [self.names[k]]
            for j, d in enumerate(self.dependent):
                c = self.K[i, j]
                if abs(c) > drop:
                    terms.append(f"{'-' if c < 0 else '+'} {abs(c):.{digits}g} {self.names[d]}")
            out.append(" ".join(terms))
        return out


def base_parameters(model, friction=False, count=None, seed=0, tolerance=1e-8, armature=False):
    """The base parameters of ``model`` (structure only: they do not depend on its inertias),
    with the joint terms of ``friction`` and ``armature`` (:func:`joint_terms`). (A joint's
    armature about a fixed vertical axis is not separable from its link's inertia about
    that axis: such a column comes out dependent.)

    Stacks Y at ``count`` random states (default: enough for 4x as many rows as columns, at
    least 50), scales every column to unit norm and takes a QR factorisation with column
    pivoting (scipy.linalg.qr, pivoting=True): W P = Q R. Column k of the pivoted order is
    independent when |R_kk| > tolerance * |R_00|. (A column whose norm is below 1e-10 of the
    largest is zero up to round-off -- e.g. a first moment along the first, vertical
    axis -- and is zeroed rather than scaled up.) Justification of the default 1e-8: with
    unit-norm columns a structurally dependent column leaves |R_kk| at round-off, about
    eps * sqrt(rows) < 1e-12; an independent one leaves the distance of its column to the
    span of the previous ones, which for generic random states is >~ 1e-4 on real arms (the
    smallest kept and largest dropped ratios are returned to show the gap). A combination
    below 1e-8 of the largest would in any case change torques by less than any sensor
    resolves. K solves R_11 K = R_12 (unscaled back to the original columns).
    """
    import scipy.linalg

    count = None if count is None else arguments.count("count", count, 1)
    seed = arguments.count("seed", seed, 0)
    tolerance = arguments.scalar("tolerance", tolerance, 0.0, 1.0)
    names = parameter_names(model, friction, armature)
    p = len(names)
    count = count or max(50, -(-4 * p // max(model.n, 1)))
    q, qd, qdd = random_states(model, count, np.random.default_rng(seed))
    W = joint_torque_regressor(model, q, qd, qdd, friction, armature).reshape(-1, p)
    norms = np.linalg.norm(W, axis=0)
    zero = norms <= 1e-10 * norms.max()       # structurally zero, up to round-off (~1e-15)
    scale = np.where(zero, 1.0, norms)
    _, R, perm = scipy.linalg.qr(np.where(zero, 0.0, W / scale), mode="economic",
                                 pivoting=True)
    d = np.abs(np.diag(R))
    d = np.concatenate([d, np.zeros(p - len(d))])
    r = d / d[0] if d[0] > 0 else d
    rank = int(np.count_nonzero(r > tolerance))
    base, dep = perm[:rank], perm[rank:]
    K_scaled = scipy.linalg.solve_triangular(R[:rank, :rank], R[:rank, rank:])
    K = K_scaled * scale[dep][None, :] / scale[base][:, None]
    order = np.argsort(base, kind="stable")            # base columns in parameter order
    return BaseParameters(names, base[order], dep, K[order], tolerance,
                          float(r[rank - 1]) if rank else 0.0,
                          float(r[rank]) if rank < p else 0.0)
