"""dynamics_node's services under load (issue 35, items 20 and 21), real DDS, real processes.

One node process (the embedded 7-DOF Panda, collaborative safety on, defaults otherwise,
so latest-wins as in the field) serves the module:

* while a ~/check_trajectory_safety request of the largest accepted size is answered,
  joint states sent during the call keep getting ~/collision_safety (the services have
  their own thread; before, the node's only thread answered nothing during the call);
* a request beyond the documented size is refused with a message naming the limit, and
  the node goes on answering states and requests;
* 50 clients of ~/check_trajectory_safety and 50 of ~/get_gravity_torques that send at
  the same moment all get an answer (before: a queue of 10 dropped the rest silently).
"""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import ros_utils
from node_test_helpers import MODULE, stamp_ns
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from rclpy.qos import QoSProfile

from manip_dynamics import RobotModel, robots
from manip_dynamics_interfaces.msg import CollisionSafety
from manip_dynamics_interfaces.srv import CheckTrajectorySafety, GetGravityTorques

NODE = "dynamics_node"
TRAJECTORY = f"{NODE}/check_trajectory_safety"
GRAVITY = f"{NODE}/get_gravity_torques"
STATE_PERIOD = 0.005          # s: joint states at 200 Hz while a call is served
CLIENTS = 50                  # concurrent clients per service (the load test)
MAX_TRAJECTORY_POINTS = 10_000    # the documented limit of a trajectory request
# rmw_fastrtps delivers every response of a service to every client's response reader (each
# keeps its own by the request's id), so a client among 50 answered at once needs room for
# 50 responses: with rclpy's default depth of 10 its own may be pushed out before it is
# taken (docs/services.md)
CLIENT_QOS = QoSProfile(depth=100)
JOINTS = [f"panda_joint{i}" for i in range(1, 8)]
Q0 = [0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8]


@pytest.fixture(scope="module")
def panda(module_ros_node):
    proc = ros_utils.start_node_process([
        MODULE, "--ros-args", "-p", f"urdf_file:={robots.path('panda')}",
        "-p", "safety.enabled:=true", "-p", "outputs.inertia_markers.enabled:=false"])
    node = module_ros_node
    answered = {}                    # stamp (ns) -> monotonic time the output arrived
    lock = threading.Lock()

    def on_safety(msg):
        with lock:
            answered.setdefault(stamp_ns(msg.header), time.monotonic())
    node.create_subscription(CollisionSafety, f"{NODE}/collision_safety", on_safety, 100)
    pub = node.create_publisher(JointState, "joint_states", 10)
    try:
        yield node, proc, pub, answered, lock
    finally:
        ros_utils.stop_process(proc)
        print(ros_utils.read_log(proc, tail=60))


def _state(sec: int, nanosec: int = 0) -> JointState:
    msg = JointState(name=JOINTS, position=Q0, velocity=[0.3, -0.2, 0.1, 0.4, 0.0, 0.2, 0.5])
    msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nanosec
    return msg


def _answers_states(panda, sec: int) -> None:
    """Wait until a state stamped ``sec`` gets ~/collision_safety (the node is up and
    computing)."""
    node, proc, pub, answered, lock = panda

    def done():
        ros_utils.assert_running(proc)
        pub.publish(_state(sec))
        with lock:
            return sec * 1_000_000_000 in answered
    ros_utils.wait_for(done, timeout=60.0, interval=0.1,
                       message="no ~/collision_safety for a joint state")


def _trajectory(points: int) -> JointTrajectory:
    """``points`` waypoints 0.01 s apart, a joint moving fast enough to need retiming."""
    traj = JointTrajectory(joint_names=JOINTS)
    for k in range(points):
        q = list(Q0)
        q[0] = 1e-4 * k
        pt = JointTrajectoryPoint(positions=q, velocities=[3.0, 0, 0, 2.0, 0, 0, 0])
        pt.time_from_start.sec, pt.time_from_start.nanosec = divmod(k * 10_000_000,
                                                                    1_000_000_000)
        traj.points.append(pt)
    return traj


class StateStream:
    """Joint states at 1 / STATE_PERIOD Hz from a thread, stamps recorded with their
    publish times (monotonic), until ``stop()``."""

    def __init__(self, pub, first_sec: int):
        self.sent = []                          # (stamp ns, monotonic)
        self._pub, self._sec = pub, first_sec
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        k = 0
        while not self._stop.is_set():
            sec, nanosec = self._sec + k // 1000, (k % 1000) * 1_000_000
            self._pub.publish(_state(sec, nanosec))
            self.sent.append((sec * 1_000_000_000 + nanosec, time.monotonic()))
            k += 1
            time.sleep(STATE_PERIOD)

    def stop(self):
        self._stop.set()
        self._thread.join()


