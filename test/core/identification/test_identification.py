"""Identification, excitation and payload estimation against a simulated plant.

The plant (``identification_plant``): the Panda with every link's mass and centre of mass
off by 10-30%, an unknown 1.2 kg payload on the flange and joint friction, integrated by
RK4 of the TRUE model's forward dynamics under a computed-torque + PD controller that
uses the URDF. The reference values are the true model's parameters mapped through the
base-parameter matrix (``B pi_true``), never anything the identification computed.
"""
from __future__ import annotations

import warnings

import numpy as np
import pinocchio as pin
import pytest

from manip_dynamics import InertiaWarning, InputError, RobotModel, robots
from manip_dynamics.core.identification import excitation as E
from manip_dynamics.core.identification import pipeline as I
from manip_dynamics.core.identification import payload as P
from manip_dynamics.core.identification import regressor as R

from .. import urdf_factory as uf
from .identification_plant import PAYLOAD, excitation, panda_models, simulate

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(scope="module")
def plant():
    """The recordings follow EXCITATION, a trajectory stored in a file, not the optimiser's
    output of this run: SLSQP over a finite-difference gradient of log cond(W) follows a
    path that depends on round-off (the BLAS kernel the CPU selects, any last-bit change in
    the model), so three iterations end at a different trajectory on another machine (cond
    62-67 instead of 66.8) whose identification errors differ (the 1% bounds below held on
    one and not on the other). The file holds what optimize_excitation(max_iter=3) gave
    once (cond 66.8); the optimiser itself is tested in
    test_excitation_rest_limits_and_file_round_trip."""
    xml, model, true = panda_models(seed=1)
    start = E.optimize_excitation(model, max_iter=0)
    trajectory = excitation()      # optimize_excitation(model, max_iter=3), fixed: see there
    base = R.base_parameters(model, friction=True)
    viscous_only = true.with_friction(coulomb=0.0)
    return dict(xml=xml, model=model, true=true, base=base, trajectory=trajectory,
                start=start,
                run=simulate(true, model, trajectory),
                run_viscous=simulate(viscous_only, model, trajectory),
                beta=base.beta(R.model_parameters(true, True)),
                beta_viscous=base.beta(R.model_parameters(viscous_only, True)))


def relative_errors(beta, beta_true):
    """|beta - beta_true| / |beta_true| over the non-zero true values, and max |beta| over
    the zero ones (Coulomb of a plant without it)."""
    nz = np.abs(beta_true) > 1e-9
    rel = np.abs(beta - beta_true)[nz] / np.abs(beta_true)[nz]
    return rel, float(np.abs(beta[~nz]).max()) if (~nz).any() else 0.0


# ------------------------------------------------------------------ excitation
def test_excitation_rest_limits_and_file_round_trip(plant, tmp_path):
    model = plant["model"]
    traj = E.optimize_excitation(model, max_iter=3, max_time=1e9)     # optimised here
    assert traj.condition_number < 0.5 * plant["start"].condition_number
    t = np.arange(0.0, traj.duration + 1e-9, 1e-3)
    q, qd, qdd = traj.sample(t)
    for k in (0, -1):                                   # rest at both ends
        assert np.abs(qd[k]).max() < 1e-12 and np.abs(qdd[k]).max() < 1e-9
    assert (q >= model.position_lower).all() and (q <= model.position_upper).all()
    assert (np.abs(qd) <= model.velocity_limits).all()
    # the series is self-consistent: qd = dq/dt, qdd = dqd/dt (central differences)
    assert np.abs(np.gradient(q, 1e-3, axis=0)[1:-1] - qd[1:-1]).max() < 1e-4
    assert np.abs(np.gradient(qd, 1e-3, axis=0)[1:-1] - qdd[1:-1]).max() < 1e-3
    path = tmp_path / "excitation.json"
    traj.save(path)
    back = E.FourierTrajectory.load(path)
    assert back.joint_names == model.joint_names and back.duration == traj.duration
    assert np.array_equal(np.stack(back.sample(t)), np.stack(traj.sample(t)))


# ------------------------------------------------------------------ filtering
def test_filter_recording_recovers_a_sinusoid_and_resamples():
    t = np.sort(np.random.default_rng(0).uniform(0, 4, 4000))      # jittered time stamps
    w = 2 * np.pi * 0.7
    q = np.stack([np.sin(w * t), np.cos(2 * w * t)], axis=1)
    s = I.filter_recording(t, q, None, 3 * q, cutoff=10.0)
    ref = np.stack([-w ** 2 * np.sin(w * s.t), -(2 * w) ** 2 * np.cos(2 * w * s.t)], axis=1)
    assert np.abs(np.diff(s.t) - np.diff(s.t)[0]).max() < 1e-9          # uniform grid
    assert np.abs(s.qdd - ref).max() < 2e-3 * np.abs(ref).max()
    assert np.abs(s.tau - 3 * s.q).max() < 1e-9                   # the same filter on tau


