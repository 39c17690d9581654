"""dynamics_node's contact outputs over real rclpy + DDS: the observer on joint_states effort.

One dynamics node (embedded Panda, ``urdf_file``) in its own process; this process
publishes joint states with chosen stamps and records ``~/external_torques``,
``~/external_wrench``, ``~/contact`` and ``~/gravity_torques`` by stamp (the node copies
the input stamp to every output).

The reference is a closed form: the arm at rest at q with tau_m = g(q) - J(q)^T F (an
external wrench F at the tip balanced by the motors; g and J from PINOCCHIO, not our
core) makes the observer's residual exactly r(t) = (1 - exp(-K_O (t - t_0))) J^T F at
every sample, whatever the steps between samples (the exponentials compose): so a
skipped sample changes nothing, a bridged gap holds r, and any spike would show.
"""
from __future__ import annotations

import contextlib
import math
import os
import sys
import threading
import time

import numpy as np
import pinocchio as pin
import pytest
import ros_utils
from geometry_msgs.msg import WrenchStamped
from rcl_interfaces.srv import SetParameters
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger
from visualization_msgs.msg import Marker, MarkerArray

from manip_dynamics import robots
from manip_dynamics.rules.dynamics_parameters import SPECS
from manip_dynamics_interfaces.msg import Contact
from node_test_helpers import MODULE, param_msg, stamp_ns

PANDA = robots.path("panda")
JOINTS = [f"panda_joint{i}" for i in range(1, 8)]
Q = np.array([0.1, -0.5, 0.2, -2.0, 0.3, 1.7, 0.6])
F = np.array([10.0, -5.0, 8.0, 0.5, 1.0, 2.0])        # at panda_link8's origin, root axes
K_O = 50.0
PERIOD = 0.01                                          # s between stamps
STREAMED = 400                                         # states of the rate test


def pinocchio_terms(q):
    """g(q), the (6, 7) Jacobian of panda_link8's origin in root axes (LOCAL_WORLD_
    ALIGNED: [v; w]) and the origins of panda_link8 and panda_link7, from Pinocchio."""
    model = pin.buildModelFromUrdf(PANDA)
    data = model.createData()
    g = pin.computeGeneralizedGravity(model, data, q)
    J = pin.computeFrameJacobian(model, data, q, model.getFrameId("panda_link8"),
                                 pin.LOCAL_WORLD_ALIGNED)
    pin.framesForwardKinematics(model, data, q)
    origins = {f: np.array(data.oMf[model.getFrameId(f)].translation)
               for f in ("panda_link7", "panda_link8")}
    return np.array(g), np.array(J), origins


G, J, ORIGINS = pinocchio_terms(Q)
TAU_EXT = J.T @ F


class Probe:
    """Publishes joint states with stamps on a private clock; records outputs by stamp."""

    TOPICS = {"external_torques": JointState, "external_wrench": WrenchStamped,
              "contact": Contact, "gravity_torques": JointState}

    def __init__(self, node, proc):
        self.node, self.proc, self.lock = node, proc, threading.Lock()
        self.got = {topic: {} for topic in self.TOPICS}
        for topic, msg_type in self.TOPICS.items():
            node.create_subscription(msg_type, f"dynamics_node/{topic}",
                                     self._recorder(topic), 1000)
        self.markers = {}                       # stamp ns -> MarkerArray (no header of its own)
        node.create_subscription(MarkerArray, "dynamics_node/contact_markers",
                                 self._on_markers, 100)
        self.pub = node.create_publisher(JointState, "joint_states", 50)
        self.burst_pub = node.create_publisher(JointState, "joint_states", 1000)
        self.t_ns = node.get_clock().now().nanoseconds - 3600 * 10 ** 9   # an hour ago

    def _on_markers(self, msg):
        with self.lock:
            self.markers[stamp_ns(msg.markers[0].header)] = msg

    def _recorder(self, topic):
        def record(msg):
            with self.lock:
                self.got[topic][stamp_ns(msg.header)] = msg
        return record

    def state(self, effort, dt=PERIOD, names=JOINTS, velocity=True, qd=None):
        """Publish one state at Q (at rest, or with velocities ``qd``), stamp advanced by
        dt (0: the same stamp)."""
        self.t_ns += int(round(dt * 1e9))
        msg = JointState(name=list(names), position=Q.tolist())
        if velocity:
            msg.velocity = [0.0] * 7 if qd is None else [float(x) for x in qd]
        msg.effort = [float(x) for x in effort]
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(self.t_ns, 10 ** 9)
        # one message at a time: publish until the node answered it (gravity_torques with
        # its stamp), so a loaded machine dropping a best-effort message cannot lose a
        # sample; a repeat of a message the node did see is a stale stamp, skipped
        for _ in range(10):
            self.pub.publish(msg)
            try:
                ros_utils.wait_for(lambda: self.has("gravity_torques", self.t_ns),
                                   timeout=2.0, interval=0.002)
                break
            except TimeoutError:
                ros_utils.assert_running(self.proc)
        return self.t_ns

    def stream(self, effort, n, spacing):
        """Publish n states at Q at rest, stamps PERIOD apart, ``spacing`` s apart in
        time, without waiting for answers (the node may drop some: see ``answered``);
        -> their stamps (ns)."""
        stamps = []
        msg = JointState(name=list(JOINTS), position=Q.tolist(), velocity=[0.0] * 7,
                         effort=[float(x) for x in effort])
        for _ in range(n):
            self.t_ns += int(round(PERIOD * 1e9))
            msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(self.t_ns, 10 ** 9)
            self.burst_pub.publish(msg)
            stamps.append(self.t_ns)
            time.sleep(spacing)
        return stamps

    def answered(self, stamps):
        """The stamps the node computed (~/gravity_torques came for them)."""
        with self.lock:
            return [s for s in stamps if s in self.got["gravity_torques"]]

    def wait(self, topic, stamp, timeout=20.0):
        def arrived():
            with self.lock:
                return self.got[topic].get(stamp)
        ros_utils.assert_running(self.proc)
        return ros_utils.wait_for(arrived, timeout=timeout,
                                  message=f"no {topic} for stamp {stamp}")

    def has(self, topic, stamp):
        with self.lock:
            return stamp in self.got[topic]

    def call(self, service):
        return ros_utils.call_service(self.node, Trigger, f"dynamics_node/{service}",
                                      Trigger.Request())

    def set(self, *params):
        request = SetParameters.Request(parameters=[param_msg(n, v) for n, v in params])
        return ros_utils.call_service(self.node, SetParameters, "dynamics_node/set_parameters",
                                      request).results


