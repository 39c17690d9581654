"""The dynamics node with a dynamics side file (``dynamics_file``, docs/side_file.md), over
real DDS: the side file beside its ``urdf_file`` is applied, so the mass-matrix and
effective-inertia services equal Pinocchio with ``model.armature`` set (1e-10); a side file
that cannot be used is reported in one error line, set to 'none', and the node keeps
serving the URDF's model."""
from __future__ import annotations

import pathlib

import numpy as np
import pinocchio as pin
import pytest

import ros_utils

MODULE = "manip_dynamics.nodes.dynamics_node"
UR5 = (pathlib.Path(pin.__file__).parents[4] / "share" / "example-robot-data" / "robots"
       / "ur_description" / "urdf" / "ur5_robot.urdf")
ARMATURE = [0.5, 3.7434, 1.25, 0.0708, 0.2342, 0.4365]        # kg m^2
Q = np.array([0.3, -1.1, 1.4, -0.6, 0.9, 0.2])
TIMEOUT = 120.0        # the node's first answer may wait for numba compilation


def pinocchio_terms(armature):
    """(M, Lambda 6x6 of tool0) at Q from Pinocchio with model.armature = armature."""
    model = pin.buildModelFromUrdf(str(UR5))
    model.armature = np.asarray(armature, dtype=float)
    data = model.createData()
    M = pin.crba(model, data, Q)
    M = np.triu(M) + np.triu(M, 1).T
    J = pin.computeFrameJacobian(model, data, Q, model.getFrameId("tool0"),
                                 pin.LOCAL_WORLD_ALIGNED)
    return M, np.linalg.inv(J @ np.linalg.solve(M, J.T))


def serve(node_process, tmp_path, namespace, side_text):
    urdf = tmp_path / "ur5.urdf"
    urdf.write_text(UR5.read_text())
    (tmp_path / "ur5.dynamics.yaml").write_text(side_text)
    return node_process([MODULE, "--ros-args", "-r", f"__ns:=/{namespace}",
                         "-r", "__node:=dynamics_node", "-p", f"urdf_file:={urdf}",
                         "-p", "tip_link:=tool0"])


def ask(node, proc, namespace):
    """(M (6, 6), Lambda (6, 6)) from the node's services at Q."""
    from manip_dynamics_interfaces import srv
    prefix = f"/{namespace}/dynamics_node/"
    res = ros_utils.call_service(node, srv.GetMassMatrix, prefix + "get_mass_matrix",
                                 srv.GetMassMatrix.Request(position=Q.tolist()),
                                 timeout=TIMEOUT, process=proc)
    assert res.success, res.message
    M = np.reshape(res.mass_matrix, (6, 6))
    res = ros_utils.call_service(node, srv.GetEffectiveInertia, prefix + "get_effective_inertia",
                                 srv.GetEffectiveInertia.Request(position=Q.tolist(),
                                                                 frame="tool0"),
                                 timeout=TIMEOUT, process=proc)
    assert res.success, res.message
    return M, np.reshape(res.effective_inertia, (6, 6))


def assert_close(actual, expected, what):
    scale = max(1.0, float(np.max(np.abs(expected))))
    err = float(np.max(np.abs(actual - expected)))
    assert err <= 1e-10 * scale, f"{what}: max error {err:.3e} > 1e-10 * {scale:.3g}"


@pytest.mark.timeout(300)
def test_the_side_file_beside_the_urdf_reaches_the_services(node_process, ros_node, tmp_path):
    joints = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint",
              "wrist_2_joint", "wrist_3_joint"]
    side = "joints:\n" + "".join(f"  {j}: {{armature: {a!r}}}\n" for j, a in zip(joints, ARMATURE))
    proc = serve(node_process, tmp_path, "armature", side)
    M, Lam = ask(ros_node, proc, "armature")
    M_pin, Lam_pin = pinocchio_terms(ARMATURE)
    assert_close(M, M_pin, "M")
    assert_close(Lam, Lam_pin, "Lambda")
    assert "with side file" in ros_utils.read_log(proc)


@pytest.mark.timeout(300)
def test_a_bad_side_file_is_reported_and_the_node_serves_the_urdf(node_process, ros_node,
                                                                   tmp_path):
    proc = serve(node_process, tmp_path, "bad_side", "joints: {elbow: {armature: 1.0}}\n")
    M, Lam = ask(ros_node, proc, "bad_side")
    M_pin, Lam_pin = pinocchio_terms(np.zeros(6))
    assert_close(M, M_pin, "M")
    assert_close(Lam, Lam_pin, "Lambda")
    log = ros_utils.read_log(proc)
    assert "parameter dynamics_file reset to 'none'" in log and "unknown joint 'elbow'" in log
    assert "Traceback" not in log


GAIN = [10.0, 10.6956, 8.4566, 9.0029, 9.48, 10.1232]     # N m/A (the UR10e's, Mamedov 2020)
JOINTS = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint",
          "wrist_2_joint", "wrist_3_joint"]