def test_filter_recording_errors():
    t = np.arange(100) * 1e-3
    q = np.zeros((100, 2))
    with pytest.raises(InputError, match="strictly increasing"):
        I.filter_recording(t[::-1], q, None, q)
    bad = q.copy()
    bad[7, 1] = np.nan
    with pytest.raises(InputError, match=r"tau\[7, 1\] is nan"):
        I.filter_recording(t, q, None, bad)
    with pytest.raises(InputError, match="cutoff"):
        I.filter_recording(t, q, None, q, cutoff=600.0)


# ------------------------------------------------------------------ identification
def test_min_speed_removes_the_stick_slip_bias(plant):
    """Coulomb plant, noise-free: the equations at |qd| < 0.05 rad/s (where the light wrist
    joints stick and slip) bias the friction and small inertial terms; without them the
    median base-parameter error falls by more than 10x."""
    t, q, qd, tau = plant["run"]
    fit, _ = I.filter_recording(t, q, qd, tau).split(0.75)
    errors = [np.median(relative_errors(I.identify(plant["model"], fit, friction=True,
                                                   base=plant["base"], min_speed=v).beta,
                                        plant["beta"])[0]) for v in (0.0, 0.05)]
    assert errors[1] < errors[0] / 10 and errors[1] < 0.002, errors


def test_noise_free_base_parameters_within_one_percent(plant):
    """Viscous-friction plant (Coulomb friction under explicit integration chatters at
    velocity reversals; see docs/identification.md). Every non-zero base parameter within
    1%, the Coulomb coefficients the plant does not have ~0."""
    t, q, qd, tau = plant["run_viscous"]
    fit, _ = I.filter_recording(t, q, qd, tau).split(0.75)
    result = I.identify(plant["model"], fit, friction=True, base=plant["base"])
    rel, zero = relative_errors(result.beta, plant["beta_viscous"])
    assert rel.max() < 0.01, (rel.max(), np.argmax(rel))
    assert zero < 1e-3


def test_exact_accelerations_give_exact_parameters(plant):
    """At the plant's states with exact accelerations and torques (no filter) the
    identification is exact to 1e-8: the regressor and the least squares approximate
    nothing; every error in the other tests comes from the data."""
    t, q, qd, tau = plant["run"]
    t, q, qd, tau = t[1::20], q[1::20], qd[1::20], tau[1::20]
    qdd = plant["true"].forward_dynamics(q, qd, tau, friction=True)
    tau = plant["true"].inverse_dynamics(q, qd, qdd, friction=True)
    result = I.identify(plant["model"], I.Samples(t, q, qd, qdd, tau), friction=True,
                        base=plant["base"])
    rel, _ = relative_errors(result.beta, plant["beta"])
    assert rel.max() < 1e-8


@pytest.fixture(scope="module")
def noisy(plant):
    """1% torque noise (per joint, 1% of the joint's RMS torque) on the Coulomb plant."""
    t, q, qd, tau = plant["run"]
    sigma = 0.01 * np.sqrt(np.mean(tau ** 2, axis=0))
    tau = tau + np.random.default_rng(4).normal(size=tau.shape) * sigma
    fit, held = I.filter_recording(t, q, qd, tau).split(0.75)
    return fit, held, sigma


def test_noisy_identification_improves_held_out_torques(plant, noisy):
    fit, held, _ = noisy
    model = plant["model"]
    result = I.identify(model, fit, friction=True, base=plant["base"], min_speed=0.05)
    assert np.isfinite(result.condition_number) and result.condition_number > 1
    assert (result.beta_std > 0).all() and result.covariance.shape == (result.base.count,) * 2
    before = I.rms_error(model.inverse_dynamics(held.q, held.qd, held.qdd, friction=True),
                         held.tau)
    after = I.rms_error(I.predicted_torques(model, result.pi, held, True), held.tau)
    assert (after < before / 5).all(), (before, after)
    # the weighted estimate agrees with the truth within its own uncertainty (measured: all
    # within 4 sigma with min_speed, 84% without: Coulomb stick-slip at reversals)
    z = np.abs(result.beta - plant["beta"]) / result.beta_std
    assert np.mean(z < 4) > 0.95, np.sort(z)
    rel, _ = relative_errors(result.beta, plant["beta"])
    assert np.median(rel) < 0.01, np.median(rel)


