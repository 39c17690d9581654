"""dynamics_node over real rclpy + DDS: every output, parameter and bad input.

Three dynamics nodes run in their own processes for the whole module, side by side on the
same domain:

* ``/left``:  the embedded Panda from the ``urdf_file`` parameter, default (best-effort)
  joint_states subscription;
* ``/right``: no description parameter: its model comes from the ``robot_description``
  TOPIC; ``joint_states_qos.reliability:=reliable``. The ``right`` fixture puts it in a
  known state before each test (description parameters and the parameters the tests
  change at their defaults, the planar 2R on the topic), so each test runs alone;
* ``/bare``: like /right, never given a description but by the one test that needs a
  node without a model.

The test side is one rclpy node in this process (``Probe`` per arm) that publishes inputs
and records every output by its stamp (the node copies the input stamp to each output), so
an output is matched to the message that caused it and a skipped message is proven to have
produced nothing: messages of one publisher are handled in order, so once the output of a
later good message arrived, the bad one has been handled (its log line says how). A log
line is looked for only in what the node wrote after the action (``log_mark``): the log
is shared by the whole module.
References are computed here with the core from the same URDF: this checks the
translation layer, not the dynamics (the core is checked against Pinocchio elsewhere).
"""
from __future__ import annotations

import math
import struct
import threading
import time
import warnings

import numpy as np
import pytest

import ros_utils
from manip_dynamics import RobotModel, robots

from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.srv import GetParameters, SetParameters, SetParametersAtomically
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.serialization import serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from visualization_msgs.msg import Marker, MarkerArray

from manip_dynamics_interfaces.srv import GetMassMatrix, InverseDynamics
from node_test_helpers import MODULE, OUTPUTS, keep_output, stamp_ns, param_msg

PANDA = robots.path("panda")
PLANAR_2R = robots.path("planar_2r")
PLANAR_RP = robots.path("planar_rp")
PANDA_JOINTS = tuple(f"panda_joint{i}" for i in range(1, 8))
Q_PANDA = np.array([0.1, -0.4, 0.2, -1.9, 0.3, 1.6, 0.5])
QD_PANDA = np.array([0.3, -0.2, 0.5, 0.1, -0.4, 0.2, 0.6])
TOL = dict(rtol=1e-9, atol=1e-9)

def load(path, **kwargs) -> RobotModel:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # massless tool links
        return RobotModel.from_urdf_file(path, **kwargs)


def read(path) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


class Probe:
    """The test side of one dynamics node: publishes its inputs, records its outputs."""

    _stamp_lock = threading.Lock()
    _last_stamp = [0]

    def __init__(self, node, namespace: str, proc):
        self.node = node
        self.ns = namespace
        self.proc = proc
        self.prefix = f"{namespace}/dynamics_node"
        self.lock = threading.Lock()
        self.by_stamp = {topic: {} for topic in OUTPUTS}   # topic -> {stamp ns: msg}
        self.markers: list[MarkerArray] = []                 # in arrival order
        self.commands: list[Float64MultiArray] = []          # (no header: arrival order)
        self._subs = [
            node.create_subscription(msg_type, f"{self.prefix}/{topic}",
                                     self._recorder(topic), 50)
            for topic, msg_type in OUTPUTS.items()
        ]
        self.joint_states = node.create_publisher(JointState, f"{namespace}/joint_states", 50)
        self.description = node.create_publisher(
            String, f"{namespace}/robot_description", ros_utils.latched_qos())

    def close(self):
        for sub in self._subs:
            self.node.destroy_subscription(sub)
        self.node.destroy_publisher(self.joint_states)
        self.node.destroy_publisher(self.description)

    def _recorder(self, topic):
        def record(msg):
            with self.lock:
                keep_output(self, topic, msg)
        return record

    # ---- inputs
    @classmethod
    def new_stamp(cls, node, age: float = 0.0):
        """A stamp unique across probes and increasing (age: seconds in the past)."""
        with cls._stamp_lock:
            ns = node.get_clock().now().nanoseconds - int(age * 1e9)
            if age == 0.0:
                ns = max(ns, cls._last_stamp[0] + 1000)
                cls._last_stamp[0] = ns
        msg = JointState().header.stamp
        msg.sec, msg.nanosec = divmod(ns, 1_000_000_000)
        return msg

    def send(self, names, position, velocity=(), stamp=None, age=0.0) -> int:
        msg = JointState(name=list(names), position=[float(x) for x in position],
                         velocity=[float(x) for x in velocity])
        msg.header.stamp = stamp if stamp is not None else self.new_stamp(self.node, age)
        msg.header.frame_id = "input_frame"
        # (generous: a node process starting on a busy machine takes tens of seconds)
        ros_utils.publish_matched(self.joint_states, msg, timeout=90.0,
                                  describe=lambda: self.log(40))
        return stamp_ns(msg.header)

    def get(self, topic, stamp):
        with self.lock:
            return self.by_stamp[topic].get(stamp)

    def wait(self, topic, stamp, timeout=10.0):
        return ros_utils.wait_for(lambda: self.get(topic, stamp), timeout=timeout,
                                  message=f"no {topic} output for stamp {stamp} "
                                          f"from {self.prefix}\n" + self.log(40))

    def roundtrip(self, names, position, velocity=(), topic="dynamics", timeout=20.0):
        """Publish (re-publishing with fresh stamps) until ``topic`` answers; -> (stamp, msg)."""
        deadline = time.monotonic() + timeout
        while True:
            stamp = self.send(names, position, velocity)
            try:
                return stamp, self.wait(topic, stamp, timeout=min(1.0, timeout))
            except TimeoutError:
                ros_utils.assert_running(self.proc)
                if time.monotonic() > deadline:
                    raise

    def ask(self, names, position, velocity):
        """One message that must be answered on every per-state topic -> dict topic -> msg."""
        stamp, _ = self.roundtrip(names, position, velocity)
        return {t: self.wait(t, stamp) for t in ("gravity_torques", "coriolis_torques",
                                                 "dynamics")}

    def assert_skipped(self, stamp, good, topics=("gravity_torques", "coriolis_torques",
                                                 "dynamics")):
        """``stamp`` produced no output: proven by a later good message being answered."""
        names, position, velocity = good
        self.roundtrip(names, position, velocity, topic="dynamics")
        for topic in topics:
            assert self.get(topic, stamp) is None, f"{topic} published for a skipped message"

    # ---- parameters
    def set(self, *params):
        req = SetParameters.Request(parameters=list(params))
        res = ros_utils.call_service(self.node, SetParameters, f"{self.prefix}/set_parameters",
                                     req)
        return res.results

    def set_ok(self, *params):
        for p, r in zip(params, self.set(*params)):
            assert r.successful, f"setting {p.name} was refused: {r.reason}"

    def set_atomically(self, *params):
        req = SetParametersAtomically.Request(parameters=list(params))
        return ros_utils.call_service(self.node, SetParametersAtomically,
                                      f"{self.prefix}/set_parameters_atomically", req).result

    def get_params(self, *names):
        res = ros_utils.call_service(self.node, GetParameters, f"{self.prefix}/get_parameters",
                                     GetParameters.Request(names=list(names)))
        return {n: Parameter.from_parameter_msg(ParameterMsg(name=n, value=v)).value
                for n, v in zip(names, res.values)}

    def wait_up(self, timeout=90.0):
        """Until the node subscribes to joint_states (created last: its services and model
        are ready by then); generous, a node starting on a busy machine is slow."""
        def up():
            ros_utils.assert_running(self.proc)
            return self.joint_states.get_subscription_count() >= 1
        ros_utils.wait_for(up, timeout=timeout, interval=0.1)

    # ---- log
    def log(self, tail=None) -> str:
        return ros_utils.read_log(self.proc, tail=tail)

    def log_mark(self) -> int:
        """The log's length now: ``wait_log(text, since=mark)`` then sees only the lines
        written after the mark (not a line an earlier test left in the shared log)."""
        return len(self.log())

    def log_since(self, mark: int) -> str:
        return self.log()[mark:]

    def wait_log(self, text, since: int, timeout=10.0, count=1):
        """Wait until ``text`` occurs ``count`` times in the log written after ``since``
        (a ``log_mark()`` taken before the action that should log it)."""
        return ros_utils.wait_for(lambda: self.log_since(since).count(text) >= count,
                                  timeout=timeout,
                                  message=f"{text!r} not in the log of {self.prefix} since "
                                          f"offset {since}:\n" + self.log(40))


