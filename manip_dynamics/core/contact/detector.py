"""Contact awareness from the momentum observer's residual r ~ tau_ext (n,).

* :func:`tip_wrench`: F = (J^T)^+ r at a frame, by a thresholded damped SVD;
* :class:`ContactDetector`: per-joint thresholds with hysteresis, isolation of the most
  distal link in contact, and the candidate links a contact there may lie on;
* :func:`contact_point`: where on the isolated link a single contact force acts, when the
  residual determines it.

Conventions (RobotModel's): a wrench F = [f; m] (N, N*m) acts ON the arm at the ORIGIN of
a frame, in ROOT axes, and maps to joint torques tau_ext = J(q)^T F with J that frame's
(6, n) Jacobian (rows [v; w]). Derivations and the choices made: docs/math.md section 8.
Only RobotModel's public API is used (jacobian, frame_pose, frame_names, joint_names).
"""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from numba import njit

from ..dynamics.kernels import cho_solve, cholesky, gram
from ..dynamics.kernels.symmetric_eigen import symmetric_eigenvalues
from ..errors import InputError
from .observer import MODES, _positive_vector, _step_in_place, finite_vector

# ============================================================================ tip wrench
WrenchEstimate = namedtuple("WrenchEstimate", "F sigma damped")
WrenchEstimate.__doc__ = """Result of :func:`tip_wrench`.

F (k,) the wrench [f; m] (k = 6) or the force f (k = 3, linear_only), root axes, at the
frame origin; sigma (k,) singular values of J^T, descending; damped: True when some
sigma < threshold (F is then the damped estimate). Batched: leading N axis on each."""


def tip_wrench(model, q, r, frame, threshold=0.01, linear_only=False):
    """F = (J^T)^+ r: the wrench at ``frame``'s origin that best explains r, by a
    thresholded damped SVD. q, r (n,) or (N, n); threshold eps > 0 in J's units (m for
    the force rows of a revolute arm, 1 for the moment rows).

    With J^T = U diag(sigma) V^T (J the (6, n) Jacobian, or its 3 linear rows)::

        F = V diag(phi(sigma)) U^T r,  phi(s) = 1/s          for s >= eps
                                       phi(s) = s / eps^2    for s <  eps

    i.e. the Moore-Penrose least-squares solution (min ||J^T F - r||, then min ||F||)
    while every singular value is above eps, and damped least squares with the
    per-direction damping lambda^2 = eps^2 - s^2 below it: continuous at eps, never a gain
    above 1/eps, and 0 along an exactly singular direction (the part of F the torques
    cannot see is reported as 0 instead of noise / s). Why not the dynamically consistent
    Lambda J M^-1 r: docs/math.md section 8. -> :class:`WrenchEstimate`.
    """
    if not (isinstance(threshold, (int, float)) and threshold > 0):
        raise InputError(f"threshold must be a number > 0, got {threshold!r}")
    J = model.jacobian(q, frame)
    r = np.asarray(r, dtype=float)
    if r.shape != np.shape(q):
        raise InputError(f"r must have the shape of q {np.shape(q)}, got {r.shape}")
    if not np.isfinite(r).all():
        raise InputError(f"r[{int(np.argmax(~np.isfinite(r.ravel())))}] is not finite")
    JT = np.swapaxes(J[..., :3, :] if linear_only else J, -1, -2)      # (..., n, k)
    U, s, Vt = np.linalg.svd(JT, full_matrices=False)
    eps = float(threshold)
    phi = np.where(s >= eps, 1.0 / np.maximum(s, eps), s / eps ** 2)
    F = np.einsum("...ji,...j,...kj,...k->...i", Vt, phi, U, r)
    return WrenchEstimate(F, s, (s < eps).any(axis=-1))


# ============================================================================ topology
ArmTopology = namedtuple("ArmTopology", "joint_link frame_joint moves")
ArmTopology.__doc__ = """Which coordinates move which links (from the Jacobians' structure).

joint_link (n,) the link each coordinate's joint moves directly (its child link);
frame_joint {frame: index of the last coordinate moving it, -1 if none}; moves
{frame: (n,) bool, coordinate j moves the frame}: the frame's ancestor coordinates."""


