"""Excitation trajectories for identification: finite Fourier series (Swevers et al. 1997).

Per joint j, with w = 2 pi f0 and harmonics l = 1..L::

    q_j(t)   = q0_j + sum_l  a_jl / (w l) sin(w l t) - b_jl / (w l) cos(w l t)
    qd_j(t)  =        sum_l  a_jl cos(w l t) + b_jl sin(w l t)
    qdd_j(t) =        sum_l  w l (-a_jl sin(w l t) + b_jl cos(w l t))

periodic with period T = 1 / f0. Starting and stopping at rest: ``qd(0) = sum_l a_l = 0``
and also ``qdd(0) = w sum_l l b_l = 0``, imposed by eliminating a_j1 and b_j1, so the
free coefficients are ``x_j = [q0_j, a_j2..a_jL, b_j2..b_jL]`` and q, qd, qdd are LINEAR in
x (``q(t_s) = Phi_q(t_s) x_j``): the position and velocity limits are linear inequality
constraints at the sample times. :func:`optimize_excitation` minimises the condition number
of the base regressor stacked over those samples (scipy SLSQP, analytic constraint
Jacobians, numerical objective gradient, a wall-time bound).

File format (:meth:`FourierTrajectory.save`, JSON, ``"format":
"manip_dynamics.fourier_trajectory"``, ``"version": 1``): ``joint_names``,
``base_frequency_hz`` f0, ``duration_s`` (an integer number of periods), ``q0`` (n),
``a`` and ``b`` (n x L, all harmonics, l = 1 first), and informative fields
(``condition_number``, ``equations``). A player evaluates the three equations above at
its own rate, t in [0, duration_s], holding q(0) before and q(duration_s) = q(0) after.
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from .regressor import base_parameters, joint_torque_regressor

FORMAT = "manip_dynamics.fourier_trajectory"


@dataclass(frozen=True)
class FourierTrajectory:
    """A finite Fourier series trajectory (module docstring). a, b (n, L); q0 (n,)."""

    joint_names: tuple
    base_frequency: float
    q0: np.ndarray
    a: np.ndarray
    b: np.ndarray
    periods: int = 1
    condition_number: float = float("nan")

    @property
    def duration(self):
        return self.periods / self.base_frequency

    def sample(self, t):
        """(q, qd, qdd) each (len(t), n) at times t (s)."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        w = 2 * math.pi * self.base_frequency
        wl = w * np.arange(1, self.a.shape[1] + 1)                  # (L,)
        s, c = np.sin(np.outer(t, wl)), np.cos(np.outer(t, wl))     # (S, L)
        q = self.q0 + s @ (self.a / wl).T - c @ (self.b / wl).T
        qd = c @ self.a.T + s @ self.b.T
        qdd = -s @ (self.a * wl).T + c @ (self.b * wl).T
        return q, qd, qdd

    def to_dict(self):
        return {"format": FORMAT, "version": 1, "joint_names": list(self.joint_names),
                "base_frequency_hz": self.base_frequency, "duration_s": self.duration,
                "q0": self.q0.tolist(), "a": self.a.tolist(), "b": self.b.tolist(),
                "condition_number": self.condition_number,
                "equations": "q_j(t) = q0_j + sum_l a_jl/(w l) sin(w l t) - b_jl/(w l) "
                             "cos(w l t); qd_j = sum_l a_jl cos(w l t) + b_jl sin(w l t); "
                             "w = 2 pi base_frequency_hz, l = 1..L"}

    def save(self, path):
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_dict(), f, indent=1)

    @classmethod
    def load(cls, path):
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
        if d.get("format") != FORMAT or d.get("version") != 1:
            raise InputError(f"{path}: not a {FORMAT} version 1 file")
        f0 = float(d["base_frequency_hz"])
        return cls(tuple(d["joint_names"]), f0, np.array(d["q0"], float),
                   np.array(d["a"], float), np.array(d["b"], float),
                   int(round(float(d["duration_s"]) * f0)),
                   float(d.get("condition_number", "nan")))


def _basis(t, f0, L):
    """Phi_q, Phi_v, Phi_a (S, 2L - 1): q_j(t) = Phi_q x_j for x_j = [q0, a_2..L, b_2..L],
    a_1 = -sum a_l and b_1 = -sum l b_l eliminated (rest at t = 0)."""
    w = 2 * math.pi * f0
    S = len(t)
    Pq, Pv, Pa = (np.zeros((S, 2 * L - 1)) for _ in range(3))
    Pq[:, 0] = 1.0
    s1, c1 = np.sin(w * t), np.cos(w * t)
    for l in range(2, L + 1):
        sl, cl = np.sin(w * l * t), np.cos(w * l * t)
        ia, ib = l - 1, L + l - 2
        Pq[:, ia] = sl / (w * l) - s1 / w
        Pv[:, ia] = cl - c1
        Pa[:, ia] = -w * l * sl + w * s1
        Pq[:, ib] = -cl / (w * l) + l * c1 / w
        Pv[:, ib] = sl - l * s1
        Pa[:, ib] = w * l * cl - l * w * c1
    return Pq, Pv, Pa


def _coefficients(x, L):
    """(q0 (n,), a (n, L), b (n, L)) from the free coefficients x (n, 2L - 1)."""
    q0, a_free, b_free = x[:, 0], x[:, 1:L], x[:, L:]
    ls = np.arange(2, L + 1)
    a = np.concatenate([-a_free.sum(axis=1, keepdims=True), a_free], axis=1)
    b = np.concatenate([-(b_free * ls).sum(axis=1, keepdims=True), b_free], axis=1)
    return q0, a, b


