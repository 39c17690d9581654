"""Benchmark: dynamics_node latency at 1 kHz vs the bare rclpy round-trip floor, same run.

A driver (this process) publishes sensor_msgs/JointState for the embedded 7-DOF arm
(``panda``, positions AND velocities, so every output is produced) at ``--rate`` Hz on
``joint_states`` and measures, per message, the time from ``publish()`` to the receipt of
the matching reply (matched by header stamp):

* floor: an echo node in its own process (this file with ``--echo``) that republishes
  each joint_states message on ``joint_states_echo``, with the dynamics node's QoS
  (subscription best effort, depth 10; publisher reliable, depth 10). Measured with the
  default executor (``rclpy.spin``) (and, with ``--events-floor``, rclpy's EventsExecutor).
* node: ``dynamics_node`` (its own process, ``python -m manip_dynamics.nodes.dynamics_node``)
  with every output on: ~/gravity_torques, ~/coriolis_torques, ~/gravity_command,
  ~/dynamics (the reply measured), and ~/inertia_markers (10 Hz, with mass-matrix bars);
  then the same node with markers off.

Phases run one after the other (never two servers at once: 2 cores), each for
``--seconds``, after a warm-up that waits for the first reply (numba compilation). Messages
without a reply ``--grace`` s after the last publish are counted as dropped.

Prints p50 / p99 / max latency (ms) and drops for each phase, and the ratios node / floor.
Goal (issue 4): node p99 <= 1.5 x floor p99, no drops. ``--profile`` also profiles the
node's joint_states callback in this process (cProfile, no middleware in the loop) to show
where the time goes.

Run:  PYTHONPATH=. .venv/bin/python benchmarks/bench_node_latency.py [--seconds 5] [--profile]
ROS traffic stays on loopback (ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST is forced); the
domain id is taken from ROS_DOMAIN_ID or picked from the process id. Bounded: < 60 s with
the defaults.
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, REPO)
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
os.environ.pop("ROS_LOCALHOST_ONLY", None)
os.environ.setdefault("ROS_DOMAIN_ID", str(os.getpid() % 100 + 101))

import numpy as np  # noqa: E402

ECHO_TOPIC = "joint_states_echo"


def node_qos():
    """The QoS of dynamics_node's joint_states subscription and of its publishers."""
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    sub = QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT)
    pub = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
    return sub, pub


# --------------------------------------------------------------------------- echo process

def _make_executor(kind: str):
    """'events' (rclpy.experimental.EventsExecutor), 'multi' (3 threads) or single-threaded."""
    from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor
    if kind == "events":
        from rclpy.experimental import EventsExecutor
        return EventsExecutor()
    if kind == "multi":
        return MultiThreadedExecutor(num_threads=3)
    return SingleThreadedExecutor()


def _spin(node, executor) -> None:
    """Spin until Ctrl-C / shutdown, then tear down."""
    import rclpy
    from rclpy.executors import ExternalShutdownException
    executor.add_node(node)
    try:
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


def run_echo(executor_kind: str) -> None:
    import rclpy
    from rclpy.node import Node
    from sensor_msgs.msg import JointState

    rclpy.init()
    node = Node("latency_echo")
    sub_qos, pub_qos = node_qos()
    pub = node.create_publisher(JointState, ECHO_TOPIC, pub_qos)
    node.create_subscription(JointState, "joint_states", pub.publish, sub_qos)
    executor = _make_executor("events" if executor_kind == "events" else "single")
    print("READY", flush=True)
    _spin(node, executor)


def run_node_with(executor_kind: str, ros_args: list[str]) -> None:
    """DynamicsNode (the real class) spun by another executor: where does the time go?"""
    import rclpy

    from manip_dynamics.nodes.dynamics_node import DynamicsNode

    rclpy.init(args=["--ros-args", *ros_args])
    _spin(DynamicsNode(), _make_executor(executor_kind))


# --------------------------------------------------------------------------- driver