def arm_topology(model):
    """:class:`ArmTopology` of ``model``: coordinate j moves frame L iff column j of L's
    Jacobian is non-zero (a revolute column holds the unit axis in its angular rows, a
    prismatic one in its linear rows, so an ancestor's column is never zero; a
    non-ancestor's is exactly zero). Coordinates are in depth-first order, so the last
    moving coordinate is the deepest; a joint's child link is the first frame (in
    ``frame_names`` order) whose deepest coordinate it is."""
    q0 = np.zeros(model.n)
    moves = {f: np.any(model.jacobian(q0, f) != 0.0, axis=0) for f in model.frame_names}
    frame_joint = {f: (int(np.flatnonzero(m)[-1]) if m.any() else -1) for f, m in moves.items()}
    joint_link = []
    for j, name in enumerate(model.joint_names):
        links = [f for f in model.frame_names if frame_joint[f] == j]
        if not links:
            raise InputError(f"joint {name!r} moves no frame")
        joint_link.append(links[0])
    return ArmTopology(tuple(joint_link), frame_joint, moves)


def joint_candidates(topology):
    """Per coordinate j, the links a contact isolated to j may lie on, from joint torques
    alone: (n,) tuples of link names, j's child link first, then every other frame j moves
    (its fixed descendants and the links after later joints, e.g. a hand and its fingers),
    in ``frame_names`` order. A contact on any of them loads only j and its ancestors when
    the later joints' own torques vanish (a finger pushed across its sliding axis), so the
    residual cannot tell them apart; the isolated link is the first, the one j moves
    directly (docs/math.md 8.6)."""
    out = []
    for j, link in enumerate(topology.joint_link):
        rest = [f for f, m in topology.moves.items() if m[j] and f != link]
        out.append((link, *rest))
    return tuple(out)


def most_distal(topology, active):
    """Index of the most distal active coordinate: active (n,) bool; an active joint none of
    whose descendants is active (the last one in q order if several branches are), -1 if
    none. On a serial chain: the last active index."""
    idx = np.flatnonzero(active)
    for j in idx[::-1]:
        below = [k for k in idx if k != j and topology.moves[topology.joint_link[k]][j]]
        if not below:
            return int(j)
    return -1


# ============================================================================ detection
ContactState = namedtuple("ContactState",
                          "in_contact joint link detection_time residual_norm event candidates")
ContactState.__doc__ = """Result of :meth:`ContactDetector.update`.

in_contact bool; joint (index, -1 if none) and link (name, "" if none) isolated; the time
the contact was entered (s, nan when not in contact); residual_norm ||r|| (N*m, mixed
units on a prismatic arm); event: "enter", "leave" or "" for this sample; candidates:
the links the contact may lie on (:func:`joint_candidates` of the isolated joint, link
first; () when not in contact)."""


