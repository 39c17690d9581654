"""ROS-free dynamics core: URDF parsing, the frozen RobotModel, numba algorithms."""
from .errors import (InputError, ManipDynamicsError, InertiaWarning, MasslessLinkWarning,
                     NonFiniteResultError, SingularConfigurationError, UnknownFrameError, UnsupportedJointError,
                     URDFError)
from .model import DynamicsTerms, InertiaEllipsoid, RobotModel
from .observer import MomentumObserver, ObserverStep
from .contact import (ArmTopology, ContactDetector, ContactPoint, ContactState, WrenchEstimate,
                      arm_topology, contact_point, tip_wrench)

__all__ = ["RobotModel", "DynamicsTerms", "InertiaEllipsoid", "ManipDynamicsError",
           "URDFError", "UnsupportedJointError", "InputError", "UnknownFrameError",
           "SingularConfigurationError", "NonFiniteResultError", "MasslessLinkWarning", "InertiaWarning"]
__all__ += ["MomentumObserver", "ObserverStep", "ContactDetector", "ContactState",
            "ContactPoint", "WrenchEstimate", "ArmTopology", "arm_topology", "contact_point",
            "tip_wrench"]
