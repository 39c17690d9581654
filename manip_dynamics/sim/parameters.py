"""arm_simulator's parameters: one table (:mod:`manip_dynamics.rules.parameter_table`) and
the two rules it cannot say (no ROS).

Each :class:`ParamSpec` row is the whole truth about a parameter: name, kind, default,
description, numeric bounds (inclusive), allowed choices, the length an array must have
(``length``, or ``per_joint``: ``'each'`` = one value per joint in model order,
``'one_or_each'`` = one value for every joint or one per joint), unique names, and whether
it is fixed at start-up (``read_only``). The node declares the parameters from
``PARAMETERS`` (``runner.declare_table``: bounds become the descriptor's ranges) and judges
every value, at start-up and on each change, with :func:`check`.

An empty array means "unset" (ROS parameter files cannot express an empty list), which is
always allowed and means the default the description gives.
"""
from __future__ import annotations

from typing import Sequence

from manip_dynamics.rules.parameter_table import ParameterValueError, ParamSpec

PLANTS = ("mujoco", "model")
INTEGRATORS = {"mujoco": ("rk4", "implicitfast", "semi_implicit_euler"),
               "model": ("rk4", "semi_implicit_euler")}


_POS = dict(low=0.0)
PARAMETERS: tuple[ParamSpec, ...] = (
    # ---- the plant (start-up only)
    ParamSpec("robot", "string", "panda", "Embedded robot to simulate (manip_dynamics.robots."
              "names()); ignored if urdf_file is set.", read_only=True),
    ParamSpec("urdf_file", "string", "", "Path of a URDF or xacro file to simulate instead of an "
              "embedded robot (meshes are not needed: collisions are capsules along the links).",
              read_only=True),
    ParamSpec("xacro_args", "string", "", "Arguments of a xacro urdf_file: 'name:=value "
              "name2:=value2'.", read_only=True),
    ParamSpec("plant", "string", "mujoco", "mujoco: MuJoCo compiled from the URDF (limits, "
              "damping, friction loss, contact); model: RK4 on this package's own forward "
              "dynamics (the model-matched plant, no limits or contact).", choices=PLANTS,
              read_only=True),
    ParamSpec("publish_rate", "double", 100.0, "joint_states rate and control period (Hz).",
              low=1e-3, high=1e4, read_only=True),
    ParamSpec("sim_rate", "double", 1000.0, "Fixed steps per simulated second (Hz); rounded to a "
              "whole number of steps per publish period.", low=1e-3, high=1e6, read_only=True),
    ParamSpec("real_time_factor", "double", 1.0, "Simulated seconds per wall-clock second "
              "(the timer period is 1 / (publish_rate * real_time_factor)).",
              low=1e-3, high=100.0, read_only=True),
    ParamSpec("publish_robot_description", "bool", True, "Publish the (nominal) URDF on "
              "robot_description (transient local).", read_only=True),
    # ---- the scene (MuJoCo plant; start-up only)
    ParamSpec("floor", "bool", True, "A floor plane under the robot (MuJoCo plant).",
              read_only=True),
    ParamSpec("floor_height", "double", 0.0, "Height of the floor in the root frame (m).",
              low=-100.0, high=100.0, read_only=True),
    ParamSpec("collision_radius", "double", 0.04, "Radius (m) of the capsules along the links.",
              low=1e-4, high=1.0, read_only=True),
    ParamSpec("obstacle_size", "double_array", [], "Half sizes (m) of an obstacle box; unset: "
              "no obstacle.", low=1e-4, high=100.0, length=3, read_only=True),
    ParamSpec("obstacle_position", "double_array", [], "Centre of the obstacle in the root "
              "frame (m); unset: (0.5, 0, 0.2).", low=-100.0, high=100.0, length=3,
              read_only=True),
    ParamSpec("obstacle_rpy", "double_array", [], "Roll, pitch, yaw of the obstacle (rad); "
              "unset: 0.", low=-10.0, high=10.0, length=3, read_only=True),
    # ---- the plant's truth differing from the URDF (identification work; start-up only)
    ParamSpec("mass_factors", "double_array", [], "Scale the plant's link masses (and inertia "
              "tensors) by these factors: one for every link or one per joint (its child link); "
              "the published URDF stays nominal.", low=1e-3, high=1e3, per_joint="one_or_each",
              read_only=True),
    ParamSpec("com_factors", "double_array", [], "Scale the plant's centres of mass (offset "
              "from the link origin) by these factors, like mass_factors.", low=-1e3, high=1e3,
              per_joint="one_or_each", read_only=True),
    ParamSpec("payload_link", "string", "", "Link carrying an unknown payload in the plant "
              "(''= none).", read_only=True),
    ParamSpec("payload_mass", "double", 0.0, "Payload mass (kg).", low=0.0, high=1e4,
              read_only=True),
    ParamSpec("payload_com", "double_array", [], "Payload centre of mass in the link frame "
              "(m); unset: the link origin.", low=-100.0, high=100.0, length=3, read_only=True),
    ParamSpec("payload_radius", "double", 0.05, "Payload inertia: a solid sphere of this radius "
              "(m).", low=1e-4, high=10.0, read_only=True),
    ParamSpec("noise_seed", "integer", 0, "Seed of the measurement noise.", read_only=True),
    # ---- run time
    ParamSpec("integrator", "string", "rk4", "Fixed-step method: rk4 (both plants), "
              "implicitfast (MuJoCo), semi_implicit_euler (both).",
              choices=tuple(sorted(set(INTEGRATORS["mujoco"]) | set(INTEGRATORS["model"])))),
    ParamSpec("initial_positions", "double_array", [], "Initial q (rad or m) in model order; "
              "unset: 0 clipped into the limits. Setting it at run time resets the arm.",
              per_joint="each"),
    ParamSpec("initial_velocities", "double_array", [], "Initial qd; unset: zeros. Setting it "
              "at run time resets the arm.", per_joint="each"),
    ParamSpec("viscous_friction", "double_array", [], "Viscous friction (N*m*s/rad, N*s/m); "
              "unset: the URDF <dynamics damping>.", **_POS, per_joint="one_or_each"),
    ParamSpec("coulomb_friction", "double_array", [], "Coulomb friction (N*m, N): MuJoCo's "
              "friction loss, or a tanh in the model plant; unset: the URDF <dynamics friction>.",
              **_POS, per_joint="one_or_each"),
    ParamSpec("coulomb_velocity", "double", 0.1, "Model plant only: width (rad/s, m/s) of the "
              "tanh smoothing Coulomb friction.", low=1e-9, high=1e3),
    ParamSpec("noise_position", "double", 0.0, "Standard deviation of Gaussian noise added to "
              "the published positions (rad, m).", **_POS),
    ParamSpec("noise_velocity", "double", 0.0, "Same for velocities (rad/s, m/s).", **_POS),
    ParamSpec("noise_effort", "double", 0.0, "Same for efforts (N*m, N).", **_POS),
    ParamSpec("command_timeout", "double", 0.5, "A command older than this (s) is dropped and "
              "the motor torque becomes zero.", low=1e-6, high=1e6),
    ParamSpec("command_joints", "string_array", [], "Joint order of ~/commands "
              "(Float64MultiArray); unset: all joints in model order.", unique=True),
    ParamSpec("saturate_effort", "bool", True, "Clip motor torques to the URDF effort limits."),
    ParamSpec("lockstep", "bool", False, "Wait for the command answering each published state "
              "before stepping (up to lockstep_timeout): results independent of CPU load; stamps "
              "follow simulated time."),
    ParamSpec("lockstep_timeout", "double", 0.2, "Longest wait (s) for that answer in lockstep "
              "mode before stepping on.", low=1e-6, high=1e6),
    ParamSpec("paused", "bool", False, "Freeze the simulation (joint_states keep being "
              "published)."),
)
BY_NAME = {p.name: p for p in PARAMETERS}


def check(name: str, value, joint_names: Sequence[str], plant: str = "mujoco") -> str:
    """Why ``value`` is refused for parameter ``name`` ('' if it is accepted).

    The table's rules (bounds, choices, lengths, per-joint lengths, unique names), plus
    the two that need the robot: ``command_joints`` must name known joints, and
    ``integrator`` must suit the ``plant``."""
    if value is None:
        return ""
    if name == "integrator" and value not in INTEGRATORS[plant]:
        return f"integrator for plant {plant!r} must be one of {INTEGRATORS[plant]}, got {value!r}"
    try:
        BY_NAME[name].check(value, list(joint_names))
    except ParameterValueError as exc:
        return str(exc)
    unknown = [j for j in (value if name == "command_joints" else ()) if j not in joint_names]
    if unknown:
        return (f"command_joints: unknown {unknown} in {list(value)}; "
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
    """A per-joint array as n floats: [] or None -> default, one value -> broadcast."""
    if values is None or len(values) == 0:
        return [float(x) for x in default]
    return [float(x) for x in (list(values) * n if len(values) == 1 else values)]
