"""ROS-free dynamics core: URDF parsing, the frozen RobotModel, numba algorithms."""
from .errors import (InputError, ManipDynamicsError, InertiaWarning, MasslessLinkWarning,
                     MissingDependencyError, MissingExtraError, NonFiniteResultError,
                     SingularConfigurationError, UnknownFrameError, UnsupportedJointError,
                     URDFError)
from .model import DynamicsTerms, InertiaEllipsoid, RobotModel
from .observer import MomentumObserver, ObserverStep
from .contact import (ArmTopology, ContactDetector, ContactPoint, ContactState, WrenchEstimate,
                      arm_topology, contact_point, tip_wrench)
from .regressor import (BaseParameters, base_parameters, frame_regressor,
                        joint_torque_regressor, model_parameters, parameter_names)
from .identification import Identification, Samples, filter_recording, identified_urdf, identify
from .excitation import FourierTrajectory, optimize_excitation
from .payload import PayloadEstimate, estimate_payload

__all__ = ["RobotModel", "DynamicsTerms", "InertiaEllipsoid", "ManipDynamicsError",
           "URDFError", "UnsupportedJointError", "InputError", "UnknownFrameError",
           "SingularConfigurationError", "NonFiniteResultError", "MasslessLinkWarning", "InertiaWarning"]
__all__ += ["MissingDependencyError", "MissingExtraError"]
__all__ += ["MomentumObserver", "ObserverStep", "ContactDetector", "ContactState",
            "ContactPoint", "WrenchEstimate", "ArmTopology", "arm_topology", "contact_point",
            "tip_wrench"]
__all__ += ["BaseParameters", "base_parameters", "frame_regressor", "joint_torque_regressor",
            "model_parameters", "parameter_names", "Identification", "Samples",
            "filter_recording", "identified_urdf", "identify", "FourierTrajectory",
            "optimize_excitation", "PayloadEstimate", "estimate_payload"]
