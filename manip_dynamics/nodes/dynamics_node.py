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
import math
import threading
import time
import traceback
import warnings
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping, Optional

import numpy as np
from rcl_interfaces.msg import SetParametersResult
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.clock import JumpThreshold
from rclpy.duration import Duration
from rclpy.exceptions import InvalidParameterTypeException
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, Header, String
from visualization_msgs.msg import MarkerArray

from manip_dynamics.core.errors import (InputError, ManipDynamicsError, NonFiniteResultError,
                                         URDFError)
from manip_dynamics.core.model import RobotModel
from manip_dynamics.nodes import markers
from manip_dynamics.nodes.runner import run_node
from manip_dynamics.nodes.parameters import (
    PARAMETERS,
    SPECS,
    ParameterValueError,
    check_values,
    make_snapshot,
    model_conflicts,
)
from manip_dynamics.nodes.services import DynamicsServices
from manip_dynamics.nodes.snapshot import Snapshot
from manip_dynamics_interfaces.msg import Dynamics

NODE_NAME = "dynamics_node"
WARNING_PERIOD = 5.0     # s: a repeated input problem is logged at most this often
FUTURE_STAMP_LIMIT = 60.0  # s: joint_states stamped further ahead of the node's clock are skipped


class ConfigurationError(RuntimeError):
    """The node cannot start with the given parameters (the message says which one)."""


@dataclass(frozen=True)
class _Applied:
    """What the callbacks see: the snapshot and the parameter values it was built from."""

    snapshot: Optional[Snapshot]
    base_model: Optional[RobotModel]          # as parsed (rooted), before gravity etc.
    values: Mapping[str, Any]
    origin: str = ""                          # where the robot description came from


class _ThrottledLog:
    """Logs a message at most once per ``period`` per key, counting what it held back."""

    def __init__(self, logger, period: float):
        self._logger = logger
        self._period = period
        self._last: dict[str, tuple[float, int]] = {}
        self._lock = threading.Lock()

    def __call__(self, level: str, key: str, text: str) -> None:
        now = time.monotonic()
        with self._lock:
            last, held = self._last.get(key, (None, 0))
            if last is not None and now - last < self._period:
                self._last[key] = (last, held + 1)
                return
            if len(self._last) > 256:
                self._last.clear()
            self._last[key] = (now, 0)
        if held:
            text += f" ({held} more like this in the last {now - last:.0f} s)"
        # One call line per severity: rclpy's logger remembers the severity of each call
        # site and raises ValueError if one line logs at two severities.
        if level == "error":
            self._logger.error(text)
        elif level == "warning":
            self._logger.warning(text)
        else:
            self._logger.info(text)


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


def _first_non_finite(**arrays) -> Optional[str]:
    """The name of the first array holding NaN or inf (None if all are finite)."""
    for name, a in arrays.items():
        if a is not None and not np.all(np.isfinite(a)):
            return name
    return None


def _check_description(model: RobotModel) -> None:
    """Refuse a description that parses but leaves nothing to compute (the core accepts
    a robot whose joints are all fixed; this node would publish empty messages for it)."""
    if model.n == 0:
        raise URDFError("the robot description has no movable joints (every joint is "
                        "fixed): there are no dynamics to compute")


def _read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as exc:
        raise ParameterValueError("urdf_file", f"cannot read {path!r}: {exc.strerror or exc}")