# --------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def arms(module_ros_node, tmp_path_factory):
    """Both dynamics node processes (started together) and their probes."""
    logs = tmp_path_factory.mktemp("dynamics_node_logs")
    left = ros_utils.start_node_process(
        [MODULE, "--ros-args", "-r", "__ns:=/left", "-p", f"urdf_file:={PANDA}"],
        name="left", log_dir=logs)
    right = ros_utils.start_node_process(
        [MODULE, "--ros-args", "-r", "__ns:=/right",
         "-p", "joint_states_qos.reliability:=reliable"],
        name="right", log_dir=logs)
    bare = ros_utils.start_node_process(           # no model ever: for one test only
        [MODULE, "--ros-args", "-r", "__ns:=/bare",
         "-p", "joint_states_qos.reliability:=reliable"], name="bare", log_dir=logs)
    probes = {"left": Probe(module_ros_node, "/left", left),
              "right": Probe(module_ros_node, "/right", right),
              "bare": Probe(module_ros_node, "/bare", bare)}
    yield probes
    for probe in probes.values():
        probe.close()
    for proc in (left, right, bare):
        code = ros_utils.stop_process(proc)
        print(f"----- log of {proc.name} (exit code {code})\n" + ros_utils.read_log(proc, 200))


@pytest.fixture
def left(arms):
    arms["left"].wait_up()
    return arms["left"]


@pytest.fixture
def right(arms):
    """/right in a known state whatever ran before: the description parameters and the
    parameters the tests change at their defaults, the planar 2R from the TOPIC."""
    probe = arms["right"]
    probe.wait_up()
    result = probe.set_atomically(
        param_msg("urdf_file", ""), param_msg("robot_description", ""),
        param_msg("tip_link", ""),
        param_msg("command_joints", [], Parameter.Type.STRING_ARRAY))
    assert result.successful, result.reason
    probe.description.publish(String(data=read(PLANAR_2R)))
    ros_utils.wait_for(lambda: list(probe.roundtrip(*PLANAR_GOOD)[1].joint_names)
                       == ["joint1", "joint2"], timeout=30.0)
    return probe


@pytest.fixture
def bare(arms):
    """/bare: started with no robot description, and never given one but by the test
    that needs a node without a model."""
    arms["bare"].wait_up()
    return arms["bare"]


def panda_state(order=None, extra=True):
    """A JointState-like triple for the Panda, shuffled, with an extra (gripper) joint."""
    order = order or [3, 0, 6, 1, 5, 2, 4]
    names = [PANDA_JOINTS[i] for i in order]
    q, qd = list(Q_PANDA[order]), list(QD_PANDA[order])
    if extra:
        names.insert(2, "panda_finger_joint1")
        q.insert(2, 0.04)
        qd.insert(2, 0.0)
    return names, q, qd


PLANAR_GOOD = (["joint2", "joint1"], [0.7, -0.3], [0.5, 1.5])   # model order: joint1, joint2


