"""The joint-torque regressor and the base parameters against independent references.

* Pinocchio's ``computeJointTorqueRegressor`` (column for column, bodies mapped by link
  name through Pinocchio's BODY frames, mimic reduced by ``G^T Y_full``) and Pinocchio's
  ``Inertia.toDynamicParameters`` for the parameter vector;
* our own RNEA: ``Y(q, qd, qdd) pi_URDF == inverse_dynamics`` (friction, payloads too);
* closed forms of the planar 2R: the base-parameter count (6 with gravity in the plane,
  4 with gravity along the axes) and the null direction (m2, Izz1, mcx1) that trades link
  2's mass against link 1's first and second moments;
* SVD rank of the stacked regressor (a second algorithm for the count of QR).
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from manip_dynamics import InputError, RobotModel, robots
from manip_dynamics.core.identification import regressor as R

from .. import urdf_factory as uf
from ..dynamics.test_pinocchio import ROBOTS, PinocchioReference, assert_close

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(scope="module", params=list(ROBOTS))
def robot(request):
    xml = ROBOTS[request.param][0]()
    return request.param, RobotModel.from_urdf_string(xml), PinocchioReference(xml)


def pinocchio_columns(ref, model):
    """Columns of Pinocchio's regressor in our body order (body link -> its parent joint)."""
    cols = []
    for link in model.body_links:
        jid = ref.model.frames[ref.model.getFrameId(link, pin.BODY)].parentJoint
        cols.extend(range(10 * (jid - 1), 10 * jid))
    return cols


def test_regressor_equals_pinocchio(robot):
    name, model, ref = robot
    cols = pinocchio_columns(ref, model)
    q, qd, qdd = ref.states(8, seed=3)
    Y = R.joint_torque_regressor(model, q, qd, qdd)
    assert Y.shape == (8, model.n, 10 * len(model.body_links))
    for k in range(8):
        Yp = pin.computeJointTorqueRegressor(ref.model, ref.data, ref.q_full(q[k]),
                                             ref.G @ qd[k], ref.G @ qdd[k])
        assert_close(Y[k], ref.G.T @ Yp[:, cols], what=f"{name} state {k}")
        assert_close(R.joint_torque_regressor(model, q[k], qd[k], qdd[k]), Y[k])


def test_parameters_equal_pinocchio_dynamic_parameters(robot):
    name, model, ref = robot
    expected = np.concatenate([
        ref.model.inertias[ref.model.frames[ref.model.getFrameId(link, pin.BODY)].parentJoint]
        .toDynamicParameters() for link in model.body_links])
    assert_close(R.model_parameters(model), expected, what=name)


def test_regressor_times_urdf_parameters_is_inverse_dynamics(robot):
    name, model, ref = robot
    rng = np.random.default_rng(5)
    model = model.with_friction(viscous=rng.uniform(0.1, 1, model.n),
                                coulomb=rng.uniform(0.1, 1, model.n))
    q, qd, qdd = ref.states(10, seed=4)
    tau = model.inverse_dynamics(q, qd, qdd, friction=True)
    Y = R.joint_torque_regressor(model, q, qd, qdd, friction=True)
    assert_close(Y @ R.model_parameters(model, friction=True), tau, what=name)
    names = R.parameter_names(model, friction=True)
    assert len(names) == Y.shape[-1] and names[-1] == f"coulomb.{model.joint_names[-1]}"


def test_frame_regressor_is_the_payload_torque():
    """with_payload(frame, m, c, I) adds exactly frame_regressor @ pi_payload to tau."""
    model = RobotModel.from_urdf_file(robots.path("panda"))
    rng = np.random.default_rng(0)
    q, qd, qdd = R.random_states(model, 12, rng)
    m, c, I = 1.7, np.array([0.03, -0.02, 0.09]), np.diag([0.004, 0.006, 0.003])
    loaded = model.with_payload("panda_link8", m, c, I)
    expected = loaded.inverse_dynamics(q, qd, qdd) - model.inverse_dynamics(q, qd, qdd)
    Yf = R.frame_regressor(model, q, qd, qdd, "panda_link8")
    assert_close(Yf @ R.inertial_parameters(m, c, I), expected)
    # and the payload shows up in model_parameters of the loaded model (lumped into link7)
    Y = R.joint_torque_regressor(model, q, qd, qdd)
    assert_close(Y @ R.model_parameters(loaded), loaded.inverse_dynamics(q, qd, qdd))


def test_regressor_with_other_gravity():
    model = RobotModel.from_urdf_file(robots.path("panda")).with_gravity((1.0, -2.0, -9.0))
    q, qd, qdd = R.random_states(model, 5, np.random.default_rng(1))
    assert_close(R.joint_torque_regressor(model, q, qd, qdd) @ R.model_parameters(model),
                 model.inverse_dynamics(q, qd, qdd))


