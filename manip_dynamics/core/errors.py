"""Error hierarchy of manip_dynamics.

::

    ManipDynamicsError                      base of everything raised on purpose
    ├── URDFError(ValueError)               a broken or unusable robot description
    │   └── UnsupportedJointError           floating / planar (or other unsupported) joint
    ├── InputError(ValueError)              wrong shape, non-finite value, bad joint names
    ├── UnknownFrameError(KeyError)         a frame (link) name the model does not know
    ├── SingularConfigurationError          J M^-1 J^T (or M) is singular at this state
    └── NonFiniteResultError(ArithmeticError)  finite inputs whose result overflows to inf/NaN

Every result the core returns is finite except the documented ``+inf`` (condition
numbers, ellipsoid eigenvalues, effective masses): callers need not re-check.

Every message names the joint, link, argument or shape at fault.

``MasslessLinkWarning`` (a ``UserWarning``) is emitted once per parsed model, naming
all links that have no ``<inertial>`` element (they are treated as massless).
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


class MasslessLinkWarning(UserWarning):
    """Links without <inertial> were treated as massless."""


class InertiaWarning(UserWarning):
    """Link inertias whose principal moments violate the triangle inequality
    (I3 <= I1 + I2): no rigid body has them, but they are positive semi-definite, so M(q)
    stays positive (semi-)definite; they are loaded as given. Common in exported URDFs."""


__all__ = [
    "ManipDynamicsError",
    "URDFError",
    "UnsupportedJointError",
    "InputError",
    "UnknownFrameError",
    "SingularConfigurationError",
    "NonFiniteResultError",
    "MasslessLinkWarning",
    "InertiaWarning",
]