def first_order(t):
    return -math.expm1(-K_O * t) * TAU_EXT


@pytest.fixture(scope="module")
def probe(module_ros_node):
    # its own temporary log directory (not pytest's tmp_path: other pytest sessions of the
    # same user prune old basetemp directories while this module runs)
    # every state processed, in order (latest wins off, a reliable and deep queue): the tests
    # publish bursts and check the observer on every sample, as a replayed recording would
    proc = ros_utils.start_node_process([
        MODULE, "--ros-args", "-p", f"urdf_file:={PANDA}",
        "-p", "joint_states_latest_wins:=false",
        "-p", "joint_states_qos.reliability:=reliable", "-p", "joint_states_qos.depth:=100"])
    try:
        p = Probe(module_ros_node, proc)

        def answered():             # ready: a state without effort is answered
            ros_utils.assert_running(proc)
            p.state([])
            with p.lock:
                return len(p.got["gravity_torques"]) > 0
        ros_utils.wait_for(answered, timeout=90.0, interval=0.2)
        yield p
    finally:
        ros_utils.stop_process(proc)
        print(ros_utils.read_log(proc, tail=200))


def restart(p, qd=None):
    """Reset the observer and start it at a fresh sample; -> the start stamp (ns)."""
    assert p.call("reset_observer").success
    p.state(G - TAU_EXT, dt=1.0, qd=qd)    # 1 s later: a gap anyway
    return p.t_ns


@contextlib.contextmanager
def observer_parameters(p, *params):
    """Set (name, value) pairs for the duration of a ``with``; the table's defaults after."""
    for (name, _), result in zip(params, p.set(*params)):
        assert result.successful, f"{name}: {result.reason}"
    try:
        yield
    finally:
        for (name, _), result in zip(params, p.set(*((n, SPECS[n].default)
                                                      for n, _ in params))):
            assert result.successful, f"{name} back to its default: {result.reason}"


def test_without_effort_silent_with_one_info_line(probe):
    stamps = [probe.state([]) for _ in range(5)]
    probe.wait("gravity_torques", stamps[-1])
    time.sleep(0.3)
    assert not any(probe.has(t, s) for t in ("external_torques", "contact", "external_wrench")
                   for s in stamps)
    log = ros_utils.read_log(probe.proc)
    assert log.count("joint_states carry no effort") == 1, log[-2000:]


def test_constant_tip_wrench_closed_form_detection_and_isolation(probe):
    """r(t) = (1 - exp(-K_O t)) J^T F to 1e-9 relative (Pinocchio's g and J against our
    core's, exact discretisation); the wrench -> F (1e-6) once settled; in contact from the
    first sample with some |r_i| > 2 N*m (the default enter threshold), isolated link 7."""
    t0 = restart(probe)
    stamps = [probe.state(G - TAU_EXT) for _ in range(50)]
    scale = np.abs(TAU_EXT).max()
    first = None
    for s in stamps:
        r = np.array(probe.wait("external_torques", s).effort)
        np.testing.assert_allclose(r, first_order((s - t0) * 1e-9), rtol=0, atol=1e-9 * scale)
        c = probe.wait("contact", s)
        crossed = np.any(np.abs(first_order((s - t0) * 1e-9)) > 2.0)
        first = first or (s if crossed else None)
        assert c.in_contact == (first is not None)
    assert abs(TAU_EXT[6]) > 1.0                     # joint 7 carries it: link 7 isolated
    assert c.isolated_link == "panda_link7" and c.isolated_joint == "panda_joint7"
    # joint 7 moves panda_link7 and, through the fixed panda_joint8, panda_link8 (the URDF)
    assert list(c.candidate_links) == ["panda_link7", "panda_link8"]
    assert list(probe.wait("contact", stamps[0]).candidate_links) == []     # free at first
    assert c.detection_time == pytest.approx(first * 1e-9, abs=1e-6)
    assert (first - t0) * 1e-9 <= 3.0 / K_O
    w = probe.wait("external_wrench", stamps[-1])
    assert w.header.frame_id == "panda_link0"
    est = [w.wrench.force.x, w.wrench.force.y, w.wrench.force.z,
           w.wrench.torque.x, w.wrench.torque.y, w.wrench.torque.z]
    np.testing.assert_allclose(est, F, rtol=0, atol=1e-6 * np.abs(F).max())
    # ~/contact_markers at the detecting sample (sent at once on entering contact): the
    # arrow from the tip's origin along observer.force_scale (0.01 m/N) times the
    # estimated force, the isolated link's segment from panda_link7's origin (Pinocchio)
    ros_utils.wait_for(lambda: probe.markers.get(first), timeout=10.0)
    arrow, link, _ = probe.markers[first].markers
    w = probe.wait("external_wrench", first).wrench.force
    start, end = (np.array([p.x, p.y, p.z]) for p in arrow.points)
    assert arrow.type == Marker.ARROW and link.type == Marker.LINE_LIST
    np.testing.assert_allclose(start, ORIGINS["panda_link8"], atol=1e-9)
    np.testing.assert_allclose(end - start, 0.01 * np.array([w.x, w.y, w.z]), atol=1e-9)
    assert link.action == Marker.ADD and len(link.points) == 2
    np.testing.assert_allclose([link.points[0].x, link.points[0].y, link.points[0].z],
                               ORIGINS["panda_link7"], atol=1e-9)


