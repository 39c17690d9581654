"""Adversarial robustness of ``dynamics_node`` over real rclpy + DDS (seeded, bounded).

The standard: bad input gets a clear error and the node keeps running. Malformed
joint_states, NaN, unknown or missing joints, broken URDFs, bad parameter values and bad
service requests: nothing crashes, nothing is silently wrong.

Each test starts its own node process (log in the test's tmp_path) and, in this process,
a ``Watch`` that subscribes to EVERY output topic and checks every message it receives:
no NaN / inf where none is documented (only ``Dynamics.condition_number`` may be inf),
consistent lengths, and, for each JointState / Dynamics output, that it equals the core
computed here for the input that carried the same stamp (stamps are unique per input).
Garbage is interleaved with valid inputs whose outputs must arrive and match, which proves
the node alive and correct after the abuse; at the end the process must still be running
and its log must hold no traceback.

* ``test_joint_states_barrage``: 400 joint_states, every 4th valid (100) and 300 random
  ones (275 of them malformed for the default seed: random name subsets,
  duplicates, empty / unicode names, random array lengths, NaN / inf / 1e308 / 1e154,
  zero / negative / far-future stamps, velocity and effort mismatches) on the planar RP
  arm (a prismatic joint: huge positions overflow the core), markers at a high rate.
  The counts are asserted.
* ``test_service_barrage``: every service, 240 requests (for the default seed 145
  malformed, 57 valid, 38 valid in form with huge values; asserted): malformed ones (lengths, NaN, unknown
  joints / frames, empty and ragged trajectories, wrench without frame, payload with
  negative mass or NaN inertia, huge numbers) interleaved with valid ones checked against
  the core.
* ``test_robot_description_garbage_while_streaming``: garbage strings, an empty string,
  unexpanded xacro, a robot without joints on ``robot_description``, then a valid
  different robot, while joint_states stream.
* ``test_parameter_flips_while_streaming``: rapid ``set_parameters`` with bad and good
  values while joint_states stream. After every accepted change, a state sent once the
  change was acknowledged is checked against the core under the configuration applied
  so far (gravity, tip, damping, singular threshold: JointState outputs and ~/dynamics);
  the streamed states' outputs in between are checked by the Watch (finite, consistent
  lengths), not against the core (which configuration a streamed state met is not known);
  a final configuration set in one call is checked against the core, ~/gravity_command
  included.

``ROBUSTNESS_SEED`` (environment) changes the seed; the default keeps runs reproducible.
"""
from __future__ import annotations

import math
import os
import random
import threading
import time
import warnings

import numpy as np
import pytest

import ros_utils
from manip_dynamics import RobotModel, robots

from rcl_interfaces.srv import SetParameters
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from visualization_msgs.msg import Marker

from node_test_helpers import MODULE, OUTPUTS, keep_output, stamp_ns

DEFAULT_SEED = 20250607
SEED = int(os.environ.get("ROBUSTNESS_SEED", str(DEFAULT_SEED)))
DAMPING, SINGULAR = 1e-3, 1e6          # the node's defaults
TOL = dict(rtol=1e-9, atol=1e-9)
HUGE = (1e308, -1e308, 1e154, -1e200, 1e20)
NONFINITE = (math.nan, math.inf, -math.inf)
# what a refusal of huge (finite) values says, in the node's or the core's words
OVERFLOW_WORDS = ("finite", "overflow", "too large", "singular", "positive definite")

def load(name, **kwargs) -> RobotModel:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RobotModel.from_urdf_file(robots.path(name), **kwargs)


MODELS = {name: load(name) for name in ("planar_rp", "planar_2r", "panda")}


def finite(values) -> bool:
    return bool(np.all(np.isfinite(np.asarray(values, dtype=float))))


def start_node(node_process, ns, *params):
    args = [MODULE, "--ros-args", "-r", f"__ns:=/{ns}",
            "-p", "joint_states_qos.reliability:=reliable",
            "-p", "joint_states_qos.depth:=1000"]
    for p in params:
        args += ["-p", p]
    return node_process(args, name=ns)


def assert_clean_log(proc):
    ros_utils.assert_running(proc)
    log = ros_utils.read_log(proc)
    assert "Traceback" not in log, log[-6000:]
    assert "internal error" not in log and "unexpected error" not in log, log[-6000:]


# --------------------------------------------------------------------------- output watch

