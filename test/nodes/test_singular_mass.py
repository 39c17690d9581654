"""dynamics_node with a URDF whose M(q) is singular everywhere (real process, real DDS).

The arm: the planar 2R plus a wrist roll about link2's axis carrying link3, whose centre
of mass is ON the roll axis and whose inertia tensor is zero (what a vendor hobby-arm URDF
with all-zero tensors gives): the roll moves no inertia, row and column 3 of M are zero.
The node must still publish g, C qd, M and J (references: Pinocchio), mark what needs
M^-1 as unavailable (empty Lambda and J M^-1 J^T, condition_number inf, near_singular),
say at load which joint and which link, say it on /diagnostics, and answer the services
the same way (g and M answered; effective inertia and forward dynamics refused naming
the joint)."""
from __future__ import annotations

import math
import threading

import numpy as np
import pinocchio as pin
import pytest
import ros_utils
from diagnostic_msgs.msg import DiagnosticArray
from sensor_msgs.msg import JointState

from manip_dynamics import robots
from manip_dynamics_interfaces import srv
from manip_dynamics_interfaces.msg import Dynamics

WRIST = """
  <joint name="wrist_roll" type="revolute">
    <parent link="link2"/>
    <child link="link3"/>
    <origin xyz="0.4 0 0" rpy="0 0 0"/>
    <axis xyz="1 0 0"/>
    <limit lower="-3.0" upper="3.0" effort="5.0" velocity="6.0"/>
  </joint>
  <link name="link3">
    <inertial>
      <origin xyz="0.05 0 0" rpy="0 0 0"/>
      <mass value="0.3"/>
      <inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/>
    </inertial>
  </link>
</robot>"""
NAMES = ["joint1", "joint2", "wrist_roll"]
Q, QD = np.array([0.3, 0.2, 0.1]), np.array([0.1, 0.2, 0.3])


def _pinocchio(path):
    """g, C qd, M, J (tool origin, root axes: LOCAL_WORLD_ALIGNED) from Pinocchio."""
    model = pin.buildModelFromUrdf(str(path))
    data = model.createData()
    g = pin.computeGeneralizedGravity(model, data, Q)
    c = pin.rnea(model, data, Q, QD, np.zeros(3)) - g
    M = pin.crba(model, data, Q)
    M = np.triu(M) + np.triu(M, 1).T
    pin.computeJointJacobians(model, data, Q)
    pin.framesForwardKinematics(model, data, Q)
    J = pin.getFrameJacobian(model, data, model.getFrameId("tool"), pin.LOCAL_WORLD_ALIGNED)
    return g, c, M, J


@pytest.mark.timeout(300)
def test_singular_mass_matrix_degrades_instead_of_going_silent(node_process, ros_node,
                                                               tmp_path):
    path = tmp_path / "hobby.urdf"
    path.write_text(open(robots.path("planar_2r"), encoding="utf-8").read()
                    .replace("</robot>", WRIST))
    proc = node_process(["manip_dynamics.nodes.dynamics_node", "--ros-args",
                         "-p", f"urdf_file:={path}", "-p", "tip_link:=tool"])
    diagnostics, lock = [], threading.Lock()
    ros_node.create_subscription(DiagnosticArray, "/diagnostics",
                                 lambda m: (lock.acquire(), diagnostics.append(m),
                                            lock.release()), 10)

    def state():
        msg = JointState(name=NAMES, position=Q.tolist(), velocity=QD.tolist())
        msg.header.stamp = ros_node.get_clock().now().to_msg()
        return msg

    got = []
    sub = ros_node.create_subscription(Dynamics, "dynamics_node/dynamics", got.append, 10)
    ros_utils.publish_until(ros_node, JointState, "joint_states", state,
                            until=lambda: len(got) > 0, timeout=120.0)
    ros_node.destroy_subscription(sub)
    msg = got[0]
    g, c, M, J = _pinocchio(path)
    assert list(msg.joint_names) == NAMES
    np.testing.assert_allclose(msg.gravity, g, rtol=0, atol=1e-12)
    np.testing.assert_allclose(msg.coriolis, c, rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.reshape(msg.mass_matrix, (3, 3)), M, rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.reshape(msg.jacobian, (6, 3)), J, rtol=0, atol=1e-12)
    assert abs(M[2, 2]) < 1e-15                  # the reference agrees: the roll moves nothing
    assert list(msg.effective_inertia) == [] and list(msg.inverse_effective_inertia) == []
    assert math.isinf(msg.condition_number) and msg.near_singular

    log = ros_utils.read_log(proc)
    said = [ln for ln in log.splitlines() if "M(q) is singular: joint 'wrist_roll'" in ln]
    assert len(said) == 1 and "give link 'link3'" in said[0], log

    def call(srv_type, name, **fields):
        return ros_utils.call_service(ros_node, srv_type, f"dynamics_node/{name}",
                                      srv_type.Request(**fields), timeout=30.0)

    res = call(srv.GetGravityTorques, "get_gravity_torques", position=Q.tolist())
    assert res.success and np.allclose(res.effort, g, rtol=0, atol=1e-12), res.message
    res = call(srv.GetMassMatrix, "get_mass_matrix", position=Q.tolist())
    assert res.success and np.allclose(np.reshape(res.mass_matrix, (3, 3)), M, atol=1e-12)
    res = call(srv.InverseDynamics, "inverse_dynamics", position=Q.tolist(),
               velocity=QD.tolist(), acceleration=[1.0, -1.0, 2.0])
    model = pin.buildModelFromUrdf(str(path))
    tau = pin.rnea(model, model.createData(), Q, QD, np.array([1.0, -1.0, 2.0]))
    assert res.success and np.allclose(res.effort, tau, rtol=0, atol=1e-12), res.message
    for srv_type, name, fields in [
            (srv.GetEffectiveInertia, "get_effective_inertia", dict(frame="tool")),
            (srv.ForwardDynamics, "forward_dynamics",
             dict(velocity=QD.tolist(), effort=[0.0, 0.0, 0.0]))]:
        res = call(srv_type, name, position=Q.tolist(), **fields)
        assert not res.success and "'wrist_roll'" in res.message, res.message

    ros_utils.wait_for(lambda: any("wrist_roll" in s.message for m in list(diagnostics)
                                   for s in m.status), timeout=10.0)
    ros_utils.assert_running(proc)