def test_states_answered_while_a_large_trajectory_is_checked(panda):
    node, proc, pub, answered, lock = panda
    _answers_states(panda, 10)
    client = node.create_client(CheckTrajectorySafety, TRAJECTORY)
    assert client.wait_for_service(timeout_sec=30.0)
    request = CheckTrajectorySafety.Request(trajectory=_trajectory(MAX_TRAJECTORY_POINTS))
    stream = StateStream(pub, first_sec=1000)
    time.sleep(0.5)                             # the stream flows before the call
    t_call = time.monotonic()
    future = client.call_async(request)
    ros_utils.wait_for(future.done, timeout=60.0, interval=0.01,
                       message="no answer to the trajectory request")
    t_answer = time.monotonic()
    stream.stop()
    response = future.result()
    assert response.success, response.message
    assert len(response.ratio) == MAX_TRAJECTORY_POINTS and response.scale > 1.0
    # retimed: times x s, velocities / s (the request's joints, in its order)
    last = response.retimed.points[-1]
    t_last = (MAX_TRAJECTORY_POINTS - 1) * 0.01
    assert last.time_from_start.sec + 1e-9 * last.time_from_start.nanosec == \
        pytest.approx(t_last * response.scale, abs=1e-9)
    assert list(last.velocities) == pytest.approx(
        [3.0 / response.scale, 0, 0, 2.0 / response.scale, 0, 0, 0], rel=1e-15)
    # the states sent during the call, and those of them answered before the call ended
    during = [stamp for stamp, t in stream.sent if t_call <= t <= t_answer - 0.05]
    with lock:
        in_time = [s for s in during if answered.get(s, np.inf) <= t_answer]
    print(f"call {t_answer - t_call:.2f} s: {len(in_time)} of {len(during)} states sent "
          f"during it answered during it")
    assert len(during) >= 20, "the call was too short to tell"
    assert len(in_time) >= 0.5 * len(during)
    ros_utils.assert_running(proc)
    node.destroy_client(client)


def test_oversize_trajectory_refused(panda):
    node, proc, pub, answered, lock = panda
    request = CheckTrajectorySafety.Request(trajectory=_trajectory(MAX_TRAJECTORY_POINTS + 1))
    r = ros_utils.call_service(node, CheckTrajectorySafety, TRAJECTORY, request,
                               timeout=60.0, process=proc, resend_every=None)
    assert not r.success
    assert r.message.startswith("~/check_trajectory_safety: "), r.message
    assert (f"{MAX_TRAJECTORY_POINTS + 1} points, more than the {MAX_TRAJECTORY_POINTS}"
            in r.message), r.message
    assert len(r.ratio) == 0 and len(r.retimed.points) == 0
    # the node goes on: states and a small request are answered
    _answers_states(panda, 5000)     # (stamps after those of the stream above)
    r = ros_utils.call_service(node, CheckTrajectorySafety, TRAJECTORY,
                               CheckTrajectorySafety.Request(trajectory=_trajectory(3)),
                               timeout=60.0, process=proc)
    assert r.success and len(r.ratio) == 3, r.message


def test_fifty_concurrent_clients_all_answered(panda):
    """50 clients per service send at once (after one call each has matched client and
    server both ways): every request gets its answer, the right one."""
    node, proc, _, _, _ = panda
    model = RobotModel.from_urdf_file(robots.path("panda"))
    gravity = [node.create_client(GetGravityTorques, GRAVITY, qos_profile=CLIENT_QOS)
               for _ in range(CLIENTS)]
    safety = [node.create_client(CheckTrajectorySafety, TRAJECTORY, qos_profile=CLIENT_QOS)
              for _ in range(CLIENTS)]
    trajectory = _trajectory(3)
    try:
        for c in gravity:
            ros_utils.call_service(node, GetGravityTorques, GRAVITY, GetGravityTorques.Request(
                position=Q0), timeout=60.0, process=proc, client=c)
        for c in safety:
            ros_utils.call_service(node, CheckTrajectorySafety, TRAJECTORY,
                                   CheckTrajectorySafety.Request(trajectory=trajectory),
                                   timeout=60.0, process=proc, client=c)
        qs = [np.array(Q0) + 0.01 * i for i in range(CLIENTS)]
        futures = [c.call_async(GetGravityTorques.Request(position=list(q)))
                   for c, q in zip(gravity, qs)]
        futures += [c.call_async(CheckTrajectorySafety.Request(trajectory=trajectory))
                    for c in safety]
        try:
            ros_utils.wait_for(lambda: all(f.done() for f in futures), timeout=60.0,
                               interval=0.05)
        except TimeoutError:
            pass
        done = [f.done() for f in futures]
        assert all(done), (f"{sum(done[:CLIENTS])} of {CLIENTS} gravity and "
                           f"{sum(done[CLIENTS:])} of {CLIENTS} trajectory requests answered")
        for f, q in zip(futures, qs):
            r = f.result()
            assert r.success, r.message
            np.testing.assert_allclose(r.effort, model.gravity_torques(q), rtol=1e-12,
                                       atol=1e-12)
        assert all(f.result().success and len(f.result().ratio) == 3
                   for f in futures[CLIENTS:])
    finally:
        for c in gravity + safety:
            node.destroy_client(c)
    ros_utils.assert_running(proc)
