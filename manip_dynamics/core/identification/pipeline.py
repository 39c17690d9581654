"""Inertial parameter identification from a recording of (t, q, qd, tau).

Pipeline (docs/identification.md has the math):

1. :func:`filter_recording`: resample onto a uniform grid if needed, zero-phase low-pass
   (Butterworth + ``scipy.signal.sosfiltfilt``) of q, qd and tau with the SAME filter, qdd by
   central differences of the filtered qd, trim the edges, decimate.
2. :func:`identify`: base regressor W (rows stacked over samples and joints), ordinary
   least squares, per-joint noise sigma_j from its residuals, weighted least squares with
   rows scaled by 1/sigma_j, covariance ``s^2 (W_w^T W_w)^-1`` and the condition number of
   W_w. Full parameters pi for a URDF: either the prior (URDF) corrected by the smallest
   scaled change that reproduces the estimated base parameters, or (``consistent=True``) the
   physically consistent fit: the weighted least squares subject to every body's
   pseudo-inertia being positive definite with a margin, a semidefinite program solved to
   its certified optimum, then the real parameters closest to the prior within
   ``tolerance`` of that residual (:mod:`.consistent_fit`).
3. :func:`identified_urdf`: the same URDF text with the new ``<inertial>`` (a body that is
   not a real one written as the nearest real body, :mod:`.real_body`, with a note) and,
   with friction, ``<dynamics damping friction>`` (a negative estimate written as 0 with a
   note) values; :func:`check_written_urdf` reads it back and checks every body.
"""
from __future__ import annotations

import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np
import scipy.linalg

from ..dynamics.checks import _as_float, _flag
from ..dynamics.urdf import _parse_inertial
from ..dynamics.model import RobotModel
from ..errors import InputError, ManipDynamicsError
from . import arguments
from .consistent_fit import body_scales, consistent_fit
from .real_body import MARGIN, nearest_real_body, scaled_min_eigenvalue
from .regressor import (NONNEGATIVE_TERMS, base_parameters, friction_terms,
                        inertia_from_parameters, inertial_parameters, joint_terms,
                        joint_torque_regressor, model_parameters, parameter_names,
                        physically_consistent, pseudo_inertia, term_values)


@dataclass(frozen=True)
class Samples:
    """Joint-space samples ready for identification: t (N,) s, q, qd, qdd, tau (N, n).

    coulomb (N, n) or None: the Coulomb regressor column s(qd) (sign(qd), or tanh(qd /
    friction_width) where the width > 0) low-pass filtered at the full rate with the filter
    tau went through (see :func:`filter_recording`), coulomb_positive (N, n) the same of
    max(s, 0) (the negative direction's column is their difference); None: the regressor
    uses s(qd) of the samples. friction_width (n,) rad/s: the width those columns were made
    with (None: 0, sign(qd))."""

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    tau: np.ndarray
    coulomb: np.ndarray | None = None
    coulomb_positive: np.ndarray | None = None
    friction_width: np.ndarray | None = None

    def __post_init__(self):
        """Checks and converts every field: InputError naming it (shape, first bad entry)."""
        t = arguments.array("t", self.t, (None,))
        q = arguments.array("q", self.q, (len(t), None))
        shape = (len(t), q.shape[1])
        fields = dict(t=t, q=q, **{name: arguments.array(name, getattr(self, name), shape)
                                   for name in ("qd", "qdd", "tau")})
        for name in ("coulomb", "coulomb_positive"):
            if getattr(self, name) is not None:
                fields[name] = arguments.array(name, getattr(self, name), shape)
        fields["friction_width"] = _width(self.friction_width, shape[1])
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def __len__(self):
        return len(self.t)

    def split(self, fraction=0.75):
        """(first ``fraction`` of the samples, the rest): fit and held-out data."""
        k = int(round(fraction * len(self.t)))
        return self[:k], self[k:]

    def __getitem__(self, sl):
        return Samples(self.t[sl], self.q[sl], self.qd[sl], self.qdd[sl], self.tau[sl],
                       None if self.coulomb is None else self.coulomb[sl],
                       None if self.coulomb_positive is None else self.coulomb_positive[sl],
                       self.friction_width)


def _width(width, n):
    """friction_width as an (n,) array, finite and >= 0 (a scalar broadcast; None: zeros)."""
    if width is None:
        return np.zeros(n)
    w = _as_float(width, "friction_width")
    w = arguments.array("friction_width", np.full(n, float(w)) if w.ndim == 0 else w, (n,))
    if (w < 0).any():
        j = int(np.argmax(w < 0))
        raise InputError(f"friction_width[{j}] = {w[j]} must be >= 0 (0: sign(qd))")
    return w


