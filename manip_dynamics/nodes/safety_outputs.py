"""The dynamics node's collaborative-safety outputs (ISO/TS 15066 power and force limiting).

Plugged into ``DynamicsNode`` through its ``state_listeners`` hook. While
``safety.enabled`` is true, for every computed state with velocities (at most
``safety.rate`` Hz; 0: every one)::

    ~/collision_safety  manip_dynamics_interfaces/CollisionSafety  per monitored point: link,
                        position, speed, direction, effective mass along the motion,
                        permissible speed for safety.body_region, ratio; the worst point;
                        speed_scale; the standard's M/2 + m_L beside it
    ~/speed_scale       std_msgs/Float64   min(1, 1 / max ratio), for a speed-scaled
                        trajectory controller
    ~/safety_markers    visualization_msgs/MarkerArray  a sphere per point coloured from
                        green (ratio 0) to red (ratio >= 1), at most 10 Hz, while subscribed

and the service ``~/check_trajectory_safety`` (CheckTrajectorySafety): a JointTrajectory's
waypoints assessed, the scale s and the trajectory retimed by it, served on the node's
service thread (``service_thread.ServiceThread``: the per-state outputs never wait for it;
at most ``services.MAX_TRAJECTORY_POINTS`` waypoints a request). The computations are
:mod:`manip_dynamics.safety` (docs/safety.md); the options ``safety.*`` are judged by
:mod:`manip_dynamics.rules.safety_options` before they are applied.
"""
from __future__ import annotations

import threading
import time

import numpy as np
from geometry_msgs.msg import Point, Vector3
from std_msgs.msg import ColorRGBA, Float64, Header
from visualization_msgs.msg import Marker, MarkerArray

from manip_dynamics.core.errors import InputError, ManipDynamicsError
from manip_dynamics.nodes import wire
from manip_dynamics.nodes.services import guarded_answer, trajectory_arrays
from manip_dynamics.rules.safety_options import body_model, monitored_extra, options_from_values
from manip_dynamics.rules.throttled_log import ThrottledLog
from manip_dynamics.safety import SafetyMonitor, check_trajectory, default_points
from manip_dynamics.safety import kernel as K
from manip_dynamics_interfaces.msg import CollisionSafety, SafetyPoint
from manip_dynamics_interfaces.srv import CheckTrajectorySafety

WARNING_PERIOD = 5.0
MARKER_PERIOD = 0.1          # s: ~/safety_markers at most 10 Hz
MARKER_DIAMETER = 0.05       # m
SERVICE = "~/check_trajectory_safety"
MAX_TIME_FROM_START = 2 ** 31 - 1    # s: builtin_interfaces/Duration's int32 sec