def test_bad_effort_is_skipped_never_integrated_and_gaps_never_spike(probe):
    """A duplicate stamp, NaN effort, 6 values for 7 names, a state without velocities:
    the node answers each (gravity_torques) but the observer skips it (no contact output)
    and the next good sample is still on the closed form. A 0.2 s gap (> observer.max_gap)
    is bridged: r held at the gap, then the exact step from there."""
    t0 = restart(probe)
    for _ in range(5):
        probe.state(G - TAU_EXT)
    nan = (G - TAU_EXT).copy()
    nan[3] = math.nan
    bad = [probe.state(G - TAU_EXT, dt=0.0),         # the stamp of the last good sample
           probe.state(nan), probe.state((G - TAU_EXT)[:6]),
           probe.state(G - TAU_EXT, velocity=False)]
    good = probe.state(G - TAU_EXT)
    r = np.array(probe.wait("external_torques", good).effort)
    np.testing.assert_allclose(r, first_order((good - t0) * 1e-9), rtol=0,
                               atol=1e-9 * np.abs(TAU_EXT).max())
    for s in bad:
        assert probe.has("gravity_torques", s)                   # the node accepted it
    # (bad[0] repeats the stamp of a good sample, whose outputs carry that stamp)
    assert [probe.has("external_torques", s) for s in bad[1:]] == [False] * 3
    log = ros_utils.read_log(probe.proc)
    assert "observer: sample not integrated" in log
    held = probe.wait("external_torques", probe.state(G - TAU_EXT, dt=0.2)).effort
    np.testing.assert_array_equal(held, r)                         # bridged: no step at all
    after = np.array(probe.wait("external_torques", probe.state(G - TAU_EXT)).effort)
    a = math.exp(-K_O * PERIOD)
    np.testing.assert_allclose(after, a * r + (1 - a) * TAU_EXT, rtol=0, atol=1e-9 * 40)
    assert "gap bridged" in ros_utils.read_log(probe.proc)


def test_zero_and_reset_services(probe):
    restart(probe)
    for _ in range(40):
        s = probe.state(G - TAU_EXT)
    probe.wait("contact", s)
    assert probe.call("zero_observer").success
    r = np.array(probe.wait("external_torques", probe.state(G - TAU_EXT)).effort)
    assert np.abs(r).max() < 1e-3 * np.abs(TAU_EXT).max()         # r ~ tau_ext = the bias
    assert not probe.wait("contact", s + int(PERIOD * 1e9)).in_contact
    assert probe.call("reset_observer").success
    r = np.array(probe.wait("external_torques", probe.state(G - TAU_EXT)).effort)
    np.testing.assert_array_equal(r, np.zeros(7))                 # start over: r = 0


def test_parameters_effort_meaning_and_enabled(probe):
    """Refused values name the parameter; effort minus_gravity with effort = -J^T F gives
    the same closed form; observer.enabled false silences the outputs."""
    results = probe.set(("observer.gains", [-1.0]))
    assert not results[0].successful
    results = probe.set(("observer.gains", [50.0, 50.0, 50.0]))
    assert not results[0].successful and "observer.gains" in results[0].reason
    assert probe.set(("observer.effort", "minus_gravity"))[0].successful
    t0 = probe.state(-TAU_EXT, dt=1.0)
    probe.wait("external_torques", t0)
    for _ in range(10):
        s = probe.state(-TAU_EXT)
    r = np.array(probe.wait("external_torques", s).effort)
    np.testing.assert_allclose(r, first_order((s - t0) * 1e-9), rtol=0,
                               atol=1e-9 * np.abs(TAU_EXT).max())
    assert probe.set(("observer.effort", "total"), ("observer.enabled", False))[0].successful
    s = probe.state(G - TAU_EXT)
    probe.wait("gravity_torques", s)
    time.sleep(0.3)
    assert not probe.has("external_torques", s)
    assert probe.set(("observer.enabled", True))[0].successful


# --------------------------------------------------------------------------- outputs.*
# The contact outputs' switches (outputs.<name>.enabled / .rate): they gate publishing
# only; the observer runs on every state (~/contact, at every state, shows it).

