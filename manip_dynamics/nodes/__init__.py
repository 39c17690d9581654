"""Thin rclpy nodes around the ROS-free core (``manip_dynamics.core``).

``dynamics_node``  joint_states -> gravity / Coriolis torques, dynamics, markers, services
                   (run: ``python -m manip_dynamics.nodes.dynamics_node``).

Importing this package imports nothing from rclpy; each node module does.
"""