class SafetyOutputs:
    """Publishers, the service and the SafetyMonitor of one DynamicsNode (module doc).
    ``state()`` returns the node's current ``Applied`` (snapshot and parameter values);
    ``host`` (a ServiceThread) serves the service. ``_lock`` guards the per-state monitor
    and its buffers only: a request holds it just to read them, never while it computes."""

    def __init__(self, node, state, host):
        self.node, self._state = node, state
        self._lock = threading.Lock()
        self._built_for = None        # the node's Applied state the monitor was built for
        self._monitor = self._options = self._wires = None
        self._last = self._last_markers = -np.inf
        self._log = ThrottledLog(node.get_logger(), WARNING_PERIOD)
        self.safety_pub = node.create_publisher(CollisionSafety, "~/collision_safety", 10)
        self.scale_pub = node.create_publisher(Float64, "~/speed_scale", 10)
        self.markers_pub = node.create_publisher(MarkerArray, "~/safety_markers", 10)
        self.service = host.create_service(CheckTrajectorySafety, SERVICE, self.on_request)
        node.state_listeners.append(self.on_state)

    def _current(self):
        """(monitor, options) for the node's current state; a new monitor only after the
        node swapped in a new state (a parameter or model change)."""
        applied = self._state()
        if applied.snapshot is None:
            raise InputError("no robot model yet")
        if applied is not self._built_for:
            options = options_from_values(applied.values)
            self._monitor = self._build(applied.snapshot, options, options.region,
                                        options.contact_area)
            self._wires = SafetyWires(self._monitor, applied.snapshot.model.root_link)
            self._built_for, self._options = applied, options
        return self._monitor, self._options

    def warm_up(self, snapshot) -> None:
        """For a new robot model, before it is used (``DynamicsNode._warm_up``): one
        assessment by a throwaway monitor of its default points and the current options,
        its layouts checked against rclpy (SafetyWires), so that the first state with
        velocities while ``safety.enabled`` does not dispatch ``assess_into``'s numba
        kernel (loaded from the cache: ~0.1 s, while the next states queue). The monitor
        the states use is still built at the first one (for the options then)."""
        options = options_from_values(self._state().values)
        model = snapshot.model
        monitor = SafetyMonitor(model, default_points(model, snapshot.tip_frame),
                                options.region, options.contact_area)
        table = SafetyWires(monitor, model.root_link).table
        monitor.assess_into(np.zeros(model.n), np.zeros(model.n), table)

    @staticmethod
    def _build(snapshot, options, region, contact_area, payload_mass=0.0):
        model = snapshot.model
        if payload_mass:
            model = _with_extra_point_mass(model, snapshot.tip_frame, payload_mass)
        points = default_points(model, snapshot.tip_frame, monitored_extra(options))
        return SafetyMonitor(model, points, region, contact_area)

    # ------------------------------------------------------------------ states
    def on_state(self, snapshot, msg, q, qd, terms, momentum=None) -> None:
        """The state listener: assess one computed state with velocities, if someone
        subscribes to an output (as the node's other outputs: a volatile message nobody
        receives is not built). The outputs are the monitor's serialised layouts
        (SafetyWires), rewritten per state."""
        if qd is None or not self._state().values["safety.enabled"]:
            return
        now = time.monotonic()
        safety, scaling = (self.safety_pub.get_subscription_count() > 0,
                           self.scale_pub.get_subscription_count() > 0)
        with self._lock:
            try:
                monitor, options = self._current()
                if options.rate > 0 and now - self._last < 1.0 / options.rate:
                    return
                markers = (options.markers and now - self._last_markers >= MARKER_PERIOD
                           and self.markers_pub.get_subscription_count() > 0)
                if not (safety or scaling or markers):
                    return                # nobody listens: a volatile message would be lost
                self._last = now
                out = self._wires             # (the service may swap in new ones meanwhile)
                worst, scale = monitor.assess_into(q, qd, out.table)
            except ManipDynamicsError as exc:
                self._log("warning", "safety:" + type(exc).__name__,
                          f"~/collision_safety not published: {exc}")
                return
        stamp = msg.header.stamp
        header = None if out.raw else Header(stamp=stamp, frame_id=snapshot.model.root_link)
        if safety:
            self.safety_pub.publish(
                out.safety.fill(stamp, out.table, worst, scale) if out.raw
                else _safety_message(header, monitor, out.table, worst, scale))
        if scaling:
            self.scale_pub.publish(out.scale.fill(scale) if out.raw else Float64(data=scale))
        if markers:
            self._last_markers = now
            header = header or Header(stamp=stamp, frame_id=snapshot.model.root_link)
            self.markers_pub.publish(_markers(header, out.table))

    # ------------------------------------------------------------------ service
    def on_request(self, request, response):
        return guarded_answer(self.node, SERVICE, self._answer, request, response)

    def _answer(self, request, response):
        with self._lock:           # (the per-state monitor: built for the current state)
            monitor, options = self._current()
            applied = self._built_for
        region = (monitor.region if not request.body_region
                  else body_model(applied.values["safety.body_model"])[request.body_region])
        if request.payload_mass < 0 or not np.isfinite(request.payload_mass):
            raise InputError(f"payload_mass must be finite and >= 0 (kg), got "
                             f"{request.payload_mass}")
        if request.contact_area < 0 or not np.isfinite(request.contact_area):
            raise InputError(f"contact_area must be finite and >= 0 (m^2), got "
                             f"{request.contact_area}")
        monitor = self._build(applied.snapshot, options, region,
                              request.contact_area or options.contact_area,
                              request.payload_mass)
        traj = request.trajectory
        P, V, _ = trajectory_arrays(monitor.kinematics.model, traj, allow_extra=True,
                                    require_velocities=True)
        t = [p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in traj.points]
        check = check_trajectory(monitor, P, V, t, max_time=MAX_TIME_FROM_START)
        labels = [p.label for p in monitor.points]
        response.worst_point = [labels[i] for i in check.worst]
        response.ratio = [float(x) for x in check.ratio]
        response.scale = float(check.scale)
        response.retimed = _retimed(traj, check)
        response.success = True
        response.message = (f"{len(P)} waypoints, body region {region.key}: max ratio "
                            f"{check.ratio.max():.3g} at waypoint {int(check.ratio.argmax())} "
                            f"({response.worst_point[int(check.ratio.argmax())]}); "
                            + ("compliant as planned" if check.scale == 1.0
                               else f"retimed {check.scale:.3g}x slower"))


def _with_extra_point_mass(model, frame, mass):
    """model with ``mass`` kg added as a point at ``frame``'s origin to the payload there
    (combined by the parallel-axis theorem)."""
    m0, c0, I0 = model.payloads.get(frame, (0.0, np.zeros(3), np.zeros((3, 3))))
    m = m0 + mass
    c = m0 * np.asarray(c0) / m
    d0, d1 = np.asarray(c0) - c, -c
    shift = (lambda mm, d: mm * (d @ d * np.eye(3) - np.outer(d, d)))
    return model.with_payload(frame, m, c, np.asarray(I0) + shift(m0, d0) + shift(mass, d1))


