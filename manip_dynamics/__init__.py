"""manip_dynamics: rigid-body dynamics of ROS manipulators from their URDF.

The core (:mod:`manip_dynamics.core`) is ROS-free; importing this package never imports
rclpy. ROS 2 nodes live in :mod:`manip_dynamics.nodes`.
"""
from .core import ContactDetector, MomentumObserver, contact_point, tip_wrench
from .core import (DynamicsTerms, InertiaEllipsoid, InputError, ManipDynamicsError,
                   InertiaWarning, MasslessLinkWarning, MissingDependencyError,
                   MissingExtraError, NonFiniteResultError, RobotModel, SingularConfigurationError,
                   UnknownFrameError, UnsupportedJointError, URDFError)
# identification API (``identify`` itself stays in manip_dynamics.core: the package name
# ``manip_dynamics.identify`` is the CLI module, python -m manip_dynamics.identify)
from .core import (BaseParameters, FourierTrajectory, Identification, PayloadEstimate,
                   Samples, base_parameters, estimate_payload, filter_recording,
                   frame_regressor, identified_urdf, joint_torque_regressor,
                   model_parameters, optimize_excitation, parameter_names)

__all__ = ["RobotModel", "DynamicsTerms", "InertiaEllipsoid", "ManipDynamicsError",
           "URDFError", "UnsupportedJointError", "InputError", "UnknownFrameError",
           "SingularConfigurationError", "NonFiniteResultError", "MasslessLinkWarning", "InertiaWarning"]
__all__ += ["MissingDependencyError", "MissingExtraError"]
__all__ += ["MomentumObserver", "ContactDetector", "tip_wrench", "contact_point"]
__all__ += ["BaseParameters", "base_parameters", "frame_regressor", "joint_torque_regressor",
            "model_parameters", "parameter_names", "Identification", "Samples",
            "filter_recording", "identified_urdf", "FourierTrajectory",
            "optimize_excitation", "PayloadEstimate", "estimate_payload"]