class ContactDetector:
    """Per-joint thresholds with hysteresis on the residual r (n,).

    Enter contact when |r_i| > enter_i for some joint i; leave it when |r_i| <= leave_i
    for every joint (0 < leave_i <= enter_i: a residual hovering around one threshold
    cannot toggle the state). While in contact, the joints with |r_i| > leave_i carry it
    (are significantly loaded) and the isolated joint is the most distal of them
    (:func:`most_distal`): a contact on link L acts on L's ancestor coordinates only, so
    the coordinates after L's joint read zero. From joint torques alone the contact lies
    on one of the links the isolated joint moves: the isolated link is the one it moves
    directly (its child link, what the residual supports), never a link further down
    whose own joint feels nothing; the others (its fixed descendants, e.g. a flange and a
    hand, and the links after later joints whose residual is below leave, e.g. a force
    through a joint's axis or across a finger's sliding axis) are
    :attr:`ContactState.candidates`. A joint whose contact-free residual reaches its leave
    threshold (a model error, e.g. a finger's) carries every contact entered elsewhere:
    each joint's thresholds must exceed its own contact-free residual (docs/contact.md).
    """

    def __init__(self, model, enter, leave=None):
        self.topology = arm_topology(model)
        self.joint_names = model.joint_names
        self.enter = _positive_vector(enter, model.n, "enter")
        self.leave = (self.enter / 2 if leave is None
                      else _positive_vector(leave, model.n, "leave"))
        if (self.leave > self.enter).any():
            i = int(np.argmax(self.leave > self.enter))
            raise InputError(f"leave[{i}] = {self.leave[i]} must be <= enter[{i}] = "
                             f"{self.enter[i]} (joint {self.joint_names[i]!r})")
        n = model.n
        # below[j, k]: coordinate j moves the child link of coordinate k (k at or after j)
        self._below = np.array([[self.topology.moves[self.topology.joint_link[k]][j]
                                 for k in range(n)] for j in range(n)], dtype=np.bool_)
        self.candidates = joint_candidates(self.topology)
        # update_into's kernel arguments: [enter; leave] (2, n), below, flags (in_contact,
        # event, joint; [3]: observe_contact's damped flag of the wrench), ||r||
        self._flags = np.zeros(4, dtype=np.int64)
        self._norm = np.zeros(1)
        self._kernel_args = (np.array([self.enter, self.leave]), self._below, self._flags,
                             self._norm)
        self.reset()

    def set_thresholds(self, enter, leave):
        """New enter and leave thresholds (n,) from the next sample on (thresholds that
        follow the motion: core.contact.calibration); 0 < leave <= enter, else InputError
        and nothing changed. The contact state is kept."""
        enter = _positive_vector(enter, self.enter.shape[0], "enter")
        leave = _positive_vector(leave, self.enter.shape[0], "leave")
        if (leave > enter).any():
            i = int(np.argmax(leave > enter))
            raise InputError(f"leave[{i}] = {leave[i]} must be <= enter[{i}] = {enter[i]}")
        self.enter, self.leave = enter, leave
        self._kernel_args[0][0], self._kernel_args[0][1] = enter, leave

    def reset(self):
        """Forget the contact (state: free)."""
        self.in_contact = False
        self.detection_time = float("nan")

    def update(self, t, r):
        """Advance the hysteresis with the residual r (n,) at time t (s). -> ContactState."""
        r = np.asarray(r, dtype=float)
        if r.shape != self.enter.shape or not np.isfinite(r).all():
            raise InputError(f"r must be a finite ({self.enter.shape[0]},) vector, got "
                             f"{r.shape if r.shape != self.enter.shape else r}")
        a = np.abs(r)
        event = ""
        if not self.in_contact and (a > self.enter).any():
            self.in_contact, self.detection_time, event = True, float(t), "enter"
        elif self.in_contact and (a <= self.leave).all():
            self.in_contact, self.detection_time, event = False, float("nan"), "leave"
        j = most_distal(self.topology, a > self.leave) if self.in_contact else -1
        link, candidates = (self.topology.joint_link[j], self.candidates[j]) if j >= 0 else ("", ())
        return ContactState(self.in_contact, j, link, self.detection_time,
                            float(np.linalg.norm(r)), event, candidates)

    def update_into(self, t, r):
        """:meth:`update` for a finite (n,) float64 r (not checked: the observer's own
        residual), without temporaries: -> (event code, joint), event code 0 (none),
        1 ("enter") or 2 ("leave"); :attr:`in_contact`, :attr:`detection_time` and
        :attr:`residual_norm` updated. The same decisions as :meth:`update` (the same
        comparisons); ||r|| is summed in index order (np.linalg.norm's BLAS dot may sum
        in another order: equal to round-off)."""
        self._flags[0] = self.in_contact
        _detect(r, *self._kernel_args)
        return self._detected(t)

    def _detected(self, t):
        """After :func:`_detect` on the sample at t: the state from its flags.
        -> (event code, joint)."""
        flags = self._flags
        event = int(flags[1])
        if event == 1:
            self.in_contact, self.detection_time = True, float(t)
        elif event == 2:
            self.in_contact, self.detection_time = False, float("nan")
        return event, int(flags[2])

    @property
    def residual_norm(self):
        """||r|| of the last :meth:`update_into` (float)."""
        return float(self._norm[0])