class Watch:
    """Subscribes to every output of one node; checks each message as it arrives."""

    def __init__(self, node, ns, proc):
        self.node, self.proc = node, proc
        self.prefix = f"/{ns}/dynamics_node"
        self.lock = threading.Lock()
        self.by_stamp = {t: {} for t in ("gravity_torques", "coriolis_torques", "dynamics")}
        self.commands: list = []
        self.markers: list = []
        self.problems: list[str] = []
        self.counts = {t: 0 for t in OUTPUTS}
        qos = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
        self.subs = [node.create_subscription(t, f"{self.prefix}/{topic}",
                                              self._recorder(topic), qos)
                     for topic, t in OUTPUTS.items()]
        self.pub = node.create_publisher(JointState, f"/{ns}/joint_states", qos)
        self.description = node.create_publisher(String, f"/{ns}/robot_description",
                                                 ros_utils.latched_qos())
        self.sent: dict[int, JointState] = {}
        self._last = 0
        self._send_lock = threading.Lock()     # a streaming thread and the test both send

    def close(self):
        for sub in self.subs:
            self.node.destroy_subscription(sub)
        self.node.destroy_publisher(self.pub)
        self.node.destroy_publisher(self.description)

    def _recorder(self, topic):
        def record(msg):
            problem = self._check(topic, msg)
            with self.lock:
                self.counts[topic] += 1
                if problem:
                    self.problems.append(f"{topic}: {problem}")
                keep_output(self, topic, msg)
        return record

    @staticmethod
    def _check(topic, msg):
        if topic in ("gravity_torques", "coriolis_torques"):
            n = len(msg.name)
            if not (n and len(msg.position) == n and len(msg.effort) == n
                    and len(msg.velocity) in (0, n)):
                return f"lengths {n} {len(msg.position)} {len(msg.velocity)} {len(msg.effort)}"
            for field in ("position", "velocity", "effort"):
                if not finite(getattr(msg, field)):
                    return f"{field} not finite: {list(getattr(msg, field))}"
        elif topic == "gravity_command":
            if not finite(msg.data) or not len(msg.data):
                return f"data {list(msg.data)}"
        elif topic == "dynamics":
            n = len(msg.joint_names)
            sizes = dict(position=n, velocity=n, gravity=n, coriolis=n, mass_matrix=n * n,
                         jacobian=6 * n, effective_inertia=36, inverse_effective_inertia=36)
            for field, size in sizes.items():
                values = getattr(msg, field)
                if len(values) != size or not finite(values):
                    return f"{field} ({len(values)} values) not finite or wrong size"
            if math.isnan(msg.condition_number) or msg.condition_number < 1.0:
                return f"condition_number {msg.condition_number}"
        elif topic == "inertia_markers":
            for m in msg.markers:
                if m.action == Marker.DELETEALL:
                    continue
                p, o, s, c = m.pose.position, m.pose.orientation, m.scale, m.color
                numbers = [p.x, p.y, p.z, o.x, o.y, o.z, o.w, s.x, s.y, s.z, c.r, c.g, c.b, c.a]
                if not finite(numbers):
                    return f"marker {m.ns}/{m.id} not finite: {numbers}"
                if m.type in (Marker.SPHERE, Marker.CUBE) and min(s.x, s.y, s.z) <= 0:
                    return f"marker {m.ns}/{m.id} scale {numbers[7:10]}"
                if abs(o.x ** 2 + o.y ** 2 + o.z ** 2 + o.w ** 2 - 1.0) > 1e-6:
                    return f"marker {m.ns}/{m.id} quaternion not unit"
        return None

    # ---- inputs
    def fresh_stamp(self):
        ns = max(self.node.get_clock().now().nanoseconds, self._last + 1000)
        self._last = ns
        return divmod(ns, 1_000_000_000)

    def send(self, names, position, velocity=(), effort=(), stamp=None) -> int:
        msg = JointState(name=list(names), position=[float(x) for x in position],
                         velocity=[float(x) for x in velocity],
                         effort=[float(x) for x in effort])
        with self._send_lock:
            msg.header.stamp.sec, msg.header.stamp.nanosec = stamp or self.fresh_stamp()
            msg.header.frame_id = "in"
            key = stamp_ns(msg.header)
            assert key not in self.sent, "test bug: stamps must be unique"
            self.sent[key] = msg
        ros_utils.publish_matched(self.pub, msg, timeout=90.0)   # (slow start-up under load)
        return key

    def get(self, topic, stamp):
        with self.lock:
            return self.by_stamp[topic].get(stamp)

    def wait(self, topic, stamp, timeout=10.0):
        def got():
            ros_utils.assert_running(self.proc)
            return self.get(topic, stamp)
        return ros_utils.wait_for(got, timeout=timeout,
                                  message=f"no {topic} for stamp {stamp}\n"
                                          + ros_utils.read_log(self.proc, tail=40))

    def roundtrip(self, names, position, velocity, timeout=30.0):
        """Publish until answered (the first message may race the subscription match)."""
        deadline = time.monotonic() + timeout
        while True:
            stamp = self.send(names, position, velocity)
            try:
                return stamp, self.wait("gravity_torques", stamp, timeout=1.0)
            except TimeoutError:
                if time.monotonic() > deadline:
                    raise

    # ---- checks
    def check_outputs(self, reference):
        """Every JointState / Dynamics output equals the core for the input of its stamp.

        ``reference(joint_names) -> (model, tip)``: the model the test expects for an
        output naming these joints (the parameters applied)."""
        with self.lock:
            outputs = {t: dict(v) for t, v in self.by_stamp.items()}
            assert not self.problems, "garbage published:\n" + "\n".join(self.problems[:20])
        checked = 0
        for topic, msgs in outputs.items():
            for stamp, out in msgs.items():
                assert stamp in self.sent, f"{topic}: output for a stamp never sent: {stamp}"
                names = list(out.joint_names if topic == "dynamics" else out.name)
                model, tip = reference(tuple(names))
                sent = self.sent[stamp]
                q = model.vector_from_names(sent.name, sent.position)
                has_qd = len(sent.velocity) > 0
                qd = model.vector_from_names(sent.name, sent.velocity) if has_qd else None
                if topic in ("coriolis_torques", "dynamics"):
                    assert has_qd, f"{topic} published for a position-only message"
                compare(topic, out, model, tip, q, qd)
                checked += 1
        return checked


