"""Armature and the friction model identified (issue 34 items 3 and 4): regressor columns
qdd_j (armature), qd_j, s(qd_j), max(s, 0), min(s, 0), 1 (friction; s = sign or tanh(qd /
width)), in the least squares and the consistent fit.

Truth: a physically consistent perturbation of the UR5's URDF (consistent_truth.perturbed),
torques from Pinocchio's rnea with ``model.armature`` set, plus the friction written out
here (never from the code under test). Noise-free: the fits reach the truth.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from manip_dynamics import InputError, RobotModel
from manip_dynamics.core.identification import pipeline as I
from manip_dynamics.core.identification import regressor as R

from ..dynamics.test_pinocchio import PinocchioReference
from .consistent_truth import arm_path, perturbed

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

UR5 = "ur_description/urdf/ur5_robot.urdf"


def friction_written_out(qd, viscous, fc_pos, fc_neg, offset, width):
    """tau_fr = Fv qd + Fc+ s [qd > 0] + Fc- s [qd < 0] + F0, s = tanh(qd / w) or sign."""
    s = np.tanh(qd / width) if width is not None else np.sign(qd)
    return viscous * qd + np.where(qd > 0, fc_pos, 0.0) * s + np.where(qd < 0, fc_neg, 0.0) * s \
        + offset


@pytest.fixture(scope="module")
def truth():
    """(model: the URDF's, true model xml, armature, Pinocchio reference with it, states)."""
    with open(arm_path(UR5), encoding="utf-8") as f:
        xml = f.read()
    rng = np.random.default_rng(7)
    true_xml = perturbed(xml, rng)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = RobotModel.from_urdf_string(xml)
    armature = rng.uniform(0.05, 0.5, model.n)
    ref = PinocchioReference(true_xml)
    ref.model.armature = armature.copy()             # G is the identity: q order = v order
    q, qd, qdd = ref.states(300, seed=3)
    tau_rigid = np.array([ref.rnea(*s) for s in zip(q, qd, qdd)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        true_model = RobotModel.from_urdf_string(true_xml)
    return model, true_model, armature, (q, qd, qdd, tau_rigid), rng


def samples(states, friction_tau):
    q, qd, qdd, tau = states
    return I.Samples(np.arange(len(q)) * 1e-3, q, qd, qdd, tau + friction_tau)


def test_pinocchio_armature_is_on_the_diagonal(truth):
    """The reference itself: Pinocchio's rnea with model.armature adds armature * qdd."""
    model, true_model, armature, (q, qd, qdd, tau), _ = truth
    own = true_model.inverse_dynamics(q[:5], qd[:5], qdd[:5])
    assert np.allclose(tau[:5] - own, armature * qdd[:5], rtol=0, atol=1e-9)


@pytest.mark.parametrize("consistent", [False, True], ids=["least_squares", "consistent"])
def test_armature_is_recovered_from_noise_free_data(truth, consistent):
    """Joints 3-6 of the UR5: their armature to 1e-9 (least squares; consistent fit: the
    solver's tolerance, asserted 1e-6). Joints 1 (vertical) and 2 (perpendicular to it):
    their rotor is one inertia with their link's moment about the axis, reported as
    inseparable; the base parameters (which hold the sum) to 1e-9 and the torques of
    held-out states to 1e-9 of their size all the same."""
    model, true_model, armature, states, rng = truth
    viscous, coulomb = rng.uniform(0.5, 2, model.n), rng.uniform(0.5, 3, model.n)
    fr = friction_written_out(states[1], viscous, coulomb, coulomb, 0.0, None)
    fit, held = samples(states, fr).split(0.8)
    result = I.identify(model, fit, friction=True, consistent=consistent, armature=True)
    assert result.armature
    assert result.inseparable_armature == ("shoulder_pan_joint", "shoulder_lift_joint")
    values = R.term_values(model, result.pi, True, True)
    tol = 1e-6 if consistent else 1e-9
    assert np.allclose(values["armature"][2:], armature[2:], rtol=tol, atol=0), \
        values["armature"] - armature
    pi_true = np.concatenate([R.model_parameters(true_model), armature, viscous, coulomb])
    assert np.allclose(result.base.beta(result.pi), result.base.beta(pi_true),
                       rtol=0, atol=tol * np.abs(result.base.beta(pi_true)).max())
    assert np.allclose(values["viscous"], viscous, rtol=tol, atol=0)
    pred = I.predicted_torques(model, result.pi, held, True, armature=True)
    assert np.linalg.norm(pred - held.tau) < tol * np.linalg.norm(held.tau)
    if consistent:
        assert result.solver_status == "optimal"
        assert (values["armature"] >= 0).all()


def test_without_armature_columns_the_rotor_is_not_explained(truth):
    """The same data without the armature columns leave a residual (the rotor torque the
    rigid bodies cannot hold): the columns are what recovers it."""
    model, _, armature, states, _ = truth
    result = I.identify(model, samples(states, 0.0), friction=False)
    pred = I.predicted_torques(model, result.pi, samples(states, 0.0), False)
    rel = np.linalg.norm(pred - states[3]) / np.linalg.norm(states[3])
    assert rel > 1e-3


@pytest.mark.parametrize("kind, width, consistent", [
    ("asymmetric", None, False), ("offset", None, False), ("asymmetric+offset", 0.3, False),
    ("symmetric", 0.2, False), ("offset", None, True), ("asymmetric+offset", 0.3, True)])
def test_friction_model_is_recovered_from_noise_free_data(truth, kind, width, consistent):
    """Each friction model's terms to 1e-9 (least squares) / 1e-6 (consistent fit), offsets
    negative on some joints (the consistent fit bounds only the armature, viscous and
    Coulomb terms), widths given to the model."""
    model, true_model, armature, states, rng = truth
    terms = R.FRICTION_MODELS[kind]
    viscous = rng.uniform(0.5, 2, model.n)
    fc_pos = rng.uniform(0.5, 3, model.n)
    fc_neg = rng.uniform(0.5, 3, model.n) if "coulomb_negative" in terms else fc_pos
    offset = rng.uniform(-1, 1, model.n) if "offset" in terms else np.zeros(model.n)
    offset[:2] = (-0.75, -0.25) if "offset" in terms else 0.0
    fr = friction_written_out(states[1], viscous, fc_pos, fc_neg, offset, width)
    fit_model = model if width is None else model.with_friction(width=width)
    result = I.identify(fit_model, samples(states, fr), friction=kind, consistent=consistent,
                        armature=True)
    values = R.term_values(model, result.pi, kind, True)
    tol = 1e-6 if consistent else 1e-9
    expect = {"viscous": viscous, "coulomb": fc_pos, "coulomb_positive": fc_pos,
              "coulomb_negative": fc_neg, "offset": offset}
    for term in terms:
        assert np.allclose(values[term], expect[term], rtol=0, atol=tol * 3), term
    # what goes to the side file gives the same friction torques as the truth
    side_model, notes = I.identified_model(fit_model, result.pi, kind, True)
    assert not notes
    qd = np.concatenate([states[1][:20], np.zeros((1, model.n))])
    assert np.allclose(side_model.friction_torques(qd),
                       friction_written_out(qd, viscous, fc_pos, fc_neg, offset, width),
                       rtol=0, atol=tol * 30)


def test_filtered_coulomb_columns_need_the_model_s_width(truth):
    model, _, _, (q, qd, qdd, tau), _ = truth
    t = np.arange(len(q)) * 1e-2
    filtered = I.filter_recording(t, q, qd, tau, cutoff=5.0, friction_width=0.1)
    assert np.all(filtered.friction_width == 0.1)
    with pytest.raises(InputError, match=r"filtered with friction_width \[0.1, .*the "
                                         r"model's is \[0.0"):
        I.regressor_rows(model, filtered, "asymmetric")
    with pytest.raises(InputError, match=r"friction_width\[2\] = -1.0 must be >= 0"):
        I.filter_recording(t, q, qd, tau, cutoff=5.0, friction_width=[0, 0, -1, 0, 0, 0])
    with pytest.raises(InputError, match="friction must be a bool or one of symmetric"):
        I.identify(model, filtered, friction="viscous-only")


def test_the_filtered_coulomb_columns_split_by_direction(truth):
    """coulomb_positive + (coulomb - coulomb_positive) is the filtered s(qd): the negative
    direction's column is min(s, 0) filtered (filtering is linear), checked against
    scipy's filter of min(sign, 0) directly."""
    import scipy.signal
    model, _, _, (q, qd, qdd, tau), _ = truth
    t = np.arange(len(q)) * 1e-2
    f = I.filter_recording(t, q, qd, tau, cutoff=5.0, trim=0, decimate=1)
    sos = scipy.signal.butter(4, 5.0 / 50.0, output="sos")
    neg = scipy.signal.sosfiltfilt(sos, np.minimum(np.sign(f.qd), 0.0), axis=0)
    Y = I.regressor_rows(model, f, "asymmetric")
    start = 10 * len(model.body_links) + 2 * model.n
    assert np.allclose(Y[:, np.arange(6), start + np.arange(6)], neg, rtol=0, atol=1e-12)
