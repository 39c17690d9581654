"""The dynamics node's contact outputs: the momentum observer on joint_states' ``effort``.

Plugged into ``DynamicsNode`` through its ``state_listeners`` hook (called after the
outputs of every accepted joint state, with the node's snapshot, the message, q and qd in
model order). For every accepted state whose message carries ``effort``::

    ~/external_torques  sensor_msgs/JointState   position = q, velocity = qd,
                                                 effort = r (the residual r - bias ~ tau_ext)
    ~/external_wrench   geometry_msgs/WrenchStamped  F = (J^T)^+ r at the tip frame's origin,
                                                 root axes (frame_id = the root link)
    ~/contact           manip_dynamics_interfaces/Contact  detection, isolated link, point,
                                                 and external_torques (with joint_names) and
                                                 external_wrench (with wrench_frame, the tip
                                                 frame): the values of the two above, bit for
                                                 bit (a 1 kHz consumer reads only this one)
    ~/contact_markers   visualization_msgs/MarkerArray  the tip-force arrow and the
                                                 isolated link (at most observer.markers_rate Hz;
                                                 a contact entered or left at once)

services ``~/reset_observer`` and ``~/zero_observer`` (std_srvs/Trigger). Every output
carries the joint state's stamp. Without effort the outputs stay silent and one info line
says why (again only after effort came and went). The bookkeeping (what is integrated,
the gap rule, restarts) is :mod:`manip_dynamics.rules.contact_monitor`; docs/node.md.

Per state: the node's own compute_all run gives p = M qd and C^T qd with its other terms
(``momentum``); tau is the node's EffortReader's (read once per state for every listener);
the observer step, detection and tip wrench run in buffers, in one numba call
(``ContactMonitor.update_terms``), and ~/external_torques, ~/external_wrench and ~/contact
are laid out once (:mod:`manip_dynamics.nodes.wire`: per input frame_id, per isolated
joint and tip frame) and only their stamp and values rewritten, each layout checked once
against rclpy's deserialisation of the message built field by field (should one read back
otherwise, the messages themselves are published). Each of the three is built and
published only while someone subscribes (``state_outputs.Subscribed``: a yes is kept
0.1 s) and when due by its switch, ``outputs.<name>.enabled`` / ``outputs.<name>.rate``
(Hz, 0 = every state; ``Snapshot.contact_outputs``, a ``state_outputs.RateGate`` each, new
when a value changes). Each reliable DDS write to a reader in another process costs CPU per
state, so a 1 kHz consumer subscribes to ~/contact alone. The observer runs on every state
whoever listens and whatever the switches say (the residual, detection and contact state
never depend on them), and a change of them keeps it running. The markers stay Python
messages (at most ``observer.markers_rate``), built only while ~/contact_markers has a
subscriber (asked when an update is due).
"""
from __future__ import annotations

import math
import threading
import time

from builtin_interfaces.msg import Time
from geometry_msgs.msg import Point, Vector3, WrenchStamped
from sensor_msgs.msg import JointState
from std_msgs.msg import ColorRGBA, Header
from std_srvs.srv import Trigger
from visualization_msgs.msg import Marker, MarkerArray

import numpy as np

from manip_dynamics.core.contact.detector import (ContactPoint, arm_topology, joint_candidates,
                                                  link_segment)
from manip_dynamics.core.errors import InputError, ManipDynamicsError
from manip_dynamics.nodes import wire
from manip_dynamics.nodes.service_thread import SERVICE_QOS
from manip_dynamics.nodes.state_outputs import RateGate, Subscribed
from manip_dynamics.rules.contact_monitor import ContactMonitor
from manip_dynamics.rules.effort_reader import EffortReader
from manip_dynamics.rules.throttled_log import ThrottledLog
from manip_dynamics_interfaces.msg import Contact

WARNING_PERIOD = 5.0          # s: a repeated problem is logged at most this often
FORCE_NS, LINK_NS, POINT_NS = "tip_force", "isolated_link", "contact_point"