def compare(topic, out, model, tip, q, qd, damping=DAMPING, singular=SINGULAR):
    if qd is None:
        np.testing.assert_allclose(out.effort, model.gravity_torques(q), **TOL)
        np.testing.assert_allclose(out.position, q, **TOL)
        assert len(out.velocity) == 0
        return
    terms = model.compute_all(q, qd, tip, damping=damping, damping_condition=singular)
    if topic == "gravity_torques":
        np.testing.assert_allclose(out.effort, terms.g, **TOL)
    elif topic == "coriolis_torques":
        np.testing.assert_allclose(out.effort, terms.c, **TOL)
    else:
        assert out.tip_frame == tip
        for field, ref in (("position", q), ("velocity", qd), ("gravity", terms.g),
                           ("coriolis", terms.c), ("mass_matrix", terms.M),
                           ("jacobian", terms.J), ("inverse_effective_inertia", terms.A)):
            np.testing.assert_allclose(getattr(out, field), np.ravel(ref), **TOL,
                                       err_msg=field)
        lam = np.ravel(terms.Lambda)
        np.testing.assert_allclose(out.effective_inertia, lam, rtol=1e-9,
                                   atol=1e-12 * max(1.0, float(np.abs(lam).max())))
        assert out.condition_number == pytest.approx(terms.condition_number, rel=1e-9) or (
            math.isinf(out.condition_number) and math.isinf(terms.condition_number))
    if topic != "dynamics":
        np.testing.assert_allclose(out.position, q, **TOL)
        np.testing.assert_allclose(out.velocity, qd, **TOL)


# --------------------------------------------------------------------------- joint_states

def random_value(rng, garbage=True):
    r = rng.random()
    if garbage and r < 0.12:
        return rng.choice(NONFINITE)
    if garbage and r < 0.24:
        return rng.choice(HUGE)
    if garbage and r < 0.27:
        return rng.choice((5e-324, -0.0, 1e-300))
    return rng.uniform(-2.0, 2.0)


def garbage_joint_state(rng, joints):
    """(names, position, velocity, effort, stamp kind) - most of them malformed."""
    pool = list(joints) + ["", "ünïcødé_joint", "joint with spaces", "x" * 300,
                           "panda_joint1", "\u2603"]
    kind = rng.random()
    if kind < 0.3:      # a full, shuffled set of names, maybe with extras and duplicates
        names = list(joints) + rng.sample(pool, rng.randint(0, 3))
        rng.shuffle(names)
    elif kind < 0.4:
        names = []
    else:
        names = [rng.choice(pool) for _ in range(rng.randint(0, 6))]
    n = len(names)

    def array(garbage_length):
        length = n if not garbage_length else rng.choice((0, max(0, n - 1), n + 1, n, 7))
        return [random_value(rng) for _ in range(length)]

    position = array(rng.random() < 0.25)
    velocity = [] if rng.random() < 0.25 else array(rng.random() < 0.25)
    effort = [] if rng.random() < 0.5 else array(True)
    stamp = rng.choices(("fresh", "zero", "negative", "past", "future"),
                        (0.6, 0.1, 0.1, 0.1, 0.1))[0]
    return names, position, velocity, effort, stamp


def expected_input(model, names, position, velocity):
    """(q, qd) if the core takes this message, else None (the node must skip it)."""
    try:
        q = model.vector_from_names(names, position)
        qd = model.vector_from_names(names, velocity, field="velocity") if velocity else None
    except Exception:
        return None
    return q, qd


@pytest.mark.timeout(90)
def test_joint_states_barrage(node_process, ros_node):
    client = ros_node
    """Malformed joint_states interleaved with valid ones on the planar RP arm."""
    rng = random.Random(SEED)
    model = MODELS["planar_rp"]
    tip = model.default_tip
    proc = start_node(node_process, "fuzz_js", f"urdf_file:={robots.path('planar_rp')}",
                      "outputs.inertia_markers.rate:=1000.0", "markers.show_mass_matrix:=true",
                      # every valid message must be answered: no latest-wins skipping
                      "joint_states_latest_wins:=false")
    watch = Watch(client, "fuzz_js", proc)
    try:
        watch.roundtrip(["theta", "r"], [0.1, 0.5], [0.2, 0.1])

        skipped, valid, kinds = [], [], set()
        unique = iter(range(1, 10**6))
        for i in range(400):
            if i % 4 == 3:          # a valid message, with extras, shuffled; must be answered
                q, qd = [rng.uniform(-1, 1), rng.uniform(0.2, 1.0)], [rng.uniform(-1, 1)] * 2
                names, position, velocity = ["gripper", "r", "theta"], [0.0, q[1], q[0]], \
                    [0.0, qd[1], qd[0]]
                if rng.random() < 0.3:
                    velocity = []
                valid.append(watch.send(names, position, velocity))
                continue
            names, position, velocity, effort, kind = garbage_joint_state(rng, model.joint_names)
            kinds.add(kind)
            now_sec = client.get_clock().now().nanoseconds // 1_000_000_000
            stamp = {"fresh": None, "zero": (0, next(unique)),
                     "negative": (-rng.randint(1, 2**31 - 1), next(unique)),
                     "past": (now_sec - rng.randint(1, 10**6), next(unique)),
                     "future": (rng.choice((2**31 - 1, now_sec + 10**6, now_sec + 3600)),
                                next(unique))}[kind]
            key = watch.send(names, position, velocity, effort, stamp=stamp)
            if kind != "fresh" or expected_input(model, names, position, velocity) is None:
                skipped.append(key)
            if i % 16 == 0:
                time.sleep(0.002)

        # Messages of one publisher are handled in order: once the last one is answered,
        # every earlier one has been handled.
        watch.wait("gravity_torques", valid[-1], timeout=20.0)
        final, _ = watch.roundtrip(["r", "theta"], [0.3, 0.2], [0.5, -0.5])
        watch.wait("dynamics", final)
        time.sleep(0.3)               # late marker / command messages, if any
        for stamp in valid:
            sent = watch.sent[stamp]
            assert watch.get("gravity_torques", stamp) is not None, \
                f"valid message {stamp} not answered\n" + ros_utils.read_log(proc, tail=40)
            if sent.velocity:
                assert watch.get("dynamics", stamp) is not None
        for stamp in skipped:
            for topic in ("gravity_torques", "coriolis_torques", "dynamics"):
                assert watch.get(topic, stamp) is None, \
                    f"{topic} published for malformed input {watch.sent[stamp]}"
        checked = watch.check_outputs(lambda names: (model, tip))
        assert checked >= 2 * len(valid)
        # what was sent: 400 messages, every 4th valid, the other 300 random, of which
        # those the core refuses or whose stamp is not fresh are malformed (skipped)
        assert len(valid) == 100
        if SEED == DEFAULT_SEED:
            assert len(skipped) == 275, len(skipped)      # (and 25 random but well-formed)
        assert len(skipped) >= 200
        assert watch.counts["inertia_markers"] > 0 and watch.counts["gravity_command"] > 0
        np.testing.assert_allclose(watch.commands[-1].data,
                                   model.gravity_torques([0.2, 0.3]), **TOL)
        assert kinds == {"fresh", "zero", "negative", "past", "future"}
        log = ros_utils.read_log(proc)
        for words in ("missing joints", "non-finite value", "duplicate joint names",
                      "names but", "out of order", "future"):
            assert words in log, f"{words!r} never logged:\n{log[-3000:]}"
        assert_clean_log(proc)
    finally:
        watch.close()