_JIT = dict(cache=True, nogil=True, fastmath=False, error_model="numpy")


@njit(**_JIT)
def _detect(r, thresholds, below, flags, norm):
    """The hysteresis and isolation of ContactDetector.update on r (n,), thresholds (2, n)
    = [enter; leave]: flags[0] in: in_contact; out: flags[0] in_contact, flags[1] the
    event (0, 1 enter, 2 leave), flags[2] the isolated joint (most_distal of |r_i| >
    leave_i, -1 when free); norm[0] = ||r|| (summed in index order)."""
    enter, leave = thresholds[0], thresholds[1]
    n = r.shape[0]
    any_enter, all_leave, acc = False, True, 0.0
    for i in range(n):
        a = abs(r[i])
        any_enter |= a > enter[i]
        all_leave &= a <= leave[i]
        acc += r[i] * r[i]
    norm[0] = np.sqrt(acc)
    in_contact, event = flags[0] != 0, 0
    if not in_contact and any_enter:
        in_contact, event = True, 1
    elif in_contact and all_leave:
        in_contact, event = False, 2
    joint = -1
    if in_contact:                       # most_distal: an active j with no active k below
        for j in range(n - 1, -1, -1):
            if not abs(r[j]) > leave[j]:
                continue
            alone = True
            for k in range(n):
                if k != j and abs(r[k]) > leave[k] and below[j, k]:
                    alone = False
                    break
            if alone:
                joint = j
                break
    flags[0], flags[1], flags[2] = 1 if in_contact else 0, event, joint


class WrenchSolver:
    """:func:`tip_wrench` (6 rows) of a given Jacobian, into a reused F (6,): no model call,
    no numpy temporaries, one numba call (:func:`_wrench`).

    threshold: eps > 0 of :func:`tip_wrench`. When every singular value of J is clearly
    above eps (the undamped case, n >= 6: G - eps^2 (1 + 1e-6) I positive definite, G =
    J J^T, by a Cholesky factorisation), F = G^-1 J r = (J^T)^+ r by a Cholesky solve, and
    the singular values are computed only when :attr:`sigma` is read (from the eigenvalues
    of G, no LAPACK); otherwise LAPACK's SVD as tip_wrench. The normal equations square
    J's condition number: F equals tip_wrench's to about 1e-16 cond(J)^2 relative (cond(J)
    <= sigma_max / eps there; test_observer_terms bounds it)."""

    def __init__(self, threshold):
        if not (isinstance(threshold, (int, float)) and threshold > 0):
            raise InputError(f"threshold must be a number > 0, got {threshold!r}")
        self.eps = float(threshold)
        self._out = np.zeros((2, 6))           # rows F, sigma
        self.F = self._out[0]
        self._sigma_pending = False            # sigma of the last solve not computed yet
        # the kernel's arguments after J, r: eps, [F; sigma], G, L, W (3, 6, 6), w, t (4, 6)
        self._kernel_args = (self.eps, self._out, np.zeros((3, 6, 6)), np.zeros((4, 6)))

    def solve(self, J, r):
        """F (6,) = (J^T)^+ r, thresholded (tip_wrench); J (6, n) the frame's Jacobian,
        r (n,) finite. -> damped (a singular value below eps); F in self.F and the
        singular values (descending, min(n, 6) of them) in self.sigma (both overwritten
        by the next call)."""
        return self._solved(_wrench(J, r, *self._kernel_args))

    def _solved(self, code):
        """After :func:`_wrench` returned ``code``: -> damped."""
        self._sigma_pending = bool(code == 0)
        return bool(code == 2)

    @property
    def sigma(self):
        """J's singular values of the last solve, descending (6,): min(n, 6) of them."""
        if self._sigma_pending:
            self._sigma_pending = False
            _, out, mats, vecs = self._kernel_args
            if not _gram_singular_values(mats[0], out[1], mats[2], vecs):
                out[1] = np.sqrt(np.linalg.eigvalsh(mats[0]))[::-1]   # (QR did not converge)
        return self._out[1]


