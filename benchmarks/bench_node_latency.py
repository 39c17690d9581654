"""Benchmark: dynamics_node latency vs the bare rclpy round-trip floor, same run.

A driver (this process) publishes sensor_msgs/JointState (positions, velocities AND
efforts, as a real arm's driver does, so every output is produced: the momentum observer
and its contact outputs run on every state) at ``--rate`` Hz (``--sweep``: 500, 1000 and 2000 Hz) on
``joint_states`` for the embedded 7-DOF arm (``--robot panda``, default) or
example-robot-data's 29-DOF Unitree G1 humanoid with a fixed base (``--robot g1``), and
measures, per message, the time from ``publish()`` to the receipt of the matching reply
(matched by header stamp). Like a C++ driver, it builds and serialises no Python message
per period: it publishes one pre-serialised message with the stamp rewritten in place
(``StampedWire``) and takes the reply raw, reading only its stamp (``stamp_ns``).

* floor: an echo node in its own process (this file with ``--echo``) that republishes
  each joint_states message on ``joint_states_echo``, with the dynamics node's QoS
  (subscription best effort, depth 10; publisher reliable, depth 10). Measured with the
  default executor (and, with ``--events-floor``, rclpy's EventsExecutor).
* node: ``dynamics_node`` (its own process, ``python -m manip_dynamics.nodes.dynamics_node``)
  with every output on: ~/gravity_torques, ~/coriolis_torques, ~/gravity_command,
  ~/dynamics (the reply measured), and ~/inertia_markers (10 Hz, with mass-matrix bars);
  then the same node with markers off (``--node-phases`` picks). The driver subscribes to
  every output (the node builds only outputs someone subscribes to), taking the untimed
  ones raw, without building Python messages, as a C++ consumer such as RViz would
  (``--deserialize-outputs`` builds them); the contact outputs (~/external_torques,
  ~/external_wrench, ~/contact, ~/contact_markers) and the safety outputs
  (~/collision_safety, ~/speed_scale) likewise. ``--node-phases`` picks:
  ``markers``, ``nomarkers`` (markers off), ``noeffort`` (every default output, joint
  states WITHOUT effort: the observer idle), ``observer,noobserver`` (markers off,
  the momentum observer on, then off) and ``safety,nosafety`` (markers off, the
  collaborative-safety outputs ~/collision_safety and ~/speed_scale on, then off, their
  markers off; the driver subscribes to both: the node's CPU per message on / off is
  printed with the issue's goal, <= 1.3x). /diagnostics' observer share of the callback
  time is the ``obs%`` column (the mean of the node's reports while measuring).

The servers run this checkout's code, or ``--code DIR``'s (e.g. another worktree: the
code before a change, measured by the same driver in the same session).

Phases run one after the other (never two servers at once: 2 cores), each for
``--seconds``, after a warm-up that waits for the first reply (numba compilation) and 1 s
at full rate. Messages without a reply ``--grace`` s after the last publish are dropped.

Per phase: latency p50 / p99 / max (ms), drops; ``lw``, the node's latest-wins skips
(read from its /diagnostics: states it skipped on purpose because a newer one waited,
which the driver sees as drops); ``age99``, the p99 of the age of the
newest reply received so far, sampled at every period (what a controller reading the
latest output sees; in periods: a node that keeps up shows about 1, a node behind its
queue shows the queue length); ``lag99``, the p99 of how many states were published after
the newest reply, sampled at every period (0-1: the node answers the newest state; a node
behind its queue shows the queue length; it counts states, not time: it does not grow
while the driver itself is stalled, but it does while the server waits for CPU and the
driver publishes, as under ``--cpu-limit``, where both share one quota);
``cpu/msg``, the server process's CPU time (utime + stime of /proc/PID/stat, all threads)
per joint_states message (``drv/msg``: the same for the driver, which shares a
``--cpu-limit`` quota with the server); and the ratios node / floor of
the same rate (the cpu/msg ratio does not depend on the machine). The load average
before and after is printed with the table: on a shared machine, compare runs with
similar load only. ``--profile`` also profiles the node's joint_states callback in this
process (cProfile, no middleware in the loop) to show where the time goes.

Small-machine mode: ``--cpu-limit CPUS`` puts the driver and every server it starts in
a new cgroup with a CPU quota of CPUS CPUs (cgroup v1: ``/sys/fs/cgroup/cpu/<group>/
cpu.cfs_quota_us`` = CPUS x ``cpu.cfs_period_us``; cgroup v2: ``cpu.max``). The period
is ``--cpu-period`` (10 ms by default, not the kernel's 100 ms: a group that spends its
quota early stalls until the period ends, and with 100 ms that alone puts ~50 ms into
every p99 at CPUS = 0.5, an artefact a really slower machine does not have).
By default the group also gets 10x the default scheduler weight, so that on a loaded
machine it gets its whole quota (a dedicated small machine); ``--fair-share`` keeps the
default weight. Needs root; the group is removed on exit (also on errors and Ctrl-C; a group left by
a killed run is removed by the next run, or by hand: ``rmdir
/sys/fs/cgroup/cpu/manip_dynamics_bench_*``). With sudo (which resets the environment,
so pass the domain id and use the venv's python by path)::

    sudo ROS_DOMAIN_ID=$ROS_DOMAIN_ID .venv/bin/python benchmarks/bench_node_latency.py \
        --cpu-limit 1

Run:  PYTHONPATH=. .venv/bin/python benchmarks/bench_node_latency.py [--seconds 5]
      [--sweep | --rate HZ] [--robot panda|g1] [--cpu-limit CPUS] [--profile]
      [--events-floor] [--json results.jsonl]
ROS traffic stays on loopback (ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST is forced); the
domain id is taken from ROS_DOMAIN_ID or picked from the process id. Bounded: each phase
takes at most startup (<= ``--startup-timeout``) + 1 s + ``--seconds`` + ``--grace``;
about 25-40 s per rate with the defaults.
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

# A serialised ROS 2 message is a 4-byte encapsulation header (byte 1: 1 = little-endian
# CDR) and the fields in order (manip_dynamics/nodes/wire.py); every message timed here
# starts with std_msgs/Header, so header.stamp (int32 sec, uint32 nanosec) is at bytes 4-11.
from manip_dynamics.nodes.wire import HEADER_STAMP_OFFSET as STAMP_OFFSET  # noqa: E402
from manip_dynamics.nodes.wire import STAMP  # noqa: E402


def stamp_ns(data: bytes) -> int:
    """header.stamp in ns of a serialised message whose first field is a std_msgs/Header."""
    if data[1] != 1:
        raise ValueError("not a little-endian CDR message")
    sec, nanosec = STAMP.unpack_from(data, STAMP_OFFSET)
    return sec * 1_000_000_000 + nanosec


class StampedWire:
    """One serialised message whose header.stamp is rewritten in place for every publish:
    the driver sends the same joint state each period with a new stamp, and building and
    serialising a Python message every time would be the driver's largest cost (a C++
    driver does not pay it). ``bytes_with_stamp(ns)`` -> the bytes to ``publish()``."""

    def __init__(self, msg):
        from rclpy.serialization import deserialize_message, serialize_message
        self._buf = bytearray(serialize_message(msg))
        probe = 1_234_567_890_123_456_789
        check = deserialize_message(self.bytes_with_stamp(probe), type(msg))
        if (check.header.stamp.sec, check.header.stamp.nanosec) != divmod(probe, 1_000_000_000):
            raise RuntimeError("header.stamp is not at bytes 4-11 of the serialised message")

    def bytes_with_stamp(self, ns: int) -> bytes:
        STAMP.pack_into(self._buf, STAMP_OFFSET, *divmod(ns, 1_000_000_000))
        return bytes(self._buf)


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
    """Spin until Ctrl-C / shutdown, then tear down.

    Not ``executor.spin()``: rclpy 9.1.2's EventsExecutor.spin() runs no callback at all
    (neither subscriptions nor timers) and does not return on shutdown, seen here with
    std_msgs and sensor_msgs alike; its spin_until_future_complete() and spin_once() work.
    """
    import rclpy
    from rclpy.executors import ExternalShutdownException
    from rclpy.task import Future
    executor.add_node(node)
    never = Future()
    try:
        while rclpy.ok():
            executor.spin_until_future_complete(never, timeout_sec=1.0)
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


# --------------------------------------------------------------------------- CPU quota

CGROUP_PREFIX = "manip_dynamics_bench_"


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def _own_cgroup(hierarchy_line_match) -> str:
    """This process's cgroup path (from /proc/self/cgroup) in the matching hierarchy."""
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            if hierarchy_line_match(controllers):
                return path
    return "/"