def test_huge_positions_and_velocities_never_publish_inf(node_process, ros_node):
    client = ros_node
    """1e308 (finite) in q of a prismatic joint or in qd overflows the core: skipped, named."""
    model = MODELS["planar_rp"]
    # every message judged (latest wins off): a burst would otherwise be skipped as older
    proc = start_node(node_process, "fuzz_huge", f"urdf_file:={robots.path('planar_rp')}",
                      "outputs.inertia_markers.rate:=1000.0", "joint_states_latest_wins:=false")
    watch = Watch(client, "fuzz_huge", proc)
    try:
        watch.roundtrip(["theta", "r"], [0.1, 0.5], [0.2, 0.1])
        huge = [watch.send(["theta", "r"], q, qd) for q, qd in (
            ([0.1, 1e308], [0.0, 0.0]), ([0.1, 0.5], [1e308, 0.0]),
            ([0.1, 1e154], [1e154, 1e154]), ([0.1, 1e308], []), ([1e308, 0.5], [0.0, 0.0]))]
        stamp, _ = watch.roundtrip(["theta", "r"], [0.2, 0.6], [0.1, 0.1])
        watch.wait("dynamics", stamp)
        time.sleep(0.2)
        for key in huge:
            out = watch.get("gravity_torques", key)
            if out is not None:          # published only if finite and right (q = 1e308 rad)
                assert finite(out.effort)
        assert watch.get("gravity_torques", huge[0]) is None
        assert watch.get("dynamics", huge[1]) is None
        watch.check_outputs(lambda names: (model, model.default_tip))
        log = ros_utils.read_log(proc)
        assert "joint_states message skipped" in log and any(
            w in log for w in OVERFLOW_WORDS), log[-3000:]
        assert_clean_log(proc)
    finally:
        watch.close()


# --------------------------------------------------------------------------- services

def _srv():
    from manip_dynamics_interfaces import srv
    return srv


class Services:
    """Persistent clients for the six services of one node."""

    NAMES = {"inverse_dynamics": "InverseDynamics", "forward_dynamics": "ForwardDynamics",
             "get_mass_matrix": "GetMassMatrix", "get_gravity_torques": "GetGravityTorques",
             "get_effective_inertia": "GetEffectiveInertia",
             "get_trajectory_torques": "GetTrajectoryTorques"}

    def __init__(self, node, prefix, proc):
        srv = _srv()
        self.node, self.prefix, self.proc = node, prefix, proc
        self.types = {name: getattr(srv, t) for name, t in self.NAMES.items()}
        self.clients = {name: node.create_client(t, f"{prefix}/{name}")
                        for name, t in self.types.items()}

    def wait_ready(self, timeout=30.0):
        for name, c in self.clients.items():
            ros_utils.wait_for(lambda: (ros_utils.assert_running(self.proc)
                                        or c.service_is_ready()),
                               timeout=timeout, message=f"service {name} not ready")

    def request(self, name, **kwargs):
        return self.types[name].Request(**kwargs)

    def call(self, name, request, timeout=30.0):
        done = threading.Event()
        future = self.clients[name].call_async(request)
        future.add_done_callback(lambda _f: done.set())
        deadline = time.monotonic() + timeout
        while not done.wait(0.2):
            ros_utils.assert_running(self.proc)
            assert time.monotonic() < deadline, f"{name} did not answer"
        return future.result()

    def close(self):
        for c in self.clients.values():
            self.node.destroy_client(c)


DATA_FIELDS = ("effort", "acceleration", "mass_matrix", "eigenvalues", "effective_inertia",
               "inverse_effective_inertia", "eigenvectors", "peak_effort", "effort_limit",
               "joint_names", "exceeding_points")
# documented non-finite answers: (field, what may be inf)
MAY_BE_INF = {("get_effective_inertia", "eigenvalues"), ("get_effective_inertia",
              "condition_number"), ("get_mass_matrix", "condition_number"),
              ("get_trajectory_torques", "effort_limit")}