F_TIP = np.array([12.0, -8.0, 15.0, 0.5, -1.0, 0.75])   # N, N m at tool0's origin, root axes
PAYLOAD, PAYLOAD_COM = 1.7, np.array([0.01, -0.02, 0.08])   # kg; m, tool0 axes
POSES = np.array([[0.3, -1.1, 1.4, -0.6, 0.9, 0.2], [-0.8, -1.6, 1.9, -1.2, -0.7, 1.1],
                  [1.2, -0.7, 0.6, 0.4, 1.5, -0.9], [0.1, -2.0, 2.2, -2.5, 0.3, 2.0],
                  [-1.5, -0.4, 1.0, -0.1, -1.3, -0.4], [0.7, -1.3, 0.3, 1.1, 0.5, 0.6]])


def pinocchio_static(q):
    """(g(q), the (6, 6) Jacobian of tool0's origin [v; w] in root axes, tool0's pose) from
    Pinocchio."""
    model = pin.buildModelFromUrdf(str(UR5))
    data = model.createData()
    g = pin.computeGeneralizedGravity(model, data, q)
    frame = model.getFrameId("tool0")
    J = pin.computeFrameJacobian(model, data, q, frame, pin.LOCAL_WORLD_ALIGNED)
    pin.framesForwardKinematics(model, data, q)
    return np.array(g), np.array(J), data.oMf[frame].rotation.copy()


def payload_torque(q):
    """The torque that holds a point mass PAYLOAD at PAYLOAD_COM (tool0 axes) still:
    J_p^T [0, 0, m 9.81] with J_p = J_v - [p]x J_w the Jacobian of the point (p its offset
    from tool0's origin in root axes)."""
    _, J, R = pinocchio_static(q)
    p = R @ PAYLOAD_COM
    skew = np.array([[0.0, -p[2], p[1]], [p[2], 0.0, -p[0]], [-p[1], p[0], 0.0]])
    J_p = J[:3] - skew @ J[3:]
    return J_p.T @ np.array([0.0, 0.0, PAYLOAD * 9.81])


@pytest.mark.timeout(300)
def test_drive_gains_of_the_side_file_turn_currents_into_torques(node_process, ros_node,
                                                                 tmp_path):
    """effort = currents (torque / drive_gain): the observer's r follows the closed form
    (1 - exp(-K_O t)) J^T F of a tip wrench held at rest (Pinocchio's g and J), and
    ~/estimate_payload (static poses) finds the payload's mass and centre of mass; before
    the gains were applied, r tended to tau/k - g and the mass was wrong."""
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState

    from manip_dynamics_interfaces.srv import EstimatePayload
    from node_test_helpers import stamp_ns
    side = "joints:\n" + "".join(f"  {j}: {{drive_gain: {k!r}}}\n" for j, k in zip(JOINTS, GAIN))
    proc = serve(node_process, tmp_path, "gains", side)
    ask(ros_node, proc, "gains")                       # up (its services answer)
    deep = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
    got = {}
    ros_node.create_subscription(JointState, "/gains/dynamics_node/external_torques",
                                 lambda m: got.__setitem__(stamp_ns(m.header), m), deep)
    pub = ros_node.create_publisher(JointState, "/gains/joint_states", deep)
    t_ns = ros_node.get_clock().now().nanoseconds - 3600 * 10 ** 9

    def send(q, torque):
        nonlocal t_ns
        t_ns += 10 ** 7                                                 # 10 ms apart
        msg = JointState(name=JOINTS, position=list(q), velocity=[0.0] * 6,
                         effort=list(np.asarray(torque) / GAIN))        # currents, A
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(t_ns, 10 ** 9)
        for _ in range(20):       # until answered (a best-effort subscription may drop it)
            pub.publish(msg)
            try:
                ros_utils.wait_for(lambda: t_ns in got, timeout=1.0, interval=0.002)
                return got[t_ns]
            except TimeoutError:
                ros_utils.assert_running(proc)
        raise AssertionError("the node did not answer")

    g, J, _ = pinocchio_static(Q)
    tau_ext = J.T @ F_TIP
    t0 = t_ns + 10 ** 7
    for _ in range(30):
        r = np.array(send(Q, g - tau_ext).effort)
    expected = -np.expm1(-50.0 * (t_ns - t0) * 1e-9) * tau_ext
    np.testing.assert_allclose(r, expected, rtol=0, atol=1e-9 * np.abs(tau_ext).max())
    for q in POSES:                       # the payload held at rest in six poses
        for _ in range(3):
            send(q, pinocchio_static(q)[0] + payload_torque(q))
    res = ros_utils.call_service(ros_node, EstimatePayload, "/gains/dynamics_node/estimate_payload",
                                 EstimatePayload.Request(frame="tool0", duration=0.175,
                                                         static_only=True), process=proc,
                                 timeout=60.0)  # the first estimate imports scipy.signal
    assert res.success, res.message
    assert res.payload.inertia.m == pytest.approx(PAYLOAD, rel=1e-6)
    com = res.payload.inertia.com
    np.testing.assert_allclose([com.x, com.y, com.z], PAYLOAD_COM, rtol=0, atol=1e-6)