class Phase:
    """One measurement: warm up until the first reply, publish ``rate`` Hz, collect replies.

    Everything runs in the driver's executor (one thread): a ``1 / rate`` timer publishes
    and advances the state (warmup -> steady -> measure -> grace -> done), the reply
    callback records receipt times. (rclpy 9.1's EventsExecutor deadlocks if another
    thread publishes while it spins, so nothing is published from outside it.)
    """

    def __init__(self, node, names, q, qd, reply_type, reply_topic, publisher, args):
        from rclpy.qos import QoSProfile
        from rclpy.task import Future
        from sensor_msgs.msg import JointState

        self.node = node
        self.names, self.q, self.qd = list(names), q.tolist(), qd.tolist()
        self.args = args
        self.sent: dict[int, int] = {}          # stamp ns -> perf_counter_ns at publish
        self.latency_ns: dict[int, int] = {}
        self.pub = publisher
        self.JointState = JointState
        self.state = "idle"
        self.state_since = 0.0
        self.published = 0
        self.first_reply = False
        self.done = Future()
        # deep reliable queue on the measuring side: the driver must not be the one dropping
        self.sub = node.create_subscription(reply_type, reply_topic, self._reply,
                                            QoSProfile(depth=1000,
                                                       reliability=node_qos()[1].reliability))

    def start(self) -> None:
        self._enter("warmup")

    def _enter(self, state: str) -> None:
        self.state, self.state_since = state, time.monotonic()

    def _reply(self, msg) -> None:
        t = time.perf_counter_ns()
        if self.state in ("idle", "done"):     # another phase's server on the same topic
            return
        self.first_reply = True
        stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        sent = self.sent.get(stamp)
        if sent is not None and stamp not in self.latency_ns:
            self.latency_ns[stamp] = t - sent

    def _publish(self, record: bool) -> None:
        stamp = self.node.get_clock().now().nanoseconds
        msg = self.JointState()
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp, 1_000_000_000)
        msg.name = self.names
        msg.position = self.q
        msg.velocity = self.qd
        if record:
            self.sent[stamp] = time.perf_counter_ns()
            self.published += 1
        self.pub.publish(msg)

    def tick(self) -> None:
        """Timer callback at ``rate`` Hz."""
        if self.state in ("idle", "done"):
            return
        age = time.monotonic() - self.state_since
        if self.state == "warmup":
            if self.first_reply:
                self._enter("steady")
            elif age > self.args.startup_timeout:
                self._enter("done")
                self.done.set_exception(TimeoutError(
                    f"no reply within {self.args.startup_timeout} s"))
                return
            self._publish(record=False)
        elif self.state == "steady":                 # 1 s at full rate before measuring
            if age >= 1.0:
                self._enter("measure")
            self._publish(record=self.state == "measure")
        elif self.state == "measure":
            if age >= self.args.seconds:
                self._enter("grace")
                return
            self._publish(record=True)
        elif self.state == "grace" and age >= self.args.grace:
            self._enter("done")
            self.done.set_result(True)

    def result(self) -> dict:
        lat = np.array(sorted(self.latency_ns.values()), dtype=float) * 1e-6
        n_sent = len(self.sent)
        return {
            "sent": n_sent, "received": len(lat), "dropped": n_sent - len(lat),
            "p50": float(np.percentile(lat, 50)) if len(lat) else float("nan"),
            "p99": float(np.percentile(lat, 99)) if len(lat) else float("nan"),
            "max": float(lat.max()) if len(lat) else float("nan"),
            "achieved_rate": self.published / self.args.seconds,
        }


