"""Helper node for test_smoke_ros.py (run as its own process).

* subscribes ``joint_states`` (sensor_msgs/JointState) and republishes every message on
  ``joint_states_echo`` with the same names and positions and ``effort = 2 * position``;
* serves ``get_mass_matrix`` (manip_dynamics_interfaces/srv/GetMassMatrix) with a fixed
  rule: ``mass_matrix = diag(1 + i)`` (row-major, n x n for the n requested names),
  ``eigenvalues = 1..n``, ``condition_number = n``, ``joint_names`` echoed.

Prints ``READY`` once everything is created. Stops cleanly on SIGINT.
"""
import sys

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from sensor_msgs.msg import JointState

from manip_dynamics_interfaces.srv import GetMassMatrix


class Echo(Node):
    def __init__(self):
        super().__init__("joint_state_echo")
        self.pub = self.create_publisher(JointState, "joint_states_echo", 10)
        self.create_subscription(JointState, "joint_states", self.on_joint_state, 10)
        self.create_service(GetMassMatrix, "get_mass_matrix", self.on_mass_matrix)

    def on_joint_state(self, msg):
        out = JointState()
        out.header = msg.header
        out.name = list(msg.name)
        out.position = list(msg.position)
        out.effort = [2.0 * p for p in msg.position]
        self.pub.publish(out)

    def on_mass_matrix(self, request, response):
        n = len(request.joint_names)
        response.success = n > 0 and len(request.position) == n
        response.message = "" if response.success else "joint_names/position mismatch"
        response.joint_names = list(request.joint_names)
        response.mass_matrix = [float(1 + i) if i == j else 0.0 for i in range(n) for j in range(n)]
        response.eigenvalues = [float(1 + i) for i in range(n)]
        response.condition_number = float(n)
        return response


def main():
    rclpy.init(args=sys.argv)
    node = Echo()
    print("READY", flush=True)
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