def assert_outputs_match(out, ref: RobotModel, q, qd, tip, damping=1e-3, singular=1e6):
    names = list(ref.joint_names)
    terms = ref.compute_all(q, qd, tip, damping=damping)
    g, c = out["gravity_torques"], out["coriolis_torques"]
    for msg, effort in ((g, terms.g), (c, terms.c)):
        assert list(msg.name) == names
        np.testing.assert_allclose(msg.position, q, **TOL)
        np.testing.assert_allclose(msg.velocity, qd, **TOL)
        np.testing.assert_allclose(msg.effort, effort, **TOL)
    d = out["dynamics"]
    assert list(d.joint_names) == names and d.tip_frame == tip
    assert d.header.frame_id == ref.root_link
    assert stamp_ns(d.header) == stamp_ns(g.header) == stamp_ns(c.header)
    np.testing.assert_allclose(d.position, q, **TOL)
    np.testing.assert_allclose(d.velocity, qd, **TOL)
    np.testing.assert_allclose(d.gravity, terms.g, **TOL)
    np.testing.assert_allclose(d.coriolis, terms.c, **TOL)
    np.testing.assert_allclose(d.mass_matrix, np.ravel(terms.M), **TOL)
    np.testing.assert_allclose(d.jacobian, np.ravel(terms.J), **TOL)
    # Lambda: the exact inverse unless near-singular, then the damped inverse (both
    # formed here with numpy from A = J M^-1 J^T, not by the core's own inversion)
    A = np.asarray(ref.inverse_effective_inertia(q, tip))
    s_A, V_A = np.linalg.eigh(A)
    if s_A.min() > 0 and s_A.max() / s_A.min() <= singular:
        lam_ref = np.linalg.inv(A)
    else:
        s_A = np.maximum(s_A, 0.0)
        lam_ref = (V_A * (s_A / (s_A ** 2 + damping ** 2))) @ V_A.T
    scale = max(1.0, float(np.abs(lam_ref).max()))
    np.testing.assert_allclose(d.effective_inertia, np.ravel(lam_ref), rtol=1e-7,
                               atol=1e-9 * scale)
    np.testing.assert_allclose(d.inverse_effective_inertia, np.ravel(terms.A), **TOL)
    assert np.isclose(d.condition_number, terms.condition_number, rtol=1e-9) or (
        math.isinf(d.condition_number) and math.isinf(terms.condition_number))
    assert d.near_singular == (bool(terms.singular) or terms.condition_number > singular)
    return terms


# --------------------------------------------------------------------------- outputs

def test_outputs_match_the_core_for_a_shuffled_message_with_extra_joints(left):
    ref = load(PANDA)
    names, q, qd = panda_state()
    out = left.ask(names, q, qd)
    terms = assert_outputs_match(out, ref, Q_PANDA, QD_PANDA, "panda_link8")
    # JointState outputs echo the input header; ~/dynamics is in the root link's frame.
    assert out["gravity_torques"].header.frame_id == "input_frame"
    # ~/gravity_command: model order by default (command_joints empty).
    stamp = stamp_ns(out["dynamics"].header)
    ros_utils.wait_for(lambda: left.commands)
    np.testing.assert_allclose(left.commands[-1].data, terms.g, **TOL)
    # The markers of this state, as markers.py draws them from the same snapshot.
    ros_utils.wait_for(lambda: any(stamp_ns(m.markers[0].header) >= stamp
                                   for m in left.markers if m.markers), timeout=10)
    latest = left.markers[-1]
    assert latest.markers[0].header.frame_id == "panda_link0"
    assert {m.ns for m in latest.markers} >= {"effective_inertia", "effective_inertia_label"}


def test_best_effort_publisher_is_accepted(left, module_ros_node):
    best_effort = module_ros_node.create_publisher(
        JointState, "/left/joint_states",
        QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT))
    try:
        names, q, qd = panda_state()

        def one():
            msg = JointState(name=names, position=q, velocity=qd)
            msg.header.stamp = Probe.new_stamp(module_ros_node)
            best_effort.publish(msg)
            return stamp_ns(msg.header)

        sent = []
        answered = ros_utils.wait_for(lambda: (sent.append(one()) or any(
            left.get("dynamics", s) for s in sent)), timeout=15, interval=0.2)
        assert answered
    finally:
        module_ros_node.destroy_publisher(best_effort)


def test_velocity_omitted_publishes_gravity_only(left):
    ref = load(PANDA)
    names, q, _ = panda_state()
    mark = left.log_mark()
    stamp, g = left.roundtrip(names, q, (), topic="gravity_torques")
    np.testing.assert_allclose(g.effort, ref.gravity_torques(Q_PANDA), **TOL)
    assert list(g.velocity) == []
    left.assert_skipped(stamp, panda_state(), topics=("coriolis_torques", "dynamics"))
    left.wait_log("joint_states has no velocities", since=mark)


def test_services_answer_while_joint_states_stream(left, module_ros_node):
    ref = load(PANDA)
    names, q, qd = panda_state()
    stop = threading.Event()

    def stream():
        while not stop.is_set():
            left.send(names, q, qd)
            time.sleep(0.005)

    streamer = threading.Thread(target=stream, daemon=True)
    streamer.start()
    try:
        for _ in range(5):
            res = ros_utils.call_service(
                module_ros_node, GetMassMatrix, "/left/dynamics_node/get_mass_matrix",
                GetMassMatrix.Request(joint_names=list(PANDA_JOINTS), position=list(Q_PANDA)))
            assert res.success, res.message
            np.testing.assert_allclose(res.mass_matrix, np.ravel(ref.mass_matrix(Q_PANDA)),
                                       **TOL)
    finally:
        stop.set()
        streamer.join()


# --------------------------------------------------------------------------- parameters

def test_every_parameter_is_declared_with_a_description(left, module_ros_node):
    """Each descriptor carries its table entry: description, type, read-only, range."""
    from manip_dynamics.rules.dynamics_parameters import PARAMETERS

    descriptors = ros_utils.assert_descriptors_match_table(
        module_ros_node, "/left/dynamics_node", PARAMETERS)
    assert all(d.description for d in descriptors)
    assert {d.name for d in descriptors if d.read_only} == {
        "joint_states_qos.reliability", "joint_states_qos.depth", "executor",
        "contact.calibration.startup_duration"}
    ranges = {d.name: d.floating_point_range for d in descriptors}
    for name in ("dynamics", "gravity_torques", "gravity_command", "coriolis_torques",
                 "external_torques", "external_wrench", "contact"):
        (r,) = ranges[f"outputs.{name}.rate"]          # 0 = every state
        assert (r.from_value, r.to_value) == (0.0, math.inf)
    (r,) = ranges["outputs.inertia_markers.rate"]
    assert (r.from_value, r.to_value) == (0.0, 1000.0)   # and > 0, checked by the node