def test_output_rates_limit_their_outputs_while_contact_gets_every_state(probe):
    """outputs.external_torques.rate 50 Hz and outputs.external_wrench.rate 10 Hz while
    states stream at up to 500 Hz: each of the two gets at most 1 + rate x span
    (RateGate's slots are 1 / rate apart on the node's monotonic clock; span: from the
    first state sent to the last ~/contact received, so it holds every state the node
    handled) and at least a quarter of rate x the sending time (loose: a loaded machine
    may stall the node); ~/contact gets every state the node computed, each with its own
    residual norm (the observer ran on it)."""
    rates = {"external_torques": 50.0, "external_wrench": 10.0}
    with observer_parameters(probe, *((f"outputs.{name}.rate", rate)
                                      for name, rate in rates.items())):
        t0 = restart(probe)
        start = time.monotonic()
        stamps = probe.stream(G - TAU_EXT, STREAMED, 0.002)
        sending = time.monotonic() - start
        probe.wait("contact", stamps[-1])
        span = time.monotonic() - start
        time.sleep(0.2)                 # (the other topics' last messages)
    computed = probe.answered(stamps)
    # the states came fast enough for the limits to matter: a gate passing every state
    # would exceed the bounds below by far
    assert len(computed) > 2 * (1 + max(rates.values()) * span), (len(computed), span)
    for name, rate in rates.items():
        published = sum(probe.has(name, s) for s in stamps)
        assert max(2.0, rate * sending / 4) <= published <= 1 + math.floor(rate * span), (
            name, published, sending, span)
    for s in computed:
        c = probe.wait("contact", s, timeout=2.0)
        assert c.residual_norm == pytest.approx(
            np.linalg.norm(first_order((s - t0) * 1e-9)), rel=1e-9)


def test_outputs_enabled_false_silences_that_output_only(probe):
    """outputs.external_wrench.enabled false: no ~/external_wrench, ~/external_torques
    and ~/contact for every state; then ~/external_torques and ~/contact off, the
    wrench back: only the wrench."""
    def run(on, off):
        stamps = [probe.state(G - TAU_EXT) for _ in range(5)]
        for topic in on:
            probe.wait(topic, stamps[-1])
        time.sleep(0.3)
        assert all(probe.has(topic, s) for topic in on for s in stamps), on
        assert not any(probe.has(topic, s) for topic in off for s in stamps), off

    restart(probe)
    with observer_parameters(probe, ("outputs.external_wrench.enabled", False)):
        run(("external_torques", "contact"), ("external_wrench",))
    with observer_parameters(probe, ("outputs.external_torques.enabled", False),
                             ("outputs.contact.enabled", False)):
        run(("external_wrench",), ("external_torques", "contact"))
    run(("external_torques", "external_wrench", "contact"), ())


def test_outputs_change_while_streaming_keeps_the_observer(probe):
    """outputs.contact.rate set to 2 Hz one sample after the observer started, before
    the contact: ~/external_torques stays on the closed form from that first sample (the
    observer did not start over; no 'observer started over' logged); ~/contact gets the
    first state after the change (a new gate) and at most 1 + 2 x span of the 10; 0.6 s
    after those, the next state's ~/contact is in contact since the first sample
    whose closed-form |r_i| exceeds 2 N*m (detected on a state that may not have been
    published: detection runs on every state); back to 0 Hz: every state again."""
    t0 = restart(probe)
    mark = len(ros_utils.read_log(probe.proc))
    with observer_parameters(probe, ("outputs.contact.rate", 2.0)):
        start = time.monotonic()
        stamps = [probe.state(G - TAU_EXT) for _ in range(10)]
        probe.wait("external_torques", stamps[-1])
        span = time.monotonic() - start
        time.sleep(0.6)                 # > 1 / 2 Hz after the last slot taken: due
        later = probe.state(G - TAU_EXT)
        contact = probe.wait("contact", later)
    published = [s for s in stamps if probe.has("contact", s)]
    assert published[:1] == stamps[:1] and len(published) <= 1 + math.floor(2.0 * span), (
        len(published), span)
    first = next(s for s in stamps if np.abs(first_order((s - t0) * 1e-9)).max() > 2.0)
    assert not probe.wait("contact", stamps[0]).in_contact and first != stamps[0]
    assert contact.in_contact and contact.detection_time == pytest.approx(first * 1e-9,
                                                                          abs=1e-6)
    for s in stamps + [later]:
        r = np.array(probe.wait("external_torques", s).effort)
        np.testing.assert_allclose(r, first_order((s - t0) * 1e-9), rtol=0,
                                   atol=1e-9 * np.abs(TAU_EXT).max())
    stamps = [probe.state(G - TAU_EXT) for _ in range(3)]
    for s in stamps:
        probe.wait("contact", s, timeout=5.0)
    assert "observer started over" not in ros_utils.read_log(probe.proc)[mark:]


def test_bad_outputs_values_are_refused_and_the_node_keeps_publishing(probe):
    """A negative or NaN rate is refused naming the parameter and its range, a value of
    the wrong type as such (rclpy's reason: it names the types, not the parameter); the
    values stay (every state still on every contact output) and the node runs on."""
    for name, value, why in (("outputs.external_torques.rate", -1.0, "out of range"),
                             ("outputs.contact.rate", math.nan, "out of range"),
                             ("outputs.external_wrench.rate", "fast", "Wrong parameter type"),
                             ("outputs.contact.enabled", 1.0, "Wrong parameter type")):
        (result,) = probe.set((name, value))
        assert not result.successful and why in result.reason, (name, result.reason)
        assert why != "out of range" or name in result.reason, result.reason
    stamps = [probe.state(G - TAU_EXT) for _ in range(3)]
    for topic in ("external_torques", "external_wrench", "contact"):
        for s in stamps:
            probe.wait(topic, s)
    ros_utils.assert_running(probe.proc)


# --------------------------------------------------------------------------- observer.*
# One behaviour test per observer parameter (docs/node.md, "Parameters"): each sets the
# parameter away from its default and checks what it changes against a reference that
# does not come from the node's core (Pinocchio, numpy, the rule as documented).

