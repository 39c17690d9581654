"""Core (ROS-free) tests: closed forms, Pinocchio, properties, energy."""
