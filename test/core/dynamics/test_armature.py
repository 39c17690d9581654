"""Armature (the rotors' reflected inertia, issue 34 item 3) against Pinocchio's ``model.armature``.

``RobotModel.with_armature(a)`` makes M(q) = M_rigid(q) + diag(a). Pinocchio adds its
``model.armature`` (one entry per velocity index) the same way in crba, rnea, aba and the
kinetic energy, so every output that uses M must equal Pinocchio's with the armature set,
to 1e-10 relative to max(1, |Pinocchio's value|):

    M (one state, a batch, compute_all's bundle on its one-state and batch paths),
    inverse dynamics (RNEA), forward dynamics (pin.aba; through the reduced M for the Panda,
    whose finger joint mimics the other), A = J M^-1 J^T, Lambda, operational-space mu and p,
    effective masses (at the frame origin and at a point), kinetic energy, momentum p = M qd
    (C^T qd unchanged: the armature is constant), the momentum observer's p.

Robots: the Panda (a mimic finger: armature goes to the coordinate's own joint, not to the
mimic joint), a UR5 (example-robot-data, found through Pinocchio's install), and the real
UR10e of Mamedov et al. 2020 with the authors' identified pi_drvs (``shared/data``, beside
or above the repository; skipped with the reason where absent).
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from shared_data import missing_reason, shared_data

from manip_dynamics import InputError, RobotModel
from manip_dynamics.core.contact.observer import MomentumObserver

from .test_pinocchio import PANDA, UR5, PinocchioReference, _read, assert_close, symmetrize_upper

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

UR10E_DATA = "ur10e-mamedov2020"
UR10E_PI_DRVS = [0.0, 3.7434, 0.0, 0.0708, 0.2342, 0.4365]     # kg m^2, UR10E_parameters.txt
N_STATES = 6


def ur10e_text():
    folder = shared_data(UR10E_DATA)
    if folder is None:
        pytest.skip(missing_reason(UR10E_DATA))
    return (folder / "ur10e.urdf").read_text()


# name -> (URDF text, armature in q order or None for a drawn one, frame with a 6x6 Lambda)
ROBOTS = {
    "panda": (lambda: _read(PANDA), None, "panda_hand_tcp"),
    "ur5": (lambda: _read(UR5), None, "tool0"),
    "ur10e": (ur10e_text, UR10E_PI_DRVS, "tool0"),
}


class ArmatureReference(PinocchioReference):
    """PinocchioReference with ``model.armature`` set: armature[j] on the velocity index of
    coordinate j's own joint (0 on mimic joints), as RobotModel.with_armature defines it."""

    def __init__(self, xml, armature):
        super().__init__(xml)
        a = np.zeros(self.model.nv)
        for j, name in enumerate(self.names):
            a[self.model.joints[self.model.getJointId(name)].idx_v] = armature[j]
        self.model.armature = a
        self.mimic = bool((self.G.sum(axis=1) != 1).any() or self.model.nv != self.n)

    def aba(self, q, qd, tau):
        """pin.aba in our coordinates (only without mimic joints: aba knows no constraint)."""
        return pin.aba(self.model, self.data, self.q_full(q), qd, tau)

    def lambda_(self, q, frame, linear_only=False):
        return np.linalg.inv(self.inverse_effective_inertia(q, frame, linear_only))


@pytest.fixture(scope="module", params=list(ROBOTS))
def robot(request):
    text_of, armature, frame = ROBOTS[request.param]
    text = text_of()
    rigid = RobotModel.from_urdf_string(text)
    if armature is None:     # rotor-like values, 0.05 .. 2 kg m^2 (kg on a prismatic finger)
        armature = np.random.default_rng(7).uniform(0.05, 2.0, rigid.n)
    model = rigid.with_armature(armature)
    return request.param, rigid, model, ArmatureReference(text, armature), frame


def test_armature_is_not_already_in_pinocchio_default(robot):
    """The reference changes M (guards the comparisons below against a no-op armature)."""
    name, rigid, model, ref, _ = robot
    q = ref.states(1, seed=1)[0][0]
    plain = PinocchioReference(ref.xml)
    assert np.max(np.abs(ref.mass_matrix(q) - plain.mass_matrix(q))) > 0.01
    assert_close(rigid.mass_matrix(q), plain.mass_matrix(q), what=f"{name} rigid M")