def check_answer(service, res, prefix):
    """success=false: message names the service, no data. success=true: no garbage."""
    if not res.success:
        assert res.message.startswith(f"{prefix}/{service}: "), res.message
        assert len(res.message) > len(prefix) + len(service) + 10, res.message
        for field in DATA_FIELDS:
            assert len(getattr(res, field, [])) == 0, (service, field, res.message)
        return
    for field, kind in res.get_fields_and_field_types().items():
        if "double" not in kind:
            continue
        values = np.atleast_1d(np.asarray(getattr(res, field), dtype=float))
        assert not np.any(np.isnan(values)), (service, field, values)
        if (service, field) not in MAY_BE_INF:
            assert finite(values), (service, field, values)


def service_reference(model, tip, service, req):
    """What the core says for a request this test built in model order (no joint_names)."""
    q = np.asarray(req.position, dtype=float) if hasattr(req, "position") else None
    if service == "inverse_dynamics":
        f = req.external_wrench
        wrench = dict(f_ext=[f.force.x, f.force.y, f.force.z, f.torque.x, f.torque.y,
                             f.torque.z], f_ext_frame=req.wrench_frame) if req.wrench_frame \
            else {}
        return model.inverse_dynamics(q, req.velocity or np.zeros(model.n),
                                      req.acceleration or np.zeros(model.n),
                                      friction=req.include_friction, **wrench), "effort"
    if service == "forward_dynamics":
        return model.forward_dynamics(q, req.velocity or np.zeros(model.n), req.effort,
                                      friction=req.include_friction), "acceleration"
    if service == "get_mass_matrix":
        return np.ravel(model.mass_matrix(q)), "mass_matrix"
    if service == "get_gravity_torques":
        return model.gravity_torques(q), "effort"
    if service == "get_effective_inertia":
        return np.ravel(model.inverse_effective_inertia(
            q, req.frame or tip, linear_only=req.linear_only)), "inverse_effective_inertia"
    if service == "get_trajectory_torques":
        pts = req.trajectory.points
        Q = np.array([p.positions for p in pts])
        QD = np.array([p.velocities if len(p.velocities) else np.zeros(model.n) for p in pts])
        QDD = np.zeros_like(Q)
        return np.ravel(model.inverse_dynamics(Q, QD, QDD)), "effort"
    raise AssertionError(service)


def garbage_request(rng, model):
    """(service, request, words: any of them must be in the message) - always malformed."""
    from geometry_msgs.msg import Inertia, Wrench
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    n = model.n
    ok = [0.3, 0.6][:n]
    bad_len = rng.choice([0, 1, 3, 5])
    nonfinite = ok.copy()
    nonfinite[rng.randrange(n)] = rng.choice(NONFINITE)
    names_cases = [
        (["theta", "elbow"], ["elbow"]),                     # unknown
        (["theta", "theta"], ["theta"]),                     # duplicate
        (["theta"], ["r", "values"]),                        # missing
        (["", "r"], ["theta", "''"]),                        # empty name
        (["ünï", "r"], ["ünï", "theta"]),                    # unicode
    ]
    service = rng.choice(list(Services.NAMES))
    choice = rng.random()
    words = []

    def position_defect():
        if choice < 0.33:
            return dict(position=[0.1] * bad_len), ["position"]
        if choice < 0.66:
            return dict(position=nonfinite), ["position", "nan", "inf"]
        names, w = rng.choice(names_cases)
        return dict(joint_names=names, position=[0.1] * len(names)), w

    if service == "inverse_dynamics":
        kw, words = position_defect() if rng.random() < 0.5 else (dict(position=ok), [])
        if not words:
            w = Wrench()
            sub = rng.randrange(5)
            if sub == 0:
                kw["velocity"], words = [0.1] * rng.choice([1, 3]), ["velocity"]
            elif sub == 1:
                kw["acceleration"], words = [math.nan, 0.0], ["acceleration", "nan"]
            elif sub == 2:
                w.force.x = 1.0
                kw.update(external_wrench=w), words.append("wrench_frame")
            elif sub == 3:
                w.torque.z = rng.choice(NONFINITE)
                kw.update(external_wrench=w, wrench_frame="link2")
                words.append("external_wrench")
            else:
                w.force.z = 1.0
                kw.update(external_wrench=w, wrench_frame="no_such_link")
                words.append("no_such_link")
    elif service == "forward_dynamics":
        if rng.random() < 0.5:
            kw, words = position_defect()
            kw["effort"] = [0.0] * len(kw["position"])
        else:
            kw = dict(position=ok, effort=rng.choice([[], [1.0], [1.0, math.nan]]))
            words = ["effort"]
    elif service == "get_mass_matrix":
        kw, words = position_defect()
    elif service == "get_gravity_torques":
        if rng.random() < 0.4:
            kw, words = position_defect()
        else:
            srv = _srv()
            payload = srv.GetGravityTorques.Request().payload
            sub = rng.randrange(6)
            payload.frame_id = "link2"
            payload.inertia = Inertia(m=1.0, ixx=0.01, iyy=0.01, izz=0.01)
            if sub == 0:
                payload.inertia.m, words = -rng.uniform(0.1, 10), ["mass"]
            elif sub == 1:
                payload.inertia.ixx, words = math.nan, ["inertia", "finite", "nan"]
            elif sub == 2:
                payload.frame_id, words = "", ["frame_id"]
            elif sub == 3:
                payload.frame_id, words = "gripper_ü", ["gripper_ü"]
            elif sub == 4:
                payload.inertia.com.x, words = math.inf, ["com", "finite", "inf"]
            else:
                payload.inertia.ixx, payload.inertia.iyy, payload.inertia.izz = 1.0, 0.1, 0.1
                words = ["inertia", "triangle", "definite"]
            kw = dict(position=ok, use_payload=True, payload=payload)
    elif service == "get_effective_inertia":
        if rng.random() < 0.6:
            kw, words = position_defect()
        else:
            kw, words = dict(position=ok, frame="☃"), ["☃"]
        kw["linear_only"] = rng.random() < 0.5
    else:
        sub = rng.randrange(5)
        names = list(model.joint_names)
        if sub == 0:
            points, words = [], ["no points"]
        elif sub == 1:
            points = [JointTrajectoryPoint(positions=ok),
                      JointTrajectoryPoint(positions=ok[:1])]
            words = ["points[1]", "positions"]
        elif sub == 2:
            points = [JointTrajectoryPoint(positions=ok, velocities=[0.0, math.nan])]
            words = ["points[0]", "velocities"]
        elif sub == 3:
            points = [JointTrajectoryPoint(positions=ok, accelerations=[1.0])]
            words = ["accelerations"]
        else:
            names = ["theta", "wrist"]
            points = [JointTrajectoryPoint(positions=ok)]
            words = ["wrist"]
        kw = dict(trajectory=JointTrajectory(joint_names=names, points=points))
    return service, kw, words