@njit(**_JIT)
def _wrench(J, r, eps, out, mats, vecs):
    """F = out[0] = (J^T)^+ r thresholded as tip_wrench. G = J J^T (into mats[0]): the
    fast path when G - eps^2 (1 + 1e-6) I has a Cholesky factor (its eigenvalues, J's
    squared singular values, are all clearly above eps^2: phi(s) = 1/s for every s) and so
    has G (L): F = G^-1 J r; returns 0 (the singular values not computed:
    :func:`_gram_singular_values`). Otherwise LAPACK's SVD (:func:`_wrench_svd`, sigma =
    out[1], [:min(n, 6)]); returns 2 when some singular value is below eps, else 1.
    mats (3, 6, 6) = G, L, W and vecs (4, 6): scratch."""
    F = out[0]
    G, L, W = mats[0], mats[1], mats[2]
    k, n = J.shape
    if n >= k:
        shift = eps * eps * (1.0 + 1e-6)
        gram(J, G)
        for a in range(k):
            for b in range(k):
                W[a, b] = G[a, b]
            W[a, a] = G[a, a] - shift
        if cholesky(W, L) and cholesky(G, L):
            for a in range(k):
                acc = 0.0
                for m in range(n):
                    acc += J[a, m] * r[m]
                F[a] = acc
            cho_solve(L, F)
            return 0
    return 2 if _wrench_svd(J, r, eps, F, out[1]) else 1


@njit(**_JIT)
def _gram_singular_values(G, sigma, W, vecs):
    """sigma (k,) = the square roots of the eigenvalues of G = J J^T (k, k), descending;
    W (k, k), vecs (4, k): scratch. False if the QR iteration did not converge."""
    k = G.shape[0]
    w, t = vecs[0], vecs[1:]
    if not symmetric_eigenvalues(G, W, w, t[0], t[1], t[2]):
        return False
    for a in range(k):
        sigma[a] = np.sqrt(w[k - 1 - a])
    return True


@njit(**_JIT)
def _wrench_svd(J, r, eps, F, sigma):
    """F = V diag(phi(s)) U^T r for J^T = U diag(s) V^T (tip_wrench's phi, LAPACK's SVD);
    sigma[:len(s)] = s. Returns True when some s < eps."""
    U, s, Vt = np.linalg.svd(np.ascontiguousarray(J.T), full_matrices=False)
    damped = False
    for j in range(s.shape[0]):
        sigma[j] = s[j]
        damped |= s[j] < eps
    F[:] = 0.0
    for j in range(s.shape[0]):
        phi = 1.0 / s[j] if s[j] >= eps else s[j] / eps ** 2
        acc = 0.0
        for m in range(r.shape[0]):
            acc += U[m, j] * r[m]
        w = phi * acc
        for i in range(F.shape[0]):
            F[i] += Vt[j, i] * w
    return damped


# ============================================================================ per state
def observe_contact(observer, detector, solver, t, p, ct, g, tau, qd, J):
    """One sample through a MomentumObserver, a ContactDetector and a WrenchSolver of the
    same arm in ONE numba call: the observer step on the given terms
    (:meth:`MomentumObserver.update_terms`), then detection and isolation on its residual
    r - bias (:meth:`ContactDetector.update_into`), then the tip wrench of that residual
    (:meth:`WrenchSolver.solve`), each with the same arithmetic as those methods (the same
    bits). t (s); p = M qd, ct = C^T qd, g, tau, qd (n,) float64; J (6, n) the tip frame's
    Jacobian. -> (observer event, dt, contact event code, isolated joint, damped);
    the results in ``observer.residual_buffer``, the detector's state and
    ``solver.F`` / ``solver.sigma``. InputError (nothing changed) as update_terms."""
    return observe_contact_norm(observer, detector, solver, t, p, ct, g, tau, qd, J)[1:6]