def test_mass_matrix(robot):
    name, _, model, ref, _ = robot
    q = ref.states(N_STATES, seed=11)[0]
    batch = model.mass_matrix(q)
    for k in range(N_STATES):
        M = ref.mass_matrix(q[k])
        assert_close(model.mass_matrix(q[k]), M, what=f"{name} M")
        assert_close(batch[k], M, what=f"{name} batched M")


def test_inverse_and_forward_dynamics(robot):
    name, _, model, ref, _ = robot
    q, qd, qdd = ref.states(N_STATES, seed=12)
    tau = np.array([ref.rnea(q[k], qd[k], qdd[k]) for k in range(N_STATES)])
    batch = model.forward_dynamics(q, qd, tau)
    for k in range(N_STATES):
        assert_close(model.inverse_dynamics(q[k], qd[k], qdd[k]), tau[k], what=f"{name} RNEA")
        qdd_ref = ref.forward(q[k], qd[k], tau[k]) if ref.mimic else ref.aba(q[k], qd[k], tau[k])
        assert_close(model.forward_dynamics(q[k], qd[k], tau[k]), qdd_ref, what=f"{name} qdd")
        assert_close(batch[k], qdd_ref, what=f"{name} batched qdd")


def test_effective_inertia_and_bundle(robot):
    """A, Lambda (6x6 and 3x3), compute_all's M / A / Lambda / momentum on both paths,
    operational-space mu and p."""
    name, _, model, ref, frame = robot
    q, qd, _ = ref.states(N_STATES, seed=13)
    batch = model.compute_all(q, qd, frame)
    for k in range(N_STATES):
        M = ref.mass_matrix(q[k])
        A = ref.inverse_effective_inertia(q[k], frame)
        cond = np.linalg.cond(A)
        tol = 1e-10 * max(1.0, cond / 1e3)
        Lam = np.linalg.inv(A)
        assert_close(model.inverse_effective_inertia(q[k], frame), A, what=f"{name} A")
        assert_close(model.effective_inertia(q[k], frame), Lam, tol=tol, what=f"{name} Lambda")
        assert_close(model.effective_inertia(q[k], frame, linear_only=True),
                     ref.lambda_(q[k], frame, linear_only=True), tol=tol, what=f"{name} Lambda_v")
        one, mom = model.compute_all(q[k], qd[k], frame, momentum=True)
        for M_, A_, L_, what in ((one.M, one.A, one.Lambda, "one-state"),
                                 (batch.M[k], batch.A[k], batch.Lambda[k], "batch")):
            assert_close(M_, M, what=f"{name} {what} bundle M")
            assert_close(A_, A, what=f"{name} {what} bundle A")
            assert_close(L_, Lam, tol=tol, what=f"{name} {what} bundle Lambda")
        assert_close(mom.p, M @ qd[k], what=f"{name} compute_all momentum")
        Lam_os, mu, p = model.operational_space(q[k], qd[k], frame)
        Lam_r, mu_r, p_r = ref.operational_space(q[k], qd[k], frame)
        assert_close(mu, mu_r, tol=tol, what=f"{name} mu")
        assert_close(p, p_r, tol=tol, what=f"{name} p")


def test_effective_mass(robot):
    """m_u = 1 / (u^T J_p M^-1 J_p^T u) at the frame origin and at a point on its body."""
    name, _, model, ref, frame = robot
    q = ref.states(N_STATES, seed=14)[0]
    rng = np.random.default_rng(15)
    point = np.array([0.03, -0.02, 0.1])
    for k in range(N_STATES):
        u = rng.normal(size=3)
        u /= np.linalg.norm(u)
        A = ref.inverse_effective_inertia(q[k], frame)
        R = ref.pose(q[k], frame)[:3, :3]
        r = R @ point
        T = np.hstack([np.eye(3), np.array([[0, r[2], -r[1]], [-r[2], 0, r[0]], [r[1], -r[0], 0]])])
        assert_close(model.effective_mass(q[k], frame, u), 1 / (u @ A[:3, :3] @ u),
                     what=f"{name} m_u")
        assert_close(model.effective_mass(q[k], frame, u, point=point),
                     1 / (u @ T @ A @ T.T @ u), what=f"{name} m_u at a point")