def _f64(values):
    return [float(x) for x in values]


class ContactOutputs:
    """Publishers, services and the ContactMonitor of one DynamicsNode (module docstring)."""

    def __init__(self, node, effort: EffortReader = None):
        self.node = node
        self._lock = threading.Lock()     # monitor: listener vs services
        self._monitor = None
        self._monitor_snapshot = None     # the snapshot _monitor was last checked against
        self._effort_seen = None          # None: no state yet; else the last state had effort
        self._last_markers = -math.inf
        self._wires = None                # ContactWires of the model last published
        self._prepared = (None, None)     # (snapshot, a fresh ContactMonitor): warm_up's
        # tau from msg.effort, names matched once (the node's reader: read once per state)
        self._effort = EffortReader() if effort is None else effort
        self._log = ThrottledLog(node.get_logger(), WARNING_PERIOD)
        self.torques_pub = node.create_publisher(JointState, "~/external_torques", 10)
        self.wrench_pub = node.create_publisher(WrenchStamped, "~/external_wrench", 10)
        self.contact_pub = node.create_publisher(Contact, "~/contact", 10)
        self.markers_pub = node.create_publisher(MarkerArray, "~/contact_markers", 10)
        # the per-state outputs are built only while someone subscribes (as StateOutputs')
        # and when due by their outputs.<name>.* switch (Snapshot.contact_outputs' order)
        self._subscribed = tuple(Subscribed(pub) for pub in (
            self.torques_pub, self.wrench_pub, self.contact_pub, self.markers_pub))
        # the serialised layouts' bytes go to the handles' publish_raw (what
        # Publisher.publish does with bytes, without its type check and ``with handle``
        # guard: ~1 us a message; see state_outputs.Subscribed on the guard)
        self._publish_raw = tuple(pub.handle.publish_raw for pub in (
            self.torques_pub, self.wrench_pub, self.contact_pub))
        self._switches = None             # the Snapshot.contact_outputs _gates are for
        self._gates = ()
        # the contact calibration in force (nodes.contact_calibration.InForce or None), the
        # (monitor, calibration) it was last applied as, and the run collecting
        # samples for a new one (rules.calibration_run.CalibrationRun or None) with the
        # callable told when a run completes (on this thread)
        self.calibration = None
        self._applied = (None, None)
        self.run = None
        self.on_run_complete = None
        self._last_qd = None              # qd of the last sample integrated (a copy)
        # on the node's own thread (they change the observer the states update), with the
        # request queue of the other services
        node.create_service(Trigger, "~/reset_observer", self._on_reset,
                            qos_profile=SERVICE_QOS)
        node.create_service(Trigger, "~/zero_observer", self._on_zero,
                            qos_profile=SERVICE_QOS)
        # the listener object registered (a bound method is a new object on each access:
        # the node finds this one with ``is`` to time the observer's share)
        self.listener = self.on_state
        node.state_listeners.append(self.listener)

    # ------------------------------------------------------------------ services
    def _on_reset(self, request, response):
        return self._service(response, "reset", "observer reset: r = 0, bias cleared, "
                                                "contact forgotten")

    def _on_zero(self, request, response):
        return self._service(response, "zero", "observer zeroed: bias = the current "
                                               "residual")

    def _service(self, response, action, text):
        """reset succeeds always (with no observer running, the next one starts at r = 0
        anyway); zero needs a running observer (it has no residual to take as bias)."""
        with self._lock:
            if self._monitor is None and action == "zero":
                response.success = False
                response.message = ("no observer running (no robot model, observer.enabled "
                                    "false, or no joint_states with effort yet)")
                return response
            if self._monitor is not None:
                getattr(self._monitor, action)()
        self.node.get_logger().info(text)
        response.success, response.message = True, text
        return response

    # ------------------------------------------------------------------ states
    def on_state(self, snapshot, msg, q, qd, terms, momentum=None) -> None:
        """The state listener: one accepted joint state (DynamicsNode's hook). terms and
        momentum: the node's compute_all run of this state (tip frame, momentum=True);
        computed here when the node did not (None)."""
        options = snapshot.observer
        if not options.enabled:
            with self._lock:
                self._monitor = None
            return
        if not (self._effort_seen is True and len(msg.effort)) and not self._has_effort(msg):
            return
        with self._lock:
            monitor = self._monitor
            if monitor is None or snapshot is not self._monitor_snapshot:
                monitor = self._monitor_for(snapshot)     # (the same snapshot: the same)
                self._monitor_snapshot = snapshot
            if self._applied[0] is not monitor or self._applied[1] is not self.calibration:
                self._apply_calibration(monitor)
            try:
                if qd is None:
                    raise InputError("no velocities: the observer needs qd (p = M(q) qd)")
                tau = self._effort(snapshot.model, msg, snapshot.drive_gain)
                if momentum is None or terms is None:
                    terms, momentum = snapshot.model.compute_all(q, qd, snapshot.tip_frame,
                                                                 momentum=True)
                header = msg.header
                stamp = header.stamp
                t = monitor.seconds(stamp.sec, stamp.nanosec)
                live = monitor.update_terms(t, q, qd, tau, terms, momentum)
            except InputError as exc:
                self._log("warning", "observer:" + str(exc)[:40],
                          f"observer: sample not integrated: {exc}")
                return
            except ManipDynamicsError as exc:     # e.g. an overflowing model term
                self._log("warning", "observer-core:" + type(exc).__name__,
                          f"observer: sample not integrated: {exc}")
                return
            if live.event in ("gap_bridged", "gap_reset", "restart"):
                self._log("info", "observer-event:" + live.event,
                          f"observer: {live.event.replace('_', ' ')} at stamp "
                          f"{monitor.absolute(t):.6f} s (observer.max_gap "
                          f"{options.max_gap} s, observer.gap {options.gap})")
            last = self._last_qd
            if last is None or last.shape != qd.shape:
                last = self._last_qd = np.empty_like(qd, dtype=np.float64)
            last[:] = qd
            if self.run is not None:
                self._collect(snapshot, monitor, live, q, qd, stamp)
            self._publish(snapshot, header, monitor, q, qd, live)

    # ------------------------------------------------------------------ calibration
    def start_run(self, run) -> bool:
        """Collect the observer's samples into ``run`` from the next state on; False (and
        nothing started) while another run collects."""
        with self._lock:
            if self.run is not None and not self.run.finished.is_set():
                return False
            self.run = run
            return True

    def stop_run(self, run) -> None:
        """Stop collecting into ``run`` (finished or given up)."""
        with self._lock:
            if self.run is run:
                self.run = None

    def _collect(self, snapshot, monitor, live, q, qd, stamp) -> None:
        """One integrated sample into the calibration run: t, q, qd and the RAW residual r
        (the bias is what is learned). An observer restart (stamps going back) gives the
        run up: its samples would not be one stretch."""
        run = self.run
        if live.event == "restart":
            run.abandon("the joint-state stamps went back (observer restart) during the "
                        "calibration")
        elif run.joints(snapshot.model.joint_names) and run.add(
                live.t, q, qd, monitor.observer.raw_residual, (stamp.sec, stamp.nanosec)):
            if self.on_run_complete is not None:
                self.on_run_complete(run)
        if run.finished.is_set():
            self.run = None

    def set_calibration(self, in_force) -> None:
        """Make ``in_force`` (nodes.contact_calibration.InForce, or None) the calibration in
        force: applied to the running observer now, its contact forgotten (judged on the
        old thresholds), or to the next observer; InputError, nothing changed, when it does
        not fit the running one (other joints, other gains)."""
        with self._lock:
            monitor = self._monitor
            if monitor is not None:
                monitor.set_calibration(None if in_force is None else in_force.calibration)
                monitor.detector.reset()
                self._prime(monitor)
                self._applied = (monitor, in_force)
            self.calibration = in_force

    def _prime(self, monitor) -> None:
        """Motion thresholds applied to a running observer start from its last sample (t,
        qd): without it their envelopes start at rest (speed and acceleration 0), and the
        first sample of an arm in motion would be judged on the thresholds at rest."""
        thresholds, t = monitor.thresholds, monitor.observer.time
        if thresholds is not None and t is not None and self._last_qd is not None \
                and self._last_qd.shape == (monitor.model.n,):
            thresholds.enter(t, self._last_qd)

    def _apply_calibration(self, monitor) -> None:
        """The calibration in force on ``monitor`` (a new observer or a new calibration;
        ``observer.thresholds`` says how: ContactMonitor.set_calibration); one that does
        not fit is logged and the observer runs on observer.enter_thresholds."""
        in_force = self.calibration
        self._applied = (monitor, in_force)
        calibration = None if in_force is None else in_force.calibration
        if monitor.calibration is calibration:
            return
        try:
            monitor.set_calibration(calibration)
        except InputError as exc:
            monitor.set_calibration(None)
            self._log("error", "calibration-misfit", f"contact calibration from "
                      f"{in_force.source} not applied: {exc}; observer.enter_thresholds "
                      "apply (calibrate again: ~/calibrate_contact)")

    def _has_effort(self, msg) -> bool:
        """Log the no-effort line once per change; True when the message carries effort."""
        has = len(msg.effort) > 0
        if not has and self._effort_seen is not False:
            self.node.get_logger().info(
                "joint_states carry no effort: ~/external_torques, ~/external_wrench, "
                "~/contact and ~/contact_markers stay silent (the momentum observer needs "
                "the measured joint torques in effort)")
        self._effort_seen = has
        return has

    def _monitor_for(self, snapshot) -> ContactMonitor:
        """The monitor for this snapshot: kept, retargeted or started over (rules)."""
        old = self._monitor
        if old is None:
            prepared_for, prepared = self._prepared
            if prepared_for is snapshot:              # (built by warm_up, never fed)
                self._monitor, self._prepared = prepared, (None, None)
            else:
                self._monitor = ContactMonitor(snapshot.model, snapshot.observer,
                                               snapshot.tip_frame)
        else:
            self._monitor = old.retarget(snapshot.model, snapshot.observer, snapshot.tip_frame)
            if self._monitor is not old:
                self.node.get_logger().info(
                    "observer started over (r = 0, bias cleared): the robot model's dynamics "
                    "or the observer.* parameters changed")
        return self._monitor

    def warm_up(self, snapshot) -> None:
        """Do now, for a new robot model (``DynamicsNode._warm_up``, before the model is
        used), what the first state with effort would otherwise start while the next
        states queue (~0.3 s: latest wins then skips them): a throwaway ContactMonitor of
        ``snapshot`` fed two samples at rest on the node's own compute_all terms (the first
        dispatch of observe_contact_norm's numba kernels, loaded from numba's cache or
        compiled), and the contact outputs' layouts of the model (~/external_wrench,
        ~/external_torques of an input without frame_id, ~/contact free and isolating
        each joint), each checked against rclpy's deserialisation and kept for the first
        publish. The running observer is not touched; the one the first state with
        effort of ``snapshot`` starts (if none runs then) is built now. Raises what the
        core raises (the node logs it: a warm-up failure is not an error of the model)."""
        model, tip = snapshot.model, snapshot.tip_frame
        q, qd = np.zeros(model.n), np.zeros(model.n)
        terms, momentum = model.compute_all(q, qd, tip, damping=snapshot.damping,
                                            damping_condition=snapshot.singular_condition,
                                            momentum=True)
        fed = ContactMonitor(model, snapshot.observer, tip)
        tau = np.array(terms.g, dtype=np.float64)        # (as the EffortReader gives tau)
        for t in (0.0, 1e-3):                            # start, then a step
            fed.update_terms(t, q, qd, tau, terms, momentum)
        wires = ContactWires(model, tip)
        wires.torques("")
        for joint in range(-1, model.n):
            wires.contact(joint)
        self._wires = wires
        # the observer the first state with effort of this snapshot starts (never fed)
        self._prepared = (snapshot, ContactMonitor(model, snapshot.observer, tip))

    # ------------------------------------------------------------------ messages
    def _publish(self, snapshot, in_header, monitor, q, qd, live) -> None:
        now = time.monotonic()
        # enabled, subscribed to, due by its rate (in that order, as StateOutputs._due)
        (g0, g1, g2), subscribed = self._gates_for(snapshot), self._subscribed
        torques_on = g0.enabled and subscribed[0](now) and g0.due(now)
        wrench_on = g1.enabled and subscribed[1](now) and g1.due(now)
        contact_on = g2.enabled and subscribed[2](now) and g2.due(now)
        # markers at most observer.markers_rate (a contact entered or left at once), and
        # only while someone subscribes (asked when they are due: a subscriber gets the
        # next due markers)
        markers_due = bool(live.contact_event) or (
            now - self._last_markers >= 1.0 / snapshot.observer.markers_rate)
        if markers_due and not subscribed[3](now):
            markers_due, self._last_markers = False, now
        if not (torques_on or wrench_on or contact_on or markers_due):
            return
        model = snapshot.model
        wires = self._wires
        if wires is None or wires.model is not model or wires.tip_frame != snapshot.tip_frame:
            wires = self._wires = ContactWires(model, snapshot.tip_frame)
        detection = monitor.absolute(live.detection_time) if live.in_contact else 0.0
        point = live.point
        stamp = in_header.stamp
        # the layouts first: one checked now for the first time may turn raw off
        torques = wires.torques(in_header.frame_id) if wires.raw and torques_on else None
        contact = wires.contact(live.joint) if wires.raw and contact_on else None
        if wires.raw:                    # (bytes, straight to the rclpy handles)
            publish_raw = self._publish_raw
            if torques_on:
                publish_raw[0](torques.fill(stamp, q, qd, live.residual))
            if wrench_on:
                publish_raw[1](wires.wrench.fill(stamp, live.F))
            if contact_on:
                publish_raw[2](contact.fill(
                    stamp, live.in_contact, live.residual_norm, detection,
                    None if point is None else point.point,
                    None if point is None else point.force, live.residual, live.F))
        else:
            root = Header(stamp=stamp, frame_id=model.root_link)
            if torques_on:
                self.torques_pub.publish(torques_message(
                    Header(stamp=stamp, frame_id=in_header.frame_id), model.joint_names, q,
                    qd, live.residual))
            if wrench_on:
                self.wrench_pub.publish(wrench_message(root, live.F))
            if contact_on:
                self.contact_pub.publish(contact_message(root, model, live, detection,
                                                         snapshot.tip_frame))
        if markers_due:
            try:
                root = Header(stamp=stamp, frame_id=model.root_link)
                self.markers_pub.publish(contact_markers(root, snapshot, q, live,
                                                         monitor.detector.topology))
                self._last_markers = now
            except ManipDynamicsError as exc:
                self._log("warning", "contact-markers", f"~/contact_markers not published: "
                                                        f"{exc}")

    def _gates_for(self, snapshot) -> tuple:
        """The RateGates of ~/external_torques, ~/external_wrench, ~/contact for this
        snapshot's ``contact_outputs`` (``outputs.<name>.enabled`` / ``.rate``): new when
        those changed (the next state is due on each), else kept (their slots run on)."""
        switches = snapshot.contact_outputs
        if switches is not self._switches:
            if switches != self._switches:
                self._gates = tuple(RateGate(s.enabled, s.rate) for s in switches)
            self._switches = switches
        return self._gates


