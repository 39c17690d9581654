"""manip_dynamics: rigid-body dynamics of ROS manipulators from their URDF.

The core (:mod:`manip_dynamics.core`) is ROS-free; importing this package never imports
rclpy. ROS 2 nodes live in :mod:`manip_dynamics.nodes`.
"""
from .core import ContactDetector, MomentumObserver, contact_point, tip_wrench
from .core import (DynamicsTerms, InertiaEllipsoid, InputError, ManipDynamicsError,
                   InertiaWarning, MasslessLinkWarning, NonFiniteResultError, RobotModel,
                   SingularConfigurationError,
                   UnknownFrameError, UnsupportedJointError, URDFError)

__all__ = ["RobotModel", "DynamicsTerms", "InertiaEllipsoid", "ManipDynamicsError",
           "URDFError", "UnsupportedJointError", "InputError", "UnknownFrameError",
           "SingularConfigurationError", "NonFiniteResultError", "MasslessLinkWarning", "InertiaWarning"]
__all__ += ["MomentumObserver", "ContactDetector", "tip_wrench", "contact_point"]