def start_process(args, log_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([REPO, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["PYTHONUNBUFFERED"] = "1"
    log = open(log_path, "wb")
    return subprocess.Popen([sys.executable, "-u", *args], stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, env=env, cwd=REPO)


def stop_process(proc) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def run_phase(label, server_args, phase, executor, args, logdir):
    slug = "".join(c if c.isalnum() else "_" for c in label).strip("_")
    log_path = os.path.join(logdir, f"{slug}.log")
    proc = start_process(server_args, log_path)
    try:
        phase.start()
        executor.spin_until_future_complete(
            phase.done, timeout_sec=args.startup_timeout + args.seconds + args.grace + 5.0)
        if not phase.done.done() or phase.done.exception() is not None:
            with open(log_path) as f:
                log = f.read()[-3000:]
            raise RuntimeError(f"{label}: {phase.done.exception() or 'timed out'}\n{log}")
    finally:
        phase.state = "done"
        stop_process(proc)
    result = phase.result()
    result["label"] = label
    return result


def profile_callback(model_path: str, q, qd, n: int) -> None:
    """cProfile of DynamicsNode._on_joint_states in this process (publishers unmatched)."""
    import cProfile
    import pstats

    import rclpy
    from sensor_msgs.msg import JointState

    from manip_dynamics.nodes.dynamics_node import DynamicsNode

    context = rclpy.Context()
    rclpy.init(context=context, args=["--ros-args", "-r", "__ns:=/bench_profile",
                                      "-p", f"urdf_file:={model_path}",
                                      "-p", "markers.show_mass_matrix:=true"])
    node = DynamicsNode(context=context)
    try:
        msg = JointState()
        msg.name = list(node.snapshot.model.joint_names)
        msg.position, msg.velocity = q.tolist(), qd.tolist()

        def one(i):
            msg.header.stamp.sec, msg.header.stamp.nanosec = 1000 + i // 1000, (i % 1000) * 1000
            node._on_joint_states(msg)

        for i in range(200):
            one(i)
        t = time.perf_counter()
        for i in range(200, 200 + n):
            one(i)
        per = (time.perf_counter() - t) / n
        tip = node.snapshot.tip_frame
        m = node.snapshot.model
        t = time.perf_counter()
        for _ in range(n):
            m.compute_all(q, qd, tip, damping=1e-3)
        core = (time.perf_counter() - t) / n
        print(f"\nIn-process joint_states callback (no middleware wait): {per * 1e3:.3f} ms "
              f"per message, of which core compute_all {core * 1e3:.3f} ms")
        profiler = cProfile.Profile()
        profiler.enable()
        for i in range(200 + n, 200 + 2 * n):
            one(i)
        profiler.disable()
        print("Top of the profile (cumulative):")
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(18)
    finally:
        node.destroy_node()
        rclpy.shutdown(context=context)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--echo", choices=["default", "events"], help=argparse.SUPPRESS)
    ap.add_argument("--rate", type=float, default=1000.0, help="joint_states rate [Hz]")
    ap.add_argument("--seconds", type=float, default=5.0, help="measurement per phase [s]")
    ap.add_argument("--grace", type=float, default=0.5, help="wait for late replies [s]")
    ap.add_argument("--startup-timeout", type=float, default=20.0)
    ap.add_argument("--profile", action="store_true", help="profile the node's callback")
    ap.add_argument("--events-floor", action="store_true",
                    help="also measure the echo floor under rclpy's EventsExecutor "
                         "(experimental in rclpy 9.1: seen to receive nothing in some runs)")
    ap.add_argument("--executors", action="store_true",
                    help="also run the DynamicsNode class under the single-threaded and "
                         "the events executor (diagnosis; the node's own main() is the "
                         "headline number)")
    ap.add_argument("--serve", choices=["single", "events", "multi"], help=argparse.SUPPRESS)
    args, ros_args = ap.parse_known_args()
    if args.echo:
        run_echo(args.echo)
        return 0
    if args.serve:
        run_node_with(args.serve, [a for a in ros_args if a != "--ros-args"])
        return 0

    import rclpy
    from rclpy.experimental import EventsExecutor
    from sensor_msgs.msg import JointState

    from manip_dynamics import RobotModel, robots
    from manip_dynamics_interfaces.msg import Dynamics

    t_start = time.monotonic()
    path = robots.path("panda")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = RobotModel.from_urdf_file(path)
    q = np.array([0.3, -0.4, 0.2, -2.0, 0.3, 1.8, 0.5])
    qd = np.array([0.5, -0.3, 0.8, 0.2, -0.6, 0.4, 1.0])

    logdir = tempfile.mkdtemp(prefix="bench_node_latency_")
    me = os.path.abspath(__file__)
    node_args = ["-m", "manip_dynamics.nodes.dynamics_node", "--ros-args",
                 "-p", f"urdf_file:={path}", "-p", "markers.enabled:=true",
                 "-p", "markers.show_mass_matrix:=true"]
    phases = [("floor (echo, default executor)", [me, "--echo", "default"], JointState,
               ECHO_TOPIC)]
    if args.events_floor:
        phases.append(("floor (echo, EventsExecutor)", [me, "--echo", "events"], JointState,
                       ECHO_TOPIC))
    if args.executors:
        for kind in ("single", "events"):
            phases.append((f"diag DynamicsNode, {kind} executor",
                           [me, "--serve", kind, *node_args[2:]], Dynamics,
                           "/dynamics_node/dynamics"))
    phases.append(("dynamics_node (~/dynamics)", node_args, Dynamics,
                   "/dynamics_node/dynamics"))
    # The same node without markers: building and sending the MarkerArray (10 Hz) is
    # what a message arriving right behind a marker update waits for.
    phases.append(("dynamics_node, markers off", node_args[:-4] + ["-p", "markers.enabled:=false"],
                   Dynamics, "/dynamics_node/dynamics"))
    rclpy.init()
    driver = rclpy.create_node("latency_driver")
    publisher = driver.create_publisher(JointState, "joint_states", node_qos()[1])
    measured = [Phase(driver, model.joint_names, q, qd, reply_type, topic, publisher, args)
                for _, _, reply_type, topic in phases]

    def tick():
        for phase in measured:
            phase.tick()

    driver.create_timer(1.0 / args.rate, tick)
    executor = EventsExecutor()
    executor.add_node(driver)
    results = []
    try:
        for (label, server_args, _, _), phase in zip(phases, measured):
            results.append(run_phase(label, server_args, phase, executor, args, logdir))
    finally:
        executor.shutdown(timeout_sec=1.0)
        driver.destroy_node()
        rclpy.try_shutdown()

    print(f"\n7-DOF arm (panda), joint_states at {args.rate:.0f} Hz for {args.seconds:.0f} s "
          f"per phase; latency = publish -> receipt of the reply (ms). Logs: {logdir}")
    print(f"{'phase':34s} {'sent':>6s} {'recv':>6s} {'drop':>5s} {'p50':>7s} {'p99':>7s} "
          f"{'max':>7s} {'rate':>7s}")
    for r in results:
        print(f"{r['label']:34s} {r['sent']:6d} {r['received']:6d} {r['dropped']:5d} "
              f"{r['p50']:7.3f} {r['p99']:7.3f} {r['max']:7.2f} {r['achieved_rate']:7.0f}")
    floors = [r for r in results if r["label"].startswith("floor")]
    best_floor = min(floors, key=lambda r: r["p99"])
    for r in results:
        if r["label"].startswith("floor"):
            continue
        for floor in floors:
            print(f"ratio {r['label']} / {floor['label']}: p50 {r['p50'] / floor['p50']:.2f}x, "
                  f"p99 {r['p99'] / floor['p99']:.2f}x")
        ok = r["p99"] <= 1.5 * best_floor["p99"] and r["dropped"] == 0
        print(f"  goal (p99 <= 1.5 x floor p99 of '{best_floor['label']}', no drops): "
              f"{'MET' if ok else 'NOT MET'}")
    if args.profile:
        profile_callback(path, q, qd, n=2000)
    print(f"total time {time.monotonic() - t_start:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