class ContactWires:
    """The serialised layouts of ~/external_torques (per input frame_id, cache of 8),
    ~/external_wrench and ~/contact (per isolated joint, -1 for none) of one model and
    tip frame (~/contact's wrench_frame), each checked on first use against rclpy's
    deserialisation of the message built field by field (``raw`` False from the first
    one that reads back otherwise)."""

    FRAME_CACHE_SIZE = 8

    def __init__(self, model, tip_frame: str):
        self.model, self.tip_frame = model, tip_frame
        self.raw = True
        self._torques = {}
        self._contact = {}
        root = model.root_link
        self.wrench = wire.WrenchStampedWire(root)
        F = np.arange(1.0, 7.0) * 1.25
        self.raw = wire.matches(self.wrench.fill(_PROBE_STAMP, F),
                                wrench_message(Header(stamp=_PROBE_STAMP, frame_id=root), F))

    def torques(self, frame_id: str) -> wire.JointStateWire:
        layout = self._torques.get(frame_id)
        if layout is None:
            names = list(self.model.joint_names)
            layout = wire.JointStateWire(names, frame_id, True)
            if len(self._torques) >= self.FRAME_CACHE_SIZE:
                self._torques.clear()
            self._torques[frame_id] = layout
            n = len(names)
            q, qd, r = (np.sin(np.arange(n) + k) * 3.1 for k in (1.0, 2.0, 3.0))
            header = Header(stamp=_PROBE_STAMP, frame_id=frame_id)
            self.raw = self.raw and wire.matches(layout.fill(_PROBE_STAMP, q, qd, r),
                                                 torques_message(header, names, q, qd, r))
        return layout

    def contact(self, joint: int) -> wire.ContactWire:
        layout = self._contact.get(joint)
        if layout is None:
            model = self.model
            probe = _ProbeLive(joint, model)
            layout = wire.ContactWire(model.root_link, probe.link,
                                      model.joint_names[joint] if joint >= 0 else "",
                                      list(model.joint_names), self.tip_frame,
                                      probe.candidates)
            self._contact[joint] = layout
            header, point = Header(stamp=_PROBE_STAMP, frame_id=model.root_link), probe.point
            when = 12.5 if probe.in_contact else 0.0      # (as _publish passes it)
            self.raw = self.raw and wire.matches(
                layout.fill(_PROBE_STAMP, probe.in_contact, probe.residual_norm, when,
                            point.point, point.force, probe.residual, probe.F),
                contact_message(header, model, probe, when, self.tip_frame))
        return layout


