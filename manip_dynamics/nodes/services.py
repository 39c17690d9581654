"""The dynamics node's query services: request -> core -> response, nothing more.

``DynamicsServices(node, get_snapshot)`` registers six services on ``node`` (private
names, so they resolve to ``/<namespace>/<node name>/<service>``):

==========================  =============================================  ==========================
service                     type (manip_dynamics_interfaces/srv)           core call
==========================  =============================================  ==========================
``~/inverse_dynamics``      InverseDynamics                                ``model.inverse_dynamics``
``~/forward_dynamics``      ForwardDynamics                                ``model.forward_dynamics``
``~/get_mass_matrix``       GetMassMatrix                                  ``model.mass_matrix``
``~/get_gravity_torques``   GetGravityTorques                              ``model[.with_payload].gravity_torques``
``~/get_effective_inertia`` GetEffectiveInertia                            ``model.effective_inertia`` et al.
``~/get_trajectory_torques`` GetTrajectoryTorques                          batched ``model.inverse_dynamics``
==========================  =============================================  ==========================

Every handler reads ``get_snapshot()`` ONCE and uses only that object, so a parameter
change or a new robot description arriving mid-call is never seen half-applied. With no
snapshot yet (no robot model), the answer is ``success=false`` and says so.

Errors: a bad request (wrong lengths, non-finite values, unknown / missing / duplicate
joint names, unknown frame, empty trajectory, ...) is answered with ``success=false`` and a
``message`` that starts with the service's resolved name and names the field, joint, frame
or point at fault (the core's ``InputError`` / ``UnknownFrameError`` messages are passed
on). Any other exception is logged with its traceback and answered the same way: a handler
never raises into the executor, so a bad request can never take the node down.

Never garbage: finite requests can still overflow (1e308 on a prismatic joint, a huge
velocity squared in C qd, a payload of 1e308 kg). The core never returns such a result: it
raises ``NonFiniteResultError`` (a ``ManipDynamicsError``), answered ``success=false`` with
its message; the only infinities in a response are the documented ones (eigenvalues and
condition numbers at singularities, missing URDF effort limits).

Conventions are the core's (docs/design.md): ``tau = M qdd + C qd + g + tau_fr - J^T F``,
vectors in the model's joint order (returned as ``joint_names``), matrices row-major.

Threading: the services are made on ``host`` (the node's ``service_thread.ServiceThread``:
their own thread, a request queue of ``SERVICE_QUEUE_DEPTH``), so a call never holds up
the node's joint_states. Handlers keep no state of their own and the core model is
immutable, so they may run beside the joint_states callback.

Size: a trajectory request holds at most ``MAX_TRAJECTORY_POINTS`` points
(``trajectory_arrays``); a longer one is refused before any per-point work (rclpy has
already built it, about 20 us per 7-joint point with the interpreter held: the bound keeps
that, and the answer's, short for the joint states waiting for the interpreter).
"""
from __future__ import annotations

import traceback
from typing import Callable, Optional, Sequence

import numpy as np

from manip_dynamics.core.errors import (
    InputError,
    ManipDynamicsError,
    SingularConfigurationError,
    UnknownFrameError,
)
from manip_dynamics.core.dynamics.kernels import spd_condition_number
from manip_dynamics_interfaces.srv import (
    ForwardDynamics,
    GetEffectiveInertia,
    GetGravityTorques,
    GetMassMatrix,
    GetTrajectoryTorques,
    InverseDynamics,
)

from manip_dynamics.rules.snapshot import Snapshot

MAX_TRAJECTORY_POINTS = 10_000   # points per trajectory request (10 s at 1 kHz)
NO_MODEL_MESSAGE = (
    "no robot model yet: publish the URDF on 'robot_description' or set the "
    "'robot_description' / 'urdf_file' parameter"
)


class RequestError(ManipDynamicsError, ValueError):
    """A request the service cannot answer; the message names the field at fault."""


def guarded_answer(node, name: str, answer: Callable, request, response):
    """``answer(request, response)`` fills the response of the service ``name``
    (a ``success`` and a ``message`` field); a refusal (ManipDynamicsError, ValueError) is
    success false with "<name>: <why>"; anything else is logged with its traceback and
    answered "<name>: internal error: <type>: <text>": a request never takes the node down.
    -> response."""
    try:
        answer(request, response)
    except (ManipDynamicsError, ValueError) as exc:
        response.success, response.message = False, f"{name}: {exc}"
    except Exception as exc:  # never let a request take the node down
        node.get_logger().error(f"{name} failed:\n" + traceback.format_exc())
        response.success = False
        response.message = f"{name}: internal error: {type(exc).__name__}: {exc}"
    return response


