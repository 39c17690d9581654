"""``dynamics_node``: joint states in, the arm's rigid-body dynamics out.

For every accepted ``joint_states`` message (stamp copied to every output)::

    ~/gravity_torques    sensor_msgs/JointState   effort = g(q)          (model order)
    ~/coriolis_torques   sensor_msgs/JointState   effort = C(q, qd) qd   (model order)
    ~/gravity_command    std_msgs/Float64MultiArray  g(q) in ``command_joints`` order
    ~/dynamics           manip_dynamics_interfaces/Dynamics  g, C qd, M, J, Lambda, cond
    ~/inertia_markers    visualization_msgs/MarkerArray  (at most ``markers.rate`` Hz)

with ``tau = M(q) qdd + C(q, qd) qd + g(q)`` (g holds the arm still). The robot model comes
from the ``robot_description`` parameter, else the ``urdf_file`` parameter, else the
``robot_description`` topic (transient local, as robot_state_publisher sends it). The
query services (``~/inverse_dynamics`` ...) are ``manip_dynamics.nodes.services``.

The node only translates: callbacks read messages, call the core, fill messages. All
state a callback needs is one immutable ``Snapshot`` (plus the parameter values it was
built from), swapped in one assignment; parameters and descriptions are validated before
anything changes. docs/node.md lists the parameters and the bad-input behaviour.

Run: ``ros2 run manip_dynamics dynamics_node --ros-args -p urdf_file:=arm.urdf`` or
``python -m manip_dynamics.nodes.dynamics_node --ros-args -r __ns:=/left ...``.
"""
from __future__ import annotations

import array
import threading
import time
import traceback
from types import MappingProxyType
from typing import Any, Optional

import numpy as np
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

from manip_dynamics.core.errors import InputError, ManipDynamicsError, NonFiniteResultError
from manip_dynamics.nodes import markers
from manip_dynamics.nodes.runner import declare_table, run_node
from manip_dynamics.nodes.services import DynamicsServices
from manip_dynamics.rules.dynamics_parameters import (PARAMETERS, SPECS, ParameterValueError,
                                                      check_values)
from manip_dynamics.rules.model_source import Applied, Description, ModelSource
from manip_dynamics.rules.parameter_table import ParameterTypeError
from manip_dynamics.rules.snapshot import Snapshot
from manip_dynamics.rules.stamp_gate import StampGate
from manip_dynamics.rules.throttled_log import ThrottledLog
from manip_dynamics_interfaces.msg import Dynamics

NODE_NAME = "dynamics_node"
WARNING_PERIOD = 5.0     # s: a repeated input problem is logged at most this often
TOPIC_ORIGIN = "topic robot_description"


class ConfigurationError(ManipDynamicsError, RuntimeError):
    """The node cannot start with the given parameters (the message says which one)."""


def _joint_state(header: Header, names, q, qd, effort) -> JointState:
    msg = JointState(header=header, name=list(names), position=_f64(q), effort=_f64(effort))
    if qd is not None:
        msg.velocity = _f64(qd)
    return msg