class _ProbeLive:
    """A made-up LiveResult for the layout checks: isolated joint ``joint``, a point,
    distinct residual and wrench values."""

    def __init__(self, joint, model):
        self.in_contact, self.joint = joint >= 0, joint
        topology = arm_topology(model)
        self.link = topology.joint_link[joint] if joint >= 0 else ""
        self.candidates = joint_candidates(topology)[joint] if joint >= 0 else ()
        self.residual_norm = 3.75
        self.residual = np.cos(np.arange(model.n) + 0.5) * 2.3
        self.F = np.arange(-3.0, 3.0) * 1.75 + 0.125
        self.point = ContactPoint(np.array([0.5, -0.25, 1.5]), np.array([2.0, -4.5, 8.25]),
                                  0.5, 0.0, None)


_PROBE_STAMP = Time(sec=1_700_000_123, nanosec=987_654_321)


def torques_message(header, names, q, qd, r) -> JointState:
    """~/external_torques as a message: position q, velocity qd, effort r."""
    return JointState(header=header, name=list(names), position=_f64(q), velocity=_f64(qd),
                      effort=_f64(r))


def wrench_message(header, F) -> WrenchStamped:
    """~/external_wrench as a message: F = [f; m] (6,)."""
    msg = WrenchStamped(header=header)
    msg.wrench.force = Vector3(x=float(F[0]), y=float(F[1]), z=float(F[2]))
    msg.wrench.torque = Vector3(x=float(F[3]), y=float(F[4]), z=float(F[5]))
    return msg