def observe_contact_norm(observer, detector, solver, t, p, ct, g, tau, qd, J):
    """:func:`observe_contact` -> (t as float, observer event, dt, contact event code,
    isolated joint, damped, ||r - bias||): the per-state path of
    rules.contact_monitor.ContactMonitor.update_terms. The Python around the kernel: the
    checks of t and tau's type and shape and the gap rule's choice
    (``MomentumObserver._begin_mode``: one branch for a regular step); tau's finiteness,
    the gap rule's r = 0, the in-contact flag and the results come through the kernel's
    arguments and its returned tuple."""
    t, mode, dt = observer._begin_mode(t, tau)
    event, joint, code, norm = _observe_contact(
        mode, detector.in_contact, *observer._mode_args, observer.bias, p, ct, g, tau, qd,
        dt if mode == 1 else 1.0, J, detector._kernel_args, solver._kernel_args)
    if event < 0:                     # a non-finite tau: nothing was written
        observer._checked_tau(tau, observer._shape)
        raise InputError(f"tau must be finite, got {tau!r}")      # (raised above)
    observer._end_mode(t, mode)
    if event == 1:
        detector.in_contact, detector.detection_time = True, t
    elif event == 2:
        detector.in_contact, detector.detection_time = False, math.nan
    solver._sigma_pending = code == 0
    return t, MODES[mode], dt, event, joint, code == 2, norm


@njit(**_JIT)
def _observe_contact(mode, in_contact, held, total, friction, coef, state, bias, p, ct, g, tau,
                     qd, h, J, detector_args, solver_args):
    """When tau is finite: r = 0 for mode 3 (gap_reset), _step_in_place (integrating for
    mode 1, step; coef (6, n): RobotModel.friction_coefficients, viscous, coulomb,
    coulomb_negative, offset, width, and the observer's slide speed), then _detect (in_contact in) and _wrench on its residual (state[5]);
    -> (contact event code, isolated joint, _wrench's code, ||r - bias||), _wrench's code
    also in the detector's flags[3]. A non-finite tau: (-1, -1, -1, nan), nothing
    written."""
    if not finite_vector(tau):
        return -1, -1, -1, np.nan
    if mode == 3:
        state[0, :] = 0.0
    _step_in_place(mode == 1, held, total, friction, coef, p, ct, g, tau, qd, h, state, bias)
    residual = state[5]
    thresholds, below, flags, norm = detector_args
    flags[0] = 1 if in_contact else 0
    _detect(residual, thresholds, below, flags, norm)
    eps, out, mats, vecs = solver_args
    code = _wrench(J, residual, eps, out, mats, vecs)
    flags[3] = code
    return flags[1], flags[2], code, norm[0]


# ============================================================================ contact point
ContactPoint = namedtuple("ContactPoint", "point force s fit segment")
ContactPoint.__doc__ = """Result of :func:`contact_point` (root frame, m and N).

point (3,) estimated contact point on the segment; force (3,) the force acting there;
s in [0, 1] its place on the segment a + s (b - a); fit = ||r_S - A(s) f|| / ||r_S||
(0 for a perfect single-force explanation); segment (2, 3) the endpoints a, b used."""


def link_segment(model, topology, q, link):
    """(2, 3) endpoints, root frame, of ``link``'s default segment: from its origin to the
    origin of the child link(s) of the next joint(s) (their mean if the chain branches);
    for a last link, to the farthest frame fixed to it (a tip, a hand), else a point."""
    j = topology.frame_joint[link]
    a = model.frame_pose(q, link)[:3, 3]
    children = [topology.joint_link[k] for k in range(len(topology.joint_link))
                if k != j and topology.moves[topology.joint_link[k]][j] and
                _parent_joint(topology, topology.joint_link[k]) == j]
    if children:
        b = np.mean([model.frame_pose(q, c)[:3, 3] for c in children], axis=0)
    else:
        fixed = [f for f, jj in topology.frame_joint.items() if jj == j]
        ends = [model.frame_pose(q, f)[:3, 3] for f in fixed]
        b = max(ends, key=lambda p: float(np.linalg.norm(p - a)))
    return np.array([a, b])