def _f64(a) -> array.array:
    """A float64[] message field from an array: row-major flattening, and an array('d'),
    which the generated message setters take without checking element by element."""
    out = array.array("d")
    out.frombytes(np.ascontiguousarray(a, dtype=np.float64).tobytes(order="C"))
    return out


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
        self._last_marker_time = -float("inf")
        self._throttled = ThrottledLog(self.get_logger(), WARNING_PERIOD)

        try:
            values = declare_table(self, PARAMETERS)
            check_values(values)
        except ParameterTypeError as exc:
            raise ConfigurationError(str(exc)) from None
        except ParameterValueError as exc:
            raise ConfigurationError(f"invalid parameter {exc}") from None
        self._state = Applied(None, None, MappingProxyType(values))

        reliability = (ReliabilityPolicy.RELIABLE if values["joint_states_qos.reliability"]
                       == "reliable" else ReliabilityPolicy.BEST_EFFORT)
        state_qos = QoSProfile(history=HistoryPolicy.KEEP_LAST,
                               depth=int(values["joint_states_qos.depth"]),
                               reliability=reliability, durability=DurabilityPolicy.VOLATILE)
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)

        self._gravity_pub = self.create_publisher(JointState, "~/gravity_torques", 10)
        self._coriolis_pub = self.create_publisher(JointState, "~/coriolis_torques", 10)
        self._command_pub = self.create_publisher(Float64MultiArray, "~/gravity_command", 10)
        self._dynamics_pub = self.create_publisher(Dynamics, "~/dynamics", 10)
        self._markers_pub = self.create_publisher(MarkerArray, "~/inertia_markers", 10)

        # joint_states in their own mutually exclusive group: handled one at a time, in
        # order. main() spins a single-threaded executor (a multi-threaded one cost 15x the
        # latency at 1 kHz: benchmarks/bench_node_latency.py); the groups keep the node
        # correct under a MultiThreadedExecutor too (services: their own reentrant group).
        self._input_group = MutuallyExclusiveCallbackGroup()
        self._joint_states_sub = self.create_subscription(
            JointState, "joint_states", self._on_joint_states, state_qos,
            callback_group=self._input_group)
        self._description_sub = self.create_subscription(
            String, "robot_description", self._on_robot_description, latched)

        self.dynamics_services = DynamicsServices(self, lambda: self.snapshot)

        self.add_on_set_parameters_callback(self._validate_parameters)
        self.add_post_set_parameters_callback(self._apply_parameters)
        # A clock going backwards (simulation restarted, bag looped) restarts the stamp order.
        self._jump_handle = self.get_clock().create_jump_callback(
            JumpThreshold(min_forward=None, min_backward=Duration(nanoseconds=-1)),
            post_callback=self._on_time_jump)

        self._load_initial_model(values)

    # ------------------------------------------------------------------ public

    @property
    def snapshot(self) -> Optional[Snapshot]:
        """The current Snapshot (None until a robot model is loaded)."""
        return self._state.snapshot

    # ------------------------------------------------------------------ parameters

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
        to their defaults (ModelSource.for_description), each with an error naming it, so
        the parameter server shows what is applied."""
        new = self._source.for_description(desc, self._state.values)
        for name, reason in new.resets.items():
            self.get_logger().error(
                f"parameter {name} reset to {SPECS[name].default!r} for the robot description "
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
        """Make ``new`` current (one assignment); clear markers / stamp order if needed."""
        old = self._state
        model_changed = new.base_model is not old.base_model
        markers_changed = (old.snapshot is None or new.snapshot is None
                           or old.snapshot.markers != new.snapshot.markers
                           or old.snapshot.tip_frame != new.snapshot.tip_frame)
        with self._marker_lock:
            self._state = new
            if model_changed:
                self._gate.reset()
            if (model_changed or markers_changed) and old.snapshot is not None:
                self._markers_pub.publish(markers.delete_all(
                    Header(stamp=self.get_clock().now().to_msg(),
                           frame_id=old.snapshot.model.root_link)))
                self._last_marker_time = -float("inf")
        if model_changed and new.snapshot is not None:
            model = new.snapshot.model
            self.get_logger().info(
                f"robot model from {new.origin}: {model.n} joints "
                f"[{', '.join(model.joint_names)}], root {model.root_link}, "
                f"tip {new.snapshot.tip_frame}")
            self._warm_up(new.snapshot)

    def _warm_up(self, snapshot: Snapshot) -> None:
        """Compile the core's kernels now, so the first message or request does not wait."""
        try:
            snapshot.model.warm_up()
        except Exception as exc:  # a warm-up failure is not an error of the model
            self.get_logger().debug(f"warm-up computation failed: {exc}")

    def _on_time_jump(self, jump) -> None:
        self._gate.reset()

    # ------------------------------------------------------------------ joint states

    def _skip(self, key: str, text: str, level: str = "warning") -> None:
        self._throttled(level, key, "joint_states message skipped: " + text)

    def _on_joint_states(self, msg: JointState) -> None:
        try:
            self._handle_joint_states(msg)
        except Exception:  # never let one message take the node down; say what happened
            self._skip("unexpected", "unexpected error:\n" + traceback.format_exc(), "error")

    def _handle_joint_states(self, msg: JointState) -> None:
        state = self._state                   # read once: one consistent snapshot
        snapshot = state.snapshot
        if snapshot is None:
            self._skip("no-model", "no robot model yet (publish it on robot_description or "
                                   "set parameter robot_description / urdf_file)")
            return
        model = snapshot.model

        stamp_ns = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        rejection = self._gate.check(stamp_ns, self.get_clock().now().nanoseconds,
                                     float(state.values["max_state_age"]))
        if rejection is not None:
            self._skip(rejection.key, rejection.reason)
            return

        try:
            q = model.vector_from_names(msg.name, msg.position, field="position")
            qd = (model.vector_from_names(msg.name, msg.velocity, field="velocity")
                  if len(msg.velocity) else None)
        except InputError as exc:
            self._skip("input:" + str(exc), str(exc))
            return

        try:
            if qd is None:                      # position-only state: g(q) and no more
                g, terms = model.gravity_torques(q), None
            else:
                terms = model.compute_all(q, qd, snapshot.tip_frame, damping=snapshot.damping,
                                          damping_condition=snapshot.singular_condition)
                g = terms.g
        except NonFiniteResultError as exc:   # finite values so large that the results overflow
            self._skip("overflow", f"the dynamics overflowed: {exc}")
            return
        except ManipDynamicsError as exc:
            self._skip("compute:" + type(exc).__name__, f"the dynamics failed: {exc}", "error")
            return
        # (the core raised NonFiniteResultError above if anything overflowed)
        self._publish(snapshot, msg.header, q, qd, np.asarray(g, dtype=float), terms)
        self._gate.accept(stamp_ns)
        if qd is None:
            self._throttled("warning", "no-velocity",
                            "joint_states has no velocities: publishing g(q) "
                            "(~/gravity_torques, ~/gravity_command) and markers only; "
                            "~/coriolis_torques and ~/dynamics need velocities")

    def _publish(self, snapshot: Snapshot, in_header: Header, q, qd, g, terms) -> None:
        """All outputs of one state; ``qd`` and ``terms`` are None for a position-only one."""
        model = snapshot.model
        names = model.joint_names
        header = Header(stamp=in_header.stamp, frame_id=in_header.frame_id)

        # ~/dynamics first: it is what a computed-torque controller waits for.
        if terms is not None:
            c = np.asarray(terms.c, dtype=float)
            cond = float(terms.condition_number)
            self._dynamics_pub.publish(Dynamics(
                header=Header(stamp=in_header.stamp, frame_id=model.root_link),
                joint_names=list(names),
                position=_f64(q), velocity=_f64(qd),
                gravity=_f64(g), coriolis=_f64(c),
                mass_matrix=_f64(terms.M),
                tip_frame=snapshot.tip_frame,
                jacobian=_f64(terms.J),
                effective_inertia=_f64(terms.Lambda),
                inverse_effective_inertia=_f64(terms.A),
                condition_number=cond,
                near_singular=bool(terms.singular) or cond > snapshot.singular_condition,
            ))

        self._gravity_pub.publish(_joint_state(header, names, q, qd, g))
        index = {name: i for i, name in enumerate(names)}
        self._command_pub.publish(Float64MultiArray(
            data=_f64([g[index[j]] for j in snapshot.command_joints])))
        if terms is not None:
            self._coriolis_pub.publish(_joint_state(header, names, q, qd, c))

        if snapshot.markers.enabled:
            self._publish_markers(snapshot, in_header, q)

    def _publish_markers(self, snapshot: Snapshot, in_header: Header, q) -> None:
        """At most ``markers.rate`` Hz; a marker failure costs only the markers."""
        period = 1.0 / float(self._state.values["markers.rate"])
        now = time.monotonic()
        if now - self._last_marker_time < period:
            return
        try:
            with self._marker_lock:
                if self._state.snapshot is snapshot:      # not replaced meanwhile
                    self._markers_pub.publish(markers.inertia_marker_array(
                        snapshot, q, Header(stamp=in_header.stamp,
                                            frame_id=snapshot.model.root_link)))
                    self._last_marker_time = now
        except (ManipDynamicsError, markers.MarkerError) as exc:   # e.g. overflowing q
            self._throttled("warning", "markers:" + type(exc).__name__,
                            f"~/inertia_markers not published: {exc}")
        except Exception:
            self._throttled("error", "markers", "~/inertia_markers not published:\n"
                            + traceback.format_exc())


def main(args=None) -> int:
    # single-threaded: see the comment on the callback groups in DynamicsNode.__init__
    return run_node(DynamicsNode, args, fatal=(ConfigurationError,), name=NODE_NAME)


if __name__ == "__main__":
    raise SystemExit(main())
