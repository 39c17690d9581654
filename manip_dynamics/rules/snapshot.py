"""The dynamics node's immutable state: one object, swapped atomically on any change.

Callbacks (joint_states, services, timers) read ``node.snapshot`` once at their start and
use only that object, so a parameter change or a new robot description can never be seen
half-applied. Nothing here imports rclpy.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from manip_dynamics.core.dynamics.model import RobotModel
from manip_dynamics.rules.contact_monitor import ObserverOptions


@dataclass(frozen=True)
class MarkerOptions:
    """How ``~/inertia_markers`` is drawn (see ``manip_dynamics.nodes.markers``)."""

    enabled: bool = True
    scale: float = 0.1          # ellipsoid size mapping factor (documented in markers.py)
    show_mass_matrix: bool = False  # also draw the joint-space mass matrix eigenvalues as bars
    alpha: float = 0.6


# the contact outputs' names in ``outputs.<name>.*`` (``Snapshot.contact_outputs``' order)
CONTACT_OUTPUTS = ("external_torques", "external_wrench", "contact")


@dataclass(frozen=True)
class OutputSwitch:
    """One per-state output's ``outputs.<name>.enabled`` and ``outputs.<name>.rate``
    (maximum rate [Hz]; 0 = every state)."""

    enabled: bool = True
    rate: float = 0.0


@dataclass(frozen=True)
class Snapshot:
    """Everything a callback needs, consistent with itself.

    model:              RobotModel with the node's gravity, friction and payload applied.
    tip_frame:          frame for the task-space terms (J, Lambda, markers).
    command_joints:     joint order of ``~/gravity_command`` (Float64MultiArray).
    damping:            damping of Lambda's inverse near singularities (see core docs).
    singular_condition: cond(J M^-1 J^T) above which the state is flagged near-singular.
    markers:            marker drawing options.
    observer:           the momentum observer's options (``observer.*`` parameters).
    drive_gain:         (n,) torque per unit of ``effort`` (parameter ``drive_gains``, else
                        the side file's), read-only; None when every gain is 1.
    contact_outputs:    the switches of ~/external_torques, ~/external_wrench, ~/contact
                        (``CONTACT_OUTPUTS`` order); not the observer's options: a change
                        keeps the observer running.
    """

    model: RobotModel
    tip_frame: str
    command_joints: tuple[str, ...]
    damping: float = 1e-3
    singular_condition: float = 1e6
    markers: MarkerOptions = field(default_factory=MarkerOptions)
    observer: ObserverOptions = field(default_factory=ObserverOptions)
    contact_outputs: tuple[OutputSwitch, ...] = (OutputSwitch(),) * len(CONTACT_OUTPUTS)
    drive_gain: Optional[np.ndarray] = field(default=None, compare=False)