def _limits(model, margin, velocity_fraction, default_velocity):
    lo = np.maximum(np.nan_to_num(model.position_lower, neginf=-math.pi), -math.pi) + margin
    hi = np.minimum(np.nan_to_num(model.position_upper, posinf=math.pi), math.pi) - margin
    if np.any(lo >= hi):
        j = int(np.argmax(lo >= hi))
        raise InputError(f"joint {model.joint_names[j]!r}: range narrower than 2 x margin")
    vmax = np.where(np.isfinite(model.velocity_limits) & (model.velocity_limits > 0),
                    model.velocity_limits, default_velocity) * velocity_fraction
    return lo, hi, vmax


def optimize_excitation(model, base_frequency=0.1, harmonics=5, friction=True, samples=None,
                        margin=0.1, velocity_fraction=0.8, default_velocity=2.0, seed=0,
                        max_time=60.0, max_iter=100, progress=None):
    """FourierTrajectory minimising cond(W_base) within the URDF's limits.

    q stays in [lower + margin, upper - margin] (rad or m; unlimited joints: [-pi, pi]) and
    |qd| <= velocity_fraction * velocity limit (default_velocity where the URDF has none)
    at ``samples`` times over one period (default 4x as many equations as base
    parameters, >= 60). Objective log cond of the base regressor (with friction columns if
    ``friction``) at those samples. Starts from random coefficients (``seed``) scaled into
    the limits; stops after max_iter SLSQP iterations or max_time seconds, returning the
    best feasible iterate. progress(iteration, cond) after each iteration."""
    base = base_parameters(model, friction)
    n, L = model.n, int(harmonics)
    S = samples or max(60, -(-4 * base.count // n))
    t = np.arange(S) / (S * base_frequency)
    Pq, Pv, Pa = _basis(t, base_frequency, L)
    lo, hi, vmax = _limits(model, margin, velocity_fraction, default_velocity)
    x0 = _feasible_start(np.random.default_rng(seed), Pq, Pv, lo, hi, vmax, n, L)
    m = 2 * L - 1

    def cond(xf):
        x = xf.reshape(n, m)
        W = base.regressor(joint_torque_regressor(model, Pq @ x.T, Pv @ x.T, Pa @ x.T,
                                                  friction)).reshape(-1, base.count)
        ev = np.linalg.eigvalsh(W.T @ W)          # sigma^2: cheaper than the SVD of W
        return float(0.5 * np.log(ev[-1] / max(ev[0], 1e-300)))

    A, ub = _constraint_matrix(Pq, Pv, lo, hi, vmax, n)
    best = {"x": x0, "f": cond(x0.ravel())}
    deadline = time.monotonic() + max_time

    def objective(xf):
        f = cond(xf)
        if f < best["f"] and np.all(A @ xf <= ub + 1e-9):
            best.update(x=xf.reshape(n, m).copy(), f=f)
        if time.monotonic() > deadline:
            raise _Timeout
        return f

    iteration = [0]

    def callback(xf):
        iteration[0] += 1
        if progress is not None:
            progress(iteration[0], math.exp(best["f"]))

    import scipy.optimize     # here, not at import: 1 s of CPU in every process that imports
                              # the core (each node's start), where nothing is optimised
    try:
        if max_iter <= 0:
            raise _Timeout
        scipy.optimize.minimize(
            objective, x0.ravel(), method="SLSQP", callback=callback,
            constraints=[{"type": "ineq", "fun": lambda xf: ub - A @ xf, "jac": lambda xf: -A}],
            options={"maxiter": max_iter, "ftol": 1e-6})
    except _Timeout:
        pass
    q0, a, b = _coefficients(best["x"], L)
    return FourierTrajectory(tuple(model.joint_names), float(base_frequency), q0, a, b, 1,
                             math.exp(best["f"]))


class _Timeout(Exception):
    pass


def _constraint_matrix(Pq, Pv, lo, hi, vmax, n):
    """A, ub with A x <= ub for x = the (n, 2L - 1) coefficients raveled joint by joint."""
    blocks, ubs = [], []
    for j in range(n):
        for P, upper, lower in ((Pq, hi[j], lo[j]), (Pv, vmax[j], -vmax[j])):
            Z = np.zeros((2 * P.shape[0], n * P.shape[1]))
            Z[:, j * P.shape[1]:(j + 1) * P.shape[1]] = np.vstack([P, -P])
            blocks.append(Z)
            ubs.append(np.concatenate([np.full(P.shape[0], upper), np.full(P.shape[0], -lower)]))
    return np.vstack(blocks), np.concatenate(ubs)


def _feasible_start(rng, Pq, Pv, lo, hi, vmax, n, L):
    """Random coefficients, q0 centred in the range, harmonics scaled to 70% of the limits."""
    x = np.zeros((n, 2 * L - 1))
    x[:, 0] = 0.5 * (lo + hi)
    x[:, 1:] = rng.normal(size=(n, 2 * L - 2))
    for j in range(n):
        dq = np.abs(Pq[:, 1:] @ x[j, 1:]).max()
        dv = np.abs(Pv[:, 1:] @ x[j, 1:]).max()
        s = 0.7 * min(0.5 * (hi[j] - lo[j]) / max(dq, 1e-12), vmax[j] / max(dv, 1e-12))
        x[j, 1:] *= s
    return x