def test_gravity_parameter_flips_g(left):
    names, q, qd = panda_state()
    before = left.ask(names, q, qd)["gravity_torques"].effort
    left.set_ok(param_msg("gravity", [0.0, 0.0, 9.81]))
    try:
        out = left.ask(names, q, qd)
        np.testing.assert_allclose(out["gravity_torques"].effort, -np.asarray(before), **TOL)
        assert_outputs_match(out, load(PANDA).with_gravity([0, 0, 9.81]), Q_PANDA, QD_PANDA,
                             "panda_link8")
    finally:
        left.set_ok(param_msg("gravity", [0.0, 0.0, -9.81]))


def test_payload_parameters_increase_g(left):
    names, q, qd = panda_state()
    plain = np.asarray(left.ask(names, q, qd)["gravity_torques"].effort)
    inertia = [0.02, 0.001, 0.0, 0.03, 0.0, 0.025]
    result = left.set_atomically(
        param_msg("payload.frame", "panda_link8"), param_msg("payload.mass", 2.5),
        param_msg("payload.com", [0.0, 0.02, 0.1]), param_msg("payload.inertia", inertia))
    assert result.successful, result.reason
    try:
        I = np.array([[0.02, 0.001, 0.0], [0.001, 0.03, 0.0], [0.0, 0.0, 0.025]])
        ref = load(PANDA).with_payload("panda_link8", 2.5, [0.0, 0.02, 0.1], I)
        out = left.ask(names, q, qd)
        assert_outputs_match(out, ref, Q_PANDA, QD_PANDA, "panda_link8")
        loaded = np.asarray(out["gravity_torques"].effort)
        assert abs(loaded[1]) > abs(plain[1]) + 1.0     # shoulder holds 2.5 kg more
    finally:
        left.set_ok(param_msg("payload.frame", ""), param_msg("payload.mass", 0.0))


def test_friction_parameters_reach_the_services(left, module_ros_node):
    left.set_ok(param_msg("friction.joints", ["panda_joint2", "panda_joint5"]),
                param_msg("friction.viscous", [1.5, 0.7]),
                param_msg("friction.coulomb", [0.25, 0.0]))
    try:
        base = load(PANDA)
        viscous, coulomb = base.viscous.copy(), base.coulomb.copy()
        viscous[[1, 4]], coulomb[[1, 4]] = [1.5, 0.7], [0.25, 0.0]
        ref = base.with_friction(viscous=viscous, coulomb=coulomb)
        qdd = np.linspace(-1, 1, 7)
        res = ros_utils.call_service(
            module_ros_node, InverseDynamics, "/left/dynamics_node/inverse_dynamics",
            InverseDynamics.Request(joint_names=list(PANDA_JOINTS), position=list(Q_PANDA),
                                    velocity=list(QD_PANDA), acceleration=list(qdd),
                                    include_friction=True))
        assert res.success, res.message
        np.testing.assert_allclose(
            res.effort, ref.inverse_dynamics(Q_PANDA, QD_PANDA, qdd, friction=True), **TOL)
        assert not np.allclose(
            res.effort, base.inverse_dynamics(Q_PANDA, QD_PANDA, qdd, friction=True))
    finally:
        # One by one, clearing the joints first would leave 2 values for 0 joints (refused):
        # related parameters change together atomically.
        refused = left.set(param_msg("friction.joints", [], Parameter.Type.STRING_ARRAY))
        assert not refused[0].successful and "friction.viscous" in refused[0].reason
        result = left.set_atomically(
            param_msg("friction.joints", [], Parameter.Type.STRING_ARRAY),
            param_msg("friction.viscous", [], Parameter.Type.DOUBLE_ARRAY),
            param_msg("friction.coulomb", [], Parameter.Type.DOUBLE_ARRAY))
        assert result.successful, result.reason


def test_command_joints_order_the_gravity_command(left):
    names, q, qd = panda_state()
    g = load(PANDA).gravity_torques(Q_PANDA)
    left.set_ok(param_msg("command_joints", ["panda_joint3", "panda_joint1", "panda_joint2"]))
    try:
        with left.lock:
            left.commands.clear()
        left.roundtrip(names, q, qd)
        ros_utils.wait_for(lambda: left.commands)
        np.testing.assert_allclose(left.commands[-1].data, g[[2, 0, 1]], **TOL)
    finally:
        left.set_ok(param_msg("command_joints", [], Parameter.Type.STRING_ARRAY))


def test_tip_damping_and_singular_threshold(left):
    names, q, qd = panda_state()
    # panda_link5 moves with 5 joints only: its 6 x 6 J M^-1 J^T is singular.
    left.set_ok(param_msg("tip_link", "panda_link5"), param_msg("damping", 0.5))
    try:
        out = left.ask(names, q, qd)
        assert_outputs_match(out, load(PANDA), Q_PANDA, QD_PANDA, "panda_link5", damping=0.5)
        assert out["dynamics"].near_singular and math.isinf(out["dynamics"].condition_number)
        assert np.isfinite(out["dynamics"].effective_inertia).all()
        left.set_ok(param_msg("tip_link", ""), param_msg("singular_condition", 1.0001))
        out = left.ask(names, q, qd)
        assert_outputs_match(out, load(PANDA), Q_PANDA, QD_PANDA, "panda_link8", damping=0.5,
                             singular=1.0001)
        assert out["dynamics"].near_singular
        left.set_ok(param_msg("singular_condition", 1e300))
        out = left.ask(names, q, qd)
        # not near-singular: Lambda is the exact inverse, whatever the damping
        assert_outputs_match(out, load(PANDA), Q_PANDA, QD_PANDA, "panda_link8", damping=0.5,
                             singular=1e300)
        assert not out["dynamics"].near_singular
    finally:
        left.set_ok(param_msg("tip_link", ""), param_msg("damping", 1e-3),
                    param_msg("singular_condition", 1e6))


