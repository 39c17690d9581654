"""``dynamics_node``: joint states in, the arm's rigid-body dynamics out.

For every accepted ``joint_states`` message (stamp copied to every output)::

    ~/gravity_torques    sensor_msgs/JointState   effort = g(q)          (model order)
    ~/coriolis_torques   sensor_msgs/JointState   effort = C(q, qd) qd   (model order)
    ~/gravity_command    std_msgs/Float64MultiArray  g(q) in ``command_joints`` order
    ~/dynamics           manip_dynamics_interfaces/Dynamics  g, C qd, M, J, Lambda, cond
    ~/inertia_markers    visualization_msgs/MarkerArray  (at most ``outputs.inertia_markers.rate``,
                                                     after a computed state)
    /diagnostics         diagnostic_msgs/DiagnosticArray  (1 Hz: rates, skips, callback times,
                                                      GC collections and pauses)

with ``tau = M(q) qdd + C(q, qd) qd + g(q)`` (g holds the arm still). The robot model comes
from the ``robot_description`` parameter, else the ``urdf_file`` parameter, else the
``robot_description`` topic (transient local, as robot_state_publisher sends it). The
query services (``~/inverse_dynamics`` ...) are ``manip_dynamics.nodes.services``; they,
``~/estimate_payload`` and ``~/check_trajectory_safety`` are answered on a thread of their
own (``service_thread.ServiceThread``), so no call holds up the per-state outputs.

The node only translates: callbacks read messages, call the core, fill messages. All
state a callback needs is one immutable ``Snapshot`` (plus the parameter values it was
built from, and the reused output messages: ``state_outputs.StateOutputs``), swapped in
one assignment; parameters and descriptions are validated before anything changes.
docs/node.md lists the parameters and the bad-input behaviour.

Latest wins: when several joint_states messages wait in the subscription's queue (the
node fell behind), the callback takes them all and computes only the newest; the others
are counted as skipped (``latest-wins`` on /diagnostics) and reach neither the outputs
nor the state listeners. Per-output switches and rate limits: ``outputs.<name>.*``.

Run: ``ros2 run manip_dynamics dynamics_node --ros-args -p urdf_file:=arm.urdf`` or
``python -m manip_dynamics.nodes.dynamics_node --ros-args -r __ns:=/left ...``.
"""
from __future__ import annotations

import threading
import time
import traceback
from types import MappingProxyType
from typing import Any, Callable, Optional

from diagnostic_msgs.msg import DiagnosticArray
from rcl_interfaces.msg import SetParametersResult
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.clock import JumpThreshold
from rclpy.duration import Duration
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, Header, String
from visualization_msgs.msg import MarkerArray

from manip_dynamics.core.errors import (InputError, ManipDynamicsError, NonFiniteResultError,
                                        SingularConfigurationError)
from manip_dynamics.nodes import markers
from manip_dynamics.nodes.diagnostics import diagnostic_array
from manip_dynamics.nodes.contact_calibration import ContactCalibrationService
from manip_dynamics.nodes.contact_outputs import ContactOutputs
from manip_dynamics.nodes.runner import declare_table, run_node, take_waiting
from manip_dynamics.nodes.services import DynamicsServices
from manip_dynamics.nodes.state_outputs import StateOutputs
from manip_dynamics.nodes.wire_in import JointStateReader
from manip_dynamics.nodes.payload_service import PayloadService
from manip_dynamics.nodes.safety_outputs import SafetyOutputs
from manip_dynamics.nodes.service_thread import ServiceThread, lower_switch_interval
from manip_dynamics.rules import gc_pauses
from manip_dynamics.rules.dynamics_parameters import (PARAMETERS, SPECS, ParameterValueError,
                                                      check_values)
from manip_dynamics.rules.effort_reader import EffortReader
from manip_dynamics.rules.marker_schedule import MarkerSchedule
from manip_dynamics.rules.model_source import Applied, Description, ModelSource
from manip_dynamics.rules.parameter_table import ParameterTypeError
from manip_dynamics.rules.singular_mass import (advice, joints_moving_no_inertia,
                                                terms_without_inverse)
