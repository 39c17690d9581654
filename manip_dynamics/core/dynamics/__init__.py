"""The rigid-body engine: from a URDF to M, C, g, J, Lambda of every state.

Holds: robot descriptions from files, URDF or xacro (:mod:`.description`); the URDF parser
and its kinematic tree (:mod:`.urdf`); every inertia rule (:mod:`.inertia`); the body table
the kernels read (:mod:`.bodies`); the dynamics side file beside the URDF (armature,
friction, drive gains: :mod:`.side_file`); the frozen :class:`RobotModel` (:mod:`.model`), what it
returns (:mod:`.results`: DynamicsTerms, InertiaEllipsoid, the bundle's views), its argument
checks (:mod:`.checks`) and how it calls the kernels (:mod:`.launch`: thread count, direct
entry points); the numba kernels (:mod:`.kernels`).

May import: numpy, scipy, numba, :mod:`manip_dynamics.core.errors` and
:mod:`manip_dynamics.core.extras` (xacro). Nothing else of the package: contact,
identification, safety, equations and the nodes build on this folder, never the reverse.
"""
from .model import DynamicsTerms, InertiaEllipsoid, RobotModel
from .side_file import SideFile, load_side_file, side_file_beside, write_side_file

__all__ = ["RobotModel", "DynamicsTerms", "InertiaEllipsoid", "SideFile", "load_side_file",
           "side_file_beside", "write_side_file"]