def test_root_link_re_roots_the_model(left):
    names, q, qd = panda_state()
    left.set_ok(param_msg("root_link", "panda_link2"))
    try:
        out = left.ask(names, q, qd)
        assert_outputs_match(out, load(PANDA, root_link="panda_link2"), Q_PANDA[2:],
                             QD_PANDA[2:], "panda_link8")
    finally:
        left.set_ok(param_msg("root_link", ""))
    assert len(left.ask(names, q, qd)["dynamics"].joint_names) == 7


def test_marker_parameters(left):
    names, q, qd = panda_state()

    def markers_after(stamp):
        def found():
            with left.lock:
                return [m for m in left.markers
                        if m.markers and stamp_ns(m.markers[0].header) >= stamp]
        return ros_utils.wait_for(found, timeout=10)[-1]

    left.set_ok(param_msg("markers.alpha", 0.3), param_msg("markers.show_mass_matrix", True),
                param_msg("markers.scale", 0.2))
    try:
        stamp, _ = left.roundtrip(names, q, qd)
        latest = markers_after(stamp)
        sphere = next(m for m in latest.markers if m.ns == "effective_inertia")
        assert sphere.color.a == pytest.approx(0.3)
        bars = [m for m in latest.markers if m.ns == "mass_matrix_eigenvalues"]
        assert len(bars) == 7 and all(b.action == Marker.ADD for b in bars)
        # Same state, same options, built here with markers.py: the node draws exactly that.
        from manip_dynamics.nodes import markers
        from manip_dynamics.rules.snapshot import MarkerOptions, Snapshot
        expected = markers.inertia_marker_array(
            Snapshot(load(PANDA), "panda_link8", PANDA_JOINTS,
                     markers=MarkerOptions(True, 0.2, True, 0.3)),
            Q_PANDA, sphere.header)
        want = next(m for m in expected.markers if m.ns == "effective_inertia")
        for axis in "xyz":
            assert getattr(sphere.scale, axis) == pytest.approx(getattr(want.scale, axis),
                                                               rel=1e-9)

        # Disabling clears the display (DELETEALL) and stops the stream.
        left.set_ok(param_msg("outputs.inertia_markers.enabled", False))
        ros_utils.wait_for(lambda: any(m.markers and m.markers[0].action == Marker.DELETEALL
                                       for m in left.markers[-3:]))
        count = len(left.markers)
        for _ in range(3):
            left.roundtrip(names, q, qd)
        assert len(left.markers) == count

        # outputs.inertia_markers.rate bounds the marker stream: 1/20 Hz -> at most one for
        # these messages.
        left.set_ok(param_msg("outputs.inertia_markers.enabled", True),
                    param_msg("outputs.inertia_markers.rate", 0.05))
        count = len(left.markers)
        for _ in range(6):
            left.roundtrip(names, q, qd)
        assert len(left.markers) - count <= 2      # at most: one DELETEALL + one array
    finally:
        left.set_ok(param_msg("markers.alpha", 0.6), param_msg("markers.show_mass_matrix", False),
                    param_msg("markers.scale", 0.1),
                    param_msg("outputs.inertia_markers.enabled", True),
                    param_msg("outputs.inertia_markers.rate", 10.0))


def test_max_state_age_skips_stale_messages(left):
    names, q, qd = panda_state()
    left.set_ok(param_msg("max_state_age", 0.5))
    try:
        mark = left.log_mark()
        stale = left.send(names, q, qd, age=30.0)
        # the log line first: the good message of assert_skipped, queued right behind the
        # stale one, would make the node skip the stale one unseen (latest wins)
        left.wait_log("stale: its stamp is 30.", since=mark)
        left.assert_skipped(stale, (names, q, qd))
        fresh, _ = left.roundtrip(names, q, qd)
    finally:
        left.set_ok(param_msg("max_state_age", 0.0))


BAD_VALUES = [
    ("payload.mass", -1.0, "out of range"),          # the descriptor range
    ("payload.inertia", [1.0, 0.0, 0.0, -1.0, 0.0, 1.0], "not positive semi-definite"),
    ("payload.inertia", [1.0, 0.0, 0.0, 1.0, 0.0, 3.0], "triangle inequality"),
    ("payload.inertia", [1.0, 0.0, 0.0], "needs 6 values"),
    ("payload.com", [0.0, 0.0], "needs 3 values"),
    ("payload.frame", "no_such_link", "'no_such_link' is not in the robot model"),
    ("gravity", [math.nan, 0.0, -9.81], "must be finite"),
    ("gravity", [0.0, -9.81], "needs 3 values"),
    ("gravity", "down", "Wrong parameter type"),
    ("tip_link", "no_such_link", "'no_such_link' is not in the robot model"),
    ("root_link", "no_such_link", "'no_such_link' is not in the robot model"),
    ("command_joints", ["panda_joint1", "gripper"], "'gripper' is not a coordinate"),
    ("command_joints", ["panda_joint1", "panda_joint1"], "listed twice"),
    ("friction.joints", ["wheel"], "'wheel' is not a coordinate"),
    ("friction.viscous", [1.0], "has 1 values for 0 friction.joints"),
    ("damping", 0.0, "must be > 0"),
    ("damping", math.inf, "not finite"),
    ("singular_condition", 1.0, "must be > 1"),
    ("outputs.inertia_markers.rate", 0.0, "must be > 0"),
    ("markers.scale", -0.1, "out of range"),         # the descriptor range
    ("markers.alpha", 1.5, "out of range"),
    ("max_state_age", -1.0, "out of range"),
    ("joint_states_qos.reliability", "reliable", "read-only"),
    ("joint_states_qos.depth", 5, "read-only"),
    ("urdf_file", "/no/such/robot.urdf", "cannot read '/no/such/robot.urdf'"),
    ("robot_description", "<robot name='x'><link", "robot_description"),
]


