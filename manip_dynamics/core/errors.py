"""Error hierarchy of manip_dynamics.

::

    ManipDynamicsError                      base of everything raised on purpose
    ├── URDFError(ValueError)               a broken or unusable robot description
    │   └── UnsupportedJointError           floating / planar (or other unsupported) joint
    ├── InputError(ValueError)              wrong shape, non-finite value, bad joint names
    ├── UnknownFrameError(KeyError)         a frame (link) name the model does not know
    ├── SingularConfigurationError          J M^-1 J^T (or M) is singular at this state
    ├── NonFiniteResultError(ArithmeticError)  finite inputs whose result overflows to inf/NaN
    └── MissingDependencyError(ImportError)    an optional part's library is not installed
        └── MissingExtraError                  ... one that ``pip install "manip_dynamics[extra]"`` brings

Every result the core returns is finite except the documented ``+inf`` (condition
numbers, ellipsoid eigenvalues, effective masses): callers need not re-check.

Every message names the joint, link, argument or shape at fault.

``MasslessLinkWarning`` (a ``UserWarning``) is emitted once per parsed model, naming the
joints that move no mass and no inertia (M singular); massless frames are not warned about.
``InertiaWarning``: once per parsed model, the inertias kept as written or ignored
(:mod:`manip_dynamics.core.dynamics.inertia`).
"""


class ManipDynamicsError(Exception):
    """Base class of all errors raised by manip_dynamics on purpose."""


class URDFError(ManipDynamicsError, ValueError):
    """The URDF is broken or unusable (bad XML, missing link, cycle, bad inertia, ...)."""


class UnsupportedJointError(URDFError):
    """A joint type the model cannot represent (floating, planar, unknown)."""


class InputError(ManipDynamicsError, ValueError):
    """A call argument has the wrong shape, a non-finite value, or bad joint names."""


class UnknownFrameError(ManipDynamicsError, KeyError):
    """The frame (link) name is not part of the model."""

    def __str__(self):  # KeyError would print the repr of the message
        return str(self.args[0]) if self.args else ""


class SingularConfigurationError(ManipDynamicsError):
    """The requested quantity does not exist at this state (e.g. Lambda at a singularity)."""


class NonFiniteResultError(ManipDynamicsError, ArithmeticError):
    """A result overflowed to inf/NaN although every input was finite (e.g. qd = 1e200, a
    prismatic q = 1e300, gravity 1e308): the message names the largest entry of each state
    argument. Not an InputError: each input is valid on its own."""


class MissingDependencyError(ManipDynamicsError, ImportError):
    """An optional part of the package needs a library that is not installed (ROS 2 for the
    nodes); the one-line message says what needs it and how to get it. An ImportError, so
    ``except ImportError`` still catches it; ``name`` is the missing module."""


class MissingExtraError(MissingDependencyError):
    """The missing library comes with one of the package's pip extras: the message ends in
    ``pip install "manip_dynamics[<extra>]"`` (:mod:`manip_dynamics.core.extras`)."""


class MasslessLinkWarning(UserWarning):
    """Joints that move no mass and no inertia (nothing below them has an <inertial>): their
    row of M(q) is zero, M is singular."""


class InertiaWarning(UserWarning):
    """Link inertias loaded as written although no rigid body has them (principal moments
    violating the triangle inequality I3 <= I1 + I2, or a negative moment negligible at the
    robot's scale), or ignored (links welded to the fixed root). Common in exported URDFs;
    see :mod:`manip_dynamics.core.dynamics.inertia`."""


__all__ = [
    "ManipDynamicsError",
    "URDFError",
    "UnsupportedJointError",
    "InputError",
    "UnknownFrameError",
    "SingularConfigurationError",
    "NonFiniteResultError",
    "MissingDependencyError",
    "MissingExtraError",
    "MasslessLinkWarning",
    "InertiaWarning",
]