def test_observer_hysteresis_sets_where_contact_is_left(probe):
    """Contact entered (tau_ext = J^T F, |r| up to 3.1 N*m), then tau_ext scaled to a peak
    of 1.4 N*m: above 0.5 x 2 N*m (the default hysteresis keeps the contact), below
    0.9 x 2 N*m (hysteresis 0.9 leaves it). Every sample's in_contact is the rule (enter
    when some |r_i| > 2, leave when every |r_i| <= h 2) applied to the published r."""
    low = TAU_EXT * (1.4 / np.abs(TAU_EXT).max())
    for h, stays in ((0.5, True), (0.9, False)):
        with observer_parameters(probe, ("observer.hysteresis", h)):
            restart(probe)
            for _ in range(20):
                s = probe.state(G - TAU_EXT)
            assert probe.wait("contact", s).in_contact
            stamps = [probe.state(G - low) for _ in range(30)]
            in_contact = True
            for s in stamps:
                r = np.abs(probe.wait("external_torques", s).effort)
                if in_contact and np.all(r <= h * 2.0):
                    in_contact = False
                elif not in_contact and np.any(r > 2.0):
                    in_contact = True
                assert probe.wait("contact", s).in_contact == in_contact, (h, s)
            # settled on the low torque (exp(-K_O 0.3 s) = 3e-7), and the state says h
            np.testing.assert_allclose(r, np.abs(low), rtol=0, atol=1e-5)
            assert in_contact == stays


def test_observer_friction_subtracts_the_models_coulomb_friction(probe):
    """At Q with velocities of 1e-6 rad/s (C(q, qd)^T qd ~ 1e-12 N*m, p = M qd constant)
    the residual is the closed form (1 - exp(-K_O t)) x target, target = tau_ext with
    observer.friction false and tau_ext + tau_fr(qd) = tau_ext + coulomb sign(qd) with
    true (coulomb: the URDF's <dynamics friction>, read by Pinocchio)."""
    qd = 1e-6 * np.array([1.0, -1.0, 1.0, 1.0, -1.0, 1.0, -1.0])
    coulomb = np.array(pin.buildModelFromUrdf(PANDA).friction)
    assert coulomb.min() > 0.1
    for friction, target in ((False, TAU_EXT), (True, TAU_EXT + coulomb * np.sign(qd))):
        with observer_parameters(probe, ("observer.friction", friction)):
            t0 = restart(probe, qd=qd)
            stamps = [probe.state(G - TAU_EXT, qd=qd) for _ in range(10)]
            for s in stamps:
                r = np.array(probe.wait("external_torques", s).effort)
                np.testing.assert_allclose(r, -math.expm1(-K_O * (s - t0) * 1e-9) * target,
                                           rtol=0, atol=1e-9 * np.abs(target).max())


def test_observer_gap_reset_restarts_r(probe):
    """observer.gap reset: r = 0 exactly at the sample after a 0.2 s gap, and the closed
    form starts over there (bridge, the default, holds r: the test above)."""
    with observer_parameters(probe, ("observer.gap", "reset")):
        t0 = restart(probe)
        for _ in range(5):
            s = probe.state(G - TAU_EXT)
        r = np.array(probe.wait("external_torques", s).effort)
        np.testing.assert_allclose(r, first_order((s - t0) * 1e-9), rtol=0, atol=1e-8)
        assert np.abs(r).max() > 1.0
        gap = probe.state(G - TAU_EXT, dt=0.2)
        np.testing.assert_array_equal(probe.wait("external_torques", gap).effort, np.zeros(7))
        after = probe.state(G - TAU_EXT)
        np.testing.assert_allclose(probe.wait("external_torques", after).effort,
                                   first_order(PERIOD), rtol=0, atol=1e-8)
    assert "observer: gap reset" in ros_utils.read_log(probe.proc)


def damped_wrench(r, eps):
    """F = V diag(phi(sigma)) U^T r with J^T = U diag(sigma) V^T (Pinocchio's J at Q),
    phi = 1/sigma for sigma >= eps, sigma / eps^2 below (docs/math.md section 8)."""
    U, sigma, Vt = np.linalg.svd(J.T, full_matrices=False)
    phi = np.where(sigma >= eps, 1.0 / sigma, sigma / eps ** 2)
    return Vt.T @ (phi * (U.T @ r))


def test_observer_wrench_threshold_damps_the_small_singular_values(probe):
    """J^T at Q has singular values 1.83 ... 0.196: observer.wrench_threshold 0.5 damps
    the three below 0.5, and ~/external_wrench is the damped estimate of the published r
    (computed here with numpy's SVD of Pinocchio's J), far from the undamped F."""
    with observer_parameters(probe, ("observer.wrench_threshold", 0.5)):
        restart(probe)
        for _ in range(30):
            s = probe.state(G - TAU_EXT)
        r = np.array(probe.wait("external_torques", s).effort)
        w = probe.wait("external_wrench", s).wrench
    est = np.array([w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z])
    want = damped_wrench(r, 0.5)
    np.testing.assert_allclose(est, want, rtol=0, atol=1e-9 * np.abs(want).max())
    assert np.linalg.norm(want - F) > 0.2 * np.linalg.norm(F)
    np.testing.assert_allclose(damped_wrench(r, 0.01), F, rtol=0, atol=1e-5)


