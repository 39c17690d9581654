"""The dynamics node's ``~/estimate_payload`` service (manip_dynamics_interfaces/EstimatePayload).

The node hands every accepted joint state to ``PayloadService.on_state`` (its
``state_listeners`` hook); states with velocities and efforts go into a
:class:`~manip_dynamics.rules.state_buffer.StateBuffer` (the last ``BUFFER_STATES``: 30 s
at 1 kHz, 5 min at 100 Hz). A request estimates the payload at a link from the newest
``duration`` seconds of it (:func:`~manip_dynamics.rules.state_buffer.estimate_from_states`),
against the node's current model WITHOUT its payload parameters (gravity and friction as
the node has them), and with ``apply`` sets the node's ``payload.*`` parameters to the
result through the node's own parameter validation, so ``~/dynamics``,
``~/gravity_torques`` ... include the payload from the next state on. The inertia is
applied only when it was estimated and is physically valid; otherwise zero (a point mass).

Bad requests (negative times, an unknown frame, too few or unexciting states) get
``success: false`` and a message; the node goes on.
"""
from __future__ import annotations

import math

from geometry_msgs.msg import Inertia, Vector3
from rclpy.parameter import Parameter

from manip_dynamics.core.errors import InputError
from manip_dynamics.nodes.services import guarded_answer
from manip_dynamics.rules.dynamics_parameters import (ParameterValueError, check_inertia,
                                                      make_snapshot)
from manip_dynamics.rules.effort_reader import EffortReader
from manip_dynamics.rules.state_buffer import DEFAULT_REST_SPEED, StateBuffer, estimate_from_states
from manip_dynamics_interfaces.msg import Payload
from manip_dynamics_interfaces.srv import EstimatePayload

# scipy.signal: the estimate filters the buffered states (pipeline.filter_recording imports
# it where it filters). A node imports it with its first estimate, not at start: 1.1 s of CPU
# that every node process paid (hundreds in the test suite) for a service few call. That
# first request takes about a second longer (more on a loaded machine); the node's states
# are served on the main thread meanwhile.

BUFFER_STATES = 30_000
SERVICE = "~/estimate_payload"


class PayloadService:
    """``state()`` returns the node's current ``Applied`` state (snapshot, base model and
    parameter values); ``host`` (a ServiceThread) serves the service on its own thread;
    ``effort``: the node's EffortReader (shared with the contact outputs: effort read once
    per state), or None for one of its own."""

    def __init__(self, node, state, host, capacity: int = BUFFER_STATES,
                 effort: EffortReader = None):
        self.node, self._state = node, state
        self.buffer = StateBuffer(capacity)
        # tau from msg.effort, names matched once
        self._effort = EffortReader() if effort is None else effort
        node.state_listeners.append(self.on_state)
        self.service = host.create_service(EstimatePayload, SERVICE, self.on_request)

    def warm_up(self, snapshot) -> None:
        """For a new robot model, before it is used (``DynamicsNode._warm_up``): the
        buffer's ring for its joints, allocated now rather than at its first state with
        efforts."""
        self.buffer.reserve(snapshot.model.joint_names)

    def on_state(self, snapshot, msg, q, qd, terms, momentum=None) -> None:
        """state listener: keep (t, q, qd, tau) of a state with velocities and efforts."""
        if qd is None or len(msg.effort) == 0:
            return
        try:
            tau = self._effort(snapshot.model, msg, snapshot.drive_gain)
        except InputError:      # efforts missing for some joint: not a usable state
            return
        t = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        self.buffer.append(snapshot.model.joint_names, t, q, qd, tau)

    def on_request(self, request, response):
        return guarded_answer(self.node, SERVICE, self._answer, request, response)

    def _answer(self, request, response) -> None:
        for name in ("duration", "rest_speed", "effort_delay"):
            value = getattr(request, name)
            if not math.isfinite(value) or value < 0:
                raise InputError(f"{name} must be finite and >= 0, got {value}")
        state = self._state()
        if state.snapshot is None:
            raise InputError("no robot model yet")
        frame = request.frame or state.snapshot.tip_frame
        arm = make_snapshot(state.base_model, {**state.values, "payload.frame": ""}).model
        names, t, q, qd, tau = self.buffer.last(request.duration)
        if tuple(names) != tuple(arm.joint_names):
            raise InputError("no buffered joint states with velocities and efforts for the "
                             "current model")
        est = estimate_from_states(arm, frame, t, q, qd, tau, request.static_only,
                                   request.rest_speed or DEFAULT_REST_SPEED, request.effort_delay)
        inertia6, note = self._inertia(est)
        response.payload = Payload(frame_id=frame, inertia=Inertia(
            m=est.mass, com=Vector3(x=float(est.com[0]), y=float(est.com[1]),
                                    z=float(est.com[2])),
            ixx=inertia6[0], ixy=inertia6[1], ixz=inertia6[2], iyy=inertia6[3],
            iyz=inertia6[4], izz=inertia6[5]))
        response.inertia_estimated = not note
        response.mass_std = est.mass_std
        response.com_std = [float(x) for x in est.com_std]
        response.residual_rms = [float(x) for x in est.residual_rms]
        response.states_used = len(t)
        response.success = True
        response.message = (f"payload at {frame}: {est.mass:.4g} kg, com "
                            f"[{', '.join(f'{c:.4g}' for c in est.com)}] m from {len(t)} states"
                            + note)
        if request.apply:
            response.applied, reason = self._apply(frame, est, inertia6)
            response.message += "; applied" if response.applied else f"; NOT applied: {reason}"

    @staticmethod
    def _inertia(est):
        """([ixx ixy ixz iyy iyz izz] about the com, '' or a note why it is zero)."""
        if est.inertia is None:
            return [0.0] * 6, " (inertia not excited: point mass)"
        I = est.inertia
        six = [float(x) for x in (I[0, 0], I[0, 1], I[0, 2], I[1, 1], I[1, 2], I[2, 2])]
        try:
            check_inertia("inertia", six)
        except ParameterValueError as exc:
            return [0.0] * 6, f" (estimated inertia not physical, {exc.reason}: point mass)"
        return six, ""

    def _apply(self, frame, est, inertia6):
        result = self.node.set_parameters_atomically([
            Parameter("payload.frame", Parameter.Type.STRING, frame),
            Parameter("payload.mass", Parameter.Type.DOUBLE, float(est.mass)),
            Parameter("payload.com", Parameter.Type.DOUBLE_ARRAY, [float(c) for c in est.com]),
            Parameter("payload.inertia", Parameter.Type.DOUBLE_ARRAY, inertia6)])
        return bool(result.successful), result.reason
