"""The dynamics node's parameters: one table (name, kind, default, description, bounds)
and the checks that relate parameters to each other and to the robot model.

Everything the node needs to know about a parameter lives in ``PARAMETERS`` (the idiom of
:mod:`manip_dynamics.rules.parameter_table`): the node declares them from it, rclpy
enforces the published ranges, and the functions below judge every value the same way
at start-up, on ``ros2 param set`` and in tests (plain Python, no middleware).

Three layers of checks, all raising :class:`ParameterValueError` naming the parameter:

``check_values(values)``                   the table's bounds, lengths, PSD inertia
                                           (needs no robot model);
``model_conflicts(values, model, urdf)``   names that must exist in the robot model
                                           (tip_link, payload.frame, joints, root_link);
``make_snapshot(base_model, values)``      applies gravity / friction / payload to the
                                           model parsed from the URDF -> ``Snapshot``.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from manip_dynamics.core.dynamics.inertia import describe_defect, inertia_defect, inertia_matrix
from manip_dynamics.rules.contact_monitor import options_from_values
from manip_dynamics.rules.parameter_table import ParameterValueError, ParamSpec, check_table
from manip_dynamics.rules.safety_options import options_from_values as safety_options
from manip_dynamics.rules.safety_options import point_conflicts
from manip_dynamics.rules.snapshot import CONTACT_OUTPUTS, MarkerOptions, OutputSwitch, Snapshot

__all__ = ["PARAMETERS", "SPECS", "ParameterValueError", "ParamSpec", "check_values",
           "check_inertia", "inertia_matrix", "model_conflicts", "make_snapshot", "drive_gain"]

PARAMETERS: tuple[ParamSpec, ...] = (
    ParamSpec("robot_description", "string", "",
              "URDF XML of the robot. When non-empty it is the robot model, and the "
              "robot_description topic is ignored.",
              "must parse as a URDF the core supports"),
    ParamSpec("urdf_file", "string", "",
              "Path of a URDF file, used when the robot_description parameter is empty. "
              "When non-empty the robot_description topic is ignored.",
              "readable file that parses as a URDF"),
    ParamSpec("xacro_args", "string", "",
              "Arguments of a xacro urdf_file, 'name:=value name2:=value2' ($(find pkg) "
              "resolved through ROS_PACKAGE_PATH / AMENT_PREFIX_PATH).",
              "name:=value entries separated by spaces"),
    ParamSpec("dynamics_file", "string", "",
              "Dynamics side file (YAML, docs/side_file.md): per-joint armature (reflected "
              "rotor inertia, added to M's diagonal), friction and drive gains. '' = "
              "<name>.dynamics.yaml beside urdf_file when that file exists, else none; "
              "'none' = none. friction.* parameters override its friction.",
              "a readable side file naming joints of the model"),
    ParamSpec("drive_gains", "double_array", [],
              "Torque per unit of joint_states effort [N*m/A or N/A]: the observer and "
              "~/estimate_payload read gain * effort as the joint torque. [] = the side "
              "file's drive_gain per joint (1 where it gives none: effort is torque); 1 "
              "value (all joints) or one per joint, model order.",
              "empty, 1 value or one per joint", low=0.0, low_open=True),
    ParamSpec("root_link", "string", "",
              "Link taken as the model's root (base); '' = the URDF's root link. Gravity, "
              "Jacobians and Lambda are expressed in this link's axes.",
              "a link of the URDF"),
    ParamSpec("tip_link", "string", "",
              "Frame of the task-space terms (Jacobian, Lambda, markers); '' = the model's "
              "default tip (leaf link at the end of the longest chain).",
              "a link of the model"),
    ParamSpec("gravity", "double_array", [0.0, 0.0, -9.81],
              "Gravity acceleration [m/s^2] in the root link's axes.",
              length=3, min_items=3),
    ParamSpec("payload.frame", "string", "",
              "Link carrying a rigid payload; '' = no payload.",
              "a link of the model"),
    ParamSpec("payload.mass", "double", 0.0,
              "Payload mass [kg].", low=0.0),
    ParamSpec("payload.com", "double_array", [0.0, 0.0, 0.0],
              "Payload centre of mass [m] in payload.frame.", length=3, min_items=3),
    ParamSpec("payload.inertia", "double_array", [0.0] * 6,
              "Payload inertia about its centre of mass [kg*m^2], axes of payload.frame: "
              "ixx ixy ixz iyy iyz izz.",
              "positive semi-definite; principal moments satisfy the triangle "
              "inequalities", length=6, min_items=6),
    ParamSpec("friction.joints", "string_array", [],
              "Joints whose URDF friction (<dynamics damping friction>) is overridden by "
              "friction.viscous / friction.coulomb; other joints keep the URDF values.",
              "joints of the model", unique=True),
    ParamSpec("friction.viscous", "double_array", [],
              "Viscous friction [N*m*s/rad or N*s/m] of friction.joints, in that order; "
              "empty = keep the URDF values.",
              "empty or same length as friction.joints", low=0.0),
    ParamSpec("friction.coulomb", "double_array", [],
              "Coulomb friction [N*m or N] of friction.joints, in that order; empty = keep "
              "the URDF values.",
              "empty or same length as friction.joints", low=0.0),
    ParamSpec("command_joints", "string_array", [],
              "Joint order of ~/gravity_command (e.g. a JointGroupEffortController's "
              "joints); empty = the model's joint order.",
              "joints of the model (a subset is allowed)", unique=True),
    ParamSpec("damping", "double", 1e-3,
              "Damping of the inverse giving Lambda near singularities.",
              low=0.0, low_open=True),
    ParamSpec("singular_condition", "double", 1e6,
              "cond(J M^-1 J^T) above which ~/dynamics flags near_singular.",
              low=1.0, low_open=True),
    ParamSpec("markers.scale", "double", 0.1,
              "Ellipsoid size factor [m/sqrt(kg)] (see manip_dynamics.nodes.markers).",
              low=0.0, low_open=True),
    ParamSpec("markers.show_mass_matrix", "bool", False,
              "Also draw the joint-space mass matrix eigenvalues as bars."),
    ParamSpec("markers.alpha", "double", 0.6,
              "Marker opacity.", low=0.0, high=1.0),
    ParamSpec("joint_states_qos.reliability", "string", "best_effort",
              "Reliability of the joint_states subscription. Read at start-up only. "
              "best_effort accepts both reliable and best-effort publishers.",
              read_only=True, choices=("best_effort", "reliable")),
    ParamSpec("joint_states_qos.depth", "integer", 10,
              "History depth of the joint_states subscription. Read at start-up only.",
              read_only=True, low=1),
    ParamSpec("max_state_age", "double", 0.0,
              "Seconds: joint_states whose stamp is older than now - max_state_age are "
              "skipped as stale; 0 = no age check.",
              low=0.0),
    ParamSpec("joint_states_latest_wins", "bool", True,
              "When several joint_states messages wait (the node fell behind), compute only "
              "the newest and count the others as skipped (latest-wins on /diagnostics); "
              "false = compute every message in arrival order (e.g. to record every sample)."),
    ParamSpec("joint_states_backlog", "integer", 8,
              "With joint_states_latest_wins: a backlog of at most this many older messages "
              "is still worked through in order (each computed and published: a scheduling "
              "hiccup or a marker update costs no state); a longer one means the node fell "
              "behind, and only the newest is computed. 0 = always only the newest.",
              low=0, high=1000),
    ParamSpec("executor", "string", "events",
              "Executor that spins the node: events (rclpy's EventsExecutor: about half "
              "the CPU per message, docs/realtime.md) or single_threaded (rclpy's "
              "SingleThreadedExecutor). Read at start-up only.",
              read_only=True, choices=("events", "single_threaded")),
) + tuple(
    spec for name, what in (
        ("dynamics", "~/dynamics"),
        ("gravity_torques", "~/gravity_torques"),
        ("gravity_command", "~/gravity_command"),
        ("coriolis_torques", "~/coriolis_torques"),
    ) + tuple((name, f"~/{name}") for name in CONTACT_OUTPUTS)   # the observer's outputs
    for spec in (
        ParamSpec(f"outputs.{name}.enabled", "bool", True, f"Publish {what}."),
        ParamSpec(f"outputs.{name}.rate", "double", 0.0,
                  f"Maximum rate [Hz] of {what}; 0 = one message per computed state. "
                  "States in between are still computed (and reach the state listeners).",
                  low=0.0),
    )
) + (
    ParamSpec("outputs.inertia_markers.enabled", "bool", True,
              "Publish ~/inertia_markers (built on a timer from the newest state, only "
              "while someone subscribes)."),
    ParamSpec("outputs.inertia_markers.rate", "double", 10.0,
              "Rate [Hz] of ~/inertia_markers (the timer's).", low=0.0, low_open=True,
              high=1000.0),
    # ---- contact awareness: the momentum observer (rules/contact_monitor.py, docs/node.md)
    ParamSpec("observer.enabled", "bool", True,
              "Run the momentum observer on joint_states that carry effort and publish "
              "~/external_torques, ~/external_wrench, ~/contact, ~/contact_markers."),
    ParamSpec("observer.gains", "double_array", [50.0],
              "Observer gains K_O [1/s] (r follows tau_ext with time constant 1/K_O); "
              "1 value (all joints) or one per joint, model order.",
              "1 value or one per joint", low=0.0, low_open=True, min_items=1),
    ParamSpec("observer.enter_thresholds", "double_array", [2.0],
              "Contact is entered when |r_i| exceeds this [N*m or N] for some joint; 1 value "
              "or one per joint.",
              "1 value or one per joint", low=0.0, low_open=True, min_items=1),
    ParamSpec("observer.hysteresis", "double", 0.5,
              "Contact is left when |r_i| <= hysteresis * enter_threshold_i for every joint.",
              low=0.0, high=1.0, low_open=True),
    ParamSpec("observer.friction", "bool", False,
              "Subtract the model's friction (URDF <dynamics>, friction.*) from the measured "
              "torque; off: unmodelled friction shows in r."),
    ParamSpec("observer.effort", "string", "total",
              "Meaning of joint_states effort: total (the motor torque) or minus_gravity "
              "(motor torque minus g(q), as some drivers report it).",
              choices=("total", "minus_gravity")),
    ParamSpec("observer.effort_timing", "string", "sampled",
              "Timing of joint_states effort: sampled (the torque at the stamp, a drive "
              "sampling its current) or held (the torque held over the period ending at "
              "the stamp, as arm_simulator publishes it).", choices=("sampled", "held")),
    ParamSpec("observer.max_gap", "double", 0.05,
              "Seconds: a longer step between accepted samples is a gap, handled by "
              "observer.gap instead of being integrated.", low=0.0, low_open=True),
    ParamSpec("observer.gap", "string", "bridge",
              "Gap rule: bridge (hold r, restart the integral at the new sample) or reset "
              "(r = 0 there).", choices=("bridge", "reset")),
    ParamSpec("observer.wrench_threshold", "double", 0.01,
              "Singular value of J^T [m] below which ~/external_wrench uses the damped "
              "inverse (core.contact.tip_wrench).", low=0.0, low_open=True),
    ParamSpec("observer.contact_point", "bool", False,
              "Estimate the contact point on the isolated link (~/contact) while in contact "
              "(a search along the link: about 2 ms per sample on the Panda)."),
    ParamSpec("observer.force_scale", "double", 0.01,
              "Arrow length per newton [m/N] of the tip force in ~/contact_markers.",
              low=0.0, low_open=True),
    ParamSpec("observer.markers_rate", "double", 10.0,
              "Maximum rate [Hz] of ~/contact_markers (a contact entered or left is drawn "
              "at once).", low=0.0, low_open=True),
    ParamSpec("observer.slide_speed", "double_array", [0.0],
              "With observer.friction: the Coulomb term is coulomb_i clip(qd_i / v_i, -1, 1) "
              "for v_i > 0 [rad/s or m/s] (no jump when qd flickers around 0 at rest) "
              "instead of coulomb_i sign(qd_i) (0); 1 value or one per joint.",
              "1 value or one per joint", low=0.0, min_items=1),
    ParamSpec("observer.thresholds", "string", "motion",
              "How a contact calibration in force (~/calibrate_contact, the start-up "
              "calibration, or <name>.contact.yaml beside urdf_file) sets the enter "
              "thresholds: motion (they follow the arm's speed, acceleration and friction "
              "band; the calibrated bias, settled at rest), calibrated (its constant "
              "thresholds and bias) or fixed (observer.enter_thresholds, no bias). Without a "
              "calibration every mode uses observer.enter_thresholds.",
              choices=("fixed", "calibrated", "motion")),
    # ---- contact calibration (nodes/contact_calibration.py, docs/node.md "Contact calibration")
    ParamSpec("contact.calibration.startup_duration", "double", 0.0,
              "Seconds (joint-state stamps) of the first contact-free motion with effort to "
              "learn a contact calibration from at start-up, as ~/calibrate_contact would; "
              "0 = none.", low=0.0, high=600.0, read_only=True),
    # ---- collaborative safety: ISO/TS 15066 speed limits (nodes/safety_outputs.py, docs/safety.md)
    ParamSpec("safety.enabled", "bool", False,
              "Publish ~/collision_safety, ~/speed_scale and ~/safety_markers: every "
              "monitored point's speed against the permissible transient-contact speed of "
              "safety.body_region, from its effective mass along its motion."),
    ParamSpec("safety.rate", "double", 0.0,
              "Maximum rate [Hz] of the safety outputs; 0 = one per computed state.", low=0.0),
    ParamSpec("safety.body_region", "string", "hands_fingers",
              "Body region of the body model (ISO/TS 15066 Annex A: skull_forehead, face, "
              "neck, back_shoulders, chest, abdomen, pelvis, upper_arms_elbows, "
              "lower_arms_wrists, hands_fingers, thighs_knees, lower_legs)."),
    ParamSpec("safety.body_model", "string", "",
              "Body-model YAML (the format of manip_dynamics/safety/iso_ts_15066.yaml); "
              "empty: the packaged ISO/TS 15066 table."),
    ParamSpec("safety.contact_area", "double", 0.0,
              "Contact area [m^2] for the pressure form of the limit (the smaller of the "
              "force and pressure limits wins); 0: the force form only.", low=0.0),
    ParamSpec("safety.points", "string_array", [],
              "Extra monitored points besides every moving link's origin and the tip: "
              "'link' or 'link:x,y,z' (m, in the link's axes)."),
    ParamSpec("safety.markers", "bool", True,
              "Publish ~/safety_markers (a sphere per monitored point coloured by its "
              "ratio) while someone subscribes."),
)

SPECS: dict[str, ParamSpec] = {spec.name: spec for spec in PARAMETERS}


# --------------------------------------------------------------------------- model-free

def _vector(values: Mapping[str, Any], name: str) -> np.ndarray:
    """The double array ``name`` (already judged by its spec) as a float vector."""
    return np.asarray(list(values[name]), dtype=float)


def check_inertia(name: str, six: np.ndarray) -> np.ndarray:
    """3x3 inertia from ``ixx ixy ixz iyy iyz izz``: positive semi-definite and the triangle
    inequality, with the core's round-off tolerance (core/dynamics/inertia.py: the rule and the
    tolerance the core's with_payload applies, so a value accepted here is never refused
    there)."""
    inertia = inertia_matrix(*six)
    defect = inertia_defect(inertia)
    if defect is not None:
        raise ParameterValueError(name, describe_defect(*defect))
    return inertia


def check_values(values: Mapping[str, Any]) -> None:
    """Every check that needs no robot model. Raises ParameterValueError."""
    check_table(SPECS, values)   # bounds, lengths, choices, finiteness, unique names
    check_inertia("payload.inertia", _vector(values, "payload.inertia"))
    joints = tuple(values["friction.joints"])
    for name in ("friction.viscous", "friction.coulomb"):
        v = _vector(values, name)
        if v.size and v.size != len(joints):
            raise ParameterValueError(
                name, f"has {v.size} values for {len(joints)} friction.joints "
                      "(must be empty or one per joint)")
    safety_options(values)       # body model, region and points (nodes/safety_outputs.py)


# --------------------------------------------------------------------------- model

def _not_in_model(name: str, known) -> str:
    known = sorted(known)
    listed = ", ".join(known[:12]) + (", ..." if len(known) > 12 else "")
    return f"{name!r} is not in the robot model (known: {listed})"


def model_conflicts(values: Mapping[str, Any], model, urdf_links=None) -> dict[str, str]:
    """Parameters naming links/joints that ``model`` lacks -> reason, per parameter.

    ``model`` is the model rooted at ``root_link``; ``urdf_links`` are all links of the
    URDF (to judge ``root_link`` itself; skipped when None).
    """
    conflicts: dict[str, str] = {}
    if urdf_links is not None and values["root_link"] and values["root_link"] not in urdf_links:
        conflicts["root_link"] = _not_in_model(values["root_link"], urdf_links)
    frames = set(model.frame_names)
    joints = set(model.joint_names)
    for name in ("tip_link", "payload.frame"):
        if values[name] and values[name] not in frames:
            conflicts[name] = _not_in_model(values[name], frames)
    for name in ("friction.joints", "command_joints"):
        unknown = [j for j in values[name] if j not in joints]
        if unknown:
            conflicts[name] = (f"joint {unknown[0]!r} is not a coordinate of the robot model "
                               f"(joints: {', '.join(model.joint_names)})")
    conflicts.update(point_conflicts(values, frames))
    if len(values["drive_gains"]) not in (0, 1, model.n):
        conflicts["drive_gains"] = (f"needs no value, 1 value or one per joint ({model.n}: "
                                    f"{', '.join(model.joint_names)}), got "
                                    f"{len(values['drive_gains'])}")
    for name in ("observer.gains", "observer.enter_thresholds", "observer.slide_speed"):
        if len(values[name]) not in (1, model.n):
            conflicts[name] = (f"needs 1 value or one per joint ({model.n}: "
                               f"{', '.join(model.joint_names)}), got {len(values[name])}")
    return conflicts


def drive_gain(values: Mapping[str, Any], n: int, side_gain=None):
    """The drive gains in force, (n,) read-only, or None when every one is 1 (effort is
    torque): parameter ``drive_gains`` if set (1 value or n), else ``side_gain`` (the side
    file's, (n,) or None)."""
    given = _vector(values, "drive_gains")
    gain = (np.broadcast_to(given, (n,)).copy() if given.size
            else None if side_gain is None else np.array(side_gain, dtype=float))
    if gain is None or (gain == 1.0).all():
        return None
    gain.setflags(write=False)
    return gain


def make_snapshot(base_model, values: Mapping[str, Any], side_gain=None) -> Snapshot:
    """``Snapshot`` of ``base_model`` (as parsed, rooted) with the parameters applied;
    ``side_gain``: the side file's drive gains ((n,) or None), the default of
    ``drive_gains``.

    Assumes ``check_values`` passed and ``model_conflicts`` is empty; errors the core
    raises anyway (it validates too) propagate as ``ManipDynamicsError``.
    """
    model = base_model.with_gravity(_vector(values, "gravity"))
    joints = tuple(values["friction.joints"])
    viscous = _vector(values, "friction.viscous")
    coulomb = _vector(values, "friction.coulomb")
    if joints and (viscous.size or coulomb.size):
        index = [base_model.joint_names.index(j) for j in joints]
        new_viscous = np.array(base_model.viscous, dtype=float)
        new_coulomb = np.array(base_model.coulomb, dtype=float)
        new_negative = np.array(base_model.coulomb_negative, dtype=float)   # (a side file's)
        if viscous.size:
            new_viscous[index] = viscous
        if coulomb.size:
            new_coulomb[index] = new_negative[index] = coulomb     # both directions
        model = model.with_friction(viscous=new_viscous, coulomb=new_coulomb,
                                    coulomb_negative=new_negative)
    if values["payload.frame"]:
        model = model.with_payload(
            values["payload.frame"], float(values["payload.mass"]),
            _vector(values, "payload.com"),
            inertia_matrix(*_vector(values, "payload.inertia")))
    return Snapshot(
        model=model,
        tip_frame=values["tip_link"] or base_model.default_tip,
        command_joints=tuple(values["command_joints"]) or tuple(base_model.joint_names),
        damping=float(values["damping"]),
        singular_condition=float(values["singular_condition"]),
        markers=MarkerOptions(
            enabled=bool(values["outputs.inertia_markers.enabled"]),
            scale=float(values["markers.scale"]),
            show_mass_matrix=bool(values["markers.show_mass_matrix"]),
            alpha=float(values["markers.alpha"]),
        ),
        observer=options_from_values(values),
        drive_gain=drive_gain(values, base_model.n, side_gain),
        contact_outputs=tuple(OutputSwitch(bool(values[f"outputs.{name}.enabled"]),
                                           float(values[f"outputs.{name}.rate"]))
                              for name in CONTACT_OUTPUTS),
    )
