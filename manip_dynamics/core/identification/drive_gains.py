"""Drive gains (N m/A) and a payload from two recordings of one arm: without and with a load.

A driver that reports motor currents ``i`` (A) as its efforts (UR's) gives the joint torques
only up to a per-joint gain, ``tau_j = k_j i_j``. The currents alone cannot fix the gains:
``(k, pi) -> (s k, s pi)`` leaves ``k_j i_j = Y_j pi`` true for any s. The same excitation
run a second time carrying a load of KNOWN mass ``m_L`` at a frame (the flange) fixes the
scale (Mamedov et al. 2020; Gautier and Briot 2014).

**Gains** (:func:`estimate_drive_gains`). The loaded run is shifted in time onto the
unloaded one (:func:`align_pair`: the lag that best matches q; refused when the two runs do
not follow the same path). At the same state x = (q, qd, qdd) the arm's own torque (rigid
bodies, rotors, friction) is the same in both runs, so the difference of the currents is
the load's alone::

    k_j (i_l,j - i_u,j) = Yf_j(x) [m_L; p]        every sample, joint j

``Yf`` the load's regressor at ``frame`` (``regressor.frame_regressor``: ten parameters
about the frame's origin, in its axes, gravity ``model.gravity``), ``m_L`` given, ``p = [m c
(3), I_O (6)]`` unknown. Nothing of the arm's model enters (its errors cancel). The
currents are what is measured with noise, so the residual is taken in their units::

    min_{k, p}  sum_{samples, j} ((di_j - Yf_j [m_L; p] / k_j) / s_j)^2

(s_j the joint's residual RMS, A), linear in p for fixed k: p is eliminated (variable
projection) and the n gains found by ``scipy.optimize.least_squares``, from the linear
solution of ``k_j di_j - Yf_j' p = Yf_j,m m_L``. (That linear form's residual grows with k_j,
so whatever the model does not explain pulls k_j toward 0: an errors-in-variables bias.)
Standard deviations: block-robust, ``H (sum_b g_b g_b^T) H``, ``H = (J^T J)^-1`` with J the
Jacobian of the residual r in (p, k), ``g_b = J_b^T r_b`` summed over the samples of block b
(``block_seconds`` long): the residual of filtered data and of what the load's model leaves
out is correlated in time, and ``s^2 H`` (white) understates the gains' spread by the square
root of that correlation's length in samples (on the UR10e 3-6x).

**Payload** (:func:`estimate_payload_from_pair`), the gains known, any two runs of the
arm (not necessarily the same path). Per sample and joint j, unloaded (u), loaded (l)::

    k_j i_u,j = W_j(x_u) beta + E_j(x_u) phi
    k_j i_l,j = W_j(x_l) beta + E_j(x_l) phi + Yf_j(x_l) pi_L

``W`` the base regressor (``regressor.base_parameters``; the same arm, the same beta),
``E`` one column per joint and kind in that joint's row only: armature (reflected rotor
inertia, ``qdd_j``), viscous (``qd_j``), Coulomb (``sign(qd_j)``, or the filtered column
``Samples.coulomb``) and offset (1); a column the others span (joint 1's armature: only its
sum with the first link's inertia shows) is left out. Weighted least squares (rows / the
joint's residual RMS of the ordinary LS), covariance ``s^2 (A_w^T A_w)^-1``.

Units: i in the effort's unit (A), tau N m, q rad, k N m/A. Joint 1 of an arm on a vertical
axis carries no gravity torque: the load shows there only through its inertia about that
axis, so its gain is the least certain (``gain_std``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from ..errors import InputError
from . import arguments
from .pipeline import Samples
from .regressor import base_parameters, frame_regressor, joint_torque_regressor, random_states

KINDS = ("armature", "viscous", "coulomb", "offset")


@dataclass(frozen=True)
class DriveGains:
    """Result of :func:`estimate_drive_gains` (and, gains known, of the payload estimate).

    gain (n,) N m per effort unit (N m/A) in the model's joint order; gain_std (n,) one
    sigma; payload (10,) the payload's parameters about the frame's origin in its axes
    ([m, m c, I_O], regressor order; the mass as given when the gains were estimated);
    payload_std (10,) (0 for a given mass); per_joint (dict kind -> (n,)): armature kg m^2,
    viscous N m s/rad, coulomb N m, offset N m (nan where the column was left out as
    dependent; empty for the gains, whose difference equation has none); sigma_joint (n,)
    the per-joint residual RMS: of the currents, A, for the gains; of the ordinary LS, N m,
    for the payload; rows: equations used; condition_number of the (column-scaled) system;
    columns: the names of the per-joint columns kept.

    gain_std and payload_std of :func:`estimate_drive_gains` are block-robust (the module
    docstring): right for a residual correlated over less than a block, where the white
    ``s^2 (J^T J)^-1`` was 3-6x too small on the UR10e (joint 1: +-0.3 white, +-1.2 robust;
    three pairs gave 12.5-13.3 N m/A)."""

    gain: np.ndarray
    gain_std: np.ndarray
    payload: np.ndarray
    payload_std: np.ndarray
    per_joint: dict
    sigma_joint: np.ndarray
    rows: int
    condition_number: float
    columns: tuple

    @property
    def payload_mass(self):
        """kg."""
        return float(self.payload[0])

    @property
    def payload_com(self):
        """(3,) m in the frame's axes (m c / m)."""
        return self.payload[1:4] / self.payload[0]