def _error_text(exc: BaseException) -> str:
    # KeyError (UnknownFrameError) quotes its argument in str(); use the argument itself.
    if isinstance(exc, KeyError) and exc.args:
        return str(exc.args[0])
    return str(exc) or type(exc).__name__


def _flat(a: np.ndarray) -> list[float]:
    return np.ascontiguousarray(a, dtype=float).ravel().tolist()


# --------------------------------------------------------------------------- translation

def joint_vector(model, joint_names: Sequence[str], values: Sequence[float], field: str,
                 required: bool = True) -> np.ndarray:
    """One request array -> an (n,) vector in the model's joint order.

    ``joint_names`` empty: ``values`` must already be in model order (length n).
    Otherwise ``values[i]`` belongs to ``joint_names[i]``; every model joint must be named
    once and no other joint may appear. ``required=False``: an empty ``values`` means zeros.
    Non-finite values are rejected (the core names the joint).
    """
    values = list(values)
    if not values and not required:
        return np.zeros(model.n)
    names = list(joint_names) if joint_names else list(model.joint_names)
    if len(values) != len(names):
        if joint_names:
            raise RequestError(
                f"{field} has {len(values)} values but joint_names has {len(names)} names"
            )
        raise RequestError(
            f"{field} has {len(values)} values, expected {model.n} (joint_names is empty, "
            f"so the model's order is assumed: {', '.join(model.joint_names)})"
        )
    return _in_model_order(model, names, values, field)


def _in_model_order(model, names: Sequence[str], values, field: str,
                    allow_extra: bool = False) -> np.ndarray:
    """``model.vector_from_names`` (strict unless ``allow_extra``: names that are not joints
    of the model are then ignored), with a fuller message.

    The core reports the first problem it finds (e.g. a missing joint); when names that are
    not coordinates of the model are the likely cause, the message lists them too.
    """
    try:
        vector = model.vector_from_names(names, values, field=field, allow_extra=allow_extra)
    except InputError as exc:
        strangers = [name for name in names if name not in model.joint_names]
        if strangers and "unknown" not in str(exc):
            raise InputError(f"{exc}; names that are not coordinates of the model: "
                             f"{', '.join(map(repr, strangers))}") from None
        raise
    return np.asarray(vector, dtype=float)


def _finite_vector(values: Sequence[float], field: str, length: int) -> np.ndarray:
    v = np.asarray(list(values), dtype=float)
    if v.shape != (length,):
        raise RequestError(f"{field} has {v.size} values, expected {length}")
    if not np.all(np.isfinite(v)):
        raise RequestError(f"{field} has a non-finite value: {v.tolist()}")
    return v


def _wrench(msg) -> np.ndarray:
    return np.array([msg.force.x, msg.force.y, msg.force.z,
                     msg.torque.x, msg.torque.y, msg.torque.z], dtype=float)


def _payload_arguments(payload) -> tuple[str, float, np.ndarray, np.ndarray]:
    """manip_dynamics_interfaces/Payload -> (frame, mass, com (3,), inertia (3, 3))."""
    i = payload.inertia
    if not payload.frame_id:
        raise RequestError("use_payload is true but payload.frame_id is empty")
    mass = float(i.m)
    com = np.array([i.com.x, i.com.y, i.com.z], dtype=float)
    inertia = np.array([[i.ixx, i.ixy, i.ixz],
                        [i.ixy, i.iyy, i.iyz],
                        [i.ixz, i.iyz, i.izz]], dtype=float)
    return payload.frame_id, mass, com, inertia   # values are checked by the core