def test_energy_and_momentum(robot):
    name, _, model, ref, _ = robot
    q, qd, _ = ref.states(N_STATES, seed=16)
    T_batch = model.kinetic_energy(q, qd)
    terms = model.momentum_terms(q, qd)
    observer = MomentumObserver(model, gains=np.full(model.n, 10.0))
    p_obs, _ = observer.momentum_and_beta(q, qd, np.zeros_like(q))
    for k in range(N_STATES):
        M = ref.mass_matrix(q[k])
        T = ref.kinetic_energy(q[k], qd[k])
        assert_close(T, 0.5 * qd[k] @ M @ qd[k], what="reference T = 1/2 qd^T M qd")
        assert_close(model.kinetic_energy(q[k], qd[k]), T, what=f"{name} T")
        assert_close(T_batch[k], T, what=f"{name} batched T")
        assert_close(terms.p[k], M @ qd[k], what=f"{name} p = M qd")
        assert_close(terms.ct[k], ref.coriolis_matrix(q[k], qd[k]).T @ qd[k],
                     what=f"{name} C^T qd")
        assert_close(p_obs[k], M @ qd[k], what=f"{name} observer p")


def test_zero_armature_is_the_rigid_model(robot):
    """with_armature(0) gives the rigid model's M bit for bit (x + 0.0 == x)."""
    _, rigid, model, ref, _ = robot
    q = ref.states(3, seed=17)[0]
    assert np.array_equal(rigid.with_armature(0.0).mass_matrix(q), rigid.mass_matrix(q))
    assert np.array_equal(rigid.armature, np.zeros(rigid.n))


# ---------------------------------------------------------------------------- the API
@pytest.fixture(scope="module")
def ur5():
    return RobotModel.from_urdf_file(UR5)


def test_with_armature_keeps_and_is_kept(ur5):
    a = np.arange(1.0, 7.0) / 10
    model = ur5.with_armature(a)
    assert np.array_equal(model.armature, a) and not model.armature.flags.writeable
    assert np.array_equal(ur5.armature, np.zeros(6))          # the original is untouched
    q = np.full(6, 0.3)
    for copy in (model.with_friction(viscous=1.0), model.with_gravity((0, 0, -1)),
                 model.with_payload("tool0", 2.0), model.with_payload("tool0", 2.0)
                 .without_payload()):
        assert np.array_equal(copy.armature, a)
    loaded = model.with_payload("tool0", 2.0)
    assert_close(np.diag(loaded.mass_matrix(q)) - np.diag(
        ur5.with_payload("tool0", 2.0).mass_matrix(q)), a, tol=1e-14, what="payload + armature")
    assert np.array_equal(ur5.with_armature(0.5).armature, np.full(6, 0.5))
    b = a.copy()
    ur5.with_armature(b)
    assert b.flags.writeable            # the caller's array is copied, not frozen


@pytest.mark.parametrize("value, message", [
    ([0, 0, -0.1, 0, 0, 0], "armature[2] (joint 'elbow_joint') = -0.1 must be finite and >= 0"),
    ([0, float("nan"), 0, 0, 0, 0], "armature[1] (joint 'shoulder_lift_joint') = nan"),
    ([0, 0, 0, 0, 0, float("inf")], "armature[5] (joint 'wrist_3_joint') = inf"),
    ([1.0, 2.0], "armature must be a scalar or shape (6,), got (2,)"),
    ("heavy", "armature must be numeric"),
    (-1.0, "armature[0] (joint 'shoulder_pan_joint') = -1.0"),
])
def test_with_armature_refuses(ur5, value, message):
    with pytest.raises(InputError) as info:
        ur5.with_armature(value)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_armature_makes_a_massless_joint_invertible():
    """A joint that moves nothing has M_ii = 0 (M singular, forward dynamics refuses); its
    rotor's armature makes M positive definite and qdd_i = tau_i / armature_i there."""
    xml = """<robot name="r"><link name="base"/>
      <link name="a"><inertial><mass value="1"/><origin xyz="0.2 0 0"/>
        <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <link name="b"/>
      <joint name="j1" type="revolute"><parent link="base"/><child link="a"/>
        <axis xyz="0 0 1"/><limit effort="1" velocity="1" lower="-1" upper="1"/></joint>
      <joint name="j2" type="revolute"><parent link="a"/><child link="b"/>
        <origin xyz="0.4 0 0"/><axis xyz="0 0 1"/>
        <limit effort="1" velocity="1" lower="-1" upper="1"/></joint></robot>"""
    model = RobotModel.from_urdf_string(xml).with_armature([0.0, 0.5])
    qdd = model.forward_dynamics(np.zeros(2), np.zeros(2), np.array([0.0, 1.0]))
    assert_close(qdd, [0.0, 2.0], tol=1e-14, what="qdd of the rotor alone")
    M = symmetrize_upper(np.diag([0.01 + 0.04, 0.5]))
    assert_close(model.mass_matrix(np.zeros(2)), M, tol=1e-14, what="M")