from manip_dynamics.rules.snapshot import Snapshot
from manip_dynamics.rules.stamp_gate import StampGate
from manip_dynamics.rules.stats import Level, NodeStats, diagnostic_status
from manip_dynamics.rules.throttled_log import ThrottledLog
from manip_dynamics_interfaces.msg import Dynamics

NODE_NAME = "dynamics_node"
WARNING_PERIOD = 5.0     # s: a repeated input problem is logged at most this often
TOPIC_ORIGIN = "topic robot_description"
DIAGNOSTICS_PERIOD = 1.0  # s (the ROS convention: 1 Hz on /diagnostics)
_NO_DIGITS = str.maketrans("", "", "0123456789")


class ConfigurationError(ManipDynamicsError, RuntimeError):
    """The node cannot start with the given parameters (the message says which one)."""


class DynamicsNode(Node):
    """See the module docstring. ``node.snapshot`` is the current Snapshot (or None)."""

    def __init__(self, node_name: str = NODE_NAME, **kwargs):
        super().__init__(node_name, **kwargs)
        self._config_lock = threading.RLock()   # serialises model / parameter changes
        self._marker_lock = threading.Lock()    # markers of an old model never follow a DELETEALL
        self._source = ModelSource(warn=self.get_logger().warning)
        self._gate = StampGate()
        self._pending: Optional[Applied] = None
        self._resetting = False
        self._throttled = ThrottledLog(self.get_logger(), WARNING_PERIOD)
        self._read_joint_state = JointStateReader()   # the raw joint_states' bytes -> fields
        self._outputs: Optional[StateOutputs] = None   # the hot path's view of self._state
        self._latest: Optional[tuple] = None     # (outputs, header, q) of the newest state
        self._marker_sent: Optional[tuple] = None  # the _latest the last markers were built from
        self._marker_builder: Optional[markers.InertiaMarkers] = None  # reused per snapshot
        self._marker_ready: Optional[tuple] = None  # (outputs, MarkerArray) built, not sent
        self._marker_schedule = MarkerSchedule()    # updates in the gap after a state
        self._stats = NodeStats(time.monotonic(), time.process_time())
        self._gc = gc_pauses.GcPauses()       # collections and pauses, for /diagnostics
        self._singular_note = ""    # the model's joints moving no inertia (rules.singular_mass)
        # Called after the outputs of every computed state, in order:
        # listener(snapshot, msg, q, qd, terms, momentum) with msg the state as received
        # (wire_in.JointStateIn read from the raw bytes: ``header`` a std_msgs/Header,
        # ``name`` a tuple, position / velocity / effort read-only float64 arrays; or the
        # JointState given to _on_joint_states directly), q and qd in model order (qd None
        # for a position-only state), terms the core's DynamicsTerms of the tip frame (None
        # without velocities), momentum its MomentumTerms (p = M qd, C^T qd) from the same
        # run when the observer is enabled and the state has effort, else None. A
        # listener's exception costs only that one. States skipped by latest-wins (or for
        # bad input) do not reach the listeners, nor do states whose M(q) is singular (the
        # observer needs M^-1; rules.singular_mass).
        self.state_listeners: list[Callable] = []

        try:
            values = declare_table(self, PARAMETERS)
            check_values(values)
        except ParameterTypeError as exc:
            raise ConfigurationError(str(exc)) from None
        except ParameterValueError as exc:
            raise ConfigurationError(f"invalid parameter {exc}") from None
        self._state = Applied(None, None, MappingProxyType(values))

        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self._output_pubs = {
            "gravity_torques": self.create_publisher(JointState, "~/gravity_torques", 10),
            "coriolis_torques": self.create_publisher(JointState, "~/coriolis_torques", 10),
            "gravity_command": self.create_publisher(Float64MultiArray, "~/gravity_command",
                                                     10),
            "dynamics": self.create_publisher(Dynamics, "~/dynamics", 10),
        }
        self._markers_pub = self.create_publisher(MarkerArray, "~/inertia_markers", 10)
        self._diagnostics_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)

        self._description_sub = self.create_subscription(
            String, "robot_description", self._on_robot_description, latched)
        self.service_thread = ServiceThread(self)   # the query services' own thread
        self.dynamics_services = DynamicsServices(self, lambda: self.snapshot,
                                                  self.service_thread)
        self._efforts = EffortReader()     # tau of a state, read once for every listener
        self.contact_outputs = ContactOutputs(self, self._efforts)  # the observer on effort
        self.contact_calibration = self._calibration_service(values)   # ~/calibrate_contact
        self.payload_service = PayloadService(self, lambda: self._state,   # ~/estimate_payload
                                              self.service_thread, effort=self._efforts)
        self.safety_outputs = SafetyOutputs(self, lambda: self._state,   # ISO/TS 15066 speeds
                                            self.service_thread)

        self.add_on_set_parameters_callback(self._validate_parameters)
        self.add_post_set_parameters_callback(self._apply_parameters)
        # A clock going backwards (simulation restarted, bag looped) restarts the stamp order.
        self._jump_handle = self.get_clock().create_jump_callback(
            JumpThreshold(min_forward=None, min_backward=Duration(nanoseconds=-1)),
            post_callback=self._on_time_jump)
        self._marker_timer = self.create_timer(
            1.0 / float(values["outputs.inertia_markers.rate"]), self._on_marker_timer)
        self._diagnostics_timer = self.create_timer(DIAGNOSTICS_PERIOD,
                                                    self._publish_diagnostics)

        self._load_initial_model(values)     # parses and warms up (compiles) the model
        self._joint_states_sub = self._subscribe_joint_states(values)
        self._start_service_threads()

    def _start_service_threads(self) -> None:
        """The services' threads, last in __init__: a construction that failed before has
        none running (rclpy's context destroys such a node holding the context's lock,
        which a running thread's spin waits for: its stop() waited out STOP_TIMEOUT)."""
        self.service_thread.start()
        self.contact_calibration.start()

    def _calibration_service(self, values) -> ContactCalibrationService:
        """``~/calibrate_contact`` (on a thread of its own) and ``~/contact_calibration``,
        with the start-up calibration of ``contact.calibration.startup_duration``."""
        return ContactCalibrationService(
            self, self.contact_outputs, lambda: self._state,
            float(values["contact.calibration.startup_duration"]))

    def _subscribe_joint_states(self, values):
        """The joint_states subscription, created last: a model given at start-up is loaded
        and its kernels compiled before the first message can arrive.

        joint_states has its own mutually exclusive group: handled one at a time, in order
        (latest-wins relies on it). main() spins one thread (EventsExecutor by default, or
        a SingleThreadedExecutor: parameter ``executor``; a MultiThreadedExecutor cost 15x
        the latency at 1 kHz) for joint_states, timers and parameters; the query services
        have their own (``self.service_thread``).

        Raw: the callback gets the serialised bytes and reads only the messages it computes
        (``wire_in.JointStateReader``); rclpy building the Python message was a third of
        the main thread at 1 kHz (docs/realtime.md)."""
        reliability = (ReliabilityPolicy.RELIABLE if values["joint_states_qos.reliability"]
                       == "reliable" else ReliabilityPolicy.BEST_EFFORT)
        state_qos = QoSProfile(history=HistoryPolicy.KEEP_LAST,
                               depth=int(values["joint_states_qos.depth"]),
                               reliability=reliability, durability=DurabilityPolicy.VOLATILE)
        self._input_group = MutuallyExclusiveCallbackGroup()
        return self.create_subscription(JointState, "joint_states", self._on_joint_states,
                                        state_qos, callback_group=self._input_group, raw=True)

    # ------------------------------------------------------------------ public

    @property
    def snapshot(self) -> Optional[Snapshot]:
        """The current Snapshot (None until a robot model is loaded)."""
        return self._state.snapshot

    # ------------------------------------------------------------------ parameters

    def set_parameters(self, parameter_list):
        """rclpy's, whole under the configuration lock (as set_parameters_atomically)."""
        with self._config_lock:
            return super().set_parameters(parameter_list)

    def set_parameters_atomically(self, parameter_list):
        """rclpy's, whole under the configuration lock: a change from the services' thread
        (~/estimate_payload's ``apply``) and one from the parameter services on the main
        thread never interleave their validate (builds ``_pending``) and apply (swaps it in)
        callbacks; rclpy itself takes no lock."""
        with self._config_lock:
            return super().set_parameters_atomically(parameter_list)

    def _validate_parameters(self, params: list[Parameter]) -> SetParametersResult:
        """on-set callback: build the whole new state; refuse with a reason, change nothing."""
        with self._config_lock:
            if self._resetting:                 # our own reset after a new description
                return SetParametersResult(successful=True)
            values = dict(self._state.values)
            values.update({p.name: p.value for p in params})
            self._pending = None
            try:
                check_values(values)
                self._pending = self._source.for_parameters(values, self._state)
            except ParameterValueError as exc:
                return SetParametersResult(successful=False, reason=str(exc))
            except Exception as exc:  # refuse rather than let the parameter service fail
                self.get_logger().error("parameter change failed:\n" + traceback.format_exc())
                return SetParametersResult(
                    successful=False, reason=f"internal error: {type(exc).__name__}: {exc}")
            return SetParametersResult(successful=True)

    def _apply_parameters(self, params: list[Parameter]) -> None:
        """post-set callback: the values are stored; swap in the state built for them."""
        with self._config_lock:
            if self._pending is not None:
                pending, self._pending = self._pending, None
                self._swap(pending)

    # ------------------------------------------------------------------ robot model

    def _load_initial_model(self, values: dict[str, Any]) -> None:
        try:
            desc = self._source.description(values)
        except ParameterValueError as exc:
            raise ConfigurationError(str(exc)) from None
        if desc is None:
            self.get_logger().info(
                "waiting for a robot description on topic "
                f"{self._description_sub.topic_name} (or set parameter robot_description "
                "or urdf_file)")
            return
        try:
            self._source.parse(desc.xml)
        except ManipDynamicsError as exc:
            raise ConfigurationError(f"parameter {desc.responsible}: robot description from "
                                     f"{desc.origin}: {exc}") from None
        self._adopt(desc)

    def _on_robot_description(self, msg: String) -> None:
        try:
            self._use_robot_description(msg.data)
        except Exception:  # keep the previous model and the node
            self.get_logger().error(
                "robot_description topic: could not use the description, keeping the "
                "previous model:\n" + traceback.format_exc())

    def _use_robot_description(self, xml: str) -> None:
        with self._config_lock:
            values = self._state.values
            if values["robot_description"] or values["urdf_file"]:
                self._source.topic_xml = xml
                which = "robot_description" if values["robot_description"] else "urdf_file"
                self.get_logger().info(
                    f"robot_description topic: description received but not used: "
                    f"parameter {which} is set and takes precedence")
                return
            try:
                self._source.parse(xml)
            except ManipDynamicsError as exc:
                self.get_logger().error(
                    f"robot_description topic: broken robot description rejected ({exc}); "
                    + ("keeping the previous model" if self.snapshot else "still no model"))
                return
            self._adopt(Description(xml, TOPIC_ORIGIN, "robot_description"))
            self._source.topic_xml = xml

    def _adopt(self, desc: Description) -> None:
        """Use a new (parseable) description; parameters naming things it lacks are reset
        to their defaults (dynamics_file to 'none'; ModelSource.for_description), each with
        an error naming it, so the parameter server shows what is applied."""
        new = self._source.for_description(desc, self._state.values)
        for name, reason in new.resets.items():
            self.get_logger().error(
                f"parameter {name} reset to {new.values[name]!r} for the robot description "
                f"from {desc.origin}: {reason}")
        if new.resets:
            self._resetting = True
            try:
                self.set_parameters_atomically(
                    [Parameter(name, Parameter.Type(SPECS[name].type), new.values[name])
                     for name in new.resets])
            finally:
                self._resetting = False
        self._swap(new)

    def _swap(self, new: Applied) -> None:
        """Make ``new`` current (one assignment each for the state and its outputs); clear
        markers / stamp order if needed. A new model is warmed up (compiled) first."""
        old = self._state
        model_changed = new.base_model is not old.base_model
        markers_changed = (old.snapshot is None or new.snapshot is None
                           or old.snapshot.markers != new.snapshot.markers
                           or old.snapshot.tip_frame != new.snapshot.tip_frame)
        if model_changed and new.snapshot is not None:
            self._warm_up(new.snapshot)
            gc_pauses.freeze()      # the new model's objects: out of later collections
        outputs = (None if new.snapshot is None else
                   StateOutputs(new.snapshot, new.values, self._output_pubs, new.origin))
        with self._marker_lock:
            self._state = new
            self._outputs = outputs
            if model_changed:
                self._gate.reset()
            if (model_changed or markers_changed) and old.snapshot is not None:
                self._latest = self._marker_sent = None
                self._markers_pub.publish(markers.delete_all(
                    Header(stamp=self.get_clock().now().to_msg(),
                           frame_id=old.snapshot.model.root_link)))
        period_ns = int(1e9 / float(new.values["outputs.inertia_markers.rate"]))
        if self._marker_timer.timer_period_ns != period_ns:
            self._marker_timer.timer_period_ns = period_ns
        if model_changed and new.snapshot is not None:
            self.contact_calibration.load_beside(new)   # <name>.contact.yaml, if any
            model = new.snapshot.model
            no_inertia = joints_moving_no_inertia(model)
            self._singular_note = advice(model, no_inertia) if no_inertia else ""
            if no_inertia:
                self.get_logger().warning(self._singular_note)
            self.get_logger().info(
                f"robot model from {new.origin}: {model.n} joints "
                f"[{', '.join(model.joint_names)}], root {model.root_link}, "
                f"tip {new.snapshot.tip_frame}")

    def _warm_up(self, snapshot: Snapshot) -> None:
        """Compile the core's kernels now, and do what the first state with effort would
        start (the observer, the contact layouts, the payload buffer, the safety kernel:
        their warm_up), so the first messages or requests do not wait."""
        for warm_up in (snapshot.model.warm_up, lambda: self.payload_service.warm_up(snapshot),
                        lambda: self.contact_outputs.warm_up(snapshot),
                        lambda: self.safety_outputs.warm_up(snapshot)):
            try:
                warm_up()
            except Exception as exc:  # a warm-up failure is not an error of the model
                self.get_logger().debug(f"warm-up computation failed: {exc}")

    def _on_time_jump(self, jump) -> None:
        self._gate.reset()

    # ------------------------------------------------------------------ joint states

    def _skip(self, key: str, text: str, level: str = "warning") -> None:
        self._throttled(level, key, "joint_states message skipped: " + text)

    def _on_joint_states(self, msg) -> None:
        """Latest wins beyond a short backlog: take what else waits in the queue; up to
        ``joint_states_backlog`` older messages are computed in order, a longer backlog is
        skipped and only the newest is computed. ``msg``: the serialised JointState (the
        subscription is raw; the skipped ones are never read) or a JointState message."""
        outputs = self._outputs
        batch, n_skipped = [msg], 0
        if outputs is None or outputs.latest_wins:
            batch = [msg, *take_waiting(self._joint_states_sub)]   # oldest first
            backlog = outputs.backlog if outputs is not None else 0
            if len(batch) - 1 > backlog:
                batch, n_skipped = batch[-1:], len(batch) - 1
        stats = self._stats
        stats.received(len(batch) + n_skipped)
        if n_skipped:
            stats.skipped("latest-wins", n_skipped)
        for state in batch:
            self._compute_one(state, stats)
        # in the gap before the next state: a marker update is split over two gaps (build
        # after one state, publish after the next), each shorter than the whole
        if self._marker_ready is not None:
            self._send_markers()
        elif self._marker_schedule.after_state():
            self._build_markers()

    def _compute_one(self, msg, stats) -> None:
        t0 = time.perf_counter()
        try:
            reason = self._handle_joint_states(msg)
        except Exception:  # never let one message take the node down; say what happened
            self._skip("unexpected", "unexpected error:\n" + traceback.format_exc(), "error")
            reason = "unexpected error"
        if reason is None:
            stats.computed(time.perf_counter() - t0)
        else:
            stats.skipped(reason)

    def _handle_joint_states(self, msg) -> Optional[str]:
        """Compute and publish one state (serialised bytes, read here, or a JointState);
        -> None, or why it was skipped (a short key for /diagnostics; the log line says
        more)."""
        outputs = self._outputs                # read once: one consistent state
        if outputs is None:
            self._skip("no-model", "no robot model yet (publish it on robot_description or "
                                   "set parameter robot_description / urdf_file)")
            return "no model"
        if type(msg) is bytes:
            try:
                msg = self._read_joint_state(msg)
            except InputError as exc:       # truncated, garbage, another encapsulation
                text = str(exc)        # throttled per problem, whatever its byte counts
                self._skip("malformed:" + text.translate(_NO_DIGITS),
                           f"not a readable sensor_msgs/JointState: {text}")
                return "bad input"
        snapshot = outputs.snapshot
        model = snapshot.model

        stamp_ns = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        rejection = self._gate.check(stamp_ns, self.get_clock().now().nanoseconds,
                                     outputs.max_state_age)
        if rejection is not None:
            self._skip(rejection.key, rejection.reason)
            return rejection.key

        singular = False
        try:
            q, qd = outputs.vectors(msg)
            momentum = None
            if qd is None:                      # position-only state: g(q) and no more
                g, terms = model.gravity_torques(q), None
            elif snapshot.observer.enabled and len(msg.effort):   # + the observer's terms
                terms, momentum = model.compute_all(
                    q, qd, snapshot.tip_frame, damping=snapshot.damping,
                    damping_condition=snapshot.singular_condition, momentum=True)
                g = terms.g
            else:
                terms = model.compute_all(q, qd, snapshot.tip_frame, damping=snapshot.damping,
                                          damping_condition=snapshot.singular_condition)
                g = terms.g
        except SingularConfigurationError as exc:   # M(q) singular: all that needs no M^-1
            terms, singular = self._terms_without_inverse(model, q, qd, snapshot, exc), True
            if isinstance(terms, str):
                return terms                        # not a joint moving no inertia: skipped
            g = terms.g
        except InputError as exc:             # names, lengths, or a NaN / inf value
            exc = outputs.explain(msg, exc)
            self._skip("input:" + str(exc), str(exc))
            return "bad input"
        except NonFiniteResultError as exc:   # finite values so large that the results overflow
            self._skip("overflow", f"the dynamics overflowed: {exc}")
            return "overflow"
        except ManipDynamicsError as exc:
            self._skip("compute:" + type(exc).__name__, f"the dynamics failed: {exc}", "error")
            return "compute error"
        # (the core raised NonFiniteResultError above if anything overflowed)
        if singular:       # Python messages: the wire layouts hold a 6 x 6 Lambda
            outputs.publish_messages(msg.header, q, qd, g, terms, time.monotonic())
        else:
            outputs.publish(msg.header, q, qd, g, terms, time.monotonic())
        self._gate.accept(stamp_ns)
        self._latest = (outputs, msg.header, q)       # for the marker timer
        if not singular:   # the observer needs M^-1
            self._notify_listeners(snapshot, msg, q, qd, terms, momentum)
        if qd is None:
            self._throttled("warning", "no-velocity",
                            "joint_states has no velocities: publishing g(q) "
                            "(~/gravity_torques, ~/gravity_command) and markers only; "
                            "~/coriolis_torques and ~/dynamics need velocities")
        return None

    def _terms_without_inverse(self, model, q, qd, snapshot, exc):
        """The terms that need no M^-1 (rules.singular_mass) when M(q) is singular because the
        model has joints that move no inertia (found at load: ``_singular_note``); ->
        DynamicsTerms, or the skip reason when M is not positive definite for another cause
        (a model whose M is regular, fed inputs so large that M loses precision): those
        states are skipped as before."""
        if not self._singular_note:
            self._skip("compute:" + type(exc).__name__, f"the dynamics failed: {exc}", "error")
            return "compute error"
        try:
            terms = terms_without_inverse(model, q, qd, snapshot.tip_frame)
        except NonFiniteResultError as overflow:
            self._skip("overflow", f"the dynamics overflowed: {overflow}")
            return "overflow"
        self._throttled("warning", "singular-M", f"{exc}; publishing g, C qd, M and J "
                        "(~/dynamics: effective_inertia and inverse_effective_inertia "
                        "empty, condition_number inf); no observer")
        return terms

    def _notify_listeners(self, snapshot: Snapshot, msg, q, qd, terms,
                          momentum) -> None:
        observer = self.contact_outputs.listener
        for listener in self.state_listeners:
            if listener is observer:       # /diagnostics: the observer's share
                t0 = time.perf_counter()
            try:
                listener(snapshot, msg, q, qd, terms, momentum)
            except Exception:
                self._throttled("error", "listener:" + getattr(listener, "__qualname__", "?"),
                                "state listener failed:\n" + traceback.format_exc())
            if listener is observer:
                self._stats.observer(time.perf_counter() - t0)
        self._efforts.forget()             # (msg may be reused: read the next one afresh)

    # ------------------------------------------------------------------ timers

    def _on_marker_timer(self) -> None:
        """Makes a marker update due: it is built after the next computed state and
        published after the one after it, or both at the next tick if no state comes
        (manip_dynamics.rules.marker_schedule says why)."""
        if self._marker_ready is not None:
            self._send_markers()
        if self._marker_schedule.on_timer():
            self._build_markers()
            self._send_markers()

    def _send_markers(self) -> None:
        """Publish the MarkerArray ``_build_markers`` filled, unless the model or the marker
        options changed since (their DELETEALL is not followed by old markers)."""
        ready, self._marker_ready = self._marker_ready, None
        if ready is None:
            return
        outputs, array = ready
        try:
            with self._marker_lock:
                if self._outputs is outputs:
                    self._markers_pub.publish(array)
        except Exception:
            self._throttled("error", "markers", "~/inertia_markers not published:\n"
                            + traceback.format_exc())

    def _build_markers(self) -> None:
        """Fill ~/inertia_markers (for ``_send_markers``) from the newest computed state, at
        most once per state, only while someone subscribes. A marker failure costs only
        the markers."""
        latest = self._latest
        if (latest is None or latest is self._marker_sent
                or not latest[0].snapshot.markers.enabled
                or self._markers_pub.get_subscription_count() == 0):
            return
        outputs, in_header, q = latest
        snapshot = outputs.snapshot
        try:
            with self._marker_lock:
                if self._outputs is outputs:      # not replaced meanwhile
                    builder = self._marker_builder
                    if builder is None or builder.snapshot is not snapshot:
                        builder = self._marker_builder = markers.InertiaMarkers(snapshot)
                    self._marker_ready = (outputs, builder.update(
                        q, Header(stamp=in_header.stamp, frame_id=snapshot.model.root_link)))
                    self._marker_sent = latest
        except (ManipDynamicsError, markers.MarkerError) as exc:   # e.g. overflowing q
            self._marker_sent = latest
            self._throttled("warning", "markers:" + type(exc).__name__,
                            f"~/inertia_markers not published: {exc}")
        except Exception:
            self._marker_sent = latest
            self._throttled("error", "markers", "~/inertia_markers not published:\n"
                            + traceback.format_exc())

    def _publish_diagnostics(self) -> None:
        """/diagnostics (1 Hz): rates, skipped states by reason, callback time p50 / p99,
        CPU per message and the model (manip_dynamics.rules.stats)."""
        outputs = self._outputs
        model = None
        if outputs is not None:
            m = outputs.snapshot.model
            model = (f"{m.n} joints, root {m.root_link}, tip {outputs.snapshot.tip_frame}, "
                     f"from {outputs.origin}")
        report = self._stats.report(time.monotonic(), time.process_time(), model=model)
        level, message, values = diagnostic_status(report)
        if outputs is not None and self._singular_note:
            level, message = max(level, Level.WARN), f"{message}; {self._singular_note}"
            values.append(("M(q)", self._singular_note))
        (n0, n1, n2), longest = self._gc.take()
        values += [("GC collections since last report (gen 0/1/2)", f"{n0}/{n1}/{n2}"),
                   ("GC longest pause since last report [ms]", f"{longest * 1e3:.3f}")]
        self._diagnostics_pub.publish(diagnostic_array(
            self.get_clock().now().to_msg(),
            f"{self.get_fully_qualified_name()}: joint_states -> dynamics",
            self.get_fully_qualified_name(), (level, message, values)))

    def destroy_node(self):
        self.service_thread.stop()
        self.contact_calibration.stop()
        self._gc.close()
        return super().destroy_node()


def main(args=None) -> int:
    # one thread, the executor of parameter ``executor``: see _subscribe_joint_states; the
    # services' thread (ServiceThread) preempted at the lowered switch interval
    lower_switch_interval()
    return run_node(DynamicsNode, args, fatal=(ConfigurationError,), name=NODE_NAME)


if __name__ == "__main__":
    raise SystemExit(main())