class DynamicsNode(Node):
    """See the module docstring. ``node.snapshot`` is the current Snapshot (or None)."""

    def __init__(self, node_name: str = NODE_NAME, **kwargs):
        super().__init__(node_name, **kwargs)
        self._config_lock = threading.RLock()   # serialises model / parameter changes
        self._marker_lock = threading.Lock()    # markers of an old model never follow a DELETEALL
        self._parsed: dict[tuple[str, str], RobotModel] = {}
        self._topic_xml: Optional[str] = None   # last description received on the topic
        self._pending: Optional[_Applied] = None
        self._resetting = False
        self._last_stamp_ns: Optional[int] = None
        self._last_marker_time = -float("inf")
        self._throttled = _ThrottledLog(self.get_logger(), WARNING_PERIOD)

        values = self._declare_parameters()
        try:
            check_values(values)
        except ParameterValueError as exc:
            raise ConfigurationError(f"invalid parameter {exc}") from None
        self._state = _Applied(None, None, MappingProxyType(values))

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

    def _declare_parameters(self) -> dict[str, Any]:
        values = {}
        for spec in PARAMETERS:
            kind = Parameter.Type(spec.type)
            # An empty list does not tell its type: declare those by type, then set them.
            untyped_default = isinstance(spec.default, list) and not spec.default
            try:
                param = self.declare_parameter(
                    spec.name, kind if untyped_default else spec.default, spec.descriptor())
            except InvalidParameterTypeException as exc:
                raise ConfigurationError(
                    f"parameter {spec.name} must be of type {kind.name} ({exc}); "
                    "write doubles with a decimal point, e.g. 1.0 or [0.0, 0.0, -9.81]"
                ) from None
            if param.type_ == Parameter.Type.NOT_SET:     # no override given: the default
                self.set_parameters([Parameter(spec.name, kind, spec.default)])
            values[spec.name] = self.get_parameter(spec.name).value
        return values

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
                self._pending = self._build_state(values)
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

    def _description(self, values: Mapping[str, Any]) -> tuple[Optional[str], str, str]:
        """(URDF xml or None, where it came from, the parameter responsible)."""
        if values["robot_description"]:
            return values["robot_description"], "parameter robot_description", "robot_description"
        if values["urdf_file"]:
            return _read_text(values["urdf_file"]), f"file {values['urdf_file']}", "urdf_file"
        if self._topic_xml is not None:
            return self._topic_xml, "topic robot_description", "robot_description"
        return None, "", ""

    def _parse(self, xml: str, root_link: str) -> RobotModel:
        key = (xml, root_link)
        model = self._parsed.get(key)
        if model is None:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                model = RobotModel.from_urdf_string(xml, root_link=root_link or None)
            _check_description(model)
            for warning in caught:              # e.g. MasslessLinkWarning: into the ROS log
                self.get_logger().warning(f"robot description: {warning.message}")
            if len(self._parsed) >= 4:          # a few recent parses, for quick switches
                self._parsed.pop(next(iter(self._parsed)))
            self._parsed[key] = model
        return model

    def _build_state(self, values: dict[str, Any]) -> _Applied:
        """The state for ``values`` (strict: every value must fit the model it implies)."""
        xml, origin, responsible = self._description(values)
        if xml is None:
            if self._state.snapshot is not None:
                raise ParameterValueError(
                    responsible or "robot_description",
                    "this leaves no robot description (nothing received on the "
                    "robot_description topic)")
            return _Applied(None, None, MappingProxyType(values))
        try:
            full = self._parse(xml, "")
        except ManipDynamicsError as exc:
            raise ParameterValueError(responsible, f"robot description from {origin}: {exc}")
        conflicts = model_conflicts(values, full, urdf_links=full.frame_names)
        if "root_link" not in conflicts:
            base = self._parse(xml, values["root_link"])
            conflicts = model_conflicts(values, base)
        if conflicts:
            name, reason = next(iter(conflicts.items()))
            raise ParameterValueError(name, reason)
        try:
            snapshot = make_snapshot(base, values)
        except ManipDynamicsError as exc:
            raise ParameterValueError("payload.frame", str(exc))
        return _Applied(snapshot, base, MappingProxyType(values), origin)

    # ------------------------------------------------------------------ robot model

    def _load_initial_model(self, values: dict[str, Any]) -> None:
        try:
            xml, origin, responsible = self._description(values)
        except ParameterValueError as exc:
            raise ConfigurationError(str(exc)) from None
        if xml is None:
            self.get_logger().info(
                "waiting for a robot description on topic "
                f"{self._description_sub.topic_name} (or set parameter robot_description "
                "or urdf_file)")
            return
        try:
            self._parse(xml, "")
        except ManipDynamicsError as exc:
            raise ConfigurationError(
                f"parameter {responsible}: robot description from {origin}: {exc}") from None
        self._adopt(xml, origin)

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
                self._topic_xml = xml
                which = "robot_description" if values["robot_description"] else "urdf_file"
                self.get_logger().info(
                    f"robot_description topic: description received but not used: "
                    f"parameter {which} is set and takes precedence")
                return
            try:
                self._parse(xml, "")
            except ManipDynamicsError as exc:
                self.get_logger().error(
                    f"robot_description topic: broken robot description rejected ({exc}); "
                    + ("keeping the previous model" if self.snapshot else "still no model"))
                return
            self._adopt(xml, "topic robot_description")
            self._topic_xml = xml

    def _adopt(self, xml: str, origin: str) -> None:
        """Use a new (parseable) description; parameters naming things it lacks are reset.

        Unlike a parameter change, a description cannot be refused for not fitting the
        parameters (it is what the robot is), so each misfit parameter goes back to its
        default, with an error naming it; the parameter server then shows what is applied.
        """
        values = dict(self._state.values)
        full = self._parse(xml, "")
        conflicts = model_conflicts(values, full, urdf_links=full.frame_names)
        resets = {}
        if "root_link" in conflicts:
            resets["root_link"] = conflicts["root_link"]
            values["root_link"] = SPECS["root_link"].default
        base = self._parse(xml, values["root_link"])
        conflicts = model_conflicts(values, base)
        resets.update(conflicts)
        for name in conflicts:
            values[name] = SPECS[name].default
        try:
            snapshot = make_snapshot(base, values)
        except ManipDynamicsError as exc:
            # e.g. the core refusing the payload on this model: drop the payload instead
            self.get_logger().error(f"{origin}: {exc}")
            resets["payload.frame"] = str(exc)
            values["payload.frame"] = ""
            snapshot = make_snapshot(base, values)
        for name, reason in resets.items():
            self.get_logger().error(
                f"parameter {name} reset to {SPECS[name].default!r} for the robot description "
                f"from {origin}: {reason}")
        if resets:
            self._resetting = True
            try:
                self.set_parameters_atomically(
                    [Parameter(name, Parameter.Type(SPECS[name].type), values[name])
                     for name in resets])
            finally:
                self._resetting = False
        self._swap(_Applied(snapshot, base, MappingProxyType(values), origin))

    def _swap(self, new: _Applied) -> None:
        """Make ``new`` current (one assignment); clear markers / stamp order if needed."""
        old = self._state
        model_changed = new.base_model is not old.base_model
        markers_changed = (old.snapshot is None or new.snapshot is None
                           or old.snapshot.markers != new.snapshot.markers
                           or old.snapshot.tip_frame != new.snapshot.tip_frame)
        with self._marker_lock:
            self._state = new
            if model_changed:
                self._last_stamp_ns = None
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
        self._last_stamp_ns = None

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
        now_ns = self.get_clock().now().nanoseconds
        max_age = float(state.values["max_state_age"])
        if max_age > 0.0:
            age = (now_ns - stamp_ns) * 1e-9
            if age > max_age:
                self._skip("stale", f"stale: its stamp is {age:.3f} s old "
                                    f"(max_state_age = {max_age} s)")
                return
        ahead = (stamp_ns - now_ns) * 1e-9
        if now_ns > 0 and ahead > FUTURE_STAMP_LIMIT:   # (sim time before /clock: 0)
            self._skip("future", f"from the future: its stamp is {ahead:.3f} s ahead of this "
                                 f"node's clock (limit {FUTURE_STAMP_LIMIT:.0f} s; clocks "
                                 "not synchronised?)")
            return
        last = self._last_stamp_ns
        if last is not None and stamp_ns < last:
            self._skip("out-of-order", f"out of order: its stamp is {(last - stamp_ns) * 1e-9:.6f} "
                                       "s older than the previous message's")
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
        # Finite inputs can still overflow (1e308 on a prismatic joint, qd**2 in C qd):
        # never publish NaN or inf.
        bad = (_first_non_finite(g=g) if terms is None else _first_non_finite(
            g=terms.g, c=terms.c, M=terms.M, J=terms.J, Lambda=terms.Lambda, A=terms.A))
        if bad is None and terms is not None and math.isnan(float(terms.condition_number)):
            bad = "condition_number"                # (inf is documented: singular)
        if bad is not None:
            self._skip("overflow:" + bad, f"the dynamics overflowed: {bad} is not finite "
                                          "(joint values too large?)")
            return
        self._publish(snapshot, msg.header, q, qd, np.asarray(g, dtype=float), terms)
        self._last_stamp_ns = stamp_ns
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