def contact_message(header, model, live, detection_time, wrench_frame) -> Contact:
    """The Contact message of one result (fields: manip_dynamics_interfaces/msg/Contact);
    detection_time on the header's clock (0.0 when free); external_torques live.residual
    (r - bias, model order) and external_wrench live.F (at ``wrench_frame``'s origin, the
    tip frame; root axes): the values of torques_message and wrench_message;
    candidate_links live.candidates (isolated link first; empty when free)."""
    msg = Contact(header=header, in_contact=bool(live.in_contact), isolated_link=live.link,
                  isolated_joint=model.joint_names[live.joint] if live.joint >= 0 else "",
                  residual_norm=float(live.residual_norm))
    msg.detection_time = float(detection_time) if live.in_contact else 0.0
    if live.point is not None:
        p, f = live.point.point, live.point.force
        msg.contact_point_valid = True
        msg.contact_point = Point(x=float(p[0]), y=float(p[1]), z=float(p[2]))
        msg.contact_force = Vector3(x=float(f[0]), y=float(f[1]), z=float(f[2]))
    msg.joint_names = list(model.joint_names)
    msg.external_torques = _f64(live.residual)
    msg.wrench_frame = wrench_frame
    msg.external_wrench = wrench_message(header, live.F).wrench
    msg.candidate_links = list(live.candidates)
    return msg


