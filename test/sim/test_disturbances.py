"""arm_simulator's disturbances with ground truth, over real DDS (one simulator process).

A wrench (f, t) applied through ``arm_simulator/apply_wrench`` at point p of a link must
appear on ``arm_simulator/external_torques`` as tau_ext = J_v(p)^T f + J_w^T t, with J
from OUR core at the q the truth message carries: J_v(p) = J_v(o) - [p - o]x J_w for the
link origin o (root axes). MuJoCo computes it with its own Jacobian (mj_applyFT), so the
agreement (1e-9 relative to |tau_ext|; measured ~1e-15) checks both the service's frame
conventions and the truth topic. A contact of the arm with an obstacle shows up there too.
"""
import numpy as np
import pytest
import ros_utils
from rcl_interfaces.srv import SetParameters
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState

from manip_dynamics import RobotModel, robots
from manip_dynamics_interfaces.srv import ApplyWrench

pytestmark = pytest.mark.filterwarnings("ignore::manip_dynamics.MasslessLinkWarning")
SIM = "manip_dynamics.nodes.arm_simulator"
READY = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]
TRUTH = "arm_simulator/external_torques"


def _wrench_client(ros_node):
    """An apply_wrench client made right after the simulator is started, long before the
    first call: a request is sent once (applying a wrench is not idempotent: a resent
    request would apply it again), so discovery must be over by then (ros_utils.call_service)."""
    return ros_node.create_client(ApplyWrench, "arm_simulator/apply_wrench")


def _wrench(ros_node, client, link, force, torque, point, duration):
    request = ApplyWrench.Request(link=link, force=force, torque=torque, point=point,
                                  duration=duration)
    return ros_utils.call_service(ros_node, ApplyWrench, "arm_simulator/apply_wrench", request,
                                  timeout=30.0, resend_every=None, client=client)


def _expected(model, q, link, force, torque, point):
    """J(p)^T [f; t] from the core: the wrench at point p (link frame) of ``link``."""
    X = model.frame_pose(q, link)
    J = model.jacobian(q, link)
    lever = X[:3, :3] @ np.asarray(point)           # p - o in root axes
    Jv = J[:3] - np.cross(lever, J[3:].T).T         # v_p = v_o + w x (p - o)
    return Jv.T @ np.asarray(force) + J[3:].T @ np.asarray(torque)


def test_a_known_wrench_shows_on_the_truth_topic_as_J_transpose_F(node_process, ros_node):
    node_process([SIM, "--ros-args", "-p", "robot:=panda", "-p", "floor:=false",
                  "-p", f"initial_positions:={READY}"])
    client = _wrench_client(ros_node)
    ros_utils.wait_for_message(ros_node, JointState, TRUTH, timeout=60.0)
    model = RobotModel.from_urdf_file(robots.path("panda"))
    link, force, torque, point = "panda_link6", [3.0, -2.0, 5.0], [0.2, 0.1, -0.3], [0.05, 0.0, 0.1]

    response = _wrench(ros_node, client, link, force, torque, point, 0.5)
    assert response.success, response.message
    # Numbers printed as numbers (not np.float64(3.0), which a list of the request's
    # numpy array fields prints).
    assert response.message == ("applying [3.0, -2.0, 5.0] N, [0.2, 0.1, -0.3] N*m at "
                                 "panda_link6 for 0.5 s"), response.message
    msgs = ros_utils.collect_messages(ros_node, JointState, TRUTH, 40, timeout=20.0)
    acting = [m for m in msgs if np.any(np.abs(m.effort) > 1e-6)]
    assert len(acting) >= 10                        # 0.5 s at 100 Hz, some already gone
    moved = np.ptp([m.position for m in acting], axis=0).max()
    assert moved > 1e-3                             # the arm falls meanwhile: q changes
    for m in acting:
        expected = _expected(model, np.array(m.position), link, force, torque, point)
        assert np.abs(expected).max() > 0.5
        np.testing.assert_allclose(m.effort, expected, rtol=0, atol=1e-9 * np.abs(expected).max())
    # The wrench ends after its duration: tau_ext back to zero (no floor, no contact;
    # the joint-limit rows it may hit are not external).
    ros_utils.wait_for_message(ros_node, JointState, TRUTH, timeout=10.0,
                               predicate=lambda m: np.all(np.abs(m.effort) == 0.0))


def test_bad_wrench_requests_are_refused_with_the_reason(node_process, ros_node):
    node_process([SIM, "--ros-args", "-p", "robot:=planar_2r", "-p", "floor:=false"])
    client = _wrench_client(ros_node)
    ros_utils.wait_for_message(ros_node, JointState, TRUTH, timeout=60.0)
    response = _wrench(ros_node, client, "no_such_link", [1.0, 0, 0], [0, 0, 0], [0, 0, 0], 0.1)
    assert not response.success and "no_such_link" in response.message
    assert "link2" in response.message                     # the known links are listed
    response = _wrench(ros_node, client, "link2", [float("nan"), 0, 0], [0, 0, 0], [0, 0, 0], 0.1)
    assert not response.success and "finite" in response.message


def test_contact_with_the_obstacle_is_external_torque(node_process, ros_node):
    """The 2R released above a box falls onto it: tau_ext becomes non-zero (contact rows of
    efc_J^T efc_force), with no wrench applied, and the arm comes to rest on it."""
    node_process([SIM, "--ros-args", "-p", "robot:=planar_2r", "-p", "floor:=false",
                  "-p", "initial_positions:=[0.0, 0.0]",
                  "-p", "obstacle_size:=[0.1, 0.1, 0.05]",
                  "-p", "obstacle_position:=[0.5, 0.0, -0.3]"])
    hit = ros_utils.wait_for_message(ros_node, JointState, TRUTH, timeout=30.0,
                                     predicate=lambda m: np.abs(m.effort).max() > 1.0)
    assert np.all(np.isfinite(hit.effort))
    # Resting on the box: tau_ext balances gravity and friction, g(q) - tau_ext ~ 0 at rest.
    model = RobotModel.from_urdf_file(robots.path("planar_2r"))
    rest = ros_utils.wait_for_message(
        ros_node, JointState, "joint_states", timeout=30.0,
        predicate=lambda m: np.abs(m.velocity).max() < 1e-3)
    truth = ros_utils.wait_for_message(ros_node, JointState, TRUTH, timeout=5.0)
    g = model.gravity_torques(np.array(rest.position))
    assert np.abs(np.array(truth.effort) - g).max() < 0.2 + 0.05 * np.abs(g).max()