class CpuLimit:
    """This process, and every process it starts from now on, under a CPU quota of
    ``cpus`` CPUs (``quota = cpus * period`` per ``period``, default 100 ms) in a new
    cgroup.

    cgroup v1 (``/sys/fs/cgroup/cpu``): ``cpu.cfs_period_us``, ``cpu.cfs_quota_us``;
    cgroup v2 (unified, cpu controller available): ``cpu.max``. With ``favoured`` the
    group also gets 10x the default weight (v1 ``cpu.shares`` 10240, v2 ``cpu.weight``
    1000), so that on a loaded machine the quota, not the other processes, is what
    limits it: a dedicated machine of ``cpus`` CPUs. (The scheduler weighs a group as one
    entity against every other runnable task: with the default weight and 8 busy tasks
    around, a 1-CPU group gets about 0.2 CPU.) Needs root. On exit
    (also on an exception or Ctrl-C) this process goes back to its own cgroup and the
    group is removed; groups left by a killed run (their pid is gone) are removed at the
    next start. By hand: ``rmdir /sys/fs/cgroup/cpu/manip_dynamics_bench_*`` (v1).
    """

    def __init__(self, cpus: float, period_us: int = 100_000, favoured: bool = True):
        if not cpus > 0:
            raise ValueError(f"--cpu-limit must be > 0 CPUs, got {cpus}")
        self.cpus, self.period_us, self.favoured = cpus, period_us, favoured
        self.path = None
        self._home_procs = None

    def _layout(self):
        """(hierarchy root, files to write, own cgroup's cgroup.procs)."""
        quota = max(1000, int(round(self.cpus * self.period_us)))
        v1 = "/sys/fs/cgroup/cpu"
        if os.path.isfile(os.path.join(v1, "cpu.cfs_quota_us")):
            home = _own_cgroup(lambda c: "cpu" in c.split(","))
            files = [("cpu.cfs_period_us", str(self.period_us)),
                     ("cpu.cfs_quota_us", str(quota))]
            files += [("cpu.shares", "10240")] * self.favoured
            return v1, files, os.path.join(v1, home.lstrip("/"), "cgroup.procs")
        v2 = "/sys/fs/cgroup"
        controllers = os.path.join(v2, "cgroup.controllers")
        if os.path.isfile(controllers) and "cpu" in open(controllers).read().split():
            _write(os.path.join(v2, "cgroup.subtree_control"), "+cpu")
            home = _own_cgroup(lambda c: c == "")
            files = [("cpu.max", f"{quota} {self.period_us}")]
            files += [("cpu.weight", "1000")] * self.favoured
            return v2, files, os.path.join(v2, home.lstrip("/"), "cgroup.procs")
        raise RuntimeError("--cpu-limit: no cgroup cpu controller found (neither "
                           "/sys/fs/cgroup/cpu/cpu.cfs_quota_us (v1) nor 'cpu' in "
                           "/sys/fs/cgroup/cgroup.controllers (v2))")

    @staticmethod
    def _remove_stale(root: str) -> None:
        for name in os.listdir(root):
            if name.startswith(CGROUP_PREFIX) and name[len(CGROUP_PREFIX):].isdigit():
                if not os.path.exists(f"/proc/{name[len(CGROUP_PREFIX):]}"):
                    try:
                        os.rmdir(os.path.join(root, name))
                    except OSError:
                        pass

    def __enter__(self):
        if os.geteuid() != 0:
            raise RuntimeError("--cpu-limit needs root (cgroups): run it with sudo, e.g. "
                               "sudo ROS_DOMAIN_ID=$ROS_DOMAIN_ID .venv/bin/python "
                               "benchmarks/bench_node_latency.py --cpu-limit 1")
        root, files, self._home_procs = self._layout()
        self._remove_stale(root)
        self.path = os.path.join(root, f"{CGROUP_PREFIX}{os.getpid()}")
        os.mkdir(self.path)
        try:
            for name, value in files:
                _write(os.path.join(self.path, name), value)
            _write(os.path.join(self.path, "cgroup.procs"), str(os.getpid()))
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc) -> None:
        if self.path is None:
            return
        try:
            _write(self._home_procs, str(os.getpid()))
        except OSError as e:
            print(f"warning: could not leave {self.path}: {e}", file=sys.stderr)
        for _ in range(50):                 # children may still be exiting
            try:
                os.rmdir(self.path)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.1)
        else:
            print(f"warning: cgroup {self.path} not removed (rmdir it by hand)", file=sys.stderr)
        self.path = None


