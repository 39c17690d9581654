"""ROS-free rules of the nodes (unit-tested without rclpy)."""
