"""End to end across processes: arm_simulator -> dynamics_node -> computed_torque_controller.

The plant is the planar 2R with NO friction, so nothing but the controller holds it up, and
the controller's model (the Dynamics message of the real dynamics_node, same URDF) is exact.
The simulator runs in lockstep (each step waits for the command answering the previous
state), so the numbers do not depend on CPU load; what remains is the 10 ms zero-order hold.

Bounds and why:
* released (tau = 0) from q = (0.3, 0.6): the frictionless double pendulum swings down and
  whips through several rad (measured ~4 rad); we require > 1.0 rad in 2 s.
* gravity compensation: at rest with tau = g(q) exactly, qdd = 0, so only round-off moves
  it (measured ~0); we allow 1e-3 rad over 4 s (~ what a single lost command could cause).
* computed torque, q_d = q0 + A (1 - cos 2 pi f t), A = (0.3, 0.4) rad, f = (0.3, 0.4) Hz,
  Kp = 100 s^-2, Kd = 20 s^-1: the command is one 10 ms period late, a feed-forward error of
  about M qddd_d T; through e'' + Kd e' + Kp e this gives ~ qddd_d T / Kp ~ 1e-3 rad
  (qddd_d = A w^3 <= 2.0 rad/s^3). We require RMS < 5e-3 rad and max < 2e-2 rad.
"""
import numpy as np
import ros_utils
from rcl_interfaces.srv import SetParametersAtomically
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState

from manip_dynamics_interfaces.msg import Dynamics

Q0 = [0.3, 0.6]


def _set(ros_node, node_name, **values):
    request = SetParametersAtomically.Request(
        parameters=[Parameter(k, value=v).to_parameter_msg() for k, v in values.items()])
    response = ros_utils.call_service(ros_node, SetParametersAtomically,
                                      f"{node_name}/set_parameters_atomically", request)
    assert response.result.successful, response.result.reason


class Trace:
    def __init__(self, ros_node):
        self.states, self.refs, self.recording = [], [], False
        ros_node.create_subscription(JointState, "joint_states", self._state, 100)
        ros_node.create_subscription(JointState, "computed_torque_controller/reference",
                                     self._ref, 100)

    @staticmethod
    def _key(msg):
        return (msg.header.stamp.sec, msg.header.stamp.nanosec)

    def _state(self, msg):
        if self.recording:
            self.states.append((self._key(msg), np.array(msg.position), np.array(msg.effort)))

    def _ref(self, msg):
        if self.recording:
            self.refs.append((self._key(msg), np.array(msg.position)))

    def run(self, ros_node, seconds, release, after_release=None):
        """Reset (paused), settle, release; record ``seconds`` of simulated time."""
        self.recording = False
        _set(ros_node, "arm_simulator", paused=True, initial_positions=Q0)
        release()
        ros_utils.collect_messages(ros_node, JointState, "joint_states", 20, timeout=10.0)
        self.states, self.refs = [], []
        self.recording = True
        _set(ros_node, "arm_simulator", paused=False)
        if after_release:
            after_release()
        ros_utils.wait_for(lambda: len(self.states) >= seconds * 100, timeout=seconds * 6 + 10)
        self.recording = False
        return np.array([s[1] for s in self.states])


def test_fall_hold_and_track(node_process, ros_node):
    node_process(["manip_dynamics.nodes.arm_simulator", "--ros-args",
                  "-p", "robot:=planar_2r", "-p", "initial_positions:=[0.3, 0.6]",
                  "-p", "viscous_friction:=[0.0]", "-p", "coulomb_friction:=[0.0]",
                  "-p", "lockstep:=true", "-p", "paused:=true"])
    node_process(["manip_dynamics.nodes.dynamics_node"])
    node_process(["manip_dynamics.nodes.computed_torque_controller", "--ros-args",
                  "-p", "mode:=gravity"])
    # Ready: the dynamics node got the URDF from the simulator and answers joint_states.
    ros_utils.wait_for_message(ros_node, Dynamics, "dynamics_node/dynamics", timeout=90.0)
    trace = Trace(ros_node)

    q = trace.run(ros_node, 2.0, lambda: _set(ros_node, "computed_torque_controller",
                                                mode="off"))
    fall = np.abs(q - Q0).max()
    q = trace.run(ros_node, 4.0, lambda: _set(ros_node, "computed_torque_controller",
                                                mode="gravity"))
    drift = np.abs(q - Q0).max()
    torque = np.array([s[2] for s in trace.states])
    q = trace.run(ros_node, 6.0, lambda: None, after_release=lambda: _set(
        ros_node, "computed_torque_controller", home=Q0, amplitude=[0.3, 0.4],
        frequency=[0.3, 0.4], mode="computed_torque"))
    states = dict((s[0], s[1]) for s in trace.states)
    err = np.array([r[1] - states[r[0]] for r in trace.refs if r[0] in states])
    print(f"fall {fall:.3f} rad, hold drift {drift:.2e} rad, tracking RMS "
          f"{np.sqrt(np.mean(err ** 2)):.2e} max {np.abs(err).max():.2e} rad "
          f"({len(err)} samples), moved {np.ptp(q, axis=0)}")

    assert fall > 1.0
    assert drift < 1e-3
    assert np.all(np.abs(torque).max(axis=0) > 0.5)     # it was the controller holding it
    assert len(err) > 400
    assert np.all(np.ptp(q, axis=0) > 0.4)               # the arm really moved
    assert np.sqrt(np.mean(err ** 2)) < 5e-3
    assert np.abs(err).max() < 2e-2