def test_bad_values_are_refused_with_a_reason_and_change_nothing(left):
    names, q, qd = panda_state()
    before = left.ask(names, q, qd)
    bad = BAD_VALUES
    results = left.set(*(param_msg(n, v) for n, v, _ in bad))
    for (name, value, reason), result in zip(bad, results):
        assert not result.successful, f"{name} = {value!r} was accepted"
        assert reason in result.reason, (name, result.reason)
        assert name in result.reason or "Wrong parameter type" in reason or \
            "read-only" in reason, (name, result.reason)
    # negative coulomb needs matching joints; set both at once, atomically: refused as a whole
    result = left.set_atomically(param_msg("friction.joints", ["panda_joint1"]),
                                 param_msg("friction.coulomb", [-0.5]))
    assert not result.successful and "friction.coulomb" in result.reason
    assert "negative" in result.reason
    stored = left.get_params("payload.mass", "gravity", "tip_link", "friction.joints",
                             "urdf_file", "robot_description")
    assert stored["payload.mass"] == 0.0 and list(stored["gravity"]) == [0.0, 0.0, -9.81]
    assert stored["tip_link"] == "" and list(stored["friction.joints"]) == []
    assert stored["urdf_file"] == PANDA and stored["robot_description"] == ""
    after = left.ask(names, q, qd)
    for topic in ("gravity_torques", "coriolis_torques"):
        np.testing.assert_allclose(after[topic].effort, before[topic].effort, **TOL)
    np.testing.assert_allclose(after["dynamics"].effective_inertia,
                               before["dynamics"].effective_inertia, **TOL)


def test_robot_description_parameter_takes_precedence_over_the_file(left):
    names, q, qd = panda_state()
    mark = left.log_mark()
    left.set_ok(param_msg("robot_description", read(PLANAR_2R)))
    try:
        good = PLANAR_GOOD
        out = left.ask(*good)
        assert_outputs_match(out, load(PLANAR_2R), np.array([-0.3, 0.7]),
                             np.array([1.5, 0.5]), "tool")
        left.wait_log("robot model from parameter robot_description: 2 joints", since=mark)
    finally:
        left.set_ok(param_msg("robot_description", ""))
    assert len(left.ask(names, q, qd)["dynamics"].joint_names) == 7


# --------------------------------------------------------------------------- bad inputs

def test_no_model_yet_then_description_from_the_topic(bare):
    # No description yet: messages are skipped, and the log says why.
    mark = bare.log_mark()
    bare.send(*PLANAR_GOOD)
    bare.wait_log("no robot model yet", since=mark)
    assert bare.log_since(mark).count("joint_states message skipped: no robot model yet")
    bare.description.publish(String(data=read(PLANAR_2R)))
    out = bare.ask(*PLANAR_GOOD)
    assert_outputs_match(out, load(PLANAR_2R), np.array([-0.3, 0.7]), np.array([1.5, 0.5]),
                         "tool")
    bare.wait_log("robot model from topic robot_description: 2 joints", since=mark)


BAD_INPUTS = [
    # (what, names, position, velocity, text the log must contain)
    ("missing joint", ["joint1"], [0.1], [0.0], "missing joints"),
    ("short position", ["joint1", "joint2"], [0.1], [0.0, 0.0], "2 names but 1 values"),
    ("short velocity", ["joint1", "joint2"], [0.1, 0.2], [0.0], "velocity: 2 names but 1"),
    ("empty message", [], [], [], "position: missing joints"),
    ("NaN position", ["joint1", "joint2"], [math.nan, 0.2], [0.0, 0.0],
     "position: joint 'joint1' has non-finite value nan"),
    ("inf velocity", ["joint1", "joint2"], [0.1, 0.2], [0.0, math.inf],
     "velocity: joint 'joint2' has non-finite value inf"),
    ("duplicate names", ["joint1", "joint2", "joint1"], [0.1, 0.2, 0.3], [0.0] * 3,
     "duplicate joint names"),
]


@pytest.mark.parametrize("what,names,position,velocity,logged", BAD_INPUTS,
                         ids=[b[0] for b in BAD_INPUTS])
def test_bad_joint_states_are_skipped_and_named(right, what, names, position, velocity, logged):
    mark = right.log_mark()
    bad = right.send(names, position, velocity)
    # the log line first (only lines written after the mark): a good message queued
    # right behind the bad one would make the node skip it unseen (latest wins)
    right.wait_log(logged, since=mark)
    right.assert_skipped(bad, PLANAR_GOOD)
    line = next(l for l in right.log_since(mark).splitlines() if logged in l)
    assert "joint_states message skipped: " in line, line


MALFORMED = [
    # (what, bytes of a good serialised message -> what is published, text the log must hold)
    ("cut short", lambda data, end: data[:end - 4],
     "not a readable sensor_msgs/JointState: velocity: 2 float64 values at byte"),
    ("big-endian", lambda data, end: b"\x00\x00" + data[2:],
     "not a readable sensor_msgs/JointState: serialised JointState in big-endian CDR"),
    ("garbage", lambda data, end: b"definitely not a JointState",
     "not a readable sensor_msgs/JointState: serialised JointState with encapsulation "
     "64 65"),
]


