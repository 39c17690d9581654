"""arm_simulator's parameters: one declarative table and the checks it implies (no ROS).

Each :class:`Param` row is the whole truth about a parameter: name, type, default,
description, numeric bounds (inclusive, ``None`` = open), allowed choices, the length an
array must have, and whether it is fixed at start-up (``read_only``). The node declares
the parameters from ``PARAMETERS`` (bounds become the descriptor's ranges) and judges
every value, at start-up and on each change, with :func:`check`.

Array lengths: ``'joints'`` = exactly one value per joint (model order); ``'one_or_joints'``
= one value for every joint or one per joint; an int = that many values; ``None`` = any.
An empty array means "unset" (ROS parameter files cannot express an empty list), which is
always allowed and means the default the description gives.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

PLANTS = ("mujoco", "model")
INTEGRATORS = {"mujoco": ("rk4", "implicitfast", "semi_implicit_euler"),
               "model": ("rk4", "semi_implicit_euler")}


@dataclass(frozen=True)
class Param:
    name: str
    type: str                        # bool | integer | double | string | double_array | string_array
    default: Any                     # None: unset (an empty array)
    description: str
    bounds: tuple | None = None      # (low, high) for a number or each array element
    choices: tuple = ()
    length: Any = None               # 'joints' | 'one_or_joints' | int | None
    read_only: bool = False


_POS = (0.0, None)
PARAMETERS: tuple[Param, ...] = (
    # ---- the plant (start-up only)
    Param("robot", "string", "panda", "Embedded robot to simulate (manip_dynamics.robots."
          "names()); ignored if urdf_file is set.", read_only=True),
    Param("urdf_file", "string", "", "Path of a URDF file to simulate instead of an embedded "
          "robot (meshes are not needed: collisions are capsules along the links).",
          read_only=True),
    Param("plant", "string", "mujoco", "mujoco: MuJoCo compiled from the URDF (limits, "
          "damping, friction loss, contact); model: RK4 on this package's own forward "
          "dynamics (the model-matched plant, no limits or contact).", choices=PLANTS,
          read_only=True),
    Param("publish_rate", "double", 100.0, "joint_states rate and control period (Hz).",
          bounds=(1e-3, 1e4), read_only=True),
    Param("sim_rate", "double", 1000.0, "Fixed steps per simulated second (Hz); rounded to a "
          "whole number of steps per publish period.", bounds=(1e-3, 1e6), read_only=True),
    Param("real_time_factor", "double", 1.0, "Simulated seconds per wall-clock second "
          "(the timer period is 1 / (publish_rate * real_time_factor)).",
          bounds=(1e-3, 100.0), read_only=True),
    Param("publish_robot_description", "bool", True, "Publish the (nominal) URDF on "
          "robot_description (transient local).", read_only=True),
    # ---- the scene (MuJoCo plant; start-up only)
    Param("floor", "bool", True, "A floor plane under the robot (MuJoCo plant).",
          read_only=True),
    Param("floor_height", "double", 0.0, "Height of the floor in the root frame (m).",
          bounds=(-100.0, 100.0), read_only=True),
    Param("collision_radius", "double", 0.04, "Radius (m) of the capsules along the links.",
          bounds=(1e-4, 1.0), read_only=True),
    Param("obstacle_size", "double_array", None, "Half sizes (m) of an obstacle box; unset: "
          "no obstacle.", bounds=(1e-4, 100.0), length=3, read_only=True),
    Param("obstacle_position", "double_array", None, "Centre of the obstacle in the root "
          "frame (m); unset: (0.5, 0, 0.2).", bounds=(-100.0, 100.0), length=3,
          read_only=True),
    Param("obstacle_rpy", "double_array", None, "Roll, pitch, yaw of the obstacle (rad); "
          "unset: 0.", bounds=(-10.0, 10.0), length=3, read_only=True),
    # ---- the plant's truth differing from the URDF (identification work; start-up only)
    Param("mass_factors", "double_array", None, "Scale the plant's link masses (and inertia "
          "tensors) by these factors: one for every link or one per joint (its child link); "
          "the published URDF stays nominal.", bounds=(1e-3, 1e3), length="one_or_joints",
          read_only=True),
    Param("com_factors", "double_array", None, "Scale the plant's centres of mass (offset "
          "from the link origin) by these factors, like mass_factors.", bounds=(-1e3, 1e3),
          length="one_or_joints", read_only=True),
    Param("payload_link", "string", "", "Link carrying an unknown payload in the plant "
          "(''= none).", read_only=True),
    Param("payload_mass", "double", 0.0, "Payload mass (kg).", bounds=(0.0, 1e4),
          read_only=True),
    Param("payload_com", "double_array", None, "Payload centre of mass in the link frame "
          "(m); unset: the link origin.", bounds=(-100.0, 100.0), length=3, read_only=True),
    Param("payload_radius", "double", 0.05, "Payload inertia: a solid sphere of this radius "
          "(m).", bounds=(1e-4, 10.0), read_only=True),
    Param("noise_seed", "integer", 0, "Seed of the measurement noise.", read_only=True),
    # ---- run time
    Param("integrator", "string", "rk4", "Fixed-step method: rk4 (both plants), "
          "implicitfast (MuJoCo), semi_implicit_euler (both).",
          choices=tuple(sorted(set(INTEGRATORS["mujoco"]) | set(INTEGRATORS["model"])))),
    Param("initial_positions", "double_array", None, "Initial q (rad or m) in model order; "
          "unset: 0 clipped into the limits. Setting it at run time resets the arm.",
          length="joints"),
    Param("initial_velocities", "double_array", None, "Initial qd; unset: zeros. Setting it "
          "at run time resets the arm.", length="joints"),
    Param("viscous_friction", "double_array", None, "Viscous friction (N*m*s/rad, N*s/m); "
          "unset: the URDF <dynamics damping>.", bounds=_POS, length="one_or_joints"),
    Param("coulomb_friction", "double_array", None, "Coulomb friction (N*m, N): MuJoCo's "
          "friction loss, or a tanh in the model plant; unset: the URDF <dynamics friction>.",
          bounds=_POS, length="one_or_joints"),
    Param("coulomb_velocity", "double", 0.1, "Model plant only: width (rad/s, m/s) of the "
          "tanh smoothing Coulomb friction.", bounds=(1e-9, 1e3)),
    Param("noise_position", "double", 0.0, "Standard deviation of Gaussian noise added to "
          "the published positions (rad, m).", bounds=_POS),
    Param("noise_velocity", "double", 0.0, "Same for velocities (rad/s, m/s).", bounds=_POS),
    Param("noise_effort", "double", 0.0, "Same for efforts (N*m, N).", bounds=_POS),
    Param("command_timeout", "double", 0.5, "A command older than this (s) is dropped and "
          "the motor torque becomes zero.", bounds=(1e-6, 1e6)),
    Param("command_joints", "string_array", None, "Joint order of ~/commands "
          "(Float64MultiArray); unset: all joints in model order."),
    Param("saturate_effort", "bool", True, "Clip motor torques to the URDF effort limits."),
    Param("lockstep", "bool", False, "Wait for the command answering each published state "
          "before stepping (up to lockstep_timeout): results independent of CPU load; stamps "
          "follow simulated time."),
    Param("lockstep_timeout", "double", 0.2, "Longest wait (s) for that answer in lockstep "
          "mode before stepping on.", bounds=(1e-6, 1e6)),
    Param("paused", "bool", False, "Freeze the simulation (joint_states keep being "
          "published)."),
)
BY_NAME = {p.name: p for p in PARAMETERS}


def _number_reason(spec: Param, x) -> str:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return f"{spec.name} must be a finite number, got {x!r}"
    low, high = spec.bounds or (None, None)
    if (low is not None and x < low) or (high is not None and x > high):
        return (f"{spec.name} must be >= {low}" + (f" and <= {high}" if high is not None
                                                     else "") + f", got {x}")
    return ""


def _length_reason(spec: Param, values: Sequence, joint_names: Sequence[str]) -> str:
    n = len(joint_names)
    allowed = {"joints": (n,), "one_or_joints": (1, n), None: (len(values),)}.get(
        spec.length, (spec.length,))
    if len(values) in allowed:
        return ""
    return (f"{spec.name}: expected {' or '.join(map(str, sorted(set(allowed))))} values"
            + (f" (joints {', '.join(joint_names)})" if spec.length == "joints" else "")
            + f", got {list(values)}")


def check(name: str, value, joint_names: Sequence[str], plant: str = "mujoco") -> str:
    """Why ``value`` is refused for parameter ``name`` ('' if it is accepted).

    Judges type class, bounds, choices and lengths from the table, plus the two rules that
    need the robot: ``command_joints`` must name known joints once each, and
    ``integrator`` must suit the ``plant``."""
    spec = BY_NAME[name]
    if value is None or (spec.type.endswith("array") and len(value) == 0):
        return ""
    if spec.type in ("double", "integer"):
        return _number_reason(spec, value)
    if name == "integrator" and value not in INTEGRATORS[plant]:
        return f"integrator for plant {plant!r} must be one of {INTEGRATORS[plant]}, got {value!r}"
    if spec.choices and value not in spec.choices:
        return f"{name} must be one of {spec.choices}, got {value!r}"
    if spec.type == "double_array":
        reason = _length_reason(spec, value, joint_names)
        for x in value:
            reason = reason or _number_reason(spec, x)
        return reason
    if name == "command_joints":
        unknown = [j for j in value if j not in joint_names]
        if unknown or len(set(value)) != len(value):
            return (f"command_joints: unknown {unknown} or duplicate joints in {list(value)}; "
                    f"joints: {', '.join(joint_names)}")
    return ""


def check_all(values: dict, joint_names: Sequence[str], plant: str) -> str:
    """The first reason any of ``values`` (name -> value) is refused, or ''."""
    for name, value in values.items():
        reason = check(name, value, joint_names, plant)
        if reason:
            return reason
    return ""


def per_joint(values, n: int, default) -> "list[float]":
    """An 'one_or_joints' array as n floats: [] -> default, one value -> broadcast."""
    if values is None or len(values) == 0:
        return [float(x) for x in default]
    return [float(x) for x in (list(values) * n if len(values) == 1 else values)]
