"""Energy: a passive arm simulated with the core's forward dynamics conserves T + U.

The integrator is a classical RK4 written here (not the core's), stepping
qdd = model.forward_dynamics(q, qd, 0) for 5 s on a batch of 4 random initial states at
once. The energy is the core's kinetic + potential energy, whose own correctness is
checked against closed forms and Pinocchio elsewhere; here the point is that forward
dynamics, T and U are mutually consistent (any inconsistency -- a wrong Coriolis term,
gravity sign or mimic mapping -- gives an O(1) drift that does not shrink with the step).

Bound (docs/math.md, "Energy drift"): RK4 has a local error O(h^5), so over a fixed time
the energy error is O(h^4) or better (for oscillatory motion the leading energy error per
step is O(h^6), giving O(h^5) over 5 s). Measured with h = 1e-3 s the relative drift
|E(t) - E(0)| / max T is 1.4e-6 for the (fast: up to ~30 rad/s) double pendulum and
6e-8 or less for the other arms; the test asserts 1e-5, and that
halving the step shrinks the drift at least 8x (order >= 3), which a modelling error
could not do.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

from .. import urdf_factory as uf
from .test_pinocchio import DOUBLE_PENDULUM

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

T_END = 5.0


def arms():
    from manip_dynamics import RobotModel

    return {
        "double_pendulum": RobotModel.from_urdf_file(DOUBLE_PENDULUM),
        "tree": RobotModel.from_urdf_string(uf.random_tree(2, with_mimic=False)),
        "tree_mimic": RobotModel.from_urdf_string(uf.random_tree(1)),
        "planar_2r": RobotModel.from_urdf_string(
            uf.planar_2r(1.4, 0.9, 0.8, 0.5, (0.35, 0.07), (0.2, -0.11),
                         uf.planar_inertia(0.021), uf.planar_inertia(0.013)),
            gravity=(0.0, -9.81, 0.0)),
    }


@pytest.fixture(scope="module")
def models():
    return arms()


def simulate(model, q0, qd0, h, friction=False):
    """RK4 on (q, qd) with tau = 0 for T_END seconds; returns the energy every step
    (steps+1, N), the kinetic energy, and the dissipated power qd^T B qd (viscous only)."""
    tau = np.zeros_like(q0)

    def f(q, qd):
        return model.forward_dynamics(q, qd, tau, friction=friction)

    def energy(q, qd):
        return model.kinetic_energy(q, qd) + model.potential_energy(q)

    q, qd = q0.copy(), qd0.copy()
    steps = int(round(T_END / h))
    E, T, P = [energy(q, qd)], [model.kinetic_energy(q, qd)], [np.sum(model.viscous * qd * qd, 1)]
    for _ in range(steps):
        k1q, k1v = qd, f(q, qd)
        k2q = qd + 0.5 * h * k1v
        k2v = f(q + 0.5 * h * k1q, k2q)
        k3q = qd + 0.5 * h * k2v
        k3v = f(q + 0.5 * h * k2q, k3q)
        k4q = qd + h * k3v
        k4v = f(q + h * k3q, k4q)
        q = q + h / 6.0 * (k1q + 2 * k2q + 2 * k3q + k4q)
        qd = qd + h / 6.0 * (k1v + 2 * k2v + 2 * k3v + k4v)
        E.append(energy(q, qd))
        T.append(model.kinetic_energy(q, qd))
        P.append(np.sum(model.viscous * qd * qd, 1))
    return np.array(E), np.array(T), np.array(P)


def initial_states(model, seed=0, count=4):
    rng = np.random.default_rng(seed)
    return rng.uniform(-2.0, 2.0, (count, model.n)), rng.normal(0.0, 1.5, (count, model.n))


@pytest.mark.parametrize("name", ["double_pendulum", "tree", "tree_mimic", "planar_2r"])
def test_passive_arm_conserves_energy(models, name):
    model = models[name]
    q0, qd0 = initial_states(model)
    drift = {}
    for h in (2e-3, 1e-3):
        E, T, _ = simulate(model, q0, qd0, h)
        scale = T.max(axis=0)                        # energy exchanged, per trajectory
        assert np.all(scale > 0.1), "the arms must actually move"
        drift[h] = float(np.max(np.abs(E - E[0]) / scale))
    report = f"{name}: relative drift h=2e-3: {drift[2e-3]:.2e}, h=1e-3: {drift[1e-3]:.2e}"
    if os.environ.get("MANIP_DYNAMICS_PRINT_DRIFT"):
        print(report)
    assert drift[1e-3] < 1e-5, report
    assert drift[2e-3] / drift[1e-3] > 8.0, report


def test_viscous_friction_dissipates_energy(models):
    """With viscous friction B and tau = 0: dE/dt = -qd^T B qd <= 0. E decreases at every
    step, and E(t) - E(0) equals -integral of qd^T B qd (trapezoid rule on the RK4 samples)."""
    base = models["tree"]
    model = base.with_friction(viscous=np.linspace(0.2, 1.0, base.n), coulomb=np.zeros(base.n))
    q0, qd0 = initial_states(model, seed=5)
    h = 1e-3
    E, T, P = simulate(model, q0, qd0, h, friction=True)
    steps = np.diff(E, axis=0)
    assert np.all(steps <= 1e-9 * np.abs(E).max()), f"energy rose by {steps.max():.3e}"
    assert np.all(E[0] - E[-1] > 0.1 * T[0]), "friction must dissipate a visible amount"
    dissipated = np.concatenate([np.zeros((1, P.shape[1])),
                                 np.cumsum(0.5 * h * (P[1:] + P[:-1]), axis=0)])
    balance = E - E[0] + dissipated
    assert np.max(np.abs(balance)) < 1e-4 * np.max(np.abs(E[0] - E[-1])), \
        f"power balance off by {np.max(np.abs(balance)):.3e}"
