"""The dynamics node's six query services, called over real DDS.

Two real ``dynamics_node`` processes serve them for the whole module:

* ``/r2/dynamics_node``: the planar 2R arm. Its answers are checked against the closed
  forms of a planar 2R arm (mass matrix, gravity, Coriolis, Jacobian) built in this file
  from the numbers read out of the URDF: an independent reference, not the core.
* ``/panda/dynamics_node``: the 7-DOF arm. Its answers are checked against the core
  computed in this test process, and by a round trip through two services
  (inverse dynamics -> forward dynamics gives back qdd).

Every kind of bad request is sent too; each must come back ``success=false`` with a
message naming the problem, and the node must keep answering afterwards.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import ros_utils
from manip_dynamics import RobotModel, robots

G0 = 9.81
TIMEOUT = 60.0   # first call of a node process may wait for numba compilation


# --------------------------------------------------------------------------- references

class Planar2R:
    """Closed-form dynamics of the planar 2R arm (moving in x-z, angles from +x to +z).

    Link i: mass m_i, length L_i, centre of mass at d_i along the link, inertia I_i about
    the CoM around the joint axis (the URDF's iyy, the axis being -y).
    """

    def __init__(self, urdf_path):
        root = ET.parse(urdf_path).getroot()
        links = {link.get("name"): link for link in root.findall("link")}
        joints = {j.get("name"): j for j in root.findall("joint")}

        def inertial(name):
            el = links[name].find("inertial")
            return (float(el.find("mass").get("value")),
                    float(el.find("origin").get("xyz").split()[0]),
                    float(el.find("inertia").get("iyy")))

        self.m1, self.d1, self.I1 = inertial("link1")
        self.m2, self.d2, self.I2 = inertial("link2")
        self.L1 = float(joints["joint2"].find("origin").get("xyz").split()[0])
        self.L2 = float(joints["tool_joint"].find("origin").get("xyz").split()[0])
        self.effort = [float(joints[j].find("limit").get("effort")) for j in ("joint1", "joint2")]
        dyn = [joints[j].find("dynamics") for j in ("joint1", "joint2")]
        self.viscous = np.array([float(d.get("damping")) for d in dyn])
        self.coulomb = np.array([float(d.get("friction")) for d in dyn])

    def M(self, q):
        c2 = math.cos(q[1])
        m1, m2, d1, d2, L1 = self.m1, self.m2, self.d1, self.d2, self.L1
        m11 = self.I1 + self.I2 + m1 * d1**2 + m2 * (L1**2 + d2**2 + 2 * L1 * d2 * c2)
        m12 = self.I2 + m2 * (d2**2 + L1 * d2 * c2)
        m22 = self.I2 + m2 * d2**2
        return np.array([[m11, m12], [m12, m22]])

    def g(self, q):
        c1, c12 = math.cos(q[0]), math.cos(q[0] + q[1])
        return G0 * np.array([(self.m1 * self.d1 + self.m2 * self.L1) * c1
                              + self.m2 * self.d2 * c12,
                              self.m2 * self.d2 * c12])

    def c(self, q, qd):
        h = self.m2 * self.L1 * self.d2 * math.sin(q[1])
        return np.array([-h * (2 * qd[0] * qd[1] + qd[1] ** 2), h * qd[0] ** 2])

    def tau(self, q, qd, qdd):
        return self.M(q) @ qdd + self.c(q, qd) + self.g(q)

    def J_tool(self, q):
        """3 x 2 linear Jacobian of the tool origin, root axes (x, y, z)."""
        s1, c1 = math.sin(q[0]), math.cos(q[0])
        s12, c12 = math.sin(q[0] + q[1]), math.cos(q[0] + q[1])
        return np.array([[-self.L1 * s1 - self.L2 * s12, -self.L2 * s12],
                         [0.0, 0.0],
                         [self.L1 * c1 + self.L2 * c12, self.L2 * c12]])

    def g_point_mass_at_tool(self, q, mass):
        c1, c12 = math.cos(q[0]), math.cos(q[0] + q[1])
        return G0 * mass * np.array([self.L1 * c1 + self.L2 * c12, self.L2 * c12])


R2 = Planar2R(robots.path("planar_2r"))


# --------------------------------------------------------------------------- fixtures

class Server:
    """A running dynamics_node process plus the resolved names of its services."""

    def __init__(self, proc, namespace, model):
        self.proc = proc
        self.model = model
        self.prefix = f"/{namespace}/dynamics_node/"

    def call(self, node, srv_type, service, request, timeout=TIMEOUT):
        ros_utils.assert_running(self.proc)
        response = ros_utils.call_service(node, srv_type, self.prefix + service, request,
                                          timeout=timeout)
        ros_utils.assert_running(self.proc)
        return response


def _start(namespace, robot, tmp_path_factory, extra=()):
    log_dir = tmp_path_factory.mktemp(f"dynamics_node_{namespace}")
    args = ["manip_dynamics.nodes.dynamics_node", "--ros-args",
            "-r", f"__ns:=/{namespace}", "-r", "__node:=dynamics_node"]
    if robot is not None:
        args += ["-p", f"urdf_file:={robots.path(robot)}"]
    args += list(extra)
    return ros_utils.start_node_process(args, name=f"dynamics_node_{namespace}",
                                        log_dir=log_dir)


def _stop(proc):
    ros_utils.stop_process(proc)
    print(f"----- log of {proc.name} (exit code {proc.returncode})")
    print(ros_utils.read_log(proc, tail=200))


def _serve(name, robot, tmp_path_factory):
    """A dynamics node ``name`` serving ``robot`` for a module's tests, then stopped."""
    proc = _start(name, robot, tmp_path_factory)
    try:
        yield Server(proc, name, RobotModel.from_urdf_file(robots.path(robot)))
    finally:
        _stop(proc)


@pytest.fixture(scope="module")
def r2(tmp_path_factory):
    yield from _serve("r2", "planar_2r", tmp_path_factory)


@pytest.fixture(scope="module")
def panda(tmp_path_factory):
    yield from _serve("panda", "panda", tmp_path_factory)


def _panda_inverse_dynamics(srv, friction):
    """InverseDynamics request for the Panda test state (Q_PANDA, QD_PANDA, QDD_PANDA)."""
    return srv.InverseDynamics.Request(position=Q_PANDA.tolist(), velocity=QD_PANDA.tolist(),
                                       acceleration=QDD_PANDA.tolist(),
                                       include_friction=friction)


def _srv():
    from manip_dynamics_interfaces import srv
    return srv


Q_PANDA = np.array([0.3, -0.4, 0.2, -2.0, 0.3, 1.8, 0.5])
QD_PANDA = np.array([0.5, -0.3, 0.8, 0.2, -0.6, 0.4, 1.0])
QDD_PANDA = np.array([1.0, -2.0, 0.5, 1.5, -1.0, 2.0, -0.5])


# --------------------------------------------------------------------------- planar 2R vs closed forms

def test_mass_matrix_matches_closed_form(module_ros_node, r2):
    srv = _srv()
    for q in ([0.0, 0.0], [0.4, -1.1], [-2.0, 2.5]):
        res = r2.call(module_ros_node, srv.GetMassMatrix, "get_mass_matrix",
                      srv.GetMassMatrix.Request(position=q))
        assert res.success, res.message
        assert list(res.joint_names) == ["joint1", "joint2"]
        M = R2.M(q)
        np.testing.assert_allclose(np.reshape(res.mass_matrix, (2, 2)), M, rtol=1e-10)
        eig = np.linalg.eigvalsh(M)
        np.testing.assert_allclose(res.eigenvalues, eig, rtol=1e-10)
        assert res.condition_number == pytest.approx(eig[1] / eig[0], rel=1e-9)


def test_gravity_matches_closed_form_and_payload_is_per_query(module_ros_node, r2):
    srv = _srv()
    from geometry_msgs.msg import Inertia

    q = [0.7, -0.3]
    res = r2.call(module_ros_node, srv.GetGravityTorques, "get_gravity_torques",
                  srv.GetGravityTorques.Request(position=q))
    assert res.success, res.message
    np.testing.assert_allclose(res.effort, R2.g(q), rtol=1e-10)

    # a hypothetical 1.5 kg point mass at the tool, for this query only
    payload = srv.GetGravityTorques.Request().payload
    payload.frame_id = "tool"
    payload.inertia = Inertia(m=1.5)
    res = r2.call(module_ros_node, srv.GetGravityTorques, "get_gravity_torques",
                  srv.GetGravityTorques.Request(position=q, use_payload=True, payload=payload))
    assert res.success, res.message
    np.testing.assert_allclose(res.effort, R2.g(q) + R2.g_point_mass_at_tool(q, 1.5),
                               rtol=1e-10)

    # the node's own model is unchanged afterwards
    res = r2.call(module_ros_node, srv.GetGravityTorques, "get_gravity_torques",
                  srv.GetGravityTorques.Request(position=q))
    np.testing.assert_allclose(res.effort, R2.g(q), rtol=1e-10)


def test_inverse_dynamics_matches_closed_form(module_ros_node, r2):
    srv = _srv()
    from geometry_msgs.msg import Wrench

    q, qd, qdd = [0.5, 1.0], [1.2, -0.7], [0.3, 2.0]
    res = r2.call(module_ros_node, srv.InverseDynamics, "inverse_dynamics",
                  srv.InverseDynamics.Request(position=q, velocity=qd, acceleration=qdd))
    assert res.success, res.message
    np.testing.assert_allclose(res.effort, R2.tau(q, qd, qdd), rtol=1e-10)

    # joint_names in another order: same torques, answered in model order
    res = r2.call(module_ros_node, srv.InverseDynamics, "inverse_dynamics",
                  srv.InverseDynamics.Request(joint_names=["joint2", "joint1"],
                                              position=q[::-1], velocity=qd[::-1],
                                              acceleration=qdd[::-1]))
    assert res.success, res.message
    assert list(res.joint_names) == ["joint1", "joint2"]
    np.testing.assert_allclose(res.effort, R2.tau(q, qd, qdd), rtol=1e-10)

    # empty velocity / acceleration: static, tau = g
    res = r2.call(module_ros_node, srv.InverseDynamics, "inverse_dynamics",
                  srv.InverseDynamics.Request(position=q))
    np.testing.assert_allclose(res.effort, R2.g(q), rtol=1e-10)

    # friction: + viscous qd + coulomb sign(qd) (URDF <dynamics>)
    res = r2.call(module_ros_node, srv.InverseDynamics, "inverse_dynamics",
                  srv.InverseDynamics.Request(position=q, velocity=qd, acceleration=qdd,
                                              include_friction=True))
    np.testing.assert_allclose(
        res.effort,
        R2.tau(q, qd, qdd) + R2.viscous * qd + R2.coulomb * np.sign(qd), rtol=1e-10)

    # an external force pushing on the tool: tau = ... - J^T F
    F = np.array([3.0, 0.0, -5.0])
    wrench = Wrench()
    wrench.force.x, wrench.force.y, wrench.force.z = F.tolist()
    res = r2.call(module_ros_node, srv.InverseDynamics, "inverse_dynamics",
                  srv.InverseDynamics.Request(position=q, velocity=qd, acceleration=qdd,
                                              wrench_frame="tool", external_wrench=wrench))
    assert res.success, res.message
    np.testing.assert_allclose(res.effort, R2.tau(q, qd, qdd) - R2.J_tool(q).T @ F,
                               rtol=1e-10, atol=1e-12)


def test_effective_inertia_of_planar_arm(module_ros_node, r2):
    """Planar: the 3-D translational A has a zero row (y), so the answer is singular; the
    damped Lambda's x-z block is the planar closed form (J2 M^-1 J2^T)^-1."""
    srv = _srv()
    q = [0.3, 1.2]
    res = r2.call(module_ros_node, srv.GetEffectiveInertia, "get_effective_inertia",
                  srv.GetEffectiveInertia.Request(position=q, frame="tool", linear_only=True))
    assert res.success, res.message
    assert res.dimension == 3 and res.singular
    lam = np.reshape(res.effective_inertia, (3, 3))
    assert np.all(np.isfinite(lam)) and np.all(np.isfinite(res.inverse_effective_inertia))
    J = R2.J_tool(q)
    A = J @ np.linalg.solve(R2.M(q), J.T)
    np.testing.assert_allclose(np.reshape(res.inverse_effective_inertia, (3, 3)), A,
                               rtol=1e-9, atol=1e-12)
    xz = [0, 2]
    lam_planar = np.linalg.inv(A[np.ix_(xz, xz)])
    np.testing.assert_allclose(lam[np.ix_(xz, xz)], lam_planar, rtol=1e-4)
    assert math.isinf(res.eigenvalues[-1])          # the y direction cannot move
    np.testing.assert_allclose(res.eigenvalues[:2], np.linalg.eigvalsh(lam_planar), rtol=1e-6)


def test_trajectory_torques_and_effort_limits(module_ros_node, r2):
    srv = _srv()
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    states = [([0.0, 0.0], [0.0, 0.0], [0.0, 0.0]),
              ([0.5, -0.5], [1.0, 2.0], [3.0, -1.0]),
              ([1.0, 0.2], [2.0, -1.0], [40.0, 80.0]),     # joint2 above its 20 N*m
              ([1.5, 0.4], [], [])]
    traj = JointTrajectory()
    traj.joint_names = ["joint2", "joint1"]                # another order on purpose
    for q, qd, qdd in states:
        traj.points.append(JointTrajectoryPoint(positions=q[::-1], velocities=qd[::-1],
                                                accelerations=qdd[::-1]))
    res = r2.call(module_ros_node, srv.GetTrajectoryTorques, "get_trajectory_torques",
                  srv.GetTrajectoryTorques.Request(trajectory=traj))
    assert res.success, res.message
    expected = np.array([R2.tau(q, qd or [0, 0], qdd or [0, 0]) for q, qd, qdd in states])
    effort = np.reshape(res.effort, (len(states), 2))
    np.testing.assert_allclose(effort, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(res.peak_effort, np.abs(expected).max(axis=0), rtol=1e-10)
    assert list(res.effort_limit) == R2.effort
    over = np.abs(expected) > np.array(R2.effort)
    assert over.any()                                      # the test exercises the limit
    assert list(res.exceeding_points) == list(np.flatnonzero(over.any(axis=1)))
    assert list(res.exceeding_joints) == [n for n, o in zip(["joint1", "joint2"],
                                                            over.any(axis=0)) if o]


# --------------------------------------------------------------------------- 7-DOF vs core, round trip

def test_panda_services_match_core(module_ros_node, panda):
    srv = _srv()
    model = panda.model
    names = list(model.joint_names)

    res = panda.call(module_ros_node, srv.GetMassMatrix, "get_mass_matrix",
                     srv.GetMassMatrix.Request(joint_names=names, position=Q_PANDA.tolist()))
    assert res.success, res.message
    np.testing.assert_allclose(np.reshape(res.mass_matrix, (7, 7)), model.mass_matrix(Q_PANDA),
                               rtol=1e-12, atol=1e-14)

    res = panda.call(module_ros_node, srv.InverseDynamics, "inverse_dynamics",
                     _panda_inverse_dynamics(srv, friction=True))
    assert res.success, res.message
    np.testing.assert_allclose(
        res.effort, model.inverse_dynamics(Q_PANDA, QD_PANDA, QDD_PANDA, friction=True),
        rtol=1e-12, atol=1e-12)

    res = panda.call(module_ros_node, srv.GetGravityTorques, "get_gravity_torques",
                     srv.GetGravityTorques.Request(position=Q_PANDA.tolist()))
    np.testing.assert_allclose(res.effort, model.gravity_torques(Q_PANDA), rtol=1e-12,
                               atol=1e-12)

    for frame, linear in (("", False), ("", True), ("panda_link7", False)):
        res = panda.call(module_ros_node, srv.GetEffectiveInertia, "get_effective_inertia",
                         srv.GetEffectiveInertia.Request(position=Q_PANDA.tolist(),
                                                         frame=frame, linear_only=linear))
        assert res.success, res.message
        k = 3 if linear else 6
        target = frame or model.default_tip
        assert res.dimension == k and not res.singular
        np.testing.assert_allclose(
            np.reshape(res.effective_inertia, (k, k)),
            model.effective_inertia(Q_PANDA, target, linear_only=linear), rtol=1e-9)
        np.testing.assert_allclose(
            np.reshape(res.inverse_effective_inertia, (k, k)),
            model.inverse_effective_inertia(Q_PANDA, target, linear_only=linear),
            rtol=1e-9, atol=1e-14)
        V = np.reshape(res.eigenvectors, (k, k))
        lam = np.reshape(res.effective_inertia, (k, k))
        np.testing.assert_allclose(V @ np.diag(res.eigenvalues) @ V.T, lam, rtol=1e-7,
                                   atol=1e-9 * np.max(res.eigenvalues))

    # panda_link5 moves with 5 joints only: its 6-D Lambda does not exist. The answer is
    # singular=true with the damped Lambda (node damping, default 1e-3): finite numbers.
    res = panda.call(module_ros_node, srv.GetEffectiveInertia, "get_effective_inertia",
                     srv.GetEffectiveInertia.Request(position=Q_PANDA.tolist(),
                                                     frame="panda_link5"))
    assert res.success, res.message
    assert res.singular and res.dimension == 6
    lam = np.reshape(res.effective_inertia, (6, 6))
    assert np.all(np.isfinite(lam))
    np.testing.assert_allclose(
        lam, model.effective_inertia(Q_PANDA, "panda_link5", damping=1e-3), rtol=1e-9,
        atol=1e-12)
    assert math.isinf(res.eigenvalues[-1]) and np.all(np.isfinite(res.eigenvalues[:5]))


def test_inverse_then_forward_dynamics_round_trip(module_ros_node, panda):
    srv = _srv()
    for friction in (False, True):
        res = panda.call(module_ros_node, srv.InverseDynamics, "inverse_dynamics",
                         _panda_inverse_dynamics(srv, friction))
        assert res.success, res.message
        back = panda.call(module_ros_node, srv.ForwardDynamics, "forward_dynamics",
                          srv.ForwardDynamics.Request(position=Q_PANDA.tolist(),
                                                      velocity=QD_PANDA.tolist(),
                                                      effort=list(res.effort),
                                                      include_friction=friction))
        assert back.success, back.message
        np.testing.assert_allclose(back.acceleration, QDD_PANDA, rtol=1e-8, atol=1e-9)


def test_panda_trajectory_matches_core_batch(module_ros_node, panda):
    srv = _srv()
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    model = panda.model
    t = np.linspace(0.0, 2.0, 50)[:, None]
    Q = Q_PANDA + 0.3 * np.sin(t * np.arange(1, 8))
    QD = 0.3 * np.arange(1, 8) * np.cos(t * np.arange(1, 8))
    QDD = -0.3 * np.arange(1, 8) ** 2 * np.sin(t * np.arange(1, 8))
    traj = JointTrajectory(joint_names=list(model.joint_names))
    traj.points = [JointTrajectoryPoint(positions=a.tolist(), velocities=b.tolist(),
                                        accelerations=c.tolist())
                   for a, b, c in zip(Q, QD, QDD)]
    res = panda.call(module_ros_node, srv.GetTrajectoryTorques, "get_trajectory_torques",
                     srv.GetTrajectoryTorques.Request(trajectory=traj))
    assert res.success, res.message
    expected = np.array([model.inverse_dynamics(a, b, c) for a, b, c in zip(Q, QD, QDD)])
    np.testing.assert_allclose(np.reshape(res.effort, expected.shape), expected,
                               rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(res.effort_limit, model.effort_limits)


# --------------------------------------------------------------------------- bad requests

def _bad_requests():
    """(service, type name, request kwargs builder, words the message must contain)."""
    from geometry_msgs.msg import Inertia, Wrench
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    nan = float("nan")
    force = Wrench()
    force.force.x = 1.0
    bad_wrench = Wrench()
    bad_wrench.torque.z = nan

    def traj(names, points):
        return JointTrajectory(joint_names=names, points=[
            JointTrajectoryPoint(positions=p[0], velocities=p[1]) for p in points])

    def payload(frame, mass):
        srv = _srv()
        p = srv.GetGravityTorques.Request().payload
        p.frame_id = frame
        p.inertia = Inertia(m=mass)
        return p

    return [
        ("inverse_dynamics", "InverseDynamics", dict(position=[0.1]), ["position", "2"]),
        ("inverse_dynamics", "InverseDynamics",
         dict(joint_names=["joint1", "joint2"], position=[0.1, 0.2, 0.3]),
         ["position", "joint_names"]),
        ("inverse_dynamics", "InverseDynamics", dict(position=[0.1, nan]), ["joint2"]),
        ("inverse_dynamics", "InverseDynamics",
         dict(position=[0.1, 0.2], velocity=[float("inf"), 0.0]), ["joint1"]),
        ("inverse_dynamics", "InverseDynamics",
         dict(joint_names=["joint1", "elbow"], position=[0.1, 0.2]), ["elbow"]),
        ("inverse_dynamics", "InverseDynamics",
         dict(joint_names=["joint1", "joint1"], position=[0.1, 0.2]), ["joint1"]),
        ("inverse_dynamics", "InverseDynamics",
         dict(joint_names=["joint1"], position=[0.1]), ["joint2"]),
        ("inverse_dynamics", "InverseDynamics",
         dict(position=[0.1, 0.2], acceleration=[1.0]), ["acceleration"]),
        ("inverse_dynamics", "InverseDynamics",
         dict(position=[0.1, 0.2], wrench_frame="gripper", external_wrench=force),
         ["gripper"]),
        ("inverse_dynamics", "InverseDynamics",
         dict(position=[0.1, 0.2], external_wrench=force), ["wrench_frame"]),
        ("inverse_dynamics", "InverseDynamics",
         dict(position=[0.1, 0.2], wrench_frame="tool", external_wrench=bad_wrench),
         ["external_wrench"]),
        ("forward_dynamics", "ForwardDynamics", dict(position=[0.1, 0.2]), ["effort"]),
        ("forward_dynamics", "ForwardDynamics",
         dict(position=[0.1, 0.2], effort=[1.0, nan]), ["joint2"]),
        ("get_mass_matrix", "GetMassMatrix", dict(), ["position"]),
        ("get_gravity_torques", "GetGravityTorques",
         dict(position=[0.1, 0.2], use_payload=True, payload=payload("gripper", 1.0)),
         ["gripper"]),
        ("get_gravity_torques", "GetGravityTorques",
         dict(position=[0.1, 0.2], use_payload=True, payload=payload("tool", -1.0)),
         ["mass"]),
        ("get_gravity_torques", "GetGravityTorques",
         dict(position=[0.1, 0.2], use_payload=True, payload=payload("", 1.0)),
         ["frame_id"]),
        ("get_effective_inertia", "GetEffectiveInertia",
         dict(position=[0.1, 0.2], frame="gripper"), ["gripper"]),
        ("get_trajectory_torques", "GetTrajectoryTorques",
         dict(trajectory=traj(["joint1", "joint2"], [])), ["no points"]),
        ("get_trajectory_torques", "GetTrajectoryTorques",
         dict(trajectory=traj(["joint1", "joint2"],
                              [([0.0, 0.0], []), ([0.0], [])])), ["points[1]", "positions"]),
        ("get_trajectory_torques", "GetTrajectoryTorques",
         dict(trajectory=traj(["joint1", "joint2"],
                              [([0.0, 0.0], [0.0, 0.0]), ([0.0, 0.0], [nan, 0.0])])),
         ["points[1]", "joint1"]),
        ("get_trajectory_torques", "GetTrajectoryTorques",
         dict(trajectory=traj(["joint1", "wrist"], [([0.0, 0.0], [])])), ["wrist"]),
        ("get_trajectory_torques", "GetTrajectoryTorques",
         dict(trajectory=traj(["joint1", "joint1"], [([0.0, 0.0], [])])), ["joint1"]),
    ]


def test_bad_requests_are_refused_and_node_stays_up(module_ros_node, r2):
    srv = _srv()
    cases = _bad_requests()
    for service, type_name, kwargs, words in cases:
        srv_type = getattr(srv, type_name)
        res = r2.call(module_ros_node, srv_type, service, srv_type.Request(**kwargs))
        what = f"{service} {kwargs}: {res.message!r}"
        assert not res.success, what
        assert res.message.startswith(r2.prefix + service), what   # names the service
        for word in words:
            assert word in res.message, what
        # no half-filled answer next to success=false
        for field in ("effort", "acceleration", "mass_matrix", "effective_inertia"):
            assert len(getattr(res, field, [])) == 0, what

    # still serving correctly afterwards
    q = [0.2, 0.9]
    res = r2.call(module_ros_node, srv.GetMassMatrix, "get_mass_matrix",
                  srv.GetMassMatrix.Request(position=q))
    assert res.success, res.message
    np.testing.assert_allclose(np.reshape(res.mass_matrix, (2, 2)), R2.M(q), rtol=1e-10)


# --------------------------------------------------------------------------- no model yet

@pytest.mark.timeout(120)
def test_no_model_until_robot_description_arrives(module_ros_node, tmp_path_factory):
    """Started without a URDF, the node answers success=false saying why, and serves as soon
    as a robot_description is published (transient local, as robot_state_publisher does)."""
    srv = _srv()
    from std_msgs.msg import String

    proc = _start("nomodel", None, tmp_path_factory)
    pub = None
    try:
        server = Server(proc, "nomodel", None)
        res = server.call(module_ros_node, srv.GetGravityTorques, "get_gravity_torques",
                          srv.GetGravityTorques.Request(position=[0.0, 0.0]))
        assert not res.success
        assert "no robot model" in res.message and "get_gravity_torques" in res.message

        pub = module_ros_node.create_publisher(String, "/nomodel/robot_description",
                                           ros_utils.latched_qos())
        pub.publish(String(data=robots.read("planar_2r")))
        q = [0.4, -0.2]

        def answered():
            r = server.call(module_ros_node, srv.GetGravityTorques, "get_gravity_torques",
                            srv.GetGravityTorques.Request(position=q))
            return r if r.success else None

        res = ros_utils.wait_for(answered, timeout=TIMEOUT, interval=0.2)
        np.testing.assert_allclose(res.effort, R2.g(q), rtol=1e-10)
    finally:
        if pub is not None:
            module_ros_node.destroy_publisher(pub)
        _stop(proc)
