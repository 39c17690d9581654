"""Optional parts of the package: which library each needs and which pip extra brings it.

``import manip_dynamics`` (the core) needs only numpy, scipy and numba. Every other library
is imported where it is used, through :func:`import_extra`, which turns "not installed"
into a one-line :class:`~manip_dynamics.core.errors.MissingExtraError` naming the extra::

    manip_dynamics.sim.scene needs mujoco, which is not installed: pip install "manip_dynamics[sim]"

:data:`EXTRAS` maps each optional top-level import name to its extra; setup.py's
``extras_require`` lists each extra's distributions and version ranges
(test/test_packaging.py checks that the two agree). The ROS 2 parts (the nodes, the
demos) need rclpy and the generated ``manip_dynamics_interfaces``, which no pip extra
provides: :func:`require_ros` says so in one line.

Standard library only; the optional libraries are imported on demand, never here.
"""
from __future__ import annotations

import importlib
import importlib.util

from .errors import MissingDependencyError, MissingExtraError

#: optional top-level import name -> the extra that installs it
EXTRAS = {
    "mujoco": "sim",                 # manip_dynamics.sim: the MuJoCo plant and its pictures
    "matplotlib": "plots",           # the demos' and the identify CLI's figures
    "PIL": "plots",                  # (Pillow, a matplotlib dependency): the demo's GIF
    "mcap": "identification",        # core.identification.recording: rosbag2 MCAP files
    "mcap_ros2": "identification",
    "cvxpy": "identification",       # the semidefinite identification fit
    "clarabel": "identification",
    "scs": "identification",
    "xacro": "xacro",                # xacro robot descriptions
    "sympy": "equations",            # closed-form equations of motion
    "yaml": "safety",                # (PyYAML) the ISO/TS 15066 body model of manip_dynamics.safety
}

#: what the ROS 2 parts import that only a ROS 2 environment provides
ROS_MODULES = ("rclpy", "manip_dynamics_interfaces")


def install_hint(extra):
    """The command that installs ``extra``: pip install "manip_dynamics[<extra>]"."""
    return f'pip install "manip_dynamics[{extra}]"'


def missing_extra(needed_by, name):
    """The one-line MissingExtraError for the optional top-level package ``name``."""
    return MissingExtraError(f"{needed_by} needs {name}, which is not installed: "
                             f"{install_hint(EXTRAS[name])}", name=name)


def import_extra(name, needed_by):
    """The module ``name`` (``importlib.import_module``), whose top-level package is one of
    :data:`EXTRAS`. If that package is not installed: MissingExtraError, one line,
    ``<needed_by> needs <package>, which is not installed: pip install "manip_dynamics[<extra>]"``.

    A ModuleNotFoundError for any other module (a submodule or a dependency missing from an
    installed package: a broken installation) propagates unchanged."""
    top = name.partition(".")[0]
    EXTRAS[top]                      # (KeyError: not an optional package)
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != top:          # a module missing inside an installed package
            raise
        raise missing_extra(needed_by, top) from None


def require_extras(needed_by, *names):
    """Raise the MissingExtraError of :func:`import_extra` for the first of ``names`` (top-level
    packages in :data:`EXTRAS`) that is not installed; imports none of them (a program
    checks up front, before it imports them in the order it needs, e.g. MuJoCo after
    ``MUJOCO_GL`` is chosen)."""
    for name in names:
        if not _installed(name):
            raise missing_extra(needed_by, name)


def _installed(name):
    """Whether ``name`` can be found by the import system (without importing it)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def require_ros(needed_by):
    """Raise MissingDependencyError (one line) unless rclpy and manip_dynamics_interfaces
    can be imported; imports neither."""
    missing = [m for m in ROS_MODULES if not _installed(m)]
    if missing:
        raise MissingDependencyError(
            f"{needed_by} needs ROS 2 ({' and '.join(missing)} not found): build this package "
            "in a ROS 2 workspace with colcon, or run `make setup` in its repository "
            "(README: \"In a ROS 2 workspace (colcon)\")", name=missing[0])