def process_cpu_seconds(pid: int) -> float:
    """utime + stime of the whole process (every thread) from /proc/PID/stat [s]."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# --------------------------------------------------------------------------- driver

class Phase:
    """One measurement: warm up until the first reply, publish ``rate`` Hz, collect replies.

    Everything runs in the driver's executor (one thread): a ``1 / rate`` timer publishes
    and advances the state (warmup -> steady -> measure -> grace -> done), the reply
    callback records receipt times. (rclpy 9.1's EventsExecutor deadlocks if another
    thread publishes while it spins, so nothing is published from outside it.)

    Besides latency (publish -> receipt of the reply with the same stamp) it samples, at
    every tick of the measurement, the age of the newest reply received so far (now -
    publish time of its stamp): what a controller reading the latest output sees; and
    the server's process CPU time over the measurement (``server_pid``).
    """

    def __init__(self, node, names, q, qd, rate, reply_type, reply_topic, publisher, args,
                 effort=True):
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.qos import QoSProfile
        from rclpy.task import Future
        from sensor_msgs.msg import JointState
        from geometry_msgs.msg import WrenchStamped
        from std_msgs.msg import Float64, Float64MultiArray
        from visualization_msgs.msg import MarkerArray

        from manip_dynamics_interfaces.msg import CollisionSafety, Contact

        self.node = node
        self.names, self.q, self.qd = list(names), q.tolist(), qd.tolist()
        self.effort = args.effort_values if effort else None
        self.rate = rate
        self.args = args
        self.sent: dict[int, int] = {}          # stamp ns -> perf_counter_ns at publish
        self.latency_ns: dict[int, int] = {}
        self.age_ns: list[int] = []             # age of the newest reply, sampled per tick
        self.newest_sent_ns: int | None = None  # publish time of the newest reply's stamp
        self.sequence: dict[int, int] = {}      # stamp ns -> how many were published before
        self.lag: list[int] = []                # states newer than the newest reply, per tick
        self.newest_sequence = -1               # sequence number of the newest reply
        self.pub = publisher
        template = JointState(name=self.names, position=self.q, velocity=self.qd)
        if self.effort is not None:
            template.effort = self.effort
        self.wire = StampedWire(template)
        self.state = "idle"
        self.state_since = 0.0
        self.published = 0
        self.first_reply = False
        self.server_pid: int | None = None
        self.cpu = [None, None]                 # server CPU s at measure start, end
        self.driver_cpu = [None, None]          # this process's CPU s at the same times
        # dynamics_node's /diagnostics: (receipt monotonic s, total latest-wins skips)
        self.diagnostics: list[tuple[float, int]] = []
        # and its GC reports: (receipt monotonic s, full collections, longest pause ms)
        self.gc_reports: list[tuple[float, int, float]] = []
        # and the observer's share of its callback time: (receipt monotonic s, %)
        self.observer_share: list[tuple[float, float]] = []
        self.measure_start = None
        self.diag_sub = node.create_subscription(DiagnosticArray, "/diagnostics",
                                                 self._diagnostics, 10)
        # Every output has a subscriber, as in a system that uses them all (the node does
        # not build an output nobody subscribes to): the markers as RViz would, the other
        # per-state outputs with a callback that does nothing.
        # raw=True (default): the driver takes the serialised bytes and does not build
        # Python messages from them, as a C++ consumer (RViz) costs next to nothing;
        # ``--deserialize-outputs`` builds them (a MarkerArray is ~10 Python messages,
        # which delays this process's receipt of the replies being timed).
        raw = not getattr(args, "deserialize_outputs", False)
        self.markers_received = 0
        self.output_subs = [node.create_subscription(MarkerArray,
                                                     "/dynamics_node/inertia_markers",
                                                     self._marker, 10, raw=raw)]
        unread = set(getattr(args, "unread", "").split(",")) - {""}
        # --output-qos best_effort: the untimed outputs read as a consumer with
        # SensorDataQoS would (the writer stays reliable; the delivery to this reader is not)
        output_qos = 10
        if getattr(args, "output_qos", "reliable") == "best_effort":
            from rclpy.qos import ReliabilityPolicy
            output_qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT)
        self.output_subs += [node.create_subscription(t, f"/dynamics_node/{name}",
                                                      lambda msg: None, output_qos, raw=raw)
                             for name, t in (("gravity_torques", JointState),
                                             ("coriolis_torques", JointState),
                                             ("gravity_command", Float64MultiArray),
                                             ("external_torques", JointState),
                                             ("external_wrench", WrenchStamped),
                                             ("contact", Contact),
                                             ("contact_markers", MarkerArray),
                                             ("collision_safety", CollisionSafety),
                                             ("speed_scale", Float64))
                             if name not in unread]
        self.done = Future()
        # deep reliable queue on the measuring side: the driver must not be the one dropping;
        # raw: only the stamp is read (stamp_ns), the reply is not built as a Python message
        self.sub = node.create_subscription(reply_type, reply_topic, self._reply,
                                            QoSProfile(depth=1000,
                                                       reliability=node_qos()[1].reliability),
                                            raw=True)

    def start(self) -> None:
        self._enter("warmup")

    def _marker(self, msg) -> None:
        if self.state == "measure":
            self.markers_received += 1

    def _diagnostics(self, msg) -> None:
        for status in msg.status:
            if status.hardware_id == "/dynamics_node":
                values = {kv.key: kv.value for kv in status.values}
                value = values.get("skipped: latest-wins")
                total = 0 if value is None else int(value.split("(total ")[1].rstrip(")"))
                self.diagnostics.append((time.monotonic(), total))
                share = values.get("observer share of callback time [%]", "n/a")
                if share != "n/a":
                    self.observer_share.append((time.monotonic(), float(share)))
                gc_counts = values.get("GC collections since last report (gen 0/1/2)")
                if gc_counts is not None:
                    self.gc_reports.append((time.monotonic(), int(gc_counts.split("/")[2]),
                                            float(values["GC longest pause since last "
                                                         "report [ms]"])))

    def gc_pauses(self):
        """(full collections, longest pause in ms of any collection) over the node's
        reports after the measurement started; None without such reports."""
        after = [(n2, ms) for t, n2, ms in self.gc_reports if t >= self.measure_start]
        if self.measure_start is None or not after:
            return None
        return sum(n2 for n2, _ in after), max(ms for _, ms in after)

    def latest_wins_skips(self):
        """Latest-wins skips the node reported from its first report after the measurement
        started to its last report (one after the grace period): at most the skips of
        the measurement (up to 1 s of them may fall before the first report), so
        ``dropped - latest_wins_skips`` is an upper bound of the middleware's drops.
        None: no report (an echo server, or no diagnostics)."""
        if self.measure_start is None:
            return None
        after = [total for t, total in self.diagnostics if t >= self.measure_start]
        return after[-1] - after[0] if len(after) >= 2 else None

    def _enter(self, state: str) -> None:
        self.state, self.state_since = state, time.monotonic()
        if state == "measure":
            self.measure_start = self.state_since
        if state in ("measure", "grace") and self.server_pid is not None:
            self.driver_cpu[state == "grace"] = process_cpu_seconds(os.getpid())
            try:
                self.cpu[state == "grace"] = process_cpu_seconds(self.server_pid)
            except OSError:
                pass

    def _reply(self, data: bytes) -> None:
        t = time.perf_counter_ns()
        if self.state in ("idle", "done"):     # another phase's server on the same topic
            return
        self.first_reply = True
        stamp = stamp_ns(data)
        sent = self.sent.get(stamp)
        if sent is not None and stamp not in self.latency_ns:
            self.latency_ns[stamp] = t - sent
            if self.newest_sent_ns is None or sent > self.newest_sent_ns:
                self.newest_sent_ns = sent
                self.newest_sequence = self.sequence[stamp]

    def _publish(self, record: bool) -> None:
        stamp = self.node.get_clock().now().nanoseconds
        data = self.wire.bytes_with_stamp(stamp)
        if record:
            self.sent[stamp] = time.perf_counter_ns()
            self.sequence[stamp] = self.published
            self.published += 1
        self.pub.publish(data)

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
            if self.newest_sent_ns is not None:
                self.age_ns.append(time.perf_counter_ns() - self.newest_sent_ns)
                self.lag.append(self.published - 1 - self.newest_sequence)
            self._publish(record=True)
        elif self.state == "grace" and age >= self.args.grace:
            self._enter("done")
            self.done.set_result(True)

    def result(self) -> dict:
        lat = np.array(sorted(self.latency_ns.values()), dtype=float) * 1e-6
        ages = np.array(self.age_ns, dtype=float) * 1e-9 * self.rate     # in periods
        n_sent = len(self.sent)
        nan = float("nan")
        cpu = (self.cpu[1] - self.cpu[0] if None not in self.cpu else nan)
        driver_cpu = (self.driver_cpu[1] - self.driver_cpu[0] if None not in self.driver_cpu
                      else nan)
        return {
            "rate": self.rate, "sent": n_sent, "received": len(lat),
            "dropped": n_sent - len(lat),
            "p50": float(np.percentile(lat, 50)) if len(lat) else nan,
            "p99": float(np.percentile(lat, 99)) if len(lat) else nan,
            "max": float(lat.max()) if len(lat) else nan,
            "age_p99_periods": float(np.percentile(ages, 99)) if len(ages) else nan,
            "lag_p99_states": float(np.percentile(self.lag, 99)) if self.lag else nan,
            "cpu_per_msg_ms": cpu / n_sent * 1e3 if n_sent else nan,
            "driver_cpu_per_msg_ms": driver_cpu / n_sent * 1e3 if n_sent else nan,
            "achieved_rate": self.published / self.args.seconds,
            "latest_wins_skips": self.latest_wins_skips(),
            "markers_per_s": self.markers_received / self.args.seconds,
            "observer_share": self.mean_observer_share(),
        }

    def mean_observer_share(self):
        """The mean of the node's 'observer share of callback time [%]' reports received
        after the measurement started; None without such reports."""
        after = [x for t, x in self.observer_share
                 if self.measure_start is not None and t >= self.measure_start]
        return float(np.mean(after)) if after else None


def start_process(argv, log_path, args=None):
    """Start a server (``argv`` after the interpreter) with the code of ``args.code``
    (default: this checkout) first on its path; output to ``log_path``."""
    env = dict(os.environ)
    code = os.path.abspath(args.code) if getattr(args, "code", None) else REPO
    env["PYTHONPATH"] = os.pathsep.join([code, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["PYTHONUNBUFFERED"] = "1"
    log = open(log_path, "wb")
    return subprocess.Popen([sys.executable, "-u", *argv], stdout=log,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                            cwd=code)


def stop_process(proc) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def _wait_for_report(phase, executor, timeout: float = 2.5) -> None:
    """Spin until the node publishes one more /diagnostics report (1 Hz) after now."""
    n, deadline = len(phase.diagnostics), time.monotonic() + timeout
    while len(phase.diagnostics) == n and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.1)


def run_phase(label, server_args, phase, driver, executor, args, logdir):
    """Start the server, run ``phase`` at its rate until done, stop the server."""
    slug = "".join(c if c.isalnum() else "_" for c in label).strip("_")
    log_path = os.path.join(logdir, f"{slug}_{phase.rate:.0f}Hz.log")
    proc = start_process(server_args, log_path, args)
    phase.server_pid = proc.pid
    timer = driver.create_timer(1.0 / phase.rate, phase.tick)
    try:
        phase.start()
        executor.spin_until_future_complete(
            phase.done, timeout_sec=args.startup_timeout + args.seconds + args.grace + 5.0)
        if not phase.done.done() or phase.done.exception() is not None:
            with open(log_path) as f:
                log = f.read()[-3000:]
            raise RuntimeError(f"{label}: {phase.done.exception() or 'timed out'}\n{log}")
        if phase.diagnostics:                 # a dynamics_node: its count after the grace
            _wait_for_report(phase, executor)
    finally:
        phase.state = "done"
        driver.destroy_timer(timer)
        stop_process(proc)
    result = phase.result()
    result["label"] = label
    result["gc"] = phase.gc_pauses()
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
        print("Top of the profile (own time):")
        pstats.Stats(profiler).sort_stats("tottime").print_stats(15)
    finally:
        node.destroy_node()
        rclpy.shutdown(context=context)


def robot_setup(name: str):
    """(URDF path, q, qd) of the benchmarked robot: the embedded Panda arm (7 DOF) or
    example-robot-data's Unitree G1 humanoid (29 DOF tree, fixed base: its URDF's
    floating joint is commented out, so the pelvis is the root)."""
    from manip_dynamics import robots
    if name == "panda":
        return (robots.path("panda"), np.array([0.3, -0.4, 0.2, -2.0, 0.3, 1.8, 0.5]),
                np.array([0.5, -0.3, 0.8, 0.2, -0.6, 0.4, 1.0]))
    path = os.path.join(sys.prefix, "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}",
                        "site-packages", "cmeel.prefix", "share", "example-robot-data",
                        "robots", "g1_description", "urdf", "g1_29dof_rev_1_0.urdf")
    k = np.arange(29)
    return path, 0.3 * np.sin(k), 0.5 * np.cos(k)


def build_phases(args, path, rates, me):
    """[(label, server argv, reply type, reply topic, rate, effort)] in the order they run
    (effort: the joint states carry effort)."""
    from sensor_msgs.msg import JointState

    from manip_dynamics_interfaces.msg import Dynamics

    node = [os.path.abspath(args.node_script)] if args.node_script else [
        "-m", "manip_dynamics.nodes.dynamics_node"]
    extra = [a for p in args.node_param for a in ("-p", p)]
    # markers on / off: outputs.inertia_markers.enabled, and for the node of before issue
    # 11 (to compare with it: its parameter markers.enabled; a node ignores the other)
    node_args = [*node, "--ros-args", *extra,
                 "-p", f"urdf_file:={path}", "-p", "outputs.inertia_markers.enabled:=true",
                 "-p", "markers.enabled:=true", "-p", "markers.show_mass_matrix:=true"]
    reply = (Dynamics, "/dynamics_node/dynamics")
    phases = []
    wanted = set(args.node_phases.split(","))
    unknown = wanted - {"markers", "nomarkers", "noeffort", *SWITCH_PHASES, "none", ""}
    if unknown:
        raise SystemExit(f"--node-phases: unknown {sorted(unknown)} (markers, nomarkers, "
                         f"noeffort, {', '.join(SWITCH_PHASES)}, none)")
    markers_off = node_args[:-6] + ["-p", "outputs.inertia_markers.enabled:=false",
                                    "-p", "markers.enabled:=false"]
    for rate in rates:
        phases.append(("floor (echo, default executor)", [me, "--echo", "default"],
                       JointState, ECHO_TOPIC, rate, True))
        if args.events_floor:
            phases.append(("floor (echo, EventsExecutor)", [me, "--echo", "events"],
                           JointState, ECHO_TOPIC, rate, True))
        if args.executors:
            for kind in ("single", "events"):
                phases.append((f"diag DynamicsNode, {kind} executor",
                               [me, "--serve", kind, *node_args[len(node):]], *reply, rate,
                               True))
        if "markers" in wanted:
            phases.append(("dynamics_node (~/dynamics)", node_args, *reply, rate, True))
        # every default output, joint states without effort (the observer has no input)
        if "noeffort" in wanted:
            phases.append(("dynamics_node, no effort", node_args, *reply, rate, False))
        # The same node without markers: building and sending the MarkerArray (10 Hz) is
        # what a message arriving right behind a marker update waits for.
        if "nomarkers" in wanted:
            phases.append(("dynamics_node, markers off", markers_off, *reply, rate, True))
        # One output switched on / off, every other default output on, markers off,
        # joint states with effort: the contact outputs (issue 13, observer,noobserver) and
        # the safety outputs (issue 23, safety,nosafety; their own markers off too)
        for name in args.node_phases.split(","):       # in the order given, repeats too
            if name in SWITCH_PHASES:
                label, params = SWITCH_PHASES[name]
                phases.append((f"dynamics_node, {label}",
                               markers_off + [a for p in params for a in ("-p", p)],
                               *reply, rate, True))
    return phases


# --node-phases that switch one output: name -> (label, parameters)
SWITCH_PHASES = {
    "observer": ("observer on", ["observer.enabled:=true"]),
    "noobserver": ("observer off", ["observer.enabled:=false"]),
    "safety": ("safety on", ["safety.enabled:=true", "safety.markers:=false"]),
    "nosafety": ("safety off", ["safety.enabled:=false", "safety.markers:=false"]),
}
# pairs of those phases whose cpu/msg ratio is reported, with the goal
SWITCH_GOALS = (("safety on", "safety off", 1.3),)


def run_all(args, path, q, qd, names, phases, logdir) -> list[dict]:
    """Run every phase from one driver node (EventsExecutor, one thread)."""
    import rclpy
    from rclpy.experimental import EventsExecutor
    from sensor_msgs.msg import JointState

    rclpy.init()
    driver = rclpy.create_node("latency_driver")
    publisher = driver.create_publisher(JointState, "joint_states", node_qos()[1])
    executor = EventsExecutor()
    executor.add_node(driver)
    results = []
    try:
        for label, server_args, reply_type, topic, rate, effort in phases:
            phase = Phase(driver, names, q, qd, rate, reply_type, topic, publisher, args,
                          effort)
            try:
                results.append(run_phase(label, server_args, phase, driver, executor, args,
                                         logdir))
            finally:
                driver.destroy_subscription(phase.sub)
                driver.destroy_subscription(phase.diag_sub)
                for sub in phase.output_subs:
                    driver.destroy_subscription(sub)
    finally:
        executor.shutdown(timeout_sec=1.0)
        driver.destroy_node()
        rclpy.try_shutdown()
    return results


def print_results(results, header: str) -> None:
    print(header)
    print(f"{'phase':34s} {'rate':>5s} {'sent':>6s} {'recv':>6s} {'drop':>5s} {'lw':>5s} "
          f"{'p50':>7s} {'p99':>7s} {'max':>7s} {'age99':>6s} {'lag99':>6s} {'cpu/msg':>8s} "
          f"{'drv/msg':>8s} {'sent/s':>7s} {'mk/s':>5s} {'obs%':>5s}")
    for r in results:
        lw = r.get("latest_wins_skips")
        print(f"{r['label']:34s} {r['rate']:5.0f} {r['sent']:6d} {r['received']:6d} "
              f"{r['dropped']:5d} {'-' if lw is None else lw:>5} {r['p50']:7.3f} "
              f"{r['p99']:7.3f} {r['max']:7.2f} {r['age_p99_periods']:6.2f} "
              f"{r['lag_p99_states']:6.1f} "
              f"{r['cpu_per_msg_ms']:8.4f} {r['driver_cpu_per_msg_ms']:8.4f} "
              f"{r['achieved_rate']:7.0f} {r['markers_per_s']:5.1f} "
              f"{'-' if r.get('observer_share') is None else format(r['observer_share'], '5.1f'):>5}")
    print("(latency p50/p99/max in ms, of the answered states; drop = states without a "
          "reply; lw = of those, the node's latest-wins skips from its /diagnostics (at "
          "most the measurement's: drop - lw bounds the middleware's drops from above); "
          "age99 = p99 of the age of the newest reply, sampled every period, in periods; "
          "lag99 = p99 of the states published after the newest reply, sampled every period "
          "(0-1: the newest state is answered; in states, not time: a stalled driver does "
          "not add to it); "
          "cpu/msg = server process CPU (utime + stime, all threads) per joint_states "
          "message, ms; drv/msg = the same for this driver process (under --cpu-limit it "
          "shares the quota); mk/s = ~/inertia_markers arrays received per second, the driver "
          "subscribing as RViz would; obs% = the observer's share of the node's callback "
          "time, from its /diagnostics)")
    for rate in sorted({r["rate"] for r in results}):
        same = [r for r in results if r["rate"] == rate]
        floors = [r for r in same if r["label"].startswith("floor")]
        if not floors:
            continue
        best_floor = min(floors, key=lambda r: r["p99"])
        for r in same:
            if r["label"].startswith("floor"):
                continue
            for floor in floors:
                print(f"{rate:5.0f} Hz ratio {r['label']} / {floor['label']}: "
                      f"p50 {r['p50'] / floor['p50']:.2f}x, p99 {r['p99'] / floor['p99']:.2f}x, "
                      f"cpu/msg {r['cpu_per_msg_ms'] / floor['cpu_per_msg_ms']:.2f}x")
            ok = (r["p50"] <= 1.5 * best_floor["p50"] and r["p99"] <= 1.5 * best_floor["p99"]
                  and r["dropped"] == 0)
            print(f"  goal (p50, p99 <= 1.5 x floor's, no drops): {'MET' if ok else 'NOT MET'}")
            if r.get("gc") is not None:
                print(f"  garbage collector in the node while measuring: {r['gc'][0]} full "
                      f"collections, longest pause {r['gc'][1]:.2f} ms")
            lw = r.get("latest_wins_skips")
            if lw is not None:
                fresh = r["age_p99_periods"] < 3.0
                print(f"  shedding (no drop but latest-wins skips, age99 < 3 periods): "
                      f"{'MET' if fresh and r['dropped'] - lw <= 0 else 'NOT MET'} "
                      f"(drops beyond latest-wins <= {max(r['dropped'] - lw, 0)}, "
                      f"age99 {r['age_p99_periods']:.2f}; lag99 "
                      f"{r['lag_p99_states']:.1f} states)")
        print_switch_ratios(same)


def print_switch_ratios(same) -> None:
    """For the SWITCH_GOALS pairs run at one rate: node CPU per message and latency with
    the output on over off, and the goal on the CPU ratio (phases given more than once,
    e.g. ``safety,nosafety,nosafety,safety``: the k-th on against the k-th off)."""
    def runs(label):
        return [r for r in same if r["label"] == f"dynamics_node, {label}"]
    for on, off, goal in SWITCH_GOALS:
        for a, b in zip(runs(on), runs(off)):
            cpu = a["cpu_per_msg_ms"] / b["cpu_per_msg_ms"]
            print(f"{a['rate']:5.0f} Hz {on} / {off}: cpu/msg {cpu:.2f}x "
                  f"({a['cpu_per_msg_ms']:.4f} / {b['cpu_per_msg_ms']:.4f} ms), "
                  f"p50 {a['p50'] / b['p50']:.2f}x, p99 {a['p99'] / b['p99']:.2f}x; "
                  f"goal (cpu/msg <= {goal}x): {'MET' if cpu <= goal else 'NOT MET'}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--echo", choices=["default", "events"], help=argparse.SUPPRESS)
    ap.add_argument("--rate", type=float, default=1000.0, help="joint_states rate [Hz]")
    ap.add_argument("--sweep", action="store_true",
                    help="run every phase at 500, 1000 and 2000 Hz (instead of --rate)")
    ap.add_argument("--robot", choices=["panda", "g1"], default="panda",
                    help="panda: the embedded 7-DOF arm; g1: example-robot-data's 29-DOF "
                         "Unitree G1 humanoid, fixed base (try it with --rate 500)")
    ap.add_argument("--cpu-limit", type=float, metavar="CPUS",
                    help="run driver and servers under a cgroup CPU quota of CPUS CPUs "
                         "(e.g. 1 or 0.5; needs root: see the module docstring)")
    ap.add_argument("--cpu-period", type=float, default=10.0, metavar="MS",
                    help="with --cpu-limit: the quota's period [ms] (default 10; the group "
                         "may stall up to (1 - CPUS / cores in use) periods once its quota "
                         "is spent, which a really smaller machine does not do)")
    ap.add_argument("--fair-share", action="store_true",
                    help="with --cpu-limit: keep the default cgroup weight (on a loaded "
                         "machine the group then gets less than its quota)")
    ap.add_argument("--node-phases", default="markers,nomarkers,noeffort",
                    help="which dynamics_node phases to run (comma-separated; observer, "
                         "noobserver, safety, nosafety run in the order given and as often "
                         "as given, e.g. safety,nosafety,nosafety,safety): markers, "
                         "nomarkers, noeffort (every default output, joint states without "
                         "effort), observer, noobserver (the observer on / off, markers "
                         "off), safety, nosafety (the safety outputs on / off, markers "
                         "off); joint states carry effort in every other phase")
    ap.add_argument("--code", metavar="DIR",
                    help="run the servers with the code of this checkout (default: the "
                         "one this script is in), e.g. the code before a change")
    ap.add_argument("--seconds", type=float, default=5.0, help="measurement per phase [s]")
    ap.add_argument("--grace", type=float, default=0.5, help="wait for late replies [s]")
    ap.add_argument("--startup-timeout", type=float, default=20.0)
    ap.add_argument("--profile", action="store_true", help="profile the node's callback")
    ap.add_argument("--deserialize-outputs", action="store_true",
                    help="build Python messages from the outputs the driver subscribes to "
                         "(default: take them raw, as a C++ consumer such as RViz)")
    ap.add_argument("--events-floor", action="store_true",
                    help="also measure the echo floor under rclpy's EventsExecutor")
    ap.add_argument("--executors", action="store_true",
                    help="also run the DynamicsNode class under the single-threaded and "
                         "the events executor (diagnosis; the node's own main() is the "
                         "headline number)")
    ap.add_argument("--node-script", metavar="PATH",
                    help="run this script instead of manip_dynamics.nodes.dynamics_node "
                         "(e.g. an experimental variant taking the same --ros-args)")
    ap.add_argument("--node-param", action="append", default=[], metavar="NAME:=VALUE",
                    help="extra parameter for the dynamics_node phases (repeatable)")
    ap.add_argument("--unread", default="", metavar="NAMES",
                    help="outputs the driver does not subscribe to (comma-separated, e.g. "
                         "external_torques,external_wrench,contact): the node does not "
                         "publish them, so a phase shows what their DDS writes cost")
    ap.add_argument("--output-qos", choices=["reliable", "best_effort"], default="reliable",
                    help="the reliability the driver reads the untimed outputs with "
                         "(best_effort: as a consumer with SensorDataQoS)")
    ap.add_argument("--tag", default="", help="a label stored with the --json results")
    ap.add_argument("--json", metavar="PATH", help="also append the results to PATH (JSON lines)")
    ap.add_argument("--serve", choices=["single", "events", "multi"], help=argparse.SUPPRESS)
    args, ros_args = ap.parse_known_args()
    if args.echo:
        run_echo(args.echo)
        return 0
    if args.serve:
        run_node_with(args.serve, [a for a in ros_args if a != "--ros-args"])
        return 0

    from manip_dynamics import RobotModel

    t_start = time.monotonic()
    path, q, qd = robot_setup(args.robot)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = RobotModel.from_urdf_file(path)
    rates = [500.0, 1000.0, 2000.0] if args.sweep else [args.rate]
    # effort = g(q) - C(q, qd)^T qd: the observer's beta is 0 and p constant, so r = 0
    # (contact-free: no contact-point search), the observer's every-sample cost
    args.effort_values = (model.gravity_torques(q) - model.coriolis_matrix(q, qd).T
                          @ qd).tolist()
    logdir = tempfile.mkdtemp(prefix="bench_node_latency_")
    phases = build_phases(args, path, rates, os.path.abspath(__file__))
    load_before = os.getloadavg()
    from rclpy.executors import ExternalShutdownException
    try:
        if args.cpu_limit:
            with CpuLimit(args.cpu_limit, period_us=int(args.cpu_period * 1000),
                          favoured=not args.fair_share):
                results = run_all(args, path, q, qd, model.joint_names, phases, logdir)
        else:
            results = run_all(args, path, q, qd, model.joint_names, phases, logdir)
    except (KeyboardInterrupt, ExternalShutdownException):
        print("interrupted (servers stopped, cgroup removed)", file=sys.stderr)
        return 130
    load_after = os.getloadavg()
    limit = (f", cpu limit {args.cpu_limit:g} CPUs (cgroup quota per {args.cpu_period:g} ms"
             f"{', default weight' if args.fair_share else ', 10x weight'})"
             if args.cpu_limit else "")
    print_results(results, (
        f"\n{args.robot} ({model.n} DOF), joint_states for {args.seconds:.0f} s per phase"
        f"{limit}; load average (1, 5, 15 min) before {load_before[0]:.2f} {load_before[1]:.2f} "
        f"{load_before[2]:.2f}, after {load_after[0]:.2f} {load_after[1]:.2f} "
        f"{load_after[2]:.2f}; {os.cpu_count()} CPUs. Logs: {logdir}"))
    if args.json:
        import json
        with open(args.json, "a") as f:
            for r in results:
                f.write(json.dumps({**r, "robot": args.robot, "cpu_limit": args.cpu_limit,
                                    "tag": args.tag, "node_param": args.node_param,
                                    "load_before": load_before, "load_after": load_after,
                                    "time": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                          time.gmtime())}) + "\n")
    if args.profile:
        profile_callback(path, q, qd, n=2000)
    print(f"total time {time.monotonic() - t_start:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