# ------------------------------------------------------------------ parameter conversions
def test_parameter_round_trips_and_parallel_axis():
    rng = np.random.default_rng(2)
    m, c, I = 2.0, np.array([0.1, -0.2, 0.3]), uf.random_inertia(rng)
    pi = R.inertial_parameters(m, c, I)
    # parallel axis by hand: I_O = I_c + m (|c|^2 1 - c c^T)
    I_O = I + m * (c @ c * np.eye(3) - np.outer(c, c))
    assert np.allclose(pi, [m, *(m * c), I_O[0, 0], I_O[0, 1], I_O[1, 1], I_O[0, 2],
                            I_O[1, 2], I_O[2, 2]], atol=1e-15)
    m2, c2, I2 = R.inertia_from_parameters(pi)
    assert np.isclose(m2, m) and np.allclose(c2, c) and np.allclose(I2, I)
    assert np.allclose(R.parameters_from_pseudo_inertia(R.pseudo_inertia(pi)), pi)
    # pseudo-inertia is the second moment int [r; 1][r; 1]^T dm: check on 4 point masses
    pts, ms = rng.normal(size=(4, 3)), rng.uniform(0.5, 1.0, 4)
    P = sum(mi * np.outer(np.append(r, 1), np.append(r, 1)) for mi, r in zip(ms, pts))
    I_pts = sum(mi * (r @ r * np.eye(3) - np.outer(r, r)) for mi, r in zip(ms, pts))
    pi_pts = np.concatenate([[ms.sum()], (ms[:, None] * pts).sum(0),
                             [I_pts[i, j] for i, j in R._SYM]])
    assert np.allclose(R.pseudo_inertia(pi_pts), P)


def test_physical_consistency_test():
    box = R.inertial_parameters(1.0, np.zeros(3), np.diag([0.02, 0.03, 0.04]))
    rod = R.inertial_parameters(1.0, np.zeros(3), np.diag([0.0, 0.1, 0.1]))   # limit case
    bad = R.inertial_parameters(1.0, np.zeros(3), np.diag([0.01, 0.01, 0.05]))  # 0.05 > 0.02
    neg = R.inertial_parameters(-1.0, np.zeros(3), np.diag([0.02, 0.03, 0.04]))
    assert R.physically_consistent(np.stack([box, rod, bad, neg])).tolist() == [
        True, True, False, False]
    assert np.linalg.eigvalsh(R.pseudo_inertia(box))[0] > 0


# ------------------------------------------------------------------ base parameters
def _stack(model, seed, count=40, friction=False):
    q, qd, qdd = R.random_states(model, count, np.random.default_rng(seed))
    return R.joint_torque_regressor(model, q, qd, qdd, friction)


@pytest.mark.parametrize("friction", [False, True])
def test_base_parameters_reproduce_torques_and_match_svd_rank(robot, friction):
    name, model, _ = robot
    base = R.base_parameters(model, friction)
    Y = _stack(model, seed=99, friction=friction)        # states the QR never saw
    W = Y.reshape(-1, Y.shape[-1])
    assert base.count == np.linalg.matrix_rank(W), name     # SVD, numpy's tolerance
    assert base.r_kept > 1e-6 and base.r_dropped < 1e-12, (base.r_kept, base.r_dropped)
    pi = np.random.default_rng(7).normal(size=W.shape[1])
    assert_close(base.regressor(Y) @ base.beta(pi), Y @ pi, tol=1e-9, what=name)
    assert np.allclose(base.matrix @ pi, base.beta(pi))
    assert np.linalg.matrix_rank(base.regressor(W)) == base.count


def test_base_parameters_planar_2r_closed_form():
    l1 = 0.7
    xml = uf.planar_2r(2.0, 1.5, l1, 0.5, (0.3, 0.05), (0.2, -0.04),
                       uf.planar_inertia(0.05), uf.planar_inertia(0.02))
    vertical = RobotModel.from_urdf_string(xml, gravity=(0.0, -9.81, 0.0))
    horizontal = RobotModel.from_urdf_string(xml, gravity=(0.0, 0.0, -9.81))
    # ZZ1R, MX1R, MY1R, ZZ2, MX2, MY2 with gravity in the plane; no link-1 first moments
    # (nor m2 l1) without it
    assert R.base_parameters(vertical).count == 6
    assert R.base_parameters(horizontal).count == 4
    # null direction: +1 kg on link 2 (its com at joint 2) is invisible if link 1 loses
    # m2 l1 of first moment along x and m2 l1^2 of Izz (its origin is joint 1)
    names = R.parameter_names(vertical)
    v = np.zeros(len(names))
    v[names.index("link2.m")] = 1.0
    v[names.index("link1.mcx")] = -l1
    v[names.index("link1.Izz")] = -l1 ** 2
    assert np.allclose(R.base_parameters(vertical).matrix @ v, 0.0, atol=1e-12)
    Y = _stack(vertical, seed=3)
    assert np.abs(Y @ v).max() < 1e-12


def test_regressor_input_errors():
    model = RobotModel.from_urdf_file(robots.path("panda"))
    z = np.zeros(model.n)
    with pytest.raises(InputError, match="qd must have shape"):
        R.joint_torque_regressor(model, z, np.zeros(3), z)
    bad = z.copy()
    bad[2] = np.nan
    with pytest.raises(InputError, match=r"qdd\[2\] \(joint 'panda_joint3'\)"):
        R.joint_torque_regressor(model, z, z, bad)
    with pytest.raises(InputError, match="qdd must have the shape of q"):
        R.joint_torque_regressor(model, np.zeros((2, model.n)), np.zeros((2, model.n)), z)
