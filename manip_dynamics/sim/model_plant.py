"""The model-matched plant: fixed-step integration of the core's own forward dynamics.

    M(q) qdd + C(q, qd) qd + g(q) = tau_motor - tau_fr(qd)
    tau_fr(qd) = viscous * qd + coulomb * tanh(qd / coulomb_velocity)

``qdd = model.forward_dynamics(q, qd, tau_motor - tau_fr)``. The plant and the dynamics
node then share one model, so a controller built on the node's numbers is exact by
construction: ``arm_simulator`` offers it as ``plant: model`` for tests of the plumbing
(the MuJoCo plant is the default and the independent one). No joint limits, no contact,
no external wrenches (tau_ext = 0).

Coulomb friction is smoothed by tanh so the right-hand side stays Lipschitz and a
fixed-step method neither chatters nor needs event detection. Integrators: classical RK4
(``rk4``) or semi-implicit (symplectic) Euler (``semi_implicit_euler``).
"""
from __future__ import annotations

import numpy as np


class ModelPlant:
    """RK4 / semi-implicit Euler on ``model.forward_dynamics`` with step ``h`` (s).

    model: RobotModel; viscous, coulomb: (n,) friction coefficients (N*m*s/rad, N*m; None:
    the model's URDF values); coulomb_velocity: tanh width (rad/s), > 0.
    """

    def __init__(self, model, viscous=None, coulomb=None, coulomb_velocity=0.1,
                 integrator="rk4", h=1e-3):
        self.model = model
        self.n = model.n
        self.h = float(h)
        self.coulomb_velocity = float(coulomb_velocity)
        self.integrator = integrator
        self.saturate = True
        self.set_friction(model.viscous if viscous is None else viscous,
                          model.coulomb if coulomb is None else coulomb)
        self.q = np.zeros(self.n)
        self.qd = np.zeros(self.n)
        self.time = 0.0
        self.tau_applied = np.zeros(self.n)

    def reset(self, q, qd=None):
        self.q = np.array(q, dtype=float).reshape(self.n)
        self.qd = np.zeros(self.n) if qd is None else np.array(qd, dtype=float).reshape(self.n)

    def set_friction(self, viscous, coulomb):
        self.viscous = np.asarray(viscous, dtype=float).reshape(self.n)
        self.coulomb = np.asarray(coulomb, dtype=float).reshape(self.n)

    def set_integrator(self, name: str):
        self.integrator = name

    def set_saturation(self, on: bool):
        self.saturate = bool(on)

    def friction(self, qd):
        """tau_fr = viscous qd + coulomb tanh(qd / v_s): opposes motion, smooth at qd = 0."""
        return self.viscous * qd + self.coulomb * np.tanh(qd / self.coulomb_velocity)

    def acceleration(self, q, qd, tau):
        """qdd = M^-1 (tau - tau_fr(qd) - C qd - g), by the core's forward dynamics."""
        return self.model.forward_dynamics(q, qd, tau - self.friction(qd))

    def step(self, tau, h):
        """Advance (q, qd) by one step of length h with the torque tau held constant."""
        q, qd = self.q, self.qd
        if self.integrator == "rk4":
            # x = (q, qd), x' = (qd, qdd(q, qd)); classical 4-stage Runge-Kutta.
            a1 = self.acceleration(q, qd, tau)
            q2, v2 = q + 0.5 * h * qd, qd + 0.5 * h * a1
            a2 = self.acceleration(q2, v2, tau)
            q3, v3 = q + 0.5 * h * v2, qd + 0.5 * h * a2
            a3 = self.acceleration(q3, v3, tau)
            q4, v4 = q + h * v3, qd + h * a3
            a4 = self.acceleration(q4, v4, tau)
            self.q = q + h / 6.0 * (qd + 2.0 * v2 + 2.0 * v3 + v4)
            self.qd = qd + h / 6.0 * (a1 + 2.0 * a2 + 2.0 * a3 + a4)
        else:
            # Semi-implicit (symplectic) Euler: velocity first, then position with it.
            self.qd = qd + h * self.acceleration(q, qd, tau)
            self.q = q + h * self.qd
        self.time += h

    def advance(self, tau, steps: int, h: float | None = None):
        """``steps`` steps of length ``h`` (default: the plant's) with the motor torque held
        constant (clipped to the effort limits when saturating)."""
        tau = np.asarray(tau, dtype=float)
        if self.saturate:
            limit = self.model.effort_limits
            tau = np.clip(tau, -limit, limit)
        self.tau_applied = tau
        for _ in range(int(steps)):
            self.step(tau, self.h if h is None else h)
        if not (np.all(np.isfinite(self.q)) and np.all(np.isfinite(self.qd))):
            raise FloatingPointError("simulation diverged (non-finite state)")

    def apply_wrench(self, link, force, torque, point=(0.0, 0.0, 0.0), duration=0.0):
        raise ValueError("the model plant takes no external wrenches (use plant: mujoco)")

    def external_torques(self) -> np.ndarray:
        """No contact and no wrenches: tau_ext = 0."""
        return np.zeros(self.n)

    def energy(self):
        """Kinetic + potential energy (J) of the current state."""
        return float(self.model.kinetic_energy(self.q, self.qd)
                     + self.model.potential_energy(self.q))
