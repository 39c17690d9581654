"""Generalized-momentum observer: the external joint torques an arm feels, from joint states.

Model (``RobotModel``'s convention, g on the left-hand side)::

    M(q) qdd + C(q, qd) qd + g(q) + tau_fr(qd) = tau_m + tau_ext

The generalized momentum p = M(q) qd obeys dp/dt = M qdd + dM/dt qd, and dM/dt = C + C^T
(Christoffel factorization, docs/math.md section 8), so::

    dp/dt = beta + tau_ext,      beta = tau_m + C^T(q, qd) qd - g(q) - tau_fr(qd)

``beta`` needs no acceleration. The residual (De Luca's momentum observer)::

    r(t) = K_O (p(t) - p(0) - integral_0^t (beta + r) ds),  K_O = diag(k_i) > 0

satisfies dr/dt = K_O (tau_ext - r): per joint, a first-order low-pass of tau_ext with
time constant 1 / k_i (units 1/s); r(0) = 0.

Exact discretisation (a variable time step h_k = t_{k+1} - t_k)
----------------------------------------------------------------
Let w(t) = p(t) - integral beta ds; then dr/dt = K_O (dw/dt - r). Over one step, assume

(A1) dw/dt is constant over the step (equivalently, tau_ext is constant over it), and
(A2) beta is linear in t over the step, so its integral is the trapezoid
     h (beta_k + beta_{k+1}) / 2 (the model terms held at the two samples);

p itself is sampled exactly at both ends, so Delta p = p_{k+1} - p_k carries no
approximation. Then dw/dt = u_k = (Delta p - h (beta_k + beta_{k+1}) / 2) / h over the step
and the linear ODE dr/dt = K_O (u_k - r) has the exact per-joint solution::

    r_{k+1} = a r_k + (1 - a) u_k,     a = exp(-k_i h)   (computed as 1 - a = -expm1(-k_i h))

For a constant tau_ext this reproduces r(t) = (1 - exp(-k_i t)) tau_ext at every sample,
whatever the (variable) steps, since the exponentials compose. It is stable for every
k_i h > 0 (0 < a < 1), where forward Euler (r_{k+1} = r_k + k_i (h u_k - h r_k), its
first-order expansion) diverges for k_i h > 2. What is not exact: a tau_ext that varies
within a step (r responds to its step average) and the O(h^3) per-step trapezoid error of
the beta integral (A2).

The measured torque ``tau`` means, by ``effort``:

* ``"total"``: tau = tau_m, the total motor torque;
* ``"minus_gravity"``: tau = tau_m - g(q) (drivers that report gravity-compensated
  torque); then beta = tau + C^T qd - tau_fr and g(q) is never evaluated.

Timing of the measured torque, by ``timing``:

* ``"sampled"`` (default): tau_k is the torque at t_k (a drive sampling its current), and
  the torque part of the beta integral is the trapezoid (A2);
* ``"held"``: tau_{k+1} is the torque held constant over (t_k, t_{k+1}] (zero-order hold:
  a simulator publishing the torque applied during the last period, or a drive reporting
  its commanded torque), so that part of the integral is exactly h tau_{k+1}; the rest of
  beta (C^T qd - g - tau_fr) keeps the trapezoid. In the step below this replaces
  (beta_k + beta_{k+1}) / 2 by (beta_k + beta_{k+1}) / 2 + (tau_{k+1} - tau_k) / 2. With a
  100 Hz hold and a tracking arm the trapezoid's error (tau_{k+1} - tau_k) / 2 per step
  is of the order of 0.1 to 1 N*m on the Panda (benchmarks/study_contact.py).

Friction: ``friction=True`` subtracts the model's ``friction_torques(qd)``
(``RobotModel.with_friction``); otherwise unmodelled friction appears in r. With
``slide_speed`` v_i > 0 the Coulomb term is coulomb_i clip(qd_i / v_i, -1, 1) instead of
coulomb_i sign(qd_i): continuous through qd = 0, so a measured velocity that flickers
between 0 and +-1e-4 rad/s at rest (a real arm's quantisation) no longer makes it jump by
coulomb_i (13 N m on a UR10e's shoulder), and below v_i, where a real joint sticks, it
is not subtracted in full (docs/contact.md, "On a real arm"). v_i = 0 (the default): the
model's s(qd) (sign(qd), or tanh(qd / width) for a side file's friction width). The
direction-dependent Coulomb magnitudes and the offset apply with either.

Stream rules (every sample is (t, q, qd, tau), t in s):

* bad sample (non-finite t/q/qd/tau, wrong length, t not after the last sample's t):
  ``InputError`` naming the culprit, state unchanged; it is never integrated;
* a gap (t - t_last > ``max_dt``): the beta integral over it would be a guess, so that step
  is not integrated. ``gap="bridge"`` (default) holds r and restarts the integral at the
  new sample; ``gap="reset"`` sets r = 0 and restarts there. Neither can produce a
  spike; r then follows tau_ext again with time constant 1/k_i.

Bias zeroing: :meth:`MomentumObserver.zero` stores the current residual as a bias
(a steady model error or sensor offset, taken while the arm is known to be free);
:attr:`MomentumObserver.residual` is r - bias.

Only ``RobotModel``'s public API is used (mass_matrix, coriolis_matrix, gravity_torques,
friction_torques; compute_all's momentum terms for :meth:`MomentumObserver.update_terms`).

Per-state use (a node at 1 kHz): :meth:`MomentumObserver.update_terms` takes p = M qd,
C^T qd and g from the caller (``RobotModel.compute_all(..., momentum=True)``: the same
kernel run as the node's other outputs; C^T qd by an O(n) recursion) and advances r in
preallocated buffers (one numba call, no temporaries). Given the same p, C^T qd and g it
gives the bits of :meth:`MomentumObserver.update` (the same operations in the same order);
that path's p = M qd (a BLAS product) and C^T qd (from the n x n C) are summed in another
order, so the two paths agree to round-off (test_observer bounds it).
"""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from numba import njit

