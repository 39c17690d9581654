"""Drive gains and a payload from a run without and a run with a known load
(manip_dynamics/core/identification/drive_gains.py, docs/identification.md 'Drive gains').

The synthetic pair is Pinocchio's: a UR5 (example-robot-data) with rotor inertias (its
``model.armature``), friction (viscous, Coulomb, offset) and, in the loaded run, a load
added to the last body's inertia; torques from ``pin.rnea`` at exact states of a Fourier
path, divided by the true gains: the currents. No code under test produces them."""
from __future__ import annotations

import numpy as np
import pytest

from manip_dynamics import RobotModel
from manip_dynamics.core.errors import InputError
from manip_dynamics.core.identification import drive_gains as D
from manip_dynamics.core.identification.pipeline import Samples

from ..dynamics.test_pinocchio import UR5

pin = pytest.importorskip("pinocchio")    # requirements.txt installs it; import as the others do

K_TRUE = np.array([9.1, 11.3, 8.7, 6.2, 5.9, 6.4])             # N m/A
ARMATURE = np.array([0.9, 1.7, 0.6, 0.12, 0.11, 0.1])          # kg m^2
VISCOUS = np.array([3.0, 2.5, 1.5, 0.4, 0.3, 0.3])
COULOMB = np.array([4.0, 3.0, 2.0, 0.8, 0.7, 0.6])
OFFSET = np.array([0.3, -0.5, 0.2, 0.05, -0.04, 0.03])
MASS, COM = 2.3, np.array([0.012, -0.021, 0.085])               # the load, wrist_3_link frame
DT = 0.01


def load_inertia():
    """The load's pin.Inertia about its com (a real body: moments 0.004-0.009 kg m^2)."""
    R = pin.rpy.rpyToMatrix(0.3, -0.2, 0.5)
    return pin.Inertia(MASS, COM, R @ np.diag([0.004, 0.006, 0.009]) @ R.T)


def path(count, seed):
    """q, qd, qdd (count, 6) of a 4-harmonic Fourier path at 0.1 Hz, every 10 ms."""
    rng = np.random.default_rng(seed)
    t = np.arange(count) * DT
    w = 2 * np.pi * 0.1 * np.arange(1, 5)
    a, b = rng.normal(0, 0.35, (2, 6, 4)) / np.arange(1, 5)
    arg = t[:, None, None] * w
    q = (a * np.sin(arg) + b * np.cos(arg)).sum(-1)
    qd = (a * w * np.cos(arg) - b * w * np.sin(arg)).sum(-1)
    qdd = (-(a * np.sin(arg) + b * np.cos(arg)) * w ** 2).sum(-1)
    return t, q, qd, qdd


def rnea(q, qd, qdd, load):
    """Pinocchio's joint torques (count, 6) of the UR5 with ARMATURE, with the load on its
    last body or not."""
    model = pin.buildModelFromUrdf(UR5)
    model.armature[:] = ARMATURE
    if load:
        model.inertias[model.njoints - 1] = model.inertias[model.njoints - 1] + load_inertia()
    data = model.createData()
    return np.array([pin.rnea(model, data, *x) for x in zip(q, qd, qdd)])


def currents(q, qd, qdd, loaded, sign=1.0):
    """Motor currents (count, 6) A: (rnea + friction [+ sign x the load's torque]) / K_TRUE."""
    tau = rnea(q, qd, qdd, False) + VISCOUS * qd + COULOMB * np.sign(qd) + OFFSET
    if loaded:
        tau = tau + sign * (rnea(q, qd, qdd, True) - rnea(q, qd, qdd, False))
    return tau / K_TRUE


def pair(shift=37, count=1200, seed=3, loaded_seed=None, sign=1.0):
    """(model, unloaded Samples, loaded Samples): the loaded run is the same path started
    ``shift`` samples earlier (its own window and clock) unless ``loaded_seed`` is given."""
    model = RobotModel.from_urdf_file(UR5)
    t, q, qd, qdd = path(count + 2 * shift, seed)
    u = slice(shift, shift + count)
    unloaded = Samples(t[u] + 12.0, q[u], qd[u], qdd[u], currents(q[u], qd[u], qdd[u], False))
    if loaded_seed is not None:
        t, q, qd, qdd = path(count + 2 * shift, loaded_seed)
    loaded = Samples(t + 507.3, q, qd, qdd, currents(q, qd, qdd, True, sign))
    return model, unloaded, loaded


@pytest.fixture(scope="module")
def ur5_pair():
    return pair()


def test_noise_free_pair_gives_the_gains_and_the_load_exactly(ur5_pair):
    """Gains, the load's centre of mass and inertia (from the difference of the currents),
    and then the load (mass included), the rotor inertias and the friction (from the stacked
    runs with those gains) equal Pinocchio's plant to 1e-9."""
    model, unloaded, loaded = ur5_pair
    fit = D.estimate_drive_gains(model, unloaded, loaded, "wrist_3_link", MASS)
    truth = load_inertia().toDynamicParameters()        # [m, m c, I_O] Pinocchio's order
    assert np.abs(fit.gain / K_TRUE - 1).max() < 1e-9, fit.gain
    assert np.abs(fit.payload - truth).max() < 1e-9 * np.abs(truth).max(), fit.payload - truth
    assert (fit.gain_std < 1e-6 * fit.gain).all()       # noise-free: nothing left unexplained
    back = D.estimate_payload_from_pair(model, unloaded, loaded, "wrist_3_link", fit.gain)
    assert abs(back.payload_mass - MASS) < 1e-9 * MASS
    assert np.abs(back.payload_com - COM).max() < 1e-9
    assert np.abs(back.payload - truth).max() < 1e-8 * np.abs(truth).max()
    for kind, value in (("armature", ARMATURE), ("viscous", VISCOUS), ("coulomb", COULOMB),
                        ("offset", OFFSET)):
        got = back.per_joint[kind]
        kept = ~np.isnan(got)
        assert np.abs(got[kept] - value[kept]).max() < 1e-8, (kind, got, value)
    # joint 1's rotor turns about the first link's own axis: only their sum shows
    assert np.isnan(back.per_joint["armature"][0]) and kept.all()


def test_a_load_run_without_its_mass_is_refused(ur5_pair):
    model, unloaded, loaded = ur5_pair
    for mass, text in ((None, "the load's mass"), (0.0, "must be > 0"), (-1.0, "must be > 0")):
        with pytest.raises(InputError, match=text):
            D.estimate_drive_gains(model, unloaded, loaded, "wrist_3_link", mass)
    with pytest.raises(InputError, match="not a link"):
        D.estimate_drive_gains(model, unloaded, loaded, "no_such_link", MASS)


def test_runs_on_different_paths_are_refused():
    model, unloaded, loaded = pair(count=600, loaded_seed=4)
    with pytest.raises(InputError, match="does not follow the unloaded run's path"):
        D.estimate_drive_gains(model, unloaded, loaded, "wrist_3_link", MASS)


def test_a_gain_that_is_not_positive_is_refused():
    """A 'load' that lightens the arm (the loaded currents: the unloaded ones minus the load's
    torque) gives negative gains: refused, naming the joint, not returned."""
    model, unloaded, loaded = pair(count=600, sign=-1.0)
    with pytest.raises(InputError, match=r"drive gain of joint 'shoulder_pan_joint' is -9\.1.*"
                                         r"not > 0"):
        D.estimate_drive_gains(model, unloaded, loaded, "wrist_3_link", MASS)
