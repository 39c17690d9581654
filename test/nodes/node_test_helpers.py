"""What the dynamics-node tests share: its output topics and small message helpers.

Imported by the test modules beside it as ``from node_test_helpers import ...`` (pytest
puts a test file's folder on ``sys.path``).
"""
from __future__ import annotations

from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from visualization_msgs.msg import MarkerArray

from manip_dynamics_interfaces.msg import Dynamics

MODULE = "manip_dynamics.nodes.dynamics_node"

# the node's private output topics and their types
OUTPUTS = {
    "gravity_torques": JointState,
    "coriolis_torques": JointState,
    "gravity_command": Float64MultiArray,
    "dynamics": Dynamics,
    "inertia_markers": MarkerArray,
}


def stamp_ns(header) -> int:
    """A std_msgs/Header's stamp in integer nanoseconds (exact, for matching)."""
    return header.stamp.sec * 1_000_000_000 + header.stamp.nanosec


def keep_output(probe, topic: str, msg) -> None:
    """Store one output of the node on a probe (the caller holds ``probe.lock``):
    ``gravity_command`` and marker messages in arrival order (``probe.commands``,
    ``probe.markers``), the stamped outputs in ``probe.by_stamp[topic][stamp_ns]``."""
    if topic == "gravity_command":
        probe.commands.append(msg)
    elif topic == "inertia_markers":
        probe.markers.append(msg)
    else:
        probe.by_stamp[topic][stamp_ns(msg.header)] = msg


def param_msg(name, value, type_=None):
    """rcl_interfaces Parameter message; empty lists need their type spelled out."""
    if type_ is None:
        return Parameter(name, value=value).to_parameter_msg()
    return Parameter(name, type_, value).to_parameter_msg()
