"""Thin rclpy nodes around the ROS-free core (``manip_dynamics.core``).

``dynamics_node``  joint_states -> gravity / Coriolis torques, dynamics, markers, services
                   (run: ``python -m manip_dynamics.nodes.dynamics_node``).

Importing this package imports nothing from rclpy; each node module does. Without ROS 2
(rclpy and the generated manip_dynamics_interfaces: a pip-installed manip_dynamics) it
raises MissingDependencyError, one line saying how to get them.
"""
from manip_dynamics.core.extras import require_ros

require_ros(__name__)