def per_joint_columns(model, qd, qdd, coulomb=None):
    """E (N, n, 4 n): the per-joint columns of the module docstring, kind-major (armature of
    joints 1..n, viscous, Coulomb, offset); row j of joint j's column holds qdd_j, qd_j,
    sign(qd_j) (or ``coulomb`` (N, n), its filtered form) and 1, every other row 0."""
    N, n = qd.shape
    values = (qdd, qd, np.sign(qd) if coulomb is None else coulomb, np.ones((N, n)))
    E = np.zeros((N, n, 4 * n))
    for k, v in enumerate(values):
        E[:, np.arange(n), k * n + np.arange(n)] = v
    return E


def _independent_columns(model, base, kinds, seed=0):
    """Indices into the 4 n per-joint columns of ``kinds`` that the base regressor does not
    span, at random states (as ``base_parameters`` decides its rank): QR of the unit-norm
    columns [W, E] in that order; E's column k is kept when |R_kk| > 1e-8 |R_00|."""
    n = model.n
    count = max(50, -(-4 * (base.count + 4 * n) // max(n, 1)))
    q, qd, qdd = random_states(model, count, np.random.default_rng(seed))
    W = base.regressor(joint_torque_regressor(model, q, qd, qdd))
    candidates = [k * n + j for k, kind in enumerate(KINDS) if kind in kinds for j in range(n)]
    E = per_joint_columns(model, qd, qdd)[..., candidates]
    A = np.concatenate([W, E], axis=2).reshape(count * n, -1)
    R = np.linalg.qr(A / np.maximum(np.linalg.norm(A, axis=0), 1e-300), mode="r")
    d = np.abs(np.diag(R))
    return [c for c, r in zip(candidates, d[base.count:]) if r > 1e-8 * d[0]]


def _run_blocks(model, base, samples, frame, columns, keep):
    """(W (rows, p_b), E (rows, len(columns)), Yf (rows, 10) or None (frame None), i (rows,),
    joint (rows,)) of one recording: the equations of joint j at the samples where ``keep``
    (N, n)."""
    Y = joint_torque_regressor(model, samples.q, samples.qd, samples.qdd)
    W = base.regressor(Y)[keep]
    E = per_joint_columns(model, samples.qd, samples.qdd, samples.coulomb)[..., columns][keep]
    Yf = None if frame is None else frame_regressor(model, samples.q, samples.qd,
                                                     samples.qdd, frame)[keep]
    return W, E, Yf, samples.tau[keep], np.nonzero(keep)[1]


def _lstsq(A, b):
    """argmin |A x - b| for A of full column rank, from the R factor of the QR of [A b] (Q
    never formed; numpy's SVD-based lstsq took 20x longer here)."""
    p = A.shape[1]
    R = np.linalg.qr(np.column_stack([A, b]), mode="r")
    return scipy.linalg.solve_triangular(R[:p, :p], R[:p, p])


def _weighted_ls(A, b, joint, n):
    """(x, covariance, sigma_joint (n,), condition number) of min |A x - b|, rows weighted by
    1 / sigma_j of their joint (sigma_j: the joint's RMS residual of the ordinary LS)."""
    x0 = _lstsq(A, b)
    r2 = np.bincount(joint, (A @ x0 - b) ** 2, minlength=n)
    count = np.maximum(np.bincount(joint, minlength=n), 1)
    sigma = np.sqrt(r2 / count)
    sigma = np.maximum(sigma, 1e-12 * max(sigma.max(), 1e-300) + 1e-300)
    Aw, bw = A / sigma[joint, None], b / sigma[joint]
    R = np.linalg.qr(np.column_stack([Aw, bw]), mode="r")
    p = A.shape[1]
    sv = np.linalg.svd(R[:p, :p], compute_uv=False)
    cond = float(sv[0] / sv[-1]) if sv[-1] > 0 else np.inf
    if not cond < 1e12:
        raise InputError(f"the two recordings do not determine the unknowns (condition number "
                         f"{cond:.3g}): record exciting trajectories, with and without the "
                         "load")
    x = scipy.linalg.solve_triangular(R[:p, :p], R[:p, p])
    Rinv = scipy.linalg.solve_triangular(R[:p, :p], np.eye(p))
    s2 = float(R[p, p] ** 2) / max(len(b) - p, 1)
    return x, s2 * Rinv @ Rinv.T, sigma, cond


def _check_pair(model, unloaded, loaded, frame):
    for name, s in (("unloaded", unloaded), ("loaded", loaded)):
        if not isinstance(s, Samples):
            raise InputError(f"{name} must be a Samples (filter_recording), got "
                             f"{type(s).__name__}")
        if s.q.shape[1] != model.n:
            raise InputError(f"{name} has {s.q.shape[1]} joints, the model {model.n}")
    if frame not in model.frame_names:
        raise InputError(f"frame {frame!r} is not a link of the model (links: "
                         f"{', '.join(model.frame_names)})")


def _interpolate(samples, t):
    """Samples at times t (inside samples.t), every field linearly interpolated."""
    def at(a):
        return None if a is None else np.stack([np.interp(t, samples.t, c) for c in a.T], 1)
    return Samples(t, *(at(getattr(samples, f)) for f in ("q", "qd", "qdd", "tau",
                                                          "coulomb")))


def align_pair(unloaded, loaded, max_mismatch=0.02):
    """The loaded run shifted in time onto the unloaded one.

    unloaded, loaded: Samples of the same excitation (each on its own clock). On a grid of
    the unloaded run's median step, the whole-sample shift minimising the mean of
    |q_l - q_u|^2 over the overlap (at least half the shorter run; the cross term by FFT
    correlation, the squares by cumulative sums), then the shift within one step of it that
    minimises the RMS of q_l - q_u (bounded scalar search; the whole-sample shift kept if
    better). -> (unloaded restricted to the overlap, loaded interpolated at those times,
    lag s (loaded time = unloaded time - t_u0 + t_l0 + lag), RMS q mismatch rad).
    InputError when the mismatch exceeds ``max_mismatch`` rad: not the same path."""
    import scipy.optimize
    tu, tl = unloaded.t - unloaded.t[0], loaded.t - loaded.t[0]
    dt = float(np.median(np.diff(tu)))
    lag0 = _whole_sample_lag(tu, unloaded.q, tl, loaded.q, dt)

    def mismatch(lag):
        inside = (tu + lag >= 0) & (tu + lag <= tl[-1])
        if inside.sum() < 8:
            return np.inf, inside
        q = np.stack([np.interp(tu[inside] + lag, tl, c) for c in loaded.q.T], 1)
        return float(np.sqrt(np.mean((q - unloaded.q[inside]) ** 2))), inside

    lag = scipy.optimize.minimize_scalar(lambda x: mismatch(x)[0], bounds=(lag0 - dt, lag0 + dt),
                                         method="bounded", options={"xatol": 1e-6 * dt}).x
    lag = min((lag0, lag), key=lambda x: mismatch(x)[0])   # a whole-sample lag: no interpolation
    rms, inside = mismatch(lag)
    if not rms <= max_mismatch:
        raise InputError(f"the loaded run does not follow the unloaded run's path: q differs "
                         f"by {rms:.3g} rad RMS after the best time shift ({lag:.3f} s; at most "
                         f"{max_mismatch:g}): record the same excitation with and without the "
                         "load")
    u = unloaded[np.nonzero(inside)[0]]
    return u, _interpolate(loaded, tu[inside] + lag + loaded.t[0]), float(lag), rms


def _whole_sample_lag(tu, qu, tl, ql, dt):
    """The shift L dt (s) minimising mean |q_l(t + L dt) - q_u(t)|^2 over the overlap of the
    two runs resampled every dt, among overlaps of at least half the shorter run."""
    import scipy.signal
    U = np.stack([np.interp(np.arange(0.0, tu[-1] + 0.5 * dt, dt), tu, c) for c in qu.T], 1)
    L = np.stack([np.interp(np.arange(0.0, tl[-1] + 0.5 * dt, dt), tl, c) for c in ql.T], 1)
    nu, nl = len(U), len(L)
    cross = sum(scipy.signal.correlate(L[:, j], U[:, j], mode="full") for j in range(U.shape[1]))
    lags = np.arange(len(cross)) - (nu - 1)               # loaded index = unloaded index + lag
    start, end = np.maximum(0, -lags), np.minimum(nu, nl - lags)
    count = end - start
    cu = np.concatenate([[0.0], np.cumsum((U ** 2).sum(1))])
    cl = np.concatenate([[0.0], np.cumsum((L ** 2).sum(1))])
    ok = count >= max(8, min(nu, nl) // 2)
    start, end, count = start[ok], end[ok], count[ok]
    sq = (cu[end] - cu[start]) + (cl[end + lags[ok]] - cl[start + lags[ok]])
    mse = (sq - 2 * cross[ok]) / count
    return float(lags[ok][int(np.argmin(mse))] * dt)


def _difference_gains(Yf, di, mass, n, block=1):
    """(k (n,), p (9,), covariance of [p, k] (block-robust, blocks of ``block`` samples),
    s (n,) A) of the module docstring's gain problem; Yf (N, n, 10), di (N, n) A."""
    import scipy.optimize
    N = len(di)
    joint = np.tile(np.arange(n), N)
    P, b, y0 = Yf[:, :, 1:].reshape(-1, 9), Yf[:, :, 0].ravel() * mass, di.ravel()
    A = np.zeros((N * n, 9 + n))                  # k_j di_j - Yf_j' p = Yf_j,m m_L
    A[:, :9], A[np.arange(N * n), 9 + joint] = -P, y0
    k = _lstsq(A, b)[9:]

    def project(k, s):                           # residual (di - Yf pi / k) / s, p eliminated
        w = 1.0 / (k[joint] * s[joint])
        y = y0 / s[joint] - b * w
        p = _lstsq(P * w[:, None], y)
        return y - (P * w[:, None]) @ p, p

    Rj = _joint_factors(Yf, di, mass)

    def reduced(k, s):                           # the same residual's norm, joint by joint
        w = 1.0 / (k * s)
        M = -w[:, None, None] * Rj[:, :, :9]
        v = Rj[:, :, 9] / s[:, None] - Rj[:, :, 10] * w[:, None]
        p = _lstsq(M.reshape(-1, 9), -v.ravel())
        return (v + M @ p).ravel()

    s = np.ones(n)
    for _ in range(2):                           # s_j: at the start, then at the optimum
        r = reduced(k, np.ones(n)).reshape(n, -1)
        s = np.sqrt((r ** 2).sum(1) / N)
        s = np.maximum(s, 1e-12 * max(s.max(), 1e-300) + 1e-300)
        if not (k > 0).all():
            break
        k = scipy.optimize.least_squares(lambda x: reduced(x, s), k, x_scale=np.abs(k),
                                         xtol=1e-14, ftol=1e-14, gtol=1e-14).x
    r, p = project(k, s)
    J = np.zeros((N * n, 9 + n))                  # d r / d [p, k]
    J[:, :9] = -P / (k[joint] * s[joint])[:, None]
    J[np.arange(N * n), 9 + joint] = (P @ p + b) / (k[joint] ** 2 * s[joint])
    return k, p, robust_covariance(J, r, N, block), s


def _joint_factors(Yf, di, mass):
    """(n, 11, 11): per joint j the R factor of the QR of [Yf_j' (N, 9), di_j, m Yf_j,m]
    (zero rows below N < 11). For any c, |[Yf_j', di_j, m Yf_j,m] c| = |R_j c| (Q_j is
    orthogonal): the gain problem's residual norm for given k, p from 11 n rows instead of
    N n, the same minimiser (variable projection over 11 x 11 blocks)."""
    N, n = di.shape
    out = np.zeros((n, 11, 11))
    for j in range(n):
        R = np.linalg.qr(np.column_stack([Yf[:, j, 1:], di[:, j], Yf[:, j, 0] * mass]),
                         mode="r")
        out[j, :len(R)] = R
    return out


def robust_covariance(J, r, samples, block):
    """Block-robust covariance (q, q) of a least-squares estimate (the cluster-robust
    sandwich with its usual small-sample factor, CR1): ``H (sum_b g_b g_b^T) H c``, H =
    (J^T J)^-1, g_b = J_b^T r_b over the rows of B = ``samples // block`` blocks of
    consecutive samples, c = B / (B - 1) (m - 1) / (m - q). J (m, q), r (m,) the Jacobian
    and the residual at the optimum, rows sample-major (``samples`` samples of m / samples
    rows each). For a white residual the same as ``s^2 H`` in expectation."""
    m, q = J.shape
    H = np.linalg.pinv(J.T @ J)
    g = (J * r[:, None]).reshape(samples, -1, q).sum(1)
    B = max(samples // max(block, 1), 2)
    G = np.array([c.sum(0) for c in np.array_split(g, B)])
    return H @ (G.T @ G) @ H * B / (B - 1) * (m - 1) / max(m - q, 1)


def estimate_drive_gains(model, unloaded, loaded, frame, payload_mass, max_mismatch=0.02,
                         block_seconds=2.0):
    """Drive gains k (n,) N m/A from a run without and a run of the same excitation with a
    load of known mass (the module docstring: the aligned difference of the currents).

    unloaded, loaded: :class:`~.pipeline.Samples` whose ``tau`` holds the efforts as
    recorded (motor currents, A; ``filter_recording`` of the raw efforts, each run on its own
    clock); frame: the link the load is fixed to (e.g. ``tool0``); payload_mass kg (> 0);
    max_mismatch rad: :func:`align_pair`; block_seconds s (> 0): the blocks of the robust
    standard deviations (the module docstring; longer than the residual's correlation).
    Returns :class:`DriveGains` (gain, gain_std, the
    load's parameters with its other nine estimated; per_joint empty; sigma_joint the
    current residual RMS per joint, A). InputError: a payload mass missing or not > 0, runs
    that do not follow the same path, or an estimated gain not > 0 or not finite (named,
    with its sigma: the recordings cannot tell that joint's gain)."""
    if payload_mass is None:
        raise InputError("payload_mass: the load's mass (kg) is needed: the currents alone "
                         "fix the drive gains only up to a common scale")
    payload_mass = arguments.scalar("payload_mass", payload_mass)
    if not payload_mass > 0:
        raise InputError(f"payload_mass must be > 0 kg, got {payload_mass!r}")
    _check_pair(model, unloaded, loaded, frame)
    max_mismatch = arguments.scalar("max_mismatch", max_mismatch, 0.0)
    block_seconds = arguments.scalar("block_seconds", block_seconds)
    if not block_seconds > 0:
        raise InputError(f"block_seconds must be > 0 s, got {block_seconds!r}")
    u, l, _, _ = align_pair(unloaded, loaded, max_mismatch)
    Yf = frame_regressor(model, u.q, u.qd, u.qdd, frame)
    n = model.n
    block = max(int(round(block_seconds / float(np.median(np.diff(u.t))))), 1)
    k, p, cov, s = _difference_gains(Yf, l.tau - u.tau, payload_mass, n, block)
    std = np.sqrt(np.abs(np.diag(cov)))
    bad = [j for j in range(n) if not (np.isfinite(k[j]) and k[j] > 0)]
    if bad:
        j = bad[0]
        raise InputError(f"estimated drive gain of joint {model.joint_names[j]!r} is "
                         f"{k[j]:.4g} +- {std[9 + j]:.2g} (not > 0): the two recordings do "
                         "not determine it (a motion that moves the load more about that "
                         "joint)")
    return DriveGains(k, std[9:], np.concatenate([[payload_mass], p]),
                      np.concatenate([[0.0], std[:9]]), {}, s, Yf.shape[0] * n,
                      _condition(Yf, l.tau - u.tau), ())


def _condition(Yf, di):
    A = np.concatenate([Yf[:, :, 1:].reshape(-1, 9), _diag(di.ravel(), np.tile(
        np.arange(di.shape[1]), len(di)), di.shape[1])], axis=1)
    A = A / np.maximum(np.linalg.norm(A, axis=0), 1e-300)
    sv = np.linalg.svd(A, compute_uv=False)
    return float(sv[0] / sv[-1]) if sv[-1] > 0 else np.inf


def _diag(i, joint, n):
    """(rows, n): row r holds i[r] in column joint[r]."""
    D = np.zeros((len(i), n))
    D[np.arange(len(i)), joint] = i
    return D


def estimate_payload_from_pair(model, unloaded, loaded, frame, drive_gain, kinds=KINDS,
                               min_speed=0.0):
    """The load at ``frame`` (all ten parameters, mass included) from a run without and a
    run with it, the drive gains known ((n,) N m per effort unit): the stacked system of the
    module docstring (the arm's base parameters and per-joint terms shared by both runs).
    unloaded, loaded: Samples of the efforts as recorded; min_speed rad/s drops a joint's
    equations where |qd_j| < min_speed. -> :class:`DriveGains` (gain as given, gain_std 0,
    payload, payload_std, per_joint, sigma_joint N m)."""
    _check_pair(model, unloaded, loaded, frame)
    gain = arguments.array("drive_gain", drive_gain, (model.n,))
    if not (gain > 0).all():
        raise InputError(f"drive_gain must be > 0, got {gain.tolist()}")
    min_speed = arguments.scalar("min_speed", min_speed, 0.0)
    kinds = tuple(kinds)
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise InputError(f"kinds: unknown {unknown[0]!r} (known: {', '.join(KINDS)})")
    n, base = model.n, base_parameters(model)
    columns = _independent_columns(model, base, kinds)
    (Wu, Eu, _, iu, ju), (Wl, El, Yl, il, jl) = [
        _run_blocks(model, base, s, f, columns, np.abs(s.qd) >= min_speed)
        for s, f in ((unloaded, None), (loaded, frame))]
    A = np.block([[Wu, Eu, np.zeros((len(iu), 10))], [Wl, El, Yl]])
    b = np.concatenate([gain[ju] * iu, gain[jl] * il])
    if len(b) <= A.shape[1]:
        raise InputError(f"{len(b)} equations (|qd| >= {min_speed}) for {A.shape[1]} "
                         "unknowns: record longer")
    x, cov, sigma, cond = _weighted_ls(A, b, np.concatenate([ju, jl]), n)
    std = np.sqrt(np.diag(cov))
    pb, ne = base.count, len(columns)
    per_joint = {k: np.full(n, np.nan) for k in kinds}
    for c, v in zip(columns, x[pb:pb + ne]):
        per_joint[KINDS[c // n]][c % n] = v
    return DriveGains(gain, np.zeros(n), x[pb + ne:], std[pb + ne:], per_joint, sigma, len(b),
                      cond, tuple(f"{KINDS[c // n]}[{model.joint_names[c % n]}]"
                                  for c in columns))
