"""Collaborative safety (ISO/TS 15066 power and force limiting), ROS-free.

Holds: the human body model of ISO/TS 15066 Annex A read from an editable YAML
(:mod:`.body_model`, ``iso_ts_15066.yaml``), the permissible transient-contact speed from
an effective mass (:mod:`.limits`), the effective mass of monitored points along their
motion (:mod:`.points`, computed for all points of a state in one numba pass:
:mod:`.kernel`), the per-state / per-trajectory assessment with the uniform speed scale
and retiming (:mod:`.assessment`), and a sampled motion's ratios over time, before and
after retiming, beside the standard's shortcut (:mod:`.along_motion`).

May import: numpy, scipy, numba (:mod:`.kernel`), PyYAML (to read a body model) and
:mod:`manip_dynamics.core`; never rclpy (the node's outputs live in :mod:`manip_dynamics.nodes`).
"""
from .along_motion import MotionSafety, safety_along_motion
from .assessment import SafetyMonitor, SafetyState, TrajectoryCheck, check_trajectory
from .body_model import DEFAULT_BODY_MODEL, BodyModel, BodyRegion
from .limits import (permissible_force, permissible_speed, reduced_mass,
                     simplified_robot_mass)
from .points import MonitoredPoint, PointKinematics, PointMotion, default_points

__all__ = ["MotionSafety", "safety_along_motion", "SafetyMonitor", "SafetyState",
           "TrajectoryCheck", "check_trajectory", "DEFAULT_BODY_MODEL", "BodyModel",
           "BodyRegion", "permissible_force", "permissible_speed", "reduced_mass",
           "simplified_robot_mass", "MonitoredPoint", "PointKinematics", "PointMotion",
           "default_points"]