def valid_request(rng, model, huge=False):
    """(service, kwargs) in model order; ``huge``: finite numbers up to 1e308."""
    from geometry_msgs.msg import Inertia, Wrench
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    def vec():
        return [rng.choice(HUGE) if huge and rng.random() < 0.5 else rng.uniform(0.2, 1.0)
                for _ in range(model.n)]

    service = rng.choice(list(Services.NAMES))
    if service == "inverse_dynamics":
        kw = dict(position=vec(), velocity=vec(), acceleration=vec(),
                  include_friction=rng.random() < 0.5)
        if huge and rng.random() < 0.5:
            w = Wrench()
            w.force.x = 1e308
            kw.update(external_wrench=w, wrench_frame="link2")
    elif service == "forward_dynamics":
        kw = dict(position=vec(), velocity=vec(), effort=vec(),
                  include_friction=rng.random() < 0.5)
    elif service in ("get_mass_matrix",):
        kw = dict(position=vec())
    elif service == "get_gravity_torques":
        kw = dict(position=vec())
        if huge:
            srv = _srv()
            payload = srv.GetGravityTorques.Request().payload
            payload.frame_id = "link2"
            payload.inertia = Inertia(m=1e308, ixx=1.0, iyy=1.0, izz=1.0)
            kw.update(use_payload=True, payload=payload)
    elif service == "get_effective_inertia":
        kw = dict(position=vec(), frame=rng.choice(["", "link1", "link2", "base_link"]),
                  linear_only=rng.random() < 0.5)       # planar arm: 3-D is singular
    else:
        kw = dict(trajectory=JointTrajectory(
            joint_names=[], points=[JointTrajectoryPoint(positions=vec(), velocities=vec())
                                    for _ in range(rng.randint(1, 4))]))
    return service, kw


@pytest.mark.timeout(90)
def test_service_barrage(node_process, ros_node):
    client = ros_node
    rng = random.Random(SEED + 1)
    model = MODELS["planar_rp"]
    tip = model.default_tip
    proc = start_node(node_process, "fuzz_srv", f"urdf_file:={robots.path('planar_rp')}")
    services = Services(client, "/fuzz_srv/dynamics_node", proc)
    try:
        services.wait_ready()
        counts = {"garbage": 0, "valid": 0, "huge_refused": 0, "huge_answered": 0}
        for i in range(240):
            r = rng.random()
            if r < 0.55:
                service, kw, words = garbage_request(rng, model)
                res = services.call(service, services.request(service, **kw))
                assert not res.success, f"{service} {kw} accepted: {res}"
                check_answer(service, res, services.prefix)
                low = res.message.lower()
                assert any(w.lower() in low for w in words), (service, kw, res.message)
                counts["garbage"] += 1
            else:
                huge = r > 0.85
                service, kw = valid_request(rng, model, huge=huge)
                req = services.request(service, **kw)
                res = services.call(service, req)
                check_answer(service, res, services.prefix)
                if huge and not res.success:
                    counts["huge_refused"] += 1
                    assert any(w in res.message for w in OVERFLOW_WORDS), res.message
                    continue
                assert res.success, f"{service} {kw}: {res.message}"
                counts["huge_answered" if huge else "valid"] += 1
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    ref, field = service_reference(model, tip, service, req)
                assert finite(ref), f"node answered {service} but the core overflows: {kw}"
                np.testing.assert_allclose(getattr(res, field), np.ravel(ref), rtol=1e-9,
                                           atol=1e-9, err_msg=f"{service} {kw}")
                if service == "get_effective_inertia" and (req.frame in ("base_link", "link1")
                                                           or not req.linear_only):
                    assert res.singular            # the planar arm cannot move out of plane
        assert counts["garbage"] > 100 and counts["valid"] > 40, counts
        assert counts["huge_refused"] > 5, counts
        assert sum(counts.values()) == 240
        if SEED == DEFAULT_SEED:                 # 145 malformed, 57 valid, 38 with huge values
            assert counts["garbage"] == 145 and counts["valid"] == 57, counts
            assert counts["huge_refused"] + counts["huge_answered"] == 38, counts
        assert_clean_log(proc)
    finally:
        services.close()


# --------------------------------------------------------------------------- descriptions

