"""The model-matched plant (sim.model_plant.ModelPlant, no ROS): the integrator's accuracy, energy behaviour and friction.

Bounds: a passive frictionless arm conserves E = T + V exactly; classical RK4 with
h = 1 ms has local error O(h^5) and, for these arms (swing periods ~1 s, so omega h ~ 0.006),
a relative energy error far below 1e-6 over seconds. Semi-implicit Euler is symplectic:
its energy error stays bounded (no drift) at O(omega h); the released 2R whips through
the bottom at several rad/s, so about 2 % of the potential drop here (measured 0.31 J).
"""
import numpy as np
import pytest

from manip_dynamics import RobotModel, robots
from manip_dynamics.sim.model_plant import ModelPlant

pytestmark = pytest.mark.filterwarnings("ignore::manip_dynamics.MasslessLinkWarning")


def _sim(name, q0, integrator="rk4", viscous=0.0, coulomb=0.0):
    model = RobotModel.from_urdf_file(robots.path(name))
    sim = ModelPlant(model, np.full(model.n, viscous), np.full(model.n, coulomb),
                     coulomb_velocity=0.1, integrator=integrator)
    sim.reset(q0)
    return sim


def _energy_trace(sim, seconds, h=1e-3, every=10, potentials=None):
    """E = T + V every ``every`` steps; V is appended to ``potentials`` if given."""
    energies = [sim.energy()]
    tau = np.zeros(sim.n)
    for _ in range(int(round(seconds / h / every))):
        sim.advance(tau, every, h)
        energies.append(sim.energy())
        if potentials is not None:
            potentials.append(sim.model.potential_energy(sim.q))
    return np.array(energies)


@pytest.mark.parametrize("name,q0", [
    ("planar_2r", [0.0, 0.0]),                                # released horizontal
    ("planar_rp", [0.3, 0.6]),
    ("panda", [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]),
])
def test_rk4_conserves_energy_of_the_passive_arm(name, q0):
    """Relative to the energy exchanged between T and V (the range of V along the motion;
    measured: 2R 1e-9, RP 1e-12, Panda 2e-7)."""
    sim = _sim(name, q0)
    potentials = [sim.model.potential_energy(sim.q)]
    e = _energy_trace(sim, 3.0, potentials=potentials)
    swing = np.ptp(potentials)
    assert swing > 1.0                                        # J: it really moved
    assert np.max(np.abs(e - e[0])) < 1e-6 * swing


def test_semi_implicit_euler_energy_error_is_bounded():
    sim = _sim("planar_2r", [0.0, 0.0], integrator="semi_implicit_euler")
    e = _energy_trace(sim, 3.0)
    scale = 9.81 * (2.0 * 0.3 + 1.2 * 0.6 + 1.2 * 0.2)   # ~ the potential drop, J
    assert np.max(np.abs(e - e[0])) < 5e-2 * scale
    # bounded, not drifting: the second half of the run is no worse than 1.5x the first
    half = len(e) // 2
    assert np.max(np.abs(e[half:] - e[0])) < 1.5 * np.max(np.abs(e[:half] - e[0]))


def test_rk4_is_fourth_order():
    """Halving h divides the error at t = 0.5 s by about 2^4 = 16 (measured ~20: h = 5 ms
    and 2.5 ms are still slightly pre-asymptotic); first order would give 2, second 4."""
    def final_q(h):
        sim = _sim("planar_2r", [0.2, 0.4])
        sim.advance(np.zeros(2), int(round(0.5 / h)), h)
        return sim.q

    reference = final_q(1e-4)
    e1 = np.linalg.norm(final_q(5e-3) - reference)
    e2 = np.linalg.norm(final_q(2.5e-3) - reference)
    assert 12.0 < e1 / e2 < 32.0


@pytest.mark.parametrize("viscous,coulomb", [(0.05, 0.0), (0.0, 0.1), (0.05, 0.1)])
def test_friction_dissipates(viscous, coulomb):
    sim = _sim("planar_2r", [0.0, 0.0], viscous=viscous, coulomb=coulomb)
    e = _energy_trace(sim, 4.0)
    assert np.all(np.diff(e) <= 1e-9)          # never gains energy
    assert e[-1] < e[0] - 0.05                 # and loses a visible amount (J)


def test_held_against_gravity_the_arm_stays():
    sim = _sim("panda", [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
    q0 = sim.q.copy()
    for _ in range(200):                       # 2 s, torque recomputed every 10 ms
        sim.advance(sim.model.gravity_torques(sim.q), 10, 1e-3)
    assert np.max(np.abs(sim.q - q0)) < 1e-9
