"""computed_torque_controller as a real process over real DDS: its parameter table on the
wire, and per-joint parameters judged against the joints of each Dynamics message.

The expected torques are the control law written out here with numpy, from the terms the
test itself puts in the Dynamics message (the controller owns no model)."""
import numpy as np
import ros_utils
from rcl_interfaces.srv import SetParameters
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState

from manip_dynamics_interfaces.msg import Dynamics

CONTROLLER = "manip_dynamics.nodes.computed_torque_controller"
Q, QD = np.array([0.1, -0.2]), np.array([0.3, 0.0])
G, C = np.array([1.0, 2.0]), np.array([0.5, -0.5])
M = np.array([[2.0, 0.1], [0.1, 1.0]])


def _dynamics(node):
    msg = Dynamics(joint_names=["a", "b"], position=Q.tolist(), velocity=QD.tolist(),
                   gravity=G.tolist(), coriolis=C.tolist(), mass_matrix=M.ravel().tolist())
    msg.header.stamp = node.get_clock().now().to_msg()
    return msg


def _set(ros_node, **values):
    request = SetParameters.Request(
        parameters=[Parameter(k, value=v).to_parameter_msg() for k, v in values.items()])
    response = ros_utils.call_service(
        ros_node, SetParameters, "computed_torque_controller/set_parameters", request)
    return [r.successful for r in response.results], [r.reason for r in response.results]


def _command_equals(ros_node, expected):
    """Publish Dynamics until an effort_command equal to ``expected`` comes back."""
    seen = []
    sub = ros_node.create_subscription(JointState, "effort_command", seen.append, 10)
    try:
        ros_utils.publish_until(
            ros_node, Dynamics, "dynamics_node/dynamics", lambda: _dynamics(ros_node),
            until=lambda: any(np.allclose(m.effort, expected, rtol=0, atol=1e-12)
                              for m in list(seen)), timeout=15.0)
    finally:
        ros_node.destroy_subscription(sub)


def test_table_on_the_wire_and_per_joint_lengths(node_process, ros_node):
    from manip_dynamics.nodes.computed_torque_controller import PARAMETERS

    proc = node_process([CONTROLLER, "--ros-args", "-p", "mode:=computed_torque",
                         "-p", "kp:=[1.0, 2.0, 3.0]", "-p", "home:=[0.0, 0.0]",
                         "-p", "amplitude:=[0.0]"])
    ros_utils.assert_descriptors_match_table(ros_node, "computed_torque_controller",
                                             PARAMETERS)
    # kp has 3 values for the message's 2 joints: gravity compensation only, and said so.
    _command_equals(ros_node, G)
    ros_utils.wait_for(lambda: "kp: expected 1 or 2 values (joints a, b)"
                       in ros_utils.read_log(proc), timeout=10.0)
    # One kp for all joints: tau = M (Kd (0 - qd) + Kp (home - q)) + C qd + g, Kd = 20.
    assert _set(ros_node, kp=[4.0])[0] == [True]
    _command_equals(ros_node, M @ (20.0 * (0.0 - QD) + 4.0 * (0.0 - Q)) + C + G)
    ok, reasons = _set(ros_node, kd=[-1.0], mode="fast")
    assert ok == [False, False], reasons
    assert reasons[0].startswith("kd: element 0 (-1.0) must be >= 0"), reasons
    assert "not one of" in reasons[1], reasons
    ros_utils.assert_running(proc)


def test_mode_off_as_yaml_reads_it(node_process, ros_node):
    """``-p mode:=off`` and ``ros2 param set ... mode off`` both arrive as the boolean false
    (YAML 1.1): the controller takes them as mode 'off' (tau = 0); a boolean true (no
    mode is 'on') is refused, at start-up with a hint about YAML booleans, not doubles."""
    proc = node_process([CONTROLLER, "--ros-args", "-p", "mode:=off"])
    _command_equals(ros_node, np.zeros(2))
    assert _set(ros_node, mode="gravity") == ([True], [""])
    _command_equals(ros_node, G)
    ok, reasons = _set(ros_node, mode=False)            # what `ros2 param set` sends for off
    assert ok == [True], reasons
    _command_equals(ros_node, np.zeros(2))
    assert _set(ros_node, mode=True)[0] == [False]
    ros_utils.assert_running(proc)
    bad = node_process([CONTROLLER, "--ros-args", "-p", "mode:=on"])
    assert bad.wait(timeout=30) == 2
    log = ros_utils.read_log(bad)
    assert "mode must be of type STRING: got the boolean true" in log, log
    assert "off, gravity, computed_torque, excitation" in log and "decimal" not in log, log