XACRO_LEFTOVERS = (
    # an unexpanded macro call: the links it would create are silently missing
    lambda xml: xml.replace(
        '<robot name="planar_2r">',
        '<robot name="planar_2r" xmlns:xacro="http://www.ros.org/wiki/xacro">'
        '<xacro:property name="L" value="0.6"/><xacro:gripper prefix="left_"/>', 1),
    # a substitution left in a name
    lambda xml: xml.replace('name="link2"', 'name="${prefix}link2"'),
    # a substitution left in a number
    lambda xml: xml.replace('xyz="0 -1 0"', 'xyz="0 ${-1} 0"', 1),
)


@pytest.mark.timeout(90)
def test_robot_description_garbage_while_streaming(node_process, ros_node):
    client = ros_node
    """Garbage, empty and xacro descriptions are refused (previous model kept); a valid
    different robot is adopted, all while joint_states naming both robots' joints stream."""
    r2, panda = MODELS["planar_2r"], MODELS["panda"]
    proc = start_node(node_process, "fuzz_desc", "outputs.inertia_markers.rate:=1000.0")
    watch = Watch(client, "fuzz_desc", proc)
    rng = random.Random(SEED + 2)
    names = list(r2.joint_names) + list(panda.joint_names) + ["gripper"]
    stop = threading.Event()

    def stream():
        while not stop.is_set():
            q = [rng.uniform(-1, 1) for _ in names]
            watch.send(names, q, [rng.uniform(-1, 1) for _ in names] if rng.random() < 0.8
                       else [])
            time.sleep(0.004)

    def reference(joints):
        model = {r2.joint_names: r2, panda.joint_names: panda}[joints]
        return model, model.default_tip

    def answered_by(model, timeout=20.0):
        def latest():
            ros_utils.assert_running(proc)
            with watch.lock:
                newest = max(watch.by_stamp["gravity_torques"], default=None)
                msg = watch.by_stamp["gravity_torques"].get(newest)
            return msg is not None and tuple(msg.name) == model.joint_names
        ros_utils.wait_for(latest, timeout=timeout, message=ros_utils.read_log(proc, tail=40))

    streamer = threading.Thread(target=stream, daemon=True)
    streamer.start()
    try:
        watch.description.publish(String(data=robots.read("planar_2r")))
        answered_by(r2)
        garbage = ["", "   ", "not xml at all", "\x00\x01\x02", "<robot name='x'><link",
                   "<html><body>oops</body></html>", "<robot name='x'/>",
                   "<robot name='ünï'><link name='only'/></robot>",         # no joints
                   robots.read("planar_2r").replace('<mass value="', '<mass value="-', 1)]
        garbage += [f(robots.read("planar_2r")) for f in XACRO_LEFTOVERS]
        for k, text in enumerate(garbage, start=1):    # one at a time (history depth 1)
            watch.description.publish(String(data=text))
            ros_utils.wait_for(lambda: ros_utils.read_log(proc).count(
                "robot_description topic: broken robot description rejected") >= k,
                timeout=10.0, message=f"description {text[:200]!r} not rejected:\n"
                + ros_utils.read_log(proc, tail=40))
        before = len(watch.by_stamp["gravity_torques"])
        ros_utils.wait_for(lambda: len(watch.by_stamp["gravity_torques"]) > before + 5)
        answered_by(r2)                   # still the planar arm, still answering
        log = ros_utils.read_log(proc)
        assert "xacro" in log and "no movable joints" in log, log[-4000:]

        watch.description.publish(String(data=robots.read("panda")))
        answered_by(panda)
        stop.set()
        streamer.join(timeout=5.0)
        time.sleep(0.3)
        checked = watch.check_outputs(reference)
        assert checked > 20
        assert any(m.markers and m.markers[0].action == Marker.DELETEALL for m in watch.markers)
        assert_clean_log(proc)
    finally:
        stop.set()
        streamer.join(timeout=5.0)
        watch.close()


# --------------------------------------------------------------------------- parameters

def bad_parameters(rng):
    """(parameter message, reason word) - each refused."""
    def p(name, value):
        return Parameter(name, value=value).to_parameter_msg()
    return rng.choice([
        (p("gravity", [0.0, 0.0, math.nan]), "gravity"),
        (p("gravity", [0.0, -9.81]), "gravity"),
        (p("payload.mass", -1.0), "payload.mass"),
        (p("payload.mass", math.inf), "payload.mass"),
        (p("payload.inertia", [1.0, 0.0, 0.0, 0.1, 0.0, 0.1]), "payload.inertia"),
        (p("payload.inertia", [math.nan] * 6), "payload.inertia"),
        (p("payload.frame", "no_link"), "payload.frame"),
        (p("damping", 0.0), "damping"),
        (p("damping", math.nan), "damping"),
        (p("singular_condition", 1.0), "singular_condition"),
        (p("outputs.inertia_markers.rate", 0.0), "outputs.inertia_markers.rate"),
        (p("outputs.inertia_markers.rate", -math.inf), "outputs.inertia_markers.rate"),
        (p("markers.scale", math.nan), "markers.scale"),
        (p("markers.alpha", 1.5), "markers.alpha"),
        (p("tip_link", "☃"), "tip_link"),
        (p("root_link", "nowhere"), "root_link"),
        (p("command_joints", ["joint1", "joint1"]), "command_joints"),
        (p("command_joints", ["", "joint2"]), "command_joints"),
        (p("friction.joints", ["elbow"]), "friction.joints"),
        (p("max_state_age", -1.0), "max_state_age"),
        (p("urdf_file", "/no/such/file.urdf"), "urdf_file"),
        (p("robot_description", "<robot name='x'><link"), "robot_description"),
        (p("joint_states_qos.depth", 3), "read-only"),
        (p("gravity", "down"), "type"),
        (p("damping", 1), "type"),
    ])


