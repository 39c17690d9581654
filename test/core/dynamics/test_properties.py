"""Structural properties of the dynamics, and features checked against independent models.

* M symmetric positive definite; dM/dt = C + C^T by central differences of M;
* forward(inverse) = identity (with friction and an external wrench), both ways;
  g = inverse_dynamics(q, 0, 0); C qd = ID(q, qd, 0) - g; ID(q, qd, qdd) - ID(q, qd, 0) = M qdd;
* T = 1/2 qd^T M qd; dU/dq = g; J qd and Jdot qd = d/dt (J qd) by differences of the pose;
* payloads: ``with_payload`` equals the same arm with the payload merged into the link's
  URDF inertial (parallel-axis theorem in the factory), and equals Pinocchio with the
  payload appended to the joint body; copies never mutate the original;
* tilted gravity against Pinocchio, and g linear in the gravity vector;
* trees (two branches), fixed joints, rotated inertial frames, prismatic and continuous
  joints: the random tree (urdf_factory.random_tree) is checked term by term against
  Pinocchio in test_pinocchio.py; here its branch structure and a prismatic closed form.
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from manip_dynamics import RobotModel

from .. import urdf_factory as uf
from .test_pinocchio import PANDA, UR5, PinocchioReference, _read, assert_close

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

SOURCES = {
    "panda": lambda: _read(PANDA),
    "ur5": lambda: _read(UR5),
    "tree_mimic": lambda: uf.random_tree(1),
    "tree": lambda: uf.random_tree(3, with_mimic=False),
}
TIPS = {"panda": "panda_hand_tcp", "ur5": "tool0", "tree_mimic": "tool_b", "tree": "tool_a"}


@pytest.fixture(scope="module", params=list(SOURCES))
def robot(request):
    from manip_dynamics import RobotModel

    text = SOURCES[request.param]()
    ref = PinocchioReference(text)
    return request.param, RobotModel.from_urdf_string(text), ref, TIPS[request.param]


def test_mass_matrix_symmetric_positive_definite(robot):
    name, model, ref, _ = robot
    q, _, _ = ref.states(20, seed=30)
    M = model.mass_matrix(q)
    assert M.shape == (20, model.n, model.n)
    for k in range(20):
        assert_close(M[k], M[k].T, 1e-14, what="symmetry")
        np.linalg.cholesky(M[k])  # raises if not positive definite
        assert np.linalg.eigvalsh(M[k])[0] > 0


def test_mass_matrix_rate_is_c_plus_ct(robot):
    """dM/dt along qd by central differences (h = 1e-6: truncation ~h^2, rounding ~eps/h)."""
    name, model, ref, _ = robot
    q, qd, _ = ref.states(6, seed=31)
    h = 1e-6
    for k in range(6):
        dM = (model.mass_matrix(q[k] + h * qd[k]) - model.mass_matrix(q[k] - h * qd[k])) / (2 * h)
        C = model.coriolis_matrix(q[k], qd[k])
        assert_close(C + C.T, dM, 1e-7, what="C + C^T vs finite-difference dM/dt")
        assert_close(C @ qd[k], model.coriolis_torques(q[k], qd[k]), 1e-12, what="C qd")


def test_forward_is_inverse_of_inverse_dynamics(robot):
    name, model, ref, tip = robot
    rng = np.random.default_rng(32)
    fm = model.with_friction(viscous=rng.uniform(0, 1, model.n), coulomb=rng.uniform(0, 1, model.n))
    q, qd, qdd = ref.states(10, seed=32)
    F = rng.normal(0, 10, (10, 6))
    for k in range(10):
        for kw in (dict(), dict(friction=True), dict(friction=True, f_ext=F[k], f_ext_frame=tip)):
            tau = fm.inverse_dynamics(q[k], qd[k], qdd[k], **kw)
            assert_close(fm.forward_dynamics(q[k], qd[k], tau, **kw), qdd[k], 1e-9, what=str(kw))
            tau2 = rng.normal(0, 5, model.n)
            back = fm.inverse_dynamics(q[k], qd[k], fm.forward_dynamics(q[k], qd[k], tau2, **kw),
                                       **kw)
            assert_close(back, tau2, 1e-9, what=str(kw))


def test_inverse_dynamics_decomposes(robot):
    name, model, ref, _ = robot
    q, qd, qdd = ref.states(10, seed=33)
    z = np.zeros(model.n)
    for k in range(10):
        g = model.gravity_torques(q[k])
        assert_close(model.inverse_dynamics(q[k], z, z), g, 1e-12, what="g = ID at rest")
        assert_close(model.inverse_dynamics(q[k], qd[k], z) - g,
                     model.coriolis_torques(q[k], qd[k]), 1e-12, what="C qd")
        assert_close(model.inverse_dynamics(q[k], qd[k], qdd[k])
                     - model.inverse_dynamics(q[k], qd[k], z),
                     model.mass_matrix(q[k]) @ qdd[k], 1e-11, what="M qdd")


def test_energies_are_consistent_with_m_and_g(robot):
    name, model, ref, _ = robot
    q, qd, _ = ref.states(6, seed=34)
    h = 1e-6
    for k in range(6):
        assert_close(model.kinetic_energy(q[k], qd[k]),
                     0.5 * qd[k] @ model.mass_matrix(q[k]) @ qd[k], 1e-12, what="T")
        U = model.potential_energy
        grad = np.array([(U(q[k] + h * e) - U(q[k] - h * e)) / (2 * h) for e in np.eye(model.n)])
        assert_close(grad, model.gravity_torques(q[k]), 1e-7, what="dU/dq = g")


def test_jacobian_and_bias_by_differences(robot):
    """v = dp/dt, [w]x = dR/dt R^T along q + t qd; Jdot qd = (J(q + h qd) - J(q - h qd)) qd / 2h."""
    name, model, ref, tip = robot
    q, qd, _ = ref.states(6, seed=35)
    h = 1e-6
    for k in range(6):
        Xp, Xm = model.frame_pose(q[k] + h * qd[k], tip), model.frame_pose(q[k] - h * qd[k], tip)
        R = model.frame_pose(q[k], tip)[:3, :3]
        v = (Xp[:3, 3] - Xm[:3, 3]) / (2 * h)
        W = (Xp[:3, :3] - Xm[:3, :3]) / (2 * h) @ R.T
        w = np.array([W[2, 1], W[0, 2], W[1, 0]])
        assert_close(model.jacobian(q[k], tip) @ qd[k], np.concatenate([v, w]), 1e-7, what="J qd")
        Jp, Jm = model.jacobian(q[k] + h * qd[k], tip), model.jacobian(q[k] - h * qd[k], tip)
        dJ = (Jp - Jm) / (2 * h)
        assert_close(model.frame_bias_acceleration(q[k], qd[k], tip), dJ @ qd[k], 1e-7,
                     what="Jdot qd")


# ------------------------------------------------------------------ payloads
PLANAR = dict(m1=1.4, m2=0.9, l1=0.8, l2=0.5, com1=(0.35, 0.07), com2=(0.2, -0.11),
              I1=uf.planar_inertia(0.021), I2=uf.planar_inertia(0.013), inertial_yaw=(0.4, -1.1))
PAYLOAD = (0.75, np.array([0.05, -0.03, 0.02]), uf.random_inertia(np.random.default_rng(7), 0.01))


def _planar(gravity=(0.0, -9.81, 0.0), **kw):
    from manip_dynamics import RobotModel

    return RobotModel.from_urdf_string(uf.planar_2r(**PLANAR, **kw), gravity=gravity)


@pytest.mark.parametrize("frame", ["link2", "tip"])
def test_payload_equals_merged_urdf(frame):
    """with_payload(frame, ...) == the URDF whose link carries the payload in its inertial
    (link2: merged by the parallel-axis theorem; tip: the payload as the tip's own body)."""
    m, c, I = PAYLOAD
    model = _planar().with_payload(frame, m, c, I)
    if frame == "link2":
        ref = _planar(payload_on_link2=PAYLOAD)
    else:
        ref = _planar(tip_inertial=PAYLOAD)
    q = np.random.default_rng(36).uniform(-3, 3, (20, 2))
    qd = np.random.default_rng(37).normal(0, 2, (20, 2))
    for fn in ("mass_matrix", "gravity_torques", "potential_energy"):
        assert_close(getattr(model, fn)(q), getattr(ref, fn)(q), what=fn)
    for fn in ("coriolis_torques", "coriolis_matrix", "kinetic_energy"):
        assert_close(getattr(model, fn)(q, qd), getattr(ref, fn)(q, qd), what=fn)
    assert_close(model.mass_matrix(q), ref.mass_matrix(q))
    assert np.max(np.abs(model.mass_matrix(q) - _planar().mass_matrix(q))) > 1e-2


def test_payload_matches_pinocchio_appended_body():
    """Panda with a payload at the tool: Pinocchio's appendBodyToJoint is the reference."""
    from manip_dynamics import RobotModel

    m, c, I = PAYLOAD
    text = _read(PANDA)
    model = RobotModel.from_urdf_string(text).with_payload("panda_hand_tcp", m, c, I)
    ref = PinocchioReference(text)
    fr = ref.model.frames[ref.frame_id("panda_hand_tcp")]
    ref.model.appendBodyToJoint(fr.parentJoint, pin.Inertia(m, c, I), fr.placement)
    ref.data = ref.model.createData()
    q, qd, qdd = ref.states(8, seed=38)
    for k in range(8):
        assert_close(model.mass_matrix(q[k]), ref.mass_matrix(q[k]), what="M")
    _assert_tau_and_energy_match(model, ref, q, qd, qdd, "")


def _assert_tau_and_energy_match(model, ref, q, qd, qdd, what):
    """tau = RNEA(q, qd, qdd) and U(q) of ``model`` equal Pinocchio's, state by state."""
    for k in range(len(q)):
        assert_close(model.inverse_dynamics(q[k], qd[k], qdd[k]), ref.rnea(q[k], qd[k], qdd[k]),
                     what="tau" + what)
        assert_close(model.potential_energy(q[k]), ref.potential_energy(q[k]), what="U" + what)


def test_payload_copies_leave_the_original_alone():
    m, c, I = PAYLOAD
    base = _planar()
    q = np.array([0.3, -0.8])
    M0, g0 = base.mass_matrix(q).copy(), base.gravity_torques(q).copy()
    loaded = base.with_payload("link2", m, c, I)
    assert base.payloads == {} or len(base.payloads) == 0
    assert set(loaded.payloads) == {"link2"}
    assert_close(base.mass_matrix(q), M0, 0.0)
    assert_close(base.gravity_torques(q), g0, 0.0)
    again = loaded.with_payload("link2", 2 * m, c, I)     # replaces, does not add
    assert_close(again.mass_matrix(q), base.with_payload("link2", 2 * m, c, I).mass_matrix(q), 0.0)
    assert_close(loaded.without_payload("link2").mass_matrix(q), M0, 1e-14)
    assert_close(loaded.without_payload().gravity_torques(q), g0, 1e-14)


# ------------------------------------------------------------------ gravity
def test_tilted_gravity_matches_pinocchio(robot):
    name, model, ref, _ = robot
    gvec = np.array([2.0, -3.5, -8.1])
    tilted = model.with_gravity(gvec)
    ref_t = PinocchioReference(ref.xml, gravity=gvec)
    q, qd, qdd = ref.states(6, seed=39)
    for k in range(6):
        assert_close(tilted.gravity_torques(q[k]), ref_t.gravity(q[k]), what="g tilted")
    _assert_tau_and_energy_match(tilted, ref_t, q, qd, qdd, " tilted")
    # g(q) is linear in the gravity vector
    g1, g2 = np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.5, -2.0])
    combo = model.with_gravity(3 * g1 - 2 * g2).gravity_torques(q)
    assert_close(combo, 3 * model.with_gravity(g1).gravity_torques(q)
                 - 2 * model.with_gravity(g2).gravity_torques(q), 1e-12)
    assert_close(model.with_gravity((0, 0, 0)).gravity_torques(q), np.zeros_like(q), 0.0)