def test_consistent_fit_is_a_real_arm_and_predicts_as_well(plant, noisy):
    fit, held, _ = noisy
    model, xml = plant["model"], plant["xml"]
    free = I.identify(model, fit, friction=True, base=plant["base"], min_speed=0.05)
    result = I.identify(model, fit, friction=True, base=plant["base"], consistent=True,
                        min_speed=0.05)
    nb = len(model.body_links)
    bodies = result.pi[:10 * nb].reshape(nb, 10)
    assert R.physically_consistent(bodies).all()     # P >= 0 (some on the boundary: flat)
    assert (result.pi[10 * nb:] >= 0).all()                       # friction
    out, _ = I.identified_urdf(xml, model, result.pi, friction=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        identified = RobotModel.from_urdf_string(out)
    assert not [w for w in caught if issubclass(w.category, InertiaWarning)]
    pin.buildModelFromXML(out)                                    # an independent parser
    after = I.rms_error(identified.inverse_dynamics(held.q, held.qd, held.qdd, friction=True),
                        held.tau)
    after_free = I.rms_error(I.predicted_torques(model, free.pi, held, True), held.tau)
    before = I.rms_error(model.inverse_dynamics(held.q, held.qd, held.qdd, friction=True),
                         held.tau)
    # consistency costs some fit where the data (filter bias, stick-slip) lean toward an
    # unphysical point -- measured up to 1.36x the unconstrained error per joint with the
    # semidefinite fit (1.8x with the earlier Levenberg-Marquardt fit) -- but the result is
    # still far better than the URDF
    assert result.solver_status == "optimal" and abs(result.optimality_gap) < 1e-8
    assert (after <= 1.5 * after_free).all(), (after, after_free)
    assert (after < before / 5).all(), (after, before)


def test_identified_urdf_round_trip_with_lumped_links_and_mimic():
    """Writer: parameters written into the URDF come back exactly from the parser, also for a
    body made of several links (a massive link on a fixed joint) and a mimic body."""
    xml = uf.random_tree(1)
    model = RobotModel.from_urdf_string(xml)
    rng = np.random.default_rng(3)
    other = RobotModel.from_urdf_string(uf.random_tree(7))       # same structure, new numbers
    pi = R.model_parameters(other.with_friction(viscous=rng.uniform(0, 1, model.n),
                                                coulomb=rng.uniform(0, 1, model.n)), True)
    out, notes = I.identified_urdf(xml, model, pi, friction=True)
    back = RobotModel.from_urdf_string(out)
    assert back.body_links == model.body_links and back.frame_names == model.frame_names
    assert np.allclose(R.model_parameters(back, True), pi, rtol=1e-9, atol=1e-11)


# ------------------------------------------------------------------ payload
def test_payload_from_static_poses_on_the_panda():
    """Mass within 2% and CoM within 5 mm: 8 static poses, each held 0.5 s at 1 kHz with 1%
    torque noise per sample (the estimate uses the pose averages)."""
    model = RobotModel.from_urdf_file(robots.path("panda"))
    frame, m, c, inertia = PAYLOAD
    loaded = model.with_payload(frame, m, c, inertia)
    rng = np.random.default_rng(11)
    q = R.random_states(model, 8, rng)[0]
    tau = loaded.gravity_torques(q)
    sigma = 0.01 * np.sqrt(np.mean(tau ** 2, axis=0))
    held = tau[:, None, :] + rng.normal(size=(8, 500, model.n)) * sigma
    est = P.estimate_payload(model, frame, q, held.mean(axis=1))
    assert abs(est.mass - m) < 0.02 * m and np.linalg.norm(est.com - c) < 0.005
    assert est.inertia is None and est.mass_std < 0.02 * m
    exact = P.estimate_payload(model, frame, q, tau)             # noise-free: exact
    assert abs(exact.mass - m) < 1e-9 and np.abs(exact.com - c).max() < 1e-9


def test_payload_with_inertia_from_a_moving_recording(plant):
    model = plant["model"]
    frame, m, c, inertia = PAYLOAD
    loaded = model.with_payload(frame, m, c, inertia)
    t = np.arange(0.0, 5.0, 1e-3)
    q, qd, qdd = plant["trajectory"].sample(t)
    tau = loaded.inverse_dynamics(q, qd, qdd)
    est = P.estimate_payload(model, frame, q, tau, qd, qdd)
    assert est.inertia is not None
    assert abs(est.mass - m) < 1e-8 and np.abs(est.inertia - inertia).max() < 1e-8
    rng = np.random.default_rng(2)
    noisy = tau + rng.normal(size=tau.shape) * 0.01 * np.sqrt(np.mean(tau ** 2, axis=0))
    est = P.estimate_payload(model, frame, q, noisy, qd, qdd)
    assert abs(est.mass - m) < 0.02 * m and np.linalg.norm(est.com - c) < 0.005


def test_payload_needs_two_orientations():
    model = RobotModel.from_urdf_file(robots.path("panda"))
    q = np.zeros((3, model.n))
    q[:, 0] = [0.0, 0.5, 1.0]           # only the vertical first joint moves
    tau = model.with_payload("panda_link8", 1.0, (0.0, 0.0, 0.05)).gravity_torques(q)
    with pytest.raises(InputError, match="do not determine"):
        P.estimate_payload(model, "panda_link8", q, tau)


def test_a_recording_that_excites_too_little_is_refused(plant):
    """Only joint 1 moves: most base parameters are invisible; the error names one."""
    model = plant["model"]
    t = np.arange(0.0, 4.0, 1e-3)
    q = np.zeros((len(t), model.n))
    q[:, 3] = -1.5
    q[:, 0] = 0.5 * np.sin(2 * np.pi * 0.5 * t)
    tau = model.inverse_dynamics(q, np.gradient(q, t, axis=0),
                                 np.gradient(np.gradient(q, t, axis=0), t, axis=0))
    samples = I.filter_recording(t, q, None, tau)
    with pytest.raises(InputError, match="does not excite every base parameter"):
        I.identify(model, samples, friction=True, base=plant["base"])