def _marker(header, ns, marker_type, color) -> Marker:
    m = Marker(header=header, ns=ns, id=0, type=marker_type, action=Marker.ADD)
    m.pose.orientation.w = 1.0
    m.color = ColorRGBA(r=color[0], g=color[1], b=color[2], a=color[3])
    return m


def contact_markers(header, snapshot, q, live, topology) -> MarkerArray:
    """``~/contact_markers``: ``tip_force`` / 0 ARROW from the tip frame's origin along the
    estimated force f (length observer.force_scale * |f| m; root frame); ``isolated_link``
    / 0 LINE_LIST along the isolated link's segment (core.contact.link_segment; topology:
    core.contact.arm_topology of the model), red, and
    ``contact_point`` / 0 SPHERE at the estimated point, while in contact (DELETE else)."""
    model, options = snapshot.model, snapshot.observer
    p = model.frame_pose(q, snapshot.tip_frame)[:3, 3]
    f = live.F[:3]
    arrow = _marker(header, FORCE_NS, Marker.ARROW, (1.0, 0.5, 0.0, 1.0))
    end = p + options.force_scale * f
    arrow.points = [Point(x=float(p[0]), y=float(p[1]), z=float(p[2])),
                    Point(x=float(end[0]), y=float(end[1]), z=float(end[2]))]
    arrow.scale = Vector3(x=0.01, y=0.02, z=0.03)     # shaft and head diameters, head length
    link = _marker(header, LINK_NS, Marker.LINE_LIST, (1.0, 0.0, 0.0, 0.9))
    point = _marker(header, POINT_NS, Marker.SPHERE, (1.0, 0.0, 1.0, 0.9))
    if live.in_contact:
        ab = link_segment(model, topology, q, live.link)
        link.points = [Point(x=float(v[0]), y=float(v[1]), z=float(v[2])) for v in ab]
        link.scale.x = 0.04
    else:
        link.action = Marker.DELETE
    if live.in_contact and live.point is not None:
        x = live.point.point
        point.pose.position = Point(x=float(x[0]), y=float(x[1]), z=float(x[2]))
        point.scale = Vector3(x=0.04, y=0.04, z=0.04)
    else:
        point.action = Marker.DELETE
    return MarkerArray(markers=[arrow, link, point])