# ----------------------------------------------------------------------------- filtering
def _uniform(t, arrays):
    """Resample arrays (N, n) onto a uniform grid with the median step if t is not uniform
    to 1e-3 of a step (linear interpolation); -> (t_uniform, arrays, dt)."""
    dt = float(np.median(np.diff(t)))
    if np.max(np.abs(np.diff(t) - dt)) <= 1e-3 * dt:
        return t, arrays, dt
    tu = t[0] + dt * np.arange(int(np.floor((t[-1] - t[0]) / dt)) + 1)
    return tu, [None if a is None else np.stack([np.interp(tu, t, col) for col in a.T], axis=1)
                 for a in arrays], dt


def filter_recording(t, q, qd, tau, cutoff=10.0, order=4, decimate=None, trim=None,
                     friction_width=0.0):
    """Samples from a recording: zero-phase low-pass, qdd by central differences.

    t (N,) s strictly increasing; q, tau (N, n); qd (N, n) or None (then qd = d q_f / dt).
    cutoff Hz of an ``order``-pole Butterworth run forward and backward (filtfilt: zero
    phase, magnitude |H|^2, so -6 dB at ``cutoff``) on q, qd and tau alike, so the torque
    and the motion see the same filter. qdd = central differences of the filtered qd
    (``np.gradient``, second order). The Coulomb column sign(qd) is discontinuous, so unlike
    the smooth columns it does not commute with the filter: it is filtered explicitly at
    the full rate (``Samples.coulomb``; with its positive part ``coulomb_positive`` for the
    Coulomb friction per direction), as tau was ("parallel filtering" of that column);
    ``friction_width`` (scalar or (n,) rad/s, >= 0): tanh(qd / width) in place of sign(qd)
    where > 0 (the model's ``friction_width``, which :func:`identify` checks).
    ``trim`` samples (default three cutoff periods, 3 fs/cutoff)
    are dropped at each end: filtfilt extends the signal by odd reflection, which is only
    C^1 at the ends, and the transient of the kink decays over a few periods (measured on
    the Panda: qdd error 1e-3 after one period, 1e-5 after three); ``decimate`` keeps every k-th
    sample (default k = floor(fs / (5 cutoff)): above 2x the filtered bandwidth, fewer
    correlated rows). Raises InputError naming the bad argument.
    """
    t = arguments.array("t", t, (None,))
    arrays = [None if a is None else arguments.array(name, a, (len(t), None))
              for name, a in zip(("q", "qd", "tau"), (q, qd, tau))]
    _check_recording(t, arrays)
    order = arguments.count("order", order, 1)
    decimate = None if decimate is None else arguments.count("decimate", decimate, 1)
    trim = None if trim is None else arguments.count("trim", trim, 0)
    width = _width(friction_width, arrays[0].shape[1])
    t, (q, qd, tau), dt = _uniform(t, arrays)
    fs = 1.0 / dt
    cutoff = arguments.scalar("cutoff", cutoff)
    if not 0 < cutoff < 0.5 * fs:
        raise InputError(f"cutoff {cutoff} Hz must be in (0, fs/2 = {0.5 * fs:.4g} Hz)")
    import scipy.signal       # here, not at import: 1.5 s of CPU in every process that imports
                              # the core (each node's start), where nothing filters
    sos = scipy.signal.butter(order, cutoff / (0.5 * fs), output="sos")
    lowpass = lambda a: scipy.signal.sosfiltfilt(sos, a, axis=0)
    q_f, tau_f = lowpass(q), lowpass(tau)
    qd_f = np.gradient(q_f, dt, axis=0) if qd is None else lowpass(qd)
    qdd_f = np.gradient(qd_f, dt, axis=0)
    smooth = width > 0
    sign = np.where(smooth, np.tanh(qd_f / np.where(smooth, width, 1.0)), np.sign(qd_f))
    coulomb, positive = lowpass(sign), lowpass(np.maximum(sign, 0.0))
    trim = int(round(3 * fs / cutoff)) if trim is None else int(trim)
    step = max(1, int(fs // (5 * cutoff))) if decimate is None else int(decimate)
    sl = slice(trim, len(t) - trim, step)
    if len(t[sl]) < 2:
        raise InputError(f"recording too short: {len(t)} samples, {2 * trim} trimmed")
    return Samples(t[sl], q_f[sl], qd_f[sl], qdd_f[sl], tau_f[sl], coulomb[sl], positive[sl],
                   width)


def _check_recording(t, arrays):
    names = ("q", "qd", "tau")
    if len(t) < 8:
        raise InputError(f"t must be 1-D with at least 8 samples, got shape {t.shape}")
    if np.any(np.diff(t) <= 0):
        raise InputError("t must be finite and strictly increasing")
    for name, a in zip(names, arrays):
        if a is None and name != "qd":
            raise InputError(f"{name} is required")
        if a is not None and a.shape[1] != arrays[0].shape[1]:
            raise InputError(f"{name} must have shape ({len(t)}, {arrays[0].shape[1]}) like "
                             f"q, got {a.shape}")


# ----------------------------------------------------------------------------- least squares
@dataclass(frozen=True)
class Identification:
    """Result of :func:`identify`.

    base: BaseParameters; beta (p_b,) weighted-LS base parameters, beta_std (p_b,) their
    standard deviations, covariance (p_b, p_b); sigma_joint (n,) per-joint torque noise
    estimated from the ordinary-LS residual (N m); condition_number of the weighted base
    regressor; pi (p,) full parameters (consistent fit if ``consistent``); beta_of_pi
    (p_b,) = B pi (differs from beta only for a consistent fit); friction: whether pi ends
    with [viscous, coulomb]; rows: equations used (samples x joints, minus those below
    min_speed). pi_unconstrained (p,): the weighted-LS estimate closest to the prior (= pi
    unless ``consistent``). Consistent fit only (else None): solver ('CLARABEL' / 'SCS'),
    solver_status ('optimal', ...), optimality_gap (primal minus dual objective, in units of
    the relative weighted residual |r_w| / |tau_w|: the fit's residual is within it of the
    best over real bodies), residual (that relative residual at pi), stage_statuses
    ({stage: status}), best_residual (the first stage's), tolerance (eps_r: residual <=
    (1 + eps_r) best_residual), warnings (one sentence per stage not 'optimal'; empty when
    all are). solver_status is 'optimal' only when every stage is. friction: False or the
    friction model's name ('symmetric' for True; regressor.FRICTION_MODELS); armature:
    whether pi holds the joints' armature (after the bodies' columns); inseparable_armature:
    the joints whose armature no data can tell from their links' inertias (the column
    qdd_j is a combination of inertia columns: a first joint about a vertical axis, a UR's
    shoulder lift); both fits keep the links at the prior along it and put the rest into
    the armature (the same M either way)."""

    base: object
    beta: np.ndarray
    beta_std: np.ndarray
    covariance: np.ndarray
    sigma_joint: np.ndarray
    condition_number: float
    pi: np.ndarray
    beta_of_pi: np.ndarray
    consistent: bool
    friction: bool
    rows: int
    pi_unconstrained: np.ndarray | None = None
    solver: str | None = None
    solver_status: str | None = None
    optimality_gap: float | None = None
    residual: float | None = None
    stage_statuses: dict | None = None
    best_residual: float | None = None
    tolerance: float | None = None
    warnings: tuple = ()
    armature: bool = False
    inseparable_armature: tuple = ()


def regressor_rows(model, samples, friction, progress=None, chunk=2000, armature=False):
    """Y (N, n, p) of the samples, computed in chunks; progress(done, total) after each.
    The Coulomb columns are the samples' filtered ones where they have them (their width
    must be the model's friction_width: InputError otherwise)."""
    N, n = len(samples), model.n
    terms = joint_terms(friction, armature)
    filtered = samples.coulomb is not None and any(t.startswith("coulomb") for t in terms)
    if filtered and not np.array_equal(samples.friction_width, model.friction_width):
        raise InputError(f"samples: their Coulomb columns were filtered with friction_width "
                         f"{samples.friction_width.tolist()}, the model's is "
                         f"{model.friction_width.tolist()} (filter_recording(..., "
                         "friction_width=model.friction_width))")
    start = 10 * len(model.body_links)
    blocks = []
    for s in range(0, N, chunk):
        sl = slice(s, min(N, s + chunk))
        Y = joint_torque_regressor(model, samples.q[sl], samples.qd[sl], samples.qdd[sl],
                                   friction, armature)
        if filtered:
            columns = _filtered_coulomb(samples, sl)
            for k, term in enumerate(terms):
                if term in columns:
                    Y[:, np.arange(n), start + k * n + np.arange(n)] = columns[term]
        blocks.append(Y)
        if progress is not None:
            progress(sl.stop, N)
    return np.concatenate(blocks, axis=0)


def _filtered_coulomb(samples, sl):
    """{Coulomb term: its filtered (rows, n) column} of the samples in ``sl``."""
    out = {"coulomb": samples.coulomb[sl]}
    if samples.coulomb_positive is not None:
        positive = samples.coulomb_positive[sl]
        out.update(coulomb_positive=positive, coulomb_negative=samples.coulomb[sl] - positive)
    return out


def identify(model, samples, friction=True, consistent=False, base=None, prior=None,
             min_speed=0.0, progress=None, margin=1e-6, tolerance=1e-3, armature=False):
    """Identify the base parameters (and a full parameter vector) of ``model``'s structure.

    samples: :class:`Samples`; friction: also the friction per joint: True (viscous and
    Coulomb, the symmetric model) or a name of regressor.FRICTION_MODELS ('asymmetric':
    Coulomb per direction, 'offset', 'asymmetric+offset'), the smooth sign's width being
    the model's friction_width; armature: also each joint's armature (reflected rotor
    inertia, column qdd_j; >= 0 in the consistent fit; a joint whose armature is not
    separable from its links' inertias takes what the prior's link inertia does not hold,
    ``inseparable_armature``);
    base: a BaseParameters (default: :func:`base_parameters` of the model); prior (p,)
    parameters the unidentifiable directions are taken from (default: the model's own, i.e.
    the URDF); min_speed (rad/s or m/s): drop the equation of joint j at the samples where
    |qd_j| < min_speed (near velocity reversals the joint may stick, and sign(qd) is then
    not its friction); margin, tolerance: of the consistent fit
    (:func:`.consistent_fit.consistent_fit`; tolerance eps_r in [0, 1], default 1e-3: the
    real parameters closest to the prior among those within 1 + eps_r of the best real
    fit's residual). Returns :class:`Identification`.
    """
    friction = _friction_name(friction)
    base, prior = _check_identify(model, samples, friction, base, prior, armature)
    min_speed = arguments.scalar("min_speed", min_speed, 0.0)
    margin = arguments.scalar("margin", margin, 0.0, 1.0)
    tolerance = arguments.scalar("tolerance", tolerance, 0.0, 1.0)
    Y = regressor_rows(model, samples, friction, progress, armature=armature)
    W = base.regressor(Y)                                  # (N, n, p_b)
    N, n, pb = W.shape
    keep = np.abs(samples.qd) >= min_speed                 # (N, n) equations used
    rows, joint = int(keep.sum()), np.nonzero(keep)[1]
    if rows <= pb:
        raise InputError(f"{rows} equations ({N} samples x {n} joints, |qd| >= {min_speed}) "
                         f"for {pb} base parameters: record longer")
    W, y = W[keep], samples.tau[keep]                      # (rows, p_b), (rows,)
    R0, z0, _ = _qr_ls(W, y)
    _check_excitation(R0, base)
    beta_ols = scipy.linalg.solve_triangular(R0, z0)
    r2 = np.bincount(joint, (y - W @ beta_ols) ** 2, minlength=n)
    count = keep.sum(axis=0)
    sigma = np.sqrt(r2 / np.maximum(count * (1 - pb / rows), 1.0))
    sigma = np.maximum(sigma, 1e-12 * max(sigma.max(), 1e-300) + 1e-300)
    Rw, zw, rho2 = _qr_ls(W / sigma[joint, None], y / sigma[joint])
    cond = _check_excitation(Rw, base)
    beta = scipy.linalg.solve_triangular(Rw, zw)
    Rinv = scipy.linalg.solve_triangular(Rw, np.eye(pb))
    cov = rho2 / (rows - pb) * Rinv @ Rinv.T
    nb = len(model.body_links)
    scale = parameter_scale(prior, nb, friction, armature)
    loose = [10 * nb + j for j in _inseparable_armature(model, base, armature)]
    free = _closest_to_prior(base.matrix, beta, prior, scale, loose)
    tail = dict(armature=armature, inseparable_armature=tuple(model.joint_names[k - 10 * nb]
                                                              for k in loose))
    if not consistent:
        return Identification(base, beta, np.sqrt(np.diag(cov)), cov, sigma, cond, free,
                              base.beta(free), False, friction, rows, free, **tail)
    nonnegative = np.repeat([t in NONNEGATIVE_TERMS for t in joint_terms(friction, armature)],
                            model.n)
    fit = consistent_fit(Rw @ base.matrix, zw, np.sqrt(rho2), prior, nb, margin, start=free,
                         tolerance=tolerance, nonnegative=nonnegative, loose=loose)
    return Identification(base, beta, np.sqrt(np.diag(cov)), cov, sigma, cond, fit.pi,
                          base.beta(fit.pi), True, friction, rows, free, fit.solver,
                          _overall_status(fit), fit.optimality_gap, fit.residual,
                          fit.stage_statuses(), fit.best_residual, tolerance,
                          _solver_warnings(fit), **tail)


def _friction_name(friction):
    """False or the friction model's name ('symmetric' for True)."""
    terms = friction_terms(friction)
    if not terms:
        return False
    return "symmetric" if friction is True or not isinstance(friction, str) else friction


def _inseparable_armature(model, base, armature):
    """Joints j (indices) whose armature column is not separately identifiable: e_j is not
    in the row space of the base matrix B (beta = B pi), so no combination of base
    parameters gives it (a rotor is one inertia with its link's moment about the joint's
    axis when no other joint's motion changes that moment's share: a vertical first joint,
    or a UR's shoulder lift, perpendicular to it)."""
    if not armature:
        return []
    B = base.matrix
    _, sv, Vt = np.linalg.svd(B, full_matrices=False)
    V = Vt[sv > 1e-10 * sv[0]]
    start = 10 * len(model.body_links)
    held = []
    for j in range(model.n):
        e = np.zeros(B.shape[1])
        e[start + j] = 1.0
        if np.linalg.norm(e - V.T @ (V @ e)) > 1e-6:
            held.append(j)
    return held


def _overall_status(fit):
    """'optimal' when every stage of the consistent fit is, else the first other status
    with its stage ('optimal_inaccurate (closest to the prior)')."""
    for stage, status in fit.stage_statuses().items():
        if status != "optimal":
            return f"{status} ({stage})"
    return "optimal"


def _solver_warnings(fit):
    """One sentence per stage of the consistent fit that did not end 'optimal'."""
    out = []
    for stage, status in fit.stage_statuses().items():
        if status == "optimal":
            continue
        what = ("the fit's residual is not certified the best over real bodies"
                if stage == "fit" else "the parameters may not be the real ones closest to "
                "the URDF within the residual tolerance (and may sit off the LMIs)")
        out.append(f"consistent fit, stage '{stage}': solver status {status}: {what}")
    return tuple(out)


def _check_identify(model, samples, friction, base, prior, armature=False):
    """-> (base, prior) of :func:`identify` checked against the model; InputError naming the
    argument otherwise."""
    if not isinstance(samples, Samples):
        raise InputError(f"samples must be a Samples (filter_recording), got "
                         f"{type(samples).__name__}")
    if samples.q.shape[1] != model.n:
        raise InputError(f"samples have {samples.q.shape[1]} joints, the model {model.n} "
                         f"({', '.join(model.joint_names)})")
    armature = _flag(armature, "armature")
    names = parameter_names(model, friction, armature)
    if base is not None and tuple(base.names) != names:
        raise InputError(f"base: base parameters of another structure ({len(base.names)} "
                         f"parameters, the model with friction={friction}, armature="
                         f"{armature} has {len(names)})")
    base = base or base_parameters(model, friction, armature=armature)
    prior = (model_parameters(model, friction, armature) if prior is None
             else arguments.array("prior", prior, (len(names),)))
    return base, prior


def _qr_ls(W, y):
    """(R, z, rho^2) for min |W x - y| (x = R^-1 z): the R factor of the QR of [W y] is
    [[R, z], [0, rho]] (Q is never formed), rho^2 the residual sum of squares."""
    p = W.shape[1]
    Ra = np.linalg.qr(np.column_stack([W, y]), mode="r")
    return Ra[:p, :p], Ra[:p, p], float(Ra[p, p] ** 2)


def _check_excitation(R, base):
    """cond(R) (= cond of the regressor); InputError naming the base parameter weighing most
    in the weakest singular direction if it exceeds 1e12 (not excited by the recording)."""
    _, sv, Vt = np.linalg.svd(R)
    cond = float(sv[0] / sv[-1]) if sv[-1] > 0 else np.inf
    if not cond < 1e12:
        weakest = base.expressions()[int(np.argmax(np.abs(Vt[-1])))]
        raise InputError(f"the recording does not excite every base parameter (condition "
                         f"number {cond:.3g}): weakest {weakest!r}; record an excitation "
                         "trajectory (manip_dynamics.core.identification.excitation)")
    return cond


def parameter_scale(prior, nb, friction, armature=False):
    """Per-parameter scale s (p,) of the prior's metric: |prior| plus 1% of the mean |prior| of
    its kind (masses, first moments, inertias, each joint term: armature, viscous, Coulomb
    ...); a kind that is all zero in the prior (typically friction and armature: URDFs have
    none) gets scale 1 (SI units)."""
    s = np.abs(np.asarray(prior, dtype=float)).copy()
    k_terms = len(joint_terms(friction, armature))
    n = (len(s) - 10 * nb) // k_terms if k_terms else 0
    blocks = s[:10 * nb].reshape(nb, 10)
    kinds = [blocks[:, sl] for sl in (slice(0, 1), slice(1, 4), slice(4, 10))]
    kinds += [s[10 * nb + k * n:10 * nb + (k + 1) * n] for k in range(k_terms)]
    for part in kinds:
        mean = part.mean() if part.size else 0.0
        part += 0.01 * mean if mean > 0 else 1.0
    return s


def _closest_to_prior(B, beta, prior, scale, loose=()):
    """argmin |(pi - prior) / scale| subject to B pi = beta (a minimum-norm correction); the
    columns ``loose`` (an inseparable armature) are free, outside the norm: with P the
    projector off their span, the others' correction y is the minimum-norm solution of
    P B_r y = P c (c = beta - B prior), then theirs solves B_l d = c - B_r y."""
    c = beta - B @ prior
    rest = np.setdiff1d(np.arange(B.shape[1]), loose)
    BS = B[:, rest] * scale[rest]
    out = np.array(prior, dtype=float)
    if not len(loose):
        out[rest] += scale[rest] * np.linalg.lstsq(BS, c, rcond=None)[0]
        return out
    Q = np.linalg.qr(B[:, loose])[0]
    P = np.eye(len(c)) - Q @ Q.T
    y = np.linalg.lstsq(P @ BS, P @ c, rcond=None)[0]
    out[rest] += scale[rest] * y
    out[loose] += np.linalg.lstsq(B[:, loose], c - BS @ y, rcond=None)[0]
    return out


# ----------------------------------------------------------------------------- evaluation
def predicted_torques(model, pi, samples, friction, armature=False):
    """tau = Y pi (N, n) over the samples, for full parameters pi in model's structure."""
    return regressor_rows(model, samples, friction, armature=armature) @ pi


def identified_model(model, pi, friction, armature=False):
    """(model with pi's joint terms, notes): ``model`` with the armature (if ``armature``)
    and the friction model of pi (``friction``: regressor.friction_terms; the other friction
    fields keep the model's, a symmetric fit sets both Coulomb directions), for the side
    file (core/dynamics/side_file.write_side_file). Inertias are not changed (they go to
    the URDF). A negative armature, viscous or Coulomb estimate (the unconstrained fit has
    no bound) is no physical value and the side file refuses it: set to 0 with a note
    giving the estimate. The offset keeps its sign."""
    values = term_values(model, pi, friction, armature)
    notes = []
    for term, v in values.items():
        if term in NONNEGATIVE_TERMS and (v < 0).any():
            for j in np.nonzero(v < 0)[0]:
                notes.append(f"{model.joint_names[j]}: estimated {term} {v[j]:.6g} is negative "
                             "(no physical value; the side file refuses it): written as 0")
            values[term] = np.maximum(v, 0.0)
    if "armature" in values:
        model = model.with_armature(values["armature"])
    if "viscous" in values:
        positive = values.get("coulomb", values.get("coulomb_positive"))
        negative = values.get("coulomb", values.get("coulomb_negative"))
        model = model.with_friction(values["viscous"], positive, negative,
                                    values.get("offset"))
    return model, notes


def rms_error(tau_pred, tau):
    """RMS of tau_pred - tau per joint (n,)."""
    return np.sqrt(np.mean((np.asarray(tau_pred) - np.asarray(tau)) ** 2, axis=0))


# ----------------------------------------------------------------------------- URDF output
def identified_urdf(xml, model, pi, friction, armature=False):
    """URDF text: ``xml`` with each body's inertia set from pi (model's structure; same links
    and joints). Links lumped into a body keep their URDF inertials and the body's link gets
    the difference, unless that difference is not a real rigid body while the whole body
    is: then the body's link gets it all and the lumped links' masses are set to zero. A
    body whose pi is no real body (a negative principal moment or mass, which no URDF parser
    loads; least squares give them) is written as the nearest real body
    (:func:`.real_body.nearest_real_body`), with a note giving both. With
    friction, each joint's ``<dynamics damping friction>`` is set from pi's tail (a URDF has
    a symmetric Coulomb term and no offset: Coulomb per direction is written as the mean
    of the two directions, and the side file, :func:`identified_model`, holds the whole
    model); pi's armature (``armature``) goes to the side file only.
    Returns (xml text, list of notes for the report). InputError naming the argument for an
    xml that is not the model's URDF or a pi of the wrong length or not finite."""
    friction = _friction_name(friction)
    armature = _flag(armature, "armature")
    pi = arguments.array("pi", pi, (len(parameter_names(model, friction, armature)),))
    if not isinstance(xml, str):
        raise InputError(f"xml must be the URDF text (str), got {type(xml).__name__}")
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as exc:
        raise InputError(f"xml is not XML: {exc}") from None
    links = {el.get("name"): el for el in root.findall("link")}
    joints = {el.get("name") for el in root.findall("joint")}
    missing = [k for k in model.body_links if k not in links]
    missing += [j for j in (model.joint_names if friction else ()) if j not in joints]
    if missing:
        raise InputError(f"xml is not the model's URDF: no link/joint {missing[0]!r}")
    notes = []
    m_s, L_s = body_scales(model_parameters(model), len(model.body_links))
    for b, link in enumerate(model.body_links):
        pi_b = _real_body(np.asarray(pi[10 * b:10 * b + 10], dtype=float), link, m_s[b],
                          L_s[b], notes)
        lumped = _lumped_parameters(model, links, b, link)
        pi_link = pi_b - sum(lumped.values(), np.zeros(10))
        if lumped and not physically_consistent(pi_link) and physically_consistent(pi_b):
            pi_link = pi_b
            for other in lumped:
                _set_inertial(links[other], np.zeros(10))
            notes.append(f"{link}: identified inertia of the whole body put on this link "
                         f"(masses of {', '.join(lumped)} set to 0)")
        _set_inertial(links[link], pi_link)
    if friction:
        _set_friction(root, model, term_values(model, pi, friction, armature), notes)
    return ET.tostring(root, encoding="unicode"), notes


def _real_body(pi_b, link, mass_scale, length_scale, notes):
    """pi_b, or the nearest real body to it (real_body.nearest_real_body) with a note when
    it is none: a negative principal moment or mass, which no URDF parser loads."""
    if physically_consistent(pi_b):
        return pi_b
    real = nearest_real_body(pi_b, mass_scale, length_scale)
    (m0, _, I0), (m1, _, I1) = inertia_from_parameters(pi_b), inertia_from_parameters(real)
    notes.append(f"{link}: the estimate is not a real rigid body (mass {m0:.6g} kg, principal "
                 f"moments {_moments(I0)} kg m^2; scaled pseudo-inertia eigenvalue "
                 f"{scaled_min_eigenvalue(pi_b, mass_scale, length_scale):.3g}): written as "
                 f"the nearest real body (eigenvalues below {MARGIN:g} raised to it; mass "
                 f"{m1:.6g} kg, principal moments {_moments(I1)} kg m^2)")
    return real


def _moments(I):
    return "[" + ", ".join(f"{v:.4g}" for v in np.linalg.eigvalsh(I)) + "]"


def _set_friction(root, model, values, notes):
    """Each joint's <dynamics damping friction> from the fitted terms ``values``
    (regressor.term_values; Coulomb per direction: their mean); a negative estimate (no
    friction is negative, and a URDF parser refuses it) is written as 0 with a note giving
    the estimate."""
    joints = {el.get("name"): el for el in root.findall("joint")}
    coulomb = values.get("coulomb")
    if coulomb is None:
        coulomb = 0.5 * (values["coulomb_positive"] + values["coulomb_negative"])
    for j, name in enumerate(model.joint_names):
        dyn = joints[name].find("dynamics")
        if dyn is None:
            dyn = ET.SubElement(joints[name], "dynamics")
        for key, value, unit in (("damping", values["viscous"][j], "N m s/rad"),
                                 ("friction", coulomb[j], "N m")):
            if value < 0:
                notes.append(f"{name}: estimated {key} {value:.6g} {unit} is negative (no "
                             f"physical friction; a URDF refuses it): written as 0")
            dyn.set(key, _fmt(max(float(value), 0.0)))


# ----------------------------------------------------------------------------- URDF check
@dataclass(frozen=True)
class BodyCheck:
    """One body of a written URDF as our parser reads it back (its links lumped): mass kg,
    principal moments (3,) kg m^2 about the com, ascending; scaled_min: the smallest
    eigenvalue of D_b P D_b (the consistent fit's scaled pseudo-inertia, D_b from the
    prior's body scales: 1 is the prior body's size); ratio: lambda_min / lambda_max of P
    itself; ok: mass > 0, moments >= 0 obeying the triangle inequality, scaled_min >=
    the margin asked."""

    link: str
    mass: float
    principal_moments: tuple
    scaled_min: float
    ratio: float
    ok: bool

    def line(self):
        """One line for the CLI's summary."""
        verdict = "ok" if self.ok else "NOT A REAL BODY"
        moments = ", ".join(f"{v:.4g}" for v in self.principal_moments)
        return (f"{self.link:<24} {self.mass:10.4g} kg  moments [{moments}] kg m^2  "
                f"scaled lambda_min {self.scaled_min:.3g}  {verdict}")


def check_written_urdf(xml, prior_xml, prior, root_link=None, margin=5e-7):
    """(list of :class:`BodyCheck`, list of warnings) for the URDF text ``xml`` written by
    :func:`identified_urdf`, read back by our parser (the values as written, 12 digits,
    links lumped into bodies). A warning for: a URDF that does not load, a warning of the
    parser on it that the prior URDF ``prior_xml`` does not also give, and each body that
    is not real with the margin (``scaled_min < margin``). prior (p,) gives the scales
    (consistent_fit.body_scales) of ``margin``: by default half the consistent fit's LMI
    margin (the solver's feasibility tolerance, 1e-10, and the 12 written digits take far
    less than the other half)."""
    try:
        model = _quiet_load(xml, root_link)
    except ManipDynamicsError as exc:
        return [], [f"the written URDF does not load: {exc}"]
    out = _new_warnings(xml, prior_xml, root_link)
    return _body_checks(model, prior, margin, out), out


def _quiet_load(xml, root_link):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RobotModel.from_urdf_string(xml, root_link=root_link)


def _load_warnings(xml, root_link):
    """Messages of the warnings our parser gives on loading ``xml``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            RobotModel.from_urdf_string(xml, root_link=root_link)
        except ManipDynamicsError:
            pass
    return [str(w.message) for w in caught]


def _new_warnings(xml, prior_xml, root_link):
    before = set(_load_warnings(prior_xml, root_link))
    return [f"the written URDF loads with a warning: {w}"
            for w in _load_warnings(xml, root_link) if w not in before]


def _body_checks(model, prior, margin, out):
    """BodyCheck per body of ``model``; a warning appended to ``out`` per failing body."""
    nb = len(model.body_links)
    m_s, L_s = body_scales(prior, nb)
    d = np.concatenate([np.repeat(1.0 / L_s[:, None], 3, axis=1), np.ones((nb, 1))], axis=1)
    d = d / np.sqrt(m_s)[:, None]
    m, _, I_c = model.body_inertias()
    P = pseudo_inertia(inertial_parameters(*model.body_inertias()))
    scaled = np.linalg.eigvalsh(d[:, :, None] * P * d[:, None, :])[:, 0]
    ev = np.linalg.eigvalsh(P)
    checks = []
    for b, link in enumerate(model.body_links):
        moments = np.linalg.eigvalsh(I_c[b])
        ok = bool(m[b] > 0 and moments[0] >= 0 and moments[2] <= moments[0] + moments[1]
                  and scaled[b] >= margin)
        checks.append(BodyCheck(link, float(m[b]), tuple(float(v) for v in moments),
                                float(scaled[b]), float(ev[b, 0] / ev[b, -1]), ok))
        if not ok:
            out.append(f"body {link} as written is not a real rigid body with the margin: "
                       f"mass {m[b]:.4g} kg, principal moments {np.round(moments, 6)}, "
                       f"scaled lambda_min {scaled[b]:.3g} (< {margin:g})")
    return checks


def _lumped_parameters(model, links, b, link):
    """{link name: pi (10,) in body b's frame} of the OTHER links with an <inertial> in body b."""
    out = {}
    for other in model.frame_names:
        ob, X = model.frame_body(other)
        if ob != b or other == link or other not in links:
            continue
        inr = _parse_inertial(links[other])
        if inr is None:
            continue
        m, c, I = inr
        R = X[:3, :3]
        out[other] = inertial_parameters(m, R @ c + X[:3, 3], R @ I @ R.T)
    return out


def _fmt(x):
    return f"{float(x):.12g}"


def _set_inertial(link_el, pi_link):
    """Replace link_el's <inertial> by the one of pi_link (link frame; com origin, no rpy)."""
    m, c, I = inertia_from_parameters(pi_link)
    old = link_el.find("inertial")
    el = ET.Element("inertial")
    if old is not None:
        link_el.remove(old)
    link_el.insert(0, el)
    ET.SubElement(el, "origin", xyz=" ".join(_fmt(v) for v in c), rpy="0 0 0")
    ET.SubElement(el, "mass", value=_fmt(m))
    ET.SubElement(el, "inertia", ixx=_fmt(I[0, 0]), ixy=_fmt(I[0, 1]), ixz=_fmt(I[0, 2]),
                  iyy=_fmt(I[1, 1]), iyz=_fmt(I[1, 2]), izz=_fmt(I[2, 2]))