# ------------------------------------------------------------------ structure
def test_tree_branches_are_decoupled_in_the_jacobian():
    """Two branches: a tool's Jacobian has zero columns for the other branch's joints, and
    the mass matrix couples the branches only through the base (fixed): zero block."""
    from manip_dynamics import RobotModel

    model = RobotModel.from_urdf_string(uf.random_tree(3, with_mimic=False))
    names = list(model.joint_names)
    a = [names.index(j) for j in ("a1", "a2", "a4")]
    b = [names.index(j) for j in ("b1", "b2", "b3")]
    q = np.random.default_rng(40).uniform(-2, 2, (5, model.n))
    for k in range(5):
        Ja, Jb = model.jacobian(q[k], "tool_a"), model.jacobian(q[k], "tool_b")
        assert np.all(Ja[:, b] == 0) and np.all(Jb[:, a] == 0)
        assert np.max(np.abs(Ja[:, a])) > 1e-3 and np.max(np.abs(Jb[:, b])) > 1e-3
        M = model.mass_matrix(q[k])
        assert_close(M[np.ix_(a, b)], np.zeros((3, 3)), 1e-14, what="branch coupling")


def test_prismatic_joint_closed_form():
    """One prismatic joint along a random unit axis u (rpy-rotated origin) carrying mass m
    (a fixed child with mass m2 too): M = m + m2, g = -(m + m2) gravity . u_root."""
    from manip_dynamics import RobotModel

    rng = np.random.default_rng(41)
    u = rng.normal(size=3)
    u /= np.linalg.norm(u)
    rpy = rng.uniform(-1, 1, 3)
    m, m2 = 1.7, 0.4
    xml = uf.robot_xml("slider", [
        uf.link_xml("base"),
        uf.link_xml("carriage", uf.inertial_xml(m, (0.1, 0.2, -0.1), (0.3, 0, 0),
                                                uf.random_inertia(rng))),
        uf.link_xml("tool", uf.inertial_xml(m2, (0.0, 0.05, 0.0), inertia=uf.random_inertia(rng))),
        uf.joint_xml("slide", "prismatic", "base", "carriage", xyz=(0.1, 0, 0.3), rpy=rpy, axis=u),
        uf.joint_xml("tool_joint", "fixed", "carriage", "tool", xyz=(0.0, 0.3, 0.1), rpy=(1, 2, 3)),
    ])
    gvec = np.array([1.0, -2.0, -9.0])
    model = RobotModel.from_urdf_string(xml, gravity=gvec)
    u_root = uf.rpy_matrix(rpy) @ u
    for s in (-0.5, 0.0, 0.7):
        assert_close(model.mass_matrix([s]), [[m + m2]], 1e-12)
        assert_close(model.gravity_torques([s]), [-(m + m2) * gvec @ u_root], 1e-12)
        assert_close(model.coriolis_torques([s], [1.3]), [0.0], 1e-12)
        assert_close(model.jacobian([s], "tool")[:3, 0], u_root, 1e-12)
        assert_close(model.jacobian([s], "tool")[3:, 0], np.zeros(3), 0.0)