def point_contact(s, f_link6):
    """A force at a point 40 % of the way from panda_link6's origin to panda_link7's:
    -> (point, force, tau_ext = J_v(point)^T force), root axes, from Pinocchio (a frame
    added at the point). f_link6: the force in panda_link6's axes."""
    model = pin.buildModelFromUrdf(PANDA)
    link6 = model.getFrameId("panda_link6")
    offset = pin.SE3(np.eye(3), np.array([s * 0.088, 0.0, 0.0]))   # joint7's origin: x 0.088
    frame = model.addFrame(pin.Frame("contact", model.frames[link6].parentJoint, link6,
                                     model.frames[link6].placement * offset,
                                     pin.FrameType.OP_FRAME))
    data = model.createData()
    pin.framesForwardKinematics(model, data, Q)
    Jc = pin.computeFrameJacobian(model, data, Q, frame, pin.LOCAL_WORLD_ALIGNED)
    force = data.oMf[link6].rotation @ np.asarray(f_link6, dtype=float)
    return np.array(data.oMf[frame].translation), force, Jc[:3].T @ force


def test_observer_contact_point_finds_a_known_force(probe):
    """A 63 N force on panda_link6 (joint 6 carries 2.1 N*m, joint 7 nothing): the node
    isolates panda_link6 and, with observer.contact_point, puts the point on its segment
    at the true place (to 2e-5 m: the search's grid on the 0.088 m segment) and the force
    to 1e-3; without it (default) no point."""
    point, force, tau_c = point_contact(0.4, [10.0, 60.0, 15.0])
    restart(probe)
    for _ in range(30):
        s = probe.state(G - tau_c)
    c = probe.wait("contact", s)
    assert c.in_contact and c.isolated_link == "panda_link6" and not c.contact_point_valid
    assert list(c.candidate_links) == ["panda_link6", "panda_link7", "panda_link8"]
    with observer_parameters(probe, ("observer.contact_point", True)):
        restart(probe)
        for _ in range(30):
            s = probe.state(G - tau_c)
        c = probe.wait("contact", s)
    assert c.in_contact and c.isolated_link == "panda_link6" and c.contact_point_valid
    p = c.contact_point
    np.testing.assert_allclose([p.x, p.y, p.z], point, rtol=0, atol=2e-5)
    f = c.contact_force
    np.testing.assert_allclose([f.x, f.y, f.z], force, rtol=1e-3, atol=0)


def test_observer_markers_rate_bounds_contact_markers(probe):
    """observer.markers_rate 0.01 Hz: ~/contact_markers only on entering and on leaving
    the contact (drawn at once), none for the samples between (the test takes far less
    than 100 s); 200 Hz with samples 30 ms apart: one per sample."""
    def run(spacing):
        start = restart(probe)
        stamps = []
        for _ in range(12):
            stamps.append(probe.state(G - TAU_EXT))
            time.sleep(spacing)
        entered = next(s for s in stamps if probe.wait("contact", s).in_contact)
        left = probe.state(G)                   # tau_ext = 0
        while probe.wait("contact", left).in_contact:
            left = probe.state(G)
        # drawn at once on leaving; one publisher, in order: every earlier one is here too
        ros_utils.wait_for(lambda: left in probe.markers, timeout=10.0)
        with probe.lock:
            drawn = sorted(s for s in probe.markers if start < s <= left)
        return stamps, entered, left, drawn

    t0 = time.monotonic()
    with observer_parameters(probe, ("observer.markers_rate", 0.01)):
        stamps, entered, left, drawn = run(0.0)
    assert time.monotonic() - t0 < 100.0
    assert entered < stamps[-1] and drawn == [entered, left]
    with observer_parameters(probe, ("observer.markers_rate", 200.0)):
        stamps, entered, left, drawn = run(0.03)
    after = [s for s in stamps if s > entered]
    assert len(after) >= 8
    assert sum(s in drawn for s in after) >= len(after) - 1, (len(after), drawn)


def test_observer_max_gap_sets_what_a_gap_is(probe):
    """A 0.2 s step: a gap with the default observer.max_gap 0.05 s (bridged: r held, the
    first test above), integrated with 0.5 s: r on the closed form across it (exact for
    any step under a constant tau_ext), no gap logged."""
    with observer_parameters(probe, ("observer.max_gap", 0.5)):
        t0 = restart(probe)
        for _ in range(3):
            probe.state(G - TAU_EXT)
        mark = len(ros_utils.read_log(probe.proc))
        long_step = probe.state(G - TAU_EXT, dt=0.2)
        r = np.array(probe.wait("external_torques", long_step).effort)
        np.testing.assert_allclose(r, first_order((long_step - t0) * 1e-9), rtol=0,
                                   atol=1e-8)
        assert np.abs(r - first_order(3 * PERIOD)).max() > 0.1       # not held
    assert "gap" not in ros_utils.read_log(probe.proc)[mark:]


def test_observer_force_scale_sets_the_arrow_length(probe):
    """observer.force_scale 0.05 m/N: the ~/contact_markers arrow runs from the tip's
    origin (Pinocchio) along 0.05 x the published force (entering contact draws at once)."""
    with observer_parameters(probe, ("observer.force_scale", 0.05)):
        restart(probe)
        stamps = [probe.state(G - TAU_EXT) for _ in range(10)]
        entered = next(s for s in stamps if probe.wait("contact", s).in_contact)
        ros_utils.wait_for(lambda: probe.markers.get(entered), timeout=10.0)
        arrow = probe.markers[entered].markers[0]
        w = probe.wait("external_wrench", entered).wrench.force
    start, end = (np.array([p.x, p.y, p.z]) for p in arrow.points)
    np.testing.assert_allclose(start, ORIGINS["panda_link8"], atol=1e-9)
    np.testing.assert_allclose(end - start, 0.05 * np.array([w.x, w.y, w.z]), atol=1e-9)
    assert np.linalg.norm(end - start) > 0.05


# --------------------------------------------------------------------------- ~/contact
def wrench_list(w):
    """[f; m] of a geometry_msgs/Wrench as a list."""
    return [w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z]


