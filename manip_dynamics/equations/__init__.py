"""Closed-form equations of motion of a small serial arm, from its URDF, with sympy.

Holds: the serial chain read from the core's URDF model (:mod:`.chain`), the Lagrangian /
Jacobian derivation of M(q), the Christoffel symbols, C(q, qd), g(q), friction and J^T F
(:mod:`.derive`) with sympy's derivatives and matrix products done faster (:mod:`.algebra`:
the same expressions), progress and the time limit (:mod:`.budget`), LaTeX that reads like the
seed notes (:mod:`.latex`), generated Python and dependency-free C (:mod:`.codegen`), and the
command line ``python -m manip_dynamics.equations`` (:mod:`.__main__`).

May import: numpy, sympy, and :mod:`manip_dynamics.core` (its URDF parser and model
structure, its error classes). Never rclpy or anything of ROS: it is a tool for a desk and
a microcontroller, not a node.
"""
from ..core.extras import require_extras

require_extras(__name__, "sympy")     # one line naming the extra, before sympy is imported
from .budget import Budget, DerivationTimeout  # noqa: E402
from .chain import MAX_JOINTS, Chain, ChainBody, serial_chain  # noqa: E402
from .derive import Equations, christoffel_symbols, derive  # noqa: E402

__all__ = ["Budget", "DerivationTimeout", "MAX_JOINTS", "Chain", "ChainBody", "serial_chain",
           "Equations", "christoffel_symbols", "derive"]