def _parent_joint(topology, link):
    """The deepest coordinate moving ``link`` other than its own joint, -1 if none."""
    m = topology.moves[link].copy()
    m[topology.frame_joint[link]] = False
    return int(np.flatnonzero(m)[-1]) if m.any() else -1


def contact_point(model, q, r, link, topology=None, segment=None, samples=101):
    """Point p on ``link``'s segment and force f with J_v(p)[:, S]^T f = r_S, S the
    coordinates moving the link (a single contact force, no contact moment).

    J_v(p) = J_v(o) - [p - o]x J_w(o) (o the link origin) is affine in p, so the
    least-squares misfit e(s) = min_f ||J_v(p(s))_S^T f - r_S|| along p(s) = a + s (b - a)
    is searched on a grid of ``samples`` points, then on a grid 1/(samples-1) wide around the
    best one (resolution 1e-4 of the segment for 101 samples). Identifiable only when
    |S| >= 4 (3 unknowns of f plus s): returns None for fewer coordinates, or when r_S is 0.
    segment: (2, 3) endpoints in root axes, default :func:`link_segment`.
    -> :class:`ContactPoint` or None.
    """
    if not (isinstance(samples, int) and samples >= 3):
        raise InputError(f"samples must be an int >= 3, got {samples!r}")
    topology = arm_topology(model) if topology is None else topology
    if link not in topology.moves:
        raise InputError(f"unknown link {link!r}; links: {', '.join(topology.moves)}")
    S = topology.moves[link]
    r_S = np.asarray(r, dtype=float)[S]
    if S.sum() < 4 or not np.linalg.norm(r_S) > 0:
        return None
    ab = link_segment(model, topology, q, link) if segment is None else np.asarray(segment, float)
    J = model.jacobian(q, link)
    o = model.frame_pose(q, link)[:3, 3]
    grid = np.linspace(0.0, 1.0, samples)
    best = _best_on_segment(J, o, ab, S, r_S, grid)
    h = 1.0 / (samples - 1)
    fine = np.clip(np.linspace(grid[best] - h, grid[best] + h, samples), 0.0, 1.0)
    k = _best_on_segment(J, o, ab, S, r_S, fine)
    s = fine[k]
    p = ab[0] + s * (ab[1] - ab[0])
    A = _force_map(J, o, p[None], S)[0]
    f, *_ = np.linalg.lstsq(A, r_S, rcond=None)
    fit = float(np.linalg.norm(A @ f - r_S) / np.linalg.norm(r_S))
    return ContactPoint(p, f, float(s), fit, ab)


def _force_map(J, o, points, S):
    """(P, |S|, 3): A = J_v(p)[:, S]^T for each point p (P, 3), with
    J_v(p) = J_v(o) - [p - o]x J_w(o)."""
    d = points - o                                              # (P, 3)
    Jv, Jw = J[:3][:, S], J[3:][:, S]                           # (3, m)
    cross = np.cross(d[:, :, None], Jw[None], axis=1)           # d x (J_w column), (P, 3, m)
    return np.swapaxes(Jv[None] - cross, 1, 2)


def _best_on_segment(J, o, ab, S, r_S, s):
    """Index of the s (grid) whose point has the smallest least-squares misfit."""
    pts = ab[0] + s[:, None] * (ab[1] - ab[0])
    A = _force_map(J, o, pts, S)                                # (P, m, 3)
    U, sig, _ = np.linalg.svd(A, full_matrices=False)
    keep = sig > 1e-12 * sig[:, :1]
    coef = np.einsum("pmi,m->pi", U, r_S) * keep
    misfit = r_S @ r_S - np.sum(coef ** 2, axis=1)
    return int(np.argmin(misfit))