def assert_contact_carries_the_state(probe, stamps, tip):
    """For every stamp: ~/contact's external_torques == ~/external_torques' effort and its
    joint_names == that message's name (bit for bit, same order), its external_wrench ==
    ~/external_wrench's wrench, wrench_frame == ``tip``. -> the Contact messages."""
    contacts = []
    for s in stamps:
        c = probe.wait("contact", s)
        torques = probe.wait("external_torques", s)
        wrench = probe.wait("external_wrench", s)
        assert list(c.joint_names) == list(torques.name) == JOINTS
        np.testing.assert_array_equal(np.array(c.external_torques), np.array(torques.effort))
        assert c.external_wrench == wrench.wrench
        np.testing.assert_array_equal(wrench_list(c.external_wrench),
                                      wrench_list(wrench.wrench))
        assert c.wrench_frame == tip and c.header.frame_id == wrench.header.frame_id
        contacts.append(c)
    return contacts


def test_contact_carries_the_torques_and_wrench_of_the_same_state(probe):
    """~/contact alone carries the state's external torques and tip wrench: equal, stamp by
    stamp, to ~/external_torques and ~/external_wrench, in and out of contact. Against
    the closed form too: r - bias (after ~/zero_observer, with tau_ext removed, r decays
    from r(t_z) and r - bias = r(t) - r(t_z), far from the raw r), F = (J^T)^+ (r - bias)
    at tip_link panda_link7 (Pinocchio's J of that frame, numpy's lstsq), and with a
    contact point (observer.contact_point)."""
    t0 = restart(probe)
    stamps = [t0] + [probe.state(G - TAU_EXT) for _ in range(15)]
    contacts = assert_contact_carries_the_state(probe, stamps, "panda_link8")
    assert not contacts[1].in_contact and contacts[-1].in_contact       # both kinds
    scale = np.abs(TAU_EXT).max()
    for s, c in zip(stamps, contacts):
        np.testing.assert_allclose(c.external_torques, first_order((s - t0) * 1e-9),
                                   rtol=0, atol=1e-9 * scale)
    # bias: r(t_z) of the last sample; tau_ext = 0 from then on: r decays from r(t_z)
    tz, r_z = stamps[-1], first_order((stamps[-1] - t0) * 1e-9)
    assert probe.call("zero_observer").success
    stamps = [probe.state(G) for _ in range(15)]
    contacts = assert_contact_carries_the_state(probe, stamps, "panda_link8")
    assert not contacts[0].in_contact and contacts[-1].in_contact
    # the step into tau_ext = 0 integrates its trapezoid, tau_ext / 2 (docs/node.md):
    # r_1 = a r(t_z) + (1 - a) tau_ext / 2, then r decays; the output is r - r(t_z)
    a = math.exp(-K_O * (stamps[0] - tz) * 1e-9)
    r_1 = a * r_z + (1.0 - a) * TAU_EXT / 2.0
    for s, c in zip(stamps, contacts):
        want = math.exp(-K_O * (s - stamps[0]) * 1e-9) * r_1 - r_z
        np.testing.assert_allclose(c.external_torques, want, rtol=0, atol=1e-9 * scale)
    assert np.abs(r_z).max() > 3.0        # the bias: r - bias is 3 N*m away from r
    # another tip frame (the observer keeps running): the wrench at panda_link7's origin
    model = pin.buildModelFromUrdf(PANDA)
    data = model.createData()
    J7 = pin.computeFrameJacobian(model, data, Q, model.getFrameId("panda_link7"),
                                  pin.LOCAL_WORLD_ALIGNED)
    with observer_parameters(probe, ("tip_link", "panda_link7")):
        restart(probe)
        stamps = [probe.state(G - TAU_EXT) for _ in range(10)]
        contacts = assert_contact_carries_the_state(probe, stamps, "panda_link7")
    r = np.array(contacts[-1].external_torques)
    want = np.linalg.lstsq(J7.T, r, rcond=None)[0]
    assert np.linalg.svd(J7, compute_uv=False).min() > 0.01      # undamped there
    np.testing.assert_allclose(wrench_list(contacts[-1].external_wrench), want, rtol=0,
                               atol=1e-9 * np.abs(want).max())
    # with a contact point: the point and force fields before the new ones
    point, force, tau_c = point_contact(0.4, [10.0, 60.0, 15.0])
    with observer_parameters(probe, ("observer.contact_point", True)):
        restart(probe)
        stamps = [probe.state(G - tau_c) for _ in range(20)]
        contacts = assert_contact_carries_the_state(probe, stamps, "panda_link8")
    assert contacts[-1].contact_point_valid
    p = contacts[-1].contact_point
    np.testing.assert_allclose([p.x, p.y, p.z], point, rtol=0, atol=2e-5)


