"""ROS-free core: the rigid-body engine, contact, identification, and what they share.

Holds one folder per concern:

* :mod:`.dynamics`        URDF and xacro reading, the body table, the inertia policy, the
                          frozen :class:`RobotModel` and its numba kernels (``dynamics.kernels``:
                          spatial algebra, kinematics, the recursive passes, dense linear
                          algebra, the per-state bundle);
* :mod:`.contact`         the momentum observer (r ~ tau_ext) and contact awareness from it
                          (tip wrench, detection, isolation, contact point);
* :mod:`.identification`  the regressor, base parameters, excitation, the least-squares and
                          physically consistent fits, payload estimation, and the rosbag2
                          MCAP recordings they read;
* :mod:`.errors`, :mod:`.extras`  shared by all: the error hierarchy, optional libraries.

May import: numpy, scipy, numba, and optional libraries only through :mod:`.extras`
(xacro, cvxpy, mcap). Never rclpy, nor :mod:`manip_dynamics.rules`, ``.nodes``, ``.sim``,
``.safety``, ``.equations`` or ``.demos`` (test/test_layering.py). Inside: ``dynamics``
imports only errors and extras; ``contact`` and ``identification`` import ``dynamics``,
never each other. docs/architecture.md has the picture.
"""
from .errors import (InputError, ManipDynamicsError, InertiaWarning, MasslessLinkWarning,
                     MissingDependencyError, MissingExtraError, NonFiniteResultError,
                     SingularConfigurationError, UnknownFrameError, UnsupportedJointError,
                     URDFError)
from .dynamics import DynamicsTerms, InertiaEllipsoid, RobotModel
from .contact import (ArmTopology, ContactDetector, ContactPoint, ContactState, MomentumObserver,
                      ObserverStep, WrenchEstimate, arm_topology, contact_point, tip_wrench)
from .identification import (BaseParameters, FourierTrajectory, Identification, PayloadEstimate,
                             Samples, base_parameters, estimate_payload, filter_recording,
                             frame_regressor, identified_urdf, identify, joint_torque_regressor,
                             model_parameters, optimize_excitation, parameter_names)

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