def good_parameters(rng):
    def p(name, value):
        return Parameter(name, value=value).to_parameter_msg()
    return rng.choice([
        p("gravity", [rng.uniform(-10, 10) for _ in range(3)]),
        p("damping", rng.choice([1e-6, 1e-3, 0.1])),
        p("singular_condition", rng.choice([10.0, 1e6, 1e12])),
        p("outputs.inertia_markers.enabled", rng.random() < 0.5),
        p("markers.show_mass_matrix", rng.random() < 0.5),
        p("outputs.inertia_markers.rate", rng.choice([1.0, 50.0, 1000.0])),
        p("markers.scale", rng.choice([1e-3, 0.1, 10.0])),
        p("markers.alpha", rng.random()),
        p("tip_link", rng.choice(["", "link1", "link2", "tool"])),
        p("command_joints", rng.choice([["joint2"], ["joint2", "joint1"]])),
        p("payload.mass", rng.uniform(0, 5)),
    ])


def check_configuration(watch, r2, config):
    """The outputs of a state sent after a change was acknowledged (the node swaps the new
    configuration in before it answers, and handles messages one at a time) equal the
    core's under the configuration applied so far: gravity, tip, damping, singular
    threshold (payload.mass alone changes nothing: payload.frame stays ''); the
    JointState outputs and ~/dynamics of that state."""
    q, qd = np.array([0.4, -0.7]), np.array([0.2, 0.9])
    stamp, _ = watch.roundtrip(["joint2", "joint1"], q[::-1], qd[::-1])
    model = r2.with_gravity(config["gravity"])
    tip = config["tip_link"] or r2.default_tip
    for topic in ("gravity_torques", "coriolis_torques", "dynamics"):
        compare(topic, watch.wait(topic, stamp), model, tip, q, qd,
                damping=config["damping"], singular=config["singular_condition"])


@pytest.mark.timeout(90)
def test_parameter_flips_while_streaming(node_process, ros_node):
    client = ros_node
    rng = random.Random(SEED + 3)
    r2 = MODELS["planar_2r"]
    proc = start_node(node_process, "fuzz_param", f"urdf_file:={robots.path('planar_2r')}",
                      "outputs.inertia_markers.rate:=1000.0")
    watch = Watch(client, "fuzz_param", proc)
    watch.roundtrip(["joint1", "joint2"], [0.1, 0.2], [0.3, 0.4])
    set_client = client.create_client(SetParameters, "/fuzz_param/dynamics_node/set_parameters")
    stop = threading.Event()

    def stream():
        while not stop.is_set():
            watch.send(["joint2", "joint1"], [rng.uniform(-2, 2), rng.uniform(-2, 2)],
                       [rng.uniform(-2, 2), rng.uniform(-2, 2)])
            time.sleep(0.003)

    def set_parameters(*params):
        done = threading.Event()
        future = set_client.call_async(SetParameters.Request(parameters=list(params)))
        future.add_done_callback(lambda _f: done.set())
        assert done.wait(10.0), "set_parameters did not answer"
        ros_utils.assert_running(proc)
        return future.result().results

    streamer = threading.Thread(target=stream, daemon=True)
    streamer.start()
    config = {"gravity": [0.0, 0.0, -9.81], "damping": DAMPING,
              "singular_condition": SINGULAR, "tip_link": "", "command_joints": []}
    try:
        assert set_client.wait_for_service(timeout_sec=10.0)
        refused = accepted = 0
        for _ in range(60):
            if rng.random() < 0.5:
                param, word = bad_parameters(rng)
                result, = set_parameters(param)
                assert not result.successful, f"{param.name} accepted: {param.value}"
                assert word in result.reason or word in ("type", "read-only"), result.reason
                refused += 1
            else:
                param = good_parameters(rng)
                result, = set_parameters(param)
                assert result.successful, f"{param.name}: {result.reason}"
                accepted += 1
                config[param.name] = Parameter.from_parameter_msg(param).value
                check_configuration(watch, r2, config)
            time.sleep(rng.uniform(0.0, 0.02))
        # a known final state, set in one call, then checked against the core
        final = [Parameter(n, value=v).to_parameter_msg() for n, v in (
            ("gravity", [0.0, 0.0, -9.81]), ("payload.frame", "tool"), ("payload.mass", 0.5),
            ("payload.com", [0.0, 0.0, 0.0]), ("payload.inertia", [0.0] * 6),
            ("tip_link", "link2"), ("damping", DAMPING), ("singular_condition", SINGULAR),
            ("command_joints", ["joint2", "joint1"]))]
        assert all(r.successful for r in set_parameters(*final))
        stop.set()
        streamer.join(timeout=5.0)
        time.sleep(0.3)            # outputs of messages handled before the final set
        with watch.lock:
            for topic in watch.by_stamp.values():
                topic.clear()
            watch.commands.clear()
        stamp, _ = watch.roundtrip(["joint1", "joint2"], [0.4, -0.7], [0.2, 0.9])
        watch.wait("dynamics", stamp)
        ref = r2.with_payload("tool", 0.5)
        watch.check_outputs(lambda names: (ref, "link2"))
        # ~/gravity_command is published after ~/dynamics and carries no stamp: wait for
        # it (the list was cleared after the stream stopped: only this state's command)
        ros_utils.wait_for(lambda: len(watch.commands) > 0, timeout=10.0)
        np.testing.assert_allclose(watch.commands[-1].data,
                                   ref.gravity_torques([0.4, -0.7])[::-1], **TOL)
        assert refused > 15 and accepted > 15
        assert_clean_log(proc)
    finally:
        stop.set()
        streamer.join(timeout=5.0)
        client.destroy_client(set_client)
        watch.close()
