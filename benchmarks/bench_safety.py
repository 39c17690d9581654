"""Benchmark: the per-state cost of the collaborative-safety assessment, in-process, as a
ratio to the core's compute_all of the same state measured in the same process.

For a robot (the embedded Panda, or example-robot-data's UR5) and its default monitored
points (every moving link's origin and the tip), times per state:

* ``compute_all``: what the dynamics node computes for every state (its baseline);
* ``SafetyMonitor.assess``: the assessment as the public API returns it (SafetyState);
* ``SafetyMonitor.assess_into``: the node's per-state path (a reused table, no objects);
* ``PointKinematics.motion``: the points' kinematics and effective masses alone;

each moving and at rest (qd = 0: every direction from an eigenvector). The code measured is
the one first on the path: run it with ``PYTHONPATH`` at another checkout (e.g. ``git
archive`` of the commit before a change) to measure that code, calls it lacks are left out.
The best of ``--repeat`` runs of ``--states`` calls each (the least disturbed by other
processes); the load average is printed with the table.

Run:  PYTHONPATH=. .venv/bin/python benchmarks/bench_safety.py [--robot panda|ur5]
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
    from manip_dynamics import RobotModel, robots
    if robot == "panda":
        return RobotModel.from_urdf_file(robots.path("panda"))
    import pinocchio as pin
    import pathlib
    erd = pathlib.Path(pin.__file__).parents[4] / "share" / "example-robot-data" / "robots"
    return RobotModel.from_urdf_file(erd / "ur_description" / "urdf" / "ur5_robot.urdf")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--robot", choices=["panda", "ur5"], default="panda")
    ap.add_argument("--states", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()

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


if __name__ == "__main__":
    raise SystemExit(main())
