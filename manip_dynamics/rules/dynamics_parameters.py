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

from manip_dynamics.rules.parameter_table import ParameterValueError, ParamSpec, check_table
from manip_dynamics.rules.snapshot import MarkerOptions, Snapshot

__all__ = ["PARAMETERS", "SPECS", "ParameterValueError", "ParamSpec", "check_values",
           "check_inertia", "inertia_matrix", "model_conflicts", "make_snapshot"]

# Inertia checks allow this much round-off (relative to the largest principal moment).
INERTIA_TOLERANCE = 1e-9

PARAMETERS: tuple[ParamSpec, ...] = (
    ParamSpec("robot_description", "string", "",
              "URDF XML of the robot. When non-empty it is the robot model, and the "
              "robot_description topic is ignored.",
              "must parse as a URDF the core supports"),
    ParamSpec("urdf_file", "string", "",
              "Path of a URDF file, used when the robot_description parameter is empty. "
              "When non-empty the robot_description topic is ignored.",
              "readable file that parses as a URDF"),
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
              "3 finite values"),
    ParamSpec("payload.frame", "string", "",
              "Link carrying a rigid payload; '' = no payload.",
              "a link of the model"),
    ParamSpec("payload.mass", "double", 0.0,
              "Payload mass [kg].", low=0.0),
    ParamSpec("payload.com", "double_array", [0.0, 0.0, 0.0],
              "Payload centre of mass [m] in payload.frame.", "3 finite values"),
    ParamSpec("payload.inertia", "double_array", [0.0] * 6,
              "Payload inertia about its centre of mass [kg*m^2], axes of payload.frame: "
              "ixx ixy ixz iyy iyz izz.",
              "6 finite values; positive semi-definite; principal moments satisfy the "
              "triangle inequalities"),
    ParamSpec("friction.joints", "string_array", [],
              "Joints whose URDF friction (<dynamics damping friction>) is overridden by "
              "friction.viscous / friction.coulomb; other joints keep the URDF values.",
              "joints of the model, no duplicates"),
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
              "joints of the model, no duplicates (a subset is allowed)"),
    ParamSpec("damping", "double", 1e-3,
              "Damping of the inverse giving Lambda near singularities.",
              low=0.0, low_open=True),
    ParamSpec("singular_condition", "double", 1e6,
              "cond(J M^-1 J^T) above which ~/dynamics flags near_singular.",
              low=1.0, low_open=True),
    ParamSpec("markers.enabled", "bool", True,
              "Publish ~/inertia_markers."),
    ParamSpec("markers.rate", "double", 10.0,
              "Maximum rate [Hz] of ~/inertia_markers.", low=0.0, low_open=True),
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
)

SPECS: dict[str, ParamSpec] = {spec.name: spec for spec in PARAMETERS}


# --------------------------------------------------------------------------- model-free

def _vector(values: Mapping[str, Any], name: str, length: int | None = None) -> np.ndarray:
    v = np.asarray(list(values[name]), dtype=float)
    if length is not None and v.shape != (length,):
        raise ParameterValueError(name, f"needs {length} values, got {v.size}")
    bad = np.flatnonzero(~np.isfinite(v))
    if bad.size:
        raise ParameterValueError(name, f"element {bad[0]} is {v[bad[0]]} (must be finite)")
    return v


def _names(values: Mapping[str, Any], name: str) -> tuple[str, ...]:
    names = tuple(values[name])
    for i, joint in enumerate(names):
        if not joint:
            raise ParameterValueError(name, f"element {i} is an empty name")
        if joint in names[:i]:
            raise ParameterValueError(name, f"joint {joint!r} is listed twice")
    return names


def inertia_matrix(ixx, ixy, ixz, iyy, iyz, izz) -> np.ndarray:
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]], dtype=float)


def check_inertia(name: str, six: np.ndarray) -> np.ndarray:
    """3x3 inertia from ``ixx ixy ixz iyy iyz izz``; PSD and triangle inequalities.
    (The one payload-inertia rule of the node: issue 9 moves it into core/inertia.py.)"""
    inertia = inertia_matrix(*six)
    moments = np.linalg.eigvalsh(inertia)          # ascending principal moments
    tol = INERTIA_TOLERANCE * max(1.0, float(np.max(np.abs(moments))))
    if moments[0] < -tol:
        raise ParameterValueError(
            name, f"not positive semi-definite (principal moments {np.round(moments, 9)})")
    if moments[0] + moments[1] < moments[2] - tol:
        raise ParameterValueError(
            name, f"principal moments {np.round(moments, 9)} violate the triangle "
                  "inequality (I1 + I2 >= I3)")
    return inertia


def check_values(values: Mapping[str, Any]) -> None:
    """Every check that needs no robot model. Raises ParameterValueError."""
    _vector(values, "gravity", 3)
    _vector(values, "payload.com", 3)
    check_table(SPECS, values)           # bounds, choices, finiteness: the table's
    check_inertia("payload.inertia", _vector(values, "payload.inertia", 6))
    joints = _names(values, "friction.joints")
    for name in ("friction.viscous", "friction.coulomb"):
        v = _vector(values, name)
        if v.size and v.size != len(joints):
            raise ParameterValueError(
                name, f"has {v.size} values for {len(joints)} friction.joints "
                      "(must be empty or one per joint)")
    _names(values, "command_joints")


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
    return conflicts


def make_snapshot(base_model, values: Mapping[str, Any]) -> Snapshot:
    """``Snapshot`` of ``base_model`` (as parsed, rooted) with the parameters applied.

    Assumes ``check_values`` passed and ``model_conflicts`` is empty; errors the core
    raises anyway (it validates too) propagate as ``ManipDynamicsError``.
    """
    model = base_model.with_gravity(_vector(values, "gravity", 3))
    joints = tuple(values["friction.joints"])
    viscous = _vector(values, "friction.viscous")
    coulomb = _vector(values, "friction.coulomb")
    if joints and (viscous.size or coulomb.size):
        index = [base_model.joint_names.index(j) for j in joints]
        new_viscous = np.array(base_model.viscous, dtype=float)
        new_coulomb = np.array(base_model.coulomb, dtype=float)
        if viscous.size:
            new_viscous[index] = viscous
        if coulomb.size:
            new_coulomb[index] = coulomb
        model = model.with_friction(viscous=new_viscous, coulomb=new_coulomb)
    if values["payload.frame"]:
        model = model.with_payload(
            values["payload.frame"], float(values["payload.mass"]),
            _vector(values, "payload.com", 3),
            inertia_matrix(*_vector(values, "payload.inertia", 6)))
    return Snapshot(
        model=model,
        tip_frame=values["tip_link"] or base_model.default_tip,
        command_joints=tuple(values["command_joints"]) or tuple(base_model.joint_names),
        damping=float(values["damping"]),
        singular_condition=float(values["singular_condition"]),
        markers=MarkerOptions(
            enabled=bool(values["markers.enabled"]),
            scale=float(values["markers.scale"]),
            show_mass_matrix=bool(values["markers.show_mass_matrix"]),
            alpha=float(values["markers.alpha"]),
        ),
    )
