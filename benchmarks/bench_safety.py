"""Benchmark: the per-state cost of the collaborative-safety assessment, in-process, as a
ratio to the core's compute_all of the same state measured in the same process.

For a robot (the embedded Panda, or example-robot-data's UR5) and its default monitored
points (every moving link's origin and the tip), times per state:

* ``compute_all``: what the dynamics node computes for every state (its baseline);
* ``SafetyMonitor.assess``: the assessment as the public API returns it (SafetyState);
* ``SafetyMonitor.assess_into``: the node's per-state path (a reused table, no objects);
* ``PointKinematics.motion``: the points' kinematics and effective masses alone;

each moving and at rest (qd = 0: every direction from an eigenvector).

``--node``: the dynamics node's joint_states callback itself, in this process (no
middleware wait): two DynamicsNode instances of the same robot, ``safety.enabled`` true and
false (every other default output on, markers off, joint states with effort), a second node
in the same process subscribing (raw) to every output of both, so every output is built and
written to DDS; blocks of states to the one and the other in turn; the CPU time of the
calling thread per state (``time.thread_time``) and the ratio on / off. The code measured is
the one first on the path: run it with ``PYTHONPATH`` at another checkout (e.g. ``git
archive`` of the commit before a change) to measure that code, calls it lacks are left out.
The best of ``--repeat`` runs of ``--states`` calls each (the least disturbed by other
processes); the load average is printed with the table.

Run:  PYTHONPATH=. .venv/bin/python benchmarks/bench_safety.py [--robot panda|ur5] [--node]
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np


def best_time(fn, states, repeat):
    """The best over ``repeat`` runs of the mean time per call of fn over ``states`` (s)."""
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        for q, qd in states:
            fn(q, qd)
        best = min(best, (time.perf_counter() - t) / len(states))
    return best


def model_for(robot):
    from manip_dynamics import RobotModel
    return RobotModel.from_urdf_file(model_path(robot))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--robot", choices=["panda", "ur5"], default="panda")
    ap.add_argument("--states", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--node", action="store_true",
                    help="the node's callback with safety on / off instead (see above)")
    args = ap.parse_args()
    if args.node:
        return node_on_off(args)

    import manip_dynamics
    from manip_dynamics.safety import BodyModel, SafetyMonitor, default_points

    model = model_for(args.robot)
    points = default_points(model)
    monitor = SafetyMonitor(model, points, BodyModel.load()["hands_fingers"])
    rng = np.random.default_rng(0)
    moving = [(rng.uniform(-2, 2, model.n), rng.uniform(-1, 1, model.n))
              for _ in range(args.states)]
    rest = [(q, np.zeros(model.n)) for q, _ in moving]
    tip = model.default_tip
    calls = {"compute_all": lambda q, qd: model.compute_all(q, qd, tip, damping=1e-3),
             "SafetyMonitor.assess": monitor.assess,
             "PointKinematics.motion": monitor.kinematics.motion}
    if hasattr(monitor, "assess_into"):
        table = np.empty(monitor.kinematics.table_shape)
        calls["SafetyMonitor.assess_into"] = lambda q, qd: monitor.assess_into(q, qd, table)
    load = os.getloadavg()
    rows = []
    for name, fn in calls.items():
        for label, states in (("moving", moving), ("at rest", rest)):
            fn(*states[0])                      # compile / load the kernels
            rows.append((name, label, best_time(fn, states, args.repeat)))
    base = {label: t for name, label, t in rows if name == "compute_all"}
    print(f"{args.robot} ({model.n} DOF, {len(points)} monitored points), code "
          f"{os.path.dirname(manip_dynamics.__file__)}; best of {args.repeat} x "
          f"{args.states} states; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
          f"({os.cpu_count()} CPUs)")
    for name, label, t in rows:
        print(f"{name:28s} {label:8s} {t * 1e6:9.2f} us  {t / base[label]:6.2f}x compute_all")
    return 0


def node_on_off(args) -> int:
    """--node: CPU per state of DynamicsNode._on_joint_states, safety on / off (module doc)."""
    import rclpy
    from sensor_msgs.msg import JointState

    from manip_dynamics.nodes.dynamics_node import DynamicsNode
    model = model_for(args.robot)
    path = model_path(args.robot)
    context = rclpy.Context()
    rclpy.init(context=context)
    nodes = {}
    for on in ("true", "false"):
        nodes[on] = DynamicsNode(context=context, cli_args=[
            "--ros-args", "-r", f"__ns:=/safety_{on}", "-p", f"urdf_file:={path}",
            "-p", f"safety.enabled:={on}", "-p", "safety.markers:=false",
            "-p", "outputs.inertia_markers.enabled:=false"])
    listener = rclpy.create_node("outputs", context=context)
    time.sleep(1.5)                           # (graph discovery, within this process too)
    for on, node in nodes.items():
        for topic, msg_type in node.get_publisher_names_and_types_by_node(
                node.get_name(), node.get_namespace()):
            if "markers" not in topic and topic != "/diagnostics":
                listener.create_subscription(_message_class(msg_type[0]), topic,
                                             lambda _: None, 10, raw=True)
    time.sleep(1.5)
    rng = np.random.default_rng(0)
    q, qd = rng.uniform(-1, 1, model.n), rng.uniform(-1, 1, model.n)
    effort = model.gravity_torques(q) - model.coriolis_matrix(q, qd).T @ qd
    msg = JointState(name=list(model.joint_names), position=q.tolist(), velocity=qd.tolist(),
                     effort=effort.tolist())
    cpu = {"true": [], "false": []}
    for block in range(2 * args.repeat + 2):
        on = "true" if block % 2 == 0 else "false"
        t = time.thread_time()
        for i in range(args.states):
            ns = time.time_ns()
            msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(ns, 1_000_000_000)
            nodes[on]._on_joint_states(msg)
        if block >= 2:                                   # (the first two: warm-up)
            cpu[on].append((time.thread_time() - t) / args.states)
    load = os.getloadavg()
    a, b = np.array(cpu["true"]), np.array(cpu["false"])
    print(f"{args.robot}: DynamicsNode._on_joint_states CPU per state (thread), "
          f"{args.repeat} blocks of {args.states} states each way, load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    for label, x in (("safety on ", a), ("safety off", b)):
        print(f"{label} {np.median(x) * 1e6:8.2f} us (blocks {x.min() * 1e6:.1f}-"
              f"{x.max() * 1e6:.1f})")
    print(f"on / off   {np.median(a) / np.median(b):8.2f}x (medians; per block pair "
          f"{(a / b).min():.2f}-{(a / b).max():.2f}x)")
    for node in (*nodes.values(), listener):
        node.destroy_node()
    rclpy.shutdown(context=context)
    return 0


def model_path(robot):
    from manip_dynamics import robots
    if robot == "panda":
        return robots.path("panda")
    import pathlib
    import pinocchio as pin
    erd = pathlib.Path(pin.__file__).parents[4] / "share" / "example-robot-data" / "robots"
    return erd / "ur_description" / "urdf" / "ur5_robot.urdf"


def _message_class(type_name):
    """'pkg/msg/Name' -> the message class."""
    import importlib
    pkg, _, name = type_name.split("/")
    return getattr(importlib.import_module(f"{pkg}.msg"), name)


if __name__ == "__main__":
    raise SystemExit(main())