def trajectory_arrays(model, trajectory, allow_extra: bool = False,
                      require_velocities: bool = False
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """trajectory_msgs/JointTrajectory -> (Q, QD, QDD), each (P, n) in model order, finite.

    Missing (empty) velocities / accelerations of a point are zeros (velocities must be
    given with ``require_velocities``); a non-empty array must have one value per joint
    name. ``joint_names`` empty means the model's order. Names that are not joints of the
    model are refused, or with ``allow_extra`` accepted and left out (a caller that answers
    with the trajectory carries them through). ~/get_trajectory_torques: the defaults;
    ~/check_trajectory_safety: allow_extra, require_velocities. More than
    ``MAX_TRAJECTORY_POINTS`` points: refused (RequestError) before any per-point work.
    """
    points = trajectory.points
    if len(points) == 0:
        raise RequestError("trajectory has no points")
    if len(points) > MAX_TRAJECTORY_POINTS:
        raise RequestError(f"trajectory has {len(points)} points, more than the "
                           f"{MAX_TRAJECTORY_POINTS} a request may hold: send it in parts "
                           f"or sampled more coarsely")
    names = list(trajectory.joint_names) if trajectory.joint_names else list(model.joint_names)
    k = len(names)
    # Let the core validate the names (missing / duplicate / unknown) once, by mapping the
    # column indices 0..k-1 into model order: perm[j] = column holding model joint j.
    perm = _in_model_order(model, names, np.arange(k, dtype=float), "joint_names", allow_extra)
    perm = perm.round().astype(int)

    def stacked(field: str, required: bool) -> np.ndarray:
        out = np.zeros((len(points), k))
        for p, point in enumerate(points):
            values = getattr(point, field)
            if len(values) == 0 and not required:
                continue
            if len(values) != k:
                raise RequestError(
                    f"points[{p}].{field} has {len(values)} values, expected {k} "
                    f"(one per joint name)"
                )
            out[p] = values
        out = out[:, perm]                   # (the model's joints: others are not checked)
        bad = np.argwhere(~np.isfinite(out))
        if bad.size:
            p, j = bad[0]
            raise RequestError(f"points[{p}].{field} is not finite for joint "
                               f"{names[perm[j]]!r}")
        return out

    return stacked("positions", True), stacked("velocities", require_velocities), \
        stacked("accelerations", False)


# --------------------------------------------------------------------------- services

class DynamicsServices:
    """Registers the six query services of ``node`` on ``host`` (a ServiceThread: names
    resolved by ``node``, answered on the host's thread; see the module docstring)."""

    def __init__(self, node, get_snapshot: Callable[[], Optional[Snapshot]], host):
        self._node = node
        self._host = host
        self._get_snapshot = get_snapshot
        specs = [
            (InverseDynamics, "~/inverse_dynamics", self._inverse_dynamics),
            (ForwardDynamics, "~/forward_dynamics", self._forward_dynamics),
            (GetMassMatrix, "~/get_mass_matrix", self._get_mass_matrix),
            (GetGravityTorques, "~/get_gravity_torques", self._get_gravity_torques),
            (GetEffectiveInertia, "~/get_effective_inertia", self._get_effective_inertia),
            (GetTrajectoryTorques, "~/get_trajectory_torques", self._get_trajectory_torques),
        ]
        self.services = []
        for srv_type, name, handler in specs:
            resolved = node.resolve_service_name(name)   # /<ns>/<node>/<service>
            service = host.create_service(srv_type, name, self._wrap(handler, resolved))
            self.services.append(service)

    def destroy(self) -> None:
        for service in self.services:
            self._host.destroy_service(service)
        self.services = []

    # One wrapper for every handler: snapshot check, error translation, no exceptions out.
    def _wrap(self, handler, name: str):
        def callback(request, response):
            snapshot = self._get_snapshot()
            if snapshot is None:
                response.success = False
                response.message = f"{name}: {NO_MODEL_MESSAGE}"
                return response
            try:
                handler(snapshot, request, response)
                response.success = True
            except ManipDynamicsError as exc:      # RequestError and every core error
                self._clear(response)
                response.success = False
                response.message = f"{name}: {_error_text(exc)}"
            except Exception as exc:  # never let a stray exception reach the executor
                self._node.get_logger().error(
                    f"{name}: unexpected error while answering a request:\n"
                    + traceback.format_exc()
                )
                self._clear(response)
                response.success = False
                response.message = f"{name}: internal error ({type(exc).__name__}: {exc})"
            return response

        return callback

    @staticmethod
    def _clear(response) -> None:
        """Reset a half-filled response to its defaults (no partial data with success=false)."""
        fresh = type(response)()
        for field in response.get_fields_and_field_types():
            setattr(response, field, getattr(fresh, field))

    # ---- handlers: (snapshot, request, response) -> None, raise on a bad request

    def _inverse_dynamics(self, snapshot: Snapshot, req, res) -> None:
        """tau = M qdd + C qd + g (+ tau_fr) - J(wrench_frame)^T F_ext."""
        model = snapshot.model
        q = joint_vector(model, req.joint_names, req.position, "position")
        qd = joint_vector(model, req.joint_names, req.velocity, "velocity", required=False)
        qdd = joint_vector(model, req.joint_names, req.acceleration, "acceleration",
                           required=False)
        wrench = _wrench(req.external_wrench)
        if not np.all(np.isfinite(wrench)):
            raise RequestError(f"external_wrench is not finite: {wrench.tolist()}")
        f_ext = f_frame = None
        if req.wrench_frame:
            f_ext, f_frame = wrench, req.wrench_frame
        elif np.any(wrench != 0.0):
            raise RequestError("external_wrench is non-zero but wrench_frame is empty")
        tau = model.inverse_dynamics(q, qd, qdd, friction=req.include_friction,
                                     f_ext=f_ext, f_ext_frame=f_frame)
        res.joint_names = list(model.joint_names)
        res.effort = _flat(tau)

    def _forward_dynamics(self, snapshot: Snapshot, req, res) -> None:
        """qdd = M^-1 (tau - C qd - g (- tau_fr))."""
        model = snapshot.model
        q = joint_vector(model, req.joint_names, req.position, "position")
        qd = joint_vector(model, req.joint_names, req.velocity, "velocity", required=False)
        tau = joint_vector(model, req.joint_names, req.effort, "effort")
        qdd = model.forward_dynamics(q, qd, tau, friction=req.include_friction)
        res.joint_names = list(model.joint_names)
        res.acceleration = _flat(qdd)

    def _get_mass_matrix(self, snapshot: Snapshot, req, res) -> None:
        model = snapshot.model
        q = joint_vector(model, req.joint_names, req.position, "position")
        m = np.asarray(model.mass_matrix(q), dtype=float)     # finite (the core checks)
        eig = np.linalg.eigvalsh(m)
        res.joint_names = list(model.joint_names)
        res.mass_matrix = _flat(m)
        res.eigenvalues = _flat(eig)
        # the core's rule (kernels.condition_number): +inf when numerically singular
        res.condition_number = spd_condition_number(m)

    def _get_gravity_torques(self, snapshot: Snapshot, req, res) -> None:
        """g(q); with use_payload, of a copy of the model carrying the extra payload."""
        model = snapshot.model
        q = joint_vector(model, req.joint_names, req.position, "position")
        if req.use_payload:
            frame, mass, com, inertia = _payload_arguments(req.payload)
            if frame not in model.frame_names:
                raise UnknownFrameError(
                    f"payload.frame_id {frame!r} is not a link of the model "
                    f"(links: {', '.join(model.frame_names)})"
                )
            try:
                model = model.with_payload(frame, mass, com, inertia)
            except InputError as exc:
                raise RequestError(f"payload (frame {frame!r}): {exc}") from None
        res.joint_names = list(model.joint_names)
        res.effort = _flat(model.gravity_torques(q))

    def _get_effective_inertia(self, snapshot: Snapshot, req, res) -> None:
        """Lambda = (J M^-1 J^T)^-1 at ``frame``: exact while cond(J M^-1 J^T) <=
        singular_condition, the damped inverse (the node's ``damping``) above it."""
        model = snapshot.model
        q = joint_vector(model, req.joint_names, req.position, "position")
        frame = req.frame or snapshot.tip_frame
        if frame not in model.frame_names:
            raise UnknownFrameError(
                f"frame {frame!r} is not a link of the model "
                f"(links: {', '.join(model.frame_names)})"
            )
        # one bundle: A, Lambda (damped only if near-singular) and the ellipsoid of A
        terms, ellipsoid = model.compute_all(
            q, np.zeros_like(q), frame, linear_only=bool(req.linear_only),
            damping=snapshot.damping, damping_condition=snapshot.singular_condition,
            ellipsoid=True)
        singular = bool(terms.singular)
        if singular and snapshot.damping <= 0.0:
            raise SingularConfigurationError(
                f"frame {frame!r} is at a singular configuration (condition number "
                f"{terms.condition_number:.3g}) and the node's 'damping' parameter "
                f"is 0, so no finite Lambda exists; set damping > 0"
            )
        lam = np.asarray(terms.Lambda, dtype=float)
        res.dimension = int(lam.shape[0])
        res.effective_inertia = _flat(lam)
        res.inverse_effective_inertia = _flat(terms.A)
        res.eigenvalues = _flat(ellipsoid.eigenvalues)
        res.eigenvectors = _flat(ellipsoid.eigenvectors)
        res.condition_number = float(terms.condition_number)
        res.singular = singular

    def _get_trajectory_torques(self, snapshot: Snapshot, req, res) -> None:
        """tau_p = M(q_p) qdd_p + C(q_p, qd_p) qd_p + g(q_p) (+ tau_fr) for every point p."""
        model = snapshot.model
        q, qd, qdd = trajectory_arrays(model, req.trajectory)
        tau = np.asarray(model.inverse_dynamics(q, qd, qdd, friction=req.include_friction),
                         dtype=float).reshape(q.shape)
        limits = np.asarray(model.effort_limits, dtype=float)
        over = np.abs(tau) > limits                      # inf limit: never exceeded
        res.joint_names = list(model.joint_names)
        res.effort = _flat(tau)
        res.peak_effort = _flat(np.max(np.abs(tau), axis=0))
        res.effort_limit = _flat(limits)
        res.exceeding_points = [int(p) for p in np.flatnonzero(over.any(axis=1))]
        res.exceeding_joints = [model.joint_names[j] for j in np.flatnonzero(over.any(axis=0))]
        if res.exceeding_joints:
            res.message = (f"{len(res.exceeding_points)} of {len(q)} points exceed the effort "
                           f"limit of: {', '.join(res.exceeding_joints)}")
