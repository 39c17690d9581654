"""ROS-free dynamics core: URDF parsing, the frozen RobotModel, numba algorithms."""
from .errors import (InputError, ManipDynamicsError, InertiaWarning, MasslessLinkWarning,
                     NonFiniteResultError, SingularConfigurationError, UnknownFrameError, UnsupportedJointError,
                     URDFError)
from .model import DynamicsTerms, InertiaEllipsoid, RobotModel

__all__ = ["RobotModel", "DynamicsTerms", "InertiaEllipsoid", "ManipDynamicsError",
           "URDFError", "UnsupportedJointError", "InputError", "UnknownFrameError",
           "SingularConfigurationError", "NonFiniteResultError", "MasslessLinkWarning", "InertiaWarning"]