def test_contact_fallback_messages_equal_the_layouts(ros_node):
    """Should a layout not read back (ContactWires.raw false), the node publishes the
    messages built field by field (contact_message, torques_message, wrench_message). Two
    ContactOutputs (each on its own rclpy node, in this process), one forced onto that
    fallback, fed the same Panda states through their state listener (in and out of
    contact, with contact points, tip panda_link7): over DDS, the fallback's ~/contact
    equals the layout's in every field, and in both the torques and wrench equal that
    output's ~/external_torques and ~/external_wrench of the same stamp. Then the tip
    frame changes on the same model object (panda_link8): wrench_frame follows it."""
    from manip_dynamics import RobotModel
    from manip_dynamics.nodes.contact_outputs import ContactOutputs, ContactWires
    from manip_dynamics.rules.contact_monitor import ObserverOptions
    from manip_dynamics.rules.snapshot import Snapshot

    model = RobotModel.from_urdf_file(PANDA)
    snapshots = [Snapshot(model=model, tip_frame=tip, command_joints=tuple(JOINTS),
                          observer=ObserverOptions(contact_point=True))
                 for tip in ("panda_link7", "panda_link8")]
    hosts = {name: ros_utils.RosNodeHandle(f"contact_{name}") for name in ("raw", "fallback")}
    topics = ("external_torques", "external_wrench", "contact")
    got = {(name, topic): {} for name in hosts for topic in topics}
    lock = threading.Lock()

    def recorder(key):
        def record(msg):
            with lock:
                got[key][stamp_ns(msg.header)] = msg
        return record
    try:
        outputs = {}
        for name, handle in hosts.items():
            handle.node.state_listeners = []        # the hook ContactOutputs plugs into
            outputs[name] = ContactOutputs(handle.node)
            for topic in topics:
                ros_node.create_subscription(Probe.TOPICS[topic], f"contact_{name}/{topic}",
                                             recorder((name, topic)), 100)
        ros_utils.wait_for(lambda: all(
            pub.get_subscription_count() > 0 for o in outputs.values()
            for pub in (o.torques_pub, o.wrench_pub, o.contact_pub)), timeout=20.0)
        wires = outputs["fallback"]._wires = ContactWires(model, "panda_link7")
        wires.raw = False
        _, _, tau_c = point_contact(0.4, [10.0, 60.0, 15.0])
        t_ns, stamps, tips = 1_700_000_000 * 10 ** 9, [], {}
        for k in range(30):
            if k == 24:         # the fallback's forced wires served every state until now
                assert outputs["fallback"]._wires is wires and not wires.raw
            snapshot = snapshots[k >= 24]
            t_ns += int(PERIOD * 1e9)
            msg = JointState(name=JOINTS, position=Q.tolist(), velocity=[0.0] * 7,
                             effort=(G - (TAU_EXT if k < 12 else tau_c)).tolist())
            msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(t_ns, 10 ** 9)
            for o in outputs.values():
                o.on_state(snapshot, msg, Q, np.zeros(7), None)
            stamps.append(t_ns)
            tips[t_ns] = snapshot.tip_frame

            def arrived():          # one state at a time: the publishers keep the last 10
                with lock:
                    return all(t_ns in messages for messages in got.values())
            ros_utils.wait_for(arrived, timeout=20.0)
    finally:
        for handle in hosts.values():
            handle.shutdown()
    in_contact = set()
    for s in stamps:
        raw, fallback = got["raw", "contact"][s], got["fallback", "contact"][s]
        assert fallback == raw
        in_contact.add((raw.in_contact, raw.contact_point_valid))
        for name in hosts:
            torques, wrench, c = (got[name, topic][s] for topic in topics)
            assert list(c.joint_names) == list(torques.name) == JOINTS
            np.testing.assert_array_equal(c.external_torques, torques.effort)
            assert c.external_wrench == wrench.wrench and c.wrench_frame == tips[s]
    assert in_contact == {(False, False), (True, True)}


def test_contact_markers_are_built_only_while_someone_subscribes(ros_node, monkeypatch):
    """~/contact_markers is built only while the topic has a subscriber: a DynamicsNode in
    this process (real rclpy, its callback called directly), observer.markers_rate 50 Hz,
    states 5 ms apart entering contact: no MarkerArray is built while nobody subscribes
    (markers due ~10 times, and the contact entered); with a subscriber the due markers
    are built and arrive over DDS."""
    import manip_dynamics.nodes.contact_outputs as contact_outputs
    from manip_dynamics.nodes.dynamics_node import DynamicsNode

    built = []
    real = contact_outputs.contact_markers
    monkeypatch.setattr(contact_outputs, "contact_markers",
                        lambda *a, **k: built.append(1) or real(*a, **k))
    ns = f"/markers_gate_{os.getpid()}"
    switch_interval = sys.getswitchinterval()
    node = DynamicsNode(context=ros_node.context, cli_args=[
        "--ros-args", "-r", f"__ns:={ns}", "-p", f"urdf_file:={PANDA}",
        "-p", "outputs.inertia_markers.enabled:=false", "-p", "observer.markers_rate:=50.0"])
    # the node's services thread leaves this process's interpreter switch interval alone
    # (lowered to 0.2 ms by a node built here, every later test of the ros lane that waited
    # for a node process starved: docs/node.md, nodes/service_thread.py)
    assert sys.getswitchinterval() == switch_interval
    try:
        msg = JointState(name=JOINTS, position=Q.tolist(), velocity=[0.0] * 7,
                         effort=(G - TAU_EXT).tolist())

        def states(count):
            contact = []
            for _ in range(count):
                msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(time.time_ns(),
                                                                        10 ** 9)
                node._on_joint_states(msg)
                contact.append(node.contact_outputs._monitor.live.in_contact)
                time.sleep(0.005)
            return contact

        assert any(states(40)) and built == []          # contact entered, nobody drawn
        got = []
        ros_node.create_subscription(MarkerArray, f"{ns}/dynamics_node/contact_markers",
                                     got.append, 10)
        ros_utils.wait_for(lambda: node.contact_outputs.markers_pub.get_subscription_count())
        states(40)
        assert len(built) >= 3
        ros_utils.wait_for(lambda: len(got) >= 2)
        assert {m.ns for m in got[-1].markers} == {"tip_force", "isolated_link",
                                                    "contact_point"}
    finally:
        node.destroy_node()