def test_vector_from_names_maps_by_name():
    from manip_dynamics import RobotModel

    model = RobotModel.from_urdf_string(uf.random_tree(1))
    names = list(model.joint_names)[::-1] + ["b3"]       # reversed, plus the mimic joint
    values = [10.0 * (i + 1) for i in range(len(names))]
    v = model.vector_from_names(names, values)
    for name, val in zip(names[:-1], values):
        assert v[model.joint_names.index(name)] == val


# ----------------------------------------------------------------------------- root_link
def test_root_link_subtree_equals_the_full_arm_with_the_first_joint_held():
    """Re-rooting the UR5 at ``shoulder_link`` (below shoulder_pan_joint) must give the
    dynamics of the full arm with that joint held still, seen from the shoulder link:
    the kinetic energy of the subtree is frame independent, so M_sub = M[1:, 1:] and
    C_sub qd_sub = (C qd)[1:] with qd_1 = 0; gravity expressed in shoulder axes gives
    g_sub = g[1:]; poses and Jacobians are the full ones seen from the shoulder frame.
    The full model itself is checked against Pinocchio above."""
    xml = _read(UR5)
    full = RobotModel.from_urdf_string(xml)
    rng = np.random.default_rng(7)
    for _ in range(10):
        q = rng.uniform(-np.pi, np.pi, full.n)
        qd = np.r_[0.0, rng.uniform(-2, 2, full.n - 1)]
        X_ws = full.frame_pose(q, "shoulder_link")
        R_ws = X_ws[:3, :3]
        sub = RobotModel.from_urdf_string(xml, root_link="shoulder_link",
                                          gravity=R_ws.T @ full.gravity)
        assert sub.joint_names == full.joint_names[1:]
        qs, qds = q[1:], qd[1:]
        assert_close(sub.mass_matrix(qs), full.mass_matrix(q)[1:, 1:])
        assert_close(sub.coriolis_torques(qs, qds), full.coriolis_torques(q, qd)[1:])
        assert_close(sub.gravity_torques(qs), full.gravity_torques(q)[1:])
        assert_close(sub.frame_pose(qs, "tool0"),
                     np.linalg.inv(X_ws) @ full.frame_pose(q, "tool0"))
        J = full.jacobian(q, "tool0")[:, 1:]
        assert_close(sub.jacobian(qs, "tool0"),
                     np.vstack([R_ws.T @ J[:3], R_ws.T @ J[3:]]))