def _retimed(traj, check):
    """The request's trajectory ``traj`` with times x s, velocities / s, accelerations / s^2
    (every joint of the request, also those the model does not know), changed in place and
    returned: the request is not used after the call, and a copy cost 4x the check per
    waypoint. s = 1 (compliant): ``traj`` as it came, times exact to the nanosecond."""
    s = check.scale
    if s == 1.0:
        return traj
    times = np.asarray(check.time_from_start, dtype=float)
    if not (np.abs(times) < 2.0 ** 31).all():     # (also inf / NaN)
        raise InputError(f"the retimed time_from_start reaches {np.max(np.abs(times)):.3g} s, "
                         f"beyond builtin_interfaces/Duration (int32 seconds)")
    ns = np.rint(times * 1e9).astype(np.int64)
    sec, nanosec = np.divmod(ns, 1_000_000_000)
    for pt, whole, part in zip(traj.points, sec.tolist(), nanosec.tolist()):
        stamp = pt.time_from_start
        stamp.sec, stamp.nanosec = whole, part
        _divide(pt.velocities, s)
        _divide(pt.accelerations, s ** 2)
    return traj


def _divide(values, d):
    """values /= d in place (an array.array('d') of a message: its buffer, no new list)."""
    if len(values):
        array = np.frombuffer(values, dtype=np.float64)
        np.divide(array, d, out=array)


class SafetyWires:
    """The per-state buffers of one SafetyMonitor: its table (P, kernel.COLUMNS) and the
    serialised ~/collision_safety and ~/speed_scale (:mod:`manip_dynamics.nodes.wire`),
    checked once against rclpy's deserialisation of the messages built field by field
    (``raw`` False: they read back otherwise, publish the messages)."""

    def __init__(self, monitor, root_link):
        points = monitor.points
        self.table = np.empty(monitor.kinematics.table_shape)
        self.safety = wire.CollisionSafetyWire(
            root_link, monitor.region.key, float(monitor.contact_area or 0.0),
            [p.link for p in points], [p.label for p in points],
            float(monitor.simplified_mass), float(monitor.simplified_v_max))
        self.scale = wire.Float64Wire()
        probe = np.sin(np.arange(1.0, 1.0 + self.table.size)).reshape(self.table.shape)
        probe[0, K.MASS] = np.inf                   # (a point the arm cannot move)
        header = Header(frame_id=root_link)
        header.stamp.sec, header.stamp.nanosec = 1_700_000_123, 987_654_321
        worst, scale = len(points) - 1, 0.625
        self.raw = (wire.matches(self.safety.fill(header.stamp, probe, worst, scale),
                                 _safety_message(header, monitor, probe, worst, scale))
                    and wire.matches(self.scale.fill(scale), Float64(data=scale)))


def _safety_message(header, monitor, table, worst, scale):
    """CollisionSafety from a kernel table (P, COLUMNS), the worst row and the speed scale."""
    msg = CollisionSafety(header=header, body_region=monitor.region.key,
                          contact_area=float(monitor.contact_area or 0.0),
                          worst=int(worst), speed_scale=float(scale),
                          simplified_robot_mass=float(monitor.simplified_mass),
                          simplified_permissible_speed=float(monitor.simplified_v_max))
    msg.points = [SafetyPoint(
        link=p.link, label=p.label,
        position=Point(x=row[K.X], y=row[K.Y], z=row[K.Z]), speed=row[K.SPEED],
        direction=Vector3(x=row[K.UX], y=row[K.UY], z=row[K.UZ]),
        effective_mass=row[K.MASS], permissible_speed=row[K.V_MAX], ratio=row[K.RATIO])
        for p, row in zip(monitor.points, table.tolist())]
    return msg


def _markers(header, table):
    """A sphere per monitored point (rows of a kernel table): green (ratio 0) to red
    (ratio >= 1)."""
    array = MarkerArray()
    for i, row in enumerate(table.tolist()):
        x = min(max(row[K.RATIO], 0.0), 1.0)
        m = Marker(header=header, ns="safety_points", id=i, type=Marker.SPHERE,
                   action=Marker.ADD)
        m.pose.position = Point(x=row[K.X], y=row[K.Y], z=row[K.Z])
        m.pose.orientation.w = 1.0
        m.scale = Vector3(x=MARKER_DIAMETER, y=MARKER_DIAMETER, z=MARKER_DIAMETER)
        m.color = ColorRGBA(r=x, g=1.0 - x, b=0.0, a=0.9)
        array.markers.append(m)
    return array
