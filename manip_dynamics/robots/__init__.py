"""Embedded default robots: URDF files shipped inside the package.

    >>> from manip_dynamics import robots
    >>> robots.names()
    ('panda', 'planar_2r', 'planar_rp')
    >>> robots.path('planar_2r').endswith('planar_2r.urdf')
    True

``planar_2r``  the seeds' planar 2R arm, two uniform rods, moving in the x-z plane.
``planar_rp``  the seeds' RP arm (revolute theta, prismatic r), in the x-z plane.
``panda``      7-DOF arm: Franka Emika Panda kinematics and limits (Franka's published DH
               table) with the link inertias identified by Gaz et al., IEEE RA-L 2019.
Each file's header comment gives its numbers, frames and sources (see docs/simulation.md).
Standard library only: nothing here imports numpy or rclpy.
"""
from __future__ import annotations

import os

_DIR = os.path.dirname(os.path.abspath(__file__))
_SUFFIX = '.urdf'


def names() -> tuple[str, ...]:
    """The embedded robots' names, sorted."""
    return tuple(sorted(f[:-len(_SUFFIX)] for f in os.listdir(_DIR) if f.endswith(_SUFFIX)))


def path(name: str) -> str:
    """Absolute path of the embedded robot ``name``'s URDF file.

    Raises KeyError naming the known robots if ``name`` is not one of them.
    """
    known = names()
    if name not in known:
        raise KeyError(f'unknown robot {name!r}; embedded robots: {", ".join(known)}')
    return os.path.join(_DIR, name + _SUFFIX)


def read(name: str) -> str:
    """The URDF text of the embedded robot ``name`` (see ``path``)."""
    with open(path(name), encoding='utf-8') as f:
        return f.read()
