"""A simulated "true" plant for the identification tests and benchmark (no identification
code is used here): the Panda URDF with every link's mass and centre of mass changed by
10-30% (random signs), a payload on the flange the URDF does not know, and joint friction;
driven along a trajectory by a computed-torque + PD controller that uses the (wrong) URDF
model, integrated with classical RK4 of the TRUE model's forward dynamics, torque held
constant over each step (zero-order hold, as a real drive)."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from manip_dynamics import RobotModel, robots
from manip_dynamics.core.identification.excitation import FourierTrajectory

PAYLOAD = ("panda_link8", 1.2, (0.01, 0.02, 0.05), np.diag([2e-3, 3e-3, 1e-3]))
# The excitation of the accuracy tests, a fixed input: optimize_excitation(panda, max_iter=3)
# as it came out when the bounds were measured (condition number 66.8). SLSQP's path
# depends on round-off: the same call gives 62.3 with OpenBLAS's Haswell kernel and 64.3
# with Prescott after a change of the kernels at the 1e-15 level, and the noise-free
# accuracy with it (max base-parameter error 0.53% -> 1.7%), so the tests that bound the
# accuracy read this file instead of re-optimising.
EXCITATION = Path(__file__).resolve().parent / "data" / "panda_excitation.json"


def excitation():
    """The fixed Panda excitation (FourierTrajectory, 10 s, 5 harmonics of 0.1 Hz)."""
    return FourierTrajectory.load(EXCITATION)


def _f(x):
    return repr(float(x))


def perturbed_urdf(xml, rng, low=0.1, high=0.3):
    """Every <inertial>: mass x (1 +- U(low, high)) (inertia scaled alike), each com
    coordinate x (1 +- U(low, high))."""
    root = ET.fromstring(xml)
    for link in root.findall("link"):
        inr = link.find("inertial")
        if inr is None:
            continue
        f = 1 + rng.choice([-1, 1]) * rng.uniform(low, high)
        m = inr.find("mass")
        m.set("value", _f(float(m.get("value")) * f))
        o = inr.find("origin")
        c = np.array([float(v) for v in o.get("xyz").split()])
        c *= 1 + rng.choice([-1, 1], 3) * rng.uniform(low, high, 3)
        o.set("xyz", " ".join(_f(v) for v in c))
        inertia = inr.find("inertia")
        for k in inertia.attrib:
            inertia.set(k, _f(float(inertia.get(k)) * f))
    return ET.tostring(root, encoding="unicode")


def panda_models(seed=1):
    """(URDF text, URDF model, true plant model)."""
    xml = open(robots.path("panda"), encoding="utf-8").read()
    rng = np.random.default_rng(seed)
    true = (RobotModel.from_urdf_string(perturbed_urdf(xml, rng)).with_payload(*PAYLOAD)
            .with_friction(viscous=rng.uniform(0.05, 0.3, 7), coulomb=rng.uniform(0.1, 0.5, 7)))
    return xml, RobotModel.from_urdf_string(xml), true


def simulate(true, controller_model, trajectory, dt=1e-3, kp=400.0, kd=40.0):
    """(t, q, qd, tau) (N,), (N, n): the true plant tracking ``trajectory`` (q_d, qd_d,
    qdd_d = trajectory.sample(t)) from rest at q_d(0). The command tau_k = ID_controller(q_k,
    qd_k, qdd_d + kp e + kd de) is applied over [t_k, t_k + dt]; the returned tau is the
    measured effort (see the end)."""
    t = np.arange(0.0, trajectory.duration, dt)
    q_d, qd_d, qdd_d = trajectory.sample(t)
    n = q_d.shape[1]
    q, qd = q_d[0].copy(), np.zeros(n)
    Q, QD, TAU = (np.empty((len(t), n)) for _ in range(3))
    acc = lambda q, qd, tau: true.forward_dynamics(q, qd, tau, friction=True)
    for k in range(len(t)):
        tau = controller_model.inverse_dynamics(
            q, qd, qdd_d[k] + kp * (q_d[k] - q) + kd * (qd_d[k] - qd))
        Q[k], QD[k], TAU[k] = q, qd, tau
        k1v, k1a = qd, acc(q, qd, tau)
        k2v = qd + 0.5 * dt * k1a
        k2a = acc(q + 0.5 * dt * k1v, k2v, tau)
        k3v = qd + 0.5 * dt * k2a
        k3a = acc(q + 0.5 * dt * k2v, k3v, tau)
        k4v = qd + dt * k3a
        k4a = acc(q + dt * k3v, k4v, tau)
        q = q + dt / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
        qd = qd + dt / 6 * (k1a + 2 * k2a + 2 * k3a + k4a)
    # the effort "measured" at t_k: the mean actuator torque over [t_k - dt/2, t_k + dt/2]
    # (an ideal averaging torque sensor), simultaneous with the state. The held command
    # tau_k itself is half a sample ahead of the motion it causes.
    measured = TAU.copy()
    measured[1:] = 0.5 * (TAU[1:] + TAU[:-1])
    return t, Q, QD, measured