from ..dynamics.model import friction_torque
from ..errors import InputError

EFFORT_MEANINGS = ("total", "minus_gravity")
EFFORT_TIMINGS = ("sampled", "held")
GAP_POLICIES = ("bridge", "reset")
MODES = ("start", "step", "gap_bridged", "gap_reset")    # observe_contact's step modes
_F64 = np.dtype(np.float64)

ObserverStep = namedtuple("ObserverStep", "residual event dt")
ObserverStep.__doc__ = """Result of one :meth:`MomentumObserver.update`.

residual (n,) r - bias (N*m or N); event: "start" (first sample after construction or
reset), "step" (integrated), "gap_bridged" / "gap_reset" (dt > max_dt, see the module
docstring); dt: the time since the previous sample (s, nan at "start")."""


def _positive_vector(x, n, name):
    """A scalar or (n,) array of finite values > 0 -> read-only (n,) float array."""
    try:
        a = np.array(x, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be numeric, got {x!r}") from None
    a = np.broadcast_to(a, (n,)).copy() if a.ndim == 0 else a
    if a.shape != (n,):
        raise InputError(f"{name} must be a scalar or shape ({n},), got {a.shape}")
    bad = ~(np.isfinite(a) & (a > 0))
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(f"{name}[{i}] = {a[i]} must be finite and > 0")
    a.setflags(write=False)
    return a


def _choice(x, allowed, name):
    if x not in allowed:
        raise InputError(f"{name} must be one of {allowed}, got {x!r}")
    return x


class MomentumObserver:
    """Residual r ~ tau_ext (n,) of one arm, updated sample by sample (module docstring).

    model: a RobotModel; gains: K_O, scalar or (n,), 1/s; effort: "total" or
    "minus_gravity"; friction: subtract model.friction_torques(qd); slide_speed: scalar
    or (n,) >= 0, rad/s (m/s): the Coulomb term's ramp (module docstring); max_dt (s): larger
    steps are gaps; gap: "bridge" or "reset"; timing: "sampled" or "held" (the
    measured torque's timing, module docstring).

    Example::

        obs = MomentumObserver(model, gains=50.0)
        for t, q, qd, tau in stream:
            r = obs.update(t, q, qd, tau).residual     # (n,) N*m
    """

    def __init__(self, model, gains, effort="total", friction=False, max_dt=0.05,
                 gap="bridge", timing="sampled", slide_speed=0.0):
        self.model = model
        self.n = model.n
        self.gains = _positive_vector(gains, self.n, "gains")
        self.effort = _choice(effort, EFFORT_MEANINGS, "effort")
        self.gap = _choice(gap, GAP_POLICIES, "gap")
        self.timing = _choice(timing, EFFORT_TIMINGS, "timing")
        if not isinstance(friction, (bool, np.bool_)):
            raise InputError(f"friction must be a bool, got {friction!r}")
        self.friction = bool(friction)
        self.max_dt = float(_positive_vector(max_dt, 1, "max_dt")[0])
        self.bias = np.zeros(self.n)
        self.gaps = 0                  # number of gaps met since construction
        # update_terms' buffers, the rows of one (6, n) array (one kernel argument): r, p,
        # beta, tau of the last sample, expm1(-K_O h) = -(1 - a) of the step, r - bias
        self._terms_state = np.zeros((6, self.n))
        self._buffers = tuple(self._terms_state)
        self._expm1 = self._buffers[4]
        self._shape = self.gains.shape
        self._neg_gains = -self.gains
        slide = np.broadcast_to(np.array(slide_speed, dtype=float), (self.n,)).copy() \
            if np.ndim(slide_speed) == 0 else np.array(slide_speed, dtype=float)
        if slide.shape != (self.n,) or not (np.isfinite(slide) & (slide >= 0)).all():
            raise InputError(f"slide_speed must be a scalar or ({self.n},) of finite values "
                             f">= 0, got {slide_speed!r}")
        self.slide_speed = slide
        # the model's friction_coefficients (5, n) and the slide speed: (6, n) when friction
        # is subtracted, else zeros
        self._friction_coef = (np.vstack([model.friction_coefficients, slide[None, :]])
                               if self.friction else np.zeros((6, self.n)))
        self._held, self._total = self.timing == "held", self.effort == "total"
        # observe_contact's kernel arguments that never change: held, total, friction, coef,
        # the (6, n) buffers
        self._mode_args = (self._held, self._total, self.friction, self._friction_coef,
                           self._terms_state)
        self.reset()

    # ------------------------------------------------------------------ state
    def reset(self, clear_bias=False):
        """r = 0 and the integral restarts at the next sample (the new p(0)); the bias is
        kept unless clear_bias."""
        self._r = np.zeros(self.n)
        self._t = None                 # time, p and beta of the last integrated sample
        self._p = None
        self._beta = None
        self._tau = None
        if clear_bias:
            self.bias = np.zeros(self.n)

    def zero(self):
        """bias = the current raw residual, so :attr:`residual` reads 0 now (call it while
        the arm is free of contact: it removes a steady model error, not a contact)."""
        self.bias = self._r.copy()

    @property
    def residual(self):
        """r - bias (n,), N*m (revolute) or N (prismatic): the external joint torques."""
        return self._r - self.bias

    @property
    def raw_residual(self):
        """r (n,) before the bias is removed."""
        return self._r.copy()

    @property
    def time(self):
        """t of the last accepted sample (s), None before the first one."""
        return self._t

    # ------------------------------------------------------------------ model terms
    def momentum_and_beta(self, q, qd, tau):
        """p = M(q) qd and beta = tau_m + C(q, qd)^T qd - g(q) - tau_fr(qd), each (n,) or,
        for (N, n) inputs, (N, n) (one batched model call per term).

        tau is the measured torque in the observer's ``effort`` meaning. InputError (from
        the model, or naming tau) on a wrong shape or a non-finite value."""
        q_shape = np.shape(q)
        tau = self._checked_tau(tau, q_shape)
        M = self.model.mass_matrix(q)
        C = self.model.coriolis_matrix(q, qd)
        qd = np.asarray(qd, dtype=float)
        p = (M @ qd[..., None])[..., 0]                    # M qd
        beta = tau + (qd[..., None, :] @ C)[..., 0, :]      # + C^T qd
        if self.effort == "total":
            beta = beta - self.model.gravity_torques(q)
        if self.friction and (self.slide_speed > 0).any():
            # the model's friction with the Coulomb ramp (the arithmetic of _friction_one)
            beta = beta - friction_torque(qd, *self.model.friction_coefficients,
                                          slide=self.slide_speed)
        elif self.friction:
            beta = beta - self.model.friction_torques(qd)
        return p, beta

    def _checked_tau(self, tau, q_shape):
        try:
            a = np.array(tau, dtype=float)
        except (TypeError, ValueError):
            raise InputError(f"tau must be numeric, got {type(tau).__name__}") from None
        if a.shape != q_shape:
            raise InputError(f"tau must have the shape of q {q_shape}, got {a.shape}")
        bad = ~np.isfinite(a)
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            raise InputError(f"tau{list(idx)} (joint {self.model.joint_names[idx[-1]]!r}) "
                             f"is {a[idx]}")
        return a

    # ------------------------------------------------------------------ the update
    def update(self, t, q, qd, tau):
        """Accept one sample (t s, q, qd, tau each (n,)) and advance r by the exact step
        r_{k+1} = a r_k + (1 - a) u_k (module docstring). -> :class:`ObserverStep`.

        InputError (state unchanged) for a bad sample or t not after the last sample."""
        t = self._checked_time(t)
        if np.ndim(q) != 1:
            raise InputError(f"q must have shape ({self.n},), got {np.shape(q)}")
        p, beta = self.momentum_and_beta(q, qd, tau)
        dt = math.nan if self._t is None else t - self._t
        event = self._accept(t, p, beta, np.array(tau, dtype=float))
        return ObserverStep(self.residual, event, dt)

    def update_terms(self, t, p, ct, g, tau, qd):
        """:meth:`update` with the model terms given: p = M(q) qd, ct = C(q, qd)^T qd and
        g = g(q) (n,) float64 each, as ``RobotModel.compute_all(..., momentum=True)`` gives
        them (g unused with effort "minus_gravity"); tau, qd (n,) float64. Friction (if on)
        is viscous * qd + coulomb * sign(qd) of the model. No per-sample temporaries: r,
        p, beta and tau are kept in buffers. -> (event, dt) as :class:`ObserverStep`'s;
        :attr:`residual_buffer` holds r - bias (overwritten by the next update).

        The same arithmetic, in the same order, as :meth:`update` on the same p, beta.
        InputError (state unchanged) for t not after the last sample or a tau that is not
        a finite (n,) vector."""
        t, integrate, dt, event = self.begin_terms(t, tau)
        _step_in_place(integrate, self._held, self._total, self.friction, self._friction_coef,
                       p, ct, g, tau, qd, dt if integrate else 1.0, self._terms_state,
                       self.bias)
        self.end_terms(t)
        return event, dt

    def begin_terms(self, t, tau):
        """The part of :meth:`update_terms` before its kernel (for callers that run the
        step inside a larger kernel; core.contact.observe_contact uses :meth:`_begin_mode`,
        which leaves tau's finiteness and the gap's r = 0 to its kernel): checks t and tau
        (InputError, state unchanged), applies the gap rule (counts the gap; r = 0 for
        "reset") and writes expm1(-K_O h) of a step into its buffer. -> (t as float,
        integrate, dt, event); then run :func:`_step_in_place` (h = dt if integrate else
        1.0) and :meth:`end_terms`."""
        t = self._checked_time(t)
        if not (type(tau) is np.ndarray and tau.dtype == np.float64
                and tau.shape == self.gains.shape and finite_vector(tau)):
            self._checked_tau(tau, self.gains.shape)
            raise InputError(f"tau must be a float64 array of shape {self.gains.shape}")
        buffers = self._buffers
        if not (self._r is buffers[0] and self._p is buffers[1]):
            self._adopt_buffers()
        if self._t is None:
            return t, False, math.nan, "start"
        dt = t - self._t
        if dt > self.max_dt:
            self.gaps += 1
            if self.gap == "reset":
                buffers[0].fill(0.0)
                return t, False, dt, "gap_reset"
            return t, False, dt, "gap_bridged"
        expm1 = buffers[4]                 # numpy's expm1 (1 - a = -expm1(-K_O h)), in place
        np.expm1(np.multiply(self._neg_gains, dt, out=expm1), out=expm1)
        return t, True, dt, "step"

    def end_terms(self, t):
        """After :meth:`begin_terms` and the step: the sample at t is the last one, its p,
        beta and tau in the buffers."""
        buffers = self._buffers
        self._t, self._p, self._beta, self._tau = t, buffers[1], buffers[2], buffers[3]

    def _begin_mode(self, t, tau):
        """:meth:`begin_terms` for :func:`core.contact.observe_contact`, whose kernel checks
        that tau is finite and applies the gap rule's effect on r (so that a refused tau
        changes nothing): -> (t as float, mode, dt), mode an index of :data:`MODES`
        ("start", "step", "gap_bridged", "gap_reset"); for "step", expm1(-K_O h) written
        into its buffer. Then the kernel and :meth:`_end_mode`. The common sample (a float
        t, 0 < t - t_last <= max_dt, tau a float64 (n,) array, the buffers adopted) takes
        the first branch; any other goes through begin_terms' checks, which raise the same
        InputErrors."""
        last = self._t
        if (isinstance(t, float) and last is not None and type(tau) is np.ndarray
                and tau.dtype is _F64 and tau.shape == self._shape and self._adopted()):
            t = float(t)
            dt = t - last
            if 0.0 < dt <= self.max_dt:
                e = self._expm1
                np.expm1(np.multiply(self._neg_gains, dt, out=e), out=e)
                return t, 1, dt
        t = self._checked_time(t)
        if not (type(tau) is np.ndarray and tau.dtype == np.float64
                and tau.shape == self._shape and finite_vector(tau)):
            self._checked_tau(tau, self._shape)
            raise InputError(f"tau must be a float64 array of shape {self._shape}")
        if not self._adopted():
            self._adopt_buffers()
        if last is None:
            return t, 0, math.nan
        dt = t - last
        if dt > self.max_dt:
            return t, (3 if self.gap == "reset" else 2), dt
        e = self._expm1
        np.expm1(np.multiply(self._neg_gains, dt, out=e), out=e)
        return t, 1, dt

    def _adopted(self):
        buffers = self._buffers
        return self._r is buffers[0] and self._p is buffers[1]

    def _end_mode(self, t, mode):
        """After :meth:`_begin_mode` and a kernel that accepted the sample: the gap counted,
        the sample at t the last one."""
        if mode > 1:
            self.gaps += 1
        buffers = self._buffers
        self._t, self._p, self._beta, self._tau = t, buffers[1], buffers[2], buffers[3]

    @property
    def residual_buffer(self):
        """r - bias (n,) of the last :meth:`update_terms` (a buffer it overwrites)."""
        return self._buffers[5]

    def _adopt_buffers(self):
        """Make r, p, beta, tau of the last sample live in update_terms' buffers (after
        :meth:`reset`, :meth:`update` or :meth:`run`, which bind new arrays)."""
        r, p_prev, beta_prev, tau_prev = self._buffers[:4]
        for buf, now in ((r, self._r), (p_prev, self._p), (beta_prev, self._beta),
                         (tau_prev, self._tau)):
            if now is not None and now is not buf:
                buf[:] = now
        self._r = r

    def _checked_time(self, t):
        try:
            t = float(t)
        except (TypeError, ValueError):
            raise InputError(f"t must be a real number (s), got {t!r}") from None
        if not math.isfinite(t):
            raise InputError(f"t = {t} is not finite")
        if self._t is not None and t <= self._t:
            raise InputError(f"stale sample: t = {t!r} s is not after the last sample's "
                             f"t = {self._t!r} s (duplicate or out of order); not integrated")
        return t

    def run(self, t, q, qd, tau):
        """Feed a recorded stream: t (N,) s increasing, q, qd, tau (N, n). -> (N, n)
        residuals r - bias after each sample, exactly as N calls of :meth:`update` (same
        gap rule), with the model terms computed in one batched call per term.

        The whole batch is checked first: on any bad sample (named in the InputError) the
        state is unchanged."""
        try:
            t = np.array(t, dtype=float)
        except (TypeError, ValueError):
            raise InputError("t must be an (N,) array of times (s)") from None
        if t.ndim != 1 or np.ndim(q) != 2 or np.shape(q)[0] != t.shape[0] or not t.size:
            raise InputError(f"run needs t (N,) and q (N, {self.n}), N >= 1, got {t.shape} and "
                             f"{np.shape(q)}")
        if not np.isfinite(t).all():
            raise InputError(f"t[{int(np.argmax(~np.isfinite(t)))}] is not finite")
        prev = -np.inf if self._t is None else self._t
        steps = np.diff(np.concatenate(([prev], t)))
        if (steps <= 0).any():
            k = int(np.argmax(steps <= 0))
            raise InputError(f"stale sample t[{k}] = {t[k]!r} s: not after the previous "
                             "sample (duplicate or out of order)")
        P, B = self.momentum_and_beta(q, qd, tau)
        TAU = np.array(tau, dtype=float)
        started = self._t is not None         # prepend the last accepted sample, if any
        T = np.concatenate(([self._t], t)) if started else t
        PP = np.vstack((self._p, P)) if started else P
        BB = np.vstack((self._beta, B)) if started else B
        TT = np.vstack((self._tau, TAU)) if started else TAU
        h = np.diff(T)
        B0 = BB[:-1] + (TT[1:] - TT[:-1]) if self.timing == "held" else BB[:-1]
        one_minus_a, U = step_terms(self.gains, h[:, None], PP[:-1], PP[1:], B0, BB[1:])
        out = np.empty_like(P)
        r = out[0] = self._r                  # (overwritten below if started)
        first = 0 if started else 1
        for k in range(h.shape[0]):
            r = self._gap(r) if h[k] > self.max_dt else r + one_minus_a[k] * (U[k] - r)
            out[k + first] = r
        self._r, self._t, self._p, self._beta = r.copy(), float(t[-1]), P[-1], B[-1]
        self._tau = TAU[-1]
        return out - self.bias

    def _gap(self, r):
        """r after a gap (module docstring): held (bridge) or 0 (reset); counts the gap."""
        self.gaps += 1
        return np.zeros(self.n) if self.gap == "reset" else r

    def _accept(self, t, p, beta, tau):
        """The state transition for an already-validated sample (t after the last one).
        -> the event name of :class:`ObserverStep`."""
        if self._t is None:
            event = "start"
        elif t - self._t > self.max_dt:
            event = "gap_bridged" if self.gap == "bridge" else "gap_reset"
            self._r = self._gap(self._r)
        else:
            event = "step"
            beta0 = self._beta + (tau - self._tau) if self.timing == "held" else self._beta
            self._r = exact_step(self._r, self.gains, t - self._t, self._p, p, beta0, beta)
        self._t, self._p, self._beta, self._tau = t, p, beta, tau
        return event


@njit(cache=True, nogil=True, fastmath=False, error_model="numpy")
def finite_vector(a):
    """Every entry of the 1-D float array a is finite."""
    ok = True
    for x in a:
        ok &= x * 0.0 == 0.0
    return ok


@njit(cache=True, nogil=True, fastmath=False, error_model="numpy")
def _friction_one(x, viscous, coulomb, coulomb_negative, offset, width, slide):
    """model.friction_torque of one joint at qd = x (the same operations, in numba), with
    s(x) = clip(x / slide, -1, 1) where slide > 0 (MomentumObserver's slide_speed)."""
    if slide > 0.0:
        s = x / slide
        s = 1.0 if s > 1.0 else (-1.0 if s < -1.0 else s)
    elif width > 0.0:
        s = math.tanh(x / width)
    else:
        s = 1.0 if x > 0.0 else (-1.0 if x < 0.0 else 0.0)
    return viscous * x + (coulomb if x > 0.0 else coulomb_negative) * s + offset


@njit(cache=True, nogil=True, fastmath=False, error_model="numpy")
def _step_in_place(integrate, held, total, friction, coef, p, ct, g, tau, qd, h, state, bias):
    """One sample of MomentumObserver.update_terms, per joint i. state (6, n): rows r,
    p_prev, beta_prev, tau_prev, e = expm1(-K_O h) (so 1 - a = -e) and residual; coef
    (6, n): viscous, coulomb, coulomb_negative, offset, width (RobotModel.
    friction_coefficients) and the slide speed; the rest (n,):
    beta = tau + ct [- g if total] [- tau_fr(qd) if friction] (tau_fr: model.friction_torque,
    its s(qd) the ramp clip(qd / slide, -1, 1) where the slide speed is > 0);
    if integrate: r = r + (1 - a) (u - r), u = (p - p_prev) / h - (beta0 + beta) / 2,
    beta0 = beta_prev [+ (tau - tau_prev) if held]; then p_prev, beta_prev, tau_prev = p,
    beta, tau and residual = r - bias. The operations and their order are those of
    momentum_and_beta, step_terms and exact_step (the same bits: -e is exact)."""
    r, p_prev, beta_prev, tau_prev, e, residual = (state[0], state[1], state[2], state[3],
                                                   state[4], state[5])
    for i in range(p.shape[0]):
        beta = tau[i] + ct[i]
        if total:
            beta = beta - g[i]
        if friction:
            beta = beta - _friction_one(qd[i], coef[0, i], coef[1, i], coef[2, i], coef[3, i],
                                        coef[4, i], coef[5, i])
        if integrate:
            beta0 = beta_prev[i] + (tau[i] - tau_prev[i]) if held else beta_prev[i]
            u = (p[i] - p_prev[i]) / h - 0.5 * (beta0 + beta)
            r[i] = r[i] + (-e[i]) * (u - r[i])
        p_prev[i] = p[i]
        beta_prev[i] = beta
        tau_prev[i] = tau[i]
        residual[i] = r[i] - bias[i]


def step_terms(gains, h, p0, p1, beta0, beta1):
    """(1 - a, u) of the exact step: a = exp(-gains h), u = (p1 - p0) / h - (beta0 + beta1)/2.
    Broadcasts: one step ((n,) arrays, scalar h) or N steps ((N, n) arrays, h (N, 1))."""
    return -np.expm1(-gains * h), (p1 - p0) / h - 0.5 * (beta0 + beta1)


def exact_step(r, gains, h, p0, p1, beta0, beta1):
    """r_{k+1} = a r_k + (1 - a) u, a = exp(-gains h), u = (p1 - p0) / h - (beta0 + beta1) / 2.

    The exact solution over one step of dr/dt = K_O (u - r) with u constant (module
    docstring, (A1)-(A2)). r, gains, p0, p1, beta0, beta1 (n,); h > 0 s."""
    one_minus_a, u = step_terms(gains, h, p0, p1, beta0, beta1)
    return r + one_minus_a * (u - r)
