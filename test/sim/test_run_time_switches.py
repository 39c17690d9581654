"""Run-time parameter changes of arm_simulator with a controller closing the loop, across
processes: arm_simulator (MuJoCo Panda, friction off) -> dynamics_node -> controller in
gravity mode (tau = g(q)).

* Reset while running (``initial_positions`` set): the command held at that moment is
  g(q_old); applied for one period at q_new it would start the arm moving, and tau = g
  (no damping) never stops it (a drift of 6.7 rad within 1 s before the fix). The
  simulator drops it, publishes the reset state and waits for the answer to it, so at
  rest g_ours - g_mujoco ~ 1e-14 rad/s^2 is all that moves the arm: we require drift
  < 1e-6 rad over 1 s.
* lockstep switched on, then off: every joint_states stamp is later than the previous one
  (before the fix, switching on made them jump back by the time run so far, the node
  skipped every state as out of order, the command timed out and the arm fell); the hold
  stays within 1e-6 rad and the node publishes Dynamics throughout.
"""
import threading

import numpy as np
import pytest
import ros_utils
from sensor_msgs.msg import JointState

from manip_dynamics_interfaces.msg import Dynamics

Q0 = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]
Q1 = [0.3, -0.5, 0.2, -2.0, 0.1, 1.8, 0.5]       # g(Q1) differs from g(Q0) by ~10 N*m
_set = ros_utils.set_parameters_atomically


class Record:
    """Every joint_states (stamp ns, q) and Dynamics stamp while ``on``."""

    def __init__(self, ros_node):
        self.lock, self.on = threading.Lock(), False
        self.states, self.dynamics = [], []
        ros_node.create_subscription(JointState, "joint_states", self._state, 100)
        ros_node.create_subscription(Dynamics, "dynamics_node/dynamics", self._dynamics, 100)

    def _state(self, msg):
        with self.lock:
            if self.on:
                stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
                self.states.append((stamp, np.array(msg.position)))

    def _dynamics(self, msg):
        with self.lock:
            if self.on:
                self.dynamics.append(msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec)

    def over(self, action, count):
        """Record from just before ``action()`` until ``count`` more states arrived after it
        returned (the states during the call, a parameter service round trip that takes
        longer on a loaded machine, come on top: the reset or switch is judged on the
        ``count`` states after it, however long the call took)."""
        with self.lock:
            self.states, self.dynamics, self.on = [], [], True
        action()
        with self.lock:
            start = len(self.states)
        ros_utils.wait_for(lambda: len(self.states) >= start + count,
                           timeout=count * 0.1 + 20)
        with self.lock:
            self.on = False
            return list(self.states), list(self.dynamics)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_reset_and_lockstep_switches_while_a_controller_holds_the_arm(node_process, ros_node):
    sim = node_process(["manip_dynamics.nodes.arm_simulator", "--ros-args",
                        "-p", "robot:=panda", "-p", f"initial_positions:={Q0}",
                        "-p", "viscous_friction:=[0.0]", "-p", "coulomb_friction:=[0.0]",
                        # load-independent: the plant waits for the answer, never steps on
                        # (the default 0.2 s was exceeded once in CI: the arm fell)
                        "-p", "lockstep_timeout:=5.0", "-p", "command_timeout:=5.0"])
    node = node_process(["manip_dynamics.nodes.dynamics_node"])
    node_process(["manip_dynamics.nodes.computed_torque_controller", "--ros-args",
                  "-p", "mode:=gravity"])
    ros_utils.wait_for_message(ros_node, Dynamics, "dynamics_node/dynamics", timeout=300.0)
    # the loop closed: the controller's commands arrive (a reset before that is a reset
    # with nobody holding the arm)
    ros_utils.collect_messages(ros_node, JointState, "effort_command", 50, timeout=60.0)
    record = Record(ros_node)

    states, _ = record.over(lambda: _set(ros_node, "arm_simulator", initial_positions=Q1), 100)
    after = np.array([q for _, q in states if np.abs(q - Q1).max() < 0.5])
    reset_drift = np.abs(after - Q1).max()

    stamps, drift, published = [], [], []
    for lockstep in (True, False):
        states, dynamics = record.over(
            lambda: _set(ros_node, "arm_simulator", lockstep=lockstep), 100)
        stamps.append(np.diff([t for t, _ in states]))
        drift.append(np.abs(np.array([q for _, q in states]) - Q1).max())
        published.append(len(dynamics))
    print(f"after the reset: drift {reset_drift:.1e} rad over {len(after)} states; lockstep "
          f"on / off: drift {drift[0]:.1e} / {drift[1]:.1e} rad, smallest stamp step "
          f"{stamps[0].min() / 1e6:.2f} / {stamps[1].min() / 1e6:.2f} ms, Dynamics "
          f"{published[0]} / {published[1]} per 100 states")

    assert len(after) >= 90 and reset_drift < 1e-6
    assert all(step.min() > 0 for step in stamps)
    assert max(drift) < 1e-6
    assert min(published) >= 80                    # the node answered (nearly) every state
    assert "out of order" not in ros_utils.read_log(node)
    ros_utils.assert_running(sim)