@pytest.mark.parametrize("what,corrupt,logged", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_serialised_joint_states_are_skipped_and_named(right, module_ros_node,
                                                                   what, corrupt, logged):
    """The node takes joint_states raw and reads the bytes itself: bytes published raw over
    DDS (``Publisher.publish(bytes)``) that are no readable JointState (a good message cut
    inside its velocities, its encapsulation made big-endian, garbage) are skipped with a
    WARN naming the problem; nothing is published with the good message's stamp (readable
    in the bytes of the first two), the next good state is answered, no traceback."""
    names, position, velocity = PLANAR_GOOD
    msg = JointState(name=names, position=position, velocity=velocity)
    msg.header.stamp = Probe.new_stamp(module_ros_node)
    msg.header.frame_id = "input_frame"
    data = serialize_message(msg)
    end = data.rfind(struct.pack("<d", velocity[-1])) + 8     # the last value's end
    mark = right.log_mark()
    ros_utils.publish_matched(right.joint_states, corrupt(data, end), timeout=90.0)
    right.wait_log(logged, since=mark)
    line = next(l for l in right.log_since(mark).splitlines() if logged in l)
    assert "joint_states message skipped: " in line, line
    right.assert_skipped(stamp_ns(msg.header), PLANAR_GOOD)
    ros_utils.assert_running(right.proc)
    assert "Traceback" not in right.log_since(mark)


def test_out_of_order_stamp_is_skipped(right, module_ros_node):
    first = Probe.new_stamp(module_ros_node, age=0.0)
    newer = right.send(*PLANAR_GOOD)
    right.wait("dynamics", newer)
    mark = right.log_mark()
    older = right.send(*PLANAR_GOOD, stamp=first)          # older than the one just handled
    right.wait_log("out of order", since=mark)
    right.assert_skipped(older, PLANAR_GOOD)
    # A negative stamp (int32 seconds allow it) is just very old: skipped, node unharmed
    # (its log line falls in the same 5 s throttle window as the one above).
    negative = JointState().header.stamp
    negative.sec = -5
    skipped = right.send(*PLANAR_GOOD, stamp=negative)
    right.assert_skipped(skipped, PLANAR_GOOD)
    assert "Traceback" not in right.log_since(mark)


def test_a_refused_message_does_not_advance_the_stamp_order(right, module_ros_node):
    """Good at t0, a NaN state at t2 (refused: bad input), then good at t1 < t2: t1 is
    answered, not skipped as out of order (only a computed state moves the order)."""
    t0, t1, t2 = (Probe.new_stamp(module_ros_node) for _ in range(3))
    right.wait("dynamics", right.send(*PLANAR_GOOD, stamp=t0))
    mark = right.log_mark()
    names, position, _ = PLANAR_GOOD
    bad = right.send(names, position, [math.nan, 0.0], stamp=t2)     # (names: joint2, joint1)
    # (seen before the next one is sent: latest wins would skip it unseen)
    right.wait_log("velocity: joint 'joint2' has non-finite value nan", since=mark)
    good = right.send(*PLANAR_GOOD, stamp=t1)
    right.wait("dynamics", good)
    assert right.get("dynamics", bad) is None
    assert "out of order" not in right.log_since(mark)


def test_repeated_problems_are_logged_throttled(right):
    names = ["joint1", "joint2", "joint2"]
    mark = right.log_mark()
    right.send(names, [0.1, 0.2, 0.3], [0.0] * 3)
    right.wait_log("duplicate joint names 'joint2'", since=mark)   # seen before anything queues behind
    for _ in range(5):                                  # (latest wins would skip it unseen)
        right.send(names, [0.1, 0.2, 0.3], [0.0] * 3)
        time.sleep(0.05)
    right.roundtrip(*PLANAR_GOOD)
    time.sleep(0.2)          # any further (unthrottled) line would be written by now
    assert right.log_since(mark).count("duplicate joint names 'joint2'") == 1


def test_broken_description_keeps_the_previous_model(right):
    mark = right.log_mark()
    right.description.publish(String(data="<robot name='broken'><link name='a'/><joint"))
    right.wait_log("broken robot description rejected", since=mark)
    out = right.ask(*PLANAR_GOOD)
    assert_outputs_match(out, load(PLANAR_2R), np.array([-0.3, 0.7]), np.array([1.5, 0.5]),
                         "tool")


def test_new_description_resets_parameters_it_lacks(right):
    right.set_ok(param_msg("tip_link", "tool"), param_msg("command_joints", ["joint2"]))
    right.ask(*PLANAR_GOOD)
    with right.lock:
        right.markers.clear()
    mark = right.log_mark()
    right.description.publish(String(data=read(PLANAR_RP)))
    rp = (["r", "theta"], [0.4, 0.3], [0.1, -0.2])
    out = right.ask(*rp)
    assert_outputs_match(out, load(PLANAR_RP), np.array([0.3, 0.4]), np.array([-0.2, 0.1]),
                         "link2")
    right.wait_log("parameter tip_link reset to ''", since=mark)
    right.wait_log("parameter command_joints reset to []", since=mark)
    assert right.get_params("tip_link", "command_joints") == {"tip_link": "",
                                                              "command_joints": []}
    # The old robot's markers were cleared.
    ros_utils.wait_for(lambda: any(m.markers and m.markers[0].action == Marker.DELETEALL
                                   for m in right.markers))


def test_parameters_take_precedence_over_the_topic(right):
    # urdf_file set: a description on the topic (planar_rp) is not used ...
    right.set_ok(param_msg("urdf_file", PLANAR_2R))
    out = right.ask(*PLANAR_GOOD)
    assert list(out["dynamics"].joint_names) == ["joint1", "joint2"]
    mark = right.log_mark()
    right.description.publish(String(data=read(PLANAR_RP)))
    right.wait_log("description received but not used: parameter urdf_file is set",
                   since=mark)
    assert list(right.ask(*PLANAR_GOOD)["dynamics"].joint_names) == ["joint1", "joint2"]
    # ... until the parameter is cleared: back to the topic's latest description.
    right.set_ok(param_msg("urdf_file", ""))
    assert list(right.ask(["theta", "r"], [0.1, 0.5], [0.0, 0.0])["dynamics"].joint_names) \
        == ["theta", "r"]
    right.description.publish(String(data=read(PLANAR_2R)))
    right.ask(*PLANAR_GOOD)


def test_two_arms_side_by_side_do_not_hear_each_other(left, right):
    names, q, qd = panda_state()
    left_stamp, _ = left.roundtrip(names, q, qd)
    right_stamp, _ = right.roundtrip(*PLANAR_GOOD)
    left.roundtrip(names, q, qd)
    assert right.get("dynamics", left_stamp) is None
    assert left.get("dynamics", right_stamp) is None
    assert left.get("dynamics", left_stamp).joint_names != \
        right.get("dynamics", right_stamp).joint_names


# --------------------------------------------------------------------------- start-up

def test_start_up_from_a_params_file_with_remapping_and_clean_shutdown(
        node_process, module_ros_node, tmp_path):
    xml = read(PLANAR_RP)
    params = tmp_path / "params.yaml"
    indented = "\n".join("      " + line for line in xml.splitlines())
    params.write_text(
        "/solo/dynamics_node:\n  ros__parameters:\n"
        "    tip_link: link1\n"
        "    gravity: [0.0, 0.0, 9.81]\n"
        f"    robot_description: |\n{indented}\n")
    proc = node_process([MODULE, "--ros-args", "-r", "__ns:=/solo",
                         "-r", "joint_states:=/solo/arm/joint_states_remapped",
                         "--params-file", str(params)])
    probe = Probe(module_ros_node, "/solo", proc)
    module_ros_node.destroy_publisher(probe.joint_states)
    probe.joint_states = module_ros_node.create_publisher(
        JointState, "/solo/arm/joint_states_remapped", 10)
    out = probe.ask(["theta", "r"], [0.3, 0.4], [0.1, -0.2])
    assert_outputs_match(out, load(PLANAR_RP).with_gravity([0, 0, 9.81]), np.array([0.3, 0.4]),
                         np.array([0.1, -0.2]), "link1")
    probe.close()
    assert ros_utils.stop_process(proc) == 0
    assert "Traceback" not in ros_utils.read_log(proc)


@pytest.mark.parametrize("args,logged", [
    (["-p", "payload.mass:=-1.0"], "payload.mass: -1.0 must be >= 0"),
    (["-p", "urdf_file:=/no/such/file.urdf"], "cannot read '/no/such/file.urdf'"),
    (["-p", "gravity:=[0,0,-10]"], "parameter gravity must be of type DOUBLE_ARRAY"),
], ids=["negative mass", "missing file", "integer gravity"])
def test_bad_start_up_configuration_exits_with_a_reason(node_process, args, logged):
    proc = node_process([MODULE, "--ros-args", *args])
    assert proc.wait(timeout=30) == 2
    log = ros_utils.read_log(proc)
    assert "cannot start" in log and logged in log, log


@pytest.mark.timeout(300)      # start-up (90 s), the clock (60 s), two answers (60 s each)
def test_clock_jumping_back_restarts_the_stamp_order(node_process, module_ros_node):
    """With use_sim_time, a simulation restart (/clock going back) is not 'out of order'."""
    from diagnostic_msgs.msg import DiagnosticArray
    from rosgraph_msgs.msg import Clock

    proc = node_process([MODULE, "--ros-args", "-r", "__ns:=/sim", "-p", "use_sim_time:=true",
                         "-p", f"urdf_file:={PLANAR_2R}"])
    probe = Probe(module_ros_node, "/sim", proc)
    clock = module_ros_node.create_publisher(Clock, "/clock", 10)
    node_times = []     # the node's clock: the stamps of its /diagnostics (1 Hz in sim time)
    diagnostics = module_ros_node.create_subscription(
        DiagnosticArray, "/diagnostics",
        lambda msg: node_times.append(stamp_ns(msg.header))
        if msg.status and msg.status[0].hardware_id == "/sim/dynamics_node" else None, 10)
    try:
        def at(sec):
            msg = Clock()
            msg.clock.sec = sec
            return msg

        def answered(sec, timeout=60.0):
            """/clock and joint_states at ``sec`` until answered: each answer waited for
            2 s, and the whole for up to ``timeout`` s (the margin of Probe.roundtrip on a
            busy machine; the node's start-up is not in it). A late answer is not lost:
            every attempt has the same stamp, and the probe keeps outputs by stamp."""
            deadline = time.monotonic() + timeout
            while True:
                clock.publish(at(sec))
                sent = probe.send(*PLANAR_GOOD, stamp=at(sec).clock)
                try:
                    return probe.wait("dynamics", sent, timeout=2.0)
                except TimeoutError:
                    ros_utils.assert_running(proc)
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"no answer at sim time {sec} within {timeout} s\n"
                                           + probe.log(40)) from None

        # The node up first: its /clock subscription exists from the start, its joint_states
        # subscription only after the model's compile (tens of seconds on a busy machine),
        # which the answers' budget must not pay for.
        probe.wait_up()
        # The node's clock must be at 1000 before it goes back to 400: with no /clock yet
        # its time is 0, and a first /clock of 400 would be a jump forward, not back. /clock
        # is best effort (a message sent before the node's reader matched this publisher is
        # dropped): sent until the node's /diagnostics, stamped with its clock, show one of
        # the times sent. Each /clock is 1 s on, so the 1 Hz diagnostics timer (on sim
        # time) fires for each one the node gets, not only once; answered(1000) then sets
        # the clock back to 1000 (a jump back of a few seconds, before any state).
        sent = []

        def clock_reached():
            sent.append(1000 + len(sent))
            clock.publish(at(sent[-1]))
            return any(t in {s * 10**9 for s in sent} for t in node_times)
        ros_utils.wait_for(clock_reached, timeout=60.0, interval=0.2,
                           message="the node's clock did not reach 1000 s")
        answered(1000)
        # Same clock: an older stamp is out of order ...
        mark = probe.log_mark()
        older = probe.send(*PLANAR_GOOD, stamp=at(500).clock)
        probe.wait_log("out of order", since=mark)
        # ... but once the clock itself went back (to 400), older stamps are accepted again.
        answered(400)
        assert probe.get("dynamics", older) is None
    finally:
        module_ros_node.destroy_subscription(diagnostics)
        module_ros_node.destroy_publisher(clock)
        probe.close()
